"""An independent review's tests (2026-11-27): rows left out (nan_policy="omit", zero weights, missing identities).

Every test compares fastbias with a reference written here (brute-force pair counts in
fractions.Fraction, sklearn, plain numpy counts, plain Python CSV writing), or with fastbias on
rows dropped by hand before the call (the documented equivalence of nan_policy="omit" and of
rows of weight 0, docs/validation.md), never with numbers fastbias computed on the same input.

Found by review (failed before its fix): under nan_policy="omit" the HTML report counted a
row left out for a missing weight as a row "without a label" ("rows 120 (43 negative, 74
positive, 3 without a label)" with 2 unlabelled rows); it now says "2 without a label, 1
without a weight".

Checked and held (no defect): see the tests below; notes on documented behaviour that differs
between "weight 0" and "dropped" (permutation tests redraw rows, the 30-row rule counts rows,
bootstrap counts are indexed by row position) are in the report, not tested as defects.
"""
from __future__ import annotations

import json
import warnings
from fractions import Fraction
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.cli import main as cli_main

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ----------------------------------------------------------------------------- reference
def _pair_auc(neg, pos):
    """P(s(pos) > s(neg)) + 1/2 P(tie), pairs weighted w_i * w_j; None if no weight."""
    num = Fraction(0)
    den = Fraction(0)
    for sn, wn in neg:
        for sp, wp in pos:
            ww = wn * wp
            den += ww
            if sp > sn:
                num += ww
            elif sp == sn:
                num += ww / 2
    return None if den == 0 else num / den


def ref_metrics(y, s, member, universe=None, w=None):
    """The five metrics of one subgroup as Fractions (None = undefined)."""
    n = len(y)
    universe = np.ones(n, bool) if universe is None else np.asarray(universe, bool)
    w = [Fraction(1)] * n if w is None else [Fraction(float(x)) for x in w]
    sg_n, sg_p, bg_n, bg_p = [], [], [], []
    for i in range(n):
        if not universe[i]:
            continue
        item = (float(s[i]), w[i])
        if member[i]:
            (sg_p if y[i] else sg_n).append(item)
        else:
            (bg_p if y[i] else bg_n).append(item)
    out = {"subgroup_auc": _pair_auc(sg_n, sg_p), "bpsn_auc": _pair_auc(sg_n, bg_p),
           "bnsp_auc": _pair_auc(bg_n, sg_p)}
    a = _pair_auc(sg_n, bg_n)
    out["negative_aeg"] = None if a is None else Fraction(1, 2) - a
    a = _pair_auc(sg_p, bg_p)
    out["positive_aeg"] = None if a is None else Fraction(1, 2) - a
    out["counts"] = (len(sg_n), len(sg_p), len(bg_n), len(bg_p))
    return out


def ref_overall(y, s, w=None):
    n = len(y)
    w = [Fraction(1)] * n if w is None else [Fraction(float(x)) for x in w]
    neg = [(float(s[i]), w[i]) for i in range(n) if not y[i]]
    pos = [(float(s[i]), w[i]) for i in range(n) if y[i]]
    return _pair_auc(neg, pos)


def assert_row_matches(row, ref, *, weighted, where=""):
    for m in METRICS:
        got = row[m]
        want = ref[m]
        if want is None:
            assert np.isnan(got), f"{where} {m}: got {got}, want NaN"
        elif weighted:
            assert got == pytest.approx(float(want), rel=2**-45, abs=2**-60), \
                f"{where} {m}: got {got!r}, want {float(want)!r}"
        else:
            assert got == float(want), f"{where} {m}: got {got!r}, want {float(want)!r}"


def quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def caught(fn, *a, **k):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = fn(*a, **k)
    return out, rec


def assert_frames_identical(a, b):
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert set(a.attrs) == set(b.attrs)
    for k in a.attrs:
        va, vb = a.attrs[k], b.attrs[k]
        if isinstance(va, float) and np.isnan(va):
            assert isinstance(vb, float) and np.isnan(vb), k
        elif isinstance(va, (pd.DataFrame, pd.Series)):
            assert va.equals(vb), k
        else:
            assert va == vb, (k, va, vb)


def make_data(seed, n=60, n_groups=2, levels=6):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(float)
    s = rng.integers(0, levels, n) / (levels - 1)     # heavy ties
    w = rng.integers(0, 4, n).astype(float) + rng.integers(0, 2, n) * 0.5
    groups = {f"g{j}": rng.random(n) < 0.4 for j in range(n_groups)}
    return rng, y, s, w, groups


def punch_holes(rng, y, s, w, n_holes=6):
    """Missing label / NaN score / +-inf score / NaN weight at random rows; returns drop mask."""
    n = len(y)
    y, s, w = y.copy(), s.copy(), w.copy()
    rows = rng.choice(n, n_holes, replace=False)
    kinds = ["y", "snan", "sinf", "w", "sninf", "y"]
    for r, kind in zip(rows, kinds * 3):
        if kind == "y":
            y[r] = np.nan
        elif kind == "snan":
            s[r] = np.nan
        elif kind == "sinf":
            s[r] = np.inf
        elif kind == "sninf":
            s[r] = -np.inf
        else:
            w[r] = np.nan
    drop = np.isnan(y) | ~np.isfinite(s) | np.isnan(w)
    return y, s, w, drop


# ------------------------------------------------- nan_policy="omit" == dropping by hand
OPTIONS = [
    {},
    {"weights": True},
    {"ci": "delong"},
    {"ci": "delong", "weights": True},
    {"ci": "bootstrap", "n_boot": 30, "random_state": 7},
    {"ci": "bootstrap", "n_boot": 30, "random_state": 7, "weights": True},
    {"significance": "holm"},
    {"significance": "bh", "weights": True},
    {"intersections": 2},
    {"intersections": 2, "weights": True, "ci": "delong"},
]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_bias_metrics_omit_equals_manual_drop(seed, opts):
    rng, y, s, w, groups = make_data(seed, n=70, n_groups=3)
    y, s, w, drop = punch_holes(rng, y, s, w)
    opts = dict(opts)
    weighted = opts.pop("weights", False)
    if not weighted:
        w[np.isnan(w)] = 1.0
        drop = np.isnan(y) | ~np.isfinite(s)
    keep = ~drop
    kw = dict(opts, sample_weight=w if weighted else None)
    got = quiet(fastbias.bias_metrics, y, s, groups, nan_policy="omit", **kw)
    kw_ref = dict(opts, sample_weight=w[keep] if weighted else None)
    want = quiet(fastbias.bias_metrics, y[keep], s[keep],
                 {k: v[keep] for k, v in groups.items()}, **kw_ref)
    assert_frames_identical(got, want)
    # and the numbers are the brute-force ones on the kept rows
    for name in groups:
        ref = ref_metrics(y[keep] == 1, s[keep], groups[name][keep],
                          w=w[keep] if weighted else None)
        assert_row_matches(got.loc[name], ref, weighted=weighted, where=name)
    assert got.attrs["overall_auc"] == pytest.approx(
        float(ref_overall(y[keep] == 1, s[keep], w[keep] if weighted else None)), rel=1e-13)


@pytest.mark.parametrize("seed", range(4))
def test_overall_auc_omit_matches_sklearn_on_kept(seed):
    rng, y, s, w, _ = make_data(seed, n=50)
    y, s, w, drop = punch_holes(rng, y, s, w)
    keep = ~drop
    got = quiet(fastbias.overall_auc, y, s, sample_weight=w, nan_policy="omit")
    want = roc_auc_score(y[keep], s[keep], sample_weight=w[keep])
    assert got == pytest.approx(want, rel=1e-12)
    got_u = quiet(fastbias.overall_auc, y, s, nan_policy="omit")
    keep_u = ~(np.isnan(y) | ~np.isfinite(s))
    assert got_u == float(ref_overall(y[keep_u] == 1, s[keep_u]))


@pytest.mark.parametrize("container", ["nullable", "object", "masked", "list"])
def test_omit_missing_in_various_containers(container):
    y = [1, 0, None, 1, 0, 1, 0, 0, 1, 1]
    s = [0.9, 0.1, 0.5, None, 0.3, 0.7, 0.3, 0.8, 0.2, 0.6]
    w = [1, 2, 1, 1, None, 3, 1, 2, 1, 1]
    keep = np.array([a is not None and b is not None and c is not None
                     for a, b, c in zip(y, s, w)])
    if container == "nullable":
        Y, S, W = (pd.array(y, dtype="Int64"), pd.array(s, dtype="Float64"),
                   pd.array(w, dtype="Int64"))
    elif container == "object":
        Y, S, W = (np.array(y, dtype=object), np.array(s, dtype=object),
                   np.array(w, dtype=object))
    elif container == "masked":
        Y = np.ma.masked_array([v if v is not None else -1 for v in y],
                               mask=[v is None for v in y]).astype(float)
        S = np.ma.masked_array([v if v is not None else -1 for v in s],
                               mask=[v is None for v in s])
        W = np.ma.masked_array([v if v is not None else -1 for v in w],
                               mask=[v is None for v in w]).astype(float)
    else:
        Y, S, W = y, s, w
    g = {"g": np.array([1, 1, 0, 0, 1, 0, 1, 0, 1, 0], bool)}
    t, rec = caught(fastbias.bias_metrics, Y, S, g, sample_weight=W, nan_policy="omit")
    yk = np.array([v for v, k in zip(y, keep) if k]) == 1
    sk = np.array([v for v, k in zip(s, keep) if k], float)
    wk = np.array([v for v, k in zip(w, keep) if k], float)
    ref = ref_metrics(yk, sk, g["g"][keep], w=wk)
    assert_row_matches(t.loc["g"], ref, weighted=True)
    msgs = [str(r.message) for r in rec if r.category is fastbias.OmittedRowsWarning]
    assert len(msgs) == 1
    assert "dropped 3 of 10 rows" in msgs[0]


def test_omit_warning_counts_each_column():
    n = 20
    y = np.tile([0.0, 1.0], n // 2)
    s = np.linspace(0, 1, n)
    w = np.ones(n)
    y[[2, 11]] = np.nan                    # 2 missing labels
    s[[4]] = np.nan                        # 1 NaN score
    s[[6, 7, 13]] = [np.inf, -np.inf, np.inf]  # 3 infinite scores
    w[[9, 15]] = np.nan                    # 2 missing weights
    g = {"g": np.arange(n) % 3 == 0}
    _, rec = caught(fastbias.bias_metrics, y, s, g, sample_weight=w, nan_policy="omit")
    msgs = [str(r.message) for r in rec if r.category is fastbias.OmittedRowsWarning]
    assert len(msgs) == 1, msgs
    m = msgs[0]
    assert "dropped 8 of 20 rows" in m, m
    assert "y_true: 2 missing" in m, m
    assert "y_score: 4 (1 NaN or missing, 3 infinite)" in m, m
    assert "sample_weight: 2 NaN or missing" in m, m


def test_omit_warning_overlapping_rows_counts_rows_once():
    y = np.array([np.nan, 1, 0, 1, 0, 1, 0, 1.0])
    s = np.array([np.nan, np.nan, 0.2, 0.4, 0.1, 0.9, 0.3, 0.6])
    g = {"g": np.array([1, 0, 1, 0, 1, 0, 1, 1], bool)}
    _, rec = caught(fastbias.bias_metrics, y, s, g, nan_policy="omit")
    msgs = [str(r.message) for r in rec if r.category is fastbias.OmittedRowsWarning]
    assert len(msgs) == 1
    assert "dropped 2 of 8 rows" in msgs[0], msgs[0]


def test_omit_no_warning_when_nothing_dropped():
    rng, y, s, w, groups = make_data(3, n=30)
    _, rec = caught(fastbias.bias_metrics, y, s, groups, nan_policy="omit")
    assert not [r for r in rec if r.category is fastbias.OmittedRowsWarning]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("interval", ["wilson", None])
def test_threshold_metrics_omit_equals_manual_drop_and_counts(weighted, interval):
    rng, y, s, w, groups = make_data(11, n=80)
    y, s, w, drop = punch_holes(rng, y, s, w)
    if not weighted:
        w[np.isnan(w)] = 1
        drop = np.isnan(y) | ~np.isfinite(s)
    keep = ~drop
    th = [0.0, 0.4, 0.6, 1.0]
    got = quiet(fastbias.threshold_metrics, y, s, groups, thresholds=th, nan_policy="omit",
                sample_weight=w if weighted else None, interval=interval)
    want = quiet(fastbias.threshold_metrics, y[keep], s[keep],
                 {k: v[keep] for k, v in groups.items()}, thresholds=th,
                 sample_weight=w[keep] if weighted else None, interval=interval)
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    # counts against plain numpy on the kept rows
    yk, sk = y[keep] == 1, s[keep]
    wk = w[keep] if weighted else np.ones(keep.sum())
    for t in th:
        for name, mask in groups.items():
            m = mask[keep]
            row = got.loc[(t, name)]
            pred = sk >= t
            assert row["subgroup_tp"] == wk[m & yk & pred].sum()
            assert row["subgroup_fp"] == wk[m & ~yk & pred].sum()
            assert row["background_tp"] == wk[~m & yk & pred].sum()
            assert row["background_fp"] == wk[~m & ~yk & pred].sum()
            assert row["subgroup_negatives"] == wk[m & ~yk].sum()


# ---------------------------------------------- errors after the drop name input positions
def test_negative_weight_after_omit_names_input_position():
    y = np.array([np.nan, np.nan, 1, 0, 1, 0, 1, 0, 1, 0])
    s = np.array([0.1, np.nan, 0.2, 0.3, 0.4, 0.5, np.nan, 0.7, 0.8, 0.9])
    w = np.array([1, 1, 1, 1, 1, 1, 1, -0.5, 1, 1.0])
    g = {"g": np.arange(10) % 2 == 0}
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.bias_metrics, y, s, g, sample_weight=w, nan_policy="omit")
    msg = str(exc.value)
    assert "sample_weight" in msg and "-0.5" in msg
    assert "position 7" in msg, msg


def test_nonbinary_label_after_omit_names_input_position():
    y = np.array([np.nan, 1, np.nan, 0, 1, 0, 0.5, 0, 1, 0])
    s = np.array([np.nan, 0.1, 0.2, np.inf, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    g = {"g": np.arange(10) % 2 == 0}
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.bias_metrics, y, s, g, nan_policy="omit")
    msg = str(exc.value)
    assert "0.5" in msg and "position 6" in msg, msg


def test_label_outside_range_after_omit_in_evaluate_names_input_position():
    df = pd.DataFrame({"y": [np.nan, np.nan, np.nan, 1, 0, 2.0, 0, 1],
                       "s": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8],
                       "g": [1.0, 0, 1, 0, 1, 0, 1, 0]}, index=list("abcdefgh"))
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"], nan_policy="omit")
    msg = str(exc.value)
    assert "2.0" in msg and "position 5" in msg, msg


def test_negative_weight_after_omit_in_evaluate_names_input_position():
    df = pd.DataFrame({"y": [1, 0, 1, 0, 1, 0, 1, 0.0],
                       "s": [np.nan, np.nan, 0.3, np.nan, 0.5, 0.6, 0.7, 0.8],
                       "w": [1, 1, 1, 1, 1, -2.0, 1, 1],
                       "g": [1.0, 0, 1, 0, 1, 0, 1, 0]})
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["g"],
              sample_weight="w", nan_policy="omit")
    msg = str(exc.value)
    assert "-2" in msg and "position 5" in msg, msg


def test_light_weight_for_delong_after_omit_names_input_position():
    # a weight below 2**-90 of its class's total for DeLong: refused, by input position
    n = 12
    y = np.array([0, 1] * 6, float)
    s = np.linspace(0, 1, n)
    w = np.ones(n) * 1e40
    s[[0, 1, 2]] = np.nan
    w[9] = 1e-30                          # a positive row (y[9] == 1)
    g = {"g": np.arange(n) % 3 == 0}
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.threshold_metrics, y, s, g, sample_weight=w, nan_policy="omit")
    msg = str(exc.value)
    assert "position 9" in msg, msg


def test_infinite_weight_still_raises_under_omit():
    y = np.array([1, 0, 1, 0.0]); s = np.array([0.1, 0.2, 0.3, 0.4])
    w = np.array([1, np.inf, 1, 1.0])
    with pytest.raises(ValueError, match="sample_weight"):
        quiet(fastbias.bias_metrics, y, s, {"g": np.array([1, 0, 1, 0], bool)},
              sample_weight=w, nan_policy="omit")


# --------------------------------------------------------- evaluate: per-model rows, options
def _frame(seed, n=90, nan_identity=True):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "y": rng.integers(0, 5, n) / 4,               # fractions, threshold 0.5
        "m1": rng.integers(0, 7, n) / 6,
        "m2": rng.integers(0, 7, n) / 6,
        "w": rng.integers(0, 4, n).astype(float),
        "a": rng.integers(0, 3, n) / 2,
        "b": rng.integers(0, 3, n) / 2,
    })
    if nan_identity:
        for col in ("a", "b"):
            df.loc[rng.random(n) < 0.25, col] = np.nan
    return rng, df


def _model_rows(res, model):
    t = res.table
    return t[t["model"] == model].set_index("subgroup")


@pytest.mark.parametrize("missing", ["background", "exclude"])
@pytest.mark.parametrize("weighted", [False, True])
def test_evaluate_omit_per_model_against_reference(missing, weighted):
    rng, df = _frame(21)
    n = len(df)
    df.loc[[3, 17], "y"] = np.nan
    df.loc[[5, 40], "m1"] = np.nan
    df.loc[[8], "m1"] = np.inf
    df.loc[[9, 41, 60], "m2"] = np.nan
    if weighted:
        df.loc[[12], "w"] = np.nan
    res, rec = caught(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                      sample_weight="w" if weighted else None, missing_subgroup=missing,
                      nan_policy="omit")
    y = df["y"].to_numpy()
    for model in ("m1", "m2"):
        s = df[model].to_numpy()
        keep = ~np.isnan(y) & np.isfinite(s)
        if weighted:
            keep &= ~np.isnan(df["w"].to_numpy())
        assert res.settings["omitted_rows"][model] == n - keep.sum()
        yk, sk = y[keep] >= 0.5, s[keep]
        wk = df["w"].to_numpy()[keep] if weighted else None
        rows = _model_rows(res, model)
        for g in ("a", "b"):
            col = df[g].to_numpy()[keep]
            member = col >= 0.5
            universe = ~np.isnan(col) if missing == "exclude" else None
            ref = ref_metrics(yk, sk, member, universe=universe, w=wk)
            assert_row_matches(rows.loc[g], ref, weighted=weighted, where=f"{model}/{g}")
            sn, sp, bn, bp = ref["counts"]
            assert (rows.loc[g, "subgroup_negatives"], rows.loc[g, "subgroup_positives"],
                    rows.loc[g, "background_negatives"],
                    rows.loc[g, "background_positives"]) == (sn, sp, bn, bp)
        want_overall = float(ref_overall(yk, sk, wk))
        assert res.overall_auc[model] == pytest.approx(want_overall, rel=1e-13)
    msgs = [str(r.message) for r in rec if r.category is fastbias.OmittedRowsWarning]
    assert len(msgs) == 1
    assert "label column 'y': 2 missing" in msgs[0], msgs[0]
    assert "score column 'm1': 3 (2 NaN or missing, 1 infinite)" in msgs[0], msgs[0]
    assert "score column 'm2': 3 (3 NaN or missing, 0 infinite)" in msgs[0], msgs[0]


@pytest.mark.parametrize("opts", [
    {"ci": "delong"},
    {"ci": "bootstrap", "n_boot": 20, "random_state": 3},
    {"significance": "holm"},
    {"intersections": 2},
    {"thresholds": [0.3, 0.5]},
], ids=lambda o: next(iter(o)))
@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_evaluate_omit_single_model_equals_manual_drop(opts, missing):
    rng, df = _frame(31)
    df.loc[[2, 30], "y"] = np.nan
    df.loc[[7, 8, 44], "m1"] = [np.nan, -np.inf, np.nan]
    df.loc[[50], "w"] = np.nan
    kw = dict(label="y", scores=["m1"], subgroups=["a", "b"], sample_weight="w",
              missing_subgroup=missing, **opts)
    got = quiet(fastbias.evaluate, df, nan_policy="omit", **kw)
    kept = df.dropna(subset=["y", "w"])
    kept = kept[np.isfinite(kept["m1"])].reset_index(drop=True)
    want = quiet(fastbias.evaluate, kept, **kw)
    pd.testing.assert_frame_equal(got.table, want.table, check_exact=True)
    assert got.overall_auc.equals(want.overall_auc)
    if "thresholds" in opts:
        pd.testing.assert_frame_equal(got.thresholds, want.thresholds, check_exact=True)


# ---------------------------------------------------------------- zero weights vs dropped
@pytest.mark.parametrize("seed", range(3))
def test_zero_weight_rows_equal_dropped_metrics_and_delong(seed):
    rng, y, s, w, groups = make_data(seed + 40, n=70)
    w = np.where(rng.random(70) < 0.25, 0.0, w + 1)
    nz = w > 0
    got = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, ci="delong")
    want = quiet(fastbias.bias_metrics, y[nz], s[nz], {k: v[nz] for k, v in groups.items()},
                 sample_weight=w[nz], ci="delong")
    cols = METRICS + [f"{m}_{x}" for m in METRICS for x in ("low", "high", "se")] + [
        "subgroup_negative_weight", "subgroup_positive_weight", "background_negative_weight",
        "background_positive_weight"]
    for c in cols:
        np.testing.assert_allclose(got[c].to_numpy(float), want[c].to_numpy(float),
                                   rtol=1e-12, atol=1e-15, err_msg=c)
    for name in groups:
        ref = ref_metrics(y == 1, s, groups[name], w=w)
        assert_row_matches(got.loc[name], ref, weighted=True, where=name)
    assert got.attrs["overall_auc_se"] == pytest.approx(want.attrs["overall_auc_se"], rel=1e-12)


@pytest.mark.parametrize("seed", range(2))
def test_zero_weight_rows_equal_dropped_threshold_metrics(seed):
    rng, y, s, w, groups = make_data(seed + 50, n=70)
    w = np.where(rng.random(70) < 0.3, 0.0, w + 1)
    nz = w > 0
    th = [0.0, 0.2, 0.6, 1.0]
    got = quiet(fastbias.threshold_metrics, y, s, groups, sample_weight=w, thresholds=th)
    want = quiet(fastbias.threshold_metrics, y[nz], s[nz], {k: v[nz] for k, v in groups.items()},
                 sample_weight=w[nz], thresholds=th)
    pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-13)


def test_cell_all_zero_weight_is_nan_not_noise():
    y = np.array([0, 0, 1, 1, 0, 1, 0, 1.0])
    s = np.array([0.1, 0.4, 0.35, 0.8, 0.3, 0.9, 0.2, 0.7])
    g = {"g": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)}
    w = np.array([0, 0, 1, 2, 1, 1, 3, 1.0])      # subgroup negatives weigh 0
    t = quiet(fastbias.bias_metrics, y, s, g, sample_weight=w)
    for m in ("subgroup_auc", "bpsn_auc", "negative_aeg"):
        assert np.isnan(t.loc["g", m]), m
    ref = ref_metrics(y == 1, s, g["g"], w=w)
    assert t.loc["g", "bnsp_auc"] == float(ref["bnsp_auc"])
    assert t.loc["g", "positive_aeg"] == float(ref["positive_aeg"])


def test_evaluator_zero_weight_equals_dropped():
    rng, y, s, w, groups = make_data(61, n=80)
    w = np.where(rng.random(80) < 0.3, 0.0, w + 1)
    nz = w > 0
    ev = fastbias.BiasEvaluator(y, groups, sample_weight=w)
    ev2 = fastbias.BiasEvaluator(y[nz], {k: v[nz] for k, v in groups.items()},
                                 sample_weight=w[nz])
    a = quiet(ev.final_metric, s)
    b = quiet(ev2.final_metric, s[nz])
    assert a == pytest.approx(b, rel=1e-13)


# ----------------------------------------------- missing identities: missing_subgroup="exclude"
def _identity_column(kind, member, missing):
    n = len(member)
    if kind == "boolean":
        return pd.array([None if missing[i] else bool(member[i]) for i in range(n)], dtype="boolean")
    if kind == "Int64":
        return pd.array([None if missing[i] else int(member[i]) for i in range(n)], dtype="Int64")
    if kind == "Float64":
        return pd.array([None if missing[i] else (0.75 if member[i] else 0.25) for i in range(n)],
                        dtype="Float64")
    if kind == "float_nan":
        return np.where(missing, np.nan, np.where(member, 0.6, 0.1))
    if kind == "object_none":
        return np.array([None if missing[i] else bool(member[i]) for i in range(n)], dtype=object)
    raise AssertionError(kind)


ID_KINDS = ["boolean", "Int64", "Float64", "float_nan", "object_none"]


@pytest.mark.parametrize("kind", ID_KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_exclude_identity_kinds_against_reference(kind, weighted):
    rng = np.random.default_rng(71)
    n = 80
    y = rng.random(n) < 0.45
    s = rng.integers(0, 8, n) / 7
    w = rng.integers(0, 4, n).astype(float)
    mem = {g: rng.random(n) < 0.4 for g in ("a", "b")}
    miss = {g: rng.random(n) < 0.3 for g in ("a", "b")}
    df = pd.DataFrame({"y": y.astype(float), "s": s, "w": w,
                       **{g: _identity_column(kind, mem[g], miss[g]) for g in mem}})
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "b"],
                missing_subgroup="exclude", sample_weight="w" if weighted else None)
    rows = _model_rows(res, "s")
    for g in mem:
        ref = ref_metrics(y, s, mem[g] & ~miss[g], universe=~miss[g], w=w if weighted else None)
        assert_row_matches(rows.loc[g], ref, weighted=weighted, where=f"{kind}/{g}")
        assert rows.loc[g, "subgroup_size"] == (mem[g] & ~miss[g]).sum()
    # overall AUC: of all the rows (docs/intervals.md, docs/significance.md)
    assert res.overall_auc["s"] == pytest.approx(
        float(ref_overall(y, s, w if weighted else None)), rel=1e-13)


@pytest.mark.parametrize("kind", ["float_nan", "boolean"])
def test_exclude_background_policy_counts_missing_as_background(kind):
    rng = np.random.default_rng(72)
    n = 60
    y = rng.random(n) < 0.5
    s = rng.integers(0, 6, n) / 5
    mem, miss = rng.random(n) < 0.4, rng.random(n) < 0.3
    df = pd.DataFrame({"y": y.astype(float), "s": s, "a": _identity_column(kind, mem, miss)})
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a"],
                missing_subgroup="background")
    ref = ref_metrics(y, s, mem & ~miss)
    assert_row_matches(_model_rows(res, "s").loc["a"], ref, weighted=False)


@pytest.mark.parametrize("missing", ["exclude", "background"])
@pytest.mark.parametrize("weighted", [False, True])
def test_intersections_under_missing_policy(missing, weighted):
    rng = np.random.default_rng(81)
    n = 120
    y = rng.random(n) < 0.45
    s = rng.integers(0, 9, n) / 8
    w = rng.integers(1, 4, n).astype(float)
    mem = {g: rng.random(n) < 0.5 for g in ("a", "b", "c")}
    miss = {g: rng.random(n) < 0.2 for g in ("a", "b", "c")}
    df = pd.DataFrame({"y": y.astype(float), "s": s, "w": w,
                       **{g: np.where(miss[g], np.nan, mem[g].astype(float)) for g in mem}})
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "b", "c"],
                missing_subgroup=missing, intersections=2,
                sample_weight="w" if weighted else None)
    rows = _model_rows(res, "s")
    for a, b in combinations("abc", 2):
        member = mem[a] & ~miss[a] & mem[b] & ~miss[b]
        universe = (~miss[a] & ~miss[b]) if missing == "exclude" else None
        ref = ref_metrics(y, s, member, universe=universe, w=w if weighted else None)
        name = f"{a} & {b}"
        if min(ref["counts"][:2]) == 0:
            assert name not in rows.index
            continue
        assert_row_matches(rows.loc[name], ref, weighted=weighted, where=name)
        assert tuple(rows.loc[name, ["subgroup_negatives", "subgroup_positives",
                                     "background_negatives", "background_positives"]]) == \
            ref["counts"]


def _write_csv(path, df):
    # plain Python writing: NaN as an empty field
    lines = [",".join(df.columns)]
    for row in df.itertuples(index=False):
        lines.append(",".join("" if (isinstance(v, float) and np.isnan(v)) else repr(float(v))
                              for v in row))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("weighted", [False, True])
def test_exclude_evaluate_csv_against_reference(tmp_path, weighted):
    rng, df = _frame(91, n=100)
    df["w"] = df["w"] + (0 if weighted else 1)
    path = tmp_path / "d.csv"
    _write_csv(path, df)
    res = quiet(fastbias.evaluate_csv, path, label="y", scores=["m1", "m2"],
                subgroups=["a", "b"], missing_subgroup="exclude",
                sample_weight="w" if weighted else None)
    y = df["y"].to_numpy() >= 0.5
    w = df["w"].to_numpy() if weighted else None
    for model in ("m1", "m2"):
        s = df[model].to_numpy()
        rows = _model_rows(res, model)
        for g in ("a", "b"):
            col = df[g].to_numpy()
            ref = ref_metrics(y, s, col >= 0.5, universe=~np.isnan(col), w=w)
            assert_row_matches(rows.loc[g], ref, weighted=weighted, where=f"csv {model}/{g}")
        assert res.overall_auc[model] == pytest.approx(float(ref_overall(y, s, w)), rel=1e-13)


def _cli(capsys, *args):
    try:
        status = cli_main(["report", *map(str, args), "--progress", "never", "--force"])
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def _cli_rows(report):
    return {(m["name"], r["subgroup"]): r for m in report["models"] for r in m["subgroups"]}


@pytest.mark.parametrize("missing", ["exclude", "background"])
def test_cli_nan_policy_omit_and_exclude_against_reference(tmp_path, capsys, missing):
    rng, df = _frame(101, n=90)
    df["w"] = df["w"] + 1
    df.loc[[4, 33], "y"] = np.nan
    df.loc[[6, 7], "m1"] = np.nan
    df.loc[[70], "m2"] = np.nan
    df.loc[[12], "w"] = np.nan
    path = tmp_path / "d.csv"
    _write_csv(path, df)
    status, _, err = _cli(capsys, path, "--label", "y", "--scores", "m1", "m2", "--subgroups",
                          "a", "b", "--missing-subgroup", missing, "--weight", "w",
                          "--nan-policy", "omit", "--out", tmp_path / "r.json")
    assert status == 0, err
    assert "score column 'm1': 2" in err and "label column 'y': 2" in err, err
    rep = _cli_rows(json.loads((tmp_path / "r.json").read_text()))
    y = df["y"].to_numpy()
    w = df["w"].to_numpy()
    for model in ("m1", "m2"):
        s = df[model].to_numpy()
        keep = ~np.isnan(y) & ~np.isnan(s) & ~np.isnan(w)
        for g in ("a", "b"):
            col = df[g].to_numpy()[keep]
            universe = ~np.isnan(col) if missing == "exclude" else None
            ref = ref_metrics(y[keep] >= 0.5, s[keep], col >= 0.5, universe=universe, w=w[keep])
            row = rep[(model, g)]
            for m in METRICS:
                want = ref[m]
                got = row[m]
                if want is None:
                    assert got is None or np.isnan(got), (model, g, m, got)
                else:
                    assert got == pytest.approx(float(want), rel=1e-12), (model, g, m)


# --------------------------------------------------------------------- property (hypothesis)
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_property_omit_equals_reference_on_kept_rows(data):
    n = data.draw(st.integers(4, 18))
    y = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, np.nan]), min_size=n, max_size=n)))
    s = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, np.nan, np.inf, -np.inf]),
                                    min_size=n, max_size=n)))
    w = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, np.nan]),
                                    min_size=n, max_size=n)))
    g = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    keep = ~np.isnan(y) & np.isfinite(s) & ~np.isnan(w)
    if not keep.any():
        with pytest.raises(ValueError, match="leaves no rows"):
            quiet(fastbias.bias_metrics, y, s, {"g": g}, sample_weight=w, nan_policy="omit")
        return
    t, rec = caught(fastbias.bias_metrics, y, s, {"g": g}, sample_weight=w, nan_policy="omit")
    ref = ref_metrics(y[keep] == 1, s[keep], g[keep], w=w[keep])
    assert_row_matches(t.loc["g"], ref, weighted=True)
    om = [str(r.message) for r in rec if r.category is fastbias.OmittedRowsWarning]
    if keep.all():
        assert not om
    else:
        assert len(om) == 1 and f"dropped {(~keep).sum()} of {n} rows" in om[0], om


# ------------------------------------------------ sensitive features with missing values
@pytest.mark.parametrize("missing", ["exclude", "background"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sensitive_features_missing_values_against_reference(missing, weighted):
    rng = np.random.default_rng(111)
    n = 150
    y = rng.random(n) < 0.45
    s = rng.integers(0, 9, n) / 8
    w = rng.integers(1, 4, n).astype(float)
    race = np.array(rng.choice(["x", "y", "z"], n), dtype=object)
    gender = np.array(rng.choice(["f", "m"], n), dtype=object)
    race[rng.random(n) < 0.2] = None
    gender[rng.random(n) < 0.2] = None
    df = pd.DataFrame({"y": y.astype(float), "s": s, "w": w, "race": race, "gender": gender})
    res = quiet(fastbias.evaluate, df, label="y", scores="s", sensitive_features=["race", "gender"],
                missing_subgroup=missing, sample_weight="w" if weighted else None)
    rows = _model_rows(res, "s")
    known_r = np.array([v is not None for v in race])
    known_g = np.array([v is not None for v in gender])
    checked = 0
    for r in ("x", "y", "z"):
        member = race == r
        universe = known_r if missing == "exclude" else None
        ref = ref_metrics(y, s, member, universe=universe, w=w if weighted else None)
        assert_row_matches(rows.loc[f"race={r}"], ref, weighted=weighted, where=r)
        checked += 1
        for gv in ("f", "m"):
            member = (race == r) & (gender == gv)
            universe = (known_r & known_g) if missing == "exclude" else None
            ref = ref_metrics(y, s, member, universe=universe, w=w if weighted else None)
            name = f"race={r} & gender={gv}"
            if min(ref["counts"][:2]) == 0:
                continue
            assert_row_matches(rows.loc[name], ref, weighted=weighted, where=name)
            checked += 1
    assert checked >= 6


# ------------------------------------ evaluate: omit per model, intersections per model rows
def test_evaluate_omit_intersections_per_model():
    rng = np.random.default_rng(121)
    n = 100
    y = rng.random(n) < 0.5
    a = rng.random(n) < 0.5
    b = rng.random(n) < 0.5
    m1 = rng.integers(0, 9, n) / 8
    m2 = m1[::-1].copy()
    both = a & b
    # m2 loses every positive of "a & b": its intersection must be left out, m1's kept
    m2[both & y] = np.nan
    df = pd.DataFrame({"y": y.astype(float), "m1": m1, "m2": m2,
                       "a": a.astype(float), "b": b.astype(float)})
    res = quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                intersections=2, nan_policy="omit")
    r1, r2 = _model_rows(res, "m1"), _model_rows(res, "m2")
    assert "a & b" in r1.index and "a & b" not in r2.index
    assert_row_matches(r1.loc["a & b"], ref_metrics(y, m1, both), weighted=False)
    keep = ~np.isnan(m2)
    for g, mask in (("a", a), ("b", b)):
        assert_row_matches(r2.loc[g], ref_metrics(y[keep], m2[keep], mask[keep]), weighted=False)


# ------------------------------------------- exclude: intervals/tests are the universe's own
@pytest.mark.parametrize("opts,weighted", [
    ({"ci": "delong"}, False), ({"ci": "delong"}, True),
    ({"ci": "bootstrap", "n_boot": 40, "random_state": 2}, False),
    ({"ci": "bootstrap", "n_boot": 40, "random_state": 2}, True),
    ({"significance": "bh"}, False), ({"significance": "bh"}, True),
    ({"ci": "bernstein"}, False),   # (Bernstein bounds are unweighted)
])
def test_exclude_with_omit_intervals_equal_universe_rows(opts, weighted):
    rng = np.random.default_rng(8)
    n = 200
    df = pd.DataFrame({
        "y": (rng.random(n) < 0.5).astype(float), "m1": rng.integers(0, 9, n) / 8,
        "m2": rng.integers(0, 9, n) / 8, "w": rng.integers(1, 3, n).astype(float),
        "a": np.where(rng.random(n) < 0.3, np.nan, (rng.random(n) < 0.4).astype(float)),
        "b": np.where(rng.random(n) < 0.2, np.nan, (rng.random(n) < 0.4).astype(float))})
    df.loc[[1, 2, 3, 50], "m2"] = np.nan
    df.loc[7, "y"] = np.nan
    res = quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                missing_subgroup="exclude", nan_policy="omit",
                sample_weight="w" if weighted else None, **opts)
    for m in ("m1", "m2"):
        k = (df["y"].notna() & df[m].notna()).to_numpy()
        rows = _model_rows(res, m)
        for g in ("a", "b"):
            d = df[k & df[g].notna().to_numpy()]
            ref = quiet(fastbias.bias_metrics, d["y"].to_numpy(), d[m].to_numpy(),
                        {g: (d[g] >= 0.5).to_numpy()},
                        sample_weight=d["w"].to_numpy() if weighted else None, **opts)
            cols = [c for c in ref.columns if c in rows.columns
                    and not c.endswith(("_adjusted", "_significant"))]
            np.testing.assert_allclose(rows.loc[g, cols].to_numpy(float),
                                       ref.loc[g, cols].to_numpy(float), rtol=1e-12,
                                       err_msg=f"{m}/{g}")
            # and the point metrics are the brute-force ones of that universe
            assert_row_matches(rows.loc[g], ref_metrics(
                d["y"].to_numpy() >= 0.5, d[m].to_numpy(), (d[g] >= 0.5).to_numpy(),
                w=d["w"].to_numpy() if weighted else None), weighted=weighted)
        # the overall AUC's interval: of all the model's kept rows
        d = df[k]
        ref = quiet(fastbias.bias_metrics, d["y"].to_numpy(), d[m].to_numpy(),
                    {"a": (d["a"] >= 0.5).to_numpy()},
                    sample_weight=d["w"].to_numpy() if weighted else None, **opts)
        for key, val in ref.attrs.items():
            if key.startswith("overall_auc_"):
                assert res.model_attrs[m][key] == pytest.approx(val, rel=1e-12), key
        assert res.overall_auc[m] == ref.attrs["overall_auc"]


@pytest.mark.parametrize("case", ["decimal_m2", "light_thresholds", "span", "nonbinary"])
def test_evaluate_errors_after_omit_name_input_rows(case):
    base = {"y": [np.nan, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1.0],
            "g": [1.0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]}
    kw = dict(label="y", subgroups=["g"], nan_policy="omit")
    if case == "decimal_m2":
        from decimal import Decimal
        df = pd.DataFrame(dict(base, m1=[np.nan] * 4 + list(np.linspace(0, 1, 8)),
                               m2=np.linspace(0, 1, 12)))
        df["m2"] = df["m2"].astype(object)
        df.loc[9, "m2"] = Decimal("0.1")
        kw.update(scores=["m1", "m2"]); pos, bad = 9, "Decimal('0.1')"
    elif case == "light_thresholds":
        df = pd.DataFrame(dict(base, m2=[np.nan] * 5 + list(np.linspace(0, 1, 7)),
                               w=np.ones(12) * 1e40))
        df.loc[9, "w"] = 1e-30
        kw.update(scores=["m2"], sample_weight="w", thresholds=[0.5]); pos, bad = 9, "1e-30"
    elif case == "span":
        df = pd.DataFrame(dict(base, m2=[np.nan] * 5 + list(np.linspace(0, 1, 7)),
                               w=np.ones(12)))
        df.loc[8, "w"] = 1e-300
        kw.update(scores=["m2"], sample_weight="w"); pos, bad = 8, "1e-300"
    else:
        df = pd.DataFrame(dict(base, m1=[np.nan, np.nan] + list(np.linspace(0, 1, 10))))
        df.loc[7, "y"] = 0.5
        kw.update(scores=["m1"], label_threshold=None); pos, bad = 7, "0.5"
    with pytest.raises(ValueError) as exc:
        quiet(fastbias.evaluate, df, **kw)
    msg = str(exc.value)
    assert f"position {pos}" in msg and bad in msg, msg


# ------------------------------------------------------------------------ defects (report)
def test_report_tells_missing_weight_rows_from_unlabelled_ones():
    """bias_report under nan_policy='omit' states how many rows are 'without a label'; a row
    dropped for a missing *weight* has a label, but is counted there."""
    import re
    rng = np.random.default_rng(4)
    n = 120
    df = pd.DataFrame({"y": rng.integers(0, 5, n) / 4, "m1": rng.integers(0, 9, n) / 8,
                       "w": rng.integers(1, 4, n).astype(float),
                       "a": rng.integers(0, 3, n) / 2})
    df.loc[[3, 4], "y"] = np.nan          # 2 rows without a label
    df.loc[11, "w"] = np.nan              # 1 row with a label but no weight
    rep = quiet(fastbias.bias_report, df, label="y", scores="m1", subgroups=["a"],
                sample_weight="w", nan_policy="omit")
    page = re.sub(r"\s+", " ", re.sub("<[^>]+>", " ", rep.to_html()))
    stated = re.search(r"([\d,]+) without a label", page)
    assert stated is not None, page[:1500]
    assert int(stated.group(1).replace(",", "")) == int(df["y"].isna().sum()), stated.group(0)
    unweighed = re.search(r"([\d,]+) without a weight", page)
    assert unweighed is not None and int(unweighed.group(1)) == 1, page[:1500]


# ----------------------------------------------------- thresholds: omit, exclude, per model
@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_evaluate_thresholds_omit_two_models_equal_own_rows(missing):
    rng = np.random.default_rng(3)
    n = 80
    df = pd.DataFrame({"y": (rng.random(n) < 0.5).astype(float), "m1": rng.integers(0, 5, n) / 4,
                       "m2": rng.integers(0, 5, n) / 4, "w": rng.integers(0, 3, n).astype(float),
                       "a": np.where(rng.random(n) < 0.3, np.nan,
                                     (rng.random(n) < 0.4).astype(float))})
    df.loc[[1, 2, 3], "m2"] = np.nan
    df.loc[5, "y"] = np.nan
    df.loc[9, "m1"] = np.inf
    th = [0.25, 0.5]
    res = quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"], subgroups=["a"],
                thresholds=th, nan_policy="omit", missing_subgroup=missing, sample_weight="w")
    for m in ("m1", "m2"):
        d = df[df["y"].notna() & np.isfinite(df[m]) & df["w"].notna()]
        if missing == "exclude":
            d = d[d["a"].notna()]
        got = res.thresholds[res.thresholds["model"] == m]
        yk, sk, wk = d["y"].to_numpy() >= 0.5, d[m].to_numpy(), d["w"].to_numpy()
        mem = (d["a"] >= 0.5).to_numpy()
        for i, t in enumerate(th):
            row = got[got["threshold"] == t].iloc[0]
            pred = sk >= t
            assert row["subgroup_tp"] == wk[mem & yk & pred].sum()
            assert row["subgroup_fp"] == wk[mem & ~yk & pred].sum()
            assert row["background_tp"] == wk[~mem & yk & pred].sum()
            assert row["background_fp"] == wk[~mem & ~yk & pred].sum()
            assert row["background_negatives"] == wk[~mem & ~yk].sum()
            want = wk[mem & yk & pred].sum() / wk[mem & yk].sum()
            assert row["subgroup_tpr"] == pytest.approx(want, rel=1e-15)


def test_threshold_gap_bernstein_omit_equals_manual_drop():
    rng, y, s, w, groups = make_data(17, n=90)
    y, s, w, drop = punch_holes(rng, y, s, w)
    drop = np.isnan(y) | ~np.isfinite(s)
    keep = ~drop
    got = quiet(fastbias.threshold_metrics, y, s, groups, thresholds=[0.4], nan_policy="omit",
                gap_interval="bernstein")
    want = quiet(fastbias.threshold_metrics, y[keep], s[keep],
                 {k: v[keep] for k, v in groups.items()}, thresholds=[0.4],
                 gap_interval="bernstein")
    pd.testing.assert_frame_equal(got, want, check_exact=True)


# --------------------------------------------- zero weights: DeLong tests, out of core
def test_zero_weight_rows_equal_dropped_delong_significance():
    # cells of 30+ rows either way: DeLong's tests, which a row of weight 0 does not enter.
    # (Permutation tests of small cells redraw *rows* with their weights, docs/significance.md,
    # so there a row of weight 0 is not the same as a dropped one; not checked here.)
    rng = np.random.default_rng(2)
    n = 1500
    y = rng.random(n) < 0.45
    s = rng.integers(0, 50, n) / 49
    w = rng.integers(1, 4, n).astype(float)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2}
    w0 = w.copy()
    z = rng.random(n) < 0.2
    w0[z] = 0
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w0, significance="holm")
    b = quiet(fastbias.bias_metrics, y[~z], s[~z], {k: v[~z] for k, v in groups.items()},
              sample_weight=w[~z], significance="holm")
    assert a.attrs["permutation_tests"] == 0 == b.attrs["permutation_tests"]
    for c in [c for c in a.columns if "pvalue" in c]:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-9,
                                   err_msg=c)


@pytest.mark.parametrize("missing", ["exclude", "background"])
def test_zero_weight_rows_equal_dropped_evaluate_csv(tmp_path, missing):
    rng = np.random.default_rng(19)
    n = 300
    df = pd.DataFrame({"y": rng.integers(0, 5, n) / 4, "s": rng.integers(0, 20, n) / 19,
                       "w": rng.integers(1, 4, n).astype(float),
                       "a": np.where(rng.random(n) < 0.25, np.nan, rng.integers(0, 3, n) / 2),
                       "b": rng.integers(0, 3, n) / 2})
    z = rng.random(n) < 0.25
    df0 = df.copy()
    df0.loc[z, "w"] = 0.0
    p0, p1 = tmp_path / "zero.csv", tmp_path / "kept.csv"
    _write_csv(p0, df0)
    _write_csv(p1, df[~z])
    kw = dict(label="y", scores="s", subgroups=["a", "b"], missing_subgroup=missing,
              sample_weight="w", ci="delong", thresholds=[0.5], intersections=2,
              batch_rows=40, bucket_rows=50)
    a = quiet(fastbias.evaluate_csv, p0, **kw)
    b = quiet(fastbias.evaluate_csv, p1, **kw)
    assert list(a.table["subgroup"]) == list(b.table["subgroup"])
    cols = METRICS + [f"{m}_{x}" for m in METRICS for x in ("low", "high")]
    np.testing.assert_allclose(a.table[cols].to_numpy(float), b.table[cols].to_numpy(float),
                               rtol=1e-11, atol=1e-14)
    tc = [c for c in b.thresholds.columns if b.thresholds[c].dtype.kind == "f"]
    np.testing.assert_allclose(a.thresholds[tc].to_numpy(float), b.thresholds[tc].to_numpy(float),
                               rtol=1e-11)
    # and against the brute force, on the rows of positive weight
    d = df[~z]
    for g in ("a", "b"):
        col = d[g].to_numpy()
        universe = ~np.isnan(col) if missing == "exclude" else None
        ref = ref_metrics(d["y"].to_numpy() >= 0.5, d["s"].to_numpy(), col >= 0.5,
                          universe=universe, w=d["w"].to_numpy())
        assert_row_matches(a.table.set_index("subgroup").loc[g], ref, weighted=True, where=g)
