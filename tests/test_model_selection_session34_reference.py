"""An independent review's tests (2026-11-27): model-selection entry points (BiasEvaluator,
scikit-learn scorers, boosting metrics).

Every expected value comes from an independent reference below (sklearn.metrics.roc_auc_score
per subgroup / background set, and the Jigsaw final metric written out by hand), never from
fastbias itself. Found by review (fails before its fix): a training set of the validation
set's size and labels, given no evaluator of its own, was scored with the validation set's
subgroups (LightGBM: 0.84166 reported against 0.84411), silently; now the two sets taking
turns with one evaluator are refused (from the second round).
"""
import threading
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.boosting import lightgbm_metric, xgboost_metric

# --------------------------------------------------------------------------- reference

def _auc(y, s, w=None):
    y = np.asarray(y, bool)
    if y.all() or not y.any():
        return float("nan")
    return float(roc_auc_score(y, s, sample_weight=w))


def _per_group(y, s, groups, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s, np.float64)
    out = []
    for g in groups.values():
        g = np.asarray(g, bool)
        cells = (g, (g & ~y) | (~g & y), (~g & ~y) | (g & y))  # subgroup, BPSN, BNSP
        out.append([_auc(y[c], s[c], None if w is None else np.asarray(w)[c]) for c in cells])
    return np.array(out)


def _pmean(v, p):
    v = np.asarray(v, np.float64)
    return float(np.mean(v ** p) ** (1.0 / p))


def _final(y, s, groups, w=None, p=-5.0, ow=0.25, omit=False):
    pg = _per_group(y, s, groups, w)
    cols = [c[~np.isnan(c)] if omit else c for c in pg.T]
    return ow * _auc(y, s, w) + (1 - ow) * np.mean([_pmean(c, p) for c in cols])


def _sub(groups, rows):
    return {k: np.asarray(v)[rows] for k, v in groups.items()}


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    groups = {"a": rng.random(n) < 0.2, "b": rng.random(n) < 0.1, "c": rng.random(n) < 0.05}
    s = np.round(rng.random(n) + 0.3 * y, 2)  # many ties
    return rng, y, groups, s


# --------------------------------------------------------------------------- found by review: boosting

class _FakeLgbDataset:
    """What LightGBMBiasMetric reads of a lightgbm.Dataset (get_label, num_data)."""

    def __init__(self, label):
        self._label = np.asarray(label, np.float32)

    def get_label(self):
        return self._label

    def num_data(self):
        return self._label.shape[0]


def test_one_evaluator_is_not_silently_used_for_a_second_live_set_with_equal_labels():
    """Was: lightgbm.train(valid_sets=[dtrain, dvalid], feval=lightgbm_metric(ev_valid)):
    the user forgot the training set's evaluator. When dtrain has the same size and the same
    label vector as dvalid (e.g. data sorted by label, equal-size splits), the training set is
    matched "by labels" to ev_valid and scored with the VALIDATION set's subgroups: a wrong
    number, no error (with real LightGBM: 0.84166 reported vs 0.84411 true on the training
    set). Both sets are alive, distinct objects, so the metric can tell that one evaluator
    (given without a pairing) is being used for two different evaluation sets. Correct
    behaviour: a ValueError (no evaluator for this set / ambiguous), as for different labels."""
    rng, y, g_valid, s = _data(3000, seed=1)
    g_train = {k: rng.random(y.shape[0]) < 0.2 for k in g_valid}
    ev_valid = fastbias.BiasEvaluator(y, g_valid)
    dtrain, dvalid = _FakeLgbDataset(y), _FakeLgbDataset(y)
    feval = lightgbm_metric(ev_valid)
    feval(s, dvalid)  # the validation set binds to its evaluator
    truth_train = _final(y, s, g_train)
    with_valid_groups = _final(y, s, g_valid)
    assert truth_train != pytest.approx(with_valid_groups, abs=1e-6)
    # the training set takes the evaluator over (it may be the same rows built again: a
    # continued training, a search); the two taking turns is refused at the next call
    with pytest.warns(UserWarning, match=r"an evaluation set of 3000 rows with the size and "
                                        r"labels of another one still alive takes over"):
        feval(s, dtrain)
    with pytest.raises(ValueError, match=r"two evaluation sets of 3000 rows with the same "
                                         r"labels take turns with one BiasEvaluator"):
        feval(s, dvalid)
    with pytest.raises(ValueError, match="take turns"):
        feval(s, dvalid)
    paired = lightgbm_metric([(dtrain, fastbias.BiasEvaluator(y, g_train)), (dvalid, ev_valid)])
    got = dict((name, v) for name, v, _ in paired(s, dtrain))["final"]
    assert got == pytest.approx(truth_train, abs=1e-12)


def test_one_evaluator_second_live_set_real_lightgbm():
    """The same with lightgbm.train itself (skipped without lightgbm)."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(4)
    n = 3000
    Xtr, Xva = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    y = (Xtr[:, 0] + rng.normal(size=n) > 0).astype(float)
    g_tr, g_va = {"a": Xtr[:, 1] > 0.5, "b": Xtr[:, 2] > 1}, {"a": Xva[:, 1] > 0.5,
                                                              "b": Xva[:, 2] > 1}
    ev_va = fastbias.BiasEvaluator(y, g_va)  # the validation set has the same labels
    dtr = lgb.Dataset(Xtr, y, free_raw_data=False)
    dva = lgb.Dataset(Xva, y, reference=dtr)
    rec = {}
    params = {"objective": "binary", "metric": "None", "verbose": -1, "num_leaves": 7}
    with pytest.raises(ValueError, match="take turns with one BiasEvaluator"), \
            pytest.warns(UserWarning, match="takes over its BiasEvaluator"):
        lgb.train(params, dtr, 3, valid_sets=[dtr, dva], valid_names=["tr", "va"],
                  feval=lightgbm_metric(ev_va), callbacks=[lgb.record_evaluation(rec)])
    ev_tr = fastbias.BiasEvaluator(y, g_tr)
    bst = lgb.train(params, dtr, 3, valid_sets=[dtr, dva], valid_names=["tr", "va"],
                    feval=lightgbm_metric([(dtr, ev_tr), (dva, ev_va)]),
                    callbacks=[lgb.record_evaluation(rec)])
    truth = _final(y.astype(bool), bst.predict(Xtr, num_iteration=3), g_tr)
    assert rec["tr"]["final"][2] == pytest.approx(truth, abs=1e-12)


# --------------------------------------------------------------------------- held: evaluator

def test_in_place_mutation_and_dtypes():
    _, y, g, s = _data()
    ev = fastbias.BiasEvaluator(y, g)
    buf = s.copy()
    assert ev.final_metric(buf) == pytest.approx(_final(y, s, g), abs=1e-12)
    buf[:] = np.round(np.random.default_rng(9).random(buf.shape[0]) + 0.5 * y, 2)
    assert ev.final_metric(buf) == pytest.approx(_final(y, buf, g), abs=1e-12)
    f32 = buf.astype(np.float32)
    assert ev.final_metric(f32) == pytest.approx(_final(y, f32.astype(np.float64), g), abs=1e-12)
    assert ev.final_metric(f32.astype(np.float64)) == pytest.approx(
        _final(y, f32.astype(np.float64), g), abs=1e-12)
    assert ev.final_metric(buf.astype(">f8")) == pytest.approx(_final(y, buf, g), abs=1e-12)


def test_fold_forms_agree_with_reference():
    rng, y, g, s = _data()
    w = rng.integers(1, 5, y.shape[0]).astype(float)
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    mask = rng.random(y.shape[0]) < 0.5
    pos = np.flatnonzero(mask)
    ref = _final(y[mask], s[mask], _sub(g, mask), w[mask])
    assert ev.final_metric(s[mask], index=mask) == pytest.approx(ref, abs=1e-12)
    assert ev.final_metric(s[mask], index=pos) == pytest.approx(ref, abs=1e-12)
    assert ev.final_metric(s[mask], index=pd.Index(pos)) == pytest.approx(ref, abs=1e-12)
    perm = rng.permutation(pos)
    assert ev.final_metric(s[perm], index=perm) == pytest.approx(
        _final(y[perm], s[perm], _sub(g, perm), w[perm]), abs=1e-12)
    dup = np.r_[pos, pos[:1]]
    with pytest.raises(ValueError, match="duplicate"):
        ev.final_metric(s[dup], index=dup)
    with pytest.raises(ValueError, match="empty"):
        ev.final_metric(np.array([]), index=np.array([], dtype=np.int64))
    bad = s.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="position 5"):
        ev.final_metric(bad)


def test_pandas_rows_checked():
    rng, y, g, s = _data()
    idx = pd.Index(rng.permutation(y.shape[0]) + 1000)
    ev = fastbias.BiasEvaluator(pd.Series(y, index=idx), pd.DataFrame(g, index=idx))
    assert ev.final_metric(pd.Series(s, index=idx)) == pytest.approx(_final(y, s, g), abs=1e-12)
    with pytest.raises(ValueError, match="different indexes"):
        ev.final_metric(pd.Series(s, index=idx[::-1]))
    pos = np.flatnonzero(rng.random(y.shape[0]) < 0.4)
    with pytest.raises(TypeError, match="pandas Index"):
        ev.final_metric(s[pos], index=pd.Index(pos))
    assert ev.final_metric(pd.Series(s[pos], index=idx[pos]), index=pos) == pytest.approx(
        _final(y[pos], s[pos], _sub(g, pos)), abs=1e-12)


def test_one_class_and_empty_subgroup_folds():
    _, y, g, s = _data()
    ev = fastbias.BiasEvaluator(y, g)
    fold = np.flatnonzero(~(g["c"] & y))[:3000]  # c has no positives here
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert np.isnan(ev.final_metric(s[fold], index=fold))
    assert any("c (subgroup_auc)" in str(x.message) for x in caught)
    evo = fastbias.BiasEvaluator(y, g, undefined="omit", power=-3, overall_weight=0.4)
    assert evo.final_metric(s[fold], index=fold) == pytest.approx(
        _final(y[fold], s[fold], _sub(g, fold), p=-3, ow=0.4, omit=True), abs=1e-12)
    empty = np.flatnonzero(~g["c"])[:3000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = ev.metrics(s[empty], index=empty)
    assert t.loc["c", "subgroup_size"] == 0 and np.isnan(t.loc["c", "bpsn_auc"])


def test_threads_match_sequential():
    rng, y, g, _ = _data(20000, seed=2)
    w = rng.integers(1, 5, y.shape[0]).astype(float)
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w, fold_cache_size=1)
    S = [np.round(rng.random(y.shape[0]) + 0.1 * k * y, 3) for k in range(6)]
    folds = [rng.random(y.shape[0]) < 0.3 for _ in range(3)]
    expected = [_final(y[folds[k % 3]], S[k][folds[k % 3]], _sub(g, folds[k % 3]),
                       w[folds[k % 3]]) for k in range(6)]
    out = {}

    def work(t):
        for k in range(6):
            out[(t, k)] = ev.final_metric(S[k][folds[k % 3]], index=folds[k % 3])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (t, k), v in out.items():
        assert v == pytest.approx(expected[k], abs=1e-12)


# --------------------------------------------------------------------------- held: sklearn

@pytest.mark.parametrize("pos", ["yes", "no"])
@pytest.mark.parametrize("method", [("decision_function", "predict_proba"), "predict_proba"])
def test_fold_scorer_pos_label(pos, method):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_score

    from fastbias.sklearn import make_bias_scorer
    rng = np.random.default_rng(3)
    n = 1200
    X = pd.DataFrame({"x": rng.normal(size=n), "z": rng.normal(size=n)})
    ys = np.where(X.x + rng.normal(size=n) > 0.3, "yes", "no")
    S = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2})
    cv = KFold(3, shuffle=True, random_state=0)
    got = cross_val_score(LogisticRegression(), X, ys, cv=cv,
                          scoring=make_bias_scorer("final", subgroups=S, pos_label=pos,
                                                   response_method=method))
    ref = []
    for tr, te in cv.split(X):
        m = LogisticRegression().fit(X.iloc[tr], ys[tr])
        p = m.predict_proba(X.iloc[te])[:, list(m.classes_).index(pos)]
        ref.append(_final(ys[te] == pos, p, {c: S[c].to_numpy()[te] for c in S}))
    np.testing.assert_allclose(got, ref, atol=1e-12)


# --------------------------------------------------------------------------- held: boosting

def test_two_evaluators_same_size_told_apart_by_labels_and_ambiguity_refused():
    rng, y, g, s = _data(3000, seed=5)
    y2 = y.copy()
    y2[:10] = ~y2[:10]
    g2 = {k: rng.random(y.shape[0]) < 0.2 for k in g}
    ev1, ev2 = fastbias.BiasEvaluator(y, g), fastbias.BiasEvaluator(y2, g2)
    d1, d2 = _FakeLgbDataset(y), _FakeLgbDataset(y2)
    feval = lightgbm_metric([ev1, ev2])
    for d, yy, gg in [(d1, y, g), (d2, y2, g2), (d1, y, g)]:
        name, value, higher = feval(s, d)[0]
        assert name == "final" and higher is True
        assert value == pytest.approx(_final(yy, s, gg), abs=1e-12)
    ev3 = fastbias.BiasEvaluator(y, g2)  # same labels as ev1, other subgroups
    with pytest.raises(ValueError, match="cannot"):
        lightgbm_metric([ev1, ev3])(s, _FakeLgbDataset(y))
    # explicit pairs resolve it
    da, db = _FakeLgbDataset(y), _FakeLgbDataset(y)
    paired = lightgbm_metric([(da, ev1), (db, ev3)])
    assert paired(s, db)[0][1] == pytest.approx(_final(y, s, g2), abs=1e-12)
    assert paired(s, da)[0][1] == pytest.approx(_final(y, s, g), abs=1e-12)
    # xgboost's scikit-learn call: (y_true, y_score) -> the last metric's value
    xm = xgboost_metric(ev2)
    assert xm(y2.astype(np.float32), s) == pytest.approx(_final(y2, s, g2), abs=1e-12)


def test_float32_labels_with_threshold_fit():
    """Fractional targets thresholded at 0.7: float32(0.7) < 0.7, still the set's evaluator."""
    rng = np.random.default_rng(7)
    n = 2000
    target = rng.choice([0.0, 0.2, 0.7, 0.9], size=n)
    g = {"a": rng.random(n) < 0.3}
    s = rng.random(n) + 0.3 * (target >= 0.7)
    ev = fastbias.BiasEvaluator(target, g, label_threshold=0.7)
    value = lightgbm_metric(ev, metrics=["min_bnsp_auc"])(s, _FakeLgbDataset(target))[0][1]
    assert value == pytest.approx(_per_group(target >= 0.7, s, g)[:, 2].min(), abs=1e-12)
