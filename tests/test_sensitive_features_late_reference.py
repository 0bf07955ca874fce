"""The day's last sensitive-feature fixes: an independent review's tests (2026-11-27) of
JSON-lines features read as written (objects), the order of a CSV file's features, and
names_column (sample_weight named by a column of any label).

Expected values come from brute-force pair counts with fractions.Fraction and from Python's
own int/str comparisons, never from fastbias. Found by review (each fails before its fix):
ordering a CSV feature's numbers by float out of core only split the CLI in memory from the
CLI streamed, tied ids beyond 2**53, and reordered Parquet and JSON strings; that ordering is
withdrawn: a CSV file's feature is text, in code point order, on every path that reads it.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning
from tests import _fuzz_harness as H
from tests.reference import pair_probability

# ------------------------------------------------------------------ helpers

def _auc(neg, pos):
    """P(pos > neg) + 1/2 P(pos == neg), exact (unweighted); NaN where a side is empty."""
    if not neg or not pos:
        return math.nan
    num = sum(Fraction(1) if p > n else Fraction(1, 2) if p == n else Fraction(0)
              for n in neg for p in pos)
    return float(num / (len(neg) * len(pos)))


def _aeg(back, sub):
    """1/2 - P(back > sub) - 1/2 P(=), exact; NaN where a side is empty."""
    if not back or not sub:
        return math.nan
    num = sum(Fraction(1) if b > s else Fraction(1, 2) if b == s else Fraction(0)
              for b in back for s in sub)
    return float(Fraction(1, 2) - num / (len(back) * len(sub)))


def _reference(y, s, member):
    y, s, m = np.asarray(y), np.asarray(s), np.asarray(member, dtype=bool)
    sn, sp = list(s[m & (y == 0)]), list(s[m & (y == 1)])
    bn, bp = list(s[~m & (y == 0)]), list(s[~m & (y == 1)])
    return {"subgroup_size": int(m.sum()), "subgroup_negatives": len(sn),
            "subgroup_positives": len(sp), "background_negatives": len(bn),
            "background_positives": len(bp), "subgroup_auc": _auc(sn, sp),
            "bpsn_auc": _auc(sn, bp), "bnsp_auc": _auc(bn, sp),
            "negative_aeg": _aeg(bn, sn), "positive_aeg": _aeg(bp, sp)}


def _same(a, b):
    a = math.nan if a is None else float(a)
    b = float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def _cli_json(path, args, tmp_path, stream_batch=None):
    """The CLI's JSON report (in memory, or streamed in batches of ``stream_batch`` rows) as
    the list of the first model's subgroup records, in the report's order."""
    import fastbias.cli as cli

    out = tmp_path / f"o{stream_batch}.json"
    argv = ["report", str(path), *args, "--out", str(out), "--force", "--progress", "never"]
    err = io.StringIO()
    with H.cli_streaming(stream_batch) as extra:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = cli.main(argv + extra)
    assert status == 0, err.getvalue()
    assert ("streaming it" in err.getvalue()) == bool(stream_batch)
    return json.loads(out.read_text())["models"][0]["subgroups"]


def _write_jsonl(rows, path):
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


def _names(table):
    return table["subgroup"].tolist()


def _quiet_eval(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fn(*a, **k)


# ------------------------------------------------------------------ (1) JSON lines, objects

# strings (digits with and without a leading zero, text that reads like a boolean), integers
# and floats that are equal (2 and 2.0: one value, as Python and evaluate take them), a
# float, and null (no group)
_F_VALUES = ["01", "1", "x", "true", 2, 2.0, 3.5, None]
_B_VALUES = [True, False, None]


def _mixed_rows():
    rows = []
    for i in range(40):
        rows.append({"y": (i * 5 + i // 7) % 2, "s": ((i * 7) % 11) / 10,
                     "f": _F_VALUES[(i * 3) % len(_F_VALUES)],
                     "b": _B_VALUES[(i // 2) % 3]})
    return rows


def _mixed_expected(rows):
    """{subgroup name: reference record}: groups by Python equality within a kind (text is
    text, 2 == 2.0), null in no group."""
    y = [r["y"] for r in rows]
    s = [r["s"] for r in rows]
    out = {}
    for feature, values, show in (("f", ["01", "1", "x", "true", 2, 3.5], str),
                                  ("b", [True, False], str)):
        for v in values:
            member = [r[feature] is not None
                      and isinstance(r[feature], str) == isinstance(v, str)
                      and r[feature] == v for r in rows]
            out[f"{feature}={show(v)}"] = _reference(y, s, member)
    return out


@pytest.mark.parametrize("batch", [None, 2, 3, 7])
def test_jsonl_objects_give_evaluate_groups_and_exact_metrics(tmp_path, batch):
    """Holds: JSON strings, ints/floats (2 and 2.0 one group), booleans and null give the
    groups evaluate gives on a DataFrame of the same Python objects, at any batch size, with
    counts and metrics equal to the brute-force reference."""
    rows = _mixed_rows()
    path = tmp_path / "m.jsonl"
    _write_jsonl(rows, path)
    ref = _mixed_expected(rows)
    assert set(ref) == {"f=01", "f=1", "f=x", "f=true", "f=2", "f=3.5", "b=True", "b=False"}
    df = pd.DataFrame({"y": [r["y"] for r in rows], "s": [r["s"] for r in rows],
                       "f": pd.Series([r["f"] for r in rows], dtype=object),
                       "b": pd.Series([r["b"] for r in rows], dtype=object)})
    table = _quiet_eval(fastbias.evaluate, df, label="y", scores="s",
                        sensitive_features=["f", "b"]).table
    in_memory = [n for n in _names(table) if " & " not in n]
    got = _cli_json(path, ["--label", "y", "--scores", "s", "--sensitive-features", "f", "b"],
                    tmp_path, batch)
    single = [r for r in got if " & " not in r["subgroup"]]
    assert [r["subgroup"] for r in single] == in_memory
    assert set(in_memory) == set(ref)
    for r in single:
        for key, value in ref[r["subgroup"]].items():
            assert _same(r[key], value), (r["subgroup"], key, r[key], value)


# ------------------------------------------------------------------ (2) text of numbers

def _site_rows(values):
    return [{"y": i % 2, "s": ((i * 7) % 10) / 10, "site": v} for i, v in enumerate(values)]


def test_cli_csv_feature_order_does_not_depend_on_streaming(tmp_path):
    """(Found by review.) A CSV feature of 9 and 10, and of ids 99999999999999999 and
    100000000000000000 (one float, 1e17): the day's first fix ordered such text by float out
    of core only, so the CLI in memory listed site=10 first and the streamed CLI site=9, and
    the ids tied as floats. The documented rule now holds on every path that reads the file:
    a CSV file's feature is text, in code point order, named as written."""
    args = ["--label", "y", "--scores", "s", "--sensitive-features", "site"]
    kw = dict(label="y", scores="s", sensitive_features=["site"])
    for values in ([9, 10], [99999999999999999, 100000000000000000]):
        path = tmp_path / f"s{values[0]}.csv"
        pd.DataFrame(_site_rows(values * 4)).to_csv(path, index=False)
        expected = [f"site={v}" for v in sorted(str(v) for v in values)]
        assert _names(_quiet_eval(fastbias.evaluate_csv, path, **kw).table) == expected
        assert [r["subgroup"] for r in _cli_json(path, args, tmp_path, 3)] == expected
        assert [r["subgroup"] for r in _cli_json(path, args, tmp_path)] == expected


def test_parquet_string_feature_keeps_text_order(tmp_path):
    """(Found by review.) A Parquet column of STRINGS "10" and "9" is text: evaluate(pd.read_parquet)
    lists f=10 before f=9 (text by code point, docs/sensitive_features.md; the documented
    exception is only "a CSV file's feature, read as text"). evaluate_parquet (and the CLI
    streaming the file) runs chosen_features, which orders any all-numeric text column by
    value: f=9 first, so the out-of-core order differs from evaluate's on the same data.
    Correct: ['f=10', 'f=9'] (the numbers of evaluate on every entry point)."""
    rows = [{"y": r["y"], "s": r["s"], "f": r["site"]} for r in _site_rows(["10", "9"] * 4)]
    path = tmp_path / "t.parquet"
    pd.DataFrame(rows).to_parquet(path)
    expected = sorted(["10", "9"])  # text order, code point
    expected = [f"f={v}" for v in expected]
    kw = dict(label="y", scores="s", sensitive_features=["f"])
    assert _names(_quiet_eval(fastbias.evaluate, pd.read_parquet(path), **kw).table) == expected
    assert _names(_quiet_eval(fastbias.evaluate_parquet, path, **kw).table) == expected


def test_jsonl_string_feature_order_does_not_depend_on_streaming(tmp_path):
    """(Found by review.) JSON strings "10" and "9" (text, read as objects since 57d5997): the CLI in
    memory lists f=10, f=9 (text order, as evaluate on a DataFrame of those strings); streamed
    it lists f=9, f=10 (chosen_features' numeric order of all-numeric text).
    Correct: one order, evaluate's ['f=10', 'f=9']."""
    rows = [{"y": r["y"], "s": r["s"], "f": r["site"]} for r in _site_rows(["10", "9"] * 4)]
    path = tmp_path / "t.jsonl"
    _write_jsonl(rows, path)
    expected = [f"f={v}" for v in sorted(["10", "9"])]
    df = pd.DataFrame(rows)
    assert _names(_quiet_eval(fastbias.evaluate, df, label="y", scores="s",
                              sensitive_features=["f"]).table) == expected
    args = ["--label", "y", "--scores", "s", "--sensitive-features", "f"]
    assert [r["subgroup"] for r in _cli_json(path, args, tmp_path)] == expected
    assert [r["subgroup"] for r in _cli_json(path, args, tmp_path, 3)] == expected


_TEXTS = ["1.0", "1", "-0", "0", "1e3", "1000", "+1", ".5"]


@pytest.mark.parametrize("batch", [None, 3])
def test_csv_texts_equal_as_numbers_stay_distinct_and_exact(tmp_path, batch):
    """Holds: CSV texts equal as numbers ('1.0'/'1'/'+1', '-0'/'0', '1e3'/'1000') are
    distinct groups named as written, neither merged nor refused, in code point order; counts
    and metrics are the brute-force reference."""
    values = _TEXTS * 3
    rows = [{"y": (i * 3 + i // 5) % 2, "s": ((i * 7) % 9) / 8, "f": v}
            for i, v in enumerate(values)]
    path = tmp_path / "n.csv"
    with open(path, "w") as f:  # (written by hand: the texts exactly as given)
        f.write("y,s,f\n" + "".join(f"{r['y']},{r['s']!r},{r['f']}\n" for r in rows))
    y, s = [r["y"] for r in rows], [r["s"] for r in rows]
    args = ["--label", "y", "--scores", "s", "--sensitive-features", "f"]
    got = {r["subgroup"]: r for r in _cli_json(path, args, tmp_path, batch)}
    assert set(got) == {f"f={t}" for t in _TEXTS}
    for t in _TEXTS:
        ref = _reference(y, s, [v == t for v in values])
        for key, value in ref.items():
            assert _same(got[f"f={t}"][key], value), (t, key)
    table = _quiet_eval(fastbias.evaluate_csv, path, label="y", scores="s",
                        sensitive_features=["f"]).table
    order = sorted(_TEXTS)  # (text: code point order)
    assert _names(table) == [f"f={t}" for t in order]


# ------------------------------------------------------------------ (3) names_column

def _weighted_frame():
    return pd.DataFrame({0: [0, 1, 0, 1, 0, 1], 1: [.1, .4, .35, .8, .7, .9],
                         2: [1, 1, 1, 0, 0, 0], 3: [1., 2., 1., 1., 3., 1.]})


def _weighted_auc(y, s, w):
    y, s, w = (np.asarray(v, dtype=np.float64) for v in (y, s, w))
    return pair_probability(s[y == 1], s[y == 0], w[y == 1], w[y == 0])


def _weights_given():
    import pyarrow as pa

    w = [1., 2., 1., 1., 3., 1.]
    given = {"int": 3, "np.int64": np.int64(3), "float": 3.0, "np.float64": np.float64(3.0),
             "ndarray": np.array(w), "list": list(w), "pd.array": pd.array(w),
             "pyarrow": pa.array(w), "chunked": pa.chunked_array([w]),
             "range": range(1, 7)}
    try:
        import polars as pl
        given["polars"] = pl.Series(w)
    except ImportError:
        pass
    return given


@pytest.mark.parametrize("kind", list(_weights_given()))
@pytest.mark.parametrize("nan_policy", ["raise", "omit"])
def test_sample_weight_names_or_data(kind, nan_policy):
    """Holds: an integer/float/numpy-scalar name finds column 3; weights given as data
    (numpy, list, pandas/pyarrow/polars arrays, a hashable range) are data even though the
    frame's columns are integers (range(1, 7) is not read as a name)."""
    df = _weighted_frame()
    given = _weights_given()[kind]
    w = list(range(1, 7)) if kind == "range" else df[3].tolist()
    res = _quiet_eval(fastbias.evaluate, df, label=0, scores=1, subgroups=[2],
                      sample_weight=given, nan_policy=nan_policy)
    assert float(res.overall_auc[1]) == _weighted_auc(df[0].tolist(), df[1].tolist(), w)
