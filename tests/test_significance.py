"""Tests of significance="holm"|"bh": per-metric DeLong z-tests of "no bias", adjusted.

The reference is independent of the code under test: every row's placements
from O(n^2) pair matrices (integer weights by replicating rows), the DeLong
components of the metric and of the overall AUC normalised per row, the
variance of the difference as the sum over rows of their squared difference
(equivalently var_M + var_O - 2 cov, checked both ways), normal tails from
scipy, Holm from its step-down definition and Benjamini-Hochberg from
scipy.stats.false_discovery_control.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import fastbias
from fastbias.intervals.significance import PERMUTATION_BELOW, adjust_pvalues
from fastbias.metrics import METRIC_COLUMNS
from fastbias.validate.errors import UndefinedMetricWarning

from . import cli_runner


def kernel_matrix(above, below):
    a = np.asarray(above, dtype=np.float64)[:, None]
    b = np.asarray(below, dtype=np.float64)[None, :]
    return (a > b) + 0.5 * (a == b)


def psi(s, above_mask, below_mask):
    """Per-row normalised DeLong components of AUC(above vs below): 0 off the two samples."""
    out = np.zeros(s.shape[0])
    k = kernel_matrix(s[above_mask], s[below_mask])
    m, n = k.shape
    theta = k.mean()
    out[above_mask] = (k.mean(axis=1) - theta) / np.sqrt(m * (m - 1))
    out[below_mask] = (k.mean(axis=0) - theta) / np.sqrt(n * (n - 1))
    return out, theta


def reference_tests(y, s, member, w=None):
    """{metric: (gap, se, p)} for one subgroup by replicated rows and pair matrices (the
    DeLong z-test; NaN where a variance is undefined)."""
    rep = np.ones(len(y), int) if w is None else np.asarray(w).astype(int)
    y, s, member = (np.repeat(np.asarray(a), rep) for a in (y, s, member))
    y = y.astype(bool)
    member = member.astype(bool)
    cell = {("subgroup", 0): member & ~y, ("subgroup", 1): member & y,
            ("background", 0): ~member & ~y, ("background", 1): ~member & y}
    samples = {"subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
               "bpsn_auc": (("background", 1), ("subgroup", 0)),
               "bnsp_auc": (("subgroup", 1), ("background", 0)),
               "negative_aeg": (("background", 0), ("subgroup", 0)),
               "positive_aeg": (("background", 1), ("subgroup", 1))}
    psi_o, theta_o = psi(s, y, ~y)
    if min(cell[c].sum() for c in cell) < 2:
        return {metric: (np.nan, np.nan, np.nan) for metric in samples}
    out = {}
    for metric, (x, yc) in samples.items():
        psi_m, theta_m = psi(s, cell[x], cell[yc])
        if metric.endswith("aeg"):
            gap, var = 0.5 - theta_m, np.sum(psi_m ** 2)
        else:
            gap = theta_m - theta_o
            var = np.sum((psi_m - psi_o) ** 2)
            # the same variance as var_M + var_O - 2 cov, written out
            np.testing.assert_allclose(
                var, np.sum(psi_m ** 2) + np.sum(psi_o ** 2) - 2 * np.sum(psi_m * psi_o),
                rtol=1e-9, atol=1e-15)
        se = np.sqrt(var)
        if not np.isfinite(se):
            p = np.nan
        else:
            p = 2 * stats.norm.sf(abs(gap) / se) if se > 0 else (1.0 if gap == 0 else 0.0)
        out[metric] = (gap, se, p)
    return out


def holm_reference(p):
    """Holm's step-down adjusted p-values straight from the definition."""
    p = np.asarray(p, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        adj[j] = running
    return adj


def random_data(rng, n, weighted, levels):
    y = rng.random(n) < 0.4
    s = rng.integers(0, levels, n).astype(np.float64)  # heavy ties
    w = rng.integers(1, 4, n).astype(np.float64) if weighted else None
    groups = {f"g{j}": rng.random(n) < p for j, p in enumerate((0.25, 0.4, 0.6))}
    return y, s, w, groups


@pytest.fixture
def delong_everywhere(monkeypatch):
    """Every test a DeLong z-test (no permutation p-values), to check those against the
    reference on small data."""
    from fastbias.intervals import significance
    monkeypatch.setattr(significance, "PERMUTATION_BELOW", 0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("method", ["holm", "bh"])
def test_pvalues_match_pair_matrix_reference(weighted, method, delong_everywhere):
    rng = np.random.default_rng(11)
    for _ in range(6):
        n = int(rng.integers(80, 200))
        y, s, w, groups = random_data(rng, n, weighted, int(rng.integers(3, 12)))
        # a biased subgroup: its negatives scored higher
        s = s + 2.0 * (groups["g1"] & ~y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            table = fastbias.bias_metrics(y, s, groups, sample_weight=w, significance=method)
        raw = []
        for name, member in groups.items():
            ref = reference_tests(y, s, member, w)
            for metric in METRIC_COLUMNS:
                gap, se, p = ref[metric]
                got = table.loc[name, f"{metric}_pvalue"]
                np.testing.assert_allclose(got, p, rtol=1e-7, atol=0,
                                           err_msg=f"{name} {metric}")
                raw.append(p)
        raw = np.array(raw)
        tested = np.isfinite(raw)
        assert tested.sum() >= 10  # most tests are made
        adjusted = np.full(raw.shape, np.nan)
        adjusted[tested] = holm_reference(raw[tested]) if method == "holm" else \
            stats.false_discovery_control(raw[tested], method="bh")
        got = table[[f"{m}_pvalue_adjusted" for m in METRIC_COLUMNS]].to_numpy().reshape(-1)
        np.testing.assert_allclose(got, adjusted, rtol=1e-9)
        sig = table[[f"{m}_significant" for m in METRIC_COLUMNS]].to_numpy().reshape(-1)
        np.testing.assert_array_equal(sig, np.nan_to_num(adjusted, nan=1.0) <= 0.05)
        assert table.attrs["n_tests"] == tested.sum()
        assert table.attrs["significance"] == method


def test_planted_bias_is_found_and_fair_groups_are_not():
    rng = np.random.default_rng(3)
    n = 20_000
    y = rng.random(n) < 0.3
    groups = {f"g{j}": rng.random(n) < 0.1 for j in range(6)}
    s = y + rng.normal(0, 1, n)
    s = s + 0.8 * (groups["g0"] & ~y)  # g0's negatives scored like positives
    table = fastbias.bias_metrics(y, s, groups, significance="holm")
    assert table.loc["g0", "bpsn_auc_significant"]
    assert table.loc["g0", "negative_aeg_significant"]
    others = table.drop(index="g0")[[f"{m}_significant" for m in METRIC_COLUMNS]]
    assert not others.to_numpy().any()


def test_intersections_are_tested_in_the_same_family(delong_everywhere):
    rng = np.random.default_rng(4)
    n = 5000
    y = rng.random(n) < 0.4
    groups = {"a": rng.random(n) < 0.4, "b": rng.random(n) < 0.4, "c": rng.random(n) < 0.3}
    s = y + rng.normal(0, 1, n)
    table = fastbias.bias_metrics(y, s, groups, intersections=2, significance="bh")
    assert len(table) == 6
    assert table.attrs["n_tests"] == 30
    ref = reference_tests(y, s, groups["a"] & groups["b"])
    for metric in METRIC_COLUMNS:
        np.testing.assert_allclose(table.loc["a & b", f"{metric}_pvalue"], ref[metric][2],
                                   rtol=1e-7, atol=1e-12)


def exact_permutation_p(y, s, member, w, metrics, redraw_label):
    """Exact permutation p-values: every subset of the class ``redraw_label`` of the
    subgroup's size as its cell, the other cell fixed; brute-force metrics of each."""
    from itertools import combinations

    from tests.reference import brute_force_metrics, pair_probability
    y = np.asarray(y, bool)
    member = np.asarray(member, bool)
    theta_o = pair_probability(s[y], s[~y], None if w is None else w[y],
                               None if w is None else w[~y])
    observed = brute_force_metrics(y, s, member, w)
    pool = np.flatnonzero(y == bool(redraw_label))
    fixed = member & (y != bool(redraw_label))
    size = int((member & (y == bool(redraw_label))).sum())

    def distance(metric, value):
        return abs(value) if metric.endswith("aeg") else abs(value - theta_o)

    hits = dict.fromkeys(metrics, 0)
    total = 0
    for subset in combinations(pool, size):
        mask = fixed.copy()
        mask[list(subset)] = True
        values = brute_force_metrics(y, s, mask, w)
        total += 1
        for metric in metrics:
            d = distance(metric, values[metric])
            if not d < distance(metric, observed[metric]) - 1e-12:
                hits[metric] += 1
    return {metric: hits[metric] / total for metric in metrics}


@pytest.mark.parametrize("weighted", [False, True, "with zeros"])
def test_permutation_pvalues_match_exact_enumeration(weighted, monkeypatch):
    """Drawn p-values against every subset; "with zeros": five negatives outside the subgroup
    weigh 0, so some drawn cells weigh nothing (the metric undefined: such a draw counts, as
    in the enumeration; it raised ZeroDivisionError before)."""
    from fastbias.intervals import significance
    # run every test to the full budget (no sequential stop): a plain Monte Carlo estimate
    monkeypatch.setattr(significance, "PERMUTATION_HITS", 10 ** 9)
    rng = np.random.default_rng(21)
    n = 24
    y = np.zeros(n, bool)
    y[:11] = True  # 11 positives, 13 negatives
    s = np.round(rng.normal(size=n) + y, 1)
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    if weighted == "with zeros":
        w[[15, 17, 19, 21, 23]] = 0.0
    member = np.zeros(n, bool)
    member[[0, 1, 2, 3]] = True  # 4 positives
    member[[11, 12, 13]] = True  # 3 negatives
    s[[11, 12, 13]] = [5.0, 5.1, 5.2]  # the subgroup's negatives scored above all other rows
    table = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w, significance="holm")
    assert table.attrs["permutation_tests"] == 5
    draws = significance.permutation_draws(5, 0.05)
    # negatives redrawn (the smaller cell): subgroup AUC, BPSN AUC, negative AEG
    exact = exact_permutation_p(y, s, member, w, ["subgroup_auc", "bpsn_auc", "negative_aeg"], 0)
    exact.update(exact_permutation_p(y, s, member, w, ["bnsp_auc", "positive_aeg"], 1))
    for metric, p in exact.items():
        got = table.loc["g", f"{metric}_pvalue"]
        tolerance = 4 * np.sqrt(max(p, 1 / draws) * (1 - p) / draws) + 1 / draws
        assert abs(got - p) <= tolerance, (metric, got, p)
    if weighted != "with zeros":  # (there the enumeration itself gives it about 0.15)
        assert table.loc["g", "negative_aeg_pvalue"] < 0.05  # the planted gap shows


def test_permutation_pvalues_stop_early_and_are_reproducible():
    rng = np.random.default_rng(6)
    n = 3000
    y = rng.random(n) < 0.4
    s = y + rng.normal(0, 1, n)
    groups = {"small": rng.random(n) < 0.02, "big": rng.random(n) < 0.5}
    first = fastbias.bias_metrics(y, s, groups, significance="holm")
    again = fastbias.bias_metrics(y, s, groups, significance="holm", n_jobs=1)
    columns = [f"{m}_pvalue" for m in METRIC_COLUMNS]
    pd.testing.assert_frame_equal(first[columns], again[columns])
    # the small subgroup (cells under PERMUTATION_BELOW rows) is tested by permutation, the
    # big one (every cell larger) by DeLong
    assert first.loc["small", "subgroup_negatives"] < PERMUTATION_BELOW
    assert first.loc["big", ["subgroup_negatives", "subgroup_positives", "background_negatives",
                             "background_positives"]].min() >= PERMUTATION_BELOW
    assert first.attrs["permutation_tests"] == 5
    assert first.loc["small", columns].notna().all()


def test_weights_too_small_for_a_variance_are_not_tested_and_warned():
    rng = np.random.default_rng(9)
    n = 4000
    y = rng.random(n) < 0.5
    s = y + rng.normal(0, 1, n)
    w = np.full(n, 1e-4)  # every cell of 'big' weighs under 1: DeLong's variance is undefined
    with pytest.warns(UndefinedMetricWarning, match="not tested for significance") as rec:
        table = fastbias.bias_metrics(y, s, {"big": rng.random(n) < 0.5}, sample_weight=w,
                                      significance="bh")
    assert sum("significance" in str(r.message) for r in rec) == 1
    assert "big: subgroup_auc" in str(rec[0].message)
    assert table[[f"{m}_pvalue" for m in METRIC_COLUMNS]].isna().all(axis=None)
    assert not table[[f"{m}_significant" for m in METRIC_COLUMNS]].any(axis=None)
    assert table.attrs["n_tests"] == 0


def test_significance_argument_is_checked():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match="significance must be None, 'holm' or 'bh', got 'bonf'"):
        fastbias.bias_metrics(y, s, {"g": y == 1}, significance="bonf")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30),
       st.sampled_from(["holm", "bh"]))
def test_adjustment_properties(p, method):
    p = np.array(p)
    adj = adjust_pvalues(p, method)
    assert np.all(adj >= p - 1e-15) and np.all(adj <= 1.0)
    ref = holm_reference(p) if method == "holm" else stats.false_discovery_control(p)
    np.testing.assert_allclose(adj, ref, rtol=1e-12, atol=0)
    order = np.argsort(p, kind="stable")
    assert np.all(np.diff(adj[order]) >= -1e-15)  # monotone in p


def test_adjustment_leaves_nan_out_of_the_family():
    adj = adjust_pvalues([0.01, np.nan, 0.02], "holm")
    np.testing.assert_allclose(adj, [0.02, np.nan, 0.02])
    assert np.isnan(adjust_pvalues([np.nan], "bh")).all()


def test_a_subgroup_of_every_row_equals_the_overall_auc(delong_everywhere):
    rng = np.random.default_rng(8)
    n = 300
    y = rng.random(n) < 0.5
    s = np.round(rng.normal(size=n) + y, 1)
    groups = {"all": np.ones(n, bool), "half": rng.random(n) < 0.5}
    with pytest.warns(UndefinedMetricWarning):
        table = fastbias.bias_metrics(y, s, groups, significance="holm")
    # the same estimate as the overall AUC: the difference is 0 with variance 0
    assert table.loc["all", "subgroup_auc_pvalue"] == 1.0
    assert not table.loc["all", "subgroup_auc_significant"]
    for metric in ("bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"):
        assert np.isnan(table.loc["all", f"{metric}_pvalue"])  # empty background: undefined
    assert table.attrs["n_tests"] == 6


@pytest.mark.parametrize("seed", range(6))
def test_weighted_metrics_on_the_overall_aucs_own_samples_are_not_flagged(seed,
                                                                          delong_everywhere):
    """Weighted, such a metric differs from the overall AUC, and its difference's variance
    from 0, by rounding alone: the p-value is 1, never 0 from a variance that cancelled to
    0 (found by review: p = 0, flagged significant, in a third of random cases). Also where
    the rest of the rows weigh nothing, and for BPSN/BNSP AUC on all of one class."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 3000))
    y = rng.random(n) < 0.3
    s = rng.random(n).round(2)
    w = rng.random(n) + 0.01
    half = rng.random(n) < 0.5
    w_half = np.where(half, w, 0.0)  # the rows outside "half" weigh nothing
    groups = {"all": np.ones(n, bool), "half": half,
              "negatives": ~y,  # BPSN AUC: all negatives against all positives
              "positives": y & (rng.random(n) < 1.0)}  # BNSP AUC likewise
    for weights, same in ((w, {"all": "subgroup_auc", "negatives": "bpsn_auc",
                               "positives": "bnsp_auc"}),
                          (w_half, {"half": "subgroup_auc"})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            table = fastbias.bias_metrics(y, s, groups, sample_weight=weights,
                                          significance="holm")
        for name, metric in same.items():
            assert table.loc[name, f"{metric}_pvalue"] == 1.0, (name, metric)
            assert not table.loc[name, f"{metric}_significant"]
    # a subgroup that differs from the whole by one row of real weight is still tested
    almost = np.ones(n, bool)
    almost[0] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, {"almost": almost}, sample_weight=w,
                                      significance="holm")
    assert table.loc["almost", "subgroup_auc_pvalue"] < 1.0


@pytest.mark.jit_heavy  # (weights of 2**40: the weighted sweep recounts exactly, slow in Python)
def test_a_row_left_out_is_a_difference_however_heavy_the_others():
    """Only cells beside that weigh exactly nothing make a metric the overall AUC's: with
    rows of weight 2**40, a left-out negative of weight 100 at the top still moves the
    subgroup AUC measurably (found by review: a threshold relative to the class's weight
    called it rounding and gave p = 1 instead of about 1e-23)."""
    rng = np.random.default_rng(21)
    n = 2000
    y = rng.random(n) < 0.4
    s = rng.random(n)
    w = np.full(n, 2.0 ** 40)
    top = np.flatnonzero(~y)[np.argmax(s[~y])]
    w[top] = 100.0
    member = np.ones(n, bool)
    member[top] = False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w,
                                      significance="holm")
    assert table.loc["g", "subgroup_auc_pvalue"] < 1e-10


def test_an_undefined_variance_stays_untested_on_the_overall_aucs_samples():
    """Positives of total weight below 1: DeLong's variance is undefined, so the metric is
    not tested (NaN, out of the adjusted family) even where it is the overall AUC (found by
    review: it had become p = 1 and a member of the family, which changed the others'
    adjusted p-values)."""
    rng = np.random.default_rng(14)
    n = 400
    y = rng.random(n) < 0.3
    s = rng.random(n).round(2)
    w = np.where(y, 1e-3, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, {"all": np.ones(n, bool),
                                             "a": rng.random(n) < 0.5},
                                      sample_weight=w, significance="holm")
    assert np.isnan(table.loc["all", "subgroup_auc_pvalue"])
    assert table.attrs["n_tests"] == int(np.isfinite(
        table[[f"{m}_pvalue" for m in METRIC_COLUMNS]].to_numpy(float)).sum())


@pytest.mark.jit_heavy  # (about the adjustment over models; its kernels run in other tests)
def test_evaluate_adjusts_each_model_over_all_its_subgroups():
    df = fastbias.make_jigsaw_like(n_rows=30_000, n_identities=4, random_state=2)
    names = ["male", "female", "transgender", "other_gender"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
                                subgroups=names, significance="bh", intersections=2,
                                min_subgroup_size=10)
    for model in res.models:
        table = res.for_model(model)
        y = df["toxicity"].to_numpy() >= 0.5
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            direct = fastbias.bias_metrics(y, df[model].to_numpy(),
                                           {g: df[g].to_numpy() >= 0.5 for g in names},
                                           significance="bh", intersections=2,
                                           min_subgroup_size=10)
        columns = [f"{m}_{c}" for m in METRIC_COLUMNS
                   for c in ("pvalue", "pvalue_adjusted", "significant")]
        pd.testing.assert_frame_equal(table[columns], direct[columns], check_names=False)
    assert res.settings["significance"] == "bh"


# ----------------------------------------------------------------------------- entry points


def biased_frame(n=6000, seed=12):
    """A DataFrame where 'a' negatives are scored like positives and 'b' is fair."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    a = rng.random(n) < 0.15
    b = rng.random(n) < 0.15
    c = np.where(rng.random(n) < 0.2, np.nan, (rng.random(n) < 0.2).astype(float))
    score = y + rng.normal(0, 1, n) + 1.2 * (a & ~y)
    return pd.DataFrame({"label": y.astype(float), "score": score, "a": a, "b": b, "c": c})


def test_evaluate_exclude_compares_with_the_annotated_rows_auc(delong_everywhere):
    df = biased_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="label", scores="score", subgroups=["a", "b", "c"],
                                missing_subgroup="exclude", significance="holm")
    table = res.for_model()
    annotated = df["c"].notna().to_numpy()
    sub = df[annotated]
    ref = reference_tests(sub["label"].to_numpy() >= 0.5, sub["score"].to_numpy(),
                          sub["c"].to_numpy() >= 0.5)
    for metric in METRIC_COLUMNS:
        np.testing.assert_allclose(table.loc["c", f"{metric}_pvalue"], ref[metric][2],
                                   rtol=1e-7, atol=1e-12, err_msg=metric)
    # 'a' and 'b' are over all rows
    ref = reference_tests(df["label"].to_numpy() >= 0.5, df["score"].to_numpy(),
                          df["a"].to_numpy())
    np.testing.assert_allclose(table.loc["a", "bpsn_auc_pvalue"], ref["bpsn_auc"][2], rtol=1e-7)
    assert table.loc["a", "bpsn_auc_significant"] and table.loc["a", "negative_aeg_significant"]


def test_evaluator_metrics_significance_equals_bias_metrics():
    df = biased_frame()
    y = df["label"].to_numpy() >= 0.5
    groups = {"a": df["a"].to_numpy(), "b": df["b"].to_numpy()}
    ev = fastbias.BiasEvaluator(y, groups)
    got = ev.metrics(df["score"].to_numpy(), significance="bh", confidence=0.99)
    want = fastbias.bias_metrics(y, df["score"].to_numpy(), groups, significance="bh",
                                 confidence=0.99)
    pd.testing.assert_frame_equal(got, want)
    assert got.attrs["significance_level"] == 0.01
    fold = np.arange(0, len(df), 2)
    got = ev.metrics(df["score"].to_numpy()[fold], index=fold, significance="holm")
    want = fastbias.bias_metrics(y[fold], df["score"].to_numpy()[fold],
                                 {k: v[fold] for k, v in groups.items()}, significance="holm")
    pd.testing.assert_frame_equal(got, want)


def test_text_and_html_reports_mark_exactly_the_significant_cells():
    from fastbias.report import bias_report
    df = biased_frame()
    report = bias_report(df, label="label", scores="score", subgroups=["a", "b"],
                         significance="holm", intersections=2)
    table = report.result.for_model()
    text = report.to_text()
    assert "Holm" in text and "significant" in text.splitlines()[1]
    for name, row in table.iterrows():
        line = next(li for li in text.splitlines() if re.match(rf"{re.escape(name)}\s{{2,}}\d", li))
        flagged = [m for m in METRIC_COLUMNS if row[f"{m}_significant"]]
        assert line.count("*") == len(flagged)
        assert line.rstrip().endswith(",".join(
            {"negative_aeg": "neg_aeg", "positive_aeg": "pos_aeg"}.get(m, m) for m in flagged)
            or "-")
    assert table.loc["a", "bpsn_auc_significant"] and not table.loc["b"].filter(
        like="_significant").any()
    page = report.to_html()
    n_flags = int(table.filter(like="_significant").to_numpy().sum())
    assert page.count('class="num metric significant"') == n_flags
    assert page.count('<span class="sig"') == n_flags
    assert 'id="significance-note"' in page and "Holm-adjusted tests at level" in page
    assert '<h2 id="intersections">' in page and "a &amp; b" in page


def test_reports_without_significance_have_no_marks():
    from fastbias.report import bias_report
    report = bias_report(biased_frame(), label="label", scores="score", subgroups=["a", "b"])
    assert "*" not in report.to_text() and "significant" not in report.to_text()
    page = report.to_html()
    assert "significance-note" not in page and 'class="sig"' not in page


def test_heatmap_marks_significant_cells():
    pytest.importorskip("matplotlib")
    from fastbias.plotting import plot_auc_heatmap
    df = biased_frame()
    res = fastbias.evaluate(df, label="label", scores="score", subgroups=["a", "b"],
                            significance="holm")
    fig = plot_auc_heatmap(res)
    texts = [t.get_text() for t in fig.axes[0].texts]
    n_flags = int(res.table[[f"{m}_significant" for m in ("subgroup_auc", "bpsn_auc",
                                                          "bnsp_auc")]].to_numpy().sum())
    assert n_flags >= 1 and sum(t.endswith("*") for t in texts) == n_flags
    assert "Holm" in fig.get_supxlabel()


def test_cli_significance(tmp_path):
    df = biased_frame()
    df.to_csv(tmp_path / "d.csv", index=False)
    proc = cli_runner.run_cli(["report", tmp_path / "d.csv", "--label", "label", "--scores",
                               "score", "--subgroups", "a", "b", "--significance", "bh", "--out",
                               tmp_path / "r.csv"])
    assert proc.returncode == 0, proc.stderr
    assert "Benjamini-Hochberg" in proc.stdout
    out = pd.read_csv(tmp_path / "r.csv")
    assert "bpsn_auc_pvalue_adjusted" in out.columns
    assert bool(out.set_index("subgroup").loc["a", "bpsn_auc_significant"])


def test_hoeffding_bound_covers_the_exact_permutation_tail():
    """Unweighted, the kernel may report Hoeffding's bound; it must lie above the exact
    permutation p-value (every subset enumerated) at every observed distance."""
    from itertools import combinations

    from fastbias.intervals import _kernels as IK
    from fastbias.sort.order import sortable_keys_in_place
    from tests.reference import pair_probability
    rng = np.random.default_rng(2)
    n_neg, n_pos, size = 14, 9, 4
    neg = np.sort(np.round(rng.normal(size=n_neg), 1))
    pos = np.sort(np.round(rng.normal(size=n_pos) + 1, 1))
    fixed = np.sort(pos[[0, 3, 5]])  # the subgroup's positives (held fixed)
    theta = pair_probability(pos, neg)
    s = np.r_[neg, pos]
    y = np.r_[np.zeros(n_neg, bool), np.ones(n_pos, bool)]
    # each negative's positives above it and own class above it (ties 1/2, itself left out)
    d_neg = kernel_matrix(pos, neg).sum(axis=0)
    neg_above = kernel_matrix(neg, neg).sum(axis=0) - 0.5
    fixed_rows = n_neg + np.array([0, 3, 5])
    distances = {j: [] for j in range(3)}
    for subset in combinations(range(n_neg), size):
        member = np.zeros(n_neg + n_pos, bool)
        member[list(subset)] = True
        member[fixed_rows] = True
        from tests.reference import brute_force_metrics
        m = brute_force_metrics(y, s, member)
        distances[0].append(abs(m["subgroup_auc"] - theta))
        distances[1].append(abs(m["bpsn_auc"] - theta))
        distances[2].append(abs(m["negative_aeg"]))
    for observed_quantile in (0.5, 0.9, 0.99, 1.0):
        observed = np.array([np.quantile(distances[j], observed_quantile) for j in range(3)])
        out = IK.permutation_exceedances(
            sortable_keys_in_place(neg.copy()), np.column_stack([d_neg, neg_above]),
            sortable_keys_in_place(fixed.copy()), np.arange(4.0),
            True, size, float(n_pos), observed, np.ones(3, bool), theta, 20, 10, 1,
            float(n_neg), float(d_neg.sum()), False)
        for j in range(3):
            exact = np.mean(np.array(distances[j]) >= observed[j] - 1e-12)
            assert out[j, 2] >= exact, (j, observed_quantile, out[j, 2], exact)


def test_strong_gaps_in_tiny_cells_use_the_bound_not_a_million_draws():
    from tests.reference import pair_probability
    rng = np.random.default_rng(4)
    n = 4000
    y = rng.random(n) < 0.4
    s = y + rng.normal(0, 1, n)
    g = np.zeros(n, bool)
    negatives = np.flatnonzero(~y)[:25]
    positives = np.flatnonzero(y)[:28]
    g[negatives] = True
    g[positives] = True
    s[negatives] += 5.0  # scored far above the other negatives
    table = fastbias.bias_metrics(y, s, {"g": g}, significance="holm")
    # negative AEG: redrawn negatives, Hoeffding's bound centred at 0 with the range (N-1)/(N-a)
    n_neg, a = int((~y).sum()), 25
    aeg = table.loc["g", "negative_aeg"]
    bound = 2 * np.exp(-2 * a * aeg ** 2 / ((n_neg - 1) / (n_neg - a)) ** 2)
    assert bound < 1e-5
    np.testing.assert_allclose(table.loc["g", "negative_aeg_pvalue"], bound, rtol=1e-9)
    # subgroup AUC (negatives are the smaller cell): centred at P(subgroup positives > negatives)
    theta = pair_probability(s[y], s[~y])
    mu = pair_probability(s[positives], s[~y])
    d = abs(table.loc["g", "subgroup_auc"] - theta) - abs(mu - theta)
    assert 2 * np.exp(-2 * a * d ** 2) < 1e-5
    np.testing.assert_allclose(table.loc["g", "subgroup_auc_pvalue"], 2 * np.exp(-2 * a * d ** 2),
                               rtol=1e-9)
    assert table.loc["g", "negative_aeg_significant"] and table.loc["g", "bpsn_auc_significant"]


def test_mid_size_cells_use_the_exact_permutation_moments():
    """Cells of 30-299 rows: the normal tails of the permutation distribution beyond the
    observed distance from the null's value (the overall AUC, an AEG of 0), its mean and
    variance computed here from per-row values by pair matrices (finite population)."""
    from tests.reference import pair_probability
    rng = np.random.default_rng(13)
    n = 1500
    y = rng.random(n) < 0.4
    s = np.round(y + rng.normal(0, 1, n), 1)
    g = np.zeros(n, bool)
    neg_rows = np.flatnonzero(~y)[:60]
    pos_rows = np.flatnonzero(y)[:90]
    g[neg_rows] = True
    g[pos_rows] = True
    s[neg_rows] += 1.0
    table = fastbias.bias_metrics(y, s, {"g": g}, significance="bh")
    assert table.attrs["permutation_tests"] == 5
    neg, pos = s[~y], s[y]
    kernel = kernel_matrix

    theta = pair_probability(pos, neg)

    def normal_p(statistic, values, size, centre=None):
        """P(|T - centre| >= |statistic - centre|), T normal with the exact permutation moments
        of the mean of ``size`` of ``values`` drawn without replacement."""
        centre = theta if centre is None else centre
        big_n = values.shape[0]
        sd = np.sqrt(values.var() / size * (big_n - size) / (big_n - 1))
        d = abs(statistic - centre)
        law = stats.norm(values.mean(), sd)
        return law.sf(centre + d) + law.cdf(centre - d)

    # negatives redrawn (60 <= 90): subgroup AUC, BPSN AUC, negative AEG
    f = kernel(s[pos_rows], neg).sum(axis=0)  # subgroup positives above each negative
    place = kernel(pos, neg).sum(axis=0)  # positives above each negative
    above = kernel(neg, neg).sum(axis=0) - 0.5  # negatives above, itself left out
    a, n_neg, n_pos = 60, neg.shape[0], pos.shape[0]
    expected = {
        "subgroup_auc": normal_p(table.loc["g", "subgroup_auc"], f / 90, a),
        "bpsn_auc": normal_p(table.loc["g", "bpsn_auc"], (place - f) / (n_pos - 90), a),
        "negative_aeg": normal_p(0.5 - table.loc["g", "negative_aeg"] + (a - 1) / (2 * (n_neg - a)),
                                 above / (n_neg - a), a, 0.5 + (a - 1) / (2 * (n_neg - a))),
    }
    # positives redrawn: BNSP AUC, positive AEG
    f = kernel(pos, s[neg_rows]).sum(axis=1)  # subgroup negatives below each positive
    place = kernel(pos, neg).sum(axis=1)
    above = kernel(pos, pos).sum(axis=0) - 0.5
    b = 90
    expected["bnsp_auc"] = normal_p(table.loc["g", "bnsp_auc"], (place - f) / (n_neg - 60), b)
    expected["positive_aeg"] = normal_p(
        0.5 - table.loc["g", "positive_aeg"] + (b - 1) / (2 * (n_pos - b)), above / (n_pos - b), b,
        0.5 + (b - 1) / (2 * (n_pos - b)))
    for metric, p in expected.items():
        np.testing.assert_allclose(table.loc["g", f"{metric}_pvalue"], p, rtol=1e-7, err_msg=metric)
    assert table.loc["g", "negative_aeg_significant"]


def test_permutation_moments_equal_enumeration():
    """The moments of the three statistics over every way to redraw the subgroup's negatives,
    against :func:`permutation_moments` fed with sums of per-row values computed here."""
    from itertools import combinations

    from fastbias.intervals.significance import permutation_moments
    from tests.reference import brute_force_metrics
    rng = np.random.default_rng(3)
    n_neg, n_pos, size = 13, 8, 4
    neg = np.sort(np.round(rng.normal(size=n_neg), 1))
    pos = np.sort(np.round(rng.normal(size=n_pos) + 0.7, 1))
    s = np.r_[neg, pos]
    y = np.r_[np.zeros(n_neg, bool), np.ones(n_pos, bool)]
    fixed_rows = n_neg + np.array([1, 2, 6])
    values = {m: [] for m in ("subgroup_auc", "bpsn_auc", "theta")}
    for subset in combinations(range(n_neg), size):
        member = np.zeros(n_neg + n_pos, bool)
        member[list(subset)] = True
        member[fixed_rows] = True
        m = brute_force_metrics(y, s, member)
        values["subgroup_auc"].append(m["subgroup_auc"])
        values["bpsn_auc"].append(m["bpsn_auc"])
        values["theta"].append(0.5 - m["negative_aeg"])
    f = kernel_matrix(s[fixed_rows], neg).sum(axis=0)  # the fixed positives above each negative
    place = kernel_matrix(pos, neg).sum(axis=0)  # all positives above each negative
    above = kernel_matrix(neg, neg).sum(axis=0) - 0.5  # negatives above, itself left out
    mv = permutation_moments(n_neg, 3, size, n_pos, f.sum(), f @ f, place @ f, place.sum(),
                             place @ place, above.sum(), above @ above)
    for j, name in enumerate(("subgroup_auc", "bpsn_auc", "theta")):
        np.testing.assert_allclose(mv[j], [np.mean(values[name]), np.var(values[name])],
                                   rtol=1e-9, atol=1e-15, err_msg=name)


def test_a_subgroup_shifted_in_both_classes_keeps_its_subgroup_auc_unflagged():
    """Both classes of 'g' scored higher: BPSN/BNSP AUC and the AEGs move, the subgroup AUC does
    not. A permutation test that holds one cell fixed must not flag the subgroup AUC for the
    other cell's shift (its statistic is the distance from the overall AUC)."""
    rng = np.random.default_rng(17)
    n = 60_000
    y = rng.random(n) < 0.3
    s = y * 1.5 + rng.normal(0, 1, n)
    g = rng.random(n) < 0.006  # about 250 negatives and 110 positives: exact-moment tests
    s[g] += 1.0
    table = fastbias.bias_metrics(y, s, {"g": g, "other": rng.random(n) < 0.3},
                                  significance="holm")
    assert 30 <= table.loc["g", "subgroup_positives"] < 300
    assert abs(table.loc["g", "subgroup_auc"] - table.attrs["overall_auc"]) < 0.03
    assert not table.loc["g", "subgroup_auc_significant"]
    assert table.loc["g", "bnsp_auc_significant"] and table.loc["g", "negative_aeg_significant"]


@pytest.mark.parametrize("cell", [12, 40, 150])
def test_a_subgroup_without_positives_is_tested_on_what_it_has(cell):
    """Its Subgroup AUC is undefined (no fixed cell to compare with), its BPSN AUC and
    Negative AEG are not: the exact-moment test divided by the empty cell's size and raised
    ZeroDivisionError from the compiled kernel."""
    rng = np.random.default_rng(4)
    n = 3_000
    y = rng.random(n) < 0.3
    s = y + rng.normal(0, 1, n)
    negatives = np.flatnonzero(~y)
    member = np.zeros(n, dtype=bool)
    member[rng.choice(negatives, cell, replace=False)] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, {"no_positives": member,
                                             "other": rng.random(n) < 0.2},
                                      significance="holm")
    row = table.loc["no_positives"]
    assert np.isnan(row["subgroup_auc"]) and np.isnan(row["subgroup_auc_pvalue"])
    assert 0 < row["bpsn_auc_pvalue"] <= 1 and 0 < row["negative_aeg_pvalue"] <= 1
    assert np.isnan(row["bnsp_auc_pvalue"]) and np.isnan(row["positive_aeg_pvalue"])


@pytest.mark.parametrize("tier", ["kernels", "numpy"])
def test_only_the_classes_a_permutation_test_redraws_keep_their_rows(tier, monkeypatch):
    """A subgroup whose positives are few (its negatives many) draws its positives alone:
    the negatives' rows, most of the data, are not made for the draws."""
    from fastbias.intervals import placement_sums as P
    from fastbias.intervals import significance as S

    kept = []
    for name in ("placement_sums", "placement_sums_in_numpy"):
        original = getattr(P, name)

        def recorded(*args, _original=original, **kwargs):
            out = _original(*args, **kwargs)
            kept.append(out[2])  # the classes, whose rows the draws make
            return out
        monkeypatch.setattr(S, name, recorded)
    monkeypatch.setattr(S, "intervals_in_numpy_now", lambda *args: tier == "numpy")
    rng = np.random.default_rng(8)
    n = 3_000
    for few in (0, 1, None):  # a subgroup with few negatives, few positives, or neither
        y = rng.random(n) < 0.3
        s = np.round(rng.random(n) + 0.3 * y, 2)
        groups = rng.random((n, 2)) < 0.3
        if few is not None:
            groups[:, 1] = False
            groups[np.flatnonzero(y == few)[:10], 1] = True
            groups[np.flatnonzero(y != few)[:600], 1] = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = fastbias.bias_metrics(y, s, groups, significance="holm")
        assert sorted(kept[-1].packed) == ([] if few is None else [few])
        assert table.attrs["permutation_tests"] >= (0 if few is None else 1)
