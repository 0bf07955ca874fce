"""The machine's memory bandwidth on 1, 2, 4, ... threads: the ceiling that a sort or a scan
of arrays far larger than the caches can reach, whatever its code (issue 16).

Times, with Numba's own parallel loops (``numba.set_num_threads``), a read of a large int64
array (a sum), a copy (read + write), and a scatter of 4-byte keys into 256 buckets by their
top byte (what one pass of a radix sort does). Prints GB/s (bytes read + written) per thread
count, median of ``--repeats``; and, for comparison, how arithmetic that touches no memory
scales: each thread runs the same loop, so on ``t`` independent cores ``t`` threads take as
long as one (a speed-up of ``t``); two threads on one core's hyperthreads take longer.

Usage::

    python benchmarks/memory_bandwidth.py --gib 2 --threads 1 2 4 8 16
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numba
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def _read(a):
    total = 0
    for i in prange(a.size):
        total += a[i]
    return total


@njit(parallel=True, cache=True)
def _copy(a, b):
    for i in prange(a.size):
        b[i] = a[i]


@njit(parallel=True, cache=True)
def _scatter(keys, out, starts):
    """Each of the len(starts) pieces scatters its keys by their top byte into its own
    region of each bucket (starts: the pieces' offsets, made by the caller)."""
    pieces = starts.shape[0]
    n = keys.size
    for p in prange(pieces):
        lo = (p * n) // pieces
        hi = ((p + 1) * n) // pieces
        at = starts[p].copy()
        for i in range(lo, hi):
            b = keys[i] >> 24
            out[at[b]] = keys[i]
            at[b] += 1


@njit(parallel=True, cache=True)
def _arithmetic(parts, steps):
    total = np.zeros(parts, dtype=np.uint64)
    for p in prange(parts):
        x = np.uint64(p + 1)
        for _ in range(steps):  # xorshift64: one dependent chain of integer operations
            x ^= x << np.uint64(13)
            x ^= x >> np.uint64(7)
            x ^= x << np.uint64(17)
        total[p] = x
    return total


def _bucket_starts(keys, pieces):
    n = keys.size
    counts = np.zeros((pieces, 256), dtype=np.int64)
    for p in range(pieces):
        piece = keys[(p * n) // pieces:((p + 1) * n) // pieces]
        counts[p] = np.bincount(piece >> 24, minlength=256)
    flat = counts.T.ravel()
    return (np.concatenate([[0], np.cumsum(flat)[:-1]]).reshape(256, pieces).T).copy()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=2.0, help="size of each array")
    parser.add_argument("--threads", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    n = int(args.gib * 2**30) // 8
    threads = args.threads or [t for t in (1, 2, 4, 8, 16, 32, 64)
                               if t <= numba.config.NUMBA_NUM_THREADS]
    a = np.arange(n, dtype=np.int64)
    b = np.empty_like(a)
    keys = np.random.default_rng(0).integers(0, 2**32, 2 * n, dtype=np.uint32)
    out = np.empty_like(keys)
    print(f"# {os.cpu_count()} CPUs, arrays of {args.gib:g} GiB, median of {args.repeats}\n")
    print("| threads | read GB/s | copy GB/s | scatter by top byte GB/s | arithmetic speed-up |")
    print("|---:|---:|---:|---:|---:|")
    one_thread = None
    for t in threads:
        numba.set_num_threads(t)
        starts = _bucket_starts(keys, t)
        rates = []
        for function, arguments, moved in ((_read, (a,), a.nbytes),
                                           (_copy, (a, b), 2 * a.nbytes),
                                           (_scatter, (keys, out, starts), 2 * keys.nbytes)):
            function(*arguments)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                function(*arguments)
                times.append(time.perf_counter() - start)
            rates.append(moved / statistics.median(times) / 1e9)
        _arithmetic(t, 1000)
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            _arithmetic(t, 50_000_000)
            times.append(time.perf_counter() - start)
        one_thread = one_thread or statistics.median(times)
        rates.append(t * one_thread / statistics.median(times))
        print(f"| {t} | " + " | ".join(f"{r:.1f}" for r in rates) + " |", flush=True)


if __name__ == "__main__":
    main()
