"""Finite-sample Bernstein intervals for the five metrics, each a two-sample U-statistic."""
from __future__ import annotations

import numpy as np

from ..validate.settings import check_confidence
from .bernstein import (
    _check_positive,
    _log_half_alpha,
    _scalar_or_array,
    least_examples,
)

BERNSTEIN_VARIANCES = ("adaptive", "bound")


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
    confidence = check_confidence(confidence)
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
    return least_examples(gap, "gap", sigma2, 1.0, 1.0, confidence)
