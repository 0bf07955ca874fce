"""Numba kernels behind :mod:`fastbias.intervals` (no pandas here).

The paired DeLong test's placements and moments, the bootstrap's
counter-based Poisson(1) counts and its walk of several replicates at once. The DeLong sums of one model come from the
sweep stage's walks (``fastbias.sweep._kernels``, section "DeLong placement
sums").
"""
from __future__ import annotations

import numpy as np
from numba import njit


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


@njit(inline="always")
def _row_of(weights, place_a, place_b, perm_ab, i):
    """Row i's weight and placements under models a (its order) and b (``perm_ab``)."""
    return weights[i], place_a[i], place_b[perm_ab[i]]


@njit(cache=True, nogil=True)
def _accumulate_moments(out, side, weights, skip, place_a, place_b, perm_ab):
    """Row ``side`` of :func:`paired_moments`: two passes, the sums, then the centred ones
    (each reads row i's weight and two placements as :func:`_row_of` gives them)."""
    total = 0.0
    sum_a = 0.0
    sum_b = 0.0
    sum_d = 0.0
    for i in range(weights.shape[0]):
        if skip[i]:
            continue
        w, a, b = _row_of(weights, place_a, place_b, perm_ab, i)
        total += w
        sum_a += w * a
        sum_b += w * b
        sum_d += w * (a - b)
    out[side, 0] = total
    out[side, 1] = sum_a
    out[side, 2] = sum_b
    out[side, 3] = sum_d
    if total <= 0.0:
        return
    mean_a = sum_a / total
    mean_b = sum_b / total
    mean_d = sum_d / total
    for col in (8, 10, 12):
        out[side, col] = np.inf
        out[side, col + 1] = -np.inf
    for i in range(weights.shape[0]):
        if skip[i]:
            continue
        w, a, b = _row_of(weights, place_a, place_b, perm_ab, i)
        da = a - mean_a
        db = b - mean_b
        dd = (a - b) - mean_d
        out[side, 4] += w * da * da
        out[side, 5] += w * db * db
        out[side, 6] += w * da * db
        out[side, 7] += w * dd * dd
        if w == 0.0:
            continue  # (adds nothing: its placements bound nothing)
        for col, value in ((8, a), (10, b), (12, a - b)):
            out[side, col] = min(out[side, col], value)
            out[side, col + 1] = max(out[side, col + 1], value)


@njit(cache=True, nogil=True)
def paired_moments(c_weights, c_skip, c_place_a, c_place_b, c_perm_ab,
                   s_weights, s_skip, s_place_a, s_place_b, s_perm_ab, c_is_x):
    """Weighted moments of two models' placements over the X and the Y sample.

    Weights, skip flags and ``place_a`` are in model a's score order;
    ``place_b`` in model b's, ``perm_ab[i]`` the model-b position of model a's
    position i. Returns a (2, 14) array: row 0 for X, row 1 for Y, columns
    ``sum w``, ``sum w a``, ``sum w b``, ``sum w (a - b)``, then the centred sums
    ``sum w (a - a')^2``, ``sum w (b - b')^2``, ``sum w (a - a')(b - b')`` and
    ``sum w (a - b - d')^2`` (``a'``, ``b'``, ``d'`` the weighted means of ``a``, ``b``,
    ``a - b``), then the least and the largest ``a``, ``b`` and ``a - b``.
    Centred sums, not ``sum w a^2 - (sum w a)^2 / sum w``: the difference of two models'
    placements is summed as such, so that a variance of the difference far below the
    models' own is not lost to cancellation (a review found z = -4.5e7 for a difference
    whose exact standard error is 0).
    """
    out = np.zeros((2, 14))
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
def _mix64(z):
    """SplitMix64's output function: a bijective mix of a 64-bit integer."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(inline="always")
def _poisson_one(key, row):
    """The Poisson(1) count of ``row`` in the replicate with 64-bit ``key``.

    Counter-based: the SplitMix64 output for counter ``row`` (its 32 high bits
    as a uniform integer) inverted through the threshold table, so a row's
    count can be computed in any order and equals what
    :func:`poisson_counts` gives for it.
    """
    u = _mix64(key + np.uint64(row) * _GOLDEN) >> np.uint64(32)
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


#: the replicates one walk of the sorts counts together (:func:`replicate_counts_by_walk`),
#: at most, and at least (a walk of fewer is padded with keys whose counts are not used):
#: the loops over them vectorize from 8 on (1.8M x 24 on one core, ms a replicate: 4 lanes
#: 13.1, 8 lanes 4.8, 16 lanes 3.8, 32 lanes 3.3; one replicate at a time 10)
REPLICATE_LANES = 16
MIN_REPLICATE_LANES = 8


#: rows whose counts a walk draws at once, for every replicate (a window along one array of
#: rows: this many rows x the replicates, bytes)
DRAW_WINDOW_ROWS = 2048


@njit(inline="always")
def _window_at(keys, rows, i, window, at):
    """Where ``rows[i]``'s counts lie in ``window`` (the counts of the rows from ``at[0]`` on,
    drawn again from ``i`` on when ``i`` is past them: ``i`` only grows along one array of
    rows, so each row is drawn once)."""
    if i >= at[0] + DRAW_WINDOW_ROWS:
        at[0] = i
        for q in range(min(DRAW_WINDOW_ROWS, rows.shape[0] - i)):
            row = rows[i + q]
            for r in range(keys.shape[0]):
                window[q, r] = _poisson_one(keys[r], row)
    return i - at[0]


# (the class walks below are compiled on their own and called, not inlined: inlined at their
# six calls each, they made the two replicate walks compile for 5.7 and 14 s instead of 3.4 and
# 8.6 s on a 2-core VM, and they ran no faster)
@njit(cache=True, nogil=True)
def _add_draws(keys, rows, start, stop, total, window, at):
    """``total[r] +=`` replicate ``keys[r]``'s counts of ``rows[start:stop]``."""
    i = start
    while i < stop:
        q = _window_at(keys, rows, i, window, at)
        n = min(stop - i, DRAW_WINDOW_ROWS - q)
        for p in range(q, q + n):
            for r in range(keys.shape[0]):
                total[r] += np.int64(window[p, r])
        i += n


@njit(inline="always")
def _draw_window(lanes):
    """A window of counts and where it starts (nowhere yet)."""
    at = np.empty(1, dtype=np.int64)
    at[0] = -2 * DRAW_WINDOW_ROWS
    return np.empty((DRAW_WINDOW_ROWS, lanes), dtype=np.uint8), at


#: the columns of :func:`replicate_counts_by_walk`'s counts, in order: each subgroup's
#: negatives and positives, then twice the pairs counted for the subgroup AUC, BPSN, BNSP
#: and the two AEGs (before the within-subgroup pairs are taken out of the last four)
REPLICATE_COLUMNS = ("subgroup_negatives", "subgroup_positives", "twice_subgroup_u",
                     "twice_bpsn_u", "twice_bnsp_u", "twice_negative_background_above_u",
                     "twice_positive_background_above_u")


# (the walks copy, clear and negate their rows of replicates with these loops, not with
# ``a[:] = b``, ``a[:] = 0.0`` or ``a *= -1.0``: numba compiles each such array statement into a
# generic routine of its own, which made the two walks take twice as long to compile)
@njit(cache=True, nogil=True)
def _copy_into(dst, src):
    """``dst[:] = src``."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True, nogil=True)
def _zero(a):
    """``a[:] = 0``."""
    for i in range(a.shape[0]):
        a[i] = 0


@njit(cache=True, nogil=True)
def _negate(a):
    """``a *= -1`` (exact)."""
    for i in range(a.shape[0]):
        a[i] = -a[i]


@njit(inline="always")
def _scan_to(keys, k, q, inclusive):
    """The first index from ``k`` on whose key is above ``q`` (``inclusive``) or not below
    it: the walk reads every row it passes (their counts), so it scans rather than gallops."""
    n = keys.shape[0]
    while k < n and (keys[k] <= q if inclusive else keys[k] < q):
        k += 1
    return k


@njit(inline="always")
def _next_key(member_keys, t, pos_keys, j):
    """The next score a replicate walk stops at: the smaller of the memberships' next
    (``member_keys[t]``) and the positives' next (``pos_keys[j]``), where either is left."""
    if j == pos_keys.shape[0] or (t < member_keys.shape[0] and member_keys[t] < pos_keys[j]):
        return member_keys[t]
    return pos_keys[j]


@njit(cache=True, nogil=True)
def replicate_counts_by_walk(member_keys, member_codes, member_rows, neg_keys, neg_rows,
                             pos_keys, pos_rows, keys, n_groups):
    """The counts of the Poisson replicates ``keys`` (R of them), in one walk of the sorts,
    each row's counts drawn as the walk reaches it (:func:`_poisson_one`, in windows of
    DRAW_WINDOW_ROWS rows: no array of counts as long as the rows is made).

    The memberships (sorted ``member_keys``; ``member_codes`` ``2 * subgroup + label``; their
    rows) and each class (sorted keys and rows) are walked in step in increasing score
    order: the memberships' blocks and the positives together move a running sum of each
    class's counts along it. The walk's comparisons and branches are shared by the
    replicates, whose sums are made side by side; the terms with a class total (known when
    the walk ends) are added at the end. Returns ``(counts (R, n_groups, 7) in the order of
    REPLICATE_COLUMNS, negative totals (R,), positive totals (R,), twice the overall U
    (R,))``, exact int64: each replicate's the same however many are walked together.
    """
    # (the lanes as a number known when the walk runs, not compiled in: LLVM then vectorizes
    # the loops over them, where the constant 8 made it unroll them, 4 times slower)
    lanes = keys.shape[0]
    neg_window, neg_at = _draw_window(lanes)
    pos_window, pos_at = _draw_window(lanes)
    u_window, u_at = _draw_window(lanes)  # (the positives again, for the overall U)
    member_window, member_at = _draw_window(lanes)
    counts = np.zeros((n_groups, 7, lanes), dtype=np.int64)
    # each subgroup's counts in the current block, by class, and its negatives below it
    per_group = np.zeros((3, n_groups, lanes), dtype=np.int64)
    neg_in_block, pos_in_block, neg_strictly_below = per_group[0], per_group[1], per_group[2]
    touched = np.empty(n_groups, dtype=np.int64)
    is_touched = np.zeros(n_groups, dtype=np.bool_)
    # each class's counts below the current key (lt) and at or below it (le); twice the
    # overall U
    running = np.zeros((5, lanes), dtype=np.int64)
    neg_lt, neg_le, pos_lt, pos_le, twice_u = (running[0], running[1], running[2], running[3],
                                               running[4])
    # one walk along the negatives answers two sets of queries in increasing order: the
    # memberships' blocks and the positives (for the overall U)
    neg_k = pos_k = 0
    t = j = 0
    n_members = member_keys.shape[0]
    n_pos = pos_keys.shape[0]
    while t < n_members or j < n_pos:
        key = _next_key(member_keys, t, pos_keys, j)
        end = _scan_to(neg_keys, neg_k, key, False)
        _add_draws(keys, neg_rows, neg_k, end, neg_lt, neg_window, neg_at)
        neg_end = _scan_to(neg_keys, end, key, True)
        _copy_into(neg_le, neg_lt)
        _add_draws(keys, neg_rows, end, neg_end, neg_le, neg_window, neg_at)
        if t < n_members and member_keys[t] == key:
            n_touched = 0
            while t < n_members and member_keys[t] == key:  # the block: each subgroup's draws
                code = member_codes[t]
                g = code >> 1
                q = _window_at(keys, member_rows, t, member_window, member_at)
                block = pos_in_block if code & 1 else neg_in_block
                for r in range(lanes):
                    block[g, r] += np.int64(member_window[q, r])
                if not is_touched[g]:
                    is_touched[g] = True
                    touched[n_touched] = g
                    n_touched += 1
                t += 1
            end = _scan_to(pos_keys, pos_k, key, False)
            _add_draws(keys, pos_rows, pos_k, end, pos_lt, pos_window, pos_at)
            pos_end = _scan_to(pos_keys, end, key, True)
            _copy_into(pos_le, pos_lt)
            _add_draws(keys, pos_rows, end, pos_end, pos_le, pos_window, pos_at)
            for jj in range(n_touched):
                g = touched[jj]
                for r in range(lanes):
                    n_neg = neg_in_block[g, r]
                    n_pos_g = pos_in_block[g, r]
                    neg_below2 = neg_lt[r] + neg_le[r]
                    pos_below2 = pos_lt[r] + pos_le[r]
                    counts[g, 0, r] += n_neg
                    counts[g, 1, r] += n_pos_g
                    counts[g, 2, r] += n_pos_g * (2 * neg_strictly_below[g, r] + n_neg)
                    # (less 2 x the class total x the cell: added at the end)
                    counts[g, 3, r] -= n_neg * pos_below2
                    counts[g, 4, r] += n_pos_g * neg_below2
                    counts[g, 5, r] -= n_neg * neg_below2
                    counts[g, 6, r] -= n_pos_g * pos_below2
                    neg_strictly_below[g, r] += n_neg
                    neg_in_block[g, r] = 0
                    pos_in_block[g, r] = 0
                is_touched[g] = False
            pos_k = pos_end
            _copy_into(pos_lt, pos_le)
        while j < n_pos and pos_keys[j] == key:
            q = _window_at(keys, pos_rows, j, u_window, u_at)
            for r in range(lanes):
                twice_u[r] += np.int64(u_window[q, r]) * (neg_lt[r] + neg_le[r])
            j += 1
        neg_k = neg_end
        _copy_into(neg_lt, neg_le)
    # the rest of each class: its totals
    _add_draws(keys, neg_rows, neg_k, neg_rows.shape[0], neg_lt, neg_window, neg_at)
    _add_draws(keys, pos_rows, pos_k, pos_rows.shape[0], pos_lt, pos_window, pos_at)
    out = np.empty((lanes, n_groups, 7), dtype=np.int64)
    for r in range(lanes):
        for g in range(n_groups):
            for c in range(7):
                out[r, g, c] = counts[g, c, r]
            out[r, g, 3] += 2 * pos_lt[r] * out[r, g, 0]
            out[r, g, 5] += 2 * neg_lt[r] * out[r, g, 0]
            out[r, g, 6] += 2 * pos_lt[r] * out[r, g, 1]
    return out, neg_lt, pos_lt, twice_u


# --- the weighted bootstrap: several replicates in one walk, in double-double ------------------
# (numba's cache does not follow a callee into another file: these double-double steps are
# this module's own, the same arithmetic as the sweep stage's)


@njit(inline="always")
def _dd_add(a_hi, a_lo, b_hi, b_lo):
    """``(a_hi, a_lo) + (b_hi, b_lo)`` in double-double (Knuth's two-sum, then the low
    parts)."""
    s = a_hi + b_hi
    bb = s - a_hi
    e = (a_hi - (s - bb)) + (b_hi - bb)
    e += a_lo + b_lo
    hi = s + e
    return hi, e - (hi - s)


@njit(inline="always")
def _dd_mul(a_hi, a_lo, b_hi, b_lo):
    """``(a_hi, a_lo) * (b_hi, b_lo)`` in double-double (Dekker's product, Veltkamp's
    split)."""
    p = a_hi * b_hi
    c = 134217729.0 * a_hi  # 2**27 + 1
    x_hi = c - (c - a_hi)
    x_lo = a_hi - x_hi
    c = 134217729.0 * b_hi
    y_hi = c - (c - b_hi)
    y_lo = b_hi - y_hi
    e = ((x_hi * y_hi - p) + x_hi * y_lo + x_lo * y_hi) + x_lo * y_lo
    e += a_hi * b_lo + a_lo * b_hi
    hi = p + e
    return hi, e - (hi - p)


@njit(inline="always")
def _weighted_window_at(keys, rows, base, scale, i, window, base_window, at):
    """:func:`_window_at`, and ``base_window[q]`` the base weight of the window's row q
    divided by ``scale`` (a power of two: exact), gathered when the window moves."""
    if i >= at[0] + DRAW_WINDOW_ROWS:
        for q in range(min(DRAW_WINDOW_ROWS, rows.shape[0] - i)):
            base_window[q] = base[rows[i + q]] / scale
    return _window_at(keys, rows, i, window, at)


@njit(cache=True, nogil=True)
def _add_weights(keys, rows, base, scale, start, stop, hi, lo, n_weighted, window, base_window,
                 at):
    """``(hi[r], lo[r]) +=`` replicate ``keys[r]``'s weights of ``rows[start:stop]`` (its
    count times the row's base weight over ``scale``), one at a time, in double-double;
    ``n_weighted[r] +=`` how many of them are above 0."""
    i = start
    while i < stop:
        q = _weighted_window_at(keys, rows, base, scale, i, window, base_window, at)
        n = min(stop - i, DRAW_WINDOW_ROWS - q)
        for p in range(q, q + n):
            b = base_window[p]
            for r in range(keys.shape[0]):
                w = np.float64(window[p, r]) * b
                hi[r], lo[r] = _dd_add(hi[r], lo[r], w, 0.0)
                n_weighted[r] += np.int64(w > 0.0)
        i += n


@njit(cache=True, nogil=True)
def _weights_to(keys, sorted_scores, rows, base, scale, k, key, running, at_row, n_weighted,
                window, base_window, at):
    """One class walked on from its row ``k`` to the score ``key``: ``running[:, at_row]``
    (high and low parts, each replicate's) gets its weight below the score, ``running[:,
    at_row + 1]`` at or below it, and ``running[:, 4 + at_row // 2]`` the two added (twice
    the weight below, ties 1/2). Returns where the walk stops (past the score's rows)."""
    lt_hi, lt_lo = running[0, at_row], running[1, at_row]
    le_hi, le_lo = running[0, at_row + 1], running[1, at_row + 1]
    end = _scan_to(sorted_scores, k, key, False)
    _add_weights(keys, rows, base, scale, k, end, lt_hi, lt_lo, n_weighted, window,
                 base_window, at)
    stop = _scan_to(sorted_scores, end, key, True)
    _copy_into(le_hi, lt_hi)
    _copy_into(le_lo, lt_lo)
    _add_weights(keys, rows, base, scale, end, stop, le_hi, le_lo, n_weighted, window,
                 base_window, at)
    two_hi, two_lo = running[0, 4 + at_row // 2], running[1, 4 + at_row // 2]
    for r in range(keys.shape[0]):
        two_hi[r], two_lo[r] = _dd_add(lt_hi[r], lt_lo[r], le_hi[r], le_lo[r])
    return stop


@njit(inline="always")
def _add_cell(weight_hi, weight_lo, rows, window, q, b, lanes):
    """One row's weight in each replicate (its count in ``window[q]`` times ``b``) added to a
    subgroup's cell, and to its rows weighing more than 0."""
    for r in range(lanes):
        w = np.float64(window[q, r]) * b
        weight_hi[r], weight_lo[r] = _dd_add(weight_hi[r], weight_lo[r], w, 0.0)
        rows[r] += np.int64(w > 0.0)


@njit(inline="always")
def _add_products(hi, lo, a_hi, a_lo, b_hi, b_lo, lanes):
    """``(hi[r], lo[r]) += (a_hi[r], a_lo[r]) * (b_hi[r], b_lo[r])`` for every replicate."""
    for r in range(lanes):
        p_hi, p_lo = _dd_mul(a_hi[r], a_lo[r], b_hi[r], b_lo[r])
        hi[r], lo[r] = _dd_add(hi[r], lo[r], p_hi, p_lo)


@njit(cache=True, nogil=True)
def replicate_weights_by_walk(id_sorted, id_rows, id_labels, id_ptr, id_groups, neg_sorted,
                              neg_rows, pos_sorted, pos_rows, base, scale, keys, n_groups):
    """The weighted counts of the Poisson replicates ``keys`` (R of them), in one walk of the
    row order, every sum a double-double pair: what the weighted sweep gives each replicate,
    a row weighing its count (:func:`_poisson_one`, drawn as the walk reaches it) times
    ``base[row] / scale`` (``scale`` a power of two).

    The identity rows (scores ``id_sorted`` increasing, rows ``id_rows``, labels
    ``id_labels``, subgroups ``id_groups[id_ptr[t]:id_ptr[t + 1]]``) and each class (sorted
    scores and rows) are walked in step, as :func:`replicate_counts_by_walk` walks them;
    each replicate's sums are its own, added in the same order however many are walked
    together. Returns ``(hi, lo, weighted_rows, totals, n_weighted, twice_u)``: the counts
    (R, n_groups, 7) in the layout of the sweep's ``member_weights_in_range`` once joined
    (the within-subgroup pairs still in the U columns, for ``finish_member_weights``), each
    subgroup's rows of each class weighing more than 0 (R, n_groups, 2), each class's total
    weight (R, 2, 2: class, then high and low part), its rows weighing more than 0 (R, 2),
    and twice the overall U (R, 2).
    """
    lanes = keys.shape[0]
    neg_window, neg_at = _draw_window(lanes)
    pos_window, pos_at = _draw_window(lanes)
    u_window, u_at = _draw_window(lanes)  # (the positives again, for the overall U)
    id_window, id_at = _draw_window(lanes)
    bases = np.empty((4, DRAW_WINDOW_ROWS))  # (the base weights of each window's rows)
    neg_base, pos_base, u_base, id_base = bases[0], bases[1], bases[2], bases[3]
    # the counts (high and low parts) as the subgroup's columns, each a row of the replicates
    hi = np.zeros((n_groups, 7, lanes))
    lo = np.zeros((n_groups, 7, lanes))
    weighted_rows = np.zeros((n_groups, 2, lanes), dtype=np.int64)
    # each subgroup's weight of each class in the current block, and of negatives below it
    block_hi = np.zeros((n_groups, 3, lanes))
    block_lo = np.zeros((n_groups, 3, lanes))
    has = np.zeros((n_groups, 2), dtype=np.bool_)
    touched = np.empty(n_groups, dtype=np.int64)
    # each class's weight below the current score (lt) and at or below it (le), twice each
    # class's weight below it (ties 1/2: lt + le), and twice the overall U
    running = np.zeros((2, 7, lanes))
    neg_lt_hi, neg_le_hi, pos_lt_hi, pos_le_hi = running[0, 0], running[0, 1], running[0, 2], \
        running[0, 3]
    neg_lt_lo, neg_le_lo, pos_lt_lo, pos_le_lo = running[1, 0], running[1, 1], running[1, 2], \
        running[1, 3]
    n2_hi, p2_hi, u_hi = running[0, 4], running[0, 5], running[0, 6]
    n2_lo, p2_lo, u_lo = running[1, 4], running[1, 5], running[1, 6]
    n_weighted = np.zeros((2, lanes), dtype=np.int64)
    neg_k = pos_k = 0
    t = j = 0
    n_id = id_sorted.shape[0]
    n_pos = pos_sorted.shape[0]
    while t < n_id or j < n_pos:
        key = _next_key(id_sorted, t, pos_sorted, j)
        neg_end = _weights_to(keys, neg_sorted, neg_rows, base, scale, neg_k, key, running,
                              0, n_weighted[0], neg_window, neg_base, neg_at)
        if t < n_id and id_sorted[t] == key:
            pos_end = _weights_to(keys, pos_sorted, pos_rows, base, scale, pos_k, key, running,
                                  2, n_weighted[1], pos_window, pos_base, pos_at)
            n_touched = 0
            while t < n_id and id_sorted[t] == key:  # the block: each subgroup's weights
                q = _weighted_window_at(keys, id_rows, base, scale, t, id_window, id_base,
                                        id_at)
                c = 1 if id_labels[t] else 0
                for p in range(id_ptr[t], id_ptr[t + 1]):
                    g = id_groups[p]
                    if not (has[g, 0] or has[g, 1]):
                        touched[n_touched] = g
                        n_touched += 1
                    has[g, c] = True
                    _add_cell(block_hi[g, c], block_lo[g, c], weighted_rows[g, c], id_window, q,
                              id_base[q], lanes)
                t += 1
            for jj in range(n_touched):
                g = touched[jj]
                h, l_ = hi[g], lo[g]
                nb_hi, nb_lo = block_hi[g, 0], block_lo[g, 0]
                pb_hi, pb_lo = block_hi[g, 1], block_lo[g, 1]
                below_hi, below_lo = block_hi[g, 2], block_lo[g, 2]
                if has[g, 1]:
                    # the subgroup's pairs: its negatives below and half those tied, twice
                    for r in range(lanes):
                        x_hi, x_lo = _dd_add(2.0 * below_hi[r], 2.0 * below_lo[r], nb_hi[r],
                                             nb_lo[r])
                        p_hi, p_lo = _dd_mul(pb_hi[r], pb_lo[r], x_hi, x_lo)
                        h[2, r], l_[2, r] = _dd_add(h[2, r], l_[2, r], p_hi, p_lo)
                        h[1, r], l_[1, r] = _dd_add(h[1, r], l_[1, r], pb_hi[r], pb_lo[r])
                    _add_products(h[4], l_[4], pb_hi, pb_lo, n2_hi, n2_lo, lanes)
                    # (less twice the class total times the cell, here and below: added at
                    # the end)
                    _negate(pb_hi)
                    _negate(pb_lo)
                    _add_products(h[6], l_[6], pb_hi, pb_lo, p2_hi, p2_lo, lanes)
                    _zero(pb_hi)
                    _zero(pb_lo)
                if has[g, 0]:
                    for r in range(lanes):
                        h[0, r], l_[0, r] = _dd_add(h[0, r], l_[0, r], nb_hi[r], nb_lo[r])
                        below_hi[r], below_lo[r] = _dd_add(below_hi[r], below_lo[r], nb_hi[r],
                                                           nb_lo[r])
                    _negate(nb_hi)
                    _negate(nb_lo)
                    _add_products(h[3], l_[3], nb_hi, nb_lo, p2_hi, p2_lo, lanes)
                    _add_products(h[5], l_[5], nb_hi, nb_lo, n2_hi, n2_lo, lanes)
                    _zero(nb_hi)
                    _zero(nb_lo)
                has[g, 0] = False
                has[g, 1] = False
            pos_k = pos_end
            _copy_into(pos_lt_hi, pos_le_hi)
            _copy_into(pos_lt_lo, pos_le_lo)
        while j < n_pos and pos_sorted[j] == key:
            q = _weighted_window_at(keys, pos_rows, base, scale, j, u_window, u_base, u_at)
            b = u_base[q]
            for r in range(lanes):
                p_hi, p_lo = _dd_mul(n2_hi[r], n2_lo[r], np.float64(u_window[q, r]) * b, 0.0)
                u_hi[r], u_lo[r] = _dd_add(u_hi[r], u_lo[r], p_hi, p_lo)
            j += 1
        neg_k = neg_end
        _copy_into(neg_lt_hi, neg_le_hi)
        _copy_into(neg_lt_lo, neg_le_lo)
    # the rest of each class: its totals
    _add_weights(keys, neg_rows, base, scale, neg_k, neg_rows.shape[0], neg_lt_hi, neg_lt_lo,
                 n_weighted[0], neg_window, neg_base, neg_at)
    _add_weights(keys, pos_rows, base, scale, pos_k, pos_rows.shape[0], pos_lt_hi, pos_lt_lo,
                 n_weighted[1], pos_window, pos_base, pos_at)
    out_hi = np.empty((lanes, n_groups, 7))
    out_lo = np.empty((lanes, n_groups, 7))
    out_rows = np.empty((lanes, n_groups, 2), dtype=np.int64)
    totals = np.empty((lanes, 2, 2))
    out_weighted = np.empty((lanes, 2), dtype=np.int64)
    twice_u = np.empty((lanes, 2))
    for r in range(lanes):
        for g in range(n_groups):
            # twice the class total times the cell: the rest of three U columns
            for column in (3, 5, 6):
                cell = 1 if column == 6 else 0
                if column == 5:
                    total_hi, total_lo = neg_lt_hi[r], neg_lt_lo[r]
                else:
                    total_hi, total_lo = pos_lt_hi[r], pos_lt_lo[r]
                p_hi, p_lo = _dd_mul(2.0 * total_hi, 2.0 * total_lo, hi[g, cell, r],
                                     lo[g, cell, r])
                hi[g, column, r], lo[g, column, r] = _dd_add(hi[g, column, r],
                                                             lo[g, column, r], p_hi, p_lo)
            for c in range(7):
                out_hi[r, g, c] = hi[g, c, r]
                out_lo[r, g, c] = lo[g, c, r]
            out_rows[r, g, 0] = weighted_rows[g, 0, r]
            out_rows[r, g, 1] = weighted_rows[g, 1, r]
        totals[r, 0, 0] = neg_lt_hi[r]
        totals[r, 0, 1] = neg_lt_lo[r]
        totals[r, 1, 0] = pos_lt_hi[r]
        totals[r, 1, 1] = pos_lt_lo[r]
        out_weighted[r, 0] = n_weighted[0, r]
        out_weighted[r, 1] = n_weighted[1, r]
        twice_u[r, 0] = u_hi[r]
        twice_u[r, 1] = u_lo[r]
    return out_hi, out_lo, out_rows, totals, out_weighted, twice_u

# --- permutation p-values of small cells (significance tests) ----------------------------
# Under "no bias" in its sharp form (within each class, a subgroup's rows are a random subset
# of the class, whatever their scores), holding one of the subgroup's cells fixed, the other is a
# uniformly random subset of its class of the same number of rows. A draw of that cell gives
# three metrics at once: with S the drawn cell of class C, F the subgroup's fixed cell of the
# other class O, and per drawn position q its weight w, its placement against all of O
# (``class_place``), against F (``f(q)``, found by binary search) and against the rest of its own
# class above it (``class_above``):
#   subgroup AUC = sum w f / (W_S W_F)
#   cross AUC    = (sum w class_place - sum w f) / (W_S (W_O - W_F))  (BNSP if C is the positives,
#                                                                    BPSN if the negatives)
#   AEG          = 1/2 - (sum w class_above - (W_S^2 - sum w^2) / 2) / ((W_C - W_S) W_S)
# so a draw costs O(|S| log |F|), independent of the number of rows.


@njit(inline="always")
def _stream_key(seed):
    """The 64-bit key of the draw stream of ``seed``."""
    return _mix64(np.uint64(seed) * _GOLDEN + np.uint64(1))


@njit(inline="always")
def _draw_below(key, counter, n):
    """The ``counter``-th draw of the stream ``key``: an integer uniform on ``[0, n)`` (53-bit
    uniform scaled, so the bias is below n / 2**53). Counter-based, like the bootstrap's counts,
    so the draws depend on the seed alone: not on threads, nor on whether the kernels are
    compiled."""
    u = _mix64(key + counter * _GOLDEN) >> np.uint64(11)
    return min(np.int64(float(u) * (1.0 / 9007199254740992.0) * n), n - 1)


@njit(inline="always")
def _fixed_weight(fixed_keys, fixed_cum, key, above):
    """Weight of the fixed cell below ``key`` (above it when ``above``), ties 1/2."""
    lt = np.searchsorted(fixed_keys, key, side="left")
    le = np.searchsorted(fixed_keys, key, side="right")
    tied = fixed_cum[le] - fixed_cum[lt]
    if above:
        return (fixed_cum[fixed_cum.shape[0] - 1] - fixed_cum[le]) + 0.5 * tied
    return fixed_cum[lt] + 0.5 * tied


@njit(inline="always")
def _hoeffding_bound(size, distance, center_offset, value_range):
    """Hoeffding's (1963, Theorem 4) bound on P(|mean of ``size`` draws without replacement -
    population mean| >= distance - center_offset) for values in a range of ``value_range``."""
    excess = distance - center_offset
    if excess <= 0.0 or value_range <= 0.0:
        return 1.0
    return min(1.0, 2.0 * np.exp(-2.0 * size * excess * excess / (value_range * value_range)))


@njit(inline="always")
def _distance(numerator, denominator, center):
    """``|numerator / denominator - center|``, NaN where the denominator is 0 (undefined)."""
    return abs(numerator / denominator - center) if denominator > 0 else np.nan


@njit(cache=True, nogil=True)
def permutation_exceedances(class_keys, class_rows, fixed_keys, fixed_cum, fixed_is_above, size,
                            other_total, observed, active, theta, hits, max_draws, seed,
                            class_total, place_total, weighted):
    """Sequential Monte Carlo p-values (Besag & Clifford 1991) of three metrics of one subgroup.

    Draws ``size`` distinct positions of the class (``class_keys`` sorted;
    ``class_rows`` (n, 3) holds each position's placement against the other
    class, against its own class above it and its weight (unweighted: (n, 2), every
    weight 1), side by side so that a drawn position costs one cache line) as the
    subgroup's cell, the other cell fixed
    (``fixed_keys`` sorted, ``fixed_cum`` its prefix weights; ``fixed_is_above``:
    the fixed cell is the positives, so a drawn negative is placed by the
    fixed weight above it). ``other_total`` is the other class's weight,
    ``class_total`` this class's, ``place_total`` the sum over it of
    ``weight x class_place``.
    For each metric j in (subgroup AUC, cross AUC, AEG) with ``active[j]``,
    counts the draws whose distance from the null (``|AUC - theta|``,
    ``|AEG|``) reaches ``observed[j]`` (a draw where the metric is undefined
    counts, conservatively), until ``hits`` of them or ``max_draws`` draws.
    Unweighted, each metric is the mean of per-row values over the drawn cell,
    so Hoeffding's inequality for sampling without replacement bounds the
    exact permutation p-value from above; a metric whose bound is already
    below ``1 / (max_draws + 1)`` is not drawn for.
    Returns (3, 3) float64: the count, the number of draws it took, the bound
    (1 where none applies). The draws come from ``seed`` alone: the same
    result on any thread, compiled or not. A small cell of a large class is drawn by rejecting
    repeats; otherwise by a partial Fisher-Yates shuffle.
    """
    if class_rows.shape[1] < (3 if weighted else 2):
        raise ValueError("class_rows: too few columns")
    out = np.zeros((3, 3), dtype=np.float64)
    n = class_keys.shape[0]
    fixed_total = fixed_cum[fixed_cum.shape[0] - 1]
    done = np.zeros(3, dtype=np.bool_)
    for j in range(3):
        done[j] = not active[j]
        out[j, 2] = 1.0
    if not weighted and size > 0 and size < n:
        # population means of the per-row values: the fixed cell's placement summed over the
        # class (each fixed row counts the class rows on the other side of it), ...
        f_sum = 0.0
        for t in range(fixed_keys.shape[0]):
            key = fixed_keys[t]
            lt = np.searchsorted(class_keys, key, side="left")
            le = np.searchsorted(class_keys, key, side="right")
            f_sum += (lt + 0.5 * (le - lt)) if fixed_is_above else (n - le + 0.5 * (le - lt))
        mean_sub = f_sum / (n * fixed_total) if fixed_total > 0 else 0.5
        mean_cross = (place_total - f_sum) / (n * (other_total - fixed_total)) \
            if other_total > fixed_total else 0.5
        # ... and (the AEG, centred at 0 exactly) values above / (n - size) in [0, (n-1)/(n-size)]
        bounds = (_hoeffding_bound(size, observed[0], abs(mean_sub - theta), 1.0),
                  _hoeffding_bound(size, observed[1], abs(mean_cross - theta), 1.0),
                  _hoeffding_bound(size, observed[2], 0.0, (n - 1.0) / (n - size)))
        for j in range(3):
            if active[j]:
                out[j, 2] = bounds[j]
                if bounds[j] * (max_draws + 1.0) <= 1.0:
                    done[j] = True
    key = _stream_key(seed)
    counter = np.uint64(0)
    by_rejection = 4 * size <= n
    chosen = np.empty(size, dtype=np.int64)
    index = np.empty(0, dtype=np.int64) if by_rejection else np.arange(n)
    tolerance = 1e-12
    draws = 0
    while draws < max_draws:
        if done[0] and done[1] and done[2]:
            break
        draws += 1
        w_s = 0.0
        w_sq = 0.0
        sub = 0.0
        place = 0.0
        above = 0.0
        for t in range(size):
            if by_rejection:
                while True:
                    q = _draw_below(key, counter, n)
                    counter += np.uint64(1)
                    repeated = False
                    for u in range(t):
                        if chosen[u] == q:
                            repeated = True
                            break
                    if not repeated:
                        break
            else:  # a partial Fisher-Yates shuffle (the array stays a permutation)
                r = t + _draw_below(key, counter, n - t)
                counter += np.uint64(1)
                q = index[r]
                index[r] = index[t]
                index[t] = q
            chosen[t] = q
            w = class_rows[q, 2] if weighted else 1.0
            w_s += w
            w_sq += w * w
            sub += w * _fixed_weight(fixed_keys, fixed_cum, class_keys[q], fixed_is_above)
            place += w * class_rows[q, 0]
            above += w * class_rows[q, 1]
        # a metric with an empty cell is undefined and not tested (never active): 0 stands in;
        # a draw whose cell weighs nothing (zero weights) leaves it undefined: NaN, which counts
        values = (_distance(sub, w_s * fixed_total, theta) if fixed_total > 0 else 0.0,
                  _distance(place - sub, w_s * (other_total - fixed_total), theta)
                  if other_total > fixed_total else 0.0,
                  _distance(above - 0.5 * (w_s * w_s - w_sq), (class_total - w_s) * w_s, 0.5)
                  if class_total > w_s else 0.0)
        for j in range(3):
            if done[j]:
                continue
            v = values[j]
            if not (v < observed[j] - tolerance * max(1.0, observed[j])):
                out[j, 0] += 1.0
                if out[j, 0] >= hits:
                    out[j, 1] = draws
                    done[j] = True
    for j in range(3):
        if active[j] and out[j, 0] < hits:
            out[j, 1] = draws
    return out
