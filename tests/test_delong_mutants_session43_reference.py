"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/intervals/delong.py (none of its 44 mutants repeats the thirty-fifth session's). Run
against the DeLong tests (tests/test_delong_guards_reference.py, test_delong_near_one_reference.py,
and the DeLong tests of test_intervals.py and the thirty-fifth session's audit), 28 were killed
there; the tests here kill 9 more (each checked to fail with its mutant): the float rounding
tolerance and share, warnings listing undefined metrics or an undefined overall AUC, one
positive of weight 1 warned under the wrong cause, AEGs given no variance when the classes are
separated, and the recheck from the cells' own rows (a background cell taken as its whole
class, cells of weight 1, the background's scale). 4 were equivalent; 3 lived (the "cell too
small" list taking unresolved metrics, a flat-part span of the negative AEG, the overall AUC
of separated classes not taken as flat: no input reaching them was found in the time). No
defect was found.

Expected values come from tests/_paired_ref.py's ``delong_parts`` (exact weighted DeLong
variances in fractions.Fraction, ties 1/2, frequency weights with W - 1 denominators),
tests/reference.py's ``pair_fraction`` for the point estimates, and scipy.stats.norm for the
quantile: none from fastbias' own output.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction as F

import numpy as np
import pytest
from scipy import stats

import fastbias

from ._paired_ref import delong_parts

PAIRS = {
    "subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
    "bpsn_auc": (("background", 1), ("subgroup", 0)),
    "bnsp_auc": (("subgroup", 1), ("background", 0)),
    "negative_aeg": (("background", 0), ("subgroup", 0)),
    "positive_aeg": (("background", 1), ("subgroup", 1)),
}


def _cells(y, s, g, w):
    out = {}
    for part, mask in (("subgroup", g), ("background", ~g)):
        for label in (0, 1):
            sel = mask & (y == label)
            out[(part, label)] = ([F(float(v)) for v in s[sel]], [F(float(v)) for v in w[sel]])
    return out


def _ref(xs, xw, ys, yw):
    """(theta, variance) exact; variance None where a sample weighs at most 1."""
    d = delong_parts(xs, xs, xw, ys, ys, yw)
    return d["theta_a"], d["var_a"]


def _expected(y, s, g, w):
    c = _cells(y, s, g, w)
    out = {}
    for metric, (xc, yc) in PAIRS.items():
        theta, var = _ref(c[xc][0], c[xc][1], c[yc][0], c[yc][1])
        # an AEG is 1/2 - P(background above subgroup) (same variance as theta)
        value = F(1, 2) - theta if "aeg" in metric else theta
        out[metric] = (float(value), None if var is None else math.sqrt(var))
    pos, neg = y == 1, y == 0
    theta, var = _ref([F(float(v)) for v in s[pos]], [F(float(v)) for v in w[pos]],
                      [F(float(v)) for v in s[neg]], [F(float(v)) for v in w[neg]])
    out["overall"] = (float(theta), math.sqrt(var))
    return out


def _check(t, exp, confidence, rel=1e-9, name="g"):
    z = stats.norm.ppf(0.5 + confidence / 2)
    for metric in PAIRS:
        est, se = exp[metric]
        assert t.loc[name, metric] == pytest.approx(est, rel=1e-12, abs=1e-15), metric
        got = t.loc[name, f"{metric}_se"]
        assert got == pytest.approx(se, rel=rel, abs=1e-300), (metric, got, se)
        lo, hi = (-0.5, 0.5) if "aeg" in metric else (0.0, 1.0)
        assert t.loc[name, f"{metric}_low"] == pytest.approx(max(lo, est - z * se), rel=rel,
                                                             abs=1e-12), metric
        assert t.loc[name, f"{metric}_high"] == pytest.approx(min(hi, est + z * se), rel=rel,
                                                              abs=1e-12), metric
    est, se = exp["overall"]
    assert t.attrs["overall_auc_se"] == pytest.approx(se, rel=rel)
    assert t.attrs["overall_auc_low"] == pytest.approx(max(0, est - z * se), rel=rel)
    assert t.attrs["overall_auc_high"] == pytest.approx(min(1, est + z * se), rel=rel)


def _data(seed, n=60, levels=7):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = np.round(rng.random(n) * levels) / levels + 0.3 * y  # many ties
    g = rng.random(n) < 0.4
    return y, s, g


@pytest.mark.parametrize("seed", [1, 2])
def test_float_weights_every_metric_and_overall_match_exact_delong(seed):
    """Weights of many binary digits (0.1 .. 3.3) keep the sums off the exact-rational
    path, so the float formula of _delong_variance itself is checked (with ties, unequal
    class weights, confidence 0.9). Kills: first terms scaled by their own weight, the
    effective counts swapped in the numerators, ddof 0, the Y part with X's W - 1, the
    overall AUC's class weights swapped."""
    y, s, g = _data(seed)
    w = np.round(np.random.default_rng(seed + 10).uniform(0.1, 3.3, len(y)), 3)
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong", confidence=0.9)
    _check(t, _expected(y, s, g, w), 0.9, rel=1e-7)


def test_integer_weights_exact_path_match_exact_delong():
    """Whole frequency weights (the exact-rational path) with ties; confidence 0.8."""
    y, s, g = _data(5, n=50)
    w = np.random.default_rng(3).integers(1, 5, len(y)).astype(float)
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong", confidence=0.8)
    _check(t, _expected(y, s, g, w), 0.8)


@pytest.mark.parametrize("s, varied, least", [
    # every positive above every negative: the AUC metrics' placements are all equal (se 0)
    # but the AEGs compare rows of one class: their standard errors are not 0
    ([.1, .2, .3, .15, .25, .05, .6, .7, .9, .65, .8, .95], ("negative_aeg", "positive_aeg"), 0.1),
    # the top negative tied with the bottom positive: the classes are not separated and the
    # tied rows' placements differ (1/2 against 1)
    ([.1, .2, .5, .15, .25, .5, .5, .7, .9, .5, .8, .95], ("subgroup_auc", "overall"), 0.0),
], ids=["separated", "tie-at-the-boundary"])
def test_separated_classes_and_a_tie_at_their_boundary(s, varied, least):
    """Every variance as exact DeLong where the classes are separated and where a tie at
    their boundary keeps them apart. Kills the mutant that treats the AEGs as flat when the
    classes are separated (first case) and the separation test taking ``<=`` for ``<``
    (second)."""
    y = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
    s = np.array(s)
    g = np.array([1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0], bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    exp = _expected(y, s, g, np.ones(len(y)))
    assert all(exp[name][1] > least for name in varied)
    _check(t, exp, 0.95)


def test_heavy_subgroup_recheck_from_rows_with_ties():
    """The subgroup holds all of each class's weight but a sliver (background rows of
    weight 1 beside subgroup rows of 1e14): the walk's sums cannot resolve the
    backgrounds, so the standard errors come from the cells' own rows
    (direct_variances), here with ties across cells. Kills mutants of that path
    (ties counted whole, ddof 0, Y placements below instead of above, a background cell
    that is its whole class)."""
    y = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1])
    s = np.array([.2, .4, .6, .4, .7, .9, .3, .6, .1, .6, .5, .4])
    g = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    w = np.where(g, 1e14, 1.0)
    w[6] = 2.0
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    _check(t, _expected(y, s, g, w), 0.95, rel=1e-6)


def test_interval_warnings_list_only_defined_metrics_with_small_cells():
    """A subgroup with no positives: its subgroup AUC, BNSP and positive AEG are undefined
    (NaN, their own warning), and BPSN / negative AEG are defined with a subgroup
    negative cell of 2 rows: all defined. A second subgroup with one negative: BPSN and
    the negative AEG are defined but have no standard error: the interval warning names
    those two (and its subgroup AUC), under "fewer than 2 rows", and not the undefined metrics. Kills:
    warning for undefined metrics, small cells counted as unresolved."""
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .9, .4, .8, .35, .6, .5, .7, .45, .55])
    a = np.array([1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], bool)
    b = np.array([0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 1], bool)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, {"a": a, "b": b}, ci="delong")
    texts = [str(r.message) for r in rec if "interval" in str(r.message)]
    assert len(texts) == 1, texts
    msg = texts[0]
    assert "fewer than 2 rows" in msg
    assert "b: bpsn_auc" in msg and "b: negative_aeg" in msg
    for metric in ("subgroup_auc", "bnsp_auc", "positive_aeg"):
        assert f"a: {metric}" not in msg
    assert "a: bpsn_auc" not in msg and "b: subgroup_auc" in msg
    assert "holds all of a class" not in msg
    assert np.isnan(t.loc["b", "bpsn_auc_se"]) and np.isfinite(t.loc["b", "bpsn_auc"])
    c = _cells(y, s, a, np.ones(len(y)))
    _, var = _ref(*c[("background", 1)], *c[("subgroup", 0)])
    assert t.loc["a", "bpsn_auc_se"] == pytest.approx(math.sqrt(var), rel=1e-9)


def test_aeg_interval_clipped_at_half():
    """A subgroup's positives all above the background's: the positive AEG is 1/2 and
    its interval stays at the range end 1/2."""
    y = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    s = np.array([.1, .15, .2, .9, .95, .99, .3, .4, .5, .6])
    g = np.array([0, 0, 0, 1, 1, 1, 1, 0, 1, 0], bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    exp = _expected(y, s, g, np.ones(len(y)))
    assert exp["positive_aeg"][0] == 0.5
    _check(t, exp, 0.95)


def test_overall_auc_with_one_positive_warned_as_small_cell():
    """One positive row (weight 1): the overall AUC is defined but has no standard error;
    the interval warning lists "overall AUC" under the small-cell cause ("fewer than 2
    rows"), not the rounding cause. Kills ``min(class_weights()) >= 1``."""
    y = np.array([0, 0, 0, 1, 0, 0, 0, 0])
    s = np.array([.1, .2, .3, .5, .6, .7, .05, .25])
    g = np.array([1, 1, 0, 0, 1, 0, 1, 0], bool)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    texts = [str(r.message) for r in rec if "overall AUC" in str(r.message)]
    assert len(texts) == 1, [str(r.message) for r in rec]
    small, _, rest = texts[0].partition("holds all of a class")
    assert "overall AUC" in small and "fewer than 2 rows" in small
    assert "overall AUC" not in rest
    assert np.isnan(t.attrs["overall_auc_se"])
    assert t.attrs["overall_auc"] == pytest.approx(5 / 7)


@pytest.mark.parametrize("heavy", [1e16, 2.0 ** 60])
def test_heavy_positive_below_light_ones_float_weights(heavy):
    """One positive weighing ``heavy`` times the others (weights of many binary digits),
    below them all (the twenty-sixth session's case, docs/intervals.md): BPSN's and the
    positive AEG's standard errors as exact DeLong (to 1e-6) or NaN, never silently off.
    Aimed at the tolerance and rounding-share mutants."""
    y = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0])
    s = np.array([.01, .6, .7, .8, .9, .95, .1, .2, .3, .65, .75, .5, .85, .4])
    g = np.array([0, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0], bool)
    w = np.array([heavy, .3, .7, 1.1, 1.3, .9, .7, 1.9, 2.3, .1, 1.7, .3, 1.1, .7])
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    exp = _expected(y, s, g, w)
    for metric in PAIRS:
        got = t.loc["g", f"{metric}_se"]
        assert got == pytest.approx(exp[metric][1], rel=1e-6), (metric, got, exp[metric][1])


def test_absorbed_background_cells_of_weight_one_stay_nan():
    """Background positives of weight 0 (rows, no weight): the subgroup's standard errors
    come from its cells' own rows. Its only negative weighs 1, so the subgroup AUC's and the
    negative AEG's standard errors are undefined (NaN, docs: a cell of total weight at most
    1); BNSP's is exact DeLong. Kills the rows path's ``>= 1`` rule (which gave 0 and 0.25
    instead of NaN)."""
    y = np.array([0, 1, 1, 0, 0, 1, 1, 0, 1])
    s = np.array([.2, .6, .3, .1, .5, .7, .4, .35, .8])
    g = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0], bool)
    w = np.array([1., 1, 2, 1, 2, 0, 0, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    assert np.isnan(t.loc["g", "subgroup_auc_se"])
    assert np.isnan(t.loc["g", "negative_aeg_se"])
    assert np.isnan(t.loc["g", "negative_aeg_low"])
    c = _cells(y, s, g, w)
    _, var = _ref(*c[("subgroup", 1)], *c[("background", 0)])
    assert t.loc["g", "bnsp_auc_se"] == pytest.approx(math.sqrt(var), rel=1e-9)


def test_no_interval_warning_for_an_undefined_overall_auc():
    """Every row negative: the overall AUC is undefined (NaN) and its own warning says so;
    the DeLong interval warning does not list "overall AUC" again (only a defined metric
    whose interval is NaN is listed). Kills dropping ``np.isfinite(point)``."""
    y = np.zeros(6, int)
    s = np.arange(6) / 6.0
    g = np.array([1, 1, 1, 0, 0, 0], bool)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    assert np.isnan(t.attrs["overall_auc"]) and np.isnan(t.attrs["overall_auc_se"])
    assert not any("interval" in str(r.message) and "overall AUC" in str(r.message)
                   for r in rec), [str(r.message) for r in rec]


@pytest.mark.parametrize("seed", [40, 46, 50])
def test_heavy_row_float_weights_parts_in_doubt_are_not_taken_from_float_sums(seed):
    """One row weighing 1.3 * 2**40 or 2**44 beside rows of 0.1 .. 3 (3 decimals, so no
    exact-rational walk): some parts of the variance are within the float sums' rounding;
    the module must work them out again (exact sums or the rows), not keep the float
    difference. Expected: exact DeLong (delong_parts), to 1e-9 (the code gives 1e-13). Kills
    VARIANCE_TOLERANCE = 2.0 and a rounding share of 2**-60 instead of 2**-53 (both gave
    BPSN's standard error 6.4e-4 off at seed 46, the negative AEG's 1.6e-4 off at seed 40)."""
    rng = np.random.default_rng(seed)
    n = 16
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    s = np.round(rng.random(n), 2)
    g = rng.random(n) < 0.5
    g[:4] = [True, True, False, False]
    w = np.round(rng.uniform(0.1, 3, n), 3)
    w[rng.integers(0, n)] = 1.3 * 2.0 ** [40, 44, 48, 50, 52][seed % 5]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    exp = _expected(y, s, g, w)
    for metric in PAIRS:
        if exp[metric][1] is None:
            continue
        got = t.loc["g", f"{metric}_se"]
        assert got == pytest.approx(exp[metric][1], rel=1e-9), (metric, got, exp[metric][1])


def test_background_just_over_one_in_a_heavy_class_bnsp_exact():
    """A background negative cell of weight 1 + 3e-12 in a class of about 1e4 (its weight
    is the class's total less the subgroup's, so W - 1 carries the class's rounding): BNSP's
    standard error must still be exact DeLong (the walk's W - 1 is judged against the
    class's total and the cell goes to its own rows). Expected 110374.965... from
    delong_parts; kills dropping the background's scale (``made_from`` 0), which gave
    100231.5 (9% low) with no warning."""
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0])
    s = np.array([.1, .5, .3, .6, .4, .7, .8, .2, .65])
    g = np.array([1, 1, 0, 0, 1, 1, 0, 0, 1], bool)
    w = np.array([1e4, 1.7, 0.5 + 3e-12, 0.5, 1.3, 2.1, 0.9, 1.1, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    exp = _expected(y, s, g, w)
    for metric in ("bnsp_auc", "negative_aeg"):
        got = t.loc["g", f"{metric}_se"]
        assert got == pytest.approx(exp[metric][1], rel=1e-9), (metric, got, exp[metric][1])
