"""BiasEvaluator in model-selection loops: an independent review's tests (2026-11-28, fortieth
session).

Every number is checked against an own reference: tie-aware pair counts in
fractions.Fraction (weighted too), the Jigsaw final metric written out from its formula
(power mean of each AUC column, overall weight), or sklearn.metrics.roc_auc_score.
No defect was found in this area; the tests are pins.
"""
import pickle
import threading
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning

AUCS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")


# --------------------------------------------------------------------------- own reference

def _auc(pos, neg, wp, wn):
    num = den = Fraction(0)
    for a, wa in zip(pos, wp):
        for b, wb in zip(neg, wn):
            wa_, wb_ = Fraction(wa), Fraction(wb)
            den += wa_ * wb_
            num += wa_ * wb_ * (1 if a > b else Fraction(1, 2) if a == b else 0)
    return float("nan") if den == 0 else float(num / den)


def _table(y, s, groups, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s)
    w = np.ones(len(y), int) if w is None else np.asarray(w)
    out = {}
    for name, g in groups.items():
        g = np.asarray(g, bool)
        pick = lambda p, q: _auc(s[p], s[q], w[p], w[q])  # noqa: E731
        out[name] = {"subgroup_auc": pick(g & y, g & ~y), "bpsn_auc": pick(~g & y, g & ~y),
                     "bnsp_auc": pick(g & y, ~g & ~y)}
    return out


def _overall(y, s, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s)
    w = np.ones(len(y), int) if w is None else np.asarray(w)
    return _auc(s[y], s[~y], w[y], w[~y])


def _final(y, s, groups, w=None, p=-5.0, ow=0.25, omit=False):
    t = _table(y, s, groups, w)
    means = []
    for m in AUCS:
        v = np.array([t[g][m] for g in t])
        if omit:
            v = v[~np.isnan(v)]
        with np.errstate(divide="ignore"):
            means.append(np.mean(v ** p) ** (1 / p))
    return ow * _overall(y, s, w) + (1 - ow) * np.mean(means)


def _sub(groups, idx):
    return {k: np.asarray(v)[idx] for k, v in groups.items()}


def _same(a, b):
    return (np.isnan(a) and np.isnan(b)) or a == b


def _case(seed, n=30, k=3, levels=5):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    groups = {name: rng.random(n) < 0.4 for name in "abc"[:k]}
    s = rng.integers(0, levels, n) / (levels - 1)     # many ties
    return rng, y, groups, s


# --------------------------------------------------------------------------- score dtypes

def test_score_dtypes_give_the_exact_final_metric():
    rng, y, g, s = _case(3, n=40, k=2)
    ev = fastbias.BiasEvaluator(y, g)
    ints = rng.integers(0, 5, 40)
    assert ev.final_metric(s) == _final(y, s, g)
    assert ev.final_metric(s.astype(np.float32)) == _final(y, s.astype(np.float32), g)
    assert ev.final_metric(s.astype(np.float16)) == _final(y, s, g)
    assert ev.final_metric(ints) == _final(y, ints, g)
    assert ev.final_metric(ints.astype(np.uint8)) == _final(y, ints, g)
    assert ev.final_metric(list(s)) == _final(y, s, g)
    assert ev.final_metric(pd.Series(ints, dtype="Int64")) == _final(y, ints, g)
    # -0.0 ties +0.0
    signed = np.where(np.arange(40) % 2 == 0, -0.0, 0.0)
    mixed = np.where(s == 0, signed, s)
    assert ev.final_metric(mixed) == _final(y, s, g)
    # huge and subnormal magnitudes keep their order and ties
    assert ev.final_metric((s - 0.5) * 1e308) == _final(y, s, g)
    tiny = s * 4 * 5e-324
    assert ev.final_metric(tiny) == _final(y, tiny, g)


def test_float32_ties_are_decided_in_float32():
    # two float64 values apart that float32 rounds to one value: tied in float32 only
    y = np.array([1, 0, 1, 0], bool)
    g = {"a": np.array([1, 1, 0, 0], bool)}
    s64 = np.array([0.1, 0.1 + 1e-12, 0.3, 0.2])
    ev = fastbias.BiasEvaluator(y, g)
    assert ev.score(s64, "min_subgroup_auc") == 0.0
    assert ev.score(s64.astype(np.float32), "min_subgroup_auc") == 0.5
    assert ev.score(s64, "overall_auc") == roc_auc_score(y, s64)


@pytest.mark.parametrize("bad, first, what", [
    (np.nan, 7, "1 NaN and 0 infinite"), (np.inf, 7, "0 NaN and 1 infinite")])
def test_nonfinite_scores_name_count_and_position(bad, first, what):
    _, y, g, s = _case(3, n=40, k=2)
    ev = fastbias.BiasEvaluator(y, g)
    s = s.copy()
    s[first] = bad
    with pytest.raises(ValueError, match=f"y_score has {what}.*position {first}"):
        ev.final_metric(s)
    nullable = pd.Series(s, dtype="Float64")
    nullable[first] = pd.NA
    with pytest.raises(ValueError, match=f"y_score has 1 NaN.*position {first}"):
        ev.final_metric(nullable)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integer_scores_beyond_2_53_are_refused_not_rounded(dtype):
    y = np.array([0, 1, 0, 1], bool)
    ev = fastbias.BiasEvaluator(y, {"a": [True, True, False, False]})
    s = np.array([2 ** 53, 2 ** 53 + 1, 2 ** 53 + 1, 2 ** 53 + 2], dtype=dtype)
    with pytest.raises(ValueError, match=r"beyond 2\*\*53.*9007199254740993 at position 1"):
        ev.final_metric(s)


def test_per_call_weights_are_not_an_argument():
    _, y, g, s = _case(3)
    with pytest.raises(TypeError, match="sample_weight"):
        fastbias.BiasEvaluator(y, g).final_metric(s, sample_weight=np.ones(len(s)))


# --------------------------------------------------------------------------- pandas rows

def _labelled(seed=5, n=30):
    rng, y, g, s = _case(seed, n=n, k=2, levels=6)
    labels = pd.Index(rng.permutation(np.arange(100, 100 + n)))
    ev = fastbias.BiasEvaluator(pd.Series(y, index=labels), pd.DataFrame(g, index=labels))
    return rng, y, g, s, labels, ev


def test_pandas_scores_must_carry_the_evaluators_labels_in_order():
    rng, y, g, s, labels, ev = _labelled()
    assert ev.final_metric(pd.Series(s, index=labels)) == _final(y, s, g)
    assert ev.final_metric(s) == _final(y, s, g)          # positions
    perm = rng.permutation(len(s))
    with pytest.raises(ValueError, match="different indexes"):
        ev.final_metric(pd.Series(s, index=labels)[labels[perm]])
    with pytest.raises(ValueError, match="different indexes"):
        ev.final_metric(pd.Series(s))                     # default index: other labels
    with pytest.raises(ValueError, match="different indexes"):
        ev.scores_many(pd.DataFrame({"m": s}, index=labels).loc[labels[perm]])
    with pytest.raises(ValueError, match="scores of model 'm'.*different indexes"):
        ev.scores_many({"m": pd.Series(s, index=labels)[labels[perm]]})


def test_fold_scores_and_masks_are_checked_against_the_fold_rows_labels():
    rng, y, g, s, labels, ev = _labelled()
    fold = np.array([3, 1, 7, 10, 20, 2, 5, 8, 9, 11, 12, 13, 14, 15, 16])
    want = _final(y[fold], s[fold], _sub(g, fold))
    assert ev.final_metric(s[fold], index=fold) == want
    assert ev.final_metric(pd.Series(s[fold], index=labels[fold]), index=fold) == want
    with pytest.raises(ValueError, match="rows at index.*different indexes"):
        ev.final_metric(pd.Series(s[fold], index=labels[np.sort(fold)]), index=fold)
    mask = np.zeros(len(s), bool)
    mask[fold] = True
    rows = np.sort(fold)
    want = _final(y[rows], s[rows], _sub(g, rows))
    assert ev.final_metric(s[mask], index=mask) == want
    assert ev.final_metric(s[mask], index=pd.Series(mask, index=labels)) == want
    perm = rng.permutation(len(s))
    with pytest.raises(ValueError, match="different indexes"):
        ev.final_metric(s[mask], index=pd.Series(mask, index=labels)[labels[perm]])
    with pytest.raises(TypeError, match="pandas Index"):
        ev.final_metric(s[fold], index=pd.Index(fold))


def test_evaluator_without_labels_takes_pandas_scores_by_position():
    # documented: fastbias matches rows by position; only pandas inputs with labels are checked
    rng, y, g, s = _case(5, k=2, levels=6)
    ev = fastbias.BiasEvaluator(y, g)
    perm = rng.permutation(len(s))
    shuffled = pd.Series(s, index=np.arange(100, 130))[np.arange(100, 130)[perm]]
    assert ev.final_metric(shuffled) == _final(y, s[perm], g)
    with pytest.raises(ValueError, match="scores of model 'm' and scores of model 'k'"):
        ev.scores_many({"m": pd.Series(s), "k": pd.Series(s)[perm]})


# --------------------------------------------------------------------------- weights

def test_weights_fixed_at_construction_exact_on_all_rows_and_folds():
    rng, y, g, s = _case(7)
    w = rng.integers(0, 4, len(y)).astype(float)
    wf = rng.random(len(y))
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    assert ev.final_metric(s) == _final(y, s, g, w)
    fold = rng.permutation(len(y))[:18]
    assert ev.final_metric(s[fold], index=fold) == _final(y[fold], s[fold], _sub(g, fold), w[fold])
    evf = fastbias.BiasEvaluator(y, g, sample_weight=wf)
    assert evf.final_metric(s) == _final(y, s, g, [Fraction(x) for x in wf])
    assert evf.score(s, "overall_auc") == pytest.approx(roc_auc_score(y, s, sample_weight=wf),
                                                        rel=1e-14)


def test_huge_weight_keeps_tiny_aucs_exact():
    _, y, g, s = _case(7)
    w = np.ones(len(y))
    w[0] = 1e17
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    ref = _table(y, s, g, [Fraction(v) for v in w])
    got = ev.metrics(s)
    for name in g:
        for m in AUCS:
            assert _same(float(got.loc[name, m]), ref[name][m])
    assert ev.final_metric(s) == _final(y, s, g, [Fraction(v) for v in w])


def test_zero_weight_class_is_nan_with_one_warning():
    rng, y, g, s = _case(13, k=2)
    w = rng.integers(1, 3, len(y)).astype(float)
    w[g["a"] & y] = 0.0
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    ref = _table(y, s, g, w)
    with pytest.warns(UndefinedMetricWarning) as record:
        got = ev.scores(s)
    assert len(record) == 1
    assert np.isnan(got["final"]) and np.isnan(got["min_subgroup_auc"])
    assert got["min_bpsn_auc"] == min(ref["a"]["bpsn_auc"], ref["b"]["bpsn_auc"])


# --------------------------------------------------------------------------- state between calls

def test_caller_arrays_changed_in_place_after_construction_do_not_leak():
    rng, y, g, s = _case(17, n=40, k=2)
    before = _final(y, s, g)
    masks = {k: v.copy() for k, v in g.items()}
    matrix = np.c_[g["a"], g["b"]]
    frame = pd.DataFrame({k: v.copy() for k, v in g.items()})
    labels = y.astype(np.int64)
    w = np.ones(len(y))
    evs = [fastbias.BiasEvaluator(y, masks), fastbias.BiasEvaluator(y, matrix),
           fastbias.BiasEvaluator(y, frame), fastbias.BiasEvaluator(labels, g),
           fastbias.BiasEvaluator(y, g, sample_weight=w)]
    masks["a"][:] = ~masks["a"]
    matrix[:] = ~matrix
    frame.iloc[:, 0] = ~frame.iloc[:, 0]
    labels[:] = 1 - labels
    w[:5] = 7.0
    assert [ev.final_metric(s) for ev in evs] == [before] * 5


def test_index_and_scores_changed_in_place_between_calls():
    rng, y, g, s = _case(19, n=30, k=2)
    w = rng.integers(1, 4, 30).astype(float)
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w, fold_cache_size=4)
    fold = np.arange(0, 30, 2)
    scores = s[fold].copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        first = ev.scores(scores, ["final", "overall_auc"], index=fold)
        assert _same(first["final"], _final(y[fold], s[fold], _sub(g, fold), w[fold]))
        assert first["overall_auc"] == _overall(y[fold], s[fold], w[fold])
        fold[:] = np.arange(1, 30, 2)        # same array object, other rows (cached key)
        scores[:] = s[fold]
        second = ev.scores(scores, ["final", "overall_auc"], index=fold)
    assert _same(second["final"], _final(y[fold], s[fold], _sub(g, fold), w[fold]))
    assert second["overall_auc"] == _overall(y[fold], s[fold], w[fold])
    assert first["overall_auc"] != second["overall_auc"]


def test_many_folds_through_a_small_lru_cache_and_pickle():
    rng, y, g, s = _case(13, k=2)
    w = rng.integers(1, 3, len(y)).astype(float)
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w, fold_cache_size=2)
    folds = [rng.permutation(len(y))[:k] for k in (14, 18, 22, 26)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for it in range(40):
            f = folds[it % 4] if it % 3 else rng.permutation(len(y))[:rng.integers(8, 25)]
            ss = rng.integers(0, 4, len(f)) / 3
            assert _same(ev.final_metric(ss, index=f), _final(y[f], ss, _sub(g, f), w[f]))
        copy = pickle.loads(pickle.dumps(ev))
        for f in folds:
            assert _same(copy.final_metric(s[f], index=f), _final(y[f], s[f], _sub(g, f), w[f]))


def test_thousand_calls_on_tiny_data_stay_exact():
    y = np.array([0, 1, 0, 1, 1, 0], bool)
    g = {"a": np.array([1, 1, 1, 0, 0, 0], bool), "b": np.array([0, 1, 1, 1, 0, 0], bool)}
    ev = fastbias.BiasEvaluator(y, g)
    rng = np.random.default_rng(0)
    cache = {}
    for _ in range(1000):
        s = rng.integers(0, 3, 6)
        key = tuple(s)
        if key not in cache:
            cache[key] = _final(y, s, g)
        assert _same(ev.final_metric(s), cache[key])


def test_one_evaluator_shared_by_threads():
    rng, y, g, s = _case(13, k=2)
    w = rng.integers(1, 3, len(y)).astype(float)
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    results = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(15):
            f = r.permutation(len(y))[:r.integers(10, 30)]
            ss = r.integers(0, 6, len(f)) / 5
            results.append((f, ss, ev.score(ss, "overall_auc", index=f)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 45
    for f, ss, got in results:
        assert _same(got, _overall(y[f], ss, w[f]))


# --------------------------------------------------------------------------- aggregates

@pytest.mark.parametrize("power, weight", [(-5, 0.25), (1, 0.0), (-1, 1.0), (2, 0.5), (-20, 0.1)])
def test_final_metric_is_the_kaggle_formula(power, weight):
    _, y, g, s = _case(3, n=40, k=2)
    ev = fastbias.BiasEvaluator(y, g, power=power, overall_weight=weight)
    assert ev.final_metric(s) == pytest.approx(_final(y, s, g, p=power, ow=weight), rel=1e-14)


def test_undefined_policies_on_min_scores_and_final():
    rng, y, g, s = _case(7)
    g = dict(g, d=np.zeros(len(y), bool), e=y.copy())    # empty; positives only
    ref = _table(y, s, g)
    with pytest.warns(UndefinedMetricWarning) as record:
        got = fastbias.BiasEvaluator(y, g).scores(s)
    assert len(record) == 1
    assert all(np.isnan(got[k]) for k in ("final", "min_subgroup_auc", "min_bpsn_auc",
                                          "min_bnsp_auc"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fastbias.BiasEvaluator(y, g, undefined="omit").scores(s)
    assert got["final"] == _final(y, s, g, omit=True)
    for m in AUCS:
        values = [ref[k][m] for k in ref if not np.isnan(ref[k][m])]
        assert got["min_" + m] == min(values)
    with pytest.raises(ValueError, match="undefined"):
        fastbias.BiasEvaluator(y, g, undefined="raise").scores(s)


def test_omit_with_every_subgroup_undefined_warns():
    y = np.array([0, 0, 0, 1, 1, 1, 0, 1], bool)
    g = {"a": np.array([1, 1, 0, 0, 0, 0, 0, 0], bool), "b": np.array([0, 0, 1, 1, 0, 0, 0, 0], bool)}
    s = np.arange(8) / 10
    ev = fastbias.BiasEvaluator(y, g, undefined="omit")
    with pytest.warns(UndefinedMetricWarning, match="every subgroup"):
        got = ev.scores(s[[0, 1, 4, 5]], index=[0, 1, 4, 5])
    assert np.isnan(got["final"]) and got["overall_auc"] == 1.0 and got["min_bpsn_auc"] == 1.0


def test_intersections_enter_min_scores_but_not_final():
    _, y, g, s = _case(7)
    ev = fastbias.BiasEvaluator(y, g, intersections=2)
    assert ev.subgroup_names == ["a", "b", "c", "a & b", "a & c", "b & c"]
    both = dict(g)
    for a, b in [("a", "b"), ("a", "c"), ("b", "c")]:
        both[f"{a}&{b}"] = g[a] & g[b]
    ref = _table(y, s, both)
    got = ev.scores(s)
    assert got["final"] == _final(y, s, g)
    for m in AUCS:
        assert got["min_" + m] == min(ref[k][m] for k in ref)
    assert ev.metrics_many([s]).final_metric().tolist() == [_final(y, s, g)]
    assert fastbias.final_metric(ev.metrics(s)) == _final(y, s, g)


def test_metrics_many_and_scores_many_follow_the_evaluator_settings():
    rng, y, g, s = _case(9, n=24, k=2)
    g = dict(g, e=np.zeros(24, bool))
    ev = fastbias.BiasEvaluator(y, g, undefined="omit", power=-2, overall_weight=0.4)
    other = s[::-1].copy()
    want = [_final(y, v, g, p=-2, ow=0.4, omit=True) for v in (s, other)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)   # the tables' NaN rows
        assert ev.metrics_many([s, other]).final_metric().tolist() == want
    assert ev.scores_many({"m1": s, "m2": other}, ["final"])["final"].tolist() == want
    fold = rng.permutation(24)[:16]
    got = ev.scores_many(np.c_[s[fold], other[fold]], ["final", "overall_auc"], index=fold)
    assert got["final"].tolist() == [_final(y[fold], v[fold], _sub(g, fold), p=-2, ow=0.4,
                                            omit=True) for v in (s, other)]
    assert got["overall_auc"].tolist() == [_overall(y[fold], v[fold]) for v in (s, other)]
    assert got["overall_auc"].tolist() == pytest.approx(
        [roc_auc_score(y[fold], v[fold]) for v in (s, other)], rel=1e-14)


def test_label_and_subgroup_thresholds_compare_float32_exactly():
    # float32(0.1) = 0.10000000149 < 0.1000000016, although float32(0.1000000016) == it
    v, t = np.float32(0.1), 0.1000000016
    assert np.float32(t) == v and float(v) < t
    y = np.array([v, 0.9, v, 0.9, 0.0, 0.9], dtype=np.float32)
    ev = fastbias.BiasEvaluator(y, {"a": [1, 1, 0, 0, 1, 0]}, label_threshold=t)
    assert ev.labels.tolist() == [False, True, False, True, False, True]
    groups = pd.DataFrame({"a": np.array([v, v, 1, 0, 0, 1], np.float32)})
    ev = fastbias.BiasEvaluator([0, 1, 0, 1, 0, 1], groups, subgroup_threshold=t)
    table = ev.metrics([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert int(table.loc["a", "subgroup_size"]) == 2


def test_nan_membership_is_background_under_a_threshold():
    rng, y, g, s = _case(7)
    frame = pd.DataFrame({k: v.astype(float) for k, v in g.items()})
    frame.iloc[2, 0] = np.nan
    frame.iloc[5, 1] = 0.7
    frame.iloc[6, 1] = 0.3
    ev = fastbias.BiasEvaluator(y, frame, subgroup_threshold=0.5)
    ref = {k: (frame[k].fillna(0) >= 0.5).to_numpy() for k in frame}
    assert ev.final_metric(s) == _final(y, s, ref)
    nullable = pd.DataFrame({k: pd.array(v, dtype="boolean") for k, v in g.items()})
    nullable.iloc[4, 1] = pd.NA
    with pytest.raises(ValueError, match="subgroup 'b' has 1 NaN or missing.*position 4"):
        fastbias.BiasEvaluator(y, nullable)


def test_categorical_features_and_their_combinations_on_folds():
    rng = np.random.default_rng(17)
    n = 40
    y = rng.random(n) < 0.5
    race = rng.choice(["black", "white", "asian", None], n)
    sex = np.asarray(rng.choice(["f", "m"], n))
    s = rng.integers(0, 5, n) / 4
    groups = {f"race={v}": race == v for v in ["asian", "black", "white"]}
    groups.update({f"sex={v}": sex == v for v in ["f", "m"]})
    for v in ["asian", "black", "white"]:
        for u in ["f", "m"]:
            m = (race == v) & (sex == u)
            if (m & y).any() and (m & ~y).any():      # min_subgroup_size=1, on all rows
                groups[f"race={v} & sex={u}"] = m
    frame = pd.DataFrame({"race": race, "sex": pd.Categorical(sex)})
    ev = fastbias.BiasEvaluator(y, frame, undefined="omit")
    assert ev.subgroup_names == list(groups)
    assert ev.final_metric(s) == _final(y, s, groups, omit=True)
    fold = rng.permutation(n)[:22]
    got = ev.scores(s[fold], ["final", "min_bnsp_auc"], index=fold)
    ref = _table(y[fold], s[fold], _sub(groups, fold))
    assert got["final"] == _final(y[fold], s[fold], _sub(groups, fold), omit=True)
    assert got["min_bnsp_auc"] == min(r["bnsp_auc"] for r in ref.values()
                                      if not np.isnan(r["bnsp_auc"]))


def test_significance_on_a_fold_equals_bias_metrics_on_its_rows():
    # documented claim: the same significance= on bias_metrics and BiasEvaluator.metrics
    rng, y, g, s = _case(21, n=60, k=2, levels=8)
    fold = rng.permutation(60)[:40]
    ev = fastbias.BiasEvaluator(y, g)
    got = ev.metrics(s[fold], index=fold, significance="holm")
    want = fastbias.bias_metrics(y[fold], s[fold], _sub(g, fold), significance="holm")
    cols = [c for c in want.columns if "pvalue" in c]
    assert cols
    pd.testing.assert_frame_equal(got[cols], want[cols], check_exact=True)


# --------------------------------------------------------------------------- scikit-learn

def test_scorer_three_ways_and_routed_weights_match_own_fold_reference():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.pipeline import make_pipeline

    from fastbias.sklearn import make_bias_scorer

    rng = np.random.default_rng(11)
    n = 90
    x = rng.normal(size=n)
    y = x + rng.normal(size=n) > 0
    g = pd.DataFrame({"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.4})
    w = rng.integers(1, 4, n).astype(float)
    labels = rng.permutation(np.arange(1000, 1000 + n))
    X = pd.DataFrame({"x": x}, index=labels)
    S = g.set_axis(labels)
    cv = KFold(3, shuffle=True, random_state=0)

    def reference(weighted):
        out = []
        for train, test in cv.split(X):
            model = LogisticRegression().fit(X.iloc[train], y[train])
            sc = model.decision_function(X.iloc[test])
            out.append(_final(y[test], sc, {k: g[k].to_numpy()[test] for k in g},
                              w[test] if weighted else None))
        return out

    plain, weighted = reference(False), reference(True)
    shuffled = S.iloc[rng.permutation(n)]
    got = cross_val_score(LogisticRegression(), X, y, cv=cv,
                          scoring=make_bias_scorer("final", subgroups=shuffled))
    assert got.tolist() == pytest.approx(plain, rel=1e-12)
    pipe = make_pipeline(ColumnTransformer([("x", "passthrough", ["x"])]), LogisticRegression())
    got = cross_val_score(pipe, X.assign(a=S["a"], b=S["b"]), y, cv=cv,
                          scoring=make_bias_scorer("final", subgroup_columns=["a", "b"]))
    assert got.tolist() == pytest.approx(plain, rel=1e-12)
    with sklearn.config_context(enable_metadata_routing=True):
        got = cross_val_score(LogisticRegression(), X, y, cv=cv, scoring=make_bias_scorer("final"),
                              params={"subgroups": S})
        assert got.tolist() == pytest.approx(plain, rel=1e-12)
        scorer = make_bias_scorer("final").set_score_request(subgroups=True, sample_weight=True)
        model = LogisticRegression().set_fit_request(sample_weight=False)
        got = cross_val_score(model, X, y, cv=cv, scoring=scorer,
                              params={"subgroups": S, "sample_weight": pd.Series(w, index=labels)})
        assert got.tolist() == pytest.approx(weighted, rel=1e-12)
        scorer = make_bias_scorer("final", subgroups=shuffled).set_score_request(sample_weight=True)
        got = cross_val_score(model, X, y, cv=cv, scoring=scorer, params={"sample_weight": w})
        assert got.tolist() == pytest.approx(weighted, rel=1e-12)
