"""Public array API: per-subgroup bias metrics and the overall AUC.

Definitions (Borkan et al. 2019, Definitions 3.3/3.4 and Table 2), for a
subgroup g with D-/D+ the background (rows not in g) negatives/positives and
Dg-/Dg+ the subgroup's, ties counted as 1/2:

=================  ===========================================
``subgroup_auc``   AUC(Dg- vs Dg+)
``bpsn_auc``       AUC(Dg- vs D+)   background positive, subgroup negative
``bnsp_auc``       AUC(D- vs Dg+)   background negative, subgroup positive
``negative_aeg``   1/2 - P(s(D-) > s(Dg-))
``positive_aeg``   1/2 - P(s(D+) > s(Dg+))
=================  ===========================================

A positive AEG means the subgroup is scored *higher* than the background. The
paper's integral form (its Definition 4, the area between the curves) has the
opposite sign; fastbias follows Definitions 3.3/3.4, Table 2 and the authors'
reference code.
"""
from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from . import _kernels as K
from ._core import (Memberships, SweepCounts, prepare_memberships, prepare_memberships_dense,
                    sort_classes, sort_memberships, sweep_counts)
from ._validation import (UndefinedMetricWarning, check_aligned, restrict_rows, subgroup_rows,
                          validated_rows)

METRIC_COLUMNS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUC_METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
COUNT_COLUMNS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
                 "background_negatives", "background_positives"]
WEIGHT_COLUMNS = ["subgroup_negative_weight", "subgroup_positive_weight",
                  "background_negative_weight", "background_positive_weight"]

# which two cells each metric compares (explains an undefined value)
METRIC_CELLS = {
    "subgroup_auc": ("subgroup_negatives", "subgroup_positives"),
    "bpsn_auc": ("subgroup_negatives", "background_positives"),
    "bnsp_auc": ("background_negatives", "subgroup_positives"),
    "negative_aeg": ("background_negatives", "subgroup_negatives"),
    "positive_aeg": ("background_positives", "subgroup_positives"),
}


def _ratio(numerator, denominator):
    """numerator / denominator as float64, NaN where the denominator is 0."""
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    out = np.full(num.shape, np.nan)
    ok = den > 0
    np.divide(num, den, out=out, where=ok)
    return out


def background_totals(sc: SweepCounts) -> tuple:
    """Background negative and positive totals (counts, or weights) per subgroup.

    Unweighted they are exact integer differences. Weighted, the sweep
    provides them from compensated sums (``sc.background``), so a background
    that is tiny next to its subgroup keeps its significant digits; a
    background with no rows is exactly 0 (its metrics are then NaN).
    """
    c = sc.counts
    if sc.background is not None:
        bg_neg, bg_pos = sc.background[:, 0].copy(), sc.background[:, 1].copy()
    else:
        bg_neg = sc.total_neg - c[:, K.CELL_SUBGROUP_NEG]
        bg_pos = sc.total_pos - c[:, K.CELL_SUBGROUP_POS]
    if sc.weighted:
        n_neg, n_pos = sc.class_rows
        bg_neg = np.where(n_neg - sc.cell_rows[:, 0] > 0, np.maximum(bg_neg, 0.0), 0.0)
        bg_pos = np.where(n_pos - sc.cell_rows[:, 1] > 0, np.maximum(bg_pos, 0.0), 0.0)
    return bg_neg, bg_pos


_EXACT_IN_FLOAT64 = 2 ** 53


def exact_ratio(numerator, denominator) -> np.ndarray:
    """``numerator / denominator`` of integer arrays, correctly rounded; NaN where the
    denominator is 0.

    Integers below 2**53 are exact in float64, so one IEEE division rounds
    correctly; larger ones are divided as Python integers (also correctly
    rounded), one element at a time.
    """
    num = np.asarray(numerator, dtype=np.int64)
    den = np.asarray(denominator, dtype=np.int64)
    out = np.full(num.shape, np.nan)
    ok = den > 0
    small = ok & (np.abs(num) < _EXACT_IN_FLOAT64) & (den < _EXACT_IN_FLOAT64)
    np.divide(num.astype(np.float64), den.astype(np.float64), out=out, where=small)
    for i in zip(*np.nonzero(ok & ~small)):
        out[i] = int(num[i]) / int(den[i])
    return out


def _counts_of_pairs(a, b) -> np.ndarray:
    """``a * b`` of two int64 count arrays (each below 2**32 for any data that fits in memory)."""
    return np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64)


def metrics_from_counts(sc: SweepCounts) -> dict:
    """Map sweep counts to the five metrics (arrays, one entry per subgroup).

    Unweighted counts are exact integers and every metric is their ratio,
    correctly rounded: an AUC is ``twice U / (2 |X| |Y|)`` and an AEG
    ``(|X| |Y| - twice U) / (2 |X| |Y|)``, so an AEG near 0 keeps its digits.
    """
    c = sc.counts
    sub_neg = c[:, K.CELL_SUBGROUP_NEG]
    sub_pos = c[:, K.CELL_SUBGROUP_POS]
    bg_neg, bg_pos = background_totals(sc)
    if not sc.weighted:
        pairs = {"subgroup_auc": _counts_of_pairs(sub_neg, sub_pos),
                 "bpsn_auc": _counts_of_pairs(sub_neg, bg_pos),
                 "bnsp_auc": _counts_of_pairs(bg_neg, sub_pos),
                 "negative_aeg": _counts_of_pairs(bg_neg, sub_neg),
                 "positive_aeg": _counts_of_pairs(bg_pos, sub_pos)}
        twice_u = {"subgroup_auc": c[:, K.TWICE_SUBGROUP_U], "bpsn_auc": c[:, K.TWICE_BPSN_U],
                   "bnsp_auc": c[:, K.TWICE_BNSP_U], "negative_aeg": c[:, K.TWICE_NEG_BG_ABOVE_U],
                   "positive_aeg": c[:, K.TWICE_POS_BG_ABOVE_U]}
        out = {}
        for metric, n_pairs in pairs.items():
            numerator = twice_u[metric] if metric in AUC_METRICS else n_pairs - twice_u[metric]
            out[metric] = exact_ratio(numerator, 2 * n_pairs)
        return out
    if sc.low is not None:  # double-double sums from the weighted sweep
        bg_hi = np.column_stack([bg_neg, bg_pos])
        bg_lo = np.where(bg_hi > 0, sc.low.background, 0.0)
        values = K.weighted_metric_values(c, sc.low.counts, bg_hi, bg_lo)
        return {metric: values[:, j] for j, metric in enumerate(METRIC_COLUMNS)}
    sub_neg_f, sub_pos_f = sub_neg.astype(np.float64), sub_pos.astype(np.float64)
    bg_neg_f, bg_pos_f = np.asarray(bg_neg, np.float64), np.asarray(bg_pos, np.float64)
    return {
        "subgroup_auc": _ratio(c[:, K.TWICE_SUBGROUP_U], 2.0 * sub_neg_f * sub_pos_f),
        "bpsn_auc": _ratio(c[:, K.TWICE_BPSN_U], 2.0 * sub_neg_f * bg_pos_f),
        "bnsp_auc": _ratio(c[:, K.TWICE_BNSP_U], 2.0 * bg_neg_f * sub_pos_f),
        "negative_aeg": 0.5 - _ratio(c[:, K.TWICE_NEG_BG_ABOVE_U], 2.0 * bg_neg_f * sub_neg_f),
        "positive_aeg": 0.5 - _ratio(c[:, K.TWICE_POS_BG_ABOVE_U], 2.0 * bg_pos_f * sub_pos_f),
    }


def overall_auc_from_counts(sc: SweepCounts) -> float:
    if not sc.weighted:
        den = 2 * int(sc.total_neg) * int(sc.total_pos)
        return int(sc.twice_overall_u) / den if den > 0 else float("nan")
    if sc.low is not None:
        return float(K.weighted_overall_auc(sc.total_neg, sc.low.totals[0], sc.total_pos,
                                            sc.low.totals[1], sc.twice_overall_u,
                                            sc.low.twice_overall_u))
    den = 2.0 * float(sc.total_neg) * float(sc.total_pos)
    return float(sc.twice_overall_u) / den if den > 0 else float("nan")


def table_from_counts(sc: SweepCounts, *, warn: bool = True, context: str = "") -> pd.DataFrame:
    """The per-subgroup DataFrame (index = subgroup name) from sweep counts."""
    cell = sc.cell_rows
    n_neg, n_pos = sc.class_rows
    data = {
        "subgroup_size": cell[:, 0] + cell[:, 1],
        "subgroup_negatives": cell[:, 0],
        "subgroup_positives": cell[:, 1],
        "background_negatives": n_neg - cell[:, 0],
        "background_positives": n_pos - cell[:, 1],
    }
    data.update(metrics_from_counts(sc))
    if sc.weighted:  # in the input's units: the sweep divided the weights by weight_scale
        c = sc.counts
        bg_neg, bg_pos = background_totals(sc)
        data["subgroup_negative_weight"] = c[:, K.CELL_SUBGROUP_NEG] * sc.weight_scale
        data["subgroup_positive_weight"] = c[:, K.CELL_SUBGROUP_POS] * sc.weight_scale
        data["background_negative_weight"] = bg_neg * sc.weight_scale
        data["background_positive_weight"] = bg_pos * sc.weight_scale
    table = pd.DataFrame(data, index=pd.Index(sc.names, name="subgroup"))
    if warn:
        warn_undefined(table, context)
    return table


def warn_undefined(table: pd.DataFrame, context: str = "") -> None:
    """One UndefinedMetricWarning naming each NaN metric and the empty cell behind it."""
    problems = []
    for metric in METRIC_COLUMNS:
        if metric not in table:
            continue
        for name in table.index[table[metric].isna().to_numpy()]:
            cells = METRIC_CELLS[metric]
            counts = ", ".join(f"{c}={int(table.at[name, c])}" for c in cells)
            problems.append(f"{name}: {metric} ({counts})")
    if problems:
        shown = "; ".join(problems[:12]) + (f"; ... {len(problems) - 12} more"
                                             if len(problems) > 12 else "")
        where = f" for {context}" if context else ""
        warnings.warn(f"{len(problems)} metric value(s) undefined{where} (an empty or "
                      f"one-class cell), set to NaN: {shown}", UndefinedMetricWarning,
                      stacklevel=3)


def prepare_subgroups(labels: np.ndarray, subgroups, subgroup_threshold: float | None = None,
                      kept: np.ndarray | None = None) -> Memberships:
    """Validated labels + any accepted subgroup container -> :class:`Memberships`.

    A dense (n, k) boolean array takes a single row-major pass; DataFrames and
    dicts take one jitted pass per column. ``kept`` (a boolean mask over the
    input rows, from ``nan_policy="omit"``) restricts the subgroups to those rows.
    """
    n = labels.shape[0] if kept is None else kept.shape[0]
    if (isinstance(subgroups, np.ndarray) and subgroups.ndim == 2 and subgroups.dtype == np.bool_
            and subgroups.shape[1] > 0):
        if subgroups.shape[0] != n:
            hint = (f"; one row per subgroup? expected (n_rows, n_subgroups) = ({n}, "
                    f"{subgroups.shape[0]}): transpose it" if subgroups.shape[1] == n else "")
            raise ValueError(f"subgroups has {subgroups.shape[0]} rows but y_true has {n}{hint}")
        names = [f"subgroup_{j}" for j in range(subgroups.shape[1])]
        matrix = subgroups if kept is None else subgroups[kept]
        return prepare_memberships_dense(labels, np.ascontiguousarray(matrix), names)
    names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    if kept is not None:
        rows = restrict_rows(rows, kept)
    return prepare_memberships(labels, rows, names)


def bias_metrics(y_true, y_score, subgroups, *, sample_weight=None,
                 label_threshold: float | None = None,
                 subgroup_threshold: float | None = None, ci: str | None = None,
                 confidence: float = 0.95, n_boot: int = 1000,
                 random_state=None, nan_policy: str = "raise", pos_label=None) -> pd.DataFrame:
    """Subgroup AUC, BPSN AUC, BNSP AUC and both AEGs for every subgroup at once.

    One sort of the scores and one sweep over the subgroup rows give every
    tie-aware Mann-Whitney U count; unweighted counts are exact integers.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: bool, or numbers in {0, 1}. Fractional labels (e.g. a
        toxicity fraction) need ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite model scores. float32 scores stay float32, so ties are decided
        in the precision given.
    subgroups : DataFrame of boolean columns, dict of name -> mask, or (n, k) array
        Subgroup memberships; a row may belong to several subgroups or none.
        Names of an array input are ``subgroup_0``, ``subgroup_1``, ...
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights; every pair then counts ``w_i * w_j``.
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    subgroup_threshold : float, optional
        Member iff ``mask >= subgroup_threshold`` (NaN is never a member).
    ci : {None, "delong", "bootstrap", "bernstein"}, optional
        Add ``<metric>_low``/``<metric>_high`` columns (and ``<metric>_se``
        where the method has standard errors); see ``docs/intervals.md``.
    confidence : float, default 0.95
        Coverage of the intervals.
    n_boot : int, default 1000
        Replicates for ``ci="bootstrap"``.
    random_state : int or numpy Generator, optional
        Seed for ``ci="bootstrap"``.
    nan_policy : {"raise", "omit"}, default "raise"
        What a missing value (NaN, None, pd.NA) in ``y_true``, ``y_score``
        or ``sample_weight``, or an infinite score, does: raise a
        ``ValueError``, or drop the row with one ``OmittedRowsWarning``
        stating how many rows each argument cost. See ``docs/validation.md``.
    pos_label : scalar, optional
        For two-valued labels that are not 0/1 (strings, categoricals):
        the value of the positive class.

    Returns
    -------
    pandas.DataFrame
        Index ``subgroup``; columns ``subgroup_size``, the four cell counts
        ``subgroup_negatives``, ``subgroup_positives``, ``background_negatives``,
        ``background_positives``, then ``subgroup_auc``, ``bpsn_auc``,
        ``bnsp_auc``, ``negative_aeg``, ``positive_aeg`` (and the four cell
        weights when weighted). ``table.attrs["overall_auc"]`` holds the
        overall AUC. Undefined metrics (an empty or one-class cell) are NaN and
        raise one :class:`UndefinedMetricWarning`.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> y = np.array([0, 0, 1, 1, 0, 1])
    >>> s = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9])
    >>> groups = {"g": np.array([True, True, True, False, False, False])}
    >>> t = fastbias.bias_metrics(y, s, groups)
    >>> float(t.loc["g", "subgroup_auc"]), float(t.loc["g", "bpsn_auc"])
    (0.5, 1.0)
    """
    check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups),
                   ("sample_weight", sample_weight)])
    labels, scores, weights, kept = validated_rows(
        y_true, y_score, sample_weight, label_threshold=label_threshold, pos_label=pos_label,
        nan_policy=nan_policy)
    if ci not in (None, "delong", "bootstrap", "bernstein"):
        raise ValueError(f"ci must be None, 'delong', 'bootstrap' or 'bernstein', got {ci!r}")
    if weights is None:
        # the class split and sorts need only labels and scores: a second core does them while
        # this thread turns the subgroup masks into memberships and sorts those; the counts
        # are then split between the two threads
        with ThreadPoolExecutor(max_workers=1) as pool:
            sorting = pool.submit(sort_classes, scores, labels)
            memberships = prepare_subgroups(labels, subgroups, subgroup_threshold, kept)
            sorted_members = sort_memberships(scores, memberships)
            sc = sweep_counts(scores, memberships, sorted_classes=sorting.result(),
                              sorted_members=sorted_members, executor=pool)
    else:
        memberships = prepare_subgroups(labels, subgroups, subgroup_threshold, kept)
        sc = sweep_counts(scores, memberships, weights)
    table = table_from_counts(sc)
    table.attrs["overall_auc"] = overall_auc_from_counts(sc)
    if ci is not None:
        from .intervals import add_intervals

        table = add_intervals(table, method=ci, scores=scores, memberships=memberships,
                              sample_weight=weights, confidence=confidence, n_boot=n_boot,
                              random_state=random_state)
    return table


def overall_auc(y_true, y_score, *, sample_weight=None,
                label_threshold: float | None = None, nan_policy: str = "raise",
                pos_label=None) -> float:
    """ROC AUC of all rows, tie-aware; equal to ``sklearn.metrics.roc_auc_score``.

    Unlike scikit-learn, a one-class input returns NaN with an
    :class:`UndefinedMetricWarning` instead of raising.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1), or fractional with ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite scores.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights.
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    nan_policy : {"raise", "omit"}, default "raise"
        Raise on a missing label, score or weight (or an infinite score), or
        drop those rows with an ``OmittedRowsWarning``.
    pos_label : scalar, optional
        The positive class of two-valued non-0/1 labels (e.g. strings).

    Returns
    -------
    float

    Examples
    --------
    >>> import fastbias
    >>> fastbias.overall_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    check_aligned([("y_true", y_true), ("y_score", y_score), ("sample_weight", sample_weight)])
    labels, scores, weights, _ = validated_rows(
        y_true, y_score, sample_weight, label_threshold=label_threshold, pos_label=pos_label,
        nan_policy=nan_policy)
    sc = sweep_counts(scores, prepare_memberships(labels, [], []), weights)
    value = overall_auc_from_counts(sc)
    if np.isnan(value):
        n_neg, n_pos = sc.class_rows
        warnings.warn(f"overall AUC undefined (negatives={n_neg}, positives={n_pos}); NaN",
                      UndefinedMetricWarning, stacklevel=2)
    return value
