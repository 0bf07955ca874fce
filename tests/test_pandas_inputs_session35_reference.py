"""An independent review's tests (2026-11-27) of pandas and array inputs to the Python API.

Every expected value comes from an independent brute-force reference below (pair counts with
ties 1/2, weights as fractions.Fraction), never from fastbias. Found by review (each failed
before its fix): ``BiasEvaluator.metrics_many``/``scores_many`` of an evaluator built from
arrays scored two models' Series of different row orders by position; ``plot_subgroup_scores``
read its inputs with ``np.asarray`` (text labels, a label 2 or NaN drawn as positives, NaN
memberships as members, Series paired by position). The other tests pin what held.
"""
from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.sklearn import bias_score

KEYS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ----------------------------------------------------------------- independent reference

def _auc(neg, pos, wn, wp):
    num = den = Fraction(0)
    for a, x in zip(neg, wn):
        for b, v in zip(pos, wp):
            w = Fraction(x) * Fraction(v)
            den += w
            if b > a:
                num += w
            elif b == a:
                num += w / 2
    return num / den if den else None


def ref_metrics(y, s, g, w=None):
    """The five metrics of one subgroup by brute force (exact rationals)."""
    y = [bool(v) for v in y]
    g = [bool(v) for v in g]
    s = [float(v) for v in s]
    w = [1] * len(y) if w is None else [float(v) for v in w]

    def cell(member, positive):
        rows = [i for i in range(len(y)) if g[i] == member and y[i] == positive]
        return [s[i] for i in rows], [w[i] for i in rows]

    sn, sp, bn, bp = cell(True, False), cell(True, True), cell(False, False), cell(False, True)

    def f(v, aeg=False):
        if v is None:
            return float("nan")
        return float(Fraction(1, 2) - v) if aeg else float(v)

    return {"subgroup_auc": f(_auc(sn[0], sp[0], sn[1], sp[1])),
            "bpsn_auc": f(_auc(sn[0], bp[0], sn[1], bp[1])),
            "bnsp_auc": f(_auc(bn[0], sp[0], bn[1], sp[1])),
            # 1/2 - P(s(D-) > s(Dg-)) = 1/2 - AUC(Dg- as "negatives", D- as "positives")
            "negative_aeg": f(_auc(sn[0], bn[0], sn[1], bn[1]), aeg=True),
            "positive_aeg": f(_auc(sp[0], bp[0], sp[1], bp[1]), aeg=True)}


def _assert_row(table, name, ref):
    for k in KEYS:
        got = float(table.loc[name, k])
        assert np.isclose(got, ref[k], rtol=0, atol=1e-15, equal_nan=True), (k, got, ref[k])


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    n = 16
    y = rng.random(n) < 0.5
    y[:2] = [False, True]
    s = rng.integers(0, 5, n) / 4  # heavy ties
    g = rng.random(n) < 0.5
    g[:4] = [True, True, False, False]
    w = rng.integers(1, 5, n).astype(float)
    return y, s, g, w, rng.permutation(n)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ----------------------------------------------------------------- found by review

def test_evaluator_many_models_with_disagreeing_indexes_are_refused(data):
    """Found by review: Two models' scores given as pandas Series whose indexes differ (one from a
    shuffled frame) pair different rows. The documented rule (docs/validation.md: "When two
    pandas inputs of a call carry row labels that are not equal ... that is an error") is
    kept by delong_paired_test(y, scores_a, scores_b) and by bias_metrics(numpy y, Series
    y_score, dict of Series) even with numpy labels, but BiasEvaluator.metrics_many /
    scores_many built from numpy labels score such a dict (or list) positionally without a
    word. Correct: ValueError naming both models. Cause: evaluator._check_score_rows returns
    at once when self._row_index is None, so the columns are never checked against each
    other (check_aligned([(name, score_matrix)]) would compare a dict's Series)."""
    y, s, g, _, perm = data
    a = pd.Series(s, index=perm)
    b = pd.Series(s)
    # the library's own rule, elsewhere:
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.delong_paired_test(y, a, b)
    ev = fastbias.BiasEvaluator(y, {"g": g})
    with pytest.raises(ValueError, match="different indexes"):
        ev.metrics_many({"a": a, "b": b})
    with pytest.raises(ValueError, match="different indexes"):
        ev.scores_many([a, b], ["overall_auc"])


def _plot(*args, **kwargs):
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_subgroup_scores

    return plot_subgroup_scores(*args, **kwargs)


def _curves(fig):
    return {p.get_label(): np.asarray(p.get_data().values) for p in fig.axes[0].patches}


def test_plot_subgroup_scores_refuses_misaligned_pandas_inputs():
    """Found by review: fastbias.plotting.plot_subgroup_scores(y_true, y_score, member) reads pandas
    Series by position whatever their indexes (np.asarray), so three Series of one frame in
    different row orders draw other rows' scores in each curve. Correct, as every other
    entry point: ValueError 'different indexes'. Cause: reports/plots.py
    plot_subgroup_scores never calls check_aligned."""
    y = pd.Series([0, 1, 0, 1], index=[0, 1, 2, 3])
    s = pd.Series([0.1, 0.6, 0.3, 0.9], index=[3, 2, 1, 0])
    g = pd.Series([True, True, False, False], index=[1, 0, 3, 2])
    with pytest.raises(ValueError, match="different indexes"):
        _plot(y, s, g, bins=2)


def test_plot_subgroup_scores_text_labels_are_not_all_positive():
    """Found by review: Labels 'no'/'yes' are read with np.asarray(y_true, dtype=bool): every
    non-empty string is True, so all four rows are drawn as positives and the negatives'
    curves vanish. Correct: TypeError as bias_metrics gives ('non-numeric labels ... pass
    pos_label'), or two negatives drawn. Cause: reports/plots.py plot_subgroup_scores casts
    with dtype=bool instead of fastbias' label reader (as_labels)."""
    try:
        fig = _plot(["no", "no", "yes", "yes"], [0.1, 0.6, 0.3, 0.9],
                    [True, True, False, False], bins=2)
    except TypeError:
        return
    curves = _curves(fig)
    assert "subgroup negatives" in curves, sorted(curves)


@pytest.mark.parametrize("labels", [[2, 0, 1, 1], [np.nan, 0, 1, 1], [0.2, 0.3, 0.9, 1.0]],
                         ids=["label-2", "label-nan", "fractions"])
def test_plot_subgroup_scores_refuses_non_binary_labels(labels):
    """Found by review: A label 2, a NaN label, or toxicity fractions 0.2/0.3 are all drawn as
    positives (bool(x) for x != 0). Correct (the contract of every other entry point): a
    ValueError naming y_true and the bad value/position ('not binary', 'missing label')."""
    with pytest.raises(ValueError, match="y_true"):
        _plot(labels, [0.1, 0.6, 0.3, 0.9], [True, True, False, False], bins=2)


def test_plot_subgroup_scores_refuses_nan_membership():
    """Found by review: A NaN membership (an unannotated row) is drawn as a member of the subgroup
    (bool(nan) is True). Correct: ValueError naming the member argument and position 0, as
    bias_metrics does ('subgroup ... has 1 NaN or missing value(s) (first at position 0)')."""
    with pytest.raises(ValueError, match="position 0"):
        _plot([0, 0, 1, 1], [0.1, 0.6, 0.3, 0.9], [np.nan, 1.0, 0.0, 0.0], bins=2)


# ----------------------------------------------------------------- properties that held

def test_equal_shuffled_and_duplicated_indexes_are_positional(data):
    y, s, g, w, perm = data
    ref = ref_metrics(y, s, g, w)
    for index in (perm, np.zeros(len(y), int), [f"r{i}" for i in perm],
                  pd.MultiIndex.from_arrays([perm, perm % 3]),
                  pd.date_range("2020", periods=len(y))[perm]):
        t = fastbias.bias_metrics(pd.Series(y, index=index), pd.Series(s, index=index),
                                  pd.DataFrame({"g": g}, index=index),
                                  sample_weight=pd.Series(w, index=index))
        _assert_row(t, "g", ref)


@pytest.mark.parametrize("which", ["y_score", "subgroups_df", "subgroups_dict",
                                   "sample_weight", "subgroups_categorical"])
def test_bias_metrics_refuses_other_index_order(data, which):
    y, s, g, w, perm = data
    Y = pd.Series(y, index=perm)
    args = {"y_score": pd.Series(s, index=perm), "subgroups": pd.DataFrame({"g": g}, index=perm),
            "sample_weight": pd.Series(w, index=perm)}
    other = np.sort(perm)
    if which == "y_score":
        args["y_score"] = pd.Series(s, index=other)
    elif which == "subgroups_df":
        args["subgroups"] = pd.DataFrame({"g": g}, index=other)
    elif which == "subgroups_dict":
        args["subgroups"] = {"g": pd.Series(g, index=other)}
    elif which == "sample_weight":
        args["sample_weight"] = pd.Series(w, index=other)
    else:
        args["subgroups"] = pd.Series(np.where(g, "a", "b"), index=other, name="race")
    with pytest.raises(ValueError, match="different indexes"):
        fastbias.bias_metrics(Y, args["y_score"], args["subgroups"],
                              sample_weight=args["sample_weight"])


def test_other_entry_points_refuse_other_index_order(data):
    y, s, g, w, perm = data
    Y, S = pd.Series(y, index=perm), pd.Series(s, index=perm)
    G = pd.DataFrame({"g": g})  # default index: another order than Y's
    for call in (lambda: fastbias.threshold_metrics(Y, S, G),
                 lambda: fastbias.pinned_auc(Y, S, G, method="expected"),
                 lambda: fastbias.overall_auc(Y, S, sample_weight=pd.Series(w)),
                 lambda: fastbias.BiasEvaluator(Y, G),
                 lambda: fastbias.BiasEvaluator(Y, G.set_index(Y.index)).metrics(pd.Series(s)),
                 lambda: bias_score(Y, pd.Series(s), subgroups=G.set_index(Y.index)),
                 lambda: fastbias.evaluate(
                     pd.DataFrame({"y": y, "s": s, "g": g}, index=perm), label="y",
                     scores="s", subgroups=["g"], sample_weight=pd.Series(w)),
                 lambda: fastbias.evaluate(
                     pd.DataFrame({"y": y, "s": s, "g": g}, index=perm), label="y",
                     scores="s", subgroups=["g"], sample_weight=pd.Series(w),
                     nan_policy="omit")):
        with pytest.raises(ValueError, match="different indexes"):
            call()


def test_evaluate_aligned_weights_and_integer_column_names(data):
    y, s, g, w, perm = data
    ref = ref_metrics(y, s, g, w)
    df = pd.DataFrame({0: y.astype(int), 1: s, 2: g, 4: w}, index=perm)[[4, 2, 1, 0]]
    r = fastbias.evaluate(df, label=0, scores=1, subgroups=[2], sample_weight=4)
    t = r.table.set_index("subgroup")
    _assert_row(t, 2, ref)
    df2 = pd.DataFrame({"y": y, "s": s, "g": g}, index=perm)
    t2 = fastbias.evaluate(df2, label="y", scores="s", subgroups=["g"],
                           sample_weight=pd.Series(w, index=perm)).table.set_index("subgroup")
    _assert_row(t2, "g", ref)


def _dtype_cases(y, s, g, w):
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    two = np.stack([s, np.zeros_like(s)]).T  # a strided column view
    ro = s.copy()
    ro.flags.writeable = False
    yield "nullable", pd.array(y, dtype="boolean"), pd.array(s, dtype="Float64"), \
        pd.DataFrame({"g": pd.array(g.astype(int), dtype="Int64")}), pd.array(w, dtype="Float64")
    yield "pyarrow", pd.array(y.astype(int), dtype="int8[pyarrow]"), \
        pd.array(s, dtype="double[pyarrow]"), \
        pd.DataFrame({"g": pd.array(g, dtype="bool[pyarrow]")}), pa.array(w)
    yield "polars", pl.Series(y), pl.Series(s), pl.DataFrame({"g": g}), pl.Series(w)
    yield "categorical-reversed", pd.Categorical(y.astype(int), categories=[1, 0]), \
        pd.Categorical(s, categories=sorted(set(s), reverse=True)), {"g": g}, \
        pd.Categorical(w, categories=sorted(set(w), reverse=True))
    yield "sparse", pd.arrays.SparseArray(y.astype(float), fill_value=0.0), \
        pd.arrays.SparseArray(s, fill_value=0.0), \
        pd.DataFrame({"g": pd.arrays.SparseArray(g)}), pd.arrays.SparseArray(w)
    yield "views", y[::-1][::-1], two[:, 0], np.asfortranarray(np.stack([g, ~g]).T)[:, :1], \
        np.stack([w, w]).T[:, 1]
    yield "readonly-2d", y[:, None], ro[None, :], pd.DataFrame({"g": g}), w[:, None]
    yield "lists", list(y), tuple(s), {"g": list(g)}, list(w)


def test_dtypes_and_containers_give_the_reference(data):
    y, s, g, w, _ = data
    ref = ref_metrics(y, s, g, w)
    for name, Y, S, G, W in _dtype_cases(y, s, g, w):
        t = fastbias.bias_metrics(Y, S, G, sample_weight=W)
        row = t.index[0]
        _assert_row(t, row, ref)


def test_missing_values_are_named_by_position_not_label(data):
    y, s, g, _, _ = data
    idx = [f"r{i}" for i in range(len(y))][::-1]
    S = pd.Series(pd.array(s, dtype="Float64"), index=idx)
    S.iloc[5] = pd.NA
    with pytest.raises(ValueError, match=r"y_score has 1 NaN .*first at position 5"):
        fastbias.bias_metrics(pd.Series(y, index=idx), S, {"g": pd.Series(g, index=idx)})
    Y = pd.Series(pd.array(y.astype(int), dtype="Int64"), index=idx)
    Y.iloc[7] = pd.NA
    with pytest.raises(ValueError, match=r"y_true has 1 missing .*position 7"):
        fastbias.bias_metrics(Y, s, {"g": g})
    G = pd.Series(pd.array(g, dtype="boolean"), index=idx)
    G.iloc[3] = pd.NA
    with pytest.raises(ValueError, match=r"subgroup 'g' has 1 NaN .*position 3"):
        fastbias.bias_metrics(y, s, {"g": G})
    W = pd.Series(np.ones(len(y)), index=idx)
    W.iloc[2] = np.nan
    W.iloc[9] = -1.0
    with pytest.raises(ValueError, match=r"sample_weight has 1 negative .*position 9"):
        fastbias.bias_metrics(y, s, {"g": g}, sample_weight=W, nan_policy="omit")


def test_shapes_and_empty_inputs(data):
    y, s, g, _, _ = data
    with pytest.raises(TypeError, match="y_score"):
        fastbias.bias_metrics(y, np.float64(0.5), {"g": g})
    with pytest.raises(ValueError, match="y_score must be one-dimensional"):
        fastbias.bias_metrics(y, pd.DataFrame({"a": s, "b": s}), {"g": g})
    with pytest.raises(ValueError, match="y_true is empty"):
        fastbias.bias_metrics(pd.Series([], dtype=float), pd.Series([], dtype=float),
                              pd.DataFrame({"g": pd.Series([], dtype=bool)}))
    t = fastbias.bias_metrics([1], [0.5], {"g": [True]})
    assert t.loc["g", KEYS].isna().all()
    with pytest.raises(ValueError, match="duplicate name"):
        fastbias.bias_metrics(y, s, pd.DataFrame(np.stack([g, ~g]).T, columns=["g", "g"]))
    with pytest.raises(ValueError, match="duplicate name"):
        fastbias.bias_metrics(y, s, pd.DataFrame({1: g, "1": ~g}))


def test_decimals_and_big_integers_from_arrow_are_refused_not_rounded():
    pa = pytest.importorskip("pyarrow")
    import decimal

    d = [decimal.Decimal("0.1"), decimal.Decimal("0.10000000000000000001")]
    with pytest.raises(ValueError, match="float64 cannot hold exactly"):
        fastbias.overall_auc([0, 1], pd.array(d, dtype=pd.ArrowDtype(pa.decimal128(38, 20))))
    with pytest.raises(ValueError, match="beyond 2\\*\\*53"):
        fastbias.overall_auc([0, 1, 1], pa.array([2**53, 2**53 + 1, None]))


@pytest.mark.parametrize("make", [lambda v: pd.Series(v), lambda v: pd.Series(v, dtype="category"),
                                  lambda v: pd.Series(v, dtype="string")])
def test_text_numbers_under_a_subgroup_threshold_are_refused_not_made_categories(make):
    """Found by review: a text identity column of numbers ("0.7"/"0.2") with an explicit
    subgroup_threshold gave subgroups "g=0.2" and "g=0.7" (the threshold not applied) in
    bias_metrics and BiasEvaluator, where evaluate refuses it; now a TypeError naming the
    column, a value and its position. Without the threshold: one subgroup per value, sized as
    counted by hand."""
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    g = make([None, "0.2", "0.7", "0.2", "0.7", "0.2"])
    for call in (lambda: fastbias.bias_metrics(y, s, {"g": g}, subgroup_threshold=0.5),
                 lambda: fastbias.BiasEvaluator(y, {"g": g}, subgroup_threshold=0.5)):
        with pytest.raises(TypeError, match=r"subgroup 'g' holds numbers written as text "
                                            r"\(e.g. '0.2' at position 1\)"):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, {"g": g})
    assert dict(zip(table.index, table["subgroup_size"])) == {"g=0.2": 3, "g=0.7": 2}
