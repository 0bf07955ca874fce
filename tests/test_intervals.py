"""Tests of fastbias.intervals: Bernstein bounds, DeLong variances, paired test, Poisson bootstrap.

References are independent of the code under test: the Bernstein tail formula
written out directly, DeLong structural components by O(n^2) pair matrices (with
integer weights handled by replicating rows), brute-force weighted metrics for
bootstrap replicates, scipy/NumPy for quantiles and normal tails.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import fastbias
from fastbias.intervals import (
    add_intervals,
    bernstein_halfwidth,
    bernstein_interval,
    bernstein_min_samples,
    bootstrap_replicates,
    delong_paired_test,
    delong_standard_errors,
    demographic_parity_cost,
    equal_opportunity_cost,
    replicate_counts,
    replicate_weights,
    ustatistic_bernstein_interval,
    ustatistic_min_samples,
)
from fastbias.metrics import METRIC_COLUMNS
from fastbias.metrics.definitions import METRIC_SAMPLES as _METRIC_SAMPLES
from fastbias.prepare.memberships import prepare_memberships
from fastbias.validate.errors import UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

# ----------------------------------------------------------------------------- helpers


def kernel_matrix(above, below):
    """k(x, y) = 1 if x > y, 1/2 if tied, 0 otherwise (rows: above, columns: below)."""
    a = np.asarray(above, dtype=np.float64)[:, None]
    b = np.asarray(below, dtype=np.float64)[None, :]
    return (a > b) + 0.5 * (a == b)


def structural_components(above, below):
    """DeLong V10 (per above row) and V01 (per below row), straight from the pair matrix."""
    k = kernel_matrix(above, below)
    return k.mean(axis=1), k.mean(axis=0), k.mean()


def delong_variance_reference(above, below):
    """DeLong (1988): S10/m + S01/n with sample variances of the components; NaN if m or n < 2."""
    if len(above) < 2 or len(below) < 2:
        return np.nan
    v10, v01, _ = structural_components(above, below)
    return v10.var(ddof=1) / len(above) + v01.var(ddof=1) / len(below)


def delong_covariance_reference(above_a, below_a, above_b, below_b):
    """Covariance of two models' AUCs on the same two samples (DeLong 1988, S10_ab/m + S01_ab/n)."""
    v10a, v01a, _ = structural_components(above_a, below_a)
    v10b, v01b, _ = structural_components(above_b, below_b)
    m, n = len(v10a), len(v01a)
    s10 = np.cov(v10a, v10b, ddof=1)[0, 1]
    s01 = np.cov(v01a, v01b, ddof=1)[0, 1]
    return s10 / m + s01 / n


def cells(y, member):
    y = np.asarray(y, bool)
    g = np.asarray(member, bool)
    return {("subgroup", 0): g & ~y, ("subgroup", 1): g & y,
            ("background", 0): ~g & ~y, ("background", 1): ~g & y}


def make_memberships(y, groups):
    names = list(groups)
    rows = [np.flatnonzero(np.asarray(groups[k], bool)) for k in names]
    return prepare_memberships(np.asarray(y, bool), rows, names)


def normal_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def tail_bound(n, t, sigma2, max_cost, gamma):
    """Ethayarajh's two-sided Bernstein tail, written out."""
    return 2.0 * math.exp(-n * t * t / (2.0 * sigma2 + 2.0 * max_cost * t / (3.0 * gamma)))


# ----------------------------------------------------------------------------- Bernstein


def test_seed_worked_example_min_samples():
    # Ethayarajh (2020): C = 1, gamma = 0.5, sigma^2 = 4, rho = 0.95 -> n > 11903
    assert bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5, confidence=0.95) == 11903
    assert fastbias.bernstein_min_samples(-0.05, sigma2=4, gamma=0.5) == 11903


def test_seed_worked_example_winobias_halfwidth():
    t = bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5, confidence=0.95)
    assert round(t, 4) == 0.0974


@pytest.mark.parametrize("sigma2,max_cost,gamma,confidence",
                         [(4, 1, 0.5, 0.95), (0.25, 1, 1, 0.9), (1.3, 2.5, 0.1, 0.99),
                          (0.0, 1, 0.3, 0.95)])
def test_halfwidth_is_where_the_tail_bound_equals_alpha(sigma2, max_cost, gamma, confidence):
    for n in (1, 7, 100, 3160, 10 ** 6):
        t = bernstein_halfwidth(n, sigma2=sigma2, max_cost=max_cost, gamma=gamma,
                                confidence=confidence)
        assert tail_bound(n, t, sigma2, max_cost, gamma) == pytest.approx(1 - confidence,
                                                                          rel=1e-9)


def test_halfwidth_vectorised_and_decreasing():
    n = np.array([10, 100, 1000, 10000])
    t = bernstein_halfwidth(n, sigma2=4, gamma=0.5)
    assert t.shape == (4,)
    assert np.all(np.diff(t) < 0)
    for ni, ti in zip(n, t):
        assert ti == bernstein_halfwidth(int(ni), sigma2=4, gamma=0.5)


@pytest.mark.parametrize("delta", [0.05, 0.0975, 0.2, 0.01, 0.5])
@pytest.mark.parametrize("sigma2,gamma,confidence", [(4, 0.5, 0.95), (0.25, 1, 0.95),
                                                     (1.0, 0.2, 0.99)])
def test_min_samples_matches_direct_search_of_the_tail_bound(delta, sigma2, gamma, confidence):
    got = bernstein_min_samples(delta, sigma2=sigma2, gamma=gamma, confidence=confidence)
    # independent: the smallest n whose tail bound at t = delta is below alpha
    # (t(n) < delta  <=>  tail(n, delta) < alpha, as the tail decreases in t)
    alpha = 1 - confidence
    lo, hi = 1, 1
    while tail_bound(hi, delta, sigma2, 1.0, gamma) >= alpha:
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if tail_bound(mid, delta, sigma2, 1.0, gamma) < alpha:
            hi = mid
        else:
            lo = mid + 1
    assert got == lo
    assert bernstein_halfwidth(got, sigma2=sigma2, gamma=gamma, confidence=confidence) < delta
    if got > 1:
        assert bernstein_halfwidth(got - 1, sigma2=sigma2, gamma=gamma,
                                   confidence=confidence) >= delta


def test_min_samples_array():
    out = bernstein_min_samples(np.array([0.05, 0.1]), sigma2=4, gamma=0.5)
    assert out.dtype == np.int64
    assert out[0] == 11903
    assert out[1] == bernstein_min_samples(0.1, sigma2=4, gamma=0.5)


@pytest.mark.parametrize("kwargs,match", [
    (dict(n=0, sigma2=1, gamma=0.5), "n must be"),
    (dict(n=10, sigma2=-1, gamma=0.5), "sigma2"),
    (dict(n=10, sigma2=1, gamma=1.5), "gamma"),
    (dict(n=10, sigma2=1, gamma=0), "gamma"),
    (dict(n=10, sigma2=1, gamma=0.5, confidence=1.0), "confidence"),
    (dict(n=10, sigma2=1, gamma=0.5, max_cost=0), "max_cost"),
])
def test_halfwidth_bad_input(kwargs, match):
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=match):
        bernstein_halfwidth(n, **kwargs)


def test_min_samples_rejects_zero_gap():
    with pytest.raises(ValueError, match="delta"):
        bernstein_min_samples(0.0, sigma2=1, gamma=0.5)


def test_bernstein_interval_from_data():
    rng = np.random.default_rng(0)
    n = 3000
    group = rng.choice(["f", "m", "x"], size=n, p=[0.2, 0.5, 0.3])
    cost = rng.random(n) * 2.0
    res = bernstein_interval(cost, group, max_cost=2.0, group_a="f", group_b="m",
                             confidence=0.9)
    a, b = group == "f", group == "m"
    assert res.estimate == pytest.approx(cost[a].mean() - cost[b].mean(), rel=1e-12, abs=0)
    z = np.where(a, cost / a.mean(), np.where(b, -cost / b.mean(), 0.0))
    assert res.sigma2 == pytest.approx(np.var(z, ddof=1), rel=1e-12)
    assert res.gamma == pytest.approx(min(a.mean(), b.mean()))
    assert (res.n, res.n_a, res.n_b) == (n, a.sum(), b.sum())
    # the half-width solves the tail equation at the data's sigma2/gamma
    assert tail_bound(n, res.halfwidth, res.sigma2, 2.0, res.gamma) == pytest.approx(0.1)
    assert res.low == pytest.approx(res.estimate - res.halfwidth)
    assert res.high == pytest.approx(res.estimate + res.halfwidth)
    np.testing.assert_allclose(res.amortized, z)


def test_bernstein_interval_bad_input():
    with pytest.raises(ValueError, match="cost must lie"):
        bernstein_interval([0.5, 1.5], [1, -1])
    with pytest.raises(ValueError, match="n_B=0"):
        bernstein_interval([0.5, 0.5], [1, 1])
    with pytest.raises(ValueError, match="rows"):
        bernstein_interval([0.5, 0.5, 0.1], [1, -1])


def test_demographic_parity_and_equal_opportunity_costs():
    rng = np.random.default_rng(1)
    n = 5000
    y = rng.random(n) < 0.4
    group = rng.choice([1, -1, 0], size=n)
    score = rng.random(n) + 0.2 * (group == -1)
    y_hat = score >= 0.6
    cost, codes = demographic_parity_cost(score, group, threshold=0.6)
    res = bernstein_interval(cost, codes)
    # DP disparity = P_B(y_hat = 1) - P_A(y_hat = 1)
    assert res.estimate == pytest.approx(y_hat[group == -1].mean() - y_hat[group == 1].mean())
    cost, codes = equal_opportunity_cost(y, score, group, threshold=0.6)
    res = bernstein_interval(cost, codes)
    fnr_a = 1 - y_hat[(group == 1) & y].mean()
    fnr_b = 1 - y_hat[(group == -1) & y].mean()
    assert res.estimate == pytest.approx(fnr_a - fnr_b)
    assert res.n_a == ((group == 1) & y).sum()


# --------------------------------------------------------- Bernstein for U-statistics


def test_ustatistic_bound_variant_is_the_seed_formula_with_unit_range():
    for theta, m, n in [(0.8, 400, 1000), (0.5, 30, 20), (0.99, 5000, 100)]:
        t = bernstein_halfwidth(min(m, n), sigma2=0.25, max_cost=1, gamma=1)
        low, high = ustatistic_bernstein_interval(theta, m, n, variance="bound")
        assert low == pytest.approx(max(theta - t, 0.0))
        assert high == pytest.approx(min(theta + t, 1.0))


def test_ustatistic_adaptive_endpoints_solve_the_bernstein_equation():
    conf = 0.95
    log_term = math.log(2 / (1 - conf))
    for theta_hat, k in [(0.8, 400), (0.6, 50), (0.3, 1000), (0.97, 200)]:
        low, high = ustatistic_bernstein_interval(theta_hat, k, 10 * k, confidence=conf)
        b_low, b_high = ustatistic_bernstein_interval(theta_hat, k, 10 * k, variance="bound")
        assert b_low <= low < theta_hat < high <= b_high
        for theta in (low, high):
            if 0 < theta < 1:
                d = abs(theta_hat - theta)
                # at the end points the bound holds with equality at sigma2 = theta(1-theta)
                assert k * d * d == pytest.approx(
                    log_term * (2 * theta * (1 - theta) + 2 * d / 3), rel=1e-9)


def test_ustatistic_interval_nan_and_range():
    low, high = ustatistic_bernstein_interval(np.array([np.nan, 0.7, 1.0, 0.0]),
                                              np.array([10, 0, 5, 5]), 10)
    assert np.isnan(low[0]) and np.isnan(high[1])
    assert high[2] == 1.0 and low[3] == 0.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ustatistic_bernstein_interval(1.5, 10, 10)


def test_ustatistic_min_samples():
    for gap in (0.05, 0.1, 0.02):
        k = ustatistic_min_samples(gap)
        t = bernstein_halfwidth(np.array([k - 1, k]), sigma2=0.25, max_cost=1, gamma=1)
        assert t[1] < gap <= t[0]
        low, high = ustatistic_bernstein_interval(0.5, k, k, variance="bound")
        assert high - 0.5 < gap
    with pytest.raises(ValueError, match="1/4"):
        ustatistic_min_samples(0.1, sigma2=0.3)


def test_ustatistic_intervals_contain_truth_in_simulation():
    # X ~ N(1, 1), Y ~ N(0, 1): theta = Phi(1 / sqrt 2); discrete scores: ties, exact truth
    rng = np.random.default_rng(3)
    truth_normal = normal_cdf(1 / math.sqrt(2))
    levels = np.arange(4)
    px, py = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.3, 0.2, 0.1])
    truth_discrete = float((px[:, None] * py[None, :] * kernel_matrix(levels, levels)).sum())
    hits = {v: [0, 0] for v in ("adaptive", "bound")}
    reps = 300
    for _ in range(reps):
        m, n = rng.integers(5, 60, size=2)
        cases = [(rng.normal(1, 1, m), rng.normal(0, 1, n), truth_normal),
                 (rng.choice(levels, m, p=px), rng.choice(levels, n, p=py), truth_discrete)]
        for j, (x, y, truth) in enumerate(cases):
            est = kernel_matrix(x, y).mean()
            for variance in hits:
                low, high = ustatistic_bernstein_interval(est, m, n, variance=variance)
                hits[variance][j] += low <= truth <= high
    for variance, counts in hits.items():
        for count in counts:
            assert count / reps >= 0.95, (variance, counts)


# ----------------------------------------------------------------------------- DeLong


def random_tied_data(rng, n, n_levels=5, weighted=False):
    y = rng.random(n) < 0.45
    s = rng.integers(0, n_levels, n).astype(np.float64)
    w = rng.integers(1, 4, n).astype(np.float64) if weighted else None
    return y, s, w


def check_delong_against_reference(y, s, w, groups):
    m = make_memberships(y, groups)
    se, overall_se = delong_standard_errors(s, m, w)
    rep = np.ones(len(y), int) if w is None else w.astype(int)
    yy, ss = np.repeat(y, rep), np.repeat(s, rep)
    ref = delong_variance_reference(ss[yy], ss[~yy])
    np.testing.assert_allclose(overall_se ** 2, ref, rtol=1e-9, atol=0)
    for j, name in enumerate(groups):
        cell = {k: np.repeat(v, rep) for k, v in cells(y, groups[name]).items()}
        for metric in METRIC_COLUMNS:
            x_cell, y_cell = _METRIC_SAMPLES[metric]
            ref = delong_variance_reference(ss[cell[x_cell]], ss[cell[y_cell]])
            np.testing.assert_allclose(se[metric][j] ** 2, ref, rtol=1e-9, atol=0,
                                       err_msg=f"{name} {metric}")


@pytest.mark.parametrize("weighted", [False, True])
def test_delong_variance_matches_structural_components_with_ties(weighted):
    rng = np.random.default_rng(5)
    for _ in range(15):
        n = int(rng.integers(8, 70))
        y, s, w = random_tied_data(rng, n, n_levels=int(rng.integers(2, 8)), weighted=weighted)
        groups = {f"g{p}": rng.random(n) < p for p in (0.15, 0.5, 0.85)}
        groups["all"] = np.ones(n, bool)  # empty background: NaN where it is needed
        check_delong_against_reference(y, s, w, groups)


@pytest.mark.parametrize("weighted", [False, True])
def test_delong_split_into_ranges_equals_one_walk(weighted, monkeypatch):
    # the walk splits at block boundaries; every split gives the same sums, and the split
    # depends on the data only, so any number of threads gives the same bits
    from fastbias.intervals import delong
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(21)
    n = 300
    y, s, w = random_tied_data(rng, n, n_levels=9, weighted=weighted)
    groups = {f"g{p}": rng.random(n) < p for p in (0.1, 0.4, 0.9)}
    m = make_memberships(y, groups)
    one_se, one_overall = delong.standard_errors(SortedScores(s, m), w)
    monkeypatch.setattr(delong, "DELONG_MIN_RANGE_MEMBERSHIPS", 40)
    split_se, split_overall = delong.standard_errors(SortedScores(s, m), w)
    assert split_overall == pytest.approx(one_overall, rel=1e-12, abs=0)
    for metric in METRIC_COLUMNS:
        np.testing.assert_allclose(split_se[metric], one_se[metric], rtol=1e-12, err_msg=metric)
    for workers in (2, 3, 8):
        se, overall = delong.standard_errors(SortedScores(s, m, workers=workers), w)
        assert overall == split_overall
        for metric in METRIC_COLUMNS:
            np.testing.assert_array_equal(se[metric], split_se[metric], err_msg=metric)
    check_delong_against_reference(y, s, w, groups)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_delong_property(data):
    n = data.draw(st.integers(2, 40))
    y = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    s = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.0, 3.0]),
                                    min_size=n, max_size=n)))
    k = data.draw(st.integers(1, 3))
    groups = {f"g{j}": np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
              for j in range(k)}
    weighted = data.draw(st.booleans())
    w = (np.array(data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n)), float)
         if weighted else None)
    check_delong_against_reference(y, s, w, groups)


def test_delong_float32_scores_and_large_values():
    rng = np.random.default_rng(6)
    n = 300
    y = rng.random(n) < 0.3
    s = rng.normal(size=n).astype(np.float32).round(1)
    groups = {"a": rng.random(n) < 0.2, "b": rng.random(n) < 0.6}
    check_delong_against_reference(y, s, None, groups)


def test_delong_overall_se_matches_mid_rank_formula():
    # a straightforward implementation via mid-ranks (Sun & Xu 2014 / Hanley-style
    # components), compared on continuous data of moderate size
    rng = np.random.default_rng(7)
    n = 3000
    y = rng.random(n) < 0.35
    s = y * 0.8 + rng.normal(size=n)
    m = make_memberships(y, {})
    _, overall_se = delong_standard_errors(s, m)
    pos, neg = s[y], s[~y]
    rank_all = stats.rankdata(np.r_[pos, neg])
    rank_pos, rank_neg = stats.rankdata(pos), stats.rankdata(neg)
    v10 = (rank_all[:len(pos)] - rank_pos) / len(neg)
    v01 = 1 - (rank_all[len(pos):] - rank_neg) / len(pos)
    ref = v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)
    assert overall_se ** 2 == pytest.approx(ref, rel=1e-10, abs=0)


def test_add_intervals_delong_columns_and_nan_cells():
    rng = np.random.default_rng(8)
    n = 400
    y = rng.random(n) < 0.4
    s = y + rng.normal(size=n)
    one_pos = np.zeros(n, bool)
    one_pos[np.flatnonzero(y)[:1]] = True
    one_pos[np.flatnonzero(~y)[:10]] = True
    groups = {"big": rng.random(n) < 0.4, "one_positive": one_pos,
              "no_positive": ~y & (rng.random(n) < 0.2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, groups)
    with pytest.warns(UndefinedMetricWarning, match="one_positive: subgroup_auc"):
        out = add_intervals(table, y, s, groups, method="delong", confidence=0.9)
    z = stats.norm.ppf(0.95)
    for metric in METRIC_COLUMNS:
        for suffix in ("_low", "_high", "_se"):
            assert metric + suffix in out
        ok = np.isfinite(out[metric + "_se"])
        lo, hi = _METRIC_RANGE_TEST[metric]
        np.testing.assert_allclose(out[metric + "_low"][ok],
                                   np.clip(out[metric] - z * out[metric + "_se"], lo, hi)[ok])
        np.testing.assert_allclose(out[metric + "_high"][ok],
                                   np.clip(out[metric] + z * out[metric + "_se"], lo, hi)[ok])
    assert np.isnan(out.loc["one_positive", "subgroup_auc_se"])  # one positive: S10 undefined
    assert np.isfinite(out.loc["one_positive", "subgroup_auc"])
    assert np.isnan(out.loc["no_positive", ["subgroup_auc_low", "subgroup_auc_high"]]).all()
    assert np.isfinite(out.loc["big"]).all()
    v = delong_variance_reference(s[y], s[~y])
    assert out.attrs["overall_auc_se"] == pytest.approx(math.sqrt(v))
    assert out.attrs["overall_auc_low"] == pytest.approx(table.attrs["overall_auc"]
                                                         - z * math.sqrt(v))
    # the input table is left alone
    assert "subgroup_auc_se" not in table and "ci_method" not in table.attrs


_METRIC_RANGE_TEST = {m: ((-0.5, 0.5) if m.endswith("aeg") else (0.0, 1.0))
                      for m in METRIC_COLUMNS}


# ----------------------------------------------------------------------------- paired test


def test_paired_test_matches_reference_covariances():
    rng = np.random.default_rng(9)
    n = 90
    y = rng.random(n) < 0.5
    sa = rng.integers(0, 5, n).astype(float)
    sb = np.where(rng.random(n) < 0.7, sa, rng.integers(0, 5, n)).astype(float)
    groups = {"g": rng.random(n) < 0.4, "h": rng.random(n) < 0.7}
    res = delong_paired_test(y, sa, sb, groups, confidence=0.9)
    assert res.index[0] == ("overall", "overall_auc")
    assert len(res) == 1 + 5 * len(groups)

    def check(row, above, below, aeg):
        xa, ya, xb, yb = sa[above], sa[below], sb[above], sb[below]
        ta, tb = kernel_matrix(xa, ya).mean(), kernel_matrix(xb, yb).mean()
        var_a = delong_variance_reference(xa, ya)
        var_b = delong_variance_reference(xb, yb)
        cov = delong_covariance_reference(xa, ya, xb, yb)
        sign = -1.0 if aeg else 1.0
        assert row["value_a"] == pytest.approx(0.5 - ta if aeg else ta)
        assert row["difference"] == pytest.approx(sign * (ta - tb), abs=1e-12)
        assert row["se_a"] ** 2 == pytest.approx(var_a)
        assert row["se_b"] ** 2 == pytest.approx(var_b)
        assert row["correlation"] == pytest.approx(cov / math.sqrt(var_a * var_b))
        var_d = var_a + var_b - 2 * cov
        assert row["difference_se"] ** 2 == pytest.approx(var_d)
        z = sign * (ta - tb) / math.sqrt(var_d)
        assert row["z"] == pytest.approx(z)
        assert row["p_value"] == pytest.approx(2 * stats.norm.sf(abs(z)))
        assert row["difference_high"] - row["difference"] == pytest.approx(
            stats.norm.ppf(0.95) * math.sqrt(var_d))

    check(res.loc[("overall", "overall_auc")], y, ~y, False)
    for name, member in groups.items():
        c = cells(y, member)
        for metric in METRIC_COLUMNS:
            x_cell, y_cell = _METRIC_SAMPLES[metric]
            check(res.loc[(name, metric)], c[x_cell], c[y_cell], metric.endswith("aeg"))
    # the values are the metrics of bias_metrics
    table = fastbias.bias_metrics(y, sb, groups)
    for name in groups:
        for metric in METRIC_COLUMNS:
            assert res.loc[(name, metric), "value_b"] == pytest.approx(table.loc[name, metric])


def test_paired_test_weighted_equals_replicated_rows():
    rng = np.random.default_rng(10)
    n = 60
    y = rng.random(n) < 0.5
    sa, sb = rng.normal(size=n).round(1), rng.normal(size=n).round(1)
    w = rng.integers(1, 4, n)
    g = rng.random(n) < 0.5
    got = delong_paired_test(y, sa, sb, {"g": g}, sample_weight=w.astype(float))
    ref = delong_paired_test(np.repeat(y, w), np.repeat(sa, w), np.repeat(sb, w),
                             {"g": np.repeat(g, w)})
    pd.testing.assert_frame_equal(got, ref, rtol=1e-9)


def test_paired_test_se_agrees_with_single_model_sweep_and_handles_empty_cells():
    rng = np.random.default_rng(16)
    n = 3000
    y = rng.random(n) < 0.3
    sa = (y + rng.normal(size=n)).astype(np.float32).round(1)
    sb = (0.5 * y + rng.normal(size=n)).round(2)
    groups = {"g": rng.random(n) < 0.2, "negatives_only": ~y & (rng.random(n) < 0.1),
              "everyone": np.ones(n, bool),
              "one_positive": (np.arange(n) == np.flatnonzero(y)[0]) | (~y & (rng.random(n) < 0.1))}
    with pytest.warns(UndefinedMetricWarning) as caught:
        res = delong_paired_test(y, sa, sb, groups)
    # one warning each for the values and the tests left NaN, naming them (there were none)
    said = [str(w.message) for w in caught]
    assert len(said) == 2
    undefined = [k for k, row in res.iterrows() if np.isnan(row["value_a"])]
    untested = [k for k, row in res.iterrows()
                if np.isfinite(row["value_a"]) and np.isnan(row["p_value"])]
    assert undefined and untested
    assert f"{len(undefined)} value(s) undefined" in said[0]
    assert f"{len(untested)} test(s) not made" in said[1]
    assert all(f"{g}: {metric}" in said[0] for g, metric in undefined)
    assert all(f"{g}: {metric}" in said[1] for g, metric in untested)
    with pytest.warns(UndefinedMetricWarning, match="overall: overall_auc"):
        assert np.isnan(delong_paired_test([1, 1, 1], [0.1, 0.9, 0.3], [0.9, 0.1, 0.5])
                        .loc[("overall", "overall_auc"), "p_value"])
    m = make_memberships(y, groups)
    for scores, col in ((sa, "se_a"), (sb, "se_b")):
        se, overall_se = delong_standard_errors(scores, m)
        assert res.loc[("overall", "overall_auc"), col] == pytest.approx(overall_se, rel=1e-9)
        for j, name in enumerate(groups):
            for metric in METRIC_COLUMNS:
                got = res.loc[(name, metric), col]
                if np.isnan(se[metric][j]):
                    assert np.isnan(got)
                else:
                    assert got == pytest.approx(se[metric][j], rel=1e-9)
    assert np.isnan(res.loc[("negatives_only", "subgroup_auc"), "difference"])
    assert np.isnan(res.loc[("everyone", "bpsn_auc"), "p_value"])
    assert np.isfinite(res.loc[("everyone", "subgroup_auc"), "p_value"])


def test_paired_test_same_model_twice():
    rng = np.random.default_rng(11)
    y = rng.random(200) < 0.5
    s = y + rng.normal(size=200)
    res = delong_paired_test(y, s, s, {"g": rng.random(200) < 0.5})
    assert (res["difference"] == 0).all()
    np.testing.assert_allclose(res["difference_se"], 0.0, atol=1e-9)
    assert (res["p_value"] == 1.0).all()
    np.testing.assert_allclose(res["correlation"], 1.0)


# ----------------------------------------------------------------------------- bootstrap


@pytest.fixture(scope="module")
def medium_data():
    rng = np.random.default_rng(12)
    n = 4000
    y = rng.random(n) < 0.4
    g1 = rng.random(n) < 0.3
    g2 = rng.random(n) < 0.1
    s = y * 1.2 + 0.3 * g1 + rng.normal(size=n)
    groups = {"g1": g1, "g2": g2}
    return y, s, groups


@pytest.mark.jit_heavy
def test_bootstrap_reproducible_and_thread_independent(medium_data):
    y, s, groups = medium_data
    table = fastbias.bias_metrics(y, s, groups)
    kw = dict(method="bootstrap", n_boot=60, progress=False)
    a = add_intervals(table, y, s, groups, random_state=42, n_jobs=1, **kw)
    b = add_intervals(table, y, s, groups, random_state=42, n_jobs=3, **kw)
    c = add_intervals(table, y, s, groups, random_state=43, n_jobs=1, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert a.attrs == b.attrs
    assert not np.allclose(a["subgroup_auc_low"], c["subgroup_auc_low"])
    d = add_intervals(table, y, s, groups, random_state=np.random.SeedSequence(42), n_jobs=2,
                      **kw)
    pd.testing.assert_frame_equal(a, d)


def test_bootstrap_replicates_are_weighted_metrics(medium_data):
    y, s, groups = medium_data
    n = 400  # brute force is O(n^2): a slice
    y, s = y[:n], s[:n]
    groups = {k: v[:n] for k, v in groups.items()}
    m = make_memberships(y, groups)
    base = np.random.default_rng(0).integers(1, 3, n).astype(float)
    reps = bootstrap_replicates(s, m, base, n_boot=4, random_state=7, progress=False)
    for b in range(4):
        w = replicate_weights(reps.seeds[b], base)
        assert np.all(w / base == np.round(w / base))
        for j, name in enumerate(groups):
            ref = brute_force_metrics(y, s, groups[name], w)
            for metric in METRIC_COLUMNS:
                assert reps.metrics[metric][b, j] == pytest.approx(ref[metric], abs=1e-12)
        ref_overall = pair_probability(s[y], s[~y], w[y], w[~y])
        assert reps.overall_auc[b] == pytest.approx(ref_overall, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weights", ["wide", "tiny and large"])
def test_weighted_bootstrap_replicates_exact_with_weights_far_apart(seed, weights):
    """Weights over 2**130 apart: a subgroup's background (its class less the subgroup) can
    be far below the class, beyond what a double-double class total minus the subgroup
    keeps. Each replicate's metrics still equal the exact rational ones (brute force on
    its weights), in the kernels' walk and in the numpy tier: such a subgroup is counted
    again from its cells, its backgrounds kept from the compensated sums. (Before, these
    replicates were off by up to 0.4 in an AUC, or NaN for a defined metric.)"""
    from fastbias.intervals.bootstrap import replicate_key
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.metrics.table import metrics_from_counts

    rng = np.random.default_rng(seed)
    n = 120
    y = rng.random(n) < 0.5
    s = rng.integers(0, 12, n) / 12.0
    groups = {f"g{j}": rng.random(n) < share for j, share in enumerate((0.1, 0.5, 0.9))}
    base = (np.exp(rng.normal(0.0, 20.0, n)) if weights == "wide"
            else np.where(rng.random(n) < 0.5, 1e-30, 1.0) * rng.uniform(1.0, 2.0, n))
    m = make_memberships(y, groups)
    reps = bootstrap_replicates(s, m, base, n_boot=12, random_state=seed, progress=False)
    numpy_tier = NumpyReplicates(s, m, base)
    for b in range(12):
        w = replicate_weights(reps.seeds[b], base)
        in_numpy = metrics_from_counts(numpy_tier.weighted_sweep(replicate_key(reps.seeds[b])))
        for j, name in enumerate(groups):
            ref = brute_force_metrics(y, s, groups[name], w)
            for metric in METRIC_COLUMNS:
                for got in (reps.metrics[metric][b, j], in_numpy[metric][j]):
                    if np.isnan(ref[metric]):
                        assert np.isnan(got)
                    else:
                        assert got == pytest.approx(ref[metric], abs=1e-12)
        assert reps.overall_auc[b] == pytest.approx(pair_probability(s[y], s[~y], w[y], w[~y]),
                                                    abs=1e-12)


def test_weighted_bootstrap_final_metric_of_replicates_with_an_auc_of_zero():
    """A weighted replicate whose BPSN AUC is exactly 0 came out -2.7e-32 (a double-double
    residue of total x cell less the blocks' sums), and the power mean (p = -5) of the final
    metric made that replicate NaN: the interval silently dropped it (found by review).
    The replicates' metrics are kept within their ranges; each replicate's final metric is
    the exact one's, NaN exactly where that is undefined."""
    from fastbias.metrics.aggregates import power_means

    y = np.array([0, 0, 1, 1, 1, 0], bool)
    s = np.array([0.9, 0.9, 0.95, 0.1, 0.2, 0.05])
    g = np.array([1, 1, 1, 0, 0, 0], bool)
    w = np.array([0.1, 0.7, 1.0, 0.3, 0.9, 1.0])
    m = make_memberships(y, {"g": g})
    reps = bootstrap_replicates(s, m, w, n_boot=200, random_state=0, progress=False)
    for b in range(200):
        rw = replicate_weights(reps.seeds[b], w)
        ref = brute_force_metrics(y, s, g, rw)
        overall = pair_probability(s[y], s[~y], rw[y], rw[~y])
        aucs = [ref[name] for name in ("subgroup_auc", "bpsn_auc", "bnsp_auc")]
        want = 0.25 * overall + 0.75 * np.mean([power_means(np.array([a]), -5) for a in aucs])
        for metric in METRIC_COLUMNS:
            assert reps.metrics[metric][b, 0] == pytest.approx(ref[metric], abs=1e-12) or \
                (np.isnan(ref[metric]) and np.isnan(reps.metrics[metric][b, 0]))
        if np.isnan(want):
            assert np.isnan(reps.final_metric[b])
        else:
            assert reps.final_metric[b] == pytest.approx(want, abs=1e-12)


def test_bootstrap_replicates_check_their_weights():
    """Weights of another length were read past their end by the walk (found by review):
    a ValueError, as bias_metrics gives; and weights near the largest float, counted in
    numpy on a first call, are scaled before the counts multiply them (they overflowed)."""
    from fastbias.intervals.bootstrap import replicate_key
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.metrics.table import metrics_from_counts

    y = np.array([1, 0, 1, 0, 1, 0], bool)
    s = np.array([0.9, 0.1, 0.8, 0.7, 0.3, 0.2])
    g = np.array([1, 1, 0, 0, 1, 1], bool)
    m = make_memberships(y, {"g": g})
    for bad in (np.ones(5), np.ones(7), np.array([1, 1, -1, 1, 1, 1.0])):
        with pytest.raises(ValueError, match="sample_weight"):
            bootstrap_replicates(s, m, bad, n_boot=4, random_state=0, progress=False)
    huge = np.full(6, 1.7e308)
    huge[::2] = 1.1e308
    key = replicate_key(np.random.SeedSequence(3))
    got = metrics_from_counts(NumpyReplicates(s, m, huge).weighted_sweep(key))
    counts = replicate_counts(np.random.SeedSequence(3), 6).astype(float)
    ref = brute_force_metrics(y, s, g, counts * (huge / 2.0 ** 1023))  # (the same ratios)
    for metric in METRIC_COLUMNS:
        assert got[metric][0] == pytest.approx(ref[metric], abs=1e-12) or \
            (np.isnan(ref[metric]) and np.isnan(got[metric][0]))


def test_unweighted_bootstrap_uses_exact_integer_counts(medium_data):
    """Without sample weights a replicate is an integer-weighted sweep: same values as brute
    force on the replicate's counts, and as the float path given weights of one."""
    y, s, groups = medium_data
    n = 401  # odd: the last raw 64-bit draw is used for one count only
    y, s = y[:n], s[:n]
    groups = {k: v[:n] for k, v in groups.items()}
    m = make_memberships(y, groups)
    exact = bootstrap_replicates(s, m, n_boot=4, random_state=11, progress=False)
    floats = bootstrap_replicates(s, m, np.ones(n), n_boot=4, random_state=11, progress=False)
    for b in range(4):
        counts = replicate_counts(exact.seeds[b], n)
        assert counts.dtype == np.uint8
        w = counts.astype(np.float64)
        np.testing.assert_array_equal(replicate_weights(exact.seeds[b], np.ones(n)), w)
        for j, name in enumerate(groups):
            ref = brute_force_metrics(y, s, groups[name], w)
            for metric in METRIC_COLUMNS:
                assert exact.metrics[metric][b, j] == pytest.approx(ref[metric], abs=1e-12)
                assert exact.metrics[metric][b, j] == pytest.approx(
                    floats.metrics[metric][b, j], abs=1e-14)
        ref_overall = pair_probability(s[y], s[~y], w[y], w[~y])
        assert exact.overall_auc[b] == pytest.approx(ref_overall, abs=1e-12)


def test_poisson_weights_follow_poisson_one():
    seed = np.random.SeedSequence(1)
    k = replicate_weights(seed, np.ones(200_000))
    values, counts = np.unique(k, return_counts=True)
    assert np.all(values == np.arange(values.size))
    top = 6  # pool k >= 6
    observed = np.r_[counts[:top], counts[top:].sum()]
    probs = stats.poisson.pmf(np.arange(top), 1.0)
    expected = k.size * np.r_[probs, 1 - probs.sum()]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


@pytest.mark.jit_heavy
def test_bootstrap_intervals_are_percentiles_and_agree_with_delong(medium_data):
    y, s, groups = medium_data
    table = fastbias.bias_metrics(y, s, groups)
    m = make_memberships(y, groups)
    out = add_intervals(table, y, s, groups, method="bootstrap", n_boot=300,
                        random_state=0, confidence=0.9, progress=False)
    reps = bootstrap_replicates(s, m, n_boot=300, random_state=0, progress=False)
    delong = add_intervals(table, y, s, groups, method="delong")
    for metric in METRIC_COLUMNS:
        np.testing.assert_allclose(out[metric + "_low"],
                                   np.quantile(reps.metrics[metric], 0.05, axis=0))
        np.testing.assert_allclose(out[metric + "_high"],
                                   np.quantile(reps.metrics[metric], 0.95, axis=0))
        np.testing.assert_allclose(out[metric + "_se"],
                                   np.std(reps.metrics[metric], axis=0, ddof=1))
        # the replicates centre on the estimate; their spread is DeLong's
        centre = reps.metrics[metric].mean(axis=0)
        assert np.all(np.abs(centre - table[metric]) < 0.5 * out[metric + "_se"])
        np.testing.assert_allclose(out[metric + "_se"], delong[metric + "_se"], rtol=0.25)
    assert out.attrs["overall_auc_low"] == pytest.approx(np.quantile(reps.overall_auc, 0.05))
    assert out.attrs["overall_auc_se"] == pytest.approx(delong.attrs["overall_auc_se"], rel=0.25)
    assert out.attrs["final_metric"] == pytest.approx(fastbias.final_metric(table))
    assert out.attrs["final_metric_low"] < out.attrs["final_metric"] < out.attrs[
        "final_metric_high"]
    # each replicate's final metric is the competition formula on that replicate's metrics
    b = 17
    rep_table = pd.DataFrame({k: reps.metrics[k][b] for k in METRIC_COLUMNS}, index=list(groups))
    assert reps.final_metric[b] == pytest.approx(
        fastbias.final_metric(rep_table, reps.overall_auc[b]))


def test_bootstrap_warns_on_emptied_cells():
    rng = np.random.default_rng(13)
    n = 500
    y = rng.random(n) < 0.5
    s = rng.normal(size=n)
    tiny = np.zeros(n, bool)
    tiny[np.flatnonzero(y)[:2]] = True
    tiny[np.flatnonzero(~y)[:2]] = True
    groups = {"tiny": tiny}
    table = fastbias.bias_metrics(y, s, groups)
    with pytest.warns(UndefinedMetricWarning, match="tiny: subgroup_auc"):
        out = add_intervals(table, y, s, groups, method="bootstrap", n_boot=50,
                            random_state=1, progress=False)
    assert np.isfinite(out.loc["tiny", "subgroup_auc_low"])


# ----------------------------------------------------------------------------- Bernstein table


def normal_model_truth(mu_pos, shift_neg, shift_pos):
    """True metrics when B- ~ N(0,1), B+ ~ N(mu_pos,1), Dg- ~ N(shift_neg,1), Dg+ ~ N(mu_pos+shift_pos,1)."""
    def p_above(mean_x, mean_y):
        return normal_cdf((mean_x - mean_y) / math.sqrt(2))
    sub_neg, sub_pos = shift_neg, mu_pos + shift_pos
    return {"subgroup_auc": p_above(sub_pos, sub_neg), "bpsn_auc": p_above(mu_pos, sub_neg),
            "bnsp_auc": p_above(sub_pos, 0.0), "negative_aeg": 0.5 - p_above(0.0, sub_neg),
            "positive_aeg": 0.5 - p_above(mu_pos, sub_pos)}


def test_add_intervals_bernstein_covers_truth_and_contains_delong_scale():
    rng = np.random.default_rng(14)
    truth = normal_model_truth(1.0, 0.4, -0.2)
    hits = {metric: 0 for metric in METRIC_COLUMNS}
    reps = 60
    for _ in range(reps):
        n_bg, n_sub = 600, 80
        y = np.r_[rng.random(n_bg) < 0.5, rng.random(n_sub) < 0.5]
        g = np.r_[np.zeros(n_bg, bool), np.ones(n_sub, bool)]
        s = rng.normal(size=n_bg + n_sub) + y * 1.0 + g * np.where(y, -0.2, 0.4)
        table = fastbias.bias_metrics(y, s, {"g": g})
        out = add_intervals(table, y, s, {"g": g}, method="bernstein")
        for metric in METRIC_COLUMNS:
            hits[metric] += out.loc["g", metric + "_low"] <= truth[metric] <= out.loc[
                "g", metric + "_high"]
    for metric, count in hits.items():
        assert count / reps >= 0.95, (metric, count)
    assert "subgroup_auc_se" not in out
    assert out.attrs["ci_method"] == "bernstein"
    # the interval uses min(cell sizes): check one metric's half-width directly
    row = out.loc["g"]
    k = min(row["subgroup_negatives"], row["background_positives"])
    low, high = ustatistic_bernstein_interval(row["bpsn_auc"], k, k)
    assert (row["bpsn_auc_low"], row["bpsn_auc_high"]) == pytest.approx((low, high))
    k = min(row["subgroup_negatives"], row["background_negatives"])
    low, high = ustatistic_bernstein_interval(0.5 - row["negative_aeg"], k, k, variance="bound")
    bound = add_intervals(table, y, s, {"g": g}, method="bernstein",
                          bernstein_variance="bound")
    assert bound.loc["g", "negative_aeg_low"] == pytest.approx(0.5 - high)
    assert bound.loc["g", "negative_aeg_high"] == pytest.approx(0.5 - low)


# ----------------------------------------------------------------------------- input checks


def test_add_intervals_bad_input(medium_data):
    y, s, groups = medium_data
    table = fastbias.bias_metrics(y, s, groups)
    m = make_memberships(y, groups)
    with pytest.raises(ValueError, match="method"):
        add_intervals(table, y, s, groups, method="wald")
    with pytest.raises(ValueError, match="confidence"):
        add_intervals(table, y, s, groups, method="delong", confidence=95)
    with pytest.raises(ValueError, match="does not match"):
        add_intervals(table.iloc[::-1], y, s, groups, method="delong")
    with pytest.raises(ValueError, match="y_score has 3999 rows but y_true has 4000"):
        add_intervals(table, y, s[:-1], groups, method="delong")
    with pytest.raises(TypeError, match="y_true, y_score and subgroups"):
        add_intervals(table, y, s, method="delong")
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="scores has shape"):
        add_intervals(table, method="delong", scores=s[:-1], memberships=m)
    with pytest.raises(TypeError, match="go together"):
        add_intervals(table, method="delong", scores=s)


def test_add_intervals_deprecated_form_gives_the_same_columns(medium_data):
    y, s, groups = medium_data
    table = fastbias.bias_metrics(y, s, groups)
    new = add_intervals(table, y, s, groups, method="delong")
    with pytest.warns(DeprecationWarning, match="add_intervals"):
        old = add_intervals(table, method="delong", scores=s, memberships=make_memberships(y, groups))
    pd.testing.assert_frame_equal(new, old)
    assert new.attrs == old.attrs
    # and the same as the one-call form
    one_call = fastbias.bias_metrics(y, s, groups, ci="delong")
    pd.testing.assert_frame_equal(new[one_call.columns], one_call, check_exact=True)
    with pytest.raises(ValueError, match="unweighted"):
        add_intervals(table, y, s, groups, method="bernstein",
                      sample_weight=np.ones(len(s)))
    with pytest.raises(ValueError, match="n_boot"):
        add_intervals(table, y, s, groups, method="bootstrap", n_boot=1)
    with pytest.raises(TypeError, match="random_state"):
        add_intervals(table, y, s, groups, method="bootstrap", n_boot=5,
                      random_state="seed")


def test_public_names_are_exported():
    for name in ("bernstein_halfwidth", "bernstein_min_samples", "bernstein_interval",
                 "delong_paired_test", "ustatistic_bernstein_interval", "ustatistic_min_samples",
                 "demographic_parity_cost", "equal_opportunity_cost"):
        assert callable(getattr(fastbias, name))


def test_coverage_study_truth_matches_a_large_sample():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "coverage_study.py"
    spec = importlib.util.spec_from_file_location("coverage_study", path)
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    rng = np.random.default_rng(15)
    y, s, g = study.simulate(rng, 60_000, 30_000, 0.5)
    table = fastbias.bias_metrics(y, s, {"g": g})
    truth = study.true_values(60_000, 30_000, 0.5)
    for metric in METRIC_COLUMNS:
        assert table.loc["g", metric] == pytest.approx(truth[metric], abs=0.01)
    assert table.attrs["overall_auc"] == pytest.approx(truth["overall_auc"], abs=0.01)
    small = study.run_study(reps=3, n_boot=20, sizes=(("tiny", 30),), n_background=300)
    assert set(small["method"]) == {"delong", "bootstrap", "bernstein"}
    assert small["coverage"].between(0, 1).all()


def test_percentile_intervals_touch_no_warning_filters():
    """Models evaluated in threads compute their bootstrap intervals at once: entering
    ``warnings.catch_warnings`` there swaps the process's filters under the other threads
    (a review saw warnings lost and repeated between identical runs). Columns with fewer
    than two finite replicates are NaN without numpy warning about them."""
    import warnings as warnings_module

    from fastbias.intervals.bootstrap import _percentile_interval

    def refuse(*args, **kwargs):
        raise AssertionError("warnings.catch_warnings entered")

    rng = np.random.default_rng(3)
    reps = rng.random((50, 4))
    reps[:, 1] = np.nan  # no replicate defined
    reps[1:, 2] = np.nan  # one
    reps[::3, 3] = np.nan  # some
    entering = warnings_module.catch_warnings
    with entering(), np.errstate(all="raise"):
        warnings_module.simplefilter("error")
        warnings_module.catch_warnings = refuse
        try:
            low, high, se, count = _percentile_interval(reps, 0.9)
            low1, high1, se1, count1 = _percentile_interval(reps[:, 0], 0.9)
        finally:
            warnings_module.catch_warnings = entering
    np.testing.assert_array_equal(count, [50, 0, 1, 33])
    for j in (0, 3):
        finite = reps[np.isfinite(reps[:, j]), j]
        np.testing.assert_allclose([low[j], high[j]], np.quantile(finite, [0.05, 0.95]))
        np.testing.assert_allclose(se[j], np.std(finite, ddof=1))
    # the bits of numpy's nan-functions over all the replicates as they come (C order),
    # which the intervals had before
    with warnings_module.catch_warnings():
        warnings_module.simplefilter("ignore", RuntimeWarning)  # (the all-NaN columns)
        alpha = 1.0 - 0.9
        before = (np.nanquantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0),
                  np.nanstd(reps, axis=0, ddof=1))
    np.testing.assert_array_equal([low[[0, 3]], high[[0, 3]]], before[0][:, [0, 3]])
    np.testing.assert_array_equal(se[[0, 3]], before[1][[0, 3]])
    assert np.isnan([low[1], high[1], se[1], low[2], high[2], se[2]]).all()
    assert (float(low1), float(high1), float(se1), int(count1)) == (low[0], high[0], se[0], 50)


@pytest.mark.parametrize("layout", ["one universe", "two universes", "with all rows"])
def test_evaluate_under_exclude_gives_the_overall_auc_interval_of_all_rows(layout):
    """Under missing_subgroup="exclude" each set of rows annotated for the subgroups is a
    universe of its own: the overall AUC's interval is of all the rows (a universe's was
    given for it, found by review: 0.9817-0.9913 around an overall AUC of 0.9789), and the
    final metric's bootstrap interval, which would join replicates that resample each
    universe on its own, is not made (one warning says so)."""
    rng = np.random.default_rng(8)
    n = 240
    y = rng.random(n) < 0.4
    s = np.round(rng.normal(size=n) + 1.2 * y, 1)
    unannotated = rng.random(n) < 0.4
    g = np.where(unannotated, np.nan, rng.random(n) < 0.3)
    h = np.where(unannotated if layout == "one universe" else rng.random(n) < 0.3, np.nan,
                 rng.random(n) < 0.5)
    if layout == "with all rows":
        h = (rng.random(n) < 0.5).astype(float)
    df = pd.DataFrame({"y": y, "s": s, "g": g, "h": h})
    settings = dict(label="y", scores="s", subgroups=["g", "h"], missing_subgroup="exclude")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        delong = fastbias.evaluate(df, ci="delong", **settings).for_model()
    assert delong.attrs["overall_auc_se"] == pytest.approx(
        delong_variance_reference(s[y], s[~y]) ** 0.5, rel=1e-12, abs=0)
    with pytest.warns(UndefinedMetricWarning, match="not made .*: the final metric"):
        boot = fastbias.evaluate(df, ci="bootstrap", n_boot=60, random_state=5,
                                 **settings).for_model()
    aucs = []
    for seed in np.random.SeedSequence(5).spawn(60):  # replicate b: child b, all the rows
        w = replicate_weights(seed, np.ones(n))
        aucs.append(pair_probability(s[y], s[~y], w[y], w[~y]))
    low, high = np.quantile(aucs, [0.025, 0.975])
    assert boot.attrs["overall_auc_low"] == pytest.approx(low, abs=1e-12)
    assert boot.attrs["overall_auc_high"] == pytest.approx(high, abs=1e-12)
    assert boot.attrs["overall_auc_se"] == pytest.approx(np.std(aucs, ddof=1), abs=1e-12)
    assert low <= pair_probability(s[y], s[~y]) <= high
    assert not {"final_metric", "final_metric_low", "final_metric_high"} & set(boot.attrs)
