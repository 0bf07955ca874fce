"""Input validation shared by every entry point.

Every error names the argument (or column) and what is wrong with it, with a
count and an example position where that helps. Errors are ``ValueError``
(a bad value or shape), ``TypeError`` (a bad type or dtype) or, for a column
asked for by name that is not there, ``KeyError``. Nothing here is jitted
except the column pass that turns a membership column into row indices.

Conversions, in one place (see ``docs/validation.md`` for the full table):

* numpy arrays, lists, pandas Series/Index (numpy, nullable and pyarrow-backed
  dtypes, categoricals), pyarrow arrays and polars Series are accepted;
  rows are matched by position, and pandas inputs of one call whose indexes
  differ are an error (:func:`check_aligned`);
* a missing value (NaN, ``None``, ``pd.NA``) is an error unless the entry
  point was given ``nan_policy="omit"``, which drops the row with one
  :class:`OmittedRowsWarning` stating how many rows each argument cost;
* scores keep float32 (ties are decided in the precision given); integers,
  Decimals and Fractions are converted to float64 exactly or refused;
* identity columns are read by :func:`identity_values`, which decides
  boolean vs numeric from the column's own dtype.
"""
from __future__ import annotations

import math
import numbers
import os
import warnings
from dataclasses import dataclass
from collections.abc import Generator, Iterator, Mapping
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd


from . import _kernels as K

NAN_POLICIES = ("raise", "omit")
#: smallest ratio of a positive weight to the largest weight (products of weights stay normal)
WEIGHT_SPREAD_LIMIT = 2.0 ** -480
# ends every "missing value" message; the CLI rewrites the Python words in it

def _omit_hint(omit: bool) -> str:
    """How to get past missing values: the nan_policy hint only where that option exists."""
    return "drop those rows first, or pass nan_policy='omit'" if omit else "drop those rows first"



class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined (empty or one-class cell) and was set to NaN."""


class OmittedRowsWarning(UserWarning):
    """Rows with a missing label, score or weight were dropped (``nan_policy="omit"``)."""


# ----------------------------------------------------------------------------- conversion

def _from_foreign(values):
    """pyarrow / polars containers -> pandas (cheap; keeps nulls as missing)."""
    module = type(values).__module__ or ""
    if module.startswith(("pyarrow", "polars")) and hasattr(values, "to_pandas"):
        return values.to_pandas()
    return values


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _plain(value):
    """numpy scalar -> Python scalar, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _ints_to_float(ints: np.ndarray, name: str, missing: np.ndarray | None = None) -> np.ndarray:
    """Integer values -> float64, refusing values that float64 cannot hold exactly."""
    present = ints if missing is None else ints[~missing]
    big = (present > 2 ** 53) | (present < -(2 ** 53)) if present.size else None
    if big is not None and big.any():
        where = np.flatnonzero(~missing)[_first(big)] if missing is not None else _first(big)
        raise ValueError(f"{name} has {int(big.sum())} integer(s) beyond 2**53 that float64 "
                         f"cannot hold exactly (e.g. {_plain(ints[where])} at position {where}); "
                         f"ties would change: convert them yourself")
    return ints.astype(np.float64)


def _exact_floats(present: np.ndarray, positions: np.ndarray, name: str) -> np.ndarray:
    """Python numbers (ints, floats, Decimals, Fractions) -> float64, refusing any that
    would be rounded."""
    out = np.empty(present.shape[0], dtype=np.float64)
    for j, value in enumerate(present):
        if isinstance(value, (float, np.floating)):
            out[j] = value
            continue
        try:
            converted = float(value)
            exact = (converted != converted or math.isinf(converted)
                     or Fraction(converted) == Fraction(value))
        except (OverflowError, ValueError, TypeError):
            converted, exact = "out of range", False
        if not exact:
            raise ValueError(f"{name} has a value that float64 cannot hold exactly: "
                             f"{_plain(value)!r} at position {int(positions[j])} (it would "
                             f"become {converted!r}); rounding it could change the result "
                             f"(ties, sums): convert it yourself")
        out[j] = converted
    return out


def _all_real_numbers(values: np.ndarray) -> bool:
    return all(isinstance(v, (numbers.Real, Decimal)) and not isinstance(v, (bool, np.bool_))
               for v in values)


def _from_objects(arr: np.ndarray, name: str):
    """Object array -> (array of its kind, missing mask or None).

    Every present value a bool: bool (missing entries False); all integers:
    int64 (uint64 above int64; missing entries 0); numbers mixing floats,
    integers and Decimals: float64, each converted exactly or refused; anything
    else (strings, mixed types) stays an object array.
    """
    missing = np.asarray(pd.isna(arr), dtype=bool)
    any_missing = bool(missing.any())
    present = arr[~missing] if any_missing else arr
    kind = pd.api.types.infer_dtype(present, skipna=False)
    if kind == "boolean":
        values = present.astype(np.bool_)
    elif kind == "integer":
        try:
            values = present.astype(np.int64)
        except OverflowError:
            try:
                values = present.astype(np.uint64)
            except OverflowError:
                raise ValueError(f"{name} has integers too large for 64 bits") from None
    elif kind in ("floating", "mixed-integer-float", "decimal") or (
            kind in ("mixed", "mixed-integer") and present.shape[0]
            and _all_real_numbers(present)):
        positions = np.flatnonzero(~missing) if any_missing else np.arange(arr.shape[0])
        values = (present.astype(np.float64) if kind == "floating"
                  else _exact_floats(present, positions, name))
    elif kind == "empty":
        values = present.astype(np.float64)
    else:
        return arr, (missing if any_missing else None)
    if not any_missing:
        return values, None
    out = np.full(arr.shape[0], np.nan if values.dtype.kind == "f" else 0, dtype=values.dtype)
    out[~missing] = values
    return out, missing


def _from_pandas(values, name: str):
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return _from_objects(values.to_numpy(dtype=object), name)
    if not pd.api.types.is_extension_array_dtype(dtype):
        arr = values.to_numpy()
        if arr.dtype == object:
            return _from_objects(arr, name)
        return arr, None
    missing = np.asarray(values.isna(), dtype=bool)
    any_missing = bool(missing.any())
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    if pd.api.types.is_bool_dtype(dtype):
        arr = values.to_numpy(dtype=np.bool_, na_value=False)
    elif pd.api.types.is_integer_dtype(dtype):
        int_dtype = numpy_dtype if numpy_dtype is not None and numpy_dtype.kind in "iu" \
            else np.dtype(np.int64)
        arr = values.to_numpy(dtype=int_dtype, na_value=0)
    elif pd.api.types.is_float_dtype(dtype):
        float_dtype = numpy_dtype if numpy_dtype is not None and numpy_dtype.kind == "f" \
            else np.dtype(np.float64)
        arr = values.to_numpy(dtype=float_dtype, na_value=np.nan)
    else:  # strings and other extension types
        return _from_objects(values.to_numpy(dtype=object, na_value=None), name)
    return arr, (missing if any_missing else None)


def read_column(values, name: str):
    """Any accepted 1-D container -> (numpy array of its own kind, missing mask or None).

    The one reader of every column fastbias takes (labels, scores, weights,
    identity columns). The kind is kept: booleans stay bool, integers stay
    integers (missing entries hold 0), floats keep their width (missing =
    NaN); strings and mixed objects come back as an object array. Numbers
    that a float cannot hold exactly (large integers mixed with floats,
    Decimals) are refused here, never rounded.
    """
    values = _from_foreign(values)
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(f"{name} must be one-dimensional, got a DataFrame with "
                             f"{values.shape[1]} columns")
        values = values.iloc[:, 0]
    if isinstance(values, pd.api.extensions.ExtensionArray):
        values = pd.Series(values, copy=False)  # np.asarray would turn NA integers into floats
    if isinstance(values, (pd.Series, pd.Index)):
        arr, missing = _from_pandas(values, name)
    else:
        if values is None or isinstance(values, (str, bytes, numbers.Number)):
            raise TypeError(f"{name} must be an array-like of values, got {type(values).__name__}")
        if isinstance(values, (Iterator, Generator)) or (
                not hasattr(values, "__len__") and not hasattr(values, "__array__")):
            raise TypeError(f"{name} must be an array-like of values (a list, numpy array or "
                            f"pandas Series), got a {type(values).__name__}; pass list(...) of it")
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} could not be read as a 1-D array: {exc}") from None
        missing = None
    if arr.ndim == 0:
        raise ValueError(f"{name} must be one-dimensional, got a scalar")
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if missing is None:
        if arr.dtype == object:
            arr, missing = _from_objects(arr, name)
        elif arr.dtype.kind == "f":
            nan = np.isnan(arr)
            missing = nan if nan.any() else None
    return arr, missing


def column_values(values, name: str):
    """Any accepted 1-D container -> (numpy array, mask of missing entries or None).

    :func:`read_column`, with missing entries of boolean or integer data
    given as NaN in a float64 array (so float NaN and ``pd.NA``/``None`` mean
    the same thing); integers beyond 2**53 are then refused.
    """
    arr, missing = read_column(values, name)
    if missing is not None and arr.dtype.kind in "biu":
        out = (_ints_to_float(arr, name, missing) if arr.dtype.kind in "iu"
               else arr.astype(np.float64))
        out[missing] = np.nan
        return out, missing
    return arr, missing


def first_non_numeric(arr: np.ndarray) -> str:
    """'<value> at position <i>' of the first entry of an object array that is not a number."""
    for i, value in enumerate(arr):
        if value is None or (isinstance(value, numbers.Number) and not isinstance(value, bool)):
            continue
        return f"{value!r} at position {i}"
    return "a non-numeric value"


def _to_numpy(values, name: str) -> np.ndarray:
    """Array-like -> 1-D numpy array (missing numeric values as NaN)."""
    return column_values(values, name)[0]


def _row_indexes(name: str, value):
    """(name, pandas index) of every pandas object in ``value`` that carries row labels."""
    if isinstance(value, (pd.Series, pd.DataFrame)):
        return [(name, value.index)]
    if isinstance(value, Mapping):
        return [(f"{name}[{key!r}]", column.index) for key, column in value.items()
                if isinstance(column, (pd.Series, pd.DataFrame))]
    return []


def _first_difference(a: pd.Index, b: pd.Index) -> str:
    left, right = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    different = left != right
    if not np.any(different):  # equal values, unequal otherwise (e.g. a MultiIndex level)
        return ""
    i = _first(np.asarray(different, dtype=bool))
    return f" (e.g. position {i} is row {_plain(left[i])!r} in one and {_plain(right[i])!r} in " \
           f"the other)"


def check_aligned(inputs, expected=None) -> pd.Index | None:
    """Refuse pandas inputs whose row labels disagree; return the common index (or None).

    fastbias matches the rows of its inputs by position. When two of them are
    pandas objects whose indexes are not equal, position and label would pair
    different rows, so this raises a ValueError naming both inputs and how to
    align them. ``inputs`` is a sequence of ``(name, value)``; dicts of
    Series are checked column by column. ``expected`` is an optional
    ``(name, index)`` the inputs must match too. Inputs of different lengths
    are left to the length checks.
    """
    reference = expected
    for name, value in inputs:
        for label, index in _row_indexes(name, value):
            if reference is None:
                reference = (label, index)
                continue
            ref_label, ref_index = reference
            if len(index) != len(ref_index) or index.equals(ref_index):
                continue
            base, target = label.split("[")[0], ref_label.split("[")[0]
            fix = (f"{base} = {base}.reindex({target}.index)" if target.isidentifier()
                   else f"put {base} in the row order of {ref_label}")
            raise ValueError(
                f"{ref_label} and {label} are pandas objects with different indexes"
                f"{_first_difference(ref_index, index)}: fastbias matches rows by position, so "
                f"these would pair up different rows. Align them first ({fix}), or, if the "
                f"positions already match, drop the labels with .reset_index(drop=True) (or "
                f".to_numpy())")
    return None if reference is None else reference[1]


def check_length(arr: np.ndarray, n: int, name: str, reference: str = "y_true") -> None:
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but {reference} has {n}")


def check_threshold(threshold, name: str) -> float:
    """A threshold must be a finite real number."""
    if isinstance(threshold, (str, bytes)) or not isinstance(threshold, numbers.Real):
        raise TypeError(f"{name} must be a number, got {threshold!r}")
    value = float(threshold)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def available_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS tells, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs, n_tasks: int, default_cap: int | None = None) -> int:
    """Threads to use for ``n_tasks`` independent tasks: the one reading of ``n_jobs``.

    ``None`` or ``-1`` mean every available CPU (at most ``default_cap`` for
    ``None``), a positive int that many; never more threads than tasks.
    """
    if n_jobs is None or (not isinstance(n_jobs, bool) and isinstance(n_jobs, numbers.Integral)
                          and n_jobs == -1):
        limit = available_cpus()
        if n_jobs is None and default_cap is not None:
            limit = min(limit, default_cap)
    elif isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive int, -1 (all CPUs) or None, got {n_jobs!r}")
    else:
        limit = int(n_jobs)
    return max(1, min(int(n_tasks), limit))


def check_nan_policy(nan_policy) -> str:
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be 'raise' or 'omit', got {nan_policy!r}")
    return nan_policy


# ----------------------------------------------------------------------------- scores

def _numeric_scores(arr: np.ndarray, name: str) -> np.ndarray:
    """Score dtype rules: float32 kept, float16 -> float32, the rest -> float64 exactly."""
    kind = arr.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    if kind not in "iuf":
        shown = f" (e.g. {first_non_numeric(arr)})" if kind == "O" else ""
        raise TypeError(f"{name} must be numeric scores, got dtype {arr.dtype}{shown}")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    elif kind in "iu":
        arr = _ints_to_float(arr, name)
    elif arr.dtype not in (np.float32, np.float64):  # long double
        arr = _exact_float64(arr, name)
    return np.ascontiguousarray(arr)


def _nonfinite_message(arr: np.ndarray, name: str, omit: bool = False) -> str:
    bad = ~np.isfinite(arr)
    n_nan = int(np.isnan(arr).sum())
    return (f"{name} has {n_nan} NaN and {int(bad.sum()) - n_nan} infinite value(s) "
            f"(first at position {_first(bad)}); scores must be finite: {_omit_hint(omit)}")


def as_scores(y_score, name: str = "y_score", n: int | None = None, *,
              omit: bool = False) -> np.ndarray:
    """Validate scores: numeric, 1-D, finite; float32 kept (ties decided in float32).

    ``omit`` says the caller offers ``nan_policy="omit"`` (messages then mention it).
    """
    arr, _ = column_values(y_score, name)
    if n is not None:
        check_length(arr, n, name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    arr = _numeric_scores(arr, name)
    if not np.isfinite(arr).all():
        raise ValueError(_nonfinite_message(arr, name, omit))
    return arr


# ----------------------------------------------------------------------------- labels

def _shown_values(values, limit: int = 5) -> str:
    values = [_plain(v) for v in values]
    text = ", ".join(repr(v) for v in values[:limit])
    return f"[{text}{', ...' if len(values) > limit else ''}]"


def binary_labels(arr: np.ndarray, name: str, threshold=None, pos_label=None,
                  threshold_name: str = "label_threshold") -> np.ndarray:
    """Labels without missing values -> bool array (True = positive)."""
    if pos_label is not None:
        if threshold is not None:
            raise ValueError(f"pass either pos_label or {threshold_name}, not both")
        distinct = pd.unique(arr)
        if len(distinct) > 2:
            raise ValueError(f"{name} has {len(distinct)} distinct values "
                             f"{_shown_values(distinct)}; pos_label needs two-class labels "
                             f"(for one class against the rest pass y_true == value)")
        positive = np.asarray(arr == pos_label)
        if positive.shape != arr.shape:  # numpy gave a scalar: incomparable types
            positive = np.zeros(arr.shape[0], dtype=bool)
        positive = np.ascontiguousarray(positive, dtype=np.bool_)
        if not positive.any():
            raise ValueError(f"pos_label {pos_label!r} does not occur in {name} "
                             f"(its values are {_shown_values(distinct)})")
        return positive
    kind = arr.dtype.kind
    if kind in "OUS":
        shown = first_non_numeric(arr) if kind == "O" else f"{_plain(arr[0])!r} at position 0"
        raise TypeError(f"{name} has non-numeric labels (dtype {arr.dtype}, e.g. {shown}); pass "
                        f"pos_label to say which value is the positive class")
    if kind not in "biuf":
        raise TypeError(f"{name} must be numeric or boolean, got dtype {arr.dtype}")
    if kind == "b":  # booleans are the classes themselves: no threshold applies
        return np.ascontiguousarray(arr)
    if threshold is not None:
        thr = check_threshold(threshold, threshold_name)
        outside = (arr < 0) | (arr > 1)
        if outside.any():
            first = _first(outside)
            raise ValueError(f"{name} has {int(outside.sum())} value(s) outside [0, 1] (e.g. "
                             f"{_plain(arr[first])!r} at position {first}); a label is 0/1 or a "
                             f"fraction in [0, 1] (e.g. the share of annotators who said "
                             f"positive) made binary by {threshold_name}. Map other values "
                             f"first, or pass pos_label for two-valued labels")
        return np.ascontiguousarray(arr >= thr)
    not_binary = (arr != 0) & (arr != 1)
    if not_binary.any():
        first = _first(not_binary)
        raise ValueError(f"{name} is not binary: {int(not_binary.sum())} value(s) other than "
                         f"0/1 (e.g. {_plain(arr[first])!r} at position {first}); pass a label "
                         f"threshold ({threshold_name}) to binarize, or pos_label")
    return np.ascontiguousarray(arr == 1)


def _missing_message(missing: np.ndarray, name: str, what: str = "missing",
                     omit: bool = False) -> str:
    return (f"{name} has {int(missing.sum())} {what} value(s) (NaN, None or pd.NA; first at "
            f"position {_first(missing)}): {_omit_hint(omit)}")


def as_labels(y_true, name: str = "y_true", threshold: float | None = None,
              pos_label=None, threshold_name: str = "label_threshold", *,
              omit: bool = False) -> np.ndarray:
    """Validate labels and return a boolean array (True = positive).

    Booleans and 0/1 numbers as they are; fractions with ``threshold``
    (positive iff ``>= threshold``); any two-valued labels (strings,
    categoricals, numbers) with ``pos_label``. Missing labels are an error.
    """
    arr, missing = column_values(y_true, name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if missing is not None:
        raise ValueError(_missing_message(missing, name, "missing label", omit))
    return binary_labels(arr, name, threshold, pos_label, threshold_name)


# ----------------------------------------------------------------------------- weights

def _weights_array(arr: np.ndarray, name: str, missing: np.ndarray | None,
                   omit: bool = False) -> np.ndarray:
    if arr.dtype.kind not in "iuf":
        shown = f" (e.g. {first_non_numeric(arr)})" if arr.dtype.kind == "O" else ""
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}{shown}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if missing is not None:
        raise ValueError(_missing_message(missing, name, "NaN or missing", omit))
    infinite = np.isinf(arr)
    if infinite.any():
        raise ValueError(f"{name} has {int(infinite.sum())} infinite value(s) "
                         f"(first at position {_first(infinite)}); weights must be finite")
    negative = arr < 0
    if negative.any():
        first = _first(negative)
        raise ValueError(f"{name} has {int(negative.sum())} negative value(s) "
                         f"(e.g. {_plain(arr[first])} at position {first}); weights must be >= 0")
    if arr.shape[0]:
        largest = int(np.argmax(arr))
        positive = arr > 0
        if positive.any():
            smallest = int(np.argmin(np.where(positive, arr, np.inf)))
            check_weight_spread(arr[smallest], arr[largest], name, f" at position {smallest}",
                                f" at position {largest}")
    return arr


def check_weight_spread(smallest, largest, name: str, where_smallest: str = "",
                        where_largest: str = "") -> None:
    """Refuse positive weights spanning more than 2**480 (their pair products would underflow)."""
    if 0 < smallest < largest * WEIGHT_SPREAD_LIMIT:
        raise ValueError(
            f"{name} spans more than 2**480 (1e144): the smallest positive weight is "
            f"{_plain(smallest)!r}{where_smallest} and the largest {_plain(largest)!r}"
            f"{where_largest}; weighted pair sums would underflow. Set negligible weights to 0 "
            f"(the metrics do not depend on the weights' scale, only on their ratios)")


def as_sample_weight(sample_weight, n: int, name: str = "sample_weight", *,
                     omit: bool = False) -> np.ndarray | None:
    """Validate weights: numeric, finite, non-negative, length ``n``; float64."""
    if sample_weight is None:
        return None
    arr, missing = column_values(sample_weight, name)
    check_length(arr, n, name)
    return _weights_array(arr, name, missing, omit)


# ----------------------------------------------------------------------------- nan_policy

def rows_to_omit(parts: list) -> tuple:
    """Union of per-argument drop masks -> (drop mask or None, description).

    ``parts`` is a list of ``(name, mask or None, what)``.
    """
    drop = None
    notes = []
    for name, mask, what in parts:
        if mask is None or not mask.any():
            continue
        drop = mask.copy() if drop is None else (drop | mask)
        notes.append(f"{name}: {int(mask.sum())} {what}")
    return drop, "; ".join(notes)


def warn_omitted(n_dropped: int, n_rows: int, description: str, stacklevel: int = 3) -> None:
    warnings.warn(f"nan_policy='omit' dropped {n_dropped} of {n_rows} rows ({description})",
                  OmittedRowsWarning, stacklevel=stacklevel + 1)


def score_drop_mask(arr: np.ndarray, missing):
    """Rows ``nan_policy='omit'`` drops for a score column: NaN, missing or infinite."""
    if arr.dtype.kind in "fc":
        bad = ~np.isfinite(arr)
        return bad if bad.any() else None
    return missing


def _score_drop_what(arr: np.ndarray, mask: np.ndarray) -> str:
    if arr.dtype.kind != "f":
        return "missing"
    n_nan = int(np.isnan(arr[mask]).sum())
    return f"({n_nan} NaN or missing, {int(mask.sum()) - n_nan} infinite)"


def validated_rows(y_true, y_score, sample_weight=None, *, label_threshold=None,
                   pos_label=None, nan_policy: str = "raise", stacklevel: int = 3):
    """Validate the row inputs of the array entry points under ``nan_policy``.

    Returns ``(labels, scores, weights, kept)`` where ``kept`` is None when
    every row is used, else the boolean mask (over the input rows) of the rows
    kept by ``nan_policy="omit"``.
    """
    check_nan_policy(nan_policy)
    y_arr, y_missing = column_values(y_true, "y_true")
    n = y_arr.shape[0]
    if n == 0:
        raise ValueError("y_true is empty")
    s_arr, s_missing = column_values(y_score, "y_score")
    check_length(s_arr, n, "y_score")
    w_arr = w_missing = None
    if sample_weight is not None:
        w_arr, w_missing = column_values(sample_weight, "sample_weight")
        check_length(w_arr, n, "sample_weight")
    kept = None
    if nan_policy == "omit":
        s_drop = score_drop_mask(s_arr, s_missing)
        drop, description = rows_to_omit([
            ("y_true", y_missing, "missing"),
            ("y_score", s_drop, "" if s_drop is None else _score_drop_what(s_arr, s_drop)),
            ("sample_weight", w_missing, "NaN or missing"),
        ])
        if drop is not None:
            n_dropped = int(drop.sum())
            if n_dropped == n:
                raise ValueError(f"nan_policy='omit' leaves no rows: all {n} rows have a "
                                 f"missing value ({description})")
            warn_omitted(n_dropped, n, description, stacklevel)
            kept = ~drop
            y_arr, s_arr = y_arr[kept], s_arr[kept]
            y_missing = s_missing = w_missing = None
            if w_arr is not None:
                w_arr = w_arr[kept]
    if y_missing is not None:
        raise ValueError(_missing_message(y_missing, "y_true", "missing label", omit=True))
    labels = binary_labels(y_arr, "y_true", label_threshold, pos_label)
    scores = _numeric_scores(s_arr, "y_score")
    if not np.isfinite(scores).all():
        raise ValueError(_nonfinite_message(scores, "y_score", omit=True))
    weights = (None if w_arr is None
               else _weights_array(w_arr, "sample_weight", w_missing, omit=True))
    return labels, scores, weights, kept


def restrict_rows(rows: list, kept: np.ndarray) -> list:
    """Row-index arrays over all rows -> the same rows renumbered among the ``kept`` ones."""
    new_index = np.cumsum(kept) - 1
    return [new_index[r[kept[r]]] for r in rows]


# ----------------------------------------------------------------------------- subgroups

@dataclass(frozen=True)
class IdentityValues:
    """One identity column as the membership passes read it.

    A row is a member iff ``values >= threshold`` and it is not ``missing``;
    ``missing`` rows (NaN, None, pd.NA: not annotated) are never members.
    ``boolean`` says the column held booleans: True is then a member whatever
    threshold the caller gave (``values`` is their uint8 view, threshold 1).

    Attributes
    ----------
    values : ndarray
        1-D: uint8 (booleans, or a precomputed 0/1 membership), an integer
        type, float32 or float64 (NaN where missing). Never float16.
    threshold : float
    missing : ndarray of bool or None
        Unannotated rows, None when every row is annotated.
    boolean : bool
    """

    values: np.ndarray
    threshold: float
    missing: np.ndarray | None
    boolean: bool

    def member_rows(self, buffer: np.ndarray | None = None) -> np.ndarray:
        """Increasing int64 row indices of the members."""
        if buffer is None:
            buffer = np.empty(self.values.shape[0], dtype=np.int64)
        return column_rows(self.values, self.threshold, buffer)

    def member_mask(self) -> np.ndarray:
        """Boolean mask of the members."""
        with np.errstate(invalid="ignore"):
            member = self.values >= self.threshold
        return member if self.missing is None else member & ~self.missing


def identity_values(values, name: str, threshold: float | None, missing_hint: str = "",
                    label: str | None = None) -> IdentityValues:
    """Read one identity (subgroup) column: the one reader every entry point uses.

    Whether a column is boolean is decided by its own dtype (numpy bool,
    pandas ``boolean``, pyarrow/polars booleans, an object column of Python
    bools): True is a member and the threshold does not apply. Any numeric
    column (every integer width, float16/32/64, nullable, pyarrow-backed) is
    a member iff ``value >= threshold``, compared exactly in its own type.
    Without a threshold a numeric column must hold only 0 and 1 and nothing
    may be missing (``missing_hint`` says what to do instead). Messages call
    the column ``label`` (default ``subgroup 'name'``).
    """
    label = label or f"subgroup {name!r}"
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "biu":
        arr, missing = values, None  # the common case: no conversion, no copy
    else:
        arr, missing = read_column(values, label)
    if arr.dtype.kind not in "biuf":
        shown = f" (e.g. {first_non_numeric(arr)})" if arr.dtype == object else ""
        raise TypeError(f"{label} must be boolean or numeric, got dtype {arr.dtype}{shown}")
    if threshold is None and missing is not None:
        raise ValueError(f"{label} has {int(missing.sum())} NaN or missing value(s) (first "
                         f"at position {_first(missing)}); pass a subgroup threshold (missing "
                         f"is then never a member){missing_hint}")
    if arr.dtype.kind == "b":
        return IdentityValues(np.ascontiguousarray(arr).view(np.uint8), 1.0, missing, True)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # exact
    elif arr.dtype.kind == "f" and arr.dtype not in (np.float32, np.float64):
        arr = _exact_float64(arr, label)
    if threshold is None:
        not_binary = (arr != 0) & (arr != 1)
        if not_binary.any():
            first = _first(not_binary)
            raise ValueError(f"{label} is not a boolean mask: value {_plain(arr[first])!r} at "
                             f"position {first}; pass a subgroup threshold to binarize")
        return IdentityValues(np.ascontiguousarray(arr), 1.0, None, False)
    threshold = float(threshold)
    if missing is not None and arr.dtype.kind in "iu":
        # integers with missing entries: compare in their own type, keep the mask apart
        member = (arr >= threshold) & ~missing
        return IdentityValues(member.view(np.uint8), 1.0, missing, False)
    return IdentityValues(np.ascontiguousarray(arr), threshold, missing, False)


def _exact_float64(arr: np.ndarray, name: str) -> np.ndarray:
    """A float array of another width (long double) -> float64, refusing rounded values."""
    converted = arr.astype(np.float64)
    lost = (converted.astype(arr.dtype) != arr) & ~np.isnan(arr)
    if lost.any():
        raise ValueError(f"{name} has {int(lost.sum())} {arr.dtype} value(s) that float64 "
                         f"cannot hold exactly (first at position {_first(lost)}); ties "
                         f"would change: cast them yourself")
    return converted


def _looks_like_names(subgroups) -> bool:
    return (isinstance(subgroups, (list, tuple)) and len(subgroups) > 0
            and all(isinstance(x, str) for x in subgroups))


def subgroup_columns(subgroups, n: int | None = None):
    """Normalise the accepted subgroup containers to (names, list of 1-D columns)."""
    subgroups = _from_foreign(subgroups)
    if isinstance(subgroups, str) or _looks_like_names(subgroups):
        raise TypeError(f"subgroups must be membership masks (a DataFrame of boolean columns, "
                        f"a dict of name -> mask or an (n, k) array), got column name(s) "
                        f"{subgroups!r}; to select columns by name use "
                        f"fastbias.evaluate(df, ..., subgroups=[...])")
    if (isinstance(subgroups, (list, tuple)) and subgroups
            and any(isinstance(x, (np.ndarray, pd.Series, pd.Index)) for x in subgroups)):
        # one array per subgroup, or one per row? ambiguous when k == n: refuse both
        raise TypeError(f"subgroups is a {type(subgroups).__name__} of {len(subgroups)} arrays; "
                        f"pass a dict {{name: mask}}, a DataFrame, or an (n_rows, n_subgroups) "
                        f"array (e.g. np.column_stack(masks))")
    if isinstance(subgroups, pd.DataFrame):
        names = [str(c) for c in subgroups.columns]
        columns = [subgroups.iloc[:, j] for j in range(subgroups.shape[1])]
    elif isinstance(subgroups, pd.Series):
        names = [str(subgroups.name) if subgroups.name is not None else "subgroup_0"]
        columns = [subgroups]
    elif isinstance(subgroups, Mapping):
        names = [str(k) for k in subgroups.keys()]
        columns = list(subgroups.values())
    else:
        if subgroups is None or isinstance(subgroups, (bytes, numbers.Number)):
            raise TypeError(f"subgroups must be a DataFrame, a dict of masks or an (n, k) array, "
                            f"got {type(subgroups).__name__}")
        try:
            arr = np.asarray(subgroups)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"subgroups could not be read as an (n, k) array: {exc}") from None
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"subgroups must be a DataFrame, a dict of masks or an (n, k) array, "
                             f"got an array of shape {arr.shape}")
        if n is not None and arr.shape[0] != n and arr.shape[1] == n:
            raise ValueError(f"subgroups has shape {arr.shape}: one row per subgroup; expected "
                             f"(n_rows, n_subgroups) = ({n}, {arr.shape[0]}), transpose it")
        names = [f"subgroup_{j}" for j in range(arr.shape[1])]
        columns = [arr[:, j] for j in range(arr.shape[1])]
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ValueError(f"subgroups has duplicate name(s): {dup}")
    if n is not None:
        for name, col in zip(names, columns):
            length = _column_length(col, name)
            if length != n:
                raise ValueError(f"subgroup {name!r} mask has {length} rows but y_true has {n}")
    return names, columns


def _column_length(col, name: str) -> int:
    if isinstance(col, (str, bytes, numbers.Number)) or col is None:
        raise TypeError(f"subgroup {name!r} must be a mask (array-like), got "
                        f"{type(col).__name__}")
    try:
        return len(col)
    except TypeError:
        raise TypeError(f"subgroup {name!r} must be a mask (array-like), got "
                        f"{type(col).__name__}") from None


def column_rows(values: np.ndarray, threshold: float, buffer: np.ndarray) -> np.ndarray:
    """Rows where ``values >= threshold`` (NaN is never a member), via a jitted pass.

    A boolean or uint8 mask with a threshold in (0, 1] is read eight rows at
    a time (members are then exactly the non-zero bytes); anything else is
    compared row by row.
    """
    if values.dtype in (np.bool_, np.uint8) and 0.0 < threshold <= 1.0 and values.ndim == 1:
        flat = np.ascontiguousarray(values).view(np.uint8)
        if flat.ctypes.data % 8:
            flat = flat.copy()  # fresh memory is word aligned
        words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
        rows, _ = K.dense_members(words, flat, 1, flat.shape[0] // 64)
        return rows.copy()
    count = K.threshold_column_rows(values, threshold, buffer)
    return buffer[:count].copy()


def subgroup_rows(subgroups, n: int, threshold: float | None = None):
    """Validate subgroups and return (names, list of increasing row-index arrays)."""
    if threshold is not None:
        threshold = check_threshold(threshold, "subgroup_threshold")
    names, columns = subgroup_columns(subgroups, n)
    if not names:
        raise ValueError("subgroups is empty: give at least one subgroup")
    buffer = np.empty(n, dtype=np.int64)
    hint = " or use fastbias.evaluate (missing_subgroup=...)"
    rows = [identity_values(col, name, threshold, hint).member_rows(buffer)
            for name, col in zip(names, columns)]
    return names, rows


# ----------------------------------------------------------------------------- columns by name

def require_columns(df: pd.DataFrame, columns, argument: str) -> None:
    """Raise a KeyError naming ``argument`` and the columns of ``df`` it asks for but lacks,
    or a ValueError when one of them names several columns (a column is found by name)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KeyError(f"{argument}: column(s) {missing} not in the DataFrame "
                       f"(columns are {list(df.columns)[:20]}{' ...' if df.shape[1] > 20 else ''})")
    if df.columns.has_duplicates:
        for column in columns:
            count = int(np.sum(df.columns == column))
            if count > 1:
                raise ValueError(f"{argument}: the DataFrame has {count} columns named "
                                 f"{column!r}; rename them so that each name says which one "
                                 f"is meant")


def column_name(value, argument: str):
    """One column name (a string, or another label that a DataFrame column can carry)."""
    if isinstance(value, (list, tuple, set, dict, np.ndarray, pd.Index)):
        raise TypeError(f"{argument} must be one column name, got a {type(value).__name__} "
                        f"{list(value)[:5]!r}")
    if value is None:
        raise ValueError(f"{argument} is required")
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{argument} must be a column name, got {type(value).__name__}") from None
    return value


def name_list(value, argument: str, columns=None) -> list:
    """One column name or several -> a non-empty list of distinct names.

    A non-string scalar is a name only if ``columns`` (the frame's columns)
    has it; otherwise the message says what was expected.
    """
    if isinstance(value, str):
        return [value]
    if value is None:
        raise ValueError(f"{argument} is required")
    if columns is not None and not isinstance(value, (list, tuple, pd.Index, np.ndarray)):
        try:
            if value in columns:
                return [value]
        except TypeError:
            pass
    if isinstance(value, (bytes, numbers.Number)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{argument} must be a column name or a list of column names, got "
                        f"{value!r}")
    out = list(value)
    if not out:
        raise ValueError(f"{argument} is empty")
    for name in out:
        column_name(name, f"each of {argument}")
    if len(set(out)) != len(out):
        raise ValueError(f"{argument} has duplicate names: {sorted({x for x in out if out.count(x) > 1})}")
    return out


def identity_column(df, name: str, threshold: float) -> IdentityValues:
    """The identity column ``name`` of ``df`` (a DataFrame or a dict of columns), read by
    :func:`identity_values` with ``threshold``; missing values are unannotated rows."""
    return identity_values(df[name], name, threshold, label=f"subgroup column {name!r}")


# ----------------------------------------------------------------------------- evaluate + omit

def omit_for_evaluate(evaluate, df: pd.DataFrame, *, label, scores, subgroups, sample_weight,
                      **settings):
    """``evaluate(..., nan_policy="omit")``: drop rows, then evaluate with ``"raise"``.

    Rows with a missing label or weight are dropped for every model; rows
    with a NaN, missing or infinite score only for that model. Models with
    the same dropped rows are evaluated together (sharing one preparation).
    """
    from .evaluation import EvaluationResult

    label = column_name(label, "label")
    models = name_list(scores, "scores", df.columns)
    subgroup_names = name_list(subgroups, "subgroups", df.columns)
    require_columns(df, [label], "label")
    require_columns(df, models, "scores")
    require_columns(df, subgroup_names, "subgroups")
    n = df.shape[0]
    if n == 0:
        raise ValueError("df is empty (0 rows)")
    label_name = f"label column {label!r}"
    parts = [(label_name, column_values(df[label], label_name)[1], "missing")]
    weights = sample_weight
    if isinstance(sample_weight, str):
        require_columns(df, [sample_weight], "sample_weight")
        name = f"sample_weight column {sample_weight!r}"
        parts.append((name, column_values(df[sample_weight], name)[1], "NaN or missing"))
    elif sample_weight is not None:
        weights, missing = column_values(sample_weight, "sample_weight")
        check_length(weights, n, "sample_weight", "df")
        parts.append(("sample_weight", missing, "NaN or missing"))
    common, _ = rows_to_omit(parts)
    groups: dict = {}
    for model in models:
        name = f"score column {model!r}"
        values, missing = column_values(df[model], name)
        drop = score_drop_mask(values, missing)
        if drop is not None:
            parts.append((name, drop, _score_drop_what(values, drop)))
        if common is not None:
            drop = common.copy() if drop is None else (drop | common)
        key = b"" if drop is None else np.packbits(drop).tobytes()
        groups.setdefault(key, (drop, []))[1].append(model)
    if list(groups) == [b""]:
        return evaluate(df, label=label, scores=scores, subgroups=subgroups,
                        sample_weight=sample_weight, nan_policy="raise", **settings)
    _, description = rows_to_omit(parts)
    omitted = {}
    results = []
    columns = list(dict.fromkeys([label, *models, *subgroup_names]
                                 + ([sample_weight] if isinstance(sample_weight, str) else [])))
    for drop, group_models in groups.values():
        sub_df, sub_weights = df, weights
        if drop is not None:
            kept = np.flatnonzero(~drop)
            if kept.size == 0:
                raise ValueError(f"nan_policy='omit' leaves no rows for model(s) {group_models}: "
                                 f"all {n} rows have a missing value ({description})")
            sub_df = df[columns].iloc[kept]
            if weights is not None and not isinstance(weights, str):
                sub_weights = weights[kept]
        for model in group_models:
            omitted[model] = 0 if drop is None else int(drop.sum())
        results.append(evaluate(sub_df, label=label, scores=group_models, subgroups=subgroups,
                                sample_weight=sub_weights, nan_policy="raise", **settings))
    kept_text = ", ".join(f"{m!r}: {n - omitted[m]}" for m in models)
    warnings.warn(f"nan_policy='omit' dropped rows ({description}); rows kept per model: "
                  f"{kept_text} of {n}", OmittedRowsWarning, stacklevel=3)
    order = {m: i for i, m in enumerate(models)}
    table = pd.concat([r.table for r in results], ignore_index=True)
    table = table.iloc[np.argsort(table["model"].map(order).to_numpy(), kind="stable")]
    overall = pd.concat([r.overall_auc for r in results]).reindex(models)
    result_settings = dict(results[0].settings)
    result_settings.update(nan_policy="omit", omitted_rows=omitted)
    return EvaluationResult(table=table.reset_index(drop=True), overall_auc=overall, label=label,
                            models=models, subgroups=results[0].subgroups,
                            settings=result_settings)
