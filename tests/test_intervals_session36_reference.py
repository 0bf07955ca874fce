"""An independent review's tests (2026-11-27) of the confidence intervals (DeLong, paired
DeLong, Poisson bootstrap, Bernstein). Every expected value comes from the brute-force
references below (pair counts, numpy re-implementation of the documented SplitMix64/Poisson
scheme, scipy), never fastbias.

Found by review (each failed before its fix): ``add_intervals`` on a table that had intervals
(duplicate columns, stale standard errors) and on a table of other inputs (intervals far from
its estimates); the others pin properties that held."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import fastbias
from fastbias.intervals import add_intervals

PAIRS = {"subgroup_auc": ("sp", "sn"), "bpsn_auc": ("bp", "sn"), "bnsp_auc": ("sp", "bn"),
         "negative_aeg": ("bn", "sn"), "positive_aeg": ("bp", "sp")}
AUCS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")


# ---------------------------------------------------------------- references
def _kernel(x, y):
    return (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])


def theta_var(x, y, wx, wy):
    """Frequency-weighted DeLong (1988): theta, Var, placements V10 (of x), V01 (of y)."""
    K = _kernel(x, y)
    Wx, Wy = wx.sum(), wy.sum()
    th = (wx[:, None] * wy[None, :] * K).sum() / (Wx * Wy)
    V10 = (K * wy[None, :]).sum(1) / Wy
    V01 = (K * wx[:, None]).sum(0) / Wx
    S10 = (wx * (V10 - th) ** 2).sum() / (Wx - 1)
    S01 = (wy * (V01 - th) ** 2).sum() / (Wy - 1)
    return th, S10 / Wx + S01 / Wy, V10, V01


def wauc(x, y, wx, wy):
    den = wx.sum() * wy.sum()
    return (wx[:, None] * wy[None, :] * _kernel(x, y)).sum() / den if den > 0 else np.nan


def cells(y, g):
    y = np.asarray(y, bool)
    g = np.asarray(g, bool)
    return {"sn": ~y & g, "sp": y & g, "bn": ~y & ~g, "bp": y & ~g}


def my_counts(seed, n):
    """Poisson(1) counts as docs/intervals.md describes them, in plain numpy."""
    th = []
    for k in range(40):
        t = round(sum(math.exp(-1) / math.factorial(j) for j in range(k + 1)) * 2 ** 32)
        if t >= 2 ** 32:
            break
        th.append(t)
    th = np.array(th, dtype=np.uint64)
    key = np.uint64(seed.generate_state(1, dtype=np.uint64)[0])
    with np.errstate(over="ignore"):
        z = key + np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return ((z >> np.uint64(32))[:, None] >= th[None, :]).sum(1).astype(float)


def my_bootstrap(y, s, g, w, seeds, conf):
    reps = {m: [] for m in PAIRS}
    overall, final = [], []
    for seed in seeds:
        k = my_counts(seed, len(s)) * w
        c = cells(y, g)
        for m, (a, b) in PAIRS.items():
            v = wauc(s[c[a]], s[c[b]], k[c[a]], k[c[b]])
            reps[m].append(0.5 - v if m.endswith("aeg") else v)
        ov = wauc(s[y], s[~y], k[y], k[~y])
        overall.append(ov)
        pm = [np.mean(np.array([reps[m][-1]]) ** -5.0) ** (-1 / 5) for m in AUCS]
        final.append(0.25 * ov + 0.75 * np.mean(pm))
    q = [(1 - conf) / 2, 1 - (1 - conf) / 2]

    def interval(r):
        r = np.asarray(r)
        r = r[np.isfinite(r)]
        return (*np.quantile(r, q), np.std(r, ddof=1))
    return {m: interval(r) for m, r in reps.items()}, interval(overall), interval(final)


def data(seed, n=250, weights=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = np.round(rng.normal(y * 1.0, 1), 1)  # many ties
    g = rng.random(n) < 0.25
    w = rng.integers(1, 5, n).astype(float) if weights else None
    return y, s, g, w


# ---------------------------------------------------------------- found by review
def test_add_intervals_on_a_table_with_intervals_is_refused():
    # Found by review: add_intervals(table, ..., method="bernstein") on a table that already
    # carried DeLong intervals concatenated a second set of *_low/*_high columns (duplicate
    # names: t["subgroup_auc_low"] was then a 2-column DataFrame) and kept DeLong's *_se
    # columns and attrs["overall_auc_se"] under ci_method="bernstein" (Bernstein has no se).
    # Now a ValueError saying the table has intervals already.
    y, s, g, _ = data(1)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    with pytest.raises(ValueError, match="already has intervals \\(delong: subgroup_auc_low"):
        add_intervals(t, y, s, {"g": g}, method="bernstein")
    bare = fastbias.bias_metrics(y, s, {"g": g})
    out = add_intervals(bare, y, s, {"g": g}, method="bernstein")
    assert out.columns.is_unique and out.attrs["ci_method"] == "bernstein"
    assert "overall_auc_se" not in out.attrs and "subgroup_auc_se" not in out.columns


def test_add_intervals_refuses_a_table_of_other_inputs():
    # Found by review (contract: "a report never states something the numbers do not
    # support"). The table is of scores s; add_intervals is given -s. Only the names were
    # checked, so the bootstrap interval was of 1 - AUC and excluded the table's own
    # estimate by far, with no error or warning. Now a ValueError naming the metric.
    y, s, g, _ = data(2, n=400)
    y = np.asarray(y)
    s = s + y * 1.5
    t = fastbias.bias_metrics(y, s, {"g": g})
    with pytest.raises(ValueError, match="table is not of these inputs: its subgroup_auc"):
        out = add_intervals(t, y, -s, {"g": g}, method="bootstrap", n_boot=100,
                            random_state=0)
        # what it states instead: an AUC outside its own interval
        sub = out.loc["g"]
        assert not (sub["subgroup_auc_low"] <= sub["subgroup_auc"] <= sub["subgroup_auc_high"])


# ---------------------------------------------------------------- properties that hold
@pytest.mark.parametrize("weighted", [False, True])
def test_delong_se_matches_brute_force_with_ties_and_weights(weighted):
    rng = np.random.default_rng(3)
    for trial in range(8):
        n = int(rng.integers(30, 150))
        y = rng.random(n) < 0.4
        s = rng.integers(0, 6, n) / 5.0
        g = rng.random(n) < 0.3
        w = rng.integers(1, 4, n).astype(float) if weighted else np.ones(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w if weighted else None,
                                      ci="delong", confidence=0.9)
        c = cells(y, g)
        z = norm.ppf(0.95)
        for m, (a, b) in PAIRS.items():
            th, v, _, _ = theta_var(s[c[a]], s[c[b]], w[c[a]], w[c[b]])
            se = math.sqrt(v)
            lo_r, hi_r = (0, 1) if not m.endswith("aeg") else (-0.5, 0.5)
            if m.endswith("aeg"):
                th = 0.5 - th
            row = t.loc["g"]
            assert row[m] == pytest.approx(th, abs=1e-13)
            assert row[m + "_se"] == pytest.approx(se, abs=1e-13)
            assert row[m + "_low"] == pytest.approx(max(lo_r, th - z * se), abs=1e-12)
            assert row[m + "_high"] == pytest.approx(min(hi_r, th + z * se), abs=1e-12)
        th, v, _, _ = theta_var(s[y], s[~y], w[y], w[~y])
        assert t.attrs["overall_auc_se"] == pytest.approx(math.sqrt(v), abs=1e-13)


@pytest.mark.parametrize("weighted", [False, True])
def test_paired_test_matches_own_covariance_and_z(weighted):
    rng = np.random.default_rng(4)
    for trial in range(6):
        n = int(rng.integers(40, 150))
        y = rng.random(n) < 0.4
        sa = rng.integers(0, 6, n) / 5.0 + y * 0.3
        sb = rng.integers(0, 4, n) / 3.0
        g = rng.random(n) < 0.3
        w = rng.integers(1, 4, n).astype(float) if weighted else np.ones(n)
        res = fastbias.delong_paired_test(y, sa, sb, {"g": g},
                                          sample_weight=w if weighted else None,
                                          confidence=0.9)
        c = cells(y, g)
        for m, (a, b) in PAIRS.items():
            ta, _, V10a, V01a = theta_var(sa[c[a]], sa[c[b]], w[c[a]], w[c[b]])
            tb, _, V10b, V01b = theta_var(sb[c[a]], sb[c[b]], w[c[a]], w[c[b]])
            wx, wy = w[c[a]], w[c[b]]
            d = ta - tb
            var = ((wx * (V10a - V10b - d) ** 2).sum() / (wx.sum() - 1) / wx.sum()
                   + (wy * (V01a - V01b - d) ** 2).sum() / (wy.sum() - 1) / wy.sum())
            if m.endswith("aeg"):
                d = -d
            se = math.sqrt(var)
            row = res.loc[("g", m)]
            assert row["difference"] == pytest.approx(d, abs=1e-13)
            assert row["difference_se"] == pytest.approx(se, abs=1e-12)
            assert row["z"] == pytest.approx(d / se, rel=1e-9)
            assert row["p_value"] == pytest.approx(2 * norm.sf(abs(d / se)), rel=1e-8, abs=1e-15)
            assert row["difference_low"] == pytest.approx(d - norm.ppf(0.95) * se, abs=1e-12)


def test_paired_test_identical_models():
    y, s, g, _ = data(5)
    res = fastbias.delong_paired_test(y, s, s.copy(), {"g": g})
    assert (res["difference"] == 0).all() and (res["p_value"] == 1).all()
    assert (res["difference_low"] == 0).all() and (res["difference_high"] == 0).all()


@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_replicates_exactly_the_documented_scheme(weighted):
    y, s, g, w = data(6, weights=weighted)
    B, conf = 120, 0.9
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="bootstrap", n_boot=B,
                              random_state=7, confidence=conf)
    ref, ov, fin = my_bootstrap(y, s, g, np.ones(len(s)) if w is None else w,
                                np.random.SeedSequence(7).spawn(B), conf)
    for m in PAIRS:
        got = t.loc["g", [m + "_low", m + "_high", m + "_se"]].to_numpy(float)
        np.testing.assert_allclose(got, ref[m], atol=1e-14)
    np.testing.assert_allclose([t.attrs["overall_auc_low"], t.attrs["overall_auc_high"],
                                t.attrs["overall_auc_se"]], ov, atol=1e-14)
    np.testing.assert_allclose([t.attrs["final_metric_low"], t.attrs["final_metric_high"],
                                t.attrs["final_metric_se"]], fin, atol=1e-14)


def test_bootstrap_generator_seed_and_exclude_universe():
    y, s, g, _ = data(7)
    gen, gen2 = np.random.default_rng(99), np.random.default_rng(99)
    B = 80
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="bootstrap", n_boot=B, random_state=gen)
    ref, _, _ = my_bootstrap(y, s, g, np.ones(len(s)),
                             np.random.SeedSequence(int(gen2.integers(0, 2 ** 63))).spawn(B), 0.95)
    for m in PAIRS:
        np.testing.assert_allclose(t.loc["g", [m + "_low", m + "_high", m + "_se"]]
                                   .to_numpy(float), ref[m], atol=1e-14)
    # exclude: the annotated rows are resampled on their own, counts by position within them
    rng = np.random.default_rng(8)
    ann = rng.random(len(s)) < 0.7
    df = pd.DataFrame({"y": y.astype(float), "m1": s, "m2": s.copy(),
                       "g": np.where(ann, g.astype(float), np.nan)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=["g"],
                              missing_subgroup="exclude", ci="bootstrap", n_boot=B,
                              random_state=3)
    ref, _, _ = my_bootstrap(y[ann], s[ann], g[ann], np.ones(ann.sum()),
                             np.random.SeedSequence(3).spawn(B), 0.95)
    for model in ("m1", "m2"):
        row = r.table[r.table.model == model].iloc[0]
        for m in PAIRS:
            np.testing.assert_allclose(row[[m + "_low", m + "_high", m + "_se"]].to_numpy(float),
                                       ref[m], atol=1e-14)


def _adaptive_grid(U, k, conf):
    L = math.log(2 / (1 - conf))
    grid = np.linspace(0, 1, 1_000_001)
    d = np.abs(U - grid)
    ok = k * d ** 2 <= L * (2 * grid * (1 - grid) + 2 * d / 3)
    return grid[ok].min(), grid[ok].max()


@pytest.mark.parametrize("conf", [0.95, 0.8])
def test_bernstein_columns_match_own_inversion(conf):
    y, s, g, _ = data(9, n=300)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="bernstein", confidence=conf)
    c = cells(y, g)
    for m, (a, b) in PAIRS.items():
        U = wauc(s[c[a]], s[c[b]], np.ones(c[a].sum()), np.ones(c[b].sum()))
        lo, hi = _adaptive_grid(U, min(c[a].sum(), c[b].sum()), conf)
        if m.endswith("aeg"):
            lo, hi = 0.5 - hi, 0.5 - lo
        assert t.loc["g", m + "_low"] == pytest.approx(lo, abs=2e-6)
        assert t.loc["g", m + "_high"] == pytest.approx(hi, abs=2e-6)


def test_bernstein_interval_hand_computation():
    cost = np.r_[np.ones(30), np.zeros(70), np.ones(20), np.zeros(80), np.ones(5)]
    grp = np.array(["a"] * 100 + ["b"] * 100 + ["c"] * 5, dtype=object)
    r = fastbias.bernstein_interval(cost, grp, group_a="a", group_b="b")
    n, ga = 205, 100 / 205
    z = np.r_[cost[:100] / ga, -cost[100:200] / ga, np.zeros(5)]
    L = math.log(2 / 0.05)
    B = 2 * L / (3 * ga)
    t = (B + math.sqrt(B * B + 8 * n * z.var(ddof=1) * L)) / (2 * n)
    assert r.estimate == pytest.approx(0.1, abs=1e-14)
    assert r.halfwidth == pytest.approx(t, rel=1e-12)


def test_confidence_honoured_and_estimate_inside():
    y, s, g, _ = data(10, n=400)
    for ci, kw in (("delong", {}), ("bootstrap", {"n_boot": 200, "random_state": 1}),
                   ("bernstein", {})):
        t95 = fastbias.bias_metrics(y, s, {"g": g}, ci=ci, confidence=0.95, **kw)
        t80 = fastbias.bias_metrics(y, s, {"g": g}, ci=ci, confidence=0.8, **kw)
        for m in PAIRS:
            w95 = t95.loc["g", m + "_high"] - t95.loc["g", m + "_low"]
            w80 = t80.loc["g", m + "_high"] - t80.loc["g", m + "_low"]
            assert w80 < w95, (ci, m)
            if ci != "bootstrap":  # percentile intervals need not contain it
                assert t95.loc["g", m + "_low"] <= t95.loc["g", m] <= t95.loc["g", m + "_high"]


def test_undefined_intervals_nan_with_warning():
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .7, .8, .9, .4, .6, .5, .95])
    G = {"oneclass": np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], bool),
         "single_neg": np.array([1, 0, 0, 1, 1, 0, 0, 0, 0, 0], bool)}
    with pytest.warns(fastbias.UndefinedMetricWarning, match="single_neg: subgroup_auc"):
        t = fastbias.bias_metrics(y, s, G, ci="delong")
    assert np.isnan(t.loc["oneclass", ["subgroup_auc_low", "subgroup_auc_high"]].astype(float)).all()
    assert np.isnan(t.loc["single_neg", ["subgroup_auc_se", "bpsn_auc_se"]].astype(float)).all()


def test_coverage_under_known_truth():
    # subgroup negatives N(0.5,1), positives N(1.2,1); background N(0,1) / N(1.5,1)
    truth = {"subgroup_auc": norm.cdf(0.7 / math.sqrt(2)), "bpsn_auc": norm.cdf(1 / math.sqrt(2)),
             "bnsp_auc": norm.cdf(1.2 / math.sqrt(2)),
             "negative_aeg": 0.5 - norm.cdf(-0.5 / math.sqrt(2)),
             "positive_aeg": 0.5 - norm.cdf(0.3 / math.sqrt(2))}
    rng = np.random.default_rng(8)
    R = 300
    hits = {ci: {m: 0 for m in truth} for ci in ("delong", "bootstrap", "bernstein")}
    for r in range(R):
        yb, yg = rng.random(1000) < 0.5, rng.random(150) < 0.5
        s = np.r_[rng.normal(yb * 1.5, 1), rng.normal(0.5 + yg * 0.7, 1)]
        y, g = np.r_[yb, yg], np.r_[np.zeros(1000, bool), np.ones(150, bool)]
        for ci in hits:
            kw = {"n_boot": 200, "random_state": r} if ci == "bootstrap" else {}
            t = fastbias.bias_metrics(y, s, {"g": g}, ci=ci, **kw)
            for m, tr in truth.items():
                hits[ci][m] += bool(t.loc["g", m + "_low"] <= tr <= t.loc["g", m + "_high"])
    for ci in ("delong", "bootstrap"):
        for m in truth:  # 95% nominal; 300 reps: binomial sd 0.0126
            assert hits[ci][m] / R >= 0.90, (ci, m, hits[ci][m] / R)
    for m in truth:
        assert hits["bernstein"][m] / R >= 0.95
