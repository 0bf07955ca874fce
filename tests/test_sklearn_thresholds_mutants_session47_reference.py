"""Mutation audit, forty-seventh session: ``fastbias/sklearn.py`` and
``fastbias/metrics/thresholds.py`` (an independent reviewer's tests).

Of 49 hand mutants (33 of the scorers, 16 of the threshold metrics), the related existing
tests killed 40 (14 files: the scorers' seven, the thresholds' seven). The 9 survivors, each
checked again on this file as landed (the mutant applied in a worktree of main, this file
run, the mutant reverted) and without it on those 14 files, are killed here: an all-pos_label
fold made all negatives (the warning's counts), two values besides pos_label in predict's
output accepted, that refusal naming the last row or a NaN twice, an empty response_method,
the make-time check of the final metric's settings dropped, a routed overall_weight=0.0
dropped for the default, a wrong count of undefined threshold rates, the threshold weights'
resolution check dropped. None was equivalent. One inconsistency the reviewer noted is
fixed: a one-class fold of "1" under pos_label=1 is refused, as a fold of two classes is.

Every expected number comes from an independent reference: scikit-learn's roc_auc_score per
subgroup and the final metric written out from its definition (the scorers: ``_final`` of
tests/test_model_selection_session34_reference.py), and loops over the rows with exact
Fraction sums of who scores at or above each threshold (``reference`` of
tests/test_thresholds_mutants_session42_reference.py). Nothing expected is computed with the
code under test.
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold, cross_validate

import fastbias
from fastbias.sklearn import bias_score, make_bias_scorer, positive_class_scores
from fastbias.validate.errors import UndefinedMetricWarning

from .test_membership_mutants import _quietly
from .test_model_selection_session34_reference import _final as final_reference
from .test_thresholds_mutants_session42_reference import check_against
from .test_thresholds_mutants_session42_reference import (
    reference as threshold_reference,
)

# ================================================================ shared data / references


def _data(seed=0, n=240):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)},
                     index=pd.Index(np.arange(1000, 1000 + n) * 7, name="row"))
    y = (X["x"] + 0.8 * rng.normal(size=n) > 0).to_numpy()
    G = pd.DataFrame({"a": rng.random(n) < 0.35, "b": rng.random(n) < 0.4}, index=X.index)
    return X, y, G


def _min_subgroup_auc(y, s, G):
    """min over subgroups of roc_auc_score on the subgroup's rows (the documented metric)."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=float)
    return min(roc_auc_score(y[np.asarray(G[c], bool)], s[np.asarray(G[c], bool)]) for c in G)


class _FeaturesOnly(LogisticRegression):
    """Fits on the x, z columns only (the scorer reads the subgroups from elsewhere)."""

    def fit(self, X, y, sample_weight=None):
        return super().fit(X[["x", "z"]], y, sample_weight=sample_weight)

    def decision_function(self, X):
        return super().decision_function(X[["x", "z"]])

    def predict_proba(self, X):
        return super().predict_proba(X[["x", "z"]])


class _Predicts:
    """An estimator without classes_ whose predict returns fixed values (a 'regressor')."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def predict(self, X):
        return self.values


# ================================================================ sklearn.py: bias_score

def test_all_positive_fold_with_pos_label_names_missing_negatives():
    """A fold whose every label is pos_label is a fold without negatives (NaN, and the note
    says negatives are missing), not one made all negatives."""
    for y, pos in ((np.array(["yes"] * 4, dtype=object), "yes"), ([1, 1, 1, 1], 1)):
        s = [0.1, 0.4, 0.3, 0.8]
        groups = {"a": [True, True, False, False]}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = bias_score(y, s, subgroups=groups, metric="overall_auc", pos_label=pos)
        assert np.isnan(value)
        text = " ".join(str(w.message) for w in caught
                        if issubclass(w.category, UndefinedMetricWarning)).lower()
        assert "(negatives=0, positives=4)" in text, text


def test_one_class_series_fold_keeps_its_index():
    """A pandas y of one class other than pos_label keeps its index, so subgroups indexed
    alike are accepted (NaN: no positives), not refused for misaligned labels."""
    idx = pd.Index([31, 7, 12, 99])
    y = pd.Series(["no"] * 4, index=idx)
    S = pd.DataFrame({"a": [True, False, True, False]}, index=idx)
    value = _quietly(bias_score, y, [0.2, 0.9, 0.4, 0.1], subgroups=S, metric="overall_auc",
                     pos_label="yes")
    assert np.isnan(value)


def test_one_class_text_fold_other_than_pos_label_is_nan_not_refused():
    value = _quietly(bias_score, ["no", "no", "no"], [0.2, 0.9, 0.4],
                     subgroups={"a": [True, False, True]}, metric="final", pos_label="yes")
    assert np.isnan(value)


@pytest.mark.parametrize("fold", [["1", "1", "1"], ["0", "1", "1"]])
def test_a_fold_whose_labels_read_as_pos_label_but_are_text_is_refused(fold):
    """pos_label=1 and labels "1": refused in a fold of one class as in a fold of two (the
    one-class fold was taken for a fold of negatives and scored NaN, its warning counting
    three negatives; found by this audit's reviewer)."""
    with pytest.raises(ValueError, match=r"^pos_label 1 does not occur in y_true \(its values "
                                         r"are \['(0', ')?1'\]\)$"):
        bias_score(fold, [0.2, 0.9, 0.4], subgroups={"a": [True, False, True]},
                   metric="final", pos_label=1)


def test_undefined_fold_warned_once_per_scorer():
    X, y, G = _data(1, n=60)
    G = G.copy()
    G["a"] = False
    G.iloc[0, 0] = True  # a subgroup of one row: its AUC undefined on every fold
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=G)
    model = _FeaturesOnly().fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            assert np.isnan(scorer(model, X, y))
    assert sum(issubclass(w.category, UndefinedMetricWarning) for w in caught) == 1


# ================================================================ _predicted_class_scores

def test_predict_with_two_other_values_than_pos_label_is_refused_naming_first_row():
    """Predictions 1, 0, 2, 3 with pos_label=1: values besides pos_label are 0, 2, 3; the
    message names the first (0) and, at row 2, the second (2)."""
    with pytest.raises(ValueError, match=r"e\.g\. 0 and, at row 2, 2\)"):
        positive_class_scores(_Predicts([1, 0, 2, 3]), None, "predict", pos_label=1)
    # exactly two values besides pos_label is refused too
    with pytest.raises(ValueError, match=r"2 distinct values besides pos_label=1"):
        positive_class_scores(_Predicts([1, 0, 2, 0]), None, "predict", pos_label=1)
    # one other value is a binary classifier's: 1.0 where pos_label
    got = positive_class_scores(_Predicts([1, 0, 1, 0]), None, "predict", pos_label=1)
    assert got.tolist() == [1.0, 0.0, 1.0, 0.0]


# ================================================================ positive_class_scores

def _text_model():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [1.5], [0.5]])
    labels = np.array(["no", "no", "yes", "yes", "yes", "no"])
    return LogisticRegression().fit(X, labels), X


def test_empty_response_method_refused_at_make_time():
    _, _, G = _data()
    with pytest.raises(ValueError, match="response_method must be one of"):
        make_bias_scorer("final", subgroups=G, response_method=())


def test_pos_label_not_a_class_refused_for_decision_function():
    model, X = _text_model()
    with pytest.raises(ValueError, match=r"pos_label='maybe' is not one of the estimator's"):
        positive_class_scores(model, X, "decision_function", pos_label="maybe")


def test_three_class_estimator_refused_for_predict_proba():
    X = np.arange(9, dtype=float).reshape(-1, 1)
    model = LogisticRegression().fit(X, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    with pytest.raises(ValueError, match="binary classifier; the estimator has 3 classes"):
        positive_class_scores(model, X, "predict_proba")


def test_scores_follow_pos_label_for_each_method():
    model, X = _text_model()
    proba = model.predict_proba(X)
    decision = model.decision_function(X)
    classes = list(model.classes_)
    for pos in classes:
        np.testing.assert_array_equal(
            positive_class_scores(model, X, "predict_proba", pos), proba[:, classes.index(pos)])
        np.testing.assert_array_equal(
            positive_class_scores(model, X, "decision_function", pos),
            decision if pos == classes[1] else -decision)
        np.testing.assert_array_equal(
            positive_class_scores(model, X, "predict", pos),
            (model.predict(X) == pos).astype(float))
    # default: the second class
    np.testing.assert_array_equal(positive_class_scores(model, X, "predict"),
                                  (model.predict(X) == classes[1]).astype(float))
    np.testing.assert_array_equal(positive_class_scores(model, X, "predict_proba"), proba[:, 1])


def test_regressor_predict_with_pos_label_refused():
    from sklearn.linear_model import LinearRegression

    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    model = LinearRegression().fit(X, [0.1, 0.5, 0.3, 0.9])
    with pytest.raises(ValueError, match="distinct values besides pos_label=1"):
        positive_class_scores(model, X, "predict", pos_label=1)
    np.testing.assert_array_equal(positive_class_scores(model, X, "predict"), model.predict(X))


# ================================================================ routing-free scorers

def test_index_aligned_scorer_duplicate_missing_and_order():
    X, y, G = _data(2)
    model = _FeaturesOnly().fit(X, y)
    s = model.decision_function(X)
    want = _min_subgroup_auc(y, s, G)
    # subgroups given in another row order than X: rows are found by label
    shuffled = G.iloc[np.random.default_rng(3).permutation(len(G))]
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=shuffled)
    assert scorer(model, X, y) == pytest.approx(want, abs=1e-12)
    # X in another order than subgroups: still by label
    perm = np.random.default_rng(4).permutation(len(X))
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=G)
    got = scorer(model, X.iloc[perm], y[perm])
    assert got == pytest.approx(_min_subgroup_auc(y[perm], s[perm], G.iloc[perm]), abs=1e-12)
    # a duplicate label of X refused
    Xd = X.iloc[[0, 1, 2, 3, 3]]
    with pytest.raises(ValueError, match="duplicate index labels"):
        scorer(model, Xd, y[[0, 1, 2, 3, 3]])
    # a row of X absent from subgroups refused
    Xm = X.copy()
    Xm.index = list(X.index[:-1]) + [-5]
    with pytest.raises(KeyError, match=r"1 row\(s\) of X are not in the index of subgroups"):
        scorer(model, Xm, y)


def test_fold_scorer_pandas_y_taken_by_position():
    """y's own index (a default RangeIndex) is ignored: rows pair with X by position."""
    X, y, G = _data(5)
    model = _FeaturesOnly().fit(X, y)
    want = _min_subgroup_auc(y, model.decision_function(X), G)
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=G)
    assert scorer(model, X, pd.Series(y)) == pytest.approx(want, abs=1e-12)


def test_fold_scorer_uses_pos_label_for_scores():
    X, y, G = _data(6)
    labels = np.where(y, "yes", "no")
    model = _FeaturesOnly().fit(X, labels)
    proba = model.predict_proba(X)
    col_no = list(model.classes_).index("no")
    want = _min_subgroup_auc(labels == "no", proba[:, col_no], G)
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=G, response_method="predict_proba",
                              pos_label="no")
    assert scorer(model, X, labels) == pytest.approx(want, abs=1e-12)


def test_make_bias_scorer_argument_checks():
    X, y, G = _data()
    with pytest.raises(ValueError, match="give subgroups or subgroup_columns, not both"):
        make_bias_scorer("final", subgroups=G, subgroup_columns=["a"])
    # a string names one column
    Xg = X.assign(grp=G["a"].to_numpy())
    model = _FeaturesOnly().fit(X, y)
    scorer = make_bias_scorer("min_subgroup_auc", subgroup_columns="grp")
    want = _min_subgroup_auc(y, model.decision_function(X), {"grp": G["a"].to_numpy()})
    assert scorer(model, Xg, y) == pytest.approx(want, abs=1e-12)


# ================================================================ routed scorers

def _folds(n):
    return list(KFold(3, shuffle=True, random_state=0).split(np.zeros(n)))


def test_routed_predict_text_classes_with_pos_label():
    X, y, G = _data(7)
    Xf = X[["x", "z"]]
    labels = np.where(y, "yes", "no")
    folds = _folds(len(y))
    for pos in ("yes", "no"):
        with sklearn.config_context(enable_metadata_routing=True):
            scorer = make_bias_scorer("min_subgroup_auc", response_method="predict",
                                      pos_label=pos)
            got = cross_validate(LogisticRegression(), Xf, labels, cv=folds, scoring=scorer,
                                 params={"subgroups": G}, error_score="raise")["test_score"]
        want = []
        for train, test in folds:
            predicted = LogisticRegression().fit(Xf.iloc[train], labels[train]).predict(
                Xf.iloc[test])
            want.append(_min_subgroup_auc(labels[test] == pos, (predicted == pos).astype(float),
                                          G.iloc[test]))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_routed_scorer_refuses_unrequested_weight_and_is_positive():
    X, y, G = _data(8)
    Xf = X[["x", "z"]]
    w = np.random.default_rng(9).uniform(0.5, 2.0, size=len(y))
    folds = _folds(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        model = LogisticRegression().set_fit_request(sample_weight=True)
        scorer = make_bias_scorer("min_subgroup_auc")
        with pytest.raises(Exception, match="sample_weight"):
            cross_validate(model, Xf, y, cv=folds, scoring=scorer,
                           params={"subgroups": G, "sample_weight": w}, error_score="raise")
        got = cross_validate(LogisticRegression(), Xf, y, cv=folds, scoring=scorer,
                             params={"subgroups": G}, error_score="raise")["test_score"]
    want = [_min_subgroup_auc(y[te], LogisticRegression().fit(Xf.iloc[tr], y[tr])
                              .decision_function(Xf.iloc[te]), G.iloc[te]) for tr, te in folds]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert min(got) > 0


# ================================================================ thresholds: reference

def _check_table(table, want, weighted):
    """``check_against`` (counts exact, rates to 1e-15), and the counts' dtype: integers
    unweighted, floats weighted."""
    check_against(table, want)
    for side in ("subgroup", "background"):
        for column in ("negatives", "positives", "tp", "fp"):
            assert table[f"{side}_{column}"].dtype == (np.float64 if weighted else np.int64)


def _threshold_data(seed, n=40, weighted=False, equal_classes=False):
    rng = np.random.default_rng(seed)
    s = np.round(rng.random(n), 1)  # many ties, some exactly at the thresholds
    y = rng.random(n) < 0.5
    if equal_classes:
        y = np.zeros(n, bool)
        y[rng.permutation(n)[: n // 2]] = True
    groups = {"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.5}
    w = rng.choice([0.25, 0.5, 1.5, 3.0, 7.75], size=n) if weighted else None
    return y, s, groups, w


@pytest.mark.parametrize("weighted", [False, True])
def test_threshold_metrics_against_plain_counts(weighted):
    y, s, groups, w = _threshold_data(11, weighted=weighted, equal_classes=True)
    thresholds = [0.7, 0.3, 0.5, 0.3, 0.0]
    table = _quietly(fastbias.threshold_metrics, y, s, groups, thresholds=thresholds,
                     sample_weight=w, interval=None)
    _check_table(table, threshold_reference(y, s, groups, sorted(set(thresholds)), w),
                 weighted)


@pytest.mark.parametrize("weighted", [False, True])
def test_numpy_tier_ties_at_threshold_count_as_positive(weighted):
    from fastbias.metrics.thresholds import threshold_counts_in_numpy, threshold_table
    from fastbias.prepare.memberships import prepare_subgroups

    y, s, groups, w = _threshold_data(12, weighted=weighted)
    m = prepare_subgroups(y, np.column_stack(list(groups.values())), compiled=False)
    thresholds = np.array([0.2, 0.5, 0.9])
    assert np.isin(thresholds, s).all()  # every threshold is some row's score
    table = _quietly(threshold_table, threshold_counts_in_numpy(s, m, w, thresholds),
                     list(groups))
    _check_table(table, threshold_reference(y, s, groups, thresholds, w), weighted)


def test_thresholds_argument_checks_name_the_position():
    y, s, groups, _ = _threshold_data(13, n=10)

    def call(thresholds):
        return fastbias.threshold_metrics(y, s, groups, thresholds=thresholds, interval=None)

    with pytest.raises(ValueError, match="non-empty"):
        call([])
    with pytest.raises(TypeError, match="got True at position 0"):
        call([True])
    with pytest.raises(TypeError, match="got 'x' at position 1"):
        call([0.5, "x"])
    with pytest.raises(ValueError, match=r"NaN \(position 1\)"):
        call([0.5, float("nan")])
    with pytest.raises(ValueError, match=r"position 1"):
        call([0.5, 2 ** 53 + 1])


def test_undefined_rate_warning_counts_each():
    """Subgroup 'a' holds every row: its background is empty, so each of the background's
    five rates is undefined at the one threshold (5 rates); the subgroup's are defined
    (a positive and a negative both predicted positive at 0)."""
    y = np.array([True, False, True, False])
    s = np.array([0.9, 0.8, 0.7, 0.6])
    groups = {"a": np.ones(4, bool)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastbias.threshold_metrics(y, s, groups, thresholds=[0.0], interval=None)
    texts = [str(w.message) for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(texts) == 1
    assert "5 threshold rate(s) undefined" in texts[0], texts[0]


def test_tied_threshold_counts_reach_a_threshold_equal_to_the_score():
    from fastbias.metrics.thresholds import tied_threshold_counts

    cells = np.array([[[2.0, 0.0], [3.0, 0.0]]])
    totals = np.array([[[5.0, 0.0], [4.0, 0.0]]])
    counts = tied_threshold_counts(0.5, np.float64, np.array([0.25, 0.5, 0.75]), cells, totals,
                                   np.array([[2, 3]]), np.array([[5, 4]]), False)
    assert counts.predicted_rows[:, 0].tolist() == [[2, 3], [2, 3], [0, 0]]
    assert counts.class_predicted_rows[:, 0].tolist() == [[5, 4], [5, 4], [0, 0]]


def test_combine_threshold_counts_adds_every_chunk():
    from fastbias.metrics.thresholds import (
        combine_threshold_counts,
        tied_threshold_counts,
    )

    thresholds = np.array([0.5])
    parts = [tied_threshold_counts(score, np.float64, thresholds,
                                   np.array([[[float(a), 0.0], [float(b), 0.0]]]),
                                   np.array([[[float(a + 1), 0.0], [float(b + 1), 0.0]]]),
                                   np.array([[a, b]]), np.array([[a + 1, b + 1]]), False)
             for score, a, b in ((0.9, 1, 2), (0.7, 3, 4), (0.1, 5, 6))]
    total = combine_threshold_counts(parts)
    assert total.cell_rows.tolist() == [[9, 12]]
    assert total.cells[0, :, 0].tolist() == [9.0, 12.0]
    assert total.predicted[0, 0, :, 0].tolist() == [4.0, 6.0]  # the first two reach 0.5
    assert total.class_totals[0, :, 0].tolist() == [12.0, 15.0]


# ================================================================ second round of mutants

def test_fold_scorer_weight_request_false_takes_no_weight():
    """set_score_request(sample_weight=False): a routed weight is not taken (the score is the
    unweighted one), not refused as an unset request."""
    X, y, G = _data(14)
    w = np.random.default_rng(15).uniform(0.2, 3.0, size=len(y))
    folds = _folds(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        model = _FeaturesOnly().set_fit_request(sample_weight=True)
        scorer = make_bias_scorer("min_subgroup_auc", subgroups=G)
        scorer.set_score_request(sample_weight=False)
        got = cross_validate(model, X, y, cv=folds, scoring=scorer,
                             params={"sample_weight": w}, error_score="raise")["test_score"]
    want = []
    for train, test in folds:
        fitted = LogisticRegression().fit(X.iloc[train][["x", "z"]], y[train],
                                          sample_weight=w[train])
        want.append(_min_subgroup_auc(y[test], fitted.decision_function(
            X.iloc[test][["x", "z"]]), G.iloc[test]))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_predict_refusal_names_the_row_of_a_second_value_after_nan():
    """Predictions 1, NaN, 0, 2 with pos_label=1: besides pos_label, NaN (row 1) first, then
    0.0 at row 2 (not NaN again)."""
    with pytest.raises(ValueError, match=r"e\.g\. nan and, at row 2, 0\.0\)"):
        positive_class_scores(_Predicts([1.0, np.nan, 0.0, 2.0]), None, "predict", pos_label=1)


def test_routed_scorer_refuses_predict_mixed_with_scores():
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match="mixes 'predict' with scores"):
            make_bias_scorer("final", response_method=("predict", "predict_proba"))


def test_routed_scorer_keeps_a_zero_overall_weight():
    X, y, G = _data(16)
    Xf = X[["x", "z"]]
    folds = _folds(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final", overall_weight=0.0)
        got = cross_validate(LogisticRegression(), Xf, y, cv=folds, scoring=scorer,
                             params={"subgroups": G}, error_score="raise")["test_score"]
    want = [final_reference(y[te], LogisticRegression().fit(Xf.iloc[tr], y[tr])
                            .decision_function(Xf.iloc[te]),
                            {c: G[c].to_numpy()[te] for c in G}, ow=0.0)
            for tr, te in folds]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_weighted_background_keeps_a_weight_below_a_subgroup_rows_digits():
    """Negatives weighing 2**60 (in the subgroup) and 1 (the background): the background's
    negatives weigh exactly 1, so its FPR is defined (1 at a threshold below its score)."""
    y = np.array([0, 0, 1, 1], bool)
    s = np.array([0.9, 0.2, 0.8, 0.1])
    w = np.array([2.0 ** 60, 1.0, 1.0, 1.0])
    groups = {"a": np.array([1, 0, 1, 0], bool)}
    thresholds = [0.15, 0.5]
    table = _quietly(fastbias.threshold_metrics, y, s, groups, thresholds=thresholds,
                     sample_weight=w, interval=None)
    want = threshold_reference(y, s, groups, thresholds, w)
    assert want[(0.15, "a")]["background_negatives"] == 1
    _check_table(table, want, True)


@pytest.mark.parametrize("how", ["index", "columns", "routed"])
def test_make_bias_scorer_checks_final_settings_at_make_time(how):
    """A bad overall_weight / power is refused when the scorer is made, not at the first
    fold (inside a search, after the fits)."""
    _, _, G = _data()
    where = {"index": {"subgroups": G}, "columns": {"subgroup_columns": ["a"]},
             "routed": {}}[how]
    with sklearn.config_context(enable_metadata_routing=True):
        with pytest.raises(ValueError, match=r"overall_weight must be a number in \[0, 1\], "
                                             r"got 1\.5"):
            make_bias_scorer("final", overall_weight=1.5, **where)
        with pytest.raises(TypeError, match="power must be a real number"):
            make_bias_scorer("final", power=float("nan"), **where)


def test_threshold_weights_below_the_class_sums_resolution_are_refused():
    """Negatives of 1e40, 1 and 1e-30: the last is below 2**-90 of its class's total, which the
    threshold metrics' running sums cannot resolve: refused, naming its position."""
    y = np.array([0, 0, 0, 1, 1], bool)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    w = np.array([1e40, 1.0, 1e-30, 1.0, 1.0])
    with pytest.raises(ValueError, match="weight 1e-30 at position 2"):
        fastbias.threshold_metrics(y, s, {"a": np.array([1, 0, 1, 0, 1], bool)},
                                   sample_weight=w, interval=None)
