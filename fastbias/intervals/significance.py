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
subgroup's rows are scored like any others"), sequentially (Besag & Clifford
1991) until :data:`PERMUTATION_HITS` draws are as extreme as observed. The
p-values of one model (all subgroups x metrics) are adjusted together by
Holm (family-wise error) or Benjamini-Hochberg (false discovery rate); a test
is significant where the adjusted p-value is at most ``1 - confidence``.
See ``docs/significance.md``.
"""
from __future__ import annotations

import math
import warnings

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
from ..validate.errors import UndefinedMetricWarning
from . import _kernels as IK
from .delong import _unweighted_walk, _weighted_walk, standard_errors

SIGNIFICANCE_METHODS = ("holm", "bh")

#: a metric whose smaller cell has fewer rows gets a permutation p-value (DeLong's otherwise)
PERMUTATION_BELOW = 300

#: below this many rows in the smaller cell the permutation p-value is drawn (Monte Carlo);
#: from it up to PERMUTATION_BELOW it is the normal tail of the permutation distribution with
#: its exact mean and variance (unweighted rows; weighted rows keep DeLong's test there)
PERMUTATION_DRAWS_BELOW = 30

#: a sequential permutation test stops once this many draws were as extreme as observed
PERMUTATION_HITS = 20

#: the seed of the permutation draws (the p-values are reproducible)
PERMUTATION_SEED = 20261125


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


def _normal_exceedance(statistic: float, centre: float, mean: float, variance: float) -> float:
    """``P(|T - centre| >= |statistic - centre|)`` for ``T ~ N(mean, variance)``: the p-value of
    the permutation test's statistic (the distance from the null's value, as the drawn test
    uses) under the normal law with the permutation distribution's exact moments."""
    distance = abs(statistic - centre)
    if not (np.isfinite(distance) and np.isfinite(mean) and np.isfinite(variance)):
        return np.nan
    if variance <= 0.0:
        return 1.0 if abs(mean - centre) >= distance - 1e-12 * max(1.0, distance) else 0.0
    sd = math.sqrt(variance)
    upper = 0.5 * math.erfc((centre + distance - mean) / (sd * math.sqrt(2.0)))
    lower = 0.5 * math.erfc(-(centre - distance - mean) / (sd * math.sqrt(2.0)))
    return min(1.0, upper + lower)


class _Classes:
    """Each class in score order: keys, weights, placements against the other class and
    against its own class above (see ``sweep._kernels.class_placements``)."""

    def __init__(self, walk):
        c_pos, d_neg, pos_above, neg_above = SK.class_placements(walk.neg, walk.pos, walk.neg_cum,
                                                                 walk.pos_cum)
        self.neg_weights = np.diff(walk.neg_cum) if walk.neg_cum.size else np.ones(walk.neg.size)
        self.pos_weights = np.diff(walk.pos_cum) if walk.pos_cum.size else np.ones(walk.pos.size)
        self.c_pos, self.d_neg, self.pos_above, self.neg_above = c_pos, d_neg, pos_above, neg_above
        self.q_pos = np.concatenate([[0.0], np.cumsum(self.pos_weights * c_pos)])
        self.r_neg = np.concatenate([[0.0], np.cumsum(self.neg_weights * d_neg)])


def difference_standard_errors(sorted_scores: SortedScores, sample_weight, table: pd.DataFrame):
    """Standard errors of ``metric - overall AUC`` (AUC metrics) and of the AEGs.

    Returns ``(se, overall_auc, walk, classes)``: ``se`` a dict metric -> array
    (one entry per subgroup), ``overall_auc`` the AUC of all the rows the
    memberships cover (what the AUC metrics are compared with), and the walk
    and class placements that the permutation tests reuse. The variance
    of a difference is ``sum_r w_r (psi_M(r) - psi_O(r))^2`` over rows, where
    ``psi`` of an estimate ``theta`` with samples X (weight W_X) and Y
    (W_Y) is ``(V(r) - theta) / sqrt(W (W - 1))`` on a row of the sample of
    weight ``W`` and 0 elsewhere, ``V`` the row's placement divided by the
    other sample's weight: for one estimate that is DeLong's variance, for
    two on the same samples it is the paired test's.
    """
    m = sorted_scores.memberships
    se, overall_se = standard_errors(sorted_scores, sample_weight)
    walk = _weighted_walk(sorted_scores, sample_weight) if sample_weight is not None \
        else _unweighted_walk(sorted_scores)
    classes = _Classes(walk)
    w_neg, w_pos = walk.class_totals
    u_overall = float(classes.q_pos[-1])
    overall_auc = u_overall / (w_pos * w_neg) if w_pos > 0 and w_neg > 0 else np.nan
    out = {metric: se[metric] for metric in AEG_METRICS}
    if m.n_groups == 0:
        return {metric: np.empty(0) for metric in METRIC_COLUMNS}, overall_auc, walk, classes
    sums = SK.member_overall_cross_sums(walk.keys, walk.codes, walk.weights, walk.neg, walk.pos,
                                        walk.neg_cum, walk.pos_cum, classes.q_pos, classes.r_neg,
                                        walk.cells)
    n_neg_rows, n_pos_rows = m.class_rows
    cells = walk.cells
    weight = {
        ("subgroup", 0): cells[:, 0],
        ("subgroup", 1): cells[:, 1],
        ("background", 0): np.where(n_neg_rows - m.cell_rows[:, 0] > 0, w_neg - cells[:, 0], 0.),
        ("background", 1): np.where(n_pos_rows - m.cell_rows[:, 1] > 0, w_pos - cells[:, 1], 0.),
    }
    # per metric: (sum over X of w c_M c_O, of w c_O), (over Y of w d_M d_O, of w d_O)
    cross = {
        "subgroup_auc": ((sums[:, 0], sums[:, 1]), (sums[:, 4], sums[:, 5])),
        "bpsn_auc": ((sums[:, 7] - sums[:, 0], u_overall - sums[:, 1]), (sums[:, 6], sums[:, 5])),
        "bnsp_auc": ((sums[:, 2], sums[:, 1]), (sums[:, 3] - sums[:, 4], u_overall - sums[:, 5])),
    }
    var_o = overall_se ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        for metric in AUC_METRICS:
            x_cell, y_cell = METRIC_SAMPLES[metric]
            w_x, w_y = weight[x_cell], weight[y_cell]
            theta = table[metric].to_numpy(dtype=np.float64)
            (cx, ox), (cy, oy) = cross[metric]
            t_x = cx / (w_y * w_neg) - theta * ox / w_neg
            t_y = cy / (w_x * w_pos) - theta * oy / w_pos
            cov = (t_x / np.sqrt(w_x * (w_x - 1.0) * w_pos * (w_pos - 1.0))
                   + t_y / np.sqrt(w_y * (w_y - 1.0) * w_neg * (w_neg - 1.0)))
            var = se[metric] ** 2 + var_o - 2.0 * cov
            out[metric] = np.sqrt(np.maximum(var, 0.0))
    return ({metric: out[metric] for metric in METRIC_COLUMNS}, overall_auc, walk, classes)


def permutation_draws(family_size: int, alpha: float) -> int:
    """The most draws of one permutation test: enough that a p-value, ``1 / (draws + 1)`` at
    the least, can pass the smallest threshold a Holm or BH adjustment of ``family_size``
    tests at ``alpha`` uses (``alpha / family_size``); at least 10,000 and at most 100,000."""
    return int(min(100_000, max(10_000, math.ceil(max(family_size, 1) / alpha))))


def _permutation_pvalues(walk, classes: _Classes, memberships, values: dict, overall_auc: float,
                         need: dict, min_cell: dict, max_draws: int, workers: int) -> dict:
    """Permutation p-values of the metrics flagged in ``need`` (metric -> bool per subgroup).

    Per subgroup, up to two tests: one redraws its negatives (subgroup AUC when the
    negatives are the smaller cell, BPSN AUC, negative AEG), one its positives (subgroup AUC
    otherwise, BNSP AUC, positive AEG), the other cell held fixed. A metric whose smaller
    cell (``min_cell``) has fewer than :data:`PERMUTATION_DRAWS_BELOW` rows is drawn for;
    otherwise, unweighted, its p-value is the normal tail of the permutation distribution
    (exact moments); weighted, it stays DeLong's (NaN here).
    """
    k = memberships.n_groups
    order = np.argsort(walk.codes, kind="stable")  # by subgroup and class, in score order within
    keys = walk.keys[order]
    weights = walk.weights[order] if walk.weights.size else np.ones(order.shape[0])
    starts = np.zeros(2 * k + 1, dtype=np.int64)
    np.cumsum(np.bincount(walk.codes, minlength=2 * k), out=starts[1:])
    w_neg, w_pos = walk.class_totals
    u_overall = float(classes.q_pos[-1])  # the sum over either class of w x placement
    weighted = walk.weights.size > 0
    above_sums = {0: (float(classes.neg_above.sum()), float(np.dot(classes.neg_above,
                                                                    classes.neg_above))),
                  1: (float(classes.pos_above.sum()), float(np.dot(classes.pos_above,
                                                                    classes.pos_above)))}
    rows = memberships.cell_rows
    jobs = []
    for g in range(k):
        sub_on_negatives = rows[g, 0] <= rows[g, 1]
        for label, cross, aeg in ((0, "bpsn_auc", "negative_aeg"), (1, "bnsp_auc", "positive_aeg")):
            metrics = ("subgroup_auc", cross, aeg)
            active = np.array([need["subgroup_auc"][g] and sub_on_negatives == (label == 0),
                               need[cross][g], need[aeg][g]])
            size = int(rows[g, label])
            drawn = active & np.array([min_cell[m][g] < PERMUTATION_DRAWS_BELOW and size <= 1000
                                       for m in metrics])
            moments = active & ~drawn & (not weighted)
            if drawn.any() or moments.any():
                jobs.append((g, label, metrics, drawn, moments))

    packed = {}  # per class: weight, placement, own class above, side by side (built once)

    def run(share):
        results = []
        for g, label, metrics, drawn, moments in share:
            fixed = 2 * g + (1 - label)  # the other cell of the subgroup
            f_keys = keys[starts[fixed]:starts[fixed + 1]]
            f_cum = np.concatenate([[0.0], np.cumsum(weights[starts[fixed]:starts[fixed + 1]])])
            size = int(rows[g, label])
            if label == 0:
                side = (walk.neg, classes.neg_weights, classes.d_neg, classes.neg_above, w_pos)
            else:
                side = (walk.pos, classes.pos_weights, classes.c_pos, classes.pos_above, w_neg)
            class_keys, class_weights, class_place, class_above, other_total = side
            p = np.full(3, np.nan)
            if drawn.any():
                if label not in packed:
                    packed[label] = np.ascontiguousarray(
                        np.column_stack([class_weights, class_place, class_above]))
                observed = np.array([abs(values[metrics[0]][g] - overall_auc),
                                     abs(values[metrics[1]][g] - overall_auc),
                                     abs(values[metrics[2]][g])])
                with np.errstate(over="ignore"):  # the draw stream's uint64 arithmetic wraps
                    counts = IK.permutation_exceedances(   # on purpose (uncompiled, numpy warns)
                        class_keys, packed[label], f_keys, f_cum, label == 0, size, other_total,
                        observed, drawn, overall_auc, PERMUTATION_HITS, max_draws,
                        PERMUTATION_SEED + 2 * g + label, w_pos if label else w_neg, u_overall,
                        weighted)
                for j in np.flatnonzero(drawn):
                    hits, draws, bound = counts[j]
                    if bound * (max_draws + 1.0) <= 1.0:  # below any Monte Carlo p-value
                        p[j] = bound
                    elif hits >= PERMUTATION_HITS:
                        p[j] = hits / draws
                    else:
                        p[j] = (hits + 1.0) / (draws + 1.0)
            if moments.any():
                mv = IK.permutation_moments(class_keys, class_place, f_keys, label == 0, size,
                                            other_total, *above_sums[label])
                statistic = (values[metrics[0]][g], values[metrics[1]][g],
                             0.5 - values[metrics[2]][g])
                centre = (overall_auc, overall_auc, 0.5)  # the null of the test, not mv's mean
                for j in np.flatnonzero(moments):
                    p[j] = _normal_exceedance(statistic[j], centre[j], mv[j, 0], mv[j, 1])
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


def attach_significance(table: pd.DataFrame, *, method: str, sorted_scores: SortedScores,
                        sample_weight=None, confidence: float = 0.95) -> pd.DataFrame:
    """Add ``<metric>_pvalue``, ``<metric>_pvalue_adjusted`` and ``<metric>_significant``.

    From the sorts the point estimate made (validated inputs):
    :func:`add_pvalues` then :func:`adjust_table`.
    """
    return adjust_table(add_pvalues(table, sorted_scores=sorted_scores,
                                    sample_weight=sample_weight, confidence=confidence),
                        method=method, confidence=confidence, stacklevel=4)


def add_pvalues(table: pd.DataFrame, *, sorted_scores: SortedScores, sample_weight=None,
                confidence: float = 0.95, family_size: int | None = None) -> pd.DataFrame:
    """Add the raw two-sided ``<metric>_pvalue`` columns (see the module docstring).

    The AUC metrics are compared with the AUC of the rows ``sorted_scores``
    covers: the overall AUC, or with ``missing_subgroup="exclude"`` the AUC of
    the rows annotated for the subgroup. ``family_size`` (default: five per
    row of ``table``) and ``confidence`` set how far a permutation test may
    go (:func:`permutation_draws`). ``attrs["permutation_tests"]`` counts the
    permutation p-values. NaN: an undefined metric, or a DeLong variance that
    is (a cell of total weight at most 1).
    """
    memberships = sorted_scores.memberships
    se, overall_auc, walk, classes = difference_standard_errors(sorted_scores, sample_weight,
                                                                table)
    n_neg, n_pos = memberships.class_rows
    rows = {("subgroup", 0): memberships.cell_rows[:, 0],
            ("subgroup", 1): memberships.cell_rows[:, 1],
            ("background", 0): n_neg - memberships.cell_rows[:, 0],
            ("background", 1): n_pos - memberships.cell_rows[:, 1]}
    values = {metric: table[metric].to_numpy(dtype=np.float64) for metric in METRIC_COLUMNS}
    columns, need, min_cell = {}, {}, {}
    for metric in METRIC_COLUMNS:
        gap = values[metric] if metric in AEG_METRICS else values[metric] - overall_auc
        columns[metric] = _two_sided_p(gap, se[metric])
        x_cell, y_cell = METRIC_SAMPLES[metric]
        min_cell[metric] = np.minimum(rows[x_cell], rows[y_cell])
        need[metric] = (min_cell[metric] < PERMUTATION_BELOW) & np.isfinite(values[metric])
    n_permutation = 0
    if any(n.any() for n in need.values()):
        if family_size is None:
            family_size = len(METRIC_COLUMNS) * len(table)
        exact = _permutation_pvalues(walk, classes, memberships, values, overall_auc, need,
                                     min_cell,
                                     permutation_draws(family_size, round(1.0 - confidence, 12)),
                                     sorted_scores.workers)
        for metric in METRIC_COLUMNS:
            replaced = need[metric] & np.isfinite(exact[metric])
            columns[metric] = np.where(replaced, exact[metric], columns[metric])
            n_permutation += int(replaced.sum())
    out = pd.concat([table, pd.DataFrame({f"{metric}_pvalue": columns[metric]
                                          for metric in METRIC_COLUMNS}, index=table.index)],
                    axis=1)
    out.attrs = {**table.attrs,
                 "permutation_tests": table.attrs.get("permutation_tests", 0) + n_permutation}
    return out


def adjust_table(table: pd.DataFrame, *, method: str, confidence: float = 0.95,
                 context: str = "", stacklevel: int = 2) -> pd.DataFrame:
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
        shown = "; ".join(untested[:12]) + (f"; ... {len(untested) - 12} more"
                                            if len(untested) > 12 else "")
        lead = f"{context}: " if context else ""
        warnings.warn(f"{lead}{len(untested)} metric(s) not tested for significance (DeLong's "
                      f"variance is undefined: a cell of total weight at most 1; p-value NaN, "
                      f"never significant): {shown}",
                      UndefinedMetricWarning, stacklevel=stacklevel)
    out.attrs = {**table.attrs, "significance": method, "significance_level": alpha,
                 "n_tests": int(np.isfinite(stacked).sum())}
    return out
