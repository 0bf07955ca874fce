"""Numba kernels: tie-aware Mann-Whitney U counts for all subgroups in one sweep.

Everything here works on plain numpy arrays (no pandas). Conventions:

* ``*_twice`` quantities hold **twice** a Mann-Whitney U count, so that a tied
  pair (worth 1/2) stays an exact integer in the unweighted case (int64).
  In the weighted case the same kernels run on float64 weights.
* "below2" of a score ``s`` with respect to a sorted class array is
  ``lt + le`` where ``lt`` (``le``) counts (or sums the weights of) class members
  with a score strictly below (at most) ``s``; this equals twice
  "#below + 1/2 #tied".

The per-subgroup counts are derived from global class counts so that only rows
belonging to at least one subgroup need per-subgroup work (cost
``O(n log n + memberships)``, never ``O(n * subgroups)``):

* ``U(Dg+ > Dg-)``: a block sweep over the subgroup rows in score order;
* BPSN numerator = sum over Dg- of (#positives above + 1/2 tied) - subgroup U;
* BNSP numerator = sum over Dg+ of (#negatives below + 1/2 tied) - subgroup U;
* ``U(D- > Dg-)`` = sum over Dg- of (#negatives above + 1/2 tied, itself
  included) - |Dg-|^2 / 2, likewise for the positives.
"""
from __future__ import annotations

import numpy as np
from numba import njit

# Column order of the per-subgroup count matrix returned by ``subgroup_counts``.
# Cell totals (count or weight) first, then twice the U numerators.
CELL_SUBGROUP_NEG = 0
CELL_SUBGROUP_POS = 1
TWICE_SUBGROUP_U = 2  # pairs (Dg+, Dg-) with the positive above
TWICE_BPSN_U = 3  # pairs (D+ background, Dg-) with the positive above
TWICE_BNSP_U = 4  # pairs (Dg+, D- background) with the positive above
TWICE_NEG_BG_ABOVE_U = 5  # pairs (D- background, Dg-) with the background above
TWICE_POS_BG_ABOVE_U = 6  # pairs (D+ background, Dg+) with the background above
N_COUNT_COLUMNS = 7

# LSD radix sort of float bit patterns: 11-bit digits
RADIX_DIGIT_BITS = 11
RADIX_BUCKETS = 1 << RADIX_DIGIT_BITS


@njit(cache=True, nogil=True)
def split_rows_by_label(labels):
    """Row indices of negatives and positives, each in increasing row order."""
    n = labels.shape[0]
    n_pos = 0
    for i in range(n):
        if labels[i]:
            n_pos += 1
    neg = np.empty(n - n_pos, dtype=np.int64)
    pos = np.empty(n_pos, dtype=np.int64)
    i_neg = 0
    i_pos = 0
    for i in range(n):
        if labels[i]:
            pos[i_pos] = i
            i_pos += 1
        else:
            neg[i_neg] = i
            i_neg += 1
    return neg, pos


@njit(cache=True, nogil=True)
def cumulative_weights(rows, weights):
    """Cumulative weights (length m + 1, starting at 0) of ``weights[rows]``."""
    m = rows.shape[0]
    cumulative = np.empty(m + 1, dtype=np.float64)
    cumulative[0] = 0.0
    total = 0.0
    for j in range(m):
        total += weights[rows[j]]
        cumulative[j + 1] = total
    return cumulative


@njit(inline="always")
def _count_below(values, start, q, inclusive):
    """Smallest index i >= start with values[i] > q (inclusive) or >= q (strict).

    ``values`` is sorted and ``start`` is already known to be a lower bound.
    Galloping (exponential then binary search) from ``start``: O(log gap),
    so walking m sorted queries through n values costs O(m log(n / m)).
    """
    n = values.shape[0]
    if start >= n:
        return n
    v = values[start]
    if (v > q) if inclusive else (v >= q):
        return start
    lo = start  # values[lo] is below the bound
    step = 1
    hi = start + 1
    while hi < n:
        v = values[hi]
        if (v > q) if inclusive else (v >= q):
            break
        lo = hi
        step *= 2
        hi = start + step
    if hi > n:
        hi = n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        v = values[mid]
        if (v > q) if inclusive else (v >= q):
            hi = mid
        else:
            lo = mid
    return hi


@njit(cache=True, nogil=True)
def twice_auc_numerator_sorted(neg_sorted, pos_sorted):
    """Twice U(positives > negatives) from the two sorted score arrays (exact int64)."""
    lt = 0
    le = 0
    total = np.int64(0)
    for j in range(pos_sorted.shape[0]):
        s = pos_sorted[j]
        lt = _count_below(neg_sorted, lt, s, False)
        le = _count_below(neg_sorted, max(le, lt), s, True)
        total += lt + le
    return total


@njit(cache=True, nogil=True)
def twice_auc_numerator_sorted_weighted(neg_sorted, neg_cumw, pos_sorted, pos_w_sorted):
    """Weighted twice U(positives > negatives): sum_p w_p (W-(< s_p) + W-(<= s_p))."""
    lt = 0
    le = 0
    total = 0.0
    for j in range(pos_sorted.shape[0]):
        s = pos_sorted[j]
        lt = _count_below(neg_sorted, lt, s, False)
        le = _count_below(neg_sorted, max(le, lt), s, True)
        total += pos_w_sorted[j] * (neg_cumw[lt] + neg_cumw[le])
    return total


@njit(cache=True, nogil=True)
def rank_bounds_in_sorted(sorted_values, queries, query_order):
    """For each query: (#values < q, #values <= q), walking queries in sorted order."""
    m = queries.shape[0]
    lt_out = np.empty(m, dtype=np.int64)
    le_out = np.empty(m, dtype=np.int64)
    lt = 0
    le = 0
    for t in range(m):
        q_index = query_order[t]
        q = queries[q_index]
        lt = _count_below(sorted_values, lt, q, False)
        le = _count_below(sorted_values, max(le, lt), q, True)
        lt_out[q_index] = lt
        le_out[q_index] = le
    return lt_out, le_out


@njit(cache=True, nogil=True)
def _accumulate_subgroups(id_scores, id_order, id_labels, row_ptr, row_groups,
                          neg_below2, pos_below2, total_neg, total_pos, n_groups, counts):
    """Fill ``counts`` (n_groups x N_COUNT_COLUMNS, int64, exact) in one pass.

    ``id_*`` describe the unique rows that belong to at least one subgroup,
    ``row_ptr``/``row_groups`` is their CSR list of subgroup ids,
    ``neg_below2[r]``/``pos_below2[r]`` is twice "#class members below + 1/2 tied"
    for identity row r, and
    ``total_neg``/``total_pos`` are the class totals of the whole data.
    """
    neg_in_block = np.zeros(n_groups, dtype=np.int64)
    pos_in_block = np.zeros(n_groups, dtype=np.int64)
    neg_strictly_below = np.zeros(n_groups, dtype=np.int64)
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    n_touched = 0
    m = id_order.shape[0]
    t = 0
    while t < m:
        # one block of equal scores among the identity rows
        block_score = id_scores[id_order[t]]
        while t < m and id_scores[id_order[t]] == block_score:
            r = id_order[t]
            if id_labels[r]:
                bnsp_part = neg_below2[r]
                aeg_part = 2 * total_pos - pos_below2[r]
                for p in range(row_ptr[r], row_ptr[r + 1]):
                    g = row_groups[p]
                    counts[g, CELL_SUBGROUP_POS] += 1
                    counts[g, TWICE_BNSP_U] += bnsp_part
                    counts[g, TWICE_POS_BG_ABOVE_U] += aeg_part
                    pos_in_block[g] += 1
                    if not is_touched[g]:
                        is_touched[g] = True
                        touched[n_touched] = g
                        n_touched += 1
            else:
                bpsn_part = 2 * total_pos - pos_below2[r]
                aeg_part = 2 * total_neg - neg_below2[r]
                for p in range(row_ptr[r], row_ptr[r + 1]):
                    g = row_groups[p]
                    counts[g, CELL_SUBGROUP_NEG] += 1
                    counts[g, TWICE_BPSN_U] += bpsn_part
                    counts[g, TWICE_NEG_BG_ABOVE_U] += aeg_part
                    neg_in_block[g] += 1
                    if not is_touched[g]:
                        is_touched[g] = True
                        touched[n_touched] = g
                        n_touched += 1
            t += 1
        for j in range(n_touched):
            g = touched[j]
            counts[g, TWICE_SUBGROUP_U] += (2 * pos_in_block[g] * neg_strictly_below[g]
                                            + pos_in_block[g] * neg_in_block[g])
            neg_strictly_below[g] += neg_in_block[g]
            neg_in_block[g] = 0
            pos_in_block[g] = 0
            is_touched[g] = False
        n_touched = 0
    # remove the within-subgroup pairs from the global sums
    for g in range(n_groups):
        sub = counts[g, TWICE_SUBGROUP_U]
        counts[g, TWICE_BPSN_U] -= sub
        counts[g, TWICE_BNSP_U] -= sub
        counts[g, TWICE_NEG_BG_ABOVE_U] -= counts[g, CELL_SUBGROUP_NEG] * counts[g, CELL_SUBGROUP_NEG]
        counts[g, TWICE_POS_BG_ABOVE_U] -= counts[g, CELL_SUBGROUP_POS] * counts[g, CELL_SUBGROUP_POS]


@njit(cache=True, nogil=True)
def subgroup_counts(id_scores, id_order, id_labels, row_ptr, row_groups,
                    neg_sorted, pos_sorted, n_groups):
    """Exact (int64) per-subgroup counts; see the module docstring.

    Returns ``(counts, twice_overall_u)`` where counts is (n_groups, 7) int64.
    """
    neg_lt, neg_le = rank_bounds_in_sorted(neg_sorted, id_scores, id_order)
    pos_lt, pos_le = rank_bounds_in_sorted(pos_sorted, id_scores, id_order)
    neg_below2 = neg_lt + neg_le
    pos_below2 = pos_lt + pos_le
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.int64)
    _accumulate_subgroups(id_scores, id_order, id_labels, row_ptr, row_groups,
                          neg_below2, pos_below2, np.int64(neg_sorted.shape[0]),
                          np.int64(pos_sorted.shape[0]), n_groups, counts)
    return counts, twice_auc_numerator_sorted(neg_sorted, pos_sorted)


# --- compensated (double-double) arithmetic for the weighted sweep -------------------------
# Weighted background quantities are "all rows minus the subgroup"; when the subgroup carries
# most of a class's weight, plain float64 would lose ~eps * W_class / W_background relative.
# Carrying every sum as an unevaluated pair hi + lo (error-free transformations) keeps the
# result accurate to ~eps relative to the background part itself.

@njit(inline="always")
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@njit(inline="always")
def _two_prod(a, b):
    p = a * b
    c = 134217729.0 * a  # Veltkamp split (2**27 + 1)
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = 134217729.0 * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@njit(inline="always")
def _dd_add(a_hi, a_lo, b_hi, b_lo):
    s, e = _two_sum(a_hi, b_hi)
    e += a_lo + b_lo
    hi = s + e
    return hi, e - (hi - s)


@njit(inline="always")
def _dd_mul(a_hi, a_lo, b_hi, b_lo):
    p, e = _two_prod(a_hi, b_hi)
    e += a_hi * b_lo + a_lo * b_hi
    hi = p + e
    return hi, e - (hi - p)


@njit(cache=True, nogil=True)
def cumulative_weights_compensated(rows, weights):
    """Prefix sums of ``weights[rows]`` as pairs (hi, lo), length m + 1, starting at 0."""
    m = rows.shape[0]
    hi = np.empty(m + 1, dtype=np.float64)
    lo = np.empty(m + 1, dtype=np.float64)
    hi[0] = 0.0
    lo[0] = 0.0
    for j in range(m):
        hi[j + 1], lo[j + 1] = _dd_add(hi[j], lo[j], weights[rows[j]], 0.0)
    return hi, lo


@njit(cache=True, nogil=True)
def _add_to(hi, lo, g, col, v_hi, v_lo):
    hi[g, col], lo[g, col] = _dd_add(hi[g, col], lo[g, col], v_hi, v_lo)


@njit(cache=True, nogil=True)
def subgroup_counts_weighted(id_scores, id_order, id_labels, id_weights, row_ptr, row_groups,
                             neg_sorted, neg_cum_hi, neg_cum_lo, pos_sorted, pos_cum_hi,
                             pos_cum_lo, pos_w_sorted, n_weighted_neg, n_weighted_pos, n_groups):
    """Weighted (float64) per-subgroup counts, every sum compensated.

    Same walk as the unweighted ``_accumulate_subgroups`` but on pairs
    (hi, lo). ``*_cum_hi/lo`` are compensated prefix sums of the class
    weights along the sorted class scores. Returns ``(counts, background,
    twice_overall_u)``: counts (n_groups, 7) as in the unweighted kernel,
    background (n_groups, 2) the background negative/positive weights computed
    without cancellation, exactly 0 when no background row of that class has a
    positive weight (``n_weighted_neg``/``n_weighted_pos`` count such rows
    over the whole data).
    """
    neg_lt, neg_le = rank_bounds_in_sorted(neg_sorted, id_scores, id_order)
    pos_lt, pos_le = rank_bounds_in_sorted(pos_sorted, id_scores, id_order)
    last_neg = neg_cum_hi.shape[0] - 1
    last_pos = pos_cum_hi.shape[0] - 1
    tn_hi, tn_lo = neg_cum_hi[last_neg], neg_cum_lo[last_neg]
    tp_hi, tp_lo = pos_cum_hi[last_pos], pos_cum_lo[last_pos]
    hi = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.float64)
    lo = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.float64)
    neg_block = np.zeros((n_groups, 2), dtype=np.float64)
    pos_block = np.zeros((n_groups, 2), dtype=np.float64)
    weighted_rows = np.zeros((n_groups, 2), dtype=np.int64)  # subgroup rows with weight > 0
    neg_below = np.zeros((n_groups, 2), dtype=np.float64)
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    n_touched = 0
    m = id_order.shape[0]
    t = 0
    while t < m:
        block_score = id_scores[id_order[t]]
        while t < m and id_scores[id_order[t]] == block_score:
            r = id_order[t]
            w = id_weights[r]
            # twice "#class below + 1/2 tied" for this row, both classes
            nb_hi, nb_lo = _dd_add(neg_cum_hi[neg_lt[r]], neg_cum_lo[neg_lt[r]],
                                   neg_cum_hi[neg_le[r]], neg_cum_lo[neg_le[r]])
            pb_hi, pb_lo = _dd_add(pos_cum_hi[pos_lt[r]], pos_cum_lo[pos_lt[r]],
                                   pos_cum_hi[pos_le[r]], pos_cum_lo[pos_le[r]])
            # twice "#positives above + 1/2 tied"
            pa_hi, pa_lo = _dd_add(2.0 * tp_hi, 2.0 * tp_lo, -pb_hi, -pb_lo)
            if id_labels[r]:
                c1_hi, c1_lo = _dd_mul(nb_hi, nb_lo, w, 0.0)
                c2_hi, c2_lo = _dd_mul(pa_hi, pa_lo, w, 0.0)
                cell, col1, col2 = CELL_SUBGROUP_POS, TWICE_BNSP_U, TWICE_POS_BG_ABOVE_U
            else:
                na_hi, na_lo = _dd_add(2.0 * tn_hi, 2.0 * tn_lo, -nb_hi, -nb_lo)
                c1_hi, c1_lo = _dd_mul(pa_hi, pa_lo, w, 0.0)
                c2_hi, c2_lo = _dd_mul(na_hi, na_lo, w, 0.0)
                cell, col1, col2 = CELL_SUBGROUP_NEG, TWICE_BPSN_U, TWICE_NEG_BG_ABOVE_U
            for p in range(row_ptr[r], row_ptr[r + 1]):
                g = row_groups[p]
                _add_to(hi, lo, g, cell, w, 0.0)
                if w > 0:
                    weighted_rows[g, cell] += 1
                _add_to(hi, lo, g, col1, c1_hi, c1_lo)
                _add_to(hi, lo, g, col2, c2_hi, c2_lo)
                if id_labels[r]:
                    pos_block[g, 0], pos_block[g, 1] = _dd_add(pos_block[g, 0], pos_block[g, 1],
                                                               w, 0.0)
                else:
                    neg_block[g, 0], neg_block[g, 1] = _dd_add(neg_block[g, 0], neg_block[g, 1],
                                                               w, 0.0)
                if not is_touched[g]:
                    is_touched[g] = True
                    touched[n_touched] = g
                    n_touched += 1
            t += 1
        for j in range(n_touched):
            g = touched[j]
            # 2 * pos_block * neg_below + pos_block * neg_block
            x_hi, x_lo = _dd_add(2.0 * neg_below[g, 0], 2.0 * neg_below[g, 1],
                                 neg_block[g, 0], neg_block[g, 1])
            u_hi, u_lo = _dd_mul(pos_block[g, 0], pos_block[g, 1], x_hi, x_lo)
            _add_to(hi, lo, g, TWICE_SUBGROUP_U, u_hi, u_lo)
            neg_below[g, 0], neg_below[g, 1] = _dd_add(neg_below[g, 0], neg_below[g, 1],
                                                       neg_block[g, 0], neg_block[g, 1])
            neg_block[g, 0] = neg_block[g, 1] = 0.0
            pos_block[g, 0] = pos_block[g, 1] = 0.0
            is_touched[g] = False
        n_touched = 0
    counts = np.empty((n_groups, N_COUNT_COLUMNS), dtype=np.float64)
    background = np.empty((n_groups, 2), dtype=np.float64)
    for g in range(n_groups):
        s_hi, s_lo = -hi[g, TWICE_SUBGROUP_U], -lo[g, TWICE_SUBGROUP_U]
        _add_to(hi, lo, g, TWICE_BPSN_U, s_hi, s_lo)
        _add_to(hi, lo, g, TWICE_BNSP_U, s_hi, s_lo)
        q_hi, q_lo = _dd_mul(hi[g, CELL_SUBGROUP_NEG], lo[g, CELL_SUBGROUP_NEG],
                             hi[g, CELL_SUBGROUP_NEG], lo[g, CELL_SUBGROUP_NEG])
        _add_to(hi, lo, g, TWICE_NEG_BG_ABOVE_U, -q_hi, -q_lo)
        q_hi, q_lo = _dd_mul(hi[g, CELL_SUBGROUP_POS], lo[g, CELL_SUBGROUP_POS],
                             hi[g, CELL_SUBGROUP_POS], lo[g, CELL_SUBGROUP_POS])
        _add_to(hi, lo, g, TWICE_POS_BG_ABOVE_U, -q_hi, -q_lo)
        for col in range(N_COUNT_COLUMNS):
            counts[g, col] = hi[g, col] + lo[g, col]
        b_hi, b_lo = _dd_add(tn_hi, tn_lo, -hi[g, CELL_SUBGROUP_NEG], -lo[g, CELL_SUBGROUP_NEG])
        background[g, 0] = b_hi + b_lo if n_weighted_neg > weighted_rows[g, 0] else 0.0
        b_hi, b_lo = _dd_add(tp_hi, tp_lo, -hi[g, CELL_SUBGROUP_POS], -lo[g, CELL_SUBGROUP_POS])
        background[g, 1] = b_hi + b_lo if n_weighted_pos > weighted_rows[g, 1] else 0.0
    neg_cumw = neg_cum_hi + neg_cum_lo
    overall = twice_auc_numerator_sorted_weighted(neg_sorted, neg_cumw, pos_sorted, pos_w_sorted)
    return counts, background, overall


@njit(cache=True, nogil=True)
def threshold_column_rows(values, threshold, out):
    """Write the row indices with ``values[i] >= threshold`` into ``out``; return how many.

    NaN compares False, so unannotated rows are not members. Works for float,
    integer and boolean columns (booleans compare as 0/1).
    """
    count = 0
    for i in range(values.shape[0]):
        if values[i] >= threshold:
            out[count] = i
            count += 1
    return count


@njit(cache=True, nogil=True)
def build_row_csr(group_rows, group_ptr, n_rows):
    """Invert per-subgroup row lists into a CSR over the unique identity rows.

    Returns ``(identity_rows, row_ptr, row_groups)``: identity_rows in increasing
    order; the subgroups of identity_rows[r] are row_groups[row_ptr[r]:row_ptr[r+1]].
    """
    n_groups = group_ptr.shape[0] - 1
    per_row = np.zeros(n_rows, dtype=np.int32)
    for p in range(group_rows.shape[0]):
        per_row[group_rows[p]] += 1
    n_identity = 0
    for i in range(n_rows):
        if per_row[i] > 0:
            n_identity += 1
    identity_rows = np.empty(n_identity, dtype=np.int64)
    row_ptr = np.empty(n_identity + 1, dtype=np.int64)
    compact = np.empty(n_rows, dtype=np.int32) if n_identity > 0 else np.empty(0, dtype=np.int32)
    row_ptr[0] = 0
    r = 0
    for i in range(n_rows):
        if per_row[i] > 0:
            identity_rows[r] = i
            compact[i] = r
            row_ptr[r + 1] = row_ptr[r] + per_row[i]
            r += 1
    fill = row_ptr[:-1].copy()
    row_groups = np.empty(group_rows.shape[0], dtype=np.int64)
    for g in range(n_groups):
        for p in range(group_ptr[g], group_ptr[g + 1]):
            r = compact[group_rows[p]]
            row_groups[fill[r]] = g
            fill[r] += 1
    return identity_rows, row_ptr, row_groups


@njit(cache=True, nogil=True)
def gather_scores(scores, rows):
    """``scores[rows]`` with -0.0 mapped to +0.0."""
    out = np.empty(rows.shape[0], dtype=scores.dtype)
    for j in range(rows.shape[0]):
        out[j] = scores[rows[j]] + 0.0
    return out


@njit(inline="always")
def _collect_members(flat, start, stop, n_cols, member_row, row_groups, found):
    """Append (row, column) of the non-zero bytes in flat[start:stop]; return the new count."""
    row = start // n_cols
    col = start - row * n_cols
    for p in range(start, stop):
        if flat[p]:
            member_row[found] = row
            row_groups[found] = col
            found += 1
        col += 1
        if col == n_cols:
            col = 0
            row += 1
    return found


@njit(cache=True, nogil=True)
def csr_from_dense_rows(words, flat, n_cols, n_member):
    """Row CSR of a dense C-order (n, k) 0/1 matrix with ``n_member`` non-zeros.

    ``flat`` is the matrix's bytes and ``words`` the same bytes read as uint64
    (all whole words; a tail shorter than 8 bytes is read from ``flat``).
    Memberships are sparse, so the scan reads eight bytes at a time and looks
    at single bytes only inside non-zero words (row and column derived once
    per such word, then stepped). Returns ``(identity_rows, row_ptr,
    row_groups)``: rows with at least one membership (increasing) and their
    subgroup columns (increasing).
    """
    n_words = words.shape[0]
    member_row = np.empty(n_member, dtype=np.int64)
    row_groups = np.empty(n_member, dtype=np.int64)
    found = 0
    for w in range(n_words):
        if words[w] != 0:
            found = _collect_members(flat, w * 8, w * 8 + 8, n_cols, member_row, row_groups, found)
    _collect_members(flat, n_words * 8, flat.shape[0], n_cols, member_row, row_groups, found)
    n_identity = 0
    last_row = -1
    for p in range(n_member):
        if member_row[p] != last_row:
            n_identity += 1
            last_row = member_row[p]
    identity_rows = np.empty(n_identity, dtype=np.int64)
    row_ptr = np.empty(n_identity + 1, dtype=np.int64)
    r = -1
    last_row = -1
    for p in range(n_member):
        if member_row[p] != last_row:
            r += 1
            identity_rows[r] = member_row[p]
            row_ptr[r] = p
            last_row = member_row[p]
    row_ptr[n_identity] = n_member
    return identity_rows, row_ptr, row_groups


@njit(cache=True, nogil=True)
def cell_row_counts(identity_labels, row_ptr, row_groups, n_groups):
    """(n_groups, 2) int64: subgroup rows with label 0 and with label 1."""
    cells = np.zeros((n_groups, 2), dtype=np.int64)
    for r in range(identity_labels.shape[0]):
        col = 1 if identity_labels[r] else 0
        for p in range(row_ptr[r], row_ptr[r + 1]):
            cells[row_groups[p], col] += 1
    return cells


@njit(cache=True, nogil=True)
def radix_sort_gathered(bits, rows, n_bits, out_bits, order):
    """Sort the floats ``bits[rows]`` (given as their raw bit patterns) ascending.

    ``bits`` is a float32/float64 array viewed as uint32/uint64 (``n_bits`` 32
    or 64). Writes the sorted bit patterns to ``out_bits`` (same width) and, if
    ``order`` is not empty, the positions ``j`` (into ``rows``) in sorted order
    (stable). A float maps to the unsigned key ``bits | sign`` (non-negative)
    or ``~bits`` (negative), whose integer order is the float order; ``-0.0``
    becomes ``+0.0``. NaN must not occur. Least-significant digit first,
    11 bits a pass; a pass whose digit is the same for every key is skipped.
    """
    m = rows.shape[0]
    sign = np.uint64(1) << np.uint64(n_bits - 1)
    full = np.uint64(0xFFFFFFFFFFFFFFFF) >> np.uint64(64 - n_bits)
    digit_mask = np.uint64(RADIX_BUCKETS - 1)
    n_passes = (n_bits + RADIX_DIGIT_BITS - 1) // RADIX_DIGIT_BITS
    with_order = order.shape[0] > 0
    keys = np.empty(m, dtype=out_bits.dtype)
    spare = np.empty(m, dtype=out_bits.dtype)
    n_payload = m if with_order else 0
    payload = np.empty(n_payload, dtype=np.int64)
    spare_payload = np.empty(n_payload, dtype=np.int64)
    hist = np.zeros((n_passes, RADIX_BUCKETS), dtype=np.int64)
    for j in range(m):
        b = np.uint64(bits[rows[j]])
        if b == sign:  # -0.0
            b = np.uint64(0)
        if b & sign:
            k = (~b) & full
        else:
            k = b | sign
        keys[j] = k
        if with_order:
            payload[j] = j
        for p in range(n_passes):
            hist[p, np.int64((k >> np.uint64(p * RADIX_DIGIT_BITS)) & digit_mask)] += 1
    src, dst = keys, spare
    psrc, pdst = payload, spare_payload
    for p in range(n_passes):
        constant_digit = False
        for d in range(RADIX_BUCKETS):
            c = hist[p, d]
            if c != 0:
                constant_digit = c == m
                break
        if constant_digit:
            continue
        total = 0
        for d in range(RADIX_BUCKETS):
            c = hist[p, d]
            hist[p, d] = total
            total += c
        shift = np.uint64(p * RADIX_DIGIT_BITS)
        for j in range(m):
            k = np.uint64(src[j])
            d = np.int64((k >> shift) & digit_mask)
            t = hist[p, d]
            dst[t] = k
            if with_order:
                pdst[t] = psrc[j]
            hist[p, d] = t + 1
        src, dst = dst, src
        psrc, pdst = pdst, psrc
    for j in range(m):
        k = np.uint64(src[j])
        if k & sign:
            out_bits[j] = k ^ sign
        else:
            out_bits[j] = (~k) & full
    if with_order:
        for j in range(m):
            order[j] = psrc[j]


@njit(cache=True, nogil=True)
def csr_in_order(order, row_ptr, row_groups, identity_labels):
    """The identity CSR and labels re-listed in ``order`` (the identity rows' score order).

    With the rows listed in score order, the sweep kernels read every array
    sequentially (identity order = 0, 1, 2, ...) instead of jumping around
    memory once per row and array; one gather here is several times cheaper.
    """
    m = order.shape[0]
    ptr = np.empty(m + 1, dtype=np.int64)
    groups = np.empty(row_groups.shape[0], dtype=np.int64)
    labels = np.empty(m, dtype=np.bool_)
    ptr[0] = 0
    t = 0
    for q in range(m):
        r = order[q]
        labels[q] = identity_labels[r]
        for e in range(row_ptr[r], row_ptr[r + 1]):
            groups[t] = row_groups[e]
            t += 1
        ptr[q + 1] = t
    return ptr, groups, labels
