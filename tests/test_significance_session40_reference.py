"""Significance tests with intersections of three, ``missing_subgroup="exclude"``, weights and
the CSV and Parquet paths: an independent review's tests (2026-11-28, fortieth session).

Every expected value is computed here from the definitions in docs/significance.md
(brute-force pair matrices, paired DeLong placements, scipy.stats, exact enumeration of the
permutations of tiny cells, Holm and Benjamini-Hochberg by hand over the documented family);
fastbias never makes an expected value. No defect was found: these are pins.
"""
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ------------------------------------------------------------------ references
def _h(a, b):
    return (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])


def _ustat(s, w, mx, my):
    """theta = P(X > Y) (+1/2 ties), weighted, and psi over all rows (0 off X and Y)."""
    x, y, wx, wy = s[mx], s[my], w[mx], w[my]
    Wx, Wy = wx.sum(), wy.sum()
    if len(x) == 0 or len(y) == 0 or Wx <= 0 or Wy <= 0:
        return np.nan, None
    H = _h(x, y)
    theta = float(wx @ H @ wy / (Wx * Wy))
    vx = H @ wy / Wy          # share of Y below each x
    vy = wx @ H / Wx          # share of X above each y
    psi = np.zeros(len(s))
    psi[mx] = (vx - theta) / math.sqrt(Wx * (Wx - 1)) if Wx > 1 else np.nan
    psi[my] = (vy - theta) / math.sqrt(Wy * (Wy - 1)) if Wy > 1 else np.nan
    return theta, psi


def ref_tests(s, y, g, w=None, universe=None):
    """Metric values and DeLong two-sided p-values as docs/significance.md defines them;
    ``universe``: the rows the subgroup is compared within (exclude)."""
    s = np.asarray(s, float)
    w = np.ones(len(s)) if w is None else np.asarray(w, float)
    u = np.ones(len(s), bool) if universe is None else universe
    P, N = (y == 1) & u, (y == 0) & u
    g = g & u
    o, psi_o = _ustat(s, w, P, N)
    cells = {"subgroup_auc": (P & g, N & g), "bpsn_auc": (P & ~g, N & g),
             "bnsp_auc": (P & g, N & ~g), "negative_aeg": (N & ~g, N & g),
             "positive_aeg": (P & ~g, P & g)}
    out = {}
    for m, (mx, my) in cells.items():
        theta, psi = _ustat(s, w, mx, my)
        if psi is None:
            out[m] = (np.nan, np.nan)
            continue
        if m.endswith("aeg"):
            value, stat, var = 0.5 - theta, 0.5 - theta, float(w @ psi ** 2)
        else:
            value, stat, var = theta, theta - o, float(w @ (psi - psi_o) ** 2)
        se = math.sqrt(var)
        p = 2 * stats.norm.sf(abs(stat) / se) if se > 0 else (1.0 if abs(stat) < 1e-12 else 0.0)
        out[m] = (value, p)
    return out, o


def holm(p):
    p = np.asarray(p, float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    run = 0.0
    for k, i in enumerate(order):
        run = max(run, (m - k) * p[i])
        adj[i] = min(1.0, run)
    return adj


def bh(p):
    p = np.asarray(p, float)
    m = len(p)
    adj = np.empty(m)
    for i in range(m):
        # min over j with p_j >= p_i of m p_j / rank_j (rank counting ties upward)
        best = 1.0
        for j in range(m):
            if p[j] >= p[i]:
                rank = int((p <= p[j]).sum())
                best = min(best, m * p[j] / rank)
        adj[i] = best
    return adj


def check_adjustment(table, method, level=0.05):
    raw = table[[f"{m}_pvalue" for m in METRICS]].to_numpy().ravel()
    adj = table[[f"{m}_pvalue_adjusted" for m in METRICS]].to_numpy().ravel()
    sig = table[[f"{m}_significant" for m in METRICS]].to_numpy().ravel()
    ok = np.isfinite(raw)
    assert np.array_equal(np.isfinite(adj), ok)
    ref = (holm if method == "holm" else bh)(raw[ok])
    np.testing.assert_allclose(adj[ok], ref, rtol=1e-12, atol=0)
    assert list(sig[ok]) == list(ref <= level)
    assert not sig[~ok].any()
    assert table.attrs["n_tests"] == int(ok.sum())


def make_frame(seed, n=3000, p=0.7, ties=True, bias=0.6, weights=False, nan_share=0.0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    s = rng.normal(size=n) + y
    cols = {}
    for k, name in enumerate("abc"):
        cols[name] = (rng.random(n) < p).astype(float)
    # the triple's negatives scored higher: a real gap
    tri = (cols["a"] == 1) & (cols["b"] == 1) & (cols["c"] == 1)
    s = s + bias * (tri & (y == 0))
    if ties:
        s = np.round(s, 1)
    df = pd.DataFrame({"y": y, "s": s, **cols})
    if weights:
        df["w"] = rng.integers(0, 4, n).astype(float)  # a quarter of rows weigh 0
    if nan_share:
        for name in "abc":
            df.loc[rng.random(n) < nan_share, name] = np.nan
    return df


def members(df, names):
    m = np.ones(len(df), bool)
    for c in names:
        m &= df[c].to_numpy() >= 0.5
    return m


def annotated(df, names):
    m = np.ones(len(df), bool)
    for c in names:
        m &= df[c].notna().to_numpy()
    return m


ROWS = ["a", "b", "c", "a & b", "a & c", "b & c", "a & b & c"]


def quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return f(*a, **k)


def check_against_reference(table, df, weights, exclude, rtol=1e-7):
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    w = df["w"].to_numpy(float) if weights else None
    for row in ROWS:
        names = row.split(" & ")
        g = members(df, names)
        u = annotated(df, names) if exclude else None
        ref, _ = ref_tests(s, y, g, w, u)
        for m in METRICS:
            value, p = ref[m]
            np.testing.assert_allclose(table.loc[row, m], value, rtol=1e-12, atol=1e-14,
                                       err_msg=f"{row} {m}")
            np.testing.assert_allclose(table.loc[row, f"{m}_pvalue"], p, rtol=rtol, atol=1e-300,
                                       err_msg=f"{row} {m} p-value")


# ------------------------------------------------------------------ tests
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("method", ["holm", "bh"])
def test_triples_delong_pvalues_and_adjustment_in_memory(weights, method):
    """Every cell >= 300 rows: DeLong p-values of the subgroups, pairs and the triple match
    the documented paired DeLong test, ties and zero weights included; Holm/BH over all 35."""
    df = make_frame(1, weights=weights)
    sw = "w" if weights else None
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=list("abc"),
                intersections=3, significance=method, sample_weight=sw)
    table = res.for_model()
    assert list(table.index) == ROWS
    check_against_reference(table, df, weights, exclude=False)
    check_adjustment(table, method)
    assert table.attrs["n_tests"] == 35
    assert table.loc["a & b & c", "bpsn_auc_significant"]  # the planted gap is found


@pytest.mark.parametrize("weights", [False, True])
def test_bias_metrics_triples_equal_reference(weights):
    df = make_frame(2, weights=weights)
    w = df["w"].to_numpy() if weights else None
    table = quiet(fastbias.bias_metrics, df["y"].to_numpy(), df["s"].to_numpy(),
                  {c: df[c].to_numpy() >= 0.5 for c in "abc"}, sample_weight=w,
                  intersections=3, significance="holm")
    check_against_reference(table, df, weights, exclude=False)
    check_adjustment(table, "holm")


@pytest.mark.parametrize("weights", [False, True])
def test_exclude_triples_compare_with_their_annotated_universe(weights):
    """NaN identities under exclude: the triple is compared within rows annotated for a, b
    and c, and its AUC tests with that universe's AUC."""
    df = make_frame(3, n=4000, weights=weights, nan_share=0.1)
    sw = "w" if weights else None
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=list("abc"),
                intersections=3, significance="bh", sample_weight=sw,
                missing_subgroup="exclude")
    table = res.for_model()
    check_against_reference(table, df, weights, exclude=True)
    check_adjustment(table, "bh")


def perm_reference(s, y, g, out_of_core):
    """Expected p-value per metric for unweighted data, by the documented tier: DeLong (both
    cells >= 300), normal tail with exact permutation moments (smaller cell 30-299), and for
    cells under 30 out of core Hoeffding's bound (in memory: None, a drawn p-value)."""
    s = np.asarray(s, float)
    dl, overall = ref_tests(s, y, g)
    P, N = y == 1, y == 0
    cells = {"subgroup_auc": (P & g, N & g), "bpsn_auc": (P & ~g, N & g),
             "bnsp_auc": (P & g, N & ~g), "negative_aeg": (N & ~g, N & g),
             "positive_aeg": (P & ~g, P & g)}
    neg_first = (N & g).sum() <= (P & g).sum()
    out = {}
    for m, (mx, my) in cells.items():
        small = min(mx.sum(), my.sum())
        if small >= 300:
            out[m] = dl[m][1]
            continue
        if small < 30 and not out_of_core:
            out[m] = None
            continue
        redraw_neg = m in ("bpsn_auc", "negative_aeg") or (m == "subgroup_auc" and neg_first)
        label = 0 if redraw_neg else 1
        cls = s[y == label]
        n, k = len(cls), int((g & (y == label)).sum())
        if m == "subgroup_auc":
            f = _h(s[P & g], cls).mean(axis=0) if redraw_neg else _h(cls, s[N & g]).mean(axis=1)
        elif m == "bpsn_auc":
            f = _h(s[P & ~g], cls).mean(axis=0)
        elif m == "bnsp_auc":
            f = _h(cls, s[N & ~g]).mean(axis=1)
        else:
            c = _h(cls, cls).sum(axis=0) - 0.5  # rows of the class above each, itself out
            f = c / (n - k)                      # AEG = 1/2 - (mean f - (k-1)/(2(n-k)))
            f = 0.5 - (f - (k - 1) / (2 * (n - k)))
        mu = f.mean()
        var = f.var() / k * (n - k) / (n - 1)
        value = dl[m][0]
        null = 0.0 if m.endswith("aeg") else overall
        d = abs(value - null)
        if small >= 30:
            sd = math.sqrt(var)
            out[m] = min(1.0, stats.norm.sf((null + d - mu) / sd) + stats.norm.cdf((null - d - mu) / sd))
        else:
            rng_ = (n - 1) / (n - k) if m.endswith("aeg") else 1.0
            gap = d - abs(mu - null)
            out[m] = 1.0 if gap <= 0 else min(1.0, 2 * math.exp(-2 * k * gap ** 2 / rng_ ** 2))
    return out, {m: dl[m][0] for m in METRICS}


def mixed_frame(seed, n=2400):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    s = np.round(rng.normal(size=n) + y, 1)
    a = (rng.random(n) < 0.5).astype(float)
    b = (rng.random(n) < 0.5).astype(float)
    c = (rng.random(n) < 0.06).astype(float)
    tri = (a == 1) & (b == 1) & (c == 1)
    s = s + 1.5 * (tri & (y == 0))   # a strong gap in a tiny triple
    return pd.DataFrame({"y": y, "s": s, "a": a, "b": b, "c": c})


def test_mixed_tiers_in_memory_match_documented_tests():
    """Subgroups, pairs and a triple spanning DeLong, exact-moment and drawn tiers."""
    df = mixed_frame(5)
    table = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=list("abc"),
                  intersections=3, significance="holm").for_model()
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    for row in table.index:
        exp, vals = perm_reference(s, y, members(df, row.split(" & ")), out_of_core=False)
        for m in METRICS:
            np.testing.assert_allclose(table.loc[row, m], vals[m], rtol=1e-12, atol=1e-14)
            if exp[m] is not None:
                np.testing.assert_allclose(table.loc[row, f"{m}_pvalue"], exp[m], rtol=1e-7,
                                           atol=1e-300, err_msg=f"{row} {m}")
            else:
                assert 0 < table.loc[row, f"{m}_pvalue"] <= 1
    check_adjustment(table, "holm")


def test_mixed_tiers_csv_equal_in_memory_and_bound_tiny_cells(tmp_path):
    """Out of core: DeLong and exact-moment p-values equal evaluate's; cells under 30 get
    the documented Hoeffding bound; adjustment by hand over the CSV path's own family."""
    df = mixed_frame(6)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    mem = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=list("abc"),
                intersections=3, significance="bh").for_model()
    ooc = quiet(fastbias.evaluate_csv, path, label="y", scores="s", subgroups=list("abc"),
                intersections=3, significance="bh").for_model()
    assert list(ooc.index) == list(mem.index)
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    n_bounds = 0
    for row in ooc.index:
        exp, _ = perm_reference(s, y, members(df, row.split(" & ")), out_of_core=True)
        exp_mem, _ = perm_reference(s, y, members(df, row.split(" & ")), out_of_core=False)
        for m in METRICS:
            np.testing.assert_allclose(ooc.loc[row, f"{m}_pvalue"], exp[m], rtol=1e-7,
                                       atol=1e-300, err_msg=f"{row} {m}")
            if exp_mem[m] is not None:
                np.testing.assert_allclose(ooc.loc[row, f"{m}_pvalue"],
                                           mem.loc[row, f"{m}_pvalue"], rtol=1e-9, atol=1e-300)
            else:
                n_bounds += 1
    assert n_bounds > 0 and ooc.attrs.get("permutation_bounds") == n_bounds
    assert mem.attrs["permutation_tests"] > 0
    check_adjustment(ooc, "bh")


def test_subgroup_of_every_row_and_its_intersections():
    """A subgroup holding every row: subgroup AUC is the overall AUC (p = 1), its
    background metrics are undefined (NaN, out of the family); "a & d" equals "a"."""
    df = make_frame(7)
    df["d"] = 1.0
    with pytest.warns(UndefinedMetricWarning):
        table = fastbias.evaluate(df, label="y", scores="s", subgroups=["a", "b", "d"],
                                  intersections=3, significance="holm").for_model()
    assert table.loc["d", "subgroup_auc_pvalue"] == 1.0
    for m in METRICS[1:]:
        assert np.isnan(table.loc["d", f"{m}_pvalue"])
        assert not table.loc["d", f"{m}_significant"]
    for m in METRICS:
        assert table.loc["a & d", f"{m}_pvalue"] == table.loc["a", f"{m}_pvalue"]
    check_adjustment(table, "holm")
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    ref, _ = ref_tests(s, y, members(df, ["a", "b"]))
    for m in METRICS:
        np.testing.assert_allclose(table.loc["a & b & d", f"{m}_pvalue"], ref[m][1], rtol=1e-7)


def test_weighted_triple_with_a_weightless_class_is_kept_nan_and_out_of_family():
    """Intersection rule counts rows: a triple whose positives all weigh 0 is kept; the
    metrics reading that cell are NaN, untested, not in the family."""
    df = make_frame(8, weights=True)
    tri = members(df, list("abc"))
    df.loc[tri & (df["y"] == 1), "w"] = 0.0
    with pytest.warns(UndefinedMetricWarning):
        table = fastbias.evaluate(df, label="y", scores="s", subgroups=list("abc"),
                                  intersections=3, significance="bh",
                                  sample_weight="w").for_model()
    assert "a & b & c" in table.index
    for m in ["subgroup_auc", "bnsp_auc", "positive_aeg"]:
        assert np.isnan(table.loc["a & b & c", m])
        assert np.isnan(table.loc["a & b & c", f"{m}_pvalue"])
    check_adjustment(table, "bh")
    assert table.attrs["n_tests"] == 32
    s, y, w = df["s"].to_numpy(float), df["y"].to_numpy(), df["w"].to_numpy(float)
    ref, _ = ref_tests(s, y, tri, w)
    for m in ["bpsn_auc", "negative_aeg"]:
        np.testing.assert_allclose(table.loc["a & b & c", f"{m}_pvalue"], ref[m][1], rtol=1e-7)


@pytest.mark.parametrize("weights", [False, True])
def test_csv_delong_triples_equal_in_memory_and_reference(tmp_path, weights):
    df = make_frame(9, weights=weights, nan_share=0.05)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    sw = "w" if weights else None
    kw = dict(label="y", scores="s", subgroups=list("abc"), intersections=3,
              significance="holm", sample_weight=sw, missing_subgroup="exclude")
    mem = quiet(fastbias.evaluate, df, **kw).for_model()
    ooc = quiet(fastbias.evaluate_csv, path, **kw).for_model()
    check_against_reference(ooc, df, weights, exclude=True)
    for m in METRICS:
        np.testing.assert_allclose(ooc[f"{m}_pvalue"], mem[f"{m}_pvalue"], rtol=1e-9)
        np.testing.assert_allclose(ooc[f"{m}_pvalue_adjusted"], mem[f"{m}_pvalue_adjusted"],
                                   rtol=1e-9)
        assert list(ooc[f"{m}_significant"]) == list(mem[f"{m}_significant"])
    check_adjustment(ooc, "holm")


def mixed_exclude_frame(seed, n=2400):
    df = mixed_frame(seed, n)
    rng = np.random.default_rng(seed + 100)
    for name in "abc":
        df.loc[rng.random(n) < 0.08, name] = np.nan
    return df


@pytest.mark.parametrize("reader", ["csv", "parquet"])
def test_exclude_mixed_tiers_out_of_core_within_each_universe(tmp_path, reader):
    """exclude + NaN identities + every tier: each test (DeLong, exact moments, Hoeffding
    bound) within the rows annotated for the row's columns."""
    df = mixed_exclude_frame(10)
    kw = dict(label="y", scores="s", subgroups=list("abc"), intersections=3,
              significance="holm", missing_subgroup="exclude")
    if reader == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
        ooc = quiet(fastbias.evaluate_csv, path, **kw).for_model()
    else:
        path = tmp_path / "d.parquet"
        df.to_parquet(path, index=False)
        ooc = quiet(fastbias.evaluate_parquet, path, **kw).for_model()
    mem = quiet(fastbias.evaluate, df, **kw).for_model()
    assert list(ooc.index) == list(mem.index)
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    for row in ooc.index:
        names = row.split(" & ")
        u = annotated(df, names)
        g = members(df, names)
        exp, vals = perm_reference(s[u], y[u], g[u], out_of_core=True)
        exp_mem, _ = perm_reference(s[u], y[u], g[u], out_of_core=False)
        for m in METRICS:
            np.testing.assert_allclose(ooc.loc[row, m], vals[m], rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(ooc.loc[row, f"{m}_pvalue"], exp[m], rtol=1e-7,
                                       atol=1e-300, err_msg=f"{row} {m}")
            if exp_mem[m] is not None:
                np.testing.assert_allclose(mem.loc[row, f"{m}_pvalue"], exp_mem[m], rtol=1e-7,
                                           atol=1e-300, err_msg=f"mem {row} {m}")
    check_adjustment(ooc, "holm")
    check_adjustment(mem, "holm")


def test_weighted_subgroup_of_every_weighted_row_is_the_overall_auc():
    """A subgroup holding every row of positive weight (its complement weighs 0): its
    subgroup AUC is the overall AUC exactly; p = 1 (or, documented, not made and counted)."""
    df = make_frame(11, weights=True)
    df["d"] = (df["w"] > 0).astype(float)
    table = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "d"],
                  intersections=2, significance="holm", sample_weight="w").for_model()
    s, y, w = df["s"].to_numpy(float), df["y"].to_numpy(), df["w"].to_numpy(float)
    assert table.loc["d", "subgroup_auc"] == pytest.approx(roc_auc_score(y, s, sample_weight=w),
                                                           rel=1e-12)
    p = table.loc["d", "subgroup_auc_pvalue"]
    assert p == 1.0 or (np.isnan(p) and table.attrs["significance_unresolved"] >= 1), p
    # "a & d" has the weighted metrics of "a"
    for m in METRICS:
        np.testing.assert_allclose(table.loc["a & d", m], table.loc["a", m], rtol=1e-12)
    ref, _ = ref_tests(s, y, members(df, ["a", "d"]), w)
    for m in METRICS:
        np.testing.assert_allclose(table.loc["a & d", f"{m}_pvalue"], ref[m][1], rtol=1e-7)
    check_adjustment(table, "holm")


def test_confidence_sets_the_level_of_the_flags():
    df = make_frame(12, bias=0.25)
    table = quiet(fastbias.bias_metrics, df["y"].to_numpy(), df["s"].to_numpy(),
                  {c: df[c].to_numpy() >= 0.5 for c in "abc"}, intersections=3,
                  significance="bh", confidence=0.8)
    assert table.attrs["significance_level"] == pytest.approx(0.2)
    check_adjustment(table, "bh", level=0.2)


def test_each_model_is_its_own_family():
    df = make_frame(13)
    rng = np.random.default_rng(0)
    df["s2"] = np.round(df["s"] + rng.normal(0, 1, len(df)), 1)
    df.loc[::7, "s2"] = np.nan  # omit: the second model's own rows
    res = quiet(fastbias.evaluate, df, label="y", scores=["s", "s2"], subgroups=list("abc"),
                intersections=3, significance="holm", nan_policy="omit")
    for model in ["s", "s2"]:
        t = res.for_model(model)
        check_adjustment(t, "holm")
        keep = df[model].notna().to_numpy()
        sub = df[keep].drop(columns=["s"]).rename(columns={model: "s"}) if model != "s" else df
        check_against_reference(t, sub.reset_index(drop=True), False, exclude=False)


def exact_perm(s, y, g):
    """Enumerate every redraw of the subgroup's cell from its class, other cell fixed."""
    dl, overall = ref_tests(s, y, g)
    obs = {m: dl[m][0] for m in METRICS}
    dist = lambda m, v: abs(v) if m.endswith("aeg") else abs(v - overall)
    neg_first = (g & (y == 0)).sum() <= (g & (y == 1)).sum()
    out = {}
    for label, mets in ((0, ["bpsn_auc", "negative_aeg"]), (1, ["bnsp_auc", "positive_aeg"])):
        if (label == 0) == neg_first:
            mets = mets + ["subgroup_auc"]
        cls = np.flatnonzero(y == label)
        k = int((g & (y == label)).sum())
        hits, total = dict.fromkeys(mets, 0), 0
        for comb in itertools.combinations(cls, k):
            g2 = g.copy()
            g2[cls] = False
            g2[list(comb)] = True
            v = ref_values(s, y, g2)
            total += 1
            for m in mets:
                d0 = dist(m, obs[m])
                hits[m] += dist(m, v[m]) >= d0 - 1e-12 * max(1.0, d0)
        out.update({m: hits[m] / total for m in mets})
    return out


def ref_values(s, y, g):
    P, N = y == 1, y == 0
    a = lambda mx, my: _h(s[mx], s[my]).mean() if mx.any() and my.any() else np.nan
    return {"subgroup_auc": a(P & g, N & g), "bpsn_auc": a(P & ~g, N & g),
            "bnsp_auc": a(P & g, N & ~g), "negative_aeg": 0.5 - a(N & ~g, N & g),
            "positive_aeg": 0.5 - a(P & ~g, P & g)}


def test_drawn_pvalues_of_tiny_triples_with_ties_match_exact_enumeration():
    """Cells under 30 rows in memory: Besag-Clifford drawn p-values (stop at 20 hits, else
    (hits+1)/(draws+1)) plausible under the exact permutation p-value (tail 1e-6)."""
    rng = np.random.default_rng(14)
    n_neg, n_pos = 13, 12
    y = np.r_[np.zeros(n_neg, int), np.ones(n_pos, int)]
    s = np.round(rng.normal(size=len(y)) + y, 0) / 2  # heavy ties
    cols = {c: (rng.random(len(y)) < 0.65).astype(float) for c in "abc"}
    df = pd.DataFrame({"y": y, "s": s, **cols})
    table = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=list("abc"),
                  intersections=3, significance="holm").for_model()
    tests_ = table.attrs["n_tests"]
    max_draws = min(100_000, max(10_000, math.ceil(tests_ / 0.05)))
    checked = 0
    for row in table.index:
        g = members(df, row.split(" & "))
        ex = exact_perm(s, y, g)
        for m in METRICS:
            p = table.loc[row, f"{m}_pvalue"]
            if m not in ex or not np.isfinite(p):
                continue
            checked += 1
            draws = 20 / p
            if abs(draws - round(draws)) < 1e-6 and round(draws) <= max_draws:
                fails = round(draws) - 20
                tail = min(stats.nbinom.cdf(fails, 20, ex[m]), stats.nbinom.sf(fails - 1, 20, ex[m]))
            else:
                h = round(p * (max_draws + 1) - 1)
                tail = min(stats.binom.cdf(h, max_draws, ex[m]), stats.binom.sf(h - 1, max_draws, ex[m]))
            assert tail > 1e-6, (row, m, p, ex[m])
    assert checked >= 20
    check_adjustment(table, "holm")


def test_weighted_tiny_cells_out_of_core_untested_counted_one_warning(tmp_path):
    df = mixed_frame(15)
    df["w"] = np.random.default_rng(1).integers(1, 4, len(df)).astype(float)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ooc = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=list("abc"),
                                    intersections=3, significance="bh",
                                    sample_weight="w").for_model()
    undefined = [r for r in rec if issubclass(r.category, UndefinedMetricWarning)]
    assert len(undefined) == 1
    s, y, w = df["s"].to_numpy(float), df["y"].to_numpy(), df["w"].to_numpy(float)
    untested = 0
    for row in ooc.index:
        g = members(df, row.split(" & "))
        ref, _ = ref_tests(s, y, g, w)
        P, N = y == 1, y == 0
        cells = {"subgroup_auc": (P & g, N & g), "bpsn_auc": (P & ~g, N & g),
                 "bnsp_auc": (P & g, N & ~g), "negative_aeg": (N & ~g, N & g),
                 "positive_aeg": (P & ~g, P & g)}
        for m, (mx, my) in cells.items():
            p = ooc.loc[row, f"{m}_pvalue"]
            if min(mx.sum(), my.sum()) < 30:
                assert np.isnan(p) and not ooc.loc[row, f"{m}_significant"]
                untested += 1
            else:  # weighted cells of 30+ rows keep DeLong
                np.testing.assert_allclose(p, ref[m][1], rtol=1e-7, err_msg=f"{row} {m}")
    assert untested > 0 and ooc.attrs["permutation_untested"] == untested
    check_adjustment(ooc, "bh")


@pytest.mark.parametrize("reader", ["memory", "csv"])
def test_exclude_subgroup_of_every_annotated_row(tmp_path, reader):
    """exclude: a column 1 wherever annotated is its whole universe: subgroup AUC = the
    annotated rows' AUC, p = 1; background metrics NaN; "a & d" within rows annotated for both."""
    df = make_frame(16, nan_share=0.1)
    df["d"] = 1.0
    df.loc[np.random.default_rng(2).random(len(df)) < 0.15, "d"] = np.nan
    kw = dict(label="y", scores="s", subgroups=["a", "d"], intersections=2,
              significance="holm", missing_subgroup="exclude")
    if reader == "csv":
        path = tmp_path / "d.csv"
        df.to_csv(path, index=False)
        table = quiet(fastbias.evaluate_csv, path, **kw).for_model()
    else:
        table = quiet(fastbias.evaluate, df, **kw).for_model()
    s, y = df["s"].to_numpy(float), df["y"].to_numpy()
    u = df["d"].notna().to_numpy()
    assert table.loc["d", "subgroup_auc"] == pytest.approx(roc_auc_score(y[u], s[u]), rel=1e-12)
    assert table.loc["d", "subgroup_auc_pvalue"] == 1.0
    assert table.loc["d", METRICS[1:]].isna().all()
    ua = annotated(df, ["a", "d"])
    ref, _ = ref_tests(s, y, members(df, ["a", "d"]), None, ua)
    for m in METRICS:
        np.testing.assert_allclose(table.loc["a & d", f"{m}_pvalue"], ref[m][1], rtol=1e-7)
    check_adjustment(table, "holm")
