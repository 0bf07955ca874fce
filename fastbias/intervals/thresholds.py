"""Intervals of the threshold metrics: Wilson or exact (Clopper-Pearson) intervals of each
rate, and the Bernstein interval (Ethayarajh 2020, seed 004) of each gap.

Rates are shares of rows; with weights, a weight counts as that many rows (the
frequency-weight reading of every interval in fastbias), so trials and successes may be
fractional.
"""
from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd

from ..metrics.thresholds import THRESHOLD_RATES, rate_sets
from .bernstein import _log_half_alpha, halfwidths

RATE_INTERVALS = ("wilson", "exact")
GAP_INTERVALS = ("bernstein",)


def check_rate_interval(interval, name: str = "interval"):
    """``interval=`` of the threshold metrics (``name``: the argument as the caller named it,
    ``threshold_interval`` for ``evaluate``): None, "wilson" or "exact"."""
    if interval is not None and interval not in RATE_INTERVALS:
        raise ValueError(f"{name} must be None, 'wilson' or 'exact', got {interval!r}")
    return interval


def check_gap_interval(gap_interval):
    """``gap_interval=`` of the threshold metrics: None or "bernstein"."""
    if gap_interval is not None and gap_interval not in GAP_INTERVALS:
        raise ValueError(f"gap_interval must be None or 'bernstein', got {gap_interval!r}")
    return gap_interval


def check_threshold_options(thresholds, threshold_interval, gap_interval) -> None:
    """``evaluate``'s interval options of the threshold metrics, checked, and refused without
    ``thresholds=`` where they ask for something (``gap_interval="bernstein"``,
    ``threshold_interval="exact"``): without thresholds there are no rates to bound, and the
    call would drop what was asked without a word. (``"wilson"`` is the default and None asks
    for nothing: both pass.)"""
    check_rate_interval(threshold_interval, "threshold_interval")
    check_gap_interval(gap_interval)
    if thresholds is not None:
        return
    asked = [f"{name}={value!r}" for name, value, default in (
        ("gap_interval", gap_interval, None), ("threshold_interval", threshold_interval, "wilson"))
        if value is not None and value != default]
    if asked:
        raise ValueError(f"{' and '.join(asked)} bound{'s' if len(asked) == 1 else ''} the "
                         f"threshold metrics' rates and gaps, which need thresholds= (e.g. "
                         f"thresholds=[0.5]); without thresholds none are computed")


def wilson_interval(successes, trials, confidence: float):
    """Wilson's score interval of a proportion, elementwise; NaN where there are no trials.

    Examples
    --------
    >>> from fastbias.intervals.thresholds import wilson_interval
    >>> [round(float(v), 4) for v in wilson_interval(3, 10, 0.95)]
    [0.1078, 0.6032]
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    # (k + z^2/2) / (n + z^2) -/+ z sqrt(p (n - k) + z^2/4) / (n + z^2): Wilson's formula
    # with nothing that overflows or underflows at any weight total (z^2/n and n^2 had:
    # NaN below a total of 2e-308, found by review)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denominator = n + z * z
        centre = (k + 0.5 * z * z) / denominator
        half = z * np.sqrt(np.maximum(p * (n - k), 0.0) + 0.25 * z * z) / denominator
        # (the interval holds its estimate: at k = n, centre + half rounded to 1 - 2**-53
        # for some n, below the rate of 1; found by review)
        low = np.where(n > 0, np.clip(np.minimum(centre - half, p), 0.0, 1.0), np.nan)
        high = np.where(n > 0, np.clip(np.maximum(centre + half, p), 0.0, 1.0), np.nan)
    return low, high


def exact_interval(successes, trials, confidence: float):
    """Clopper and Pearson's exact interval of a proportion, elementwise, from beta
    quantiles (scipy: the ``stats`` extra); NaN where there are no trials.

    Examples
    --------
    >>> from fastbias.intervals.thresholds import exact_interval
    >>> [round(float(v), 4) for v in exact_interval(3, 10, 0.95)]
    [0.0667, 0.6525]
    """
    try:
        from scipy import special
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("interval='exact' needs scipy: pip install 'fastbias[stats]' (or "
                          "use interval='wilson')") from error
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        low = np.where(k > 0, _beta_quantile(special, np.maximum(k, 1e-300), n - k + 1.0,
                                             alpha / 2.0), 0.0)
        high = np.where(k < n, _beta_quantile(special, k + 1.0, np.maximum(n - k, 1e-300),
                                              1.0 - alpha / 2.0), 1.0)
    # (no trials, or successes not known: NaN, as Wilson's)
    known = (n > 0) & np.isfinite(k) & np.isfinite(n)
    return np.where(known, low, np.nan), np.where(known, high, np.nan)


#: from here both beta parameters on, a beta quantile is its Cornish-Fisher expansion
#: (within 1e-10 of a standard deviation of the exact one there)
BETA_EXPANSION_FROM = 2.0 ** 30
#: from this ratio of the larger parameter to the smaller on, the beta is its gamma limit:
#: Beta(a, b) * (b + (a - 1) / 2) is Gamma(a) to about (a / b)**2
BETA_GAMMA_FROM = 2.0 ** 40


def _beta_quantile(special, a, b, q: float):
    """The ``q`` quantile of Beta(a, b), elementwise, at any size of the parameters.

    scipy's ``betaincinv`` alone loses its digits near 1e13 trials, returns roots that
    are not (``betaincinv(1000, 1e9, 0.025)`` = 1.9e-6 where the quantile is 9.4e-7) and NaN
    from 1e200 (found by two reviews: an interval 92% of its half-width off, one not
    holding its estimate). So: where both parameters pass :data:`BETA_EXPANSION_FROM`,
    the Cornish-Fisher expansion with the beta's skewness and excess kurtosis (written in
    the mean ``m = a / (a + b)``, so that nothing overflows); where one is
    :data:`BETA_GAMMA_FROM` times the other, the gamma limit (``gammaincinv``); elsewhere
    ``betaincinv``, checked against ``betainc`` and, where it missed, found again by
    bisection on ``betainc`` (which is accurate where defined). ``special``:
    ``scipy.special``."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    shape = a.shape
    a, b = a.ravel(), b.ravel()
    out = np.full(a.shape, np.nan)
    small, big = np.minimum(a, b), np.maximum(a, b)
    large = small > BETA_EXPANSION_FROM
    skewed = ~large & (big >= BETA_GAMMA_FROM * small)
    rest = ~large & ~skewed & np.isfinite(a) & np.isfinite(b)
    if large.any():
        out[large] = _beta_expansion(a[large], b[large], q)
    if skewed.any():  # the smaller parameter's side is a gamma's; the other, one less it
        a_, b_ = a[skewed], b[skewed]
        left = a_ <= b_
        x = np.empty(a_.shape)
        x[left] = special.gammaincinv(a_[left], q) / (b_[left] + (a_[left] - 1.0) / 2.0)
        x[~left] = 1.0 - special.gammaincinv(b_[~left], 1.0 - q) / (
            a_[~left] + (b_[~left] - 1.0) / 2.0)
        out[skewed] = x
    if rest.any():
        a_, b_ = a[rest], b[rest]
        x = np.asarray(special.betaincinv(a_, b_, q), dtype=np.float64)
        missed = ~(np.abs(special.betainc(a_, b_, x) - q) <= 1e-12 * max(q, 1.0 - q))
        if missed.any():
            x[missed] = _bisect_beta(special, a_[missed], b_[missed], q)
        out[rest] = x
    return out.reshape(shape)


def _beta_expansion(a, b, q: float):
    """The Cornish-Fisher quantile of Beta(a, b) (both large), in the mean's terms."""
    z = NormalDist().inv_cdf(q)
    s = a + b
    m = a / s
    spread = m * (1.0 - m)
    sd = np.sqrt(m) * np.sqrt((1.0 - m) / (s + 1.0))
    skew = 2.0 * (1.0 - 2.0 * m) * np.sqrt(s + 1.0) / ((s + 2.0) * np.sqrt(spread))
    kurt = 6.0 * ((1.0 - 2.0 * m) ** 2 * (s + 1.0) / (s + 2.0) - spread) / (spread * (s + 3.0))
    w = (z + skew * (z * z - 1.0) / 6.0 + kurt * (z ** 3 - 3.0 * z) / 24.0
         - skew * skew * (2.0 * z ** 3 - 5.0 * z) / 36.0)
    return m + sd * w


def _bisect_beta(special, a, b, q: float):
    """The ``q`` quantile of Beta(a, b) by bisection on ``betainc`` (increasing in x), to
    the last bits (a quantile may be 1e-300: up to about 1,100 halvings of [0, 1])."""
    low, high = np.zeros(a.shape), np.ones(a.shape)
    for _ in range(1100):
        mid = (low + high) / 2.0
        below = special.betainc(a, b, mid) < q
        low, high = np.where(below, mid, low), np.where(below, high, mid)
        if np.all((high - low) <= 2.0 ** -52 * high):
            break
    return (low + high) / 2.0


def bernstein_gap(k_a, n_a, k_b, n_b, n, confidence: float):
    """The Bernstein interval of ``k_a / n_a - k_b / n_b`` from counts, elementwise: what
    :func:`fastbias.bernstein_interval` gives for ``n`` examples of which ``n_a`` are in
    group A (``k_a`` with cost 1, the rest 0), ``n_b`` in group B (``k_b``), the others in
    neither. Returns ``(low, high)``; NaN where a group is empty."""
    k_a, n_a, k_b, n_b, n = (np.asarray(v, dtype=np.float64).reshape(-1)
                             for v in (k_a, n_a, k_b, n_b, n))
    low = np.full(k_a.shape, np.nan)
    high = np.full(k_a.shape, np.nan)
    at = np.flatnonzero((n_a > 0) & (n_b > 0) & (n >= 2))
    # (elementwise over the rows at once: a loop of bernstein_halfwidth calls took 20 s for
    # 20,000 thresholds x 10 subgroups; the same operations in the same order, so the same bits)
    k_a, n_a, k_b, n_b, n = k_a[at], n_a[at], k_b[at], n_b[at], n[at]
    g_a, g_b = n_a / n, n_b / n
    mean = (k_a / g_a - k_b / g_b) / n  # the amortized disparities' mean
    squares = k_a / (g_a * g_a) + k_b / (g_b * g_b)
    sigma2 = np.maximum((squares - n * mean * mean) / (n - 1.0), 0.0)
    t = halfwidths(n, sigma2, 1.0, np.minimum(g_a, g_b), _log_half_alpha(confidence))
    low[at], high[at] = mean - t, mean + t
    return low, high


#: rates whose gap's Bernstein interval is that of the complement's cost, mirrored: the cost
#: of Ethayarajh's demographic parity (``fastbias.demographic_parity_cost``) and equal
#: opportunity (``fastbias.equal_opportunity_cost``) is ``1 - y_hat``, so the positive rate's
#: and the TPR's gaps take it (the TPR gap's interval is then the FNR gap's, mirrored)
COMPLEMENT_COSTS = ("positive_rate", "tpr")


def attach_threshold_intervals(table: pd.DataFrame, *, interval="wilson",
                               confidence: float = 0.95, gap_interval=None) -> pd.DataFrame:
    """A threshold table (``fastbias.metrics.thresholds.threshold_table``) with
    ``<side>_<rate>_low``/``_high`` after each rate (``interval``: "wilson" or "exact") and
    ``<rate>_gap_low``/``_high`` after each gap (``gap_interval="bernstein"``, unweighted
    rows: the bound counts examples; clipped to [-1, 1], a gap's range). ``attrs`` record
    the methods and ``confidence``."""
    if gap_interval is not None and table.attrs.get("weighted"):
        raise ValueError("gap_interval='bernstein' needs unweighted rows (its bound counts "
                         "examples); interval= gives the rates' intervals of weighted rows")
    out = table.copy()
    if interval is not None:
        method = wilson_interval if interval == "wilson" else exact_interval
        for side in ("subgroup", "background"):
            for rate, (hits, trials) in rate_sets(table, side).items():
                low, high = method(hits, trials, confidence)
                at = out.columns.get_loc(f"{side}_{rate}") + 1
                out.insert(at, f"{side}_{rate}_low", low)
                out.insert(at + 1, f"{side}_{rate}_high", high)
    if gap_interval == "bernstein":
        sub, back = rate_sets(table, "subgroup"), rate_sets(table, "background")
        n = (table[["subgroup_negatives", "subgroup_positives", "background_negatives",
                    "background_positives"]].to_numpy(dtype=np.float64).sum(axis=1))
        for rate in THRESHOLD_RATES:
            if rate in COMPLEMENT_COSTS:
                # the paper's cost 1 - y_hat, mirrored (its plug-in variance is not the same
                # for a cost and its complement: the TPR gap's interval held 0 where the FNR
                # gap's, the same disparity, did not; found by review)
                (k_a, n_a), (k_b, n_b) = sub[rate], back[rate]
                low, high = bernstein_gap(n_a - k_a, n_a, n_b - k_b, n_b, n, confidence)
                low, high = -high, -low
            else:
                low, high = bernstein_gap(*sub[rate], *back[rate], n, confidence)
            # (clipped to a gap's range: on a few rows the bound reaches past it, 3.05 for an
            # FNR gap, and stretched the figures' axes; found by review)
            low, high = np.clip(low, -1.0, 1.0), np.clip(high, -1.0, 1.0)
            at = out.columns.get_loc(f"{rate}_gap") + 1
            out.insert(at, f"{rate}_gap_low", low)
            out.insert(at + 1, f"{rate}_gap_high", high)
    out.attrs = {**table.attrs, "threshold_interval": interval,
                 "threshold_gap_interval": gap_interval, "confidence": confidence}
    return out
