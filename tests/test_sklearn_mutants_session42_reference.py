"""A mutation audit of the scikit-learn integration (fastbias/sklearn.py): an independent
review's tests (2026-11-28, forty-second session). Of 46 hand mutants, 17 were run against the
suite's scikit-learn tests, which killed 8; this file kills 34 of the 42 run against it, among
them each user-visible survivor of the suite (a one-row fold of one class other than
``pos_label`` refused; a two-class fold without ``pos_label`` scored NaN instead of refused; a
NaN fold warned once per fold by the index-aligned scorer; ``final_metric_score`` ignoring
``power``; a string ``subgroup_columns`` split into characters). Equivalent: a one-class fold
made positives instead of negatives (NaN either way), the last ``predict_proba`` column of two,
a Series of memberships left a Series. One defect, found by the survivor of a regressor's
``predict`` with ``pos_label``: its numbers were compared with ``pos_label``, every row scored
0.0 and every fold 0.5 (now refused: the last test).

Every expected value comes from an independent reference: sklearn.metrics.roc_auc_score per
subgroup on the documented row subsets, the Jigsaw final metric written from its definition
(power mean of each of the three per-subgroup AUC lists, then overall_weight * overall AUC +
(1 - overall_weight) * their mean) and fold splits computed here with KFold.
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import KFold, cross_val_score, cross_validate

from fastbias.sklearn import (
    bias_score,
    final_metric_score,
    make_bias_scorer,
    positive_class_scores,
)
from fastbias.validate.errors import UndefinedMetricWarning

from ._kernel_ref import power_mean

# ---------------------------------------------------------------- independent references

def _aucs(y, s, G, w=None):
    """Per-subgroup (subgroup, BPSN, BNSP) AUC lists and the overall AUC, by roc_auc_score."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=float)
    w = None if w is None else np.asarray(w, dtype=float)

    def auc(mask):
        return roc_auc_score(y[mask], s[mask], sample_weight=None if w is None else w[mask])

    sub, bpsn, bnsp = [], [], []
    for name in G:
        g = np.asarray(G[name], dtype=bool)
        sub.append(auc(g))
        bpsn.append(auc((g & ~y) | (~g & y)))
        bnsp.append(auc((g & y) | (~g & ~y)))
    return sub, bpsn, bnsp, roc_auc_score(y, s, sample_weight=w)


def _power_mean_of(values, p):
    """The Kaggle kernel's power mean (tests/_kernel_ref.py) of a list of AUCs."""
    return float(power_mean(np.asarray(values, dtype=float), p))


def ref_score(y, s, G, metric="final", w=None, power=-5, overall_weight=0.25):
    sub, bpsn, bnsp, overall = _aucs(y, s, G, w)
    if metric == "overall_auc":
        return overall
    if metric == "min_subgroup_auc":
        return min(sub)
    if metric == "min_bpsn_auc":
        return min(bpsn)
    if metric == "min_bnsp_auc":
        return min(bnsp)
    bias = np.mean([_power_mean_of(m, power) for m in (sub, bpsn, bnsp)])
    return overall_weight * overall + (1 - overall_weight) * bias


def _data(n=90, seed=3, index=None):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = (x + rng.normal(size=n) > 0)
    G = pd.DataFrame({"a": np.arange(n) % 3 == 0, "b": np.arange(n) % 3 != 2,
                      "c": np.arange(n) % 2 == 0}, index=index)
    X = pd.DataFrame({"x": x, "z": rng.normal(size=n)}, index=index)
    return X, y, G


def _folds(n, k=3, seed=0):
    return list(KFold(k, shuffle=True, random_state=seed).split(np.zeros(n)))


def _cv_reference(model, X, y, G, folds, metric="final", w=None, **kw):
    out = []
    for train, test in folds:
        fitted = sklearn.base.clone(model).fit(X.iloc[train][["x", "z"]], y[train])
        s = fitted.decision_function(X.iloc[test][["x", "z"]])
        out.append(ref_score(y[test], s, {c: G.iloc[test][c].to_numpy() for c in G.columns}, metric,
                             None if w is None else w[test], **kw))
    return np.array(out)


class _FeaturesOnly(sklearn.base.BaseEstimator, sklearn.base.ClassifierMixin):
    """Logistic regression on the columns x, z of a DataFrame (ignores subgroup columns)."""

    def fit(self, X, y, sample_weight=None):
        self.model_ = LogisticRegression().fit(X[["x", "z"]], y)
        self.classes_ = self.model_.classes_
        return self

    def decision_function(self, X):
        return self.model_.decision_function(X[["x", "z"]])


# ---------------------------------------------------------------- plain metric functions

@pytest.mark.parametrize("metric", ["final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc",
                                    "min_bnsp_auc"])
def test_bias_score_matches_roc_auc_reference(metric):
    X, y, G = _data()
    s = X["x"].to_numpy() + 0.5 * X["z"].to_numpy()
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    got = bias_score(y, s, subgroups=G, metric=metric, sample_weight=w, power=-2,
                     overall_weight=0.4)
    assert got == pytest.approx(ref_score(y, s, G, metric, w, power=-2, overall_weight=0.4),
                                abs=1e-12)


def test_final_metric_score_passes_power_weight_and_sample_weight():
    """Kills M11 (power fixed to -5) and M12 (sample_weight dropped)."""
    X, y, G = _data()
    s = X["x"].to_numpy() + 0.5 * X["z"].to_numpy()
    w = np.random.default_rng(2).uniform(0.1, 3.0, size=len(y))
    got = final_metric_score(y, s, subgroups=G, sample_weight=w, power=2, overall_weight=0.6)
    assert got == pytest.approx(ref_score(y, s, G, "final", w, power=2, overall_weight=0.6),
                                abs=1e-12)


def test_one_class_text_fold_is_nan_with_warning_not_error():
    """A fold whose only class is not pos_label is a fold without positives: NaN + warning.
    Kills M1 (no one-class handling) and M2 (a one-row fold refused)."""
    s = np.linspace(0, 1, 6)
    G = {"a": [1, 1, 1, 0, 0, 0]}
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(bias_score(["neg"] * 6, s, subgroups=G, pos_label="pos"))
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(bias_score(["neg"], [0.2], subgroups={"a": [1]}, pos_label="pos"))


def test_one_class_series_fold_keeps_its_index():
    """Kills M6: the all-negatives labels of a one-class Series fold must keep the Series'
    index, which is checked against the subgroups' index (a lost index was refused)."""
    idx = pd.Index([100, 101, 102, 103, 104])
    y = pd.Series(["neg"] * 5, index=idx)
    G = pd.DataFrame({"a": [True, True, False, False, True]}, index=idx)
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(bias_score(y, np.arange(5.0), subgroups=G, pos_label="pos"))


def test_two_class_fold_without_pos_label_is_an_error():
    """Kills M4: labels of two classes, neither pos_label, are an error (a typo), not a fold
    of negatives."""
    with pytest.raises(ValueError):
        bias_score(["a", "b", "a", "b"], [0.1, 0.2, 0.3, 0.4], subgroups={"g": [1, 1, 0, 0]},
                   pos_label="c")


def test_one_class_fold_warning_says_no_positives():
    """Pin: a text fold of only the negative class warns as a 0/1 fold without positives
    (M5, made positives instead, is not killed: both warnings read alike)."""
    with pytest.warns(UndefinedMetricWarning) as record:
        bias_score(["neg"] * 4, [0.1, 0.2, 0.3, 0.4], subgroups={"g": [1, 1, 0, 0]},
                   pos_label="pos")
    text = " ".join(str(r.message) for r in record).lower()
    with pytest.warns(UndefinedMetricWarning) as record_numeric:
        bias_score([0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4], subgroups={"g": [1, 1, 0, 0]})
    assert text == " ".join(str(r.message) for r in record_numeric).lower()


# ---------------------------------------------------------------- positive_class_scores

def test_positive_class_scores_per_pos_label():
    """Kills M16, M19, M20, M21, M22, M23, M25: columns, signs and predicted classes."""
    Xa = np.array([[0.0], [1.0], [2.0], [3.0], [0.5], [2.5]])
    labels = np.array(["no", "no", "yes", "yes", "yes", "no"])
    model = LogisticRegression().fit(Xa, labels)
    proba = model.predict_proba(Xa)
    dec = model.decision_function(Xa)
    pred = model.predict(Xa)
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "predict_proba", "no"),
                                  proba[:, 0])
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "predict_proba"), proba[:, 1])
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "decision_function", "no"),
                                  -dec)
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "decision_function", "yes"),
                                  dec)
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "predict"),
                                  (pred == "yes").astype(float))
    np.testing.assert_array_equal(positive_class_scores(model, Xa, "predict", "no"),
                                  (pred == "no").astype(float))
    np.testing.assert_array_equal(
        positive_class_scores(model, Xa, ("predict_proba", "decision_function")), proba[:, 1])
    with pytest.raises(ValueError, match="maybe"):
        positive_class_scores(model, Xa, "decision_function", "maybe")


def test_positive_class_scores_refuses_three_classes():
    """Kills M17."""
    Xa = np.arange(9.0).reshape(-1, 1)
    model = LogisticRegression().fit(Xa, [0, 0, 0, 1, 1, 1, 2, 2, 2])
    with pytest.raises(ValueError, match="3 classes"):
        positive_class_scores(model, Xa, "predict_proba")


# ---------------------------------------------------------------- routing-free scorers

def test_index_aligned_scorer_equals_per_fold_reference():
    """Kills M30/M32 (rows looked up by position or sorted) and M33 (y Series with another
    index): X has shuffled labels, subgroups another row order, y a default index."""
    rng = np.random.default_rng(7)
    labels = rng.permutation(np.arange(1000, 1090))
    X, y, G = _data(index=labels)
    shuffled = G.sample(frac=1.0, random_state=1)
    folds = _folds(len(y))
    scorer = make_bias_scorer("final", subgroups=shuffled, power=-3, overall_weight=0.3)
    got = cross_val_score(_FeaturesOnly(), X, pd.Series(y), cv=folds, scoring=scorer,
                          error_score="raise")
    want = _cv_reference(LogisticRegression(), X, y, G, folds, power=-3, overall_weight=0.3)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_index_aligned_scorer_series_subgroups():
    """A Series of memberships is one subgroup (pin; M42, the Series not made a frame, is
    equivalent: the evaluator takes a Series as one subgroup)."""
    X, y, G = _data()
    folds = _folds(len(y))
    scorer = make_bias_scorer("min_bpsn_auc", subgroups=G["a"])
    got = cross_val_score(_FeaturesOnly(), X, y, cv=folds, scoring=scorer, error_score="raise")
    want = _cv_reference(LogisticRegression(), X, y, G[["a"]], folds, "min_bpsn_auc")
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("columns", ["christian", ["a", "b", "christian"]])
def test_subgroup_columns_scorer_equals_per_fold_reference(columns):
    """Kills M28 (first column only) and M41 (a string split into characters)."""
    X, y, G = _data()
    G = G.rename(columns={"c": "christian"})
    cols = [columns] if isinstance(columns, str) else columns
    XG = pd.concat([X, G], axis=1)
    folds = _folds(len(y))
    scorer = make_bias_scorer("final", subgroup_columns=columns)
    got = cross_val_score(_FeaturesOnly(), XG, y, cv=folds, scoring=scorer, error_score="raise")
    want = _cv_reference(LogisticRegression(), X, y, G[cols], folds)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_scorer_thresholds_reach_the_fold():
    """Kills M39/M40: label_threshold and subgroup_threshold of the scorer are used."""
    rng = np.random.default_rng(5)
    n = 90
    X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)})
    target = 1 / (1 + np.exp(-(X["x"] + rng.normal(size=n))))
    frac = pd.DataFrame({"a": (np.arange(n) % 3) / 2.0, "b": ((np.arange(n) + 1) % 3) / 2.0})
    folds = _folds(n)
    scorer = make_bias_scorer("final", subgroups=frac, response_method="predict",
                              label_threshold=0.5, subgroup_threshold=0.5)
    got = cross_val_score(LinearRegression(), X, target, cv=folds, scoring=scorer,
                          error_score="raise")
    want = []
    for train, test in folds:
        s = LinearRegression().fit(X.iloc[train], target.iloc[train]).predict(X.iloc[test])
        yb = target.iloc[test].to_numpy() >= 0.5
        want.append(ref_score(yb, s, {c: frac[c].to_numpy()[test] >= 0.5 for c in frac}))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_scorer_pos_label_text_labels():
    """Kills M36: pos_label of the scorer reaches the fold's labels and the scores."""
    X, y, G = _data()
    text = np.where(y, "toxic", "ok")
    folds = _folds(len(y))
    scorer = make_bias_scorer("final", subgroups=G, pos_label="ok")
    got = cross_val_score(_FeaturesOnly(), X, text, cv=folds, scoring=scorer,
                          error_score="raise")
    # the positive class is "ok" (= not y): its scores are the negated decision function
    want = []
    for train, test in folds:
        s = LogisticRegression().fit(X.iloc[train][["x", "z"]], text[train]).decision_function(
            X.iloc[test][["x", "z"]])
        want.append(ref_score(~y[test], -s, {c: G[c].to_numpy()[test] for c in G}))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_both_subgroups_and_columns_refused():
    """Kills M46."""
    _, _, G = _data()
    with pytest.raises(ValueError, match="not both"):
        make_bias_scorer(subgroups=G, subgroup_columns=["a"])


def _one_class_cv_data():
    """Subgroup "rare" holds only negatives in every fold -> undefined Subgroup AUC."""
    X, y, G = _data()
    G = G.copy()
    G["rare"] = False
    G.loc[G.index[np.flatnonzero(~y)[:6]], "rare"] = True
    return X, y, G


@pytest.mark.parametrize("how", ["index", "routed"])
def test_nan_folds_warn_once_per_scorer(how):
    """Kills M7/M8 (a warning per NaN fold), M10 and M35 (no warning at all)."""
    X, y, G = _one_class_cv_data()
    folds = _folds(len(y))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        if how == "index":
            scorer = make_bias_scorer("final", subgroups=G)
            got = cross_val_score(_FeaturesOnly(), X, y, cv=folds, scoring=scorer)
            cross_val_score(_FeaturesOnly(), X, y, cv=folds, scoring=scorer)
        else:
            with sklearn.config_context(enable_metadata_routing=True):
                scorer = make_bias_scorer("final")
                got = cross_val_score(LogisticRegression(), X, y, cv=folds, scoring=scorer,
                                      params={"subgroups": G})
                cross_val_score(LogisticRegression(), X, y, cv=folds, scoring=scorer,
                                params={"subgroups": G})
    assert np.isnan(got).all()
    undefined = [r for r in record if issubclass(r.category, UndefinedMetricWarning)]
    assert len(undefined) == 1, [(r.filename[-20:], r.lineno, str(r.message)[-60:])
                                 for r in undefined]


def test_routed_scorer_omit_scores_the_fold():
    """Kills M45: undefined="omit" leaves the one-class subgroup out of the fold's score."""
    X, y, G = _one_class_cv_data()
    folds = _folds(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final", undefined="omit")
        with warnings.catch_warnings():
            warnings.simplefilter("error", UndefinedMetricWarning)
            got = cross_val_score(LogisticRegression(), X[["x", "z"]], y, cv=folds,
                                  scoring=scorer, params={"subgroups": G}, error_score="raise")
    want = []
    for train, test in folds:
        s = LogisticRegression().fit(X.iloc[train][["x", "z"]], y[train]).decision_function(
            X.iloc[test][["x", "z"]])
        Gt = {c: G[c].to_numpy()[test] for c in G}
        sub, bpsn, bnsp, overall = _aucs(y[test], s, {c: Gt[c] for c in "abc"})
        # rare (no positives): Subgroup AUC and BNSP AUC undefined, BPSN AUC defined
        r, yt = Gt["rare"], y[test]
        bp_r = [roc_auc_score(yt[(r & ~yt) | (~r & yt)], s[(r & ~yt) | (~r & yt)])] \
            if r.any() else []
        bn_r = []
        bias = np.mean([_power_mean_of(sub, -5), _power_mean_of(bpsn + bp_r, -5),
                        _power_mean_of(bnsp + bn_r, -5)])
        want.append(0.25 * overall + 0.75 * bias)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- metadata routing

def test_routed_scorer_weighted_and_sign():
    """Kills M43 (sign) and M44 (a routed weight silently dropped)."""
    X, y, G = _data()
    Xf = X[["x", "z"]]
    w = np.random.default_rng(4).uniform(0.2, 3.0, size=len(y))
    folds = _folds(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        model = LogisticRegression().set_fit_request(sample_weight=False)
        scorer = make_bias_scorer("final")
        with pytest.raises(Exception, match="sample_weight"):
            cross_validate(model, Xf, y, cv=folds, scoring=scorer,
                           params={"subgroups": G, "sample_weight": w}, error_score="raise")
        scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
        got = cross_validate(model, Xf, y, cv=folds, scoring=scorer,
                             params={"subgroups": G, "sample_weight": w},
                             error_score="raise")["test_score"]
    want = []
    for train, test in folds:
        s = LogisticRegression().fit(Xf.iloc[train], y[train]).decision_function(Xf.iloc[test])
        want.append(ref_score(y[test], s, {c: G[c].to_numpy()[test] for c in G}, w=w[test]))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_fold_scorer_weight_request():
    """Kills M26 (set_score_request() with no argument resets the request), M27 (a routed
    weight taken without a request) and M34 (the weight dropped)."""
    X, y, G = _data()
    w = np.random.default_rng(6).uniform(0.2, 3.0, size=len(y))
    folds = _folds(len(y))
    want = []
    for train, test in folds:
        s = LogisticRegression().fit(X.iloc[train][["x", "z"]], y[train]).decision_function(
            X.iloc[test][["x", "z"]])
        want.append(ref_score(y[test], s, {c: G[c].to_numpy()[test] for c in G}, w=w[test]))

    class Model(_FeaturesOnly):
        pass

    with sklearn.config_context(enable_metadata_routing=True):
        model = Model().set_fit_request(sample_weight=False)
        scorer = make_bias_scorer("final", subgroups=G)
        with pytest.raises(Exception, match="sample_weight"):
            cross_validate(model, X, y, cv=folds, scoring=scorer,
                           params={"sample_weight": w}, error_score="raise")
        scorer.set_score_request(sample_weight=True).set_score_request()
        got = cross_validate(model, X, y, cv=folds, scoring=scorer,
                             params={"sample_weight": w}, error_score="raise")["test_score"]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_routed_predict_classes():
    """Kills M9/M13 (routed predict: classes as scores, inverted) and M14 (booleans
    inverted): scores are 1.0 where the positive class is predicted."""
    X, y, G = _data()
    Xf = X[["x", "z"]]
    folds = _folds(len(y))
    for labels, pos_label in [(y, None), (np.where(y, "t", "f"), "f")]:
        with sklearn.config_context(enable_metadata_routing=True):
            scorer = make_bias_scorer("min_bnsp_auc", response_method="predict",
                                      pos_label=pos_label)
            got = cross_val_score(LogisticRegression(), Xf, labels, cv=folds, scoring=scorer,
                                  params={"subgroups": G}, error_score="raise")
        want = []
        for train, test in folds:
            pred = LogisticRegression().fit(Xf.iloc[train], labels[train]).predict(Xf.iloc[test])
            if pos_label is None:
                yt, s = y[test], pred.astype(float)
            else:
                yt, s = labels[test] == pos_label, (pred == pos_label).astype(float)
            want.append(ref_score(yt, s, {c: G[c].to_numpy()[test] for c in G}, "min_bnsp_auc"))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


class _ClassesWithoutClassesAttribute(sklearn.base.BaseEstimator):
    """A classifier that predicts its text classes but keeps no ``classes_`` (as some
    wrappers): with ``pos_label`` its predictions are read as classes."""

    def fit(self, X, y):
        self.model_ = LogisticRegression().fit(X[["x", "z"]], y)
        return self

    def predict(self, X):
        return self.model_.predict(X[["x", "z"]])


def test_regressor_predictions_with_pos_label_are_refused_not_scored_one_class():
    """Found by review (forty-second session): ``response_method="predict"`` with
    ``pos_label`` compared a regressor's numbers with pos_label, so every row scored 0.0 and
    every fold's AUC was 0.5 for any model (observed [0.5, 0.5, 0.5], expected an error or the
    predictions' own AUCs, 0.87 here). Predictions of more than one value besides pos_label
    are no binary classifier's classes: refused, naming the values and a row. A classifier
    without ``classes_`` that predicts its classes still scores as the reference."""
    X, y, G = _data()
    folds = _folds(len(y))
    for labels, positive in ((y.astype(int), 1), (np.where(y, 2, 1), 2)):
        scorer = make_bias_scorer("overall_auc", subgroups=G, response_method="predict",
                                  pos_label=positive)
        with pytest.raises(ValueError, match=r"pos_label=.*at row \d+.*regressor"):
            cross_val_score(LinearRegression(), X, labels, cv=folds, scoring=scorer,
                            error_score="raise")
        with sklearn.config_context(enable_metadata_routing=True):
            routed = make_bias_scorer("overall_auc", response_method="predict",
                                      pos_label=positive)
            with pytest.raises(ValueError, match="distinct values besides"):
                cross_val_score(LinearRegression(), X, labels, cv=folds, scoring=routed,
                                params={"subgroups": G}, error_score="raise")
    text = np.where(y, "toxic", "ok")
    scorer = make_bias_scorer("final", subgroups=G, response_method="predict", pos_label="toxic")
    got = cross_val_score(_ClassesWithoutClassesAttribute(), X, text, cv=folds, scoring=scorer,
                          error_score="raise")
    want = []
    for train, test in folds:
        pred = LogisticRegression().fit(X.iloc[train][["x", "z"]], text[train]).predict(
            X.iloc[test][["x", "z"]])
        want.append(ref_score(y[test], (pred == "toxic").astype(float),
                              {c: G[c].to_numpy()[test] for c in G}))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
