"""Where one model's call spends its time on each thread: a timeline of the pieces that the
stages hand to the threads (issue 16; for finding what stops a call scaling with cores).

Every piece that ``run_pieces``/``run_jobs``/``SharedJobs`` runs is timed on its thread;
for the call of median length among ``--repeats`` it prints each place in the code that
split work (file:line, function), when its first piece started and its last ended (ms from
the call's start), how many pieces on how many threads, their summed time and the longest
piece. Time between the groups is the calling thread's own work (validation, Python).

Usage::

    python benchmarks/thread_timeline.py --rows 18000000 --cores 16
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

import fastbias
import fastbias._threads as T
from fastbias.prepare import memberships as _memberships
from fastbias.sort import order as _order
from fastbias.sweep import counts as _counts
from fastbias.sweep.first_call import wait_until_compiled
from fastbias.validate import values as _values

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import jigsaw_like_arrays, pin  # noqa: E402
from job_sizes import MINIMA, apply  # noqa: E402

EVENTS: list = []


def _timed(function, label):
    def piece(item):
        start = time.perf_counter()
        try:
            return function(item)
        finally:
            EVENTS.append((label, threading.get_ident(), start, time.perf_counter()))
    return piece


def _where(depth: int = 2) -> str:
    frame = sys._getframe(depth)
    return (f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} "
            f"{frame.f_code.co_name}")


def _traced(runner):
    def traced(function, items, workers):
        return runner(_timed(function, _where()), items, workers)
    return traced


def install() -> None:
    """Time every piece of every stage that splits its work."""
    for module in (_order, _counts, _values, _memberships):
        for name in ("run_pieces", "run_jobs"):
            if hasattr(module, name):
                setattr(module, name, _traced(getattr(module, name)))
    post = T.SharedJobs.post

    def traced_post(self, function, jobs):
        return post(self, _timed(function, _where()), jobs)
    T.SharedJobs.post = traced_post


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=18_000_000)
    parser.add_argument("--cores", type=int, nargs="+", default=[len(os.sched_getaffinity(0))])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--jobs-per-worker", type=int, default=T.JOBS_PER_WORKER)
    parser.add_argument("--min-scale", type=float, default=1.0,
                        help="the stages' smallest pieces times this (see job_sizes.py)")
    args = parser.parse_args(argv)
    all_cpus = sorted(os.sched_getaffinity(0))
    y, s, groups = jigsaw_like_arrays(args.rows)
    fastbias.bias_metrics(y, s, groups)
    wait_until_compiled()
    install()
    apply(args.jobs_per_worker, args.min_scale,
          {name: getattr(module, name) for module, name in MINIMA})
    for cores in args.cores:
        pin(all_cpus[:cores])
        fastbias.bias_metrics(y, s, groups)
        runs = []
        for _ in range(args.repeats):
            EVENTS.clear()
            start = time.perf_counter()
            fastbias.bias_metrics(y, s, groups)
            runs.append((time.perf_counter() - start, start, list(EVENTS)))
        runs.sort(key=lambda r: r[0])
        total, start, events = runs[len(runs) // 2]
        print(f"\n{args.rows:,} rows, {cores} cores, jobs {args.jobs_per_worker} a thread, "
              f"smallest pieces x{args.min_scale:g}: call {total * 1e3:.1f} ms "
              f"(median of {args.repeats}; min {runs[0][0] * 1e3:.1f} ms)")
        print(f"{'where':48s} {'from':>7s} {'to':>7s} {'pieces':>6s} {'threads':>7s} "
              f"{'sum':>7s} {'longest':>7s}")
        groups_seen: dict = {}
        for label, thread, a, b in events:
            groups_seen.setdefault(label, []).append((thread, a - start, b - start))
        for label, pieces in sorted(groups_seen.items(), key=lambda kv: min(p[1] for p in kv[1])):
            print(f"{label[:48]:48s} {min(p[1] for p in pieces) * 1e3:7.1f} "
                  f"{max(p[2] for p in pieces) * 1e3:7.1f} {len(pieces):6d} "
                  f"{len({p[0] for p in pieces}):7d} "
                  f"{sum(p[2] - p[1] for p in pieces) * 1e3:7.1f} "
                  f"{max(p[2] - p[1] for p in pieces) * 1e3:7.1f}")
        print(f"median call {statistics.median(r[0] for r in runs) * 1e3:.1f} ms")
    pin(all_cpus)


if __name__ == "__main__":
    main()
