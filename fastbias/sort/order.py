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

from .._native import native_pieces, numba_threads
from .._numba_cache import read_only
from .._threads import even_ranges, jobs_for, run_jobs, run_pieces
from ..prepare.memberships import Memberships, membership_rows_and_codes
from ..validate.values import score_bounds
from . import _kernels as K

_UINT_OF_FLOAT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


class SortedClasses(NamedTuple):
    """All negatives' and all positives' scores in increasing order, as sortable keys.

    ``neg_keys``/``pos_keys`` are unsigned integers whose order (and equality)
    is that of the scores they came from (see ``_kernels.sorted_class_keys``).
    """

    neg_keys: np.ndarray
    pos_keys: np.ndarray


# below this many keys per extra thread a sort is not worth splitting
PARALLEL_SORT_MIN_KEYS = 100_000


def score_key_range(scores: np.ndarray, workers: int = 1, bounds: tuple | None = None) -> tuple:
    """``(low, shift)`` of the sorts' buckets: the smallest sortable key of ``scores`` and
    the shift that maps the keys' range onto TOP_BUCKETS buckets
    (``bucket = (key - low) >> shift``). Buckets over the keys' own range stay
    balanced when the scores crowd into a few binades. ``bounds``: the scores'
    ``(smallest, largest)`` if known (the validate stage finds them, see
    :func:`~fastbias.validate.values.finite_bounds`)."""
    if scores.shape[0] == 0:
        return np.uint64(0), np.uint64(0)
    smallest, largest = score_bounds(scores, workers) if bounds is None else bounds
    low = sortable_key(smallest)
    span = sortable_key(largest) - low
    return np.uint64(low), np.uint64(max(span.bit_length() - K.TOP_BUCKET_BITS, 0))


def sortable_key(value) -> int:
    """The sortable key of one finite float32/float64 score (``_kernels._sortable_key``)."""
    value = np.asarray(value)
    n_bits = value.dtype.itemsize * 8
    bits = int((value + value.dtype.type(0)).view(_UINT_OF_FLOAT[value.dtype]))  # -0.0 -> +0.0
    sign = 1 << (n_bits - 1)
    return (~bits) & ((1 << n_bits) - 1) if bits & sign else bits | sign


#: how many scores :func:`sortable_keys_in_place` turns at a time (its mask's memory)
_KEYS_BLOCK = 1 << 16


def sortable_keys_in_place(values: np.ndarray) -> np.ndarray:
    """Turn float32/float64 scores into their sortable keys (``_kernels._sortable_key``,
    the sorts' keys) in place, and return them as the same memory viewed as uint32/uint64:
    the same order and ties as the scores (-0.0 ties +0.0). ``values``: a C-contiguous
    array of fastbias's own, without NaN. So the walks of weighted calls and of the numpy
    tier read keys of the sorts' types, and their kernels compile once for all calls.

    Examples
    --------
    >>> import numpy as np
    >>> sortable_keys_in_place(np.array([-1.5, -0.0, 0.0, 2.0], dtype=np.float32))
    array([1077936127, 2147483648, 2147483648, 3221225472], dtype=uint32)
    """
    return _flip_key_bits(values.view(_UINT_OF_FLOAT[values.dtype]), to_keys=True)


def _flip_key_bits(bits: np.ndarray, to_keys: bool) -> np.ndarray:
    """Scores' bit patterns to sortable keys (``to_keys``; -0.0 made +0.0 first) or back, in
    place, a block at a time: a branch-free xor with all ones (a negative score) or the
    sign bit alone."""
    n_bits = bits.dtype.itemsize * 8
    signed, floats = (np.int32, np.float32) if n_bits == 32 else (np.int64, np.float64)
    sign = signed(np.iinfo(signed).min)  # (the sign bit alone)
    for start in range(0, bits.shape[0], _KEYS_BLOCK):
        if to_keys:
            bits[start:start + _KEYS_BLOCK].view(floats)[...] += floats(0)  # -0.0 -> +0.0
        part = bits[start:start + _KEYS_BLOCK].view(signed)
        # all ones where the bits read as negative: a negative score's (to keys), a
        # non-negative score's key (back); the other way round, back
        mask = part >> (n_bits - 1)
        if not to_keys:
            mask = ~mask
        mask |= sign
        part ^= mask
    return bits


def floats_of_keys_in_place(keys: np.ndarray, dtype) -> np.ndarray:
    """The inverse of :func:`sortable_keys_in_place`: uint32/uint64 sortable keys turned back
    into the bit patterns of their float32/float64 scores (-0.0 comes back as +0.0), in
    place, returned as the same memory viewed as ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([-1.5, -0.0, 2.0], dtype=np.float32)
    >>> floats_of_keys_in_place(sortable_keys_in_place(scores.copy()), np.float32)
    array([-1.5,  0. ,  2. ], dtype=float32)
    """
    return _flip_key_bits(keys, to_keys=False).view(dtype)


# the last phase of a sort shared with another thread is offered as this many jobs
SHARED_BUCKET_JOBS = 16

# on Numba's threads (fastbias._native) a piece costs no handoff: a sort is cut into one piece
# per thread, none smaller than this many keys
NATIVE_SORT_MIN_KEYS = 20_000

#: the kernel of the sorts on Numba's threads
NATIVE_SORT_KERNELS = (K.sort_keys_pieces,)


def sort_keys(scores: np.ndarray, labels: np.ndarray | None = None,
              memberships: Memberships | None = None, workers: int = 1,
              key_range: tuple | None = None, share=None,
              class_rows: np.ndarray | None = None) -> tuple:
    """The class sort (``labels`` given) and the membership sort (``memberships`` given) of
    finite float32/float64 ``scores``: ``(SortedClasses or None, (keys, codes) or None)``.

    Both go through the same rounds, each cut into jobs that up to ``workers`` threads
    take as they become free (:func:`~fastbias._threads.run_jobs`): count each range of
    rows' keys by bucket, scatter them to their
    buckets, sort every bucket while it is in cache (see ``_kernels``). No
    row indices are kept (the unweighted sweep needs only the sorted values);
    the memberships stay stable (a row's subgroups in order). The result does
    not depend on ``workers``. ``key_range``: :func:`score_key_range`, if known.
    ``share`` (a :class:`~fastbias._threads.SharedJobs`): the last phase, sorting the
    buckets, is offered there as SHARED_BUCKET_JOBS jobs, so that a thread done with other
    work can join in (the sort is the same). Without ``share``, where
    :func:`fastbias._native.numba_threads` allows, each round runs as one kernel on
    Numba's threads instead (the same pieces' kernels: the same sort). The kernels read
    the scores, the labels and the memberships through read-only views, writable or not:
    one compiled version of each per key width. ``class_rows`` (one int32/int64 slot per
    row): the class sort carries the rows along and leaves them there, the negatives' first,
    each class's in the order of its keys (the same order as :func:`radix_sort_class`'s,
    the sort being stable); on the pool only.
    """
    uint = _UINT_OF_FLOAT[scores.dtype]
    bits = read_only(scores.view(uint))
    low, shift = score_key_range(scores, workers) if key_range is None else key_range
    if labels is not None:
        labels = read_only(labels.view(np.uint8))  # read as 0/1 bytes: no branch on the label
    m = memberships
    n_members = 0 if m is None else m.row_groups.shape[0]
    n_sorted = max(scores.shape[0] if labels is not None else 0, n_members)
    if (share is None and class_rows is None
            and native_pieces(n_sorted, workers, NATIVE_SORT_MIN_KEYS) > 1):
        with numba_threads(workers, scores.shape[0], NATIVE_SORT_KERNELS) as on_numba:
            if on_numba:
                return sort_on_numba(bits, labels, m, native_pieces(
                    n_sorted, workers, NATIVE_SORT_MIN_KEYS), low, shift)
    pieces = jobs_for(max(scores.shape[0] if labels is not None else 0, n_members), workers,
                      PARALLEL_SORT_MIN_KEYS)
    rows = even_ranges(scores.shape[0], pieces)
    members = _member_ranges(m.row_ptr, pieces) if m is not None else None
    identity_rows, identity_labels, row_ptr, row_groups = _read_memberships(m)

    def count(j):
        return (None if labels is None else
                K.class_top_digit_counts(bits, labels, *rows[j], low, shift),
                None if m is None else
                K.member_top_digit_counts(bits, identity_rows, row_ptr, *members[j], low,
                                          shift))

    counts = run_jobs(count, range(pieces), workers)
    # the classes' array (the negatives' buckets, then the positives'), the memberships'
    class_start = member_start = _NO_BUCKETS
    if labels is not None:
        class_start, class_slot = K.bucket_slots(np.stack([c for c, _ in counts]))
        n_neg = int(class_start[K.TOP_BUCKETS])
    if m is not None:
        member_start, member_slot = K.bucket_slots(np.stack([c for _, c in counts]))
    out, keys, codes = _sorted_arrays(scores.shape[0] if labels is not None else 0, m, uint)

    def scatter(j):
        if labels is not None:
            K.scatter_class_keys(bits, labels, *rows[j], low, shift, class_slot[j], out,
                                 _NO_ROWS if class_rows is None else class_rows)
        if m is not None:
            K.scatter_member_keys(bits, identity_rows, identity_labels, row_ptr, row_groups,
                                  *members[j], low, shift, member_slot[j], keys, codes)

    run_jobs(scatter, range(pieces), workers)
    out_scratch, keys_scratch, codes_scratch = (np.empty_like(a) for a in (out, keys, codes))
    # (no rows carried: an empty int32 payload, as the membership sort's codes, so that the
    # two sorts share one compiled sort_buckets per key width)
    carried = _NO_ROWS if class_rows is None else class_rows
    carried_scratch = _NO_ROWS if class_rows is None else np.empty_like(class_rows)

    def sort_buckets(run):
        if run[1] > run[0]:
            K.sort_buckets(out, carried, out_scratch, carried_scratch, class_start, run[0],
                           run[1], low, shift)
        if run[3] > run[2]:  # (a sort not made has no buckets: no call, nothing compiled)
            K.sort_buckets(keys, codes, keys_scratch, codes_scratch, member_start, run[2],
                           run[3], low, shift)

    if share is None:
        run_jobs(sort_buckets, K.bucket_runs(class_start, member_start, pieces), workers)
    else:
        share.post(sort_buckets, K.bucket_runs(class_start, member_start,
                                               max(SHARED_BUCKET_JOBS, pieces)))
        share.finish(workers)
    return (SortedClasses(out[:n_neg], out[n_neg:]) if labels is not None else None,
            (keys, codes) if m is not None else None)


_NO_BUCKETS = np.zeros(1, dtype=np.int64)  # the bucket starts of a sort not made: none
_NO_PAYLOAD = np.empty(0, dtype=np.int64)
_NO_ROWS = np.empty(0, dtype=np.int32)  # the class sort's rows, not carried


def _read_memberships(memberships: Memberships | None) -> tuple:
    """What the membership sort reads: ``(identity_rows, identity_labels, row_ptr,
    row_groups)`` as read-only views (one compiled version, whatever their flags); empty,
    with one row pointer, without ``memberships``."""
    m = memberships
    arrays = ((_NO_PAYLOAD, np.empty(0, dtype=np.bool_), _NO_BUCKETS, _NO_PAYLOAD) if m is None
              else (m.identity_rows, m.identity_labels, m.row_ptr, m.row_groups))
    return tuple(read_only(a) for a in arrays)


def _sorted_arrays(n_rows: int, memberships: Memberships | None, uint) -> tuple:
    """What the sorts write: ``(out, keys, codes)``, the classes' keys (``n_rows``: 0 when
    that sort is not made) and the memberships' keys and codes (empty without
    ``memberships``); codes int32 unless there are more than 2**30 subgroups."""
    m = memberships
    n_members = 0 if m is None else m.row_groups.shape[0]
    code = np.int32 if m is None or 2 * m.n_groups + 1 < 2 ** 31 else np.int64
    return (np.empty(n_rows, dtype=uint), np.empty(n_members, dtype=uint),
            np.empty(n_members, dtype=code))


def sort_on_numba(bits: np.ndarray, labels: np.ndarray | None,
                  memberships: Memberships | None, pieces: int, low, shift) -> tuple:
    """:func:`sort_keys` as one kernel on Numba's threads (``_kernels.sort_keys_pieces``,
    see :mod:`fastbias._native`): the class sort (``labels`` given, as uint8) and the
    membership sort (``memberships`` given) share its rounds, the rows and the identity rows
    each cut into ``pieces`` ranges (the identity rows' of about equal numbers of
    memberships). ``bits``: the scores viewed as unsigned integers; ``(low, shift)`` the key
    range. ``(SortedClasses or None, (keys, codes) or None)``."""
    m = memberships
    n_rows = 0 if labels is None else bits.shape[0]
    rows = np.array(even_ranges(n_rows, pieces), dtype=np.int64)
    members = (np.zeros((pieces, 2), dtype=np.int64) if m is None else
               np.array(_member_ranges(m.row_ptr, pieces), dtype=np.int64))
    identity_rows, identity_labels, row_ptr, row_groups = _read_memberships(m)
    out, keys, codes = _sorted_arrays(n_rows, m, bits.dtype)
    # (what it reads, the caller's arrays among them, read-only or not: read-only views, so
    # that one version compiles)
    n_neg = int(K.sort_keys_pieces(
        *(read_only(a) for a in (bits, _NO_LABELS if labels is None else labels, rows[:, 0],
                                 rows[:, 1])), identity_rows, identity_labels, row_ptr,
        row_groups, *(read_only(a) for a in (members[:, 0], members[:, 1])),
        low, shift, out, np.empty_like(out), keys, codes, np.empty_like(keys),
        np.empty_like(codes)))
    return (None if labels is None else SortedClasses(out[:n_neg], out[n_neg:]),
            None if m is None else (keys, codes))


_NO_LABELS = np.empty(0, dtype=np.uint8)


def sort_classes(scores: np.ndarray, labels: np.ndarray, workers: int = 1,
                 key_range: tuple | None = None, share=None) -> SortedClasses:
    """All negatives' and all positives' scores, each sorted, as keys (see :func:`sort_keys`)."""
    return sort_keys(scores, labels, None, workers, key_range, share)[0]


def sort_memberships(scores: np.ndarray, memberships: Memberships, workers: int = 1,
                     key_range: tuple | None = None) -> tuple:
    """Every (row, subgroup) membership in score order: ``(keys, codes)``.

    ``keys`` are the rows' sortable score keys (comparable with
    :class:`SortedClasses`), ascending; ``codes`` are ``2 * subgroup + label``
    (int32 unless there are more than 2**30 subgroups). Stable: the
    memberships of one row stay in subgroup order. See :func:`sort_keys`.
    """
    return sort_keys(scores, None, memberships, workers, key_range)[1]


def _member_ranges(row_ptr: np.ndarray, pieces: int) -> list:
    """``pieces`` ranges of identity rows holding about equal numbers of memberships."""
    targets = (np.arange(pieces + 1, dtype=np.int64) * int(row_ptr[-1])) // pieces
    bounds = np.searchsorted(row_ptr, targets)
    bounds[0], bounds[-1] = 0, row_ptr.shape[0] - 1
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


@dataclass(frozen=True)
class ScoreOrder:
    """One score vector sorted once, reusable for any number of weightings.

    ``neg_rows``/``pos_rows`` are the negative/positive row indices in
    increasing score order and ``neg_sorted``/``pos_sorted`` their scores;
    ``id_order`` sorts the identity rows (``Memberships.identity_rows``: the
    row of the identity row ``id_order[t]`` is ``identity_rows[id_order[t]]``)
    and ``id_sorted`` holds their scores in that order (what walks along the
    identity rows read, in order). Re-weighting (sample weights, bootstrap
    replicates) needs only :func:`sweep_weighted`, never a new sort.
    """

    id_order: np.ndarray
    neg_rows: np.ndarray
    pos_rows: np.ndarray
    neg_sorted: np.ndarray
    pos_sorted: np.ndarray
    id_sorted: np.ndarray


def _payload_scratch(n_scores: int, n_sorted: int, payload: int) -> np.ndarray:
    """The buffer a radix sort carries its payload in: int32 where the rows or positions fit
    (half the memory, and one width compiled for every kernel that reads them), none for
    ``PAYLOAD_NONE``."""
    width = np.int32 if max(n_scores, n_sorted) < 2**31 else np.int64
    return np.empty(n_sorted if payload != K.PAYLOAD_NONE else 0, dtype=width)


def _radix(scores: np.ndarray, rows: np.ndarray, payload: int, as_keys: bool = False) -> tuple:
    """:func:`~fastbias.sort._kernels.radix_sort_gathered` on ``scores[rows]``: ``(sorted values,
    or their sortable keys with ``as_keys``; the payload)``."""
    # (the caller's scores and rows, read-only or not: read-only views, one version)
    out, carried = K.radix_sort_gathered(
        read_only(scores.view(_UINT_OF_FLOAT[scores.dtype])), read_only(rows),
        scores.dtype.itemsize * 8,
        _payload_scratch(scores.shape[0], rows.shape[0], payload), payload, as_keys)
    return (out if as_keys else out.view(scores.dtype)), carried


def _radix_class(scores: np.ndarray, labels: np.ndarray, label: int, n_rows: int,
                 payload: int, as_keys: bool = False) -> tuple:
    """:func:`_radix` of the rows of one class (``labels == label``; ``n_rows`` of them),
    read from the labels (:func:`~fastbias.sort._kernels.radix_sort_class`)."""
    out, carried = K.radix_sort_class(
        read_only(scores.view(_UINT_OF_FLOAT[scores.dtype])), read_only(labels.view(np.uint8)),
        label,
        scores.dtype.itemsize * 8, _payload_scratch(scores.shape[0], n_rows, payload), payload,
        as_keys)
    return (out if as_keys else out.view(scores.dtype)), carried


def sorted_scores(scores: np.ndarray, rows: np.ndarray, with_order: bool = False):
    """``np.sort(scores[rows] + 0.0)`` (and its stable argsort) by an LSD radix sort.

    ``scores`` must be finite float32/float64 (as :func:`as_scores` returns).
    Returns ``(sorted_values, order)``; ``order`` (positions into ``rows``)
    is None unless asked for. On 1.8M float32 scores this is several times
    faster than ``np.sort`` and far faster than ``np.argsort`` here.
    """
    out, order = _radix(scores, rows, K.PAYLOAD_POSITIONS if with_order else K.PAYLOAD_NONE)
    return out, (order if with_order else None)


# from this many rows on, with two threads or more, the classes' sorts of the row order are
# split among the threads (the bucket sort of sort_keys, carrying the rows)
PARALLEL_ORDER_MIN_ROWS = 2 * PARALLEL_SORT_MIN_KEYS


def order_scores(scores: np.ndarray, memberships: Memberships, workers: int = 1) -> ScoreOrder:
    """Sort ``scores`` within each class and among the identity rows: on two threads or more
    and enough rows, the identity rows first, then both classes in one bucket sort that
    carries the rows and is split among the threads (:func:`sort_keys`); else the three
    sorts side by side on up to ``workers`` threads. Both give the same arrays (stable
    sorts of the same keys)."""
    m = memberships
    n_neg, n_pos = m.class_rows
    if workers >= 2 and scores.shape[0] >= PARALLEL_ORDER_MIN_ROWS:
        id_sorted, id_order = _radix(scores, m.identity_rows, K.PAYLOAD_POSITIONS)
        rows = _payload_scratch(scores.shape[0], scores.shape[0], K.PAYLOAD_ROWS)
        classes = sort_keys(scores, m.labels, None, workers, class_rows=rows)[0]
        neg_sorted, pos_sorted = (floats_of_keys_in_place(keys, scores.dtype)
                                  for keys in classes)
        return ScoreOrder(id_order, rows[:n_neg], rows[n_neg:], neg_sorted,
                          pos_sorted, id_sorted)
    (id_sorted, id_order), (neg_sorted, neg_rows), (pos_sorted, pos_rows) = run_pieces(
        lambda task: task[0](*task[1:]),
        [(_radix, scores, m.identity_rows, K.PAYLOAD_POSITIONS),
         (_radix_class, scores, m.labels, 0, n_neg, K.PAYLOAD_ROWS),
         (_radix_class, scores, m.labels, 1, n_pos, K.PAYLOAD_ROWS)], workers)
    return ScoreOrder(id_order, neg_rows, pos_rows, neg_sorted, pos_sorted,
                      id_sorted)


def sort_classes_with_rows(scores: np.ndarray, memberships: Memberships) -> tuple:
    """:func:`sort_classes` that also gives each class's rows in that order:
    ``(SortedClasses, negative rows, positive rows)``."""
    m = memberships
    n_neg, n_pos = m.class_rows
    neg_keys, neg_rows = _radix_class(scores, m.labels, 0, n_neg, K.PAYLOAD_ROWS, as_keys=True)
    pos_keys, pos_rows = _radix_class(scores, m.labels, 1, n_pos, K.PAYLOAD_ROWS, as_keys=True)
    return SortedClasses(neg_keys, pos_keys), neg_rows, pos_rows


def sort_memberships_with_rows(scores: np.ndarray, memberships: Memberships) -> tuple:
    """:func:`sort_memberships` that also gives each membership's row: ``(keys, codes, rows)``."""
    rows, codes = membership_rows_and_codes(memberships)
    keys, order = _radix(scores, rows, K.PAYLOAD_POSITIONS, as_keys=True)
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
    workers : int, default 1
        Threads the sorts (and the counts from them) may use.
    score_bounds : tuple, optional
        The scores' ``(smallest, largest)``, if known (see
        :func:`~fastbias.validate.values.finite_bounds`): the sorts' key range
        then needs no pass over the scores.
    """

    def __init__(self, scores: np.ndarray, memberships: Memberships, classes=None, members=None,
                 with_rows: bool = False, workers: int = 1, score_bounds: tuple | None = None):
        self.scores, self.memberships, self.with_rows = scores, memberships, with_rows
        self.workers = workers
        self._classes, self._members, self._order = classes, members, None  # computed on demand
        self._key_range, self._bounds = None, score_bounds

    def sort(self) -> SortedScores:
        """Make both sorts now, together (fewer rounds of threads than one after the other);
        returns ``self``."""
        if self._classes is not None or self._members is not None:
            return self  # one is made already: the other follows on first use
        if self.with_rows:
            # these two sorts are not split themselves: they run side by side
            run_pieces(lambda part: getattr(self, part), ["classes", "members"],
                       min(self.workers, 2))
        else:
            self._classes, self._members = sort_keys(self.scores, self.memberships.labels,
                                                     self.memberships, self.workers,
                                                     self.key_range)
        return self

    @property
    def classes(self) -> SortedClasses:
        if self._classes is None:
            self._classes = (sort_classes_with_rows(self.scores, self.memberships)
                             if self.with_rows else sort_classes(self.scores,
                                                                 self.memberships.labels,
                                                                 self.workers, self.key_range))
        return self._classes[0] if self.with_rows else self._classes

    @property
    def members(self) -> tuple:
        """``(keys, codes)`` of every membership by score (see :func:`sort_memberships`)."""
        if self._members is None:
            self._members = (sort_memberships_with_rows(self.scores, self.memberships)
                             if self.with_rows else sort_memberships(self.scores, self.memberships,
                                                                     self.workers, self.key_range))
        return self._members[:2]

    @property
    def key_range(self) -> tuple:
        """:func:`score_key_range` of the scores (the two sorts' buckets; computed once)."""
        if self._key_range is None:
            self._key_range = score_key_range(self.scores, self.workers, self._bounds)
        return self._key_range

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
            self._order = order_scores(self.scores, self.memberships, self.workers)
        return self._order
