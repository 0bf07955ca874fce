"""Reading any accepted 1-D container into numpy, and the checks across columns.

One reader (:func:`read_column`) for every column fastbias takes: numpy
arrays, lists, pandas Series/Index/extension arrays (numpy, nullable and
pyarrow-backed dtypes, categoricals), pyarrow arrays and polars Series. It
keeps each column's kind (bool, integer, float, object) and refuses numbers
that float64 cannot hold exactly instead of rounding them. Rows are matched by
position; :func:`check_aligned` refuses pandas inputs whose indexes disagree.
"""
from __future__ import annotations

import contextvars
import math
import numbers
import re
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd


def nullable_integer_dtype(arrow_type):
    """pandas' nullable integer dtype of a pyarrow integer type (None for other types): the
    ``types_mapper`` of every conversion from Arrow. Without it an integer column with nulls
    becomes float64, which rounds integers beyond 2**53 (9007199254740995 -> ...996.0) and
    shows category 1 as 1.0."""
    import pyarrow as pa

    if not pa.types.is_integer(arrow_type):
        return None
    return pd.api.types.pandas_dtype(("U" if pa.types.is_unsigned_integer(arrow_type) else "")
                                     + f"Int{arrow_type.bit_width}")


def _integers_with_nulls(values, polars: bool) -> bool:
    """Whether a pyarrow or polars container has an integer column holding a null."""
    if polars:
        columns = values.get_columns() if hasattr(values, "get_columns") else [values]
        return any(c.dtype.is_integer() and c.null_count() > 0 for c in columns)
    import pyarrow as pa

    columns = values.columns if hasattr(values, "columns") else [values]
    return any(pa.types.is_integer(c.type) and c.null_count > 0 for c in columns)


def from_foreign(values):
    """pyarrow / polars containers (arrays, tables, batches, series, frames) -> pandas, nulls
    kept missing; where an integer column holds nulls, integer columns become pandas'
    nullable integers (:func:`nullable_integer_dtype`), exact; others as they are."""
    module = type(values).__module__ or ""
    if module.startswith(("pyarrow", "polars")) and hasattr(values, "to_pandas"):
        if _integers_with_nulls(values, module.startswith("polars")):
            return values.to_pandas(types_mapper=nullable_integer_dtype)
        return values.to_pandas()
    return values


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


#: the row of a file at position 0 of the columns being read, while they are one piece of it
_FIRST_ROW: contextvars.ContextVar = contextvars.ContextVar("fastbias_first_row", default=None)


class PieceWhere(str):
    """Where a piece of a file lies, as messages about it end (``"in rows 5..9 of f.csv"``),
    knowing the file's row at the piece's position 0 (``first_row``): the readers then name
    rows of the file, not positions in the piece (see :func:`rows_from`)."""

    def __new__(cls, text: str, first_row: int):
        where = super().__new__(cls, text)
        where.first_row = int(first_row)
        return where


@contextmanager
def rows_from(where):
    """Inside, the readers' messages name ``row <first_row + position>`` of the file a
    :class:`PieceWhere` ``where`` describes (anything else: positions, as usual)."""
    token = _FIRST_ROW.set(getattr(where, "first_row", None))
    try:
        yield
    finally:
        _FIRST_ROW.reset(token)


#: the input row of each position among the rows nan_policy="omit" kept, while those are read
_KEPT_ROWS: contextvars.ContextVar = contextvars.ContextVar("fastbias_kept_rows", default=None)


@contextmanager
def rows_kept(kept):
    """Inside, messages about the rows ``nan_policy="omit"`` kept (``kept``: the mask over
    the input rows, None: every row) name each by its position in the input, not among the
    rows kept (a weight refused at position 9 of the kept rows was the input's row 10)."""
    token = _KEPT_ROWS.set(None if kept is None else np.flatnonzero(kept))
    try:
        yield
    finally:
        _KEPT_ROWS.reset(token)


@contextmanager
def in_piece(where):
    """Validation of one piece of the rows (a batch, a file's rows, a Dask partition): inside,
    the readers name rows of the file (:func:`rows_from`), and a ValueError or TypeError
    raised leaves with ``where`` appended, e.g. ``(in rows 5..9 of f.csv)``."""
    with rows_from(where):
        try:
            yield
        except (ValueError, TypeError) as error:
            if where:
                raise type(error)(f"{error} ({where})") from error
            raise


def _at(position) -> str:
    """How a message names the entry at ``position``: ``position i``, or inside
    :func:`rows_from` the row of the file; inside :func:`rows_kept`, the position among the
    rows kept read as the input's."""
    kept = _KEPT_ROWS.get()
    if kept is not None:
        position = kept[int(position)]
    first = _FIRST_ROW.get()
    return f"position {int(position)}" if first is None else f"row {first + int(position)}"


def _plain(value):
    """numpy scalar -> Python scalar, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _inexact_in_float64(ints: np.ndarray) -> np.ndarray:
    """Which integers float64 cannot hold exactly: beyond 2**53, those whose odd part (the
    value without its trailing zero bits) needs more than 53 bits (2**53 + 2 is held)."""
    inexact = (ints > 2 ** 53) | (ints < -(2 ** 53))
    if inexact.any():
        big = ints[inexact]
        if big.dtype.kind == "u":
            magnitude = big.astype(np.uint64)
        else:  # (|int64 min| does not fit int64: -(v + 1) + 1 in uint64)
            magnitude = np.where(big < 0, (-(big + 1)).astype(np.uint64) + np.uint64(1),
                                 big.astype(np.uint64))
        lowest_bit = magnitude & (~magnitude + np.uint64(1))
        inexact[inexact] = magnitude // lowest_bit >= np.uint64(2 ** 53)
    return inexact


def _ints_to_float(ints: np.ndarray, name: str, missing: np.ndarray | None = None,
                   consequence: str = "ties would change") -> np.ndarray:
    """Integer values -> float64, refusing values that float64 cannot hold exactly (the
    message says what rounding them would do: ``consequence``)."""
    present = ints if missing is None else ints[~missing]
    big = _inexact_in_float64(present) if present.size else None
    if big is not None and big.any():
        where = np.flatnonzero(~missing)[_first(big)] if missing is not None else _first(big)
        raise ValueError(f"{name} has {int(big.sum())} integer(s) beyond 2**53 that float64 "
                         f"cannot hold exactly (e.g. {_plain(ints[where])} at {_at(where)}); "
                         f"{consequence}: convert them yourself")
    return ints.astype(np.float64)


def _exact_floats(present: np.ndarray, positions: np.ndarray, name: str) -> np.ndarray:
    """Python numbers (ints, floats, Decimals, Fractions) -> float64, refusing any that
    would be rounded."""
    out = np.empty(present.shape[0], dtype=np.float64)
    for j, value in enumerate(present):
        if isinstance(value, (float, np.floating)) and not isinstance(value, np.longdouble):
            out[j] = value
            continue
        try:
            converted = float(value)
            # (an infinity only where the value is one: Decimal("1e400") is finite, and
            # had become inf, tied with any other beyond float64; found by review)
            exact = (converted != converted or (math.isinf(converted) and _infinite(value))
                     or (np.longdouble(converted) == value if isinstance(value, np.longdouble)
                         else Fraction(converted) == Fraction(value)))
        except (OverflowError, ValueError, TypeError, ArithmeticError):
            converted, exact = "out of range", False
        if not exact:
            raise ValueError(f"{name} has a value that float64 cannot hold exactly: "
                             f"{_plain(value)!r} at {_at(positions[j])} (it would "
                             f"become {converted!r}); rounding it could change the result "
                             f"(ties, sums): convert it yourself")
        out[j] = converted
    return out


def _infinite(value) -> bool:
    """Whether a number is itself infinite (not merely beyond float64's range)."""
    if isinstance(value, Decimal):
        return value.is_infinite()
    try:
        return math.isinf(value)
    except (OverflowError, TypeError, ValueError):  # (an int or Fraction beyond float64)
        return False


def _all_real_numbers(values: np.ndarray) -> bool:
    """Every value a real number (numpy's timedelta64 counts as an integer to ``numbers``:
    not here, nor booleans)."""
    return all(isinstance(v, (numbers.Real, Decimal))
               and not isinstance(v, (bool, np.bool_, np.timedelta64)) for v in values)


#: whether numpy's long double holds more than float64 (not on every platform)
LONG_DOUBLE_WIDER = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant


def _from_objects(arr: np.ndarray, name: str):
    """Object array -> (array of its kind, missing mask or None).

    Every present value a bool: bool (missing entries False); all integers:
    int64 (uint64 above int64; missing entries 0); numbers mixing floats,
    integers and Decimals: float64, each converted exactly or refused; anything
    else (strings, mixed types) stays an object array.
    """
    try:
        missing = np.asarray(pd.isna(arr), dtype=bool)
    except ArithmeticError:  # (a signalling NaN Decimal cannot even be compared)
        where = next(i for i, v in enumerate(arr) if isinstance(v, Decimal) and v.is_snan())
        raise ValueError(f"{name} has a signalling NaN, {arr[where]!r} at {_at(where)}: not a "
                         f"number; a missing value is NaN or None") from None
    any_missing = bool(missing.any())
    present = arr[~missing] if any_missing else arr
    kind = pd.api.types.infer_dtype(present, skipna=False)
    if kind == "floating" and LONG_DOUBLE_WIDER and np.longdouble in set(map(type, present)):
        kind = "mixed"  # (long doubles among them: each converted exactly or refused)
    if kind == "boolean":
        values = present.astype(np.bool_)
    elif kind == "integer":
        try:
            values = present.astype(np.int64)
        except OverflowError:
            try:
                values = present.astype(np.uint64)
            except OverflowError:  # beyond 64 bits: floats where float64 holds each exactly
                positions = np.flatnonzero(~missing) if any_missing else np.arange(arr.shape[0])
                values = _exact_floats(present, positions, name)
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
        categories = dtype.categories
        if getattr(categories.dtype, "kind", "O") in "iu":
            # integer categories by their codes (as objects, those with a missing value
            # would become floats, rounded beyond 2**53)
            codes = np.asarray(values.cat.codes if isinstance(values, pd.Series)
                               else values.codes)
            missing = codes < 0
            table = categories.to_numpy()
            arr = (table[np.where(missing, 0, codes)] if table.shape[0]
                   else np.zeros(codes.shape[0], dtype=table.dtype))
            return arr, (missing if missing.any() else None)
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


def read_column(values, name: str, float_missing: bool = True):
    """Any accepted 1-D container -> (numpy array of its own kind, missing mask or None).

    The one reader of every column fastbias takes (labels, scores, weights,
    identity columns). The kind is kept: booleans stay bool, integers stay
    integers (missing entries hold 0), floats keep their width (missing =
    NaN); strings and mixed objects come back as an object array. Numbers
    that a float cannot hold exactly (large integers mixed with floats,
    Decimals) are refused here, never rounded. Without ``float_missing`` a
    float column's NaN are left in it unmasked (a caller to whom NaN already
    means what missing means: an identity column under a threshold).
    """
    values = from_foreign(values)
    if isinstance(values, np.ma.MaskedArray):
        values = masked_as_missing(values)
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(f"{name} must be one-dimensional, got a DataFrame with "
                             f"{values.shape[1]} columns")
        values = values.iloc[:, 0]
    if isinstance(values, pd.api.extensions.ExtensionArray):
        values = pd.Series(values, copy=False)  # np.asarray would turn NA integers into floats
    if isinstance(values, (pd.Series, pd.Index)):
        arr, missing = _from_pandas(values, name)
        arr = native_order(arr)
    else:
        arr = as_array(values, name, "an array-like of values (a list, numpy array or pandas "
                       "Series)", "a 1-D array")
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
        elif arr.dtype.kind == "f" and float_missing and arr.shape[0] and (
                np.isnan(arr[:64]).any() or np.isnan(arr.min())):
            # a column with NaN near its start gets its mask at once; for the others numpy's
            # min, which passes NaN on, says whether one is needed without making it
            missing = np.isnan(arr)
    return arr, missing


def masked_as_missing(values: np.ma.MaskedArray) -> np.ndarray:
    """A numpy masked array's masked entries are missing values, as pandas' NA is (numpy
    itself would read the values hidden under the mask, a -1 or 1e20 written there):
    floats hold NaN there, other kinds become objects holding None there."""
    mask = np.ma.getmaskarray(values)
    data = np.ma.getdata(values)
    if not mask.any():
        return data
    out = data.copy() if data.dtype.kind == "f" else data.astype(object)
    out[mask] = np.nan if data.dtype.kind == "f" else None
    return out


def as_array(values, name: str, expected: str, shape: str) -> np.ndarray:
    """``np.asarray(values)`` of an array-like argument ``name``: a TypeError (saying what is
    ``expected``) for None, a scalar or a one-shot iterator, a ValueError when numpy cannot read
    it as ``shape``."""
    if values is None or isinstance(values, (str, bytes, numbers.Number)):
        raise TypeError(f"{name} must be {expected}, got {type(values).__name__}")
    if isinstance(values, (Iterator, Generator)) or (
            not hasattr(values, "__len__") and not hasattr(values, "__array__")):
        raise TypeError(f"{name} must be {expected}, got a {type(values).__name__}; pass "
                        f"list(...) of it")
    refuse_sparse(values, name)
    try:
        return native_order(np.asarray(values))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} could not be read as {shape}: {exc}") from None


def refuse_sparse(values, name: str) -> None:
    """A TypeError for a scipy sparse matrix or array, which numpy reads as one object (a
    0-d array: 'a scalar', 'shape ()')."""
    if type(values).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name} is a scipy sparse {type(values).__name__} of shape "
                        f"{getattr(values, 'shape', '?')}; fastbias takes dense arrays: pass "
                        f"{name}.toarray()")


def native_order(arr: np.ndarray) -> np.ndarray:
    """``arr`` in this machine's byte order (a big-endian ``>i8`` array from a file, say, is
    copied: the kernels take native numbers only)."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def column_values(values, name: str, float_missing: bool = True):
    """Any accepted 1-D container -> (numpy array, mask of missing entries or None).

    :func:`read_column`, with missing entries of boolean or integer data
    given as NaN in a float64 array (so float NaN and ``pd.NA``/``None`` mean
    the same thing); integers beyond 2**53 are then refused. ``float_missing``:
    see :func:`read_column` (a caller that finds a float column's NaN itself).
    """
    arr, missing = read_column(values, name, float_missing)
    if missing is not None and arr.dtype.kind in "biu":
        out = (_ints_to_float(arr, name, missing) if arr.dtype.kind in "iu"
               else arr.astype(np.float64))
        out[missing] = np.nan
        return out, missing
    return arr, missing


def booleans_and_numbers(values) -> str | None:
    """Where a column of Python objects (JSON's true/false beside numbers) holds both
    booleans and numbers: the first of each, ``'1 at position i and True at position j'``;
    None where it does not. Such a column means two things (a flag, and a number compared
    with a threshold)."""
    if pd.api.types.infer_dtype(values, skipna=True) not in ("mixed", "mixed-integer"):
        return None  # (in C: all booleans, all numbers, all text...: nothing to look for)
    first_bool = first_number = None
    for i, value in enumerate(values):
        if isinstance(value, (bool, np.bool_)):
            first_bool = i if first_bool is None else first_bool
        elif isinstance(value, numbers.Number) and value == value:  # (NaN is missing)
            first_number = i if first_number is None else first_number
        if first_bool is not None and first_number is not None:
            return " and ".join(f"{_plain(values[j])!r} at {_at(j)}"
                                for j in sorted((first_bool, first_number)))
    return None


#: text a CSV file's reader (pandas) reads as a number: ASCII digits, a point, an exponent,
#: blanks around; infinity in any case and NaN as pandas' words for a missing number write
#: them, no blanks around (found by review: "NAN" and " nan" are text there). Python's
#: ``float`` also reads "1_000", "NAN" and other scripts' digits, which make the column text
NUMBER_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*"
                         r"|[+-]?(?i:inf(?:inity)?)|-?(?:NaN|nan)", re.ASCII)


def first_non_numeric(arr: np.ndarray, booleans: bool = False) -> str:
    """'<value> at position <i>' of the first entry of an object array that is not a number
    (nor a boolean, where ``booleans``: a column that may hold booleans instead).

    Text that reads as a number (a CSV column with one stray word is all text) is passed
    over, so the value named is the one to fix; if every entry is such text, the first is
    named as numbers written as text. Text that only Python's ``float`` reads ("1_000", digits
    of other scripts) is named (found by review: a good "0.1" was named instead).
    """
    first_text = None
    for i, value in enumerate(arr):
        if value is None or (isinstance(value, numbers.Real)
                             and not isinstance(value, (bool, np.timedelta64))):
            continue
        if booleans and isinstance(value, (bool, np.bool_)):
            continue
        if isinstance(value, str):
            if not NUMBER_TEXT.fullmatch(value):
                return f"{value!r} at {_at(i)}"
            if first_text is None:
                first_text = i
            continue
        return f"{value!r} at {_at(i)}"
    if first_text is not None:
        return f"{arr[first_text]!r} at {_at(first_text)} (numbers written as text)"
    return "a non-numeric value"


def _to_numpy(values, name: str) -> np.ndarray:
    """Array-like -> 1-D numpy array (missing numeric values as NaN)."""
    return column_values(values, name)[0]


def _shown_values(values, limit: int = 5) -> str:
    values = [_plain(v) for v in values]
    text = ", ".join(repr(v) for v in values[:limit])
    return f"[{text}{', ...' if len(values) > limit else ''}]"


def check_length(arr: np.ndarray, n: int, name: str, reference: str = "y_true") -> None:
    if arr.shape[0] != n:
        raise ValueError(f"{name} has {arr.shape[0]} rows but {reference} has {n}")


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


def require_columns(df: pd.DataFrame, columns, argument: str, shown: bool = True) -> None:
    """Raise a KeyError naming ``argument`` and the columns of ``df`` it asks for but lacks,
    or a ValueError when one of them names several columns (a column is found by name), or,
    for names the tables show (``shown``), one equal to a column's name but written
    otherwise (``True`` for the column 1)."""
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
    for column in columns if shown else ():
        # (a name equal to a column's but written otherwise, True for the column 1 or 1.0
        # for 1, found the column while the tables showed the name given: found by review)
        at = df.columns.get_loc(column)  # (found above; NaN finds a NaN, as pandas does)
        own = df.columns[at] if isinstance(at, numbers.Integral) else column
        if str(own) != str(column):
            raise ValueError(f"{argument}: {column!r} names the column {own!r} (equal in "
                             f"Python, but written otherwise): name it {own!r}, so that the "
                             f"tables show the column evaluated")


def column_name(value, argument: str):
    """One column name (a string, or another label that a DataFrame column can carry)."""
    if isinstance(value, (list, tuple, set, dict, np.ndarray, pd.Index)):
        hint = (" (columns named by tuples, a MultiIndex, are not read: flatten them first, "
                "e.g. df.columns = ['_'.join(map(str, c)) for c in df.columns])"
                if isinstance(value, tuple) else "")
        raise TypeError(f"{argument} must be one column name, got a {type(value).__name__} "
                        f"{list(value)[:5]!r}{hint}")
    if value is None:
        raise ValueError(f"{argument} is required")
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"{argument} must be a column name, got {type(value).__name__}") from None
    return value


def names_column(df, value) -> bool:
    """Whether ``value`` names a column of ``df`` (a string, or another label a column
    carries, such as 3: found by review, evaluate took an integer label and scores by name
    but not an integer sample_weight, which fastbias.dask.evaluate took), not data. A number
    that no column carries is a KeyError naming ``sample_weight`` and the columns (the
    callers' one use: a weight column, or one weight per row)."""
    if isinstance(value, str):
        return True
    if value is None or isinstance(value, (bool, list, tuple, dict, set, np.ndarray,
                                           pd.Series, pd.Index, pd.DataFrame)):
        return False
    try:
        found = value in df.columns
    except TypeError:
        return False
    if not found and isinstance(value, (numbers.Number, np.generic)) and \
            not isinstance(value, (bool, np.bool_)):
        # one number where a column or one weight per row is wanted: no such column (it read
        # "must be an array-like ..., got int")
        require_columns(df, [value], "sample_weight")
    return found


def name_list(value, argument: str, columns=None) -> list:
    """One column name or several -> a non-empty list of distinct names.

    A non-string scalar is a name only if ``columns`` (the frame's columns)
    has it; otherwise the message says what was expected.
    """
    if isinstance(value, str):
        return [value]
    if value is None:
        raise ValueError(f"{argument} is required")
    _refuse_data_for_names(value, argument, columns)
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
    shown = [str(x) for x in out]
    if len(set(shown)) != len(shown):  # (1 and "1": two rows both shown as 1)
        alike = [x for x in out if shown.count(str(x)) > 1]
        raise ValueError(f"{argument} has names that read alike once written: {alike!r}; "
                         f"the tables and reports could not tell them apart: rename one")
    return out


def _refuse_data_for_names(value, argument: str, columns) -> None:
    """A TypeError for data where column names are asked for (a dict of masks, a DataFrame,
    a Series, a boolean or float array): a dict's keys or a DataFrame's columns would be
    read as names and the frame's own columns of those names evaluated instead, silently
    (found by review)."""
    if isinstance(value, tuple) and columns is not None:
        try:
            is_column = value in columns
        except TypeError:
            is_column = False
        if is_column:
            raise TypeError(f"{argument} {value!r} is a column named by a tuple (a MultiIndex "
                            f"of columns), which fastbias does not read: flatten the columns "
                            f"first, e.g. df.columns = ['_'.join(map(str, c)) for c in "
                            f"df.columns]")
    data = isinstance(value, (dict, pd.DataFrame, pd.Series)) or (
        hasattr(value, "to_pandas") and not isinstance(value, pd.Index)) or (
        isinstance(value, np.ndarray) and (value.ndim != 1 or value.dtype.kind in "bfc"))
    if data:
        raise TypeError(f"{argument} names columns of the data (a column name or a list of "
                        f"names), got a {type(value).__name__}: to evaluate values that are not "
                        f"its columns, add them first (df.assign(...)), or use "
                        f"fastbias.bias_metrics, which takes the arrays themselves")


def subgroup_names(subgroups, features: list, columns=None) -> list:
    """The identity column names of ``subgroups`` (``columns``: those present, as
    :func:`name_list` takes them); None or empty where sensitive ``features`` are given, else a
    ValueError that says both ways."""
    empty = subgroups is None or (isinstance(subgroups, (list, tuple)) and not subgroups)
    if empty and not features:
        raise ValueError("give subgroups or sensitive_features (or both): identity columns "
                         "of booleans or fractions, or categorical columns such as 'race'")
    return [] if empty else name_list(subgroups, "subgroups", columns)


def frame_columns(df: pd.DataFrame, label, scores, subgroups, sensitive_features=None) -> tuple:
    """``(label, model names, subgroup names, sensitive feature names)`` of a DataFrame
    call, each found in ``df`` (which must have rows). Subgroups may be None or empty where
    sensitive features are given."""
    label = column_name(label, "label")
    models = name_list(scores, "scores", df.columns)
    features = ([] if sensitive_features is None else
                name_list(sensitive_features, "sensitive_features", df.columns))
    names = subgroup_names(subgroups, features, df.columns)
    require_columns(df, [label], "label")
    require_columns(df, models, "scores")
    require_columns(df, names, "subgroups")
    require_columns(df, features, "sensitive_features")
    if df.shape[0] == 0:
        raise ValueError("df is empty (0 rows)")
    return label, models, names, features
