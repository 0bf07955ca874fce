"""Numba kernels of the sort stage: order-preserving integer keys and radix sorts (no pandas).

A finite float32/float64 score becomes an unsigned integer key whose order
(and equality) is that of the score (``-0.0`` ties with ``+0.0``), so that
least-significant-digit radix sorts of 11-bit digits order the scores, the
classes and every (row, subgroup) membership. Also the coarse bucketing of
rows by score range for out-of-core data.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# LSD radix sort of float bit patterns: 11-bit digits
RADIX_DIGIT_BITS = 11


RADIX_BUCKETS = 1 << RADIX_DIGIT_BITS


@njit(cache=True, nogil=True)
def gather_scores(scores, rows):
    """``scores[rows]`` with -0.0 mapped to +0.0."""
    out = np.empty(rows.shape[0], dtype=scores.dtype)
    for j in range(rows.shape[0]):
        out[j] = scores[rows[j]] + 0.0
    return out


@njit(inline="always")
def _sortable_key(b, sign, full):
    """The unsigned integer whose order is the order of the float with bit pattern ``b``.

    ``b`` is a uint64 holding a float32/float64 bit pattern; ``sign`` is its
    sign bit and ``full`` its all-ones mask. Non-negative floats map to
    ``b | sign`` and negative ones to ``~b``; ``-0.0`` becomes ``+0.0``. NaN
    must not occur.
    """
    if b == sign:  # -0.0 sorts and ties as +0.0
        b = np.uint64(0)
    if b & sign:
        return (~b) & full
    return b | sign


@njit(inline="always")
def _float_bits_of_key(k, sign, full):
    """Inverse of :func:`_sortable_key` (with -0.0 already folded into +0.0)."""
    if k & sign:
        return k ^ sign
    return (~k) & full


@njit(inline="always")
def _count_digits(hist, k, n_passes):
    """Add key ``k`` to the per-pass digit histograms ``hist`` (n_passes x RADIX_BUCKETS)."""
    for p in range(n_passes):
        hist[p, np.int64((k >> np.uint64(p * RADIX_DIGIT_BITS)) & np.uint64(RADIX_BUCKETS - 1))] += 1


@njit(inline="always")
def _radix_passes(n_bits):
    return (n_bits + RADIX_DIGIT_BITS - 1) // RADIX_DIGIT_BITS


@njit(inline="always")
def _lsd_passes_in_range(keys, spare, payload, spare_payload, lo, hi, hist):
    """LSD radix passes over ``keys[lo:hi]`` (and ``payload``, unless empty), stable.

    ``hist`` holds the digit histograms of that range (one row per pass of
    RADIX_DIGIT_BITS bits, least significant first) and is overwritten; a
    pass whose digit is the same for every key is skipped. Passes alternate
    between the arrays and their spares. Returns ``(sorted_keys,
    sorted_payload, in_spare)``: the arrays now holding the sorted range, and
    whether those are the spares.
    """
    with_payload = payload.shape[0] > 0
    digit_mask = np.uint64(RADIX_BUCKETS - 1)
    src, dst = keys, spare
    psrc, pdst = payload, spare_payload
    in_spare = False
    for p in range(hist.shape[0]):
        constant_digit = False
        for d in range(RADIX_BUCKETS):
            c = hist[p, d]
            if c != 0:
                constant_digit = c == hi - lo
                break
        if constant_digit:
            continue
        total = lo
        for d in range(RADIX_BUCKETS):
            c = hist[p, d]
            hist[p, d] = total
            total += c
        shift = np.uint64(p * RADIX_DIGIT_BITS)
        for j in range(lo, hi):
            k = src[j]
            d = np.int64((np.uint64(k) >> shift) & digit_mask)
            t = hist[p, d]
            dst[t] = k
            if with_payload:
                pdst[t] = psrc[j]
            hist[p, d] = t + 1
        src, dst = dst, src
        psrc, pdst = pdst, psrc
        in_spare = not in_spare
    return src, psrc, in_spare


@njit(cache=True, nogil=True)
def lsd_radix_passes(keys, spare, payload, spare_payload, hist):
    """Sort unsigned ``keys`` ascending, carrying ``payload`` along (stable).

    ``hist`` holds the digit histograms of ``keys`` (see
    :func:`_lsd_passes_in_range`); ``spare`` (and ``spare_payload``) are
    scratch arrays of the same shape; ``payload`` may be empty (keys only).
    Returns ``(sorted_keys, sorted_payload)``, each either the input array or
    its spare.
    """
    sorted_keys, sorted_payload, _ = _lsd_passes_in_range(keys, spare, payload, spare_payload, 0,
                                                          keys.shape[0], hist)
    return sorted_keys, sorted_payload


@njit(inline="always")
def _gather_keys(bits, rows, n_bits, n_passes, keys, payload, hist):
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits)
    with_payload = payload.shape[0] > 0
    for j in range(rows.shape[0]):
        k = _sortable_key(np.uint64(bits[rows[j]]), sign, full)
        keys[j] = k
        if with_payload:
            payload[j] = j
        _count_digits(hist, k, n_passes)


@njit(cache=True, nogil=True)
def radix_sort_gathered(bits, rows, n_bits, out_bits, order, as_keys=False):
    """Sort the floats ``bits[rows]`` (given as their raw bit patterns) ascending.

    ``bits`` is a float32/float64 array viewed as uint32/uint64 (``n_bits`` 32
    or 64). Writes the sorted bit patterns to ``out_bits`` (same width; -0.0
    written as +0.0), or with ``as_keys`` their sortable keys (see
    :func:`_sortable_key`), and, if ``order`` is not empty, the positions ``j``
    (into ``rows``) in sorted order (stable). NaN must not occur.
    """
    m = rows.shape[0]
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits)
    n_passes = _radix_passes(n_bits)
    with_order = order.shape[0] > 0
    keys = np.empty(m, dtype=out_bits.dtype)
    n_payload = m if with_order else 0
    payload = np.empty(n_payload, dtype=np.int64)
    hist = np.zeros((n_passes, RADIX_BUCKETS), dtype=np.int64)
    # literal pass counts let the compiler unroll the histogram updates
    if n_bits == 32:
        _gather_keys(bits, rows, 32, 3, keys, payload, hist)
    else:
        _gather_keys(bits, rows, 64, 6, keys, payload, hist)
    sorted_keys, sorted_payload = lsd_radix_passes(keys, np.empty_like(keys), payload,
                                                   np.empty_like(payload), hist)
    if as_keys:
        for j in range(m):
            out_bits[j] = sorted_keys[j]
    else:
        for j in range(m):
            out_bits[j] = _float_bits_of_key(np.uint64(sorted_keys[j]), sign, full)
    if with_order:
        for j in range(m):
            order[j] = sorted_payload[j]


@njit(inline="always")
def _split_class_keys(bits, labels, n_bits, neg_keys, pos_keys, neg_top, pos_top):
    """Keys of each class's scores, in row order, with histograms of their top digits."""
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits)
    top_shift = np.uint64(n_bits - RADIX_DIGIT_BITS)
    i_neg = 0
    i_pos = 0
    for i in range(bits.shape[0]):
        k = _sortable_key(np.uint64(bits[i]), sign, full)
        if labels[i]:
            pos_keys[i_pos] = k
            i_pos += 1
            pos_top[np.int64(k >> top_shift)] += 1
        else:
            neg_keys[i_neg] = k
            i_neg += 1
            neg_top[np.int64(k >> top_shift)] += 1


@njit(inline="always")
def _insertion_sort(values, lo, hi):
    for j in range(lo + 1, hi):
        k = values[j]
        i = j - 1
        while i >= lo and values[i] > k:
            values[i + 1] = values[i]
            i -= 1
        values[i + 1] = k


@njit(inline="always")
def _lsd_sort_segment(values, scratch, lo, hi, n_passes, hist):
    """Sort ``values[lo:hi]`` by its lowest ``n_passes`` digits (LSD), using ``scratch[lo:hi]``.

    ``hist`` is (n_passes, RADIX_BUCKETS) scratch. The sorted segment ends in ``values``.
    """
    for p in range(n_passes):
        for d in range(RADIX_BUCKETS):
            hist[p, d] = 0
    for j in range(lo, hi):
        _count_digits(hist, np.uint64(values[j]), n_passes)
    no_payload = np.empty(0, dtype=np.int64)
    sorted_values, _, in_spare = _lsd_passes_in_range(values, scratch, no_payload, no_payload,
                                                      lo, hi, hist)
    if in_spare:
        for j in range(lo, hi):
            values[j] = sorted_values[j]


@njit(cache=True, nogil=True)
def _top_digit_then_lsd(keys, out, top, n_bits, n_low_passes):
    """Sort ``keys`` into ``out``: one scatter by the top digit, then each bucket LSD sorted.

    ``top`` is the histogram of the top RADIX_DIGIT_BITS bits. After the
    scatter a bucket is small enough (typically) to stay in cache for its own
    passes, so only one pass moves the whole array through memory at random.
    ``keys`` is overwritten (used as scratch).
    """
    top_shift = np.uint64(n_bits - RADIX_DIGIT_BITS)
    start = np.empty(RADIX_BUCKETS + 1, dtype=np.int64)
    total = 0
    for d in range(RADIX_BUCKETS):
        start[d] = total
        total += top[d]
    start[RADIX_BUCKETS] = total
    fill = np.empty(RADIX_BUCKETS, dtype=np.int64)
    for d in range(RADIX_BUCKETS):
        fill[d] = start[d]
    for j in range(keys.shape[0]):
        k = keys[j]
        d = np.int64(np.uint64(k) >> top_shift)
        t = fill[d]
        out[t] = k
        fill[d] = t + 1
    hist = np.zeros((n_low_passes, RADIX_BUCKETS), dtype=np.int64)
    for d in range(RADIX_BUCKETS):
        lo = start[d]
        hi = start[d + 1]
        if hi - lo <= 32:
            _insertion_sort(out, lo, hi)
        else:
            _lsd_sort_segment(out, keys, lo, hi, n_low_passes, hist)


@njit(cache=True, nogil=True)
def sorted_class_keys(bits, labels, n_bits, neg_keys, pos_keys, neg_out, pos_out):
    """The sortable keys of all negatives' and of all positives' scores, each ascending.

    One pass over the rows splits them by label, turns each score (``bits``:
    float32/float64 viewed as uint32/uint64, ``n_bits`` wide) into its sortable
    key (:func:`_sortable_key`) and counts the top radix digits; then each
    class is scattered by its top digit and every bucket LSD sorted on the
    remaining bits. The four arrays have the width of ``bits`` and lengths
    (#negatives, #positives, #negatives, #positives); the sorted keys are
    written to ``neg_out``/``pos_out`` (``neg_keys``/``pos_keys`` are
    scratch), which are returned. Comparing keys compares the scores.
    """
    neg_top = np.zeros(RADIX_BUCKETS, dtype=np.int64)
    pos_top = np.zeros(RADIX_BUCKETS, dtype=np.int64)
    # pass counts as literals let the compiler unroll the histogram updates
    if n_bits == 32:
        _split_class_keys(bits, labels, 32, neg_keys, pos_keys, neg_top, pos_top)
        _top_digit_then_lsd(neg_keys, neg_out, neg_top, 32, 2)
        _top_digit_then_lsd(pos_keys, pos_out, pos_top, 32, 2)
    else:
        _split_class_keys(bits, labels, 64, neg_keys, pos_keys, neg_top, pos_top)
        _top_digit_then_lsd(neg_keys, neg_out, neg_top, 64, 5)
        _top_digit_then_lsd(pos_keys, pos_out, pos_top, 64, 5)
    return neg_out, pos_out


@njit(inline="always")
def _member_keys(bits, n_bits, n_passes, identity_rows, identity_labels, row_ptr, row_groups, keys,
                 codes, hist):
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits)
    for r in range(identity_rows.shape[0]):
        k = _sortable_key(np.uint64(bits[identity_rows[r]]), sign, full)
        label = 1 if identity_labels[r] else 0
        for e in range(row_ptr[r], row_ptr[r + 1]):
            keys[e] = k
            codes[e] = 2 * row_groups[e] + label
            _count_digits(hist, k, n_passes)


@njit(cache=True, nogil=True)
def sorted_member_keys(bits, n_bits, identity_rows, identity_labels, row_ptr, row_groups,
                       keys, codes, keys_spare, codes_spare):
    """Every (row, subgroup) membership as (score key, ``2 * subgroup + label``), by score.

    ``identity_rows``/``row_ptr``/``row_groups`` is the membership CSR (see
    ``Memberships``) and ``identity_labels`` the labels of those rows. The
    output and scratch arrays have one element per membership: ``keys`` and
    ``keys_spare`` the width of ``bits``, ``codes`` and ``codes_spare`` int32
    or int64. Returns ``(sorted_keys, sorted_codes)`` (stable, so memberships
    of one row stay in subgroup order), views of the given arrays.
    """
    n_passes = _radix_passes(n_bits)
    hist = np.zeros((n_passes, RADIX_BUCKETS), dtype=np.int64)
    if n_bits == 32:
        _member_keys(bits, 32, 3, identity_rows, identity_labels, row_ptr, row_groups, keys, codes,
                     hist)
    else:
        _member_keys(bits, 64, 6, identity_rows, identity_labels, row_ptr, row_groups, keys, codes,
                     hist)
    return lsd_radix_passes(keys, keys_spare, codes, codes_spare, hist)



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


@njit(inline="always")
def _copy_bytes(out, p, col, source, i, width):
    """Copy ``source[i, :width]`` into ``out[p, col:col + width]``; return ``col + width``."""
    for k in range(width):
        out[p, col + k] = source[i, k]
    return col + width


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
        col = _copy_bytes(out, p, 0, score_bytes, i, n_score)
        col = _copy_bytes(out, p, col, label_bytes, i, n_label)
        col = _copy_bytes(out, p, col, weight_bytes, i, n_weight)
        _copy_bytes(out, p, col, code_bytes, i, n_code)
