"""The chunk algebra: exact counts of data too large for one sweep, from counts per chunk.

A *chunk* holds the rows of a contiguous score range, equal scores never
split between chunks (a streaming bucket, a Dask partition). Each chunk is
swept on its own, in any order and on any machine, and the per-chunk counts
are combined exactly (see ``_kernels.combine_chunk_counts``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..prepare.memberships import prepare_memberships, prepare_memberships_dense
from ..sort.order import SortedScores
from . import _kernels as K
from .counts import SweepCounts, WeightedLow, count_sorted, sweep_counts


@dataclass(frozen=True)
class ChunkCounts:
    """Sweep counts of one chunk: rows holding a contiguous score range, ties never split.

    Attributes
    ----------
    counts : ndarray (n_subgroups, 7)
        Cell totals and twice the U numerators of the pairs inside the chunk
        (columns as in ``fastbias.sweep._kernels``); int64 unweighted, float64 weighted.
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
    placements, at_thresholds, all_rows : object
        What later stages add from the chunk's sorts (the significance tests' placement
        sums, the threshold counts, the placement sums of all its rows for the overall AUC's
        interval where no subgroup is compared with every row:
        :mod:`fastbias.intervals.chunked`); None when nothing is.
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
    placements: object = None
    at_thresholds: object = None
    all_rows: object = None


def _chunk_universes(codes: np.ndarray) -> list:
    """Group subgroups that share the rows they may be compared with: [(kept or None, [j])]."""
    n_groups = codes.shape[1]
    if codes.shape[0] == 0 or n_groups == 0 or codes.min() >= 0:
        return [(None, list(range(n_groups)))]
    # each subgroup's unannotated rows as packed bits, compared whole (reading the columns
    # one by one is strided: with hundreds of intersections as columns it dominated a sweep)
    n = codes.shape[0]
    bits = K.missing_bits(codes)   # (n_groups, ceil(n / 64)) uint64
    groups: dict = {}
    for j in range(n_groups):
        groups.setdefault(bits[j].tobytes(), []).append(j)
    out = []
    for members in groups.values():
        missing = bits[members[0]]
        kept = None
        if missing.any():
            unpacked = np.unpackbits(missing.view(np.uint8), count=n, bitorder="little")
            kept = np.flatnonzero(unpacked == 0)
        out.append((kept, members))
    return out


def chunk_counts(scores: np.ndarray, labels: np.ndarray, codes: np.ndarray,
                 weights: np.ndarray | None = None,
                 per_universe=None) -> ChunkCounts | None:
    """Sweep one chunk's rows (any row order) with the ordinary one-machine kernels.

    ``scores`` validated float32/float64, ``labels`` bool, ``codes`` int8
    (n, n_subgroups) as in :class:`EncodedRows`, ``weights`` float64 or None,
    already divided by the weight scale common to all chunks (they are used
    as they are). ``per_universe(sorted_scores, weights)``, when given, is called with
    the sorts of each group of subgroups compared with the same rows (and those rows'
    weights); ``placements`` then holds ``[(its value, the group's subgroups)]``.
    Returns None for an empty chunk.
    """
    n = scores.shape[0]
    if n == 0:
        return None
    n_groups = codes.shape[1]
    weighted = weights is not None
    dtype = np.float64 if weighted else np.int64
    counts = np.zeros((n_groups, K.N_COUNT_COLUMNS), dtype=dtype)
    backgrounds = np.zeros((n_groups, 2), dtype=dtype)
    counts_lo = np.zeros((n_groups, K.N_COUNT_COLUMNS))
    backgrounds_lo = np.zeros((n_groups, 2))
    cell_rows = np.zeros((n_groups, 2), dtype=np.int64)
    universe_rows = np.zeros((n_groups, 2), dtype=np.int64)
    overall = None
    extras = []  # what per_universe makes of each universe's sorts
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
        sorted_scores = SortedScores(s, prepare_memberships_dense(y, matrix, members))
        sc = count_sorted(sorted_scores, w, weight_scale=1.0)
        if per_universe is not None:
            extras.append((per_universe(sorted_scores, w), members))
        counts[members] = sc.counts
        background = np.column_stack(sc.background_totals())
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
                       float(scores.min()) + 0.0, float(scores.max()) + 0.0, low,
                       extras if per_universe is not None else None)


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
        counts, twice_u = K.tied_chunk_counts(cell_rows, background_rows, class_rows)
        return ChunkCounts(counts, background_rows, cell_rows, universe_rows, class_rows.copy(),
                           class_rows.copy(), twice_u, float(score), float(score))
    cell_w = np.ascontiguousarray(cell_weight)
    background_w = np.ascontiguousarray(background_weight)
    class_w = np.ascontiguousarray(class_weight)
    c_hi, c_lo, u_hi, u_lo = K.tied_chunk_counts_dd(
        cell_w[..., 0], cell_w[..., 1], background_w[..., 0], background_w[..., 1],
        class_w[:, 0], class_w[:, 1])
    low = WeightedLow(c_lo, background_w[..., 1].copy(), class_w[:, 1].copy(), float(u_lo))
    return ChunkCounts(c_hi, background_w[..., 0].copy(), cell_rows, universe_rows,
                       class_w[:, 0].copy(), class_rows.copy(), float(u_hi), float(score),
                       float(score), low)


def combine_chunks(chunks, names: list, weighted: bool, weight_scale: float = 1.0):
    """Join the chunks of one model into whole-data counts.

    Returns ``(sweeps, overall)``: one :class:`SweepCounts` per group of
    subgroups compared with the same rows (names in the given order within
    each), exactly as one sweep of all rows would count them, and the
    overall counts. ``weight_scale`` is the power of two the chunks' weights
    were divided by (kept, so that tables report weights in the input's
    units). Raises RuntimeError when two chunks overlap in score (the
    decomposition would be wrong).
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
         twice_u_lo) = K.combine_chunk_counts_dd(
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
        counts, twice_u = K.combine_chunk_counts(
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
    sweeps = []
    for members in universes.values():
        universe = universe_rows[members[0]]
        low = None
        if weighted:
            low = WeightedLow(counts_lo[members], backgrounds_lo[members], np.zeros(2), 0.0)
        sc = SweepCounts([names[j] for j in members], counts[members], scalar(universe[0]),
                         scalar(universe[1]), twice_u, cell_rows[members],
                         (int(universe[0]), int(universe[1])), weighted,
                         backgrounds[members] if weighted else None, low, weight_scale)
        sweeps.append(sc)
    overall_low = (WeightedLow(np.zeros((0, K.N_COUNT_COLUMNS)), np.zeros((0, 2)), class_lo,
                               twice_u_lo) if weighted else None)
    overall = SweepCounts([], np.zeros((0, K.N_COUNT_COLUMNS)), scalar(class_totals[0]),
                          scalar(class_totals[1]), twice_u, np.zeros((0, 2), dtype=np.int64),
                          (int(class_rows[0]), int(class_rows[1])), weighted, None, overall_low,
                          weight_scale)
    return sweeps, overall
