"""The threshold metrics (docs/thresholds.md) against a brute-force
reference of numpy masks: per threshold and subgroup the TP/FP/TN/FN counts (or exact weight
sums, math.fsum) of the subgroup and its background, rates as ratios, NaN on an empty set:
an independent review's tests (2026-11-27). Found by review (each failed before its fix):

* Wilson's upper bound of a rate of exactly 1 is 0.9999999999999999 (below its estimate)
  for many sizes (9, 10, 11, 62, ... rows at 95%; 30,172 of n = 1..100,000).
* ``evaluate(threshold_interval="foo")`` names the argument ``interval``.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.intervals.thresholds import wilson_interval

RATES = ["positive_rate", "tpr", "fpr", "fnr", "precision"]


def _div(a, b):
    return a / b if b > 0 else np.nan


def reference(y, s, groups, thresholds, w=None, universe=None):
    y = np.asarray(y, bool)
    s = np.asarray(s)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    rows = []
    for t in sorted({float(x) for x in np.atleast_1d(thresholds)}):
        pred = s >= (np.float32(t) if s.dtype == np.float32 else t)
        for name, g in groups.items():
            u = np.ones(len(y), bool) if universe is None else np.asarray(universe[name], bool)
            g = np.asarray(g, bool) & u
            r = {"threshold": t, "subgroup": name}
            for side, m in (("subgroup", g), ("background", u & ~g)):
                tp, fp = math.fsum(w[m & y & pred]), math.fsum(w[m & ~y & pred])
                fn = math.fsum(w[m & y & ~pred])
                pos, neg = math.fsum(w[m & y]), math.fsum(w[m & ~y])
                pp, al = math.fsum(w[m & pred]), math.fsum(w[m])
                r.update({f"{side}_positives": pos, f"{side}_negatives": neg,
                          f"{side}_tp": tp, f"{side}_fp": fp,
                          f"{side}_positive_rate": _div(pp, al), f"{side}_tpr": _div(tp, pos),
                          f"{side}_fpr": _div(fp, neg), f"{side}_fnr": _div(fn, pos),
                          f"{side}_precision": _div(tp, pp)})
            for k in RATES:
                r[f"{k}_gap"] = r[f"subgroup_{k}"] - r[f"background_{k}"]
            rows.append(r)
    return pd.DataFrame(rows)


def assert_matches(got, want, atol=0.0):
    got = got.reset_index() if "threshold" not in got.columns else got
    got = got.reset_index(drop=True)
    assert got["threshold"].tolist() == want["threshold"].tolist()
    assert got["subgroup"].astype(str).tolist() == want["subgroup"].tolist()
    for c in want.columns[2:]:
        tol = atol if c.endswith(tuple(RATES) + ("_gap",)) else 0.0
        np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float), rtol=0,
                                   atol=tol, err_msg=c)


def assert_intervals_sound(table):
    t = table.reset_index() if "threshold" not in table.columns else table
    for side in ("subgroup", "background"):
        for k in RATES:
            e, lo, hi = (t[f"{side}_{k}{x}"].to_numpy(float) for x in ("", "_low", "_high"))
            nan = np.isnan(e)
            assert (np.isnan(lo) == nan).all() and (np.isnan(hi) == nan).all(), (side, k)
            ok = nan | ((0 <= lo) & (lo <= e) & (e <= hi) & (hi <= 1))
            assert ok.all(), (side, k, e[~ok][:3], lo[~ok][:3], hi[~ok][:3])
    for k in RATES:
        if f"{k}_gap_low" not in t:
            continue
        e, lo, hi = (t[f"{k}_gap{x}"].to_numpy(float) for x in ("", "_low", "_high"))
        nan = np.isnan(e)
        assert (np.isnan(lo[nan]).all() and np.isnan(hi[nan]).all()), k
        ok = nan | ((-1 <= lo) & (lo <= e) & (e <= hi) & (hi <= 1))
        assert ok.all(), (k, e[~ok][:3], lo[~ok][:3], hi[~ok][:3])


def _data(seed=0, n=500):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 11, n) / 10  # ties at every threshold of the grid
    y = rng.random(n) < 0.4
    g = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.1}
    return y, s, g, rng


@pytest.mark.parametrize("thresholds", [[0.5], [0.7, 0.3, 0.7, 0.0, 1.0], np.array([0.2, 0.9]),
                                        0.6, [-0.5, 1.5], [0.1 * 3], [-np.inf, np.inf]])
def test_counts_rates_gaps_equal_brute_force_with_ties(thresholds):
    y, s, g, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fastbias.threshold_metrics(y, s, g, thresholds=thresholds, interval="exact",
                                         gap_interval="bernstein")
    assert_matches(got, reference(y, s, g, thresholds))


def test_float32_scores_at_a_float64_threshold_count_at_float32():
    f = np.float32(0.7)  # 0.699999988 < 0.7: counted at or above the threshold 0.7
    s = np.array([np.nextafter(f, np.float32(0)), f, np.nextafter(f, np.float32(1))] * 4,
                 np.float32)
    y = np.array([0, 1, 0, 1] * 3, bool)
    g = {"g": np.arange(12) % 2 == 0}
    got = fastbias.threshold_metrics(y, s, g, thresholds=[0.7, float(f)])
    assert_matches(got, reference(y, s, g, [0.7, float(f)]))
    assert (got["subgroup_tp"] + got["subgroup_fp"] + got["background_tp"]
            + got["background_fp"]).tolist() == [8, 8]


def test_weights_with_zeros_equal_exact_sums():
    y, s, g, rng = _data(1)
    w = rng.choice([0.0, 0.5, 1.0, 2.5, 1e-3], len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fastbias.threshold_metrics(y, s, g, thresholds=[0.5, 0.7, 1.0], sample_weight=w,
                                         interval="exact")
    want = reference(y, s, g, [0.5, 0.7, 1.0], w)
    # weight sums within 1 ulp of the exact sum, rates to 1e-15
    assert_matches(got, want.assign(**{c: got.reset_index()[c] for c in want.columns[2:]
                                       if not c.endswith(tuple(RATES) + ("_gap",))}),
                   atol=1e-15)
    for c in ("subgroup_tp", "background_fp", "background_negatives"):
        np.testing.assert_allclose(got[c].to_numpy(), want[c].to_numpy(), rtol=3e-16)
    assert_intervals_sound(got)


@pytest.mark.parametrize("bad, kind, where", [(np.nan, ValueError, "position 0"),
                                              ([0.5, np.nan], ValueError, "position 1"),
                                              ([0.5, "x"], TypeError, "position 1"),
                                              ([0.5, None], TypeError, "position 1"),
                                              ([], ValueError, "thresholds")])
def test_bad_thresholds_are_refused_with_their_position(bad, kind, where):
    y, s, g, _ = _data()
    with pytest.raises(kind, match="thresholds") as e:
        fastbias.threshold_metrics(y, s, g, thresholds=bad)
    assert where in str(e.value)


def _frame(seed=1, n=600):
    rng = np.random.default_rng(seed)
    f = np.float32(0.7)
    near = np.array([np.nextafter(f, np.float32(0)), f, np.nextafter(f, np.float32(1)), 0.3],
                    np.float32)
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": np.round(rng.random(n), 1),
                       "m2": rng.choice(near, n),
                       "m3": rng.choice(np.array([0.7, 0.69999999, float(f), 0.70000001]), n),
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "race": pd.Categorical(rng.choice(["x", "y", None], n))})
    df.loc[rng.random(n) < .2, "a"] = np.nan
    return df


def test_evaluate_every_path_equals_brute_force_exclude_intersections_sensitive(tmp_path):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask as fd
    df = _frame()
    ths = [0.7, 0.3, 0.7, 0.5, float(np.float32(0.7)), 0.0, 1.0]
    kw = dict(label="y", scores=["m1", "m2", "m3"], subgroups=["a", "b"], thresholds=ths,
              missing_subgroup="exclude", intersections=2, sensitive_features=["race"],
              threshold_interval="exact", gap_interval="bernstein")
    df.to_parquet(tmp_path / "d.parquet")
    df.to_csv(tmp_path / "d.csv", index=False)
    y = df.y.to_numpy() >= .5
    A, B, ua = df.a.to_numpy() >= .5, df.b.to_numpy() >= .5, df.a.notna().to_numpy()
    race = df.race.astype(object).to_numpy()
    ur = ~pd.isna(race)
    g = {"a": A, "b": B, "a & b": A & B, "race=x": race == "x", "race=y": race == "y"}
    u = {"a": ua, "b": np.ones(len(df), bool), "a & b": ua, "race=x": ur, "race=y": ur}
    with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        warnings.simplefilter("ignore")
        tables = {"memory": fastbias.evaluate(df, **kw).thresholds,
                  "parquet": fastbias.evaluate_parquet(tmp_path / "d.parquet", **kw).thresholds,
                  "csv": fastbias.evaluate_csv(tmp_path / "d.csv", **kw).thresholds,
                  "dask": fd.evaluate(dd.from_pandas(df, npartitions=7), **kw).thresholds}
    for name, table in tables.items():
        for m in ("m1", "m2", "m3"):
            part = table[table.model == m].reset_index(drop=True)
            assert_matches(part, reference(y, df[m].to_numpy(), g, ths, universe=u))
        pd.testing.assert_frame_equal(table.reset_index(drop=True),
                                      tables["memory"].reset_index(drop=True),
                                      check_exact=True, check_dtype=False,
                                      check_categorical=False)


def test_exact_and_bernstein_intervals_contain_their_estimates():
    y, s, g, _ = _data(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fastbias.threshold_metrics(y, s, g, thresholds=np.linspace(-0.1, 1.1, 13),
                                         interval="exact", gap_interval="bernstein")
    assert_intervals_sound(got)


# -------------------------------------------------------- found by review
@pytest.mark.parametrize("n", [9, 10, 11, 62])
def test_wilson_upper_bound_of_a_rate_of_one_is_one(n):
    """Every row predicted positive: positive rate 1, its Wilson upper bound must be 1
    (got 0.9999999999999999, below the estimate)."""
    y = np.zeros(n + 1, bool)
    s = np.ones(n + 1)
    g = {"g": np.r_[True, np.zeros(n, bool)]}
    got = fastbias.threshold_metrics(y, s, g, thresholds=[0.5])
    row = got.loc[(0.5, "g")]
    assert row["background_positive_rate"] == 1.0
    assert row["background_positive_rate_high"] == 1.0
    assert row["background_fpr_high"] == 1.0


def test_wilson_interval_contains_its_estimate_on_a_grid():
    y, s, g, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = fastbias.threshold_metrics(y, s, g, thresholds=[0.0, 0.5, 1.0],
                                         gap_interval="bernstein")
    assert_intervals_sound(got)


def test_wilson_interval_function_at_k_equal_n():
    n = np.arange(1.0, 2001.0)
    for total in (n, n * 0.37):
        low, high = wilson_interval(total, total, 0.95)
        assert (high == 1.0).all(), total[high < 1][:5]


def test_evaluate_names_threshold_interval():
    y, s, g, _ = _data()
    df = pd.DataFrame({"y": y, "s": s, "a": g["a"]})
    with pytest.raises(ValueError, match="threshold_interval"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["a"], thresholds=[0.5],
                          threshold_interval="foo")
