"""The placement sums behind every significance test: from one walk, or joined from chunks.

A significance test (:mod:`.significance`) reads, per subgroup, DeLong's
placement sums of the five metrics and of the overall AUC, the cross sums of
each AUC metric with the overall AUC, and each class's own-class placement
sums (the permutation moments). :class:`PlacementSums` holds them for all the
rows. In memory they come from the walks over the sorts of the point estimate
(:func:`placement_sums`); out of core each *chunk* (rows of a contiguous score
range, ties never split: a streaming bucket, a Dask partition) gives the same
sums over its own rows (:mod:`.chunked`, :func:`tied_placement_sums`)
and :func:`combine_placement_sums` joins them exactly in score order.

Why the join is exact: a row's placement (the weight of the other sample below
it, or above it) is the weight of that sample in the chunks below (above) the
row's chunk plus its placement within the chunk, ``P = B + p``. A sum over a
chunk's rows of ``w P`` or ``w P Q`` then expands into the chunk's own sums of
``w``, ``w p``, ``w q`` and ``w p q`` and the offsets ``B``; every one of them is
a sum the one-machine walks already compute, on the chunk's rows alone.

Exact out of core too: where a chunk's sums can be made exact (its walks'
:class:`~.exact_sums.ExactSums`; a chunk of one score from its cell weights), it
keeps them as two doubles each (:class:`ChunkExact`), and the join runs the same
algebra on them in whole numbers (:class:`JoinedExact`), for the subgroups whose
variances or differences the float sums cannot tell, as in memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache

import numpy as np

from ..metrics.definitions import METRIC_COLUMNS
from ..sort.order import SortedScores
from ..sweep import _kernels as SK
from ..sweep.walk import member_walk
from .delong import (
    DELONG_MAX_RANGES,
    _background_span,
    _placement_sums,
    flat_parts,
    weight_bits_of,
)
from .exact_sums import NO_LO, exact_walks_ready, finished_delong, lazy_exact_sums
from .first_call import (
    class_sums_in_numpy,
    cross_sums_in_numpy,
    delong_sums_in_numpy,
    walk_in_numpy,
)

#: columns of ``PlacementSums.overall``: the overall AUC's U, its sum of squared placements
#: over the positives and over the negatives (as ``SK.class_placement_sums``)
OVERALL_U, OVERALL_SQ_POS, OVERALL_SQ_NEG = 0, 1, 2

#: columns of ``PlacementSums.above``: over each class, sum of ``w a`` and of ``w a^2`` with
#: ``a`` the weight of its own class above the row (ties 1/2, itself left out)
ABOVE_NEG, ABOVE_SQ_NEG, ABOVE_POS, ABOVE_SQ_POS = 0, 1, 2, 3

# per metric (order of METRIC_COLUMNS): the cell of its X (above) and Y (below) sample, as a
# column of the (k, 4) weights (Dg-, Dg+, B-, B+)
_SUB_NEG, _SUB_POS, _BG_NEG, _BG_POS = 0, 1, 2, 3
_METRIC_CELLS = ((_SUB_POS, _SUB_NEG), (_BG_POS, _SUB_NEG), (_SUB_POS, _BG_NEG),
                 (_BG_NEG, _SUB_NEG), (_BG_POS, _SUB_POS))


@dataclass(frozen=True)
class PlacementSums:
    """Per subgroup (one row each), the sums a significance test reads.

    Attributes
    ----------
    delong : ndarray (k, 15)
        U, SQX, SQY of the five metrics (columns as ``SK.DELONG_U``, ``SK.DELONG_SQ_X``,
        ``SK.DELONG_SQ_Y``, then the metric).
    cross : ndarray (k, 8)
        The cross sums with the overall AUC (columns as ``SK.member_overall_cross_sums``).
    overall : ndarray (k, 3)
        The overall AUC's sums over the rows the subgroup is compared with (its universe).
    above : ndarray (k, 4)
        The own-class placement sums of its universe (columns ``ABOVE_*``).
    weights : ndarray (k, 4)
        Weight (or rows) of the cells Dg-, Dg+, B-, B+ (a background with no rows: 0).
    cell_rows, class_rows : ndarray (k, 2) of int64
        Rows of the subgroup's cells and of its universe's classes.
    weighted : bool
    weight_bits : int, None or a function that gives it
        Binary digits below the point that the weights need
        (:func:`~.delong.fraction_bits`; 0 unweighted, None not known): where the sums
        are exact (:func:`~.delong.sum_floors`). In memory a function, called (reading
        every weight) only where a variance is not known without it: :func:`bits_of`.
    joins : int
        At most how many pieces each subgroup's own sums were added up in (a walk's ranges,
        then the chunks joined out of core): how many terms its subgroup AUC's sums carry
        beyond its memberships (:func:`~.delong.metric_terms`).
    flat_parts : function or None
        In memory, ``flat_parts(groups)``: :func:`~.delong.flat_parts` of the walk the sums
        came from (None out of core, where the rows are not kept).
    exact : function or None
        A function that gives the same sums exact (:class:`~.exact_sums.ExactSums` in
        memory, :class:`JoinedExact` out of core; for the variances the float sums leave
        unknown), or None where they cannot be (:func:`~.exact_sums.exact_sums_of`).
    joinable : ChunkExact or None
        Out of core, one chunk's exact sums, kept for the join (None: not exact).
    read_ratios : ndarray (k, 2), function or None
        Per subgroup, of its universe's negatives and positives, how far a read of the
        class's prefix sums may be off, in units of 2**-53 of what is read
        (:func:`~fastbias.sweep.walk.read_ratio`; out of core the largest of the
        chunks'): where a variance's floors need them (:func:`~.delong.sum_floors`); a
        function in memory (worked out on first use); None: not known (unweighted, whose
        sums are exact, or not made).
    spans : ndarray (k, 4, 2) of uint64, or None
        Out of core, the lowest and highest sortable key (``sort.order.sortable_key``) of
        the rows of each cell Dg-, Dg+, B-, B+ (lowest above highest: no rows), the
        chunks' joined by min and max: where they show a sample's placements all the same
        (:func:`flat_parts_of_spans`), its part of a variance is exactly 0, as
        ``flat_parts`` shows in memory (a constant or separating model). None in memory.
    exact_pending : bool
        Out of core, whether a chunk kept no exact sums only because the exact walks were
        still compiling (a first call, :func:`_chunk_exact`): the tests in doubt, which
        they would settle, are then not made (a later call makes them).
    """

    delong: np.ndarray
    cross: np.ndarray
    overall: np.ndarray
    above: np.ndarray
    weights: np.ndarray
    cell_rows: np.ndarray
    class_rows: np.ndarray
    weighted: bool
    weight_bits: object = None
    joins: int = DELONG_MAX_RANGES
    flat_parts: object = None
    exact: object = None
    joinable: object = None
    read_ratios: object = None
    spans: object = None
    exact_pending: bool = False

    @property
    def class_totals(self) -> np.ndarray:
        """(k, 2): the weight of the universe's negatives and positives."""
        return self.weights[:, [_SUB_NEG, _SUB_POS]] + self.weights[:, [_BG_NEG, _BG_POS]]


@dataclass(frozen=True)
class ChunkExact:
    """One chunk's sums, exact, as two doubles each (their sum exact), for the join.

    ``weights_hi``, ``weights_lo`` (k, 4): the cells' weights (as
    :attr:`PlacementSums.weights`). A chunk that was walked also has the raw sums of its
    walks (:meth:`~.exact_sums.ExactSums.pairs`): ``delong_*`` (k, N_DELONG_COLUMNS),
    ``cross_*`` (k, 8), ``overall_*`` (k, 3); a chunk of one score has none (``tied``): its
    sums follow from its weights (:func:`_tied_sums`).
    """

    weights_hi: np.ndarray
    weights_lo: np.ndarray
    delong_hi: np.ndarray | None = None
    delong_lo: np.ndarray | None = None
    cross_hi: np.ndarray | None = None
    cross_lo: np.ndarray | None = None
    overall_hi: np.ndarray | None = None
    overall_lo: np.ndarray | None = None

    @property
    def tied(self) -> bool:
        return self.delong_hi is None

    def _arrays(self):
        """``(name, hi, lo, degrees)`` of each kind of sum it keeps."""
        yield "weights", self.weights_hi, self.weights_lo, (1, 1, 1, 1)
        if not self.tied:
            yield "raw delong", self.delong_hi, self.delong_lo, _DEGREES["raw delong"]
            yield "cross", self.cross_hi, self.cross_lo, _DEGREES["cross"]
            yield "overall", self.overall_hi, self.overall_lo, _DEGREES["overall"]

    def whole(self, unit: int) -> bool:
        """Whether every sum it keeps, of degree ``d`` in the weights (:data:`_DEGREES`),
        is a whole number times ``2**-(d unit)``, as it is where the weights are multiples
        of ``2**(1 - unit)`` (a placement of ``2**-unit``) and the sums exact: what
        :meth:`integers` needs (checked, not taken on trust)."""
        for _, hi, lo, degrees in self._arrays():
            scale = np.ldexp(1.0, np.asarray(degrees) * unit)
            if not (np.all(np.isfinite(hi * scale)) and np.all(np.mod(hi * scale, 1.0) == 0)
                    and np.all(np.mod(lo * scale, 1.0) == 0)):
                return False
        return True

    def integers(self, g: int, unit: int) -> tuple:
        """Subgroup ``g``'s ``(delong (15,), cross (8,), overall (3,), weights (4,))`` as
        Python integers, each sum of degree ``d`` in the weights times ``2**(d unit)``
        (whole numbers: :meth:`whole`)."""
        found = {name: [int(math.ldexp(h, d * unit)) + int(math.ldexp(x, d * unit))
                        for h, x, d in zip(hi[g].tolist(), lo[g].tolist(), degrees)]
                 for name, hi, lo, degrees in self._arrays()}
        if self.tied:
            delong, cross, overall = _tied_sums(np.array([found["weights"]], dtype=object),
                                                _half_whole)
            return (delong[0].tolist(), cross[0].tolist(), overall[0].tolist(),
                    found["weights"])
        return (finished_delong(found["raw delong"]), found["cross"], found["overall"],
                found["weights"])


#: each sum's degree in the weights (a weight or a placement: 1): the join's algebra is
#: homogeneous in it, so sums scaled by ``2**(degree unit)`` join as whole numbers
_DEGREES = {"raw delong": (2,) * 5 + (3,) * (SK.N_DELONG_COLUMNS - 5),
            "delong": (2,) * 5 + (3,) * 10, "cross": (3, 2, 3, 3, 3, 2, 3, 3),
            "overall": (2, 3, 3)}


def _half_whole(values):
    """Half of whole numbers that are even (a weight scaled to placements: exact)."""
    return values // 2


class JoinedExact:
    """The exact sums of all rows, joined from each chunk's :class:`ChunkExact` (in score
    order) by the algebra of :func:`combine_placement_sums`: the interface of
    :class:`~.exact_sums.ExactSums` (:meth:`delong`, :meth:`cross`, :meth:`overall`), each
    subgroup joined on first use, in whole numbers (weights of ``bits`` binary digits below
    the point: every sum a whole number of its unit, :meth:`ChunkExact.integers`), all
    chunks at once: the same algebra with the chunks in place of subgroups, summed."""

    def __init__(self, chunks: list, bits: int):
        self._chunks = chunks
        self._unit = bits + 1
        self._rows = {}

    def _row(self, g: int) -> tuple:
        if g not in self._rows:
            self._rows[g] = self._joined_row([chunk.integers(g, self._unit)
                                              for chunk in self._chunks])
        return self._rows[g]

    def _joined_row(self, rows: list) -> tuple:
        n = len(rows)
        columns = [np.array([row[j] for row in rows], dtype=object).reshape(n, -1)
                   for j in range(4)]
        weights = columns[3][:, None, :]  # (chunks, 1, 4): offsets along the chunks
        below, above = _offsets(weights)
        # (one "part" whose rows are the chunks: each row's share of the sums, then added)
        shares = _joined([tuple(columns[:3])], weights.reshape(1, n, 4),
                         (below.reshape(1, n, 4), above.reshape(1, n, 4)))
        return tuple([Fraction(int(total), 1 << (degree * self._unit))
                      for total, degree in zip(share.sum(axis=0).tolist(), _DEGREES[kind])]
                     for share, kind in zip(shares, ("delong", "cross", "overall")))

    def delong(self, g: int) -> list:
        return self._row(g)[0]

    def cross(self, g: int) -> list:
        return self._row(g)[1]

    def overall(self, g: int) -> tuple:
        """The sums of the AUC of the rows subgroup ``g`` is compared with (its universe)."""
        return tuple(self._row(g)[2])


class _Classes:
    """Each class in score order, as a significance test reads it.

    ``above`` (4,): the own-class placement sums (columns ``ABOVE_*``); ``u_overall``: the
    sum over the positives of ``w c_O`` (the overall AUC's U); :meth:`prefix_sums`: the
    prefix sums of ``w c_O`` along the positives and of ``w d_O`` along the negatives, for
    the cross sums; :meth:`rows`: each row of a class as (placement against the other class,
    weight of its own class above it, and where weighted its weight), the rows a drawn
    permutation test redraws. ``sums_of``: ``SK.class_sums`` or the same in numpy. A class's
    prefix sums take 8 bytes a row; its rows (16 or 24 bytes a row) are made only when a
    test draws from it, by a walk of their own after the prefix sums are freed, so that the
    two are never held together.
    """

    def __init__(self, walk, sums_of=SK.class_sums, walked=None):
        self.above = np.zeros(4)
        self.packed = {}
        self._walk, self._sums_of = walk, sums_of
        walked = walked or [self.walk_class(walk, label, sums_of) for label in (0, 1)]
        for label, (above, _, _) in enumerate(walked):
            self.above[2 * label:2 * label + 2] = above
        self._prefix = (walked[1][1], walked[0][1])
        self.u_overall = float(walked[1][1][-1])

    @staticmethod
    def walk_class(walk, label: int, sums_of=SK.class_sums, moments: bool = False) -> tuple:
        """``(own-class placement sums (2,), prefix sums, moments)`` of class ``label``: one
        walk along it, which can run on a thread of its own (``walked`` of the constructor
        takes both classes'). With ``moments``, the class's overall-AUC DeLong sums ``(sum w
        p, sum w p^2)`` (``class_sums``), else None."""
        sides = _Classes._sides_of(walk, label)
        prefix = np.empty(sides[0].shape[0] + 1)
        out = np.empty(2) if moments else _NO_MOMENTS
        return sums_of(*sides, label == 0, prefix, _NO_ROWS, out), prefix, \
            (out if moments else None)

    @staticmethod
    def _sides_of(w, label: int) -> tuple:
        """``(values, cumulative, others, others_cumulative)`` of class ``label`` of walk
        ``w``."""
        return ((w.neg, w.neg_cum, w.pos, w.pos_cum) if label == 0
                else (w.pos, w.pos_cum, w.neg, w.neg_cum))

    def prefix_sums(self) -> tuple:
        """``(q_pos, r_neg)``, given once (the cross sums read them; then they are freed)."""
        prefix, self._prefix = self._prefix, None
        return prefix

    def rows(self, label: int) -> np.ndarray:
        """(n, 2) or, weighted, (n, 3): each row of class ``label`` (0 the negatives, 1 the
        positives) as a drawn permutation test reads it; made on the first call, kept in
        ``packed``. The negatives are placed by the positives above them, the positives by
        the negatives below."""
        if label not in self.packed:
            sides = self._sides_of(self._walk, label)
            values, cumulative = sides[:2]
            rows = np.empty((values.shape[0], 3 if cumulative.size else 2))
            self._sums_of(*sides, label == 0, _NO_PREFIX, rows, _NO_MOMENTS)
            if rows.shape[1] > 2:  # weighted: rows tied in score in one order, by weight
                tied = tied_rows(values)
                if tied.size:
                    rows[tied] = rows[tied[by_weight_within_ties(values[tied],
                                                                 rows[tied, 2])]]
            self.packed[label] = rows
        return self.packed[label]


def tied_rows(keys: np.ndarray) -> np.ndarray:
    """The positions of the rows of sorted ``keys`` that tie with a neighbour."""
    tied = np.zeros(keys.shape[0], dtype=bool)
    same = keys[1:] == keys[:-1]
    tied[1:] |= same
    tied[:-1] |= same
    return np.flatnonzero(tied)


def by_weight_within_ties(keys: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The order that sorts the rows of sorted ``keys`` by weight among rows of one key,
    each key's rows kept in their place: weighted rows tied in score, in whatever order
    they came, are then drawn alike by a permutation test (found by review: shuffled, they
    drew other subsets).

    Examples
    --------
    >>> by_weight_within_ties(np.array([1, 1, 2, 3, 3]), np.array([2.0, 1.0, 5.0, 4.0, 3.0]))
    array([1, 0, 2, 4, 3])
    """
    if keys.shape[0] < 2:
        return np.arange(keys.shape[0])
    block = np.concatenate([[0], np.cumsum(keys[1:] != keys[:-1])])
    return np.lexsort((weights, block))


#: what :class:`_Classes` passes ``class_sums`` for the rows or the prefix sums not to make
_NO_ROWS = np.empty((0, 2))
_NO_PREFIX = _NO_MOMENTS = np.empty(0)


def placement_sums(sorted_scores: SortedScores, sample_weight=None, workers: int | None = None):
    """:class:`PlacementSums` of one universe from the sorts of its point estimate.

    Returns ``(sums, walk, classes)``; the walk and the classes (:class:`_Classes`) are
    what a drawn permutation test reuses. ``sample_weight`` (the
    universe's rows) as the point estimate used them. No new sort; ``O(n + memberships)``.
    """
    m = sorted_scores.memberships
    k = m.n_groups
    walk = member_walk(sorted_scores, sample_weight)
    # the classes' own walks run beside the subgroups' DeLong walks and give the overall
    # AUC's DeLong sums on the way
    delong, overall, walked = _placement_sums(
        walk, k, sorted_scores.workers if workers is None else workers,
        lambda label: _Classes.walk_class(walk, label, moments=True))
    classes = _Classes(walk, walked=walked)
    del walked
    q_pos, r_neg = classes.prefix_sums()
    cross = SK.member_overall_cross_sums(walk.keys, walk.codes, walk.weights, walk.neg,
                                         walk.pos, walk.neg_cum, walk.pos_cum, q_pos, r_neg,
                                         walk.cells, NO_LO) if k else None
    del q_pos, r_neg
    return _gathered(m, walk, delong, overall, classes, cross, sample_weight,
                     lazy_exact_sums(walk, m.n_rows, lambda: weight_bits_of(sample_weight)))


def placement_sums_in_numpy(scores: np.ndarray, memberships, sample_weight=None):
    """:func:`placement_sums` in numpy (no kernel compiles), from the validated scores and
    memberships: ``(sums, walk, classes)``.

    Every per-row placement is the kernels'; the sums over the rows are added in the
    walk's order except the DeLong sums (numpy's pairwise sums: a few ulps apart).
    """
    m = memberships
    k = m.n_groups
    walk = walk_in_numpy(scores, m, sample_weight)
    delong, overall = delong_sums_in_numpy(walk, k)
    classes = _Classes(walk, class_sums_in_numpy)
    q_pos, r_neg = classes.prefix_sums()
    cross = cross_sums_in_numpy(walk, q_pos, r_neg, k) if k else None
    del q_pos, r_neg
    return _gathered(m, walk, delong, overall, classes, cross, sample_weight)


def _gathered(m, walk, delong, overall, classes, cross, sample_weight, exact=None) -> tuple:
    """``(PlacementSums, walk, classes)`` from one universe's walk and its sums (``exact``:
    a function that gives its :class:`~.exact_sums.ExactSums`, or None)."""
    k = m.n_groups
    if cross is None:
        cross = np.zeros((0, SK.N_OVERALL_CROSS_COLUMNS))
    w_neg, w_pos = walk.class_totals
    n_neg, n_pos = m.class_rows
    cells = walk.cells
    weights = np.column_stack([
        cells[:, 0], cells[:, 1],
        np.where(n_neg - m.cell_rows[:, 0] > 0, w_neg - cells[:, 0], 0.0),
        np.where(n_pos - m.cell_rows[:, 1] > 0, w_pos - cells[:, 1], 0.0)]) if k \
        else np.zeros((0, 4))
    sums = PlacementSums(np.asarray(delong, dtype=np.float64).reshape(k, 15), cross,
                         np.tile(np.asarray(overall, dtype=np.float64), (k, 1)),
                         np.tile(classes.above, (k, 1)), weights,
                         np.asarray(m.cell_rows, dtype=np.int64).reshape(k, 2),
                         np.tile(np.array([n_neg, n_pos], dtype=np.int64), (k, 1)),
                         sample_weight is not None,
                         0 if sample_weight is None else lambda: weight_bits_of(sample_weight),
                         flat_parts=lambda groups: flat_parts(walk, groups), exact=exact,
                         read_ratios=None if walk.read_ratios is None
                         else lambda: np.tile(walk.read_ratios(), (k, 1)))
    return sums, walk, classes


#: a cell's span with no rows: the lowest key above the highest (min and max join it away)
NO_SPAN = (np.iinfo(np.uint64).max, 0)


def no_spans(k: int) -> np.ndarray:
    """:attr:`PlacementSums.spans` of ``k`` subgroups whose cells hold no rows."""
    spans = np.empty((k, 4, 2), dtype=np.uint64)
    spans[..., 0], spans[..., 1] = NO_SPAN
    return spans


def cell_spans(walk) -> np.ndarray:
    """:attr:`PlacementSums.spans` of one walk (a chunk's universe): each subgroup cell's
    lowest and highest key from its memberships (in score order), each background's from
    its class's keys less the subgroup's (:func:`~.delong._background_span`)."""
    k = walk.cells.shape[0]
    spans = no_spans(k)
    if k == 0 or walk.codes.shape[0] == 0:
        for c, keys in ((_BG_NEG, walk.neg), (_BG_POS, walk.pos)):
            if keys.shape[0]:
                spans[:, c] = keys[0], keys[-1]
        return spans
    codes = np.asarray(walk.codes, dtype=np.int64)
    by_code = np.argsort(codes, kind="stable")  # (each code's keys stay in score order)
    keys = np.asarray(walk.keys)[by_code]
    bounds = np.searchsorted(codes[by_code], np.arange(2 * k + 1))
    for g in range(k):
        for label, class_keys in ((0, walk.neg), (1, walk.pos)):
            own = keys[bounds[2 * g + label]:bounds[2 * g + label + 1]]
            if own.shape[0]:
                spans[g, label] = own[0], own[-1]
            background = _background_span(class_keys, own)
            if background is not None:
                spans[g, 2 + label] = background
    return spans


def flat_parts_of_spans(spans: np.ndarray) -> dict:
    """metric -> ``(flat_x, flat_y)`` (k,) bool from :attr:`PlacementSums.spans`: a sample's
    placements are all the same where its rows are at one score, or the other sample's rows
    all lie below or all above them (the cases of a constant or separating model; in memory
    :func:`~.delong.flat_parts` also sees the other sample's rows missing from between)."""
    return {metric: (_flat(spans, x, y), _flat(spans, y, x))
            for metric, (x, y) in zip(METRIC_COLUMNS, _METRIC_CELLS)}


def _flat(spans, x: int, y: int) -> np.ndarray:
    """Per subgroup, whether the rows of cell ``x`` (of ``spans``' second axis) have all the
    same placement against cell ``y``'s: they hold rows, at one score, or ``y``'s lie all
    below or all above them."""
    lo, hi = spans[..., 0], spans[..., 1]
    rows = lo[:, x] <= hi[:, x]
    return rows & ((lo[:, x] == hi[:, x]) | (hi[:, y] < lo[:, x]) | (lo[:, y] > hi[:, x]))


def class_flat_parts(spans: np.ndarray) -> tuple:
    """``(the positives' placements all the same, the negatives')`` of each subgroup's
    universe (its classes: its cells and its background's), from the spans, as
    :func:`flat_parts_of_spans` judges them: the overall AUC's parts."""
    neg = np.stack([np.minimum(spans[:, _SUB_NEG, 0], spans[:, _BG_NEG, 0]),
                    np.maximum(spans[:, _SUB_NEG, 1], spans[:, _BG_NEG, 1])], axis=-1)
    pos = np.stack([np.minimum(spans[:, _SUB_POS, 0], spans[:, _BG_POS, 0]),
                    np.maximum(spans[:, _SUB_POS, 1], spans[:, _BG_POS, 1])], axis=-1)
    both = np.stack([neg, pos], axis=1)  # (k, 2, 2): cell 0 the negatives, 1 the positives
    return _flat(both, 1, 0), _flat(both, 0, 1)


def empty_placement_sums(k: int, weighted: bool) -> PlacementSums:
    """The sums of no rows (a chunk with no row a subgroup may be compared with)."""
    return PlacementSums(np.zeros((k, 15)), np.zeros((k, SK.N_OVERALL_CROSS_COLUMNS)),
                         np.zeros((k, 3)), np.zeros((k, 4)), np.zeros((k, 4)),
                         np.zeros((k, 2), dtype=np.int64), np.zeros((k, 2), dtype=np.int64),
                         weighted, 0, read_ratios=np.ones((k, 2)))


def gather_placement_sums(parts: list, k: int, weighted: bool) -> PlacementSums:
    """One chunk's :class:`PlacementSums` from those of its universes: ``[(sums, members)]``
    (each universe's subgroups, as indexes into the ``k`` of the chunk)."""
    out = replace(empty_placement_sums(k, weighted),
                  weight_bits=_most_bits([sums for sums, _ in parts]),
                  joins=max((sums.joins for sums, _ in parts), default=1))
    for sums, members in parts:
        for name in ("delong", "cross", "overall", "above", "weights", "cell_rows",
                     "class_rows"):
            getattr(out, name)[members] = getattr(sums, name)
    ratios = [ratios_of(sums) for sums, _ in parts]
    if all(r is not None for r in ratios):
        for r, (_, members) in zip(ratios, parts):
            out.read_ratios[members] = r
    else:
        out = replace(out, read_ratios=None)
    spans = None
    if all(sums.spans is not None for sums, _ in parts):
        spans = no_spans(k)
        for sums, members in parts:
            spans[members] = sums.spans
    ready = exact_walks_ready()  # (once: the background compilation may end meanwhile)
    return replace(out, joinable=_chunk_exact(parts, out.weights) if ready else None,
                   spans=spans, exact_pending=not ready)


def _chunk_exact(parts: list, weights: np.ndarray) -> ChunkExact | None:
    """A chunk's :class:`ChunkExact` from its universes' walks (``[(sums, members)]``, as
    :func:`gather_placement_sums`), or None where one's sums cannot be exact. Made now,
    while the chunk's rows are at hand: every walk's exact sums, for every subgroup. Not
    made while the exact walks are not compiled yet (they compile in the background, for
    later calls: :func:`~.exact_sums.exact_walks_ready`), so that a first call out of core
    does not wait about 8 s for walks that few tests need (``PlacementSums.exact_pending``)."""
    k = weights.shape[0]
    arrays = {name: np.zeros((k, columns)) for name, columns in (
        ("delong_hi", SK.N_DELONG_COLUMNS), ("delong_lo", SK.N_DELONG_COLUMNS),
        ("cross_hi", SK.N_OVERALL_CROSS_COLUMNS), ("cross_lo", SK.N_OVERALL_CROSS_COLUMNS),
        ("overall_hi", 3), ("overall_lo", 3))}
    for sums, members in parts:
        if len(members) == 0:
            continue
        exact = None if sums.exact is None else sums.exact()
        if exact is None:
            return None
        for kind, (hi, lo) in zip(("delong", "cross", "overall"), exact.pairs()):
            arrays[f"{kind}_hi"][members] = hi
            arrays[f"{kind}_lo"][members] = lo
    return ChunkExact(weights.copy(), np.zeros_like(weights), **arrays)


def tied_placement_sums(weights, cell_rows, class_rows, square_weights=None,
                        weight_bits: int | None = None, weights_lo=None,
                        key: int | None = None) -> PlacementSums:
    """:class:`PlacementSums` of a chunk whose rows all have one score (every pair a tie),
    from its cell weights alone: ``weights`` (k, 4) of Dg-, Dg+, B-, B+, ``cell_rows`` and
    ``class_rows`` (k, 2). ``square_weights`` (k, 2): each class's sum of squared weights
    (the own-class sums need it; None: every row weighs 1). ``weight_bits``: where weighted,
    :func:`~.delong.fraction_bits` of the chunk's weights (None: not known).
    ``weights_lo``: the low parts of the cells' weights (double-double sums: ``weights``
    their high parts; None: none), the sums' weights being ``weights + weights_lo`` and the
    exact join's (:class:`ChunkExact`) the two exactly. ``key``: the sortable key of the
    chunk's score (every cell with rows spans it; None: no spans)."""
    high = np.asarray(weights, dtype=np.float64)
    lo = np.zeros_like(high) if weights_lo is None else np.asarray(weights_lo,
                                                                    dtype=np.float64)
    w = high + lo
    k = w.shape[0]
    delong, cross, overall = _tied_sums(w)
    all_neg = w[:, _SUB_NEG] + w[:, _BG_NEG]
    all_pos = w[:, _SUB_POS] + w[:, _BG_POS]
    if square_weights is None:
        squares = np.column_stack([all_neg, all_pos])
    else:
        squares = np.asarray(square_weights, dtype=np.float64)
    # a row's own class above it: half of the rest of its class; sum w a = (W^2 - sum w^2) / 2
    above = np.zeros((k, 4))
    for j, (total, square) in enumerate(((all_neg, squares[:, 0]), (all_pos, squares[:, 1]))):
        above[:, 2 * j] = 0.5 * (total * total - square)
        if square_weights is None:  # unweighted: n rows each (n - 1) / 2 above
            above[:, 2 * j + 1] = total * (0.5 * (total - 1.0)) ** 2
        else:  # the weighted square sum is not needed (the moments are unweighted): unknown
            above[:, 2 * j + 1] = np.nan
    cell_rows = np.asarray(cell_rows, dtype=np.int64).reshape(k, 2)
    class_rows = np.asarray(class_rows, dtype=np.int64).reshape(k, 2)
    spans = None
    if key is not None:
        spans = no_spans(k)
        rows = np.column_stack([cell_rows, class_rows - cell_rows]) > 0
        spans[rows] = key
    return PlacementSums(delong, cross, overall, above, w, cell_rows, class_rows,
                         square_weights is not None,
                         weight_bits if square_weights is not None else 0, 1,
                         joinable=ChunkExact(high, lo), read_ratios=np.ones((k, 2)),
                         spans=spans)


def _half(values):
    return values / 2


def _tied_sums(w, halve=None) -> tuple:
    """``(delong (k, 15), cross (k, 8), overall (k, 3))`` of chunks whose rows all have one
    score, from their cell weights ``w`` (k, 4): floats, or an object array of exact
    numbers (the same algebra, exact). ``halve``: how to take half (default ``x / 2``;
    :func:`_half_whole` for whole numbers)."""
    if halve is None:
        halve = _half
    k = w.shape[0]
    half = halve(w)
    delong = np.zeros((k, 15), dtype=w.dtype)
    for j, (x, y) in enumerate(_METRIC_CELLS):
        delong[:, SK.DELONG_U + j] = w[:, x] * half[:, y]
        delong[:, SK.DELONG_SQ_X + j] = w[:, x] * half[:, y] ** 2
        delong[:, SK.DELONG_SQ_Y + j] = w[:, y] * half[:, x] ** 2
    sub_neg, sub_pos = w[:, _SUB_NEG], w[:, _SUB_POS]
    all_neg = sub_neg + w[:, _BG_NEG]
    all_pos = sub_pos + w[:, _BG_POS]
    c_g, c_o = halve(sub_neg), halve(all_neg)  # what every positive has below it
    d_g, d_o = halve(sub_pos), halve(all_pos)  # what every negative has above it
    cross = np.column_stack([sub_pos * c_g * c_o, sub_pos * c_o, sub_pos * (c_o - c_g) * c_o,
                             all_neg * d_g * d_o, sub_neg * d_g * d_o, sub_neg * d_o,
                             sub_neg * (d_o - d_g) * d_o, all_pos * c_g * c_o])
    overall = np.column_stack([all_pos * c_o, all_pos * c_o ** 2, all_neg * d_o ** 2])
    return delong, cross, overall


def combine_placement_sums(parts: list) -> PlacementSums:
    """The :class:`PlacementSums` of all rows from each chunk's own, given in score order
    (chunks whose score ranges do not overlap, which the counts' join checks).

    Each chunk's sums are moved by the weights of the chunks below it (placements of
    the above sample X) and above it (of the below sample Y), see the module docstring
    (:func:`_joined`). Where every chunk kept its sums exact (:class:`ChunkExact`) and the
    joined weights are exact as doubles, ``exact`` gives them joined exactly
    (:class:`JoinedExact`).
    """
    k = parts[0].weights.shape[0]
    weights = np.stack([p.weights for p in parts])  # (chunks, k, 4)
    below, above = _offsets(weights)
    delong, cross, overall = _joined([(p.delong, p.cross, p.overall) for p in parts], weights,
                                     (below, above))
    above_sums = np.zeros((k, 4))
    for c, p in enumerate(parts):
        w, a = weights[c], above[c]
        n_o = w[:, _SUB_NEG] + w[:, _BG_NEG]
        p_o = w[:, _SUB_POS] + w[:, _BG_POS]
        neg_above = a[:, _SUB_NEG] + a[:, _BG_NEG]  # D- above (own-class placements)
        pos_above = a[:, _SUB_POS] + a[:, _BG_POS]
        for j, (total, offset) in enumerate(((n_o, neg_above), (p_o, pos_above))):
            first = p.above[:, 2 * j]
            above_sums[:, 2 * j] += first + total * offset
            above_sums[:, 2 * j + 1] += (p.above[:, 2 * j + 1] + 2.0 * offset * first
                                         + total * offset ** 2)
    totals = weights.sum(axis=0)
    bits = _most_bits(parts)
    exact = None
    if all(p.joinable is not None for p in parts) and _exact_as_doubles(totals, bits,
                                                                       parts[0].weighted):
        exact = _joined_exact([p.joinable for p in parts], 0 if bits is None else bits)
    # (each chunk reads its own prefix sums; the offsets are sums of chunks' weights)
    ratios = [ratios_of(p) for p in parts]
    spans = None
    if all(p.spans is not None for p in parts):  # (the lowest of the lows, highest of highs)
        stacked = np.stack([p.spans for p in parts])
        spans = np.stack([stacked[..., 0].min(axis=0), stacked[..., 1].max(axis=0)], axis=-1)
    return PlacementSums(delong, cross, overall, above_sums, totals,
                         np.sum([p.cell_rows for p in parts], axis=0, dtype=np.int64),
                         np.sum([p.class_rows for p in parts], axis=0, dtype=np.int64),
                         parts[0].weighted, bits,
                         sum(p.joins for p in parts) + len(parts), exact=exact,
                         read_ratios=None if any(r is None for r in ratios)
                         else np.max(ratios, axis=0), spans=spans,
                         exact_pending=any(p.exact_pending for p in parts))


def _joined_exact(chunks: list, bits: int):
    """A function that gives the :class:`JoinedExact` of the chunks, made on its first call,
    or None if a chunk's sums are not whole numbers of their units (:meth:`ChunkExact.whole`:
    they are, where exact, but nothing is taken on trust)."""
    return cache(lambda: JoinedExact(chunks, bits)
                 if all(chunk.whole(bits + 1) for chunk in chunks) else None)


def _exact_as_doubles(totals: np.ndarray, bits: int | None, weighted: bool) -> bool:
    """Whether weights of ``bits`` binary digits below the point (None: not known) add up
    exactly in doubles to class totals of at most ``totals`` (k, 4), every partial sum
    included: a class's weight below ``2**52`` of their unit. Then the joined weights, which
    the exact tests read as doubles, are exact."""
    if not weighted:
        return True
    if bits is None:
        return False
    classes = np.concatenate([totals[:, _SUB_NEG] + totals[:, _BG_NEG],
                              totals[:, _SUB_POS] + totals[:, _BG_POS]])
    return float(np.max(classes, initial=0.0)) * 2.0 ** bits <= 2.0 ** 52


def _offsets(weights) -> tuple:
    """``(below, above)``: for each chunk (the first axis, in score order) the weights of
    the chunks below it and above it, each a sum of those chunks' weights alone, so that
    each is known within its own rounding (a total less the rest carried a heavy chunk's
    rounding into the light ones' offsets; found by review: a negative of weight 1e18 in
    the top chunk, a subgroup AUC's test at z 0.20 against an exact 0.51). Floats, or exact
    numbers in an object array."""
    below = np.zeros_like(weights)
    np.cumsum(weights[:-1], axis=0, out=below[1:])
    above = np.zeros_like(weights)
    np.cumsum(weights[:0:-1], axis=0, out=above[-2::-1])
    return below, above


def _joined(parts: list, weights, offsets=None) -> tuple:
    """``(delong (k, 15), cross (k, 8), overall (k, 3))`` of all rows from each chunk's own
    ``parts`` ``[(delong, cross, overall)]`` and weights (chunks, k, 4), in score order:
    floats, or object arrays of exact numbers (the same algebra, exact). ``offsets``:
    :func:`_offsets` of the weights, if made already."""
    k = weights.shape[1]
    below, above = _offsets(weights) if offsets is None else offsets
    delong = np.zeros((k, 15), dtype=weights.dtype)
    cross = np.zeros((k, SK.N_OVERALL_CROSS_COLUMNS), dtype=weights.dtype)
    overall = np.zeros((k, 3), dtype=weights.dtype)
    for c, (p_delong, x, p_overall) in enumerate(parts):
        w, b, a = weights[c], below[c], above[c]
        for j, (cx, cy) in enumerate(_METRIC_CELLS):
            u = p_delong[:, SK.DELONG_U + j]
            delong[:, SK.DELONG_U + j] += u + w[:, cx] * b[:, cy]
            delong[:, SK.DELONG_SQ_X + j] += (p_delong[:, SK.DELONG_SQ_X + j]
                                              + 2 * b[:, cy] * u + w[:, cx] * b[:, cy] ** 2)
            delong[:, SK.DELONG_SQ_Y + j] += (p_delong[:, SK.DELONG_SQ_Y + j]
                                              + 2 * a[:, cx] * u + w[:, cy] * a[:, cx] ** 2)
        n_g, p_g = w[:, _SUB_NEG], w[:, _SUB_POS]
        n_o, p_o = n_g + w[:, _BG_NEG], p_g + w[:, _BG_POS]
        gb, ob = b[:, _SUB_NEG], b[:, _SUB_NEG] + b[:, _BG_NEG]  # Dg-, D- below the chunk
        ga, oa = a[:, _SUB_POS], a[:, _SUB_POS] + a[:, _BG_POS]  # Dg+, D+ above it
        u_sub, u_bpsn, u_bnsp = (p_delong[:, SK.DELONG_U + j] for j in range(3))
        u_o = p_overall[:, OVERALL_U]
        cross[:, 0] += x[:, 0] + gb * x[:, 1] + ob * u_sub + p_g * gb * ob
        cross[:, 1] += x[:, 1] + p_g * ob
        cross[:, 2] += (x[:, 2] + (ob - gb) * x[:, 1] + ob * (x[:, 1] - u_sub)
                        + p_g * (ob - gb) * ob)
        cross[:, 3] += x[:, 3] + ga * u_o + oa * (u_sub + u_bnsp) + n_o * ga * oa
        cross[:, 4] += x[:, 4] + ga * x[:, 5] + oa * u_sub + n_g * ga * oa
        cross[:, 5] += x[:, 5] + n_g * oa
        cross[:, 6] += (x[:, 6] + (oa - ga) * x[:, 5] + oa * (x[:, 5] - u_sub)
                        + n_g * (oa - ga) * oa)
        cross[:, 7] += x[:, 7] + gb * u_o + ob * (u_sub + u_bpsn) + p_o * gb * ob
        overall[:, OVERALL_U] += u_o + p_o * ob
        overall[:, OVERALL_SQ_POS] += (p_overall[:, OVERALL_SQ_POS] + 2 * ob * u_o
                                       + p_o * ob ** 2)
        overall[:, OVERALL_SQ_NEG] += (p_overall[:, OVERALL_SQ_NEG] + 2 * oa * u_o
                                       + n_o * oa ** 2)
    return delong, cross, overall


def bits_of(sums: PlacementSums) -> int | None:
    """``sums.weight_bits``, worked out if it is a function."""
    bits = sums.weight_bits
    return bits() if callable(bits) else bits


def ratios_of(sums: PlacementSums):
    """``sums.read_ratios`` (k, 2), worked out if it is a function; None: not known."""
    ratios = sums.read_ratios
    return ratios() if callable(ratios) else ratios


def _most_bits(parts: list) -> int | None:
    """The most ``weight_bits`` of some :class:`PlacementSums` (None if one is not known)."""
    bits = [bits_of(p) for p in parts]
    return None if any(b is None for b in bits) else max(bits, default=0)
