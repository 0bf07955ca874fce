"""The exact core under adversarial inputs: an independent review's tests (2026-11-27)
against a brute-force reference.

Every expected value here comes from this file's own reference: exact pair counts (numpy
searchsorted on float64 values, exact comparisons, Python-int sums) turned into a correctly
rounded float by ``fractions.Fraction``, or Fraction sums of the weights for weighted pairs,
or pandas' own ``DataFrame.sample`` for the sampled Pinned AUC. fastbias is never used to make
an expected value. Unweighted metrics must match bit for bit (docs/correctness.md: one
correctly rounded division of the same integers); weighted ones within the documented
certification (2**-50 of the metric or 2**-70 absolute).

No defect was found in this area; these tests pin the properties that held under fuzzing.
"""
from __future__ import annotations

import bisect
import warnings
from collections import defaultdict
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import _numba_cache
from fastbias.sweep import first_call

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
COUNTS = ["subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]
# metric -> (above cell X, below cell Y, is a gap)
SPEC = {"subgroup_auc": ("sp", "sn", False), "bpsn_auc": ("bp", "sn", False),
        "bnsp_auc": ("sp", "bn", False), "negative_aeg": ("bn", "sn", True),
        "positive_aeg": ("bp", "sp", True)}


# ----------------------------------------------------------------------------- reference

def _floats(s) -> np.ndarray:
    """Scores as float64 (exact for float16/float32 and integers within 2**53)."""
    return np.asarray([float(v) for v in np.asarray(s).tolist()], dtype=np.float64)


def _twice_u(x, y, wx=None, wy=None):
    """2 * sum over (x, y) pairs of w_x w_y ([x > y] + 1/2 [x == y]): an int, or a Fraction."""
    if wx is None:
        ys = np.sort(np.asarray(y, dtype=np.float64))
        x = np.asarray(x, dtype=np.float64)
        lo = np.searchsorted(ys, x, side="left")
        hi = np.searchsorted(ys, x, side="right")
        return int(sum(int(v) for v in lo) + sum(int(v) for v in hi))
    by_value = defaultdict(Fraction)
    for v, w in zip(y, wy):
        by_value[float(v) + 0.0] += w
    keys = sorted(by_value)
    below, acc = {}, Fraction(0)
    for k in keys:
        below[k] = acc
        acc += by_value[k]
    total = Fraction(0)
    for v, w in zip(x, wx):
        v = float(v) + 0.0
        i = bisect.bisect_left(keys, v)
        under = below[keys[i]] if i < len(keys) else acc
        tied = by_value[v] if i < len(keys) and keys[i] == v else 0
        total += w * (2 * under + tied)
    return total


def reference_table(y, s, masks: dict, w=None) -> dict:
    """name -> {count columns, metrics}: exact, then one correct rounding."""
    y = np.asarray(y, dtype=bool)
    sv = _floats(s)
    wv = None if w is None else [Fraction(float(v)) for v in np.asarray(w, np.float64)]
    out = {}
    for name, m in masks.items():
        m = np.asarray(m, dtype=bool)
        cells = {"sn": m & ~y, "sp": m & y, "bn": ~m & ~y, "bp": ~m & y}
        row = {"subgroup_negatives": int(cells["sn"].sum()),
               "subgroup_positives": int(cells["sp"].sum()),
               "background_negatives": int(cells["bn"].sum()),
               "background_positives": int(cells["bp"].sum())}
        for metric, (xc, yc, gap) in SPEC.items():
            xi, yi = np.flatnonzero(cells[xc]), np.flatnonzero(cells[yc])
            if wv is None:
                nx, ny = Fraction(len(xi)), Fraction(len(yi))
                t = _twice_u(sv[xi], sv[yi])
            else:
                xw, yw = [wv[i] for i in xi], [wv[i] for i in yi]
                nx, ny = sum(xw, Fraction(0)), sum(yw, Fraction(0))
                t = _twice_u(sv[xi], sv[yi], xw, yw)
            if nx * ny == 0:
                row[metric] = float("nan")
                continue
            frac = Fraction(t) / (2 * nx * ny)
            row[metric] = float(Fraction(1, 2) - frac) if gap else float(frac)
        out[name] = row
    return out


def reference_overall(y, s, w=None) -> float:
    """AUC of all positives over all negatives, ties 1/2, exact then rounded once."""
    y = np.asarray(y, dtype=bool)
    sv = _floats(s)
    pos, neg = np.flatnonzero(y), np.flatnonzero(~y)
    if w is None:
        den = Fraction(2 * len(pos) * len(neg))
        return float("nan") if den == 0 else float(Fraction(_twice_u(sv[pos], sv[neg])) / den)
    wv = [Fraction(float(v)) for v in np.asarray(w, np.float64)]
    pw, nw = [wv[i] for i in pos], [wv[i] for i in neg]
    den = 2 * sum(pw, Fraction(0)) * sum(nw, Fraction(0))
    return float("nan") if den == 0 else float(_twice_u(sv[pos], sv[neg], pw, nw) / den)


def assert_matches(table: pd.DataFrame, ref: dict, weighted: bool, what: str = ""):
    for name, row in ref.items():
        for c in COUNTS:
            assert int(table.loc[name, c]) == row[c], (what, name, c)
        for m in METRICS:
            got, want = float(table.loc[name, m]), row[m]
            if np.isnan(want):
                assert np.isnan(got), (what, name, m, got)
                continue
            if weighted:
                assert abs(got - want) <= max(2.0 ** -50 * abs(want), 2.0 ** -70), \
                    (what, name, m, got, want)
            else:
                assert got == want, (what, name, m, got, want)


def assert_overall(got: float, want: float, weighted: bool):
    if np.isnan(want):
        assert np.isnan(got)
    elif weighted:
        assert abs(got - want) <= 2.0 ** -50 * abs(want)
    else:
        assert got == want


# ----------------------------------------------------------------------------- inputs

F64_EXTREMES = [5e-324, -5e-324, 1e-320, -0.0, 0.0, 2.2250738585072014e-308,
                -2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308, 1.0]


def adversarial_scores(rng, n: int, kind: str) -> np.ndarray:
    if kind == "signed_zeros":
        return rng.choice([-0.0, 0.0, 1.0, -1.0], n)
    if kind == "f64_extremes":
        return rng.choice(np.array(F64_EXTREMES), n)
    if kind == "f32_extremes":
        pool = np.array([1.4e-45, -1.4e-45, 0.0, -0.0, 3.4028235e38, -3.4028235e38, 0.5, 0.1],
                        dtype=np.float32)
        return rng.choice(pool, n).astype(np.float32)
    if kind == "f16":
        s = (rng.integers(-5, 5, n) * 0.1).astype(np.float16)
        s[rng.random(n) < 0.2] = np.float16(6e-8)  # subnormal
        s[rng.random(n) < 0.2] = -np.float16(0.0)
        return s
    if kind == "int8":
        return rng.integers(-128, 128, n).astype(np.int8)
    if kind == "uint64_near_2_53":
        return rng.integers(0, 5, n).astype(np.uint64) + np.uint64(2 ** 53 - 4)
    if kind == "int64_at_minus_2_53":
        return rng.integers(0, 5, n).astype(np.int64) - np.int64(2 ** 53)
    if kind == "all_equal":
        return np.full(n, 0.3)
    if kind == "rounded":
        return np.round(rng.random(n), 2)
    return rng.random(n)


KINDS = ["signed_zeros", "f64_extremes", "f32_extremes", "f16", "int8", "uint64_near_2_53",
         "int64_at_minus_2_53", "all_equal", "rounded", "continuous"]


def random_case(seed: int, kind: str, n: int):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < rng.choice([0.5, 0.05, 0.95])
    s = adversarial_scores(rng, n, kind)
    masks = {f"g{j}": rng.random(n) < p for j, p in enumerate([0.0, 1.0, 0.01, 0.3, 0.9])}
    return y, s, masks


@pytest.fixture
def numpy_tier(monkeypatch):
    """FASTBIAS_FIRST_CALL=1 with kernels that look uncompiled and no background child:
    every eligible call counts in numpy (as tests/test_first_call.py's ``compiling``)."""
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda *a, **k: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    monkeypatch.setattr(first_call, "_children", {})
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(first_call, "_runner", [])
    monkeypatch.setattr(first_call, "_start_children", lambda: first_call._runner.clear())
    used = []  # (each count in numpy: counts_and_plan's, without a bootstrap to follow)
    original = first_call.counts_in_numpy
    monkeypatch.setattr(first_call, "counts_in_numpy",
                        lambda *a, **k: (used.append(1), original(*a, **k))[1])
    yield used


# ----------------------------------------------------------------------------- tests

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 3, 40, 2000])
@pytest.mark.parametrize("n_jobs", [1, 2, None])
def test_unweighted_adversarial_scores_bit_exact(kind, n, n_jobs):
    y, s, masks = random_case(n * 31 + KINDS.index(kind), kind, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, masks, n_jobs=n_jobs)
        overall = fastbias.overall_auc(y, s)
    assert_matches(table, reference_table(y, s, masks), weighted=False, what=kind)
    want = reference_overall(y, s)
    assert_overall(table.attrs["overall_auc"], want, False)
    assert_overall(overall, want, False)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_numpy_first_call_tier_equals_reference(numpy_tier, kind, weighted):
    y, s, masks = random_case(7 + KINDS.index(kind), kind, 500)
    w = np.random.default_rng(3).integers(0, 4, 500).astype(float) * 0.75 if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, masks, sample_weight=w)
    assert numpy_tier, "the numpy tier did not run"
    assert_matches(table, reference_table(y, s, masks, w), weighted, what=kind)
    assert_overall(table.attrs["overall_auc"], reference_overall(y, s, w), weighted)


WEIGHTS = {
    "zeros_and_negative_zero": lambda rng, y, n: np.where(rng.random(n) < 0.5, -0.0, 1.0),
    "subnormal": lambda rng, y, n: rng.choice([5e-324, 1e-320, 0.0], n),
    "tiny": lambda rng, y, n: rng.random(n) * 1e-300,
    "largest_double": lambda rng, y, n: rng.choice([1.7976931348623157e308, 1e200, 0.0], n),
    "huge": lambda rng, y, n: rng.random(n) * 1e300,
    "integers_uint64": lambda rng, y, n: np.full(n, 2 ** 60, dtype=np.uint64),
    "int8": lambda rng, y, n: rng.integers(0, 127, n).astype(np.int8),
    "float16": lambda rng, y, n: rng.choice([0, 6e-8, 65504], n).astype(np.float16),
    "positives_only": lambda rng, y, n: np.where(y, rng.random(n), 0.0),
    "negatives_only": lambda rng, y, n: np.where(y, 0.0, rng.random(n)),
    "spread_2_480": lambda rng, y, n: rng.choice([1.0, 2.0 ** 480], n),
}


@pytest.mark.parametrize("weights", list(WEIGHTS))
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_weighted_edge_weights_within_certified_bound(weights, n_jobs):
    rng = np.random.default_rng(11)
    n = 80
    y = rng.random(n) < 0.4
    s = rng.choice([-0.0, 0.0, 0.3, 5e-324, 0.7], n)
    masks = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.7, "all": np.ones(n, bool),
             "none": np.zeros(n, bool)}
    w = WEIGHTS[weights](rng, y, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, masks, sample_weight=w, n_jobs=n_jobs)
        overall = fastbias.overall_auc(y, s, sample_weight=w)
    assert_matches(table, reference_table(y, s, masks, w), weighted=True, what=weights)
    want = reference_overall(y, s, w)
    assert_overall(table.attrs["overall_auc"], want, True)
    assert_overall(overall, want, True)


def test_weight_spread_past_2_480_is_a_named_error():
    y = np.array([0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"sample_weight spans more than 2\*\*480.*position"):
        fastbias.bias_metrics(y, [0.1, 0.2, 0.3, 0.4], {"g": [1, 1, 0, 0]},
                              sample_weight=[1.0, 2.0 ** 481, 1.0, 1.0])


def _ints_reference(y, s, masks, w=None) -> dict:
    """As reference_table, with integer weights summed in int64 (fast enough at 300k rows)."""
    y = np.asarray(y, bool)
    sv = np.asarray(s).astype(np.float64)

    def twice(xm, ym):
        xs, ys = sv[xm], sv[ym]
        wx = np.ones(xs.shape[0], np.int64) if w is None else w[xm].astype(np.int64)
        wy = np.ones(ys.shape[0], np.int64) if w is None else w[ym].astype(np.int64)
        order = np.argsort(ys, kind="stable")
        cw = np.concatenate([[0], np.cumsum(wy[order])])
        ys = ys[order]
        return int(np.sum(wx * (cw[np.searchsorted(ys, xs, "left")]
                                + cw[np.searchsorted(ys, xs, "right")])))

    out = {}
    for name, m in masks.items():
        cells = {"sn": m & ~y, "sp": m & y, "bn": ~m & ~y, "bp": ~m & y}
        row = {c: int(cells[k].sum()) for c, k in zip(COUNTS, ["sn", "sp", "bn", "bp"])}
        for metric, (xc, yc, gap) in SPEC.items():
            size = (lambda c: int(cells[c].sum())) if w is None else \
                (lambda c: int(w[cells[c]].astype(np.int64).sum()))
            den = 2 * size(xc) * size(yc)
            if den == 0:
                row[metric] = float("nan")
                continue
            frac = Fraction(twice(cells[xc], cells[yc]), den)
            row[metric] = float(Fraction(1, 2) - frac) if gap else float(frac)
        out[name] = row
    return out


@pytest.mark.jit_heavy
@pytest.mark.parametrize("n", [99_999, 100_000, 100_001, 200_001])
@pytest.mark.parametrize("kind", ["three_values", "signed_zeros_and_extremes", "float32"])
@pytest.mark.parametrize("tier", [False, True])
def test_sizes_across_the_thread_cutoffs(n, kind, tier, request):
    """CONCURRENT_SWEEP_MIN_ROWS / PARALLEL_SORT_MIN_KEYS (100,000), 1 positive in 100k:
    n_jobs 1, 2, None and the numpy tier give the reference's numbers."""
    if tier:
        request.getfixturevalue("numpy_tier")
    rng = np.random.default_rng(n)
    s = {"three_values": lambda: rng.choice([0.25, 0.5, 0.75], n),
         "signed_zeros_and_extremes": lambda: rng.choice(
             [5e-324, -5e-324, 0.0, -0.0, 1.7976931348623157e308, -1.7976931348623157e308], n),
         "float32": lambda: rng.random(n).astype(np.float32)}[kind]()
    y = rng.random(n) < 0.5
    if kind == "float32":  # extremely unbalanced: one positive
        y[:] = False
        y[n // 3] = True
    G = rng.random((n, 5)) < np.array([0.01, 0.3, 0.8, 1.0, 0.0])[None, :]
    masks = {f"g{j}": G[:, j] for j in range(5)}
    w = rng.integers(0, 4, n) if kind == "three_values" else None
    ref = _ints_reference(y, s, masks, w)
    for n_jobs in [1, 2, None]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
            table = fastbias.bias_metrics(y, s, masks, sample_weight=w, n_jobs=n_jobs)
        assert_matches(table, ref, weighted=w is not None, what=(kind, n_jobs))


@pytest.mark.jit_heavy
@pytest.mark.parametrize("form", ["array", "dict", "frame"])
@pytest.mark.parametrize("tier", [False, True])
def test_thousands_of_small_overlapping_subgroups(form, tier, request):
    if tier:
        request.getfixturevalue("numpy_tier")
    rng = np.random.default_rng(4)
    n, k = 1500, 3000
    y = rng.random(n) < 0.3
    s = rng.choice([-0.0, 0.0, 0.5, 1e-310, 1.0, 2.0], n).astype(np.float32)
    G = rng.random((n, k)) < rng.choice([0.0, 0.001, 0.01, 0.5, 1.0], k)[None, :]
    ref = _ints_reference(y, s, {j: G[:, j] for j in range(k)})
    names = [f"c{j}" for j in range(k)]
    subs = {"array": G, "dict": dict(zip(names, G.T)),
            "frame": pd.DataFrame(G, columns=names)}[form]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, subs, n_jobs=2)
    cols = COUNTS + METRICS
    got = table[cols].to_numpy(dtype=float)
    want = np.array([[ref[j][c] for c in cols] for j in range(k)])
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), np.argwhere(~same)[:5]


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
@pytest.mark.parametrize("n_jobs", [1, 2, None])
@pytest.mark.parametrize("tier", [False, True])
def test_evaluate_models_of_different_dtypes(missing_subgroup, n_jobs, tier, request):
    if tier:
        request.getfixturevalue("numpy_tier")
    rng = np.random.default_rng(9)
    n = 700
    y = rng.random(n) < 0.3
    models = {"f16": adversarial_scores(rng, n, "f16"), "i8": adversarial_scores(rng, n, "int8"),
              "f32": adversarial_scores(rng, n, "f32_extremes"),
              "f64": adversarial_scores(rng, n, "f64_extremes"),
              "u64": adversarial_scores(rng, n, "uint64_near_2_53")}
    df = pd.DataFrame({"label": y, **models})
    groups = {}
    for j, p in enumerate([0.0, 1.0, 0.05, 0.4]):
        col = (rng.random(n) < p).astype(float)
        col[rng.random(n) < 0.3] = np.nan
        df[f"g{j}"] = groups[f"g{j}"] = col
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="label", scores=list(models), subgroups=list(groups),
                                missing_subgroup=missing_subgroup, n_jobs=n_jobs)
    for name, s in models.items():
        table = res.for_model(name)
        for g, col in groups.items():
            keep = ~np.isnan(col) if missing_subgroup == "exclude" else np.ones(n, bool)
            ref = reference_table(y[keep], s[keep], {g: (col == 1.0)[keep]})
            assert_matches(table, ref, weighted=False, what=(name, g))
        assert_overall(float(res.overall_auc[name]), reference_overall(y, s), False)


@pytest.mark.jit_heavy
def test_evaluate_one_large_model_early_class_sort():
    """One unweighted model at >= 100,000 rows: the class sort runs ahead on a helper thread."""
    rng = np.random.default_rng(1)
    n = 150_001
    y = rng.random(n) < 0.3
    s = rng.choice([-0.0, 0.0, 0.5, 5e-324, 1.0], n)
    df = pd.DataFrame({"label": y.astype(float), "m": s})
    groups = {}
    for j, p in enumerate([0.01, 0.3, 1.0]):
        col = (rng.random(n) < p).astype(float)
        col[rng.random(n) < 0.4] = np.nan
        df[f"g{j}"] = groups[f"g{j}"] = col
    for missing_subgroup in ["background", "exclude"]:
        res = fastbias.evaluate(df, label="label", scores=["m"], subgroups=list(groups),
                                missing_subgroup=missing_subgroup, n_jobs=2)
        table = res.for_model("m")
        for g, col in groups.items():
            keep = ~np.isnan(col) if missing_subgroup == "exclude" else np.ones(n, bool)
            assert_matches(table, _ints_reference(y[keep], s[keep], {g: (col == 1.0)[keep]}),
                           weighted=False, what=(missing_subgroup, g))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("index", [None, "positions", "mask"])
def test_evaluator_metrics_and_metrics_many(weighted, index):
    rng = np.random.default_rng(2)
    n = 3000
    y = rng.random(n) < 0.35
    G = rng.random((n, 5)) < [0.05, 0.3, 0.5, 0.9, 1.0]
    masks = {f"g{j}": G[:, j] for j in range(5)}
    w = rng.integers(0, 3, n) if weighted else None
    ev = fastbias.BiasEvaluator(y, masks, sample_weight=w, n_jobs=2)
    idx = {None: None, "positions": rng.permutation(n)[: n // 2],
           "mask": rng.random(n) < 0.6}[index]
    rows = (np.arange(n) if idx is None else np.flatnonzero(idx) if idx.dtype == bool else idx)
    m = rows.shape[0]
    models = {"f16": adversarial_scores(rng, m, "f16"), "i8": adversarial_scores(rng, m, "int8"),
              "f32": rng.random(m).astype(np.float32),
              "zeros": adversarial_scores(rng, m, "signed_zeros")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        many = ev.metrics_many(models, index=idx, n_jobs=3)
        for name, s in models.items():
            ref = reference_table(y[rows], s, {g: v[rows] for g, v in masks.items()},
                                  None if w is None else w[rows])
            assert_matches(ev.metrics(s, index=idx), ref, weighted, what=("metrics", name))
            assert_matches(many.for_model(name), ref, weighted, what=("many", name))
            assert_overall(float(many.overall_auc[name]),
                           reference_overall(y[rows], s, None if w is None else w[rows]),
                           weighted)


@pytest.mark.parametrize("method", ["sample", "dixon"])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sampled_pinned_auc_is_pandas_sample_random_state_25(method, replace, dtype):
    """The authors' code: pd.concat([df[df[g]], df[~df[g]].sample(len(df[df[g]]),
    random_state=25)]) (``"dixon"``: drawn from all rows), then the AUC of that set."""
    rng = np.random.default_rng(3)
    n = 2000
    y = rng.random(n) < 0.4
    s = rng.choice([-0.0, 0.0, 0.25, 0.5, 5e-324], n).astype(dtype)
    groups = {f"g{j}": rng.random(n) < p for j, p in enumerate([0.05, 0.2, 0.35])}
    df = pd.DataFrame({"y": y, "s": s, **groups})
    got = fastbias.pinned_auc(y, s, groups, method=method, replace=replace)
    for g in groups:
        ident = df[df[g]]
        pool = df[~df[g]] if method == "sample" else df
        pinned = pd.concat([ident, pool.sample(len(ident), random_state=25, replace=replace)])
        assert got[g] == reference_overall(pinned.y.to_numpy(), pinned.s.to_numpy())


@pytest.mark.parametrize("method", ["expected", "expected_dixon"])
@pytest.mark.parametrize("replace", [False, True])
def test_expected_pinned_auc_is_the_ratio_of_expectations(method, replace):
    """E[U] / E[pairs] over the draws, with inclusion rates f1 = m/N and
    f2 = m(m-1)/(N(N-1)) (m(m-1)/N**2 with replacement), in exact rationals."""
    rng = np.random.default_rng(5)
    n = 400
    y = rng.random(n) < 0.4
    s = rng.choice([-0.0, 0.0, 0.25, 0.5, 5e-324], n)
    groups = {f"g{j}": rng.random(n) < p for j, p in enumerate([0.05, 0.2, 0.45])}
    got = fastbias.pinned_auc(y, s, groups, method=method, replace=replace)
    for g, m in groups.items():
        size = int(m.sum())
        pop = ~m if method == "expected" else np.ones(n, bool)
        big_n = int(pop.sum())
        f1 = Fraction(size, big_n)
        f2 = Fraction(size * (size - 1), big_n * big_n if replace else big_n * (big_n - 1))
        gp, gn, pp, pn = m & y, m & ~y, pop & y, pop & ~y
        twice_u = (_twice_u(s[gp], s[gn]) + f1 * _twice_u(s[pp], s[gn])
                   + f1 * _twice_u(s[gp], s[pn]) + f2 * _twice_u(s[pp], s[pn]))
        pairs = (int(gn.sum()) * int(gp.sum()) + f1 * int(pp.sum()) * int(gn.sum())
                 + f1 * int(gp.sum()) * int(pn.sum()) + f2 * int(pp.sum()) * int(pn.sum()))
        assert float(got[g]) == pytest.approx(float(Fraction(twice_u) / (2 * pairs)),
                                              rel=1e-14)


def test_expected_pinned_auc_when_the_whole_background_is_drawn_is_the_overall_auc():
    rng = np.random.default_rng(6)
    n = 1000
    y = rng.random(n) < 0.4
    s = rng.choice([-0.0, 0.0, 0.25, 0.5], n)
    half = np.arange(n) < n // 2
    got = fastbias.pinned_auc(y, s, {"h": half}, method="expected")["h"]
    assert got == reference_overall(y, s)


@pytest.mark.parametrize("scores, error, match", [
    (np.array([True, False, True, True]), TypeError, "y_score must be numeric"),
    (np.array([0, 2 ** 53 + 1, 3, 4], dtype=np.uint64), ValueError,
     r"beyond 2\*\*53.*9007199254740993 at position 1"),
    (np.array([1, 0.5, True, 2], dtype=object), TypeError, "True at position 2"),
    (np.array([1, 2, 3, 4], dtype=np.longdouble) + np.longdouble(2) ** -60, ValueError,
     "float64 cannot hold exactly"),
])
def test_scores_float64_cannot_hold_are_named_errors(scores, error, match):
    with pytest.raises(error, match=match):
        fastbias.bias_metrics([0, 1, 0, 1], scores, {"g": [1, 1, 0, 0]})


def test_integer_scores_at_2_53_are_exact():
    y = np.array([0, 1, 0, 1])
    s = np.array([2 ** 53 + 2, 2 ** 53, 0, 1], dtype=np.int64)  # both even: exact in float64
    t = fastbias.bias_metrics(y, s, {"g": [1, 1, 0, 0]})
    # subgroup: neg 2**53+2 vs pos 2**53 -> 0; BPSN: neg 2**53+2 vs pos 1 -> 0;
    # BNSP: pos 2**53 vs neg 0 -> 1; overall: {2**53, 1} over {2**53+2, 0} -> 2 of 4 pairs
    assert t.loc["g", ["subgroup_auc", "bpsn_auc", "bnsp_auc"]].tolist() == [0.0, 0.0, 1.0]
    assert t.attrs["overall_auc"] == 0.5
