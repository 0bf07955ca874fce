"""Labels, scores and weights: validated, exact numpy arrays (one reader per input kind)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .._threads import even_ranges, pieces_for, run_pieces
from .columns import (
    _at,
    _first,
    _ints_to_float,
    _plain,
    _shown_values,
    booleans_and_numbers,
    check_length,
    column_values,
    first_non_numeric,
)
from .settings import check_threshold

#: smallest ratio of a positive weight to the largest weight (products of weights stay normal)
WEIGHT_SPREAD_LIMIT = 2.0 ** -480


def _omit_hint(omit: bool) -> str:
    """How to get past missing values: the nan_policy hint only where that option exists."""
    return "drop those rows first, or pass nan_policy='omit'" if omit else "drop those rows first"


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


# above this many scores their bounds are found on several threads
PARALLEL_BOUNDS_MIN_VALUES = 2_000_000


def score_bounds(arr: np.ndarray, workers: int = 1) -> tuple:
    """``(smallest, largest)`` of a non-empty float array, as scalars of its dtype, read on
    up to ``workers`` threads (numpy's reductions release the GIL). Both are NaN if any
    value is: numpy's ``min`` and ``max`` pass NaN on."""
    pieces = pieces_for(arr.shape[0], workers, PARALLEL_BOUNDS_MIN_VALUES)
    parts = run_pieces(lambda r: (arr[r[0]:r[1]].min(), arr[r[0]:r[1]].max()),
                       even_ranges(arr.shape[0], pieces), workers)
    # numpy's min, not Python's: Python's min(nan, x) depends on the order
    return (np.array([p[0] for p in parts], dtype=arr.dtype).min(),
            np.array([p[1] for p in parts], dtype=arr.dtype).max())


def finite_bounds(arr: np.ndarray, name: str, omit: bool = False, workers: int = 1) -> tuple:
    """:func:`score_bounds` of a non-empty float array of scores, refusing NaN and infinite
    values (a ValueError naming ``name``, the counts and the first position): two finite
    bounds mean every value is finite, with no mask made."""
    smallest, largest = score_bounds(arr, workers)
    if not (np.isfinite(smallest) and np.isfinite(largest)):
        raise ValueError(_nonfinite_message(arr, name, omit))
    return smallest, largest


def integer_cut(threshold: float) -> int | None:
    """The least integer at or above ``threshold`` (a finite float) when comparing integers
    with it in float64 could be wrong, else None.

    ``float(v) >= threshold`` is ``v >= threshold`` for every integer ``v`` unless the
    integer just below the cut (``ceil(threshold) - 1``) rounds up to the threshold: which
    happens only beyond 2**53 (2**53 + 3 rounds to 2**53 + 4) and at -2**53. Such
    thresholds are compared as integers instead (``v >= cut``), in the column's own type.

    Examples
    --------
    >>> integer_cut(0.5) is None, integer_cut(2.0 ** 53 + 2) is None
    (True, True)
    >>> integer_cut(2.0 ** 53 + 4) == 2 ** 53 + 4
    True
    """
    if not math.isfinite(threshold):  # (every integer compares right with an infinity)
        return None
    cut = math.ceil(threshold)
    return None if float(cut - 1) < threshold else cut


def _integers_at_or_above(values: np.ndarray, cut: int) -> np.ndarray:
    """``values >= cut`` for an integer array and a Python integer, in the array's type."""
    info = np.iinfo(values.dtype)
    if cut > info.max:
        return np.zeros(values.shape, dtype=bool)
    if cut <= info.min:
        return np.ones(values.shape, dtype=bool)
    return values >= values.dtype.type(cut)


def at_or_above(values: np.ndarray, threshold: float) -> np.ndarray:
    """``values >= threshold`` as real numbers, for a numeric array and a float threshold:
    exactly for floats and integers of every width.

    numpy compares a float32 array with a Python float in float32: a threshold such as 0.7
    rounds to float32(0.7) = 0.69999999, which float32(0.7) then reaches. Here such an array
    is compared with the least value of its type at or above the threshold, which gives the
    exact answer without a float64 copy. Labels and identity columns are made binary so.

    Examples
    --------
    >>> import numpy as np
    >>> at_or_above(np.array([0.7, 0.75], dtype=np.float32), 0.7)
    array([False,  True])
    >>> at_or_above(np.array([0.7, 0.75]), 0.7)
    array([ True,  True])
    """
    if values.dtype.kind == "f" and values.dtype.itemsize < 8:
        kind = values.dtype.type
        with np.errstate(over="ignore"):
            cut = kind(threshold)  # (beyond the type's range: an infinity)
        if float(cut) < threshold:
            cut = np.nextafter(cut, kind(np.inf))
        return values >= cut
    if values.dtype.kind in "iu":
        cut = integer_cut(threshold)
        if cut is not None:  # beyond 2**53: float64 would round the integers
            return _integers_at_or_above(values, cut)
    return values >= threshold


def _exact_float64(arr: np.ndarray, name: str,
                   consequence: str = "ties would change") -> np.ndarray:
    """A float array of another width (long double) -> float64, refusing rounded values."""
    with np.errstate(over="ignore"):  # (beyond float64's range: infinite, then refused)
        converted = arr.astype(np.float64)
    lost = (converted.astype(arr.dtype) != arr) & ~np.isnan(arr)
    if lost.any():
        first = _first(lost)
        shown = np.format_float_scientific(arr[first], trim="-")  # (every digit it has)
        raise ValueError(f"{name} has {int(lost.sum())} {arr.dtype} value(s) that float64 "
                         f"cannot hold exactly (e.g. {shown} at {_at(first)}); "
                         f"{consequence}: cast them yourself")
    return converted


def _nonfinite_message(arr: np.ndarray, name: str, omit: bool = False) -> str:
    bad = ~np.isfinite(arr)
    n_nan = int(np.isnan(arr).sum())
    return (f"{name} has {n_nan} NaN and {int(bad.sum()) - n_nan} infinite value(s) "
            f"(first at {_at(_first(bad))}); scores must be finite: {_omit_hint(omit)}")


def as_scores(y_score, name: str = "y_score", n: int | None = None, *,
              omit: bool = False) -> np.ndarray:
    """Validate scores: numeric, 1-D, finite; float32 kept (ties decided in float32).

    ``omit`` says the caller offers ``nan_policy="omit"`` (messages then mention it).
    """
    arr, _ = column_values(y_score, name, float_missing=False)  # (finite_bounds finds NaN)
    if n is not None:
        check_length(arr, n, name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    arr = _numeric_scores(arr, name)
    finite_bounds(arr, name, omit)
    return arr


#: what a message of labels that need a positive class says, where pos_label is taken
POS_LABEL_HINT = "pass pos_label to say which value is the positive class"
#: ... where it is not (the caller's own argument list has no pos_label)
NO_POS_LABEL_HINT = "map them to booleans first (y_true == the positive value)"


def _same_label(value, pos_label) -> bool:
    """Whether a label value is ``pos_label`` (as ``arr == pos_label`` compares them)."""
    try:
        return bool(value == pos_label)
    except (TypeError, ValueError):
        return False


def binary_labels(arr: np.ndarray, name: str, threshold=None, pos_label=None,
                  threshold_name: str = "label_threshold", *,
                  pos_label_hint: str = POS_LABEL_HINT, piece: bool = False) -> np.ndarray:
    """Labels without missing values -> bool array (True = positive).

    ``pos_label_hint``: what a message of labels that need a positive class
    advises (the caller's way of giving one, or of mapping the labels). ``piece``: the
    labels are one piece of the rows (a batch of a file, a Dask partition), which may lack
    ``pos_label``; :class:`LabelClasses` checks the classes of all the pieces."""
    takes_pos_label = pos_label_hint == POS_LABEL_HINT
    if pos_label is not None:
        if threshold is not None:
            raise ValueError(f"pass either pos_label or {threshold_name}, not both")
        mixed = booleans_and_numbers(arr) if arr.dtype == object else None
        if mixed is not None:  # (True == 1 in Python: the two would read as one class)
            raise TypeError(f"{name} holds both booleans and numbers ({mixed}); write it "
                            f"one way")
        codes, distinct = pd.factorize(arr)
        if len(distinct) > 2:
            # the third class is one besides pos_label and the first other value (found by
            # review: a piece holding "ok", "maybe", "toxic" in that order named the positive
            # class "toxic" as the third)
            others = [j for j, value in enumerate(distinct) if not _same_label(value, pos_label)]
            stray = others[1] if len(others) < len(distinct) else 2
            third = int(np.flatnonzero(codes == stray)[0])
            raise ValueError(f"{name} has {len(distinct)} distinct values "
                             f"{_shown_values(distinct)} (the third, "
                             f"{_plain(distinct[stray])!r}, first at {_at(third)}); pos_label "
                             f"needs two-class labels (for one class against the rest pass "
                             f"y_true == value)")
        positive = np.asarray(arr == pos_label)
        if positive.shape != arr.shape:  # numpy gave a scalar: incomparable types
            positive = np.zeros(arr.shape[0], dtype=bool)
        positive = np.ascontiguousarray(positive, dtype=np.bool_)
        if not piece and not positive.any():
            raise ValueError(f"pos_label {pos_label!r} does not occur in {name} "
                             f"(its values are {_shown_values(distinct)})")
        return positive
    kind = arr.dtype.kind
    mixed = booleans_and_numbers(arr) if kind == "O" else None
    if mixed is not None:  # (named as with pos_label: found by review, "e.g. a non-numeric
        # value" named nothing)
        raise TypeError(f"{name} holds both booleans and numbers ({mixed}); write it one way")
    if kind in "OUS":
        shown = (first_non_numeric(arr, booleans=True) if kind == "O"
                 else f"{_plain(arr[0])!r} at {_at(0)}")
        raise TypeError(f"{name} has non-numeric labels (dtype {arr.dtype}, e.g. {shown}); "
                        f"{pos_label_hint}")
    if kind not in "biuf":
        raise TypeError(f"{name} must be numeric or boolean, got dtype {arr.dtype}")
    if kind == "b":  # booleans are the classes themselves: no threshold applies
        return np.ascontiguousarray(arr)
    if threshold is not None:
        thr = check_threshold(threshold, threshold_name)
        # two reductions, no masks (a NaN, which callers refuse first, would pass either way)
        if arr.shape[0] and (arr.min() < 0 or arr.max() > 1):
            outside = (arr < 0) | (arr > 1)
            first = _first(outside)
            raise ValueError(f"{name} has {int(outside.sum())} value(s) outside [0, 1] (e.g. "
                             f"{_plain(arr[first])!r} at {_at(first)}); a label is 0/1 or a "
                             f"fraction in [0, 1] (e.g. the share of annotators who said "
                             f"positive) made binary by {threshold_name}. Map other values "
                             f"first"
                             + (", or pass pos_label for two-valued labels" if takes_pos_label
                                else ""))
        return np.ascontiguousarray(at_or_above(arr, thr))
    not_binary = (arr != 0) & (arr != 1)
    if not_binary.any():
        first = _first(not_binary)
        raise ValueError(f"{name} is not binary: {int(not_binary.sum())} value(s) other than "
                         f"0/1 (e.g. {_plain(arr[first])!r} at {_at(first)}); pass a label "
                         f"threshold ({threshold_name}) to binarize"
                         + (", or pos_label" if takes_pos_label else ""))
    return np.ascontiguousarray(arr == 1)


def _missing_message(missing: np.ndarray, name: str, what: str = "missing",
                     omit: bool = False) -> str:
    return (f"{name} has {int(missing.sum())} {what} value(s) (NaN, None or pd.NA; first at "
            f"{_at(_first(missing))}): {_omit_hint(omit)}")


def as_labels(y_true, name: str = "y_true", threshold: float | None = None,
              pos_label=None, threshold_name: str = "label_threshold", *,
              omit: bool = False, pos_label_hint: str = POS_LABEL_HINT,
              piece: bool = False) -> np.ndarray:
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
    return binary_labels(arr, name, threshold, pos_label, threshold_name,
                         pos_label_hint=pos_label_hint, piece=piece)


def _class_key(value) -> tuple:
    """What tells two label values apart across pieces: their kind and value, so that True
    and 1 (equal in Python) are two classes, as they are in one column in memory; 1 and 1.0
    one (a column of both reads as numbers)."""
    if isinstance(value, (bool, np.bool_)):
        return ("boolean", bool(value))
    if isinstance(value, (int, float, np.number)):
        return ("number", value)
    if isinstance(value, (str, bytes)):
        return ("text", value)
    return (type(value).__name__, value)


class LabelClasses:
    """The label values of rows read in pieces (a file's batches, Dask partitions), where
    ``pos_label`` names the positive class: each piece is checked alone (at most two
    values), and these check them all together, as one column in memory would be.

    Found on each piece (:meth:`of_piece`, where the piece is read, e.g. on a Dask worker)
    and joined (:meth:`join`, on the driver, in the pieces' order); :meth:`check` then
    refuses a third value, naming it and the row where it first occurs, and a
    ``pos_label`` that no row holds.

    Examples
    --------
    >>> import numpy as np
    >>> from fastbias.validate.values import LabelClasses
    >>> a = LabelClasses.of_piece(np.array(["no", "yes"], dtype=object), "yes", "in part 0")
    >>> b = LabelClasses.of_piece(np.array(["no", "maybe"], dtype=object), "yes", "in part 1")
    >>> LabelClasses.join([a, b]).check("yes", "label column 'y'")
    Traceback (most recent call last):
    ...
    ValueError: label column 'y' has more than two distinct values (['no', 'yes', 'maybe']; 'maybe' first at position 1, in part 1); pos_label needs two-class labels: map the other values in the data first (a value read as a number in one batch and as text in another counts twice)
    """

    #: at most this many values are kept (one past two: enough to refuse)
    KEPT = 3

    def __init__(self, values: tuple = (), positive: bool = False):
        #: ``(value, where it first occurs)`` of each distinct value, in order of appearance
        self.values = tuple(values)
        #: whether any row is of the positive class
        self.positive = bool(positive)

    @classmethod
    def of_piece(cls, arr: np.ndarray, pos_label, where: str = "") -> "LabelClasses":
        """The values of one piece's labels (``arr``, no missing values) and where each
        first occurs (the piece's row, see :func:`~fastbias.validate.columns.rows_from`)."""
        from .columns import rows_from

        codes, uniques = pd.factorize(arr)
        kept = range(min(len(uniques), cls.KEPT))  # (first seen first: no sort needed)
        with rows_from(where):
            found = tuple((_plain(uniques[c]),
                           f"{_at(int(np.argmax(codes == c)))}{', ' + where if where else ''}")
                          for c in kept)
        positive = np.asarray(arr == pos_label)
        return cls(found, positive.shape == arr.shape and bool(positive.any()))

    @classmethod
    def join(cls, parts) -> "LabelClasses":
        """The classes of several pieces' rows, taken in order (None for an empty piece)."""
        seen: dict = {}
        positive = False
        for part in parts:
            if part is None:
                continue
            positive |= part.positive
            for value, where in part.values:
                key = _class_key(value)
                if len(seen) < cls.KEPT and key not in seen:
                    seen[key] = (value, where)
        return cls(tuple(seen.values()), positive)

    def check(self, pos_label, name: str) -> None:
        """A ValueError unless the pieces hold at most two values, one of them ``pos_label``
        (``name``: the label column, for messages)."""
        values = [value for value, _ in self.values]
        if len(values) > 2:
            third, where = self.values[2]
            raise ValueError(f"{name} has more than two distinct values "
                             f"({_shown_values(values)}; {third!r} first at {where}); "
                             f"pos_label needs two-class labels: map the other values in the "
                             f"data first (a value read as a number in one batch and as text "
                             f"in another counts twice)")
        if not self.positive:
            raise ValueError(f"pos_label {pos_label!r} does not occur in {name} "
                             f"(its values are {_shown_values(values)})")


def _weights_array(arr: np.ndarray, name: str, missing: np.ndarray | None,
                   omit: bool = False) -> np.ndarray:
    if arr.dtype.kind not in "iuf":
        shown = f" (e.g. {first_non_numeric(arr)})" if arr.dtype.kind == "O" else ""
        raise TypeError(f"{name} must be numeric, got dtype {arr.dtype}{shown}")
    if arr.dtype.kind in "iu" and missing is None:  # (with missing entries: refused already)
        arr = _ints_to_float(arr, name, consequence="the weights would be rounded")
    elif arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # long double (found by review:
        arr = _exact_float64(arr, name, "the weights would be rounded")  # rounded silently)
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if missing is not None:
        raise ValueError(_missing_message(missing, name, "NaN or missing", omit))
    if not arr.shape[0]:
        return arr
    # two reductions answer every check; the masks that name counts and positions are made
    # only for the message (a weighted call's validation read the weights six times)
    low, high = arr.min(), arr.max()
    if not (np.isfinite(low) and np.isfinite(high)):
        infinite = np.isinf(arr)
        raise ValueError(f"{name} has {int(infinite.sum())} infinite value(s) "
                         f"(first at {_at(_first(infinite))}); weights must be finite")
    if low < 0:
        negative = arr < 0
        first = _first(negative)
        raise ValueError(f"{name} has {int(negative.sum())} negative value(s) "
                         f"(e.g. {_plain(arr[first])} at {_at(first)}); weights must be >= 0")
    if high > 0:
        smallest = low if low > 0 else arr.min(where=arr > 0, initial=np.inf)
        if smallest < high * WEIGHT_SPREAD_LIMIT:  # (refused: find where, for the message)
            at_smallest = int(np.argmin(np.where(arr > 0, arr, np.inf)))
            at_largest = int(np.argmax(arr))
            check_weight_spread(arr[at_smallest], arr[at_largest], name,
                                f" at {_at(at_smallest)}", f" at {_at(at_largest)}")
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


#: the largest weight that DeLong intervals and significance tests take (and 1 / it the
#: smallest largest weight): they multiply up to four weights, in the weights' own scale
INTERVAL_WEIGHT_LIMIT = 2.0 ** 200


def check_interval_weights(largest, name: str, where: str = "",
                           what: str = "DeLong intervals and significance tests") -> None:
    """Refuse weights whose largest is above :data:`INTERVAL_WEIGHT_LIMIT` or below its
    inverse for ``what``: these treat weights as frequency weights, so that their scale
    matters (unlike the metrics'), and their sums of products of up to four weights would
    overflow or underflow, leaving standard errors and p-values NaN, 0 or 1 without a word.
    ``largest`` 0 (no weight) passes: nothing is computed from it."""
    largest = float(largest)
    if largest > 0 and not 1.0 / INTERVAL_WEIGHT_LIMIT <= largest <= INTERVAL_WEIGHT_LIMIT:
        raise ValueError(
            f"{name} holds weights too far from 1 for {what}: the largest is "
            f"{_plain(largest)!r}{where}. These treat the weights as frequency weights (their "
            f"scale matters, unlike the metrics') and multiply up to four of them, which "
            f"overflows or underflows unless the largest weight is between 2**-200 and 2**200 "
            f"(about 6.2e-61 and 1.6e+60): bring the weights into that range")


def check_interval_weights_of(sample_weight, what: str = "DeLong intervals and "
                                                         "significance tests",
                              labels: np.ndarray | None = None,
                              bits: int | None = None) -> None:
    """:func:`check_interval_weights` of validated weights (None: nothing to check),
    naming the position of the largest; with the rows' ``labels``, also
    :func:`check_weight_resolution` (``bits``: default INTERVAL_RESOLUTION_BITS)."""
    if sample_weight is not None and sample_weight.shape[0]:
        at = int(np.argmax(sample_weight))
        check_interval_weights(sample_weight[at], "sample_weight", f" (at {_at(at)})", what)
        if labels is not None:
            check_weight_resolution_of(sample_weight, labels, what,
                                       INTERVAL_RESOLUTION_BITS if bits is None else bits)


def check_weight_resolution_of(sample_weight: np.ndarray, labels: np.ndarray, what: str,
                               bits: int) -> None:
    """:func:`check_weight_resolution` of validated weights and their rows' labels; two
    passes where every positive weight is above ``2**-bits`` of all the weight (then of its
    class's too), the classes apart only where one is not."""
    smallest = np.min(sample_weight, where=sample_weight > 0, initial=np.inf)
    if smallest >= float(np.sum(sample_weight * _TOTAL_UNIT)) * 2.0 ** -bits / _TOTAL_UNIT:
        return
    check_weight_resolution(*class_weight_extremes(sample_weight, labels), "sample_weight",
                            what, bits)


#: DeLong intervals and significance tests read each row's weight and placement from float64
#: running sums of its class, and judge their rounding against those sums: a review checked
#: weights up to 2**50 apart (their largest error 3.8e-5 of a standard error), and beyond
#: found rows lighter than 2**-53 of their class vanish from them unseen (a standard error 40%
#: low, a p-value 63 times too large, with one row of weight 1e30 among rows of about 1).
#: Where the rows are at hand such a case is rechecked from them, in double-double (about
#: 2**-106): a row below 2**-90 of its class's weight is refused for them
INTERVAL_RESOLUTION_BITS = 90

#: the same for threshold metrics, whose sums are double-double (about 2**-104 an operation)
THRESHOLD_RESOLUTION_BITS = 90


#: class totals are summed in units of 2**128 (exact: a power of two), so that weights near
#: the largest float do not make them inf (a review: 100 weights of 1e307, all equal, were
#: refused against an infinite total)
_TOTAL_UNIT = 2.0 ** -128


def check_weight_total(total: float, name: str, what: str) -> None:
    """Refuse weights whose total (``total``, in units of 2**128: see _TOTAL_UNIT) is beyond
    float64's range, for ``what``, which adds the weights as they are: the sums would be
    inf and the rates NaN, with a warning that blamed empty sets (a review: 100 weights of
    1e307). The metrics divide the weights by a power of two first and take them."""
    if not np.isfinite(total / _TOTAL_UNIT):
        raise ValueError(f"{name} sums to about {total:.6g} x 2**128, beyond float64's range "
                         f"(1.8e308), and {what} add the weights as they are: divide the "
                         f"weights by a power of two (ratios such as rates do not change)")


def row_place(position: int, where: str = "") -> str:
    """``" at <position> <where>"``: a row of the input or of a piece (``where``: the piece,
    as its reader names it), for messages."""
    return f" at {_at(position)}" + (f" {where}" if where else "")


def class_weight_extremes(sample_weight: np.ndarray, labels: np.ndarray) -> tuple:
    """``(totals, smallest, where)``: each class's (negatives, positives) total weight in
    units of 2**128 (see _TOTAL_UNIT), its smallest positive weight (inf if none) and where
    that row is (text, for messages)."""
    totals, smallest, where = [], [], []
    for in_class in (~labels, labels):
        w = sample_weight[in_class]
        totals.append(float(np.sum(w * _TOTAL_UNIT)))
        positive = w > 0
        if positive.any():
            k = int(np.argmin(np.where(positive, w, np.inf)))
            smallest.append(float(w[k]))
            where.append(row_place(int(np.flatnonzero(in_class)[k])))
        else:
            smallest.append(np.inf)
            where.append("")
    return totals, smallest, where


def check_weight_resolution(totals, smallest, where, name: str, what: str, bits: int) -> None:
    """Refuse, for ``what``, weights of which a row weighs less than ``2**-bits`` of its
    class's total weight (``totals`` in units of 2**128, ``smallest`` and ``where`` per
    class, negatives then positives, as :func:`class_weight_extremes` gives them): ``what``
    reads each row's weight from running sums of its class, which cannot resolve it, and
    could be silently wrong. The metrics (certified) and the bootstrap are exact for such
    weights."""
    for c, kind in enumerate(("negative", "positive")):
        if 0 < smallest[c] < totals[c] * 2.0 ** -bits / _TOTAL_UNIT:
            total = totals[c] / _TOTAL_UNIT
            shown = f"{total:.6g}" if np.isfinite(total) else \
                f"{totals[c]:.6g} x 2**128"
            raise ValueError(
                f"{name} holds a {kind} row of weight {_plain(smallest[c])!r}{where[c]}, "
                f"below 2**-{bits} of its class's total weight ({shown}): {what} "
                f"read each row's weight from running sums of its class, which cannot "
                f"resolve it, so they could be wrong without a sign. The metrics and "
                f"ci='bootstrap' are exact with such weights; for {what}, drop the rows of "
                f"such weight or bring the weights closer together")


def as_sample_weight(sample_weight, n: int, name: str = "sample_weight", *,
                     omit: bool = False, reference: str = "y_true") -> np.ndarray | None:
    """Validate weights: numeric, finite, non-negative, length ``n`` (that of
    ``reference``, as messages name it); float64."""
    if sample_weight is None:
        return None
    arr, missing = column_values(sample_weight, name)
    check_length(arr, n, name, reference)
    return _weights_array(arr, name, missing, omit)



def power_of_two_scale(sample_weight: np.ndarray) -> float:
    """The power of two that brings the largest weight into [1, 2) (1 if all are 0).

    Dividing by it is exact, so weighted metrics (ratios) do not depend on the
    weights' scale, and no product of weights overflows or underflows.
    """
    largest = float(np.max(sample_weight)) if sample_weight.shape[0] else 0.0
    if not largest > 0.0:
        return 1.0
    return float(np.ldexp(1.0, int(np.frexp(largest)[1]) - 1))
