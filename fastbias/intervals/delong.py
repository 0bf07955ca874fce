"""DeLong (1988) standard errors of every metric, from placement sums of one sweep."""
from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd

from .._threads import run_jobs
from ..metrics.definitions import (
    AEG_METRICS,
    AUC_METRICS,
    METRIC_COLUMNS,
    METRIC_SAMPLES,
)
from ..prepare.memberships import Memberships
from ..sort.order import SortedScores
from ..sweep import _kernels as SK
from ..sweep.double_double import (
    dd_add,
    dd_div,
    dd_mul,
    dd_prefix_sums,
    dd_sum_error_bound,
    dd_total,
    two_sum,
)
from ..sweep.walk import MemberWalk, member_walk
from .exact_sums import NO_LO, exact_parts, exact_variance, lazy_exact_sums


def _z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _delong_variance(u, sq_x, sq_y, w_x, w_y, n_terms=None, floors=None, rows_x=None,
                     rows_y=None, tolerance=None, exact=None, flat=None, with_bound=False,
                     flat_parts=None, scales=None):
    """DeLong variance from placement sums (frequency-weight semantics).

    ``theta = u / (w_x w_y)``; ``S10 = (sq_x / w_y^2 - w_x theta^2) / (w_x - 1)``,
    ``S01 = (sq_y / w_x^2 - w_y theta^2) / (w_y - 1)``; var = S10/w_x + S01/w_y.
    NaN where a sample has total weight <= 1. Each numerator is a difference of two
    float sums; given ``n_terms`` (at most how many terms each sum added; a number or one
    per entry), one within their rounding (``4 (n_terms + 4) 2**-53`` of its first term:
    all its terms are non-negative) is taken as 0, so that sums added in another order
    (threads, chunks, the first call's numpy) give the same zero rather than different
    residues. ``floors``: ``(floor_u, floor_x, floor_y)`` where ``u``, ``sq_x`` or
    ``sq_y`` is made from differences (a background's placements or sums, its class's less
    the subgroup's), the size of what it came from, whose rounding it carries (see
    :func:`sum_floors`); a part so made is known only within that rounding, and where the
    rounding could be more than ``tolerance`` (default VARIANCE_TOLERANCE) of the
    variance, the variance is NaN.
    ``rows_x``/``rows_y``: the samples' rows; a sample of one row has no variance of its own
    (its part is 0, exactly). ``exact``: where ``u``, ``sq_x``, ``sq_y`` and the weights are
    exact (:func:`exact_sums`), each numerator is worked out in exact rational arithmetic,
    ``(sq_x w_x - u^2) / (w_x w_y^2)``, and needs no rule at all (three subgroup positives
    against 300,000 negatives, one of them above one positive: the positives' part, 1e-11
    of its sums, had been taken as 0, and the standard error came out 11% low). ``flat``:
    where every placement of both samples is known to be the same (every score equal, or
    every positive above every negative for an AUC metric): both parts are exactly 0.
    Elsewhere a part, of a direct sum too, known only within rounding that could be more
    than ``tolerance`` of the variance makes the variance unknown (NaN).
    ``flat_parts``: ``(flat_x, flat_y)``, where the placements of one sample are known to be
    all the same (:func:`flat_parts`): that part is exactly 0, as for a sample of one row.
    ``with_bound``: return ``(variance, bound)``, ``bound`` how far the variance may be
    from the exact one through its sums' rounding (0 where worked out exactly); a
    difference of variances (a significance test's) needs it. ``scales``: ``(scale_x,
    scale_y)``, the size of the sums each sample's weight was made from where it is a
    difference (a background's: its class's total), so that ``W - 1`` is judged by their
    rounding (default: the weight itself, a direct sum).
    """
    u, sq_x, sq_y, w_x, w_y = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (u, sq_x, sq_y, w_x, w_y)))
    ok = (w_x > 1) & (w_y > 1)
    wx = np.where(ok, w_x, 2.0)
    wy = np.where(ok, w_y, 2.0)
    theta = u / (wx * wy)
    share = 0.0 if n_terms is None else rounding_share(n_terms)
    first_x, first_y = sq_x / (wy * wy), sq_y / (wx * wx)
    ref_x, ref_y = first_x, first_y
    if floors is not None:
        floor_u, floor_x, floor_y = (np.asarray(f, dtype=np.float64) for f in floors)
        # wx theta^2 = u^2 / (wx wy^2) moves by 2 |u| du / (wx wy^2) with u; likewise on Y
        u_part = np.where(floor_u > np.abs(u), 2.0 * np.abs(u) * floor_u / (wx * wy), 0.0)
        ref_x = np.maximum(first_x, floor_x / (wy * wy)) + u_part / wy
        ref_y = np.maximum(first_y, floor_y / (wx * wx)) + u_part / wx
    diff_x, diff_y = first_x - wx * theta * theta, first_y - wy * theta * theta
    # each part: its numerator, 0 within the rounding of the sums it was made from, and how
    # large that rounding may be (as a part of the variance)
    one_x = np.zeros(np.shape(diff_x), dtype=bool) if rows_x is None else np.asarray(rows_x) == 1
    one_y = np.zeros(np.shape(diff_y), dtype=bool) if rows_y is None else np.asarray(rows_y) == 1
    if flat_parts is not None:
        one_x, one_y = one_x | flat_parts[0], one_y | flat_parts[1]
    diff_x = np.where(one_x, 0.0, diff_x)
    diff_y = np.where(one_y, 0.0, diff_y)
    known = np.zeros(u.shape, dtype=bool) if exact is None \
        else np.broadcast_to(np.asarray(exact, dtype=bool), u.shape) & ok
    if flat is not None:
        flat = np.broadcast_to(np.asarray(flat, dtype=bool), u.shape) & ok
        one_x, one_y = one_x | flat, one_y | flat  # (no variance of their own either)
        diff_x, diff_y = np.where(flat, 0.0, diff_x), np.where(flat, 0.0, diff_y)
        known = known | flat
    if known.any():
        diff_x, diff_y = np.array(diff_x, dtype=np.float64), np.array(diff_y, dtype=np.float64)
        one_x, one_y = np.broadcast_to(one_x, u.shape), np.broadcast_to(one_y, u.shape)
        for i in (i for i in np.ndindex(known.shape) if known[i]):
            part_x, part_y = exact_parts(*(float(v[i]) for v in (u, sq_x, sq_y, w_x, w_y)))
            diff_x[i] = 0.0 if one_x[i] else float(part_x)
            diff_y[i] = 0.0 if one_y[i] else float(part_y)
    s10 = np.where(known | (diff_x > share * ref_x), diff_x, 0.0) / (wx - 1.0) / wx
    s01 = np.where(known | (diff_y > share * ref_y), diff_y, 0.0) / (wy - 1.0) / wy
    bound_x = share * ref_x / (wx - 1.0) / wx
    bound_y = share * ref_y / (wy - 1.0) / wy
    var = s10 + s01
    # a part is known only within the rounding of the sums it was made from, whatever it came
    # out as (above that rounding, within it and taken as 0, or below 0); where that rounding
    # may be a noticeable part of the variance, the variance is not known. Found by review: a
    # background's part, made from its class's sums, a BPSN standard error 40% low; a direct
    # sum's part within its own rounding, standard errors 24-49% low (a cell of unit rows
    # beside one of weight 2**39)
    tolerance = VARIANCE_TOLERANCE if tolerance is None else tolerance
    unknown = ~known & ((~one_x & (bound_x > tolerance * var))
                        | (~one_y & (bound_y > tolerance * var)))
    # a sample weighing just over 1: W - 1 from its rounded sum is only known within the
    # sum's rounding, times W / (W - 1) (found by review: a cell of 1 + 1e-15 gave a standard
    # error 5-6% off, not NaN)
    # (a background's W is its class's total less the subgroup's: known within the rounding
    # of the total, not of W; found by review, a background of 1 + 1e-7 in a class of 1e9
    # gave a standard error 35% low)
    if n_terms is not None:
        scale_x, scale_y = (wx, wy) if scales is None else (
            np.maximum(wx, np.asarray(scales[0], dtype=np.float64)),
            np.maximum(wy, np.asarray(scales[1], dtype=np.float64)))
        unknown = unknown | (~known & (
            (~one_x & (share * scale_x / (wx - 1.0) > tolerance / 4))
            | (~one_y & (share * scale_y / (wy - 1.0) > tolerance / 4))))
    var = np.where(ok & ~unknown, var, np.nan)
    if not with_bound:
        return var
    return var, np.where(known, 0.0, np.where(one_x, 0.0, bound_x) + np.where(one_y, 0.0, bound_y))


def metric_terms(all_terms, cell_rows, joins=None) -> list:
    """Per metric (order of METRIC_COLUMNS), at most how many terms each of its sums added
    (``n_terms`` of :func:`_delong_variance`): the subgroup AUC's only the subgroup's
    memberships (``cell_rows`` (k, 2); its placements are running sums of its own cells'
    weights) and the ``joins`` pieces they were added up in (default DELONG_MAX_RANGES, the
    most a walk is split into); every other metric's placements read its classes' prefix
    sums: ``all_terms`` (the rows and the memberships)."""
    joins = DELONG_MAX_RANGES if joins is None else joins
    own = np.asarray(cell_rows).sum(axis=1) + 4 * np.asarray(joins)
    return [own if metric == "subgroup_auc" else all_terms for metric in METRIC_COLUMNS]


def rounding_share(n_terms):
    """How much of a float64 sum of ``n_terms`` non-negative terms (each a product of a few
    rounded factors) its rounding may be: ``4 (n_terms + 4) 2**-53``."""
    return 4.0 * (np.asarray(n_terms, dtype=np.float64) + 4) * 2.0 ** -53


#: a variance part known only within rounding larger than this share of the variance makes it
#: unknown (NaN): about 1% of the standard error
VARIANCE_TOLERANCE = 0.02

#: the same where the rows are at hand, so that the standard errors of a subgroup beyond it
#: come from its cells' own rows instead (:func:`direct_variances`). The bound is the worst
#: case, n times the rounding of one addition, far above the rounding the sums show: at 1e-4
#: a review found rechecks (0.2-0.5 s each) of variances right to 1e-8 on most subgroups of
#: a model of AUC 0.9998 (4 s instead of 0.05 s at 1.8M x 24; 28 s at 5M) and on pairs of
#: identities (10-20 s instead of 0.1-1 s). So the same 2%: a recheck where the worst case
#: could move the standard error by 1%, NaN out of core
RECHECK_TOLERANCE = VARIANCE_TOLERANCE

#: the most rows a recheck from the cells' own rows sorts (about 60 bytes a row while it
#: runs); beyond, the rule above without it: NaN where the variance is not known within 2%
RECHECK_MAX_ROWS = 1 << 25


def recheck_rows(scores, sample_weight):
    """``(scores, sample_weight)`` for :func:`standard_errors_from_sums` to recheck from,
    or None beyond RECHECK_MAX_ROWS rows."""
    return (scores, sample_weight) if len(scores) <= RECHECK_MAX_ROWS else None


def cell_rows_of(cell_rows, class_rows) -> dict:
    """cell -> rows per subgroup, from the subgroups' cell rows (k, 2) and the classes' rows
    ((2,) or (k, 2))."""
    background = np.asarray(class_rows) - np.asarray(cell_rows)
    return {("subgroup", 0): cell_rows[:, 0], ("subgroup", 1): cell_rows[:, 1],
            ("background", 0): background[:, 0], ("background", 1): background[:, 1]}


def fraction_bits(weights, scale: float = 1.0) -> int | None:
    """How many binary digits below the point the weights need (0 for whole numbers, 3 for
    eighths), or None beyond 51 (such as 0.1, 55 as a double): with ``b`` bits every
    placement, class total and subgroup total is a multiple of ``2**-(b + 1)``, exact while
    the class totals stay below ``2**(52 - b)`` (see :func:`sum_floors`), which beyond 51
    bits no class of weight above 1 is. Read in blocks (bounded memory), the first small:
    weights of many digits are seen at once. ``scale``: a power of two the weights are to be
    multiplied by (the digits of ``weights * scale``, without making them)."""
    w = np.asarray(weights, dtype=np.float64).ravel()
    shift = int(np.frexp(scale)[1]) - 1  # scale = 2**shift
    bits = 0
    starts = [0, *range(_BITS_HEAD, w.shape[0], _BITS_BLOCK)]
    for start, stop in zip(starts, [*starts[1:], w.shape[0]]):
        block = np.abs(w[start:stop])
        block = block[block != 0]
        if block.size == 0:
            continue
        fraction, exponent = np.frexp(block)  # block = fraction 2**exponent, 1/2 <= fraction < 1
        mantissa = (fraction * 2.0 ** 53).astype(np.int64)  # exact: 53 bits
        lowest = np.frexp((mantissa & -mantissa).astype(np.float64))[1] - 1  # trailing zeros
        bits = max(bits, int(np.max(53 - (exponent + shift) - lowest)))
        if bits > _MAX_FRACTION_BITS:
            return None
    return bits


_BITS_HEAD, _BITS_BLOCK = 1 << 12, 1 << 20
_MAX_FRACTION_BITS = 51


def sum_floors(delong_sums, sub_neg, sub_pos, class_totals=None, weight_bits=None,
               n_terms=None, read_ratios=None) -> tuple:
    """``(floor_u, floor_x, floor_y)``, each (k, 5): for each metric's U, SQX and SQY
    (``delong_sums`` (k, 15) as ``SK.finish_delong_sums`` gives them), the size of what it
    was made from, whose rounding it carries (:func:`_delong_variance`).

    A background cell's sums are made from the whole class's less the subgroup's: on the
    background's side (BPSN's SQX, BNSP's SQY, the AEGs' SQX) its class's sum of squares
    less the subgroup's; on the subgroup's side (BPSN's SQY, BNSP's SQX, the AEGs' SQY, and
    U) each row's placement is the weight of the whole class beyond it less the subgroup's.
    So each carries the size of the class's part: the subgroup AUC's sums (for BPSN and
    BNSP; the subgroup's cells beyond a row are what the subgroup AUC counts) or the
    subgroup's own cell, at most its weight squared (U) or cubed (squares), for the AEGs
    (``sub_neg``, ``sub_pos``); a placement's square by at most twice the sum of the
    squares. Without this a background whose placements barely vary kept the residue of
    the difference as its variance (found by review: a negative AEG's standard error of 4e-4
    against an exact 1.25e-6; a BPSN one 40% low). The subgroup AUC's U and SQX are direct
    sums (their own size); its SQY's placements (each negative's) are its positives' weight
    less those below it, so its SQY carries ``pos |U|`` more.

    Where the weights need ``weight_bits`` binary digits below the point
    (:func:`fraction_bits`; 0 when unweighted) and ``class_totals`` ((2,) or (k, 2)) are
    below ``2**(52 - weight_bits)``, every placement and cell weight is exact, so U and the
    subgroup's side are direct sums (their own size), and a background's sums of squares
    too where the class's stay below ``2**(51 - 3 weight_bits)`` (no rounding at all). Found
    by review: without this, 2M-row cases whose old standard errors were right to 1e-8
    became NaN.

    The floors also count what reading a subgroup's own cells above a score may cost
    (:func:`_add_subgroup_reads`) and, given ``class_totals``, a background's weight taken
    as its class's less the subgroup's (:func:`_add_background_weights`) and, with
    ``n_terms`` (per subgroup, as :func:`_delong_variance`'s), what reading a class's rows
    from its prefix sums may cost where those sums are not exact (:func:`_add_class_reads`;
    ``read_ratios``: (2,) or (k, 2), or a function that gives them, see
    :func:`~fastbias.sweep.walk.read_ratio`; None: not known)."""
    sums = np.asarray(delong_sums, dtype=np.float64)
    u = sums[:, SK.DELONG_U:SK.DELONG_U + 5]
    sq_x = sums[:, SK.DELONG_SQ_X:SK.DELONG_SQ_X + 5]
    sq_y = sums[:, SK.DELONG_SQ_Y:SK.DELONG_SQ_Y + 5]
    neg, pos = (np.asarray(w, dtype=np.float64) for w in (sub_neg, sub_pos))
    floor_u = np.abs(u) + np.column_stack([0 * neg, u[:, 0], u[:, 0], neg ** 2, pos ** 2])
    floor_x = np.abs(sq_x) + np.column_stack([0 * neg, sq_x[:, 0], sq_x[:, 0], neg ** 3,
                                              pos ** 3])
    # (the subgroup AUC's placements of its negatives are its positives' weight less those
    # below: each within the rounding of that weight, so its SQY within pos |U| of it)
    floor_y = np.abs(sq_y) + np.column_stack([pos * np.abs(u[:, 0]), sq_y[:, 0], sq_y[:, 0],
                                              neg ** 3, pos ** 3])
    # a placement made as a difference: its square within twice the squares' sum
    floor_x[:, 2] *= 2.0
    floor_y[:, [1, 3, 4]] *= 2.0
    _add_subgroup_reads(floor_u, floor_y, u, neg, pos,
                        0.0 if n_terms is None else rounding_share(n_terms))
    if class_totals is None:
        return floor_u, floor_x, floor_y
    totals = np.broadcast_to(np.asarray(class_totals, dtype=np.float64), (len(sums), 2))
    exact = (np.all(totals < 2.0 ** (52 - weight_bits), axis=1) if weight_bits is not None
             else np.zeros(len(sums), dtype=bool))
    _add_background_weights(floor_x, floor_y, u, neg, pos, totals, exact)
    if n_terms is not None and not exact.all():
        share = np.broadcast_to(rounding_share(n_terms), exact.shape)
        _add_class_reads(floor_u, floor_x, floor_y, (u, sq_y), neg, pos, totals, exact,
                         share, _relative_reads(read_ratios, share))
    if weight_bits is None:
        return floor_u, floor_x, floor_y
    # exact placements: U and the subgroup's side are direct sums
    floor_u = np.where(exact[:, None], np.abs(u), floor_u)
    floor_x[:, 2] = np.where(exact, np.abs(sq_x[:, 2]), floor_x[:, 2])
    # (BNSP's SQY, column 2, is the background negatives' side: its class's less the
    # subgroup's, not a placement of the subgroup's rows; found by review)
    floor_y[:, [0, 1, 3, 4]] = np.where(exact[:, None], np.abs(sq_y[:, [0, 1, 3, 4]]),
                                        floor_y[:, [0, 1, 3, 4]])
    # and no rounding at all in sums of squares that stay below 2**(51 - 3 bits)
    for floor, own in ((floor_x, sq_x), (floor_y, sq_y)):
        floor[:] = np.where(exact[:, None] & (floor < 2.0 ** (51 - 3 * weight_bits)),
                            np.abs(own), floor)
    return floor_u, floor_x, floor_y


def overall_floors(u, sq_pos, sq_neg, w_pos, w_neg, bits, n_terms, read_ratios=None) -> tuple:
    """The overall AUC's floors (as :func:`sum_floors`'): its sums, and, where the class
    sums are not exact (``bits``: :func:`fraction_bits` of the weights, None: not known),
    what reading both classes from their running sums may cost (``n_terms`` as
    :func:`_delong_variance`'s, ``read_ratios`` as :func:`sum_floors`'): the class walks
    read each row's weight as a difference of its class's prefix sums (the positives' in U
    and their squares, the negatives' in theirs), and each negative's placement as the
    positives' weight less those below it; the positives' placements (the negatives below
    them) are prefix sums, known within their own rounding. Each within the least of two
    bounds (:func:`_add_class_reads`)."""
    floors = [np.abs(u), np.abs(sq_pos), np.abs(sq_neg)]
    if bits is None or not max(np.max(w_pos), np.max(w_neg)) < 2.0 ** (52 - bits):
        share = rounding_share(n_terms)
        rel = _relative_reads(read_ratios, np.atleast_1d(share))
        rel_neg, rel_pos = (rel[:, 0], rel[:, 1]) if np.ndim(u) else (rel[0, 0], rel[0, 1])
        floors[0] = floors[0] + _least(2.0 * w_pos * w_neg, rel_pos, floors[0])
        floors[1] = floors[1] + _least(w_pos * w_neg * w_neg, rel_pos, floors[1])
        floors[2] = floors[2] + _least(w_neg * w_pos * w_pos, rel_neg, floors[2]) \
            + _least(_placement_reads(w_pos, w_neg, sq_neg, share), rel_pos, floors[2])
    return tuple(floors)


def _relative_reads(read_ratios, share):
    """(k, 2): how far a read of each class's prefix sums may be off, relative to what is
    read, in units of the sums' rounding share ``share`` (k,): ``2**-53 (3 ratio + 8) /
    share``: a difference of two prefix sums is within ``2**-53 (ratio + 4)`` of itself,
    but the walks read the weight above a tie as ``total - below - tied``, whose two
    differences round relative to ``gt + eq <= (1 + ratio) gt`` and whose tie is within
    ``2**-53 ratio gt`` (a review measured 1.58 times the single difference's bound: a tie
    of 12 rows below one light row; a second review bounded it by ``3 ratio + 2``); inf
    where not known (``read_ratios`` None) or beyond 1/16 (a read off by more is no bound
    worth taking)."""
    share = np.asarray(share, dtype=np.float64).reshape(-1, 1)
    if read_ratios is None:
        return np.full((share.shape[0], 2), np.inf)
    ratios = read_ratios() if callable(read_ratios) else read_ratios
    relative = 2.0 ** -53 * (3.0 * np.broadcast_to(np.asarray(ratios, dtype=np.float64),
                                                   (share.shape[0], 2)) + 8.0)
    return np.where(relative <= 0.0625, relative / share, np.inf)


def _least(absolute, relative, floor):
    """The least of two bounds on what reads may cost a sum (as a floor, in units of its
    rounding share): ``absolute`` (each read within the share of its whole class's weight)
    and ``5 relative floor`` (each read within ``relative`` shares of what it reads,
    :func:`_relative_reads`, and each term of the sum, whose size as computed ``floor``
    bounds, a product of at most three reads: within ``(1 + r)**3 - 1`` of the exact term,
    which is within ``(1 - r)**-3`` of the computed one, below 5 r for ``r`` up to 1/16).
    Where the relative bound is not known (inf) the absolute one, whatever the floor: a
    sum that came out exactly 0 may be reads lost entirely (found by review: a heavy
    positive below all the light ones made every read of them 0, and a BPSN standard error
    of 0 where exact arithmetic gives 3.6e-18, p = 0 for 1.1e-4, with no sign)."""
    with np.errstate(invalid="ignore"):  # (inf times a floor of 0)
        by_reads = np.where(np.isfinite(relative), 5.0 * relative * floor, np.inf)
    return np.minimum(absolute, by_reads)


def _placement_reads(w_c, w_sample, sq_sample, share):
    """The floor of a sample's sum of squared placements ``sq_sample`` (of weight
    ``w_sample``) whose placements are read from running sums of a class of weight ``w_c``,
    each within ``delta = share w_c`` (:func:`rounding_share`): the squares move by at most
    ``2 delta sum w |P| + w_sample delta**2``, and ``sum w |P| <= sqrt(w_sample sq)`` for
    the exact placements (Cauchy-Schwarz), whose ``sqrt(sq)`` is within ``sqrt(w_sample)
    delta`` of the computed one's (the triangle inequality): at most ``delta (2
    sqrt(w_sample |sq_sample|) + 3 w_sample delta)``, given as a floor (``/ share``)."""
    return w_c * (2.0 * np.sqrt(w_sample * np.abs(sq_sample)) + 3.0 * w_sample * share * w_c)


def _add_background_weights(floor_x, floor_y, u, neg, pos, totals, exact) -> None:
    """Add to the floors (in place) what a background cell's weight may cost: it is its
    class's weight less the subgroup's, within the share of the class's weight, so off by
    ``rel = W_c / W_bg`` shares of itself. The background's own part of the variance,
    ``(SQ - U**2 / W_bg) / W_other**2``, is a difference whose second term moves by
    ``U**2 rel / W_bg`` shares: that goes on its own sum's floor (the other sample's part
    is only scaled by the weight, which moves it by a share of itself). Where ``theta`` is
    within 1e-16 of 1 that difference needs the weight to its last digit (found by review:
    a subgroup negative of 5.4e25 beside a background of 9.5e16, BNSP's standard error
    6.4e-13 against an exact 3.3e-17, with no sign). None where the weights add up exactly
    (``exact``)."""
    for j, metric in enumerate(METRIC_COLUMNS):
        for side, (part, label) in enumerate(METRIC_SAMPLES[metric]):
            if part != "background":
                continue
            background = totals[:, label] - (neg if label == 0 else pos)
            known = ~exact & (background > 0)
            safe = np.where(known, background, 1.0)
            own = floor_x if side == 0 else floor_y
            own[:, j] += np.where(known, u[:, j] ** 2 * (totals[:, label] / safe) / safe, 0.0)


def _add_subgroup_reads(floor_u, floor_y, u, neg, pos, share) -> None:
    """Add to the floors (in place) what reading a subgroup's own cells above a score may
    cost: the walks take the weight of the subgroup's positives (or negatives) above a
    score as the cell's weight less those below and at it, within the share ``share`` of
    the cell's weight (``neg``, ``pos``), however light what is read. The subgroup AUC's
    and BPSN's Y rows (its negatives) are placed so among its positives, the AEGs' Y rows
    among their own cell, and BNSP's background sums pair its positives above each
    negative. Each such read within ``delta = share cell``, a sum over Y of placements
    moves by ``W_Y delta`` and their squares by ``2 delta sum w P + W_Y delta**2`` (``sum w
    P``: the metric's U, as computed, within ``W_Y delta`` itself), given as floors (``/
    share``). Found by review: a heavy subgroup positive below the light ones, a BNSP
    standard error 13.8% low with no sign."""
    share = np.asarray(share, dtype=np.float64)
    u = np.abs(u)
    floor_u[:, 1] += neg * pos
    floor_y[:, 0] += pos * u[:, 0] + 3.0 * share * neg * pos * pos
    floor_y[:, 1] += 2.0 * pos * u[:, 1] + 3.0 * share * neg * pos * pos
    # (BNSP: its class's sum over the positives pairs them with the negatives below, less
    # the subgroup AUC's SQY, read the same way)
    floor_y[:, 2] += 2.0 * pos * (u[:, 2] + 2.0 * u[:, 0]) + 3.0 * share * neg * pos * pos
    floor_y[:, 3] += 2.0 * neg * u[:, 3] + 3.0 * share * neg ** 3
    floor_y[:, 4] += 2.0 * pos * u[:, 4] + 3.0 * share * pos ** 3


def _add_class_reads(floor_u, floor_x, floor_y, sums, sub_neg, sub_pos, totals, exact,
                     share, relative) -> None:
    """Add to each metric's floors (in place) what reading a class's prefix sums may cost,
    where those sums are not exact. A read is a difference of two prefix sums (the class's
    weight above a score: its total less a prefix); each is off by at most the share
    ``share`` (k,) of the class's whole weight ``W_c`` (the absolute bound), and by at most
    ``relative`` (k, 2) shares of what it reads (:func:`_relative_reads`). A row far lighter
    than the weight of its class below it can vanish in such reads while the sums
    themselves need not show it (a review: one positive of weight 1e16 or more below the
    light others left the class's sums as small as the light rows', and the standard errors
    16-49% low, in memory; out of core a test's z at 5.98 against an exact 7.95). Each
    floor gets the least of the two bounds (:func:`_least`): the absolute one for ordinary
    weights, the relative one where a heavy row sits above the light rows of its class.

    The reads that are not prefix sums are those of a background X (BPSN, the AEGs: its
    class's weight above each row of Y, less the subgroup's) in U and SQY, and its class's
    weight above each pair of Y rows in SQX; with ``W_Y`` Y's weight they add, as absolute
    bounds, ``W_c W_Y`` to U's floor, ``W_c W_Y**2`` to SQX's and :func:`_placement_reads`
    to SQY's (``sums`` = (U, SQY) as computed, each (k, 5)). BNSP's background Y is read
    below each row of X (prefix sums, within their own rounding, which its floors carry
    already)."""
    u, sq_y = sums
    cells = {("subgroup", 0): sub_neg, ("subgroup", 1): sub_pos}
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = METRIC_SAMPLES[metric]
        if x_cell[0] != "background":
            continue
        c = x_cell[1]
        w_c, w_y = np.where(exact, 0.0, totals[:, c]), cells[y_cell]
        rel = np.where(exact, 0.0, relative[:, c])
        floor_u[:, j] += _least(w_c * w_y, rel, floor_u[:, j])
        floor_x[:, j] += _least(w_c * w_y * w_y, rel, floor_x[:, j])
        floor_y[:, j] += _least(_placement_reads(w_c, w_y, sq_y[:, j], share), rel,
                                floor_y[:, j])


# A background cell's DeLong sums are made as its class's minus the subgroup's (the walk sees
# the memberships, not the background's rows), so they carry the rounding of the class's sums
# divided by the background's share of the class's weight. Against exact rational arithmetic
# (n_terms: the rows plus the subgroup's memberships): with 112 terms, standard errors were
# off by 22% at a share of 1.3e-13, 3% at 1.1e-12 and 0.9% at 8.5e-12; with 2M rows, by at
# most 1e-8 at shares down to 1.1e-7 (a review); a subgroup weighted 1e12 times its 400
# background rows gave BPSN AUC a standard error of 2e-9 instead of 0.022 and a p-value of 0.
# So below a share of BACKGROUND_RESOLUTION * sqrt(n_terms) * 2**-53 (1.2e-12 at 112 terms,
# 1.6e-10 at 2M) those standard errors and tests are NaN instead.
BACKGROUND_RESOLUTION = 2.0 ** 10


def unresolved_backgrounds(class_totals, background_weights, background_rows, n_terms
                           ) -> np.ndarray:
    """(k, 2) bool: per subgroup, whether its background negatives / positives have rows and
    a weight (as computed, class minus subgroup) above 0 but below the share of its class
    that the sums resolve, BACKGROUND_RESOLUTION * sqrt(``n_terms``) * 2**-53 of
    ``class_totals`` ((2,) or (k, 2); ``n_terms`` one per subgroup). (A background whose
    rows weigh nothing comes out exactly 0: both sums add the same weights in the same
    order.)"""
    n_terms = np.asarray(n_terms, dtype=np.float64).reshape(-1, 1)
    limit = BACKGROUND_RESOLUTION * np.sqrt(n_terms) * 2.0 ** -53 * np.asarray(
        class_totals, dtype=np.float64)
    weights = np.asarray(background_weights, dtype=np.float64)
    return (np.asarray(background_rows) > 0) & (weights > 0) & (weights < limit)


def unresolved_metrics(unresolved: np.ndarray) -> dict:
    """metric -> (k,) bool: the metrics that read a background cell :func:`unresolved_backgrounds`
    marks (their standard errors are not known)."""
    return {metric: np.any([unresolved[:, label] for part, label in METRIC_SAMPLES[metric]
                            if part == "background"] or [np.zeros(len(unresolved), dtype=bool)],
                           axis=0)
            for metric in METRIC_COLUMNS}


def weight_bits_of(sample_weight) -> int | None:
    """:func:`fraction_bits` of ``sample_weight``; 0 without weights (every row weighs 1)."""
    return 0 if sample_weight is None else fraction_bits(sample_weight)


class StandardErrors(dict):
    """metric -> standard errors (one per subgroup), and ``unresolved``: metric -> (k,) bool,
    those NaN because the sums cannot resolve them: a background too small (see
    BACKGROUND_RESOLUTION), or a part of the variance not known within the rounding of the
    class's sums (see :func:`_delong_variance`)."""

    def __init__(self, se: dict, unresolved: dict):
        super().__init__(se)
        self.unresolved = unresolved


def delong_standard_errors(scores: np.ndarray, memberships: Memberships,
                           sample_weight: np.ndarray | None = None):
    """DeLong standard errors of the five metrics per subgroup and of the overall AUC.

    Validated arrays in; see :func:`standard_errors` (which takes the sorts a
    call has already made). Returns ``(se, overall_se)``: ``se`` maps each
    metric to an array with one entry per subgroup.
    """
    return standard_errors(SortedScores(scores, memberships), sample_weight)


def standard_errors(sorted_scores: SortedScores, sample_weight: np.ndarray | None = None):
    """DeLong standard errors from the sorts of the point estimate (no new sort).

    The placement sums come from one walk over the memberships in score
    order and one over the sorted classes (in ranges of the scores shared out
    among the sorts' ``workers`` threads on large inputs; the ranges depend
    only on the data, so the result does not depend on the threads):
    unweighted from the sorted keys, weighted from the row order that the
    weighted point estimate made.
    Returns ``(se, overall_se)`` as :func:`delong_standard_errors`.
    ``O(n + memberships)`` after the sorts.
    """
    m = sorted_scores.memberships
    walk = member_walk(sorted_scores, sample_weight)
    return standard_errors_from_sums(walk, m, *_placement_sums(walk, m.n_groups,
                                                               sorted_scores.workers)[:2],
                                     lambda: weight_bits_of(sample_weight),
                                     recheck_rows(sorted_scores.scores, sample_weight),
                                     lazy_exact_sums(walk, m.n_rows,
                                                     lambda: weight_bits_of(sample_weight)))


def standard_errors_from_sums(walk: MemberWalk, m: Memberships, sums: np.ndarray,
                              overall: tuple, weight_bits: int | None = 0, row_data=None,
                              exact=None):
    """``(se, overall_se)`` from the placement sums of a walk: ``sums`` (k, 15) U, SQX, SQY
    of the five metrics per subgroup and ``overall`` (u, sq_pos, sq_neg); ``weight_bits``:
    :func:`fraction_bits` of the weights (0 unweighted), or a function that gives it when
    asked (read only if a variance is otherwise unknown). ``se`` is a
    :class:`StandardErrors`: NaN where a background is too small to resolve.

    ``row_data``: ``(scores, sample_weight)`` of the rows of ``m``, where at hand: a subgroup
    whose background the walk's sums cannot resolve then has its standard errors from its
    cells' own rows (:func:`direct_variances`), not NaN. ``exact``: a function that gives
    the walk's :class:`~.exact_sums.ExactSums` or None (kernel walks,
    :func:`~.exact_sums.lazy_exact_sums`): a variance its float sums leave unknown is first
    worked out from those (:func:`~.exact_sums.exact_variance`)."""
    cells = walk.cells
    total_neg, total_pos = walk.class_totals
    tolerance = None if row_data is None else RECHECK_TOLERANCE
    same_score, separated, *overall_parts = _flat_universe(walk)
    lazy = callable(weight_bits)

    def overall_variance(bits, reads=None) -> float:
        u, sq_pos, sq_neg = (float(v) for v in overall)
        return float(_delong_variance(
            u, sq_pos, sq_neg, total_pos, total_neg, m.n_rows,
            floors=overall_floors(u, sq_pos, sq_neg, total_pos, total_neg, bits, m.n_rows,
                                  reads),
            tolerance=tolerance,
            exact=_exact_sums(bits, (total_neg, total_pos), abs(u), sq_pos, sq_neg),
            flat=same_score or separated, flat_parts=overall_parts))

    overall_var = overall_variance(None if lazy else weight_bits)
    if lazy and np.isnan(overall_var) and total_pos > 1 and total_neg > 1:
        weight_bits = weight_bits()
        lazy = False
        overall_var = overall_variance(weight_bits)
    # the classes' read ratios (a pass over the weights) only where the absolute bounds on
    # what reading their prefix sums may cost leave a variance unknown
    reads = None
    if np.isnan(overall_var) and total_pos > 1 and total_neg > 1 and walk.read_ratios:
        reads = walk.read_ratios
        overall_var = overall_variance(None if lazy else weight_bits, reads)
    if exact is None:
        def exact():
            return None
    if np.isnan(overall_var) and total_pos > 1 and total_neg > 1 and exact() is not None:
        overall_var = float(exact_variance(*exact().overall(), total_pos, total_neg))
    if np.isnan(overall_var) and total_pos > 1 and total_neg > 1 and row_data is not None:
        overall_var = direct_overall_variance(row_data[0], m.labels, row_data[1])
    overall_se = float(np.sqrt(overall_var))
    if m.n_groups == 0:
        return StandardErrors({metric: np.empty(0) for metric in METRIC_COLUMNS},
                              {metric: np.zeros(0, dtype=bool) for metric in METRIC_COLUMNS}
                              ), overall_se
    # cell weights; a background cell with no rows has weight 0 (not a float remainder)
    n_neg_rows, n_pos_rows = m.class_rows
    weight = {
        ("subgroup", 0): cells[:, 0],
        ("subgroup", 1): cells[:, 1],
        ("background", 0): np.where(n_neg_rows - m.cell_rows[:, 0] > 0, total_neg - cells[:, 0], 0.),
        ("background", 1): np.where(n_pos_rows - m.cell_rows[:, 1] > 0, total_pos - cells[:, 1], 0.),
    }
    # what each cell's weight was made from: a background's, its class's total
    made_from = {("subgroup", 0): cells[:, 0], ("subgroup", 1): cells[:, 1],
                 ("background", 0): np.full(m.n_groups, float(total_neg)),
                 ("background", 1): np.full(m.n_groups, float(total_pos))}
    cell_rows = np.asarray(m.cell_rows)
    rows = cell_rows_of(cell_rows, np.array(m.class_rows))
    # what each subgroup's sums add up: the rows (the classes' prefix sums) and its memberships
    subgroup_terms = m.n_rows + cell_rows.sum(axis=1)
    terms = metric_terms(subgroup_terms, cell_rows)
    background = [("background", 0), ("background", 1)]
    unresolved = unresolved_metrics(unresolved_backgrounds(
        (total_neg, total_pos), np.column_stack([weight[cell] for cell in background]),
        np.column_stack([rows[cell] for cell in background]), subgroup_terms))

    def variances(bits, parts=None) -> tuple:
        """(metric -> variances, metric -> where NaN with both samples of weight above 1:
        a part not known within rounding); ``parts``: :func:`flat_parts`."""
        floors = sum_floors(sums, cells[:, 0], cells[:, 1], walk.class_totals, bits,
                            subgroup_terms, reads)
        var, unknown = {}, {}
        for j, metric in enumerate(METRIC_COLUMNS):
            x_cell, y_cell = METRIC_SAMPLES[metric]
            var[metric] = _delong_variance(
                sums[:, SK.DELONG_U + j], sums[:, SK.DELONG_SQ_X + j],
                sums[:, SK.DELONG_SQ_Y + j], weight[x_cell], weight[y_cell], terms[j],
                [f[:, j] for f in floors], rows[x_cell], rows[y_cell], tolerance,
                _exact_sums(bits, (total_neg, total_pos), *(f[:, j] for f in floors)),
                same_score or (separated and metric not in AEG_METRICS),
                flat_parts=None if parts is None else parts[metric],
                scales=(made_from[x_cell], made_from[y_cell]))
            unknown[metric] = np.isnan(var[metric]) & (weight[x_cell] > 1) & (weight[y_cell] > 1)
        return var, unknown

    # the weights' digits are read only where the worst case leaves a variance unknown
    bits = None if lazy else weight_bits
    var, unknown = variances(bits)
    if lazy and any(u.any() for u in unknown.values()):
        bits = weight_bits()
        var, unknown = variances(bits)
    if reads is None and walk.read_ratios and any(u.any() for u in unknown.values()):
        reads = walk.read_ratios
        var, unknown = variances(bits)
    unsure = np.flatnonzero(np.any(list(unknown.values()), axis=0))
    if unsure.size:  # a part whose placements are all the same is exactly 0
        parts = flat_parts(walk, unsure)
        if any(x.any() or y.any() for x, y in parts.values()):
            var, unknown = variances(bits, parts)
    if any(u.any() for u in unknown.values()) and exact() is not None:  # exact variances
        for j, metric in enumerate(METRIC_COLUMNS):
            x_cell, y_cell = METRIC_SAMPLES[metric]
            for g in np.flatnonzero(unknown[metric]).tolist():
                sums_g = exact().delong(g)
                var[metric][g] = float(exact_variance(
                    sums_g[SK.DELONG_U + j], sums_g[SK.DELONG_SQ_X + j],
                    sums_g[SK.DELONG_SQ_Y + j], weight[x_cell][g], weight[y_cell][g]))
                unknown[metric][g] = False
    se = {}
    for metric in METRIC_COLUMNS:
        unresolved[metric] = unresolved[metric] | unknown[metric]
        se[metric] = np.where(unresolved[metric], np.nan, np.sqrt(var[metric]))
    # a background whose rows' weight vanished in its class's (computed as 0) is looked at too
    absorbed = np.column_stack([(rows[cell] > 0) & (weight[cell] == 0) for cell in background])
    again = np.flatnonzero(np.any(list(unresolved.values()), axis=0) | np.any(absorbed, axis=1))
    if row_data is not None and again.size:
        scores, sample_weight = row_data
        # (only the metrics not known; all of a subgroup whose background weight vanished)
        wanted = np.column_stack([unresolved[metric][again] | np.any(absorbed[again], axis=1)
                                  for metric in METRIC_COLUMNS])
        direct = direct_variances(scores, m.labels, sample_weight, m, again, wanted=wanted)
        for j, metric in enumerate(METRIC_COLUMNS):
            at = again[wanted[:, j]]
            se[metric][at] = np.sqrt(direct[metric][wanted[:, j]])
            # (NaN from the rows too: a part within their double-double rounding)
            unresolved[metric][at] = np.isnan(direct[metric][wanted[:, j]])
    return StandardErrors(se, unresolved), overall_se


def _flat_universe(walk: MemberWalk) -> tuple:
    """``(every score equal, every positive above every negative, the positives' placements
    all the same, the negatives' all the same)`` over the rows of the walk (its classes,
    sorted): then every placement of a sample is the same, in every metric or in every AUC
    metric, and their parts of the variances are exactly 0 (a constant or a perfectly
    separating model: no rounding to judge); the last two for the overall AUC's own parts
    (and each row's psi of it): a class at one score, or none of the other class at or
    between its lowest and highest score (a model that separates all but ten negatives,
    above every positive)."""
    neg, pos = walk.neg, walk.pos
    if neg.shape[0] == 0 or pos.shape[0] == 0:
        return False, False, False, False

    return (bool(neg[0] == neg[-1] == pos[0] == pos[-1]), bool(neg[-1] < pos[0]),
            _placements_equal(_span(pos), neg), _placements_equal(_span(neg), pos))


def flat_parts(walk: MemberWalk, groups) -> dict:
    """metric -> ``(flat_x, flat_y)``, (k,) bool each: for the subgroups ``groups`` (indexes),
    whether the placements of a subgroup cell of the metric's X (above) or Y (below) sample
    are all the same: its rows at one score, or no row of the other sample at or between
    its lowest and highest score. Such a part of the DeLong variance, and of a covariance
    with any estimate, is exactly 0, which the sums' rounding cannot show (a model that
    separates the classes but for ten negatives: every subgroup's BNSP standard error and
    test computed again from its rows, 4-6 s instead of 0.1 s at 1.8M x 24; a pair of
    identities separated within itself likewise). A background cell's lowest and highest
    score come from its class's less the subgroup's (:func:`_background_span`). From the
    walk's memberships of those subgroups (in score order) and its sorted classes; rows of
    weight 0 count as rows."""
    n_groups = walk.cells.shape[0]
    flat = {metric: (np.zeros(n_groups, dtype=bool), np.zeros(n_groups, dtype=bool))
            for metric in METRIC_COLUMNS}
    groups = np.asarray(groups, dtype=np.int64)
    if groups.size == 0:
        return flat
    chosen = np.zeros(n_groups, dtype=bool)
    chosen[groups] = True
    at = np.flatnonzero(chosen[walk.codes // 2])
    codes = walk.codes[at]
    by_code = np.argsort(codes, kind="stable")  # (each code's memberships stay in score order)
    codes, keys = codes[by_code], walk.keys[at][by_code]
    bounds = np.searchsorted(codes, np.arange(2 * n_groups + 1))

    for g in groups.tolist():
        neg = keys[bounds[2 * g]:bounds[2 * g + 1]]
        pos = keys[bounds[2 * g + 1]:bounds[2 * g + 2]]
        sub_neg, sub_pos = _span(neg), _span(pos)
        bg_neg, bg_pos = _background_span(walk.neg, neg), _background_span(walk.pos, pos)
        flat["subgroup_auc"][0][g] = _placements_equal(sub_pos, neg)
        flat["subgroup_auc"][1][g] = _placements_equal(sub_neg, pos)
        flat["bpsn_auc"][0][g] = _placements_equal(bg_pos, neg)
        flat["bpsn_auc"][1][g] = _placements_equal(sub_neg, pos, walk.pos)
        flat["bnsp_auc"][0][g] = _placements_equal(sub_pos, neg, walk.neg)
        flat["bnsp_auc"][1][g] = _placements_equal(bg_neg, pos)
        flat["negative_aeg"][0][g] = _placements_equal(bg_neg, neg)
        flat["negative_aeg"][1][g] = _placements_equal(sub_neg, neg, walk.neg)
        flat["positive_aeg"][0][g] = _placements_equal(bg_pos, pos)
        flat["positive_aeg"][1][g] = _placements_equal(sub_pos, pos, walk.pos)
    return flat


def _placements_equal(span, other, other_class=None) -> bool:
    """Whether rows spanning ``span`` (lowest, highest key; None: no rows) all have the same
    placement against ``other`` (sorted keys; with ``other_class``, that class's keys less
    them: a background): at one score, or none of the other at or between."""
    if span is None:
        return False
    lo, hi = span
    if lo == hi:
        return True

    def between(keys) -> int:
        return int(np.searchsorted(keys, hi, "right") - np.searchsorted(keys, lo))

    rows = between(other)
    return (rows if other_class is None else between(other_class) - rows) == 0


def _span(keys):
    """(lowest, highest) of sorted keys; None if there are none."""
    return (keys[0], keys[-1]) if keys.shape[0] else None


def _background_span(class_keys, own_keys):
    """:func:`_span` of a class's rows less a subgroup's (both sorted; the subgroup's keys
    are some of the class's): the lowest is the first class key its subgroup does not match
    from the bottom, the highest likewise from the top."""
    n, m = class_keys.shape[0], own_keys.shape[0]
    if n == m:
        return None
    differ = np.flatnonzero(class_keys[:m] != own_keys)
    low = class_keys[differ[0] if differ.size else m]
    differ = np.flatnonzero(class_keys[n - m:][::-1] != own_keys[::-1])
    high = class_keys[n - 1 - (differ[0] if differ.size else m)]
    return low, high


def _exact_sums(bits, class_totals, *sums):
    """Whether sums of the walk (each their floor, :func:`sum_floors`) are exact: weights of
    ``bits`` binary digits below the point (None: not known) make every placement exact
    while the class totals stay below ``2**(52 - bits)``, and every sum of such terms
    while it stays below ``2**(51 - 3 bits)``."""
    if bits is None:
        return None
    limit = 2.0 ** (51 - 3 * bits)
    exact = bool(max(class_totals) < 2.0 ** (52 - bits))
    for values in sums:
        exact = exact & (np.abs(np.asarray(values, dtype=np.float64)) < limit)
    return exact


def _rows_by_score(scores, labels, sample_weight) -> tuple:
    """``(order, positive, sample)``: the rows sorted by score once (numpy), whether each is
    positive, and ``sample(rows)`` the sample of the sorted rows ``rows`` as
    :func:`_deviations` takes it (scores, weights, double-double prefix sums of the
    weights)."""
    scores = np.asarray(scores)
    order = np.argsort(scores, kind="stable")
    keys = scores[order]
    positive = np.asarray(labels)[order].astype(bool)
    weights = np.ones(order.shape[0]) if sample_weight is None \
        else np.asarray(sample_weight, np.float64)[order]

    def sample(rows) -> tuple:
        return keys[rows], weights[rows], dd_prefix_sums(weights[rows])

    return order, positive, sample


def direct_overall_variance(scores, labels, sample_weight) -> float:
    """The overall AUC's DeLong variance from the rows themselves (see
    :func:`direct_variances`)."""
    _, positive, sample = _rows_by_score(scores, labels, sample_weight)
    x, y = sample(positive), sample(~positive)
    parts = _deviations(x, y, scaled=True)
    return float("nan") if parts is None else _known_sum(parts, _deviation_errors(x, y))


def direct_variances(scores, labels, sample_weight, m: Memberships, groups,
                     against_overall: bool = False, wanted=None) -> dict:
    """metric -> (len(groups),) DeLong variances of the subgroups ``groups``, from their
    cells' own rows: each cell's rows are picked out (a background's too), so no sum is a
    difference of its class's and the subgroup's, whatever share of the class the
    background holds. NaN where a cell has total weight at most 1.

    With ``against_overall``, an AUC metric's is the variance of its difference from the
    AUC of all the rows (the significance tests' ``sum_r w_r (psi_M(r) - psi_O(r))^2``,
    see :func:`~.significance.difference_standard_errors`), NaN where the rounding of the
    rows' terms could move it by 1e-4; an AEG's its own; and the function returns
    ``(variances, differences)``, the second: metric -> the AUC metrics' differences from
    the AUC of all the rows, each AUC a double-double quotient (two doubles' difference
    would lose the digits of a subgroup of almost every row). ``wanted``: (len(groups), 5)
    bool, the metrics (order of METRIC_COLUMNS) to work out for each subgroup (default all;
    the others stay NaN): each costs passes over its two cells' rows.

    The rows are sorted once (numpy); each cell's placements come from double-double prefix
    sums of the other cell's weights, and each part is a weighted sum of squared deviations
    (:func:`_deviations`). ``O(n log n)`` once and ``O(n log n)`` for each subgroup: what
    the standard errors and the tests do for the few subgroups whose background the walk's
    sums cannot resolve (a subgroup holding all of a class's weight but a sliver; found by
    review: a BPSN standard error of 4.1e-8 against an exact 6.9e-8, where the walk's sums
    carried its class's rounding)."""
    order, positive, sample = _rows_by_score(scores, labels, sample_weight)

    overall = None
    if against_overall:  # each class's rows' part of the overall AUC's variance
        overall = _deviations(sample(positive), sample(~positive), scaled=True)
        overall_errors = _deviation_errors(sample(positive), sample(~positive))
        overall_auc = _auc(sample(positive), sample(~positive))
        gaps = {metric: np.full(len(groups), np.nan) for metric in AUC_METRICS}
    # each membership's row, in the order of row_groups
    member_rows = np.repeat(m.identity_rows, np.diff(m.row_ptr))
    out = {metric: np.full(len(groups), np.nan) for metric in METRIC_COLUMNS}
    for i, g in enumerate(groups):
        if wanted is not None and not np.any(wanted[i]):
            continue
        member = np.zeros(order.shape[0], dtype=bool)
        member[member_rows[m.row_groups == g]] = True
        member = member[order]
        cells = {("subgroup", 0): member & ~positive, ("subgroup", 1): member & positive,
                 ("background", 0): ~member & ~positive, ("background", 1): ~member & positive}
        samples = {}
        for j, metric in enumerate(METRIC_COLUMNS):
            if wanted is not None and not wanted[i, j]:
                continue
            x_cell, y_cell = METRIC_SAMPLES[metric]
            for cell in (x_cell, y_cell):
                if cell not in samples:
                    samples[cell] = sample(cells[cell])
            parts = _deviations(samples[x_cell], samples[y_cell], scaled=True)
            if parts is None:
                continue
            errors = _deviation_errors(samples[x_cell], samples[y_cell])
            if overall is None or metric not in AUC_METRICS:
                out[metric][i] = _known_sum(parts, errors)
                continue
            auc = _auc(samples[x_cell], samples[y_cell])
            gaps[metric][i] = np.add(*dd_add(*auc, -overall_auc[0], -overall_auc[1]))
            total = rounding = 0.0
            for (w, d), (w_o, d_o), rows, e, e_o in zip(
                    parts, overall, (cells[x_cell][positive], cells[y_cell][~positive]),
                    errors, overall_errors):
                mine = np.zeros(w_o.shape[0])
                mine[rows] = d
                total += np.sum(w_o * (mine - d_o) ** 2)
                # each deviation is within 8 ulps of its own size (its roundings) and its
                # double-double placement's and mean's rounding (e): their difference too
                rounding += np.sum(w_o * (2.0 ** -50 * (np.abs(mine) + np.abs(d_o))
                                          + np.where(rows, e, 0.0) + e_o) ** 2)
            # the difference of two estimates on almost the same rows: where those roundings
            # could move it by 1e-4, it is not known
            out[metric][i] = total if rounding <= 2.5e-9 * total else np.nan
    return (out, gaps) if against_overall else out


def _deviation_errors(x, y) -> tuple:
    """How far each scaled deviation of :func:`_deviations` (X's, Y's) may be off through
    the double-double sums it came from: a placement and the mean are prefix sums and a
    quotient of sums of the other sample's weight, each within
    :func:`~fastbias.sweep.double_double.dd_sum_error_bound` of it; divided by that weight
    (placements are shares, at most 1) and by ``sqrt(W (W - 1))`` of its own sample."""
    (_, _, x_prefix), (_, _, y_prefix) = x, y
    eps = 3.0 * dd_sum_error_bound(x_prefix[0].shape[0] + y_prefix[0].shape[0]) + 2.0 ** -104
    out = []
    for prefix in (x_prefix, y_prefix):
        own = (prefix[0][-1], prefix[1][-1])
        out.append(eps / np.sqrt(float(sum(own)) * _less_one(own)) if sum(own) > 1 else np.inf)
    return tuple(out)


def _known_sum(parts, errors) -> float:
    """The variance ``sum w d**2`` of :func:`_deviations`' parts, or NaN where the rounding
    of the deviations (``errors``, :func:`_deviation_errors`; and their own last rounding)
    could be more than VARIANCE_TOLERANCE of it: a part whose deviations lie at the
    double-double sums' rounding is not known from them (found by review: a subgroup of a
    weight 7e25 positive above and a 3.7e25 negative below light rows, its AUC 1 - 1e-37:
    a standard error of 1.5e-46 against an exact 4e-50, with no sign). A part of equal
    placements is exactly 0 (no rounding), and so is one whose rows of weight above 0 all
    have equal placements (found by a fuzz: a row of weight 0 between a subgroup's classes
    made a variance of exactly 0 NaN)."""
    total = bound = 0.0
    for (w, d), e in zip(parts, errors):
        total += float(np.sum(w * d * d))
        if np.any(d[w != 0] != 0):
            bound += float(2.0 * e * np.sum(w * np.abs(d)) + e * e * np.sum(w)
                           + 2.0 ** -49 * np.sum(w * d * d))
    return total if bound <= VARIANCE_TOLERANCE * total else float("nan")


def _auc(x, y) -> tuple:
    """AUC(X above Y) as a double-double pair, from two samples as :func:`_deviations`
    takes them."""
    (x_keys, x_weights, _), (y_keys, _, y_prefix) = x, y
    below_x = _placements(y_keys, y_prefix, x_keys)
    u = dd_total(*dd_mul(x_weights, 0.0, *below_x))
    pairs = dd_mul(*dd_total(x_weights), y_prefix[0][-1], y_prefix[1][-1])
    return _dd_quotient(u, pairs)


def _deviations(x, y, scaled: bool = False):
    """``[(weights, deviations) of X, (of Y)]`` for AUC(X above Y) from the two samples, each
    ``(sorted scores, weights, double-double prefix sums of the weights)``: each row's
    placement (the other sample's weight below it for X, above it for Y, ties 1/2) divided by
    that weight, less the AUC; ``scaled``: divided by ``sqrt(W (W - 1))`` of its own sample
    too, so that the variance is the weighted sum of their squares. None where a sample
    weighs at most 1.

    Placements and their mean are double-double, the deviation rounded once: no difference
    of large sums, which a part that barely varies would lose in (an AUC of 1 - 1e-14 has
    placements that differ in their last digits); a sample whose placements are all equal
    has deviations of exactly 0."""
    (x_keys, x_weights, x_prefix), (y_keys, y_weights, y_prefix) = x, y
    w_x, w_y = (x_prefix[0][-1], x_prefix[1][-1]), (y_prefix[0][-1], y_prefix[1][-1])
    if not (sum(w_x) > 1 and sum(w_y) > 1):
        return None
    below_x = _placements(y_keys, y_prefix, x_keys)  # Y below each row of X, ties 1/2
    below_y = _placements(x_keys, x_prefix, y_keys)  # X below each row of Y, ties 1/2
    above_y = dd_add(*w_x, -below_y[0], -below_y[1])
    # U in double-double: the pairs X above Y, summed over X
    u = dd_total(*dd_mul(x_weights, 0.0, *below_x))
    out = []
    for weights, (hi, lo), own, other in ((x_weights, below_x, w_x, w_y),
                                          (y_weights, above_y, w_y, w_x)):
        if np.all(hi == hi[0]) and np.all(lo == lo[0]):
            out.append((weights, np.zeros(hi.shape[0])))  # every placement the same
            continue
        mean = _dd_quotient(u, own)  # the mean placement, U / own weight
        deviation = np.add(*dd_add(hi, lo, -mean[0], -mean[1])) / sum(other)
        if scaled:
            deviation = deviation / np.sqrt(sum(own) * _less_one(own))
        out.append((weights, deviation))
    return out


def _less_one(weight) -> float:
    """``W - 1`` of a double-double weight ``(hi, lo)``, its high part less 1 first (exact
    near 1): a sample weighing 1 + 1e-13 has W - 1 to its last digits, where the rounded W
    less 1 was 9e-5 off (found by review: a standard error 4e-4 off, not NaN)."""
    return float((weight[0] - 1.0) + weight[1])


def _dd_quotient(a, b) -> tuple:
    """``a / b`` as a double-double pair, from pairs ``a`` and ``b`` (b > 0)."""
    q = dd_div(*a, *b)
    rest = dd_add(*a, *(-np.asarray(dd_mul(q, 0.0, *b))))
    return two_sum(q, (rest[0] + rest[1]) / (b[0] + b[1]))


def _placements(sorted_keys, prefix, at) -> tuple:
    """``(hi, lo)``: the weight of ``sorted_keys`` below each of ``at`` plus half of that at
    it, from the double-double ``prefix`` sums of their weights."""
    hi, lo = prefix
    lt = np.searchsorted(sorted_keys, at, side="left")
    le = np.searchsorted(sorted_keys, at, side="right")
    tied = dd_add(hi[le], lo[le], -hi[lt], -lo[lt])
    return dd_add(hi[lt], lo[lt], 0.5 * tied[0], 0.5 * tied[1])


# the membership walk is cut into ranges of at least this many memberships (at most
# DELONG_MAX_RANGES), whatever the number of threads, so that the float sums do not depend on it
DELONG_MIN_RANGE_MEMBERSHIPS = 50_000


DELONG_MAX_RANGES = 64


def _placement_sums(walk: MemberWalk, n_groups: int, workers: int, class_walk=None):
    """``(sums (k, 15), (u, sq_pos, sq_neg), class walks)``: the subgroups' and the overall
    AUC's sums, from one job per class and one per range of memberships (on the threads
    free first, the classes' first). The class walks are ``class_placement_sums``' halves,
    or with ``class_walk`` (a function of the label returning ``(..., moments)``, the class's
    ``(sum w p, sum w p^2)``) its results, which the overall sums are then made of; the
    third item lists them, the negatives' first (None without ``class_walk``)."""
    w = walk
    n_members = w.keys.shape[0]
    n_ranges = int(min(DELONG_MAX_RANGES, max(1, n_members // DELONG_MIN_RANGE_MEMBERSHIPS)))
    bounds = [0, *(SK.block_boundary_near(w.keys, (j * n_members) // n_ranges)
                   for j in range(1, n_ranges)), n_members]
    # each range starts from the subgroups' class totals below it
    below = np.zeros((n_ranges, n_groups, 2))
    for j in range(1, n_ranges):
        lo, hi = bounds[j - 1], bounds[j]
        below[j] = below[j - 1] + np.bincount(
            w.codes[lo:hi], w.weights[lo:hi] if w.weights.size else None,
            minlength=2 * n_groups).reshape(n_groups, 2)

    def job(j):
        if j < 0:  # a class's walk (-1: the positives', -2: the negatives')
            if class_walk is not None:
                return class_walk(1 if j == -1 else 0)
            return SK.class_placement_sums(w.neg, w.pos, w.neg_cum, w.pos_cum,
                                           SK.POSITIVES_HALF if j == -1 else SK.NEGATIVES_HALF,
                                           NO_LO)
        return SK.member_delong_sums_in_range(w.keys, w.codes, w.weights, bounds[j],
                                              bounds[j + 1], w.neg, w.pos, w.neg_cum, w.pos_cum,
                                              w.cells, below[j], NO_LO)

    # the classes' walks (each along a whole class) first, then the ranges of memberships;
    # each range's sums are its own, joined in order below
    jobs = [-1, -2, *range(n_ranges)]
    done = dict(zip(jobs, run_jobs(job, jobs, workers)))
    sums = done[0]
    for j in range(1, n_ranges):
        sums = sums + done[j]
    if class_walk is None:
        overall_sums = tuple(a + b for a, b in zip(done[-1], done[-2]))  # (0 in one: exact)
        walked = None
    else:
        (pos_sum, pos_squares), neg_squares = done[-1][-1], done[-2][-1][1]
        overall_sums = (float(pos_sum), float(pos_squares), float(neg_squares))
        walked = [done[-2], done[-1]]
    return SK.finish_delong_sums(sums), overall_sums, walked


def _normal_interval(estimate, se, z, bounds):
    low = np.clip(estimate - z * se, *bounds)
    high = np.clip(estimate + z * se, *bounds)
    return low, high


def missing_se(table: pd.DataFrame, se: dict, method: str, overall=None) -> dict:
    """For :func:`~fastbias.validate.errors.warn_listed`: per cause, the defined metrics whose
    interval is NaN: a cell too small, or (``se.unresolved``) a background too small for
    the sums to resolve. ``overall``: ``(overall_auc, its standard error, the classes'
    weights)``; an overall AUC whose interval is NaN is listed too ("overall AUC"), under
    the rounding where both classes weigh more than 1 (beyond RECHECK_MAX_ROWS rows)."""
    unresolved = getattr(se, "unresolved", {})
    problems, unresolvable = [], []
    if overall is not None:
        point, overall_se, class_weights = overall
        if np.isfinite(point) and not np.isfinite(overall_se):
            (unresolvable if min(class_weights()) > 1 else problems).append("overall AUC")
    for metric in METRIC_COLUMNS:
        value = table[metric].to_numpy(dtype=np.float64)
        bad = np.isfinite(value) & ~np.isfinite(se[metric])
        why = unresolved.get(metric, np.zeros(len(bad), dtype=bool))
        problems += [f"{name}: {metric}" for name in table.index[bad & ~why]]
        unresolvable += [f"{name}: {metric}" for name in table.index[bad & why]]
    return {f"{method} interval(s) undefined (a cell with fewer than 2 rows, or of total "
            "weight at most 1), set to NaN": problems,
            f"{method} interval(s) undefined (the subgroup holds all of a class's weight but a "
            "share too small for DeLong's float64 sums to tell its background from rounding, "
            "or a part of the variance is within that rounding; with the rows in memory, up to "
            f"{RECHECK_MAX_ROWS:,} of them, these come from the cells' own rows, unless a part "
            "is within their double-double rounding too), set to NaN":
            unresolvable}
