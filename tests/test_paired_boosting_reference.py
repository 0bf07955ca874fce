"""An independent review's tests (2026-11-27) of fastbias.delong_paired_test and
fastbias.boosting.

Found by review (each fails before its fix): fractional labels thresholded by the
evaluator's ``label_threshold`` were refused by both boosting metrics where a label equals
the threshold (the sets' float32 copies of the labels fall just below it).

Every expected value comes from an independent reference in this file: DeLong's
paired covariance from brute-force placement values in fractions.Fraction (or
numpy for larger n), scipy.stats.norm for p-values/intervals, sklearn's
roc_auc_score for the boosting metrics.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

import fastbias

CELLS = {
    "subgroup_auc": (("s", 1), ("s", 0)),
    "bpsn_auc": (("b", 1), ("s", 0)),
    "bnsp_auc": (("s", 1), ("b", 0)),
    "negative_aeg": (("b", 0), ("s", 0)),
    "positive_aeg": (("b", 1), ("s", 1)),
}


# ----------------------------------------------------------------------------- references

def _psi(x, y):
    return F(1) if x > y else (F(1, 2) if x == y else F(0))


def _paired_exact(xa, xb, wx, ya, yb, wy):
    """DeLong (1988) paired moments with frequency weights, exactly."""
    wx = [F(float(v)) for v in wx]
    wy = [F(float(v)) for v in wy]
    WX, WY = sum(wx), sum(wy)
    if WX == 0 or WY == 0:
        return None
    V10, V01 = {}, {}
    for k, (xs, ys) in {"a": (xa, ya), "b": (xb, yb)}.items():
        xs = [F(float(v)) for v in xs]
        ys = [F(float(v)) for v in ys]
        V10[k] = [sum(wj * _psi(x, y) for y, wj in zip(ys, wy)) / WY for x in xs]
        V01[k] = [sum(wi * _psi(x, y) for x, wi in zip(xs, wx)) / WX for y in ys]
    th = {k: sum(w * v for w, v in zip(wx, V10[k])) / WX for k in "ab"}
    out = {"ta": th["a"], "tb": th["b"]}
    if WX <= 1 or WY <= 1:
        return out

    def s(V, w, W, k1, k2):
        return sum(wi * (V[k1][i] - th[k1]) * (V[k2][i] - th[k2]) for i, wi in enumerate(w)) / (W - 1)

    for k1, k2, name in (("a", "a", "var_a"), ("b", "b", "var_b"), ("a", "b", "cov")):
        out[name] = s(V10, wx, WX, k1, k2) / WX + s(V01, wy, WY, k1, k2) / WY
    out["var_d"] = out["var_a"] + out["var_b"] - 2 * out["cov"]
    return out


def _reference(y, sa, sb, groups, w=None, confidence=0.95):
    y = np.asarray(y).astype(int)
    n = y.shape[0]
    w = np.ones(n) if w is None else np.asarray(w, float)
    sa, sb = np.asarray(sa, float), np.asarray(sb, float)
    res = {}

    def fin(r, aeg):
        if r is None:
            return {"value_a": math.nan}
        ta, tb = r["ta"], r["tb"]
        if aeg:
            ta, tb = F(1, 2) - ta, F(1, 2) - tb
        d = {"value_a": float(ta), "value_b": float(tb), "difference": float(ta - tb)}
        if "var_d" in r and r["var_d"] > 0:
            se = math.sqrt(r["var_d"])
            q = norm.ppf(0.5 + confidence / 2)
            d.update(difference_se=se, se_a=math.sqrt(r["var_a"]), se_b=math.sqrt(r["var_b"]),
                     z=float(ta - tb) / se, p_value=2 * norm.sf(abs(float(ta - tb)) / se),
                     difference_low=float(ta - tb) - q * se,
                     difference_high=float(ta - tb) + q * se)
            if r["var_a"] > 0 and r["var_b"] > 0:
                d["correlation"] = float(r["cov"]) / math.sqrt(r["var_a"] * r["var_b"])
        return d

    pos, neg = y == 1, y == 0
    res[("overall", "overall_auc")] = fin(_paired_exact(sa[pos], sb[pos], w[pos], sa[neg], sb[neg],
                                                        w[neg]), False)
    for name, m in groups.items():
        m = np.asarray(m, bool)
        for metric, ((px, lx), (py, ly)) in CELLS.items():
            X = (m if px == "s" else ~m) & (y == lx)
            Y = (m if py == "s" else ~m) & (y == ly)
            res[(name, metric)] = fin(_paired_exact(sa[X], sb[X], w[X], sa[Y], sb[Y], w[Y]),
                                      metric.endswith("aeg"))
    return res


def _assert_matches(out, ref):
    for key, r in ref.items():
        row = out.loc[key]
        if math.isnan(r["value_a"]):
            assert math.isnan(row["value_a"]) and math.isnan(row["p_value"]), key
            continue
        for col, v in r.items():
            assert row[col] == pytest.approx(v, rel=1e-9, abs=1e-12), (key, col, row[col], v)


def _data(seed, n=36):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    sa = np.round(rng.random(n) * 5) / 5                     # many ties
    sb = np.round((sa + rng.normal(0, 0.3, n)) * 4) / 4      # ties, correlated with a
    groups = {"g1": rng.random(n) < 0.4, "g2": rng.random(n) < 0.3}
    return rng, y, sa, sb, groups


# ----------------------------------------------------------------------------- paired test

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("weights", [None, "int", "real"])
def test_paired_matches_exact_delong_reference(seed, weights):
    rng, y, sa, sb, groups = _data(seed)
    w = None
    if weights == "int":
        w = rng.integers(0, 4, y.shape[0]).astype(float)   # zeros included
    elif weights == "real":
        w = rng.random(y.shape[0]) * 3 + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fastbias.delong_paired_test(y, sa, sb.astype(np.float32)[::-1][::-1], groups,
                                          sample_weight=w)
    _assert_matches(out, _reference(y, sa, sb.astype(np.float32), groups, w))


def test_paired_confidence_and_numpy_reference_large():
    rng = np.random.default_rng(7)
    n = 2500
    y = rng.random(n) < 0.3
    sa = np.round(rng.random(n) + 0.3 * y, 3)
    sb = sa + rng.normal(0, 0.05, n)
    w = rng.random(n) * 10
    out = fastbias.delong_paired_test(y, sa, sb, sample_weight=w, confidence=0.8)
    # numpy reference
    P = {}
    for k, s in (("a", sa), ("b", sb)):
        M = (s[y][:, None] > s[~y][None, :]) + 0.5 * (s[y][:, None] == s[~y][None, :])
        P[k] = (M @ w[~y] / w[~y].sum(), w[y] @ M / w[y].sum())
    th = {k: w[y] @ P[k][0] / w[y].sum() for k in "ab"}
    d = th["a"] - th["b"]
    d10 = P["a"][0] - P["b"][0] - d
    d01 = P["a"][1] - P["b"][1] - d
    WX, WY = w[y].sum(), w[~y].sum()
    se = math.sqrt((w[y] @ d10 ** 2) / (WX - 1) / WX + (w[~y] @ d01 ** 2) / (WY - 1) / WY)
    row = out.loc[("overall", "overall_auc")]
    assert row["difference"] == pytest.approx(d, rel=1e-12)
    assert row["difference_se"] == pytest.approx(se, rel=1e-10)
    assert row["p_value"] == pytest.approx(2 * norm.sf(abs(d) / se), rel=1e-8)
    assert row["difference_low"] == pytest.approx(d - norm.ppf(0.9) * se, rel=1e-10)


@pytest.mark.parametrize("weighted", [False, True])
def test_paired_identical_or_same_order_models_give_exact_zero(weighted):
    rng, y, sa, _, groups = _data(3)
    w = rng.random(y.shape[0]) * 2 + 0.3 if weighted else None
    for sb in (sa.copy(), np.exp(3 * sa) - 7.0):     # same model; a monotone transform
        out = fastbias.delong_paired_test(y, sa, sb, groups, sample_weight=w)
        assert (out["difference"] == 0).all()
        assert (out["z"] == 0).all() and (out["p_value"] == 1).all()
        assert (out["difference_low"] == 0).all() and (out["difference_high"] == 0).all()


def test_paired_empty_and_one_class_subgroups_nan_with_one_warning():
    rng = np.random.default_rng(5)
    n = 30
    y = rng.random(n) < 0.5
    sa, sb = rng.random(n), rng.random(n)
    groups = {"g": rng.random(n) < 0.4, "empty": np.zeros(n, bool),
              "onlypos": y & (np.arange(n) < 10), "all": np.ones(n, bool)}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fastbias.delong_paired_test(y, sa, sb, groups)
    undefined = [r for r in rec if "undefined" in str(r.message)]
    assert len(undefined) == 1
    assert out.loc["empty"]["value_a"].isna().all()
    assert out.loc["empty"]["p_value"].isna().all()
    # one-class subgroup: the cells that need its negatives are NaN, the others defined
    assert out.loc[("onlypos", "subgroup_auc"), "value_a"] != out.loc[("onlypos", "subgroup_auc"),
                                                                      "value_a"]
    assert not math.isnan(out.loc[("onlypos", "bnsp_auc"), "p_value"])
    assert out.loc[("all", "bpsn_auc")][["value_a", "p_value"]].isna().all()
    _assert_matches(out, _reference(y, sa, sb, groups))


def test_paired_shuffled_pandas_rows_same_result_and_misaligned_refused():
    rng = np.random.default_rng(4)
    n = 50
    y = (rng.random(n) < 0.4).astype(int)
    sa, sb = rng.random(n), rng.random(n)
    g = rng.random(n) < 0.4
    base = fastbias.delong_paired_test(y, sa, sb, {"g": g})
    idx = pd.Index(rng.permutation(1000)[:n])
    perm = rng.permutation(n)
    Y, A, B = (pd.Series(v, index=idx) for v in (y, sa, sb))
    G = pd.DataFrame({"g": g}, index=idx)
    out = fastbias.delong_paired_test(Y.iloc[perm], A.iloc[perm], B.iloc[perm], G.iloc[perm])
    np.testing.assert_allclose(out.to_numpy(), base.to_numpy(), rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="scores_b"):
        fastbias.delong_paired_test(Y, A, B.iloc[perm], G)
    with pytest.raises(ValueError, match="subgroups"):
        fastbias.delong_paired_test(Y, A, B, G.iloc[perm])
    with pytest.raises(ValueError, match="position 7"):
        fastbias.delong_paired_test(y, sa, np.where(np.arange(n) == 7, np.nan, sb))


# ----------------------------------------------------------------------------- boosting

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
from sklearn.metrics import roc_auc_score  # noqa: E402

from fastbias.boosting import lightgbm_metric, xgboost_metric  # noqa: E402


def _auc(pos, neg, wp, wn):
    return roc_auc_score(np.r_[np.ones(len(pos)), np.zeros(len(neg))], np.r_[pos, neg],
                         sample_weight=np.r_[wp, wn])


def _bias_ref(y, s, groups, w=None, power=-5, ow=0.25):
    y = np.asarray(y).astype(bool)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    per = {"subgroup_auc": [], "bpsn_auc": [], "bnsp_auc": []}
    for m in groups.values():
        m = np.asarray(m, bool)
        per["subgroup_auc"].append(_auc(s[m & y], s[m & ~y], w[m & y], w[m & ~y]))
        per["bpsn_auc"].append(_auc(s[~m & y], s[m & ~y], w[~m & y], w[m & ~y]))
        per["bnsp_auc"].append(_auc(s[m & y], s[~m & ~y], w[m & y], w[~m & ~y]))
    overall = _auc(s[y], s[~y], w[y], w[~y])
    pm = [np.mean(np.asarray(v) ** power) ** (1 / power) for v in per.values()]
    return {"final": ow * overall + (1 - ow) / 3 * sum(pm), "overall_auc": overall,
            "min_subgroup_auc": min(per["subgroup_auc"]), "min_bpsn_auc": min(per["bpsn_auc"]),
            "min_bnsp_auc": min(per["bnsp_auc"])}


def _make(rng, n):
    X = rng.normal(size=(n, 5))
    g1 = X[:, 3] > 0.3
    y = ((X[:, 0] + 0.5 * X[:, 1] + 0.8 * g1 + rng.normal(0, 1, n)) > 0.5).astype(int)
    return X, y, {"g1": g1, "g2": rng.random(n) < 0.2}


ALL = list(fastbias.evaluator.SCORE_NAMES)


def test_lightgbm_feval_matches_reference_two_sets_weights_from_evaluator():
    rng = np.random.default_rng(0)
    Xt, yt, _ = _make(rng, 2000)
    Xa, ya, ga = _make(rng, 700)
    Xb, yb, gb = _make(rng, 400)
    wb = rng.random(400) * 2 + 0.1
    eva = fastbias.BiasEvaluator(ya, ga)
    evb = fastbias.BiasEvaluator(yb, gb, sample_weight=wb)
    dtrain = lgb.Dataset(Xt, yt)
    # the Dataset's weights are documented as not used
    da = lgb.Dataset(Xa, ya, weight=rng.random(700) * 3, reference=dtrain)
    db = lgb.Dataset(Xb, yb, reference=dtrain)
    res = {}
    bst = lgb.train({"objective": "binary", "metric": "None", "verbose": -1, "num_leaves": 7},
                    dtrain, 5, valid_sets=[db, da], valid_names=["b", "a"],
                    feval=lightgbm_metric([evb, eva], metrics=ALL),
                    callbacks=[lgb.record_evaluation(res)])
    for it in range(5):
        for name, X, y, g, w in (("a", Xa, ya, ga, None), ("b", Xb, yb, gb, wb)):
            ref = _bias_ref(y, bst.predict(X, num_iteration=it + 1), g, w)
            for m, v in ref.items():
                assert res[name][m][it] == pytest.approx(v, rel=1e-12, abs=1e-12), (name, it, m)


def test_xgboost_custom_metric_raw_margin_matches_reference():
    rng = np.random.default_rng(1)
    Xt, yt, _ = _make(rng, 2000)
    Xa, ya, ga = _make(rng, 700)
    Xb, yb, gb = _make(rng, 400)
    wb = rng.random(400) * 2 + 0.1
    eva = fastbias.BiasEvaluator(ya, ga)
    evb = fastbias.BiasEvaluator(yb, gb, sample_weight=wb)
    res = {}
    bst = xgb.train({"objective": "binary:logitraw", "max_depth": 3,
                     "disable_default_eval_metric": 1}, xgb.DMatrix(Xt, yt), 5,
                    evals=[(xgb.DMatrix(Xa, ya, weight=rng.random(700)), "a"),
                           (xgb.DMatrix(Xb, yb), "b")],
                    custom_metric=xgboost_metric([eva, evb], metrics=ALL), evals_result=res,
                    verbose_eval=False, maximize=True)
    for it in range(5):
        for name, X, y, g, w in (("a", Xa, ya, ga, None), ("b", Xb, yb, gb, wb)):
            p = bst.predict(xgb.DMatrix(X), iteration_range=(0, it + 1), output_margin=True)
            ref = _bias_ref(y, p, g, w)
            for m, v in ref.items():  # XGBoost keeps six decimals
                assert abs(res[name][m][it] - v) <= 5.1e-7, (name, it, m)


def test_early_stopping_follows_the_highest_score():
    rng = np.random.default_rng(1)
    Xt, yt, _ = _make(rng, 2000)
    Xa, ya, ga = _make(rng, 700)
    ev = fastbias.BiasEvaluator(ya, ga)
    res = {}
    dtrain = lgb.Dataset(Xt, yt)
    bst = lgb.train({"objective": "binary", "metric": "None", "verbose": -1, "learning_rate": 0.5},
                    dtrain, 40, valid_sets=[lgb.Dataset(Xa, ya, reference=dtrain)],
                    feval=lightgbm_metric(ev),
                    callbacks=[lgb.early_stopping(3, first_metric_only=True, verbose=False),
                               lgb.record_evaluation(res)])
    r = res["valid_0"]["final"]
    assert bst.best_iteration == int(np.argmax(r)) + 1
    stop = xgb.callback.EarlyStopping(rounds=3, metric_name="final", maximize=True)
    m = xgb.XGBClassifier(n_estimators=30, max_depth=3, learning_rate=0.5,
                          eval_metric=xgboost_metric(ev), callbacks=[stop])
    m.fit(Xt, yt, eval_set=[(Xa, ya)], verbose=False)
    r = m.evals_result()["validation_0"]["final"]
    assert m.best_iteration == int(np.argmax(r))
    ref = _bias_ref(ya, m.predict_proba(Xa, iteration_range=(0, len(r)))[:, 1], ga)
    assert abs(r[-1] - ref["final"]) <= 5.1e-7


def test_multiclass_predictions_refused_clearly():
    rng = np.random.default_rng(2)
    Xt, yt, _ = _make(rng, 1000)
    Xa, ya, ga = _make(rng, 300)
    ev = fastbias.BiasEvaluator(ya, ga)
    with pytest.raises(ValueError, match="one score per row"):
        lgb.train({"objective": "multiclass", "num_class": 2, "metric": "None", "verbose": -1},
                  lgb.Dataset(Xt, yt), 2, valid_sets=[lgb.Dataset(Xa, ya)],
                  feval=lightgbm_metric(ev))
    with pytest.raises(ValueError, match="one score per row"):
        xgb.train({"objective": "multi:softprob", "num_class": 2}, xgb.DMatrix(Xt, yt), 2,
                  evals=[(xgb.DMatrix(Xa, ya), "a")], custom_metric=xgboost_metric(ev),
                  verbose_eval=False)


# Fractional labels binarized with label_threshold. The evaluator binarizes the
# caller's float64 labels; LightGBM's Dataset.get_label() / XGBoost's DMatrix.get_label()
# hand back float32 copies, and boosting._evaluator_for binarizes those with the same
# threshold compared "as real numbers": float32(0.7) = 0.69999998 < 0.7, so a row whose
# label is exactly 0.7 (7 of 10 annotators) is positive for the evaluator and negative for
# the set. The evaluator built from the very same rows is then refused ("the labels ...
# differ from those of every BiasEvaluator ... build the evaluator from the same rows").
# Correct: the metric reports the bias scores of those rows (labels are the set's own,
# only stored as float32), as the reference below computes.
@pytest.mark.parametrize("library", ["lightgbm", "xgboost"])
def test_fractional_labels_with_label_threshold_are_accepted(library):
    rng = np.random.default_rng(3)
    n = 600
    Xt = rng.normal(size=(1500, 4))
    ft = np.round(rng.random(1500) * 10) / 10
    Xa = rng.normal(size=(n, 4))
    frac = np.round(rng.random(n) * 10) / 10          # tenths: 0.7 occurs
    assert (frac == 0.7).any()
    groups = {"g": Xa[:, 1] > 0}
    ev = fastbias.BiasEvaluator(frac, groups, label_threshold=0.7)
    res = {}
    if library == "lightgbm":
        bst = lgb.train({"objective": "cross_entropy", "metric": "None", "verbose": -1},
                        lgb.Dataset(Xt, ft), 2, valid_sets=[lgb.Dataset(Xa, frac)],
                        feval=lightgbm_metric(ev), callbacks=[lgb.record_evaluation(res)])
        got = res["valid_0"]["final"][-1]
        pred = bst.predict(Xa)
        tol = 1e-12
    else:
        bst = xgb.train({"objective": "reg:logistic", "disable_default_eval_metric": 1},
                        xgb.DMatrix(Xt, ft), 2, evals=[(xgb.DMatrix(Xa, frac), "a")],
                        custom_metric=xgboost_metric(ev), verbose_eval=False,
                        evals_result=res, maximize=True)
        got = res["a"]["final"][-1]
        pred = bst.predict(xgb.DMatrix(Xa))
        tol = 5.1e-7
    ref = _bias_ref(frac >= 0.7, pred, groups)["final"]
    assert abs(got - ref) <= tol


def test_float32_labels_fit_only_the_evaluator_whose_classes_they_can_hold():
    """A set's float32 labels fit an evaluator where each row's class is that of some float64
    label rounding to it: 0.7 and the float64 just below it both round to float32(0.7), so
    either class fits there; a label of 0.9 where the evaluator's row is negative, or 0.5
    where it is positive, does not (checked against the intervals by hand: the float64
    values rounding to float32(0.7) span 0.7 - 2**-25 .. 0.7 + 2**-25 about)."""
    from fastbias.boosting import _labels_fit

    below = np.nextafter(0.7, 0.0)  # negative for the evaluator, float32 the same as 0.7
    frac = np.array([0.7, below, 0.2, 0.9, 0.1, 0.8])
    assert np.float32(below) == np.float32(0.7)
    groups = {"g": np.array([True, False, True, False, True, False])}
    ev = fastbias.BiasEvaluator(frac, groups, label_threshold=0.7)
    assert ev.labels.tolist() == [True, False, False, True, False, True]
    assert _labels_fit(frac.astype(np.float32), ev)[0]
    assert _labels_fit(frac, ev)[0]  # (float64: thresholded as given)
    for row, value in ((2, 0.9), (3, 0.5), (1, 0.71)):
        other = frac.copy()
        other[row] = value
        assert not _labels_fit(other.astype(np.float32), ev)[0], (row, value)
    # the threshold itself in float32 is below 0.7: a float64 label that rounds there (and so
    # lies below 0.7) is negative, and a positive row cannot be labelled with it
    low = np.float32(0.7) - np.float32(2.0 ** -24)  # the float32 below float32(0.7)
    other = frac.astype(np.float32)
    other[0] = low
    assert float(low) + 2.0 ** -26 < 0.7  # all float64 values rounding to it are below 0.7
    assert not _labels_fit(other, ev)[0]
