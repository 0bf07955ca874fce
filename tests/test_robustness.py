"""Robustness: read-only installs, threads, pure-Python kernels, untouched inputs.

* A copy of the package in a location numba cannot write its cache to must
  still import and give correct numbers (numba falls back to the user cache
  directory; when that is not writable either, fastbias points numba at a
  temporary directory).
* Concurrent calls from threads give the same numbers as serial calls (the
  kernels release the GIL, so they really overlap).
* ``NUMBA_DISABLE_JIT=1`` (kernels as plain Python) gives the same numbers.
* Inputs are never modified.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.validate.errors import UndefinedMetricWarning
from tests.reference import brute_force_metrics

PACKAGE_DIR = Path(fastbias.__file__).resolve().parent
NO_JIT = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
skip_without_jit = pytest.mark.skipif(NO_JIT, reason="too slow with NUMBA_DISABLE_JIT=1")

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]

# computed in a child process, printed as JSON, compared with the parent's numbers
# (CHILD_ONE_KERNEL=1: the child compiles and caches one small kernel, not every kernel of a
# call: enough to show where the cache goes, for a fraction of the time; one read-only test
# and the pure-Python one still compute whole tables)
CHILD_CODE = """
import json, os, warnings, numpy as np, fastbias
import numba
if os.environ.get("CHILD_ONE_KERNEL") == "1":
    # (every kernel module imported: numba finds each one's cache locator as it decorates)
    import fastbias.intervals._kernels, fastbias.sort._kernels, fastbias.sweep._kernels
    import fastbias.validate._kernels
    from fastbias.prepare._kernels import count_row_starts
    out = {"distinct": int(count_row_starts(np.array([0, 0, 2, 5, 5, 7], dtype=np.int64)))}
else:
    import fastbias.sweep.parallel
    # compile here, only what this call needs (the test is about where kernels are cached),
    # instead of the first call's numpy tier and a background child compiling every kernel
    # of its family
    fastbias.sweep.parallel.FIRST_CALL_MAX_ROWS = 0
    warnings.simplefilter("ignore")
    with_weights = os.environ.get("CHILD_WITH_WEIGHTS") == "1"
    rng = np.random.default_rng(3)
    y = rng.random(300) < 0.4
    s = np.round(rng.random(300), 2)
    groups = {"a": rng.random(300) < 0.3, "b": rng.random(300) < 0.6}
    w = rng.uniform(0.1, 3.0, 300)
    plain = fastbias.bias_metrics(y, s, groups)
    weighted = fastbias.bias_metrics(y, s, groups, sample_weight=w) if with_weights else None
    out = {"plain": plain[%(metrics)r].to_numpy().tolist(),
           "weighted": weighted[%(metrics)r].to_numpy().tolist() if with_weights else None,
           "overall": plain.attrs["overall_auc"]}
out.update(file=fastbias.__file__, cache_dir=numba.config.CACHE_DIR)
print(json.dumps(out))
""" % {"metrics": METRICS}


def expected_child_numbers():
    rng = np.random.default_rng(3)
    y = rng.random(300) < 0.4
    s = np.round(rng.random(300), 2)
    groups = {"a": rng.random(300) < 0.3, "b": rng.random(300) < 0.6}
    w = rng.uniform(0.1, 3.0, 300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = fastbias.bias_metrics(y, s, groups)
        weighted = fastbias.bias_metrics(y, s, groups, sample_weight=w)
    for name, member in groups.items():  # the parent's numbers are themselves checked
        expected = brute_force_metrics(y, s, member)
        for metric in METRICS:
            assert abs(plain.loc[name, metric] - expected[metric]) < 1e-12
    return plain[METRICS].to_numpy(), weighted[METRICS].to_numpy(), plain.attrs["overall_auc"]


def run_child(env_updates, cwd):
    # only the plain (unweighted) path in the read-only children: each compiles from scratch
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("NUMBA_") and k not in ("CHILD_WITH_WEIGHTS", "CHILD_ONE_KERNEL")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **env_updates)
    result = subprocess.run([sys.executable, "-c", CHILD_CODE], env=env, cwd=cwd,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def assert_child_matches_parent(output, site):
    assert Path(output["file"]).resolve().parent == (site / "fastbias").resolve()
    if "distinct" in output:  # (one kernel: the distinct rows of 0 0 2 5 5 7)
        assert output["distinct"] == 4
        return
    plain, weighted, overall = expected_child_numbers()
    np.testing.assert_array_equal(np.array(output["plain"], dtype=float), plain)
    if output["weighted"] is not None:
        np.testing.assert_allclose(np.array(output["weighted"], dtype=float), weighted,
                                   rtol=1e-13, atol=1e-15)
    assert output["overall"] == overall


@pytest.fixture
def read_only_copy(tmp_path):
    """A copy of the package whose directory numba cannot write its cache into.

    As a normal user the copy is made read-only with chmod. As root (who
    ignores permissions) the same effect is obtained by putting a *file*
    named ``__pycache__`` where numba would create its cache directory.
    """
    site = tmp_path / "site"
    shutil.copytree(PACKAGE_DIR, site / "fastbias",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    package = site / "fastbias"
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        for folder in [package, *(p for p in package.rglob("*") if p.is_dir())]:
            (folder / "__pycache__").write_text("not a directory: the cache cannot go here\n")
        read_only = []
    else:
        read_only = [package, *package.rglob("*")]
        for path in read_only:
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        if os.access(package, os.W_OK):
            pytest.skip("cannot make a directory read-only here")
    yield site
    for path in read_only:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.mark.jit_heavy
def test_read_only_install_falls_back_to_user_cache(read_only_copy, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    output = run_child({"PYTHONPATH": str(read_only_copy), "HOME": str(home),
                        "XDG_CACHE_HOME": str(home / ".cache")}, cwd=tmp_path)
    assert_child_matches_parent(output, read_only_copy)
    assert not any(p.is_dir() for p in (read_only_copy / "fastbias").rglob("__pycache__"))
    assert list((home / ".cache").rglob("*.nbi")), "numba should have cached in the user cache"


@pytest.mark.jit_heavy
def test_read_only_install_without_writable_cache_uses_temp_dir(read_only_copy, tmp_path):
    # neither the package nor the user cache directory can be written: numba alone
    # would raise "cannot cache function ...: no locator available" at import
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, so nothing can be created below it\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    output = run_child({"PYTHONPATH": str(read_only_copy), "HOME": str(blocked),
                        "XDG_CACHE_HOME": str(blocked / "cache"), "TMPDIR": str(temp),
                        "CHILD_ONE_KERNEL": "1"},
                       cwd=tmp_path)
    assert_child_matches_parent(output, read_only_copy)
    assert list(temp.glob("fastbias-numba-cache-*/**/*.nbi"))


@pytest.mark.jit_heavy
def test_unwritable_numba_cache_dir_does_not_break_the_import(read_only_copy, tmp_path):
    # NUMBA_CACHE_DIR that cannot be created (below a file): numba would find no locator
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, so nothing can be created below it\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    output = run_child({"PYTHONPATH": str(read_only_copy), "HOME": str(blocked),
                        "XDG_CACHE_HOME": str(blocked / "cache"), "TMPDIR": str(temp),
                        "NUMBA_CACHE_DIR": str(blocked / "numba"),
                        "CHILD_ONE_KERNEL": "1"}, cwd=tmp_path)
    assert_child_matches_parent(output, read_only_copy)
    assert Path(output["cache_dir"]).parent == temp


# ------------------------------------------------------------------ who may write the cache

def test_private_directory_rules(tmp_path):
    from fastbias._numba_cache import is_private_directory

    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    assert is_private_directory(private)
    assert not is_private_directory(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    assert not is_private_directory(tmp_path / "file")
    for mode in (0o777, 0o770, 0o702, 0o720):
        private.chmod(mode)
        assert not is_private_directory(private), oct(mode)
    private.chmod(0o755)
    assert is_private_directory(private)  # readable by others is fine, writable is not
    # a parent others can write in (not sticky) lets them replace the directory
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    inner = shared / "cache"
    inner.mkdir(mode=0o700)
    inner.chmod(0o700)
    assert not is_private_directory(inner)
    shared.chmod(0o1777)  # sticky, as /tmp: others cannot rename what is ours
    assert is_private_directory(inner)
    link = tmp_path / "link"
    link.symlink_to(inner, target_is_directory=True)
    assert is_private_directory(link)  # judged by what it points to
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # only root can give a file away
        os.chown(inner, 4321, 4321)
        assert not is_private_directory(inner, uid=1234)
        assert is_private_directory(inner, uid=4321)


@pytest.mark.jit_heavy
def test_cache_directory_others_can_write_is_never_used(tmp_path):
    planted = tmp_path / "planted"
    planted.mkdir()
    planted.chmod(0o777)  # anyone could have put pickled "cache" files here
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    output = run_child({"PYTHONPATH": str(PACKAGE_DIR.parent), "NUMBA_CACHE_DIR": str(planted),
                        "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
                        "CHILD_ONE_KERNEL": "1"},
                       cwd=tmp_path)
    assert_child_matches_parent(output, PACKAGE_DIR.parent)
    assert output["cache_dir"] == str(home / ".cache" / "fastbias-numba")
    assert not any(planted.rglob("*")), "numba wrote into (and so could read from) it"
    assert stat.S_IMODE((home / ".cache" / "fastbias-numba").stat().st_mode) == 0o700


@pytest.mark.jit_heavy
def test_predictable_fallback_planted_by_another_user_is_not_trusted(read_only_copy, tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file: no user cache directory can be made\n")
    temp = tmp_path / "tmp"
    temp.mkdir()
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    planted = temp / f"fastbias-numba-cache-{uid}"
    planted.mkdir()
    planted.chmod(0o777)
    output = run_child({"PYTHONPATH": str(read_only_copy), "HOME": str(blocked),
                        "XDG_CACHE_HOME": str(blocked / "cache"), "TMPDIR": str(temp),
                        "CHILD_ONE_KERNEL": "1"},
                       cwd=tmp_path)
    assert_child_matches_parent(output, read_only_copy)
    used = Path(output["cache_dir"])
    assert used != planted and used.parent == temp and used.name.startswith("fastbias-numba-")
    assert stat.S_IMODE(used.stat().st_mode) == 0o700
    assert not any(planted.rglob("*"))


def test_pure_python_kernels_give_the_same_numbers(tmp_path):
    # NUMBA_DISABLE_JIT=1 runs every kernel as plain Python (also used for coverage)
    output = run_child({"NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(PACKAGE_DIR.parent),
                        "CHILD_WITH_WEIGHTS": "1"}, cwd=tmp_path)
    assert output["weighted"] is not None
    assert_child_matches_parent(output, PACKAGE_DIR.parent)


# ------------------------------------------------------------------ threads

def _dataset(seed, n):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < rng.uniform(0.2, 0.6)
    s = np.round(rng.random(n), 3) if seed % 2 else rng.random(n).astype(np.float32)
    groups = {f"g{k}": rng.random(n) < rng.uniform(0.05, 0.5) for k in range(4)}
    w = rng.uniform(0.1, 5.0, n) if seed % 3 == 0 else None
    return y, s, groups, w


def _metrics(args):
    y, s, groups, w = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return fastbias.bias_metrics(y, s, groups, sample_weight=w)


@skip_without_jit
def test_concurrent_calls_from_threads_equal_serial_calls():
    datasets = [_dataset(seed, 40_000 + 1_000 * seed) for seed in range(12)]
    serial = [_metrics(d) for d in datasets]
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _ in range(2):
            concurrent = list(pool.map(_metrics, datasets))
            for a, b in zip(serial, concurrent):
                pd.testing.assert_frame_equal(a, b)
                assert a.attrs["overall_auc"] == b.attrs["overall_auc"]


def test_concurrent_small_calls_equal_brute_force():
    datasets = [_dataset(seed, 150 + seed) for seed in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        tables = list(pool.map(_metrics, datasets))
    for (y, s, groups, w), table in zip(datasets, tables):
        for name, member in groups.items():
            expected = brute_force_metrics(y, s, member, w)
            for metric in METRICS:
                got, want = table.loc[name, metric], expected[metric]
                assert (np.isnan(got) and np.isnan(want)) or abs(got - want) < 1e-12


@skip_without_jit
def test_concurrent_evaluate_calls_sharing_one_dataframe():
    df = fastbias.make_jigsaw_like(n_rows=30_000, n_identities=4, random_state=2)
    identities = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")
                  and pd.api.types.is_numeric_dtype(df[c])][:4]

    def run(model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedMetricWarning)
            return fastbias.evaluate(df, label="toxicity", scores=model, subgroups=identities)

    serial = {m: run(m).table for m in ["model_fair", "model_biased"]}
    with ThreadPoolExecutor(max_workers=4) as pool:
        models = ["model_fair", "model_biased"] * 4
        for model, result in zip(models, pool.map(run, models)):
            pd.testing.assert_frame_equal(result.table, serial[model])


# ------------------------------------------------------------------ inputs untouched

def test_inputs_are_not_modified():
    rng = np.random.default_rng(8)
    n = 500
    y = rng.random(n) < 0.5
    s = np.where(rng.random(n) < 0.1, -0.0, rng.random(n))  # -0.0 is mapped to +0.0 internally
    s[::7] = np.nan
    groups = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n)})
    w = rng.uniform(0.0, 2.0, n)
    originals = (y.copy(), s.copy(), groups.copy(), w.copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastbias.bias_metrics(y, s, groups, sample_weight=w, subgroup_threshold=0.5,
                              nan_policy="omit")
        fastbias.overall_auc(y, s, sample_weight=w, nan_policy="omit")
    np.testing.assert_array_equal(y, originals[0])
    assert np.array_equal(s, originals[1], equal_nan=True)
    assert np.array_equal(np.signbit(s), np.signbit(originals[1]))
    pd.testing.assert_frame_equal(groups, originals[2])
    np.testing.assert_array_equal(w, originals[3])
