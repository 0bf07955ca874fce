"""DeLong significance tests and paired comparisons against an independent
exact-rational DeLong (1988) reference (weighted, frequency weights, W - 1 convention:
var = sum_X w (V - theta)^2 / (W_X (W_X - 1)) + the same over Y; the difference of a metric
and the overall AUC: sum_r w_r (psi_M(r) - psi_O(r))^2, psi = (V - theta) / sqrt(W (W - 1))).
Contract checked: a standard error within 1% (z within 2%) of the exact one, or NaN.

An independent review's tests (2026-11-27). Found by review (fails before its fix):
delong_paired_test took weights of any scale (AUCs 7e-9 off at 1e-160, standard errors of 0
at 1e100, false "empty cell" NaN at 1e300); it now refuses them as the other DeLong paths do."""
import math
import re
import warnings
from decimal import Decimal, getcontext
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import fastbias

getcontext().prec = 80

METRIC_SAMPLES = {  # (above cell X, below cell Y): theta = P(s(X) > s(Y)) + 1/2 P(=)
    "subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
    "bpsn_auc": (("background", 1), ("subgroup", 0)),
    "bnsp_auc": (("subgroup", 1), ("background", 0)),
    "negative_aeg": (("background", 0), ("subgroup", 0)),
    "positive_aeg": (("background", 1), ("subgroup", 1)),
}


def _dec(fr):
    return Decimal(fr.numerator) / Decimal(fr.denominator)


class _Est:
    """Exact weighted two-sample U-statistic and its centred placements per row."""

    def __init__(self, s, w, xr, yr):
        self.w, self.xr, self.yr = w, list(xr), list(yr)
        self.Wx = sum((w[i] for i in xr), F(0))
        self.Wy = sum((w[i] for i in yr), F(0))
        self.defined = self.Wx > 0 and self.Wy > 0
        if not self.defined:
            return
        ty, tx = {}, {}
        for i in yr:
            ty[s[i]] = ty.get(s[i], F(0)) + w[i]
        for i in xr:
            tx[s[i]] = tx.get(s[i], F(0)) + w[i]
        keys = sorted(set(ty) | set(tx))
        below_y, acc = {}, F(0)
        for k in keys:
            below_y[k] = acc
            acc += ty.get(k, F(0))
        above_x, acc = {}, F(0)
        for k in reversed(keys):
            above_x[k] = acc
            acc += tx.get(k, F(0))
        vx = {i: (below_y[s[i]] + ty.get(s[i], F(0)) / 2) / self.Wy for i in xr}
        vy = {j: (above_x[s[j]] + tx.get(s[j], F(0)) / 2) / self.Wx for j in yr}
        self.theta = sum((w[i] * vx[i] for i in xr), F(0)) / self.Wx
        self.cx = {i: v - self.theta for i, v in vx.items()}
        self.cy = {j: v - self.theta for j, v in vy.items()}

    @property
    def has_var(self):
        return self.defined and self.Wx > 1 and self.Wy > 1

    def var(self):
        w = self.w
        return (sum((w[i] * c * c for i, c in self.cx.items()), F(0)) / (self.Wx * (self.Wx - 1))
                + sum((w[j] * c * c for j, c in self.cy.items()), F(0))
                / (self.Wy * (self.Wy - 1)))


def _paired_var(a, b):
    w = a.w
    return (sum((w[i] * (a.cx[i] - b.cx[i]) ** 2 for i in a.cx), F(0)) / (a.Wx * (a.Wx - 1))
            + sum((w[j] * (a.cy[j] - b.cy[j]) ** 2 for j in a.cy), F(0))
            / (a.Wy * (a.Wy - 1)))


def _diff_var(m, o):
    """var(M - O), M's samples inside O's of the same class (Decimal, 80 digits)."""
    w, cov = m.w, Decimal(0)
    for cm, wm in ((m.cx, m.Wx), (m.cy, m.Wy)):
        for co, wo in ((o.cx, o.Wx), (o.cy, o.Wy)):
            cross = sum((w[i] * cm[i] * co[i] for i in cm if i in co), F(0))
            if cross:
                cov += _dec(cross) / _dec(wm * (wm - 1) * wo * (wo - 1)).sqrt()
    return _dec(m.var()) + _dec(o.var()) - 2 * cov


def _cells(y, g):
    n = len(y)
    return {("subgroup", 0): [i for i in range(n) if g[i] and not y[i]],
            ("subgroup", 1): [i for i in range(n) if g[i] and y[i]],
            ("background", 0): [i for i in range(n) if not g[i] and not y[i]],
            ("background", 1): [i for i in range(n) if not g[i] and y[i]]}


def _fr(v, w, n):
    return ([F(float(x)) for x in v],
            [F(1)] * n if w is None else [F(float(x)) for x in w])


def paired_reference(y, sa, sb, groups, w=None):
    n = len(y)
    sa, wf = _fr(sa, w, n)
    sb, _ = _fr(sb, w, n)
    out = {}

    def put(key, xr, yr, aeg):
        a, b = _Est(sa, wf, xr, yr), _Est(sb, wf, xr, yr)
        rec = {"defined": a.defined, "has_var": a.has_var}
        if a.defined:
            ta, tb = (F(1, 2) - a.theta, F(1, 2) - b.theta) if aeg else (a.theta, b.theta)
            rec.update(value_a=ta, value_b=tb, difference=ta - tb)
            if a.has_var:
                rec.update(var_a=a.var(), var_b=b.var(), var_d=_paired_var(a, b))
        out[key] = rec

    put(("overall", "overall_auc"), [i for i in range(n) if y[i]],
        [i for i in range(n) if not y[i]], False)
    for name, g in groups.items():
        c = _cells(y, g)
        for metric, (xc, yc) in METRIC_SAMPLES.items():
            put((name, metric), c[xc], c[yc], metric.endswith("aeg"))
    return out


def significance_reference(y, s, groups, w=None):
    n = len(y)
    s, wf = _fr(s, w, n)
    o = _Est(s, wf, [i for i in range(n) if y[i]], [i for i in range(n) if not y[i]])
    out = {}
    for name, g in groups.items():
        c = _cells(y, g)
        for metric, (xc, yc) in METRIC_SAMPLES.items():
            m = _Est(s, wf, c[xc], c[yc])
            rec = {"defined": m.defined, "rows": min(len(c[xc]), len(c[yc])), "var": None}
            if m.defined:
                if metric.endswith("aeg"):
                    rec["stat"] = F(1, 2) - m.theta
                    rec["var"] = _dec(m.var()) if m.has_var else None
                else:
                    rec["stat"] = m.theta - o.theta
                    rec["var"] = _diff_var(m, o) if m.has_var and o.has_var else None
            out[name, metric] = rec
    return out


def _paired(y, sa, sb, groups, w=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.delong_paired_test(
            np.asarray(y), np.asarray(sa), np.asarray(sb),
            pd.DataFrame(groups) if groups else None,
            sample_weight=None if w is None else np.asarray(w, dtype=float))


def paired_defects(y, sa, sb, groups, w=None):
    """Where delong_paired_test disagrees with the reference beyond its contract."""
    res = _paired(y, sa, sb, groups, w)
    bad = []
    for key, r in paired_reference(list(y), list(sa), list(sb), groups, w).items():
        row = res.loc[key]
        if not r["defined"]:
            if not (np.isnan(row["value_a"]) and np.isnan(row["p_value"])):
                bad.append((key, "undefined value given", row["value_a"], row["p_value"]))
            continue
        if not abs(row["value_a"] - float(r["value_a"])) <= 1e-12:
            bad.append((key, "value_a", row["value_a"], float(r["value_a"])))
        if not abs(row["difference"] - float(r["difference"])) <= 1e-12:
            bad.append((key, "difference", row["difference"], float(r["difference"])))
        if not r["has_var"]:
            if not np.isnan(row["p_value"]):
                bad.append((key, "p without a variance", row["p_value"]))
            continue
        for col, var in (("se_a", r["var_a"]), ("se_b", r["var_b"]),
                         ("difference_se", r["var_d"])):
            se, got = math.sqrt(float(var)), row[col]
            if np.isnan(got):
                continue  # NaN is allowed by the contract
            if (se == 0 and got != 0) or (se > 0 and abs(got / se - 1) > 0.01):
                bad.append((key, col, got, se))
        if not np.isnan(row["z"]):
            vd, d = r["var_d"], r["difference"]
            if vd == 0:
                if not (d == 0 and row["z"] == 0):
                    bad.append((key, "z with exact var 0", row["z"], float(d)))
            else:
                zr = float(d) / math.sqrt(float(vd))
                # the difference known within 1% of the standard error, which within 1%
                if abs(row["z"] - zr) > 0.02 * abs(zr) + 0.01:
                    bad.append((key, "z", row["z"], zr))
    return bad, res


def significance_defects(y, s, groups, w=None):
    from scipy.special import erfcinv
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.bias_metrics(np.asarray(y), np.asarray(s), pd.DataFrame(groups),
                                    sample_weight=None if w is None else np.asarray(w),
                                    significance="holm")
    bad, checked = [], 0
    for (name, metric), r in significance_reference(list(y), list(s), groups, w).items():
        p = res.loc[name, metric + "_pvalue"]
        if not r["defined"]:
            if not np.isnan(p):
                bad.append((name, metric, "undefined metric tested", p))
            continue
        if r["rows"] < (30 if w is not None else 300):
            continue  # a permutation test, not DeLong's
        if r["var"] is None:
            if not np.isnan(p):
                bad.append((name, metric, "no variance but p", p))
            continue
        if np.isnan(p):
            continue
        checked += 1
        st = abs(_dec(r["stat"]))
        if r["var"] <= 0:
            if not (p == (1.0 if st == 0 else 0.0)):
                bad.append((name, metric, "p with var 0", p))
            continue
        zr = float(st / r["var"].sqrt())
        pr = math.erfc(zr / math.sqrt(2))
        if pr < 1e-280 and p < 1e-280:
            continue
        zl = math.sqrt(2) * erfcinv(p) if p > 0 else math.inf
        if abs(zl - zr) > 0.02 * zr and not (pr > 0.999999 and p > 0.999999):
            bad.append((name, metric, "z", zl, zr))
    return bad, checked, res


# ------------------------------------------------------------------ found by review

def _scaled_case():
    rng = np.random.default_rng(3)
    n = 240
    y = np.array([1] * 120 + [0] * 120, bool)
    sa = rng.integers(0, 12, n) / 12.0 + 0.3 * y
    sb = rng.integers(0, 12, n) / 12.0 + 0.2 * y
    g = np.zeros(n, bool)
    g[:40] = True
    g[120:170] = True
    return y, sa, sb, {"g": list(g)}, rng.integers(1, 4, n).astype(float)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e-158, 1e100, 1e155, 1e300])
def test_paired_test_refuses_weights_out_of_scale(scale):
    """Weights 1..3 times 1e-160 gave the overall AUC 0.72346050767 against the exact
    0.72346051464 (AUCs do not depend on the weights' scale), silently; times 1e100, standard
    errors of 0.0 where the exact one is 2.27e-52 (outside the 1% contract, not NaN); at
    1e-300 or 1e155..1e300, every value NaN with a warning of "an empty or one-class cell"
    (false: every cell holds 40-120 rows of positive weight). The paired test never checked
    the weights' scale, as DeLong intervals and the significance tests do (found by review:
    the products of class weights in paired.py compare() under- or overflowed). Now the same
    ValueError, naming sample_weight, the largest weight and its position."""
    y, sa, sb, g, wi = _scaled_case()
    w = wi * scale
    at = int(np.argmax(w))
    with pytest.raises(ValueError, match=(
            r"sample_weight holds weights too far from 1 for DeLong's paired test: the "
            r"largest is " + re.escape(repr(float(w[at]))) + rf" \(at position {at}\)")):
        fastbias.delong_paired_test(y, sa, sb, pd.DataFrame(g), sample_weight=w)
    # (the same weights within scale: the exact reference's values, within the contract)
    bad, _ = paired_defects(y, sa, sb, g, list(wi))
    assert not bad, bad


# --------------------------------------------------------- properties that hold (pass)

def test_significance_rejects_out_of_range_weights_naming_them():
    y, sa, _, g, wi = _scaled_case()
    for scale in (1e-300, 1e300, 1e100):
        with pytest.raises(ValueError, match=r"sample_weight.*position"):
            fastbias.bias_metrics(y, sa, pd.DataFrame(g), sample_weight=wi * scale,
                                  significance="holm")


@pytest.mark.parametrize("seed", range(6))
def test_paired_matches_exact_reference_on_ties_and_weights(seed):
    rng = np.random.default_rng(seed)
    for mode in range(6):
        n = int(rng.integers(4, 60))
        y = rng.random(n) < rng.uniform(0.2, 0.8)
        lv = int(rng.integers(1, 6))
        sa = rng.integers(0, lv, n) / lv
        sb = np.where(rng.random(n) < 0.7, sa, rng.integers(0, lv, n) / lv)
        g = {"g": list(rng.random(n) < 0.4), "h": list(rng.random(n) < 0.8),
             "all": [True] * n, "none": [False] * n}
        w = [None, rng.integers(0, 4, n).astype(float),
             rng.choice([0.5, 0.25, 1e-15, 1e-13, 1e-9, 3.0], n),
             rng.choice([1.0, 2.0 ** 30, 2.0 ** -30, 2.0 ** 60, 1e-40, 0.0], n),
             rng.uniform(0.01, 2, n), rng.choice([1.0, 0.1, 1 / 3], n)][mode]
        bad, _ = paired_defects(y, sa, sb, g, None if w is None else list(w))
        assert not bad, (mode, bad)


@pytest.mark.parametrize("eps", [2e-16, 1e-15, 1e-13, 1e-9, 0.5])
def test_paired_cells_just_above_one(eps):
    rng = np.random.default_rng(5)
    n = 80
    y = np.array([1] * 40 + [0] * 40, bool)
    sa, sb = rng.integers(0, 8, n) / 8.0, rng.integers(0, 8, n) / 8.0
    g = np.zeros(n, bool)
    g[:6] = True
    g[40:70] = True
    for w6 in ([1.0, eps, 0, 0, 0, 0], [1.0] + [eps / 5] * 5):
        w = np.ones(n)
        w[:6] = w6
        bad, _ = paired_defects(y, sa, sb, {"g": list(g)}, list(w))
        assert not bad, bad


def test_significance_heavy_ties_one_class_empty_and_whole_set():
    rng = np.random.default_rng(7)
    n = 1600
    y = np.array([1] * 800 + [0] * 800, bool)
    s = (rng.random(n) < np.where(y, 0.6, 0.4)).astype(float)  # two score levels
    g = np.zeros(n, bool)
    g[:400] = True
    g[800:1200] = True
    neg_only = np.zeros(n, bool)
    neg_only[800:1300] = True
    groups = {"g": list(g), "all": [True] * n, "none": [False] * n,
              "neg_only": list(neg_only)}
    with pytest.warns(fastbias.UndefinedMetricWarning, match="subgroup_positives=0"):
        res = fastbias.bias_metrics(y, s, pd.DataFrame(groups), significance="holm")
    bad, checked, res = significance_defects(y, s, groups)
    assert not bad and checked >= 8, (bad, checked)
    assert res.loc["all", "subgroup_auc_pvalue"] == 1.0  # the same estimate: no gap
    assert res.loc["none"][[c for c in res.columns if c.endswith("_pvalue")]].isna().all()
    assert res.loc["neg_only", "subgroup_positives"] == 0
    assert np.isnan(res.loc["neg_only", "subgroup_auc_pvalue"])


@pytest.mark.parametrize("eps", [1e-15, 1e-13, 1e-9, 0.5, 0.0])
@pytest.mark.parametrize("where", ["sub_pos", "bg_pos", "sub_neg"])
def test_significance_weighted_cells_just_above_one(eps, where):
    rng = np.random.default_rng(11)
    n = 240
    y = np.array([1] * 120 + [0] * 120, bool)
    s = rng.integers(0, 12, n) / 12.0 + 0.3 * y
    g = np.zeros(n, bool)
    g[:40] = True
    g[120:170] = True
    idx = {"sub_pos": np.arange(0, 40), "bg_pos": np.arange(40, 120),
           "sub_neg": np.arange(120, 170)}[where]
    w = np.ones(n)
    w[idx] = 0.0
    w[idx[0]] = 1.0
    w[idx[1:31]] = eps / 30  # the cell weighs 1 + eps over 31 rows (DeLong's test, weighted)
    bad, _, res = significance_defects(y, s, {"g": list(g)}, list(w))
    assert not bad, bad
    if eps == 0.0:  # a cell of weight exactly 1: its tests are not made
        assert res.filter(like="_pvalue").isna().to_numpy().sum() >= 2


@pytest.mark.jit_heavy  # (exact rational references of weighted cells: too slow as Python)
@pytest.mark.parametrize("seed", range(3))
def test_significance_matches_exact_reference_weighted(seed):
    rng = np.random.default_rng(100 + seed)
    total = 0
    for mode in range(1, 7):
        n = int(rng.integers(100, 400))
        y = rng.random(n) < rng.uniform(0.3, 0.7)
        s = np.round((y * rng.uniform(0, 1.5) + rng.normal(0, 1, n)) * 3) / 3
        if mode % 2:  # nearly separating, a few rows between the classes
            s = np.where(y, np.maximum(s, 5.0), np.minimum(s, 4.0))
            s[rng.integers(0, n, 3)] = 4.5
        g = {"g": list(rng.random(n) < 0.4), "most": list(rng.random(n) < 0.9)}
        w = {1: rng.integers(1, 4, n).astype(float),
             2: rng.choice([0.5, 0.25, 1e-15, 3.0, 0.0, 1e-13, 1e-9], n),
             3: rng.choice([1.0, 2.0 ** 40, 2.0 ** -40, 0.0, 1 + 2.0 ** -40], n),
             4: rng.uniform(0.01, 2, n),
             5: rng.choice([1.0, 0.1, 1 / 3], n) * 1e50,
             6: rng.choice([1.0, 0.1, 1 / 3], n) * 1e-50}[mode]
        bad, checked, _ = significance_defects(y, s, g, list(w))
        total += checked
        assert not bad, (mode, bad)
    assert total > 0


def test_significance_zero_weight_row_between_separated_classes():
    rng = np.random.default_rng(7)
    n = 1600
    y = np.array([1] * 800 + [0] * 800, bool)
    s = np.where(y, 1.0 + rng.random(n), rng.random(n))
    s[0] = 0.5  # a positive amid the negatives, of weight 0
    w = np.ones(n)
    w[0] = 0.0
    g = np.zeros(n, bool)
    g[:400] = True
    g[800:1200] = True
    bad, checked, res = significance_defects(y, s, {"g": list(g)}, list(w))
    assert not bad and checked >= 3, bad
    for m in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
        assert res.loc["g", m + "_pvalue"] == 1.0
