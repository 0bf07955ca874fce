"""Shared pytest fixtures.

``shared_data`` points at the real data sets in ``../shared/data`` (relative to
the repository root). They are never copied into the repository; every test
that needs them skips cleanly when the directory is absent.
"""
import os
from pathlib import Path

import pytest

from tests.uncompiled_selection import KERNEL_LINE_TESTS, unit_of

# every call compiles first and gives the kernels' bits, whatever the cache holds (a fresh CI
# machine would otherwise answer some calls in numpy, a few ulps apart, while children compile);
# tests/test_first_call.py turns the first-call tier on where it tests it
os.environ["FASTBIAS_FIRST_CALL"] = "0"

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"
SHARED_DATA_DIR = SHARED_DIR / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; skips the test when it is not there."""
    if not SHARED_DATA_DIR.is_dir():
        pytest.skip(f"real data not available ({SHARED_DATA_DIR} is absent)")
    return SHARED_DATA_DIR


@pytest.fixture(scope="session")
def madlibs_dir(shared_data) -> Path:
    """Path of ``../shared/data/madlibs``; skips the test when it is not there."""
    path = shared_data / "madlibs"
    if not path.is_dir():
        pytest.skip(f"madlibs data not available ({path} is absent)")
    return path


#: the uncompiled run (``NUMBA_DISABLE_JIT=1``, the CI's second run) keeps only the tests of
#: :data:`tests.uncompiled_selection.KERNEL_LINE_TESTS`, which reach every kernel line the whole
#: suite reaches, each by three of them (measured with coverage; the module says how to measure
#: it again); ``FASTBIAS_UNCOMPILED_ALL=1`` keeps every test, as does a run of test files or
#: tests named on the command line. Tests marked ``jit_heavy`` skip either way. Every test runs
#: compiled.
UNCOMPILED = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
SELECTED_MODULES = {unit.split("::")[0] for unit in KERNEL_LINE_TESTS}


def _selected(config) -> bool:
    """Whether this run keeps only the selection: uncompiled, not FASTBIAS_UNCOMPILED_ALL=1,
    and run as a whole (folders, not test files or tests named: those run as asked)."""
    return (UNCOMPILED and os.environ.get("FASTBIAS_UNCOMPILED_ALL", "0") in ("", "0")
            and all(Path(arg.split("::")[0]).is_dir() for arg in config.args))


def pytest_ignore_collect(collection_path, config):
    """Uncompiled, a test module none of whose tests is kept is not even imported."""
    if (collection_path.suffix == ".py" and collection_path.name.startswith("test_")
            and collection_path.stem not in SELECTED_MODULES and _selected(config)):
        return True
    return None


def pytest_collection_modifyitems(config, items):
    """Uncompiled, skip the tests marked jit_heavy and deselect those not kept."""
    if not UNCOMPILED:
        return
    if _selected(config):
        kept = [item for item in items if unit_of(item.nodeid) in KERNEL_LINE_TESTS]
        dropped = [item for item in items if unit_of(item.nodeid) not in KERNEL_LINE_TESTS]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept
    skip = pytest.mark.skip(reason="jit_heavy: too slow with NUMBA_DISABLE_JIT=1")
    for item in items:
        if "jit_heavy" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def client():
    """A ``distributed`` LocalCluster of 2 worker processes, 1 thread each, and its Client
    (one per test module that asks for it; skipped without distributed)."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    dask_client = distributed.Client(cluster)
    try:
        yield dask_client
    finally:
        dask_client.close()
        cluster.close()
