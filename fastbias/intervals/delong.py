"""DeLong (1988) standard errors of every metric, from placement sums of one sweep."""
from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd

from .._threads import run_pieces
from ..metrics.definitions import METRIC_COLUMNS, METRIC_SAMPLES
from ..prepare.memberships import Memberships
from ..sort.order import SortedScores
from ..sweep import _kernels as SK
from ..sweep.walk import MemberWalk, member_walk
from ..validate.errors import UndefinedMetricWarning


def _z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _delong_variance(u, sq_x, sq_y, w_x, w_y, n_terms=None, floor_x=None, floor_y=None,
                     rows_x=None, rows_y=None):
    """DeLong variance from placement sums (frequency-weight semantics).

    ``theta = u / (w_x w_y)``; ``S10 = (sq_x / w_y^2 - w_x theta^2) / (w_x - 1)``,
    ``S01 = (sq_y / w_x^2 - w_y theta^2) / (w_y - 1)``; var = S10/w_x + S01/w_y.
    NaN where a sample has total weight <= 1. Each numerator is a difference of two
    float sums; given ``n_terms`` (at most how many terms each sum added; a number or one
    per entry), one within their rounding (``4 (n_terms + 4) 2**-53`` of its first term:
    all its terms are non-negative) is taken as 0, so that sums added in another order
    (threads, chunks, the first call's numpy) give the same zero rather than different
    residues. ``floor_x``/``floor_y``: where ``sq_x``/``sq_y`` is itself a difference (a
    background's sums, its class's less the subgroup's), the size of the sums it came from,
    whose rounding it carries (see :func:`sum_floors`). ``rows_x``/``rows_y``: the samples'
    rows; a sample of one row has no variance of its own (its part is 0, exactly).
    """
    u, sq_x, sq_y, w_x, w_y = (np.asarray(v, dtype=np.float64) for v in (u, sq_x, sq_y, w_x, w_y))
    ok = (w_x > 1) & (w_y > 1)
    wx = np.where(ok, w_x, 2.0)
    wy = np.where(ok, w_y, 2.0)
    theta = u / (wx * wy)
    share = 0.0 if n_terms is None else 4.0 * (np.asarray(n_terms, dtype=np.float64) + 4) \
        * 2.0 ** -53
    first_x, first_y = sq_x / (wy * wy), sq_y / (wx * wx)
    ref_x = first_x if floor_x is None else np.maximum(first_x, floor_x / (wy * wy))
    ref_y = first_y if floor_y is None else np.maximum(first_y, floor_y / (wx * wx))
    diff_x, diff_y = first_x - wx * theta * theta, first_y - wy * theta * theta
    # each part: its numerator, 0 within the rounding of the sums it was made from, and how
    # large that rounding may be (as a part of the variance)
    one_x = np.zeros(np.shape(diff_x), dtype=bool) if rows_x is None else np.asarray(rows_x) == 1
    one_y = np.zeros(np.shape(diff_y), dtype=bool) if rows_y is None else np.asarray(rows_y) == 1
    diff_x = np.where(one_x, 0.0, diff_x)
    diff_y = np.where(one_y, 0.0, diff_y)
    s10 = np.where(diff_x > share * ref_x, diff_x, 0.0) / (wx - 1.0) / wx
    s01 = np.where(diff_y > share * ref_y, diff_y, 0.0) / (wy - 1.0) / wy
    bound_x = share * ref_x / (wx - 1.0) / wx
    bound_y = share * ref_y / (wy - 1.0) / wy
    var = s10 + s01
    # a part above its own sums' rounding but within that of the sums it was made from (a
    # background's: its class's) is not known; where it may be a noticeable part of the
    # variance, neither is the variance
    unknown = (((diff_x > share * first_x) & (diff_x <= share * ref_x)
                & (bound_x > VARIANCE_TOLERANCE * var))
               | ((diff_y > share * first_y) & (diff_y <= share * ref_y)
                  & (bound_y > VARIANCE_TOLERANCE * var)))
    return np.where(ok & ~unknown, var, np.nan)


#: a variance part known only within rounding larger than this share of the variance makes it
#: unknown (NaN): about 1% of the standard error
VARIANCE_TOLERANCE = 0.02


def cell_rows_of(cell_rows, class_rows) -> dict:
    """cell -> rows per subgroup, from the subgroups' cell rows (k, 2) and the classes' rows
    ((2,) or (k, 2))."""
    background = np.asarray(class_rows) - np.asarray(cell_rows)
    return {("subgroup", 0): cell_rows[:, 0], ("subgroup", 1): cell_rows[:, 1],
            ("background", 0): background[:, 0], ("background", 1): background[:, 1]}


def sum_floors(delong_sums, sub_neg, sub_pos) -> tuple:
    """``(floor_x, floor_y)``, each (k, 5): for each metric's SQX and SQY (``delong_sums``
    (k, 15) as ``SK.finish_delong_sums`` gives them), the size of the sums it was made from.
    A background's (BPSN's SQX, BNSP's SQY, the AEGs' SQX) is its class's sum less the
    subgroup's, and carries the rounding of the class's: BPSN's SQX plus the subgroup AUC's
    (the positives' sum over the whole class), likewise BNSP's SQY, and for the AEGs' SQX the
    subgroup's own placements' part, at most its cell's weight cubed (``sub_neg``,
    ``sub_pos``). Without this a background whose placements barely vary kept the residue of
    the difference as its variance (found by review: a negative AEG's standard error of 4e-4
    against an exact 1.25e-6). The others are direct sums: their own size."""
    sums = np.asarray(delong_sums, dtype=np.float64)
    sq_x = sums[:, SK.DELONG_SQ_X:SK.DELONG_SQ_X + 5]
    sq_y = sums[:, SK.DELONG_SQ_Y:SK.DELONG_SQ_Y + 5]
    floor_x, floor_y = sq_x.copy(), sq_y.copy()
    floor_x[:, 1] += sq_x[:, 0]
    floor_y[:, 2] += sq_y[:, 0]
    floor_x[:, 3] += np.asarray(sub_neg, dtype=np.float64) ** 3
    floor_x[:, 4] += np.asarray(sub_pos, dtype=np.float64) ** 3
    return floor_x, floor_y


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
                                                               sorted_scores.workers))


def standard_errors_from_sums(walk: MemberWalk, m: Memberships, sums: np.ndarray,
                              overall: tuple):
    """``(se, overall_se)`` from the placement sums of a walk: ``sums`` (k, 15) U, SQX, SQY
    of the five metrics per subgroup and ``overall`` (u, sq_pos, sq_neg). ``se`` is a
    :class:`StandardErrors`: NaN where a background is too small to resolve."""
    cells = walk.cells
    total_neg, total_pos = walk.class_totals
    u, sq_pos, sq_neg = overall
    n_terms = m.n_rows + m.row_groups.shape[0]
    overall_se = float(np.sqrt(_delong_variance(u, sq_pos, sq_neg, total_pos, total_neg,
                                                n_terms)))
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
    cell_rows = np.asarray(m.cell_rows)
    rows = cell_rows_of(cell_rows, np.array(m.class_rows))
    background = [("background", 0), ("background", 1)]
    unresolved = unresolved_metrics(unresolved_backgrounds(
        (total_neg, total_pos), np.column_stack([weight[cell] for cell in background]),
        np.column_stack([rows[cell] for cell in background]),
        m.n_rows + cell_rows.sum(axis=1)))
    floor_x, floor_y = sum_floors(sums, cells[:, 0], cells[:, 1])
    se = {}
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = METRIC_SAMPLES[metric]
        var = _delong_variance(sums[:, SK.DELONG_U + j], sums[:, SK.DELONG_SQ_X + j],
                               sums[:, SK.DELONG_SQ_Y + j], weight[x_cell], weight[y_cell],
                               n_terms, floor_x[:, j], floor_y[:, j], rows[x_cell], rows[y_cell])
        # (NaN with both samples of weight above 1: a part not known within rounding)
        unresolved[metric] = unresolved[metric] | (
            np.isnan(var) & (weight[x_cell] > 1) & (weight[y_cell] > 1))
        se[metric] = np.where(unresolved[metric], np.nan, np.sqrt(var))
    return StandardErrors(se, unresolved), overall_se


# the membership walk is cut into ranges of at least this many memberships (at most
# DELONG_MAX_RANGES), whatever the number of threads, so that the float sums do not depend on it
DELONG_MIN_RANGE_MEMBERSHIPS = 50_000


DELONG_MAX_RANGES = 64


def _placement_sums(walk: MemberWalk, n_groups: int, workers: int):
    """``(sums (k, 15), (u, sq_pos, sq_neg))``: the subgroups' and the overall AUC's sums."""
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

    def piece(j):
        if j == n_ranges:  # the classes' walk
            return SK.class_placement_sums(w.neg, w.pos, w.neg_cum, w.pos_cum)
        return SK.member_delong_sums_in_range(w.keys, w.codes, w.weights, bounds[j],
                                              bounds[j + 1], w.neg, w.pos, w.neg_cum, w.pos_cum,
                                              w.cells, below[j])

    *parts, overall_sums = run_pieces(piece, range(n_ranges + 1), workers)
    sums = parts[0]
    for part in parts[1:]:
        sums = sums + part
    return SK.finish_delong_sums(sums), overall_sums


def _normal_interval(estimate, se, z, bounds):
    low = np.clip(estimate - z * se, *bounds)
    high = np.clip(estimate + z * se, *bounds)
    return low, high


def _warn_missing_se(table: pd.DataFrame, se: dict, method: str) -> None:
    """One :class:`UndefinedMetricWarning` per cause listing the defined metrics whose
    interval is NaN: a cell too small, or (``se.unresolved``) a background too small for
    the sums to resolve."""
    unresolved = getattr(se, "unresolved", {})
    problems, unresolvable = [], []
    for metric in METRIC_COLUMNS:
        value = table[metric].to_numpy(dtype=np.float64)
        bad = np.isfinite(value) & ~np.isfinite(se[metric])
        why = unresolved.get(metric, np.zeros(len(bad), dtype=bool))
        problems += [f"{name}: {metric}" for name in table.index[bad & ~why]]
        unresolvable += [f"{name}: {metric}" for name in table.index[bad & why]]
    for found, cause in ((problems, "a cell with fewer than 2 rows, or of total weight at "
                                    "most 1"),
                         (unresolvable, "the subgroup holds all of a class's weight but a share "
                                        "too small for DeLong's float64 sums to tell its "
                                        "background from rounding")):
        if found:
            shown = "; ".join(found[:12]) + (f"; ... {len(found) - 12} more"
                                             if len(found) > 12 else "")
            warnings.warn(f"{len(found)} {method} interval(s) undefined ({cause}), set to NaN: "
                          f"{shown}", UndefinedMetricWarning, stacklevel=3)
