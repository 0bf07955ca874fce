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
                       TWICE_BPSN_U, TWICE_NEG_BG_ABOVE_U, TWICE_POS_BG_ABOVE_U, TWICE_SUBGROUP_U,
                       _dd_add, _dd_mul)


@njit(cache=True, nogil=True)
def combine_chunk_counts(local_counts, backgrounds, class_totals, local_twice_u):
    """Whole-data counts from per-chunk integer counts, chunks in increasing score order.

    Parameters
    ----------
    local_counts : (n_chunks, n_groups, 7) int64
        Each chunk's own sweep counts (cell totals and twice the U numerators
        of the pairs inside the chunk), columns as in ``fastbias._kernels``.
    backgrounds : (n_chunks, n_groups, 2) int64
        Per chunk and subgroup, the background negatives/positives: rows the
        subgroup is compared with (all rows, or the annotated ones when
        unannotated rows are excluded) that are not in it.
    class_totals : (n_chunks, 2) int64
        Negatives/positives of all rows of each chunk (for the overall AUC).
    local_twice_u : (n_chunks,) int64
        Twice the overall U of the pairs inside each chunk.

    Returns
    -------
    counts : (n_groups, 7) int64
        What ``member_counts`` would return for all rows at once.
    twice_u : int64
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
            bg_neg = backgrounds[p, g, 0]
            bg_pos = backgrounds[p, g, 1]
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


@njit(inline="always")
def _dd_add_to(hi, lo, index, a_hi, a_lo):
    hi[index], lo[index] = _dd_add(hi[index], lo[index], a_hi, a_lo)


@njit(inline="always")
def _twice_product(a_hi, a_lo, b_hi, b_lo):
    p_hi, p_lo = _dd_mul(a_hi, a_lo, b_hi, b_lo)
    return 2.0 * p_hi, 2.0 * p_lo


@njit(cache=True, nogil=True)
def combine_chunk_counts_dd(hi, lo, background_hi, background_lo, class_hi, class_lo, u_hi, u_lo):
    """:func:`combine_chunk_counts` for weighted chunks, every sum in double-double.

    Each argument is a pair of arrays (high and low parts) shaped as there.
    Every term is a sum of products of non-negative weights (the backgrounds
    come per chunk, never as a difference), so the result is accurate to about
    2**-106 relative. Returns ``(counts_hi, counts_lo, background_hi,
    background_lo, class_hi, class_lo, twice_u_hi, twice_u_lo)``: the whole
    data's counts (n_groups, 7), background totals (n_groups, 2), class
    totals (2,) and twice the overall U.
    """
    n_chunks = hi.shape[0]
    n_groups = hi.shape[1]
    c_hi = np.zeros((n_groups, N_COUNT_COLUMNS))
    c_lo = np.zeros((n_groups, N_COUNT_COLUMNS))
    b_hi = np.zeros((n_groups, 2))
    b_lo = np.zeros((n_groups, 2))
    t_hi = np.zeros(2)
    t_lo = np.zeros(2)
    u = np.zeros(1)
    u_low = np.zeros(1)
    below_hi = np.zeros((n_groups, 3))  # subgroup negatives, subgroup positives, background negatives
    below_lo = np.zeros((n_groups, 3))
    for p in range(n_chunks):
        x_hi, x_lo = _twice_product(class_hi[p, 1], class_lo[p, 1], t_hi[0], t_lo[0])
        x_hi, x_lo = _dd_add(x_hi, x_lo, u_hi[p], u_lo[p])
        _dd_add_to(u, u_low, 0, x_hi, x_lo)
        _dd_add_to(t_hi, t_lo, 0, class_hi[p, 0], class_lo[p, 0])
        _dd_add_to(t_hi, t_lo, 1, class_hi[p, 1], class_lo[p, 1])
        for g in range(n_groups):
            sn_hi, sn_lo = hi[p, g, CELL_SUBGROUP_NEG], lo[p, g, CELL_SUBGROUP_NEG]
            sp_hi, sp_lo = hi[p, g, CELL_SUBGROUP_POS], lo[p, g, CELL_SUBGROUP_POS]
            bn_hi, bn_lo = background_hi[p, g, 0], background_lo[p, g, 0]
            bp_hi, bp_lo = background_hi[p, g, 1], background_lo[p, g, 1]
            c_hi[g, CELL_SUBGROUP_NEG], c_lo[g, CELL_SUBGROUP_NEG] = _dd_add(
                c_hi[g, CELL_SUBGROUP_NEG], c_lo[g, CELL_SUBGROUP_NEG], sn_hi, sn_lo)
            c_hi[g, CELL_SUBGROUP_POS], c_lo[g, CELL_SUBGROUP_POS] = _dd_add(
                c_hi[g, CELL_SUBGROUP_POS], c_lo[g, CELL_SUBGROUP_POS], sp_hi, sp_lo)
            b_hi[g, 0], b_lo[g, 0] = _dd_add(b_hi[g, 0], b_lo[g, 0], bn_hi, bn_lo)
            b_hi[g, 1], b_lo[g, 1] = _dd_add(b_hi[g, 1], b_lo[g, 1], bp_hi, bp_lo)
            # (U column, the chunk's cell above, the cell of the chunks below)
            for col, a_hi, a_lo, q in ((TWICE_SUBGROUP_U, sp_hi, sp_lo, 0),
                                       (TWICE_BPSN_U, bp_hi, bp_lo, 0),
                                       (TWICE_BNSP_U, sp_hi, sp_lo, 2),
                                       (TWICE_NEG_BG_ABOVE_U, bn_hi, bn_lo, 0),
                                       (TWICE_POS_BG_ABOVE_U, bp_hi, bp_lo, 1)):
                x_hi, x_lo = _twice_product(a_hi, a_lo, below_hi[g, q], below_lo[g, q])
                x_hi, x_lo = _dd_add(x_hi, x_lo, hi[p, g, col], lo[p, g, col])
                c_hi[g, col], c_lo[g, col] = _dd_add(c_hi[g, col], c_lo[g, col], x_hi, x_lo)
            below_hi[g, 0], below_lo[g, 0] = _dd_add(below_hi[g, 0], below_lo[g, 0], sn_hi, sn_lo)
            below_hi[g, 1], below_lo[g, 1] = _dd_add(below_hi[g, 1], below_lo[g, 1], sp_hi, sp_lo)
            below_hi[g, 2], below_lo[g, 2] = _dd_add(below_hi[g, 2], below_lo[g, 2], bn_hi, bn_lo)
    return c_hi, c_lo, b_hi, b_lo, t_hi, t_lo, u[0], u_low[0]


@njit(cache=True, nogil=True)
def tied_chunk_counts(cell_totals, background_totals, class_totals):
    """Integer sweep counts of a chunk whose rows all have one score (every pair tied).

    A tied pair counts 1/2, i.e. 1 in "twice U", so each numerator is the
    product of the two cells' counts. ``cell_totals``/``background_totals``
    are (n_groups, 2) [negatives, positives], ``class_totals`` is (2,).
    Returns ``(counts, twice_u)``.
    """
    n_groups = cell_totals.shape[0]
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=cell_totals.dtype)
    for g in range(n_groups):
        sub_neg = cell_totals[g, 0]
        sub_pos = cell_totals[g, 1]
        bg_neg = background_totals[g, 0]
        bg_pos = background_totals[g, 1]
        counts[g, CELL_SUBGROUP_NEG] = sub_neg
        counts[g, CELL_SUBGROUP_POS] = sub_pos
        counts[g, TWICE_SUBGROUP_U] = sub_neg * sub_pos
        counts[g, TWICE_BPSN_U] = sub_neg * bg_pos
        counts[g, TWICE_BNSP_U] = bg_neg * sub_pos
        counts[g, TWICE_NEG_BG_ABOVE_U] = bg_neg * sub_neg
        counts[g, TWICE_POS_BG_ABOVE_U] = bg_pos * sub_pos
    return counts, class_totals[0] * class_totals[1]


@njit(cache=True, nogil=True)
def tied_chunk_counts_dd(cell_hi, cell_lo, background_hi, background_lo, class_hi, class_lo):
    """:func:`tied_chunk_counts` for weighted rows, products in double-double.

    Returns ``(counts_hi, counts_lo, twice_u_hi, twice_u_lo)``.
    """
    n_groups = cell_hi.shape[0]
    c_hi = np.zeros((n_groups, N_COUNT_COLUMNS))
    c_lo = np.zeros((n_groups, N_COUNT_COLUMNS))
    for g in range(n_groups):
        c_hi[g, CELL_SUBGROUP_NEG], c_lo[g, CELL_SUBGROUP_NEG] = cell_hi[g, 0], cell_lo[g, 0]
        c_hi[g, CELL_SUBGROUP_POS], c_lo[g, CELL_SUBGROUP_POS] = cell_hi[g, 1], cell_lo[g, 1]
        for col, x, x_bg, y, y_bg in ((TWICE_SUBGROUP_U, 0, False, 1, False),
                                      (TWICE_BPSN_U, 0, False, 1, True),
                                      (TWICE_BNSP_U, 0, True, 1, False),
                                      (TWICE_NEG_BG_ABOVE_U, 0, True, 0, False),
                                      (TWICE_POS_BG_ABOVE_U, 1, True, 1, False)):
            a_hi = background_hi[g, x] if x_bg else cell_hi[g, x]
            a_lo = background_lo[g, x] if x_bg else cell_lo[g, x]
            b_hi = background_hi[g, y] if y_bg else cell_hi[g, y]
            b_lo = background_lo[g, y] if y_bg else cell_lo[g, y]
            c_hi[g, col], c_lo[g, col] = _dd_mul(a_hi, a_lo, b_hi, b_lo)
    u_hi, u_lo = _dd_mul(class_hi[0], class_lo[0], class_hi[1], class_lo[1])
    return c_hi, c_lo, u_hi, u_lo


@njit(cache=True, nogil=True)
def accumulate_tied_rows(slot_of_row, labels, codes, weights, class_rows, cell_rows,
                         background_rows, class_weight, cell_weight, background_weight):
    """Add rows to the running totals of the single-score buckets they fall in.

    ``slot_of_row[i]`` is the slot of row i's single-score bucket, or -1 when
    the row goes to an ordinary bucket. ``codes`` is (n, n_groups) int8:
    1 member, 0 background, -1 unannotated and excluded. Row counts go to the
    int64 ``*_rows`` arrays ((slots, 2) for the classes, (slots, n_groups, 2)
    per subgroup for its members and its background); when ``weights`` is
    non-empty their sums go to the ``*_weight`` arrays, shaped as the row
    counts with a last axis of 2: double-double (high, low) parts.
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
            class_weight[slot, c, 0], class_weight[slot, c, 1] = _dd_add(
                class_weight[slot, c, 0], class_weight[slot, c, 1], w, 0.0)
        for g in range(n_groups):
            code = codes[i, g]
            if code < 0:
                continue
            if code == 1:
                cell_rows[slot, g, c] += 1
                if weighted:
                    cell_weight[slot, g, c, 0], cell_weight[slot, g, c, 1] = _dd_add(
                        cell_weight[slot, g, c, 0], cell_weight[slot, g, c, 1], w, 0.0)
            else:
                background_rows[slot, g, c] += 1
                if weighted:
                    background_weight[slot, g, c, 0], background_weight[slot, g, c, 1] = _dd_add(
                        background_weight[slot, g, c, 0], background_weight[slot, g, c, 1], w,
                        0.0)


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
