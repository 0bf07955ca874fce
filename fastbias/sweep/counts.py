"""Counting: every subgroup's tie-aware Mann-Whitney U counts from the sorted scores.

:func:`sweep_counts` turns the sorts of one score vector (sort stage) and the
memberships (prepare stage) into :class:`SweepCounts`: each subgroup's cell
totals and twice its U numerators, plus the overall U. Unweighted counts are
exact int64; weighted ones are double-double sums with a rigorous error
bound, recomputed from explicit cells where the bound is not met.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._native import native_pieces, numba_threads
from .._numba_cache import read_only
from .._threads import JOBS_PER_WORKER, pieces_for, run_jobs
from ..prepare.memberships import Memberships, group_mask
from ..sort.order import ScoreOrder, SortedClasses, SortedScores
from ..validate.values import power_of_two_scale
from . import _kernels as K


@dataclass(frozen=True)
class WeightedLow:
    """Low parts of a weighted sweep's double-double sums.

    A weighted :class:`SweepCounts` holds the high parts in its ordinary
    fields; each value is ``high + low`` (about 2**-106 relative).
    """

    counts: np.ndarray
    background: np.ndarray
    totals: np.ndarray
    twice_overall_u: float


#: the most that twice the pairs of negatives and positives may be in int64 counts
PAIR_COUNT_LIMIT = 2 ** 62


def check_pair_count(n_neg, n_pos) -> None:
    """Refuse class sizes whose pair counts the int64 counting cannot hold (see
    :data:`PAIR_COUNT_LIMIT`)."""
    if 2 * int(n_neg) * int(n_pos) >= PAIR_COUNT_LIMIT:
        raise ValueError(f"{int(n_neg):,} negatives and {int(n_pos):,} positives: twice their "
                         f"pairs ({2 * int(n_neg) * int(n_pos):.3g}) pass 2**62, beyond what "
                         f"the exact int64 counts hold: evaluate a random sample of the "
                         f"rows, or the rows in parts")


@dataclass(frozen=True)
class SweepCounts:
    """Everything every metric needs, from one sort and one sweep.

    ``counts`` is (n_groups, 7) with the columns named in ``_kernels``
    (cell totals, then twice the U numerators); int64 when unweighted
    (exact), float64 when weighted. ``total_neg``/``total_pos`` are the class
    totals (count or weight) over all rows, ``twice_overall_u`` twice the U of
    positives over negatives across all rows. ``background`` (weighted only,
    optional) holds each subgroup's background negative/positive weight
    computed without cancellation; without it they are total minus subgroup.

    Weighted sweeps (:func:`sweep_weighted`) carry every sum as a
    double-double pair: these fields hold the high parts and ``low`` the low
    parts. Their weights are the input weights times ``1 / weight_scale`` (a
    power of two, so the metrics are exactly those of the input weights).
    """

    names: list
    counts: np.ndarray
    total_neg: float
    total_pos: float
    twice_overall_u: float
    cell_rows: np.ndarray
    class_rows: tuple
    weighted: bool
    background: np.ndarray | None = None
    low: WeightedLow | None = None
    weight_scale: float = 1.0

    def __post_init__(self) -> None:
        """Unweighted counts are int64: twice a U reaches ``2 |negatives| |positives|``,
        which past 2**62 (about 3 billion rows of each class; a margin of two for a
        bootstrap replicate's counts) would wrap, silently; such counts are refused. (The
        counts are made before: a wrapped count is caught here, before any metric.)"""
        if not self.weighted:
            check_pair_count(*self.class_rows)

    def background_totals(self) -> tuple:
        """Background negative and positive totals (counts, or weights) per subgroup.

        Unweighted they are exact integer differences. Weighted, the sweep
        provides them from compensated sums (``self.background``), so a background
        that is tiny next to its subgroup keeps its significant digits; a
        background with no rows is exactly 0 (its metrics are then NaN).
        """
        c = self.counts
        if self.background is not None:
            bg_neg, bg_pos = self.background[:, 0].copy(), self.background[:, 1].copy()
        else:
            bg_neg = self.total_neg - c[:, K.CELL_SUBGROUP_NEG]
            bg_pos = self.total_pos - c[:, K.CELL_SUBGROUP_POS]
        if self.weighted:
            n_neg, n_pos = self.class_rows
            bg_neg = np.where(n_neg - self.cell_rows[:, 0] > 0, np.maximum(bg_neg, 0.0), 0.0)
            bg_pos = np.where(n_pos - self.cell_rows[:, 1] > 0, np.maximum(bg_pos, 0.0), 0.0)
        return bg_neg, bg_pos


# a weighted sum is trusted when its error bound is below this share of itself, or below
# WEIGHTED_ABSOLUTE_TOLERANCE in units of the metric (see docs/correctness.md)
WEIGHTED_RELATIVE_TOLERANCE = 2.0 ** -50


WEIGHTED_ABSOLUTE_TOLERANCE = 2.0 ** -70


_DD_UNIT = 2.0 ** -106  # relative error of one double-double operation (roughly)


def _untrusted_groups(hi, background, background_rows, totals, n_ops: int,
                      eps: float | None = None) -> np.ndarray:
    """Subgroups whose weighted metrics the fast sweep cannot certify (indices).

    The fast sweep forms background quantities as "class total minus
    subgroup"; each double-double sum over ``n_ops`` steps is within about
    ``8 n_ops 2**-106`` of the magnitudes summed (rigorous, pessimistic). A
    subgroup is certified when every defined metric (and background weight)
    is within WEIGHTED_RELATIVE_TOLERANCE of itself or
    WEIGHTED_ABSOLUTE_TOLERANCE in metric units; otherwise its counts are
    recomputed from its explicit cells. ``eps``: the relative bound of sums computed
    otherwise (the first call's numpy sums, :mod:`fastbias.sweep.first_call`).
    """
    eps = 8.0 * (n_ops + 16) * _DD_UNIT if eps is None else eps
    total_neg, total_pos = totals
    w_sn, w_sp = hi[:, K.CELL_SUBGROUP_NEG], hi[:, K.CELL_SUBGROUP_POS]
    w_bn, w_bp = background[:, 0], background[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        # a background with weighted rows must come out well above its error bound
        rel_bn = np.where(background_rows[:, 0] > 0,
                          np.where(w_bn > 0, eps * total_neg / w_bn, np.inf), 0.0)
        rel_bp = np.where(background_rows[:, 1] > 0,
                          np.where(w_bp > 0, eps * total_pos / w_bp, np.inf), 0.0)
    err_sub = eps * 2.0 * w_sp * w_sn
    # (U column, error of it, X cell weight, Y cell weight, relative error of the cells, AEG?)
    checks = [
        (K.TWICE_SUBGROUP_U, err_sub, w_sp, w_sn, 0.0, False),
        (K.TWICE_BPSN_U, eps * 2.0 * total_pos * w_sn + err_sub, w_bp, w_sn, rel_bp, False),
        (K.TWICE_BNSP_U, eps * 2.0 * total_neg * w_sp + err_sub, w_sp, w_bn, rel_bn, False),
        (K.TWICE_NEG_BG_ABOVE_U, eps * (2.0 * total_neg * w_sn + w_sn * w_sn), w_bn, w_sn,
         rel_bn, True),
        (K.TWICE_POS_BG_ABOVE_U, eps * (2.0 * total_pos * w_sp + w_sp * w_sp), w_bp, w_sp,
         rel_bp, True),
    ]
    bad = (rel_bn > WEIGHTED_RELATIVE_TOLERANCE) | (rel_bp > WEIGHTED_RELATIVE_TOLERANCE)
    with np.errstate(invalid="ignore"):  # inf * 0 where a bound is unusable: flagged either way
        for column, err_u, w_x, w_y, rel_cells, is_gap in checks:
            pairs = w_x * w_y
            numerator = np.abs(pairs - hi[:, column]) if is_gap else hi[:, column]
            err = err_u + (pairs * rel_cells if is_gap else 0.0) + numerator * rel_cells
            allowed = np.maximum(WEIGHTED_RELATIVE_TOLERANCE * numerator,
                                 WEIGHTED_ABSOLUTE_TOLERANCE * 2.0 * pairs)
            bad |= (pairs > 0) & ~(err <= allowed)
    return np.flatnonzero(bad)


# the U columns that pair a subgroup cell with the negative / positive background
_NEGATIVE_BACKGROUND_COLUMNS = [K.TWICE_BNSP_U, K.TWICE_NEG_BG_ABOVE_U]


_POSITIVE_BACKGROUND_COLUMNS = [K.TWICE_BPSN_U, K.TWICE_POS_BG_ABOVE_U]


def sweep_weighted(order: ScoreOrder, memberships: Memberships, sample_weight: np.ndarray,
                   certify: bool = True, weight_scale: float | None = None,
                   workers: int = 1) -> SweepCounts:
    """Weighted counts for a pre-sorted score vector, in double-double; O(n + memberships).

    The weights are first divided by :func:`power_of_two_scale` (exact).
    With ``certify`` (the default), a subgroup whose counts the fast sweep
    cannot guarantee to WEIGHTED_RELATIVE_TOLERANCE (a background that is tiny
    next to its subgroup, a metric that is tiny next to its class) is
    recomputed from its explicit cells (O(rows) each, rare); the weighted
    bootstrap's replicates are certified the same way. A
    caller that combines several sweeps (the chunk algebra) passes one
    ``weight_scale`` for all of them. The sums run on up to ``workers`` threads
    (:func:`weighted_sums`), the same bits on any number.
    """
    m = memberships
    scale = power_of_two_scale(sample_weight) if weight_scale is None else weight_scale
    # the kernels divide each weight by the scale as they read it: no scaled copy of the weights,
    # and no prefix sums of a class's length (the peak memory of a weighted call)
    # (read-only or not: a read-only view, one compiled version)
    weights = read_only(np.ascontiguousarray(sample_weight, dtype=np.float64))
    hi, lo, bg_hi, bg_lo, bg_rows, u_hi, u_lo, neg_total, pos_total, joins = weighted_sums(
        order, m, weights, scale, workers)

    explicit = explicit_recount(order, m, lambda: weights if scale == 1.0 else weights / scale)
    return finish_weighted(m, (hi, lo, bg_hi, bg_lo, bg_rows), neg_total, pos_total,
                           (u_hi, u_lo), scale, explicit if certify else None,
                           extra_ops=joins)


def explicit_recount(order: ScoreOrder, memberships: Memberships, scaled_weights) -> callable:
    """``g -> (hi, lo, background_hi, background_lo)``: subgroup g's weighted counts from its
    explicit cells (O(rows), no class total minus subgroup), what :func:`finish_weighted`
    recounts a subgroup its sums cannot certify with. ``scaled_weights()`` gives the rows'
    weights as the sums read them (over the scale); called once, on the first recount."""
    scaled = []

    def explicit(g):
        if not scaled:
            scaled.append(read_only(np.ascontiguousarray(scaled_weights(), dtype=np.float64)))
        return K.explicit_cell_counts(group_mask(memberships, g), order.neg_rows,
                                      order.neg_sorted, order.pos_rows, order.pos_sorted,
                                      scaled[0])

    return explicit


#: the weighted sums cut each class's rows into pieces of about this many (and the identity
#: rows into pieces of WEIGHTED_PIECE_IDENTITY_ROWS), by the data alone: joined piece by piece
#: in order, the sums are the same bits on any number of threads
WEIGHTED_PIECE_ROWS = 1 << 15


WEIGHTED_PIECE_IDENTITY_ROWS = 1 << 13

# below this many rows the weighted sums' pieces run on the calling thread (the same bits)
PARALLEL_WEIGHTED_MIN_ROWS = 100_000


class _ClassWalk(NamedTuple):
    """One class's walk of :func:`weighted_sums`: its scores in order and their rows, where
    the answers for the identity rows go (``hi``, ``lo``), and the second set of queries
    (the positives, for the overall U: the negatives' walk only) with theirs."""

    sorted: np.ndarray
    rows: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    more: np.ndarray
    more_hi: np.ndarray
    more_lo: np.ndarray


def weighted_sums(order: ScoreOrder, memberships: Memberships, weights: np.ndarray, scale: float,
                  workers: int = 1) -> tuple:
    """The weighted counts of every subgroup, each sum a double-double pair (hi, lo), from the
    row order: ``(hi, lo, background_hi, background_lo, background_rows, twice_u_hi,
    twice_u_lo, negative total, positive total, joins)`` (see :func:`finish_weighted`;
    ``joins``: the additions that join the pieces, at most, on any one sum's way). Each row
    weighs ``weights[row] / scale``.

    Three rounds of pieces fixed by the data (WEIGHTED_PIECE_ROWS, cut between blocks of
    equal scores), which up to ``workers`` threads take as they become free: each class's
    weight below every identity row and (negatives) every positive, summed from 0 in each
    piece (:func:`~fastbias.sweep._kernels.class_weight_below_range`); those answers made
    whole with twice the pieces below (``add_twice_offset``, the offsets summed piece by
    piece); then the identity rows' counts by range of scores
    (``member_weights_in_range``) and the overall U by range of positives. The ranges are
    joined in order (``join_member_weights``: the within-subgroup pairs across ranges
    added) and finished. A sum's additions on its way are at most the rows of its piece (at
    most the class's rows: a block of ties is never split) or the memberships of its range,
    plus the joins, so it is within ``8 (rows + memberships + joins) 2**-106`` of the
    magnitudes summed (see :func:`_untrusted_groups`).
    """
    m = memberships
    n_id = m.identity_rows.shape[0]
    if m.n_rows < PARALLEL_WEIGHTED_MIN_ROWS:
        workers = 1
    no_order = order.id_order[:0]
    nb_hi, nb_lo = np.empty(n_id), np.empty(n_id)
    pb_hi, pb_lo = np.empty(n_id), np.empty(n_id)
    n_pos = order.pos_sorted.shape[0]
    u_below_hi, u_below_lo = np.empty(n_pos), np.empty(n_pos)
    walks = [_ClassWalk(order.neg_sorted, order.neg_rows, nb_hi, nb_lo, order.pos_sorted,
                        u_below_hi, u_below_lo),
             _ClassWalk(order.pos_sorted, order.pos_rows, pb_hi, pb_lo, order.pos_sorted[:0],
                        u_below_hi[:0], u_below_lo[:0])]
    # the identity rows' answers are kept in score order (nb_hi[t] for the row id_order[t]):
    # written and read in order, not scattered
    cuts = [K.class_walk_cuts(walk.sorted, WEIGHTED_PIECE_ROWS, order.id_sorted, no_order,
                              walk.more) for walk in walks]

    def walk_piece(job):
        c, j = job
        walk, (rows, queries, more) = walks[c], cuts[c]
        return K.class_weight_below_range(
            walk.sorted, walk.rows, weights, scale, rows[j], rows[j + 1], order.id_sorted,
            no_order, queries[j], queries[j + 1], walk.more, more[j], more[j + 1], walk.hi,
            walk.lo, walk.more_hi, walk.more_lo)

    jobs = [(c, j) for c in range(len(walks)) for j in range(cuts[c][0].shape[0] - 1)]
    totals = dict(zip(jobs, run_jobs(walk_piece, jobs, workers)))
    class_totals = []  # each class's (total hi, total lo, rows weighing more than 0)
    fixes = []
    for c, walk in enumerate(walks):
        _, queries, more = cuts[c]
        pieces = [totals[c, j] for j in range(queries.shape[0] - 1)]
        offset_hi, offset_lo = K.dd_prefix(np.array([p[0] for p in pieces]),
                                           np.array([p[1] for p in pieces]))
        class_totals.append((offset_hi[-1], offset_lo[-1], sum(int(p[2]) for p in pieces)))
        for hi_, lo_, at in ((walk.hi, walk.lo, queries), (walk.more_hi, walk.more_lo, more)):
            fixes += [(hi_, lo_, no_order, at[j], at[j + 1], offset_hi[j], offset_lo[j])
                      for j in range(1, len(pieces)) if at[j + 1] > at[j]]
    run_jobs(lambda fix: K.add_twice_offset(*fix), fixes, workers)
    (tn_hi, tn_lo, n_weighted_neg), (tp_hi, tp_lo, n_weighted_pos) = class_totals

    ranges = K.block_cuts(order.id_sorted, no_order, WEIGHTED_PIECE_IDENTITY_ROWS)
    positives = K.block_cuts(order.pos_sorted, no_order, WEIGHTED_PIECE_ROWS)

    def count_piece(job):
        kind, j = job
        if kind == "u":
            return K.weighted_u_in_range(u_below_hi, u_below_lo, weights, order.pos_rows, scale,
                                         positives[j], positives[j + 1])
        return K.member_weights_in_range(
            order.id_sorted, order.id_order, m.identity_labels, weights, scale, m.identity_rows,
            m.row_ptr, m.row_groups, nb_hi, nb_lo, pb_hi, pb_lo, tn_hi, tn_lo, tp_hi, tp_lo,
            ranges[j], ranges[j + 1], m.n_groups)

    jobs = ([("m", j) for j in range(ranges.shape[0] - 1)]
            + [("u", j) for j in range(positives.shape[0] - 1)])
    parts = run_jobs(count_piece, jobs, workers)
    n_ranges = ranges.shape[0] - 1
    hi, lo, weighted_rows = K.join_member_weights(np.stack([p[0] for p in parts[:n_ranges]]),
                                                  np.stack([p[1] for p in parts[:n_ranges]]),
                                                  np.stack([p[2] for p in parts[:n_ranges]]))
    bg_hi, bg_lo, bg_rows = K.finish_member_weights(hi, lo, weighted_rows, tn_hi, tn_lo, tp_hi,
                                                    tp_lo, n_weighted_neg, n_weighted_pos)
    u_hi, u_lo = K.dd_prefix(np.array([p[0] for p in parts[n_ranges:]]),
                             np.array([p[1] for p in parts[n_ranges:]]))
    # (each class's offsets, the fix-up, the ranges' and the positives' joins, the cross term)
    joins = sum(c[0].shape[0] for c in cuts) + ranges.shape[0] + positives.shape[0] + 2
    return (hi, lo, bg_hi, bg_lo, bg_rows, u_hi[-1], u_lo[-1], (tn_hi, tn_lo),
            (tp_hi, tp_lo), joins)


def finish_weighted(m: Memberships, sums: tuple, neg_total: tuple, pos_total: tuple,
                    twice_u: tuple, scale: float, explicit=None, eps: float | None = None,
                    extra_ops: int = 0) -> SweepCounts:
    """A weighted :class:`SweepCounts` from the double-double sums of a weighted count.

    ``sums`` is ``(hi, lo, background_hi, background_lo, background_rows)`` as the
    weighted counting kernel returns them; ``neg_total``, ``pos_total`` and
    ``twice_u`` are (hi, lo) pairs. A background without weighted rows gets
    exactly 0 in its U columns; with ``explicit`` (``g -> (hi, lo, background_hi,
    background_lo)`` of subgroup g from its explicit cells), each subgroup the sums
    cannot certify (``eps``: their relative bound, default the kernel's, over the rows,
    the memberships and ``extra_ops`` more additions) is recomputed.
    """
    hi, lo, bg_hi, bg_lo, bg_rows = sums
    # a background without weighted rows has no pairs at all: exactly 0, not the residue of
    # "class total minus subgroup" (it matters where counts are added up, as across chunks)
    for c, columns in ((0, _NEGATIVE_BACKGROUND_COLUMNS), (1, _POSITIVE_BACKGROUND_COLUMNS)):
        empty = bg_rows[:, c] == 0
        if empty.any():
            hi[np.ix_(empty, columns)] = 0.0
            lo[np.ix_(empty, columns)] = 0.0
    totals = (float(neg_total[0]), float(pos_total[0]))
    if explicit is not None and m.n_groups:
        for g in _untrusted_groups(hi, bg_hi, bg_rows, totals,
                                   m.n_rows + m.row_groups.shape[0] + extra_ops, eps):
            hi[g], lo[g], bg_hi[g], bg_lo[g] = explicit(int(g))
    low = WeightedLow(lo, bg_lo, np.array([neg_total[1], pos_total[1]]), float(twice_u[1]))
    return SweepCounts(m.names, hi, totals[0], totals[1], float(twice_u[0]), m.cell_rows,
                       m.class_rows, True, bg_hi, low, scale)


_NO_WEIGHTS = np.empty(0, dtype=np.int64)  # the counting kernel's "every row weighs 1"


# below this many memberships per extra thread the counting walk is not worth splitting
PARALLEL_COUNT_MIN_MEMBERSHIPS = 50_000

# on Numba's threads (fastbias._native): one piece per thread, none smaller than this
NATIVE_COUNT_MIN_MEMBERSHIPS = 10_000


def _walk_bounds(keys: np.ndarray, pos_keys: np.ndarray, pieces: int) -> tuple:
    """``pieces`` ranges of the sorted memberships, each cut between two blocks of equal
    scores, and of the positives: ``(bounds, pos_bounds)``, int64."""
    bounds = np.array([0, *(K.block_boundary_near(keys, (j * keys.shape[0]) // pieces)
                            for j in range(1, pieces)), keys.shape[0]], dtype=np.int64)
    return bounds, (np.arange(pieces + 1, dtype=np.int64) * pos_keys.shape[0]) // pieces


def count_on_numba(sorted_members: tuple, sorted_classes: SortedClasses, n_groups: int,
                   pieces: int) -> tuple:
    """:func:`count_all` as one round on Numba's threads (see :mod:`fastbias._native`),
    cut into ``pieces`` ranges of the walk and of the positives."""
    keys, codes = sorted_members
    bounds, pos_bounds = _walk_bounds(keys, sorted_classes.pos_keys, pieces)
    counts, twice_u = K.member_counts_pieces(keys, codes, bounds, sorted_classes.neg_keys,
                                             sorted_classes.pos_keys, pos_bounds, n_groups,
                                             _NO_WEIGHTS)
    return counts, sum(int(u) for u in twice_u)


def count_all(sorted_members: tuple, sorted_classes: SortedClasses, n_groups: int,
              workers: int = 1) -> tuple:
    """Exact per-subgroup counts (n_groups, 7) int64 and twice the overall U, from the sorts.

    On ``workers`` threads (and enough memberships) the walk is split into
    ranges of the scores, each cut between two blocks of equal scores, and
    the positives into ranges for the overall U; the threads take these
    jobs as they become free (their costs differ: a positive costs more where
    the negatives are dense), and the ranges are joined exactly. Where
    :func:`fastbias._native.numba_threads` allows, the walk runs as one kernel on
    Numba's threads instead (:func:`count_on_numba`; the same counts).
    """
    keys, codes = sorted_members
    neg_keys, pos_keys = sorted_classes.neg_keys, sorted_classes.pos_keys
    pieces = native_pieces(keys.shape[0] + pos_keys.shape[0], workers,
                           NATIVE_COUNT_MIN_MEMBERSHIPS)
    if pieces > 1:
        with numba_threads(workers, neg_keys.shape[0] + pos_keys.shape[0],
                           (K.member_counts_pieces,)) as on_numba:
            if on_numba:
                return count_on_numba(sorted_members, sorted_classes, n_groups, pieces)
    pieces = pieces_for(keys.shape[0] + pos_keys.shape[0], workers,
                        PARALLEL_COUNT_MIN_MEMBERSHIPS)
    if pieces > 1:
        pieces *= JOBS_PER_WORKER  # small jobs, so that the threads end together
    bounds, pos_bounds = _walk_bounds(keys, pos_keys, pieces)

    def job(task):
        kind, j = task
        if kind == "u":
            return K.twice_auc_numerator_sorted(neg_keys, pos_keys[pos_bounds[j]:pos_bounds[j + 1]],
                                                _NO_WEIGHTS, _NO_WEIGHTS)
        return K.member_counts_in_range(keys, codes, bounds[j], bounds[j + 1], neg_keys,
                                        pos_keys, n_groups, _NO_WEIGHTS, _NO_WEIGHTS, _NO_WEIGHTS)

    # the overall U's jobs first: their costs vary the most
    # (both jobs of a walk too small to split run here, not on the pool)
    parts = run_jobs(job, [("u", j) for j in range(pieces)] + [("walk", j) for j in range(pieces)],
                     workers if pieces > 1 else 1)
    joined = parts[pieces]
    for part in parts[pieces + 1:]:
        joined = K.add_member_counts(joined, part)
    return K.finish_member_counts(joined), sum(int(u) for u in parts[:pieces])


def count_sorted(sorted_scores: SortedScores, sample_weight: np.ndarray | None = None,
                 certify: bool = True, weight_scale: float | None = None) -> SweepCounts:
    """Every subgroup's U counts from the sorts of one score vector (see :class:`SweepCounts`).

    Unweighted counts are exact int64 from the sorted keys (the fast path),
    on the sorts' ``workers`` threads. Weighted counts come from the row
    order (:func:`sweep_weighted`).
    """
    m = sorted_scores.memberships
    if sample_weight is not None:
        return sweep_weighted(sorted_scores.order(), m, sample_weight, certify=certify,
                              workers=sorted_scores.workers,
                              weight_scale=weight_scale)
    classes = sorted_scores.sort().classes
    counts, twice_u = count_all(sorted_scores.members, classes, m.n_groups, sorted_scores.workers)
    n_neg, n_pos = classes.neg_keys.shape[0], classes.pos_keys.shape[0]
    return SweepCounts(m.names, counts, n_neg, n_pos, twice_u,
                       counts[:, [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS]], (n_neg, n_pos),
                       False)


def sweep_counts(scores: np.ndarray, memberships: Memberships,
                 sample_weight: np.ndarray | None = None, sorted_classes=None,
                 sorted_members=None, weight_scale: float | None = None,
                 workers: int = 1) -> SweepCounts:
    """Sort ``scores`` once and compute every subgroup's U counts.

    ``scores`` must be a finite float32/float64 1-D array of length
    ``memberships.n_rows`` (validated by the caller). ``sorted_classes`` and
    ``sorted_members`` optionally pass :func:`~fastbias.sort.order.sort_classes`
    and :func:`~fastbias.sort.order.sort_memberships` computed already; see
    :func:`count_sorted`. ``workers``: threads to sort and count on.
    """
    return count_sorted(SortedScores(scores, memberships, sorted_classes, sorted_members,
                                     workers=workers), sample_weight, weight_scale=weight_scale)
