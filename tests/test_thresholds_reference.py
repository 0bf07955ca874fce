"""The threshold metrics against an independent reference (an independent review's tests), from
docs/thresholds.md (predicted positive = score >= threshold rounded to the scores' type;
rates per subgroup and background; gaps subgroup minus background; Wilson and
Clopper-Pearson intervals with weights as frequency weights; the Bernstein gap interval of
Ethayarajh 2020 from per-row amortized disparities). The failing tests at the end are
defects of the rate intervals at extreme (but accepted) weights."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias

stats = pytest.importorskip("scipy.stats")

RATES = ["positive_rate", "tpr", "fpr", "fnr", "precision"]


# ---------------------------------------------------------------- independent reference
def _wilson(k, n, conf):
    if n <= 0:
        return np.nan, np.nan
    z = stats.norm.ppf(0.5 + conf / 2)
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z * math.sqrt(max(p * (1 - p), 0) / n + z * z / (4 * n * n)) / den
    return max(c - h, 0.0), min(c + h, 1.0)


def _exact(k, n, conf):
    if n <= 0:
        return np.nan, np.nan
    a = 1 - conf
    lo = 0.0 if k <= 0 else stats.beta.ppf(a / 2, k, n - k + 1)
    hi = 1.0 if k >= n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
    return lo, hi


def _bernstein(ka, na, kb, nb, n, conf):
    """Per-row amortized disparities z_i = c_i f(x_i) / P[f = f(x_i)], sample variance,
    t = (B + sqrt(B^2 + 8 n sigma2 L)) / (2n), B = 2 C L / (3 gamma), clipped to [-1, 1]."""
    if na == 0 or nb == 0 or n < 2:
        return np.nan, np.nan
    ga, gb = na / n, nb / n
    z = np.zeros(int(n))
    z[:int(ka)] = 1 / ga
    z[int(na):int(na + kb)] = -1 / gb
    est, s2 = z.mean(), z.var(ddof=1)
    L = math.log(2 / (1 - conf))
    B = 2 * L / (3 * min(ga, gb))
    t = (B + math.sqrt(B * B + 8 * n * s2 * L)) / (2 * n)
    return max(est - t, -1), min(est + t, 1)


def reference(y, s, groups, thresholds, w=None, universe=None, conf=0.95, interval="wilson",
              gap=False):
    y = np.asarray(y, bool)
    s = np.asarray(s)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    rows = []
    for t in sorted({float(x) for x in np.atleast_1d(thresholds)}):
        with np.errstate(over="ignore"):
            cut = np.asarray(t).astype(s.dtype) if s.dtype.kind == "f" else t
        pred = s >= cut
        for name, g in groups.items():
            u = np.ones(len(y), bool) if universe is None else universe[name]
            g = np.asarray(g, bool) & u
            b = u & ~g
            r = {"threshold": t, "subgroup": name}
            sets_of = {}
            for side, m in (("subgroup", g), ("background", b)):
                r[f"{side}_negatives"] = w[m & ~y].sum()
                r[f"{side}_positives"] = w[m & y].sum()
                r[f"{side}_tp"] = w[m & y & pred].sum()
                r[f"{side}_fp"] = w[m & ~y & pred].sum()
                sets = {"positive_rate": (m & pred, m), "tpr": (m & y & pred, m & y),
                        "fpr": (m & ~y & pred, m & ~y), "fnr": (m & y & ~pred, m & y),
                        "precision": (m & pred & y, m & pred)}
                sets_of[side] = {}
                for rate, (h, d) in sets.items():
                    k, n = w[h].sum(), w[d].sum()
                    sets_of[side][rate] = (k, n)
                    r[f"{side}_{rate}"] = k / n if n > 0 else np.nan
                    if interval:
                        f = _wilson if interval == "wilson" else _exact
                        r[f"{side}_{rate}_low"], r[f"{side}_{rate}_high"] = f(k, n, conf)
            for rate in RATES:
                r[f"{rate}_gap"] = r[f"subgroup_{rate}"] - r[f"background_{rate}"]
                if gap and rate in ("positive_rate", "tpr"):  # (the paper's 1 - y_hat, mirrored)
                    (ka, na), (kb, nb) = sets_of["subgroup"][rate], sets_of["background"][rate]
                    low, high = _bernstein(na - ka, na, nb - kb, nb, u.sum(), conf)
                    r[f"{rate}_gap_low"], r[f"{rate}_gap_high"] = -high, -low
                elif gap:
                    r[f"{rate}_gap_low"], r[f"{rate}_gap_high"] = _bernstein(
                        *sets_of["subgroup"][rate], *sets_of["background"][rate], u.sum(), conf)
            rows.append(r)
    return pd.DataFrame(rows).set_index(["threshold", "subgroup"])


def assert_matches(got, want, rtol=1e-12, atol=1e-12):
    assert list(got.index) == list(want.index)
    for c in want.columns:
        assert c in got.columns, c
        np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float), rtol=rtol,
                                   atol=atol, equal_nan=True, err_msg=c)


def _data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n), 1)  # ties exactly at the thresholds
    g = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.5, "tiny": np.arange(n) < 3}
    return rng, y, s, g


# ---------------------------------------------------------------- verified behaviour
THS = [0.7, 0.1, 0.5, 0.5, 0.0, 1.0, -1, 2, 0.3]  # unsorted, duplicated, outside [min, max]


@pytest.mark.filterwarnings("ignore::fastbias.UndefinedMetricWarning")
def test_threshold_metrics_match_reference_ties_unsorted_outside_range():
    _, y, s, g = _data()
    got = fastbias.threshold_metrics(y, s, g, thresholds=THS, gap_interval="bernstein")
    assert_matches(got, reference(y, s, g, THS, gap=True))
    got = fastbias.threshold_metrics(y, s, g, thresholds=THS, interval="exact", confidence=0.9)
    assert_matches(got, reference(y, s, g, THS, interval="exact", conf=0.9), rtol=1e-9)


@pytest.mark.filterwarnings("ignore::fastbias.UndefinedMetricWarning")
def test_float32_scores_use_threshold_rounded_to_float32_grid_of_101():
    rng, y, s, g = _data(1, 400)
    s32 = s.astype(np.float32)
    ths = np.linspace(0, 1, 101)
    got = fastbias.threshold_metrics(y, s32, g, thresholds=ths)
    assert_matches(got, reference(y, s32, g, ths))
    # 0.7 rounded to float32 counts float32(0.7) (0.69999999) as predicted positive
    at = got.loc[(ths[70], "a"), "subgroup_tp"]  # (0.7000000000000001)
    assert at == np.sum(g["a"] & y & (s32 >= np.float32(0.7)))
    assert at > np.sum(g["a"] & y & (s32.astype(np.float64) >= ths[70]))


@pytest.mark.filterwarnings("ignore::fastbias.UndefinedMetricWarning")
def test_weights_with_zeros_match_reference_and_expanded_rows():
    rng, y, s, g = _data(2)
    w = rng.integers(0, 4, len(y)).astype(float)
    got = fastbias.threshold_metrics(y, s, g, thresholds=THS, sample_weight=w, interval="exact")
    assert_matches(got, reference(y, s, g, THS, w=w, interval="exact"), rtol=1e-9)
    idx = np.repeat(np.arange(len(y)), w.astype(int))
    rows = fastbias.threshold_metrics(y[idx], s[idx], {k: v[idx] for k, v in g.items()},
                                      thresholds=THS, interval="exact")
    assert_matches(got, rows, rtol=1e-9)


@pytest.mark.filterwarnings("ignore::fastbias.UndefinedMetricWarning")
def test_signed_zero_scores_and_thresholds():
    y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
    s = np.array([-0.0, 0.0, 0.0, -0.0, 0.1, 0.2, -0.1, 0.3])
    g = {"a": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)}
    for ths in ([0.0], [-0.0], [-np.inf, np.inf]):
        got = fastbias.threshold_metrics(y, s, g, thresholds=ths)
        assert_matches(got, reference(y, s, g, ths))


def test_bernstein_gap_equals_bernstein_interval_on_rows():
    _, y, s, g = _data(3, 500)
    a = g["a"]
    got = fastbias.threshold_metrics(y, s, {"a": a}, thresholds=[0.5], gap_interval="bernstein")
    row = got.iloc[0]
    pred = s >= 0.5
    side = np.where(a, 1, -1)
    # (the positive rate's and the TPR's gaps: the paper's cost 1 - y_hat, mirrored)
    for rate, cost, group, sign in (("fpr", pred, np.where(~y, side, 0), 1),
                                    ("positive_rate", ~pred, side, -1),
                                    ("tpr", ~pred, np.where(y, side, 0), -1),
                                    ("precision", y, np.where(pred, side, 0), 1),
                                    ("fnr", ~pred, np.where(y, side, 0), 1)):
        b = fastbias.bernstein_interval(cost.astype(float), group)
        low, high = sorted([sign * b.low, sign * b.high])
        np.testing.assert_allclose(
            [row[f"{rate}_gap"], row[f"{rate}_gap_low"], row[f"{rate}_gap_high"]],
            [sign * b.estimate, max(low, -1), min(high, 1)], rtol=1e-12)


@pytest.mark.filterwarnings("ignore::fastbias.UndefinedMetricWarning")
def test_evaluate_exclude_intersections_sensitive_features_out_of_core(tmp_path):
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import fastbias.dask as fd
    import fastbias.streaming as st
    rng = np.random.default_rng(9)
    n = 400
    df = pd.DataFrame({"y": (rng.random(n) < .4).astype(float),
                       "m1": np.round(rng.random(n), 1),
                       "m2": np.round(rng.random(n), 1).astype(np.float32),
                       "a": (rng.random(n) < .4).astype(float),
                       "b": (rng.random(n) < .5).astype(float),
                       "race": pd.Categorical(rng.choice(["x", "y", None], n)),
                       "w": rng.random(n) * 3})
    df.loc[rng.random(n) < .2, "a"] = np.nan
    df.loc[::9, "w"] = 0
    ths = [0.5, 0.1, 0.7, 0.3]
    kw = dict(label="y", scores=["m1", "m2"], subgroups=["a", "b"], thresholds=ths,
              missing_subgroup="exclude", intersections=2, sensitive_features=["race"],
              sample_weight="w")
    y = df.y.to_numpy() >= .5
    A, B, ua = df.a.to_numpy() >= .5, df.b.to_numpy() >= .5, df.a.notna().to_numpy()
    race = df.race.astype(object).to_numpy()
    ur = ~pd.isna(race)
    g = {"a": A, "b": B, "a & b": A & B, "race=x": race == "x", "race=y": race == "y"}
    u = {"a": ua, "b": np.ones(n, bool), "a & b": ua, "race=x": ur, "race=y": ur}
    path = tmp_path / "d.parquet"
    df.to_parquet(path)
    with dask.config.set(scheduler="synchronous"):
        results = {
            "memory": fastbias.evaluate(df, **kw).thresholds,
            "parquet": st.evaluate_parquet(path, bucket_rows=5, batch_rows=60, **kw).thresholds,
            "dask": fd.evaluate(dd.from_pandas(df, npartitions=17), **kw).thresholds}
    for name, table in results.items():
        for m in ("m1", "m2"):
            part = table[table.model == m].set_index(["threshold", "subgroup"])
            want = reference(y, df[m].to_numpy(), g, ths, w=df.w.to_numpy(), universe=u)
            assert_matches(part, want, rtol=1e-10)


# ---------------------------------------------------------------- defects
def _one_subgroup(weight):
    rng = np.random.default_rng(7)
    n = 200
    y = rng.random(n) < .5
    s = np.round(rng.random(n), 1)
    g = {"a": rng.random(n) < .4}
    return y, s, g, np.full(n, weight)


@pytest.mark.parametrize("weight", [1e15, 1e30])
def test_exact_interval_with_large_weights_is_right(weight):
    """Constant weights are frequency weights: the exact (Clopper-Pearson) interval of
    k*w successes in n*w trials. For n*w >= ~1e16 betaincinv loses it: at w=1e15 the low
    end is off by ~90% of the half-width, at w=1e30 the interval excludes its own
    estimate (high < rate). Wilson's interval is right there (the two agree to O(1/n))."""
    y, s, g, w = _one_subgroup(weight)
    t = fastbias.threshold_metrics(y, s, g, thresholds=[0.5], sample_weight=w, interval="exact")
    r = t.iloc[0]
    k, n = r["subgroup_fp"], r["subgroup_negatives"]
    wl, wh = _wilson(k, n, 0.95)
    half = (wh - wl) / 2
    assert r["subgroup_fpr_low"] <= r["subgroup_fpr"] <= r["subgroup_fpr_high"]
    assert abs(r["subgroup_fpr_low"] - wl) <= 0.01 * half + 1e-15
    assert abs(r["subgroup_fpr_high"] - wh) <= 0.01 * half + 1e-15


def test_wilson_interval_with_tiny_weights_is_not_nan():
    """Weights of 5e-324 are accepted and give the rates; the Wilson interval of a total
    weight below ~2e-308 'rows' is NaN (z*z/n overflows, numpy's 'overflow encountered in
    divide' leaks), where its limit is [0, 1] (the exact interval says [0, 1])."""
    y, s, g, w = _one_subgroup(5e-324)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        t = fastbias.threshold_metrics(y, s, g, thresholds=[0.5], sample_weight=w)
    r = t.iloc[0]
    assert not np.isnan(r["subgroup_fpr"])
    assert r["subgroup_fpr_low"] == pytest.approx(0.0, abs=1e-6)
    assert r["subgroup_fpr_high"] == pytest.approx(1.0, abs=1e-6)


def test_large_weights_raise_no_numpy_overflow_warning():
    """Weights of 1e300 give right rates and intervals, but numpy's 'overflow encountered
    in multiply' RuntimeWarning leaks from the Wilson interval (n * n)."""
    y, s, g, w = _one_subgroup(1e300)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fastbias.threshold_metrics(y, s, g, thresholds=[0.5], sample_weight=w)
