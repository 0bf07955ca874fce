"""Out-of-core spans (exact-0 variance parts), CSV field counts and CSV text columns that keep
"None"/"NA"/... as values (an independent review's tests of 4a17f5e, 3f505e4 and 7c60f51).

References are independent: Python's ``csv`` module for field counts, an exact-rational
weighted DeLong (``tests.test_intervals_out_of_core_reference.delong_se``) for standard
errors, and the in-memory ``fastbias.evaluate`` (itself tested) for p-values.
"""
import bz2
import csv
import gzip
import io
import json
import lzma
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.streaming import evaluate_csv, evaluate_parquet
from fastbias.validate.textfile import (
    ColumnReading,
    DataFileError,
    iter_text_batches,
    open_text_source,
)
from tests.test_intervals_out_of_core_reference import delong_se

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
SAMPLES = {"subgroup_auc": ("gp", "gn"), "bpsn_auc": ("bp", "gn"), "bnsp_auc": ("gp", "bn"),
           "negative_aeg": ("bn", "gn"), "positive_aeg": ("bp", "gp")}


def _read(path, columns, limit=1 << 20, text_columns=(), sep=None):
    source = open_text_source(path, line_limit=limit, sep=sep)
    frames = [f for f, _ in iter_text_batches(source, list(columns), 3,
                                              reading=ColumnReading(text=tuple(text_columns)))]
    return pd.concat(frames, ignore_index=True)


def _fields(text, sep=","):
    return [len(r) for r in csv.reader(io.StringIO(text, newline=""), delimiter=sep) if r]


# ============================================================== 3f505e4: field counts, DEFECTS

def test_space_before_quote_gives_an_extra_field_silently_read_in_wrong_column(tmp_path):
    """Found by review (silent). `` "a,b"`` after a separator is not a quoted field for pandas' C
    parser or Python's csv (the quote is not the field's first character): the record has 5
    fields under a 4-field header. _count_fields takes the quote as opening a quoted field
    (quote parity over the raw bytes), counts 3 separators, and lets it through; pandas
    (usecols) then reads g = 'b"' instead of 'v' -- the misreading the commit meant to stop."""
    text = 'y,s,c,g\n0,0.1,ok,u\n1,0.9, "a,b",v\n'
    assert _fields(text) == [4, 4, 5]
    path = tmp_path / "d.csv"
    path.write_text(text)
    with pytest.raises(DataFileError, match="line 3 .* has 5 field"):
        _read(path, ["y", "s", "g"], text_columns=["g"])


@pytest.mark.parametrize("text", [
    'y,s,c,g\n0,0.1,5" screen,0\n1,0.2,ok,1\n',  # an inch mark
    'y,s,c,g\n0,0.1,a"b,c"d\n1,0.2,ok,1\n',  # quotes mid-field
], ids=["inch_mark", "mid_field_quotes"])
def test_inch_mark_in_unquoted_field_is_valid_and_read(text, tmp_path):
    """Found by review (refuses valid input; a regression: 3f505e4^ read it). A double quote inside
    an unquoted field (5" screen) is a literal character for pandas and Python's csv: every
    record has the header's 4 fields. The guard's quote parity opens a 'quoted field' there
    and refuses with 'line 2 ... has 3 field(s) ... (a decimal comma?)'."""
    assert _fields(text) == [4, 4, 4]
    path = tmp_path / "d.csv"
    path.write_text(text)
    got = _read(path, ["y", "s", "g"], text_columns=["g"])
    assert got["g"].tolist() == [r[3] for r in csv.reader(io.StringIO(text))][1:]


def test_a_quoted_carriage_return_does_not_switch_the_check_off(tmp_path):
    """Found by review (silent). One lone CR inside a QUOTED field of an LF file sets ``_fields =
    None`` for the rest of the file, so a later short record (2 fields of 3) is read with
    its identity missing (background), silently. Only lone CRs outside quotes end lines."""
    text = 'y,s,g\n0,0.1,"a\rb"\n1,0.2\n0,0.3,0\n'
    assert _fields(text) == [3, 3, 2, 3]
    path = tmp_path / "d.csv"
    path.write_bytes(text.encode())
    with pytest.raises(DataFileError, match="line 3 .* has 2 field"):
        _read(path, ["y", "s", "g"])


# ============================================================== 3f505e4: verified behaviour

@pytest.mark.parametrize("text, sep, rows", [
    ("y;s;g\n0;0,1;0\n1;0,2;1\n", ";", 2),  # decimal comma under ';'
    ("y\ts\tg\n0\t0.1\t\n1\t0.2\t1\n", "\t", 2),  # tab, empty last field
    ("\ufeffy,s,g\r\n0,0.1,0\r\n  \r\n\r\n1,0.2,1", ",", 2),  # BOM, CRLF, blank lines, no EOL
    ('"y","s ""q""","g,h"\n0,0.1,"x\n""y"",z"\n1,0.2,w\n', ",", 2),  # quoted header
    ("y,s,g,\n0,0.1,0,\n1,0.2,1,\n", ",", 2),  # trailing separator on every line
    ("y,s,gé\n0,0.1,\"ü,ß\"\n1,0.2,日本\n", ",", 2),  # unicode
])
def test_valid_files_read_at_every_chunk_size(text, sep, rows, tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(text.encode())
    for limit in (40, 41, 43, 47, 53, 1 << 20):
        assert len(_read(path, open_text_source(path, sep=sep).names[:2], limit,
                         sep=sep)) == rows


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zip"])
def test_ragged_record_in_compressed_file_refused(suffix, tmp_path):
    text = "y,s,g\n" + "0,0.1,0\n" * 30 + "1,0,2,1\n" + "0,0.3,0\n"
    path = tmp_path / f"d.csv{suffix}"
    data = text.encode()
    if suffix == ".zip":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("d.csv", data)
    else:
        with {".gz": gzip, ".bz2": bz2, ".xz": lzma}[suffix].open(path, "wb") as f:
            f.write(data)
    for limit in (20, 1 << 20):
        with pytest.raises(DataFileError, match="line 32 .* has 4 field"):
            _read(path, ["y", "s"], limit)


# ===================================== 3f505e4 + 7c60f51: text columns keep "None", "NA", ...

WORDS = ["None", "NA", "null", "NaN", "x"]


def _words_frame(n=60, seed=3):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    s = np.round(rng.random(n) * 0.6 + 0.3 * y, 2)
    rel = rng.choice(WORDS, n)
    a = rng.choice(["1", "0", "NA", ""], n)
    return y, s, rel, a


def test_text_words_are_values_numeric_na_is_not_annotated(tmp_path):
    y, s, rel, a = _words_frame()
    lines = ["y,s,rel,a"] + [f"{int(y[i])},{s[i]},{rel[i]},{a[i]}" for i in range(len(y))]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    af = np.array([np.nan if v in ("NA", "") else float(v) for v in a])
    df = pd.DataFrame({"y": y, "s": s, "rel": rel, "a": af})
    df.to_parquet(tmp_path / "d.parquet", index=False)
    kw = dict(label="y", scores="s", subgroups=["a"], sensitive_features=["rel"],
              missing_subgroup="exclude")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        csv_t = evaluate_csv(tmp_path / "d.csv", bucket_rows=10, **kw).table
        pq_t = evaluate_parquet(tmp_path / "d.parquet", bucket_rows=10, **kw).table
        mem_t = fastbias.evaluate(df, **kw).table
    cols = ["subgroup", "subgroup_size", "subgroup_auc", "bpsn_auc", "background_negatives"]
    assert sorted(csv_t["subgroup"]) == sorted(["a"] + [f"rel={w}" for w in WORDS])
    pd.testing.assert_frame_equal(csv_t[cols], pq_t[cols])
    pd.testing.assert_frame_equal(csv_t[cols], mem_t[cols])
    # "NA" in the numeric identity column: not annotated (excluded), not a 0
    row = csv_t.set_index("subgroup").loc["a"]
    assert row["subgroup_size"] == int((a == "1").sum())
    assert row["background_negatives"] == int(((a == "0") & ~y).sum())


@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
def test_cli_memory_and_streamed_keep_text_words(tmp_path, capsys, monkeypatch):
    from fastbias.cli import main
    from tests.test_bounded_memory import _four_mib_for_data

    y, s, rel, _ = _words_frame(n=60_000, seed=4)
    path = tmp_path / "d.csv"
    pd.DataFrame({"y": y.astype(int), "s": s, "rel": rel}).to_csv(path, index=False)
    with open(tmp_path / "d.jsonl", "w") as f:
        for i in range(len(y)):
            f.write(json.dumps({"y": int(y[i]), "s": float(s[i]), "rel": str(rel[i])}) + "\n")

    def report(data, out, *extra):
        assert main(["report", str(data), "--label", "y", "--scores", "s",
                     "--sensitive-features", "rel", "--out", str(out), "--progress", "never",
                     *extra]) == 0, capsys.readouterr().err
        capsys.readouterr()
        return json.loads(out.read_text())

    memory = report(path, tmp_path / "m.json")
    jsonl = report(tmp_path / "d.jsonl", tmp_path / "j.json")
    streamed = report(path, tmp_path / "s.json", "--max-memory",
                      str(_four_mib_for_data(monkeypatch, batch_rows=4_000)))
    assert streamed["settings"].get("engine") == "streaming", streamed["settings"]
    for r in (memory, jsonl, streamed):
        r.pop("timings_s"), r.pop("settings"), r.pop("source", None), r.pop("title", None)
    text = json.dumps(memory)
    for w in WORDS:
        assert f"rel={w}" in text
    assert memory == jsonl
    assert streamed == memory


# ================================== 4a17f5e: spans out of core, verified against exact DeLong

def _cells(df, group, score="s", weight="w"):
    s, y = df[score].to_numpy(float), df["y"].to_numpy(bool)
    w = df[weight].to_numpy(float)
    known = df[group].notna().to_numpy()
    m = df[group].fillna(0).to_numpy(float) >= 0.5
    return s, y, w, known, m


def _exact(df, group, exclude=False, score="s", weight="w"):
    s, y, w, known, m = _cells(df, group, score, weight)
    keep = known if exclude else np.ones_like(known)
    cells = {"gp": keep & m & y, "gn": keep & m & ~y, "bp": keep & ~m & y,
             "bn": keep & ~m & ~y}
    return {k: delong_se(s[cells[a]], w[cells[a]], s[cells[b]], w[cells[b]])
            for k, (a, b) in SAMPLES.items()}


def _edge_frames():
    rng = np.random.default_rng(7)
    n = 60
    out = {}
    # (a) every row at 0.5 but ONE positive of subgroup a at 0.9, last (another bucket)
    y = np.arange(n) % 3 == 0
    s = np.full(n, 0.5)
    a = (np.arange(n) % 4 == 0).astype(float)
    s[-1], y[-1], a[-1] = 0.9, True, 1.0
    out["one_off"] = pd.DataFrame({"y": y, "s": s, "a": a})
    # (b) positives wholly above negatives but ONE negative tied at the boundary score
    y = np.arange(n) % 2 == 0
    s = np.where(y, 0.6 + 0.01 * (np.arange(n) % 7), 0.1 + 0.01 * (np.arange(n) % 9))
    s[1] = 0.6  # a negative at the lowest positive score
    a = (rng.random(n) < 0.3).astype(float)
    out["boundary_tie"] = pd.DataFrame({"y": y, "s": s, "a": a})
    # (c) -0.0 and +0.0: a negative at -0.0 ties positives at +0.0 (not below them)
    y = np.arange(n) % 2 == 0
    s = np.where(y, rng.choice([0.0, 1.0], n), -1.0)
    s[3] = -0.0
    s[5] = 0.0
    a = (rng.random(n) < 0.4).astype(float)
    out["signed_zero"] = pd.DataFrame({"y": y, "s": s, "a": a})
    for df in out.values():
        df["w"] = np.where(np.arange(len(df)) % 5 == 2, 0.0,
                           np.random.default_rng(1).uniform(0.3, 3, len(df)))
        df["b"] = np.zeros(len(df))  # empty subgroup: background every row
        df.loc[df.index[:1], "b"] = 1.0  # ... but one row
        df["c"] = df["a"]
        df.loc[df.index[::6], "c"] = np.nan  # not annotated rows
    return out


@pytest.mark.parametrize("name", ["one_off", "boundary_tie", "signed_zero"])
@pytest.mark.parametrize("exclude", [False, True])
def test_edge_spans_out_of_core_standard_errors_exact(name, exclude, tmp_path):
    df = _edge_frames()[name]
    group = "c" if exclude else "a"
    kw = dict(label="y", scores="s", subgroups=[group, "b"], ci="delong", sample_weight="w",
              missing_subgroup="exclude" if exclude else "background")
    df.to_csv(tmp_path / "d.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tables = [evaluate_csv(tmp_path / "d.csv", bucket_rows=b, **kw).for_model()
                  for b in (5, 13)]
    want = _exact(df, group, exclude)
    for table in tables:
        for metric in METRICS:
            se = table.loc[group, f"{metric}_se"]
            if want[metric] > 0:  # never an exact 0 where the true variance is not
                assert se == pytest.approx(want[metric], rel=1e-9) or np.isnan(se), metric
            else:
                assert se == 0.0 or np.isnan(se), metric


@pytest.mark.parametrize("name", ["one_off", "boundary_tie", "signed_zero"])
def test_edge_spans_dask_and_parquet_p_values_equal_memory(name, tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask as fd

    df = _edge_frames()[name]
    df["t"] = df["s"].astype(np.float32)
    kw = dict(label="y", scores=["s", "t"], subgroups=["a", "b", "c"], ci="delong",
              significance="holm", sample_weight="w", intersections=2)
    df.to_parquet(tmp_path / "d.parquet", index=False, row_group_size=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        memory = fastbias.evaluate(df, **kw).table
        got = [evaluate_parquet(tmp_path / "d.parquet", bucket_rows=6, **kw).table,
               fd.evaluate(dd.from_pandas(df, npartitions=12), **kw).table]
    cols = [c for c in memory if c.endswith(("_se", "_pvalue"))]
    for table in got:
        a, b = memory[cols].to_numpy(float), table[cols].to_numpy(float)
        both = ~np.isnan(a) & ~np.isnan(b)
        assert not (np.isnan(a) & ~np.isnan(b)).any()  # no number where memory has none
        np.testing.assert_allclose(b[both], a[both], rtol=1e-9, atol=1e-15)
