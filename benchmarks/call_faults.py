"""Page faults and kernel (system) time of one model's call, by core count (issue 16).

A call that allocates fresh memory in many threads at once can spend its time in the
operating system: first touches of new pages (minor faults) and, when memory is given
back, the other cores' TLBs being flushed. This prints, per core count (the process pinned
to the first N usable CPUs), the median call time and the median minor faults, system and
user CPU time per call, so that a many-core slowdown can be told apart from the kernels'
own work. Try it under the allocator's settings too, e.g.::

    python benchmarks/call_faults.py --cores 1 8 16
    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \\
        python benchmarks/call_faults.py --cores 16
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time

import fastbias

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import compiled_case, core_counts, pin  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--cores", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    usable, cores = core_counts(parser, args.cores)
    y, s, groups = compiled_case(args.rows)
    settings = {k: v for k, v in os.environ.items() if k.startswith(("MALLOC_", "GLIBC_"))}
    print(f"{args.rows:,} rows x {groups.shape[1]}, medians of {args.repeats} calls; "
          f"allocator settings: {settings or 'none'}\n")
    print("| cores | call | minor faults | system | user |")
    print("|---:|---:|---:|---:|---:|")
    try:
        for n in cores:
            pin(usable[:n])
            fastbias.bias_metrics(y, s, groups)
            calls, faults, system, user = [], [], [], []
            for _ in range(args.repeats):
                before = resource.getrusage(resource.RUSAGE_SELF)
                start = time.perf_counter()
                fastbias.bias_metrics(y, s, groups)
                calls.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_SELF)
                faults.append(after.ru_minflt - before.ru_minflt)
                system.append(after.ru_stime - before.ru_stime)
                user.append(after.ru_utime - before.ru_utime)
            print(f"| {n} | {1e3 * statistics.median(calls):.1f} ms | "
                  f"{statistics.median(faults):,.0f} | {1e3 * statistics.median(system):.1f} ms | "
                  f"{1e3 * statistics.median(user):.1f} ms |", flush=True)
    finally:
        pin(usable)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
