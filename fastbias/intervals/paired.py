"""DeLong's paired test of two models scored on the same rows."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._numba_cache import read_only
from ..metrics.definitions import AEG_METRICS, METRIC_COLUMNS, METRIC_SAMPLES
from ..prepare.memberships import prepare_memberships, subgroup_rows
from ..sort import _kernels as SK
from ..sort.order import order_scores, sorted_scores
from ..validate.columns import check_aligned
from ..validate.errors import warn_listed
from ..validate.settings import check_confidence
from ..validate.values import NO_POS_LABEL_HINT, as_labels, as_sample_weight, as_scores
from . import _kernels as IK
from .delong import _z_value


def delong_paired_test(y_true, scores_a, scores_b, subgroups=None, *, sample_weight=None,
                       label_threshold: float | None = None,
                       subgroup_threshold: float | None = None,
                       confidence: float = 0.95) -> pd.DataFrame:
    """DeLong's paired test of the difference between two models on the same rows.

    For the overall AUC and, per subgroup, each of the five metrics, the two
    models' estimates share the rows, so their DeLong structural components are
    correlated; the variance of the difference is
    ``var_a + var_b - 2 cov_ab`` with ``cov_ab = S10_ab / m + S01_ab / n``
    (DeLong, DeLong & Clarke-Pearson 1988). ``z = difference / se`` and the
    p-value is two-sided under the normal approximation.

    Cost: one sort per model and one ``O(n)`` pass per subgroup and metric.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (or fractions with ``label_threshold``).
    scores_a, scores_b : array-like of shape (n,)
        The two models' scores.
    subgroups : DataFrame, dict of masks or (n, k) array, optional
        As for :func:`fastbias.bias_metrics`; without it only the overall AUC
        is compared.
    sample_weight : array-like of shape (n,), optional
        Frequency weights (a weight of 2 counts a row twice).
    label_threshold, subgroup_threshold : float, optional
    confidence : float, default 0.95
        For the interval of the difference.

    Returns
    -------
    pandas.DataFrame
        Index ``(subgroup, metric)``; the first row is ``("overall",
        "overall_auc")``. Columns ``value_a``, ``value_b``, ``difference``
        (a - b), ``se_a``, ``se_b``, ``correlation``, ``difference_se``,
        ``difference_low``, ``difference_high``, ``z``, ``p_value``. A value of an
        empty or one-class cell is NaN (its z and p-value too), and a test of a cell of
        total weight at most 1 (no standard error), or of a difference whose standard error
        is 0 (every placement alike), has NaN z and p-value; one
        :class:`~fastbias.UndefinedMetricWarning` each names them. Two equal estimates
        with a standard error of 0 have z = 0 and p = 1.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(2000) < 0.4
    >>> good = y + rng.normal(0, 0.7, 2000)
    >>> noisy = y + rng.normal(0, 1.2, 2000)
    >>> res = fastbias.delong_paired_test(y, good, noisy)
    >>> row = res.loc[("overall", "overall_auc")]
    >>> bool(row["difference"] > 0), bool(row["p_value"] < 1e-6)
    (True, True)
    """
    confidence = check_confidence(confidence)
    check_aligned([("y_true", y_true), ("scores_a", scores_a), ("scores_b", scores_b),
                   ("subgroups", subgroups), ("sample_weight", sample_weight)])
    labels = as_labels(y_true, "y_true", threshold=label_threshold,
                       pos_label_hint=NO_POS_LABEL_HINT)
    n = labels.shape[0]
    sa = as_scores(scores_a, "scores_a", n)
    sb = as_scores(scores_b, "scores_b", n)
    weights = as_sample_weight(sample_weight, n)
    w = np.ones(n) if weights is None else weights
    if subgroups is None:
        names, rows = [], []
    else:
        names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    z_crit = _z_value(confidence)
    memberships = prepare_memberships(labels, rows, names)
    orders = [order_scores(s, memberships) for s in (sa, sb)]

    class _Sample:
        """One sample for both models, each array in that model's score order: scores,
        weights, skip flags (rows left out of a background cell); ``perm_ab`` maps
        model a's positions to model b's; ``place`` receives the placements."""

        def __init__(self, scores, weights, perm_ab):
            size = scores[0].shape[0]
            self.scores, self.weights, self.perm_ab = scores, weights, perm_ab
            self.skip = [np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)]
            self.no_skip = np.zeros(size, dtype=bool)
            self.place = [np.empty(size), np.empty(size)]

    classes, positions = {}, {}
    for label in (0, 1):
        class_rows = [o.pos_rows if label else o.neg_rows for o in orders]
        positions[label] = []
        for k in range(2):
            pos_k = np.empty(n, dtype=np.int64)
            pos_k[class_rows[k]] = np.arange(class_rows[k].shape[0])
            positions[label].append(pos_k)
        classes[label] = _Sample([o.pos_sorted if label else o.neg_sorted for o in orders],
                                 [np.ascontiguousarray(w[r]) for r in class_rows],
                                 positions[label][1][class_rows[0]])

    def cell_sample(cell_rows):
        idx = [sorted_scores(s, cell_rows, with_order=True)[1] for s in (sa, sb)]
        rank_b = np.empty(cell_rows.shape[0], dtype=np.int64)
        rank_b[idx[1]] = np.arange(cell_rows.shape[0])
        sorted_rows = [cell_rows[i] for i in idx]
        return _Sample([SK.gather_scores(read_only(s), read_only(r))
                        for s, r in zip((sa, sb), sorted_rows)],
                       [np.ascontiguousarray(w[r]) for r in sorted_rows], rank_b[idx[0]])

    def compare(c: _Sample, s: _Sample, c_is_x: bool, exclude: bool = False):
        """(theta_a, theta_b, var_a, var_b, cov_ab); c leaves out its flagged rows if exclude."""
        c_skip = c.skip if exclude else [c.no_skip, c.no_skip]
        for k in range(2):
            w_x, w_y = IK.merged_placements(c.scores[k], c.weights[k], c_skip[k], s.scores[k],
                                            s.weights[k], c_is_x, c.place[k], s.place[k])
        mom = IK.paired_moments(c.weights[0], c_skip[0], c.place[0], c.place[1], c.perm_ab,
                                s.weights[0], s.no_skip, s.place[0], s.place[1], s.perm_ab,
                                c_is_x)
        if not (w_x > 0 and w_y > 0):
            return np.nan, np.nan, np.nan, np.nan, np.nan
        ta = mom[0, 0] / (w_x * w_y)
        tb = mom[0, 1] / (w_x * w_y)
        if not (w_x > 1 and w_y > 1):
            return ta, tb, np.nan, np.nan, np.nan

        def cov(col, tp, tq):
            s10 = (mom[0, col] / (w_y * w_y) - w_x * tp * tq) / (w_x - 1.0)
            s01 = (mom[1, col] / (w_x * w_x) - w_y * tp * tq) / (w_y - 1.0)
            return s10 / w_x + s01 / w_y

        return (ta, tb, max(cov(2, ta, ta), 0.0), max(cov(3, tb, tb), 0.0), cov(4, ta, tb))

    records, index = [], []

    def add(key, metric, result):
        ta, tb, var_a, var_b, cov_ab = result
        if metric in AEG_METRICS:
            ta, tb = 0.5 - ta, 0.5 - tb
        diff = ta - tb
        var_diff = max(var_a + var_b - 2.0 * cov_ab, 0.0) if np.isfinite(var_a) else np.nan
        se_diff = math.sqrt(var_diff) if np.isfinite(var_diff) else np.nan
        corr = (cov_ab / math.sqrt(var_a * var_b)
                if np.isfinite(var_a) and var_a > 0 and var_b > 0 else np.nan)
        if np.isfinite(se_diff) and se_diff > 0:
            z = diff / se_diff
            p_value = math.erfc(abs(z) / math.sqrt(2.0))
        elif np.isfinite(se_diff) and diff == 0:  # the same estimate: no difference, p = 1
            z, p_value = 0.0, 1.0
        else:  # (a difference with a standard error of 0, every placement of each sample
            # alike: DeLong's variance tells nothing, not certainty; found by review, z = inf
            # and p = 0 for two models on four rows)
            z = p_value = np.nan
            z = p_value = np.nan
        index.append((key, metric))
        records.append({
            "value_a": ta, "value_b": tb, "difference": diff,
            "se_a": math.sqrt(var_a) if np.isfinite(var_a) else np.nan,
            "se_b": math.sqrt(var_b) if np.isfinite(var_b) else np.nan,
            "correlation": corr, "difference_se": se_diff,
            "difference_low": diff - z_crit * se_diff, "difference_high": diff + z_crit * se_diff,
            "z": z, "p_value": p_value,
        })

    add("overall", "overall_auc", compare(classes[1], classes[0], True))
    for name, group_rows in zip(names, rows):
        group_rows = np.asarray(group_rows, dtype=np.int64)
        group_labels = labels[group_rows]
        cell = {label: cell_sample(group_rows[group_labels == bool(label)]) for label in (0, 1)}
        flagged = {}
        for label in (0, 1):  # flag the subgroup's rows in each class's sorted orders
            members = group_rows[group_labels == bool(label)]
            for k in range(2):
                flagged[label, k] = positions[label][k][members]
                classes[label].skip[k][flagged[label, k]] = True
        for metric in METRIC_COLUMNS:
            (x_part, x_label), (y_part, y_label) = METRIC_SAMPLES[metric]
            if x_part == "subgroup" and y_part == "subgroup":
                result = compare(cell[x_label], cell[y_label], True)
            elif x_part == "background":
                result = compare(classes[x_label], cell[y_label], True, exclude=True)
            else:
                result = compare(classes[y_label], cell[x_label], False, exclude=True)
            add(name, metric, result)
        for (label, k), flagged_positions in flagged.items():
            classes[label].skip[k][flagged_positions] = False
    out = pd.DataFrame(records, index=pd.MultiIndex.from_tuples(index,
                                                                names=["subgroup", "metric"]))
    # undefined values and tests: NaN, with one warning each, as bias_metrics warns of its own
    named = [f"{key}: {metric}" for key, metric in out.index]
    no_value = out["value_a"].isna().to_numpy()
    no_test = ~no_value & out["p_value"].isna().to_numpy()
    flat = no_test & (out["difference_se"].to_numpy() == 0)
    warn_listed({"value(s) undefined (an empty or one-class cell; value, z and p-value NaN)":
                 [n for n, x in zip(named, no_value) if x],
                 "test(s) not made (a cell of total weight at most 1: no standard error; "
                 "z and p-value NaN)": [n for n, x in zip(named, no_test & ~flat) if x],
                 "test(s) not made (a difference whose DeLong standard error is 0: every "
                 "placement of each sample alike, as where both models separate the classes; "
                 "z and p-value NaN)": [n for n, x in zip(named, flat) if x]},
                context="delong_paired_test")
    return out
