"""An independent review's tests (2026-11-27): sample weights through every metric,
interval and test.

Every expectation is computed here, independently of fastbias: weighted pair counts
summed exactly in ``fractions.Fraction`` (each float weight converted exactly),
repeated rows, ``np.nanquantile`` of exact replicate metrics, plain parsing. The
documented accuracy (docs/validation.md, "Weights"): 2**-50 relative, or 2**-70
absolute for a value that close to 0, whatever the weights' scale or spread.

Found by review (failed before its fix): long double weights that float64 cannot hold
(``1 + 2**-60``) were rounded silently (a negative AEG of 0 against an exact 2.2e-19) in
``bias_metrics``, ``overall_auc``, ``evaluate`` and ``threshold_metrics``; now refused as
long double scores are, naming ``sample_weight``, the value and its position.
"""
import math
import warnings
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastbias
from fastbias.intervals import replicate_counts

from . import cli_runner

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
REL = F(2) ** -50
ABS = F(2) ** -70


# ----------------------------------------------------------------------------- reference
def _exact_w(x) -> F:
    return F(float(x))


def pair_prob(sa, sb, wa, wb):
    """Exact P(s_A > s_B) + 1/2 P(s_A == s_B) over pairs weighted w_a w_b; None if no weight."""
    wa = [_exact_w(x) for x in wa]
    wb = [_exact_w(x) for x in wb]
    total_a, total_b = sum(wa, F(0)), sum(wb, F(0))
    if total_a == 0 or total_b == 0:
        return None
    num = F(0)
    for a, x in zip(sa, wa):
        if x == 0:
            continue
        for b, z in zip(sb, wb):
            if a > b:
                num += x * z
            elif a == b:
                num += x * z / 2
    return num / (total_a * total_b)


def exact_metrics(y, s, member, w):
    y = np.asarray(y, bool)
    member = np.asarray(member, bool)
    s = np.asarray(s, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)

    def cell(mask):
        return s[mask], w[mask]

    sn, sp = cell(member & ~y), cell(member & y)
    bn, bp = cell(~member & ~y), cell(~member & y)
    out = {"subgroup_auc": pair_prob(sp[0], sn[0], sp[1], sn[1]),
           "bpsn_auc": pair_prob(bp[0], sn[0], bp[1], sn[1]),
           "bnsp_auc": pair_prob(sp[0], bn[0], sp[1], bn[1])}
    p = pair_prob(bn[0], sn[0], bn[1], sn[1])
    out["negative_aeg"] = None if p is None else F(1, 2) - p
    p = pair_prob(bp[0], sp[0], bp[1], sp[1])
    out["positive_aeg"] = None if p is None else F(1, 2) - p
    return out


def assert_close(got, want, what, rel=REL, ab=ABS):
    if want is None:
        assert math.isnan(got), f"{what}: undefined, expected NaN, got {got!r}"
        return
    assert not math.isnan(got), f"{what}: got NaN, exact {float(want)!r}"
    err = abs(F(float(got)) - want)
    assert err <= max(rel * abs(want), ab), \
        f"{what}: got {got!r}, exact {float(want)!r} (error {float(err):.3g})"


def quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def check_table(table, y, s, groups, w, overall=None):
    y = np.asarray(y, bool)
    for name, member in groups.items():
        want = exact_metrics(y, s, member, w)
        for metric in METRICS:
            assert_close(float(table.loc[name, metric]), want[metric], f"{name} {metric}")
    if overall is None:
        overall = table.attrs["overall_auc"]
    assert_close(float(overall), pair_prob(s[y], s[~y], w[y], w[~y]), "overall_auc")


def weights_of(kind, n, rng):
    if kind == "integers":
        return rng.integers(0, 5, n).astype(float)
    if kind == "tiny":
        return rng.uniform(0, 1, n) * 1e-300
    if kind == "huge":
        return rng.uniform(0.5, 1, n) * 1e300
    if kind == "subnormal":
        return np.where(rng.random(n) < 0.5, 5e-324, 1e-310) * rng.integers(1, 4, n)
    if kind == "mixed_1e70":
        return np.where(rng.random(n) < 0.5, 1e-70, 1e70) * rng.uniform(0.5, 1, n)
    if kind == "lognormal":
        return rng.lognormal(0, 5, n)
    if kind == "zeros":
        return np.where(rng.random(n) < 0.4, 0.0, rng.uniform(0, 1, n))
    if kind == "one_heavy":
        return np.where(rng.random(n) < 0.1, 1e40, 1.0) * rng.uniform(0.9, 1, n)
    raise AssertionError(kind)


KINDS = ["integers", "tiny", "huge", "subnormal", "mixed_1e70", "lognormal", "zeros",
         "one_heavy"]


def small_data(seed, n=None, levels=4):
    rng = np.random.default_rng(seed)
    n = n or int(rng.integers(6, 36))
    y = rng.random(n) < 0.5
    s = rng.integers(0, levels, n) / levels  # heavy ties
    groups = {"a": rng.random(n) < 0.5, "b": rng.random(n) < 0.15}
    return rng, y, s, groups


# ----------------------------------------------------------------------------- metrics
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", range(6))
def test_weighted_metrics_equal_exact_rationals(kind, seed):
    rng, y, s, groups = small_data(seed)
    w = weights_of(kind, len(y), rng)
    table = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    check_table(table, y, s, groups, w)
    for name, member in groups.items():
        for column, cell in {"subgroup_negative_weight": member & ~y,
                             "subgroup_positive_weight": member & y,
                             "background_negative_weight": ~member & ~y,
                             "background_positive_weight": ~member & y}.items():
            exact = sum((F(float(x)) for x in w[cell]), F(0))
            got = float(table.loc[name, column])
            assert abs(F(got) - exact) <= REL * exact, (name, column, got, float(exact))
        # the row counts next to them stay row counts
        assert table.loc[name, "subgroup_negatives"] == int((member & ~y).sum())
        assert table.loc[name, "background_positives"] == int((~member & y).sum())


@st.composite
def weighted_case(draw):
    n = draw(st.integers(2, 24))
    y = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    s = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))) / 3.0
    exponent = draw(st.integers(-1000, 960))
    mant = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.5, 2.0), st.integers(0, 7).map(float)),
                         min_size=n, max_size=n))
    spread = draw(st.lists(st.integers(0, 120), min_size=n, max_size=n))
    w = np.array([math.ldexp(m, exponent - e) if m else 0.0 for m, e in zip(mant, spread)])
    member = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    return y, s, w, {"g": member}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(weighted_case())
def test_property_weighted_metrics_exact(case):
    y, s, w, groups = case
    positive = w[w > 0]
    if positive.size and positive.min() < positive.max() * 2.0 ** -480:
        with pytest.raises(ValueError, match="sample_weight spans more than"):
            fastbias.bias_metrics(y, s, groups, sample_weight=w)
        return
    table = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    check_table(table, y, s, groups, w)


@pytest.mark.parametrize("k", [-1000, -300, -1, 1, 7, 300, 900])
def test_power_of_two_scaling_is_bit_identical(k):
    rng, y, s, groups = small_data(101, n=200, levels=12)
    w = rng.lognormal(0, 2, len(y))
    scaled = np.ldexp(w, k)
    assert np.array_equal(np.ldexp(scaled, -k), w)  # the scaling was exact
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    b = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=scaled)
    for metric in METRICS:
        assert np.array_equal(a[metric].to_numpy(), b[metric].to_numpy(), equal_nan=True), metric
    assert a.attrs["overall_auc"] == b.attrs["overall_auc"]
    assert fastbias.final_metric(a) == fastbias.final_metric(b)
    assert fastbias.overall_auc(y, s, sample_weight=w) == \
        fastbias.overall_auc(y, s, sample_weight=scaled)


@pytest.mark.parametrize("k", [-40, 3, 100])
def test_power_of_two_scaling_bootstrap_bit_identical(k):
    rng, y, s, groups = small_data(102, n=150, levels=10)
    w = rng.uniform(0.2, 3, len(y))
    kw = dict(ci="bootstrap", n_boot=30, random_state=4)
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, **kw)
    b = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=np.ldexp(w, k), **kw)
    cols = [c for c in a.columns if c.endswith(("_low", "_high", "_se"))] + METRICS
    assert cols
    for c in cols:
        assert np.array_equal(a[c].to_numpy(float), b[c].to_numpy(float), equal_nan=True), c


@pytest.mark.parametrize("seed", range(4))
def test_scaling_by_three_within_documented_accuracy(seed):
    rng, y, s, groups = small_data(200 + seed, n=40)
    w = rng.lognormal(0, 3, len(y))
    w3 = w * 3.0  # rounds each weight
    table = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w3)
    check_table(table, y, s, groups, w3)  # exact for the weights passed
    base = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    for metric in METRICS:
        x, z = base[metric].to_numpy(float), table[metric].to_numpy(float)
        assert np.allclose(x, z, rtol=2.0 ** -47, atol=2.0 ** -60, equal_nan=True), metric


def test_integer_valued_weights_from_float_equal_repeated_rows_exactly():
    rng, y, s, groups = small_data(300, n=300, levels=9)
    w = rng.integers(0, 5, len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    yr, sr, gr = y[rep], s[rep], {k: v[rep] for k, v in groups.items()}
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    b = quiet(fastbias.bias_metrics, yr, sr, gr)
    # the unweighted metric is one rounding of an exact ratio, so it is the correctly
    # rounded value: the weighted one must be within the documented bound of it
    for name in groups:
        want = exact_metrics(yr, sr, gr[name], np.ones(len(yr)))
        for metric in METRICS:
            assert b.loc[name, metric] == float(want[metric]) if want[metric] is not None else True
            assert_close(float(a.loc[name, metric]), want[metric], f"{name} {metric}")
    # weight columns equal the repeated rows' counts
    for name in groups:
        assert a.loc[name, "subgroup_negative_weight"] == b.loc[name, "subgroup_negatives"]
        assert a.loc[name, "subgroup_positive_weight"] == b.loc[name, "subgroup_positives"]
        assert a.loc[name, "background_negative_weight"] == b.loc[name, "background_negatives"]
        assert a.loc[name, "background_positive_weight"] == b.loc[name, "background_positives"]


@pytest.mark.parametrize("seed", range(3))
def test_integer_weights_delong_equal_repeated_rows(seed):
    rng = np.random.default_rng(400 + seed)
    n = 500
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) * 0.8 + 0.2 * y, 2)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.1}
    w = rng.integers(0, 4, n).astype(float)
    rep = np.repeat(np.arange(n), w.astype(int))
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, ci="delong")
    b = quiet(fastbias.bias_metrics, y[rep], s[rep], {k: v[rep] for k, v in groups.items()},
              ci="delong")
    cols = [c for c in a.columns if c.endswith(("_se", "_low", "_high"))]
    assert len(cols) == 15
    for c in cols:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-12,
                                   atol=1e-15, err_msg=c)
    for key in ("overall_auc_low", "overall_auc_high", "overall_auc_se"):
        if key in a.attrs:
            assert math.isclose(a.attrs[key], b.attrs[key], rel_tol=1e-12), key


def test_integer_weights_significance_equal_repeated_rows_for_large_cells():
    rng = np.random.default_rng(450)
    n = 3000
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) * 0.8 + 0.2 * y, 3)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2}
    w = rng.integers(1, 4, n).astype(float)
    rep = np.repeat(np.arange(n), w.astype(int))
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, significance="holm")
    b = quiet(fastbias.bias_metrics, y[rep], s[rep], {k: v[rep] for k, v in groups.items()},
              significance="holm")
    cols = [c for c in a.columns if c.endswith(("_pvalue", "_pvalue_adjusted"))]
    assert len(cols) == 10
    for c in cols:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-9,
                                   atol=1e-15, err_msg=c)


@pytest.mark.parametrize("thresholds", [[0.5], [0.3, 0.5, 0.7]])
def test_integer_weights_threshold_metrics_equal_repeated_rows(thresholds):
    rng, y, s, groups = small_data(500, n=400, levels=10)
    w = rng.integers(0, 4, len(y)).astype(float)
    rep = np.repeat(np.arange(len(y)), w.astype(int))
    a = quiet(fastbias.threshold_metrics, y, s, groups, sample_weight=w, thresholds=thresholds)
    b = quiet(fastbias.threshold_metrics, y[rep], s[rep], {k: v[rep] for k, v in groups.items()},
              thresholds=thresholds)
    numeric = [c for c in a.columns if a[c].dtype.kind in "fiu"]
    assert "subgroup_fpr_low" in numeric
    for c in numeric:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-13,
                                   atol=1e-15, equal_nan=True, err_msg=c)
    # and the rates against plain weighted sums (independent)
    t = thresholds[0]
    g = groups["a"]
    pred = s >= t
    fpr = F(sum(int(x) for x in w[g & ~y & pred])) / F(sum(int(x) for x in w[g & ~y]))
    got = a[(a["threshold"] == t) & (a["subgroup"] == "a")]["subgroup_fpr"].iloc[0] \
        if "subgroup" in a.columns else a.loc[(t, "a"), "subgroup_fpr"]
    assert got == float(fpr)


@pytest.mark.parametrize("seed", range(3))
def test_zero_weight_rows_equal_dropped_rows_for_metrics_and_delong(seed):
    rng = np.random.default_rng(600 + seed)
    n = 1500
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) * 0.8 + 0.2 * y, 2)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2}
    w = rng.uniform(0.5, 3, n)
    w[rng.random(n) < 0.3] = 0.0
    keep = w > 0
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, ci="delong")
    b = quiet(fastbias.bias_metrics, y[keep], s[keep], {k: v[keep] for k, v in groups.items()},
              sample_weight=w[keep], ci="delong")
    for c in METRICS + [c for c in a.columns if c.endswith(("_se", "_low", "_high"))]:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-12,
                                   atol=1e-15, err_msg=c)


def test_zero_weight_cell_is_nan_with_one_warning_and_counts():
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    s = np.array([.1, .2, .2, .4, .5, .5, .7, .9])
    g = {"a": np.array([1, 1, 0, 0, 1, 1, 0, 0], bool)}
    w = np.array([0, 1, 1, 1, 0, 2, 1, 1.])  # the subgroup's negatives weigh nothing
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, g, sample_weight=w)
    undefined = [c for c in caught if issubclass(c.category, fastbias.UndefinedMetricWarning)]
    assert len(undefined) == 1, [str(c.message) for c in caught]
    msg = str(undefined[0].message)
    for metric in ("subgroup_auc", "bpsn_auc", "negative_aeg"):
        assert math.isnan(t.loc["a", metric])
        assert metric in msg
    check_table(t, y, s, g, w)  # bnsp and positive AEG defined and exact
    assert t.loc["a", "subgroup_negatives"] == 2
    assert t.loc["a", "subgroup_negative_weight"] == 0.0
    assert t.loc["a", "subgroup_positive_weight"] == 3.0


def test_all_weights_zero_overall_auc_nan():
    y = np.array([0, 1, 0, 1])
    s = np.array([.1, .2, .3, .4])
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = fastbias.overall_auc(y, s, sample_weight=[0.0, 0.0, 1.0, 1.0])
    assert got == 1.0
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = fastbias.overall_auc(y, s, sample_weight=[0.0, 0.0, 0.0, 1.0])
    assert math.isnan(got)


# ----------------------------------------------------------------------------- refusals
Y8 = np.array([0, 1, 0, 1, 0, 1, 0, 1])
S8 = np.linspace(0, 1, 8)
G8 = {"a": np.array([1, 1, 0, 0, 1, 1, 0, 0], bool)}
DF8 = pd.DataFrame({"y": Y8, "s": S8, "a": G8["a"]})

ENTRIES = {
    "bias_metrics": lambda w: fastbias.bias_metrics(Y8, S8, G8, sample_weight=w),
    "overall_auc": lambda w: fastbias.overall_auc(Y8, S8, sample_weight=w),
    "threshold_metrics": lambda w: fastbias.threshold_metrics(Y8, S8, G8, sample_weight=w),
    "BiasEvaluator": lambda w: fastbias.BiasEvaluator(Y8, G8, sample_weight=w),
    "evaluate_column": lambda w: fastbias.evaluate(DF8.assign(w=w), label="y", scores="s",
                                                   subgroups=["a"], sample_weight="w"),
    "delong_paired_test": lambda w: fastbias.delong_paired_test(Y8, S8, S8[::-1].copy(), G8,
                                                                sample_weight=w),
    "bias_metrics_delong": lambda w: fastbias.bias_metrics(Y8, S8, G8, sample_weight=w,
                                                           ci="delong"),
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("value, words", [(-0.5, r"negative.*-0\.5"), (-1e-320, r"negative"),
                                          (np.nan, r"NaN"), (np.inf, r"infinite"),
                                          (-np.inf, r"infinite")])
def test_bad_weights_refused_naming_argument_and_position(entry, value, words):
    w = np.ones(8)
    w[5] = value
    with pytest.raises(ValueError) as info:
        ENTRIES[entry](w)
    msg = str(info.value)
    assert "sample_weight" in msg, msg
    assert "position 5" in msg, msg
    import re
    assert re.search(words, msg), msg


@pytest.mark.parametrize("entry", ["bias_metrics", "overall_auc", "threshold_metrics"])
def test_mixed_1e200_and_1e_minus_200_refused_naming_both(entry):
    w = np.ones(8)
    w[3], w[6] = 1e-200, 1e200
    with pytest.raises(ValueError) as info:
        ENTRIES[entry](w)
    msg = str(info.value)
    assert "sample_weight" in msg and "position 3" in msg and "position 6" in msg, msg
    assert "1e-200" in msg and "1e+200" in msg, msg


@pytest.mark.parametrize("scale, at", [(1e61, 2), (1e-61, 2)])
def test_delong_refuses_weights_beyond_2_pow_200_naming_largest(scale, at):
    w = np.ones(8) * 0.5 * scale
    w[at] = scale
    with pytest.raises(ValueError, match=rf"sample_weight.*position {at}"):
        fastbias.bias_metrics(Y8, S8, G8, sample_weight=w, ci="delong")
    # the metrics themselves take that scale
    check_table(fastbias.bias_metrics(Y8, S8, G8, sample_weight=w), Y8.astype(bool), S8, G8, w)


def test_bernstein_refuses_weights():
    with pytest.raises(ValueError, match="unweighted"):
        fastbias.bias_metrics(Y8, S8, G8, sample_weight=np.ones(8), ci="bernstein")
    with pytest.raises(ValueError, match="unweighted"):
        fastbias.threshold_metrics(Y8, S8, G8, sample_weight=np.ones(8),
                                   gap_interval="bernstein")


def test_weight_containers():
    good = {"float16": np.full(8, 0.1, np.float16), "float32": np.full(8, 0.1, np.float32),
            "uint64": np.ones(8, np.uint64), "column": np.ones((8, 1)),
            "minus_zero": np.array([-0.0, 1, 1, 1, 1, 1, 1, 1])}
    for name, w in good.items():
        t = fastbias.bias_metrics(Y8, S8, G8, sample_weight=w)
        check_table(t, Y8.astype(bool), S8, G8, np.asarray(w, dtype=np.float64).ravel())
    with pytest.raises(TypeError, match="sample_weight"):
        fastbias.bias_metrics(Y8, S8, G8, sample_weight=np.ones(8, bool))
    with pytest.raises(ValueError, match=r"sample_weight.*position 0"):
        fastbias.bias_metrics(Y8, S8, G8, sample_weight=[F(1, 3)] * 8)
    with pytest.raises(ValueError, match=r"sample_weight.*9007199254740993.*position 0"):
        fastbias.bias_metrics(Y8, S8, G8,
                              sample_weight=np.array([2 ** 53 + 1] + [1] * 7, np.int64))


@pytest.mark.parametrize("entry", ["bias_metrics", "overall_auc", "evaluate",
                                   "threshold_metrics"])
def test_long_double_weights_float64_cannot_hold_are_refused(entry):
    if np.finfo(np.longdouble).nmant <= np.finfo(np.float64).nmant:
        pytest.skip("long double is float64 here")
    y = np.array([0, 0, 0, 1, 1])
    s = np.array([0.0, 0.5, 1.0, 0.2, 0.8])
    g = {"a": np.array([0, 1, 0, 0, 1], bool)}
    w = np.array([1, 1, 1 + np.longdouble(2) ** -60, 1, 1], dtype=np.longdouble)
    assert w[2] != 1  # (the exact negative AEG of these weights is about 2.2e-19, not 0)
    calls = {
        "bias_metrics": lambda w: fastbias.bias_metrics(y, s, g, sample_weight=w),
        "overall_auc": lambda w: fastbias.overall_auc(y, s, sample_weight=w),
        "evaluate": lambda w: fastbias.evaluate(
            pd.DataFrame({"y": y, "s": s, "a": g["a"], "w": w}), label="y", scores="s",
            subgroups=["a"], sample_weight="w"),
        "threshold_metrics": lambda w: fastbias.threshold_metrics(
            y, s, g, thresholds=[0.5], sample_weight=w),
    }
    with pytest.raises(ValueError, match=r"sample_weight.*1\.0000000000000000009e\+00 at "
                                         r"position 2"):
        quiet(calls[entry], w)
    # long double weights that float64 holds are taken, as the same float64 weights
    exact = np.array([1, 1, 3, 0.5, 1], dtype=np.longdouble)
    got, want = quiet(calls[entry], exact), quiet(calls[entry], exact.astype(np.float64))
    if isinstance(got, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
    elif isinstance(got, float):
        assert got == want
    else:
        pd.testing.assert_frame_equal(got.table, want.table)


# ----------------------------------------------------------------------------- bootstrap
@pytest.mark.parametrize("kind", ["tiny_lognormal", "heavy_1e60", "ones"])
def test_weighted_bootstrap_equals_percentiles_of_exact_replicates(kind):
    rng, y, s, groups = small_data(700, n=30, levels=5)
    groups = {"a": groups["a"]}
    n, n_boot = len(y), 40
    w = {"tiny_lognormal": rng.lognormal(0, 3, n) * 1e-280,
         "heavy_1e60": np.where(rng.random(n) < 0.2, 1e60, 1.0) * rng.uniform(.5, 1, n),
         "ones": np.ones(n)}[kind]
    t = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, ci="bootstrap",
              n_boot=n_boot, random_state=5)
    # docs/intervals.md: replicate b weights row i by K_bi * w_i, K from child b of
    # SeedSequence(random_state); percentile interval over the finite replicates
    seeds = np.random.SeedSequence(5).spawn(n_boot)
    reps = {m: [] for m in METRICS}
    for seed in seeds:
        k = replicate_counts(seed, n).astype(float)
        assert k.min() >= 0 and k.max() < 20
        ex = exact_metrics(y, s, groups["a"], k * w)
        for m in METRICS:
            reps[m].append(np.nan if ex[m] is None else float(ex[m]))
    for m in METRICS:
        r = np.array(reps[m])
        lo, hi = np.nanquantile(r, [0.025, 0.975])
        assert abs(t.loc["a", f"{m}_low"] - lo) <= 1e-14, m
        assert abs(t.loc["a", f"{m}_high"] - hi) <= 1e-14, m


def test_unit_weights_bootstrap_equals_unweighted():
    rng, y, s, groups = small_data(710, n=200, levels=8)
    kw = dict(ci="bootstrap", n_boot=40, random_state=9)
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=np.ones(len(y)), **kw)
    b = quiet(fastbias.bias_metrics, y, s, groups, **kw)
    for c in [c for c in b.columns if c.endswith(("_low", "_high"))]:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=0,
                                   atol=1e-15, equal_nan=True, err_msg=c)


# ----------------------------------------------------------------------------- row order
@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("seed", range(1))
def test_row_order_invariance_weighted_metrics_delong_and_significance(seed, tied):
    """Metrics and the overall AUC are bit-identical under any row order. The DeLong
    standard errors and p-values are too where no weighted rows tie in score; with ties they
    move by ~1e-15 relative (the tied weights are summed in the order given; no document
    promises bit-equality across row orders for them, only across thread counts)."""
    rng = np.random.default_rng(800 + seed)
    n = 2000
    y = rng.random(n) < 0.4
    s = rng.random(n) * 0.8 + 0.2 * y
    if tied:
        s = np.round(s, 2)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.2}
    w = rng.uniform(0.1, 3, n)
    p = rng.permutation(n)
    kw = dict(ci="delong", significance="holm")
    a = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, **kw)
    b = quiet(fastbias.bias_metrics, y[p], s[p], {k: v[p] for k, v in groups.items()},
              sample_weight=w[p], **kw)
    # cells of 30+ rows: DeLong tests, no drawn p-values
    for c in a.columns:
        x, z = a[c].to_numpy(float), b[c].to_numpy(float)
        if c in METRICS or not tied or c.endswith("_significant"):
            assert np.array_equal(x, z, equal_nan=True), c
        else:
            np.testing.assert_allclose(x, z, rtol=1e-12, atol=1e-15, err_msg=c)
    assert a.attrs["overall_auc"] == b.attrs["overall_auc"]
    assert_close(a.attrs["overall_auc"], pair_prob(s[y], s[~y], w[y], w[~y]), "overall")


# ----------------------------------------------------------------------------- entry points
@pytest.mark.parametrize("scale", [1e-250, 1.0, 1e250])
@pytest.mark.parametrize("missing", ["background", "exclude"])
def test_evaluate_weighted_exact_with_missing_identities(scale, missing):
    rng = np.random.default_rng(900)
    n = 30
    y = rng.random(n) < 0.5
    s = rng.integers(0, 4, n) / 4
    df = pd.DataFrame({"y": y.astype(float), "s": s,
                       "a": np.where(rng.random(n) < .2, np.nan, (rng.random(n) < .4) * 1.0),
                       "b": np.where(rng.random(n) < .2, np.nan, (rng.random(n) < .4) * 1.0)})
    w = rng.lognormal(0, 3, n) * scale
    w[rng.random(n) < 0.1] = 0
    df["w"] = w
    res = quiet(fastbias.evaluate, df, label="y", scores="s", subgroups=["a", "b"],
                sample_weight="w", missing_subgroup=missing)
    t = res.for_model()
    for g in ["a", "b"]:
        col = df[g].to_numpy()
        rows = np.ones(n, bool) if missing == "background" else ~np.isnan(col)
        want = exact_metrics(y[rows], s[rows], (col >= 0.5)[rows], w[rows])
        for m in METRICS:
            assert_close(float(t.loc[g, m]), want[m], f"{g} {m}")
    assert_close(float(res.overall_auc["s"]), pair_prob(s[y], s[~y], w[y], w[~y]), "overall")


def test_final_metric_weighted_equals_power_mean_of_exact_values():
    rng = np.random.default_rng(901)
    n = 60
    y = rng.random(n) < 0.5
    s = rng.integers(0, 6, n) / 6
    groups = {"a": rng.random(n) < .4, "b": rng.random(n) < .4, "c": rng.random(n) < .3}
    w = rng.lognormal(0, 2, n)
    table = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w)
    ov = float(pair_prob(s[y], s[~y], w[y], w[~y]))
    parts = []
    for m in METRICS[:3]:
        vals = [float(exact_metrics(y, s, groups[g], w)[m]) for g in groups]
        assert min(vals) > 0
        parts.append(np.mean([v ** -5 for v in vals]) ** (-1 / 5))
    want = 0.25 * ov + 0.25 * sum(parts)
    assert abs(fastbias.final_metric(table) - want) <= 1e-13
    ev = fastbias.BiasEvaluator(y, groups, sample_weight=w)
    assert abs(ev.final_metric(s) - want) <= 1e-13


def test_intersections_weighted_exact():
    rng = np.random.default_rng(902)
    n = 30
    y = rng.random(n) < 0.5
    s = rng.integers(0, 4, n) / 4
    groups = {"a": rng.random(n) < 0.5, "b": rng.random(n) < 0.5, "c": rng.random(n) < 0.6}
    w = rng.lognormal(0, 4, n)
    t = quiet(fastbias.bias_metrics, y, s, groups, sample_weight=w, intersections=2)
    names = [x for x in t.index if "&" in x]
    assert names
    for name in t.index:
        member = np.logical_and.reduce([groups[p.strip()] for p in name.split("&")])
        want = exact_metrics(y, s, member, w)
        for m in METRICS:
            assert_close(float(t.loc[name, m]), want[m], f"{name} {m}")


def test_evaluator_folds_weighted_exact():
    rng = np.random.default_rng(903)
    n = 40
    y = rng.random(n) < 0.5
    s = rng.integers(0, 5, n) / 5
    g = {"a": rng.random(n) < 0.4}
    w = rng.lognormal(0, 4, n) * 1e200
    ev = fastbias.BiasEvaluator(y, g, sample_weight=w)
    idx = np.arange(n) % 2 == 0
    t = quiet(ev.metrics, s[idx], index=idx)
    want = exact_metrics(y[idx], s[idx], g["a"][idx], w[idx])
    for m in METRICS:
        assert_close(float(t.loc["a", m]), want[m], m)


def test_csv_and_cli_weighted_exact(tmp_path):
    rng = np.random.default_rng(904)
    n = 40
    y = rng.random(n) < 0.5
    s = rng.integers(0, 5, n) / 5
    a = rng.random(n) < 0.4
    w = rng.lognormal(0, 4, n) * 1e200
    w[3] = 0
    path = tmp_path / "d.csv"
    pd.DataFrame({"y": y.astype(int), "s": s, "a": a, "w": w}).to_csv(path, index=False)
    # parse the file ourselves (what the file holds, not the array above)
    import csv
    with open(path) as f:
        rows = list(csv.DictReader(f))
    fy = np.array([r["y"] == "1" for r in rows])
    fs = np.array([float(r["s"]) for r in rows])
    fa = np.array([r["a"] == "True" for r in rows])
    fw = np.array([float(r["w"]) for r in rows])
    want = exact_metrics(fy, fs, fa, fw)
    res = quiet(fastbias.evaluate_csv, path, label="y", scores="s", subgroups=["a"],
                sample_weight="w")
    t = res.for_model()
    for m in METRICS:
        assert_close(float(t.loc["a", m]), want[m], f"csv {m}")
    out = tmp_path / "o.csv"
    p = cli_runner.run_cli(["report", path, "--label", "y", "--scores", "s", "--subgroups", "a",
                            "--weight", "w", "--out", out, "--csv-raw", "-q"])
    assert p.returncode == 0, p.stderr
    o = pd.read_csv(out)
    for m in METRICS:
        assert_close(float(o[m].iloc[0]), want[m], f"cli {m}")
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"y": y.astype(int), "s": s, "a": a,
                  "w": np.where(np.arange(n) == 7, -2.5, w)}).to_csv(bad, index=False)
    p = cli_runner.run_cli(["report", bad, "--label", "y", "--scores", "s", "--subgroups", "a",
                            "--weight", "w", "--out", tmp_path / "o2.csv", "-q"])
    assert p.returncode == 1
    assert "'w'" in p.stderr and "-2.5" in p.stderr and "7" in p.stderr, p.stderr


@pytest.mark.parametrize("k", [-900, -3, 5, 600])
def test_threshold_rates_power_of_two_scaling_bit_identical(k):
    rng, y, s, groups = small_data(950, n=300, levels=10)
    w = rng.lognormal(0, 1, len(y))
    a = quiet(fastbias.threshold_metrics, y, s, groups, sample_weight=w, thresholds=[0.3, 0.6],
              interval=None)
    b = quiet(fastbias.threshold_metrics, y, s, groups, sample_weight=np.ldexp(w, k),
              thresholds=[0.3, 0.6], interval=None)
    rates = [c for c in a.columns if c.endswith(("_rate", "_tpr", "_fpr", "_fnr", "_precision",
                                                 "_gap"))]
    assert len(rates) >= 10
    for c in rates:
        assert np.array_equal(a[c].to_numpy(float), b[c].to_numpy(float), equal_nan=True), c


def test_paired_delong_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(960)
    n = 600
    y = rng.random(n) < 0.4
    s1 = np.round(rng.random(n) * 0.7 + 0.3 * y, 2)
    s2 = np.round(rng.random(n) * 0.8 + 0.2 * y, 2)
    groups = {"a": rng.random(n) < 0.3}
    w = rng.integers(0, 4, n).astype(float)
    rep = np.repeat(np.arange(n), w.astype(int))
    a = quiet(fastbias.delong_paired_test, y, s1, s2, groups, sample_weight=w)
    b = quiet(fastbias.delong_paired_test, y[rep], s1[rep], s2[rep],
              {k: v[rep] for k, v in groups.items()})
    for c in ["value_a", "value_b", "difference", "se_a", "se_b", "difference_se", "z", "p_value"]:
        np.testing.assert_allclose(a[c].to_numpy(float), b[c].to_numpy(float), rtol=1e-11,
                                   atol=1e-15, err_msg=c)
