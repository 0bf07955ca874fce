"""Threshold metrics with per-model subgroups, intersections, exclude and weights: an
independent review's tests (2026-11-28, thirty-ninth session), against a brute-force reference
of exact sums (fractions.Fraction) written here, scipy's beta quantiles, or numpy's own
comparison: weighted and per-model tables (``nan_policy="omit"``), thresholds duplicated,
unsorted, outside [0, 1], tied with scores or an ulp apart, weights at 1e300 and 1e-300 in
memory and streamed, Clopper-Pearson and Wilson intervals, empty and one-class cells, and the
JSON, CSV, HTML and CLI outputs against the table.

Found by review (failed before its fix): the report's figures (``BiasReport.threshold``, the
CLI's ``--report-threshold``, ``plot_threshold_gaps(threshold=)``) showed the first evaluated
threshold within 1e-12 of the one asked for, even where that one was itself evaluated: with
thresholds 0.3 and 0.1 * 3 (0.30000000000000004, two rows of the table with different gaps),
asking for the second showed the first. Now the nearest, so an exact match where there is one.
"""
from __future__ import annotations

import json
import math
import re
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

from . import cli_runner

RATES = ["positive_rate", "tpr", "fpr", "fnr", "precision"]
_NUM = {"positive_rate": ("pp", "al"), "tpr": ("tp", "pos"), "fpr": ("fp", "neg"),
        "fnr": ("fn", "pos"), "precision": ("tp", "pp")}


def _q(a, b):
    return float(a / b) if b != 0 else math.nan


def reference(y, s, groups, thresholds, w=None, universe=None, keep=None):
    """{(threshold, subgroup): {column: value}} from exact Fraction sums of the weights."""
    n = len(y)
    y = np.asarray(y, bool)
    s = np.asarray(s)
    W = [F(1)] * n if w is None else [F(float(x)) for x in w]
    keep = np.ones(n, bool) if keep is None else np.asarray(keep, bool)
    out = {}
    for t in sorted({float(x) for x in thresholds}):
        pred = s >= (np.float32(t) if s.dtype == np.float32 else t)
        for name, g in groups.items():
            u = np.ones(n, bool) if universe is None else np.asarray(universe[name], bool)
            u = u & keep
            g = np.asarray(g, bool) & u
            r, ex = {}, {}
            for side, m in (("subgroup", g), ("background", u & ~g)):
                def S(mask):
                    return sum((W[i] for i in np.flatnonzero(mask)), F(0))
                e = dict(tp=S(m & y & pred), fp=S(m & ~y & pred), fn=S(m & y & ~pred),
                         pos=S(m & y), neg=S(m & ~y), pp=S(m & pred), al=S(m))
                ex[side] = e
                r.update({f"{side}_positives": float(e["pos"]),
                          f"{side}_negatives": float(e["neg"]),
                          f"{side}_tp": float(e["tp"]), f"{side}_fp": float(e["fp"])})
                for k, (a, b) in _NUM.items():
                    r[f"{side}_{k}"] = _q(e[a], e[b])
            for k, (a, b) in _NUM.items():
                es, eb = ex["subgroup"], ex["background"]
                r[f"{k}_gap"] = (math.nan if es[b] == 0 or eb[b] == 0
                                 else float(es[a] / es[b] - eb[a] / eb[b]))
            out[(t, name)] = r
    return out


def check(table, want, rtol=1e-13, only=None):
    """Every row of ``table`` equals its reference row; every reference row is there."""
    table = table.reset_index() if "threshold" not in table.columns else table
    assert sorted(zip(table["threshold"], table["subgroup"].astype(str))) == sorted(want)
    for _, row in table.iterrows():
        for c, v in want[(row["threshold"], str(row["subgroup"]))].items():
            if only is not None and not c.endswith(only):
                continue
            got = float(row[c])
            if math.isnan(v):
                assert math.isnan(got), (row["threshold"], row["subgroup"], c, got)
            else:
                assert got == pytest.approx(v, rel=rtol, abs=1e-15), (
                    row["threshold"], row["subgroup"], c, got, v)


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **kw)


def _frame(seed=5, n=300):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": rng.integers(0, 11, n) / 10,               # ties at every threshold
                       "m2": (rng.integers(0, 11, n) / 10).astype(np.float32),
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "w": rng.choice([0.0, 0.1, 1 / 3, 2.5, 7.0], n)})
    df.loc[rng.random(n) < .2, "a"] = np.nan
    return df


def _masks(df):
    A, B, ua = df.a.to_numpy() >= .5, df.b.to_numpy() >= .5, df.a.notna().to_numpy()
    return ({"a": A, "b": B, "a & b": A & B},
            {"a": ua, "b": np.ones(len(df), bool), "a & b": ua})


# ------------------------------------------------------------------------------------ pins
def test_weighted_exclude_intersections_omit_two_models_equal_exact_sums():
    """Fractional and zero weights, exclude with NaN identities, intersections, two models
    (float64 and float32) one of which has NaN scores under omit: each model's rows equal the
    exact-sum reference on its own kept rows; thresholds duplicated, unsorted, outside [0, 1],
    at tied scores, and 0.1 * 3 / a linspace element kept apart from 0.3 / 0.7."""
    df = _frame()
    rng = np.random.default_rng(1)
    df.loc[rng.random(len(df)) < .1, "m2"] = np.nan
    ths = [0.7, 0.3, 0.7, -1.0, 2.0, 0.1 * 3, float(np.linspace(0, 1, 11)[7])]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                                thresholds=ths, sample_weight="w", missing_subgroup="exclude",
                                intersections=2, nan_policy="omit")
    undefined = [w for w in caught if w.category is fastbias.UndefinedMetricWarning]
    assert len(undefined) == 2  # one per model (the precision above the highest score)
    g, u = _masks(df)
    y = df.y.to_numpy() >= .5
    for m in ("m1", "m2"):
        part = res.thresholds[res.thresholds.model == m]
        check(part, reference(y, df[m].to_numpy(), g, ths, w=df.w.to_numpy(), universe=u,
                              keep=df[m].notna().to_numpy()), rtol=1e-12)


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_weights_at_extreme_scales_give_the_unscaled_rates_in_memory_and_parquet(scale,
                                                                                tmp_path):
    import fastbias.streaming as st
    df = _frame(n=200)
    d = df.assign(w=df.w * scale)
    d.to_parquet(tmp_path / "d.parquet")
    kw = dict(label="y", scores=["m1"], subgroups=["a", "b"], thresholds=[0.3, 0.7],
              sample_weight="w", missing_subgroup="exclude", intersections=2,
              threshold_interval="exact")
    g, u = _masks(df)
    want = reference(df.y.to_numpy() >= .5, df.m1.to_numpy(), g, [0.3, 0.7],
                     w=df.w.to_numpy(), universe=u)
    for table in (_quiet(fastbias.evaluate, d, **kw).thresholds,
                  _quiet(st.evaluate_parquet, tmp_path / "d.parquet", bucket_rows=5,
                         batch_rows=60, **kw).thresholds):
        check(table, want, rtol=1e-14, only=tuple(RATES) + ("_gap",))
        lows = table.filter(regex="_(low|high)$").to_numpy(float)
        rates = table[[f"{s}_{k}" for s in ("subgroup", "background") for k in RATES]]
        assert np.isfinite(lows).sum() == 2 * np.isfinite(rates.to_numpy(float)).sum()


def test_weights_summing_past_float64_are_refused_naming_sample_weight(tmp_path):
    df = _frame(n=200)
    d = df.assign(w=df.w * 1e307)
    kw = dict(label="y", scores=["m1"], subgroups=["a", "b"], thresholds=[0.5],
              sample_weight="w")
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.evaluate(d, **kw)
    d.to_csv(tmp_path / "d.csv", index=False)
    with pytest.raises(ValueError, match="sample_weight column 'w'"):
        fastbias.evaluate_csv(tmp_path / "d.csv", **kw)


def test_empty_and_backgroundless_subgroups_and_report_outputs_agree(tmp_path):
    """c has no member, d's annotated rows are all members (no background under exclude),
    and m2's scores are NaN on every row of b (b empty for m2 under omit): their rates are
    NaN, each model warns once for its threshold rates, each model lists its own subgroups
    (m2 drops the intersections with b), and the JSON, the thresholds CSV and the HTML
    table state the table's numbers."""
    rng = np.random.default_rng(7)
    n = 200
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": rng.integers(0, 11, n) / 10, "m2": rng.integers(0, 11, n) / 10,
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "c": np.zeros(n), "d": np.full(n, np.nan)})
    df.loc[:40, "d"] = 1.0
    df.loc[df.b == 1, "m2"] = np.nan
    df.loc[rng.random(n) < .2, "a"] = np.nan
    ths = [0.5, 0.3]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = fastbias.bias_report(df, label="y", scores=["m1", "m2"],
                                   subgroups=["a", "b", "c", "d"], thresholds=ths,
                                   missing_subgroup="exclude", intersections=2,
                                   nan_policy="omit")
    threshold_warnings = [str(w.message) for w in caught
                          if w.category is fastbias.UndefinedMetricWarning
                          and "threshold rate" in str(w.message)]
    assert len(threshold_warnings) == 2
    T = rep.result.thresholds
    y = df.y.to_numpy() >= .5
    M = {k: df[k].to_numpy() >= .5 for k in "abcd"}
    U = {k: df[k].notna().to_numpy() for k in "abcd"}
    names = {"m1": ["a", "b", "c", "d", "a & b", "a & d", "b & d"],
             "m2": ["a", "b", "c", "d", "a & d"]}
    for m, subs in names.items():
        g = {k: (M[k] if k in M else M[k[0]] & M[k[-1]]) for k in subs}
        u = {k: (U[k] if k in U else U[k[0]] & U[k[-1]]) for k in subs}
        check(T[T.model == m], reference(y, df[m].to_numpy(), g, ths, universe=u,
                                         keep=df[m].notna().to_numpy()), rtol=0)
        assert list(dict.fromkeys(T[T.model == m].subgroup)) == subs
    # JSON: every record, exactly
    doc = json.loads(rep.to_json())
    for model in doc["models"]:
        got = pd.DataFrame(model["thresholds"]).fillna(np.nan)
        want = T[T.model == model["name"]].drop(columns="model").reset_index(drop=True)
        for c in want.columns:
            if want[c].dtype.kind == "f":
                np.testing.assert_array_equal(got[c].to_numpy(float), want[c].to_numpy(float))
            else:
                assert got[c].astype(str).tolist() == want[c].astype(str).tolist()
    # thresholds CSV reads back bit for bit
    rep.thresholds_to_csv(tmp_path / "t.csv")
    back = pd.read_csv(tmp_path / "t.csv")
    for c in T.columns:
        if T[c].dtype.kind == "f":
            np.testing.assert_array_equal(back[c].to_numpy(float), T[c].to_numpy(float))
    # HTML table: every row, gaps to 4 decimals, n/a where NaN
    html = rep.to_html()
    for m in ("m1", "m2"):
        seg = re.search(rf'class="thresholds" data-model="{m}">(.*?)</table>', html, re.S)
        rows = re.findall(r"<tr><td>(.*?)</td><td class=num>(.*?)</td>(.*?)</tr>", seg.group(1))
        assert len(rows) == (T.model == m).sum()
        for name, th, rest in rows:
            name = re.sub("<.*?>", "", name).replace("&amp;", "&")
            row = T[(T.model == m) & (T.subgroup == name) & (T.threshold == float(th))]
            assert len(row) == 1
            cells = [c.strip() for c in re.findall(r"<td class=num>(.*?)</td>", rest)]
            want = ["n/a" if np.isnan(row.iloc[0][k]) else f"{row.iloc[0][k]:+.4f}"
                    for k in ("positive_rate_gap", "tpr_gap", "fpr_gap", "fnr_gap",
                              "precision_gap")]
            assert cells == want, (m, name, th)


def test_cli_thresholds_negative_inf_duplicate_with_weights_exclude_omit(tmp_path):
    rng = np.random.default_rng(11)
    n = 300
    f = np.float32(0.7)
    near = np.array([np.nextafter(f, np.float32(0)), f, np.nextafter(f, np.float32(1)), 0.3,
                     0.5], np.float32)
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": rng.integers(0, 11, n) / 10, "m2": rng.choice(near, n),
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "w": rng.choice([0.0, 0.25, 0.5, 3.0], n)})
    df.loc[rng.random(n) < .2, "a"] = np.nan
    df.loc[rng.random(n) < .1, "m1"] = np.nan
    df.to_parquet(tmp_path / "d.parquet")
    ths = ["-0.5", "0.7", "0.3", "0.7", "inf", "0.69999999999999996"]
    out = tmp_path / "r.csv"
    p = cli_runner.run_cli(["report", tmp_path / "d.parquet", "--label", "y", "--scores", "m1",
                            "m2", "--subgroups", "a", "b", "--thresholds", *ths,
                            "--missing-subgroup", "exclude", "--nan-policy", "omit",
                            "--intersections", "2", "--weight", "w", "--out", out, "--out",
                            tmp_path / "r.json", "-q"])
    assert p.returncode == 0, p.stderr
    table = pd.read_csv(tmp_path / "r.thresholds.csv")
    assert sorted(table.threshold.unique()) == [-0.5, 0.3, 0.7, math.inf]
    g, u = _masks(df)
    y = df.y.to_numpy() >= .5
    for m in ("m1", "m2"):
        check(table[table.model == m],
              reference(y, df[m].to_numpy(), g, [float(t) for t in ths], w=df.w.to_numpy(),
                        universe=u, keep=df[m].notna().to_numpy()), rtol=1e-13)
    doc = json.loads((tmp_path / "r.json").read_text())
    assert [len(x["thresholds"]) for x in doc["models"]] == [12, 12]


def test_whole_weights_equal_repeated_rows_and_scipy_intervals():
    from scipy import stats
    rng = np.random.default_rng(3)
    n = 120
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": rng.integers(0, 11, n) / 10,
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "w": rng.choice([0.0, 1.0, 2.0, 3.0], n)})
    df.loc[rng.random(n) < .2, "a"] = np.nan
    kw = dict(label="y", scores="m1", subgroups=["a", "b"], thresholds=[0.5, 0.3],
              missing_subgroup="exclude", intersections=2, threshold_interval="exact")
    T = _quiet(fastbias.evaluate, df, sample_weight="w", **kw).thresholds
    rep = df.loc[df.index.repeat(df.w.astype(int))].drop(columns="w").reset_index(drop=True)
    T2 = _quiet(fastbias.evaluate, rep, **kw).thresholds
    cols = [c for c in T.columns if T[c].dtype.kind == "f" and c != "threshold"]
    np.testing.assert_allclose(T[cols].to_numpy(float), T2[cols].to_numpy(float), rtol=1e-12,
                               atol=1e-15)

    def cp(k, nn):
        lo = 0.0 if k == 0 else stats.beta.ppf(0.025, k, nn - k + 1)
        hi = 1.0 if k == nn else stats.beta.ppf(0.975, k + 1, nn - k)
        return lo, hi
    for _, row in T.iterrows():
        for side in ("subgroup", "background"):
            lo, hi = cp(row[f"{side}_fp"], row[f"{side}_negatives"])
            assert row[f"{side}_fpr_low"] == pytest.approx(lo, abs=1e-12)
            assert row[f"{side}_fpr_high"] == pytest.approx(hi, abs=1e-12)
    # Wilson with fractional weights: the textbook formula with n the weight total
    W = _quiet(fastbias.evaluate, df.assign(w=df.w * 0.37 + 0.01), label="y", scores="m1",
               subgroups=["a", "b"], thresholds=[0.5], sample_weight="w").thresholds
    z = stats.norm.ppf(0.975)
    for _, row in W.iterrows():
        for side in ("subgroup", "background"):
            k, nn = row[f"{side}_tp"], row[f"{side}_positives"]
            p, d = k / nn, 1 + z * z / nn
            c, h = (p + z * z / (2 * nn)) / d, z * math.sqrt(p * (1 - p) / nn
                                                              + z * z / (4 * nn * nn)) / d
            assert row[f"{side}_tpr_low"] == pytest.approx(c - h, abs=1e-12)
            assert row[f"{side}_tpr_high"] == pytest.approx(c + h, abs=1e-12)


def test_bernstein_gap_interval_with_weights_is_refused():
    df = _frame(n=60)
    with pytest.raises(ValueError, match="bernstein"):
        fastbias.evaluate(df, label="y", scores="m1", subgroups=["b"], thresholds=[0.5],
                          sample_weight="w", gap_interval="bernstein")


@pytest.mark.parametrize("dtype", ["float32", "Float32", "float32[pyarrow]", "float16"])
def test_float32_family_scores_count_as_numpy_counts_python_float(dtype):
    f = np.float32(0.7)
    vals = np.array([np.nextafter(f, np.float32(0)), f, np.nextafter(f, np.float32(1))] * 4,
                    np.float32)
    if dtype == "float16":
        col = vals.astype(np.float16)
        want = int((col.astype(np.float32) >= np.float32(0.7)).sum())
    else:
        col = pd.array(vals, dtype=dtype) if dtype != "float32" else vals
        want = int((vals >= 0.7).sum())  # numpy: 0.7 rounded to float32
    df = pd.DataFrame({"y": np.array([0, 1, 0, 1] * 3, float), "s": col,
                       "a": (np.arange(12) % 2 == 0).astype(float)})
    t = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a"],
               thresholds=[0.7]).thresholds.iloc[0]
    assert int(t.subgroup_tp + t.subgroup_fp + t.background_tp + t.background_fp) == want


def test_float64_threshold_between_two_float32_scores_rounds_to_float32():
    lo = np.float32(0.3)
    hi = np.nextafter(lo, np.float32(1))
    t_down = float(lo) + (float(hi) - float(lo)) * 0.25   # rounds to lo in float32
    t_up = float(lo) + (float(hi) - float(lo)) * 0.75     # rounds to hi
    assert np.float32(t_down) == lo and np.float32(t_up) == hi
    s = np.array([lo, hi] * 6, np.float32)
    y = np.array([0, 0, 1, 1] * 3, bool)
    g = {"g": np.arange(12) < 6}
    got = _quiet(fastbias.threshold_metrics, y, s, g, thresholds=[t_down, t_up]).reset_index()
    pp = (got.subgroup_tp + got.subgroup_fp + got.background_tp + got.background_fp).tolist()
    assert pp == [int((s >= t_down).sum()), int((s >= t_up).sum())] == [12, 6]


def test_threshold_metrics_label_and_subgroup_thresholds_and_pos_label():
    rng = np.random.default_rng(2)
    n = 80
    yf = rng.integers(0, 5, n) / 4
    s = rng.integers(0, 11, n) / 10
    sub = pd.DataFrame({"a": rng.integers(0, 5, n) / 4, "b": rng.integers(0, 5, n) / 4})
    with pytest.raises(ValueError, match="position 1"):
        fastbias.threshold_metrics(yf, s, sub, thresholds=[0.5])
    for lt, st in ((0.75, 0.25), (0.5, 0.5)):
        got = _quiet(fastbias.threshold_metrics, yf, s, sub, thresholds=[0.5, 0.2],
                     label_threshold=lt, subgroup_threshold=st)
        check(got, reference(yf >= lt, s, {k: sub[k].to_numpy() >= st for k in "ab"},
                             [0.5, 0.2]), rtol=0)
    ys = np.where(yf >= .5, "tox", "ok")
    got = _quiet(fastbias.threshold_metrics, ys, s, {"a": sub.a.to_numpy() >= .5},
                 thresholds=[0.5], pos_label="tox")
    check(got, reference(yf >= .5, s, {"a": sub.a.to_numpy() >= .5}, [0.5]), rtol=0)


@pytest.mark.parametrize("bad, kind", [([True], TypeError), (["0.5"], TypeError),
                                       ([2 ** 53 + 1], ValueError), ([F(1, 3)], ValueError),
                                       ([[0.5]], ValueError), ([0.5j], TypeError)])
def test_evaluate_refuses_thresholds_it_cannot_take_exactly(bad, kind):
    df = _frame(n=40)
    with pytest.raises(kind, match="thresholds"):
        fastbias.evaluate(df, label="y", scores="m1", subgroups=["b"], thresholds=bad)


# --------------------------------------------------------------------------------- defects
def test_the_report_shows_the_evaluated_threshold_asked_for_not_its_neighbour():
    """Thresholds 0.3 and 0.1 * 3 (= 0.30000000000000004) are two rows of the table, with
    different gaps (a score of exactly 0.3 is positive at the first, not at the second).
    Asking the report for 0.30000000000000004 shows it (fpr_gap 0.0), not 0.3 (fpr_gap 1.0),
    as it did when the first evaluated threshold within 1e-12 was taken."""
    from fastbias.reports.plots import threshold_shown
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1] * 5, float)
    s = np.array([0.3, 0.3, 0.3, 0.9, 0.1, 0.3, 0.2, 0.3] * 5)
    a = np.array([1, 1, 1, 1, 0, 0, 0, 0] * 5, float)
    df = pd.DataFrame({"y": y, "s": s, "a": a})
    t2 = 0.1 * 3
    rep = _quiet(fastbias.bias_report, df, label="y", scores="s", subgroups=["a"],
                 thresholds=[0.3, t2])
    T = rep.result.thresholds
    # the reference: the two thresholds' FPR gaps by hand
    neg, pos_pred = ~(y >= .5), {t: s >= t for t in (0.3, t2)}
    for t, want in ((0.3, 1.0), (t2, 0.0)):
        sub_fpr = (pos_pred[t] & neg & (a == 1)).sum() / (neg & (a == 1)).sum()
        bg_fpr = (pos_pred[t] & neg & (a == 0)).sum() / (neg & (a == 0)).sum()
        assert sub_fpr - bg_fpr == want
        assert T.loc[T.threshold == t, "fpr_gap"].item() == want
    rep.threshold = t2  # as the CLI's --report-threshold sets it
    shown = re.findall(r"at threshold ([^ ]+) \(predicted", rep.to_html())
    assert (threshold_shown(rep.result, t2), set(shown)) == (t2, {repr(t2)})
