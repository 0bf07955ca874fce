"""delong_paired_test and the Bernstein bounds against independent references: an
independent review's tests (2026-11-27, thirty-first session).

Found by review (each fails before its fix): a difference whose exact standard error is 0
(every placement moved alike) had z = -4.5e7 and p = 0 from the cancellation of
var_a + var_b - 2 cov; a test not made kept a zero-width interval.

References: tests/_paired_ref.py (DeLong, DeLong & Clarke-Pearson 1988, all pairs,
exact fractions, frequency weights) and tests/_bernstein_ref.py (Ethayarajh 2020,
60-digit decimals, bisection rather than the closed forms). Nothing here is compared with
fastbias's own output.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from tests import _bernstein_ref as BR
from tests._paired_ref import paired_reference, z_p


def _paired(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.delong_paired_test(*args, **kwargs)


def _check_against_reference(out, ref):
    for key, r in ref.items():
        row = out.loc[key]
        if r is None:
            assert np.isnan(row.value_a) and np.isnan(row.p_value), key
            continue
        for col in ("value_a", "value_b", "difference"):
            assert row[col] == pytest.approx(float(r[col]), abs=1e-12), (key, col)
        if r["var_diff"] is None:  # a cell of total weight <= 1
            assert np.isnan(row.difference_se) and np.isnan(row.p_value), key
            continue
        assert row.se_a == pytest.approx(math.sqrt(r["var_a"]), abs=1e-9), key
        assert row.se_b == pytest.approx(math.sqrt(r["var_b"]), abs=1e-9), key
        if r["var_a"] > 0 and r["var_b"] > 0:
            corr = float(r["cov"]) / math.sqrt(r["var_a"] * r["var_b"])
            assert row.correlation == pytest.approx(corr, abs=1e-7), key
        se, z, p = z_p(r["difference"], r["var_diff"])
        assert row.difference_se == pytest.approx(se, abs=1e-9), key
        if z is None:  # standard error exactly 0
            if r["difference"] == 0:
                assert row.z == 0 and row.p_value == 1, key
            else:
                assert np.isnan(row.z) and np.isnan(row.p_value), (key, row.z, row.p_value)
        else:
            assert row.z == pytest.approx(z, rel=1e-6, abs=1e-9), key
            assert row.p_value == pytest.approx(p, abs=1e-7), key


def _random_case(rng, trial):
    n = int(rng.integers(6, 30))
    y = (rng.random(n) < rng.uniform(0.2, 0.8)).astype(int)
    levels = int(rng.integers(2, 6))
    sa = rng.integers(0, levels, n) / 4  # heavy ties
    mode = trial % 4
    if mode == 0:
        sb = rng.integers(0, levels, n) / 4  # ties across models
    elif mode == 1:
        sb = sa.copy()
        sb[rng.integers(0, n, 3)] = rng.integers(0, levels, 3) / 4
    elif mode == 2:
        sb = sa ** 3 + 1  # monotone transform
    else:
        sb = sa.copy()  # identical
    groups = {"g1": rng.random(n) < 0.3, "g2": rng.random(n) < 0.6}
    w = rng.integers(0, 4, n).astype(float) if trial % 3 == 0 else None
    return y, sa, sb, groups, w


@pytest.mark.parametrize("seed", range(4))
def test_paired_matches_bruteforce(seed):
    rng = np.random.default_rng(seed)
    for trial in range(12):
        y, sa, sb, groups, w = _random_case(rng, trial)
        out = _paired(y, sa, sb, groups, sample_weight=w)
        ref = paired_reference(y.tolist(), sa.tolist(), sb.tolist(),
                               {k: v.tolist() for k, v in groups.items()},
                               None if w is None else w.tolist())
        _check_against_reference(out, ref)


def test_paired_integer_weights_are_repeated_rows():
    rng = np.random.default_rng(11)
    y, sa, sb, groups, _ = _random_case(rng, 0)
    w = rng.integers(1, 4, y.shape[0])
    out = _paired(y, sa, sb, groups, sample_weight=w.astype(float))
    rep = np.repeat(np.arange(y.shape[0]), w)
    ref = paired_reference(y[rep].tolist(), sa[rep].tolist(), sb[rep].tolist(),
                           {k: v[rep].tolist() for k, v in groups.items()})
    _check_against_reference(out, ref)


def test_paired_fractional_labels_and_subgroups_with_thresholds():
    rng = np.random.default_rng(12)
    n = 25
    yf = rng.integers(0, 5, n) / 4
    gf = rng.integers(0, 5, n) / 4
    sa, sb = rng.integers(0, 4, n) / 3, rng.integers(0, 4, n) / 3
    out = _paired(yf, sa, sb, pd.DataFrame({"g": gf}), label_threshold=0.5,
                  subgroup_threshold=0.5)
    ref = paired_reference((yf >= 0.5).astype(int).tolist(), sa.tolist(), sb.tolist(),
                           {"g": (gf >= 0.5).tolist()})
    _check_against_reference(out, ref)


def test_paired_aeg_placements_and_tiny_subgroups():
    # a subgroup of one negative row (BPSN and negative AEG defined, total weight 1 -> no se),
    # an empty one, and one containing every row
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6, .7, .8])
    groups = {"one": np.r_[True, np.zeros(7, bool)], "none": np.zeros(8, bool),
              "all": np.ones(8, bool), "half": np.r_[np.ones(4, bool), np.zeros(4, bool)]}
    out = _paired(y, s, s[::-1], groups)
    _check_against_reference(out, paired_reference(y.tolist(), s.tolist(), s[::-1].tolist(),
                                                   {k: v.tolist() for k, v in groups.items()}))


@pytest.mark.parametrize("pairs", [3, 7, 9, 10])
def test_paired_zero_variance_difference_is_not_a_significant_test(pairs):
    """Positives and negatives alternate; model b moves every positive above its
    neighbouring negative. Every placement rises by exactly 1/pairs, so the difference's
    DeLong variance is exactly 0 (var_a = var_b = cov). The docstring promises NaN z and
    p-value for a difference whose standard error is 0; rounding had left ~1e-17 in
    var_a + var_b - 2 cov: z ~ -4e7, p = 0.0 (for pairs=3)."""
    y = np.tile([1, 0], pairs)
    sa = np.arange(2.0 * pairs)
    sb = sa.copy()
    sb[0::2] += 1.5
    ref = paired_reference(y.tolist(), sa.tolist(), sb.tolist(), {})[("overall", "overall_auc")]
    assert ref["var_diff"] == 0 and ref["difference"] != 0 and ref["var_a"] > 0
    row = _paired(y, sa, sb).loc[("overall", "overall_auc")]
    assert row.difference == pytest.approx(float(ref["difference"]), abs=1e-12)
    assert np.isnan(row.p_value), (row.difference_se, row.z, row.p_value)


def test_paired_zero_variance_difference_with_weights_is_not_significant():
    """The same with frequency weights 3 (had z ~ -7e7, p = 0 at pairs = 10 and 11)."""
    for pairs in (10, 11):
        y = np.tile([1, 0], pairs)
        sa = np.arange(2.0 * pairs)
        sb = sa.copy()
        sb[0::2] += 1.5
        row = _paired(y, sa, sb, sample_weight=np.full(2 * pairs, 3.0)).loc[
            ("overall", "overall_auc")]
        assert np.isnan(row.p_value), (pairs, row.difference_se, row.z, row.p_value)


def test_paired_untested_difference_has_no_zero_width_interval():
    """Both models separate the classes in opposite directions (AUC 1 vs 0): the test is
    not made (z, p NaN; the warning says DeLong's variance 'tells nothing, not certainty'),
    and the interval was [1.0, 1.0], certainty: NaN like z and p."""
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    row = _paired(y, np.where(y, 1.0, 0.0), np.where(y, 0.0, 1.0)).loc[
        ("overall", "overall_auc")]
    assert np.isnan(row.p_value)
    assert np.isnan(row.difference_low) and np.isnan(row.difference_high), (
        row.difference_low, row.difference_high)


def test_paired_identical_and_monotone_models_have_p_one():
    rng = np.random.default_rng(5)
    for t in range(30):
        n = int(rng.integers(5, 120))
        y = rng.random(n) < 0.4
        sa = rng.random(n)
        sb = np.log(sa) * 3.7 + 0.1 if t % 2 else sa.copy()
        w = rng.uniform(0.1, 3, n) if t % 3 == 0 else None
        out = _paired(y, sa, sb, {"g": rng.random(n) < 0.3}, sample_weight=w)
        defined = out.dropna(subset=["value_a"])
        assert (defined.difference == 0).all()
        assert (defined.p_value.isna() | (defined.p_value == 1)).all()
    # both models separate the classes the same way: se 0, difference 0 -> z = 0, p = 1
    y = np.array([0, 1, 0, 1])
    row = _paired(y, y * 1.0, y * 2.0).loc[("overall", "overall_auc")]
    assert row.z == 0 and row.p_value == 1


def test_paired_refuses_bad_inputs():
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    s = np.linspace(0.1, 0.8, 8)
    for args, kwargs in [((y, np.r_[np.nan, s[1:]], s), {}), ((y, s, np.r_[np.inf, s[1:]]), {}),
                         ((y, s, s[:-1]), {}), ((y, s, s, {"g": np.ones(7, bool)}), {}),
                         ((y, s, s), {"sample_weight": np.ones(7)}),
                         ((y, s, s), {"sample_weight": -np.ones(8)}),
                         ((np.r_[0.2, y[1:]], s, s), {}),
                         ((y, s, s), {"confidence": 1.0}), ((y, s, s), {"confidence": 0.0})]:
        with pytest.raises(ValueError):
            fastbias.delong_paired_test(*args, **kwargs)
    idx = pd.Index(list("abcdefgh"))
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.delong_paired_test(pd.Series(y, index=idx), pd.Series(s, index=idx[::-1]), s)


# ---------------------------------------------------------------- Bernstein (Ethayarajh 2020)

def test_bernstein_seed_worked_example():
    assert float(BR.halfwidth(3160, 4, 1, 0.5, 0.95)) == pytest.approx(0.0974, abs=5e-5)
    assert BR.min_samples(0.05, 4, 1, 0.5, 0.95) == 11903
    assert fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5) == pytest.approx(
        float(BR.halfwidth(3160, 4, 1, 0.5, 0.95)), rel=1e-12)
    assert fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5) == 11903


def test_bernstein_halfwidth_and_min_samples_random():
    rng = np.random.default_rng(1)
    for i in range(200):
        d = float(10 ** rng.uniform(-4, 0.5)) * (1 if i % 2 else -1)
        s2 = float(rng.choice([0.0, rng.uniform(0, 10)]))
        c, g = float(rng.uniform(0.1, 3)), float(rng.uniform(0.01, 1))
        conf = float(rng.choice([0.5, 0.9, 0.95, 0.99, 0.999999]))
        assert fastbias.bernstein_min_samples(d, sigma2=s2, max_cost=c, gamma=g,
                                              confidence=conf) == BR.min_samples(d, s2, c, g, conf)
        n = int(rng.integers(1, 10 ** 7))
        t = fastbias.bernstein_halfwidth(n, sigma2=s2, max_cost=c, gamma=g, confidence=conf)
        # (1e-10: the float confidence 0.999999 is not the decimal one)
        assert t == pytest.approx(float(BR.halfwidth(n, s2, c, g, conf)), rel=1e-10)


def test_bernstein_interval_matches_amortized_reference():
    rng = np.random.default_rng(2)
    for _ in range(40):
        n = int(rng.integers(2, 200))
        codes = rng.choice([1, -1, 0, 7], n)
        codes[0], codes[-1] = 1, -1  # includes groups of one row
        c_max = float(rng.choice([1.0, 2.5]))
        cost = rng.integers(0, 3, n) / 2 * c_max
        conf = float(rng.choice([0.9, 0.95, 0.99]))
        r = fastbias.bernstein_interval(cost, codes, max_cost=c_max, confidence=conf)
        mean, var, gamma, t = BR.amortized_interval(cost.tolist(), codes.tolist(), c_max, conf)
        assert r.estimate == pytest.approx(float(mean), abs=1e-12)
        assert r.estimate == pytest.approx(cost[codes == 1].mean() - cost[codes == -1].mean(),
                                           abs=1e-12)
        assert r.sigma2 == pytest.approx(float(var), rel=1e-9, abs=1e-12)
        assert r.gamma == pytest.approx(float(gamma), rel=1e-15)
        assert r.halfwidth == pytest.approx(float(t), rel=1e-10)
        assert r.low <= r.estimate <= r.high and r.n == n
    with pytest.raises(ValueError):  # group B absent
        fastbias.bernstein_interval([0.0, 1.0], [1, 1])
    with pytest.raises(ValueError):  # cost above max_cost
        fastbias.bernstein_interval([0.0, 1.5], [1, -1])
    with pytest.raises(ValueError):  # negative cost
        fastbias.bernstein_interval([0.0, -0.1], [1, -1])


def test_parity_and_opportunity_costs():
    rng = np.random.default_rng(4)
    n = 300
    y = rng.random(n) < 0.5
    s = rng.random(n)
    grp = rng.choice(["a", "b", "x"], n)
    cost, codes = fastbias.demographic_parity_cost(s, grp, group_a="a", group_b="b")
    r = fastbias.bernstein_interval(cost, codes)
    yhat = s >= 0.5
    assert r.estimate == pytest.approx(yhat[grp == "b"].mean() - yhat[grp == "a"].mean())
    cost, codes = fastbias.equal_opportunity_cost(y, s, grp, group_a="a", group_b="b")
    r = fastbias.bernstein_interval(cost, codes)
    fnr = {g: (~yhat[(grp == g) & y]).mean() for g in "ab"}
    assert r.estimate == pytest.approx(fnr["a"] - fnr["b"])
    assert r.n == n


def test_bias_metrics_bernstein_columns_match_reference():
    rng = np.random.default_rng(2)
    spec = {"subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
            "bpsn_auc": (("background", 1), ("subgroup", 0)),
            "bnsp_auc": (("subgroup", 1), ("background", 0)),
            "negative_aeg": (("background", 0), ("subgroup", 0)),
            "positive_aeg": (("background", 1), ("subgroup", 1))}
    for _ in range(12):
        n = int(rng.integers(10, 150))
        y = rng.random(n) < 0.4
        s = rng.integers(0, 6, n) / 5
        groups = {"g": rng.random(n) < 0.25, "h": rng.random(n) < 0.6}
        conf = float(rng.choice([0.9, 0.95, 0.99]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tab = fastbias.bias_metrics(y, s, pd.DataFrame(groups), ci="bernstein",
                                        confidence=conf)
        for name, mask in groups.items():
            row = tab.loc[name]
            cells = {("subgroup", 1): s[mask & y], ("subgroup", 0): s[mask & ~y],
                     ("background", 1): s[~mask & y], ("background", 0): s[~mask & ~y]}
            for metric, (xc, yc) in spec.items():
                xs, ys = cells[xc], cells[yc]
                if len(xs) == 0 or len(ys) == 0:
                    assert np.isnan(row[metric + "_low"])
                    continue
                theta = ((xs[:, None] > ys[None, :]).sum()
                         + 0.5 * (xs[:, None] == ys[None, :]).sum()) / (len(xs) * len(ys))
                lo, hi = (float(v) for v in BR.ustat_adaptive(theta, min(len(xs), len(ys)),
                                                               conf))
                est = theta
                if "aeg" in metric:
                    est, lo, hi = 0.5 - theta, 0.5 - hi, 0.5 - lo
                assert row[metric] == pytest.approx(est, abs=1e-12)
                assert row[metric + "_low"] == pytest.approx(lo, abs=1e-9), (name, metric)
                assert row[metric + "_high"] == pytest.approx(hi, abs=1e-9), (name, metric)
                assert row[metric + "_low"] <= row[metric] <= row[metric + "_high"]


def test_evaluate_bernstein_gap_interval_matches_reference():
    rng = np.random.default_rng(3)
    for _ in range(6):
        n = int(rng.integers(8, 120))
        df = pd.DataFrame({"y": (rng.random(n) < .4).astype(int), "s": rng.integers(0, 5, n) / 4,
                           "g": (rng.random(n) < rng.uniform(.05, .5)).astype(int)})
        conf = float(rng.choice([0.9, 0.95]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                      thresholds=[0.25, 0.5, 0.75], gap_interval="bernstein",
                                      confidence=conf).thresholds
        yy, g = df.y.to_numpy() == 1, df.g.to_numpy() == 1
        for _, row in table.iterrows():
            pred = df.s.to_numpy() >= row.threshold
            # (the positive rate's and the TPR's gaps: the paper's cost 1 - y_hat, mirrored)
            sets = {"positive_rate": (np.ones(n, bool), ~pred, -1), "tpr": (yy, ~pred, -1),
                    "fpr": (~yy, pred, 1), "fnr": (yy, ~pred, 1), "precision": (pred, yy, 1)}
            for rate, (trial, hit, sign) in sets.items():
                codes = np.where(trial & g, 1, np.where(trial & ~g, -1, 0))
                if (codes == 1).sum() == 0 or (codes == -1).sum() == 0:
                    assert np.isnan(row[rate + "_gap_low"])
                    continue
                mean, _, _, t = BR.amortized_interval(hit.astype(float).tolist(),
                                                      codes.tolist(), 1.0, conf)
                m = sign * float(mean)
                assert row[rate + "_gap"] == pytest.approx(m, abs=1e-12)
                assert row[rate + "_gap_low"] == pytest.approx(max(m - float(t), -1.0), abs=1e-9)
                assert row[rate + "_gap_high"] == pytest.approx(min(m + float(t), 1.0), abs=1e-9)


def test_paired_zero_variance_difference_with_fractional_weights_is_not_a_test():
    """Weights of 1.1 (not exact in binary): the placements' sums round, so a difference
    whose exact standard error is 0 computes to a tiny one; it is NaN and named, never a
    test of z ~ 1e7 (the rounding bound of the centred sums of the differences)."""
    for pairs in range(3, 12):
        y = np.tile([1, 0], pairs)
        sa = np.arange(2.0 * pairs)
        sb = sa.copy()
        sb[0::2] += 1.5
        with pytest.warns(fastbias.UndefinedMetricWarning, match="test.s. not made") as seen:
            row = fastbias.delong_paired_test(y, sa, sb, sample_weight=np.full(2 * pairs, 1.1)
                                              ).loc[("overall", "overall_auc")]
        assert np.isnan(row.p_value) and np.isnan(row.z), (pairs, row.difference_se, row.z)
        assert np.isnan(row.difference_low) and np.isnan(row.difference_high)
        assert not row.difference_se > 0, row.difference_se
        assert any("overall: overall_auc" in str(w.message) and "weight at most 1" not in
                   str(w.message) for w in seen)


@pytest.mark.parametrize("seed", range(3))
def test_paired_matches_exact_fractions_with_fractional_weights(seed):
    """Weights uniform in 0.1..3 (their float values, taken exactly as fractions): every
    standard error, z and p-value as exact arithmetic gives, to 1e-9 relative."""
    rng = np.random.default_rng(100 + seed)
    n = 40
    y = (rng.random(n) < 0.4).astype(int)
    sa = rng.integers(0, 6, n) / 4
    sb = np.where(rng.random(n) < 0.7, sa, rng.integers(0, 6, n) / 4)
    groups = {"g1": rng.random(n) < 0.4}
    w = rng.uniform(0.1, 3, n)
    out = _paired(y, sa, sb, groups, sample_weight=w)
    ref = paired_reference(y.tolist(), sa.tolist(), sb.tolist(),
                           {k: v.tolist() for k, v in groups.items()}, w.tolist())
    compared = 0
    for key, r in ref.items():
        if r is None or r["var_diff"] is None:
            continue
        row = out.loc[key]
        se, z, p = z_p(r["difference"], r["var_diff"])
        assert row.se_a == pytest.approx(math.sqrt(r["var_a"]), rel=1e-9, abs=0), key
        assert row.difference_se == pytest.approx(se, rel=1e-9, abs=0), key
        if z is not None:
            assert row.z == pytest.approx(z, rel=1e-9, abs=0), key
            compared += 1
    assert compared >= 4


def test_paired_identical_orders_with_fractional_weights_test_no_difference():
    """Two models that order the rows alike (identical, or a monotone transform) have the
    same placements, so a difference of exactly 0 with a standard error of exactly 0, whatever
    the weights' rounding: z = 0, p = 1 and the interval [0, 0], as without weights."""
    rng = np.random.default_rng(11)
    n = 300
    y = rng.random(n) < 0.4
    a = y + rng.normal(0, 1, n)
    w = rng.uniform(0.1, 3, n)
    g = {"g": rng.random(n) < 0.3}
    for b in (a.copy(), np.exp(a)):
        out = _paired(y, a, b, g, sample_weight=w)
        assert (out["difference"] == 0).all()
        assert (out["z"] == 0).all() and (out["p_value"] == 1).all()
        assert (out["difference_low"] == 0).all() and (out["difference_high"] == 0).all()


@pytest.mark.parametrize("seed", range(6))
def test_paired_standard_errors_with_weights_far_apart_are_exact_or_nan(seed):
    """Weights spread over 1e+-15 (the float sums of the placements round far above some
    rows' weights): every standard error, z and p-value is within 1% of exact arithmetic's,
    or NaN (the rounding bound cannot vouch for it), never another number."""
    rng = np.random.default_rng(200 + seed)
    checked = 0
    for trial in range(8):
        n = 24
        y = (rng.random(n) < 0.5).astype(int)
        sa = rng.integers(0, 8, n) / 8
        sb = sa.copy()
        swap = rng.choice(n, 4, replace=False)
        sb[swap] = sb[swap[::-1]]  # a few rows move: a difference of few placements
        w = np.exp(rng.normal(0, 15, n))
        if trial % 2:
            w[rng.choice(n, 3, replace=False)] = rng.uniform(0.5, 2, 3)
        groups = {"g": rng.random(n) < 0.5}
        out = _paired(y, sa, sb, groups, sample_weight=w)
        ref = paired_reference(y.tolist(), sa.tolist(), sb.tolist(),
                               {k: v.tolist() for k, v in groups.items()}, w.tolist())
        for key, r in ref.items():
            if r is None or r["var_diff"] is None:
                continue
            row = out.loc[key]
            exact = {"se_a": math.sqrt(r["var_a"]), "se_b": math.sqrt(r["var_b"]),
                     "difference_se": math.sqrt(r["var_diff"])}
            for col, want in exact.items():
                got = row[col]
                if np.isnan(got):
                    continue
                checked += 1
                assert got == pytest.approx(want, rel=0.011, abs=0), (trial, key, col)
            se, z, p = z_p(r["difference"], r["var_diff"])
            if not np.isnan(row.z) and z is not None:  # (the difference within 1% of se)
                assert abs(row.z - z) <= 0.011 * abs(z) + 0.0101, (trial, key, row.z, z)
            elif z is None and r["difference"] != 0:
                assert np.isnan(row.z), (trial, key)
    assert checked > 100


def test_paired_placements_alike_only_in_rounding_have_no_standard_error_of_0():
    """A negative weighing 1e-20 of the others lies between two positives: their placements
    differ by it in exact arithmetic, not in the float sums. The standard errors computed 0
    are no 0 of exact arithmetic's (which is about 1e-21 here): NaN, or that value within 1%."""
    y = np.array([0, 1, 0, 1, 0, 1])
    sa = np.arange(6.0)
    sb = np.array([0.0, 1.0, 2.0, 3.0, 5.0, 4.0])  # the last two rows swapped
    w = np.array([1.0, 1.0, 1e-20, 1.0, 1.0, 1.0])
    out = _paired(y, sa, sb, sample_weight=w)
    ref = paired_reference(y.tolist(), sa.tolist(), sb.tolist(), {}, w.tolist())
    r, row = ref[("overall", "overall_auc")], out.loc[("overall", "overall_auc")]
    assert r["var_a"] > 0
    for col, var in (("se_a", r["var_a"]), ("se_b", r["var_b"])):
        assert np.isnan(row[col]) or row[col] == pytest.approx(math.sqrt(var), rel=0.01, abs=0)


def test_paired_constant_model_has_no_correlation_and_one_warning_per_cell():
    """A model of constant scores has placements all alike (its standard error exactly 0):
    the correlation is NaN, not a division by 0; and a test not made is named once, in the
    warning that says why."""
    rng = np.random.default_rng(3)
    y = np.array([0, 1] * 20)
    a = y + rng.normal(0, 1, 40)
    out = _paired(y, a, np.full(40, 0.5))
    row = out.loc[("overall", "overall_auc")]
    assert row.se_b == 0 and row.se_a > 0 and np.isnan(row.correlation)
    assert row.p_value == pytest.approx(
        math.erfc(abs(row.difference / row.difference_se) / math.sqrt(2)), rel=1e-12)
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    with pytest.warns(fastbias.UndefinedMetricWarning) as seen:
        fastbias.delong_paired_test(y, np.where(y, 1.0, 0.0), np.where(y, 0.0, 1.0))
    said = [str(w.message) for w in seen if "overall: overall_auc" in str(w.message)]
    assert len(said) == 1 and "standard error is 0" in said[0]
    assert said[0].count("overall: overall_auc") == 1
