"""Numba kernels of the sort stage: order-preserving integer keys and radix sorts (no pandas).

A finite float32/float64 score becomes an unsigned integer key whose order
(and equality) is that of the score (``-0.0`` ties with ``+0.0``), so that
least-significant-digit radix sorts of 11-bit digits order the scores, the
classes and every (row, subgroup) membership. Also the coarse bucketing of
rows by score range for out-of-core data.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

# LSD radix sort of float bit patterns: 11-bit digits
RADIX_DIGIT_BITS = 11


RADIX_BUCKETS = 1 << RADIX_DIGIT_BITS


# the sorts scatter the keys into this many buckets over their range first (few enough that
# the scatter's write streams stay in cache and TLB), then sort each bucket in cache
TOP_BUCKET_BITS = 8


TOP_BUCKETS = 1 << TOP_BUCKET_BITS


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
    b = np.uint64(0) if b == sign else b  # -0.0 sorts and ties as +0.0
    negative = np.uint64((b & sign) != 0)
    # without a branch: b ^ sign (= b | sign) when non-negative, b ^ full (= ~b) when negative
    return b ^ ((full * negative) | sign)


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
        hist[p, (k >> np.uint64(p * RADIX_DIGIT_BITS)) & np.uint64(RADIX_BUCKETS - 1)] += 1


@njit(inline="always")
def _radix_passes(n_bits):
    return (n_bits + RADIX_DIGIT_BITS - 1) // RADIX_DIGIT_BITS


@njit(inline="always")
def _lsd_passes_in_range(keys, spare, payload, spare_payload, lo, hi, hist, digit_bits, low):
    """LSD radix passes over ``keys[lo:hi]`` (and ``payload``, unless empty), stable.

    The digits are ``digit_bits`` wide, taken from ``key - low`` (``low`` at
    most every key). ``hist`` holds the digit histograms of that range (one
    row per pass, least significant first, ``1 << digit_bits`` columns) and
    is overwritten; a pass whose digit is the same for every key is skipped.
    Passes alternate between the arrays and their spares. Returns
    ``(sorted_keys, sorted_payload, in_spare)``: the arrays now holding the
    sorted range, and whether those are the spares.
    """
    with_payload = payload.shape[0] > 0
    n_digits = hist.shape[1]
    digit_mask = np.uint64(n_digits - 1)
    src, dst = keys, spare
    psrc, pdst = payload, spare_payload
    in_spare = False
    for p in range(hist.shape[0]):
        shift = np.uint64(p * digit_bits)
        if hi - lo < 2 or hist[p, np.int64(((np.uint64(src[lo]) - low) >> shift)
                                           & digit_mask)] == hi - lo:
            continue  # every key has the same digit here
        total = lo
        for d in range(n_digits):
            c = hist[p, d]
            hist[p, d] = total
            total += c
        for j in range(np.uint64(lo), np.uint64(hi)):  # unsigned: see _bucket_of
            k = src[j]
            d = ((np.uint64(k) - low) >> shift) & digit_mask
            t = np.uint64(hist[p, d])
            dst[t] = k
            if with_payload:
                pdst[t] = psrc[j]
            hist[p, d] = t + np.uint64(1)
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
                                                          keys.shape[0], hist, RADIX_DIGIT_BITS,
                                                          np.uint64(0))
    return sorted_keys, sorted_payload


#: what :func:`radix_sort_gathered` carries along the sorted values: nothing, the positions
#: into ``rows``, or the rows themselves
PAYLOAD_NONE, PAYLOAD_POSITIONS, PAYLOAD_ROWS = 0, 1, 2


@njit(inline="always")
def _gather_keys(bits, rows, n_bits, n_passes, keys, payload, payload_kind, hist):
    sign, full = _key_masks(n_bits)
    for j in range(rows.shape[0]):
        k = _sortable_key(np.uint64(bits[rows[j]]), sign, full)
        keys[j] = k
        if payload_kind == PAYLOAD_POSITIONS:
            payload[j] = j
        elif payload_kind == PAYLOAD_ROWS:
            payload[j] = rows[j]
        _count_digits(hist, k, n_passes)


@njit(inline="always")
def _keys_to_float_bits(keys, sign, full):
    """Turn sortable keys back into the bit patterns of their floats, in place."""
    for j in range(keys.shape[0]):
        keys[j] = _float_bits_of_key(np.uint64(keys[j]), sign, full)


@njit(cache=True, nogil=True)
def _sorted_with_payload(bits, rows, n_bits, payload, payload_kind):
    """The LSD sort of :func:`radix_sort_gathered` with a payload buffer of the caller's
    integer width: ``(sorted keys, sorted payload)`` (its scratch freed on return)."""
    m = rows.shape[0]
    n_passes = _radix_passes(n_bits)
    keys = np.empty(m, dtype=bits.dtype)
    hist = np.zeros((n_passes, RADIX_BUCKETS), dtype=np.int64)
    # literal pass counts let the compiler unroll the histogram updates
    if n_bits == 32:
        _gather_keys(bits, rows, 32, 3, keys, payload, payload_kind, hist)
    else:
        _gather_keys(bits, rows, 64, 6, keys, payload, payload_kind, hist)
    return lsd_radix_passes(keys, np.empty_like(keys), payload, np.empty_like(payload), hist)


@njit(cache=True, nogil=True)
def radix_sort_gathered(bits, rows, n_bits, payload, payload_kind, as_keys=False):
    """Sort the floats ``bits[rows]`` (given as their raw bit patterns) ascending.

    ``bits`` is a float32/float64 array viewed as uint32/uint64 (``n_bits`` 32
    or 64). Returns ``(sorted, carried)``: the sorted bit patterns (-0.0 given
    as +0.0), or with ``as_keys`` their sortable keys (see
    :func:`_sortable_key`), in an array of ``bits``' dtype; and, in the same
    (stable) order, nothing (``payload_kind`` ``PAYLOAD_NONE``), the positions
    ``j`` into ``rows`` (``PAYLOAD_POSITIONS``) or the rows ``rows[j]``
    themselves (``PAYLOAD_ROWS``), in an array of ``payload``'s dtype.
    ``payload`` is the scratch the payload travels in through the passes
    (length ``len(rows)``, or 0 for none): int32 where the values fit (fewer
    bytes moved, half the memory: about 16 bytes a row at the sort's peak,
    the caller's scratch and what it returns included), so that only the width
    a call needs is compiled. What is returned is ``payload`` itself or the
    sort's spare buffer, never a copy. NaN must not occur.
    """
    m = rows.shape[0]
    if payload.shape[0] != (0 if payload_kind == PAYLOAD_NONE else m):
        raise ValueError("radix_sort_gathered: the payload scratch must have one slot per row")
    sign, full = _key_masks(n_bits)
    sorted_keys, sorted_payload = _sorted_with_payload(bits, rows, n_bits, payload, payload_kind)
    if not as_keys:
        _keys_to_float_bits(sorted_keys, sign, full)
    return sorted_keys, sorted_payload


@njit(cache=True, nogil=True)
def radix_sort_class(bits, labels, label, n_bits, payload, payload_kind, as_keys=False):
    """:func:`radix_sort_gathered` of the rows whose ``labels`` (0/1 bytes) equal ``label``,
    read straight from the labels: no list of the class's rows is made (8 bytes a row, the
    largest part of a sort's peak memory). ``PAYLOAD_ROWS`` carries the rows themselves,
    ``PAYLOAD_POSITIONS`` each row's rank in its class (its position in the class's list);
    ``payload`` has one slot per row of the class, or none."""
    n = labels.shape[0]
    m = 0
    for i in range(n):
        m += labels[i] == label
    if payload.shape[0] != (0 if payload_kind == PAYLOAD_NONE else m):
        raise ValueError("radix_sort_class: the payload scratch must have one slot per row "
                         "of the class")
    sign, full = _key_masks(n_bits)
    keys = np.empty(m, dtype=bits.dtype)
    # every row up to the class's last is written at the class's next slot, which moves on
    # only past the class's rows: no branch on the label, and no write beyond the class
    last = n - 1
    while last >= 0 and labels[last] != label:
        last -= 1
    j = 0
    for i in range(last + 1):
        keys[j] = _sortable_key(np.uint64(bits[i]), sign, full)
        if payload_kind == PAYLOAD_ROWS:
            payload[j] = i
        elif payload_kind == PAYLOAD_POSITIONS:
            payload[j] = j
        j += labels[i] == label
    n_passes = _radix_passes(n_bits)
    hist = np.zeros((n_passes, RADIX_BUCKETS), dtype=np.int64)
    for j in range(m):
        _count_digits(hist, np.uint64(keys[j]), n_passes)
    sorted_keys, sorted_payload = lsd_radix_passes(keys, np.empty_like(keys), payload,
                                                   np.empty_like(payload), hist)
    if not as_keys:
        _keys_to_float_bits(sorted_keys, sign, full)
    return sorted_keys, sorted_payload


@njit(inline="always")
def _key_masks(n_bits):
    """The sign bit and the all-ones mask of ``n_bits``-wide keys (see :func:`_sortable_key`)."""
    return (np.uint64(1) << np.uint64(n_bits - 1),
            np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits))


# The sorts below split into phases that a caller may run on several threads:
# 0. find the smallest and largest key (:func:`key_range`);
# 1. count the keys of each range of rows by bucket: ``(key - smallest) >> shift``, the
#    shift chosen so that the buckets span the keys' range (TOP_BUCKETS of them);
# 2. scatter each range's keys to the slots those counts give it (by bucket);
# 3. LSD-sort each bucket, while it is in cache (passes whose digit is the same for the whole
#    bucket are skipped).
# Phases 0-2 split the rows, phase 3 the buckets; one range (one thread) is the same sort.
# Buckets over the keys' own range keep them even when the scores crowd into a few binades.


@njit(cache=True, nogil=True)
def key_range(bits, n_bits, start, stop):
    """The smallest and largest sortable key of ``bits[start:stop]`` (``(1, 0)`` if empty)."""
    sign, full = _key_masks(n_bits)
    low = full
    high = np.uint64(0)
    for i in range(start, stop):
        k = _sortable_key(np.uint64(bits[i]), sign, full)
        low = min(low, k)
        high = max(high, k)
    return low, high


@njit(inline="always")
def _bucket_of(k, low, shift):
    """The bucket of key ``k`` (all three uint64), unsigned: an unsigned index spares every
    array access numba's check for a negative index (about a fifth of these loops' time)."""
    return (k - low) >> shift


@njit(cache=True, nogil=True)
def class_top_digit_counts(bits, labels, start, stop, low, shift):
    """2 * TOP_BUCKETS int64: how many keys of rows ``start:stop`` fall in each bucket
    (``(key - low) >> shift``), the negatives' buckets first, then the positives'.

    ``bits`` is a float32/float64 score array viewed as uint32/uint64 and
    ``labels`` the 0/1 labels as uint8.
    """
    sign, full = _key_masks(bits.itemsize * 8)  # a constant of the compiled type
    counts = np.zeros(2 * TOP_BUCKETS, dtype=np.int64)
    for i in range(np.uint64(start), np.uint64(stop)):  # unsigned: see _bucket_of
        k = _sortable_key(np.uint64(bits[i]), sign, full)
        counts[(np.uint64(labels[i]) << np.uint64(TOP_BUCKET_BITS)) | _bucket_of(k, low, shift)] += 1
    return counts


@njit(cache=True, nogil=True)
def scatter_class_keys(bits, labels, start, stop, low, shift, next_slot, out, rows_out):
    """Write the key of each row ``start:stop`` into ``out`` by class and bucket, and the
    row itself into ``rows_out`` at the same slot (unless it is empty).

    ``next_slot[c * TOP_BUCKETS + d]`` is where the next key of class ``c``
    (0 negative, 1 positive) in bucket ``d`` goes (the negatives' buckets
    come first in ``out``); it is advanced in place. Rows keep their order
    within a bucket. No branch on the label.
    """
    sign, full = _key_masks(bits.itemsize * 8)  # a constant of the compiled type
    with_rows = rows_out.shape[0] > 0
    for i in range(np.uint64(start), np.uint64(stop)):
        k = _sortable_key(np.uint64(bits[i]), sign, full)
        slot = (np.uint64(labels[i]) << np.uint64(TOP_BUCKET_BITS)) | _bucket_of(k, low, shift)
        t = np.uint64(next_slot[slot])
        out[t] = k
        if with_rows:
            rows_out[t] = i
        next_slot[slot] = t + np.uint64(1)


@njit(cache=True, nogil=True)
def member_top_digit_counts(bits, identity_rows, row_ptr, start, stop, low, shift):
    """TOP_BUCKETS int64: how many memberships of identity rows ``start:stop`` fall in
    each bucket (a row counts once per subgroup it is in; see :func:`scatter_member_keys`)."""
    sign, full = _key_masks(bits.itemsize * 8)  # a constant of the compiled type
    counts = np.zeros(TOP_BUCKETS, dtype=np.int64)
    for r in range(np.uint64(start), np.uint64(stop)):
        k = _sortable_key(np.uint64(bits[identity_rows[r]]), sign, full)
        counts[_bucket_of(k, low, shift)] += row_ptr[np.uint64(r) + np.uint64(1)] - row_ptr[r]
    return counts


@njit(cache=True, nogil=True)
def scatter_member_keys(bits, identity_rows, identity_labels, row_ptr, row_groups, start,
                        stop, low, shift, next_slot, keys_out, codes_out):
    """Write every membership of identity rows ``start:stop`` as (score key,
    ``2 * subgroup + label``) into ``keys_out``/``codes_out`` by bucket.

    ``identity_rows``/``row_ptr``/``row_groups`` is the membership CSR (see
    ``Memberships``) and ``identity_labels`` the labels of those rows.
    ``next_slot[d]`` is where the next membership in bucket ``d`` goes
    (advanced in place); memberships keep their order within a bucket.
    """
    sign, full = _key_masks(bits.itemsize * 8)  # a constant of the compiled type
    for r in range(np.uint64(start), np.uint64(stop)):
        k = _sortable_key(np.uint64(bits[identity_rows[r]]), sign, full)
        d = _bucket_of(k, low, shift)
        label = 1 if identity_labels[r] else 0
        t = np.uint64(next_slot[d])
        for e in range(row_ptr[r], row_ptr[np.uint64(r) + np.uint64(1)]):
            keys_out[t] = k
            codes_out[t] = 2 * row_groups[e] + label
            t += np.uint64(1)
        next_slot[d] = t


@njit(inline="always")
def _insertion_sort(values, payload, lo, hi):
    """Stable insertion sort of ``values[lo:hi]``, carrying ``payload`` unless it is empty."""
    with_payload = payload.shape[0] > 0
    for j in range(lo + 1, hi):
        k = values[j]
        if with_payload:
            v = payload[j]
        i = j - 1
        while i >= lo and values[i] > k:
            values[i + 1] = values[i]
            if with_payload:
                payload[i + 1] = payload[i]
            i -= 1
        values[i + 1] = k
        if with_payload:
            payload[i + 1] = v


@njit(cache=True, nogil=True)
def sort_buckets(values, payload, scratch, payload_scratch, bucket_start, d_start, d_stop, low,
                 shift):
    """Sort each bucket ``d`` in ``d_start:d_stop`` of keys (stable), in place.

    Bucket ``d`` is ``values[bucket_start[d]:bucket_start[d + 1]]``: keys with
    ``(key - low) >> shift == d``, so only the bits of ``key - low`` below
    ``shift`` remain to be sorted, by LSD passes of at most RADIX_DIGIT_BITS bits
    (``payload`` carried along unless it is empty; ``scratch`` and
    ``payload_scratch``, of the same shapes, are used over the same ranges).
    A bucket is small enough (typically) to stay in cache for its passes, so
    only the scatter moved the whole array through memory at random.
    """
    bits_left = np.int64(shift)
    if bits_left == 0:
        return  # a bucket holds one key value: sorted already
    for d in range(d_start, d_stop):
        lo = bucket_start[d]
        hi = bucket_start[d + 1]
        if hi - lo <= 32:
            _insertion_sort(values, payload, lo, hi)
            continue
        # digits about as wide as log2(bucket size), at most RADIX_DIGIT_BITS: a small bucket
        # takes more, narrower passes rather than clearing and summing 2048 counters each
        size_bits = 0
        m = hi - lo
        while m:
            size_bits += 1
            m >>= 1
        digit_bits = min(RADIX_DIGIT_BITS, max(4, size_bits))
        n_passes = (bits_left + digit_bits - 1) // digit_bits
        digit_bits = (bits_left + n_passes - 1) // n_passes
        if n_passes == 2 and digit_bits == RADIX_DIGIT_BITS:
            # the usual case (float32 scores, buckets of 1,024 keys or more): literal sizes let
            # the compiler unroll and specialise the passes
            _sort_bucket(values, payload, scratch, payload_scratch, lo, hi, low, 2,
                         RADIX_DIGIT_BITS)
        else:
            _sort_bucket(values, payload, scratch, payload_scratch, lo, hi, low, n_passes,
                         digit_bits)


@njit(inline="always")
def _sort_bucket(values, payload, scratch, payload_scratch, lo, hi, low, n_passes, digit_bits):
    """LSD-sort ``values[lo:hi]`` (and ``payload``) on ``n_passes`` digits of ``digit_bits``
    bits of ``value - low``; the result ends in ``values``."""
    with_payload = payload.shape[0] > 0
    digit_mask = np.uint64((1 << digit_bits) - 1)
    counts = np.zeros((n_passes, 1 << digit_bits), dtype=np.int64)
    for j in range(np.uint64(lo), np.uint64(hi)):
        x = np.uint64(values[j]) - low
        for p in range(n_passes):
            counts[p, (x >> np.uint64(p * digit_bits)) & digit_mask] += 1
    sorted_values, sorted_payload, in_spare = _lsd_passes_in_range(
        values, scratch, payload, payload_scratch, lo, hi, counts, digit_bits, low)
    if in_spare:
        for j in range(lo, hi):
            values[j] = sorted_values[j]
            if with_payload:
                payload[j] = sorted_payload[j]


# ---------------------------------------------------------------- rounds on Numba's threads
# One parallel kernel runs a whole sort on Numba's threads (see fastbias._native): its three
# rounds (count, scatter, sort the buckets) run the kernels above, one piece per loop step,
# with the prefix sums between them compiled too, so that no piece and no round costs a
# Python handoff. The class sort and the membership sort share the rounds. The pieces are
# ranges of rows as the pool's, and a sort is the same whoever sorts which bucket.


@njit(cache=True, nogil=True)
def bucket_slots(counts):
    """From each range's counts per bucket ((pieces, buckets) int64, ranges in row order):
    every bucket's start in the output (one more entry than buckets) and each range's first
    slot in each bucket ((pieces, buckets) int64, what the scatter advances)."""
    pieces, n_buckets = counts.shape
    bucket_start = np.empty(n_buckets + 1, dtype=np.int64)
    next_slot = np.empty((pieces, n_buckets), dtype=np.int64)
    total = 0
    for d in range(n_buckets):
        bucket_start[d] = total
        for j in range(pieces):
            next_slot[j, d] = total
            total += counts[j, d]
    bucket_start[n_buckets] = total
    return bucket_start, next_slot


@njit(cache=True, nogil=True)
def bucket_runs(class_start, member_start, pieces):
    """Split the buckets of the classes' array and then the memberships' (their starts, as
    :func:`bucket_slots` gives them) into ``pieces`` runs of about equal numbers of keys:
    (pieces, 4) int64, each run's first and stop bucket of the classes' array, then of the
    memberships' (empty where a run holds none of that array)."""
    n_class = class_start.shape[0] - 1
    n_member = member_start.shape[0] - 1
    total = class_start[n_class] + member_start[n_member]
    runs = np.empty((pieces, 4), dtype=np.int64)
    b = 0  # the first bucket of the next run
    end = 0  # the keys in buckets before b
    for j in range(pieces):
        first = b
        if j == pieces - 1:
            b = n_class + n_member
        else:
            target = ((j + 1) * total) // pieces
            # the buckets whose ends are at most the target (searchsorted's side="right")
            while b < n_class + n_member:
                size = (class_start[b + 1] - class_start[b] if b < n_class else
                        member_start[b - n_class + 1] - member_start[b - n_class])
                if end + size > target:
                    break
                end += size
                b += 1
        runs[j, 0] = min(first, n_class)
        runs[j, 1] = min(b, n_class)
        runs[j, 2] = max(first - n_class, 0)
        runs[j, 3] = max(b - n_class, 0)
    return runs


@njit(parallel=True, cache=True, nogil=True)
def sort_keys_pieces(bits, labels, row_starts, row_stops, identity_rows, identity_labels,
                     row_ptr, row_groups, member_starts, member_stops, low, shift, out,
                     out_scratch, keys, codes, keys_scratch, codes_scratch):
    """The class sort and the membership sort of ``sort_keys`` as one kernel on Numba's
    threads, in three rounds of ``len(row_starts)`` pieces: count each range's keys by
    bucket (:func:`class_top_digit_counts`: rows ``row_starts[j]:row_stops[j]``;
    :func:`member_top_digit_counts`: identity rows ``member_starts[j]:member_stops[j]``),
    scatter them (:func:`scatter_class_keys`, :func:`scatter_member_keys`), then sort the
    buckets of both arrays (:func:`sort_buckets`), cut into runs of about equal numbers of
    keys (:func:`bucket_runs`).

    ``out`` (one slot per row) receives the classes' sorted keys, the negatives' first;
    ``keys``/``codes`` (one slot per membership) the memberships'. The scratch arrays have
    the same shapes. A sort not wanted has empty ranges and arrays. Returns the number of
    negatives.
    """
    pieces = row_starts.shape[0]
    class_counts = np.empty((pieces, 2 * TOP_BUCKETS), dtype=np.int64)
    member_counts = np.empty((pieces, TOP_BUCKETS), dtype=np.int64)
    for j in prange(pieces):
        # (rows copied in loops: an array assigned to a row compiles into a large generic
        # routine, here inside the threads' function, which doubled this kernel's compile)
        counts = class_top_digit_counts(bits, labels, row_starts[j], row_stops[j], low, shift)
        for d in range(2 * TOP_BUCKETS):
            class_counts[j, d] = counts[d]
        counts = member_top_digit_counts(bits, identity_rows, row_ptr, member_starts[j],
                                         member_stops[j], low, shift)
        for d in range(TOP_BUCKETS):
            member_counts[j, d] = counts[d]
    class_start, class_slot = bucket_slots(class_counts)
    member_start, member_slot = bucket_slots(member_counts)
    no_rows = np.empty(0, dtype=np.int32)  # (the rows travel with the pool's class sort only)
    for j in prange(pieces):
        scatter_class_keys(bits, labels, row_starts[j], row_stops[j], low, shift,
                           class_slot[j], out, no_rows)
        scatter_member_keys(bits, identity_rows, identity_labels, row_ptr, row_groups,
                            member_starts[j], member_stops[j], low, shift, member_slot[j],
                            keys, codes)
    runs = bucket_runs(class_start, member_start, pieces)
    no_payload = np.empty(0, dtype=np.int32)  # (as the codes: one sort_buckets compiled)
    for j in prange(pieces):
        sort_buckets(out, no_payload, out_scratch, no_payload, class_start, runs[j, 0],
                     runs[j, 1], low, shift)
        sort_buckets(keys, codes, keys_scratch, codes_scratch, member_start, runs[j, 2],
                     runs[j, 3], low, shift)
    return class_start[TOP_BUCKETS]


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
