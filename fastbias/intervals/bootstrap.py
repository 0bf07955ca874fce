"""The Poisson bootstrap: each replicate weights every row by a Poisson(1) count; one sort."""
from __future__ import annotations

import logging
import numbers
import threading
import time
from dataclasses import dataclass

import numpy as np

from .._numba_cache import read_only
from .._threads import run_pieces, usable_cpus
from ..metrics.aggregates import final_metric_values, identity_mask
from ..metrics.definitions import METRIC_RANGE
from ..metrics.table import metrics_from_counts
from ..prepare.memberships import Memberships
from ..progress import bootstrap_bar
from ..sort.order import SortedScores
from ..sweep import _kernels as K
from ..sweep.counts import SweepCounts, explicit_recount, finish_weighted
from ..sweep.first_call import still_compiling
from ..sweep.parallel import map_in_threads
from ..validate.settings import resolve_n_jobs
from ..validate.values import as_sample_weight, power_of_two_scale
from . import _kernels as IK
from .first_call import NumpyReplicates

logger = logging.getLogger("fastbias")


def check_n_boot(n_boot) -> int:
    """``n_boot`` as an int, or a ValueError naming it (an integer >= 2)."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    return int(n_boot)


def bootstrap_seed(random_state) -> np.random.SeedSequence:
    """``random_state=`` of the bootstrap as the SeedSequence its replicates are children
    of, resolved once per call: an int (or None: fresh entropy) seeds one; a numpy Generator
    is drawn from once; a SeedSequence is copied, never spawned from (the caller's object
    is left as it was, so that the same one gives the same intervals again). An entry point
    that resamples several models or universes resolves it once and hands on the result,
    so that all of them are resampled with the same counts (a Generator drawn from per
    model had given identical models different intervals, which ones depending on the
    threads; found by review)."""
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(random_state.entropy, spawn_key=random_state.spawn_key,
                                      pool_size=random_state.pool_size)
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2 ** 63)))
    if random_state is None:
        return np.random.SeedSequence(None)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:  # an int of the right type: its value is wrong
            raise ValueError(f"random_state must be None, a non-negative int, a numpy "
                             f"Generator or a SeedSequence, got {random_state!r}")
        return np.random.SeedSequence(int(random_state))
    raise TypeError(f"random_state must be None, a non-negative int, a numpy Generator or a "
                    f"SeedSequence, got {random_state!r}")


def replicate_key(seed: np.random.SeedSequence) -> np.uint64:
    """The 64-bit key of one replicate's counts, from its own seed."""
    return np.uint64(seed.generate_state(1, dtype=np.uint64)[0])


def replicate_counts(seed: np.random.SeedSequence, n: int,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Poisson(1) counts (uint8) of ``n`` rows for one replicate, drawn from its own seed.

    Row i's count inverts the 32 high bits of the SplitMix64 output for
    counter i under the replicate's key (:func:`replicate_key`), so each
    Poisson probability is exact to 2**-32 and a row's count does not depend
    on the order rows are visited in: the bootstrap computes the counts of
    each class in score order, and they are these.
    """
    out = np.empty(n, dtype=np.uint8) if out is None else out
    return IK.poisson_counts(replicate_key(seed), out)


def replicate_weights(seed: np.random.SeedSequence, base_weight: np.ndarray) -> np.ndarray:
    """Poisson(1) counts times ``base_weight`` for one replicate (drawn from its own seed)."""
    base_weight = np.asarray(base_weight, dtype=np.float64)
    return replicate_counts(seed, base_weight.shape[0]) * base_weight


class _CountReplicate:
    """An unweighted replicate as an exact integer-weighted sweep of the call's sorts.

    Each class is visited in score order with its rows (the sorts carried
    them), the counts drawn on the fly (:func:`replicate_counts` values, one
    byte a row), and the memberships counted with their rows' counts, the
    classes walked in step with them: no sort, no gather of a count array, no
    prefix sums. One per thread (it holds the scratch arrays: about a byte a
    row and a word a membership).
    """

    def __init__(self, sorted_scores: SortedScores):
        self.keys, self.codes = sorted_scores.members
        self.member_rows = sorted_scores.member_rows
        self.neg_keys, self.pos_keys = sorted_scores.classes
        self.neg_rows, self.pos_rows = sorted_scores.class_rows
        self.n_groups = sorted_scores.memberships.n_groups

    def counts(self, key) -> tuple:
        """(counts (n_groups, 7), total neg, total pos, twice U) of the replicate ``key``."""
        counts, neg, pos, twice_u = self.counts_of([key])
        return counts[0], neg[0], pos[0], twice_u[0]

    def counts_of(self, keys) -> tuple:
        """``(counts (R, n_groups, 7), totals neg (R,), totals pos (R,), twice U (R,))`` of
        the replicates ``keys`` (best 8 or more: fewer are padded), in one walk."""
        n_reps = len(keys)
        lanes = np.zeros(max(n_reps, IK.MIN_REPLICATE_LANES), dtype=np.uint64)  # (padded)
        lanes[:n_reps] = keys
        walked, neg, pos, twice_u = IK.replicate_counts_by_walk(
            self.keys, self.codes, self.member_rows, self.neg_keys, self.neg_rows,
            self.pos_keys, self.pos_rows, lanes, self.n_groups)
        counts = np.empty((n_reps, self.n_groups, K.N_COUNT_COLUMNS), dtype=np.int64)
        counts[..., _COUNT_COLUMNS] = walked[:n_reps]
        for r in range(n_reps):
            K.finish_member_counts(counts[r])
        return counts, neg[:n_reps], pos[:n_reps], twice_u[:n_reps]


class _WeightReplicate:
    """Weighted replicates as one walk of the row order of the point estimate's weighted
    sweep (:meth:`SortedScores.order`: no new sort), several replicates at once
    (:func:`~fastbias.intervals._kernels.replicate_weights_by_walk`), each row's counts drawn
    as the walk reaches it: every sum a double-double pair, finished as the weighted sweep
    finishes its own. Shared by the threads (it holds no scratch)."""

    def __init__(self, sorted_scores: SortedScores, base: np.ndarray):
        m = self.memberships = sorted_scores.memberships
        self.order = order = sorted_scores.order()
        at = order.id_order  # the identity rows in score order, with their subgroups
        sizes = m.row_ptr[1:][at] - m.row_ptr[:-1][at]
        self.id_ptr = np.zeros(at.shape[0] + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.id_ptr[1:])
        first = np.repeat(m.row_ptr[:-1][at] - self.id_ptr[:-1], sizes)
        first += np.arange(first.shape[0], dtype=np.int64)
        self.id_groups = m.row_groups[first].astype(np.int32)
        self.id_rows = m.identity_rows[at]
        self.id_labels = m.identity_labels[at]
        # one compiled version of the walk (about 8 s to compile on a 2-core VM): the
        # caller's weights read-only or not, the scores float64 (float32 ones widen exactly:
        # the same order and ties)
        self.base = read_only(np.ascontiguousarray(base, dtype=np.float64))
        self.scale = power_of_two_scale(self.base)
        self.scores = tuple(np.asarray(a, dtype=np.float64)
                            for a in (order.id_sorted, order.neg_sorted, order.pos_sorted))

    def counts_of(self, keys) -> tuple:
        """As :meth:`_CountReplicate.counts_of`, the counts float64 (the weighted sweep's
        high parts, in units of the weights over ``self.scale``), and each subgroup's
        background weights (R, n_groups, 2) from the compensated sums (not the class total
        minus the subgroup in float, which loses a background tiny next to its class)."""
        n_reps = len(keys)
        lanes = np.zeros(max(n_reps, IK.MIN_REPLICATE_LANES), dtype=np.uint64)  # (padded)
        lanes[:n_reps] = keys
        o, m = self.order, self.memberships
        id_sorted, neg_sorted, pos_sorted = self.scores
        hi, lo, rows, totals, weighted, twice_u = IK.replicate_weights_by_walk(
            id_sorted, self.id_rows, self.id_labels, self.id_ptr, self.id_groups, neg_sorted,
            o.neg_rows, pos_sorted, o.pos_rows, self.base, self.scale, lanes, m.n_groups)
        counts = np.empty((n_reps, m.n_groups, K.N_COUNT_COLUMNS))
        backgrounds = np.empty((n_reps, m.n_groups, 2))
        neg, pos, u = np.empty(n_reps), np.empty(n_reps), np.empty(n_reps)
        for r in range(n_reps):
            (tn_hi, tn_lo), (tp_hi, tp_lo) = totals[r]
            background = K.finish_member_weights(hi[r], lo[r], rows[r], tn_hi, tn_lo, tp_hi,
                                                 tp_lo, weighted[r, 0], weighted[r, 1])
            sc = finish_weighted(m, (hi[r], lo[r], *background), totals[r, 0], totals[r, 1],
                                 twice_u[r], self.scale, self._recount(lanes[r]),
                                 extra_ops=REPLICATE_WALK_EXTRA_OPS)
            counts[r], neg[r], pos[r], u[r] = sc.counts, sc.total_neg, sc.total_pos, \
                sc.twice_overall_u
            backgrounds[r] = np.column_stack(sc.background_totals())
        return counts, neg, pos, u, backgrounds

    def _recount(self, key) -> callable:
        """:func:`~fastbias.sweep.counts.explicit_recount` of the replicate ``key``: a
        subgroup whose sums the walk cannot certify (weights of a range wider than
        double-double holds, as the point estimate's) is counted again from its cells."""
        def scaled_weights():
            counts = IK.poisson_counts(key, np.empty(self.memberships.n_rows, dtype=np.uint8))
            return counts * (self.base / self.scale)  # (as the walk: count x base over scale)

        return explicit_recount(self.order, self.memberships, scaled_weights)


#: the additions on a weighted replicate walk's sums beyond one a row and one a membership
#: (the class totals' terms added at the end: see ``finish_weighted``'s ``extra_ops``)
REPLICATE_WALK_EXTRA_OPS = 8


def _clip_to_ranges(values: dict) -> None:
    """Weighted replicates' AUCs into [0, 1] and AEGs into [-1/2, 1/2], in place (NaN
    stays). A weighted numerator that is exactly 0 or its pairs' total can come out a
    double-double residue beyond it (-3e-32 for an AUC of 0), within the certified bound;
    the power mean of the final metric (p = -5) made such a replicate's NaN, and the
    percentile interval dropped it."""
    for metric, v in values.items():
        np.clip(v, *METRIC_RANGE[metric], out=v)


#: where each column of the replicate walk's counts (IK.REPLICATE_COLUMNS) goes among the
#: sweep's
_COUNT_COLUMNS = [{"subgroup_negatives": K.CELL_SUBGROUP_NEG,
                   "subgroup_positives": K.CELL_SUBGROUP_POS,
                   "twice_subgroup_u": K.TWICE_SUBGROUP_U, "twice_bpsn_u": K.TWICE_BPSN_U,
                   "twice_bnsp_u": K.TWICE_BNSP_U,
                   "twice_negative_background_above_u": K.TWICE_NEG_BG_ABOVE_U,
                   "twice_positive_background_above_u": K.TWICE_POS_BG_ABOVE_U}[name]
                  for name in IK.REPLICATE_COLUMNS]


@dataclass(frozen=True)
class BootstrapReplicates:
    """Metric values of every Poisson-bootstrap replicate.

    Attributes
    ----------
    metrics : dict of str -> ndarray of shape (n_boot, n_groups)
    overall_auc : ndarray of shape (n_boot,)
    final_metric : ndarray of shape (n_boot,)
        NaN for a replicate where a per-subgroup AUC is undefined, or without
        subgroups.
    seeds : list of numpy.random.SeedSequence
        One per replicate; :func:`replicate_weights` regenerates its weights.
    """

    metrics: dict
    overall_auc: np.ndarray
    final_metric: np.ndarray
    seeds: list


def bootstrap_replicates(scores: np.ndarray, memberships: Memberships,
                         sample_weight: np.ndarray | None = None, *, n_boot: int = 1000,
                         random_state=None, progress=None,
                         n_jobs: int | None = None) -> BootstrapReplicates:
    """Run the Poisson bootstrap: one sort, then walks of several replicates at once.

    Replicate b weights row i by ``K_bi * sample_weight_i`` with
    ``K_bi ~ Poisson(1)`` (:func:`replicate_counts` of its own child of
    ``SeedSequence(random_state)``), so results do not depend on ``n_jobs``.
    Replicates run in threads (the kernels release the GIL). See
    :func:`replicates` for the same from the sorts a call already made. ``sample_weight``
    is checked as ``bias_metrics`` checks it (length, finite, non-negative, spread).
    """
    sample_weight = as_sample_weight(sample_weight, memberships.n_rows)
    return replicates(SortedScores(scores, memberships, with_rows=sample_weight is None),
                      sample_weight, n_boot=n_boot, random_state=random_state,
                      progress=progress, n_jobs=n_jobs)


#: a first call's bootstrap stops counting in numpy (and compiles its kernels, 3-8 s) when
#: the replicates left would take longer than this there
NUMPY_REPLICATES_SECONDS = 10.0


def numpy_replicates_seconds(n_boot: int, n_rows: int, weighted: bool) -> float:
    """About what ``n_boot`` replicates of ``n_rows`` rows take in numpy (30 ns a row a
    replicate, 100 ns weighted; measured on 2 cores), guessed before one is timed: past
    NUMPY_REPLICATES_SECONDS a first call's bootstrap compiles its kernels at once."""
    return n_boot * (1e-7 if weighted else 3e-8) * n_rows


def keeps_numpy_plan(ci, n_boot, n_rows: int, weighted: bool) -> bool:
    """Whether a point estimate counted in numpy keeps the plan its counts were read from
    (:func:`~fastbias.sweep.first_call.counts_and_plan`): a bootstrap follows whose
    replicates start in numpy, and read the same sorts. (``n_boot`` is checked here: a bad
    one is refused before the counts.)"""
    if ci != "bootstrap":
        return False
    return numpy_replicates_seconds(check_n_boot(n_boot), n_rows, weighted) \
        <= NUMPY_REPLICATES_SECONDS


#: the most memory a bootstrap's replicates may keep, for one model: each its seed (about
#: 1.5 KB) and its counts and metrics of every subgroup (7 counts, three copies at most, 168
#: bytes)
MOST_BOOTSTRAP_BYTES = 2 ** 31


def replicate_bytes(n_groups: int) -> int:
    """What one replicate of ``n_groups`` subgroups keeps (its seed and its counts and
    metrics), at most."""
    return 1_500 + max(n_groups, 1) * K.N_COUNT_COLUMNS * 8 * 3


def models_at_once(n_boot: int, n_groups: int, threads: int) -> int:
    """How many models' bootstraps may run at once on ``threads`` threads with their
    replicates within MOST_BOOTSTRAP_BYTES together (at least one: a call's bound, not a
    model's; found by review, ten models in threads kept ten times it)."""
    return max(1, min(threads, MOST_BOOTSTRAP_BYTES // (n_boot * replicate_bytes(n_groups))))


def check_bootstrap_memory(n_boot: int, n_groups: int) -> None:
    """A ValueError naming ``n_boot`` where its replicates would keep more than
    MOST_BOOTSTRAP_BYTES, before any is drawn (found by review: n_boot=10**9 ran out of
    memory making its seeds, 10**5 replicates of 200 subgroups after 74 s of work)."""
    per_replicate = replicate_bytes(n_groups)
    needed = n_boot * per_replicate
    if needed > MOST_BOOTSTRAP_BYTES:
        most = MOST_BOOTSTRAP_BYTES // per_replicate
        raise ValueError(f"n_boot={n_boot:,} replicates of {n_groups:,} "
                         f"subgroup{'' if n_groups == 1 else 's'} would keep "
                         f"about {needed / 2 ** 30:,.1f} GiB (at most "
                         f"{MOST_BOOTSTRAP_BYTES / 2 ** 30:.0f} GiB: {most:,} replicates here); "
                         f"ask for fewer replicates")


def replicates(sorted_scores: SortedScores | None, sample_weight: np.ndarray | None = None, *,
               n_boot: int = 1000, random_state=None, progress=None,
               n_jobs: int | None = None, first_call: tuple | None = None) -> BootstrapReplicates:
    """The Poisson bootstrap from the sorts of the point estimate (no new sort).

    Without sample weights each replicate is an exact integer-weighted sweep
    over the sorts with their rows (``SortedScores(with_rows=True)``); with
    weights, a double-double walk of the row order (:class:`_WeightReplicate`), each
    subgroup whose sums it cannot certify counted again from its cells, as the point
    estimate's weighted sweep does. Either walks REPLICATE_LANES replicates at once.
    ``first_call``: ``(scores,
    memberships)``, or ``(scores, memberships, plan)`` with the point estimate's numpy plan
    (:func:`~fastbias.sweep.first_call.counts_and_plan`; None: made here), of a first call
    whose kernels still compile in the background
    (:mod:`fastbias.intervals.first_call`): replicates are counted in numpy
    (the same counts, unweighted) until the kernels are ready, then by them
    (``sorted_scores`` may then be None: they sort when they take over); when the
    replicates left would take more than NUMPY_REPLICATES_SECONDS in numpy, the kernels
    are compiled at once instead (this call's only).
    """
    n_boot = check_n_boot(n_boot)
    m = sorted_scores.memberships if sorted_scores is not None else first_call[1]
    check_bootstrap_memory(n_boot, m.n_groups)
    n = m.n_rows
    seeds = bootstrap_seed(random_state).spawn(n_boot)  # (a copy's children: see there)
    counts = np.empty((n_boot, m.n_groups, K.N_COUNT_COLUMNS))
    class_totals = np.empty((n_boot, 2))
    twice_overall_u = np.empty(n_boot)
    base = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if base is not None and base.shape != (n,):  # (the walk reads base[row] unchecked)
        raise ValueError(f"sample_weight has shape {base.shape}, but there are {n} rows")
    # weighted: each subgroup's background weights from the compensated sums (the class total
    # minus the subgroup in float loses a background that is tiny next to its class)
    backgrounds = None if base is None else np.empty((n_boot, m.n_groups, 2))
    bar, own_bar = bootstrap_bar(progress, n_boot)  # opened where the finally closes it
    try:
        done = 0
        # a long bootstrap compiles at once, without building the numpy ranks
        in_numpy = first_call is not None
        guess = numpy_replicates_seconds(n_boot, n, base is not None)
        if in_numpy and guess > NUMPY_REPLICATES_SECONDS:
            logger.info("compiling the bootstrap kernels now: %d replicates would take about "
                        "%.0f s in numpy", n_boot, guess)
            in_numpy = False
        if in_numpy:
            scores, _, *plan = first_call
            numpy_replicates = NumpyReplicates(scores, m, base, plan=plan[0] if plan else None)
            done = _numpy_replicates(numpy_replicates, seeds, numpy_replicate_threads(n_jobs,
                                                                                      n_boot),
                                     bar, counts, class_totals, twice_overall_u, backgrounds)
        if done < n_boot:
            if sorted_scores is None:
                sorted_scores = SortedScores(first_call[0], m, with_rows=base is None)
            _kernel_replicates(sorted_scores, base, seeds, range(done, n_boot), n_jobs, bar,
                               counts, class_totals, twice_overall_u, backgrounds)
    finally:
        if own_bar:
            bar.close()
    # all replicates' metrics at once: the replicates stacked as rows of one SweepCounts
    k = m.n_groups
    # unweighted, the replicates' counts are integers (held in float64, exact below 2**53):
    # their metrics then come from the exact ratios, correctly rounded, as the point
    # estimate's (an AEG as 0.5 - p in float was an ulp off; noted by review)
    exact = base is None and bool((np.abs(counts) < 2.0 ** 53).all()
                                  and (class_totals < 2.0 ** 53).all())
    kind = np.int64 if exact else np.float64
    stacked = SweepCounts(list(m.names) * n_boot,
                          counts.reshape(n_boot * k, K.N_COUNT_COLUMNS).astype(kind),
                          np.repeat(class_totals[:, 0], k).astype(kind),
                          np.repeat(class_totals[:, 1], k).astype(kind),
                          0.0, np.tile(m.cell_rows, (n_boot, 1)), m.class_rows, not exact,
                          None if backgrounds is None else backgrounds.reshape(n_boot * k, 2))
    values = {metric: v.reshape(n_boot, k) for metric, v in metrics_from_counts(stacked).items()}
    if base is not None:
        _clip_to_ranges(values)
    den = 2.0 * class_totals[:, 0] * class_totals[:, 1]
    overall = np.full(n_boot, np.nan)
    np.divide(twice_overall_u, den, out=overall, where=den > 0)
    keep = identity_mask(m.names, m.intersections)
    if keep.any():  # (over the identities: the intersections are left out, found by review;
        # a universe of intersections alone, under exclude, has no final metric)
        final = final_metric_values(overall, {metric: v[:, keep] for metric, v in values.items()})
    else:
        final = np.full(n_boot, np.nan)
    return BootstrapReplicates(values, overall, final, seeds)


#: the most threads a first call's replicates are counted on in numpy: each holds a
#: replicate's temporaries (at 1.8M x 24 rows about 0.34x the inputs unweighted, 0.61x
#: weighted), so this bounds the tier's memory
NUMPY_REPLICATE_MAX_THREADS = 4


def numpy_replicate_threads(n_jobs, n_boot: int) -> int:
    """Threads a first call's bootstrap counts its replicates on in numpy (numpy's array
    operations release the GIL): as ``n_jobs`` says, but one CPU left to the process that
    compiles the kernels meanwhile, and at most NUMPY_REPLICATE_MAX_THREADS."""
    return max(1, min(resolve_n_jobs(n_jobs, n_boot, default_cap=8), usable_cpus() - 1,
                      NUMPY_REPLICATE_MAX_THREADS))


def _numpy_replicates(numpy_replicates: NumpyReplicates, seeds: list, workers: int, bar,
                      counts, class_totals, twice_overall_u, backgrounds) -> int:
    """Replicates 0, 1, 2, ... counted in numpy, on up to ``workers`` threads that each take
    the next replicate as soon as they are free, into the given arrays, for as long as the
    kernels still compile in the background; they stop early where the replicates not yet
    begun would take more than NUMPY_REPLICATES_SECONDS at the pace so far (compiling this
    call's kernels here is then quicker). A thread finishes the replicate it took, so the
    replicates made are always the first ones: returns how many. A replicate's counts
    depend on its key alone, so they are the same on any number of threads."""
    n_boot = len(seeds)
    lock = threading.Lock()
    state = {"taken": 0, "made": 0, "stop": False}
    start = time.perf_counter()
    weighted = backgrounds is not None

    def take():
        with lock:
            if state["stop"] or state["taken"] >= n_boot or not still_compiling("bootstrap"):
                state["stop"] = True
                return None
            state["taken"] += 1
            return state["taken"] - 1

    def work(_):
        try:
            while (i := take()) is not None:
                key = replicate_key(seeds[i])
                if weighted:
                    sc = numpy_replicates.weighted_sweep(key)
                    counts[i], class_totals[i], twice_overall_u[i] = \
                        sc.counts, (sc.total_neg, sc.total_pos), sc.twice_overall_u
                    backgrounds[i] = np.column_stack(sc.background_totals())
                else:
                    counts[i], class_totals[i, 0], class_totals[i, 1], \
                        twice_overall_u[i] = numpy_replicates.counts(key)
                with lock:
                    state["made"] += 1
                    bar.update(1)
                    left = n_boot - state["taken"]
                    seconds = left * (time.perf_counter() - start) / state["made"]
                    if not state["stop"] and left and seconds > NUMPY_REPLICATES_SECONDS:
                        state["stop"] = True
                        logger.info("compiling the bootstrap kernels now: %d replicates left "
                                    "would take about %.0f s in numpy", left, seconds)
        except BaseException:
            with lock:
                state["stop"] = True  # (the other threads take no more: raised once they end)
            raise

    if weighted:
        numpy_replicates.gather_weights()  # (once, before the threads)
    # (this thread counts too, so an interrupt here stops the others after their replicate)
    run_pieces(work, range(workers), workers)
    return state["taken"]


def _kernel_replicates(sorted_scores: SortedScores, base: np.ndarray | None, seeds: list,
                       todo: range, n_jobs, bar, counts, class_totals, twice_overall_u,
                       backgrounds: np.ndarray | None) -> None:
    """Replicates ``todo`` by the kernels, in threads, into the given arrays."""
    if base is None:  # a replicate's weights are small integers: an exact integer sweep
        if not sorted_scores.with_rows:
            sorted_scores = SortedScores(sorted_scores.scores, sorted_scores.memberships,
                                         with_rows=True)
        replicate = _CountReplicate(sorted_scores)
    else:
        replicate = _WeightReplicate(sorted_scores, base)

    def run(chunk):
        for start in range(chunk.start, chunk.stop, IK.REPLICATE_LANES):
            batch = range(start, min(start + IK.REPLICATE_LANES, chunk.stop))
            out = replicate.counts_of([replicate_key(seeds[b]) for b in batch])
            counts[batch], class_totals[batch, 0], class_totals[batch, 1], \
                twice_overall_u[batch] = out[:4]
            if backgrounds is not None:
                backgrounds[batch] = out[4]
            bar.update(len(batch))

    n_todo = len(todo)
    workers = resolve_n_jobs(n_jobs, n_todo, default_cap=8)
    lanes = IK.REPLICATE_LANES
    if n_todo <= lanes * workers:
        # few replicates: one walk a thread (of 8 at least: a walk of fewer costs as much)
        chunk_size = max(IK.MIN_REPLICATE_LANES, -(-n_todo // workers))
    else:  # walks of REPLICATE_LANES replicates, about 4 chunks a thread
        chunk_size = min(64, max(lanes, -(-(n_todo // (4 * workers)) // lanes) * lanes))
    chunks = [range(i, min(i + chunk_size, todo.stop)) for i in range(todo.start, todo.stop,
                                                                      chunk_size)]
    map_in_threads(run, chunks, workers)


def _percentile_interval(reps: np.ndarray, confidence: float):
    """Percentile interval and standard error over the finite replicates (axis 0); NaN where
    fewer than two are finite. Computed on those columns alone, so numpy has no all-NaN
    column to warn about: no ``warnings.catch_warnings`` (models evaluated in threads call
    this at once, and that context manager swaps the process's warning filters)."""
    alpha = 1.0 - confidence
    reps = np.asarray(reps, dtype=np.float64)
    shape = reps.shape[1:]
    flat = reps.reshape(reps.shape[0], -1)
    count = np.isfinite(flat).sum(axis=0)
    enough = count >= 2
    low, high, se = (np.full(flat.shape[1], np.nan) for _ in range(3))
    if enough.any():
        # (C order, as the replicates come: numpy then sums each column row by row)
        kept = np.ascontiguousarray(np.where(np.isfinite(flat[:, enough]), flat[:, enough],
                                             np.nan))  # (inf: NaN)
        low[enough], high[enough] = np.nanquantile(kept, [alpha / 2.0, 1.0 - alpha / 2.0],
                                                   axis=0)
        se[enough] = np.nanstd(kept, axis=0, ddof=1)
    return (low.reshape(shape), high.reshape(shape), se.reshape(shape), count.reshape(shape))
