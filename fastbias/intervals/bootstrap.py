"""The Poisson bootstrap: each replicate weights every row by a Poisson(1) count; one sort."""
from __future__ import annotations

import numbers
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..metrics.aggregates import final_metric_values
from ..metrics.table import metrics_from_counts
from ..prepare.memberships import Memberships
from ..sort.order import ScoreOrder, order_scores, sorted_scores
from ..sweep import _kernels as K
from ..sweep.counts import SweepCounts, sweep_weighted
from ..validate.settings import resolve_n_jobs
from . import _kernels as IK


class _Progress:
    """A minimal progress bar on stderr (no dependency), drawn only after 0.5 s."""

    def __init__(self, total: int, enabled: bool, label: str = "bootstrap"):
        self.total = total
        self.enabled = enabled
        self.label = label
        self.done = 0
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.drawn = False
        self.lock = threading.Lock()

    def update(self, k: int = 1) -> None:
        with self.lock:
            self.done += k
            if not self.enabled:
                return
            now = time.monotonic()
            if now - self.start < 0.5 or (now - self.last_draw < 0.1 and self.done < self.total):
                return
            self.last_draw = now
            self.drawn = True
            frac = self.done / self.total
            bar = "#" * int(30 * frac)
            sys.stderr.write(f"\r{self.label} [{bar:<30}] {self.done}/{self.total} "
                             f"{now - self.start:5.1f}s")
            sys.stderr.flush()

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _seed_sequence(random_state) -> np.random.SeedSequence:
    if isinstance(random_state, np.random.SeedSequence):
        return random_state
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(int(random_state.integers(0, 2 ** 63)))
    if random_state is None or (isinstance(random_state, numbers.Integral)
                                and not isinstance(random_state, bool) and random_state >= 0):
        return np.random.SeedSequence(random_state)
    raise TypeError(f"random_state must be None, a non-negative int, a numpy Generator or a "
                    f"SeedSequence, got {random_state!r}")


def replicate_counts(seed: np.random.SeedSequence, n: int,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Poisson(1) counts (uint8) of ``n`` rows for one replicate, drawn from its own seed.

    Each count inverts one 32-bit uniform integer from ``PCG64(seed)`` (two
    per raw 64-bit draw), so each Poisson probability is exact to 2**-32.
    """
    out = np.empty(n, dtype=np.uint8) if out is None else out
    raw = np.random.PCG64(seed).random_raw((n + 1) // 2)
    return IK.poisson_one_counts(raw.view(np.uint32), out)


def replicate_weights(seed: np.random.SeedSequence, base_weight: np.ndarray) -> np.ndarray:
    """Poisson(1) counts times ``base_weight`` for one replicate (drawn from its own seed)."""
    base_weight = np.asarray(base_weight, dtype=np.float64)
    return replicate_counts(seed, base_weight.shape[0]) * base_weight


@dataclass(frozen=True)
class _CountBootstrapPlan:
    """What an unweighted bootstrap replicate needs besides its counts, built once.

    Every (row, subgroup) membership in score order (``scores``, ``codes`` =
    2 * subgroup + label, ``rows``) and the classes' rows in score order.
    """

    order: ScoreOrder
    scores: np.ndarray
    codes: np.ndarray
    rows: np.ndarray

    @classmethod
    def build(cls, scores: np.ndarray, m: Memberships, order: ScoreOrder):
        per_row = np.diff(m.row_ptr)
        rows = np.repeat(m.identity_rows, per_row)
        codes = 2 * m.row_groups + np.repeat(m.identity_labels, per_row)
        member_scores, by_score = sorted_scores(scores, rows, with_order=True)
        return cls(order, member_scores, np.ascontiguousarray(codes[by_score]),
                   np.ascontiguousarray(rows[by_score]))

    def counts(self, row_counts: np.ndarray, n_groups: int) -> tuple:
        """Exact integer-weighted sweep: (counts (n_groups, 7), total neg, total pos, twice U)."""
        o = self.order
        neg_cum, _ = IK.class_count_prefix(row_counts, o.neg_rows)
        pos_cum, pos_w = IK.class_count_prefix(row_counts, o.pos_rows)
        member_w = row_counts[self.rows].astype(np.int64)
        counts = K.finish_member_counts(K.member_counts_in_range(
            self.scores, self.codes, 0, self.scores.shape[0], o.neg_sorted, o.pos_sorted,
            n_groups, member_w, neg_cum, pos_cum))
        twice_u = K.twice_auc_numerator_sorted_weighted(o.neg_sorted, neg_cum, o.pos_sorted, pos_w)
        return counts, neg_cum[-1], pos_cum[-1], twice_u


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
    """Run the Poisson bootstrap: one sort, then one weighted sweep per replicate.

    Replicate b weights row i by ``K_bi * sample_weight_i`` with
    ``K_bi ~ Poisson(1)`` drawn from its own child of ``SeedSequence(random_state)``,
    so results do not depend on ``n_jobs``. Replicates run in threads (the
    kernels release the GIL).
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 2:
        raise ValueError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    n_boot = int(n_boot)
    m = memberships
    n = m.n_rows
    order = order_scores(scores, m)
    seeds = _seed_sequence(random_state).spawn(n_boot)
    base = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    counts = np.empty((n_boot, m.n_groups, K.N_COUNT_COLUMNS))
    class_totals = np.empty((n_boot, 2))
    twice_overall_u = np.empty(n_boot)
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    bar = _Progress(n_boot, bool(progress))

    # without sample weights a replicate's weights are small integers: an exact integer sweep
    plan = _CountBootstrapPlan.build(scores, m, order) if sample_weight is None else None

    def run(chunk):
        row_counts = np.empty(n, dtype=np.uint8)
        for b in chunk:
            replicate_counts(seeds[b], n, row_counts)
            if plan is not None:
                counts[b], class_totals[b, 0], class_totals[b, 1], twice_overall_u[b] = \
                    plan.counts(row_counts, m.n_groups)
            else:
                sc = sweep_weighted(order, m, row_counts * base, certify=False)
                counts[b] = sc.counts
                class_totals[b] = sc.total_neg, sc.total_pos
                twice_overall_u[b] = sc.twice_overall_u
            bar.update(1)

    workers = resolve_n_jobs(n_jobs, n_boot, default_cap=8)
    chunk_size = max(1, min(64, n_boot // (4 * workers) or 1))
    chunks = [range(i, min(i + chunk_size, n_boot)) for i in range(0, n_boot, chunk_size)]
    try:
        if workers == 1:
            for chunk in chunks:
                run(chunk)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(run, chunks))
    finally:
        bar.close()
    # all replicates' metrics at once: the replicates stacked as rows of one SweepCounts
    k = m.n_groups
    stacked = SweepCounts(list(m.names) * n_boot, counts.reshape(n_boot * k, -1),
                          np.repeat(class_totals[:, 0], k), np.repeat(class_totals[:, 1], k),
                          0.0, np.tile(m.cell_rows, (n_boot, 1)), m.class_rows, True)
    values = {metric: v.reshape(n_boot, k) for metric, v in metrics_from_counts(stacked).items()}
    den = 2.0 * class_totals[:, 0] * class_totals[:, 1]
    overall = np.full(n_boot, np.nan)
    np.divide(twice_overall_u, den, out=overall, where=den > 0)
    if m.n_groups:
        final = final_metric_values(overall, values)
    else:
        final = np.full(n_boot, np.nan)
    return BootstrapReplicates(values, overall, final, seeds)


def _percentile_interval(reps: np.ndarray, confidence: float):
    """Percentile interval and standard error over the finite replicates (axis 0)."""
    alpha = 1.0 - confidence
    reps = np.asarray(reps, dtype=np.float64)
    finite = np.isfinite(reps)
    count = finite.sum(axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
        low, high = np.nanquantile(reps, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        se = np.nanstd(reps, axis=0, ddof=1)
    enough = count >= 2
    return (np.where(enough, low, np.nan), np.where(enough, high, np.nan),
            np.where(enough, se, np.nan), count)
