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
from .bernstein import bernstein_halfwidth

RATE_INTERVALS = ("wilson", "exact")
GAP_INTERVALS = ("bernstein",)


def check_rate_interval(interval):
    """``interval=`` of the threshold metrics: None, "wilson" or "exact"."""
    if interval is not None and interval not in RATE_INTERVALS:
        raise ValueError(f"interval must be None, 'wilson' or 'exact', got {interval!r}")
    return interval


def check_gap_interval(gap_interval):
    """``gap_interval=`` of the threshold metrics: None or "bernstein"."""
    if gap_interval is not None and gap_interval not in GAP_INTERVALS:
        raise ValueError(f"gap_interval must be None or 'bernstein', got {gap_interval!r}")
    return gap_interval


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
        low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
        high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
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
        from scipy.special import betaincinv
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("interval='exact' needs scipy: pip install 'fastbias[stats]' (or "
                          "use interval='wilson')") from error
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    alpha = 1.0 - confidence
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        low = np.where(k > 0, _beta_quantile(betaincinv, np.maximum(k, 1e-300), n - k + 1.0,
                                             alpha / 2.0), 0.0)
        high = np.where(k < n, _beta_quantile(betaincinv, k + 1.0, np.maximum(n - k, 1e-300),
                                              1.0 - alpha / 2.0), 1.0)
    return np.where(n > 0, low, np.nan), np.where(n > 0, high, np.nan)


#: from here both beta parameters on, a beta quantile is its Cornish-Fisher expansion:
#: scipy's ``betaincinv`` loses its digits near 1e13 trials (an interval 92% of its
#: half-width off at 1e15 weight, and not holding its estimate at 1e30: found by review),
#: where the expansion is within 1e-10 of a standard deviation of it from 2**30 on
BETA_EXPANSION_FROM = 2.0 ** 30


def _beta_quantile(betaincinv, a, b, q: float):
    """The ``q`` quantile of Beta(a, b), elementwise: ``betaincinv``, or where both ``a``
    and ``b`` exceed :data:`BETA_EXPANSION_FROM`, the Cornish-Fisher expansion with the
    beta's skewness and excess kurtosis (its error falls as 1/min(a, b)), written in the
    mean ``m = a / (a + b)`` so that no product of the parameters overflows."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    out = np.asarray(betaincinv(a, b, q), dtype=np.float64).copy()
    large = (a > BETA_EXPANSION_FROM) & (b > BETA_EXPANSION_FROM)
    if large.any():
        a_, b_ = a[large], b[large]
        z = NormalDist().inv_cdf(q)
        s = a_ + b_
        m = a_ / s
        spread = m * (1.0 - m)
        sd = np.sqrt(spread / (s + 1.0))
        skew = 2.0 * (1.0 - 2.0 * m) * np.sqrt(s + 1.0) / ((s + 2.0) * np.sqrt(spread))
        kurt = 6.0 * ((1.0 - 2.0 * m) ** 2 * (s + 1.0) - spread * (s + 2.0)) / (
            spread * (s + 2.0) * (s + 3.0))
        w = (z + skew * (z * z - 1.0) / 6.0 + kurt * (z ** 3 - 3.0 * z) / 24.0
             - skew * skew * (2.0 * z ** 3 - 5.0 * z) / 36.0)
        out[large] = m + sd * w
    return out


def bernstein_gap(k_a, n_a, k_b, n_b, n, confidence: float):
    """The Bernstein interval of ``k_a / n_a - k_b / n_b`` from counts, elementwise: what
    :func:`fastbias.bernstein_interval` gives for ``n`` examples of which ``n_a`` are in
    group A (``k_a`` with cost 1, the rest 0), ``n_b`` in group B (``k_b``), the others in
    neither. Returns ``(low, high)``; NaN where a group is empty."""
    k_a, n_a, k_b, n_b, n = (np.asarray(v, dtype=np.float64).reshape(-1)
                             for v in (k_a, n_a, k_b, n_b, n))
    low = np.full(k_a.shape, np.nan)
    high = np.full(k_a.shape, np.nan)
    for i in np.flatnonzero((n_a > 0) & (n_b > 0) & (n >= 2)):
        g_a, g_b = n_a[i] / n[i], n_b[i] / n[i]
        mean = (k_a[i] / g_a - k_b[i] / g_b) / n[i]  # the amortized disparities' mean
        squares = k_a[i] / (g_a * g_a) + k_b[i] / (g_b * g_b)
        sigma2 = max((squares - n[i] * mean * mean) / (n[i] - 1.0), 0.0)
        t = bernstein_halfwidth(int(n[i]), sigma2=sigma2, max_cost=1.0, gamma=min(g_a, g_b),
                                confidence=confidence)
        low[i], high[i] = mean - t, mean + t
    return low, high


def attach_threshold_intervals(table: pd.DataFrame, *, interval="wilson",
                               confidence: float = 0.95, gap_interval=None) -> pd.DataFrame:
    """A threshold table (``fastbias.metrics.thresholds.threshold_table``) with
    ``<side>_<rate>_low``/``_high`` after each rate (``interval``: "wilson" or "exact") and
    ``<rate>_gap_low``/``_high`` after each gap (``gap_interval="bernstein"``, unweighted
    rows: the bound counts examples; clipped to [-1, 1], a gap's range). ``attrs`` record the methods and ``confidence``."""
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
