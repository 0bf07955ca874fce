"""The exact walk sums (fastbias.intervals.exact_sums) against brute force and exact rationals.

Unweighted, the DeLong walks can keep each sum's rounding beside it, which makes the sums
exact; the standard errors and the significance tests that the float sums cannot tell from
their rounding are then worked out from those. Every expected value here comes from pair
counts in Python integers or from exact rational arithmetic, never from fastbias.
"""
import os
import subprocess
import sys
from decimal import Decimal, InvalidOperation, localcontext
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.intervals import delong, significance
from fastbias.intervals.delong import weight_bits_of
from fastbias.intervals.exact_sums import EXACT_MAX_ROWS, exact_sums_of
from fastbias.prepare.memberships import prepare_memberships_dense
from fastbias.sort.order import SortedScores
from fastbias.sweep.walk import member_walk
from tests.test_never_silently_wrong import (
    _exact_delong_variance,
    _exact_test_z,
    _metric_cells,
    quietly,
)

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


def _twice_placements(at, others):
    """Twice the placement of each score of ``at`` among ``others``: the others below it, each
    counting 2, plus those tied, each counting 1 (Python integers)."""
    others = np.sort(others)
    lt = np.searchsorted(others, at, side="left")
    le = np.searchsorted(others, at, side="right")
    return [int(a) + int(b) for a, b in zip(lt, le)]


def _placements(at, others, weights):
    """The placement of each score of ``at`` among ``others`` (of ``weights``): their weight
    below it plus half their weight at it, in exact rationals."""
    order = np.argsort(others, kind="stable")
    others = others[order]
    prefix = [Fraction(0)]
    for weight in weights[order].tolist():
        prefix.append(prefix[-1] + Fraction(weight))
    lt = np.searchsorted(others, at, side="left").tolist()
    le = np.searchsorted(others, at, side="right").tolist()
    return [prefix[a] + (prefix[b] - prefix[a]) / 2 for a, b in zip(lt, le)]


def _brute_sums(s, y, member, w):
    """(the 15 DeLong sums per metric, the overall AUC's 3, the 8 cross sums) of one
    subgroup, as Fractions, from each row's placement in exact rationals."""
    cells = _metric_cells(y, member)
    weight = [Fraction(v) for v in w.tolist()]

    def total(rows, values):  # sum over ``rows`` (a mask) of the row's weight times its value
        return sum((weight[r] * v for r, v in zip(np.flatnonzero(rows).tolist(), values)),
                   Fraction(0))

    def below(rows, others):  # each row's placement among ``others``: their weight below
        return _placements(s[rows], s[others], w[others])

    def above(rows, others):  # their weight above
        whole = sum((weight[r] for r in np.flatnonzero(others).tolist()), Fraction(0))
        return [whole - v for v in below(rows, others)]

    delong_sums = [None] * 15
    for j, metric in enumerate(METRICS):
        x, yy = cells[metric]
        px, qy = below(x, yy), above(yy, x)
        delong_sums[j] = total(x, px)
        delong_sums[5 + j] = total(x, [v * v for v in px])
        delong_sums[10 + j] = total(yy, [v * v for v in qy])
    c_pos, d_neg = below(y, ~y), above(~y, y)
    overall = (total(y, c_pos), total(y, [v * v for v in c_pos]),
               total(~y, [v * v for v in d_neg]))
    sub_neg, sub_pos = member & ~y, member & y
    # (c_g, c_O) of positives: the subgroup's negatives below, every negative below; (d_g,
    # d_O) of negatives: the subgroup's positives above, every positive above
    cg, co = below(sub_pos, sub_neg), below(sub_pos, ~y)
    dg, do = above(sub_neg, sub_pos), above(sub_neg, y)
    all_dg, all_do = above(~y, sub_pos), above(~y, y)  # (every negative: the table's D-)
    all_cg, all_co = below(y, sub_neg), below(y, ~y)  # (every positive: D+)
    cross = [total(sub_pos, [a * b for a, b in zip(cg, co)]), total(sub_pos, co),
             total(sub_pos, [(b - a) * b for a, b in zip(cg, co)]),
             total(~y, [a * b for a, b in zip(all_dg, all_do)]),
             total(sub_neg, [a * b for a, b in zip(dg, do)]), total(sub_neg, do),
             total(sub_neg, [(b - a) * b for a, b in zip(dg, do)]),
             total(y, [a * b for a, b in zip(all_cg, all_co)])]
    return delong_sums, overall, cross


def _data(seed, n, levels):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < rng.uniform(0.2, 0.8)
    y[:2] = [True, False]
    s = (rng.integers(0, levels, n) / max(levels - 1, 1) + 0.3 * y).astype(np.float64)
    groups = np.column_stack([rng.random(n) < 0.3, rng.random(n) < 0.03,
                              np.ones(n, bool), rng.random(n) < 0.9, ~y])
    return s, y, groups


@pytest.mark.parametrize("weights", ["none", "whole", "eighths"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed, levels", [(0, 2), (1, 5), (2, 40), (3, 1000)])
def test_exact_walk_sums_are_the_brute_force_sums(seed, levels, dtype, weights):
    """Heavy ties (2 levels) to none, a subgroup of every row, one of every negative, one of
    a few rows; unweighted, whole frequency weights (0 to 1000) and eighths: every sum of the
    exact walks, the 15 DeLong sums per subgroup (background ones a class's less the
    subgroup's), the overall AUC's 3 and the 8 cross sums, is the one from each row's
    placement in exact rationals."""
    s, y, groups = _data(seed, 300, levels)
    s = s.astype(dtype)
    rng = np.random.default_rng(seed)
    w = {"none": np.ones(len(y)), "whole": rng.integers(0, 1001, len(y)).astype(float),
         "eighths": rng.integers(1, 800, len(y)) / 8.0}[weights]
    names = [f"g{j}" for j in range(groups.shape[1])]
    m = prepare_memberships_dense(y, groups, names)
    sample_weight = None if weights == "none" else w
    exact = exact_sums_of(member_walk(SortedScores(s, m), sample_weight), len(y),
                          weight_bits_of(sample_weight))
    for g in range(groups.shape[1]):
        sums, overall, cross = _brute_sums(s.astype(np.float64), y, groups[:, g], w)
        assert exact.delong(g) == sums, names[g]
        assert exact.cross(g) == cross, names[g]
    assert exact.overall() == overall


def test_exact_sums_are_only_made_where_they_are_exact():
    """Weights of many binary digits (0.1) make placements that round, and so do classes of
    more than 2**25 placement units (2**24 rows; whole weights of 2**30) and more than
    EXACT_MAX_ROWS rows: no exact sums then (None), whatever the data."""
    s, y, groups = _data(4, 200, 7)
    m = prepare_memberships_dense(y, groups, [f"g{j}" for j in range(groups.shape[1])])
    sorts = SortedScores(s, m)
    n = len(y)
    for w, made in ((None, True), (np.full(n, 3.0), True), (np.full(n, 0.375), True),
                    (np.full(n, 0.1), False), (np.full(n, 2.0 ** 30), False)):
        found = exact_sums_of(member_walk(sorts, w), n, weight_bits_of(w))
        assert (found is not None) == made, w[0] if w is not None else None
    assert exact_sums_of(member_walk(sorts), EXACT_MAX_ROWS + 1) is None


@pytest.mark.parametrize("unit", [1.0, 0.5, 0.125])
def test_exact_sums_are_made_up_to_the_units_bound_and_not_beyond(unit):
    """The bound as documented, at its edge: weights of ``b`` binary digits below the point
    (``unit = 2**-b``) make exact sums while the heavier class weighs at most 2**25 placement
    units, ``2**(b + 1) W <= 2**25``, and none one weight unit beyond (a bound a bit looser
    would let products of placements reach past 2**53 units)."""
    s, y, groups = _data(4, 200, 7)
    m = prepare_memberships_dense(y, groups, [f"g{j}" for j in range(groups.shape[1])])
    sorts = SortedScores(s, m)
    n = len(y)
    heavier = y if y.sum() >= (~y).sum() else ~y
    first = int(np.flatnonzero(heavier)[0])
    limit = Fraction(2 ** 25, 2) / Fraction(unit).denominator  # W at 2**(b + 1) W = 2**25
    for extra, made in ((0, True), (unit, False)):
        w = np.full(n, unit)
        # (the heavier class weighs ``limit`` (+ one unit): its other rows ``unit`` each)
        w[first] = float(limit - Fraction(unit) * int(heavier.sum() - 1)) + extra
        assert Fraction(w[first]) % Fraction(unit) == 0  # (still ``b`` digits)
        assert sum(map(Fraction, w[heavier].tolist())) == limit + Fraction(extra)
        found = exact_sums_of(member_walk(sorts, w), n, weight_bits_of(w))
        assert (found is not None) == made, (unit, extra)


def test_exact_sums_keep_the_rounding_of_sums_past_the_doubles_digits():
    """600,000 rows, heavy ties: the sums of squared placements (multiples of 1/4 near
    2**53) are not doubles, so the exact sums hold only with each addition's rounding kept
    beside them and every part read back (the overall AUC's U, sum of squares over the
    positives and over the negatives; the same three of a subgroup of every row), against
    pair counts in Python integers."""
    rng = np.random.default_rng(47)
    n = 600_000
    y = rng.random(n) < 0.5
    s = (rng.integers(0, 5000, n) + 1000 * y).astype(np.float64)
    groups = np.column_stack([np.ones(n, bool), rng.random(n) < 0.5])
    m = prepare_memberships_dense(y, groups, ["every row", "half"])
    exact = exact_sums_of(member_walk(SortedScores(s, m)), n)
    n_pos = int(y.sum())
    twice_c = _twice_placements(s[y], s[~y])  # negatives below each positive, ties 1/2
    twice_d = [2 * n_pos - t for t in _twice_placements(s[~y], s[y])]  # positives above
    want = (Fraction(sum(twice_c), 2), Fraction(sum(t * t for t in twice_c), 4),
            Fraction(sum(t * t for t in twice_d), 4))
    # (the squares' sums are no doubles: a sum without its rounding could not be them)
    assert all(Fraction(float(v)) != v for v in want[1:])
    assert exact.overall() == want
    sums = exact.delong(0)
    assert (sums[0], sums[5], sums[10]) == want


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


@pytest.mark.parametrize("seed, levels, missing, weighted", [
    (5, 3, False, False), (6, 12, True, False), (7, 1000, False, False),
    (8, 3, False, True), (9, 12, True, True), (10, 1000, False, True)])
def test_standard_errors_and_tests_from_exact_sums_are_exact(exact_path_only, seed, levels,
                                                             missing, weighted):
    """With every float variance in doubt, the standard errors and the DeLong tests of every
    metric (AUC metrics against the AUC of all rows, or of the rows annotated for the
    subgroup under ``missing_subgroup="exclude"``), unweighted or with whole frequency
    weights (0 to 20), come from the exact sums alone: each standard error within 1e-14 of
    exact rational arithmetic, each z within 1e-9."""
    case = _case_with_universes(seed, levels, missing, weighted)
    frame, options = case[0], case[1]
    table = quietly(fastbias.evaluate, frame, ci="delong", **options).for_model()
    _assert_exact_tests(table, *case[2:], with_se=True)


def _case_with_universes(seed, levels, missing, weighted) -> tuple:
    """``(frame, options, s, y, w, subgroups, universe)``: 160 rows of :func:`_data`, three
    subgroups, whole weights 0-20 or none, and with ``missing`` a few rows unannotated for
    ``g0`` (its own universe under ``missing_subgroup="exclude"``)."""
    s, y, groups = _data(seed, 160, levels)
    groups = groups[:, [0, 2, 3]]
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 21, len(y)).astype(float) if weighted else np.ones(len(y))
    subgroups = {f"g{j}": groups[:, j].astype(float) for j in range(groups.shape[1])}
    universe = {name: np.ones(len(y), bool) for name in subgroups}
    if missing:  # a few unannotated rows in one subgroup: its own universe
        unknown = rng.random(len(y)) < 0.1
        unknown[:2] = False
        subgroups["g0"][unknown] = np.nan
        universe["g0"] = ~unknown
    frame = pd.DataFrame({"y": y.astype(int), "s": s, "w": w, **subgroups})
    options = dict(label="y", scores="s", subgroups=list(subgroups),
                   sample_weight="w" if weighted else None, significance="holm",
                   missing_subgroup="exclude" if missing else "background")
    return frame, options, s, y, w, subgroups, universe


def _assert_exact_tests(table, s, y, w, subgroups, universe, with_se: bool) -> None:
    """Every test of ``table`` with a variance is made, its z within 1e-9 of exact rational
    arithmetic (``with_se``: and its standard error within 1e-14); those without are NaN."""
    made = 0
    for name, column in subgroups.items():
        rows = universe[name]
        member = np.nan_to_num(column)[rows] > 0.5
        for metric in METRICS:
            above, below = _metric_cells(y[rows], member)[metric]
            p = table.loc[name, f"{metric}_pvalue"]
            got = table.loc[name, f"{metric}_se"] if with_se else None
            if min(w[rows][above].sum(), w[rows][below].sum()) <= 1:  # (no variance)
                assert np.isnan(p) and (got is None or np.isnan(got)), (name, metric)
                continue
            if with_se:
                exact_se = float(_exact_delong_variance(s[rows], w[rows], above, below)) ** 0.5
                assert abs(got - exact_se) <= 1e-14 * exact_se, (name, metric)
            try:
                z = _exact_test_z(s[rows], w[rows], y[rows], member, metric)
            except InvalidOperation:  # 0 / 0: the AUC of all rows itself, p = 1
                z = 0.0
            assert np.isfinite(p), (name, metric)  # (made: not left to the worst case)
            assert abs(_z_of(p) - z) <= 1e-9 * max(z, 1.0), (name, metric, p, z)
            made += 1
    assert made >= 9


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


@pytest.mark.jit_heavy
def test_a_test_whose_difference_comes_from_the_exact_sums_has_an_exact_standard_error_too(
        monkeypatch):
    """700,000 rows, 300 positives, two negatives above every positive, a subgroup of every
    row but one negative: its subgroup AUC differs from the overall AUC by 2e-11, which the
    two doubles' difference cannot give to 1e-6 of z, so the difference comes from the
    exact sums. Its standard error, known from the float sums only within their 1%, once
    left z 2e-5 off (found by review; the rows, before, gave 1e-11): it comes from the same
    exact sums now, z within 1e-9 of exact rational arithmetic, without a recheck."""
    def no_recheck(*args, **kwargs):
        raise AssertionError("recomputed from the rows")

    monkeypatch.setattr(significance, "direct_variances", no_recheck)
    rng = np.random.default_rng(0)
    n, positives = 700_000, 300
    y = np.zeros(n, bool)
    y[rng.choice(n, positives, replace=False)] = True
    s = np.where(y, 0.9 + rng.integers(0, 4, n) / 100, rng.integers(0, 4, n) / 10.0)
    negatives = np.flatnonzero(~y)
    s[negatives[:2]] = 0.99
    member = np.ones(n, bool)
    member[negatives[2]] = False
    table = quietly(fastbias.bias_metrics, y, s, {"g": member}, significance="holm")
    z = _exact_difference_z_by_score(s, y, member, "subgroup_auc")
    assert abs(_z_of(table.loc["g", "subgroup_auc_pvalue"]) - z) <= 1e-9 * max(z, 1.0), z


@pytest.mark.jit_heavy
@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="kernels are cached only when they are compiled")
def test_an_exact_walk_compiling_in_the_caller_says_so_first(tmp_path):
    """With the first-call tier off and an empty cache, the float walks' versions are
    compiled by the call, and the exact walks' are not cached with them: the first exact
    walk logs one line as it starts (found by review: 7 s without a word); a second process,
    finding it cached, logs nothing."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script = ("import logging, numpy as np\n"
              "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
              "from fastbias.intervals.delong import _placement_sums\n"
              "from fastbias.intervals.exact_sums import exact_sums_of\n"
              "from fastbias.prepare.memberships import prepare_memberships_dense\n"
              "from fastbias.sort.order import SortedScores\n"
              "from fastbias.sweep.walk import member_walk\n"
              "rng = np.random.default_rng(0)\n"
              "y = rng.random(300) < 0.3\n"
              "m = prepare_memberships_dense(y, rng.random((300, 2)) < 0.3, ['a', 'b'])\n"
              "walk = member_walk(SortedScores(rng.random(300), m))\n"
              "_placement_sums(walk, 2, 1)\n"
              "logging.info('exact walks start')\n"
              "exact_sums_of(walk, 300).delong(0)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "FASTBIAS_FIRST_CALL": "0"}
    for run in range(2):
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=600,
                             capture_output=True, text=True)
        before, after = out.stderr.split("exact walks start")
        said = "compiling kernels for first use (exact DeLong sums" in after
        assert said == (run == 0), out.stderr
        assert "exact" not in before, out.stderr  # (the float walks: nothing of the exact)


# ------------------------------------------------------------------ out of core: chunks joined


@pytest.mark.parametrize("weights", ["none", "whole", "eighths"])
@pytest.mark.parametrize("seed, levels", [(11, 2), (12, 5), (13, 40)])
def test_chunks_exact_sums_joined_are_the_brute_force_sums(seed, levels, weights):
    """Out of core, each chunk (rows of a score range, ties never split; a chunk of one score
    by its closed form) keeps its sums exact, and the join gives the sums of all rows
    exactly (in whole numbers, all chunks at once): every DeLong sum, cross sum and overall
    sum of every subgroup is the one from each row's placement in exact rationals (chunks
    of one score among them)."""
    from tests.test_significance_out_of_core import chunk_sums_of

    s, y, groups = _data(seed, 240, levels)
    rng = np.random.default_rng(seed)
    w = {"none": np.ones(len(y)), "whole": rng.integers(0, 1001, len(y)).astype(float),
         "eighths": rng.integers(1, 800, len(y)) / 8.0}[weights]
    scores = np.unique(s)
    for trial in range(3):
        cuts = rng.choice(scores, size=min(len(scores), int(rng.integers(1, 6))),
                          replace=False)
        if trial == 0:  # a chunk of each score alone
            cuts = scores
        sums = chunk_sums_of(y, s, None if weights == "none" else w,
                             [groups[:, j] for j in range(groups.shape[1])], cuts)
        joined = sums.exact()
        for g in range(groups.shape[1]):
            delong_sums, overall, cross = _brute_sums(s, y, groups[:, g], w)
            assert joined.delong(g) == delong_sums, (trial, g)
            assert joined.cross(g) == cross, (trial, g)
            assert joined.overall(g) == overall, (trial, g)


def test_chunks_sums_are_joined_exactly_only_where_they_can_be():
    """No exact join where a chunk's sums cannot be exact (weights of many binary digits; a
    walked chunk's class above 2**25 placement units), where the joined weights would round
    as doubles (chunks of one score, whose sums need no walk, adding up to a class above
    2**52 of the weights' unit) or where a chunk kept none (the numpy tier)."""
    from tests.test_significance_out_of_core import chunk_sums_of

    s, y, groups = _data(14, 200, 6)
    columns = [groups[:, j] for j in range(groups.shape[1])]
    scores = np.unique(s)
    n = len(y)
    for w, cuts, made in ((None, scores[::2], True), (np.full(n, 0.375), scores[::2], True),
                          (np.full(n, 0.1), scores[::2], False),
                          (np.full(n, 2.0 ** 30), scores[::2], False),  # (walked: 2**25 units)
                          (np.full(n, 2.0 ** 30), scores, True),  # (each chunk one score)
                          (np.full(n, 2.0 ** 46), scores, False),  # (a class near 2**53)
                          (np.full(n, 2.0 ** 40 + 0.5), scores, True)):
        found = chunk_sums_of(y, s, w, columns, cuts)
        assert (found.exact is not None) == made, (None if w is None else w[0], len(cuts))
    sums = chunk_sums_of(y, s, None, columns, cuts)
    from dataclasses import replace

    from fastbias.intervals.placement_sums import combine_placement_sums
    parts = [sums, replace(sums, joinable=None)]  # (two chunks; one kept no exact sums)
    assert combine_placement_sums(parts).exact is None
    # a chunk's sum that is not a whole number of its unit (it cannot be, where exact):
    # nothing is taken on trust, no exact join
    from fastbias.intervals.placement_sums import tied_placement_sums
    tied = tied_placement_sums(np.array([[3.0, 2.0, 5.0, 4.0]]), np.array([[3, 2]]),
                               np.array([[8, 6]]))
    lo = tied.joinable.weights_lo.copy()
    lo[0, 0] = 2.0 ** -60
    odd = replace(tied, joinable=replace(tied.joinable, weights_lo=lo))
    assert combine_placement_sums([tied, tied]).exact() is not None
    assert combine_placement_sums([tied, odd]).exact() is None


@pytest.mark.parametrize("seed, levels, missing, weighted, bucket_rows, on_dask", [
    (15, 3, False, False, 40, False), (16, 12, True, False, 25, False),
    (17, 1000, False, False, 60, False), (18, 3, False, True, 40, False),
    (19, 12, True, True, 30, False), (21, 5, False, False, 0, True),
    (22, 12, True, True, 0, True)])
def test_streamed_tests_from_joined_exact_sums_are_exact(monkeypatch, tmp_path, seed, levels,
                                                         missing, weighted, bucket_rows,
                                                         on_dask):
    """Out of core, with every float variance in doubt (a tolerance of 0; no rows to recheck
    from), every DeLong test comes from the chunks' exact sums joined: streamed or on Dask
    (four partitions), unweighted or with whole frequency weights, under
    ``missing_subgroup="exclude"`` too (a universe per subgroup), each z within 1e-9 of
    exact rational arithmetic. Before, out of core such tests were not made (NaN)."""
    from fastbias.streaming import evaluate_csv

    monkeypatch.setattr(significance, "VARIANCE_TOLERANCE", 0.0)
    monkeypatch.setattr(significance, "PERMUTATION_BELOW", 0)
    monkeypatch.setattr(significance, "PERMUTATION_DRAWS_BELOW", 0)
    case = _case_with_universes(seed, levels, missing, weighted)
    frame, options = case[0], case[1]
    if on_dask:
        dd = pytest.importorskip("dask.dataframe")
        import dask

        import fastbias.dask
        with dask.config.set(scheduler="synchronous"):
            table = quietly(fastbias.dask.evaluate, dd.from_pandas(frame, npartitions=2),
                            npartitions=4, **options).for_model()
    else:
        frame.to_csv(tmp_path / "d.csv", index=False)
        table = quietly(evaluate_csv, tmp_path / "d.csv", bucket_rows=bucket_rows,
                        **options).for_model()
    _assert_exact_tests(table, *case[2:], with_se=False)


def test_a_first_call_out_of_core_does_not_wait_for_the_exact_walks(monkeypatch):
    """Out of core, a chunk keeps exact sums only if the exact walks are compiled (or the
    first-call tier is off: then they compile in place): a first call in a fresh environment
    does not wait about 8 s for them, they compile in the background (family ``exact``) for
    the next call, and this call's tests stay with the worst case (never wrong)."""
    from fastbias import _numba_cache
    from fastbias.sweep import first_call
    from tests.test_significance_out_of_core import chunk_sums_of

    s, y, groups = _data(20, 120, 5)
    columns = [groups[:, j] for j in range(groups.shape[1])]
    cuts = np.unique(s)[::2]
    asked = []
    monkeypatch.setattr(first_call, "compile_in_background", asked.append)
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda kernel, kind=None: True)
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    assert chunk_sums_of(y, s, None, columns, cuts).exact is None
    assert asked and set(asked) == {"exact"}
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")  # no tier: compiled here, on first use
    assert chunk_sums_of(y, s, None, columns, cuts).exact is not None
    # compiled, but the background child still compiling them: not yet
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda kernel, kind=None: False)
    monkeypatch.setattr(first_call, "still_compiling", lambda name: name == "exact")
    assert chunk_sums_of(y, s, None, columns, cuts).exact is None
    monkeypatch.setattr(first_call, "still_compiling", lambda name: False)
    assert chunk_sums_of(y, s, None, columns, cuts).exact is not None


@pytest.mark.parametrize("weighted", [False, True])
def test_the_gaps_from_joined_exact_sums_read_each_subgroups_own_universe(monkeypatch, tmp_path,
                                                                          weighted):
    """Out of core under ``missing_subgroup="exclude"``, each subgroup is compared with the
    AUC of the rows annotated for it, so the joined exact sums give an overall AUC per
    subgroup (``overall(g)``). The differences ``_exact_gaps`` makes from them (an AUC
    metric's from its universe's AUC, an AEG's from 0) are the exact ones, rounded once:
    against each universe's sums from every row's placement in exact rationals."""
    from fastbias import tables
    from fastbias.streaming import evaluate_csv

    captured = []
    join = tables.result.combine_placement_sums

    def keep(parts):
        captured.append(join(parts))
        return captured[-1]

    monkeypatch.setattr(tables.result, "combine_placement_sums", keep)
    case = _case_with_universes(23, 6, True, weighted)
    frame, options, s, y, w, subgroups, universe = case
    frame.to_csv(tmp_path / "d.csv", index=False)
    table = quietly(evaluate_csv, tmp_path / "d.csv", bucket_rows=30, **options).for_model()
    (sums,) = captured
    assert sums.exact is not None
    k = len(subgroups)
    gaps = {metric: np.full(k, np.nan) for metric in METRICS}
    rounding = {metric: np.full(k, np.nan) for metric in METRICS}
    significance._exact_gaps(sums, gaps, rounding, {m: np.ones(k, bool) for m in METRICS})
    assert list(table.index) == list(subgroups)
    for i, (name, column) in enumerate(subgroups.items()):
        rows = universe[name]
        member = np.nan_to_num(column)[rows] > 0.5
        delong_sums, overall, _ = _brute_sums(s[rows], y[rows], member, w[rows])
        weight = [Fraction(float(v)) for v in w[rows].tolist()]
        total = {cell: sum((weight[r] for r in np.flatnonzero(mask).tolist()), Fraction(0))
                 for cell, mask in (("neg", ~y[rows]), ("pos", y[rows]))}
        auc_all = overall[0] / (total["pos"] * total["neg"])
        for j, metric in enumerate(METRICS):
            above, below = _metric_cells(y[rows], member)[metric]
            pairs = (sum((weight[r] for r in np.flatnonzero(above).tolist()), Fraction(0))
                     * sum((weight[r] for r in np.flatnonzero(below).tolist()), Fraction(0)))
            if pairs == 0:
                continue
            theta = delong_sums[j] / pairs
            want = theta - auc_all if metric.endswith("_auc") else Fraction(1, 2) - theta
            assert gaps[metric][i] == float(want), (name, metric)
    assert not np.all(np.isnan(gaps["bpsn_auc"]))
