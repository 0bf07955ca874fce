"""A mutation audit's tests (2026-11-28, forty-third session, an independent reviewer) of
fastbias/intervals/significance.py. 67 hand mutants were run against the tests that exercise
the module (the significance files, the permutation seeds, and the significance tests of
test_intervals_combinations_reference, test_never_silently_wrong and test_exact_sums): 54
killed there, 13 lived; the tests here kill all 13 (each checked to fail with its mutant):
the 300-row boundary of DeLong's tier, the 1,000-row bound of a weighted drawn test, the
subgroup AUC's redrawn cell taken as the larger, an AEG of -1/2 with no variance taken as 0,
an adjusted p-value equal to the level, undefined metrics listed as untested, the draw
budget's cap, the draws' seeds (class, weights, a weight of -0.0), the counts joined over
``missing_subgroup="exclude"``'s universes, and ``permutation_untested`` counting cells
already NaN for another reason (a count and a warning's wording). No defect was found.

Expected values come from pair matrices and exact enumeration (tests/test_significance.py's
``reference_tests``, ``exact_permutation_p``, ``holm_reference``), brute-force pair counts
(tests/reference.py), the exact permutation moments computed here, and the documented rules,
never from fastbias."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import fastbias
from fastbias.intervals import significance as S
from fastbias.metrics import METRIC_COLUMNS

from .reference import brute_force_metrics
from .test_significance import (
    exact_permutation_p,
    holm_reference,
    kernel_matrix,
    reference_tests,
)


def _moment_p_subgroup_auc_negatives(y, s, member):
    """The 30-299 tier's subgroup-AUC p-value with the negatives redrawn, by hand: per
    negative of the class, v = share of the subgroup's positives above it (ties 1/2); the
    redrawn cell's mean has mean mu and variance sigma^2/size (N-size)/(N-1) (sampling
    without replacement); p = P(|T - overall AUC| >= |observed - overall AUC|) under the
    normal law with those moments."""
    neg = ~y
    v = kernel_matrix(s[member & y], s[neg]).mean(axis=0)  # per negative of the class
    n, size = neg.sum(), (member & neg).sum()
    mu, sigma2 = v.mean(), v.var()
    var = sigma2 / size * (n - size) / (n - 1)
    overall = kernel_matrix(s[y], s[neg]).mean()
    observed = kernel_matrix(s[member & y], s[member & neg]).mean()
    d = abs(observed - overall)
    sd = math.sqrt(var)
    return stats.norm.sf((overall + d - mu) / sd) + stats.norm.cdf((overall - d - mu) / sd)


def _cells(rng, n_sub_neg, n_sub_pos, n_bg_neg, n_bg_pos, shift=0.25):
    """Scores and labels of a subgroup of the given cells beside a background (continuous
    scores; the subgroup's negatives scored ``shift`` higher)."""
    y = np.r_[np.zeros(n_sub_neg), np.ones(n_sub_pos), np.zeros(n_bg_neg),
              np.ones(n_bg_pos)].astype(bool)
    member = np.r_[np.ones(n_sub_neg + n_sub_pos), np.zeros(n_bg_neg + n_bg_pos)].astype(bool)
    s = rng.normal(size=y.size) + y + shift * (member & ~y)
    return y, np.round(s, 6), member


@pytest.mark.parametrize("n_sub_neg, tier", [(300, "delong"), (299, "moments")])
def test_the_300_row_boundary_chooses_delong_at_300_and_moments_below(n_sub_neg, tier):
    """Docs: "Both cells have at least 300 rows: DeLong's z-test"; below 300 the normal tail
    with exact permutation moments. A subgroup AUC whose smaller cell is exactly 300
    negatives must equal the DeLong pair-matrix p; at 299 the hand-computed moments p.
    Kills mutant tier_300_le (``< PERMUTATION_BELOW`` -> ``<=``)."""
    rng = np.random.default_rng(43)
    y, s, member = _cells(rng, n_sub_neg, 420, 700, 500, shift=0.15)
    table = fastbias.bias_metrics(y, s, {"g": member}, significance="holm")
    got = table.loc["g", "subgroup_auc_pvalue"]
    if tier == "delong":
        expected = reference_tests(y, s, member)["subgroup_auc"][2]
    else:
        expected = _moment_p_subgroup_auc_negatives(y, s, member)
    assert 1e-3 < expected < 0.9
    assert got == pytest.approx(expected, rel=1e-7), (got, expected)


@pytest.mark.parametrize("n_sub_neg, tier", [(30, "moments"), (29, "drawn")])
def test_the_30_row_boundary_keeps_exact_moments_at_30(n_sub_neg, tier):
    """Docs: "Smaller cell of 30-299 rows (unweighted)": the normal tail with exact moments;
    under 30 the p-value is drawn. A subgroup AUC on 30 negatives (and 40 positives) must be
    the hand-computed moments p exactly; on 29 it is a Monte Carlo estimate (not equal to it,
    but within sampling error). Kills mutant tier_30_le."""
    rng = np.random.default_rng(7)
    y, s, member = _cells(rng, n_sub_neg, 40, 400, 380, shift=0.8)
    table = fastbias.bias_metrics(y, s, {"g": member}, significance="holm")
    got = table.loc["g", "subgroup_auc_pvalue"]
    expected = _moment_p_subgroup_auc_negatives(y, s, member)
    assert 1e-3 < expected < 0.5
    if tier == "moments":
        assert got == pytest.approx(expected, rel=1e-7), (got, expected)
    else:
        assert got != pytest.approx(expected, rel=1e-7)
        assert abs(got - expected) < 0.03


@pytest.mark.parametrize("redrawn, tested", [(1000, True), (1001, False)])
def test_a_weighted_tiny_cell_beside_1000_rows_is_drawn_beside_1001_untested(redrawn, tested):
    """Docs: a cell under 30 rows is drawn "where the cell the test redraws (the subgroup's,
    in the test's class) holds at most 1,000 rows"; beside a larger one, weighted, "the test
    is not made (NaN, counted in attrs["permutation_untested"])". A subgroup of ``redrawn``
    negatives next to 12 background negatives: its negative AEG (smaller cell 12) is drawn at
    1,000 and untested at 1,001. Kills mutant tier_1000_lt (``<= 1000`` -> ``< 1000``:
    observed NaN at 1,000)."""
    rng = np.random.default_rng(5)
    y, s, member = _cells(rng, redrawn, 600, 12, 400, shift=0.0)
    w = rng.integers(1, 4, y.size).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w,
                                      significance="holm")
    p = table.loc["g", "negative_aeg_pvalue"]
    if tested:
        assert 0.0 < p <= 1.0
        assert table.attrs["permutation_untested"] == 0
    else:
        assert np.isnan(p)
        assert table.attrs["permutation_untested"] >= 1


def test_a_drawn_subgroup_auc_on_equal_cells_redraws_the_negatives():
    """Docs/docstring: the subgroup AUC's permutation test redraws "its smaller cell; the
    negatives on a tie". Subgroup of 4 positives and 4 negatives, its negatives the lowest
    scores: redrawing the negatives gives an exact p of 0.004 (enumerated over all 495
    subsets); redrawing the positives (above those negatives whichever are drawn) would give
    1. Kills mutant tier_redraw_tie (observed 1.0 against 0.004)."""
    y = np.r_[np.ones(12), np.zeros(12)].astype(bool)
    rng = np.random.default_rng(3)
    s = np.round(rng.normal(size=24) + 0.8 * y, 2)
    member = np.zeros(24, bool)
    member[[0, 1, 2, 3, 12, 13, 14, 15]] = True
    s[[12, 13, 14, 15]] = [-3.0, -2.9, -2.8, -2.7]  # the subgroup's negatives lowest
    table = fastbias.bias_metrics(y, s, {"g": member}, significance="holm")
    exact_neg = exact_permutation_p(y, s, member, None, ["subgroup_auc"], 0)["subgroup_auc"]
    exact_pos = exact_permutation_p(y, s, member, None, ["subgroup_auc"], 1)["subgroup_auc"]
    assert exact_neg < 0.1 and exact_pos > 0.5
    got = table.loc["g", "subgroup_auc_pvalue"]
    assert abs(got - exact_neg) < 0.05, (got, exact_neg, exact_pos)


def test_a_sequential_stop_is_20_over_the_draws():
    """Docs: draws stop once 20 were at least as far from the null as observed (Besag &
    Clifford), ``p = 20 / draws``. Tiny subgroups with no gap stop early, so each drawn
    p-value is 20 over a whole number of draws. Kills mutants dr_seq_p
    (``(hits + 1) / (draws + 1)``) and dr_hits_strict (stopping at 21 hits)."""
    rng = np.random.default_rng(11)
    n = 400
    y = rng.random(n) < 0.5
    s = np.round(rng.normal(size=n) + y, 3)
    groups = {f"g{j}": rng.random(n) < 0.04 for j in range(8)}
    table = fastbias.bias_metrics(y, s, groups, significance="holm")
    p = table[[f"{m}_pvalue" for m in METRIC_COLUMNS]].to_numpy().ravel()
    stopped = p[np.isfinite(p) & (p > 0.01)]
    assert stopped.size >= 20
    draws = 20.0 / stopped
    np.testing.assert_allclose(draws, np.round(draws), rtol=0, atol=1e-6)


def test_an_adjusted_pvalue_equal_to_the_level_is_significant():
    """Docs: "a test is significant where its adjusted p-value is at most" ``1 -
    confidence``; the level of confidence 0.9 is 0.1 (``1 - 0.9`` is 0.09999999999999998 in
    doubles). Holm of five p-values whose smallest is 0.02 gives exactly 0.1 (5 x 0.02), so it
    is significant at confidence 0.9. Kills mutants at_strict_alpha (``<`` alpha) and
    at_alpha_rounding (unrounded 0.0999...: observed False, expected True)."""
    assert 5 * 0.02 == 0.1
    values = {m: [0.6] for m in METRIC_COLUMNS}
    pvalues = {f"{m}_pvalue": [p] for m, p in zip(METRIC_COLUMNS, [0.02, 0.5, 0.6, 0.7, 0.8])}
    table = pd.DataFrame({**values, **pvalues}, index=["g"])
    out = S.adjust_table(table, method="holm", confidence=0.9)
    assert out.loc["g", "subgroup_auc_pvalue_adjusted"] == 0.1
    assert bool(out.loc["g", "subgroup_auc_significant"])
    assert out.attrs["significance_level"] == 0.1
    assert out.attrs["n_tests"] == 5


def test_the_family_is_every_subgroup_and_metric_not_each_metric_alone():
    """Docs: "The adjustment is over all subgroups x metrics of one model". Two subgroups,
    ten raw p-values (one NaN: left out): Holm by hand over the nine. Pins mutant
    at_per_metric_family (a family per metric)."""
    raw = np.array([[0.001, 0.2, 0.03, 0.04, np.nan], [0.01, 0.5, 0.02, 0.9, 0.004]])
    table = pd.DataFrame({**{m: [0.6, 0.6] for m in METRIC_COLUMNS},
                          **{f"{m}_pvalue": raw[:, j] for j, m in enumerate(METRIC_COLUMNS)}},
                         index=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = S.adjust_table(table, method="holm")
    flat = raw.ravel()
    ok = np.isfinite(flat)
    expected = np.full(flat.shape, np.nan)
    expected[ok] = holm_reference(flat[ok])
    got = out[[f"{m}_pvalue_adjusted" for m in METRIC_COLUMNS]].to_numpy().ravel()
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert out.attrs["n_tests"] == 9


def test_permutation_draws_follow_the_documented_budget():
    """Docs: ``max(10,000, tests / level)`` draws, at most 100,000. Kills mutants
    pd_max_small (cap 10,000) and pd_min_small (floor 1,000)."""
    assert S.permutation_draws(5, 0.05) == 10_000
    assert S.permutation_draws(1, 0.5) == 10_000
    assert S.permutation_draws(1_000, 0.05) == 20_000
    assert S.permutation_draws(4_999, 0.05) == 99_980
    assert S.permutation_draws(10**6, 0.05) == 100_000


def test_joined_universes_keep_equal_nan_attrs_and_add_counts():
    """joined_universes: attrs equal in every table are kept, NaN counting as equal; the
    counts are added up. Kills mutants ju_nan_same and ju_first_only."""
    a = pd.DataFrame({"x": [1.0]}, index=["a"])
    b = pd.DataFrame({"x": [2.0]}, index=["b"])
    a.attrs = {"overall_auc": float("nan"), "method": "holm", "permutation_tests": 3,
               "other": 1}
    b.attrs = {"overall_auc": float("nan"), "method": "holm", "permutation_tests": 4,
               "permutation_bounds": 2, "other": 2}
    out = S.joined_universes([a, b])
    assert math.isnan(out.attrs["overall_auc"]) and out.attrs["method"] == "holm"
    assert "other" not in out.attrs
    assert out.attrs["permutation_tests"] == 7 and out.attrs["permutation_bounds"] == 2


def test_normal_exceedance_with_no_variance():
    """A permutation law of variance 0 sits at its mean: p = 1 where the mean is at least as
    far from the null as observed (observed = the mean), 0 where the observation is
    farther. Pins mutant ne_var0_strict."""
    got = S._normal_exceedance([0.7, 0.9, 0.7], [0.5, 0.5, 0.5], [0.7, 0.7, 0.6],
                               [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(got, [1.0, 0.0, 0.0])


def test_draw_seed_mixes_class_keys_and_weights_with_negative_zero_as_zero():
    """Docs: the draws are seeded by "PERMUTATION_SEED mixed with the redrawn cell's scores
    and weights"; a weight of -0.0 is 0. Kills mutants ds_negzero and ds_no_label."""
    keys = np.array([3, 9, 12], dtype=np.uint64)
    w = np.array([1.0, 0.0, 2.0])
    assert S.draw_seed(0, keys, w) == S.draw_seed(0, keys, np.array([1.0, -0.0, 2.0]))
    assert S.draw_seed(0, keys, w) != S.draw_seed(0, keys, 2 * w)
    assert S.draw_seed(0, keys, w) != S.draw_seed(1, keys, w)
    assert 0 <= S.draw_seed(1, keys, None) < 2 ** 63


def test_drawn_weighted_tests_are_seeded_by_the_cells_weights(monkeypatch):
    """Docs: a weighted drawn test is seeded by its redrawn cell's scores *and weights*
    (rows tied in score in weight order). The seed the draws receive is recorded: it must
    be ``draw_seed`` of the subgroup's negatives' weights in score order. Kills mutant
    dr_seed_noweights (observed weights None)."""
    seen = []
    real = S.draw_seed

    def record(label, keys, weights):
        seen.append((label, None if weights is None else np.array(weights)))
        return real(label, keys, weights)

    monkeypatch.setattr(S, "draw_seed", record)
    y = np.r_[np.zeros(10), np.ones(10)].astype(bool)
    s = np.arange(20, dtype=float) / 20 + y
    member = np.zeros(20, bool)
    member[[1, 4, 7, 12, 15]] = True
    w = np.arange(1, 21, dtype=float)
    fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w, significance="holm")
    by_label = dict(seen)
    np.testing.assert_array_equal(by_label[0], w[[1, 4, 7]])
    np.testing.assert_array_equal(by_label[1], w[[12, 15]])


def test_a_weighted_subgroup_auc_redraws_its_small_cell_beside_many_positives():
    """Docs: the subgroup AUC's test redraws its smaller cell ("subgroup AUC when they are
    the smaller cell"); that cell (10 negatives) is under 1,000 rows, so the test is drawn
    even though the subgroup holds 1,100 positives. Weighted: the p-value is finite and
    nothing is counted untested. Kills mutant tier_sub_max (the larger cell taken as the one
    redrawn: NaN, "permutation_untested" 1)."""
    rng = np.random.default_rng(8)
    y, s, member = _cells(rng, 10, 1100, 400, 300, shift=0.0)
    w = rng.integers(1, 4, y.size).astype(float)
    table = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w, significance="holm")
    p = table.loc["g", "subgroup_auc_pvalue"]
    assert 0.0 < p <= 1.0
    assert table.attrs["permutation_untested"] == 0


def test_an_aeg_of_minus_a_half_with_no_variance_is_a_gap():
    """Docs: "an AEG whose standard error is 0 is -1/2, 0 or 1/2 (each sample's placements
    all equal), so one within 1/4 of 0 is taken as 0 (p = 1)" - one of -1/2 is not. 300
    subgroup negatives all at 0.1, 300 background negatives all at 0.9: the negative AEG is
    exactly -1/2 (pair count), DeLong's variance 0, so p = 0 (the reference's z-test with se 0
    and a non-zero gap). Kills mutant flat_aeg_half (p = 1)."""
    rng = np.random.default_rng(2)
    y = np.r_[np.zeros(600), np.ones(700)].astype(bool)
    member = np.r_[np.ones(300), np.zeros(300), rng.random(700) < 0.5].astype(bool)
    s = np.r_[np.full(300, 0.1), np.full(300, 0.9), np.round(rng.random(700), 3)]
    assert brute_force_metrics(y, s, member)["negative_aeg"] == -0.5
    table = fastbias.bias_metrics(y, s, {"g": member}, significance="holm")
    assert table.loc["g", "negative_aeg"] == -0.5
    assert table.loc["g", "negative_aeg_pvalue"] == 0.0
    assert bool(table.loc["g", "negative_aeg_significant"])


def test_an_undefined_metric_is_not_reported_as_untested_for_significance():
    """adjust_table's docstring: the one warning "lists the defined metrics not tested". A
    subgroup without positives (its subgroup AUC, BNSP AUC and positive AEG undefined) whose
    two other metrics are tested gives no "not tested for significance" warning. Kills
    mutant at_untested_lists_undefined (observed a warning naming "g: subgroup_auc")."""
    rng = np.random.default_rng(4)
    n = 1200
    y = rng.random(n) < 0.5
    s = np.round(rng.normal(size=n) + y, 3)
    member = ~y & (rng.random(n) < 0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.bias_metrics(y, s, {"g": member}, significance="holm")
    assert np.isnan(table.loc["g", "subgroup_auc"])
    assert np.isfinite(table.loc["g", ["bpsn_auc_pvalue", "negative_aeg_pvalue"]]).all()
    assert not [w for w in caught if "not tested for significance" in str(w.message)]
    assert table.attrs["n_tests"] == 2


def test_exclude_counts_the_permutation_tests_of_every_universe():
    """With missing_subgroup="exclude" each subgroup is tested in its own universe (the rows
    annotated for it); ``attrs["permutation_tests"]`` counts the permutation p-values of the
    whole table (docs: "attrs ... permutation_tests"). Two identities unannotated on
    different rows, each with cells of 5-10 rows: all 10 tests are permutation tests. Kills
    mutant ju_first_only (observed 5: the first universe's count)."""
    rng = np.random.default_rng(12)
    n = 400
    y = rng.random(n) < 0.5
    df = pd.DataFrame({"label": y.astype(float),
                       "score": np.round(rng.normal(size=n) + y, 3)})
    for j, name in enumerate(["a", "b"]):
        col = np.zeros(n)
        col[np.flatnonzero(y)[10 * j:10 * j + 7]] = 1.0
        col[np.flatnonzero(~y)[10 * j:10 * j + 6]] = 1.0
        col[300 + 40 * j:330 + 40 * j] = np.nan  # unannotated, on different rows
        df[name] = col
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="label", scores="score", subgroups=["a", "b"],
                                missing_subgroup="exclude", significance="holm")
    table = res.for_model()
    p = table[[f"{m}_pvalue" for m in METRIC_COLUMNS]].to_numpy()
    assert np.isfinite(p).all()
    assert table.attrs["permutation_tests"] == 10


def test_a_cell_without_a_variance_is_not_counted_as_a_weighted_cell_left_untested():
    """The docs count in ``attrs["permutation_untested"]`` the tests not made because a
    weighted cell of fewer than 30 rows sits beside a cell too large to redraw; a metric whose
    p-value is NaN for another reason is not one of them. 12 background negatives of weight
    0.05 each (total 0.6: DeLong's variance undefined, which the one warning says) beside
    1,100 subgroup negatives: the negative AEG is untested for its variance alone, so the
    count is 0 and the warning names only that cause. Kills mutant tier_untested_count
    (observed 1, and the warning adding "1 in a weighted cell of fewer than 30 rows")."""
    rng = np.random.default_rng(5)
    y, s, member = _cells(rng, 1100, 600, 12, 400, shift=0.0)
    w = rng.integers(1, 4, y.size).astype(float)
    w[(~member) & (~y)] = 0.05
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = fastbias.bias_metrics(y, s, {"g": member}, sample_weight=w,
                                      significance="holm")
    assert np.isnan(table.loc["g", "negative_aeg_pvalue"])
    assert table.attrs["permutation_untested"] == 0
    untested = [str(c.message) for c in caught if "not tested for significance" in str(c.message)]
    assert len(untested) == 1
    assert "total weight at most 1" in untested[0] and "fewer than" not in untested[0]
