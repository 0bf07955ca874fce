"""The exact walk sums (fastbias.intervals.exact_sums) against brute force and exact rationals.

Unweighted, the DeLong walks can keep each sum's rounding beside it, which makes the sums
exact; the standard errors and the significance tests that the float sums cannot tell from
their rounding are then worked out from those. Every expected value here comes from pair
counts in Python integers or from exact rational arithmetic, never from fastbias.
"""
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.intervals import delong, significance
from fastbias.intervals.exact_sums import EXACT_MAX_ROWS, exact_sums_of
from fastbias.prepare.memberships import prepare_memberships_dense
from fastbias.sort.order import SortedScores
from fastbias.sweep.walk import member_walk
from tests.test_never_silently_wrong import _exact_test_z, _metric_cells, quietly

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def _twice_placements(at, others):
    """Twice the placement of each score of ``at`` among ``others``: the others below it, each
    counting 2, plus those tied, each counting 1 (Python integers)."""
    others = np.sort(others)
    lt = np.searchsorted(others, at, side="left")
    le = np.searchsorted(others, at, side="right")
    return [int(a) + int(b) for a, b in zip(lt, le)]


def _brute_sums(s, y, member):
    """(the 15 DeLong sums per metric, the overall AUC's 3, the 8 cross sums) of one
    subgroup, as Fractions, from twice-placements in Python integers."""
    cells = _metric_cells(y, member)
    delong_sums = [None] * 15
    for j, metric in enumerate(METRICS):
        above, below = cells[metric]
        px = _twice_placements(s[above], s[below])  # Y below each X row
        qy = [2 * int(above.sum()) - v for v in _twice_placements(s[below], s[above])]
        delong_sums[j] = Fraction(sum(px), 2)
        delong_sums[5 + j] = Fraction(sum(v * v for v in px), 4)
        delong_sums[10 + j] = Fraction(sum(v * v for v in qy), 4)
    pos, neg = s[y], s[~y]
    c_pos = _twice_placements(pos, neg)
    d_neg = [2 * len(pos) - v for v in _twice_placements(neg, pos)]
    overall = (Fraction(sum(c_pos), 2), Fraction(sum(v * v for v in c_pos), 4),
               Fraction(sum(v * v for v in d_neg), 4))

    def c_terms(rows):  # (c_g, c_O) of positives ``rows``: the subgroup's negatives below, all
        return (_twice_placements(s[rows], s[member & ~y]),
                _twice_placements(s[rows], neg))

    def d_terms(rows):  # (d_g, d_O) of negatives ``rows``: the subgroup's positives above, all
        n_sub, n_pos = int((member & y).sum()), len(pos)
        return ([2 * n_sub - v for v in _twice_placements(s[rows], s[member & y])],
                [2 * n_pos - v for v in _twice_placements(s[rows], pos)])

    def total(values, scale):
        return Fraction(sum(values), scale)

    cg, co = c_terms(member & y)
    dg, do = d_terms(member & ~y)
    all_dg, all_do = d_terms(~y)  # (every negative, every positive: the table's D-, D+)
    all_cg, all_co = c_terms(y)
    cross = [total([a * b for a, b in zip(cg, co)], 4), total(co, 2),
             total([(b - a) * b for a, b in zip(cg, co)], 4),
             total([a * b for a, b in zip(all_dg, all_do)], 4),
             total([a * b for a, b in zip(dg, do)], 4), total(do, 2),
             total([(b - a) * b for a, b in zip(dg, do)], 4),
             total([a * b for a, b in zip(all_cg, all_co)], 4)]
    return delong_sums, overall, cross


def _data(seed, n, levels):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < rng.uniform(0.2, 0.8)
    y[:2] = [True, False]
    s = (rng.integers(0, levels, n) / max(levels - 1, 1) + 0.3 * y).astype(np.float64)
    groups = np.column_stack([rng.random(n) < 0.3, rng.random(n) < 0.03,
                              np.ones(n, bool), rng.random(n) < 0.9, ~y])
    return s, y, groups


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed, levels", [(0, 2), (1, 5), (2, 40), (3, 1000)])
def test_exact_walk_sums_are_the_brute_force_sums(seed, levels, dtype):
    """Heavy ties (2 levels) to none, a subgroup of every row, one of every negative, one of
    a few rows: every sum of the exact walks, the 15 DeLong sums per subgroup (background
    ones a class's less the subgroup's), the overall AUC's 3 and the 8 cross sums, is the
    brute-force pair count's."""
    s, y, groups = _data(seed, 300, levels)
    s = s.astype(dtype)
    names = [f"g{j}" for j in range(groups.shape[1])]
    m = prepare_memberships_dense(y, groups, names)
    exact = exact_sums_of(member_walk(SortedScores(s, m)), len(y))
    for g in range(groups.shape[1]):
        sums, overall, cross = _brute_sums(s.astype(np.float64), y, groups[:, g])
        assert exact.delong(g) == sums, names[g]
        assert exact.cross(g) == cross, names[g]
    assert exact.overall() == overall


def test_exact_sums_are_only_made_where_they_are_exact():
    """Weighted placements are prefix sums of floats, and beyond EXACT_MAX_ROWS a term may
    round: no exact sums then (None), whatever the data."""
    s, y, groups = _data(4, 200, 7)
    m = prepare_memberships_dense(y, groups, [f"g{j}" for j in range(groups.shape[1])])
    sorts = SortedScores(s, m)
    assert exact_sums_of(member_walk(sorts), len(y)) is not None
    assert exact_sums_of(member_walk(sorts, np.ones(len(y))), len(y)) is None
    assert exact_sums_of(member_walk(sorts), EXACT_MAX_ROWS + 1) is None


@pytest.fixture
def exact_path_only(monkeypatch):
    """Every variance whose float sums carry any rounding is taken as unknown (a tolerance of
    0), and the recheck from the cells' own rows fails the test: what comes out is from the
    float path's exact cases or from the exact sums."""
    def no_recheck(*args, **kwargs):
        raise AssertionError("recomputed from the rows")

    for module in (delong, significance):
        monkeypatch.setattr(module, "RECHECK_TOLERANCE", 0.0)
        monkeypatch.setattr(module, "direct_variances", no_recheck)
    monkeypatch.setattr(delong, "direct_overall_variance", no_recheck)
    # (DeLong's test for every cell, so that every p-value reads the variance of a difference)
    monkeypatch.setattr(significance, "PERMUTATION_BELOW", 0)
    monkeypatch.setattr(significance, "PERMUTATION_DRAWS_BELOW", 0)


def _z_of(p):
    """|z| of a two-sided p-value (from its lower tail: small p keep their digits)."""
    return -NormalDist().inv_cdf(p / 2.0) if p < 1.0 else 0.0


@pytest.mark.parametrize("seed, levels, missing", [(5, 3, False), (6, 12, True),
                                                    (7, 1000, False)])
def test_standard_errors_and_tests_from_exact_sums_are_exact(exact_path_only, seed, levels,
                                                             missing):
    """With every float variance in doubt, the standard errors and the DeLong tests of every
    metric (AUC metrics against the AUC of all rows, or of the rows annotated for the
    subgroup under ``missing_subgroup="exclude"``) come from the exact sums alone: each
    standard error within 1e-14 of exact rational arithmetic, each z within 1e-9."""
    s, y, groups = _data(seed, 160, levels)
    groups = groups[:, [0, 2, 3]]
    subgroups = {f"g{j}": groups[:, j].astype(float) for j in range(groups.shape[1])}
    universe = {name: np.ones(len(y), bool) for name in subgroups}
    if missing:  # a few unannotated rows in one subgroup: its own universe
        rng = np.random.default_rng(seed)
        unknown = rng.random(len(y)) < 0.1
        unknown[:2] = False
        subgroups["g0"][unknown] = np.nan
        universe["g0"] = ~unknown
    frame = pd.DataFrame({"y": y, "s": s, **subgroups})
    table = quietly(fastbias.evaluate, frame, label="y", scores="s", subgroups=list(subgroups),
                    ci="delong", significance="holm",
                    missing_subgroup="exclude" if missing else "background").for_model()
    for name, column in subgroups.items():
        rows = universe[name]
        member = np.nan_to_num(column)[rows] > 0.5
        for metric in METRICS:
            above, below = _metric_cells(y[rows], member)[metric]
            got, p = table.loc[name, f"{metric}_se"], table.loc[name, f"{metric}_pvalue"]
            if min(above.sum(), below.sum()) < 2:  # (no variance: a sample of one row or none)
                assert np.isnan(got) and np.isnan(p), (name, metric)
                continue
            exact_se = float(_exact_variance(s[rows], above, below)) ** 0.5
            assert abs(got - exact_se) <= 1e-14 * exact_se, (name, metric)
            try:
                z = _exact_test_z(s[rows], np.ones(rows.sum()), y[rows], member, metric)
            except InvalidOperation:  # 0 / 0: the AUC of all rows itself, p = 1
                z = 0.0
            assert abs(_z_of(p) - z) <= 1e-9 * max(z, 1.0), (name, metric, p, z)


def _exact_variance(s, above, below):
    """DeLong's variance of P(s[above] > s[below]), ties 1/2, unweighted, in exact rationals
    from each row's placement."""
    x, y = s[above], s[below]
    px = [Fraction(v, 2 * len(y)) for v in _twice_placements(x, y)]
    qy = [Fraction(2 * len(x) - v, 2 * len(x)) for v in _twice_placements(y, x)]
    theta = sum(px) / len(x)
    s10 = sum((v - theta) ** 2 for v in px) / (len(x) - 1)
    s01 = sum((v - theta) ** 2 for v in qy) / (len(y) - 1)
    return s10 / len(x) + s01 / len(y)


def _exact_difference_z_by_score(s, y, member, metric):
    """|z| of the DeLong test of an AUC metric against the AUC of all rows, unweighted, in
    exact rationals (60 digits where a square root enters) over groups of rows that share a
    score, a class and the metric's cells: their psi (see
    ``tests.test_never_silently_wrong._exact_test_z``) are the same."""
    above, below = _metric_cells(y, member)[metric]

    def estimate(x_rows, y_rows):
        """theta, and per row group (score, in X) -> V - theta, with W (W - 1) of X and Y."""
        x, yy = s[x_rows], s[y_rows]
        ux, cx = np.unique(x, return_counts=True)
        uy, cy = np.unique(yy, return_counts=True)
        px = [Fraction(v, 2 * len(yy)) for v in _twice_placements(ux, yy)]
        qy = [Fraction(2 * len(x) - v, 2 * len(x)) for v in _twice_placements(uy, x)]
        theta = sum(c * v for c, v in zip(cx.tolist(), px)) / len(x)
        dev = {(float(k), True): v - theta for k, v in zip(ux, px)}
        dev.update({(float(k), False): v - theta for k, v in zip(uy, qy)})
        return theta, dev, len(x) * (len(x) - 1), len(yy) * (len(yy) - 1)

    theta, dev, dx, dy = estimate(above, below)
    theta_o, dev_o, dx_o, dy_o = estimate(y, ~y)
    # row groups: score, positive or not, in the metric's X, in its Y
    keys = np.column_stack([s, y, above, below])
    groups, counts = np.unique(keys, axis=0, return_counts=True)
    with localcontext() as context:
        context.prec = 60

        def dec(q):
            return Decimal(q.numerator) / Decimal(q.denominator)

        def psi(deviation, w_w1):  # (V - theta) / sqrt(W (W - 1))
            return dec(deviation) / Decimal(w_w1).sqrt()

        var = Decimal(0)
        for (score, positive, in_x, in_y), count in zip(groups.tolist(), counts.tolist()):
            mine = (psi(dev[(score, True)], dx) if in_x
                    else psi(dev[(score, False)], dy) if in_y else Decimal(0))
            theirs = psi(dev_o[(score, bool(positive))], dx_o if positive else dy_o)
            var += count * (mine - theirs) ** 2
        return float(abs(dec(theta - theta_o)) / var.sqrt())


@pytest.mark.jit_heavy
def test_a_model_separating_all_but_five_negatives_is_tested_without_a_recheck(monkeypatch):
    """400,000 rows: every positive at one score, the negatives below but five above them
    all, three subgroups. The float sums' rounding (their squares pass 2**51) could be more
    than each AUC metric's difference from the overall AUC, so every subgroup's tests were
    recomputed from its cells' own rows (0.6 s here, 3 s at 1.8M rows, 32 s with pairs of
    identities). Now the exact sums give them, without a recheck: each z within 1e-6 of
    exact rational arithmetic (the rounding of the difference of two AUCs, each a double,
    that the tests allow: a difference of 1e-7 keeps about 9 digits)."""
    def no_recheck(*args, **kwargs):
        raise AssertionError("recomputed from the rows")

    monkeypatch.setattr(significance, "direct_variances", no_recheck)
    rng = np.random.default_rng(8)
    n = 400_000
    y = rng.random(n) < 0.5
    s = np.where(y, 2.0, rng.integers(0, 3, n) / 4.0)
    s[np.flatnonzero(~y)[:5]] = 3.0
    subgroups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.1, "c": rng.random(n) < 0.02}
    table = quietly(fastbias.bias_metrics, y, s, subgroups, significance="holm")
    for name, member in subgroups.items():
        for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc"):
            p = table.loc[name, f"{metric}_pvalue"]
            z = _exact_difference_z_by_score(s, y, member, metric)
            assert abs(_z_of(p) - z) <= 1e-6 * max(z, 1.0), (name, metric, p, z)


@pytest.mark.jit_heavy
def test_a_difference_of_auc_beyond_the_doubles_digits_comes_from_the_exact_sums(monkeypatch):
    """A million negatives tied below 200,000 tied positives but ten above them all, and a
    subgroup of 400 positives and 5 negatives: its BNSP AUC differs from the overall AUC by
    5e-11, within 1e6 times the rounding of the two doubles' difference (4e-16), so its test
    was recomputed from the rows (101 such tests with pairs of identities at 1.8M rows: 10
    s). The exact sums now give the difference itself: z within 1e-9 of exact rational
    arithmetic, without a recheck."""
    def no_recheck(*args, **kwargs):
        raise AssertionError("recomputed from the rows")

    monkeypatch.setattr(significance, "direct_variances", no_recheck)
    n_neg, n_pos = 1_000_000, 200_000
    y = np.concatenate([np.zeros(n_neg, bool), np.ones(n_pos, bool)])
    s = np.where(y, 2.0, 0.0)
    s[:10] = 3.0
    member = np.zeros(n_neg + n_pos, bool)
    member[10:15] = True  # five negatives, not among the ten
    member[n_neg:n_neg + 400] = True
    table = quietly(fastbias.bias_metrics, y, s, {"g": member}, significance="holm")
    gap = table.loc["g", "bnsp_auc"] - fastbias.overall_auc(y, s)
    assert 1e-11 < abs(gap) < 1e-10
    z = _exact_difference_z_by_score(s, y, member, "bnsp_auc")
    assert abs(_z_of(table.loc["g", "bnsp_auc_pvalue"]) - z) <= 1e-9 * max(z, 1.0), z
