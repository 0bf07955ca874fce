"""A mutation audit of the first-call numpy tier's counts (``sweep/first_call.py``) and of a
first call's bootstrap replicates in numpy on threads (``intervals/bootstrap.py``), by an
independent reviewer (forty-fourth session): 54 hand mutants, 4 equivalent, 3 hidden by the
weighted counts' certification (an explicit recount), 1 not reachable within the tier's row
cap (an int32 prefix of draws past 2**31). The tests below check the counts against exact
pair counts in rationals (tests/reference.py) and the replicates' stop against a fake clock;
each names the mutants it kills."""
from __future__ import annotations

import numpy as np
import pytest

from fastbias.intervals import bootstrap
from fastbias.metrics.table import metrics_from_counts, overall_auc_from_counts
from fastbias.prepare.memberships import prepare_subgroups
from fastbias.sweep import _kernels as K
from fastbias.sweep import first_call
from fastbias.sweep.first_call import (
    CountsPlan,
    WeightedCountsPlan,
    counts_and_plan,
    counts_in_numpy,
    weighted_counts_in_numpy,
)

from .reference import brute_force_metrics, pair_fraction

# (column, x cell, y cell): twice the U of x over y; cells: sn, sp, bn, bp
_U_CELLS = ((K.TWICE_SUBGROUP_U, "sp", "sn"), (K.TWICE_BPSN_U, "bp", "sn"),
            (K.TWICE_BNSP_U, "sp", "bn"), (K.TWICE_NEG_BG_ABOVE_U, "bn", "sn"),
            (K.TWICE_POS_BG_ABOVE_U, "bp", "sp"))


def _twice_u(s, x, y, d):
    """Twice the U of rows x over rows y, each row counted d[row] times (exact integer)."""
    pairs = pair_fraction(s[x], s[y], d[x], d[y])
    total = int(d[x].sum()) * int(d[y].sum())
    return 0 if pairs is None else int(pairs * 2 * total)


def _reference_counts(y, s, groups, d):
    k = groups.shape[1]
    out = np.zeros((k, K.N_COUNT_COLUMNS), dtype=object)
    for g in range(k):
        member = groups[:, g]
        cells = {"sn": member & ~y, "sp": member & y, "bn": ~member & ~y, "bp": ~member & y}
        out[g, K.CELL_SUBGROUP_NEG] = int(d[cells["sn"]].sum())
        out[g, K.CELL_SUBGROUP_POS] = int(d[cells["sp"]].sum())
        for col, x, z in _U_CELLS:
            out[g, col] = _twice_u(s, cells[x], cells[z], d)
    return out, int(d[~y].sum()), int(d[y].sum()), _twice_u(s, y, ~y, d)


def _data(seed, n=70, k=6, levels=5):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = rng.integers(0, levels, n) / levels  # heavy ties
    groups = rng.random((n, k)) < 0.35
    groups[:, 1] = False  # an empty subgroup in the middle
    groups[:, 2] = groups[:, 2] & y  # positives only
    groups[:, 3] = groups[:, 3] & ~y  # negatives only
    groups[:, -1] = False  # an empty subgroup at the end
    return y, s, groups


def _assert_counts(sc, y, s, groups, d):
    expected, tn, tp, tu = _reference_counts(y, s, groups, d)
    assert sc.counts.dtype == np.int64
    assert [[int(v) for v in row] for row in sc.counts] == [[int(v) for v in row]
                                                            for row in expected]
    assert (int(sc.total_neg), int(sc.total_pos), int(sc.twice_overall_u)) == (tn, tp, tu)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unweighted_numpy_counts_and_plan_are_the_exact_pair_counts(seed):
    """counts_in_numpy and CountsPlan (no draws) against brute-force exact pair counts, with
    heavy ties, empty subgroups (middle and last) and one-class subgroups. Kills the
    class-swap, side, minlength, reduceat-empty, bounds, unsorted-negatives mutants."""
    y, s, groups = _data(seed)
    m = prepare_subgroups(y, groups, compiled=False)
    ones = np.ones(y.size, dtype=np.int64)
    _assert_counts(counts_in_numpy(s, m), y, s, groups, ones)
    _assert_counts(CountsPlan(s, m).counts(), y, s, groups, ones)
    for keep in (False, True):
        sc, plan = counts_and_plan(s, m, keep=keep)
        _assert_counts(sc, y, s, groups, ones)
        assert (plan is not None) == keep


@pytest.mark.parametrize("seed", [3, 4])
def test_plan_counts_with_draws_including_zeros_and_255(seed):
    """CountsPlan.counts(draws): each row counted draws[row] times, rows drawn 0 times left out,
    against exact pair counts; the draws reach 255 (uint8's largest)."""
    y, s, groups = _data(seed)
    m = prepare_subgroups(y, groups, compiled=False)
    rng = np.random.default_rng(seed + 100)
    draws = rng.choice(np.array([0, 0, 1, 2, 3, 255], dtype=np.uint8), y.size)
    _assert_counts(CountsPlan(s, m).counts(draws), y, s, groups, draws.astype(np.int64))
    # every row drawn 0 times: all counts 0
    sc = CountsPlan(s, m).counts(np.zeros(y.size, dtype=np.uint8))
    assert not sc.counts.any() and (sc.total_neg, sc.total_pos, sc.twice_overall_u) == (0, 0, 0)


def test_plan_refuses_draws_that_are_not_uint8():
    """Documented: draws must be uint8 of shape (n_rows,). (Kills the dropped dtype check:
    int64 draws of 300 would be counted silently.)"""
    y, s, groups = _data(5)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = CountsPlan(s, m)
    with pytest.raises(ValueError, match="uint8"):
        plan.counts(np.full(y.size, 300, dtype=np.int64))
    with pytest.raises(ValueError, match="shape"):
        plan.counts(np.ones(y.size - 1, dtype=np.uint8))


def _close(got, expected):
    """Within the tier's certified 2**-50 relative (with a margin), or 2**-70 absolute."""
    if np.isnan(expected):
        return np.isnan(got)
    return abs(got - expected) <= 2.0 ** -48 * abs(expected) + 2.0 ** -68


def _check_weighted(sc, y, s, groups, w):
    got = metrics_from_counts(sc)
    for g in range(groups.shape[1]):
        expected = brute_force_metrics(y, s, groups[:, g], w)
        for metric, value in expected.items():
            assert _close(got[metric][g], value), (g, metric, got[metric][g], value)
    overall = pair_fraction(s[y], s[~y], w[y], w[~y])
    expected = np.nan if overall is None else float(overall)
    assert _close(overall_auc_from_counts(sc), expected)


def _wide_weights(rng, n, scale):
    """Weights of overall scale ``scale`` spread over 1e-60..1e60 (within the documented
    2**480 spread), a fifth of them 0."""
    w = scale * 10.0 ** rng.uniform(-60, 60, n)
    w[rng.random(n) < 0.2] = 0.0
    return w


@pytest.mark.parametrize(("seed", "scale"), [(6, 1e-240), (7, 1.0), (8, 1e240)])
@pytest.mark.parametrize("chunk", [None, 1, 3])
def test_weighted_numpy_counts_against_exact_rationals(monkeypatch, seed, scale, chunk):
    """weighted_counts_in_numpy with weights of overall scale 1e-240..1e240 spread over 1e120, zero weights, heavy ties,
    empty and one-class subgroups, against exact rationals; with the prefix sums cut into
    chunks of 1 and 3 rows too (the carry and the rank boundaries between chunks)."""
    if chunk is not None:
        monkeypatch.setattr(first_call, "PREFIX_CHUNK_ROWS", chunk)
    rng = np.random.default_rng(seed)
    y, s, groups = _data(seed, n=60)
    w = _wide_weights(rng, y.size, scale)
    m = prepare_subgroups(y, groups, compiled=False)
    _check_weighted(weighted_counts_in_numpy(s, m, w), y, s, groups, w)


@pytest.mark.parametrize("chunk", [None, 2])
def test_weighted_with_moderate_weights_and_chunks(monkeypatch, chunk):
    """Weights of a few binary digits (sums exact in double-double): the weighted tier's
    metrics against exact rationals; chunks of 2 rows cross rank boundaries at ties."""
    if chunk is not None:
        monkeypatch.setattr(first_call, "PREFIX_CHUNK_ROWS", chunk)
    rng = np.random.default_rng(9)
    y, s, groups = _data(9, n=80, levels=4)
    w = rng.integers(0, 7, y.size) / 4.0
    m = prepare_subgroups(y, groups, compiled=False)
    _check_weighted(weighted_counts_in_numpy(s, m, w), y, s, groups, w)


def test_zero_weight_background_is_nan_not_a_residue():
    """A subgroup holding every positive of non-zero weight (the other positives weigh 0): its
    positive background has no weight, so BPSN AUC and positive AEG are NaN (the reference's
    None), even with weights of 1e230..1e300 whose class total minus the subgroup
    leaves a residue in double-double. Kills "zero-weight rows counted as weighted"."""
    rng = np.random.default_rng(11)
    n = 40
    y = np.arange(n) % 2 == 0
    s = rng.integers(0, 4, n) / 4
    w = 10.0 ** rng.uniform(230, 300, n)
    groups = np.zeros((n, 2), dtype=bool)
    groups[:, 0] = y | (np.arange(n) % 4 == 1)
    w[y & (np.arange(n) >= 30)] = 0.0
    groups[y & (np.arange(n) >= 30), 0] = False  # zero-weight positives in the background
    groups[:, 1] = ~y | (np.arange(n) < 10)
    w[~y & (np.arange(n) % 8 == 3)] = 0.0
    groups[~y & (np.arange(n) % 8 == 3), 1] = False  # zero-weight negatives in its background
    m = prepare_subgroups(y, groups, compiled=False)
    sc = weighted_counts_in_numpy(s, m, w)
    _check_weighted(sc, y, s, groups, w)
    got = metrics_from_counts(sc)
    assert np.isnan(got["bpsn_auc"][0]) and np.isnan(got["positive_aeg"][0])
    assert np.isnan(got["bnsp_auc"][1]) and np.isnan(got["negative_aeg"][1])


@pytest.mark.parametrize(("seed", "scale"), [(12, 1e-240), (13, 1e240)])
def test_weighted_replicate_counts_are_those_of_draws_times_weights(seed, scale):
    """WeightedCountsPlan.replicate_counts(draws) against exact rationals of draws * w (rows
    drawn 0 times weigh 0), with weights near 1e-300 or 1.7e308, and draws up to 255."""
    rng = np.random.default_rng(seed)
    y, s, groups = _data(seed, n=60)
    w = _wide_weights(rng, y.size, scale)
    w[:3] = 1.7e308 if scale > 1 else 1e-180  # near the largest double: 255 x it overflows unless scaled
    m = prepare_subgroups(y, groups, compiled=False)
    draws = rng.choice(np.array([0, 1, 1, 2, 255], dtype=np.uint8), y.size)
    plan = WeightedCountsPlan(s, m)
    scale = first_call.power_of_two_scale(w)
    sc = plan.replicate_counts(plan.weights_in_order(w / scale), draws)
    dw = draws.astype(np.float64) * (w / scale)  # the documented products (rounded once)
    _check_weighted(sc, y, s, groups, dw)


class CountingBar:
    """A progress bar that counts its updates."""

    def __init__(self):
        self.n = 0

    def update(self, k):
        self.n += k


_Bar = CountingBar


class _Clock:
    """perf_counter reading ``times`` in turn (the start, then one a replicate made)."""

    def __init__(self, times):
        self.times = list(times)

    def perf_counter(self):
        return self.times.pop(0)


def _replicate_setup(n_boot):
    from fastbias.intervals.first_call import NumpyReplicates
    y, s, groups = _data(14, n=50)
    m = prepare_subgroups(y, groups, compiled=False)
    arrays = (np.full((n_boot, m.n_groups, 7), -1.0), np.full((n_boot, 2), -1.0),
              np.full(n_boot, -1.0))
    return NumpyReplicates(s, m), bootstrap.bootstrap_seed(3).spawn(n_boot), arrays, m


def test_numpy_replicates_stop_when_the_rest_would_outlast_the_budget(monkeypatch):
    """One thread and a fake clock: start 0, then 0.1, 0.2, 0.3, 0.4 after replicates 1-4
    (pace 0.1 s: 16 left = 1.6 s, within 5 s), 3.0 after the 5th (pace 0.6 s: 15 left = 9 s,
    past 5 s): 5 replicates made, the first five; the others untouched. Kills "pace over
    all replicates" (it would go on: 15 x 3.0 / 20 = 2.25 s) and ">=" vs ">" is checked at
    the exact boundary below."""
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 5.0)
    replicates, seeds, arrays, m = _replicate_setup(20)
    monkeypatch.setattr(bootstrap, "time", _Clock([0.0, 0.1, 0.2, 0.3, 0.4, 3.0] + [3.1] * 30))
    bar = _Bar()
    done = bootstrap._numpy_replicates(replicates, seeds, 1, bar, *arrays, None)
    assert done == 5 and bar.n == 5
    counts, totals, overall = arrays
    assert (totals[:5] >= 0).all() and (totals[5:] == -1).all() and (overall[5:] == -1).all()
    for i in range(5):
        c, tn, tp, tu = replicates.counts(bootstrap.replicate_key(seeds[i]))
        assert (counts[i] == c).all() and (tn, tp, tu) == (totals[i, 0], totals[i, 1],
                                                          overall[i])


def test_numpy_replicates_budget_boundary_is_strict(monkeypatch):
    """Exactly at the budget the replicates go on (the guess "more than" the budget stops
    them): pace 0.25 s a replicate with 19 left is 4.75 s, so a budget of 4.75 s goes on,
    every time the pace holds. Kills ">=" for ">"."""
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 4.75)
    replicates, seeds, arrays, _ = _replicate_setup(20)
    monkeypatch.setattr(bootstrap, "time", _Clock([0.0] + [0.25 * j for j in range(1, 21)]))
    assert bootstrap._numpy_replicates(replicates, seeds, 1, _Bar(), *arrays, None) == 20


def test_numpy_replicates_ask_whether_the_bootstrap_family_still_compiles(monkeypatch):
    """still_compiling is asked of "bootstrap" before each replicate; when it turns False
    after 4 answers, 4 replicates were made (the first four) and 4 is returned."""
    asked = []

    def still(name):
        asked.append(name)
        return len(asked) <= 4
    monkeypatch.setattr(bootstrap, "still_compiling", still)
    replicates, seeds, arrays, _ = _replicate_setup(10)
    assert bootstrap._numpy_replicates(replicates, seeds, 1, _Bar(), *arrays, None) == 4
    assert set(asked) == {"bootstrap"} and len(asked) == 5
    assert (arrays[2][:4] >= 0).all() and (arrays[2][4:] == -1).all()


def test_tier_switch_reads_the_environment(monkeypatch):
    """FASTBIAS_FIRST_CALL unset or 1: on; "0", with spaces around it too: off (the nested
    ``compiling_in_place`` blocks are tests/test_threads.py's)."""
    monkeypatch.delenv("FASTBIAS_FIRST_CALL", raising=False)
    assert first_call.tier_enabled()
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", " 0 ")
    assert not first_call.tier_enabled()
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    assert first_call.tier_enabled()


@pytest.mark.parametrize("background_positives_weigh", [True, False])
def test_zero_weight_subgroup_rows_do_not_hide_a_weighted_background(
        background_positives_weigh):
    """Subgroup 0: 3 weighted and 2 zero-weight negatives, 3 weighted positives; its
    background: 2 weighted negatives, 2 weighted and 2 zero-weight positives (so the class
    rows of non-zero weight, 5 negatives, equal the subgroup's negative rows counting its
    zeros, and 5 weighted negatives vs 3 weighted subgroup negatives). Every metric against
    exact rationals: BNSP AUC and negative AEG are defined (the background negatives weigh
    2.5), not NaN. Variant: the background positives all weigh 0 (BPSN AUC NaN), so the
    classes' weighted rows differ (5 negatives, 3 positives). Kills "subgroup weighted rows count zero weights" and "bg_rows classes
    swapped" (each zeroes a background that has weight)."""
    y = np.array([0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1], dtype=bool)
    s = np.array([.1, .5, .9, .5, .3, .6, .2, .5, .4, .8, .5, .7, .1, .9])
    w = np.array([1., 2., .5, 0., 0., 1., 3., .25, 1.5, 1., 2., .75, 0., 0.])
    if not background_positives_weigh:  # 3 weighted positives, 5 weighted negatives
        w[10:12] = 0.0
    member = np.arange(14) < 8
    groups = np.column_stack([member, ~member])
    m = prepare_subgroups(y, groups, compiled=False)
    sc = weighted_counts_in_numpy(s, m, w)
    _check_weighted(sc, y, s, groups, w)
    got = metrics_from_counts(sc)
    assert got["bnsp_auc"][0] == float(pair_fraction(s[member & y], s[~member & ~y],
                                                     w[member & y], w[~member & ~y]))


class _Slow:
    """NumpyReplicates whose first replicate waits until the second is begun, and whose
    second waits until the first is counted (bar updated): the first's pace is then judged
    with one replicate made and two taken."""

    def __init__(self, inner, bar):
        import threading
        self.inner, self.bar, self.calls = inner, bar, 0
        self.lock, self.second_begun = threading.Lock(), threading.Event()

    def counts(self, key):
        import time
        with self.lock:
            self.calls += 1
            call = self.calls
        if call == 1:
            assert self.second_begun.wait(20)
        elif call == 2:
            self.second_begun.set()
            deadline = time.monotonic() + 20
            while self.bar.n < 1 and time.monotonic() < deadline:
                time.sleep(0.001)
        return self.inner.counts(key)


def test_the_pace_counts_the_replicates_not_yet_begun(monkeypatch):
    """Two threads: when the first replicate is made (1 s on the fake clock) the second is
    already begun, so 2 of 4 are not yet begun: 2 x 1 s = 2 s, within a 2.5 s budget, and all
    4 are made in numpy. Kills "left from made" (3 left: 3 s, it stops at 2)."""
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 2.5)
    replicates, seeds, arrays, _ = _replicate_setup(4)
    bar = _Bar()
    monkeypatch.setattr(bootstrap, "time", _Clock([0.0] + [1.0] * 10))
    assert bootstrap._numpy_replicates(_Slow(replicates, bar), seeds, 2, bar, *arrays,
                                       None) == 4
    assert bar.n == 4 and (arrays[2] >= 0).all()


def test_one_slow_first_replicate_stops_the_numpy_replicates(monkeypatch):
    """Fake clock: the first replicate takes 1 s, 19 are left: 19 s past a 15 s budget, so one
    replicate is made in numpy (the pace is over the replicates made, 1). Kills "pace counted
    from 1 made" (9.5 s: it would go on)."""
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 15.0)
    replicates, seeds, arrays, _ = _replicate_setup(20)
    monkeypatch.setattr(bootstrap, "time", _Clock([0.0] + [1.0] * 30))
    assert bootstrap._numpy_replicates(replicates, seeds, 1, _Bar(), *arrays, None) == 1
