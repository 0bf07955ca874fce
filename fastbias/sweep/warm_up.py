"""``python -m fastbias.sweep.warm_up``: compile and cache the counting kernels, then exit.

Started by :func:`fastbias.sweep.first_call.compile_in_background` in a fresh
environment while the first call counts in numpy. It runs the unweighted
counting path on small made-up data of every type the kernels are compiled
for (float32 and float64 scores, a dense boolean matrix, identity columns of
the usual dtypes, work split into several pieces), so that the parent
process finds them all in its cache.
"""
from __future__ import annotations

import numpy as np


def main() -> None:
    from ..prepare import memberships as prep
    from ..sort import order
    from ..sort.order import SortedScores
    from . import counts

    # small data, split anyway: the kernels of several pieces compile too
    order.PARALLEL_SORT_MIN_KEYS = 1
    counts.PARALLEL_COUNT_MIN_MEMBERSHIPS = 1
    prep.PARALLEL_SCAN_MIN_ROWS = 1
    rng = np.random.default_rng(0)
    n = 512
    buffer = np.empty(n, dtype=np.int64)
    for writable in (True, False):  # users' arrays are often read-only (pandas copy-on-write)
        labels = _as(rng.random(n) < 0.3, writable)
        matrix = _as(rng.random((n, 3)) < 0.3, writable)
        for dtype in (np.float32, np.float64):
            scores = _as(rng.random(n).astype(dtype), writable)
            memberships = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c"],
                                                         workers=2)
            for workers in (1, 2):
                counts.count_sorted(SortedScores(scores, memberships, workers=workers))
        rows = []
        for dtype in (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16,
                      np.uint32, np.uint64, np.float32, np.float64):
            values = _as((rng.random(n) < 0.3).astype(dtype), writable)
            for threshold in (0.5, 2.0):
                rows.append(prep.column_rows(values, threshold, buffer))
        prep.prepare_memberships(labels, rows[:3], ["a", "b", "c"])
    # the class sort reads the caller's scores and labels: either may be read-only alone
    for dtype in (np.float32, np.float64):
        for scores_writable, labels_writable in ((True, False), (False, True)):
            order.sort_classes(_as(rng.random(n).astype(dtype), scores_writable),
                               _as(rng.random(n) < 0.3, labels_writable), workers=2)


def _as(values: np.ndarray, writable: bool) -> np.ndarray:
    values.setflags(write=writable)
    return values


if __name__ == "__main__":
    main()
