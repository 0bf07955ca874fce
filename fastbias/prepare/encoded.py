"""Validated, compact rows of one piece of a larger data set (a batch, a Dask partition).

:func:`encode_frame` reads labels, weights, identity columns and scores of a
piece exactly as :func:`fastbias.evaluate` reads them, into int8 membership
codes (1 member, 0 background, -1 unannotated and excluded), so that every
piece of out-of-core data is binarised the same way.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..validate.spec import ColumnSpec, score_dtype
from ..validate.subgroups import identity_column
from ..validate.values import as_labels, as_sample_weight, as_scores
from . import _kernels as K

_NOTHING_MISSING = np.zeros(0, dtype=np.bool_)


@dataclass(frozen=True)
class EncodedRows:
    """Validated, compact rows: what the sweep of a chunk needs and nothing else.

    ``codes`` is (n, n_subgroups) int8: 1 member, 0 background, -1 not
    annotated and excluded (``missing_subgroup="exclude"``).
    """

    labels: np.ndarray
    codes: np.ndarray
    weights: np.ndarray | None
    scores: list


def encode_frame(frame, spec: ColumnSpec, where: str = "") -> EncodedRows:
    """Binarise and validate one piece of the data exactly as :func:`fastbias.evaluate` does.

    ``frame`` is a DataFrame or a dict of equally long Series, by column name.
    """
    n = len(frame[spec.label])
    n_groups = len(spec.subgroups)
    if n == 0:
        return EncodedRows(np.zeros(0, np.bool_), np.zeros((0, len(spec.row_names)), np.int8),
                           np.zeros(0) if spec.weighted else None,
                           [np.zeros(0, score_dtype(frame[m].dtype)) for m in spec.models])
    try:
        labels = as_labels(frame[spec.label], f"label column {spec.label!r}",
                           threshold=spec.label_threshold)
        weights = None
        if spec.weighted:
            weights = as_sample_weight(frame[spec.sample_weight], n,
                                       f"sample_weight column {spec.sample_weight!r}")
            if spec.weight_scale != 1.0:
                weights = weights / spec.weight_scale  # a power of two: exact
        codes = np.empty((n, n_groups), dtype=np.int8)
        for j, name in enumerate(spec.subgroups):
            column = identity_column(frame, name, spec.subgroup_threshold)
            K.membership_codes(column.values, column.threshold,
                                _NOTHING_MISSING if column.missing is None else column.missing,
                                spec.exclude_missing, codes, j)
        scores = [as_scores(frame[m], f"score column {m!r}", n) for m in spec.models]
    except (ValueError, TypeError) as error:
        if where:
            raise type(error)(f"{error} ({where})") from error
        raise
    if spec.combinations:
        codes = with_combination_codes(codes, spec.combinations)
    return EncodedRows(labels, codes, weights, scores)


def with_combination_codes(codes: np.ndarray, combinations) -> np.ndarray:
    """``codes`` (n, k) with one more int8 column per combination of subgroups: 1 when
    the row is a member of all of them, -1 when it is unannotated (excluded) for any of
    them (its membership of the intersection is unknown), else 0 (the in-memory rules of
    ``intersections=``)."""
    n, k = codes.shape
    lookup2, lookup3, parts, n_parts = _combination_tables(k, tuple(map(tuple, combinations)))
    out = np.empty((n, k + len(combinations)), dtype=np.int8)
    K.combination_codes(np.ascontiguousarray(codes), lookup2, lookup3, parts, n_parts, out)
    return out


@functools.lru_cache(maxsize=8)
def _combination_tables(k: int, combinations: tuple) -> tuple:
    """The look-up tables of :func:`with_combination_codes` (made once per set of
    combinations, not once per batch)."""
    c = len(combinations)
    lookup2 = np.full((k, k), -1, dtype=np.int64)
    order = max((len(combo) for combo in combinations), default=2)
    lookup3 = np.full((k, k, k) if order >= 3 else (0, 0, 0), -1, dtype=np.int64)
    parts = np.zeros((c, 3), dtype=np.int64)
    n_parts = np.zeros(c, dtype=np.int64)
    for t, combo in enumerate(combinations):
        (lookup2 if len(combo) == 2 else lookup3)[tuple(combo)] = t
        parts[t, :len(combo)] = combo
        n_parts[t] = len(combo)
    for table in (lookup2, lookup3, parts, n_parts):
        table.flags.writeable = False  # shared by every batch
    return lookup2, lookup3, parts, n_parts
