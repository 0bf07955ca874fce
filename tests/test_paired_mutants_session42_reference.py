"""A mutation audit of the paired DeLong test, the exact placement sums, the U-statistic
Bernstein bounds and the out-of-core chunk sums (fastbias/intervals/paired.py, exact_sums.py,
ustatistic.py, chunked.py): an independent review's tests (2026-11-28, forty-second session).
Of 67 hand mutants the suite killed 46; these tests kill 12 more (a standard error of 0 where
the float variance is 0 but its rounding bound is not; the same-order shortcut of two models
without its checks of b's order and ties; exact variances of a sample of weight 1; a variance
of a difference called 0 within 1e-12 of its terms; sortable keys widened to int64; the
out-of-core sums of all rows without their weight scale). 2 are equivalent; 7 survive (looser
rounding bounds behind the NaN rule, the low parts of exact sums: no input found where a
number changes). No defect was found.

Every expected value here comes from references written in this file from the papers:
DeLong, DeLong & Clarke-Pearson (1988) structural components (placements V10 / V01) in
fractions.Fraction, scipy.stats.norm for the normal quantities, and the Bernstein inequality
of docs/intervals.md solved numerically (scipy.optimize.brentq) rather than by the closed form.
"""
import math
import warnings
from decimal import Decimal, localcontext
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

import fastbias
from fastbias.intervals.exact_sums import (
    cross_numerators,
    exact_difference_variance,
    exact_variance,
    sortable_keys,
)

from ._paired_ref import _psi, delong_parts, paired_reference
from .reference import pair_fraction

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ---------------------------------------------------------------- DeLong from the paper

def _components(xs, wx, ys, wy):
    """theta and the placements V10 (each X row: Y weight below / W_Y) and V01 (each Y row:
    X weight above / W_X) of one model, exact."""
    big_wx, big_wy = sum(wx, F(0)), sum(wy, F(0))
    v10 = [sum((b * _psi(x, y) for y, b in zip(ys, wy)), F(0)) / big_wy for x in xs]
    v01 = [sum((a * _psi(x, y) for x, a in zip(xs, wx)), F(0)) / big_wx for y in ys]
    theta = sum((a * v for a, v in zip(wx, v10)), F(0)) / big_wx
    return theta, v10, v01


def _delong_pair(xa, xb, wx, ya, yb, wy):
    """(theta_a, theta_b, var_a, var_b, cov_ab) of two models on the same X and Y rows
    (tests/_paired_ref.py's delong_parts); None where a sample weighs 0."""
    got = delong_parts(xa, xb, [F(v) for v in wx], ya, yb, [F(v) for v in wy])
    return None if got is None else (got["theta_a"], got["theta_b"], got["var_a"],
                                     got["var_b"], got["cov"])


def _samples(y, member):
    """(X rows, Y rows, is_aeg) of each metric, as in the Borkan et al. definitions."""
    idx = range(len(y))
    sp = [i for i in idx if y[i] and member[i]]
    sn = [i for i in idx if not y[i] and member[i]]
    bp = [i for i in idx if y[i] and not member[i]]
    bn = [i for i in idx if not y[i] and not member[i]]
    return {"subgroup_auc": (sp, sn, False), "bpsn_auc": (bp, sn, False),
            "bnsp_auc": (sp, bn, False), "negative_aeg": (bn, sn, True),
            "positive_aeg": (bp, sp, True)}


def _expected_rows(y, sa, sb, groups, w, confidence):
    """dict (subgroup, metric) -> expected columns (floats; None where NaN expected), from
    tests/_paired_ref.py's paired_reference."""
    z_crit = stats.norm.ppf(0.5 + confidence / 2)
    out = {}
    for key, ref in paired_reference(list(y), sa, sb, groups,
                                     None if w is None else [float(v) for v in w]).items():
        if ref is None:
            out[key] = None
            continue
        ta, tb = ref["value_a"], ref["value_b"]
        row = {"value_a": float(ta), "value_b": float(tb), "difference": float(ta - tb)}
        if ref["var_diff"] is not None:
            va, vb, cab = ref["var_a"], ref["var_b"], ref["cov"]
            sd = math.sqrt(ref["var_diff"])
            row.update(se_a=math.sqrt(va), se_b=math.sqrt(vb),
                       correlation=(float(cab) / math.sqrt(float(va) * float(vb))
                                    if va > 0 and vb > 0 else None),
                       difference_se=sd)
            if sd > 0:
                z = float(ta - tb) / sd
                row.update(z=z, p_value=2 * stats.norm.sf(abs(z)),
                           difference_low=float(ta - tb) - z_crit * sd,
                           difference_high=float(ta - tb) + z_crit * sd)
        out[key] = row
    return out


def _check_table(res, expected, rel=1e-9):
    assert list(res.index) == list(expected)
    for key, want in expected.items():
        got = res.loc[key]
        if want is None:
            assert np.isnan(got["value_a"]), key
            continue
        for col in res.columns:
            value = want.get(col)
            if value is None:
                assert np.isnan(got[col]), (key, col, got[col])
            else:
                assert got[col] == pytest.approx(value, rel=rel, abs=1e-12), (key, col)


def _data(seed, n=36):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    sa = np.round(y * 0.8 + rng.normal(0, 0.6, n), 1)          # ties
    sb = np.round(y * 0.5 + rng.normal(0, 0.6, n), 1)
    g1 = rng.random(n) < 0.5
    g2 = rng.random(n) < 0.4                                    # overlapping with g1
    return y, sa, sb, {"g1": g1, "g2": g2}


@pytest.mark.parametrize("weights", ["none", "integer", "fractional"])
def test_paired_test_every_column_equals_delong_from_the_paper(weights):
    """Kills: theta_a/theta_b columns, AEG sign, difference sign, the variances' scale (W (W - 1),
    X/Y swapped), the covariance's scale or side, the correlation's sqrt, the p-value's sides, the
    interval's ends and confidence, the subgroup cells' classes, the background cells' exclusion,
    the skip flags' reset between overlapping subgroups, weights rounded."""
    y, sa, sb, groups = _data(1)
    rng = np.random.default_rng(7)
    w = {"none": None, "integer": rng.integers(1, 4, y.shape[0]).astype(float),
         "fractional": rng.choice([0.3, 0.7, 1.1, 2.6], y.shape[0])}[weights]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.delong_paired_test(y, sa, sb, pd.DataFrame(groups), sample_weight=w,
                                          confidence=0.9)
    _check_table(res, _expected_rows(y, sa, sb, groups, w, 0.9))


def test_paired_cell_of_weight_exactly_one_has_no_standard_error():
    """A sample of total weight exactly 1 (two rows of 0.5) has no DeLong variance (W - 1 = 0):
    se NaN, no test. Kills the mutant testing ``w >= 1`` instead of ``w > 1``."""
    y = np.array([1, 1, 0, 0, 0, 1, 0])
    sa = np.array([0.9, 0.3, 0.2, 0.5, 0.1, 0.8, 0.4])
    sb = np.array([0.6, 0.7, 0.1, 0.2, 0.3, 0.9, 0.5])
    w = np.array([0.5, 0.5, 1.0, 2.0, 1.0, 3.0, 1.0])
    g = pd.DataFrame({"g": [True, True, True, True, False, False, False]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.delong_paired_test(y, sa, sb, g, sample_weight=w)
    row = res.loc[("g", "subgroup_auc")]     # X: two positives of 0.5 each: W_X = 1
    want = pair_fraction(sa[[0, 1]], sa[[2, 3]], w[[0, 1]], w[[2, 3]])
    assert row["value_a"] == float(want)
    for col in ("se_a", "se_b", "difference_se", "z", "p_value"):
        assert np.isnan(row[col]), col


def test_paired_same_order_gives_zero_difference_z0_p1():
    """Two models ordering the rows alike (ties included) have every placement the same:
    difference 0, z 0, p 1, interval [0, 0] as documented."""
    y, sa, _, groups = _data(3)
    sb = sa * 3.0 + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.delong_paired_test(y, sa, sb, pd.DataFrame(groups),
                                          sample_weight=np.linspace(0.1, 2.7, y.shape[0]))
    ok = res.dropna(subset=["value_a"])
    assert (ok["difference"] == 0).all()
    tested = ok.dropna(subset=["p_value"])
    assert len(tested) >= 10
    assert (tested["z"] == 0).all() and (tested["p_value"] == 1).all()
    assert (tested["difference_low"] == 0).all() and (tested["difference_high"] == 0).all()


def test_paired_weights_out_of_scale_are_refused_naming_the_argument():
    """Kills the mutant that drops the weights' scale check (2**-200 .. 2**200)."""
    y, sa, sb, _ = _data(4, 10)
    w = np.ones(10)
    w[3] = 1e61
    with pytest.raises(ValueError, match="sample_weight"):
        fastbias.delong_paired_test(y, sa, sb, sample_weight=w)


# ---------------------------------------------------------------- exact sums

def _sums(xs, wx, ys, wy):
    """(u, sq_x, sq_y, W_X, W_Y): placements in weight units (Y weight below an X row, ties 1/2;
    X weight above a Y row), their weighted sum and weighted square sums, by hand."""
    px = [sum((b * _psi(x, y) for y, b in zip(ys, wy)), F(0)) for x in xs]
    py = [sum((a * _psi(x, y) for x, a in zip(xs, wx)), F(0)) for y in ys]
    u = sum((a * p for a, p in zip(wx, px)), F(0))
    return (u, sum((a * p * p for a, p in zip(wx, px)), F(0)),
            sum((b * p * p for b, p in zip(wy, py)), F(0)), sum(wx, F(0)), sum(wy, F(0)))


def test_exact_variance_equals_delong_from_the_paper():
    """Kills: exact_parts' Y numerator with W_X, exact_variance dividing by W^2, and
    exact_variance accepting a sample of weight at most 1."""
    rng = np.random.default_rng(5)
    xs = [F(int(v)) for v in rng.integers(0, 6, 9)]
    ys = [F(int(v)) for v in rng.integers(0, 5, 7)]
    wx = [F(int(v), 4) for v in rng.integers(1, 9, 9)]
    wy = [F(int(v), 2) for v in rng.integers(1, 5, 7)]
    want = _delong_pair(xs, xs, wx, ys, ys, wy)[2]
    assert exact_variance(*_sums(xs, wx, ys, wy)) == want
    # a sample of total weight exactly 1: no variance
    assert exact_variance(*_sums(xs[:2], [F(1, 2)] * 2, ys, wy)) is None


def _psi_rows(xs, wx, ys, wy):
    """Each row's DeLong influence (V - theta) / sqrt(W (W - 1)) on its own sample, exact
    numerators: returns (theta, [(num, W(W-1)) for X rows], [... Y rows])."""
    theta, v10, v01 = _components(xs, wx, ys, wy)
    big_wx, big_wy = sum(wx, F(0)), sum(wy, F(0))
    return ([(v - theta, big_wx * (big_wx - 1)) for v in v10],
            [(v - theta, big_wy * (big_wy - 1)) for v in v01])


@pytest.mark.parametrize("light", [False, True])
def test_exact_difference_variance_equals_the_rowwise_sum(light):
    """A subgroup AUC against the AUC of all rows: var = sum_r w_r (psi_M(r) - psi_O(r))^2 over
    rows (docs of significance.difference_standard_errors), worked out here row by row to 60
    digits. The cross sums cx = sum_X w c_M c_O, ox = sum_X w c_O (c the placements in weight
    units) and the Y side's are made by hand. Kills: the covariance not doubled, the overall's
    weights swapped, t_y divided by W_neg; with ``light`` (a subgroup of all rows but one of
    weight 2**-70: a positive variance of the difference, 3e-25, ~1e-23 of its terms, not 0) the
    mutant that calls a difference within 1e-12 of its terms 0."""
    rng = np.random.default_rng(11)
    n = 24
    y = rng.random(n) < 0.5
    s = [F(int(v)) for v in rng.integers(0, 7, n)]
    w = [F(int(v), 2) for v in rng.integers(1, 6, n)]
    member = rng.random(n) < 0.6
    if light:  # a subgroup of every row but one of weight 2**-70: a tiny difference of terms
        member[:] = True
        member[0] = False
        w[0] = F(1, 2 ** 70)
    pos = [i for i in range(n) if y[i]]
    neg = [i for i in range(n) if not y[i]]
    sp = [i for i in pos if member[i]]
    sn = [i for i in neg if member[i]]
    sub = lambda rows: ([s[i] for i in rows], [w[i] for i in rows])
    metric = _sums(*sub(sp), *sub(sn))
    overall = _sums(*sub(pos), *sub(neg))
    # placements in weight units, per row: c_M (subgroup negatives below a subgroup positive),
    # c_O (all negatives below a positive); d_M, d_O for the negatives
    c_m = {i: sum((w[j] * _psi(s[i], s[j]) for j in sn), F(0)) for i in sp}
    c_o = {i: sum((w[j] * _psi(s[i], s[j]) for j in neg), F(0)) for i in pos}
    d_m = {j: sum((w[i] * _psi(s[i], s[j]) for i in sp), F(0)) for j in sn}
    d_o = {j: sum((w[i] * _psi(s[i], s[j]) for i in pos), F(0)) for j in neg}
    total = lambda terms: sum(terms, F(0))
    cross = (total(w[i] * c_m[i] * c_o[i] for i in sp), total(w[i] * c_o[i] for i in sp),
             total(w[j] * d_m[j] * d_o[j] for j in sn), total(w[j] * d_o[j] for j in sn))
    got = exact_difference_variance(metric, overall, cross)

    mx, my = _psi_rows(*sub(sp), *sub(sn))
    ox_, oy_ = _psi_rows(*sub(pos), *sub(neg))
    infl_m = dict(zip(sp, mx)) | dict(zip(sn, my))
    infl_o = dict(zip(pos, ox_)) | dict(zip(neg, oy_))
    with localcontext() as ctx:
        ctx.prec = 60
        dec = lambda f: Decimal(f.numerator) / Decimal(f.denominator)
        total = Decimal(0)
        for r in range(n):
            a = dec(infl_m[r][0]) / dec(infl_m[r][1]).sqrt() if r in infl_m else Decimal(0)
            b = dec(infl_o[r][0]) / dec(infl_o[r][1]).sqrt()
            total += dec(w[r]) * (a - b) ** 2
        want = float(total)
    assert got == pytest.approx(want, rel=1e-14, abs=0)
    # t_x, t_y as the covariance numerators: t_x = sum_X w (V_M - theta_M) V_O, by hand
    big_wneg = overall[4]
    t_x, t_y = cross_numerators(metric[0], metric[3], metric[4], overall[4], overall[3], *cross)
    theta_m = metric[0] / (metric[3] * metric[4])
    assert t_x == sum((w[i] * (c_m[i] / metric[4] - theta_m) * c_o[i] / big_wneg for i in sp), F(0))
    assert t_y == sum((w[j] * (d_m[j] / metric[3] - theta_m) * d_o[j] / overall[3] for j in sn),
                      F(0))
    # the same estimate on the same rows (a subgroup of every row): exactly 0
    assert exact_difference_variance(overall, overall, (
        sum((w[i] * c_o[i] * c_o[i] for i in pos), F(0)), sum((w[i] * c_o[i] for i in pos), F(0)),
        sum((w[j] * d_o[j] * d_o[j] for j in neg), F(0)),
        sum((w[j] * d_o[j] for j in neg), F(0)))) == 0.0


def test_sortable_keys_widen_unsigned_and_refuse_others():
    """Kills: widening to int64 (keys >= 2**63 turn negative, the order breaks) and dropping
    the dtype check."""
    keys = np.array([1, 2 ** 63 + 5, 2 ** 64 - 1], dtype=np.uint64)
    out = sortable_keys(keys)
    assert out.dtype == np.uint64 and list(np.argsort(out, kind="stable")) == [0, 1, 2]
    assert sortable_keys(np.array([3, 1], dtype=np.uint32)).dtype == np.uint64
    with pytest.raises(TypeError, match="unsigned"):
        sortable_keys(np.array([1.0, 2.0]))


# ---------------------------------------------------------------- U-statistic Bernstein bounds

def _bernstein_rejects(theta, estimate, k, log_term):
    """f(theta) > 0 where Bernstein's bound with sigma2 = theta (1 - theta) rejects theta."""
    d = abs(estimate - theta)
    return k * d * d - log_term * (2 * theta * (1 - theta) + 2 * d / 3)


@pytest.mark.parametrize("estimate,size_x,size_y,confidence", [
    (0.8, 400, 1000, 0.95), (0.97, 30, 2000, 0.9), (0.1, 50, 45, 0.99), (0.5, 7, 9, 0.95),
    (1.0, 120, 80, 0.95)])
def test_ustatistic_intervals_solve_bernstein_by_root_finding(estimate, size_x, size_y,
                                                               confidence):
    """The adaptive interval's ends are the roots of k d^2 = L (2 theta (1 - theta) + 2 d / 3),
    found here by brentq; the bound interval is estimate -/+ t with k t^2 = L (1/2 + 2t/3).
    k = min(size_x, size_y). Kills: k = max, the bound's denominator, the quadratic's a, the up
    and down roots swapped, low from the up root."""
    k = min(size_x, size_y)
    log_term = math.log(2 / (1 - confidence))
    t = optimize.brentq(lambda t: k * t * t - log_term * (0.5 + 2 * t / 3), 0, 10, xtol=1e-15)
    low, high = fastbias.ustatistic_bernstein_interval(estimate, size_x, size_y,
                                                       confidence=confidence, variance="bound")
    assert low == pytest.approx(max(0.0, estimate - t), abs=1e-12)
    assert high == pytest.approx(min(1.0, estimate + t), abs=1e-12)
    f = lambda th: _bernstein_rejects(th, estimate, k, log_term)
    want_low = 0.0 if f(0.0) <= 0 else optimize.brentq(f, 0.0, min(estimate, 1 - 1e-9), xtol=1e-15)
    want_high = 1.0 if f(1.0) <= 0 else optimize.brentq(f, max(estimate, 1e-9), 1.0, xtol=1e-15)
    low, high = fastbias.ustatistic_bernstein_interval(estimate, size_x, size_y,
                                                       confidence=confidence)
    assert low == pytest.approx(want_low, abs=1e-12)
    assert high == pytest.approx(want_high, abs=1e-12)


def test_ustatistic_edges():
    """An empty sample: NaN; an estimate above 1 refused; sigma2 above 1/4 refused; the minimum
    samples the smallest k whose bound half-width is below the gap (found by counting up).
    Kills: k >= 0 accepted, the estimate's range, the sigma2 cap, gamma in min_samples."""
    low, high = fastbias.ustatistic_bernstein_interval(np.array([0.7, 0.7]), [0, 10], [5, 10])
    assert np.isnan(low[0]) and np.isnan(high[0]) and not np.isnan(low[1])
    with pytest.raises(ValueError, match="estimate"):
        fastbias.ustatistic_bernstein_interval(1.2, 10, 10)
    with pytest.raises(ValueError, match="sigma2"):
        fastbias.ustatistic_min_samples(0.1, sigma2=0.3)
    for gap, sigma2 in ((0.05, 0.25), (0.2, 0.1), (0.01, 0.25)):
        log_term = math.log(2 / 0.05)
        k = 1
        while (2 * log_term / 3 + math.sqrt((2 * log_term / 3) ** 2 + 8 * k * sigma2 * log_term)
               ) / (2 * k) >= gap:
            k += 1
        assert fastbias.ustatistic_min_samples(gap, sigma2=sigma2) == k


# ---------------------------------------------------------------- out of core

def _delong_se(xs, wx, ys, wy):
    got = _delong_pair(xs, xs, wx, ys, ys, wy)
    return None if got is None or got[2] is None else math.sqrt(got[2])


@pytest.mark.parametrize("policy", ["background", "exclude"])
@pytest.mark.parametrize("batch_rows,bucket_rows", [(3, 4), (1000, 1000)])
def test_streamed_delong_se_with_weights_scaled_back(batch_rows, bucket_rows, policy, tmp_path):
    """Streamed DeLong standard errors with weights whose largest is 3 (chunks get them divided
    by 2, then multiplied back in chunked.py) and heavy ties (one-score chunks: with_tied_extras)
    equal DeLong from the paper; under "exclude" (rows of no subgroup value in no cell) the
    overall AUC's from the chunks' sums of all rows. Kills the mutants dropping weight_scale in
    counted_chunk's extras and all-rows sums, in with_tied_extras' backgrounds and class totals,
    and the cell columns swapped."""
    rng = np.random.default_rng(21)
    n = 80
    df = pd.DataFrame({"y": (rng.random(n) < 0.5).astype(float),
                       "s": rng.integers(0, 5, n) / 4,
                       "g": np.where(rng.random(n) < 0.2, np.nan,
                                     (rng.random(n) < 0.5).astype(float)),
                       "w": rng.choice([0.5, 1.0, 1.5, 3.0], n)})
    path = tmp_path / "x.csv"
    df.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                    sample_weight="w", ci="delong", batch_rows=batch_rows,
                                    missing_subgroup=policy,
                                    bucket_rows=bucket_rows, n_jobs=1)
    table = res.table
    y = df.y.to_numpy() > 0.5
    s = [F(float(v)) for v in df.s]
    w = [F(float(v)) for v in df.w]
    member = df.g.to_numpy() > 0.5
    annotated = ~df.g.isna().to_numpy() if policy == "exclude" else np.ones(n, dtype=bool)
    row = table.iloc[0]
    for metric, (xr, yr, _) in _samples(y, member).items():
        xr, yr = [i for i in xr if annotated[i]], [i for i in yr if annotated[i]]
        want = _delong_se([s[i] for i in xr], [w[i] for i in xr], [s[i] for i in yr],
                          [w[i] for i in yr])
        assert row[f"{metric}_se"] == pytest.approx(want, rel=1e-9), metric
    pos = [i for i in range(n) if y[i]]
    neg = [i for i in range(n) if not y[i]]
    want = _delong_se([s[i] for i in pos], [w[i] for i in pos], [s[i] for i in neg],
                      [w[i] for i in neg])
    assert table.attrs["overall_auc_se"] == pytest.approx(want, rel=1e-9)


def _light_rows(sb):
    """Model a's scores and model b's ``sb`` on six rows, two of them of weight 1e-30: the
    overall row of the paired test, and the exact DeLong (var_a, var_b, cov) in Fractions."""
    y = np.array([1, 1, 1, 0, 0, 0])
    sa = np.array([0.5, 2, 2, 0, 0, 1.0])
    sb = np.array(sb)
    w = np.array([1e-30, 1, 1, 1, 1, 1e-30])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.delong_paired_test(y, sa, sb, sample_weight=w)
    pos, neg = [0, 1, 2], [3, 4, 5]
    fr = lambda v, rows: [F(float(v[i])) for i in rows]
    _, _, var_a, var_b, cov = _delong_pair(fr(sa, pos), fr(sb, pos), fr(w, pos),
                                           fr(sa, neg), fr(sb, neg), fr(w, neg))
    return res.loc[("overall", "overall_auc")], var_a, var_b, cov


def test_paired_standard_error_is_not_zero_where_the_exact_variance_is_not():
    """Weights of 1e-30 beside 1s: every float placement is the same (2.0), but the exact ones
    differ by 1e-30, so DeLong's exact variance is positive (worked out here in Fractions). A
    standard error of exactly 0 would claim every placement alike; the test must give NaN or a
    value within 1% of the exact one. Kills the mutant returning 0 whenever the float variance
    is 0, whatever its rounding bound (observed se_a = 0.0 there, expected NaN or 5e-46), and
    the mutant skipping a side whose float terms are all alike where the sums are not exact."""
    row, var_a, var_b, _ = _light_rows([0.5, 2, 3, 0, 0.1, 1.0])
    for col, var in (("se_a", var_a), ("se_b", var_b)):
        assert var > 0
        exact = math.sqrt(float(var))
        got = row[col]
        assert np.isnan(got) or got == pytest.approx(exact, rel=0.01, abs=0), (col, got, exact)


@pytest.mark.parametrize("sb", [[1.5, 2, 2, 0, 0, 1.0],     # b puts the light positive above
                                [1.0, 2, 2, 0, 0, 1.0]],    # b ties it with the light negative
                         ids=["reordered", "tied"])
def test_paired_difference_se_is_not_zero_where_the_models_order_rows_differently(sb):
    """Model b orders a pair of rows of weight 1e-30 differently from model a (reversed, or tied
    where a is not): every float placement difference a - b is exactly 0 (1e-30 is lost beside
    2), but the exact placements differ, so the exact variance of the difference (Fractions
    here) is positive (standard errors 5e-46 and 2.5e-46) and [0, 0] is no interval of it. The test
    must give NaN or the exact standard error within 1%. Kills the mutants that drop the
    same-order check, ignore b's order, or ignore the ties in it (observed difference_se 0.0,
    interval [0, 0], z 0, p 1)."""
    row, var_a, var_b, cov = _light_rows(sb)
    var_d = var_a + var_b - 2 * cov
    assert var_d > 0
    exact = math.sqrt(float(var_d))
    got = row["difference_se"]
    assert np.isnan(got) or got == pytest.approx(exact, rel=0.01, abs=0), (got, exact)
    if np.isnan(got):
        assert np.isnan(row["difference_low"]) and np.isnan(row["p_value"])
