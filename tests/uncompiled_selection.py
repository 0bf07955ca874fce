"""The tests the uncompiled CI run keeps (``NUMBA_DISABLE_JIT=1``: the kernels run as Python).

That run is there so that every kernel line runs as Python too (coverage cannot see compiled
code, and ``NUMBA_DISABLE_JIT=1`` is how one steps through a kernel): it keeps the tests of
:data:`KERNEL_LINE_TESTS`, chosen by :func:`select` from a coverage run of the whole uncompiled
suite with one context per test, so that every line of a ``fastbias/**/_kernels.py`` that the
whole suite reaches is reached by at least :data:`COVER` of them (by all of them where fewer
reach it), taken greedily by new lines a second. Every test still runs compiled (the README's
test command); ``FASTBIAS_UNCOMPILED_ALL=1`` runs every test uncompiled too (as for a mutation
audit of a kernel), less those marked ``jit_heavy``.

Measured on 2026-11-28 (thirty-ninth session): uncompiled, the whole suite (2,221 tests, 435 s
of test time on the 2-core VM) reaches 1,946 kernel lines; the 93 test functions below (about
74 s) reach the same 1,946, each line by three or by all that reach it. Regenerate after
changing kernels or their tests::

    FASTBIAS_UNCOMPILED_ALL=1 NUMBA_DISABLE_JIT=1 COVERAGE_FILE=/tmp/uncompiled.coverage \
        python -m pytest -q -n auto -p no:cacheprovider --cov=fastbias --cov-context=test \
        --cov-report= --durations=0 > /tmp/uncompiled-durations.txt
    python -m tests.uncompiled_selection /tmp/uncompiled.coverage /tmp/uncompiled-durations.txt
"""
from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict

#: how many kept tests must reach each kernel line (all of them where fewer do)
COVER = 3

#: ``module::function`` of the tests the uncompiled run keeps (all their parameters)
KERNEL_LINE_TESTS = frozenset({
    "test_aggregates_reference::test_paired_delong_degenerate_variance_is_not_a_certain_difference",
    "test_core_adversarial_reference::test_integer_scores_at_2_53_are_exact",
    "test_core_reference::test_overall_auc_equals_sklearn",
    "test_csv_fields::test_field_counts_across_chunk_edges",
    "test_csv_fields::test_ragged_records_are_refused_naming_the_line",
    "test_csv_fields::test_well_formed_files_read",
    "test_evaluator::test_bad_index_is_named",
    "test_evaluator::test_sorted_scores_extreme_values",
    "test_evaluator_reference::test_bad_index_errors",
    "test_evaluator_reference::test_labelled_evaluator_refuses_label_index_and_misaligned_scores",
    "test_evaluator_reference::test_model_names_string_and_repeated_metrics_are_refused",
    "test_evaluator_reference::test_overall_auc_of_one_class_fold_warns_under_propagate",
    "test_evaluator_reference::test_scores_changed_in_place_are_not_stale",
    "test_exact_sums::test_streamed_tests_from_joined_exact_sums_are_exact",
    "test_exact_sums::test_the_gaps_from_joined_exact_sums_read_each_subgroups_own_universe",
    "test_fuzz_session33_reference::test_bnsp_se_with_weightless_background_positives_in_memory",
    "test_fuzz_session33_reference::test_float32_identity_at_threshold_compared_as_real_numbers",
    "test_fuzz_session33_reference::test_separated_subgroup_out_of_core_gives_the_exact_zero",
    "test_fuzz_session33_reference::test_separated_subgroup_with_weightless_background_has_se_zero_in_memory",
    "test_intersections::test_combination_codes_follow_the_rules_row_by_row",
    "test_intersections_reference::test_dask_feature_of_tuples_is_evaluated_or_refused_by_name",
    "test_intersections_reference::test_evaluate_csv_a_true_false_column_as_subgroup_and_feature_under_exclude",
    "test_intervals::test_bootstrap_replicates_check_their_weights",
    "test_intervals::test_paired_test_matches_reference_covariances",
    "test_intervals::test_paired_test_se_agrees_with_single_model_sweep_and_handles_empty_cells",
    "test_intervals::test_unweighted_bootstrap_uses_exact_integer_counts",
    "test_intervals::test_weighted_bootstrap_final_metric_of_replicates_with_an_auc_of_zero",
    "test_intervals_out_of_core::test_out_of_core_bernstein_intervals_equal_memory",
    "test_intervals_out_of_core::test_out_of_core_delong_under_exclude",
    "test_kernels::test_block_boundary_never_splits_equal_scores",
    "test_kernels::test_counts_of_two_adjacent_ranges_join_exactly",
    "test_kernels::test_counts_on_many_threads_equal_one",
    "test_kernels::test_radix_sort_carries_the_same_payload_in_int64_and_int32",
    "test_kernels::test_radix_sort_of_a_class_equals_sorting_its_rows",
    "test_kernels::test_replicate_counts_by_walk_equal_prefix_sums_and_pair_counts",
    "test_kernels::test_sort_classes_equals_numpy_sort",
    "test_late_changes_reference::test_bom_then_quoted_header_field_with_separator",
    "test_late_changes_reference::test_exclude_delong_overall_out_of_core",
    "test_late_changes_reference::test_guard_accepts_pandas_valid",
    "test_late_changes_reference::test_guard_refuses_short_and_long",
    "test_late_changes_reference::test_lone_cr_blank_line_then_separator_led_record",
    "test_membership_mutants::test_combination_codes_brute_force",
    "test_membership_mutants::test_evaluate_csv_with_an_empty_first_batch_of_a_boolean_column",
    "test_membership_mutants::test_object_booleans_are_boolean_batches",
    "test_membership_mutants::test_subgroups_with_their_own_missing_rows_exclude_only_their_own",
    "test_memberships_mutants_session35_reference::test_all_true_boolean_column_of_every_small_length",
    "test_memberships_mutants_session35_reference::test_all_true_dense_matrix_of_small_lengths",
    "test_memberships_mutants_session35_reference::test_dense_csr_on_numba_pieces_against_nonzero",
    "test_memberships_mutants_session35_reference::test_dense_matrix_with_k_where_float_division_undershoots",
    "test_memberships_mutants_session35_reference::test_dense_scan_on_threads_with_ranges_not_multiple_of_8",
    "test_native::test_a_forked_child_uses_the_pool_after_the_parent_started_numba_threads",
    "test_native::test_by_default_in_a_call_only_under_tbb",
    "test_native::test_count_on_numba_equals_the_one_thread_walk",
    "test_native::test_dense_scan_on_numba_equals_numpy",
    "test_odd_files::test_csv_dialects_give_the_reference",
    "test_odd_files::test_evaluate_csv_sensitive_values_none_and_na_are_groups",
    "test_paired_boosting_reference::test_paired_empty_and_one_class_subgroups_nan_with_one_warning",
    "test_paired_boosting_reference::test_paired_matches_exact_delong_reference",
    "test_paired_boosting_reference::test_paired_shuffled_pandas_rows_same_result_and_misaligned_refused",
    "test_paired_weights_reference::test_paired_cells_just_above_one",
    "test_paired_weights_reference::test_paired_matches_exact_reference_on_ties_and_weights",
    "test_parquet_sources::test_partition_boundaries_from_the_sample_with_heavy_ties",
    "test_readers_and_spans_reference::test_a_quoted_carriage_return_does_not_switch_the_check_off",
    "test_readers_and_spans_reference::test_valid_files_read_at_every_chunk_size",
    "test_report_reference::test_csv_and_json_round_trip_every_number_with_tests_intervals_and_thresholds",
    "test_session31_mutants::test_undefined_points_have_no_left_out_replicates_to_warn_of",
    "test_session31_mutants::test_whole_table_left_out_counts_match_reference",
    "test_session31_mutants::test_zero_seed_is_a_seed",
    "test_significance::test_hoeffding_bound_covers_the_exact_permutation_tail",
    "test_significance::test_permutation_pvalues_match_exact_enumeration",
    "test_significance::test_permutation_pvalues_stop_early_and_are_reproducible",
    "test_significance::test_strong_gaps_in_tiny_cells_use_the_bound_not_a_million_draws",
    "test_significance_out_of_core::test_a_chunk_of_one_score_in_closed_form_equals_its_sweep",
    "test_significance_out_of_core::test_class_rows_kept_for_draws_equal_pair_counts",
    "test_sort_sweep_mutants_session36_reference::test_chunk_algebra_double_double",
    "test_sort_sweep_mutants_session36_reference::test_class_split_when_top_bucket_holds_negatives",
    "test_sort_sweep_mutants_session36_reference::test_member_counts_in_range_split_anywhere_between_blocks",
    "test_sort_sweep_mutants_session36_reference::test_order_scores_both_paths",
    "test_sort_sweep_mutants_session36_reference::test_tied_chunk_double_double",
    "test_sort_sweep_mutants_session36_reference::test_tied_chunk_joined_with_others",
    "test_sort_sweep_mutants_session36_reference::test_twice_auc_numerator_weighted_integer",
    "test_sort_sweep_mutants_session36_reference::test_weighted_counts_double_double",
    "test_sort_sweep_mutants_session36_reference::test_weighted_counts_exact",
    "test_state_between_calls_reference::test_evaluate_reads_a_dataframe_changed_in_place_afresh",
    "test_streaming::test_packed_codes_round_trip",
    "test_thresholds::test_bernstein_gap_intervals_stay_within_a_gaps_range",
    "test_thresholds::test_categorical_subgroups_and_undefined_rates",
    "test_thresholds::test_float16_scores_meet_thresholds_rounded_to_float32",
    "test_thresholds::test_out_of_core_weighted_backgrounds_keep_their_digits",
    "test_weights_exact::test_a_tiny_background_next_to_a_heavy_subgroup",
    "test_weights_exact::test_a_tiny_background_next_to_a_heavy_subgroup_in_pieces",
    "test_weights_exact::test_a_weighted_auc_that_is_exactly_zero_is_not_negative",
    "test_weights_exact::test_out_of_core_weighted_equal_exact_rationals",
})


def unit_of(nodeid: str) -> str:
    """``tests/test_x.py::test_y[p]`` -> ``test_x::test_y``: a test function, all parameters."""
    path, _, rest = nodeid.partition("::")
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    function = re.sub(r"\[.*$", "", rest)
    return f"{module}::{function}"


def select(lines_of: dict, seconds_of: dict, cover: int = COVER) -> list:
    """The units to keep: each line of ``lines_of`` (unit -> set of lines) reached by at least
    ``min(cover, units reaching it)`` of them, taken greedily by lines still needed a second
    (``seconds_of``: unit -> seconds; a unit's time counts 0.05 s more, so that a test of no
    measured time is not free)."""
    reach = Counter(line for lines in lines_of.values() for line in lines)
    need = {line: min(cover, n) for line, n in reach.items()}
    left = set(lines_of)
    kept = []
    while any(need.values()):
        def value(unit):
            return sum(1 for line in lines_of[unit] if need[line]) / (seconds_of.get(unit, 0.0)
                                                                       + 0.05)
        best = max(sorted(left), key=value)
        kept.append(best)
        left.discard(best)
        for line in lines_of[best]:
            if need[line]:
                need[line] -= 1
    return sorted(kept)


def main(coverage_file: str, durations_file: str) -> None:  # pragma: no cover - a tool
    from coverage import CoverageData

    data = CoverageData(basename=coverage_file)
    data.read()
    lines_of = defaultdict(set)
    for path in data.measured_files():
        if not re.search(r"fastbias/.*_kernels\.py$", path.replace("\\", "/")):
            continue
        for line, contexts in data.contexts_by_lineno(path).items():
            for context in contexts:
                if context:
                    lines_of[unit_of(context.rsplit("|", 1)[0])].add((path, line))
    seconds_of = defaultdict(float)
    with open(durations_file, encoding="utf-8") as handle:
        for row in handle:
            found = re.match(r"^([0-9.]+)s (?:call|setup|teardown)\s+(\S+)", row)
            if found:
                seconds_of[unit_of(found.group(2))] += float(found.group(1))
    kept = select(lines_of, seconds_of)
    every = set().union(*lines_of.values())
    print(f"# {len(kept)} of {len(lines_of)} tests reaching kernel lines, "
          f"{sum(seconds_of[u] for u in kept):.0f} s of {sum(seconds_of.values()):.0f} s; "
          f"{len(every)} kernel lines")
    for unit in kept:
        print(f'    "{unit}",')


if __name__ == "__main__":  # pragma: no cover - a tool
    main(*sys.argv[1:3])
