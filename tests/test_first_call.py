"""The first call in a fresh environment counts in numpy while the kernels compile: the same bits.

References: the kernels' counts (themselves checked against brute force and sklearn elsewhere)
and sklearn's roc_auc_score; heavy ties, signed zeros, empty, one-class and whole-data subgroups.
"""
import os
import warnings
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias import _numba_cache
from fastbias.prepare.memberships import prepare_subgroups
from fastbias.sweep import first_call
from fastbias.sweep.counts import sweep_counts
from fastbias.sweep.first_call import counts_in_numpy
from fastbias.validate.errors import UndefinedMetricWarning


def assert_same_memberships(a, b):
    for name in ("identity_rows", "row_ptr", "row_groups", "identity_labels"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.names == b.names


def assert_same_counts(a, b):
    np.testing.assert_array_equal(a.counts, b.counts)
    assert (a.total_neg, a.total_pos, a.twice_overall_u) == (b.total_neg, b.total_pos,
                                                             b.twice_overall_u)
    np.testing.assert_array_equal(a.cell_rows, b.cell_rows)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_numpy_counts_equal_the_kernels(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    n = data.draw(st.integers(1, 400))
    k = data.draw(st.integers(1, 5))
    levels = data.draw(st.sampled_from([1, 2, 7, 1000]))
    dtype = data.draw(st.sampled_from([np.float32, np.float64]))
    y = rng.random(n) < data.draw(st.sampled_from([0.0, 0.3, 1.0]))
    s = ((rng.integers(0, levels, n) - levels // 2) / 3).astype(dtype)
    s[rng.random(n) < 0.1] = -0.0
    groups = rng.random((n, k)) < rng.choice([0.0, 0.2, 1.0], k)
    kernels = prepare_subgroups(y, groups)
    numpy = prepare_subgroups(y, groups, compiled=False)
    assert_same_memberships(kernels, numpy)
    assert_same_counts(sweep_counts(s, kernels), counts_in_numpy(s, numpy))


@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int16, np.float32, "boolean", "Float64"])
@pytest.mark.parametrize("threshold", [None, 0.5, 2])
def test_numpy_memberships_equal_the_kernels_for_columns(dtype, threshold):
    rng = np.random.default_rng(3)
    n = 300
    votes = rng.integers(0, 4, (n, 3))
    frame = pd.DataFrame({f"g{j}": votes[:, j] for j in range(3)})
    if dtype in (bool, "boolean"):
        frame = frame >= 2
        threshold = None if threshold == 2 else threshold
    frame = frame.astype(dtype)
    y = rng.random(n) < 0.4
    kept = rng.random(n) < 0.9
    for subgroups in (frame, {c: frame[c].to_numpy() for c in frame}):
        try:
            kernels = prepare_subgroups(y[kept], subgroups, threshold, kept)
        except (TypeError, ValueError) as error:  # the readers refuse it: both must
            with pytest.raises(type(error)):
                prepare_subgroups(y[kept], subgroups, threshold, kept, compiled=False)
            continue
        assert_same_memberships(kernels,
                                prepare_subgroups(y[kept], subgroups, threshold, kept,
                                                  compiled=False))


@pytest.fixture
def cold(monkeypatch):
    """A process whose kernels look uncompiled, with no background compilation yet (and the
    first-call tier on, as it is outside the test suite)."""
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "1")
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(first_call, "_children", {})
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(first_call, "_runner", [])
    monkeypatch.setattr(_numba_cache, "_pending", {})
    yield
    first_call.wait_until_compiled()


@pytest.fixture
def compiling(cold, monkeypatch):
    """As ``cold``, with background compilations that never finish (no child starts): every
    call that may compute in numpy does."""
    monkeypatch.setattr(first_call, "_start_children", lambda: first_call._runner.clear())


def test_a_cold_call_counts_in_numpy_and_compiles_in_the_background(cold, caplog):
    rng = np.random.default_rng(5)
    n = 5_000
    y = rng.random(n) < 0.3
    s = (rng.integers(0, 40, n) / 40).astype(np.float32)
    groups = rng.random((n, 4)) < 0.2
    with caplog.at_level("INFO", logger="fastbias"):
        got = fastbias.bias_metrics(y, s, groups)
    assert any("this call counts in numpy meanwhile" in r.getMessage() for r in caplog.records)
    assert first_call._requested == ["counting"]
    assert first_call.still_compiling()  # (the child takes seconds: it has not finished yet)
    again = fastbias.bias_metrics(y, s, groups)  # numpy again meanwhile, no second child
    assert first_call._requested == ["counting"]
    first_call.wait_until_compiled()
    assert first_call._children["counting"].returncode == 0
    assert not first_call.still_compiling()
    expected = fastbias.bias_metrics(y, s, groups, n_jobs=1)  # the kernels
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    pd.testing.assert_frame_equal(again, expected, check_exact=True)
    assert got.attrs == expected.attrs
    member = groups[:, 2]
    assert got.iloc[2]["subgroup_auc"] == pytest.approx(roc_auc_score(y[member], s[member]),
                                                        abs=1e-15)


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_a_cold_evaluate_counts_in_numpy_and_equals_the_kernels(cold, missing_subgroup):
    from fastbias.synthetic import make_jigsaw_like

    df = make_jigsaw_like(n_rows=6_000, n_identities=5, random_state=3)
    names = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")]
    kwargs = dict(label="toxicity", scores=["model_fair", "model_biased"], subgroups=names,
                  missing_subgroup=missing_subgroup)
    got = fastbias.evaluate(df, **kwargs)
    assert first_call._requested == ["counting"]
    first_call.wait_until_compiled()
    expected = fastbias.evaluate(df, **kwargs)  # the kernels
    pd.testing.assert_frame_equal(got.table, expected.table, check_exact=True)
    pd.testing.assert_series_equal(got.overall_auc, expected.overall_auc, check_exact=True)


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="kernels are cached only when they are compiled")
def test_a_script_ends_at_once_and_its_child_fills_the_cache(tmp_path):
    # a fresh environment: the script answers in numpy and exits; the child outlives it and
    # leaves the counting kernels cached
    import fcntl
    import subprocess
    import sys
    import time

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script = ("import numpy as np, fastbias\n"
              "from fastbias.sweep import first_call\n"
              "rng = np.random.default_rng(0)\n"
              "y, s = rng.random(500) < 0.3, rng.random(500)\n"
              "fastbias.bias_metrics(y, s, rng.random((500, 2)) < 0.3)\n"
              "print(first_call._requested)\n")
    env = dict(first_call._child_environment(), NUMBA_CACHE_DIR=str(cache),
               FASTBIAS_FIRST_CALL="1")
    out = subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=300,
                         capture_output=True, text=True)
    assert out.stdout.strip() == "['counting']"
    lock = cache / "fastbias-warm-up.lock"
    for _ in range(600):  # the child takes its turn once it has imported fastbias
        if lock.exists():
            break
        time.sleep(0.1)
    with open(lock) as handle:
        with pytest.raises(BlockingIOError):  # still compiling after the script ended
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(handle, fcntl.LOCK_EX)  # its turn is over: the cache is filled
    cached = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    for name in ("_kernels.member_counts_in_range", "_kernels.sort_buckets",
                 "_kernels.scan_dense_into", "_kernels.build_row_csr",
                 "_kernels.threshold_column_rows", "_kernels.add_member_counts"):
        assert name in cached, name


def test_a_frozen_application_starts_no_child(cold, monkeypatch):
    # a frozen app's sys.executable is the app itself, not Python: never start it again
    import sys

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    rng = np.random.default_rng(8)
    y, s = rng.random(300) < 0.5, rng.random(300)
    groups = {"a": rng.random(300) < 0.4}
    got = fastbias.bias_metrics(y, s, groups)  # numpy, with no child compiling meanwhile
    assert first_call._requested == [] and not first_call.still_compiling()
    pd.testing.assert_frame_equal(got, fastbias.bias_metrics(y, s, groups), check_exact=True)


# --- weighted counts, DeLong and the bootstrap in numpy --------------------------------------
def tied_case(rng, n, k, weighted=True):
    levels = int(rng.choice([1, 3, 1000]))
    y = rng.random(n) < rng.choice([0.0, 0.3, 1.0])
    s = ((rng.integers(0, levels, n) - levels // 2) / 7).astype(rng.choice([np.float32,
                                                                              np.float64]))
    s[rng.random(n) < 0.1] = -0.0
    groups = rng.random((n, k)) < rng.choice([0.0, 0.2, 0.97, 1.0], k)
    w = rng.random(n) * 10.0 ** rng.integers(-8, 3, n) if weighted else None
    if weighted:
        w[rng.random(n) < 0.1] = 0.0
    return y, s, groups, w


@contextmanager
def prefix_chunks(rows: int):
    """The numpy tier's prefix sums made ``rows`` rows at a time (chunk joins on small data)."""
    saved = first_call.PREFIX_CHUNK_ROWS
    first_call.PREFIX_CHUNK_ROWS = rows
    try:
        yield
    finally:
        first_call.PREFIX_CHUNK_ROWS = saved


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(1, 300), k=st.integers(1, 4),
       chunk=st.sampled_from([1, 3, 64, 1 << 16]))
def test_numpy_weighted_counts_give_the_kernels_metrics(seed, n, k, chunk):
    # double-double sums in numpy: every metric within the certified tolerance of the kernel's
    from fastbias.metrics.table import table_from_counts

    y, s, groups, w = tied_case(np.random.default_rng(seed), n, k)
    m = prepare_subgroups(y, groups)
    kernels = table_from_counts(sweep_counts(s, m, w), warn=False)
    with prefix_chunks(chunk):
        numpy = table_from_counts(counts_in_numpy(s, m, w), warn=False)
    pd.testing.assert_frame_equal(numpy, kernels, check_exact=False, rtol=2.0 ** -50,
                                  atol=2.0 ** -70)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), n=st.integers(2, 40),
       chunk=st.sampled_from([1, 2, 5, 1 << 16]))
def test_numpy_weighted_counts_equal_exact_rationals(seed, n, chunk):
    from fastbias.metrics.table import table_from_counts
    from tests.reference import brute_force_metrics

    rng = np.random.default_rng(seed)
    y, s, groups, w = tied_case(rng, n, 3)
    groups[:, 2] = True
    groups[np.flatnonzero(~y)[:1], 2] = False  # a background of one negative...
    w[np.flatnonzero(~y)[:1]] = 1e-40  # ...of tiny weight: only the explicit cells keep it
    m = prepare_subgroups(y, groups)
    with prefix_chunks(chunk):
        table = table_from_counts(counts_in_numpy(s, m, w), warn=False)
    for j in range(3):
        want = brute_force_metrics(y, s, groups[:, j], w)
        for metric, value in want.items():
            got = table.iloc[j][metric]
            if np.isnan(value):
                assert np.isnan(got), (j, metric)
            else:
                assert got == pytest.approx(value, rel=2.0 ** -50, abs=2.0 ** -70), (j, metric)


@pytest.mark.parametrize("weighted", [False, True])
def test_numpy_delong_equals_the_kernels_and_the_pair_matrix(weighted):
    from fastbias.intervals.delong import standard_errors
    from fastbias.intervals.first_call import delong_in_numpy
    from fastbias.sort.order import SortedScores
    from tests.test_intervals import (
        _METRIC_SAMPLES,
        cells,
        delong_variance_reference,
    )

    rng = np.random.default_rng(9)
    for _ in range(25):
        n = int(rng.integers(2, 80))
        y, s, groups, _ = tied_case(rng, n, 3, weighted=False)
        w = rng.integers(1, 4, n).astype(np.float64) if weighted else None
        m = prepare_subgroups(y, groups)
        with np.errstate(all="ignore"):
            se, overall = delong_in_numpy(s, m, w)
            se_k, overall_k = standard_errors(SortedScores(s, m), w)
        np.testing.assert_allclose(overall, overall_k, rtol=1e-12, atol=0)
        rep = np.ones(n, int) if w is None else w.astype(int)
        yy, ss = np.repeat(y, rep), np.repeat(s.astype(np.float64), rep)
        np.testing.assert_allclose(overall ** 2, delong_variance_reference(ss[yy], ss[~yy]),
                                   rtol=1e-9, atol=0)
        for j in range(3):
            cell = {key: np.repeat(v, rep) for key, v in cells(y, groups[:, j]).items()}
            for metric, value in se.items():
                # a variance that is 0 up to rounding leaves a standard error of ~1e-8
                np.testing.assert_allclose(value[j], se_k[metric][j], rtol=1e-9, atol=0)
                x_cell, y_cell = _METRIC_SAMPLES[metric]
                ref = delong_variance_reference(ss[cell[x_cell]], ss[cell[y_cell]])
                np.testing.assert_allclose(value[j] ** 2, ref, rtol=1e-9, atol=0)


@pytest.mark.parametrize("spread", [0, 6])
def test_numpy_delong_with_real_weights_equals_the_kernels(spread):
    from fastbias.intervals.delong import standard_errors
    from fastbias.intervals.first_call import delong_in_numpy
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(21 + spread)
    for _ in range(25):
        n = int(rng.integers(2, 300))
        y, s, groups, _ = tied_case(rng, n, 3, weighted=False)
        w = rng.random(n) * 10.0 ** rng.uniform(-spread, spread, n)
        w[rng.random(n) < 0.1] = 0.0
        m = prepare_subgroups(y, groups)
        with np.errstate(all="ignore"):
            se, overall = delong_in_numpy(s, m, w)
            se_k, overall_k = standard_errors(SortedScores(s, m), w)
        # float sums of weights over 12 decades, added in another order, and their
        # differences: to rounding, which such weights make large (1e-8 on a 6e-4 standard
        # error of a positive AEG, with background sums that cancel)
        np.testing.assert_allclose(overall, overall_k, rtol=1e-6, atol=0)
        for metric, value in se.items():
            np.testing.assert_allclose(value, se_k[metric], rtol=1e-6, atol=0,
                                       err_msg=metric)


def test_a_variance_that_is_zero_up_to_rounding_is_zero_in_both_tiers():
    # the subgroup's positives all score above its negatives: its subgroup AUC is 1 with no
    # spread at all; weighted float sums leave a residue, taken as 0 in both tiers
    from fastbias.intervals.delong import standard_errors
    from fastbias.intervals.first_call import delong_in_numpy
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(4)
    n = 5_000
    y = rng.random(n) < 0.4
    s = rng.random(n) + 2.0 * y
    groups = (rng.random((n, 1)) < 0.3)
    w = rng.random(n) * 10.0 ** rng.uniform(-3, 3, n)
    m = prepare_subgroups(y, groups)
    for se in (delong_in_numpy(s, m, w)[0], standard_errors(SortedScores(s, m), w)[0]):
        assert se["subgroup_auc"][0] == 0.0


def test_numpy_poisson_counts_equal_the_kernel():
    from fastbias.intervals import _kernels as IK
    from fastbias.intervals.first_call import poisson_counts_in_numpy

    for key in (0, 1, 2 ** 63, 2 ** 64 - 1, 0x9E3779B97F4A7C15, 123456789):
        key = np.uint64(key)
        want = IK.poisson_counts(key, np.empty(20_000, dtype=np.uint8))
        np.testing.assert_array_equal(poisson_counts_in_numpy(key, 20_000), want)
        for chunk_rows in (7, 999, 4096):  # chunks ending anywhere give the same counts
            np.testing.assert_array_equal(
                poisson_counts_in_numpy(key, 20_000, chunk_rows=chunk_rows), want)
    assert poisson_counts_in_numpy(np.uint64(7), 200_000).max() >= 6  # the tail is reached


@pytest.mark.parametrize("seed", range(10))
def test_numpy_replicates_equal_the_kernels(seed):
    from fastbias.intervals.bootstrap import _CountReplicate, replicate_key
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.sort.order import SortedScores
    from fastbias.sweep.counts import sweep_weighted

    rng = np.random.default_rng(seed)
    y, s, groups, w = tied_case(rng, int(rng.integers(1, 300)), 4)
    m = prepare_subgroups(y, groups)
    kernels = _CountReplicate(SortedScores(s, m, with_rows=True))
    numpy = NumpyReplicates(s, m)
    weighted = NumpyReplicates(s, m, w)
    for seed_b in np.random.SeedSequence(seed).spawn(5):
        key = replicate_key(seed_b)
        got, want = numpy.counts(key), kernels.counts(key)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == tuple(int(v) for v in want[1:])
        # weighted: the kernels' weighted sweep of the same draws, to rounding
        draws = first_call_poisson(key, len(y))
        expected = sweep_weighted(SortedScores(s, m).order(), m, draws * w, certify=False)
        got = weighted.counts(key)
        np.testing.assert_allclose(got[0], expected.counts, rtol=1e-12, atol=0)
        np.testing.assert_allclose(got[1:], (expected.total_neg, expected.total_pos,
                                             expected.twice_overall_u), rtol=1e-14)


@pytest.mark.parametrize("sizes", [[0], [3], [0, 0], [0, 2, 0, 0, 5, 0], [4, 0, 1], [1, 1, 1],
                                   [0, 0, 7]])
def test_subgroup_sums_of_empty_and_filled_ranges(sizes):
    from fastbias.sweep.first_call import subgroup_sums

    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    values = (np.arange(bounds[-1], dtype=np.int64) + 1) * 2**40  # past float64's exact sums
    want = [sum(int(v) for v in values[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
    got = subgroup_sums(values, bounds)
    assert got.dtype == np.int64 and got.tolist() == want


def test_numpy_replicates_with_empty_subgroups_equal_the_kernels():
    from fastbias.intervals.bootstrap import _CountReplicate, replicate_key
    from fastbias.intervals.first_call import NumpyReplicates
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(7)
    y, s, groups, _ = tied_case(rng, 200, 5, weighted=False)
    groups[:, [0, 2, 4]] = False  # empty first, middle and last subgroups
    groups[:3, 1] = True
    m = prepare_subgroups(y, groups)
    kernels, numpy = _CountReplicate(SortedScores(s, m, with_rows=True)), NumpyReplicates(s, m)
    for seed_b in np.random.SeedSequence(7).spawn(3):
        key = replicate_key(seed_b)
        got, want = numpy.counts(key), kernels.counts(key)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == tuple(int(v) for v in want[1:])
        assert not got[0][[0, 2, 4]].any()


def first_call_poisson(key, n):
    from fastbias.intervals import _kernels as IK

    return IK.poisson_counts(key, np.empty(n, dtype=np.uint8))


CI_CASES = [dict(sample_weight=True), dict(ci="delong"), dict(ci="delong", sample_weight=True),
            dict(ci="bootstrap", n_boot=40, random_state=3),
            dict(ci="bootstrap", n_boot=40, random_state=3, sample_weight=True),
            dict(ci="bernstein")]


@pytest.mark.parametrize("kwargs", CI_CASES, ids=lambda k: "-".join(map(str, k.values())))
def test_a_cold_weighted_or_interval_call_computes_in_numpy(compiling, kwargs, caplog):
    rng = np.random.default_rng(5)
    n = 4_000
    y = rng.random(n) < 0.3
    s = (rng.integers(0, 60, n) / 60).astype(np.float32)
    groups = rng.random((n, 4)) < 0.2
    groups[:, 3] = True  # empty backgrounds: NaN where they are needed, in both
    kwargs = dict(kwargs)
    if kwargs.pop("sample_weight", False):
        kwargs["sample_weight"] = rng.random(n)
    with caplog.at_level("INFO", logger="fastbias"):
        got = fastbias.bias_metrics(y, s, groups, **kwargs)
    weighted = "sample_weight" in kwargs
    # the intervals' kernels first; the delong family compiles the unweighted counting too
    families = {(True, None): ["weighted"], (True, "delong"): ["delong", "weighted"],
                (False, "delong"): ["delong"], (False, "bootstrap"): ["bootstrap", "counting"],
                (True, "bootstrap"): ["bootstrap", "weighted"],
                (False, "bernstein"): ["counting"]}[weighted, kwargs.get("ci")]
    assert first_call._requested == families
    assert any("in numpy meanwhile" in r.getMessage() for r in caplog.records)
    first_call._requested.clear()  # what the kernels give (this process compiles them)
    _numba_cache._needs_compiling = lambda dispatcher: False
    expected = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert_same_results(got, expected, exact=not weighted and kwargs.get("ci") != "delong")


def assert_same_results(got, expected, exact):
    """Unweighted counts and replicates are the same integers: the same bits. Weighted point
    estimates agree to their certified 2**-50; interval columns (DeLong's float sums, added
    in another order, or weighted replicates) to rounding."""
    assert list(got.columns) == list(expected.columns) and got.attrs.keys() == expected.attrs.keys()
    if exact:
        pd.testing.assert_frame_equal(got, expected, check_exact=True)
        np.testing.assert_equal(got.attrs, expected.attrs)  # (NaN equals NaN here)
        return
    for column in got.columns:
        if not pd.api.types.is_numeric_dtype(got[column]):
            assert got[column].equals(expected[column]), column
            continue
        # (p-values from DeLong's variances: its float sums, added in another order)
        tight = not column.endswith(("_low", "_high", "_se", "_pvalue", "_pvalue_adjusted"))
        np.testing.assert_allclose(got[column].to_numpy(float), expected[column].to_numpy(float),
                                   rtol=2.0 ** -50 if tight else 1e-9,
                                   atol=2.0 ** -70 if tight else 1e-12, err_msg=column)
    for key, value in got.attrs.items():
        if isinstance(value, float) and np.isnan(value):
            assert np.isnan(expected.attrs[key]), key
        elif isinstance(value, float):
            tight = key == "overall_auc"
            np.testing.assert_allclose(value, expected.attrs[key],
                                       rtol=2.0 ** -50 if tight else 1e-9,
                                       atol=2.0 ** -70 if tight else 1e-12, err_msg=key)
        else:
            assert value == expected.attrs[key], key


def test_a_cold_bootstrap_switches_to_the_kernels_when_they_are_ready(compiling, monkeypatch):
    from fastbias.intervals import bootstrap

    rng = np.random.default_rng(12)
    n = 2_000
    y, s = rng.random(n) < 0.4, rng.random(n)
    groups = rng.random((n, 3)) < 0.3
    ready_after = iter([True] * 7 + [False] * 100)  # 7 replicates in numpy, then the kernels
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: next(ready_after))
    got = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=30, random_state=4)
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)
    monkeypatch.setattr(bootstrap, "still_compiling", lambda name: False)
    expected = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=30, random_state=4)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.attrs == expected.attrs


@pytest.mark.parametrize("ci", [None, "delong", "bootstrap"])
def test_a_cold_weighted_evaluate_equals_the_kernels(compiling, ci, monkeypatch):
    from fastbias.synthetic import make_jigsaw_like

    df = make_jigsaw_like(n_rows=5_000, n_identities=4, random_state=8)
    df["w"] = np.random.default_rng(1).random(len(df))
    names = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased", "w")]
    kwargs = dict(label="toxicity", scores=["model_fair", "model_biased"], subgroups=names,
                  missing_subgroup="exclude", sample_weight="w", ci=ci, n_boot=20,
                  random_state=0)
    got = fastbias.evaluate(df, **kwargs)
    assert first_call._requested == ([ci, "weighted"] if ci else ["weighted"])
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)
    expected = fastbias.evaluate(df, **kwargs)
    assert_same_results(got.table, expected.table, exact=False)
    np.testing.assert_allclose(got.overall_auc, expected.overall_auc, rtol=2.0 ** -50)


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="about compiling kernels")
def test_every_warm_up_family_runs(monkeypatch):
    # what each background process runs, here (cheap on kernels this process has cached)
    from fastbias import _native
    from fastbias import _warm_up as warm_up
    from fastbias.intervals import delong
    from fastbias.prepare import memberships as prep
    from fastbias.sort import order
    from fastbias.sweep import _kernels as SK
    from fastbias.sweep import counts

    for module, name in ((_native, "ENABLED"), (order, "PARALLEL_SORT_MIN_KEYS"),
                         (counts, "PARALLEL_COUNT_MIN_MEMBERSHIPS"),
                         (prep, "PARALLEL_SCAN_MIN_ROWS"),
                         (delong, "DELONG_MIN_RANGE_MEMBERSHIPS")):
        monkeypatch.setattr(module, name, getattr(module, name))  # restored afterwards
    warm_up.main(list(warm_up.FAMILIES))
    # a DeLong walk in ranges cuts them on its keys, of both widths (found by review: at full
    # size a weighted call compiled this for float32 scores after the warm-up)
    keys = {str(signature[0].dtype) for signature in SK.block_boundary_near.signatures}
    assert {"uint32", "uint64"} <= keys
    # weights as pandas hands them over, read-only, reach the weighted walks (found by
    # review: a weighted evaluate with significance compiled this after the warm-up): now
    # through a read-only view whatever their flags, so one version
    assert {signature[1].mutable for signature in SK.cumulative_weights.signatures} == {False}
    # writable and read-only inputs (pandas copy-on-write hands over read-only columns)
    # compile nothing the families did not, and no kernel compiled twice for arrays that
    # differ only in being read-only: the kernels read them through read-only views. In a
    # process of its own (the kernels cached above), since tests here call kernels directly.
    import subprocess
    import sys

    script = """
import numba, numpy as np, fastbias, sys
from fastbias import _warm_up
_warm_up.main(list(_warm_up.FAMILIES))
def versions():
    return {(name, attr): list(value.signatures) for name, module in list(sys.modules.items())
            if name.startswith("fastbias") and module is not None
            for attr, value in vars(module).items()
            if isinstance(value, numba.core.registry.CPUDispatcher)}
before = versions()
rng = np.random.default_rng(3)
for writable in (True, False):
    y, s = rng.random(600) < 0.3, rng.random(600).astype(np.float32)
    groups, w = rng.random((600, 3)) < 0.3, rng.random(600)
    for a in (y, s, groups, w):
        a.flags.writeable = writable
    for weights, ci in ((None, None), (None, "delong"), (w, None), (w, "delong")):
        fastbias.bias_metrics(y, s, groups, sample_weight=weights, ci=ci, n_jobs=2)
after = versions()
print("compiled after the warm-up:", [k for k in after if after[k] != before[k]])
def writable(t):
    return t.copy(readonly=False) if isinstance(t, numba.types.Array) else t
print("twins:", [k for k, sigs in after.items()
                 if len({tuple(writable(t) for t in sig) for sig in sigs}) < len(sigs)])
"""
    out = subprocess.run([sys.executable, "-c", script], check=True, timeout=600,
                         capture_output=True, text=True).stdout.splitlines()
    assert out[-2:] == ["compiled after the warm-up: []", "twins: []"], out
    assert set(warm_up.FAMILIES) == {"counting", "weighted", "delong", "bootstrap",
                                     "thresholds", "significance", "native", "exact"}
    # (the exact walks: the version that keeps each sum's rounding, alone in family "exact")
    from fastbias.intervals.exact_sums import EXACT_KERNELS, _keeps_rounding
    for kernel in EXACT_KERNELS:
        assert any(_keeps_rounding(signature) for signature in kernel.signatures), kernel
    # the rounds on Numba's threads: both score types; the scores and labels they read are
    # given as read-only views, writable or not, so one version each (the warm-up hands in
    # every combination of flags: none compiled another)
    from fastbias.prepare import _kernels as PK
    from fastbias.sort import _kernels as K

    sort_signatures = K.sort_keys_pieces.signatures
    assert sorted(str(signature[0].dtype) for signature in sort_signatures) == ["uint32",
                                                                                "uint64"]
    assert not any(signature[0].mutable or signature[1].mutable
                   for signature in sort_signatures)
    assert len(PK.dense_csr_pieces.signatures) == 1


def test_the_warm_up_lock_never_follows_a_link_nor_lives_where_others_write(tmp_path,
                                                                            monkeypatch):
    import numba

    from fastbias import _warm_up

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (cache / "fastbias-warm-up.lock").symlink_to(target)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(cache))
    assert _warm_up._take_turn() is None  # O_NOFOLLOW: no lock through a planted link
    assert target.read_text() == "keep"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(shared))
    assert _warm_up._take_turn() is None and not (shared / "fastbias-warm-up.lock").exists()
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(private))
    fd = _warm_up._take_turn()
    assert fd is not None and (private / "fastbias-warm-up.lock").is_file()
    os.close(fd)


def test_a_family_that_includes_another_counts_as_compiling_it(compiling):
    first_call.compile_in_background("delong")  # its child also compiles the counting kernels
    assert first_call.still_compiling("delong") and first_call.still_compiling("counting")
    assert not first_call.still_compiling("weighted") and not first_call.still_compiling("bootstrap")
    first_call._children["delong"] = None  # (its child has ended)
    assert not first_call.still_compiling("delong") and not first_call.still_compiling("counting")


def test_a_forked_process_forgets_its_parents_compilation(cold):
    first_call._requested.append("counting")
    first_call._children["counting"] = None
    first_call._forget_in_fork()  # what os.register_at_fork runs in the child
    assert first_call._requested == [] and first_call._children == {}
    assert not first_call.still_compiling()


def test_a_long_cold_bootstrap_compiles_its_kernels_rather_than_wait(compiling, monkeypatch,
                                                                      caplog):
    # replicates left that would take longer in numpy than compiling: the kernels, at once
    from fastbias.intervals import bootstrap

    # the estimate (25 x 1,500 rows x 30 ns: 1.1 ms) is within 1.2 ms; the first replicate, timed,
    # (dozens of numpy calls: well over 50 us) says the 24 left are not
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 1.2e-3)
    calls = []
    monkeypatch.setattr(bootstrap.NumpyReplicates, "counts",
                        lambda self, key, f=bootstrap.NumpyReplicates.counts:
                        calls.append(key) or f(self, key))
    rng = np.random.default_rng(13)
    n = 1_500
    y, s = rng.random(n) < 0.4, rng.random(n)
    groups = rng.random((n, 2)) < 0.3
    with caplog.at_level("INFO", logger="fastbias"):
        got = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=25, random_state=2)
    assert len(calls) == 1  # one replicate in numpy, to time it; 24 by the kernels
    assert any("compiling the bootstrap kernels now: 24 replicates" in r.getMessage()
               for r in caplog.records)
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)
    expected = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=25, random_state=2)
    assert_same_results(got, expected, exact=True)

    # an estimate already over the budget: no replicate in numpy at all
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 0.0)
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    calls.clear()
    with caplog.at_level("INFO", logger="fastbias"):
        again = fastbias.bias_metrics(y, s, groups, ci="bootstrap", n_boot=25, random_state=2)
    assert calls == []
    assert any("25 replicates would take" in r.getMessage() for r in caplog.records)
    assert_same_results(again, expected, exact=True)


def test_the_tier_can_be_turned_off(cold, monkeypatch):
    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")  # compile first: the kernels' bits
    rng = np.random.default_rng(14)
    y, s = rng.random(400) < 0.4, rng.random(400)
    groups = rng.random((400, 2)) < 0.3
    fastbias.bias_metrics(y, s, groups, sample_weight=rng.random(400), ci="delong")
    assert first_call._requested == []


def test_the_compiling_child_imports_this_process_package_from_any_directory(tmp_path):
    """`pip install .` in a source checkout, then `fastbias demo` there: the child started by
    `python -m fastbias._warm_up` must not import the checkout's copy (it would compile into
    that copy's cache, and the parent would compile everything again)."""
    import subprocess
    import sys

    fake = tmp_path / "checkout" / "fastbias"
    fake.mkdir(parents=True)
    marker = tmp_path / "imported the other copy"
    (fake / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (fake / "_warm_up.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    script = tmp_path / "scripts" / "parent.py"
    script.parent.mkdir()
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    script.write_text(
        "import fastbias.sweep.first_call as fc, sys\n"
        "assert 'checkout' not in fc.__file__\n"
        "child = fc._start_child(['no-such-family'])\n"  # imports the package, then fails
        "sys.exit(0 if child is not None and child.wait(120) is not None else 3)\n")
    done = subprocess.run([sys.executable, str(script)], cwd=fake.parent, timeout=240,
                          env={**os.environ, "NUMBA_CACHE_DIR": str(cache)})
    assert done.returncode == 0
    assert not marker.exists()
    # the child's path is this process's, every entry absolute (a relative PYTHONPATH entry
    # or the working directory mean the same there)
    import json

    from fastbias.sweep.first_call import _child_environment

    child_path = json.loads(_child_environment()["FASTBIAS_SYS_PATH"])
    assert child_path == [os.path.abspath(p) for p in sys.path if isinstance(p, str)]
    assert all(os.path.isabs(p) for p in child_path)
    # and a child that did import another copy compiles nothing
    from fastbias._warm_up import same_package

    assert same_package(None) and not same_package(str(fake))
    assert same_package(os.path.dirname(fastbias.__file__))


@pytest.mark.parametrize("seed", range(12))
def test_numpy_threshold_counts_equal_the_kernels(seed):
    """Row counts the same integers; weights the same sums to rounding (the kernels' walk and
    numpy's prefix sums compensate differently); thresholds rounded to the scores' dtype,
    beyond their range, at a score, at -0.0."""
    from fastbias.metrics.thresholds import (
        threshold_counts,
        threshold_counts_in_numpy,
        threshold_table,
    )
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(seed)
    y, s, groups, w = tied_case(rng, int(rng.integers(1, 400)), int(rng.integers(1, 5)),
                                weighted=seed % 2 == 1)
    cuts = np.unique(np.concatenate([s[:3].astype(np.float64),
                                     [0.1, -0.0, 1e300, -1e300, 0.5, np.nextafter(0.5, 1)]]))
    m = prepare_subgroups(y, groups)
    kernels = threshold_counts(SortedScores(s, m), w, cuts)
    numpy = threshold_counts_in_numpy(s, m, w, cuts)
    for name in ("predicted_rows", "class_predicted_rows", "cell_rows", "class_rows"):
        np.testing.assert_array_equal(getattr(numpy, name), getattr(kernels, name), err_msg=name)
    # the brute force: rows of each subgroup's negatives at or above each threshold
    rounded = cuts.astype(s.dtype)
    for j in range(groups.shape[1]):
        member_neg = groups[:, j] & ~y
        expected = [(s[member_neg] >= t).sum() for t in rounded]
        np.testing.assert_array_equal(numpy.predicted_rows[:, j, 0], expected)
    for name in ("predicted", "class_predicted", "cells", "class_totals"):
        a, b = getattr(numpy, name), getattr(kernels, name)
        if w is None:
            np.testing.assert_array_equal(a, b, err_msg=name)
        else:
            np.testing.assert_allclose(a.sum(axis=-1), b.sum(axis=-1), rtol=1e-14, atol=1e-300,
                                       err_msg=name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got, want = threshold_table(numpy, m.names), threshold_table(kernels, m.names)
    if w is None:
        pd.testing.assert_frame_equal(got, want, check_exact=True)
    else:
        pd.testing.assert_frame_equal(got, want, rtol=1e-12, atol=1e-14)


def test_numpy_threshold_weights_keep_rows_far_lighter_than_those_below():
    """The weight at or above a threshold is the sum of those rows, not a total less the
    rest (which loses weights 1e80 times smaller); found by review."""
    from fastbias.metrics.thresholds import threshold_counts, threshold_counts_in_numpy
    from fastbias.sort.order import SortedScores

    y = np.array([0, 0, 0, 1, 1, 1], bool)
    s = np.array([0.1, 0.2, 0.9, 0.1, 0.2, 0.9])
    w = np.array([1e40, 1.0, 1e-40, 1e40, 1.0, 1e-40])
    m = prepare_subgroups(y, np.ones((6, 1), bool))
    cuts = np.array([0.5])
    numpy = threshold_counts_in_numpy(s, m, w, cuts)
    kernels = threshold_counts(SortedScores(s, m), w, cuts)
    for name in ("predicted", "class_predicted"):
        np.testing.assert_array_equal(getattr(numpy, name).sum(axis=-1)[0, 0], [1e-40, 1e-40])
        np.testing.assert_allclose(getattr(numpy, name).sum(axis=-1),
                                   getattr(kernels, name).sum(axis=-1), rtol=1e-14)


@pytest.mark.parametrize("weighted", [False, True])
def test_a_cold_threshold_call_computes_in_numpy(compiling, weighted, caplog):
    """threshold_metrics and evaluate(thresholds=) answer in numpy while the kernels compile
    (the threshold walk's family after the counts'), with the kernels' table."""
    from fastbias.synthetic import make_jigsaw_like

    df = make_jigsaw_like(n_rows=5_000, n_identities=4, random_state=2)
    names = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")]
    df["w"] = np.random.default_rng(1).random(len(df))
    kwargs = dict(thresholds=[0.2, 0.5], sample_weight=df["w"] if weighted else None,
                  subgroup_threshold=0.5)
    y, s = df["toxicity"].to_numpy() >= 0.5, df["model_fair"].to_numpy()
    with caplog.at_level("INFO", logger="fastbias"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = fastbias.threshold_metrics(y, s, df[names], **kwargs)
        got_frame = fastbias.evaluate(df, label="toxicity", scores="model_fair", subgroups=names,
                                      thresholds=[0.2, 0.5],
                                      sample_weight="w" if weighted else None)
    assert first_call._requested == ["weighted" if weighted else "counting", "thresholds"]
    assert any("threshold counts" in r.getMessage() for r in caplog.records)
    first_call._requested.clear()  # what the kernels give (this process compiles them)
    _numba_cache._needs_compiling = lambda dispatcher: False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        want = fastbias.threshold_metrics(y, s, df[names], **kwargs)
        want_frame = fastbias.evaluate(df, label="toxicity", scores="model_fair",
                                       subgroups=names, thresholds=[0.2, 0.5],
                                       sample_weight="w" if weighted else None)
    if weighted:
        pd.testing.assert_frame_equal(got, want, rtol=1e-12, atol=1e-14)
        pd.testing.assert_frame_equal(got_frame.thresholds, want_frame.thresholds, rtol=1e-12,
                                      atol=1e-14)
    else:
        pd.testing.assert_frame_equal(got, want, check_exact=True)
        pd.testing.assert_frame_equal(got_frame.thresholds, want_frame.thresholds,
                                      check_exact=True)
        pd.testing.assert_frame_equal(got_frame.table, want_frame.table, check_exact=True)


# ------------------------------------------------------------------ significance tests


def test_numpy_sums_in_order_are_a_walks_sums_bit_for_bit_signed_zeros_included():
    """A walk kernel adds its terms one by one from 0.0; so does the numpy tier, to the sign
    of a zero (terms that underflow to -0.0, as with weights near 1e-301, summed to 0.0)."""
    import functools
    import operator

    from fastbias.intervals.first_call import _sum_in_order

    rng = np.random.default_rng(2)
    cases = [np.array([-0.0]), np.array([-0.0, -0.0]), np.array([-0.0, 0.0]),
             np.array([0.0, -0.0]), np.array([-0.0, 1e-300, -1e-300]), np.empty(0)]
    cases += [rng.choice([-0.0, 0.0, 1.5, -2.25, 1e-17, 3.0], int(rng.integers(1, 12)))
              for _ in range(300)]
    cases += [rng.normal(size=int(rng.integers(1, 200))) for _ in range(50)]
    for values in cases:
        want = functools.reduce(operator.add, values.tolist(), 0.0)
        got = _sum_in_order(values)
        assert got == want and np.signbit(got) == np.signbit(want), values


@pytest.mark.parametrize("block", [7, 1 << 16])
def test_numpy_class_sums_equal_the_kernels_bit_for_bit(block, monkeypatch):
    """A class's prefix sums, packed rows and compensated own-class sums: the kernel's bits,
    with the numpy sums carried across blocks of rows (tiny blocks: many boundaries)."""
    from fastbias.intervals import first_call as interval_first_call
    from fastbias.sweep import _kernels as SK

    monkeypatch.setattr(interval_first_call, "SUM_BLOCK_ROWS", block)
    rng = np.random.default_rng(block)
    for _ in range(30):
        n, m = (int(rng.integers(0, 300)) for _ in range(2))
        levels = int(rng.choice([2, 30, 10 ** 9]))
        values = np.sort(rng.integers(0, levels, n)).astype(np.float64)
        others = np.sort(rng.integers(0, levels, m)).astype(np.float64)
        weighted = bool(rng.random() < 0.5)
        cum, others_cum = ((np.concatenate([[0.0], np.cumsum(rng.random(size) * 10.0
                                                             ** rng.integers(-3, 4))])
                            if weighted else np.empty(0)) for size in (n, m))
        above = bool(rng.random() < 0.5)
        got, want = [], []
        for sums_of, out in ((SK.class_sums, want), (interval_first_call.class_sums_in_numpy, got)):
            prefix, rows = np.empty(n + 1), np.empty((n, 3 if weighted else 2))
            out.append((sums_of(values, cum, others, others_cum, above, prefix, rows,
                                np.empty(0)), prefix, rows))
            # the prefix sums alone, then the rows alone (as the significance tests make
            # them, in two walks): the same sums each time, and the same prefix sums and rows
            alone_prefix, alone_rows = np.full(n + 1, np.nan), np.full(rows.shape, np.nan)
            assert sums_of(values, cum, others, others_cum, above, alone_prefix,
                           np.empty((0, 2)), np.empty(0)) == out[-1][0]
            assert sums_of(values, cum, others, others_cum, above, np.empty(0),
                           alone_rows, np.empty(0)) == out[-1][0]
            np.testing.assert_array_equal(alone_prefix, prefix)
            np.testing.assert_array_equal(alone_rows, rows)
        (g_sums, g_prefix, g_rows), (w_sums, w_prefix, w_rows) = got[0], want[0]
        assert g_sums == w_sums
        np.testing.assert_array_equal(g_prefix, w_prefix)
        np.testing.assert_array_equal(g_rows, w_rows)


@pytest.mark.parametrize("seed", range(8))
def test_numpy_placement_sums_equal_the_kernels(seed):
    """Every per-row placement and the cross sums are the kernels' bits; the DeLong sums
    agree to rounding (numpy adds them pairwise)."""
    from fastbias.intervals.placement_sums import (
        placement_sums,
        placement_sums_in_numpy,
    )
    from fastbias.sort.order import SortedScores

    rng = np.random.default_rng(seed)
    for case in range(12):
        n = int(rng.integers(1, 400))
        y, s, groups, w = tied_case(rng, n, int(rng.integers(1, 5)),
                                    weighted=bool(case % 4 == 0 or rng.random() < 0.5))
        if case % 4 == 0:  # weights near the smallest floats: terms underflow to -0.0
            w = w * 1e-301
        m = prepare_subgroups(y, groups)
        with np.errstate(all="ignore"):
            want, _, classes = placement_sums(SortedScores(s, m), w)
            got, walk, numpy_classes = placement_sums_in_numpy(s, m, w)
            for label in (0, 1):
                np.testing.assert_array_equal(numpy_classes.rows(label), classes.rows(label))
        np.testing.assert_array_equal(numpy_classes.above, classes.above)
        assert numpy_classes.u_overall == classes.u_overall
        for name in ("cross", "above", "weights", "cell_rows", "class_rows"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
            np.testing.assert_array_equal(np.signbit(getattr(got, name)),
                                          np.signbit(getattr(want, name)), err_msg=name)
        # unweighted, every DeLong sum is of quarters far below 2**53: exact in any order;
        # weighted, some are differences of sums of w x placement**2: rounding of W**3
        scale = 0.0 if w is None else float(w.sum()) ** 3
        for name in ("delong", "overall"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=0,
                                       atol=1e-13 * scale, err_msg=name)
        assert got.weighted == want.weighted == (w is not None)
        # (the scores' sortable keys, as the kernels' walks read them)
        assert walk.keys.dtype == {4: np.uint32, 8: np.uint64}[s.dtype.itemsize]


def permutation_case(rng, weighted: bool):
    """Arguments of a permutation test whose class is large enough to draw in numpy."""
    from fastbias.intervals.first_call import DRAWS_IN_NUMPY_ROWS_PER_SQUARE

    size = int(rng.integers(1, 30))
    least = DRAWS_IN_NUMPY_ROWS_PER_SQUARE * size * size
    n = int(least + rng.choice([0, 1, rng.integers(0, 30_000)]))  # from the smallest class on
    levels = int(rng.choice([2, 40, 10 ** 9]))
    class_keys = np.sort(rng.integers(0, levels, n)).astype(np.uint64)  # (a walk's keys)
    w = rng.random(n) * rng.choice([1e-3, 1.0, 1e4]) if weighted else np.ones(n)
    if weighted:
        w[rng.random(n) < 0.05] = 0.0
    rows = np.ascontiguousarray(np.column_stack([rng.integers(0, 2 * n, n) * 0.5,
                                                 rng.integers(0, 2 * n, n) * 0.5]
                                                + ([w] if weighted else [])))
    n_fixed = int(rng.integers(0, 60))
    fixed_keys = np.sort(rng.integers(0, levels, n_fixed)).astype(np.uint64)
    fixed_w = rng.random(n_fixed) if weighted else np.ones(n_fixed)
    fixed_cum = np.concatenate([[0.0], np.cumsum(fixed_w)])
    observed = rng.random(3) * rng.choice([0.0, 0.02, 0.3, 1.0])
    return (class_keys, rows, fixed_keys, fixed_cum, bool(rng.random() < 0.5), size,
            fixed_cum[-1] + float(rng.integers(0, 3) * rng.integers(0, 500)), observed,
            rng.random(3) < 0.75, float(rng.random()), int(rng.choice([1, 3, 20])),
            int(rng.choice([1, 2, 9, 300, 3000])), int(rng.integers(0, 2 ** 62)),
            float(w.sum()), float(w @ rows[:, 0]), weighted)


def test_weighted_permutation_draws_without_a_weight_column_refuse():
    """Unweighted class rows have two columns (every weight 1); a weighted test given them
    raises instead of reading past each row (the kernel does not check its indexes)."""
    from fastbias.intervals import _kernels as IK
    from fastbias.intervals.first_call import permutation_exceedances_in_numpy

    args = list(permutation_case(np.random.default_rng(0), weighted=False))
    args[-1] = True
    for draw in (IK.permutation_exceedances, permutation_exceedances_in_numpy):
        with pytest.raises(ValueError, match="class_rows"):
            draw(*args)


@pytest.mark.parametrize("batch", [4096, 7, 1])
@pytest.mark.parametrize("weighted", [False, True])
def test_numpy_permutation_draws_equal_the_kernel(batch, weighted, monkeypatch):
    """The same draws (repeats passed over as the kernel does), the same metrics, the same
    stopping points: the kernel's (3, 3) result bit for bit, across batch boundaries too."""
    from fastbias.intervals import _kernels as IK
    from fastbias.intervals import first_call as interval_first_call
    from fastbias.intervals.first_call import DRAWS_IN_NUMPY_ROWS_PER_SQUARE

    monkeypatch.setattr(interval_first_call, "DRAW_BATCH", batch)
    rng = np.random.default_rng(batch + weighted)
    reached = repeated = 0
    for _ in range(60 if batch > 1 else 15):
        args = permutation_case(rng, weighted)
        with np.errstate(over="ignore"):
            want = IK.permutation_exceedances(*args)
        got = interval_first_call.permutation_exceedances_in_numpy(*args)
        np.testing.assert_array_equal(got, want)
        reached += int((want[:, 0] == args[10]).any())
        repeated += args[5] * args[5] * DRAWS_IN_NUMPY_ROWS_PER_SQUARE == args[0].shape[0]
    assert reached and repeated  # (cases that stop early, and the smallest classes)


@pytest.mark.parametrize("size, n", [(12, 8 * 144), (12, 32 * 144), (3, 10), (29, 32 * 841)])
def test_numpy_permutation_draws_pass_over_repeats_as_the_kernel_does(size, n):
    """Draws that repeat a position are redone one value at a time (in the smallest
    classes, most draws); the positions drawn are distinct and the kernel's."""
    from fastbias.intervals import _kernels as IK
    from fastbias.intervals import first_call as first_call_module
    from fastbias.intervals.first_call import _draw_positions, mix64_in_numpy

    made = [0]  # stream values made
    below = first_call_module._positions_below

    def counted(key, counters, n):
        made[0] += counters.shape[0]
        return below(key, counters, n)

    key = mix64_in_numpy(np.array([77], dtype=np.uint64), 1)[0]
    first_call_module._positions_below = counted
    try:
        positions, counter = _draw_positions(key, n, size, 0, 500)
    finally:
        first_call_module._positions_below = below
    assert all(len(set(row)) == size for row in positions.tolist())
    assert counter > 500 * size  # some draws took more values than positions
    assert positions.min() >= 0 and positions.max() < n
    assert made[0] <= counter + first_call_module.DRAW_BATCH * size  # read on, not made again
    expected, at = [], 0
    for _ in range(500):  # the kernel's rule, one value at a time
        row = []
        while len(row) < size:
            with np.errstate(over="ignore"):
                q = IK._draw_below.py_func(IK._stream_key.py_func(77), np.uint64(at), n) \
                    if hasattr(IK._draw_below, "py_func") else \
                    IK._draw_below(IK._stream_key(77), np.uint64(at), n)
            at += 1
            if q not in row:
                row.append(int(q))
        expected.append(row)
    np.testing.assert_array_equal(positions, np.array(expected))
    assert counter == at


def test_numpy_permutation_draws_refuse_a_small_class():
    from fastbias.intervals.first_call import permutation_exceedances_in_numpy

    args = list(permutation_case(np.random.default_rng(0), False))
    args[0], args[1] = args[0][:127], args[1][:127]
    args[5] = 2  # 127 rows < 32 x 2**2: the kernel's to draw
    with pytest.raises(ValueError, match="permutation draws of 2 of 127 rows"):
        permutation_exceedances_in_numpy(*args)


SIGNIFICANCE_CASES = [dict(significance="holm"), dict(significance="bh", sample_weight=True),
                      dict(significance="holm", ci="delong"),
                      dict(significance="bh", ci="bootstrap", n_boot=30, random_state=1)]


@pytest.mark.parametrize("kwargs", SIGNIFICANCE_CASES,
                         ids=lambda k: "-".join(map(str, k.values())))
def test_a_cold_significance_call_computes_in_numpy(compiling, kwargs, caplog, monkeypatch):
    """p-values in numpy while the kernels compile: the kernels' (drawn permutation tests on
    small cells, in numpy or, for cells too large for their class, in the kernel;
    permutation moments; DeLong's tests, whose sums are added in another order)."""
    from fastbias.intervals import _kernels as IK
    from fastbias.intervals import significance

    drawn = {"numpy": 0, "kernel": 0}

    def counted(function, where):
        def run(*args):
            drawn[where] += 1
            return function(*args)
        return run

    monkeypatch.setattr(significance, "permutation_exceedances_in_numpy",
                        counted(significance.permutation_exceedances_in_numpy, "numpy"))
    monkeypatch.setattr(IK, "permutation_exceedances",
                        counted(IK.permutation_exceedances, "kernel"))
    rng = np.random.default_rng(11)
    n = 6_000
    y = rng.random(n) < 0.3
    s = (rng.integers(0, 300, n) / 300).astype(np.float32)
    # moments (30-299 rows), draws in numpy (a few rows), draws in the kernel (about 21
    # positives of about 1,800: 32 x 21**2 is more)
    groups = rng.random((n, 5)) < [0.2, 0.012, 0.004, 0.002, 0.001]
    kwargs = dict(kwargs)
    if kwargs.pop("sample_weight", False):
        kwargs["sample_weight"] = rng.random(n)
    with caplog.at_level("INFO", logger="fastbias"), np.errstate(all="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert "significance" in first_call._requested
    assert any("computes its p-values (drawn permutation tests in small classes excepted) in "
               "numpy meanwhile" in r.getMessage() for r in caplog.records)
    assert got.attrs["permutation_tests"] > 0
    assert drawn["numpy"] > 0 and drawn["kernel"] > 0
    first_call._requested.clear()  # what the kernels give (this process compiles them)
    _numba_cache._needs_compiling = lambda dispatcher: False
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        expected = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert_same_results(got, expected, exact=False)
    for metric in ("subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"):
        assert got[f"{metric}_significant"].equals(expected[f"{metric}_significant"])


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_a_cold_significance_evaluate_computes_in_numpy(compiling, missing_subgroup):
    rng = np.random.default_rng(12)
    n = 3_000
    df = pd.DataFrame({"y": rng.random(n) < 0.3,
                       "m1": (rng.integers(0, 50, n) / 50).astype(np.float32),
                       "m2": rng.random(n),
                       "a": np.where(rng.random(n) < 0.1, np.nan, rng.random(n) < 0.2),
                       "b": rng.random(n) < 0.006})
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                                missing_subgroup=missing_subgroup, significance="holm")
        assert "significance" in first_call._requested
        first_call._requested.clear()
        _numba_cache._needs_compiling = lambda dispatcher: False
        expected = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                                     missing_subgroup=missing_subgroup, significance="holm")
    assert_same_results(got.table, expected.table, exact=False)
    assert got.table.filter(like="_significant").equals(expected.table.filter(like="_significant"))


def test_a_cold_evaluator_significance_computes_in_numpy(compiling):
    """``BiasEvaluator.metrics`` sorts (its scores change between calls), yet its tests are
    computed in numpy while their kernels compile: the kernels' p-values."""
    rng = np.random.default_rng(13)
    n = 3_000
    y = rng.random(n) < 0.3
    groups = {"a": rng.random(n) < 0.2, "b": rng.random(n) < 0.008}
    s = (rng.integers(0, 80, n) / 80).astype(np.float64)
    significance_kernels = first_call_kernels("significance")  # (the counting ones compiled)
    _numba_cache._needs_compiling = lambda dispatcher: dispatcher in significance_kernels
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        got = fastbias.BiasEvaluator(y, groups).metrics(s, significance="bh")
        assert first_call._requested == ["significance"]
        first_call._requested.clear()
        _numba_cache._needs_compiling = lambda dispatcher: False
        _numba_cache._ready.clear()
        expected = fastbias.BiasEvaluator(y, groups).metrics(s, significance="bh")
    assert got.attrs["permutation_tests"] > 0
    assert_same_results(got, expected, exact=False)


def first_call_kernels(method):
    from fastbias.intervals.first_call import INTERVAL_KERNELS

    return INTERVAL_KERNELS[method]()


def test_the_significance_log_line_promises_numpy_only_when_the_call_computes_there(
        cold, monkeypatch, caplog):
    rng = np.random.default_rng(14)
    n = 2_000
    y, s, groups = rng.random(n) < 0.3, rng.random(n), rng.random((n, 2)) < 0.2
    from numba.core import event

    from fastbias.sweep import _kernels as SK

    monkeypatch.setenv("FASTBIAS_FIRST_CALL", "0")  # the tier off: this call compiles
    with caplog.at_level("INFO", logger="fastbias"), warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        fastbias.bias_metrics(y, s, groups, significance="holm")
        # said as one of its kernels compiles (here they are compiled: numba's event, as cold)
        assert not [r for r in caplog.records if "significance tests" in r.getMessage()]
        with event.trigger_event("numba:compile", data={"dispatcher": SK.class_sums,
                                                        "args": None, "return_type": None}):
            pass
    lines = [r.getMessage() for r in caplog.records if "significance tests" in r.getMessage()]
    assert len(lines) == 1 and "in numpy" not in lines[0] and "about 6 s" in lines[0]
    assert first_call._requested == []


def test_the_warm_up_compiles_for_writable_and_read_only_inputs():
    """``evaluate`` hands the kernels read-only columns: each is a kernel of its own, which
    the families must compile too (else the caller compiles them after the warm-up)."""
    from fastbias import _warm_up as warm_up

    seen = {(scores.dtype, scores.flags.writeable, weights.flags.writeable)
            for scores, _, weights in warm_up._each_input(np.random.default_rng(0))}
    assert seen == {(np.dtype(d), w, w) for d in (np.float32, np.float64) for w in (True, False)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_counts_plan_counts_each_row_as_often_as_drawn(data):
    """:class:`CountsPlan` against the rows repeated as often as drawn (counted by
    :func:`counts_in_numpy`'s own sorts of the scores, not of rows), and with no draws
    against :func:`counts_in_numpy` on the rows themselves: the same integers."""
    from fastbias.sweep.first_call import CountsPlan

    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    n = data.draw(st.integers(1, 120))
    k = data.draw(st.integers(1, 4))
    levels = data.draw(st.sampled_from([1, 2, 5, 1000]))
    y = rng.random(n) < data.draw(st.sampled_from([0.0, 0.4, 1.0]))
    s = ((rng.integers(0, levels, n) - levels // 2) / 3).astype(
        data.draw(st.sampled_from([np.float32, np.float64])))
    s[rng.random(n) < 0.1] = -0.0
    groups = rng.random((n, k)) < rng.choice([0.0, 0.3, 1.0], k)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = CountsPlan(s, m)
    assert_same_counts(plan.counts(), counts_in_numpy(s, m))
    draws = rng.integers(0, data.draw(st.sampled_from([1, 3, 7])) + 1, n).astype(np.uint8)
    rows = np.repeat(np.arange(n), draws)
    got = plan.counts(draws)
    if not rows.size:
        assert not got.counts.any() and (got.total_neg, got.total_pos) == (0, 0)
        return
    repeated = prepare_subgroups(y[rows], groups[rows], compiled=False)
    assert_same_counts(got, counts_in_numpy(s[rows], repeated))
    with pytest.raises(ValueError, match="draws must be uint8"):
        plan.counts(draws.astype(np.int64))


@pytest.mark.parametrize("weighted", [False, True])
def test_a_cold_bootstrap_sorts_its_classes_once(compiling, weighted, monkeypatch):
    """A first call's bootstrap replicates in numpy read the sorts the point estimate made
    (a second set took 0.5-0.9 s at 1.8M x 24): the classes are sorted once, for
    ``bias_metrics`` and for each universe of ``evaluate``; where the replicates would not
    start in numpy (too many), an unweighted point estimate sorts the scores alone (quicker
    than their rows), as without a bootstrap. The answers are those of
    the kernels (unweighted, the same bits)."""
    from fastbias.intervals import bootstrap
    from fastbias.intervals import first_call as interval_tier

    sorts, plans = [], []  # (each class sort; the plan each set of numpy replicates is given)
    monkeypatch.setattr(first_call, "class_orders",
                        lambda *a, f=first_call.class_orders: sorts.append(1) or f(*a))
    monkeypatch.setattr(interval_tier.NumpyReplicates, "__init__",
                        lambda self, *a, plan=None, f=interval_tier.NumpyReplicates.__init__:
                        plans.append(plan) or f(self, *a, plan=plan))
    rng = np.random.default_rng(21)
    n = 3_000
    y, s = rng.random(n) < 0.35, (rng.integers(0, 40, n) / 40).astype(np.float32)
    groups = rng.random((n, 3)) < 0.3
    kwargs = dict(ci="bootstrap", n_boot=25, random_state=6,
                  sample_weight=rng.random(n) if weighted else None)
    got = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert len(sorts) == 1 and len(plans) == 1 and plans[0] is not None
    df = pd.DataFrame({"y": y, "s": s, "w": rng.random(n), "a": groups[:, 0],
                       "b": groups[:, 1].astype(float)})
    df.loc[df.index[::7], "b"] = np.nan  # two universes under exclude
    frame_kwargs = dict(label="y", scores=["s"], subgroups=["a", "b"], ci="bootstrap",
                        n_boot=25, random_state=6, sample_weight="w" if weighted else None)
    sorts.clear()
    got_frame = fastbias.evaluate(df, **frame_kwargs, missing_subgroup="exclude")
    assert len(sorts) == 2 and len(plans) == 3 and None not in plans
    monkeypatch.setattr(bootstrap, "NUMPY_REPLICATES_SECONDS", 1e-9)  # the kernels at once
    sorts.clear()
    at_once = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert sorts == ([1] if weighted else [])  # (weighted counts sort rows in any case)
    monkeypatch.setattr(first_call, "_requested", [])
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: False)
    expected = fastbias.bias_metrics(y, s, groups, **kwargs)
    assert_same_results(got, expected, exact=not weighted)
    assert_same_results(at_once, expected, exact=not weighted)
    assert_same_results(got_frame.table,
                        fastbias.evaluate(df, **frame_kwargs, missing_subgroup="exclude").table,
                        exact=not weighted)


@pytest.mark.parametrize("seed", range(4))
def test_a_weighted_plan_weighs_draws_as_their_products_bit_for_bit(seed):
    """``WeightedCountsPlan.replicate_counts`` (the weights gathered once along the classes,
    ``weights_in_order``; the draws each time) gives the counts of the products ``d * w``
    weighed directly, the same floats, for weights from tiny to huge."""
    from fastbias.sweep.first_call import WeightedCountsPlan

    rng = np.random.default_rng(seed)
    y, s, groups, w = tied_case(rng, int(rng.integers(2, 400)), 4)
    m = prepare_subgroups(y, groups, compiled=False)
    plan = WeightedCountsPlan(s, m)
    for base in (w, rng.random(len(y)) * 2.0 ** 900, np.ldexp(w, -1070)):
        for _ in range(3):
            draws = rng.integers(0, 5, len(y)).astype(np.uint8)
            got = plan.replicate_counts(plan.weights_in_order(base), draws)
            want = plan.counts(draws * base)
            for name in ("counts", "background"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
            assert (got.total_neg, got.total_pos, got.twice_overall_u, got.weight_scale) == \
                (want.total_neg, want.total_pos, want.twice_overall_u, want.weight_scale)
    with pytest.raises(ValueError, match="draws must be uint8"):
        plan.replicate_counts(plan.weights_in_order(w), np.ones(len(y)))
