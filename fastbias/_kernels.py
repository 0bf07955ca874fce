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

# Column order of the per-subgroup count matrices of ``member_counts`` and
# ``subgroup_counts_weighted``.
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
def member_counts_in_range(member_keys, member_codes, start, stop, neg_sorted, pos_sorted,
                           n_groups, member_weights, neg_cum, pos_cum):
    """Per-subgroup counts of the memberships ``start:stop`` (in score order), before finishing.

    ``member_keys`` (ascending) and ``member_codes`` list one entry per
    (row, subgroup) membership: the row's score and ``2 * subgroup + label``.
    ``neg_sorted``/``pos_sorted`` are all negatives' and positives' scores,
    ascending, in the same representation as ``member_keys`` (floats or the
    sortable integer keys of :func:`sorted_class_keys`). ``start`` and
    ``stop`` must not split a block of equal scores.

    Integer weights (e.g. bootstrap counts) are optional: ``member_weights``
    (int64, one per membership) with ``neg_cum``/``pos_cum``, the int64 prefix
    sums of the class weights along ``neg_sorted``/``pos_sorted`` (length
    + 1). Empty arrays mean every row weighs 1. Weighted counts stay exact.

    Returns counts (n_groups, N_COUNT_COLUMNS) int64 in which the subgroup U
    counts only pairs inside the range and the other U columns still include
    the within-subgroup pairs; :func:`add_member_counts` joins two adjacent
    ranges and :func:`finish_member_counts` removes those pairs.

    The walk goes block by block of equal scores: the class ranks of a block
    are found once (galloping from the previous block), and each subgroup in
    the block is updated once with its number of negatives and positives
    there, so the cost is O(memberships + blocks log(n / blocks)).
    """
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.int64)
    neg_in_block = np.zeros(n_groups, dtype=np.int64)
    pos_in_block = np.zeros(n_groups, dtype=np.int64)
    neg_strictly_below = np.zeros(n_groups, dtype=np.int64)
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    weighted = member_weights.shape[0] > 0
    if weighted:
        total_neg2 = 2 * neg_cum[neg_cum.shape[0] - 1]
        total_pos2 = 2 * pos_cum[pos_cum.shape[0] - 1]
    else:
        total_neg2 = 2 * np.int64(neg_sorted.shape[0])
        total_pos2 = 2 * np.int64(pos_sorted.shape[0])
    neg_lt = 0
    neg_le = 0
    pos_lt = 0
    pos_le = 0
    t = start
    while t < stop:
        key = member_keys[t]
        n_touched = 0
        while t < stop and member_keys[t] == key:
            code = member_codes[t]
            g = code >> 1
            w = member_weights[t] if weighted else np.int64(1)
            if code & 1:
                pos_in_block[g] += w
            else:
                neg_in_block[g] += w
            if not is_touched[g]:
                is_touched[g] = True
                touched[n_touched] = g
                n_touched += 1
            t += 1
        # twice "#class members below + 1/2 tied" at this score, for both classes
        neg_lt = _count_below(neg_sorted, neg_lt, key, False)
        neg_le = _count_below(neg_sorted, max(neg_le, neg_lt), key, True)
        pos_lt = _count_below(pos_sorted, pos_lt, key, False)
        pos_le = _count_below(pos_sorted, max(pos_le, pos_lt), key, True)
        if weighted:
            neg_below2 = neg_cum[neg_lt] + neg_cum[neg_le]
            pos_below2 = pos_cum[pos_lt] + pos_cum[pos_le]
        else:
            neg_below2 = np.int64(neg_lt + neg_le)
            pos_below2 = np.int64(pos_lt + pos_le)
        neg_above2 = total_neg2 - neg_below2
        pos_above2 = total_pos2 - pos_below2
        for j in range(n_touched):
            g = touched[j]
            n_neg = neg_in_block[g]
            n_pos = pos_in_block[g]
            counts[g, CELL_SUBGROUP_NEG] += n_neg
            counts[g, CELL_SUBGROUP_POS] += n_pos
            counts[g, TWICE_SUBGROUP_U] += n_pos * (2 * neg_strictly_below[g] + n_neg)
            counts[g, TWICE_BPSN_U] += n_neg * pos_above2
            counts[g, TWICE_BNSP_U] += n_pos * neg_below2
            counts[g, TWICE_NEG_BG_ABOVE_U] += n_neg * neg_above2
            counts[g, TWICE_POS_BG_ABOVE_U] += n_pos * pos_above2
            neg_strictly_below[g] += n_neg
            neg_in_block[g] = 0
            pos_in_block[g] = 0
            is_touched[g] = False
    return counts


@njit(cache=True, nogil=True)
def add_member_counts(lower, upper):
    """Counts of two adjacent score ranges joined (``lower`` below ``upper``), unfinished.

    Every subgroup negative of the lower range is strictly below every
    subgroup positive of the upper one: those pairs join the subgroup U.
    """
    joined = np.empty_like(lower)
    for g in range(lower.shape[0]):
        for col in range(N_COUNT_COLUMNS):
            joined[g, col] = lower[g, col] + upper[g, col]
        joined[g, TWICE_SUBGROUP_U] += (2 * upper[g, CELL_SUBGROUP_POS]
                                        * lower[g, CELL_SUBGROUP_NEG])
    return joined


@njit(cache=True, nogil=True)
def finish_member_counts(counts):
    """Remove the within-subgroup pairs from the global sums (in place); return ``counts``."""
    for g in range(counts.shape[0]):
        sub = counts[g, TWICE_SUBGROUP_U]
        counts[g, TWICE_BPSN_U] -= sub
        counts[g, TWICE_BNSP_U] -= sub
        counts[g, TWICE_NEG_BG_ABOVE_U] -= counts[g, CELL_SUBGROUP_NEG] * counts[g, CELL_SUBGROUP_NEG]
        counts[g, TWICE_POS_BG_ABOVE_U] -= counts[g, CELL_SUBGROUP_POS] * counts[g, CELL_SUBGROUP_POS]
    return counts


@njit(cache=True, nogil=True)
def member_counts(member_keys, member_codes, neg_sorted, pos_sorted, n_groups):
    """Exact (int64) per-subgroup counts of all memberships (see :func:`member_counts_in_range`).

    Returns counts (n_groups, N_COUNT_COLUMNS) int64; see the module docstring.
    """
    no_weights = np.empty(0, dtype=np.int64)
    return finish_member_counts(member_counts_in_range(
        member_keys, member_codes, 0, member_keys.shape[0], neg_sorted, pos_sorted, n_groups,
        no_weights, no_weights, no_weights))


@njit(cache=True, nogil=True)
def block_boundary_near(keys, target):
    """The first index >= ``target`` that starts a block of equal ``keys`` (or ``len(keys)``)."""
    t = min(max(target, 1), keys.shape[0])
    while t < keys.shape[0] and keys[t] == keys[t - 1]:
        t += 1
    return t


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
    """Prefix sums of ``weights[rows]`` as pairs (hi, lo), length m + 1, starting at 0.

    Returns ``(hi, lo, gathered, n_positive)``: also ``weights[rows]`` and how
    many of them are > 0, from the same (random-access) pass.
    """
    m = rows.shape[0]
    hi = np.empty(m + 1, dtype=np.float64)
    lo = np.empty(m + 1, dtype=np.float64)
    gathered = np.empty(m, dtype=np.float64)
    hi[0] = 0.0
    lo[0] = 0.0
    n_positive = 0
    for j in range(m):
        w = weights[rows[j]]
        gathered[j] = w
        if w > 0:
            n_positive += 1
        hi[j + 1], lo[j + 1] = _dd_add(hi[j], lo[j], w, 0.0)
    return hi, lo, gathered, n_positive


@njit(cache=True, nogil=True)
def _add_to(hi, lo, g, col, v_hi, v_lo):
    hi[g, col], lo[g, col] = _dd_add(hi[g, col], lo[g, col], v_hi, v_lo)


@njit(cache=True, nogil=True)
def subgroup_counts_weighted(id_scores, id_order, id_labels, id_weights, row_ptr, row_groups,
                             neg_sorted, neg_cum_hi, neg_cum_lo, pos_sorted, pos_cum_hi,
                             pos_cum_lo, pos_w_sorted, n_weighted_neg, n_weighted_pos, n_groups):
    """Weighted per-subgroup counts, every sum carried as a double-double pair (hi, lo).

    Same quantities as the unweighted ``member_counts``, walking rows.
    ``*_cum_hi/lo`` are compensated prefix sums of the class weights along the
    sorted class scores. Returns ``(hi, lo, background_hi, background_lo,
    background_rows, twice_u_hi, twice_u_lo)``: the counts (n_groups, 7) as
    in the unweighted kernel, the background negative/positive weights
    (n_groups, 2) as class total minus subgroup (exactly 0 when no background
    row of that class has a positive weight: ``n_weighted_neg``/
    ``n_weighted_pos`` count such rows over the whole data), how many
    background rows of each class have a positive weight, and twice the
    overall U. Each value is ``hi + lo``
    to about 2**-106 of the sums it came from; :func:`explicit_cell_counts`
    recomputes a subgroup whose background is too small for that.
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
    background_hi = np.empty((n_groups, 2), dtype=np.float64)
    background_lo = np.empty((n_groups, 2), dtype=np.float64)
    background_rows = np.empty((n_groups, 2), dtype=np.int64)
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
        for c in range(2):
            if c == 0:
                t_hi, t_lo, live = tn_hi, tn_lo, n_weighted_neg > weighted_rows[g, 0]
            else:
                t_hi, t_lo, live = tp_hi, tp_lo, n_weighted_pos > weighted_rows[g, 1]
            b_hi, b_lo = _dd_add(t_hi, t_lo, -hi[g, c], -lo[g, c])
            background_hi[g, c] = b_hi if live else 0.0
            background_lo[g, c] = b_lo if live else 0.0
        background_rows[g, 0] = n_weighted_neg - weighted_rows[g, 0]
        background_rows[g, 1] = n_weighted_pos - weighted_rows[g, 1]
    u_hi, u_lo = twice_u_weighted_dd(neg_sorted, neg_cum_hi, neg_cum_lo, pos_sorted, pos_w_sorted)
    return hi, lo, background_hi, background_lo, background_rows, u_hi, u_lo


@njit(cache=True, nogil=True)
def twice_u_weighted_dd(neg_sorted, neg_cum_hi, neg_cum_lo, pos_sorted, pos_w_sorted):
    """Twice the weighted U of positives over negatives, summed in double-double: (hi, lo)."""
    lt = 0
    le = 0
    u_hi = 0.0
    u_lo = 0.0
    for j in range(pos_sorted.shape[0]):
        s = pos_sorted[j]
        lt = _count_below(neg_sorted, lt, s, False)
        le = _count_below(neg_sorted, max(le, lt), s, True)
        b_hi, b_lo = _dd_add(neg_cum_hi[lt], neg_cum_lo[lt], neg_cum_hi[le], neg_cum_lo[le])
        t_hi, t_lo = _dd_mul(b_hi, b_lo, pos_w_sorted[j], 0.0)
        u_hi, u_lo = _dd_add(u_hi, u_lo, t_hi, t_lo)
    return u_hi, u_lo


@njit(cache=True, nogil=True)
def _twice_u_of_cells(x_scores, x_weights, y_scores, y_weights):
    """Twice the weighted U of cell X over cell Y, both sorted by score, in double-double.

    ``sum_x w_x (W_Y(< s_x) + W_Y(<= s_x))`` with prefix sums over Y's own rows
    only (no class total minus subgroup), so every term is non-negative and
    the result is accurate to about 2**-106 relative.
    """
    lt = 0
    le = 0
    below_hi = 0.0  # W_Y(< s), then W_Y(<= s) of the current x
    below_lo = 0.0
    tied_hi = 0.0
    tied_lo = 0.0
    u_hi = 0.0
    u_lo = 0.0
    n_y = y_scores.shape[0]
    for i in range(x_scores.shape[0]):
        s = x_scores[i]
        if le > lt and y_scores[lt] < s:  # the tied block of the previous x lies below s
            below_hi, below_lo = _dd_add(below_hi, below_lo, tied_hi, tied_lo)
            lt = le
            tied_hi = 0.0
            tied_lo = 0.0
        while lt < n_y and y_scores[lt] < s:
            below_hi, below_lo = _dd_add(below_hi, below_lo, y_weights[lt], 0.0)
            lt += 1
        if le < lt:
            le = lt
            tied_hi = 0.0
            tied_lo = 0.0
        while le < n_y and y_scores[le] <= s:
            tied_hi, tied_lo = _dd_add(tied_hi, tied_lo, y_weights[le], 0.0)
            le += 1
        # W_Y(<) + W_Y(<=) = 2 W_Y(<) + W_Y(=)
        t_hi, t_lo = _dd_add(2.0 * below_hi, 2.0 * below_lo, tied_hi, tied_lo)
        t_hi, t_lo = _dd_mul(t_hi, t_lo, x_weights[i], 0.0)
        u_hi, u_lo = _dd_add(u_hi, u_lo, t_hi, t_lo)
    return u_hi, u_lo


@njit(inline="always")
def _split_class(rows, sorted_scores, member, weights, in_scores, in_weights, out_scores,
                 out_weights):
    """Scores and weights of a class (rows in score order) split into members and the rest."""
    n_in = 0
    n_out = 0
    for j in range(rows.shape[0]):
        r = rows[j]
        if member[r]:
            in_scores[n_in] = sorted_scores[j]
            in_weights[n_in] = weights[r]
            n_in += 1
        else:
            out_scores[n_out] = sorted_scores[j]
            out_weights[n_out] = weights[r]
            n_out += 1
    return n_in, n_out


@njit(inline="always")
def _dd_sum(values, n):
    s_hi = 0.0
    s_lo = 0.0
    for j in range(n):
        s_hi, s_lo = _dd_add(s_hi, s_lo, values[j], 0.0)
    return s_hi, s_lo


@njit(cache=True, nogil=True)
def explicit_cell_counts(member, neg_rows, neg_sorted, pos_rows, pos_sorted, weights):
    """One subgroup's weighted counts from its four explicit cells, in double-double.

    ``member`` is the subgroup's boolean row mask; ``neg_rows``/``pos_rows``
    each class's rows in score order and ``neg_sorted``/``pos_sorted`` their
    scores. The backgrounds are listed row by row, never "class minus
    subgroup", so each count is accurate to about 2**-106 of itself however
    small the background is. O(rows). Returns ``(hi, lo, background_hi,
    background_lo)``: (7,) counts as in :func:`subgroup_counts_weighted` and
    (2,) background negative/positive weights.
    """
    n_neg = neg_rows.shape[0]
    n_pos = pos_rows.shape[0]
    sn_s = np.empty(n_neg, dtype=neg_sorted.dtype)
    sn_w = np.empty(n_neg, dtype=np.float64)
    bn_s = np.empty(n_neg, dtype=neg_sorted.dtype)
    bn_w = np.empty(n_neg, dtype=np.float64)
    sp_s = np.empty(n_pos, dtype=pos_sorted.dtype)
    sp_w = np.empty(n_pos, dtype=np.float64)
    bp_s = np.empty(n_pos, dtype=pos_sorted.dtype)
    bp_w = np.empty(n_pos, dtype=np.float64)
    k_sn, k_bn = _split_class(neg_rows, neg_sorted, member, weights, sn_s, sn_w, bn_s, bn_w)
    k_sp, k_bp = _split_class(pos_rows, pos_sorted, member, weights, sp_s, sp_w, bp_s, bp_w)
    sn_s, sn_w, bn_s, bn_w = sn_s[:k_sn], sn_w[:k_sn], bn_s[:k_bn], bn_w[:k_bn]
    sp_s, sp_w, bp_s, bp_w = sp_s[:k_sp], sp_w[:k_sp], bp_s[:k_bp], bp_w[:k_bp]
    hi = np.zeros(N_COUNT_COLUMNS, dtype=np.float64)
    lo = np.zeros(N_COUNT_COLUMNS, dtype=np.float64)
    hi[CELL_SUBGROUP_NEG], lo[CELL_SUBGROUP_NEG] = _dd_sum(sn_w, k_sn)
    hi[CELL_SUBGROUP_POS], lo[CELL_SUBGROUP_POS] = _dd_sum(sp_w, k_sp)
    hi[TWICE_SUBGROUP_U], lo[TWICE_SUBGROUP_U] = _twice_u_of_cells(sp_s, sp_w, sn_s, sn_w)
    hi[TWICE_BPSN_U], lo[TWICE_BPSN_U] = _twice_u_of_cells(bp_s, bp_w, sn_s, sn_w)
    hi[TWICE_BNSP_U], lo[TWICE_BNSP_U] = _twice_u_of_cells(sp_s, sp_w, bn_s, bn_w)
    hi[TWICE_NEG_BG_ABOVE_U], lo[TWICE_NEG_BG_ABOVE_U] = _twice_u_of_cells(bn_s, bn_w, sn_s, sn_w)
    hi[TWICE_POS_BG_ABOVE_U], lo[TWICE_POS_BG_ABOVE_U] = _twice_u_of_cells(bp_s, bp_w, sp_s, sp_w)
    background_hi = np.zeros(2, dtype=np.float64)
    background_lo = np.zeros(2, dtype=np.float64)
    background_hi[0], background_lo[0] = _dd_sum(bn_w, k_bn)
    background_hi[1], background_lo[1] = _dd_sum(bp_w, k_bp)
    return hi, lo, background_hi, background_lo


@njit(inline="always")
def _dd_div(a_hi, a_lo, b_hi, b_lo):
    """The double nearest (to within an ulp) to (a_hi + a_lo) / (b_hi + b_lo), b > 0."""
    q = a_hi / b_hi
    p_hi, p_lo = _dd_mul(q, 0.0, b_hi, b_lo)
    r_hi, r_lo = _dd_add(a_hi, a_lo, -p_hi, -p_lo)
    return q + (r_hi + r_lo) / b_hi


@njit(cache=True, nogil=True)
def weighted_overall_auc(neg_hi, neg_lo, pos_hi, pos_lo, u_hi, u_lo):
    """twice U / (2 W_neg W_pos) from double-double parts (NaN if a class weighs 0)."""
    pairs_hi, pairs_lo = _dd_mul(neg_hi, neg_lo, pos_hi, pos_lo)
    if not pairs_hi > 0.0:
        return np.nan
    return _dd_div(u_hi, u_lo, 2.0 * pairs_hi, 2.0 * pairs_lo)


# (U column, X cell, Y cell) of each metric, cells: 0/1 subgroup neg/pos, 2/3 background neg/pos
_METRIC_PAIRS = np.array([[TWICE_SUBGROUP_U, 1, 0], [TWICE_BPSN_U, 3, 0], [TWICE_BNSP_U, 1, 2],
                          [TWICE_NEG_BG_ABOVE_U, 2, 0], [TWICE_POS_BG_ABOVE_U, 3, 1]],
                         dtype=np.int64)
N_METRICS = 5
N_AUC_METRICS = 3


@njit(cache=True, nogil=True)
def weighted_metric_values(hi, lo, background_hi, background_lo):
    """The five metrics (n_groups, 5) from double-double weighted counts; NaN when undefined.

    Metric order: subgroup, BPSN, BNSP AUC, negative and positive AEG. An AUC
    is ``twice U / (2 W_X W_Y)`` and an AEG ``(W_X W_Y - twice U) / (2 W_X W_Y)``,
    numerator and denominator in double-double, so an AEG near 0 keeps its
    digits; one rounding at the end.
    """
    n_groups = hi.shape[0]
    out = np.empty((n_groups, N_METRICS), dtype=np.float64)
    cell_hi = np.empty(4, dtype=np.float64)
    cell_lo = np.empty(4, dtype=np.float64)
    for g in range(n_groups):
        cell_hi[0], cell_lo[0] = hi[g, CELL_SUBGROUP_NEG], lo[g, CELL_SUBGROUP_NEG]
        cell_hi[1], cell_lo[1] = hi[g, CELL_SUBGROUP_POS], lo[g, CELL_SUBGROUP_POS]
        cell_hi[2], cell_lo[2] = background_hi[g, 0], background_lo[g, 0]
        cell_hi[3], cell_lo[3] = background_hi[g, 1], background_lo[g, 1]
        for m in range(N_METRICS):
            col = _METRIC_PAIRS[m, 0]
            x = _METRIC_PAIRS[m, 1]
            y = _METRIC_PAIRS[m, 2]
            pairs_hi, pairs_lo = _dd_mul(cell_hi[x], cell_lo[x], cell_hi[y], cell_lo[y])
            if not pairs_hi > 0.0:
                out[g, m] = np.nan
                continue
            if m < N_AUC_METRICS:
                num_hi, num_lo = hi[g, col], lo[g, col]
            else:
                num_hi, num_lo = _dd_add(pairs_hi, pairs_lo, -hi[g, col], -lo[g, col])
            out[g, m] = _dd_div(num_hi, num_lo, 2.0 * pairs_hi, 2.0 * pairs_lo)
    return out




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
def _row_of(position, n_cols, inverse):
    """``position // n_cols`` by a float multiply (an integer division costs ~10x more)."""
    row = np.int64(position * inverse)
    if row * n_cols > position:
        row -= 1
    elif (row + 1) * n_cols <= position:
        row += 1
    return row


# 2**i mod 67 differs for every i in [0, 64) (2 generates the units mod 67); this maps it to i
_BIT_OF_POWER_MOD_67 = np.zeros(67, dtype=np.int64)
for _bit in range(64):
    _BIT_OF_POWER_MOD_67[(1 << _bit) % 67] = _bit
del _bit


@njit(cache=True, nogil=True)
def _scan_words(words, w_start, w_stop, n_cols, member_row, member_col, found):
    """Append (row, column) of the non-zero bytes of ``words[w_start:w_stop]``; return the count.

    Inside a non-zero word, each non-zero byte's high bit is set in
    ``((x & 0x7F..) + 0x7F..) | x) & 0x80..``; the lowest one is isolated
    (``t & -t``) and its bit index looked up from its remainder modulo 67
    (distinct for the 64 powers of two), so the cost is per membership rather
    than per byte, and no step overflows.
    """
    inverse = 1.0 / n_cols
    low7 = np.uint64(0x7F7F7F7F7F7F7F7F)
    high = np.uint64(0x8080808080808080)
    for w in range(w_start, w_stop):
        x = words[w]
        if x != 0:
            t = (((x & low7) + low7) | x) & high
            start = w * 8
            while t != 0:
                lowest = t & (~t + np.uint64(1))
                t ^= lowest
                position = start + (_BIT_OF_POWER_MOD_67[np.int64(lowest % np.uint64(67))] >> 3)
                row = _row_of(position, n_cols, inverse)
                member_row[found] = row
                member_col[found] = position - row * n_cols
                found += 1
    return found


@njit(cache=True, nogil=True)
def _grown(values, used, capacity):
    """A larger copy of ``values`` holding its first ``used`` entries."""
    out = np.empty(capacity, dtype=values.dtype)
    for j in range(used):  # a loop, not a slice copy: compiles in a fraction of the time
        out[j] = values[j]
    return out


DENSE_SCAN_CHUNK_WORDS = 1 << 14


@njit(cache=True, nogil=True)
def dense_members(words, flat, n_cols, capacity):
    """(row, column) of every non-zero byte of a dense C-order (n, k) 0/1 matrix, row-major.

    ``flat`` is the matrix's bytes and ``words`` the same bytes read as
    little-endian uint64 (all whole words; a tail shorter than 8 bytes is read
    from ``flat``). Memberships are sparse, so the scan reads eight bytes at a
    time and does work only per non-zero byte. The output starts at
    ``capacity`` entries and doubles when a chunk of words might not fit.
    Returns ``(member_row, member_col)``, int64.
    """
    member_row = np.empty(max(capacity, 64), dtype=np.int64)
    member_col = np.empty(max(capacity, 64), dtype=np.int64)
    found = 0
    n_words = words.shape[0]
    for w_start in range(0, n_words, DENSE_SCAN_CHUNK_WORDS):
        w_stop = min(w_start + DENSE_SCAN_CHUNK_WORDS, n_words)
        worst = found + 8 * (w_stop - w_start)
        if worst > member_row.shape[0]:
            new_capacity = max(2 * member_row.shape[0], worst)
            member_row = _grown(member_row, found, new_capacity)
            member_col = _grown(member_col, found, new_capacity)
        found = _scan_words(words, w_start, w_stop, n_cols, member_row, member_col, found)
    tail_stop = flat.shape[0]
    if found + tail_stop - n_words * 8 > member_row.shape[0]:
        member_row = _grown(member_row, found, found + tail_stop - n_words * 8)
        member_col = _grown(member_col, found, found + tail_stop - n_words * 8)
    row = (n_words * 8) // n_cols if n_cols > 0 else 0
    col = n_words * 8 - row * n_cols
    for p in range(n_words * 8, tail_stop):
        if flat[p]:
            member_row[found] = row
            member_col[found] = col
            found += 1
        col += 1
        if col == n_cols:
            col = 0
            row += 1
    return member_row[:found], member_col[:found]


@njit(cache=True, nogil=True)
def csr_from_dense_rows(words, flat, n_cols, capacity):
    """Row CSR of a dense C-order (n, k) 0/1 matrix (see :func:`dense_members`).

    Returns ``(identity_rows, row_ptr, row_groups)``: rows with at least one
    membership (increasing) and their subgroup columns (increasing).
    ``capacity`` is a first guess of the number of non-zeros.
    """
    member_row, row_groups = dense_members(words, flat, n_cols, capacity)
    n_member = member_row.shape[0]
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
def radix_sort_gathered(bits, rows, n_bits, out_bits, order):
    """Sort the floats ``bits[rows]`` (given as their raw bit patterns) ascending.

    ``bits`` is a float32/float64 array viewed as uint32/uint64 (``n_bits`` 32
    or 64). Writes the sorted bit patterns to ``out_bits`` (same width; -0.0
    written as +0.0) and, if ``order`` is not empty, the positions ``j`` (into
    ``rows``) in sorted order (stable). NaN must not occur.
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
