"""fastbias.aggregates: power_mean, final_metric and pinned_auc against independent references.

References: scipy.stats.pmean/gmean for the power mean, the per-subgroup
sklearn/scipy loop of tests/reference.py for the final metric, and for Pinned
AUC the pandas construction of the reference code (``DataFrame.sample`` +
``roc_auc_score``) and an exhaustive enumeration of every possible draw.
"""
import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import UndefinedMetricWarning
from fastbias.aggregates import final_metric, pinned_auc, power_mean
from fastbias.metrics.aggregates import _expected_pinned_terms
from fastbias.prepare.memberships import prepare_memberships
from fastbias.sweep.counts import sweep_counts

from .reference import pair_probability, sklearn_scipy_metrics

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]


# ----------------------------------------------------------------------------- power_mean

@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=30),
       p=st.sampled_from([-5, -2, -1, 0.5, 1, 2, 3]))
def test_power_mean_matches_scipy_pmean(values, p):
    assert power_mean(values, p) == pytest.approx(stats.pmean(values, p), rel=1e-12)
    # the Kaggle kernel's formula, written out
    assert power_mean(pd.Series(values), p) == pytest.approx(
        (sum(v ** p for v in values) / len(values)) ** (1 / p), rel=1e-12)


def test_power_mean_limits_and_special_values():
    values = [0.3, 0.9, 0.6]
    assert power_mean(values, 0) == pytest.approx(stats.gmean(values), rel=1e-12)
    assert power_mean(values, float("-inf")) == 0.3
    assert power_mean(values, float("inf")) == 0.9
    assert power_mean(np.array([[0.3], [0.9]]), 1) == pytest.approx(0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no divide-by-zero RuntimeWarning
        assert power_mean([0.0, 0.8], -5) == 0.0
    assert math.isnan(power_mean([0.5, np.nan], -5))
    # an infinite value: the formula's limit (the scaled path made it NaN: found by review)
    assert power_mean([1.0, np.inf], 2) == np.inf and power_mean([0.5, np.inf], 1e-9) == np.inf
    assert power_mean([np.inf, np.inf], -3) == np.inf
    assert power_mean([1.0, np.inf], -3) == pytest.approx(2.0 ** (1 / 3), rel=1e-15)


def _power_mean_in_decimal(values, p):
    """The power mean in 80-digit decimals (an independent reference): zeros with p < 0 give
    0, the limit."""
    import decimal

    with decimal.localcontext() as context:
        context.prec = 80
        xs = [decimal.Decimal(float(v)) for v in values]
        if p < 0 and any(x == 0 for x in xs):
            return 0.0
        power = decimal.Decimal(p)
        total = sum((x ** power if x > 0 else decimal.Decimal(0) for x in xs),
                    decimal.Decimal(0))
        if total == 0:
            return 0.0
        return float((total / len(xs)) ** (1 / power))


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.one_of(st.floats(1e-300, 1e300), st.floats(0.01, 1.0),
                                 st.just(0.0)), min_size=1, max_size=12),
       p=st.sampled_from([-2000, -1000, -50, -5, -1, -1e-9, 1e-12, 1e-4, 0.03, 0.5, 1, 2, 7,
                          50, 1000, 2000]))
def test_power_mean_without_overflow_or_underflow(values, p):
    """A power of a value beyond the floats (0.45**-1000, 0.5**2000, 1e200**2) is not the
    mean's end: the mean of the powers is taken on values scaled by their largest (p > 0)
    or smallest (p < 0), exactly where the plain formula would lose them (before, the
    power mean of [0.45, 0.9] at p = -1000 was 0, and of [1e200, 1e200] at p = 2 inf); a
    power near 0 through expm1/log1p (1.4% off at p = 1e-15: found by review)."""
    want = _power_mean_in_decimal(values, p)
    got = power_mean(values, p)
    # (a mean below the normal floats is held to them, not to 13 digits; near p = 0 the
    # result is the mean of the powers to the 1/p: a zero among the values makes it e**t,
    # t = ln(mean) / p in the thousands, and e**t carries t times the rounding of t)
    rel = 1e-13 if abs(p) >= 1 else 2e-12
    assert got == pytest.approx(want, rel=rel, abs=np.finfo(np.float64).tiny)
    if p < 0:  # every value pays: the mean of the powers of one row of a 2-D input too
        rows = np.array([values, values])
        np.testing.assert_allclose(fastbias.metrics.aggregates.power_means(rows, p),
                                   [want, want], rtol=1e-13)


def test_final_metric_with_a_large_power():
    """The power of a soft minimum (p = -1000) in the final metric: its power means as the
    exact ones (before, 0.6 for 0.7126)."""
    table = pd.DataFrame({"subgroup_auc": [0.45, 0.9], "bpsn_auc": [0.8, 0.8],
                          "bnsp_auc": [0.8, 0.8]}, index=["a", "b"])
    bias = (_power_mean_in_decimal([0.45, 0.9], -1000) + 0.8 + 0.8) / 3
    assert final_metric(table, 0.8, power=-1000) == pytest.approx(0.25 * 0.8 + 0.75 * bias,
                                                                  rel=1e-14)


@pytest.mark.parametrize("values, p, error, match", [
    ([], -5, ValueError, "empty"),
    ([0.5, -0.1], -5, ValueError, "non-negative"),
    (["a", "b"], -5, TypeError, "numeric"),
    ([0.5], float("nan"), TypeError, "p must be"),
    ([0.5], True, TypeError, "p must be"),
    (np.ones((2, 2)), 1, ValueError, "one-dimensional"),
])
def test_power_mean_rejects_bad_input(values, p, error, match):
    with pytest.raises(error, match=match):
        power_mean(values, p)


# ----------------------------------------------------------------------------- final_metric

def _random_problem(seed, n=600, k=5, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    member = rng.random((n, k)) < rng.uniform(0.05, 0.4, size=k)
    s = rng.normal(size=n) + 1.2 * y + 0.5 * member[:, 0]
    if ties:
        s = np.round(s, 1)
    return y, s, member


def _independent_final_metric(y, s, member, power, weight, omit_nan=False):
    """sklearn/scipy per-subgroup loop + scipy.stats.pmean, nothing from fastbias."""
    per_group = [sklearn_scipy_metrics(y, s, member[:, j]) for j in range(member.shape[1])]
    means = []
    for metric in AUCS:
        values = np.array([g[metric] for g in per_group])
        if omit_nan:
            values = values[~np.isnan(values)]
        means.append(np.nan if np.isnan(values).any() else stats.pmean(values, power))
    return weight * roc_auc_score(y, s) + (1 - weight) * np.mean(means)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("power, weight", [(-5, 0.25), (1, 0.5), (-2, 0.0), (3, 1.0)])
def test_final_metric_matches_independent_computation(seed, power, weight):
    y, s, member = _random_problem(seed)
    table = fastbias.bias_metrics(y, s, member)
    expected = _independent_final_metric(y, s, member, power, weight)
    got = final_metric(table, fastbias.overall_auc(y, s), power=power, overall_weight=weight)
    assert got == pytest.approx(expected, rel=1e-12)
    # overall AUC taken from table.attrs when not given
    assert final_metric(table, power=power, overall_weight=weight) == pytest.approx(expected,
                                                                                    rel=1e-12)


def _table_with_undefined_group():
    y, s, member = _random_problem(5)
    member[:, 2] = member[:, 2] & y  # an all-positive subgroup: subgroup_auc and bpsn undefined
    with pytest.warns(UndefinedMetricWarning):
        table = fastbias.bias_metrics(y, s, member)
    return y, s, member, table


def test_final_metric_nan_propagates_by_default_with_a_warning():
    table = _table_with_undefined_group()[3]
    with pytest.warns(UndefinedMetricWarning, match=r"subgroup_2 \(subgroup_auc\)"):
        assert math.isnan(final_metric(table))


def test_final_metric_omit_skips_nan_groups_silently():
    y, s, member, table = _table_with_undefined_group()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # omit was asked for: nothing to warn about
        got = final_metric(table, undefined="omit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = _independent_final_metric(y, s, member, -5, 0.25, omit_nan=True)
    assert got == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="subgroup_2"):
        final_metric(table, undefined="raise")


def test_final_metric_nan_policy_is_the_deprecated_name_of_undefined():
    y, s, member, table = _table_with_undefined_group()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = final_metric(table, undefined="omit")
        with pytest.warns(DeprecationWarning, match=r"undefined='omit'"):
            assert final_metric(table, nan_policy="omit") == want
        with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="undefined must"):
            final_metric(table, nan_policy="skip")


def test_final_metric_nan_overall_auc_gives_nan():
    table = fastbias.bias_metrics(*_random_problem(0))
    with pytest.warns(UndefinedMetricWarning, match="the overall AUC is NaN"):
        assert math.isnan(final_metric(table, float("nan")))


def test_final_metric_says_why_whenever_it_is_nan():
    """NaN with one warning, every way (an AUC undefined in every subgroup under 'omit' had
    left nothing to average, silently); a model's warning names the model."""
    table = fastbias.bias_metrics(*_random_problem(0))
    empty = table.copy()
    empty["bpsn_auc"] = np.nan
    with pytest.warns(UndefinedMetricWarning, match="undefined in every subgroup"):
        assert math.isnan(final_metric(empty, undefined="omit"))
    df = pd.DataFrame({"y": [0, 1] * 20, "a": np.linspace(0, 1, 40),
                       "b": np.linspace(1, 0, 40), "g": [True] + [False] * 39})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="y", scores=["a", "b"], subgroups=["g"])
    with pytest.warns(UndefinedMetricWarning) as caught:
        res.final_metric()
    said = sorted(str(w.message).split(":")[0] for w in caught)
    assert said == ["model 'a'", "model 'b'"]


@pytest.mark.parametrize("kwargs, error, match", [
    ({"overall_weight": 1.5}, ValueError, "overall_weight"),
    ({"overall_weight": True}, ValueError, "overall_weight"),
    ({"undefined": "skip"}, ValueError, "undefined must be one of"),
    ({"undefined": "omit", "nan_policy": "raise"}, TypeError, "undefined= only"),
    ({"power": float("nan")}, TypeError, "power must be a real number"),
    ({"power": "x"}, TypeError, "power must be a real number .*'x'"),
    ({"power": True}, TypeError, "power must be a real number"),
])
def test_final_metric_rejects_bad_options(kwargs, error, match):
    table = fastbias.bias_metrics(*_random_problem(0))
    with pytest.raises(error, match=match):
        final_metric(table, **kwargs)


def test_final_metric_rejects_bad_tables():
    table = fastbias.bias_metrics(*_random_problem(0))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['bnsp_auc'\]"):
        final_metric(table.drop(columns="bnsp_auc"), 0.9)
    with pytest.raises(TypeError, match="DataFrame"):
        final_metric(table.to_numpy(), 0.9)
    with pytest.raises(ValueError, match="no rows"):
        final_metric(table.iloc[:0], 0.9)
    bare = pd.DataFrame(table[AUCS].to_numpy(), columns=AUCS)
    with pytest.raises(ValueError, match="overall_auc not given"):
        final_metric(bare)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        final_metric(bare, 1.2)
    with pytest.raises(TypeError, match="overall_auc must be a number"):
        final_metric(bare, "0.9")
    two_models = pd.concat([bare.assign(model="a"), bare.assign(model="b")])
    with pytest.raises(ValueError, match="2 models"):
        final_metric(two_models, 0.9)


# ----------------------------------------------------------------------------- pinned_auc

def _frame(seed, n=500, k=4, dtype=np.float64):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    member = rng.random((n, k)) < rng.uniform(0.05, 0.45, size=k)
    s = (np.round(rng.normal(size=n) + y + 0.6 * member[:, 1], 1)).astype(dtype)
    df = pd.DataFrame({"label": y, "score": s})
    names = [f"g{j}" for j in range(k)]
    for j, name in enumerate(names):
        df[name] = member[:, j]
    return df, names


def _reference_pinned(df, subgroup, random_state=25, dixon=False, replace=False):
    """The reference implementation's construction: pandas sample + sklearn AUC."""
    subgroup_df = df[df[subgroup]]
    population = df if dixon else df[~df[subgroup]]
    drawn = population.sample(len(subgroup_df), random_state=random_state, replace=replace)
    pinned = pd.concat([subgroup_df, drawn])
    try:
        return roc_auc_score(pinned["label"], pinned["score"])
    except ValueError:  # one class
        return np.nan


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("method", ["sample", "dixon"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sampled_pinned_auc_matches_pandas_construction(seed, method, dtype):
    df, names = _frame(seed, dtype=dtype)
    got = pinned_auc(df["label"], df["score"], df[names], method=method)
    expected = [_reference_pinned(df, g, dixon=method == "dixon") for g in names]
    assert got.index.tolist() == names and got.name == "pinned_auc"
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("method", ["sample", "dixon"])
def test_sampled_pinned_auc_other_seeds_and_shared_states(method):
    df, names = _frame(3)
    dixon = method == "dixon"
    got = pinned_auc(df["label"], df["score"], df[names], method=method, random_state=7)
    np.testing.assert_allclose(got, [_reference_pinned(df, g, 7, dixon) for g in names],
                               rtol=1e-12)
    # one RandomState / Generator shared across subgroups, drawn from in order (as pandas does)
    for make in (np.random.RandomState, np.random.default_rng):
        got = pinned_auc(df["label"], df["score"], df[names], method=method, random_state=make(11))
        state = make(11)
        np.testing.assert_allclose(got, [_reference_pinned(df, g, state, dixon) for g in names],
                                   rtol=1e-12)
    # None draws from numpy's global state, like DataFrame.sample(random_state=None)
    np.random.seed(5)
    got = pinned_auc(df["label"], df["score"], df[names], method=method, random_state=None)
    np.random.seed(5)
    np.testing.assert_allclose(got, [_reference_pinned(df, g, None, dixon) for g in names],
                               rtol=1e-12)


def test_sampled_pinned_auc_with_replacement_and_large_subgroups():
    df = _frame(4, n=300)[0]
    df["big"] = np.arange(len(df)) < 200  # larger than its background of 100 rows
    with pytest.raises(ValueError, match="'big' has 200 rows but its background only 100"):
        pinned_auc(df["label"], df["score"], df[["g0", "big"]])
    with pytest.raises(ValueError, match="'big' has 200 rows but its background only 100"):
        pinned_auc(df["label"], df["score"], df[["big"]], method="expected")
    got = pinned_auc(df["label"], df["score"], df[["g0", "big"]], replace=True)
    expected = [_reference_pinned(df, g, replace=True) for g in ["g0", "big"]]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # dixon draws from all rows, so a large subgroup is fine without replacement
    got = pinned_auc(df["label"], df["score"], df[["big"]], method="dixon")
    assert got["big"] == pytest.approx(_reference_pinned(df, "big", dixon=True), rel=1e-12)


def test_pinned_auc_undefined_and_invalid_cases():
    y = np.array([0, 1, 0, 1, 1, 1], bool)
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    groups = {"empty": np.zeros(6, bool), "ok": np.array([1, 1, 0, 0, 0, 0], bool)}
    for method in ("sample", "expected"):
        with pytest.warns(UndefinedMetricWarning, match=r"empty \(0 rows\)"):
            got = pinned_auc(y, s, groups, method=method)
        assert math.isnan(got["empty"]) and not math.isnan(got["ok"])
    # a one-class pinned set (all rows positive)
    with pytest.warns(UndefinedMetricWarning, match="one-class"):
        assert math.isnan(pinned_auc(np.ones(4, bool), s[:4], {"g": np.arange(4) < 2})["g"])
    with pytest.raises(ValueError, match="covers every row"):
        pinned_auc(y, s, {"all": np.ones(6, bool)}, replace=True)
    with pytest.raises(ValueError, match="method must be one of"):
        pinned_auc(y, s, groups, method="exact")
    with pytest.raises(TypeError, match="random_state"):
        pinned_auc(y, s, groups, random_state="25")
    with pytest.raises(TypeError, match="replace"):
        pinned_auc(y, s, groups, replace="yes")
    with pytest.raises(ValueError, match="y_score has 5 rows"):
        pinned_auc(y, s[:5], groups)


def _enumerated_expectation(y, s, member, dixon, replace):
    """E[twice U] and E[pairs] of the pinned set over every possible draw, by brute force."""
    rows = np.flatnonzero(member)
    population = np.arange(y.size) if dixon else np.flatnonzero(~member)
    m = rows.size
    draws = (itertools.product(population, repeat=m) if replace
             else itertools.combinations(population, m))
    total_u = total_pairs = 0.0
    count = 0
    for drawn in draws:
        pinned = np.concatenate([rows, np.asarray(drawn, dtype=np.int64)])
        pos, neg = s[pinned][y[pinned]], s[pinned][~y[pinned]]
        pairs = pos.size * neg.size
        total_pairs += pairs
        total_u += 2 * pairs * pair_probability(pos, neg) if pairs else 0.0
        count += 1
    return total_u / count, total_pairs / count


@pytest.mark.parametrize("method", ["expected", "expected_dixon"])
@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_expected_pinned_terms_equal_exhaustive_enumeration(method, replace, seed):
    rng = np.random.default_rng(seed)
    n = 9
    y = rng.random(n) < 0.5
    y[:2] = [True, False]
    s = np.round(rng.random(n), 1)  # ties
    member = np.zeros(n, bool)
    member[rng.choice(n, 3, replace=False)] = True
    sc = sweep_counts(s, prepare_memberships(y, [np.flatnonzero(member)], ["g"]))
    terms = _expected_pinned_terms(sc, method, replace)
    e_u = sum(v[0] for k, v in terms.items() if k.endswith("_twice_u"))
    e_pairs = sum(v[0] for k, v in terms.items() if k.endswith("_pairs"))
    ref_u, ref_pairs = _enumerated_expectation(y, s, member, method == "expected_dixon", replace)
    assert e_u == pytest.approx(ref_u, rel=1e-12, abs=1e-12)
    assert e_pairs == pytest.approx(ref_pairs, rel=1e-12, abs=1e-12)
    got = pinned_auc(y, s, {"g": member}, method=method, replace=replace)["g"]
    assert got == pytest.approx(ref_u / (2 * ref_pairs), rel=1e-12)


def test_expected_pinned_equals_sample_when_the_whole_background_is_drawn():
    df, _ = _frame(6, n=400)
    df["half"] = np.arange(len(df)) % 2 == 0  # 200 rows, background of 200: all of it drawn
    sampled = pinned_auc(df["label"], df["score"], df[["half"]])["half"]
    expected = pinned_auc(df["label"], df["score"], df[["half"]], method="expected")["half"]
    assert expected == pytest.approx(sampled, rel=1e-13)
    assert sampled == pytest.approx(_reference_pinned(df, "half"), rel=1e-13)


@pytest.mark.jit_heavy
@pytest.mark.parametrize("method", ["sample", "dixon"])
def test_expected_pinned_auc_is_the_mean_of_many_draws(method):
    rng = np.random.default_rng(8)
    n = 3000
    y = rng.random(n) < 0.3
    member = np.zeros((n, 2), bool)
    member[:, 0] = rng.random(n) < 0.08
    member[:, 1] = rng.random(n) < np.where(y, 0.15, 0.03)  # skewed class balance
    s = np.round(rng.normal(size=n) + 1.5 * y + 0.8 * member[:, 1], 2)
    n_draws = 300
    draws = np.array([pinned_auc(y, s, member, method=method, random_state=seed).to_numpy()
                      for seed in range(n_draws)])
    mean = draws.mean(axis=0)
    standard_error = draws.std(axis=0, ddof=1) / np.sqrt(n_draws)
    expected = pinned_auc(y, s, member, method="expected" if method == "sample"
                          else "expected_dixon").to_numpy()
    # ratio of expectations vs mean of ratios: the difference is O(1/|g|), far below 5 SE here
    assert np.all(np.abs(mean - expected) < 5 * standard_error + 5e-4), (mean, expected,
                                                                          standard_error)
    # and the sampled values really vary, so the comparison has teeth
    assert np.all(draws.std(axis=0) > 1e-3)


def test_pinned_auc_fractional_labels_and_memberships_with_thresholds():
    df, names = _frame(9)
    fractional = df.assign(label=np.where(df["label"], 0.8, 0.2))
    soft = df[names].astype(float) * 0.7
    got = pinned_auc(fractional["label"], df["score"], soft, label_threshold=0.5,
                     subgroup_threshold=0.5)
    np.testing.assert_allclose(got, [_reference_pinned(df, g) for g in names], rtol=1e-12)


def test_lazy_public_names():
    assert fastbias.power_mean is power_mean
    assert fastbias.final_metric is final_metric
    assert fastbias.pinned_auc is pinned_auc
