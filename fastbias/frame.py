"""DataFrame entry point: bias metrics of one or many models, Jigsaw-layout columns as they come.

Labels and memberships are prepared once and shared by all models; each model
then costs one sort and one sweep, and models run in parallel threads (the
kernels release the GIL). ``nan_policy="omit"`` evaluates groups of models
that share their dropped rows.
"""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd

from ._threads import lend_helper
from .intervals.attach import (
    FINAL_INTERVAL_ATTRS,
    OVERALL_INTERVAL_ATTRS,
    WHOLE_TABLE_HEAD,
    attach_intervals,
    check_ci,
)
from .intervals.bootstrap import (
    bootstrap_seed,
    check_n_boot,
    keeps_numpy_plan,
    models_at_once,
)
from .intervals.significance import (
    add_pvalues,
    adjust_table,
    check_significance,
    joined_universes,
)
from .intervals.thresholds import check_threshold_options
from .metrics.definitions import METRIC_COLUMNS
from .metrics.table import overall_auc_from_counts, table_from_counts
from .metrics.thresholds import (
    check_threshold_weights,
    check_thresholds,
    threshold_counts,
    threshold_counts_in_numpy,
    threshold_table,
)
from .prepare.memberships import (
    category_memberships,
    check_intersections,
    group_by_missing,
    intersection_missing,
    named_intersections,
    prepare_memberships,
    read_identity_columns,
)
from .progress import Bar
from .sort.order import SortedScores, sort_classes
from .sweep.counts import count_sorted, sweep_counts
from .sweep.first_call import (
    FIRST_CALL_MAX_ROWS,
    compile_in_background,
    counts_and_plan,
    counts_in_numpy,
    families_for,
)
from .sweep.parallel import (
    CONCURRENT_SWEEP_MIN_ROWS,
    count_in_numpy_now,
    map_in_threads,
)
from .tables.result import EvaluationResult, evaluation_result, threshold_result
from .validate.categories import category_codes, warn_features_without_values
from .validate.columns import (
    check_aligned,
    check_length,
    column_values,
    frame_columns,
    from_foreign,
    names_column,
    require_columns,
    rows_kept,
)
from .validate.errors import OmittedRowsWarning, gathered, warn_listed
from .validate.rows import _score_drop_what, rows_digest, rows_to_omit, score_drop_mask
from .validate.settings import (
    check_confidence,
    check_label_options,
    check_missing_policy,
    check_nan_policy,
    check_threshold,
    resolve_n_jobs,
    resolve_workers,
)
from .validate.spec import check_unique_names
from .validate.subgroups import identity_column
from .validate.values import (
    INTERVAL_RESOLUTION_BITS,
    as_labels,
    as_sample_weight,
    as_scores,
    check_weight_resolution_of,
)


def evaluate(df: pd.DataFrame, *, label: str, scores, subgroups=None,
             label_threshold: float = 0.5,
             subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
             sample_weight=None, n_jobs: int | None = None, ci: str | None = None,
             confidence: float = 0.95, n_boot: int = 1000, random_state=None,
             nan_policy: str = "raise", pos_label=None, intersections: int | None = None,
             min_subgroup_size: int = 1, significance: str | None = None,
             sensitive_features=None, thresholds=None, threshold_interval: str | None = "wilson",
             gap_interval: str | None = None) -> EvaluationResult:
    """Bias metrics for one or many models from a DataFrame, as the data comes.

    Labels and subgroup memberships are prepared once and shared by all
    models; each model then costs one sort and one sweep, and models run in
    parallel threads (the kernels release the GIL).

    Parameters
    ----------
    df : pandas.DataFrame
        One row per example.
    label : str
        Label column: boolean, 0/1, or a fraction in [0, 1] (e.g. Jigsaw's
        ``target``) binarised as ``>= label_threshold``. Numbers outside
        [0, 1] are an error naming the value and its row.
    scores : str or list of str
        Score column(s), one per model.
    subgroups : list of str, optional
        Identity columns: boolean, or numeric (e.g. annotator fractions)
        binarised as ``>= subgroup_threshold``; NaN means "not annotated".
        Optional where ``sensitive_features`` are given.
    label_threshold : float or None, default 0.5
        Positive iff ``label >= label_threshold``; None insists on labels
        that are exactly 0/1 (or boolean). Boolean labels ignore it.
    subgroup_threshold : float, default 0.5
        Member iff ``value >= subgroup_threshold`` for numeric identity
        columns; boolean columns are memberships as they are.
    missing_subgroup : {"background", "exclude"}, default "background"
        What an unannotated (NaN) identity value means: "background" counts
        the row as background for that subgroup (what the Jigsaw competition
        did); "exclude" leaves it out of that subgroup's background.
    sample_weight : str or array-like, optional
        A weight column name or an array of non-negative weights.
    n_jobs : int, optional
        Threads for the models (default: one per model, at most the CPU count).
    ci : {None, "delong", "bootstrap", "bernstein"}, optional
        Add ``<metric>_low``/``<metric>_high`` interval columns.
    confidence : float, default 0.95
    n_boot : int, default 1000
        Bootstrap replicates (``ci="bootstrap"``).
    random_state : int, numpy Generator or SeedSequence, optional
        Seed for the bootstrap, resolved once for the call (a Generator drawn from once,
        a SeedSequence read, not spawned from): every model, and every set of rows of
        ``missing_subgroup="exclude"``, is resampled with the same counts.
    nan_policy : {"raise", "omit"}, default "raise"
        "omit" drops rows with a missing label or weight (for every model)
        and, per model, rows whose score is NaN, missing or infinite, with
        one ``OmittedRowsWarning`` giving the count per column; so models may
        be evaluated on different rows (``settings["omitted_rows"]``).
        Missing identity values are governed by ``missing_subgroup``.
    pos_label : scalar, optional
        The positive class of a two-valued, non-0/1 label column (strings,
        categoricals); ``label_threshold`` is then not used (one other than the
        default 0.5 beside it is a ValueError).
    intersections : {None, 2, 3}, optional
        Also a row for every pair (2), or pair and triple (3), of the
        subgroups whose rows overlap, named ``"a & b"`` in the order the
        subgroups were given, after the subgroups, pairs before triples. With
        ``missing_subgroup="exclude"`` an intersection's background leaves
        out the rows unannotated for any of its identities. Same sort and
        sweep (see ``docs/intersections.md``).
    min_subgroup_size : int, default 1
        An intersection is kept only with at least this many rows of each
        class (by default: every metric of its row is defined).
    significance : {None, "holm", "bh"}, optional
        Per model, test every subgroup's (and intersection's) metrics for
        "no bias" and adjust over all of them; adds ``<metric>_pvalue``,
        ``<metric>_pvalue_adjusted``, ``<metric>_significant`` (see
        :func:`fastbias.bias_metrics` and ``docs/significance.md``). With
        ``missing_subgroup="exclude"`` a subgroup's AUCs are compared with the
        AUC of the rows annotated for it.
    sensitive_features : list of str, optional
        Categorical columns (text, categoricals, integers, booleans): one
        subgroup per value that occurs, named ``"race=black"``, after the
        ``subgroups``; with several columns also every combination of one value
        of each that has at least ``min_subgroup_size`` rows of each class,
        named ``"race=black & gender=female"`` (the groups of fairlearn's
        ``MetricFrame``). Values in category order for a pandas Categorical,
        else sorted; a missing value forms no subgroup and is unannotated for
        ``missing_subgroup`` (see ``docs/sensitive_features.md``).
    thresholds : float or sequence of float, optional
        Also the threshold metrics of :func:`fastbias.threshold_metrics` (positive
        rate, TPR, FPR, FNR, precision of every subgroup and its background, their
        gaps) at each threshold, from the same sorts: ``result.thresholds``, one row
        per model, threshold and subgroup (see ``docs/thresholds.md``).
    threshold_interval : {"wilson", "exact", None}, default "wilson"
        The rates' intervals (at ``confidence``); "exact" without ``thresholds`` is a
        ValueError.
    gap_interval : {None, "bernstein"}, optional
        The gaps' Bernstein intervals (unweighted rows); needs ``thresholds``.

    Returns
    -------
    EvaluationResult
        ``.table`` (tidy, one row per model and subgroup), ``.overall_auc``
        (per model), ``.wide()`` and ``.for_model()`` views.

    Examples
    --------
    >>> import fastbias
    >>> df = fastbias.make_jigsaw_like(n_rows=50_000, n_identities=4, random_state=1)
    >>> res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
    ...                         subgroups=["male", "female", "transgender", "other_gender"])
    >>> res.table.shape[0]
    8
    >>> bool(res.overall_auc["model_fair"] > 0.5)
    True
    """
    df = from_foreign(df)  # (a pyarrow table or polars frame; anything else as it is)
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if not names_column(df, sample_weight):
        check_aligned([("df", df), ("sample_weight", sample_weight)])
    if check_nan_policy(nan_policy) == "omit":
        return _evaluate_omitting(df, label=label, scores=scores, subgroups=subgroups,
                                  sample_weight=sample_weight, pos_label=pos_label,
                                  label_threshold=label_threshold,
                                  subgroup_threshold=subgroup_threshold,
                                  missing_subgroup=missing_subgroup, n_jobs=n_jobs, ci=ci,
                                  confidence=confidence, n_boot=n_boot, random_state=random_state,
                                  intersections=intersections,
                                  min_subgroup_size=min_subgroup_size,
                                  significance=significance,
                                  sensitive_features=sensitive_features,
                                  thresholds=thresholds, threshold_interval=threshold_interval,
                                  gap_interval=gap_interval)
    intersections, min_subgroup_size = check_intersections(intersections, min_subgroup_size)
    subgroup_threshold = check_threshold(subgroup_threshold, "subgroup_threshold")
    check_label_options(pos_label, label_threshold)
    if pos_label is None and label_threshold is not None:
        label_threshold = check_threshold(label_threshold, "label_threshold")
    check_missing_policy(missing_subgroup)
    check_ci(ci)
    check_significance(significance)
    confidence = check_confidence(confidence)
    cuts = None if thresholds is None else check_thresholds(thresholds)
    check_threshold_options(thresholds, threshold_interval, gap_interval)
    resolve_n_jobs(n_jobs, 1)
    label, models, subgroup_names, features = frame_columns(df, label, scores, subgroups,
                                                            sensitive_features)
    n = df.shape[0]

    labels = as_labels(df[label], f"label column {label!r}", pos_label=pos_label,
                       threshold=label_threshold if pos_label is None else None, omit=True)
    feature_codes = [category_codes(df[name], name) for name in features]
    warn_features_without_values(features, [codes.values for codes in feature_codes])
    if names_column(df, sample_weight):
        require_columns(df, [sample_weight], "sample_weight", shown=False)
        weights = as_sample_weight(df[sample_weight], n, f"sample_weight column {sample_weight!r}",
                                   omit=True)
    else:
        weights = as_sample_weight(sample_weight, n, omit=True, reference="df")

    # one unweighted model on many rows: its class sort runs on a helper thread while this one
    # reads the identity columns (the membership sort and the walk then use the model's threads)
    ahead = (len(models) == 1 and weights is None and n >= CONCURRENT_SWEEP_MIN_ROWS
             and ci != "bootstrap")  # the bootstrap wants its sorts with the rows
    # (with pos_label no threshold was applied: the settings say none, as out of core)
    settings = {"label_threshold": None if pos_label is not None else label_threshold,
                "subgroup_threshold": subgroup_threshold,
                "missing_subgroup": missing_subgroup, "ci": ci, "confidence": confidence,
                "weighted": weights is not None, "nan_policy": nan_policy,
                "pos_label": pos_label, "intersections": intersections,
                "min_subgroup_size": min_subgroup_size, "significance": significance}
    if features:
        settings["sensitive_features"] = list(features)
    if cuts is not None:
        if gap_interval is not None and weights is not None:
            raise ValueError("gap_interval='bernstein' needs unweighted rows (its bound counts "
                             "examples); threshold_interval= gives the rates' intervals")
        settings.update(thresholds=cuts.tolist(), threshold_interval=threshold_interval,
                        gap_interval=gap_interval)
    if ci == "bootstrap":  # what a reader needs to repeat the intervals
        n_boot = check_n_boot(n_boot)
        settings.update(n_boot=n_boot, random_state=random_state if isinstance(
            random_state, (int, np.integer)) or random_state is None else type(random_state).__name__)
        # once for the call: every model and universe resampled with the same counts
        random_state = bootstrap_seed(random_state)
    # a fresh environment: the same exact counts in numpy while the kernels compile
    in_numpy = count_in_numpy_now(weights is not None, n <= FIRST_CALL_MAX_ROWS,
                                  thresholds=cuts is not None)
    with lend_helper(ahead and not in_numpy) as pool:
        early_classes = None
        if pool is not None:
            first_scores = as_scores(df[models[0]], f"score column {models[0]!r}", n, omit=True)
            early_classes = pool.submit(sort_classes, first_scores, labels)
        return _evaluate_prepared(df, label, models, subgroup_names, labels, weights, n,
                                  subgroup_threshold, missing_subgroup, n_jobs, ci, confidence,
                                  n_boot, random_state, settings, early_classes,
                                  in_numpy, feature_codes)



def _evaluate_prepared(df, label, models, subgroup_names, labels, weights, n, subgroup_threshold,
                       missing_subgroup, n_jobs, ci, confidence, n_boot, random_state, settings,
                       early_classes, in_numpy: bool = False,
                       feature_codes=()) -> EvaluationResult:
    """The body of :func:`evaluate` once the arguments are validated.

    ``early_classes`` (from a helper thread) is a future of the class
    sort of the single model over all rows. ``in_numpy``: the kernels still
    have to compile, so everything is counted in numpy while a background
    process compiles them (see :mod:`fastbias.sweep.first_call`). ``feature_codes``: the
    sensitive features read (their subgroups follow the others).
    """
    compiled = not in_numpy
    columns, rows_of = read_identity_columns(
        lambda name: identity_column(df, name, subgroup_threshold,
                                     want_missing=missing_subgroup == "exclude"),
        list(subgroup_names), n,
        compiled, resolve_workers(n_jobs))
    missing = [column.missing if missing_subgroup == "exclude" else None for column in columns]
    if settings["intersections"] is not None:
        base = prepare_memberships(labels, rows_of, list(subgroup_names), compiled)
        added, combos, combo_rows = named_intersections(base, settings["intersections"],
                                                        settings["min_subgroup_size"])
        settings["intersection_members"] = {
            name: [base.names[j] for j in members] for name, members in zip(added, combos)}
        subgroup_names = list(subgroup_names) + added
        rows_of += combo_rows
        missing += intersection_missing(missing, combos)
    if feature_codes:
        names, rows, unannotated, parts = category_memberships(list(feature_codes), labels,
                                                               settings["min_subgroup_size"])
        # what each row is, for the report's score distributions (no second reading rule)
        settings["sensitive_members"] = {
            name: [[feature_codes[f].name, feature_codes[f].labels[v]] for f, v in part]
            for name, part in zip(names, parts)}
        subgroup_names = list(subgroup_names) + names
        check_unique_names(subgroup_names)
        rows_of += rows
        missing += [m if missing_subgroup == "exclude" else None for m in unannotated]
    if not subgroup_names:
        raise ValueError(f"the sensitive features {settings.get('sensitive_features')} hold "
                         f"no value on any row: there is no subgroup to evaluate")
    groups = group_by_missing(missing)
    universes = []
    combined = settings.get("intersection_members") or {}
    for kept, index in groups:
        rows = [rows_of[j] if kept is None else np.searchsorted(kept, rows_of[j]) for j in index]
        sub_labels = labels if kept is None else labels[kept]
        names = [subgroup_names[j] for j in index]
        memberships = prepare_memberships(sub_labels, rows, names, compiled)
        if combined:  # (which are intersections: a bootstrap's final metric leaves them out,
            # as the point's does; found by review, its replicates and point counted them)
            memberships = dataclasses.replace(
                memberships, intersections=tuple(name for name in names if name in combined))
        universes.append((kept, memberships))
    overall_memberships = (prepare_memberships(labels, [], [], compiled)
                           if all(kept is not None for kept, _ in universes) else None)
    cuts = None if settings.get("thresholds") is None else np.asarray(settings["thresholds"])
    # the weights' resolution against each class of all the rows, whatever universe a subgroup
    # is compared in, as the out-of-core paths check it (a universe's check alone accepted
    # what evaluate_csv and Dask refuse: found by review)
    what = ("significance tests" if settings["significance"] is not None else
            "DeLong intervals" if ci == "delong" else None)
    if weights is not None and what is not None:
        check_weight_resolution_of(weights, labels, what, INTERVAL_RESOLUTION_BITS)
    if weights is not None and cuts is not None:
        check_threshold_weights(weights, labels)
    if not compiled:
        for family in families_for(weights is not None, ci, thresholds=cuts is not None,
                                   significance=settings["significance"] is not None):
            compile_in_background(family)

    def run_model(model: str):
        values = as_scores(df[model], f"score column {model!r}", n, omit=True)
        tables, overall, at_thresholds = [], None, []
        undefined = []  # each universe's undefined intervals: one warning for them all
        for kept, memberships in universes:
            s = values if kept is None else values[kept]
            w = weights if weights is None or kept is None else weights[kept]
            plan = None  # (the numpy tier's, for a bootstrap's replicates in numpy)
            if not compiled:
                sc, plan = counts_and_plan(s, memberships, w, keep=keeps_numpy_plan(
                    ci, n_boot, s.shape[0], w is not None))
            elif early_classes is not None and kept is None:
                sorted_scores = SortedScores(s, memberships, early_classes.result(),
                                             workers=model_workers)
                sc = count_sorted(sorted_scores)
            else:
                sorted_scores = SortedScores(s, memberships, with_rows=ci == "bootstrap",
                                             workers=model_workers)
                sc = count_sorted(sorted_scores, w)
            table = table_from_counts(sc, warn=False)
            table.attrs["overall_auc"] = overall_auc_from_counts(sc)  # (this universe's)
            if ci is not None:  # (in numpy too when the counts were: no sorts then)
                table = attach_intervals(table, method=ci, scores=s, memberships=memberships,
                                         sorted_scores=sorted_scores if compiled else None,
                                         sample_weight=w, confidence=confidence, n_boot=n_boot,
                                         random_state=random_state, progress=bar, warn=False,
                                         plan=plan)
                found = table.attrs.pop("undefined_intervals")
                if len(universes) > 1 or kept is not None:  # (see below)
                    found[WHOLE_TABLE_HEAD] = _overall_only(found, kept)
                undefined.append(found)
            if settings["significance"] is not None:
                table = add_pvalues(table, sorted_scores=sorted_scores if compiled else None,
                                    sample_weight=w, confidence=confidence,
                                    family_size=len(METRIC_COLUMNS) * len(subgroup_names),
                                    scores=s, memberships=memberships)
            tables.append(table)
            if cuts is not None:
                at = (threshold_counts(sorted_scores, w, cuts) if compiled
                      else threshold_counts_in_numpy(s, memberships, w, cuts))
                at_thresholds.append(threshold_table(at, memberships.names, warn=False))
            if kept is None:
                overall = overall_auc_from_counts(sc)
        if overall is None:
            overall = overall_auc_from_counts(
                counts_in_numpy(values, overall_memberships, weights) if not compiled else
                sweep_counts(values, overall_memberships, weights, workers=model_workers))
        by_threshold = None
        if cuts is not None:
            by_threshold = pd.concat(at_thresholds).reindex(
                pd.MultiIndex.from_product([cuts, subgroup_names],
                                           names=["threshold", "subgroup"]))
            by_threshold.attrs = at_thresholds[0].attrs
        joined = joined_universes(tables)
        if ci is not None and not (len(universes) == 1 and universes[0][0] is None):
            # the overall AUC's interval is of all the rows, not of a universe's; the final
            # metric's bootstrap interval would join replicates that resample each universe
            # on its own: it is not made
            whole = next((t for (kept, _), t in zip(universes, tables) if kept is None), None)
            if whole is None:
                whole = _all_rows_interval(values)
                found = whole.attrs.pop("undefined_intervals")
                found[WHOLE_TABLE_HEAD] = _overall_only(found, None)
                undefined.append(found)
            if ci == "bootstrap":
                undefined.append({"interval(s) not made (missing_subgroup='exclude' resamples "
                                  "each set of rows annotated for the subgroups on its own, so "
                                  "no replicate of the final metric joins them)":
                                  ["the final metric"]})
            for name in (*OVERALL_INTERVAL_ATTRS, *FINAL_INTERVAL_ATTRS):
                joined.attrs.pop(name, None)
            joined.attrs.update({name: whole.attrs[name] for name in OVERALL_INTERVAL_ATTRS
                                 if name in whole.attrs})
        # (this runs in the models' threads: the warning names this line, as the metrics'
        # warnings of a model do)
        warn_listed(gathered(undefined), context=f"model {model!r}", stacklevel=1)
        return joined.reindex(subgroup_names), overall, by_threshold

    def _overall_only(found: dict, kept) -> list:
        """Of the replicates a universe's overall AUC and final metric left out, what the
        table keeps: with missing_subgroup="exclude" only the overall AUC's interval of
        all the rows (``kept`` None), and no final metric's (none is made)."""
        return [entry for entry in found.get(WHOLE_TABLE_HEAD, ())
                if kept is None and entry.startswith("overall AUC")]

    def _all_rows_interval(values) -> pd.DataFrame:
        """The overall AUC's interval of all the rows (an empty table whose attrs hold it),
        where every universe leaves some rows out."""
        if compiled:
            sorted_all = SortedScores(values, overall_memberships, with_rows=ci == "bootstrap",
                                      workers=model_workers)
            sc, plan = count_sorted(sorted_all, weights), None
        else:
            sorted_all = None
            sc, plan = counts_and_plan(values, overall_memberships, weights, keep=keeps_numpy_plan(
                ci, n_boot, values.shape[0], weights is not None))
        table = table_from_counts(sc, warn=False)
        table.attrs["overall_auc"] = overall_auc_from_counts(sc)
        return attach_intervals(table, method=ci, scores=values, memberships=overall_memberships,
                                sorted_scores=sorted_all, sample_weight=weights,
                                confidence=confidence, n_boot=n_boot, random_state=random_state,
                                progress=bar, warn=False, plan=plan)

    # the models share the threads: each one's sorts and walks get its share of them
    model_threads = resolve_n_jobs(n_jobs, len(models))
    if ci == "bootstrap":  # (fewer models at once where their replicates would keep more
        # than the bound together: it bounds a call; each model then has more of the cores)
        model_threads = models_at_once(n_boot, len(subgroup_names), model_threads)
    model_workers = max(1, resolve_workers(n_jobs) // model_threads)
    # one bootstrap bar for every model and universe (and all the rows, where no universe is
    # of them all): it only counts up
    passes = len(universes) + (overall_memberships is not None)
    bar = (Bar(len(models) * passes * n_boot, "bootstrap", unit="replicate")
           if ci == "bootstrap" else None)
    try:
        results = map_in_threads(run_model, models, model_threads)
    finally:
        if bar is not None:
            bar.close()
    if settings["significance"] is not None:  # each model's p-values adjusted together
        results = [(adjust_table(table, method=settings["significance"], confidence=confidence,
                                 context=f"model {model!r}"), auc, at)
                   for model, (table, auc, at) in zip(models, results)]
    by_threshold = None
    if cuts is not None:
        by_threshold = threshold_result(models, [at for _, _, at in results],
                                        interval=settings["threshold_interval"],
                                        gap_interval=settings["gap_interval"],
                                        confidence=confidence)
    return evaluation_result(models, [table for table, _, _ in results],
                             [auc for _, auc, _ in results], label=label,
                             subgroups=subgroup_names, settings=settings,
                             thresholds=by_threshold)



def _evaluate_omitting(df: pd.DataFrame, *, label, scores, subgroups, sample_weight,
                       **settings):
    """``evaluate(..., nan_policy="omit")``: drop rows, then evaluate with ``"raise"``.

    Rows with a missing label or weight are dropped for every model; rows
    with a NaN, missing or infinite score only for that model. Models with
    the same dropped rows are evaluated together (sharing one preparation).
    """
    label, models, subgroup_names, features = frame_columns(df, label, scores, subgroups,
                                                            settings.get("sensitive_features"))
    n = df.shape[0]
    label_name = f"label column {label!r}"
    parts = [(label_name, column_values(df[label], label_name)[1], "missing")]
    weights = sample_weight
    if names_column(df, sample_weight):
        require_columns(df, [sample_weight], "sample_weight", shown=False)
        name = f"sample_weight column {sample_weight!r}"
        parts.append((name, column_values(df[sample_weight], name)[1], "NaN or missing"))
    elif sample_weight is not None:
        weights, missing = column_values(sample_weight, "sample_weight")
        check_length(weights, n, "sample_weight", "df")
        parts.append(("sample_weight", missing, "NaN or missing"))
    common, _ = rows_to_omit(parts)
    groups: dict = {}
    for model in models:
        name = f"score column {model!r}"
        values, missing = column_values(df[model], name, float_missing=False)
        drop = score_drop_mask(values, missing)  # (a float column's NaN found here)
        if drop is not None:
            parts.append((name, drop, _score_drop_what(values, drop)))
        if common is not None:
            drop = common.copy() if drop is None else (drop | common)
        key = b"" if drop is None else np.packbits(drop).tobytes()
        groups.setdefault(key, (drop, []))[1].append(model)
    if list(groups) == [b""]:
        return evaluate(df, label=label, scores=scores, subgroups=subgroups,
                        sample_weight=sample_weight, nan_policy="raise", **settings)
    _, description = rows_to_omit(parts)
    omitted = {}
    results = []
    columns = list(dict.fromkeys([label, *models, *subgroup_names, *features]
                                 + ([sample_weight] if names_column(df, sample_weight) else [])))
    for drop, group_models in groups.values():
        sub_df, sub_weights = df, weights
        if drop is not None:
            kept = np.flatnonzero(~drop)
            if kept.size == 0:
                raise ValueError(f"nan_policy='omit' leaves no rows for model(s) {group_models}: "
                                 f"all {n} rows have a missing value ({description})")
            sub_df = df[columns].iloc[kept]
            if weights is not None and not names_column(df, weights):
                sub_weights = weights[kept]
        for model in group_models:
            omitted[model] = 0 if drop is None else int(drop.sum())
        with rows_kept(None if drop is None else ~drop):  # (messages name the input's rows)
            results.append(evaluate(sub_df, label=label, scores=group_models,
                                    subgroups=subgroups, sample_weight=sub_weights,
                                    nan_policy="raise", **settings))
    kept_text = ", ".join(f"{m!r}: {n - omitted[m]}" for m in models)
    warnings.warn(f"nan_policy='omit' dropped rows ({description}); rows kept per model: "
                  f"{kept_text} of {n}", OmittedRowsWarning, stacklevel=3)
    by_model = {m: (r.for_model(m), float(r.overall_auc[m])) for r in results for m in r.models}
    result_settings = dict(results[0].settings)
    result_settings.update(nan_policy="omit", omitted_rows=omitted)
    weight_missing = next((m for what, m, _ in parts[:3] if what.startswith("sample_weight")),
                          None)
    if weight_missing is not None and weight_missing.any():
        # (what a report's histograms need to leave the same rows out, and to tell them)
        result_settings["missing_weight_rows"] = int(weight_missing.sum())
        result_settings["missing_weight_digest"] = rows_digest(weight_missing)
        if names_column(df, sample_weight):
            result_settings["weight_column"] = sample_weight
    if result_settings.get("intersections") is not None:
        result_settings["intersection_members"] = {
            k: v for r in results for k, v in r.settings.get("intersection_members", {}).items()}
    if result_settings.get("sensitive_features"):  # each group of models may hold other values
        result_settings["sensitive_members"] = {
            k: v for r in results for k, v in r.settings.get("sensitive_members", {}).items()}
    by_threshold = None
    if result_settings.get("thresholds") is not None:  # each model's rows, in model order
        parts = pd.concat([r.thresholds for r in results], ignore_index=True)
        by_threshold = pd.concat([parts[parts["model"] == m] for m in models],
                                 ignore_index=True)
    return evaluation_result(models, [by_model[m][0] for m in models],
                             [by_model[m][1] for m in models], label=label,
                             subgroups=merged_order([r.subgroups for r in results]),
                             settings=result_settings, warn=False, thresholds=by_threshold)


def merged_order(lists: list) -> list:
    """The names of every list, once, in an order that keeps each list's own: models
    evaluated on their own rows list their subgroups in the documented order, but one may
    keep an intersection or a combination of values that another drops, and that name goes
    where the lists that hold it put it, not last (found by review).

    Examples
    --------
    >>> merged_order([["a", "b", "a & b"], ["a", "b", "a & c", "a & b"]])
    ['a', 'b', 'a & c', 'a & b']
    """
    lists = [list(names) for names in lists]
    where = [{name: i for i, name in enumerate(names)} for names in lists]
    at = [0] * len(lists)
    out, seen = [], set()

    def later_in_another(name, j) -> bool:
        return any(k != j and where[k].get(name, -1) > at[k] for k in range(len(lists)))

    while True:
        for j, names in enumerate(lists):  # (skip what is out already)
            while at[j] < len(names) and names[at[j]] in seen:
                at[j] += 1
        heads = [(j, names[at[j]]) for j, names in enumerate(lists) if at[j] < len(names)]
        if not heads:
            return out
        # the first head no other list holds further on (the lists' orders agree: one exists)
        name = next((name for j, name in heads if not later_in_another(name, j)), heads[0][1])
        out.append(name)
        seen.add(name)


__all__ = ["evaluate", "EvaluationResult"]
