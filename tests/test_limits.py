"""Numerical limits: exact counts at 50 million rows, score precision, extreme weights.

* n = 50,000,000 rows with a closed-form answer: every Mann-Whitney count is
  far beyond 2**31 (int32) and beyond float32's exact integers, so any
  narrow accumulator anywhere would show.
* Ties are decided in the dtype of the scores given (float32 stays float32).
* Weights spanning 1e-6..1e6 against a math.fsum brute force at 1e-12
  relative, including the ill-conditioned case of a subgroup carrying almost
  all the weight of a class (the weighted sweep is compensated).
"""
import math
import os
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning
from tests.reference import brute_force_metrics

NO_JIT = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
# big-n tests: marked jit_heavy (deselect with -m "not jit_heavy") and skipped outright
# when the kernels run as plain Python
skip_without_jit = pytest.mark.skipif(NO_JIT, reason="too slow with NUMBA_DISABLE_JIT=1")


# ------------------------------------------------------------------ 50 million rows, exact

# One period of 32 rows, repeated: label alternates, 8 score levels, positives
# shifted up by 3 (so classes overlap with heavy ties). Two subgroups.
PERIOD = 32
_j = np.arange(PERIOD)
PATTERN_LABEL = (_j % 2).astype(bool)
PATTERN_SCORE = ((_j // 2) % 8 + 3 * (_j % 2)).astype(np.float32)
PATTERN_GROUPS = {"g": np.isin(_j, [5, 10, 12]), "h": np.isin(_j, [2, 4, 7, 19, 21])}


def twice_u_by_pattern(above, below, copies):
    """Twice U(above > below) for the repeated pattern, in Python integers.

    Every row at pattern position a meets every row at position b exactly
    copies**2 times, so the count is copies**2 times the pattern's own count.
    """
    per_period = 0
    for a in np.flatnonzero(above):
        for b in np.flatnonzero(below):
            sa, sb = float(PATTERN_SCORE[a]), float(PATTERN_SCORE[b])
            per_period += 2 if sa > sb else (1 if sa == sb else 0)
    return copies * copies * per_period


def closed_form(copies):
    """Exact metrics of the repeated pattern (Fractions turned into floats once)."""
    y = PATTERN_LABEL
    expected = {}
    for name, g in PATTERN_GROUPS.items():
        cells = {"sn": g & ~y, "sp": g & y, "bn": ~g & ~y, "bp": ~g & y}
        size = {k: copies * int(v.sum()) for k, v in cells.items()}

        def prob(above, below):
            return Fraction(twice_u_by_pattern(cells[above], cells[below], copies),
                            2 * size[above] * size[below])

        expected[name] = {
            "subgroup_negatives": size["sn"], "subgroup_positives": size["sp"],
            "background_negatives": size["bn"], "background_positives": size["bp"],
            "subgroup_auc": float(prob("sp", "sn")),
            "bpsn_auc": float(prob("bp", "sn")),
            "bnsp_auc": float(prob("sp", "bn")),
            # exact, rounded once (0.5 - float(p) would round twice: the issue's
            # -3.99999999789e-08 for an exact -4e-08)
            "negative_aeg": float(Fraction(1, 2) - prob("bn", "sn")),
            "positive_aeg": float(Fraction(1, 2) - prob("bp", "sp")),
            "twice_bpsn_u": twice_u_by_pattern(cells["bp"], cells["sn"], copies),
        }
    overall = Fraction(twice_u_by_pattern(y, ~y, copies),
                       2 * (copies * int(y.sum())) * (copies * int((~y).sum())))
    return expected, float(overall)


@pytest.mark.jit_heavy
@skip_without_jit
def test_fifty_million_rows_exact():
    n_rows = 50_000_000
    copies = n_rows // PERIOD
    assert copies * PERIOD == n_rows
    labels = np.tile(PATTERN_LABEL, copies)
    scores = np.tile(PATTERN_SCORE, copies)  # float32: ties are exact
    groups = {name: np.tile(mask, copies) for name, mask in PATTERN_GROUPS.items()}
    table = fastbias.bias_metrics(labels, scores, groups)
    expected, overall = closed_form(copies)
    # The five metrics are exact integer ratios whose numerators are far
    # beyond 2**31; both numerator and denominator stay below 2**53, so the
    # float64 quotient equals the correctly rounded exact value, and any
    # counting error (even by one pair) would change it.
    assert expected["h"]["twice_bpsn_u"] > 2 ** 40
    for name, values in expected.items():
        for column, value in values.items():
            if column == "twice_bpsn_u":
                continue
            assert table.loc[name, column] == value, (name, column, table.loc[name, column], value)
    assert table.attrs["overall_auc"] == overall


def test_closed_form_reference_agrees_with_brute_force_on_one_period():
    # the closed form itself, checked against the O(n^2) reference on 3 copies
    copies = 3
    y = np.tile(PATTERN_LABEL, copies)
    s = np.tile(PATTERN_SCORE, copies)
    expected, overall = closed_form(copies)
    for name, mask in PATTERN_GROUPS.items():
        brute = brute_force_metrics(y, s, np.tile(mask, copies))
        for metric, value in brute.items():
            assert abs(expected[name][metric] - value) < 1e-15


@pytest.mark.jit_heavy
@skip_without_jit
def test_twice_u_counts_are_int64_exact_beyond_int32():
    # the raw counts behind the metrics are int64 (never int32/float32)
    from fastbias.prepare.memberships import prepare_subgroups
    from fastbias.sweep.counts import sweep_counts

    copies = 1_000
    labels = np.tile(PATTERN_LABEL, copies)
    scores = np.tile(PATTERN_SCORE, copies)
    groups = {name: np.tile(mask, copies) for name, mask in PATTERN_GROUPS.items()}
    sc = sweep_counts(scores, prepare_subgroups(labels, groups))
    assert sc.counts.dtype == np.int64
    assert sc.twice_overall_u == twice_u_by_pattern(PATTERN_LABEL, ~PATTERN_LABEL, copies)
    expected, _ = closed_form(copies)
    from fastbias.sweep import _kernels as K
    for row, name in enumerate(sc.names):
        assert sc.counts[row, K.TWICE_BPSN_U] == expected[name]["twice_bpsn_u"]


# ------------------------------------------------------------------ float32 vs float64

def test_ties_are_decided_in_the_dtype_given():
    # 0.1 and 0.1 + 1e-9 differ in float64 but are the same float32
    y = np.array([0, 1, 0, 1])
    s64 = np.array([0.1, 0.1 + 1e-9, 0.05, 0.2])
    s32 = s64.astype(np.float32)
    assert s32[0] == s32[1] and s64[0] != s64[1]
    g = {"g": np.array([True, True, False, False])}
    t64 = fastbias.bias_metrics(y, s64, g)
    t32 = fastbias.bias_metrics(y, s32, g)
    assert t64.loc["g", "subgroup_auc"] == 1.0  # strictly above
    assert t32.loc["g", "subgroup_auc"] == 0.5  # a tie in float32
    for scores, table in [(s64, t64), (s32, t32)]:
        expected = brute_force_metrics(y, scores.astype(np.float64), g["g"])
        for metric, value in expected.items():
            assert table.loc["g", metric] == value
    df = pd.DataFrame({"y": y, "s32": s32, "s64": s64, "g": g["g"]})
    res = fastbias.evaluate(df, label="y", scores=["s32", "s64"], subgroups=["g"])
    wide = res.wide(["subgroup_auc"])
    assert wide.loc["g", ("subgroup_auc", "s32")] == 0.5
    assert wide.loc["g", ("subgroup_auc", "s64")] == 1.0


@pytest.mark.jit_heavy
@skip_without_jit
def test_float32_ties_between_classes_at_scale():
    # 100k float32 scores on a coarse grid: many ties; equals float64 of the same values
    rng = np.random.default_rng(5)
    n = 100_000
    y = rng.random(n) < 0.3
    s32 = (rng.integers(0, 50, n) / 7).astype(np.float32)
    g = {"g": rng.random(n) < 0.2}
    t32 = fastbias.bias_metrics(y, s32, g)
    t64 = fastbias.bias_metrics(y, s32.astype(np.float64), g)
    pd.testing.assert_frame_equal(t32, t64)


# ------------------------------------------------------------------ extreme weights

def fsum_probability(above, below, w_above, w_below):
    """P(above > below) + 1/2 P(tie) over weighted pairs, every sum by math.fsum."""
    if len(above) == 0 or len(below) == 0:
        return math.nan
    terms = []
    for sa, wa in zip(above, w_above):
        for sb, wb in zip(below, w_below):
            if sa > sb:
                terms.append(wa * wb)
            elif sa == sb:
                terms.append(0.5 * wa * wb)
    total = math.fsum(w_above) * math.fsum(w_below)
    return math.fsum(terms) / total if total > 0 else math.nan


def fsum_metrics(y, s, g, w):
    cells = {"sp": g & y, "sn": g & ~y, "bp": ~g & y, "bn": ~g & ~y}

    def prob(a, b):
        return fsum_probability(s[cells[a]], s[cells[b]], w[cells[a]], w[cells[b]])

    # probabilities (the AEGs as P(background above subgroup)), compared relatively
    return {"subgroup_auc": prob("sp", "sn"), "bpsn_auc": prob("bp", "sn"),
            "bnsp_auc": prob("sp", "bn"), "negative_aeg": prob("bn", "sn"),
            "positive_aeg": prob("bp", "sp")}


def relative_errors(table, y, s, g, w):
    reference = fsum_metrics(y, s, g, w)
    errors = {}
    for metric, value in reference.items():
        got = table.loc["g", metric]
        if metric.endswith("aeg"):
            got = 0.5 - got
        errors[metric] = abs(got - value) / max(abs(value), 1e-300)
    return errors


@pytest.mark.parametrize("seed", range(6))
def test_weights_spanning_1e_minus6_to_1e6_match_fsum_reference(seed):
    rng = np.random.default_rng(seed)
    n = 160
    y = rng.random(n) < 0.45
    s = np.round(rng.random(n), 1)  # heavy ties
    g = rng.random(n) < rng.uniform(0.2, 0.8)
    w = 10.0 ** rng.uniform(-6, 6, n)
    w[rng.integers(0, n, 3)] = 1e-6
    w[rng.integers(0, n, 3)] = 1e6
    table = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w)
    errors = relative_errors(table, y, s, g, w)
    assert max(errors.values()) <= 1e-12, errors
    for cell, mask in [("subgroup_negative_weight", g & ~y), ("subgroup_positive_weight", g & y)]:
        assert abs(table.loc["g", cell] - math.fsum(w[mask])) <= 1e-13 * math.fsum(w[mask])


def test_weights_subgroup_carrying_almost_all_weight_match_fsum_reference():
    rng = np.random.default_rng(7)
    n = 120
    y = rng.random(n) < 0.5
    s = np.round(rng.random(n), 1)
    g = rng.random(n) < 0.5
    w = np.where(g, 1e6, 1e-6) * rng.uniform(1.0, 2.0, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        table = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w)
    errors = relative_errors(table, y, s, g, w)
    assert max(errors.values()) <= 1e-12, errors


def test_class_sizes_beyond_the_int64_pair_counts_are_refused():
    """Twice a U reaches 2 |negatives| |positives|: past 2**62 (about 3 billion rows of each
    class) the int64 counts would wrap silently; every path's counts (SweepCounts, in memory,
    out of core and per universe) refuse such class sizes, naming them."""
    from fastbias.sweep.counts import PAIR_COUNT_LIMIT, SweepCounts

    def counts(n_neg, n_pos, weighted=False):
        return SweepCounts(["g"], np.zeros((1, 7)), n_neg, n_pos, 0.0,
                           np.zeros((1, 2), dtype=np.int64), (n_neg, n_pos), weighted)

    largest = (PAIR_COUNT_LIMIT - 1) // 2  # 2 * 1 * largest < 2**62
    counts(1, largest)
    with pytest.raises(ValueError, match=r"2,200,000,000 negatives and 1,100,000,000 positives"):
        counts(2_200_000_000, 1_100_000_000)
    with pytest.raises(ValueError, match="2\\*\\*62"):
        counts(1, largest + 1)
    counts(2_200_000_000, 1_100_000_000, weighted=True)  # (float sums: no int64 to wrap)
