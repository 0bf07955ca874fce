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
import pandas as pd

from ..validate.columns import _at, from_foreign, in_piece, rows_from
from ..validate.spec import ColumnSpec, score_dtype
from ..validate.subgroups import identity_column
from ..validate.values import as_sample_weight, as_scores
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
    labels = piece_labels(frame, spec, where)
    with in_piece(where):  # (a piece of a file: messages name its rows, and where it lies)
        weights = None
        if spec.weighted:
            weights = as_sample_weight(frame[spec.sample_weight], n,
                                       f"sample_weight column {spec.sample_weight!r}")
            if spec.weight_scale != 1.0:
                weights = weights / spec.weight_scale  # a power of two: exact
        codes = np.empty((n, n_groups), dtype=np.int8)
        for j, name in enumerate(spec.subgroups):
            column = identity_column(frame, name, spec.subgroup_threshold,
                                     want_missing=spec.exclude_missing)
            missing = _NOTHING_MISSING if column.missing is None else column.missing
            K.membership_codes(column.values, column.threshold, missing,
                               spec.exclude_missing, codes, j)
        scores = [as_scores(frame[m], f"score column {m!r}", n) for m in spec.models]
    if spec.combinations:
        codes = with_combination_codes(codes, spec.combinations)
    if spec.features:
        codes = np.concatenate([codes, feature_codes(frame, spec, where)], axis=1)
    return EncodedRows(labels, codes, weights, scores)


def piece_labels(frame, spec: ColumnSpec, where: str = "") -> np.ndarray:
    """The labels of one piece of the rows, validated (see :func:`in_piece`)."""
    with in_piece(where):
        return spec.piece_labels(frame)


def feature_codes(frame, spec: ColumnSpec, where: str = "") -> np.ndarray:
    """(n, values + combinations) int8 membership codes of the sensitive features' subgroups
    (``spec.feature_names``): 1 when the row has the value (every value of the
    combination), -1 when a value it needs is missing and ``missing_subgroup="exclude"``,
    else 0. A value the first pass did not see (the data changed between passes) is a
    ValueError naming the feature, the value and the row."""
    n = len(frame[spec.label])
    index = []
    for name, values in zip(spec.features, spec.feature_values):
        column = frame[name]
        if hasattr(column, "to_pandas") and not isinstance(column, pd.Series):
            column = from_foreign(column)
        column = pd.Series(np.asarray(column, dtype=object) if not isinstance(column, pd.Series)
                           else column.astype(object))
        # (tupleize_cols=False: values that are tuples stay values, not a MultiIndex)
        found = pd.Index(list(values), dtype=object, tupleize_cols=False).get_indexer(column)
        unknown = (found < 0) & ~column.isna().to_numpy()
        if unknown.any():
            row = int(np.flatnonzero(unknown)[0])
            with rows_from(where):
                at = _at(row)
            raise ValueError(f"sensitive feature {name!r} holds {column.iloc[row]!r} at "
                             f"{at}{f' {where}' if where else ''}, a value the first pass did "
                             f"not find: did the data change between the passes?")
        index.append(found.astype(np.int64))
    sizes = [len(values) for values in spec.feature_values]
    out = np.zeros((n, sum(sizes) + len(spec.feature_combos)), dtype=np.int8)
    rows = np.arange(n)
    start = 0
    for found, size in zip(index, sizes):
        known = found >= 0
        out[rows[known], start + found[known]] = 1
        if spec.exclude_missing:
            out[~known, start:start + size] = -1
        start += size
    if spec.feature_combos:
        matrix = np.column_stack(index)
        any_missing = (matrix < 0).any(axis=1)
        combined = np.zeros(n, dtype=np.int64)  # each row's combination as one number
        kept = np.zeros(len(spec.feature_combos), dtype=np.int64)
        for f, size in enumerate(sizes):
            combined = combined * size + np.maximum(matrix[:, f], 0)
            kept = kept * size + np.asarray([c[f] for c in spec.feature_combos], dtype=np.int64)
        order = np.argsort(kept)
        at = np.searchsorted(kept[order], combined)
        hit = (at < kept.shape[0]) & ~any_missing
        hit[hit] = kept[order][at[hit]] == combined[hit]
        out[rows[hit], start + order[at[hit]]] = 1
        if spec.exclude_missing:
            out[any_missing, start:] = -1
    return out


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


#: the most entries of :func:`_combination_tables`' dense look-up tables (256 MiB of int64:
#: up to 5,792 identity columns with pairs, 322 with triples)
MOST_LOOKUP_ENTRIES = 2 ** 25


@functools.lru_cache(maxsize=8)
def _combination_tables(k: int, combinations: tuple) -> tuple:
    """The look-up tables of :func:`with_combination_codes` (made once per set of
    combinations, not once per batch)."""
    c = len(combinations)
    order = max((len(combo) for combo in combinations), default=2)
    if k ** order > MOST_LOOKUP_ENTRIES:  # (found by review: 3.2 GB at 20,000 subgroups)
        raise ValueError(f"intersections={order} out of core with {k:,} identity columns: "
                         f"its look-up table of the chosen combinations would hold "
                         f"{k:,}**{order} entries ({k ** order * 8 / 2 ** 30:,.1f} GiB), more "
                         f"than {MOST_LOOKUP_ENTRIES:,}; evaluate the rows in memory, or give "
                         f"fewer identity columns")
    lookup2 = np.full((k, k), -1, dtype=np.int64)
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
