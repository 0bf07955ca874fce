"""An independent review's tests (2026-11-28, thirty-eighth session) of the first-call
bootstrap tier after a5a194a (CountsPlan, WeightedCountsPlan, counts_and_plan,
keeps_numpy_plan): each check against an independent reference (brute-force pair counts in
fractions, sklearn's roc_auc_score) or, where the claim is that two paths agree, the kernels'
answer to the same call (unweighted bit for bit), the switch to the kernels midway, models in
threads, and every bad ``n_boot`` refused by name on and off the tier.

Found by review (failed before its fix): the weighted plan kept the replicates' base weights
gathered along the classes keyed by the array's identity, so a weight array changed in place
was weighed as it was before; the gathering is now the caller's copy
(``weights_in_order``/``replicate_counts``).
"""
import threading
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import _numba_cache
from fastbias.prepare.memberships import prepare_subgroups
from fastbias.sweep import _kernels as K
from fastbias.sweep import first_call
from fastbias.sweep.first_call import CountsPlan, WeightedCountsPlan, counts_and_plan

from . import test_first_call as tier_fixtures

# ---------------------------------------------------------------- fixtures
# (test_first_call's: kernels that look uncompiled, background compilations that never end)
cold, compiling = tier_fixtures.cold, tier_fixtures.compiling


def warm(monkeypatch):
    """The kernels from here on (as test_first_call's tests switch)."""
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)


# ---------------------------------------------------------------- brute-force reference
def brute_counts(s, y, groups, mult):
    """Twice-U pair counts with each row weighted by ``mult`` (ints: a row repeated that
    many times; or Fractions: weights), ties 1/2 (so twice: 1), exactly."""
    s = np.asarray(s, dtype=np.float64)
    y = np.asarray(y, dtype=bool)
    mult = [m if isinstance(m, Fraction) else int(m) for m in mult]
    n, k = groups.shape

    def twice_above(a_rows, b_rows):  # sum over a in A, b in B: m_a m_b (2[s_a>s_b] + [=])
        total = 0
        for a in a_rows:
            for b in b_rows:
                if s[a] > s[b]:
                    total += 2 * mult[a] * mult[b]
                elif s[a] == s[b]:
                    total += mult[a] * mult[b]
        return total

    rows = np.arange(n)
    pos, neg = rows[y], rows[~y]
    out = []
    for g in range(k):
        inn = groups[:, g].astype(bool)
        gp, gn = rows[inn & y], rows[inn & ~y]
        bp, bn = rows[~inn & y], rows[~inn & ~y]
        row = [0] * K.N_COUNT_COLUMNS
        row[K.CELL_SUBGROUP_NEG] = sum(mult[i] for i in gn)
        row[K.CELL_SUBGROUP_POS] = sum(mult[i] for i in gp)
        row[K.TWICE_SUBGROUP_U] = twice_above(gp, gn)
        row[K.TWICE_BPSN_U] = twice_above(bp, gn)
        row[K.TWICE_BNSP_U] = twice_above(gp, bn)
        row[K.TWICE_NEG_BG_ABOVE_U] = twice_above(bn, gn)
        row[K.TWICE_POS_BG_ABOVE_U] = twice_above(bp, gp)
        out.append(row)
    return (out, sum(mult[i] for i in neg), sum(mult[i] for i in pos), twice_above(pos, neg))


def assert_counts_equal_brute(sc, ref):
    rows, tn, tp, tu = ref
    assert sc.counts.shape == (len(rows), K.N_COUNT_COLUMNS)
    assert [[int(v) for v in r] for r in sc.counts] == rows
    assert (int(sc.total_neg), int(sc.total_pos), int(sc.twice_overall_u)) == (tn, tp, tu)


def tied_case(rng, n, k, p_pos=0.4):
    y = rng.random(n) < p_pos
    s = (rng.integers(-2, 3, n) / 4.0)
    s[rng.random(n) < 0.2] = -0.0
    groups = rng.random((n, k)) < rng.choice([0.0, 0.3, 0.8, 1.0], k)
    return y, s, groups


# ---------------------------------------------------------------- CountsPlan against brute force
@pytest.mark.parametrize("seed", range(12))
def test_counts_plan_counts_each_row_as_often_as_drawn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    k = int(rng.integers(1, 4))
    y, s, groups = tied_case(rng, n, k, p_pos=float(rng.choice([0.0, 0.4, 1.0])))
    s = s.astype(rng.choice([np.float32, np.float64]))
    m = prepare_subgroups(y, groups, compiled=False)
    plan = CountsPlan(s, m)
    assert_counts_equal_brute(plan.counts(), brute_counts(s, y, groups, np.ones(n, int)))
    for top in (0, 1, 3, 12):
        draws = rng.integers(0, top + 1, n).astype(np.uint8)
        assert_counts_equal_brute(plan.counts(draws), brute_counts(s, y, groups, draws))


def test_counts_plan_draws_of_zero_everywhere_and_max_draws():
    rng = np.random.default_rng(7)
    n = 30
    y, s, groups = tied_case(rng, n, 3)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = CountsPlan(s, m)
    zero = plan.counts(np.zeros(n, np.uint8))
    assert not zero.counts.any() and (zero.total_neg, zero.total_pos, zero.twice_overall_u) == (0, 0, 0)
    big = np.full(n, 255, np.uint8)
    assert_counts_equal_brute(plan.counts(big), brute_counts(s, y, groups, big))


def test_counts_plan_signed_zeros_tie():
    # -0.0 and 0.0 are the same score: every pair among them ties
    y = np.array([0, 1, 0, 1, 0, 1], bool)
    s = np.array([-0.0, 0.0, 0.0, -0.0, 1.0, -1.0])
    groups = np.array([[1, 0], [1, 1], [0, 1], [0, 0], [1, 1], [0, 1]], bool)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = CountsPlan(s, m)
    assert_counts_equal_brute(plan.counts(), brute_counts(s, y, groups, np.ones(6, int)))
    d = np.array([2, 0, 3, 1, 1, 4], np.uint8)
    assert_counts_equal_brute(plan.counts(d), brute_counts(s, y, groups, d))


@pytest.mark.parametrize("seed", range(4))
def test_counts_plan_metrics_equal_sklearn(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = 400, 3
    y = rng.random(n) < 0.35
    s = rng.integers(0, 30, n) / 30.0
    groups = rng.random((n, k)) < 0.3
    sc = CountsPlan(s, prepare_subgroups(y, groups, compiled=False)).counts()
    c = sc.counts
    assert sc.twice_overall_u / (2 * sc.total_neg * sc.total_pos) == pytest.approx(
        roc_auc_score(y, s), abs=1e-15)
    for g in range(k):
        inn = groups[:, g]
        sub = c[g, K.TWICE_SUBGROUP_U] / (2 * c[g, K.CELL_SUBGROUP_NEG] * c[g, K.CELL_SUBGROUP_POS])
        assert sub == pytest.approx(roc_auc_score(y[inn], s[inn]), abs=1e-15)
        bpsn_rows = (inn & ~y) | (~inn & y)
        bpsn = c[g, K.TWICE_BPSN_U] / (2 * c[g, K.CELL_SUBGROUP_NEG] * (sc.total_pos - c[g, K.CELL_SUBGROUP_POS]))
        assert bpsn == pytest.approx(roc_auc_score(y[bpsn_rows], s[bpsn_rows]), abs=1e-15)
        bnsp_rows = (inn & y) | (~inn & ~y)
        bnsp = c[g, K.TWICE_BNSP_U] / (2 * c[g, K.CELL_SUBGROUP_POS] * (sc.total_neg - c[g, K.CELL_SUBGROUP_NEG]))
        assert bnsp == pytest.approx(roc_auc_score(y[bnsp_rows], s[bnsp_rows]), abs=1e-15)


def test_counts_and_plan_weighted_counts_equal_brute_force_fractions():
    rng = np.random.default_rng(3)
    n = 25
    y, s, groups = tied_case(rng, n, 3)
    w = rng.integers(0, 5, n) / 8.0  # exact dyadic weights, zeros included
    m = prepare_subgroups(y, groups, compiled=False)
    sc, plan = counts_and_plan(s, m, w, keep=True)
    assert isinstance(plan, WeightedCountsPlan)
    rows, tn, tp, tu = brute_counts(s, y, groups, [Fraction(x) for x in w])
    # (weights are scaled by 1/weight_scale: cells by it, pair sums by its square)
    power = np.array([1, 1, 2, 2, 2, 2, 2])

    def check(sc, rows, tn, tp, tu):
        scale = sc.weight_scale
        np.testing.assert_array_equal(sc.counts * scale ** power, np.array(rows, dtype=float))
        assert (sc.total_neg * scale, sc.total_pos * scale, sc.twice_overall_u * scale ** 2) \
            == (tn, tp, tu)

    check(sc, rows, tn, tp, tu)
    d = rng.integers(0, 4, n).astype(np.uint8)
    check(plan.replicate_counts(plan.weights_in_order(w), d),
          *brute_counts(s, y, groups, [Fraction(x) * int(k) for x, k in zip(w, d)]))


# ---------------------------------------------------------------- the cached base weights
def test_weighted_plan_weighs_the_weights_as_they_were_when_gathered():
    """A replicate weighs the base weights gathered by ``weights_in_order`` (a copy): after
    ``w`` is changed in place, a new gathering weighs the new weights and the earlier one
    the old, each equal to brute force. (Found by review: the plan kept the gathered weights
    keyed by the array's identity, and after ``w *= 2`` a second call with the same array
    read the first's, class totals (10, 11) against (20, 22).)"""
    y = np.array([0, 1, 0, 1, 1, 0], bool)
    s = np.array([0.1, 0.9, 0.4, 0.3, 0.7, 0.2])
    groups = np.array([[1], [1], [1], [0], [0], [0]], bool)
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    d = np.ones(6, np.uint8)
    before = plan.weights_in_order(w)
    first = plan.replicate_counts(before, d)
    assert first.total_pos * first.weight_scale == 11.0
    w *= 2.0  # in place: the same array object
    got = plan.replicate_counts(plan.weights_in_order(w), d)
    rows, tn, tp, tu = brute_counts(s, y, groups, [Fraction(x) for x in w])
    assert (got.total_neg * got.weight_scale, got.total_pos * got.weight_scale) == (tn, tp), \
        (got.total_neg * got.weight_scale, got.total_pos * got.weight_scale, tn, tp)
    again = plan.replicate_counts(before, d)
    assert (again.total_neg * again.weight_scale, again.total_pos * again.weight_scale) == \
        (10, 11)


def test_weighted_plan_shared_by_threads_keeps_each_threads_weights():
    """Two threads weighing one ``WeightedCountsPlan`` with different base weights, each its
    own gathering: the plan holds nothing of a call's weights (no fastbias path shares a
    plan between threads: each model and universe makes its own). A pin."""
    rng = np.random.default_rng(0)
    n = 20_000
    y = rng.random(n) < 0.4
    s = rng.random(n)
    groups = rng.random((n, 2)) < 0.3
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    bases = [np.ones(n), np.full(n, 3.0)]
    d = np.ones(n, np.uint8)
    expected = [plan.counts(b * d).total_pos * plan.counts(b * d).weight_scale for b in bases]
    wrong = []
    gathered = [plan.weights_in_order(b) for b in bases]

    def work(i):
        for _ in range(40):
            sc = plan.replicate_counts(gathered[i], d)
            if sc.total_pos * sc.weight_scale != expected[i]:
                wrong.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, f"{len(wrong)} of 80 counts read the other thread's weights"


def test_fresh_base_array_is_gathered_anew():
    rng = np.random.default_rng(5)
    n = 40
    y, s, groups = tied_case(rng, n, 2)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    d = rng.integers(0, 4, n).astype(np.uint8)
    for base in (rng.random(n), rng.random(n) * 1e300, rng.random(n) * 1e-300):
        got = plan.replicate_counts(plan.weights_in_order(base), d)
        want = WeightedCountsPlan(s, m).counts(d * base)
        np.testing.assert_array_equal(got.counts, want.counts)
        assert got.twice_overall_u == want.twice_overall_u


# ---------------------------------------------------------------- the tier against the kernels
def _data(seed, n=1_500, k=3):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    s = (rng.integers(0, 50, n) / 50).astype(np.float32)
    s[rng.random(n) < 0.05] = -0.0
    groups = rng.random((n, k)) < rng.choice([0.05, 0.3, 0.9], k)
    return rng, y, s, groups


def _same(got, expected, exact):
    assert list(got.columns) == list(expected.columns)
    assert list(got.index) == list(expected.index)
    if exact:
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        np.testing.assert_equal(dict(got.attrs), dict(expected.attrs))
        return
    for c in got.columns:
        if pd.api.types.is_numeric_dtype(got[c]):
            np.testing.assert_allclose(got[c].to_numpy(float), expected[c].to_numpy(float),
                                       rtol=1e-12, atol=1e-12, err_msg=c)
        else:
            assert got[c].equals(expected[c]), c
    for key, v in got.attrs.items():
        if isinstance(v, float):
            np.testing.assert_allclose(v, expected.attrs[key], rtol=1e-12, atol=1e-12, err_msg=key)


def spy_plans(monkeypatch):
    """The plan each set of numpy replicates is handed (proof the tier ran)."""
    from fastbias.intervals import first_call as interval_tier

    plans = []
    monkeypatch.setattr(interval_tier.NumpyReplicates, "__init__",
                        lambda self, *a, plan=None, f=interval_tier.NumpyReplicates.__init__:
                        plans.append(plan) or f(self, *a, plan=plan))
    return plans


@pytest.mark.parametrize("case", ["plain", "weights_zeros", "huge", "tiny", "max", "omit",
                                  "inter"])
def test_tier_bias_metrics_bootstrap_equals_kernels(compiling, monkeypatch, case):
    plans = spy_plans(monkeypatch)
    rng, y, s, groups = _data(11)
    n = len(y)
    kw = dict(ci="bootstrap", n_boot=20, random_state=3)
    if case == "weights_zeros":
        w = rng.random(n)
        w[rng.random(n) < 0.2] = 0.0
        kw["sample_weight"] = w
    elif case == "huge":
        kw["sample_weight"] = rng.random(n) * 1e300
    elif case == "tiny":
        kw["sample_weight"] = (rng.random(n) + 0.5) * 1e-300
    elif case == "max":
        kw["sample_weight"] = (rng.random(n) * 0.9 + 0.1) * 1.7e308
    elif case == "omit":
        s = s.astype(np.float64)
        s[rng.random(n) < 0.05] = np.nan
        kw["nan_policy"] = "omit"
    elif case == "inter":
        kw["intersections"] = 2
    got = fastbias.bias_metrics(y, s, groups, **kw)
    assert len(plans) == 1 and plans[0] is not None  # the replicates ran in numpy
    warm(monkeypatch)
    expected = fastbias.bias_metrics(y, s, groups, **kw)
    _same(got, expected, exact="sample_weight" not in kw)
    # and the point estimate against sklearn
    keep = ~np.isnan(s.astype(float))
    ref_w = kw.get("sample_weight")
    for j, name in enumerate(got.index[:groups.shape[1]]):
        inn = groups[keep, j]
        yy, ss = y[keep][inn], s[keep][inn].astype(float)
        ww = None if ref_w is None else ref_w[keep][inn] / ref_w.max()  # (sklearn overflows)
        if len(set(yy)) == 2 and (ww is None or (ww[yy] > 0).any() and (ww[~yy] > 0).any()):
            assert got.loc[name, "subgroup_auc"] == pytest.approx(
                roc_auc_score(yy, ss, sample_weight=ww), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_tier_bootstrap_switching_midway_equals_kernels(compiling, monkeypatch, weighted):
    from fastbias.intervals import bootstrap

    rng, y, s, groups = _data(12)
    kw = dict(ci="bootstrap", n_boot=24, random_state=4,
              sample_weight=rng.random(len(y)) if weighted else None)
    ready_after = iter([True] * 7 + [False] * 100)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: next(ready_after))
    got = fastbias.bias_metrics(y, s, groups, **kw)
    warm(monkeypatch)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: False)
    expected = fastbias.bias_metrics(y, s, groups, **kw)
    _same(got, expected, exact=not weighted)


@pytest.mark.parametrize("weighted", [False, True])
def test_tier_evaluate_models_exclude_equals_kernels(compiling, monkeypatch, weighted):
    rng, y, s, groups = _data(13, n=1_200)
    df = pd.DataFrame({"y": y, "m1": s, "m2": rng.random(len(y)), "m3": 1.0 - s,
                       "a": groups[:, 0], "b": groups[:, 1].astype(float),
                       "c": groups[:, 2].astype(float)})
    df.loc[df.index[::9], "b"] = np.nan
    df.loc[df.index[::13], "c"] = np.nan
    if weighted:
        w = rng.random(len(y))
        w[::5] = 0.0
        df["w"] = w
    kw = dict(label="y", scores=["m1", "m2", "m3"], subgroups=["a", "b", "c"],
              missing_subgroup="exclude", ci="bootstrap", n_boot=15, random_state=2,
              sample_weight="w" if weighted else None, n_jobs=3)
    plans = spy_plans(monkeypatch)
    got = fastbias.evaluate(df, **kw)
    assert len(plans) == 3 * 3 and None not in plans  # 3 models x (2 universes + all rows)
    warm(monkeypatch)
    expected = fastbias.evaluate(df, **kw)
    _same(got.table, expected.table, exact=not weighted)
    np.testing.assert_allclose(np.asarray(got.overall_auc, float),
                               np.asarray(expected.overall_auc, float), rtol=1e-14)


def test_tier_evaluate_omit_intersections_equals_kernels(compiling, monkeypatch):
    rng, y, s, groups = _data(14, n=1_000)
    df = pd.DataFrame({"y": y, "m1": s.astype(float), "m2": rng.random(len(y)),
                       "a": groups[:, 0], "b": groups[:, 1], "c": groups[:, 2]})
    df.loc[df.index[::11], "m1"] = np.nan
    kw = dict(label="y", scores=["m1", "m2"], subgroups=["a", "b", "c"], ci="bootstrap",
              n_boot=12, random_state=5, nan_policy="omit", intersections=2)
    got = fastbias.evaluate(df, **kw)
    warm(monkeypatch)
    expected = fastbias.evaluate(df, **kw)
    _same(got.table, expected.table, exact=True)


def test_tier_weights_mutated_in_place_between_calls(compiling, monkeypatch):
    rng, y, s, groups = _data(15, n=800)
    w = rng.random(len(y))
    kw = dict(ci="bootstrap", n_boot=10, random_state=1)
    fastbias.bias_metrics(y, s, groups, sample_weight=w, **kw)
    w[: len(w) // 2] *= 7.0  # in place
    second = fastbias.bias_metrics(y, s, groups, sample_weight=w, **kw)
    fresh = fastbias.bias_metrics(y, s, groups, sample_weight=w.copy(), **kw)
    _same(second, fresh, exact=True)
    warm(monkeypatch)
    _same(second, fastbias.bias_metrics(y, s, groups, sample_weight=w, **kw), exact=False)


def test_tier_threads_evaluating_models_at_once(compiling, monkeypatch):
    rng, y, s, groups = _data(16, n=900)
    base = pd.DataFrame({"y": y, "a": groups[:, 0], "b": groups[:, 1]})
    frames = []
    for j in range(3):
        f = base.copy()
        f["m"] = rng.random(len(y))
        f["w"] = rng.random(len(y)) * (j + 1)
        frames.append(f)
    kw = dict(label="y", scores=["m"], subgroups=["a", "b"], sample_weight="w",
              ci="bootstrap", n_boot=10, random_state=0)
    out = [None] * 3
    threads = [threading.Thread(target=lambda j=j: out.__setitem__(
        j, fastbias.evaluate(frames[j], **kw).table)) for j in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    warm(monkeypatch)
    for j in range(3):
        _same(out[j], fastbias.evaluate(frames[j], **kw).table, exact=False)


# ---------------------------------------------------------------- n_boot validation
BAD_N_BOOT = [0, -1, 2.5, "10", True, 1, None, np.float64(10.0)]


@pytest.mark.parametrize("n_boot", BAD_N_BOOT)
@pytest.mark.parametrize("tier", [True, False])
def test_bad_n_boot_is_refused_naming_it(request, monkeypatch, n_boot, tier):
    if tier:
        request.getfixturevalue("compiling")
    _, y, s, groups = _data(17, n=200)
    with pytest.raises((ValueError, TypeError), match="n_boot"):
        fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=n_boot)
    with pytest.raises((ValueError, TypeError), match="n_boot"):
        fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=n_boot,
                              sample_weight=np.ones(len(y)))
    df = pd.DataFrame({"y": y, "m": s, "a": groups[:, 0], "b": groups[:, 1].astype(float)})
    df.loc[df.index[::7], "b"] = np.nan
    for missing in ("background", "exclude"):
        with pytest.raises((ValueError, TypeError), match="n_boot"):
            fastbias.evaluate(df, label="y", scores=["m"], subgroups=["a", "b"],
                              ci="bootstrap", n_boot=n_boot, missing_subgroup=missing)


def test_numpy_integer_n_boot_accepted_on_tier(compiling, monkeypatch):
    _, y, s, groups = _data(18, n=300)
    got = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=np.int64(10), random_state=1)
    warm(monkeypatch)
    _same(got, fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=10, random_state=1),
          exact=True)


@pytest.mark.parametrize("weighted", [False, True])
def test_tier_evaluate_switching_midway_equals_kernels(compiling, monkeypatch, weighted):
    """Several models (in threads) and universes, the kernels ready after some replicates."""
    from fastbias.intervals import bootstrap

    rng, y, s, groups = _data(19, n=1_000)
    df = pd.DataFrame({"y": y, "m1": s, "m2": rng.random(len(y)), "a": groups[:, 0],
                       "b": groups[:, 1].astype(float), "w": rng.random(len(y))})
    df.loc[df.index[::6], "b"] = np.nan
    kw = dict(label="y", scores=["m1", "m2"], subgroups=["a", "b"], missing_subgroup="exclude",
              ci="bootstrap", n_boot=16, random_state=9, sample_weight="w" if weighted else None,
              n_jobs=2)
    lock, calls = threading.Lock(), [0]

    def still(name):
        with lock:
            calls[0] += 1
            return calls[0] <= 25

    monkeypatch.setattr(bootstrap, "still_compiling", still)
    got = fastbias.evaluate(df, **kw)
    assert calls[0] > 25  # (some replicates in numpy, the rest by the kernels)
    warm(monkeypatch)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: False)
    _same(got.table, fastbias.evaluate(df, **kw).table, exact=not weighted)
