"""An independent review's tests (2026-11-27): inputs of every foreign kind and dtype
(polars, pyarrow, pandas extension dtypes, object arrays) across the entry points, checked
against a brute-force Fraction reference of the pair counts (never fastbias itself).

Found by review (each fails before its fix): bias_report refused the polars and pyarrow
frames evaluate takes (an AttributeError); bias_metrics and BiasEvaluator refused polars
and pyarrow text and category columns as subgroups (one subgroup per value in pandas);
object labels of booleans beside numbers gave an error naming no value or position.
"""
import importlib
import math
import os
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
CELLS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
         "background_positives"]


# ----------------------------------------------------------------------- reference
def _auc(neg, pos):
    num = den = F(0)
    for sn, wn in neg:
        for sp, wp in pos:
            w = wn * wp
            den += w
            num += w if sp > sn else (w / 2 if sp == sn else 0)
    return None if den == 0 else num / den


def reference(labels, scores, members, weights=None):
    """members: name -> list of True (in), False (background) or None (left out)."""
    n = len(labels)
    w = [F(1)] * n if weights is None else [F(x) for x in weights]
    s = [F(x) for x in scores]
    out = {}
    for g, m in members.items():
        cell = lambda inside, pos: [(s[i], w[i]) for i in range(n)  # noqa: E731
                                    if m[i] is inside and bool(labels[i]) == pos]
        gm, gp, bm, bp = cell(True, False), cell(True, True), cell(False, False), cell(False, True)
        r = {"subgroup_auc": _auc(gm, gp), "bpsn_auc": _auc(gm, bp), "bnsp_auc": _auc(bm, gp)}
        x = _auc(gm, bm)
        r["negative_aeg"] = None if x is None else F(1, 2) - x
        x = _auc(gp, bp)
        r["positive_aeg"] = None if x is None else F(1, 2) - x
        r["cells"] = (len(gm), len(gp), len(bm), len(bp))
        out[g] = r
    return out


def assert_matches(table, ref, weighted=False):
    t = table.set_index("subgroup") if "subgroup" in table.columns else table
    assert sorted(map(str, t.index)) == sorted(ref), (list(t.index), sorted(ref))
    for g, r in ref.items():
        row = t.loc[g]
        for m in METRICS:
            got, exp = row[m], r[m]
            if exp is None:
                assert math.isnan(got), (g, m, got)
            elif weighted:
                assert abs(F(float(got)) - exp) <= abs(exp) * F(1, 2**50) + F(1, 2**70), (g, m, got, exp)
            else:
                assert got == float(exp), (g, m, got, float(exp))
        if not weighted:
            assert tuple(int(row[c]) for c in CELLS) == r["cells"], (g, r["cells"])


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def _parquet(df, tmp_path):
    p = os.path.join(tmp_path, "x.parquet")
    if isinstance(df, pl.DataFrame):
        df.write_parquet(p)
    elif isinstance(df, pa.Table):
        pq.write_table(df, p)
    else:
        df.to_parquet(p)
    return p


# ----------------------------------------------------------------------- data
RNG = np.random.default_rng(0)
N = 40
Y = RNG.integers(0, 2, N)
S8 = RNG.integers(0, 10, N)                       # scores S8 / 8: exact in every float type
G_RAW = [None if RNG.random() < 0.2 else int(RNG.integers(0, 3)) for _ in range(N)]
H_RAW = [bool(RNG.random() < 0.4) for _ in range(N)]
W = RNG.integers(1, 4, N)
LABELS = [bool(v) for v in Y]
SCORES = [F(int(v), 8) for v in S8]
M_EXCL = {"g": [None if v is None else v >= 1 for v in G_RAW], "h": H_RAW}
M_BG = {"g": [False if v is None else v >= 1 for v in G_RAW], "h": H_RAW}
KW = dict(label="y", scores="s", subgroups=["g", "h"], label_threshold=0.5,
          subgroup_threshold=1, missing_subgroup="exclude")


def _pandas_base():
    return pd.DataFrame({"y": Y, "s": S8 / 8, "g": pd.array(G_RAW, dtype="Int64"), "h": H_RAW,
                         "w": W})


def _polars_base():
    return pl.DataFrame({"y": Y.astype(np.int64), "s": S8 / 8,
                         "g": pl.Series(G_RAW, dtype=pl.Int64), "h": H_RAW, "w": W})


def _arrow_base():
    return pa.table({"y": pa.array(Y.astype(np.int64)), "s": pa.array(S8 / 8),
                     "g": pa.array(G_RAW, pa.int64()), "h": pa.array(H_RAW), "w": pa.array(W)})


# ======================================================================= FOUND BY REVIEW
@pytest.mark.parametrize("make", [_polars_base, _arrow_base], ids=["polars", "pyarrow"])
def test_bias_report_takes_the_foreign_frames_evaluate_takes(make):
    """Was: evaluate() accepts a polars DataFrame / pyarrow Table (docs/validation.md: "evaluate
    accepts a pyarrow Table or polars DataFrame") and gives the exact table, but bias_report()
    on the same frame escapes with AttributeError ('Series' object has no attribute 'isna' /
    'pyarrow.lib.ChunkedArray' object has no attribute 'isna'): bias_report passes the raw frame
    on to BiasReport.from_result -> reports/histograms.py score_histograms, which uses pandas
    API on it (no from_foreign). Correct: the same table as evaluate (or, at worst, a TypeError)."""
    df = make()
    ref = reference(LABELS, SCORES, M_EXCL)
    assert_matches(_quiet(fastbias.evaluate, df, **KW).table, ref)      # holds
    report = _quiet(fastbias.bias_report, df, **KW)                     # AttributeError today
    assert_matches(report.to_frame(), ref)


RACE = [None if i % 9 == 4 else "abc"[int(RNG.integers(0, 3))] for i in range(N)]
RACE_REF_BG = reference(LABELS, SCORES, {f"race={v}": [False if r is None else r == v for r in RACE]
                                         for v in "abc"})


@pytest.mark.parametrize("make", [
    lambda: pl.DataFrame({"race": pl.Series(RACE, dtype=pl.Utf8)}),
    lambda: pl.DataFrame({"race": pl.Series(RACE, dtype=pl.Categorical)}),
    lambda: pl.DataFrame({"race": pl.Series(RACE, dtype=pl.Enum(["a", "b", "c", "zz"]))}),
    lambda: pa.table({"race": pa.array(RACE).dictionary_encode()}),
    lambda: pa.table({"race": pa.array(RACE, pa.large_string())}),
], ids=["polars-utf8", "polars-categorical", "polars-enum", "arrow-dictionary", "arrow-large_string"])
@pytest.mark.parametrize("entry", ["bias_metrics", "BiasEvaluator"])
def test_foreign_text_columns_are_categories_in_bias_metrics(make, entry):
    """Was: the same text/categorical column as a pandas DataFrame gives one subgroup per
    value in bias_metrics/BiasEvaluator (and evaluate(sensitive_features=) takes the polars /
    pyarrow column), but as a polars DataFrame or pyarrow Table it is refused:
    "TypeError: subgroup 'race' must be boolean or numeric, got dtype category ... a column of
    categories (text or a pandas Categorical, as a pandas Series) gives one subgroup per value".
    Cause: validate/categories.py is_categorical() returns False for anything that is not a
    pd.Series/pd.Categorical, before from_foreign converts it. Correct: race=a/b/c rows, exact."""
    sub = make()
    y, s = pd.Series(Y), pd.Series(S8 / 8)
    if entry == "bias_metrics":
        table = _quiet(fastbias.bias_metrics, y, s, sub)
    else:
        table = _quiet(lambda: fastbias.BiasEvaluator(y, sub).metrics(s))
    assert_matches(table, RACE_REF_BG)


@pytest.mark.parametrize("values", [
    [True, 0, 1, False, 1, 0],
    [1.0, 0, True, 0, 1, 0],
])
def test_object_labels_mixing_bools_and_numbers_error_names_value_and_position(values):
    """Was (unclear error): object labels holding Python bools beside numbers raise
    "TypeError: y_true has non-numeric labels (dtype object, e.g. a non-numeric value); pass
    pos_label ..." -- it names neither the value nor its position (validate/values.py as_labels:
    first_non_numeric(arr, booleans=True) has no value to show), and "non-numeric" is wrong
    for True/0 (docs: bools inside object columns are used). Correct: either the exact metrics
    (True == 1) or an error naming the boolean and its position, as the pos_label branch does
    ("holds both booleans and numbers")."""
    s = np.array([.1, .2, .3, .4, .5, .6])
    mask = np.array([1, 1, 0, 0, 1, 0], bool)
    try:
        table = _quiet(fastbias.bias_metrics, pd.Series(values, dtype=object), s, {"g": mask})
    except (TypeError, ValueError) as error:
        msg = str(error)
        first_bool = next(i for i, v in enumerate(values) if isinstance(v, bool))
        assert f"position {first_bool}" in msg and repr(values[first_bool]) in msg, msg
    else:
        ref = reference([bool(v) for v in values], [F(x) for x in s], {"g": list(mask)})
        assert_matches(table, ref)


# ======================================================================= PROPERTIES THAT HOLD
def _pandas_variants():
    b = _pandas_base()
    fl = [None if v is None else float(v) for v in G_RAW]
    return {
        "Int64": b,
        "UInt8-g": b.assign(g=pd.array(G_RAW, dtype="UInt8")),
        "Float64-g": b.assign(g=pd.array(fl, dtype="Float64")),
        "int64[pyarrow]-g": b.assign(g=pd.array(G_RAW, dtype="int64[pyarrow]")),
        "double[pyarrow]-g": b.assign(g=pd.array(fl, dtype="double[pyarrow]")),
        "category-unused-g": b.assign(g=pd.Categorical(G_RAW, categories=[0, 1, 2, 5])),
        "bool[pyarrow]-h-y": b.assign(h=pd.array(H_RAW, dtype="bool[pyarrow]"),
                                      y=pd.array(LABELS, dtype="bool[pyarrow]")),
        "boolean-h-y": b.assign(h=pd.array(H_RAW, dtype="boolean"),
                                y=pd.array(LABELS, dtype="boolean")),
        "Float64-s": b.assign(s=pd.array(S8 / 8, dtype="Float64")),
        "double[pyarrow]-s": b.assign(s=pd.array(S8 / 8, dtype="double[pyarrow]")),
        "float32-s": b.assign(s=(S8 / 8).astype("float32")),
        "Int8-y": b.assign(y=pd.array(Y, dtype="Int8")),
        "uint64[pyarrow]-y": b.assign(y=pd.array(Y, dtype="uint64[pyarrow]")),
        "Sparse-h": b.assign(h=pd.arrays.SparseArray(H_RAW, fill_value=False)),
        "Sparse-s": b.assign(s=pd.arrays.SparseArray(S8 / 8, fill_value=0.0)),
    }


@pytest.mark.parametrize("name", list(_pandas_variants()))
def test_pandas_extension_dtypes_exact_on_every_entry_point(name, tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    fb_dask = importlib.import_module("fastbias.dask")
    df = _pandas_variants()[name]
    ref_x, ref_bg = reference(LABELS, SCORES, M_EXCL), reference(LABELS, SCORES, M_BG)
    assert_matches(_quiet(fastbias.evaluate, df, **KW).table, ref_x)
    assert_matches(_quiet(fastbias.bias_report, df, **KW).to_frame(), ref_x)
    assert_matches(_quiet(fb_dask.evaluate, dd.from_pandas(df, npartitions=3), **KW).table, ref_x)
    if "Sparse" not in name:   # pyarrow cannot write Sparse
        assert_matches(_quiet(fastbias.evaluate_parquet, _parquet(df, tmp_path), **KW).table, ref_x)
    args = dict(label_threshold=0.5, subgroup_threshold=1)
    assert_matches(_quiet(fastbias.bias_metrics, df["y"], df["s"], df[["g", "h"]], **args), ref_bg)
    assert_matches(_quiet(lambda: fastbias.BiasEvaluator(df["y"], df[["g", "h"]], **args)
                          .metrics(df["s"])), ref_bg)


def _foreign_variants():
    p, t = _polars_base(), _arrow_base()
    out = {}
    for dt in [pl.Int8, pl.UInt8, pl.UInt64, pl.Float32, pl.Decimal(10, 2)]:
        out[f"polars-g-{dt}"] = p.with_columns(pl.col("g").cast(dt))
        out[f"polars-y-{dt}"] = p.with_columns(pl.col("y").cast(dt))
    out["polars-s-Float32"] = p.with_columns(pl.col("s").cast(pl.Float32))
    out["polars-s-Decimal"] = p.with_columns(pl.col("s").cast(pl.Decimal(10, 3)))
    out["polars-y-Boolean"] = p.with_columns(pl.col("y").cast(pl.Boolean))
    out["arrow"] = t
    out["arrow-g-uint8"] = t.set_column(2, "g", t["g"].cast(pa.uint8()))
    out["arrow-g-decimal"] = t.set_column(2, "g", t["g"].cast(pa.decimal128(25, 2)))
    out["arrow-g-dictionary"] = t.set_column(2, "g", t["g"].dictionary_encode())
    out["arrow-s-float32"] = t.set_column(1, "s", t["s"].cast(pa.float32()))
    out["arrow-y-bool"] = t.set_column(0, "y", t["y"].cast(pa.bool_()))
    out["arrow-3-chunks"] = pa.concat_tables([t.slice(0, 7), t.slice(7, 20), t.slice(27)])
    return out


@pytest.mark.parametrize("name", list(_foreign_variants()))
def test_polars_and_arrow_exact_on_evaluate_parquet_bias_metrics_evaluator(name, tmp_path):
    df = _foreign_variants()[name]
    sel = df.select(["g", "h"]) if isinstance(df, pa.Table) else df[["g", "h"]]
    ref_x, ref_bg = reference(LABELS, SCORES, M_EXCL), reference(LABELS, SCORES, M_BG)
    assert_matches(_quiet(fastbias.evaluate, df, **KW).table, ref_x)
    assert_matches(_quiet(fastbias.evaluate_parquet, _parquet(df, tmp_path), **KW).table, ref_x)
    args = dict(label_threshold=0.5, subgroup_threshold=1)
    assert_matches(_quiet(fastbias.bias_metrics, df["y"], df["s"], sel, **args), ref_bg)
    assert_matches(_quiet(lambda: fastbias.BiasEvaluator(df["y"], sel, **args).metrics(df["s"])),
                   ref_bg)


B = 2**53
BIG = [None if i % 7 == 3 else [B + 3, B + 4, B + 5, 5][i % 4] for i in range(N)]


@pytest.mark.parametrize("make", [
    lambda: pd.array(BIG, dtype="Int64"), lambda: pd.array(BIG, dtype="UInt64"),
    lambda: pd.array(BIG, dtype="uint64[pyarrow]"),
    lambda: pd.Categorical(BIG, categories=[5, B + 3, B + 4, B + 5, B + 9]),
    lambda: pl.Series(BIG, dtype=pl.Int64), lambda: pl.Series(BIG, dtype=pl.UInt64),
    lambda: pa.chunked_array([pa.array(BIG[:10], pa.uint64()), pa.array(BIG[10:], pa.uint64())]),
    lambda: pa.array(BIG, pa.uint64()).dictionary_encode(),
], ids=["Int64", "UInt64", "uint64[pyarrow]", "category", "polars-Int64", "polars-UInt64",
        "arrow-chunked", "arrow-dictionary"])
def test_identity_integers_beyond_2_53_compared_exactly(make, tmp_path):
    """2**53+3 must not reach a threshold of 2**53+4 (numpy's float compare would say it does)."""
    thr = B + 4
    col = make()
    kw = dict(label="y", scores="s", subgroups=["g"], subgroup_threshold=thr,
              missing_subgroup="exclude")
    ref_x = reference(LABELS, SCORES, {"g": [None if v is None else v >= thr for v in BIG]})
    ref_bg = reference(LABELS, SCORES, {"g": [False if v is None else v >= thr for v in BIG]})
    if isinstance(col, (pl.Series,)):
        df = pl.DataFrame({"y": Y, "s": S8 / 8, "g": col})
        sub = df[["g"]]
    elif isinstance(col, (pa.Array, pa.ChunkedArray)):
        df = pa.table({"y": Y, "s": S8 / 8, "g": col})
        sub = df.select(["g"])
    else:
        df = pd.DataFrame({"y": Y, "s": S8 / 8, "g": col})
        sub = df[["g"]]
        dd = pytest.importorskip("dask.dataframe")
        fb_dask = importlib.import_module("fastbias.dask")
        assert_matches(_quiet(fb_dask.evaluate, dd.from_pandas(df, npartitions=3), **kw).table, ref_x)
    assert_matches(_quiet(fastbias.evaluate, df, **kw).table, ref_x)
    assert_matches(_quiet(fastbias.evaluate_parquet, _parquet(df, tmp_path), **kw).table, ref_x)
    assert_matches(_quiet(fastbias.bias_metrics, df["y"], df["s"], sub, subgroup_threshold=thr), ref_bg)


@pytest.mark.parametrize("make", [
    lambda w: pd.array(w, dtype="UInt64"), lambda w: pd.array(w, dtype="Float64"),
    lambda w: pd.array(w, dtype="uint8[pyarrow]"), lambda w: pd.arrays.SparseArray(w, fill_value=0),
    lambda w: pl.Series(w).cast(pl.Decimal(10, 2)), lambda w: pl.Series(w).cast(pl.Float32),
    lambda w: pa.array(w).cast(pa.decimal128(25, 2)),
], ids=["UInt64", "Float64", "uint8[pyarrow]", "Sparse", "polars-Decimal", "polars-Float32",
        "arrow-decimal"])
def test_weights_of_foreign_dtypes_exact(make):
    col = make(W)
    if isinstance(col, pl.Series):
        df = pl.DataFrame({"y": Y, "s": S8 / 8, "h": H_RAW, "w": col})
    elif isinstance(col, pa.Array):
        df = pa.table({"y": Y, "s": S8 / 8, "h": H_RAW, "w": col})
    else:
        df = pd.DataFrame({"y": Y, "s": S8 / 8, "h": H_RAW, "w": col})
    ref = reference(LABELS, SCORES, {"h": H_RAW}, [int(v) for v in W])
    table = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["h"], sample_weight="w").table
    assert_matches(table, ref, weighted=True)
    assert_matches(_quiet(fastbias.bias_metrics, df["y"], df["s"], {"h": np.array(H_RAW)},
                          sample_weight=df["w"]), ref, weighted=True)


@pytest.mark.parametrize("make", [
    lambda: pd.DataFrame({"w": pd.array(list(W[:5]) + [None] + list(W[6:]), dtype="Int64")}),
    lambda: pl.DataFrame({"w": pl.Series([int(v) for v in W[:5]] + [None] + [int(v) for v in W[6:]],
                                         dtype=pl.UInt8)}),
], ids=["Int64-NA", "polars-null"])
def test_missing_weight_named_with_position(make):
    df = make()
    w = df["w"]
    with pytest.raises(ValueError, match=r"sample_weight.*missing.*position 5"):
        _quiet(fastbias.bias_metrics, Y, S8 / 8, {"h": np.array(H_RAW)}, sample_weight=w)


def test_big_integer_weight_and_scores_refused_by_name():
    wbig = [int(v) for v in W]
    wbig[4] = B + 1
    with pytest.raises(ValueError, match=r"sample_weight.*9007199254740993 at position 4"):
        _quiet(fastbias.bias_metrics, Y, S8 / 8, {"h": np.array(H_RAW)},
               sample_weight=pl.Series(wbig, dtype=pl.UInt64))
    with pytest.raises(ValueError, match=r"y_score.*beyond 2\*\*53"):
        _quiet(fastbias.bias_metrics, Y, pd.Series([2**60 + int(v) for v in S8], dtype=object),
               {"h": np.array(H_RAW)})


TXT = ["tox" if v else "ok" for v in Y]


@pytest.mark.parametrize("make", [
    lambda: pd.Categorical(TXT, categories=["ok", "tox", "spam"]),
    lambda: pd.array(TXT, dtype="string[pyarrow]"), lambda: pd.array(TXT, dtype="string[python]"),
    lambda: pl.Series(TXT, dtype=pl.Enum(["ok", "tox", "spam"])),
    lambda: pl.Series(TXT, dtype=pl.Categorical), lambda: pa.array(TXT).dictionary_encode(),
    lambda: pa.array(TXT, pa.large_string()),
], ids=["category-unused", "string[pyarrow]", "string[python]", "polars-Enum",
        "polars-Categorical", "arrow-dictionary", "arrow-large_string"])
def test_text_labels_with_pos_label_exact(make):
    col = make()
    if isinstance(col, pl.Series):
        df = pl.DataFrame({"y": col, "s": S8 / 8, "h": H_RAW})
    elif isinstance(col, pa.Array):
        df = pa.table({"y": col, "s": S8 / 8, "h": H_RAW})
    else:
        df = pd.DataFrame({"y": col, "s": S8 / 8, "h": H_RAW})
    ref = reference(LABELS, SCORES, {"h": H_RAW})
    table = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["h"], pos_label="tox").table
    assert_matches(table, ref)


@pytest.mark.parametrize("make", [
    lambda: pd.DataFrame({"y": Y, "s": S8 / 8, "race": pd.Categorical(RACE, categories=["c", "z", "a", "b"])}),
    lambda: pd.DataFrame({"y": Y, "s": S8 / 8, "race": pd.array(RACE, dtype="string[pyarrow]")}),
    lambda: pl.DataFrame({"y": Y, "s": S8 / 8, "race": pl.Series(RACE, dtype=pl.Categorical)}),
    lambda: pl.DataFrame({"y": Y, "s": S8 / 8, "race": pl.Series(RACE, dtype=pl.Enum(["a", "b", "c", "zz"]))}),
    lambda: pa.table({"y": Y, "s": S8 / 8, "race": pa.array(RACE).dictionary_encode()}),
], ids=["category-unused-NaN", "string[pyarrow]-NA", "polars-Categorical", "polars-Enum",
        "arrow-dictionary"])
@pytest.mark.parametrize("missing", ["exclude", "background"])
def test_sensitive_features_of_foreign_dtypes_in_evaluate(make, missing):
    df = make()
    ref = reference(LABELS, SCORES, {f"race={v}": [(None if missing == "exclude" else False)
                                                   if r is None else r == v for r in RACE]
                                     for v in "abc"})
    table = _quiet(fastbias.evaluate, df, label="y", scores="s", sensitive_features=["race"],
                   missing_subgroup=missing).table
    assert_matches(table, ref)


def test_float32_fraction_labels_below_threshold_on_foreign_inputs():
    """float32(0.7) < 0.7: such a label is negative with label_threshold=0.7."""
    fr = np.where(Y == 1, np.float32(0.8), np.float32(0.7)).astype(np.float32)
    ref = reference(LABELS, SCORES, {"h": H_RAW})
    for df in (pl.DataFrame({"y": pl.Series(fr, dtype=pl.Float32), "s": S8 / 8, "h": H_RAW}),
               pa.table({"y": pa.array(fr, pa.float32()), "s": S8 / 8, "h": H_RAW}),
               pd.DataFrame({"y": pd.array(fr, dtype="float[pyarrow]"), "s": S8 / 8, "h": H_RAW})):
        assert_matches(_quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["h"],
                              label_threshold=0.7).table, ref)
