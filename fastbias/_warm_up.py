"""``python -m fastbias._warm_up [family ...]``: compile and cache kernels, then exit.

Started by :func:`fastbias.sweep.first_call.compile_in_background` in a fresh
environment while the first call computes in numpy. Each family runs the
path of one kind of call on small made-up data of every type its kernels
are compiled for (float32 and float64 scores, writable and read-only arrays,
a dense boolean matrix, identity columns of the usual dtypes, work split into
several pieces), so that the parent process finds them all in its cache:

``counting``
    an unweighted call without intervals (the default family);
``weighted``
    a call with ``sample_weight`` (also the explicit-cell recount);
``delong``
    ``ci="delong"``, unweighted and weighted (with ``counting`` first), and the exact walks
    for the variances the float sums cannot tell (:mod:`fastbias.intervals.exact_sums`);
``bootstrap``
    ``ci="bootstrap"``'s replicates, unweighted and weighted;
``thresholds``
    threshold metrics' counts, unweighted and weighted;
``significance``
    ``significance=``'s placement sums and permutation draws, unweighted and weighted, and
    the exact walks (with the cross sums');
``native``
    an unweighted call's sorts and counting walk as rounds on Numba's threads
    (:mod:`fastbias._native`), asked for by the first call that could use them;
``exact``
    the exact walks alone, asked for by an out-of-core call with significance tests whose
    chunks would keep their sums exact (:func:`fastbias.intervals.placement_sums.
    gather_placement_sums`) before they are compiled.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

N_ROWS = 512


def _as(values: np.ndarray, writable: bool) -> np.ndarray:
    values.setflags(write=writable)
    return values


def _inputs(rng, writable: bool):
    """(labels, dense identity matrix, weights) of N_ROWS rows."""
    return (_as(rng.random(N_ROWS) < 0.3, writable),
            _as(rng.random((N_ROWS, 3)) < 0.3, writable),
            _as(rng.random(N_ROWS), writable))


def _scores(rng, dtype, writable: bool) -> np.ndarray:
    return _as(rng.random(N_ROWS).astype(dtype), writable)


def counting(rng) -> None:
    from .prepare import memberships as prep
    from .sort.order import SortedScores
    from .sweep import counts

    buffer = np.empty(N_ROWS, dtype=np.int64)
    for writable in (True, False):  # users' arrays are often read-only (pandas copy-on-write)
        labels, matrix, _ = _inputs(rng, writable)
        for dtype in (np.float32, np.float64):
            scores = _scores(rng, dtype, writable)
            memberships = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c"],
                                                         workers=2)
            for workers in (1, 2):
                counts.count_sorted(SortedScores(scores, memberships, workers=workers))
        rows = []
        for dtype in (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.uint16,
                      np.uint32, np.uint64, np.float32, np.float64):
            values = _as((rng.random(N_ROWS) < 0.3).astype(dtype), writable)
            for threshold in (0.5, 2.0):
                rows.append(prep.column_rows(values, threshold, buffer))
        prep.prepare_memberships(labels, rows[:3], ["a", "b", "c"])
    # (the sorts and the scans read the caller's arrays through read-only views: one version
    # of each kernel, whatever the flags of what is handed in)


def _each_input(rng):
    """(scores, memberships, weights) of each type a weighted or interval call meets."""
    from .prepare import memberships as prep

    for writable in (True, False):
        labels, matrix, weights = _inputs(rng, writable)
        memberships = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c"], workers=2)
        for dtype in (np.float32, np.float64):
            yield _scores(rng, dtype, writable), memberships, weights


def weighted(rng) -> None:
    from ._numba_cache import read_only
    from .prepare.memberships import group_mask
    from .sort import order as order_module
    from .sort.order import SortedScores
    from .sweep import _kernels as K
    from .sweep import counts

    pieces = counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS
    for scores, memberships, weights in _each_input(rng):
        sorted_scores = SortedScores(scores, memberships)
        counts.count_sorted(sorted_scores, weights)
        # (in pieces too, and the row order split among threads: a large call joins the
        # pieces and sorts the classes in one bucket sort, with kernels of their own)
        counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS = 64, 16
        order_rows, order_module.PARALLEL_ORDER_MIN_ROWS = order_module.PARALLEL_ORDER_MIN_ROWS, 1
        try:
            counts.count_sorted(SortedScores(scores, memberships, workers=2), weights)
        finally:
            counts.WEIGHTED_PIECE_ROWS, counts.WEIGHTED_PIECE_IDENTITY_ROWS = pieces
            order_module.PARALLEL_ORDER_MIN_ROWS = order_rows
        order = sorted_scores.order()
        K.explicit_cell_counts(group_mask(memberships, 0), order.neg_rows, order.neg_sorted,
                               order.pos_rows, order.pos_sorted,
                               read_only(np.ascontiguousarray(weights)))  # (as counts passes it)
    # (the sorts and walks read the caller's scores, labels and weights through read-only
    # views: one version of each kernel, whatever the flags of what is handed in)


def delong(rng) -> None:
    from .intervals.delong import standard_errors
    from .sort.order import SortedScores

    counting(rng)
    for scores, memberships, weights in _each_input(rng):
        for workers in (1, 2):
            sorted_scores = SortedScores(scores, memberships, workers=workers)
            standard_errors(sorted_scores)
            standard_errors(sorted_scores, np.ascontiguousarray(weights))
        if scores.dtype == np.float64:  # (their keys widened to 64 bits: one type for all)
            _exact_walks(SortedScores(scores, memberships), cross=False)
    # (first_call.INCLUDES says what this family compiles besides its own)


def _exact_walks(sorted_scores, cross: bool) -> None:
    """The walks that keep their sums exact (:mod:`fastbias.intervals.exact_sums`; one
    compiled version for every kind of call): their own compilation of the DeLong walks
    (and with ``cross`` of the cross sums' walk), which a call needs only where the float
    sums cannot tell a variance, and then should not wait for."""
    from .intervals.exact_sums import exact_sums_of
    from .sweep.walk import member_walk

    exact = exact_sums_of(member_walk(sorted_scores), sorted_scores.memberships.n_rows)
    exact.delong(0)
    exact.overall()
    if cross:
        exact.cross(0)


def exact(rng) -> None:
    from .prepare import memberships as prep
    from .sort.order import SortedScores

    labels, dense, _ = _inputs(rng, True)
    memberships = prep.prepare_memberships_dense(labels, dense, ["a", "b", "c"])
    _exact_walks(SortedScores(_scores(rng, np.float64, True), memberships), cross=True)


def bootstrap(rng) -> None:
    from .intervals.bootstrap import replicate_counts, replicates
    from .sort.order import SortedScores

    # (the counts of one replicate, what replicate_weights and a weighted replicate's
    # recount of a subgroup draw)
    replicate_counts(np.random.SeedSequence(0), 16)

    for scores, memberships, weights in _each_input(rng):
        replicates(SortedScores(scores, memberships, with_rows=True), n_boot=2, random_state=0,
                   progress=False, n_jobs=1)
        replicates(SortedScores(scores, memberships), np.ascontiguousarray(weights), n_boot=2,
                   random_state=0, progress=False, n_jobs=1)
    # (alone: a call switches to these kernels as soon as this family's child has ended; its
    # point estimate's family is compiled next, by another child)


def thresholds(rng) -> None:
    from .metrics.thresholds import threshold_counts
    from .sort.order import SortedScores

    cuts = np.array([0.25, 0.5])
    for scores, memberships, weights in _each_input(rng):
        for sample_weight in (None, np.ascontiguousarray(weights)):
            threshold_counts(SortedScores(scores, memberships), sample_weight, cuts)


def significance(rng) -> None:
    from .intervals.significance import pvalues_of
    from .metrics.table import table_from_counts
    from .prepare import memberships as prep
    from .sort.order import SortedScores
    from .sweep.counts import count_sorted

    # writable inputs: the walks' arrays are fastbias's own (but for the weights, below);
    # and a subgroup of a few rows: its cells get drawn permutation tests
    labels, matrix, weights = _inputs(rng, True)
    matrix = np.column_stack([matrix, rng.random(N_ROWS) < 0.04])
    memberships = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c", "d"])
    for dtype in (np.float32, np.float64):
        scores = _scores(rng, dtype, True)
        sorted_scores = SortedScores(scores, memberships)
        # (the unweighted metrics stand in for the weighted ones: the weighted counts are
        # the weighted family's to compile)
        table = table_from_counts(count_sorted(sorted_scores), warn=False)
        # from the sorts, and in numpy (whose small classes draw in the kernel; every walk's
        # keys are sortable integers of the scores' width, weighted or not)
        for sorts, in_numpy in ((sorted_scores, False), (None, True)):
            pvalues_of(table, scores, memberships, sorts, None, 0.95, None, in_numpy)
        if dtype == np.float64:
            _exact_walks(sorted_scores, cross=True)
        # weighted: the weights are the caller's, writable or read-only (as pandas gives)
        for writable in (True, False):
            pvalues_of(table, scores, memberships, sorted_scores,
                       _as(np.array(weights), writable), 0.95, None, False)


def native(rng) -> None:
    from .prepare import memberships as prep
    from .sort import order
    from .sweep import counts

    def key_range(scores):
        return order.score_key_range(scores)

    for writable in (True, False):
        labels, matrix, _ = _inputs(rng, writable)
        memberships = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c"])
        for dtype in (np.float32, np.float64):
            scores = _scores(rng, dtype, writable)
            bits = scores.view(order._UINT_OF_FLOAT[scores.dtype])
            classes, members = order.sort_on_numba(bits, memberships.labels.view(np.uint8),
                                                   memberships, 2, *key_range(scores))
            counts.count_on_numba(members, classes, memberships.n_groups, 2)
        flat = matrix.view(np.uint8).reshape(-1)
        prep.csr_from_dense_on_numba(flat, *matrix.shape, labels, 2)
    # (the rounds read the caller's arrays through read-only views: one version of each
    # kernel, whatever the flags of what is handed in)


FAMILIES = {"counting": counting, "weighted": weighted, "delong": delong,
            "bootstrap": bootstrap, "thresholds": thresholds, "significance": significance,
            "native": native, "exact": exact}


#: a warm-up process waits at most this long for another's turn to end, then compiles anyway
TURN_TIMEOUT_SECONDS = 900


def _take_turn():
    """Wait until no other warm-up process compiles into this cache, then hold its lock (an
    open file; None where there is no ``fcntl`` or no safe place for the file): children of
    several processes (a loop of short scripts) take turns instead of all compiling at
    once, and later ones mostly load what an earlier one cached.

    The file lives in the cache directory numba writes to (``NUMBA_CACHE_DIR``, else the
    first kernel module's ``__pycache__``), which :mod:`fastbias._numba_cache` made sure
    only this user can write, checked again here; it is opened without following a link.
    A turn that does not end within TURN_TIMEOUT_SECONDS (a hung process) is not waited
    for any longer.
    """
    try:
        import fcntl

        import numba
    except ImportError:
        return None
    from ._numba_cache import _numba_cache_paths, is_private_directory

    directory = numba.config.CACHE_DIR or (_numba_cache_paths() or [None])[0]
    if not directory or not is_private_directory(directory):
        return None
    try:
        fd = os.open(os.path.join(directory, "fastbias-warm-up.lock"),
                     os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return None
    deadline = time.monotonic() + TURN_TIMEOUT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                return fd
            time.sleep(0.2)


def main(families=None) -> None:
    from . import _native
    from .intervals import delong
    from .prepare import memberships as prep
    from .sort import order
    from .sweep import counts

    # small data, split anyway: the kernels of several pieces compile too
    order.PARALLEL_SORT_MIN_KEYS = 1
    counts.PARALLEL_COUNT_MIN_MEMBERSHIPS = 1
    prep.PARALLEL_SCAN_MIN_ROWS = 1
    delong.DELONG_MIN_RANGE_MEMBERSHIPS = 1  # (the ranges' bounds of a walk)
    _native.ENABLED = False  # each family's own kernels (Numba's threads: family "native")
    rng = np.random.default_rng(0)
    for name in families or ["counting"]:
        FAMILIES[name](rng)


def same_package(expected: str | None) -> bool:
    """Whether this process runs the package its parent named (``FASTBIAS_PACKAGE_DIR``;
    no name: yes): compiling another copy's kernels would fill another cache."""
    here = os.path.dirname(os.path.abspath(__file__))  # this copy's fastbias directory
    return expected is None or os.path.realpath(expected) == os.path.realpath(here)


if __name__ == "__main__":
    if same_package(os.environ.get("FASTBIAS_PACKAGE_DIR")):
        turn = _take_turn()  # (importing the package chose the private cache directory)
        main(sys.argv[1:])
