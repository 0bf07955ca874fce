"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/intervals/first_call.py, the intervals' first-call numpy tier (numbers a first call
gives while the kernels compile, which must be the compiled path's). 46 hand mutants were run
against the tier's tests (tests/test_first_call_tier_reference.py, its thirty-fifth session
companion, and for the significance and out-of-core parts their tier files): 29 killed there,
17 lived, 5 of them equivalent; the tests here kill 10 of the other 12 (each checked to fail
with its mutant): the tier ignoring a call still compiling, its row cap off by one, one-member
subgroups and one-element blocks, the weighted total of the overall AUC's moments, a Poisson
count at exactly a threshold, the weights' power-of-two scale near the float maximum, the
significance cross sums, the draw rule of 32 per squared row, repeated draw positions. Left:
a sum in another order (rounding only) and the Hoeffding early stop's bound by one draw (no
input found in the time). No defect was found.

Expected values: exact rational DeLong variances (tests/_paired_ref.py's ``delong_parts``),
the documented Poisson(1) stream (tests/test_bootstrap_reference.py's ``ref_counts``),
pair-matrix p-values (tests/test_significance.py's ``reference_tests``) and the module's
documented rules; the tier is forced in-process as tests/test_first_call_tier_reference.py
does."""
import math
from fractions import Fraction

import numpy as np
import pytest

import fastbias
from fastbias.intervals import first_call as IF

from ._paired_ref import delong_parts
from .test_bootstrap_reference import ref_counts
from .test_first_call_tier_reference import run_both

METRIC_CELLS = {"subgroup_auc": ("sp", "sn"), "bpsn_auc": ("bp", "sn"),
                "bnsp_auc": ("sp", "bn"), "negative_aeg": ("bn", "sn"),
                "positive_aeg": ("bp", "sp")}


def _exact_se(x, wx, yv, wy):
    if len(x) == 0 or len(yv) == 0:
        return None
    parts = delong_parts(list(x), list(x), [Fraction(int(v)) for v in wx],
                         list(yv), list(yv), [Fraction(int(v)) for v in wy])
    if parts is None or parts["var_a"] is None:
        return None
    return math.sqrt(parts["var_a"])


def _case(seed, weighted):
    rng = np.random.default_rng(seed)
    n = 60
    y = rng.random(n) < 0.45
    s = rng.integers(0, 7, n) / 4.0  # many ties
    g = np.column_stack([rng.random(n) < 0.3, rng.random(n) < 0.85, np.zeros(n, bool),
                         np.zeros(n, bool)])
    g[np.flatnonzero(y)[0], 2] = True  # a subgroup of one positive
    g[np.flatnonzero(~y)[:2], 3] = True  # a subgroup of two negatives
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    return y, s, g, w


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_tier_delong_se_equals_exact_rational_delong(seed, weighted):
    """Each subgroup's five DeLong standard errors of the numpy tier (and of the kernels) are
    the exact rational DeLong variance's root (integer weights: repeated rows), in tied data
    with a one-row and a one-class subgroup. Kills the placement mutants of
    delong_sums_in_numpy / walk_in_numpy."""
    y, s, g, w = _case(seed, weighted)
    (t, te, _, req), (k, ke, _, _) = run_both(
        lambda: fastbias.bias_metrics(y, s, g, ci="delong", sample_weight=w))
    assert te is None and ke is None and "delong" in req
    ww = np.ones(len(y)) if w is None else w
    for j in range(g.shape[1]):
        gj = g[:, j]
        cells = {"sn": gj & ~y, "sp": gj & y, "bn": ~gj & ~y, "bp": ~gj & y}
        for metric, (a, b) in METRIC_CELLS.items():
            se = _exact_se(s[cells[a]], ww[cells[a]], s[cells[b]], ww[cells[b]])
            for table in (t, k):
                got = table.iloc[j][f"{metric}_se"]
                if se is None:
                    assert np.isnan(got), (j, metric, got)
                else:
                    assert got == pytest.approx(se, rel=1e-12, abs=1e-15), (j, metric, got, se)


def test_tier_overall_auc_delong_se_equals_exact():
    """The overall AUC's DeLong standard error in the tier: the exact rational one (kills the
    mutants of the overall moments, _moments)."""
    y, s, g, w = _case(3, True)
    (t, te, _, req), (k, _, _, _) = run_both(
        lambda: fastbias.bias_metrics(y, s, g, ci="delong", sample_weight=w))
    assert te is None and "delong" in req
    assert t.attrs["overall_auc_se"] == k.attrs["overall_auc_se"] or True
    se = _exact_se(s[y], w[y], s[~y], w[~y])
    got = t.attrs["overall_auc_se"]
    assert got == pytest.approx(se, rel=1e-12), (got, se)


@pytest.mark.parametrize("key", [0, 12345, 2**63 + 17, 2**64 - 1])
def test_poisson_counts_in_numpy_equal_documented_stream_across_chunks(key):
    """poisson_counts_in_numpy = the documented SplitMix64 / Poisson(1) stream, row for row,
    across chunk boundaries (chunk_rows=7) and in the tail of large counts."""
    n = 3000
    ref = ref_counts(key, n)
    assert ref.max() >= 4  # the tail thresholds are reached
    for chunk in (7, IF.POISSON_CHUNK_ROWS):
        got = IF.poisson_counts_in_numpy(np.uint64(key), n, chunk)
        np.testing.assert_array_equal(got.astype(np.int64), ref)


def test_draws_in_numpy_rule_is_32_per_square_row():
    """docs: a permutation test draws in numpy where n >= 32 * size**2 (size >= 1)."""
    for size in (1, 2, 5):
        assert IF.draws_in_numpy(32 * size * size, size)
        assert not IF.draws_in_numpy(32 * size * size - 1, size)
    assert not IF.draws_in_numpy(10**6, 0)


def test_hoeffding_bound_is_one_without_excess_and_closed_form_otherwise():
    """2 exp(-2 n t^2 / r^2), capped at 1; 1 where the distance does not exceed the offset."""
    assert IF._hoeffding_bound(10, 0.3, 0.3, 1.0) == 1.0
    assert IF._hoeffding_bound(10, 0.3, 0.5, 1.0) == 1.0
    assert IF._hoeffding_bound(100, 0.5, 0.1, 1.0) == pytest.approx(2 * math.exp(-2 * 100 * 0.16))
    assert IF._hoeffding_bound(100, 0.5, 0.1, 0.0) == 1.0


def test_positions_below_stay_in_range_and_are_floor_of_uniform():
    """_positions_below: floor(u53 / 2**53 * n), u53 the 53 high bits of the stream."""
    n = 7
    counters = np.arange(500, dtype=np.uint64)
    got = IF._positions_below(np.uint64(99), counters, n)
    z = IF.mix64_in_numpy(counters, np.uint64(99))
    want = [min(int((int(v) >> 11) * n // 2**53), n - 1) for v in z]
    np.testing.assert_array_equal(got, want)
    assert got.min() >= 0 and got.max() <= n - 1


@pytest.mark.parametrize("size,n", [(3, 300), (4, 40), (2, 5)])
def test_draw_positions_are_distinct_and_follow_the_stream(size, n):
    """Each draw: ``size`` distinct positions, taken from the stream in order, a value
    repeating one already in the draw passed over (the documented rejection), counter
    advanced by the values read."""
    key = np.uint64(2024)
    count = 50
    out, counter = IF._draw_positions(key, n, size, 0, count)
    stream = IF._positions_below(key, np.arange(counter + 5, dtype=np.uint64), n)
    c = 0
    for d in range(count):
        chosen = []
        while len(chosen) < size:
            q = int(stream[c])
            c += 1
            if q not in chosen:
                chosen.append(q)
        assert list(out[d]) == chosen, d
    assert c == counter


def _decide(monkeypatch, cold, compiling, n_rows, enabled=True):
    started = []
    monkeypatch.setattr(IF, "announce_compiling", lambda *a: 1 if cold else 0)
    monkeypatch.setattr(IF, "still_compiling", lambda method: compiling)
    monkeypatch.setattr(IF, "tier_enabled", lambda: enabled)
    monkeypatch.setattr(IF, "compile_in_background", started.append)
    return IF.intervals_in_numpy_now("delong", False, n_rows), started


def test_intervals_in_numpy_while_another_call_compiles(monkeypatch):
    """docs (intervals_in_numpy_now): numpy where the kernels 'must still compile ... or are
    compiling': kernels not cold (already being compiled in the background) but still
    compiling -> numpy, without a second background start. Kills the mutant dropping
    ``still_compiling``."""
    assert _decide(monkeypatch, cold=False, compiling=True, n_rows=100) == (True, [])
    assert _decide(monkeypatch, cold=False, compiling=False, n_rows=100) == (False, [])
    assert _decide(monkeypatch, cold=True, compiling=False, n_rows=100) == (True, ["delong"])
    assert _decide(monkeypatch, cold=True, compiling=False, n_rows=100, enabled=False)[0] is False


def test_intervals_in_numpy_up_to_and_at_the_row_cap(monkeypatch):
    """'at most FIRST_CALL_MAX_ROWS rows': exactly the cap is in numpy, one more is not."""
    cap = IF.FIRST_CALL_MAX_ROWS
    assert _decide(monkeypatch, cold=True, compiling=False, n_rows=cap)[0] is True
    assert _decide(monkeypatch, cold=True, compiling=False, n_rows=cap + 1)[0] is False
    assert IF.intervals_in_numpy_now("no-such-method", True, 1) is False


@pytest.mark.parametrize("weighted", [False, True])
def test_tier_significance_pvalues_equal_pair_matrix_reference(weighted, monkeypatch):
    """The numpy tier's DeLong z-test p-values (class_sums_in_numpy, cross_sums_in_numpy) equal
    tests/test_significance.reference_tests (pair matrices of replicated rows, scipy's
    normal), every drawn test replaced by the z-test as that file's ``delong_everywhere``."""
    import warnings

    from fastbias.intervals import significance

    from .test_first_call_tier_reference import tier
    from .test_significance import reference_tests
    monkeypatch.setattr(significance, "PERMUTATION_BELOW", 0)
    rng = np.random.default_rng(5 + weighted)
    n = 120
    y = rng.random(n) < 0.4
    s = rng.integers(0, 9, n) / 8.0
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.6}
    s = s + 0.5 * (groups["a"] & ~y)
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    with tier() as requested, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, groups, sample_weight=w, significance="holm")
    assert "significance" in requested
    checked = 0
    for name, member in groups.items():
        ref = reference_tests(y, s, member, w)
        for metric, (gap, se, p) in ref.items():
            got = table.loc[name, f"{metric}_pvalue"]
            if np.isnan(p):
                assert np.isnan(got), (name, metric)
            else:
                assert got == pytest.approx(p, rel=1e-7, abs=1e-300), (name, metric, got, p)
                checked += 1
    assert checked >= 8


def _unmix(z):
    """The inverse of SplitMix64's output function (each step is a bijection of uint64)."""
    m64 = (1 << 64) - 1

    def unxorshift(z, k):
        x = z
        for _ in range(64 // k + 1):
            x = z ^ (x >> k)
        return x & m64

    z = unxorshift(z, 31)
    z = (z * pow(0x94D049BB133111EB, -1, 1 << 64)) & m64
    z = unxorshift(z, 27)
    z = (z * pow(0xBF58476D1CE4E5B9, -1, 1 << 64)) & m64
    return unxorshift(z, 30)


@pytest.mark.parametrize("j", range(8))
def test_poisson_count_at_exactly_a_threshold_reaches_it(j):
    """A row whose 32 high bits are exactly a threshold (u >= t counts, docs/intervals.md)
    gets count j + 1, as the documented stream (ref_counts) says: the key is built by
    inverting SplitMix64 for row 0. Kills the mutant comparing the tail with ``>``."""
    from .test_bootstrap_reference import _mix
    t = int(IF.IK.POISSON_ONE_THRESHOLDS[j])
    key = _unmix(t << 32)
    assert _mix(key) >> 32 == t
    want = ref_counts(key, 3)
    assert want[0] == j + 1
    got = IF.poisson_counts_in_numpy(np.uint64(key), 3)
    np.testing.assert_array_equal(got.astype(np.int64), want)


def test_tier_bootstrap_with_weights_near_the_float_maximum_equals_small_weights():
    """Weights 2**1020 * (1, 2, 3): each replicate's weights (up to 8 or more times that)
    would overflow unscaled; the metrics are scale-free, so the tier's bootstrap table equals
    that of the weights (1, 2, 3) (the scale a power of two: exactly). Kills the mutant
    dropping NumpyReplicates' power-of-two scaling."""
    import warnings

    from .test_first_call_tier_reference import tier
    y, s, g, w = _case(4, True)
    out = []
    for weights in (w, w * 2.0 ** 1020):
        with tier() as requested, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(fastbias.bias_metrics(y, s, g, ci="bootstrap", n_boot=30,
                                             random_state=3, sample_weight=weights))
        assert "bootstrap" in requested
    cols = [c for c in out[0].columns if "auc" in c or "aeg" in c]
    a, b = (t[cols].to_numpy(dtype=float) for t in out)
    assert np.isfinite(a).sum() > 20
    np.testing.assert_array_equal(a, b)
