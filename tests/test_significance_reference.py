"""Significance p-values and bootstrap intervals against independent references (an
independent review's tests: numpy/scipy from the definitions; fastbias is never used to make an
expected value)."""
import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fastbias
from fastbias.intervals.significance import adjust_pvalues
from fastbias.validate.errors import UndefinedMetricWarning

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ---------------------------------------------------------------- references
def auc(x, y, wx=None, wy=None):
    """P(X > Y) + 1/2 P(X = Y), weighted."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    wx = np.ones(len(x)) if wx is None else np.asarray(wx, float)
    wy = np.ones(len(y)) if wy is None else np.asarray(wy, float)
    gt = (x[:, None] > y[None, :]) + 0.5 * (x[:, None] == y[None, :])
    return float(wx @ gt @ wy / (wx.sum() * wy.sum()))


def ref_metrics(s, y, g, w=None):
    w = np.ones(len(s)) if w is None else np.asarray(w, float)
    P, N = y == 1, y == 0
    a = lambda mx, my: auc(s[mx], s[my], w[mx], w[my])
    return {"subgroup_auc": a(P & g, N & g), "bpsn_auc": a(P & ~g, N & g),
            "bnsp_auc": a(P & g, N & ~g), "negative_aeg": 0.5 - a(N & ~g, N & g),
            "positive_aeg": 0.5 - a(P & ~g, P & g)}, a(P, N)


def exact_permutation_p(s, y, g, w=None):
    """Enumerate every redraw of the subgroup's cell from its class (the other cell fixed);
    p = share of redraws at least as far from the null as observed (AUC: overall AUC;
    AEG: 0). Subgroup AUC redraws its smaller cell (negatives on a tie)."""
    obs, overall = ref_metrics(s, y, g, w)
    dist = lambda m, v: abs(v) if m.endswith("aeg") else abs(v - overall)
    out = {}
    n_neg_g, n_pos_g = int((g & (y == 0)).sum()), int((g & (y == 1)).sum())
    for label, mets in ((0, ["bpsn_auc", "negative_aeg"]), (1, ["bnsp_auc", "positive_aeg"])):
        if (label == 0) == (n_neg_g <= n_pos_g):
            mets = mets + ["subgroup_auc"]
        cls = np.flatnonzero(y == label)
        size = int((g & (y == label)).sum())
        hits = {m: 0 for m in mets}
        total = 0
        for comb in itertools.combinations(cls, size):
            g2 = g.copy()
            g2[cls] = False
            g2[list(comb)] = True
            v, _ = ref_metrics(s, y, g2, w)
            total += 1
            for m in mets:
                d0 = dist(m, obs[m])
                if dist(m, v[m]) >= d0 - 1e-12 * max(1.0, d0):
                    hits[m] += 1
        for m in mets:
            out[m] = hits[m] / total
    return out, obs, overall


def mc_consistent(p_fb, p_exact, max_draws=10_000, hits=20, tail=1e-5):
    """Is a sequential (Besag-Clifford) Monte Carlo p-value plausible under the exact one?"""
    draws = hits / p_fb
    if abs(draws - round(draws)) < 1e-6 and round(draws) <= max_draws:  # stopped at `hits`
        failures = round(draws) - hits
        lo = stats.nbinom.cdf(failures, hits, p_exact)
        hi = stats.nbinom.sf(failures - 1, hits, p_exact)
        return min(lo, hi) > tail
    h = round(p_fb * (max_draws + 1) - 1)
    return min(stats.binom.cdf(h, max_draws, p_exact), stats.binom.sf(h - 1, max_draws, p_exact)) > tail


def tiny_data(seed, n_neg=11, n_pos=10, g_neg=4, g_pos=3, ties=True, shift=0.0):
    s, y, g = _scored(seed, n_neg, n_pos, g_neg, g_pos, shift)
    return (np.round(s * 2) / 2 if ties else s), y, g


def _scored(seed, n_neg, n_pos, g_neg, g_pos, shift):
    """Normal scores one higher for the positives, ``shift`` higher in the subgroup (its
    ``g_neg`` negatives and ``g_pos`` positives drawn at random)."""
    rng = np.random.default_rng(seed)
    y = np.r_[np.zeros(n_neg, int), np.ones(n_pos, int)]
    s = rng.normal(size=len(y)) + y
    g = np.zeros(len(y), bool)
    g[rng.choice(n_neg, g_neg, replace=False)] = True
    g[n_neg + rng.choice(n_pos, g_pos, replace=False)] = True
    return s + shift * g, y, g


def pvalues(df):
    return {m: float(df[f"{m}_pvalue"].iloc[0]) for m in METRICS}


def _gt(a, b):
    """(len(a), len(b)) matrix of [a > b] + 1/2 [a == b]."""
    return (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])


def moment_pvalues(s, y, g):
    """Normal tail with the exact permutation mean/variance of each redrawn cell's metric
    (unweighted), as docs/significance.md defines it (distance from overall AUC / AEG 0)."""
    obs, overall = ref_metrics(s, y, g)
    P, N = y == 1, y == 0
    out, mom = {}, {}
    n_neg_g, n_pos_g = (g & N).sum(), (g & P).sum()
    for label in (0, 1):
        cls = s[y == label]
        n = len(cls)
        size = int((g & (y == label)).sum())
        if label == 0:
            vals = {"subgroup_auc": _gt(s[P & g], cls).mean(axis=0),
                    "bpsn_auc": _gt(s[P & ~g], cls).mean(axis=0)}
        else:
            vals = {"subgroup_auc": _gt(cls, s[N & g]).mean(axis=1),
                    "bnsp_auc": _gt(cls, s[N & ~g]).mean(axis=1)}
        above = _gt(cls, cls).sum(axis=0) - 0.5  # own class above each row, itself left out
        aeg = "negative_aeg" if label == 0 else "positive_aeg"
        vals[aeg] = (above - (size - 1) / 2) / (n - size)  # mean over cell = P(bg > sg)
        if (label == 0) != (n_neg_g <= n_pos_g):
            del vals["subgroup_auc"]
        for m, v in vals.items():
            mu = v.mean()
            var = v.var() / size * (n - size) / (n - 1)
            stat, null = (0.5 - obs[m], 0.5) if m.endswith("aeg") else (obs[m], overall)
            d = abs(stat - null)
            sd = math.sqrt(var)
            out[m] = stats.norm.sf((null + d - mu) / sd) + stats.norm.cdf((null - d - mu) / sd)
            mom[m] = (mu, var)
    return out, mom


def delong_pvalues(s, y, g, w=None):
    """Paired DeLong (placements) as documented: var(M - O) = sum_r w_r (psi_M - psi_O)^2,
    psi = (V(r) - theta) / sqrt(W (W - 1)) on a row of a sample of weight W."""
    w = np.ones(len(s)) if w is None else np.asarray(w, float)
    P, N = y == 1, y == 0

    def psi(mx, my):
        gt = _gt(s[mx], s[my])
        theta = w[mx] @ gt @ w[my] / (w[mx].sum() * w[my].sum())
        out = np.zeros(len(s))
        Wx, Wy = w[mx].sum(), w[my].sum()
        out[mx] = (gt @ w[my] / Wy - theta) / math.sqrt(Wx * (Wx - 1))
        out[my] = (w[mx] @ gt / Wx - theta) / math.sqrt(Wy * (Wy - 1))
        return theta, out

    th_o, ps_o = psi(P, N)
    res = {}
    for m, (mx, my) in {"subgroup_auc": (P & g, N & g), "bpsn_auc": (P & ~g, N & g),
                        "bnsp_auc": (P & g, N & ~g), "negative_aeg": (N & ~g, N & g),
                        "positive_aeg": (P & ~g, P & g)}.items():
        th, ps = psi(mx, my)
        if m.endswith("aeg"):
            est, var = 0.5 - th, np.sum(w * ps ** 2)
        else:
            est, var = th - th_o, np.sum(w * (ps - ps_o) ** 2)
        res[m] = 2 * stats.norm.sf(abs(est) / math.sqrt(var))
    return res


def mid_data(seed, n_neg, n_pos, g_neg, g_pos, shift=0.0, dec=1):
    s, y, g = _scored(seed, n_neg, n_pos, g_neg, g_pos, shift)
    return np.round(s, dec), y, g


def ref_holm(p):
    p = np.asarray(p, float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    m = len(idx)
    order = idx[np.argsort(p[idx], kind="mergesort")]
    running = 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (m - k) * p[i]))
        out[i] = running
    # ties: tied raw p-values must get the same adjusted value (the largest of the tie's)
    for v in np.unique(p[idx]):
        tie = idx[p[idx] == v]
        out[tie] = out[tie].max()
    return out


def ref_bh(p):
    p = np.asarray(p, float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    m = len(idx)
    for i in idx:  # adjusted p_i = min over j with p_j >= p_i of m p_j / rank_j (rank: # <= p_j)
        out[i] = min(1.0, min(m * p[j] / np.sum(p[idx] <= p[j]) for j in idx if p[j] >= p[i]))
    return out


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("seed,shift,weighted", [(1, 0.0, False), (2, 1.5, False),
                                                 (3, -1.5, False), (4, 0.0, True),
                                                 (5, 1.5, True)])
def test_drawn_permutation_pvalues_match_exact_enumeration(seed, shift, weighted):
    """Cells of 3-4 rows (< 30): the Besag-Clifford p-value (20 hits, at most 10,000 draws
    for 5 tests at 0.05) is consistent with the exact permutation p-value (every redraw
    enumerated), ties in the scores, weights redrawn with their rows."""
    s, y, g = tiny_data(seed, shift=shift)
    w = np.random.default_rng(seed).integers(1, 4, len(y)).astype(float) if weighted else None
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm", sample_weight=w)
    exact, obs, _ = exact_permutation_p(s, y, g, w)
    pf = pvalues(r)
    assert r.attrs["permutation_tests"] == 5
    for m in METRICS:
        assert float(r[m].iloc[0]) == pytest.approx(obs[m], abs=1e-12)
        assert mc_consistent(pf[m], exact[m]), (m, pf[m], exact[m])


@pytest.mark.parametrize("seed,shift", [(1, 0.0), (2, 0.4), (3, -0.3)])
def test_exact_moment_pvalues(seed, shift):
    """Smaller cell 30-299, unweighted: normal tail with exact permutation moments."""
    s, y, g = mid_data(seed, 300, 320, 40, 60, shift)
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm")
    ref, _ = moment_pvalues(s, y, g)
    pf = pvalues(r)
    for m in METRICS:
        assert pf[m] == pytest.approx(ref[m], rel=1e-9, abs=1e-14), m


@pytest.mark.parametrize("seed,shift,weighted", [(1, 0.0, False), (2, 0.2, False),
                                                 (3, 0.2, True), (4, 0.0, True)])
def test_delong_pvalues_large_cells(seed, shift, weighted):
    s, y, g = mid_data(seed, 900, 900, 350, 320, shift)
    w = np.random.default_rng(seed).integers(1, 5, len(y)).astype(float) if weighted else None
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm", sample_weight=w)
    ref = delong_pvalues(s, y, g, w)
    pf = pvalues(r)
    for m in METRICS:
        assert pf[m] == pytest.approx(ref[m], rel=1e-9), m


@pytest.mark.parametrize("seed,shift", [(1, 0.0), (2, 1.5), (3, -2.0), (5, 3.0)])
def test_out_of_core_hoeffding_bound_is_valid_and_as_documented(seed, shift, tmp_path):
    """evaluate_csv, cells < 30 unweighted: p = 2 exp(-2 size (d - |mean - null|)^2 / range^2),
    never below the exact permutation p-value."""
    s, y, g = tiny_data(seed, n_neg=14, n_pos=13, g_neg=5, g_pos=4, shift=shift)
    exact, obs, overall = exact_permutation_p(s, y, g)
    path = tmp_path / "x.csv"
    pd.DataFrame({"label": y, "score": s, "g": g.astype(int)}).to_csv(path, index=False)
    t = fastbias.evaluate_csv(str(path), label="label", scores="score", subgroups=["g"],
                              significance="holm").for_model()
    assert t.attrs["permutation_bounds"] == 5
    _, mom = moment_pvalues(s, y, g)
    for m in METRICS:
        p = float(t[f"{m}_pvalue"].iloc[0])
        assert p >= exact[m] - 1e-12, (m, p, exact[m])
        label = 0 if m in ("bpsn_auc", "negative_aeg") else 1
        if m == "subgroup_auc":
            label = 0 if (g & (y == 0)).sum() <= (g & (y == 1)).sum() else 1
        size = (g & (y == label)).sum()
        n = (y == label).sum()
        if m.endswith("aeg"):
            d, off, rng_ = abs(obs[m]), 0.0, (n - 1) / (n - size)
        else:
            d, off, rng_ = abs(obs[m] - overall), abs(mom[m][0] - overall), 1.0
        ref = 1.0 if d <= off else min(1.0, 2 * math.exp(-2 * size * (d - off) ** 2 / rng_ ** 2))
        assert p == pytest.approx(ref, rel=1e-9, abs=1e-15), m


@pytest.mark.jit_heavy
def test_small_fixed_cell_with_large_redrawn_cell_is_not_drawn():
    """Doc: 'Smaller cell under 30 rows: the p-value is drawn'. A BPSN whose background
    positives are 10 rows but whose subgroup negatives are 1,100 is not drawn (redrawn cell
    > 1,000): unweighted it gets the exact-moment normal tail (close to the permutation
    p-value, checked here by our own Monte Carlo); weighted it had silently got DeLong's
    z-test on a 10-row cell (which the doc says is miscalibrated there): now it is not
    tested, counted and said, as out of core."""
    s, y, g = mid_data(7, 1200, 300, 1100, 290, 0.0, dec=2)
    s[(y == 1) & ~g] -= 0.8
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm")
    assert int(r["background_positives"].iloc[0]) == 10
    ref, _ = moment_pvalues(s, y, g)
    assert pvalues(r)["bpsn_auc"] == pytest.approx(ref["bpsn_auc"], rel=1e-9)
    obs, overall = ref_metrics(s, y, g)
    neg = np.flatnonzero(y == 0)
    vals = _gt(s[(y == 1) & ~g], s[neg]).mean(axis=0)
    rng = np.random.default_rng(1)
    T = np.array([vals[rng.choice(len(neg), 1100, replace=False)].mean() for _ in range(4000)])
    mc = np.mean(np.abs(T - overall) >= abs(obs["bpsn_auc"] - overall) - 1e-12)
    assert abs(pvalues(r)["bpsn_auc"] - mc) < 4 * math.sqrt(mc * (1 - mc) / 4000) + 1e-3
    w = np.random.default_rng(0).integers(1, 3, len(y)).astype(float)
    with pytest.warns(UndefinedMetricWarning, match="in a weighted cell of fewer than 30 rows"):
        rw = fastbias.bias_metrics(y, s, {"g": g}, significance="holm", sample_weight=w)
    # weighted: BPSN (10 background positives beside 1,100 subgroup negatives) not tested;
    # the positive AEG (the same 10 beside 290 subgroup positives, redrawn) is drawn
    assert np.isnan(pvalues(rw)["bpsn_auc"]) and np.isfinite(pvalues(rw)["positive_aeg"])
    assert rw.attrs["permutation_untested"] == 1
    # the others keep DeLong's p-value (cells of 300 rows or more)
    assert pvalues(rw)["subgroup_auc"] == pytest.approx(
        delong_pvalues(s, y, g, w)["subgroup_auc"], rel=1e-9)


@pytest.mark.parametrize("method,ref", [("holm", ref_holm), ("bh", ref_bh)])
def test_adjust_pvalues_with_nans_and_ties(method, ref):
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.choice([0.001, 0.01, 0.02, 0.03, 0.04, 0.2, 0.5, 1.0, np.nan], size=(7, 5))
        got = adjust_pvalues(p, method)
        exp = ref(p.ravel()).reshape(p.shape)
        np.testing.assert_allclose(got, exp, rtol=1e-12, atol=0)
        assert np.array_equal(np.isnan(got), np.isnan(p))
    assert np.all(np.isnan(adjust_pvalues([np.nan, np.nan], method)))


@pytest.mark.parametrize("method,ref", [("holm", ref_holm), ("bh", ref_bh)])
def test_table_family_is_all_subgroups_by_metrics(method, ref):
    """The family is every defined test of one model: subgroups (and intersections) x metrics;
    undefined metrics are left out; significant iff adjusted <= 1 - confidence."""
    rng = np.random.default_rng(3)
    n = 500
    y = rng.integers(0, 2, n)
    a, b = rng.random(n) < 0.3, rng.random(n) < 0.4
    c = np.zeros(n, bool)
    c[np.flatnonzero(y == 1)[:6]] = True  # only positives: subgroup AUC/BPSN/neg AEG undefined
    s = np.round(rng.normal(size=n) + y + 0.5 * a, 1)
    r = fastbias.bias_metrics(y, s, {"a": a, "b": b, "c": c}, significance=method,
                              intersections=2, confidence=0.9)
    raw = r[[f"{m}_pvalue" for m in METRICS]].to_numpy(float)
    adj = r[[f"{m}_pvalue_adjusted" for m in METRICS]].to_numpy(float)
    np.testing.assert_allclose(adj, ref(raw.ravel()).reshape(raw.shape), rtol=1e-12)
    assert r.attrs["n_tests"] == np.isfinite(raw).sum()
    sig = r[[f"{m}_significant" for m in METRICS]].to_numpy(bool)
    assert np.array_equal(sig, np.nan_to_num(adj, nan=1.0) <= 0.1)
    assert np.isnan(r.loc["c", "subgroup_auc_pvalue"])


# ---------------------------------------------------------------- bootstrap
def boot_reference(s, y, g, w, counts_list, confidence=0.95):
    """Percentile interval of our own metric computation on the given Poisson counts."""
    w = np.ones(len(s)) if w is None else w
    reps = []
    for k in counts_list:
        ww = k * w
        P, N = y == 1, y == 0
        out = []
        for mx, my, aeg in ((P & g, N & g, False), (P & ~g, N & g, False), (P & g, N & ~g, False),
                            (N & ~g, N & g, True), (P & ~g, P & g, True)):
            wx, wy = ww[mx], ww[my]
            if wx.sum() <= 0 or wy.sum() <= 0:
                out.append(np.nan)
                continue
            th = wx @ _gt(s[mx], s[my]) @ wy / (wx.sum() * wy.sum())
            out.append(0.5 - th if aeg else th)
        reps.append(out)
    reps = np.array(reps)
    a = 1 - confidence
    lo, hi = np.nanquantile(reps, [a / 2, 1 - a / 2], axis=0)
    return lo, hi, reps


@pytest.mark.parametrize("weighted,g_neg", [(False, 30), (True, 30), (False, 2)])
def test_bootstrap_replicates_match_own_metrics_on_same_counts(weighted, g_neg):
    """Same Poisson counts (child b of SeedSequence(random_state), row i's count), metrics and
    percentile interval computed here: equal to rounding. g_neg=2: emptied cells dropped."""
    from fastbias.intervals.bootstrap import replicate_counts
    s, y, g = mid_data(11, 120, 130, g_neg, 35, 0.3)
    w = np.random.default_rng(1).uniform(0.5, 3, len(y)) if weighted else None
    B = 300
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fastbias.bias_metrics(y, s, {"g": g}, ci="bootstrap", n_boot=B, random_state=7,
                                  sample_weight=w)
    counts = [replicate_counts(c, len(y)).astype(float)
              for c in np.random.SeedSequence(7).spawn(B)]
    lo, hi, reps = boot_reference(s, y, g, w, counts)
    for j, m in enumerate(METRICS):
        assert float(r[f"{m}_low"].iloc[0]) == pytest.approx(lo[j], abs=1e-12), m
        assert float(r[f"{m}_high"].iloc[0]) == pytest.approx(hi[j], abs=1e-12), m
        assert float(r[f"{m}_se"].iloc[0]) == pytest.approx(np.nanstd(reps[:, j], ddof=1),
                                                            abs=1e-12), m


@pytest.mark.jit_heavy
def test_bootstrap_interval_agrees_with_independent_poisson_bootstrap():
    """numpy's own Poisson(1) draws, 3000 replicates each side: quantiles agree within MC error."""
    s, y, g = mid_data(12, 150, 150, 40, 45, 0.0)
    B = 3000
    r = fastbias.bias_metrics(y, s, {"g": g}, ci="bootstrap", n_boot=B, random_state=3)
    rng = np.random.default_rng(5)
    lo, hi, reps = boot_reference(s, y, g, None, [rng.poisson(1.0, len(y)) for _ in range(B)])
    for j, m in enumerate(METRICS):
        sd = np.nanstd(reps[:, j])
        # quantile MC error ~ sqrt(a(1-a)/B)/density; density at 2.5% ~ 0.058/sd; two sides
        tol = 5 * math.sqrt(2) * math.sqrt(0.025 * 0.975 / B) * sd / 0.058
        assert abs(float(r[f"{m}_low"].iloc[0]) - lo[j]) < tol, m
        assert abs(float(r[f"{m}_high"].iloc[0]) - hi[j]) < tol, m
        assert float(r[f"{m}_se"].iloc[0]) == pytest.approx(sd, rel=0.08), m


@pytest.mark.parametrize("seed,shift,zero_weights", [(2, 1.5, False), (5, 1.5, True),
                                                     (3, -1.5, False), (2, 1.5, None),
                                                     (6, -2.0, None)])
def test_drawn_pvalues_full_draws_binomial(seed, shift, zero_weights, monkeypatch):
    """Sharper: no early stop (PERMUTATION_HITS patched huge), so p = (hits + 1) / (draws + 1)
    with 10,000 draws; hits ~ Binomial(10,000, exact p): 5-sigma tolerance."""
    import fastbias.intervals.significance as S
    monkeypatch.setattr(S, "PERMUTATION_HITS", 10 ** 9)
    s, y, g = tiny_data(seed, shift=shift)
    w = np.random.default_rng(seed).integers(1, 4, len(y)).astype(float)
    if zero_weights is None:
        w = None
    elif zero_weights:
        w[np.flatnonzero(g & (y == 0))[0]] = 0
        w[np.flatnonzero(~g & (y == 0))[:2]] = 0
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm", sample_weight=w)
    exact, _, _ = exact_permutation_p(s, y, g, w)
    D = 10_000
    for m, p in pvalues(r).items():
        hits = p * (D + 1) - 1
        assert abs(hits - round(hits)) < 1e-6, (m, p)
        sd = math.sqrt(D * exact[m] * (1 - exact[m])) + 1
        assert abs(hits - D * exact[m]) < 5 * sd, (m, p, exact[m])


@pytest.mark.parametrize("g_neg,g_pos,shift,weighted", [(0, 3, 1.5, False), (4, 8, 1.0, False),
                                                        (4, 8, 1.0, True), (10, 2, -1.0, False),
                                                        (1, 1, 2.0, False), (11, 3, 1.0, False)])
def test_drawn_pvalues_edge_cells(g_neg, g_pos, shift, weighted, monkeypatch):
    """One-class subgroups, near-whole-class cells, single rows: full 10,000 draws vs exact."""
    import warnings

    import fastbias.intervals.significance as S
    monkeypatch.setattr(S, "PERMUTATION_HITS", 10 ** 9)
    s, y, g = tiny_data(9, g_neg=g_neg, g_pos=g_pos, shift=shift)
    w = np.random.default_rng(9).integers(1, 4, len(y)).astype(float) if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fastbias.bias_metrics(y, s, {"g": g}, significance="holm", sample_weight=w)
        exact, obs, _ = exact_permutation_p(s, y, g, w)
    D = 10_000
    for m, p in pvalues(r).items():
        if not np.isfinite(obs[m]):
            assert not np.isfinite(p), m
            continue
        hits = p * (D + 1) - 1
        assert abs(hits - round(hits)) < 1e-6, (m, p)
        sd = math.sqrt(D * exact[m] * (1 - exact[m])) + 1
        assert abs(hits - D * exact[m]) < 5 * sd, (m, p, exact[m])


@pytest.mark.jit_heavy
def test_bootstrap_coverage_plausible():
    """Percentile Poisson bootstrap, 200 simulated data sets (cells ~60 x 140): coverage of the
    known true metric within [0.88, 0.99] (nominal 0.95)."""
    import warnings
    truth = {"subgroup_auc": stats.norm.cdf(0.5 / math.sqrt(2)),
             "bpsn_auc": stats.norm.cdf(0.5 / math.sqrt(2)),
             "negative_aeg": 0.5 - stats.norm.cdf(-0.5 / math.sqrt(2))}
    cov = {m: 0 for m in truth}
    R = 200
    for rep in range(R):
        rng = np.random.default_rng(100 + rep)
        y = rng.integers(0, 2, 400)
        g = rng.random(400) < 0.3
        s = rng.normal(size=400) + y + 0.5 * (g & (y == 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fastbias.bias_metrics(y, s, {"g": g}, ci="bootstrap", n_boot=300,
                                        random_state=rep)
        for m in cov:
            cov[m] += res[m + "_low"].iloc[0] <= truth[m] <= res[m + "_high"].iloc[0]
    for m in cov:
        assert 0.88 <= cov[m] / R <= 0.99, (m, cov[m] / R)


def test_weighted_mid_cells_keep_delong():
    """Doc: 'Weighted rows keep DeLong's test here' (smaller cell 30-299)."""
    s, y, g = mid_data(8, 300, 320, 40, 60, 0.3)
    w = np.random.default_rng(8).integers(1, 4, len(y)).astype(float)
    r = fastbias.bias_metrics(y, s, {"g": g}, significance="bh", sample_weight=w)
    ref = delong_pvalues(s, y, g, w)
    for m, p in pvalues(r).items():
        assert p == pytest.approx(ref[m], rel=1e-9), m
    assert r.attrs["permutation_tests"] == 0
