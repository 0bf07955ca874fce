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
from numba import njit, prange, types
from numba.extending import overload

# Column order of the per-subgroup count matrices of ``finish_member_counts`` and
# ``member_weights_in_range``: cell totals (count or weight) first, then twice the U numerators.
CELL_SUBGROUP_NEG = 0
CELL_SUBGROUP_POS = 1
TWICE_SUBGROUP_U = 2  # pairs (Dg+, Dg-) with the positive above
TWICE_BPSN_U = 3  # pairs (D+ background, Dg-) with the positive above
TWICE_BNSP_U = 4  # pairs (Dg+, D- background) with the positive above
TWICE_NEG_BG_ABOVE_U = 5  # pairs (D- background, Dg-) with the background above
TWICE_POS_BG_ABOVE_U = 6  # pairs (D+ background, Dg+) with the background above
N_COUNT_COLUMNS = 7


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
    The indices are unsigned inside (numba checks every signed index for a
    negative value); the result is int64.
    """
    n = np.uint64(values.shape[0])
    start = np.uint64(start)
    if start >= n:
        return np.int64(n)
    v = values[start]
    if (v > q) if inclusive else (v >= q):
        return np.int64(start)
    lo = start  # values[lo] is below the bound
    step = np.uint64(1)
    hi = start + step
    while hi < n:
        v = values[hi]
        if (v > q) if inclusive else (v >= q):
            break
        lo = hi
        step <<= np.uint64(1)
        hi = start + step
    if hi > n:
        hi = n
    while hi - lo > np.uint64(1):
        mid = (lo + hi) >> np.uint64(1)
        v = values[mid]
        if (v > q) if inclusive else (v >= q):
            hi = mid
        else:
            lo = mid
    return np.int64(hi)


@njit(inline="always")
def _walk_scratch(n_groups):
    """Scratch of a walk by blocks: the subgroups touched in a block (list, flags) and the
    class ranks (see :func:`_next_block`)."""
    return (np.empty(n_groups, dtype=np.int64), np.zeros(n_groups, dtype=np.bool_),
            np.zeros(4, dtype=np.int64))


@njit(inline="always")
def _gather_block(member_keys, member_codes, member_weights, t, stop, neg_in_block,
                  pos_in_block, is_touched, touched):
    """Add up the block of equal ``member_keys`` that starts at ``t`` (and ends by ``stop``).

    Each subgroup's negatives and positives in the block (counts, or the sums
    of ``member_weights`` when it is not empty) go to ``neg_in_block`` /
    ``pos_in_block``; each subgroup met is listed once in ``touched``.
    Returns ``(end of the block, number of subgroups touched)``.
    """
    key = member_keys[t]
    weighted = member_weights.shape[0] > 0
    n_touched = 0
    while t < stop and member_keys[t] == key:
        code = member_codes[t]
        g = np.uint64(code) >> np.uint64(1)  # unsigned: see _count_below
        w = member_weights[t] if weighted else 1
        if code & 1:
            pos_in_block[g] += w
        else:
            neg_in_block[g] += w
        if not is_touched[g]:
            is_touched[g] = True
            touched[n_touched] = g
            n_touched += 1
        t += 1
    return t, n_touched


@njit(inline="always")
def _next_block(member_keys, member_codes, member_weights, t, stop, neg_sorted, pos_sorted,
                ranks, neg_in_block, pos_in_block, is_touched, touched):
    """:func:`_gather_block`, and ``ranks`` (#negatives <, <=, #positives <, <= the block's
    score) moved on to the block by galloping through ``neg_sorted``/``pos_sorted``."""
    key = member_keys[t]
    t, n_touched = _gather_block(member_keys, member_codes, member_weights, t, stop,
                                 neg_in_block, pos_in_block, is_touched, touched)
    ranks[0] = _count_below(neg_sorted, ranks[0], key, False)
    ranks[1] = _count_below(neg_sorted, max(ranks[1], ranks[0]), key, True)
    ranks[2] = _count_below(pos_sorted, ranks[2], key, False)
    ranks[3] = _count_below(pos_sorted, max(ranks[3], ranks[2]), key, True)
    return t, n_touched


@njit(inline="always")
def _add_block_counts(counts, touched, n_touched, is_touched, neg_in_block, pos_in_block,
                      neg_strictly_below, neg_below2, pos_below2, neg_above2, pos_above2):
    """Count one block's subgroups (``touched``) against the classes: twice the class weight
    below (ties 1/2) and above the block's score, both classes; empties the block."""
    for j in range(n_touched):
        g = np.uint64(touched[j])  # unsigned: see _count_below
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


@njit(cache=True, nogil=True)
def twice_auc_numerator_sorted(neg_sorted, pos_sorted, neg_cum, pos_weights):
    """Twice U(positives > negatives) from the two sorted score arrays (exact int64).

    Integer weights (bootstrap counts) are optional: ``pos_weights`` along
    ``pos_sorted`` and ``neg_cum``, the prefix sums of the negatives' weights
    along ``neg_sorted`` (length + 1); empty arrays mean every row weighs 1.
    """
    weighted = neg_cum.shape[0] > 0
    lt = 0
    le = 0
    total = np.int64(0)
    for j in range(pos_sorted.shape[0]):
        s = pos_sorted[j]
        lt = _count_below(neg_sorted, lt, s, False)
        le = _count_below(neg_sorted, max(le, lt), s, True)
        if weighted:
            total += pos_weights[j] * (neg_cum[lt] + neg_cum[le])
        else:
            total += lt + le
    return total


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
    touched, is_touched, ranks = _walk_scratch(n_groups)
    weighted = member_weights.shape[0] > 0
    if weighted:
        total_neg2 = 2 * neg_cum[neg_cum.shape[0] - 1]
        total_pos2 = 2 * pos_cum[pos_cum.shape[0] - 1]
    else:
        total_neg2 = 2 * np.int64(neg_sorted.shape[0])
        total_pos2 = 2 * np.int64(pos_sorted.shape[0])
    t = start
    while t < stop:
        t, n_touched = _next_block(member_keys, member_codes, member_weights, t, stop,
                                   neg_sorted, pos_sorted, ranks, neg_in_block, pos_in_block,
                                   is_touched, touched)
        # twice "#class members below + 1/2 tied" at this score, for both classes
        if weighted:
            neg_below2 = neg_cum[ranks[0]] + neg_cum[ranks[1]]
            pos_below2 = pos_cum[ranks[2]] + pos_cum[ranks[3]]
        else:
            neg_below2 = ranks[0] + ranks[1]
            pos_below2 = ranks[2] + ranks[3]
        _add_block_counts(counts, touched, n_touched, is_touched, neg_in_block, pos_in_block,
                          neg_strictly_below, neg_below2, pos_below2, total_neg2 - neg_below2,
                          total_pos2 - pos_below2)
    return counts


@njit(parallel=True, cache=True, nogil=True)
def member_counts_pieces(member_keys, member_codes, bounds, neg_sorted, pos_sorted, pos_bounds,
                         n_groups, none):
    """The unweighted counting walk as one round on Numba's threads (see fastbias._native):
    :func:`member_counts_in_range` of the memberships ``bounds[j]:bounds[j + 1]`` and
    :func:`twice_auc_numerator_sorted` of the positives ``pos_bounds[j]:pos_bounds[j + 1]``
    for each piece j, the walks joined in order (:func:`add_member_counts`) and finished.

    Returns ``(counts, twice_u)``: counts as :func:`finish_member_counts` gives them and
    each piece's twice U (for the caller to add up without overflow). ``none`` is an
    empty int64 array (every row weighs 1).
    """
    pieces = bounds.shape[0] - 1
    parts = np.empty((pieces, n_groups, N_COUNT_COLUMNS), dtype=np.int64)
    twice_u = np.empty(pieces, dtype=np.int64)
    for t in prange(2 * pieces):  # a walk's piece and an overall U's piece in turn
        j = t // 2
        if t % 2:
            twice_u[j] = twice_auc_numerator_sorted(
                neg_sorted, pos_sorted[pos_bounds[j]:pos_bounds[j + 1]], none, none)
        else:
            counts = member_counts_in_range(member_keys, member_codes, bounds[j],
                                            bounds[j + 1], neg_sorted, pos_sorted, n_groups,
                                            none, none, none)
            for g in range(n_groups):  # (in loops: see sort_keys_pieces)
                for c in range(N_COUNT_COLUMNS):
                    parts[j, g, c] = counts[g, c]
    joined = parts[0].copy()
    for j in range(1, pieces):
        joined = add_member_counts(joined, parts[j])
    return finish_member_counts(joined), twice_u


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
def block_boundary_near(keys, target):
    """The first index >= ``target`` that starts a block of equal ``keys`` (or ``len(keys)``)."""
    t = min(max(target, 1), keys.shape[0])
    while t < keys.shape[0] and keys[t] == keys[t - 1]:
        t += 1
    return t


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


@njit(inline="always")
def _gathered(weights, rows, start, stop):
    """``weights[rows[start:stop]]`` as float64, in a loop of its own: a walk that read them
    scattered inside its long double-double loop waited on memory (its body left little
    room for the reads to overlap)."""
    out = np.empty(stop - start, dtype=np.float64)
    for q in range(stop - start):
        out[q] = weights[rows[start + q]]
    return out


@njit(cache=True, nogil=True)
def class_weight_below_range(class_sorted, class_rows, weights, scale, k_start, k_stop, queries,
                             query_order, a_start, a_stop, more_queries, b_start, b_stop, a_hi,
                             a_lo, b_hi, b_lo):
    """Twice a class's weight below each query, ties 1/2, in double-double, in one walk of
    one piece of the class: the rows ``k_start:k_stop`` (a whole number of blocks of equal
    scores; :func:`class_walk_cuts`) summed from 0.

    The class's rows ``class_rows`` in increasing score order ``class_sorted`` weigh
    ``weights[row] / scale`` (``scale`` a power of two: exact). For query ``q`` the answer
    is ``P(#below) + P(#below or tied)``, where ``P(k)`` is the compensated sum of the
    piece's first ``k - k_start`` weights (``_dd_add`` one weight at a time from 0: the
    same bits as a prefix-sum array would hold). Two sets of queries are answered in the
    same walk: those at positions ``a_start:a_stop`` of ``query_order`` (or of ``queries``
    when it is empty) and ``b_start:b_stop`` of ``more_queries``, each in increasing order,
    whose ranks in the class fall in the piece; the walk takes the smaller next query of
    the two, so the running sum only moves forward, each weight is read once, and no array
    of the class's length is made. Writes the answers into ``a_hi``/``a_lo`` (at the
    query's index) and ``b_hi``/``b_lo``; returns the piece's ``(total_hi, total_lo,
    n_positive)``, its weight and how many of its rows weigh more than 0.
    :func:`add_twice_offset` makes a later piece's answers whole."""
    ordered = query_order.shape[0] == 0
    piece_weights = _gathered(weights, class_rows, k_start, k_stop)
    k = k_start
    sum_hi = sum_lo = 0.0  # P(k) of the piece
    n_positive = 0
    ta = a_start
    tb = b_start
    while ta < a_stop or tb < b_stop:
        if tb == b_stop or (ta < a_stop and queries[ta if ordered else query_order[ta]] <
                            more_queries[tb]):
            q = queries[ta if ordered else query_order[ta]]
        else:
            q = more_queries[tb]
        while k < k_stop and class_sorted[k] < q:
            sum_hi, sum_lo, n_positive = _add_weight(sum_hi, sum_lo, n_positive,
                                                     piece_weights[k - k_start] / scale)
            k += 1
        lt_hi, lt_lo = sum_hi, sum_lo
        while k < k_stop and class_sorted[k] == q:
            sum_hi, sum_lo, n_positive = _add_weight(sum_hi, sum_lo, n_positive,
                                                     piece_weights[k - k_start] / scale)
            k += 1
        v_hi, v_lo = _dd_add(lt_hi, lt_lo, sum_hi, sum_lo)
        while ta < a_stop and queries[ta if ordered else query_order[ta]] == q:
            index = ta if ordered else query_order[ta]
            a_hi[index], a_lo[index] = v_hi, v_lo
            ta += 1
        while tb < b_stop and more_queries[tb] == q:
            b_hi[tb], b_lo[tb] = v_hi, v_lo
            tb += 1
    while k < k_stop:
        sum_hi, sum_lo, n_positive = _add_weight(sum_hi, sum_lo, n_positive,
                                                 piece_weights[k - k_start] / scale)
        k += 1
    return sum_hi, sum_lo, n_positive


@njit(inline="always")
def _value_at(values, order, t):
    return values[t] if order.shape[0] == 0 else values[order[t]]


@njit(cache=True, nogil=True)
def block_cuts(values, order, piece_rows):
    """Cut the sorted ``values`` (read through ``order``, or as given when it is empty) into
    pieces of about ``piece_rows``, each cut moved forward to the start of a block of equal
    values: (pieces + 1,) int64 from 0 to the length. The pieces depend on the data alone,
    so that sums joined piece by piece are the same bits on any number of threads."""
    n = values.shape[0] if order.shape[0] == 0 else order.shape[0]
    pieces = max(1, (n + piece_rows - 1) // piece_rows)
    cuts = np.empty(pieces + 1, dtype=np.int64)
    cuts[0] = 0
    for j in range(1, pieces):
        t = max(j * piece_rows, cuts[j - 1])
        while 0 < t < n and _value_at(values, order, t) == _value_at(values, order, t - 1):
            t += 1
        cuts[j] = t
    cuts[pieces] = n
    return cuts


@njit(inline="always")
def _count_at_or_below(values, order, n, x):
    """How many of the sorted ``values`` (through ``order``; ``n`` of them) are <= ``x``."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) >> 1
        if _value_at(values, order, mid) <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def class_walk_cuts(class_sorted, piece_rows, queries, query_order, more_queries):
    """The pieces of a class walk (:func:`class_weight_below_range`): ``(cuts, a_cuts,
    b_cuts)``, each (pieces + 1,) int64. Piece j sums the class rows ``cuts[j]:cuts[j + 1]``
    (:func:`block_cuts`) and answers the queries ``a_cuts[j]:a_cuts[j + 1]`` (positions in
    ``query_order``, or in ``queries`` when it is empty) and ``b_cuts[j]:b_cuts[j + 1]`` of
    ``more_queries``: those above the last score before the piece and at most its own last
    (the first piece from below every score, the last to above every score), whose ranks in
    the class, below and tied, both fall in the piece."""
    cuts = block_cuts(class_sorted, np.empty(0, dtype=np.int64), piece_rows)
    pieces = cuts.shape[0] - 1
    n_a = queries.shape[0] if query_order.shape[0] == 0 else query_order.shape[0]
    n_b = more_queries.shape[0]
    no_order = query_order[:0]
    a_cuts = np.empty(pieces + 1, dtype=np.int64)
    b_cuts = np.empty(pieces + 1, dtype=np.int64)
    a_cuts[0] = 0
    b_cuts[0] = 0
    for j in range(1, pieces):
        last = class_sorted[cuts[j] - 1]  # (cuts[j] >= 1: block_cuts moves forward only)
        a_cuts[j] = _count_at_or_below(queries, query_order, n_a, last)
        b_cuts[j] = _count_at_or_below(more_queries, no_order, n_b, last)
    a_cuts[pieces] = n_a
    b_cuts[pieces] = n_b
    return cuts, a_cuts, b_cuts


@njit(cache=True, nogil=True)
def dd_prefix(totals_hi, totals_lo):
    """The double-double sums of the first j pieces' totals, j = 0 .. pieces (from 0, one
    piece at a time, in order): (pieces + 1,) hi and lo."""
    n = totals_hi.shape[0]
    out_hi = np.empty(n + 1, dtype=np.float64)
    out_lo = np.empty(n + 1, dtype=np.float64)
    out_hi[0] = out_lo[0] = 0.0
    for j in range(n):
        out_hi[j + 1], out_lo[j + 1] = _dd_add(out_hi[j], out_lo[j], totals_hi[j], totals_lo[j])
    return out_hi, out_lo


@njit(cache=True, nogil=True)
def add_twice_offset(hi, lo, order, start, stop, offset_hi, offset_lo):
    """A piece's answers (:func:`class_weight_below_range`, summed from 0 in the piece) made
    whole: twice the weight of the pieces before it added to the answers of the queries
    ``start:stop`` (positions in ``order``, or themselves when it is empty), in place."""
    t_hi = 2.0 * offset_hi
    t_lo = 2.0 * offset_lo
    for t in range(start, stop):
        i = t if order.shape[0] == 0 else order[t]
        hi[i], lo[i] = _dd_add(t_hi, t_lo, hi[i], lo[i])


@njit(inline="always")
def _add_weight(sum_hi, sum_lo, n_positive, w):
    """A running double-double sum and its count of positive weights, one weight on."""
    hi, lo = _dd_add(sum_hi, sum_lo, w, 0.0)
    return hi, lo, n_positive + (1 if w > 0 else 0)


@njit(cache=True, nogil=True)
def _add_to(hi, lo, g, col, v_hi, v_lo):
    hi[g, col], lo[g, col] = _dd_add(hi[g, col], lo[g, col], v_hi, v_lo)


@njit(cache=True, nogil=True)
def member_weights_in_range(id_sorted, id_order, id_labels, weights, scale, id_rows, row_ptr,
                            row_groups, nb_hi, nb_lo, pb_hi, pb_lo, tn_hi, tn_lo, tp_hi, tp_lo,
                            t_start, t_stop, n_groups):
    """The weighted counts of the identity rows ``id_order[t_start:t_stop]`` (a whole number
    of blocks of equal scores), every sum a double-double pair, before joining: ``(hi, lo,
    weighted_rows)``, the counts (n_groups, 7) as :func:`finish_member_counts` lays them out
    but with the within-subgroup pairs of every subgroup still in the U columns, and each
    subgroup's rows of each class with a weight above 0 (n_groups, 2).

    The identity row ``r = id_order[t]`` scores ``id_sorted[t]`` and weighs
    ``weights[id_rows[r]] / scale``; ``nb``/``pb`` hold, at ``t``, twice each class's weight
    below it (ties 1/2, :func:`class_weight_below_range`) and ``tn``/``tp`` the class
    totals. The subgroup U counts the pairs inside the range only:
    :func:`join_member_weights` adds those across ranges.
    """
    hi = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.float64)
    lo = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=np.float64)
    neg_block = np.zeros((n_groups, 2), dtype=np.float64)
    pos_block = np.zeros((n_groups, 2), dtype=np.float64)
    weighted_rows = np.zeros((n_groups, 2), dtype=np.int64)  # subgroup rows with weight > 0
    neg_below = np.zeros((n_groups, 2), dtype=np.float64)  # (in this range)
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    n_touched = 0
    # the range's weights, labels and subgroups gathered first, in score order, in loops of
    # their own: the counting loop's long body left little room for the scattered reads to
    # overlap (60 -> 8 ms at 1.8M rows when they are read in order)
    n_range = t_stop - t_start
    range_weights = np.empty(n_range, dtype=np.float64)
    range_labels = np.empty(n_range, dtype=np.bool_)
    range_ptr = np.empty(n_range + 1, dtype=np.int64)
    range_ptr[0] = 0
    for q in range(n_range):
        r = id_order[t_start + q]
        range_weights[q] = weights[id_rows[r]]
        range_labels[q] = id_labels[r]
        range_ptr[q + 1] = range_ptr[q] + (row_ptr[r + 1] - row_ptr[r])
    # (int32: half the scratch, which a block of tied scores, never split, makes as long as
    # its rows' memberships)
    range_groups = np.empty(range_ptr[n_range], dtype=np.int32)
    for q in range(n_range):
        first = row_ptr[id_order[t_start + q]]
        for p in range(range_ptr[q + 1] - range_ptr[q]):
            range_groups[range_ptr[q] + p] = row_groups[first + p]
    t = t_start
    while t < t_stop:
        block_score = id_sorted[t]
        while t < t_stop and id_sorted[t] == block_score:
            q = t - t_start
            w = range_weights[q] / scale
            # twice "#class below + 1/2 tied" for this row, both classes
            nb_r_hi, nb_r_lo = nb_hi[t], nb_lo[t]
            pb_r_hi, pb_r_lo = pb_hi[t], pb_lo[t]
            # twice "#positives above + 1/2 tied"
            pa_hi, pa_lo = _dd_add(2.0 * tp_hi, 2.0 * tp_lo, -pb_r_hi, -pb_r_lo)
            if range_labels[q]:
                c1_hi, c1_lo = _dd_mul(nb_r_hi, nb_r_lo, w, 0.0)
                c2_hi, c2_lo = _dd_mul(pa_hi, pa_lo, w, 0.0)
                cell, col1, col2 = CELL_SUBGROUP_POS, TWICE_BNSP_U, TWICE_POS_BG_ABOVE_U
            else:
                na_hi, na_lo = _dd_add(2.0 * tn_hi, 2.0 * tn_lo, -nb_r_hi, -nb_r_lo)
                c1_hi, c1_lo = _dd_mul(pa_hi, pa_lo, w, 0.0)
                c2_hi, c2_lo = _dd_mul(na_hi, na_lo, w, 0.0)
                cell, col1, col2 = CELL_SUBGROUP_NEG, TWICE_BPSN_U, TWICE_NEG_BG_ABOVE_U
            for p in range(range_ptr[q], range_ptr[q + 1]):
                g = range_groups[p]
                _add_to(hi, lo, g, cell, w, 0.0)
                if w > 0:
                    weighted_rows[g, cell] += 1
                _add_to(hi, lo, g, col1, c1_hi, c1_lo)
                _add_to(hi, lo, g, col2, c2_hi, c2_lo)
                if range_labels[q]:
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
    return hi, lo, weighted_rows


@njit(cache=True, nogil=True)
def join_member_weights(parts_hi, parts_lo, parts_rows):
    """The ranges' counts of :func:`member_weights_in_range` ((pieces, n_groups, 7) hi and lo,
    (pieces, n_groups, 2) rows; in score order) joined, one range at a time: every column
    added, and the within-subgroup pairs across ranges, twice each range's subgroup positive
    weight times the subgroup negative weight of the ranges below it (all strictly below),
    added to the subgroup U. Returns ``(hi, lo, weighted_rows)``."""
    hi = parts_hi[0].copy()
    lo = parts_lo[0].copy()
    weighted_rows = parts_rows[0].copy()
    for j in range(1, parts_hi.shape[0]):
        for g in range(hi.shape[0]):
            # (hi, lo)[g, CELL_SUBGROUP_NEG] holds the negatives of the ranges below j
            u_hi, u_lo = _dd_mul(parts_hi[j, g, CELL_SUBGROUP_POS],
                                 parts_lo[j, g, CELL_SUBGROUP_POS],
                                 2.0 * hi[g, CELL_SUBGROUP_NEG], 2.0 * lo[g, CELL_SUBGROUP_NEG])
            _add_to(hi, lo, g, TWICE_SUBGROUP_U, u_hi, u_lo)
            for col in range(N_COUNT_COLUMNS):
                _add_to(hi, lo, g, col, parts_hi[j, g, col], parts_lo[j, g, col])
            weighted_rows[g, 0] += parts_rows[j, g, 0]
            weighted_rows[g, 1] += parts_rows[j, g, 1]
    return hi, lo, weighted_rows


@njit(cache=True, nogil=True)
def finish_member_weights(hi, lo, weighted_rows, tn_hi, tn_lo, tp_hi, tp_lo, n_weighted_neg,
                          n_weighted_pos):
    """The joined weighted counts (:func:`join_member_weights`) finished in place, as
    :func:`finish_member_counts` finishes the unweighted ones, every sum in double-double:
    the within-subgroup pairs removed from the other U columns. Returns the background
    negative/positive weights (n_groups, 2) as class total minus subgroup (exactly 0 when no
    background row of that class weighs more than 0, ``n_weighted_*`` the class's rows that
    do), hi and lo, and how many background rows of each class weigh more than 0."""
    n_groups = hi.shape[0]
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
    return background_hi, background_lo, background_rows


@njit(cache=True, nogil=True)
def weighted_u_in_range(u_below_hi, u_below_lo, weights, pos_rows, scale, start, stop):
    """Twice the overall U of the positives ``start:stop`` (``u_below``: twice the negative
    weight below each, ties 1/2), each times its weight, summed in double-double from 0."""
    u_hi = 0.0
    u_lo = 0.0
    piece_weights = _gathered(weights, pos_rows, start, stop)
    for j in range(start, stop):
        t_hi, t_lo = _dd_mul(u_below_hi[j], u_below_lo[j], piece_weights[j - start] / scale, 0.0)
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
    background_lo)``: (7,) counts as :func:`finish_member_weights` leaves them and
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


# --- chunked decomposition (Dask partitions, streaming buckets) -------------------------
@njit(cache=True, nogil=True)
def combine_chunk_counts(local_counts, backgrounds, class_totals, local_twice_u):
    """Whole-data counts from per-chunk integer counts, chunks in increasing score order.

    Parameters
    ----------
    local_counts : (n_chunks, n_groups, 7) int64
        Each chunk's own sweep counts (cell totals and twice the U numerators
        of the pairs inside the chunk), columns as in the module docstring.
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
        The counts of all the memberships at once (``finish_member_counts`` of one range).
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


# --- DeLong placement sums from the memberships in score order ----------------------------
# Every metric is a two-sample U-statistic ``theta = P(X > Y) + 1/2 P(X = Y)``
# between an "above" sample X and a "below" sample Y (the AEGs are
# ``1/2 - theta``). DeLong's variance needs, besides ``theta``, the sums of
# squared placements ``SQX = sum_x w_x c(x)^2`` with ``c(x)`` the weight of Y
# below x (ties 1/2) and ``SQY = sum_y w_y d(y)^2`` with ``d(y)`` the weight of X
# above y. For a subgroup g (D-/D+ all negatives/positives, Dg-/Dg+ the
# subgroup's cells, B-/B+ the background cells) the five metrics are
#
# ====  ===============  ======  ======
# col   metric           X       Y
# ====  ===============  ======  ======
# 0     subgroup AUC     Dg+     Dg-
# 1     BPSN AUC         B+      Dg-
# 2     BNSP AUC         Dg+     B-
# 3     negative AEG     B-      Dg-      (theta = P(B- > Dg-))
# 4     positive AEG     B+      Dg+      (theta = P(B+ > Dg+))
# ====  ===============  ======  ======
#
# Subgroup-side placements are global class placements minus within-subgroup
# ones. A background-side sum such as ``sum_{x in B+} c(x)^2`` with
# ``c(x) = sum_{y in Dg-} w_y k(x, y)`` is the sum over *all* positives minus the
# sum over Dg+, and the sum over all positives expands over pairs of subgroup
# rows: ``sum_{y, y'} w_y w_y' sum_x w_x k(x, y) k(x, y')``, where the inner sum
# is ``W+(> s') + 1/2 W+(= s')`` when ``s_y < s_y' = s'`` and
# ``W+(> s) + 1/4 W+(= s)`` when the two scores are equal. So one block sweep
# over the subgroup rows in score order, with global class weights below/at
# each row, gives every sum in ``O(n log n + memberships)``.
# Per subgroup, the sums sit in the columns below (block + metric column).
DELONG_U = 0  # columns 0..4: U (plain units)
DELONG_SQ_X = 5  # columns 5..9
DELONG_SQ_Y = 10  # columns 10..14
DELONG_ALL = 15  # columns 15..18: the all-of-the-class parts of SQX1, SQY2, SQX3, SQX4
DELONG_SELF = 19  # columns 19..20: the subgroup's own parts of SQX3, SQX4
N_DELONG_COLUMNS = 21


@njit(inline="always")
def _class_weight_to(cumulative, lt, le):
    """Weight of a class below and at a score from its ranks (counts when ``cumulative`` is empty)."""
    if cumulative.shape[0] > 0:
        return cumulative[lt], cumulative[le] - cumulative[lt]
    return float(lt), float(le - lt)


@njit(inline="always")
def _class_total(sorted_values, cumulative):
    return cumulative[cumulative.shape[0] - 1] if cumulative.shape[0] > 0 \
        else float(sorted_values.shape[0])


@njit(inline="always")
def _float_term(sums, g, column, w, a, b):
    sums[g, column] += w * a * b


@njit(cache=True, nogil=True)  # (not inlined: the exact walks compile in 6.5 s instead of 9)
def _kept_term(sums, lo, g, column, w, a, b):
    p, e = _two_prod(w, a * b)
    s, e2 = _two_sum(sums[g, column], p)
    sums[g, column] = s
    lo[g, column] += e + e2


def _add_term(sums, lo, g, column, w, a, b):
    """``sums[g, column] += w * a * b``. With ``lo`` an array (an exact walk), ``w`` times
    the product ``a * b`` (which must be exact), and the rounding of that product and of
    the addition (Dekker's and Knuth's error-free transformations) added to
    ``lo[g, column]``: unweighted, whose terms are whole multiples of 1/4, ``sums + lo`` is
    then the exact sum (see :mod:`fastbias.intervals.exact_sums`). Compiled, ``lo``'s type
    picks one of the two (:func:`_add_term_compiled`)."""
    if lo is None:
        _float_term(sums, g, column, w, a, b)
    else:
        _kept_term(sums, lo, g, column, w, a, b)


@overload(_add_term, inline="always")
def _add_term_compiled(sums, lo, g, column, w, a, b):
    """:func:`_add_term` in a kernel: the walk is compiled once with ``lo`` None (the float
    sums, no branch: a test of ``lo`` at run time made the walks up to 14 times slower)
    and, where an exact walk is first wanted, once with an array."""
    if isinstance(lo, types.NoneType):
        return lambda sums, lo, g, column, w, a, b: _float_term(sums, g, column, w, a, b)
    return lambda sums, lo, g, column, w, a, b: _kept_term(sums, lo, g, column, w, a, b)


@njit(inline="always")
def _add_pair_squares(sums, lo, g, column, w, own_other, big_beyond, big_eq):
    """``w * (2 own_other (B + B_eq / 2) + w (B + B_eq / 4))``: the sum over ``w`` tied rows and
    the subgroup's ``own_other`` rows beyond them of the placement products among the class."""
    _add_term(sums, lo, g, column, w, 2.0 * own_other * (big_beyond + 0.5 * big_eq)
              + w * (big_beyond + 0.25 * big_eq), 1.0)


@njit(inline="always")
def _add_placements(sums, lo, g, metric, square_block, w, placement, with_u):
    """``w`` rows of one cell with the same placement: add to the metric's U (if ``with_u``)
    and to its sum of squared placements in ``square_block`` (DELONG_SQ_X or DELONG_SQ_Y)."""
    if with_u:
        _add_term(sums, lo, g, DELONG_U + metric, w, placement, 1.0)
    _add_term(sums, lo, g, square_block + metric, w, placement, placement)


@njit(inline="always")
def _add_block_placements(sums, lo, g, n_lt, n_eq, n_all, p_lt, p_eq, p_all, big_n_lt, big_n_eq,
                          big_p_gt, big_p_eq, total_neg):
    """Add subgroup ``g``'s rows at one score to its DeLong sums.

    ``n_eq``/``p_eq``: its negatives/positives at the score (count or weight),
    ``n_lt``/``p_lt`` below it, ``n_all``/``p_all`` in all; ``big_*``: all
    negatives below and at the score, all positives above and at it.
    """
    n_gt = n_all - n_lt - n_eq
    p_gt = p_all - p_lt - p_eq
    big_n_gt = total_neg - big_n_lt - big_n_eq
    a = n_lt + 0.5 * n_eq  # Dg- below the positives here
    b = p_gt + 0.5 * p_eq  # Dg+ above the negatives here
    # metric column, side of the sum of squares, rows here on that side, their placement
    _add_placements(sums, lo, g, 0, DELONG_SQ_X, p_eq, a, True)
    _add_placements(sums, lo, g, 0, DELONG_SQ_Y, n_eq, b, False)  # U counted on the X side
    _add_placements(sums, lo, g, 1, DELONG_SQ_Y, n_eq, big_p_gt + 0.5 * big_p_eq - b, True)
    _add_placements(sums, lo, g, 2, DELONG_SQ_X, p_eq, big_n_lt + 0.5 * big_n_eq - a, True)
    _add_placements(sums, lo, g, 3, DELONG_SQ_Y, n_eq,
                    (big_n_gt + 0.5 * big_n_eq) - (n_gt + 0.5 * n_eq), True)
    _add_placements(sums, lo, g, 4, DELONG_SQ_Y, p_eq,
                    (big_p_gt + 0.5 * big_p_eq) - (p_gt + 0.5 * p_eq), True)
    # the parts over all of a class, and the subgroup's own part of them (see above)
    own_neg = n_lt + 0.5 * n_eq
    own_pos = p_lt + 0.5 * p_eq
    _add_term(sums, lo, g, DELONG_SELF + 0, n_eq, own_neg, own_neg)
    _add_term(sums, lo, g, DELONG_SELF + 1, p_eq, own_pos, own_pos)
    _add_pair_squares(sums, lo, g, DELONG_ALL + 0, n_eq, n_lt, big_p_gt, big_p_eq)
    _add_pair_squares(sums, lo, g, DELONG_ALL + 1, p_eq, p_gt, big_n_lt, big_n_eq)
    _add_pair_squares(sums, lo, g, DELONG_ALL + 2, n_eq, n_lt, big_n_gt, big_n_eq)
    _add_pair_squares(sums, lo, g, DELONG_ALL + 3, p_eq, p_lt, big_p_gt, big_p_eq)


@njit(cache=True, nogil=True)
def member_delong_sums_in_range(member_keys, member_codes, member_weights, start, stop,
                                neg_sorted, pos_sorted, neg_cum, pos_cum, cells, below_start,
                                lo):
    """DeLong placement sums of the memberships ``start:stop`` (float64).

    Like :func:`member_counts_in_range` it walks blocks of equal scores, ranks
    each block once in the classes by galloping, and updates each subgroup in
    the block once. Frequency weights are optional: ``member_weights`` (one
    per membership) with ``neg_cum``/``pos_cum``, the prefix sums of the class
    weights along ``neg_sorted``/``pos_sorted``; empty arrays mean every row
    weighs 1. ``cells`` is (n_groups, 2): each subgroup's negatives and
    positives (count or weight) over all memberships; ``below_start``
    (n_groups, 2) those below ``start``. Returns (n_groups, N_DELONG_COLUMNS)
    partial sums, which add up over adjacent ranges;
    :func:`finish_delong_sums` turns their total into U, SQX, SQY. ``lo``: None, or
    (n_groups, N_DELONG_COLUMNS) zeros that get each sum's rounding (:func:`_add_term`).
    """
    n_groups = cells.shape[0]
    sums = np.zeros((n_groups, N_DELONG_COLUMNS), dtype=np.float64)
    neg_in_block = np.zeros(n_groups, dtype=np.float64)
    pos_in_block = np.zeros(n_groups, dtype=np.float64)
    neg_below = np.empty(n_groups, dtype=np.float64)
    pos_below = np.empty(n_groups, dtype=np.float64)
    for g in range(n_groups):
        neg_below[g] = below_start[g, 0]
        pos_below[g] = below_start[g, 1]
    touched, is_touched, ranks = _walk_scratch(n_groups)
    total_neg = _class_total(neg_sorted, neg_cum)
    total_pos = _class_total(pos_sorted, pos_cum)
    t = start
    while t < stop:
        t, n_touched = _next_block(member_keys, member_codes, member_weights, t, stop,
                                   neg_sorted, pos_sorted, ranks, neg_in_block, pos_in_block,
                                   is_touched, touched)
        big_n_lt, big_n_eq = _class_weight_to(neg_cum, ranks[0], ranks[1])
        big_p_lt, big_p_eq = _class_weight_to(pos_cum, ranks[2], ranks[3])
        big_p_gt = total_pos - big_p_lt - big_p_eq
        for j in range(n_touched):
            g = touched[j]
            _add_block_placements(sums, lo, g, neg_below[g], neg_in_block[g], cells[g, 0],
                                  pos_below[g], pos_in_block[g], cells[g, 1], big_n_lt, big_n_eq,
                                  big_p_gt, big_p_eq, total_neg)
            neg_below[g] += neg_in_block[g]
            pos_below[g] += pos_in_block[g]
            neg_in_block[g] = 0.0
            pos_in_block[g] = 0.0
            is_touched[g] = False
    return sums


#: how :func:`finish_delong_sums` makes the background sides' sums: (column of the 15 made,
#: the walk's column of the whole class's sum, the walk's column of the part to take off)
DELONG_FINISH = ((DELONG_SQ_X + 1, DELONG_ALL + 0, DELONG_SQ_X + 0),
                 (DELONG_SQ_Y + 2, DELONG_ALL + 1, DELONG_SQ_Y + 0),
                 (DELONG_SQ_X + 3, DELONG_ALL + 2, DELONG_SELF + 0),
                 (DELONG_SQ_X + 4, DELONG_ALL + 3, DELONG_SELF + 1))


@njit(cache=True, nogil=True)
def finish_delong_sums(sums):
    """(n_groups, 15) U, SQX, SQY of the five metrics from the walk's total sums: the first
    15 columns, but those of DELONG_FINISH, each a whole class's sum less a part of it."""
    n_groups = sums.shape[0]
    out = np.empty((n_groups, 15), dtype=np.float64)
    for g in range(n_groups):
        for c in range(15):
            out[g, c] = sums[g, c]
        for made, whole, part in DELONG_FINISH:
            out[g, made] = sums[g, whole] - sums[g, part]
    return out


@njit(inline="always")
def _placement_block(values, j, others, others_cumulative, lt, le, above, total_others):
    """The block of equal ``values`` from ``j`` (sorted): ``(its end, the ranks lt/le of its
    score in ``others`` moved on from the previous block's, its rows' placement)``, the
    placement being the weight of ``others`` below the score (above it when ``above``), ties
    1/2."""
    s = values[j]
    stop = j
    while stop < values.shape[0] and values[stop] == s:
        stop += 1
    lt = _count_below(others, lt, s, False)
    le = _count_below(others, max(le, lt), s, True)
    below, tied = _class_weight_to(others_cumulative, lt, le)
    place = below + 0.5 * tied
    if above:
        place = total_others - place
    return stop, lt, le, place


@njit(inline="always")
def _placement_moments(values, cumulative, others, others_cumulative, above, sums, lo, at):
    """Sum and sum of squares, over the rows of ``values`` (sorted), of each row's placement:
    the weight of ``others`` (sorted) below it, ties 1/2 (above it when ``above``), added to
    ``sums[0, at]`` and ``sums[0, at + 1]`` (their rounding to ``lo``'s, as
    :func:`_add_term`). Rows weigh 1 or, with a non-empty ``cumulative``, the differences of
    those prefix sums."""
    total_others = _class_total(others, others_cumulative)
    j = 0
    lt = 0
    le = 0
    while j < values.shape[0]:
        stop, lt, le, place = _placement_block(values, j, others, others_cumulative, lt, le,
                                               above, total_others)
        w = cumulative[stop] - cumulative[j] if cumulative.shape[0] > 0 else float(stop - j)
        _add_term(sums, lo, 0, at, w, place, 1.0)
        _add_term(sums, lo, 0, at + 1, w, place, place)
        j = stop


#: :func:`class_placement_sums`' halves: the walk of the positives, of the negatives, both
POSITIVES_HALF, NEGATIVES_HALF, BOTH_HALVES = 1, 2, 3


@njit(cache=True, nogil=True)
def class_placement_sums(neg_sorted, pos_sorted, neg_cum, pos_cum, halves, lo):
    """Overall-AUC DeLong sums from the two sorted classes.

    Returns ``(u, sq_pos, sq_neg)``: sum and sum of squares over positives of
    the negatives below each (ties 1/2), and sum of squares over negatives of
    the positives above each (ties 1/2). Blocks of equal scores are handled
    once each. Frequency weights as in :func:`member_delong_sums_in_range`
    (``neg_cum``/``pos_cum`` empty: unweighted). ``lo``: None, or (1, 4) zeros that get
    the rounding of ``u``, ``sq_pos``, (the negatives' sum of placements) and ``sq_neg``
    (as :func:`_add_term`).

    ``halves`` (a bit mask) picks the walks made: ``POSITIVES_HALF`` gives ``u`` and
    ``sq_pos`` (``sq_neg`` 0), ``NEGATIVES_HALF`` ``sq_neg`` (the others 0), so that two
    threads can walk the two classes; their sums are their own, whichever walks are made.
    """
    sums = np.zeros((1, 4))
    if halves & POSITIVES_HALF:
        _placement_moments(pos_sorted, pos_cum, neg_sorted, neg_cum, False, sums, lo, 0)
    if halves & NEGATIVES_HALF:
        _placement_moments(neg_sorted, neg_cum, pos_sorted, pos_cum, True, sums, lo, 2)
    return sums[0, 0], sums[0, 1], sums[0, 3]


# --- covariance of each AUC metric with the overall AUC (significance tests) ------------------
# The test "metric = overall AUC" needs, besides both DeLong variances, the covariance of the two
# estimates, which share rows. Written with each row's placements, it needs, per subgroup, the sums
# below (c_O(x): all negatives below a positive x, d_O(y): all positives above a negative y, c_g /
# d_g the same within the subgroup's cells; ties 1/2; w the row weight):
#
# ====  =====================================  =====  ==========================================
# col   sum                                    over   how
# ====  =====================================  =====  ==========================================
# 0     w c_g c_O                              Dg+    the walk
# 1     w c_O                                  Dg+    the walk
# 2     w (c_O - c_g) c_O                      Dg+    the walk
# 3     w d_g d_O                              D-     sum over Dg+ rows x of w_x R(x), R(x) the
#                                                     weight of D- below x (ties 1/2) weighted by d_O
# 4     w d_g d_O                              Dg-    the walk
# 5     w d_O                                  Dg-    the walk
# 6     w (d_O - d_g) d_O                      Dg-    the walk
# 7     w c_g c_O  (c_g: Dg- below)            D+     sum over Dg- rows y of w_y Q(y), Q(y) the
#                                                     weight of D+ above y weighted by c_O
# ====  =====================================  =====  ==========================================
N_OVERALL_CROSS_COLUMNS = 8


@njit(cache=True, nogil=True)
def class_sums(values, cumulative, others, others_cumulative, above, prefix, rows, moments):
    """One class's share of a significance test's sums, in one walk along it.

    ``values`` is the sorted class, ``others`` the other class; weights from the prefix sums
    ``cumulative``/``others_cumulative`` (empty: every row weighs 1). A row's placement
    ``p`` is the weight of ``others`` below it (above it when ``above``: the negatives'
    ``d_O``, the positives' ``c_O``), and ``a`` the weight of its own class above it, itself
    left out; ties count 1/2. Where ``prefix`` has n + 1 rows (not 0), writes the prefix sums
    of ``w p`` into it (from 0) and, where ``rows`` has n rows (not 0), each row's ``(p, a)``,
    and ``w`` where it has a third column, into it: the rows a drawn permutation test reads
    (made by a walk of their own, once the prefix sums are freed). Returns ``(sum w a,
    sum w a^2)``, each added in order with the rounding of every addition added up beside it
    and put back at the end (unweighted, whose terms are exact quarters, the sums are then
    exact but for the last rounding: a permutation variance is a small difference of them).
    Where ``moments`` has 2 rows (not 0), writes ``(sum w p, sum w p^2)`` into it: the
    overall AUC's DeLong sums over this class, added block by block as
    :func:`class_placement_sums` adds them (the same bits), so that a significance test
    needs no walk of its own for them.
    """
    n = values.shape[0]
    if (prefix.shape[0] > 0 and prefix.shape[0] != n + 1) or \
            (rows.shape[0] > 0 and (rows.shape[0] != n or rows.shape[1] < 2)) or \
            moments.shape[0] not in (0, 2):
        raise ValueError("class_sums: prefix, rows or moments of the wrong shape")
    total_others = _class_total(others, others_cumulative)
    total_same = _class_total(values, cumulative)
    keep = rows.shape[0] > 0
    summed = prefix.shape[0] > 0
    first = 0.0
    second = 0.0
    first_error = 0.0
    second_error = 0.0
    placements = np.zeros((1, 2))  # (as _placement_moments adds them)
    if summed:
        prefix[0] = 0.0
    lt = 0
    le = 0
    j = 0
    while j < values.shape[0]:
        stop, lt, le, value = _placement_block(values, j, others, others_cumulative, lt, le,
                                               above, total_others)
        block = cumulative[stop] - cumulative[j] if cumulative.shape[0] > 0 else float(stop - j)
        _float_term(placements, 0, 0, block, value, 1.0)
        _float_term(placements, 0, 1, block, value, value)
        same_lt, same_tied = _class_weight_to(cumulative, j, stop)
        for q in range(j, stop):
            w = cumulative[q + 1] - cumulative[q] if cumulative.shape[0] > 0 else 1.0
            own = (total_same - same_lt - same_tied) + 0.5 * (same_tied - w)
            if summed:
                prefix[q + 1] = prefix[q] + w * value
            first, error = _two_sum(first, w * own)
            first_error += error
            second, error = _two_sum(second, w * (own * own))
            second_error += error
            if keep:
                rows[q, 0] = value
                rows[q, 1] = own
                if rows.shape[1] > 2:
                    rows[q, 2] = w
        j = stop
    if moments.shape[0] > 0:
        moments[0] = placements[0, 0]
        moments[1] = placements[0, 1]
    return first + first_error, second + second_error


@njit(cache=True, nogil=True)
def member_overall_cross_sums(member_keys, member_codes, member_weights, neg_sorted, pos_sorted,
                              neg_cum, pos_cum, q_pos, r_neg, cells, lo):
    """The (n_groups, N_OVERALL_CROSS_COLUMNS) sums of the table above, in one walk.

    Walks the memberships in score order by blocks of equal scores as
    :func:`member_delong_sums_in_range` does (same arguments; ``q_pos``/``r_neg``
    the prefix sums of ``w * c_O`` along the positives and ``w * d_O``
    along the negatives, from :func:`class_sums`). ``O(memberships + n)``. ``lo``: None,
    or (n_groups, N_OVERALL_CROSS_COLUMNS) zeros that get each sum's rounding (as
    :func:`_add_term`).
    """
    n_groups = cells.shape[0]
    sums = np.zeros((n_groups, N_OVERALL_CROSS_COLUMNS), dtype=np.float64)
    neg_in_block = np.zeros(n_groups, dtype=np.float64)
    pos_in_block = np.zeros(n_groups, dtype=np.float64)
    neg_below = np.zeros(n_groups, dtype=np.float64)
    pos_below = np.zeros(n_groups, dtype=np.float64)
    touched, is_touched, ranks = _walk_scratch(n_groups)
    total_pos = _class_total(pos_sorted, pos_cum)
    q_total = q_pos[q_pos.shape[0] - 1]
    t = 0
    stop = member_keys.shape[0]
    while t < stop:
        t, n_touched = _next_block(member_keys, member_codes, member_weights, t, stop,
                                   neg_sorted, pos_sorted, ranks, neg_in_block, pos_in_block,
                                   is_touched, touched)
        big_n_lt, big_n_eq = _class_weight_to(neg_cum, ranks[0], ranks[1])
        big_p_lt, big_p_eq = _class_weight_to(pos_cum, ranks[2], ranks[3])
        c_o = big_n_lt + 0.5 * big_n_eq
        d_o = (total_pos - big_p_lt - big_p_eq) + 0.5 * big_p_eq
        r_here = r_neg[ranks[0]] + 0.5 * (r_neg[ranks[1]] - r_neg[ranks[0]])
        q_here = (q_total - q_pos[ranks[3]]) + 0.5 * (q_pos[ranks[3]] - q_pos[ranks[2]])
        for j in range(n_touched):
            g = touched[j]
            n_eq = neg_in_block[g]
            p_eq = pos_in_block[g]
            c_g = neg_below[g] + 0.5 * n_eq
            d_g = (cells[g, 1] - pos_below[g] - p_eq) + 0.5 * p_eq
            _add_term(sums, lo, g, 0, p_eq, c_g, c_o)
            _add_term(sums, lo, g, 1, p_eq, c_o, 1.0)
            _add_term(sums, lo, g, 2, p_eq, c_o - c_g, c_o)
            _add_term(sums, lo, g, 3, p_eq, r_here, 1.0)
            _add_term(sums, lo, g, 4, n_eq, d_g, d_o)
            _add_term(sums, lo, g, 5, n_eq, d_o, 1.0)
            _add_term(sums, lo, g, 6, n_eq, d_o - d_g, d_o)
            _add_term(sums, lo, g, 7, n_eq, q_here, 1.0)
            neg_below[g] += n_eq
            pos_below[g] += p_eq
            neg_in_block[g] = 0.0
            pos_in_block[g] = 0.0
            is_touched[g] = False
    return sums


@njit(cache=True, nogil=True)
def missing_bits(codes):
    """Each subgroup's unannotated rows (code < 0) of int8 ``codes`` (n, k), as bits:
    (k, ceil(n / 64)) uint64, bit i % 64 of word i // 64 set when row i is unannotated.
    Rows are read in order (a column at a time would be strided)."""
    n, k = codes.shape
    n_words = (n + 63) // 64
    bits = np.zeros((k, n_words), dtype=np.uint64)
    for w in range(n_words):  # 64 rows at a time, each subgroup's word built in a register
        start = w * 64
        stop = min(n, start + 64)
        for j in range(k):
            word = np.uint64(0)
            for i in range(start, stop):
                if codes[i, j] < 0:
                    word |= np.uint64(1) << np.uint64(i - start)
            bits[j, w] = word
    return bits


@njit(cache=True, nogil=True)
def member_weight_at_or_above(member_keys, member_codes, member_weights, cut_keys, n_codes):
    """Per cut (``cut_keys`` increasing) the weight of each code's memberships whose key is
    at or above the cut (``member_keys`` increasing): two (len(cut_keys), n_codes) float64
    arrays, the sums and their compensation (Neumaier's; the weight is their sum, kept
    apart so that a difference of two such sums keeps its digits). ``member_weights``
    empty: each weighs 1 (the counts are then exact integers, the compensation 0). One walk
    down the memberships for every cut."""
    n_cuts = cut_keys.shape[0]
    out = np.zeros((n_cuts, n_codes), dtype=np.float64)
    out_carry = np.zeros((n_cuts, n_codes), dtype=np.float64)
    total = np.zeros(n_codes, dtype=np.float64)
    carry = np.zeros(n_codes, dtype=np.float64)
    weighted = member_weights.shape[0] > 0
    i = member_keys.shape[0] - 1
    for j in range(n_cuts - 1, -1, -1):
        cut = cut_keys[j]
        while i >= 0 and member_keys[i] >= cut:
            c = member_codes[i]
            w = member_weights[i] if weighted else 1.0
            t = total[c] + w
            if abs(total[c]) >= abs(w):
                carry[c] += (total[c] - t) + w
            else:
                carry[c] += (w - t) + total[c]
            total[c] = t
            i -= 1
        for c in range(n_codes):
            out[j, c] = total[c]
            out_carry[j, c] = carry[c]
    return out, out_carry
