"""Exact placement sums of an unweighted walk, for the variances its float sums cannot tell.

A DeLong variance is a small difference of large sums, ``sum w p^2 - (sum w p)^2 / W``, and
a significance test's a small difference of three such variances. Where every placement of
a sample is nearly the same (a model that separates the classes but for a few rows, a
model of AUC ``1 - 1e-6``) the float sums' rounding (``n 2**-53`` of them, the worst case)
can be more than the difference, and those standard errors and tests were computed again
from each subgroup's own rows (:func:`~.delong.direct_variances`, about 0.1 s per
subgroup and metric at 1.8M rows: 2.5-4 s per call, 32 s with pairs of identities).

Unweighted, every placement is a whole multiple of 1/2 and every term of the sums a whole
multiple of 1/4 below ``2**53`` (while the rows stay within :data:`EXACT_MAX_ROWS`). The
same walks then run once more with each term's product and each addition's rounding
kept beside the sum (``lo``, see ``_kernels._add_term``): the sums ``hi + lo`` are exact,
and so is every variance and covariance numerator made from them in rational arithmetic
(:func:`exact_variance`, :func:`exact_difference_variance`). ``O(memberships + n)`` for all
subgroups at once, and only where a variance is in doubt.
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from ..sweep import _kernels as SK

#: ``lo`` for the kernels' walks that keep no rounding (the float sums alone)
NO_LO = None

#: the most rows whose unweighted walk sums are exact: a placement is at most ``n`` and a
#: term, ``w`` times a product of two placements or ``3 n^2`` (a class's pair products), is a
#: multiple of 1/4 below ``2**53`` up to ``n = 2**24.7``; the rounding kept beside a sum of
#: at most ``n^3`` stays within ``2**46`` quarters
EXACT_MAX_ROWS = 1 << 24

#: decimal digits a difference of variances is worked out to (its square roots are not
#: rational): far beyond any difference the rows can make
_DIGITS = 100


def exact_sums_of(walk, n_rows: int):
    """:class:`ExactSums` of an unweighted kernel walk (``walk``: a
    :class:`~fastbias.sweep.walk.MemberWalk`) of at most :data:`EXACT_MAX_ROWS` rows, else
    None (weighted placements are prefix sums of floats: not exact)."""
    if walk.weights.size or walk.neg_cum.size or walk.pos_cum.size or n_rows > EXACT_MAX_ROWS:
        return None
    return ExactSums(walk)


def _exact(hi, lo) -> Fraction:
    return Fraction(float(hi)) + Fraction(float(lo))


class ExactSums:
    """The sums of one unweighted walk, exact, made on first use (one walk each kind).

    The walks read the sorts' keys widened to 64 bits (the same order and ties), so that
    their kernels compile once for float32 and float64 scores alike (each compiles for
    several seconds, and they are rarely needed).

    :meth:`delong` gives a subgroup's U, SQX, SQY of the five metrics (the 15 columns of
    ``_kernels.finish_delong_sums``), :meth:`overall` the overall AUC's ``(u, sq_pos,
    sq_neg)`` and :meth:`cross` a subgroup's cross sums with it (the columns of
    ``_kernels.member_overall_cross_sums``), each as :class:`~fractions.Fraction`.
    """

    def __init__(self, walk):
        self._walk = walk._replace(**{name: getattr(walk, name).astype(np.uint64, copy=False)
                                      for name in ("keys", "neg", "pos")})
        self._delong = self._overall = self._cross = None

    def delong(self, g: int) -> list:
        if self._delong is None:
            w = self._walk
            k = w.cells.shape[0]
            lo = np.zeros((k, SK.N_DELONG_COLUMNS))
            hi = SK.member_delong_sums_in_range(w.keys, w.codes, w.weights, 0, w.keys.shape[0],
                                                w.neg, w.pos, w.neg_cum, w.pos_cum, w.cells,
                                                np.zeros((k, 2)), lo)
            self._delong = (hi, lo)
        hi, lo = self._delong
        raw = [_exact(hi[g, c], lo[g, c]) for c in range(SK.N_DELONG_COLUMNS)]
        out = raw[:15]
        for made, whole, part in SK.DELONG_FINISH:
            out[made] = raw[whole] - raw[part]
        return out

    def overall(self) -> tuple:
        if self._overall is None:
            w = self._walk
            lo = np.zeros((1, 4))
            hi = SK.class_placement_sums(w.neg, w.pos, w.neg_cum, w.pos_cum, lo)
            self._overall = tuple(_exact(h, lo[0, c]) for h, c in zip(hi, (0, 1, 3)))
        return self._overall

    def cross(self, g: int) -> list:
        if self._cross is None:
            w = self._walk
            # the prefix sums of w c_O along the positives and w d_O along the negatives:
            # whole multiples of 1/2 below 2**53, so exact as float sums
            prefix = []
            for values, cumulative, others, others_cumulative, above in (
                    (w.pos, w.pos_cum, w.neg, w.neg_cum, False),
                    (w.neg, w.neg_cum, w.pos, w.pos_cum, True)):
                prefix.append(np.empty(values.shape[0] + 1))
                SK.class_sums(values, cumulative, others, others_cumulative, above, prefix[-1],
                              np.empty((0, 2)))
            k = w.cells.shape[0]
            lo = np.zeros((k, SK.N_OVERALL_CROSS_COLUMNS))
            hi = SK.member_overall_cross_sums(w.keys, w.codes, w.weights, w.neg, w.pos,
                                              w.neg_cum, w.pos_cum, prefix[0], prefix[1],
                                              w.cells, lo)
            self._cross = (hi, lo)
        hi, lo = self._cross
        return [_exact(hi[g, c], lo[g, c]) for c in range(SK.N_OVERALL_CROSS_COLUMNS)]


def exact_parts(u, sq_x, sq_y, w_x, w_y) -> tuple:
    """The numerators of DeLong's variance in rational arithmetic from exact sums and
    weights: ``(sq_x w_x - u^2) / (w_x w_y^2)`` and ``(sq_y w_y - u^2) / (w_y w_x^2)``
    (``sq_x / w_y^2 - w_x theta^2`` and the same on Y, as ``_delong_variance``)."""
    u, sq_x, sq_y, w_x, w_y = (Fraction(v) for v in (u, sq_x, sq_y, w_x, w_y))
    return (sq_x * w_x - u * u) / (w_x * w_y * w_y), (sq_y * w_y - u * u) / (w_y * w_x * w_x)


def exact_variance(u, sq_x, sq_y, w_x, w_y):
    """DeLong's variance (frequency-weight semantics, as ``_delong_variance``) in rational
    arithmetic from exact sums and weights: each part of :func:`exact_parts` divided by
    ``w (w - 1)`` of its sample; None where a sample weighs at most 1."""
    w_x, w_y = Fraction(w_x), Fraction(w_y)
    if not (w_x > 1 and w_y > 1):
        return None
    part_x, part_y = exact_parts(u, sq_x, sq_y, w_x, w_y)
    return part_x / (w_x * (w_x - 1)) + part_y / (w_y * (w_y - 1))


def cross_numerators(u, w_x, w_y, w_neg, w_pos, cx, ox, cy, oy) -> tuple:
    """``(t_x, t_y)``, the numerators of the covariance of an AUC metric (U ``u``, samples of
    weight ``w_x``, ``w_y``) with the AUC of all rows (classes ``w_neg``, ``w_pos``) from
    their cross sums (see :func:`exact_difference_variance`), in rational arithmetic:
    ``t_x = cx / (w_y w_neg) - theta ox / w_neg`` and ``t_y = cy / (w_x w_pos) - theta oy /
    w_pos``, ``theta = u / (w_x w_y)``."""
    u, w_x, w_y, w_neg, w_pos, cx, ox, cy, oy = (
        Fraction(v) for v in (u, w_x, w_y, w_neg, w_pos, cx, ox, cy, oy))
    theta = u / (w_x * w_y)
    return cx / (w_y * w_neg) - theta * ox / w_neg, cy / (w_x * w_pos) - theta * oy / w_pos


def _decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


def exact_difference_variance(metric: tuple, overall: tuple, cross: tuple) -> float:
    """The variance of an AUC metric's difference from the AUC of all rows,
    ``var_M + var_O - 2 cov`` (see :func:`~.significance.difference_standard_errors`),
    from exact sums: ``metric`` ``(u, sq_x, sq_y, w_x, w_y)`` its sums and its samples'
    weights, ``overall`` the same of the overall AUC (X the positives), ``cross``
    ``(cx, ox, cy, oy)`` its cross sums with it. The variances and the covariance's
    numerators are rational; the covariance divides them by square roots, so the sum is
    worked out to 100 decimal digits and rounded once. NaN where a sample weighs at most 1;
    0 where the difference is 0 to those digits (the same estimate on the same rows)."""
    var_m, var_o = exact_variance(*metric), exact_variance(*overall)
    if var_m is None or var_o is None:
        return float("nan")
    u, _, _, w_x, w_y = (Fraction(v) for v in metric)
    _, _, _, w_pos, w_neg = (Fraction(v) for v in overall)
    t_x, t_y = cross_numerators(u, w_x, w_y, w_neg, w_pos, *cross)
    with localcontext() as context:
        context.prec = _DIGITS
        cov = (_decimal(t_x) / _decimal(w_x * (w_x - 1) * w_pos * (w_pos - 1)).sqrt()
               + _decimal(t_y) / _decimal(w_y * (w_y - 1) * w_neg * (w_neg - 1)).sqrt())
        terms = _decimal(var_m + var_o)
        difference = terms - 2 * cov
        # (the roots' last digits: a difference within them is no difference)
        if abs(difference) <= Decimal(10) ** (20 - _DIGITS) * (terms + 2 * abs(cov)):
            return 0.0
        return float(difference)
