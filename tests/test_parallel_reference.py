"""fastbias inside *parallel* model selection (pickled evaluators, scorers, results and
boosting callbacks; joblib/loky and threading searches; spawn-context worker pools; threads):
an independent review's tests (2026-11-27, thirty-first session).

Found by review (each fails before its fix): a boosting metric could not be pickled once
used (a fitted XGBoost model holding it could not be saved); a result read back in the
process that made it lost the warnings it carried; ``copy.copy`` took them from the
original; the docs promised one NaN-fold warning per search also under loky.

Every number is checked against the serial run and against a brute-force O(n^2) reference of
the documented quantity (AUC = P(pos > neg) + P(tie) / 2, weighted by w_pos * w_neg; the final
metric = overall_weight * overall AUC + (1 - overall_weight) * mean over the three AUCs of the
power mean over subgroups)."""
from __future__ import annotations

import copy
import multiprocessing as mp
import os
import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import UndefinedMetricWarning

sklearn = pytest.importorskip("sklearn")
joblib = pytest.importorskip("joblib")

from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    KFold,
    StratifiedKFold,
    cross_validate,
)

from fastbias.boosting import lightgbm_metric, xgboost_metric  # noqa: E402
from fastbias.sklearn import bias_score, make_bias_scorer  # noqa: E402

# --------------------------------------------------------------------------- brute force

def _auc(pos_s, pos_w, neg_s, neg_w) -> float:
    if len(pos_s) == 0 or len(neg_s) == 0:
        return float("nan")
    gt = (pos_s[:, None] > neg_s[None, :]).astype(float)
    eq = (pos_s[:, None] == neg_s[None, :]).astype(float)
    pair_w = pos_w[:, None] * neg_w[None, :]
    return float(((gt + 0.5 * eq) * pair_w).sum() / pair_w.sum())


def brute_scores(y, s, groups: dict, w=None, power=-5.0, overall_weight=0.25) -> dict:
    """All five documented scores, by brute force (every subgroup must be defined)."""
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    pos, neg = y, ~y
    overall = _auc(s[pos], w[pos], s[neg], w[neg])
    per = {"subgroup_auc": [], "bpsn_auc": [], "bnsp_auc": []}
    for mask in groups.values():
        m = np.asarray(mask, bool)
        per["subgroup_auc"].append(_auc(s[m & pos], w[m & pos], s[m & neg], w[m & neg]))
        per["bpsn_auc"].append(_auc(s[~m & pos], w[~m & pos], s[m & neg], w[m & neg]))
        per["bnsp_auc"].append(_auc(s[m & pos], w[m & pos], s[~m & neg], w[~m & neg]))
    means = [np.mean(np.power(v, power)) ** (1 / power) for v in per.values()]
    return {"final": overall_weight * overall + (1 - overall_weight) * float(np.mean(means)),
            "overall_auc": overall, "min_subgroup_auc": min(per["subgroup_auc"]),
            "min_bpsn_auc": min(per["bpsn_auc"]), "min_bnsp_auc": min(per["bnsp_auc"])}


def _data(n=450, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    S = pd.DataFrame({"a": rng.random(n) < 0.35, "b": rng.random(n) < 0.3})
    X[:, 1] += S["a"].to_numpy() * 0.5  # the model can lean on identity
    w = rng.integers(1, 5, n).astype(float) if weighted else None
    return X, y, S, w


def _close(a, b, rel=1e-12):
    return a == pytest.approx(b, rel=rel, abs=1e-12)


# --------------------------------------------------------------------------- BiasEvaluator

def _roundtrips():
    return [("pickle", lambda x: pickle.loads(pickle.dumps(x))),
            ("deepcopy", copy.deepcopy)]


@pytest.mark.parametrize("how,roundtrip", _roundtrips())
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluator_roundtrip_same_numbers_and_no_shared_state(how, roundtrip, weighted):
    _, y, S, w = _data(600, seed=1, weighted=weighted)
    rng = np.random.default_rng(2)
    s = rng.random(600) + 0.4 * y
    ev = fastbias.BiasEvaluator(y, S, sample_weight=w)
    fold = np.arange(0, 600, 3)[::-1].copy()
    before = roundtrip(ev)  # before use
    full, part = ev.scores(s), ev.scores(s[fold], index=fold)  # (caches the fold)
    after = roundtrip(ev)   # after use, with a cached fold
    groups = {c: S[c].to_numpy() for c in S}
    want_full = brute_scores(y, s, groups, w)
    want_part = brute_scores(y[fold], s[fold], {c: g[fold] for c, g in groups.items()},
                             None if w is None else w[fold])
    for name in want_full:
        assert _close(full[name], want_full[name]), name
        assert _close(part[name], want_part[name]), name
    for copy_ in (before, after):
        assert copy_.scores(s) == full
        assert copy_.scores(s[fold], index=fold) == part
        # no shared mutable state
        assert copy_._folds is not ev._folds and copy_._lock is not ev._lock
        assert not np.shares_memory(copy_._full.memberships.labels, ev._full.memberships.labels)
    n_cached = len(ev._folds)
    after._folds.clear()
    after.scores(s[::2], index=np.arange(0, 600, 2))
    assert len(ev._folds) == n_cached


def test_evaluator_scored_from_threads_equals_serial():
    _, y, S, _ = _data(1500, seed=3)
    ev = fastbias.BiasEvaluator(y, S, fold_cache_size=2)  # small cache: evictions race
    rng = np.random.default_rng(4)
    folds = [np.sort(rng.choice(1500, 500, replace=False)) for _ in range(4)]
    jobs = [(rng.random(1500) + 0.3 * y, folds[k % 4] if k % 5 else None) for k in range(48)]

    def one(job):
        s, fold = job
        return ev.scores(s) if fold is None else ev.scores(s[fold], index=fold)

    serial_ev = fastbias.BiasEvaluator(y, S, n_jobs=1)
    serial = [serial_ev.scores(s) if f is None else serial_ev.scores(s[f], index=f)
              for s, f in jobs]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(one, jobs))
    assert threaded == serial
    s0, f0 = jobs[1]
    want = brute_scores(y[f0], s0[f0], {c: S[c].to_numpy()[f0] for c in S})
    assert all(_close(serial[1][k], want[k]) for k in want)


# --------------------------------------------------------------------------- scorers

def _fitted():
    X, y, S, w = _data(400, seed=5, weighted=True)
    return X, y, S, w, LogisticRegression().fit(X, y)


@pytest.mark.parametrize("how,roundtrip", _roundtrips())
def test_routed_scorer_roundtrip_keeps_request_and_numbers(how, roundtrip):
    X, y, S, w, model = _fitted()
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("min_bpsn_auc").set_score_request(subgroups=True,
                                                                     sample_weight=True)
        other = roundtrip(scorer)
        assert str(other.get_metadata_routing()) == str(scorer.get_metadata_routing())
        got = other(model, X, y, subgroups=S, sample_weight=w)
        assert got == scorer(model, X, y, subgroups=S, sample_weight=w)
    want = brute_scores(y, model.decision_function(X), {c: S[c].to_numpy() for c in S}, w)
    assert _close(got, want["min_bpsn_auc"])


@pytest.mark.parametrize("how,roundtrip", _roundtrips())
def test_fold_scorers_roundtrip_same_numbers(how, roundtrip):
    X, y, S, w, model = _fitted()
    Xf = pd.DataFrame(X, columns=["x0", "x1", "x2"], index=pd.RangeIndex(1000, 1400))
    Sf = S.set_index(Xf.index)
    model = LogisticRegression().fit(Xf, y)
    by_index = make_bias_scorer("final", subgroups=Sf).set_score_request(sample_weight=True)
    other = roundtrip(by_index)
    assert other.sample_weight_request is True
    assert other.subgroups is not Sf or how == "pickle"
    rows = Xf.iloc[::-1]
    assert other(model, rows, y[::-1], w[::-1]) == by_index(model, rows, y[::-1], w[::-1])
    want = brute_scores(y, model.decision_function(Xf), {c: S[c].to_numpy() for c in S}, w)
    assert _close(other(model, Xf, y, w), want["final"])
    # bias_score itself (plain function) through a pickle
    f = roundtrip(bias_score)
    assert f(y, model.decision_function(Xf), subgroups=S, sample_weight=w) == \
        pytest.approx(want["final"], rel=1e-12)


# --------------------------------------------------------------------------- searches

def _search_results(n_jobs, backend, X, y, S, w):
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
        est = LogisticRegression().set_fit_request(sample_weight=False)
        search = GridSearchCV(est, {"C": [0.05, 1.0, 20.0]},
                              cv=StratifiedKFold(3, shuffle=True, random_state=0),
                              scoring={"final": scorer}, refit=False,
                              n_jobs=n_jobs, error_score="raise")
        if backend is None:
            search.fit(X, y, subgroups=S, sample_weight=w)
        else:
            with joblib.parallel_backend(backend, n_jobs=n_jobs):
                search.fit(X, y, subgroups=S, sample_weight=w)
    return search


def test_gridsearch_routed_weighted_same_under_loky_threading_and_brute_force():
    X, y, S, w = _data(450, seed=6, weighted=True)
    runs = [_search_results(1, None, X, y, S, w), _search_results(2, None, X, y, S, w),
            _search_results(2, "threading", X, y, S, w)]
    keys = [f"split{k}_test_final" for k in range(3)]
    base = np.array([runs[0].cv_results_[k] for k in keys])
    for other in runs[1:]:
        assert np.array_equal(np.array([other.cv_results_[k] for k in keys]), base)
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    for c, params in enumerate(runs[0].cv_results_["params"]):
        for k, (train, test) in enumerate(folds):
            model = LogisticRegression(**params).fit(X[train], y[train])
            want = brute_scores(y[test], model.decision_function(X[test]),
                                {g: S[g].to_numpy()[test] for g in S}, w[test])["final"]
            assert _close(base[k, c], want, rel=1e-9), (params, k)


def test_cross_validate_index_aligned_weighted_loky_equals_serial_and_brute_force():
    X, y, S, w = _data(450, seed=7, weighted=True)
    Xf = pd.DataFrame(X, columns=["x0", "x1", "x2"], index=pd.Index(np.arange(450) * 7 + 3))
    Sf = S.set_index(Xf.index)
    cv = KFold(3, shuffle=True, random_state=1)
    out = []
    for n_jobs in (1, 2):
        with sklearn.config_context(enable_metadata_routing=True):
            scorer = make_bias_scorer("min_bnsp_auc", subgroups=Sf).set_score_request(
                sample_weight=True)
            est = LogisticRegression().set_fit_request(sample_weight=True)
            out.append(cross_validate(est, Xf, y, cv=cv, scoring=scorer, n_jobs=n_jobs,
                                      params={"sample_weight": w}, error_score="raise",
                                      return_estimator=True))
    assert np.array_equal(out[0]["test_score"], out[1]["test_score"])
    for k, (train, test) in enumerate(cv.split(X)):
        model = out[0]["estimator"][k]
        want = brute_scores(y[test], model.decision_function(Xf.iloc[test]),
                            {g: S[g].to_numpy()[test] for g in S}, w[test])
        assert _close(out[0]["test_score"][k], want["min_bnsp_auc"], rel=1e-9)


def _nan_fold_search(n_jobs):
    X, y, S, _ = _data(300, seed=8)
    S = S.assign(rare=np.arange(300) < 4)  # only in the first unshuffled fold: NaN elsewhere
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_bias_scorer("final")
        search = GridSearchCV(LogisticRegression(), {"C": [0.1, 1.0, 10.0]}, cv=KFold(3),
                              scoring=scorer, refit=False, n_jobs=n_jobs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search.fit(X, y, subgroups=S)
    said = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    return search, said


def test_nan_fold_warning_once_serially_and_scores_alike_under_loky():
    """Serially the caller gets exactly one UndefinedMetricWarning for the search. With
    n_jobs=2 (loky) each task scores with its own unpickled copy of the scorer, in a worker
    process, whose warnings stay there (as scikit-learn's own do): the review found the
    docs promising "once per search" without saying so; they now say it, and the NaN
    scores, which show in cv_results_, are the same."""
    serial, said_serial = _nan_fold_search(1)
    parallel, said_parallel = _nan_fold_search(2)
    assert np.isnan(serial.cv_results_["split1_test_score"]).all()
    np.testing.assert_array_equal(serial.cv_results_["split1_test_score"],
                                  parallel.cv_results_["split1_test_score"])
    assert len(said_serial) == 1
    assert len(said_parallel) <= 1


# --------------------------------------------------------------------------- spawn workers

def _worker_metrics(seed: int, weighted: bool):
    import fastbias as fb

    _, y, S, w = _data(800, seed=seed, weighted=weighted)
    s = np.random.default_rng(seed + 100).random(800) + 0.3 * y
    table = fb.bias_metrics(y, s, {c: S[c].to_numpy() for c in S}, sample_weight=w)
    frame = S.assign(y=y, s=s)
    res = fb.evaluate(frame, label="y", scores="s", subgroups=list(S.columns))
    return table, res


def _worker_result_with_replay(spill: bool):
    """A result made in this (worker) process that carries its warnings to the reader, as
    fastbias.dask._combine_lazily makes it; ``spill``: pickled and read back here first
    (a worker spilling it to disk, or handing it through its own store), then sent on."""
    import fastbias as fb

    frame = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1], "s": np.linspace(0, 1, 8),
                          "a": [1, 1, 0, 0, 0, 0, 0, 0], "b": [1, 0, 1, 0, 1, 0, 1, 0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fb.evaluate(frame, label="y", scores="s", subgroups=["a", "b"])
    result._replay = (os.getpid(), [(str(w.message), w.category) for w in caught])
    assert caught, "the one-class subgroup 'b' should be undefined"
    if spill:
        result = pickle.loads(pickle.dumps(result))
    return result


@pytest.fixture(scope="module")
def spawn_pool():
    with mp.get_context("spawn").Pool(2) as pool:
        yield pool


@pytest.mark.parametrize("weighted", [False, True])
def test_spawn_pool_bias_metrics_and_evaluate_equal_in_process(spawn_pool, weighted):
    got = spawn_pool.starmap(_worker_metrics, [(s, weighted) for s in (0, 1, 2)])
    for seed, (table, res) in zip((0, 1, 2), got):
        want_table, want_res = _worker_metrics(seed, weighted)
        pd.testing.assert_frame_equal(table, want_table, check_exact=True)
        pd.testing.assert_frame_equal(res.table, want_res.table, check_exact=True)
        pd.testing.assert_series_equal(res.overall_auc, want_res.overall_auc, check_exact=True)
        _, y, S, w = _data(800, seed=seed, weighted=weighted)
        s = np.random.default_rng(seed + 100).random(800) + 0.3 * y
        want = brute_scores(y, s, {c: S[c].to_numpy() for c in S}, w)
        assert _close(float(table["subgroup_auc"].min()), want["min_subgroup_auc"])


def test_result_pickled_in_same_process_keeps_fields_and_does_not_rewarn():
    X, y, S, _ = _data(300, seed=9)
    frame = S.assign(y=y, s=X[:, 0])
    res = fastbias.evaluate(frame, label="y", scores="s", subgroups=["a", "b"], ci="delong")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other = pickle.loads(pickle.dumps(res))
        _ = copy.deepcopy(res)
    assert not caught
    pd.testing.assert_frame_equal(other.table, res.table, check_exact=True)
    pd.testing.assert_series_equal(other.overall_auc, res.overall_auc, check_exact=True)
    assert (other.label, other.models, other.subgroups, other.settings, other.model_attrs) == \
        (res.label, res.models, res.subgroups, res.settings, res.model_attrs)
    assert other.thresholds is None and res.thresholds is None
    pd.testing.assert_frame_equal(other.for_model(), res.for_model(), check_exact=True)
    assert other.for_model().attrs == res.for_model().attrs
    pd.testing.assert_series_equal(other.final_metric(), res.final_metric(), check_exact=True)
    # its own replayed warnings (same process): not warned again, on pickle or deepcopy
    made_here = _worker_result_with_replay(spill=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pickle.loads(pickle.dumps(made_here))
        copy.deepcopy(made_here)
    assert not caught


def test_result_from_worker_warns_once_in_the_reader(spawn_pool):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = spawn_pool.apply(_worker_result_with_replay, (False,))
    said = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(said) == 1 and "b: subgroup_auc" in str(said[0].message)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pickle.loads(pickle.dumps(res))
    assert not caught


def test_result_read_back_in_its_own_worker_still_warns_the_reader(spawn_pool):
    """EvaluationResult.__setstate__ pops ``_replay`` even when it does not warn (same pid):
    a result that its worker pickles and reads back before sending it on (a Dask worker
    spilling it to disk, or passing it through its own store) loses the warnings it carries,
    and the client, which reads it last, is never told. Without that round trip the client
    gets one warning (test above)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spawn_pool.apply(_worker_result_with_replay, (True,))
    said = [w for w in caught if issubclass(w.category, UndefinedMetricWarning)]
    assert len(said) == 1, f"the reader saw {len(said)} warnings, expected 1"


def test_shallow_copy_of_result_leaves_the_original_replay_alone():
    """copy.copy hands the original's own __dict__ to __setstate__, which pops ``_replay``
    from it: the original loses the warnings it was to carry to another process."""
    res = _worker_result_with_replay(spill=False)
    assert hasattr(res, "_replay")
    copy.copy(res)
    assert hasattr(res, "_replay"), "copy.copy stripped the original's _replay"


# --------------------------------------------------------------------------- boosting

@pytest.mark.parametrize("make", [lightgbm_metric, xgboost_metric])
def test_boosting_metric_pickles_after_use(make):
    """joblib/loky pickle what holds the metric (a fitted XGBClassifier keeps it as its
    eval_metric). Before use it pickles; after one call it holds a weakref.ref in _bound and
    pickle raises TypeError: cannot pickle 'weakref.ReferenceType' object."""
    _, y, S, _ = _data(300, seed=10)
    ev = fastbias.BiasEvaluator(y, S)
    s = np.random.default_rng(11).random(300) + 0.2 * y
    metric = make(ev)
    labels = y.astype(float)
    fresh = pickle.loads(pickle.dumps(metric))(labels, s)
    first = metric(labels, s)
    assert fresh == first
    assert copy.deepcopy(metric)(labels, s) == first
    other = pickle.loads(pickle.dumps(metric))  # fails
    assert other(labels, s) == first


def test_xgboost_cross_validate_return_estimator_loky_like_serial():
    """Serially fine; with n_jobs=2 the fitted estimators travel back from the workers
    pickled, and XGBClassifier(eval_metric=xgboost_metric(ev)) after fit does not pickle."""
    xgb = pytest.importorskip("xgboost")
    X, y, _, _ = _data(400, seed=12)
    Xv, yv, Sv, _ = _data(200, seed=13)
    ev = fastbias.BiasEvaluator(yv, Sv)
    out = []
    for n_jobs in (1, 2):
        est = xgb.XGBClassifier(n_estimators=4, max_depth=2, n_jobs=1,
                                eval_metric=xgboost_metric(ev))
        out.append(cross_validate(est, X, y, cv=2, n_jobs=n_jobs, return_estimator=True,
                                  params={"eval_set": [(Xv, yv)], "verbose": False},
                                  error_score="raise"))
    assert np.array_equal(out[0]["test_score"], out[1]["test_score"])
    for a, b in zip(out[0]["estimator"], out[1]["estimator"]):
        assert a.evals_result() == b.evals_result()
