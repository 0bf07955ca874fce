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
NOT_ABOUT_KERNELS = {"test_tier_session38_reference", "test_mutants_session38_reference",
                     "test_permodel_session38_reference",
                     "test_files_session37_reference", "test_threads_session37_reference",
                     "test_omit_session37_reference", "test_outputs_session37_reference",
                     "test_session37_diff_reference", "test_permodel_session37_reference",
                     "test_aggregates", "test_architecture", "test_boosting",
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
                     "test_session33_late_reference", "test_delong_near_one_reference",
                     "test_first_call_tier_session35_reference",
                     "test_cli_session35_reference", "test_data_files_session35_reference",
                     "test_session35_diff_reference", "test_pandas_inputs_session35_reference",
                     "test_reports_session35_reference", "test_session35_late_reference",
                     "test_session36_reference", "test_integrations_session36_reference",
                     "test_names_session36_reference",
                     "test_permutation_seeds_session36_reference",
                     "test_dask_session36_reference",
                     # (an interval review through the public API; uncompiled it ran > 10 min)
                     "test_intervals_session36_reference",
                     "test_session36_diff_reference", "test_session36_late_reference"}

#: test modules and tests about the kernels whose every kernel line, as Python, is reached by
#: the tests that stay in the uncompiled run (measured on 2026-11-27 with coverage per test: of
#: the 12,238 kernel lines that run reaches, none is reached only by these, taken together;
#: they took half of its time, about two minutes of CI). They run compiled, as every test does
COVERED_ELSEWHERE = {
    "test_weights_session37_reference",
    "test_intervals_combinations_reference", "test_intersections_intervals_session34_reference",
    "test_significance_reference", "test_core_properties", "test_memberships_reference",
    "test_paired_bernstein_reference", "test_intervals_out_of_core_reference",
    "test_thresholds_reference", "test_out_of_core_session35_reference",
    "test_metrics_intervals_mutants_session35_reference", "test_numeric_edges_session35_reference",
    "test_pos_label_out_of_core::test_out_of_core_pos_label_equals_evaluate",
    "test_kernels::test_sort_classes_large_inputs",
    "test_core_adversarial_reference::test_evaluator_metrics_and_metrics_many",
    "test_core_adversarial_reference::test_unweighted_adversarial_scores_bit_exact",
    "test_weights_exact::test_weighted_sums_in_pieces_equal_exact_rationals_on_any_thread_count",
    "test_kernels::test_the_walks_keys_made_in_numpy_are_the_sorts_keys",
    "test_state_between_calls_reference::"
    "test_one_evaluator_from_eight_threads_with_different_scores_and_folds",
    "test_exact_sums::test_chunks_exact_sums_joined_are_the_brute_force_sums",
    "test_intervals::test_evaluate_under_exclude_gives_the_overall_auc_interval_of_all_rows",
    "test_exact_sums::test_exact_walk_sums_are_the_brute_force_sums",
    "test_first_call_out_of_core_reference::test_out_of_core_tier_equals_the_kernels_on_ordinary_data",
    "test_weights_exact::test_evaluator_and_evaluate_weighted_equal_exact_rationals",
    "test_intersections_reference::test_every_entry_point_equals_the_brute_force",
    "test_thresholds::test_evaluate_thresholds_equal_the_arrays_entry_point_per_universe",
    "test_significance::test_weighted_metrics_on_the_overall_aucs_own_samples_are_not_flagged",
    "test_kernels::test_replicate_weights_by_walk_equal_exact_sums",
    "test_significance::test_a_subgroup_shifted_in_both_classes_keeps_its_subgroup_auc_unflagged",
    "test_weights_exact::test_power_of_two_scaling_changes_nothing",
    "test_first_call_out_of_core_reference::"
    "test_out_of_core_tier_unweighted_background_pvalue_equals_the_kernels",
    "test_evaluator_reference::test_two_threads_on_one_evaluator_with_evicting_fold_cache",
    "test_intervals::test_coverage_study_truth_matches_a_large_sample",
}


def pytest_collection_modifyitems(config, items):
    """Under NUMBA_DISABLE_JIT=1 (kernels run as Python) skip the tests marked jit_heavy and
    the modules of :data:`NOT_ABOUT_KERNELS`, and the modules and tests of
    :data:`COVERED_ELSEWHERE`."""
    if os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"):
        skip = pytest.mark.skip(reason="jit_heavy: too slow with NUMBA_DISABLE_JIT=1")
        elsewhere = pytest.mark.skip(reason="not about the kernels: run compiled only")
        covered = pytest.mark.skip(reason="its kernel lines are reached by others: run compiled "
                                          "only")
        for item in items:
            module = Path(str(item.fspath)).stem
            if "jit_heavy" in item.keywords:
                item.add_marker(skip)
            elif module in NOT_ABOUT_KERNELS:
                item.add_marker(elsewhere)
            elif {module, f"{module}::{item.originalname}"} & COVERED_ELSEWHERE:
                item.add_marker(covered)


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
