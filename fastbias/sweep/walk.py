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
    negative and positive weight (``cells``, (k, 2)) and each class's (``class_totals``)."""

    keys: np.ndarray
    codes: np.ndarray
    weights: np.ndarray
    neg: np.ndarray
    pos: np.ndarray
    neg_cum: np.ndarray
    pos_cum: np.ndarray
    cells: np.ndarray
    class_totals: tuple


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
    cells = np.bincount(codes, weights, minlength=2 * m.n_groups).reshape(m.n_groups, 2)
    del identity, first, groups  # (before the keys: not all at once)
    keys = sortable_keys_in_place(np.repeat(order.id_sorted, per_row))  # (in order: no gather)
    return MemberWalk(keys, codes, weights,
                      sortable_keys_in_place(order.neg_sorted.copy()),
                      sortable_keys_in_place(order.pos_sorted.copy()),
                      neg_cum, pos_cum, cells, (float(neg_cum[-1]), float(pos_cum[-1])))


def member_walk(sorted_scores: SortedScores, sample_weight: np.ndarray | None = None) -> MemberWalk:
    """:func:`weighted_walk` with weights, else :func:`unweighted_walk`."""
    if sample_weight is not None:
        return weighted_walk(sorted_scores, sample_weight)
    return unweighted_walk(sorted_scores)
