"""Input validation shared by every entry point.

Every error names the argument (or column) and what is wrong with it, with a
count and an example where that helps. Nothing here is jitted except the
column pass that turns a membership column into row indices.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from . import _kernels as K


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined (empty or one-class cell) and was set to NaN."""


def _to_numpy(values, name: str) -> np.ndarray:
    """Array-like (numpy, pandas, lists, nullable dtypes) -> 1-D numpy array."""
    if isinstance(values, (pd.Series, pd.Index)):
        dtype = values.dtype
        if isinstance(dtype, pd.CategoricalDtype):
            return np.asarray(values.astype(object))
        if pd.api.types.is_extension_array_dtype(dtype):
            if values.isna().any():
                raise ValueError(f"{name} contains {int(values.isna().sum())} missing value(s) "
                                 f"(pd.NA) at position {int(np.flatnonzero(values.isna())[0])}")
            if pd.api.types.is_bool_dtype(dtype):
                return values.to_numpy(dtype=np.bool_)
            if pd.api.types.is_float_dtype(dtype) or pd.api.types.is_integer_dtype(dtype):
                return values.to_numpy(dtype=np.float64 if pd.api.types.is_float_dtype(dtype)
                                       else np.int64)
            return values.to_numpy(dtype=object)
        return values.to_numpy()
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()  # polars / pyarrow
    arr = np.asarray(values)
    if arr.ndim == 0:
        raise ValueError(f"{name} must be one-dimensional, got a scalar")
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def check_length(arr: np.ndarray, n: int, name: str, reference: str = "y_true") -> None:
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but {reference} has {n}")


def as_scores(y_score, name: str = "y_score", n: int | None = None) -> np.ndarray:
    """Validate scores: numeric, 1-D, finite; float32 kept (ties decided in float32)."""
    arr = _to_numpy(y_score, name)
    if n is not None:
        check_length(arr, n, name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.number)):
        raise TypeError(f"{name} must be numeric scores, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real-valued, got dtype {arr.dtype}")
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    elif np.issubdtype(arr.dtype, np.integer):
        if arr.size and np.abs(arr.astype(np.float64)).max() > 2.0 ** 53:
            raise ValueError(f"{name} has integers beyond 2**53 that float64 cannot hold exactly")
        arr = arr.astype(np.float64)
    elif arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)  # longdouble
    arr = np.ascontiguousarray(arr)
    finite = np.isfinite(arr)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        n_nan = int(np.isnan(arr[bad]).sum())
        n_inf = bad.size - n_nan
        raise ValueError(f"{name} has {n_nan} NaN and {n_inf} infinite value(s) "
                         f"(first at position {int(bad[0])}); scores must be finite")
    return arr


def as_labels(y_true, name: str = "y_true", threshold: float | None = None,
              pos_label=None) -> np.ndarray:
    """Validate labels and return a boolean array (True = positive)."""
    arr = _to_numpy(y_true, name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    if pos_label is not None:
        return np.ascontiguousarray(arr == pos_label)
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr)
    if arr.dtype == object or arr.dtype.kind in "USO":
        raise TypeError(f"{name} has non-numeric labels (dtype {arr.dtype}, e.g. {arr[0]!r}); "
                        f"pass pos_label to say which value is the positive class")
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be numeric or boolean, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        nan = np.isnan(arr)
        if nan.any():
            raise ValueError(f"{name} has {int(nan.sum())} NaN label(s) "
                             f"(first at position {int(np.flatnonzero(nan)[0])})")
    if threshold is None:
        not_binary = (arr != 0) & (arr != 1)
        if not_binary.any():
            first = int(np.flatnonzero(not_binary)[0])
            raise ValueError(f"{name} is not binary: {int(not_binary.sum())} value(s) other than "
                             f"0/1 (e.g. {arr[first]!r} at position {first}); pass a label "
                             f"threshold to binarize")
        return np.ascontiguousarray(arr == 1)
    return np.ascontiguousarray(arr >= threshold)


def as_sample_weight(sample_weight, n: int, name: str = "sample_weight") -> np.ndarray | None:
    if sample_weight is None:
        return None
    arr = _to_numpy(sample_weight, name)
    check_length(arr, n, name)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} NaN or infinite value(s) "
                         f"(first at position {int(np.flatnonzero(bad)[0])})")
    negative = arr < 0
    if negative.any():
        first = int(np.flatnonzero(negative)[0])
        raise ValueError(f"{name} has {int(negative.sum())} negative value(s) "
                         f"(e.g. {arr[first]} at position {first}); weights must be >= 0")
    return arr


def _membership_values(values, name: str, threshold: float | None):
    """One subgroup column -> (array, threshold) for the jitted column pass."""
    arr = values if isinstance(values, np.ndarray) else _to_numpy(values, f"subgroup {name!r}")
    if arr.ndim != 1:
        raise ValueError(f"subgroup {name!r} must be a 1-D mask, got shape {arr.shape}")
    if arr.dtype == np.bool_:
        return arr.view(np.uint8), 1
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"subgroup {name!r} must be boolean or numeric, got dtype {arr.dtype}")
    if threshold is not None:
        return arr, threshold
    if np.issubdtype(arr.dtype, np.floating) and np.isnan(arr).any():
        raise ValueError(f"subgroup {name!r} has {int(np.isnan(arr).sum())} NaN value(s); "
                         f"use fastbias.evaluate (missing_subgroup=...) for unannotated rows")
    not_binary = (arr != 0) & (arr != 1)
    if not_binary.any():
        first = int(np.flatnonzero(not_binary)[0])
        raise ValueError(f"subgroup {name!r} is not a boolean mask: value {arr[first]!r} at "
                         f"position {first}; pass a subgroup threshold to binarize")
    return arr, 1


def subgroup_columns(subgroups, n: int | None = None):
    """Normalise the accepted subgroup containers to (names, list of 1-D columns)."""
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
        arr = np.asarray(subgroups)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"subgroups must be a DataFrame, a dict of masks or an (n, k) array, "
                             f"got an array of shape {arr.shape}")
        names = [f"subgroup_{j}" for j in range(arr.shape[1])]
        columns = [arr[:, j] for j in range(arr.shape[1])]
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ValueError(f"subgroups has duplicate name(s): {dup}")
    if n is not None:
        for name, col in zip(names, columns):
            if len(col) != n:
                raise ValueError(f"subgroup {name!r} mask has {len(col)} rows but y_true has {n}")
    return names, columns


def column_rows(values: np.ndarray, threshold: float, buffer: np.ndarray) -> np.ndarray:
    """Rows where ``values >= threshold`` (NaN is never a member), via the jitted pass."""
    count = K.threshold_column_rows(values, threshold, buffer)
    return buffer[:count].copy()


def subgroup_rows(subgroups, n: int, threshold: float | None = None):
    """Validate subgroups and return (names, list of increasing row-index arrays)."""
    names, columns = subgroup_columns(subgroups, n)
    if not names:
        raise ValueError("subgroups is empty: give at least one subgroup")
    buffer = np.empty(n, dtype=np.int64)
    rows = []
    for name, col in zip(names, columns):
        values, thr = _membership_values(col, name, threshold)
        rows.append(column_rows(values, float(thr), buffer))
    return names, rows
