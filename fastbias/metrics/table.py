"""Tables from counts: the five metrics (exact ratios) and the per-subgroup DataFrame.

The thin layer between the sweep's counts and every table fastbias shows.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..sweep import _kernels as K
from ..sweep.chunks import combine_chunks
from ..sweep.counts import SweepCounts
from ..sweep.double_double import metric_ratios, overall_ratio
from ..validate.errors import (
    UndefinedMetricWarning,
    WeightOverflowWarning,
    listed,
    user_stacklevel,
    warn,
)
from .definitions import (
    AEG_METRICS,
    AUC_METRICS,
    METRIC_CELLS,
    METRIC_COLUMNS,
    METRIC_SAMPLES,
)


def _ratio(numerator, denominator):
    """numerator / denominator as float64, NaN where the denominator is 0."""
    num = np.asarray(numerator, dtype=np.float64)
    den = np.asarray(denominator, dtype=np.float64)
    out = np.full(num.shape, np.nan)
    ok = den > 0
    np.divide(num, den, out=out, where=ok)
    return out


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


#: the count column holding each metric's twice-U numerator
U_COLUMNS = {"subgroup_auc": K.TWICE_SUBGROUP_U, "bpsn_auc": K.TWICE_BPSN_U,
             "bnsp_auc": K.TWICE_BNSP_U, "negative_aeg": K.TWICE_NEG_BG_ABOVE_U,
             "positive_aeg": K.TWICE_POS_BG_ABOVE_U}
_CELL_NUMBER = {("subgroup", 0): 0, ("subgroup", 1): 1, ("background", 0): 2,
                ("background", 1): 3}
# what the double-double ratios need, from the one metric -> cells map
_RATIO_PAIRS = np.array([[U_COLUMNS[m], _CELL_NUMBER[METRIC_SAMPLES[m][0]],
                           _CELL_NUMBER[METRIC_SAMPLES[m][1]]] for m in METRIC_COLUMNS],
                         dtype=np.int64)
_RATIO_IS_GAP = np.array([m in AEG_METRICS for m in METRIC_COLUMNS], dtype=np.bool_)


def metrics_from_counts(sc: SweepCounts) -> dict:
    """Map sweep counts to the five metrics (arrays, one entry per subgroup).

    Unweighted counts are exact integers and every metric is their ratio,
    correctly rounded: an AUC is ``twice U / (2 |X| |Y|)`` and an AEG
    ``(|X| |Y| - twice U) / (2 |X| |Y|)``, so an AEG near 0 keeps its digits.
    """
    c = sc.counts
    bg_neg, bg_pos = sc.background_totals()
    if sc.low is not None:  # double-double sums from the weighted sweep
        bg_hi = np.column_stack([bg_neg, bg_pos])
        bg_lo = np.where(bg_hi > 0, sc.low.background, 0.0)
        values = metric_ratios(c, sc.low.counts, bg_hi, bg_lo, _RATIO_PAIRS, _RATIO_IS_GAP)
        return {metric: values[:, j] for j, metric in enumerate(METRIC_COLUMNS)}
    cells = {("subgroup", 0): c[:, K.CELL_SUBGROUP_NEG], ("subgroup", 1): c[:, K.CELL_SUBGROUP_POS],
             ("background", 0): bg_neg, ("background", 1): bg_pos}
    out = {}
    for metric in METRIC_COLUMNS:
        x_cell, y_cell = METRIC_SAMPLES[metric]
        twice_u = c[:, U_COLUMNS[metric]]
        if sc.weighted:  # plain float sums (stacked bootstrap replicates)
            value = _ratio(twice_u, 2.0 * np.asarray(cells[x_cell], np.float64)
                           * np.asarray(cells[y_cell], np.float64))
            out[metric] = value if metric in AUC_METRICS else 0.5 - value
        else:  # exact integers: one correctly rounded division
            n_pairs = _counts_of_pairs(cells[x_cell], cells[y_cell])
            numerator = twice_u if metric in AUC_METRICS else n_pairs - twice_u
            out[metric] = exact_ratio(numerator, 2 * n_pairs)
    return out


def overall_auc_from_counts(sc: SweepCounts) -> float:
    if not sc.weighted:
        den = 2 * int(sc.total_neg) * int(sc.total_pos)
        return int(sc.twice_overall_u) / den if den > 0 else float("nan")
    if sc.low is not None:
        return overall_ratio(sc.total_neg, sc.low.totals[0], sc.total_pos, sc.low.totals[1],
                             sc.twice_overall_u, sc.low.twice_overall_u)
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
        bg_neg, bg_pos = sc.background_totals()
        # (a total past the largest double is inf: said once, by warn_undefined)
        with np.errstate(over="ignore"):
            data["subgroup_negative_weight"] = c[:, K.CELL_SUBGROUP_NEG] * sc.weight_scale
            data["subgroup_positive_weight"] = c[:, K.CELL_SUBGROUP_POS] * sc.weight_scale
            data["background_negative_weight"] = bg_neg * sc.weight_scale
            data["background_positive_weight"] = bg_pos * sc.weight_scale
    table = pd.DataFrame(data, index=pd.Index(sc.names, name="subgroup"))
    # (checked on the arrays first: reading the table's columns costs more than the rest)
    if warn and (any(np.isnan(np.asarray(data[m], dtype=np.float64)).any()
                     for m in METRIC_COLUMNS if m in data)
                 or any(np.isinf(data[c]).any() for c in WEIGHT_COLUMNS if c in data)):
        warn_undefined(table, context)
    return table


#: the cells' total weights of a weighted table, in the input's units
WEIGHT_COLUMNS = ("subgroup_negative_weight", "subgroup_positive_weight",
                  "background_negative_weight", "background_positive_weight")


def warn_undefined(table: pd.DataFrame, context: str = "") -> None:
    """One UndefinedMetricWarning naming each NaN metric and the empty cell behind it (and
    one warning naming the cells whose weights add up past the largest double)."""
    problems = []
    for metric in METRIC_COLUMNS:
        if metric not in table:
            continue
        for name in table.index[table[metric].isna().to_numpy()]:
            cells = METRIC_CELLS[metric]
            counts = ", ".join(f"{c}={int(table.at[name, c])}{_cell_weight(table, name, c)}"
                               for c in cells)
            problems.append(f"{name}: {metric} ({counts})")
    if problems:
        where = f" for {context}" if context else ""
        weighted = " or, weighted, of zero weight" if WEIGHT_COLUMNS[0] in table else ""
        warn(f"{len(problems)} metric value(s) undefined{where} (an empty or "
             f"one-class cell{weighted}), set to NaN: {listed(problems)}",
             UndefinedMetricWarning, stacklevel=user_stacklevel())
    _warn_weight_overflow(table, context)


def _cell_weight(table: pd.DataFrame, name, cell: str) -> str:
    """`` (weight 0)`` after a weighted cell's row count where its rows weigh nothing (a
    review found 93 rows of weight 0 shown as "subgroup_negatives=93", the cause unsaid)."""
    column = cell[:-1].replace("negative", "negative_weight").replace("positive",
                                                                     "positive_weight")
    if column in table and float(table.at[name, column]) == 0.0 and table.at[name, cell] > 0:
        return " (weight 0)"
    return ""


def _warn_weight_overflow(table: pd.DataFrame, context: str = "") -> None:
    """One warning naming the cells whose total weight is past the largest double (shown as
    inf in the ``*_weight`` columns; the metrics are exact: the sums were made on the
    weights divided by a power of two)."""
    over = [f"{name}: {column}" for column in WEIGHT_COLUMNS if column in table
            for name in table.index[np.isinf(table[column].to_numpy(dtype=np.float64))]]
    if over:
        where = f" for {context}" if context else ""
        warn(f"{len(over)} cell weight(s){where} add up past the largest float64 "
             f"(1.8e308) and are shown as inf: {listed(over)}. The metrics are exact "
             f"(their sums were made on the weights divided by a power of two); "
             f"divide the weights by a constant to see the cells' weights",
             WeightOverflowWarning, stacklevel=user_stacklevel())



def table_from_sweeps(sweeps: list, names: list) -> pd.DataFrame:
    """One table (rows in the order of ``names``) from several sweeps of subgroups, without
    warnings (the caller warns once, for the whole table)."""
    return pd.concat([table_from_counts(sc, warn=False) for sc in sweeps]).reindex(names)


def table_from_chunks(chunks, names: list, weighted: bool, weight_scale: float = 1.0):
    """Combine the chunks of one model into ``(table, overall AUC)``, the table exactly as
    :func:`table_from_counts` builds it for all rows at once (see
    :func:`fastbias.sweep.chunks.combine_chunks`)."""
    sweeps, overall = combine_chunks(chunks, names, weighted, weight_scale)
    return table_from_sweeps(sweeps, names), overall_auc_from_counts(overall)
