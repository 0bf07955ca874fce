"""Threads for one model: its sorts and counting walk shared out among the process's threads."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .._native import available
from .._numba_cache import announce_compiling
from .._threads import SharedJobs, lend_helper
from ..prepare.memberships import Memberships
from ..sort import _kernels as SK
from ..sort.order import (
    NATIVE_SORT_KERNELS,
    SortedClasses,
    SortedScores,
    score_key_range,
    sort_classes,
    sort_memberships,
)
from . import _kernels as K
from .counts import count_sorted
from .first_call import (
    FIRST_CALL_MAX_ROWS,
    compile_in_background,
    counts_and_plan,
    families_for,
    still_compiling,
    tier_enabled,
)

# below this many rows a helper thread that sorts while the caller reads columns does not pay
CONCURRENT_SWEEP_MIN_ROWS = 100_000


def announce_first_use(weighted: bool = False, note: str = "") -> int:
    """Log one line (logger ``"fastbias"``) when this call must compile its kernels first
    (a fresh environment: about 0.5 s per kernel, cached afterwards); see
    :func:`fastbias._numba_cache.announce_compiling`. Returns how many must compile."""
    return announce_compiling("weighted counting" if weighted else "counting",
                              counting_kernels(weighted), note)


def counting_kernels(weighted: bool) -> list:
    """The kernels every count needs after the memberships, unweighted or weighted (which
    membership readers compile depends on the kind of input: a set that is never compiled
    would make every call look cold)."""
    if weighted:
        return [SK.radix_sort_class, SK.radix_sort_gathered, SK.class_top_digit_counts,
                SK.scatter_class_keys, SK.sort_buckets, SK.bucket_slots, SK.bucket_runs,
                K.block_cuts, K.class_walk_cuts, K.class_weight_below_range, K.dd_prefix,
                K.add_twice_offset, K.member_weights_in_range, K.weighted_u_in_range,
                K.join_member_weights, K.finish_member_weights]
    return list(COUNTING_KERNELS)


#: the kernels of an unweighted count after the memberships (``fastbias._warm_up``)
COUNTING_KERNELS = [SK.class_top_digit_counts, SK.scatter_class_keys, SK.member_top_digit_counts,
                    SK.scatter_member_keys, SK.sort_buckets, K.member_counts_in_range,
                    K.add_member_counts, K.finish_member_counts, K.twice_auc_numerator_sorted,
                    K.block_boundary_near]


def sort_and_count(scores: np.ndarray, memberships: Memberships | None, prepare=None,
                   labels: np.ndarray | None = None, sample_weight: np.ndarray | None = None,
                   workers: int = 1, with_rows: bool = False,
                   numpy_if_cold: bool = False, families: list | None = None,
                   score_bounds: tuple | None = None, numpy_plan: bool = False) -> tuple:
    """Sort once and count: ``(memberships, sorted scores, counts, numpy plan)``.

    ``prepare(workers, compiled=True)`` builds the memberships on that many
    threads when ``memberships`` is None. The sorts and the counting walk
    are each shared out among up to ``workers`` threads (see
    ``fastbias._threads``); the counts are the same, bit for bit, on any
    number of threads. ``with_rows`` makes the sorts carry the rows (what
    the bootstrap needs, see :class:`SortedScores`). ``score_bounds``: the scores'
    ``(smallest, largest)``, if the validate stage found them.

    With ``numpy_if_cold`` (what the caller does afterwards needs no sorts: the
    intervals of such a call are computed in numpy too), a call whose counting
    kernels must still compile counts in numpy while they compile in a
    background process (see :mod:`fastbias.sweep.first_call`; ``families``: the
    kernel families to compile, default those of the counts); its sorted scores
    are then None, and with ``numpy_plan`` the fourth item is the numpy plan the counts
    were read from (:func:`~fastbias.sweep.first_call.counts_and_plan`), for a
    bootstrap's replicates in numpy to read instead of sorting again (else None).

    Unweighted, with memberships still to build (``prepare`` and the
    ``labels``) and enough rows, the class sort (it needs only the labels
    and the scores) runs beside the membership scan and sort, half the
    threads each, and this thread, done with the memberships, joins the class
    sort's last phase (sorting its buckets) instead of waiting for it.
    """
    if count_in_numpy_now(sample_weight is not None,
                          numpy_if_cold and memberships is None
                          and scores.shape[0] <= FIRST_CALL_MAX_ROWS):
        # a fresh environment: the same counts in numpy while the kernels compile
        for family in families or families_for(sample_weight is not None):
            compile_in_background(family)
        memberships = prepare(1, False)
        return (memberships, None, *counts_and_plan(scores, memberships, sample_weight,
                                                     keep=numpy_plan))
    # (where the sorts run on Numba's threads, each round takes every thread: no overlap)
    overlap = (memberships is None and labels is not None and sample_weight is None
               and not with_rows and workers >= 2 and scores.shape[0] >= CONCURRENT_SWEEP_MIN_ROWS
               and not available(workers, scores.shape[0], NATIVE_SORT_KERNELS))
    if not overlap:
        memberships = prepare(workers) if memberships is None else memberships
        sorted_scores = SortedScores(scores, memberships, with_rows=with_rows, workers=workers,
                                     score_bounds=score_bounds)
        return memberships, sorted_scores, count_sorted(sorted_scores, sample_weight), None
    key_range = score_key_range(scores, workers, score_bounds)
    class_workers = workers // 2
    share = SharedJobs()  # the class sort's last phase, which this thread joins when done
    with lend_helper() as helper:
        classes = helper.submit(_sort_classes_sharing, share, scores, labels, class_workers,
                                key_range)
        try:
            memberships = prepare(workers - class_workers)
            members = sort_memberships(scores, memberships, workers - class_workers, key_range)
            share.help()
        finally:
            share.close()  # (on an error here, the sort stops taking jobs)
        sorted_scores = SortedScores(scores, memberships, classes.result(), members,
                                     workers=workers)
    return memberships, sorted_scores, count_sorted(sorted_scores), None


def _sort_classes_sharing(share: SharedJobs, *args) -> SortedClasses:
    """:func:`sort_classes` with its last phase offered to ``share``; closes it however it
    ends, so that a thread waiting to help does not wait for ever."""
    try:
        return sort_classes(*args, share=share)
    finally:
        share.close()


def count_in_numpy_now(weighted: bool, eligible: bool, thresholds: bool = False) -> bool:
    """Announce a first use (:func:`announce_first_use`) and say whether this call should
    count in numpy (see :mod:`fastbias.sweep.first_call`): it is ``eligible`` (no sorts
    needed afterwards) and the counting kernels (weighted or not) must still compile, or are
    compiling in the background; with ``thresholds`` (the call also counts at thresholds)
    the same of the threshold walk's kernel."""
    eligible = eligible and tier_enabled()
    note = "; this call counts in numpy meanwhile" if eligible else ""
    cold = announce_first_use(weighted, note) > 0
    cold = (cold or still_compiling("weighted" if weighted else "counting"))
    if thresholds:
        cold = (announce_compiling("threshold counts", [K.member_weight_at_or_above], note) > 0
                or still_compiling("thresholds") or cold)
    return eligible and cold


def map_in_threads(function, items, workers: int) -> list:
    """``[function(item) for item in items]``, on up to ``workers`` threads (kernels release
    the GIL); in order, on this thread alone when ``workers`` is 1."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(function, items))
