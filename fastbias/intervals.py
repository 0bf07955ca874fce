"""Honest uncertainty for bias metrics: Bernstein bounds, DeLong and the Poisson bootstrap.

Three kinds of interval, all computed from the same sorted sweep as the
metrics themselves (see ``docs/intervals.md`` for what each one bounds and
assumes):

* **Bernstein** (Ethayarajh 2020): :func:`bernstein_halfwidth`,
  :func:`bernstein_min_samples` and :func:`bernstein_interval` for a groupwise
  disparity of costs; :func:`ustatistic_bernstein_interval` and
  :func:`ustatistic_min_samples` give the rigorous (finite-sample, distribution
  free) version for the five threshold-agnostic metrics, each a two-sample
  U-statistic with a kernel in [0, 1].
* **DeLong** (1988) variances of every AUC-type metric from placement values,
  normal intervals and standard errors, and :func:`delong_paired_test` for two
  models scored on the same rows.
* **Poisson bootstrap**: each replicate weights every row by a Poisson(1)
  count; the sort order never changes, so a replicate is one weighted sweep.

:func:`add_intervals` attaches any of them to a table of
:func:`fastbias.bias_metrics`.
"""
from __future__ import annotations

import math
import numbers
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from . import _interval_kernels as IK
from . import _kernels as K
from ._core import (
    Memberships,
    ScoreOrder,
    SweepCounts,
    order_scores,
    prepare_memberships,
    sorted_scores,
    sweep_weighted,
)
from ._validation import (
    UndefinedMetricWarning,
    _to_numpy,
    as_labels,
    as_sample_weight,
    as_scores,
    check_aligned,
    resolve_n_jobs,
    subgroup_rows,
)
from .metrics import (
    AUC_METRICS,
    METRIC_COLUMNS,
    metrics_from_counts,
    overall_auc_from_counts,
)

CI_METHODS = ("delong", "bootstrap", "bernstein")
BERNSTEIN_VARIANCES = ("adaptive", "bound")

# (above sample X, below sample Y) of each metric, as (cell, class) pairs; the AEGs
# are 1/2 - P(X > Y). "subgroup"/"background" cells of the negatives/positives.
_METRIC_SAMPLES = {
    "subgroup_auc": (("subgroup", 1), ("subgroup", 0)),
    "bpsn_auc": (("background", 1), ("subgroup", 0)),
    "bnsp_auc": (("subgroup", 1), ("background", 0)),
    "negative_aeg": (("background", 0), ("subgroup", 0)),
    "positive_aeg": (("background", 1), ("subgroup", 1)),
}
_AEG_METRICS = ("negative_aeg", "positive_aeg")
_METRIC_RANGE = {m: ((-0.5, 0.5) if m in _AEG_METRICS else (0.0, 1.0)) for m in METRIC_COLUMNS}


# ----------------------------------------------------------------------------- checks

def _check_confidence(confidence) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def _check_positive(value, name: str, allow_zero: bool = False) -> np.ndarray:
    arr = np.asarray(value, dtype=np.float64)
    bad = ~np.isfinite(arr) | ((arr < 0) if allow_zero else (arr <= 0))
    if bad.any():
        first = arr.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
        what = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be finite and {what}, got {first!r}")
    return arr


def _bernstein_parameters(sigma2, max_cost, gamma) -> tuple:
    """Checked (sigma2 >= 0, max_cost > 0, gamma in (0, 1]) as floats."""
    sigma2 = float(_check_positive(sigma2, "sigma2", allow_zero=True))
    max_cost = float(_check_positive(max_cost, "max_cost"))
    gamma = float(_check_positive(gamma, "gamma"))
    if gamma > 1:
        raise ValueError(f"gamma is a group frequency and must be in (0, 1], got {gamma}")
    return sigma2, max_cost, gamma


def _log_half_alpha(confidence: float) -> float:
    """``log(2 / (1 - confidence))``, the L of the two-sided Bernstein bound."""
    return math.log(2.0 / (1.0 - confidence))


def _z_value(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def _scalar_or_array(values: np.ndarray, like):
    return float(values) if np.ndim(like) == 0 else values


# ----------------------------------------------------------------------------- Bernstein

def bernstein_halfwidth(n, *, sigma2, max_cost=1.0, gamma, confidence: float = 0.95):
    """Half-width t of the Bernstein-bounded confidence interval (Ethayarajh 2020).

    With ``L = log(2 / (1 - confidence))`` and ``B = 2 * max_cost * L / (3 * gamma)``,

    ``t = (B + sqrt(B**2 + 8 * n * sigma2 * L)) / (2 * n)``,

    the ``t`` at which Bernstein's two-sided bound
    ``2 exp(-n t^2 / (2 sigma2 + 2 C t / (3 gamma)))`` equals ``1 - confidence``:
    with probability at least ``confidence`` the true disparity lies within
    ``t`` of the mean of ``n`` i.i.d. amortized disparities, whose variance is
    at most ``sigma2`` and whose absolute value is at most ``max_cost / gamma``.

    Parameters
    ----------
    n : int or array-like of int
        Number of examples (positive).
    sigma2 : float
        Variance of the amortized disparity per example (e.g. its sample
        variance, or an upper bound).
    max_cost : float, default 1.0
        Largest possible cost C.
    gamma : float
        ``min(gamma_A, gamma_B)``, the frequency of the rarer group, in (0, 1].
    confidence : float, default 0.95
        The rho of the paper.

    Returns
    -------
    float or ndarray
        ``t``, with the shape of ``n``.

    Examples
    --------
    The seed's worked example: WinoBias has 3,160 examples.

    >>> import fastbias
    >>> round(fastbias.bernstein_halfwidth(3160, sigma2=4, max_cost=1, gamma=0.5), 4)
    0.0974
    """
    confidence = _check_confidence(confidence)
    n_arr = _check_positive(n, "n")
    sigma2, max_cost, gamma = _bernstein_parameters(sigma2, max_cost, gamma)
    log_term = _log_half_alpha(confidence)
    b = 2.0 * max_cost * log_term / (3.0 * gamma)
    t = (b + np.sqrt(b * b + 8.0 * n_arr * sigma2 * log_term)) / (2.0 * n_arr)
    return _scalar_or_array(t, n)


def bernstein_min_samples(delta, *, sigma2, max_cost=1.0, gamma, confidence: float = 0.95):
    """Smallest number of examples n whose Bernstein half-width is below ``|delta|``.

    Solving ``bernstein_halfwidth(n) = |delta|`` for n gives
    ``n* = L (2 sigma2 + 2 C |delta| / (3 gamma)) / delta**2`` with
    ``L = log(2 / (1 - confidence))``; the half-width decreases in n, so the
    answer is the smallest integer above ``n*``. With that many examples an
    estimated disparity of ``delta`` excludes 0 at the given confidence.

    Parameters
    ----------
    delta : float or array-like
        The disparity (gap) to resolve; its sign is ignored; must be non-zero.
    sigma2 : float
        Variance of the amortized disparity (or an upper bound on it).
    max_cost : float, default 1.0
        Largest possible cost C.
    gamma : float
        Frequency of the rarer of the two groups, in (0, 1].
    confidence : float, default 0.95

    Returns
    -------
    int or ndarray of int64

    Examples
    --------
    The seed's worked example (C = 1, gamma = 0.5, sigma^2 = 4, rho = 0.95):

    >>> import fastbias
    >>> fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5)
    11903
    """
    confidence = _check_confidence(confidence)
    gap = np.abs(_check_positive(np.abs(np.asarray(delta, dtype=np.float64)), "|delta|"))
    sigma2, max_cost, gamma = _bernstein_parameters(sigma2, max_cost, gamma)
    log_term = _log_half_alpha(confidence)
    n_star = log_term * (2.0 * sigma2 + 2.0 * max_cost * gap / (3.0 * gamma)) / (gap * gap)
    n = np.maximum(np.floor(n_star), 0.0) + 1.0
    # guard the floating-point edge: make t(n) < |delta| <= t(n - 1) hold exactly
    for _ in range(3):
        t_n = bernstein_halfwidth(n, sigma2=sigma2, max_cost=max_cost, gamma=gamma,
                                  confidence=confidence)
        n = np.where(np.asarray(t_n) >= gap, n + 1.0, n)
        t_prev = bernstein_halfwidth(np.maximum(n - 1.0, 1.0), sigma2=sigma2, max_cost=max_cost,
                                     gamma=gamma, confidence=confidence)
        n = np.where((n > 1.0) & (np.asarray(t_prev) < gap), n - 1.0, n)
    out = n.astype(np.int64)
    return int(out) if np.ndim(delta) == 0 else out


@dataclass(frozen=True)
class BernsteinInterval:
    """Result of :func:`bernstein_interval`.

    Attributes
    ----------
    estimate : float
        The disparity estimate: mean cost in group A minus mean cost in group B
        (the mean of the amortized disparities).
    low, high : float
        ``estimate -/+ halfwidth``.
    halfwidth : float
        The Bernstein half-width t.
    sigma2 : float
        Sample variance (ddof=1) of the amortized disparities.
    gamma : float
        ``min(gamma_A, gamma_B)``, the observed frequency of the rarer group.
    n : int
        Number of examples (all of them, including those in neither group).
    n_a, n_b : int
        Examples in group A and group B.
    max_cost, confidence : float
        The settings used.
    amortized : numpy.ndarray
        Per-example amortized disparity ``cost * f(x) / Pr[f = f(x)]``.
    """

    estimate: float
    low: float
    high: float
    halfwidth: float
    sigma2: float
    gamma: float
    n: int
    n_a: int
    n_b: int
    max_cost: float
    confidence: float
    amortized: np.ndarray

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval claims a disparity (0 outside [low, high])."""
        return bool(self.low > 0 or self.high < 0)


def _group_codes(group, group_a, group_b, name: str = "group") -> np.ndarray:
    """+1 for group A, -1 for group B, 0 otherwise (int8)."""
    arr = _to_numpy(group, name)
    codes = np.zeros(arr.shape[0], dtype=np.int8)
    is_a = np.asarray(arr == group_a, dtype=bool)
    is_b = np.asarray(arr == group_b, dtype=bool)
    if (is_a & is_b).any():
        raise ValueError(f"group_a and group_b must differ, got {group_a!r} for both")
    codes[is_a] = 1
    codes[is_b] = -1
    return codes


def bernstein_interval(cost, group, *, max_cost=1.0, confidence: float = 0.95,
                       group_a=1, group_b=-1) -> BernsteinInterval:
    """Bernstein-bounded unfairness from data (Ethayarajh 2020).

    Each example x_i gets the amortized disparity
    ``z_i = c_i * f(x_i) / Pr[f = f(x_i)]`` with ``f = +1`` for group A, ``-1``
    for group B and ``0`` otherwise, the probabilities being the observed group
    frequencies. The mean of ``z`` equals ``mean_A(c) - mean_B(c)``, the
    estimate of the groupwise disparity ``delta = E_A[c] - E_B[c]``; the
    interval is ``mean(z) -/+ t`` with ``t = bernstein_halfwidth(n,
    sigma2=var(z), max_cost, gamma=min(gamma_A, gamma_B), confidence)``.

    The plug-in ``sigma2`` and ``gamma`` make this the paper's procedure, not a
    guaranteed bound; see ``docs/intervals.md``.

    Parameters
    ----------
    cost : array-like of shape (n,)
        Cost ``c(y, y_hat)`` of every example, in ``[0, max_cost]``; see
        :func:`demographic_parity_cost` and :func:`equal_opportunity_cost`.
    group : array-like of shape (n,)
        Which group each example belongs to: values equal to ``group_a`` are
        group A (the protected group), equal to ``group_b`` group B, anything
        else neither.
    max_cost : float, default 1.0
        The largest possible cost C.
    confidence : float, default 0.95
    group_a, group_b : scalar, default 1 and -1
        The values of ``group`` that mark groups A and B.

    Returns
    -------
    BernsteinInterval

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> cost = np.r_[np.ones(300), np.zeros(700), np.ones(200), np.zeros(800)]
    >>> group = np.r_[np.ones(1000), -np.ones(1000)]
    >>> res = fastbias.bernstein_interval(cost, group)
    >>> round(res.estimate, 3), round(res.gamma, 2), res.n
    (0.1, 0.5, 2000)
    >>> round(res.low, 3), round(res.high, 3), res.excludes_zero
    (0.038, 0.162, True)
    """
    confidence = _check_confidence(confidence)
    max_cost = float(_check_positive(max_cost, "max_cost"))
    check_aligned([("cost", cost), ("group", group)])
    c = _to_numpy(cost, "cost")
    if c.dtype == np.bool_:
        c = c.astype(np.float64)
    if not np.issubdtype(c.dtype, np.number):
        raise TypeError(f"cost must be numeric, got dtype {c.dtype}")
    c = c.astype(np.float64)
    codes = _group_codes(group, group_a, group_b)
    if codes.shape[0] != c.shape[0]:
        raise ValueError(f"group has {codes.shape[0]} rows but cost has {c.shape[0]}")
    bad = ~np.isfinite(c) | (c < 0) | (c > max_cost)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"cost must lie in [0, max_cost={max_cost}]: {int(bad.sum())} value(s) "
                         f"outside, e.g. {c[first]!r} at position {first}")
    n = c.shape[0]
    n_a = int(np.count_nonzero(codes == 1))
    n_b = int(np.count_nonzero(codes == -1))
    if n_a == 0 or n_b == 0:
        raise ValueError(f"group A and group B both need examples, got n_A={n_a}, n_B={n_b} "
                         f"(group_a={group_a!r}, group_b={group_b!r})")
    if n < 2:
        raise ValueError("at least 2 examples are needed for a sample variance")
    gamma_a, gamma_b = n_a / n, n_b / n
    amortized = np.zeros(n)
    amortized[codes == 1] = c[codes == 1] / gamma_a
    amortized[codes == -1] = -c[codes == -1] / gamma_b
    estimate = float(amortized.mean())
    sigma2 = float(amortized.var(ddof=1))
    gamma = min(gamma_a, gamma_b)
    t = bernstein_halfwidth(n, sigma2=sigma2, max_cost=max_cost, gamma=gamma,
                            confidence=confidence)
    return BernsteinInterval(estimate, estimate - t, estimate + t, t, sigma2, gamma, n, n_a, n_b,
                             max_cost, confidence, amortized)


def _predictions(y_score, threshold) -> np.ndarray:
    scores = as_scores(y_score, "y_score")
    return scores >= threshold


def demographic_parity_cost(y_score, group, *, threshold: float = 0.5, group_a=1, group_b=-1):
    """Cost and group codes for demographic parity: ``c = 1 - y_hat``.

    ``y_hat = y_score >= threshold``; the disparity ``E_A[c] - E_B[c]`` is
    ``Pr_B[y_hat = 1] - Pr_A[y_hat = 1]``, positive when group A receives the
    positive outcome less often.

    Parameters
    ----------
    y_score : array-like of shape (n,)
        Scores (or 0/1 predictions).
    group : array-like of shape (n,)
        Group of every example (see :func:`bernstein_interval`).
    threshold : float, default 0.5
    group_a, group_b : scalar, default 1 and -1

    Returns
    -------
    (cost, group_codes) : tuple of ndarray
        Costs in {0, 1} and codes +1 (A) / -1 (B) / 0, ready for
        ``bernstein_interval(cost, group_codes)``.

    Examples
    --------
    >>> import fastbias
    >>> cost, codes = fastbias.demographic_parity_cost([0.9, 0.2, 0.7, 0.1], ["a", "a", "b", "x"],
    ...                                                group_a="a", group_b="b")
    >>> cost.tolist(), codes.tolist()
    ([0.0, 1.0, 0.0, 1.0], [1, 1, -1, 0])
    """
    check_aligned([("y_score", y_score), ("group", group)])
    y_hat = _predictions(y_score, threshold)
    codes = _group_codes(group, group_a, group_b)
    if codes.shape[0] != y_hat.shape[0]:
        raise ValueError(f"group has {codes.shape[0]} rows but y_score has {y_hat.shape[0]}")
    return 1.0 - y_hat.astype(np.float64), codes


def equal_opportunity_cost(y_true, y_score, group, *, threshold: float = 0.5,
                           label_threshold: float | None = None, group_a=1, group_b=-1):
    """Cost and group codes for equal opportunity: ``c = 1 - y_hat`` on qualified examples.

    Only examples with ``y_true = 1`` enter group A or B, so the disparity is
    the difference in false-negative rates ``FNR_A - FNR_B`` (equivalently
    ``TPR_B - TPR_A``).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (or fractions with ``label_threshold``).
    y_score : array-like of shape (n,)
    group : array-like of shape (n,)
    threshold : float, default 0.5
        ``y_hat = y_score >= threshold``.
    label_threshold : float, optional
    group_a, group_b : scalar, default 1 and -1

    Returns
    -------
    (cost, group_codes) : tuple of ndarray

    Examples
    --------
    >>> import fastbias
    >>> cost, codes = fastbias.equal_opportunity_cost([1, 0, 1, 1], [0.9, 0.8, 0.2, 0.6],
    ...                                               [1, 1, -1, -1])
    >>> cost.tolist(), codes.tolist()
    ([0.0, 0.0, 1.0, 0.0], [1, 0, -1, -1])
    """
    check_aligned([("y_true", y_true), ("y_score", y_score), ("group", group)])
    labels = as_labels(y_true, "y_true", threshold=label_threshold)
    cost, codes = demographic_parity_cost(y_score, group, threshold=threshold,
                                          group_a=group_a, group_b=group_b)
    if labels.shape[0] != cost.shape[0]:
        raise ValueError(f"y_score has {cost.shape[0]} rows but y_true has {labels.shape[0]}")
    codes = np.where(labels, codes, 0).astype(np.int8)
    return cost, codes


# ---------------------------------------------------- Bernstein for the U-statistic metrics

def ustatistic_bernstein_interval(estimate, size_x, size_y, *, confidence: float = 0.95,
                                  variance: str = "adaptive"):
    """Finite-sample Bernstein interval for ``theta = P(X > Y) + 1/2 P(X = Y)``.

    The estimate is a two-sample U-statistic whose kernel lies in [0, 1].
    Hoeffding (1963, section 5) writes it as an average, over permutations,
    of means of ``k = min(size_x, size_y)`` independent kernel values; by
    convexity Bernstein's inequality applies with ``n -> k``, range ``C/gamma
    -> 1`` and ``sigma2`` the kernel variance:
    ``P(|U - theta| >= t) <= 2 exp(-k t^2 / (2 sigma2 + 2 t / 3))``.

    ``variance="bound"`` uses ``sigma2 = 1/4`` (every kernel in [0, 1]) and gives
    ``estimate -/+ bernstein_halfwidth(k, sigma2=0.25, gamma=1)``.
    ``variance="adaptive"`` uses ``sigma2 = theta (1 - theta)``, which also
    bounds the kernel variance (``h**2 <= h``), and returns every ``theta``
    the bound does not reject: the solutions of
    ``k d^2 <= L (2 theta (1 - theta) + 2 d / 3)`` with ``d = |estimate - theta|``.
    It is never wider than the ``"bound"`` interval and much narrower near 0
    or 1. Both are clipped to [0, 1].

    Parameters
    ----------
    estimate : float or array-like
        Observed ``P(X > Y) + 1/2 P(X = Y)`` (an AUC; for an AEG pass ``1/2 - AEG``).
    size_x, size_y : int or array-like
        Number of rows in the two samples.
    confidence : float, default 0.95
    variance : {"adaptive", "bound"}, default "adaptive"

    Returns
    -------
    (low, high) : tuple of float or ndarray
        NaN where the estimate is NaN or a sample is empty.

    Examples
    --------
    >>> import fastbias
    >>> low, high = fastbias.ustatistic_bernstein_interval(0.8, 400, 1000, variance="bound")
    >>> round(low, 3), round(high, 3)
    (0.729, 0.871)
    >>> low, high = fastbias.ustatistic_bernstein_interval(0.8, 400, 1000)
    >>> round(low, 3), round(high, 3)
    (0.737, 0.851)
    """
    confidence = _check_confidence(confidence)
    if variance not in BERNSTEIN_VARIANCES:
        raise ValueError(f"variance must be one of {BERNSTEIN_VARIANCES}, got {variance!r}")
    theta = np.asarray(estimate, dtype=np.float64)
    k = np.floor(np.minimum(np.asarray(size_x, dtype=np.float64),
                            np.asarray(size_y, dtype=np.float64)))
    theta, k = np.broadcast_arrays(theta, k)
    outside = np.isfinite(theta) & ((theta < -1e-12) | (theta > 1 + 1e-12))
    if outside.any():
        raise ValueError(f"estimate must lie in [0, 1], got {theta[outside].reshape(-1)[0]!r}")
    log_term = _log_half_alpha(confidence)
    ok = np.isfinite(theta) & (k >= 1)
    low = np.full(theta.shape, np.nan)
    high = np.full(theta.shape, np.nan)
    kk = np.where(ok, k, 1.0)
    th = np.clip(np.where(ok, theta, 0.5), 0.0, 1.0)
    if variance == "bound":
        b = 2.0 * log_term / 3.0
        t = (b + np.sqrt(b * b + 8.0 * kk * 0.25 * log_term)) / (2.0 * kk)
        up, down = t, t
    else:
        # (k + 2L) d^2 - (2L/3 +/- 2L(1 - 2 theta)) d - 2L theta (1 - theta) <= 0
        a = kk + 2.0 * log_term
        c = 2.0 * log_term * th * (1.0 - th)

        def root(linear):
            return (linear + np.sqrt(linear * linear + 4.0 * a * c)) / (2.0 * a)

        up = root(2.0 * log_term / 3.0 + 2.0 * log_term * (1.0 - 2.0 * th))
        down = root(2.0 * log_term / 3.0 - 2.0 * log_term * (1.0 - 2.0 * th))
    low[ok] = np.clip(th - down, 0.0, 1.0)[ok]
    high[ok] = np.clip(th + up, 0.0, 1.0)[ok]
    return _scalar_or_array(low, estimate), _scalar_or_array(high, estimate)


def ustatistic_min_samples(gap, *, confidence: float = 0.95, sigma2: float = 0.25):
    """Rows the smaller sample needs before a U-statistic metric resolves ``gap``.

    The smallest ``k = min(size_x, size_y)`` at which the Bernstein half-width
    of :func:`ustatistic_bernstein_interval` (``variance="bound"`` form, or
    ``sigma2`` if you know a smaller kernel variance) is below ``|gap|``: e.g.
    how many subgroup negatives a BPSN AUC needs before a distance ``gap``
    from 1/2, or from another model's value, is significant.
    It is :func:`bernstein_min_samples` with ``max_cost = gamma = 1``.

    Parameters
    ----------
    gap : float or array-like
        The difference in AUC (or AEG) to resolve, non-zero.
    confidence : float, default 0.95
    sigma2 : float, default 0.25
        Upper bound on the kernel variance (at most 1/4; ``theta (1 - theta)``
        for a metric near ``theta``).

    Returns
    -------
    int or ndarray of int64

    Examples
    --------
    >>> import fastbias
    >>> fastbias.ustatistic_min_samples(0.05)
    787
    """
    sigma2 = float(_check_positive(sigma2, "sigma2", allow_zero=True))
    if sigma2 > 0.25:
        raise ValueError(f"a kernel in [0, 1] has variance at most 1/4, got sigma2={sigma2}")
    return bernstein_min_samples(gap, sigma2=sigma2, max_cost=1.0, gamma=1.0,
                                 confidence=confidence)


# ----------------------------------------------------------------------------- DeLong

def _delong_variance(u, sq_x, sq_y, w_x, w_y):
    """DeLong variance from placement sums (frequency-weight semantics).

    ``theta = u / (w_x w_y)``; ``S10 = (sq_x / w_y^2 - w_x theta^2) / (w_x - 1)``,
    ``S01 = (sq_y / w_x^2 - w_y theta^2) / (w_y - 1)``; var = S10/w_x + S01/w_y.
    NaN where a sample has total weight <= 1.
    """
    u, sq_x, sq_y, w_x, w_y = (np.asarray(v, dtype=np.float64) for v in (u, sq_x, sq_y, w_x, w_y))
    ok = (w_x > 1) & (w_y > 1)
    wx = np.where(ok, w_x, 2.0)
    wy = np.where(ok, w_y, 2.0)
    theta = u / (wx * wy)
    s10 = np.maximum(sq_x / (wy * wy) - wx * theta * theta, 0.0) / (wx - 1.0)
    s01 = np.maximum(sq_y / (wx * wx) - wy * theta * theta, 0.0) / (wy - 1.0)
    return np.where(ok, s10 / wx + s01 / wy, np.nan)


def _class_cumulative(rows, weights):
    if weights is None:
        return np.arange(rows.shape[0] + 1, dtype=np.float64)
    return K.cumulative_weights(rows, weights)


def delong_standard_errors(scores: np.ndarray, memberships: Memberships,
                           sample_weight: np.ndarray | None = None):
    """DeLong standard errors of the five metrics per subgroup and of the overall AUC.

    Internal building block of :func:`add_intervals` (validated arrays in).
    Returns ``(se, overall_se)``: ``se`` maps each metric to an array with one
    entry per subgroup. One sort and one sweep, ``O(n log n + memberships)``.
    """
    m = memberships
    order = order_scores(scores, m)
    neg_cumw = _class_cumulative(order.neg_rows, sample_weight)
    pos_cumw = _class_cumulative(order.pos_rows, sample_weight)
    total_neg, total_pos = float(neg_cumw[-1]), float(pos_cumw[-1])
    # overall AUC: X = all positives, Y = all negatives
    pos_place, neg_place = IK.class_placements(order.neg_sorted, neg_cumw, order.pos_sorted,
                                               pos_cumw)
    if sample_weight is None:
        w_pos = np.ones(pos_place.shape[0])
        w_neg = np.ones(neg_place.shape[0])
    else:
        w_pos = sample_weight[order.pos_rows]
        w_neg = sample_weight[order.neg_rows]
    overall_var = _delong_variance(np.dot(w_pos, pos_place), np.dot(w_pos, pos_place ** 2),
                                   np.dot(w_neg, neg_place ** 2), total_pos, total_neg)
    overall_se = float(np.sqrt(overall_var))
    if m.n_groups == 0:
        return {metric: np.empty(0) for metric in METRIC_COLUMNS}, overall_se

    neg_lt, neg_le = K.rank_bounds_in_sorted(order.neg_sorted, order.id_scores, order.id_order)
    pos_lt, pos_le = K.rank_bounds_in_sorted(order.pos_sorted, order.id_scores, order.id_order)
    neg_below, neg_at = IK.weights_at_bounds(neg_cumw, neg_lt, neg_le)
    pos_below, pos_at = IK.weights_at_bounds(pos_cumw, pos_lt, pos_le)
    id_weights = (np.ones(m.identity_rows.shape[0]) if sample_weight is None
                  else np.ascontiguousarray(sample_weight[m.identity_rows], dtype=np.float64))
    sums, cells = IK.delong_subgroup_sums(order.id_scores, order.id_order, m.identity_labels,
                                          id_weights, m.row_ptr, m.row_groups, neg_below, neg_at,
                                          pos_below, pos_at, total_neg, total_pos, m.n_groups)
    # cell weights; a background cell with no rows has weight 0 (not a float remainder)
    n_neg_rows, n_pos_rows = m.class_rows
    weight = {
        ("subgroup", 0): cells[:, 0],
        ("subgroup", 1): cells[:, 1],
        ("background", 0): np.where(n_neg_rows - m.cell_rows[:, 0] > 0, total_neg - cells[:, 0], 0.),
        ("background", 1): np.where(n_pos_rows - m.cell_rows[:, 1] > 0, total_pos - cells[:, 1], 0.),
    }
    se = {}
    for j, metric in enumerate(METRIC_COLUMNS):
        x_cell, y_cell = _METRIC_SAMPLES[metric]
        var = _delong_variance(sums[:, IK.U_SUM + j], sums[:, IK.SQ_X + j], sums[:, IK.SQ_Y + j],
                               weight[x_cell], weight[y_cell])
        se[metric] = np.sqrt(var)
    return se, overall_se


def _normal_interval(estimate, se, z, bounds):
    low = np.clip(estimate - z * se, *bounds)
    high = np.clip(estimate + z * se, *bounds)
    return low, high


def _warn_missing_se(table: pd.DataFrame, se: dict, method: str) -> None:
    problems = []
    for metric in METRIC_COLUMNS:
        value = table[metric].to_numpy(dtype=np.float64)
        bad = np.isfinite(value) & ~np.isfinite(se[metric])
        problems += [f"{name}: {metric}" for name in table.index[bad]]
    if problems:
        shown = "; ".join(problems[:12]) + (f"; ... {len(problems) - 12} more"
                                             if len(problems) > 12 else "")
        warnings.warn(f"{len(problems)} {method} interval(s) undefined (a cell with fewer than 2 "
                      f"rows), set to NaN: {shown}", UndefinedMetricWarning, stacklevel=3)


# ----------------------------------------------------------------------------- paired DeLong

def delong_paired_test(y_true, scores_a, scores_b, subgroups=None, *, sample_weight=None,
                       label_threshold: float | None = None,
                       subgroup_threshold: float | None = None,
                       confidence: float = 0.95) -> pd.DataFrame:
    """DeLong's paired test of the difference between two models on the same rows.

    For the overall AUC and, per subgroup, each of the five metrics, the two
    models' estimates share the rows, so their DeLong structural components are
    correlated; the variance of the difference is
    ``var_a + var_b - 2 cov_ab`` with ``cov_ab = S10_ab / m + S01_ab / n``
    (DeLong, DeLong & Clarke-Pearson 1988). ``z = difference / se`` and the
    p-value is two-sided under the normal approximation.

    Cost: one sort per model and one ``O(n)`` pass per subgroup and metric.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (or fractions with ``label_threshold``).
    scores_a, scores_b : array-like of shape (n,)
        The two models' scores.
    subgroups : DataFrame, dict of masks or (n, k) array, optional
        As for :func:`fastbias.bias_metrics`; without it only the overall AUC
        is compared.
    sample_weight : array-like of shape (n,), optional
        Frequency weights (a weight of 2 counts a row twice).
    label_threshold, subgroup_threshold : float, optional
    confidence : float, default 0.95
        For the interval of the difference.

    Returns
    -------
    pandas.DataFrame
        Index ``(subgroup, metric)``; the first row is ``("overall",
        "overall_auc")``. Columns ``value_a``, ``value_b``, ``difference``
        (a - b), ``se_a``, ``se_b``, ``correlation``, ``difference_se``,
        ``difference_low``, ``difference_high``, ``z``, ``p_value``.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(2000) < 0.4
    >>> good = y + rng.normal(0, 0.7, 2000)
    >>> noisy = y + rng.normal(0, 1.2, 2000)
    >>> res = fastbias.delong_paired_test(y, good, noisy)
    >>> row = res.loc[("overall", "overall_auc")]
    >>> bool(row["difference"] > 0), bool(row["p_value"] < 1e-6)
    (True, True)
    """
    confidence = _check_confidence(confidence)
    check_aligned([("y_true", y_true), ("scores_a", scores_a), ("scores_b", scores_b),
                   ("subgroups", subgroups), ("sample_weight", sample_weight)])
    labels = as_labels(y_true, "y_true", threshold=label_threshold)
    n = labels.shape[0]
    sa = as_scores(scores_a, "scores_a", n)
    sb = as_scores(scores_b, "scores_b", n)
    weights = as_sample_weight(sample_weight, n)
    w = np.ones(n) if weights is None else weights
    if subgroups is None:
        names, rows = [], []
    else:
        names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    z_crit = _z_value(confidence)
    memberships = prepare_memberships(labels, rows, names)
    orders = [order_scores(s, memberships) for s in (sa, sb)]

    class _Sample:
        """One sample for both models, each array in that model's score order: scores,
        weights, skip flags (rows left out of a background cell); ``perm_ab`` maps
        model a's positions to model b's; ``place`` receives the placements."""

        def __init__(self, scores, weights, perm_ab):
            size = scores[0].shape[0]
            self.scores, self.weights, self.perm_ab = scores, weights, perm_ab
            self.skip = [np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)]
            self.no_skip = np.zeros(size, dtype=bool)
            self.place = [np.empty(size), np.empty(size)]

    classes, positions = {}, {}
    for label in (0, 1):
        class_rows = [o.pos_rows if label else o.neg_rows for o in orders]
        positions[label] = []
        for k in range(2):
            pos_k = np.empty(n, dtype=np.int64)
            pos_k[class_rows[k]] = np.arange(class_rows[k].shape[0])
            positions[label].append(pos_k)
        classes[label] = _Sample([o.pos_sorted if label else o.neg_sorted for o in orders],
                                 [np.ascontiguousarray(w[r]) for r in class_rows],
                                 positions[label][1][class_rows[0]])

    def cell_sample(cell_rows):
        idx = [np.argsort(K.gather_scores(s, cell_rows), kind="stable") for s in (sa, sb)]
        rank_b = np.empty(cell_rows.shape[0], dtype=np.int64)
        rank_b[idx[1]] = np.arange(cell_rows.shape[0])
        sorted_rows = [cell_rows[i] for i in idx]
        return _Sample([K.gather_scores(s, r) for s, r in zip((sa, sb), sorted_rows)],
                       [np.ascontiguousarray(w[r]) for r in sorted_rows], rank_b[idx[0]])

    def compare(c: _Sample, s: _Sample, c_is_x: bool, exclude: bool = False):
        """(theta_a, theta_b, var_a, var_b, cov_ab); c leaves out its flagged rows if exclude."""
        c_skip = c.skip if exclude else [c.no_skip, c.no_skip]
        for k in range(2):
            w_x, w_y = IK.merged_placements(c.scores[k], c.weights[k], c_skip[k], s.scores[k],
                                            s.weights[k], c_is_x, c.place[k], s.place[k])
        mom = IK.paired_moments(c.weights[0], c_skip[0], c.place[0], c.place[1], c.perm_ab,
                                s.weights[0], s.no_skip, s.place[0], s.place[1], s.perm_ab,
                                c_is_x)
        if not (w_x > 0 and w_y > 0):
            return np.nan, np.nan, np.nan, np.nan, np.nan
        ta = mom[0, 0] / (w_x * w_y)
        tb = mom[0, 1] / (w_x * w_y)
        if not (w_x > 1 and w_y > 1):
            return ta, tb, np.nan, np.nan, np.nan

        def cov(col, tp, tq):
            s10 = (mom[0, col] / (w_y * w_y) - w_x * tp * tq) / (w_x - 1.0)
            s01 = (mom[1, col] / (w_x * w_x) - w_y * tp * tq) / (w_y - 1.0)
            return s10 / w_x + s01 / w_y

        return (ta, tb, max(cov(2, ta, ta), 0.0), max(cov(3, tb, tb), 0.0), cov(4, ta, tb))

    records, index = [], []

    def add(key, metric, result):
        ta, tb, var_a, var_b, cov_ab = result
        if metric in _AEG_METRICS:
            ta, tb = 0.5 - ta, 0.5 - tb
        diff = ta - tb
        var_diff = max(var_a + var_b - 2.0 * cov_ab, 0.0) if np.isfinite(var_a) else np.nan
        se_diff = math.sqrt(var_diff) if np.isfinite(var_diff) else np.nan
        corr = (cov_ab / math.sqrt(var_a * var_b)
                if np.isfinite(var_a) and var_a > 0 and var_b > 0 else np.nan)
        if np.isfinite(se_diff) and se_diff > 0:
            z = diff / se_diff
            p_value = math.erfc(abs(z) / math.sqrt(2.0))
        elif np.isfinite(se_diff) and np.isfinite(diff):
            z = 0.0 if diff == 0 else math.copysign(math.inf, diff)
            p_value = 1.0 if diff == 0 else 0.0
        else:
            z = p_value = np.nan
        index.append((key, metric))
        records.append({
            "value_a": ta, "value_b": tb, "difference": diff,
            "se_a": math.sqrt(var_a) if np.isfinite(var_a) else np.nan,
            "se_b": math.sqrt(var_b) if np.isfinite(var_b) else np.nan,
            "correlation": corr, "difference_se": se_diff,
            "difference_low": diff - z_crit * se_diff, "difference_high": diff + z_crit * se_diff,
            "z": z, "p_value": p_value,
        })

    add("overall", "overall_auc", compare(classes[1], classes[0], True))
    for name, group_rows in zip(names, rows):
        group_rows = np.asarray(group_rows, dtype=np.int64)
        group_labels = labels[group_rows]
        cell = {label: cell_sample(group_rows[group_labels == bool(label)]) for label in (0, 1)}
        flagged = {}
        for label in (0, 1):  # flag the subgroup's rows in each class's sorted orders
            members = group_rows[group_labels == bool(label)]
            for k in range(2):
                flagged[label, k] = positions[label][k][members]
                classes[label].skip[k][flagged[label, k]] = True
        for metric in METRIC_COLUMNS:
            (x_part, x_label), (y_part, y_label) = _METRIC_SAMPLES[metric]
            if x_part == "subgroup" and y_part == "subgroup":
                result = compare(cell[x_label], cell[y_label], True)
            elif x_part == "background":
                result = compare(classes[x_label], cell[y_label], True, exclude=True)
            else:
                result = compare(classes[y_label], cell[x_label], False, exclude=True)
            add(name, metric, result)
        for (label, k), flagged_positions in flagged.items():
            classes[label].skip[k][flagged_positions] = False
    out = pd.DataFrame(records, index=pd.MultiIndex.from_tuples(index,
                                                                names=["subgroup", "metric"]))
    return out


# ----------------------------------------------------------------------------- bootstrap

class _Progress:
    """A minimal progress bar on stderr (no dependency), drawn only after 0.5 s."""

    def __init__(self, total: int, enabled: bool, label: str = "bootstrap"):
        self.total = total
        self.enabled = enabled
        self.label = label
        self.done = 0
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False
        self.lock = threading.Lock()

    def update(self, k: int = 1) -> None:
        with self.lock:
            self.done += k
            if not self.enabled:
                return
            now = time.monotonic()
            if now - self.start < 0.5 or (now - self.last_draw < 0.1 and self.done < self.total):
                return
            self.last_draw = now
            self.drawn = True
            frac = self.done / self.total
            bar = "#" * int(30 * frac)
            sys.stderr.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total} "
                             f"{now - self.start:5.1f}s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _seed_sequence(random_state) -> np.random.SeedSequence:
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2 ** 63)))
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, bool) and random_state >= 0):
        return np.random.SeedSequence(random_state)
    raise TypeError(f"random_state must be None, a non-negative int, a numpy Generator or a "
                    f"SeedSequence, got {random_state!r}")


def replicate_counts(seed: np.random.SeedSequence, n: int,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Poisson(1) counts (uint8) of ``n`` rows for one replicate, drawn from its own seed.

    Each count inverts one 32-bit uniform integer from ``PCG64(seed)`` (two
    per raw 64-bit draw), so each Poisson probability is exact to 2**-32.
    """
    out = np.empty(n, dtype=np.uint8) if out is None else out
    raw = np.random.PCG64(seed).random_raw((n + 1) // 2)
    return IK.poisson_one_counts(raw.view(np.uint32), out)


def replicate_weights(seed: np.random.SeedSequence, base_weight: np.ndarray) -> np.ndarray:
    """Poisson(1) counts times ``base_weight`` for one replicate (drawn from its own seed)."""
    base_weight = np.asarray(base_weight, dtype=np.float64)
    return replicate_counts(seed, base_weight.shape[0]) * base_weight


@dataclass(frozen=True)
class _CountBootstrapPlan:
    """What an unweighted bootstrap replicate needs besides its counts, built once.

    Every (row, subgroup) membership in score order (``scores``, ``codes`` =
    2 * subgroup + label, ``rows``) and the classes' rows in score order.
    """

    order: ScoreOrder
    scores: np.ndarray
    codes: np.ndarray
    rows: np.ndarray

    @classmethod
    def build(cls, scores: np.ndarray, m: Memberships, order: ScoreOrder):
        per_row = np.diff(m.row_ptr)
        rows = np.repeat(m.identity_rows, per_row)
        codes = 2 * m.row_groups + np.repeat(m.identity_labels, per_row)
        member_scores, by_score = sorted_scores(scores, rows, with_order=True)
        return cls(order, member_scores, np.ascontiguousarray(codes[by_score]),
                   np.ascontiguousarray(rows[by_score]))

    def counts(self, row_counts: np.ndarray, n_groups: int) -> tuple:
        """Exact integer-weighted sweep: (counts (n_groups, 7), total neg, total pos, twice U)."""
        o = self.order
        neg_cum, _ = IK.class_count_prefix(row_counts, o.neg_rows)
        pos_cum, pos_w = IK.class_count_prefix(row_counts, o.pos_rows)
        member_w = row_counts[self.rows].astype(np.int64)
        counts = K.finish_member_counts(K.member_counts_in_range(
            self.scores, self.codes, 0, self.scores.shape[0], o.neg_sorted, o.pos_sorted,
            n_groups, member_w, neg_cum, pos_cum))
        twice_u = K.twice_auc_numerator_sorted_weighted(o.neg_sorted, neg_cum, o.pos_sorted, pos_w)
        return counts, neg_cum[-1], pos_cum[-1], twice_u


def _final_metric_values(overall, metrics: dict, power: float = -5.0,
                         overall_weight: float = 0.25):
    """Jigsaw final metric, vectorised over leading axes (NaN propagates).

    ``metrics[name]`` has the subgroups on the last axis.
    """
    parts = []
    for name in AUC_METRICS:
        x = np.asarray(metrics[name], dtype=np.float64)
        with np.errstate(divide="ignore"):
            parts.append(np.mean(np.power(x, power), axis=-1) ** (1.0 / power))
    return overall_weight * np.asarray(overall) + (1.0 - overall_weight) * np.mean(parts, axis=0)


@dataclass(frozen=True)
class BootstrapReplicates:
    """Metric values of every Poisson-bootstrap replicate.

    Attributes
    ----------
    metrics : dict of str -> ndarray of shape (n_boot, n_groups)
    overall_auc : ndarray of shape (n_boot,)
    final_metric : ndarray of shape (n_boot,)
        NaN for a replicate where a per-subgroup AUC is undefined, or without
        subgroups.
    seeds : list of numpy.random.SeedSequence
        One per replicate; :func:`replicate_weights` regenerates its weights.
    """

    metrics: dict
    overall_auc: np.ndarray
    final_metric: np.ndarray
    seeds: list


def bootstrap_replicates(scores: np.ndarray, memberships: Memberships,
                         sample_weight: np.ndarray | None = None, *, n_boot: int = 1000,
                         random_state=None, progress=None,
                         n_jobs: int | None = None) -> BootstrapReplicates:
    """Run the Poisson bootstrap: one sort, then one weighted sweep per replicate.

    Replicate b weights row i by ``K_bi * sample_weight_i`` with
    ``K_bi ~ Poisson(1)`` drawn from its own child of ``SeedSequence(random_state)``,
    so results do not depend on ``n_jobs``. Replicates run in threads (the
    kernels release the GIL).
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    n_boot = int(n_boot)
    m = memberships
    n = m.n_rows
    order = order_scores(scores, m)
    seeds = _seed_sequence(random_state).spawn(n_boot)
    base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    counts = np.empty((n_boot, m.n_groups, K.N_COUNT_COLUMNS))
    class_totals = np.empty((n_boot, 2))
    twice_overall_u = np.empty(n_boot)
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    bar = _Progress(n_boot, bool(progress))

    # without sample weights a replicate's weights are small integers: an exact integer sweep
    plan = _CountBootstrapPlan.build(scores, m, order) if sample_weight is None else None

    def run(chunk):
        row_counts = np.empty(n, dtype=np.uint8)
        for b in chunk:
            replicate_counts(seeds[b], n, row_counts)
            if plan is not None:
                counts[b], class_totals[b, 0], class_totals[b, 1], twice_overall_u[b] = \
                    plan.counts(row_counts, m.n_groups)
            else:
                sc = sweep_weighted(order, m, row_counts * base, certify=False)
                counts[b] = sc.counts
                class_totals[b] = sc.total_neg, sc.total_pos
                twice_overall_u[b] = sc.twice_overall_u
            bar.update(1)

    workers = resolve_n_jobs(n_jobs, n_boot, default_cap=8)
    chunk_size = max(1, min(64, n_boot // (4 * workers) or 1))
    chunks = [range(i, min(i + chunk_size, n_boot)) for i in range(0, n_boot, chunk_size)]
    try:
        if workers == 1:
            for chunk in chunks:
                run(chunk)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(run, chunks))
    finally:
        bar.close()
    # all replicates' metrics at once: the replicates stacked as rows of one SweepCounts
    k = m.n_groups
    stacked = SweepCounts(list(m.names) * n_boot, counts.reshape(n_boot * k, -1),
                          np.repeat(class_totals[:, 0], k), np.repeat(class_totals[:, 1], k),
                          0.0, np.tile(m.cell_rows, (n_boot, 1)), m.class_rows, True)
    values = {metric: v.reshape(n_boot, k) for metric, v in metrics_from_counts(stacked).items()}
    den = 2.0 * class_totals[:, 0] * class_totals[:, 1]
    overall = np.full(n_boot, np.nan)
    np.divide(twice_overall_u, den, out=overall, where=den > 0)
    if m.n_groups:
        final = _final_metric_values(overall, values)
    else:
        final = np.full(n_boot, np.nan)
    return BootstrapReplicates(values, overall, final, seeds)


def _percentile_interval(reps: np.ndarray, confidence: float):
    """Percentile interval and standard error over the finite replicates (axis 0)."""
    alpha = 1.0 - confidence
    reps = np.asarray(reps, dtype=np.float64)
    finite = np.isfinite(reps)
    count = finite.sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        low, high = np.nanquantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        se = np.nanstd(reps, axis=0, ddof=1)
    enough = count >= 2
    return (np.where(enough, low, np.nan), np.where(enough, high, np.nan),
            np.where(enough, se, np.nan), count)


# ----------------------------------------------------------------------------- table

def add_intervals(table: pd.DataFrame, *, method: str, scores: np.ndarray,
                  memberships: Memberships, sample_weight: np.ndarray | None = None,
                  confidence: float = 0.95, n_boot: int = 1000, random_state=None,
                  progress=None, n_jobs: int | None = None,
                  bernstein_variance: str = "adaptive") -> pd.DataFrame:
    """Add ``<metric>_low``/``<metric>_high`` (and ``<metric>_se``) columns to a metrics table.

    Parameters
    ----------
    table : pandas.DataFrame
        The per-subgroup table of :func:`fastbias.bias_metrics` (index =
        subgroup names in ``memberships`` order).
    method : {"delong", "bootstrap", "bernstein"}
        * ``"delong"``: normal interval ``estimate -/+ z * se`` with DeLong's
          standard error, clipped to the metric's range.
        * ``"bootstrap"``: percentile interval of ``n_boot`` Poisson-bootstrap
          replicates (se = standard deviation of the replicates); also gives
          the Jigsaw final metric's interval in ``attrs``.
        * ``"bernstein"``: the finite-sample interval of
          :func:`ustatistic_bernstein_interval` (no se; unweighted data only).
    scores : ndarray
        The validated scores the table was computed from.
    memberships : Memberships
        From ``fastbias._core.prepare_memberships``.
    sample_weight : ndarray, optional
        Row weights, as for the table. DeLong treats them as frequency weights;
        the bootstrap multiplies them by the Poisson counts.
    confidence : float, default 0.95
    n_boot : int, default 1000
    random_state : int, numpy Generator or SeedSequence, optional
        Seed of the bootstrap.
    progress : bool, optional
        Progress bar for the bootstrap; default: only when stderr is a terminal.
    n_jobs : int, optional
        Threads for the bootstrap replicates (results do not depend on it).
    bernstein_variance : {"adaptive", "bound"}, default "adaptive"
        See :func:`ustatistic_bernstein_interval`.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with, for each of the five metrics, columns
        ``<metric>_low``, ``<metric>_high`` and (DeLong, bootstrap)
        ``<metric>_se``. ``attrs`` gains ``ci_method``, ``confidence``,
        ``overall_auc_low``, ``overall_auc_high`` (and ``overall_auc_se``);
        the bootstrap adds ``final_metric``, ``final_metric_low``,
        ``final_metric_high``, ``final_metric_se`` and ``n_boot``.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> from fastbias._core import prepare_memberships
    >>> from fastbias.intervals import add_intervals
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(1000) < 0.5
    >>> s = y + rng.normal(0, 1, 1000)
    >>> g = rng.random(1000) < 0.3
    >>> table = fastbias.bias_metrics(y, s, {"g": g})
    >>> m = prepare_memberships(y, [np.flatnonzero(g)], ["g"])
    >>> out = add_intervals(table, method="delong", scores=s, memberships=m)
    >>> bool(out.loc["g", "subgroup_auc_low"] < out.loc["g", "subgroup_auc"]
    ...      < out.loc["g", "subgroup_auc_high"])
    True
    >>> [c for c in out.columns if c.startswith("subgroup_auc")]
    ['subgroup_auc', 'subgroup_auc_low', 'subgroup_auc_high', 'subgroup_auc_se']
    >>> sorted(k for k in out.attrs if k.startswith("overall_auc_"))
    ['overall_auc_high', 'overall_auc_low', 'overall_auc_se']
    """
    if method not in CI_METHODS:
        raise ValueError(f"method must be one of {CI_METHODS}, got {method!r}")
    confidence = _check_confidence(confidence)
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in METRIC_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks metric column(s) {missing}")
    if list(map(str, table.index)) != list(memberships.names):
        raise ValueError(f"table index {list(table.index)[:5]} does not match the memberships' "
                         f"subgroups {list(memberships.names)[:5]} (same names, same order)")
    scores = np.asarray(scores)
    if scores.shape != (memberships.n_rows,):
        raise ValueError(f"scores has shape {scores.shape} but the memberships cover "
                         f"{memberships.n_rows} rows")
    if sample_weight is not None:
        sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (memberships.n_rows,):
            raise ValueError(f"sample_weight has shape {sample_weight.shape} but the memberships "
                             f"cover {memberships.n_rows} rows")

    out = table.copy()
    out.attrs = dict(table.attrs)
    overall_point = out.attrs.get("overall_auc")
    if overall_point is None:
        sc = sweep_weighted(order_scores(scores, memberships), memberships,
                            np.ones(memberships.n_rows) if sample_weight is None
                            else sample_weight)
        overall_point = overall_auc_from_counts(sc)
    overall_point = float(overall_point)
    new_columns = {}
    attrs = {"ci_method": method, "confidence": confidence}

    if method == "delong":
        se, overall_se = delong_standard_errors(scores, memberships, sample_weight)
        z = _z_value(confidence)
        for metric in METRIC_COLUMNS:
            est = out[metric].to_numpy(dtype=np.float64)
            low, high = _normal_interval(est, se[metric], z, _METRIC_RANGE[metric])
            new_columns.update({f"{metric}_low": low, f"{metric}_high": high,
                                f"{metric}_se": se[metric]})
        low, high = _normal_interval(overall_point, overall_se, z, (0.0, 1.0))
        attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                     overall_auc_se=overall_se)
        _warn_missing_se(out, se, "DeLong")
    elif method == "bootstrap":
        reps = bootstrap_replicates(scores, memberships, sample_weight, n_boot=n_boot,
                                    random_state=random_state, progress=progress, n_jobs=n_jobs)
        undefined = []
        for metric in METRIC_COLUMNS:
            low, high, se, count = _percentile_interval(reps.metrics[metric], confidence)
            new_columns.update({f"{metric}_low": low, f"{metric}_high": high,
                                f"{metric}_se": se})
            defined = np.isfinite(out[metric].to_numpy(dtype=np.float64))
            undefined += [f"{name}: {metric} ({n_boot - int(c)})"
                          for name, c, d in zip(out.index, count, defined) if d and c < n_boot]
        low, high, se, _ = _percentile_interval(reps.overall_auc, confidence)
        attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                     overall_auc_se=float(se), n_boot=int(n_boot))
        if memberships.n_groups:
            point = {m_: out[m_].to_numpy(dtype=np.float64) for m_ in AUC_METRICS}
            final_point = float(_final_metric_values(overall_point, point))
            low, high, se, count = _percentile_interval(reps.final_metric, confidence)
            attrs.update(final_metric=final_point, final_metric_low=float(low),
                         final_metric_high=float(high), final_metric_se=float(se))
        if undefined:
            shown = "; ".join(undefined[:12]) + (f"; ... {len(undefined) - 12} more"
                                                 if len(undefined) > 12 else "")
            warnings.warn(f"{len(undefined)} metric(s) were undefined in some bootstrap replicates "
                          f"(an emptied cell; the interval uses the others; count in "
                          f"parentheses): {shown}", UndefinedMetricWarning, stacklevel=2)
    else:
        if sample_weight is not None:
            raise ValueError("the Bernstein interval needs unweighted rows (it counts independent "
                             "examples); use ci='delong' or 'bootstrap' with sample_weight")
        n_neg_rows, n_pos_rows = memberships.class_rows
        cell_rows = memberships.cell_rows
        size = {("subgroup", 0): cell_rows[:, 0], ("subgroup", 1): cell_rows[:, 1],
                ("background", 0): n_neg_rows - cell_rows[:, 0],
                ("background", 1): n_pos_rows - cell_rows[:, 1]}
        for metric in METRIC_COLUMNS:
            x_cell, y_cell = _METRIC_SAMPLES[metric]
            est = out[metric].to_numpy(dtype=np.float64)
            if metric in _AEG_METRICS:
                lo, hi = ustatistic_bernstein_interval(
                    np.clip(0.5 - est, 0.0, 1.0), size[x_cell], size[y_cell],
                    confidence=confidence, variance=bernstein_variance)
                low, high = 0.5 - hi, 0.5 - lo
            else:
                low, high = ustatistic_bernstein_interval(
                    np.clip(est, 0.0, 1.0), size[x_cell], size[y_cell], confidence=confidence,
                    variance=bernstein_variance)
            new_columns.update({f"{metric}_low": np.asarray(low, dtype=np.float64),
                                f"{metric}_high": np.asarray(high, dtype=np.float64)})
        low, high = ustatistic_bernstein_interval(min(max(overall_point, 0.0), 1.0)
                                                  if np.isfinite(overall_point) else np.nan,
                                                  n_pos_rows, n_neg_rows, confidence=confidence,
                                                  variance=bernstein_variance)
        attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                     bernstein_variance=bernstein_variance)
    for name, values in new_columns.items():
        out[name] = values
    out.attrs.update(attrs)
    return out


__all__ = [
    "BernsteinInterval",
    "BootstrapReplicates",
    "add_intervals",
    "bernstein_halfwidth",
    "bernstein_interval",
    "bernstein_min_samples",
    "bootstrap_replicates",
    "delong_paired_test",
    "delong_standard_errors",
    "demographic_parity_cost",
    "equal_opportunity_cost",
    "replicate_counts",
    "replicate_weights",
    "ustatistic_bernstein_interval",
    "ustatistic_min_samples",
]
