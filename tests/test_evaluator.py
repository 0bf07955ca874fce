"""BiasEvaluator: prepared once, scored many times, checked against independent references."""
import gc
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.evaluator import SCORE_NAMES, BiasEvaluator, sorted_scores
from fastbias.metrics import METRIC_COLUMNS
from fastbias.prepare.memberships import prepare_memberships, subgroup_rows
from fastbias.sweep.counts import sweep_counts
from tests.reference import brute_force_metrics

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]


def reference_power_mean(values, p):
    values = np.asarray(values, dtype=np.float64)
    return float(np.mean(values ** p) ** (1.0 / p))


def reference_final_metric(y, s, groups: dict, w=None, power=-5, overall_weight=0.25):
    """The Kaggle formula from brute-force pair counts (no fastbias code)."""
    per_group = {g: brute_force_metrics(y, s, m, w) for g, m in groups.items()}
    means = [reference_power_mean([per_group[g][a] for g in groups], power) for a in AUCS]
    overall = roc_auc_score(y, s, sample_weight=w)
    return overall_weight * overall + (1 - overall_weight) * float(np.mean(means))


def assert_close(got, expected, tol=1e-12):
    if np.isnan(expected):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(expected, rel=tol, abs=tol)


def random_case(rng, n=400, k=4, levels=7, weighted=False):
    y = rng.random(n) < 0.35
    s = np.round(rng.random(n) + 0.3 * y, 1) if levels is None else \
        rng.integers(0, levels, n).astype(np.float64) / levels + 0.2 * y
    groups = {f"g{j}": rng.random(n) < rng.uniform(0.05, 0.4) for j in range(k)}
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    return y, s, groups, w


@pytest.fixture(scope="module")
def case():
    return random_case(np.random.default_rng(7))


# --------------------------------------------------------------------------- radix sort

@settings(max_examples=60, deadline=None)
@given(values=hnp.arrays(st.sampled_from([np.float32, np.float64]), st.integers(0, 300),
                         elements=st.floats(allow_nan=False, allow_infinity=True, width=32)),
       data=st.data())
def test_sorted_scores_equals_numpy_sort_and_stable_argsort(values, data):
    rows = np.asarray(data.draw(st.lists(st.integers(0, max(values.size - 1, 0)),
                                         max_size=values.size if values.size else 0)),
                      dtype=np.int64)
    got, order = sorted_scores(values, rows, with_order=True)
    gathered = values[rows] + 0.0
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, np.sort(gathered))
    assert not np.signbit(got[got == 0]).any()  # -0.0 became +0.0
    np.testing.assert_array_equal(order, np.argsort(gathered, kind="stable"))


def test_sorted_scores_extreme_values():
    for dtype in (np.float32, np.float64):
        info = np.finfo(dtype)
        x = np.array([0.0, -0.0, info.max, -info.max, info.tiny, -info.tiny,
                      info.smallest_subnormal, -info.smallest_subnormal, 1.0, -1.0, np.inf,
                      -np.inf, 0.5, 0.5], dtype=dtype)
        got, _ = sorted_scores(x, np.arange(x.size, dtype=np.int64))
        np.testing.assert_array_equal(got, np.sort(x + dtype(0.0)))


# --------------------------------------------------------------------------- one model

@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_metrics_equal_brute_force(weighted, dtype):
    rng = np.random.default_rng(1 + weighted)
    y, s, groups, w = random_case(rng, weighted=weighted)
    s = s.astype(dtype)
    ev = BiasEvaluator(y, groups, sample_weight=w)
    table = ev.metrics(s)
    for g, member in groups.items():
        expected = brute_force_metrics(y, s, member, w)
        for metric in METRIC_COLUMNS:
            assert_close(table.loc[g, metric], expected[metric])
        assert table.loc[g, "subgroup_size"] == member.sum()
    assert_close(table.attrs["overall_auc"], roc_auc_score(y, s, sample_weight=w))
    assert_close(ev.score(s, "overall_auc"), roc_auc_score(y, s, sample_weight=w))


def test_unweighted_counts_are_the_core_counts_exactly(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    names, rows = subgroup_rows(groups, len(y))
    core = sweep_counts(s, prepare_memberships(y, rows, names))
    mine = ev._counts(s, None)
    assert mine.counts.dtype == np.int64
    np.testing.assert_array_equal(mine.counts, core.counts)
    assert mine.twice_overall_u == core.twice_overall_u


@pytest.mark.jit_heavy
def test_two_thread_calls_equal_one_thread_calls_and_sklearn():
    """Above CONCURRENT_SWEEP_MIN_ROWS a one-model call sorts on two threads."""
    from fastbias.sweep.parallel import CONCURRENT_SWEEP_MIN_ROWS

    rng = np.random.default_rng(21)
    y, s, groups, _ = random_case(rng, n=CONCURRENT_SWEEP_MIN_ROWS + 5_000, k=3, levels=500)
    two = BiasEvaluator(y, groups)._counts(s, None)
    one = BiasEvaluator(y, groups, n_jobs=1)._counts(s, None)
    np.testing.assert_array_equal(two.counts, one.counts)
    assert two.twice_overall_u == one.twice_overall_u
    table = BiasEvaluator(y, groups).metrics(s)
    for g, member in groups.items():
        assert_close(table.loc[g, "subgroup_auc"], roc_auc_score(y[member], s[member]))
        bpsn = (member & ~y) | (~member & y)
        assert_close(table.loc[g, "bpsn_auc"], roc_auc_score(y[bpsn], s[bpsn]))
    assert_close(table.attrs["overall_auc"], roc_auc_score(y, s))


def test_final_metric_equals_reference_formula(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    assert_close(ev.final_metric(s), reference_final_metric(y, s, groups))
    ev2 = BiasEvaluator(y, groups, power=-2, overall_weight=0.5)
    assert_close(ev2.final_metric(s), reference_final_metric(y, s, groups, power=-2,
                                                             overall_weight=0.5))


def test_weighted_final_metric_equals_reference_formula():
    y, s, groups, w = random_case(np.random.default_rng(3), weighted=True)
    ev = BiasEvaluator(y, groups, sample_weight=w)
    assert_close(ev.final_metric(s), reference_final_metric(y, s, groups, w))


@pytest.mark.parametrize("metric", ["min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"])
def test_min_scores_are_the_worst_subgroup(case, metric):
    y, s, groups, _ = case
    auc = metric[4:]
    expected = min(brute_force_metrics(y, s, m)[auc] for m in groups.values())
    assert_close(BiasEvaluator(y, groups).score(s, metric), expected)


def test_scores_returns_every_metric_from_one_sweep(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    values = ev.scores(s)
    assert list(values) == list(SCORE_NAMES)
    for metric in SCORE_NAMES:
        assert values[metric] == ev.score(s, metric)


def test_label_and_subgroup_thresholds_like_jigsaw():
    df = fastbias.make_jigsaw_like(n_rows=3_000, n_identities=4, annotated_fraction=0.6,
                                   identity_fraction_range=(0.03, 0.1), random_state=2)
    names = list(df.columns[1:5])
    ev = BiasEvaluator(df["toxicity"], df[names], label_threshold=0.5, subgroup_threshold=0.5)
    y = df["toxicity"].to_numpy() >= 0.5
    s = df["model_biased"].to_numpy()
    members = {g: df[g].to_numpy() >= 0.5 for g in names}  # NaN is background
    assert_close(ev.final_metric(s), reference_final_metric(y, s, members))


def test_undefined_metrics_follow_nan_policy():
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9, 0.2, 0.6])
    groups = {"mixed": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool),
              "negatives_only": np.array([1, 0, 0, 0, 1, 0, 0, 0], bool)}
    ev = BiasEvaluator(y, groups)
    with pytest.warns(fastbias.UndefinedMetricWarning, match="negatives_only"):
        assert np.isnan(ev.final_metric(s))
    with pytest.warns(fastbias.UndefinedMetricWarning, match="negatives_only"):
        assert np.isnan(ev.score(s, "min_subgroup_auc"))
    with pytest.warns(fastbias.UndefinedMetricWarning, match="negatives_only"):
        table = ev.metrics(s)
    assert np.isnan(table.loc["negatives_only", "subgroup_auc"])
    # several scores of one call: one warning naming every reason
    with pytest.warns(fastbias.UndefinedMetricWarning) as record:
        both = ev.scores(s, ["final", "min_subgroup_auc", "min_bpsn_auc"])
    assert len(record) == 1
    assert "final metric is NaN" in str(record[0].message)
    assert "min subgroup_auc is NaN" in str(record[0].message)
    assert np.isnan(both["final"]) and np.isnan(both["min_subgroup_auc"])
    omit = BiasEvaluator(y, groups, undefined="omit")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # omit was asked for: silent
        got = omit.score(s, "min_subgroup_auc")
    assert_close(got, brute_force_metrics(y, s, groups["mixed"])["subgroup_auc"])
    # bpsn is defined for both groups: no warning, the plain minimum
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        expected = min(brute_force_metrics(y, s, m)["bpsn_auc"] for m in groups.values())
        assert_close(omit.score(s, "min_bpsn_auc"), expected)
    with pytest.raises(ValueError, match="negatives_only"):
        BiasEvaluator(y, groups, undefined="raise").score(s, "min_subgroup_auc")


# --------------------------------------------------------------------------- folds

def test_fold_index_equals_fresh_evaluation_on_the_subset(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    rng = np.random.default_rng(0)
    fold = rng.permutation(len(y))[:150]  # unsorted positions
    sub = {g: m[fold] for g, m in groups.items()}
    table = ev.metrics(s[fold], index=fold)
    for g in groups:
        expected = brute_force_metrics(y[fold], s[fold], sub[g])
        for metric in METRIC_COLUMNS:
            assert_close(table.loc[g, metric], expected[metric])
    assert_close(ev.final_metric(s[fold], index=fold),
                 reference_final_metric(y[fold], s[fold], sub))
    mask = np.zeros(len(y), bool)
    mask[fold] = True
    ordered = np.flatnonzero(mask)
    assert_close(ev.final_metric(s[ordered], index=mask), ev.final_metric(s[fold], index=fold))


def test_weighted_fold():
    y, s, groups, w = random_case(np.random.default_rng(11), weighted=True)
    ev = BiasEvaluator(y, groups, sample_weight=w)
    fold = np.arange(3, len(y), 3)
    sub = {g: m[fold] for g, m in groups.items()}
    assert_close(ev.final_metric(s[fold], index=fold),
                 reference_final_metric(y[fold], s[fold], sub, w[fold]))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), k=st.integers(1, 4),
       fold_fraction=st.floats(0.05, 1.0))
def test_fold_counts_equal_a_new_evaluator_property(seed, n, k, fold_fraction):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    s = rng.integers(0, 4, n).astype(np.float64)  # heavy ties
    groups = rng.random((n, k)) < 0.3
    fold = rng.permutation(n)[:max(1, int(fold_fraction * n))]
    ev = BiasEvaluator(y, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        got = ev._counts(s[fold], fold)
        names, rows = subgroup_rows(groups[fold], fold.size)
        expected = sweep_counts(s[fold], prepare_memberships(y[fold], rows, names))
    np.testing.assert_array_equal(got.counts, expected.counts)
    np.testing.assert_array_equal(got.cell_rows, expected.cell_rows)
    assert got.twice_overall_u == expected.twice_overall_u


def test_fold_preparation_is_cached_and_bounded(case):
    y, _, groups, _ = case
    ev = BiasEvaluator(y, groups, fold_cache_size=2)
    fold = np.arange(0, len(y), 2)
    assert ev._rows(fold) is ev._rows(fold.copy())
    for start in range(5):
        ev._rows(np.arange(start, len(y), 5))
    assert len(ev._folds) == 2
    no_cache = BiasEvaluator(y, groups, fold_cache_size=0)
    assert no_cache._rows(fold) is not no_cache._rows(fold)
    assert len(no_cache._folds) == 0


@pytest.mark.parametrize("index, error, match", [
    ([0, 1, 400], ValueError, r"outside \[0, 400\).*400 at position 2"),
    ([-1, 2], ValueError, "outside"),
    ([3, 5, 3], ValueError, "duplicate row: 3 at position 2"),
    ([0.0, 1.0], TypeError, "integer row positions"),
    (np.array([], dtype=np.int64), ValueError, "empty"),
    (np.ones(10, bool), ValueError, "boolean mask of 10 rows"),
    (pd.array([True, None] + [False] * 398, dtype="boolean"), ValueError,
     r"index has 1 missing value\(s\) \(first at position 1\)"),
    (np.ma.masked_array(np.ones(400, bool), mask=np.arange(400) >= 398), ValueError,
     r"index has 2 missing value\(s\) \(first at position 398\)"),
    (pd.array([3, None], dtype="Int64"), ValueError, r"index has 1 missing"),
])
def test_bad_index_is_named(case, index, error, match):
    y, _, groups, _ = case
    ev = BiasEvaluator(y, groups)
    with pytest.raises(error, match=match):
        ev.final_metric(np.zeros(len(index)), index=index)


def test_score_length_must_match_rows_or_index(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    with pytest.raises(ValueError, match="y_score has 399 rows but the evaluator has 400"):
        ev.final_metric(s[:-1])
    with pytest.raises(ValueError, match="y_score has 400 rows but index selects 3"):
        ev.final_metric(s, index=[0, 1, 2])
    with pytest.raises(ValueError, match="NaN"):
        ev.final_metric(np.where(np.arange(400) == 5, np.nan, s))


def test_bad_settings_fail_at_construction(case):
    y, _, groups, _ = case
    with pytest.raises(ValueError, match="undefined must be one of"):
        BiasEvaluator(y, groups, undefined="ignore")
    with pytest.warns(DeprecationWarning, match="BiasEvaluator"):
        assert BiasEvaluator(y, groups, nan_policy="omit").undefined == "omit"
    with pytest.raises(ValueError, match="overall_weight"):
        BiasEvaluator(y, groups, overall_weight=2)
    with pytest.raises(ValueError, match="n_jobs"):
        BiasEvaluator(y, groups, n_jobs=0)
    with pytest.raises(ValueError, match="fold_cache_size"):
        BiasEvaluator(y, groups, fold_cache_size=-1)
    with pytest.raises(ValueError, match="not binary"):
        BiasEvaluator(np.full(len(y), 0.3), groups)
    with pytest.raises(ValueError, match="metric must be one of"):
        BiasEvaluator(y, groups).score(np.zeros(len(y)), "auc")


# --------------------------------------------------------------------------- many models

@pytest.mark.parametrize("n_jobs", [1, 2])
def test_metrics_many_equals_one_model_at_a_time(case, n_jobs):
    y, s, groups, _ = case
    rng = np.random.default_rng(5)
    matrix = np.column_stack([s, np.round(s + rng.normal(0, 0.3, s.size), 1), 1 - s])
    ev = BiasEvaluator(y, groups)
    res = ev.metrics_many(matrix, model_names=["a", "b", "c"], n_jobs=n_jobs)
    assert res.models == ["a", "b", "c"]
    for j, name in enumerate(res.models):
        one = res.for_model(name)
        for g, member in groups.items():
            expected = brute_force_metrics(y, matrix[:, j], member)
            for metric in METRIC_COLUMNS:
                assert_close(one.loc[g, metric], expected[metric])
        assert_close(res.overall_auc[name], roc_auc_score(y, matrix[:, j]))
    scores = ev.scores_many(matrix, ["final", "min_bpsn_auc"], n_jobs=n_jobs)
    for j in range(3):
        assert_close(scores.iloc[j]["final"], reference_final_metric(y, matrix[:, j], groups))
        assert_close(scores.iloc[j]["min_bpsn_auc"],
                     min(brute_force_metrics(y, matrix[:, j], m)["bpsn_auc"]
                         for m in groups.values()))


def test_metrics_many_on_a_fold_and_input_forms(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    fold = np.arange(1, len(y), 2)
    frame = pd.DataFrame({"x": s[fold], "z": np.sqrt(s[fold])})
    by_frame = ev.scores_many(frame, ["final"], index=fold)
    by_dict = ev.scores_many({"x": s[fold], "z": np.sqrt(s[fold])}, "final", index=fold)
    by_list = ev.scores_many([s[fold], np.sqrt(s[fold])], "final", index=fold)
    assert list(by_frame.index) == ["x", "z"] and list(by_list.index) == ["model_0", "model_1"]
    np.testing.assert_array_equal(by_frame.to_numpy(), by_dict.to_numpy())
    np.testing.assert_array_equal(by_frame.to_numpy(), by_list.to_numpy())
    assert_close(by_frame.loc["x", "final"], ev.final_metric(s[fold], index=fold))


def test_metrics_many_shape_errors(case):
    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups)
    with pytest.raises(ValueError, match="transpose"):
        ev.metrics_many(np.vstack([s, s]))
    with pytest.raises(ValueError, match="model_names has 1 names for 2 models"):
        ev.metrics_many(np.column_stack([s, s]), model_names=["a"])
    with pytest.raises(ValueError, match="not unique"):
        ev.metrics_many(np.column_stack([s, s]), model_names=["a", "a"])
    with pytest.raises(ValueError, match="model 'b'"):
        ev.scores_many({"a": s, "b": s[:10]})


# --------------------------------------------------------------------------- memory

@pytest.mark.jit_heavy
def test_memory_stays_flat_over_1000_calls():
    y, _, groups, _ = random_case(np.random.default_rng(2), n=5_000, k=6, levels=50)
    ev = BiasEvaluator(y, groups)
    fold = np.arange(0, 5_000, 3)
    rng = np.random.default_rng(0)
    score_sets = [rng.random(5_000) for _ in range(4)]

    def call(i):
        scores = score_sets[i % 4]
        ev.final_metric(scores)
        ev.score(scores[fold], "min_bpsn_auc", index=fold.copy())

    for i in range(50):
        call(i)
    gc.collect()
    tracemalloc.start()
    try:
        for i in range(100):
            call(i)
        gc.collect()
        after_100 = tracemalloc.get_traced_memory()[0]
        for i in range(1_000):
            call(i)
        gc.collect()
        after_1100 = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # one call allocates ~100 kB of temporaries; growth must stay far below that per call
    assert after_1100 - after_100 < 64 * 1024, (after_100, after_1100)
    assert len(ev._folds) == 1


def test_evaluator_pickles_with_its_settings(case):
    import pickle

    y, s, groups, _ = case
    ev = BiasEvaluator(y, groups, power=-3, undefined="omit")
    fold = np.arange(0, len(y), 2)
    ev.final_metric(s[fold], index=fold)  # fill the fold cache
    copy = pickle.loads(pickle.dumps(ev))
    assert copy.power == -3 and copy.undefined == "omit" and len(copy._folds) == 0
    assert copy.nan_policy == "omit"  # the deprecated name reads the same setting
    assert copy.final_metric(s) == ev.final_metric(s)
    assert copy.final_metric(s[fold], index=fold) == ev.final_metric(s[fold], index=fold)


def test_string_labels_with_pos_label_equal_boolean_labels():
    rng = np.random.default_rng(7)
    n = 400
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n), 1)
    groups = {"g": rng.random(n) < 0.3, "h": rng.random(n) < 0.2}
    text = np.where(y, "toxic", "nontoxic")
    by_name = BiasEvaluator(text, groups, pos_label="toxic").metrics(s)
    pd.testing.assert_frame_equal(by_name, BiasEvaluator(y, groups).metrics(s))
    with pytest.raises(TypeError, match="pos_label"):
        BiasEvaluator(text, groups)
