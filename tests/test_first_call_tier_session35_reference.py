"""An independent review's tests (2026-11-27) of the first-call numpy tier
(fastbias/sweep/first_call.py, fastbias/intervals/first_call.py, threshold_counts_in_numpy)
against the compiled kernels and independent references (Fractions over explicit pairs,
brute-force counts, the weighted DeLong variance in exact rationals).

The tier is forced in-process as tests/test_first_call_tier_reference.py does (every kernel looks
uncompiled, no background child ever finishes); the kernels' answer is the same call with
FASTBIAS_FIRST_CALL=0. The review found the tier and the kernels alike; these tests pin what held
(tier == kernels, bit for bit unweighted, and == the exact reference), including the last
sessions' kernel-side changes (DeLong's background W - 1 guard, the bootstrap final metric
without intersections, the mirrored threshold-gap Bernstein costs, the weight-scale refusals).
"""
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from tests.test_first_call_tier_reference import run_both


def pair_prob(a, b, wa=None, wb=None):
    wa = [1] * len(a) if wa is None else wa
    wb = [1] * len(b) if wb is None else wb
    num = den = Fraction(0)
    for x, u in zip(a, wa):
        for z, v in zip(b, wb):
            p = Fraction(u) * Fraction(v)
            den += p
            num += p if x > z else p / 2 if x == z else 0
    return None if den == 0 else num / den


def exact_metrics(y, s, g):
    y, g = np.asarray(y, bool), np.asarray(g, bool)
    cell = lambda mask: [float(v) for v in s[mask]]  # noqa: E731
    sn, sp, bn, bp = cell(g & ~y), cell(g & y), cell(~g & ~y), cell(~g & y)
    out = {"subgroup_auc": pair_prob(sp, sn), "bpsn_auc": pair_prob(bp, sn),
           "bnsp_auc": pair_prob(sp, bn)}
    x = pair_prob(bn, sn)
    out["negative_aeg"] = None if x is None else Fraction(1, 2) - x
    x = pair_prob(bp, sp)
    out["positive_aeg"] = None if x is None else Fraction(1, 2) - x
    return out


def assert_frames_identical(a, b):
    assert list(a.columns) == list(b.columns) and list(a.index) == list(b.index)
    for c in a.columns:
        if pd.api.types.is_numeric_dtype(a[c]) and not pd.api.types.is_bool_dtype(a[c]):
            np.testing.assert_array_equal(a[c].to_numpy(float), b[c].to_numpy(float), err_msg=c)
        else:
            assert a[c].equals(b[c]), c


def tied_data(seed, n=300):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = (rng.integers(0, 5, n) / 4).astype(np.float32)
    s[rng.random(n) < 0.1] = -0.0
    g = np.column_stack([np.zeros(n, bool), rng.random(n) < 0.3, rng.random(n) < 0.95,
                         np.ones(n, bool), np.zeros(n, bool)])
    g[np.flatnonzero(y)[:3], 4] = True  # a subgroup of positives only
    return y, s, g


@pytest.mark.parametrize("seed", [0, 1])
def test_tier_point_estimates_exact_and_same_nan_warning_pattern(seed):
    y, s, g = tied_data(seed, 120)
    (t, te, tw, req), (k, ke, kw, _) = run_both(lambda: fastbias.bias_metrics(y, s, g))
    assert te is None and ke is None and req == ["counting"]
    assert tw == kw and tw  # the same UndefinedMetricWarning (empty / one-class subgroups)
    assert_frames_identical(t, k)
    for j in range(g.shape[1]):
        for metric, v in exact_metrics(y, s, g[:, j]).items():
            got = t.iloc[j][metric]
            assert np.isnan(got) if v is None else got == float(v), (j, metric, got, v)


def test_tier_exclude_intersections_bootstrap_equals_kernels_and_exact():
    rng = np.random.default_rng(11)
    n = 400
    y = rng.random(n) < 0.4
    df = pd.DataFrame({"label": np.where(y, "tox", "ok"),
                       "m": (rng.integers(0, 7, n) / 6).astype(np.float64)})
    cols = {}
    for j, p in enumerate((0.3, 0.5)):
        col = (rng.random(n) < p).astype(float)
        col[rng.random(n) < 0.25] = np.nan
        cols[f"id<{j}>"] = col
        df[f"id<{j}>"] = col
    kw = dict(label="label", scores="m", subgroups=list(cols), pos_label="tox",
              missing_subgroup="exclude", intersections=2, ci="bootstrap", n_boot=25,
              random_state=5)
    (t, te, tw, req), (k, ke, kwarn, _) = run_both(lambda: fastbias.evaluate(df, **kw))
    assert te is None and ke is None and "bootstrap" in req and tw == kwarn
    # the same replicates (same seed): every interval bit for bit, the final metric's too
    assert_frames_identical(t.table, k.table)
    assert t == k
    s = df["m"].to_numpy()
    col = cols["id<1>"]
    known = ~np.isnan(col)
    ref = exact_metrics(y[known], s[known], col[known] >= 0.5)
    table = t.for_model("m")
    for metric, v in ref.items():
        assert table.loc["id<1>", metric] == float(v), metric


def test_tier_threshold_counts_and_gap_intervals_equal_brute_force_and_kernels():
    y, s, g = tied_data(3, 250)
    thr = [0.0, 0.25, 0.5, 1.0]
    (t, te, tw, req), (k, ke, kw, _) = run_both(lambda: fastbias.threshold_metrics(
        y, s, g, thresholds=thr, gap_interval="bernstein"))
    assert te is None and ke is None and "thresholds" in req and tw == kw
    assert_frames_identical(t, k)
    for th in thr:
        pred = s >= np.float32(th)
        for j in (1, 2):
            row = t.loc[(th, t.index.get_level_values(1)[j])]
            sub, bg = g[:, j], ~g[:, j]
            assert row["subgroup_tp"] == int(np.sum(pred & y & sub))
            assert row["subgroup_fp"] == int(np.sum(pred & ~y & sub))
            assert row["background_tp"] == int(np.sum(pred & y & bg))
            assert row["background_fp"] == int(np.sum(pred & ~y & bg))
            if np.sum(~y & sub) and np.sum(~y & bg):
                gap = Fraction(int(np.sum(pred & ~y & sub)), int(np.sum(~y & sub))) - Fraction(
                    int(np.sum(pred & ~y & bg)), int(np.sum(~y & bg)))
                assert row["fpr_gap"] == pytest.approx(float(gap), rel=1e-15, abs=1e-16)


def _exact_var(X, Y):
    wx, wy = sum(w for _, w in X), sum(w for _, w in Y)
    if wx <= 1 or wy <= 1:
        return None
    k = lambda a, b: Fraction(1) if a > b else Fraction(1, 2) if a == b else Fraction(0)  # noqa
    vx = [sum(w * k(a, b) for b, w in Y) / wy for a, _ in X]
    vy = [sum(w * k(a, b) for a, w in X) / wx for b, _ in Y]
    th = sum(w * v for (_, w), v in zip(X, vx)) / wx
    return (sum(w * (v - th) ** 2 for (_, w), v in zip(X, vx)) / (wx * (wx - 1))
            + sum(w * (v - th) ** 2 for (_, w), v in zip(Y, vy)) / (wy * (wy - 1)))


@pytest.mark.parametrize("T,eps", [(1e4, 3e-12), (1e9, 1e-7)])
def test_tier_delong_background_just_over_one_within_one_percent(T, eps):
    # a background of weight 1 + eps beside a subgroup class of weight T (the kernels' W - 1
    # guard judges it by its class's total): the tier gives the same, within 1% of exact or NaN
    y = np.array([1] * 6 + [0] * 6)
    g = np.array([1] * 4 + [0, 0] + [1] * 3 + [0] * 3, bool)
    s = np.array([.1, .5, .7, .9, .35, .65, .2, .4, .8, .3, .6, .95])
    w = np.array([0.3 * T, 0.2 * T, 0.25 * T, 0.25 * T + 0.3, 0.3, 0.7 + eps,
                  1, 2, 1.5, 1, 2, 1.5])
    (t, te, _, req), (k, ke, _, _) = run_both(lambda: fastbias.bias_metrics(
        y, s, {"g": g}, sample_weight=w, ci="delong"))
    assert te is None and ke is None and "delong" in req
    rows = lambda mask: [(Fraction(float(a)), Fraction(float(b))) for a, b in zip(s[mask], w[mask])]  # noqa
    for metric, (x, z) in {"bpsn_auc": (~g & (y == 1), g & (y == 0)),
                           "positive_aeg": (~g & (y == 1), g & (y == 1))}.items():
        exact = float(_exact_var(rows(x), rows(z))) ** 0.5
        for got in (t.iloc[0][metric + "_se"], k.iloc[0][metric + "_se"]):
            assert np.isnan(got) or abs(got - exact) <= 0.01 * exact, (metric, got, exact)


@pytest.mark.parametrize("kw", [dict(ci="delong"), dict(significance="holm")])
def test_tier_refuses_weights_out_of_scale_as_the_kernels_do(kw):
    rng = np.random.default_rng(8)
    n = 40
    y, s = rng.random(n) < 0.4, rng.integers(0, 4, n) / 3
    g = rng.random((n, 2)) < [0.3, 0.7]
    w = rng.random(n) * 1e100
    (_, te, _, _), (_, ke, _, _) = run_both(lambda: fastbias.bias_metrics(
        y, s, g, sample_weight=w, **kw))
    assert isinstance(te, ValueError) and str(te) == str(ke)
    assert "sample_weight" in str(te) and "too far from 1" in str(te) and "position" in str(te)
