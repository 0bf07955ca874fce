"""Exact placement sums of a walk, for the variances its float sums cannot tell.

A DeLong variance is a small difference of large sums, ``sum w p^2 - (sum w p)^2 / W``, and
a significance test's a small difference of three such variances. Where every placement of
a sample is nearly the same (a model that separates the classes but for a few rows, a
model of AUC ``1 - 1e-6``) the float sums' rounding (``n 2**-53`` of them, the worst case)
can be more than the difference, and those standard errors and tests were computed again
from each subgroup's own rows (:func:`~.delong.direct_variances`, about 0.1 s per
subgroup and metric at 1.8M rows: 2.5-4 s per call, 32 s with pairs of identities).

Unweighted, every placement is a whole multiple of 1/2, and every product of two
placements (and every prefix sum the cross sums read) a multiple of 1/4; with weights of
``b`` binary digits below the point (whole numbers: 0, frequency weights), of
``2**-(b + 1)`` and ``2**-(2b + 2)``. While a class's weight in placement units,
``2**(b + 1) W``, stays within :data:`EXACT_MAX_UNITS` (and the rows within
:data:`EXACT_MAX_ROWS`), all of them are below ``2**53`` such units: exact in a double. The
same walks then run once more making each term, a weight times such a product, exact as two
doubles (Dekker's product) and keeping each addition's rounding (Knuth's) beside the sum
(``lo``, see ``_kernels._add_term``): every term and rounding is a multiple of
``2**-(3b + 2)`` and ``lo`` stays far below ``2**53`` of those, so the sums ``hi + lo`` are
exact, and so is every variance and covariance numerator made from them in rational
arithmetic (:func:`exact_variance`, :func:`exact_difference_variance`).
``O(memberships + n)`` for all subgroups at once, and only where a variance is in doubt.
"""
from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction
from functools import cache

import numpy as np
from numba import types

from .._numba_cache import announce_compiling
from ..sweep import _kernels as SK

#: ``lo`` for the kernels' walks that keep no rounding (the float sums alone)
NO_LO = None

#: the most rows whose walk sums are made exact: each sum adds at most a term per row, so the
#: rounding kept beside a sum of at most ``3 W^3`` stays within about ``2**47`` of its terms'
#: unit (see :data:`EXACT_MAX_UNITS`)
EXACT_MAX_ROWS = 1 << 24

#: the most a class may weigh in placement units (``2**(b + 1) W``; ``2 n`` unweighted): a
#: product of two placements, a class's pair products (``2 a (B + B_eq / 2) + w (B + B_eq /
#: 4)``, below ``3 W^2``) and the cross sums' prefix sums are then multiples of the square of
#: that unit below ``2**53`` of them (``3 * 2**50``)
EXACT_MAX_UNITS = float(1 << 25)

#: decimal digits a difference of variances is worked out to (its square roots are not
#: rational): far beyond any difference the rows can make
_DIGITS = 100


def exact_sums_of(walk, n_rows: int, weight_bits=0):
    """:class:`ExactSums` of a kernel walk (``walk``: a
    :class:`~fastbias.sweep.walk.MemberWalk`) where its sums can be exact, else None: at
    most :data:`EXACT_MAX_ROWS` rows, and weights (of a weighted walk) of ``weight_bits``
    binary digits below the point (:func:`~.delong.fraction_bits`; a function that gives
    it, called only for a weighted walk; None: not known) whose class totals stay within
    :data:`EXACT_MAX_UNITS` placement units."""
    if n_rows > EXACT_MAX_ROWS:
        return None
    bits = 0
    if walk.weights.size or walk.neg_cum.size or walk.pos_cum.size:
        bits = weight_bits() if callable(weight_bits) else weight_bits
        if bits is None:
            return None
    if max(walk.class_totals) * 2.0 ** (bits + 1) > EXACT_MAX_UNITS:
        return None
    return ExactSums(walk)


def lazy_exact_sums(walk, n_rows: int, weight_bits=0):
    """:func:`exact_sums_of` as a function of no argument, worked out (the weights' digits
    read) on its first call only."""
    return cache(lambda: exact_sums_of(walk, n_rows, weight_bits))


#: the kernels of the exact walks (compiled in a version of their own: :func:`_keeps_rounding`)
EXACT_KERNELS = (SK.member_delong_sums_in_range, SK.class_placement_sums,
                 SK.member_overall_cross_sums)


def exact_walks_ready() -> bool:
    """Whether the exact walks can run now without compiling first: compiled or cached, or
    compiled here on first use (no first-call tier). If not, they compile in the background
    (family ``"exact"`` of :mod:`fastbias._warm_up`) for later calls."""
    from ..sweep.first_call import ready_or_compiling

    # (compiled here where the tier is off, announced by _announce)
    return ready_or_compiling(EXACT_KERNELS, "exact", kind=_keeps_rounding)


def _announce(sums: str, kernel) -> None:
    """Say so before an exact walk compiles in the caller (the warm-up compiles them in the
    background with the others; with the first-call tier off they compile on first use)."""
    announce_compiling(f"exact {sums} sums", [kernel], seconds_each=2.5, kind=_keeps_rounding)


def _keeps_rounding(signature) -> bool:
    """Whether a compiled walk (its argument types) is the exact one: its last argument,
    ``lo``, an array rather than None."""
    return isinstance(signature[-1], types.Array)


def _exact(hi, lo) -> Fraction:
    return Fraction(float(hi)) + Fraction(float(lo))


def sortable_keys(values: np.ndarray) -> np.ndarray:
    """A walk's sortable keys (uint32 or uint64, see :mod:`fastbias.sweep.walk`) widened to
    64 bits: the same order and ties."""
    if values.dtype.kind != "u":
        raise TypeError(f"a walk's keys are unsigned integers, not {values.dtype}")
    return values.astype(np.uint64, copy=False)


class ExactSums:
    """The sums of one walk, exact, made on first use (one walk each kind).

    The walks read the keys as :func:`sortable_keys` (the same order and ties) and 64-bit
    codes, so that their kernels compile once for float32 and float64 scores, weighted or
    not (each compiles for seconds, and they are rarely needed).

    :meth:`delong` gives a subgroup's U, SQX, SQY of the five metrics (the 15 columns of
    ``_kernels.finish_delong_sums``), :meth:`overall` the overall AUC's ``(u, sq_pos,
    sq_neg)`` and :meth:`cross` a subgroup's cross sums with it (the columns of
    ``_kernels.member_overall_cross_sums``), each as :class:`~fractions.Fraction`.
    """

    def __init__(self, walk):
        self._walk = walk._replace(codes=walk.codes.astype(np.int64, copy=False),
                                   **{name: sortable_keys(getattr(walk, name))
                                      for name in ("keys", "neg", "pos")})
        self._delong = self._overall = self._cross = None

    def _delong_pairs(self) -> tuple:
        if self._delong is None:
            _announce("DeLong", SK.member_delong_sums_in_range)
            w = self._walk
            k = w.cells.shape[0]
            lo = np.zeros((k, SK.N_DELONG_COLUMNS))
            hi = SK.member_delong_sums_in_range(w.keys, w.codes, w.weights, 0, w.keys.shape[0],
                                                w.neg, w.pos, w.neg_cum, w.pos_cum, w.cells,
                                                np.zeros((k, 2)), lo)
            self._delong = (hi, lo)
        return self._delong

    def _overall_pairs(self) -> tuple:
        if self._overall is None:
            _announce("overall", SK.class_placement_sums)
            w = self._walk
            lo = np.zeros((1, 4))
            hi = SK.class_placement_sums(w.neg, w.pos, w.neg_cum, w.pos_cum, SK.BOTH_HALVES,
                                         lo)
            self._overall = (np.array(hi, dtype=np.float64), lo[0, [0, 1, 3]].copy())
        return self._overall

    def _cross_pairs(self) -> tuple:
        if self._cross is None:
            _announce("cross", SK.member_overall_cross_sums)
            w = self._walk
            # the prefix sums of w c_O along the positives and w d_O along the negatives:
            # multiples of the square of the placement unit below 2**53 of them, so exact as
            # float sums
            prefix = []
            for values, cumulative, others, others_cumulative, above in (
                    (w.pos, w.pos_cum, w.neg, w.neg_cum, False),
                    (w.neg, w.neg_cum, w.pos, w.pos_cum, True)):
                prefix.append(np.empty(values.shape[0] + 1))
                SK.class_sums(values, cumulative, others, others_cumulative, above, prefix[-1],
                              np.empty((0, 2)), np.empty(0))
            k = w.cells.shape[0]
            lo = np.zeros((k, SK.N_OVERALL_CROSS_COLUMNS))
            hi = SK.member_overall_cross_sums(w.keys, w.codes, w.weights, w.neg, w.pos,
                                              w.neg_cum, w.pos_cum, prefix[0], prefix[1],
                                              w.cells, lo)
            self._cross = (hi, lo)
        return self._cross

    def delong(self, g: int) -> list:
        hi, lo = self._delong_pairs()
        return finished_delong([_exact(hi[g, c], lo[g, c])
                                for c in range(SK.N_DELONG_COLUMNS)])

    def overall(self, g: int | None = None) -> tuple:
        """The overall AUC's sums (one universe: the same for every subgroup ``g``)."""
        hi, lo = self._overall_pairs()
        return tuple(_exact(h, x) for h, x in zip(hi, lo))

    def cross(self, g: int) -> list:
        hi, lo = self._cross_pairs()
        return [_exact(hi[g, c], lo[g, c]) for c in range(SK.N_OVERALL_CROSS_COLUMNS)]

    def pairs(self) -> tuple:
        """Every sum as two doubles whose sum is exact: ``((hi, lo) of the DeLong walk's raw
        (k, N_DELONG_COLUMNS) sums, of the cross sums (k, 8), of the overall sums (3,))``,
        all three walks made (a chunk's, out of core, to be joined after its rows are
        gone)."""
        return self._delong_pairs(), self._cross_pairs(), self._overall_pairs()


def finished_delong(raw: list) -> list:
    """The 15 DeLong columns (U, SQX, SQY of the five metrics) from a walk's raw
    ``N_DELONG_COLUMNS`` sums, exact numbers (``_kernels.DELONG_FINISH``)."""
    out = raw[:15]
    for made, whole, part in SK.DELONG_FINISH:
        out[made] = raw[whole] - raw[part]
    return out


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
