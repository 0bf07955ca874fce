"""The docs' numbers: an independent review's tests (2026-11-27) of the concrete claims of
docs/thresholds.md, significance.md, intersections.md, sensitive_features.md, aggregates.md,
intervals.md and notebooks/confidence_intervals.ipynb, against independent references
(fractions.Fraction pair counts, scipy, hand formulas).

Found by review (the three tests under "found by review"; each fails before its fix):
bias_metrics and BiasEvaluator did not warn of a sensitive feature missing on every row (as
evaluate does); the notebook's coverage range was a stale run's.
"""
import itertools
import json
import math
import pathlib
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fastbias

ROOT = pathlib.Path(__file__).resolve().parents[1]
METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ---------------------------------------------------------------- references
def _u(sx, wx, sy, wy):
    num = Fraction(0)
    den = Fraction(0)
    for a, wa in zip(sx, wx):
        for b, wb in zip(sy, wy):
            k = Fraction(1) if a > b else (Fraction(1, 2) if a == b else Fraction(0))
            num += Fraction(wa) * Fraction(wb) * k
            den += Fraction(wa) * Fraction(wb)
    return num / den if den else None


def _ref_metrics(y, s, w, mem, bg):
    y, s, w = np.asarray(y, bool), np.asarray(s, float), np.asarray(w, float)
    cell = lambda sel: (s[sel], w[sel])
    sp, sn, bp, bn = cell(mem & y), cell(mem & ~y), cell(bg & y), cell(bg & ~y)
    out = {"subgroup_auc": _u(*sp, *sn), "bpsn_auc": _u(*bp, *sn), "bnsp_auc": _u(*sp, *bn)}
    t = _u(*bn, *sn)
    out["negative_aeg"] = None if t is None else Fraction(1, 2) - t
    t = _u(*bp, *sp)
    out["positive_aeg"] = None if t is None else Fraction(1, 2) - t
    return out


def _check(got, exp, tol=1e-12):
    if exp is None:
        assert np.isnan(got)
    else:
        assert abs(got - float(exp)) <= tol, (got, float(exp))


def _wilson(x, n, conf):
    z = stats.norm.ppf(1 - (1 - conf) / 2)
    p = x / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def _clopper_pearson(x, n, conf):
    a = 1 - conf
    lo = 0.0 if x == 0 else stats.beta.ppf(a / 2, x, n - x + 1)
    hi = 1.0 if x == n else stats.beta.ppf(1 - a / 2, x + 1, n - x)
    return lo, hi


def _holm(p):
    m = len(p)
    adj = np.empty(m)
    run = 0.0
    for i, j in enumerate(np.argsort(p, kind="stable")):
        run = max(run, min(1.0, (m - i) * p[j]))
        adj[j] = run
    return adj


def _bh(p):
    m = len(p)
    adj = np.empty(m)
    run = 1.0
    for i, j in enumerate(np.argsort(p)[::-1]):
        run = min(run, p[j] * m / (m - i))
        adj[j] = min(run, 1.0)
    return adj


# --------------------------------------------------- found by review
def _all_missing_feature_frame():
    n = 40
    y = np.array([True, True, False, False] * (n // 4))
    s = np.linspace(0, 1, n)
    frame = pd.DataFrame({"f": ["a", "b"] * (n // 2),
                          "h": pd.Categorical([None] * n, categories=["p", "q"])})
    return y, s, frame


def test_bias_metrics_warns_about_feature_missing_on_every_row():
    # docs/sensitive_features.md: "A feature missing on every row makes no subgroup (nor any
    # combination): each entry point says so in one warning naming it."  evaluate() does; the
    # arrays entry point drops the all-NaN Categorical 'h' without a word.
    y, s, frame = _all_missing_feature_frame()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.bias_metrics(y, s, frame)
    assert list(table.index) == ["f=a", "f=b"]
    assert any("'h'" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_bias_evaluator_warns_about_feature_missing_on_every_row():
    # same claim for BiasEvaluator (an entry point that takes categorical columns as subgroups)
    y, s, frame = _all_missing_feature_frame()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = fastbias.BiasEvaluator(y, frame)
        table = ev.metrics(s)
    assert list(table.index) == ["f=a", "f=b"]
    assert any("'h'" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_evaluate_warns_about_feature_missing_on_every_row():
    # the entry point that does what the docs say (passes)
    y, s, frame = _all_missing_feature_frame()
    d = frame.assign(y=y, s=s)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastbias.evaluate(d, label="y", scores="s", sensitive_features=["f", "h"])
    assert any("'h'" in str(w.message) for w in caught)


def test_confidence_intervals_notebook_large_coverage_range_matches_its_table():
    # notebooks/confidence_intervals.ipynb, "Reading the results": "cover close to the nominal
    # 95% (94.1-96.0% in the full run)", but the full run it quotes (cell "For reference") and
    # docs/intervals.md ("cover 94.1-95.7%") have a largest large-subgroup coverage of 0.957
    # (DeLong bnsp_auc): 96.0% is a stale figure from an older run.
    nb = json.loads((ROOT / "notebooks" / "confidence_intervals.ipynb").read_text())
    md = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    table = next(t for t in md if "large subgroup_auc" in t)
    large = table[table.index("large subgroup_auc"):].splitlines()
    cov = []
    for line in large:
        nums = [float(x) for x in line.split() if x.replace(".", "", 1).isdigit()]
        if len(nums) == 6:
            cov += nums[:2]                      # delong, bootstrap coverage
    lo, hi = min(cov), max(cov)
    reading = next(t for t in md if "Reading the results" in t)
    claimed = f"{100 * lo:.1f}-{100 * hi:.1f}%"  # 94.1-95.7%
    assert claimed in reading, (claimed, reading[:400])


# ------------------------------------------------ properties verified (pass)
def test_bernstein_numbers_in_intervals_md():
    L = math.log(2 / 0.05)
    B = 2 * 1 * L / (3 * 0.5)
    t = (B + math.sqrt(B * B + 8 * 3160 * 4 * L)) / (2 * 3160)
    assert round(t, 4) == 0.0974
    assert fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5) == pytest.approx(t, 1e-12)
    nstar = L * (2 * 4 + 2 * 0.05 / (3 * 0.5)) / 0.05 ** 2
    assert math.floor(nstar) + 1 == 11903
    assert fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5) == 11903
    k = next(k for k in range(2, 5000)
             if ((2 * L / 3) + math.sqrt((2 * L / 3) ** 2 + 8 * k * 0.25 * L)) / (2 * k) < 0.05)
    assert k == 787 == fastbias.ustatistic_min_samples(0.05)


@pytest.mark.parametrize("interval,ref", [("wilson", _wilson), ("exact", _clopper_pearson)])
def test_threshold_rates_and_intervals_by_hand(interval, ref):
    rng = np.random.default_rng(1)
    for trial in range(8):
        n = int(rng.integers(10, 120))
        y = rng.random(n) < 0.4
        s = np.round(rng.random(n), 1)
        if trial % 2:
            s = s.astype(np.float32)   # threshold rounded to the scores' type
        m = rng.random(n) < 0.4
        w = rng.integers(0, 4, n).astype(float) if trial % 3 == 0 else np.ones(n)
        thrs = [0.0, 0.3, 0.5, 0.7, 1.0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = fastbias.threshold_metrics(y, s, pd.DataFrame({"g": m}), thresholds=thrs,
                                           interval=interval, confidence=0.9,
                                           sample_weight=w if trial % 3 == 0 else None)
        for th in thrs:
            pred = s >= np.asarray(th, dtype=s.dtype)
            row = t.loc[(th, "g")]
            rates = {}
            for side, mask in (("subgroup", m), ("background", ~m)):
                W = lambda sel: float(w[sel].sum())
                pos, neg = W(mask & y), W(mask & ~y)
                tp, fp = W(mask & y & pred), W(mask & ~y & pred)
                for k, (x, nn) in {"positive_rate": (tp + fp, pos + neg), "tpr": (tp, pos),
                                   "fpr": (fp, neg), "fnr": (pos - tp, pos),
                                   "precision": (tp, tp + fp)}.items():
                    if nn == 0:
                        assert np.isnan(row[f"{side}_{k}"])
                        rates[(side, k)] = np.nan
                        continue
                    lo, hi = ref(x, nn, 0.9)
                    rates[(side, k)] = x / nn
                    assert row[f"{side}_{k}"] == pytest.approx(x / nn, abs=1e-12)
                    assert row[f"{side}_{k}_low"] == pytest.approx(lo, abs=1e-9)
                    assert row[f"{side}_{k}_high"] == pytest.approx(hi, abs=1e-9)
            for k in ("positive_rate", "tpr", "fpr", "fnr", "precision"):
                exp = rates[("subgroup", k)] - rates[("background", k)]
                assert row[f"{k}_gap"] == pytest.approx(exp, abs=1e-12, nan_ok=True)


def test_threshold_gap_bernstein_interval_by_hand():
    rng = np.random.default_rng(3)
    L = math.log(2 / 0.1)
    for _ in range(6):
        n = int(rng.integers(30, 200))
        y = rng.random(n) < 0.4
        s = rng.random(n)
        m = rng.random(n) < 0.3
        t = fastbias.threshold_metrics(y, s, pd.DataFrame({"g": m}), thresholds=[0.5],
                                       gap_interval="bernstein", confidence=0.9)
        row = t.loc[(0.5, "g")]
        pred = (s >= 0.5).astype(float)
        # (the positive rate's and the TPR's gaps: the paper's cost 1 - y_hat, mirrored)
        for k, (sel, c, sign) in {"positive_rate": (np.ones(n, bool), 1 - pred, -1),
                                  "tpr": (y, 1 - pred, -1), "fpr": (~y, pred, 1),
                                  "fnr": (y, 1 - pred, 1)}.items():
            f = np.where(sel & m, 1, np.where(sel & ~m, -1, 0))
            ga, gb = (f == 1).mean(), (f == -1).mean()
            z = sign * np.where(f == 1, c / ga, np.where(f == -1, -c / gb, 0.0))
            B = 2 * L / (3 * min(ga, gb))
            h = (B + math.sqrt(B * B + 8 * n * z.var(ddof=1) * L)) / (2 * n)
            assert row[f"{k}_gap"] == pytest.approx(z.mean(), abs=1e-12)
            assert row[f"{k}_gap_low"] == pytest.approx(max(-1, z.mean() - h), abs=1e-12)
            assert row[f"{k}_gap_high"] == pytest.approx(min(1, z.mean() + h), abs=1e-12)


def _sig_data():
    rng = np.random.default_rng(5)
    n = 3000
    y = rng.random(n) < 0.4
    G = pd.DataFrame({f"g{i}": rng.random(n) < p for i, p in enumerate([0.3, 0.05, 0.2])})
    s = np.round((y * 0.8 + rng.normal(0, 1, n) + 0.4 * (G.g0 & ~y) + 0.3 * G.g2).to_numpy(), 1)
    return y, s, G


@pytest.mark.parametrize("method,adjust", [("holm", _holm), ("bh", _bh)])
def test_significance_adjustment_by_hand(method, adjust):
    y, s, G = _sig_data()
    for conf in (0.95, 0.9):
        t = fastbias.bias_metrics(y, s, G, significance=method, confidence=conf)
        P = t[[m + "_pvalue" for m in METRICS]].to_numpy().ravel()
        A = t[[m + "_pvalue_adjusted" for m in METRICS]].to_numpy().ravel()
        S = t[[m + "_significant" for m in METRICS]].to_numpy().ravel()
        d = ~np.isnan(P)
        np.testing.assert_allclose(A[d], adjust(P[d]), rtol=0, atol=1e-15)
        assert (S[d] == (adjust(P[d]) <= 1 - conf)).all()
        assert t.attrs["n_tests"] == d.sum()


def test_delong_and_exact_moment_pvalues_by_hand():
    y, s, G = _sig_data()
    n = len(y)
    t = fastbias.bias_metrics(y, s, G, significance="holm")

    def kmat(a, b):
        return (a[:, None] > b[None, :]) + 0.5 * (a[:, None] == b[None, :])

    def psi(X, Y):
        K = kmat(s[X], s[Y])
        th = K.mean()
        m, k = X.sum(), Y.sum()
        out = np.zeros(n)
        out[np.flatnonzero(X)] += (K.mean(1) - th) / np.sqrt(m * (m - 1))
        out[np.flatnonzero(Y)] += (K.mean(0) - th) / np.sqrt(k * (k - 1))
        return th, out

    th_o, psi_o = psi(y, ~y)
    m = G["g0"].to_numpy()            # every cell >= 300 rows: DeLong
    for k, (X, Y, auc) in {"subgroup_auc": (m & y, m & ~y, True), "bpsn_auc": (~m & y, m & ~y, True),
                           "bnsp_auc": (m & y, ~m & ~y, True),
                           "negative_aeg": (~m & ~y, m & ~y, False),
                           "positive_aeg": (~m & y, m & y, False)}.items():
        assert min(X.sum(), Y.sum()) >= 300
        th, pm = psi(X, Y)
        stat, var = (th - th_o, ((pm - psi_o) ** 2).sum()) if auc else (0.5 - th, (pm ** 2).sum())
        p = 2 * stats.norm.sf(abs(stat / math.sqrt(var)))
        assert t.loc["g0", k + "_pvalue"] == pytest.approx(p, rel=1e-9)

    # g1: cells of 30-299 rows, the normal tail with the permutation's exact moments
    m = G["g1"].to_numpy()
    kn, kp = (m & ~y).sum(), (m & y).sum()
    assert 30 <= min(kn, kp) and max(kn, kp) < 300
    Nn, Np = (~y).sum(), y.sum()

    def normp(v, size, a, b, null, obs):
        N = len(v)
        mu = a * v.mean() + b
        sd = abs(a) * math.sqrt(v.var() / size * (N - size) / (N - 1))
        d = abs(obs - null)
        return stats.norm.sf((null + d - mu) / sd) + stats.norm.cdf((null - d - mu) / sd)

    sn, sp = s[~y], s[y]
    exp = {"bpsn_auc": normp(kmat(s[~m & y], sn).mean(0), kn, 1, 0, th_o, t.loc["g1", "bpsn_auc"]),
           "bnsp_auc": normp(kmat(sp, s[~m & ~y]).mean(1), kp, 1, 0, th_o, t.loc["g1", "bnsp_auc"]),
           "negative_aeg": normp(kmat(sn, sn).sum(0) - 0.5, kn, -1 / (Nn - kn),
                                 0.5 + (kn - 1) / 2 / (Nn - kn), 0.0, t.loc["g1", "negative_aeg"]),
           "positive_aeg": normp(kmat(sp, sp).sum(0) - 0.5, kp, -1 / (Np - kp),
                                 0.5 + (kp - 1) / 2 / (Np - kp), 0.0, t.loc["g1", "positive_aeg"])}
    for k, p in exp.items():
        assert t.loc["g1", k + "_pvalue"] == pytest.approx(p, rel=1e-9)


def test_intersections_exclude_background_by_fractions():
    rng = np.random.default_rng(7)
    names = ["a", "b", "c"]
    for trial in range(6):
        n = int(rng.integers(25, 60))
        df = pd.DataFrame({"y": rng.random(n) < 0.5, "s": np.round(rng.random(n), 1)})
        for k in names:
            df[k] = (rng.random(n) < 0.5).astype(float)
            df.loc[rng.random(n) < 0.2, k] = np.nan
        df["w"] = rng.integers(0, 3, n).astype(float)
        y = df.y.to_numpy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tab = fastbias.evaluate(df, label="y", scores="s", subgroups=names,
                                    missing_subgroup="exclude", intersections=3,
                                    min_subgroup_size=2, sample_weight="w").for_model()
        expected = list(names)
        for r in (2, 3):
            for comb in itertools.combinations(names, r):
                mem = np.all([df[c].to_numpy() >= 0.5 for c in comb], axis=0)
                if (mem & y).sum() >= 2 and (mem & ~y).sum() >= 2:
                    expected.append(" & ".join(comb))
        assert list(tab.index) == expected
        for name in expected:
            comb = name.split(" & ")
            mem = np.all([df[c].to_numpy() >= 0.5 for c in comb], axis=0)
            annotated = np.all([df[c].notna().to_numpy() for c in comb], axis=0)
            ref = _ref_metrics(y, df.s, df.w, mem, annotated & ~mem)
            for k, v in ref.items():
                _check(tab.loc[name, k], v)


def test_sensitive_features_missing_values_by_fractions():
    rng = np.random.default_rng(11)
    for trial in range(4):
        n = int(rng.integers(40, 80))
        df = pd.DataFrame({"y": rng.random(n) < 0.5, "s": np.round(rng.random(n), 1)})
        race = pd.Series(rng.choice(["b", "a", "c"], n), dtype=object)
        race[rng.random(n) < 0.2] = None
        gender = pd.Series(rng.choice(["x", "y"], n), dtype=object)
        gender[rng.random(n) < 0.2] = None
        df["race"], df["gender"] = race, gender
        y = df.y.to_numpy()
        for miss in ("background", "exclude"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tab = fastbias.evaluate(df, label="y", scores="s", missing_subgroup=miss,
                                        sensitive_features=["race", "gender"],
                                        min_subgroup_size=2).for_model()
            for name in tab.index:
                parts = [p.split("=") for p in name.split(" & ")]
                mem = np.all([(df[c] == v).to_numpy() for c, v in parts], axis=0)
                ann = np.all([df[c].notna().to_numpy() for c, _ in parts], axis=0)
                bg = (ann if miss == "exclude" else np.ones(n, bool)) & ~mem
                for k, v in _ref_metrics(y, df.s, np.ones(n), mem, bg).items():
                    _check(tab.loc[name, k], v)


def test_final_metric_and_power_mean_claims():
    t = pd.DataFrame({"subgroup_auc": [0.9, 0.8, np.nan], "bpsn_auc": [0.7, 0.95, 0.6],
                      "bnsp_auc": [0.85, 0.9, 0.99]}, index=["a", "b", "c"])
    pm = lambda x, p: np.mean(np.asarray(x) ** p) ** (1 / p)
    exp = 0.25 * 0.93 + 0.75 * np.mean([pm([0.9, 0.8], -5), pm(t.bpsn_auc, -5), pm(t.bnsp_auc, -5)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fastbias.final_metric(t, 0.93, undefined="omit") == pytest.approx(exp, abs=1e-15)
    assert not caught
    with pytest.raises(ValueError, match="c"):
        fastbias.final_metric(t, 0.93, undefined="raise")
    x = np.array([0.5, 0.8, 0.9])
    assert fastbias.power_mean(x, 0) == pytest.approx(np.exp(np.log(x).mean()), abs=1e-15)
    assert fastbias.power_mean(x, np.inf) == 0.9 and fastbias.power_mean(x, -np.inf) == 0.5
    assert fastbias.power_mean(np.array([0.0, 0.5]), -5) == 0.0
    assert np.isnan(fastbias.power_mean(np.array([np.nan, 0.5]), -5))
    with pytest.raises(ValueError):
        fastbias.power_mean(np.array([-0.1, 0.5]), 2)
