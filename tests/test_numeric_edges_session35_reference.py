"""An independent review's tests (2026-11-27) of scores, labels and weights at their numerical
edges (-0.0, subnormals, float16/float32 ties, integers beyond 2**53, nullable and object
columns, labels at the threshold, weights from subnormal to 1.7e308) through every entry point
(bias_metrics, evaluate, BiasEvaluator, evaluate_csv, evaluate_parquet, Dask) against pair counts
in fractions.Fraction. The review found them alike; these tests pin what held.
"""
import os
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

COLS = ["subgroup_size", "subgroup_negatives", "subgroup_positives", "background_negatives",
        "background_positives", "subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg",
        "positive_aeg"]


def _pp(A, B):
    num = den = F(0)
    for a, wa in A:
        for b, wb in B:
            w = F(wa) * F(wb)
            den += w
            num += w if a > b else (w / 2 if a == b else 0)
    return None if den == 0 else num / den


def reference(y, s, g, w=None):
    """Exact values from Fraction pair counts (ties 1/2), scores as exact rationals."""
    w = [1] * len(y) if w is None else w
    R = list(zip(y, s, g, w))
    Dgm = [(r[1], r[3]) for r in R if r[2] and not r[0]]
    Dgp = [(r[1], r[3]) for r in R if r[2] and r[0]]
    Dm = [(r[1], r[3]) for r in R if not r[2] and not r[0]]
    Dp = [(r[1], r[3]) for r in R if not r[2] and r[0]]
    f = lambda x: float("nan") if x is None else float(x)
    na, pa = _pp(Dm, Dgm), _pp(Dp, Dgp)
    return dict(subgroup_size=len(Dgm) + len(Dgp), subgroup_negatives=len(Dgm),
                subgroup_positives=len(Dgp), background_negatives=len(Dm),
                background_positives=len(Dp), subgroup_auc=f(_pp(Dgp, Dgm)),
                bpsn_auc=f(_pp(Dp, Dgm)), bnsp_auc=f(_pp(Dgp, Dm)),
                negative_aeg=f(None if na is None else F(1, 2) - na),
                positive_aeg=f(None if pa is None else F(1, 2) - pa),
                overall_auc=f(_pp(Dgp + Dp, Dgm + Dm)))


def all_paths(df, tmp_path, weight=None, csv=True, **kw):
    """{entry point: (metrics dict | exception)} for the same rows."""
    out = {}
    pq = os.path.join(tmp_path, "d.parquet")
    df.to_parquet(pq, index=False)
    cs = os.path.join(tmp_path, "d.csv")
    df.to_csv(cs, index=False)
    sw = None if weight is None else df[weight]

    def bm():
        t = fastbias.bias_metrics(df.y, df.s, {"g": df.g}, sample_weight=sw, **kw)
        return t, fastbias.overall_auc(df.y, df.s, sample_weight=sw, **kw)

    def be():
        t = fastbias.BiasEvaluator(df.y, {"g": df.g}, sample_weight=sw, **kw).metrics(df.s)
        return t, fastbias.overall_auc(df.y, df.s, sample_weight=sw, **kw)

    def res(r):
        return r.for_model("s"), r.overall_auc["s"]

    calls = {
        "bias_metrics": bm, "BiasEvaluator": be,
        "evaluate": lambda: res(fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                                  sample_weight=weight, **kw)),
        "parquet": lambda: res(fastbias.evaluate_parquet(pq, label="y", scores="s", subgroups=["g"],
                                                         sample_weight=weight, batch_rows=3,
                                                         bucket_rows=4, **kw)),
    }
    if csv:
        calls["csv"] = lambda: res(fastbias.evaluate_csv(cs, label="y", scores="s", subgroups=["g"],
                                                         sample_weight=weight, batch_rows=3,
                                                         bucket_rows=4, **kw))
    try:
        import dask.dataframe as dd

        import fastbias.dask as fd
        calls["dask"] = lambda: res(fd.evaluate(dd.from_pandas(df, npartitions=2), label="y",
                                                scores="s", subgroups=["g"], sample_weight=weight,
                                                progress=False, **kw))
        calls["dask_parquet"] = lambda: res(fd.evaluate(pq, label="y", scores="s", subgroups=["g"],
                                                        sample_weight=weight, progress=False, **kw))
    except ImportError:
        pass
    for name, fn in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                t, o = fn()
                d = {c: float(t.loc["g", c]) for c in COLS}
                d["overall_auc"] = float(o)
                out[name] = d
            except Exception as e:  # noqa: BLE001 - compared by the caller
                out[name] = e
    return out


def assert_all_equal_reference(out, ref, rel=0.0):
    for name, d in out.items():
        assert not isinstance(d, Exception), f"{name}: {d!r}"
        for c, v in ref.items():
            if np.isnan(v):
                assert np.isnan(d[c]), (name, c, d[c])
            else:
                assert abs(d[c] - v) <= rel * max(1.0, abs(v)), (name, c, d[c], v)


Y = [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0]
G = [True, True, True, True, False, False, False, False, True, False, True, False]


def frame(s, y=Y, w=None):
    d = {"y": y, "s": s, "g": G}
    if w is not None:
        d["w"] = w
    return pd.DataFrame(d)


_f32base = np.array([0.1, 0.1 + 1e-12, 0.2, 0.2 + 1e-13, 0.3, 0.3 - 1e-12, 0.4, 0.4,
                     0.1 + 2e-12, 0.2, 0.3, 0.4])

SCORE_CASES = {
    "negzero": np.array([0.0, -0.0, -0.0, 0.0, 0.0, -0.0, 0.5, 0.5, -0.0, 0.0, 1.0, -1.0]),
    "subnormal64": np.array([5e-324, 0.0, 0.0, 5e-324, -5e-324, 0.0, 1e-320, 5e-324, 0.0, -0.0,
                             1e-310, 5e-324]),
    "subnormal32": np.array([1e-45, 0, 0, 1e-45, -1e-45, 0, 2e-45, 1e-45, 0, -0.0, 1e-40, 1e-45],
                            dtype=np.float32),
    "float64": _f32base,
    "float32": _f32base.astype(np.float32),
    "float16": _f32base.astype(np.float16),
    "int8": np.array([1, 2, 1, 3, 2, 2, 0, 5, 1, 3, 2, -4], dtype=np.int8),
    "uint64_big_exact": np.array([2**63, 2**63 + 2048, 2**63, 2**63 + 4096, 2**64 - 2048, 2**63,
                                  0, 1, 2**63 + 2048, 2**63, 5, 2**63], dtype=np.uint64),
    "extremes": np.array([-1.7976931348623157e308, 1.7976931348623157e308, -0.0, 0.0,
                          2.2250738585072014e-308, 5e-324, 1.0, -1.0, 0.0, -0.0,
                          1.7976931348623157e308, 5e-324]),
}


@pytest.mark.parametrize("case", list(SCORE_CASES))
def test_score_edges_same_exact_numbers_on_every_entry_point(case, tmp_path):
    s = SCORE_CASES[case]
    ref = reference(Y, [F(int(x)) if s.dtype.kind in "iu" else F(float(x)) for x in s], G)
    # CSV text loses the dtype (float32 ties): CSV only where the text round-trips the values
    out = all_paths(frame(s), str(tmp_path), csv=s.dtype.kind in "iu" or s.dtype == np.float64)
    assert_all_equal_reference(out, ref)


def test_float32_ties_differ_from_float64_ties():
    # the reference itself: the float32 copy must tie where float64 does not
    r64 = reference(Y, [F(float(x)) for x in _f32base], G)
    r32 = reference(Y, [F(float(x)) for x in _f32base.astype(np.float32)], G)
    assert r64["subgroup_auc"] != r32["subgroup_auc"] or r64["bpsn_auc"] != r32["bpsn_auc"]
    t = fastbias.bias_metrics(Y, _f32base.astype(np.float32), {"g": G})
    assert t.loc["g", "bpsn_auc"] == r32["bpsn_auc"]
    assert t.loc["g", "subgroup_auc"] == r32["subgroup_auc"]


WEIGHT_CASES = {
    "int": np.array([1, 2, 3, 0, 1, 5, 2, 1, 0, 3, 2, 1]),
    "denormal": np.array([5e-324, 1e-320, 5e-324, 1e-310, 5e-324, 5e-324, 1e-315, 5e-324,
                          1e-323, 5e-324, 5e-324, 1e-322]),
    "huge": np.array([1e300, 2e300, 1e300, 1e300, 3e300, 1e300, 1e300, 1.7e308, 1e300, 1e300,
                      1e300, 1e300]),
    "spread_1e140": np.array([1e-100, 1e40, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.0]),
    "neg_zero": np.array([-0.0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.0]),
    "negatives_weigh_0": np.array([0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 1, 0.0]),
}


@pytest.mark.parametrize("case", list(WEIGHT_CASES))
def test_weight_edges_match_fraction_reference_on_every_entry_point(case, tmp_path):
    w = WEIGHT_CASES[case]
    s = [0.1, 0.2, 0.3, 0.4, 0.2, 0.3, 0.1, 0.5, 0.3, 0.3, 0.2, 0.6]
    ref = reference(Y, [F(x) for x in s], G, [F(float(x)) for x in w])
    out = all_paths(frame(s, w=w), str(tmp_path), weight="w")
    assert_all_equal_reference(out, ref, rel=2.0**-50)


def test_weight_span_beyond_2_480_refused_everywhere_naming_column_and_position(tmp_path):
    w = np.array([1e-300, 1e300, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.0])
    out = all_paths(frame([0.1] * 12, w=w), str(tmp_path), weight="w")
    for name, e in out.items():
        assert isinstance(e, ValueError), (name, e)
        assert "spans more than 2**480" in str(e) and "1e-300" in str(e), (name, e)
        assert "sample_weight" in str(e)


@pytest.mark.parametrize("scores,needle", [
    (np.array([2**53 + 1, 2**53, 2**53, 2**53 + 2, 3, 2**53, 0, 1, 2**53 + 2, 2**53, 5, 2**53],
              dtype=np.int64), "9007199254740993"),
    (np.array([np.inf, -np.inf] + [0.5] * 10), "infinite"),
    (np.array([True, False] * 6), "numeric"),
])
def test_bad_scores_refused_on_every_entry_point(scores, needle, tmp_path):
    out = all_paths(frame(scores), str(tmp_path))
    for name, e in out.items():
        assert isinstance(e, (ValueError, TypeError)), (name, e)
        assert needle in str(e), (name, e)
        assert "position 0" in str(e) or "row 0" in str(e) or "dtype bool" in str(e), (name, e)


LABEL_CASES = {
    # fractional labels: positive iff y >= threshold, 0.5 at 0.5 is positive
    "frac_at_threshold": (dict(label_threshold=0.5),
                          [0.0, 0.5, 0.49, 0.7, 0.0, 0.5, 0.2, 1.0, 0.5, 0.1, 0.9, 0.4999999999]),
    # float32 labels compared as real numbers: float32(0.7) < 0.7 is negative
    "f32_below_0.7": (dict(label_threshold=0.7),
                      np.array([0.0, 0.7, 0.69, 0.7, 0.0, 0.7, 0.2, 1.0, 0.7, 0.1, 0.9, 0.3],
                               dtype=np.float32)),
    "str_pos_label": (dict(pos_label="b"), np.array(["a", "b"])[Y]),
    "int_pos_label_0": (dict(pos_label=0), np.array(Y)),
    "bool": ({}, np.array(Y, dtype=bool)),
}


@pytest.mark.parametrize("case", list(LABEL_CASES))
def test_label_edges_same_numbers_everywhere(case, tmp_path):
    kw, y = LABEL_CASES[case]
    if "label_threshold" in kw:
        yb = [int(F(float(v)) >= F(kw["label_threshold"])) for v in y]
    elif "pos_label" in kw:
        yb = [int(v == kw["pos_label"]) for v in y]
    else:
        yb = [int(v) for v in y]
    s = [0.1, 0.2, 0.3, 0.4, 0.2, 0.3, 0.1, 0.5, 0.3, 0.3, 0.2, 0.6]
    ref = reference(yb, [F(x) for x in s], G)
    # CSV text of float32 0.7 reads as 0.7 (a different real number): not compared there
    out = all_paths(frame(s, y=y), str(tmp_path), csv=case != "f32_below_0.7", **kw)
    assert_all_equal_reference(out, ref)
