"""Shared pytest fixtures.

``shared_data`` points at the real data sets in ``../shared/data`` (relative to
the repository root). They are never copied into the repository; every test
that needs them skips cleanly when the directory is absent.
"""
import os
from pathlib import Path

import pytest

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


#: test modules about what surrounds the kernels (reports, the command line, the browser, a
#: Dask cluster's behaviour, threads, docs, the numpy first-call tier, cache directories, file
#: sources, validation and fuzzing of the entry points, the wrappers for sklearn, fairlearn and
#: boosting libraries): the uncompiled run, which is there to execute the kernels' code line by
#: line, leaves them to the compiled run. Every kernel line they reach is reached by the modules
#: that stay (measured with coverage on 2026-11-25: the same lines of every ``_kernels.py``
#: covered with and without them, 98-99%), and leaving them out takes about two fifths off the
#: uncompiled run
NOT_ABOUT_KERNELS = {"test_aggregates", "test_architecture", "test_boosting",
                     "test_bounded_memory", "test_browser", "test_cli", "test_compat",
                     "test_dask", "test_docs", "test_docstrings", "test_evaluate",
                     "test_first_call", "test_fuzz", "test_hostile_names", "test_limits",
                     "test_never_silently_wrong", "test_notebooks", "test_progress",
                     "test_report", "test_robustness", "test_sensitive_features", "test_sklearn",
                     "test_synthetic", "test_threads", "test_validation",
                     "test_cli_reference", "test_docs_claims_reference",
                     "test_docs_claims_session34_reference", "test_session34_diff_reference",
                     "test_session33_mutants_reference", "test_security_session34_reference",
                     "test_out_of_core_equality_reference", "test_identity_members_reference",
                     "test_model_selection_session34_reference",
                     "test_threshold_costs_reference", "test_session34_mutants_reference",
                     "test_boosting_cgroup_session34_reference",
                     "test_report_ties_session34_reference",
                     "test_fuzz_paths_reference", "test_dask_cluster_reference",
                     "test_parallel_reference", "test_docs_synthetic_reference",
                     "test_report_statements_reference", "test_security_session32_reference",
                     "test_dask_columns_reference", "test_json_lines_reference",
                     "test_reports_out_of_core_reference", "test_fuzz_session32_reference",
                     "test_session32_late_reference", "test_sensitive_features_late_reference",
                     "test_first_call_tier_reference", "test_terminal_reference",
                     "test_cli_options_reference", "test_late_mutants_reference",
                     "test_session33_diff_reference", "test_dask_messages_reference",
                     "test_foreign_inputs_reference", "test_limits_reference",
                     "test_session33_late_reference", "test_delong_near_one_reference"}


def pytest_collection_modifyitems(config, items):
    """Under NUMBA_DISABLE_JIT=1 (kernels run as Python) skip the tests marked jit_heavy and
    the modules of :data:`NOT_ABOUT_KERNELS`."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        skip = pytest.mark.skip(reason="jit_heavy: too slow with NUMBA_DISABLE_JIT=1")
        elsewhere = pytest.mark.skip(reason="not about the kernels: run compiled only")
        for item in items:
            if "jit_heavy" in item.keywords:
                item.add_marker(skip)
            elif Path(str(item.fspath)).stem in NOT_ABOUT_KERNELS:
                item.add_marker(elsewhere)


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
