"""A mutation audit of the threshold metrics (fastbias/metrics/thresholds.py,
fastbias/intervals/thresholds.py): an independent review's tests (2026-11-28, forty-second
session). Of 57 hand mutants the suite killed 50, 4 are equivalent; the 3 survivors (the numpy
tier comparing float32 scores with an unrounded threshold; a weighted table's gap interval
not refused by ``attach_threshold_intervals``) are killed here. No defect was found.

Every expected number here comes from plain-Python counts of ``score >= t`` (the threshold
rounded to the scores' dtype, as docs/thresholds.md promises), exact Fractions for weighted
sums, sklearn's confusion_matrix, scipy's beta quantiles and the Wilson / Bernstein formulas
(the loops and formulas of tests/test_threshold_costs_reference.py). Small data, few cases.
"""
import math
import warnings

import numpy as np
import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning

from .test_threshold_costs_reference import (
    _clopper_pearson,
    _ref_bernstein,
    _ref_counts,
    _wilson,
)

RATES = ("positive_rate", "tpr", "fpr", "fnr", "precision")


def reference(y, s, groups, thresholds, w=None):
    """{(t, name): counts (Fractions) and rates (floats, NaN where undefined)}: for each
    threshold, rows with ``score >= t`` where t is first rounded to the scores' dtype (the
    loops of tests/test_threshold_costs_reference.py, on the scores and the rounded threshold
    as Python floats: comparing them is comparing in the scores' dtype)."""
    s = np.asarray(s)
    scores = [float(v) for v in s]
    out = {}
    for t in sorted(set(float(v) for v in thresholds)):
        cut = float(s.dtype.type(t))
        for name, g in groups.items():
            out[(t, name)] = _ref_counts([bool(v) for v in y], scores, [bool(v) for v in g],
                                         cut, None if w is None else [float(v) for v in w])
    return out


def check_against(table, ref, rtol=0.0):
    assert list(table.index) == list(ref), (list(table.index), list(ref))
    for key, row in ref.items():
        got = table.loc[key]
        for col in ("negatives", "positives", "tp", "fp"):
            for side in ("subgroup", "background"):
                name = f"{side}_{col}"
                assert got[name] == pytest.approx(float(row[name]), rel=rtol, abs=0), (key, name)
        for side in ("subgroup", "background"):
            for rate in RATES:
                want, value = row[f"{side}_{rate}"], got[f"{side}_{rate}"]
                if math.isnan(want):
                    assert np.isnan(value), (key, side, rate, value)
                else:
                    assert value == pytest.approx(want, rel=max(rtol, 1e-15), abs=0), \
                        (key, side, rate, value, want)
        for rate in RATES:
            a, b = row[f"subgroup_{rate}"], row[f"background_{rate}"]
            value = got[f"{rate}_gap"]
            if math.isnan(a) or math.isnan(b):
                assert np.isnan(value), (key, rate)
            else:
                assert value == pytest.approx(a - b, rel=1e-12, abs=1e-15), (key, rate)


def _data(seed, n=60, k=3, dtype=np.float64, weighted=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) * 2 - 0.5, 2).astype(dtype)  # ties, negative scores
    groups = {f"g{j}": rng.random(n) < [0.3, 0.5, 0.15][j % 3] for j in range(k)}
    w = rng.integers(1, 2 ** 20, n) * 2.0 ** -10 if weighted else None
    return y, s, groups, w


def _quiet(fn, *a, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fn(*a, **kw)


@pytest.mark.parametrize("seed", [0, 1])
def test_unweighted_counts_and_rates_equal_plain_counts(seed):
    y, s, groups, _ = _data(seed)
    # unsorted, duplicated, below/at/above every score, at a score
    thresholds = [0.5, -1.0, float(s[0]), 0.5, 2.0, float(s[5]), -0.5]
    table = _quiet(fastbias.threshold_metrics, y, s, groups, thresholds=thresholds,
                   interval=None)
    check_against(table, reference(y, s, groups, thresholds))
    for col in ("subgroup_tp", "background_fp", "subgroup_negatives"):
        assert table[col].dtype == np.int64


def test_unweighted_counts_equal_sklearn_confusion_matrix():
    from sklearn.metrics import confusion_matrix

    y, s, groups, _ = _data(3, n=80)
    table = _quiet(fastbias.threshold_metrics, y, s, groups, thresholds=[0.0, 0.37, 0.9],
                   interval=None)
    for t in (0.0, 0.37, 0.9):
        for name, g in groups.items():
            for side, member in (("subgroup", g), ("background", ~g)):
                tn, fp, fn, tp = confusion_matrix(y[member], s[member] >= t,
                                                  labels=[False, True]).ravel()
                row = table.loc[(t, name)]
                assert (row[f"{side}_tp"], row[f"{side}_fp"]) == (tp, fp)
                assert row[f"{side}_negatives"] == tn + fp
                assert row[f"{side}_positives"] == fn + tp


@pytest.mark.parametrize("seed", [4, 5])
def test_weighted_counts_and_rates_equal_exact_fractions(seed):
    y, s, groups, w = _data(seed, weighted=True)
    thresholds = [float(s[2]), 0.25, 1.6, -0.6]
    table = _quiet(fastbias.threshold_metrics, y, s, groups, thresholds=thresholds,
                   sample_weight=w, interval=None)
    # weights are multiples of 2**-10 below 2**10: every sum is exact in float64
    check_against(table, reference(y, s, groups, thresholds, w))
    assert table["subgroup_tp"].dtype == np.float64


def test_weighted_fractional_counts_are_not_rounded():
    """Weights of 0.25: the counts are quarter-integers (kills 'weighted counts rounded')."""
    y = np.array([1, 1, 0, 0, 1, 0], bool)
    s = np.array([0.9, 0.2, 0.8, 0.1, 0.7, 0.6])
    g = {"g": np.array([1, 1, 1, 0, 0, 0], bool)}
    w = np.array([0.25, 0.5, 1.25, 1.0, 0.75, 0.25])
    table = _quiet(fastbias.threshold_metrics, y, s, g, thresholds=[0.5], sample_weight=w,
                   interval=None)
    row = table.loc[(0.5, "g")]
    assert row["subgroup_tp"] == 0.25 and row["subgroup_fp"] == 1.25
    assert row["subgroup_positives"] == 0.75 and row["background_fp"] == 0.25
    assert row["background_negatives"] == 1.25 and row["background_tp"] == 0.75
    assert row["subgroup_tpr"] == 0.25 / 0.75
    assert row["subgroup_precision"] == 0.25 / 1.5


def test_float32_scores_compare_with_the_threshold_rounded_to_float32():
    """A float32 score equal to float32(t) is predicted positive at t even where t is above it
    in float64 (docs/thresholds.md: numpy's ``y_score >= t`` with a Python float)."""
    x = np.float32(0.1)
    t_above = float(x) + 1e-12  # above the score in float64, rounds to it in float32
    assert np.float32(t_above) == x
    s = np.array([x, np.float32(0.05), np.float32(0.3), x], dtype=np.float32)
    y = np.array([1, 0, 1, 0], bool)
    g = {"g": np.array([1, 1, 0, 0], bool)}
    table = _quiet(fastbias.threshold_metrics, y, s, g, thresholds=[t_above], interval=None)
    row = table.iloc[0]
    numpy_says = s >= t_above
    assert numpy_says.tolist() == [True, False, True, True]
    assert (row["subgroup_tp"], row["subgroup_fp"]) == (1, 0)
    assert (row["background_tp"], row["background_fp"]) == (1, 1)


def test_float32_numpy_tier_rounds_thresholds_too():
    """The first-call numpy tier counts the same as the reference for float32 scores at a
    threshold that only equals a score after rounding (kills 'numpy tier not rounded')."""
    from fastbias.metrics.thresholds import threshold_counts_in_numpy, threshold_table
    from fastbias.prepare.memberships import prepare_subgroups

    x = np.float32(0.1)
    t = float(x) + 1e-12
    s = np.array([x, 0.05, 0.3, x, 0.7, 0.2], dtype=np.float32)
    y = np.array([1, 0, 1, 0, 0, 1], bool)
    gs = {"a": np.array([1, 1, 0, 0, 1, 0], bool), "b": np.array([0, 1, 1, 1, 0, 1], bool)}
    m = prepare_subgroups(y, np.column_stack(list(gs.values())), compiled=False)
    thresholds = np.array([-2.0, 0.05, t, 0.7, 5.0])
    counts = threshold_counts_in_numpy(s, m, None, thresholds)
    table = _quiet(threshold_table, counts, list(gs))
    check_against(table, reference(y, s, gs, thresholds))


@pytest.mark.parametrize("weighted", [False, True])
def test_numpy_tier_table_equals_plain_counts(weighted):
    from fastbias.metrics.thresholds import threshold_counts_in_numpy, threshold_table
    from fastbias.prepare.memberships import prepare_subgroups

    y, s, groups, w = _data(7, n=50, weighted=weighted)
    m = prepare_subgroups(y, np.column_stack(list(groups.values())), compiled=False)
    thresholds = np.unique([float(s[1]), 0.3, 1.2, -0.7, 0.0])
    table = _quiet(threshold_table, threshold_counts_in_numpy(s, m, w, thresholds),
                   list(groups))
    check_against(table, reference(y, s, groups, thresholds, w))


@pytest.mark.parametrize("labels, member, column, named", [
    ([1, 1, 0, 0, 1, 0], [1, 1, 0, 0, 0, 0], "subgroup_fpr", "subgroup fpr"),
    ([1, 1, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0], "background_tpr", "background tpr"),
], ids=["subgroup-without-negatives", "background-without-positives"])
def test_an_undefined_rate_is_nan_with_one_warning_naming_it(labels, member, column, named):
    """A subgroup without negatives (its FPR alone undefined) or a background without
    positives (its TPR and FNR): NaN, and one warning that names the rate."""
    y = np.array(labels, bool)
    s = np.array([0.9, 0.2, 0.8, 0.1, 0.7, 0.6])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.threshold_metrics(y, s, {"g": np.array(member, bool)}, thresholds=[0.5],
                                           interval=None)
    messages = [str(c.message) for c in caught if issubclass(c.category, UndefinedMetricWarning)]
    assert len(messages) == 1 and named in messages[0]
    assert np.isnan(table.iloc[0][column])
    assert np.isnan(table.iloc[0][column.split("_", 1)[1] + "_gap"])


@pytest.mark.parametrize("bad, kind, text", [
    ([], ValueError, "non-empty"),
    ([0.5, float("nan")], ValueError, "position 1"),
    ([0.5, True], TypeError, "position 1"),
    (["0.5"], TypeError, "position 0"),
    ([2 ** 53 + 1], ValueError, "position 0"),
])
def test_bad_thresholds_are_refused_naming_the_position(bad, kind, text):
    y, s, g = [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], {"g": [1, 1, 0, 0]}
    with pytest.raises(kind, match=text):
        fastbias.threshold_metrics(y, s, g, thresholds=bad)


@pytest.mark.parametrize("conf", [0.9, 0.95])
def test_wilson_and_exact_intervals_equal_their_formulas(conf):
    y, s, groups, _ = _data(8, n=70, k=2)
    wil = _quiet(fastbias.threshold_metrics, y, s, groups, thresholds=[0.4], confidence=conf)
    ex = _quiet(fastbias.threshold_metrics, y, s, groups, thresholds=[0.4], confidence=conf,
                interval="exact")
    for key, row in reference(y, s, groups, [0.4]).items():
        for side in ("subgroup", "background"):
            tp, fp = row[f"{side}_tp"], row[f"{side}_fp"]
            neg, pos = row[f"{side}_negatives"], row[f"{side}_positives"]
            trials = {"positive_rate": (tp + fp, neg + pos), "tpr": (tp, pos), "fpr": (fp, neg),
                      "fnr": (pos - tp, pos), "precision": (tp, tp + fp)}
            for rate, (k, n) in trials.items():
                if n == 0:
                    continue
                for table, (lo, hi) in ((wil, _wilson(int(k), int(n), conf)),
                                        (ex, _clopper_pearson(int(k), int(n), conf))):
                    got = table.loc[key]
                    assert got[f"{side}_{rate}_low"] == pytest.approx(lo, rel=1e-9, abs=1e-15)
                    assert got[f"{side}_{rate}_high"] == pytest.approx(hi, rel=1e-9, abs=1e-15)


def test_bernstein_gap_intervals_equal_the_papers_formula():
    """fpr/fnr/precision gaps: cost = the rate's indicator on its set; positive rate and TPR:
    the complement cost 1 - y_hat, mirrored (docs/thresholds.md)."""
    rng = np.random.default_rng(12)
    n = 300
    y = rng.random(n) < 0.4
    s = rng.random(n)
    g = rng.random(n) < 0.3
    t = 0.45
    table = _quiet(fastbias.threshold_metrics, y, s, {"g": g}, thresholds=[t],
                   gap_interval="bernstein", interval=None)
    row = table.iloc[0]
    pred = s >= t
    grp = np.where(g, 1, -1)
    sets = {"positive_rate": np.ones(n, bool), "tpr": y, "fpr": ~y, "fnr": y,
            "precision": pred}
    for rate, member in sets.items():
        hit = {"positive_rate": pred, "tpr": pred, "fpr": pred, "fnr": ~pred,
               "precision": y}[rate]
        group = np.where(member, grp, 0)
        if rate in ("positive_rate", "tpr"):
            lo, hi = _ref_bernstein((~hit).astype(int).tolist(), group.tolist(), 0.95)
            lo, hi = -hi, -lo
        else:
            lo, hi = _ref_bernstein(hit.astype(int).tolist(), group.tolist(), 0.95)
        assert row[f"{rate}_gap_low"] == pytest.approx(lo, rel=1e-9, abs=1e-12), rate
        assert row[f"{rate}_gap_high"] == pytest.approx(hi, rel=1e-9, abs=1e-12), rate


def test_weighted_gap_interval_is_refused():
    y, s, g = [0, 1, 0, 1], [0.1, 0.2, 0.3, 0.4], {"g": [1, 1, 0, 0]}
    with pytest.raises(ValueError, match="unweighted"):
        fastbias.threshold_metrics(y, s, g, thresholds=[0.5], sample_weight=[1, 2, 1, 1],
                                   gap_interval="bernstein")


def test_attach_refuses_gap_interval_on_a_weighted_table():
    """The table remembers it is weighted (kills mutant 41, ``attrs['weighted'] = False``:
    attach_threshold_intervals then bounded weighted gaps as if rows were examples)."""
    from fastbias.intervals.thresholds import attach_threshold_intervals

    y = np.array([0, 1, 0, 1, 1, 0], bool)
    s = np.array([0.1, 0.6, 0.7, 0.8, 0.2, 0.3])
    table = _quiet(fastbias.threshold_metrics, y, s, {"g": [1, 1, 1, 0, 0, 0]},
                   thresholds=[0.5], sample_weight=[1.0, 2.0, 1.0, 1.0, 3.0, 1.0],
                   interval=None)
    assert table.attrs["weighted"] is True
    with pytest.raises(ValueError, match="unweighted"):
        attach_threshold_intervals(table, gap_interval="bernstein")
