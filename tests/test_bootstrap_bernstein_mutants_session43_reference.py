"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/intervals/bootstrap.py (the Poisson bootstrap) and fastbias/intervals/bernstein.py
(Ethayarajh 2020's Bernstein-bounded unfairness). 61 hand mutants were run against the tests
that exercise the two modules: 33 killed there, 28 lived; the tests here kill 20 of them
(each checked to fail with its mutant; the docstrings name them), 6 were equivalent and 2
unreachable from any public entry point. Three tests pin defects the audit found and that
are fixed (bernstein.py at the ends of float64): a delta needing more examples than int64
holds gave a negative count; a delta of 1e308 failed naming an ``n`` never given; a
half-width of inf for n near 1e307.

Expected values come from references written independently of fastbias: the Poisson
bootstrap's replicates from the words of docs/intervals.md (SplitMix64 counts inverted
through the Poisson(1) CDF in 60-digit decimals, one key per child of the SeedSequence,
brute-force weighted pair counts: the reference of tests/test_bootstrap_reference.py,
imported, not copied), exact ratios with fractions.Fraction, Bernstein's bound solved with
brentq (tests/test_metrics_intervals_mutants_session35_reference.py's) and in 80-digit
decimals.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import fastbias

from .test_bootstrap_reference import (
    assert_matches,
    data,
    quiet_bias_metrics,
    ref_counts,
    ref_key,
    ref_table,
)
from .test_metrics_intervals_mutants_session35_reference import _bernstein_t

# ---------------------------------------------------------------------------------------
# bootstrap.py: random_state
# ---------------------------------------------------------------------------------------


def test_child_seed_sequence_random_state_keeps_its_spawn_key():
    """Kills B3 (the copy of a SeedSequence given as random_state drops its spawn_key).
    A child SeedSequence (spawn_key (2,)) must give the replicates of its own children
    (spawn keys (2, b)), as docs/intervals.md says ("its children 0..n_boot-1"); the mutant
    gave those of the root SeedSequence(11)."""
    y, s, g = data(120, seed=31)
    given = np.random.SeedSequence(11).spawn(3)[2]
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=8, random_state=given)
    fresh = np.random.SeedSequence(11).spawn(3)[2]  # (an identical child, made anew)
    ref, attrs, _ = ref_table(y, s, g, n_boot=8, random_state=fresh)
    assert_matches(t, ref, attrs)


def test_seed_sequence_random_state_keeps_its_pool_size():
    """Kills B4 (the copy of a SeedSequence drops its pool_size: a SeedSequence(11,
    pool_size=8) was resampled as SeedSequence(11), pool_size 4, other replicates)."""
    y, s, g = data(120, seed=32)
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=8,
                           random_state=np.random.SeedSequence(11, pool_size=8))
    ref, attrs, _ = ref_table(y, s, g, n_boot=8,
                              random_state=np.random.SeedSequence(11, pool_size=8))
    assert_matches(t, ref, attrs)


@pytest.mark.parametrize("seed", [0, 4])
def test_generator_random_state_is_one_draw_below_2_63(seed):
    """Kills B5 (the Generator is drawn from in [0, 2**62), not [0, 2**63)) and B31 (the
    Generator ignored). docs/intervals.md: "A numpy Generator is drawn from once per call
    (one integer in [0, 2**63) seeds the SeedSequence)"."""
    y, s, g = data(120, seed=33)
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=8,
                           random_state=np.random.default_rng(seed))
    entropy = int(np.random.default_rng(seed).integers(0, 2 ** 63))
    ref, attrs, _ = ref_table(y, s, g, n_boot=8, random_state=np.random.SeedSequence(entropy))
    assert_matches(t, ref, attrs)


# ---------------------------------------------------------------------------------------
# bootstrap.py: the replicates' values
# ---------------------------------------------------------------------------------------


def _memberships(y, groups):
    from fastbias.prepare.memberships import prepare_subgroups
    return prepare_subgroups(np.asarray(y).astype(np.int8), groups, None)


def test_unweighted_replicate_metrics_are_exact_ratios_correctly_rounded():
    """Pins B11 (an unweighted bootstrap's metrics from float ratios; judged equivalent, as
    counts below 2**53 give the same correctly rounded ratios). docs/intervals.md: without sample weights "every metric of the
    replicate is its exact ratio, correctly rounded". Reference: each replicate's integer
    counts (SplitMix64 / Poisson(1) from the docs) as weights of brute_force_metrics, whose
    values are exact Fractions rounded once; compared with ==."""
    from fastbias.intervals import bootstrap_replicates
    y, s, g = data(90, seed=34, ties=False)
    got = bootstrap_replicates(s, _memberships(y, g), None, n_boot=12, random_state=3)
    seeds = np.random.SeedSequence(3).spawn(12)
    mismatches = []
    for b, child in enumerate(seeds):
        w = ref_counts(ref_key(child), len(y)).astype(np.float64)
        for j, (name, member) in enumerate(g.items()):
            ref = _brute(y, s, member, w)
            for metric, value in ref.items():
                v = got.metrics[metric][b, j]
                if not (v == value or (np.isnan(v) and np.isnan(value))):
                    mismatches.append((b, name, metric, v, value))
    assert not mismatches, mismatches[:5]


def _brute(y, s, member, w):
    from .reference import brute_force_metrics
    return brute_force_metrics(y, s, member, w)


def test_replicate_without_one_class_has_nan_overall_auc_and_no_numpy_warning():
    """Kills B14 (the overall AUC divided where the class totals' product is 0: numpy's
    "invalid value encountered in divide" RuntimeWarning). With 2 positives among 60 rows,
    some replicates draw neither (reference counts); their overall AUC is NaN, and no numpy
    warning may escape (only fastbias' own UndefinedMetricWarning)."""
    from fastbias.intervals import bootstrap_replicates
    rng = np.random.default_rng(35)
    y = np.zeros(60, bool)
    y[[7, 40]] = True
    s = rng.random(60)
    g = {"a": rng.random(60) < 0.5}
    seeds = np.random.SeedSequence(8).spawn(20)
    no_pos = [b for b, c in enumerate(seeds) if ref_counts(ref_key(c), 60)[[7, 40]].sum() == 0]
    assert no_pos  # (the data are chosen so that some replicate has no positive)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = bootstrap_replicates(s, _memberships(y, g), None, n_boot=20, random_state=8)
    assert np.isnan(got.overall_auc[no_pos]).all()
    numpy_words = [str(w.message) for w in rec if "invalid value encountered" in str(w.message)]
    assert not numpy_words, numpy_words


def test_interval_of_a_single_defined_replicate_is_nan():
    """Kills B17 (an interval made from one finite replicate: low = high = that value).
    docs/intervals.md: "Replicates where a metric is undefined are left out of its interval
    (fewer than 2 left: NaN)". The subgroup is one positive and one negative row; the seed
    is chosen (reference counts) so that exactly one of 4 replicates keeps both."""
    y, s, g = data(100, seed=37)
    pos, neg = np.flatnonzero(y)[0], np.flatnonzero(~y)[0]
    two = np.zeros(100, bool)
    two[[pos, neg]] = True
    for seed in range(200):
        kids = np.random.SeedSequence(seed).spawn(4)
        both = [b for b, c in enumerate(kids)
                if (ref_counts(ref_key(c), 100)[[pos, neg]] > 0).all()]
        if len(both) == 1:
            break
    else:
        raise AssertionError("no seed found")
    t = quiet_bias_metrics(y, s, {"two": two}, ci="bootstrap", n_boot=4, random_state=seed)
    for col in ("subgroup_auc_low", "subgroup_auc_high", "subgroup_auc_se"):
        assert np.isnan(t.loc["two", col]), (col, t.loc["two", col])


def test_weighted_replicates_of_weights_near_the_float_limit_recounted_at_scale():
    """Kills B27 (a subgroup the walk cannot certify recounted from its cells with the
    weights unscaled: products of 1e300 weights overflow, the replicate's metrics NaN).
    Weights 1e200, four subgroup rows 1e300 (a spread of 1e100, accepted): every
    replicate's five metrics equal brute_force_metrics of its weights (exact Fractions)."""
    from fastbias.intervals import bootstrap_replicates
    from fastbias.intervals.bootstrap import replicate_weights
    rng = np.random.default_rng(1)
    n = 60
    y = rng.random(n) < 0.5
    s = rng.integers(0, 8, n) / 8.0
    g = {"a": rng.random(n) < 0.3}
    base = np.full(n, 1e200)
    base[np.flatnonzero(g["a"] & ~y)[:2]] = 1e300
    base[np.flatnonzero(g["a"] & y)[:2]] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reps = bootstrap_replicates(s, _memberships(y, g), base, n_boot=8, random_state=0)
    for b in range(8):
        w = ref_counts(ref_key(np.random.SeedSequence(0).spawn(8)[b]), n) * base
        np.testing.assert_array_equal(w, replicate_weights(reps.seeds[b], base))
        ref = _brute(y, s, g["a"], w)
        for metric, value in ref.items():
            np.testing.assert_allclose(reps.metrics[metric][b, 0], value, rtol=1e-12,
                                       atol=1e-14, equal_nan=True, err_msg=f"{b} {metric}")


# ---------------------------------------------------------------------------------------
# bootstrap.py: the memory bound
# ---------------------------------------------------------------------------------------


def test_memory_bound_refuses_between_2_and_8_gib():
    """Kills B24 (the bound 4 x 2 GiB). docs: a replicate keeps about 1.5 KB of seed and 7
    counts x 8 bytes x 3 copies a subgroup; at most 2 GiB. 2,000,000 replicates of one
    subgroup keep 2e6 x 1,668 bytes = 3.1 GiB: refused before any is drawn."""
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    with pytest.raises(ValueError, match=r"n_boot=2,000,000 replicates of 1 subgroup would keep "
                                         r"about 3\.1 GiB"):
        check_bootstrap_memory(2_000_000, 1)
    y, s, g = data(60, seed=38)
    with pytest.raises(ValueError, match="n_boot"):  # (the mutant runs this one 4 x too long)
        quiet_bias_metrics(y, s, {"a": g["a"]}, ci="bootstrap", n_boot=10_000_000,
                           random_state=0)


def test_memory_bound_message_counts_replicates_of_many_subgroups():
    """Kills B25 (a subgroup's share counted once, not three copies). 200 subgroups: a
    replicate keeps 1,500 + 200 x 7 x 8 x 3 = 35,100 bytes; 2 GiB hold 61,181 of them, so
    100,000 replicates are refused (the mutant's 12,700 bytes let them run) and the message
    says 61,181."""
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    per = 1_500 + 200 * 7 * 8 * 3
    most = 2 ** 31 // per
    assert most == 61_181
    with pytest.raises(ValueError, match=r"n_boot=100,000 .* 61,181 replicates here"):
        check_bootstrap_memory(100_000, 200)
    check_bootstrap_memory(most, 200)  # (at the bound: accepted)


def test_memory_message_says_subgroup_in_the_singular_for_one():
    """Kills B32 (the message's plural flipped: "1 subgroups")."""
    from fastbias.intervals.bootstrap import check_bootstrap_memory
    with pytest.raises(ValueError, match=r"n_boot=2,000,000 replicates of 1 subgroup would"):
        check_bootstrap_memory(2_000_000, 1)
    with pytest.raises(ValueError, match=r"replicates of 3 subgroups would"):
        check_bootstrap_memory(2_000_000, 3)


def test_models_at_once_keeps_the_replicates_of_all_models_within_2_gib():
    """Kills B26 (models_at_once ignored memory: as many models at once as threads).
    50,000 replicates of 200 subgroups keep 50,000 x 35,100 bytes = 1.63 GiB: one model at
    a time; 1,000 of them (33 MiB): all 8 threads."""
    from fastbias.intervals.bootstrap import models_at_once
    per = 1_500 + 200 * 7 * 8 * 3
    assert models_at_once(50_000, 200, 8) == max(1, min(8, 2 ** 31 // (50_000 * per))) == 1
    assert models_at_once(1_000, 200, 8) == 8
    assert models_at_once(20_000, 200, 8) == 2 ** 31 // (20_000 * per) == 3


# ---------------------------------------------------------------------------------------
# bernstein.py
# ---------------------------------------------------------------------------------------


def test_halfwidth_names_the_position_of_a_fractional_n():
    """Kills N5 (the position of a fractional n off by one). The rule: an error names the
    bad value and its position: [10, 2.5, 7] -> 2.5 at position 1 (0-based, as every other
    position fastbias reports, e.g. bernstein_interval's cost)."""
    with pytest.raises(ValueError, match=r"whole numbers of examples, got 2\.5 at position 1$"):
        fastbias.bernstein_halfwidth([10, 2.5, 7], sigma2=1.0, gamma=0.5)


def test_halfwidth_with_zero_variance():
    """Kills N6 (sigma2 = 0 refused; documented: "variance at most sigma2", sigma2 >= 0).
    With sigma2 = 0 the bound is 2 exp(-3 gamma n t / (2 C)) = 1 - confidence, so
    t = 2 C L / (3 gamma n): here 2 * log(40) / (3 * 0.5 * 100)."""
    t = fastbias.bernstein_halfwidth(100, sigma2=0, gamma=0.5)
    assert t == pytest.approx(2.0 * math.log(40.0) / 150.0, rel=1e-14)
    assert t == pytest.approx(_bernstein_t(100, 0.0, 1.0, 0.5, 0.95), rel=1e-12)


@pytest.mark.parametrize("name", ["sigma2", "max_cost", "gamma"])
def test_halfwidth_refuses_infinite_parameters(name):
    """Kills N7 (inf accepted as sigma2: t = inf, silently): each parameter must be finite,
    a ValueError naming it."""
    kwargs = dict(sigma2=1.0, max_cost=1.0, gamma=0.5)
    kwargs[name] = float("inf")
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        fastbias.bernstein_halfwidth(100, **kwargs)


@pytest.mark.parametrize("gamma", [1.0000001, 1.25, 1.5])
def test_halfwidth_refuses_gamma_above_one(gamma):
    """Kills N8 (gamma up to 1.5 accepted): gamma is a frequency, in (0, 1]."""
    with pytest.raises(ValueError, match="gamma is a group frequency"):
        fastbias.bernstein_halfwidth(100, sigma2=1.0, gamma=gamma)
    assert fastbias.bernstein_halfwidth(100, sigma2=1.0, gamma=1.0) == pytest.approx(
        _bernstein_t(100, 1.0, 1.0, 1.0, 0.95), rel=1e-12)


def test_halfwidth_refuses_a_list_of_one_sigma2():
    """Kills N9 (sigma2=[4] accepted as 4): one number, a TypeError naming it."""
    with pytest.raises(TypeError, match="sigma2 must be one number"):
        fastbias.bernstein_halfwidth(100, sigma2=[4.0], gamma=0.5)


def test_min_samples_of_a_gap_wider_than_one_example_is_one():
    """Kills N13 (the least n may step below 1). delta = 10, sigma2 = 0.01, gamma = 1: one
    example already has t(1) = 2.49 < 10, so the answer is 1 (n* = 0.246)."""
    assert _bernstein_t(1, 0.01, 1.0, 1.0, 0.95) < 10
    assert fastbias.bernstein_min_samples(10.0, sigma2=0.01, gamma=1.0) == 1
    np.testing.assert_array_equal(
        fastbias.bernstein_min_samples(np.array([10.0, 0.05]), sigma2=0.01, gamma=1.0),
        [1, _least_n(0.05, 0.01, 1.0, 1.0)])


def _least_n(delta, sigma2, c, gamma) -> int:
    n = 1
    while _bernstein_t(n, sigma2, c, gamma, 0.95) >= delta:
        n += 1
    return n


@pytest.mark.parametrize("bad,pos", [(-0.25, 2), (float("nan"), 1), (float("inf"), 3)])
def test_bernstein_interval_refuses_cost_outside_range_with_position(bad, pos):
    """Kills N18 (a negative cost accepted), N19 (NaN cost accepted: NaN estimate) and N20
    (the position off by one): cost must lie in [0, max_cost]; the message names the value
    and its 0-based position."""
    cost = np.array([0.5, 0.0, 1.0, 0.2])
    cost[pos] = bad
    with pytest.raises(ValueError, match=rf"cost must lie in \[0, max_cost=1.0\]: 1 value\(s\) "
                                         rf"outside, e\.g\. {bad!r} at position {pos}$"):
        fastbias.bernstein_interval(cost, [1, 1, -1, -1])


def test_bernstein_interval_refuses_the_same_group_for_a_and_b():
    """Kills N21 (group_a == group_b not named: the error spoke of n_A = 0)."""
    with pytest.raises(ValueError, match="group_a and group_b must differ, got 1 for both"):
        fastbias.bernstein_interval([0.5, 0.2, 0.1], [1, 1, -1], group_a=1, group_b=1)


def test_excludes_zero_is_false_when_zero_is_an_end():
    """Kills N22 (0 at an end of [low, high] counted as excluded): excludes_zero is "0
    outside [low, high]", a closed interval."""
    from fastbias.intervals.bernstein import BernsteinInterval
    base = dict(estimate=0.1, halfwidth=0.1, sigma2=1.0, gamma=0.5, n=10, n_a=5, n_b=5,
                max_cost=1.0, confidence=0.95, amortized=np.zeros(10))
    assert not BernsteinInterval(low=0.0, high=0.2, **base).excludes_zero
    assert not BernsteinInterval(low=-0.2, high=0.0, **base).excludes_zero
    assert BernsteinInterval(low=1e-300, high=0.2, **base).excludes_zero


def test_halfwidth_of_a_scalar_n_is_a_python_float():
    """Kills N23 (a scalar n gave a 0-d ndarray): documented "float or ndarray, with the
    shape of n"."""
    t = fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5)
    assert type(t) is float
    assert t == pytest.approx(_bernstein_t(3160, 4.0, 1.0, 0.5, 0.95), rel=1e-12)
    arr = fastbias.bernstein_halfwidth(np.array([3160]), sigma2=4, gamma=0.5)
    assert isinstance(arr, np.ndarray) and arr.shape == (1,)


def test_bernstein_interval_of_boolean_costs():
    """Kills N27 (boolean costs refused as non-numeric): a 0/1 cost as bools is the same
    interval as as floats. Reference: the amortized disparity by hand, t by brentq."""
    cost = np.array([True, False, True, True, False, False, True, False])
    group = np.array([1, 1, 1, -1, -1, -1, 0, 0])
    res = fastbias.bernstein_interval(cost, group)
    n, ga, gb = 8, Fraction(3, 8), Fraction(3, 8)
    z = [Fraction(int(c)) / ga if g == 1 else (-Fraction(int(c)) / gb if g == -1 else 0)
         for c, g in zip(cost, group)]
    mean = sum(z) / n
    var = sum((v - mean) ** 2 for v in z) / (n - 1)
    assert res.estimate == float(mean) == pytest.approx(Fraction(2, 3) - Fraction(1, 3))
    assert res.sigma2 == pytest.approx(float(var), rel=1e-14)
    assert res.halfwidth == pytest.approx(_bernstein_t(n, float(var), 1.0, 0.375, 0.95), rel=1e-12)


# ---------------------------------------------------------------------------------------
# bernstein.py at the ends of float64 (defects found by the audit, fixed)
# ---------------------------------------------------------------------------------------


def _exact_n_star(delta, sigma2, c, gamma, confidence=0.95):
    """n* = L (2 sigma2 + 2 C |delta| / (3 gamma)) / delta^2 in 80-digit decimals, the float
    inputs taken exactly."""
    from decimal import Decimal, localcontext
    with localcontext() as context:
        context.prec = 80
        L = (Decimal(2) / (1 - Decimal(confidence))).ln()
        d = Decimal(abs(delta))
        return L * (2 * Decimal(sigma2) + 2 * Decimal(c) * d / (3 * Decimal(gamma))) / (d * d)


def test_min_samples_needing_2_53_examples_or_more_is_refused_naming_delta():
    """Was a defect: bernstein_min_samples(1e-10, sigma2=4, gamma=0.5) returned
    -9223372036854775808 (a float n of 2.95e21 cast to int64, with only numpy's "invalid
    value encountered in cast"), silently a negative number of examples. n* (80-digit
    decimals) is 2.95e21; past 2**53 whole numbers are no longer exact in float64, so the
    docstring refuses such a delta: a ValueError naming it (and its position in an array)."""
    assert _exact_n_star(1e-10, 4.0, 1.0, 0.5) > 2 ** 63
    assert 2 ** 53 < _exact_n_star(1e-8, 4.0, 1.0, 0.5) < 2 ** 63
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^delta=1e-10 needs about 2\.95e\+21 examples"):
            fastbias.bernstein_min_samples(1e-10, sigma2=4, gamma=0.5)
        with pytest.raises(ValueError, match=r"^delta=1e-08 needs about 2\.95e\+17 examples"):
            fastbias.bernstein_min_samples(1e-8, sigma2=4, gamma=0.5)
        with pytest.raises(ValueError, match=r"^delta=-1e-10 at position 1 needs about"):
            fastbias.bernstein_min_samples(np.array([0.05, -1e-10]), sigma2=4, gamma=0.5)
        with pytest.raises(ValueError, match=r"^delta=5e-324 needs more than 1\.8e\+308"):
            fastbias.bernstein_min_samples(5e-324, sigma2=4, gamma=0.5)


def test_min_samples_near_3e15_is_the_exact_least_n():
    """Below 2**53 the answer is the smallest n whose float half-width is below |delta|;
    here, at 2.95e15 examples, that is also the exact one: n* = log(40) (8 + 4/3 1e-7) /
    1e-14 = 2,951,103,612,476,207.987 (80-digit decimals), so n = ...208."""
    n_star = _exact_n_star(1e-7, 4.0, 1.0, 0.5)
    assert int(n_star) + 1 == 2_951_103_612_476_208
    assert fastbias.bernstein_min_samples(1e-7, sigma2=4, gamma=0.5) == int(n_star) + 1


def test_min_samples_of_a_gap_near_the_float_limit_is_one():
    """Was a defect: a delta of 1e308 made delta**2 overflow and n* NaN, and the call failed
    with "n must be finite and positive, got nan", naming an n the caller never gave. One
    example's half-width (B + sqrt(B^2 + 8 sigma2 L)) / 2 = 8.4 is far below 1e308: n = 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fastbias.bernstein_min_samples(1e308, sigma2=4, gamma=0.5) == 1
        assert fastbias.bernstein_min_samples(-1e308, sigma2=4, max_cost=1e300, gamma=0.5) == 1


def test_halfwidth_of_a_huge_n_is_finite():
    """Was a defect: bernstein_halfwidth(1e307, sigma2=4, gamma=0.5) returned inf (8 n sigma2
    L overflowed; numpy's overflow RuntimeWarning only), though the half-width shrinks with
    n: t = (B + sqrt(B^2 + 8 n sigma2 L)) / (2 n) = 1.718e-153 (L = log 40, B = 4 L / 3),
    here in 80-digit decimals. With sigma2 = 0, t = B / n exactly as far as n goes."""
    from decimal import Decimal, localcontext
    with localcontext() as context:
        context.prec = 80
        L = (Decimal(2) / (1 - Decimal(0.95))).ln()
        b = 2 * L / (3 * Decimal(0.5))
        for n in (1e307, 1.7e308):
            expected = float((b + (b * b + 8 * Decimal(n) * 4 * L).sqrt()) / (2 * Decimal(n)))
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = fastbias.bernstein_halfwidth(n, sigma2=4, gamma=0.5)
                flat = fastbias.bernstein_halfwidth(n, sigma2=0, gamma=0.5)
            assert got == pytest.approx(expected, rel=1e-14)
            assert flat == pytest.approx(float(b / Decimal(n)), rel=1e-14)


def test_ustatistic_min_samples_names_its_own_argument():
    """ustatistic_min_samples is bernstein_min_samples with max_cost = gamma = 1 and its
    argument is ``gap``: its refusals name ``gap`` (they said ``|delta|``, an argument it
    does not have). n* = log(40) (2 / 4 + 2 gap / 3) / gap^2 is 1.84e16 for a gap of 1e-8."""
    assert 2 ** 53 < _exact_n_star(1e-8, 0.25, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"^gap=1e-08 needs about 1\.84e\+16 examples"):
        fastbias.ustatistic_min_samples(1e-8)
    with pytest.raises(ValueError, match=r"^gap=-1e-09 at position 1 needs about"):
        fastbias.ustatistic_min_samples([0.1, -1e-9])
    with pytest.raises(ValueError, match=r"^\|gap\| must be finite and positive, got 0\.0$"):
        fastbias.ustatistic_min_samples(0.0)
    assert fastbias.ustatistic_min_samples(0.05) == int(_exact_n_star(0.05, 0.25, 1.0, 1.0)) + 1
