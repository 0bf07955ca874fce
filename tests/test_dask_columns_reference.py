"""fastbias.dask.evaluate over column types and settings: an independent review's tests
(2026-11-27) of the Dask DataFrame and Parquet paths against a brute-force reference (pair
counts in fractions.Fraction, memberships decided here from the raw values and the documented
rules) and against fastbias.evaluate.

Found by review (the last test; it fails before its fix): a Dask frame whose columns are
named by integers was refused ("label must be a column name, got int"). The others pin
properties that hold.
"""
from __future__ import annotations

import math
import os
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask")
dd = pytest.importorskip("dask.dataframe")
pa = pytest.importorskip("pyarrow")

import fastbias  # noqa: E402
import fastbias.dask  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


# --- the reference -----------------------------------------------------------------------

def _p_greater(a, b):
    """Weighted P(score of a > score of b), ties 1/2; None when no pair has weight."""
    num = den = F(0)
    for sa, wa in a:
        for sb, wb in b:
            w = wa * wb
            den += w
            if sa > sb:
                num += w
            elif sa == sb:
                num += w / 2
    return None if den == 0 else num / den


def _frac(x):
    return x if isinstance(x, F) else F(float(x))


def reference(scores, positive, membership, weights=None):
    """membership: 1 member, 0 background, -1 left out (unannotated, excluded)."""
    n = len(scores)
    w = [1] * n if weights is None else weights
    cell = lambda m, p: [(_frac(scores[i]), _frac(w[i])) for i in range(n)  # noqa: E731
                         if membership[i] == m and bool(positive[i]) == p]
    sn, sp, bn, bp = cell(1, False), cell(1, True), cell(0, False), cell(0, True)
    neg = _p_greater(bn, sn)
    pos = _p_greater(bp, sp)
    return dict(subgroup_negatives=len(sn), subgroup_positives=len(sp),
                background_negatives=len(bn), background_positives=len(bp),
                subgroup_auc=_p_greater(sp, sn), bpsn_auc=_p_greater(bp, sn),
                bnsp_auc=_p_greater(sp, bn),
                negative_aeg=None if neg is None else F(1, 2) - neg,
                positive_aeg=None if pos is None else F(1, 2) - pos)


def _missing(v):
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))


def memberships(values, exclude, threshold=0.5):
    out = []
    for v in values:
        if _missing(v):
            out.append(-1 if exclude else 0)
        elif isinstance(v, (bool, np.bool_)):
            out.append(int(bool(v)))
        else:
            out.append(int(F(float(v)) >= F(threshold)))
    return out


def assert_matches(table, model, refs, tol=0.0, where=""):
    t = table[table["model"] == model].set_index("subgroup")
    assert sorted(t.index, key=str) == sorted(refs, key=str), (where, list(t.index))
    for group, ref in refs.items():
        row = t.loc[group]
        for key, expected in ref.items():
            got = float(row[key])
            if expected is None:
                assert math.isnan(got), (where, group, key, got)
            else:
                assert abs(got - float(expected)) <= tol * max(1.0, abs(float(expected))), \
                    (where, group, key, got, float(expected))


def ddf_of(parts):
    """A Dask DataFrame whose partitions are exactly ``parts`` (empty and one-row ones
    included; their dtypes may differ from the meta's, e.g. other categories)."""
    return dd.from_delayed([dask.delayed(lambda x: x)(p) for p in parts],
                           meta=parts[0].iloc[:0], verify_meta=False)


def paths_of(parts, tmp_path):
    directory = tmp_path / "parts"
    directory.mkdir()
    for i, part in enumerate(parts):
        part.to_parquet(os.path.join(directory, f"part-{i:03d}.parquet"), index=False)
    return str(directory)


def all_sources(parts, tmp_path):
    return [("dask", ddf_of(parts)), ("paths", paths_of(parts, tmp_path))]


# --- properties that held ----------------------------------------------------------------

def _typed_part(n, seed):
    r = np.random.default_rng(seed)
    nb = np.where(r.random(n) < 0.2, None, r.random(n) < 0.4)
    ni = np.where(r.random(n) < 0.2, None, r.integers(0, 2, n))
    return pd.DataFrame({
        "y": r.integers(0, 2, n).astype(bool),
        "s": np.round(r.random(n), 1),
        "g_bool": r.random(n) < 0.3,
        "g_nb": pd.array(nb, dtype="boolean"),
        "g_int": pd.array(ni, dtype="Int64"),
        "g_u8": r.integers(0, 2, n).astype(np.uint8),
        "g_f32": np.where(r.random(n) < 0.2, np.nan,
                          r.choice([0.1, 0.3, 0.5, 0.7, 0.9], n)).astype(np.float32),
        "g_pi": pd.array(ni, dtype="int64[pyarrow]"),
        "g_pb": pd.array(nb, dtype="bool[pyarrow]"),
        "g_dict": pd.array(pa.array(list(np.where(r.random(n) < 0.3, None,
                                                  r.choice([0.2, 0.5, 0.7], n))),
                                    type=pa.float64()).dictionary_encode(),
                           dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.float64()))),
        "g_cat": pd.Categorical(np.where(r.random(n) < 0.2, np.nan,
                                         r.choice([0.0, 0.5, 0.7, 1.0], n)),
                                categories=[0.0, 0.5, 0.7, 1.0]),
    })


_TYPED = ["g_bool", "g_nb", "g_int", "g_u8", "g_f32", "g_pi", "g_pb", "g_dict", "g_cat"]


@pytest.mark.parametrize("missing", ["background", "exclude"])
@pytest.mark.parametrize("threshold", [0.5, 0.7])
def test_identity_dtypes_with_empty_and_one_row_partitions(tmp_path, missing, threshold):
    # float32 0.7 is 0.69999998..., below a threshold of 0.7: not a member (exact comparison)
    parts = [_typed_part(25, 1), _typed_part(1, 2), _typed_part(0, 3), _typed_part(30, 4)]
    df = pd.concat(parts, ignore_index=True)
    refs = {g: reference(df["s"].tolist(), df["y"].tolist(),
                         memberships(df[g].astype(object).tolist(), missing == "exclude",
                                     threshold))
            for g in _TYPED}
    kw = dict(label="y", scores="s", subgroups=_TYPED, missing_subgroup=missing,
              subgroup_threshold=threshold)
    assert_matches(fastbias.evaluate(df, **kw).table, "s", refs, where="memory")
    for name, source in all_sources(parts, tmp_path):
        assert_matches(fastbias.dask.evaluate(source, **kw).table, "s", refs, where=name)


def test_categorical_with_unknown_categories_differing_by_partition():
    p1 = pd.DataFrame({"y": [0, 1, 0, 1, 0], "s": [.1, .2, .3, .4, .5],
                       "g": pd.Categorical(pd.array([0.7, 0.1, None, 0.7, 0.2], dtype="float32"))})
    p2 = pd.DataFrame({"y": [1, 0, 1, 0, 1], "s": [.6, .7, .8, .9, .05],
                       "g": pd.Categorical(pd.array([0.9, 0.7, None, 0.71, 0.7], dtype="float32"))})
    df = pd.concat([p1, p2], ignore_index=True)
    ddf = ddf_of([p1, p2])
    ddf["g"] = ddf["g"].cat.as_unknown()
    for missing in ["background", "exclude"]:
        values = [None if _missing(v) else float(np.float32(v)) for v in
                  [0.7, 0.1, None, 0.7, 0.2, 0.9, 0.7, None, 0.71, 0.7]]
        ref = reference(df["s"].tolist(), df["y"].astype(bool).tolist(),
                        memberships(values, missing == "exclude", 0.7))
        res = fastbias.dask.evaluate(ddf, label="y", scores="s", subgroups=["g"],
                                     subgroup_threshold=0.7, missing_subgroup=missing)
        assert_matches(res.table, "s", {"g": ref}, where=missing)


def _label_part(n, seed, only=None):
    r = np.random.default_rng(seed)
    y = r.random(n) < 0.5 if only is None else np.full(n, only)
    return pd.DataFrame({
        "yf": np.where(y, r.choice([0.5, 0.7, 1.0], n), r.choice([0.0, 0.2, 0.4999], n)),
        "ys": np.where(y, "toxic", "ok"),
        "s32": np.round(r.random(n), 1).astype(np.float32),
        "s64": np.round(r.random(n), 2),
        "su8": r.integers(0, 5, n).astype(np.uint8),
        "w": r.choice([0.0, 0.5, 1.0, 2.0], n),
        "g": np.where(r.random(n) < 0.2, np.nan, r.choice([0.0, 0.25, 0.5, 0.75], n)),
    })


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label", ["float", "pos_label"])
def test_labels_models_weights_one_class_partitions(tmp_path, weighted, label):
    parts = [_label_part(20, 1, True), _label_part(1, 2, False), _label_part(0, 3),
             _label_part(25, 4), _label_part(15, 5, False)]
    df = pd.concat(parts, ignore_index=True)
    models = ["s32", "s64", "su8"]
    positive = (df["ys"] == "toxic").tolist()  # == yf >= 0.5
    lab = (dict(label="yf", label_threshold=0.5) if label == "float"
           else dict(label="ys", pos_label="toxic"))
    kw = dict(scores=models, subgroups=["g"], missing_subgroup="exclude",
              subgroup_threshold=0.25, sample_weight="w" if weighted else None, **lab)
    refs = {m: {"g": reference(df[m].tolist(), positive, memberships(df["g"].tolist(), True, 0.25),
                               df["w"].tolist() if weighted else None)} for m in models}
    tol = 1e-12 if weighted else 0.0
    for name, source in all_sources(parts, tmp_path):
        res = fastbias.dask.evaluate(source, **kw)
        for m in models:
            assert_matches(res.table, m, refs[m], tol, where=name)


def test_divisions_at_signed_zero_and_float32_values(tmp_path):
    r = np.random.default_rng(7)
    n = 60
    df = pd.DataFrame({"y": r.random(n) < 0.5, "s": np.round(r.random(n) * 4 - 2, 1),
                       "t": np.round(r.random(n), 1).astype(np.float32), "g": r.random(n) < 0.4})
    df.loc[::7, "s"] = -0.0
    df.loc[1::7, "s"] = 0.0
    parts = [df.iloc[:20], df.iloc[20:20], df.iloc[20:21], df.iloc[21:]]
    refs = {m: {"g": reference(df[m].tolist(), df["y"].tolist(), df["g"].astype(int).tolist())}
            for m in ["s", "t"]}
    for divisions in ({"s": [-2, -0.0, 2], "t": [0.0, 0.3, 0.9]},
                      {"s": [-2, 0.0, 0.1, 2], "t": [0.0, float(np.float32(0.3)), 0.5, 0.9]}):
        sub = tmp_path / str(len(divisions["s"]))
        sub.mkdir()
        for name, source in all_sources(parts, sub):
            res = fastbias.dask.evaluate(source, label="y", scores=["s", "t"], subgroups=["g"],
                                         divisions=divisions)
            for m in ["s", "t"]:
                assert_matches(res.table, m, refs[m], where=f"{name} {divisions}")


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_intersections_min_subgroup_size(tmp_path, missing):
    r = np.random.default_rng(13)
    n = 60
    df = pd.DataFrame({"y": r.random(n) < 0.5, "s": np.round(r.random(n), 1),
                       "a": np.where(r.random(n) < 0.2, np.nan, r.random(n)),
                       "b": np.where(r.random(n) < 0.2, np.nan, r.random(n)),
                       "c": r.random(n) < 0.5})
    parts = [df.iloc[:20], df.iloc[20:20], df.iloc[20:21], df.iloc[21:]]
    ex = missing == "exclude"
    mm = {c: memberships(df[c].tolist(), ex) for c in "abc"}
    y = df["y"].tolist()
    for min_size in (1, 3, 5):
        refs = {c: reference(df["s"].tolist(), y, mm[c]) for c in "abc"}
        for x, z in [("a", "b"), ("a", "c"), ("b", "c")]:
            inter = [-1 if -1 in (mm[x][i], mm[z][i]) else int(mm[x][i] == mm[z][i] == 1)
                     for i in range(n)]
            pos = sum(1 for i in range(n) if inter[i] == 1 and y[i])
            neg = sum(1 for i in range(n) if inter[i] == 1 and not y[i])
            if pos >= min_size and neg >= min_size:
                refs[f"{x} & {z}"] = reference(df["s"].tolist(), y, inter)
        sub = tmp_path / f"m{min_size}"
        sub.mkdir()
        for name, source in all_sources(parts, sub):
            res = fastbias.dask.evaluate(source, label="y", scores="s", subgroups=list("abc"),
                                         intersections=2, min_subgroup_size=min_size,
                                         missing_subgroup=missing)
            assert_matches(res.table, "s", refs, where=f"{name} {min_size}")


@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_sensitive_feature_values_in_some_partitions_only(tmp_path, missing):
    y = [0, 1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 0]
    s = [.1, .2, .3, .4, .5, .6, .7, .8, .9, .05, .33, .44]
    race = ["b", "a", "b", None, "a", None, None, None, None, None, "zz", "zz"]
    parts = [pd.DataFrame({"y": y[a:b], "s": s[a:b],
                           "r": pd.array(race[a:b], dtype="string[pyarrow]")})
             for a, b in [(0, 5), (5, 5), (5, 10), (10, 12)]]
    refs = {f"r={v}": reference(s, y, [(-1 if missing == "exclude" else 0) if x is None
                                       else int(x == v) for x in race])
            for v in ["a", "b", "zz"]}
    for name, source in all_sources(parts, tmp_path):
        res = fastbias.dask.evaluate(source, label="y", scores="s", sensitive_features=["r"],
                                     missing_subgroup=missing)
        assert_matches(res.table, "s", refs, where=name)


def test_extras_equal_in_memory(tmp_path):
    """thresholds, DeLong and Bernstein intervals: the Dask numbers equal fastbias.evaluate's
    (to 1e-12) on partitions with one row, none, and one class."""
    def part(n, seed, only=None):
        q = np.random.default_rng(seed)
        yy = q.random(n) < 0.5 if only is None else np.full(n, only)
        return pd.DataFrame({"y": yy.astype(float), "s": np.round(q.random(n), 1),
                             "t": np.round(q.random(n), 2).astype(np.float32),
                             "a": np.where(q.random(n) < 0.2, np.nan, q.random(n)),
                             "b": q.random(n) < 0.5})
    parts = [part(30, 1), part(1, 2), part(0, 3), part(40, 4, True), part(30, 5)]
    df = pd.concat(parts, ignore_index=True)
    for extra in (dict(thresholds=[0.3, 0.5, 0.55], threshold_interval="exact",
                       gap_interval="bernstein"),
                  dict(ci="delong", missing_subgroup="exclude"), dict(ci="bernstein")):
        kw = dict(label="y", scores=["s", "t"], subgroups=["a", "b"], **extra)
        mem = fastbias.evaluate(df, **kw)
        res = fastbias.dask.evaluate(ddf_of(parts), **kw)
        for a, b in ((mem.table, res.table), (mem.thresholds, res.thresholds)):
            if a is None:
                assert b is None
                continue
            assert list(a.columns) == list(b.columns)
            for c in a.columns:
                if pd.api.types.is_numeric_dtype(a[c]) and not pd.api.types.is_bool_dtype(a[c]):
                    np.testing.assert_allclose(b[c].to_numpy(float), a[c].to_numpy(float),
                                               rtol=1e-12, atol=1e-15, err_msg=f"{extra} {c}")
                else:
                    assert a[c].astype(str).tolist() == b[c].astype(str).tolist(), c


def test_meta_disagreeing_partitions_refused_by_name():
    P = pd.DataFrame
    parts = [P({"y": [0, 1, 0, 1], "s": [.1, .2, .3, .4], "g": [0.0, 1.0, 0.7, 0.2]}),
             P({"y": [0, 1, 0, 1], "s": [.5, .6, .7, .8], "g": [True, False, True, True]})]
    with pytest.raises(TypeError, match=r"subgroup column 'g' holds boolean values in Dask "
                                        r"partition 1"):
        fastbias.dask.evaluate(ddf_of(parts), label="y", scores="s", subgroups=["g"])
    c1 = P({"y": [0, 1], "s": [.1, .2], "g": pd.Categorical([True, False])})
    c2 = P({"y": [0, 1], "s": [.5, .6], "g": pd.Categorical([0.7, 0.2])})
    ddf = ddf_of([c1, c2])
    with pytest.raises(TypeError, match=r"subgroup column 'g' holds numeric values in Dask "
                                        r"partition 1 but boolean values"):
        fastbias.dask.evaluate(ddf, label="y", scores="s", subgroups=["g"])


# --- found by review ----------------------------------------------------------------------

def test_dask_frame_with_integer_column_names_like_in_memory():
    """(An inconsistency.) a Dask DataFrame whose columns are named 0, 1, 2 (as
    from dd.from_pandas of an unnamed frame) is refused with "label must be a column name,
    got int", although 0 IS one of its columns and fastbias.evaluate on the same pandas
    frame accepts label=0. Correct: the same numbers as in memory (or, if integer names
    cannot be supported, an error that says so and names the value 0). Cause:
    fastbias/validate/spec.py column_spec, `if not isinstance(label, str)`."""
    r = np.random.default_rng(17)
    n = 30
    df = pd.DataFrame({0: (r.random(n) < 0.5).astype(float), 1: np.round(r.random(n), 1),
                       2: np.round(r.random(n), 1)})
    ref = reference(df[1].tolist(), (df[0] >= 0.5).tolist(), memberships(df[2].tolist(), False))
    assert_matches(fastbias.evaluate(df, label=0, scores=1, subgroups=[2]).table, 1, {2: ref})
    res = fastbias.dask.evaluate(dd.from_pandas(df, npartitions=3), label=0, scores=1,
                                 subgroups=[2])
    assert_matches(res.table, 1, {2: ref})
