"""The memberships in score order, with the classes sorted: what every walk after the
counts reads (DeLong's placement sums, the significance tests, the threshold counts).

Every walk reads sortable integer keys (uint32 for float32 scores, uint64 for float64) and
int32 codes: unweighted walks the sorts' own keys; weighted ones the keys of the scores in
the row order the weighted point estimate made, with each membership's weight. So the
walks' kernels compile one version per key width for weighted and unweighted calls alike.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._numba_cache import read_only
from ..sort.order import SortedScores, sortable_keys_in_place
from . import _kernels as K


class MemberWalk(NamedTuple):
    """What the DeLong walks read: the memberships in score order (``keys``, ``codes``,
    ``weights``), the two classes sorted (``neg``, ``pos``) with the prefix sums of their
    weights (``neg_cum``, ``pos_cum``; empty arrays when unweighted), and each subgroup's
    negative and positive weight (``cells``, (k, 2)) and each class's (``class_totals``).
    ``read_ratios``: where weighted, a function that gives each class's
    :func:`read_ratio` (negatives, positives), worked out on its first call; None unweighted.
    """

    keys: np.ndarray
    codes: np.ndarray
    weights: np.ndarray
    neg: np.ndarray
    pos: np.ndarray
    neg_cum: np.ndarray
    pos_cum: np.ndarray
    cells: np.ndarray
    class_totals: tuple
    read_ratios: object = None


def unweighted_walk(sorted_scores: SortedScores) -> MemberWalk:
    """The memberships by the sorts' integer keys; every row weighs 1."""
    m = sorted_scores.memberships
    keys, codes = sorted_scores.members
    neg_keys, pos_keys = sorted_scores.classes
    none = np.empty(0, dtype=np.float64)
    n_neg, n_pos = m.class_rows
    return MemberWalk(keys, codes, none, neg_keys, pos_keys, none, none,
                 m.cell_rows.astype(np.float64), (float(n_neg), float(n_pos)))


def weighted_walk(sorted_scores: SortedScores, sample_weight: np.ndarray) -> MemberWalk:
    """The memberships in the row order of the weighted point estimate, with their weights;
    the scores as their sortable keys (the point estimate's sorts are of the scores)."""
    m = sorted_scores.memberships
    order = sorted_scores.order()
    weights = read_only(sample_weight)  # (read-only or not: one compiled version)
    neg_cum = K.cumulative_weights(order.neg_rows, weights)
    pos_cum = K.cumulative_weights(order.pos_rows, weights)
    # identity rows by score, each repeated once per subgroup it belongs to
    per_row = np.diff(m.row_ptr)[order.id_order]
    identity = np.repeat(order.id_order, per_row)
    first = np.repeat(m.row_ptr[order.id_order] - (np.cumsum(per_row) - per_row), per_row)
    groups = m.row_groups[first + np.arange(identity.shape[0])]
    codes = groups.astype(np.int32)
    codes *= 2
    codes += m.identity_labels[identity]
    weights = np.ascontiguousarray(sample_weight[m.identity_rows[identity]], dtype=np.float64)
    # (float64 also where there are no memberships: numpy's bincount of nothing is int64,
    # which compiled the walks once more for such a chunk)
    cells = np.bincount(codes, weights, minlength=2 * m.n_groups).astype(
        np.float64, copy=False).reshape(m.n_groups, 2)
    del identity, first, groups  # (before the keys: not all at once)
    keys = sortable_keys_in_place(np.repeat(order.id_sorted, per_row))  # (in order: no gather)
    return MemberWalk(keys, codes, weights,
                      sortable_keys_in_place(order.neg_sorted.copy()),
                      sortable_keys_in_place(order.pos_sorted.copy()),
                      neg_cum, pos_cum, cells, (float(neg_cum[-1]), float(pos_cum[-1])),
                      read_ratios_of(np.asarray(sample_weight, dtype=np.float64),
                                     (order.neg_rows, neg_cum), (order.pos_rows, pos_cum)))


def read_ratio(weights: np.ndarray, rows: np.ndarray, cumulative: np.ndarray) -> float:
    """How far a class's weight may be off where read from its prefix sums ``cumulative``
    (of ``weights[rows]``, added in that order, from 0), in units of 2**-53 of what is read:
    ``max cumulative[j + 1] / weights[rows[j]]`` over the rows of positive weight (1 where
    none). Adding row ``j`` rounds by at most 2**-53 ``cumulative[j + 1]``, a row of
    weight 0 not at all, so any read that is a difference of two prefix sums (a row's or a
    tie's weight, the weight below or above a score: the total less a prefix) is off by at
    most 2**-53 times the sum of ``cumulative[j + 1]`` over the rows it spans, which is at
    most this many times their weight (the largest of the ratios bounds the ratio of the
    sums), plus the rounding of the difference itself. It is about ``n`` for equal weights;
    a row far lighter than the weight of its class below it makes it large (a heavy row at
    the bottom of its class), a heavy row at the top does not. Read in blocks (bounded
    memory)."""
    most = 1.0
    for start in range(0, rows.shape[0], _RATIO_BLOCK):
        w = weights[rows[start:start + _RATIO_BLOCK]]
        positive = w > 0
        if positive.any():
            top = cumulative[start + 1:start + 1 + w.shape[0]]
            most = max(most, float(np.max(top[positive] / w[positive])))
    return most


_RATIO_BLOCK = 1 << 20


def read_ratios_of(weights: np.ndarray, negatives: tuple, positives: tuple):
    """A function that gives ``(read_ratio of the negatives, of the positives)``, each
    ``(rows, cumulative)``, worked out on its first call (a pass over the weights, only
    where a variance's rounding needs it)."""
    made = []

    def ratios() -> tuple:
        if not made:
            made.append(tuple(read_ratio(weights, rows, cum) for rows, cum in (negatives,
                                                                             positives)))
        return made[0]
    return ratios


def member_walk(sorted_scores: SortedScores, sample_weight: np.ndarray | None = None) -> MemberWalk:
    """:func:`weighted_walk` with weights, else :func:`unweighted_walk`."""
    if sample_weight is not None:
        return weighted_walk(sorted_scores, sample_weight)
    return unweighted_walk(sorted_scores)
