"""The sorts of one score vector: the scores of each class, and every membership, in order.

:func:`sort_classes` gives all negatives' and all positives' scores as sorted
keys, :func:`sort_memberships` every (row, subgroup) membership by score; the
unweighted sweep, DeLong and the bootstrap need nothing else.
:func:`order_scores` adds the row order (what weighted sweeps need).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..prepare.memberships import Memberships
from . import _kernels as K

_UINT_OF_FLOAT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


class SortedClasses(NamedTuple):
    """All negatives' and all positives' scores in increasing order, as sortable keys.

    ``neg_keys``/``pos_keys`` are unsigned integers whose order (and equality)
    is that of the scores they came from (see ``_kernels.sorted_class_keys``).
    """

    neg_keys: np.ndarray
    pos_keys: np.ndarray


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
    return SortedClasses(neg_keys, pos_keys)


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


def _sorted_keys_with_rows(scores: np.ndarray, rows: np.ndarray) -> tuple:
    """The sortable keys of ``scores[rows]`` ascending and the ``rows`` in that order (stable)."""
    uint = _UINT_OF_FLOAT[scores.dtype]
    keys = np.empty(rows.shape[0], dtype=uint)
    order = np.empty(rows.shape[0], dtype=np.int64)
    K.radix_sort_gathered(scores.view(uint), rows, scores.dtype.itemsize * 8, keys, order, True)
    return keys, rows[order]


def sort_classes_with_rows(scores: np.ndarray, memberships: Memberships) -> tuple:
    """:func:`sort_classes` that also gives each class's rows in that order:
    ``(SortedClasses, negative rows, positive rows)``."""
    neg_keys, neg_rows = _sorted_keys_with_rows(scores, memberships.neg_rows)
    pos_keys, pos_rows = _sorted_keys_with_rows(scores, memberships.pos_rows)
    return SortedClasses(neg_keys, pos_keys), neg_rows, pos_rows


def sort_memberships_with_rows(scores: np.ndarray, memberships: Memberships) -> tuple:
    """:func:`sort_memberships` that also gives each membership's row: ``(keys, codes, rows)``."""
    m = memberships
    per_row = np.diff(m.row_ptr)
    rows = np.repeat(m.identity_rows, per_row)
    code = np.int32 if 2 * m.n_groups + 1 < 2 ** 31 else np.int64
    codes = (2 * m.row_groups + np.repeat(m.identity_labels, per_row)).astype(code)
    uint = _UINT_OF_FLOAT[scores.dtype]
    keys = np.empty(rows.shape[0], dtype=uint)
    order = np.empty(rows.shape[0], dtype=np.int64)
    K.radix_sort_gathered(scores.view(uint), rows, scores.dtype.itemsize * 8, keys, order, True)
    return keys, codes[order], rows[order]


class SortedScores:
    """The sorts of one score vector over one set of memberships: made once per call.

    Everything later stages need comes from here, each part computed on first
    use and then kept: :attr:`classes` (all negatives' and positives' scores
    as sorted keys) and :attr:`members` (every membership by score) serve the
    unweighted counts, DeLong and the bootstrap; :meth:`order` (the row order,
    what weighted sweeps need) is computed only if asked for. With
    ``with_rows`` the two sorts also carry the rows (:attr:`class_rows`,
    :attr:`member_rows`, what the bootstrap needs), so that nothing is sorted
    twice. A part computed elsewhere (e.g. on another thread) can be handed in.

    Parameters
    ----------
    scores : ndarray
        Validated finite float32/float64 scores, one per row of ``memberships``.
    memberships : Memberships
    classes : SortedClasses or tuple, optional
        :func:`sort_classes` of these scores (or, ``with_rows``,
        :func:`sort_classes_with_rows`), if already computed.
    members : tuple, optional
        :func:`sort_memberships` (or :func:`sort_memberships_with_rows`) of
        these scores, if already computed.
    with_rows : bool, default False
    """

    def __init__(self, scores: np.ndarray, memberships: Memberships, classes=None, members=None,
                 with_rows: bool = False):
        self.scores, self.memberships, self.with_rows = scores, memberships, with_rows
        self._classes, self._members, self._order = classes, members, None  # computed on demand

    @property
    def classes(self) -> SortedClasses:
        if self._classes is None:
            self._classes = (sort_classes_with_rows(self.scores, self.memberships)
                             if self.with_rows else sort_classes(self.scores,
                                                                 self.memberships.labels))
        return self._classes[0] if self.with_rows else self._classes

    @property
    def members(self) -> tuple:
        """``(keys, codes)`` of every membership by score (see :func:`sort_memberships`)."""
        if self._members is None:
            self._members = (sort_memberships_with_rows(self.scores, self.memberships)
                             if self.with_rows else sort_memberships(self.scores,
                                                                     self.memberships))
        return self._members[:2]

    @property
    def class_rows(self) -> tuple:
        """``(negative rows, positive rows)`` in score order (``with_rows`` only)."""
        self._require_rows()
        self.classes  # noqa: B018 (computes them)
        return self._classes[1], self._classes[2]

    @property
    def member_rows(self) -> np.ndarray:
        """The row of each membership, in the order of :attr:`members` (``with_rows`` only)."""
        self._require_rows()
        self.members  # noqa: B018
        return self._members[2]

    def _require_rows(self):
        if not self.with_rows:
            raise RuntimeError("these sorts were made without rows (SortedScores(with_rows=True))")

    def order(self) -> ScoreOrder:
        """The row order of each class and of the identity rows (computed once)."""
        if self._order is None:
            self._order = order_scores(self.scores, self.memberships)
        return self._order
