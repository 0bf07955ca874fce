"""Threshold metrics per subgroup, the Fairness Indicators view: at each threshold, each
subgroup's and its background's positive rate, TPR, FPR, FNR and precision, their gaps, and
intervals.

A row is predicted positive when ``score >= threshold``, compared in the scores' own
precision (the threshold is first rounded to the scores' dtype, as numpy does for
``y_score >= threshold`` with a Python float threshold). From the sorts of the point estimate the counts at every
threshold are one walk down the memberships (:func:`threshold_counts`); the table
(:func:`threshold_table`) is arithmetic on them, so a grid of 100 thresholds costs about what
one does.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..prepare.memberships import membership_rows_and_codes
from ..sort.order import SortedScores, sortable_keys_in_place
from ..sweep import _kernels as SK
from ..sweep.double_double import dd_prefix_sums
from ..sweep.first_call import class_orders
from ..sweep.walk import member_walk
from ..validate.errors import UndefinedMetricWarning, listed, user_stacklevel, warn
from ..validate.settings import as_float, refuse_inexact
from ..validate.values import (
    THRESHOLD_RESOLUTION_BITS,
    check_weight_resolution_of,
    check_weight_total,
)

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
        if isinstance(value, (bool, np.bool_, complex, np.complexfloating)) \
                or not isinstance(value, (numbers.Number, np.number)):
            raise TypeError(f"thresholds must be numbers, got {value!r} at position {j}")
        out[j] = as_float(value, f"thresholds (position {j})")
        if math.isnan(out[j]):
            raise ValueError(f"thresholds must not be NaN (position {j})")
        refuse_inexact(value, out[j], f"thresholds (position {j})",
                       "a row is predicted positive when its score is at or above it")
    return np.unique(out)


@dataclass(frozen=True)
class ThresholdCounts:
    """Per threshold, what each subgroup's cells and its universe's classes hold at or above it.

    Weights are double-double pairs on a last axis of 2 (high, low; the low part 0 when
    unweighted), so that a background (a class minus a subgroup) keeps its digits:
    ``predicted`` (T, k, 2, 2) is the weight of each subgroup's negatives and positives
    predicted positive, ``class_predicted`` (T, k, 2, 2) the same for the classes of the rows
    each subgroup is compared with (its universe), ``cells`` and ``class_totals`` (k, 2, 2)
    the totals. ``predicted_rows``, ``class_predicted_rows`` (T, k, 2) and ``cell_rows``,
    ``class_rows`` (k, 2) count rows (exact), so an empty set is exactly empty. Counts of
    disjoint sets of rows (chunks) add up (:func:`combine_threshold_counts`).
    """

    thresholds: np.ndarray
    predicted: np.ndarray
    class_predicted: np.ndarray
    cells: np.ndarray
    class_totals: np.ndarray
    predicted_rows: np.ndarray
    class_predicted_rows: np.ndarray
    cell_rows: np.ndarray
    class_rows: np.ndarray
    weighted: bool


def _cut_keys(thresholds: np.ndarray, dtype):
    """The thresholds as the walk compares them: rounded to the scores' dtype (a threshold
    beyond its range becomes an infinity), as sortable keys."""
    with np.errstate(over="ignore"):
        values = thresholds.astype(dtype)  # (a copy of fastbias's own, turned in place)
    return sortable_keys_in_place(values).astype(np.uint64)


def _at_or_above(keys, codes, weights, cuts, n_codes):
    """Per cut (the first one below every key: the totals), the weight (high, low) and the
    rows of each code at or above it: (cuts, n_codes, 2) and (cuts, n_codes)."""
    hi, lo = SK.member_weight_at_or_above(keys, codes, weights, cuts, n_codes)
    if weights.shape[0] == 0:
        return np.stack([hi, lo], axis=-1), hi.astype(np.int64)
    rows, _ = SK.member_weight_at_or_above(keys, codes, np.empty(0), cuts, n_codes)
    return np.stack([hi, lo], axis=-1), rows.astype(np.int64)


def check_threshold_weights(sample_weight, labels: np.ndarray) -> None:
    """Refuse weights of which a row is below what a class's double-double sums resolve
    (:data:`~fastbias.validate.values.THRESHOLD_RESOLUTION_BITS`): the threshold metrics'
    backgrounds, a class less its subgroup, would lose it (a review: a false positive rate
    of 1.378, or NaN for a defined one, with rows of 1e40, 1 and 1e-30). Out of core the
    whole data's classes are checked before the chunks (``ColumnSpec.resolution_check``)."""
    if sample_weight is not None:
        check_weight_total(float(np.sum(sample_weight * 2.0 ** -128)), "sample_weight",
                           "threshold metrics")
        check_weight_resolution_of(sample_weight, labels, "threshold metrics",
                                   THRESHOLD_RESOLUTION_BITS)


def threshold_counts(sorted_scores: SortedScores, sample_weight, thresholds: np.ndarray):
    """:class:`ThresholdCounts` from the sorts of the point estimate (no new sort): one walk
    down the memberships and one down each class for all thresholds (weights summed with
    compensation from the rows' own weights)."""
    m = sorted_scores.memberships
    weighted = sample_weight is not None
    walk = member_walk(sorted_scores, sample_weight)
    k = m.n_groups
    t_count = thresholds.shape[0]
    cuts = _cut_keys(np.concatenate([[-np.inf], thresholds]), sorted_scores.scores.dtype)
    key_type = walk.keys.dtype if walk.keys.size else (walk.neg if walk.neg.size
                                                        else walk.pos).dtype
    cuts = cuts.astype(key_type)
    weight, rows = _at_or_above(walk.keys, walk.codes, walk.weights, cuts, 2 * k)
    weight = weight.reshape(t_count + 1, k, 2, 2)
    rows = rows.reshape(t_count + 1, k, 2)
    class_weight = np.zeros((t_count + 1, 2, 2))
    class_rows = np.zeros((t_count + 1, 2), dtype=np.int64)
    if weighted:  # (the weighted walk's classes are in the order of these rows)
        order = sorted_scores.order()
        sides = ((walk.neg, order.neg_rows), (walk.pos, order.pos_rows))
    else:
        sides = ((walk.neg, None), (walk.pos, None))
    for c, (keys, row_index) in enumerate(sides):
        codes = np.zeros(keys.shape[0], dtype=np.int64)
        w = (np.ascontiguousarray(sample_weight[row_index], dtype=np.float64) if weighted
             else np.empty(0))
        part_weight, part_rows = _at_or_above(keys, codes, w, cuts.astype(keys.dtype), 1)
        class_weight[:, c] = part_weight[:, 0]
        class_rows[:, c] = part_rows[:, 0]
    return ThresholdCounts(
        thresholds, weight[1:], np.repeat(class_weight[1:, None], k, axis=1), weight[0],
        np.repeat(class_weight[0][None], k, axis=0), rows[1:],
        np.repeat(class_rows[1:, None], k, axis=1), rows[0],
        np.repeat(class_rows[0][None], k, axis=0), weighted)


def threshold_counts_in_numpy(scores: np.ndarray, memberships, sample_weight,
                              thresholds: np.ndarray) -> ThresholdCounts:
    """:func:`threshold_counts` with numpy alone (a first call in a fresh environment, while
    the kernels compile; see :mod:`fastbias.sweep.first_call`): the same row counts, and
    the weights as double-double sums whose low parts may differ from the kernel's (each
    cell's and class's weights at or above a threshold are a compensated sum of its rows
    there, from its highest score down)."""
    m = memberships
    k, weighted = m.n_groups, sample_weight is not None
    with np.errstate(over="ignore"):
        cuts = thresholds.astype(scores.dtype)  # (as the walk compares them, see _cut_keys)
    member_rows, cell = membership_rows_and_codes(m)  # (cell: 2 * subgroup + class)
    order = np.lexsort((scores[member_rows], cell))  # by cell, then by score
    bounds = np.searchsorted(cell[order], np.arange(2 * k + 1))
    t_count = cuts.shape[0]
    predicted, cells = np.zeros((t_count, 2 * k, 2)), np.zeros((2 * k, 2))
    predicted_rows = np.zeros((t_count, 2 * k), dtype=np.int64)
    for c in range(2 * k):
        rows = member_rows[order[bounds[c]:bounds[c + 1]]]
        predicted_rows[:, c], predicted[:, c], cells[c] = _at_or_above_in_numpy(
            scores[rows], None if not weighted else sample_weight[rows], cuts)
    class_predicted, class_totals = np.zeros((t_count, 2, 2)), np.zeros((2, 2))
    class_predicted_rows, class_rows = np.zeros((t_count, 2), dtype=np.int64), np.zeros(
        2, dtype=np.int64)
    # each class's scores sorted (with weights, its rows in score order, int32 where they fit)
    classes = (class_orders(scores, m.labels) if weighted
               else [np.sort(scores[~m.labels]), np.sort(scores[m.labels])])
    for c, part in enumerate(classes):
        sorted_scores, weights = (scores[part], sample_weight[part]) if weighted else (part, None)
        class_predicted_rows[:, c], class_predicted[:, c], class_totals[c] = \
            _at_or_above_in_numpy(sorted_scores, weights, cuts)
        class_rows[c] = part.shape[0]
    return ThresholdCounts(
        thresholds, predicted.reshape(t_count, k, 2, 2),
        np.repeat(class_predicted[:, None], k, axis=1), cells.reshape(k, 2, 2),
        np.repeat(class_totals[None], k, axis=0), predicted_rows.reshape(t_count, k, 2),
        np.repeat(class_predicted_rows[:, None], k, axis=1),
        np.diff(bounds).reshape(k, 2).astype(np.int64), np.repeat(class_rows[None], k, axis=0),
        weighted)


def _at_or_above_in_numpy(sorted_scores: np.ndarray, weights, cuts: np.ndarray) -> tuple:
    """``(rows (T,), weight (T, 2), total weight (2,))`` of the scores at or above each cut
    (``weights`` None: each row weighs 1, the low parts 0)."""
    n = sorted_scores.shape[0]
    below = np.searchsorted(sorted_scores, cuts, side="left")
    rows = (n - below).astype(np.int64)
    if weights is None:
        return rows, np.stack([rows.astype(np.float64), np.zeros(cuts.shape[0])], axis=-1), \
            np.array([float(n), 0.0])
    # sums from the top down: the rows at or above a cut are added themselves, as the
    # kernels add them (a total less the rows below would lose weights far smaller than those)
    hi, lo = dd_prefix_sums(weights[::-1])
    return rows, np.stack([hi[rows], lo[rows]], axis=-1), np.array([hi[-1], lo[-1]])


def gather_threshold_counts(parts: list, k: int, thresholds: np.ndarray,
                            weighted: bool) -> ThresholdCounts:
    """One chunk's :class:`ThresholdCounts` of ``k`` subgroups from those of its universes,
    ``[(counts, the universe's subgroups as indexes)]`` (a subgroup in none: zeros)."""
    t_count = thresholds.shape[0]
    out = ThresholdCounts(thresholds, np.zeros((t_count, k, 2, 2)), np.zeros((t_count, k, 2, 2)),
                          np.zeros((k, 2, 2)), np.zeros((k, 2, 2)),
                          np.zeros((t_count, k, 2), dtype=np.int64),
                          np.zeros((t_count, k, 2), dtype=np.int64),
                          np.zeros((k, 2), dtype=np.int64), np.zeros((k, 2), dtype=np.int64),
                          weighted)
    for counts, members in parts:
        for name in ("predicted", "class_predicted", "predicted_rows", "class_predicted_rows"):
            getattr(out, name)[:, members] = getattr(counts, name)
        for name in ("cells", "class_totals", "cell_rows", "class_rows"):
            getattr(out, name)[members] = getattr(counts, name)
    return out


def tied_threshold_counts(score: float, dtype, thresholds: np.ndarray, cells, class_totals,
                          cell_rows, class_rows, weighted: bool) -> ThresholdCounts:
    """:class:`ThresholdCounts` of rows that all have one ``score`` (of the scores' ``dtype``)
    from their totals: ``cells``/``class_totals`` (k, 2, 2) weights as (high, low) pairs,
    ``cell_rows``/``class_rows`` (k, 2); all of them at the thresholds it reaches, none
    above."""
    with np.errstate(over="ignore"):
        reached = np.asarray(score, dtype=dtype) >= thresholds.astype(dtype)
    cells = np.asarray(cells, dtype=np.float64)
    class_totals = np.asarray(class_totals, dtype=np.float64)
    cell_rows = np.asarray(cell_rows, dtype=np.int64)
    class_rows = np.asarray(class_rows, dtype=np.int64)
    return ThresholdCounts(thresholds, reached[:, None, None, None] * cells[None],
                           reached[:, None, None, None] * class_totals[None], cells, class_totals,
                           reached[:, None, None] * cell_rows[None],
                           reached[:, None, None] * class_rows[None], cell_rows, class_rows,
                           weighted)


def dd_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise double-double sum of (high, low) pairs on the last axis."""
    s = a[..., 0] + b[..., 0]
    bb = s - a[..., 0]
    error = (a[..., 0] - (s - bb)) + (b[..., 0] - bb)
    low = error + a[..., 1] + b[..., 1]
    high = s + low
    return np.stack([high, low - (high - s)], axis=-1)


def combine_threshold_counts(parts: list) -> ThresholdCounts:
    """The :class:`ThresholdCounts` of all rows from those of disjoint chunks (they add)."""
    first = parts[0]
    total = {}
    for name in ("predicted", "class_predicted", "cells", "class_totals"):
        value = getattr(first, name)
        for part in parts[1:]:
            value = dd_add(value, getattr(part, name))
        total[name] = value
    for name in ("predicted_rows", "class_predicted_rows", "cell_rows", "class_rows"):
        total[name] = np.sum([getattr(p, name) for p in parts], axis=0, dtype=np.int64)
    return ThresholdCounts(first.thresholds, weighted=first.weighted, **total)


def _difference(a: np.ndarray, b: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``a - b`` of (high, low) pairs, high parts first (exact when they are close), and
    exactly 0 where the difference holds no row."""
    return np.where(rows == 0, 0.0, (a[..., 0] - b[..., 0]) + (a[..., 1] - b[..., 1]))


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
    cells = np.broadcast_to(counts.cells, (t_count, k, 2, 2))
    cell_rows = np.broadcast_to(counts.cell_rows, (t_count, k, 2))
    background = _difference(np.broadcast_to(counts.class_totals, cells.shape), cells,
                             np.broadcast_to(counts.class_rows, cell_rows.shape) - cell_rows)
    bg_predicted = _difference(counts.class_predicted, counts.predicted,
                               counts.class_predicted_rows - counts.predicted_rows)
    cells = cells[..., 0] + cells[..., 1]
    predicted = counts.predicted[..., 0] + counts.predicted[..., 1]
    index = pd.MultiIndex.from_product([counts.thresholds, list(names)],
                                       names=["threshold", "subgroup"])
    columns = {}

    def flat(a):
        return np.asarray(a, dtype=np.float64).reshape(-1)

    columns["subgroup_negatives"] = flat(cells[..., 0])
    columns["subgroup_positives"] = flat(cells[..., 1])
    columns["background_negatives"] = flat(background[..., 0])
    columns["background_positives"] = flat(background[..., 1])
    columns["subgroup_tp"] = flat(predicted[..., 1])
    columns["subgroup_fp"] = flat(predicted[..., 0])
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
        shown = listed(undefined, 8)  # (names escaped: found by review)
        lead = f"{context}: " if context else ""
        warn(f"{lead}{len(undefined)} threshold rate(s) undefined (no row in their "
             f"set, e.g. no predicted positive for a precision), set to NaN: {shown}",
             UndefinedMetricWarning, stacklevel=user_stacklevel())  # (the user's line)
