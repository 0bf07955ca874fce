"""Out-of-core readers: an independent review's tests (2026-11-27) of evaluate_csv and
evaluate_parquet against a brute-force reference (exact pair counts with fractions.Fraction)
and against fastbias.evaluate on the same rows. Expected values never come from fastbias.

Found by review (the first two tests; each fails before its fix): a Parquet directory's
``_temporary`` and hidden files were read (rows counted twice); an integer a CSV wrote beyond
2**53 was refused or silently rounded as batch_rows cut the file. The others pin properties
that hold.
"""
from __future__ import annotations

import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ---------------------------------------------------------------- independent reference
def _p_greater(a, b, wa, wb):
    """P(a > b) + 1/2 P(a == b) over all weighted pairs, exactly (None: no pair weight)."""
    num = den = Fraction(0)
    for x, u in zip(a, wa):
        for y, v in zip(b, wb):
            w = Fraction(u) * Fraction(v)
            den += w
            if x > y:
                num += w
            elif x == y:
                num += w / 2
    return None if den == 0 else num / den


def reference(y, s, g, w=None, exclude=False):
    """y 0/1, s floats, g True/False/None (None: not annotated), w weights."""
    n = len(y)
    w = [1] * n if w is None else list(w)
    rows = range(n)
    if exclude:
        rows = [i for i in rows if g[i] is not None]

    def cell(member, label):
        idx = [i for i in rows if (g[i] is True) == member and int(y[i]) == label]
        return [float(s[i]) for i in idx], [float(w[i]) for i in idx]

    gm, gp, bm, bp = cell(True, 0), cell(True, 1), cell(False, 0), cell(False, 1)
    f = lambda v: math.nan if v is None else float(v)  # noqa: E731
    pm = _p_greater(bm[0], gm[0], bm[1], gm[1])
    pp = _p_greater(bp[0], gp[0], bp[1], gp[1])
    return {
        "subgroup_auc": f(_p_greater(gp[0], gm[0], gp[1], gm[1])),
        "bpsn_auc": f(_p_greater(bp[0], gm[0], bp[1], gm[1])),
        "bnsp_auc": f(_p_greater(gp[0], bm[0], gp[1], bm[1])),
        "negative_aeg": math.nan if pm is None else float(Fraction(1, 2) - pm),
        "positive_aeg": math.nan if pp is None else float(Fraction(1, 2) - pp),
    }


def _same(row, ref, exact=True):
    bad = []
    for m in METRICS:
        a, b = float(row[m]), ref[m]
        if math.isnan(a) and math.isnan(b):
            continue
        if exact and a != b or not exact and not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15):
            bad.append((m, a, b))
    return bad


def _data(n=120, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.choice([0.1, 0.2, 0.25, 0.5, 0.7, 0.9], n)  # heavy ties: tied buckets
    g = rng.choice([0.0, 1.0, np.nan], n, p=[0.5, 0.4, 0.1])
    w = rng.choice([0.5, 1.0, 2.0, 3.0], n)
    return pd.DataFrame({"y": y, "s": s, "g": g, "w": w})


def _membership(g):
    return [None if np.isnan(v) else bool(v >= 0.5) for v in g]


# ================================================================ found by review
def test_parquet_directory_skips_uncommitted_and_hidden_files_as_pandas_does(tmp_path):
    """A Spark/Hadoop output directory: the committed part, plus an uncommitted attempt under
    ``_temporary/`` and a hidden ``.part-1.parquet``. pandas (pyarrow.dataset), Dask and Spark
    read only the committed part (files and folders starting with '_' or '.' are not data).
    evaluate_parquet(directory) reads every ``*.parquet`` below it (validate/parquet.py
    ``_files_of``: ``i.path.endswith(".parquet")``, recursive), so those rows are counted twice,
    silently: 650 rows evaluated where the data set has 500. Correct: the numbers of the 500
    committed rows (or at least a clear error), equal to evaluate(pd.read_parquet(directory))."""
    rng = np.random.default_rng(8)
    n = 500
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n).round(2),
                       "g": rng.integers(0, 2, n)})
    d = tmp_path / "scored"
    os.makedirs(d / "_temporary" / "0")
    df.to_parquet(d / "part-0.parquet")
    df.iloc[:100].to_parquet(d / "_temporary" / "0" / "part-0.parquet")
    df.iloc[:50].to_parquet(d / ".part-1.parquet")
    assert len(pd.read_parquet(d)) == n  # what every other reader of the directory sees
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate_parquet(str(d), label="y", scores="s", subgroups=["g"])
    row = res.table.iloc[0]
    assert int(row["subgroup_size"]) == int((df.g == 1).sum())
    ref = reference(list(df.y), list(df.s), [bool(v) for v in df.g])
    # (exact: unweighted metrics are ratios of integer counts)
    assert abs(row["subgroup_auc"] - ref["subgroup_auc"]) < 1e-12
    assert abs(row["negative_aeg"] - ref["negative_aeg"]) < 1e-12


def test_csv_big_integer_score_outcome_does_not_depend_on_batch_rows(tmp_path):
    """Scores 0.5, 9007199254740993 (2**53 + 1), 9007199254740992, 0.4. pandas reads a batch
    holding a decimal beside the big integer as float64 (2**53 + 1 -> 2**53, a new tie with
    the next row), and a batch of the integer alone as int64, which fastbias refuses (float64
    cannot hold it). So the same file gives a ValueError with batch_rows=1 and numbers (with
    the tie) with the default batch_rows: the outcome depends on an internal memory knob.
    Correct: one outcome for every batch_rows (the refusal, the value being an integer
    float64 cannot hold, or the same numbers everywhere). Cause: per-batch type inference in
    validate/textfile.py iter_text_batches (pd.read_csv chunks) feeding the exactness check."""
    path = tmp_path / "big.csv"
    path.write_text("y,s,g\n1,0.5,1\n0,9007199254740993,0\n1,9007199254740992,0\n0,0.4,1\n")

    def outcome(batch_rows):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                          batch_rows=batch_rows).table
            return tuple(t.iloc[0][METRICS].astype(float).round(12))
        except ValueError as e:  # (the refusal names the integer written and its row)
            text = str(e)
            return ("ValueError", "9007199254740993" in text and "row 1" in text)

    assert outcome(1) == outcome(2) == outcome(1000) == ("ValueError", True)


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 1000])
def test_big_numbers_written_as_decimals_or_held_exactly_are_read(tmp_path, batch_rows):
    """What is not refused: a decimal written so (9007199254740993.0 means the float nearest
    it, as 0.1 does) and an integer float64 holds (100000000000000000000 = 1e20), beside a
    decimal, in scores and weights, at every batch size; the numbers are those of the floats
    (reference: the rounded values, counted by hand)."""
    path = tmp_path / "big.csv"
    path.write_text("y,s,w,g\n1,0.5,1.5,1\n0,9007199254740993.0,100000000000000000000,0\n"
                    "1,9007199254740992,1,0\n0,0.4,2,1\n")
    y, s = [1, 0, 1, 0], [0.5, 2.0 ** 53, 2.0 ** 53, 0.4]
    w, g = [1.5, 1e20, 1.0, 2.0], [True, False, False, True]
    table = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                  sample_weight="w", batch_rows=batch_rows).table
    expected = reference(y, s, g, w)
    for metric in METRICS:
        assert table.iloc[0][metric] == pytest.approx(float(expected[metric]), rel=1e-12,
                                                      abs=0), metric


def test_an_integer_beyond_2_53_is_refused_in_identity_columns_and_json_lines(tmp_path,
                                                                              capsys):
    """An identity column's 9007199254740993 beside a decimal (read as floats: it would meet
    a threshold of 2**53 + 1 as 2**53) is refused naming it; JSON lines too, where pandas
    rounds it even in a column asked for as objects."""
    path = tmp_path / "ident.csv"
    path.write_text("y,s,g\n1,0.5,0.5\n0,0.7,9007199254740993\n1,0.6,0\n0,0.4,1\n")
    with pytest.raises(ValueError, match=r"integer 9007199254740993 at row 1"):
        fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                              subgroup_threshold=0.5)
    lines = tmp_path / "big.jsonl"
    lines.write_text('{"y":1,"s":0.5,"g":1}\n\n{"y":0,"s":9007199254740993,"g":0}\n'
                     '{"y":1,"s":9007199254740992,"g":0}\n{"y":0,"s":0.4,"g":1}\n')
    from fastbias.cli import main
    assert main(["report", str(lines), "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--quiet"]) != 0
    err = capsys.readouterr().err  # (row 1: the blank line is not a row)
    assert "holds the integer 9007199254740993 at row 1" in err, err


def test_the_cli_refuses_an_integer_that_joining_batches_would_round(tmp_path, monkeypatch,
                                                                    capsys):
    """The CLI reads a file in batches and joins them: a batch of integers alone (int64,
    9007199254740993 exact) joined with one holding a decimal (float64) would round it, a
    silent tie with 9007199254740992; refused naming the integer and its row."""
    from fastbias import cli

    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 2)
    path = tmp_path / "mixed.csv"
    path.write_text("y,s,g\n1,9007199254740993,1\n0,9007199254740992,0\n1,0.5,0\n0,0.4,1\n")
    assert cli.main(["report", str(path), "--label", "y", "--scores", "s",
                     "--subgroups", "g"]) != 0
    err = capsys.readouterr().err
    assert "integer 9007199254740993 at row 0" in err, err


# ================================================================ properties that held
def _write_variants(df, d):
    text = df.to_csv(index=False)
    out = []
    p = d / "a.csv"; df.to_csv(p, index=False); out.append((p, {}))
    p = d / "a.csv.gz"; df.to_csv(p, index=False); out.append((p, {}))
    p = d / "a.tsv"; df.to_csv(p, index=False, sep="\t"); out.append((p, {}))
    p = d / "semi.csv"; df.to_csv(p, index=False, sep=";"); out.append((p, {"sep": ";"}))
    p = d / "crlf.csv"; df.to_csv(p, index=False, lineterminator="\r\n"); out.append((p, {}))
    p = d / "bom.csv"; p.write_text(text, encoding="utf-8-sig"); out.append((p, {}))
    p = d / "trail.csv"; p.write_text(text + "\n\n\n"); out.append((p, {}))
    p = d / "quoted.csv"; df.to_csv(p, index=False, quoting=1); out.append((p, {}))
    extra = df.assign(note=["a,\nb" if i % 3 == 0 else 'x "q"' for i in range(len(df))])
    p = d / "nl.csv"; extra.to_csv(p, index=False); out.append((p, {}))
    return out


@pytest.mark.parametrize("exclude", [False, True])
def test_csv_variants_match_brute_force(tmp_path, exclude):
    df = _data()
    ref = reference(list(df.y), list(df.s), _membership(df.g), exclude=exclude)
    ms = "exclude" if exclude else "background"
    for path, kw in _write_variants(df[["y", "s", "g"]], tmp_path):
        for batch, bucket in [(1, 1), (7, 13), (1000, 10 ** 6)]:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                            missing_subgroup=ms, batch_rows=batch,
                                            bucket_rows=bucket, n_jobs=1, **kw).table.iloc[0]
            assert not _same(row, ref), (path, batch, bucket, _same(row, ref))


def _identity(kind, member, na):
    import decimal
    if kind == "bool":
        return pa.array([None if a else bool(b) for a, b in zip(na, member)], pa.bool_())
    if kind == "int8":
        return pa.array([None if a else int(b) for a, b in zip(na, member)], pa.int8())
    if kind == "uint64":
        return pa.array([None if a else int(b) * (2 ** 64 - 1) for a, b in zip(na, member)],
                        pa.uint64())
    if kind == "float16":
        return pa.array(np.where(na, np.nan, member.astype(np.float16)), pa.float16())
    if kind == "decimal":
        return pa.array([None if a else decimal.Decimal(int(b)) for a, b in zip(na, member)],
                        pa.decimal128(5, 2))
    return pa.array([None if a else int(b) for a, b in zip(na, member)],
                    pa.int32()).dictionary_encode()


@pytest.mark.parametrize("kind", ["bool", "int8", "uint64", "float16", "decimal", "dict"])
@pytest.mark.parametrize("ms", ["background", "exclude"])
def test_parquet_identity_types_weighted_match_brute_force(tmp_path, kind, ms):
    rng = np.random.default_rng(2)
    n = 90
    y = rng.integers(0, 2, n)
    s = rng.choice([0.1, 0.2, 0.25, 0.5, 0.7, 0.9], n)
    member = rng.integers(0, 2, n).astype(bool)
    na = rng.random(n) < 0.15
    w = rng.choice([0.5, 1.0, 2.0, 3.0], n)
    g = [None if a else bool(b) for a, b in zip(na, member)]
    ref = reference(list(y), list(s), g, list(w), exclude=ms == "exclude")
    t = pa.table({"y": pa.array(y, pa.int64()), "s": pa.array(s), "w": pa.array(w),
                  "g": _identity(kind, member, na)})
    path = tmp_path / "d.parquet"
    pq.write_table(t, path, row_group_size=17)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = fastbias.evaluate_parquet(path, label="y", scores="s", subgroups=["g"],
                                        sample_weight="w", missing_subgroup=ms, batch_rows=5,
                                        bucket_rows=11, n_jobs=1).table.iloc[0]
    assert not _same(row, ref, exact=False), _same(row, ref, exact=False)


@pytest.mark.parametrize("extra", [dict(ci="delong"), dict(ci="bernstein"),
                                   dict(significance="holm"),
                                   dict(thresholds=[0.25, 0.5, 0.875])])
def test_out_of_core_extras_agree_with_memory(tmp_path, extra):
    """Intervals, tests and threshold metrics out of core equal evaluate's to rounding (docs:
    about 1e-15 relative for DeLong), with ties split over tiny buckets and batches."""
    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame({"y": rng.integers(0, 2, n),
                       "s": rng.choice(np.round(np.linspace(0, 1, 9), 3), n),
                       "g": rng.choice([0.0, 1.0, np.nan], n, p=[0.5, 0.4, 0.1]),
                       "h": rng.integers(0, 2, n)})
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_parquet(tmp_path / "d.parquet", row_group_size=50)
    common = dict(label="y", scores="s", subgroups=["g", "h"], **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mem = fastbias.evaluate(df, **common)
        outs = [fastbias.evaluate_csv(tmp_path / "d.csv", batch_rows=7, bucket_rows=23,
                                      n_jobs=1, **common),
                fastbias.evaluate_parquet(tmp_path / "d.parquet", batch_rows=7, bucket_rows=23,
                                          n_jobs=1, **common)]
    for out in outs:
        assert list(out.table.columns) == list(mem.table.columns)
        for c in mem.table.columns:
            if mem.table[c].dtype.kind == "f":
                np.testing.assert_allclose(out.table[c], mem.table[c], rtol=1e-12, atol=1e-15)
        if mem.thresholds is not None:
            pd.testing.assert_frame_equal(out.thresholds.reset_index(drop=True),
                                          mem.thresholds.reset_index(drop=True),
                                          check_exact=True)


def test_value_spellings_read_as_numbers(tmp_path):
    """'1.0', ' 1', '-0' labels; '-0', '0.0', '1e-1', ' 0.1', '+0.6' scores (-0 ties 0)."""
    path = tmp_path / "sp.csv"
    path.write_text("y,s,g\n1.0,-0,1\n 1,0,1\n-0,0.0,1\n0,-0.0,0\n1,1e-1,0\n0, 0.1,1\n"
                    "1,+0.6,0\n0,.10,0\n")
    y = [1, 1, 0, 0, 1, 0, 1, 0]
    s = [0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.6, 0.1]
    g = [True, True, True, False, False, True, False, False]
    ref = reference(y, s, g)
    for b in (1, 3, 100):
        row = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                    batch_rows=b, bucket_rows=2, n_jobs=1).table.iloc[0]
        assert not _same(row, ref), _same(row, ref)


def test_empty_and_header_only_files_are_clear_errors(tmp_path):
    (tmp_path / "e.csv").write_text("")
    (tmp_path / "h.csv").write_text("y,s,g\n")
    with pytest.raises(ValueError, match="empty"):
        fastbias.evaluate_csv(tmp_path / "e.csv", label="y", scores="s", subgroups=["g"])
    with pytest.raises(ValueError, match="no rows"):
        fastbias.evaluate_csv(tmp_path / "h.csv", label="y", scores="s", subgroups=["g"])
    pq.write_table(pa.table({"y": pa.array([], pa.int64()), "s": pa.array([], pa.float64()),
                             "g": pa.array([], pa.int64())}), tmp_path / "e.parquet")
    with pytest.raises(ValueError, match="no rows"):
        fastbias.evaluate_parquet(tmp_path / "e.parquet", label="y", scores="s",
                                  subgroups=["g"])
    with pytest.raises(ValueError, match="bootstrap"):
        fastbias.evaluate_csv(tmp_path / "h.csv", label="y", scores="s", subgroups=["g"],
                              ci="bootstrap")
