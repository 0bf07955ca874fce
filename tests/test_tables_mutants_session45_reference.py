"""A mutation audit of the table stage (``tables/result.py``), the value validation
(``validate/values.py``) and the report's histograms (``reports/histograms.py``), by an
independent reviewer (forty-fifth session): 48 hand mutants. 18 are killed by the existing
files the reviewer ran beside this one (tests/test_validation.py,
tests/test_report_mutants_session40_reference.py), 26 more by the tests here (7 of them
survivors of the reviewer's first round, each checked to fail with its mutant and pass
without), 3 are equivalent, and one (``bins`` 0 accepted) no longer applies: the check moved
into ``validate.settings.check_bins`` with this session's fix. The reviewer found
``score_histograms`` (and the one-subgroup figure) taking a reversed, NaN or infinite
``score_range`` without a word; both now refuse it by name.

Every expectation is independent of fastbias: brute-force pair counts (tests/reference.py),
sklearn's roc_auc_score, numpy.histogram, or counted by hand.
"""
import re
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.report import score_histograms
from fastbias.reports.histograms import HistogramCounter, histogram_edges
from fastbias.validate import values as V

from .reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives",
          "background_negatives", "background_positives"]


def _frame():
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0])
    a = np.array([.1, .9, .3, .7, .2, .6, .4, .8, .5, .35, .65, .25])
    b = np.array([.2, .3, .9, .4, .8, .1, .7, .6, .55, .45, .15, .95])
    g1 = np.array([1, 1, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0], dtype=float)
    g2 = np.array([0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1], dtype=float)
    return pd.DataFrame({"y": y, "a": a, "b": b, "g1": g1, "g2": g2})


# ---------------------------------------------------------------- tables (result.py)

def test_tidy_table_layout_counts_and_metrics_against_brute_force():
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores=["b", "a"], subgroups=["g2", "g1"])
    t = res.table
    assert list(t.columns[:2]) == ["model", "subgroup"]
    assert list(t.columns[2:7]) == COUNTS
    assert list(t.columns[7:12]) == METRICS
    # rows: model by model in the order given, subgroups in the order given
    assert list(t["model"]) == ["b", "b", "a", "a"]
    assert list(t["subgroup"]) == ["g2", "g1", "g2", "g1"]
    y = df.y.to_numpy().astype(bool)
    for _, row in t.iterrows():
        g = df[row.subgroup].to_numpy() > 0.5
        assert row.subgroup_size == g.sum()
        assert row.subgroup_negatives == (g & ~y).sum()
        assert row.subgroup_positives == (g & y).sum()
        assert row.background_negatives == (~g & ~y).sum()
        assert row.background_positives == (~g & y).sum()
        ref = brute_force_metrics(y, df[row.model].to_numpy(), g)
        for m in METRICS:
            assert row[m] == ref[m], (row.model, row.subgroup, m)
    for m in ["a", "b"]:
        assert res.overall_auc[m] == roc_auc_score(y, df[m])
    assert list(res.overall_auc.index) == ["b", "a"]
    fm = res.for_model("a")
    assert list(fm.index) == ["g2", "g1"]
    assert "model" not in fm.columns
    assert fm.attrs["overall_auc"] == roc_auc_score(y, df.a)
    w = res.wide(["bpsn_auc"])
    assert list(w.index) == ["g2", "g1"]
    assert list(w.columns) == [("bpsn_auc", "b"), ("bpsn_auc", "a")]
    assert w.loc["g1", ("bpsn_auc", "a")] == brute_force_metrics(y, df.a, df.g1 > .5)["bpsn_auc"]


def test_undefined_metrics_nan_with_one_warning_naming_model():
    df = _frame()
    # g3: all its rows negative -> subgroup_auc, bnsp_auc, positive_aeg undefined
    df["g3"] = ((df.y == 0) & (np.arange(12) < 6)).astype(float)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g1", "g3"])
    undefined = [w for w in caught if issubclass(w.category, fastbias.UndefinedMetricWarning)]
    assert len(undefined) == 2  # one per model
    assert "model 'a'" in str(undefined[0].message) and "model 'b'" in str(undefined[1].message)
    assert "3 metric value(s)" in str(undefined[0].message)
    row = res.for_model("a").loc["g3"]
    assert np.isnan(row.subgroup_auc) and np.isnan(row.bnsp_auc) and np.isnan(row.positive_aeg)
    ref = brute_force_metrics(df.y, df.a, df.g3 > .5)
    assert row.bpsn_auc == ref["bpsn_auc"] and row.negative_aeg == ref["negative_aeg"]


def test_weighted_table_weight_columns_and_metrics():
    df = _frame()
    w = np.array([1, 2, 0.5, 3, 1, 1, 2, 0.25, 4, 1, 1, 2.0])
    res = fastbias.evaluate(df.assign(w=w), label="y", scores="a", subgroups=["g1"],
                            sample_weight="w")
    row = res.for_model().loc["g1"]
    y, g = df.y.to_numpy().astype(bool), df.g1.to_numpy() > .5
    assert row.subgroup_negative_weight == w[g & ~y].sum()
    assert row.subgroup_positive_weight == w[g & y].sum()
    assert row.background_negative_weight == w[~g & ~y].sum()
    assert row.background_positive_weight == w[~g & y].sum()
    ref = brute_force_metrics(y, df.a, g, w)
    for m in METRICS:
        assert row[m] == pytest.approx(ref[m], rel=2**-50, abs=2**-70)
    assert res.overall_auc["a"] == pytest.approx(roc_auc_score(y, df.a, sample_weight=w),
                                                 rel=1e-15)


def test_intersection_rows_named_and_after_subgroups():
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores="a", subgroups=["g1", "g2"],
                            intersections=2, min_subgroup_size=1)
    names = list(res.for_model().index)
    assert names[:2] == ["g1", "g2"] and len(names) == 3
    inter = names[2]
    assert "g1" in inter and "g2" in inter
    both = (df.g1 > .5) & (df.g2 > .5)
    row = res.for_model().loc[inter]
    assert row.subgroup_size == both.sum()
    ref = brute_force_metrics(df.y, df.a, both)
    for m in METRICS:
        assert row[m] == ref[m] or (np.isnan(row[m]) and np.isnan(ref[m]))


# ---------------------------------------------------------------- values.py

def test_scores_nonfinite_message_counts_and_position():
    s = np.array([0.1, 0.2, np.nan, np.inf, -np.inf, np.nan, 0.3])
    with pytest.raises(ValueError, match=re.escape(
            "y_score has 2 NaN and 2 infinite value(s) (first at position 2)")) as e:
        V.as_scores(s)
    assert "nan_policy" not in str(e.value)
    with pytest.raises(ValueError, match="nan_policy='omit'"):
        V.as_scores(s, omit=True)
    with pytest.raises(ValueError, match=re.escape("1 NaN and 0 infinite value(s) (first at "
                                                   "position 4)")):
        V.as_scores([1, 2, 3, 4, np.nan])


def test_scores_dtypes():
    assert V.as_scores(np.array([1, 2], dtype=np.float16)).dtype == np.float32
    assert V.as_scores(np.array([1, 2], dtype=np.float32)).dtype == np.float32
    out = V.as_scores(np.array([3, 2 ** 53], dtype=np.int64))
    assert out.dtype == np.float64 and out.tolist() == [3.0, 2.0 ** 53]
    with pytest.raises(ValueError, match="9007199254740993"):
        V.as_scores(np.array([3, 2 ** 53 + 1], dtype=np.int64))
    with pytest.raises(TypeError, match="y_score must be numeric"):
        V.as_scores(np.array([True, False]))
    with pytest.raises(TypeError, match="real-valued"):
        V.as_scores(np.array([1 + 1j]))
    with pytest.raises(ValueError, match="y_score is empty"):
        V.as_scores(np.array([], dtype=float))
    with pytest.raises(ValueError, match="7 rows but y_true has 3|has 3|length"):
        V.as_scores(np.zeros(7), n=3)


def test_labels_sets():
    assert V.as_labels([0, 1, 1, 0]).tolist() == [False, True, True, False]
    assert V.as_labels(np.array([True, False])).tolist() == [True, False]
    # {-1, 1}: not binary, the -1s counted and the first named
    with pytest.raises(ValueError, match=re.escape(
            "y_true is not binary: 2 value(s) other than 0/1 (e.g. -1 at position 1)")):
        V.as_labels([1, -1, 1, -1])
    # with a threshold, values outside [0, 1] are refused, counted and the first named
    with pytest.raises(ValueError, match=re.escape("3 value(s) outside [0, 1] (e.g. 2 at "
                                                   "position 2)")):
        V.as_labels([0, 1, 2, 2, -1], threshold=0.5)
    with pytest.raises(ValueError, match=re.escape("(e.g. 1.5 at position 0)")):
        V.as_labels([1.5, 0.0], threshold=0.5)
    # {1, 2} with pos_label
    assert V.as_labels([1, 2, 2, 1], pos_label=2).tolist() == [False, True, True, False]
    assert V.as_labels([1, 2, 2, 1], pos_label=1).tolist() == [True, False, False, True]
    # fractions: positive iff >= threshold (the threshold itself is positive)
    assert V.as_labels([0.0, 0.3, 0.5, 0.7, 1.0], threshold=0.5).tolist() == [
        False, False, True, True, True]
    assert V.as_labels([0.0, 1.0], threshold=0.0).tolist() == [True, True]
    assert V.as_labels([0.0, 0.999, 1.0], threshold=1.0).tolist() == [False, False, True]
    # float32 labels compared as real numbers: float32(0.7) < 0.7
    assert V.as_labels(np.array([0.7, 0.75], dtype=np.float32), threshold=0.7).tolist() == [
        False, True]
    # missing labels
    with pytest.raises(ValueError, match=re.escape("y_true has 2 missing label value(s)")):
        V.as_labels(pd.Series([1, None, 0, None], dtype="Int64"))
    # nullable boolean
    assert V.as_labels(pd.Series([True, False], dtype="boolean")).tolist() == [True, False]


def test_text_labels_pos_label():
    out = V.as_labels(np.array(["ok", "toxic", "ok"], dtype=object), pos_label="toxic")
    assert out.tolist() == [False, True, False]
    with pytest.raises(TypeError, match="non-numeric labels.*pass pos_label"):
        V.as_labels(np.array(["ok", "toxic"], dtype=object))
    with pytest.raises(ValueError, match=re.escape("has 3 distinct values")) as e:
        V.as_labels(np.array(["ok", "toxic", "ok", "maybe"], dtype=object), pos_label="toxic")
    assert "'maybe', first at position 3" in str(e.value)
    with pytest.raises(ValueError, match="pos_label 'bad' does not occur in y_true"):
        V.as_labels(np.array(["ok", "toxic"], dtype=object), pos_label="bad")
    with pytest.raises(ValueError, match="either pos_label or label_threshold"):
        V.as_labels([1, 2], pos_label=2, threshold=0.5)


def test_weights_validation_messages():
    assert V.as_sample_weight(None, 3) is None
    out = V.as_sample_weight(np.array([1, 2, 3], dtype=np.int64), 3)
    assert out.dtype == np.float64 and out.tolist() == [1.0, 2.0, 3.0]
    assert V.as_sample_weight([0.0, -0.0, 1.0], 3).tolist() == [0.0, 0.0, 1.0]
    w = np.ones(10)
    w[9], w[4] = -0.5, -2
    with pytest.raises(ValueError, match=re.escape(
            "sample_weight has 2 negative value(s) (e.g. -2.0 at position 4); weights must "
            "be >= 0")):
        V.as_sample_weight(w, 10)
    w = np.ones(5)
    w[3], w[1] = np.inf, -np.inf
    with pytest.raises(ValueError, match=re.escape("sample_weight has 2 infinite value(s) "
                                                   "(first at position 1)")):
        V.as_sample_weight(w, 5)
    with pytest.raises(ValueError, match=re.escape("sample_weight has 1 NaN or missing value(s)"
                                                   " (NaN, None or pd.NA; first at position 2)")):
        V.as_sample_weight([1.0, 1.0, np.nan], 3)
    with pytest.raises(TypeError, match="sample_weight must be numeric"):
        V.as_sample_weight(np.array([True, False]), 2)
    with pytest.raises(ValueError, match="beyond 2\\*\\*53|cannot hold"):
        V.as_sample_weight(np.array([1, 2 ** 53 + 1], dtype=np.int64), 2)
    assert V.as_sample_weight(np.array([], dtype=float), 0).shape == (0,)


def test_weight_spread_boundary():
    # exactly 2**-480 of the largest: accepted; just below: refused, naming both ends
    ok = np.array([1.0, 2.0 ** -480, 0.0])
    assert V.as_sample_weight(ok, 3).tolist() == ok.tolist()
    bad = np.array([0.0, 1.0, np.nextafter(2.0 ** -480, 0), 0.5])
    with pytest.raises(ValueError, match=re.escape("the smallest positive weight is")) as e:
        V.as_sample_weight(bad, 4)
    assert "at position 2" in str(e.value) and "at position 1" in str(e.value)
    # huge and tiny weights alone are fine
    assert V.as_sample_weight([1e300, 1e200], 2).tolist() == [1e300, 1e200]
    assert V.as_sample_weight([1e-300, 1e-200], 2).tolist() == [1e-300, 1e-200]


def test_interval_weight_bounds():
    V.check_interval_weights(2.0 ** 200, "w")
    V.check_interval_weights(2.0 ** -200, "w")
    V.check_interval_weights(0.0, "w")
    with pytest.raises(ValueError, match="too far from 1"):
        V.check_interval_weights(np.nextafter(2.0 ** 200, np.inf), "w")
    with pytest.raises(ValueError, match="too far from 1"):
        V.check_interval_weights(np.nextafter(2.0 ** -200, 0), "w")


def test_power_of_two_scale():
    assert V.power_of_two_scale(np.array([3.0, 1.0])) == 2.0
    assert V.power_of_two_scale(np.array([1.0])) == 1.0
    assert V.power_of_two_scale(np.array([0.75])) == 0.5
    assert V.power_of_two_scale(np.array([2.0])) == 2.0
    assert V.power_of_two_scale(np.array([0.0, 0.0])) == 1.0
    assert V.power_of_two_scale(np.array([], dtype=float)) == 1.0


def test_at_or_above_exact():
    assert V.at_or_above(np.array([0.5, 0.49], dtype=np.float32), 0.5).tolist() == [True, False]
    big = np.array([2 ** 53 + 3, 2 ** 53 + 4, 2 ** 53 + 5], dtype=np.int64)
    assert V.at_or_above(big, 2.0 ** 53 + 4).tolist() == [False, True, True]
    assert V.integer_cut(2.0 ** 53 + 4) == 2 ** 53 + 4
    assert V.integer_cut(0.5) is None
    u8 = np.array([0, 255], dtype=np.uint8)
    assert V._integers_at_or_above(u8, 300).tolist() == [False, False]
    assert V._integers_at_or_above(u8, 0).tolist() == [True, True]
    assert V._integers_at_or_above(u8, 255).tolist() == [False, True]


def test_weight_resolution_boundary():
    labels = np.array([False, False, True, True])
    # negatives: total 2**91 + 1, smallest 1: below 2**-90 of the total -> refused
    w = np.array([2.0 ** 91, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="a negative row of weight 1.0 at position 1"):
        V.check_weight_resolution_of(w, labels, "DeLong", 90)
    # exactly 2**-90 of a total of 2**90 cannot be made (the smallest adds to it); 2**-89 ok
    V.check_weight_resolution_of(np.array([2.0 ** 88, 1.0, 1.0, 1.0]), labels, "DeLong", 90)
    w = np.array([1.0, 1.0, 2.0 ** 91, 1.0])
    with pytest.raises(ValueError, match="a positive row of weight 1.0 at position 3"):
        V.check_weight_resolution_of(w, labels, "DeLong", 90)


def test_label_classes_pieces():
    a = V.LabelClasses.of_piece(np.array(["no", "no"], dtype=object), "yes", "in part 0")
    b = V.LabelClasses.of_piece(np.array(["yes", "no"], dtype=object), "yes", "in part 1")
    joined = V.LabelClasses.join([a, None, b])
    assert joined.positive
    joined.check("yes", "y")
    with pytest.raises(ValueError, match="pos_label 'yes' does not occur"):
        V.LabelClasses.join([a]).check("yes", "y")
    t = V.LabelClasses.of_piece(np.array([True, False]), 1, "")
    n = V.LabelClasses.of_piece(np.array([1, 0]), 1, "")
    with pytest.raises(ValueError, match="more than two distinct values"):
        V.LabelClasses.join([t, n]).check(1, "y")


# ---------------------------------------------------------------- histograms.py

def test_histograms_match_numpy_per_cell():
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g1", "g2"])
    h = score_histograms(df, res, bins=4)
    assert h.edges.tolist() == np.linspace(0, 1, 5).tolist()
    y = df.y.to_numpy().astype(bool)
    assert (h.n_rows, h.n_negatives, h.n_positives) == (12, 6, 6)
    for model in ["a", "b"]:
        s = df[model].to_numpy()
        for g in ["g1", "g2"]:
            m = df[g].to_numpy() > .5
            cells = h.cells(model, g)
            for name, mask in [("subgroup_negatives", m & ~y), ("subgroup_positives", m & y),
                               ("background_negatives", ~m & ~y),
                               ("background_positives", ~m & y)]:
                ref, _ = np.histogram(s[mask], bins=np.linspace(0, 1, 5))
                assert cells[name].tolist() == ref.tolist(), (model, g, name)


def test_histogram_edges_and_end_bins():
    # scores outside [0, 1]: the scores' range; values on the last edge in the last bin
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [-2.0, 0.0, 1.0, 2.0], "g": [1, 1, 0, 0.]})
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    h = score_histograms(df, res, bins=4)
    assert h.edges.tolist() == [-2.0, -1.0, 0.0, 1.0, 2.0]
    c = h.cells("s", "g")
    assert c["subgroup_negatives"].tolist() == [1, 0, 0, 0]
    assert c["subgroup_positives"].tolist() == [0, 0, 1, 0]
    assert c["background_negatives"].tolist() == [0, 0, 0, 1]
    assert c["background_positives"].tolist() == [0, 0, 0, 1]
    # a score_range narrower than the scores: outside values clipped into the end bins
    h2 = score_histograms(df, res, bins=2, score_range=(-1, 1))
    assert h2.edges.tolist() == [-1.0, 0.0, 1.0]
    c2 = h2.cells("s", "g")
    assert c2["subgroup_negatives"].tolist() == [1, 0]
    assert c2["background_positives"].tolist() == [0, 1]
    assert c2["subgroup_positives"].tolist() == [0, 1]
    # histogram_edges: a single value gets half a unit either side; [0,1] widened
    assert histogram_edges(3.0, 3.0, 2).tolist() == [2.5, 3.0, 3.5]
    assert histogram_edges(0.2, 0.4, 2).tolist() == [0.0, 0.5, 1.0]
    assert histogram_edges(0.2, 0.4, 2, widen=False).tolist() == pytest.approx([0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        score_histograms(df, res, bins=0)


def test_histograms_exclude_background_and_counter():
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1], "s": [.1, .9, .3, .6, .2, .8],
                       "g": [1, 1, 0, 0, np.nan, np.nan]})
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                            missing_subgroup="exclude")
    h = score_histograms(df, res, bins=2)
    c = h.cells("s", "g")
    assert c["background_negatives"].tolist() == [1, 0]  # only row 2 (row 4 unannotated)
    assert c["background_positives"].tolist() == [0, 1]
    counter = HistogramCounter(["s"], ["g"], np.array([0.0, 0.5, 1.0]))
    codes = np.array([[1], [1], [0], [0], [-1], [-1]])
    counter.add(df.y.to_numpy().astype(bool), codes, [df.s.to_numpy()])
    hc = counter.histograms()
    assert hc.counts.tolist() == h.counts.tolist()
    assert (hc.n_rows, hc.n_negatives, hc.n_positives) == (6, 3, 3)


# ---------------------------------------------------------------- survivors and defects

def test_subgroups_of_keeps_the_evaluation_order():
    """Kills mutant 'subgroups_of order' (``sorted(present)``): the subgroups come in the
    order they were given (g2 before g1), not sorted."""
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g2", "g1"])
    assert res.subgroups_of() == ["g2", "g1"]
    assert res.subgroups_of(["b"]) == ["g2", "g1"]
    assert res.subgroups == ["g2", "g1"]


def test_model_attrs_leave_out_the_overall_auc():
    """Kills mutant 'overall_auc kept in attrs': ``model_attrs`` holds what a model's table
    carried besides its rows, but the overall AUC is ``result.overall_auc`` (its own
    Series), not repeated in ``model_attrs``."""
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g1"])
    for m in ["a", "b"]:
        assert "overall_auc" not in res.model_attrs[m]
        assert res.for_model(m).attrs["overall_auc"] == roc_auc_score(df.y, df[m])


@pytest.mark.parametrize("score_range, error, message", [
    ((1.0, 0.0), ValueError, "low end below its high end"),
    ((0.5, 0.5), ValueError, "low end below its high end"),
    ((np.nan, 1.0), ValueError, "must be finite"),
    ((0.0, np.inf), ValueError, "must be finite"),
    ((Decimal("sNaN"), 1.0), ValueError, "must be finite"),
    ((0, 10 ** 400), ValueError, "must be finite"),
    ((0.0,), TypeError, "pair"),
    ((0.0, "1"), TypeError, "pair"),
    ((True, 1.0), TypeError, "pair"),
])
def test_a_bad_score_range_is_refused_by_name(score_range, error, message):
    """A reversed, empty, NaN or infinite ``score_range`` (or not a pair of numbers) is an
    error naming ``score_range`` and the value, in the report's histograms and in the
    one-subgroup figure. The reviewer found it taken without a word: (1, 0) gave edges
    [0.5, 0.5, 0.5] (bins of no width), (nan, 1) edges [nan, nan, 1.5] and (0, inf) edges
    [0, inf, inf], every row counted in bin 0."""
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.1, 0.2, 0.8, 0.9], "g": [1, 1, 0, 0.]})
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    with pytest.raises(error, match=message) as info:
        score_histograms(df, res, bins=2, score_range=score_range)
    assert "score_range" in str(info.value) and repr(score_range) in str(info.value)
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_subgroup_scores
    with pytest.raises(error, match=message):
        plot_subgroup_scores(df.y.to_numpy(), df.s.to_numpy(), df.g.to_numpy() > 0.5,
                             score_range=score_range)


def test_a_score_range_inside_the_scores_counts_the_rest_in_the_end_bins():
    """A valid ``score_range`` narrower than the scores: the edges are its ``bins + 1``
    equal steps, and scores outside it are counted in the end bins (numpy.histogram of
    the scores clipped to it)."""
    df = _frame()
    res = fastbias.evaluate(df, label="y", scores="a", subgroups=["g1"])
    h = score_histograms(df, res, bins=3, score_range=(0.25, 0.7))
    assert h.edges.tolist() == np.linspace(0.25, 0.7, 4).tolist()
    y, g, s = df.y.to_numpy() > 0, df.g1.to_numpy() > 0.5, df.a.to_numpy()
    ref, _ = np.histogram(np.clip(s[g & y], 0.25, 0.7), bins=h.edges)
    assert h.cells("a", "g1")["subgroup_positives"].tolist() == ref.tolist()


@pytest.mark.parametrize("bins", [0, -1, True, 2.0])
def test_the_figure_refuses_bins_that_are_not_a_positive_integer(bins):
    """``plot_subgroup_scores`` checks ``bins`` as ``score_histograms`` does (0 gave one
    edge and numpy's own error; 2.0 a figure of a float number of bins)."""
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_subgroup_scores
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        plot_subgroup_scores(np.array([0, 1, 0, 1]), np.array([.1, .2, .8, .9]),
                             np.array([1, 1, 0, 0], bool), bins=bins)


def test_tiny_negative_weight_refused():
    """Kills mutant 'tiny negative weights accepted' (``low < -1e-300``): any negative
    weight, however small (-5e-324, the least subnormal), is refused, named and placed."""
    with pytest.raises(ValueError, match=re.escape(
            "sample_weight has 1 negative value(s) (e.g. -5e-324 at position 1)")):
        V.as_sample_weight(np.array([1.0, -5e-324, 2.0]), 3)


def test_check_weight_spread_exact_boundary():
    """Kills mutant 'spread boundary (check)' (``<=``): weights spanning exactly 2**480
    pass (docs: refused when spanning *more* than 2**480); one ulp more is refused. The
    out-of-core spec calls this check directly, without the in-memory fast path."""
    V.check_weight_spread(2.0 ** -480, 1.0, "w")
    V.check_weight_spread(1.0, 2.0 ** 480, "w")
    with pytest.raises(ValueError, match="spans more than 2\\*\\*480"):
        V.check_weight_spread(np.nextafter(2.0 ** -480, 0), 1.0, "w")


def test_histogram_edges_widen_when_lowest_score_is_zero():
    """Kills mutant 'widen boundary at 0' (``lo > 0``): scores from exactly 0 to 0.5 lie in
    [0, 1], so the edges are [0, 0.5, 1] (not [0, 0.25, 0.5])."""
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [0.0, 0.5, 0.25, 0.4], "g": [1, 1, 0, 0.]})
    res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"])
    h = score_histograms(df, res, bins=2)
    assert h.edges.tolist() == [0.0, 0.5, 1.0]
    assert histogram_edges(0.0, 1.0, 2).tolist() == [0.0, 0.5, 1.0]


def test_histograms_leave_out_rows_omit_dropped():
    """Kills mutants 'n_negatives of all rows' and 'range includes dropped rows': under
    nan_policy='omit' a row of missing label (score -5) is left out of the class counts
    (2 negatives, 2 positives of 5 rows) and of the default range (the kept scores lie in
    [0, 1], so the edges are [0, 0.5, 1])."""
    df = pd.DataFrame({"y": [0, 1, np.nan, 1, 0], "s": [0.1, 0.9, -5.0, 0.6, 0.3],
                       "g": [1, 1, 1, 0, 0.]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"], nan_policy="omit")
    h = score_histograms(df, res, bins=2)
    assert (h.n_rows, h.n_negatives, h.n_positives) == (5, 2, 2)
    assert h.edges.tolist() == [0.0, 0.5, 1.0]
    c = h.cells("s", "g")
    assert c["subgroup_negatives"].tolist() == [1, 0]
    assert c["subgroup_positives"].tolist() == [0, 1]
    assert c["background_negatives"].tolist() == [1, 0]
    assert c["background_positives"].tolist() == [0, 1]
