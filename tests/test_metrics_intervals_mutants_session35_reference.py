"""An independent review's tests (2026-11-27): a mutation audit of the metrics and interval
layer (metrics/definitions.py, table.py, aggregates.py; intervals/delong.py, bernstein.py,
bootstrap.py, thresholds.py). Of 64 hand-made mutants the suite killed 50; these tests kill 7
more (the cells an undefined metric's warning names and their order, "(weight 0)" only for
weightless cells, an overall AUC of exactly 0 in the final metric, a DeLong cell of total
weight 1 NaN not inf, the normal interval clipped at the metric's range, the least n whose
Bernstein half-width is exactly the gap); the other 7 were equivalent or unreachable.

Every expected value is computed here, independently of fastbias: brute-force pair counts
in fractions.Fraction (ties 1/2), DeLong's placement values (DeLong et al. 1988) with
ddof=1 sample variances, exhaustive enumeration of pinned samples, Decimal power means,
scipy's beta / normal quantiles and brentq for the Bernstein bound (Ethayarajh 2020), and
the Jigsaw final metric 0.25 overall + 0.75 mean of the three power means (p = -5).
"""
from __future__ import annotations

import itertools
import math
import warnings
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import optimize, stats

import fastbias
from fastbias.intervals.thresholds import exact_interval, wilson_interval

# ---------------------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------------------


def _above(x, y, wx=None, wy=None) -> Fraction:
    """P(X > Y) + 1/2 P(X = Y), weighted, as a Fraction (brute force over all pairs)."""
    wx = [1] * len(x) if wx is None else wx
    wy = [1] * len(y) if wy is None else wy
    num, den = Fraction(0), Fraction(0)
    for a, wa in zip(x, wx):
        for b, wb in zip(y, wy):
            w = Fraction(wa) * Fraction(wb)
            den += w
            if a > b:
                num += w
            elif a == b:
                num += w / 2
    return num / den


def _cells(y, s, g, w=None):
    w = np.ones(len(y), dtype=np.int64) if w is None else w
    out = {}
    for part, mask in (("subgroup", g), ("background", ~g)):
        for label in (0, 1):
            sel = mask & (y == label)
            out[(part, label)] = (list(s[sel]), [int(v) for v in w[sel]])
    return out


def _reference_row(y, s, g, w=None) -> dict:
    c = _cells(y, s, g, w)
    sub_neg, sub_pos, bg_neg, bg_pos = (c[("subgroup", 0)], c[("subgroup", 1)],
                                        c[("background", 0)], c[("background", 1)])
    return {
        "subgroup_auc": _above(sub_pos[0], sub_neg[0], sub_pos[1], sub_neg[1]),
        "bpsn_auc": _above(bg_pos[0], sub_neg[0], bg_pos[1], sub_neg[1]),
        "bnsp_auc": _above(sub_pos[0], bg_neg[0], sub_pos[1], bg_neg[1]),
        "negative_aeg": Fraction(1, 2) - _above(bg_neg[0], sub_neg[0], bg_neg[1], sub_neg[1]),
        "positive_aeg": Fraction(1, 2) - _above(bg_pos[0], sub_pos[0], bg_pos[1], sub_pos[1]),
    }


def _placements(x, y):
    """DeLong placement values: V10 of each x (share of Y below it, ties 1/2) and V01 of each
    y (share of X above it, ties 1/2)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    v10 = np.array([((xi > y).sum() + 0.5 * (xi == y).sum()) / len(y) for xi in x])
    v01 = np.array([((x > yj).sum() + 0.5 * (x == yj).sum()) / len(x) for yj in y])
    return v10, v01


def _delong_se(x, y) -> float:
    v10, v01 = _placements(x, y)
    var = np.var(v10, ddof=1) / len(x) + np.var(v01, ddof=1) / len(y)
    return math.sqrt(var)


def _data(n=60, seed=0, levels=7):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) * levels) / levels  # heavy ties
    s = np.clip(s + 0.15 * y, 0, 1.2)
    g = rng.random(n) < 0.4
    return y, s, g


# ---------------------------------------------------------------------------------------
# metrics table: counts -> five metrics, exact
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_table_matches_brute_force_fractions(seed):
    y, s, g = _data(seed=seed)
    t = fastbias.bias_metrics(y, s, {"g": g})
    ref = _reference_row(y, s, g)
    for metric, value in ref.items():
        assert t.loc["g", metric] == float(value), metric  # correctly rounded ratio
    assert t.loc["g", "background_negatives"] == int(((~g) & (y == 0)).sum())
    assert t.loc["g", "background_positives"] == int(((~g) & (y == 1)).sum())
    assert t.attrs["overall_auc"] == float(_above(s[y == 1], s[y == 0]))


def test_integer_weights_equal_repeated_rows_brute_force():
    y, s, g = _data(n=40, seed=3)
    w = np.random.default_rng(4).integers(1, 5, len(y))
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w.astype(float))
    ref = _reference_row(y, s, g, w)
    for metric, value in ref.items():
        assert t.loc["g", metric] == pytest.approx(float(value), rel=0, abs=1e-15), metric


def test_aeg_sign_subgroup_scored_higher_is_positive():
    # subgroup negatives all scored above background negatives: P(s(D-) > s(Dg-)) = 0,
    # so negative AEG = 1/2 - 0 = +1/2 (Borkan et al. 2019, Definition 3.3)
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = np.array([0.1, 0.2, 0.8, 0.9, 0.5, 0.5, 0.5, 0.5])
    g = np.array([0, 0, 1, 1, 0, 0, 1, 1], bool)
    t = fastbias.bias_metrics(y, s, {"g": g})
    assert t.loc["g", "negative_aeg"] == 0.5
    assert t.loc["g", "positive_aeg"] == 0.0  # all tied: 1/2 - 1/2


# ---------------------------------------------------------------------------------------
# final metric and power means
# ---------------------------------------------------------------------------------------


def _power_mean_decimal(values, p) -> float:
    getcontext().prec = 50
    if p == 0:
        return float((sum(Decimal(v).ln() for v in values) / len(values)).exp())
    mean = sum(Decimal(v) ** Decimal(p) for v in values) / len(values)
    return float((mean.ln() / Decimal(p)).exp())


@pytest.mark.parametrize("p", [-5, -2.5, -1e-3, 1e-9, 0, 1, 3])
def test_power_mean_matches_decimal(p):
    values = [0.55, 0.9, 0.71, 0.999]
    assert fastbias.power_mean(values, p) == pytest.approx(_power_mean_decimal(values, p),
                                                           rel=1e-13)


def test_power_mean_zero_with_negative_and_positive_power():
    # p < 0 with a zero value: the mean is 0 (the limit); p > 0: the plain formula
    assert fastbias.power_mean([0.0, 0.5], -5) == 0.0
    assert fastbias.power_mean([0.0, 0.5], 2) == pytest.approx(math.sqrt(0.125), rel=1e-15)


@pytest.mark.parametrize("power,weight", [(-5, 0.25), (1, 0.5), (2, 0.0), (-5, 1.0)])
def test_final_metric_matches_hand_formula(power, weight):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 2, 300)
    s = rng.random(300) + 0.3 * y
    groups = {f"g{i}": rng.random(300) < 0.3 for i in range(4)}
    t = fastbias.bias_metrics(y, s, groups)
    overall = float(_above(s[y == 1], s[y == 0]))
    means = []
    for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        vals = [float(_reference_row(y, s, g)[metric]) for g in groups.values()]
        means.append(_power_mean_decimal(vals, power))
    expected = weight * overall + (1 - weight) * sum(means) / 3
    got = fastbias.final_metric(t, power=power, overall_weight=weight)
    assert got == pytest.approx(expected, rel=1e-13)


def test_final_metric_omit_leaves_out_only_undefined_values():
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1, 0, 1])
    s = np.array([.1, .4, .35, .8, .7, .9, .2, .6, .3, .65])
    a = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    b = np.array([0, 0, 0, 0, 0, 1, 0, 1, 0, 0], bool)  # positives only: subgroup AUC NaN
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"a": a, "b": b})
    ra = _reference_row(y, s, a)
    bpsn_b = _above(s[~b & (y == 1)], s[b & (y == 0)]) if (b & (y == 0)).any() else None
    rb = {"bpsn_auc": bpsn_b, "bnsp_auc": _above(s[b & (y == 1)], s[~b & (y == 0)])}
    assert rb["bpsn_auc"] is None  # (b has no negatives: its subgroup and BPSN AUC undefined)
    pm = _power_mean_decimal
    expected = 0.25 * float(_above(s[y == 1], s[y == 0])) + 0.75 * (
        pm([float(ra["subgroup_auc"])], -5) + pm([float(ra["bpsn_auc"])], -5)
        + pm([float(ra["bnsp_auc"]), float(rb["bnsp_auc"])], -5)) / 3
    assert fastbias.final_metric(t, undefined="omit") == pytest.approx(expected, rel=1e-13)


def test_final_metric_accepts_boundary_overall_auc_and_weight():
    y, s, g = _data(seed=5)
    t = fastbias.bias_metrics(y, s, {"g": g})
    r = {k: float(v) for k, v in _reference_row(y, s, g).items()}
    bias = (r["subgroup_auc"] + r["bpsn_auc"] + r["bnsp_auc"]) / 3
    # overall_auc = 0 and overall_weight = 1 are in range ([0, 1] both)
    assert fastbias.final_metric(t, 0.0) == pytest.approx(0.75 * bias, rel=1e-14)
    assert fastbias.final_metric(t, 0.3, overall_weight=1.0) == pytest.approx(0.3, rel=1e-15)


# ---------------------------------------------------------------------------------------
# pinned AUC in expectation: exhaustive enumeration of every sample
# ---------------------------------------------------------------------------------------


def _expected_pinned(y, s, g, population_all: bool, replace: bool) -> float:
    idx_g = np.flatnonzero(g)
    pop = np.arange(len(y)) if population_all else np.flatnonzero(~g)
    m = len(idx_g)
    draws = (itertools.product(pop, repeat=m) if replace
             else itertools.combinations(pop, m))
    num = den = Fraction(0)
    for sample in draws:
        rows = list(idx_g) + list(sample)
        pos = [s[i] for i in rows if y[i] == 1]
        neg = [s[i] for i in rows if y[i] == 0]
        for a in pos:
            for b in neg:
                den += 1
                num += 1 if a > b else (Fraction(1, 2) if a == b else 0)
    return float(num / den)


@pytest.mark.parametrize("method", ["expected", "expected_dixon"])
@pytest.mark.parametrize("replace", [False, True])
def test_expected_pinned_auc_matches_enumeration(method, replace):
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0])
    s = np.array([.2, .6, .6, .3, .9, .1, .5, .5, .8])
    g = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    got = fastbias.pinned_auc(y, s, {"g": g}, method=method, replace=replace)["g"]
    ref = _expected_pinned(y, s, g, method == "expected_dixon", replace)
    assert got == pytest.approx(ref, rel=1e-12)


def test_sample_pinned_allows_subgroup_as_large_as_background():
    # m = |Dg| = |background|: the pinned sample is the whole background (no replacement
    # needed); the pinned set is then every row, its AUC the overall AUC
    y = np.array([0, 1, 0, 1, 1, 0, 1, 0])
    s = np.array([.1, .7, .4, .3, .9, .2, .6, .5])
    g = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    got = fastbias.pinned_auc(y, s, {"g": g}, method="sample")["g"]
    assert got == float(_above(s[y == 1], s[y == 0]))


# ---------------------------------------------------------------------------------------
# DeLong standard errors and intervals
# ---------------------------------------------------------------------------------------

_PAIRS = {"subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
          "bpsn_auc": (("background", 1), ("subgroup", 0)),
          "bnsp_auc": (("subgroup", 1), ("background", 0)),
          "negative_aeg": (("background", 0), ("subgroup", 0)),
          "positive_aeg": (("background", 1), ("subgroup", 1))}


@pytest.mark.parametrize("seed", [0, 11])
@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_delong_se_and_interval_match_placement_values(seed, confidence):
    y, s, g = _data(n=80, seed=seed)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong", confidence=confidence)
    c = _cells(y, s, g)
    z = stats.norm.ppf(0.5 + confidence / 2)
    for metric, (xc, yc) in _PAIRS.items():
        se = _delong_se(c[xc][0], c[yc][0])
        assert t.loc["g", f"{metric}_se"] == pytest.approx(se, rel=1e-9), metric
        est = t.loc["g", metric]
        lo, hi = (-0.5, 0.5) if "aeg" in metric else (0.0, 1.0)
        assert t.loc["g", f"{metric}_low"] == pytest.approx(max(lo, est - z * se), rel=1e-9)
        assert t.loc["g", f"{metric}_high"] == pytest.approx(min(hi, est + z * se), rel=1e-9)
    v10, v01 = _placements(s[y == 1], s[y == 0])
    se_all = math.sqrt(np.var(v10, ddof=1) / len(v10) + np.var(v01, ddof=1) / len(v01))
    assert t.attrs["overall_auc_se"] == pytest.approx(se_all, rel=1e-9)


def test_delong_cell_of_two_rows_has_its_own_variance():
    # two subgroup negatives with different placements: their part of the variance is
    # not 0 (only a one-row sample's part is)
    y = np.array([0, 0, 1, 1, 1, 0, 0, 1, 1, 0])
    s = np.array([.1, .6, .5, .7, .2, .3, .4, .8, .9, .05])
    g = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    c = _cells(y, s, g)
    se = _delong_se(c[("subgroup", 1)][0], c[("subgroup", 0)][0])
    assert t.loc["g", "subgroup_auc_se"] == pytest.approx(se, rel=1e-9)


def test_delong_interval_clipped_to_range():
    # a perfectly separated subgroup with noisy background: the BPSN interval may not
    # reach above 1
    y = np.array([0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1])
    s = np.array([.1, .2, .3, .7, .8, .9, .6, .75, .5, .65, .15, .95])
    g = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        assert 0.0 <= t.loc["g", f"{metric}_low"] <= t.loc["g", f"{metric}_high"] <= 1.0


# ---------------------------------------------------------------------------------------
# Bernstein (Ethayarajh 2020)
# ---------------------------------------------------------------------------------------


def _bernstein_t(n, sigma2, c, gamma, confidence):
    """t solving 2 exp(-n t^2 / (2 sigma2 + 2 c t / (3 gamma))) = 1 - confidence."""
    f = lambda t: 2 * math.exp(-n * t * t / (2 * sigma2 + 2 * c * t / (3 * gamma))) - (1 - confidence)
    return optimize.brentq(f, 1e-12, 1e6, xtol=1e-15, rtol=1e-15)


@pytest.mark.parametrize("n,sigma2,c,gamma,conf", [(3160, 4, 1, 0.5, 0.95), (50, 0.3, 2, 0.1, 0.9),
                                                   (1000, 0.0001, 1, 0.01, 0.99)])
def test_bernstein_halfwidth_solves_the_bound(n, sigma2, c, gamma, conf):
    got = fastbias.bernstein_halfwidth(n, sigma2=sigma2, max_cost=c, gamma=gamma, confidence=conf)
    assert got == pytest.approx(_bernstein_t(n, sigma2, c, gamma, conf), rel=1e-10)


@pytest.mark.parametrize("delta,sigma2,gamma", [(0.1, 2.0, 0.3), (0.05, 0.5, 0.5)])
def test_bernstein_min_samples_is_smallest_n(delta, sigma2, gamma):
    n = fastbias.bernstein_min_samples(delta, sigma2=sigma2, gamma=gamma)
    assert _bernstein_t(n, sigma2, 1.0, gamma, 0.95) < delta
    assert _bernstein_t(n - 1, sigma2, 1.0, gamma, 0.95) >= delta


def test_bernstein_interval_matches_amortized_reference():
    rng = np.random.default_rng(9)
    group = rng.choice([1, -1, 0], size=400, p=[0.2, 0.5, 0.3])
    cost = rng.random(400)
    res = fastbias.bernstein_interval(cost, group)
    n = 400
    ga, gb = (group == 1).mean(), (group == -1).mean()
    amort = np.where(group == 1, cost / ga, np.where(group == -1, -cost / gb, 0.0))
    sigma2 = np.var(amort, ddof=1)
    t = _bernstein_t(n, sigma2, 1.0, min(ga, gb), 0.95)
    assert res.estimate == pytest.approx(cost[group == 1].mean() - cost[group == -1].mean(), rel=1e-12)
    assert res.sigma2 == pytest.approx(sigma2, rel=1e-12)
    assert res.gamma == pytest.approx(min(ga, gb), rel=1e-15)
    assert res.halfwidth == pytest.approx(t, rel=1e-10)


# ---------------------------------------------------------------------------------------
# threshold rate and gap intervals
# ---------------------------------------------------------------------------------------


def _wilson(k, n, conf):
    z = stats.norm.ppf(0.5 + conf / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


@pytest.mark.parametrize("k,n,conf", [(3, 10, 0.95), (1, 7, 0.8), (40, 50, 0.99), (12, 1000, 0.9)])
def test_wilson_interval_matches_formula(k, n, conf):
    lo, hi = wilson_interval(k, n, conf)
    rlo, rhi = _wilson(k, n, conf)
    assert float(lo) == pytest.approx(rlo, rel=1e-12)
    assert float(hi) == pytest.approx(rhi, rel=1e-12)


@pytest.mark.parametrize("k,n,conf", [(0, 10, 0.95), (3, 10, 0.95), (10, 10, 0.9), (7, 200, 0.99)])
def test_exact_interval_matches_scipy_beta(k, n, conf):
    a = 1 - conf
    lo, hi = exact_interval(k, n, conf)
    rlo = 0.0 if k == 0 else stats.beta.ppf(a / 2, k, n - k + 1)
    rhi = 1.0 if k == n else stats.beta.ppf(1 - a / 2, k + 1, n - k)
    assert float(lo) == pytest.approx(rlo, rel=1e-10, abs=1e-300)
    assert float(hi) == pytest.approx(rhi, rel=1e-10)


def _bernstein_gap_ref(cost_sub, cost_bg, n_other, conf):
    """Ethayarajh's interval of mean(cost | subgroup) - mean(cost | background) from the
    per-example costs (neither-group rows cost nothing)."""
    n = len(cost_sub) + len(cost_bg) + n_other
    ga, gb = len(cost_sub) / n, len(cost_bg) / n
    amort = np.r_[np.asarray(cost_sub, float) / ga, -np.asarray(cost_bg, float) / gb, np.zeros(n_other)]
    t = _bernstein_t(n, np.var(amort, ddof=1), 1.0, min(ga, gb), conf)
    return amort.mean() - t, amort.mean() + t


def test_threshold_gap_bernstein_matches_amortized_reference():
    rng = np.random.default_rng(21)
    n = 400
    y = rng.integers(0, 2, n)
    s = rng.random(n) * 0.7 + 0.3 * y
    g = rng.random(n) < 0.25
    got = fastbias.threshold_metrics(y, s, {"g": g}, thresholds=[0.5], gap_interval="bernstein")
    row = got.iloc[0]
    pred = (s >= 0.5).astype(float)
    # rates with the paper's cost: FPR/FNR cost = error indicator over that class's rows;
    # positive rate and TPR use cost 1 - y_hat (mirrored); all rows of the class are examples
    for rate, mask_fn, cost_fn, mirror in [
            ("fpr", lambda m: m & (y == 0), lambda: pred, False),
            ("fnr", lambda m: m & (y == 1), lambda: 1 - pred, False),
            ("tpr", lambda m: m & (y == 1), lambda: 1 - pred, True),
            ("positive_rate", lambda m: m, lambda: 1 - pred, True)]:
        sub, bg = mask_fn(g), mask_fn(~g)
        c = cost_fn()
        total = int(sub.sum() + bg.sum())
        # the library counts n as every row of the four cells: those outside this rate's
        # sets are "in neither group"
        lo, hi = _bernstein_gap_ref(c[sub], c[bg], n - total, 0.95)
        if mirror:
            lo, hi = -hi, -lo
        lo, hi = max(lo, -1.0), min(hi, 1.0)
        assert row[f"{rate}_gap_low"] == pytest.approx(lo, rel=1e-9, abs=1e-12), rate
        assert row[f"{rate}_gap_high"] == pytest.approx(hi, rel=1e-9, abs=1e-12), rate


def test_undefined_warning_names_cells_negatives_first_background_first():
    # definitions.METRIC_CELLS: negatives first, the background first within a class.
    # A subgroup without negatives: negative_aeg compares background_negatives with
    # subgroup_negatives (=0), shown in that order
    y = np.array([0, 0, 1, 1, 1, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    g = np.array([0, 0, 0, 1, 1, 0], bool)
    with pytest.warns(fastbias.UndefinedMetricWarning) as rec:
        fastbias.bias_metrics(y, s, {"g": g})
    text = " ".join(str(r.message) for r in rec)
    assert "negative_aeg (background_negatives=2, subgroup_negatives=0)" in text
    assert "bpsn_auc (subgroup_negatives=0, background_positives=2)" in text


def test_undefined_warning_says_weight_zero_only_for_weightless_cells():
    # the subgroup's two negatives weigh 0: subgroup AUC is undefined, and the warning says
    # why ("subgroup_negatives=2 (weight 0)"); its positives weigh 1 and are shown plainly
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    s = np.array([.1, .6, .5, .7, .2, .3, .4, .8])
    g = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    w = np.array([0, 0, 1, 1, 1, 1, 1, 1], float)
    with pytest.warns(fastbias.UndefinedMetricWarning) as rec:
        t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w)
    text = " ".join(str(r.message) for r in rec)
    assert np.isnan(t.loc["g", "subgroup_auc"])
    assert "subgroup_auc (subgroup_negatives=2 (weight 0), subgroup_positives=2)" in text


def test_exact_ratio_of_counts_past_2_53_is_correctly_rounded():
    # counts past 2**53 (cells of ~1e8 rows) are not exact in float64: the ratio must be
    # the correctly rounded quotient of the integers, not of their float64 roundings
    from fastbias.metrics.table import exact_ratio
    num, den = 2381154403668518189, 7758271007119386929
    assert float(num) / float(den) != float(Fraction(num, den))  # (the case is a real one)
    got = exact_ratio(np.array([num, 3]), np.array([den, 0]))
    assert got[0] == float(Fraction(num, den))
    assert np.isnan(got[1])


def test_bootstrap_replicate_with_empty_cell_is_nan_without_numpy_warning():
    # a one-row subgroup negative is drawn 0 times in about 37% of replicates: those
    # replicates' subgroup AUC is NaN (0 pairs), said by fastbias's own warning, never by a
    # numpy "invalid value encountered in divide" RuntimeWarning
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 60)
    s = rng.random(60)
    g = np.zeros(60, bool)
    g[np.flatnonzero(y == 0)[:1]] = True
    g[np.flatnonzero(y == 1)[:5]] = True
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, {"g": g}, ci="bootstrap", n_boot=60, random_state=0)
    numpy_words = [str(r.message) for r in rec if "encountered in" in str(r.message)]
    assert not numpy_words, numpy_words
    assert np.isfinite(t.loc["g", "subgroup_auc_low"])


def test_delong_interval_clipped_below_at_range_end():
    # the subgroup ranks its positives mostly below its negatives (AUC 1/9) on 3 + 3 rows:
    # est - z se < 0, so the low end is the range's end, 0 (and -1/2 for an AEG)
    y = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1])
    s = np.array([.7, .8, .9, .1, .2, .75, .3, .4, .5, .6, .65, .95])
    g = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    c = _cells(y, s, g)
    assert t.loc["g", "subgroup_auc"] == float(_above(c[("subgroup", 1)][0], c[("subgroup", 0)][0]))
    se = _delong_se(c[("subgroup", 1)][0], c[("subgroup", 0)][0])
    assert t.loc["g", "subgroup_auc"] - 1.96 * se < 0  # (the case is a real one)
    assert t.loc["g", "subgroup_auc_low"] == 0.0
    assert t.loc["g", "subgroup_auc_se"] == pytest.approx(se, rel=1e-9)


def test_delong_cell_of_total_weight_one_is_nan_not_inf():
    # DeLong needs each compared cell to weigh more than 1 (frequency weights): a subgroup
    # whose negatives are two rows of weight 1/2 has no variance estimate: its subgroup
    # AUC's standard error is NaN (and said), never inf or a number
    y = np.array([0, 0, 1, 1, 1, 0, 0, 0, 1, 1])
    s = np.array([.1, .6, .5, .7, .2, .3, .4, .45, .8, .9])
    g = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], bool)
    w = np.array([.5, .5, 1, 1, 1, 1, 1, 1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
        except ValueError as error:  # (integer weights only: a clear refusal is fine too)
            assert "weight" in str(error)
            return
    assert np.isnan(t.loc["g", "subgroup_auc_se"])
    assert np.isnan(t.loc["g", "subgroup_auc_low"])


def test_bernstein_min_samples_when_halfwidth_equals_delta_exactly():
    # "smallest n whose half-width is below |delta|" (strictly): with |delta| equal to the
    # half-width at n = 100 (the documented formula, evaluated here in the same float
    # operations), n = 100 is not enough and the answer is 101
    L = math.log(2.0 / (1.0 - 0.95))
    b = 2.0 * 1.0 * L / (3.0 * 0.5)
    delta = (b + math.sqrt(b * b + 8.0 * 100 * 1.0 * L)) / (2.0 * 100)
    assert delta == pytest.approx(_bernstein_t(100, 1.0, 1.0, 0.5, 0.95), rel=1e-12)
    if fastbias.bernstein_halfwidth(100, sigma2=1.0, gamma=0.5) != delta:
        pytest.skip("the library's float operations differ from the documented order")
    assert fastbias.bernstein_min_samples(delta, sigma2=1.0, gamma=0.5) == 101
