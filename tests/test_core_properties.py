"""Hypothesis property tests for ``fastbias.bias_metrics``.

Every property below is derived from the definitions (ties count 1/2):
pair_probability(A, B) = P(s_A > s_B) + 1/2 P(s_A = s_B), so
pair_probability(A, B) = 1 - pair_probability(B, A), and

* AUC(neg, pos) = pair_probability(pos, neg); an AEG = 1/2 - pair_probability(background, subgroup).
* Negating every score swaps "above" and "below": each AUC becomes 1 - AUC,
  each AEG becomes -AEG.
* Swapping the labels *and* negating the scores: subgroup AUC is unchanged,
  BPSN <-> BNSP (the subgroup negatives become the subgroup positives and the
  background positives the background negatives), negative AEG <- -positive AEG
  and positive AEG <- -negative AEG, the overall AUC is unchanged.
* Complement: the background of ~g is g, so BPSN(~g) compares (g positives,
  ~g negatives) = BNSP(g); BNSP(~g) = BPSN(g); AEG(~g) = -AEG(g).
* Any strictly increasing map of the scores keeps every comparison, so every
  metric is unchanged; so does any permutation of the rows.
* Integer weights are repeated rows; weights of ones are no weights.

Where both sides are ratios of the same exact integers (unweighted, or integer
weights) the comparison is bit for bit; where one side is 1 - x or -x of the
other, 1e-12.
"""
import os
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fastbias
from fastbias import UndefinedMetricWarning

from .reference import brute_force_metrics, pair_probability

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
          "background_negatives", "background_positives"]
TOL = 1e-12

# FASTBIAS_HYPOTHESIS_EXAMPLES=1000 for a deeper (slower) search
SETTINGS = settings(max_examples=int(os.environ.get("FASTBIAS_HYPOTHESIS_EXAMPLES", "60")),
                    deadline=None)


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile (or load) every kernel before Hypothesis starts timing examples."""
    y = np.array([0, 1, 0, 1])
    groups = {"g": np.array([True, True, False, False])}
    for dtype in (np.float32, np.float64):
        s = np.array([0.1, 0.2, 0.2, 0.4], dtype=dtype)
        metrics(y, s, groups)
        metrics(y, s, groups, sample_weight=np.ones(4))


def metrics(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fastbias.bias_metrics(*args, **kwargs)


# ------------------------------------------------------------------------ strategies

def score_elements(dtype):
    """Few distinct values (heavy ties), signed zeros, the smallest and largest magnitudes."""
    info = np.finfo(dtype)
    tiny, huge = float(info.smallest_subnormal), float(info.max)
    special = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, tiny, -tiny, huge, -huge])
    width = 32 if dtype == np.float32 else 64
    return st.one_of(st.integers(-3, 3).map(float), special,
                     st.floats(allow_nan=False, allow_infinity=False, width=width))


@st.composite
def datasets(draw, max_rows=30, max_groups=3, scores="any", weights=None):
    """(y, s, groups, w): labels, scores, dict of overlapping masks, weights or None.

    scores: "any" (any finite float32/float64, with ties) or "small_integers".
    weights: None, "integers" (0..4) or "reals" (0 or [0.1, 10]).
    """
    n = draw(st.integers(1, max_rows))
    y = draw(arrays(np.bool_, n))
    if scores == "small_integers":
        s = draw(arrays(np.float64, n, elements=st.integers(-4, 4).map(float)))
    else:
        dtype = draw(st.sampled_from([np.float64, np.float32]))
        s = draw(arrays(dtype, n, elements=score_elements(dtype)))
    k = draw(st.integers(1, max_groups))
    masks = draw(arrays(np.bool_, (n, k)))
    groups = {f"g{j}": masks[:, j] for j in range(k)}
    w = None
    if weights == "integers":
        w = draw(arrays(np.float64, n, elements=st.integers(0, 4).map(float)))
    elif weights == "reals":
        w = draw(arrays(np.float64, n, elements=st.one_of(
            st.just(0.0), st.floats(0.1, 10.0, allow_nan=False))))
    return y, s, groups, w


def assert_tables_equal(actual, expected, tol=0.0, columns=METRICS):
    for column in columns:
        a = actual[column].to_numpy(dtype=np.float64)
        e = expected[column].to_numpy(dtype=np.float64)
        assert np.array_equal(np.isnan(a), np.isnan(e)), column
        ok = ~np.isnan(e)
        if tol == 0.0:
            assert np.array_equal(a[ok], e[ok]), (column, a, e)
        else:
            assert np.all(np.abs(a[ok] - e[ok]) <= tol), (column, a, e)


# ------------------------------------------------------------------- brute force

@SETTINGS
@given(datasets(max_rows=40))
def test_equals_brute_force(data):
    y, s, groups, _ = data
    table = metrics(y, s, groups)
    for name, g in groups.items():
        expected = brute_force_metrics(y, s.astype(np.float64), g)
        for metric in METRICS:
            actual = table.loc[name, metric]
            if np.isnan(expected[metric]):
                assert np.isnan(actual), (name, metric)
            else:
                assert actual == expected[metric], (name, metric, actual, expected[metric])
        assert table.loc[name, "subgroup_negatives"] == np.count_nonzero(g & ~y)
        assert table.loc[name, "background_positives"] == np.count_nonzero(~g & y)
    overall = table.attrs["overall_auc"]
    expected = pair_probability(s[y], s[~y])
    assert (np.isnan(overall) and np.isnan(expected)) or overall == expected


@SETTINGS
@given(datasets(max_rows=30, weights="reals"))
def test_weighted_equals_weighted_brute_force(data):
    y, s, groups, w = data
    table = metrics(y, s, groups, sample_weight=w)
    for name, g in groups.items():
        expected = brute_force_metrics(y, s.astype(np.float64), g, w)
        for metric in METRICS:
            actual = table.loc[name, metric]
            if np.isnan(expected[metric]):
                assert np.isnan(actual), (name, metric, actual)
            else:
                assert abs(actual - expected[metric]) <= TOL, (name, metric, actual, expected)


@SETTINGS
@given(datasets())
def test_metric_ranges(data):
    y, s, groups, _ = data
    table = metrics(y, s, groups)
    aucs = table[["subgroup_auc", "bpsn_auc", "bnsp_auc"]].to_numpy()
    aegs = table[["negative_aeg", "positive_aeg"]].to_numpy()
    assert np.all((aucs[~np.isnan(aucs)] >= 0) & (aucs[~np.isnan(aucs)] <= 1))
    assert np.all((aegs[~np.isnan(aegs)] >= -0.5) & (aegs[~np.isnan(aegs)] <= 0.5))
    sizes = table["subgroup_negatives"] + table["subgroup_positives"]
    assert (table["subgroup_size"] == sizes).all()
    assert ((table["subgroup_size"] + table["background_negatives"]
             + table["background_positives"]) == len(y)).all()


# ------------------------------------------------------------------ invariances

@SETTINGS
@given(datasets(weights="integers"), st.randoms(use_true_random=False))
def test_row_permutation_invariance(data, random):
    y, s, groups, w = data
    order = np.array(random.sample(range(len(y)), len(y)))
    before = metrics(y, s, groups)
    after = metrics(y[order], s[order], {k: g[order] for k, g in groups.items()})
    pd.testing.assert_frame_equal(after, before, check_exact=True)
    assume(w.sum() > 0)
    before_w = metrics(y, s, groups, sample_weight=w)
    after_w = metrics(y[order], s[order], {k: g[order] for k, g in groups.items()},
                      sample_weight=w[order])
    # integer weights: every sum is exact whatever the order
    pd.testing.assert_frame_equal(after_w, before_w, check_exact=True)


@SETTINGS
@given(datasets(weights="reals"), st.randoms(use_true_random=False))
def test_row_permutation_invariance_real_weights(data, random):
    y, s, groups, w = data
    order = np.array(random.sample(range(len(y)), len(y)))
    before = metrics(y, s, groups, sample_weight=w)
    after = metrics(y[order], s[order], {k: g[order] for k, g in groups.items()},
                    sample_weight=w[order])
    assert_tables_equal(after, before, tol=TOL)


@SETTINGS
@given(datasets(scores="small_integers"))
def test_affine_increasing_transform_invariance(data):
    y, s, groups, _ = data
    before = metrics(y, s, groups)
    # exact in float64 for small integers, and strictly increasing
    pd.testing.assert_frame_equal(metrics(y, 3.0 * s + 1.0, groups), before, check_exact=True)
    pd.testing.assert_frame_equal(metrics(y, s.astype(np.float32), groups), before,
                                  check_exact=True)
    pd.testing.assert_frame_equal(metrics(y, s.astype(np.int64), groups), before,
                                  check_exact=True)


@SETTINGS
@given(datasets())
def test_rank_transform_invariance(data):
    y, s, groups, _ = data
    # dense ranks: a strictly increasing map of the distinct values (-0.0 ties with 0.0)
    ranks = np.unique(s, return_inverse=True)[1].reshape(-1).astype(np.float64)
    pd.testing.assert_frame_equal(metrics(y, ranks, groups), metrics(y, s, groups),
                                  check_exact=True)


@SETTINGS
@given(datasets(), st.randoms(use_true_random=False))
def test_subgroup_order_and_company_do_not_matter(data, random):
    y, s, groups, _ = data
    table = metrics(y, s, groups)
    names = list(groups)
    random.shuffle(names)
    shuffled = metrics(y, s, {k: groups[k] for k in names})
    pd.testing.assert_frame_equal(shuffled, table.loc[names], check_exact=True)
    alone = metrics(y, s, {names[0]: groups[names[0]]})
    pd.testing.assert_frame_equal(alone, table.loc[[names[0]]], check_exact=True)


# -------------------------------------------------------------------- weights

@SETTINGS
@given(datasets())
def test_weights_of_ones_equal_no_weights(data):
    y, s, groups, _ = data
    plain = metrics(y, s, groups)
    ones = metrics(y, s, groups, sample_weight=np.ones(len(y)))
    pd.testing.assert_frame_equal(ones[COUNTS + METRICS], plain[COUNTS + METRICS],
                                  check_exact=True)
    assert (ones["subgroup_negative_weight"] == plain["subgroup_negatives"]).all()
    assert (ones["background_positive_weight"] == plain["background_positives"]).all()


@SETTINGS
@given(datasets(weights="integers"))
def test_integer_weights_equal_repeated_rows(data):
    y, s, groups, w = data
    assume(w.sum() > 0)
    repeats = w.astype(np.int64)
    weighted = metrics(y, s, groups, sample_weight=w)
    repeated = metrics(np.repeat(y, repeats), np.repeat(s, repeats),
                       {k: np.repeat(g, repeats) for k, g in groups.items()})
    assert_tables_equal(weighted, repeated)
    assert weighted.attrs["overall_auc"] == repeated.attrs["overall_auc"] or (
        np.isnan(weighted.attrs["overall_auc"]) and np.isnan(repeated.attrs["overall_auc"]))
    for weight_column, count_column in [("subgroup_negative_weight", "subgroup_negatives"),
                                        ("subgroup_positive_weight", "subgroup_positives"),
                                        ("background_negative_weight", "background_negatives"),
                                        ("background_positive_weight", "background_positives")]:
        assert (weighted[weight_column] == repeated[count_column]).all(), weight_column


@SETTINGS
@given(datasets(weights="reals"), st.integers(-20, 20))
def test_scaling_weights_by_a_power_of_two_changes_nothing(data, exponent):
    y, s, groups, w = data
    before = metrics(y, s, groups, sample_weight=w)
    after = metrics(y, s, groups, sample_weight=w * 2.0 ** exponent)
    assert_tables_equal(after, before)


# ----------------------------------------------------------------- symmetries

@SETTINGS
@given(datasets())
def test_negating_scores_mirrors_every_metric(data):
    y, s, groups, _ = data
    before = metrics(y, s, groups)
    after = metrics(y, -s, groups)
    for metric in ["subgroup_auc", "bpsn_auc", "bnsp_auc"]:
        expected = 1.0 - before[metric]
        assert_tables_equal(after, pd.DataFrame({metric: expected}), TOL, [metric])
    for metric in ["negative_aeg", "positive_aeg"]:
        assert_tables_equal(after, pd.DataFrame({metric: -before[metric]}), TOL, [metric])


@SETTINGS
@given(datasets(weights="integers"))
def test_swapping_labels_and_negating_scores(data):
    y, s, groups, w = data
    for weights in (None, w):
        before = metrics(y, s, groups, sample_weight=weights)
        after = metrics(~y, -s, groups, sample_weight=weights)
        # same pairs, same exact counts: bit for bit
        assert_tables_equal(after, before, columns=["subgroup_auc"])
        assert_tables_equal(after.rename(columns={"bpsn_auc": "bnsp_auc", "bnsp_auc": "bpsn_auc"}),
                            before, columns=["bpsn_auc", "bnsp_auc"])
        mirrored = pd.DataFrame({"negative_aeg": -before["positive_aeg"],
                                 "positive_aeg": -before["negative_aeg"]})
        assert_tables_equal(after, mirrored, TOL, ["negative_aeg", "positive_aeg"])
        assert (after["subgroup_negatives"] == before["subgroup_positives"]).all()
        assert (after["background_positives"] == before["background_negatives"]).all()
        a, b = after.attrs["overall_auc"], before.attrs["overall_auc"]
        assert a == b or (np.isnan(a) and np.isnan(b))


@SETTINGS
@given(datasets())
def test_complement_subgroup(data):
    y, s, groups, _ = data
    g = next(iter(groups.values()))
    table = metrics(y, s, {"g": g, "not_g": ~g})
    mine, other = table.loc["g"], table.loc["not_g"]
    for a, b in [(other["bpsn_auc"], mine["bnsp_auc"]), (other["bnsp_auc"], mine["bpsn_auc"])]:
        assert a == b or (np.isnan(a) and np.isnan(b))
    for metric in ["negative_aeg", "positive_aeg"]:
        a, b = other[metric], -mine[metric]
        assert (np.isnan(a) and np.isnan(b)) or abs(a - b) <= TOL, metric
    assert other["background_negatives"] == mine["subgroup_negatives"]


@SETTINGS
@given(datasets())
def test_subgroup_of_everyone_has_the_overall_auc(data):
    y, s, _, _ = data
    table = metrics(y, s, {"all": np.ones(len(y), dtype=bool)})
    a, b = table.loc["all", "subgroup_auc"], table.attrs["overall_auc"]
    assert a == b or (np.isnan(a) and np.isnan(b))
    overall = fastbias.overall_auc(y, s) if y.any() and not y.all() else np.nan
    assert overall == b or (np.isnan(overall) and np.isnan(b))
