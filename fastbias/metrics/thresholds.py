"""Threshold metrics per subgroup, the Fairness Indicators view: at each threshold, each
subgroup's and its background's positive rate, TPR, FPR, FNR and precision, their gaps, and
intervals.

A row is predicted positive when ``score >= threshold``, compared in the scores' own
precision (the threshold is first rounded to the scores' dtype, as numpy's
``y_score >= threshold`` does). From the sorts of the point estimate the counts at every
threshold are one walk down the memberships (:func:`threshold_counts`); the table
(:func:`threshold_table`) is arithmetic on them, so a grid of 100 thresholds costs about what
one does.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..sort.order import SortedScores, sortable_key
from ..sweep import _kernels as SK
from ..sweep.walk import member_walk
from ..validate.errors import UndefinedMetricWarning

#: the rates, each a share of a set of rows: (the set, what is counted in it)
THRESHOLD_RATES = {
    "positive_rate": ("all rows", "predicted positive"),
    "tpr": ("positives", "predicted positive"),
    "fpr": ("negatives", "predicted positive"),
    "fnr": ("positives", "predicted negative"),
    "precision": ("predicted positives", "positive"),
}

#: what each gap (subgroup minus background) is called in the fairness literature
GAP_NAMES = {
    "positive_rate_gap": "demographic parity difference",
    "tpr_gap": "equal opportunity difference",
    "fpr_gap": "false positive rate difference",
    "fnr_gap": "false negative rate difference",
    "precision_gap": "predictive parity difference",
}



def check_thresholds(thresholds) -> np.ndarray:
    """``thresholds=``: a number or a 1-D sequence of numbers (no NaN); returned sorted,
    each once, as float64."""
    values = np.atleast_1d(np.asarray(thresholds, dtype=object))
    if values.ndim != 1 or values.shape[0] == 0:
        raise ValueError(f"thresholds must be a number or a non-empty 1-D sequence of numbers, "
                         f"got {thresholds!r}")
    out = np.empty(values.shape[0], dtype=np.float64)
    for j, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise TypeError(f"thresholds must be numbers, got {value!r} at position {j}")
        out[j] = float(value)
        if math.isnan(out[j]):
            raise ValueError(f"thresholds must not be NaN (position {j})")
    return np.unique(out)


@dataclass(frozen=True)
class ThresholdCounts:
    """Per threshold, what each subgroup's cells and its universe's classes hold above it.

    ``predicted`` (T, k, 2) is the weight (or rows) of each subgroup's negatives and
    positives predicted positive; ``class_predicted`` (T, k, 2) the same for the whole
    classes of the rows each subgroup is compared with (its universe); ``cells`` and
    ``class_totals`` (k, 2) the totals; ``cell_rows`` and ``class_rows`` (k, 2) the row
    counts. Counts of disjoint sets of rows (chunks) add up
    (:func:`combine_threshold_counts`).
    """

    thresholds: np.ndarray
    predicted: np.ndarray
    class_predicted: np.ndarray
    cells: np.ndarray
    class_totals: np.ndarray
    cell_rows: np.ndarray
    class_rows: np.ndarray
    weighted: bool


def _cut_keys(thresholds: np.ndarray, dtype, weighted: bool):
    """The thresholds as the walk compares them: rounded to the scores' dtype (numpy's
    comparison of an array with a number), as floats (weighted walks) or sortable keys."""
    values = thresholds.astype(dtype)
    if weighted:
        return values
    return np.array([sortable_key(v) for v in values], dtype=np.uint64)


def threshold_counts(sorted_scores: SortedScores, sample_weight, thresholds: np.ndarray):
    """:class:`ThresholdCounts` from the sorts of the point estimate (no new sort):
    one walk down the memberships for all thresholds, one search per class and threshold."""
    m = sorted_scores.memberships
    weighted = sample_weight is not None
    walk = member_walk(sorted_scores, sample_weight)
    cuts = _cut_keys(thresholds, sorted_scores.scores.dtype, weighted)
    k = m.n_groups
    if weighted:
        cuts = cuts.astype(walk.keys.dtype) if walk.keys.size else cuts
    else:
        cuts = cuts.astype(walk.neg.dtype if walk.neg.size else walk.pos.dtype)
    predicted = SK.member_weight_at_or_above(walk.keys, walk.codes, walk.weights, cuts,
                                             2 * k).reshape(-1, k, 2)
    class_predicted = np.zeros((thresholds.shape[0], 2))
    for c, (keys, cumulative) in enumerate(((walk.neg, walk.neg_cum), (walk.pos, walk.pos_cum))):
        first = np.searchsorted(keys, cuts, side="left")  # the first key at or above each cut
        if weighted:
            weights = np.diff(cumulative)
            above = np.concatenate([np.cumsum(weights[::-1])[::-1], [0.0]])
            class_predicted[:, c] = above[first]
        else:
            class_predicted[:, c] = keys.shape[0] - first
    n_neg, n_pos = m.class_rows
    return ThresholdCounts(thresholds, predicted,
                           np.repeat(class_predicted[:, None, :], k, axis=1),
                           np.asarray(walk.cells, dtype=np.float64).reshape(k, 2),
                           np.tile(np.asarray(walk.class_totals, dtype=np.float64), (k, 1)),
                           np.asarray(m.cell_rows, dtype=np.int64).reshape(k, 2),
                           np.tile(np.array([n_neg, n_pos], dtype=np.int64), (k, 1)), weighted)


def gather_threshold_counts(parts: list, k: int, thresholds: np.ndarray,
                            weighted: bool) -> ThresholdCounts:
    """One chunk's :class:`ThresholdCounts` of ``k`` subgroups from those of its universes,
    ``[(counts, the universe's subgroups as indexes)]`` (a subgroup in none: zeros)."""
    t_count = thresholds.shape[0]
    out = ThresholdCounts(thresholds, np.zeros((t_count, k, 2)), np.zeros((t_count, k, 2)),
                          np.zeros((k, 2)), np.zeros((k, 2)), np.zeros((k, 2), dtype=np.int64),
                          np.zeros((k, 2), dtype=np.int64), weighted)
    for counts, members in parts:
        out.predicted[:, members] = counts.predicted
        out.class_predicted[:, members] = counts.class_predicted
        for name in ("cells", "class_totals", "cell_rows", "class_rows"):
            getattr(out, name)[members] = getattr(counts, name)
    return out


def tied_threshold_counts(score: float, dtype, thresholds: np.ndarray, cells, class_totals,
                          cell_rows, class_rows, weighted: bool) -> ThresholdCounts:
    """:class:`ThresholdCounts` of rows that all have one ``score`` (of the scores' ``dtype``)
    from their totals (k, 2): all of them at the thresholds it reaches, none above."""
    reached = np.asarray(score, dtype=dtype) >= thresholds.astype(dtype)  # numpy's comparison
    cells = np.asarray(cells, dtype=np.float64)
    class_totals = np.asarray(class_totals, dtype=np.float64)
    return ThresholdCounts(thresholds, reached[:, None, None] * cells[None],
                           reached[:, None, None] * class_totals[None], cells, class_totals,
                           np.asarray(cell_rows, dtype=np.int64),
                           np.asarray(class_rows, dtype=np.int64), weighted)


def combine_threshold_counts(parts: list) -> ThresholdCounts:
    """The :class:`ThresholdCounts` of all rows from those of disjoint chunks (they add)."""
    first = parts[0]
    total = {name: np.sum([getattr(p, name) for p in parts], axis=0)
             for name in ("predicted", "class_predicted", "cells", "class_totals", "cell_rows",
                          "class_rows")}
    return ThresholdCounts(first.thresholds, weighted=first.weighted, **total)


def rate_sets(table: pd.DataFrame, side: str) -> dict:
    """Per rate of :data:`THRESHOLD_RATES`, ``(hits, trials)`` of one side (``"subgroup"`` or
    ``"background"``) from the count columns of a threshold table."""
    neg, pos = (table[f"{side}_{cell}"].to_numpy(dtype=np.float64)
                for cell in ("negatives", "positives"))
    tp, fp = (table[f"{side}_{cell}"].to_numpy(dtype=np.float64) for cell in ("tp", "fp"))
    return {"positive_rate": (tp + fp, neg + pos), "tpr": (tp, pos), "fpr": (fp, neg),
            "fnr": (pos - tp, pos), "precision": (tp, tp + fp)}


def threshold_table(counts: ThresholdCounts, names: list, warn: bool = True) -> pd.DataFrame:
    """The tidy table of :class:`ThresholdCounts`: one row per (threshold, subgroup).

    Columns: the cells' sizes (``subgroup_negatives`` ... ``background_positives``),
    what each has predicted positive (``subgroup_tp``, ``subgroup_fp``, ``background_tp``,
    ``background_fp``), then for ``subgroup`` and ``background`` each rate of
    :data:`THRESHOLD_RATES`, then each gap ``<rate>_gap`` = subgroup minus background.
    Undefined rates (no row in their set) are NaN, with one
    :class:`UndefinedMetricWarning` when ``warn``. Intervals:
    ``fastbias.intervals.thresholds.attach_threshold_intervals``.
    """
    t_count, k = counts.predicted.shape[0], counts.predicted.shape[1]
    cells = np.broadcast_to(counts.cells, (t_count, k, 2))
    background = counts.class_totals[None] - cells
    bg_predicted = counts.class_predicted - counts.predicted
    # a background with no rows is exactly empty (not a float remainder)
    empty_bg = (counts.class_rows - counts.cell_rows) == 0
    background = np.where(empty_bg[None], 0.0, background)
    bg_predicted = np.where(empty_bg[None], 0.0, bg_predicted)
    index = pd.MultiIndex.from_product([counts.thresholds, list(names)],
                                       names=["threshold", "subgroup"])
    columns = {}

    def flat(a):
        return np.asarray(a, dtype=np.float64).reshape(-1)

    columns["subgroup_negatives"] = flat(cells[..., 0])
    columns["subgroup_positives"] = flat(cells[..., 1])
    columns["background_negatives"] = flat(background[..., 0])
    columns["background_positives"] = flat(background[..., 1])
    columns["subgroup_tp"] = flat(counts.predicted[..., 1])
    columns["subgroup_fp"] = flat(counts.predicted[..., 0])
    columns["background_tp"] = flat(bg_predicted[..., 1])
    columns["background_fp"] = flat(bg_predicted[..., 0])
    table = pd.DataFrame(columns, index=index)
    for side in ("subgroup", "background"):
        for rate, (hits, trials) in rate_sets(table, side).items():
            with np.errstate(invalid="ignore", divide="ignore"):
                table[f"{side}_{rate}"] = np.where(trials > 0, hits / trials, np.nan)
    for rate in THRESHOLD_RATES:
        table[f"{rate}_gap"] = table[f"subgroup_{rate}"] - table[f"background_{rate}"]
    if not counts.weighted:
        for name in ("subgroup_negatives", "subgroup_positives", "background_negatives",
                     "background_positives", "subgroup_tp", "subgroup_fp", "background_tp",
                     "background_fp"):
            table[name] = table[name].round().astype(np.int64)
    if warn:
        warn_undefined_rates(table)
    table.attrs["weighted"] = counts.weighted
    return table


def warn_undefined_rates(table: pd.DataFrame, context: str = "") -> None:
    """One :class:`UndefinedMetricWarning` for the rates without a row in their set."""
    undefined = []
    for side in ("subgroup", "background"):
        for rate in THRESHOLD_RATES:
            bad = table[f"{side}_{rate}"].isna().to_numpy()
            undefined += [f"{name} at {threshold:g}: {side} {rate}"
                          for (threshold, name), b in zip(table.index, bad) if b]
    if undefined:
        shown = "; ".join(undefined[:8]) + (f"; ... {len(undefined) - 8} more"
                                            if len(undefined) > 8 else "")
        lead = f"{context}: " if context else ""
        warnings.warn(f"{lead}{len(undefined)} threshold rate(s) undefined (no row in their "
                      f"set, e.g. no predicted positive for a precision), set to NaN: {shown}",
                      UndefinedMetricWarning, stacklevel=3)
