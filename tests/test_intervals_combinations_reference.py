"""Intervals and significance tests on intersections and sensitive features: an independent
review's tests (2026-11-27).

Every expected value comes from an independent reference written here: weighted DeLong
placements by sorting + prefix sums, Holm/BH by hand, the exact-moment permutation p-values
derived from sampling without replacement, the documented Poisson bootstrap re-implemented
(SplitMix64 + Poisson(1) thresholds) and the adaptive Bernstein interval solved as a quadratic.
All of these pass on the current code (no defect found in this area).
"""
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm, poisson

import fastbias


def _below(sorted_vals, cum, a):
    lt = np.searchsorted(sorted_vals, a, side="left"); le = np.searchsorted(sorted_vals, a, side="right")
    return cum[lt], cum[le]

def placements(sx, sy, wx, wy):
    # V10(x): weighted share of Y below x (ties 1/2); V01(y): share of X above y
    sx=np.asarray(sx,float); sy=np.asarray(sy,float)
    WX, WY = wx.sum(), wy.sum()
    oy=np.argsort(sy,kind="stable"); cy=np.concatenate([[0.],np.cumsum(wy[oy])])
    lt,le=_below(sy[oy],cy,sx); v10=(lt+le)/2/WY
    ox=np.argsort(sx,kind="stable"); cx=np.concatenate([[0.],np.cumsum(wx[ox])])
    lt,le=_below(sx[ox],cx,sy); v01=(WX-lt + WX-le)/2/WX
    theta = (wx*v10).sum()/WX
    return theta, v10, v01, WX, WY

def delong(sx, sy, wx=None, wy=None):
    wx = np.ones(len(sx)) if wx is None else np.asarray(wx,float)
    wy = np.ones(len(sy)) if wy is None else np.asarray(wy,float)
    if len(sx)==0 or len(sy)==0 or wx.sum()==0 or wy.sum()==0:
        return np.nan, np.nan
    theta, v10, v01, WX, WY = placements(sx, sy, wx, wy)
    if WX <= 1 or WY <= 1:
        return theta, np.nan
    s10 = (wx*(v10-theta)**2).sum()/(WX-1)
    s01 = (wy*(v01-theta)**2).sum()/(WY-1)
    return theta, np.sqrt(s10/WX + s01/WY)

CELLS = {  # metric: (X cell, Y cell, is_aeg)
 "subgroup_auc": ("sp","sn",False), "bpsn_auc": ("bp","sn",False), "bnsp_auc": ("sp","bn",False),
 "negative_aeg": ("bn","sn",True), "positive_aeg": ("bp","sp",True)}

def ref_metrics(y, s, g, w=None, universe=None, conf=0.95):
    y=np.asarray(y,bool); s=np.asarray(s,float); g=np.asarray(g,bool)
    w = np.ones(y.size) if w is None else np.asarray(w,float)
    u = np.ones(y.size,bool) if universe is None else np.asarray(universe,bool)
    cells = {"sp": g&y&u, "sn": g&~y&u, "bp": ~g&y&u, "bn": ~g&~y&u}
    z = norm.ppf(0.5+conf/2)
    out={}
    for m,(X,Y,aeg) in CELLS.items():
        th, se = delong(s[cells[X]], s[cells[Y]], w[cells[X]], w[cells[Y]])
        if aeg:
            est = 0.5-th; lo, hi = max(-.5, est - z*se), min(.5, est+z*se)
        else:
            est = th; lo, hi = max(0, est-z*se), min(1, est+z*se)
        out[m]=est; out[m+"_se"]=se; out[m+"_low"]=lo; out[m+"_high"]=hi
    return out

def psi(n, s, w, X, Y):
    """normalised placements psi of estimate with samples X,Y over all rows"""
    sx, sy = s[X], s[Y]; wx, wy = w[X], w[Y]
    theta, v10, v01, WX, WY = placements(sx, sy, wx, wy)
    p = np.zeros(n)
    p[np.where(X)[0]] = (v10-theta)/np.sqrt(WX*(WX-1))
    p[np.where(Y)[0]] = (v01-theta)/np.sqrt(WY*(WY-1))
    return theta, p

def ref_pvalues(y, s, g, w=None, universe=None):
    """DeLong z-test p-values (metric vs overall AUC of universe; AEG vs 0)."""
    y=np.asarray(y,bool); s=np.asarray(s,float); g=np.asarray(g,bool)
    w = np.ones(y.size) if w is None else np.asarray(w,float)
    u = np.ones(y.size,bool) if universe is None else np.asarray(universe,bool)
    n=y.size
    cells = {"sp": g&y&u, "sn": g&~y&u, "bp": ~g&y&u, "bn": ~g&~y&u}
    th_o, p_o = psi(n, s, w, y&u, ~y&u)
    out={}
    for m,(X,Y,aeg) in CELLS.items():
        th, p = psi(n, s, w, cells[X], cells[Y])
        if aeg:
            stat = 0.5-th; var = (w*p**2).sum()
        else:
            stat = th-th_o; var = (w*(p-p_o)**2).sum()
        zz = stat/np.sqrt(var)
        out[m]=2*norm.sf(abs(zz))
    return out

def holm(p):
    p=np.asarray(p,float); m=len(p); o=np.argsort(p); adj=np.empty(m); run=0
    for i,idx in enumerate(o):
        run=max(run, min(1,(m-i)*p[idx])); adj[idx]=run
    return adj

def bh(p):
    p=np.asarray(p,float); m=len(p); o=np.argsort(p)[::-1]; adj=np.empty(m); run=1
    for i,idx in enumerate(o):
        rank=m-i; run=min(run, p[idx]*m/rank); adj[idx]=run
    return adj

def _k_above(bg, vals):
    """for each v in vals: share of bg above v (+1/2 ties)"""
    bg=np.sort(np.asarray(bg,float)); m=len(bg)
    lt=np.searchsorted(bg,vals,'left'); le=np.searchsorted(bg,vals,'right')
    return ((m-le)+(le-lt)/2)/m

def perm_moment_pvalues(y, s, g, universe=None):
    """exact-moment normal permutation p-values (unweighted) for the 5 metrics."""
    y=np.asarray(y,bool); s=np.asarray(s,float); g=np.asarray(g,bool)
    u=np.ones(y.size,bool) if universe is None else np.asarray(universe,bool)
    neg=~y&u; pos=y&u
    sn=g&neg; sp=g&pos; bn=~g&neg; bp=~g&pos
    overall=placements(s[pos],s[neg],np.ones(pos.sum()),np.ones(neg.sum()))[0]
    out={}
    def test(vals_all, in_cell, obs, null, const=0.0, scale=1.0):
        N=len(vals_all); m=in_cell.sum()
        mu=vals_all.mean(); var=vals_all.var()/m*(N-m)/(N-1)
        mu=mu*scale+const; sd=np.sqrt(var)*abs(scale)
        d=abs(obs-null)
        return norm.cdf((null-d-mu)/sd)+norm.sf((null+d-mu)/sd)
    sneg=s[neg]; spos=s[pos]; gn=g[neg]; gp=g[pos]
    # redraw negatives
    bpsn_vals=_k_above(s[bp], sneg); obs=bpsn_vals[gn].mean()
    out["bpsn_auc"]=test(bpsn_vals,gn,obs,overall)
    m=gn.sum(); N=len(sneg)
    r=np.array([((sneg>v).sum()+((sneg==v).sum())/2) for v in sneg])  # incl itself 1/2
    # neg AEG = 1/2 - (sum r_i - m^2/2)/(m(N-m))
    vals=r/(N-m); obs=0.5-(r[gn].sum()-m*m/2)/(m*(N-m))
    out["negative_aeg"]=test(vals,gn,obs,0.0,const=0.5+m/(2*(N-m)),scale=-1)
    # redraw positives
    bnsp_vals=1-_k_above(s[bn], spos)  # share of bn below sp
    obs=bnsp_vals[gp].mean(); out["bnsp_auc"]=test(bnsp_vals,gp,obs,overall)
    mp=gp.sum(); Np=len(spos)
    rp=np.array([((spos>v).sum()+((spos==v).sum())/2) for v in spos])
    obs=0.5-(rp[gp].sum()-mp*mp/2)/(mp*(Np-mp))
    out["positive_aeg"]=test(rp/(Np-mp),gp,obs,0.0,const=0.5+mp/(2*(Np-mp)),scale=-1)
    # subgroup auc
    if m<=mp:
        vals=_k_above(s[sp], sneg); out["subgroup_auc"]=test(vals,gn,vals[gn].mean(),overall)
    else:
        vals=1-_k_above(s[sn], spos); out["subgroup_auc"]=test(vals,gp,vals[gp].mean(),overall)
    return out


MASK = (1 << 64) - 1
THR = [round(poisson.cdf(k, 1) * 2**32) for k in range(40)]


def _splitmix(z):
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def boot_counts(key, n):
    out = np.empty(n, int)
    for i in range(n):
        u = _splitmix(key + i * 0x9E3779B97F4A7C15) >> 32
        k = 0
        while u >= THR[k]:
            k += 1
        out[i] = k
    return out


def boot_keys(random_state, n_boot):
    return [int(c.generate_state(1, np.uint64)[0])
            for c in np.random.SeedSequence(random_state).spawn(n_boot)]


def bern(U, k, conf):
    L = np.log(2 / (1 - conf))
    a = k + 2 * L
    c = 2 * L * U * (1 - U)
    b_up = 2 * L * (1 - 2 * U) + 2 * L / 3
    b_lo = -2 * L * (1 - 2 * U) + 2 * L / 3
    tu = (b_up + np.sqrt(b_up**2 + 4 * a * c)) / (2 * a)
    tl = (b_lo + np.sqrt(b_lo**2 + 4 * a * c)) / (2 * a)
    return max(0, U - tl), min(1, U + tu)


def make(n, seed, p_a=0.45, p_b=0.5, race_p=(.4, .3, .2, .1)):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": rng.random(n) < 0.45})
    df["a"] = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < p_a).astype(float))
    df["b"] = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < p_b).astype(float))
    df["c"] = (rng.random(n) < 0.3).astype(float)
    df["race"] = rng.choice(["x", "y", "z", None], n, p=list(race_p))
    df["gen"] = rng.choice(["f", "m"], n)
    df["s"] = np.round(df.y + rng.normal(0, 1, n) + 0.25 * (df.a == 1) * (1 - df.y), 2)
    df["s2"] = np.round(df.y * 1.5 + rng.normal(0, 1, n) - 0.2 * (df.race == "x"), 2)
    df["w"] = rng.integers(1, 4, n).astype(float)
    return df


def masks(df, name, miss):
    g = np.ones(len(df), bool)
    u = np.ones(len(df), bool)
    for p in name.split(" & "):
        if "=" in p:
            f, v = p.split("=")
            col = df[f]
            g &= (col == v).values
            if miss == "exclude":
                u &= col.notna().values
        else:
            g &= (df[p] >= 0.5).values
            if miss == "exclude":
                u &= df[p].notna().values
    return g, u


MET = list(CELLS)


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


@pytest.mark.parametrize("miss", ["background", "exclude"])
@pytest.mark.parametrize("wt", [None, "w"])
def test_delong_intervals_on_intersections_and_feature_cells(miss, wt):
    df = make(1500, 1)
    t = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "b", "c"],
               intersections=2, sensitive_features=["race", "gen"], missing_subgroup=miss,
               sample_weight=wt, ci="delong", confidence=0.9, min_subgroup_size=5).for_model()
    assert any(" & " in i and "=" in i for i in t.index) and "a & b" in t.index
    w = None if wt is None else df[wt].values
    for name in t.index:
        g, u = masks(df, name, miss)
        for k, v in ref_metrics(df.y.values, df.s.values, g, w, u, conf=0.9).items():
            assert t.loc[name, k] == pytest.approx(v, abs=1e-9), (name, k)


@pytest.mark.parametrize("method", ["holm", "bh"])
@pytest.mark.parametrize("miss", ["background", "exclude"])
@pytest.mark.parametrize("wt", [None, "w"])
def test_delong_pvalues_and_family_adjustment_per_model(method, miss, wt):
    df = make(8000, 2)
    res = _quiet(fastbias.evaluate, df, label="y", scores=["s", "s2"], subgroups=["a", "b", "c"],
                 intersections=2, sensitive_features=["race", "gen"], missing_subgroup=miss,
                 sample_weight=wt, significance=method, min_subgroup_size=5)
    w = None if wt is None else df[wt].values
    y = df.y.values
    for model in ["s", "s2"]:
        t = res.for_model(model)
        raw = t[[m + "_pvalue" for m in MET]].values.astype(float)
        adj = t[[m + "_pvalue_adjusted" for m in MET]].values.astype(float)
        sig = t[[m + "_significant" for m in MET]].values.astype(bool)
        ok = ~np.isnan(raw)
        expect = (holm if method == "holm" else bh)(raw[ok])   # family: all rows x metrics of one model
        np.testing.assert_allclose(adj[ok], expect, rtol=1e-12, atol=0)
        assert (sig[ok] == (expect <= 0.05)).all() and not sig[~ok].any()
        checked = 0
        for name in t.index:
            g, u = masks(df, name, miss)
            cnt = {"sp": (g & y & u).sum(), "sn": (g & ~y & u).sum(),
                   "bp": (~g & y & u).sum(), "bn": (~g & ~y & u).sum()}
            rp = ref_pvalues(y, df[model].values, g, w, u)
            for m, (X, Y, _) in CELLS.items():
                if min(cnt[X], cnt[Y]) >= 300:
                    checked += 1
                    assert t.loc[name, m + "_pvalue"] == pytest.approx(rp[m], rel=1e-7), (name, m)
        assert checked >= 50


@pytest.mark.parametrize("miss", ["background", "exclude"])
def test_exact_moment_permutation_pvalues_small_cells(miss, tmp_path):
    rng = np.random.default_rng(8)
    n = 3000
    df = pd.DataFrame({"y": rng.random(n) < 0.45})
    df["a"] = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < 0.3).astype(float))
    df["b"] = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < 0.3).astype(float))
    df["race"] = rng.choice(["x", "y", "z", None], n, p=[.1, .3, .5, .1])
    df["gen"] = rng.choice(["f", "m"], n, p=[.3, .7])
    df["s"] = np.round(df.y + rng.normal(0, 1, n) + 0.3 * (df.a == 1) * (1 - df.y), 2)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "b"], intersections=2,
              sensitive_features=["race", "gen"], missing_subgroup=miss, significance="holm",
              min_subgroup_size=5)
    t = _quiet(fastbias.evaluate, df, **kw).for_model()
    t2 = _quiet(fastbias.evaluate_csv, path, bucket_rows=800, **kw).for_model()
    y = df.y.values
    checked = 0
    for name in t.index:
        g, u = masks(df, name, miss)
        cnt = {"sp": (g & y & u).sum(), "sn": (g & ~y & u).sum(),
               "bp": (~g & y & u).sum(), "bn": (~g & ~y & u).sum()}
        rp = perm_moment_pvalues(y, df.s.values, g, u)
        for m, (X, Y, _) in CELLS.items():
            if 30 <= min(cnt[X], cnt[Y]) < 300:
                checked += 1
                assert t.loc[name, m + "_pvalue"] == pytest.approx(rp[m], rel=1e-9), (name, m)
                assert t2.loc[name, m + "_pvalue"] == pytest.approx(rp[m], rel=1e-9), (name, m)
    assert checked >= 20


@pytest.mark.parametrize("miss", ["background", "exclude"])
@pytest.mark.parametrize("wt", [None, "w"])
def test_bootstrap_matches_documented_scheme_on_universes(miss, wt):
    rng = np.random.default_rng(5)
    n = 300
    df = pd.DataFrame({"y": rng.random(n) < 0.45})
    df["a"] = np.where(rng.random(n) < 0.15, np.nan, (rng.random(n) < 0.5).astype(float))
    df["b"] = np.where(rng.random(n) < 0.15, np.nan, (rng.random(n) < 0.5).astype(float))
    df["race"] = rng.choice(["x", "y", None], n, p=[.5, .35, .15])
    df["gen"] = rng.choice(["f", "m", None], n, p=[.45, .45, .1])
    df["s"] = np.round(df.y + rng.normal(0, 1, n), 1)
    df["w"] = rng.integers(1, 4, n).astype(float)
    NB, SEED = 20, 11
    t = _quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "b"], intersections=2,
               sensitive_features=["race", "gen"], missing_subgroup=miss, sample_weight=wt,
               ci="bootstrap", n_boot=NB, random_state=SEED, min_subgroup_size=3).for_model()
    K = boot_keys(SEED, NB)
    base = np.ones(n) if wt is None else df[wt].values
    y, s = df.y.values, df.s.values
    cache = {}
    for name in t.index:
        g, u = masks(df, name, miss)
        idx = np.where(u)[0]       # exclude: counts indexed by position within the universe
        cells = {"sp": g & y & u, "sn": g & ~y & u, "bp": ~g & y & u, "bn": ~g & ~y & u}
        reps = {m: [] for m in CELLS}
        for b in range(NB):
            key = (b, len(idx))
            if key not in cache:
                cache[key] = boot_counts(K[b], len(idx))
            w = np.zeros(n)
            w[idx] = cache[key] * base[idx]
            for m, (X, Y, aeg) in CELLS.items():
                if w[cells[X]].sum() == 0 or w[cells[Y]].sum() == 0:
                    reps[m].append(np.nan)
                    continue
                th = placements(s[cells[X]], s[cells[Y]], w[cells[X]], w[cells[Y]])[0]
                reps[m].append(0.5 - th if aeg else th)
        for m in CELLS:
            r = np.array(reps[m])
            r = r[~np.isnan(r)]
            assert t.loc[name, m + "_low"] == pytest.approx(np.quantile(r, 0.025), abs=1e-9)
            assert t.loc[name, m + "_high"] == pytest.approx(np.quantile(r, 0.975), abs=1e-9)
            assert t.loc[name, m + "_se"] == pytest.approx(r.std(ddof=1), abs=1e-9)


@pytest.mark.jit_heavy
def test_bootstrap_same_seed_same_intervals_any_threads():
    df = make(2500, 7)
    kw = dict(label="y", scores=["s", "s2"], subgroups=["a", "b"], intersections=2,
              sensitive_features=["race", "gen"], ci="bootstrap", n_boot=100, min_subgroup_size=5,
              missing_subgroup="exclude", sample_weight="w")
    r1 = _quiet(fastbias.evaluate, df, random_state=3, n_jobs=1, **kw)
    r2 = _quiet(fastbias.evaluate, df, random_state=3, n_jobs=2, **kw)
    r3 = _quiet(fastbias.evaluate, df, random_state=4, **kw)
    for m in ["s", "s2"]:
        a, b, c = r1.for_model(m), r2.for_model(m), r3.for_model(m)
        cols = [x for x in a.columns if x.endswith(("_low", "_high", "_se"))]
        pd.testing.assert_frame_equal(a[cols], b[cols])
        assert not a[cols].equals(c[cols])


@pytest.mark.parametrize("miss", ["background", "exclude"])
@pytest.mark.parametrize("conf", [0.95, 0.8])
def test_bernstein_cells_in_memory_and_csv(miss, conf, tmp_path):
    df = make(3000, 6)
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    kw = dict(label="y", scores="s", subgroups=["a", "b", "c"], intersections=3,
              sensitive_features=["race", "gen"], missing_subgroup=miss, ci="bernstein",
              confidence=conf, min_subgroup_size=3)
    t = _quiet(fastbias.evaluate, df, **kw).for_model()
    t2 = _quiet(fastbias.evaluate_csv, path, bucket_rows=600, **kw).for_model()
    assert list(t.index) == list(t2.index)
    y = df.y.values
    for name in t.index:
        g, u = masks(df, name, miss)
        cells = {"sp": g & y & u, "sn": g & ~y & u, "bp": ~g & y & u, "bn": ~g & ~y & u}
        for m, (X, Y, aeg) in CELLS.items():
            k = min(cells[X].sum(), cells[Y].sum())
            est = t.loc[name, m]
            lo, hi = bern(0.5 - est if aeg else est, k, conf)
            if aeg:
                lo, hi = 0.5 - hi, 0.5 - lo
            assert t.loc[name, m + "_low"] == pytest.approx(lo, abs=1e-9)
            assert t.loc[name, m + "_high"] == pytest.approx(hi, abs=1e-9)
            assert t2.loc[name, m + "_low"] == pytest.approx(lo, abs=1e-9)
            assert t2.loc[name, m + "_high"] == pytest.approx(hi, abs=1e-9)


@pytest.mark.jit_heavy
@pytest.mark.parametrize("wt", [None, "w"])
@pytest.mark.parametrize("miss", ["background", "exclude"])
def test_out_of_core_delong_and_tests_agree(miss, wt, tmp_path):
    df = make(6000, 3)
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_parquet(tmp_path / "d.parquet")
    kw = dict(label="y", scores=["s", "s2"], subgroups=["a", "b", "c"], intersections=2,
              sensitive_features=["race", "gen"], missing_subgroup=miss, sample_weight=wt,
              min_subgroup_size=5, significance="holm", ci="delong")
    r0 = _quiet(fastbias.evaluate, df, **kw)
    for fn, src in [(fastbias.evaluate_csv, tmp_path / "d.csv"),
                    (fastbias.evaluate_parquet, tmp_path / "d.parquet")]:
        r1 = _quiet(fn, src, bucket_rows=1000, batch_rows=700, **kw)
        for model in ["s", "s2"]:
            a, b = r0.for_model(model), r1.for_model(model)
            assert list(a.index) == list(b.index)
            for c in a.columns:
                if a[c].dtype == bool:
                    assert (a[c] == b[c]).all(), c
                elif a[c].dtype.kind == "f":
                    np.testing.assert_allclose(b[c].values, a[c].values, rtol=1e-10, atol=1e-15,
                                               err_msg=c)


@pytest.mark.jit_heavy
def test_undefined_intersection_and_feature_value_nan_intervals_and_not_tested():
    rng = np.random.default_rng(9)
    n = 2000
    df = pd.DataFrame({"y": rng.random(n) < 0.45})
    df["a"] = (rng.random(n) < 0.3).astype(float)
    df["b"] = (rng.random(n) < 0.3).astype(float)
    df["race"] = rng.choice(["x", "y"], n)
    q = rng.random(n) < 0.02
    df.loc[q, "race"] = "q"
    df.loc[q, "y"] = True                       # race=q has no negatives
    df["s"] = np.round(df.y + rng.normal(0, 1, n), 2)
    df["w"] = rng.integers(1, 4, n).astype(float)
    df.loc[(df.a == 1) & (df.b == 1) & ~df.y, "w"] = 0.0   # a & b negatives weigh 0
    for ci in ["delong", "bootstrap"]:
        kw = dict(label="y", scores="s", subgroups=["a", "b"], intersections=2,
                  sensitive_features=["race"], sample_weight="w", ci=ci, significance="holm")
        if ci == "bootstrap":
            kw.update(n_boot=30, random_state=1)
        with pytest.warns(fastbias.UndefinedMetricWarning, match="a & b"):
            t = fastbias.evaluate(df, **kw).for_model()
        for name in ["a & b", "race=q"]:
            for m in ["subgroup_auc", "bpsn_auc", "negative_aeg"]:   # metrics reading the negatives
                for suf in ["", "_low", "_high", "_se", "_pvalue", "_pvalue_adjusted"]:
                    assert np.isnan(t.loc[name, m + suf]), (ci, name, m + suf)
                assert not t.loc[name, m + "_significant"]
        raw = t[[m + "_pvalue" for m in MET]].values.astype(float)
        assert t.attrs["n_tests"] == int((~np.isnan(raw)).sum())
        np.testing.assert_allclose(
            t[[m + "_pvalue_adjusted" for m in MET]].values.astype(float)[~np.isnan(raw)],
            holm(raw[~np.isnan(raw)]), rtol=1e-12)
