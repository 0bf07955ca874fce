"""The Poisson bootstrap (``ci="bootstrap"``) against an independent reference: an
independent review's tests (2026-11-27, thirty-first session).

Found by review (each fails before its fix): a SeedSequence given as ``random_state`` was
spawned from, so the same one gave other intervals the next time; ``evaluate`` resolved a
SeedSequence or a Generator once per model, so identical models got different replicates
(which, depending on the threads); the final metric's interval left out its undefined
replicates without a word.

Every value fastbias reports is compared with a reference written here from the words of
docs/intervals.md ("Poisson bootstrap"): counter-based SplitMix64 counts, Poisson(1) by
inversion of the 32 high bits, one key per child of ``SeedSequence(random_state)``; each
replicate's metrics by brute-force pair counts with weights ``K_i * sample_weight_i``;
the percentile interval (quantiles alpha/2 and 1 - alpha/2 of the finite replicates), the
standard error as the replicates' standard deviation; the Jigsaw final metric per
replicate. Only the determinism checks compare fastbias with itself.
"""
from __future__ import annotations

import math
import re
import warnings
from decimal import Decimal, getcontext

import numpy as np
import pandas as pd
import pytest

import fastbias
from tests.test_first_call import cold, compiling  # noqa: F401 (fixtures)

METRICS = ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg")
AUCS = ("subgroup_auc", "bpsn_auc", "bnsp_auc")
MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15

# ---------------------------------------------------------------------------------------
# Reference: the counts
# ---------------------------------------------------------------------------------------


def _poisson_thresholds_exact() -> list:
    """round(P(K <= k) * 2**32) for K ~ Poisson(1), computed in 60-digit decimals; only
    the thresholds below 2**32 (a 32-bit uniform never reaches the others)."""
    getcontext().prec = 60
    e_inv = Decimal(-1).exp()
    total, term, out = Decimal(0), Decimal(1), []
    for k in range(40):
        total += e_inv * term
        term /= k + 1
        t = int((total * (1 << 32)).to_integral_value())  # (ROUND_HALF_EVEN: no tie here)
        if t >= 1 << 32:
            break
        out.append(t)
    return out


THRESHOLDS = _poisson_thresholds_exact()


def _mix(z: int) -> int:
    """SplitMix64's output function (Steele, Lea & Flood 2014), on Python ints."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def ref_key(child: np.random.SeedSequence) -> int:
    """A replicate's 64-bit key: the first 64-bit word of its child's state."""
    return int(child.generate_state(1, dtype=np.uint64)[0])


def ref_counts(key: int, n: int) -> np.ndarray:
    """Row i's count: the 32 high bits of SplitMix64 at counter i under ``key``
    (state = key + i * golden gamma), inverted through the Poisson(1) CDF."""
    out = np.empty(n, dtype=np.int64)
    thr = THRESHOLDS
    for i in range(n):
        u = _mix(key + i * GAMMA) >> 32
        k = 0
        while k < len(thr) and u >= thr[k]:
            k += 1
        out[i] = k
    return out


def ref_seeds(random_state, n_boot):
    ss = random_state if isinstance(random_state, np.random.SeedSequence) \
        else np.random.SeedSequence(random_state)
    return ss.spawn(n_boot)


# ---------------------------------------------------------------------------------------
# Reference: the metrics of one weighting, by brute-force pair counts
# ---------------------------------------------------------------------------------------


def _theta(sx, wx, sy, wy) -> float:
    """P(X > Y) + 1/2 P(X = Y) over weighted samples, all pairs; NaN if a side weighs 0."""
    Wx, Wy = wx.sum(), wy.sum()
    if Wx <= 0 or Wy <= 0:
        return float("nan")
    gt = (sx[:, None] > sy[None, :]).astype(np.float64)
    eq = (sx[:, None] == sy[None, :]).astype(np.float64)
    num = wx @ (gt + 0.5 * eq) @ wy
    return float(num / (Wx * Wy))


def ref_metrics(y, s, groups: dict, w) -> tuple:
    """({metric: array over groups}, overall AUC) of labels ``y``, scores ``s``, boolean
    ``groups`` and row weights ``w``."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    out = {m: [] for m in METRICS}
    for mask in groups.values():
        mask = np.asarray(mask, dtype=bool)
        gn, gp, bn, bp = mask & ~y, mask & y, ~mask & ~y, ~mask & y
        out["subgroup_auc"].append(_theta(s[gp], w[gp], s[gn], w[gn]))
        out["bpsn_auc"].append(_theta(s[bp], w[bp], s[gn], w[gn]))
        out["bnsp_auc"].append(_theta(s[gp], w[gp], s[bn], w[bn]))
        out["negative_aeg"].append(0.5 - _theta(s[bn], w[bn], s[gn], w[gn]))
        out["positive_aeg"].append(0.5 - _theta(s[bp], w[bp], s[gp], w[gp]))
    overall = _theta(s[y], w[y], s[~y], w[~y])
    return {m: np.array(v, dtype=np.float64) for m, v in out.items()}, overall


def ref_power_mean(v, p=-5.0) -> float:
    v = np.asarray(v, dtype=np.float64)
    if np.isnan(v).any():
        return float("nan")
    if (v == 0).any():
        return 0.0  # (the limit for p < 0)
    return float(np.mean(v ** p) ** (1.0 / p))


def ref_final(overall, metrics: dict, keep=None) -> float:
    pm = [ref_power_mean(metrics[m] if keep is None else metrics[m][keep]) for m in AUCS]
    return 0.25 * overall + 0.75 * float(np.mean(pm))


# ---------------------------------------------------------------------------------------
# Reference: the replicates and the interval
# ---------------------------------------------------------------------------------------


def ref_replicates(y, s, groups, *, n_boot, random_state, sample_weight=None, keep=None):
    """(metrics {name: (n_boot, k)}, overall (n_boot,), final (n_boot,))."""
    n = len(y)
    base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, np.float64)
    reps = {m: [] for m in METRICS}
    overall, final = [], []
    for child in ref_seeds(random_state, n_boot):
        w = ref_counts(ref_key(child), n) * base
        met, ov = ref_metrics(y, s, groups, w)
        for m in METRICS:
            reps[m].append(met[m])
        overall.append(ov)
        final.append(ref_final(ov, met, keep) if groups else np.nan)
    return ({m: np.array(v).reshape(n_boot, len(groups)) for m, v in reps.items()},
            np.array(overall), np.array(final))


def ref_quantile(v, p) -> float:
    """Hyndman-Fan type 7 (linear between order statistics)."""
    v = np.sort(v)
    h = (len(v) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(v) - 1)
    return float(v[lo] + (h - lo) * (v[hi] - v[lo]))


def ref_interval(values, confidence):
    """(low, high, se, n finite) over the finite replicates; NaN with fewer than 2."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return np.nan, np.nan, np.nan, v.size
    a = 1.0 - confidence
    return (ref_quantile(v, a / 2), ref_quantile(v, 1 - a / 2),
            float(np.std(v, ddof=1)), v.size)


def ref_table(y, s, groups, *, n_boot, random_state, confidence=0.95, sample_weight=None,
              keep=None):
    reps, overall, final = ref_replicates(y, s, groups, n_boot=n_boot,
                                          random_state=random_state,
                                          sample_weight=sample_weight, keep=keep)
    cols = {}
    for m in METRICS:
        for j, name in enumerate(groups):
            lo, hi, se, _ = ref_interval(reps[m][:, j], confidence)
            cols.setdefault(f"{m}_low", {})[name] = lo
            cols.setdefault(f"{m}_high", {})[name] = hi
            cols.setdefault(f"{m}_se", {})[name] = se
    attrs = dict(zip(("overall_auc_low", "overall_auc_high", "overall_auc_se"),
                     ref_interval(overall, confidence)[:3]))
    attrs.update(zip(("final_metric_low", "final_metric_high", "final_metric_se"),
                     ref_interval(final, confidence)[:3]))
    return pd.DataFrame(cols), attrs, (reps, overall, final)


def assert_matches(table, ref_cols, ref_attrs, *, rtol=1e-10, atol=1e-12, attrs=True):
    for col in ref_cols.columns:
        got = table.loc[ref_cols.index, col].to_numpy(dtype=np.float64)
        np.testing.assert_allclose(got, ref_cols[col].to_numpy(), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=col)
    if attrs:
        for k, v in ref_attrs.items():
            np.testing.assert_allclose(table.attrs[k], v, rtol=rtol, atol=atol, equal_nan=True,
                                       err_msg=k)


def quiet_bias_metrics(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.bias_metrics(*args, **kwargs)


def quiet_evaluate(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.evaluate(*args, **kwargs)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------


def data(n=300, seed=0, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    s = rng.random(n) + 0.3 * y
    if ties:
        s = np.round(s, 1)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.12,
              "c": rng.random(n) < 0.5}
    return y, s, groups


# ---------------------------------------------------------------------------------------
# 1. The counts themselves
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("random_state", [0, 7, 123456789])
def test_replicate_counts_match_reference(random_state):
    from fastbias.intervals import replicate_counts
    for child in ref_seeds(random_state, 5):
        got = replicate_counts(child, 3000)
        want = ref_counts(ref_key(child), 3000)
        np.testing.assert_array_equal(got.astype(np.int64), want)


def test_poisson_threshold_table_matches_exact_cdf():
    from fastbias.intervals._kernels import POISSON_ONE_THRESHOLDS
    assert [int(t) for t in POISSON_ONE_THRESHOLDS] == THRESHOLDS


def test_counts_are_poisson_one_in_distribution():
    # 200,000 counts: mean and variance 1 within 5 standard errors, P(K = k) by chi-square
    from fastbias.intervals import replicate_counts
    k = np.concatenate([replicate_counts(c, 20_000) for c in ref_seeds(3, 10)]).astype(float)
    assert abs(k.mean() - 1) < 5 * math.sqrt(1 / k.size)
    assert abs(k.var() - 1) < 5 * math.sqrt(3 / k.size)  # Var of K^2-ish: mu4 - 1 = 3
    obs = np.bincount(k.astype(int), minlength=6)[:5]
    p = np.array([math.exp(-1) / math.factorial(j) for j in range(5)])
    chi2 = float(((obs - k.size * p) ** 2 / (k.size * p)).sum())
    assert chi2 < 20.5  # 99.9% of chi-square with 4 df (18.5) plus slack


# ---------------------------------------------------------------------------------------
# 2. bias_metrics(ci="bootstrap") against the reference
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.95, 0.5, 0.99])
def test_unweighted_heavy_ties(confidence):
    y, s, g = data(300, seed=1)
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=30, random_state=5,
                           confidence=confidence)
    ref, attrs, _ = ref_table(y, s, g, n_boot=30, random_state=5, confidence=confidence)
    assert_matches(t, ref, attrs)


def test_all_scores_tied():
    y, s, g = data(200, seed=2)
    s = np.full_like(s, 0.5)
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=20, random_state=1)
    ref, attrs, _ = ref_table(y, s, g, n_boot=20, random_state=1)
    assert_matches(t, ref, attrs)


@pytest.mark.parametrize("kind", ["integers with zeros", "fractions with zeros"])
def test_weights(kind):
    y, s, g = data(250, seed=3 if kind.startswith("integers") else 4)
    rng = np.random.default_rng(9 if kind.startswith("integers") else 10)
    if kind.startswith("integers"):
        w = rng.integers(0, 4, size=len(y)).astype(float)
    else:
        w = rng.uniform(0.0, 3.0, size=len(y))
        w[::17] = 0.0
    seed = 11 if kind.startswith("integers") else 12
    t = quiet_bias_metrics(y, s, g, sample_weight=w, ci="bootstrap", n_boot=25,
                           random_state=seed)
    ref, attrs, _ = ref_table(y, s, g, n_boot=25, random_state=seed, sample_weight=w)
    assert_matches(t, ref, attrs)


def test_weights_far_apart():
    y, s, g = data(200, seed=5)
    w = np.ones(len(y))
    w[np.flatnonzero(y)[:3]] = 1e12
    t = quiet_bias_metrics(y, s, g, sample_weight=w, ci="bootstrap", n_boot=20,
                           random_state=13)
    ref, attrs, _ = ref_table(y, s, g, n_boot=20, random_state=13, sample_weight=w)
    assert_matches(t, ref, attrs, rtol=1e-9, atol=1e-12)


def test_float32_scores():
    y, s, g = data(300, seed=6, ties=False)
    s32 = (s * 3).astype(np.float32)
    t = quiet_bias_metrics(y, s32, g, ci="bootstrap", n_boot=20, random_state=2)
    ref, attrs, _ = ref_table(y, s32.astype(np.float64), g, n_boot=20, random_state=2)
    assert_matches(t, ref, attrs)


def test_label_threshold():
    rng = np.random.default_rng(7)
    frac = rng.random(300)
    s = np.round(frac + rng.normal(0, 0.3, 300), 1)
    g = {"a": rng.random(300) < 0.3}
    t = quiet_bias_metrics(frac, s, g, label_threshold=0.6, ci="bootstrap", n_boot=20,
                           random_state=3)
    ref, attrs, _ = ref_table(frac >= 0.6, s, g, n_boot=20, random_state=3)
    assert_matches(t, ref, attrs)


def test_tiny_subgroups_and_empty_cells():
    """One-row subgroup, a subgroup of one class, an empty subgroup: intervals over the
    replicates where the metric is defined; NaN where fewer than 2 are."""
    y, s, g = data(200, seed=8)
    one = np.zeros(200, bool)
    one[np.flatnonzero(y)[0]] = True
    two = np.zeros(200, bool)
    two[np.flatnonzero(y)[:1]] = True
    two[np.flatnonzero(~y)[:1]] = True
    onlyneg = ~y & (np.arange(200) < 60)
    groups = {"one": one, "two": two, "onlyneg": onlyneg, "a": g["a"]}
    t = quiet_bias_metrics(y, s, groups, ci="bootstrap", n_boot=40, random_state=4)
    ref, attrs, (reps, _, _) = ref_table(y, s, groups, n_boot=40, random_state=4)
    assert_matches(t, ref, attrs)


def _two_row_groups():
    """(y, s, groups): 200 rows, a subgroup "two" of one positive and one negative row (its
    cells emptied in most replicates) and "a"."""
    y, s, g = data(200, seed=8)
    two = np.zeros(200, bool)
    two[np.flatnonzero(y)[:1]] = True
    two[np.flatnonzero(~y)[:1]] = True
    return y, s, {"two": two, "a": g["a"]}


def test_undefined_replicates_warning_counts():
    """The warning's count of dropped replicates equals the reference's count of replicates
    where the cell was emptied."""
    y, s, groups = _two_row_groups()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=40, random_state=4)
    reps, _, _ = ref_replicates(y, s, groups, n_boot=40, random_state=4)
    dropped = int(np.isnan(reps["subgroup_auc"][:, 0]).sum())
    assert dropped > 0
    text = " ".join(str(w.message) for w in rec)
    assert f"two: subgroup_auc ({dropped})" in text, text


def test_empty_subgroup():
    y, s, g = data(200, seed=9)
    groups = {"empty": np.zeros(200, bool), "a": g["a"]}
    t = quiet_bias_metrics(y, s, groups, ci="bootstrap", n_boot=20, random_state=4)
    ref, attrs, _ = ref_table(y, s, groups, n_boot=20, random_state=4, keep=None)
    cols = [c for c in ref.columns]
    assert_matches(t, ref[cols], {k: v for k, v in attrs.items()
                                  if k.startswith("overall")})


def test_nan_policy_omit():
    y, s, g = data(300, seed=10)
    s = s.astype(float)
    s[[3, 50, 77]] = np.nan
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=20, random_state=6,
                           nan_policy="omit")
    keep = ~np.isnan(s)
    ref, attrs, _ = ref_table(y[keep], s[keep], {k: v[keep] for k, v in g.items()},
                              n_boot=20, random_state=6)
    assert_matches(t, ref, attrs)


def test_intersections_final_metric_over_identities_only():
    y, s, g = data(400, seed=11)
    g = {"a": g["a"], "c": g["c"]}
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=20, random_state=7,
                           intersections=2)
    assert list(t.index) == ["a", "c", "a & c"]
    groups = {"a": g["a"], "c": g["c"], "a & c": g["a"] & g["c"]}
    ref, attrs, _ = ref_table(y, s, groups, n_boot=20, random_state=7,
                              keep=np.array([True, True, False]))
    assert_matches(t, ref, attrs)


def test_final_metric_point_matches_reference():
    y, s, g = data(300, seed=12)
    t = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=10, random_state=1)
    met, ov = ref_metrics(y, s, g, np.ones(len(y)))
    assert t.attrs["final_metric"] == pytest.approx(ref_final(ov, met), rel=1e-12)


# ---------------------------------------------------------------------------------------
# 3. evaluate(ci="bootstrap")
# ---------------------------------------------------------------------------------------


def frame(n=300, seed=13):
    y, s, g = data(n, seed=seed)
    rng = np.random.default_rng(seed + 100)
    m2 = np.round(rng.random(n) * 0.5 + 0.5 * y, 1)
    df = pd.DataFrame({"y": y.astype(float), "m1": s, "m2": m2,
                       "a": g["a"].astype(float), "b": g["b"].astype(float)})
    return df


def _model_table(res, model):
    return res.for_model(model)


def test_evaluate_two_models_paired_and_match_reference():
    df = frame()
    res = quiet_evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                         ci="bootstrap", n_boot=20, random_state=8)
    y = df["y"].to_numpy() >= 0.5
    groups = {k: df[k].to_numpy() >= 0.5 for k in ("a", "b")}
    for model in ("m1", "m2"):
        ref, attrs, _ = ref_table(y, df[model].to_numpy(), groups, n_boot=20,
                                  random_state=8)
        assert_matches(_model_table(res, model), ref, attrs)


def test_evaluate_weights_column():
    df = frame(seed=14)
    df["w"] = np.random.default_rng(1).uniform(0.2, 2.0, len(df))
    res = quiet_evaluate(df, label="y", scores=["m1"], subgroups=["a", "b"],
                         sample_weight="w", ci="bootstrap", n_boot=20, random_state=9)
    y = df["y"].to_numpy() >= 0.5
    groups = {k: df[k].to_numpy() >= 0.5 for k in ("a", "b")}
    ref, attrs, _ = ref_table(y, df["m1"].to_numpy(), groups, n_boot=20, random_state=9,
                              sample_weight=df["w"].to_numpy())
    assert_matches(_model_table(res, "m1"), ref, attrs)


def test_evaluate_missing_subgroup_exclude():
    """Each universe (rows annotated for a set of subgroups) is resampled on its own,
    the counts indexed by position within it; the overall AUC's interval is of all rows."""
    df = frame(seed=15)
    a = df["a"].to_numpy().copy()
    a[::7] = np.nan
    df["a"] = a
    res = quiet_evaluate(df, label="y", scores=["m1"], subgroups=["a", "b"],
                         missing_subgroup="exclude", ci="bootstrap", n_boot=20,
                         random_state=10)
    tab = _model_table(res, "m1")
    y = df["y"].to_numpy() >= 0.5
    s = df["m1"].to_numpy()
    kept = ~np.isnan(a)
    ref_a, _, _ = ref_table(y[kept], s[kept], {"a": a[kept] >= 0.5}, n_boot=20,
                            random_state=10)
    ref_b, attrs_b, _ = ref_table(y, s, {"b": df["b"].to_numpy() >= 0.5}, n_boot=20,
                                  random_state=10)
    assert_matches(tab, ref_a, {}, attrs=False)
    assert_matches(tab, ref_b, {k: v for k, v in attrs_b.items()
                                if k.startswith("overall")})
    assert "final_metric_low" not in tab.attrs


def test_evaluate_nan_policy_omit_per_model_rows():
    df = frame(seed=16)
    m2 = df["m2"].to_numpy().copy()
    m2[[1, 5, 9, 200]] = np.nan
    df["m2"] = m2
    res = quiet_evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                         ci="bootstrap", n_boot=20, random_state=11, nan_policy="omit")
    y = df["y"].to_numpy() >= 0.5
    keep = ~np.isnan(m2)
    groups = {k: df[k].to_numpy() >= 0.5 for k in ("a", "b")}
    ref, attrs, _ = ref_table(y[keep], m2[keep], {k: v[keep] for k, v in groups.items()},
                              n_boot=20, random_state=11)
    assert_matches(_model_table(res, "m2"), ref, attrs)


def test_evaluate_sensitive_features():
    df = frame(seed=17)
    df["race"] = np.random.default_rng(3).choice(["x", "y", "z"], len(df))
    res = quiet_evaluate(df, label="y", scores=["m1"], sensitive_features=["race"],
                         ci="bootstrap", n_boot=20, random_state=12)
    tab = _model_table(res, "m1")
    y = df["y"].to_numpy() >= 0.5
    groups = {f"race={v}": (df["race"] == v).to_numpy() for v in ("x", "y", "z")}
    ref, attrs, _ = ref_table(y, df["m1"].to_numpy(), groups, n_boot=20, random_state=12)
    assert_matches(tab, ref, attrs)


# ---------------------------------------------------------------------------------------
# 4. Determinism and random_state
# ---------------------------------------------------------------------------------------


def _interval_columns(t):
    return t[[c for c in t.columns if c.endswith(("_low", "_high", "_se"))]]


def test_same_seed_same_intervals_any_n_jobs():
    y, s, g = data(300, seed=18)
    outs = [quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=40, random_state=3,
                               n_jobs=j) for j in (1, 2, 1)]
    for t in outs[1:]:
        pd.testing.assert_frame_equal(_interval_columns(t), _interval_columns(outs[0]))
        assert t.attrs == outs[0].attrs


def test_seed_sequence_random_state_matches_reference_and_is_reusable():
    """A SeedSequence is documented as a random_state: replicate b's key from its child b.
    Passing the same SeedSequence object twice should give the same intervals."""
    y, s, g = data(200, seed=19)
    ss = np.random.SeedSequence(42)
    t1 = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=10, random_state=ss)
    ref, attrs, _ = ref_table(y, s, g, n_boot=10, random_state=np.random.SeedSequence(42))
    assert_matches(t1, ref, attrs)
    t2 = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=10, random_state=ss)
    assert_matches(t2, ref, attrs)


def test_generator_random_state_pairs_models_in_evaluate():
    """With a numpy Generator as random_state, two identical model columns must get the
    same intervals (one resample for all models), and the same Generator seed must give the
    same result on a second run."""
    df = frame(seed=20)
    df["m1_copy"] = df["m1"]
    r1 = quiet_evaluate(df, label="y", scores=["m1", "m1_copy"], subgroups=["a", "b"],
                        ci="bootstrap", n_boot=10, random_state=np.random.default_rng(5))
    a, b = r1.for_model("m1"), r1.for_model("m1_copy")
    np.testing.assert_array_equal(_interval_columns(a).to_numpy(),
                                  _interval_columns(b).to_numpy())


def test_int_random_state_pairs_models_in_evaluate():
    df = frame(seed=20)
    df["m1_copy"] = df["m1"]
    r1 = quiet_evaluate(df, label="y", scores=["m1", "m1_copy"], subgroups=["a", "b"],
                        ci="bootstrap", n_boot=10, random_state=5)
    a, b = r1.for_model("m1"), r1.for_model("m1_copy")
    np.testing.assert_array_equal(_interval_columns(a).to_numpy(),
                                  _interval_columns(b).to_numpy())


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (np.int64(-3), ValueError),
                                        (1.5, TypeError), ("0", TypeError), (True, TypeError)])
def test_bad_random_state_is_a_clear_error(bad, error):
    """A negative int has the right type and a wrong value: a ValueError (it was a TypeError,
    unlike every other entry point's seed); the rest are of a wrong type."""
    y, s, g = data(100, seed=21)
    with pytest.raises(error, match=rf"^random_state must be None, a non-negative int, .*"
                                    rf"got {re.escape(repr(bad))}$"):
        fastbias.bias_metrics(y, s, g, ci="bootstrap", n_boot=5, random_state=bad)


@pytest.mark.parametrize("bad", [0, 1, 2.0, True, None])
def test_bad_n_boot_is_a_clear_error(bad):
    y, s, g = data(100, seed=21)
    with pytest.raises(ValueError, match="n_boot"):
        fastbias.bias_metrics(y, s, g, ci="bootstrap", n_boot=bad, random_state=0)


def test_seed_sequence_random_state_pairs_models_in_evaluate():
    """A SeedSequence random_state (accepted by evaluate) must resample every model with
    the same counts (children 0..n_boot-1), like an int does; the reference's intervals."""
    df = frame(seed=20)
    df["m1_copy"] = df["m1"]
    res = quiet_evaluate(df, label="y", scores=["m1", "m1_copy"], subgroups=["a", "b"],
                         ci="bootstrap", n_boot=10, random_state=np.random.SeedSequence(5))
    y = df["y"].to_numpy() >= 0.5
    groups = {k: df[k].to_numpy() >= 0.5 for k in ("a", "b")}
    ref, attrs, _ = ref_table(y, df["m1"].to_numpy(), groups, n_boot=10,
                              random_state=np.random.SeedSequence(5))
    for model in ("m1", "m1_copy"):
        assert_matches(res.for_model(model), ref, attrs)


def test_generator_random_state_is_reproducible_in_bias_metrics():
    y, s, g = data(200, seed=22)
    t1 = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=10,
                            random_state=np.random.default_rng(3))
    t2 = quiet_bias_metrics(y, s, g, ci="bootstrap", n_boot=10,
                            random_state=np.random.default_rng(3))
    pd.testing.assert_frame_equal(_interval_columns(t1), _interval_columns(t2))


# ---------------------------------------------------------------------------------------
# 5. Raw replicates, add_intervals, the final metric's dropped replicates
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_bootstrap_replicates_raw_values(weighted):
    from fastbias.intervals import bootstrap_replicates
    from fastbias.prepare.memberships import prepare_subgroups
    y, s, g = data(250, seed=23)
    g["one"] = np.zeros(250, bool)
    g["one"][5] = True
    w = np.random.default_rng(4).uniform(0, 2, 250) if weighted else None
    m = prepare_subgroups(y.astype(np.int8), g, None)
    got = bootstrap_replicates(s, m, w, n_boot=16, random_state=21)
    reps, overall, final = ref_replicates(y, s, g, n_boot=16, random_state=21,
                                          sample_weight=w)
    for metric in METRICS:
        np.testing.assert_allclose(got.metrics[metric], reps[metric], rtol=1e-12,
                                   atol=1e-14, equal_nan=True, err_msg=metric)
    np.testing.assert_allclose(got.overall_auc, overall, rtol=1e-12)
    np.testing.assert_allclose(got.final_metric, final, rtol=1e-12, equal_nan=True)


def test_add_intervals_bootstrap():
    from fastbias.intervals import add_intervals
    y, s, g = data(250, seed=24)
    table = quiet_bias_metrics(y, s, g)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = add_intervals(table, y, s, g, method="bootstrap", n_boot=20, random_state=6,
                            confidence=0.9)
    ref, attrs, _ = ref_table(y, s, g, n_boot=20, random_state=6, confidence=0.9)
    assert_matches(out, ref, attrs)


def test_final_metric_dropped_replicates_are_warned():
    """A 2-row subgroup empties its cells in most replicates: the final metric of such a
    replicate is NaN and its interval uses the few others (12 of 40 here). The warning
    lists every per-subgroup metric's dropped count but says nothing of the final
    metric's, whose interval is then of a conditional subset of the replicates."""
    y, s, groups = _two_row_groups()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=40, random_state=4)
    _, _, final = ref_replicates(y, s, groups, n_boot=40, random_state=4)
    lo, hi, se, kept = ref_interval(final, 0.95)
    assert (t.attrs["final_metric_low"], t.attrs["final_metric_high"]) == \
        pytest.approx((lo, hi), rel=1e-12)
    assert kept == 12
    text = " ".join(str(w.message) for w in rec)
    assert "final metric" in text.lower(), text


# ---------------------------------------------------------------------------------------
# 6. The first call's numpy tier (fresh process, empty Numba cache, default settings)
# ---------------------------------------------------------------------------------------

@pytest.mark.usefixtures("compiling")
def test_first_call_numpy_tier_matches_reference():
    """A cold call's bootstrap counted in numpy (the kernels still compiling: ``compiling``
    starts no child) gives the reference's intervals, unweighted and weighted."""
    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.4
    s = np.round(rng.random(300) + 0.3 * y, 1)
    g = {"a": rng.random(300) < 0.3, "b": rng.random(300) < 0.1}
    w = rng.uniform(0.1, 3, 300)
    names = ("overall_auc_low", "overall_auc_high", "overall_auc_se", "final_metric_low",
             "final_metric_high", "final_metric_se")
    for sw in (None, w):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = fastbias.bias_metrics(y, s, g, ci="bootstrap", n_boot=20, random_state=4,
                                      sample_weight=sw)
        ref, attrs, _ = ref_table(y, s, g, n_boot=20, random_state=4, sample_weight=sw)
        cols = [f"{m}_{p}" for m in METRICS for p in ("low", "high", "se")]
        np.testing.assert_allclose(t[cols].to_numpy(), ref[cols].to_numpy(), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose([t.attrs[k] for k in names], [attrs[k] for k in names],
                                   rtol=1e-10, atol=1e-12)


def test_exclude_warns_only_of_the_intervals_it_makes():
    """With missing_subgroup="exclude" no final metric's interval is made (said so) and the
    overall AUC's is of all the rows: a universe's left-out replicates of either are not
    listed as if they were the table's; the kept final metric's count is in attrs without
    exclude."""
    rng = np.random.default_rng(8)
    n = 200
    y = rng.random(n) < 0.4
    df = pd.DataFrame({"y": y, "s": np.round(rng.random(n) + 0.3 * y, 1)})
    two = np.zeros(n)
    two[np.flatnonzero(y)[:1]] = 1
    two[np.flatnonzero(~y)[:1]] = 1
    df["two"] = two
    df["a"] = (rng.random(n) < 0.3).astype(float)
    df.loc[rng.random(n) < 0.2, "a"] = np.nan
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fastbias.evaluate(df, label="y", scores="s", subgroups=["two", "a"],
                                ci="bootstrap", n_boot=40, random_state=4,
                                missing_subgroup="exclude")
    text = " ".join(str(w.message) for w in rec)
    assert "final metric (" not in text and "the final metric" in text
    assert "final_metric_replicates" not in res.table.attrs
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, df["s"].to_numpy(), {"two": two.astype(bool)},
                                  ci="bootstrap", n_boot=40, random_state=4)
    _, _, final = ref_replicates(y, df["s"].to_numpy(), {"two": two.astype(bool)},
                                 n_boot=40, random_state=4)
    kept = int(np.isfinite(final).sum())
    assert t.attrs["final_metric_replicates"] == kept < 40
    assert f"final metric ({40 - kept})" in " ".join(str(w.message) for w in rec)
