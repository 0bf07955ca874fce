"""Rounds on Numba's own threads (``FASTBIAS_NUMBA_THREADS=1``, :mod:`fastbias._native`).

The same kernels as the pool's, on the same kind of pieces, run from one ``parallel=True``
kernel per round: every result must be the pool's, bit for bit, and numpy's (the sorts, the
dense scan) or sklearn's (the metrics). The size cutoffs are lowered here so that small
inputs (run as plain Python under NUMBA_DISABLE_JIT=1 too) take these rounds: pieces with
no rows, more pieces than rows, rows that end off a word, ties across pieces. Each test that
compares results also checks that the rounds on Numba's threads ran, so that it cannot pass
through the pool. Then when they must not run: off by default, too few threads, too many
rows per thread, nested, an unsafe threading layer, a forked child, another thread's round,
kernels not compiled yet.
"""
import logging
import multiprocessing
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import _native, _threads
from fastbias.prepare import memberships as prep
from fastbias.sort import order
from fastbias.sweep import counts

from .test_threads import (
    assert_class_keys,
    assert_member_keys,
    class_sort_case,
    member_sort_case,
    pd_equal,
    tied_case,
)


@pytest.fixture
def ran(monkeypatch):
    """Which of the rounds on Numba's threads ran (their entry points, counted)."""
    seen = {"class sort": 0, "member sort": 0, "scan": 0, "count": 0}
    for module, name, label in ((prep, "csr_from_dense_on_numba", "scan"),
                                (counts, "count_on_numba", "count")):
        original = getattr(module, name)

        def spy(*args, _original=original, _label=label, **kwargs):
            seen[_label] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    sort_on_numba = order.sort_on_numba

    def sort_spy(bits, labels, memberships, *args):
        seen["class sort"] += labels is not None
        seen["member sort"] += memberships is not None
        return sort_on_numba(bits, labels, memberships, *args)

    monkeypatch.setattr(order, "sort_on_numba", sort_spy)
    return seen


@pytest.fixture
def on_numba(monkeypatch, ran):
    """Rounds on Numba's threads for every call of two threads or more, however small
    (kernels compiled here, not in the background: the first-call tier is off)."""
    monkeypatch.setattr(_native, "ENABLED", True)
    monkeypatch.setattr(_native, "NATIVE_MIN_WORKERS", 2)
    monkeypatch.setattr(_native, "NATIVE_MAX_ROWS_PER_WORKER", 1 << 62)
    # whichever layer this machine has: fastbias's own rounds never overlap (one at a time),
    # so even workqueue is safe for these tests
    monkeypatch.setattr(_native, "SAFE_LAYERS", (_native.threading_layer(),))
    monkeypatch.setattr(_native, "_warned", [True])
    monkeypatch.setattr(order, "NATIVE_SORT_MIN_KEYS", 1)
    monkeypatch.setattr(counts, "NATIVE_COUNT_MIN_MEMBERSHIPS", 1)
    monkeypatch.setattr(prep, "NATIVE_SCAN_MIN_ROWS", 1)
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")
    return ran


def key_range(values):
    return order.score_key_range(values)


def as_bits(values):
    return values.view(order._UINT_OF_FLOAT[values.dtype])


# ------------------------------------------------------------------ the stages


@pytest.mark.parametrize("pieces", [2, 3, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("levels", [1, 7, None])  # one value, heavy ties, continuous
def test_class_sort_on_numba_equals_numpy(pieces, dtype, levels):
    values, labels = class_sort_case(pieces, dtype, levels)
    classes, members = order.sort_on_numba(as_bits(values), labels.view(np.uint8), None, pieces,
                                           *key_range(values))
    assert_class_keys(classes, values, labels)
    assert members is None


@pytest.mark.parametrize("pieces", [2, 3, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_member_sort_on_numba_equals_numpy_and_is_stable(pieces, dtype):
    values, labels, matrix, m = member_sort_case(dtype)
    classes, (keys, codes) = order.sort_on_numba(as_bits(values), None, m, pieces,
                                                 *key_range(values))
    assert_member_keys(keys, codes, values, labels, matrix)
    assert codes.dtype == np.int32  # as the pool's (fewer than 2**30 subgroups)
    assert classes is None
    # both sorts in the same rounds: each the same as alone
    classes, (keys, codes) = order.sort_on_numba(as_bits(values), labels.view(np.uint8), m,
                                                 pieces, *key_range(values))
    assert_member_keys(keys, codes, values, labels, matrix)
    assert_class_keys(classes, values, labels)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 63, 64, 65, 1_000, 12_000])
@pytest.mark.parametrize("k", [1, 3, 8, 24])
@pytest.mark.parametrize("pieces", [2, 3, 16])
def test_dense_scan_on_numba_equals_numpy(n, k, pieces):
    """Every byte value a member (any non-zero byte), rows ending off a word, a tail after the
    last whole word, pieces without members, more pieces than rows, and pieces longer than
    the scan's chunk of words (12,000 x 24 in 2 or 3 pieces)."""
    rng = np.random.default_rng(n * k + pieces)
    matrix = np.where(rng.random((n, k)) < 0.2, rng.integers(1, 256, (n, k)), 0).astype(
        np.uint8)
    matrix[n // 2:n // 2 + 5] = 0
    if n > 3:
        matrix[-1] = 255  # the last row, in the tail past the last whole word
    flat = matrix.reshape(-1)
    labels = rng.random(n) < 0.5
    identity_rows, row_ptr, row_groups, identity_labels = prep.csr_from_dense_on_numba(
        flat, n, k, labels, pieces)
    rows, groups = np.nonzero(matrix)
    expected_rows, first = np.unique(rows, return_index=True)
    np.testing.assert_array_equal(identity_rows, expected_rows)
    np.testing.assert_array_equal(row_ptr, np.append(first, rows.size))
    np.testing.assert_array_equal(row_groups, groups)
    np.testing.assert_array_equal(identity_labels, labels[expected_rows])
    assert identity_labels.dtype == np.bool_


@pytest.mark.parametrize("pieces", [2, 5, 16])
def test_count_on_numba_equals_the_one_thread_walk(pieces):
    rng = np.random.default_rng(pieces)
    y, s, groups = tied_case(rng, n=1_500)
    m = prep.prepare_memberships_dense(y, groups, [f"g{j}" for j in range(groups.shape[1])])
    sorted_scores = order.SortedScores(s, m)
    expected = counts.count_all(sorted_scores.members, sorted_scores.classes, m.n_groups, 1)
    got = counts.count_on_numba(sorted_scores.members, sorted_scores.classes, m.n_groups, pieces)
    np.testing.assert_array_equal(got[0], expected[0])
    assert got[1] == expected[1] and isinstance(got[1], int)


# ------------------------------------------------------------------ the entry points


@pytest.mark.parametrize("workers", [2, 3, 8])
def test_bias_metrics_on_numba_threads_same_bits_as_one_thread(on_numba, workers):
    rng = np.random.default_rng(workers)
    y, s, groups = tied_case(rng)
    one = fastbias.bias_metrics(y, s, groups, n_jobs=1)
    assert on_numba == {"class sort": 0, "member sort": 0, "scan": 0, "count": 0}
    many = fastbias.bias_metrics(y, s, groups, n_jobs=workers)
    assert all(on_numba.values()), on_numba  # every round ran on Numba's threads
    pd_equal(one, many)
    for j in range(groups.shape[1]):
        member = groups[:, j]
        assert many.iloc[j]["subgroup_auc"] == pytest.approx(
            roc_auc_score(y[member], s[member]), abs=1e-15)
    # float64 scores, no identity rows at all, one class only
    for case in ((y, s.astype(np.float64), groups), (y, s, np.zeros_like(groups)),
                 (np.zeros_like(y), s, groups)):
        pd_equal(fastbias.bias_metrics(*case, n_jobs=1),
                 fastbias.bias_metrics(*case, n_jobs=workers))


def test_evaluate_and_evaluator_on_numba_threads_same_bits_as_one_thread(on_numba):
    rng = np.random.default_rng(11)
    y, s, groups = tied_case(rng)
    frame = pd.DataFrame(groups, columns=[f"g{j}" for j in range(groups.shape[1])])
    names = list(frame.columns)
    frame["label"], frame["m1"] = y, s
    frame["m2"] = np.round(s + rng.normal(0, 0.1, y.size), 2)
    one = fastbias.evaluate(frame, label="label", scores=["m1", "m2"], subgroups=names,
                            n_jobs=1)
    many = fastbias.evaluate(frame, label="label", scores=["m1", "m2"], subgroups=names,
                             n_jobs=4)
    assert on_numba["class sort"] and on_numba["count"]
    pd_equal(one.table, many.table)
    ev1 = fastbias.BiasEvaluator(y, frame[names], n_jobs=1)
    ev4 = fastbias.BiasEvaluator(y, frame[names], n_jobs=4)
    pd_equal(ev1.metrics(s), ev4.metrics(s))
    pd_equal(ev1.metrics_many(np.c_[s, frame["m2"]]).table,
             ev4.metrics_many(np.c_[s, frame["m2"]]).table)


def test_models_in_threads_on_numba_threads_all_finish_with_the_same_bits(on_numba):
    """One round at a time on Numba's threads; the others meanwhile run on the pool."""
    rng = np.random.default_rng(4)
    cases = [tied_case(rng) for _ in range(6)]
    expected = [fastbias.bias_metrics(*case, n_jobs=1) for case in cases]
    with ThreadPoolExecutor(6) as threads:
        got = list(threads.map(lambda case: fastbias.bias_metrics(*case, n_jobs=2), cases))
    for a, b in zip(expected, got):
        pd_equal(a, b)
    assert on_numba["count"] >= 1


def _child_call(y, s, groups):
    return fastbias.bias_metrics(y, s, groups, n_jobs=2), _native._forked_after_omp


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_uses_the_pool_after_the_parent_started_numba_threads(on_numba):
    """GNU OpenMP is not fork-safe: Numba ends a forked child that starts a parallel kernel
    once the parent started its threads. The child must use the pool instead."""
    y, s, groups = tied_case(np.random.default_rng(5))
    expected = fastbias.bias_metrics(y, s, groups, n_jobs=2)
    assert on_numba["count"] == 1  # the parent's threads are started
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got, forked_flag = pool.apply_async(_child_call, (y, s, groups)).get(timeout=120)
    pd_equal(expected, got)
    assert forked_flag == (_native.threading_layer() != "tbb")


# ------------------------------------------------------------------ when they must not run


@pytest.mark.parametrize("tbb", [False, True])
def test_on_when_asked_off_when_told_and_by_default_only_under_tbb(monkeypatch, tbb):
    monkeypatch.setattr(_native, "ENABLED", None)
    monkeypatch.setattr(_native, "_tbb_is_numbas_layer", lambda: tbb)
    monkeypatch.delenv("FASTBIAS_NUMBA_THREADS", raising=False)
    assert _native.mode() == "auto" and _native.enabled() is tbb
    for value, mode in (("1", "on"), ("on", "on"), (" TRUE ", "on"), ("yes", "on"),
                        ("", "auto"), (" Auto", "auto"), ("0", "off"), ("off", "off"),
                        ("no", "off"), ("2", "off")):
        monkeypatch.setenv("FASTBIAS_NUMBA_THREADS", value)
        assert _native.mode() == mode, value
        assert _native.enabled() is {"on": True, "off": False, "auto": tbb}[mode], value
    monkeypatch.setenv("FASTBIAS_NUMBA_THREADS", "1")
    monkeypatch.setattr(_native, "ENABLED", False)  # the benchmarks' and warm-up's override
    assert _native.mode() == "off" and not _native.enabled()
    monkeypatch.setenv("FASTBIAS_NUMBA_THREADS", "0")
    monkeypatch.setattr(_native, "ENABLED", True)
    assert _native.mode() == "on" and _native.enabled()


@pytest.mark.parametrize("tbb", [False, True])
def test_by_default_in_a_call_only_under_tbb(monkeypatch, ran, tbb):
    monkeypatch.setattr(_native, "ENABLED", None)
    monkeypatch.delenv("FASTBIAS_NUMBA_THREADS", raising=False)
    monkeypatch.setattr(_native, "_tbb_is_numbas_layer", lambda: tbb)
    # whichever layer runs here stands in for TBB (fastbias's rounds never overlap)
    monkeypatch.setattr(_native, "SAFE_LAYERS", (_native.threading_layer(),))
    monkeypatch.setattr(_native, "_warned", [True])
    monkeypatch.setattr(_native, "NATIVE_MIN_WORKERS", 2)
    monkeypatch.setattr(order, "NATIVE_SORT_MIN_KEYS", 1)
    monkeypatch.setattr(counts, "NATIVE_COUNT_MIN_MEMBERSHIPS", 1)
    monkeypatch.setattr(prep, "NATIVE_SCAN_MIN_ROWS", 1)
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")
    y, s, groups = tied_case(np.random.default_rng(1))
    expected = fastbias.bias_metrics(y, s, groups, n_jobs=1)
    got = fastbias.bias_metrics(y, s, groups, n_jobs=4)
    pd_equal(expected, got)
    assert (ran["count"] > 0) is tbb and (ran["class sort"] > 0) is tbb


def _config(monkeypatch, layer, priority=("tbb", "omp", "workqueue")):
    import numba

    monkeypatch.setattr(numba.config, "THREADING_LAYER", layer)
    monkeypatch.setattr(numba.config, "THREADING_LAYER_PRIORITY", list(priority))


@pytest.mark.parametrize("layer, priority, loads, expected", [
    ("default", ("tbb", "omp", "workqueue"), True, True),
    ("safe", ("omp", "tbb", "workqueue"), True, True),       # safe: TBB alone
    ("tbb", ("workqueue", "omp", "tbb"), True, True),
    ("threadsafe", ("tbb", "omp", "workqueue"), True, True),
    ("forksafe", ("tbb", "workqueue", "omp"), True, True),
    ("default", ("omp", "tbb", "workqueue"), True, False),   # OpenMP first
    ("forksafe", ("workqueue", "tbb", "omp"), True, True),    # (TBB first whatever the
    ("threadsafe", ("omp", "tbb", "workqueue"), True, True),  # priority, for these three)
    ("omp", ("tbb", "omp", "workqueue"), True, False),       # OpenMP named
    ("workqueue", ("tbb", "omp", "workqueue"), True, False),
    ("default", ("tbb", "omp", "workqueue"), False, False),  # no TBB to load
    ("tbb", ("tbb", "omp", "workqueue"), False, False),
])
def test_which_layer_numba_would_start(monkeypatch, layer, priority, loads, expected):
    from numba.np.ufunc import parallel

    _config(monkeypatch, layer, priority)

    def check():
        if not loads:
            raise ImportError("Problem with TBB")

    monkeypatch.setattr(parallel, "_check_tbb_version_compatible", check)
    if loads:  # (this machine may have no TBB: Numba's tbbpool stands in)
        import sys
        import types

        monkeypatch.setitem(sys.modules, "numba.np.ufunc.tbbpool", types.ModuleType("tbbpool"))
    assert _native._tbb_would_start() is expected


@pytest.mark.parametrize("setting, started", [(None, False), ("1", True)])
def test_the_default_starts_no_layer_where_tbb_would_not_be_it(tmp_path, setting, started):
    """In a fresh process told to use GNU OpenMP, a round that could run on Numba's threads
    leaves Numba's layer unstarted by default (no OpenMP fork hazard), and starts it when
    asked for."""
    import subprocess
    import sys

    code = ("from fastbias import _native\nfrom numba.np.ufunc import parallel\n"
            "ok = _native.available(_native.NATIVE_MIN_WORKERS, 1000)\n"
            "print('MODE', _native.mode(), 'AVAILABLE', ok, 'STARTED', parallel._is_initialized,"
            " flush=True)\n")
    env = {k: v for k, v in os.environ.items() if k != "FASTBIAS_NUMBA_THREADS"}
    env.update(NUMBA_THREADING_LAYER="omp", NUMBA_CACHE_DIR=str(tmp_path),
               FASTBIAS_FIRST_CALL="0")
    if setting is not None:
        env["FASTBIAS_NUMBA_THREADS"] = setting
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    out = result.stdout + result.stderr[-2000:]
    if started and "STARTED True" not in out:
        pytest.skip(f"no GNU OpenMP layer for Numba here: {out[-300:]}")
    expected = "MODE auto AVAILABLE False STARTED False" if setting is None else (
        "MODE on AVAILABLE True STARTED True")
    assert expected in result.stdout, out


def test_too_few_threads_or_too_many_rows_per_thread(on_numba, monkeypatch):
    monkeypatch.setattr(_native, "NATIVE_MIN_WORKERS", 8)
    assert not _native.available(7, 100)
    assert _native.available(8, 100)
    monkeypatch.setattr(_native, "NATIVE_MAX_ROWS_PER_WORKER", 10)
    assert _native.available(8, 80) and not _native.available(8, 81)


def test_not_on_a_pool_thread_nor_in_a_forked_child_nor_on_an_unsafe_layer(on_numba,
                                                                         monkeypatch):
    assert _native.available(2, 100)
    assert _threads.run_pieces(lambda _: _native.available(2, 100), range(2), 2) == [True,
                                                                                    False]
    monkeypatch.setattr(_native, "_forked_after_omp", True)
    assert not _native.available(2, 100)
    monkeypatch.setattr(_native, "_forked_after_omp", False)
    monkeypatch.setattr(_native, "SAFE_LAYERS", ("tbb", "omp"))
    monkeypatch.setattr(_native, "_layer", "workqueue")
    assert not _native.available(2, 100)
    monkeypatch.setattr(_native, "_layer", "")  # no layer could start
    assert not _native.available(2, 100)


def test_the_fork_handler_marks_a_child_of_a_process_with_started_threads(monkeypatch):
    for layer, marked in (("omp", True), ("workqueue", True), ("tbb", False)):
        monkeypatch.setattr(_native, "_layer", layer)
        monkeypatch.setattr(_native, "_forked_after_omp", False)
        _native._after_fork_in_child()
        assert _native._forked_after_omp is marked, layer


def test_one_round_at_a_time(on_numba):
    holding, release = threading.Event(), threading.Event()
    answers = []

    def hold():
        with _native.numba_threads(2, 100) as mine:
            answers.append(mine)
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(30)
    with _native.numba_threads(2, 100) as other:
        answers.append(other)
    release.set()
    thread.join(30)
    assert answers == [True, False]
    with _native.numba_threads(2, 100) as again:  # free again once the round ended
        assert again


def test_numba_thread_count_follows_workers_and_is_restored(on_numba, monkeypatch):
    import numba

    numba.set_num_threads(1)  # (this thread's setting: whatever an earlier test left)
    with _native.numba_threads(2, 100) as mine:
        assert mine and numba.get_num_threads() == min(2, numba.config.NUMBA_NUM_THREADS)
    assert numba.get_num_threads() == 1
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    # the count asked for is the call's workers, at most Numba's threads
    asked = []
    monkeypatch.setattr(numba, "set_num_threads", asked.append)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 64)
    for workers in (3, 200):
        with _native.numba_threads(workers, 100) as mine:
            assert mine
    assert asked[0::2] == [3, 64]


def test_not_when_numba_has_one_thread(on_numba, monkeypatch):
    import numba

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    assert not _native.available(2, 100)


def test_a_forked_child_gets_free_locks(monkeypatch):
    """A child forked while another thread held a lock here must not wait for it for ever."""
    for name in ("_round_lock", "_layer_lock"):
        monkeypatch.setattr(_native, name, threading.Lock())
        getattr(_native, name).acquire()
    monkeypatch.setattr(_native, "_forked_after_omp", _native._forked_after_omp)
    _native._after_fork_in_child()
    for name in ("_round_lock", "_layer_lock"):
        assert getattr(_native, name).acquire(blocking=False), name
        getattr(_native, name).release()


def test_kernels_not_compiled_yet_compile_in_the_background_and_the_pool_runs(on_numba,
                                                                              monkeypatch):
    from fastbias import _numba_cache
    from fastbias.sweep import first_call

    asked = []
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda kernel: True)
    monkeypatch.setattr(first_call, "compile_in_background", asked.append)
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    assert not _native.available(2, 100, order.NATIVE_SORT_KERNELS)
    assert asked == ["native"]
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")  # no background tier: compiled here
    assert _native.available(2, 100, order.NATIVE_SORT_KERNELS)
    # compiled, but the background process still compiling other types: the pool still
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda kernel: False)
    monkeypatch.setattr(first_call, "still_compiling", lambda name: name == "native")
    assert not _native.available(2, 100, order.NATIVE_SORT_KERNELS)


def test_gnu_openmp_spinning_is_warned_of_once(on_numba, monkeypatch, caplog):
    monkeypatch.setattr(_native, "_layer", "omp")
    monkeypatch.setattr(_native, "SAFE_LAYERS", ("omp",))
    monkeypatch.setattr(_native, "_warned", [])
    monkeypatch.setattr(_native, "_passive_asked", [])
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    with caplog.at_level(logging.WARNING, logger="fastbias"):
        _native.available(2, 100)
        _native.available(2, 100)
    assert [r.getMessage().count("OMP_WAIT_POLICY=passive") for r in caplog.records] == [1]
    caplog.clear()
    monkeypatch.setattr(_native, "_warned", [])
    monkeypatch.setenv("OMP_WAIT_POLICY", "passive")
    with caplog.at_level(logging.WARNING, logger="fastbias"):
        _native.available(2, 100)
    assert not caplog.records
    # asked for by fastbias itself as the runtime loaded: nothing to warn of
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setattr(_native, "_warned", [])
    monkeypatch.setattr(_native, "_passive_asked", [True])
    with caplog.at_level(logging.WARNING, logger="fastbias"):
        _native.available(2, 100)
    assert not caplog.records


@pytest.mark.parametrize("loaded, given, inside, asked", [
    (False, None, "passive", True),   # first load, nothing said: passive while it loads
    (True, None, None, True),         # already loaded: it would not read it, so nothing is set
    (False, "active", "active", True),  # the user's choice stays
    (False, None, None, False),       # the default starts TBB alone: the environment untouched
])
def test_openmp_is_asked_to_wait_passively_only_while_it_first_loads(monkeypatch, loaded,
                                                                       given, inside, asked):
    monkeypatch.setattr(_native, "ENABLED", True if asked else None)
    monkeypatch.delenv("FASTBIAS_NUMBA_THREADS", raising=False)
    monkeypatch.setattr(_native, "_openmp_loaded", lambda: loaded)
    monkeypatch.setattr(_native, "_passive_asked", [])
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    if given is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", given)
    with _native._passive_openmp():
        assert os.environ.get("OMP_WAIT_POLICY") == inside
    assert os.environ.get("OMP_WAIT_POLICY") == given  # put back for later processes
    assert _native._passive_asked == ([True] if inside == "passive" else [])


def test_openmp_loaded_reads_only_the_runtime_numba_loads(monkeypatch, tmp_path):
    import builtins

    maps = tmp_path / "maps"
    real_open = builtins.open

    def fake_open(path, *args, **kwargs):
        return real_open(maps if path == "/proc/self/maps" else path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    line = "7f00-7f10 r-xp 00000000 08:01 1234 {}\n"
    maps.write_text(line.format("/usr/lib/libc.so.6")
                    + line.format("/site-packages/scikit_learn.libs/libgomp-a34b3233.so.1.0.0")
                    + "7f20-7f30 rw-p 00000000 00:00 0\n")
    assert not _native._openmp_loaded()  # a bundled copy is a runtime of its own
    maps.write_text(line.format("/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0"))
    assert _native._openmp_loaded()


def test_numbas_openmp_starts_passive_and_the_environment_is_put_back(tmp_path):
    """In a fresh process, GNU OpenMP reports the wait policy it read as it loaded."""
    import subprocess
    import sys

    code = ("import os\nfrom fastbias import _native\nlayer = _native.threading_layer()\n"
            "print('LAYER', layer, 'ENV', os.environ.get('OMP_WAIT_POLICY'), flush=True)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(OMP_DISPLAY_ENV="true", NUMBA_THREADING_LAYER="omp",
               NUMBA_CACHE_DIR=str(tmp_path), FASTBIAS_NUMBA_THREADS="1")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    out = result.stdout + result.stderr
    if "LAYER omp" not in out:
        pytest.skip(f"no GNU OpenMP layer for Numba here: {out[-300:]}")
    assert "LAYER omp ENV None" in out
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in out, out
    env["OMP_WAIT_POLICY"] = "active"  # the user's own setting wins
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    out = result.stdout + result.stderr
    assert "OMP_WAIT_POLICY = 'ACTIVE'" in out and "ENV active" in out, out
