"""``fastbias.bias_metrics`` and ``fastbias.overall_auc`` against independent references.

References (tests/reference.py, sharing no code with fastbias): the O(n^2)
brute-force pair count (weighted or not) and the per-subgroup
sklearn.roc_auc_score / scipy.stats.mannwhitneyu loop; for weighted data at
large n, sklearn.roc_auc_score(sample_weight=...) on the relevant rows.

Tolerances. Unweighted, fastbias and the brute force both end with one
correctly rounded division of the same exact integers (twice U over twice the
pair count is the same quotient), so they must agree bit for bit and are
compared with ``==``. Comparisons with sklearn/scipy and weighted ones allow
1e-12 (float summation order differs); weighted data with arbitrary real
weights at n = 1e5 allow 1e-11 (a sum of 1e5 terms in two different orders
differs by up to ~n * eps). Dyadic weights (multiples of 1/8) make every
weighted sum exact, so at n = 1e5 they are held to 1e-12.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import UndefinedMetricWarning

from .reference import brute_force_metrics, pair_probability, sklearn_scipy_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
          "background_negatives", "background_positives"]
TOL = 1e-12
SCORE_KINDS = ["one_decimal", "two_decimals", "few_integers", "continuous"]


# ----------------------------------------------------------------------------- helpers

def run_bias_metrics(*args, **kwargs):
    """``bias_metrics`` that also checks its warning contract.

    Exactly one UndefinedMetricWarning when some metric is NaN, none
    otherwise, and no other RuntimeWarning (e.g. a numpy division by zero).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.bias_metrics(*args, **kwargs)
    undefined = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    stray = [str(w.message) for w in caught
             if issubclass(w.category, RuntimeWarning)
             and not issubclass(w.category, UndefinedMetricWarning)]
    assert stray == []
    has_nan = bool(table[METRICS].isna().to_numpy().any())
    assert len(undefined) == (1 if has_nan else 0), [str(w.message) for w in undefined]
    return table


def make_scores(rng, n, kind):
    if kind == "one_decimal":
        return np.round(rng.random(n), 1)
    if kind == "two_decimals":
        return np.round(rng.random(n), 2)
    if kind == "few_integers":
        return rng.integers(0, 4, n).astype(np.float64)
    return rng.random(n)


def make_groups(rng, y):
    """Overlapping random subgroups of several densities plus the edge cases."""
    n = y.size
    groups = {f"random_{p}": rng.random(n) < p for p in (0.05, 0.3, 0.5, 0.9)}
    groups["empty"] = np.zeros(n, dtype=bool)
    groups["everyone"] = np.ones(n, dtype=bool)
    groups["only_positives"] = y & (rng.random(n) < 0.6)
    groups["only_negatives"] = ~y & (rng.random(n) < 0.6)
    return groups


def assert_same_value(actual, expected, tol, what):
    if np.isnan(expected):
        assert np.isnan(actual), f"{what}: expected NaN, got {actual!r}"
    elif tol == 0:
        assert actual == expected, f"{what}: {actual!r} != {expected!r}"
    else:
        assert abs(actual - expected) <= tol * max(1.0, abs(expected)), \
            f"{what}: {actual!r} vs {expected!r} (diff {actual - expected:.3g})"


def assert_counts(table, y, groups, weights=None):
    """The count columns (and weight columns) against plain numpy counts."""
    y = np.asarray(y, dtype=bool)
    assert list(table.index) == list(groups)
    for name, g in groups.items():
        g = np.asarray(g, dtype=bool)
        row = table.loc[name]
        expected = {"subgroup_size": g.sum(), "subgroup_negatives": (g & ~y).sum(),
                    "subgroup_positives": (g & y).sum(), "background_negatives": (~g & ~y).sum(),
                    "background_positives": (~g & y).sum()}
        for column, value in expected.items():
            assert row[column] == value, f"{name}.{column}"
        if weights is not None:
            w = np.asarray(weights, dtype=np.float64)
            cells = {"subgroup_negative_weight": g & ~y, "subgroup_positive_weight": g & y,
                     "background_negative_weight": ~g & ~y, "background_positive_weight": ~g & y}
            for column, cell in cells.items():
                assert_same_value(row[column], w[cell].sum(), TOL, f"{name}.{column}")
    for column in COUNTS:
        assert pd.api.types.is_integer_dtype(table[column]), column


def assert_matches_brute_force(table, y, s_reference, groups, weights=None, tol=0.0):
    for name, g in groups.items():
        expected = brute_force_metrics(y, s_reference, g, weights)
        for metric in METRICS:
            assert_same_value(table.loc[name, metric], expected[metric], tol, f"{name}.{metric}")


def weighted_sklearn_metrics(y, s, g, w):
    """The five weighted metrics from sklearn.roc_auc_score(sample_weight=...).

    An AEG is 1/2 minus the AUC that separates background rows (as the
    positive class) from subgroup rows of the same label.
    """
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)

    def auc(rows, positive):
        if not positive[rows].any() or positive[rows].all():
            return np.nan
        return roc_auc_score(positive[rows], s[rows], sample_weight=w[rows])

    return {
        "subgroup_auc": auc(g, y),
        "bpsn_auc": auc((g & ~y) | (~g & y), y),
        "bnsp_auc": auc((g & y) | (~g & ~y), y),
        "negative_aeg": 0.5 - auc(~y, ~g),
        "positive_aeg": 0.5 - auc(y, ~g),
    }


def data(seed, n, kind="two_decimals", positive_rate=None):
    rng = np.random.default_rng(seed)
    rate = rng.uniform(0.2, 0.8) if positive_rate is None else positive_rate
    y = rng.random(n) < rate
    return rng, y, make_scores(rng, n, kind)


# ----------------------------------------------------------- brute force, unweighted

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", SCORE_KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 40, 200])
def test_unweighted_equals_brute_force_bit_for_bit(n, kind, dtype):
    rng, y, s = data(1000 * n + SCORE_KINDS.index(kind), n, kind)
    s = s.astype(dtype)
    groups = make_groups(rng, y)
    table = run_bias_metrics(y, s, groups)
    assert_counts(table, y, groups)
    # the reference sees exactly the values fastbias saw (float32 -> float64 is exact)
    assert_matches_brute_force(table, y, s.astype(np.float64), groups, tol=0.0)
    expected_overall = pair_probability(s[y], s[~y])
    assert_same_value(table.attrs["overall_auc"], expected_overall, 0.0, "overall_auc")


def test_float32_scores_tie_in_float32():
    # distinct as float64, equal once rounded to float32
    s64 = np.array([0.1, 0.1 + 1e-12, 0.3, 0.05])
    s32 = s64.astype(np.float32)
    assert s64[0] != s64[1] and s32[0] == s32[1]
    y = np.array([False, True, True, False])
    groups = {"g": np.array([True, True, False, False])}
    t32 = run_bias_metrics(y, s32, groups)
    t64 = run_bias_metrics(y, s64, groups)
    assert t32.loc["g", "subgroup_auc"] == 0.5  # the single pair is tied
    assert t64.loc["g", "subgroup_auc"] == 1.0
    assert_matches_brute_force(t32, y, s32.astype(np.float64), groups)
    assert_matches_brute_force(t64, y, s64, groups)


def test_few_integer_scores_with_many_rows_equal_brute_force():
    # heavy ties: 1500 rows, 3 distinct scores
    rng, y, _ = data(7, 1500)
    s = rng.integers(0, 3, 1500).astype(np.float64)
    groups = {"a": rng.random(1500) < 0.2, "b": rng.random(1500) < 0.7}
    table = run_bias_metrics(y, s, groups)
    assert_counts(table, y, groups)
    assert_matches_brute_force(table, y, s, groups)


def test_all_scores_equal_gives_one_half_and_zero_aeg():
    rng, y, _ = data(8, 300)
    s = np.full(300, 0.25)
    groups = {"a": rng.random(300) < 0.4}
    table = run_bias_metrics(y, s, groups)
    for metric in ["subgroup_auc", "bpsn_auc", "bnsp_auc"]:
        assert table.loc["a", metric] == 0.5
    assert table.loc["a", "negative_aeg"] == 0.0 and table.loc["a", "positive_aeg"] == 0.0
    assert table.attrs["overall_auc"] == 0.5


# --------------------------------------------------------------- sklearn / scipy

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["two_decimals", "continuous"])
@pytest.mark.parametrize("n", [50, 2_000, pytest.param(100_000, marks=pytest.mark.jit_heavy)])
def test_equals_sklearn_scipy_loop(n, kind, dtype):
    rng, y, s = data(n + (kind == "continuous"), n, kind)
    s = s.astype(dtype)
    groups = {f"p{p}": rng.random(n) < p for p in (0.002, 0.05, 0.5, 0.97)}
    table = run_bias_metrics(y, s, groups)
    assert_counts(table, y, groups)
    for name, g in groups.items():
        expected = sklearn_scipy_metrics(y, s.astype(np.float64), g)
        for metric in METRICS:
            assert_same_value(table.loc[name, metric], expected[metric], TOL, f"{name}.{metric}")
    assert_same_value(table.attrs["overall_auc"], roc_auc_score(y, s), TOL, "overall_auc")


# ------------------------------------------------------------------------ weights

@pytest.mark.parametrize("weight_kind", ["uniform", "integers_with_zeros", "lognormal"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["one_decimal", "few_integers", "continuous"])
@pytest.mark.parametrize("n", [1, 4, 30, 150])
def test_weighted_equals_weighted_brute_force(n, kind, dtype, weight_kind):
    rng, y, s = data(n * 31 + len(kind), n, kind)
    s = s.astype(dtype)
    w = {"uniform": rng.uniform(0.1, 3.0, n),
         "integers_with_zeros": rng.integers(0, 4, n).astype(np.float64),
         "lognormal": rng.lognormal(0.0, 1.0, n)}[weight_kind]
    groups = make_groups(rng, y)
    table = run_bias_metrics(y, s, groups, sample_weight=w)
    assert_counts(table, y, groups, weights=w)
    assert_matches_brute_force(table, y, s.astype(np.float64), groups, weights=w, tol=TOL)
    expected_overall = pair_probability(s[y], s[~y], w[y], w[~y])
    assert_same_value(table.attrs["overall_auc"], expected_overall, TOL, "overall_auc")


@pytest.mark.parametrize("weight_kind, tol", [("dyadic", TOL), ("uniform", 1e-11)])
@pytest.mark.parametrize("n", [500, pytest.param(100_000, marks=pytest.mark.jit_heavy)])
def test_weighted_equals_sklearn_sample_weight(n, weight_kind, tol):
    rng, y, s = data(n + 5, n, "two_decimals")
    if weight_kind == "dyadic":
        w = rng.integers(1, 25, n) / 8.0  # every sum of these is exact in float64
    else:
        w = rng.uniform(0.1, 3.0, n)
    groups = {f"p{p}": rng.random(n) < p for p in (0.01, 0.3, 0.9)}
    table = run_bias_metrics(y, s, groups, sample_weight=w)
    for name, g in groups.items():
        expected = weighted_sklearn_metrics(y, s, g, w)
        for metric in METRICS:
            assert_same_value(table.loc[name, metric], expected[metric], tol, f"{name}.{metric}")
    assert_same_value(table.attrs["overall_auc"], roc_auc_score(y, s, sample_weight=w), tol,
                      "overall_auc")


def test_zero_weight_cell_is_undefined():
    # every background negative has weight 0: BNSP AUC and the negative AEG are undefined
    rng, y, s = data(11, 200, "continuous")
    g = rng.random(200) < 0.5
    w = rng.uniform(0.1, 2.0, 200)
    w[~g & ~y] = 0.0
    with pytest.warns(UndefinedMetricWarning, match="bnsp_auc"):
        table = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w)
    row = table.loc["g"]
    assert row["background_negatives"] == (~g & ~y).sum() > 0  # rows are there...
    assert row["background_negative_weight"] == 0.0            # ...but weigh nothing
    assert np.isnan(row["bnsp_auc"]) and np.isnan(row["negative_aeg"])
    assert_matches_brute_force(table, y, s, {"g": g}, weights=w, tol=TOL)


# Ill-conditioned on purpose: weighted background totals and the BPSN/BNSP/AEG
# numerators are "all rows minus the subgroup's"; with the subgroup carrying almost
# all the weight, plain float64 would leave an error of ~eps * (subgroup weight /
# background weight). The compensated weighted sweep must stay at ~1e-16.
HEAVY_SUBGROUP = dict(
    y=np.array([1, 0, 1, 0, 1, 0], dtype=bool),
    s=np.array([0.9, 0.5, 0.2, 0.4, 0.8, 0.1]),
    g=np.array([1, 1, 1, 0, 0, 0], dtype=bool),
    w=np.array([7e6, 1e6, 3e6, 0.25, 0.001, 0.25]),
)


def test_weighted_metrics_exact_when_subgroup_carries_most_weight():
    y, s, g, w = (HEAVY_SUBGROUP[k] for k in "ysgw")
    table = run_bias_metrics(y, s, {"g": g}, sample_weight=w)
    assert_matches_brute_force(table, y, s, {"g": g}, weights=w, tol=TOL)


def test_weighted_background_totals_exact_when_subgroup_carries_most_weight():
    y, s, g, w = (HEAVY_SUBGROUP[k] for k in "ysgw")
    table = run_bias_metrics(y, s, {"g": g}, sample_weight=w)
    assert_counts(table, y, {"g": g}, weights=w)


def test_weights_of_ones_equal_unweighted():
    rng, y, s = data(12, 400)
    groups = make_groups(rng, y)
    plain = run_bias_metrics(y, s, groups)
    weighted = run_bias_metrics(y, s, groups, sample_weight=np.ones(400))
    pd.testing.assert_frame_equal(weighted[COUNTS + METRICS], plain[COUNTS + METRICS])
    assert weighted.attrs["overall_auc"] == plain.attrs["overall_auc"]


# -------------------------------------------------------------- special subgroups

def test_empty_subgroup_is_all_nan_with_counts_and_warning():
    _, y, s = data(13, 50)
    with pytest.warns(UndefinedMetricWarning, match="nobody"):
        table = fastbias.bias_metrics(y, s, {"nobody": np.zeros(50, bool)})
    row = table.loc["nobody"]
    assert row[METRICS].isna().all()
    assert row["subgroup_size"] == 0
    assert row["background_negatives"] == (~y).sum()
    assert row["background_positives"] == y.sum()


def test_subgroup_of_all_rows_has_overall_auc_and_no_background():
    _, y, s = data(14, 80)
    with pytest.warns(UndefinedMetricWarning, match="everyone"):
        table = fastbias.bias_metrics(y, s, {"everyone": np.ones(80, bool)})
    row = table.loc["everyone"]
    assert row["subgroup_auc"] == pair_probability(s[y], s[~y])
    assert row["subgroup_auc"] == pytest.approx(roc_auc_score(y, s), abs=TOL)
    assert row[["bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]].isna().all()
    assert row["background_negatives"] == 0 and row["background_positives"] == 0
    assert row["subgroup_size"] == 80


@pytest.mark.parametrize("weighted", [False, True])
def test_one_class_subgroups_nan_where_undefined(weighted):
    rng, y, s = data(15, 120)
    groups = {"positives_only": y & (rng.random(120) < 0.5),
              "negatives_only": ~y & (rng.random(120) < 0.5)}
    w = rng.uniform(0.5, 2.0, 120) if weighted else None
    with pytest.warns(UndefinedMetricWarning) as record:
        table = fastbias.bias_metrics(y, s, groups, sample_weight=w)
    message = str(record[0].message)
    assert "positives_only: subgroup_auc" in message and "negatives_only: bnsp_auc" in message
    pos, neg = table.loc["positives_only"], table.loc["negatives_only"]
    # positives only: no subgroup negatives
    assert pos["subgroup_negatives"] == 0 and pos["subgroup_positives"] == groups["positives_only"].sum()
    assert pos[["subgroup_auc", "bpsn_auc", "negative_aeg"]].isna().all()
    assert pos[["bnsp_auc", "positive_aeg"]].notna().all()
    # negatives only: no subgroup positives
    assert neg["subgroup_positives"] == 0 and neg["subgroup_negatives"] == groups["negatives_only"].sum()
    assert neg[["subgroup_auc", "bnsp_auc", "positive_aeg"]].isna().all()
    assert neg[["bpsn_auc", "negative_aeg"]].notna().all()
    assert_matches_brute_force(table, y, s, groups, weights=w, tol=TOL if weighted else 0.0)


def test_single_row_input():
    with pytest.warns(UndefinedMetricWarning):
        table = fastbias.bias_metrics([1], [0.3], {"g": [True]})
    assert table[METRICS].isna().all(axis=None)
    assert table.loc["g", "subgroup_positives"] == 1
    assert np.isnan(table.attrs["overall_auc"])


def test_overlapping_subgroup_rows_do_not_depend_on_other_subgroups():
    rng, y, s = data(16, 600)
    groups = {f"g{j}": rng.random(600) < p for j, p in enumerate((0.2, 0.5, 0.5, 0.8))}
    groups["union"] = groups["g0"] | groups["g1"]
    groups["intersection"] = groups["g2"] & groups["g3"]
    groups["copy_of_g1"] = groups["g1"].copy()
    together = run_bias_metrics(y, s, groups)
    assert (together[METRICS + COUNTS].loc["g1"].to_numpy()
            == together[METRICS + COUNTS].loc["copy_of_g1"].to_numpy()).all()
    for name, g in groups.items():
        alone = run_bias_metrics(y, s, {name: g})
        pd.testing.assert_frame_equal(alone, together.loc[[name]])
    assert_matches_brute_force(together, y, s, groups)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_negative_zero_ties_with_zero(dtype):
    rng = np.random.default_rng(17)
    n = 300
    y = rng.random(n) < 0.5
    s = rng.choice(np.array([-1.0, -0.0, 0.0, 0.5], dtype=dtype), n)
    assert np.signbit(s[s == 0]).any() and not np.signbit(s[s == 0]).all()
    groups = {"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.6}
    table = run_bias_metrics(y, s, groups)
    without_negative_zero = run_bias_metrics(y, np.where(s == 0, dtype(0.0), s), groups)
    pd.testing.assert_frame_equal(table, without_negative_zero)
    assert_matches_brute_force(table, y, s.astype(np.float64), groups)
    # the smallest case: a positive at -0.0 and a negative at +0.0 tie
    assert fastbias.overall_auc([1, 0], np.array([-0.0, 0.0], dtype=dtype)) == 0.5
    assert fastbias.overall_auc([0, 1], np.array([-0.0, 0.0], dtype=dtype)) == 0.5


# ------------------------------------------------------------------ input forms

def test_subgroup_input_forms_give_identical_tables():
    rng, y, s = data(18, 250)
    masks = np.column_stack([rng.random(250) < p for p in (0.1, 0.5, 0.9)])
    names = [f"subgroup_{j}" for j in range(3)]
    as_dict = {name: masks[:, j] for j, name in enumerate(names)}
    expected = run_bias_metrics(y, s, as_dict)
    forms = {
        "bool DataFrame": pd.DataFrame(as_dict),
        "(n, k) bool array": masks,
        "(n, k) int array": masks.astype(np.int64),
        "(n, k) float 0/1 array": masks.astype(np.float64),
        "dict of int masks": {k: v.astype(np.int8) for k, v in as_dict.items()},
        "dict of lists": {k: v.tolist() for k, v in as_dict.items()},
        "dict of Series": {k: pd.Series(v) for k, v in as_dict.items()},
        "int DataFrame": pd.DataFrame(as_dict).astype(np.int64),
        "nullable boolean DataFrame": pd.DataFrame(as_dict).astype("boolean"),
    }
    for form, subgroups in forms.items():
        table = run_bias_metrics(y, s, subgroups)
        assert list(table.index) == names, form
        pd.testing.assert_frame_equal(table, expected, obj=form)
    assert expected.index.name == "subgroup"
    assert list(expected.columns) == COUNTS + METRICS
    assert_matches_brute_force(expected, y, s, as_dict)


def test_label_and_score_input_forms_give_identical_tables():
    rng, y, s = data(19, 120)
    groups = {"a": rng.random(120) < 0.5}
    expected = run_bias_metrics(y, s, groups)
    for labels, scores in [(y.astype(int), s), (y.tolist(), s.tolist()),
                           (pd.Series(y.astype(float)), pd.Series(s)),
                           (y.astype(np.int8), pd.array(s, dtype="Float64"))]:
        pd.testing.assert_frame_equal(run_bias_metrics(labels, scores, groups), expected)


def test_label_threshold_and_subgroup_threshold():
    rng = np.random.default_rng(20)
    n = 300
    toxicity = rng.choice([0.0, 0.2, 0.5, 0.7, 1.0], n)
    identity = rng.choice([np.nan, 0.0, 0.3, 0.5, 1.0], n)
    s = np.round(rng.random(n), 2)
    table = run_bias_metrics(toxicity, s, {"g": identity}, label_threshold=0.5,
                             subgroup_threshold=0.5)
    y = toxicity >= 0.5
    g = identity >= 0.5  # NaN is never a member
    expected = run_bias_metrics(y, s, {"g": g})
    pd.testing.assert_frame_equal(table, expected)
    assert_matches_brute_force(table, y, s, {"g": g})


# ---------------------------------------------------------------------- overall_auc

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [2, 10, 1_000, pytest.param(100_000, marks=pytest.mark.jit_heavy)])
def test_overall_auc_equals_sklearn(n, dtype):
    rng = np.random.default_rng(n)
    y = rng.random(n) < 0.4
    y[:2] = [True, False]
    s = np.round(rng.random(n), 2).astype(dtype)
    assert_same_value(fastbias.overall_auc(y, s), roc_auc_score(y, s), TOL, "unweighted")
    w = rng.integers(1, 25, n) / 8.0
    assert_same_value(fastbias.overall_auc(y, s, sample_weight=w),
                      roc_auc_score(y, s, sample_weight=w), TOL, "weighted")
    groups = {"g": rng.random(n) < 0.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        attrs = fastbias.bias_metrics(y, s, groups).attrs["overall_auc"]
    assert attrs == fastbias.overall_auc(y, s)


@pytest.mark.parametrize("label", [0, 1])
def test_overall_auc_one_class_is_nan_with_warning(label):
    with pytest.warns(UndefinedMetricWarning, match="overall AUC"):
        value = fastbias.overall_auc(np.full(5, label), [0.1, 0.2, 0.3, 0.4, 0.5])
    assert np.isnan(value)
    with pytest.warns(UndefinedMetricWarning):
        value = fastbias.overall_auc(np.full(5, label), [0.1, 0.2, 0.3, 0.4, 0.5],
                                     sample_weight=np.ones(5))
    assert np.isnan(value)


def test_overall_auc_label_threshold():
    toxicity = np.array([0.0, 0.1, 0.6, 0.9, 0.4, 0.5])
    s = np.array([0.2, 0.3, 0.1, 0.8, 0.9, 0.5])
    y = toxicity >= 0.5
    value = fastbias.overall_auc(toxicity, s, label_threshold=0.5)
    assert value == pair_probability(s[y], s[~y]) == 4 / 9
    assert_same_value(value, roc_auc_score(y, s), TOL, "overall_auc")


# ------------------------------------------------------------------ input validation

GOOD_Y = np.array([0, 1, 0, 1, 1])
GOOD_S = np.array([0.1, 0.9, 0.4, 0.3, 0.8])
GOOD_G = {"g": np.array([True, False, True, True, False])}


@pytest.mark.parametrize("kwargs, error, pattern", [
    ({"y_score": [0.1, np.nan, 0.4, 0.3, 0.8]}, ValueError, r"y_score has 1 NaN"),
    ({"y_score": [0.1, np.inf, 0.4, -np.inf, 0.8]}, ValueError, r"y_score .*2 infinite"),
    ({"y_score": [0.1, 0.9, 0.4]}, ValueError, r"y_score has 3 rows but y_true has 5"),
    ({"sample_weight": [1.0, 1.0]}, ValueError, r"sample_weight has 2 rows but y_true has 5"),
    ({"subgroups": {"g": [True, False]}}, ValueError, r"subgroup 'g' mask has 2 rows"),
    ({"y_true": [], "y_score": [], "subgroups": {"g": []}}, ValueError, r"y_true is empty"),
    ({"y_true": [0, 2, 0, 1, 1]}, ValueError, r"y_true is not binary"),
    ({"y_true": [0.0, 0.7, 0.0, 1.0, 1.0]}, ValueError, r"y_true is not binary.*threshold"),
    ({"sample_weight": [1.0, -0.5, 1.0, 1.0, 1.0]}, ValueError, r"sample_weight .*negative"),
    ({"sample_weight": [1.0, np.nan, 1.0, 1.0, 1.0]}, ValueError, r"sample_weight .*NaN"),
    ({"subgroups": pd.DataFrame(np.ones((5, 2), bool), columns=["a", "a"])}, ValueError,
     r"subgroups has duplicate name"),
    ({"subgroups": {1: np.ones(5, bool), "1": np.ones(5, bool)}}, ValueError,
     r"subgroups has duplicate name"),
    ({"subgroups": {}}, ValueError, r"subgroups is empty"),
    ({"subgroups": {"g": [0, 2, 0, 1, 1]}}, ValueError, r"subgroup 'g' is not a boolean mask"),
    ({"subgroups": {"g": ["a", "b", "c", "d", "e"]}}, TypeError, r"subgroup 'g' must be"),
    ({"y_score": ["a", "b", "c", "d", "e"]}, TypeError, r"y_score must be numeric"),
    ({"y_score": [True, False, True, False, True]}, TypeError, r"y_score must be numeric"),
    ({"y_score": [1j, 2j, 3j, 4j, 5j]}, TypeError, r"y_score must be real"),
    ({"y_true": ["toxic", "ok", "ok", "toxic", "ok"]}, TypeError, r"y_true has non-numeric"),
    ({"y_score": np.ones((5, 2))}, ValueError, r"y_score must be one-dimensional"),
])
def test_bias_metrics_rejects_bad_input(kwargs, error, pattern):
    arguments = {"y_true": GOOD_Y, "y_score": GOOD_S, "subgroups": GOOD_G}
    arguments.update(kwargs)
    sample_weight = arguments.pop("sample_weight", None)
    with pytest.raises(error, match=pattern):
        fastbias.bias_metrics(arguments["y_true"], arguments["y_score"], arguments["subgroups"],
                              sample_weight=sample_weight)


@pytest.mark.parametrize("kwargs, error, pattern", [
    ({"y_score": [0.1, np.nan, 0.4, 0.3, 0.8]}, ValueError, r"y_score has 1 NaN"),
    ({"y_score": [0.1, 0.9, 0.4, 0.3, np.inf]}, ValueError, r"y_score .*1 infinite"),
    ({"y_score": [0.1, 0.9]}, ValueError, r"y_score has 2 rows but y_true has 5"),
    ({"sample_weight": [1.0] * 6}, ValueError, r"sample_weight has 6 rows but y_true has 5"),
    ({"y_true": [], "y_score": []}, ValueError, r"y_true is empty"),
    ({"y_true": [0, 1, -1, 1, 0]}, ValueError, r"y_true is not binary"),
    ({"sample_weight": [1.0, 1.0, 1.0, 1.0, -1e-9]}, ValueError, r"sample_weight .*negative"),
    ({"y_score": ["0.1", "0.2", "0.3", "0.4", "0.5"]}, TypeError, r"y_score must be numeric"),
])
def test_overall_auc_rejects_bad_input(kwargs, error, pattern):
    arguments = {"y_true": GOOD_Y, "y_score": GOOD_S}
    arguments.update(kwargs)
    with pytest.raises(error, match=pattern):
        fastbias.overall_auc(**arguments)


def test_error_messages_say_where_the_problem_is():
    scores = GOOD_S.copy()
    scores[3] = np.nan
    with pytest.raises(ValueError, match=re.escape("first at position 3")):
        fastbias.bias_metrics(GOOD_Y, scores, GOOD_G)
    with pytest.raises(ValueError, match=r"at position 2"):
        fastbias.bias_metrics([0, 1, 5, 1, 0], GOOD_S, GOOD_G)
