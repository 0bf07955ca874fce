"""Which subgroup gaps are larger than chance: DeLong z-tests, adjusted by Holm or BH.

For every subgroup (intersections included) and metric, a two-sided test of
"no bias":

* Subgroup, BPSN and BNSP AUC: the metric equals the overall AUC. The two
  estimates share rows, so the variance of their difference is
  ``var_metric + var_overall - 2 cov``; all three come from each row's
  placements (DeLong 1988, written as a sum over rows of the squared
  difference of the two estimates' normalised placements, so it is never
  negative).
* Negative and positive AEG: the AEG equals 0 (``theta = 1/2``), with the
  AEG's DeLong variance.

``z = estimate / se`` and ``p = 2 (1 - Phi(|z|))``. Where the smaller of a
metric's two cells has fewer than :data:`PERMUTATION_BELOW` rows the normal
approximation is poor in the far tails that a multiple-testing adjustment
reads, so the p-value is a permutation one instead: the subgroup's cell is
redrawn at random from its class (the sharp null "within a class, the
subgroup's rows are scored like any others"): from
:data:`PERMUTATION_DRAWS_BELOW` rows the normal tail with the permutation
distribution's exact moments, below it drawn sequentially (Besag & Clifford
1991) until :data:`PERMUTATION_HITS` draws are as extreme as observed (out of
core, where the class is not in memory, Hoeffding's bound instead). Every
p-value is computed from :class:`~.placement_sums.PlacementSums`. The
p-values of one model (all subgroups x metrics) are adjusted together by
Holm (family-wise error) or Benjamini-Hochberg (false discovery rate); a test
is significant where the adjusted p-value is at most ``1 - confidence``.
See ``docs/significance.md``.
"""
from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np
import pandas as pd

from .._threads import run_pieces
from ..metrics.definitions import (
    AEG_METRICS,
    AUC_METRICS,
    METRIC_COLUMNS,
    METRIC_SAMPLES,
)
from ..sort.order import SortedScores
from ..sweep import _kernels as SK
from ..sweep.double_double import dd_sum_error_bound
from ..validate.errors import UndefinedMetricWarning, listed, user_stacklevel, warn
from ..validate.values import check_interval_weights_of
from . import _kernels as IK
from .delong import (
    RECHECK_TOLERANCE,
    VARIANCE_TOLERANCE,
    StandardErrors,
    _delong_variance,
    _exact_sums,
    _flat_universe,
    _least,
    _relative_reads,
    cell_rows_of,
    direct_variances,
    metric_terms,
    overall_floors,
    recheck_rows,
    rounding_share,
    sum_floors,
    unresolved_backgrounds,
    unresolved_metrics,
)
from .exact_sums import cross_numerators, exact_difference_variance, exact_variance
from .first_call import (
    draws_in_numpy,
    intervals_in_numpy_now,
    permutation_exceedances_in_numpy,
)
from .placement_sums import (
    OVERALL_SQ_NEG,
    OVERALL_SQ_POS,
    OVERALL_U,
    PlacementSums,
    bits_of,
    by_weight_within_ties,
    class_flat_parts,
    flat_parts_of_spans,
    placement_sums,
    placement_sums_in_numpy,
    ratios_of,
)

SIGNIFICANCE_METHODS = ("holm", "bh")

#: a metric whose smaller cell has fewer rows gets a permutation p-value (DeLong's otherwise)
PERMUTATION_BELOW = 300

#: below this many rows in the smaller cell the permutation p-value is drawn (Monte Carlo);
#: from it up to PERMUTATION_BELOW it is the normal tail of the permutation distribution with
#: its exact mean and variance (unweighted rows; weighted rows keep DeLong's test there)
PERMUTATION_DRAWS_BELOW = 30

#: a sequential permutation test stops once this many draws were as extreme as observed
PERMUTATION_HITS = 20

#: the seed of the permutation draws, mixed with each test's data (:func:`draw_seed`): the
#: p-values are reproducible
PERMUTATION_SEED = 20261125


def draw_seed(label: int, cell_keys: np.ndarray, cell_weights: np.ndarray | None) -> int:
    """The seed of one permutation test's draws: :data:`PERMUTATION_SEED` mixed with the
    redrawn cell (its class ``label``, its rows' score keys in score order, their weights).

    The same data draw the same p-value on every run and thread, whatever other subgroups
    are evaluated beside it; other data draw other subsets. With one seed for every data set
    (found by review) the draws were the same few hundred subsets everywhere, and their
    chance error was every call's: under no bias the positive AEG's test rejected 6.1% of
    data sets at 0.05 (exactly, n = 30 positives, cells of 3), against the exact test's 4.1%.

    Examples
    --------
    >>> keys = np.array([3, 9], dtype=np.uint64)
    >>> draw_seed(1, keys, None) == draw_seed(1, keys.copy(), None) != draw_seed(0, keys, None)
    True
    """
    digest = hashlib.blake2b(digest_size=8, person=b"fastbias-draws")
    digest.update(PERMUTATION_SEED.to_bytes(8, "little") + bytes([label]))
    digest.update(np.ascontiguousarray(cell_keys).tobytes())
    if cell_weights is not None:  # (+ 0.0: a weight of -0.0 is 0, whose bytes differ; found
        # by review, the seed followed the order of rows weighing -0.0 and 0 tied in score)
        digest.update((np.asarray(cell_weights, dtype=np.float64) + 0.0).tobytes())
    return int.from_bytes(digest.digest(), "little") >> 1  # (an int64 for the kernels)


def check_significance(significance):
    """``significance=`` of the entry points: None, "holm" or "bh"."""
    if significance is not None and significance not in SIGNIFICANCE_METHODS:
        raise ValueError(f"significance must be None, 'holm' or 'bh', got {significance!r}")
    return significance


def adjust_pvalues(p_values, method: str) -> np.ndarray:
    """Holm (step-down) or Benjamini-Hochberg (step-up) adjusted p-values; NaN stays NaN.

    Parameters
    ----------
    p_values : array-like
        Raw p-values; NaN entries are not tests (they neither count in the
        family nor get an adjusted value).
    method : {"holm", "bh"}

    Returns
    -------
    numpy.ndarray
        Adjusted p-values in the shape given: reject at level ``alpha``
        exactly where the adjusted value is ``<= alpha``.

    Examples
    --------
    >>> from fastbias.intervals.significance import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.04, 0.03], "holm").round(3).tolist()
    [0.03, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.04, 0.03], "bh").round(3).tolist()
    [0.03, 0.04, 0.04]
    """
    check_significance(method)
    if method is None:
        raise ValueError("method must be 'holm' or 'bh'")
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    flat = p.reshape(-1)
    tested = np.flatnonzero(np.isfinite(flat))
    m = tested.shape[0]
    if m == 0:
        return out
    order = tested[np.argsort(flat[tested], kind="stable")]
    ranked = flat[order]
    if method == "holm":
        adjusted = np.maximum.accumulate((m - np.arange(m)) * ranked)
    else:
        adjusted = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    result = np.full(flat.shape, np.nan)
    result[order] = np.minimum(adjusted, 1.0)
    return result.reshape(p.shape)


def _two_sided_p(estimate, se):
    """Normal two-sided p-value of ``estimate / se``; NaN where either is not finite.
    A zero se gives 1 for a zero estimate and 0 otherwise."""
    est = np.asarray(estimate, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    p = np.full(est.shape, np.nan)
    ok = np.isfinite(est) & np.isfinite(se)
    positive = ok & (se > 0)
    z = np.abs(est[positive]) / se[positive]
    p[positive] = [math.erfc(v / math.sqrt(2.0)) for v in z]
    flat = ok & (se == 0)
    p[flat] = np.where(est[flat] == 0, 1.0, 0.0)
    return p


def _normal_exceedance(statistic, centre, mean, variance) -> np.ndarray:
    """``P(|T - centre| >= |statistic - centre|)`` for ``T ~ N(mean, variance)``, elementwise:
    the p-value of the permutation test's statistic (the distance from the null's value, as
    the drawn test uses) under the normal law with the permutation distribution's exact
    moments. NaN where an input is not finite."""
    statistic, centre, mean, variance = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (statistic, centre, mean, variance)))
    out = np.full(statistic.shape, np.nan)
    for i in np.ndindex(statistic.shape):
        distance = abs(statistic[i] - centre[i])
        if not (np.isfinite(distance) and np.isfinite(mean[i]) and np.isfinite(variance[i])):
            continue
        if variance[i] <= 0.0:
            out[i] = 1.0 if abs(mean[i] - centre[i]) >= distance - 1e-12 * max(1.0, distance) \
                else 0.0
            continue
        sd = math.sqrt(variance[i])
        upper = 0.5 * math.erfc((centre[i] + distance - mean[i]) / (sd * math.sqrt(2.0)))
        lower = 0.5 * math.erfc(-(centre[i] - distance - mean[i]) / (sd * math.sqrt(2.0)))
        out[i] = min(1.0, upper + lower)
    return out


#: an AUC metric's difference from its universe's AUC is a difference of two variances and a
#: covariance; where it is below this many times sqrt(n_terms) 2**-53 of their sum, it is
#: rounding and the test is not made (a subgroup holding every row but one, weighted 2**40
#: times it, gave p = 0.075 where exact arithmetic gives 0.0935; at 2**45, p = 0)
DIFFERENCE_RESOLUTION = 2.0


def difference_standard_errors(sums: PlacementSums, table: pd.DataFrame,
                               flat=(False, False, False, False), tolerance=None,
                               own: bool = False):
    """Standard errors of ``metric - overall AUC`` (AUC metrics) and of the AEGs.

    ``flat``: ``(every score equal, every positive above every negative, the positives'
    placements all the same, the negatives')`` over the rows (see
    :func:`~fastbias.intervals.delong._flat_universe`; not known out of core);
    ``tolerance``: how much of a variance its sums' rounding may be (default
    ``VARIANCE_TOLERANCE``; see :func:`~fastbias.intervals.delong._delong_variance`).

    Returns ``(se, overall_auc, cancelled)``: ``se`` a dict metric -> array (one entry
    per subgroup), ``overall_auc`` per subgroup the AUC of the rows it is
    compared with (what its AUC metrics are compared with), ``cancelled`` per AUC metric
    where the variance of the difference is below the rounding of its terms
    (DIFFERENCE_RESOLUTION), or where the rounding its three terms may carry (each
    variance's bound from :func:`~.delong._delong_variance`, the covariance's from its cross
    sums and weights; worked out in exact rationals where the sums are exact) could be more
    than ``tolerance`` of it. The variance
    of a difference is ``sum_r w_r (psi_M(r) - psi_O(r))^2`` over rows, where
    ``psi`` of an estimate ``theta`` with samples X (weight W_X) and Y
    (W_Y) is ``(V(r) - theta) / sqrt(W (W - 1))`` on a row of the sample of
    weight ``W`` and 0 elsewhere, ``V`` the row's placement divided by the
    other sample's weight: for one estimate that is DeLong's variance, for
    two on the same samples it is the paired test's.

    ``own``: each metric's own standard error instead (an interval's, out of core:
    :func:`standard_errors_of_sums`), and in place of ``overall_auc`` the standard error of
    the AUC of each subgroup's universe; ``cancelled`` then marks the variances not known
    within their sums' rounding.
    """
    totals = sums.class_totals
    w_neg, w_pos = totals[:, 0], totals[:, 1]
    u_overall = sums.overall[:, OVERALL_U]
    with np.errstate(invalid="ignore", divide="ignore"):
        overall_auc = np.where((w_pos > 0) & (w_neg > 0), u_overall / (w_pos * w_neg), np.nan)
    # (the rows, and each subgroup's memberships: how many terms its sums added)
    n_terms = sums.class_rows.sum(axis=1) + sums.cell_rows.sum(axis=1)
    same_score, separated, *overall_parts = flat
    flat_parts = sums.flat_parts
    if flat_parts is None and sums.spans is not None:  # out of core: from the cells' spans
        overall_parts = list(class_flat_parts(sums.spans))

        def flat_parts(groups):
            return flat_parts_of_spans(sums.spans)
    rows = cell_rows_of(sums.cell_rows, sums.class_rows)
    weight = _cell_weights(sums)
    # what each cell's weight was made from: a background's, its class's total
    made_from = {**{("subgroup", label): weight[("subgroup", label)] for label in (0, 1)},
                 **{("background", label): totals[:, label] for label in (0, 1)}}
    c = sums.cross.T
    made = _metric_cross_sums(c, u_overall)
    # per metric: (sum over X of w c_M c_O, of w c_O), (over Y of w d_M d_O, of w d_O), each
    # with what it was made from, whose rounding it carries (c[0] + c[2] is the sum of
    # w c_O^2 over Dg+ that BNSP's placements c_O - c_g were taken from; likewise on Dg-)
    cross = {
        "subgroup_auc": (made["subgroup_auc"][:2] + (c[0], c[1]),
                         made["subgroup_auc"][2:] + (c[4], c[5])),
        "bpsn_auc": (made["bpsn_auc"][:2] + (c[7] + c[0], np.abs(u_overall) + c[1]),
                     made["bpsn_auc"][2:] + (c[4] + c[6], c[5])),
        "bnsp_auc": (made["bnsp_auc"][:2] + (c[0] + c[2], c[1]),
                     made["bnsp_auc"][2:] + (c[3] + c[4], np.abs(u_overall) + c[5])),
    }
    share = rounding_share(n_terms)
    terms = metric_terms(n_terms, sums.cell_rows, sums.joins)
    # how far each cell's weight may be off, in shares of it: a background's is its class's
    # less the subgroup's, so its class's rounding
    off = {(part, label): (totals[:, label] / np.where(weight[(part, label)] > 0,
                                                       weight[(part, label)], 1.0)
                           if part == "background" else 1.0)
           for part, label in weight}

    tolerance = VARIANCE_TOLERANCE if tolerance is None else tolerance
    ratios = None  # the classes' read ratios: only where the absolute bounds leave doubt
    overall_var = [None]  # (the last variances' AUC of the universe: its own variance)

    def variances(bits, parts=None) -> tuple:
        # where the classes' prefix sums are not exact, what their reads may cost the cross
        # sums (the variances' floors count their own: delong.sum_floors)
        reads = None
        if bits is None or not np.all(totals < 2.0 ** (52 - bits)):
            exact_classes = (np.all(totals < 2.0 ** (52 - bits), axis=1) if bits is not None
                             else np.zeros(len(totals), dtype=bool))
            reads = (exact_classes, _relative_reads(ratios, share))
        var_o, var_o_off = _delong_variance(
            u_overall, sums.overall[:, OVERALL_SQ_POS], sums.overall[:, OVERALL_SQ_NEG], w_pos,
            w_neg, n_terms,
            floors=overall_floors(u_overall, sums.overall[:, OVERALL_SQ_POS],
                                  sums.overall[:, OVERALL_SQ_NEG], w_pos, w_neg, bits,
                                  n_terms, ratios),
            tolerance=tolerance,
            exact=_exact_sums(bits, totals.max(axis=1), np.abs(u_overall),
                              sums.overall[:, OVERALL_SQ_POS], sums.overall[:, OVERALL_SQ_NEG]),
            flat=same_score or separated, with_bound=True, flat_parts=overall_parts)
        floors = sum_floors(sums.delong, sums.weights[:, 0], sums.weights[:, 1], totals, bits,
                            n_terms, ratios)
        out, cancelled = {}, {}
        overall_var[0] = var_o
        if own:  # (the universe's AUC not known within rounding: look further, as for a metric)
            cancelled["overall_auc"] = np.isnan(var_o) & (w_pos > 1) & (w_neg > 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            for j, metric in enumerate(METRIC_COLUMNS):
                x_cell, y_cell = METRIC_SAMPLES[metric]
                w_x, w_y = weight[x_cell], weight[y_cell]
                var, var_off = _delong_variance(
                    sums.delong[:, SK.DELONG_U + j], sums.delong[:, SK.DELONG_SQ_X + j],
                    sums.delong[:, SK.DELONG_SQ_Y + j], w_x, w_y, terms[j],
                    [f[:, j] for f in floors], rows[x_cell], rows[y_cell], tolerance,
                    _exact_sums(bits, totals.max(axis=1), *(f[:, j] for f in floors)),
                    same_score or (separated and metric in AUC_METRICS), with_bound=True,
                    flat_parts=None if parts is None else parts[metric],
                    scales=(made_from[x_cell], made_from[y_cell]))
                # (NaN with both samples of weight above 1: a part not known within rounding)
                cancelled[metric] = np.isnan(var) & (w_x > 1) & (w_y > 1)
                if metric in AUC_METRICS and not own:
                    theta = table[metric].to_numpy(dtype=np.float64)
                    (cx, ox, floor_cx, floor_ox), (cy, oy, floor_cy, floor_oy) = cross[metric]
                    if reads is not None:
                        floor_cx, floor_ox, floor_cy, floor_oy = _cross_reads(
                            metric, (floor_cx, floor_ox, floor_cy, floor_oy), totals, weight,
                            *reads)
                    t_x = cx / (w_y * w_neg) - theta * ox / w_neg
                    t_y = cy / (w_x * w_pos) - theta * oy / w_pos
                    root_x = np.sqrt(w_x * (w_x - 1.0) * w_pos * (w_pos - 1.0))
                    root_y = np.sqrt(w_y * (w_y - 1.0) * w_neg * (w_neg - 1.0))
                    # how far each may be off through the sums' and the weights' rounding
                    t_x_off = share * ((2.0 + off[y_cell]) * floor_cx / (w_y * w_neg)
                                       + 2.0 * np.abs(theta) * floor_ox / w_neg)
                    t_y_off = share * ((2.0 + off[x_cell]) * floor_cy / (w_x * w_pos)
                                       + 2.0 * np.abs(theta) * floor_oy / w_pos)
                    cov_x_off = (t_x_off + np.abs(t_x) * share * (1.0 + off[x_cell])) / root_x
                    cov_y_off = (t_y_off + np.abs(t_y) * share * (1.0 + off[y_cell])) / root_y
                    # a sample whose placements are all the same: its psi are 0, and so is its
                    # part of the covariance, exactly
                    flat_x, flat_y = (False, False) if parts is None else parts[metric]
                    # (and where the overall AUC's psi are 0: on its positives, X's rows)
                    flat_x, flat_y = flat_x | overall_parts[0], flat_y | overall_parts[1]
                    exact = _exact_sums(bits, totals.max(axis=1), floors[0][:, j],
                                        np.abs(u_overall), floor_cx, floor_ox, floor_cy,
                                        floor_oy)
                    # every psi of either estimate 0: no covariance, exactly
                    no_cov = same_score | separated | (flat_x & flat_y)
                    cov = np.where(no_cov, 0.0, np.where(flat_x, 0.0, t_x / root_x)
                                   + np.where(flat_y, 0.0, t_y / root_y))
                    cov_off = np.where(no_cov, 0.0, np.where(flat_x, 0.0, cov_x_off)
                                       + np.where(flat_y, 0.0, cov_y_off))
                    # (the AUC of all rows' variance not known: neither is the difference's;
                    # found by review, p-values NaN with no recheck and the wrong cause)
                    cancelled[metric] |= np.isnan(var_o) & (w_pos > 1) & (w_neg > 1)
                    difference = var + var_o - 2.0 * cov
                    # the difference of two estimates that share almost all their rows is a
                    # small difference of large terms: where the rounding of its terms could
                    # be a noticeable part of it, it is not known. Found by review: out of
                    # core, a subgroup of every row but one, p = 0.30 against an exact 0.81
                    vague = var_off + var_o_off + 2.0 * cov_off > tolerance * difference
                    if exact is not None and np.any(vague & exact):
                        # exact sums: the covariance's numerators in exact rationals
                        redo = np.flatnonzero(vague & exact & ~np.isnan(difference) & ~no_cov)
                        t_x[redo], t_y[redo] = _exact_cross_terms(
                            redo, sums.delong[:, SK.DELONG_U + j], w_x, w_y, w_neg, w_pos,
                            cx, ox, cy, oy)
                        t_x, t_y = np.where(flat_x, 0.0, t_x), np.where(flat_y, 0.0, t_y)
                        cov[redo] = t_x[redo] / root_x[redo] + t_y[redo] / root_y[redo]
                        # (each numerator rounded once, each root and quotient a few ulps:
                        # 8 ulps of each term bounds them)
                        cov_off[redo] = 8.0 * 2.0 ** -53 * (np.abs(t_x[redo]) / root_x[redo]
                                                            + np.abs(t_y[redo]) / root_y[redo])
                        difference = var + var_o - 2.0 * cov
                        vague = var_off + var_o_off + 2.0 * cov_off > tolerance * difference
                    scale = var + var_o + 2.0 * np.abs(cov)
                    cancelled[metric] |= vague | (difference < DIFFERENCE_RESOLUTION
                                                  * np.sqrt(n_terms) * 2.0 ** -53 * scale)
                    var = difference
                out[metric] = np.sqrt(np.maximum(var, 0.0))
        return out, cancelled

    # the weights' digits are read only where the worst case leaves a variance unknown
    lazy = callable(sums.weight_bits)
    bits = None if lazy else sums.weight_bits
    out, cancelled = variances(bits)
    if lazy and any(mask.any() for mask in cancelled.values()):
        bits = bits_of(sums)
        out, cancelled = variances(bits)
    if sums.read_ratios is not None and any(mask.any() for mask in cancelled.values()):
        # (a pass over the weights: only where the reads' absolute bounds leave doubt)
        ratios = ratios_of(sums)
        out, cancelled = variances(bits)
    unsure = np.flatnonzero(np.any(list(cancelled.values()), axis=0))
    if flat_parts is not None and unsure.size:
        # (a sample whose placements are all the same: its parts exactly 0)
        parts = flat_parts(unsure)
        if any(x.any() or y.any() for x, y in parts.values()):
            out, cancelled = variances(bits, parts)
    if any(mask.any() for mask in cancelled.values()) and _exact_of(sums) is not None:
        _exact_tests(sums, out, cancelled, own)
    if own:
        cancelled.pop("overall_auc")
        return out, _universe_standard_errors(sums, overall_var[0]), cancelled
    return out, overall_auc, cancelled


def standard_errors_of_sums(table: pd.DataFrame, sums: PlacementSums) -> tuple:
    """DeLong standard errors of the table's five metrics per subgroup, and of the AUC of each
    subgroup's universe, from placement sums alone (out of core: the chunks' joined, where the
    rows are not at hand): the variances, their floors and exact fallbacks of
    :func:`difference_standard_errors` (``own=True``). A variance the sums cannot tell from
    their rounding (a background too small to resolve, one whose weight vanished from its
    class's, a part within rounding that the exact sums cannot settle) is NaN, marked in
    ``unresolved``, where in memory the cells' own rows would settle it.

    Returns ``(se, universe_se)``: a :class:`~.delong.StandardErrors` and a (k,) array.
    """
    se, universe_se, cancelled = difference_standard_errors(sums, table, own=True)
    unresolved = _unresolved_tests(sums, cancelled)
    absorbed = _absorbed_tests(table, sums)
    for metric in METRIC_COLUMNS:
        unresolved[metric] = unresolved[metric] | absorbed[metric]
        se[metric] = np.where(unresolved[metric], np.nan, se[metric])
    return StandardErrors(se, unresolved), universe_se


def universe_standard_error(sums: PlacementSums) -> float:
    """The standard error of the AUC of the rows of ``sums``'s first subgroup's universe,
    from its sums alone (out of core: the chunks' sums of all their rows joined, one
    subgroup holding every row), as :func:`standard_errors_of_sums` works it out."""
    return float(difference_standard_errors(sums, pd.DataFrame(index=range(len(sums.weights))),
                                            own=True)[1][0])


def _universe_standard_errors(sums: PlacementSums, var_o) -> np.ndarray:
    """Per subgroup, the standard error of the AUC of its universe, from ``var_o`` (its float
    sums' variance: NaN where not known within their rounding) or, there, from the sums
    made exact (out of core: the chunks' joined, where they could be made)."""
    var_o = np.array(var_o, dtype=np.float64, copy=True)
    totals = sums.class_totals
    unknown = np.flatnonzero(np.isnan(var_o) & (totals[:, 0] > 1) & (totals[:, 1] > 1))
    if unknown.size and _exact_of(sums) is not None:
        exact = _exact_of(sums)
        for i in unknown.tolist():
            u, sq_pos, sq_neg = exact.overall(i)
            found = exact_variance(u, sq_pos, sq_neg, totals[i, 1], totals[i, 0])
            if found is not None:
                var_o[i] = float(found)
    return np.sqrt(np.maximum(var_o, 0.0), where=np.isfinite(var_o), out=np.full_like(var_o,
                                                                                       np.nan))


def _exact_of(sums: PlacementSums):
    """The sums made exact: the walk's :class:`~.exact_sums.ExactSums` in memory, the
    chunks' joined out of core (:class:`~.placement_sums.JoinedExact`), or None (the numpy
    tier, sums that cannot be exact)."""
    return None if sums.exact is None else sums.exact()


def _cell_weights(sums: PlacementSums) -> dict:
    """cell -> (k,) weight of each subgroup's cell (its background's: its class's less it)."""
    return {("subgroup", 0): sums.weights[:, 0], ("subgroup", 1): sums.weights[:, 1],
            ("background", 0): sums.weights[:, 2], ("background", 1): sums.weights[:, 3]}


def _exact_gaps(sums: PlacementSums, gaps: dict, rounding: dict, which: dict) -> None:
    """Each test's difference at the entries ``which`` marks, from the walk's exact sums
    (``sums.exact``), in rational arithmetic and rounded once (``rounding`` then half an
    ulp of it): an AUC metric's from the AUC of all rows, an AEG's from 0 (``1/2 - theta``),
    where the difference of the two doubles, or a weighted AEG's double-double counts, could
    be off by more than the test allows (a model separating all but ten negatives, with
    pairs of identities: 101 tests recomputed from their rows, 10 s at 1.8M rows). In
    place."""
    weight = _cell_weights(sums)
    w_neg, w_pos = sums.class_totals[:, 0], sums.class_totals[:, 1]
    exact = _exact_of(sums)
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = METRIC_SAMPLES[metric]
        for i in np.flatnonzero(which[metric]).tolist():
            pairs = Fraction(float(weight[x_cell][i])) * Fraction(float(weight[y_cell][i]))
            total = Fraction(float(w_pos[i])) * Fraction(float(w_neg[i]))
            if pairs > 0 and total > 0:
                theta = exact.delong(i)[SK.DELONG_U + j] / pairs
                u_overall = exact.overall(i)[0]  # (of the rows subgroup i is compared with)
                gap = float(theta - u_overall / total if metric in AUC_METRICS
                            else Fraction(1, 2) - theta)
                gaps[metric][i] = gap
                rounding[metric][i] = 2.0 ** -53 * abs(gap)


def _metric_cross_sums(c, u_overall) -> dict:
    """AUC metric -> ``(cx, ox, cy, oy)``: over its X sample the sums of ``w c_M c_O`` and of
    ``w c_O``, over its Y sample of ``w d_M d_O`` and ``w d_O``, from the cross sums ``c``
    (indexed by their columns, ``SK.member_overall_cross_sums``; arrays or exact numbers)
    and the overall AUC's U."""
    return {"subgroup_auc": (c[0], c[1], c[4], c[5]),
            "bpsn_auc": (c[7] - c[0], u_overall - c[1], c[6], c[5]),
            "bnsp_auc": (c[2], c[1], c[3] - c[4], u_overall - c[5])}


def _exact_tests(sums: PlacementSums, se: dict, cancelled: dict, alone: bool = False) -> None:
    """The standard errors :func:`difference_standard_errors` left ``cancelled`` (its float
    sums could not tell them from their rounding), from the walk's exact sums
    (``sums.exact``, :class:`~.exact_sums.ExactSums`): an AUC metric's difference from the
    AUC of all rows by :func:`~.exact_sums.exact_difference_variance`, an AEG's variance by
    :func:`~.exact_sums.exact_variance` (with ``alone``, every metric's own variance so).
    In place."""
    exact, weight = _exact_of(sums), _cell_weights(sums)
    w_neg, w_pos = sums.class_totals[:, 0], sums.class_totals[:, 1]
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = METRIC_SAMPLES[metric]
        for i in np.flatnonzero(cancelled[metric]).tolist():
            sums_i = exact.delong(i)
            own = (sums_i[SK.DELONG_U + j], sums_i[SK.DELONG_SQ_X + j],
                   sums_i[SK.DELONG_SQ_Y + j], weight[x_cell][i], weight[y_cell][i])
            if metric in AUC_METRICS and not alone:
                u, sq_pos, sq_neg = exact.overall(i)
                var = exact_difference_variance(
                    own, (u, sq_pos, sq_neg, w_pos[i], w_neg[i]),
                    _metric_cross_sums(exact.cross(i), u)[metric])
            else:
                found = exact_variance(*own)
                var = float("nan") if found is None else float(found)
            if np.isfinite(var):
                se[metric][i] = np.sqrt(max(var, 0.0))
                cancelled[metric][i] = False


def _flat_aeg_gap(gap, se):
    """An AEG whose standard error is 0: each sample's placements are all the same, so its
    rows and the other's lie apart or all at one score and the AEG is -1/2, 0 or 1/2; one
    within 1/4 of 0 is the weighted counts' rounding of 0 (found by review: every negative
    at one score, weighted, gave an AEG of 3.7e-32 and p = 0, "significant")."""
    return np.where((se == 0) & (np.abs(gap) < 0.25), 0.0, gap)


def _exact_cross_terms(at, u, w_x, w_y, w_neg, w_pos, cx, ox, cy, oy) -> tuple:
    """The covariance numerators ``t_x``, ``t_y`` of :func:`difference_standard_errors` at
    the entries ``at``, in exact rational arithmetic from sums that are exact (the metric's
    estimate ``u / (w_x w_y)`` too)."""
    t_x, t_y = np.empty(len(at)), np.empty(len(at))
    for i, k in enumerate(at):
        t_x[i], t_y[i] = (float(t) for t in cross_numerators(
            *(float(v[k]) for v in (u, w_x, w_y, w_neg, w_pos, cx, ox, cy, oy))))
    return t_x, t_y


def permutation_moments(n, n_fixed, size, other_total, f_sum, f_sq, pf_sum, p_sum, p_sq,
                        above_sum, above_sq):
    """Exact mean and variance, under the permutation null, of the three metrics of a
    subgroup whose cell of ``size`` rows is redrawn from its class of ``n`` rows (unweighted
    rows), the other cell (``n_fixed`` rows) held fixed; elementwise over subgroups.

    Each metric is the mean over the drawn rows of a per-row value (plus a constant), so its
    permutation variance is ``sigma^2 / size * (n - size) / (n - 1)`` with ``sigma^2`` the
    values' variance over the class. Over the class's rows: ``f_sum``/``f_sq`` the sum of
    the fixed cell's placement ``f`` (its rows on the other side of the row, ties 1/2) and
    of its square, ``pf_sum`` of ``f`` times the row's overall placement ``p``,
    ``p_sum``/``p_sq`` of ``p`` and its square, ``above_sum``/``above_sq`` of the weight of
    the own class above the row (itself left out) and its square; ``other_total`` the other
    class's rows. Returns (3, 2, ...): mean and variance of the subgroup AUC (values
    ``f / n_fixed``), the cross AUC (``(p - f) / (other_total - n_fixed)``) and
    ``1/2 - AEG`` (``above / (n - size)`` less ``(size - 1) / (2 (n - size))``); NaN where a
    denominator is 0.
    """
    n, n_fixed, size, other_total, f_sum, f_sq, pf_sum, p_sum, p_sq, above_sum, above_sq = (
        np.asarray(v, dtype=np.float64) for v in (n, n_fixed, size, other_total, f_sum, f_sq,
                                                  pf_sum, p_sum, p_sq, above_sum, above_sq))
    out = np.full((3, 2, *np.broadcast(n, f_sum).shape), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        shrink = np.where(n > 1, (n - size) / ((n - 1.0) * size), 0.0)
        mean = f_sum / n
        has = n_fixed > 0
        out[0, 0] = np.where(has, mean / n_fixed, np.nan)
        out[0, 1] = np.where(has, np.maximum(f_sq / n - mean * mean, 0.0) / (n_fixed * n_fixed)
                             * shrink, np.nan)
        rest = other_total - n_fixed
        mean = (p_sum - f_sum) / n
        second = (p_sq - 2.0 * pf_sum + f_sq) / n
        out[1, 0] = np.where(rest > 0, mean / rest, np.nan)
        out[1, 1] = np.where(rest > 0, np.maximum(second - mean * mean, 0.0) / (rest * rest)
                             * shrink, np.nan)
        scale = n - size
        mean = above_sum / n
        out[2, 0] = np.where(scale > 0, mean / scale - (size - 1.0) / (2.0 * scale), np.nan)
        out[2, 1] = np.where(scale > 0, np.maximum(above_sq / n - mean * mean, 0.0)
                             / (scale * scale) * shrink, np.nan)
    return out


def _class_moments(sums: PlacementSums) -> tuple:
    """:func:`permutation_moments` of every subgroup with its negatives redrawn and with its
    positives redrawn (the class sums read off the placement sums), and which class the
    subgroup AUC's test redraws (its smaller cell)."""
    d, x = sums.delong, sums.cross
    u_sub, u_bpsn, u_bnsp = (d[:, SK.DELONG_U + j] for j in range(3))
    cells, classes = sums.cell_rows, sums.class_rows
    side = {}
    for label in (0, 1):
        if label == 0:  # negatives redrawn: the fixed cell is Dg+, placed above each negative
            f_sum, f_sq = u_sub + u_bnsp, d[:, SK.DELONG_SQ_Y] + d[:, SK.DELONG_SQ_Y + 2]
            pf_sum, p_sq = x[:, 3], sums.overall[:, OVERALL_SQ_NEG]
        else:  # positives redrawn: the fixed cell is Dg-, placed below each positive
            f_sum, f_sq = u_sub + u_bpsn, d[:, SK.DELONG_SQ_X] + d[:, SK.DELONG_SQ_X + 1]
            pf_sum, p_sq = x[:, 7], sums.overall[:, OVERALL_SQ_POS]
        side[label] = permutation_moments(
            classes[:, label], cells[:, 1 - label], cells[:, label], classes[:, 1 - label],
            f_sum, f_sq, pf_sum, sums.overall[:, OVERALL_U], p_sq,
            sums.above[:, 2 * label], sums.above[:, 2 * label + 1])
    return side, np.where(cells[:, 0] <= cells[:, 1], 0, 1)


# per metric: the class its permutation test redraws ("smaller": the subgroup's smaller cell),
# the row of permutation_moments' result, and the statistic's null value (None: overall AUC)
_PERMUTED = {"subgroup_auc": ("smaller", 0, None), "bpsn_auc": (0, 1, None),
             "negative_aeg": (0, 2, 0.5), "bnsp_auc": (1, 1, None), "positive_aeg": (1, 2, 0.5)}


def _moment_pvalues(sums: PlacementSums, values: dict, overall_auc: np.ndarray) -> dict:
    """Per metric, the permutation p-value of every subgroup from the normal law with the
    permutation distribution's exact moments (unweighted rows). A subgroup AUC redraws its
    smaller cell, the cross AUC and the AEG their subgroup cell; an AEG's statistic is
    ``1/2 - AEG``."""
    side, smaller = _class_moments(sums)
    out = {}
    for metric, (label, row, null) in _PERMUTED.items():
        mv = (np.where(smaller == 0, side[0][row], side[1][row]) if label == "smaller"
              else side[label][row])
        statistic = values[metric] if null is None else 0.5 - values[metric]
        out[metric] = _normal_exceedance(statistic, overall_auc if null is None else null,
                                         mv[0], mv[1])
    return out


def _hoeffding_pvalues(sums: PlacementSums, values: dict, overall_auc: np.ndarray) -> dict:
    """Per metric, Hoeffding's (1963, Theorem 4) bound on the permutation p-value of every
    subgroup (unweighted rows): the statistic is the mean of the redrawn cell's per-row
    values, in a range of 1 (AUCs) or ``(n - 1) / (n - size)`` (an AEG, whose permutation
    mean is 0), so ``P(|T - null| >= d) <= 2 exp(-2 size (d - |mean - null|)^2 / range^2)``.
    A valid, conservative p-value where the rows to draw from are not in memory."""
    side, smaller = _class_moments(sums)
    cells, classes = sums.cell_rows, sums.class_rows
    out = {}
    for metric, (label, row, null) in _PERMUTED.items():
        redrawn = (np.where(smaller == 0, 0, 1) if label == "smaller"
                   else np.full(cells.shape[0], label))
        index = np.arange(cells.shape[0])
        size = cells[index, redrawn].astype(np.float64)
        n = classes[index, redrawn].astype(np.float64)
        mean = (np.where(smaller == 0, side[0][row][0], side[1][row][0]) if label == "smaller"
                else side[label][row][0])
        with np.errstate(invalid="ignore", divide="ignore"):
            if null is None:  # an AUC: the distance from the overall AUC, values in [0, 1]
                distance = np.abs(values[metric] - overall_auc)
                offset, spread = np.abs(mean - overall_auc), np.ones_like(size)
            else:  # an AEG: its distance from 0, centred at 0 exactly
                distance = np.abs(values[metric])
                offset, spread = np.zeros_like(size), (n - 1.0) / (n - size)
            excess = distance - offset
            bound = np.minimum(1.0, 2.0 * np.exp(-2.0 * size * excess ** 2 / spread ** 2))
            out[metric] = np.where(np.isfinite(distance) & np.isfinite(offset),
                                   np.where((excess > 0) & (spread > 0), bound, 1.0), np.nan)
    return out


def permutation_draws(family_size: int, alpha: float) -> int:
    """The most draws of one permutation test: enough that a p-value, ``1 / (draws + 1)`` at
    the least, can pass the smallest threshold a Holm or BH adjustment of ``family_size``
    tests at ``alpha`` uses (``alpha / family_size``); at least 10,000 and at most 100,000."""
    return int(min(100_000, max(10_000, math.ceil(max(family_size, 1) / alpha))))


def _drawn_pvalues(walk, classes, memberships, values: dict, overall_auc: float, drawn: dict,
                   max_draws: int, workers: int, in_numpy: bool = False) -> dict:
    """Sequential Monte Carlo permutation p-values of the metrics flagged in ``drawn``
    (metric -> bool per subgroup), from the rows of one universe in memory.

    Per subgroup, up to two tests: one redraws its negatives (subgroup AUC when the
    negatives are the smaller cell, BPSN AUC, negative AEG), one its positives (subgroup AUC
    otherwise, BNSP AUC, positive AEG), the other cell held fixed. ``in_numpy`` (the
    kernels are still to compile): a test whose class is large against its cell draws in
    numpy (:func:`~.first_call.permutation_exceedances_in_numpy`, the same draws and
    result), the others in the kernel.
    """
    k = memberships.n_groups
    order = np.argsort(walk.codes, kind="stable")  # by subgroup and class, in score order within
    keys = walk.keys[order]
    weights = walk.weights[order] if walk.weights.size else None  # (None: each weighs 1)
    del order
    starts = np.zeros(2 * k + 1, dtype=np.int64)
    np.cumsum(np.bincount(walk.codes, minlength=2 * k), out=starts[1:])
    w_neg, w_pos = walk.class_totals
    u_overall = classes.u_overall  # the sum over either class of w x placement
    weighted = walk.weights.size > 0
    rows = memberships.cell_rows
    jobs = []
    sub_on_negatives = _subgroup_auc_redraws_negatives(rows)
    for g in range(k):
        for label, cross, aeg in REDRAWN_WITH_CLASS:
            metrics = ("subgroup_auc", cross, aeg)
            active = np.array([drawn["subgroup_auc"][g] and sub_on_negatives[g] == (label == 0),
                               drawn[cross][g], drawn[aeg][g]])
            if active.any():
                jobs.append((g, label, metrics, active))

    # per class a job draws from: placement, own class above (and weight), side by side
    packed = {label: classes.rows(label) for label in sorted({job[1] for job in jobs})}

    def run(share):
        results = []
        for g, label, metrics, active in share:
            fixed = 2 * g + (1 - label)  # the other cell of the subgroup
            f_keys = keys[starts[fixed]:starts[fixed + 1]]
            f_cum = (np.arange(f_keys.shape[0] + 1, dtype=np.float64) if weights is None else
                     np.concatenate([[0.0], np.cumsum(weights[starts[fixed]:starts[fixed + 1]])]))
            size = int(rows[g, label])
            redrawn = 2 * g + label
            cell = slice(starts[redrawn], starts[redrawn + 1])
            cell_weights = None if weights is None else \
                weights[cell][by_weight_within_ties(keys[cell], weights[cell])]
            seed = draw_seed(label, keys[cell], cell_weights)
            class_keys, other_total = (walk.neg, w_pos) if label == 0 else (walk.pos, w_neg)
            p = np.full(3, np.nan)
            observed = np.array([abs(values[metrics[0]][g] - overall_auc),
                                 abs(values[metrics[1]][g] - overall_auc),
                                 abs(values[metrics[2]][g])])
            exceedances = (permutation_exceedances_in_numpy
                           if in_numpy and draws_in_numpy(class_keys.shape[0], size)
                           else IK.permutation_exceedances)
            with np.errstate(over="ignore"):  # the draw stream's uint64 arithmetic wraps
                counts = exceedances(   # on purpose (uncompiled, numpy warns)
                    class_keys, packed[label], f_keys, f_cum, label == 0, size, other_total,
                    observed, active, overall_auc, PERMUTATION_HITS, max_draws,
                    seed, w_pos if label else w_neg, u_overall,
                    weighted)
            for j in np.flatnonzero(active):
                hits, draws, bound = counts[j]
                if bound * (max_draws + 1.0) <= 1.0:  # below any Monte Carlo p-value
                    p[j] = bound
                elif hits >= PERMUTATION_HITS:
                    p[j] = hits / draws
                else:
                    p[j] = (hits + 1.0) / (draws + 1.0)
            results.append((g, metrics, p))
        return results

    n_shares = max(1, min(workers, len(jobs)))
    shares = [jobs[j::n_shares] for j in range(n_shares)]
    out = {metric: np.full(k, np.nan) for metric in METRIC_COLUMNS}
    for part in run_pieces(run, shares, n_shares):
        for g, metrics, p in part:
            for j, metric in enumerate(metrics):
                if np.isfinite(p[j]):
                    out[metric][g] = p[j]
    return out


def attach_significance(table: pd.DataFrame, *, method: str, sorted_scores: SortedScores | None,
                        sample_weight=None, confidence: float = 0.95, scores=None,
                        memberships=None) -> pd.DataFrame:
    """Add ``<metric>_pvalue``, ``<metric>_pvalue_adjusted`` and ``<metric>_significant``.

    From the sorts the point estimate made (validated inputs), or its ``scores`` and
    ``memberships`` where it made none (see :func:`add_pvalues`): :func:`add_pvalues` then
    :func:`adjust_table`.
    """
    return adjust_table(add_pvalues(table, sorted_scores=sorted_scores,
                                    sample_weight=sample_weight, confidence=confidence,
                                    scores=scores, memberships=memberships),
                        method=method, confidence=confidence)


def add_pvalues(table: pd.DataFrame, *, sorted_scores: SortedScores | None, sample_weight=None,
                confidence: float = 0.95, family_size: int | None = None, scores=None,
                memberships=None) -> pd.DataFrame:
    """Add the raw two-sided ``<metric>_pvalue`` columns (see the module docstring).

    The AUC metrics are compared with the AUC of the rows ``sorted_scores``
    covers: the overall AUC, or with ``missing_subgroup="exclude"`` the AUC of
    the rows annotated for the subgroup. ``family_size`` (default: five per
    row of ``table``) and ``confidence`` set how far a permutation test may
    go (:func:`permutation_draws`). ``attrs["permutation_tests"]`` counts the
    permutation p-values. NaN: an undefined metric, or a DeLong variance that
    is (a cell of total weight at most 1).

    A point estimate counted in numpy on a first call (:mod:`fastbias.sweep.first_call`)
    passes no sorts but its ``scores`` and ``memberships``; the placement sums and the
    permutation draws are then computed in numpy (:mod:`.first_call`), as they are while
    their own kernels compile in the background: the same p-values (the DeLong sums a few
    ulps apart).
    """
    if sorted_scores is not None:
        scores, memberships = sorted_scores.scores, sorted_scores.memberships
    in_numpy = intervals_in_numpy_now("significance", sorted_scores is None,
                                      memberships.n_rows)
    return pvalues_of(table, scores, memberships, sorted_scores, sample_weight, confidence,
                      family_size, in_numpy)


#: the ``attrs`` a table of p-values counts (one universe's; universes' tables add them up)
COUNT_ATTRS = ("permutation_tests", "permutation_bounds", "permutation_untested",
               "significance_unresolved", "significance_pending")


def joined_universes(tables: list) -> pd.DataFrame:
    """The tables of several universes (``missing_subgroup="exclude"``) as one, with the
    counts of :data:`COUNT_ATTRS` added up (``pd.concat`` keeps ``attrs`` only where every
    table has the same, so the counts were lost, or showed one universe's where equal);
    the other ``attrs`` kept where every table has the same value."""
    out = pd.concat(tables)
    first = tables[0].attrs
    same = {name: value for name, value in first.items()
            if all(name in t.attrs and _same_value(t.attrs[name], value) for t in tables)}
    out.attrs = {**same, **{name: sum(t.attrs.get(name, 0) for t in tables)
                            for name in COUNT_ATTRS if any(name in t.attrs for t in tables)}}
    return out


def _same_value(a, b) -> bool:
    try:
        return bool(a == b) or (a != a and b != b)  # (NaN: the same)
    except (TypeError, ValueError):
        return False


def pvalues_of(table: pd.DataFrame, scores, memberships, sorted_scores: SortedScores | None,
               sample_weight, confidence: float, family_size: int | None,
               in_numpy: bool) -> pd.DataFrame:
    """:func:`add_pvalues` once it is decided whether in numpy (``in_numpy``; else from the
    kernels and the sorts)."""
    check_interval_weights_of(sample_weight, "significance tests", memberships.labels)
    sums, walk, classes = (placement_sums_in_numpy(scores, memberships, sample_weight)
                           if in_numpy else placement_sums(sorted_scores, sample_weight))
    if family_size is None:
        family_size = len(METRIC_COLUMNS) * len(table)
    max_draws = permutation_draws(family_size, round(1.0 - confidence, 12))
    workers = sorted_scores.workers if sorted_scores is not None else 1

    def draw(values, overall_auc, drawn):
        return _drawn_pvalues(walk, classes, memberships, values, float(overall_auc[0]), drawn,
                              max_draws, workers, in_numpy)

    def recheck(groups, wanted):
        return direct_variances(scores, memberships.labels, sample_weight, memberships,
                                groups, against_overall=True, wanted=wanted)

    return pvalues_from_sums(table, sums, draw,
                             recheck if recheck_rows(scores, sample_weight) else None,
                             table.attrs.get("overall_auc"), _flat_universe(walk))


def _samples_of_the_universe(sums: PlacementSums) -> dict:
    """Per AUC metric, which subgroups compare the very samples of the overall AUC (of the
    rows they are compared with): the cells beside the metric's two cells weigh nothing.
    E.g. the subgroup AUC of a subgroup holding every row, or every row of weight. The
    metric is then the overall AUC, and its difference from it only rounding: computed as a
    difference of float sums, its variance would be rounding too, and its p-value noise (0
    where the variance happened to cancel to 0). (A cell beside is weighed as its class's
    weight less the metric's cell; where its rows weigh nothing both sums add the same
    weights in the same order, score order, so the difference is exactly 0.)"""
    part = {("subgroup", 0): 0, ("subgroup", 1): 1, ("background", 0): 2, ("background", 1): 3}
    out = {}
    for metric in AUC_METRICS:
        beside = []
        for where, label in METRIC_SAMPLES[metric]:
            other = ("background" if where == "subgroup" else "subgroup", label)
            beside.append(sums.weights[:, part[other]] <= 0.0)
        out[metric] = beside[0] & beside[1]
    return out


#: per class (0: negatives, 1: positives), the metrics whose permutation test redraws the
#: subgroup's rows of it (besides the subgroup AUC's: :func:`_subgroup_auc_redraws_negatives`)
REDRAWN_WITH_CLASS = ((0, "bpsn_auc", "negative_aeg"), (1, "bnsp_auc", "positive_aeg"))


def _subgroup_auc_redraws_negatives(cell_rows) -> np.ndarray:
    """Per subgroup, whether its subgroup AUC's permutation test redraws its negatives (the
    smaller cell; the negatives on a tie) rather than its positives."""
    return cell_rows[:, 0] <= cell_rows[:, 1]


def _cells_drawn(cell_rows, class_rows) -> tuple:
    """``(rows, min_cell, drawable)`` from the rows of each subgroup's cells (k, 2) and of its
    universe's classes ((k, 2), or (2,) for all): ``rows[(where, label)]`` per subgroup; per
    metric the rows of its smaller sample, and whether its test would be drawn were it
    needed (that sample under :data:`PERMUTATION_DRAWS_BELOW` rows, and at most 1,000 rows
    to redraw)."""
    cell_rows = np.asarray(cell_rows, dtype=np.int64).reshape(-1, 2)
    class_rows = np.asarray(class_rows, dtype=np.int64)
    rows = {("subgroup", 0): cell_rows[:, 0], ("subgroup", 1): cell_rows[:, 1],
            ("background", 0): class_rows[..., 0] - cell_rows[:, 0],
            ("background", 1): class_rows[..., 1] - cell_rows[:, 1]}
    # the rows a permutation test redraws: the smaller cell (subgroup AUC), else the subgroup's
    redrawn = {"subgroup_auc": cell_rows.min(axis=1) if cell_rows.shape[0] else np.zeros(0),
               "bpsn_auc": rows[("subgroup", 0)], "negative_aeg": rows[("subgroup", 0)],
               "bnsp_auc": rows[("subgroup", 1)], "positive_aeg": rows[("subgroup", 1)]}
    min_cell, drawable = {}, {}
    for metric in METRIC_COLUMNS:
        x_cell, y_cell = METRIC_SAMPLES[metric]
        min_cell[metric] = np.minimum(rows[x_cell], rows[y_cell])
        drawable[metric] = ((min_cell[metric] < PERMUTATION_DRAWS_BELOW)
                            & (redrawn[metric] <= 1000))
    return rows, min_cell, drawable


def _unresolved_tests(sums: PlacementSums, cancelled: dict) -> dict:
    """metric -> (k,) bool: the tests whose sums cannot be told from rounding: a metric that
    reads a background too small to resolve (:func:`~fastbias.intervals.delong.
    unresolved_backgrounds`), and an AUC metric whose difference from its universe's AUC
    ``cancelled`` (:func:`difference_standard_errors`; where the cells beside its samples
    weigh nothing at all it is that AUC, see :func:`_samples_of_the_universe`)."""
    unresolved = unresolved_backgrounds(sums.class_totals, sums.weights[:, 2:4],  # B-, B+
                                        sums.class_rows - sums.cell_rows,
                                        sums.class_rows.sum(axis=1) + sums.cell_rows.sum(axis=1))
    out = unresolved_metrics(unresolved)
    for metric, mask in cancelled.items():
        out[metric] = out[metric] | mask
    return out


def _absorbed_tests(table: pd.DataFrame, sums: PlacementSums) -> dict:
    """metric -> (k,) bool: the tests that read a background, or stand beside one, whose
    weight the table's exact cell weights (weighted tables) give as more than nothing while
    the sums, class less subgroup, give nothing: below 2**-53 of its class it vanished from
    the class's sums, which then cannot tell it from a background weighing nothing (found by
    review: the subgroup AUC's test gave p = 1 where exact arithmetic gives 0.003)."""
    k = len(table)
    if "background_negative_weight" not in table:
        return {metric: np.zeros(k, dtype=bool) for metric in METRIC_COLUMNS}
    exact = table[["background_negative_weight", "background_positive_weight"]].to_numpy(
        dtype=np.float64)
    absorbed = (exact > 0) & (sums.weights[:, 2:4] <= 0)
    either = absorbed.any(axis=1)
    return {"subgroup_auc": either, "bpsn_auc": either, "bnsp_auc": either,
            "negative_aeg": absorbed[:, 0], "positive_aeg": absorbed[:, 1]}


def _cross_reads(metric: str, floors: tuple, totals, weight: dict, exact, relative) -> tuple:
    """An AUC metric's cross floors ``(floor_cx, floor_ox, floor_cy, floor_oy)`` (see
    :func:`difference_standard_errors`) with what reading the classes' prefix sums may cost
    them where those are not exact (``exact`` (k,) per subgroup; ``relative`` (k, 2) as
    :func:`~.delong._relative_reads` gives it), each the least of an absolute and a
    relative bound (:func:`~.delong._least`, as the variances' floors). The reads that are
    not prefix sums: ``d_O``, the positives' weight above a negative (their total less a
    prefix), in the Y sums of every AUC metric; the positives' own weights in the overall
    AUC's U and in column 7 (BPSN's X), the negatives' in column 3 (BNSP's Y). The
    placements of the positives (``c_O``, ``c_g``) are prefix sums, within their own
    rounding."""
    w_neg, w_pos = (np.where(exact, 0.0, totals[:, c]) for c in (0, 1))
    rel_neg, rel_pos = (np.where(exact, 0.0, relative[:, c]) for c in (0, 1))
    sub_neg, sub_pos = weight[("subgroup", 0)], weight[("subgroup", 1)]
    floor_cx, floor_ox, floor_cy, floor_oy = floors
    if metric == "subgroup_auc":
        absolute = (0.0, 0.0, w_pos * sub_neg * sub_pos, w_pos * sub_neg)
    elif metric == "bpsn_auc":
        absolute = (w_pos * sub_neg * w_neg, w_pos * w_neg, w_pos * sub_neg * w_pos,
                    w_pos * sub_neg)
    else:  # bnsp_auc
        absolute = (0.0, 0.0, 2.0 * w_neg * sub_pos * w_pos, w_pos * w_neg + w_pos * sub_neg)
    rel = (rel_pos, rel_pos, np.maximum(rel_neg, rel_pos), rel_pos)
    return tuple(floor + _least(np.asarray(bound, dtype=np.float64), r, floor)
                 for floor, bound, r in zip((floor_cx, floor_ox, floor_cy, floor_oy), absolute,
                                            rel))


def pvalues_from_sums(table: pd.DataFrame, sums: PlacementSums, draw=None,
                      recheck=None, universe_auc: float | None = None,
                      flat=(False, False, False, False)) -> pd.DataFrame:
    """Add the raw ``<metric>_pvalue`` columns from the placement sums of the table's rows
    (one per subgroup, in its order), as :func:`add_pvalues` describes.

    ``draw(values, overall_auc, drawn)`` gives the Monte Carlo permutation p-values of the
    tests flagged in ``drawn`` (the rows are in memory). Without it (out of core, where
    the rows are not) those tests, of cells under :data:`PERMUTATION_DRAWS_BELOW` rows, get
    Hoeffding's bound on the permutation p-value (conservative: never smaller than the
    exact one) when unweighted, and are not tested (NaN) when weighted;
    ``attrs["permutation_bounds"]`` and ``attrs["permutation_untested"]`` count them.

    ``recheck(groups, wanted)`` (the rows are in memory; ``wanted`` (len(groups), 5) which of
    their tests): ``(variances, differences)``, metric -> the
    variances of the tests of those subgroups and the AUC metrics' differences from the AUC
    of all rows, from their cells' own rows
    (:func:`~fastbias.intervals.delong.direct_variances`); the tests the walk's sums cannot
    resolve (a background too small, a variance known only within rounding) then get their
    DeLong p-value from those, where DeLong's test is the one made (a permutation test of
    such a subgroup, which reads the same sums, is still not made).

    ``universe_auc``: the AUC of the rows every subgroup is compared with, exact (the point
    estimate's counts), where known; otherwise it comes from the walk's sums, within
    ``4 (n + 4) 2**-53`` of itself. An AUC metric's difference from it, where that rounding
    and the two doubles' could move its z by 1e-6, is taken from the cells' own rows
    (``recheck``), or its test is not made.
    """
    se, overall_auc, cancelled = difference_standard_errors(
        sums, table, flat, None if recheck is None else RECHECK_TOLERANCE)
    values = {metric: table[metric].to_numpy(dtype=np.float64) for metric in METRIC_COLUMNS}
    if universe_auc is not None and np.isfinite(universe_auc):
        overall_auc = np.full(len(table), float(universe_auc))
        auc_rounding = 0.0  # (each of the two AUCs is exact to half an ulp)
    else:  # the walk's sums: their rounding
        auc_rounding = 4.0 * (sums.class_rows.sum(axis=1) + sums.cell_rows.sum(axis=1) + 4) \
            * 2.0 ** -53 * np.abs(overall_auc)
    gaps = {metric: values[metric] if metric in AEG_METRICS else values[metric] - overall_auc
            for metric in METRIC_COLUMNS}
    unresolved = _unresolved_tests(sums, cancelled)
    too_small = _unresolved_tests(sums, {})  # (the backgrounds too small alone)
    absorbed = _absorbed_tests(table, sums)
    # an AUC metric's difference from the AUC of all rows, two doubles, within rounding that
    # could move its z by 1e-6 (taken from the cells' own rows where they are at hand) or by
    # 1e-3 (not tested otherwise): a subgroup of every row but ten weighted 2**36 times them
    # gave p = 0.734 against an exact 0.743, and p = 0 at 2**48
    # what double-double values (a weighted AEG from its counts, an AUC difference from the
    # cells' own rows) may be off by: a standard error and a difference both below 1e3
    # times it tell nothing
    # (found by review: a weight-0 row beside a separating model left rechecked residues of
    # 1e-32 and 1e-34 as a difference and its standard error, p = 0 for an exact 0)
    dd_rounding = 4.0 * dd_sum_error_bound(int(np.max(sums.class_rows.sum(axis=1)
                                                      + sums.cell_rows.sum(axis=1),
                                                      initial=0)))
    rounding = {metric: (auc_rounding + 2.0 ** -53 * (np.abs(values[metric]) + np.abs(overall_auc))
                         if metric in AUC_METRICS
                         else np.full(len(table), dd_rounding if sums.weighted else 0.0))
                for metric in METRIC_COLUMNS}
    # (a difference of 0 with a standard error of 0, a constant or perfectly separating
    # model's, is no difference: p = 1, as exact arithmetic gives)
    for metric in AEG_METRICS:
        gaps[metric] = _flat_aeg_gap(gaps[metric], se[metric])
    nothing = {metric: (gaps[metric] == 0) & (se[metric] == 0) for metric in METRIC_COLUMNS}
    # (rounding that could move z by 1e-6, or by 1e-3 below, unless the difference is a
    # thousand times larger than it: then z is known to 0.1% whatever the standard error;
    # found by review: weights scaled by 2**150 make every standard error about 1e-25, and
    # every test was NaN)
    def imprecise_tests() -> dict:
        return {metric: np.isfinite(se[metric])
                & (rounding[metric] > 1e-6 * np.fmax(se[metric], np.abs(gaps[metric])))
                & ~nothing[metric] for metric in METRIC_COLUMNS}

    imprecise = imprecise_tests()
    if any(mask.any() for mask in imprecise.values()) and _exact_of(sums) is not None:
        _exact_gaps(sums, gaps, rounding, imprecise)
        # and their standard errors from the same sums: beside a difference known to an ulp,
        # one known within the float sums' 1% would leave z 1e-5 off where the rows, before,
        # gave it to 1e-11 (found by review)
        _exact_tests(sums, se, {metric: imprecise[metric] & np.isfinite(se[metric])
                                for metric in METRIC_COLUMNS})
        imprecise = imprecise_tests()
    pending = {metric: np.zeros(len(table), dtype=bool) for metric in METRIC_COLUMNS}
    if sums.exact_pending:
        # a first call out of core, whose chunks kept no exact sums while the walks compiled:
        # a test in doubt that they would settle is not made (found by review: a z 1.05e-6
        # off the exact one, kept where the compiled call gives it exact)
        pending = {metric: imprecise[metric] & ~nothing[metric] for metric in METRIC_COLUMNS}
    rechecked = {metric: np.zeros(len(table), dtype=bool) for metric in METRIC_COLUMNS}
    # (an AUC metric on the very samples of the AUC of all rows is that AUC: p = 1, below)
    the_universe = _samples_of_the_universe(sums)
    flagged = {metric: ((unresolved[metric] | imprecise[metric])
                        & ~the_universe.get(metric, np.zeros(len(table), dtype=bool)))
               | absorbed[metric] for metric in METRIC_COLUMNS}
    again = np.flatnonzero(np.any(list(flagged.values()), axis=0))
    if recheck is not None and again.size:
        # (only the flagged tests: each costs a pass over the rows)
        wanted = np.column_stack([flagged[metric][again] for metric in METRIC_COLUMNS])
        variances, differences = recheck(again, wanted)
        for j, metric in enumerate(METRIC_COLUMNS):
            at = again[wanted[:, j]]
            found = np.sqrt(variances[metric][wanted[:, j]])
            good = np.isfinite(found)
            # (a test the recheck cannot make either stays unresolved: never the walk's value,
            # found by review: a standard error of 6e-9 against an exact 6e-15, p = 1 against
            # an exact 0.014)
            unresolved[metric][at] |= ~good
            rechecked[metric][at] = good
            se[metric][at] = np.where(good, found, se[metric][at])
            if metric in AUC_METRICS:
                gaps[metric][at] = np.where(good, differences[metric][wanted[:, j]],
                                            gaps[metric][at])
    _, min_cells, drawable = _cells_drawn(sums.cell_rows, sums.class_rows)
    columns, small, moments, undrawn = {}, {}, {}, {}
    # (DeLong's variance needs each class to weigh more than 1, whatever its rounding)
    defined = np.all(sums.class_totals > 1, axis=1)
    for metric in METRIC_COLUMNS:
        gap = gaps[metric]
        if metric in AEG_METRICS:  # (a standard error rechecked to 0)
            gap = _flat_aeg_gap(gap, se[metric])
        # the overall AUC's own samples: no difference to test (p = 1, no permutation test),
        # where the variance is defined at all (a class of weight at most 1 stays untested)
        same = (the_universe[metric] & np.isfinite(gap) & ~rechecked[metric] & defined
                if metric in AUC_METRICS
                else np.zeros(len(table), dtype=bool))
        gap = np.where(same, 0.0, gap)
        need = ((min_cells[metric] < PERMUTATION_BELOW) & np.isfinite(values[metric])
                & ~same)
        se[metric] = np.where(same, 0.0, se[metric])
        columns[metric] = _two_sided_p(gap, se[metric])
        small[metric] = need & drawable[metric]
        moments[metric] = need & ~small[metric] & (not sums.weighted)
        # a weighted cell under PERMUTATION_DRAWS_BELOW rows beside a redrawn cell too large to
        # draw (a tiny background beside a large subgroup): DeLong's normal p-value is poor on
        # so few rows, and no exact moments are made of weighted rows: not tested
        undrawn[metric] = (need & ~drawable[metric] & sums.weighted
                           & (min_cells[metric] < PERMUTATION_DRAWS_BELOW))
        # (the very same estimate: p = 1; unless a background's weight vanished from its
        # class's; where DeLong's test is made, one from the cells' own rows decides)
        delong = rechecked[metric] & ~small[metric] & ~moments[metric]
        scale = 1e-3 * np.fmax(se[metric], np.abs(gap))
        unresolved[metric] = np.where(
            delong, (dd_rounding > scale) & ~((gap == 0) & (se[metric] == 0)),
            ((unresolved[metric] | pending[metric]
              | ((rounding[metric] > scale) & ~nothing[metric])) & ~same)
            | absorbed[metric])
        if draw is not None:  # a drawn test reads each row's placement, not sums of squares:
            # only a background too small to tell from its class's rounding stops it
            unresolved[metric] = np.where(small[metric],
                                          (too_small[metric] & ~same) | absorbed[metric],
                                          unresolved[metric])
    counts = {"permutation_tests": 0, "permutation_bounds": 0, "permutation_untested": 0}

    def replace_with(found: dict, which: dict, count: str) -> None:
        for metric in METRIC_COLUMNS:
            replaced = which[metric] & np.isfinite(found[metric])
            columns[metric] = np.where(replaced, found[metric], columns[metric])
            counts[count] += int(replaced.sum())

    if any(m.any() for m in moments.values()):
        replace_with(_moment_pvalues(sums, values, overall_auc), moments, "permutation_tests")
    if any(m.any() for m in small.values()):
        if draw is not None:
            replace_with(draw(values, overall_auc, small), small, "permutation_tests")
        elif not sums.weighted:
            replace_with(_hoeffding_pvalues(sums, values, overall_auc), small,
                         "permutation_bounds")
        else:  # DeLong's normal p-value is poor on so few rows, and no draw can be made here
            for metric in METRIC_COLUMNS:
                undrawn[metric] = undrawn[metric] | small[metric]
    for metric in METRIC_COLUMNS:
        counts["permutation_untested"] += int((undrawn[metric]
                                               & np.isfinite(columns[metric])).sum())
        columns[metric] = np.where(undrawn[metric], np.nan, columns[metric])
    # whatever test answered, the sums of a background too small to resolve decide nothing
    counts["significance_unresolved"] = counts["significance_pending"] = 0
    for metric in METRIC_COLUMNS:
        counts["significance_unresolved"] += int((unresolved[metric]
                                                  & np.isfinite(values[metric])).sum())
        counts["significance_pending"] += int((unresolved[metric] & pending[metric]
                                               & np.isfinite(values[metric])).sum())
        columns[metric] = np.where(unresolved[metric], np.nan, columns[metric])
    out = pd.concat([table, pd.DataFrame({f"{metric}_pvalue": columns[metric]
                                          for metric in METRIC_COLUMNS}, index=table.index)],
                    axis=1)
    out.attrs = {**table.attrs, **{name: table.attrs.get(name, 0) + value
                                   for name, value in counts.items()}}
    return out


def adjust_table(table: pd.DataFrame, *, method: str, confidence: float = 0.95,
                 context: str = "") -> pd.DataFrame:
    """Adjust the ``<metric>_pvalue`` columns of one model's table together.

    Adds ``<metric>_pvalue_adjusted`` and ``<metric>_significant`` after each
    ``<metric>_pvalue``; ``attrs`` gains ``significance`` (the method),
    ``significance_level`` (``1 - confidence``) and ``n_tests``. One
    :class:`UndefinedMetricWarning` lists the defined metrics not tested
    (``context``, e.g. the model, leads it).
    """
    stacked = table[[f"{metric}_pvalue" for metric in METRIC_COLUMNS]].to_numpy(
        dtype=np.float64).reshape(len(table), len(METRIC_COLUMNS))
    adjusted = adjust_pvalues(stacked, method)
    alpha = round(1.0 - confidence, 12)
    out = table.copy()
    untested = []
    for j, metric in enumerate(METRIC_COLUMNS):
        at = out.columns.get_loc(f"{metric}_pvalue") + 1
        out.insert(at, f"{metric}_pvalue_adjusted", adjusted[:, j])
        out.insert(at + 1, f"{metric}_significant",
                   np.isfinite(adjusted[:, j]) & (np.nan_to_num(adjusted[:, j], nan=1.0) <= alpha))
        defined = np.isfinite(table[metric].to_numpy(dtype=np.float64))
        untested += [f"{name}: {metric}" for name, d, p in zip(table.index, defined,
                                                               stacked[:, j])
                     if d and not np.isfinite(p)]
    if untested:
        shown = listed(untested)
        lead = f"{context}: " if context else ""
        causes = []
        if table.attrs.get("permutation_untested", 0):
            causes.append(f"{table.attrs['permutation_untested']} in a weighted cell of fewer "
                          f"than {PERMUTATION_DRAWS_BELOW} rows, whose permutation test would "
                          f"draw rows of its whole class (out of core, where the rows are not "
                          f"at hand, or beside more than 1,000 rows to redraw) and whose "
                          f"normal approximation is poor")
        causes.append("DeLong's variance is undefined: a cell of total weight at most 1")
        if table.attrs.get("significance_unresolved", 0):
            causes[-1] += (" or a background whose share of its class's weight is too small "
                           "for DeLong's float64 sums to tell from rounding, or a variance or "
                           "a difference from the AUC of all rows within that rounding")
        if table.attrs.get("significance_pending", 0):
            causes.append(f"{table.attrs['significance_pending']} in doubt out of core on a "
                          f"first call, whose exact sums were still compiling (the next call "
                          f"makes them)")
        why = "; or ".join(causes)
        warn(f"{lead}{len(untested)} metric(s) not tested for significance ({why}; "
             f"p-value NaN, never significant): {shown}",
             UndefinedMetricWarning, stacklevel=user_stacklevel())  # (the user's line)
    out.attrs = {**table.attrs, "significance": method, "significance_level": alpha,
                 "n_tests": int(np.isfinite(stacked).sum())}
    return out
