"""One model on many threads: every split of the work gives the same numbers, bit for bit.

The size cutoffs below which a stage keeps one thread are lowered here, so that small inputs
(fast, and run as plain Python under NUMBA_DISABLE_JIT=1 too) take the split paths: row
ranges that end off a word or off a block of equal scores, pieces with no rows, more pieces
than rows. The references are numpy's sorts, sklearn and the one-thread path (itself checked
against brute force elsewhere).
"""
import multiprocessing
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import _threads
from fastbias.prepare import memberships as prep
from fastbias.sort import order
from fastbias.sweep import counts, parallel
from fastbias.validate import values


@pytest.fixture
def split_everything(monkeypatch):
    """Every stage splits its work even on a few rows."""
    monkeypatch.setattr(order, "PARALLEL_SORT_MIN_KEYS", 1)
    monkeypatch.setattr(order, "PARALLEL_ORDER_MIN_ROWS", 1)  # the row order's class sorts
    monkeypatch.setattr(counts, "PARALLEL_WEIGHTED_MIN_ROWS", 1)  # weighted sums on threads
    monkeypatch.setattr(counts, "PARALLEL_COUNT_MIN_MEMBERSHIPS", 1)
    monkeypatch.setattr(prep, "PARALLEL_SCAN_MIN_ROWS", 1)
    monkeypatch.setattr(parallel, "CONCURRENT_SWEEP_MIN_ROWS", 1)  # class sort beside the scan
    monkeypatch.setattr(prep, "PARALLEL_COLUMNS_MIN_ROWS", 1)  # identity columns on threads
    monkeypatch.setattr(values, "PARALLEL_BOUNDS_MIN_VALUES", 1)  # score bounds on threads


def numpy_keys(values):
    """The order-preserving unsigned keys of float scores, by numpy (the reference)."""
    uint = {4: np.uint32, 8: np.uint64}[values.dtype.itemsize]
    bits = (values + 0.0).view(uint)  # -0.0 -> +0.0
    sign = uint(1) << uint(values.dtype.itemsize * 8 - 1)
    return np.where(bits & sign, ~bits, bits | sign)


# ------------------------------------------------------------------ the pool


def test_run_pieces_keeps_order_and_uses_at_most_workers_threads():
    seen, lock = {}, threading.Lock()

    def piece(j):
        with lock:
            seen.setdefault(threading.get_ident(), []).append(j)
        return j * j

    assert _threads.run_pieces(piece, range(10), 3) == [j * j for j in range(10)]
    assert len(seen) <= 3
    # each thread ran a contiguous share, the calling thread the first one
    assert seen[threading.get_ident()] == [0, 1, 2]
    assert sorted(j for share in seen.values() for j in share) == list(range(10))


def test_run_pieces_on_one_worker_stays_on_this_thread():
    me = threading.get_ident()
    assert _threads.run_pieces(lambda j: threading.get_ident(), range(4), 1) == [me] * 4


def test_run_pieces_raises_a_piece_error_after_every_piece_ran():
    done = []

    def piece(j):
        if j == 2:
            raise ValueError("piece 2 failed")
        done.append(j)

    with pytest.raises(ValueError, match="piece 2 failed"):
        _threads.run_pieces(piece, range(4), 4)
    assert sorted(done) == [0, 1, 3]


def test_nested_run_pieces_runs_inline_without_deadlock():
    def outer(j):
        return sum(_threads.run_pieces(lambda i: i + j, range(5), 8))

    # more outer pieces than the pool holds threads: inner calls must not wait on the pool
    assert _threads.run_pieces(outer, range(12), 3) == [10 + 5 * j for j in range(12)]


@pytest.mark.parametrize("n, workers, least, expected", [
    (0, 8, 1, 1), (10, 8, 1, 8), (10, 8, 3, 3), (10, 1, 1, 1), (99, 16, 100, 1)])
def test_pieces_for(n, workers, least, expected):
    assert _threads.pieces_for(n, workers, least) == expected


@pytest.mark.parametrize("n, workers, least, expected", [
    (10**6, 1, 1, 1),        # one thread: one job, however much work
    (10**6, 2, 1, 8),        # four jobs a thread
    (10**6, 16, 1, 64),
    (10**6, 16, 50_000, 20),  # none smaller than the least
    (99, 16, 100, 1), (0, 4, 1, 1)])
def test_jobs_for(n, workers, least, expected):
    assert _threads.JOBS_PER_WORKER == 4
    assert _threads.jobs_for(n, workers, least) == expected


# ------------------------------------------------------------------ the stages, split


def class_sort_case(seed, dtype, levels, n=1_003):
    """Scores (one value, ``levels`` tied values or continuous; -0.0 among them) and labels."""
    rng = np.random.default_rng(seed)
    values = (rng.normal(size=n) if levels is None
              else rng.integers(0, levels, n) - levels // 2).astype(dtype)
    values[::97] = -0.0
    return values, rng.random(n) < 0.3


def assert_class_keys(got, values, labels):
    """``got`` (SortedClasses) holds each class's scores sorted, as numpy sorts them."""
    np.testing.assert_array_equal(got.neg_keys, numpy_keys(np.sort(values[~labels])))
    np.testing.assert_array_equal(got.pos_keys, numpy_keys(np.sort(values[labels])))


@pytest.mark.parametrize("workers", [2, 3, 5, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("levels", [1, 7, None])  # one value, heavy ties, continuous
def test_sort_classes_split_equals_numpy(split_everything, workers, dtype, levels):
    values, labels = class_sort_case(workers, dtype, levels)
    assert_class_keys(order.sort_classes(values, labels, workers), values, labels)


def member_sort_case(dtype, n=900, k=5):
    """Scores tied across many rows, labels, a dense identity matrix and its Memberships."""
    rng = np.random.default_rng(7)
    values = (rng.integers(0, 40, n) / 8).astype(dtype)
    labels = rng.random(n) < 0.4
    matrix = rng.random((n, k)) < 0.3
    return values, labels, matrix, prep.prepare_memberships_dense(
        labels, matrix, [f"g{j}" for j in range(k)])


def assert_member_keys(keys, codes, values, labels, matrix):
    """Every membership by score, stably (ties keep row, then subgroup), as numpy sorts them."""
    rows, groups = np.nonzero(matrix)  # row-major: each row's subgroups in order
    expected = np.argsort(values[rows], kind="stable")
    np.testing.assert_array_equal(keys, numpy_keys(values[rows][expected]))
    np.testing.assert_array_equal(codes, (2 * groups + labels[rows])[expected])


@pytest.mark.parametrize("workers", [2, 3, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("levels", [1, 7, None])  # one value, heavy ties, continuous
def test_row_order_split_equals_the_three_sorts_and_numpy(split_everything, workers, dtype,
                                                          levels):
    """The row order of a weighted call: both classes in one bucket sort carrying the rows,
    split among the threads, gives the arrays of the three radix sorts side by side, and
    numpy's stable argsort of each class (-0.0 among the scores, read back as +0.0)."""
    values, labels = class_sort_case(workers, dtype, levels)
    m = prep.prepare_memberships_dense(labels, np.c_[values > 0, values < 0.5],
                                       ["pos", "low"])
    split = order.order_scores(values, m, workers)
    whole = order.order_scores(values, m, 1)
    for field in ("id_sorted", "id_order", "neg_rows", "pos_rows", "neg_sorted", "pos_sorted"):
        got, want = getattr(split, field), getattr(whole, field)
        assert got.dtype == want.dtype, field
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=field)
    # the identity rows by score: their scores in that order (the walks read them so)
    identity = values[m.identity_rows]
    np.testing.assert_array_equal(split.id_order, np.argsort(identity, kind="stable"))
    np.testing.assert_array_equal(numpy_keys(split.id_sorted),
                                  numpy_keys(identity[split.id_order]))
    for label, rows, scores in ((False, split.neg_rows, split.neg_sorted),
                                (True, split.pos_rows, split.pos_sorted)):
        expected = np.flatnonzero(labels == label)
        expected = expected[np.argsort(values[expected], kind="stable")]
        np.testing.assert_array_equal(rows, expected)
        np.testing.assert_array_equal(numpy_keys(scores), numpy_keys(values[expected]))
        assert not np.signbit(scores[scores == 0]).any()


@pytest.mark.parametrize("workers", [2, 3, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sort_memberships_split_equals_numpy(split_everything, workers, dtype):
    values, labels, matrix, m = member_sort_case(dtype)
    assert_member_keys(*order.sort_memberships(values, m, workers), values, labels, matrix)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 65, 1_000])
@pytest.mark.parametrize("workers", [2, 3, 16])
def test_dense_scan_split_equals_numpy(split_everything, n, workers):
    rng = np.random.default_rng(n)
    k = 3
    matrix = rng.random((n, k)) < 0.2
    matrix[n // 2:n // 2 + 5] = False  # a piece may hold no memberships
    labels = rng.random(n) < 0.5
    m = prep.prepare_memberships_dense(labels, matrix, ["a", "b", "c"], workers)
    rows, groups = np.nonzero(matrix)
    identity_rows, first = np.unique(rows, return_index=True)
    np.testing.assert_array_equal(m.identity_rows, identity_rows)
    np.testing.assert_array_equal(m.row_ptr, np.append(first, rows.size))
    np.testing.assert_array_equal(m.row_groups, groups)
    np.testing.assert_array_equal(m.identity_labels, labels[identity_rows])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("workers", [1, 2, 3, 7])
def test_score_bounds_on_threads_refuse_nan_and_infinity_in_any_piece(split_everything, workers,
                                                                      dtype):
    rng = np.random.default_rng(workers)
    s = rng.normal(size=13).astype(dtype)
    s[5] = -0.0
    low, high = values.finite_bounds(s, "y_score", workers=workers)
    assert (low, high) == (s.min(), s.max()) and low.dtype == high.dtype == dtype
    # the sorts' key range from the validated bounds is the one they find themselves
    assert order.score_key_range(s, workers, (low, high)) == order.score_key_range(s, workers)
    for position in (0, 6, 12):  # the first, a middle and the last piece
        for bad, counts_text in ((np.nan, "1 NaN and 0 infinite"),
                                 (np.inf, "0 NaN and 1 infinite"),
                                 (-np.inf, "0 NaN and 1 infinite")):
            broken = s.copy()
            broken[position] = bad
            with pytest.raises(ValueError, match=rf"y_score has {counts_text} value\(s\) "
                                                 rf"\(first at position {position}\)"):
                values.finite_bounds(broken, "y_score", workers=workers)
            with pytest.raises(ValueError, match=rf"{counts_text}.*position {position}"):
                fastbias.bias_metrics(np.arange(13) % 2, broken, {"g": np.arange(13) < 5},
                                      n_jobs=workers)


@pytest.mark.parametrize("pieces", [1, 2, 3, 16, 40])
def test_bucket_runs_cover_every_bucket_once_in_equal_shares(pieces):
    """The runs of buckets that the last round sorts: the classes' buckets, then the
    memberships', each once and in order, cut where numpy's searchsorted cuts the running
    key counts at equal shares; many empty buckets, and arrays without buckets."""
    from fastbias.sort import _kernels as SK

    rng = np.random.default_rng(pieces)
    starts = [np.concatenate([[0], np.cumsum(rng.integers(0, 50, n) * (rng.random(n) < 0.05))])
              for n in (512, 256)]
    for class_start, member_start in (starts, (starts[0], np.zeros(1, np.int64)),
                                      (np.zeros(1, np.int64), starts[1])):
        runs = SK.bucket_runs(class_start, member_start, pieces)
        assert runs.shape == (pieces, 4)
        covered = [(a, d) for run in runs for a in (0, 1)
                   for d in range(run[2 * a], run[2 * a + 1])]
        n_class, n_member = len(class_start) - 1, len(member_start) - 1
        assert covered == [(0, d) for d in range(n_class)] + [(1, d) for d in range(n_member)]
        ends = np.cumsum(np.concatenate([np.diff(class_start), np.diff(member_start)]))
        total = ends[-1] if ends.size else 0
        cuts = np.searchsorted(ends, (np.arange(1, pieces) * total) // pieces, side="right")
        # (a run's first bucket over both arrays: its first of the classes' array, which is
        # n_class once the run starts in the memberships', plus its first of theirs)
        first_buckets = [run[0] + run[2] for run in runs[1:]]
        np.testing.assert_array_equal(first_buckets, cuts)


def test_bucket_runs_cut_after_a_bucket_that_ends_at_a_share():
    """A share that ends exactly at a bucket's end: that bucket stays in the run before
    (numpy's searchsorted with side="right"), across the two arrays too."""
    from fastbias.sort import _kernels as SK

    runs = SK.bucket_runs(np.arange(0, 50, 10), np.arange(0, 30, 10), 3)  # 4 + 2 buckets of 10
    np.testing.assert_array_equal(runs, [[0, 2, 0, 0], [2, 4, 0, 0], [4, 4, 0, 2]])


@pytest.mark.parametrize("pieces", [1, 3, 16])
def test_bucket_slots_are_the_prefix_sums_numpy_gives(pieces):
    from fastbias.sort import _kernels as SK

    rng = np.random.default_rng(pieces)
    counts = rng.integers(0, 5, (pieces, 256)) * (rng.random((pieces, 256)) < 0.3)
    bucket_start, next_slot = SK.bucket_slots(counts.astype(np.int64))
    np.testing.assert_array_equal(bucket_start,
                                  np.concatenate([[0], np.cumsum(counts.sum(axis=0))]))
    np.testing.assert_array_equal(next_slot,
                                  bucket_start[:-1] + np.cumsum(counts, axis=0) - counts)


# ------------------------------------------------------------------ the entry points


def tied_case(rng, n=2_000, k=4):
    y = rng.random(n) < 0.3
    s = (rng.integers(0, 30, n) / 30).astype(np.float32)
    groups = rng.random((n, k)) < 0.25
    groups[:, -1] = False
    groups[:40, -1] = True  # a small subgroup that may sit in one piece only
    return y, s, groups


@pytest.mark.parametrize("workers", [2, 3, 7])
def test_bias_metrics_same_bits_on_any_number_of_threads(split_everything, workers):
    rng = np.random.default_rng(workers)
    y, s, groups = tied_case(rng)
    one = fastbias.bias_metrics(y, s, groups, n_jobs=1)
    many = fastbias.bias_metrics(y, s, groups, n_jobs=workers)
    pd_equal(one, many)
    assert one.attrs == many.attrs
    for j in range(groups.shape[1]):
        member = groups[:, j]
        assert one.iloc[j]["subgroup_auc"] == pytest.approx(
            roc_auc_score(y[member], s[member]), abs=1e-15)
    w = rng.random(y.size) * 3
    pd_equal(fastbias.bias_metrics(y, s, groups, sample_weight=w, n_jobs=1),
             fastbias.bias_metrics(y, s, groups, sample_weight=w, n_jobs=workers))
    for ci in ("delong", "bootstrap"):
        kwargs = {"ci": ci, "n_boot": 20, "random_state": 3}
        pd_equal(fastbias.bias_metrics(y, s, groups, n_jobs=1, **kwargs),
                 fastbias.bias_metrics(y, s, groups, n_jobs=workers, **kwargs))


def test_evaluate_and_evaluator_same_bits_on_any_number_of_threads(split_everything):
    import pandas as pd

    rng = np.random.default_rng(11)
    y, s, groups = tied_case(rng, n=1_500)
    df = pd.DataFrame(groups, columns=[f"g{j}" for j in range(groups.shape[1])])
    df["label"], df["m1"], df["m2"] = y, s, np.round(s + rng.normal(0, 0.1, y.size), 2)
    names = list(df.columns[:groups.shape[1]])
    one = fastbias.evaluate(df, label="label", scores=["m1", "m2"], subgroups=names, n_jobs=1)
    for n_jobs in (2, 5):
        many = fastbias.evaluate(df, label="label", scores=["m1", "m2"], subgroups=names,
                                 n_jobs=n_jobs)
        pd_equal(one.table, many.table)
    ev1 = fastbias.BiasEvaluator(y, df[names], n_jobs=1)
    ev4 = fastbias.BiasEvaluator(y, df[names], n_jobs=4)
    pd_equal(ev1.metrics(s), ev4.metrics(s))
    pd_equal(ev1.metrics_many(np.c_[s, df["m2"]]).table, ev4.metrics_many(np.c_[s, df["m2"]]).table)


def test_n_jobs_is_checked():
    rng = np.random.default_rng(0)
    y, s, groups = tied_case(rng, n=50)
    for bad in (0, -2, 1.5, True, "4"):
        with pytest.raises(ValueError, match="n_jobs"):
            fastbias.bias_metrics(y, s, groups, n_jobs=bad)


def pd_equal(a, b):
    import pandas as pd

    pd.testing.assert_frame_equal(a, b, check_exact=True)


# ------------------------------------------------------------------ first use


class _FakeKernel:
    """A dispatcher with nothing compiled and no cache index on disk."""

    signatures = []

    class _cache:  # noqa: N801 (numba's attribute names)
        class _cache_file:  # noqa: N801
            _index_path = "/nonexistent/fastbias-test.nbi"


def test_first_use_is_announced_once_with_its_cost(caplog, monkeypatch):
    from fastbias import _numba_cache

    monkeypatch.setattr(_numba_cache, "_ready", set())
    with caplog.at_level("INFO", logger="fastbias"):
        _numba_cache.announce_compiling("test kernels", [_FakeKernel()] * 4, in_place=False)
        _numba_cache.announce_compiling("test kernels", [_FakeKernel()] * 4, in_place=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
    assert lines == ["compiling kernels for first use (test kernels: 4 kernels, about 2 s, "
                     "cached afterwards)"]


class _SlowFakeKernel(_FakeKernel):
    """Looking whether it is compiled takes a while (a race would show)."""

    @property
    def signatures(self):
        time.sleep(0.02)
        return []


def test_models_in_threads_announce_first_use_once(caplog, monkeypatch):
    """Two models bootstrapped in two threads printed the same notice twice."""
    from fastbias import _numba_cache

    monkeypatch.setattr(_numba_cache, "_ready", set())
    start = threading.Barrier(6)

    def announce(_):
        start.wait()
        return _numba_cache.announce_compiling("bootstrap", [_SlowFakeKernel()],
                                               in_place=False)

    with caplog.at_level("INFO", logger="fastbias"):
        with ThreadPoolExecutor(6) as pool:
            missing = list(pool.map(announce, range(6)))
    lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
    assert lines == ["compiling kernels for first use (bootstrap: 1 kernel, about 1 s, "
                     "cached afterwards)"]
    assert sorted(missing) == [0] * 5 + [1]


def test_nothing_is_announced_for_compiled_kernels(caplog, monkeypatch):
    from fastbias import _numba_cache
    from fastbias.sort import _kernels as K

    order.sort_classes(np.arange(5, dtype=np.float32), np.ones(5, dtype=bool))  # compiled now
    monkeypatch.setattr(_numba_cache, "_ready", set())
    with caplog.at_level("INFO", logger="fastbias"):
        _numba_cache.announce_compiling("sorts", [K.class_top_digit_counts, K.scatter_class_keys])
    assert not [r for r in caplog.records if r.name == "fastbias"]


def _fresh_kernel():
    """A kernel of its own (not cached), compiled by its first call."""
    import numba

    @numba.njit
    def twice(x):
        return 2 * x

    return twice


def test_a_call_that_compiles_in_place_says_so_as_a_kernel_compiles(caplog, monkeypatch):
    """Which kernels of a set a call compiles depends on its data (a small call sorts without
    the bucket kernels): a set that does not compile after all is not announced (every run
    of the demo said "compiling" once it compiled in place), and one that does is announced
    once, as its first kernel compiles."""
    from fastbias import _numba_cache

    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    used, unused, other = _fresh_kernel(), _fresh_kernel(), _fresh_kernel()
    with caplog.at_level("INFO", logger="fastbias"):
        assert _numba_cache.announce_compiling("unused set", [unused]) == 1
        assert _numba_cache.announce_compiling("test set", [used, _FakeKernel()]) == 2
        other(1)  # not of a set: nothing
        assert not [r for r in caplog.records if r.name == "fastbias"]
        assert used(3) == 6 and used(2.5) == 5.0  # two versions compile: one line
    lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
    assert lines == ["compiling kernels for first use (test set: about 1 s, cached afterwards)"]
    assert id(used) not in _numba_cache._pending and id(unused) in _numba_cache._pending


def test_sets_sharing_a_kernel_each_say_so_once(caplog, monkeypatch):
    """"counting" and "weighted counting" share kernels: the shared one's compile says the
    first set's line; the second set's line waits for a kernel of its own."""
    from fastbias import _numba_cache

    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    shared, first_only, second_only = _fresh_kernel(), _fresh_kernel(), _fresh_kernel()
    with caplog.at_level("INFO", logger="fastbias"):
        _numba_cache.announce_compiling("first set", [shared, first_only])
        _numba_cache.announce_compiling("second set", [shared, second_only, _FakeKernel()])
        shared(1)
        first_only(1)  # (its set said so already)
        lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
        assert lines == ["compiling kernels for first use (first set: about 1 s, cached "
                         "afterwards)"]
        second_only(1)
    lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
    assert lines[1:] == ["compiling kernels for first use (second set: about 2 s, cached "
                         "afterwards)"]
    assert not _numba_cache._pending  # (both lines said: nothing kept, the fake's entry too)


def test_a_kept_line_waits_for_the_version_of_its_kind(caplog, monkeypatch):
    """The exact walks are versions of the float walks' kernels: the line kept for them is
    not logged when a float version compiles."""
    from numba import types

    from fastbias import _numba_cache

    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    # (a kernel without a cache has no index to look for its versions in)
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher, kind=None: True)
    kernel = _fresh_kernel()
    with caplog.at_level("INFO", logger="fastbias"):
        _numba_cache.announce_compiling("float64 version", [kernel], seconds_each=2.5,
                                        kind=lambda signature: signature[0] == types.float64)
        kernel(1)  # an int64 version
        assert not [r for r in caplog.records if r.name == "fastbias"]
        kernel(1.5)
    lines = [r.getMessage() for r in caplog.records if r.name == "fastbias"]
    assert lines == ["compiling kernels for first use (float64 version: about 2 s, cached "
                     "afterwards)"]


def test_compiling_in_place_turns_the_tier_off_while_open(monkeypatch):
    from fastbias.sweep import first_call

    monkeypatch.delenv("FASTBIAS_FIRST_CALL", raising=False)
    assert first_call.tier_enabled()
    with first_call.compiling_in_place():
        assert not first_call.tier_enabled()
        with first_call.compiling_in_place():
            assert not first_call.tier_enabled()
        assert not first_call.tier_enabled()
    assert first_call.tier_enabled()
    with pytest.raises(KeyError), first_call.compiling_in_place():
        raise KeyError("the block ends by an error")
    assert first_call.tier_enabled()


def test_the_demo_compiles_in_place_what_its_data_needs(capsys, monkeypatch, tmp_path):
    """With the first-call tier on, the demo compiled every version of the counting family
    in a background process and waited for it (15 s on a 2-core VM); it compiles what its
    data needs, here (5 s), and starts no background compilation."""
    from fastbias import _numba_cache, cli
    from fastbias.sweep import first_call

    monkeypatch.delenv("FASTBIAS_FIRST_CALL", raising=False)
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    started = []
    monkeypatch.setattr(first_call, "_start_children", lambda: started.append(True))
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(first_call, "_runner", [])
    assert cli.main(["demo", "--rows", "3000", "--identities", "2", "--out",
                     str(tmp_path / "demo.json")]) == 0
    assert not first_call._requested and not started
    assert "counts in numpy" not in capsys.readouterr().err


def test_cli_shows_the_first_use_note_unless_quiet(capsys, monkeypatch, tmp_path):
    from numba.core import event

    import fastbias
    from fastbias import _numba_cache, cli
    from fastbias.sort import _kernels as K

    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    evaluate = fastbias.evaluate

    def evaluate_compiling(*args, **kwargs):
        # (the kernels are compiled in this process already: numba's event, as a cold one)
        with event.trigger_event("numba:compile", data={"dispatcher": K.class_top_digit_counts,
                                                        "args": None, "return_type": None}):
            pass
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(fastbias, "evaluate", evaluate_compiling)
    out = tmp_path / "demo.json"
    assert cli.main(["demo", "--rows", "3000", "--identities", "2", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "fastbias: compiling kernels for first use (counting: " in err
    assert "cached afterwards)" in err
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    assert cli.main(["demo", "--rows", "3000", "--identities", "2", "--out",
                     str(tmp_path / "quiet.json"), "--quiet"]) == 0
    assert "compiling" not in capsys.readouterr().err


def test_concurrent_calls_that_grow_the_pool_all_finish():
    # callers on several threads ask for ever larger pools at once: none may submit to a pool
    # that another is replacing, and every result comes back in order
    from concurrent.futures import ThreadPoolExecutor

    def call(workers):
        return _threads.run_pieces(lambda j: j * workers, range(3 * workers), workers)

    with ThreadPoolExecutor(max_workers=8) as callers:
        results = list(callers.map(call, [2, 9, 3, 17, 5, 33, 4, 2] * 3))
    for workers, got in zip([2, 9, 3, 17, 5, 33, 4, 2] * 3, results):
        assert got == [j * workers for j in range(3 * workers)]


def test_run_pieces_runs_inline_when_no_thread_can_start(monkeypatch):
    # at interpreter shutdown (a compile finishing on a background thread) executors refuse
    # new work: the pieces then all run on the calling thread
    def refuse(*args):
        raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(_threads, "_submit_to_pool", refuse)
    assert _threads.run_pieces(lambda j: j + 1, range(5), 4) == [1, 2, 3, 4, 5]


# ------------------------------------------------------------------ jobs shared by two threads


def test_shared_jobs_run_each_job_once_on_the_poster_and_the_helper():
    share, ran, lock = _threads.SharedJobs(), [], threading.Lock()

    def job(j):
        time.sleep(0.002)
        with lock:
            ran.append((j, threading.get_ident()))

    def poster():
        try:
            time.sleep(0.01)  # the helper waits for the jobs first
            share.post(job, range(40))
            share.finish()
        finally:
            share.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(poster)
        share.help()
        future.result()
    assert sorted(j for j, _ in ran) == list(range(40))
    assert len({thread for _, thread in ran}) == 2  # both threads took jobs


def test_shared_jobs_helper_returns_when_nothing_is_posted():
    share = _threads.SharedJobs()
    threading.Timer(0.01, share.close).start()
    share.help()  # returns once closed, with nothing to do


def test_shared_jobs_failure_on_the_helper_is_raised_on_both_sides():
    share = _threads.SharedJobs()
    started = threading.Event()
    done = []

    def job(j):
        if threading.current_thread() is threading.main_thread() and j > 0:
            raise ValueError(f"job {j} failed")
        started.set()
        time.sleep(0.02)
        done.append(j)

    def poster():
        share.post(job, range(30))
        share.finish()

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(poster)
        started.wait()
        with pytest.raises(ValueError, match="failed"):
            share.help()
        with pytest.raises(RuntimeError, match="left undone"):
            future.result()
    assert len(done) < 29  # the rest was abandoned, not run


def test_shared_jobs_closed_before_all_were_taken_make_the_poster_fail():
    share = _threads.SharedJobs()
    share.post(lambda j: share.close() if j == 1 else None, range(5))
    with pytest.raises(RuntimeError, match="left undone"):
        share.finish()


def test_a_failing_membership_prepare_stops_the_shared_class_sort(monkeypatch):
    """The class sort beside the memberships: an error while preparing them is raised, and the
    sort's thread does not wait for ever for help."""
    monkeypatch.setattr(parallel, "CONCURRENT_SWEEP_MIN_ROWS", 1)
    rng = np.random.default_rng(0)
    s, y = rng.random(500), rng.random(500) < 0.3

    def prepare(workers, compiled=True):
        raise ValueError("cannot read the subgroups")

    with pytest.raises(ValueError, match="cannot read"):
        parallel.sort_and_count(s, None, prepare, y, workers=2)


def _bias_metrics_in_child(y, s, groups):
    return fastbias.bias_metrics(y, s, groups, n_jobs=2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_still_splits_its_work(split_everything):
    """multiprocessing's default on Linux forks: the parent's pool threads are not in the
    child, which used to wait for them for ever on its first split call."""
    y, s, groups = tied_case(np.random.default_rng(5))
    expected = fastbias.bias_metrics(y, s, groups, n_jobs=2)  # the pool exists now
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got = pool.apply_async(_bias_metrics_in_child, (y, s, groups)).get(timeout=60)
    pd_equal(expected, got)
    assert expected.attrs == got.attrs


def test_run_jobs_keeps_order_whichever_thread_takes_a_job():
    seen, lock = set(), threading.Lock()

    def job(j):
        time.sleep(0.02 if j == 0 else 0.001)  # the first job is long: the other thread goes on
        with lock:
            seen.add(threading.get_ident())
        return j * j

    assert _threads.run_jobs(job, range(12), 2) == [j * j for j in range(12)]
    assert len(seen) == 2
    assert _threads.run_jobs(job, range(3), 1) == [0, 1, 4]
    assert _threads.run_jobs(job, [], 4) == []


def test_run_jobs_raises_a_job_error():
    def job(j):
        if j == 5:
            raise ValueError("job 5 failed")
        return j

    with pytest.raises(ValueError, match="job 5 failed"):
        _threads.run_jobs(job, range(10), 2)


def test_identity_columns_read_on_threads_raise_for_the_first_bad_column(split_everything):
    """Columns read on several threads: the same error as on one, for the first bad column
    in the order given, whichever thread met which."""
    import pandas as pd

    rng = np.random.default_rng(2)
    n = 400
    df = pd.DataFrame({"y": rng.random(n) < 0.3, "s": rng.random(n)})
    for j in range(12):
        df[f"g{j}"] = np.where(rng.random(n) < 0.2, 1.0, np.where(rng.random(n) < 0.5, np.nan, 0.0))
    df["g3"] = ["text"] * n  # refused: not numeric
    df["g9"] = ["other"] * n
    names = [f"g{j}" for j in range(12)]
    for _ in range(5):
        with pytest.raises(TypeError, match="'g3'"):
            fastbias.evaluate(df, label="y", scores="s", subgroups=names, n_jobs=2)
    good = [name for name in names if name not in ("g3", "g9")]
    columns = {name: df[name].to_numpy() for name in good}  # bias_metrics reads them too
    for kwargs in ({}, {"sample_weight": rng.random(n)}):  # weighted: prepare gets every thread
        pd_equal(fastbias.bias_metrics(df["y"], df["s"], columns, subgroup_threshold=0.5,
                                       n_jobs=1, **kwargs),
                 fastbias.bias_metrics(df["y"], df["s"], columns, subgroup_threshold=0.5,
                                       n_jobs=3, **kwargs))
    one = fastbias.evaluate(df, label="y", scores="s", subgroups=good, n_jobs=1)
    many = fastbias.evaluate(df, label="y", scores="s", subgroups=good, n_jobs=2)
    pd_equal(one.table, many.table)


@pytest.mark.parametrize("extra, name", [({}, "out-of-core counting: about 8 s"),
                                         ({"ci": "delong", "sample_weight": "w"},
                                          "out-of-core weighted counting with placement sums: "
                                          "about 15 s")])
def test_streaming_says_it_compiles_on_first_use(caplog, monkeypatch, tmp_path, extra, name):
    """Out of core a fresh environment compiled for 8-15 s without a word (measured on the
    CLI's streamed path); now the one line of the in-memory calls, as a kernel starts."""
    import logging

    import pandas as pd
    from numba.core import event

    import fastbias
    from fastbias import _numba_cache, streaming
    from fastbias.prepare import _kernels as PK

    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher, *kind: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(_numba_cache, "_pending", {})
    announce = streaming.announce_compiling

    def announce_then_compile(*args, **kwargs):
        count = announce(*args, **kwargs)
        # (the kernels are compiled in this process already: numba's event, as a cold one)
        with event.trigger_event("numba:compile", data={"dispatcher": PK.membership_codes,
                                                        "args": None, "return_type": None}):
            pass
        return count

    monkeypatch.setattr(streaming, "announce_compiling", announce_then_compile)
    rng = np.random.default_rng(0)
    pd.DataFrame({"y": rng.random(300) < 0.4, "s": rng.random(300), "g": rng.random(300) < 0.3,
                  "w": rng.random(300)}).to_csv(tmp_path / "d.csv", index=False)
    with caplog.at_level(logging.INFO, logger="fastbias"):
        fastbias.evaluate_csv(tmp_path / "d.csv", label="y", scores="s", subgroups=["g"],
                              **extra)
    lines = [r.getMessage() for r in caplog.records if "first use" in r.getMessage()]
    assert lines == [f"compiling kernels for first use ({name}, cached afterwards)"]
