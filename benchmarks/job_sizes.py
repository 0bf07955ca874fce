"""How one model's call at 1.8M rows depends on how its stages cut their work (issue 16).

At 1.8M x 24 on a 16-core machine, 8 and 16 cores gave the same time (13-21 ms, against
<= 8 ms asked): the threads' summed work was 2.3x one core's, in about 150 jobs. This
script times the call under other cuts, to find whether fewer, larger jobs help there:

* ``jobs_per_worker``: the jobs each thread's share of a stage is cut into
  (``fastbias._threads.JOBS_PER_WORKER``, 4 by default);
* ``min_scale``: every stage's smallest piece of work times this (the sorts',
  ``PARALLEL_SORT_MIN_KEYS``; the counting walk's, ``PARALLEL_COUNT_MIN_MEMBERSHIPS``;
  the membership scan's, ``PARALLEL_SCAN_MIN_ROWS``; the score bounds',
  ``PARALLEL_BOUNDS_MIN_VALUES``): above 1 small inputs take fewer threads, below 1 more.

For each core count (the process pinned to the first N usable CPUs, as ``taskset`` does) and
each setting it prints the median of ``--repeats`` calls (after one), and checks that every
setting gave the same table, bit for bit. On an empty Numba cache it first waits for the
kernels to compile.

Usage::

    python benchmarks/job_sizes.py --cores 8 16
    python benchmarks/job_sizes.py --rows 300000 --cores 1 2 --repeats 5
    python benchmarks/job_sizes.py --cores 16 --jobs-per-worker 1 4 --min-scale 1 \
        --switch-interval 0.005 0.0001
"""
from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time

import fastbias
import fastbias._native as native
import fastbias._threads as threads
from fastbias.prepare import memberships
from fastbias.sort import order
from fastbias.sweep import counts
from fastbias.sweep.first_call import wait_until_compiled
from fastbias.validate import values

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import compiled_case, core_counts, pin  # noqa: E402

#: (module, name) of each smallest piece of work that ``min_scale`` multiplies
MINIMA = [(order, "PARALLEL_SORT_MIN_KEYS"), (counts, "PARALLEL_COUNT_MIN_MEMBERSHIPS"),
          (memberships, "PARALLEL_SCAN_MIN_ROWS"), (values, "PARALLEL_BOUNDS_MIN_VALUES")]


def _count_native_rounds() -> list:
    """A list that gets one entry each time the counting walk runs on Numba's threads."""
    ran = []
    original = counts.count_on_numba

    def counted(*args, **kwargs):
        ran.append(True)
        return original(*args, **kwargs)

    counts.count_on_numba = counted
    return ran


def apply(jobs_per_worker: int, min_scale: float, defaults: dict) -> None:
    """Set the stages' cuts (``counts`` holds its own copy of JOBS_PER_WORKER)."""
    threads.JOBS_PER_WORKER = counts.JOBS_PER_WORKER = jobs_per_worker
    for module, name in MINIMA:
        setattr(module, name, max(1, round(defaults[name] * min_scale)))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--cores", type=int, nargs="+", default=None,
                        help="core counts (default: 1 and all usable)")
    parser.add_argument("--jobs-per-worker", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--min-scale", type=float, nargs="+", default=[1, 4, 16],
                        help="factors of the smallest pieces (below 1: smaller pieces, "
                             "for many cores)")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--engine", nargs="+", choices=["numba", "pool"], default=["pool"],
                        help="numba: rounds on Numba's threads where fastbias._native allows; "
                             "pool: fastbias's pool only")
    parser.add_argument("--switch-interval", type=float, nargs="+", default=None,
                        help="Python's GIL switch intervals to try, in seconds (default: "
                             "the interpreter's, 0.005): a thread that ends a kernel waits "
                             "up to this long for the GIL while another runs Python")
    parser.add_argument("--native-max-rows", type=int, default=None,
                        help="most rows per thread of a call whose rounds run on Numba's "
                             "threads (fastbias._native.NATIVE_MAX_ROWS_PER_WORKER, "
                             f"{native.NATIVE_MAX_ROWS_PER_WORKER:,} as shipped)")
    args = parser.parse_args(argv)
    if args.native_max_rows is not None:
        native.NATIVE_MAX_ROWS_PER_WORKER = args.native_max_rows
    usable, cores = core_counts(parser, args.cores)
    y, s, groups = compiled_case(args.rows)
    if "numba" in args.engine:
        native.ENABLED = True
    fastbias.bias_metrics(y, s, groups)  # (asks for the kernels of Numba's threads)
    wait_until_compiled()
    ran = _count_native_rounds()
    defaults = {name: getattr(module, name) for module, name in MINIMA}
    default_jobs = threads.JOBS_PER_WORKER
    default_switch = sys.getswitchinterval()
    switches = args.switch_interval or [default_switch]
    settings = list(itertools.product(args.engine, switches, args.jobs_per_worker,
                                      args.min_scale))
    reference = fastbias.bias_metrics(y, s, groups)
    layer = native.threading_layer() if "numba" in args.engine else "not started"
    print(f"{args.rows:,} rows x {groups.shape[1]}, medians of {args.repeats} calls (ms); "
          f"defaults: jobs_per_worker {default_jobs}, min_scale 1; Numba's threading "
          f"layer: {layer}, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} "
          f"(fastbias asked for passive: {bool(native._passive_asked)})\n")
    print("| cores | " + " | ".join(
        (f"{e}, " if len(args.engine) > 1 else "")
        + (f"switch {1e3 * w:g} ms, " if len(switches) > 1 else "") + f"jobs {j}, min x{m:g}"
        for e, w, j, m in settings) + " |")
    print("|---:|" + "---:|" * len(settings))
    try:
        for n in cores:
            pin(usable[:n])
            row = []
            for engine, switch, jobs, scale in settings:
                native.ENABLED = engine == "numba"
                sys.setswitchinterval(switch)
                apply(jobs, scale, defaults)
                table = fastbias.bias_metrics(y, s, groups)  # (and a warm-up)
                if not table.equals(reference):
                    raise SystemExit(f"switch {switch}, jobs {jobs}, min x{scale:g} on {n} "
                                     "cores: another table")
                times = []
                ran.clear()
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    fastbias.bias_metrics(y, s, groups)
                    times.append(time.perf_counter() - start)
                row.append(f"{1e3 * statistics.median(times):.1f}"
                           + (f" ({len(ran)}/{args.repeats} counted on Numba's threads)"
                              if engine == "numba" else ""))
            print(f"| {n} | " + " | ".join(row) + " |", flush=True)
    finally:
        apply(default_jobs, 1, defaults)
        sys.setswitchinterval(default_switch)
        native.ENABLED = True
        pin(usable)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
