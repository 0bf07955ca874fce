"""A mutation audit of the U-statistic Bernstein bounds (``intervals/ustatistic.py``), the
out-of-core interval sums (``intervals/chunked.py``), the exact sums' rationals
(``intervals/exact_sums.py``) and the membership walk (``sweep/walk.py``), by an independent
reviewer (forty-fourth session): 43 hand mutants, each against a reference worked out here
(80-digit decimals, fractions, the suite's weighted DeLong in tests/_paired_ref.py, hand
counts), never against fastbias on another path. Each test names the mutants it kills."""
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from fastbias.intervals.exact_sums import (
    exact_variance,
)
from fastbias.intervals.ustatistic import (
    ustatistic_bernstein_interval,
    ustatistic_min_samples,
)
from fastbias.prepare.memberships import prepare_memberships_dense
from fastbias.sort.order import SortedScores
from fastbias.sweep.walk import member_walk, read_ratio

from ._paired_ref import delong_parts

PREC = 80


def _L(confidence):
    with localcontext() as c:
        c.prec = PREC
        return (Decimal(2) / (1 - Decimal(str(confidence)))).ln()


def _accepts(t, e, k, L):
    d = abs(e - t)
    return k * d * d <= L * (2 * t * (1 - t) + 2 * d / 3)


def _adaptive_reference(estimate, k, confidence):
    """Every theta in [0, 1] with k d^2 <= L (2 theta (1 - theta) + 2 d / 3), d = |e - theta|
    (the docstring's definition), by bisection in 80-digit decimals."""
    with localcontext() as c:
        c.prec = PREC
        e, L, k = Decimal(repr(float(estimate))), _L(confidence), Decimal(int(k))
        e = min(max(e, Decimal(0)), Decimal(1))

        def edge(inside, outside):
            if _accepts(outside, e, k, L):
                return outside
            for _ in range(200):
                mid = (inside + outside) / 2
                if _accepts(mid, e, k, L):
                    inside = mid
                else:
                    outside = mid
            return inside
        return float(edge(e, Decimal(0))), float(edge(e, Decimal(1)))


@pytest.mark.parametrize("estimate, nx, ny, confidence", [
    (0.8, 400, 1000, 0.95), (0.0, 7, 3, 0.95), (1.0, 50, 50, 0.99), (0.5, 1, 9, 0.9),
    (0.999, 100000, 30, 0.95), (0.013, 2000, 5000, 0.5), (0.37, 12, 12, 0.999),
])
def test_adaptive_interval_is_the_set_the_bound_accepts(estimate, nx, ny, confidence):
    """Both endpoints of the adaptive interval are the edges of the set of theta that the
    docstring's inequality accepts (k = min sizes), including an estimate at 0 or 1 and k=1."""
    low, high = ustatistic_bernstein_interval(estimate, nx, ny, confidence=confidence)
    ref_low, ref_high = _adaptive_reference(estimate, min(nx, ny), confidence)
    assert low == pytest.approx(ref_low, abs=1e-13)
    assert high == pytest.approx(ref_high, abs=1e-13)


def test_estimate_within_rounding_outside_unit_range_is_read_as_the_edge():
    """An estimate 1e-13 below 0 (or above 1) is accepted as rounding and clipped: the interval
    is the one at exactly 0 (1), from the Decimal reference. Kills mutant 'estimate not
    clipped' (the quadratic then used theta (1 - theta) < 0)."""
    for estimate, edge in ((-1e-13, 0.0), (1 + 1e-13, 1.0)):
        low, high = ustatistic_bernstein_interval(estimate, 30, 40)
        ref_low, ref_high = _adaptive_reference(edge, 30, 0.95)
        assert low == pytest.approx(ref_low, abs=1e-15)
        assert high == pytest.approx(ref_high, abs=1e-15)


def test_bound_interval_matches_decimal_halfwidth_arrays():
    """variance='bound': estimate -/+ t with k t^2 = L (1/2 + 2 t / 3), broadcast over arrays;
    empty or NaN cells are NaN, one-row samples are k = 1 (clipped to [0, 1])."""
    est = np.array([0.2, 0.5, np.nan, 0.9, 0.7])
    nx = np.array([10, 1, 5, 0, 300])
    ny = np.array([4, 100, 5, 9, 2000])
    low, high = ustatistic_bernstein_interval(est, nx, ny, variance="bound", confidence=0.9)
    with localcontext() as c:
        c.prec = PREC
        L = _L(0.9)
        for i in range(len(est)):
            k = min(nx[i], ny[i])
            if k < 1 or np.isnan(est[i]):
                assert np.isnan(low[i]) and np.isnan(high[i])
                continue
            k = Decimal(int(k))
            b = 2 * L / 3
            t = (b + (b * b + 2 * k * L).sqrt()) / (2 * k)
            e = Decimal(repr(float(est[i])))
            assert low[i] == pytest.approx(float(max(e - t, Decimal(0))), abs=1e-14)
            assert high[i] == pytest.approx(float(min(e + t, Decimal(1))), abs=1e-14)


@pytest.mark.parametrize("bad", [{"variance": "exact"}, {"variance": "Bound"},
                                 {"confidence": 1.0}, {"confidence": 0.0},
                                 {"confidence": 95}])
def test_bad_options_raise_naming_the_argument(bad):
    """A variance not in ('adaptive', 'bound') or a confidence outside (0, 1) is an error
    naming the argument, never an interval. Kills mutants 'variance not validated' and
    'confidence not validated'."""
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        ustatistic_bernstein_interval(0.7, 20, 30, **bad)


def _least_k(gap, sigma2, confidence):
    """Smallest k with t(k) < |gap|, t solving k t^2 = L (2 sigma2 + 2 t / 3), in Decimal."""
    with localcontext() as c:
        c.prec = PREC
        L, g, s2 = _L(confidence), abs(Decimal(repr(gap))), Decimal(repr(sigma2))
        # t(k) < g  <=>  k g^2 > L (2 s2 + 2 g / 3)
        bound = L * (2 * s2 + 2 * g / 3) / (g * g)
        k = int(bound.to_integral_value(rounding="ROUND_FLOOR")) + 1
        assert k * g * g > L * (2 * s2 + 2 * g / 3) >= (k - 1) * g * g
        return k


@pytest.mark.parametrize("gap, sigma2, confidence", [
    (0.05, 0.25, 0.95), (-0.05, 0.25, 0.95), (0.01, 0.0, 0.95), (0.2, 0.0, 0.99),
    (0.003, 0.01, 0.9), (0.9, 0.25, 0.5), (0.5, 1e-9, 0.95)])
def test_min_samples_is_the_least_k_resolving_the_gap(gap, sigma2, confidence):
    """ustatistic_min_samples is the least k whose Bernstein half-width is below |gap|,
    including sigma2 = 0 (a kernel of no variance, documented as allowed). Kills mutant
    'sigma2=0 rejected'."""
    assert ustatistic_min_samples(gap, sigma2=sigma2, confidence=confidence) == \
        _least_k(gap, sigma2, confidence)


def test_min_samples_rejects_zero_gap_and_large_sigma2():
    with pytest.raises(ValueError, match="gap"):
        ustatistic_min_samples(0.0)
    with pytest.raises(ValueError, match="sigma2"):
        ustatistic_min_samples(0.1, sigma2=0.2500001)
    with pytest.raises(ValueError, match="sigma2"):
        ustatistic_min_samples(0.1, sigma2=-0.01)


# ----------------------------------------------------------------- exact sums' rationals

def _weighted_delong_variance(x, wx, y, wy):
    """DeLong's variance of P(X > Y) + P(X = Y) / 2 with frequency weights, in Fractions (the
    suite's reference, tests/_paired_ref.py; the same as on the rows replicated by their whole
    weights)."""
    parts = delong_parts(list(x), list(x), [Fraction(int(v)) for v in wx],
                         list(y), list(y), [Fraction(int(v)) for v in wy])
    return parts["var_a"], parts["theta_a"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_variance_is_delong_on_replicated_rows(seed):
    """exact_variance from the weighted placement sums (weights whole, including 0) is
    DeLong's variance of the rows replicated by their weights, to the last bit (Fractions);
    heavy ties (3 score levels)."""
    rng = np.random.default_rng(seed)
    x, y = rng.integers(0, 3, 6), rng.integers(0, 3, 5)
    wx, wy = rng.integers(0, 4, 6), rng.integers(0, 4, 5)
    wx[0], wy[0] = 3, 2
    W_x, W_y = sum(map(int, wx)), sum(map(int, wy))

    def place(a, others, weights):  # weight of others below a, plus half at a
        return sum(Fraction(int(w)) * (1 if b < a else Fraction(1, 2) if b == a else 0)
                   for b, w in zip(others, weights))
    px = [place(a, y, wy) for a in x]
    qy = [W_x - place(b, x, wx) for b in y]  # weight of X above b, plus half at b
    u = sum(int(w) * p for w, p in zip(wx, px))
    sq_x = sum(int(w) * p * p for w, p in zip(wx, px))
    sq_y = sum(int(w) * q * q for w, q in zip(wy, qy))
    assert exact_variance(u, sq_x, sq_y, W_x, W_y) == _weighted_delong_variance(x, wx, y, wy)[0]


def test_exact_variance_none_where_a_sample_weighs_at_most_one():
    assert exact_variance(1, 1, 1, 1, 5) is None
    assert exact_variance(1, 1, 1, 5, Fraction(1, 2)) is None
    assert exact_variance(0, 0, 0, 0, 5) is None
    # just above one is a variance (a weight of 3/2 is a frequency weight's fraction)
    assert exact_variance(Fraction(3, 4), Fraction(3, 8), Fraction(3, 8), Fraction(3, 2),
                          1) is None
    assert exact_variance(2, 2, 2, 2, 2) is not None


# ----------------------------------------------------------------- the membership walk

def _walk_data():
    y = np.array([1, 0, 0, 1, 1, 0, 0, 1, 0, 0], bool)  # (4 positives, 6 negatives)
    s = np.array([0.3, 0.3, 0.1, 0.9, 0.3, 0.9, 0.5, 0.1, 0.3, 0.5])
    groups = np.zeros((10, 4), bool)
    groups[[0, 1, 2, 3], 0] = True           # mixed
    groups[[1, 2, 5, 6, 8], 1] = True        # negatives only (one-class cell)
    groups[:, 3] = True                      # every row; group 2 is empty
    w = np.array([1 + 2.0 ** -40, 0.0, 3e6, 2.0 ** -30, 7.0, 0.5, 1e-7, 2.0, 0.0, 11.0])
    return s, y, groups, w


@pytest.mark.parametrize("weighted", [False, True])
def test_member_walk_cells_totals_codes_and_weights(weighted):
    """The walk's class totals are (negatives' weight, positives' weight), its cells (k, 2)
    each subgroup's (negative, positive) weight, every membership appears once, in score
    order, with code 2 g + label and its row's weight unrounded (weights 0, 1 + 2**-40, 3e6,
    1e-7); empty and one-class subgroups included. Hand counts in Fractions."""
    s, y, groups, w = _walk_data()
    m = prepare_memberships_dense(y, groups, [f"g{j}" for j in range(4)])
    walk = member_walk(SortedScores(s, m), w if weighted else None)
    ww = w if weighted else np.ones(10)
    F = [Fraction(float(v)) for v in ww]
    assert walk.class_totals == (float(sum(F[i] for i in range(10) if not y[i])),
                                 float(sum(F[i] for i in range(10) if y[i])))
    for g in range(4):
        neg = sum((F[i] for i in range(10) if groups[i, g] and not y[i]), Fraction(0))
        pos = sum((F[i] for i in range(10) if groups[i, g] and y[i]), Fraction(0))
        assert walk.cells[g, 0] == float(neg) and walk.cells[g, 1] == float(pos), g
    # memberships: sorted by score (keys non-decreasing), each (code, weight, score) once
    assert np.all(np.diff(walk.keys.astype(np.uint64).astype(object)) >= 0) if len(walk.keys) > 1 else True
    expected = sorted((float(s[i]), 2 * g + int(y[i]), float(ww[i]))
                      for i in range(10) for g in range(4) if groups[i, g])
    order = np.argsort(s, kind="stable")
    key_of = {}
    for i in order:  # the walk's key of each distinct score: ranks agree with the scores'
        key_of.setdefault(float(s[i]), None)
    keys_sorted = sorted(set(walk.keys.tolist()))
    rank = {v: r for r, v in enumerate(sorted(key_of))}
    got = sorted((sorted(key_of)[keys_sorted.index(k)], int(c),
                  float(walk.weights[j]) if weighted else 1.0)
                 for j, (k, c) in enumerate(zip(walk.keys.tolist(), walk.codes.tolist())))
    assert len(keys_sorted) == len(rank)
    assert got == expected


def test_read_ratio_by_hand():
    """read_ratio: max cumulative[j + 1] / weight over rows of positive weight, 1 where none
    (zero-weight rows skipped), rows read through ``rows`` in their order."""
    w = np.array([0.0, 1.0, 3.0, 0.0, 1e-6])
    assert read_ratio(w, np.array([0, 1, 2]), np.array([0.0, 0.0, 1.0, 4.0])) == 4.0 / 3.0
    assert read_ratio(w, np.array([2, 1, 0]), np.array([0.0, 3.0, 4.0, 4.0])) == 4.0
    assert read_ratio(w, np.array([0, 3]), np.array([0.0, 0.0, 0.0])) == 1.0
    assert read_ratio(w, np.array([2, 4]), np.array([0.0, 3.0, 3.000001])) == 3.000001 / 1e-6
    assert read_ratio(w, np.array([4, 2]), np.array([0.0, 1e-6, 3.000001])) == 3.000001 / 3.0
    assert read_ratio(w, np.array([], dtype=np.int64), np.array([0.0])) == 1.0


def test_walk_read_ratios_are_the_hand_ratios_of_each_class():
    """A weighted walk's read_ratios() are (negatives', positives') read_ratio in score order
    of each class: worked out by hand from the weights sorted by score (ties in row order of
    the sort do not matter where tied rows weigh the same)."""
    y = np.array([0, 0, 0, 1, 1, 1], bool)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    w = np.array([4.0, 0.0, 1.0, 0.5, 2.0, 8.0])
    m = prepare_memberships_dense(y, np.ones((6, 1), bool), ["all"])
    walk = member_walk(SortedScores(s, m), w)
    # negatives: cum 4, 4, 5 over weights 4, 0, 1 -> max(1, 5); positives: 0.5, 2.5, 10.5
    assert walk.read_ratios() == (5.0, max(1.0, 2.5 / 2.0, 10.5 / 8.0))


# ----------------------------------------------------------------- chunks joined out of core

@pytest.mark.parametrize("bucket_rows", [7, 30])
def test_streamed_overall_auc_se_under_exclude_with_scaled_weights(tmp_path, bucket_rows):
    """Streamed, missing_subgroup='exclude', whole weights 0..40 (scale 32: the chunks see
    them divided by it), heavy ties: the overall AUC's DeLong standard error (attrs, joined from
    each chunk's all-rows sums) is DeLong's on all rows in Fractions. Kills mutant 'all-rows
    sums not rescaled' (chunked._all_rows_sums)."""
    import math

    import pandas as pd

    from fastbias.streaming import evaluate_csv
    rng = np.random.default_rng(5)
    n = 90
    y = rng.random(n) < 0.4
    y[:2] = [True, False]
    s = np.round(rng.integers(0, 6, n) / 5 + 0.2 * y, 6)
    w = rng.integers(0, 41, n).astype(float)
    w[0] = 40.0
    g = (rng.random(n) < 0.4).astype(float)
    g[rng.random(n) < 0.15] = np.nan
    g[:2] = [1.0, 0.0]
    pd.DataFrame({"y": y.astype(int), "s": s, "w": w, "g": g}).to_csv(tmp_path / "d.csv",
                                                                       index=False)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=["g"],
                             sample_weight="w", ci="delong", missing_subgroup="exclude",
                             bucket_rows=bucket_rows).for_model()
    var, _ = _weighted_delong_variance(s[y], w[y], s[~y], w[~y])
    assert table.attrs["overall_auc_se"] == pytest.approx(math.sqrt(var), rel=1e-12)
