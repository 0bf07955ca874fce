"""Categorical sensitive features: a column of values (``race``), one subgroup per value.

:func:`category_codes` is the one reader: it turns a column of any type into an
integer code per row (``-1`` where the value is missing) and the values that
occur, in a stable documented order. The prepare stage makes memberships of
them (``fastbias.prepare.memberships.category_memberships``).
"""
from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import NUMBER_TEXT, booleans_and_numbers, from_foreign, in_piece
from .errors import NoSubgroupWarning, user_stacklevel

#: a sensitive feature with more distinct values than this is refused (a score or an id
#: column passed by mistake would otherwise become as many subgroups as rows)
MAX_CATEGORIES = 1000


@dataclass(frozen=True)
class CategoryCodes:
    """One categorical column read for memberships.

    Attributes
    ----------
    name : str
        The column's name (subgroups are named ``"name=value"``).
    codes : ndarray of int32
        Per row, the index of its value in ``values``; -1 where missing.
    values : list
        The values that occur, in order: a pandas Categorical's category order,
        otherwise sorted (numbers by value, text by code point; a column of several kinds:
        its numbers first by value, then the rest by type name and text).
    """

    name: str
    codes: np.ndarray
    values: list

    @property
    def missing(self) -> np.ndarray | None:
        """Rows whose value is missing (None when there is none)."""
        missing = self.codes < 0
        return missing if missing.any() else None

    @property
    def labels(self) -> list:
        """The subgroup name of each value: ``"name=value"``."""
        return [f"{self.name}={value_text(v)}" for v in self.values]


def value_text(value) -> str:
    """How a value shows in a subgroup name: booleans and numbers as Python writes them, a
    whole float as the integer it is (``2``: a column of integers with a missing value reads
    as floats), text as it is."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, np.generic):
        return str(value)  # numpy's shortest text of its own type (float32 0.1 is "0.1")
    return str(value)


def _sorted_order(values: list) -> list:
    """The positions of a non-categorical column's values in their documented order."""
    positions = range(len(values))
    try:
        return sorted(positions, key=lambda j: values[j])
    except TypeError:  # several kinds: the numbers first by value, then the rest by kind, text
        def key(j):
            v = values[j]
            if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)):
                return (0, "", float(v), "")
            return (1, type(v).__name__, 0.0, value_text(v))
        return sorted(positions, key=key)


def category_codes(column, name: str, label: str | None = None) -> CategoryCodes:
    """Read one sensitive feature: any column (text, categorical, integers, booleans,
    pyarrow- or polars-backed) whose distinct values are the groups.

    Missing values (None, NaN, pd.NA, NaT) have code -1 and form no group. A
    column with more than :data:`MAX_CATEGORIES` distinct values, or two values that
    would show under the same name (``1`` and ``"1"``), is a ValueError naming the
    column. ``label`` names the column in messages (default ``sensitive feature 'name'``).

    Examples
    --------
    >>> import pandas as pd
    >>> from fastbias.validate.categories import category_codes
    >>> c = category_codes(pd.Series(["b", "a", None, "b"]), "race")
    >>> c.labels, c.codes.tolist()
    (['race=a', 'race=b'], [1, 0, -1, 1])
    """
    label = label or f"sensitive feature {name!r}"
    if hasattr(column, "to_pandas") and not isinstance(column, (pd.Series, pd.Index)):
        column = from_foreign(column)  # pyarrow / polars
    series = column if isinstance(column, pd.Series) else pd.Series(column)
    if series.ndim != 1:
        raise ValueError(f"{label} must be one column")
    if isinstance(series.dtype, pd.CategoricalDtype):
        raw = np.asarray(series.cat.codes, dtype=np.int64)
        present = np.unique(raw[raw >= 0])
        values = [series.cat.categories[j] for j in present]
        remap = np.full(len(series.cat.categories) + 1, -1, dtype=np.int32)
        remap[present] = np.arange(present.shape[0], dtype=np.int32)
        codes = remap[raw]  # -1 stays -1 (the last slot)
    else:
        try:
            raw, uniques = pd.factorize(series, sort=False, use_na_sentinel=True)
        except TypeError as error:  # e.g. lists, which cannot be told apart by hashing
            first = next((v for v in series if not pd.api.types.is_hashable(v)), None)
            raise TypeError(f"{label} holds values that cannot be groups, e.g. {first!r} "
                            f"({type(first).__name__}): give one value per row") from error
        if series.dtype == object:
            _refuse_booleans_beside_numbers(series, raw, uniques, label)
        # numpy scalars of the column's own type (an Index would box float32 as float64)
        floats = getattr(getattr(uniques, "dtype", None), "kind", "") == "f"
        uniques = list(np.asarray(uniques) if floats else uniques)
        order = _sorted_order(uniques)
        rank = np.full(len(uniques) + 1, -1, dtype=np.int32)  # the last slot: missing (-1)
        rank[order] = np.arange(len(order), dtype=np.int32)
        codes = rank[np.asarray(raw, dtype=np.int64)]
        values = [uniques[j] for j in order]
    check_values(values, label)
    return CategoryCodes(str(name), np.ascontiguousarray(codes, dtype=np.int32), list(values))


def _refuse_booleans_beside_numbers(series: pd.Series, raw: np.ndarray, uniques,
                                    label: str) -> None:
    """A TypeError where an object column holds True (False) beside 1 (0): Python takes them
    for one value, so they would make one group, named after whichever comes first (found by
    review). Only the groups of such a value are looked at, each by pandas' type inference."""
    if pd.api.types.infer_dtype(series, skipna=True) not in ("mixed", "mixed-integer"):
        return  # (all booleans, all numbers or all text: nothing to tell apart)
    alike = [c for c, value in enumerate(uniques)
             if isinstance(value, (bool, np.bool_, numbers.Number)) and value in (0, 1)]
    if alike:  # (the rows of such values only, where they are: the others read as None)
        values = series.to_numpy()
        mixed = booleans_and_numbers(np.where(np.isin(raw, alike), values, None))
        if mixed is not None:
            raise TypeError(f"{label} holds both booleans and numbers ({mixed}), which Python "
                            f"takes for one value: write it one way")


def check_values(values, label: str) -> None:
    """A ValueError naming the column when it has more than :data:`MAX_CATEGORIES` values or
    two values that would show under one name (``1`` and ``"1"``)."""
    if len(values) > MAX_CATEGORIES:
        shown = ", ".join(repr(value_text(v)) for v in values[:5])
        raise ValueError(f"{label} has {len(values):,} distinct values (e.g. {shown}), more "
                         f"than the {MAX_CATEGORIES:,} a sensitive feature may have: is it a "
                         f"score or an id column? Bin it first (pandas.cut)")
    texts = [value_text(v) for v in values]
    if len(set(texts)) != len(texts):
        clash = sorted({t for t in texts if texts.count(t) > 1})[0]
        kinds = [type(v).__name__ for v, t in zip(values, texts) if t == clash]
        raise ValueError(f"{label} holds values of different types that read the same, "
                         f"{clash!r} ({' and '.join(kinds)}); give the column one type")


def is_categorical(column, threshold=None) -> bool:
    """Whether a subgroup column holds categories rather than memberships: a pandas Series
    (or Categorical) of categories or of text (string dtypes, or objects that are neither
    numbers nor booleans). Numeric and boolean columns stay memberships (thresholded); a
    numpy array of text stays an error (it is more often a mistake than categories). A
    pyarrow dictionary column is read as a Categorical. With a
    ``threshold``, a Categorical of numbers (or booleans: e.g. a Parquet column of vote
    counts, dictionary-encoded) is a membership column too, thresholded as ``evaluate``
    and the out-of-core paths threshold it."""
    if not isinstance(column, (pd.Series, pd.Categorical)):
        return False
    dtype = getattr(column, "dtype", None)
    arrow = getattr(dtype, "pyarrow_dtype", None)
    if arrow is not None and hasattr(arrow, "value_type") and hasattr(arrow, "index_type"):
        # a pyarrow dictionary (Parquet's encoding of categories): a Categorical's kin (found
        # by review: bias_metrics refused it, evaluate's sensitive features took it)
        import pyarrow as pa

        kind = arrow.value_type
        numeric = (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                   or pa.types.is_boolean(kind) or pa.types.is_decimal(kind))
        return not (threshold is not None and numeric)
    if threshold is not None and isinstance(dtype, pd.CategoricalDtype) and \
            pd.api.types.is_numeric_dtype(dtype.categories.dtype):
        return False
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype) and \
            dtype != object:
        return True
    if dtype == object:
        values = pd.Series(column).dropna()
        return len(values) > 0 and any(
            not isinstance(v, (numbers.Number, bool, np.bool_)) for v in values.iloc[:1000])
    return False


def refuse_numbers_as_text(column, name: str, threshold) -> None:
    """A TypeError where a column of categories holds only numbers written as text and a
    subgroup threshold is given: the caller means to threshold numbers, which one subgroup
    per value would not do (found by review: ``bias_metrics`` gave subgroups "g=0.2" and
    "g=0.7" under ``subgroup_threshold=0.5``; ``evaluate`` refuses such a column)."""
    values = np.asarray(column, dtype=object)
    text = [isinstance(v, str) for v in values]
    # (numbers beside their text too: found by review, [0.7, "0.2"] gave "g=0.7" and "g=0.2")
    if not any(text) or not all(
            (NUMBER_TEXT.fullmatch(v) if is_text else pd.isna(v) or (
                isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))))
            for v, is_text in zip(values, text)):
        return
    first = text.index(True)
    raise TypeError(f"subgroup {name!r} holds numbers written as text (e.g. {values[first]!r} "
                    f"at position {first}) and subgroup_threshold={threshold!r} is given: "
                    f"convert the column to numbers (pd.to_numeric) to threshold it, or leave "
                    f"out subgroup_threshold for one subgroup per value")


def _plain_value(value):
    """A value as a plain, picklable, hashable scalar: numpy integers, booleans and text
    unwrapped; numpy floats kept in their own type (a float32 0.1 names itself "0.1")."""
    if isinstance(value, np.generic) and not isinstance(value, np.floating):
        return value.item()
    return value


def warn_features_without_values(features: list, values: list) -> None:
    """One warning naming the sensitive features (``features``) whose ``values`` (per
    feature, those found on the rows) are none: a column missing on every row makes no
    subgroup, and a caller who asked for it should hear so, not find it absent."""
    empty = [name for name, found in zip(features, values) if len(found) == 0]
    if not empty:
        return
    which = (f"sensitive feature {empty[0]!r} has" if len(empty) == 1 else
             f"sensitive features {empty!r} have")
    also = " (nor any combination of the features)" if len(features) > 1 else ""
    warnings.warn(f"{which} no value on any row (every value missing): no subgroup from "
                  f"{'it' if len(empty) == 1 else 'them'}{also}", NoSubgroupWarning,
                  stacklevel=user_stacklevel())


def feature_summary(frame, features: list, labels: np.ndarray, where: str = "") -> dict:
    """What one piece of the rows (a batch, a partition) holds of the sensitive features:
    ``{"values": [set of values per feature], "cells": {(value, ...): [negatives,
    positives]}}`` (the combinations of one value of each feature that occur; a row with a
    missing value in none). Merged over pieces by :func:`merge_feature_summaries`, finished
    by :func:`chosen_features`."""
    read = []
    for name in features:
        with in_piece(where):  # (a piece of a file: messages name its rows, and where it lies)
            read.append(category_codes(frame[name], name))
    summary = {"values": [{_plain_value(v) for v in r.values} for r in read], "cells": {}}
    if len(read) > 1:
        codes = np.column_stack([r.codes for r in read]).astype(np.int64)
        known = (codes >= 0).all(axis=1)
        combos, inverse = np.unique(codes[known], axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        positive = np.asarray(labels, dtype=bool)[known]
        negatives = np.bincount(inverse[~positive], minlength=combos.shape[0])
        positives = np.bincount(inverse[positive], minlength=combos.shape[0])
        for c, combo in enumerate(combos):
            key = tuple(_plain_value(read[f].values[v]) for f, v in enumerate(combo))
            summary["cells"][key] = [int(negatives[c]), int(positives[c])]
    return summary


def merge_feature_summaries(first: dict | None, second: dict) -> dict:
    """Two :func:`feature_summary` results as one."""
    if first is None:
        return second
    values = [a | b for a, b in zip(first["values"], second["values"])]
    cells = dict(first["cells"])
    for key, (neg, pos) in second["cells"].items():
        old = cells.get(key, [0, 0])
        cells[key] = [old[0] + neg, old[1] + pos]
    return {"values": values, "cells": cells}


def chosen_features(summary: dict, features: list, min_subgroup_size: int) -> tuple:
    """``(values, combos)`` of the sensitive features from their summary over all rows:
    each feature's values sorted (numbers by value, text by code point; out of core the
    pieces' categories are not one order), and the combinations with at least
    ``min_subgroup_size`` rows of each class, as value indexes in the order of the values.
    Too many values, or two that read alike, are refused as :func:`category_codes` does."""
    warn_features_without_values(features, summary["values"])
    values = []
    for name, found in zip(features, summary["values"]):
        found = list(found)
        ordered = tuple(found[j] for j in _sorted_order(found))
        check_values(ordered, f"sensitive feature {name!r}")
        values.append(ordered)
    if float(np.prod([len(vs) for vs in values], dtype=np.float64)) >= 2.0 ** 62:
        raise ValueError(f"the sensitive features {list(features)} have too many combinations "
                         f"of values to count (the product of their numbers of values is "
                         f"2**62 or more): give fewer features")
    position = [{v: j for j, v in enumerate(vs)} for vs in values]
    combos = []
    for key, (neg, pos) in summary["cells"].items():
        if neg >= min_subgroup_size and pos >= min_subgroup_size:
            combos.append(tuple(position[f][v] for f, v in enumerate(key)))
    return tuple(values), tuple(sorted(combos))
