"""DeLong (1988) standard errors of every metric, from placement sums of one sweep."""
from __future__ import annotations

import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd

from ..metrics.definitions import METRIC_COLUMNS, METRIC_SAMPLES
from ..prepare.memberships import Memberships
from ..sort.order import SortedScores
from ..sweep import _kernels as SK
from ..validate.errors import UndefinedMetricWarning
from . import _kernels as IK


def _z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _delong_variance(u, sq_x, sq_y, w_x, w_y):
    """DeLong variance from placement sums (frequency-weight semantics).

    ``theta = u / (w_x w_y)``; ``S10 = (sq_x / w_y^2 - w_x theta^2) / (w_x - 1)``,
    ``S01 = (sq_y / w_x^2 - w_y theta^2) / (w_y - 1)``; var = S10/w_x + S01/w_y.
    NaN where a sample has total weight <= 1.
    """
    u, sq_x, sq_y, w_x, w_y = (np.asarray(v, dtype=np.float64) for v in (u, sq_x, sq_y, w_x, w_y))
    ok = (w_x > 1) & (w_y > 1)
    wx = np.where(ok, w_x, 2.0)
    wy = np.where(ok, w_y, 2.0)
    theta = u / (wx * wy)
    s10 = np.maximum(sq_x / (wy * wy) - wx * theta * theta, 0.0) / (wx - 1.0)
    s01 = np.maximum(sq_y / (wx * wx) - wy * theta * theta, 0.0) / (wy - 1.0)
    return np.where(ok, s10 / wx + s01 / wy, np.nan)


def delong_standard_errors(scores: np.ndarray, memberships: Memberships,
                           sample_weight: np.ndarray | None = None):
    """DeLong standard errors of the five metrics per subgroup and of the overall AUC.

    Validated arrays in; see :func:`standard_errors` (which takes the sorts a
    call has already made). Returns ``(se, overall_se)``: ``se`` maps each
    metric to an array with one entry per subgroup.
    """
    return standard_errors(SortedScores(scores, memberships), sample_weight)


def standard_errors(sorted_scores: SortedScores, sample_weight: np.ndarray | None = None,
                    executor=None):
    """DeLong standard errors from the sorts of the point estimate (no new sort).

    Unweighted, the placement sums come from one walk over the sorted
    memberships and one over the sorted classes (split between this thread
    and ``executor``'s on large inputs); weighted, from the row order.
    Returns ``(se, overall_se)`` as :func:`delong_standard_errors`.
    ``O(n + memberships)`` after the sorts.
    """
    m = sorted_scores.memberships
    if sample_weight is None:
        sums, cells, overall = _unweighted_sums(sorted_scores, executor)
        n_neg, n_pos = m.class_rows
        total_neg, total_pos = float(n_neg), float(n_pos)
    else:
        sums, cells, overall, total_neg, total_pos = _weighted_sums(sorted_scores, sample_weight)
    u, sq_pos, sq_neg = overall
    overall_se = float(np.sqrt(_delong_variance(u, sq_pos, sq_neg, total_pos, total_neg)))
    if m.n_groups == 0:
        return {metric: np.empty(0) for metric in METRIC_COLUMNS}, overall_se
    # cell weights; a background cell with no rows has weight 0 (not a float remainder)
    n_neg_rows, n_pos_rows = m.class_rows
    weight = {
        ("subgroup", 0): cells[:, 0],
        ("subgroup", 1): cells[:, 1],
        ("background", 0): np.where(n_neg_rows - m.cell_rows[:, 0] > 0, total_neg - cells[:, 0], 0.),
        ("background", 1): np.where(n_pos_rows - m.cell_rows[:, 1] > 0, total_pos - cells[:, 1], 0.),
    }
    se = {}
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = METRIC_SAMPLES[metric]
        var = _delong_variance(sums[:, SK.DELONG_U + j], sums[:, SK.DELONG_SQ_X + j],
                               sums[:, SK.DELONG_SQ_Y + j], weight[x_cell], weight[y_cell])
        se[metric] = np.sqrt(var)
    return se, overall_se


# below this many memberships the walk is not worth a second thread
PARALLEL_DELONG_MIN_MEMBERSHIPS = 50_000


def _unweighted_sums(sorted_scores: SortedScores, executor):
    """``(sums (k, 15), cells (k, 2), (u, sq_pos, sq_neg))`` from the sorted keys."""
    m = sorted_scores.memberships
    keys, codes = sorted_scores.members
    neg_keys, pos_keys = sorted_scores.classes
    cells = m.cell_rows.astype(np.float64)
    n_groups = m.n_groups
    start = np.zeros((n_groups, 2), dtype=np.int64)
    if executor is None or keys.shape[0] < PARALLEL_DELONG_MIN_MEMBERSHIPS:
        overall = SK.class_placement_sums(neg_keys, pos_keys)
        raw = SK.member_delong_sums_in_range(keys, codes, 0, keys.shape[0], neg_keys, pos_keys,
                                             cells, start)
    else:
        # the classes' walk and the lower half of the memberships on the helper thread
        middle = SK.block_boundary_near(keys, keys.shape[0] // 2)

        def lower_part():
            return (SK.class_placement_sums(neg_keys, pos_keys),
                    SK.member_delong_sums_in_range(keys, codes, 0, middle, neg_keys, pos_keys,
                                                   cells, start))

        lower = executor.submit(lower_part)
        below = np.bincount(codes[:middle], minlength=2 * n_groups).reshape(n_groups, 2)
        upper = SK.member_delong_sums_in_range(keys, codes, middle, keys.shape[0], neg_keys,
                                               pos_keys, cells, below.astype(np.int64))
        overall, raw = lower.result()
        raw = raw + upper
    return SK.finish_delong_sums(raw), cells, overall


def _class_cumulative(rows, weights):
    return SK.cumulative_weights(rows, weights)


def _weighted_sums(sorted_scores: SortedScores, sample_weight: np.ndarray):
    """The sums of :func:`_unweighted_sums` for frequency weights, from the row order."""
    m = sorted_scores.memberships
    order = sorted_scores.order()
    neg_cumw = _class_cumulative(order.neg_rows, sample_weight)
    pos_cumw = _class_cumulative(order.pos_rows, sample_weight)
    total_neg, total_pos = float(neg_cumw[-1]), float(pos_cumw[-1])
    # overall AUC: X = all positives, Y = all negatives
    pos_place, neg_place = IK.class_placements(order.neg_sorted, neg_cumw, order.pos_sorted,
                                               pos_cumw)
    w_pos = sample_weight[order.pos_rows]
    w_neg = sample_weight[order.neg_rows]
    overall = (np.dot(w_pos, pos_place), np.dot(w_pos, pos_place ** 2),
               np.dot(w_neg, neg_place ** 2))
    if m.n_groups == 0:
        return np.zeros((0, 15)), np.zeros((0, 2)), overall, total_neg, total_pos
    neg_lt, neg_le = SK.rank_bounds_in_sorted(order.neg_sorted, order.id_scores, order.id_order)
    pos_lt, pos_le = SK.rank_bounds_in_sorted(order.pos_sorted, order.id_scores, order.id_order)
    neg_below, neg_at = IK.weights_at_bounds(neg_cumw, neg_lt, neg_le)
    pos_below, pos_at = IK.weights_at_bounds(pos_cumw, pos_lt, pos_le)
    id_weights = np.ascontiguousarray(sample_weight[m.identity_rows], dtype=np.float64)
    sums, cells = IK.delong_subgroup_sums(order.id_scores, order.id_order, m.identity_labels,
                                          id_weights, m.row_ptr, m.row_groups, neg_below, neg_at,
                                          pos_below, pos_at, total_neg, total_pos, m.n_groups)
    return sums, cells, overall, total_neg, total_pos


def _normal_interval(estimate, se, z, bounds):
    low = np.clip(estimate - z * se, *bounds)
    high = np.clip(estimate + z * se, *bounds)
    return low, high


def _warn_missing_se(table: pd.DataFrame, se: dict, method: str) -> None:
    problems = []
    for metric in METRIC_COLUMNS:
        value = table[metric].to_numpy(dtype=np.float64)
        bad = np.isfinite(value) & ~np.isfinite(se[metric])
        if bad.any():
            problems += [f"{name}: {metric}" for name in table.index[bad]]
    if problems:
        shown = "; ".join(problems[:12]) + (f"; ... {len(problems) - 12} more"
                                             if len(problems) > 12 else "")
        warnings.warn(f"{len(problems)} {method} interval(s) undefined (a cell with fewer than 2 "
                      f"rows), set to NaN: {shown}", UndefinedMetricWarning, stacklevel=3)
