"""Numba kernels behind :mod:`fastbias.intervals` (no pandas here).

The paired DeLong test's placements and moments, and the bootstrap's
counter-based Poisson(1) counts. The DeLong sums of one model come from the
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
