"""scikit-learn and boosting integrations with weights and groups: an independent review's
tests (2026-11-28, thirty-ninth session). Every number is checked against a reference written
here: sklearn.metrics.roc_auc_score on the fold's own rows (with sample_weight where weighted),
the Jigsaw power means by hand; routed, index-aligned and column scorers, GridSearchCV, folds
with an empty or one-class subgroup, LightGBM and XGBoost every round with weights.

Found by review (failed before its fix): a routed scorer (``make_bias_scorer("final")``
without subgroups) requested only ``subgroups``, so a ``sample_weight`` routed in the same
``cross_validate`` call for a weighted fit was dropped by the scorer without a word (folds
[0.738765, 0.629487, 0.750017], the unweighted values; weighted [0.736603, 0.636843,
0.761243]): now refused until ``set_score_request`` says whether to take it, as by
scikit-learn's own scorers.
"""
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_validate

import fastbias
from fastbias.sklearn import make_bias_scorer

SCORES = ["final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"]


# ----------------------------------------------------------------------------- reference

def _auc(y, s, w):
    if y.size == 0 or y.all() or not y.any():
        return np.nan
    return roc_auc_score(y, s, sample_weight=w)


def ref_scores(y, s, G, w=None, power=-5.0, ow=0.25):
    """All five scores, by hand: y bool (n,), s (n,), G bool (n, k), w (n,) or None."""
    y = np.asarray(y).astype(bool)
    s = np.asarray(s, dtype=np.float64)
    G = np.asarray(G).astype(bool)
    w = None if w is None else np.asarray(w, dtype=np.float64)
    sel = (lambda m: None) if w is None else (lambda m: w[m])
    cols = {"sub": [], "bpsn": [], "bnsp": []}
    for j in range(G.shape[1]):
        m = G[:, j]
        cols["sub"].append(_auc(y[m], s[m], sel(m)))
        bp = (m & ~y) | (~m & y)
        cols["bpsn"].append(_auc(y[bp], s[bp], sel(bp)))
        bn = (m & y) | (~m & ~y)
        cols["bnsp"].append(_auc(y[bn], s[bn], sel(bn)))
    overall = _auc(y, s, w)

    def pm(v):
        v = np.asarray(v)
        return np.mean(v ** power) ** (1 / power) if not np.isnan(v).any() else np.nan
    final = ow * overall + (1 - ow) / 3 * (pm(cols["sub"]) + pm(cols["bpsn"]) + pm(cols["bnsp"]))

    def mn(v):
        return np.nan if np.isnan(v).any() else min(v)
    return {"final": final, "overall_auc": overall, "min_subgroup_auc": mn(cols["sub"]),
            "min_bpsn_auc": mn(cols["bpsn"]), "min_bnsp_auc": mn(cols["bnsp"])}


def close(a, b, tol=1e-12):
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol


# ----------------------------------------------------------------------------- data

def make_data(n=300, seed=7, index=None):
    rng = np.random.default_rng(seed)
    G = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.25,
                      "c": rng.random(n) < 0.35})
    latent = rng.normal(size=n)
    y = (latent + 0.7 * G["a"].to_numpy() + rng.normal(size=n) > 0.3).astype(int)
    X = pd.DataFrame({"x1": latent + rng.normal(0, 0.7, n),
                      "x2": G["a"].to_numpy() + rng.normal(0, 0.5, n),
                      "x3": rng.normal(size=n)})
    w = rng.uniform(0.2, 3.0, n)
    if index is not None:
        X.index = G.index = index
    return X, y, G, w


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


CV = StratifiedKFold(3, shuffle=True, random_state=1)


def _per_fold_refs(cvres, X, y, G, w, metric, train=False):
    """Reference for each fold from the fitted estimator and the fold's indices."""
    refs = []
    for est, tr, te in zip(cvres["estimator"], cvres["indices"]["train"],
                           cvres["indices"]["test"]):
        rows = tr if train else te
        s = est.decision_function(X.iloc[rows])
        refs.append(ref_scores(y[rows], s, G.to_numpy()[rows],
                               None if w is None else w[rows])[metric])
    return refs


# ----------------------------------------------------------------------------- routed scorer

@pytest.mark.parametrize("metric", SCORES)
def test_routed_cross_validate_test_and_train_scores_equal_reference(routing, metric):
    X, y, G, _ = make_data()
    scorer = make_bias_scorer(metric)
    res = cross_validate(LogisticRegression(), X, y, cv=CV, scoring=scorer,
                         params={"subgroups": G}, return_estimator=True, return_indices=True,
                         return_train_score=True)
    for got, ref in zip(res["test_score"], _per_fold_refs(res, X, y, G, None, metric)):
        assert close(got, ref), (metric, got, ref)
    for got, ref in zip(res["train_score"], _per_fold_refs(res, X, y, G, None, metric, True)):
        assert close(got, ref), (metric, got, ref)


def test_routed_weighted_fit_and_score_equal_weighted_reference(routing):
    X, y, G, w = make_data(index=pd.Index([f"r{i}" for i in range(300)][::-1]))
    scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
    est = LogisticRegression().set_fit_request(sample_weight=True)
    res = cross_validate(est, X, y, cv=CV, scoring=scorer,
                         params={"subgroups": G, "sample_weight": w}, return_estimator=True,
                         return_indices=True)
    refs = _per_fold_refs(res, X, y, G, w, "final")
    unweighted = _per_fold_refs(res, X, y, G, None, "final")
    for got, ref, unw in zip(res["test_score"], refs, unweighted):
        assert close(got, ref, 1e-12), (got, ref)
        assert not close(got, unw, 1e-9)  # the weights make a difference here


def test_routed_pandas_y_and_weights_sharing_a_shuffled_index(routing):
    idx = pd.Index(np.random.default_rng(3).permutation(300) * 7 + 1000)
    X, y, G, w = make_data(index=idx)
    ys, ws = pd.Series(y, index=idx), pd.Series(w, index=idx)
    scorer = make_bias_scorer("min_bpsn_auc").set_score_request(subgroups=True,
                                                                sample_weight=True)
    res = cross_validate(LogisticRegression().set_fit_request(sample_weight=False), X, ys,
                         cv=CV, scoring=scorer,
                         params={"subgroups": G, "sample_weight": ws}, return_estimator=True,
                         return_indices=True)
    for got, ref in zip(res["test_score"], _per_fold_refs(res, X, y, G, w, "min_bpsn_auc")):
        assert close(got, ref), (got, ref)


def test_routed_weights_with_another_row_order_are_refused(routing):
    X, y, G, w = make_data(index=pd.RangeIndex(300))
    ws = pd.Series(w, index=pd.RangeIndex(300)).iloc[::-1]  # same labels, reversed order
    scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
    with pytest.raises(ValueError, match="index"):
        cross_validate(LogisticRegression().set_fit_request(sample_weight=True), X, y, cv=CV,
                       scoring=scorer, error_score="raise",
                       params={"subgroups": G, "sample_weight": ws})


def test_routed_subgroups_as_numpy_with_pandas_y_of_another_index(routing):
    idx = pd.Index([f"k{i}" for i in range(300)])
    X, y, G, _ = make_data(index=idx)
    res = cross_validate(LogisticRegression(), X, pd.Series(y, index=idx), cv=CV,
                         scoring=make_bias_scorer("final"), params={"subgroups": G.to_numpy()},
                         return_estimator=True, return_indices=True)
    for got, ref in zip(res["test_score"], _per_fold_refs(res, X, y, G, None, "final")):
        assert close(got, ref), (got, ref)


def test_routed_weighted_request_without_subgroups_is_a_clear_error(routing):
    X, y, G, w = make_data()
    scorer = make_bias_scorer("final").set_score_request(sample_weight=True)  # subgroups lost
    with pytest.raises((TypeError, ValueError), match="subgroups"):
        cross_validate(LogisticRegression().set_fit_request(sample_weight=True), X, y, cv=CV,
                       scoring=scorer, error_score="raise",
                       params={"subgroups": G, "sample_weight": w})


def test_routed_dict_subgroups_are_not_silently_misaligned(routing):
    X, y, G, _ = make_data()
    groups = {c: G[c].to_numpy() for c in G}
    with pytest.raises((TypeError, ValueError)):
        cross_validate(LogisticRegression(), X, y, cv=CV, scoring=make_bias_scorer("final"),
                       error_score="raise", params={"subgroups": groups})


def test_routed_scorer_refuses_a_routed_sample_weight_it_was_not_told_to_take(routing):
    """With routing on, a sample_weight routed in the same call to a weighted fit is refused
    by the routed scorer until set_score_request says whether to take it (it was dropped
    without a word: folds fitted weighted, scored unweighted), as scikit-learn's own scorers
    refuse it."""
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y, G, w = make_data()
    with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
        cross_validate(LogisticRegression().set_fit_request(sample_weight=True), X, y, cv=CV,
                       scoring=make_bias_scorer("final"), error_score="raise",
                       params={"subgroups": G, "sample_weight": w})


def test_routed_scorer_explicitly_unweighted_scores_unweighted(routing):
    X, y, G, w = make_data()
    scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=False)
    res = cross_validate(LogisticRegression().set_fit_request(sample_weight=True), X, y, cv=CV,
                         scoring=scorer, params={"subgroups": G, "sample_weight": w},
                         return_estimator=True, return_indices=True)
    for got, ref in zip(res["test_score"], _per_fold_refs(res, X, y, G, None, "final")):
        assert close(got, ref), (got, ref)


def test_grid_search_picks_the_highest_mean_final_and_it_equals_reference(routing):
    X, y, G, _ = make_data()
    search = GridSearchCV(LogisticRegression(), {"C": [1e-3, 1.0], "fit_intercept": [True, False]},
                          cv=CV, scoring=make_bias_scorer("final"), refit=True)
    search.fit(X, y, subgroups=G)
    means = search.cv_results_["mean_test_score"]
    assert search.best_index_ == int(np.nanargmax(means))
    # recompute each candidate's folds by hand
    for k, params in enumerate(search.cv_results_["params"]):
        for f, (tr, te) in enumerate(CV.split(X, y)):
            model = LogisticRegression(**params).fit(X.iloc[tr], y[tr])
            ref = ref_scores(y[te], model.decision_function(X.iloc[te]), G.to_numpy()[te])
            got = search.cv_results_[f"split{f}_test_score"][k]
            assert close(got, ref["final"], 1e-12), (k, f, got, ref)


def test_fold_with_empty_subgroup_is_nan_with_one_warning(routing):
    X, y, G, _ = make_data()
    G = G.copy()
    G["rare"] = False
    G.loc[G.index[:2], "rare"] = True  # only rows 0 and 1: absent from most folds
    cv = KFold(3)  # unshuffled: rows 0,1 in fold 0 only
    scorer = make_bias_scorer("final")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = cross_validate(LogisticRegression(), X, y, cv=cv, scoring=scorer,
                             params={"subgroups": G})
    # fold 0 holds rows 0 and 1 (one of each class here): defined; folds 1, 2: absent -> NaN
    assert y[0] != y[1]
    assert not np.isnan(res["test_score"][0]) and np.isnan(res["test_score"][1:]).all()
    ours = [r for r in rec if issubclass(r.category, fastbias.UndefinedMetricWarning)]
    assert len(ours) == 1, [str(r.message) for r in rec]
    assert "rare" in str(ours[0].message)
    # omit: the other subgroups' score, exactly
    res = cross_validate(LogisticRegression(), X, y, cv=cv,
                         scoring=make_bias_scorer("final", undefined="omit"),
                         params={"subgroups": G}, return_estimator=True, return_indices=True)
    for got, est, te in zip(res["test_score"], res["estimator"], res["indices"]["test"]):
        keep = [c for c in G if G[c].to_numpy()[te].any()
                and not np.isnan(ref_scores(y[te], est.decision_function(X.iloc[te]),
                                            G[[c]].to_numpy()[te])["final"])]
        ref = ref_scores(y[te], est.decision_function(X.iloc[te]), G[keep].to_numpy()[te])
        assert close(got, ref["final"]), (got, ref, keep)


# ----------------------------------------------------------------------------- routing-free

@pytest.mark.parametrize("way", ["aligned", "columns"])
def test_routing_free_shuffled_index_matches_reference(way):
    idx = pd.Index(np.random.default_rng(5).permutation(300).astype(str))
    X, y, G, _ = make_data(index=idx)
    if way == "aligned":
        scorer = make_bias_scorer("final", subgroups=G.sample(frac=1.0, random_state=2))
        Xf, est = X, LogisticRegression()
    else:
        from sklearn.compose import ColumnTransformer
        from sklearn.pipeline import make_pipeline
        Xf = pd.concat([X, G.add_prefix("g_")], axis=1)
        scorer = make_bias_scorer("final", subgroup_columns=[f"g_{c}" for c in G])
        est = make_pipeline(ColumnTransformer([("x", "passthrough", list(X.columns))]),
                            LogisticRegression())
    res = cross_validate(est, Xf, pd.Series(y, index=idx), cv=CV, scoring=scorer,
                         return_estimator=True, return_indices=True)
    for got, e, te in zip(res["test_score"], res["estimator"], res["indices"]["test"]):
        ref = ref_scores(y[te], e.decision_function(Xf.iloc[te]), G.to_numpy()[te])["final"]
        assert close(got, ref), (got, ref)


def test_routing_free_weights_routed_take_effect_when_requested(routing):
    X, y, G, w = make_data()
    scorer = make_bias_scorer("min_subgroup_auc", subgroups=G).set_score_request(
        sample_weight=True)
    res = cross_validate(LogisticRegression().set_fit_request(sample_weight=False), X, y,
                         cv=CV, scoring=scorer, params={"sample_weight": w}, return_estimator=True,
                         return_indices=True)
    for got, ref in zip(res["test_score"],
                        _per_fold_refs(res, X, y, G, w, "min_subgroup_auc")):
        assert close(got, ref), (got, ref)


# ----------------------------------------------------------------------------- boosting

def _boost_sets():
    X, y, G, w = make_data(n=400, seed=11)
    return (X.iloc[:250].to_numpy(), y[:250], G.iloc[:250], w[:250],
            X.iloc[250:].to_numpy(), y[250:], G.iloc[250:].reset_index(drop=True), w[250:])


@pytest.mark.parametrize("weighted_ev", [False, True])
def test_lightgbm_train_every_round_equals_reference_with_dataset_weights(weighted_ev):
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    ev = fastbias.BiasEvaluator(yv, Gv, sample_weight=wv if weighted_ev else None)
    dt = lgb.Dataset(Xt, yt, weight=wt)
    dv = lgb.Dataset(Xv, yv, weight=wv, reference=dt)
    rec = {}
    bst = lgb.train({"objective": "binary", "metric": "None", "verbose": -1, "num_leaves": 4,
                     "min_data_in_leaf": 5}, dt, 5, valid_sets=[dv], valid_names=["v"],
                    feval=lightgbm_metric(ev, metrics=SCORES),
                    callbacks=[lgb.record_evaluation(rec)])
    for r in range(5):
        s = bst.predict(Xv, num_iteration=r + 1)
        ref = ref_scores(yv, s, Gv.to_numpy(), wv if weighted_ev else None)
        for m in SCORES:
            assert close(rec["v"][m][r], ref[m], 1e-12), (r, m, rec["v"][m][r], ref[m])


def test_lgbm_classifier_eval_metric_equals_reference_each_round():
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    ev = fastbias.BiasEvaluator(yv, Gv)
    clf = lgb.LGBMClassifier(n_estimators=4, num_leaves=4, min_child_samples=5, verbose=-1,
                             metric="None")
    clf.fit(Xt, yt, sample_weight=wt, eval_set=[(Xv, yv)], eval_sample_weight=[wv],
            eval_metric=lightgbm_metric(ev, metrics=["final", "min_bnsp_auc"]))
    res = clf.evals_result_["valid_0"]
    for r in range(4):
        s = clf.predict_proba(Xv, num_iteration=r + 1)[:, 1]
        ref = ref_scores(yv, s, Gv.to_numpy())  # eval weights not used (documented)
        assert close(res["final"][r], ref["final"]), (r, res["final"][r], ref)
        assert close(res["min_bnsp_auc"][r], ref["min_bnsp_auc"])


@pytest.mark.parametrize("weighted_ev", [False, True])
def test_xgboost_train_every_round_equals_reference_with_dmatrix_weights(weighted_ev):
    xgb = pytest.importorskip("xgboost")
    from fastbias.boosting import xgboost_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    ev = fastbias.BiasEvaluator(yv, Gv, sample_weight=wv if weighted_ev else None)
    dt, dv = xgb.DMatrix(Xt, yt, weight=wt), xgb.DMatrix(Xv, yv, weight=wv)
    rec = {}
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 2}, dt, 5,
                    evals=[(dv, "v")], custom_metric=xgboost_metric(ev, metrics=SCORES),
                    maximize=True, evals_result=rec, verbose_eval=False)
    for r in range(5):
        s = bst.predict(dv, iteration_range=(0, r + 1))
        ref = ref_scores(yv, s, Gv.to_numpy(), wv if weighted_ev else None)
        for m in SCORES:
            assert close(rec["v"][m][r], ref[m], 6e-7), (r, m, rec["v"][m][r], ref[m])


def test_xgb_classifier_eval_set_weights_are_passed_and_not_used():
    xgb = pytest.importorskip("xgboost")
    from fastbias.boosting import xgboost_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    ev = fastbias.BiasEvaluator(yv, Gv)
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=2,
                            eval_metric=xgboost_metric(ev, metrics=["min_bpsn_auc", "final"]))
    clf.fit(Xt, yt, sample_weight=wt, eval_set=[(Xv, yv)], sample_weight_eval_set=[wv],
            verbose=False)
    res = clf.evals_result()["validation_0"]
    assert "final" in res and "min_bpsn_auc" not in res  # one number per round: the last
    for r in range(4):
        s = clf.predict_proba(Xv, iteration_range=(0, r + 1))[:, 1]
        ref = ref_scores(yv, s, Gv.to_numpy())  # unweighted, as documented
        assert close(res["final"][r], ref["final"], 6e-7), (r, res["final"][r], ref)


def test_lightgbm_cv_folds_each_need_their_own_evaluator_or_error():
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    ev = fastbias.BiasEvaluator(yt, Gt)  # the whole training set: no fold has its size
    with pytest.raises(ValueError, match="no BiasEvaluator for an evaluation set"):
        lgb.cv({"objective": "binary", "metric": "None", "verbose": -1, "num_leaves": 4},
               lgb.Dataset(Xt, yt), 2, nfold=3, stratified=False,
               feval=lightgbm_metric(ev))


# ----------------------------------------------------------------------------- more routed forms

def test_routed_single_subgroup_series_and_fractional_nan_memberships(routing):
    X, y, G, _ = make_data()
    rng = np.random.default_rng(9)
    frac = pd.DataFrame({c: np.where(G[c], rng.uniform(0.5, 1.0, 300),
                                     rng.uniform(0.0, 0.49, 300)) for c in G})
    frac.iloc[rng.choice(300, 30, replace=False), 1] = np.nan  # not annotated: background
    for subgroups, threshold, ref_G in [(G["a"], None, G[["a"]].to_numpy()),
                                        (frac, 0.5, G.to_numpy() & frac.notna().to_numpy())]:
        res = cross_validate(LogisticRegression(), X, y, cv=CV,
                             scoring=make_bias_scorer("final", subgroup_threshold=threshold),
                             params={"subgroups": subgroups}, return_estimator=True,
                             return_indices=True)
        for got, e, te in zip(res["test_score"], res["estimator"], res["indices"]["test"]):
            ref = ref_scores(y[te], e.decision_function(X.iloc[te]), ref_G[te])["final"]
            assert close(got, ref), (got, ref)


def test_search_score_on_held_out_rows_with_routed_subgroups(routing):
    X, y, G, _ = make_data(n=400, seed=4)
    tr, te = np.arange(250), np.arange(250, 400)
    search = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=CV,
                          scoring=make_bias_scorer("min_bnsp_auc"))
    search.fit(X.iloc[tr], y[tr], subgroups=G.iloc[tr])
    got = search.score(X.iloc[te], y[te], subgroups=G.iloc[te])
    s = search.best_estimator_.decision_function(X.iloc[te])
    assert close(got, ref_scores(y[te], s, G.to_numpy()[te])["min_bnsp_auc"])


def test_lightgbm_cv_with_one_evaluator_per_fold_equals_reference_mean():
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    Xt, yt, Gt, wt, Xv, yv, Gv, wv = _boost_sets()
    folds = list(KFold(3, shuffle=True, random_state=0).split(Xt))
    evs = [fastbias.BiasEvaluator(yt[te], Gt.iloc[te].reset_index(drop=True)) for _, te in folds]
    out = lgb.cv({"objective": "binary", "metric": "None", "verbose": -1, "num_leaves": 4,
                  "min_data_in_leaf": 5}, lgb.Dataset(Xt, yt), 3, folds=folds,
                 feval=lightgbm_metric(evs, metrics=["final", "min_subgroup_auc"]),
                 return_cvbooster=True)
    boosters = out["cvbooster"].boosters
    for r in range(3):
        for m in ["final", "min_subgroup_auc"]:
            refs = [ref_scores(yt[te], b.predict(Xt[te], num_iteration=r + 1),
                               Gt.to_numpy()[te])[m] for b, (_, te) in zip(boosters, folds)]
            assert close(out[f"valid {m}-mean"][r], np.mean(refs), 1e-12), (r, m)
