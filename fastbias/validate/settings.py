"""Checks of the settings every entry point takes (thresholds, policies, threads, levels)."""
from __future__ import annotations

import decimal
import fractions
import math
import numbers
import warnings

import numpy as np

from .._threads import usable_cpus

NAN_POLICIES = ("raise", "omit")
UNDEFINED_POLICIES = ("propagate", "omit", "raise")
MISSING_POLICIES = ("background", "exclude")


def _is_real_number(value) -> bool:
    """A real number (an exact Decimal too), not text and not a bool."""
    return not isinstance(value, (str, bytes, bool, np.bool_)) \
        and isinstance(value, (numbers.Real, decimal.Decimal))


def check_threshold(threshold, name: str) -> float:
    """A threshold must be a finite real number."""
    # (an exact Decimal is a number too, as thresholds= and the columns' values take it:
    # found by review, refused here alone)
    if not _is_real_number(threshold):
        raise TypeError(f"{name} must be a number, got {threshold!r}")
    if isinstance(threshold, decimal.Decimal) and threshold.is_snan():
        raise ValueError(f"{name} must be finite, got {threshold!r}")
    value = as_float(threshold, name)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    refuse_inexact(threshold, value, name, "a member is a value at or above it")
    return value


def check_bins(bins, name: str = "bins") -> int:
    """A histogram's number of bins: a positive integer (not a bool)."""
    if not isinstance(bins, (int, np.integer)) or isinstance(bins, (bool, np.bool_)) or bins < 1:
        raise ValueError(f"{name} must be a positive integer, got {bins!r}")
    return int(bins)


def as_score_range(score_range, name: str = "score_range") -> tuple:
    """``(lo, hi)`` of a histogram's scores: two finite real numbers, ``lo < hi`` (a reversed,
    NaN or infinite range gave bins of no width, or every row in the first: found by review)."""
    try:
        lo, hi = score_range
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high) of numbers, got "
                        f"{score_range!r}") from None
    if not (_is_real_number(lo) and _is_real_number(hi)):
        raise TypeError(f"{name} must be a pair (low, high) of numbers, got {score_range!r}")
    try:
        lo, hi = float(lo), float(hi)
    except (ValueError, OverflowError):  # (a signalling NaN, an int past the largest double)
        raise ValueError(f"{name} must be finite, got {score_range!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"{name} must be finite, got {score_range!r}")
    if not lo < hi:
        raise ValueError(f"{name} must have its low end below its high end, got "
                         f"{score_range!r}")
    return lo, hi


def refuse_inexact(threshold, value: float, name: str, meaning: str) -> None:
    """A ValueError where ``threshold`` (an int, Fraction or Decimal) is not exactly the
    float64 ``value`` it becomes: ``2**53 + 3``, ``Fraction(1, 3)``. A comparison with it
    would be one with another number (numpy compares a float with a Fraction exactly).
    ``meaning``: what the threshold decides, for the message."""
    value = float(value)  # (a numpy float would compare with an int in float64)
    if not isinstance(threshold, (float, np.float16, np.float32, np.float64)) and \
            _exact_value(threshold) != value:
        raise ValueError(f"{name} {threshold!r} is not a float64: it would become {value!r}, "
                         f"and thresholds are compared as float64 ({meaning}); pass the "
                         f"float you mean")


def _exact_value(number: numbers.Real):
    """An int, Fraction, Decimal or numpy long double as an exact rational (other kinds of
    Real: as floats)."""
    if isinstance(number, numbers.Integral):
        return int(number)
    if isinstance(number, np.floating):  # (a long double holds more than float64 does)
        return fractions.Fraction(*number.as_integer_ratio())
    try:
        return fractions.Fraction(number)
    except (TypeError, ValueError):
        return float(number)


def as_float(value: numbers.Real, name: str) -> float:
    """``float(value)``, or a ValueError naming ``name`` for a number beyond float64's range
    (a Python int or Fraction of more than 308 digits: ``float`` would raise OverflowError)."""
    try:
        return float(value)
    except OverflowError:
        # (its size from its bits: str() of an int of more than 4,300 digits raises)
        magnitude = abs(int(value))
        exponent = math.floor((magnitude.bit_length() - 1) * math.log10(2))
        exponent += magnitude >= 10 ** (exponent + 1)  # (the estimate may be one short)
        raise ValueError(f"{name} is beyond float64's range (about {'-' if value < 0 else ''}"
                         f"10**{exponent}); thresholds are compared as floats") from None


def resolve_n_jobs(n_jobs, n_tasks: int, default_cap: int | None = None) -> int:
    """Threads to use for ``n_tasks`` independent tasks: the one reading of ``n_jobs``.

    ``None`` or ``-1`` mean every available CPU (at most ``default_cap`` for
    ``None``), a positive int that many; never more threads than tasks.
    """
    if n_jobs is None or (not isinstance(n_jobs, bool) and isinstance(n_jobs, numbers.Integral)
                          and n_jobs == -1):
        limit = usable_cpus()
        if n_jobs is None and default_cap is not None:
            limit = min(limit, default_cap)
    elif isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive int, -1 (all CPUs) or None, got {n_jobs!r}")
    else:
        limit = int(n_jobs)
    return max(1, min(int(n_tasks), limit))


def resolve_workers(n_jobs) -> int:
    """Threads one model's call may use: ``n_jobs`` read as :func:`resolve_n_jobs` does, with
    None meaning every usable CPU (the call splits its work into that many pieces)."""
    return resolve_n_jobs(n_jobs, n_tasks=1 << 20)


def check_nan_policy(nan_policy) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r}")
    return nan_policy


def check_undefined(undefined, nan_policy=None, *, where: str, stacklevel: int = 3) -> str:
    """The policy for undefined (NaN) metric values: ``undefined=``.

    ``nan_policy=`` was its name up to 0.1 (it read like the row policy of
    ``bias_metrics``/``evaluate``, which drops rows with missing values): it
    still works, with a ``DeprecationWarning``.
    """
    if nan_policy is not None:
        if undefined not in (None, "propagate", nan_policy):
            raise TypeError(f"{where}: pass undefined= only (nan_policy= is its deprecated name), "
                            f"got undefined={undefined!r} and nan_policy={nan_policy!r}")
        warnings.warn(f"{where}(nan_policy=...) is deprecated: the policy for undefined metric "
                      f"values is now undefined=, e.g. undefined={nan_policy!r} (nan_policy= of "
                      f"bias_metrics and evaluate, about rows with missing values, keeps its "
                      f"name)", DeprecationWarning, stacklevel=stacklevel)
        undefined = nan_policy
    if undefined is None:
        undefined = "propagate"
    if undefined not in UNDEFINED_POLICIES:
        raise ValueError(f"undefined must be one of {UNDEFINED_POLICIES}, got {undefined!r}")
    return undefined


def check_sample_seed(random_state) -> int:
    """The seed of an out-of-core path's score sample (which sets only the sizes of its
    buckets or partitions, never the result): a non-negative int as it is, None a fresh
    one; anything else a TypeError or ValueError naming ``random_state``.

    Examples
    --------
    >>> check_sample_seed(7)
    7
    >>> check_sample_seed(-1)
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None or a non-negative int, got -1
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1)[0])
    if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
        raise TypeError(f"random_state must be None or a non-negative int, got "
                        f"{random_state!r}")
    if random_state < 0:
        raise ValueError(f"random_state must be None or a non-negative int, got "
                         f"{random_state!r}")
    return int(random_state)


def check_missing_policy(missing_subgroup) -> str:
    if missing_subgroup not in MISSING_POLICIES:
        raise ValueError(f"missing_subgroup must be one of {MISSING_POLICIES}, "
                         f"got {missing_subgroup!r}")
    return missing_subgroup


def check_confidence(confidence) -> float:
    """A confidence level strictly between 0 and 1."""
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) \
            or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


#: ``label_threshold`` of :func:`fastbias.evaluate` and the out-of-core entry points when
#: not given (Jigsaw's fractions of annotators)
DEFAULT_LABEL_THRESHOLD = 0.5


def check_label_options(pos_label, label_threshold) -> None:
    """``pos_label`` beside a ``label_threshold`` other than the default (or None) is a
    ValueError: the threshold is not used with a positive class, and a caller who set one
    would find it dropped without a word (found by review: ``label_threshold=0.3``)."""
    if pos_label is None or label_threshold is None:
        return
    if isinstance(label_threshold, float) and label_threshold == DEFAULT_LABEL_THRESHOLD:
        return  # (the default: nothing was asked)
    if isinstance(pos_label, np.generic):  # (np.int64(1) shown as 1: found by review)
        pos_label = pos_label.item()
    raise ValueError(f"pass either pos_label or label_threshold, not both (got pos_label="
                     f"{pos_label!r} and label_threshold={label_threshold!r}): with a positive "
                     f"class the label column is not thresholded")
