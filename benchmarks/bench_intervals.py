"""Intervals against the point estimate, side by side in one run (issue "One pipeline").

On the Jigsaw-sized synthetic set (1,804,875 rows x 24 identities, float32
scores), times ``bias_metrics`` without intervals, with ``ci="delong"`` and
with ``ci="bootstrap"`` (1,000 replicates by default), and prints medians
over repeats and the ratios to the point estimate measured in this same run.
Targets: DeLong <= 1.5x the point estimate, 1,000 replicates <= 250x.

Usage::

    python benchmarks/bench_intervals.py                     # full size
    python benchmarks/bench_intervals.py --rows 200000 --n-boot 200
"""
from __future__ import annotations

import argparse
import os
import platform
import time
import warnings

import numpy as np

import fastbias
from fastbias.synthetic import JIGSAW_ROWS, make_jigsaw_like, to_arrays


def alternating_medians(functions: list, repeats: int) -> list:
    """Median time of each function, the calls alternating (so that drift of a shared, noisy
    machine hits all of them alike)."""
    times = [[] for _ in functions]
    for _ in range(repeats):
        for function, spent in zip(functions, times):
            start = time.perf_counter()
            function()
            spent.append(time.perf_counter() - start)
    return [float(np.median(t)) for t in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=JIGSAW_ROWS)
    parser.add_argument("--identities", type=int, default=24)
    parser.add_argument("--n-boot", type=int, default=1000, help="0: no bootstrap")
    parser.add_argument("--repeats", type=int, default=15, help="point and DeLong repeats")
    parser.add_argument("--boot-repeats", type=int, default=3, help="bootstrap repeats")
    parser.add_argument("--weighted", action="store_true", help="random sample weights too")
    args = parser.parse_args()

    df = make_jigsaw_like(n_rows=args.rows, n_identities=args.identities, random_state=0)
    y, scores, groups = to_arrays(df, score="model_biased")
    weights = None
    if args.weighted:
        weights = np.random.default_rng(1).uniform(0.5, 2.0, y.shape[0])
    warnings.simplefilter("ignore")

    def point():
        return fastbias.bias_metrics(y, scores, groups, sample_weight=weights)

    def delong():
        return fastbias.bias_metrics(y, scores, groups, sample_weight=weights, ci="delong")

    def bootstrap():
        return fastbias.bias_metrics(y, scores, groups, sample_weight=weights, ci="bootstrap",
                                     n_boot=args.n_boot, random_state=0)

    # compile and warm every path first
    small = slice(0, 5000)
    fastbias.bias_metrics(y[small], scores[small], groups[small], ci="bootstrap", n_boot=10,
                          sample_weight=None if weights is None else weights[small])
    point(), delong()
    t_point, t_delong = alternating_medians([point, delong], args.repeats)
    boot_times = []
    for _ in range(args.boot_repeats if args.n_boot else 0):  # each bootstrap run between two point estimates
        before, boot, after = alternating_medians([point, bootstrap, point], 1)
        boot_times.append((boot, (before + after) / 2))
    print(f"machine: {platform.processor() or platform.machine()}, "
          f"{len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()}"
          f" CPUs available, load average {os.getloadavg()[0]:.2f}")
    print(f"data: {y.shape[0]:,} rows x {groups.shape[1]} subgroups, float32 scores"
          f"{', weighted' if weights is not None else ''}")
    print(f"point estimate            {1000 * t_point:9.1f} ms   (median of {args.repeats}, "
          f"alternating with DeLong)")
    print(f"ci='delong'               {1000 * t_delong:9.1f} ms   {t_delong / t_point:6.2f}x point"
          f"   (target <= 1.5x)")
    if boot_times:
        t_boot = float(np.median([b for b, _ in boot_times]))
        t_boot_point = float(np.median([p for _, p in boot_times]))
        print(f"ci='bootstrap', {args.n_boot:5d} reps {t_boot:9.2f} s    "
              f"{t_boot / t_boot_point:6.0f}x point ({1000 * t_boot_point:.1f} ms around it; "
              f"target <= 250x for 1,000)")


if __name__ == "__main__":
    main()
