"""LightGBM / XGBoost bias metrics: the values recorded each round equal direct calls."""
import inspect

import numpy as np
import pytest

from fastbias.boosting import lightgbm_metric, xgboost_metric
from fastbias.evaluator import BiasEvaluator
from tests.reference import brute_force_metrics
from tests.test_evaluator import assert_close, reference_final_metric

ROUNDS = 25


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(12)
    n = 2_400
    groups = rng.random((n, 3)) < np.array([0.15, 0.1, 0.25])
    X = np.column_stack([rng.normal(size=(n, 4)), groups.astype(float)])
    logit = X[:, 0] - 0.7 * X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + 0.8 * groups[:, 0] - 0.5
    y = rng.random(n) < 1 / (1 + np.exp(-logit))
    train, valid = np.arange(0, 1_600), np.arange(1_600, n)
    return X, y, groups, train, valid


def valid_evaluator(data):
    _, y, groups, _, valid = data
    return BiasEvaluator(y[valid], groups[valid])


def check_first_round_against_reference(data, scores, recorded_final, recorded_bpsn, tol):
    _, y, groups, _, valid = data
    masks = {f"g{j}": groups[valid, j] for j in range(groups.shape[1])}
    assert_close(recorded_final, reference_final_metric(y[valid], scores, masks), tol=tol)
    worst = min(brute_force_metrics(y[valid], scores, m)["bpsn_auc"] for m in masks.values())
    assert_close(recorded_bpsn, worst, tol=tol)


# --------------------------------------------------------------------------- LightGBM

def test_lightgbm_train_feval_equals_direct_calls_and_drives_early_stopping(data):
    lgb = pytest.importorskip("lightgbm")
    X, y, _, train, valid = data
    ev = valid_evaluator(data)
    dtrain = lgb.Dataset(X[train], y[train].astype(float))
    dvalid = lgb.Dataset(X[valid], y[valid].astype(float), reference=dtrain)
    history = {}
    params = {"objective": "binary", "num_leaves": 7, "learning_rate": 0.2, "verbose": -1,
              "num_threads": 1, "metric": "None", "seed": 0, "deterministic": True}
    booster = lgb.train(params, dtrain, num_boost_round=ROUNDS, valid_sets=[dvalid],
                        valid_names=["valid"], feval=lightgbm_metric(ev),
                        callbacks=[lgb.record_evaluation(history),
                                   lgb.early_stopping(5, first_metric_only=True, verbose=False)])
    final = history["valid"]["final"]
    bpsn = history["valid"]["min_bpsn_auc"]
    assert len(final) == len(bpsn) >= 6
    # after early stopping LightGBM keeps the trees up to the best iteration only
    kept = booster.current_iteration()
    assert kept == booster.best_iteration
    for i in range(kept):
        scores = booster.predict(X[valid], num_iteration=i + 1)
        assert final[i] == pytest.approx(ev.final_metric(scores), abs=1e-12)
        assert bpsn[i] == pytest.approx(ev.score(scores, "min_bpsn_auc"), abs=1e-12)
    check_first_round_against_reference(data, booster.predict(X[valid], num_iteration=1),
                                        final[0], bpsn[0], tol=1e-9)
    # early stopping followed the first (final) metric: best = first maximum
    assert booster.best_iteration == int(np.argmax(final)) + 1
    assert len(final) == ROUNDS or len(final) == booster.best_iteration + 5


def test_lightgbm_sklearn_api_and_several_evaluation_sets(data):
    lgb = pytest.importorskip("lightgbm")
    X, y, groups, train, valid = data
    ev_valid = valid_evaluator(data)
    ev_train = BiasEvaluator(y[train], groups[train])
    model = lgb.LGBMClassifier(n_estimators=8, num_leaves=7, learning_rate=0.2, verbose=-1,
                               n_jobs=1, random_state=0)
    sets = [(X[train], y[train]), (X[valid], y[valid])]
    if "eval_X" in inspect.signature(model.fit).parameters:  # LightGBM >= 4.7
        eval_args = {"eval_X": tuple(x for x, _ in sets), "eval_y": tuple(t for _, t in sets)}
    else:
        eval_args = {"eval_set": sets}
    model.fit(X[train], y[train], eval_metric=lightgbm_metric([ev_valid, ev_train],
                                                               metrics=["final"]), **eval_args)
    recorded = model.evals_result_
    assert sorted(recorded) == ["valid_0", "valid_1"]
    for i in range(8):
        for name, rows, ev in (("valid_0", train, ev_train), ("valid_1", valid, ev_valid)):
            scores = model.predict_proba(X[rows], num_iteration=i + 1)[:, 1]
            assert recorded[name]["final"][i] == pytest.approx(ev.final_metric(scores), abs=1e-12)


def test_lightgbm_unknown_evaluation_set_is_an_error(data):
    lgb = pytest.importorskip("lightgbm")
    X, y, _, train, _ = data
    dtrain = lgb.Dataset(X[train], y[train].astype(float))
    with pytest.raises(ValueError, match="no BiasEvaluator for an evaluation set of 1600 rows"):
        lgb.train({"objective": "binary", "verbose": -1, "num_threads": 1}, dtrain,
                  num_boost_round=2, valid_sets=[dtrain], feval=lightgbm_metric(
                      valid_evaluator(data)))


# --------------------------------------------------------------------------- XGBoost

def test_xgboost_train_custom_metric_equals_direct_calls(data):
    xgb = pytest.importorskip("xgboost")
    X, y, _, train, valid = data
    ev = valid_evaluator(data)
    dtrain = xgb.DMatrix(X[train], label=y[train])
    dvalid = xgb.DMatrix(X[valid], label=y[valid])
    history = {}
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "eta": 0.3,
                         "nthread": 1, "disable_default_eval_metric": 1, "seed": 0},
                        dtrain, num_boost_round=ROUNDS, evals=[(dvalid, "valid")],
                        custom_metric=xgboost_metric(ev), evals_result=history,
                        early_stopping_rounds=5, maximize=True, verbose_eval=False)
    final = history["valid"]["final"]
    bpsn = history["valid"]["min_bpsn_auc"]
    assert len(final) >= 6
    for i in range(len(final)):
        scores = booster.predict(dvalid, iteration_range=(0, i + 1))
        # XGBoost records custom metrics printed with six decimals
        assert final[i] == pytest.approx(ev.final_metric(scores), abs=5.1e-7)
        assert bpsn[i] == pytest.approx(ev.score(scores, "min_bpsn_auc"), abs=5.1e-7)
    check_first_round_against_reference(data, booster.predict(dvalid, iteration_range=(0, 1)),
                                        final[0], bpsn[0], tol=5.1e-7)
    # the unrounded values the callable returns equal direct calls exactly
    scores = booster.predict(dvalid, iteration_range=(0, 3))
    direct = dict(xgboost_metric(ev)(scores, dvalid))
    assert direct == {"final": ev.final_metric(scores),
                      "min_bpsn_auc": ev.score(scores, "min_bpsn_auc")}
    # maximize=True and the final metric last: the best iteration is its first maximum
    assert booster.best_iteration == int(np.argmax(final))


def test_xgboost_sklearn_api(data):
    xgb = pytest.importorskip("xgboost")
    X, y, _, train, valid = data
    ev = valid_evaluator(data)
    stop = xgb.callback.EarlyStopping(rounds=5, metric_name="final", maximize=True)
    model = xgb.XGBClassifier(n_estimators=ROUNDS, max_depth=3, learning_rate=0.3, n_jobs=1,
                              random_state=0, eval_metric=xgboost_metric(ev), callbacks=[stop])
    model.fit(X[train], y[train], eval_set=[(X[valid], y[valid])], verbose=False)
    recorded = model.evals_result()["validation_0"]["final"]
    for i in range(len(recorded)):
        scores = model.predict_proba(X[valid], iteration_range=(0, i + 1))[:, 1]
        assert recorded[i] == pytest.approx(ev.final_metric(scores), abs=5.1e-7)
    assert model.best_iteration == int(np.argmax(recorded))


# --------------------------------------------------------------------------- plain calls

def test_callables_without_the_libraries(data):
    X, y, _, _, valid = data
    ev = valid_evaluator(data)
    scores = np.round(X[valid, 0], 1)
    lgb_values = lightgbm_metric(ev, metrics=["final", "overall_auc"])(y[valid], scores)
    assert lgb_values == [("final", ev.final_metric(scores), True),
                          ("overall_auc", ev.score(scores, "overall_auc"), True)]
    assert xgboost_metric(ev)(y[valid], scores) == ev.final_metric(scores)  # the last metric
    assert xgboost_metric(ev, metrics=["final", "min_bnsp_auc"]).__name__ == "min_bnsp_auc"
    assert xgboost_metric(ev, metrics=["final", "min_bnsp_auc"])(y[valid], scores) == \
        ev.score(scores, "min_bnsp_auc")
    with pytest.raises(ValueError, match="labels of an evaluation set of 800 rows are those "
                       "of a BiasEvaluator of that size with the classes reversed"):
        lightgbm_metric(ev)(~y[valid], scores)
    one_other = y[valid].copy()
    one_other[3] = ~one_other[3]
    with pytest.raises(ValueError, match="labels of an evaluation set of 800 rows differ"):
        lightgbm_metric(ev)(one_other, scores)
    with pytest.raises(ValueError, match="one score per row"):
        lightgbm_metric(ev)(y[valid], np.column_stack([scores, scores]))
    with pytest.raises(ValueError, match="metric must be one of"):
        lightgbm_metric(ev, metrics=["auc"])
    with pytest.raises(TypeError, match="BiasEvaluator"):
        xgboost_metric([object()])


# --------------------------------------------------------------------------- binding

def _twin_sets(data):
    """Two evaluation sets with the same rows and labels but different subgroups."""
    X, y, groups, _, valid = data
    ev_a = BiasEvaluator(y[valid], groups[valid])
    ev_b = BiasEvaluator(y[valid], groups[valid][:, ::-1] & (np.arange(valid.size) % 2 == 0)[:, None])
    return ev_a, ev_b


def test_lightgbm_twin_evaluation_sets_are_ambiguous_unless_bound(data):
    lgb = pytest.importorskip("lightgbm")
    X, y, _, train, valid = data
    ev_a, ev_b = _twin_sets(data)
    params = {"objective": "binary", "num_leaves": 7, "verbose": -1, "num_threads": 1,
              "metric": "None", "seed": 0, "deterministic": True}
    dtrain = lgb.Dataset(X[train], y[train].astype(float))
    d_a = lgb.Dataset(X[valid], y[valid].astype(float), reference=dtrain)
    d_b = lgb.Dataset(X[valid], y[valid].astype(float), reference=dtrain)
    with pytest.raises(ValueError, match="cannot be told from the data.*pairs"):
        lgb.train(params, dtrain, num_boost_round=2, valid_sets=[d_a, d_b],
                  feval=lightgbm_metric([ev_a, ev_b]))
    history = {}
    booster = lgb.train(params, dtrain, num_boost_round=3, valid_sets=[d_a, d_b],
                        valid_names=["a", "b"], feval=lightgbm_metric([(d_a, ev_a), (d_b, ev_b)]),
                        callbacks=[lgb.record_evaluation(history)])
    for i in range(3):
        scores = booster.predict(X[valid], num_iteration=i + 1)
        assert history["a"]["final"][i] == pytest.approx(ev_a.final_metric(scores), abs=1e-12)
        assert history["b"]["final"][i] == pytest.approx(ev_b.final_metric(scores), abs=1e-12)
    assert history["a"]["final"] != history["b"]["final"]


def test_equal_evaluators_for_twin_sets_are_not_ambiguous(data):
    _, y, groups, _, valid = data
    ev = BiasEvaluator(y[valid], groups[valid])
    twin = BiasEvaluator(y[valid], groups[valid])
    metric = lightgbm_metric([ev, twin])
    scores = np.linspace(0, 1, valid.size)
    assert metric(y[valid].astype(float), scores)[0][1] == ev.final_metric(scores)


def test_xgboost_twin_evaluation_sets_bound_by_pairs(data):
    xgb = pytest.importorskip("xgboost")
    X, y, _, train, valid = data
    ev_a, ev_b = _twin_sets(data)
    dtrain = xgb.DMatrix(X[train], label=y[train])
    d_a = xgb.DMatrix(X[valid], label=y[valid])
    d_b = xgb.DMatrix(X[valid], label=y[valid])
    params = {"objective": "binary:logistic", "max_depth": 3, "nthread": 1, "seed": 0}
    with pytest.raises(ValueError, match="cannot be told from the data"):
        xgb.train(params, dtrain, num_boost_round=2, evals=[(d_a, "a"), (d_b, "b")],
                  custom_metric=xgboost_metric([ev_a, ev_b], metrics=["final"]))
    history = {}
    booster = xgb.train(params, dtrain, num_boost_round=3, evals=[(d_a, "a"), (d_b, "b")],
                        custom_metric=xgboost_metric({d_a: ev_a, d_b: ev_b}, metrics=["final"]),
                        evals_result=history, verbose_eval=False)
    scores = booster.predict(d_a, iteration_range=(0, 3))
    assert history["a"]["final"][-1] == pytest.approx(ev_a.final_metric(scores), abs=1e-6)
    assert history["b"]["final"][-1] == pytest.approx(ev_b.final_metric(scores), abs=1e-6)
