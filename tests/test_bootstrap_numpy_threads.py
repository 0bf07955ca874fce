"""A first call's bootstrap replicates counted in numpy on several threads (issue 16).

While the bootstrap kernels compile in the background, a first call counts its replicates
in numpy; on a machine with cores to spare it counts them on up to four threads at once.
A replicate's counts depend on its key alone, so the intervals must be those of one thread
and of the kernels: bit for bit unweighted, and weighted the very same replicates as one
thread (the kernels' to rounding). The CI machine has two cores (one thread here: one core
is the compiler's), so these tests say the process has more.
"""
from __future__ import annotations

import itertools
import logging
import threading

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import _numba_cache
from fastbias.intervals import bootstrap
from fastbias.sweep import first_call

from .test_bootstrap_reference import ref_counts, ref_key
from .test_first_call import assert_same_results, cold, compiling  # noqa: F401 (fixtures)
from .test_first_call_counts_mutants_session44_reference import (
    CountingBar,
    _reference_counts,
)


def _data(seed: int, n: int = 3_000, k: int = 4):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    s = (rng.integers(0, 60, n) / 60).astype(np.float32)  # heavy ties
    groups = rng.random((n, k)) < 0.25
    groups[:, -1] = False  # an empty subgroup: NaN in every replicate
    w = rng.integers(1, 9, n) / 4.0
    return y, s, groups, w


def _kernels_call(monkeypatch, *args, **kwargs):
    """The same call with the kernels (compiled, or as Python uncompiled)."""
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: False)
    return fastbias.bias_metrics(*args, **kwargs)


@pytest.mark.parametrize(("cpus", "n_jobs", "n_boot", "threads"), [
    (1, None, 20, 1), (2, None, 20, 1),  # one core is the compiler's
    (3, None, 20, 2), (5, None, 20, 4), (16, None, 20, 4), (16, -1, 20, 4),  # at most 4
    (16, 2, 20, 2), (16, 1, 20, 1), (16, None, 3, 3), (16, None, 1, 1), (4, 8, 20, 3),
])
def test_how_many_threads_count_replicates_in_numpy(monkeypatch, cpus, n_jobs, n_boot, threads):
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: cpus)
    from fastbias.validate import settings
    monkeypatch.setattr(settings, "usable_cpus", lambda: cpus)
    assert bootstrap.numpy_replicate_threads(n_jobs, n_boot) == threads


@pytest.mark.usefixtures("compiling")
@pytest.mark.parametrize("weighted", [False, True])
def test_replicates_on_four_threads_are_those_of_one_and_of_the_kernels(monkeypatch, weighted):
    y, s, groups, w = _data(21)
    kwargs = dict(ci="bootstrap", n_boot=24, random_state=7,
                  sample_weight=w if weighted else None)
    seen = set()
    counts = bootstrap.NumpyReplicates.counts if not weighted else \
        bootstrap.NumpyReplicates.weighted_sweep

    def spy(self, key):
        seen.add(threading.get_ident())
        return counts(self, key)
    monkeypatch.setattr(bootstrap.NumpyReplicates, counts.__name__, spy)
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: 8)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    on_four = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert len(seen) > 1  # (24 replicates on four threads: more than one took some)
    seen.clear()
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: 2)
    on_one = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert len(seen) == 1
    # the same replicates, bit for bit, whatever thread counted which
    pd.testing.assert_frame_equal(on_four, on_one, check_exact=True)
    np.testing.assert_equal(on_four.attrs, on_one.attrs)
    expected = _kernels_call(monkeypatch, y, s, groups, **kwargs)
    assert_same_results(on_four, expected, exact=not weighted)


@pytest.mark.usefixtures("compiling")
def test_threads_stop_when_the_kernels_are_ready_and_the_kernels_take_over(monkeypatch):
    y, s, groups, _ = _data(22)
    lock = threading.Lock()
    answers = itertools.chain([True] * 9, itertools.repeat(False))
    asked = []

    def still(name):
        with lock:
            asked.append(name)
            return next(answers)
    made = []
    counts = bootstrap.NumpyReplicates.counts
    monkeypatch.setattr(bootstrap.NumpyReplicates, "counts",
                        lambda self, key: made.append(key) or counts(self, key))
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: 8)
    monkeypatch.setattr(bootstrap, "still_compiling", still)
    got = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=30, random_state=3)
    # nine replicates began in numpy, then every thread asked once more and stopped
    assert len(made) == 9 and set(asked) == {"bootstrap"} and len(asked) == 10
    expected = _kernels_call(monkeypatch, y, s, groups, ci="bootstrap", n_boot=30,
                             random_state=3)
    assert_same_results(got, expected, exact=True)


def test_replicates_in_threads_are_the_first_ones_with_their_own_keys(monkeypatch):
    # _numpy_replicates alone: replicate i holds the counts of seeds[i], on any thread
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.prepare.memberships import prepare_subgroups

    y, s, groups, _ = _data(23, n=800)
    m = prepare_subgroups(y, groups, compiled=False)
    replicates = NumpyReplicates(s, m)
    seeds = bootstrap.bootstrap_seed(5).spawn(13)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)

    out = {}
    for workers in (1, 4):
        bar = CountingBar()
        arrays = (np.full((13, m.n_groups, 7), -1.0), np.full((13, 2), -1.0), np.full(13, -1.0))
        done = bootstrap._numpy_replicates(replicates, seeds, workers, bar, *arrays, None)
        assert done == 13 and bar.n == 13
        out[workers] = arrays
    for i, seed in enumerate(seeds):
        # replicate i by brute force: each row counted its Poisson draw of times (the stream
        # rebuilt from its definition), every pair counted in exact fractions
        d = ref_counts(ref_key(seed), m.n_rows)
        expected, neg, pos, twice_u = _reference_counts(y, s, groups, d)
        for workers in (1, 4):
            counts, totals, overall = out[workers]
            assert tuple(totals[i]) == (neg, pos) and overall[i] == twice_u
            assert [[int(v) for v in row] for row in counts[i]] == expected.tolist()


@pytest.mark.usefixtures("compiling")
def test_threads_stop_where_the_rest_would_outlast_the_budget(monkeypatch, caplog):
    y, s, groups, _ = _data(25)
    # the guess before any replicate (40 x 3,000 rows x 30 ns: 3.6 ms) is within 4 ms; the
    # pace of the first replicate made (dozens of numpy calls) says the rest are not
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 4e-3)
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: 8)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    made = []
    counts = bootstrap.NumpyReplicates.counts
    monkeypatch.setattr(bootstrap.NumpyReplicates, "counts",
                        lambda self, key: made.append(key) or counts(self, key))
    with caplog.at_level(logging.INFO, logger="fastbias"):
        got = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=40, random_state=6)
    assert 1 <= len(made) <= 4  # the first to end stops the rest taking more
    said = [r.getMessage() for r in caplog.records if "replicates left would" in r.getMessage()]
    assert len(said) == 1 and f"now: {40 - len(made)} replicates left" in said[0]
    expected = _kernels_call(monkeypatch, y, s, groups, ci="bootstrap", n_boot=40,
                             random_state=6)
    assert_same_results(got, expected, exact=True)


@pytest.mark.usefixtures("compiling")
@pytest.mark.parametrize("where", ["any thread", "the calling thread"])
def test_a_failure_stops_the_other_threads_and_is_raised(monkeypatch, where):
    # an error in the third replicate begun, whichever thread counts it, or Ctrl-C in the
    # calling thread (it counts replicates too): the others stop after the replicate each has
    # taken (not after the whole budget of replicates in numpy), and it is raised
    y, s, groups, _ = _data(24)
    made, lock, caller = [], threading.Lock(), threading.get_ident()
    error = MemoryError if where == "any thread" else KeyboardInterrupt
    counts = bootstrap.NumpyReplicates.counts

    def failing(self, key):
        with lock:
            made.append(key)
            fails = len(made) == 3 if where == "any thread" else \
                threading.get_ident() == caller and len(made) >= 2
        if fails:
            raise error("replicate")
        return counts(self, key)
    monkeypatch.setattr(bootstrap.NumpyReplicates, "counts", failing)
    monkeypatch.setattr(bootstrap, "usable_cpus", lambda: 8)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: True)
    with pytest.raises(error, match="replicate"):
        fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=300, random_state=1)
    # (any thread: three others finish the one each had taken; the calling thread: it may
    # make its first while the others make a few)
    assert len(made) <= 3 + 3 if where == "any thread" else len(made) < 40
