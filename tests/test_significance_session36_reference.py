"""An independent review's tests (2026-11-27) of the significance tests against its own
references: DeLong's placement values by brute force, the exact permutation moments, exact
enumeration of every redrawn cell, Holm and BH written by hand.

Found by review (failed before its fix): the report said "permutation test in cells under 300
rows" of weighted data, whose cells of 30-299 rows keep DeLong's test. The other tests pin
properties that were checked and held."""
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
import fastbias.intervals.significance as S
from fastbias.intervals.significance import adjust_pvalues

M = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def _psi(xs, ys):
    return (xs[:, None] > ys[None, :]) + 0.5 * (xs[:, None] == ys[None, :])


def _psi_rows(s, w, xm, ym):
    xs, ys, wx, wy = s[xm], s[ym], w[xm], w[ym]
    p = _psi(xs, ys)
    big_x, big_y = wx.sum(), wy.sum()
    vx, vy = p @ wy / big_y, wx @ p / big_x
    theta = (wx * vx).sum() / big_x
    out = np.zeros(len(s))
    out[xm] = (vx - theta) / math.sqrt(big_x * (big_x - 1))
    out[ym] = (vy - theta) / math.sqrt(big_y * (big_y - 1))
    return theta, out


def _samples(y, g):
    return {"subgroup_auc": (g & y, g & ~y), "bpsn_auc": (~g & y, g & ~y),
            "bnsp_auc": (g & y, ~g & ~y), "negative_aeg": (~g & ~y, g & ~y),
            "positive_aeg": (~g & y, g & y)}


def delong_reference(y, s, g, w=None):
    """Brute-force DeLong (1988) two-sided p-values: AUC metric vs overall AUC (paired,
    covariance through the shared rows), AEG vs 0."""
    w = np.ones(len(s)) if w is None else np.asarray(w, float)
    _, psi_o = _psi_rows(s, w, y, ~y)
    th_o = _psi(s[y], s[~y]).astype(float)
    th_o = (w[y] @ th_o @ w[~y]) / (w[y].sum() * w[~y].sum())
    out = {}
    for m, (xm, ym) in _samples(y, g).items():
        th, ps = _psi_rows(s, w, xm, ym)
        stat, var = ((th - th_o, (w * (ps - psi_o) ** 2).sum()) if m.endswith("auc")
                     else (0.5 - th, (w * ps ** 2).sum()))
        out[m] = math.erfc(abs(stat) / math.sqrt(var) / math.sqrt(2))
    return out


def perm_setup(y, s, g):
    """metric -> (per-row values over the redrawn class, cell size, null, observed)."""
    neg, pos = ~y, y
    th_o = _psi(s[pos], s[neg]).mean()
    out = {}
    nneg, npos = int((g & neg).sum()), int((g & pos).sum())
    if nneg <= npos:
        vals, size = _psi(s[g & pos], s[neg]).mean(axis=0), nneg
    else:
        vals, size = _psi(s[pos], s[g & neg]).mean(axis=1), npos
    out["subgroup_auc"] = (vals, size, th_o, _psi(s[g & pos], s[g & neg]).mean())
    out["bpsn_auc"] = (_psi(s[~g & pos], s[neg]).mean(axis=0), nneg, th_o,
                       _psi(s[~g & pos], s[g & neg]).mean())
    out["bnsp_auc"] = (_psi(s[pos], s[~g & neg]).mean(axis=1), npos, th_o,
                       _psi(s[g & pos], s[~g & neg]).mean())
    for label, m in ((0, "negative_aeg"), (1, "positive_aeg")):
        cls = y if label else ~y
        cs = s[cls]
        n, size = len(cs), int((g & cls).sum())
        p = _psi(cs, cs)
        np.fill_diagonal(p, 0.0)
        vals = p.sum(axis=0) / (n - size) - (size - 1) / (2.0 * (n - size))
        out[m] = (vals, size, 0.5, _psi(s[~g & cls], s[g & cls]).mean())
    return out


def normal_moment_p(vals, size, null, obs):
    n = len(vals)
    mu, var = vals.mean(), vals.var() / size * (n - size) / (n - 1)
    d, sd = abs(obs - null), math.sqrt(var)
    return min(1.0, 0.5 * math.erfc((null + d - mu) / sd / math.sqrt(2))
               + 0.5 * math.erfc(-(null - d - mu) / sd / math.sqrt(2)))


def exact_perm_p(vals, size, null, obs):
    d = abs(obs - null)
    hits = tot = 0
    for c in itertools.combinations(range(len(vals)), size):
        tot += 1
        hits += abs(vals[list(c)].mean() - null) >= d - 1e-12
    return hits / tot


# ---------------------------------------------------------------- found by review

def test_report_does_not_claim_permutation_tests_for_weighted_mid_cells():
    """Weighted data, subgroup cells of 195/174 rows (30-299): fastbias tests them with
    DeLong's z-test (verified below against an independent DeLong reference;
    attrs['permutation_tests'] == 0), as docs/significance.md says ("Weighted rows keep
    DeLong's test here"). Yet to_text() and to_html() say "DeLong test, permutation test in
    cells under 300 rows": a statement the numbers did not support. Now it says that weighted
    cells of 30-299 rows keep DeLong's test."""
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.random(n) < 0.4
    g = rng.random(n) < 0.12
    h = rng.random(n) < 0.5
    s = y + rng.normal(0, 1, n) - 0.25 * (g & y)
    w = rng.integers(1, 4, n).astype(float)
    df = pd.DataFrame({"y": y.astype(int), "s": s, "g": g, "h": h, "w": w})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = fastbias.bias_report(df, label="y", scores="s", subgroups=["g", "h"],
                                   significance="holm", sample_weight="w")
    t = rep.result.for_model()
    assert 30 <= t.loc["g", "subgroup_negatives"] < 300
    assert 30 <= t.loc["g", "subgroup_positives"] < 300
    ref = delong_reference(y, s, g, w)
    for m in M:  # the p-values are DeLong's (not a permutation test's)
        assert t.loc["g", f"{m}_pvalue"] == pytest.approx(ref[m], rel=1e-9)
    assert t.attrs["permutation_tests"] == 0
    text = rep.to_text()
    html = rep.to_html()
    claim = "permutation test in cells under 300 rows"
    assert claim not in text, text
    assert claim not in html
    said = "permutation test in cells under 30 rows (weighted rows: DeLong's in larger cells)"
    assert said in text and said.replace("'", "&#x27;") in html, text


# ---------------------------------------------------------------- properties that hold

@pytest.mark.parametrize("seed", range(4))
def test_delong_pvalues_match_brute_force_with_ties_and_integer_weights(seed):
    rng = np.random.default_rng(seed)
    n = 1800
    y = rng.random(n) < 0.5
    s = np.round(y * 0.4 + rng.normal(0, 1, n), 0 if seed % 2 else 1)
    g = rng.random(n) < 0.45
    s[g & ~y] += 0.3 * (seed == 0)
    w = rng.integers(1, 4, n).astype(float) if seed >= 2 else None
    t = fastbias.bias_metrics(y, s, pd.DataFrame({"g": g}), significance="holm",
                              sample_weight=w)
    ref = delong_reference(y, s, g, w)
    for m in M:
        assert t.loc["g", f"{m}_pvalue"] == pytest.approx(ref[m], rel=1e-9), m


@pytest.mark.parametrize("seed", range(3))
def test_mid_cells_use_normal_tail_with_exact_permutation_moments(seed):
    rng = np.random.default_rng(seed)
    n = 1500
    y = rng.random(n) < 0.4
    s = np.round(y * 0.5 + rng.normal(0, 1, n), 1)
    g = np.zeros(n, bool)
    g[rng.choice(n, 150, replace=False)] = True
    s[g & ~y] += 0.2 * (seed % 2)
    t = fastbias.bias_metrics(y, s, pd.DataFrame({"g": g}), significance="bh")
    ref = perm_setup(y, s, g)
    for m in M:
        assert t.loc["g", f"{m}_pvalue"] == pytest.approx(normal_moment_p(*ref[m]),
                                                           rel=1e-9, abs=1e-15), m


@pytest.mark.parametrize("seed", range(3))
def test_drawn_pvalues_with_full_draws_match_exact_enumeration(seed, monkeypatch):
    monkeypatch.setattr(S, "PERMUTATION_HITS", 10 ** 9)  # all 10,000 draws
    rng = np.random.default_rng(200 + seed)
    n = 36
    y = np.zeros(n, bool)
    y[:16] = True
    rng.shuffle(y)
    s = rng.integers(0, 3, n).astype(float)  # three scores: heavy ties
    g = np.zeros(n, bool)
    g[rng.choice(n, 9, replace=False)] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, pd.DataFrame({"g": g}), significance="holm")
    ref = perm_setup(y, s, g)
    for m in M:
        exact = exact_perm_p(*ref[m])
        tol = 4.5 * math.sqrt(max(exact * (1 - exact), 1e-4) / 10000) + 2e-4
        assert abs(t.loc["g", f"{m}_pvalue"] - exact) <= tol, (m, exact)


def _holm(p):
    p = np.asarray(p, float)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    out = np.full(p.shape, np.nan)
    order = ok[np.argsort(p[ok], kind="stable")]
    run = 0.0
    for i, k in enumerate(order):
        run = max(run, min(1.0, (m - i) * p[k]))
        out[k] = run
    return out


def _bh(p):
    p = np.asarray(p, float)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    out = np.full(p.shape, np.nan)
    for k in ok:  # min over j with p_j >= p_k of m p_j / rank_j
        ranks = {j: 1 + int((p[ok] < p[j]).sum() + (p[ok] == p[j]).sum() - 1) for j in ok}
        out[k] = min(1.0, min(m * p[j] / ranks[j] for j in ok if p[j] >= p[k]))
    return out


@pytest.mark.parametrize("method,ref", [("holm", _holm), ("bh", _bh)])
def test_adjustments_match_hand_written_with_nans_and_ties(method, ref):
    rng = np.random.default_rng(5)
    for _ in range(30):
        p = rng.choice([0.001, 0.01, 0.02, 0.02, 0.04, 0.3, 0.9, np.nan], size=9)
        got = adjust_pvalues(p, method)
        np.testing.assert_allclose(got, ref(p), rtol=1e-12, equal_nan=True)
