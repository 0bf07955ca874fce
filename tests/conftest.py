"""Shared pytest fixtures.

``shared_data`` points at the real data sets in ``../shared/data`` (relative to
the repository root). They are never copied into the repository; every test
that needs them skips cleanly when the directory is absent.
"""
import os
from pathlib import Path

import pytest

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


def pytest_collection_modifyitems(config, items):
    """Under NUMBA_DISABLE_JIT=1 (kernels run as Python) skip the tests marked jit_heavy."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        skip = pytest.mark.skip(reason="jit_heavy: too slow with NUMBA_DISABLE_JIT=1")
        for item in items:
            if "jit_heavy" in item.keywords:
                item.add_marker(skip)
