"""Security of the thirty-second session's changes: an independent review's tests
(2026-11-27) of the readers' rounded-integer refusal (_WrittenIntegers, joined_batches), the
Parquet directory and glob file lists, and names made visible in messages. Expected values
are written by hand (the file's own integers, counts of files on disk, raw characters that
must not appear).

Found by review (the tests before "properties that held"; each fails before its fix): JSON
lines holding a rounded integer in a column of whole floats, as a string, or beside another
object on its line were accepted; a field of 5,000 leading zeros was a bare ValueError; the
second reader opened and parsed the file once a column (memory and time growing with the
columns, JSON lines parsed once a column); a link in a Parquet folder listed files again
(a loop: 82 paths for 2 files); an existing path holding '[' was not found; '**' matching
took exponential time; threshold and final-metric messages showed names raw; U+2028, U+2029
and U+061C were not escaped.
"""
import gzip
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate import parquet as pqmod
from fastbias.validate import textfile
from fastbias.validate.errors import visible
from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)

B = 9007199254740993  # 2**53 + 1: float64 reads it as 2**53


def _write(tmp_path, name, text, binary=False):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt", newline="") as f:
            f.write(text)
    else:
        with open(p, "w", newline="", encoding="utf-8") as f:
            f.write(text)
    return str(p)


def _read(path, columns, batch_rows=10, **kw):
    src = open_text_source(path)
    return [f for f, _ in iter_text_batches(src, columns, batch_rows, **kw)]


# ---------------------------------------------------------------- found by review

def test_json_line_with_two_objects_keeps_the_second_reader_in_step(tmp_path):
    # pandas joins the lines of a batch as "[line,line,...]", so the line
    # '{"s":0.5},{"s":9007199254740993}' gives TWO rows; the second reader parses each line
    # alone and so looks at the NEXT line for row 2 ('{"s":1.5}', a float) and accepts.
    # The frame then holds 9007199254740992.0 for the file's 9007199254740993: silently
    # rounded. Right: a DataFileError (the line is not one JSON object, or the integer is
    # refused). Cause: _WrittenIntegers._batch assumes one row per non-blank line.
    path = _write(tmp_path, "two.jsonl",
                  '{"s":0.25}\n{"s":0.5},{"s":%d}\n{"s":1.5}\n' % B)
    with pytest.raises(DataFileError):
        frames = _read(path, ["s"])
        # (if it does not raise, show what was read)
        values = pd.concat(frames)["s"].tolist()
        assert B not in [int(v) for v in values], values


def test_json_line_with_two_objects_gives_a_data_error(tmp_path):
    # same cause: the row index passes the end of the second reader's line list ->
    # a bare IndexError('list index out of range') that names neither file, column nor row.
    # Right: a DataFileError naming the file.
    path = _write(tmp_path, "two_b.jsonl", '{"s":0.25}\n{"s":0.5},{"s":%d}\n' % B)
    with pytest.raises(DataFileError):
        _read(path, ["s"])


def test_json_integer_written_as_a_string_is_not_rounded(tmp_path):
    # pandas' read_json (dtype=True) turns the string "9007199254740993" into a number: beside
    # 0.5 in its batch it becomes 9007199254740992.0 (batch_rows=1 gives the exact int64, so
    # the result depends on the batch size, the very thing the change set out to stop).
    # The second reader sees a str and returns None -> accepted. Right: refused (or exact).
    path = _write(tmp_path, "str.jsonl", '{"s":0.5}\n{"s":"%d"}\n' % B)
    try:
        frames = _read(path, ["s"], batch_rows=10)
    except DataFileError:
        return
    values = pd.concat(frames)["s"].tolist()
    assert int(values[1]) == B, f"read {values[1]!r} for the file's {B}"


def test_json_whole_floats_made_int64_do_not_hide_a_rounded_integer(tmp_path):
    # pandas' read_json (dtype=True) reads {"s":2.0} and {"s":9007199254740993} as float64
    # [2.0, 9007199254740992.0] and then, every value whole, downcasts the column to int64
    # [2, 9007199254740992]: the rounded integer sits in an int64 column, which neither
    # _refuse_rounded_integers nor _WrittenIntegers.check looks at (float64/object only), so
    # it is accepted silently (batch_rows=1 reads the exact 9007199254740993). Same with
    # {"s":1e16}. Right: refused, as the CSV reader refuses "2.0" beside it.
    for first in ("2.0", "1e16"):
        path = _write(tmp_path, f"w{first}.jsonl", '{"s":%s}\n{"s":%d}\n' % (first, B))
        try:
            frames = _read(path, ["s"], batch_rows=10)
        except DataFileError:
            continue
        values = pd.concat(frames)["s"].tolist()
        assert int(values[1]) == B, f"read {values[1]!r} for the file's {B} (after {first})"


def test_csv_integer_with_many_leading_zeros_is_a_named_error(tmp_path):
    # "000...0009007199254740993" (5000 zeros, a 5k-byte field, far under the line limit)
    # is the integer 9007199254740993; pandas reads it as 9007199254740992.0 beside 0.5.
    # int(text) in _WrittenIntegers hits Python's 4300-digit limit: a bare ValueError
    # "Exceeds the limit (4300 digits) for integer string conversion" naming no column,
    # file or row. Right: the DataFileError naming column 's' (strip the zeros first).
    path = _write(tmp_path, "zeros.csv", "s\n0.5\n%s%d\n" % ("0" * 5000, B))
    with pytest.raises(DataFileError, match="'s'"):
        _read(path, ["s"])


class _CountingJson:
    def __init__(self, real):
        self.real, self.calls = real, 0

    def loads(self, *a, **k):
        self.calls += 1
        return self.real.loads(*a, **k)

    def __getattr__(self, name):
        return getattr(self.real, name)


def test_json_lines_parsed_once_a_batch(tmp_path, monkeypatch):
    # every value is 1e16 (a float >= 2**53) in 60 columns: written() json.loads the whole
    # line once per (column, row): 60 parses of every 60-key line, O(rows * columns**2)
    # (measured: 5000 rows x 300 columns takes 24 s against 0.85 s for small scores).
    # Right: each line parsed at most once per batch.
    cols = [f"c{j}" for j in range(60)]
    rows = 200
    lines = ["{" + ",".join(f'"{c}":0.5' for c in cols) + "}"]
    lines += ["{" + ",".join(f'"{c}":1e16' for c in cols) + "}"] * (rows - 1)
    path = _write(tmp_path, "wide.jsonl", "\n".join(lines) + "\n")
    counter = _CountingJson(textfile.json)
    monkeypatch.setattr(textfile, "json", counter)
    n = sum(len(f) for f in _read(path, cols, batch_rows=50))
    assert n == rows
    assert counter.calls <= 2 * rows, f"{counter.calls} json.loads calls for {rows} lines"


def test_csv_second_reader_opens_the_file_once(tmp_path, monkeypatch):
    # one second reader (its own open file, 1 MiB buffer, pandas parser, gzip state) per
    # column holding a float >= 2**53: 40 columns -> 41 opens and 41 full parses of the file.
    # Right: a bounded number of second readers (one reads every column needed).
    cols = [f"c{j}" for j in range(40)]
    text = ",".join(cols) + "\n" + ",".join(["0.5"] * 40) + "\n" + \
        (",".join(["1e16"] * 40) + "\n") * 50
    path = _write(tmp_path, "wide.csv", text)
    real, opened = textfile.open_text, []

    def counting(*a, **k):
        opened.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(textfile, "open_text", counting)
    assert sum(len(f) for f in _read(path, cols, batch_rows=20)) == 51
    # (the header's read, the batches' and the one second reader)
    assert len(opened) <= 3, f"the file was opened {len(opened)} times"


_MEMORY_SCRIPT = textwrap.dedent("""
    import resource, sys
    from fastbias.validate.textfile import open_text_source, iter_text_batches
    src = open_text_source(sys.argv[1])
    for frame, _ in iter_text_batches(src, list(src.names), 1000):
        pass
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
""")


def test_csv_second_reader_memory_does_not_grow_with_the_columns(tmp_path):
    # a 1.1 MB CSV of 100 columns x 2000 rows: scores 0.25 peak at ~180 MB, scores 1e16 at
    # ~790 MB (about 6 MB per column: each column's own second reader keeps its stream's
    # 1 MiB buffer and a pandas parser). Memory is not bounded by batch_rows / the CLI's
    # budget but grows with the columns. Right: the extra peak bounded (< 150 MB here).
    peaks = {}
    for value in ("0.25", "1e16"):
        text = ",".join(f"c{j}" for j in range(100)) + "\n" + ",".join(["0.5"] * 100) + \
            "\n" + (",".join([value] * 100) + "\n") * 1999
        path = _write(tmp_path, f"m{value}.csv", text)
        out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, path], check=True,
                             capture_output=True, text=True, env=os.environ)
        peaks[value] = int(out.stdout.split()[-1])
    assert peaks["1e16"] - peaks["0.25"] < 150, peaks


def _parquet(path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"s": [0.5]}), path)


def test_directory_with_a_symlink_loop_lists_each_file_once(tmp_path):
    # d/a.parquet, d/sub/b.parquet, d/sub/loop -> d: pyarrow's recursive FileSelector follows
    # the link until ELOOP, and the directory gives ~80 paths for 2 files: every row counted
    # ~40 times, silently (counts, weights, and - with unequal copies - the metrics change).
    # Right: each real file once (or a clear error about the loop).
    d = tmp_path / "d"
    (d / "sub").mkdir(parents=True)
    _parquet(d / "a.parquet")
    _parquet(d / "sub" / "b.parquet")
    os.symlink(d, d / "sub" / "loop")
    _, files = pqmod.parquet_files(str(d))
    real = [os.path.realpath(f) for f in files]
    assert len(real) == len(set(real)) == 2, f"{len(files)} paths for 2 files"


def test_symlink_to_a_sibling_folder_lists_its_files_once(tmp_path):
    # d/run1/a.parquet and d/latest -> run1 (a common layout): the directory gives a.parquet
    # twice, so every row is read twice. Right: once (or refused).
    d = tmp_path / "d"
    (d / "run1").mkdir(parents=True)
    _parquet(d / "run1" / "a.parquet")
    os.symlink(d / "run1", d / "latest")
    _, files = pqmod.parquet_files(str(d))
    real = [os.path.realpath(f) for f in files]
    assert len(real) == len(set(real)) == 1, files


def test_existing_file_whose_name_holds_a_bracket_is_found(tmp_path):
    # "run[1]/x.parquet" exists, but any '[' makes the path a glob, and [1] matches only "1":
    # FileNotFoundError "no file matches the pattern" for a file that is there. Right: an
    # existing path is that file (a shell, too, keeps an unmatched pattern literal).
    d = tmp_path / "run[1]"
    d.mkdir()
    _parquet(d / "x.parquet")
    _, files = pqmod.parquet_files(str(d / "x.parquet"))
    assert [os.path.realpath(f) for f in files] == [os.path.realpath(d / "x.parquet")]


def test_double_star_glob_matching_is_not_exponential_in_the_stars():
    # _glob_matches tried every split for each '**' without memoising: a 30-deep path and
    # 4 '**' took C(34, 4) ~ 46k calls (60-deep, 4 stars: 1.9 s for ONE file; 6 stars:
    # minutes). Now each (path part, pattern part) pair is weighed once: a 200-deep path and
    # 12 stars answers at once (exponentially it would not finish).
    parts = ["x"] * 200 + ["z.parquet"]
    assert not pqmod._glob_matches(parts, ["**"] * 12 + ["nomatch.parquet"])
    assert pqmod._glob_matches(parts, ["**"] * 12 + ["z.parquet"])
    assert not pqmod._glob_matches(parts[:3] + ["_t"] + parts[3:], ["**", "z.parquet"])


def test_joined_batches_refuses_uint64_beside_int64():
    """int64 beside uint64 joins as float64: 2**64 - 1 would become 2**64."""
    parts = [pd.DataFrame({"s": np.array([-1, 2], np.int64)}),
             pd.DataFrame({"s": np.array([2 ** 64 - 1], np.uint64)})]
    with pytest.raises(DataFileError, match=r"'s'.*18446744073709551615.*row 2"):
        textfile.joined_batches(parts, [0, 2], "x.csv")


FORGED = "evil\nFORGED: all clear\x1b[31m\u202e"


def _no_raw(text):
    return not any(c in text for c in ("\n", "\x1b", "\u202e"))


def test_threshold_warning_shows_names_escaped():
    # the threshold-rate warning joins names itself ("; ".join(undefined[:8]) in
    # metrics/thresholds.py), not through errors.listed: a newline, an ESC and a bidi
    # override in a subgroup name reach the warning raw. Right: shown as escapes.
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .9, .2, .8, .3, .7])
    g = pd.DataFrame({FORGED: [True] + [False] * 5, "ok": [True, True, False, False, True, True]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastbias.threshold_metrics(y, s, g, thresholds=0.5)
    texts = [str(w.message) for w in caught if "evil" in str(w.message)]
    assert texts, [str(w.message) for w in caught]
    assert all(_no_raw(t) for t in texts), texts


def _one_class_table():
    y = np.array([0, 1, 0, 1, 0, 1])
    df = pd.DataFrame({"y": y, "s": [.1, .9, .2, .8, .3, .7],
                       FORGED: [True] + [False] * 5,
                       "ok": [True, True, False, False, True, True]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.evaluate(df, label="y", scores="s", subgroups=[FORGED, "ok"]).for_model("s")


def test_final_metric_warning_shows_names_escaped():
    # metrics/aggregates.py _listed (final_metric_noted, worst_auc) joins names raw.
    table = _one_class_table()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastbias.final_metric(table, overall_auc=1.0, undefined="propagate")
    texts = [str(w.message) for w in caught if "evil" in str(w.message)]
    assert texts
    assert all(_no_raw(t) for t in texts), texts


def test_final_metric_error_shows_names_escaped():
    table = _one_class_table()
    with pytest.raises(ValueError) as info:
        fastbias.final_metric(table, overall_auc=1.0, undefined="raise")
    assert "evil" in str(info.value) and _no_raw(str(info.value)), str(info.value)


def test_visible_escapes_unicode_line_separators():
    # U+2028/U+2029 are line breaks to str.splitlines, many log viewers and editors; U+061C
    # (ARABIC LETTER MARK) is a bidi mark as U+200E/U+200F are. visible() keeps all three.
    # Right: escaped like the other characters that can forge or reorder a line.
    shown = visible("a\u2028FORGED\u2029b\u061cc")
    assert len(shown.splitlines()) == 1 and "\u061c" not in shown, repr(shown)


# ---------------------------------------------------------------- properties that held

@pytest.mark.parametrize("cell, expected", [
    ("1e16", 1e16),                                    # a decimal: its nearest float
    ("-9007199254740993.0", -9007199254740992.0),      # a decimal point: nearest float meant
    ("10000000000000000", 1e16),                       # an integer float64 holds exactly
    ("9007199254740992", 9007199254740992.0),
])
def test_csv_accepts_floats_and_exact_integers(tmp_path, cell, expected):
    path = _write(tmp_path, "ok.csv", f"s\n0.5\n{cell}\n")
    values = pd.concat(_read(path, ["s"]))["s"].tolist()
    assert values == [0.5, expected]


@pytest.mark.parametrize("name, text", [
    ("sp.csv", f"s\n0.5\n +{B} \n"),
    ("q.csv", f's\n0.5\n"{B}"\n'),
    ("crlf.csv", f"s\r\n0.5\r\n{B}\r\n"),
    ("bom.csv", f"\ufeffs\n0.5\n{B}\n"),
    ("neg.csv", f"s\n0.5\n-{B}\n"),
    ("z.csv.gz", f"s,t\n0.5,x\n{B},y\n"),
    ("n.jsonl", '{"s":0.5,"o":{"s":1}}\n{"o":{"x":[1]},"s":%d}\n' % B),
    ("dup.jsonl", '{"s":0.5}\n{"s":1.5,"s":%d}\n' % B),
    ("cr.jsonl", '{"s":0.5}\r{"s":%d}\r' % B),
    ("w2.csv", f"s\n2.0\n{B}\n"),
])
def test_rounded_integer_refused_naming_column_and_row(tmp_path, name, text):
    path = _write(tmp_path, name, text)
    with pytest.raises(DataFileError, match=r"column 's'.*%d.*row 1" % B):
        _read(path, ["s"])


def _fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_second_reader_files_closed_on_early_close_and_on_error(tmp_path, fmt):
    t = ["0.25"] + ["1e16"] * 49
    t[44], t[45] = "0.25", str(B)  # (a decimal beside it in its batch: refused there)
    if fmt == "csv":
        text = "s,t\n" + "".join(f"0.5,{v}\n" for v in t)
    else:
        text = "".join('{"s":0.5,"t":%s}\n' % v for v in t)
    path = _write(tmp_path, f"f.{fmt}", text)
    before = _fds()
    gen = iter_text_batches(open_text_source(path), ["s", "t"], 10)
    next(gen)  # the second reader is open now (1e16 in the batch)
    assert _fds() > before
    gen.close()
    assert _fds() == before
    with pytest.raises(DataFileError):
        for _ in iter_text_batches(open_text_source(path), ["s", "t"], 10):
            pass
    assert _fds() == before


def test_second_reader_keeps_the_line_limit(tmp_path):
    # the second reader is opened with the source's line limit: a long line past the first
    # batch is refused, whichever reader meets it first
    path = _write(tmp_path, "long.csv", "s,t\n0.5,1e16\n" + "0.5,1e16\n" * 5 +
                  "0.5," + "1" * 300 + "\n")
    src = textfile.open_text_source(path, line_limit=200)
    with pytest.raises(DataFileError):
        for _ in iter_text_batches(src, ["s", "t"], 2):
            pass


def test_joined_batches_refuses_an_int_batch_beside_a_float_batch():
    parts = [pd.DataFrame({"s": [0.5, 0.25]}), pd.DataFrame({"s": np.array([B, 1], np.int64)})]
    with pytest.raises(DataFileError, match=r"'s'.*%d.*row 2" % B):
        textfile.joined_batches(parts, [0, 2], "x.csv")
    ok = [pd.DataFrame({"s": [0.5]}), pd.DataFrame({"s": np.array([2 ** 53], np.int64)})]
    assert textfile.joined_batches(ok, [0, 1], "x.csv")["s"].tolist() == [0.5, 2.0 ** 53]


def test_glob_rules_hold(tmp_path):
    for rel in ["a.parquet", "_temporary/0/a.parquet", ".hidden.parquet", "sub/b.parquet",
                "sub/deep/c.parquet", "_SUCCESS.parquet"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        _parquet(tmp_path / rel)
    rel = lambda fs: sorted(os.path.relpath(f, tmp_path) for f in fs)  # noqa: E731
    assert rel(pqmod.parquet_files(str(tmp_path))[1]) == \
        ["a.parquet", "sub/b.parquet", "sub/deep/c.parquet"]
    assert rel(pqmod.parquet_files(str(tmp_path / "*.parquet"))[1]) == ["a.parquet"]
    assert rel(pqmod.parquet_files(str(tmp_path / "**" / "*.parquet"))[1]) == \
        ["a.parquet", "sub/b.parquet", "sub/deep/c.parquet"]
    assert rel(pqmod.parquet_files(str(tmp_path / "_*" / "**" / "*.parquet"))[1]) == \
        ["_temporary/0/a.parquet"]
    assert rel(pqmod.parquet_files(str(tmp_path / "?ub" / "*.parquet"))[1]) == \
        ["sub/b.parquet"]
