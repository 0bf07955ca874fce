"""An independent mutation audit's tests (2026-11-28, thirty-eighth session) of the code
a5a194a..95e9365 added or
moved: the first-call plans (CountsPlan, WeightedCountsPlan.replicate_counts and its
certification path), NumpyReplicates, keeps_numpy_plan, the figures' "absent" marks and
for_model's intersections. Each test kills a mutant that survived the existing suite
(named in its docstring), checked against an independent reference: brute-force pair counts
in fractions.Fraction, or hand counts.
"""
from fractions import Fraction

import numpy as np
import pytest

from fastbias.metrics.table import metrics_from_counts
from fastbias.prepare.memberships import prepare_subgroups
from fastbias.sweep import counts as sweep_counts
from fastbias.sweep.first_call import WeightedCountsPlan

from .test_permodel_session38_reference import _feature_frame
from .test_tier_session38_reference import brute_counts

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def exact_metrics(s, y, groups, weights):
    """The five metrics of each subgroup from brute-force pair counts in Fractions."""
    rows, tn, tp, _ = brute_counts(s, y, groups, [Fraction(w) for w in weights])
    out = []
    for r in rows:
        sn, sp = r[0], r[1]
        bn, bp = tn - sn, tp - sp

        def ratio(u, x, z):
            return float(Fraction(u) / (2 * x * z)) if x * z else float("nan")
        sub = ratio(r[2], sp, sn)
        bpsn = ratio(r[3], bp, sn)
        bnsp = ratio(r[4], sp, bn)
        neg = 0.5 - ratio(r[5], bn, sn) if bn * sn else float("nan")
        pos = 0.5 - ratio(r[6], bp, sp) if bp * sp else float("nan")
        out.append([sub, bpsn, bnsp, neg, pos])
    return np.array(out)


def uncertifiable_case():
    """One subgroup holding nearly all of each class's weight (8 a row: a weight scale of 8),
    its background a few rows of weight 2**-130: "class total minus subgroup" cannot certify
    the background, so the subgroup is counted again from its explicit cells."""
    rng = np.random.default_rng(5)
    n = 60
    y = rng.random(n) < 0.5
    s = rng.integers(0, 6, n) / 5.0
    g0 = np.ones(n, bool)
    background = rng.choice(n, 8, replace=False)
    g0[background] = False
    w = np.full(n, 8.0)
    w[background] = 2.0 ** -130  # (below the double-double sums' 106 bits of 8)
    y[background[:4]] = False
    y[background[4:]] = True
    g1 = rng.random(n) < 0.4  # an ordinary subgroup beside it
    return s, y, np.column_stack([g0, g1]), w


def spy_untrusted(monkeypatch):
    seen = []
    real = sweep_counts._untrusted_groups

    def spy(*a, **k):
        out = real(*a, **k)
        seen.append([int(g) for g in out])
        return out
    monkeypatch.setattr(sweep_counts, "_untrusted_groups", spy)
    return seen


@pytest.mark.parametrize("draws_seed", [None, 1, 2])
def test_weighted_replicate_recounted_from_explicit_cells_equals_fractions(monkeypatch, draws_seed):
    """A weighted numpy replicate whose subgroup the sums cannot certify is recounted from
    its explicit cells, weighed by the same products, scaled once. Kills: the products popped
    -> read (``products.get``: the explicit cells read products already divided by the scale,
    divided again), and the explicit cells weighed unscaled (``weights_of`` for
    ``scaled_weights``)."""
    s, y, groups, w = uncertifiable_case()
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    seen = spy_untrusted(monkeypatch)
    if draws_seed is None:
        draws = np.ones(len(y), np.uint8)
    else:
        draws = np.random.default_rng(draws_seed).integers(1, 4, len(y)).astype(np.uint8)
    got = metrics_from_counts(plan.replicate_counts(plan.weights_in_order(w), draws))
    assert 0 in seen[-1]  # (the explicit path was taken)
    want = exact_metrics(s, y, groups, [Fraction(x) * int(d) for x, d in zip(w, draws)])
    for j, metric in enumerate(METRICS):
        np.testing.assert_allclose(got[metric], want[:, j], rtol=1e-13, atol=1e-15,
                                   err_msg=metric)
    direct = metrics_from_counts(plan.counts(draws * w))
    for metric in METRICS:
        np.testing.assert_allclose(direct[metric], got[metric], rtol=1e-13, atol=1e-15)


def test_weighted_explicit_cells_weigh_in_the_input_units(monkeypatch):
    """The subgroup recounted from its explicit cells keeps the scale of the others: the
    table's weight columns (``cells * weight_scale``) equal the Fraction sums of the input
    weights. Kills: the explicit cells weighed unscaled (``weights_of`` for
    ``scaled_weights`` in ``_counts.explicit``: subgroup 0's negative weight 8x too large,
    its metrics, ratios of the same scale, unchanged)."""
    from fastbias.metrics.table import table_from_counts

    s, y, groups, w = uncertifiable_case()
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    seen = spy_untrusted(monkeypatch)
    draws = np.random.default_rng(3).integers(1, 4, len(y)).astype(np.uint8)
    for sc, mult in ((plan.counts(w), np.ones(len(y), int)),
                     (plan.replicate_counts(plan.weights_in_order(w), draws), draws)):
        assert 0 in seen[-1]
        table = table_from_counts(sc, warn=False)
        ww = [Fraction(x) * int(d) for x, d in zip(w, mult)]
        for g in range(groups.shape[1]):
            inn = groups[:, g]
            want = {"subgroup_negative_weight": sum(ww[i] for i in np.flatnonzero(inn & ~y)),
                    "subgroup_positive_weight": sum(ww[i] for i in np.flatnonzero(inn & y)),
                    "background_negative_weight": sum(ww[i] for i in np.flatnonzero(~inn & ~y)),
                    "background_positive_weight": sum(ww[i] for i in np.flatnonzero(~inn & y))}
            for column, value in want.items():
                assert table[column].iloc[g] == pytest.approx(float(value), rel=1e-12), column


def test_counts_and_plan_weighted_point_estimate_is_certified(monkeypatch):
    """``counts_and_plan(..., keep=True)`` weighted (the first call's point estimate when a
    numpy bootstrap follows) certifies its sums as ``counts_in_numpy`` does. Kills:
    ``plan.counts(sample_weight, certify=False)`` there (subgroup 0's background metrics
    BNSP AUC then read the background as "total minus subgroup": observed errors up to
    1.5e-12 in BPSN AUC and 2.4e-12 in positive AEG against the Fractions, certified 3e-17)."""
    from fastbias.sweep.first_call import counts_and_plan

    s, y, groups, w = uncertifiable_case()
    rng = np.random.default_rng(9)
    bg = ~groups[:, 0]  # full-mantissa weights in [1, 8) beside background weights < 2**-62:
    w[~bg] = 1 + rng.random(int((~bg).sum())) * 7  # "total minus subgroup" keeps ~2**-40
    w[bg] = rng.random(int(bg.sum())) * 2.0 ** -62
    m = prepare_subgroups(y, groups, compiled=False)
    sc, plan = counts_and_plan(s, m, w, keep=True)
    assert isinstance(plan, WeightedCountsPlan)
    got = metrics_from_counts(sc)
    want = exact_metrics(s, y, groups, w)
    for j, metric in enumerate(METRICS):
        np.testing.assert_allclose(got[metric], want[:, j], rtol=0, atol=1e-15,
                                   err_msg=metric)


def test_counts_in_numpy_keeps_a_given_weight_scale():
    """``counts_in_numpy(..., weight_scale=1.0)`` (the chunked sums' fixed scale) weighs the
    weights as given: ``weight_scale`` 1 and cells equal to the Fraction sums. Kills: the
    ``weight_scale`` argument ignored in ``WeightedCountsPlan.counts`` (the scale 8 of
    the largest weight, cells 8x smaller)."""
    from fastbias.sweep.first_call import counts_in_numpy

    s, y, groups, w = uncertifiable_case()
    m = prepare_subgroups(y, groups, compiled=False)
    sc = counts_in_numpy(s, m, w, weight_scale=1.0)
    assert sc.weight_scale == 1.0
    for g in range(groups.shape[1]):
        inn = groups[:, g]
        assert sc.counts[g, 0] == float(sum(Fraction(x) for x in w[inn & ~y]))
        assert sc.counts[g, 1] == float(sum(Fraction(x) for x in w[inn & y]))


def test_counts_plan_refuses_draws_of_another_length():
    """``CountsPlan.counts`` refuses draws that are not one uint8 a row, naming the shape.
    Kills: the shape check dropped (one draw too many was read as the first n, silently;
    one too few an IndexError)."""
    from fastbias.sweep.first_call import CountsPlan

    y = np.array([0, 1, 0, 1], bool)
    s = np.array([0.1, 0.9, 0.4, 0.3])
    m = prepare_subgroups(y, np.array([[1], [1], [1], [0]], bool), compiled=False)
    plan = CountsPlan(s, m)
    assert int(plan.counts().twice_overall_u) == 6  # by hand: 0.9 above both, 0.3 above 0.1
    for bad in (np.ones(5, np.uint8), np.ones(3, np.uint8), np.ones((4, 1), np.uint8)):
        with pytest.raises(ValueError, match=r"draws must be uint8 of shape \(4,\)"):
            plan.counts(bad)


def test_numpy_replicates_refuse_a_plan_of_other_memberships():
    """``NumpyReplicates(..., plan=)`` refuses a plan made for other memberships (its ranks
    and subgroups are another call's). Kills: the ``plan.m is not memberships`` check
    dropped (the replicates then counted the other memberships' subgroups, silently)."""
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.sweep.first_call import CountsPlan

    y = np.array([0, 1, 0, 1, 0, 1], bool)
    s = np.array([0.1, 0.9, 0.4, 0.3, 0.2, 0.8])
    m1 = prepare_subgroups(y, np.array([[1], [1], [1], [0], [0], [0]], bool), compiled=False)
    m2 = prepare_subgroups(y, np.array([[0], [0], [1], [1], [1], [1]], bool), compiled=False)
    with pytest.raises(ValueError, match="other memberships"):
        NumpyReplicates(s, m2, plan=CountsPlan(s, m1))
    with pytest.raises(ValueError, match="other memberships"):
        NumpyReplicates(s, m2, np.ones(6), plan=WeightedCountsPlan(s, m1))
    NumpyReplicates(s, m1, plan=CountsPlan(s, m1))  # its own: kept


def test_keeps_numpy_plan_at_the_boundary_where_replicates_stay_in_numpy(monkeypatch):
    """A point estimate keeps its numpy plan exactly when the bootstrap's replicates start
    in numpy (``replicates`` compiles at once only when the guess is ABOVE
    NUMPY_REPLICATES_SECONDS): at a guess equal to the limit both stay in numpy. Kills:
    ``<`` for ``<=`` in ``keeps_numpy_plan`` (the plan dropped at the boundary: a second
    sort of the classes)."""
    from fastbias.intervals import bootstrap

    for n_boot, n_rows, weighted in ((1000, 12_345, False), (200, 777, True)):
        guess = bootstrap.numpy_replicates_seconds(n_boot, n_rows, weighted)
        assert guess == pytest.approx(n_boot * n_rows * (1e-7 if weighted else 3e-8))
        monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", guess)
        assert bootstrap.keeps_numpy_plan("bootstrap", n_boot, n_rows, weighted)
        monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", np.nextafter(guess, 0))
        assert not bootstrap.keeps_numpy_plan("bootstrap", n_boot, n_rows, weighted)
        assert not bootstrap.keeps_numpy_plan("delong", n_boot, n_rows, weighted)


def test_report_aeg_and_auc_captions_say_what_absent_means():
    """Both heatmaps' captions (AUC and AEG) say what "absent" means when a model lacks a
    shown subgroup, and neither does when every model has every shown row. Kills: the AEG
    caption's ``{absent_note}`` dropped (its heatmap showed "absent" cells unexplained)."""
    pytest.importorskip("matplotlib")
    import warnings

    import fastbias
    from fastbias.report import BiasReport

    df = _feature_frame()
    combo = (df.race == "r1") & (df.sex == "f")
    kept = df.m1.notna()
    assert int((combo & kept & df.y).sum()) == 2  # by hand: m1 keeps 2 positives there
    assert int((combo & df.y).sum()) >= 5 and int((combo & ~df.y).sum()) >= 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=[],
                                sensitive_features=["race", "sex"], min_subgroup_size=5,
                                nan_policy="omit")
        figs = BiasReport.from_result(df, res).figures()
    cap = {k: c for k, c, _ in figs}
    assert "absent = not a subgroup of that model" in cap["aucs"]
    assert "absent = not a subgroup of that model" in cap["aegs"]
    aeg = {k: f for k, _, f in figs}["aegs"]
    assert "absent: that model has no such subgroup" in aeg.get_supxlabel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res2 = fastbias.evaluate(df, label="y", scores=["m2"], subgroups=[],
                                 sensitive_features=["race", "sex"], min_subgroup_size=5,
                                 nan_policy="omit")
        cap2 = {k: c for k, c, _ in BiasReport.from_result(df, res2).figures()}
    assert "absent" not in cap2["aucs"] and "absent" not in cap2["aegs"]
