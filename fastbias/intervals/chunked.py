"""What a chunk of rows adds to its counts for the stages after them, out of core.

A chunk (rows of one score range, ties never split: a streaming bucket, a Dask partition) is
counted by ``fastbias.sweep.chunks.chunk_counts``; with significance tests it also carries its
placement sums (:mod:`.placement_sums`), with thresholds its threshold counts
(``fastbias.metrics.thresholds``), both from the sorts its counts made. Weights reach a chunk
divided by the chunks' common power-of-two ``weight_scale``; they are multiplied back here, so
these sums are in the input's units.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..metrics.thresholds import (
    dd_add,
    gather_threshold_counts,
    threshold_counts,
    tied_threshold_counts,
)
from ..prepare.memberships import prepare_memberships
from ..sort.order import SortedScores, sortable_key
from ..sweep import _kernels as SK
from ..sweep.chunks import ChunkCounts, chunk_counts
from .placement_sums import (
    cell_spans,
    gather_placement_sums,
    placement_sums,
    tied_placement_sums,
)


def counted_chunk(scores, labels, codes, weights=None, weight_scale: float = 1.0,
                  with_sums: bool = False, thresholds=None, all_rows_sums: bool = False):
    """:func:`~fastbias.sweep.chunks.chunk_counts` of one chunk, with (``with_sums``) its
    :class:`~.placement_sums.PlacementSums` in ``placements`` and (``thresholds``, sorted
    float64) its :class:`~fastbias.metrics.thresholds.ThresholdCounts` in
    ``at_thresholds``, from the same sorts; with ``all_rows_sums`` (DeLong intervals under
    ``missing_subgroup="exclude"``) also the sums of all its rows, one subgroup holding
    every row (:func:`_all_rows_sums`), in ``all_rows``."""
    if not with_sums and thresholds is None:
        return chunk_counts(scores, labels, codes, weights)

    def extras(sorted_scores, w):
        w = None if w is None else w * weight_scale
        return (_with_spans(*placement_sums(sorted_scores, w, workers=1)[:2]) if with_sums
                else None,
                threshold_counts(sorted_scores, w, thresholds) if thresholds is not None
                else None)

    chunk = chunk_counts(scores, labels, codes, weights, per_universe=extras)
    if chunk is None:
        return None
    k, weighted = codes.shape[1], weights is not None
    parts = chunk.placements
    if all_rows_sums:
        chunk = replace(chunk, all_rows=_all_rows_sums(scores, labels, weights, weight_scale))
    return replace(
        chunk,
        placements=(gather_placement_sums([(p, m) for (p, _), m in parts], k, weighted)
                    if with_sums else None),
        at_thresholds=(gather_threshold_counts([(t, m) for (_, t), m in parts], k, thresholds,
                                               weighted) if thresholds is not None else None))


def _all_rows_sums(scores, labels, weights, weight_scale: float):
    """The :class:`~.placement_sums.PlacementSums` of one pseudo-subgroup holding every row of
    a chunk: its ``overall`` is the sums of the AUC of all the rows, joined across chunks as
    any subgroup's are (the overall AUC's DeLong interval, where under ``exclude`` no
    subgroup's universe is every row)."""
    every = prepare_memberships(labels, [np.arange(scores.shape[0], dtype=np.int64)],
                                ["all rows"])
    w = None if weights is None else weights * weight_scale
    return _with_spans(*placement_sums(SortedScores(scores, every), w, workers=1)[:2])


def _with_spans(sums, walk):
    """A universe's sums with its cells' spans (:func:`~.placement_sums.cell_spans`): out of
    core the rows are gone when the sums are joined."""
    return replace(sums, spans=cell_spans(walk))


def with_tied_extras(chunk: ChunkCounts, weight_scale: float = 1.0, with_sums: bool = False,
                     thresholds=None, score_dtype=np.float64, weight_bits: int | None = None,
                     all_rows_sums: bool = False) -> ChunkCounts:
    """A chunk of one score (``fastbias.sweep.chunks.tied_chunk``) with what
    :func:`counted_chunk` adds, from its cell totals (weights: high + low parts, times the
    ``weight_scale`` they were divided by). ``score_dtype``: the scores' type, in which the
    thresholds are compared; ``weight_bits``: :func:`~.delong.fraction_bits` of its rows'
    weights in the input's units (None: not known), which tell where its sums are exact."""
    cell_columns = [SK.CELL_SUBGROUP_NEG, SK.CELL_SUBGROUP_POS]
    cells = chunk.counts[:, cell_columns].astype(np.float64)
    backgrounds = chunk.backgrounds.astype(np.float64)
    weighted = chunk.low is not None
    cells_lo = np.zeros(cells.shape)
    backgrounds_lo = np.zeros(cells.shape)
    if weighted:  # (high, low) pairs in the input's units (a power of two: exact)
        cells, cells_lo = cells * weight_scale, chunk.low.counts[:, cell_columns] * weight_scale
        backgrounds = backgrounds * weight_scale
        backgrounds_lo = chunk.low.background * weight_scale
    sums = at = None
    key = sortable_key(np.asarray(chunk.min_score, dtype=score_dtype))  # (the cells' spans)
    if with_sums:  # own-class square sums of weighted rows are not kept (unweighted moments)
        sums = tied_placement_sums(np.column_stack([cells, backgrounds]),
                                   chunk.cell_rows, chunk.universe_rows,
                                   np.full(cells.shape, np.nan) if weighted else None,
                                   weight_bits, np.column_stack([cells_lo, backgrounds_lo]), key)
    if thresholds is not None:
        pairs = np.stack([cells, cells_lo], axis=-1)
        totals = dd_add(pairs, np.stack([backgrounds, backgrounds_lo], axis=-1))
        at = tied_threshold_counts(chunk.min_score, score_dtype, thresholds, pairs, totals,
                                   chunk.cell_rows, chunk.universe_rows, weighted)
    every = None
    if all_rows_sums:  # (one pseudo-subgroup of every row: its cells are the classes)
        totals = chunk.class_totals.astype(np.float64)
        totals_lo = np.zeros(2)
        if weighted:
            totals, totals_lo = totals * weight_scale, chunk.low.totals * weight_scale
        every = tied_placement_sums(
            np.concatenate([totals, [0.0, 0.0]])[None, :], chunk.class_rows[None, :],
            chunk.class_rows[None, :], np.full((1, 2), np.nan) if weighted else None,
            weight_bits, np.concatenate([totals_lo, [0.0, 0.0]])[None, :], key)
    return replace(chunk, placements=sums, at_thresholds=at, all_rows=every)
