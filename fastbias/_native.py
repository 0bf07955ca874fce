"""Numba's own threads for a stage's rounds of work, where that is safe (issue 16).

fastbias's pool (:mod:`fastbias._threads`) hands each piece of a round to a
Python thread, which takes the GIL to start the piece's kernel and again when
it returns. On a 16-core machine such a handoff costs about 20 us that no
other thread can overlap, so a 1.8M-row call of about 150 pieces spends most
of its time in them, and 16 cores are no faster than 8
(``benchmarks/gil_pieces.py``, ``benchmarks/native_stages.py``;
benchmarks/RESULTS.md). A ``parallel=True`` kernel runs a stage's rounds on
Numba's threads with no Python per piece nor between rounds: the dense
membership scan, the two sorts of the unweighted count (together) and the
counting walk have one such kernel each. They cut the work into the same kind
of pieces and run the same kernels on them, so the result is the same, bit for
bit, either way; NATIVE_PIECES_PER_WORKER pieces a thread, taken as the threads
become free.

``FASTBIAS_NUMBA_THREADS`` in the environment chooses:

* **auto** (unset, the default): where Numba's threading layer is **Intel TBB**
  (started as TBB already, or TBB is what Numba would start: ``conda install
  tbb``, or a ``libtbb.so.12`` on the loader's path), which is safe to fork and
  whose threads do not spin. The default never starts another layer, so a
  program that never asked for GNU OpenMP does not get its fork hazard.
* **on** (``1``): under TBB or GNU OpenMP. fastbias asks OpenMP to wait
  passively (``OMP_WAIT_POLICY=passive`` while the runtime first loads, the
  environment put back afterwards; a warning says so once where OpenMP was
  loaded before it could ask): with its default policy its threads spin after
  each round, which made a 16-core call take 72 ms instead of 8.
* **off** (``0``): the pool only.

Measured on a lent 16-core Xeon (benchmarks/RESULTS.md, twenty-second session),
1.8M rows x 24 on 16 cores: 9.2 ms under TBB (the default where TBB is Numba's
layer) against 14.5 ms on the pool, each process pinned as ``taskset`` pins it;
10.3 ms under OpenMP; on 8 cores the same as the pool; at 18M rows slower than
the pool (91.5 and 95.1 against 78.2-79.9 ms in one process: the pool overlaps
the class sort with the membership work, while these rounds take every thread
in turn), hence the limits below. Twenty-fourth session, one kernel a stage and
four pieces a thread: 8.7-9.3 ms against 11.4-12.3 ms before, side by side on
another 16-core Xeon. On, or by default under TBB, a round runs on
Numba's threads only when all of these hold:

* the call may use at least NATIVE_MIN_WORKERS threads, with at most
  NATIVE_MAX_ROWS_PER_WORKER rows per thread, and it is not itself running on
  a pool thread (nested work stays on its thread);
* Numba's threading layer is thread-safe: ``tbb`` or ``omp`` (``workqueue``
  ends the process when two threads start parallel kernels at once), and this
  process is not a child forked from one that had started the threads of a
  layer other than ``tbb`` (GNU OpenMP is not fork-safe: Numba ends such a
  child when it starts a parallel kernel);
* the round's kernels are compiled or cached; if not, they compile in a
  background process (family ``"native"`` of :mod:`fastbias._warm_up`) and the
  round uses the pool meanwhile (unless the first-call tier is off: then they
  compile here);
* no other thread is running such a round. One runs at a time, on at most
  ``workers`` of Numba's threads, so that models evaluated in threads never
  run more threads than they were given; a thread that finds one running uses
  the pool.

Asked for (``on``), the first call that could use them starts Numba's threading
layer (to learn which it is), even if that call's rounds then run on the pool. Under
GNU OpenMP, a child the program forks afterwards can no longer run Numba
parallel kernels of its own (Numba ends it); fastbias's own calls in such a
child use the pool.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from contextlib import contextmanager

from . import _threads

#: threading layers that may start parallel kernels from several threads at once
SAFE_LAYERS = ("tbb", "omp")

#: fewest threads, and most rows per thread, of a call whose rounds run on Numba's threads
NATIVE_MIN_WORKERS = 8
NATIVE_MAX_ROWS_PER_WORKER = 250_000

#: a round on Numba's threads is cut into this many pieces per thread (none smaller than the
#: stage's least), which the threads take as they become free (Numba's chunk size 1 under
#: TBB): a thread slowed by another process then holds up less than its whole share
NATIVE_PIECES_PER_WORKER = 4

#: True ("on") or False ("off") overrides ``FASTBIAS_NUMBA_THREADS`` (benchmarks and tests)
ENABLED: bool | None = None


def mode() -> str:
    """``FASTBIAS_NUMBA_THREADS``: ``"on"`` (``1``, ``on``, ``true``, ``yes``), ``"auto"``
    (unset, empty or ``auto``: the default) or ``"off"`` (anything else); :data:`ENABLED`
    overrides it."""
    if ENABLED is not None:
        return "on" if ENABLED else "off"
    value = os.environ.get("FASTBIAS_NUMBA_THREADS", "").strip().lower()
    if value in ("1", "on", "true", "yes"):
        return "on"
    return "auto" if value in ("", "auto") else "off"


def enabled() -> bool:
    """Whether rounds may run on Numba's threads at all: asked for (``on``), or by default
    (``auto``) where Numba's threading layer is Intel TBB, which is safe to fork and does not
    spin: started already as TBB, or not started and TBB the layer Numba would start. The
    default never starts another layer."""
    chosen = mode()
    if chosen == "auto":
        return _tbb_is_numbas_layer()
    return chosen == "on"


_tbb_would_start_memo: list = []


def _tbb_is_numbas_layer() -> bool:
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if _layer is not None or getattr(parallel, "_is_initialized", False):
        return threading_layer() == "tbb"
    if not _tbb_would_start_memo:
        _tbb_would_start_memo.append(_tbb_would_start())
    return _tbb_would_start_memo[0]


def _tbb_would_start() -> bool:
    """Whether Numba, asked to start its threading layer, would start TBB: the layer its
    settings try first (``NUMBA_THREADING_LAYER``: ``tbb``, or ``safe``, ``threadsafe`` and
    ``forksafe``, which try TBB first; ``default`` the first of
    ``NUMBA_THREADING_LAYER_PRIORITY``), and a TBB it can load (a recent enough ``libtbb``
    on the loader's path, Numba's ``tbbpool``). Loads TBB's library to ask, and starts
    nothing."""
    import warnings

    try:
        import numba
        from numba.np.ufunc import parallel

        layer = str(numba.config.THREADING_LAYER).lower()
        first = [str(name).lower() for name in numba.config.THREADING_LAYER_PRIORITY][:1]
        # ("safe", "threadsafe" and "forksafe" try TBB first whatever the priority; only
        # "default" follows NUMBA_THREADING_LAYER_PRIORITY: found by review)
        if not (layer in ("tbb", "safe", "threadsafe", "forksafe")
                or (layer == "default" and first == ["tbb"])):
            return False
        with warnings.catch_warnings():  # (an old TBB: Numba warns, and will not use it)
            warnings.simplefilter("ignore")
            parallel._check_tbb_version_compatible()
        from numba.np.ufunc import tbbpool  # noqa: F401
    except Exception:
        return False
    return True


_round_lock = threading.Lock()  # one round on Numba's threads at a time
_layer_lock = threading.Lock()
_layer: str | None = None  # Numba's threading layer once started ("" if it cannot start)
_forked_after_omp = False  # a child forked from a process running GNU OpenMP's threads


def threading_layer() -> str:
    """The threading layer Numba runs parallel kernels on, started here if need be ("" if
    none can start)."""
    global _layer
    with _layer_lock:
        if _layer is None:
            try:
                import numba
                from numba.np.ufunc import parallel

                with _passive_openmp():
                    parallel._launch_threads()
                _layer = numba.threading_layer()
            except Exception:  # no layer at all: the pool does every round
                _layer = ""
        return _layer


_WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
_passive_asked: list = []  # True once this module set OpenMP's wait policy for its start


def _openmp_loaded() -> bool:
    """Whether the OpenMP runtime Numba would load is in this process already (it reads its
    settings once, as it loads); True on Linux where that cannot be told. Copies that other
    packages bundle under names of their own (``libgomp-1a2b3c.so.1``) are other runtimes
    with settings of their own, and do not count."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            names = {os.path.basename(line.split()[-1]) for line in maps if "/" in line}
    except OSError:
        return sys.platform.startswith("linux")
    return any(name.startswith(("libgomp.so", "libomp.so", "libiomp5.so")) for name in names)


@contextmanager
def _passive_openmp():
    """While Numba starts its threading layer, asked for (mode ``on``): if that may load an
    OpenMP runtime for the first time and the environment says nothing of its wait policy,
    ``OMP_WAIT_POLICY=passive`` (read once, as the runtime loads; its threads then sleep
    between rounds instead of spinning on the cores the next round needs). The environment
    is put back afterwards, so that processes started later do not inherit the setting."""
    # (only where OpenMP may start, asked for: the default starts TBB alone, and os.environ
    # is process-wide, its setenv racing with other threads' getenv; found by review)
    if mode() != "on" or any(name in os.environ for name in _WAIT_SETTINGS) \
            or _openmp_loaded():
        yield
        return
    os.environ["OMP_WAIT_POLICY"] = "passive"
    _passive_asked.append(True)
    try:
        yield
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


def _after_fork_in_child() -> None:
    global _round_lock, _layer_lock, _forked_after_omp
    _round_lock, _layer_lock = threading.Lock(), threading.Lock()
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    started = _layer is not None or getattr(parallel, "_is_initialized", False)
    if started:
        try:
            import numba

            layer = _layer or numba.threading_layer()
        except Exception:
            layer = ""
        _forked_after_omp = _forked_after_omp or layer != "tbb"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def native_pieces(n_items: int, workers: int, min_per_piece: int) -> int:
    """How many pieces a round of ``n_items`` of work on ``workers`` of Numba's threads is
    cut into: NATIVE_PIECES_PER_WORKER per thread, none smaller than ``min_per_piece`` (one
    piece below that: the round then runs on this thread)."""
    return _threads.pieces_for(n_items, workers * NATIVE_PIECES_PER_WORKER, min_per_piece)


def available(workers: int, n_rows: int, kernels=()) -> bool:
    """Whether a round of ``kernels`` of a call on ``workers`` threads over ``n_rows`` rows
    could run on Numba's threads now (see the module docstring), leaving aside whether
    another thread runs one. Asks for the kernels to compile in the background if they must
    compile first."""
    if (workers < NATIVE_MIN_WORKERS or n_rows > NATIVE_MAX_ROWS_PER_WORKER * workers
            or not enabled() or _forked_after_omp or _threads.in_pool_thread()):
        return False
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2 or threading_layer() not in SAFE_LAYERS:
        return False
    _warn_if_spinning()
    return _compiled(kernels)


logger = logging.getLogger("fastbias")
_warned: list = []


def _warn_if_spinning() -> None:
    """Once: GNU OpenMP's threads spin after each round unless told otherwise, taking the
    cores from whatever runs next (a 16-core call took 72 ms instead of 8). Said only where
    the runtime was loaded before this module could ask it to wait passively."""
    if _warned or _layer != "omp":
        return
    _warned.append(True)
    if not (_passive_asked or any(os.environ.get(name) for name in _WAIT_SETTINGS)):
        logger.warning("FASTBIAS_NUMBA_THREADS: Numba's threads run on OpenMP, whose "
                       "threads spin after each round unless told otherwise and can make "
                       "calls several times slower; set OMP_WAIT_POLICY=passive in the "
                       "environment before starting Python (OpenMP was loaded before "
                       "fastbias could ask for it)")


#: :mod:`fastbias.sweep.first_call`, which registers itself on import (it belongs to a later
#: stage than the ones that call this module); None: kernels compile where first called
first_call = None


def register_first_call(module) -> None:
    """Called by :mod:`fastbias.sweep.first_call`: where kernels not compiled yet are asked
    for (``ready_or_compiling``)."""
    global first_call
    first_call = module


def _compiled(kernels) -> bool:
    """Whether the kernels may run now (:func:`fastbias.sweep.first_call.ready_or_compiling`,
    family ``native``; cached but still compiling other types in the background: not yet);
    without the first-call module, they compile here on first use."""
    return first_call is None or first_call.ready_or_compiling(kernels, "native")


@contextmanager
def numba_threads(workers: int, n_rows: int, kernels=()):
    """Yields True with Numba set to at most ``workers`` threads when a round of
    ``kernels`` of a call over ``n_rows`` rows may run on Numba's threads
    (:func:`available`, and no other thread runs one), else yields False (the caller uses
    the pool)."""
    if not available(workers, n_rows, kernels) or not _round_lock.acquire(blocking=False):
        yield False
        return
    try:
        import numba

        previous = numba.get_num_threads()
        numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))
        # one loop step a chunk: the threads take the pieces as they become free
        chunk = numba.set_parallel_chunksize(1)
        try:
            yield True
        finally:
            numba.set_parallel_chunksize(chunk)
            numba.set_num_threads(previous)
    finally:
        _round_lock.release()
