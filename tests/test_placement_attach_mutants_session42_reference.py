"""A mutation audit of the significance tests' placement sums and the intervals' attach layer
(fastbias/intervals/placement_sums.py, fastbias/intervals/attach.py): an independent review's
tests (2026-11-28, forty-second session), against independent references (DeLong placements in
fractions, scipy's normal quantile, pair counts by hand). Of 59 hand mutants, 54 were run
against the significance and interval tests of the suite (the slowest left out): 31 killed, 1
equivalent (the Bernstein overall interval's two sizes swapped: only the smaller counts); these
tests kill 11 of the 22 others (weighted ties drawn in an order of their own, a join counted
as its largest chunk, out-of-core sums never or wrongly exact, the ``confidence`` attribute
stuck at 0.95, bootstrap warnings for cells that no replicate left undefined). The rest
survive without a witness found in the time (spans of empty cells, bounds of the exact join,
flat parts out of core, the bootstrap's bookkeeping of the final metric). No defect was found."""
import math
import warnings
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.stats import norm

import fastbias

from ._paired_ref import delong_parts

CELLS = {"subgroup_auc": ((1, 1), (1, 0)), "bpsn_auc": ((0, 1), (1, 0)),
         "bnsp_auc": ((1, 1), (0, 0)), "negative_aeg": ((0, 0), (1, 0)),
         "positive_aeg": ((0, 1), (1, 1))}
RANGE = {m: ((-0.5, 0.5) if m.endswith("aeg") else (0.0, 1.0)) for m in CELLS}


def _data(seed=3, n=60, weighted=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.45
    # scores near the ends, so that some intervals are clipped; heavy ties
    s = np.round(np.clip(y * 0.6 + rng.normal(0.2, 0.25, n), 0, 1) * 8) / 8
    g = rng.random(n) < 0.4
    w = rng.integers(1, 4, n).astype(float) if weighted else None
    return y, s, g, w


def _delong_reference(y, s, g, w, confidence):
    """metric -> (estimate, se, low, high) from DeLong's placements in fractions."""
    n = len(y)
    ww = [F(1)] * n if w is None else [F(v) for v in w]
    z = norm.ppf(1 - (1 - confidence) / 2)
    out = {}

    def cell(member, label):
        return [i for i in range(n) if bool(g[i]) == bool(member) and bool(y[i]) == bool(label)]

    samples = {m: (cell(*x), cell(*yy)) for m, (x, yy) in CELLS.items()}
    samples["overall"] = ([i for i in range(n) if y[i]], [i for i in range(n) if not y[i]])
    for m, (xr, yr) in samples.items():
        xs, ys = [F(s[i]) for i in xr], [F(s[i]) for i in yr]
        p = delong_parts(xs, xs, [ww[i] for i in xr], ys, ys, [ww[i] for i in yr])
        theta = float(p["theta_a"])  # an AEG is 1/2 less its X-above-Y AUC
        est = 0.5 - theta if m.endswith("aeg") else theta
        se = math.sqrt(p["var_a"])
        lo, hi = RANGE.get(m, (0.0, 1.0))
        out[m] = (est, se, min(max(est - z * se, lo), hi), min(max(est + z * se, lo), hi))
    return out


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("confidence", [0.8, 0.99])
def test_delong_columns_equal_fraction_placements(weighted, confidence):
    """Each metric's _low/_high/_se (AEGs clipped to [-1/2, 1/2], AUCs to [0, 1]), the overall
    AUC's attrs and ``confidence``, against DeLong's placements in fractions and scipy's z
    (kills mutant 44, confidence attr default; also 41, 42)."""
    y, s, g, w = _data(weighted=weighted)
    t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong",
                              confidence=confidence)
    ref = _delong_reference(y, s, g, w, confidence)
    assert t.attrs["ci_method"] == "delong"
    assert t.attrs["confidence"] == confidence
    for m in CELLS:
        est, se, lo, hi = ref[m]
        got = t.loc["g", [m, f"{m}_se", f"{m}_low", f"{m}_high"]].to_numpy(dtype=float)
        np.testing.assert_allclose(got, [est, se, lo, hi], rtol=1e-9, atol=1e-12, err_msg=m)
    est, se, lo, hi = ref["overall"]
    np.testing.assert_allclose([t.attrs["overall_auc_se"], t.attrs["overall_auc_low"],
                                t.attrs["overall_auc_high"]], [se, lo, hi], rtol=1e-9)


def test_delong_aeg_interval_below_zero_is_kept():
    """An AEG far below 0: its interval must reach below 0 (range [-1/2, 1/2]); kills the
    mutant that clips every metric to [0, 1]."""
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1], bool)
    s = np.array([.9, .8, .85, .7, .95, .6, .9, .8, .1, .2, .15, .3, .4, .5, .45, .35])
    g = np.array([0] * 8 + [1] * 8, bool)
    t = fastbias.bias_metrics(y, s, {"g": g}, ci="delong")
    ref = _delong_reference(y, s, g, None, 0.95)
    est, se, lo, hi = ref["negative_aeg"]
    assert est < 0 and lo < 0
    np.testing.assert_allclose(t.loc["g", ["negative_aeg_low", "negative_aeg_high"]]
                               .to_numpy(dtype=float), [lo, hi], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("variance", ["bound", "adaptive"])
def test_bernstein_columns_map_cells_and_aegs(variance):
    """ci="bernstein": each metric's interval is ustatistic_bernstein_interval of its own
    cells' row counts (X above, Y below), an AEG's that of its AUC (1/2 - AEG) mapped back
    by 1/2 - bound; the overall AUC's of the positives against the negatives (kills: AEG low/high
    swapped, AEG transform sign, background negatives' size from the positives)."""
    y, s, g, _ = _data(seed=8, n=70)
    conf = 0.9
    from fastbias.intervals import add_intervals
    t = add_intervals(fastbias.bias_metrics(y, s, {"g": g}), y, s, {"g": g},
                      method="bernstein", confidence=conf, bernstein_variance=variance)
    size = {(m, l): int(np.sum((g == bool(m)) & (y == bool(l)))) for m in (0, 1) for l in (0, 1)}
    for metric, (x, yy) in CELLS.items():
        est = t.loc["g", metric]
        auc = 0.5 - est if metric.endswith("aeg") else est
        lo, hi = fastbias.ustatistic_bernstein_interval(auc, size[x], size[yy],
                                                         confidence=conf, variance=variance)
        if metric.endswith("aeg"):
            lo, hi = 0.5 - hi, 0.5 - lo
        np.testing.assert_allclose([t.loc["g", f"{metric}_low"], t.loc["g", f"{metric}_high"]],
                                   [lo, hi], rtol=1e-12, atol=1e-12, err_msg=metric)
        assert t.loc["g", f"{metric}_low"] <= est <= t.loc["g", f"{metric}_high"]
    lo, hi = fastbias.ustatistic_bernstein_interval(t.attrs["overall_auc"], int(y.sum()),
                                                     int((~y).sum()), confidence=conf,
                                                     variance=variance)
    np.testing.assert_allclose([t.attrs["overall_auc_low"], t.attrs["overall_auc_high"]],
                               [lo, hi], rtol=1e-12)
    assert t.attrs["confidence"] == conf


# ---- out of core: the exact join of the chunks' sums ----------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_joined_exact_sums_equal_pair_counts(weighted):
    """Out of core, ``PlacementSums.exact`` (the chunks' sums joined in whole numbers) gives
    every DeLong, cross and overall sum exactly as counted over pairs (dyadic scores and
    weights: the pair counts in doubles are exact). Kills: unweighted never exact (mutant 25),
    the join's unit off by one bit (37)."""
    from .test_significance_out_of_core import brute_sums, chunk_sums_of, random_rows

    rng = np.random.default_rng(21)
    for _ in range(4):
        n = int(rng.integers(30, 90))
        levels = int(rng.integers(3, 7))
        y, s, w, groups = random_rows(rng, n, weighted, levels)
        cuts = rng.choice(np.arange(levels + 1), size=int(rng.integers(1, levels)),
                          replace=False)
        sums = chunk_sums_of(y, s, w, groups, cuts)
        assert sums.exact is not None, "no exact sums out of core"
        exact = sums.exact()
        assert exact is not None
        for g, member in enumerate(groups):
            ref = brute_sums(y, s, member, w)
            want = ([ref[f"{name}{j}"] for name in ("u", "sqx", "sqy") for j in range(5)])
            assert [F(v) for v in want] == list(exact.delong(g)), g
            assert [F(v) for v in ref["cross"]] == list(exact.cross(g)), g
            assert [F(v) for v in ref["overall"]] == list(exact.overall(g)), g


def test_joins_count_every_chunk():
    """``joins`` is at most how many pieces a subgroup's sums were added up in: two chunks
    joined are at least two pieces (kills mutant 20: joins taken as the largest chunk's alone)."""
    from fastbias.intervals.placement_sums import (
        combine_placement_sums,
        tied_placement_sums,
    )

    parts = [tied_placement_sums(np.array([[1.0, 2.0, 1.0, 0.0]]), [[1, 2]], [[2, 2]]),
             tied_placement_sums(np.array([[2.0, 1.0, 0.0, 1.0]]), [[2, 1]], [[2, 2]])]
    joined = combine_placement_sums(parts)
    assert joined.joins >= 2 + sum(p.joins for p in parts) - 1
    assert joined.joins >= len(parts)


@pytest.mark.parametrize("ties", ["many", "one pair"])
def test_weighted_drawn_pvalues_do_not_depend_on_row_order(ties):
    """docs/significance.md: drawn permutation p-values are the same "in whichever order the
    rows come (weighted rows tied in score are drawn in one order, by weight)". Weighted rows
    in a few tied scores, every weight distinct within a tie, small subgroup cells (drawn
    tests), shuffled several times (kills mutants 5, 8, 9: tied_rows missing the first row of a
    tie, a tie of two rows left unsorted, tied rows not ordered by weight)."""
    rng = np.random.default_rng(4)
    n = 80
    y = rng.random(n) < 0.5
    s = rng.integers(0, 4, n) / 4.0
    if ties == "one pair":  # each class: distinct scores but for one tied pair (kills: a
        s = np.arange(n) / 128.0  # tie of two rows left unsorted)
        for label in (0, 1):
            i, j = np.flatnonzero(y == label)[[3, 7]]
            s[j] = s[i]
    w = rng.permutation(np.arange(1, n + 1)) / 8.0  # distinct dyadic weights
    g = np.zeros(n, bool)
    g[rng.choice(n, 14, replace=False)] = True
    cols = [f"{m}_pvalue" for m in CELLS]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w,
                                     significance="holm")[cols].to_numpy(dtype=float)
        assert np.isfinite(base).any()
        for _ in range(4):
            p = rng.permutation(n)
            got = fastbias.bias_metrics(y[p], s[p], {"g": g[p]}, sample_weight=w[p],
                                        significance="holm")[cols].to_numpy(dtype=float)
            np.testing.assert_array_equal(got, base)


def test_bootstrap_warns_only_of_cells_emptied_in_replicates():
    """ci="bootstrap": the "undefined in some bootstrap replicates" warning names only
    metrics defined in the table and undefined in some replicates. Well-filled cells (>= 20
    rows each: a replicate empties one with chance e**-20) and a subgroup with no positives
    (its metrics NaN already, said by their own warning): no replicate warning at all
    (kills mutants 45: every defined cell warned with count 0; 46: NaN cells warned)."""
    rng = np.random.default_rng(2)
    n = 200
    y = np.arange(n) % 2 == 0
    s = y * 0.3 + rng.random(n)
    big = np.arange(n) % 4 < 2
    oneclass = (np.arange(n) % 2 == 1) & (np.arange(n) < 40)  # negatives only
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = fastbias.bias_metrics(y, s, {"big": big, "oneclass": oneclass}, ci="bootstrap",
                                  n_boot=200, random_state=0)
    assert np.isnan(t.loc["oneclass", "subgroup_auc"])
    assert np.isfinite(t.loc["big", ["subgroup_auc_low", "subgroup_auc_high"]].astype(float)).all()
    replicate = [str(w.message) for w in caught if "bootstrap replicates" in str(w.message)]
    assert replicate == [], replicate
