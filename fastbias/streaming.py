"""Exact bias metrics for data larger than memory, by chunks of the score order.

The one-machine sweep needs all rows sorted by score. Here the rows are cut
into *chunks* that each hold a contiguous score range, with equal scores never
split between chunks; each chunk is swept on its own (any order, in parallel)
and the per-chunk counts are combined exactly (see
``fastbias._chunk_kernels``): the pairs between two chunks are products of
the higher chunk's cell counts with the cumulative counts of all lower chunks.

:func:`evaluate_parquet` is the out-of-core path for Parquet files:

1. read the score columns in batches and keep a random sample of them, whose
   quantiles become bucket edges (a score that fills half a bucket or more
   gets a bucket of its own);
2. read all needed columns in batches, encode them compactly (label, one
   int8 membership code per subgroup, score, weight) and append each row to
   the spill file of its bucket; rows of single-score buckets are only
   counted, never stored (all their pairs are ties);
3. sweep the buckets on all local cores (threads; the kernels release the
   GIL), each bucket in memory on its own, and combine.

Memory stays bounded by about one batch plus ``n_jobs`` buckets, whatever
the number of rows. :mod:`fastbias.dask` uses the same chunk counts, with
Dask's own shuffle making the chunks.
"""
from __future__ import annotations

import math
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from . import _chunk_kernels as CK
from ._core import (SweepCounts, WeightedLow, power_of_two_scale, prepare_memberships,
                    prepare_memberships_dense, sweep_counts)
from ._kernels import N_COUNT_COLUMNS
from ._validation import (as_labels, as_sample_weight, as_scores, check_threshold,
                          check_weight_spread, resolve_n_jobs)
from ._validation import identity_column, name_list
from .evaluation import MISSING_POLICIES, EvaluationResult
from .metrics import background_totals, overall_auc_from_counts, table_from_counts, warn_undefined

__all__ = ["ChunkCounts", "chunk_counts", "evaluate_parquet", "table_from_chunks"]

_NOTHING_MISSING = np.zeros(0, dtype=np.bool_)


# --------------------------------------------------------------------------- columns

@dataclass(frozen=True)
class ColumnSpec:
    """The columns to evaluate and how they are binarised (the same for every chunk)."""

    label: str
    models: list
    subgroups: list
    sample_weight: str | None
    label_threshold: float | None
    subgroup_threshold: float
    missing_subgroup: str
    #: power of two every weight is divided by, the same for all chunks (see with_weight_range)
    weight_scale: float = 1.0

    @property
    def weighted(self) -> bool:
        return self.sample_weight is not None

    @property
    def exclude_missing(self) -> bool:
        return self.missing_subgroup == "exclude"

    @property
    def columns(self) -> list:
        """Every column needed, each once, in a stable order."""
        wanted = [self.label, *self.models, *self.subgroups]
        if self.sample_weight is not None:
            wanted.append(self.sample_weight)
        return list(dict.fromkeys(wanted))

    def with_weight_range(self, smallest_positive: float, largest: float) -> "ColumnSpec":
        """This spec with the weight scale of weights in that range (refusing too wide a one)."""
        if not self.weighted:
            return self
        name = f"sample_weight column {self.sample_weight!r}"
        if np.isfinite(largest) and largest > 0:
            check_weight_spread(smallest_positive, largest, name, " in the data", " in the data")
            return replace(self, weight_scale=power_of_two_scale(np.array([largest])))
        return self

    def settings(self, engine: str) -> dict:
        return {"label_threshold": self.label_threshold,
                "subgroup_threshold": self.subgroup_threshold,
                "missing_subgroup": self.missing_subgroup, "ci": None,
                "weighted": self.weighted, "nan_policy": "raise", "pos_label": None,
                "engine": engine}


def column_spec(available, *, label, scores, subgroups, label_threshold, subgroup_threshold,
                missing_subgroup, sample_weight, source: str = "the data") -> ColumnSpec:
    """Validate the column arguments against the ``available`` column names."""
    if missing_subgroup not in MISSING_POLICIES:
        raise ValueError(f"missing_subgroup must be one of {MISSING_POLICIES}, "
                         f"got {missing_subgroup!r}")
    if not isinstance(label, str):
        raise TypeError(f"label must be a column name, got {type(label).__name__}")
    if sample_weight is not None and not isinstance(sample_weight, str):
        raise TypeError("sample_weight must be a column name here (an array cannot follow the "
                        "rows of partitioned or out-of-core data), got "
                        f"{type(sample_weight).__name__}")
    models = name_list(scores, "scores")
    names = name_list(subgroups, "subgroups")
    available = list(available)
    present = set(available)
    for argument, wanted in (("label", [label]), ("scores", models), ("subgroups", names),
                             ("sample_weight", [] if sample_weight is None else [sample_weight])):
        missing = [c for c in wanted if c not in present]
        if missing:
            shown = available[:20]
            raise KeyError(f"{argument}: column(s) {missing} not in {source} (columns are "
                           f"{shown}{' ...' if len(available) > 20 else ''})")
    return ColumnSpec(label, models, names, sample_weight,
                      None if label_threshold is None
                      else check_threshold(label_threshold, "label_threshold"),
                      check_threshold(subgroup_threshold, "subgroup_threshold"), missing_subgroup)


def score_dtype(dtype) -> np.dtype:
    """The dtype ``as_scores`` gives a column of ``dtype`` (float32 stays float32, so ties
    are decided in float32; other numbers become float64), found by asking it."""
    try:
        return as_scores(pd.Series([1], dtype=dtype), "probe").dtype
    except (TypeError, ValueError):
        return np.dtype(np.float64)


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
        return EncodedRows(np.zeros(0, np.bool_), np.zeros((0, n_groups), np.int8),
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
            CK.membership_codes(column.values, column.threshold,
                                _NOTHING_MISSING if column.missing is None else column.missing,
                                spec.exclude_missing, codes, j)
        scores = [as_scores(frame[m], f"score column {m!r}", n) for m in spec.models]
    except (ValueError, TypeError) as error:
        if where:
            raise type(error)(f"{error} ({where})") from error
        raise
    return EncodedRows(labels, codes, weights, scores)


# --------------------------------------------------------------------------- chunks

@dataclass(frozen=True)
class ChunkCounts:
    """Sweep counts of one chunk: rows holding a contiguous score range, ties never split.

    Attributes
    ----------
    counts : ndarray (n_subgroups, 7)
        Cell totals and twice the U numerators of the pairs inside the chunk
        (columns as in ``fastbias._kernels``); int64 unweighted, float64 weighted.
    backgrounds : ndarray (n_subgroups, 2)
        Background negatives/positives (count or weight) of each subgroup:
        the rows it may be compared with (all rows, or the annotated ones with
        ``missing_subgroup="exclude"``) that are not in it. Summed row by row,
        never as a difference.
    cell_rows, universe_rows : ndarray (n_subgroups, 2) of int64
        Row counts of the subgroup cells and of the universes.
    class_totals : ndarray (2,)
        Negatives/positives (count or weight) of all rows of the chunk.
    class_rows : ndarray (2,) of int64
    twice_u : int or float
        Twice the overall U of the pairs inside the chunk.
    min_score, max_score : float
        The chunk's score range (to order the chunks and check they do not overlap).
    low : WeightedLow or None
        Weighted chunks: the low parts of the double-double ``counts``,
        ``backgrounds``, ``class_totals`` and ``twice_u`` (their weights are
        the input's divided by the caller's common ``weight_scale``).
    """

    counts: np.ndarray
    backgrounds: np.ndarray
    cell_rows: np.ndarray
    universe_rows: np.ndarray
    class_totals: np.ndarray
    class_rows: np.ndarray
    twice_u: float
    min_score: float
    max_score: float
    low: WeightedLow | None = None


def _chunk_universes(codes: np.ndarray) -> list:
    """Group subgroups that share the rows they may be compared with: [(kept or None, [j])]."""
    n_groups = codes.shape[1]
    if codes.shape[0] == 0 or n_groups == 0 or codes.min() >= 0:
        return [(None, list(range(n_groups)))]
    groups: dict = {}
    for j in range(n_groups):
        missing = codes[:, j] < 0
        key = np.packbits(missing).tobytes()
        groups.setdefault(key, (missing, []))[1].append(j)
    return [(np.flatnonzero(~missing) if missing.any() else None, members)
            for missing, members in groups.values()]


def chunk_counts(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray,
                 weights: np.ndarray | None = None) -> ChunkCounts | None:
    """Sweep one chunk's rows (any row order) with the ordinary one-machine kernels.

    ``scores`` validated float32/float64, ``labels`` bool, ``codes`` int8
    (n, n_subgroups) as in :class:`EncodedRows`, ``weights`` float64 or None,
    already divided by the weight scale common to all chunks (they are used
    as they are). Returns None for an empty chunk.
    """
    n = scores.shape[0]
    if n == 0:
        return None
    n_groups = codes.shape[1]
    weighted = weights is not None
    dtype = np.float64 if weighted else np.int64
    counts = np.zeros((n_groups, N_COUNT_COLUMNS), dtype=dtype)
    backgrounds = np.zeros((n_groups, 2), dtype=dtype)
    counts_lo = np.zeros((n_groups, N_COUNT_COLUMNS))
    backgrounds_lo = np.zeros((n_groups, 2))
    cell_rows = np.zeros((n_groups, 2), dtype=np.int64)
    universe_rows = np.zeros((n_groups, 2), dtype=np.int64)
    overall = None
    for kept, members in _chunk_universes(codes):
        if kept is None:
            s, y, w, c = scores, labels, weights, codes
        else:
            if kept.shape[0] == 0:
                continue  # no row of this chunk is annotated for these subgroups
            s, y, c = scores[kept], labels[kept], codes[kept]
            w = None if weights is None else weights[kept]
        # members share their unannotated rows, so on the kept rows their codes are 0/1
        matrix = c if len(members) == n_groups else c[:, members]
        matrix = np.ascontiguousarray(matrix).view(np.uint8)
        sc = sweep_counts(s, prepare_memberships_dense(y, matrix, members), w, weight_scale=1.0)
        counts[members] = sc.counts
        background = np.column_stack(background_totals(sc))
        backgrounds[members] = background
        if weighted:
            counts_lo[members] = sc.low.counts
            backgrounds_lo[members] = np.where(background > 0, sc.low.background, 0.0)
        cell_rows[members] = sc.cell_rows
        universe_rows[members] = sc.class_rows
        if kept is None:
            overall = sc
    if overall is None:
        overall = sweep_counts(scores, prepare_memberships(labels, [], []), weights,
                               weight_scale=1.0)
    low = None
    if weighted:
        low = WeightedLow(counts_lo, backgrounds_lo, np.asarray(overall.low.totals, np.float64),
                          overall.low.twice_overall_u)
    return ChunkCounts(counts, backgrounds, cell_rows, universe_rows,
                       np.array([overall.total_neg, overall.total_pos], dtype=dtype),
                       np.array(overall.class_rows, dtype=np.int64), overall.twice_overall_u,
                       float(scores.min()) + 0.0, float(scores.max()) + 0.0, low)


def tied_chunk(score: float, class_rows, cell_rows, background_rows, class_weight=None,
               cell_weight=None, background_weight=None) -> ChunkCounts:
    """:class:`ChunkCounts` of rows that all have one score, from their cell totals alone.

    Unweighted: the three row-count arrays. Weighted: also the weights, each
    with a last axis of 2 (double-double high and low parts).
    """
    class_rows = np.asarray(class_rows, dtype=np.int64)
    cell_rows = np.ascontiguousarray(cell_rows, dtype=np.int64)
    background_rows = np.ascontiguousarray(background_rows, dtype=np.int64)
    universe_rows = cell_rows + background_rows
    if class_weight is None:
        counts, twice_u = CK.tied_chunk_counts(cell_rows, background_rows, class_rows)
        return ChunkCounts(counts, background_rows, cell_rows, universe_rows, class_rows.copy(),
                           class_rows.copy(), twice_u, float(score), float(score))
    cell_w = np.ascontiguousarray(cell_weight)
    background_w = np.ascontiguousarray(background_weight)
    class_w = np.ascontiguousarray(class_weight)
    c_hi, c_lo, u_hi, u_lo = CK.tied_chunk_counts_dd(
        cell_w[..., 0], cell_w[..., 1], background_w[..., 0], background_w[..., 1],
        class_w[:, 0], class_w[:, 1])
    low = WeightedLow(c_lo, background_w[..., 1].copy(), class_w[:, 1].copy(), float(u_lo))
    return ChunkCounts(c_hi, background_w[..., 0].copy(), cell_rows, universe_rows,
                       class_w[:, 0].copy(), class_rows.copy(), float(u_hi), float(score),
                       float(score), low)


def table_from_chunks(chunks, names: list, weighted: bool, weight_scale: float = 1.0):
    """Combine the chunks of one model into its per-subgroup table and overall AUC.

    Returns ``(table, overall_auc)`` with the table exactly as
    :func:`fastbias.metrics.table_from_counts` builds it for all rows at once.
    ``weight_scale`` is the power of two the chunks' weights were divided by
    (the table reports weights in the input's units). Raises RuntimeError
    when two chunks overlap in score (the decomposition would be wrong).
    """
    chunks = sorted((c for c in chunks if c is not None), key=lambda c: c.min_score)
    if not chunks:
        raise ValueError("there are no rows to evaluate")
    for lower, upper in zip(chunks, chunks[1:]):
        if not lower.max_score < upper.min_score:
            raise RuntimeError(
                f"two chunks overlap in score ([{lower.min_score!r}, {lower.max_score!r}] and "
                f"[{upper.min_score!r}, {upper.max_score!r}]): every chunk must hold a contiguous "
                f"score range and equal scores must not be split (with Dask, the divisions must "
                f"cover all scores)")

    def stacked(parts, dtype):
        return np.ascontiguousarray(np.stack(parts), dtype=dtype)

    cell_rows = np.sum([c.cell_rows for c in chunks], axis=0, dtype=np.int64)
    universe_rows = np.sum([c.universe_rows for c in chunks], axis=0, dtype=np.int64)
    class_rows = np.sum([c.class_rows for c in chunks], axis=0, dtype=np.int64)
    if weighted:
        (counts, counts_lo, backgrounds, backgrounds_lo, class_totals, class_lo, twice_u,
         twice_u_lo) = CK.combine_chunk_counts_dd(
            stacked([c.counts for c in chunks], np.float64),
            stacked([c.low.counts for c in chunks], np.float64),
            stacked([c.backgrounds for c in chunks], np.float64),
            stacked([c.low.background for c in chunks], np.float64),
            stacked([c.class_totals for c in chunks], np.float64),
            stacked([c.low.totals for c in chunks], np.float64),
            stacked([c.twice_u for c in chunks], np.float64),
            stacked([c.low.twice_overall_u for c in chunks], np.float64))
        twice_u, twice_u_lo = float(twice_u), float(twice_u_lo)
    else:
        counts, twice_u = CK.combine_chunk_counts(
            stacked([c.counts for c in chunks], np.int64),
            stacked([c.backgrounds for c in chunks], np.int64),
            stacked([c.class_totals for c in chunks], np.int64),
            stacked([c.twice_u for c in chunks], np.int64))
        backgrounds = np.sum([c.backgrounds for c in chunks], axis=0, dtype=np.int64)
        class_totals = class_rows
        twice_u = int(twice_u)

    def scalar(value):
        return float(value) if weighted else int(value)

    # subgroups compared with the same rows share one SweepCounts (as in evaluate)
    universes: dict = {}
    for g in range(len(names)):
        key = tuple(universe_rows[g].tolist())
        universes.setdefault(key, []).append(g)
    tables = []
    for members in universes.values():
        universe = universe_rows[members[0]]
        low = None
        if weighted:
            low = WeightedLow(counts_lo[members], backgrounds_lo[members], np.zeros(2), 0.0)
        sc = SweepCounts([names[j] for j in members], counts[members], scalar(universe[0]),
                         scalar(universe[1]), twice_u, cell_rows[members],
                         (int(universe[0]), int(universe[1])), weighted,
                         backgrounds[members] if weighted else None, low, weight_scale)
        tables.append(table_from_counts(sc, warn=False))
    table = pd.concat(tables).reindex(names)
    overall_low = (WeightedLow(np.zeros((0, N_COUNT_COLUMNS)), np.zeros((0, 2)), class_lo,
                               twice_u_lo) if weighted else None)
    overall = SweepCounts([], np.zeros((0, N_COUNT_COLUMNS)), scalar(class_totals[0]),
                          scalar(class_totals[1]), twice_u, np.zeros((0, 2), dtype=np.int64),
                          (int(class_rows[0]), int(class_rows[1])), weighted, None, overall_low,
                          weight_scale)
    return table, overall_auc_from_counts(overall)


def assemble_result(spec: ColumnSpec, per_model: list, engine: str) -> EvaluationResult:
    """An :class:`EvaluationResult` laid out exactly as :func:`fastbias.evaluate` lays it out."""
    parts = []
    overall_aucs = {}
    for model, (table, auc) in zip(spec.models, per_model):
        warn_undefined(table, context=f"model {model!r}")
        overall_aucs[model] = auc
        part = table.reset_index()
        part.insert(0, "model", model)
        parts.append(part)
    return EvaluationResult(
        table=pd.concat(parts, ignore_index=True),
        overall_auc=pd.Series(overall_aucs, name="overall_auc"), label=spec.label,
        models=list(spec.models), subgroups=list(spec.subgroups), settings=spec.settings(engine))


# --------------------------------------------------------------------------- Parquet

def _parquet_files(source) -> list:
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if path.is_dir():
            files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
            if not files:
                raise FileNotFoundError(f"source: no *.parquet file under the directory {path}")
            return files
        if not path.is_file():
            raise FileNotFoundError(f"source: {path} does not exist")
        return [path]
    files = [Path(p) for p in source]
    if not files:
        raise ValueError("source is an empty list of files")
    absent = [str(p) for p in files if not p.is_file()]
    if absent:
        raise FileNotFoundError(f"source: {len(absent)} file(s) do not exist, e.g. {absent[0]}")
    return files


def _iter_frames(files: list, columns: list, batch_rows: int):
    """(DataFrame of ``columns``, description) for every batch of every file, in order."""
    import pyarrow.parquet as pq

    for path in files:
        parquet = pq.ParquetFile(path)
        try:
            start = 0
            for batch in parquet.iter_batches(batch_size=batch_rows, columns=columns):
                if batch.num_rows == 0:
                    continue
                stop = start + batch.num_rows
                # column by column: far cheaper than one consolidated DataFrame
                frame = {name: batch.column(i).to_pandas()
                         for i, name in enumerate(batch.schema.names)}
                yield frame, f"in rows {start}..{stop - 1} of {path}"
                start = stop
        finally:
            parquet.close()


def _bucket_edges(sample: np.ndarray, n_buckets: int) -> np.ndarray:
    """Increasing bucket edges from a score sample; bucket b holds [edges[b-1], edges[b]).

    Edges are sample quantiles. A value that holds half a bucket's share of the
    sample or more is isolated in a single-score bucket [v, nextafter(v)).
    """
    if n_buckets <= 1 or sample.shape[0] == 0:
        return np.zeros(0)
    sample = np.sort(sample)
    m = sample.shape[0]
    quantiles = sample[(np.arange(1, n_buckets) * m) // n_buckets]
    values, counts = np.unique(sample, return_counts=True)
    heavy = values[counts * 2 * n_buckets >= m]
    return np.unique(np.concatenate([quantiles, heavy, np.nextafter(heavy, np.inf)]))


def _tied_buckets(edges: np.ndarray) -> np.ndarray:
    """Indices of the buckets that can hold only one score value."""
    if edges.shape[0] < 2:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.nextafter(edges[:-1], np.inf) == edges[1:]) + 1


def _byte_rows(values: np.ndarray) -> np.ndarray:
    """(n, bytes per row) uint8 view of a C-contiguous 1-D or 2-D array."""
    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.shape[0], -1)


class _ModelSpill:
    """Bucket edges, spill files and single-score accumulators of one model."""

    def __init__(self, index: int, name: str, edges: np.ndarray, record_dtype, n_groups: int,
                 weighted: bool, directory: str):
        self.index = index
        self.name = name
        self.edges = edges
        self.record_dtype = record_dtype
        self.directory = directory
        n_buckets = edges.shape[0] + 1
        self.rows_in_bucket = np.zeros(n_buckets, dtype=np.int64)
        self.tied = _tied_buckets(edges)
        self.slot_of_bucket = np.full(n_buckets, -1, dtype=np.int64)
        self.slot_of_bucket[self.tied] = np.arange(self.tied.shape[0])
        n_slots = self.tied.shape[0]
        self.class_rows = np.zeros((n_slots, 2), dtype=np.int64)
        self.cell_rows = np.zeros((n_slots, n_groups, 2), dtype=np.int64)
        self.background_rows = np.zeros((n_slots, n_groups, 2), dtype=np.int64)
        # weights as double-double (high, low) pairs on the last axis
        slots, groups = (n_slots, n_groups) if weighted else (0, 0)
        self.class_weight = np.zeros((slots, 2, 2))
        self.cell_weight = np.zeros((slots, groups, 2, 2))
        self.background_weight = np.zeros((slots, groups, 2, 2))
        self.weighted = weighted

    def path(self, bucket: int) -> str:
        return os.path.join(self.directory, f"model{self.index}-bucket{bucket:06d}.bin")

    def add(self, rows: EncodedRows) -> None:
        scores = rows.scores[self.index]
        bucket, per_bucket = CK.assign_buckets(scores, self.edges, self.slot_of_bucket)
        if self.tied.shape[0]:
            weights = rows.weights if self.weighted else np.zeros(0)
            CK.accumulate_tied_rows(self.slot_of_bucket[bucket], rows.labels, rows.codes, weights,
                                    self.class_rows, self.cell_rows, self.background_rows,
                                    self.class_weight, self.cell_weight, self.background_weight)
        order = CK.stored_rows_by_bucket(bucket, per_bucket, self.slot_of_bucket)
        if scores.dtype.itemsize > self.record_dtype["score"].itemsize:
            raise TypeError(f"score column {self.name!r} is float32 in the Parquet schema but "
                            f"reads as {scores.dtype}; store it with one dtype")
        records = np.empty(order.shape[0], dtype=self.record_dtype)
        n = scores.shape[0]
        score_type = self.record_dtype["score"]
        weights = rows.weights if self.weighted else np.zeros((n, 0))
        CK.gather_records(order, _byte_rows(scores.astype(score_type, copy=False)),
                          _byte_rows(rows.labels), _byte_rows(weights), _byte_rows(rows.codes),
                          records.view(np.uint8).reshape(order.shape[0], self.record_dtype.itemsize))
        start = 0
        for b in np.flatnonzero(per_bucket):
            stop = start + per_bucket[b]
            with open(self.path(b), "ab") as handle:
                records[start:stop].tofile(handle)
            start = stop
        self.rows_in_bucket += per_bucket

    def tasks(self) -> list:
        """Callables returning the :class:`ChunkCounts` of each non-empty bucket."""
        out = []
        for b in np.flatnonzero(self.rows_in_bucket):
            out.append(lambda b=b: self._sweep_bucket(b))
        for slot, b in enumerate(self.tied):
            if self.class_rows[slot].sum() > 0:
                out.append(lambda slot=slot, b=b: self._tied_bucket(slot, b))
        return out

    def _sweep_bucket(self, b: int) -> ChunkCounts:
        path = self.path(b)
        records = np.fromfile(path, dtype=self.record_dtype)
        os.remove(path)
        weights = np.ascontiguousarray(records["weight"]) if self.weighted else None
        return chunk_counts(np.ascontiguousarray(records["score"]),
                            np.ascontiguousarray(records["label"]),
                            np.ascontiguousarray(records["codes"]), weights)

    def _tied_bucket(self, slot: int, b: int) -> ChunkCounts:
        score = float(self.edges[b - 1])
        rows = (self.class_rows[slot], self.cell_rows[slot], self.background_rows[slot])
        if not self.weighted:
            return tied_chunk(score, *rows)
        return tied_chunk(score, *rows, self.class_weight[slot], self.cell_weight[slot],
                          self.background_weight[slot])


def evaluate_parquet(source, *, label: str, scores, subgroups, label_threshold: float = 0.5,
                     subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
                     sample_weight: str | None = None, batch_rows: int = 250_000,
                     bucket_rows: int = 4_000_000, n_jobs: int | None = None,
                     temp_dir=None, random_state=0) -> EvaluationResult:
    """Exact bias metrics of Parquet data larger than memory, with bounded memory.

    Gives the numbers of :func:`fastbias.evaluate` on the same rows (equal
    integer counts, so identical metrics unweighted) while holding only about
    one batch plus ``n_jobs`` buckets of compact rows in memory. The rows are
    read twice (scores only, then all needed columns), bucketed by score range
    into spill files under ``temp_dir`` (per row and model: the score's 4 or
    8 bytes, 1 byte of label, 1 per subgroup, 8 for a weight; deleted as the
    buckets are swept), and the buckets are swept in parallel threads.

    Parameters
    ----------
    source : str, path, or list of paths
        A Parquet file, a directory (every ``*.parquet`` below it) or a list of files.
    label, scores, subgroups, label_threshold, subgroup_threshold, missing_subgroup
        As in :func:`fastbias.evaluate`.
    sample_weight : str, optional
        Name of a column of non-negative row weights.
    batch_rows : int, default 250,000
        Rows read at a time (memory also holds one Parquet row group of the
        needed columns).
    bucket_rows : int, default 4,000,000
        Target rows per bucket; the number of buckets is ``ceil(rows / bucket_rows)``.
        A single score value with more rows than half a bucket is counted
        without being stored, so heavy ties do not inflate a bucket.
    n_jobs : int, optional
        Threads that sweep buckets (default: the CPU count).
    temp_dir : str or path, optional
        Where the spill files go (default: the system's temporary directory).
    random_state : int, default 0
        Seed of the score sample that sets the bucket edges (the result does
        not depend on it, only the bucket sizes do).

    Returns
    -------
    EvaluationResult
        As from :func:`fastbias.evaluate`; ``settings["engine"]`` is ``"streaming"``.

    Examples
    --------
    >>> import tempfile, os, fastbias
    >>> from fastbias.streaming import evaluate_parquet
    >>> df = fastbias.make_jigsaw_like(n_rows=30_000, n_identities=3, random_state=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "scored.parquet")
    >>> df.to_parquet(path)
    >>> res = evaluate_parquet(path, label="toxicity", scores="model_biased",
    ...                        subgroups=["male", "female", "transgender"], bucket_rows=10_000)
    >>> ref = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female", "transgender"])
    >>> bool((res.table["bpsn_auc"] == ref.table["bpsn_auc"]).all())
    True
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, value in (("batch_rows", batch_rows), ("bucket_rows", bucket_rows)):
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    resolve_n_jobs(n_jobs, 1)
    files = _parquet_files(source)
    schemas = [pq.read_schema(p) for p in files]
    spec = None
    for path, schema in zip(files, schemas):
        spec = column_spec(schema.names, label=label, scores=scores, subgroups=subgroups,
                           label_threshold=label_threshold, subgroup_threshold=subgroup_threshold,
                           missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                           source=f"the Parquet file {path}")
    n_rows = sum(pq.ParquetFile(p).metadata.num_rows for p in files)
    if n_rows == 0:
        raise ValueError("source has no rows")
    # float32 scores are kept as float32 (ties decided in float32) only if every file has them
    record_score_dtypes = []
    for model in spec.models:
        types = [schema.field(model).type for schema in schemas]
        single = all(pa.types.is_float32(x) or pa.types.is_float16(x) for x in types)
        record_score_dtypes.append(np.dtype(np.float32 if single else np.float64))

    n_groups = len(spec.subgroups)
    n_buckets = max(1, math.ceil(n_rows / bucket_rows))
    edges = [np.zeros(0)] * len(spec.models)
    if n_buckets > 1 or spec.weighted:
        edges, weight_range = _first_pass(files, spec, batch_rows, n_rows, n_buckets,
                                          random_state)
        spec = spec.with_weight_range(*weight_range)

    with tempfile.TemporaryDirectory(prefix="fastbias-", dir=temp_dir) as directory:
        spills = []
        for k in range(len(spec.models)):
            fields = [("score", record_score_dtypes[k]), ("label", np.bool_)]
            if spec.weighted:
                fields.append(("weight", np.float64))
            fields.append(("codes", np.int8, (n_groups,)))
            spills.append(_ModelSpill(k, spec.models[k], edges[k], np.dtype(fields), n_groups,
                                      spec.weighted, directory))
        for frame, where in _iter_frames(files, spec.columns, batch_rows):
            rows = encode_frame(frame, spec, where)
            del frame
            for spill in spills:
                spill.add(rows)
        tasks = [(k, task) for k, spill in enumerate(spills) for task in spill.tasks()]
        workers = resolve_n_jobs(n_jobs, len(tasks))
        if workers > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                chunks = list(pool.map(lambda item: item[1](), tasks))
        else:
            chunks = [task() for _, task in tasks]
    per_model = []
    for k in range(len(spec.models)):
        mine = [chunk for (owner, _), chunk in zip(tasks, chunks) if owner == k]
        per_model.append(table_from_chunks(mine, spec.subgroups, spec.weighted,
                                           spec.weight_scale))
    return assemble_result(spec, per_model, "streaming")


def _first_pass(files, spec: ColumnSpec, batch_rows: int, n_rows: int, n_buckets: int,
                random_state) -> tuple:
    """Validate the scores, sample them for bucket edges, and find the weights' range.

    Returns ``(edges per model, (smallest positive weight, largest weight))``;
    the weight range is (inf, 0) unweighted.
    """
    rng = np.random.default_rng(random_state)
    target = min(n_rows, max(200_000, 2_000 * n_buckets))
    rate = target / n_rows
    samples = [[] for _ in spec.models]
    smallest, largest = np.inf, 0.0
    columns = list(spec.models) if n_buckets > 1 else []
    if spec.weighted:
        columns = list(dict.fromkeys([*columns, spec.sample_weight]))
    for frame, where in _iter_frames(files, columns, batch_rows):
        n = len(frame[columns[0]])
        keep = None if rate >= 1 else rng.random(n) < rate
        try:
            if spec.weighted:
                weights = as_sample_weight(frame[spec.sample_weight], n,
                                           f"sample_weight column {spec.sample_weight!r}")
                if n:
                    largest = max(largest, float(weights.max()))
                    positive = weights[weights > 0]
                    if positive.size:
                        smallest = min(smallest, float(positive.min()))
            for k, model in enumerate(spec.models if n_buckets > 1 else []):
                values = as_scores(frame[model], f"score column {model!r}", n)
                values = values if keep is None else values[keep]
                samples[k].append(values.astype(np.float64) + 0.0)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{error} ({where})") from error
    if n_buckets <= 1:
        return [np.zeros(0)] * len(spec.models), (smallest, largest)
    return [_bucket_edges(np.concatenate(s), n_buckets) for s in samples], (smallest, largest)
