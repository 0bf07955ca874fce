"""BiasEvaluator and the boosting callbacks: an independent review's tests (2026-11-27).

An own brute-force reference (pair counting, ties 1/2, weights, the final metric from its
definition), edge tests, and tests of what the review found (each failed before its fix):
the evaluator kept the caller's bool labels and weights (changed in place, later scores
changed with them, or an internal error); the boosting callbacks did not compare a bound or
paired set's labels; NaN scores without the warning (or error) their policy asks for.
"""
import threading
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import BiasEvaluator
from fastbias.boosting import lightgbm_metric, xgboost_metric
from fastbias.validate.errors import UndefinedMetricWarning

METRICS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")


# --------------------------------------------------------------------------- own reference

def _auc(sp, wp, sn, wn):
    if len(sp) == 0 or len(sn) == 0:
        return np.nan
    num = den = 0.0
    for a, wa in zip(sp, wp):
        for b, wb in zip(sn, wn):
            den += wa * wb
            num += wa * wb * (1.0 if a > b else 0.5 if a == b else 0.0)
    return num / den if den > 0 else np.nan


def ref_table(y, s, groups, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    out = {}
    for name, g in groups.items():
        g = np.asarray(g, bool)
        out[name] = {
            "subgroup_auc": _auc(s[g & y], w[g & y], s[g & ~y], w[g & ~y]),
            "bpsn_auc": _auc(s[~g & y], w[~g & y], s[g & ~y], w[g & ~y]),
            "bnsp_auc": _auc(s[g & y], w[g & y], s[~g & ~y], w[~g & ~y]),
        }
    return out


def ref_overall(y, s, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    return _auc(s[y], w[y], s[~y], w[~y])


def ref_final(y, s, groups, w=None, p=-5.0, ow=0.25):
    t = ref_table(y, s, groups, w)
    means = [np.mean(np.array([t[g][m] for g in t]) ** p) ** (1 / p) for m in METRICS]
    return ow * ref_overall(y, s, w) + (1 - ow) * np.mean(means)


def _case(seed=1, n=60, levels=6, weighted=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    groups = {"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.35, "c": rng.random(n) < 0.5}
    s = rng.integers(0, levels, n) / levels          # many ties
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    return y, groups, s, w


def _sub(groups, idx):
    return {k: v[idx] for k, v in groups.items()}


# --------------------------------------------------------------------------- passing edge tests

@pytest.mark.parametrize("weighted", [False, True])
def test_scores_and_folds_equal_own_brute_force(weighted):
    y, groups, s, w = _case(weighted=weighted)
    ev = BiasEvaluator(y, groups, sample_weight=w)
    assert ev.final_metric(s) == pytest.approx(ref_final(y, s, groups, w), abs=1e-12)
    t = ev.metrics(s)
    r = ref_table(y, s, groups, w)
    for g in groups:
        for m in METRICS:
            assert t.loc[g, m] == pytest.approx(r[g][m], abs=1e-12)
    rng = np.random.default_rng(0)
    for idx in (np.arange(0, 60, 2), np.arange(60)[::-1][:45], rng.permutation(60)[:40]):
        wf = None if w is None else w[idx]
        assert ev.final_metric(s[idx], index=idx) == pytest.approx(
            ref_final(y[idx], s[idx], _sub(groups, idx), wf), abs=1e-12)
    mask = np.arange(60) % 3 != 0
    wf = None if w is None else w[mask]
    assert ev.final_metric(s[mask], index=mask) == pytest.approx(
        ref_final(y[mask], s[mask], _sub(groups, mask), wf), abs=1e-12)


def test_index_forms_agree():
    y, groups, s, _ = _case(seed=3, n=60)
    ev = BiasEvaluator(y, groups)
    idx = np.array([40, 5, 17, 33, 2, 59, 21, 8, 44, 12, 50, 27, 36, 9, 55, 1, 3, 30])
    expected = ref_final(y[idx], s[idx], _sub(groups, idx))
    for form in (idx, list(idx), tuple(idx), idx.astype(np.int32), idx.astype(np.uint16),
                 pd.Index(idx), pd.Series(idx), pd.array(idx, dtype="Int64"),
                 pd.Categorical(idx), np.array(list(idx), dtype=object)):
        assert ev.final_metric(s[idx], index=form) == pytest.approx(expected, abs=1e-12)


def test_labelled_evaluator_refuses_label_index_and_misaligned_scores():
    y, groups, s, _ = _case(seed=4, n=40)
    labels = [f"r{i}" for i in range(40)]
    ev = BiasEvaluator(pd.Series(y, index=labels), pd.DataFrame(groups, index=labels))
    idx = np.arange(0, 40, 2)
    with pytest.raises(TypeError, match="pandas Index"):
        ev.final_metric(s[idx], index=pd.Index(labels)[idx])
    with pytest.raises(ValueError, match="different indexes"):
        ev.final_metric(pd.Series(s, index=labels[::-1]))
    got = ev.final_metric(pd.Series(s[idx], index=np.array(labels)[idx]), index=idx)
    assert got == pytest.approx(ref_final(y[idx], s[idx], _sub(groups, idx)), abs=1e-12)


@pytest.mark.parametrize("bad, error, match", [
    (np.array([2 ** 63 - 1]), ValueError, "outside"),
    ([3, 4, 3], ValueError, "duplicate row: 3 at position 2"),
    (np.array([1.0, 2.0]), TypeError, "integer row positions"),
    (slice(0, 5), TypeError, "slice"),
])
def test_bad_index_errors(bad, error, match):
    y, groups, s, _ = _case(n=40)
    ev = BiasEvaluator(y, groups)
    n = 1 if not isinstance(bad, (list, np.ndarray)) else len(bad)
    with pytest.raises(error, match=match):
        ev.final_metric(s[:n], index=bad)


def test_power_limits_and_zero_auc():
    y, groups, s, _ = _case(seed=5, n=40)
    t = ref_table(y, s, groups)
    o = ref_overall(y, s)

    def combo(f):
        return 0.25 * o + 0.75 * np.mean([f([t[g][m] for g in t]) for m in METRICS])

    assert BiasEvaluator(y, groups, power=np.inf).final_metric(s) == pytest.approx(combo(max))
    assert BiasEvaluator(y, groups, power=-np.inf).final_metric(s) == pytest.approx(combo(min))
    assert BiasEvaluator(y, groups, power=0).final_metric(s) == pytest.approx(
        combo(lambda v: np.exp(np.mean(np.log(v)))))
    assert BiasEvaluator(y, groups).final_metric(np.where(y, 0.2, 0.8)) == 0.0


def test_scores_changed_in_place_are_not_stale():
    y, groups, s, _ = _case(seed=6, n=60)
    ev = BiasEvaluator(y, groups)
    idx = np.arange(0, 60, 2)
    buf = s[idx].copy()
    ev.final_metric(buf, index=idx)
    buf[:] = buf[::-1].copy()
    assert ev.final_metric(buf, index=idx) == pytest.approx(
        ref_final(y[idx], buf, _sub(groups, idx)), abs=1e-12)
    idx[:] = np.arange(1, 60, 2)          # the index array changed in place too
    assert ev.final_metric(s[idx], index=idx) == pytest.approx(
        ref_final(y[idx], s[idx], _sub(groups, idx)), abs=1e-12)


def test_two_threads_on_one_evaluator_with_evicting_fold_cache():
    rng = np.random.default_rng(7)
    n = 3000
    y = rng.random(n) < 0.3
    groups = {f"g{i}": rng.random(n) < 0.2 for i in range(4)}
    ev = BiasEvaluator(y, groups, sample_weight=rng.random(n), fold_cache_size=1, n_jobs=1)
    folds = [np.flatnonzero(rng.random(n) < 0.5) for _ in range(3)]
    S = [rng.integers(0, 40, n) / 40 for _ in range(3)]
    expected = {(i, j): ev.final_metric(S[j][folds[i]], index=folds[i])
                for i in range(3) for j in range(3)}
    bad = []

    def work(k):
        r = np.random.default_rng(k)
        for _ in range(20):
            i, j = r.integers(3), r.integers(3)
            if ev.final_metric(S[j][folds[i]], index=folds[i]) != expected[i, j]:
                bad.append((i, j))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad


def test_many_models_forms_agree_with_one_at_a_time():
    y, groups, s, _ = _case(seed=8, n=50)
    s2 = np.random.default_rng(1).random(50)
    ev = BiasEvaluator(y, groups)
    want = [ev.final_metric(s), ev.final_metric(s2)]
    for form in (np.column_stack([s, s2]), [s, list(s2)], {"x": s, "y": pd.Series(s2)},
                 pd.DataFrame({"x": s, "y": s2})):
        got = ev.scores_many(form, ["final"])["final"].tolist()
        assert got == want
    idx = np.arange(0, 50, 2)
    got = ev.scores_many(np.column_stack([s, s2])[idx], ["final"], index=idx)["final"].tolist()
    assert got == [ev.final_metric(s[idx], index=idx), ev.final_metric(s2[idx], index=idx)]


def test_lightgbm_train_several_sets_each_round_equals_evaluator():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(7)

    def make(n):
        X = rng.normal(size=(n, 4))
        y = (X[:, 0] + rng.normal(size=n) * 1.5 > 0).astype(int)
        return X, y, {"a": X[:, 1] > 0.3, "b": X[:, 2] > 0.5}

    (Xt, yt, gt), (Xa, ya, ga), (Xb, yb, gb) = make(300), make(120), make(90)
    evt, eva, evb = BiasEvaluator(yt, gt), BiasEvaluator(ya, ga), BiasEvaluator(yb, gb)
    dt = lgb.Dataset(Xt, yt, free_raw_data=False)
    sets = [dt, lgb.Dataset(Xa, ya, reference=dt), lgb.Dataset(Xb, yb, reference=dt)]
    hist = {}
    metric = lightgbm_metric([evb, eva, evt], metrics=["final", "min_bnsp_auc", "overall_auc"])
    booster = lgb.train({"objective": "binary", "metric": "None", "verbose": -1,
                         "num_leaves": 4, "learning_rate": 0.3, "num_threads": 1,
                         "min_data_in_leaf": 5}, dt, num_boost_round=6, valid_sets=sets,
                        valid_names=["tr", "a", "b"], feval=metric,
                        callbacks=[lgb.record_evaluation(hist)])
    for i in range(6):
        for name, X, ev in (("tr", Xt, evt), ("a", Xa, eva), ("b", Xb, evb)):
            p = booster.predict(X, num_iteration=i + 1)
            for m in ("final", "min_bnsp_auc", "overall_auc"):
                assert hist[name][m][i] == ev.score(p, m)
    p = booster.predict(Xb, num_iteration=1)
    assert hist["b"]["final"][0] == pytest.approx(ref_final(yb, p, gb), abs=1e-12)
    assert all(flag is True for _, _, flag in metric(booster.predict(Xa), sets[1]))


def test_xgboost_margin_outputs_give_the_same_scores():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
    groups = {"a": X[:, 1] > 0}
    ev = BiasEvaluator(y[100:], {"a": groups["a"][100:]})
    dtr, dva = xgb.DMatrix(X[:100], label=y[:100]), xgb.DMatrix(X[100:], label=y[100:])
    for objective in ("binary:logistic", "binary:logitraw"):
        hist = {}
        booster = xgb.train({"objective": objective, "max_depth": 2, "eta": 0.5, "nthread": 1,
                             "disable_default_eval_metric": 1, "seed": 0}, dtr,
                            num_boost_round=4, evals=[(dva, "v")],
                            custom_metric=xgboost_metric(ev), evals_result=hist,
                            verbose_eval=False)
        for i in range(4):
            margin = booster.predict(dva, iteration_range=(0, i + 1), output_margin=True)
            assert hist["v"]["final"][i] == pytest.approx(ev.final_metric(margin), abs=5.1e-7)


# ------------------------------------------------------------------- found by review

def test_bool_labels_mutated_after_construction_do_not_change_the_evaluator():
    """Found by review: a bool y_true is kept by reference. Flipping one label in the caller's array
    after construction changes later results to a number that is right for neither the old
    nor the new labels (unweighted), or an internal error (weighted)."""
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0, 0, 1], bool)
    groups = {"a": np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], bool)}
    s = np.array([.9, .1, .8, .7, .3, .2, .6, .4, .5, .35])
    y_user = y.copy()
    ev = BiasEvaluator(y_user, groups)
    before = ev.final_metric(s)
    assert before == pytest.approx(ref_final(y, s, groups))     # 0.7078
    y_user[0] = False                                            # caller reuses its array
    assert ev.final_metric(s) == before                          # got 0.4826


def test_bool_labels_mutated_after_construction_weighted_no_internal_error():
    """Found by review (same cause, weighted): ValueError 'radix_sort_class: the payload scratch must
    have one slot per row of the class' instead of the evaluator's fixed result."""
    rng = np.random.default_rng(9)
    y = rng.random(60) < 0.5
    groups = {"a": rng.random(60) < 0.5}
    s, w = rng.random(60), rng.random(60)
    y_user = y.copy()
    ev = BiasEvaluator(y_user, groups, sample_weight=w)
    before = ev.final_metric(s)
    y_user[:5] = ~y_user[:5]
    assert ev.final_metric(s) == before


def test_sample_weight_is_fixed_at_construction():
    """Found by review: a float64 sample_weight is kept by reference ("weights are fixed at
    construction" says the doc). Mutating the caller's array changes the all-rows result but
    not a cached fold's (its weights were copied): the two disagree silently."""
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0, 0, 1], bool)
    groups = {"a": np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1], bool)}
    s = np.array([.9, .1, .8, .7, .3, .2, .6, .4, .5, .35])
    w = np.ones(10)
    ev = BiasEvaluator(y, groups, sample_weight=w)
    before = ev.final_metric(s)
    w[:] = np.arange(10) + 1.0
    assert ev.final_metric(s) == before                          # got 0.5003 (new weights)
    assert ev.sample_weight is not w


def _boosting_set():
    """80 rows: features, 0/1 labels, one subgroup, predictions."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(80, 3))
    y = (rng.random(80) < 0.5).astype(int)
    return X, y, {"a": rng.random(80) < 0.5}, rng.random(80)


def test_lightgbm_explicit_pair_with_other_labels_is_refused():
    """Found by review: a (Dataset, evaluator) pair is never checked against the Dataset's labels
    (docs: 'matched by row count and labels, which are compared on every call'). Pairing a
    set with an evaluator of the inverted labels reports that evaluator's numbers silently."""
    lgb = pytest.importorskip("lightgbm")
    X, y, groups, p = _boosting_set()
    wrong = BiasEvaluator(1 - y, groups)
    d = lgb.Dataset(X, y, free_raw_data=False).construct()
    metric = lightgbm_metric([(d, wrong)])
    with pytest.raises(ValueError, match="labels"):
        metric(p, d)                     # got [('final', 0.4994...), ...] of the wrong labels


def test_xgboost_bound_set_relabelled_is_rechecked():
    """Found by review: once bound, a DMatrix's labels are not compared again; after set_label the
    metric keeps reporting the old labels' numbers (it should pick the matching evaluator or
    refuse)."""
    xgb = pytest.importorskip("xgboost")
    X, y1, groups, p = _boosting_set()
    ev1, ev2 = BiasEvaluator(y1, groups), BiasEvaluator(1 - y1, groups)
    d = xgb.DMatrix(X, label=y1)
    metric = xgboost_metric([ev1, ev2])
    assert dict(metric(p, d))["final"] == ev1.final_metric(p)
    d.set_label(1 - y1)
    assert dict(metric(p, d))["final"] == ev2.final_metric(p)   # got ev1's value


def _one_class_fold():
    rng = np.random.default_rng(2)
    y = rng.random(40) < 0.5
    groups = {"a": rng.random(40) < 0.5, "b": rng.random(40) < 0.5}
    return y, groups, rng.random(40), np.flatnonzero(y)


def test_overall_auc_of_one_class_fold_raises_under_raise():
    """Found by review: undefined='raise' but score(..., 'overall_auc') of a one-class fold returns
    NaN (no error, no warning)."""
    y, groups, s, pos = _one_class_fold()
    ev = BiasEvaluator(y, groups, undefined="raise")
    with pytest.raises(ValueError):
        ev.score(s[pos], "overall_auc", index=pos)


def test_overall_auc_of_one_class_fold_warns_under_propagate():
    """Found by review: NaN overall AUC is returned without the UndefinedMetricWarning that every
    other NaN score of the evaluator carries."""
    y, groups, s, pos = _one_class_fold()
    ev = BiasEvaluator(y, groups)
    with pytest.warns(UndefinedMetricWarning):
        ev.score(s[pos], "overall_auc", index=pos)


def test_omit_with_every_subgroup_undefined_warns_like_final_metric():
    """Found by review: fastbias.final_metric(..., undefined='omit') warns 'final metric is NaN: a
    per-subgroup AUC is undefined in every subgroup, so undefined='omit' leaves no value to
    average'; BiasEvaluator(undefined='omit').final_metric returns the same NaN silently."""
    rng = np.random.default_rng(5)
    y = rng.random(30) < 0.5
    groups = {"a": np.zeros(30, bool), "b": np.zeros(30, bool)}
    s = rng.random(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, groups)
    with pytest.warns(UndefinedMetricWarning, match="leaves no value"):
        fastbias.final_metric(table, undefined="omit")
    ev = BiasEvaluator(y, groups, undefined="omit")
    with pytest.warns(UndefinedMetricWarning):
        assert np.isnan(ev.final_metric(s))


@pytest.mark.parametrize("index, error, match", [
    (np.array([2**64 - 1], dtype=np.uint64), ValueError, r"e\.g\. 18446744073709551615 at "),
    (np.array([1, 2], dtype="timedelta64[ns]"), TypeError, r"got dtype timedelta64"),
    ([True, 3], TypeError, r"index holds both booleans and numbers"),
])
def test_odd_indexes_are_refused_by_what_they_are(index, error, match):
    """The review's smaller notes: a uint64 position past int64 was named as -1, timedelta64
    was taken as positions, [True, 3] as positions 1 and 3."""
    ev = BiasEvaluator([0, 1, 0, 1, 1, 0], {"g": [1, 1, 0, 0, 1, 0]})
    with pytest.raises(error, match=match):
        ev.score([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], "overall_auc", index=index)


def test_model_names_string_and_repeated_metrics_are_refused():
    ev = BiasEvaluator([0, 1, 0, 1, 1, 0], {"g": [1, 1, 0, 0, 1, 0]})
    s = np.array([[0.1, 0.2], [0.2, 0.1], [0.3, 0.5], [0.4, 0.4], [0.5, 0.9], [0.6, 0.3]])
    with pytest.raises(TypeError, match=r"model_names must be a list of names, got the string"):
        ev.scores_many(s, model_names="ab")
    with pytest.raises(ValueError, match=r"metrics names 'final' twice"):
        ev.scores_many(s, ["final", "final"])
