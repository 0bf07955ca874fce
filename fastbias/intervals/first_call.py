"""Intervals on a first call that does not wait for the compiler: DeLong and the bootstrap in numpy.

In a fresh environment a call with ``ci="delong"`` or ``ci="bootstrap"`` would
first compile the sorting, counting and interval kernels (10-20 s). Instead,
while a background process compiles them (:mod:`fastbias.sweep.first_call`),
such a call computes in numpy:

* DeLong: the memberships in score order (:func:`walk_in_numpy`) and the same
  placement sums as the walk kernel (:func:`delong_sums_in_numpy`), block of
  equal scores by block, vectorised per subgroup; the standard errors then
  come from :func:`fastbias.intervals.delong.standard_errors_from_sums`, as
  for the kernels. Unweighted, every sum is of integers and halves, so only
  the order of the float additions differs from the kernel's: the sums agree to a
  few ulps, and the standard errors, differences of such sums, to about 1e-13
  relative (1.8M x 24, measured); the metrics are the same.
* The bootstrap: each replicate's exact integer counts (:class:`NumpyReplicates`)
  from the same counter-based Poisson(1) draws, so the replicates, and the
  intervals, are those of the kernels bit for bit; replicates switch to the
  kernels as soon as the background process has compiled them.
"""
from __future__ import annotations

import math
import threading

import numpy as np

from .._numba_cache import announce_compiling
from ..prepare.memberships import Memberships
from ..sort import _kernels as SortK
from ..sort.order import sortable_keys_in_place
from ..sweep import _kernels as SK
from ..sweep.counts import SweepCounts
from ..sweep.double_double import two_sum
from ..sweep.first_call import (
    FIRST_CALL_MAX_ROWS,
    CountsPlan,
    WeightedCountsPlan,
    class_orders,
    compile_in_background,
    still_compiling,
    tier_enabled,
)
from ..sweep.walk import MemberWalk, read_ratios_of
from ..validate.values import power_of_two_scale
from . import _kernels as IK

#: the kernels each interval method (and the significance tests) compiles on its first use
#: (besides the sorts)
INTERVAL_KERNELS = {
    "delong": lambda: [SK.member_delong_sums_in_range, SK.class_placement_sums,
                       SK.finish_delong_sums],
    "bootstrap": lambda: [IK.poisson_counts, IK.replicate_counts_by_walk,
                          IK.replicate_weights_by_walk, SortK.radix_sort_gathered,
                          SortK.radix_sort_class],
    # (the overall AUC's DeLong sums come from class_sums' walks here)
    "significance": lambda: [SK.member_delong_sums_in_range, SK.finish_delong_sums,
                             SK.class_sums,
                             SK.member_overall_cross_sums, IK.permutation_exceedances],
}

#: how the log line names each set, what the call computes in numpy meanwhile, and about
#: how long one of its kernels compiles (None: the usual; measured on a 2-core VM)
_NAMES = {"delong": ("DeLong", "intervals", None), "bootstrap": ("bootstrap", "intervals", None),
          "significance": ("significance tests",
                           "p-values (drawn permutation tests in small classes excepted)", 1.2)}

_decision_lock = threading.Lock()


def intervals_in_numpy_now(method: str, no_sorts: bool, n_rows: int) -> bool:
    """Whether this call's intervals (``method``: an interval method or "significance") are
    computed in numpy while their kernels compile in a background process: the point
    estimate made no sorts (it counted in numpy itself), or the kernels must still compile
    (one log line says so) or are compiling, and there are at most ``FIRST_CALL_MAX_ROWS``
    rows (beyond, numpy's temporaries would outgrow the compile time). A drawn permutation
    test whose class is small against its cell draws in its kernel all the same, compiled
    by the call (:func:`draws_in_numpy`). Decided under one lock: models evaluated in
    threads all see the background compilation the first of them asked for."""
    if method not in INTERVAL_KERNELS:
        return False
    with _decision_lock:
        name, what, seconds = _NAMES[method]
        eligible = no_sorts or (n_rows <= FIRST_CALL_MAX_ROWS and tier_enabled())
        note = f"; this call computes its {what} in numpy meanwhile" if eligible else ""
        cold = announce_compiling(name, INTERVAL_KERNELS[method](), note, seconds) > 0
        if eligible and (cold or no_sorts):
            compile_in_background(method)
        return no_sorts or (eligible and (cold or still_compiling(method)))


def walk_in_numpy(scores: np.ndarray, memberships: Memberships,
                  sample_weight: np.ndarray | None = None) -> MemberWalk:
    """The memberships in score order with the classes sorted (a :class:`MemberWalk`, the
    scores as their sortable keys, as the kernels' walks read them), by numpy sorts."""
    m = memberships
    rows = m.identity_rows[m.owners]
    order = np.argsort(scores[rows], kind="stable")
    rows = rows[order]
    codes = (2 * m.row_groups.astype(np.int32) + m.identity_labels[m.owners])[order]
    neg_rows, pos_rows = classes = class_orders(scores, m.labels)
    keys, neg, pos = (sortable_keys_in_place(scores[r]) for r in (rows, neg_rows, pos_rows))
    none = np.empty(0, dtype=np.float64)
    if sample_weight is None:
        n_neg, n_pos = m.class_rows
        return MemberWalk(keys, codes, none, neg, pos, none, none,
                          m.cell_rows.astype(np.float64), (float(n_neg), float(n_pos)))
    w = np.asarray(sample_weight, dtype=np.float64)
    neg_cum, pos_cum = (np.concatenate([[0.0], np.cumsum(w[r])]) for r in classes)
    weights = w[rows]
    cells = np.bincount(codes, weights, minlength=2 * m.n_groups).astype(
        np.float64, copy=False).reshape(m.n_groups, 2)  # (float64 as the kernels' walk's)
    return MemberWalk(keys, codes, weights, neg, pos, neg_cum, pos_cum, cells,
                      (float(neg_cum[-1]), float(pos_cum[-1])),
                      read_ratios_of(w, (neg_rows, neg_cum), (pos_rows, pos_cum)))


def _blocks(sorted_values: np.ndarray) -> tuple:
    """Start and stop of each block of equal values in a sorted array."""
    n = sorted_values.shape[0]
    starts = np.flatnonzero(np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]])) \
        if n else np.empty(0, dtype=np.int64)
    return starts, np.append(starts[1:], n)


def _class_ranks_and_weights(sorted_values, cumulative, values) -> tuple:
    """``(lt, le, below, at)``: how many of a sorted class are below and at most each value,
    and their weight below and at it (counts when ``cumulative`` is empty)."""
    lt = np.searchsorted(sorted_values, values, side="left")
    le = np.searchsorted(sorted_values, values, side="right")
    if cumulative.shape[0]:
        return lt, le, cumulative[lt], cumulative[le] - cumulative[lt]
    return lt, le, lt.astype(np.float64), (le - lt).astype(np.float64)


def _class_weight_to(sorted_values, cumulative, values) -> tuple:
    """Weight of a sorted class below and at each value (counts when ``cumulative`` is empty)."""
    return _class_ranks_and_weights(sorted_values, cumulative, values)[2:]


def _moments(values, cumulative, others, others_cumulative, above: bool) -> tuple:
    """Sum and sum of squares over ``values`` (sorted) of each row's placement among
    ``others`` (below it, ties 1/2; above it when ``above``)."""
    starts, stops = _blocks(values)
    below, tied = _class_weight_to(others, others_cumulative, values[starts])
    place = below + 0.5 * tied
    if above:
        total = others_cumulative[-1] if others_cumulative.shape[0] else float(others.shape[0])
        place = total - place
    w = (cumulative[stops] - cumulative[starts] if cumulative.shape[0]
         else (stops - starts).astype(np.float64))
    return float(np.sum(w * place)), float(np.sum(w * place * place))


def _running_sums_before(values: np.ndarray) -> np.ndarray:
    """Each position's sum of the values before it, added one by one in order, as a walk
    kernel keeps its running sums (``cumsum - values`` would round differently)."""
    out = np.zeros(values.shape[0])
    if values.shape[0] > 1:
        np.cumsum(values[:-1], out=out[1:])
    return out


def _sum_in_order(values: np.ndarray) -> float:
    """The values added one by one in order from 0.0, as a walk kernel adds its terms
    (``np.sum`` adds pairwise, which rounds differently). ``np.cumsum`` starts from the
    first value instead: the two differ only where every value is -0.0 (-0.0 against 0.0),
    which adding the total to 0.0 mends."""
    return 0.0 + float(np.cumsum(values)[-1]) if values.shape[0] else 0.0


def _subgroup_blocks(walk: MemberWalk, n_groups: int):
    """For each subgroup with memberships, ``(g, keys, n_eq, p_eq, n_lt, p_lt)``: the score
    of each block of its memberships with equal scores, in score order, the weight of its
    negatives and positives in the block, and in the blocks below (each summed in walk
    order, as the walk kernels sum them)."""
    group_of = walk.codes // 2
    by_group = np.argsort(group_of, kind="stable")  # each subgroup's memberships, in score order
    bounds = np.searchsorted(group_of[by_group], np.arange(n_groups + 1))
    for g in range(n_groups):
        mine = by_group[bounds[g]:bounds[g + 1]]
        if mine.shape[0] == 0:
            continue
        keys = walk.keys[mine]
        positive = (walk.codes[mine] & 1).astype(bool)
        weights = walk.weights[mine] if walk.weights.shape[0] else np.ones(mine.shape[0])
        starts, _ = _blocks(keys)
        block = np.zeros(keys.shape[0], dtype=np.int64)
        block[starts[1:]] = 1
        block = np.cumsum(block)  # each membership's block
        n_eq = np.bincount(block, np.where(positive, 0.0, weights), minlength=starts.shape[0])
        p_eq = np.bincount(block, np.where(positive, weights, 0.0), minlength=starts.shape[0])
        yield g, keys[starts], n_eq, p_eq, _running_sums_before(n_eq), _running_sums_before(p_eq)


def delong_sums_in_numpy(walk: MemberWalk, n_groups: int) -> tuple:
    """``(sums (k, 15), (u, sq_pos, sq_neg))``: what the DeLong walk kernels give, in numpy.

    For each subgroup, its memberships' blocks of equal scores, with its own
    negatives and positives at, below and above each block and the classes'
    weight below and at it; then each block's placements, as
    ``_kernels._add_block_placements`` adds them, summed over the blocks.
    """
    w = walk
    total_neg, total_pos = w.class_totals
    sums = np.zeros((n_groups, SK.N_DELONG_COLUMNS))
    for g, block_keys, n_eq, p_eq, n_lt, p_lt in _subgroup_blocks(w, n_groups):
        n_all, p_all = w.cells[g]
        n_gt = n_all - n_lt - n_eq
        p_gt = p_all - p_lt - p_eq
        big_n_lt, big_n_eq = _class_weight_to(w.neg, w.neg_cum, block_keys)
        big_p_lt, big_p_eq = _class_weight_to(w.pos, w.pos_cum, block_keys)
        big_p_gt = total_pos - big_p_lt - big_p_eq
        big_n_gt = total_neg - big_n_lt - big_n_eq
        a = n_lt + 0.5 * n_eq  # Dg- below the positives here
        b = p_gt + 0.5 * p_eq  # Dg+ above the negatives here
        # metric, side of the sum of squares, rows here on that side, their placement, U?
        for metric, side, rows_here, place, with_u in (
                (0, SK.DELONG_SQ_X, p_eq, a, True),
                (0, SK.DELONG_SQ_Y, n_eq, b, False),  # U counted on the X side
                (1, SK.DELONG_SQ_Y, n_eq, big_p_gt + 0.5 * big_p_eq - b, True),
                (2, SK.DELONG_SQ_X, p_eq, big_n_lt + 0.5 * big_n_eq - a, True),
                (3, SK.DELONG_SQ_Y, n_eq, (big_n_gt + 0.5 * big_n_eq) - (n_gt + 0.5 * n_eq),
                 True),
                (4, SK.DELONG_SQ_Y, p_eq, (big_p_gt + 0.5 * big_p_eq) - (p_gt + 0.5 * p_eq),
                 True)):
            if with_u:
                sums[g, SK.DELONG_U + metric] = np.sum(rows_here * place)
            sums[g, side + metric] = np.sum(rows_here * place * place)
        sums[g, SK.DELONG_SELF + 0] = np.sum(n_eq * a * a)
        sums[g, SK.DELONG_SELF + 1] = np.sum(p_eq * (p_lt + 0.5 * p_eq) ** 2)
        for column, rows_here, own_other, beyond, tied in (
                (0, n_eq, n_lt, big_p_gt, big_p_eq), (1, p_eq, p_gt, big_n_lt, big_n_eq),
                (2, n_eq, n_lt, big_n_gt, big_n_eq), (3, p_eq, p_lt, big_p_gt, big_p_eq)):
            sums[g, SK.DELONG_ALL + column] = np.sum(
                rows_here * (2.0 * own_other * (beyond + 0.5 * tied)
                             + rows_here * (beyond + 0.25 * tied)))
    out = sums[:, :15].copy()
    out[:, SK.DELONG_SQ_X + 1] = sums[:, SK.DELONG_ALL + 0] - sums[:, SK.DELONG_SQ_X + 0]
    out[:, SK.DELONG_SQ_Y + 2] = sums[:, SK.DELONG_ALL + 1] - sums[:, SK.DELONG_SQ_Y + 0]
    out[:, SK.DELONG_SQ_X + 3] = sums[:, SK.DELONG_ALL + 2] - sums[:, SK.DELONG_SELF + 0]
    out[:, SK.DELONG_SQ_X + 4] = sums[:, SK.DELONG_ALL + 3] - sums[:, SK.DELONG_SELF + 1]
    u, sq_pos = _moments(w.pos, w.pos_cum, w.neg, w.neg_cum, False)
    _, sq_neg = _moments(w.neg, w.neg_cum, w.pos, w.pos_cum, True)
    return out, (u, sq_pos, sq_neg)


def delong_in_numpy(scores: np.ndarray, memberships: Memberships,
                    sample_weight: np.ndarray | None = None) -> tuple:
    """DeLong ``(se, overall_se)`` as :func:`fastbias.intervals.delong.standard_errors`
    gives them, in numpy (no kernel compiles)."""
    from .delong import recheck_rows, standard_errors_from_sums, weight_bits_of

    walk = walk_in_numpy(scores, memberships, sample_weight)
    return standard_errors_from_sums(walk, memberships,
                                     *delong_sums_in_numpy(walk, memberships.n_groups),
                                     lambda: weight_bits_of(sample_weight),
                                     recheck_rows(scores, sample_weight))


#: rows whose Poisson counts are drawn at once in numpy (bounds the temporaries' memory)
POISSON_CHUNK_ROWS = 1 << 16


def mix64_in_numpy(counters: np.ndarray, key) -> np.ndarray:
    """The kernels' counter-based stream (``_kernels._mix64(key + counter * _GOLDEN)``) for an
    array of uint64 ``counters``, with uint64's wrap-around."""
    with np.errstate(over="ignore"):
        z = counters * IK._GOLDEN
        z += np.uint64(key)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def poisson_counts_in_numpy(key: np.uint64, n: int, chunk_rows: int = POISSON_CHUNK_ROWS
                            ) -> np.ndarray:
    """``IK.poisson_counts(key, ...)`` for rows 0..n-1 in numpy: the same counts (uint8).

    Made ``chunk_rows`` rows at a time: the hash's uint64 temporaries would otherwise be
    several times 8 bytes a row (the first-call bootstrap's peak memory).
    """
    counts = np.empty(n, dtype=np.uint8)
    thresholds = IK.POISSON_ONE_THRESHOLDS.astype(np.uint32)
    for start in range(0, n, chunk_rows):
        stop = min(start + chunk_rows, n)
        z = mix64_in_numpy(np.arange(start, stop, dtype=np.uint64), key)  # the row's counter
        # a count is how many thresholds the 32 high bits reach: the first few compared on
        # every row (no branch), the rest only on the rows past them (P(K >= 4) is about 2%)
        u = (z >> np.uint64(32)).astype(np.uint32)
        part = counts[start:stop]
        np.greater_equal(u, thresholds[0], out=part)
        for threshold in thresholds[1:4]:
            part += u >= threshold
        tail = np.flatnonzero(u >= thresholds[4])
        tail_u = u[tail]
        for threshold in thresholds[4:]:
            part[tail] += tail_u >= threshold
    return counts


class NumpyReplicates:
    """Each bootstrap replicate's counts in numpy, from sorts made once.

    Unweighted, a replicate counts each row as often as its Poisson(1) draw, so
    its counts are integer sums: the same int64 as the kernels give (the ranks of
    each identity row in the classes, and of each subgroup's positives among
    its negatives, do not change between replicates; only the prefix sums of the
    draws do: :class:`~fastbias.sweep.first_call.CountsPlan`). Weighted, each
    replicate is a weighted count in numpy
    (:func:`fastbias.sweep.first_call.weighted_counts_in_numpy`, certified as the
    kernels' replicates are), equal to the kernels' to rounding: the sorts made once
    (:class:`~fastbias.sweep.first_call.WeightedCountsPlan`), each replicate only weighs.
    ``plan``: the one the point estimate's counts were read from
    (:func:`~fastbias.sweep.first_call.counts_and_plan`), so that the call sorts once;
    None: made here.
    """

    def __init__(self, scores: np.ndarray, memberships: Memberships,
                 sample_weight: np.ndarray | None = None, plan=None):
        self.m = memberships
        self.base, self.in_order = sample_weight, None
        kind = CountsPlan if sample_weight is None else WeightedCountsPlan
        if plan is not None and (type(plan) is not kind or plan.m is not memberships):
            raise ValueError(f"plan is a {type(plan).__name__} of other memberships or "
                             f"weighting; these replicates need a {kind.__name__} of theirs")
        # the sorts, once (before the replicates are timed: what they take each decides
        # whether the kernels compile at once)
        self.plan = kind(scores, memberships) if plan is None else plan

    def counts(self, key) -> tuple:
        """(counts (n_groups, 7), total neg, total pos, twice U) of the replicate ``key``."""
        sc = (self.weighted_sweep(key) if self.base is not None
              else self.plan.counts(poisson_counts_in_numpy(key, self.m.n_rows)))
        return sc.counts, sc.total_neg, sc.total_pos, sc.twice_overall_u

    def weighted_sweep(self, key) -> SweepCounts:
        """The weighted counts of the replicate ``key`` (certified, as the kernels' are), the
        weights scaled by a power of two before the counts multiply them (weights near
        1.8e308 times a count would overflow; the metrics are the same)."""
        self.gather_weights()
        return self.plan.replicate_counts(self.in_order,
                                          poisson_counts_in_numpy(key, self.m.n_rows))

    def gather_weights(self) -> None:
        """The base weights gathered in score order, scaled (exact), once: called before
        replicates are counted in threads, so that none gathers them while another does."""
        if self.in_order is None:
            self.in_order = self.plan.weights_in_order(self.base / power_of_two_scale(self.base))


def class_sums_in_numpy(values, cumulative, others, others_cumulative, above: bool,
                        prefix: np.ndarray, rows: np.ndarray, moments: np.ndarray) -> tuple:
    """``SK.class_sums`` in numpy: the same prefix sums, rows and sums, each value computed
    and added as the kernel does. :data:`SUM_BLOCK_ROWS` rows at a time, each block's
    running sums carried on from the last (numpy's running sums add in order, as the
    kernel), so that no temporary is as long as the class. ``moments`` must be empty: the
    numpy tier's overall sums are :func:`delong_sums_in_numpy`'s."""
    n = values.shape[0]
    if (prefix.shape[0] > 0 and prefix.shape[0] != n + 1) or \
            (rows.shape[0] > 0 and (rows.shape[0] != n or rows.shape[1] < 2)) or \
            moments.shape[0] != 0:
        raise ValueError("class_sums: prefix, rows or moments of the wrong shape")
    weighted = cumulative.shape[0] > 0
    summed = prefix.shape[0] > 0
    if summed:
        prefix[0] = 0.0
    totals, errors = [0.0, 0.0], [0.0, 0.0]
    for start in range(0, n, SUM_BLOCK_ROWS):
        stop = min(n, start + SUM_BLOCK_ROWS)
        w = np.diff(cumulative[start:stop + 1]) if weighted else 1.0
        place, own = _placements_in(values, start, stop, w, cumulative, others,
                                    others_cumulative, above)
        if rows.shape[0]:
            rows[start:stop, 0], rows[start:stop, 1] = place, own
            if rows.shape[1] > 2:
                rows[start:stop, 2] = w
        if summed:
            place *= w  # (the kernel's products: the order of factors does not change them)
            prefix[start + 1:stop + 1] = np.cumsum(np.concatenate(([prefix[start]], place)))[1:]
        # the own-class sums: in order, beside each the rounding of every addition (recovered
        # exactly from its inputs and output), itself added in order, put back at the end
        for j, terms in enumerate((w * own, w * (own * own))):
            running = np.cumsum(np.concatenate(([totals[j]], terms)))
            _, rounding = two_sum(running[:-1], terms)
            totals[j] = float(running[-1])
            errors[j] = float(np.cumsum(np.concatenate(([errors[j]], rounding)))[-1])
    return totals[0] + errors[0], totals[1] + errors[1]


#: rows of a class whose sums are made at once in numpy (bounds their temporaries)
SUM_BLOCK_ROWS = 1 << 16


def _placements_in(values, start: int, stop: int, weights, cumulative, others,
                   others_cumulative, above: bool) -> tuple:
    """For positions ``start:stop`` of the sorted class ``values`` (their ``weights``, or
    1.0): the weight of ``others`` below each (above it when ``above``), ties 1/2; and the
    weight of its own class above it, ties 1/2, itself left out (as ``SK.class_sums`` walks
    the class). Computed per block of equal values, a block's extent taken over the whole
    class."""
    v = values[start:stop]
    local, local_stops = _blocks(v)
    rows = local_stops - local  # each block's rows here
    starts = start + local
    stops = starts + rows
    # the first block may begin before these rows, the last end after them
    starts[0] = np.searchsorted(values, v[0], side="left")
    stops[-1] = np.searchsorted(values, v[-1], side="right")
    below, tied = _class_weight_to(others, others_cumulative, v[local])
    place = below + 0.5 * tied
    if above:
        place = (others_cumulative[-1] if others_cumulative.shape[0]
                 else float(others.shape[0])) - place
    if cumulative.shape[0]:
        total, own_below = cumulative[-1], cumulative[starts]
        own_tied = cumulative[stops] - own_below
    else:
        total, own_below = float(values.shape[0]), starts.astype(np.float64)
        own_tied = (stops - starts).astype(np.float64)
    # each block's values on its rows, then the kernel's arithmetic (the same operations on
    # the same values: the same bits)
    own_above = np.repeat(total - own_below - own_tied, rows)
    half = np.repeat(own_tied, rows)
    half -= weights
    half *= 0.5
    own_above += half
    return np.repeat(place, rows), own_above


def cross_sums_in_numpy(walk: MemberWalk, q_pos: np.ndarray, r_neg: np.ndarray,
                        n_groups: int) -> np.ndarray:
    """``SK.member_overall_cross_sums`` in numpy: the (n_groups, 8) cross sums of each
    subgroup's placements with the overall AUC's, each term computed and added in the
    kernel's order (``q_pos``/``r_neg``: the prefix sums of ``w * c_O`` and ``w * d_O``)."""
    w = walk
    sums = np.zeros((n_groups, SK.N_OVERALL_CROSS_COLUMNS))
    total_pos = w.class_totals[1]
    q_total = q_pos[-1]
    for g, keys, n_eq, p_eq, n_lt, p_lt in _subgroup_blocks(w, n_groups):
        neg_lt, neg_le, big_n_lt, big_n_eq = _class_ranks_and_weights(w.neg, w.neg_cum, keys)
        pos_lt, pos_le, big_p_lt, big_p_eq = _class_ranks_and_weights(w.pos, w.pos_cum, keys)
        c_o = big_n_lt + 0.5 * big_n_eq
        d_o = (total_pos - big_p_lt - big_p_eq) + 0.5 * big_p_eq
        r_here = r_neg[neg_lt] + 0.5 * (r_neg[neg_le] - r_neg[neg_lt])
        q_here = (q_total - q_pos[pos_le]) + 0.5 * (q_pos[pos_le] - q_pos[pos_lt])
        c_g = n_lt + 0.5 * n_eq
        d_g = (w.cells[g, 1] - p_lt - p_eq) + 0.5 * p_eq
        for column, term in enumerate((p_eq * c_g * c_o, p_eq * c_o, p_eq * (c_o - c_g) * c_o,
                                       p_eq * r_here, n_eq * d_g * d_o, n_eq * d_o,
                                       n_eq * (d_o - d_g) * d_o, n_eq * q_here)):
            sums[g, column] = _sum_in_order(term)
    return sums


#: a permutation test draws in numpy where its class has at least this many rows per square
#: row of the drawn cell: a draw then repeats a position with probability below 1/64, and the
#: draws are made a block at a time (a draw with a repeat is redone one value at a time, as
#: the kernel rejects repeats); in smaller classes the kernel draws (compiled on first use)
DRAWS_IN_NUMPY_ROWS_PER_SQUARE = 32

#: the most draws made at once in numpy (bounds the temporaries: a few arrays of this many x
#: cell rows); fewer where repeats are likely (:func:`_draw_positions`)
DRAW_BATCH = 4096


def draws_in_numpy(n: int, size: int) -> bool:
    """Whether a permutation test drawing ``size`` of ``n`` class rows draws in numpy."""
    return size >= 1 and n >= DRAWS_IN_NUMPY_ROWS_PER_SQUARE * size * size


def _positions_below(key, counters: np.ndarray, n: int) -> np.ndarray:
    """``_kernels._draw_below(key, counter, n)`` for each counter: uniform on ``[0, n)``."""
    u = (mix64_in_numpy(counters, key) >> np.uint64(11)).astype(np.float64)
    return np.minimum((u * (1.0 / 9007199254740992.0) * n).astype(np.int64), n - 1)


def _draw_positions(key, n: int, size: int, counter: int, count: int) -> tuple:
    """The next ``count`` draws of ``size`` distinct positions of ``n`` from the stream
    ``key`` at ``counter``, taken as the kernel takes them (a value repeating one already in
    the draw is passed over for the next): ``((count, size) positions, the next counter)``.

    The stream's values are made a block at a time; the draws up to the first one with a
    repeat are taken from the block at once, that one a value at a time, and the rest of
    the block is read on from there. A block holds about four times as many draws as come
    between two repeats (a draw repeats with probability about size**2 / 2n), so little of
    it is searched again after a repeat."""
    repeat_chance = size * (size - 1) / (2.0 * n)
    rows_per_block = int(min(DRAW_BATCH, max(16, 4.0 / repeat_chance))) if repeat_chance > 0 \
        else DRAW_BATCH
    out = np.empty((count, size), dtype=np.int64)
    values, start = np.empty(0, dtype=np.int64), counter  # the stream's values from ``start``

    def ensure(m: int) -> np.ndarray:
        """The stream's values from ``counter`` on, at least ``m`` of them: those made
        already, then as many more as a block holds."""
        nonlocal values, start
        end = start + values.shape[0]
        if end - counter < m:
            more = _positions_below(key, np.arange(end, counter + max(
                m, rows_per_block * size), dtype=np.uint64), n)
            values, start = np.concatenate([values[counter - start:], more]), counter
        return values[counter - start:]

    made = 0
    while made < count:
        rows = min(rows_per_block, count - made)
        block = ensure(rows * size)[:rows * size].reshape(rows, size)
        ordered = np.sort(block, axis=1)
        repeats = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        clean = int(np.argmax(repeats)) if repeats.any() else rows
        out[made:made + clean] = block[:clean]
        made += clean
        counter += clean * size
        if clean < rows:  # this draw repeats a position: redo it one value at a time
            chosen = []
            while len(chosen) < size:
                q = int(ensure(1)[0])
                counter += 1
                if q not in chosen:
                    chosen.append(q)
            out[made] = chosen
            made += 1
    return out, counter


def _hoeffding_bound(size, distance, center_offset, value_range) -> float:
    """``_kernels._hoeffding_bound``, with the C library's ``exp`` as the kernel's."""
    excess = distance - center_offset
    if excess <= 0.0 or value_range <= 0.0:
        return 1.0
    return min(1.0, 2.0 * math.exp(-2.0 * size * excess * excess / (value_range * value_range)))


def _distances(numerator, denominator, center) -> np.ndarray:
    """``_kernels._distance`` of each draw: ``|numerator / denominator - center|``, NaN where
    the denominator is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, np.abs(numerator / denominator - center), np.nan)


def permutation_exceedances_in_numpy(class_keys, class_rows, fixed_keys, fixed_cum,
                                     fixed_is_above, size, other_total, observed, active,
                                     theta, hits, max_draws, seed, class_total, place_total,
                                     weighted) -> np.ndarray:
    """``IK.permutation_exceedances`` in numpy, where :func:`draws_in_numpy` (the class large
    against the drawn cell: the kernel draws by rejecting repeats there): the same (3, 3)
    result, from the same draws, a batch at a time. Each draw's sums are added over its
    positions in the kernel's order, so the draws' metrics, and which of them reach the
    observed ones, are the kernel's."""
    if class_rows.shape[1] < (3 if weighted else 2):
        raise ValueError("class_rows: too few columns")
    out = np.zeros((3, 3))
    out[:, 2] = 1.0
    n = class_keys.shape[0]
    if not draws_in_numpy(n, size):
        raise ValueError(f"permutation draws of {size} of {n} rows are the kernel's")
    fixed_total = fixed_cum[-1]
    done = ~np.asarray(active, dtype=bool)
    if not weighted:
        lt = np.searchsorted(class_keys, fixed_keys, "left")
        le = np.searchsorted(class_keys, fixed_keys, "right")
        f_sum = _sum_in_order((lt + 0.5 * (le - lt)) if fixed_is_above
                              else (n - le + 0.5 * (le - lt)))
        mean_sub = f_sum / (n * fixed_total) if fixed_total > 0 else 0.5
        mean_cross = ((place_total - f_sum) / (n * (other_total - fixed_total))
                      if other_total > fixed_total else 0.5)
        bounds = (_hoeffding_bound(size, observed[0], abs(mean_sub - theta), 1.0),
                  _hoeffding_bound(size, observed[1], abs(mean_cross - theta), 1.0),
                  _hoeffding_bound(size, observed[2], 0.0, (n - 1.0) / (n - size)))
        for j in range(3):
            if active[j]:
                out[j, 2] = bounds[j]
                if bounds[j] * (max_draws + 1.0) <= 1.0:
                    done[j] = True
    key = mix64_in_numpy(np.array([seed], dtype=np.uint64), 1)[0]  # _kernels._stream_key
    thresholds = [observed[j] - 1e-12 * max(1.0, observed[j]) for j in range(3)]
    counter, draws = 0, 0
    while draws < max_draws and not done.all():
        positions, counter = _draw_positions(key, n, size, counter,
                                             min(DRAW_BATCH, max_draws - draws))
        drawn_keys = class_keys[positions]
        lt = np.searchsorted(fixed_keys, drawn_keys, "left")
        le = np.searchsorted(fixed_keys, drawn_keys, "right")
        tied = fixed_cum[le] - fixed_cum[lt]
        fixed_weight = ((fixed_total - fixed_cum[le]) + 0.5 * tied if fixed_is_above
                        else fixed_cum[lt] + 0.5 * tied)
        w_s = np.zeros(positions.shape[0])
        w_sq, sub, place, above = (np.zeros(positions.shape[0]) for _ in range(4))
        for t in range(size):  # in the kernel's order of addition
            w = class_rows[positions[:, t], 2] if weighted else 1.0
            w_s += w
            w_sq += w * w
            sub += w * fixed_weight[:, t]
            place += w * class_rows[positions[:, t], 0]
            above += w * class_rows[positions[:, t], 1]
        zero = np.zeros(positions.shape[0])
        values = (_distances(sub, w_s * fixed_total, theta) if fixed_total > 0 else zero,
                  _distances(place - sub, w_s * (other_total - fixed_total), theta)
                  if other_total > fixed_total else zero,
                  np.where(class_total > w_s,
                           _distances(above - 0.5 * (w_s * w_s - w_sq), (class_total - w_s) * w_s,
                                      0.5), 0.0))
        last = positions.shape[0]  # the draws of this batch the kernel makes
        ended = {}
        for j in range(3):
            if done[j]:
                continue
            found = np.cumsum(~(values[j] < thresholds[j]))  # NaN counts
            if out[j, 0] + found[-1] >= hits:
                ended[j] = int(np.searchsorted(found, hits - out[j, 0])) + 1
            else:
                out[j, 0] += found[-1]
        if len(ended) == int((~done).sum()):  # every metric ends in this batch: where the last does
            last = max(ended.values())
        for j, at in ended.items():
            out[j, 0], out[j, 1] = hits, draws + at
            done[j] = True
        draws += last
    for j in range(3):
        if active[j] and out[j, 0] < hits:
            out[j, 1] = draws
    return out
