"""Where one model's ``bias_metrics`` call spends its time: stage by stage and kernel by
kernel, inside real calls (issue 16).

Every jitted kernel that fastbias's Python code calls is wrapped (after the kernels are
compiled) in a timer, and so are the pipeline's stages, as the call reaches them; then
``--repeats`` calls of ``bias_metrics`` on arrays like the Jigsaw set's
(:func:`bench_threads.jigsaw_like_arrays`) run pinned to each core count
(:func:`bench_threads.pin`). It prints, per core count, the call's median, each stage's
and each kernel's time per call (summed over the threads that called it: the pool calls
kernels from several threads at once), and the time of one empty round on Numba's
threads (a ``prange`` of one step per thread), what every round costs before its work.
The wrappers cost about a microsecond a call.

Usage::

    python benchmarks/call_profile.py --rows 1804875 --cores 1 16
    python benchmarks/call_profile.py --weighted --ci delong --cores 1 16

``--weighted`` gives every call weights drawn uniformly from 0.1-3 (the weighted sweep and
the row order); ``--ci`` and ``--significance`` are passed to ``bias_metrics``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import warnings
from collections import defaultdict

import numba
import numpy as np
from numba import njit, prange

import fastbias
import fastbias._native as native
from fastbias.sweep.first_call import compile_in_background, wait_until_compiled

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import cpu_model, jigsaw_like_arrays, pin  # noqa: E402

#: (module, attribute) of the stages timed; a class attribute as "Class.method"
STAGES = [("fastbias.arrays", "validated_rows"), ("fastbias.arrays", "prepare_subgroups"),
          ("fastbias.sort.order", "SortedScores.sort"), ("fastbias.sort.order", "SortedScores.order"),
          ("fastbias.sweep.parallel", "count_sorted"), ("fastbias.arrays", "table_from_counts")]

_lock = threading.Lock()
_spent: dict = defaultdict(float)
_calls: dict = defaultdict(int)


def _timed(name, function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            took = time.perf_counter() - start
            with _lock:
                _spent[name] += took
                _calls[name] += 1
    wrapper.__wrapped__ = function
    return wrapper


def wrap_kernels() -> int:
    """Replace every numba dispatcher held by a fastbias module with a timer of it (the
    kernels must be compiled already: a kernel compiled later would see the wrappers)."""
    wrapped = {}
    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("fastbias") and m is not None]
    for module in modules:
        for attr, value in list(vars(module).items()):
            if isinstance(value, numba.core.registry.CPUDispatcher):
                if id(value) not in wrapped:
                    wrapped[id(value)] = _timed(f"kernel {value.py_func.__name__}", value)
                setattr(module, attr, wrapped[id(value)])
    return len(wrapped)


def wrap_stages() -> None:
    import importlib

    for module_name, attr in STAGES:
        module = importlib.import_module(module_name)
        owner, name = module, attr
        if "." in attr:
            cls, name = attr.split(".")
            owner = getattr(module, cls)
        setattr(owner, name, _timed(f"stage {attr}", getattr(owner, name)))


@njit(parallel=True, cache=True)
def _empty_round(n):
    out = np.empty(n, dtype=np.int64)
    for j in prange(n):
        out[j] = j
    return out


def empty_round_time(threads: int, repeats: int = 200) -> float:
    """Median time of a parallel kernel of ``threads`` one-step pieces on that many of
    Numba's threads (its fork-join cost)."""
    previous = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        _empty_round(threads)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            _empty_round(threads)
            times.append(time.perf_counter() - start)
    finally:
        numba.set_num_threads(previous)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--subgroups", type=int, default=24)
    parser.add_argument("--cores", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--pieces-per-thread", type=int, default=None,
                        help="cut each round on Numba's threads into this many pieces per "
                             "thread (fastbias._native.NATIVE_PIECES_PER_WORKER)")
    parser.add_argument("--weighted", action="store_true",
                        help="weights uniform in 0.1-3 (sample_weight)")
    parser.add_argument("--ci", default=None, help="bias_metrics' ci (e.g. delong)")
    parser.add_argument("--significance", default=None,
                        help="bias_metrics' significance (e.g. holm)")
    parser.add_argument("--set", nargs="*", default=[], metavar="MODULE:NAME=INT",
                        help="set a module's constant first, e.g. "
                             "fastbias.validate.values:PARALLEL_BOUNDS_MIN_VALUES=500000")
    args = parser.parse_args(argv)
    if args.pieces_per_thread is not None:
        native.NATIVE_PIECES_PER_WORKER = args.pieces_per_thread
    for setting in args.set:
        import importlib

        where, value = setting.split("=")
        module, name = where.split(":")
        setattr(importlib.import_module(module), name, int(value))
        print(f"# {module}.{name} = {int(value)}")
    all_cpus = sorted(os.sched_getaffinity(0))
    cores = [c for c in (args.cores or [1, len(all_cpus)]) if c <= len(all_cpus)]
    warnings.simplefilter("ignore")
    y, s, groups = jigsaw_like_arrays(args.rows, args.subgroups)
    options = {key: value for key, value in (("ci", args.ci),
                                             ("significance", args.significance)) if value}
    weights = (np.random.default_rng(1).uniform(0.1, 3.0, y.shape[0]) if args.weighted
               else None)

    def call(rows=None):
        part = slice(None) if rows is None else slice(rows)
        if weights is not None:
            options["sample_weight"] = weights[part]
        return fastbias.bias_metrics(y[part], s[part], groups[part], **options)

    call(1000)
    if native.enabled():
        compile_in_background("native")
    wait_until_compiled()
    for c in cores:  # every kernel this size needs, compiled before the wrapping
        pin(all_cpus[:c])
        call()
    wait_until_compiled()
    n_kernels = wrap_kernels()
    wrap_stages()
    layer = native.threading_layer() if native.enabled() else "(not used)"
    print(f"# {cpu_model()}, {len(all_cpus)} usable CPUs; {args.rows:,} rows x "
          f"{args.subgroups}{'' if weights is None else ', weighted'}"
          f"{''.join(f', {k}={v}' for k, v in options.items() if k != 'sample_weight')}; "
          f"rounds on Numba's threads: {native.mode()}, layer {layer}, "
          f"{getattr(native, 'NATIVE_PIECES_PER_WORKER', 1)} pieces a thread; "
          f"{n_kernels} kernels wrapped; fastbias from {os.path.dirname(fastbias.__file__)}\n")
    for c in cores:
        pin(all_cpus[:c])
        call()  # warm-up on these cores
        _spent.clear()
        _calls.clear()
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        per_call = {name: _spent[name] / args.repeats for name in _spent}
        print(f"## {c} cores: the call {statistics.median(times) * 1e3:.2f} ms "
              f"(median of {args.repeats}, {min(times) * 1e3:.2f}-{max(times) * 1e3:.2f}); "
              f"mean {statistics.fmean(times) * 1e3:.2f} ms; one empty round on {c} of "
              f"Numba's threads {empty_round_time(c) * 1e6:.0f} us\n")
        print("| stage or kernel | calls per call | ms per call (summed over threads) |")
        print("|---|---:|---:|")
        for name in sorted(per_call, key=lambda k: (not k.startswith("stage"), -per_call[k])):
            print(f"| {name} | {_calls[name] / args.repeats:g} | {per_call[name] * 1e3:.3f} |")
        print(flush=True)
    pin(all_cpus)


if __name__ == "__main__":
    main()
