"""The sort and count stages on Numba's own threads (``prange``) against fastbias's pool (issue 16).

At 1.8M rows on 16 cores one model's call takes 13-21 ms, and adding cores past 8 does
not help: each piece that fastbias's pool hands to a thread costs a wake-up and the GIL
(``gil_pieces.py`` measures that). This script runs the same kernels, cut into the same
pieces, from one ``parallel=True`` kernel per round instead (no Python per piece), for
the class sort, the membership sort and the counting walk, and prints each stage's
median time both ways per core count. It checks that both give the same arrays, bit
for bit. It was the experiment behind the library's opt-in rounds on Numba's threads
(``fastbias._native``, ``FASTBIAS_NUMBA_THREADS=1``), and keeps its own kernels so that it
times the same thing whatever the library's switches say.

Usage::

    python benchmarks/native_stages.py --cores 1 8 16
"""
from __future__ import annotations

import argparse
import os
import sys

import numba
import numpy as np
from numba import njit, prange

from fastbias._threads import even_ranges
from fastbias.prepare.memberships import prepare_subgroups
from fastbias.sort import _kernels as SK
from fastbias.sort.order import (
    _UINT_OF_FLOAT,
    _member_ranges,
    score_key_range,
    sort_classes,
    sort_memberships,
)
from fastbias.sweep import _kernels as CK
from fastbias.sweep.counts import count_all
from fastbias.validate.rows import validated_rows

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_threads import compiled_case, core_counts, median_time, pin  # noqa: E402

_NONE = np.empty(0, dtype=np.int64)
_NO_ROWS = np.empty(0, dtype=np.int32)


@njit(parallel=True, cache=True)
def _class_counts(bits, labels, starts, stops, low, shift):
    out = np.empty((starts.shape[0], 2 * SK.TOP_BUCKETS), dtype=np.int64)
    for j in prange(starts.shape[0]):
        out[j] = SK.class_top_digit_counts(bits, labels, starts[j], stops[j], low, shift)
    return out


@njit(parallel=True, cache=True)
def _class_scatter(bits, labels, starts, stops, low, shift, next_slot, out):
    for j in prange(starts.shape[0]):
        SK.scatter_class_keys(bits, labels, starts[j], stops[j], low, shift, next_slot[j], out,
                              _NO_ROWS)


@njit(parallel=True, cache=True)
def _member_counts(bits, identity_rows, row_ptr, starts, stops, low, shift):
    out = np.empty((starts.shape[0], SK.TOP_BUCKETS), dtype=np.int64)
    for j in prange(starts.shape[0]):
        out[j] = SK.member_top_digit_counts(bits, identity_rows, row_ptr, starts[j], stops[j],
                                            low, shift)
    return out


@njit(parallel=True, cache=True)
def _member_scatter(bits, identity_rows, identity_labels, row_ptr, row_groups, starts, stops,
                    low, shift, next_slot, keys, codes):
    for j in prange(starts.shape[0]):
        SK.scatter_member_keys(bits, identity_rows, identity_labels, row_ptr, row_groups,
                               starts[j], stops[j], low, shift, next_slot[j], keys, codes)


@njit(parallel=True, cache=True)
def _sort_buckets(values, payload, scratch, payload_scratch, bucket_start, lo, hi, low, shift):
    for j in prange(lo.shape[0]):
        SK.sort_buckets(values, payload, scratch, payload_scratch, bucket_start, lo[j], hi[j],
                        low, shift)


@njit(parallel=True, cache=True)
def _count_jobs(keys, codes, bounds, neg_keys, pos_keys, pos_bounds, n_groups, none):
    pieces = bounds.shape[0] - 1
    parts = np.empty((pieces, n_groups, CK.N_COUNT_COLUMNS), dtype=np.int64)
    twice_u = np.empty(pieces, dtype=np.int64)
    for t in prange(2 * pieces):  # a walk's job and an overall U's job in turn
        j = t // 2
        if t % 2:
            twice_u[j] = CK.twice_auc_numerator_sorted(
                neg_keys, pos_keys[pos_bounds[j]:pos_bounds[j + 1]], none, none)
        else:
            parts[j] = CK.member_counts_in_range(keys, codes, bounds[j], bounds[j + 1],
                                                 neg_keys, pos_keys, n_groups, none, none, none)
    joined = parts[0].copy()
    for j in range(1, pieces):
        joined = CK.add_member_counts(joined, parts[j])
    return CK.finish_member_counts(joined), twice_u.sum()


_NO_BUCKETS = np.zeros(1, dtype=np.int64)


def _job_bounds(start, pieces):
    runs = SK.bucket_runs(start, _NO_BUCKETS, pieces)
    return runs[:, 0].copy(), runs[:, 1].copy()


def native_class_sort(scores, labels, pieces, key_range):
    bits = scores.view(_UINT_OF_FLOAT[scores.dtype])
    labels = labels.view(np.uint8)
    low, shift = key_range
    rows = np.array(even_ranges(scores.shape[0], pieces), dtype=np.int64)
    counts = _class_counts(bits, labels, rows[:, 0], rows[:, 1], low, shift)
    start, slot = SK.bucket_slots(counts)
    out = np.empty(int(start[-1]), dtype=bits.dtype)
    _class_scatter(bits, labels, rows[:, 0], rows[:, 1], low, shift, slot, out)
    lo, hi = _job_bounds(start, 4 * pieces)
    _sort_buckets(out, _NONE, np.empty_like(out), _NONE, start, lo, hi, low, shift)
    n_neg = int(start[SK.TOP_BUCKETS])
    return out[:n_neg], out[n_neg:]


def native_member_sort(scores, m, pieces, key_range):
    bits = scores.view(_UINT_OF_FLOAT[scores.dtype])
    low, shift = key_range
    ranges = np.array(_member_ranges(m.row_ptr, pieces), dtype=np.int64)
    counts = _member_counts(bits, m.identity_rows, m.row_ptr, ranges[:, 0], ranges[:, 1], low,
                            shift)
    start, slot = SK.bucket_slots(counts)
    n = m.row_groups.shape[0]
    code = np.int32 if 2 * m.n_groups + 1 < 2 ** 31 else np.int64
    keys, codes = np.empty(n, dtype=bits.dtype), np.empty(n, dtype=code)
    _member_scatter(bits, m.identity_rows, m.identity_labels, m.row_ptr, m.row_groups,
                    ranges[:, 0], ranges[:, 1], low, shift, slot, keys, codes)
    lo, hi = _job_bounds(start, 4 * pieces)
    _sort_buckets(keys, codes, np.empty_like(keys), np.empty_like(codes), start, lo, hi, low,
                  shift)
    return keys, codes


def native_count(members, classes, n_groups, pieces):
    keys, codes = members
    neg_keys, pos_keys = classes
    bounds = np.array([0, *(CK.block_boundary_near(keys, (j * keys.shape[0]) // pieces)
                            for j in range(1, pieces)), keys.shape[0]], dtype=np.int64)
    pos_bounds = (np.arange(pieces + 1) * pos_keys.shape[0]) // pieces
    counts, twice_u = _count_jobs(keys, codes, bounds, neg_keys, pos_keys, pos_bounds,
                                  n_groups, _NONE)
    return counts, int(twice_u)


def median_ms(function, repeats):
    return 1e3 * median_time(function, repeats)[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_804_875)
    parser.add_argument("--cores", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--jobs-per-thread", type=int, default=4)
    args = parser.parse_args(argv)
    usable, cores = core_counts(parser, args.cores)
    y, s, groups = compiled_case(args.rows)
    rows = validated_rows(y, s, None)
    labels, scores = rows.labels, rows.scores
    m = prepare_subgroups(labels, groups, None, None)
    key_range = score_key_range(scores, 1, rows.score_bounds)
    print(f"{args.rows:,} rows x {m.n_groups}, {m.row_groups.shape[0]:,} memberships; "
          f"medians of {args.repeats} (ms); pool: fastbias's threads, prange: one Numba "
          f"parallel kernel per round ({args.jobs_per_thread} jobs a thread)\n")
    print("| cores | class sort, pool | prange | membership sort, pool | prange | "
          "counts, pool | prange |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for n in cores:
            pin(usable[:n])
            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
            pieces = n * args.jobs_per_thread if n > 1 else 1
            with numba.parallel_chunksize(1):
                classes = sort_classes(scores, labels, n, key_range)
                native = native_class_sort(scores, labels, pieces, key_range)
                members = sort_memberships(scores, m, n, key_range)
                native_members = native_member_sort(scores, m, pieces, key_range)
                counts = count_all(members, classes, m.n_groups, n)
                native_counts = native_count(members, classes, m.n_groups, pieces)
                same = (all(np.array_equal(a, b) for a, b in zip(classes, native))
                        and all(np.array_equal(a, b) for a, b in zip(members, native_members))
                        and np.array_equal(counts[0], native_counts[0])
                        and counts[1] == native_counts[1])
                if not same:
                    raise SystemExit(f"{n} cores: prange gave other arrays")
                times = [
                    median_ms(lambda: sort_classes(scores, labels, n, key_range), args.repeats),
                    median_ms(lambda: native_class_sort(scores, labels, pieces, key_range),
                              args.repeats),
                    median_ms(lambda: sort_memberships(scores, m, n, key_range), args.repeats),
                    median_ms(lambda: native_member_sort(scores, m, pieces, key_range),
                              args.repeats),
                    median_ms(lambda: count_all(members, classes, m.n_groups, n), args.repeats),
                    median_ms(lambda: native_count(members, classes, m.n_groups, pieces),
                              args.repeats)]
            print(f"| {n} | " + " | ".join(f"{t:.2f}" for t in times) + " |", flush=True)
    finally:
        pin(usable)
    print(f"\nthreading layer: {numba.threading_layer()}; every result bit for bit the same")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
