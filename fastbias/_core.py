"""Sort-and-sweep orchestration between validated arrays and the Numba kernels.

Two steps, separated so that the score-independent work is done once:

1. :func:`prepare_memberships` turns per-subgroup row lists into the compact
   structure the sweep needs (the unique identity rows and their subgroups),
   together with the labels restricted to those rows.
2. :func:`sweep_counts` sorts one score vector (once) and runs the sweep,
   returning :class:`SweepCounts`: every subgroup's cell totals and twice its
   Mann-Whitney U numerators, plus the overall U.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from . import _kernels as K


@dataclass(frozen=True)
class Memberships:
    """Score-independent description of the subgroups over ``n_rows`` rows.

    Attributes
    ----------
    names : list of str
        Subgroup names, in column order of every result.
    labels : ndarray of bool, shape (n_rows,)
        Binary labels (True = positive class).
    identity_rows : ndarray of int64
        Rows that belong to at least one subgroup, increasing.
    row_ptr, row_groups : ndarray of int64
        CSR lists: the subgroups of ``identity_rows[r]`` are
        ``row_groups[row_ptr[r]:row_ptr[r + 1]]``.
    identity_labels : ndarray of bool
        ``labels[identity_rows]``.

    ``cell_rows``, ``class_rows``, ``neg_rows`` and ``pos_rows`` are computed
    on first use (the unweighted sweep needs none of them).
    """

    names: list
    labels: np.ndarray
    identity_rows: np.ndarray
    row_ptr: np.ndarray
    row_groups: np.ndarray
    identity_labels: np.ndarray

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.names)

    @cached_property
    def cell_rows(self) -> np.ndarray:
        """(n_groups, 2) int64: subgroup rows with label 0 and 1 (row counts, never weights)."""
        return K.cell_row_counts(self.identity_labels, self.row_ptr, self.row_groups,
                                 self.n_groups)

    @cached_property
    def class_rows(self) -> tuple:
        """(number of negative rows, number of positive rows) over all rows."""
        n_pos = int(np.count_nonzero(self.labels))
        return self.n_rows - n_pos, n_pos

    @cached_property
    def _rows_by_label(self) -> tuple:
        return K.split_rows_by_label(self.labels)

    @property
    def neg_rows(self) -> np.ndarray:
        """Rows with label 0, increasing (int64)."""
        return self._rows_by_label[0]

    @property
    def pos_rows(self) -> np.ndarray:
        """Rows with label 1, increasing (int64)."""
        return self._rows_by_label[1]


def _memberships_from_csr(labels, names, identity_rows, row_ptr, row_groups) -> Memberships:
    return Memberships(list(names), labels, identity_rows, row_ptr, row_groups,
                       labels[identity_rows])


def prepare_memberships(labels: np.ndarray, group_rows: list, names: list) -> Memberships:
    """Build :class:`Memberships` from one increasing row-index array per subgroup."""
    labels = np.ascontiguousarray(labels, dtype=np.bool_)
    sizes = np.array([len(r) for r in group_rows], dtype=np.int64)
    group_ptr = np.zeros(len(group_rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=group_ptr[1:])
    flat = (np.concatenate([np.asarray(r, dtype=np.int64) for r in group_rows])
            if group_rows else np.empty(0, dtype=np.int64))
    csr = K.build_row_csr(flat, group_ptr, labels.shape[0])
    return _memberships_from_csr(labels, names, *csr)


def prepare_memberships_dense(labels: np.ndarray, matrix: np.ndarray, names: list) -> Memberships:
    """Build :class:`Memberships` from a dense (n, k) boolean/0-1 matrix in one row-major pass."""
    labels = np.ascontiguousarray(labels, dtype=np.bool_)
    if matrix.dtype == np.bool_:
        matrix = matrix.view(np.uint8)
    matrix = np.ascontiguousarray(matrix)
    flat = matrix.reshape(-1)
    words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)  # a C-contiguous uint64 view, no copy
    # first guess of the memberships: one per eight rows (the scan doubles it when short)
    csr = K.csr_from_dense_rows(words, flat, matrix.shape[1], matrix.shape[0] // 8)
    return _memberships_from_csr(labels, names, *csr)


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


@dataclass(frozen=True)
class ScoreOrder:
    """One score vector sorted once, reusable for any number of weightings.

    ``neg_rows``/``pos_rows`` are the negative/positive row indices in
    increasing score order and ``neg_sorted``/``pos_sorted`` their scores;
    ``id_scores`` are the scores of ``Memberships.identity_rows`` and
    ``id_order`` sorts them. Re-weighting (sample weights, bootstrap
    replicates) needs only :func:`sweep_weighted`, never a new sort.
    """

    id_scores: np.ndarray
    id_order: np.ndarray
    neg_rows: np.ndarray
    pos_rows: np.ndarray
    neg_sorted: np.ndarray
    pos_sorted: np.ndarray


_UINT_OF_FLOAT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def sorted_scores(scores: np.ndarray, rows: np.ndarray, with_order: bool = False):
    """``np.sort(scores[rows] + 0.0)`` (and its stable argsort) by an LSD radix sort.

    ``scores`` must be finite float32/float64 (as :func:`as_scores` returns).
    Returns ``(sorted_values, order)``; ``order`` (positions into ``rows``)
    is None unless asked for. On 1.8M float32 scores this is several times
    faster than ``np.sort`` and far faster than ``np.argsort`` here.
    """
    uint = _UINT_OF_FLOAT[scores.dtype]
    out = np.empty(rows.shape[0], dtype=scores.dtype)
    order = np.empty(rows.shape[0] if with_order else 0, dtype=np.int64)
    K.radix_sort_gathered(scores.view(uint), rows, scores.dtype.itemsize * 8, out.view(uint), order)
    return out, (order if with_order else None)


def order_scores(scores: np.ndarray, memberships: Memberships) -> ScoreOrder:
    """Sort ``scores`` within each class and among the identity rows."""
    m = memberships
    id_scores = K.gather_scores(scores, m.identity_rows)
    _, id_order = sorted_scores(scores, m.identity_rows, with_order=True)
    neg_sorted, neg_order = sorted_scores(scores, m.neg_rows, with_order=True)
    pos_sorted, pos_order = sorted_scores(scores, m.pos_rows, with_order=True)
    return ScoreOrder(id_scores, id_order, m.neg_rows[neg_order], m.pos_rows[pos_order],
                      neg_sorted, pos_sorted)


# a weighted sum is trusted when its error bound is below this share of itself, or below
# WEIGHTED_ABSOLUTE_TOLERANCE in units of the metric (see docs/correctness.md)
WEIGHTED_RELATIVE_TOLERANCE = 2.0 ** -50
WEIGHTED_ABSOLUTE_TOLERANCE = 2.0 ** -70
_DD_UNIT = 2.0 ** -106  # relative error of one double-double operation (roughly)


def power_of_two_scale(sample_weight: np.ndarray) -> float:
    """The power of two that brings the largest weight into [1, 2) (1 if all are 0).

    Dividing by it is exact, so weighted metrics (ratios) do not depend on the
    weights' scale, and no product of weights overflows or underflows.
    """
    largest = float(np.max(sample_weight)) if sample_weight.shape[0] else 0.0
    if not largest > 0.0:
        return 1.0
    return float(np.ldexp(1.0, int(np.frexp(largest)[1]) - 1))


def _group_mask(memberships: Memberships, g: int) -> np.ndarray:
    """Boolean row mask of subgroup ``g`` (O(memberships))."""
    m = memberships
    owner = np.repeat(np.arange(m.identity_rows.shape[0]), np.diff(m.row_ptr))
    mask = np.zeros(m.n_rows, dtype=np.bool_)
    mask[m.identity_rows[owner[m.row_groups == g]]] = True
    return mask


def _untrusted_groups(hi, background, background_rows, totals, n_ops: int) -> np.ndarray:
    """Subgroups whose weighted metrics the fast sweep cannot certify (indices).

    The fast sweep forms background quantities as "class total minus
    subgroup"; each double-double sum over ``n_ops`` steps is within about
    ``8 n_ops 2**-106`` of the magnitudes summed (rigorous, pessimistic). A
    subgroup is certified when every defined metric (and background weight)
    is within WEIGHTED_RELATIVE_TOLERANCE of itself or
    WEIGHTED_ABSOLUTE_TOLERANCE in metric units; otherwise its counts are
    recomputed from its explicit cells.
    """
    eps = 8.0 * (n_ops + 16) * _DD_UNIT
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
                   certify: bool = True, weight_scale: float | None = None) -> SweepCounts:
    """Weighted counts for a pre-sorted score vector, in double-double; O(n + memberships).

    The weights are first divided by :func:`power_of_two_scale` (exact).
    With ``certify`` (the default), a subgroup whose counts the fast sweep
    cannot guarantee to WEIGHTED_RELATIVE_TOLERANCE (a background that is tiny
    next to its subgroup, a metric that is tiny next to its class) is
    recomputed from its explicit cells (O(rows) each, rare). The bootstrap
    passes ``certify=False``: its replicates need no such guarantee. A
    caller that combines several sweeps (the chunk algebra) passes one
    ``weight_scale`` for all of them.
    """
    m = memberships
    scale = power_of_two_scale(sample_weight) if weight_scale is None else weight_scale
    weights = sample_weight if scale == 1.0 else sample_weight / scale
    neg_hi, neg_lo, _, n_weighted_neg = K.cumulative_weights_compensated(order.neg_rows, weights)
    pos_hi, pos_lo, pos_w_sorted, n_weighted_pos = K.cumulative_weights_compensated(
        order.pos_rows, weights)
    id_weights = np.ascontiguousarray(weights[m.identity_rows], dtype=np.float64)
    hi, lo, bg_hi, bg_lo, bg_rows, u_hi, u_lo = K.subgroup_counts_weighted(
        order.id_scores, order.id_order, m.identity_labels, id_weights, m.row_ptr, m.row_groups,
        order.neg_sorted, neg_hi, neg_lo, order.pos_sorted, pos_hi, pos_lo, pos_w_sorted,
        n_weighted_neg, n_weighted_pos, m.n_groups)
    # a background without weighted rows has no pairs at all: exactly 0, not the residue of
    # "class total minus subgroup" (it matters where counts are added up, as across chunks)
    for c, columns in ((0, _NEGATIVE_BACKGROUND_COLUMNS), (1, _POSITIVE_BACKGROUND_COLUMNS)):
        empty = bg_rows[:, c] == 0
        if empty.any():
            hi[np.ix_(empty, columns)] = 0.0
            lo[np.ix_(empty, columns)] = 0.0
    totals = (float(neg_hi[-1]), float(pos_hi[-1]))
    if certify and m.n_groups:
        for g in _untrusted_groups(hi, bg_hi, bg_rows, totals, m.n_rows + m.row_groups.shape[0]):
            hi[g], lo[g], bg_hi[g], bg_lo[g] = K.explicit_cell_counts(
                _group_mask(m, int(g)), order.neg_rows, order.neg_sorted, order.pos_rows,
                order.pos_sorted, weights)
    low = WeightedLow(lo, bg_lo, np.array([neg_lo[-1], pos_lo[-1]]), float(u_lo))
    return SweepCounts(m.names, hi, totals[0], totals[1], float(u_hi), m.cell_rows, m.class_rows,
                       True, bg_hi, low, scale)


class SortedClasses(NamedTuple):
    """All negatives' and all positives' scores in increasing order, as sortable keys.

    ``neg_keys``/``pos_keys`` are unsigned integers whose order (and equality)
    is that of the scores they came from (see ``_kernels.sorted_class_keys``);
    ``twice_overall_u`` is twice the U of positives over negatives (exact).
    """

    neg_keys: np.ndarray
    pos_keys: np.ndarray
    twice_overall_u: int


def sort_classes(scores: np.ndarray, labels: np.ndarray) -> SortedClasses:
    """Split finite float32/float64 ``scores`` by the boolean ``labels`` and sort each class.

    One pass over the rows plus an LSD radix sort of each class's keys; no
    row indices are kept (the unweighted sweep needs only the sorted values).
    """
    uint = _UINT_OF_FLOAT[scores.dtype]
    n_pos = int(np.count_nonzero(labels))
    n_neg = labels.shape[0] - n_pos
    neg_keys, pos_keys = K.sorted_class_keys(
        scores.view(uint), labels, scores.dtype.itemsize * 8, np.empty(n_neg, dtype=uint),
        np.empty(n_pos, dtype=uint), np.empty(n_neg, dtype=uint), np.empty(n_pos, dtype=uint))
    return SortedClasses(neg_keys, pos_keys, int(K.twice_auc_numerator_sorted(neg_keys, pos_keys)))


def sort_memberships(scores: np.ndarray, memberships: Memberships) -> tuple:
    """Every (row, subgroup) membership in score order: ``(keys, codes)``.

    ``keys`` are the rows' sortable score keys (comparable with
    :class:`SortedClasses`), ascending; ``codes`` are ``2 * subgroup + label``
    (int32 unless there are more than 2**30 subgroups).
    """
    m = memberships
    uint = _UINT_OF_FLOAT[scores.dtype]
    n_members = m.row_groups.shape[0]
    code = np.int32 if 2 * m.n_groups + 1 < 2 ** 31 else np.int64
    return K.sorted_member_keys(scores.view(uint), scores.dtype.itemsize * 8, m.identity_rows,
                                m.identity_labels, m.row_ptr, m.row_groups,
                                np.empty(n_members, dtype=uint), np.empty(n_members, dtype=code),
                                np.empty(n_members, dtype=uint), np.empty(n_members, dtype=code))


_NO_WEIGHTS = np.empty(0, dtype=np.int64)  # the counting kernel's "every row weighs 1"

# below this many memberships the counts are not worth a second thread
PARALLEL_COUNT_MIN_MEMBERSHIPS = 50_000


def count_memberships(sorted_members: tuple, sorted_classes: SortedClasses, n_groups: int,
                      executor=None) -> np.ndarray:
    """Exact (int64) per-subgroup counts (n_groups, 7) from the two sorts.

    With an ``executor`` (e.g. a ``ThreadPoolExecutor``) and enough
    memberships, the lower half of the scores is counted on one of its
    threads while this thread counts the upper half (split between two blocks
    of equal scores), and the halves are joined exactly.
    """
    keys, codes = sorted_members
    neg_keys, pos_keys = sorted_classes.neg_keys, sorted_classes.pos_keys
    if executor is None or keys.shape[0] < PARALLEL_COUNT_MIN_MEMBERSHIPS:
        return K.member_counts(keys, codes, neg_keys, pos_keys, n_groups)
    middle = K.block_boundary_near(keys, keys.shape[0] // 2)
    lower = executor.submit(K.member_counts_in_range, keys, codes, 0, middle, neg_keys, pos_keys,
                            n_groups, _NO_WEIGHTS, _NO_WEIGHTS, _NO_WEIGHTS)
    upper = K.member_counts_in_range(keys, codes, middle, keys.shape[0], neg_keys, pos_keys,
                                     n_groups, _NO_WEIGHTS, _NO_WEIGHTS, _NO_WEIGHTS)
    return K.finish_member_counts(K.add_member_counts(lower.result(), upper))


def sweep_counts(scores: np.ndarray, memberships: Memberships,
                 sample_weight: np.ndarray | None = None, sorted_classes=None,
                 sorted_members=None, executor=None,
                 weight_scale: float | None = None) -> SweepCounts:
    """Sort ``scores`` once and compute every subgroup's U counts.

    ``scores`` must be a finite float32/float64 1-D array of length
    ``memberships.n_rows`` (validated by the caller). Unweighted counts are
    exact int64 (value sorts only, the fast path); weighted counts are float64.
    ``sorted_classes`` and ``sorted_members`` optionally pass
    :func:`sort_classes` and :func:`sort_memberships` computed already
    (e.g. on two threads), and ``executor`` lends :func:`count_memberships`
    a second thread.
    """
    m = memberships
    if sample_weight is not None:
        return sweep_weighted(order_scores(scores, m), m, sample_weight,
                              weight_scale=weight_scale)
    if sorted_members is None:
        sorted_members = sort_memberships(scores, m)
    if sorted_classes is None:
        sorted_classes = sort_classes(scores, m.labels)
    neg_keys, pos_keys, twice_u = sorted_classes
    counts = count_memberships(sorted_members, sorted_classes, m.n_groups, executor)
    n_neg, n_pos = neg_keys.shape[0], pos_keys.shape[0]
    return SweepCounts(m.names, counts, n_neg, n_pos, int(twice_u),
                       counts[:, [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS]], (n_neg, n_pos),
                       False)


# below this many rows a second thread costs more than it saves
CONCURRENT_SWEEP_MIN_ROWS = 100_000


def sweep_counts_concurrently(scores: np.ndarray, memberships: Memberships) -> SweepCounts:
    """Unweighted :func:`sweep_counts` on two threads (same counts, bit for bit).

    The class sort runs on a second thread while this one sorts the
    memberships; the counts are then split between both threads. The kernels
    release the GIL. Small inputs run on one thread.
    """
    if memberships.n_rows < CONCURRENT_SWEEP_MIN_ROWS:
        return sweep_counts(scores, memberships)
    with ThreadPoolExecutor(max_workers=1) as pool:
        sorting = pool.submit(sort_classes, scores, memberships.labels)
        sorted_members = sort_memberships(scores, memberships)
        return sweep_counts(scores, memberships, sorted_classes=sorting.result(),
                            sorted_members=sorted_members, executor=pool)
