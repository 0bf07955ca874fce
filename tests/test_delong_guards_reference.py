"""An independent review's tests (2026-11-27): the DeLong standard errors' rounding guards, against weighted
DeLong (1988) in exact rational arithmetic (docs/intervals.md: var = sum_X w (V - theta)**2 /
(W_X (W_X - 1)) + the same over Y, V the weighted placements, ties 1/2). Contract: a standard
error within 1% of the exact one, or NaN.

Mutants of fastbias/intervals/delong.py each test kills (checked by editing the code):
* M1 ``_known_sum``: ``np.any(d[w != 0] != 0)`` -> ``np.any(d != 0)``:
  test_zero_weight_row_between_separated_classes_se_is_exactly_zero (NaN instead of 0);
* M2 ``_delong_variance``'s W - 1 guard, ``tolerance / 4`` -> ``tolerance * 4``:
  test_background_just_over_one_walk_guard_sends_it_to_the_rows (5-48% off, not NaN);
* M3 ``_deviation_errors`` with ``float(sum(own)) - 1`` for ``_less_one(own)``:
  test_cell_a_few_ulps_over_one_against_a_heavy_cell_is_known (NaN where the exact value is
  known to 2.5e-9).

Found by review (fails before its fix): test_background_weighing_just_over_one_in_a_heavy_class
(a background's W - 1 judged by its own rounding, not its class's: standard errors 4-35% off).
"""
import warnings
from fractions import Fraction as F

import numpy as np
import pytest

import fastbias

CELLS = {"subgroup_auc": (("s", 1), ("s", 0)), "bpsn_auc": (("b", 1), ("s", 0)),
         "bnsp_auc": (("s", 1), ("b", 0)), "negative_aeg": (("b", 0), ("s", 0)),
         "positive_aeg": (("b", 1), ("s", 1))}


def _rows(s, w, mask):
    return [(F(float(a)), F(float(b))) for a, b in zip(s[mask], w[mask])]


def _exact_var(X, Y):
    """Weighted DeLong variance in Fractions; None where a cell weighs at most 1."""
    wx, wy = sum(w for _, w in X), sum(w for _, w in Y)
    if wx <= 1 or wy <= 1:
        return None

    def k(a, b):
        return F(1) if a > b else F(1, 2) if a == b else F(0)

    vx = [sum(w * k(a, b) for b, w in Y) / wy for a, _ in X]
    vy = [sum(w * k(a, b) for a, w in X) / wx for b, _ in Y]
    th = sum(w * v for (_, w), v in zip(X, vx)) / wx
    return (sum(w * (v - th) ** 2 for (_, w), v in zip(X, vx)) / (wx * (wx - 1))
            + sum(w * (v - th) ** 2 for (_, w), v in zip(Y, vy)) / (wy * (wy - 1)))


def exact_se(y, s, g, w, metric):
    if metric == "overall":
        v = _exact_var(_rows(s, w, y == 1), _rows(s, w, y == 0))
    else:
        X, Y = ([*_rows(s, w, (g if part == "s" else ~g) & (y == lab))]
                for part, lab in CELLS[metric])
        v = _exact_var(X, Y)
    return None if v is None else float(v) ** 0.5


def fb_se(y, s, g, w):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = fastbias.bias_metrics(y, s, {"g": g}, sample_weight=w, ci="delong")
    out = {m: float(t.iloc[0][m + "_se"]) for m in CELLS}
    out["overall"] = float(t.attrs["overall_auc_se"])
    return out


def assert_contract(got, exact, what):
    """Within 1% of exact, or NaN."""
    assert np.isnan(got) or abs(got - exact) <= 0.01 * exact, (what, got, exact)


# 12 rows: subgroup positives of weight ~T, two background positives weighing 1 + eps
# (0.3 and 0.7 + eps), subgroup and background negatives of ordinary weight
Y12 = np.array([1] * 4 + [1, 1] + [0] * 3 + [0] * 3)
G12 = np.array([1] * 4 + [0, 0] + [1] * 3 + [0] * 3, bool)
S12 = np.array([.1, .5, .7, .9, .35, .65, .2, .4, .8, .3, .6, .95])


def _w12(T, eps):
    return np.array([0.3 * T, 0.2 * T, 0.25 * T, 0.25 * T + 0.3, 0.3, 0.7 + eps,
                     1, 2, 1.5, 1, 2, 1.5])


@pytest.mark.parametrize("T,eps", [(1e3, 5e-13), (1e3, 1e-12), (1e4, 5e-13), (1e4, 1e-12)])
def test_background_just_over_one_walk_guard_sends_it_to_the_rows(T, eps):
    """Background positives weighing 1 + eps beside a subgroup class of weight T: the walk
    takes the background's weight as the class's less the subgroup's (off by ~ulp(T)), so its
    W - 1 is unknown; the W - 1 guard makes the walk's value NaN and the rows give it exactly.
    Passes; under M2 (tolerance * 4) BPSN and positive AEG come out 5-48% off."""
    got = fb_se(Y12, S12, G12, _w12(T, eps))
    for m in ("bpsn_auc", "positive_aeg"):
        ex = exact_se(Y12, S12, G12, _w12(T, eps), m)
        assert_contract(got[m], ex, m)


@pytest.mark.parametrize("T,eps", [(1e4, 3e-12), (1e4, 1e-11), (1e7, 1e-8), (1e9, 1e-7)])
def test_background_weighing_just_over_one_in_a_heavy_class(T, eps):
    """Was: same rows, the background's W - 1 a little larger: the W - 1
    guard judges it by share * W / (W - 1) with the background's own W (~1), but its weight
    is its class's total less the subgroup's and carries the rounding of the class (~T
    2**-53 each), so W - 1 is off by ~ulp(T) / eps. Measured on the current code: BPSN and
    positive AEG standard errors 9.2% low (1e4, 3e-12), 4.3% low (1e4, 1e-11), 3.6% high
    (1e7, 1e-8), 35% low (1e9, 1e-7), all finite. Correct: within 1% of exact, or NaN
    (docs/intervals.md: "neither has one weighing so little over 1 that W - 1 is not known
    within its sum's rounding (NaN on every path; in memory the cell's own rows give it)").
    Cause: fastbias/intervals/delong.py _delong_variance's W - 1 guard (share * wx / (wx -
    1)); now a background's W - 1 is judged by its class's total (``scales``), and in memory
    its rows give the exact value; out of core (no rows at hand) NaN."""
    got = fb_se(Y12, S12, G12, _w12(T, eps))
    for m in ("bpsn_auc", "positive_aeg"):
        ex = exact_se(Y12, S12, G12, _w12(T, eps), m)
        assert_contract(got[m], ex, m)


def test_background_just_over_one_other_metrics_exact():
    """The same data's other standard errors (no background positive in them) hold."""
    for T, eps in ((1e4, 3e-12), (1e9, 1e-7)):
        got = fb_se(Y12, S12, G12, _w12(T, eps))
        for m in ("subgroup_auc", "bnsp_auc", "negative_aeg", "overall"):
            ex = exact_se(Y12, S12, G12, _w12(T, eps), m)
            assert got[m] == pytest.approx(ex, rel=1e-9, abs=0), m


def test_cell_a_few_ulps_over_one_against_a_heavy_cell_is_known():
    """Positives of weight 1 (score 0.5) and d = (1.5 - 2**-8) 2**-52 (0.9): W = 1 + 1.49 ulp,
    whose rounded sum is 1 + 1 ulp; negatives H = 2e20 (0.1) and 1 (0.7). Every cell is
    the subgroup's. Exact se 7.0710678e-21; fastbias gives it within 2.5e-9 (from the rows,
    double-double). Under M3 (the rounded W - 1 in _deviation_errors) the error bound grows
    by sqrt(1.5) and the same value is NaN."""
    d = (1.5 - 2 ** -8) * 2 ** -52
    y, s, g = np.array([1, 1, 0, 0]), np.array([.5, .9, .1, .7]), np.ones(4, bool)
    w = np.array([1.0, d, 2e20, 1.0])
    got = fb_se(y, s, g, w)
    ex = exact_se(y, s, g, w, "overall")
    assert ex == pytest.approx(7.0710678118654e-21, rel=1e-9, abs=0)
    for m in ("overall", "subgroup_auc"):
        assert got[m] == pytest.approx(ex, rel=1e-6, abs=0), m


@pytest.mark.parametrize("H", [1e19, 1e20, 2e20, 4e20, 1e21])
def test_cell_a_few_ulps_over_one_contract(H):
    """The same shape over the heavy weight: within 1% of exact or NaN (passes)."""
    d = (1.5 - 2 ** -8) * 2 ** -52
    y, s, g = np.array([1, 1, 0, 0]), np.array([.5, .9, .1, .7]), np.ones(4, bool)
    w = np.array([1.0, d, H, 1.0])
    got = fb_se(y, s, g, w)
    ex = exact_se(y, s, g, w, "overall")
    for m in ("overall", "subgroup_auc"):
        assert_contract(got[m], ex, m)


def test_zero_weight_row_between_separated_classes_se_is_exactly_zero():
    """Subgroup: positives (1.5, 0.25) at 0.8 and 0.9 above negatives (0.5, 0.75) at 0.1 and
    0.2, and a negative of weight 0 at 0.85, between the positives; the background's rows
    weigh 0. Every placement of weight above 0 is 1 (AUC 1): exact se 0 (Fraction). Under M1
    (``np.any(d != 0)`` in _known_sum) the row of weight 0's deviation makes it NaN.
    (With weights 1.5, 1/3, 0.5, 0.9 and background rows of weight 1 the same shape gives NaN
    on the current code, in memory and from Parquet alike, with the "within that rounding"
    warning: the double-double mean U / W of the negatives' placements is not exactly 1, so
    the rows of weight above 0 get deviations of ~1e-33 and the guard cannot call them 0.
    NaN is within the contract; noted, not asserted.)"""
    y = np.array([1, 1, 0, 0, 0, 1, 0])
    s = np.array([.8, .9, .1, .2, .85, .5, .6])
    g = np.array([1, 1, 1, 1, 1, 0, 0], bool)
    w = np.array([1.5, 0.25, 0.5, 0.75, 0.0, 0.0, 0.0])
    assert exact_se(y, s, g, w, "subgroup_auc") == 0.0
    got = fb_se(y, s, g, w)
    assert got["subgroup_auc"] == 0.0


@pytest.mark.parametrize("T,eps", [(1e4, 3e-12), (1e9, 1e-7)])
def test_background_just_over_one_out_of_core(T, eps, tmp_path):
    """The same data from a CSV file (its chunks' sums, no rows to go back to): the
    standard errors of the background just over weight 1 are within 1% of exact or NaN, and
    the others exact."""
    import pandas as pd
    w = _w12(T, eps)
    path = tmp_path / "w12.csv"
    pd.DataFrame({"y": Y12, "s": S12, "g": G12, "w": w}).to_csv(path, index=False,
                                                                 float_format="%.17g")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        row = fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                    sample_weight="w", ci="delong").table.iloc[0]
    for m in CELLS:
        ex = exact_se(Y12, S12, G12, w, m)
        if m in ("bpsn_auc", "positive_aeg"):
            assert_contract(float(row[m + "_se"]), ex, m)
        else:
            assert float(row[m + "_se"]) == pytest.approx(ex, rel=1e-9, abs=0), m
