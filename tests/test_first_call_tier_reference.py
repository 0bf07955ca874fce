"""An independent review's tests (2026-11-27) of the first-call numpy tier
(fastbias/sweep/first_call.py,
fastbias/intervals/first_call.py, threshold_counts_in_numpy) against the compiled kernels and
against independent references: exact pair counts in fractions.Fraction, an exact rational
DeLong variance, and the bootstrap's Poisson(1) stream re-derived from docs/intervals.md
(SplitMix64 of key + i * golden, 32 high bits inverted through round(P(K <= k) * 2**32)).

The tier is forced in-process as tests/test_first_call.py's ``compiling`` fixture does (every
kernel looks uncompiled, background compilations never finish); the kernels' answer is the
same call with FASTBIAS_FIRST_CALL=0.

The review found no number of the tier off the kernels' or the exact value; found by review
(fails before its fix): docs/architecture.md gave the permutation draws' numpy rule as 8 x
size**2 class rows where the code uses 32.
"""
import contextlib
import math
import os
import re
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import _numba_cache
from fastbias.sweep import first_call

REPO = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- harness
@contextlib.contextmanager
def tier():
    """Every call computes in numpy (kernels look cold, no child ever finishes)."""
    env = os.environ.get("FASTBIAS_FIRST_CALL")
    os.environ["FASTBIAS_FIRST_CALL"] = "1"
    saved = (_numba_cache._needs_compiling, _numba_cache._ready, _numba_cache._pending,
             first_call._children, first_call._requested, first_call._runner,
             first_call._start_children)
    _numba_cache._needs_compiling = lambda dispatcher, kind=None: True
    _numba_cache._ready, _numba_cache._pending = set(), {}
    first_call._children, first_call._requested, first_call._runner = {}, [], []
    first_call._start_children = lambda: first_call._runner.clear()
    try:
        yield first_call._requested
    finally:
        (_numba_cache._needs_compiling, _numba_cache._ready, _numba_cache._pending,
         first_call._children, first_call._requested, first_call._runner,
         first_call._start_children) = saved
        if env is None:
            os.environ.pop("FASTBIAS_FIRST_CALL")
        else:
            os.environ["FASTBIAS_FIRST_CALL"] = env


@contextlib.contextmanager
def kernels():
    env = os.environ.get("FASTBIAS_FIRST_CALL")
    os.environ["FASTBIAS_FIRST_CALL"] = "0"
    try:
        yield
    finally:
        if env is None:
            os.environ.pop("FASTBIAS_FIRST_CALL")
        else:
            os.environ["FASTBIAS_FIRST_CALL"] = env


def run_both(fn):
    """((result, error, warnings, families asked for), (result, error, warnings)) of the tier
    and of the kernels."""
    out = []
    for ctx in (tier, kernels):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with ctx() as requested:
                try:
                    value, error = fn(), None
                except (ValueError, TypeError) as e:
                    value, error = None, e
                requested = list(requested or [])
        out.append((value, error, sorted(str(w.message) for w in caught), requested))
    return out


def pair_prob(a, wa, b, wb):
    """P(s_A > s_B) + 1/2 P(s_A = s_B) over weighted pairs, exactly; None without pairs."""
    num = den = Fraction(0)
    for x, u in zip(a, wa):
        for y, v in zip(b, wb):
            p = Fraction(u) * Fraction(v)
            den += p
            if x > y:
                num += p
            elif x == y:
                num += p / 2
    return None if den == 0 else num / den


def exact_metrics(y, s, g, w=None):
    y, g, s = np.asarray(y, bool), np.asarray(g, bool), np.asarray(s)
    w = np.ones(len(y)) if w is None else np.asarray(w, float)

    def cell(mask):
        return [float(v) for v in s[mask]], [float(v) for v in w[mask]]

    sn, sp, bn, bp = cell(g & ~y), cell(g & y), cell(~g & ~y), cell(~g & y)
    out = {"subgroup_auc": pair_prob(*sp, *sn), "bpsn_auc": pair_prob(*bp, *sn),
           "bnsp_auc": pair_prob(*sp, *bn)}
    x = pair_prob(*bn, *sn)
    out["negative_aeg"] = None if x is None else Fraction(1, 2) - x
    x = pair_prob(*bp, *sp)
    out["positive_aeg"] = None if x is None else Fraction(1, 2) - x
    return out


def assert_exact(table, y, s, groups, w=None):
    for j in range(groups.shape[1]):
        for metric, v in exact_metrics(y, s, groups[:, j], w).items():
            got = table.iloc[j][metric]
            if v is None:
                assert np.isnan(got), (j, metric, got)
            elif w is None:
                assert got == float(v), (j, metric, got, float(v))  # bit for bit
            else:
                assert abs(got - float(v)) <= 2.0 ** -50 * abs(float(v)) + 2.0 ** -70, \
                    (j, metric, got, float(v))


def tied_case(rng, n, k):
    y = rng.random(n) < rng.choice([0.2, 0.5, 0.8])
    s = (rng.integers(0, int(rng.choice([2, 3, 50])), n) / 3).astype(
        rng.choice([np.float32, np.float64]))
    s[rng.random(n) < 0.2] = -0.0
    s[rng.random(n) < 0.1] = 0.0
    groups = rng.random((n, k)) < np.array([0.0, 0.3, 0.9, 1.0])[:k]
    return y, s, groups


# ------------------------------------------------------ point estimates: exact, both tiers
@pytest.mark.parametrize("seed", range(12))
def test_tier_unweighted_point_estimates_are_the_exact_rationals(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    y, s, groups = tied_case(rng, n, 4)  # empty, partial, nearly all, every row
    (t, te, tw, req), (k, ke, kw, _) = run_both(lambda: fastbias.bias_metrics(y, s, groups))
    assert te is None and ke is None and req == ["counting"]
    assert tw == kw
    pd.testing.assert_frame_equal(t, k, check_exact=True)
    assert_exact(t, y, s, groups)


@pytest.mark.parametrize("kind", ["spread", "subgroup_heavy", "background_tiny", "near_limit"])
@pytest.mark.parametrize("seed", range(4))
def test_tier_weighted_point_estimates_within_2_50_of_exact(kind, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(3, 40))
    y, s, groups = tied_case(rng, n, 3)
    w = rng.random(n)
    if kind == "spread":
        w *= 2.0 ** rng.integers(-235, 235, n)
    elif kind == "subgroup_heavy":  # subgroup carries 2**40..2**200 times the rest
        w[groups[:, 2]] *= 2.0 ** int(rng.integers(40, 200))
    elif kind == "background_tiny":
        w[~groups[:, 1]] *= 2.0 ** -int(rng.integers(40, 200))
    else:  # weights spanning nearly the accepted 2**480
        w = (1.0 + w) * 2.0 ** rng.integers(-470, 1, n).astype(float)
    w[rng.random(n) < 0.15] = rng.choice([0.0, -0.0])
    (t, te, _, req), (k, ke, _, _) = run_both(
        lambda: fastbias.bias_metrics(y, s, groups, sample_weight=w))
    assert te is None and ke is None and req == ["weighted"]
    assert_exact(t, y, s, groups, w)
    assert_exact(k, y, s, groups, w)


# ------------------------------------------------------------------- DeLong: exact variance
def exact_delong_var(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    m, n = len(x), len(y)
    if m < 2 or n < 2:
        return None
    ys, xs = np.sort(y), np.sort(x)
    p = [int(a) + int(b) for a, b in zip(np.searchsorted(ys, x, "left"),
                                         np.searchsorted(ys, x, "right"))]  # 2n * V10
    lt, le = np.searchsorted(xs, y, "left"), np.searchsorted(xs, y, "right")
    q = [2 * (m - int(b)) + int(b) - int(a) for a, b in zip(lt, le)]  # 2m * V01
    theta = Fraction(sum(p), 2 * m * n)
    s10 = (Fraction(sum(v * v for v in p), 4 * n * n) - m * theta * theta) / (m - 1)
    s01 = (Fraction(sum(v * v for v in q), 4 * m * m) - n * theta * theta) / (n - 1)
    return s10 / m + s01 / n


CELLS = {"subgroup_auc": ("sp", "sn"), "bpsn_auc": ("bp", "sn"), "bnsp_auc": ("sp", "bn"),
         "negative_aeg": ("bn", "sn"), "positive_aeg": ("bp", "sp")}


@pytest.mark.parametrize("inversions", [0, 1, 3])
@pytest.mark.parametrize("weighted", [False, True])
def test_tier_delong_of_a_nearly_separating_model_is_the_exact_variance(inversions, weighted):
    # variances that are tiny differences of large sums (AUC 1 - 1e-7): the tier rechecks from
    # rows where the kernels use exact sums; both must give the exact rational variance
    rng = np.random.default_rng(inversions + 10 * weighted)
    n = 12_000
    y = rng.random(n) < 0.5
    s = np.where(y, 1.0 + rng.random(n), rng.random(n))
    bad = rng.choice(n, inversions, replace=False)
    s[bad] = np.where(y[bad], 0.5, 1.5)
    groups = np.column_stack([rng.random(n) < 0.002, rng.random(n) < 0.999,
                              rng.random(n) < 0.3])
    groups[bad, 0] = True
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    (t, te, tw, req), (k, ke, kw, _) = run_both(
        lambda: fastbias.bias_metrics(y, s, groups, ci="delong", sample_weight=w))
    assert te is None and ke is None and "delong" in req and tw == kw
    rep = np.ones(n, int) if w is None else w.astype(int)  # integer weights = repeated rows
    yy, ss, gg = np.repeat(y, rep), np.repeat(s, rep), np.repeat(groups, rep, axis=0)
    for j in range(groups.shape[1]):
        cell = {"sn": ss[gg[:, j] & ~yy], "sp": ss[gg[:, j] & yy],
                "bn": ss[~gg[:, j] & ~yy], "bp": ss[~gg[:, j] & yy]}
        for metric, (a, b) in CELLS.items():
            v = exact_delong_var(cell[a], cell[b])
            for table in (t, k):
                got = table.iloc[j][f"{metric}_se"]
                if v is None:
                    assert np.isnan(got), (j, metric)
                else:
                    assert got == pytest.approx(math.sqrt(v), rel=1e-9, abs=1e-15), (j, metric)


# --------------------------------------------------- bootstrap: the documented stream
M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def _mix(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def _thresholds():
    out, term, total = [], math.exp(-1.0), 0.0
    for k in range(40):
        total += term
        term /= k + 1
        t = round(total * 2.0 ** 32)
        if t >= 2 ** 32:
            break
        out.append(t)
    return out


def poisson_draws(key, n):
    th = _thresholds()
    return np.array([sum((_mix(key + i * GOLDEN) >> 32) >= t for t in th) for i in range(n)])


@pytest.mark.parametrize("weighted", [False, True])
def test_tier_bootstrap_replicates_are_the_documented_streams_metrics(weighted):
    from fastbias.intervals.bootstrap import replicates
    from fastbias.prepare.memberships import prepare_subgroups
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(11 + weighted)
    n = 30
    y, s, groups = tied_case(rng, n, 4)
    w = rng.random(n) * 2.0 ** rng.integers(-60, 60, n) if weighted else None
    n_boot, state = 5, 17
    with tier():
        got = replicates(None, w, n_boot=n_boot, random_state=state,
                         first_call=(s, prepare_subgroups(y, groups, compiled=False)))
    with kernels():
        want = replicates(SortedScores(s, prepare_subgroups(y, groups), with_rows=w is None), w,
                          n_boot=n_boot, random_state=state)
    for b, seed in enumerate(np.random.SeedSequence(state).spawn(n_boot)):
        draws = poisson_draws(int(seed.generate_state(1, dtype=np.uint64)[0]), n)
        ww = draws * (1.0 if w is None else w)
        for j in range(groups.shape[1]):
            for metric, v in exact_metrics(y, s, groups[:, j], ww).items():
                a, c = got.metrics[metric][b, j], want.metrics[metric][b, j]
                if w is None:
                    assert a == c or (np.isnan(a) and np.isnan(c))  # the kernels' bits
                else:
                    assert a == pytest.approx(c, rel=1e-12, abs=1e-15, nan_ok=True)
                if v is None:
                    assert np.isnan(a), (b, j, metric)
                elif w is None:  # integer counts: correctly rounded, AEGs too (an AEG was
                    # 1/2 - p in float, an ulp off: noted by review)
                    assert a == float(v), (b, j, metric, a, float(v))
                else:
                    assert abs(a - float(v)) <= 2.0 ** -50 * abs(float(v)) + 2.0 ** -52, \
                        (b, j, metric, a, float(v))
        ov = pair_prob([float(x) for x in s[y]], list(ww[y]), [float(x) for x in s[~y]],
                       list(ww[~y]))
        if w is None:
            assert got.overall_auc[b] == float(ov)
        else:
            assert got.overall_auc[b] == pytest.approx(float(ov), rel=2.0 ** -50)


# ------------------------------------------- tier == kernels over options (public entry points)
OPTIONS = [dict(), dict(ci="delong"), dict(ci="bootstrap", n_boot=10, random_state=3),
           dict(ci="bernstein"), dict(significance="holm"), dict(intersections=2, n_jobs=2),
           dict(min_subgroup_size=5, significance="bh", ci="delong")]


def assert_tables_agree(t, k, exact):
    assert list(t.columns) == list(k.columns) and list(t.index) == list(k.index)
    for c in t.columns:
        if not pd.api.types.is_numeric_dtype(t[c]) or pd.api.types.is_bool_dtype(t[c]):
            assert t[c].equals(k[c]), c
            continue
        a, b = t[c].to_numpy(float), k[c].to_numpy(float)
        tight = not c.endswith(("_low", "_high", "_se", "_pvalue", "_pvalue_adjusted"))
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=c)
        else:
            np.testing.assert_allclose(a, b, rtol=2.0 ** -50 if tight else 1e-9,
                                       atol=2.0 ** -70 if tight else 1e-12, err_msg=c)


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items()))
@pytest.mark.parametrize("weighted", [False, True])
def test_tier_equals_the_kernels_for_every_option(opts, weighted):
    rng = np.random.default_rng(5)
    n = 800
    y, s, groups = tied_case(rng, n, 4)
    s[rng.random(n) < 0.05] = np.finfo(s.dtype).smallest_subnormal
    kw = dict(opts)
    if weighted:
        if kw.get("ci") == "bernstein":
            kw["ci"] = "bootstrap"
            kw.update(n_boot=10, random_state=1)
        w = rng.random(n) * 2.0 ** rng.integers(-30, 30, n)
        w[rng.random(n) < 0.1] = 0.0
        kw["sample_weight"] = w
    (t, te, tw, req), (k, ke, kwarn, _) = run_both(lambda: fastbias.bias_metrics(y, s, groups,
                                                                                 **kw))
    assert te is None and ke is None and req
    assert tw == kwarn
    exact = not weighted and kw.get("ci") != "delong" and "significance" not in kw
    assert_tables_agree(t, k, exact)


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("ci", [None, "delong", "bootstrap"])
def test_tier_evaluate_with_nan_identities_equals_the_kernels(missing_subgroup, ci):
    rng = np.random.default_rng(9)
    n = 1500
    y, s, groups = tied_case(rng, n, 4)
    df = pd.DataFrame({"label": y.astype(float), "m1": s, "m2": s[::-1].copy()})
    for j in range(4):
        col = groups[:, j].astype(float)
        col[rng.random(n) < [0.0, 0.3, 0.5, 1.0][j]] = np.nan  # the last: every row missing
        df[f"id {j}"] = col
    kw = dict(label="label", scores=["m1", "m2"], subgroups=[f"id {j}" for j in range(4)],
              missing_subgroup=missing_subgroup, ci=ci, n_boot=8, random_state=2,
              thresholds=[0.0, 0.5])
    (t, te, tw, req), (k, ke, kwarn, _) = run_both(lambda: fastbias.evaluate(df, **kw))
    assert te is None and ke is None and req and tw == kwarn
    assert_tables_agree(t.table, k.table, exact=ci != "delong")
    np.testing.assert_array_equal(np.asarray(t.overall_auc), np.asarray(k.overall_auc))
    pd.testing.assert_frame_equal(t.thresholds, k.thresholds, check_exact=True)
    # the subgroup comparisons against the exact reference (excluded rows dropped)
    table = t.for_model("m1")
    col = df["id 1"].to_numpy()
    if missing_subgroup == "exclude":
        known = ~np.isnan(col)
        ref = exact_metrics(y[known], s[known], col[known] >= 0.5)
    else:  # a missing annotation: background
        ref = exact_metrics(y, s, np.nan_to_num(col, nan=0.0) >= 0.5)
    for metric, v in ref.items():
        assert table.loc["id 1", metric] == float(v), metric
    assert np.isnan(table.loc["id 3", "subgroup_auc"])  # every row missing


# ---------------------------------------------------------------------- found by review
def test_docs_state_the_permutation_draw_rule_the_tier_uses():
    # Was (docs): docs/architecture.md says the tier draws permutation tests in numpy
    # "where the class has at least 8 x size**2 rows"; the code
    # (intervals/first_call.DRAWS_IN_NUMPY_ROWS_PER_SQUARE) uses 32 x size**2, so a class of
    # 8-31 x size**2 rows draws in the kernel (compiled by the cold call itself, ~1.2 s)
    # although the docs promise numpy. Correct: the docs and the constant agree.
    from fastbias.intervals.first_call import draws_in_numpy

    text = (REPO / "docs" / "architecture.md").read_text()
    factor = int(re.search(r"at least (\d+) x size\*\*2 rows", text).group(1))
    size = 5
    assert draws_in_numpy(factor * size * size, size)
