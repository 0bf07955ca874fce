"""Exact bias metrics for data larger than memory, by chunks of the score order.

The one-machine sweep needs all rows sorted by score. Here the rows are cut
into *chunks* that each hold a contiguous score range, with equal scores never
split between chunks; each chunk is swept on its own (any order, in parallel)
and the per-chunk counts are combined exactly (see
``fastbias.sweep.chunks``): the pairs between two chunks are products of
the higher chunk's cell counts with the cumulative counts of all lower chunks.

:func:`evaluate_parquet` (Parquet files) and :func:`evaluate_csv` (CSV files) are the
out-of-core paths; both compose :func:`stream_evaluate`:

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
from dataclasses import replace

import numpy as np

from ._numba_cache import announce_compiling, read_only
from .intervals.chunked import counted_chunk, with_tied_extras
from .intervals.delong import fraction_bits
from .prepare import _kernels as PK
from .prepare.encoded import EncodedRows, encode_frame, piece_labels
from .prepare.memberships import (
    add_combination_cells,
    check_intersections,
    choose_combinations,
    code_combination_cells,
)
from .reports.histograms import HistogramCounter, histogram_edges
from .sort import _kernels as SK
from .sort.buckets import (
    bucket_edges,
    byte_rows,
    merge_summaries,
    summarize_scores,
    tied_buckets,
)
from .sweep import _kernels as K
from .sweep.chunks import ChunkCounts, tied_chunk
from .sweep.parallel import counting_kernels, map_in_threads
from .tables.result import EvaluationResult, checked_extras, result_from_chunks
from .validate.categories import (
    chosen_features,
    feature_summary,
    merge_feature_summaries,
)
from .validate.columns import PieceWhere
from .validate.parquet import iter_batches, open_parquet
from .validate.settings import check_sample_seed, resolve_n_jobs
from .validate.spec import ColumnSpec, column_spec
from .validate.textfile import (
    LINE_LIMIT,
    ColumnReading,
    iter_text_batches,
    open_text_source,
)

__all__ = ["evaluate_csv", "evaluate_parquet"]

#: with intersections, the encoded rows of a batch (one byte per intersection and row, plus
#: the spilled records) are made in pieces of about this many bytes
COMBINATION_BATCH_BYTES = 2 ** 25


class _ModelSpill:
    """Bucket edges, spill files and single-score accumulators of one model."""

    def __init__(self, index: int, name: str, edges: np.ndarray, record_dtype, n_groups: int,
                 weighted: bool, directory: str, extras: dict | None = None):
        self.index = index
        self.extras = extras or {}  # what each bucket adds to its counts (ColumnSpec.chunk_extras)
        self.name = name
        self.edges = edges
        self.record_dtype = record_dtype
        self.directory = directory
        n_buckets = edges.shape[0] + 1
        self.rows_in_bucket = np.zeros(n_buckets, dtype=np.int64)
        self.tied = tied_buckets(edges)
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
        # binary digits below the point of the weights of rows in single-score buckets, in
        # the input's units (fraction_bits; None beyond 51): where their sums are exact
        self.tied_bits = 0

    def path(self, bucket: int) -> str:
        return os.path.join(self.directory, f"model{self.index}-bucket{bucket:06d}.bin")

    def add(self, rows: EncodedRows) -> None:
        scores = rows.scores[self.index]
        bucket, per_bucket = SK.assign_buckets(scores, self.edges, self.slot_of_bucket)
        if self.tied.shape[0]:
            weights = rows.weights if self.weighted else np.zeros(0)
            # (the inputs read-only whatever the caller's flags: one version compiles, where
            # labels read-only in one batch and writable in another had compiled two)
            K.accumulate_tied_rows(read_only(self.slot_of_bucket[bucket]),
                                   read_only(rows.labels), read_only(rows.codes),
                                   read_only(weights),
                                   self.class_rows, self.cell_rows, self.background_rows,
                                   self.class_weight, self.cell_weight, self.background_weight)
            if self.weighted and self.extras.get("with_sums") and self.tied_bits is not None:
                bits = fraction_bits(weights[self.slot_of_bucket[bucket] >= 0],
                                     self.extras.get("weight_scale", 1.0))
                self.tied_bits = None if bits is None else max(self.tied_bits, bits)
        order = SK.stored_rows_by_bucket(bucket, per_bucket, self.slot_of_bucket)
        if scores.dtype.itemsize > self.record_dtype["score"].itemsize:
            raise TypeError(f"score column {self.name!r} is float32 in the Parquet schema but "
                            f"reads as {scores.dtype}; store it with one dtype")
        records = np.empty(order.shape[0], dtype=self.record_dtype)
        n = scores.shape[0]
        score_type = self.record_dtype["score"]
        weights = rows.weights if self.weighted else np.zeros((n, 0))
        SK.gather_records(order, byte_rows(scores.astype(score_type, copy=False)),
                          byte_rows(rows.labels), byte_rows(weights), byte_rows(rows.codes),
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
        return counted_chunk(np.ascontiguousarray(records["score"]),
                             np.ascontiguousarray(records["label"]),
                             np.ascontiguousarray(records["codes"]), weights, **self.extras)

    def _tied_bucket(self, slot: int, b: int) -> ChunkCounts:
        score = float(self.edges[b - 1])
        rows = (self.class_rows[slot], self.cell_rows[slot], self.background_rows[slot])
        if not self.weighted:
            chunk = tied_chunk(score, *rows)
        else:
            chunk = tied_chunk(score, *rows, self.class_weight[slot], self.cell_weight[slot],
                               self.background_weight[slot])
        if not self.extras.get("with_sums") and self.extras.get("thresholds") is None:
            return chunk
        return with_tied_extras(chunk, **self.extras, score_dtype=self.record_dtype["score"],
                                weight_bits=self.tied_bits)


def evaluate_parquet(source, *, label: str, scores, subgroups=None,
                     label_threshold: float = 0.5,
                     subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
                     sample_weight: str | None = None, batch_rows: int = 250_000,
                     bucket_rows: int = 4_000_000, n_jobs: int | None = None,
                     temp_dir=None, random_state=0, intersections: int | None = None,
                     min_subgroup_size: int = 1, significance: str | None = None,
                     confidence: float = 0.95, thresholds=None,
                     threshold_interval: str | None = "wilson",
                     gap_interval: str | None = None,
                     sensitive_features=None, ci: str | None = None,
                     pos_label=None) -> EvaluationResult:
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
    random_state : int or None, default 0
        Seed of the score sample that sets the bucket edges (the result does
        not depend on it, only the bucket sizes do); None draws one.
    intersections : {None, 2, 3}, default None
        Also evaluate every pair (and triple) of the subgroups with at least
        ``min_subgroup_size`` rows of each class, named ``"a & b"``, as
        :func:`fastbias.evaluate` does (docs/intersections.md). The
        intersections are chosen in one more reading pass of the label and
        identity columns; each spilled row then carries one more byte per
        intersection kept.
    min_subgroup_size : int, default 1
    significance : {None, "holm", "bh"}, default None
        Test every subgroup's metrics for "no bias" as :func:`fastbias.evaluate` does
        (docs/significance.md), from placement sums each bucket adds to its counts
        (the same sorts; no more passes). One difference: a test of a cell under 30
        rows, drawn in memory (the draws need every row of its class), gets Hoeffding's
        bound on its permutation p-value when unweighted and is not tested (NaN, said in
        the one warning) when weighted (docs/significance.md, "Out of core").
    ci : {None, "delong", "bernstein"}, default None
        Intervals of every metric and of the overall AUC, as :func:`fastbias.evaluate`
        gives them (``<metric>_low``/``_high``, DeLong's also ``_se``; docs/intervals.md,
        "Out of core"): DeLong's from placement sums each bucket adds to its counts (the
        same sums as ``significance=``; no more passes), Bernstein's (unweighted) from the
        counts. A standard error that the sums cannot tell from their rounding (which in
        memory the cells' own rows settle) is NaN, said in the one warning; under
        ``missing_subgroup="exclude"`` the overall AUC's DeLong interval is of all the
        rows, as in memory. The bootstrap needs the rows in memory.
    confidence : float, default 0.95
        The tests' level is ``1 - confidence``, and the intervals' confidence.
    thresholds, threshold_interval, gap_interval
        The threshold metrics of :func:`fastbias.evaluate` (``result.thresholds``):
        each bucket counts its rows at every threshold as it is swept, and the counts
        add up (docs/thresholds.md).
    sensitive_features : list of str, optional
        Categorical columns, as in :func:`fastbias.evaluate`: one more reading pass of the
        label and these columns finds their values and combinations (values sorted; a
        pandas Categorical's own order is not used out of core); each spilled row carries
        one more byte per value and combination kept.
    pos_label : scalar, optional
        The label value of the positive class, for two-valued labels of any type (text
        such as ``"toxic"``/``"ok"``, numbers, booleans), as in :func:`fastbias.evaluate`;
        ``label_threshold`` is then not used. Each batch is checked as it is read, and the
        values of all the rows together in the first pass, before any is counted: a third
        value is a ValueError naming it and its first row, and so is a ``pos_label`` that
        no row holds.

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
    _check_sizes(batch_rows, bucket_rows, n_jobs, temp_dir)
    order, min_size = check_intersections(intersections, min_subgroup_size)
    tests = _check_tests(significance, confidence, thresholds, threshold_interval, gap_interval,
                         ci)
    spec, parquet = open_parquet(source, label=label, scores=scores, subgroups=subgroups,
                                 label_threshold=label_threshold,
                                 subgroup_threshold=subgroup_threshold,
                                 missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                                 sensitive_features=sensitive_features, pos_label=pos_label)
    spec = replace(spec, intersections=order, min_subgroup_size=min_size, **tests)
    if parquet.n_rows == 0:
        raise ValueError("source has no rows")
    # float32 scores are kept as float32 (ties decided in float32); open_parquet checked
    # that every file stores each score column with one type
    result, _ = stream_evaluate(spec, lambda columns: iter_batches(parquet, columns, batch_rows),
                                parquet.score_dtypes, n_rows=parquet.n_rows,
                                bucket_rows=bucket_rows, n_jobs=n_jobs, temp_dir=temp_dir,
                                random_state=random_state)
    return result


def evaluate_csv(path, *, label: str, scores, subgroups=None, label_threshold: float = 0.5,
                 subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
                 sample_weight: str | None = None, sep: str | None = None,
                 compression="infer", line_limit: int = LINE_LIMIT, batch_rows: int = 250_000,
                 bucket_rows: int = 4_000_000, n_jobs: int | None = None, temp_dir=None,
                 random_state=0, intersections: int | None = None,
                 min_subgroup_size: int = 1, significance: str | None = None,
                 confidence: float = 0.95, thresholds=None,
                 threshold_interval: str | None = "wilson",
                 gap_interval: str | None = None,
                 sensitive_features=None, ci: str | None = None,
                 pos_label=None) -> EvaluationResult:
    """Exact bias metrics of a CSV file larger than memory, with bounded memory.

    As :func:`evaluate_parquet`, for a CSV (or TSV) file, plain or compressed (gzip,
    bz2, xz, zip, zstd): the file is read twice, ``batch_rows`` rows at a time and only
    the needed columns (the first pass validates the scores and counts the rows), so
    memory holds one batch plus ``n_jobs`` buckets of compact rows whatever the file
    inflates to. A line longer than ``line_limit`` bytes is an error naming the line,
    raised before the line is held in memory.

    Parameters
    ----------
    path : str or path
        The CSV file; compression from the extension unless ``compression`` says.
    label, scores, subgroups, label_threshold, subgroup_threshold, missing_subgroup
        As in :func:`fastbias.evaluate`.
    sample_weight : str, optional
        Name of a column of non-negative row weights.
    sep : str, optional
        Field separator (default: a tab for ``.tsv``, else a comma).
    compression : {"infer", None, "gzip", "bz2", "xz", "zip", "zstd"}, default "infer"
    line_limit : int, default 16 MiB
        The longest line (bytes, decompressed) read.
    batch_rows, bucket_rows, n_jobs, temp_dir, random_state, intersections, min_subgroup_size
        As in :func:`evaluate_parquet`.
    significance, ci, confidence, thresholds, threshold_interval, gap_interval
        As in :func:`evaluate_parquet`.
    sensitive_features
        As in :func:`evaluate_parquet`.
    pos_label : scalar, optional
        As in :func:`evaluate_parquet`. Only an empty field is then a missing label ("None"
        or "NA" is a class). A text ``pos_label`` reads the label column as the text in the
        file, in every batch alike (``"toxic"`` beside ``"0"``: a batch of only ``"0"``
        would otherwise read as numbers); a number reads it as numbers (``pos_label=1``
        for labels written 0/1).

    Returns
    -------
    EvaluationResult
        As from :func:`fastbias.evaluate`; ``settings["engine"]`` is ``"streaming"``.

    Examples
    --------
    >>> import tempfile, os, fastbias
    >>> from fastbias.streaming import evaluate_csv
    >>> df = fastbias.make_jigsaw_like(n_rows=30_000, n_identities=3, random_state=0)
    >>> path = os.path.join(tempfile.mkdtemp(), "scored.csv.gz")
    >>> df.to_csv(path, index=False)
    >>> res = evaluate_csv(path, label="toxicity", scores="model_biased",
    ...                    subgroups=["male", "female", "transgender"], bucket_rows=10_000)
    >>> ref = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female", "transgender"])
    >>> bool((res.table["bpsn_auc"] == ref.table["bpsn_auc"]).all())
    True
    """
    _check_sizes(batch_rows, bucket_rows, n_jobs, temp_dir)
    order, min_size = check_intersections(intersections, min_subgroup_size)
    tests = _check_tests(significance, confidence, thresholds, threshold_interval, gap_interval,
                         ci)
    source = open_text_source(path, fmt="csv", compression=compression, sep=sep,
                              line_limit=line_limit)
    spec = column_spec(source.names, label=label, scores=scores, subgroups=subgroups,
                       label_threshold=label_threshold, subgroup_threshold=subgroup_threshold,
                       missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                       source=f"the CSV file {source.path}",
                       sensitive_features=sensitive_features, pos_label=pos_label)
    spec = replace(spec, intersections=order, min_subgroup_size=min_size, **tests)
    literal = [spec.label] if pos_label is not None else []
    # (a feature that is an identity column too is read as numbers or booleans, as its
    # subgroup must be; its values name the same groups)
    text = [*(f for f in spec.features if f not in spec.subgroups),
            *([spec.label] if isinstance(pos_label, str) else [])]
    result, _ = stream_evaluate(
        spec, lambda columns: iter_text_batches(
            source, columns, batch_rows,
            reading=ColumnReading(text=tuple(text), literal=tuple(literal))),
        [np.dtype(np.float64)] * len(spec.models), bucket_rows=bucket_rows, n_jobs=n_jobs,
        temp_dir=temp_dir, random_state=random_state)
    return result


def _check_tests(significance, confidence, thresholds=None, threshold_interval="wilson",
                 gap_interval=None, ci=None) -> dict:
    """``significance=``, ``confidence=``, the threshold arguments and ``ci=`` checked, as
    the spec's fields."""
    return checked_extras(significance, confidence, thresholds, threshold_interval,
                          gap_interval, ci)


def _check_sizes(batch_rows, bucket_rows, n_jobs, temp_dir) -> None:
    """A ValueError naming a size, a thread count or a temporary directory out of place."""
    for name, value in (("batch_rows", batch_rows), ("bucket_rows", bucket_rows)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    resolve_n_jobs(n_jobs, 1)
    if temp_dir is not None and not os.path.isdir(temp_dir):
        raise FileNotFoundError(f"temp_dir {os.fspath(temp_dir)!r} is not an existing directory "
                                f"(create it first, or leave temp_dir=None for the system's "
                                f"temporary directory)")


def stream_evaluate(spec: ColumnSpec, read, score_dtypes: list, *, n_rows: int | None = None,
                    bucket_rows: int = 4_000_000, n_jobs=None, temp_dir=None, random_state=0,
                    histogram_bins: int | None = None, prepare=None) -> tuple:
    """The out-of-core pipeline on any source of row batches; ``(EvaluationResult,
    ScoreHistograms or None)``.

    ``read(columns)`` iterates ``(frame, where)`` over the rows in batches (a frame is a
    DataFrame or a dict of Series; ``where`` says where the batch is, for errors) and can be
    called more than once. ``n_rows`` (when known beforehand) lets a source of one bucket
    skip the first pass. ``prepare(frame)``, when given, adjusts each frame before it is
    encoded (the CLI's reading of JSON booleans). With ``histogram_bins``, the score
    histograms of :func:`fastbias.report.score_histograms` are counted on the way.
    """
    spec.check_extras()
    random_state = check_sample_seed(random_state)
    announce_streamed_kernels(spec)
    if prepare is not None:
        read = _prepared(read, prepare)
    sub_batch = None
    if spec.intersections is not None or spec.features:  # chosen on all rows, as one pass
        plain = [_record_dtype(dtype, spec).itemsize for dtype in score_dtypes]
        if spec.intersections is not None:
            spec = spec.with_combinations(chosen_combinations(read, spec))
        if spec.features:
            spec = spec.with_features(*found_features(read, spec))
        if spec.extra_columns:  # a row carries one more byte per intersection and value:
            # buckets and encoded batches hold about as many bytes as they would without them
            grown = [_record_dtype(dtype, spec).itemsize for dtype in score_dtypes]
            bucket_rows = max(1, bucket_rows * (3 * max(plain) + 48) // (3 * max(grown) + 48))
            sub_batch = max(1_000, COMBINATION_BATCH_BYTES
                            // (spec.extra_columns * (1 + len(spec.models))))
    records = [_record_dtype(dtype, spec) for dtype in score_dtypes]
    spill_dir = temp_dir or tempfile.gettempdir()
    counted = n_rows is None  # the first pass counts the rows
    if not counted:  # the disk is checked before any row is read
        check_spill_space(spill_dir, n_rows, [r.itemsize for r in records])
    n_buckets = 1 if counted else max(1, math.ceil(n_rows / bucket_rows))
    edges = [np.zeros(0)] * len(spec.models)
    summary = None
    if (n_buckets > 1 or spec.weighted or counted or histogram_bins is not None
            or spec.pos_label is not None):
        summary, n_rows = _first_pass(read, spec, n_rows, bucket_rows, random_state,
                                      all_models=counted or histogram_bins is not None)
        spec.check_label_classes(summary.label_classes)
        if counted:
            check_spill_space(spill_dir, n_rows, [r.itemsize for r in records])
        n_buckets = max(1, math.ceil(n_rows / bucket_rows))
        if n_buckets > 1:
            edges = [bucket_edges(sample, n_buckets, weights) for sample, weights
                     in zip(summary.samples, summary.sample_weights)]
        spec = spec.with_weight_range(*summary.weight_range, summary.class_weights,
                                       *summary.weight_places)
    if n_rows == 0:
        raise ValueError("source has no rows")
    counter = None
    if histogram_bins is not None:
        lo = float(np.min(summary.lowest)) if np.isfinite(summary.lowest).any() else 0.0
        hi = float(np.max(summary.highest)) if np.isfinite(summary.highest).any() else 1.0
        counter = HistogramCounter(spec.models, spec.row_names,
                                   histogram_edges(lo, hi, histogram_bins))

    n_groups = len(spec.row_names)
    with tempfile.TemporaryDirectory(prefix="fastbias-", dir=temp_dir) as directory:
        spills = [_ModelSpill(k, spec.models[k], edges[k], records[k], n_groups, spec.weighted,
                              directory, spec.chunk_extras())
                  for k in range(len(spec.models))]
        kinds = spec.batch_kinds()
        for frame, where in read(spec.columns):
            kinds.check(frame, where)
            for part, at in _pieces(frame, where, sub_batch):
                rows = encode_frame(part, spec, at)
                del part
                if counter is not None:
                    counter.add(rows.labels, rows.codes, rows.scores)
                for spill in spills:
                    spill.add(rows)
            del frame
        tasks = [(k, task) for k, spill in enumerate(spills) for task in spill.tasks()]
        chunks = map_in_threads(lambda item: item[1](), tasks, resolve_n_jobs(n_jobs, len(tasks)))
    per_model = [[chunk for (owner, _), chunk in zip(tasks, chunks) if owner == k]
                 for k in range(len(spec.models))]
    result = result_from_chunks(spec, per_model, "streaming")
    return result, None if counter is None else counter.histograms()


#: about how long the out-of-core kernels take to compile in a fresh environment (a 2-core VM,
#: 2M x 24 streamed by the CLI: 8 s, 15 s with ci="delong"; benchmarks/RESULTS.md)
STREAMED_COMPILE_SECONDS = (8.0, 15.0)


def announce_streamed_kernels(spec: ColumnSpec) -> int:
    """Log one line (logger ``"fastbias"``, which the CLI shows) as this call starts compiling
    the kernels that out-of-core data needs, in a fresh environment: which, about how long,
    and that they are cached afterwards (they compiled for 8-15 s without a word; see
    :func:`fastbias._numba_cache.announce_compiling`). Returns how many must compile."""
    kernels = [PK.membership_codes, SK.assign_buckets, SK.stored_rows_by_bucket,
               SK.gather_records, K.accumulate_tied_rows, K.missing_bits,
               *((K.tied_chunk_counts_dd, K.combine_chunk_counts_dd) if spec.weighted
                 else (K.tied_chunk_counts, K.combine_chunk_counts)),
               *counting_kernels(spec.weighted)]
    if spec.with_sums:  # (each chunk's placement sums)
        kernels += [K.member_delong_sums_in_range, K.finish_delong_sums, K.class_sums,
                    K.class_placement_sums, K.member_overall_cross_sums]
    seconds = STREAMED_COMPILE_SECONDS[spec.with_sums]
    return announce_compiling("out-of-core " + ("weighted counting" if spec.weighted
                                               else "counting")
                              + (" with placement sums" if spec.with_sums else ""),
                              kernels, seconds_each=seconds / len(kernels))


def _pieces(frame, where: str, rows: int | None):
    """``(frame, where)`` in pieces of at most ``rows`` rows (None: whole)."""
    n = len(next(iter(frame.values())) if isinstance(frame, dict) else frame)
    if rows is None or n <= rows:
        yield frame, where
        return
    for start in range(0, n, rows):
        if isinstance(frame, dict):
            part = {name: column.iloc[start:start + rows] for name, column in frame.items()}
        else:
            part = frame.iloc[start:start + rows]
        if hasattr(where, "first_row"):  # (messages name the file's rows themselves)
            yield part, PieceWhere(where, where.first_row + start)
        else:
            yield part, f"{where}, from its row {start}" if where else where


def _record_dtype(score_dtype, spec: ColumnSpec) -> np.dtype:
    """One spilled row of a model: score, label, weight (when weighted), membership codes."""
    fields = [("score", score_dtype), ("label", np.bool_)]
    if spec.weighted:
        fields.append(("weight", np.float64))
    fields.append(("codes", np.int8, (len(spec.row_names),)))
    return np.dtype(fields)


def chosen_combinations(read, spec: ColumnSpec) -> list:
    """The intersections of ``spec.intersections`` subgroups to evaluate: those with at least
    ``spec.min_subgroup_size`` rows of each class over all rows (one reading pass of the
    label and identity columns; each batch emits the combinations of its rows' own
    subgroups, never a rows x combinations matrix), as the in-memory path chooses them."""
    counting = replace(spec, models=[], sample_weight=None, features=())
    total = None
    kinds = spec.batch_kinds()
    for frame, where in read(counting.columns):
        kinds.check(frame, where)
        rows = encode_frame(frame, counting, where)
        del frame
        total = add_combination_cells(
            total, code_combination_cells(rows.labels, rows.codes, spec.intersections))
    return choose_combinations(total, list(spec.subgroups), spec.min_subgroup_size)


def found_features(read, spec: ColumnSpec) -> tuple:
    """``(values, combinations)`` of the sensitive features over all rows (one reading pass
    of the label and feature columns; each batch summarises the values and combinations its
    rows hold): see ``fastbias.validate.categories.chosen_features``."""
    summary = None
    columns = list(dict.fromkeys([spec.label, *spec.features]))
    for frame, where in read(columns):
        labels = piece_labels(frame, spec, where)
        summary = merge_feature_summaries(summary, feature_summary(frame, list(spec.features),
                                                                   labels, where))
    if summary is None:
        raise ValueError("source has no rows")
    return chosen_features(summary, list(spec.features), spec.min_subgroup_size)


def _prepared(read, prepare):
    def batches(columns):
        for frame, where in read(columns):
            yield prepare(frame), where
    return batches


def check_spill_space(directory: str, n_rows: int, record_bytes: list) -> None:
    """An OSError before any row is spilled when the spill files (``n_rows`` records of each
    size) would not fit on the disk of ``directory``, naming both sizes."""
    need = n_rows * sum(record_bytes)
    try:
        stat = os.statvfs(directory)
    except (AttributeError, OSError):  # no statvfs (Windows): the write itself will say
        return
    free = stat.f_bavail * stat.f_frsize
    if need > free:
        raise OSError(f"the spill files of {n_rows:,} rows need {need / 2**30:.1f} GiB under "
                      f"{directory!r}, which has {free / 2**30:.1f} GiB free; "
                      f"give a temporary directory on a larger disk (temp_dir=, --temp-dir)")


#: sampled scores kept per bucket (the first pass's sample is thinned to stay near this),
#: at least SAMPLE_LEAST and at most SAMPLE_MOST a model, whatever the number of rows
SAMPLE_PER_BUCKET = 2_000
SAMPLE_LEAST = 200_000
SAMPLE_MOST = 500_000


def sample_memory(n_models: int) -> int:
    """The most bytes the first pass's score samples hold (values and weights, up to twice
    the target before a thinning, once more while a batch's part is merged)."""
    return n_models * 3 * 2 * SAMPLE_MOST * 16




def _first_pass(read, spec: ColumnSpec, n_rows: int | None, bucket_rows: int, random_state,
                all_models: bool) -> tuple:
    """Validate the scores and weights (with ``pos_label``, the labels too, and find their
    values: ``ScoreSummary.label_classes``), count the rows, and keep a uniform sample of each
    model's scores for the bucket edges; ``(ScoreSummary, rows)``.

    The sample is Bernoulli at a rate that halves (thinning what was kept) whenever it
    grows past twice its target, 2,000 per bucket of the rows so far, at least 200,000 and
    at most 500,000: a uniform sample of bounded size whatever the number of rows, known
    beforehand or not (with very many buckets, fewer than 2,000 a bucket: the buckets' sizes
    vary more, never the result).
    """
    rng = np.random.default_rng(random_state)

    def target(rows):
        return min(SAMPLE_MOST,
                   max(SAMPLE_LEAST, SAMPLE_PER_BUCKET * math.ceil(rows / bucket_rows)))

    rate = 1.0 if n_rows is None else min(1.0, target(n_rows) / max(n_rows, 1))
    many = n_rows is None or n_rows > bucket_rows
    models = list(range(len(spec.models))) if all_models or many else []
    columns = [spec.models[k] for k in models]
    if spec.weighted:
        columns.append(spec.sample_weight)
        if spec.resolution_check() is not None:  # (each class's weights)
            columns.append(spec.label)
    if spec.pos_label is not None:  # (the label values of all the rows, checked together)
        columns.append(spec.label)
    if not columns:
        columns = [spec.label]
    columns = list(dict.fromkeys(columns))
    summary, rows = None, 0
    for frame, where in read(columns):
        part = summarize_scores(frame, spec, models, rate, rng, where)
        rows += len(frame[columns[0]])
        summary = part if summary is None else merge_summaries([summary, part])
        while models and summary.samples[0].shape[0] > 2 * target(rows):
            keep = rng.random(summary.samples[0].shape[0]) < 0.5
            # (thinned: every other field, e.g. the class weights that check the weights'
            # resolution, stays as it is)
            summary = replace(summary, samples=[x[keep] for x in summary.samples],
                              sample_weights=[2.0 * w[keep] for w in summary.sample_weights])
            rate /= 2
    if summary is None:
        raise ValueError("source has no rows")
    return summary, rows
