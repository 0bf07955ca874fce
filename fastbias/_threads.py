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


def _mark_pool_thread():
    _local.in_pool = True


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
    if workers <= 1 or getattr(_local, "in_pool", False):
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
