"""The day's last reader fixes: an independent review's tests (2026-11-27) of Parquet
discovery against pyarrow's own (links of every kind, skipped names, globs), the JSON-lines
object check and the check of rounded integers.

Found by review (the two tests of a space or tab before the comma; each fails before its
fix): "{...} ,[]" read a row of missing values, "{...}\t,null" failed unnamed. The others pin
properties that hold.
"""
import os

import pandas as pd
import pytest

from fastbias.validate.parquet import parquet_files
from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)

pa = pytest.importorskip("pyarrow")
ds = pytest.importorskip("pyarrow.dataset")
pq = pytest.importorskip("pyarrow.parquet")


def _rows(path):
    return [f for f, _ in iter_text_batches(open_text_source(str(path)), ["y", "s"], 100)]


# --- (2) JSON lines: a space between "}" and "," hides a second value ---------------------
# Correct: '{"y":0,"s":0.25} ,[]' is the same two values as '{"y":0,"s":0.25},[]', which is
# refused naming line 2; the check only looks for the substring "}," (textfile._ObjectLines
# .__next__), so with a space pandas silently reads a row of missing values.
def test_json_line_object_then_array_with_space_is_refused(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text('{"y":1,"s":0.5}\n{"y":0,"s":0.25} ,[]\n{"y":1,"s":0.75}\n')
    with pytest.raises(DataFileError, match="line 2"):
        _rows(p)


# Correct: refused naming line 2 (as '{...},null' is); fastbias raises
# "cannot read ... after row 0: 'NoneType' object is not iterable" (no line named).
def test_json_line_object_then_null_with_tab_names_the_line(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text('{"y":1,"s":0.5}\n{"y":0,"s":0.25}\t,null\n')
    with pytest.raises(DataFileError, match="line 2"):
        _rows(p)


@pytest.mark.parametrize("line", ['{"y":0,"s":0.25,"t":"},[1]"}', '{"y":0,"s":0.25,"o":{"b":1},"c":2}',
                                  '{"y":0,"s":0.25,"t":"\\u007d,"}'])
def test_json_line_holding_brace_comma_inside_is_read(tmp_path, line):
    p = tmp_path / "f.jsonl"
    p.write_text('{"y":1,"s":0.5}\n' + line + "\n")
    frame = pd.concat(_rows(p))
    assert frame["y"].tolist() == [1, 0] and frame["s"].tolist() == [0.5, 0.25]


def test_json_line_of_two_objects_is_two_rows(tmp_path):
    p = tmp_path / "f.jsonl"
    p.write_text('{"y":1,"s":0.5}\n{"y":1,"s":0.5}, {"y":0,"s":0.25}\n')
    frame = pd.concat(_rows(p))
    assert frame["y"].tolist() == [1, 1, 0]


# --- (3) rounded integers: valid float texts accepted, a rounded integer refused ----------
@pytest.mark.parametrize("text, value", [(" 1e16 ", 1e16), ("+1E+16", 1e16), ("1.0e16", 1e16),
                                         ("+9007199254740992", 2.0 ** 53)])
def test_valid_large_numbers_accepted(tmp_path, text, value):
    p = tmp_path / "f.csv"
    p.write_text(f"y,s\n1,0.5\n0,{text}\n")
    assert pd.concat(_rows(p))["s"].tolist() == [0.5, value]


@pytest.mark.parametrize("text", [" 9007199254740993 ", "-9007199254740993", "+09007199254740995"])
def test_rounded_integer_refused(tmp_path, text):
    p = tmp_path / "f.csv"
    p.write_text(f"y,s\n1,0.5\n0,{text}\n")
    with pytest.raises(DataFileError, match="float64 cannot hold exactly"):
        _rows(p)


# --- (1) Parquet discovery -----------------------------------------------------------------
def _w(p, n):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    pq.write_table(pa.table({"y": [0] * n, "s": [0.5] * n}), p)


@pytest.fixture
def tree(tmp_path):
    root = str(tmp_path)
    r = os.path.join(root, "data")
    _w(f"{r}/a/x.parquet", 1)
    _w(f"{r}/a/b/y.parquet", 2)
    _w(f"{r}/_temporary/0/z.parquet", 4)
    open(f"{r}/_SUCCESS", "w").close()
    open(f"{r}/a/.x.parquet.crc", "w").close()
    _w(f"{r}/sp ace/ü[1]*.parquet", 8)
    _w(f"{r}/.hidden/h.parquet", 16)
    _w(root + "/outside/o.parquet", 32)
    os.symlink("a", f"{r}/link_a")
    os.symlink(root + "/outside", f"{r}/out")
    os.symlink("nowhere", f"{r}/broken.parquet")
    os.symlink(".hidden", f"{r}/vis_to_hidden")
    os.symlink("a/x.parquet", f"{r}/.hidlink.parquet")
    os.symlink("a/x.parquet", f"{r}/filelink.parquet")
    return r


def test_directory_is_pyarrow_files_read_once(tree):
    # reference: pyarrow's own discovery (which lists a file once per name), each real file once
    real = {os.path.realpath(f) for f in ds.dataset(tree, format="parquet").files}
    files = parquet_files(tree)[1]
    assert len(files) == len({os.path.realpath(f) for f in files}) == len(real)
    assert {os.path.realpath(f) for f in files} == real
    assert sum(pq.ParquetFile(f).metadata.num_rows for f in files) == 1 + 2 + 8 + 16 + 32


def test_link_to_root_is_cut(tree):
    os.symlink(tree, f"{tree}/a/root")
    files = parquet_files(tree)[1]
    assert sorted(os.path.relpath(os.path.realpath(f), os.path.dirname(tree)) for f in files) == [
        "data/.hidden/h.parquet", "data/a/b/y.parquet", "data/a/x.parquet",
        "data/sp ace/ü[1]*.parquet", "outside/o.parquet"]


@pytest.mark.parametrize("pattern, expected", [
    ("a/**", ["a/b/y.parquet", "a/x.parquet"]),
    ("**/y.parquet", ["a/b/y.parquet"]),
    ("a/**/y.parquet", ["a/b/y.parquet"]),
    ("*/x.parquet", ["a/x.parquet"]),
    ("a/?.parquet", ["a/x.parquet"]),
    ("a/[xy].parquet", ["a/x.parquet"]),
    ("sp ace/*", ["sp ace/ü[1]*.parquet"]),
    ("sp ace/ü[1]*.parquet", ["sp ace/ü[1]*.parquet"]),
])
def test_globs(tree, pattern, expected):
    files = parquet_files(os.path.join(tree, pattern))[1]
    assert sorted(os.path.relpath(f, tree) for f in files) == expected


def test_diamond_links_read_once(tmp_path):
    r = str(tmp_path / "d")
    _w(f"{r}/c/f.parquet", 3)
    os.symlink("c", f"{r}/a")
    os.symlink("c", f"{r}/b")
    files = parquet_files(r)[1]
    assert len(files) == 1 and os.path.realpath(files[0]) == os.path.realpath(f"{r}/c/f.parquet")
