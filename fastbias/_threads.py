"""The threads fastbias runs its kernels on: one pool for the process, shared by every call.

Every stage that splits one model's work into pieces (the sorts, the
membership scan, the counting walk) hands the pieces to :func:`run_pieces`:
the calling thread runs the first piece itself and the pool's threads the
others, so a call on ``w`` workers keeps ``w`` threads busy and starts none.
The kernels release the GIL (``nogil=True``), so the pieces run in parallel.

Nested use never deadlocks: on a pool thread, :func:`run_pieces` runs every
piece on that thread. Calls from several threads at once (models evaluated
in threads) queue their pieces on the same pool, so the process never runs
more kernel threads than the pool holds plus the calling threads.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

_local = threading.local()
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_helpers: ThreadPoolExecutor | None = None


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS tells, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pieces_for(n_items: int, workers: int, min_per_piece: int) -> int:
    """How many pieces to split ``n_items`` of work into on ``workers`` threads: one per
    worker, but none smaller than ``min_per_piece`` (one piece below that)."""
    return int(max(1, min(workers, n_items // max(min_per_piece, 1))))


# work that threads take as they become free (:func:`run_jobs`) is cut into this many jobs
# per thread, so that the threads end together even where some run slower than others
# (cores shared with another thread or process): with one piece per thread, the slowest
# piece sets the end of the round
JOBS_PER_WORKER = 4


def jobs_for(n_items: int, workers: int, min_per_job: int) -> int:
    """How many jobs to cut ``n_items`` of work into for :func:`run_jobs` on ``workers``
    threads: JOBS_PER_WORKER per thread, none smaller than ``min_per_job`` (one job on one
    thread, or below that size)."""
    return 1 if workers <= 1 else pieces_for(n_items, workers * JOBS_PER_WORKER, min_per_job)


def even_ranges(n: int, pieces: int) -> list:
    """``pieces`` contiguous ``(start, stop)`` ranges of about equal length covering ``range(n)``."""
    bounds = [(j * n) // pieces for j in range(pieces + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def _mark_pool_thread():
    _local.in_pool = True


def in_pool_thread() -> bool:
    """Whether this thread is one of the pool's (work split from here runs here alone)."""
    return getattr(_local, "in_pool", False)


def _submit_to_pool(threads: int, function, items) -> list:
    """Submit ``function(item)`` for each item to the process's pool, grown first to at least
    ``threads`` threads (never shrunk); returns the futures. Under the lock, so that no
    caller submits to a pool being replaced."""
    global _pool, _pool_size
    # at least one thread per usable CPU but the caller's: calls that overlap (two sorts side
    # by side, models in threads) then find threads for all their pieces
    threads = max(threads, usable_cpus() - 1)
    with _lock:
        if _pool is None or _pool_size < threads:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fastbias",
                                       initializer=_mark_pool_thread)
            _pool_size = threads
            if old is not None:
                old.shutdown(wait=False)  # its threads finish what they were given, then exit
        return [_pool.submit(function, item) for item in items]


def _forget_pool_in_fork() -> None:
    """In a forked child (``multiprocessing``'s default start method on Linux): the parent's
    pool threads do not exist here, and its lock may have been held at the fork. Start
    afresh; otherwise the child's first split call would wait for ever for threads that
    will never run its pieces."""
    global _pool, _pool_size, _lock, _local, _helpers
    _pool, _pool_size, _helpers = None, 0, None
    _lock = threading.Lock()
    _local = threading.local()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_fork)


def run_pieces(function, pieces, workers: int) -> list:
    """``[function(piece) for piece in pieces]``, on up to ``workers`` threads, in order.

    This thread runs the first share of the pieces and the shared pool the
    others; with more pieces than workers, each thread runs a contiguous
    share in turn, so a call never keeps more than ``workers`` threads busy.
    On one worker, for one piece, or on a pool thread (nested), everything
    runs here. An exception in any piece is raised here once all shares
    have finished.
    """
    pieces = list(pieces)
    workers = min(workers, len(pieces))
    if workers <= 1 or in_pool_thread():
        return [function(piece) for piece in pieces]
    bounds = [(j * len(pieces)) // workers for j in range(workers + 1)]
    shares = [pieces[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    def run_share(share):
        return [function(piece) for piece in share]

    try:
        futures = _submit_to_pool(workers - 1, run_share, shares[1:])
    except RuntimeError:  # the interpreter is shutting down (no new threads): all here
        return [function(piece) for piece in pieces]
    try:
        first = run_share(shares[0])
    finally:
        wait(futures)  # none may still be writing into shared arrays when this returns
    return first + [result for future in futures for result in future.result()]


def run_jobs(function, items, workers: int) -> list:
    """``[function(item) for item in items]``, in order, on up to ``workers`` threads that
    each take the next item as soon as they are free: for items of uneven cost, where
    :func:`run_pieces` (a fixed share per thread) would leave a thread idle. Runs
    everything here on one worker or on a pool thread. An exception in an item is raised
    here once every thread has stopped."""
    items = list(items)
    workers = min(workers, len(items))
    if workers <= 1 or in_pool_thread():
        return [function(item) for item in items]
    results = [None] * len(items)

    def job(j):
        results[j] = function(items[j])

    share = SharedJobs()
    share.post(job, range(len(items)))
    try:
        share.finish(workers)
    finally:
        share.close()
    return results


class _LentHelper:
    """What :func:`lend_helper` yields: ``submit`` runs a function on a helper thread; leaving
    the ``with`` block waits for everything submitted through it."""

    def __init__(self):
        self._futures = []

    def submit(self, function, *args, **kwargs):
        global _helpers
        with _lock:
            if _helpers is None:
                # helper tasks never wait for one another, so a busy set only queues them
                _helpers = ThreadPoolExecutor(max_workers=4 * usable_cpus() + 4,
                                              thread_name_prefix="fastbias-helper")
            helpers = _helpers
        future = helpers.submit(function, *args, **kwargs)
        self._futures.append(future)
        return future

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        wait(self._futures)  # nothing submitted may still write into the caller's arrays
        return False


def lend_helper(enabled: bool = True):
    """A context manager lending a thread beside the pool's (or None when not ``enabled``),
    to overlap a whole sort with the caller's own work.

    The helper threads are the process's, kept between calls (starting a thread costs about
    0.1 ms, more than some calls' whole overlap gains); a helper is not a pool thread, so what
    it runs may split its own work on the pool (:func:`run_pieces`).
    """
    if not enabled:
        return _NoHelper()
    return _LentHelper()


class _NoHelper:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class SharedJobs:
    """Jobs that one thread posts and another thread may join in: each job runs once, on
    whichever thread takes it first.

    One model's class sort uses it (:func:`fastbias.sweep.parallel.sort_and_count`): the
    sort runs beside the membership scan and sort, and the calling thread, done with those,
    takes part in the sort's last phase instead of waiting for it. The poster calls
    :meth:`post`, then :meth:`finish` (it takes jobs too and returns once every job has
    ended) and at last :meth:`close`, also when it fails before posting; a helper calls
    :meth:`help`. Waiting is for the helper's own thread: a job never waits, so pool
    threads may run :meth:`work`.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._function = None
        self._jobs: list = []
        self._next = 0
        self._running = 0
        self._open = True
        self._failed = False

    def post(self, function, jobs) -> None:
        """Offer ``function(job)`` for each of ``jobs``."""
        with self._cond:
            self._function, self._jobs, self._next = function, list(jobs), 0
            self._cond.notify_all()

    def close(self) -> None:
        """No job is taken from now on; a helper waiting for jobs returns. Jobs left untaken
        make :meth:`finish` raise (the work is not done), never return quietly."""
        with self._cond:
            self._open = False
            if self._next < len(self._jobs):
                self._failed = True
                self._next = len(self._jobs)
            self._cond.notify_all()

    def _take(self):
        with self._cond:
            if self._next >= len(self._jobs):
                return None
            job = self._jobs[self._next]
            self._next += 1
            self._running += 1
            return job

    def _ended(self, failed: bool) -> None:
        with self._cond:
            self._running -= 1
            if failed:
                self._failed = True
                self._next = len(self._jobs)  # the rest is abandoned
            self._cond.notify_all()

    def work(self) -> None:
        """Run jobs until none is left to take (never waits for other threads)."""
        while (job := self._take()) is not None:
            failed = True
            try:
                self._function(job)
                failed = False
            finally:
                self._ended(failed)

    def help(self) -> None:
        """Wait until the jobs are posted (or the poster closed), then take part in them."""
        with self._cond:
            self._cond.wait_for(lambda: self._jobs or not self._open)
        self.work()

    def finish(self, threads: int = 1) -> None:
        """(The poster.) Run jobs on up to ``threads`` threads (:func:`run_pieces`) until none
        is left, then wait for the jobs other threads took; raises RuntimeError if a job
        failed anywhere (its own exception is raised where it ran) or jobs were abandoned
        (:meth:`close`)."""
        try:
            run_pieces(lambda _: self.work(), range(max(1, threads)), threads)
        finally:
            with self._cond:
                self._cond.wait_for(lambda: self._running == 0)
        if self._failed:
            raise RuntimeError("shared jobs were left undone: a job failed, or the jobs were "
                               "closed before all were taken")
