"""Intervals and significance under ``missing_subgroup="exclude"``, intersections and weights:
an independent review's tests (2026-11-28, thirty-ninth session). Every expected number comes
from a reference written here (pair counts and DeLong placements in fractions, Holm by hand,
scipy's normal quantile, sklearn), never from fastbias on another path: DeLong points, standard
errors and bounds of subgroups and of pairs (a row of g with h missing is in neither g & h
nor its background), weighted p-values and Holm over the documented family, a subgroup of
every annotated row, an intersection whose positives weigh 0, ``nan_policy="omit"``,
``evaluate_csv``, a drawn permutation p-value of a 4-row cell against the exact one, and the
bootstrap under "exclude" rebuilt from the documented Poisson counts. The review found no
defect.
"""
from __future__ import annotations

import math
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

import fastbias

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ----------------------------------------------------------------------------- reference
def _frac(x):
    return F(float(x))


def u_stat(xs, xw, ys, yw):
    """theta = P(X>Y) + 1/2 P(X=Y), weighted, plus DeLong's placements, all exact.

    Returns (theta, var) as Fractions (var None where undefined: a cell weight <= 1),
    theta None where a cell weighs 0."""
    WX, WY = sum(xw, F(0)), sum(yw, F(0))
    if WX == 0 or WY == 0:
        return None, None
    def k(a, b):
        return F(1) if a > b else (F(1, 2) if a == b else F(0))
    V10 = [sum((w * k(x, y) for y, w in zip(ys, yw)), F(0)) / WY for x in xs]
    V01 = [sum((w * k(x, y) for x, w in zip(xs, xw)), F(0)) / WX for y in ys]
    theta = sum((w * v for w, v in zip(xw, V10)), F(0)) / WX
    if WX <= 1 or WY <= 1:
        return theta, None
    S10 = sum((w * (v - theta) ** 2 for w, v in zip(xw, V10)), F(0)) / (WX - 1)
    S01 = sum((w * (v - theta) ** 2 for w, v in zip(yw, V01)), F(0)) / (WY - 1)
    return theta, S10 / WX + S01 / WY


def psi(xs_idx, ys_idx, s, w):
    """Per-row normalised placements (V - theta)/sqrt(W(W-1)) as floats of exact values,
    returned as dict row -> (num Fraction, W) so the caller can combine exactly-ish."""
    xs = [s[i] for i in xs_idx]; xw = [w[i] for i in xs_idx]
    ys = [s[i] for i in ys_idx]; yw = [w[i] for i in ys_idx]
    WX, WY = sum(xw, F(0)), sum(yw, F(0))
    def k(a, b):
        return F(1) if a > b else (F(1, 2) if a == b else F(0))
    theta = sum((wx * wy * k(x, y) for x, wx in zip(xs, xw) for y, wy in zip(ys, yw)), F(0)) / (WX * WY)
    out = {}
    for i in xs_idx:
        v = sum((w[j] * k(s[i], s[j]) for j in ys_idx), F(0)) / WY
        out[i] = (float(v - theta) / math.sqrt(float(WX * (WX - 1))))
    for j in ys_idx:
        v = sum((w[i] * k(s[i], s[j]) for i in xs_idx), F(0)) / WX
        out[j] = (float(v - theta) / math.sqrt(float(WY * (WY - 1))))
    return theta, out


def cells(y, member, universe):
    """(subgroup pos, subgroup neg, background pos, background neg) row index lists."""
    sp = [i for i in range(len(y)) if universe[i] and member[i] and y[i] == 1]
    sn = [i for i in range(len(y)) if universe[i] and member[i] and y[i] == 0]
    bp = [i for i in range(len(y)) if universe[i] and not member[i] and y[i] == 1]
    bn = [i for i in range(len(y)) if universe[i] and not member[i] and y[i] == 0]
    return sp, sn, bp, bn


METRIC_CELLS = {  # metric -> (X cell, Y cell, is_aeg)
    "subgroup_auc": ("sp", "sn", False),
    "bpsn_auc": ("bp", "sn", False),
    "bnsp_auc": ("sp", "bn", False),
    "negative_aeg": ("bn", "sn", True),
    "positive_aeg": ("bp", "sp", True),
}


def ref_group(y, s, w, member, universe):
    """Per metric: (estimate, se) floats from the exact reference (NaN where undefined)."""
    sp, sn, bp, bn = cells(y, member, universe)
    c = {"sp": sp, "sn": sn, "bp": bp, "bn": bn}
    out = {}
    for m, (cx, cy, aeg) in METRIC_CELLS.items():
        th, var = u_stat([s[i] for i in c[cx]], [w[i] for i in c[cx]],
                         [s[i] for i in c[cy]], [w[i] for i in c[cy]])
        if th is None:
            out[m] = (math.nan, math.nan)
            continue
        est = (F(1, 2) - th) if aeg else th
        out[m] = (float(est), math.nan if var is None else math.sqrt(var))
    return out


def ref_sets(df, subgroups, inter, thr=0.5):
    """name -> (member bool list, universe bool list) under missing_subgroup='exclude'."""
    ann = {g: ~df[g].isna().to_numpy() for g in subgroups}
    mem = {g: (df[g].to_numpy() >= thr) & ann[g] for g in subgroups}
    out = {g: (list(mem[g]), list(ann[g])) for g in subgroups}
    if inter:
        from itertools import combinations
        for a, b in combinations(subgroups, 2):
            out[f"{a} & {b}"] = (list(mem[a] & mem[b]), list(ann[a] & ann[b]))
    return out


def holm(p):
    p = np.asarray(p, float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.empty(m)
    run = 0.0
    for r, i in enumerate(order):
        run = max(run, min(1.0, (m - r) * p[i]))
        adj[i] = run
    return adj


def make(n, seed, nan_frac=0.25, weights="int", ties=True):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(float)
    s = y * 0.7 + rng.normal(0, 1, n)
    if ties:
        s = np.round(s, 1)
    df = pd.DataFrame({"y": y, "s": s})
    for g, p in zip("abc", [0.5, 0.45, 0.6]):
        v = (rng.random(n) < p).astype(float)
        v[rng.random(n) < nan_frac] = np.nan
        df[g] = v
    if weights == "int":
        df["w"] = rng.integers(1, 4, n).astype(float)
    elif weights == "zero":
        df["w"] = rng.integers(0, 4, n).astype(float)
    elif weights == "frac":
        df["w"] = rng.integers(1, 16, n) / 8.0
    return df


def _lists(df, wcol):
    y = [int(v) for v in df["y"]]
    s = [_frac(v) for v in df["s"]]
    w = [F(1)] * len(df) if wcol is None else [_frac(v) for v in df[wcol]]
    return y, s, w


def _ev(df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b", "c"],
                                 missing_subgroup="exclude", **kw)


def _close(a, b, rel=1e-9, abs_=1e-12):
    if math.isnan(b):
        return math.isnan(a)
    return abs(a - b) <= max(abs_, rel * abs(b))


def check_delong_table(tab, df, wcol, inter, conf=0.95):
    y, s, w = _lists(df, wcol)
    z = norm.ppf(1 - (1 - conf) / 2)
    sets = ref_sets(df, ["a", "b", "c"], inter)
    bad = []
    for name, (member, universe) in sets.items():
        if name not in tab.index:
            bad.append((name, "missing row"))
            continue
        ref = ref_group(y, s, w, member, universe)
        for m in METRICS:
            est, se = ref[m]
            lo_lim, hi_lim = (-0.5, 0.5) if "aeg" in m else (0.0, 1.0)
            got = tab.loc[name]
            exp_lo = math.nan if math.isnan(se) else max(lo_lim, est - z * se)
            exp_hi = math.nan if math.isnan(se) else min(hi_lim, est + z * se)
            for col, e in [(m, est), (m + "_se", se), (m + "_low", exp_lo), (m + "_high", exp_hi)]:
                if not _close(float(got[col]), e):
                    bad.append((name, col, float(got[col]), e))
    return bad


# ----------------------------------------------------------------------------- DeLong intervals
@pytest.mark.parametrize("weights,seed", [(None, 1), ("int", 2), ("zero", 3), ("frac", 4)])
def test_delong_exclude_intersections_match_exact_reference(weights, seed):
    df = make(110, seed, weights=weights or "none")
    wcol = None if weights is None else "w"
    res = _ev(df, intersections=2, ci="delong", sample_weight=wcol)
    tab = res.for_model()
    bad = check_delong_table(tab, df, wcol, inter=True)
    assert not bad, bad[:8]


# ----------------------------------------------------------------------------- significance
def _np_psi(s, w, xi, yi):
    """theta and per-row psi (dict row -> value) of a weighted U-statistic, numpy brute force."""
    sx, sy, wx, wy = s[xi], s[yi], w[xi], w[yi]
    K = (sx[:, None] > sy[None, :]) + 0.5 * (sx[:, None] == sy[None, :])
    WX, WY = wx.sum(), wy.sum()
    V10 = K @ wy / WY
    V01 = wx @ K / WX
    th = float(wx @ V10 / WX)
    out = np.zeros(len(s))
    out[xi] += (V10 - th) / math.sqrt(WX * (WX - 1))
    out[yi] += (V01 - th) / math.sqrt(WY * (WY - 1))
    return th, out


def ref_delong_tests(df, wcol, member, universe):
    """Raw DeLong z-test p-values per metric for one subgroup (docs/significance.md)."""
    y = df["y"].to_numpy().astype(int)
    s = df["s"].to_numpy(float)
    w = np.ones(len(df)) if wcol is None else df[wcol].to_numpy(float)
    member, universe = np.asarray(member), np.asarray(universe)
    idx = {
        "sp": np.flatnonzero(universe & member & (y == 1)),
        "sn": np.flatnonzero(universe & member & (y == 0)),
        "bp": np.flatnonzero(universe & ~member & (y == 1)),
        "bn": np.flatnonzero(universe & ~member & (y == 0)),
    }
    o_th, o_psi = _np_psi(s, w, np.flatnonzero(universe & (y == 1)),
                          np.flatnonzero(universe & (y == 0)))
    out = {}
    for m, (cx, cy, aeg) in METRIC_CELLS.items():
        th, p = _np_psi(s, w, idx[cx], idx[cy])
        if aeg:
            stat, var = 0.5 - th, float((w * p ** 2).sum())
        else:
            stat, var = th - o_th, float((w * (p - o_psi) ** 2).sum())
        out[m] = (stat, float(2 * norm.sf(abs(stat) / math.sqrt(var))), {k: len(v) for k, v in idx.items()})
    return out


@pytest.mark.parametrize("weights,seed", [("int", 11), ("frac", 12)])
def test_holm_delong_tests_exclude_weighted(weights, seed):
    """Weighted rows, every cell >= 30 rows: DeLong's test against the universe's AUC;
    Holm by hand over every defined test of the model (intersections included)."""
    df = make(700, seed, weights=weights)
    res = _ev(df, intersections=2, sample_weight="w", significance="holm")
    tab = res.for_model()
    sets = ref_sets(df, ["a", "b", "c"], True)
    checked = 0
    bad = []
    for name, (member, universe) in sets.items():
        ref = ref_delong_tests(df, "w", member, universe)
        for m in METRICS:
            stat, p, sizes = ref[m]
            cx, cy, _ = METRIC_CELLS[m]
            if min(sizes[cx], sizes[cy]) < 30:
                continue
            checked += 1
            got = float(tab.loc[name, m + "_pvalue"])
            if not _close(got, p, rel=1e-7, abs_=1e-12):
                bad.append((name, m, got, p))
    assert checked >= 20 and not bad, (checked, bad)
    raw = tab[[m + "_pvalue" for m in METRICS]].to_numpy(float).ravel()
    adj = tab[[m + "_pvalue_adjusted" for m in METRICS]].to_numpy(float).ravel()
    ok = ~np.isnan(raw)
    np.testing.assert_allclose(adj[ok], holm(raw[ok]), rtol=1e-12)
    assert np.isnan(adj[~ok]).all()
    sig = tab[[m + "_significant" for m in METRICS]].to_numpy(bool).ravel()
    np.testing.assert_array_equal(sig, ok & (np.nan_to_num(adj, nan=2) <= 0.05))


# ----------------------------------------------------------------------------- edge inputs
def test_subgroup_equal_to_its_universe():
    """Every annotated row of 'a' is a member: background empty, the background metrics NaN,
    subgroup AUC = AUC of the annotated rows, its interval DeLong's of those rows."""
    df = make(90, 21, weights="int")
    df.loc[df["a"] == 0, "a"] = 1.0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b"],
                                missing_subgroup="exclude", ci="delong", sample_weight="w",
                                significance="holm")
    tab = res.for_model()
    y, s, w = _lists(df, "w")
    member, universe = ref_sets(df, ["a"], False)["a"]
    ref = ref_group(y, s, w, member, universe)
    for m in METRICS:
        est, se = ref[m]
        assert _close(float(tab.loc["a", m]), est), (m, tab.loc["a", m], est)
        assert _close(float(tab.loc["a", m + "_se"]), se), (m, tab.loc["a", m + "_se"], se)
    for m in ["bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]:
        assert math.isnan(float(tab.loc["a", m + "_pvalue"]))
        assert not bool(tab.loc["a", m + "_significant"])
    p = float(tab.loc["a", "subgroup_auc_pvalue"])
    # subgroup AUC equals the universe AUC exactly: no evidence of a gap
    assert math.isnan(p) or p == 1.0, p
    undefined = [r for r in rec if "Undefined" in type(r.message).__name__]
    assert len(undefined) >= 1


def test_intersection_one_class_all_zero_weight_kept_nan():
    """docs/intersections.md: an intersection whose rows of one class all weigh 0 is kept,
    its metrics reading that cell NaN, one UndefinedMetricWarning; left out of Holm's family."""
    df = make(160, 22, weights="int")
    ab = (df["a"] == 1) & (df["b"] == 1)
    df.loc[ab & (df["y"] == 1), "w"] = 0.0
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b", "c"],
                                missing_subgroup="exclude", ci="delong", sample_weight="w",
                                intersections=2, significance="holm")
    tab = res.for_model()
    assert "a & b" in tab.index
    for m in ["subgroup_auc", "bnsp_auc", "positive_aeg"]:
        assert math.isnan(float(tab.loc["a & b", m])), m
        assert math.isnan(float(tab.loc["a & b", m + "_low"])), m
        assert not bool(tab.loc["a & b", m + "_significant"])
    bad = check_delong_table(tab, df, "w", inter=True)
    assert not bad, bad[:8]
    names = [str(r.message) for r in rec if "Undefined" in type(r.message).__name__]
    assert names and any("a & b" in t for t in names), names
    raw = tab[[m + "_pvalue" for m in METRICS]].to_numpy(float).ravel()
    adj = tab[[m + "_pvalue_adjusted" for m in METRICS]].to_numpy(float).ravel()
    ok = ~np.isnan(raw)
    np.testing.assert_allclose(adj[ok], holm(raw[ok]), rtol=1e-12)


def test_float32_scores_exclude_delong():
    df = make(100, 23, weights="int", ties=False)
    df["s"] = df["s"].astype(np.float32)
    df.loc[::7, "s"] = df["s"].iloc[3]  # ties in float32
    res = _ev(df, intersections=2, ci="delong", sample_weight="w")
    bad = check_delong_table(res.for_model(), df, "w", inter=True)
    assert not bad, bad[:8]


def test_nan_policy_omit_two_models_exclude_delong():
    """Model 't' has NaN scores: under nan_policy='omit' it is evaluated on its own rows."""
    df = make(120, 24, weights="int")
    df["t"] = df["s"] * -0.5 + np.round(np.random.default_rng(5).normal(0, 1, len(df)), 1)
    df.loc[df.index[::5], "t"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["s", "t"], subgroups=["a", "b", "c"],
                                missing_subgroup="exclude", ci="delong", sample_weight="w",
                                intersections=2, nan_policy="omit")
    bad = check_delong_table(res.for_model("s"), df, "w", inter=True)
    assert not bad, bad[:8]
    kept = df[df["t"].notna()].reset_index(drop=True).copy()
    kept["s"] = kept["t"]
    bad = check_delong_table(res.for_model("t"), kept, "w", inter=True)
    assert not bad, bad[:8]
    # overall AUC of model t: all its rows (sklearn reference)
    exp = roc_auc_score(kept["y"], kept["s"], sample_weight=kept["w"])
    assert abs(float(res.overall_auc["t"]) - exp) < 1e-12


def test_evaluate_csv_exclude_delong_intersections_weighted(tmp_path):
    df = make(120, 25, weights="frac")
    p = tmp_path / "d.csv"
    df.to_csv(p, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate_csv(p, label="y", scores="s", subgroups=["a", "b", "c"],
                                    missing_subgroup="exclude", ci="delong", sample_weight="w",
                                    intersections=2)
    bad = check_delong_table(res.for_model(), df, "w", inter=True)
    assert not bad, bad[:8]
    # overall AUC interval: of all rows
    y, s, w = _lists(df, "w")
    th, var = u_stat([s[i] for i in range(len(y)) if y[i] == 1], [w[i] for i in range(len(y)) if y[i] == 1],
                     [s[i] for i in range(len(y)) if y[i] == 0], [w[i] for i in range(len(y)) if y[i] == 0])
    attrs = res.for_model().attrs
    assert _close(float(attrs["overall_auc_se"]), math.sqrt(var))


# ----------------------------------------------------------------------------- tiny cells
def _exact_perm_p_negative_aeg(s_class, sub_idx, k):
    """Exact permutation p-value of the negative AEG: the subgroup's k negatives redrawn
    from the class (of its universe), |AEG| at least as large as observed."""
    from itertools import combinations
    s_class = [F(float(v)) for v in s_class]
    n = len(s_class)
    def aeg(sub):
        subset = set(sub)
        bg = [s_class[i] for i in range(n) if i not in subset]
        sn = [s_class[i] for i in sub]
        th = sum((F(1) if b > a else F(1, 2) if b == a else F(0)) for b in bg for a in sn) / (len(bg) * len(sn))
        return abs(F(1, 2) - th)
    obs = aeg(sub_idx)
    hits = sum(1 for c in combinations(range(n), k) if aeg(c) >= obs)
    return hits / math.comb(n, k), float(obs)


def test_tiny_cell_permutation_draws_from_the_universe():
    """4 subgroup negatives among 16 annotated negatives; 60 unannotated negatives score high.
    The drawn p-value must estimate the exact permutation p over the annotated negatives."""
    rng = np.random.default_rng(31)
    n_pos, n_neg_ann, n_neg_un = 120, 16, 60
    s_pos = np.round(rng.normal(1, 1, n_pos), 2)
    s_neg = np.round(rng.normal(0, 1, n_neg_ann), 2)
    s_un = np.round(rng.normal(2.5, 0.5, n_neg_un), 2)
    sub_neg = np.argsort(s_neg)[[0, 1, 3, 6]]  # low-scored subgroup negatives
    a_neg = np.zeros(n_neg_ann); a_neg[sub_neg] = 1
    a_pos = (rng.random(n_pos) < 0.5).astype(float)
    df = pd.DataFrame({
        "y": np.r_[np.ones(n_pos), np.zeros(n_neg_ann), np.zeros(n_neg_un)],
        "s": np.r_[s_pos, s_neg, s_un],
        "a": np.r_[a_pos, a_neg, np.full(n_neg_un, np.nan)],
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["a"],
                                missing_subgroup="exclude", significance="holm")
    tab = res.for_model()
    exact, obs = _exact_perm_p_negative_aeg(s_neg, list(sub_neg), 4)
    assert abs(abs(float(tab.loc["a", "negative_aeg"])) - obs) < 1e-12
    got = float(tab.loc["a", "negative_aeg_pvalue"])
    assert exact < 0.2, exact  # the probe is informative
    assert 0.5 * exact <= got <= 2.0 * exact + 2e-3, (got, exact)


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_exclude_resamples_each_universe():
    """docs/intervals.md: under exclude each universe is resampled on its own, replicate b's
    counts replicate_counts(child b, n_universe) indexed by position within the universe.
    Each replicate's metrics recomputed here by brute force; percentile interval and SD."""
    from fastbias.intervals.bootstrap import replicate_counts
    df = make(70, 41, weights="none")
    n_boot, seed = 40, 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b"],
                                missing_subgroup="exclude", ci="bootstrap", n_boot=n_boot,
                                random_state=seed, intersections=2)
    tab = res.for_model()
    children = np.random.SeedSequence(seed).spawn(n_boot)
    y = df["y"].to_numpy().astype(int); s = df["s"].to_numpy(float)
    bad = []
    for name, (member, universe) in ref_sets(df, ["a", "b"], True).items():
        member, universe = np.asarray(member), np.asarray(universe)
        rows = np.flatnonzero(universe)
        reps = {m: [] for m in METRICS}
        for b in range(n_boot):
            w = np.zeros(len(df))
            w[rows] = replicate_counts(children[b], len(rows))
            idx = {"sp": universe & member & (y == 1), "sn": universe & member & (y == 0),
                   "bp": universe & ~member & (y == 1), "bn": universe & ~member & (y == 0)}
            for m, (cx, cy, aeg) in METRIC_CELLS.items():
                xi, yi = np.flatnonzero(idx[cx] & (w > 0)), np.flatnonzero(idx[cy] & (w > 0))
                if len(xi) == 0 or len(yi) == 0:
                    continue
                K = (s[xi][:, None] > s[yi][None, :]) + 0.5 * (s[xi][:, None] == s[yi][None, :])
                th = w[xi] @ K @ w[yi] / (w[xi].sum() * w[yi].sum())
                reps[m].append(0.5 - th if aeg else th)
        for m in METRICS:
            r = np.asarray(reps[m])
            lo, hi = np.quantile(r, [0.025, 0.975])
            for col, e in [(m + "_low", lo), (m + "_high", hi), (m + "_se", r.std(ddof=1))]:
                if not _close(float(tab.loc[name, col]), float(e), rel=1e-9, abs_=1e-12):
                    bad.append((name, col, float(tab.loc[name, col]), float(e)))
    assert not bad, bad[:8]
