"""Independent reference implementations used only by the tests.

Nothing here shares code with fastbias: brute-force O(n^2) pair counts, exact
rational arithmetic for weighted pair sums, and the per-subgroup
sklearn/scipy loop that users run today.

The reference values are exact and rounded once: unweighted pair counts are
integers, weighted pair sums are computed on the weights scaled to integers
(a float is an integer times a power of two, so the scale is exact), and a
metric is the float nearest its exact rational value. An AEG is
``1/2 - P(X > Y) - 1/2 P(X = Y)`` computed in the rationals before rounding.
"""
from fractions import Fraction

import numpy as np


def _integer_weights(*weight_arrays):
    """Non-negative float weights -> Python integers with one common (exact) scale."""
    ratios = [[float(x).as_integer_ratio() for x in np.asarray(w, dtype=np.float64)]
              for w in weight_arrays]
    scale = max((q for rs in ratios for _, q in rs), default=1)  # every q is a power of two
    return [np.array([p * (scale // q) for p, q in rs] or [], dtype=object) for rs in ratios]


def pair_fraction(above, below, w_above=None, w_below=None):
    """P(s_above > s_below) + 1/2 P(tie) over all (weighted) pairs, as an exact Fraction.

    Returns None when either side is empty or has zero total weight.
    Unweighted, the pairs are counted by brute force (an n x m comparison);
    weighted, by sorting ``below`` and exact integer prefix sums of its weights.
    """
    a = np.asarray(above, dtype=np.float64)
    b = np.asarray(below, dtype=np.float64)
    if a.size == 0 or b.size == 0:
        return None
    if w_above is None and w_below is None:
        gt = int(np.count_nonzero(a[:, None] > b[None, :]))
        eq = int(np.count_nonzero(a[:, None] == b[None, :]))
        return Fraction(2 * gt + eq, 2 * a.size * b.size)
    wa, wb = _integer_weights(np.ones(a.size) if w_above is None else w_above,
                              np.ones(b.size) if w_below is None else w_below)
    total = sum(wa) * sum(wb)
    if total == 0:
        return None
    order = np.argsort(b, kind="stable")
    prefix = np.concatenate([np.array([0], dtype=object), np.cumsum(wb[order])])
    below_lt = np.searchsorted(b[order], a, side="left")
    below_le = np.searchsorted(b[order], a, side="right")
    twice = sum(wa * (prefix[below_lt] + prefix[below_le]))
    return Fraction(twice, 2 * total)


def pair_probability(above, below, w_above=None, w_below=None):
    """:func:`pair_fraction` rounded to the nearest float (NaN when undefined)."""
    value = pair_fraction(above, below, w_above, w_below)
    return np.nan if value is None else float(value)


def brute_force_metrics(y, s, member, w=None):
    """The five metrics for one subgroup, exact and rounded once."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)
    g = np.asarray(member, dtype=bool)
    weighted = w is not None
    w = np.ones(y.size) if w is None else np.asarray(w, dtype=np.float64)
    sp, sn, bp, bn = g & y, g & ~y, ~g & y, ~g & ~y

    def prob(x, z):
        if weighted:
            return pair_fraction(s[x], s[z], w[x], w[z])
        return pair_fraction(s[x], s[z])

    def auc(x, z):
        value = prob(x, z)
        return np.nan if value is None else float(value)

    def aeg(background, subgroup):
        value = prob(background, subgroup)
        return np.nan if value is None else float(Fraction(1, 2) - value)

    return {
        "subgroup_auc": auc(sp, sn),
        "bpsn_auc": auc(bp, sn),
        "bnsp_auc": auc(sp, bn),
        "negative_aeg": aeg(bn, sn),
        "positive_aeg": aeg(bp, sp),
    }


def sklearn_scipy_metrics(y, s, member):
    """The per-subgroup loop users run today (sklearn.roc_auc_score + scipy.mannwhitneyu)."""
    from scipy.stats import mannwhitneyu
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)  # scipy returns a float32 U for float32 input
    g = np.asarray(member, dtype=bool)

    def auc(mask):
        labels = y[mask]
        if labels.size == 0 or labels.all() or not labels.any():
            return np.nan
        return roc_auc_score(labels, s[mask])

    def aeg(background, subgroup):
        if background.sum() == 0 or subgroup.sum() == 0:
            return np.nan
        u, _ = mannwhitneyu(s[background], s[subgroup], alternative="less")
        return 0.5 - u / (background.sum() * subgroup.sum())

    return {
        "subgroup_auc": auc(g),
        "bpsn_auc": auc((g & ~y) | (~g & y)),
        "bnsp_auc": auc((g & y) | (~g & ~y)),
        "negative_aeg": aeg(~g & ~y, g & ~y),
        "positive_aeg": aeg(~g & y, g & y),
    }
