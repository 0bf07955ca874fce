"""The first call in a fresh environment counts in numpy while the kernels compile: the same bits.

References: the kernels' counts (themselves checked against brute force and sklearn elsewhere)
and sklearn's roc_auc_score; heavy ties, signed zeros, empty, one-class and whole-data subgroups.
"""
import os

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
    """A process whose counting kernels look uncompiled, with no background compilation yet."""
    monkeypatch.setattr(_numba_cache, "_needs_compiling", lambda dispatcher: True)
    monkeypatch.setattr(_numba_cache, "_ready", set())
    monkeypatch.setattr(first_call, "_children", {})
    yield
    first_call.wait_until_compiled()


def test_a_cold_call_counts_in_numpy_and_compiles_in_the_background(cold, caplog):
    rng = np.random.default_rng(5)
    n = 5_000
    y = rng.random(n) < 0.3
    s = (rng.integers(0, 40, n) / 40).astype(np.float32)
    groups = rng.random((n, 4)) < 0.2
    with caplog.at_level("INFO", logger="fastbias"):
        got = fastbias.bias_metrics(y, s, groups)
    assert any("this call counts in numpy meanwhile" in r.getMessage() for r in caplog.records)
    assert list(first_call._children) == ["counting"]
    assert first_call.still_compiling()  # (the child takes seconds: it has not finished yet)
    again = fastbias.bias_metrics(y, s, groups)  # numpy again meanwhile, no second child
    assert list(first_call._children) == ["counting"]
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


def test_intervals_and_weights_never_take_the_numpy_path(cold):
    rng = np.random.default_rng(6)
    n = 400
    y = rng.random(n) < 0.4
    s = rng.random(n)
    groups = {"a": rng.random(n) < 0.3}
    fastbias.bias_metrics(y, s, groups, ci="delong")
    fastbias.bias_metrics(y, s, groups, sample_weight=rng.random(n))
    assert first_call._children == {}


@pytest.mark.parametrize("missing_subgroup", ["background", "exclude"])
def test_a_cold_evaluate_counts_in_numpy_and_equals_the_kernels(cold, missing_subgroup):
    from fastbias.synthetic import make_jigsaw_like

    df = make_jigsaw_like(n_rows=6_000, n_identities=5, random_state=3)
    names = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")]
    kwargs = dict(label="toxicity", scores=["model_fair", "model_biased"], subgroups=names,
                  missing_subgroup=missing_subgroup)
    got = fastbias.evaluate(df, **kwargs)
    assert list(first_call._children) == ["counting"]
    first_call.wait_until_compiled()
    expected = fastbias.evaluate(df, **kwargs)  # the kernels
    pd.testing.assert_frame_equal(got.table, expected.table, check_exact=True)
    pd.testing.assert_series_equal(got.overall_auc, expected.overall_auc, check_exact=True)


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="kernels are cached only when they are compiled")
def test_the_warm_up_child_compiles_into_a_given_cache(tmp_path):
    # what the background process does, run here: it leaves the counting kernels cached
    import subprocess
    import sys

    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = dict(first_call._child_environment(), NUMBA_CACHE_DIR=str(cache))
    subprocess.run([sys.executable, "-m", "fastbias.sweep.warm_up"], env=env, check=True,
                   timeout=600)
    cached = {p.name.split("-")[0] for p in cache.rglob("*.nbi")}
    for name in ("_kernels.member_counts_in_range", "_kernels.sort_buckets",
                 "_kernels.csr_from_dense_rows", "_kernels.build_row_csr",
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
    assert first_call._children == {} and not first_call.still_compiling()
    pd.testing.assert_frame_equal(got, fastbias.bias_metrics(y, s, groups), check_exact=True)
