"""The rows of an array call under ``nan_policy``: validated together, dropped with one warning."""
from __future__ import annotations

import hashlib
import warnings
from typing import NamedTuple

import numpy as np

from .columns import check_length, column_values, rows_kept
from .errors import OmittedRowsWarning
from .settings import check_nan_policy
from .values import (
    _missing_message,
    _numeric_scores,
    _weights_array,
    binary_labels,
    finite_bounds,
)


def rows_digest(mask: np.ndarray) -> str:
    """A short digest of which rows a boolean mask marks (its length too): what a result
    records of the rows it left out, so that a later reading can tell the same rows from
    others of the same count."""
    mask = np.ascontiguousarray(mask, dtype=bool)
    digest = hashlib.sha256(np.int64(mask.shape[0]).tobytes())
    digest.update(np.packbits(mask).tobytes())
    return digest.hexdigest()[:16]


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


class Rows(NamedTuple):
    """The validated rows of an array call (see :func:`validated_rows`)."""
    labels: np.ndarray  # bool, True = positive
    scores: np.ndarray  # finite float32 or float64, contiguous
    weights: np.ndarray | None  # float64, or None
    kept: np.ndarray | None  # which input rows nan_policy="omit" kept; None: all
    score_bounds: tuple  # (smallest, largest) score, scalars of the scores' dtype


def validated_rows(y_true, y_score, sample_weight=None, *, label_threshold=None,
                   pos_label=None, nan_policy: str = "raise", stacklevel: int = 3,
                   workers: int = 1) -> Rows:
    """Validate the row inputs of the array entry points under ``nan_policy``.

    Returns :class:`Rows`: ``kept`` is None when every row is used, else the
    boolean mask (over the input rows) of the rows kept by
    ``nan_policy="omit"``; ``score_bounds`` (found on up to ``workers``
    threads while checking that every score is finite) spare the sort stage
    a pass over the scores.
    """
    check_nan_policy(nan_policy)
    y_arr, y_missing = column_values(y_true, "y_true")
    n = y_arr.shape[0]
    if n == 0:
        raise ValueError("y_true is empty")
    # a float column's NaN are found with its infinities (score_drop_mask, finite_bounds)
    s_arr, s_missing = column_values(y_score, "y_score", float_missing=False)
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
    with rows_kept(kept):  # (messages name the input's rows)
        labels = binary_labels(y_arr, "y_true", label_threshold, pos_label)
        scores = _numeric_scores(s_arr, "y_score")
        bounds = finite_bounds(scores, "y_score", omit=True, workers=workers)
        weights = (None if w_arr is None
                   else _weights_array(w_arr, "sample_weight", w_missing, omit=True))
    return Rows(labels, scores, weights, kept, bounds)
