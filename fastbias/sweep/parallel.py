"""Threads for one model: the sorts and the counting walk on two threads (the one place)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..prepare.memberships import Memberships
from ..sort.order import sort_classes, sort_memberships
from .counts import SweepCounts, sweep_counts

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


def prepare_and_sweep(scores: np.ndarray, labels: np.ndarray, prepare,
                      sample_weight: np.ndarray | None = None) -> tuple:
    """``(memberships, counts)``: ``prepare()`` builds the memberships while, on large
    unweighted inputs, a second thread sorts the classes (they need only labels and scores);
    the counting walk is then split between both threads."""
    if sample_weight is not None or scores.shape[0] < CONCURRENT_SWEEP_MIN_ROWS:
        memberships = prepare()
        return memberships, sweep_counts(scores, memberships, sample_weight)
    with ThreadPoolExecutor(max_workers=1) as pool:
        sorting = pool.submit(sort_classes, scores, labels)
        memberships = prepare()
        sorted_members = sort_memberships(scores, memberships)
        return memberships, sweep_counts(scores, memberships, sorted_classes=sorting.result(),
                                         sorted_members=sorted_members, executor=pool)


def helper_thread(enabled: bool = True):
    """A context manager lending one extra thread (a ``ThreadPoolExecutor``, or None when not
    ``enabled``), to overlap a sort with other work."""
    if not enabled:
        return _NoThread()
    return ThreadPoolExecutor(max_workers=1)


class _NoThread:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def map_in_threads(function, items, workers: int) -> list:
    """``[function(item) for item in items]``, on up to ``workers`` threads (kernels release
    the GIL); in order, on this thread alone when ``workers`` is 1."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(function, items))
