"""Shapes and dtypes of pandas / numpy / pyarrow / polars inputs: an independent review's
tests (2026-11-27, thirty-first session).

Every test compares with a brute-force pair count written here (plain Python, on
values converted by the test itself), or asserts a clear ValueError/TypeError
that names the argument/column. Found by review (each fails before its fix): data where
``evaluate`` wants column names (a dict of masks) had the frame's own columns of those
names evaluated, silently; long doubles inside object arrays were rounded to float64
(a tie where there is none); names equal once written ('1' and 1) made rows that cannot
be told apart; a signalling-NaN Decimal, a complex or a timedelta value, integers beyond
64 bits and an empty list of subgroups gave errors that named no value or the wrong thing.
"""
import math
import warnings
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

import fastbias

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]

Y = [0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 1]
S = [0.1, 0.4, 0.35, 0.8, 0.2, 0.2, 0.9, 0.6, 0.3, 0.5, 0.7, 0.45]
G = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 1, 0]
H = [0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1]
W = [1, 2, 0.5, 1, 3, 1, 1, 2, 1, 0.25, 1, 4]


# ---------------------------------------------------------------- reference
def _auc(s, w, neg, pos):
    num = den = 0.0
    for i in neg:
        for j in pos:
            ww = w[i] * w[j]
            den += ww
            num += ww * (1.0 if s[j] > s[i] else 0.5 if s[j] == s[i] else 0.0)
    return num / den if den > 0 else math.nan


def brute(y, s, masks, w=None):
    """name -> {metric: value}; y 0/1, s comparable numbers, masks name -> 0/1 list."""
    n = len(y)
    w = [1.0] * n if w is None else list(w)
    out = {}
    for name, m in masks.items():
        gn = [i for i in range(n) if m[i] and not y[i]]
        gp = [i for i in range(n) if m[i] and y[i]]
        bn = [i for i in range(n) if not m[i] and not y[i]]
        bp = [i for i in range(n) if not m[i] and y[i]]
        out[name] = {
            "subgroup_auc": _auc(s, w, gn, gp),
            "bpsn_auc": _auc(s, w, gn, bp),
            "bnsp_auc": _auc(s, w, bn, gp),
            "negative_aeg": 0.5 - _auc(s, w, gn, bn),
            "positive_aeg": 0.5 - _auc(s, w, gp, bp),
        }
    return out


def assert_table(table, expected, names=None):
    """Compare rows of ``table`` (in order) with ``expected`` (dict in order)."""
    assert len(table) == len(expected), list(table.index)
    if names is not None:
        assert list(table.index) == names
    for pos, (name, exp) in enumerate(expected.items()):
        row = table.iloc[pos]
        for m in METRICS:
            a, b = float(row[m]), exp[m]
            assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12), \
                (name, m, a, b)


E = brute(Y, S, {"g": G, "h": H})
EW = brute(Y, S, {"g": G, "h": H}, W)
E_G_ONLY = {"g": E["g"]}
E_H_AS_G = {"g": brute(Y, S, {"h": H})["h"]}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _bool(x):
    return np.array(x, bool)


def frame(**extra):
    return pd.DataFrame({"y": Y, "s": S, "g": G, "h": H, **extra})


def model_table(result):
    return result.for_model(result.models[0])


# ============================================================ things that are right
@pytest.mark.parametrize("dtype", ["Int8", "UInt64", "Float32", "boolean", "int64[pyarrow]",
                                   "bool[pyarrow]", "double[pyarrow]", "uint8[pyarrow]"])
def test_nullable_and_arrow_labels_and_masks(dtype):
    y = pd.Series(Y).astype(dtype)
    sub = pd.DataFrame({"g": G, "h": H}).astype(dtype)
    assert_table(fastbias.bias_metrics(y, np.array(S), sub), E, ["g", "h"])


@pytest.mark.parametrize("make", [
    lambda: np.array(S, ">f8"),
    lambda: np.repeat(S, 2)[::2],
    lambda: pd.Series(pd.arrays.SparseArray(S)),
    lambda: pd.Series(S, dtype="double[pyarrow]"),
    lambda: pa.chunked_array([pa.array(S[:5]), pa.array(S[5:])]),
    lambda: np.array(S)[:, None],
])
def test_score_containers(make):
    assert_table(fastbias.bias_metrics(np.array(Y, ">i4"), make(), {"g": _bool(G), "h": _bool(H)}), E)


def test_readonly_and_sparse_everywhere():
    s = np.array(S)
    s.flags.writeable = False
    t = fastbias.bias_metrics(pd.arrays.SparseArray(Y), s,
                              pd.DataFrame({"g": pd.arrays.SparseArray(_bool(G)),
                                            "h": pd.arrays.SparseArray(_bool(H))}),
                              sample_weight=pd.arrays.SparseArray(W))
    assert_table(t, EW)


@pytest.mark.parametrize("index", [
    [f"r{i}" for i in range(12)], [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5],
    pd.MultiIndex.from_product([[0, 1], range(6)]), pd.date_range("2020", periods=12)])
def test_evaluate_non_default_index(index):
    df = frame(w=W).set_axis(index)
    r = fastbias.evaluate(df, label="y", scores="s", subgroups=["g", "h"], sample_weight=np.array(W))
    assert_table(model_table(r), EW)
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["g", "h"], sample_weight=pd.Series(W))


def test_evaluate_slices_and_gaps():
    big = pd.DataFrame({"y": Y * 2, "s": S * 2, "g": G * 2, "h": H * 2, "w": W * 2})
    for part in (big.iloc[::2], big.drop(index=[1, 5, 7, 20])):
        exp = brute(part.y.tolist(), part.s.tolist(), {"g": part.g.tolist(), "h": part.h.tolist()},
                    part.w.tolist())
        r = fastbias.evaluate(part, label="y", scores="s", subgroups=["g", "h"],
                              sample_weight=part.w.to_numpy())
        assert_table(model_table(r), exp)


def test_arrow_and_polars_frames():
    tab = pa.table({"y": Y, "s": S, "g": pa.array(G).cast(pa.bool_()),
                    "h": pa.array(H).cast(pa.bool_()), "w": W})
    r = fastbias.evaluate(pa.concat_tables([tab.slice(0, 5), tab.slice(5)]), label="y", scores="s",
                          subgroups=["g", "h"], sample_weight="w")
    assert_table(model_table(r), EW)
    pl = pytest.importorskip("polars")
    r = fastbias.evaluate(pl.DataFrame({"y": Y, "s": S, "g": G, "h": H, "w": [float(v) for v in W]}),
                          label="y", scores="s", subgroups=["g", "h"], sample_weight="w")
    assert_table(model_table(r), EW)


@pytest.mark.parametrize("labels,pos", [
    (pd.Categorical(["b" if v else "a" for v in Y], categories=["b", "a"], ordered=True), "b"),
    (pd.Series(["b" if v else "a" for v in Y], dtype="string[pyarrow]"), "b"),
    (pd.Series(pd.arrays.ArrowExtensionArray(pa.array(["b" if v else "a" for v in Y]).dictionary_encode())), "b"),
    (pd.Categorical(Y, categories=[1, 0]), 1),
])
def test_label_categories_with_pos_label(labels, pos):
    r = fastbias.evaluate(frame().assign(y=labels), label="y", scores="s", subgroups=["g", "h"],
                          pos_label=pos)
    assert_table(model_table(r), E)


def test_non_string_column_names_are_found():
    df = pd.DataFrame({0: Y, 1: S, 2: G, 3: H})
    r = fastbias.evaluate(df, label=0, scores=1, subgroups=[2, 3])
    assert_table(model_table(r), E)
    t = fastbias.bias_metrics(Y, S, pd.DataFrame({0: _bool(G), 1: _bool(H)}))
    assert_table(t, E, ["0", "1"])  # bias_metrics stringifies the names


def test_bias_metrics_refuses_names_equal_after_str():
    with pytest.raises(ValueError, match="duplicate"):
        fastbias.bias_metrics(Y, S, pd.DataFrame({"1": _bool(G), 1: _bool(H)}))


# ====================================================== found by review
# --- D1: data containers given to evaluate* are silently replaced by same-named df columns
def test_evaluate_subgroups_dict_of_masks_is_not_replaced_by_df_column():
    """evaluate(df, subgroups={"g": mask}) takes only the dict's KEYS and reads df["g"]:
    the mask is silently ignored.  Right: the mask's numbers, or a TypeError."""
    try:
        r = fastbias.evaluate(frame(), label="y", scores="s", subgroups={"g": _bool(H)})
    except (TypeError, ValueError) as e:
        assert "subgroups" in str(e)
        return
    assert_table(model_table(r), E_H_AS_G)


def test_evaluate_subgroups_dataframe_is_not_replaced_by_df_column():
    """Same with subgroups=pd.DataFrame({"g": mask}) (list(DataFrame) == its column names)."""
    try:
        r = fastbias.evaluate(frame(), label="y", scores="s",
                              subgroups=pd.DataFrame({"g": _bool(H)}))
    except (TypeError, ValueError) as e:
        assert "subgroups" in str(e)
        return
    assert_table(model_table(r), E_H_AS_G)


def test_evaluate_scores_dict_is_not_replaced_by_df_column():
    """evaluate(df, scores={"s": other_scores}) silently evaluates df["s"]."""
    other = [1 - v for v in S]
    try:
        r = fastbias.evaluate(frame(), label="y", scores={"s": np.array(other)}, subgroups=["g", "h"])
    except (TypeError, ValueError) as e:
        assert "scores" in str(e)
        return
    assert_table(model_table(r), brute(Y, other, {"g": G, "h": H}))


def test_evaluate_sensitive_features_dict_is_not_replaced_by_df_column():
    """sensitive_features={"g": values} silently uses df["g"] (sizes 6/6 of G, not 5/7 of H)."""
    try:
        r = fastbias.evaluate(frame(), label="y", scores="s", sensitive_features={"g": np.array(H)})
    except (TypeError, ValueError) as e:
        assert "sensitive_features" in str(e)
        return
    assert model_table(r)["subgroup_size"].tolist() == [H.count(0), H.count(1)]


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_out_of_core_subgroups_dict_is_not_replaced_by_file_column(tmp_path, kind):
    """evaluate_parquet / evaluate_csv(subgroups={"g": mask}) silently read the file's g."""
    df = frame()
    path = tmp_path / f"d.{kind}"
    if kind == "parquet":
        df.assign(g=df.g.astype(bool), h=df.h.astype(bool)).to_parquet(path)
        fn = fastbias.evaluate_parquet
    else:
        df.to_csv(path, index=False)
        fn = fastbias.evaluate_csv
    try:
        r = fn(str(path), label="y", scores="s", subgroups={"g": _bool(H)})
    except (TypeError, ValueError) as e:
        assert "subgroups" in str(e)
        return
    assert_table(model_table(r), E_H_AS_G)


# --- D2: numpy long double scalars inside object arrays are rounded silently
_LD_THIRD = np.longdouble(1) / 3
_LD_BELOW_HALF = np.longdouble(0.5) - np.longdouble(2.0 ** -60)


def _longdouble_is_wider():
    return np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant


needs_ld = pytest.mark.skipif(not _longdouble_is_wider(), reason="long double is float64 here")


@needs_ld
@pytest.mark.parametrize("entry", ["bias_metrics", "evaluate", "BiasEvaluator"])
def test_object_longdouble_scores_not_rounded(entry):
    """Scores [ld(1/3), 1/3, .9, .1], y [1, 0, 1, 0], g = rows 0,1.  ld(1/3) > float64(1/3),
    so subgroup AUC is 1.0; fastbias rounds the object's long double to float64 and reports
    a tie (0.5).  The same values as a longdouble ndarray raise ValueError (documented)."""
    assert _LD_THIRD > np.float64(1 / 3)
    y = [1, 0, 1, 0]
    scores = pd.Series([_LD_THIRD, 1 / 3, 0.9, 0.1], dtype=object)
    g = [True, True, False, False]
    try:
        if entry == "bias_metrics":
            t = fastbias.bias_metrics(y, scores, {"g": np.array(g)})
        elif entry == "evaluate":
            t = model_table(fastbias.evaluate(pd.DataFrame({"y": y, "s": scores, "g": g}),
                                              label="y", scores="s", subgroups=["g"]))
        else:
            t = fastbias.BiasEvaluator(y, {"g": np.array(g)}).metrics(scores)
    except ValueError as e:
        assert "y_score" in str(e) or "'s'" in str(e)
        return
    assert t["subgroup_auc"].iloc[0] == 1.0


@needs_ld
def test_object_longdouble_label_not_rounded_onto_threshold():
    """label 0.5 - 2**-60 (long double, object column) with label_threshold=0.5 is negative;
    fastbias rounds it to 0.5 and counts it positive (as a longdouble ndarray it raises)."""
    y = np.array([_LD_BELOW_HALF, 0, 1, 0], object)
    try:
        t = fastbias.bias_metrics(y, [0.5, 0.2, 0.9, 0.1], {"g": np.array([1, 1, 0, 0], bool)},
                                  label_threshold=0.5)
    except ValueError as e:
        assert "y_true" in str(e)
        return
    assert int(t["subgroup_positives"].iloc[0]) == 0


@needs_ld
def test_object_longdouble_identity_not_rounded_onto_threshold():
    """identity 0.5 - 2**-60 (object) with subgroup_threshold=0.5 is not a member;
    fastbias counts it a member (size 2 instead of 1)."""
    g = np.array([_LD_BELOW_HALF, 1, 0, 0], object)
    try:
        t = fastbias.bias_metrics([1, 0, 1, 0], [0.5, 0.2, 0.9, 0.1], {"g": g}, subgroup_threshold=0.5)
    except ValueError as e:
        assert "'g'" in str(e)
        return
    assert int(t["subgroup_size"].iloc[0]) == 1


# --- D3: evaluate accepts names equal after str(), giving indistinguishable rows
def test_evaluate_refuses_subgroup_names_equal_after_str():
    """subgroups=["1", 1]: bias_metrics / BiasEvaluator refuse these as duplicates; evaluate
    accepts them and its table, text report and JSON show two rows both called "1" and an
    intersection "1 & 1"."""
    df = pd.DataFrame({"y": Y, "s": S, "1": G, 1: H})
    with pytest.raises(ValueError, match=r"subgroups has names that read alike.*\['1', 1\]"):
        fastbias.evaluate(df, label="y", scores="s", subgroups=["1", 1])


def test_evaluate_refuses_model_names_equal_after_str():
    """scores=[1, "1"]: BiasEvaluator.metrics_many refuses '1'/1 ('model names are not unique');
    evaluate gives two models both printed as 1."""
    df = pd.DataFrame({"y": Y, 1: S, "1": [1 - v for v in S], "g": G})
    with pytest.raises(ValueError, match="scores has names that read alike"):
        fastbias.evaluate(df, label="y", scores=[1, "1"], subgroups=["g"])


# --- D4: errors that escape or do not name the value / position
def test_decimal_snan_is_a_clear_error():
    """Decimal('sNaN') in an object score column raises a bare decimal.InvalidOperation."""
    s = np.array([Decimal("sNaN"), 0.2, 0.9, 0.1], object)
    with pytest.raises((ValueError, TypeError), match="y_score"):
        fastbias.bias_metrics([1, 0, 1, 0], s, {"g": np.array([1, 1, 0, 0], bool)})


def test_decimal_snan_in_weights_is_a_clear_error():
    w = np.array([Decimal("sNaN"), 1, 1, 1], object)
    with pytest.raises((ValueError, TypeError), match="sample_weight"):
        fastbias.bias_metrics([1, 0, 1, 0], [0.5, 0.2, 0.9, 0.1], {"g": np.array([1, 1, 0, 0], bool)},
                              sample_weight=w)


def test_huge_python_int_error_names_value_and_position():
    """An all-int object score column with 2**64 + 5 at position 3: message is only
    'y_score has integers too large for 64 bits' (no value, no position)."""
    s = np.array([1, 2, 3, 2 ** 64 + 5], object)
    with pytest.raises(ValueError) as info:
        fastbias.bias_metrics([1, 0, 1, 0], s, {"g": np.array([1, 1, 0, 0], bool)})
    msg = str(info.value)
    assert "y_score" in msg and "position 3" in msg and str(2 ** 64 + 5) in msg


def test_exact_huge_int_scores_consistent():
    """2**64 is exact in float64: [2**64, .2, .9, .1] is accepted, but [2**64, 2, 9, 1]
    (all ints) is refused.  Either both give the exact number or both a named error."""
    y, g = [1, 0, 1, 0], {"g": np.array([1, 1, 0, 0], bool)}
    t = fastbias.bias_metrics(y, np.array([2 ** 64, 2, 9, 1], object), g)
    assert_table(t, brute(y, [2 ** 64, 2, 9, 1], {"g": [1, 1, 0, 0]}))


def test_object_complex_error_names_value_and_position():
    s = np.array([0.1, 0.2, 0.5 + 0j, 0.3], object)
    with pytest.raises(TypeError) as info:
        fastbias.bias_metrics([1, 0, 1, 0], s, {"g": np.array([1, 1, 0, 0], bool)})
    assert "position 2" in str(info.value)


def test_object_timedelta_score_is_a_type_error():
    """np.timedelta64 inside an object score column: ValueError '...cannot hold exactly:
    datetime.timedelta(seconds=5) ... (it would become 'out of range')' -- misleading;
    a timedelta is not a number (a timedelta64 column is a TypeError)."""
    s = np.array([np.timedelta64(5, "s"), 0.2, 0.9, 0.1], object)
    with pytest.raises(TypeError, match="y_score"):
        fastbias.bias_metrics([1, 0, 1, 0], s, {"g": np.array([1, 1, 0, 0], bool)})


def test_empty_list_of_subgroups_says_empty():
    """bias_metrics(y, s, []) says "subgroup 'subgroup_0' mask has 0 rows but y_true has 12"."""
    with pytest.raises(ValueError, match="empty"):
        fastbias.bias_metrics(Y, S, [])


@pytest.mark.parametrize("argument,value", [
    ("subgroups", pd.Series(_bool(G), name="g")),
    ("scores", pd.Series(S, name="s")),
    ("sensitive_features", pd.Series(H, name="g")),
])
def test_evaluate_series_instead_of_names_clear_error(argument, value):
    """A Series (data) where evaluate wants column names: the message is
    'subgroups has duplicate names: [False, True]' / 'scores has duplicate names: [0.2]'."""
    kwargs = {"label": "y", "scores": "s", "subgroups": ["g", "h"]}
    kwargs[argument] = value
    with pytest.raises((TypeError, ValueError, KeyError)) as info:
        fastbias.evaluate(frame(), **kwargs)
    assert argument in str(info.value)
    assert "duplicate" not in str(info.value)


def test_evaluate_multiindex_columns_tuple_names():
    """A tuple is a column name of a MultiIndex frame: not read (the names would be tuples in
    every table and report), but refused with the way to flatten them, for each argument
    (a tuple-named subgroup column was a KeyError listing the tuple's parts)."""
    df = frame()
    df.columns = pd.MultiIndex.from_tuples([("a", "y"), ("a", "s"), ("b", "g"), ("b", "h")])
    for kw in (dict(label=("a", "y"), scores=[("a", "s")], subgroups=[("b", "g")]),
               dict(label="y", scores=("a", "s"), subgroups=["g"]),
               dict(label="y", scores="s", subgroups=("b", "g"))):
        with pytest.raises(TypeError, match="flatten"):
            fastbias.evaluate(df, **kw)


def test_evaluate_weight_length_error_names_the_right_inputs():
    """evaluate has no y_true argument, yet: 'sample_weight has 5 rows but y_true has 12'."""
    with pytest.raises(ValueError) as info:
        fastbias.evaluate(frame(), label="y", scores="s", subgroups=["g"], sample_weight=W[:5])
    assert "sample_weight" in str(info.value) and "y_true" not in str(info.value)
