"""What the Python between a stage's kernels costs on many cores (issue 16).

fastbias splits a stage's work into pieces that the pool's threads run as
calls of ``nogil`` Numba kernels. Between the kernels each thread runs some
Python (slicing, allocating, the next call), for which it must take the GIL
back. This script times the same arithmetic, cut into the same pieces, run
three ways on every core the process may use:

* ``one call``: one kernel call per piece (``fastbias._threads.run_jobs``);
* ``K calls``: each piece as K kernel calls of 1/K of its work, with the GIL
  taken back between them (as a piece of several steps does);
* ``prange``: all pieces in one Numba ``parallel=True`` kernel (no Python per
  piece; Numba's own threads).

It prints each way's median time against the work's time on one thread, so
the gap is what the handoffs cost. Usage::

    python benchmarks/gil_pieces.py --pieces 16 64 --piece-us 100 500 --calls 5
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numba
import numpy as np
from numba import njit, prange

from fastbias._threads import run_jobs, usable_cpus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import median_time  # noqa: E402


@njit(nogil=True, cache=True)
def _work(values, rounds):
    total = 0.0
    for _ in range(rounds):
        for i in range(values.shape[0]):
            total += values[i] * 1.0000001
    return total


@njit(parallel=True, cache=True)
def _all_pieces(values, rounds, pieces):
    out = np.empty(pieces)
    for j in prange(pieces):
        out[j] = _work(values, rounds)
    return out


def median_ms(function, repeats):
    return 1e3 * median_time(function, repeats)[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pieces", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--piece-us", type=float, nargs="+", default=[100.0, 500.0])
    parser.add_argument("--calls", type=int, default=5, help="kernel calls per piece (K)")
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args(argv)
    workers = usable_cpus()
    numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))
    values = np.random.default_rng(0).random(4096)  # stays in L1/L2: arithmetic only
    _work(values, 1)
    start = time.perf_counter()
    _work(values, 1000)
    us_per_round = (time.perf_counter() - start) / 1000 * 1e6
    print(f"# {workers} usable CPUs, numba threading layer "
          f"{numba.config.THREADING_LAYER!r}, one round {us_per_round:.1f} us\n")
    print(f"| pieces | piece | one thread | one call | {args.calls} calls | prange |")
    print("|---:|---:|---:|---:|---:|---:|")
    for pieces in args.pieces:
        for piece_us in args.piece_us:
            rounds = max(1, round(piece_us / us_per_round))
            part = max(1, rounds // args.calls)
            serial = median_ms(lambda: [_work(values, rounds) for _ in range(pieces)], 3)
            one = median_ms(lambda: run_jobs(lambda j: _work(values, rounds), range(pieces),
                                             workers), args.repeats)
            several = median_ms(lambda: run_jobs(
                lambda j: [_work(values, part) for _ in range(args.calls)], range(pieces),
                workers), args.repeats)
            _all_pieces(values, rounds, pieces)
            whole = median_ms(lambda: _all_pieces(values, rounds, pieces), args.repeats)
            ideal = serial / pieces * -(-pieces // workers)  # whole rounds of pieces
            print(f"| {pieces} | {piece_us:g} us | {serial:.2f} ms (ideal {ideal:.2f}) | "
                  f"{one:.2f} ms | {several:.2f} ms | {whole:.2f} ms |", flush=True)
    print(f"\nthreading layer used: {numba.threading_layer()}; "
          f"pid {os.getpid()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
