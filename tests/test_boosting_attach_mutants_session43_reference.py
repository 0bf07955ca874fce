"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/boosting.py (the LightGBM and XGBoost evaluation metrics) and five mutants of
fastbias/intervals/attach.py that the forty-second session's audit had not run. 45 hand mutants
were run against the tests that exercise them: 19 killed there, 26 lived; the tests here kill
21 of them (each checked to fail with its mutant; the docstrings name them: the same evaluator
listed twice, evaluators differing in ``overall_weight`` or weights, the float32 label
tolerance and its midpoint, duplicate or empty metric lists, a label array bound to the
scikit-learn call, (n, 1) predictions, relabelled sets and pairs, pickling and copies,
mixed lists; in attach.py the weighted DeLong check (weights of 1e100 gave zero-width
intervals), the table-match tolerance and the "already has intervals" check). 4 were
equivalent (names and identity rows follow from the fields compared, a stale binding
overwritten, the classes' weights used only through their minimum) and one depends on Python
reusing an object's id. No defect was found.

The metric objects are driven with hand-made stand-ins for LightGBM's Dataset and XGBoost's
DMatrix (what ``train`` hands a custom metric). Expected values come from
sklearn.metrics.roc_auc_score, brute-force pair counts (tests/reference.py) and the Kaggle
kernel's final metric (tests/_kernel_ref.py), never from fastbias."""
import copy
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.boosting import lightgbm_metric, xgboost_metric
from fastbias.evaluator import BiasEvaluator
from fastbias.intervals import add_intervals

from ._kernel_ref import get_final_metric
from .reference import brute_force_metrics


class FakeDataset:
    """What lightgbm.train hands feval: get_label() (float32) and num_data()."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)

    def get_label(self):
        return self.labels.astype(np.float32) if self.labels.dtype != np.float32 else self.labels

    def num_data(self):
        return len(self.labels)


class FakeDMatrix:
    """What xgboost.train hands custom_metric: get_label() (float32) and num_row()."""

    def __init__(self, labels):
        self.labels = np.asarray(labels)

    def get_label(self):
        return self.labels.astype(np.float32)

    def num_row(self):
        return len(self.labels)


def _data(seed=3, n=60):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    g = rng.random((n, 2)) < np.array([0.3, 0.4])
    s = np.round(y * 0.8 + rng.normal(0, 0.7, n), 1)  # ties on purpose
    return y, g, s


def _reference(y, g, s, power=-5, overall_weight=0.25):
    """Independent numbers: sklearn overall AUC, exact pair counts per subgroup, the kernel's
    final metric."""
    rows = [brute_force_metrics(y, s, g[:, j]) for j in range(g.shape[1])]
    bias = pd.DataFrame(rows)
    overall = roc_auc_score(y, s)
    return {"final": get_final_metric(bias, overall, POWER=power,
                                      OVERALL_MODEL_WEIGHT=overall_weight),
            "overall_auc": overall,
            "min_subgroup_auc": bias["subgroup_auc"].min(),
            "min_bpsn_auc": bias["bpsn_auc"].min(),
            "min_bnsp_auc": bias["bnsp_auc"].min()}


# --------------------------------------------------------------------------- values, names

def test_lightgbm_train_call_defaults_equal_reference():
    """Kills B18 (default order), B19 (higher_is_better False), B38 (only first metric)."""
    y, g, s = _data()
    ref = _reference(y, g, s)
    out = lightgbm_metric(BiasEvaluator(y, g))(s, FakeDataset(y.astype(float)))
    assert [(n, h) for n, _, h in out] == [("final", True), ("min_bpsn_auc", True)]
    assert out[0][2] is True and out[1][2] is True
    assert out[0][1] == pytest.approx(ref["final"], abs=1e-12)
    assert out[1][1] == pytest.approx(ref["min_bpsn_auc"], abs=1e-12)


def test_xgboost_train_call_defaults_and_sklearn_call_report_last():
    """Kills B15/B16 (__name__ first metric), B17 (default order), B37 (sklearn call returns
    the first metric), B39 (DMatrix not bound)."""
    y, g, s = _data(4)
    ref = _reference(y, g, s)
    metric = xgboost_metric(BiasEvaluator(y, g))
    out = metric(s, FakeDMatrix(y))
    assert [n for n, _ in out] == ["min_bpsn_auc", "final"]
    assert all(len(t) == 2 for t in out)
    assert out[0][1] == pytest.approx(ref["min_bpsn_auc"], abs=1e-12)
    assert out[1][1] == pytest.approx(ref["final"], abs=1e-12)
    assert metric.__name__ == "final"
    m2 = xgboost_metric(BiasEvaluator(y, g), metrics=["overall_auc", "min_subgroup_auc"])
    assert m2.__name__ == "min_subgroup_auc"
    assert m2(y, s) == pytest.approx(ref["min_subgroup_auc"], abs=1e-12)


@pytest.mark.parametrize("maker", [lightgbm_metric, xgboost_metric])
def test_raw_margins_equal_probabilities_and_reference(maker):
    """AUC-based metrics are rank-invariant: raw margins and sigmoid probabilities agree."""
    y, g, s = _data(5)
    ref = _reference(y, g, s)
    ev = BiasEvaluator(y, g)
    names = ["final", "overall_auc", "min_subgroup_auc", "min_bpsn_auc", "min_bnsp_auc"]
    m = maker(ev, metrics=names)
    data = FakeDataset(y) if maker is lightgbm_metric else FakeDMatrix(y)
    a = m(s, data)
    b = m(1 / (1 + np.exp(-s)), data)
    for (na, va, *_), (nb, vb, *_), name in zip(a, b, names):
        assert na == nb == name
        assert va == pytest.approx(ref[name], abs=1e-12)
        assert vb == pytest.approx(ref[name], abs=1e-12)


def test_metric_name_validation():
    """Kills B12 (duplicates), B13 (empty), B14 (unknown names)."""
    y, g, _ = _data()
    ev = BiasEvaluator(y, g)
    with pytest.raises(ValueError, match="duplicates"):
        lightgbm_metric(ev, metrics=["final", "final"])
    with pytest.raises(ValueError, match="empty"):
        xgboost_metric(ev, metrics=[])
    with pytest.raises(ValueError):
        lightgbm_metric(ev, metrics=["roc_auc"])


def test_column_predictions_flattened_and_two_columns_refused():
    """Kills B21 ((n, 1) not flattened) and B22 ((n, 2) accepted)."""
    y, g, s = _data(6)
    ref = _reference(y, g, s)
    m = lightgbm_metric(BiasEvaluator(y, g), metrics=["final"])
    assert m(s[:, None], FakeDataset(y))[0][1] == pytest.approx(ref["final"], abs=1e-12)
    with pytest.raises(ValueError, match="one score per row"):
        m(np.column_stack([1 - s, s]), FakeDataset(y))


# --------------------------------------------------------------------------- label checks

def test_float32_label_on_the_midpoint_threshold_fits():
    """Threshold t = 0.5 + 2**-25 is the midpoint of float32 0.5 and its successor; a float64
    label t (positive) is float32 0.5 in the Dataset: the set's own evaluator must fit it
    (kills B07 '>' and B09 swapped branches)."""
    t = 0.5 + 2.0 ** -25
    assert np.float32(t) == np.float32(0.5)
    y, g, s = _data(7)
    labels = np.where(y, t, 0.1)
    ev = BiasEvaluator(labels, g, label_threshold=t)
    ref = _reference(y, g, s)
    out = lightgbm_metric(ev, metrics=["final"])(s, FakeDataset(labels))
    assert out[0][1] == pytest.approx(ref["final"], abs=1e-12)


def test_float32_label_no_negative_can_round_to_is_refused():
    """A negative row (float64 below t = 0.5 + 2**-25) can never be float32 0.5 + 2**-24 (that
    float32's lower midpoint is t itself): a set with that label there is not the evaluator's
    (kills B08 '<=')."""
    t = 0.5 + 2.0 ** -25
    y, g, s = _data(8)
    labels = np.where(y, 0.9, 0.1)
    ev = BiasEvaluator(labels, g, label_threshold=t)
    given = labels.astype(np.float32)
    j = int(np.flatnonzero(~y)[0])
    given[j] = np.float32(0.5 + 2.0 ** -24)
    with pytest.raises(ValueError, match="differ"):
        lightgbm_metric(ev)(s, FakeDataset(given))


def test_float32_labels_one_row_other_class_refused():
    """Float32 labels with one row of the other class are refused (kills B10 any())."""
    y, g, s = _data(9)
    labels = np.where(y, 0.9, 0.1)
    ev = BiasEvaluator(labels, g, label_threshold=0.5)
    given = labels.astype(np.float32)
    given[0] = np.float32(0.1 if y[0] else 0.9)
    with pytest.raises(ValueError, match="differ"):
        xgboost_metric(ev)(s, FakeDMatrix(given))


def test_float64_label_one_ulp_below_threshold_refused():
    """Float64 labels are exact: 0.5 - 2**-54 with threshold 0.5 is a negative, so a set
    whose positive row holds it is not the evaluator's (kills B06: the float32 allowance
    given to float64 labels)."""
    y, g, s = _data(10)
    labels = np.where(y, 0.5, 0.1)
    ev = BiasEvaluator(labels, g, label_threshold=0.5)
    given = labels.copy()
    given[int(np.flatnonzero(y)[0])] = np.nextafter(0.5, 0.0)
    with pytest.raises(ValueError, match="differ"):
        lightgbm_metric(ev)(given, s)  # the scikit-learn call: float64 labels as given


# --------------------------------------------------------------------------- evaluators

def test_same_evaluator_twice_is_not_ambiguous():
    """Kills B01."""
    y, g, s = _data(11)
    ev = BiasEvaluator(y, g)
    out = lightgbm_metric([ev, ev], metrics=["final"])(y, s)
    assert out[0][1] == pytest.approx(_reference(y, g, s)["final"], abs=1e-12)


@pytest.mark.parametrize("other", ["overall_weight", "sample_weight"])
def test_evaluators_differing_in_settings_or_weights_are_ambiguous(other):
    """Kills B04 (overall_weight ignored) and B05 (weights ignored): the two give other
    numbers, so the set's evaluator cannot be chosen."""
    y, g, s = _data(12)
    a = BiasEvaluator(y, g)
    kw = ({"overall_weight": 0.5} if other == "overall_weight"
          else {"sample_weight": np.arange(1, len(y) + 1, dtype=float)})
    b = BiasEvaluator(y, g, **kw)
    assert a.final_metric(s) != b.final_metric(s)
    with pytest.raises(ValueError, match="cannot be told from the data"):
        lightgbm_metric([a, b])(s, FakeDataset(y))


def test_mixed_list_is_a_type_error_naming_evaluators():
    """Kills B36 (pairs detected with any())."""
    y, g, _ = _data()
    ev = BiasEvaluator(y, g)
    with pytest.raises(TypeError, match="evaluators must be"):
        lightgbm_metric([ev, (FakeDataset(y), ev)])


# --------------------------------------------------------------------------- binding

def test_relabelled_set_bound_by_labels_is_matched_again():
    """A Dataset bound by its labels, relabelled, gets the evaluator of its new labels (kills
    B23: the old evaluator's numbers)."""
    y1, g1, s = _data(13)
    y2, g2, _ = _data(14)
    assert (y1 != y2).any()
    m = lightgbm_metric([BiasEvaluator(y1, g1), BiasEvaluator(y2, g2)], metrics=["final"])
    d = FakeDataset(y1)
    assert m(s, d)[0][1] == pytest.approx(_reference(y1, g1, s)["final"], abs=1e-12)
    d.labels = y2
    assert m(s, d)[0][1] == pytest.approx(_reference(y2, g2, s)["final"], abs=1e-12)


def test_relabelled_pair_is_refused_naming_the_pair():
    """Kills B24 (an explicit pair relabelled is matched by labels instead)."""
    y1, g1, s = _data(13)
    y2, _, _ = _data(14)
    d2 = FakeDMatrix(y1)
    m2 = xgboost_metric([(d2, BiasEvaluator(y1, g1))])
    m2(s, d2)
    d2.labels = y2
    with pytest.raises(ValueError, match="paired with a BiasEvaluator"):
        m2(s, d2)


def test_second_set_cannot_take_a_paired_evaluator():
    """Kills B29 (a set alike takes over an explicitly paired evaluator with a warning)."""
    y, g, s = _data(15)
    d_a, d_b = FakeDataset(y), FakeDataset(y)
    m = lightgbm_metric([(d_a, BiasEvaluator(y, g))])
    m(s, d_a)
    with pytest.raises(ValueError, match="paired with another evaluation set"):
        m(s, d_b)


@pytest.mark.parametrize("maker", [lightgbm_metric, xgboost_metric])
def test_label_arrays_taking_turns_warn_then_refuse(maker):
    """The scikit-learn call: two live label arrays alike with one evaluator: the second takes
    it over with a UserWarning, the first seen again is refused (kills B20, B28, B30, B31,
    B32)."""
    y, g, s = _data(16)
    ya, yb = y.copy(), y.copy()
    m = maker(BiasEvaluator(y, g), metrics=["final"])
    m(ya, s)
    with pytest.warns(UserWarning, match="takes over its BiasEvaluator"):
        m(yb, s)
    with pytest.raises(ValueError, match="take turns"):
        m(ya, s)


def test_used_metric_pickles_and_copy_keeps_pairs():
    """Kills B34 (pickled with weak references) and B35 (deepcopy drops the pairs, twin sets
    then ambiguous)."""
    y, g, s = _data(17)
    a = BiasEvaluator(y, g)
    b = BiasEvaluator(y, g[:, ::-1])
    d_a, d_b = FakeDataset(y), FakeDataset(y)
    m = lightgbm_metric([(d_a, a), (d_b, b)], metrics=["final"])
    m(s, d_a)
    loaded = pickle.loads(pickle.dumps(m))
    assert loaded.metrics == ["final"]
    c = copy.deepcopy(m)
    assert c(s, d_b)[0][1] == pytest.approx(_reference(y, g[:, ::-1], s)["final"], abs=1e-12)
    assert c(s, d_a)[0][1] == pytest.approx(_reference(y, g, s)["final"], abs=1e-12)


# --------------------------------------------------------------------------- add_intervals

def _table_data(seed=20, n=50):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    g = {"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.5}
    s = np.round(y + rng.normal(0, 1, n), 1)
    return y, s, g


def test_weighted_delong_huge_weights_refused():
    """Kills A1: weights of 1e100 multiply to overflow in DeLong's sums; add_intervals must
    refuse them naming sample_weight."""
    y, s, g = _table_data()
    w = np.full(len(y), 1e100)
    table = fastbias.bias_metrics(y, s, g, sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight holds weights too far from 1"):
        add_intervals(table, y, s, g, method="delong", sample_weight=w)


def test_table_of_other_scores_by_1e_6_refused():
    """Kills A2: a table whose subgroup AUC is off by 1e-6 is not of these inputs."""
    y, s, g = _table_data()
    table = fastbias.bias_metrics(y, s, g)
    bad = table.copy()
    bad.loc["a", "subgroup_auc"] += 1e-6
    with pytest.raises(ValueError, match="table is not of these inputs"):
        add_intervals(bad, y, s, g, method="delong")


def test_table_with_ci_attrs_but_no_columns_refused():
    """Kills A3: a table of ci= with its interval columns dropped still has ci_method."""
    y, s, g = _table_data()
    table = fastbias.bias_metrics(y, s, g, ci="delong")
    stripped = table[[c for c in table.columns
                      if not str(c).endswith(("_low", "_high", "_se"))]].copy()
    stripped.attrs = dict(table.attrs)
    with pytest.raises(ValueError, match="already has intervals"):
        add_intervals(stripped, y, s, g, method="bootstrap", n_boot=20, random_state=0)


def test_undefined_delong_interval_warned_once():
    """Kills A5 (warn flag inverted): a subgroup with one negative has a defined AUC but no
    DeLong interval: one warning, and no undefined_intervals left in attrs."""
    y = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0], dtype=bool)
    s = np.arange(12) / 12.0
    g = {"a": np.array([1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0], dtype=bool)}
    table = fastbias.bias_metrics(y, s, g)
    assert np.isfinite(table.loc["a", "subgroup_auc"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = add_intervals(table, y, s, g, method="delong")
    assert np.isnan(out.loc["a", "subgroup_auc_se"])
    assert len([w for w in caught if "undefined" in str(w.message)]) == 1
    assert "undefined_intervals" not in out.attrs
