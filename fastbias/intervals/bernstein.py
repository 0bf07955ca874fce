"""Bernstein-bounded unfairness of a groupwise disparity of costs (Ethayarajh 2020, seed 004)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..metrics.thresholds import check_thresholds
from ..validate.columns import _to_numpy, check_aligned
from ..validate.settings import check_confidence
from ..validate.values import NO_POS_LABEL_HINT, as_labels, as_scores


def _check_positive(value, name: str, allow_zero: bool = False) -> np.ndarray:
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.asarray(value).dtype.kind in "bUS":
        raise TypeError(f"{name} must be a number (or numbers), got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except OverflowError:  # (an int past the largest double)
        raise ValueError(f"{name} must be finite, got {value!r}") from None
    bad = ~np.isfinite(arr) | ((arr < 0) if allow_zero else (arr <= 0))
    if bad.any():
        first = arr.reshape(-1)[np.flatnonzero(bad.reshape(-1))[0]]
        what = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be finite and {what}, got {float(first)!r}")
    return arr


def _bernstein_parameters(sigma2, max_cost, gamma) -> tuple:
    """Checked (sigma2 >= 0, max_cost > 0, gamma in (0, 1]) as floats."""
    for name, value in (("sigma2", sigma2), ("max_cost", max_cost), ("gamma", gamma)):
        if np.ndim(value) != 0:  # (float() of a list raised numpy's own words: found by review)
            raise TypeError(f"{name} must be one number, got {value!r}")
    sigma2 = float(_check_positive(sigma2, "sigma2", allow_zero=True))
    max_cost = float(_check_positive(max_cost, "max_cost"))
    gamma = float(_check_positive(gamma, "gamma"))
    if gamma > 1:
        raise ValueError(f"gamma is a group frequency and must be in (0, 1], got {gamma}")
    return sigma2, max_cost, gamma


#: ``bernstein_min_samples`` refuses a ``delta`` needing this many examples or more (2**53:
#: beyond it float64 no longer holds every whole number, and the guard below cannot step
#: by one; found by review: 1e-10 gave -9223372036854775808, a float n cast past int64)
EXACT_EXAMPLES = float(2 ** 53)


def _about(count: float) -> str:
    return f"about {count:.3g}" if np.isfinite(count) else "more than 1.8e+308"


def _log_half_alpha(confidence: float) -> float:
    """``log(2 / (1 - confidence))``, the L of the two-sided Bernstein bound."""
    return math.log(2.0 / (1.0 - confidence))


def _scalar_or_array(values: np.ndarray, like):
    return float(values) if np.ndim(like) == 0 else values


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
    confidence = check_confidence(confidence)
    n_arr = _check_positive(n, "n")
    if not np.all(n_arr == np.floor(n_arr)):  # (a number of examples: found by review)
        flat = n_arr.reshape(-1)
        at = np.flatnonzero(flat != np.floor(flat))[0]
        raise ValueError(f"n must be whole numbers of examples, got {float(flat[at])!r}"
                         + (f" at position {at}" if np.ndim(n) else ""))
    sigma2, max_cost, gamma = _bernstein_parameters(sigma2, max_cost, gamma)
    t = halfwidths(n_arr, sigma2, max_cost, gamma, _log_half_alpha(confidence))
    return _scalar_or_array(t, n)


def halfwidths(n, sigma2, max_cost, gamma, log_term: float):
    """:func:`bernstein_halfwidth`'s formula, elementwise over checked arrays (or floats) of
    ``n``, ``sigma2``, ``max_cost`` and ``gamma``, ``log_term`` its ``L``.

    Written as ``x + sqrt(x**2 + 2 sigma2 L / n)`` with ``x = B / (2 n)``, the same number,
    so that no intermediate overflows: ``8 n sigma2 L`` did for n near 1e307 (found by
    review: a half-width of inf where it is 1.7e-153), and ``hypot`` keeps ``x**2`` from
    underflowing where sigma2 is 0."""
    x = 2.0 * max_cost * log_term / (3.0 * gamma) / 2.0 / n
    return x + np.hypot(x, np.sqrt(2.0 * log_term) * np.sqrt(sigma2) / np.sqrt(n))


def bernstein_min_samples(delta, *, sigma2, max_cost=1.0, gamma, confidence: float = 0.95):
    """Smallest number of examples n whose Bernstein half-width is below ``|delta|``.

    Solving ``bernstein_halfwidth(n) = |delta|`` for n gives
    ``n* = L (2 sigma2 + 2 C |delta| / (3 gamma)) / delta**2`` with
    ``L = log(2 / (1 - confidence))``; the half-width decreases in n, so the
    answer is the smallest integer above ``n*``. With that many examples an
    estimated disparity of ``delta`` excludes 0 at the given confidence.

    The answer is the smallest ``n`` whose half-width, as :func:`bernstein_halfwidth`
    computes it in float64, is below ``|delta|`` (so the two functions agree where
    ``|delta|`` is itself a half-width). Beyond about 10**15 examples the half-widths of
    ``n`` and ``n + 1`` differ by less than their rounding, and that ``n`` can differ from
    the exact ``n*``'s by one; a ``delta`` needing 2**53 examples or more, where whole
    numbers are no longer exact in float64, is refused (ValueError naming it).

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

    Raises
    ------
    ValueError
        A ``delta`` of 0 or not finite, or one needing 2**53 examples or more (its value and,
        for an array, its position named).

    Examples
    --------
    The seed's worked example (C = 1, gamma = 0.5, sigma^2 = 4, rho = 0.95):

    >>> import fastbias
    >>> fastbias.bernstein_min_samples(0.05, sigma2=4, max_cost=1, gamma=0.5)
    11903
    """
    sigma2, max_cost, gamma = _bernstein_parameters(sigma2, max_cost, gamma)
    return least_examples(delta, "delta", sigma2, max_cost, gamma, confidence)


def least_examples(delta, name: str, sigma2: float, max_cost: float, gamma: float,
                   confidence: float):
    """:func:`bernstein_min_samples` of checked parameters, errors naming ``delta`` as the
    caller's argument ``name``."""
    confidence = check_confidence(confidence)
    gap = np.abs(_check_positive(np.abs(np.asarray(delta, dtype=np.float64)), f"|{name}|"))
    log_term = _log_half_alpha(confidence)
    with np.errstate(over="ignore", under="ignore"):  # (inf: refused below; 0: one example)
        # (the formula over gap in two steps: gap * gap overflowed to inf for a gap of 1e308,
        # and its quotient was NaN; found by review)
        n_star = log_term * (2.0 * sigma2 / gap / gap + 2.0 / 3.0 * (max_cost / gamma) / gap)
    too_many = ~(n_star < EXACT_EXAMPLES)
    if too_many.any():
        at = np.flatnonzero(too_many.reshape(-1))[0]
        value = float(np.asarray(delta, dtype=np.float64).reshape(-1)[at])
        raise ValueError(f"{name}={value!r}" + (f" at position {at}" if np.ndim(delta) else "")
                         + f" needs {_about(float(n_star.reshape(-1)[at]))} examples: at or "
                         "beyond 2**53, whole numbers of examples are no longer exact in float64")
    n = np.maximum(np.floor(n_star), 0.0) + 1.0
    # guard the floating-point edge: make t(n) < |delta| <= t(n - 1) hold exactly
    for _ in range(3):
        # (the half-widths of bernstein_halfwidth, its parameters checked once above)
        n = np.where(halfwidths(n, sigma2, max_cost, gamma, log_term) >= gap, n + 1.0, n)
        t_prev = halfwidths(np.maximum(n - 1.0, 1.0), sigma2, max_cost, gamma, log_term)
        n = np.where((n > 1.0) & (t_prev < gap), n - 1.0, n)
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
    confidence = check_confidence(confidence)
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
                         f"outside, e.g. {float(c[first])!r} at position {first}")
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
    """``y_hat``: scores at or above ``threshold``, by the rule of ``thresholds=`` everywhere
    (the threshold checked, then rounded to the scores' type: a float32 score of 0.7 is at
    ``numpy.float64(0.7)``; found by review, numpy compared them in float64 here)."""
    if np.ndim(threshold) != 0:
        raise TypeError(f"threshold must be one number, got {threshold!r}")
    try:
        value = check_thresholds(threshold)[0]
    except (TypeError, ValueError) as error:
        raise type(error)(f"threshold must be a number (not NaN), got {threshold!r}") from None
    scores = as_scores(y_score, "y_score")
    with np.errstate(over="ignore"):  # (1e300 for float32 scores: inf, above them all)
        return scores >= np.asarray(value).astype(scores.dtype)


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
    labels = as_labels(y_true, "y_true", threshold=label_threshold,
                       pos_label_hint=NO_POS_LABEL_HINT)
    cost, codes = demographic_parity_cost(y_score, group, threshold=threshold,
                                          group_a=group_a, group_b=group_b)
    if labels.shape[0] != cost.shape[0]:
        raise ValueError(f"y_score has {cost.shape[0]} rows but y_true has {labels.shape[0]}")
    codes = np.where(labels, codes, 0).astype(np.int8)
    return cost, codes
