"""How one model's ``bias_metrics`` scales with cores (issue 16).

For each size it builds arrays like the Jigsaw set's (bool labels, about 9%
positive; continuous float32 scores, almost all distinct; 24 identities, each
0.1%-3% of the rows, overlapping, identity rows more often positive) and
times ``fastbias.bias_metrics(y, s, groups)`` with the default ``n_jobs``
while the process is pinned to the first 1, 2, 4, ... CPUs
(``os.sched_setaffinity``, what ``taskset`` does), so the default follows the
cores given. Prints a Markdown table (median and spread of ``--repeats``
calls after one warm-up) with the speed-up over one core, with ``--stages``
each stage's time on every core count, and checks that every core count gave
the same table, bit for bit. On an empty Numba cache it first waits for the
kernels to compile, so that the kernels are timed, not the first-call tier.

Usage::

    python benchmarks/bench_threads.py --rows 1804875 18000000 --cores 1 2
    python benchmarks/bench_threads.py --rows 1804875 18000000 100000000 --cores 1 2 4 8 16
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings

import numpy as np

import fastbias
import fastbias._native as native
from fastbias.sweep.first_call import compile_in_background, wait_until_compiled


def jigsaw_like_arrays(n: int, k: int = 24, seed: int = 0):
    """Labels, continuous float32 scores and an (n, k) bool identity matrix, built in blocks."""
    rng = np.random.default_rng(seed)
    groups = np.zeros((n, k), dtype=bool)
    shares = np.exp(rng.uniform(np.log(0.001), np.log(0.03), k))
    for j, share in enumerate(shares):
        groups[rng.integers(0, n, int(share * n)), j] = True
    in_identity = groups.any(axis=1)
    y = rng.random(n, dtype=np.float32) < np.where(in_identity, 0.2, 0.08)
    logit = rng.normal(-2.5, 1.0, n).astype(np.float32) + 2.2 * y
    s = (1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    return y, s, groups


def compiled_case(rows: int) -> tuple:
    """:func:`jigsaw_like_arrays` of ``rows`` rows, after one call and the kernels' compiling
    (a fresh cache compiles them in the background: the kernels are timed, not the
    first-call tier); warnings off."""
    y, s, groups = jigsaw_like_arrays(rows)
    warnings.simplefilter("ignore")
    fastbias.bias_metrics(y, s, groups)
    wait_until_compiled()
    return y, s, groups


def core_counts(parser, asked) -> tuple:
    """``(usable CPUs, core counts to time)``: ``asked`` (default 1 and all usable), refused
    through ``parser`` beyond the usable CPUs."""
    usable = sorted(os.sched_getaffinity(0))
    cores = asked or sorted({1, len(usable)})
    if max(cores) > len(usable):
        parser.error(f"only {len(usable)} usable CPUs")
    return usable, cores


def pin(cpus) -> None:
    """Every thread of this process onto ``cpus``, as ``taskset -a -p`` does.
    ``os.sched_setaffinity(0, ...)`` moves only the calling thread: threads started before
    (fastbias's pool, Numba's threading layer) keep the CPUs they were started on, so a
    16-core timing after an 8-core one ran part of its work on 8 CPUs (112 against 64 ms
    at 18M rows on a lent 16-core Xeon)."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except OSError:  # (a thread that ended meanwhile)
            pass


def median_time(function, repeats: int) -> tuple:
    function()  # warm-up (compiles on a cold cache, fills the pool)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def stage_times(y, s, groups, repeats: int) -> dict:
    """Median time of each stage of one call on the current cores (default n_jobs)."""
    from fastbias.metrics.table import table_from_counts
    from fastbias.prepare.memberships import prepare_subgroups
    from fastbias.sort.order import SortedScores
    from fastbias.sweep.counts import count_sorted
    from fastbias.validate.rows import validated_rows
    from fastbias.validate.settings import resolve_workers

    workers = resolve_workers(None)
    out = {}
    rows = validated_rows(y, s, None, workers=workers)
    labels, scores, kept, bounds = rows.labels, rows.scores, rows.kept, rows.score_bounds
    out["validate"] = median_time(lambda: validated_rows(y, s, None, workers=workers),
                                  repeats)[0]
    m = prepare_subgroups(labels, groups, None, kept, workers=workers)
    out["memberships"] = median_time(
        lambda: prepare_subgroups(labels, groups, None, kept, workers=workers), repeats)[0]

    def sorted_scores_now():
        return SortedScores(scores, m, workers=workers, score_bounds=bounds)

    out["class sort"] = median_time(lambda: sorted_scores_now().classes, repeats)[0]
    out["membership sort"] = median_time(lambda: sorted_scores_now().members, repeats)[0]
    sorted_scores = sorted_scores_now()
    sorted_scores.classes, sorted_scores.members  # noqa: B018
    out["counts"] = median_time(lambda: count_sorted(sorted_scores), repeats)[0]
    sc = count_sorted(sorted_scores)
    out["table"] = median_time(lambda: table_from_counts(sc), repeats)[0]
    return out


def cpu_model() -> str:
    """The CPU's model name (Linux), else what ``platform`` says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_804_875, 18_000_000])
    parser.add_argument("--cores", type=int, nargs="+", default=None,
                        help="core counts (default: 1, 2, 4, ... up to the usable CPUs)")
    parser.add_argument("--subgroups", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--stages", action="store_true", help="also time each stage")
    args = parser.parse_args(argv)

    all_cpus = sorted(os.sched_getaffinity(0))
    cores = args.cores or [c for c in (1, 2, 4, 8, 16, 32, 64) if c <= len(all_cpus)]
    cores = [c for c in cores if c <= len(all_cpus)]
    print(f"# {cpu_model()}, {len(all_cpus)} usable CPUs, "
          f"numba {__import__('numba').__version__}, numpy {np.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}; rounds on Numba's threads: "
          f"{native.mode()}" + (f" (layer {native.threading_layer()})" if native.enabled()
                                 else " (not used)") + "\n")
    stages = {}
    for n in args.rows:
        print("| rows | subgroups | cores | median | min-max | speed-up over 1 core |")
        print("|---:|---:|---:|---:|---:|---:|")
        y, s, groups = jigsaw_like_arrays(n, args.subgroups)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (one-class cells in 1,000 rows)
            fastbias.bias_metrics(y[:1000], s[:1000], groups[:1000])
        if native.enabled():  # (asked for by the first call that could use them)
            compile_in_background("native")
        wait_until_compiled()  # on an empty cache: time the kernels, not the first-call tier
        tables, medians = [], {}
        for c in cores:
            pin(all_cpus[:c])
            result = {}

            def call():
                result["table"] = fastbias.bias_metrics(y, s, groups)

            med, lo, hi = median_time(call, args.repeats)
            tables.append(result["table"])
            medians[c] = med
            base = medians.get(cores[0])
            speedup = f"{base / med:.2f}x" if cores[0] == 1 else ""
            print(f"| {n:,} | {args.subgroups} | {c} | {med * 1e3:.1f} ms | "
                  f"{lo * 1e3:.1f}-{hi * 1e3:.1f} ms | {speedup} |", flush=True)
            if args.stages:
                stages[n, c] = stage_times(y, s, groups, args.repeats)
        pin(all_cpus)
        same = all(t.equals(tables[0]) and t.attrs == tables[0].attrs for t in tables)
        print(f"\n{n:,} rows: every core count gave the same table, bit for bit: {same}\n")
        if not same:
            raise SystemExit("tables differ between core counts")
    if stages:
        names = list(next(iter(stages.values())))
        print("| rows | cores | " + " | ".join(names) + " |")
        print("|---:|---:|" + "---:|" * len(names))
        for (n, c), times in stages.items():
            print(f"| {n:,} | {c} | " + " | ".join(f"{times[k] * 1e3:.1f} ms" for k in names)
                  + " |")


if __name__ == "__main__":
    main()
