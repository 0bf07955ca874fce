"""Numba kernels of the chunked decomposition (Dask partitions, streaming buckets).

A *chunk* is a set of rows that holds a contiguous range of scores, with equal
scores never split between two chunks. Sorting the chunks by score, every
pair of rows from two different chunks is strictly ordered: the row of the
higher chunk is above. So each "twice U" count of the one-machine sweep
(``fastbias._kernels``) splits into

    (pairs inside each chunk) + sum over chunks p of
    2 * (cell A count in chunk p) * (cell B count in all chunks below p)

where "count" is a row count (int64, exact) or a weight sum (float64). The
within-chunk part is what the ordinary sweep returns for the chunk's rows, so
the combine below is ``O(chunks x subgroups)``.

Everything here works on numpy arrays only.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ._kernels import (CELL_SUBGROUP_NEG, CELL_SUBGROUP_POS, N_COUNT_COLUMNS, TWICE_BNSP_U,
                       TWICE_BPSN_U, TWICE_NEG_BG_ABOVE_U, TWICE_POS_BG_ABOVE_U, TWICE_SUBGROUP_U)


@njit(cache=True, nogil=True)
def combine_chunk_counts(local_counts, universe_totals, class_totals, local_twice_u):
    """Whole-data counts from per-chunk counts, chunks in increasing score order.

    Parameters
    ----------
    local_counts : (n_chunks, n_groups, 7) int64 or float64
        Each chunk's own sweep counts (cell totals and twice the U numerators
        of the pairs inside the chunk), columns as in ``fastbias._kernels``.
    universe_totals : (n_chunks, n_groups, 2), same dtype
        Per chunk and subgroup, the negatives/positives (count or weight) of
        the rows the subgroup may be compared with (its members plus its
        background); all rows unless unannotated rows are excluded.
    class_totals : (n_chunks, 2), same dtype
        Negatives/positives of all rows of each chunk (for the overall AUC).
    local_twice_u : (n_chunks,), same dtype
        Twice the overall U of the pairs inside each chunk.

    Returns
    -------
    counts : (n_groups, 7)
        What ``member_counts`` would return for all rows at once.
    twice_u : scalar
        Twice the overall U of all rows.
    """
    n_chunks = local_counts.shape[0]
    n_groups = local_counts.shape[1]
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=local_counts.dtype)
    below_sub_neg = np.zeros(n_groups, dtype=local_counts.dtype)
    below_sub_pos = np.zeros(n_groups, dtype=local_counts.dtype)
    below_bg_neg = np.zeros(n_groups, dtype=local_counts.dtype)
    scalars = np.zeros(2, dtype=local_counts.dtype)  # twice_u, negatives below
    for p in range(n_chunks):
        scalars[0] += local_twice_u[p] + 2 * class_totals[p, 1] * scalars[1]
        scalars[1] += class_totals[p, 0]
        for g in range(n_groups):
            sub_neg = local_counts[p, g, CELL_SUBGROUP_NEG]
            sub_pos = local_counts[p, g, CELL_SUBGROUP_POS]
            bg_neg = universe_totals[p, g, 0] - sub_neg
            bg_pos = universe_totals[p, g, 1] - sub_pos
            counts[g, CELL_SUBGROUP_NEG] += sub_neg
            counts[g, CELL_SUBGROUP_POS] += sub_pos
            # the chunk's rows are above every row of the chunks below it
            counts[g, TWICE_SUBGROUP_U] += (local_counts[p, g, TWICE_SUBGROUP_U]
                                            + 2 * sub_pos * below_sub_neg[g])
            counts[g, TWICE_BPSN_U] += (local_counts[p, g, TWICE_BPSN_U]
                                        + 2 * bg_pos * below_sub_neg[g])
            counts[g, TWICE_BNSP_U] += (local_counts[p, g, TWICE_BNSP_U]
                                        + 2 * sub_pos * below_bg_neg[g])
            counts[g, TWICE_NEG_BG_ABOVE_U] += (local_counts[p, g, TWICE_NEG_BG_ABOVE_U]
                                                + 2 * bg_neg * below_sub_neg[g])
            counts[g, TWICE_POS_BG_ABOVE_U] += (local_counts[p, g, TWICE_POS_BG_ABOVE_U]
                                                + 2 * bg_pos * below_sub_pos[g])
            below_sub_neg[g] += sub_neg
            below_sub_pos[g] += sub_pos
            below_bg_neg[g] += bg_neg
    return counts, scalars[0]


@njit(cache=True, nogil=True)
def tied_chunk_counts(cell_totals, universe_totals, class_totals):
    """Sweep counts of a chunk whose rows all have one score (every pair tied).

    A tied pair counts 1/2, i.e. 1 in "twice U" (``w_i * w_j`` weighted), so
    each numerator is the product of the two cells' totals.
    ``cell_totals``/``universe_totals`` are (n_groups, 2) [negatives,
    positives], ``class_totals`` is (2,). Returns ``(counts, twice_u)``.
    """
    n_groups = cell_totals.shape[0]
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=cell_totals.dtype)
    for g in range(n_groups):
        sub_neg = cell_totals[g, 0]
        sub_pos = cell_totals[g, 1]
        bg_neg = universe_totals[g, 0] - sub_neg
        bg_pos = universe_totals[g, 1] - sub_pos
        counts[g, CELL_SUBGROUP_NEG] = sub_neg
        counts[g, CELL_SUBGROUP_POS] = sub_pos
        counts[g, TWICE_SUBGROUP_U] = sub_neg * sub_pos
        counts[g, TWICE_BPSN_U] = sub_neg * bg_pos
        counts[g, TWICE_BNSP_U] = bg_neg * sub_pos
        counts[g, TWICE_NEG_BG_ABOVE_U] = bg_neg * sub_neg
        counts[g, TWICE_POS_BG_ABOVE_U] = bg_pos * sub_pos
    return counts, class_totals[0] * class_totals[1]


@njit(cache=True, nogil=True)
def accumulate_tied_rows(slot_of_row, labels, codes, weights, class_rows, universe_rows,
                         cell_rows, class_weight, universe_weight, cell_weight):
    """Add rows to the running cell totals of the single-score buckets they fall in.

    ``slot_of_row[i]`` is the slot of row i's single-score bucket, or -1 when
    the row goes to an ordinary bucket. ``codes`` is (n, n_groups) int8:
    1 member, 0 background, -1 unannotated and excluded. Row counts go to the
    int64 ``*_rows`` arrays ((slots, 2) for the classes, (slots, n_groups, 2)
    per subgroup); when ``weights`` is non-empty their sums also go to the
    float64 ``*_weight`` arrays of the same shapes.
    """
    weighted = weights.shape[0] > 0
    n_groups = codes.shape[1]
    for i in range(slot_of_row.shape[0]):
        slot = slot_of_row[i]
        if slot < 0:
            continue
        c = 1 if labels[i] else 0
        w = weights[i] if weighted else 1.0
        class_rows[slot, c] += 1
        if weighted:
            class_weight[slot, c] += w
        for g in range(n_groups):
            code = codes[i, g]
            if code < 0:
                continue
            universe_rows[slot, g, c] += 1
            if weighted:
                universe_weight[slot, g, c] += w
            if code == 1:
                cell_rows[slot, g, c] += 1
                if weighted:
                    cell_weight[slot, g, c] += w


@njit(cache=True, nogil=True)
def membership_codes(values, threshold, missing, mark_missing, codes, column):
    """Write one subgroup's codes into ``codes[:, column]``: -1 for a ``missing`` row when
    ``mark_missing`` (else 0: never a member), 1 if ``value >= threshold``, else 0.

    ``missing`` is a boolean mask, or empty when every row is annotated.
    """
    has_missing = missing.shape[0] > 0
    for i in range(values.shape[0]):
        if has_missing and missing[i]:
            codes[i, column] = -1 if mark_missing else 0
        elif values[i] >= threshold:
            codes[i, column] = 1
        else:
            codes[i, column] = 0


@njit(cache=True, nogil=True)
def assign_buckets(scores, edges, slot_of_bucket):
    """Bucket of every row and the rows each bucket must store.

    Bucket b holds scores in ``[edges[b-1], edges[b])`` (binary search, like
    ``searchsorted(edges, scores, side="right")``). Rows of buckets with
    ``slot_of_bucket[b] >= 0`` (single-score buckets) are only counted
    elsewhere and are not included in ``stored_per_bucket``.
    """
    n = scores.shape[0]
    n_edges = edges.shape[0]
    bucket = np.empty(n, dtype=np.int64)
    stored_per_bucket = np.zeros(n_edges + 1, dtype=np.int64)
    for i in range(n):
        value = scores[i]
        lo = 0
        hi = n_edges
        while lo < hi:
            mid = (lo + hi) >> 1
            if edges[mid] <= value:
                lo = mid + 1
            else:
                hi = mid
        bucket[i] = lo
        if slot_of_bucket[lo] < 0:
            stored_per_bucket[lo] += 1
    return bucket, stored_per_bucket


@njit(cache=True, nogil=True)
def stored_rows_by_bucket(bucket, stored_per_bucket, slot_of_bucket):
    """Rows to store, grouped by bucket (a counting sort; row order kept within a bucket)."""
    n_buckets = stored_per_bucket.shape[0]
    start = np.zeros(n_buckets, dtype=np.int64)
    total = 0
    for b in range(n_buckets):
        start[b] = total
        total += stored_per_bucket[b]
    order = np.empty(total, dtype=np.int64)
    for i in range(bucket.shape[0]):
        b = bucket[i]
        if slot_of_bucket[b] < 0:
            order[start[b]] = i
            start[b] += 1
    return order


@njit(cache=True, nogil=True)
def gather_records(order, score_bytes, label_bytes, weight_bytes, code_bytes, out):
    """Write row ``order[p]`` of each byte matrix side by side into record ``p`` of ``out``.

    All arguments but ``order`` are 2-D uint8 views, one row per data row
    (``weight_bytes`` may have 0 columns); ``out`` is the byte view of a
    packed record array whose fields are, in this order, score, label,
    weight, codes.
    """
    n_score = score_bytes.shape[1]
    n_label = label_bytes.shape[1]
    n_weight = weight_bytes.shape[1]
    n_code = code_bytes.shape[1]
    for p in range(order.shape[0]):
        i = order[p]
        col = 0
        for k in range(n_score):
            out[p, col] = score_bytes[i, k]
            col += 1
        for k in range(n_label):
            out[p, col] = label_bytes[i, k]
            col += 1
        for k in range(n_weight):
            out[p, col] = weight_bytes[i, k]
            col += 1
        for k in range(n_code):
            out[p, col] = code_bytes[i, k]
            col += 1


@njit(cache=True, nogil=True)
def pack_codes(codes):
    """Pack (n, n_groups) int8 codes into bit words: (member bits, unannotated bits).

    Each is (n, ceil(n_groups / 64)) uint64; bit g % 64 of word g // 64 is
    set when subgroup g's code is 1 (member) or -1 (unannotated).
    """
    n, n_groups = codes.shape
    n_words = (n_groups + 63) // 64
    member = np.zeros((n, n_words), dtype=np.uint64)
    missing = np.zeros((n, n_words), dtype=np.uint64)
    for i in range(n):
        for g in range(n_groups):
            code = codes[i, g]
            if code != 0:
                bit = np.uint64(1) << np.uint64(g % 64)
                if code > 0:
                    member[i, g // 64] |= bit
                else:
                    missing[i, g // 64] |= bit
    return member, missing


@njit(cache=True, nogil=True)
def unpack_codes(member, missing, n_groups):
    """Inverse of :func:`pack_codes` (``missing`` may have 0 rows: nothing unannotated)."""
    n = member.shape[0]
    has_missing = missing.shape[0] > 0
    codes = np.zeros((n, n_groups), dtype=np.int8)
    for i in range(n):
        for g in range(n_groups):
            bit = np.uint64(1) << np.uint64(g % 64)
            if member[i, g // 64] & bit:
                codes[i, g] = 1
            elif has_missing and missing[i, g // 64] & bit:
                codes[i, g] = -1
    return codes
