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
from ..validate.values import (
    NO_POS_LABEL_HINT,
    as_labels,
    as_sample_weight,
    as_scores,
    check_interval_weights_of,
)
from . import _kernels as IK
from .delong import VARIANCE_TOLERANCE, _z_value, rounding_share, weight_bits_of

#: a variance not computed (a cell of total weight at most 1): (variance, bound, covariance,
#: the difference's bound)
_UNKNOWN = (np.nan, 0.0, np.nan, np.nan)


def _standard_error(var: float, bound: float, *_) -> float:
    """The standard error of a variance and its rounding bound (as a standard error): NaN
    where the bound exceeds VARIANCE_TOLERANCE / 2 of it (about 1%; the sums cannot tell
    it), 0 only where the variance is 0 with no rounding to hide another."""
    se = math.sqrt(var) if var >= 0 else np.nan  # (NaN >= 0 is False)
    if se > 0 and bound <= 0.5 * VARIANCE_TOLERANCE * se:
        return se
    return 0.0 if se == 0 and bound == 0 else np.nan


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
        Frequency weights (a weight of 2 counts a row twice); as for DeLong intervals,
        the largest between 2**-200 and 2**200, else a ValueError naming it.
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
        total weight at most 1 (no standard error), of a difference whose standard error
        is 0 (every placement alike), or of one the float sums cannot tell within 1% (with
        the difference against it; ``difference_se`` NaN where it is the standard error they
        cannot tell), has NaN z, p-value and interval; one
        :class:`~fastbias.UndefinedMetricWarning` each names them. Two equal estimates
        with a standard error of 0 have z = 0, p = 1 and the interval [0, 0].

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
    # (the weights' scale as DeLong intervals and the significance tests check it: beyond,
    # the moments' products underflowed or overflowed, and AUCs 7e-9 off, standard errors of 0
    # and "empty cells" came out; found by review. Rows too light for the running sums need
    # no refusal here: this test bounds their rounding itself, NaN where it cannot vouch)
    check_interval_weights_of(weights, "DeLong's paired test")
    w = np.ones(n) if weights is None else weights
    if subgroups is None:
        names, rows = [], []
    else:
        names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    z_crit = _z_value(confidence)
    weight_bits = weight_bits_of(weights)
    memberships = prepare_memberships(labels, rows, names)
    orders = [order_scores(s, memberships) for s in (sa, sb)]
    known_order = []

    def same_order() -> bool:
        """Whether the two models order the rows alike (ties too): then each row's
        placements are the same sums, added in the same order, under both, and the
        difference is exactly 0 whatever the weights' rounding (found once, on demand)."""
        if not known_order:
            by_a = np.argsort(sa, kind="stable")
            a_steps, b_steps = np.diff(sa[by_a]), np.diff(sb[by_a])
            known_order.append(bool(np.all(b_steps >= 0)
                                    and np.array_equal(a_steps == 0, b_steps == 0)))
        return known_order[0]

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
            return (np.nan,) * 2 + (_UNKNOWN,) * 3
        ta = mom[0, 1] / (w_x * w_y)
        tb = mom[0, 2] / (w_x * w_y)
        if not (w_x > 1 and w_y > 1):
            return (ta, tb) + (_UNKNOWN,) * 3
        # var = S10 / W_X + S01 / W_Y from the centred sums of each sample's placements
        # (X rows' placements are Y weights, Y rows' X weights)
        scale = (1.0 / (w_y * w_y * (w_x - 1.0) * w_x), 1.0 / (w_x * w_x * (w_y - 1.0) * w_y))
        other = (w_y, w_x)
        share = float(rounding_share(c.scores[0].shape[0] + s.scores[0].shape[0]))
        if share * max(w_x / (w_x - 1.0), w_y / (w_y - 1.0)) > VARIANCE_TOLERANCE / 4:
            # a sample weighing just over 1: its W - 1 is not known from the rounded sum
            # (found by review: 1 + 1e-15 gave a difference's standard error 3% off)
            return (ta, tb) + (_UNKNOWN,) * 3
        exact = weight_bits is not None and max(w_x, w_y) < 2.0 ** (52 - weight_bits)

        def variance(col, least, reads):
            """(variance, its rounding bound as a standard error) from the centred sums in
            column ``col`` and the least and largest term in ``least``, ``least + 1``: each
            placement is off by at most ``share`` of its sample's weight (none where every
            sum is exact; twice for a difference, ``reads`` = 2), the mean by ``share`` of
            the largest term; a sample whose terms are all one exact value adds exactly 0."""
            var = bound = 0.0
            for side in (0, 1):
                lo, hi = mom[side, least], mom[side, least + 1]
                if exact and lo == hi:
                    continue  # every term the same exact value: exactly 0
                var += mom[side, col] * scale[side]
                off = (0.0 if exact else reads * share * other[side]) + share * max(-lo, hi)
                bound += scale[side] * mom[side, 0] * off * off
            return var, math.sqrt(bound) + share * math.sqrt(var)

        var_a, var_b, var_d = variance(4, 8, 1), variance(5, 10, 1), variance(7, 12, 2)
        no_difference = all(mom[side, 12] == 0 == mom[side, 13] for side in (0, 1))
        if var_d[1] > 0 and no_difference and same_order():
            var_d = (0.0, 0.0)  # the same order of the rows: every placement the same sum
        cov_ab = sum(mom[side, 6] * scale[side] for side in (0, 1))
        # the estimates' rounding (each from the X rows' placements): the difference ta - tb
        # is known within this, which a test needs far below its standard error
        off = 0.0 if exact else share * w_y
        diff_bound = ((2.0 * off + share * (mom[0, 9] + mom[0, 11])) / w_y
                      + 2.0 ** -52 * (abs(ta) + abs(tb) + 1.0))
        if var_d == (0.0, 0.0) and no_difference:
            diff_bound = 0.0  # (every row's placements exactly alike: the same sums)
        # (variance, bound[, covariance, the difference's bound])
        return ta, tb, var_a, var_b, var_d + (cov_ab, diff_bound)

    records, index, unresolved = [], [], set()

    def add(key, metric, result):
        ta, tb, known_a, known_b, known_d = result
        if metric in AEG_METRICS:
            ta, tb = 0.5 - ta, 0.5 - tb
        diff = ta - tb
        se_a, se_b, se_diff = (_standard_error(*known) for known in (known_a, known_b, known_d))
        corr = (known_d[2] / math.sqrt(known_a[0] * known_b[0])
                if se_a > 0 and se_b > 0 else np.nan)  # (NaN > 0 is False)
        low = high = z = p_value = np.nan
        # a test needs the standard error and the difference known within 1% of the former
        known = se_diff >= 0 and known_d[3] <= 0.5 * VARIANCE_TOLERANCE * se_diff
        if not known and known_d[0] >= 0 and se_diff != 0:  # (0: said as such)
            unresolved.add((key, metric))
        if known and se_diff > 0:
            z = diff / se_diff
            p_value = math.erfc(abs(z) / math.sqrt(2.0))
            low, high = diff - z_crit * se_diff, diff + z_crit * se_diff
        elif known and diff == 0:  # every row's placements exactly alike in both models
            z, p_value, low, high = 0.0, 1.0, diff, diff
        # else a difference with a standard error of 0 (every placement of each sample
        # alike: DeLong's variance tells nothing, not certainty; found by review, z = inf
        # and p = 0 for two models on four rows) or one the sums cannot tell from 0 (a
        # review: z = -4.5e7 where the exact standard error is 0): no test, no interval
        index.append((key, metric))
        records.append({
            "value_a": ta, "value_b": tb, "difference": diff, "se_a": se_a, "se_b": se_b,
            "correlation": corr, "difference_se": se_diff,
            "difference_low": low, "difference_high": high, "z": z, "p_value": p_value,
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
    unknown = no_test & np.array([i in unresolved for i in out.index], dtype=bool)
    warn_listed({"value(s) undefined (an empty or one-class cell; value, z and p-value NaN)":
                 [n for n, x in zip(named, no_value) if x],
                 "test(s) not made (a cell of total weight at most 1, or within its sum's "
                 "rounding of 1: no standard error; "
                 "z and p-value NaN)": [n for n, x in zip(named, no_test & ~flat & ~unknown)
                                        if x],
                 "test(s) not made (a difference whose DeLong standard error is 0: every "
                 "placement of each sample alike, as where both models separate the classes; "
                 "z, p-value and interval NaN)": [n for n, x in zip(named, flat) if x],
                 "test(s) not made (a standard error of the difference, or the difference "
                 "against it, too small for the float sums of the placements to tell within "
                 "1%, as where the models' placements differ alike on every row or weights "
                 "lie far apart; z, p-value and interval NaN, and the standard error where it "
                 "is the one)": [n for n, x in zip(named, unknown) if x]},
                context="delong_paired_test")
    return out
