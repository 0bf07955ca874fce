"""Double-double arithmetic on numpy arrays: each value a pair (hi, lo) worth ``hi + lo``.

The same error-free transformations as the weighted counting kernels
(``_kernels._two_sum``, ``_two_prod``, ``_dd_add``, ``_dd_mul``, ``_dd_div``),
operation for operation, element by element: on the same inputs they give
the same bits (IEEE double arithmetic, no fused multiply-add on either side).
Used where compiling a kernel would cost more than the work (the metric
ratios of a table) and by the first call's weighted counts in numpy
(:mod:`fastbias.sweep.first_call`), whose sums need :func:`dd_prefix_sums`
and :func:`dd_total`: sequential ``np.cumsum`` plus the exact error of each of
its additions, recovered afterwards.
"""
from __future__ import annotations

import numpy as np

_SPLIT = 134217729.0  # Veltkamp split (2**27 + 1)


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``s + e == a + b`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def two_prod(a, b):
    """``(p, e)`` with ``p = fl(a * b)`` and ``p + e == a * b`` exactly (Dekker)."""
    p = a * b
    c = _SPLIT * a
    a_hi = c - (c - a)
    a_lo = a - a_hi
    c = _SPLIT * b
    b_hi = c - (c - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def dd_add(a_hi, a_lo, b_hi, b_lo):
    s, e = two_sum(a_hi, b_hi)
    e = e + (a_lo + b_lo)
    hi = s + e
    return hi, e - (hi - s)


def dd_mul(a_hi, a_lo, b_hi, b_lo):
    p, e = two_prod(a_hi, b_hi)
    e = e + (a_hi * b_lo + a_lo * b_hi)
    hi = p + e
    return hi, e - (hi - p)


def dd_div(a_hi, a_lo, b_hi, b_lo):
    """The double nearest (to within an ulp) to ``(a_hi + a_lo) / (b_hi + b_lo)``, b > 0."""
    q = a_hi / b_hi
    p_hi, p_lo = dd_mul(q, 0.0, b_hi, b_lo)
    r_hi, r_lo = dd_add(a_hi, a_lo, -p_hi, -p_lo)
    return q + (r_hi + r_lo) / b_hi


def dd_prefix_sums(values: np.ndarray) -> tuple:
    """Prefix sums ``(hi, lo)`` of ``values`` (length n + 1, from 0), to about
    ``n log2(n) 2**-106`` of the sum of magnitudes (see :func:`dd_sum_error_bound`).

    ``np.cumsum`` adds sequentially, so each of its roundings is recovered
    exactly by :func:`two_sum` from its inputs and output; the running total of
    those errors is the low part, itself corrected once more the same way (so the
    low part's own roundings cost about ``n**3 2**-159``, not ``n**2 2**-106``).
    """
    values = np.asarray(values, dtype=np.float64)
    hi = _running_sum(values)
    _, errors = two_sum(hi[:-1], values)
    lo = _running_sum(errors)
    _, errors_of_errors = two_sum(lo[:-1], errors)
    lo = lo + _running_sum(errors_of_errors)
    hi2 = hi + lo  # renormalise: |lo| below half an ulp of hi
    return hi2, lo - (hi2 - hi)


def _running_sum(values: np.ndarray) -> np.ndarray:
    """``[0, v0, v0 + v1, ...]``, added in order (``np.cumsum``)."""
    out = np.zeros(values.shape[0] + 1)
    np.cumsum(values, out=out[1:])
    return out


def dd_total(hi: np.ndarray, lo: np.ndarray | None = None) -> tuple:
    """``sum(hi + lo)`` as a pair, to about ``n log2(n) 2**-106`` of the sum of magnitudes."""
    hi = np.asarray(hi, dtype=np.float64)
    if hi.shape[0] == 0:
        return 0.0, 0.0
    running = np.cumsum(hi)
    _, errors = two_sum(running[:-1], hi[1:])
    rest = float(np.sum(errors)) + (0.0 if lo is None else float(np.sum(lo)))
    total = float(running[-1])
    s = total + rest
    return s, rest - (s - total)


def dd_sum_error_bound(n_terms: int) -> float:
    """The relative bound (to the sum of magnitudes) of :func:`dd_prefix_sums` and
    :func:`dd_total` over ``n_terms`` terms and the products built on them: what the first
    call's weighted counts pass to the certification of their sums.

    Each error-free step leaves the low parts to be added in floating point: at most
    ``n`` sequential additions (prefix sums) or a pairwise sum (``np.sum``, ``log2 n``
    deep) of values below ``2**-53`` of the magnitudes, then one final rounding of the
    low part; the kernels' bound is ``8 (n + 16) 2**-106``, this one ``log2 n`` times it
    (and a term for the low part's own low part, ``n**3 2**-159``, far below it).
    """
    n = float(max(n_terms, 1))
    return 8.0 * (n * (np.log2(n + 1.0) + 4.0) + n ** 3 * 2.0 ** -53 + 16.0) * 2.0 ** -106


def metric_ratios(hi, lo, background_hi, background_lo, pairs, is_gap) -> np.ndarray:
    """Metrics (n_groups, len(pairs)) from double-double weighted counts; NaN when undefined.

    ``pairs[m]`` is metric m's (U column, X cell, Y cell), cells numbered 0/1
    subgroup negatives/positives, 2/3 background negatives/positives;
    ``is_gap[m]`` says it is an AEG. An AUC is ``twice U / (2 W_X W_Y)`` and an
    AEG ``(W_X W_Y - twice U) / (2 W_X W_Y)``, numerator and denominator in
    double-double, so an AEG near 0 keeps its digits; one rounding at the end, then the
    value is kept in its range ([0, 1] for an AUC, [-1/2, 1/2] for an AEG): a numerator
    that is exactly 0 or all the pairs in exact arithmetic can come out a few 1e-32 past it
    (the U of a background cell is a difference of sums), and the exact value lies in the
    range, so clamping only brings the result nearer to it.
    """
    hi, lo = np.asarray(hi, np.float64), np.asarray(lo, np.float64)
    cell_hi = np.column_stack([hi[:, 0], hi[:, 1], background_hi[:, 0], background_hi[:, 1]])
    cell_lo = np.column_stack([lo[:, 0], lo[:, 1], background_lo[:, 0], background_lo[:, 1]])
    columns, x, y = pairs[:, 0], pairs[:, 1], pairs[:, 2]
    pairs_hi, pairs_lo = dd_mul(cell_hi[:, x], cell_lo[:, x], cell_hi[:, y], cell_lo[:, y])
    num_hi, num_lo = hi[:, columns], lo[:, columns]
    gap_hi, gap_lo = dd_add(pairs_hi, pairs_lo, -num_hi, -num_lo)
    num_hi = np.where(is_gap, gap_hi, num_hi)
    num_lo = np.where(is_gap, gap_lo, num_lo)
    defined = pairs_hi > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        value = dd_div(num_hi, num_lo, 2.0 * pairs_hi, 2.0 * pairs_lo)
    low = np.where(is_gap, -0.5, 0.0)
    return np.where(defined, np.minimum(np.maximum(value, low), low + 1.0), np.nan)


def overall_ratio(neg_hi, neg_lo, pos_hi, pos_lo, u_hi, u_lo) -> float:
    """twice U / (2 W_neg W_pos) from double-double parts (NaN if a class weighs 0)."""
    pairs_hi, pairs_lo = dd_mul(neg_hi, neg_lo, pos_hi, pos_lo)
    if not pairs_hi > 0.0:
        return float("nan")
    return float(dd_div(u_hi, u_lo, 2.0 * pairs_hi, 2.0 * pairs_lo))
