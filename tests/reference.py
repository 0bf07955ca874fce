"""Independent reference implementations used only by the tests.

Nothing here shares code with fastbias: brute-force O(n^2) pair counts and the
per-subgroup sklearn/scipy loop that users run today.
"""
import numpy as np


def pair_probability(above, below, w_above=None, w_below=None):
    """P(s_above > s_below) + 1/2 P(tie) over all (weighted) pairs, by brute force.

    Returns NaN when either side is empty or has zero total weight.
    """
    a = np.asarray(above, dtype=np.float64)
    b = np.asarray(below, dtype=np.float64)
    wa = np.ones(a.size) if w_above is None else np.asarray(w_above, dtype=np.float64)
    wb = np.ones(b.size) if w_below is None else np.asarray(w_below, dtype=np.float64)
    total = wa.sum() * wb.sum()
    if a.size == 0 or b.size == 0 or total == 0:
        return np.nan
    pair_w = wa[:, None] * wb[None, :]
    gt = (a[:, None] > b[None, :])
    eq = (a[:, None] == b[None, :])
    return float((pair_w * gt).sum() + 0.5 * (pair_w * eq).sum()) / total


def brute_force_metrics(y, s, member, w=None):
    """The five metrics for one subgroup by O(n^2) pair counting."""
    y = np.asarray(y, dtype=bool)
    s = np.asarray(s, dtype=np.float64)
    g = np.asarray(member, dtype=bool)
    w = np.ones(y.size) if w is None else np.asarray(w, dtype=np.float64)
    sp, sn, bp, bn = g & y, g & ~y, ~g & y, ~g & ~y
    return {
        "subgroup_auc": pair_probability(s[sp], s[sn], w[sp], w[sn]),
        "bpsn_auc": pair_probability(s[bp], s[sn], w[bp], w[sn]),
        "bnsp_auc": pair_probability(s[sp], s[bn], w[sp], w[bn]),
        "negative_aeg": 0.5 - pair_probability(s[bn], s[sn], w[bn], w[sn]),
        "positive_aeg": 0.5 - pair_probability(s[bp], s[sp], w[bp], w[sp]),
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
