"""A first call that does not wait for the compiler: the same exact counts in numpy.

In a fresh environment (an empty Numba cache: a new container, a CI job, a
Colab session) the counting kernels take several seconds to compile before
the first answer. While they compile in a background process
(:func:`compile_in_background`), an unweighted call without intervals gets
its counts from :func:`counts_in_numpy`: the class sorts, the ranks of every
membership in each class by ``searchsorted``, and each subgroup's sums in
int64, so the counts are exactly those of the kernels (a test checks it, bit
for bit). It is slower than the kernels once compiled (a few hundred ms at
1.8M x 24) but far faster than compiling them; later calls use the kernels
as soon as they are ready.
"""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading

import numpy as np

from ..prepare.memberships import Memberships
from . import _kernels as K
from .counts import SweepCounts

# above this many rows the numpy counts take longer than the kernels take to compile
FIRST_CALL_MAX_ROWS = 20_000_000


def counts_in_numpy(scores: np.ndarray, memberships: Memberships) -> SweepCounts:
    """Every subgroup's exact U counts (:class:`SweepCounts`, unweighted) with numpy alone.

    For each membership, the numbers of negatives and of positives below it
    and tied with it come from ``searchsorted`` in the sorted classes; the
    subgroup U from the same look-ups within the subgroup; every sum is an
    int64 over one subgroup's memberships. Same columns and meaning as the
    counting kernel (see ``_kernels``).
    """
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


def _twice_below(sorted_values: np.ndarray, queries: np.ndarray) -> int:
    """Sum over the queries of 2 * #values below + #values tied (exact int64)."""
    below = np.searchsorted(sorted_values, queries, side="left").astype(np.int64)
    not_above = np.searchsorted(sorted_values, queries, side="right").astype(np.int64)
    return int(below.sum() + not_above.sum())


_lock = threading.Lock()
_children: dict = {}


def compile_in_background(name: str = "counting") -> None:
    """Compile and cache the counting kernels in a separate Python process, once.

    The child (``python -m fastbias.sweep.warm_up``) compiles the kernels an
    unweighted count needs, for float32 and float64 scores and the usual
    identity-column types, and writes them to the same private cache; this
    process then loads them on its next call. A separate process rather than
    a thread: compiling changes interpreter-wide state (numba's type inference
    enters ``warnings.catch_warnings``, which would undo the caller's own
    warning filters meanwhile). At exit this process waits for the child, so
    that a script that ends right after its first call still leaves a warm cache.
    """
    if getattr(sys, "frozen", False) or not sys.executable:
        return  # a frozen application's executable is not Python: the next call compiles
    with _lock:
        if name in _children:
            return
        try:
            child = subprocess.Popen([sys.executable, "-m", "fastbias.sweep.warm_up"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=_child_environment())
        except OSError:  # no process can start: the next call compiles as usual
            return
        if not _children:
            atexit.register(wait_until_compiled)
        _children[name] = child


def _child_environment() -> dict:
    """This process's environment (the child imports the same fastbias: same paths, same
    working directory), with the private cache directory chosen here made explicit."""
    import numba

    env = dict(os.environ)
    if numba.config.CACHE_DIR:
        env["NUMBA_CACHE_DIR"] = numba.config.CACHE_DIR
    return env


def wait_until_compiled() -> None:
    """Wait for the background compilation (e.g. before timing the kernels)."""
    for child in list(_children.values()):
        child.wait()


def still_compiling(name: str = "counting") -> bool:
    """Whether the background compilation ``name`` is still running: a call that needs those
    kernels now would compile them itself."""
    child = _children.get(name)
    return child is not None and child.poll() is None
