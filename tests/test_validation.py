"""Bad and unusual inputs: every one gives a clear error or a result equal to brute force.

Each error must name the argument (or column) and say what is wrong; each
accepted input form must give the same numbers as the brute-force reference
on the equivalent clean numpy data.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.validate.errors import OmittedRowsWarning, UndefinedMetricWarning
from tests.reference import brute_force_metrics, pair_probability

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
TOL = 1e-12

Y = np.array([0, 1, 0, 1, 1, 0, 1, 0, 0, 1])
S = np.array([0.1, 0.9, 0.4, 0.35, 0.8, 0.7, 0.35, 0.2, 0.35, 0.6])
G = np.array([1, 1, 0, 1, 0, 1, 0, 0, 1, 1], dtype=bool)
H = np.array([0, 1, 1, 0, 1, 0, 1, 0, 1, 0], dtype=bool)


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return function(*args, **kwargs)


def assert_table_matches(table, y, s, groups, w=None):
    for name, member in groups.items():
        expected = brute_force_metrics(y, s, member, w)
        for metric in METRICS:
            got = table.loc[name, metric]
            if np.isnan(expected[metric]):
                assert np.isnan(got), (name, metric, got)
            else:
                assert abs(got - expected[metric]) <= TOL, (name, metric, got, expected[metric])
        member = np.asarray(member, bool)
        y_bool = np.asarray(y, bool)
        assert table.loc[name, "subgroup_negatives"] == (member & ~y_bool).sum()
        assert table.loc[name, "background_positives"] == (~member & y_bool).sum()


def brute_overall(y, s, w=None):
    y = np.asarray(y, bool)
    s = np.asarray(s, float)
    w = np.ones(y.size) if w is None else np.asarray(w, float)
    return pair_probability(s[y], s[~y], w[y], w[~y])


# ------------------------------------------------------------------ errors name the argument

BAD_ARRAY_INPUTS = [
    # (kwargs replacing the good ones, error type, regex the message must match)
    ({"y_score": np.where(np.arange(10) == 4, np.nan, S)}, ValueError,
     r"y_score has 1 NaN .*position 4.*nan_policy='omit'"),
    ({"y_score": np.where(np.arange(10) % 3 == 0, np.inf, S)}, ValueError, r"y_score .*4 infinite"),
    ({"y_score": S[:7]}, ValueError, r"y_score has 7 rows but y_true has 10"),
    ({"y_true": [], "y_score": []}, ValueError, r"y_true is empty"),
    ({"y_true": np.r_[Y[:9], 2]}, ValueError, r"y_true is not binary: 1 value.*position 9"),
    ({"y_true": Y * 0.5}, ValueError, r"y_true is not binary: 5 value.*label_threshold"),
    ({"y_true": np.where(Y == 1, "toxic", "ok")}, TypeError, r"y_true has non-numeric.*pos_label"),
    ({"y_true": pd.Categorical(np.where(Y == 1, "toxic", "ok"))}, TypeError,
     r"y_true has non-numeric.*pos_label"),
    ({"y_true": np.array([True, False, "x"] + [False] * 7, dtype=object)}, TypeError,
     r"y_true has non-numeric labels \(dtype object, e.g. 'x' at position 2\)"),
    ({"y_score": np.array([0.1, True, "x"] + [0.5] * 7, dtype=object)}, TypeError,
     r"y_score must be numeric scores, got dtype object \(e.g. True at position 1\)"),
    ({"y_true": np.where(Y == 1, "a", "b"), "pos_label": "A"}, ValueError,
     r"pos_label 'A' does not occur in y_true \(its values are \['b', 'a'\]\)"),
    ({"y_true": np.array(list("abcabcabca")), "pos_label": "a"}, ValueError,
     r"y_true has 3 distinct values.*two-class"),
    ({"pos_label": 1, "label_threshold": 0.5}, ValueError, r"either pos_label or label_threshold"),
    ({"label_threshold": float("nan")}, ValueError, r"label_threshold must be finite"),
    ({"label_threshold": "0.5"}, TypeError, r"label_threshold must be a number"),
    ({"subgroup_threshold": float("inf")}, ValueError, r"subgroup_threshold must be finite"),
    ({"y_true": pd.array([0, 1, None, 1, 1, 0, 1, 0, 0, 1], dtype="Int64")}, ValueError,
     r"y_true has 1 missing label.*position 2"),
    ({"y_true": pd.array([0, 1, 0, 1, 1, 0, None, 0, None, 1], dtype="boolean")}, ValueError,
     r"y_true has 2 missing label.*position 6"),
    ({"y_score": pd.array([0.1, None, 0.4, 0.3, 0.8, 0.7, 0.3, 0.2, 0.3, 0.6], dtype="Float64")},
     ValueError, r"y_score has 1 NaN"),
    ({"y_score": [0.1, None, 0.4, 0.3, 0.8, 0.7, 0.3, 0.2, 0.3, 0.6]}, ValueError,
     r"y_score has 1 NaN"),
    ({"y_score": np.array(list("abcdefghij"), dtype=object)}, TypeError,
     r"y_score must be numeric scores, got dtype object"),
    ({"y_score": np.arange(10) > 4}, TypeError, r"y_score must be numeric"),
    ({"y_score": np.arange(10) * 1j}, TypeError, r"y_score must be real-valued"),
    ({"y_score": np.arange(10, dtype=np.int64) + 2 ** 60}, ValueError, r"y_score .*beyond 2\*\*53"),
    ({"y_score": np.array(["2020-01-01"] * 10, dtype="datetime64[D]")}, TypeError,
     r"y_score must be numeric"),
    ({"y_score": np.ones((10, 2))}, ValueError, r"y_score must be one-dimensional"),
    ({"y_score": 0.5}, TypeError, r"y_score must be an array-like"),
    ({"y_true": None}, TypeError, r"y_true must be an array-like"),
    ({"y_true": [[0, 1], [1]]}, ValueError, r"y_true could not be read"),
    ({"sample_weight": np.r_[np.ones(9), -1e-9]}, ValueError,
     r"sample_weight has 1 negative value.*position 9.*>= 0"),
    ({"sample_weight": np.r_[np.ones(9), np.nan]}, ValueError,
     r"sample_weight has 1 NaN or missing"),
    ({"sample_weight": np.r_[np.ones(9), np.inf]}, ValueError, r"sample_weight has 1 infinite"),
    ({"sample_weight": np.ones(11)}, ValueError, r"sample_weight has 11 rows but y_true has 10"),
    ({"sample_weight": np.array(["1"] * 10)}, TypeError, r"sample_weight must be numeric"),
    ({"nan_policy": "drop"}, ValueError, r"nan_policy must be 'raise' or 'omit', got 'drop'"),
]

BAD_SUBGROUPS = [
    ({"g": G[:9]}, ValueError, r"subgroup 'g' mask has 9 rows but y_true has 10"),
    (np.ones((2, 10), bool), ValueError, r"subgroups has 2 rows but y_true has 10"),
    (np.ones((2, 10), np.int8), ValueError, r"shape \(2, 10\).*transpose"),
    (["male", "female"], TypeError, r"column name\(s\) \['male', 'female'\].*fastbias.evaluate"),
    ("male", TypeError, r"column name"),
    ([G, H], TypeError, r"subgroups is a list of 2 arrays; pass a dict"),
    ((pd.Series(G), pd.Series(H)), TypeError, r"subgroups is a tuple of 2 arrays"),
    ({}, ValueError, r"subgroups is empty"),
    (pd.DataFrame(index=range(10)), ValueError, r"subgroups is empty"),
    (pd.DataFrame(np.ones((10, 2), bool), columns=["a", "a"]), ValueError,
     r"duplicate name\(s\): \['a'\]"),
    ({1: G, "1": H}, ValueError, r"duplicate name\(s\): \['1'\]"),
    ({"g": G.astype(int) * 2}, ValueError, r"subgroup 'g' is not a boolean mask: value 2"),
    ({"g": np.where(G, 1.0, np.nan)}, ValueError, r"subgroup 'g' has 4 NaN or missing.*threshold"),
    ({"g": pd.array(np.where(G, True, None), dtype="boolean")}, ValueError,
     r"subgroup 'g' has 4 NaN or missing"),
    ({"g": np.array(list("abcdefghij"))}, TypeError, r"subgroup 'g' must be boolean or numeric"),
    # the value named is the one to fix, not a boolean before it
    ({"g": np.array([True, False, True, "x"] + [False] * 6, dtype=object)}, TypeError,
     r"subgroup 'g' must be boolean or numeric, got dtype object \(e.g. 'x' at position 3\)"),
    ({"g": 1}, TypeError, r"subgroup 'g' must be a mask"),
    (None, TypeError, r"subgroups must be"),
    (np.ones((10, 2, 2), bool), ValueError, r"subgroups must be .*shape \(10, 2, 2\)"),
]


_DEFAULT = object()


def _call_bias_metrics(kwargs, subgroups=_DEFAULT):
    arguments = {"y_true": Y, "y_score": S}
    arguments.update(kwargs)
    return fastbias.bias_metrics(arguments.pop("y_true"), arguments.pop("y_score"),
                                 {"g": G} if subgroups is _DEFAULT else subgroups, **arguments)


@pytest.mark.parametrize("kwargs, error, pattern", BAD_ARRAY_INPUTS)
def test_bias_metrics_bad_input_names_the_argument(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        _call_bias_metrics(kwargs)


@pytest.mark.parametrize("kwargs, error, pattern",
                         [case for case in BAD_ARRAY_INPUTS if "subgroup_threshold" not in case[0]])
def test_overall_auc_bad_input_names_the_argument(kwargs, error, pattern):
    arguments = {"y_true": Y, "y_score": S}
    arguments.update(kwargs)
    with pytest.raises(error, match=pattern):
        fastbias.overall_auc(arguments.pop("y_true"), arguments.pop("y_score"), **arguments)


@pytest.mark.parametrize("subgroups, error, pattern", BAD_SUBGROUPS)
def test_bad_subgroups_name_the_subgroup(subgroups, error, pattern):
    with pytest.raises(error, match=pattern):
        _call_bias_metrics({}, subgroups)


def test_scipy_sparse_inputs_are_named():
    """numpy reads a scipy sparse matrix as one object: the messages said 'a scalar' or
    'shape ()'."""
    sparse = pytest.importorskip("scipy.sparse")
    matrix = np.column_stack([G, H])
    for kwargs, subgroups, name in (({}, sparse.csr_matrix(matrix), "subgroups"),
                                    ({}, sparse.coo_array(matrix), "subgroups"),
                                    ({"y_score": sparse.csr_matrix(S[:, None])}, None,
                                     "y_score"),
                                    ({"y_true": sparse.csc_matrix(Y[:, None])}, None, "y_true"),
                                    ({"sample_weight": sparse.csr_matrix(S)}, None,
                                     "sample_weight")):
        with pytest.raises(TypeError, match=rf"{name} is a scipy sparse \w+ of shape .*"
                                            rf"pass {name}.toarray\(\)"):
            _call_bias_metrics(kwargs, matrix if subgroups is None else subgroups)
    with pytest.raises(TypeError, match=r"score_matrix is a scipy sparse csr_matrix"):
        fastbias.BiasEvaluator(Y, matrix).metrics_many(sparse.csr_matrix(np.column_stack([S, S])))


def test_omit_does_not_hide_other_errors():
    # omit drops missing values only: a negative weight or a bad label still raises
    with pytest.raises(ValueError, match="negative"):
        _call_bias_metrics({"sample_weight": np.r_[np.ones(9), -1.0], "nan_policy": "omit"})
    with pytest.raises(ValueError, match="not binary"):
        _call_bias_metrics({"y_true": np.r_[Y[:9], 3], "nan_policy": "omit"})
    with pytest.raises(ValueError, match="infinite"):
        _call_bias_metrics({"sample_weight": np.r_[np.ones(9), np.inf], "nan_policy": "omit"})
    with pytest.raises(ValueError, match=r"leaves no rows: all 10 rows.*y_score: 10"):
        _call_bias_metrics({"y_score": np.full(10, np.nan), "nan_policy": "omit"})


# ------------------------------------------------------------------ nan_policy="omit"

@pytest.mark.parametrize("call, pattern", [
    (dict(weights={7: -1.0}), r"negative value\(s\) \(e\.g\. -1\.0 at position 7\)"),
    (dict(labels={7: 3}), r"not binary.*3\.0 at position 7\)"),
    (dict(weights={7: np.inf}), r"infinite.*position 7"),
    (dict(weights={7: 1e-40}, ci="delong"), r"weight 1e-40 at position 7, below 2\*\*-90"),
    (dict(weights={7: 1e-40}, significance="holm"), r"weight 1e-40 at position 7"),
    (dict(weights={7: 1e-40}, thresholds=True), r"weight 1e-40 at position 7"),
])
def test_under_omit_a_refused_row_is_named_by_its_input_position(call, pattern):
    """With rows dropped by ``nan_policy="omit"`` before it, a row refused later (a bad
    weight or label, a weight too light for DeLong's sums or the threshold metrics') is
    named by its position in the input, not among the rows kept (position 5 for the input's
    row 7, two rows dropped before it)."""
    rng = np.random.default_rng(0)
    n = 40
    y = (np.arange(n) % 2).astype(float)
    s = rng.normal(size=n)
    s[[1, 4]] = np.nan  # dropped: row 7 is the sixth kept row
    w = np.ones(n)
    for row, value in call.get("weights", {}).items():
        w[row] = value
    for row, value in call.get("labels", {}).items():
        y[row] = value
    g = np.arange(n) % 3 == 0
    kwargs = {key: call[key] for key in ("ci", "significance") if key in call}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=pattern):
            if call.get("thresholds"):
                fastbias.threshold_metrics(y, s, {"g": g}, sample_weight=w, nan_policy="omit")
            else:
                fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, nan_policy="omit",
                                      **kwargs)


def test_omit_drops_rows_and_equals_brute_force_on_the_rest():
    y = Y.astype(float)
    y[3] = np.nan
    s = S.copy()
    s[[0, 5]] = [np.nan, -np.inf]
    w = np.linspace(0.5, 2.0, 10)
    w[8] = np.nan
    with pytest.warns(OmittedRowsWarning) as record:
        table = quiet(fastbias.bias_metrics, y, s, {"g": G, "h": H}, sample_weight=w,
                      nan_policy="omit")
    omit_messages = [str(r.message) for r in record if r.category is OmittedRowsWarning]
    assert len(omit_messages) == 1
    message = omit_messages[0]
    assert "dropped 4 of 10 rows" in message
    assert "y_true: 1 missing" in message
    assert "y_score: 2 (1 NaN or missing, 1 infinite)" in message
    assert "sample_weight: 1 NaN or missing" in message
    keep = np.ones(10, bool)
    keep[[0, 3, 5, 8]] = False
    assert_table_matches(table, Y[keep], S[keep], {"g": G[keep], "h": H[keep]}, w[keep])
    assert abs(table.attrs["overall_auc"] - brute_overall(Y[keep], S[keep], w[keep])) <= TOL


def test_omit_without_missing_values_is_silent_and_identical():
    with warnings.catch_warnings():
        warnings.simplefilter("error", OmittedRowsWarning)
        omitted = quiet(fastbias.bias_metrics, Y, S, {"g": G}, nan_policy="omit")
    pd.testing.assert_frame_equal(omitted, quiet(fastbias.bias_metrics, Y, S, {"g": G}))


@pytest.mark.parametrize("subgroups", ["dense", "dict", "frame"])
def test_omit_restricts_every_subgroup_container(subgroups):
    s = S.copy()
    s[[1, 6]] = np.nan
    container = {
        "dense": np.column_stack([G, H]),
        "dict": {"subgroup_0": G, "subgroup_1": H.astype(float)},
        "frame": pd.DataFrame({"subgroup_0": G, "subgroup_1": pd.array(H, dtype="boolean")}),
    }[subgroups]
    with pytest.warns(OmittedRowsWarning, match="dropped 2 of 10"):
        table = quiet(fastbias.bias_metrics, Y, s, container, nan_policy="omit")
    keep = ~np.isnan(s)
    assert_table_matches(table, Y[keep], S[keep],
                         {"subgroup_0": G[keep], "subgroup_1": H[keep]})


def test_overall_auc_omit_and_nullable():
    y = pd.array([0, 1, 0, None, 1, 0, 1, 0, 0, 1], dtype="Int64")
    s = pd.array([0.1, 0.9, None, 0.35, 0.8, 0.7, 0.35, 0.2, 0.35, 0.6], dtype="Float64")
    with pytest.warns(OmittedRowsWarning, match=r"dropped 2 of 10.*y_true: 1.*y_score: 1"):
        value = fastbias.overall_auc(y, s, nan_policy="omit")
    keep = np.ones(10, bool)
    keep[[2, 3]] = False
    assert abs(value - brute_overall(Y[keep], S[keep])) <= TOL


# ------------------------------------------------------------------ pos_label

@pytest.mark.parametrize("make_labels, pos_label", [
    (lambda y: np.where(y == 1, "toxic", "ok"), "toxic"),
    (lambda y: pd.Series(np.where(y == 1, "toxic", "ok"), dtype="category"), "toxic"),
    (lambda y: pd.Series(np.where(y == 1, "toxic", "ok"), dtype="string"), "toxic"),
    (lambda y: np.where(y == 1, 1, -1), 1),
    (lambda y: np.where(y == 1, 2.0, 7.0), 2.0),
    (lambda y: np.where(y == 1, "ok", "toxic").astype(object), "ok"),
])
def test_pos_label_equals_boolean_labels(make_labels, pos_label):
    labels = make_labels(Y)
    expected_y = np.asarray(labels == pos_label, dtype=bool)
    table = quiet(fastbias.bias_metrics, labels, S, {"g": G, "h": H}, pos_label=pos_label)
    assert_table_matches(table, expected_y, S, {"g": G, "h": H})
    value = fastbias.overall_auc(labels, S, pos_label=pos_label)
    assert abs(value - brute_overall(expected_y, S)) <= TOL


def test_pos_label_with_missing_labels_and_omit():
    labels = pd.Categorical(["t", "o", "o", None, "t", "o", "t", "o", "o", "t"])
    with pytest.raises(ValueError, match="y_true has 1 missing label"):
        fastbias.bias_metrics(labels, S, {"g": G}, pos_label="t")
    with pytest.warns(OmittedRowsWarning, match="y_true: 1 missing"):
        table = quiet(fastbias.bias_metrics, labels, S, {"g": G}, pos_label="t", nan_policy="omit")
    keep = np.arange(10) != 3
    y = np.asarray(labels == "t")
    assert_table_matches(table, y[keep], S[keep], {"g": G[keep]})


# ------------------------------------------------------------------ accepted input forms

def _forms():
    yield "lists", Y.tolist(), S.tolist(), {"g": G.tolist()}
    reversed_index = np.arange(10)[::-1]
    yield "series", (pd.Series(Y, index=reversed_index), pd.Series(S, index=reversed_index),
                     pd.DataFrame({"g": G}, index=reversed_index))
    yield "one-series", pd.Series(Y, index=reversed_index), S, {"g": G}
    yield "nullable", (pd.array(Y, dtype="Int64"), pd.array(S, dtype="Float64"),
                       pd.DataFrame({"g": pd.array(G, dtype="boolean")}))
    yield "object", Y.astype(object), S.astype(object), {"g": G.astype(object)}
    yield "float-labels", Y.astype(np.float32), S, {"g": G.astype(np.float64)}
    yield "column-vectors", Y[:, None], S[:, None], G[:, None]
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return
    yield "arrow-backed", (pd.Series(Y, dtype="int64[pyarrow]"),
                           pd.Series(S, dtype="double[pyarrow]"),
                           pd.DataFrame({"g": pd.Series(G, dtype="bool[pyarrow]")}))


@pytest.mark.parametrize("form", list(_forms()), ids=lambda f: f[0])
def test_input_forms_equal_numpy(form):
    # rows are matched by position; pandas inputs whose indexes agree go through as they are
    _, y, s, groups = (form[0], *form[1]) if len(form) == 2 else form
    table = quiet(fastbias.bias_metrics, y, s, groups)
    name = table.index[0]
    assert_table_matches(table, Y, S, {name: G})


@pytest.mark.parametrize("index", [np.arange(10)[::-1], np.roll(np.arange(10), 1),
                                   np.arange(10) // 2], ids=["reversed", "rolled", "duplicated"])
def test_pandas_inputs_with_different_indexes_are_refused(index):
    # matching by position would pair different rows: refuse, naming both inputs and the fix
    with pytest.raises(ValueError, match=r"y_true and subgroups are pandas objects with "
                                         r"different indexes.*reset_index\(drop=True\)"):
        fastbias.bias_metrics(pd.Series(Y, index=index), S, pd.DataFrame({"g": G}))
    with pytest.raises(ValueError, match="y_true and y_score"):
        fastbias.overall_auc(pd.Series(Y), pd.Series(S, index=index))


def test_pyarrow_inputs():
    pa = pytest.importorskip("pyarrow")
    table = quiet(fastbias.bias_metrics, pa.array(Y), pa.chunked_array([S[:4], S[4:]]),
                  pa.table({"g": G, "h": H}))
    assert_table_matches(table, Y, S, {"g": G, "h": H})
    with pytest.raises(ValueError, match="y_true has 1 missing"):
        fastbias.bias_metrics(pa.array([0, 1, None, 1, 1, 0, 1, 0, 0, 1]), S, {"g": G})
    df = pd.DataFrame({"y": Y, "s": S, "g": G})
    res = quiet(fastbias.evaluate, pa.Table.from_pandas(df), label="y", scores="s", subgroups=["g"])
    assert_table_matches(res.for_model(), Y, S, {"g": G})


def test_polars_inputs():
    pl = pytest.importorskip("polars")
    table = quiet(fastbias.bias_metrics, pl.Series(Y), pl.Series(S), pl.DataFrame({"g": G}))
    assert_table_matches(table, Y, S, {"g": G})
    with pytest.raises(ValueError, match="y_score has 1 NaN"):
        fastbias.bias_metrics(Y, pl.Series([0.1, None, *S[2:]]), {"g": G})
    df = pl.DataFrame({"y": Y, "s": S, "g": G})
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"])
    assert_table_matches(res.for_model(), Y, S, {"g": G})


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.uint64])
def test_integer_scores_are_exact(dtype):
    ranks = np.array([3, 9, 5, 4, 8, 7, 4, 2, 4, 6], dtype=dtype)
    table = quiet(fastbias.bias_metrics, Y, ranks, {"g": G})
    assert_table_matches(table, Y, ranks.astype(float), {"g": G})


def test_large_integer_scores_up_to_2_53_are_exact():
    base = np.int64(2 ** 53)
    ranks = base - np.array([3, 9, 5, 4, 8, 7, 4, 2, 4, 6], dtype=np.int64)
    table = quiet(fastbias.bias_metrics, Y, ranks, {"g": G})
    assert_table_matches(table, Y, -np.array([3, 9, 5, 4, 8, 7, 4, 2, 4, 6.0]), {"g": G})


def test_float16_scores_become_float32_without_merging_ties():
    s16 = S.astype(np.float16)
    table = quiet(fastbias.bias_metrics, Y, s16, {"g": G})
    assert_table_matches(table, Y, s16.astype(np.float64), {"g": G})


def test_long_double_scores_exact_or_refused():
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is float64 on this platform")
    exact = S.astype(np.longdouble)
    assert_table_matches(quiet(fastbias.bias_metrics, Y, exact, {"g": G}), Y, S, {"g": G})
    inexact = exact + np.longdouble(2.0) ** -60
    with pytest.raises(ValueError, match="float64 cannot hold exactly"):
        fastbias.bias_metrics(Y, inexact, {"g": G})


def test_fractional_labels_with_threshold():
    fractions = np.where(Y == 1, 0.5, 0.49)
    table = quiet(fastbias.bias_metrics, fractions, S, {"g": G}, label_threshold=0.5)
    assert_table_matches(table, Y, S, {"g": G})


def test_object_subgroup_column_with_none_and_threshold():
    column = np.where(G, 0.8, 0.1).astype(object)
    column[[2, 7]] = None  # never a member with a threshold
    table = quiet(fastbias.bias_metrics, Y, S, {"g": column}, subgroup_threshold=0.5)
    assert_table_matches(table, Y, S, {"g": G})


# ------------------------------------------------------------------ evaluate

@pytest.fixture
def frame():
    return pd.DataFrame({
        "label": np.where(Y == 1, "toxic", "ok"),
        "a": S,
        "b": S[::-1].copy(),
        "g": G.astype(float),
        "h": pd.array(H, dtype="boolean"),
        "w": np.linspace(0.5, 2.0, 10),
    })


def test_evaluate_errors_name_the_column(frame):
    with pytest.raises(TypeError, match=r"label column 'label' has non-numeric.*pos_label"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g"])
    with pytest.raises(KeyError, match=r"subgroups: column\(s\) \['martian'\]"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["martian"],
                          pos_label="toxic")
    with pytest.raises(KeyError, match=r"sample_weight: column\(s\) \['weight'\]"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g"], pos_label="toxic",
                          sample_weight="weight")
    with pytest.raises(ValueError, match=r"subgroups has duplicate names: \['g'\]"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g", "g"], pos_label="toxic")
    with pytest.raises(ValueError, match="subgroup_threshold must be finite"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g"], pos_label="toxic",
                          subgroup_threshold=np.nan)
    with pytest.raises(ValueError, match="nan_policy must be"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g"], nan_policy="skip")
    bad = frame.assign(a=frame["a"].where(np.arange(10) != 4))
    with pytest.raises(ValueError, match=r"score column 'a' has 1 NaN.*position 4"):
        fastbias.evaluate(bad, label="label", scores="a", subgroups=["g"], pos_label="toxic")
    bad = frame.assign(w=-frame["w"])
    with pytest.raises(ValueError, match=r"sample_weight column 'w' has 10 negative"):
        fastbias.evaluate(bad, label="label", scores="a", subgroups=["g"], pos_label="toxic",
                          sample_weight="w")
    with pytest.raises(ValueError, match=r"sample_weight has 3 rows but df has 10"):
        fastbias.evaluate(frame, label="label", scores="a", subgroups=["g"], pos_label="toxic",
                          sample_weight=[1.0, 2.0, 3.0])


def test_evaluate_pos_label_equals_brute_force(frame):
    res = quiet(fastbias.evaluate, frame, label="label", scores=["a", "b"], subgroups=["g", "h"],
                pos_label="toxic", sample_weight="w")
    for model in ["a", "b"]:
        assert_table_matches(res.for_model(model), Y, frame[model].to_numpy(),
                             {"g": G, "h": H}, frame["w"].to_numpy())


def test_evaluate_omit_drops_per_model(frame):
    frame = frame.astype({"label": object})
    frame.loc[3, "label"] = None            # dropped for every model
    frame.loc[[0, 6], "a"] = [np.nan, np.inf]  # dropped for model a only
    frame.loc[9, "b"] = np.nan              # dropped for model b only
    with pytest.raises(ValueError, match="label column 'label' has 1 missing"):
        fastbias.evaluate(frame, label="label", scores=["a", "b"], subgroups=["g", "h"],
                          pos_label="toxic")
    with pytest.warns(OmittedRowsWarning) as record:
        res = quiet(fastbias.evaluate, frame, label="label", scores=["a", "b"],
                    subgroups=["g", "h"], pos_label="toxic", nan_policy="omit",
                    sample_weight=frame["w"].to_numpy())
    messages = [str(r.message) for r in record if r.category is OmittedRowsWarning]
    assert len(messages) == 1
    assert re.search(r"label column 'label': 1 missing", messages[0])
    assert re.search(r"score column 'a': 2 \(1 NaN or missing, 1 infinite\)", messages[0])
    assert re.search(r"'a': 7, 'b': 8 of 10", messages[0])
    assert res.settings["omitted_rows"] == {"a": 3, "b": 2}
    assert res.models == ["a", "b"] and list(res.table["model"].unique()) == ["a", "b"]
    w = frame["w"].to_numpy()
    for model, dropped in [("a", [0, 3, 6]), ("b", [3, 9])]:
        keep = ~np.isin(np.arange(10), dropped)
        s = frame[model].to_numpy()
        assert_table_matches(res.for_model(model), Y[keep], s[keep],
                             {"g": G[keep], "h": H[keep]}, w[keep])
        assert abs(res.overall_auc[model] - brute_overall(Y[keep], s[keep], w[keep])) <= TOL


def test_evaluate_omit_without_missing_is_the_plain_result(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("error", OmittedRowsWarning)
        omitted = quiet(fastbias.evaluate, frame, label="label", scores=["a", "b"],
                        subgroups=["g", "h"], pos_label="toxic", nan_policy="omit")
    plain = quiet(fastbias.evaluate, frame, label="label", scores=["a", "b"], subgroups=["g", "h"],
                  pos_label="toxic")
    pd.testing.assert_frame_equal(omitted.table, plain.table)


def test_evaluate_omit_with_no_rows_left_for_a_model(frame):
    frame = frame.assign(a=np.nan)
    with pytest.raises(ValueError, match=r"leaves no rows for model\(s\) \['a'\]"):
        fastbias.evaluate(frame, label="label", scores=["a", "b"], subgroups=["g"],
                          pos_label="toxic", nan_policy="omit")


def test_evaluate_object_identity_column_with_none(frame):
    column = G.astype(object)
    column[[2, 4]] = None  # unannotated
    frame = frame.assign(g=column)
    res = quiet(fastbias.evaluate, frame, label="label", scores="a", subgroups=["g"],
                pos_label="toxic", missing_subgroup="exclude")
    keep = ~np.isin(np.arange(10), [2, 4])
    assert_table_matches(res.for_model(), Y[keep], S[keep], {"g": G[keep]})


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("positions", [[], [0], [3], [63], [64], [1999], [5, 1500]])
def test_read_column_masks_nan_wherever_it_is(dtype, positions):
    from fastbias.validate.columns import read_column
    from fastbias.validate.subgroups import identity_values

    values = np.linspace(-1.0, 1.0, 2000).astype(dtype)
    values[positions] = np.nan
    arr, missing = read_column(pd.Series(values), "c")
    if positions:
        assert missing.dtype == bool and np.flatnonzero(missing).tolist() == positions
    else:
        assert missing is None
    arr, missing = read_column(values, "c", float_missing=False)
    assert missing is None and np.isnan(arr).sum() == len(positions)
    # an identity column read without its mask has the same members (NaN is never >= t)
    marked = identity_values(values, "g", 0.25)
    unmarked = identity_values(values, "g", 0.25, want_missing=False)
    assert unmarked.missing is None
    np.testing.assert_array_equal(marked.member_mask(), unmarked.member_mask())
    np.testing.assert_array_equal(unmarked.member_mask(),
                                  [v >= 0.25 for v in values.astype(np.float64).tolist()])
    if positions:  # without a threshold the NaN are still named, mask or not asked
        with pytest.raises(ValueError, match=rf"NaN or missing value\(s\) \(first at "
                                             rf"position {positions[0]}\)"):
            identity_values(values, "g", None, want_missing=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8])
@pytest.mark.parametrize("bad", [[(7, -1)], [(9, 2)], [(0, 3), (9, -2)], [(9, 2), (3, -1)]])
def test_fractional_labels_outside_0_1_are_named_by_count_and_first_position(dtype, bad):
    y = (np.arange(10) % 2).astype(dtype)
    for position, value in bad:
        y[position] = value
    first = min(position for position, _ in bad)
    with pytest.raises(ValueError, match=rf"y_true has {len(bad)} value\(s\) outside \[0, 1\] "
                                         rf"\(e\.g\. -?\d\.?\d* at position {first}\)"):
        fastbias.bias_metrics(y, np.linspace(0, 1, 10), {"g": np.arange(10) < 5},
                              label_threshold=0.5)
    y[[position for position, _ in bad]] = 1  # in range again: the threshold decides
    table = fastbias.bias_metrics(y, np.linspace(0, 1, 10), {"g": np.arange(10) < 5},
                                  label_threshold=0.5)
    assert table.attrs["overall_auc"] == pytest.approx(
        roc_auc_score(y >= 0.5, np.linspace(0, 1, 10)))


# ------------------------------------------------- thresholds on float32 labels and identities


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_at_or_above_is_exact_for_every_float_width(dtype):
    """numpy compares a float32 array with a Python float in float32 (0.7 rounds down to
    float32(0.7), which then counts as >= 0.7): against exact rationals, every value of the
    type near each threshold, thresholds beyond the type's range included."""
    from fractions import Fraction

    from fastbias.validate.values import at_or_above

    rng = np.random.default_rng(4)
    for threshold in [0.7, 0.5, 0.1, 1 / 3, 0.0, -0.0, 1.0, 1e-30, -2.5, 7e4, 1e300, -1e300,
                      *rng.random(20).tolist()]:
        with np.errstate(over="ignore"):
            near = np.array(threshold).astype(dtype)
        values = np.array([np.nextafter(near, dtype(d), dtype=dtype) for d in (-np.inf, np.inf)]
                          + [near, dtype(0.75), dtype(-0.0), dtype(np.inf), dtype(-np.inf)],
                          dtype=dtype)
        got = at_or_above(values, threshold)
        want = [bool(np.isposinf(v)) if not np.isfinite(v) and v > 0 else
                False if not np.isfinite(v) else Fraction(float(v)) >= Fraction(threshold)
                for v in values]
        assert got.tolist() == want, (dtype, threshold, values)


INTEGER_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
                  np.uint64]


@pytest.mark.parametrize("dtype", INTEGER_DTYPES)
def test_at_or_above_is_exact_for_integers_of_every_width(dtype):
    """numpy compares an integer array with a float in float64, which rounds integers beyond
    2**53 (2**53 + 3 reaches 2**53 + 4): against Python's exact int/float comparison, every
    value of the type near each threshold, its ends and thresholds beyond them included."""
    from fastbias.validate.values import at_or_above

    info = np.iinfo(dtype)
    big = 2 ** 53
    thresholds = [0.5, 0.0, -0.0, 1.0, -1.0, 255.5, 2.0 ** 31, float(big), big + 2.0, big + 4.0,
                  -float(big), -big - 2.0, 2.0 ** 62 + 2 ** 10, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64,
                  1e300, -1e300, float(info.max), float(info.min)]
    for threshold in thresholds:
        centre = min(max(int(threshold), info.min), info.max)
        candidates = {info.min, info.max, 0, *range(centre - 6, centre + 7)}
        values = np.array(sorted(v for v in candidates if info.min <= v <= info.max), dtype=dtype)
        want = [int(v) >= threshold for v in values.tolist()]  # Python: exact
        assert at_or_above(values, threshold).tolist() == want, (dtype, threshold)


def test_integer_cut_says_exactly_where_float64_comparison_fails():
    """``integer_cut`` is None exactly where comparing every integer with the threshold in
    float64 is right (checked on the integers next to it), its ceiling elsewhere."""
    import math

    from fastbias.validate.values import integer_cut

    big = 2 ** 53
    for threshold in [0.5, 3.0, big - 1.0, float(big), big + 2.0, big + 4.0, big + 6.0,
                      2.0 ** 60, -float(big), -big + 1.0, -big - 2.0, -2.0 ** 60, 1e300]:
        cut = math.ceil(threshold)
        near = range(cut - 3, cut + 4)
        float_right = all((float(v) >= threshold) == (v >= threshold) for v in near)
        assert (integer_cut(threshold) is None) == float_right, threshold
        if not float_right:
            assert integer_cut(threshold) == cut


def test_float32_labels_and_identities_are_thresholded_alike_and_exactly():
    """A float32 label and a float32 identity of the same value met the same threshold
    differently (found by review): the label in float32 (float32(0.7) >= 0.7), the identity
    exactly (not). Both now exactly, in every entry point."""
    values = np.array([0.7, 0.70000005, 0.3, 0.9, 0.2, 0.8, 0.1, 0.95], dtype=np.float32)
    scores = np.array([0.5, 0.3, 0.2, 0.9, 0.4, 0.6, 0.1, 0.45])
    exact = values.astype(np.float64) >= 0.7  # float64 holds every float32 exactly
    assert exact.tolist() == [False, True, False, True, False, True, False, True]
    settings = {"label_threshold": 0.7, "subgroup_threshold": 0.7}
    df = pd.DataFrame({"label": values, "g": values, "s": scores})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        tables = [fastbias.bias_metrics(values, scores, {"g": values}, **settings),
                  fastbias.evaluate(df, label="label", scores="s", subgroups=["g"],
                                    **settings).table.set_index("subgroup"),
                  fastbias.BiasEvaluator(values, {"g": values}, **settings).metrics(scores)]
    for table in tables:
        row = table.loc["g"]
        counts = [int(row[c]) for c in ("subgroup_size", "subgroup_negatives",
                                        "subgroup_positives", "background_negatives",
                                        "background_positives")]
        assert counts == [4, 0, 4, 4, 0], table
    assert fastbias.overall_auc(values, scores, label_threshold=0.7) == pytest.approx(
        roc_auc_score(exact, scores), abs=1e-15)


@pytest.mark.parametrize("argument", ["thresholds", "label_threshold", "subgroup_threshold"])
def test_a_threshold_beyond_float64s_range_is_refused_by_name(argument):
    """A Python int of 401 digits escaped as a bare OverflowError (found by review)."""
    y = np.array([0.0, 1.0, 0.0, 1.0])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    g = {"g": np.array([0.1, 0.9, 0.2, 0.3])}
    df = pd.DataFrame({"y": y, "s": s, "g": g["g"]})
    huge = 10 ** 400
    calls = {"thresholds": [lambda: fastbias.threshold_metrics(y, s, g, thresholds=[0.5, huge]),
                            lambda: fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                                      thresholds=[0.5, -huge])],
             "label_threshold": [lambda: fastbias.bias_metrics(y, s, g, label_threshold=huge)],
             "subgroup_threshold": [
                 lambda: fastbias.bias_metrics(y, s, g, subgroup_threshold=huge),
                 lambda: fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                           subgroup_threshold=-huge)]}
    for call in calls[argument]:
        with pytest.raises(ValueError, match=rf"{argument}.*beyond float64's range \(about "
                                             rf"-?10\*\*400\)"):
            call()
    # an int beyond 4,300 digits (str() of it raises): the same message
    with pytest.raises(ValueError, match=r"label_threshold is beyond float64's range \(about "
                                         r"10\*\*5000\)"):
        fastbias.bias_metrics(y, s, g, label_threshold=10 ** 5000)


def test_integer_weights_beyond_2_53_are_refused_however_given():
    """2**53 + 1 became 2**53 as an int64/uint64 array, a list or an Int64 column without
    NA, silently, where the same value beside an NA was refused (found by review)."""
    y = np.array([0, 1, 0, 1, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    g = {"g": np.array([True, True, False, False, True])}
    big = 2 ** 53 + 1
    for weights in (np.array([1, 2, big, 3, 4], dtype=np.int64),
                    np.array([1, 2, big, 3, 4], dtype=np.uint64), [1, 2, big, 3, 4],
                    pd.Series([1, 2, big, 3, 4], dtype="Int64")):
        with pytest.raises(ValueError, match=r"sample_weight has 1 integer\(s\) beyond 2\*\*53 "
                                             rf".*\(e\.g\. {big} at position 2\); the weights "
                                             r"would be rounded"):
            fastbias.bias_metrics(y, s, g, sample_weight=weights)
    # integers float64 holds (2**53, 2**53 + 2, 2**60) are taken: the exact rationals' metrics
    for held in (2 ** 53, 2 ** 53 + 2, 2 ** 60):
        weights = np.array([1, 2, held, 3, 4], dtype=np.int64)
        got = fastbias.bias_metrics(y, s, g, sample_weight=weights).loc["g"]
        want = brute_force_metrics(y.astype(bool), s, g["g"], weights.astype(np.float64))
        for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
            assert got[metric] == pytest.approx(want[metric], abs=1e-15), (held, metric)
    # a negative beyond 2**53 that float64 holds is a negative weight
    with pytest.raises(ValueError, match="negative value"):
        fastbias.bias_metrics(y, s, g, sample_weight=np.array([1, 2, -(2 ** 60), 3, 4]))


def test_which_integers_float64_holds_exactly():
    """Against Python's own int -> float conversion, at every width's edges."""
    from fastbias.validate.columns import _inexact_in_float64

    rng = np.random.default_rng(6)
    values = [0, 1, -1, 2 ** 53, 2 ** 53 + 1, 2 ** 53 + 2, -(2 ** 53) - 1, -(2 ** 53) - 2,
              2 ** 54 + 2, 2 ** 54 + 4, 2 ** 63 - 1, -(2 ** 63), -(2 ** 63) + 1]
    values += [int(v) << int(k) for v, k in zip(rng.integers(1, 2 ** 12, 200),
                                                rng.integers(40, 51, 200))]
    values += [2 ** 53 + int(r) for r in rng.integers(0, 2 ** 20, 100)]
    values += [-v for v in values[-150:]]
    got = _inexact_in_float64(np.array(values, dtype=np.int64))
    assert got.tolist() == [int(float(v)) != v for v in values]
    unsigned = [2 ** 64 - 1, 2 ** 63, 2 ** 64 - 2 ** 11, 2 ** 64 - 2 ** 10, 2 ** 53 + 1, 7]
    got = _inexact_in_float64(np.array(unsigned, dtype=np.uint64))
    assert got.tolist() == [int(float(v)) != v for v in unsigned]


@pytest.mark.parametrize("argument", ["label_threshold", "subgroup_threshold"])
def test_a_boolean_threshold_is_refused(argument):
    """``True`` was taken as 1.0 (``thresholds=`` refuses booleans; found by review)."""
    y = np.array([0.0, 1.0, 0.0, 1.0])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    g = {"g": np.array([0.1, 0.9, 0.2, 1.0])}
    for flag in (True, np.bool_(False)):
        with pytest.raises(TypeError, match=rf"{argument} must be a number, got {flag!r}"):
            fastbias.bias_metrics(y, s, g, **{argument: flag})


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_the_first_call_tier_reads_identity_columns_as_the_kernel_does(dtype):
    """In numpy (a first call while the kernels compile) a float32 identity column was
    compared in float32 (float32(0.7) a member at 0.7), by the kernel in float64 (not): the
    first call and the later ones disagreed. Both against exact rationals."""
    from fractions import Fraction

    from fastbias.prepare.memberships import column_rows

    rng = np.random.default_rng(8)
    if np.dtype(dtype).kind == "f":
        values = np.concatenate([np.array([0.7, 0.7, 0.3, 1 / 3, 0.0, -0.0, np.nan]),
                                 rng.random(200)]).astype(dtype)
        values[rng.random(values.size) < 0.3] = dtype(0.7)
    else:
        values = rng.integers(0, 9, 200).astype(dtype)
    for threshold in (0.7, 1 / 3, 0.5, 3.0, 2.5, 0.0):
        kernel = column_rows(values, threshold, np.empty(values.size, dtype=np.int64))
        tier = column_rows(values, threshold, None, compiled=False)
        exact = [i for i, v in enumerate(values.tolist())
                 if v == v and Fraction(v) >= Fraction(threshold)]
        assert kernel.tolist() == tier.tolist() == exact, (dtype, threshold)


@pytest.mark.parametrize("weights, message", [
    (np.r_[np.ones(5), -np.inf, 2.0, np.inf, 1.0, 1.0], r"sample_weight has 2 infinite value\(s\) "
                                              r"\(first at position 5\)"),
    (np.r_[np.ones(5), -1.0, np.inf, -2.0, 1.0, 1.0], r"sample_weight has 1 infinite value\(s\) "
                                            r"\(first at position 6\)"),
    (np.r_[np.ones(5), -1.0, 3.0, -2.0, 1.0, 1.0], r"sample_weight has 2 negative value\(s\) "
                                         r"\(e.g. -1(\.0)? at position 5\)"),
    (np.r_[0.0, 0.0, 1e-200, 1.0, 1e300, np.ones(5)],
     r"smallest positive weight is 1e-200 at position 2 and the largest 1e\+?300 at position 4"),
    (np.r_[1e-200, 1.0, 1e300, np.ones(7)],
     r"smallest positive weight is 1e-200 at position 0 and the largest 1e\+?300 at position 2"),
])
def test_weights_refused_by_two_reductions_name_the_count_and_the_position(weights, message):
    """The weights' checks read the weights twice (their least and greatest) and make the
    masks that count and place the bad values only to say so: each refusal names them."""
    rng = np.random.default_rng(0)
    y, s = np.r_[np.zeros(5, bool), np.ones(5, bool)], rng.random(10)
    with pytest.raises(ValueError, match=message):
        fastbias.bias_metrics(y, s, {"g": np.arange(10) < 5}, sample_weight=weights)


def test_weights_with_zeros_and_a_moderate_spread_pass():
    y = np.r_[np.zeros(5, bool), np.ones(5, bool)]
    s = np.linspace(0, 1, 10)
    w = np.r_[0.0, 1e-100, np.ones(7), 1e40]
    table = fastbias.bias_metrics(y, s, {"g": np.arange(10) < 5}, sample_weight=w)
    assert table.loc["g", "subgroup_negative_weight"] == 3.0 + 1e-100
    assert table.loc["g", "background_positive_weight"] == 4.0 + 1e40


@pytest.mark.parametrize("column, value, kwargs, pattern", [
    ("w", -1.0, {}, r"negative value\(s\) \(e\.g\. -1\.0 at position 7\)"),
    ("w", 1e-40, {"ci": "delong"}, r"weight 1e-40 at position 7, below 2\*\*-90"),
    ("y", 3.0, {}, r"outside \[0, 1\] \(e\.g\. 3\.0 at position 7\)"),
])
def test_evaluate_under_omit_names_a_refused_row_by_its_input_position(column, value, kwargs,
                                                                       pattern):
    """``evaluate(..., nan_policy="omit")`` evaluates the rows kept as a frame of their own;
    a row refused there is named by its position in the input frame (it was its position
    among the rows kept: 5 for the input's row 7, two rows dropped before it)."""
    rng = np.random.default_rng(0)
    n = 40
    df = pd.DataFrame({"y": (np.arange(n) % 2).astype(float), "s": rng.normal(size=n),
                       "g": (np.arange(n) % 3 == 0).astype(float), "w": np.ones(n)})
    df.loc[[1, 4], "s"] = np.nan
    df.loc[7, column] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=pattern):
            fastbias.evaluate(df, label="y", scores="s", subgroups=["g"], sample_weight="w",
                              nan_policy="omit", **kwargs)


def test_rows_kept_names_input_positions_only_inside():
    """Inside ``rows_kept`` a position among the rows kept is named as the input's (the
    input's row 7 is the sixth kept, two dropped before it); after it, and after an error
    inside it, positions are the plain ones again (a later call is not renamed); inside a
    file's rows, the kept position's row of the file."""
    from types import SimpleNamespace

    from fastbias.validate.columns import _at, rows_from, rows_kept

    kept = np.ones(10, dtype=bool)
    kept[[1, 4]] = False
    with rows_kept(kept):
        assert _at(5) == "position 7"
        assert _at(np.int64(0)) == "position 0"
        with rows_kept(None):
            assert _at(5) == "position 5"
        assert _at(2) == "position 3"
    assert _at(5) == "position 5"
    with pytest.raises(ValueError):
        with rows_kept(kept):
            raise ValueError
    assert _at(5) == "position 5"
    with rows_from(SimpleNamespace(first_row=100)), rows_kept(kept):
        assert _at(5) == "row 107"
