"""Numba kernels behind :mod:`fastbias.intervals` (no pandas here).

DeLong structural components from one sweep
-------------------------------------------
Every metric is a two-sample U-statistic ``theta = P(X > Y) + 1/2 P(X = Y)``
between an "above" sample X and a "below" sample Y (the AEGs are
``1/2 - theta``). DeLong's variance needs, besides ``theta``, the sums of
squared placements ``SQX = sum_x w_x c(x)^2`` with ``c(x)`` the weight of Y
below x (ties 1/2) and ``SQY = sum_y w_y d(y)^2`` with ``d(y)`` the weight of X
above y. For a subgroup g (D-/D+ all negatives/positives, Dg-/Dg+ the
subgroup's cells, B-/B+ the background cells) the five metrics are

====  ===============  ======  ======
col   metric           X       Y
====  ===============  ======  ======
0     subgroup AUC     Dg+     Dg-
1     BPSN AUC         B+      Dg-
2     BNSP AUC         Dg+     B-
3     negative AEG     B-      Dg-      (theta = P(B- > Dg-))
4     positive AEG     B+      Dg+      (theta = P(B+ > Dg+))
====  ===============  ======  ======

Subgroup-side placements are global class placements minus within-subgroup
ones. A background-side sum such as ``sum_{x in B+} c(x)^2`` with
``c(x) = sum_{y in Dg-} w_y k(x, y)`` is the sum over *all* positives minus the
sum over Dg+, and the sum over all positives expands over pairs of subgroup
rows: ``sum_{y, y'} w_y w_y' sum_x w_x k(x, y) k(x, y')``, where the inner sum
is ``W+(> s') + 1/2 W+(= s')`` when ``s_y < s_y' = s'`` and
``W+(> s) + 1/4 W+(= s)`` when the two scores are equal. So one block sweep
over the subgroup rows in score order, with global class weights below/at
each row, gives every sum in ``O(n log n + memberships)``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

N_METRICS = 5
# column blocks of the sums returned by ``delong_subgroup_sums``
U_SUM = 0  # columns 0..4: sum of placements (= U, plain units)
SQ_X = 5  # columns 5..9: sum over X of w * c(x)^2
SQ_Y = 10  # columns 10..14: sum over Y of w * d(y)^2


@njit(cache=True, nogil=True)
def weights_at_bounds(cumulative, lt, le):
    """Weight strictly below and at-or-below, from cumulative weights and rank bounds."""
    m = lt.shape[0]
    below = np.empty(m, dtype=np.float64)
    at_or_below = np.empty(m, dtype=np.float64)
    for r in range(m):
        below[r] = cumulative[lt[r]]
        at_or_below[r] = cumulative[le[r]]
    return below, at_or_below


@njit(cache=True, nogil=True)
def delong_subgroup_sums(id_scores, id_order, id_labels, id_weights, row_ptr, row_groups,
                         neg_below, neg_at_or_below, pos_below, pos_at_or_below,
                         total_neg, total_pos, n_groups):
    """Per subgroup: U, SQX and SQY of the five metrics (see the module docstring).

    ``neg_below[r]``/``neg_at_or_below[r]`` are the weights of all negatives with
    a score below / at or below identity row r's score (likewise for the
    positives). Returns ``(sums, cells)``: sums is (n_groups, 15) float64 with
    the column blocks U_SUM, SQ_X, SQ_Y; cells is (n_groups, 2) with the
    weights of Dg- and Dg+.
    """
    m = id_order.shape[0]
    cells = np.zeros((n_groups, 2), dtype=np.float64)
    for r in range(m):
        label = 1 if id_labels[r] else 0
        for p in range(row_ptr[r], row_ptr[r + 1]):
            cells[row_groups[p], label] += id_weights[r]
    sums = np.zeros((n_groups, 3 * N_METRICS), dtype=np.float64)
    # background "all of the class" parts of SQX[1], SQY[2], SQX[3], SQX[4] and the
    # within-class self parts of SQX[3], SQX[4]
    all_bpsn = np.zeros(n_groups)
    all_bnsp = np.zeros(n_groups)
    all_neg_aeg = np.zeros(n_groups)
    self_neg_aeg = np.zeros(n_groups)
    all_pos_aeg = np.zeros(n_groups)
    self_pos_aeg = np.zeros(n_groups)
    neg_lt = np.zeros(n_groups)  # subgroup negative weight strictly below the block
    pos_lt = np.zeros(n_groups)
    neg_eq = np.zeros(n_groups)  # ... inside the current block
    pos_eq = np.zeros(n_groups)
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    t = 0
    while t < m:
        block_score = id_scores[id_order[t]]
        start = t
        n_touched = 0
        while t < m and id_scores[id_order[t]] == block_score:
            r = id_order[t]
            w = id_weights[r]
            for p in range(row_ptr[r], row_ptr[r + 1]):
                g = row_groups[p]
                if id_labels[r]:
                    pos_eq[g] += w
                else:
                    neg_eq[g] += w
                if not is_touched[g]:
                    is_touched[g] = True
                    touched[n_touched] = g
                    n_touched += 1
            t += 1
        # global class weights around this score (the same for every row of the block)
        r0 = id_order[start]
        big_n_lt = neg_below[r0]
        big_n_eq = neg_at_or_below[r0] - big_n_lt
        big_n_gt = total_neg - neg_at_or_below[r0]
        big_p_lt = pos_below[r0]
        big_p_eq = pos_at_or_below[r0] - big_p_lt
        big_p_gt = total_pos - pos_at_or_below[r0]
        for q in range(start, t):
            r = id_order[q]
            w = id_weights[r]
            for p in range(row_ptr[r], row_ptr[r + 1]):
                g = row_groups[p]
                n_lt = neg_lt[g]
                n_eq = neg_eq[g]
                n_gt = cells[g, 0] - n_lt - n_eq
                p_lt = pos_lt[g]
                p_eq = pos_eq[g]
                p_gt = cells[g, 1] - p_lt - p_eq
                if id_labels[r]:
                    a = n_lt + 0.5 * n_eq  # Dg- below x
                    bnsp = big_n_lt + 0.5 * big_n_eq - a  # B- below x
                    pos_aeg = (big_p_gt + 0.5 * big_p_eq) - (p_gt + 0.5 * p_eq)  # B+ above x
                    sums[g, U_SUM + 0] += w * a
                    sums[g, SQ_X + 0] += w * a * a
                    sums[g, U_SUM + 2] += w * bnsp
                    sums[g, SQ_X + 2] += w * bnsp * bnsp
                    sums[g, U_SUM + 4] += w * pos_aeg
                    sums[g, SQ_Y + 4] += w * pos_aeg * pos_aeg
                    all_bnsp[g] += w * (2.0 * p_gt * (big_n_lt + 0.5 * big_n_eq)
                                        + p_eq * (big_n_lt + 0.25 * big_n_eq))
                    all_pos_aeg[g] += w * (2.0 * p_lt * (big_p_gt + 0.5 * big_p_eq)
                                           + p_eq * (big_p_gt + 0.25 * big_p_eq))
                    own = p_lt + 0.5 * p_eq
                    self_pos_aeg[g] += w * own * own
                else:
                    b = p_gt + 0.5 * p_eq  # Dg+ above y
                    bpsn = big_p_gt + 0.5 * big_p_eq - b  # B+ above y
                    neg_aeg = (big_n_gt + 0.5 * big_n_eq) - (n_gt + 0.5 * n_eq)  # B- above y
                    sums[g, SQ_Y + 0] += w * b * b
                    sums[g, U_SUM + 1] += w * bpsn
                    sums[g, SQ_Y + 1] += w * bpsn * bpsn
                    sums[g, U_SUM + 3] += w * neg_aeg
                    sums[g, SQ_Y + 3] += w * neg_aeg * neg_aeg
                    all_bpsn[g] += w * (2.0 * n_lt * (big_p_gt + 0.5 * big_p_eq)
                                        + n_eq * (big_p_gt + 0.25 * big_p_eq))
                    all_neg_aeg[g] += w * (2.0 * n_lt * (big_n_gt + 0.5 * big_n_eq)
                                           + n_eq * (big_n_gt + 0.25 * big_n_eq))
                    own = n_lt + 0.5 * n_eq
                    self_neg_aeg[g] += w * own * own
        for j in range(n_touched):
            g = touched[j]
            neg_lt[g] += neg_eq[g]
            pos_lt[g] += pos_eq[g]
            neg_eq[g] = 0.0
            pos_eq[g] = 0.0
            is_touched[g] = False
    for g in range(n_groups):
        sums[g, SQ_X + 1] = all_bpsn[g] - sums[g, SQ_X + 0]
        sums[g, SQ_Y + 2] = all_bnsp[g] - sums[g, SQ_Y + 0]
        sums[g, SQ_X + 3] = all_neg_aeg[g] - self_neg_aeg[g]
        sums[g, SQ_X + 4] = all_pos_aeg[g] - self_pos_aeg[g]
    return sums, cells


@njit(cache=True, nogil=True)
def class_placements(neg_sorted, neg_cumw, pos_sorted, pos_cumw):
    """Overall-AUC placements, in each class's sorted order (plain units).

    Returns ``(pos_place, neg_place)``: for every positive the negative weight
    below it (ties 1/2), for every negative the positive weight above it.
    """
    n_neg = neg_sorted.shape[0]
    n_pos = pos_sorted.shape[0]
    pos_place = np.empty(n_pos, dtype=np.float64)
    lt = 0
    le = 0
    for j in range(n_pos):
        s = pos_sorted[j]
        while lt < n_neg and neg_sorted[lt] < s:
            lt += 1
        if le < lt:
            le = lt
        while le < n_neg and neg_sorted[le] <= s:
            le += 1
        pos_place[j] = 0.5 * (neg_cumw[lt] + neg_cumw[le])
    total_pos = pos_cumw[n_pos]
    neg_place = np.empty(n_neg, dtype=np.float64)
    lt = 0
    le = 0
    for j in range(n_neg):
        s = neg_sorted[j]
        while lt < n_pos and pos_sorted[lt] < s:
            lt += 1
        if le < lt:
            le = lt
        while le < n_pos and pos_sorted[le] <= s:
            le += 1
        neg_place[j] = total_pos - 0.5 * (pos_cumw[lt] + pos_cumw[le])
    return pos_place, neg_place


@njit(cache=True, nogil=True)
def merged_placements(c_scores, c_weights, c_skip, s_scores, s_weights, c_is_x,
                      c_out, s_out):
    """Placements of two samples merged in score order (paired test); sequential access.

    Sample "c" is given in increasing score order by ``c_scores``/``c_weights``,
    leaving out the positions flagged in ``c_skip`` (a background cell: a whole
    class minus the subgroup's rows); sample "s" by ``s_scores``/``s_weights``.
    ``c_is_x`` says whether c is the above sample X. Writes the placement of
    each position (Y weight below an X row, X weight above a Y row, ties 1/2)
    into ``c_out``/``s_out`` and returns ``(W_X, W_Y)``. ``O(len(c) + len(s))``.
    """
    nc = c_scores.shape[0]
    ns = s_scores.shape[0]
    w_c = 0.0
    for i in range(nc):
        if not c_skip[i]:
            w_c += c_weights[i]
    w_s = 0.0
    for j in range(ns):
        w_s += s_weights[j]
    w_x = w_c if c_is_x else w_s
    w_y = w_s if c_is_x else w_c
    x_below = 0.0
    y_below = 0.0
    i = 0
    j = 0
    while i < nc or j < ns:
        if j >= ns or (i < nc and c_scores[i] <= s_scores[j]):
            score = c_scores[i]
        else:
            score = s_scores[j]
        c_eq = 0.0
        i_end = i
        while i_end < nc and c_scores[i_end] == score:
            if not c_skip[i_end]:
                c_eq += c_weights[i_end]
            i_end += 1
        s_eq = 0.0
        j_end = j
        while j_end < ns and s_scores[j_end] == score:
            s_eq += s_weights[j_end]
            j_end += 1
        x_eq = c_eq if c_is_x else s_eq
        y_eq = s_eq if c_is_x else c_eq
        x_value = y_below + 0.5 * y_eq  # an X row: Y weight below
        y_value = (w_x - x_below - x_eq) + 0.5 * x_eq  # a Y row: X weight above
        c_value = x_value if c_is_x else y_value
        s_value = y_value if c_is_x else x_value
        for q in range(i, i_end):
            c_out[q] = c_value
        for q in range(j, j_end):
            s_out[q] = s_value
        x_below += x_eq
        y_below += y_eq
        i = i_end
        j = j_end
    return w_x, w_y


@njit(cache=True, nogil=True)
def _accumulate_moments(out, side, weights, skip, place_a, place_b, perm_ab):
    for i in range(weights.shape[0]):
        if skip[i]:
            continue
        w = weights[i]
        a = place_a[i]
        b = place_b[perm_ab[i]]
        out[side, 0] += w * a
        out[side, 1] += w * b
        out[side, 2] += w * a * a
        out[side, 3] += w * b * b
        out[side, 4] += w * a * b


@njit(cache=True, nogil=True)
def paired_moments(c_weights, c_skip, c_place_a, c_place_b, c_perm_ab,
                   s_weights, s_skip, s_place_a, s_place_b, s_perm_ab, c_is_x):
    """Weighted moments of two models' placements over the X and the Y sample.

    Weights, skip flags and ``place_a`` are in model a's score order;
    ``place_b`` in model b's, ``perm_ab[i]`` the model-b position of model a's
    position i. Returns a (2, 5) array: row 0 for X, row 1 for Y, columns
    ``sum w a``, ``sum w b``, ``sum w a^2``, ``sum w b^2``, ``sum w a b``.
    """
    out = np.zeros((2, 5))
    c_side = 0 if c_is_x else 1
    _accumulate_moments(out, c_side, c_weights, c_skip, c_place_a, c_place_b, c_perm_ab)
    _accumulate_moments(out, 1 - c_side, s_weights, s_skip, s_place_a, s_place_b, s_perm_ab)
    return out


# Poisson(1) by inversion of a 32-bit uniform integer u: K = #{k : u >= THRESHOLD[k]} with
# THRESHOLD[k] = round(P(K <= k) * 2**32). Thresholds at or above 2**32 can never be reached
# (P(K >= 13) is below 2**-32), so they are dropped; each probability is exact to 2**-32.
def _poisson_one_thresholds():
    thresholds = []
    term = np.exp(-1.0)
    total = 0.0
    for k in range(40):
        total += term
        term /= k + 1
        threshold = round(total * 2.0 ** 32)
        if threshold >= 2 ** 32:
            break
        thresholds.append(threshold)
    return np.array(thresholds, dtype=np.uint64)


POISSON_ONE_THRESHOLDS = _poisson_one_thresholds()


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def _poisson_one(key, row):
    """The Poisson(1) count of ``row`` in the replicate with 64-bit ``key``.

    Counter-based: the SplitMix64 output for counter ``row`` (its 32 high bits
    as a uniform integer) inverted through the threshold table, so a row's
    count can be computed in any order and equals what
    :func:`poisson_counts` gives for it.
    """
    z = key + np.uint64(row) * _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    u = (z ^ (z >> np.uint64(31))) >> np.uint64(32)
    k = np.uint8(0)
    for j in range(POISSON_ONE_THRESHOLDS.shape[0]):  # branch-free: loops over rows vectorize
        k += np.uint8(u >= POISSON_ONE_THRESHOLDS[j])
    return k


@njit(cache=True, nogil=True)
def poisson_counts(key, out):
    """``out[i]`` = the Poisson(1) count of row i in the replicate with ``key`` (uint8)."""
    for i in range(out.shape[0]):
        out[i] = _poisson_one(key, i)
    return out


@njit(cache=True, nogil=True)
def class_prefix_of_replicate(key, rows_sorted, draws, cumulative, counts):
    """The replicate's counts of ``rows_sorted`` (a class in score order) and their prefix sums.

    Draws every count into ``draws`` (uint8 scratch of the same length; the
    loop has no branch, so it vectorizes), then writes ``cumulative`` (length
    + 1, from 0) and, unless ``counts`` is empty, ``counts[j]`` (int64). Reads
    the rows in order: no gather of a count array.
    """
    for j in range(rows_sorted.shape[0]):
        draws[j] = _poisson_one(key, rows_sorted[j])
    with_counts = counts.shape[0] > 0
    cumulative[0] = 0
    total = np.int64(0)
    for j in range(rows_sorted.shape[0]):
        c = np.int64(draws[j])
        if with_counts:
            counts[j] = c
        total += c
        cumulative[j + 1] = total


@njit(cache=True, nogil=True)
def counts_of_replicate(key, rows, out):
    """``out[j]`` (int64) = the replicate's count of ``rows[j]``."""
    for j in range(rows.shape[0]):
        out[j] = _poisson_one(key, rows[j])
    return out


@njit(cache=True, nogil=True)
def poisson_one_counts(uniform_u32, out):
    """``out[i] = K_i ~ Poisson(1)`` (uint8) by inversion of the uniform 32-bit integers given.

    Counting the thresholds passed, with the (global, so compile-time
    constant) threshold table, has no data-dependent branch: 20x faster than
    stopping at the first threshold not passed.
    """
    for i in range(out.shape[0]):
        u = np.uint64(uniform_u32[i])
        k = 0
        for j in range(POISSON_ONE_THRESHOLDS.shape[0]):
            k += u >= POISSON_ONE_THRESHOLDS[j]
        out[i] = k
    return out


@njit(cache=True, nogil=True)
def class_count_prefix(counts, rows_sorted):
    """Integer weights ``counts[rows_sorted]`` (int64) and their prefix sums (length + 1)."""
    m = rows_sorted.shape[0]
    cumulative = np.empty(m + 1, dtype=np.int64)
    weights = np.empty(m, dtype=np.int64)
    cumulative[0] = 0
    for j in range(m):
        c = np.int64(counts[rows_sorted[j]])
        weights[j] = c
        cumulative[j + 1] = cumulative[j] + c
    return cumulative, weights
