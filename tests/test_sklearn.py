"""fastbias.sklearn: scorers inside cross-validation and searches equal direct calls per fold."""
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.pipeline import make_pipeline

import fastbias
from fastbias.evaluator import BiasEvaluator
from fastbias.sklearn import (
    bias_score,
    final_metric_score,
    make_bias_scorer,
    positive_class_scores,
)
from tests.reference import brute_force_metrics
from tests.test_evaluator import assert_close, reference_final_metric

CV = StratifiedKFold(n_splits=3)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(4)
    n = 900
    groups = pd.DataFrame({"a": rng.random(n) < 0.25, "b": rng.random(n) < 0.2,
                           "c": rng.random(n) < 0.3})
    latent = rng.normal(size=n)
    y = latent + 0.8 * groups["a"].to_numpy() + rng.normal(size=n) > 0.5
    X = pd.DataFrame({"x1": latent + rng.normal(0, 0.5, n),
                      "x2": groups["a"].to_numpy() + rng.normal(0, 0.5, n),
                      "x3": rng.normal(size=n)})
    return X, y, groups


ROUTING_AVAILABLE = tuple(int(x) for x in sklearn.__version__.split(".")[:2]) >= (1, 4)


@pytest.fixture
def routing():
    if not ROUTING_AVAILABLE:
        pytest.skip("scorer metadata routing needs scikit-learn >= 1.4")
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def direct_fold_scores(estimator, params, X, y, groups, metric="final", w=None):
    """Refit each fold by hand and score it with BiasEvaluator(index=test)."""
    evaluator = BiasEvaluator(y, groups, sample_weight=w)
    out = []
    for train, test in CV.split(X, y):
        model = clone(estimator).set_params(**params).fit(X.iloc[train], y[train])
        scores = model.decision_function(X.iloc[test])
        out.append(evaluator.score(scores, metric, index=test))
    return out


def test_grid_search_with_routing_equals_direct_calls_per_fold(data, routing):
    X, y, groups = data
    grid = {"C": [0.01, 1.0]}
    search = GridSearchCV(LogisticRegression(), grid, scoring=make_bias_scorer(), cv=CV)
    search.fit(X, y, subgroups=groups)
    for k, params in enumerate(search.cv_results_["params"]):
        direct = direct_fold_scores(LogisticRegression(), params, X, y, groups)
        for i in range(CV.get_n_splits()):
            assert search.cv_results_[f"split{i}_test_score"][k] == pytest.approx(direct[i],
                                                                                  abs=1e-12)
    # and one fold against the brute-force reference formula
    train, test = next(CV.split(X, y))
    model = LogisticRegression(C=0.01).fit(X.iloc[train], y[train])
    s = model.decision_function(X.iloc[test])
    fold_groups = {g: groups[g].to_numpy()[test] for g in groups}
    assert_close(search.cv_results_["split0_test_score"][0],
                 reference_final_metric(y[test], s, fold_groups), tol=1e-9)


def test_randomized_search_and_cross_val_score_with_routing(data, routing):
    X, y, groups = data
    scorer = make_bias_scorer("min_bpsn_auc")
    search = RandomizedSearchCV(LogisticRegression(), {"C": [0.001, 0.1, 10.0]}, n_iter=2,
                                scoring=scorer, cv=CV, random_state=0)
    search.fit(X, y, subgroups=groups)
    for k, params in enumerate(search.cv_results_["params"]):
        direct = direct_fold_scores(LogisticRegression(), params, X, y, groups, "min_bpsn_auc")
        np.testing.assert_allclose([search.cv_results_[f"split{i}_test_score"][k]
                                    for i in range(3)], direct, rtol=0, atol=1e-12)
    values = cross_val_score(LogisticRegression(), X, y, scoring=scorer, cv=CV,
                             params={"subgroups": groups.to_numpy()})
    np.testing.assert_allclose(values, direct_fold_scores(LogisticRegression(), {}, X, y, groups,
                                                          "min_bpsn_auc"), rtol=0, atol=1e-12)


def test_sample_weight_is_routed_when_requested(data, routing):
    X, y, groups = data
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    # scikit-learn's set_score_request replaces the request: name subgroups again
    scorer = make_bias_scorer().set_score_request(subgroups=True, sample_weight=True)
    estimator = LogisticRegression().set_fit_request(sample_weight=False)
    res = cross_validate(estimator, X, y, scoring=scorer, cv=CV,
                         params={"subgroups": groups, "sample_weight": w})
    np.testing.assert_allclose(res["test_score"],
                               direct_fold_scores(LogisticRegression(), {}, X, y, groups, w=w),
                               rtol=0, atol=1e-12)


def test_routing_free_fallbacks_equal_direct_calls(data):
    X, y, groups = data
    routed = direct_fold_scores(LogisticRegression(), {}, X, y, groups)
    # 1. aligned by X.index (with a non-default index, to make the lookup matter)
    X2 = X.set_index(pd.Index(np.arange(len(X)) * 7 + 3))
    groups2 = groups.set_index(X2.index)[::-1]  # other order: rows are found by label
    by_index = cross_val_score(LogisticRegression(), X2, y, scoring=make_bias_scorer(
        subgroups=groups2), cv=CV)
    np.testing.assert_allclose(by_index, routed, rtol=0, atol=1e-12)
    # 2. subgroup columns carried in X; the model only sees the feature columns
    Xg = pd.concat([X, groups], axis=1)
    features = ColumnTransformer([("keep", "passthrough", list(X.columns))])
    model = make_pipeline(features, LogisticRegression())
    by_columns = cross_val_score(model, Xg, y, cv=CV,
                                 scoring=make_bias_scorer(subgroup_columns=list(groups.columns)))
    np.testing.assert_allclose(by_columns, routed, rtol=0, atol=1e-12)
    # in a search, alongside a built-in scorer
    search = GridSearchCV(model, {"logisticregression__C": [0.1, 1.0]}, cv=CV, refit="final",
                          scoring={"final": make_bias_scorer(subgroup_columns=list(groups.columns)),
                                   "auc": "roc_auc"}).fit(Xg, y)
    assert search.cv_results_["split0_test_final"][1] == pytest.approx(routed[0], abs=1e-12)


def test_string_labels_with_pos_label(data, routing):
    X, y, groups = data
    labels = np.where(y, "toxic", "ok")
    scorer = make_bias_scorer(pos_label="toxic", response_method="predict_proba")
    got = cross_val_score(LogisticRegression(), X, labels, scoring=scorer, cv=CV,
                          params={"subgroups": groups})
    np.testing.assert_allclose(got, direct_fold_scores(LogisticRegression(), {}, X, y, groups),
                               rtol=0, atol=1e-9)
    fallback = make_bias_scorer(pos_label="toxic", response_method="predict_proba",
                                subgroups=groups)
    np.testing.assert_allclose(cross_val_score(LogisticRegression(), X, labels, cv=CV,
                                               scoring=fallback), got, rtol=0, atol=1e-12)


@pytest.mark.parametrize("score", [bias_score, final_metric_score])
def test_pos_label_keeps_the_labels_rows_checked_against_the_subgroups(score):
    """With ``pos_label`` the labels were turned into an array before the evaluator saw
    them: a y_true Series in another row order than the subgroups was paired by position,
    silently (min subgroup AUC 0.9147 against 0.9136), where 0/1 labels raise."""
    rng = np.random.default_rng(0)
    n = 200
    y = rng.random(n) < 0.5
    s = rng.random(n) + 0.5 * y
    g = rng.random(n) < 0.4
    subgroups = pd.DataFrame({"g": g})
    perm = rng.permutation(n)
    shuffled = pd.Series(np.where(y, "toxic", "ok")[perm], index=perm)
    kwargs = {"metric": "min_subgroup_auc"} if score is bias_score else {}
    with pytest.raises(ValueError, match="y_true and subgroups are pandas objects with "
                                         "different indexes"):
        score(shuffled, s[perm], subgroups=subgroups, pos_label="toxic", **kwargs)
    # the same rows in the subgroups' order: the aligned rows' numbers
    # both ways of saying which class is positive: refused, as everywhere (the threshold was
    # ignored before)
    with pytest.raises(ValueError, match="pass either pos_label or label_threshold, not both"):
        score(shuffled.sort_index(), s, subgroups=subgroups, pos_label="toxic",
              label_threshold=0.5, **kwargs)
    aligned = shuffled.sort_index()
    got = score(aligned, s, subgroups=subgroups, pos_label="toxic", **kwargs)
    want = brute_force_metrics(y, s, g)
    if score is bias_score:
        assert got == pytest.approx(want["subgroup_auc"], abs=1e-15)
    else:
        assert got == pytest.approx(reference_final_metric(y, s, {"g": g}), abs=1e-12)


def test_positive_class_scores_orientation(data):
    X, y, _ = data
    labels = np.where(y, "toxic", "ok")  # classes_ = ["ok", "toxic"]
    model = LogisticRegression().fit(X, labels)
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(positive_class_scores(model, X, "predict_proba"), proba[:, 1])
    np.testing.assert_array_equal(positive_class_scores(model, X, "predict_proba", "ok"),
                                  proba[:, 0])
    np.testing.assert_array_equal(positive_class_scores(model, X, ("decision_function",), "ok"),
                                  -model.decision_function(X))
    with pytest.raises(ValueError, match="pos_label='maybe'"):
        positive_class_scores(model, X, "predict_proba", "maybe")
    with pytest.raises(ValueError, match="response_method"):
        positive_class_scores(model, X, "transform")


def test_metric_functions_equal_brute_force(data):
    _, y, groups = data
    s = np.round(np.random.default_rng(1).random(len(y)) + 0.3 * y, 2)
    masks = {g: groups[g].to_numpy() for g in groups}
    assert_close(final_metric_score(y, s, subgroups=groups), reference_final_metric(y, s, masks))
    expected = min(brute_force_metrics(y, s, m)["bnsp_auc"] for m in masks.values())
    assert_close(bias_score(y, s, subgroups=groups, metric="min_bnsp_auc"), expected)


def test_scorer_errors(data):
    X, y, groups = data
    with sklearn.config_context(enable_metadata_routing=False), \
            pytest.raises(RuntimeError, match="enable_metadata_routing=True"):
        make_bias_scorer()
    with pytest.raises(ValueError, match="metric must be one of"):
        make_bias_scorer("auc", subgroups=groups)
    with pytest.raises(ValueError, match="not both"):
        make_bias_scorer(subgroups=groups, subgroup_columns=["a"])
    with pytest.raises(TypeError, match="DataFrame or Series indexed like X"):
        make_bias_scorer(subgroups=groups.to_numpy())
    with pytest.raises(ValueError, match="undefined must be one of"):
        make_bias_scorer(subgroups=groups, undefined="skip")
    model = LogisticRegression().fit(X, y)
    with pytest.raises(TypeError, match="needs X to be a pandas"):
        make_bias_scorer(subgroups=groups)(model, X.to_numpy(), y)
    with pytest.raises(KeyError, match="not in the index of subgroups"):
        make_bias_scorer(subgroups=groups.iloc[:10])(model, X, y)
    with pytest.raises(KeyError, match=r"\['zz'\] are not columns of X"):
        make_bias_scorer(subgroup_columns=["zz"])(model, X, y)


def test_small_folds_nan_policy(data):
    X, y, groups = data
    rare = groups.assign(rare=False)
    rare.iloc[:3, rare.columns.get_loc("rare")] = True  # absent from most folds
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        propagated = cross_val_score(LogisticRegression(), X, y, cv=CV,
                                     scoring=make_bias_scorer(subgroups=rare))
    assert np.isnan(propagated).any()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        omitted = cross_val_score(LogisticRegression(), X, y, cv=CV,
                                  scoring=make_bias_scorer(subgroups=rare, undefined="omit"))
    assert np.isfinite(omitted).all()
    # nan_policy= is the deprecated name of undefined=: same scores, with a DeprecationWarning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        with pytest.warns(DeprecationWarning, match="make_bias_scorer"):
            old = make_bias_scorer(subgroups=rare, nan_policy="omit")
        np.testing.assert_array_equal(
            cross_val_score(LogisticRegression(), X, y, cv=CV, scoring=old), omitted)
        with pytest.warns(DeprecationWarning, match="bias_score"):
            bias_score(y, X["x1"].to_numpy(),
                       subgroups=rare, nan_policy="omit")


def _undefined_warnings(record):
    return [r for r in record if issubclass(r.category, fastbias.UndefinedMetricWarning)]


@pytest.mark.parametrize("how", ["routed", "aligned", "columns"])
def test_a_search_says_once_why_folds_are_nan_and_nothing_under_omit(data, how, request):
    """Unshuffled folds leave a rare subgroup one-class on some folds: a search of 3
    candidates x 3 folds used to print the same warning on every NaN fold; now the scorer
    says it once (naming the subgroup and the cells), and nothing under undefined='omit'."""
    X, y, groups = data
    rare = groups.assign(rare=False)
    rare.iloc[:4, rare.columns.get_loc("rare")] = True  # absent from the 2nd and 3rd folds
    Xr = X.assign(**{c: rare[c] for c in rare.columns})
    features = make_pipeline(ColumnTransformer([("x", "passthrough", list(X.columns))]),
                             LogisticRegression())
    grid = {"logisticregression__C": [0.01, 0.1, 1.0]}

    def search(undefined):
        if how == "routed":
            request.getfixturevalue("routing")
            scorer = make_bias_scorer("final", undefined=undefined)
            fit = {"subgroups": rare}
        elif how == "aligned":
            scorer, fit = make_bias_scorer("final", subgroups=rare, undefined=undefined), {}
        else:
            scorer = make_bias_scorer("final", subgroup_columns=list(rare.columns),
                                      undefined=undefined)
            fit = {}
        gs = GridSearchCV(features, grid, scoring=scorer, cv=CV)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            gs.fit(Xr, y, **fit)
        return gs, _undefined_warnings(record)

    propagated, said = search("propagate")
    splits = np.array([propagated.cv_results_[f"split{i}_test_score"] for i in range(3)])
    assert np.isnan(splits[1:]).all() and np.isfinite(splits[0]).all()  # 6 NaN scores
    assert len(said) == 1, [str(r.message) for r in said]
    message = str(said[0].message)
    assert "rare (subgroup_auc)" in message and "a fold of 300 rows" in message
    assert "undefined='omit'" in message and "StratifiedKFold(shuffle=True)" in message

    omitted, said = search("omit")
    assert said == []
    assert np.isfinite(omitted.cv_results_["mean_test_score"]).all()
    # omit equals the final metric over the subgroups defined on each fold
    test = next(iter(CV.split(Xr, y)))[1]
    model = clone(features).set_params(**omitted.cv_results_["params"][0]).fit(
        Xr.iloc[np.setdiff1d(np.arange(len(y)), test)], np.delete(y, test))
    direct = BiasEvaluator(y, rare, undefined="omit").score(
        model.decision_function(Xr.iloc[test]), "final", index=test)
    assert omitted.cv_results_["split0_test_score"][0] == pytest.approx(direct, abs=1e-12)


@pytest.mark.parametrize("multimetric", [False, True])
def test_routing_free_scorer_takes_part_in_metadata_routing(multimetric):
    """With routing on, a sample_weight routed to the routing-free scorer was ignored without a
    word (found by review): a weighted search scored unweighted. Now, as scikit-learn's own
    scorers: refused until set_score_request says; True gives each fold's weighted score
    (checked against bias_score on the same folds), False the unweighted one."""
    from sklearn.exceptions import UnsetMetadataPassedError

    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "g": (rng.random(n) < 0.3).astype(float)})
    y = (X["a"] + rng.normal(size=n) > 0).astype(int)
    w = rng.uniform(0.1, 5.0, n)

    def scores(scorer):
        scoring = {"bias": scorer} if multimetric else scorer
        result = cross_validate(LogisticRegression().set_fit_request(sample_weight=True), X, y,
                                scoring=scoring, params={"sample_weight": w}, cv=3)
        return result["test_bias" if multimetric else "test_score"]

    expected = {}
    for weighted in (True, False):
        expected[weighted] = []
        for train, test in StratifiedKFold(3).split(X, y):
            model = LogisticRegression().fit(X.iloc[train], y.iloc[train], sample_weight=w[train])
            expected[weighted].append(bias_score(
                y.iloc[test].to_numpy(), model.decision_function(X.iloc[test]),
                subgroups=X.iloc[test][["g"]], sample_weight=w[test] if weighted else None))
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final", subgroup_columns=["g"])
        with pytest.raises(UnsetMetadataPassedError, match="_FoldScorer.set_score_request"):
            scores(scorer)
        assert scorer.set_score_request(sample_weight=True) is scorer
        scorer.set_score_request()  # (left out: unchanged, as scikit-learn's own)
        assert scorer.get_metadata_routing().score.requests == {"sample_weight": True}
        np.testing.assert_allclose(scores(scorer), expected[True], rtol=1e-12)
        np.testing.assert_allclose(scores(scorer.set_score_request(sample_weight=False)),
                                   expected[False], rtol=1e-12)
    assert expected[True] != pytest.approx(expected[False], rel=1e-3)  # the weights matter
