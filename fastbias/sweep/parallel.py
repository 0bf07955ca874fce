"""Threads for one model: the sorts and the counting walk on two threads (the one place)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..prepare.memberships import Memberships
from ..sort.order import SortedScores, sort_classes, sort_memberships
from .counts import SweepCounts, count_sorted

# below this many rows a second thread costs more than it saves
CONCURRENT_SWEEP_MIN_ROWS = 100_000


def sort_and_count(scores: np.ndarray, memberships: Memberships, prepare=None,
                   labels: np.ndarray | None = None, sample_weight: np.ndarray | None = None,
                   threads: int = 2, with_rows: bool = False) -> tuple:
    """Sort once and count: ``(memberships, sorted scores, counts)``.

    On large unweighted inputs with ``threads >= 2``, a second thread sorts
    the classes (they need only labels and scores) while this one builds the
    memberships (``prepare()``, when ``memberships`` is None) and sorts them;
    the counting walk is then split between both threads. Same counts, bit for
    bit, on any number of threads. ``with_rows`` makes the sorts carry the
    rows (what the bootstrap needs, see :class:`SortedScores`).
    """
    small = scores.shape[0] < CONCURRENT_SWEEP_MIN_ROWS
    if sample_weight is not None or small or threads < 2 or with_rows:
        memberships = prepare() if memberships is None else memberships
        sorted_scores = SortedScores(scores, memberships, with_rows=with_rows)
        if sample_weight is None and with_rows and not small and threads >= 2:
            with ThreadPoolExecutor(max_workers=1) as pool:
                classes = pool.submit(lambda: sorted_scores.classes)
                sorted_scores.members  # noqa: B018 (sorted here meanwhile)
                classes.result()
                return memberships, sorted_scores, count_sorted(sorted_scores, executor=pool)
        return memberships, sorted_scores, count_sorted(sorted_scores, sample_weight)
    labels = memberships.labels if labels is None else labels
    with ThreadPoolExecutor(max_workers=1) as pool:
        sorting = pool.submit(sort_classes, scores, labels)
        memberships = prepare() if memberships is None else memberships
        members = sort_memberships(scores, memberships)
        sorted_scores = SortedScores(scores, memberships, sorting.result(), members)
        return memberships, sorted_scores, count_sorted(sorted_scores, executor=pool)


def sweep_counts_concurrently(scores: np.ndarray, memberships: Memberships) -> SweepCounts:
    """Unweighted counts on two threads (same counts, bit for bit); see :func:`sort_and_count`."""
    return sort_and_count(scores, memberships)[2]


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
