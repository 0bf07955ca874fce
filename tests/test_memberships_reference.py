"""Identity columns becoming subgroup memberships: an independent review's tests
(2026-11-27) over every dtype, entry point and missing_subgroup rule.

Every expected value comes from an independent reference: membership decided from the raw
values (value >= threshold as exact rationals, booleans as they are, missing never a member),
pair counts with fractions.Fraction. Found by review (the two tests at the end; each fails
before its fix): a pyarrow dictionary column (Parquet's categories) was refused by
bias_metrics and BiasEvaluator, where the docs promise one subgroup per value.
"""
import itertools
import math
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

pa = pytest.importorskip("pyarrow")

CELLS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
         "background_positives"]


def _missing(v):
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and math.isnan(v))


def ref_state(values, threshold, boolean):
    """1 member, 0 not, -1 missing (unannotated)."""
    out = []
    for v in values:
        if _missing(v):
            out.append(-1)
        elif boolean:
            out.append(int(bool(v)))
        else:
            fv = F(int(v)) if isinstance(v, (int, np.integer)) else F(float(v))
            out.append(int(fv >= F(threshold)))
    return np.array(out)


def ref_metrics(y, s, w, state):
    """state: 1 member, 0 background, -1 left out."""
    y = [bool(v) for v in y]
    s = [float(v) for v in s]
    w = [F(1)] * len(y) if w is None else [F(float(v)) for v in w]
    cell = {k: [i for i in range(len(y)) if state[i] == g and y[i] == p]
            for k, (g, p) in dict(sn=(1, False), sp=(1, True), bn=(0, False), bp=(0, True)).items()}

    def auc(neg, pos):
        num = den = F(0)
        for i in neg:
            for j in pos:
                ww = w[i] * w[j]
                den += ww
                num += ww if s[j] > s[i] else ww / 2 if s[j] == s[i] else 0
        return None if den == 0 else num / den

    def aeg(bg, sg):
        a = auc(sg, bg)
        return None if a is None else F(1, 2) - a
    return dict(subgroup_negatives=len(cell["sn"]), subgroup_positives=len(cell["sp"]),
                background_negatives=len(cell["bn"]), background_positives=len(cell["bp"]),
                subgroup_auc=auc(cell["sn"], cell["sp"]), bpsn_auc=auc(cell["sn"], cell["bp"]),
                bnsp_auc=auc(cell["bn"], cell["sp"]), negative_aeg=aeg(cell["bn"], cell["sn"]),
                positive_aeg=aeg(cell["bp"], cell["sp"]))


def assert_row(row, ref, what):
    for k, v in ref.items():
        got = float(row[k])
        if v is None:
            assert math.isnan(got), (what, k, got)
        else:
            assert abs(got - float(v)) <= 1e-12, (what, k, got, float(v))


def _column(kind, n, rng):
    miss = rng.random(n) < 0.2
    if kind == "bool":
        return pd.Series(rng.random(n) < 0.4), True
    if kind == "boolean":
        v = pd.array(rng.random(n) < 0.4, dtype="boolean")
        v[miss] = pd.NA
        return pd.Series(v), True
    if kind == "bool[pyarrow]":
        return pd.Series(pd.array([None if m else bool(b) for m, b in
                                   zip(miss, rng.random(n) < .4)], dtype=kind)), True
    if kind == "objbool":
        return pd.Series([None if m else bool(b) for m, b in zip(miss, rng.random(n) < .4)],
                         dtype=object), True
    if kind in ("int8", "int16", "int64", "uint8", "uint64"):
        return pd.Series(rng.integers(0 if kind[0] == "u" else -3, 4, n).astype(kind)), False
    if kind in ("Int64", "UInt8"):
        v = pd.array(rng.integers(0, 4, n), dtype=kind)
        v[miss] = pd.NA
        return pd.Series(v), False
    if kind in ("int64[pyarrow]", "double[pyarrow]"):
        base = rng.integers(0, 4, n) / (4 if "double" in kind else 1)
        return pd.Series(pd.array([None if m else (float(b) if "double" in kind else int(b))
                                   for m, b in zip(miss, base)], dtype=kind)), False
    if kind in ("float32", "float64"):
        v = rng.choice([0, .25, .5, .7, .75, 1.0, 0.3], n).astype(kind)
        v[miss] = np.nan
        return pd.Series(v), False
    if kind == "objnum":
        choices = [None, np.nan, pd.NA, 0, 1, 0.5, 0.75, 2]
        return pd.Series([choices[i] for i in rng.integers(0, len(choices), n)],
                         dtype=object), False
    if kind == "catnum":
        return pd.Series(pd.Categorical.from_codes(np.where(miss, -1, rng.integers(0, 4, n)),
                                                   categories=[0, 1, 2, 3])), False
    if kind == "sparse":
        v = rng.choice([0., .5, 1.], n)
        v[miss] = np.nan
        return pd.Series(pd.arrays.SparseArray(v, fill_value=0.0)), False
    raise KeyError(kind)


KINDS = ["bool", "boolean", "bool[pyarrow]", "objbool", "int8", "int16", "int64", "uint8",
         "uint64", "Int64", "UInt8", "int64[pyarrow]", "double[pyarrow]", "float32", "float64",
         "objnum", "catnum", "sparse"]


@pytest.mark.parametrize("seed", range(6))
def test_memberships_all_dtypes_all_entry_points_match_reference(seed):
    """Holds: every dtype, shuffled/duplicate indexes, tied scores, weights, thresholds at
    values; evaluate (background/exclude), bias_metrics (DataFrame, dict) and BiasEvaluator."""
    rng = np.random.default_rng(seed)
    for _ in range(12):
        n = int(rng.integers(6, 25))
        kinds = list(rng.choice(KINDS, 3))
        thr = float(rng.choice([0.5, 0.25, 0.75, 1.0, 0.7, 2.0, 0.0, -1.0]))
        y = rng.random(n) < 0.5
        y[:2] = True, False
        s = rng.choice([0.1, 0.2, 0.2, 0.5, 0.7], n).astype(rng.choice(["float64", "float32"]))
        w = rng.choice([0.5, 1.0, 2.0, 0.0], n) if rng.random() < .3 else None
        index = [pd.RangeIndex(n), pd.Index(rng.permutation(n) * 3 + 7),
                 pd.Index(rng.integers(0, 3, n))][rng.integers(0, 3)]
        cols, boolean = {}, {}
        for j, k in enumerate(kinds):
            c, b = _column(k, n, rng)
            cols[f"c{j}"], boolean[f"c{j}"] = c.set_axis(index), b
        df = pd.DataFrame({"y": pd.Series(y, index=index), "s": pd.Series(s, index=index), **cols})
        if w is not None:
            df["w"] = w
        names = list(cols)
        states = {c: ref_state([v for v in cols[c].astype(object)] if not isinstance(
            cols[c].dtype, pd.SparseDtype) else list(np.asarray(cols[c].sparse.to_dense())),
            thr, boolean[c]) for c in names}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for policy in ("background", "exclude"):
                t = fastbias.evaluate(df, label="y", scores="s", subgroups=names,
                                      subgroup_threshold=thr, missing_subgroup=policy,
                                      sample_weight=None if w is None else "w").for_model()
                for c in names:
                    st = states[c].copy()
                    st[st == -1] = 0 if policy == "background" else -1
                    assert_row(t.loc[c], ref_metrics(y, s, w, st), (policy, kinds, thr, c))
            tables = [fastbias.bias_metrics(df["y"], df["s"], df[names], subgroup_threshold=thr,
                                            sample_weight=w),
                      fastbias.bias_metrics(df["y"], df["s"], {c: df[c] for c in names},
                                            subgroup_threshold=thr, sample_weight=w),
                      fastbias.BiasEvaluator(df["y"], df[names], subgroup_threshold=thr,
                                             sample_weight=w).metrics(df["s"])]
        for t in tables:
            for c in names:
                st = states[c].copy()
                st[st == -1] = 0
                assert_row(t.loc[c], ref_metrics(y, s, w, st), ("arrays", kinds, thr, c))


@pytest.mark.jit_heavy
def test_uint8_every_byte_thresholds_both_sides():
    """Holds: member iff value >= threshold, for every byte value, thresholds just below, at
    and just above each value, uint8 / UInt8 / uint8[pyarrow], on evaluate and bias_metrics."""
    v = np.arange(256, dtype=np.uint8).repeat(2)
    y = np.tile([False, True], 256)
    s = np.random.default_rng(0).random(v.size)
    thresholds = sorted({x + d for x in range(0, 257, 3) for d in (-0.5, 0.0, 1e-9)}
                        | {0.5, 1.0, 255.0, 255.5, 256.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in thresholds:
            want = int(sum(F(int(a)) >= F(t) for a in v))
            for dt in ("uint8", "UInt8", "uint8[pyarrow]"):
                col = pd.Series(v).astype(dt)
                df = pd.DataFrame(dict(y=y, s=s, g=col))
                a = fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                      subgroup_threshold=t).table.subgroup_size.iloc[0]
                b = fastbias.bias_metrics(y, s, {"g": col},
                                          subgroup_threshold=t).subgroup_size.iloc[0]
                assert int(a) == int(b) == want, (dt, t, a, b, want)


@pytest.mark.parametrize("dt", ["uint64", "UInt64", "uint64[pyarrow]"])
def test_uint64_beyond_2_53_compared_as_integers(dt):
    """Holds: integers beyond 2**53 are compared with the threshold exactly."""
    B = 2 ** 53
    vals = [0, B - 1, B, B + 1, B + 2, B + 3, B + 4, 2 ** 63, 2 ** 64 - 2, 2 ** 64 - 1]
    col = pd.Series(vals * 2, dtype=dt)
    y = np.array([0, 1] * len(vals), bool)
    s = np.linspace(0, 1, len(col))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in (float(B), float(B + 2), float(B + 4), float(2 ** 63), float(2 ** 64 - 4096)):
            want = sum(F(int(a)) >= F(t) for a in col)
            df = pd.DataFrame(dict(y=y, s=s, g=col))
            got = [int(fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                         subgroup_threshold=t).table.subgroup_size.iloc[0]),
                   int(fastbias.bias_metrics(y, s, {"g": col},
                                             subgroup_threshold=t).subgroup_size.iloc[0])]
            assert got == [want, want], (t, got, want)


@pytest.mark.parametrize("seed", range(4))
def test_intersections_and_features_exclude_match_reference(seed):
    """Holds: intersections (member of all; background leaves out rows unannotated for any
    part under "exclude"; kept with >= min_subgroup_size rows of each class) and
    sensitive_features (value groups; missing is background / left out; combinations)."""
    rng = np.random.default_rng(100 + seed)
    for _ in range(10):
        n = int(rng.integers(10, 30))
        y = rng.random(n) < 0.5
        y[:2] = True, False
        s = rng.choice([0.1, 0.2, 0.3, 0.5], n)
        index = pd.Index(rng.integers(0, 3, n)) if rng.random() < .5 else pd.RangeIndex(n)
        g = {f"g{j}": rng.choice([0., 0.3, 0.6, 1.0, np.nan], n, p=[.3, .2, .2, .2, .1])
             for j in range(3)}
        race = rng.choice(np.array(["b", "a", None], dtype=object), n, p=[.45, .45, .1])
        sex = rng.choice(np.array(["w", "m"], dtype=object), n)
        df = pd.DataFrame({"y": y, "s": s, **g, "race": race, "sex": sex}, index=index)
        minsz = int(rng.integers(1, 3))
        st = {c: ref_state(list(v), 0.5, False) for c, v in g.items()}
        rmiss = np.array([v is None for v in race])
        for policy in ("background", "exclude"):
            groups = {}
            for c in g:
                a = st[c].copy()
                a[a == -1] = 0 if policy == "background" else -1
                groups[c] = a
            for combo in itertools.combinations(list(g), 2):
                mem = np.all([st[c] == 1 for c in combo], axis=0)
                if (mem & y).sum() >= minsz and (mem & ~y).sum() >= minsz:
                    a = mem.astype(int)
                    if policy == "exclude":
                        a[np.any([st[c] == -1 for c in combo], axis=0)] = -1
                    groups[" & ".join(combo)] = a
            for f, vals, miss in (("race", race, rmiss), ("sex", sex, np.zeros(n, bool))):
                for v in sorted({x for x in vals if x is not None}):
                    a = (vals == v).astype(int)
                    if policy == "exclude":
                        a[miss] = -1
                    groups[f"{f}={v}"] = a
            for rv, sv in itertools.product(sorted({x for x in race if x is not None}),
                                            sorted(set(sex))):
                mem = (race == rv) & (sex == sv)
                if (mem & y).sum() >= minsz and (mem & ~y).sum() >= minsz:
                    a = mem.astype(int)
                    if policy == "exclude":
                        a[rmiss] = -1
                    groups[f"race={rv} & sex={sv}"] = a
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t = fastbias.evaluate(df, label="y", scores="s", subgroups=list(g),
                                      missing_subgroup=policy, intersections=2,
                                      min_subgroup_size=minsz,
                                      sensitive_features=["race", "sex"]).for_model()
            assert list(t.index) == list(groups)
            for name, a in groups.items():
                assert_row(t.loc[name], ref_metrics(y, s, None, a), (policy, name))


# ---------------------------------------------------------------- found by review

def _arrow_dict(values, value_type):
    return pd.Series(pd.array(values, dtype=pd.ArrowDtype(pa.dictionary(pa.int8(), value_type))))


def test_arrow_dictionary_of_integers_without_threshold_is_one_subgroup_per_value():
    """docs/validation.md: "a pandas Categorical or Arrow dictionary of integers (with missing
    values) as an identity column ... without a threshold (bias_metrics' default) one
    subgroup per value". The Categorical does this; the Arrow dictionary is refused with
    "has 1 NaN or missing value(s) ... pass a subgroup threshold" (bias_metrics and
    BiasEvaluator). Correct: g=1 (rows 1, 4), g=2 (row 5), g=3 (rows 0, 3), as the
    Categorical of the same values gives."""
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    values = [3, 1, None, 3, 1, 2]
    want = {"g=1": 2, "g=2": 1, "g=3": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cat = fastbias.bias_metrics(y, s, {"g": pd.Series(pd.Categorical(values))})
        assert dict(zip(cat.index, cat.subgroup_size.astype(int))) == want  # holds
        t = fastbias.bias_metrics(y, s, {"g": _arrow_dict(values, pa.int64())})
    assert dict(zip(t.index, t.subgroup_size.astype(int))) == want


def test_arrow_dictionary_of_text_in_bias_metrics_is_one_subgroup_per_value():
    """bias_metrics docs: a categorical column (a Series ... holding text or a pandas
    Categorical) is one subgroup per value; evaluate(sensitive_features=) takes a pyarrow
    dictionary<string> Series (what Parquet gives) as such, but bias_metrics/BiasEvaluator
    raise "must be boolean or numeric ... a column of categories (text or a pandas
    Categorical, as a pandas Series) gives one subgroup per value" -- for a pandas Series of
    text. Correct: g=a (rows 0, 3, 5), g=b (rows 1, 4), the missing row in neither."""
    y = np.array([0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4, .5, .6])
    col = _arrow_dict(["a", "b", None, "a", "b", "a"], pa.string())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = pd.DataFrame({"y": y, "s": s, "g": col})
        ev = fastbias.evaluate(df, label="y", scores="s", sensitive_features=["g"]).for_model()
        assert dict(zip(ev.index, ev.subgroup_size.astype(int))) == {"g=a": 3, "g=b": 2}
        t = fastbias.bias_metrics(y, s, {"g": col})
    assert dict(zip(t.index, t.subgroup_size.astype(int))) == {"g=a": 3, "g=b": 2}
