"""Coarse sorting for out-of-core data: a score summary, bucket edges by score range,
single-score buckets.

The out-of-core paths first read the score (and weight) columns piece by
piece: :func:`summarize_scores` validates one piece and keeps its score range
and a random sample of its scores, :func:`merge_summaries` joins the pieces,
and :func:`bucket_edges` turns the sample into the edges of score ranges of
about equal rows (files streamed into buckets; Dask partitions).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._numba_cache import read_only
from ..validate.columns import in_piece
from ..validate.spec import ColumnSpec
from ..validate.values import (
    LabelClasses,
    as_sample_weight,
    as_scores,
    class_weight_extremes,
    row_place,
)


@dataclass(frozen=True)
class ScoreSummary:
    """Range and a random sample of each model's scores, and the weights' range, of some rows."""

    lowest: np.ndarray
    highest: np.ndarray
    samples: list
    #: rows each sampled value stands for (1 / sampling rate), one array per model
    sample_weights: list
    smallest_weight: float = np.inf
    largest_weight: float = 0.0
    #: per class (negatives, positives): total weight, smallest positive weight and where it
    #: is (for messages), where the weights' resolution is checked (see
    #: ``ColumnSpec.resolution_check``); None otherwise
    class_weights: tuple | None = None
    #: with ``pos_label``: the label values found (``LabelClasses``), else None
    label_classes: LabelClasses | None = None
    #: where the smallest positive and the largest weight are (" at row 7 of ...", for
    #: messages: a span too wide only across pieces is named by both rows)
    smallest_weight_at: str = ""
    largest_weight_at: str = ""

    @property
    def weight_range(self) -> tuple:
        """(smallest positive weight, largest weight); (inf, 0) unweighted or all zero."""
        return self.smallest_weight, self.largest_weight

    @property
    def weight_places(self) -> tuple:
        """Where the rows of :attr:`weight_range` are (text for messages)."""
        return self.smallest_weight_at, self.largest_weight_at


def summarize_scores(frame, spec: ColumnSpec, models: list, rate: float | None, rng,
                     where: str = "", sample_rows: int = 0, check_labels: bool = False
                     ) -> ScoreSummary:
    """Validate the scores of ``models`` (indexes into ``spec.models``) and the weights of one
    piece, keeping each row's scores in the sample with probability ``rate`` (or, with
    ``rate=None``, about ``sample_rows`` of its rows); ``check_labels`` validates the
    labels too (so that a bad label fails before any further work).

    A validation error names ``where`` the piece is (file rows, Dask partition).
    """
    n = len(frame[spec.models[models[0]] if models else
                  spec.sample_weight if spec.weighted else spec.label])
    if rate is None:
        rate = min(1.0, sample_rows / n) if n else 1.0
    keep = None if rate >= 1 else rng.random(n) < rate
    lowest = np.full(len(spec.models), np.inf)
    highest = np.full(len(spec.models), -np.inf)
    samples = [np.zeros(0)] * len(spec.models)
    stands_for = [np.zeros(0)] * len(spec.models)
    smallest, largest = np.inf, 0.0
    smallest_at = largest_at = ""
    with in_piece(where):  # (a piece of a file: messages name its rows, and where it lies)
        resolution = spec.weighted and spec.resolution_check() is not None
        labels = classes = None
        if (check_labels and n) or resolution or spec.pos_label is not None:  # (read once)
            labels = spec.piece_labels(frame)
            classes = spec.label_classes(frame, where)
        class_weights = None
        if spec.weighted:
            weights = as_sample_weight(frame[spec.sample_weight], n,
                                       f"sample_weight column {spec.sample_weight!r}")
            if n:
                top = int(np.argmax(weights))
                largest, largest_at = float(weights[top]), row_place(top, where)
                if largest > 0:
                    least = int(np.argmin(np.where(weights > 0, weights, np.inf)))
                    smallest, smallest_at = float(weights[least]), row_place(least, where)
            if resolution:
                totals, least, at = class_weight_extremes(weights, labels)
                class_weights = (totals, least, [f"{a} {where}" if a else "" for a in at])
        for k in models:
            values = as_scores(frame[spec.models[k]], f"score column {spec.models[k]!r}", n)
            lowest[k], highest[k] = values.min(), values.max()
            values = values if keep is None else values[keep]
            samples[k] = values.astype(np.float64) + 0.0  # -0.0 -> 0.0
            stands_for[k] = np.full(samples[k].shape[0], 1.0 / rate)
    return ScoreSummary(lowest, highest, samples, stands_for, smallest, largest, class_weights,
                        classes, smallest_at, largest_at)


def _merged_class_weights(summaries: list):
    """The class weights (``ScoreSummary.class_weights``) of several summaries' rows."""
    parts = [s.class_weights for s in summaries if s.class_weights is not None]
    if not parts:
        return None
    totals = [sum(p[0][c] for p in parts) for c in range(2)]
    least = [min(parts, key=lambda p: p[1][c]) for c in range(2)]
    return totals, [least[c][1][c] for c in range(2)], [least[c][2][c] for c in range(2)]


def merge_summaries(summaries: list) -> ScoreSummary:
    """One summary of the rows of several (a list may hold None for empty pieces)."""
    summaries = [s for s in summaries if s is not None]
    if not summaries:
        raise ValueError("the data has no rows")
    least = min(summaries, key=lambda s: s.smallest_weight)
    most = max(summaries, key=lambda s: s.largest_weight)
    return ScoreSummary(
        np.min([s.lowest for s in summaries], axis=0),
        np.max([s.highest for s in summaries], axis=0),
        [np.concatenate([s.samples[k] for s in summaries])
         for k in range(len(summaries[0].samples))],
        [np.concatenate([s.sample_weights[k] for s in summaries])
         for k in range(len(summaries[0].samples))],
        min(s.smallest_weight for s in summaries), max(s.largest_weight for s in summaries),
        _merged_class_weights(summaries),
        LabelClasses.join(s.label_classes for s in summaries)
        if any(s.label_classes is not None for s in summaries) else None,
        least.smallest_weight_at, most.largest_weight_at)


def bucket_edges(sample: np.ndarray, n_buckets: int, weights=None) -> np.ndarray:
    """Increasing bucket edges from a score sample; bucket b holds [edges[b-1], edges[b]).

    Edges are sample quantiles (``weights``: how many rows each sampled value
    stands for, when pieces were sampled at different rates). A value that
    holds half a bucket's share of the sample or more is isolated in a
    single-score bucket [v, nextafter(v)).
    """
    if n_buckets <= 1 or sample.shape[0] == 0:
        return np.zeros(0)
    order = np.argsort(sample, kind="stable")
    sample = sample[order]
    weights = np.ones(sample.shape[0]) if weights is None else np.asarray(weights)[order]
    cumulative = np.cumsum(weights)
    total = cumulative[-1]
    at = np.searchsorted(cumulative, np.arange(1, n_buckets) * total / n_buckets, side="right")
    quantiles = sample[np.minimum(at, sample.shape[0] - 1)]
    values, first = np.unique(sample, return_index=True)
    mass = np.add.reduceat(weights, first)
    heavy = values[mass * 2 * n_buckets >= total]
    return np.unique(np.concatenate([quantiles, heavy, np.nextafter(heavy, np.inf)]))


def tied_buckets(edges: np.ndarray) -> np.ndarray:
    """Indices of the buckets that can hold only one score value."""
    if edges.shape[0] < 2:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.nextafter(edges[:-1], np.inf) == edges[1:]) + 1


def byte_rows(values: np.ndarray) -> np.ndarray:
    """(n, bytes per row) read-only uint8 view of a C-contiguous 1-D or 2-D array (read-only
    whatever the caller's flags: the kernel that reads it compiles one version)."""
    values = np.ascontiguousarray(values)
    return read_only(values.view(np.uint8).reshape(values.shape[0], -1))
