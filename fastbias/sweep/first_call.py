"""A first call that does not wait for the compiler: the same counts in numpy.

In a fresh environment (an empty Numba cache: a new container, a CI job, a
Colab session) the kernels take 10-20 s to compile before the first answer.
While they compile in a background process (:func:`compile_in_background`), a
call gets its counts from :func:`counts_in_numpy`. Unweighted: the class
sorts, the ranks of every membership in each class by ``searchsorted``, and
each subgroup's sums in int64, so the counts are exactly those of the kernels
(a test checks it, bit for bit). Weighted: the same sums as the weighted
kernel in double-double (:mod:`fastbias.sweep.double_double`), certified to the
same tolerance (2**-50 relative; the last bits may differ from the kernel's).
Its intervals are computed in numpy too (:mod:`fastbias.intervals.first_call`).
It is slower than the kernels once compiled (a few hundred ms at 1.8M x 24)
but far faster than compiling them; later calls use the kernels as soon as
they are ready.
"""
from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
import threading

import numpy as np

from .. import _native
from ..prepare.memberships import Memberships, group_mask
from ..validate.values import power_of_two_scale
from . import _kernels as K
from .counts import SweepCounts, finish_weighted
from .double_double import dd_add, dd_mul, dd_prefix_sums, dd_sum_error_bound, dd_total

# above this many rows the numpy counts take longer than the kernels take to compile
FIRST_CALL_MAX_ROWS = 20_000_000


def tier_enabled() -> bool:
    """Whether a cold call may compute in numpy (the default). ``FASTBIAS_FIRST_CALL=0`` in the
    environment turns the tier off: every call then compiles what it needs first and gives
    the kernels' bits (weighted sums and DeLong's float sums can differ from the tier's in
    the last bits); the test suite runs so, but for the tests of the tier itself. So does
    :func:`compiling_in_place`, for the calls made within it."""
    if _in_place[0]:
        return False
    return os.environ.get("FASTBIAS_FIRST_CALL", "1").strip() != "0"


#: how many :func:`compiling_in_place` blocks are open (in any thread)
_in_place = [0]
_in_place_lock = threading.Lock()


@contextlib.contextmanager
def compiling_in_place():
    """Within this block, calls compile the kernels they need before computing, as with
    ``FASTBIAS_FIRST_CALL=0``: only the versions their own data needs (about 5 s for an
    unweighted call), where the background families compile every version a later call could
    need (about 15 s for ``counting``, measured on a 2-core VM). For a caller that times the
    kernels next, such as ``fastbias demo``. It holds for the whole process while open (the
    pool's threads make the call's parts), so calls of other threads compile in place too.

    Examples
    --------
    >>> from fastbias.sweep.first_call import compiling_in_place, tier_enabled
    >>> with compiling_in_place():
    ...     tier_enabled()
    False
    """
    with _in_place_lock:
        _in_place[0] += 1
    try:
        yield
    finally:
        with _in_place_lock:
            _in_place[0] -= 1


def counts_in_numpy(scores: np.ndarray, memberships: Memberships,
                    sample_weight: np.ndarray | None = None, certify: bool = True,
                    weight_scale: float | None = None) -> SweepCounts:
    """Every subgroup's U counts (:class:`SweepCounts`) with numpy alone.

    Unweighted they are exact int64 (below); with ``sample_weight`` see
    :func:`weighted_counts_in_numpy`.

    For each membership, the numbers of negatives and of positives below it
    and tied with it come from ``searchsorted`` in the sorted classes; the
    subgroup U from the same look-ups within the subgroup; every sum is an
    int64 over one subgroup's memberships. Same columns and meaning as the
    counting kernel (see ``_kernels``).
    """
    if sample_weight is not None:
        return weighted_counts_in_numpy(scores, memberships, sample_weight, certify,
                                        weight_scale)
    m = memberships
    labels = m.labels
    neg, pos = np.sort(scores[~labels]), np.sort(scores[labels])
    n_neg, n_pos = neg.shape[0], pos.shape[0]
    per_row = np.diff(m.row_ptr)
    member_scores = np.repeat(scores[m.identity_rows], per_row)
    member_positive = np.repeat(m.identity_labels, per_row)
    by_group = np.argsort(m.row_groups, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(m.row_groups, minlength=m.n_groups))])
    counts = np.zeros((m.n_groups, K.N_COUNT_COLUMNS), dtype=np.int64)
    for g in range(m.n_groups):
        members = by_group[bounds[g]:bounds[g + 1]]
        s, positive = member_scores[members], member_positive[members]
        s_neg, s_pos = s[~positive], s[positive]
        sub_neg = np.sort(s_neg)
        c = counts[g]
        c[K.CELL_SUBGROUP_NEG], c[K.CELL_SUBGROUP_POS] = s_neg.shape[0], s_pos.shape[0]
        c[K.TWICE_SUBGROUP_U] = _twice_below(sub_neg, s_pos)
        c[K.TWICE_BPSN_U] = 2 * n_pos * s_neg.shape[0] - _twice_below(pos, s_neg) \
            - c[K.TWICE_SUBGROUP_U]
        c[K.TWICE_BNSP_U] = _twice_below(neg, s_pos) - c[K.TWICE_SUBGROUP_U]
        c[K.TWICE_NEG_BG_ABOVE_U] = (2 * n_neg * s_neg.shape[0] - _twice_below(neg, s_neg)
                                     - s_neg.shape[0] ** 2)
        c[K.TWICE_POS_BG_ABOVE_U] = (2 * n_pos * s_pos.shape[0] - _twice_below(pos, s_pos)
                                     - s_pos.shape[0] ** 2)
    twice_u = _twice_below(neg, pos)
    return SweepCounts(m.names, counts, n_neg, n_pos, twice_u,
                       counts[:, [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS]], (n_neg, n_pos),
                       False)


def weighted_counts_in_numpy(scores: np.ndarray, memberships: Memberships,
                             sample_weight: np.ndarray, certify: bool = True,
                             weight_scale: float | None = None) -> SweepCounts:
    """Weighted counts (:class:`SweepCounts`) with numpy alone, as the weighted sweep makes them.

    The same sums as the weighted counting kernel, each in double-double
    (:mod:`fastbias.sweep.double_double`): the classes' prefix weights along
    their sorted scores, each identity row's weight times twice the weight of
    each class below it (ties 1/2), added up per subgroup, the subgroup U from
    its own sorted negatives. The sums' relative bound
    (:func:`~fastbias.sweep.double_double.dd_sum_error_bound`) is looser than
    the kernel's, so the certification (``certify``) recomputes from the
    explicit cells, also in numpy, every subgroup it cannot vouch for; the
    metrics then agree with the kernel's to the same tolerance (2**-50 relative).
    The sorts and look-ups depend on the scores alone (:class:`WeightedCountsPlan`:
    made once, a bootstrap's replicates only weigh again).
    """
    return WeightedCountsPlan(scores, memberships).counts(sample_weight, certify,
                                                          weight_scale)


def subgroup_sums(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``values[bounds[g]:bounds[g + 1]].sum()`` for each g, exact in int64 (``bounds``
    non-decreasing, from 0 to ``len(values)``); an empty range sums to 0 (``reduceat``
    alone would give the value at its start)."""
    starts, stops = bounds[:-1], bounds[1:]
    sums = np.zeros(starts.shape[0], dtype=np.int64)
    filled = starts < stops
    if filled.any():
        sums[filled] = np.add.reduceat(values, starts[filled], dtype=np.int64)
    return sums


class CountsPlan:
    """What the unweighted counts read of the scores, made once, for counting the rows
    many times over: each class's rows in score order (:func:`class_orders`), where each
    identity row falls in each class and each positive among the negatives, each
    subgroup's negatives in score order and where its positives fall among them.
    :meth:`counts` then counts each row as often as ``draws`` says (a bootstrap replicate's
    Poisson(1) draws), sorting nothing: exact int64 sums, the kernels' counts. With no
    draws (each row once) they are the point estimate's, those of :func:`counts_in_numpy`,
    so a first call whose bootstrap replicates follow in numpy sorts once for both
    (:func:`counts_and_plan`).

    Examples
    --------
    >>> import numpy as np
    >>> from fastbias.prepare.memberships import prepare_subgroups
    >>> from fastbias.sweep.first_call import CountsPlan
    >>> y = np.array([0, 1, 0, 1]); s = np.array([0.1, 0.9, 0.4, 0.3])
    >>> m = prepare_subgroups(y, np.array([[True], [True], [True], [False]]), compiled=False)
    >>> plan = CountsPlan(s, m)
    >>> int(plan.counts().twice_overall_u)  # 2 U: the positive 0.9 above both, 0.3 above 0.1
    6
    >>> int(plan.counts(np.array([2, 1, 1, 1], dtype=np.uint8)).twice_overall_u)
    10
    """

    def __init__(self, scores: np.ndarray, memberships: Memberships):
        m = self.m = memberships
        self.classes = class_orders(scores, m.labels)  # (int32 where they fit)
        index = np.int32 if m.n_rows < 2**31 else np.int64  # ranks, rows, memberships

        def ranks(sorted_values, queries):
            return tuple(np.searchsorted(sorted_values, queries, side).astype(index)
                         for side in ("left", "right"))

        neg_sorted = scores[self.classes[0]]
        id_scores = scores[m.identity_rows]
        self.neg_ranks = ranks(neg_sorted, id_scores)
        pos_sorted = scores[self.classes[1]]
        self.overall_ranks = ranks(neg_sorted, pos_sorted)
        del neg_sorted
        self.pos_ranks = ranks(pos_sorted, id_scores)
        by_group = np.argsort(m.row_groups, kind="stable")
        # each membership's identity row, subgroup by subgroup
        self.owner = m.owners[by_group].astype(index)
        self.bounds = np.searchsorted(m.row_groups[by_group], np.arange(m.n_groups + 1))
        del by_group
        self.subgroups = []  # per subgroup: its negatives by score, its positives' ranks there
        for g in range(m.n_groups):
            mine = self.owner[self.bounds[g]:self.bounds[g + 1]]
            positive = m.identity_labels[mine]
            negatives = mine[~positive][np.argsort(id_scores[mine[~positive]], kind="stable")]
            positives = mine[positive]
            self.subgroups.append((negatives, positives,
                                   *ranks(id_scores[negatives], id_scores[positives])))

    def counts(self, draws: np.ndarray | None = None) -> SweepCounts:
        """The counts (:class:`SweepCounts`, int64) with each row counted ``draws[row]``
        times (uint8, one per row; None: once each). Exact int64 sums throughout; the
        per-row arrays are made one column at a time, and each subgroup's sums taken
        without a running sum of all memberships (the tier's peak memory)."""
        m = self.m
        if draws is None:
            draws = np.ones(m.n_rows, dtype=np.uint8)
        if draws.dtype != np.uint8 or draws.shape != (m.n_rows,):
            raise ValueError(f"draws must be uint8 of shape ({m.n_rows},), got {draws.dtype} "
                             f"of shape {draws.shape}")
        # each class's prefix sums of the draws (int32 where no class can draw 2**31: a
        # replicate's draws are small, a class's sum at most its rows times the largest)
        width = np.int32 if m.n_rows * max(int(draws.max(initial=0)), 1) < 2**31 else np.int64
        neg_cum, pos_cum = cumulative = [np.empty(rows.shape[0] + 1, dtype=width)
                                         for rows in self.classes]
        for rows, running in zip(self.classes, cumulative):
            running[0] = 0
            np.cumsum(draws[rows], dtype=width, out=running[1:])
        total_neg, total_pos = int(neg_cum[-1]), int(pos_cum[-1])

        def twice_below(running, ranks):  # 2 x the draws below a row + those tied with it
            out = running[ranks[0]].astype(np.int64)
            out += running[ranks[1]]
            return out

        c = draws[m.identity_rows].astype(np.int64)
        positive = m.identity_labels
        c_neg = np.where(positive, 0, c)  # an identity row's draws in its own class's cell
        c_pos = c - c_neg
        del c
        counts = np.zeros((m.n_groups, K.N_COUNT_COLUMNS), dtype=np.int64)
        counts[:, K.CELL_SUBGROUP_NEG] = self._per_subgroup(c_neg)
        counts[:, K.CELL_SUBGROUP_POS] = self._per_subgroup(c_pos)
        nb = twice_below(neg_cum, self.neg_ranks)
        counts[:, K.TWICE_BNSP_U] = self._per_subgroup(c_pos * nb)
        counts[:, K.TWICE_NEG_BG_ABOVE_U] = self._per_subgroup(c_neg * (2 * total_neg - nb))
        del nb
        pa = 2 * total_pos - twice_below(pos_cum, self.pos_ranks)
        counts[:, K.TWICE_BPSN_U] = self._per_subgroup(c_neg * pa)
        counts[:, K.TWICE_POS_BG_ABOVE_U] = self._per_subgroup(c_pos * pa)
        del pa
        for g, (negatives, positives, lt, le) in enumerate(self.subgroups):
            below = np.concatenate([[0], np.cumsum(c_neg[negatives])])
            counts[g, K.TWICE_SUBGROUP_U] = int(np.sum(c_pos[positives] * (below[lt] + below[le])))
        counts[:, K.TWICE_BPSN_U] -= counts[:, K.TWICE_SUBGROUP_U]
        counts[:, K.TWICE_BNSP_U] -= counts[:, K.TWICE_SUBGROUP_U]
        counts[:, K.TWICE_NEG_BG_ABOVE_U] -= counts[:, K.CELL_SUBGROUP_NEG] ** 2
        counts[:, K.TWICE_POS_BG_ABOVE_U] -= counts[:, K.CELL_SUBGROUP_POS] ** 2
        twice_u = int(np.sum(draws[self.classes[1]].astype(np.int64)
                             * twice_below(neg_cum, self.overall_ranks)))
        return SweepCounts(m.names, counts, total_neg, total_pos, twice_u,
                           counts[:, [K.CELL_SUBGROUP_NEG, K.CELL_SUBGROUP_POS]],
                           (total_neg, total_pos), False)

    def _per_subgroup(self, per_row: np.ndarray) -> np.ndarray:
        """Each subgroup's exact int64 sum of ``per_row`` (one value per identity row) over its
        memberships."""
        return subgroup_sums(per_row[self.owner], self.bounds)


def counts_and_plan(scores: np.ndarray, memberships: Memberships,
                    sample_weight: np.ndarray | None = None, keep: bool = True) -> tuple:
    """``(counts, plan)``: the counts of :func:`counts_in_numpy` (the same, bit for bit)
    and, with ``keep`` (a bootstrap's replicates follow in numpy), the plan they were read
    from (:class:`CountsPlan`, or weighted a :class:`WeightedCountsPlan`; else None): the
    replicates weigh the rows again by it, so the call sorts once (a second set of sorts
    took 0.5-0.9 s at 1.8M x 24 on 2 cores). Without ``keep``, :func:`counts_in_numpy`'s
    own sorts (of scores, not of rows: quicker)."""
    if not keep:
        return counts_in_numpy(scores, memberships, sample_weight), None
    if sample_weight is None:
        plan = CountsPlan(scores, memberships)
        return plan.counts(), plan
    plan = WeightedCountsPlan(scores, memberships)
    return plan.counts(sample_weight), plan


class WeightedCountsPlan:
    """What :func:`weighted_counts_in_numpy` reads of the scores, made once: each class's
    rows in score order, where each identity row (and each positive, among the negatives)
    falls in each class, each subgroup's cells, its negatives in score order and where its
    positives fall among them. :meth:`counts` then weighs rows by any weights: a numpy
    bootstrap replicate sorts nothing (0.8 s a replicate at 1.8M x 24 was mostly its sorts
    and look-ups)."""

    def __init__(self, scores: np.ndarray, memberships: Memberships):
        m = self.m = memberships
        self.scores = scores
        self.neg_rows, self.pos_rows = class_orders(scores, m.labels)
        id_scores = scores[m.identity_rows]
        self.positive = positive = m.identity_labels
        neg_sorted = scores[self.neg_rows]
        # (the negatives' ranks of the identity rows and of the positives, the positives' of
        # the identity rows)
        self.in_neg = _ranks(neg_sorted, id_scores, scores[self.pos_rows])
        del neg_sorted
        self.in_pos = _ranks(scores[self.pos_rows], id_scores)
        self._rows_of = {"identity": m.identity_rows, "neg": self.neg_rows,
                         "pos": self.pos_rows}
        by_group = m.owners[np.argsort(m.row_groups, kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(m.row_groups,
                                                            minlength=m.n_groups))])
        # per subgroup: its negatives and positives (in membership order: the order their
        # sums add them in), its negatives in score order, its positives' ranks among them
        self.cells = []
        for g in range(m.n_groups):
            rows = by_group[bounds[g]:bounds[g + 1]]
            sub_neg, sub_pos = rows[~positive[rows]], rows[positive[rows]]
            by_score = sub_neg[np.argsort(id_scores[sub_neg], kind="stable")]
            self.cells.append((sub_neg, sub_pos, by_score,
                               _ranks(id_scores[by_score], id_scores[sub_pos])))

    def counts(self, sample_weight: np.ndarray, certify: bool = True,
               weight_scale: float | None = None) -> SweepCounts:
        """The weighted counts of the rows weighed by ``sample_weight`` (as
        :func:`weighted_counts_in_numpy`)."""
        weights = np.asarray(sample_weight, dtype=np.float64)
        scale = power_of_two_scale(weights) if weight_scale is None else weight_scale
        return self._counts(lambda which: weights[self._rows_of[which]], scale, certify)

    def weights_in_order(self, sample_weight: np.ndarray) -> dict:
        """``sample_weight`` at the identity rows and along each class in score order, for
        :meth:`replicate_counts`: gathered once for every replicate (a weight of a row in
        score order is a read far from the last; a replicate's draw, a byte, is near: five
        times quicker on a 2-core VM). A copy: the replicates weigh these weights, whatever
        becomes of ``sample_weight`` afterwards."""
        weights = np.asarray(sample_weight, dtype=np.float64)
        return {which: weights[rows] for which, rows in self._rows_of.items()}

    def replicate_counts(self, in_order: dict, draws: np.ndarray,
                         certify: bool = True) -> SweepCounts:
        """The weighted counts of the rows weighed by ``draws * sample_weight`` (``draws``:
        one uint8 a row, a bootstrap replicate's; ``in_order``: :meth:`weights_in_order` of
        ``sample_weight``): the same products, so the same counts as
        ``counts(draws * sample_weight)``, bit for bit."""
        if draws.dtype != np.uint8 or draws.shape != (self.m.n_rows,):
            raise ValueError(f"draws must be uint8 of shape ({self.m.n_rows},), got "
                             f"{draws.dtype} of shape {draws.shape}")
        products = {which: draws[self._rows_of[which]] * in_order[which]
                    for which in ("neg", "pos")}  # (the classes hold every row once)
        scale = power_of_two_scale(np.array([p.max() for p in products.values() if p.size]))

        def weights_of(which):  # (each class's products made above are read first, once)
            made = products.pop(which, None)
            return made if made is not None else draws[self._rows_of[which]] * in_order[which]
        return self._counts(weights_of, scale, certify)

    def _counts(self, weights_of, scale: float, certify: bool) -> SweepCounts:
        """The weighted counts, each row's weight read by ``weights_of(which)`` (a new array
        of the weights at the identity rows, ``"identity"``, or along a class in score
        order, ``"neg"`` or ``"pos"``), all divided by ``scale`` (a power of two)."""
        m, scores, positive = self.m, self.scores, self.positive
        neg_rows, pos_rows = self.neg_rows, self.pos_rows

        def scaled_weights(which):
            w = weights_of(which)
            w /= scale  # (exact: a power of two; in place, no second array of the class)
            return w

        id_w = scaled_weights("identity")
        # twice the weight of each class below each identity row, ties 1/2, and above it (the
        # negatives also below each positive, for the overall U); the negatives' weights (the
        # larger class) are let go as soon as they are read
        neg_w = scaled_weights("neg")
        n_weighted_neg = int(np.count_nonzero(neg_w > 0))
        (nb, below_pos), tn = _twice_weight_below_sets(neg_w, self.in_neg)
        del neg_w
        pos_w = scaled_weights("pos")
        n_weighted_pos = int(np.count_nonzero(pos_w > 0))
        (pb,), tp = _twice_weight_below_sets(pos_w, self.in_pos)
        pa = dd_add(2.0 * tp[0], 2.0 * tp[1], -pb[0], -pb[1])
        na = dd_add(2.0 * tn[0], 2.0 * tn[1], -nb[0], -nb[1])
        first = [np.where(positive, a, b)
                 for a, b in zip(dd_mul(*nb, id_w, 0.0), dd_mul(*pa, id_w, 0.0))]
        second = [np.where(positive, a, b)
                  for a, b in zip(dd_mul(*pa, id_w, 0.0), dd_mul(*na, id_w, 0.0))]
        k = m.n_groups
        hi, lo = np.zeros((k, K.N_COUNT_COLUMNS)), np.zeros((k, K.N_COUNT_COLUMNS))
        weighted_rows = np.zeros((k, 2), dtype=np.int64)
        for g, (sub_neg, sub_pos, neg_by_score, ranks) in enumerate(self.cells):
            for c, in_cell in enumerate((sub_neg, sub_pos)):
                w = id_w[in_cell]
                hi[g, c], lo[g, c] = dd_total(w)
                weighted_rows[g, c] = np.count_nonzero(w > 0)
                col1, col2 = ((K.TWICE_BPSN_U, K.TWICE_NEG_BG_ABOVE_U) if c == 0 else
                              (K.TWICE_BNSP_U, K.TWICE_POS_BG_ABOVE_U))
                hi[g, col1], lo[g, col1] = dd_total(first[0][in_cell], first[1][in_cell])
                hi[g, col2], lo[g, col2] = dd_total(second[0][in_cell], second[1][in_cell])
            (below,), _ = _twice_weight_below_sets(id_w[neg_by_score], ranks)
            hi[g, K.TWICE_SUBGROUP_U], lo[g, K.TWICE_SUBGROUP_U] = dd_total(
                *dd_mul(*below, id_w[sub_pos], 0.0))
        # the background columns from the class sums: take the subgroup's own pairs out
        bg_hi, bg_lo = np.zeros((k, 2)), np.zeros((k, 2))
        for g in range(k):
            for col in (K.TWICE_BPSN_U, K.TWICE_BNSP_U):
                hi[g, col], lo[g, col] = dd_add(hi[g, col], lo[g, col],
                                                -hi[g, K.TWICE_SUBGROUP_U],
                                                -lo[g, K.TWICE_SUBGROUP_U])
            for c, col in ((0, K.TWICE_NEG_BG_ABOVE_U), (1, K.TWICE_POS_BG_ABOVE_U)):
                q = dd_mul(hi[g, c], lo[g, c], hi[g, c], lo[g, c])
                hi[g, col], lo[g, col] = dd_add(hi[g, col], lo[g, col], -q[0], -q[1])
            for c, (total, n_weighted) in enumerate(((tn, n_weighted_neg),
                                                     (tp, n_weighted_pos))):
                if n_weighted > weighted_rows[g, c]:
                    bg_hi[g, c], bg_lo[g, c] = dd_add(total[0], total[1], -hi[g, c],
                                                      -lo[g, c])
        bg_rows = np.array([n_weighted_neg, n_weighted_pos]) - weighted_rows
        overall = dd_total(*dd_mul(*below_pos, pos_w, 0.0))

        def explicit(g: int) -> tuple:
            member = group_mask(m, g)
            cells = []
            for which, rows in (("neg", neg_rows), ("pos", pos_rows)):
                inside = member[rows]
                w = scaled_weights(which)
                cells.append((scores[rows[inside]], w[inside]))
                cells.append((scores[rows[~inside]], w[~inside]))
            (sn, sn_w), (bn, bn_w), (sp, sp_w), (bp, bp_w) = cells
            c_hi, c_lo = np.zeros(K.N_COUNT_COLUMNS), np.zeros(K.N_COUNT_COLUMNS)
            c_hi[K.CELL_SUBGROUP_NEG], c_lo[K.CELL_SUBGROUP_NEG] = dd_total(sn_w)
            c_hi[K.CELL_SUBGROUP_POS], c_lo[K.CELL_SUBGROUP_POS] = dd_total(sp_w)
            for col, x, x_w, y, y_w in ((K.TWICE_SUBGROUP_U, sp, sp_w, sn, sn_w),
                                        (K.TWICE_BPSN_U, bp, bp_w, sn, sn_w),
                                        (K.TWICE_BNSP_U, sp, sp_w, bn, bn_w),
                                        (K.TWICE_NEG_BG_ABOVE_U, bn, bn_w, sn, sn_w),
                                        (K.TWICE_POS_BG_ABOVE_U, bp, bp_w, sp, sp_w)):
                c_hi[col], c_lo[col] = _twice_u(x, x_w, y, y_w)
            b_hi, b_lo = zip(dd_total(bn_w), dd_total(bp_w))
            return c_hi, c_lo, np.array(b_hi), np.array(b_lo)

        return finish_weighted(m, (hi, lo, bg_hi, bg_lo, bg_rows), tn, tp, overall, scale,
                               explicit if certify else None,
                               eps=dd_sum_error_bound(m.n_rows + m.row_groups.shape[0]))


def class_orders(scores: np.ndarray, labels: np.ndarray) -> tuple:
    """The rows of each class (negatives, positives) in score order, by numpy's stable sort
    (int32 where they fit: the tier's peak memory is its sort of the larger class)."""
    width = np.int32 if scores.shape[0] < 2**31 else np.int64
    orders = []
    for in_class in (~labels, labels):
        rows = np.flatnonzero(in_class).astype(width)
        orders.append(rows[np.argsort(scores[rows], kind="stable")])
    return tuple(orders)


#: rows of a class whose compensated prefix sums are made at once (bounds the tier's memory)
PREFIX_CHUNK_ROWS = 1 << 16


def _ranks(sorted_values, *query_sets) -> tuple:
    """Where each set of queries falls in ``sorted_values``, as
    :func:`_twice_weight_below_sets` reads it: per set, per side (below; below or tied),
    ``(ranks in order, the order that puts them so (None: they were), )``."""
    found = []
    for queries in query_sets:
        for side in ("left", "right"):
            ranks = np.searchsorted(sorted_values, queries, side=side)
            order = None  # queries in score order (a sorted class): their ranks are in order
            if ranks.shape[0] > 1 and not (ranks[1:] >= ranks[:-1]).all():
                order = np.argsort(ranks, kind="stable")
                ranks = ranks[order]
            found.append((ranks, order))
    return tuple(found)


def _twice_weight_below_sets(weights, ranks) -> tuple:
    """Twice the weight of sorted values (their ``weights``, in their order) below each
    query, ties 1/2, at the queries' ``ranks`` among them (:func:`_ranks`).

    Returns ``([(hi, lo) per set of queries], (total hi, total lo))``. The
    compensated prefix sums (:func:`dd_prefix_sums`) are made
    :data:`PREFIX_CHUNK_ROWS` rows at a time, each chunk's carried on from the
    last in double-double, and read only at the queries' ranks, so that no
    array of the class's length is made beside the weights. Chunking adds one
    double-double addition per prefix: the error stays within
    :func:`dd_sum_error_bound` of the whole class.
    """
    n = weights.shape[0]
    found = [(r, order, np.zeros(r.shape[0]), np.zeros(r.shape[0])) for r, order in ranks]
    carry_hi = carry_lo = 0.0
    for start in range(0, n, PREFIX_CHUNK_ROWS):
        stop = min(n, start + PREFIX_CHUNK_ROWS)
        hi, lo = dd_prefix_sums(weights[start:stop])
        hi, lo = dd_add(carry_hi, carry_lo, hi, lo)
        for r, order, out_hi, out_lo in found:  # the ranks in (start, stop]; 0 stays 0
            a, b = np.searchsorted(r, [start, stop], side="right")
            queries = slice(a, b) if order is None else order[a:b]
            out_hi[queries] = hi[r[a:b] - start]
            out_lo[queries] = lo[r[a:b] - start]
        carry_hi, carry_lo = float(hi[-1]), float(lo[-1])
    below = []
    while found:  # each set's two sides let go once added (the tier's peak memory)
        (_, _, left_hi, left_lo), (_, _, right_hi, right_lo) = found.pop(0), found.pop(0)
        below.append(dd_add(left_hi, left_lo, right_hi, right_lo))
        del left_hi, left_lo, right_hi, right_lo
    return below, (carry_hi, carry_lo)


def _twice_u(x, x_weights, y_sorted, y_weights) -> tuple:
    """Twice the weighted U of cell X over cell Y (Y sorted), from Y's own prefix sums: every
    term is non-negative, so the pair (hi, lo) is accurate to the bound of its sums."""
    (below,), _ = _twice_weight_below_sets(y_weights, _ranks(y_sorted, x))
    return dd_total(*dd_mul(*below, x_weights, 0.0))


def _twice_below(sorted_values: np.ndarray, queries: np.ndarray) -> int:
    """Sum over the queries of 2 * #values below + #values tied (exact int64)."""
    below = np.searchsorted(sorted_values, queries, side="left").astype(np.int64)
    not_above = np.searchsorted(sorted_values, queries, side="right").astype(np.int64)
    return int(below.sum() + not_above.sum())


_lock = threading.Lock()
_requested: list = []  # the kernel families asked for, in order
_children: dict = {}  # family -> its process, once started
_runner: list = []  # the thread that starts the children one after another (at most one)


def compile_in_background(name: str = "counting") -> None:
    """Compile and cache a family of kernels in a separate Python process, once.

    ``name`` is a family of :mod:`fastbias._warm_up` (``"counting"``,
    ``"weighted"``, ``"delong"``, ``"bootstrap"``). A child (``python -m
    fastbias._warm_up <name>``) compiles the kernels such a call needs, for
    float32 and float64 scores and the usual identity-column types, and writes
    them to the same private cache; this process then loads them on its next
    call. Families asked for while one compiles wait their turn (one child at
    a time, so the compiler takes one core beside the caller's numpy; children of
    several processes take turns too, by a lock in the cache directory). A
    separate process rather than a thread: compiling changes interpreter-wide
    state (numba's type inference enters ``warnings.catch_warnings``, which would
    undo the caller's own warning filters meanwhile). This process does not wait
    for them at exit: a script that ends right after its first call ends then,
    and the families still waiting are handed to one last child, which finishes
    filling the cache after it (:func:`wait_until_compiled` waits instead).
    """
    if getattr(sys, "frozen", False) or not sys.executable:
        return  # a frozen application's executable is not Python: the next call compiles
    with _lock:
        if name in _requested:
            return
        if not _requested:
            atexit.register(_hand_over)
        _requested.append(name)
        if not _runner:
            thread = threading.Thread(target=_start_children, name="fastbias-compile",
                                      daemon=True)
            _runner.append(thread)
            thread.start()


def _start_children() -> None:
    """Start each family's child in turn and wait for it (this thread runs no numba)."""
    while True:
        with _lock:
            pending = [name for name in _requested if name not in _children
                       and name not in _starting]
            if not pending or _closing:
                _runner.clear()
                return
            name = pending[0]
            _starting.append(name)
        child = _start_child([name])  # (not under the lock: a fork meanwhile must not inherit it)
        with _lock:
            _children[name] = child
            _starting.remove(name)
        if child is not None:
            child.wait()


_starting: list = []  # the family whose child is being started
_closing: list = []  # non-empty once this process exits: no child starts any more


def _forget_in_fork() -> None:
    """In a forked child process: no compilation of the parent's is this process's own (its
    thread does not exist here); a call here starts its own."""
    global _lock
    _lock = threading.Lock()
    for state in (_requested, _runner, _starting, _closing):
        state.clear()
    _children.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_fork)


#: the fastbias directory this process runs: the child must import the same one
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what the child runs: this process's import path, then ``python -m fastbias._warm_up``
_CHILD_CODE = ("import json, os, runpy, sys; "
               "sys.path[:] = json.loads(os.environ['FASTBIAS_SYS_PATH']); "
               "runpy.run_module('fastbias._warm_up', run_name='__main__', alter_sys=True)")


def _start_child(families: list):
    """``fastbias._warm_up <families>`` in a new Python process (None if none can start: the
    next call compiles as usual), on this process's own import path, so that it compiles
    this process's copy of fastbias: ``python -m`` would put the working directory first,
    and from a source checkout (``pip install .`` run in it, then ``fastbias demo``) the
    child would compile the checkout's copy into that copy's cache."""
    try:
        return subprocess.Popen([sys.executable, "-c", _CHILD_CODE, *families],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=_child_environment())
    except OSError:
        return None


def _hand_over() -> None:
    """At exit: the families that have not started yet go to one last child, left running."""
    with _lock:
        _closing.append(True)
        pending = [name for name in _requested if name not in _children
                   and name not in _starting]
        for name in pending:
            _children[name] = None
    if pending:
        _start_child(pending)


def _child_environment() -> dict:
    """This process's environment, with the private cache directory chosen here made
    explicit, this process's import path (``FASTBIAS_SYS_PATH``, every entry absolute) and
    its package (``FASTBIAS_PACKAGE_DIR``: a child that imported another copy anyway
    compiles nothing)."""
    import json

    import numba

    env = dict(os.environ)
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = os.path.abspath(numba.config.CACHE_DIR)
    env["FASTBIAS_SYS_PATH"] = json.dumps([os.path.abspath(entry) for entry in sys.path
                                           if isinstance(entry, str)])  # ("" is the cwd)
    env["FASTBIAS_PACKAGE_DIR"] = PACKAGE_DIR
    return env


def wait_until_compiled() -> None:
    """Wait for the background compilation (e.g. before timing the kernels)."""
    while True:
        with _lock:
            thread = _runner[0] if _runner else None
        if thread is None:
            return
        thread.join()


def ready_or_compiling(kernels, family: str, kind=None) -> bool:
    """Whether ``kernels`` can run now without waiting for a compiler: compiled or cached
    (and family ``family`` not still compiling them in the background), or to be compiled
    here on first use (the first-call tier is off). Else False, and ``family`` compiles in
    the background for later calls. ``kind``: the version a call needs (see
    :func:`fastbias._numba_cache._needs_compiling`)."""
    from .._numba_cache import _needs_compiling

    if not any(_needs_compiling(kernel) if kind is None else _needs_compiling(kernel, kind)
               for kernel in kernels):
        return not still_compiling(family)
    if not tier_enabled():
        return True
    compile_in_background(family)
    return False


def still_compiling(name: str = "counting") -> bool:
    """Whether the kernels of family ``name`` are being compiled in the background (by its
    own child, or one whose family includes it, see INCLUDES) and are not ready yet: a call
    that needs them now would compile them itself."""
    with _lock:
        for family in _requested:
            if name != family and name not in INCLUDES.get(family, ()):
                continue
            child = _children.get(family, "waiting")
            if child == "waiting" or (child is not None and child.poll() is None):
                return True
    return False


#: the families whose warm-up (:mod:`fastbias._warm_up`) also compiles others' kernels
INCLUDES = {"delong": ("counting", "exact"), "significance": ("exact",)}


def families_for(weighted: bool, ci: str | None = None, thresholds: bool = False,
                 significance: bool = False) -> list:
    """The kernel families a call with these settings needs, in the order they should compile:
    its intervals' first (a bootstrap switches to its kernels as soon as they are ready),
    then its counts' unless the first family includes them, then its threshold counts', then
    its significance tests'."""
    families = [ci] if ci in ("delong", "bootstrap") else []
    counting = "weighted" if weighted else "counting"
    if not any(counting in INCLUDES.get(family, ()) for family in families):
        families.append(counting)
    if thresholds:
        families.append("thresholds")
    if significance:
        families.append("significance")
    return families


_native.register_first_call(sys.modules[__name__])
