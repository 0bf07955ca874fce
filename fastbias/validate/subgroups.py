"""Identity (subgroup) columns: the one reader, and the accepted containers of masks."""
from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import (
    _at,
    _first,
    _plain,
    as_array,
    booleans_and_numbers,
    first_non_numeric,
    from_foreign,
    native_order,
    read_column,
)
from .values import _exact_float64, at_or_above, integer_cut


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
        Unannotated rows, None when every row is annotated, or when the
        reader was told not to mark them (``want_missing=False``: NaN in a
        float column, never ``>= threshold``, are then left unmarked).
    boolean : bool
    """

    values: np.ndarray
    threshold: float
    missing: np.ndarray | None
    boolean: bool

    def member_mask(self) -> np.ndarray:
        """Boolean mask of the members (values at or above the threshold as real numbers, as
        the membership kernel compares them: see :func:`~.values.at_or_above`)."""
        with np.errstate(invalid="ignore"):
            member = at_or_above(self.values, self.threshold)
        return member if self.missing is None else member & ~self.missing


#: what a message says of an identity column that holds two kinds of value
ONE_KIND = ("a column must hold one kind (booleans, or numbers compared with the threshold); "
            "write it one way")


def identity_values(values, name: str, threshold: float | None, missing_hint: str = "",
                    label: str | None = None,
                    category_hint: str = "a column of categories (text or a pandas "
                                         "Categorical, as a pandas Series) gives one subgroup "
                                         "per value", want_missing: bool = True
                    ) -> IdentityValues:
    """Read one identity (subgroup) column: the one reader every entry point uses.

    Whether a column is boolean is decided by its own dtype (numpy bool,
    pandas ``boolean``, pyarrow/polars booleans, an object column of Python
    bools): True is a member and the threshold does not apply. Any numeric
    column (every integer width, float16/32/64, nullable, pyarrow-backed) is
    a member iff ``value >= threshold``, compared exactly in its own type.
    Without a threshold a numeric column must hold only 0 and 1 and nothing
    may be missing (``missing_hint`` says what to do instead). Messages call
    the column ``label`` (default ``subgroup 'name'``). ``want_missing=False``
    (a caller that treats unannotated rows as non-members anyway): a float
    column under a threshold gets no mask of its NaN rows (``missing`` None).
    """
    label = label or f"subgroup {name!r}"
    if (isinstance(values, np.ndarray) and not isinstance(values, np.ma.MaskedArray)
            and values.ndim == 1 and values.dtype.kind in "biu"):
        arr, missing = native_order(values), None  # the common case: no conversion, no copy
    else:
        arr, missing = read_column(values, label,
                                   float_missing=want_missing or threshold is None)
    if arr.dtype.kind not in "biuf":
        mixed = booleans_and_numbers(arr) if arr.dtype == object else None
        if mixed is not None:
            raise TypeError(f"{label} holds both booleans and numbers ({mixed}): {ONE_KIND}")
        shown = (f" (e.g. {first_non_numeric(arr, booleans=True)})" if arr.dtype == object
                 else "")
        dtype = getattr(values, "dtype", arr.dtype)  # (a Categorical's: category, not object)
        raise TypeError(f"{label} must be boolean or numeric, got dtype {dtype}{shown}; "
                        f"{category_hint}")
    if threshold is None and missing is not None:
        raise ValueError(f"{label} has {int(missing.sum())} NaN or missing value(s) (first "
                         f"at {_at(_first(missing))}); pass a subgroup threshold (missing "
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
                             f"{_at(first)}; pass a subgroup threshold to binarize")
        return IdentityValues(np.ascontiguousarray(arr), 1.0, None, False)
    threshold = float(threshold)
    if arr.dtype.kind in "iu" and (missing is not None or integer_cut(threshold) is not None):
        # integers with missing entries, or a threshold beyond 2**53 (where the kernels'
        # float64 comparison would round them): compared in their own type, mask kept apart
        member = at_or_above(arr, threshold)
        if missing is not None:
            member &= ~missing
        return IdentityValues(member.view(np.uint8), 1.0, missing, False)
    return IdentityValues(np.ascontiguousarray(arr), threshold, missing, False)


def identity_column(df, name: str, threshold: float, want_missing: bool = True
                    ) -> IdentityValues:
    """The identity column ``name`` of ``df`` (a DataFrame or a dict of columns), read by
    :func:`identity_values` with ``threshold``; missing values are unannotated rows (marked
    only ``want_missing``: what ``missing_subgroup="exclude"`` needs)."""
    return identity_values(df[name], name, threshold, label=f"subgroup column {name!r}",
                           category_hint=f"for one subgroup per value of a categorical column "
                                         f"pass it as sensitive_features=[{name!r}]",
                           want_missing=want_missing)


def dtype_kind(dtype) -> str | None:
    """``"boolean"`` or ``"numeric"``: what a column of ``dtype`` holds, whatever its values;
    None where its values say (object, categorical, text)."""
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    return None


def identity_kind(column) -> str | None:
    """``"boolean"`` or ``"numeric"``: how :func:`identity_values` reads a column of one
    batch (None when every value is missing, so the batch says nothing; ``"other"`` for what
    it refuses). Batches of one column must agree (:class:`BatchKinds`)."""
    dtype = getattr(column, "dtype", None)
    kind = dtype_kind(dtype)
    if kind is not None:
        return kind if kind == "boolean" or not pd.isna(column).all() else None
    values = pd.Series(column).dropna()
    if len(values) == 0:
        return None
    inferred = pd.api.types.infer_dtype(values, skipna=True)  # (in C; the common answers)
    if inferred == "boolean":
        return "boolean"
    if inferred in ("integer", "floating", "mixed-integer-float", "decimal", "complex"):
        return "numeric"
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return "boolean"
    if all(isinstance(v, numbers.Number) for v in values):
        return "numeric"
    return "other"


def column_kinds(frame, names) -> dict:
    """:func:`identity_kind` of each of the ``names`` that ``frame`` holds."""
    return {name: identity_kind(frame[name]) for name in names if name in frame}


class BatchKinds:
    """The kind of each identity column (or label), checked batch after batch: a column whose
    batches differ (numbers in some, booleans in others: read at once it would be refused,
    read in batches it would mean two things) is a TypeError naming the column and both
    places. ``names``: the columns, all of ``role``, or a dict of column -> role."""

    def __init__(self, names, role: str = "subgroup"):
        self.roles = (dict(names) if isinstance(names, dict)
                      else {name: role for name in names})
        self.names = list(self.roles)
        self.first = {}

    def seeded(self, kinds: dict, where: str) -> "BatchKinds":
        """This check, as though a batch ``where`` had had these ``kinds`` (None: unknown),
        e.g. a Dask DataFrame's meta, which every partition must then agree with."""
        for name, kind in kinds.items():
            if name in self.roles and kind is not None:
                self.first.setdefault(name, (kind, where))
        return self

    def check(self, frame, where: str) -> None:
        """Check the columns of one batch (``frame``), ``where`` it is."""
        self.check_kinds(column_kinds(frame, self.names), where)

    def check_kinds(self, kinds: dict, where: str) -> None:
        """Check one batch's kinds (:func:`column_kinds`, found where the batch was read)."""
        for name, kind in kinds.items():
            if kind is None or kind == "other":
                continue  # nothing to compare, or the reader's own error follows
            seen = self.first.setdefault(name, (kind, where))
            if seen[0] != kind:
                raise TypeError(f"{self.roles[name]} column {name!r} holds {kind} values "
                                f"{where} but {seen[0]} values {seen[1]}: {ONE_KIND}")


def _looks_like_names(subgroups) -> bool:
    return (isinstance(subgroups, (list, tuple)) and len(subgroups) > 0
            and all(isinstance(x, str) for x in subgroups))


def subgroup_columns(subgroups, n: int | None = None):
    """Normalise the accepted subgroup containers to (names, list of 1-D columns)."""
    subgroups = from_foreign(subgroups)
    if isinstance(subgroups, str) or _looks_like_names(subgroups):
        raise TypeError(f"subgroups must be membership masks (a DataFrame of boolean columns, "
                        f"a dict of name -> mask or an (n, k) array), got column name(s) "
                        f"{subgroups!r}; to select columns by name use "
                        f"fastbias.evaluate(df, ..., subgroups=[...])")
    if isinstance(subgroups, (list, tuple)) and not subgroups:
        return [], []  # no subgroup, as an empty dict (was one of 0 rows, "subgroup_0")
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
        columns = [from_foreign(c) for c in subgroups.values()]
    else:
        # (a masked array's columns keep their masks: masked entries are missing)
        arr = (subgroups if isinstance(subgroups, np.ma.MaskedArray) else
               as_array(subgroups, "subgroups", "a DataFrame, a dict of masks or an (n, k) array",
                        "an (n, k) array"))
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
