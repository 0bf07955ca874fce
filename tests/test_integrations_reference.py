"""The integration layers (sklearn, boosting, compat, evaluator) against independent
references (an independent review's tests): sklearn.metrics.roc_auc_score per cell, scipy's Mann-Whitney U,
and the Kaggle kernel's / authors' formulas written out here (never fastbias)."""
import warnings

import numpy as np
import pandas as pd
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    KFold,
    StratifiedKFold,
    cross_validate,
)
from sklearn.pipeline import make_pipeline  # noqa: E402

import fastbias  # noqa: E402
from fastbias.compat import (  # noqa: E402
    calculate_overall_auc,
    compute_bias_metrics_for_model,
    compute_bias_metrics_for_models,
    get_final_metric,
)
from fastbias.sklearn import make_bias_scorer  # noqa: E402

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]


# ----------------------------------------------------------------------------- references

def _auc(y, s, w=None):
    y = np.asarray(y, bool)
    if y.all() or (~y).all():
        return np.nan
    return roc_auc_score(y, s, sample_weight=w)


def ref_table(y, s, groups, w=None):
    y, s = np.asarray(y, bool), np.asarray(s, float)
    out = {}
    for name in groups.columns:
        g = np.asarray(groups[name], bool)
        cells = {"subgroup_auc": g, "bpsn_auc": (g & ~y) | (~g & y),
                 "bnsp_auc": (g & y) | (~g & ~y)}
        out[name] = {m: _auc(y[c], s[c], None if w is None else np.asarray(w)[c])
                     for m, c in cells.items()}
    return pd.DataFrame(out).T


def _pm(v, p):
    v = np.asarray(v, float)
    return (np.sum(v ** p) / len(v)) ** (1 / p)


def ref_final(y, s, groups, w=None, p=-5, ow=0.25):
    t = ref_table(y, s, groups, w)
    return ow * _auc(y, s, w) + (1 - ow) * np.mean([_pm(t[m], p) for m in AUCS])


def ref_score(metric, y, s, groups, w=None):
    if metric == "final":
        return ref_final(y, s, groups, w)
    if metric == "overall_auc":
        return _auc(y, s, w)
    return ref_table(y, s, groups, w)[metric[len("min_"):]].min()


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(1)
    n = 300
    idx = rng.permutation(np.arange(1000, 1000 + n))  # non-default, shuffled, unique
    X = pd.DataFrame({"x": rng.normal(size=n), "x2": rng.normal(size=n)}, index=idx)
    y = pd.Series((X["x"] + rng.normal(size=n) > 0).astype(int), index=idx)
    S = pd.DataFrame({"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.4}, index=idx)
    w = pd.Series(rng.integers(1, 4, n).astype(float), index=idx)
    return X, y, S, w


def _check_folds(result, X, y, S, metric, w=None):
    for k, (est, test) in enumerate(zip(result["estimator"], result["indices"]["test"])):
        s = est.decision_function(X.iloc[test])
        ref = ref_score(metric, y.iloc[test].to_numpy(), s, S.iloc[test],
                        None if w is None else w.iloc[test].to_numpy())
        assert np.isclose(result["test_score"][k], ref), (metric, k)


# ----------------------------------------------------------------------------- sklearn: pins

@pytest.mark.parametrize("cv", [KFold(3, shuffle=True, random_state=0),
                                StratifiedKFold(3, shuffle=True, random_state=0)])
@pytest.mark.parametrize("metric", ["final", "min_bpsn_auc", "min_bnsp_auc"])
def test_routing_free_scorers_score_each_folds_own_rows(frame, cv, metric):
    X, y, S, _ = frame
    shuffled_S = S.sample(frac=1, random_state=3)  # other row order: looked up by label
    r = cross_validate(LogisticRegression(), X, y, cv=cv, error_score="raise",
                       scoring=make_bias_scorer(metric, subgroups=shuffled_S),
                       return_estimator=True, return_indices=True)
    _check_folds(r, X, y, S, metric)
    Xc = pd.concat([X, S], axis=1)
    model = make_pipeline(ColumnTransformer([("f", "passthrough", ["x", "x2"])]),
                          LogisticRegression())
    r = cross_validate(model, Xc, y, cv=cv, error_score="raise",
                       scoring=make_bias_scorer(metric, subgroup_columns=["a", "b"]),
                       return_estimator=True, return_indices=True)
    _check_folds(r, Xc, y, S, metric)


def test_routed_scorer_with_weights_and_grid_search(frame):
    X, y, S, w = frame
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
        est = LogisticRegression().set_fit_request(sample_weight=True)
        cv = KFold(3, shuffle=True, random_state=0)
        r = cross_validate(est, X, y, cv=cv, scoring=scorer, error_score="raise",
                           params={"subgroups": S, "sample_weight": w},
                           return_estimator=True, return_indices=True)
        _check_folds(r, X, y, S, "final", w)
        cv = StratifiedKFold(3, shuffle=True, random_state=0)
        gs = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, cv=cv, error_score="raise",
                          scoring=make_bias_scorer("min_bpsn_auc")).fit(X, y, subgroups=S)
    for ci, C in enumerate([0.01, 1.0]):
        for k, (tr, te) in enumerate(cv.split(X, y)):
            s = LogisticRegression(C=C).fit(X.iloc[tr], y.iloc[tr]).decision_function(X.iloc[te])
            ref = ref_score("min_bpsn_auc", y.iloc[te].to_numpy(), s, S.iloc[te])
            assert np.isclose(gs.cv_results_[f"split{k}_test_score"][ci], ref)


# ----------------------------------------------------------------------------- sklearn: defects

def test_aligned_scorer_ignores_y_labels_that_sklearn_pairs_by_position(frame):
    """Found by review: the routing-free scorer finds the fold's subgroups by X.index, but then
    checks them against y's index. sklearn pairs X and y by position, so a y Series with a
    default index (very common: pd.Series(y_array)) is valid input; fastbias raises
    'y_true and subgroups are pandas objects with different indexes', which
    cross_val_score's default error_score=np.nan turns into all-NaN scores."""
    X, y, S, _ = frame
    y_default = y.reset_index(drop=True)  # same values, same positions as X
    cv = KFold(3, shuffle=True, random_state=0)
    r = cross_validate(LogisticRegression(), X, y_default, cv=cv, error_score="raise",
                       scoring=make_bias_scorer("final", subgroups=S),
                       return_estimator=True, return_indices=True)
    _check_folds(r, X, y, S, "final")


def test_columns_scorer_ignores_y_labels_that_sklearn_pairs_by_position(frame):
    """Found by review: same refusal on the subgroup_columns path (memberships are X's own columns)."""
    X, y, S, _ = frame
    Xc = pd.concat([X, S], axis=1)
    model = make_pipeline(ColumnTransformer([("f", "passthrough", ["x", "x2"])]),
                          LogisticRegression())
    cv = KFold(3, shuffle=True, random_state=0)
    r = cross_validate(model, Xc, y.reset_index(drop=True), cv=cv, error_score="raise",
                       scoring=make_bias_scorer("final", subgroup_columns=["a", "b"]),
                       return_estimator=True, return_indices=True)
    _check_folds(r, Xc, y, S, "final")


# ----------------------------------------------------------------------------- evaluator

@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(5)
    n = 400
    y = rng.random(n) < 0.4
    s = np.round(np.where(y, 0.6, 0.4) + rng.normal(0, 0.3, n), 1)  # many ties
    S = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.3,
                      "c": rng.random(n) < 0.3})
    w = rng.integers(1, 4, n).astype(float)
    fold = rng.permutation(n)[:150]
    return y, s, S, w, fold


def test_weighted_fold_scores_and_scores_many_equal_reference(rows):
    y, s, S, w, fold = rows
    ev = fastbias.BiasEvaluator(y, S, sample_weight=w)
    M = np.c_[s, -s, s[::-1]][fold]
    names = ["final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"]
    table = ev.scores_many(M, names, index=fold)
    for j in range(M.shape[1]):
        for m in names:
            ref = ref_score(m, y[fold], M[:, j], S.iloc[fold], w[fold])
            assert np.isclose(table.iloc[j][m], ref), (j, m)
    mask = np.zeros(len(y), bool)
    mask[fold] = True
    assert np.isclose(ev.score(s[mask], index=mask), ref_final(y[mask], s[mask], S[mask], w[mask]))


def test_evaluator_final_with_intersections_is_over_subgroups_alone(rows):
    y, s, S, _, fold = rows
    ev = fastbias.BiasEvaluator(y, S, intersections=2)
    inter = S.copy()
    for i, j in [("a", "b"), ("a", "c"), ("b", "c")]:
        inter[f"{i} & {j}"] = S[i] & S[j]
    got = ev.scores(s[fold], index=fold)
    assert np.isclose(got["final"], ref_final(y[fold], s[fold], S.iloc[fold]))
    assert np.isclose(got["min_bpsn_auc"],
                      ref_score("min_bpsn_auc", y[fold], s[fold], inter.iloc[fold]))


def test_metrics_many_final_metric_with_intersections_matches_evaluator(rows):
    """Found by review: BiasEvaluator(intersections=2).metrics_many(...).final_metric() puts the
    intersection rows into the power means (0.6530 vs 0.6665 here), whereas
    ev.final_metric / ev.scores / fastbias.final_metric(ev.metrics(s)) keep the
    competition's metric over the subgroups alone. Silent."""
    y, s, S, _, _ = rows
    ev = fastbias.BiasEvaluator(y, S, intersections=2)
    expected = ref_final(y, s, S)
    assert np.isclose(ev.final_metric(s), expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = ev.metrics_many({"m": s}).final_metric()["m"]
    assert np.isclose(got, expected)


def test_metrics_many_final_metric_uses_evaluator_settings(rows):
    """Found by review: metrics_many(...).final_metric() ignores the evaluator's power and
    overall_weight (uses -5 / 0.25), so it disagrees with ev.final_metric on the same
    scores. Silent."""
    y, s, S, _, _ = rows
    ev = fastbias.BiasEvaluator(y, S, power=-2, overall_weight=0.5)
    expected = ref_final(y, s, S, p=-2, ow=0.5)
    assert np.isclose(ev.final_metric(s), expected)
    assert np.isclose(ev.metrics_many({"m": s}).final_metric()["m"], expected)


# ----------------------------------------------------------------------------- compat

def _kernel_table(df, subgroups, model, label):
    def auc(d):
        try:
            return roc_auc_score(d[label], d[model])
        except ValueError:
            return np.nan
    records = []
    for g in subgroups:
        records.append({
            "subgroup": g, "subgroup_size": len(df[df[g]]), "subgroup_auc": auc(df[df[g]]),
            "bpsn_auc": auc(df[(df[g] & ~df[label]) | (~df[g] & df[label])]),
            "bnsp_auc": auc(df[(df[g] & df[label]) | (~df[g] & ~df[label])])})
    return pd.DataFrame(records).sort_values("subgroup_auc", ascending=True)


def _kernel_final(bias_df, overall, p=-5, w=0.25):
    def power_mean(series, p):
        return (sum(np.power(series, p)) / len(series)) ** (1 / p)
    return w * overall + (1 - w) * np.average([power_mean(bias_df[m], p) for m in AUCS])


def test_compat_equals_kernel_with_nan_empty_and_repeated_subgroups():
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1, 0, 1], bool)
    s = np.array([.1, .4, .35, .8, .7, .9, .2, .6, .3, .5])
    df = pd.DataFrame({"target": y, "m": s,
                       "a": np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], bool),
                       "onecls": np.array([1, 1, 0, 0, 0, 0, 1, 0, 0, 0], bool),
                       "empty": np.zeros(10, bool),
                       "b": np.array([0, 0, 1, 1, 1, 1, 1, 1, 0, 0], bool)})
    subs = ["onecls", "a", "empty", "b", "a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = compute_bias_metrics_for_model(df, subs, "m", "target")
    pd.testing.assert_frame_equal(got, _kernel_table(df, subs, "m", "target"),
                                  check_dtype=False)


def test_compat_final_and_aegs_equal_kernel_and_authors_code():
    from scipy.stats import mannwhitneyu
    rng = np.random.default_rng(3)
    n = 300
    y = rng.random(n) < 0.4
    s = np.round(np.where(y, 0.6, 0.4) + rng.normal(0, 0.3, n), 1)
    S = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.3})
    df = pd.concat([pd.DataFrame({"target": y, "m": s}), S], axis=1)
    df.index = rng.permutation(n) + 77
    table = compute_bias_metrics_for_model(df, ["a", "b"], "m", "target")
    overall = calculate_overall_auc(df, "m")
    assert np.isclose(overall, roc_auc_score(y, s))
    kernel = _kernel_table(df, ["a", "b"], "m", "target")
    assert np.isclose(get_final_metric(table, overall), _kernel_final(kernel, overall))
    out = compute_bias_metrics_for_models(df, ["a", "b"], ["m"], "target")

    def nmwu(x1, x2):
        u, _ = mannwhitneyu(x1, x2, alternative="less")
        return u / (len(x1) * len(x2))
    for g in ["a", "b"]:
        m = S[g].to_numpy()
        row = out.set_index("subgroup").loc[g]
        assert np.isclose(row["m_negative_aeg"], 0.5 - nmwu(s[~m & ~y], s[m & ~y]))
        assert np.isclose(row["m_positive_aeg"], 0.5 - nmwu(s[~m & y], s[m & y]))
        assert row["subset_size"] == int(m.sum())


# ----------------------------------------------------------------------------- boosting

def _boost_data():
    rng = np.random.default_rng(2)

    def make(n):
        X = rng.normal(size=(n, 3))
        y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
        return X, y, pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.3})
    return make(300), make(200), make(150)


def test_lightgbm_train_reports_each_eval_sets_own_scores():
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    (Xt, yt, St), (Xa, ya, Sa), (Xb, yb, Sb) = _boost_data()
    evs = [fastbias.BiasEvaluator(y, S) for y, S in [(yt, St), (ya, Sa), (yb, Sb)]]
    dt = lgb.Dataset(Xt, yt)
    sets = [dt, lgb.Dataset(Xa, ya, reference=dt), lgb.Dataset(Xb, yb, reference=dt)]
    rec = {}
    bst = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 4}, dt, 4,
                    valid_sets=sets, valid_names=["t", "a", "b"],
                    feval=lightgbm_metric(evs[::-1]), callbacks=[lgb.record_evaluation(rec)])
    for name, (X, y, S) in zip("tab", [(Xt, yt, St), (Xa, ya, Sa), (Xb, yb, Sb)]):
        s = bst.predict(X, raw_score=True)
        assert np.isclose(rec[name]["final"][-1], ref_final(y, s, S))
        assert np.isclose(rec[name]["min_bpsn_auc"][-1], ref_score("min_bpsn_auc", y, s, S))


def test_xgboost_train_and_classifier_report_each_eval_sets_own_scores():
    xgb = pytest.importorskip("xgboost")
    from fastbias.boosting import xgboost_metric
    (Xt, yt, St), (Xa, ya, Sa), (Xb, yb, Sb) = _boost_data()
    eva, evb = fastbias.BiasEvaluator(ya, Sa), fastbias.BiasEvaluator(yb, Sb)
    clf = xgb.XGBClassifier(n_estimators=4, max_depth=2, eval_metric=xgboost_metric([evb, eva]))
    clf.fit(Xt, yt, eval_set=[(Xa, ya), (Xb, yb)], verbose=False)
    res = clf.evals_result()
    for k, (X, y, S) in enumerate([(Xa, ya, Sa), (Xb, yb, Sb)]):
        ref = ref_final(y, clf.predict_proba(X)[:, 1], S)
        assert abs(res[f"validation_{k}"]["final"][-1] - ref) < 1e-6


def test_lightgbm_first_metric_only_follows_the_bias_metric_with_metric_none():
    """Found by review: lightgbm_metric's docstring said early stopping with
    first_metric_only=True follows the first bias metric; with LightGBM's default params its
    built-in binary_logloss comes first. The docstring now says to set metric='None', with
    which the first metric evaluated is fastbias's."""
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    assert '"metric": "None"' in lightgbm_metric.__doc__
    (Xt, yt, _), (Xa, ya, Sa), _ = _boost_data()
    dt = lgb.Dataset(Xt, yt)
    rec = {}
    lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 4, "metric": "None"}, dt, 3,
              valid_sets=[lgb.Dataset(Xa, ya, reference=dt)],
              feval=lightgbm_metric(fastbias.BiasEvaluator(ya, Sa)),
              callbacks=[lgb.record_evaluation(rec),
                         lgb.early_stopping(2, first_metric_only=True, verbose=False)])
    assert list(rec["valid_0"])[0] == "final"


def test_lightgbm_sklearn_api_same_size_eval_sets_are_refused_saying_why():
    """Found by review: under LGBMClassifier.fit LightGBM passes the metric its own copy of
    the labels, so (y, evaluator) pairs cannot bind two evaluation sets of the same size and
    labels; the error's only advice had been Dataset pairs 'given to train()'. It is still
    refused (binding by call order could silently swap evaluators), and says why and what
    to do."""
    lgb = pytest.importorskip("lightgbm")
    from fastbias.boosting import lightgbm_metric
    rng = np.random.default_rng(9)
    (Xt, yt, _), (Xa, ya, Sa), _ = _boost_data()
    S2 = pd.DataFrame({"a": rng.random(len(ya)) < 0.3, "b": rng.random(len(ya)) < 0.3})
    Xa2, ya2 = Xa + rng.normal(size=Xa.shape), ya.copy()
    eva, ev2 = fastbias.BiasEvaluator(ya, Sa), fastbias.BiasEvaluator(ya2, S2)
    clf = lgb.LGBMClassifier(n_estimators=3, num_leaves=4, verbose=-1)
    with pytest.raises(ValueError, match="scikit-learn APIs .* pass the metric copies of the "
                                         "labels"):
        clf.fit(Xt, yt, eval_set=[(Xa, ya), (Xa2, ya2)],
                eval_metric=lightgbm_metric([(ya, eva), (ya2, ev2)]))