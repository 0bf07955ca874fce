"""An independent review's tests (2026-11-27): identity columns -> memberships on every
entry point (arrays, DataFrames, BiasEvaluator, evaluate, CSV, Parquet, Dask, the CLI),
against an independent brute-force reference (Fraction pair counts): every byte value,
integers beyond 2**53, nullable and pyarrow dtypes, float16/32 thresholds at and beside
values, missing_subgroup="exclude" with NA. These held on the reviewed code; they pin the
documented membership rules. Found by review (fails before its fix): an exact Decimal
subgroup_threshold was refused where a Fraction, thresholds= and the columns' values take it.
"""
import contextlib
import io
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


def _missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def _members(values, threshold, boolean):
    t = Fraction(threshold)
    out = []
    for v in values:
        if _missing(v):
            out.append(None)
        elif boolean:
            out.append(bool(v))
        else:
            v = v.item() if isinstance(v, np.generic) else v
            out.append(Fraction(v) >= t)
    return out


def _p(xs, ys):
    if not xs or not ys:
        return None
    return sum(1 if a > b else Fraction(1, 2) if a == b else 0
               for a in xs for b in ys) / (len(xs) * len(ys))


def _reference(y, s, mem, policy):
    sn = [si for yi, si, m in zip(y, s, mem) if m is True and yi == 0]
    sp = [si for yi, si, m in zip(y, s, mem) if m is True and yi == 1]
    bg = [(yi, si) for yi, si, m in zip(y, s, mem)
          if m is False or (m is None and policy == "background")]
    bn = [si for yi, si in bg if yi == 0]
    bp = [si for yi, si in bg if yi == 1]
    f = lambda v: math.nan if v is None else float(v)  # noqa: E731
    g = lambda p: math.nan if p is None else float(Fraction(1, 2) - p)  # noqa: E731
    return {"subgroup_negatives": len(sn), "subgroup_positives": len(sp),
            "background_negatives": len(bn), "background_positives": len(bp),
            "subgroup_auc": f(_p(sp, sn)), "bpsn_auc": f(_p(bp, sn)),
            "bnsp_auc": f(_p(sp, bn)), "negative_aeg": g(_p(bn, sn)),
            "positive_aeg": g(_p(bp, sp))}


def _expected(df, cols, t, policy, boolean=()):
    y = [int(v) for v in df["y"]]
    s = [Fraction(float(v)) for v in df["s"]]
    return {c: _reference(y, s, _members(list(df[c].astype(object)), t, c in boolean), policy)
            for c in cols}


def _assert_table(table, expected, where):
    for name, exp in expected.items():
        row = table.loc[name]
        for k in COUNTS:
            assert int(row[k]) == exp[k], (where, name, k, row[k], exp[k])
        for k in METRICS:
            if math.isnan(exp[k]):
                assert math.isnan(row[k]), (where, name, k, row[k])
            else:
                assert abs(float(row[k]) - exp[k]) <= 1e-15, (where, name, k, row[k], exp[k])


def _entries(df, cols, t, policy, tmp_path):
    """Every entry point's table for these identity columns."""
    import dask
    import dask.dataframe as dd

    import fastbias.dask
    from fastbias.cli import main

    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if policy == "background":
            out["bias_metrics"] = fastbias.bias_metrics(df["y"], df["s"], df[cols],
                                                        subgroup_threshold=t)
            out["bias_metrics_dict"] = fastbias.bias_metrics(
                df["y"], df["s"], {c: df[c] for c in cols}, subgroup_threshold=t)
            out["evaluator"] = fastbias.BiasEvaluator(df["y"], df[cols],
                                                      subgroup_threshold=t).metrics(df["s"])
        out["evaluate"] = fastbias.evaluate(df, label="y", scores="s", subgroups=cols,
                                            subgroup_threshold=t,
                                            missing_subgroup=policy).for_model("s")
        pq = tmp_path / "d.parquet"
        df.to_parquet(pq, index=False)
        out["parquet"] = fastbias.evaluate_parquet(
            pq, label="y", scores="s", subgroups=cols, subgroup_threshold=t,
            missing_subgroup=policy, temp_dir=tmp_path).for_model("s")
        with dask.config.set({"dataframe.convert-string": False}):
            out["dask"] = fastbias.dask.evaluate(
                dd.from_pandas(df, npartitions=3), label="y", scores="s", subgroups=cols,
                subgroup_threshold=t, missing_subgroup=policy).for_model("s")
        o = tmp_path / "o.csv"
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            rc = main(["report", str(pq), "--label", "y", "--scores", "s", "--subgroups", *cols,
                       f"--subgroup-threshold={t!r}", "--missing-subgroup", policy,
                       "--out", str(o), "--force", "-q"])
        assert rc == 0
        out["cli"] = pd.read_csv(o).set_index("subgroup")
    return out


def _base(n, seed):
    rng = np.random.default_rng(seed)
    return rng, pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.integers(0, 10, n) / 10.0})


@pytest.mark.parametrize("t", [0, 1, 127.5, 128, 255, 256, -1])
def test_uint8_every_byte_every_entry_point(tmp_path, t):
    rng, df = _base(512, 1)
    df["g"] = np.tile(np.arange(256), 2).astype("uint8")
    exp = _expected(df, ["g"], t, "background")
    for where, table in _entries(df, ["g"], t, "background", tmp_path).items():
        _assert_table(table, exp, where)


@pytest.mark.parametrize("t", [0.7, float(np.float32(0.7)),
                               float(np.nextafter(np.float32(0.7), np.float32(1))),
                               float(np.nextafter(0.7, 0.0)), float(np.float16(0.1))])
def test_float16_32_64_columns_compared_as_real_numbers(tmp_path, t):
    rng, df = _base(120, 2)
    vals = [0.0, 0.1, 0.3, 0.7, 1.0, np.nan]
    idx = rng.integers(0, len(vals), 120)
    for dt in ["float16", "float32", "float64"]:
        df[dt] = np.array([vals[i] for i in idx], dtype=dt)
    cols = ["float16", "float32", "float64"]
    for policy in ["background", "exclude"]:
        exp = _expected(df, cols, t, policy)
        for where, table in _entries(df, cols, t, policy, tmp_path).items():
            _assert_table(table, exp, f"{where}/{policy}")


def test_integers_beyond_2_53_and_nullable_and_pyarrow_columns(tmp_path):
    B = 2 ** 53
    rng, df = _base(80, 3)
    pick = lambda vals: [vals[i] for i in rng.integers(0, len(vals), 80)]  # noqa: E731
    df["i64"] = np.array(pick([B - 1, B, B + 1, B + 3, B + 5, 0]), dtype="int64")
    df["u64"] = np.array(pick([B + 1, B + 3, B + 5, 0]), dtype="uint64")
    df["Int64"] = pd.array(pick([B + 1, B + 3, B + 5, None]), dtype="Int64")
    df["pa"] = pd.array(pick([B + 1, B + 3, B + 5, None]), dtype="int64[pyarrow]")
    cols = ["i64", "u64", "Int64", "pa"]
    for t in [B + 2, B + 4]:
        for policy in ["background", "exclude"]:
            exp = _expected(df, cols, t, policy)
            for where, table in _entries(df, cols, t, policy, tmp_path).items():
                _assert_table(table, exp, f"{where}/{policy}/{t}")


def test_exclude_with_all_na_column_and_rows_na_everywhere(tmp_path):
    rng, df = _base(80, 4)
    pick = lambda vals: [vals[i] for i in rng.integers(0, len(vals), 80)]  # noqa: E731
    df["a"] = pick([0.0, 1.0, np.nan])
    df["b"] = pd.array(pick([True, False, pd.NA]), dtype="boolean")
    df["c"] = np.nan
    df["d"] = pd.array(pick([0, 3, pd.NA]), dtype="Int64")
    df["e"] = pd.array([pd.NA] * 80, dtype="boolean")
    gone = rng.random(80) < 0.2
    df.loc[gone, ["a", "d"]] = np.nan
    df.loc[gone, "b"] = pd.NA
    cols = ["a", "b", "c", "d", "e"]
    for policy in ["background", "exclude"]:
        exp = _expected(df, cols, 0.5, policy, boolean={"b", "e"})
        for where, table in _entries(df, cols, 0.5, policy, tmp_path).items():
            _assert_table(table, exp, f"{where}/{policy}")


def test_categorical_of_bools_is_a_membership_as_is_on_every_entry_point(tmp_path):
    # a Categorical of True/False with threshold 2 is read as booleans everywhere
    rng, df = _base(60, 5)
    df["g"] = pd.Categorical([bool(v) for v in rng.integers(0, 2, 60)])
    exp = _expected(df, ["g"], 2, "background", boolean={"g"})
    for where, table in _entries(df, ["g"], 2, "background", tmp_path).items():
        _assert_table(table, exp, where)


def test_masked_identity_entries_are_never_members():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 60)
    s = rng.integers(0, 5, 60) / 5
    m = np.ma.masked_array(rng.integers(0, 4, 60), mask=rng.random(60) < 0.3)
    m.data[m.mask] = 9   # hidden values above the threshold
    vals = [None if k else int(v) for v, k in zip(m.data, m.mask)]
    exp = {"g": _reference(list(y), [Fraction(v) for v in s], _members(vals, 2, False),
                           "background")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_table(fastbias.bias_metrics(y, s, {"g": m}, subgroup_threshold=2), exp, "bm")
        _assert_table(fastbias.BiasEvaluator(y, {"g": m}, subgroup_threshold=2).metrics(s),
                      exp, "ev")


def test_decimal_subgroup_threshold_taken_when_exact():
    """Decimal('0.5') is the float 0.5: taken as a Fraction is (members by the reference's
    own >= on the values); Decimal('0.1') is not a float64 and is refused, as Fraction(1, 3)
    is."""
    from decimal import Decimal
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .9, .3, .7, .2, .6])
    values = np.array([0.5, 0.7, 0.2, 0.1, 0.5, 0.49])
    members = [Fraction(v) >= Fraction(1, 2) for v in values.tolist()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, {"g": values}, subgroup_threshold=Decimal("0.5"))
    assert int(table.iloc[0]["subgroup_size"]) == sum(members) == 3
    with pytest.raises(ValueError, match=r"subgroup_threshold Decimal\('0\.1'\) is not a "
                                         r"float64"):
        fastbias.bias_metrics(y, s, {"g": values}, subgroup_threshold=Decimal("0.1"))
