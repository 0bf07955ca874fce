"""An independent review's tests (2026-11-27) of the out-of-core readers and Dask against
in-memory ``evaluate`` and brute-force references (pair counts in ``fractions.Fraction``): CSV
and Parquet in batches and buckets of 1, 7 and 1,000 rows, Dask in 1, 3 and 7 partitions. The
review found them alike; these tests pin what held (weighted metrics with NA identities under
both ``missing_subgroup`` settings, string ``pos_label`` with nullable and integer identities
and intersections, DeLong's NaN out of core where a light background cannot be told, the final
metric without intersections, the refusals, Hoeffding's bounds counted out of core).
"""
import math
import os
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")
import dask  # noqa: E402

import fastbias.dask  # noqa: E402

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def _cmp(a, b):
    return F(1) if a > b else (F(1, 2) if a == b else F(0))


def _auc(P, N):
    wp = sum(w for _, w in P)
    wn = sum(w for _, w in N)
    if wp == 0 or wn == 0:
        return None
    return sum(a * b * _cmp(sp, sn) for sp, a in P for sn, b in N) / (wp * wn)


def _reference(y, s, g, w, policy):
    """Brute-force Fraction metrics of one subgroup (g: 1/0/NaN)."""
    rows = [(int(yy), F(float(ss)), gg, F(float(ww))) for yy, ss, gg, ww in zip(y, s, g, w)]
    sub = [r for r in rows if r[2] == 1]
    bg = [r for r in rows if r[2] == 0 or (policy == "background" and r[2] != r[2])]
    Sn = [(r[1], r[3]) for r in sub if r[0] == 0]
    Sp = [(r[1], r[3]) for r in sub if r[0] == 1]
    Bn = [(r[1], r[3]) for r in bg if r[0] == 0]
    Bp = [(r[1], r[3]) for r in bg if r[0] == 1]
    return {"subgroup_auc": _auc(Sp, Sn), "bpsn_auc": _auc(Bp, Sn), "bnsp_auc": _auc(Sp, Bn),
            "negative_aeg": F(1, 2) - _auc(Bn, Sn), "positive_aeg": F(1, 2) - _auc(Bp, Sp)}


def _paths(df, tmp_path, kw, sizes=((1, 1), (7, 7), (1000, 1000)), nparts=(1, 3, 7)):
    csv = os.path.join(tmp_path, "x.csv")
    pq = os.path.join(tmp_path, "x.parquet")
    df.to_csv(csv, index=False, float_format="%.17g")
    df.to_parquet(pq, index=False)
    out = {}
    for b, k in sizes:
        out[f"csv{b}"] = lambda b=b, k=k: fastbias.evaluate_csv(csv, batch_rows=b, bucket_rows=k, **kw)
        out[f"parquet{b}"] = lambda b=b, k=k: fastbias.evaluate_parquet(pq, batch_rows=b,
                                                                       bucket_rows=k, **kw)
    for n in nparts:
        out[f"dask{n}"] = lambda n=n: fastbias.dask.evaluate(dd.from_pandas(df, npartitions=n), **kw)
    return out


@pytest.fixture(autouse=True)
def _sync():
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_weighted_na_identity_every_path_and_chunking_matches_fraction(tmp_path, policy):
    rng = np.random.default_rng(0)
    n = 80
    df = pd.DataFrame({"y": rng.integers(0, 2, n).astype(float), "s": rng.integers(0, 4, n) / 3,
                       "g": rng.choice([0.0, 1.0, np.nan], n),
                       "w": 2.0 ** rng.integers(-60, 60, n) * rng.random(n)})
    ref = _reference(df.y, df.s, df.g, df.w, policy)
    kw = dict(label="y", scores="s", subgroups=["g"], sample_weight="w", missing_subgroup=policy)
    mem = fastbias.evaluate(df, **kw).table
    for name, run in [("mem", lambda: fastbias.evaluate(df, **kw)), *_paths(df, tmp_path, kw).items()]:
        t = run().table
        for m in METRICS:
            got = F(float(t[m].iloc[0]))
            # documented bound (docs/correctness.md): 2**-50 relative or 2**-70 absolute
            assert abs(got - ref[m]) <= max(abs(ref[m]) * F(2) ** -50, F(2) ** -70), (name, m)
        for c in ["subgroup_negatives", "subgroup_positives", "background_negatives",
                  "background_positives"]:
            assert t[c].iloc[0] == mem[c].iloc[0], (name, c)


@pytest.mark.parametrize("policy", ["background", "exclude"])
def test_string_pos_label_integer_identity_intersections_exact(tmp_path, policy):
    rng = np.random.default_rng(2)
    n = 150
    df = pd.DataFrame({"y": rng.choice(["toxic", "ok"], n), "s": rng.integers(0, 6, n) / 5.0,
                       "a": pd.array(rng.choice([0, 1, None], n, p=[.5, .3, .2]), dtype="Int64"),
                       "b": rng.choice([0, 1, 2, 3], n)})
    kw = dict(label="y", scores="s", subgroups=["a", "b"], pos_label="toxic", subgroup_threshold=1,
              missing_subgroup=policy, intersections=2)
    mem = fastbias.evaluate(df, **kw).table.set_index("subgroup")
    y = (df.y == "toxic").astype(int)
    ga = df.a.astype("float64").to_numpy()
    gb = (df.b >= 1).astype(float).to_numpy()
    both = np.where(np.isnan(ga), np.nan, ((ga >= 1) & (gb >= 1)).astype(float))
    refs = {"a": _reference(y, df.s, ga, np.ones(n), policy),
            "b": _reference(y, df.s, gb, np.ones(n), policy),
            "a & b": _reference(y, df.s, both, np.ones(n), policy)}
    for name, run in _paths(df, tmp_path, kw, sizes=((1, 1), (7, 7)), nparts=(3,)).items():
        t = run().table.set_index("subgroup")
        assert list(t.index) == ["a", "b", "a & b"], name
        for sg, ref in refs.items():
            for m in METRICS:
                assert t.loc[sg, m] == mem.loc[sg, m], (name, sg, m)  # unweighted: to the bit
                assert F(float(t.loc[sg, m])) == ref[m] or abs(
                    F(float(t.loc[sg, m])) - ref[m]) < F(2) ** -52, (name, sg, m)


def test_delong_background_weight_just_above_one(tmp_path):
    """In memory the exact DeLong se; out of core NaN (docs/intervals.md, 'Out of core')
    with one UndefinedMetricWarning."""
    rng = np.random.default_rng(5)
    rows = [(0, rng.random(), 1, 1e12) for _ in range(40)]
    rows += [(1, rng.random(), 1, 1.0) for _ in range(40)]
    rows += [(0, 0.3, 0, 0.5), (0, 0.7, 0, 0.5 + 2 ** -30)]
    rows += [(1, rng.random(), 0, 1.0) for _ in range(40)]
    df = pd.DataFrame(rows, columns=["y", "s", "g", "w"])
    P = [(F(s), F(w)) for y, s, g, w in rows if y == 1 and g == 1]
    N = [(F(s), F(w)) for y, s, g, w in rows if y == 0 and g == 0]
    theta = _auc(P, N)
    WP, WN = sum(w for _, w in P), sum(w for _, w in N)
    vp = [sum(b * _cmp(sp, sn) for sn, b in N) / WN for sp, _ in P]
    vn = [sum(a * _cmp(sp, sn) for sp, a in P) / WP for sn, _ in N]
    var = (sum(w * (v - theta) ** 2 for (_, w), v in zip(P, vp)) / (WP * (WP - 1))
           + sum(w * (v - theta) ** 2 for (_, w), v in zip(N, vn)) / (WN * (WN - 1)))
    kw = dict(label="y", scores="s", subgroups=["g"], sample_weight="w", ci="delong")
    mem = fastbias.evaluate(df, **kw).table
    assert math.isclose(mem.bnsp_auc_se.iloc[0], math.sqrt(float(var)), rel_tol=1e-12)
    for name, run in _paths(df, tmp_path, kw, sizes=((7, 7),), nparts=(3,)).items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = run().table
        assert np.isnan(t.bnsp_auc_se.iloc[0]) and np.isnan(t.negative_aeg_se.iloc[0]), name
        assert t.bnsp_auc.iloc[0] == mem.bnsp_auc.iloc[0], name
        und = [w for w in caught if issubclass(w.category, fastbias.UndefinedMetricWarning)]
        assert len(und) == 1 and "DeLong" in str(und[0].message), name


def test_final_metric_leaves_intersections_out_everywhere(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.integers(0, 8, n) / 7,
                       "a": rng.integers(0, 2, n), "b": rng.integers(0, 2, n),
                       "c": rng.integers(0, 2, n)})
    kw = dict(label="y", scores="s", subgroups=["a", "b", "c"], intersections=2)
    y = df.y.to_numpy()
    overall = _auc([(F(float(s)), F(1)) for s in df.s[y == 1]],
                   [(F(float(s)), F(1)) for s in df.s[y == 0]])
    parts = []
    for m in ["subgroup_auc", "bpsn_auc", "bnsp_auc"]:
        vals = [float(_reference(y, df.s, df[g].astype(float), np.ones(n), "background")[m])
                for g in "abc"]
        parts.append(np.mean(np.power(vals, -5.0)) ** (1 / -5.0))
    expected = 0.25 * float(overall) + 0.25 * sum(parts)
    for name, run in [("mem", lambda: fastbias.evaluate(df, **kw)),
                      *_paths(df, tmp_path, kw, sizes=((7, 7),), nparts=(3,)).items()]:
        assert math.isclose(float(run().final_metric().iloc[0]), expected, rel_tol=1e-12), name


def test_nan_score_named_with_row_everywhere(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.integers(0, 2, 30).astype(float), "s": rng.random(30),
                       "g": rng.integers(0, 2, 30).astype(float)})
    df.loc[17, "s"] = np.nan
    kw = dict(label="y", scores="s", subgroups=["g"])
    for name, run in _paths(df, tmp_path, kw, sizes=((7, 7),), nparts=(3,)).items():
        with pytest.raises(ValueError) as info:
            run()
        msg = str(info.value)
        assert "'s'" in msg and "NaN" in msg, name
        assert ("row 17" in msg) if not name.startswith("dask") else (
            "position 7" in msg and "partition 1" in msg), (name, msg)


def test_bootstrap_refused_out_of_core(tmp_path):
    df = pd.DataFrame({"y": [0, 1, 0, 1], "s": [.1, .2, .3, .4], "g": [1, 1, 0, 0]})
    kw = dict(label="y", scores="s", subgroups=["g"], ci="bootstrap")
    for name, run in _paths(df, tmp_path, kw, sizes=((7, 7),), nparts=(1,)).items():
        with pytest.raises(ValueError, match="bootstrap"):
            run()


def test_small_cell_tests_out_of_core_are_counted_hoeffding_bounds(tmp_path):
    rng = np.random.default_rng(7)
    n = 500
    s = np.where(rng.random(n) < 0.7, 0.5, rng.integers(0, 3, n) / 2)
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": s, "a": rng.choice([0.0, 1.0, np.nan], n),
                       "b": rng.integers(0, 2, n).astype(float),
                       "c": rng.choice([0.0, 1.0, np.nan], n, p=[.6, .3, .1])})
    kw = dict(label="y", scores="s", subgroups=["a", "b", "c"], intersections=2,
              significance="holm")
    mem = fastbias.evaluate(df, **kw)
    for name, run in _paths(df, tmp_path, kw, sizes=((7, 7),), nparts=(3,)).items():
        res = run()
        t, m = res.table, mem.table
        bounds = res.for_model("s").attrs["permutation_bounds"]
        differ = 0
        for metric in METRICS:
            a, b = t[f"{metric}_pvalue"].to_numpy(), m[f"{metric}_pvalue"].to_numpy()
            same = np.isclose(a, b, rtol=1e-9, equal_nan=True)
            differ += int((~same).sum())
            # Hoeffding's bound is never below the permutation p-value it bounds
            assert np.all(a[~same] >= b[~same] - 1e-12), (name, metric)
        assert bounds >= differ > 0, name
