"""Array entry points: bias metrics, the overall AUC and Pinned AUC from labels, scores, masks.

Each call composes the stages: validate the rows, prepare the memberships,
sort once, sweep, and map the counts to a table (intervals reuse the sort).
See :mod:`fastbias.metrics.definitions` for what each metric is.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from .intervals.attach import attach_intervals, check_ci
from .intervals.bootstrap import keeps_numpy_plan
from .intervals.significance import attach_significance, check_significance
from .metrics.aggregates import (
    PINNED_METHODS,
    _check_population,
    _expected_pinned_auc,
    _expected_pinned_terms,
    _pinned_population_size,
)
from .metrics.table import overall_auc_from_counts, table_from_counts
from .prepare.memberships import (
    check_categories_alone,
    check_intersections,
    prepare_memberships,
    prepare_subgroups,
    subgroup_rows,
    with_intersections,
)
from .sweep.counts import sweep_counts
from .sweep.first_call import FIRST_CALL_MAX_ROWS, compile_in_background, families_for
from .sweep.parallel import count_in_numpy_now, sort_and_count
from .validate.columns import check_aligned, rows_kept
from .validate.errors import UndefinedMetricWarning
from .validate.rows import validated_rows
from .validate.settings import check_confidence, resolve_workers
from .validate.values import NO_POS_LABEL_HINT, as_labels, as_scores


def bias_metrics(y_true, y_score, subgroups, *, sample_weight=None,
                 label_threshold: float | None = None,
                 subgroup_threshold: float | None = None, ci: str | None = None,
                 confidence: float = 0.95, n_boot: int = 1000,
                 random_state=None, nan_policy: str = "raise", pos_label=None,
                 n_jobs: int | None = None, intersections: int | None = None,
                 min_subgroup_size: int = 1, significance: str | None = None) -> pd.DataFrame:
    """Subgroup AUC, BPSN AUC, BNSP AUC and both AEGs for every subgroup at once.

    One sort of the scores and one sweep over the subgroup rows give every
    tie-aware Mann-Whitney U count; unweighted counts are exact integers.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels: bool, or numbers in {0, 1}. Fractional labels (e.g. a
        toxicity fraction) need ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite model scores. float32 scores stay float32, so ties are decided
        in the precision given.
    subgroups : DataFrame of boolean columns, dict of name -> mask, or (n, k) array
        Subgroup memberships; a row may belong to several subgroups or none.
        Names of an array input are ``subgroup_0``, ``subgroup_1``, ...
        A categorical column (a Series, or a column of a DataFrame or dict,
        holding text or a pandas Categorical, e.g. ``df["race"]``) is one
        subgroup per value, ``"race=black"``; with several such columns, every
        combination of values with at least ``min_subgroup_size`` rows of
        each class follows (``"race=black & gender=female"``). A missing value
        is in no subgroup (docs/sensitive_features.md). With a
        ``subgroup_threshold``, a Categorical of numbers (e.g. vote counts,
        dictionary-encoded in Parquet) is thresholded instead, as ``evaluate``
        reads it.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights; every pair then counts ``w_i * w_j``.
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    subgroup_threshold : float, optional
        Member iff ``mask >= subgroup_threshold`` (NaN is never a member).
    ci : {None, "delong", "bootstrap", "bernstein"}, optional
        Add ``<metric>_low``/``<metric>_high`` columns (and ``<metric>_se``
        where the method has standard errors); see ``docs/intervals.md``.
    confidence : float, default 0.95
        Coverage of the intervals.
    n_boot : int, default 1000
        Replicates for ``ci="bootstrap"``.
    random_state : int, numpy Generator or SeedSequence, optional
        Seed for ``ci="bootstrap"`` (a Generator drawn from once, a SeedSequence read, not
        spawned from: the same one gives the same intervals again).
    nan_policy : {"raise", "omit"}, default "raise"
        What a missing value (NaN, None, pd.NA) in ``y_true``, ``y_score``
        or ``sample_weight``, or an infinite score, does: raise a
        ``ValueError``, or drop the row with one ``OmittedRowsWarning``
        stating how many rows each argument cost. See ``docs/validation.md``.
    pos_label : scalar, optional
        For two-valued labels that are not 0/1 (strings, categoricals):
        the value of the positive class.
    n_jobs : int, optional
        Threads for this call: None or -1 for every CPU the process may use
        (``os.sched_getaffinity``), a positive int for that many. Inputs
        too small to gain from threads use one. The numbers are the same,
        bit for bit, on any number of threads.
    intersections : {None, 2, 3}, optional
        Also a row for every pair of subgroups (2), or every pair and
        triple (3), whose rows overlap: named ``"a & b"`` in the order the
        subgroups were given, after the subgroups themselves, pairs before
        triples. From the same sort and sweep (see ``docs/intersections.md``).
    min_subgroup_size : int, default 1
        An intersection is kept only with at least this many rows of each
        class (so by default every metric of its row is defined).
    significance : {None, "holm", "bh"}, optional
        Test every subgroup's (and intersection's) gap: Subgroup/BPSN/BNSP
        AUC against the overall AUC (DeLong covariance of the two), each AEG
        against 0. Adds ``<metric>_pvalue``, ``<metric>_pvalue_adjusted``
        (Holm or Benjamini-Hochberg over all subgroups x metrics) and
        ``<metric>_significant`` (adjusted p-value <= ``1 - confidence``).
        Metrics with a cell of fewer than 300 rows get a permutation p-value
        (the normal approximation's tails are poor there; weighted, cells of
        fewer than 30 rows, larger ones keep DeLong's). See
        ``docs/significance.md``.

    Returns
    -------
    pandas.DataFrame
        Index ``subgroup``; columns ``subgroup_size``, the four cell counts
        ``subgroup_negatives``, ``subgroup_positives``, ``background_negatives``,
        ``background_positives``, then ``subgroup_auc``, ``bpsn_auc``,
        ``bnsp_auc``, ``negative_aeg``, ``positive_aeg`` (and the four cell
        weights when weighted). ``table.attrs["overall_auc"]`` holds the
        overall AUC. Undefined metrics (an empty or one-class cell) are NaN and
        raise one :class:`UndefinedMetricWarning`.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> y = np.array([0, 0, 1, 1, 0, 1])
    >>> s = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9])
    >>> groups = {"g": np.array([True, True, True, False, False, False])}
    >>> t = fastbias.bias_metrics(y, s, groups)
    >>> float(t.loc["g", "subgroup_auc"]), float(t.loc["g", "bpsn_auc"])
    (0.5, 1.0)
    """
    check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups),
                   ("sample_weight", sample_weight)])
    workers = resolve_workers(n_jobs)
    labels, scores, weights, kept, bounds = validated_rows(
        y_true, y_score, sample_weight, label_threshold=label_threshold, pos_label=pos_label,
        nan_policy=nan_policy, workers=workers)
    check_ci(ci)
    check_significance(significance)
    confidence = check_confidence(confidence)
    order, min_size = check_intersections(intersections, min_subgroup_size)
    check_categories_alone(subgroups, order, subgroup_threshold)
    memberships, sorted_scores, sc, plan = sort_and_count(
        scores, None,
        lambda threads, compiled=True: with_intersections(
            prepare_subgroups(labels, subgroups, subgroup_threshold, kept, workers=threads,
                              compiled=compiled, min_subgroup_size=min_size), order, min_size,
            compiled),
        labels, weights, workers=workers, with_rows=ci == "bootstrap", score_bounds=bounds,
        numpy_if_cold=True, families=families_for(weights is not None, ci,
                                                  significance=significance is not None),
        numpy_plan=keeps_numpy_plan(ci, n_boot, scores.shape[0], weights is not None))
    table = table_from_counts(sc)
    table.attrs["overall_auc"] = overall_auc_from_counts(sc)
    if memberships.intersections:
        table.attrs["intersections"] = list(memberships.intersections)
    with rows_kept(kept):  # (a weight refused there is named by its input row)
        if ci is not None:
            table = attach_intervals(table, method=ci, sorted_scores=sorted_scores,
                                     sample_weight=weights, confidence=confidence,
                                     n_boot=n_boot, random_state=random_state, n_jobs=n_jobs,
                                     scores=scores, memberships=memberships, plan=plan)
        if significance is not None:
            table = attach_significance(table, method=significance,
                                        sorted_scores=sorted_scores, sample_weight=weights,
                                        confidence=confidence, scores=scores,
                                        memberships=memberships)
    return table


def threshold_metrics(y_true, y_score, subgroups, *, thresholds=0.5, sample_weight=None,
                      label_threshold: float | None = None,
                      subgroup_threshold: float | None = None, interval: str | None = "wilson",
                      gap_interval: str | None = None, confidence: float = 0.95,
                      nan_policy: str = "raise", pos_label=None,
                      n_jobs: int | None = None) -> pd.DataFrame:
    """Positive rate, TPR, FPR, FNR and precision of every subgroup and its background at
    one or many thresholds, their gaps, and intervals: the Fairness Indicators view.

    A row is predicted positive when ``y_score >= threshold``, compared in the scores' own
    precision: the threshold is rounded to the scores' type first (numpy's comparison with
    a Python float; see docs/thresholds.md). One sort of the scores serves every threshold: each is a rank look-up, so a
    grid of 100 costs little more than one.

    Parameters
    ----------
    y_true, y_score, subgroups, sample_weight, label_threshold, subgroup_threshold
        As in :func:`bias_metrics` (categorical columns included).
    thresholds : float or sequence of float, default 0.5
        Evaluated sorted, each once.
    interval : {"wilson", "exact", None}, default "wilson"
        Interval of each rate: Wilson's score interval or Clopper-Pearson's exact one
        (needs scipy). With weights a weight counts as that many rows.
    gap_interval : {None, "bernstein"}, default None
        The Bernstein interval (Ethayarajh 2020, :func:`fastbias.bernstein_interval`) of
        each gap, with the gap's rate as the cost on the rows of its set (unweighted).
    confidence : float, default 0.95
    nan_policy, pos_label, n_jobs
        As in :func:`bias_metrics`.

    Returns
    -------
    pandas.DataFrame
        Index ``(threshold, subgroup)``. Columns: the cell sizes
        (``subgroup_negatives``, ``subgroup_positives``, ``background_negatives``,
        ``background_positives``), the predicted positives (``subgroup_tp``,
        ``subgroup_fp``, ``background_tp``, ``background_fp``), then
        ``subgroup_<rate>`` and ``background_<rate>`` for ``positive_rate``, ``tpr``,
        ``fpr``, ``fnr`` and ``precision`` (each with ``_low``/``_high``), and
        ``<rate>_gap`` = subgroup minus background: ``positive_rate_gap`` is the
        demographic parity difference, ``tpr_gap`` the equal opportunity difference.
        A rate without rows in its set is NaN, with one :class:`UndefinedMetricWarning`.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> y = np.array([0, 0, 1, 1, 0, 1, 0, 1])
    >>> s = np.array([0.1, 0.6, 0.4, 0.8, 0.7, 0.9, 0.2, 0.3])
    >>> g = {"g": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)}
    >>> t = fastbias.threshold_metrics(y, s, g, thresholds=[0.5])
    >>> row = t.loc[(0.5, "g")]
    >>> float(row["subgroup_tpr"]), float(row["background_tpr"]), float(row["tpr_gap"])
    (0.5, 0.5, 0.0)
    >>> float(row["subgroup_fpr"]), float(row["fpr_gap"])
    (0.5, 0.0)
    """
    from .intervals.thresholds import (
        attach_threshold_intervals,
        check_gap_interval,
        check_rate_interval,
    )
    from .metrics.thresholds import (
        check_threshold_weights,
        check_thresholds,
        threshold_counts,
        threshold_counts_in_numpy,
        threshold_table,
    )
    from .sort.order import SortedScores

    check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups),
                   ("sample_weight", sample_weight)])
    cuts = check_thresholds(thresholds)
    check_rate_interval(interval)
    check_gap_interval(gap_interval)
    confidence = check_confidence(confidence)
    workers = resolve_workers(n_jobs)
    labels, scores, weights, kept, bounds = validated_rows(
        y_true, y_score, sample_weight, label_threshold=label_threshold, pos_label=pos_label,
        nan_policy=nan_policy, workers=workers)
    if gap_interval is not None and weights is not None:
        raise ValueError("gap_interval='bernstein' needs unweighted rows (its bound counts "
                         "examples); interval= gives the rates' intervals of weighted rows")
    with rows_kept(kept):
        check_threshold_weights(weights, labels)
    if count_in_numpy_now(weights is not None, scores.shape[0] <= FIRST_CALL_MAX_ROWS,
                          thresholds=True):
        # a fresh environment: the same counts in numpy while the kernels compile
        for family in families_for(weights is not None, thresholds=True):
            compile_in_background(family)
        memberships = prepare_subgroups(labels, subgroups, subgroup_threshold, kept,
                                        compiled=False)
        counts = threshold_counts_in_numpy(scores, memberships, weights, cuts)
    else:
        memberships = prepare_subgroups(labels, subgroups, subgroup_threshold, kept,
                                        workers=workers)
        counts = threshold_counts(SortedScores(scores, memberships, workers=workers,
                                               score_bounds=bounds), weights, cuts)
    table = threshold_table(counts, memberships.names)
    if interval is None and gap_interval is None:
        return table
    return attach_threshold_intervals(table, interval=interval, confidence=confidence,
                                      gap_interval=gap_interval)


def overall_auc(y_true, y_score, *, sample_weight=None,
                label_threshold: float | None = None, nan_policy: str = "raise",
                pos_label=None) -> float:
    """ROC AUC of all rows, tie-aware; equal to ``sklearn.metrics.roc_auc_score``.

    Unlike scikit-learn, a one-class input returns NaN with an
    :class:`UndefinedMetricWarning` instead of raising.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1), or fractional with ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite scores.
    sample_weight : array-like of shape (n,), optional
        Non-negative row weights.
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    nan_policy : {"raise", "omit"}, default "raise"
        Raise on a missing label, score or weight (or an infinite score), or
        drop those rows with an ``OmittedRowsWarning``.
    pos_label : scalar, optional
        The positive class of two-valued non-0/1 labels (e.g. strings).

    Returns
    -------
    float

    Examples
    --------
    >>> import fastbias
    >>> fastbias.overall_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    check_aligned([("y_true", y_true), ("y_score", y_score), ("sample_weight", sample_weight)])
    labels, scores, weights, *_ = validated_rows(
        y_true, y_score, sample_weight, label_threshold=label_threshold, pos_label=pos_label,
        nan_policy=nan_policy)
    sc = sweep_counts(scores, prepare_memberships(labels, [], []), weights)
    value = overall_auc_from_counts(sc)
    if np.isnan(value):
        n_neg, n_pos = sc.class_rows
        warnings.warn(f"overall AUC undefined (negatives={n_neg}, positives={n_pos}); NaN",
                      UndefinedMetricWarning, stacklevel=2)
    return value



def _random_state(random_state):
    """What ``DataFrame.sample(random_state=...)`` draws with, and whether it is fresh per call."""
    if random_state is None:
        return np.random, False  # the global state, like pandas
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return random_state, False
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if not 0 <= random_state < 2 ** 32:  # (numpy's own message names no argument)
            raise ValueError(f"random_state must be an int from 0 to 2**32 - 1 (a seed of "
                             f"numpy's RandomState, as pandas' sample takes), got "
                             f"{random_state!r}")
        return None, True
    raise TypeError(f"random_state must be an int, None, a numpy RandomState or Generator, "
                    f"got {random_state!r}")


def _sampled_pinned_auc(labels, scores, group, method, rng, replace):
    """AUC of one drawn pinned set (subgroup rows + as many drawn rows); NaN if one-class."""
    n_rows = labels.shape[0]
    n_g = group.shape[0]
    if method == "sample":
        positions = np.asarray(rng.choice(n_rows - n_g, size=n_g, replace=replace),
                               dtype=np.int64)
        # background position p is row p + #{subgroup rows before it}; the subgroup row
        # group[j] has group[j] - j background rows before it
        drawn = positions + np.searchsorted(group - np.arange(n_g), positions, side="right")
    else:
        drawn = np.asarray(rng.choice(n_rows, size=n_g, replace=replace), dtype=np.int64)
    rows = np.concatenate([group, drawn])
    y = np.ascontiguousarray(labels[rows])
    return overall_auc_from_counts(sweep_counts(scores[rows], prepare_memberships(y, [], [])))


def pinned_auc(y_true, y_score, subgroups, *, method: str = "sample", random_state=25,
               replace: bool = False, label_threshold: float | None = None,
               subgroup_threshold: float | None = None) -> pd.Series:
    """Pinned AUC (Dixon et al. 2018) of every subgroup: sampled or in expectation.

    The pinned set of a subgroup g is all rows of g plus as many other rows,
    drawn at random; Pinned AUC is the ROC AUC of that set. It depends on the
    class balance of g, not only on how the model scores g (Borkan et al.
    2019, "Limitations of Pinned AUC"); Subgroup, BPSN and BNSP AUC
    (:func:`fastbias.bias_metrics`) do not, and are the recommended metrics.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels (bool or 0/1), or fractional with ``label_threshold``.
    y_score : array-like of shape (n,)
        Finite scores.
    subgroups : DataFrame of boolean columns, dict of name -> mask, or (n, k) array
        Subgroup memberships, as in :func:`fastbias.bias_metrics`.
    method : {"sample", "dixon", "expected", "expected_dixon"}, default "sample"
        ``"sample"`` reproduces the authors' reference implementation exactly:
        the drawn half is ``df[~df[g]].sample(len(df[df[g]]), random_state=25)``,
        i.e. the first ``|g|`` entries of
        ``np.random.RandomState(random_state).permutation(n_background)`` over
        the background rows in their given order.
        ``"dixon"``: the original definition, the drawn half comes from all
        rows (the subgroup included; a subgroup row drawn again counts twice).
        ``"expected"`` / ``"expected_dixon"``: no sampling. Pinned AUC is the
        pair-weighted mix of four AUCs (equation 3 of the Limitations report:
        the drawn set's AUC, Subgroup AUC, BPSN and BNSP AUC); these evaluate it
        with the *expected* number of pairs and the expected U of every block
        over the draws of ``"sample"`` / ``"dixon"``, from the counts of one
        sort-and-sweep. This is a ratio of expectations, E[U] / E[pairs], which
        approximates the mean of the sampled Pinned AUC with an error of order
        1/|g| (exact when the whole background is drawn). Deterministic.
    random_state : int, None, numpy RandomState or Generator, default 25
        The sampling seed, as in ``DataFrame.sample``: an int seeds a fresh
        ``RandomState`` for every subgroup (what the reference code does, since
        it passes ``random_state=25`` on each call); a RandomState/Generator is
        drawn from in subgroup order; None uses numpy's global state. Ignored
        by the expected methods.
    replace : bool, default False
        Draw with replacement. Without replacement a subgroup larger than its
        background is an error (the reference code cannot build its pinned set).
    label_threshold : float, optional
        Positive iff ``y_true >= label_threshold``.
    subgroup_threshold : float, optional
        Member iff ``mask >= subgroup_threshold``.

    Returns
    -------
    pandas.Series
        Pinned AUC per subgroup (index ``subgroup``, name ``pinned_auc``). An
        empty subgroup or a one-class pinned set gives NaN with an
        :class:`~fastbias.UndefinedMetricWarning`.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(400) < 0.5
    >>> s = rng.random(400) + 0.5 * y
    >>> g = {"g": np.arange(400) < 100}
    >>> sampled = fastbias.pinned_auc(y, s, g)
    >>> expected = fastbias.pinned_auc(y, s, g, method="expected")
    >>> round(float(sampled["g"]), 3), round(float(expected["g"]), 3)
    (0.884, 0.891)
    """
    if method not in PINNED_METHODS:
        raise ValueError(f"method must be one of {PINNED_METHODS}, got {method!r}")
    if not isinstance(replace, (bool, np.bool_)):
        raise TypeError(f"replace must be True or False, got {replace!r}")
    check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups)])
    labels = as_labels(y_true, "y_true", threshold=label_threshold,
                       pos_label_hint=NO_POS_LABEL_HINT)
    n = labels.shape[0]
    scores = as_scores(y_score, "y_score", n)
    names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold)
    for name, group in zip(names, rows):
        _check_population(name, method, group.shape[0],
                          _pinned_population_size(method, n, group.shape[0]), replace)

    if method.startswith("expected"):
        sc = sweep_counts(scores, prepare_memberships(labels, rows, names))
        values = _expected_pinned_auc(_expected_pinned_terms(sc, method, replace))
    else:
        shared_rng, fresh = _random_state(random_state)
        values = np.empty(len(names))
        for j, group in enumerate(rows):
            rng = np.random.RandomState(random_state) if fresh else shared_rng
            values[j] = _sampled_pinned_auc(labels, scores, group, method, rng, replace)

    result = pd.Series(values, index=pd.Index(names, name="subgroup"), name="pinned_auc")
    undefined = [f"{name} ({len(group)} rows)" for name, group, v in zip(names, rows, values)
                 if np.isnan(v)]
    if undefined:
        warnings.warn(f"pinned AUC undefined (empty subgroup or one-class pinned set), set to "
                      f"NaN for {len(undefined)} subgroup(s): {', '.join(undefined[:12])}",
                      UndefinedMetricWarning, stacklevel=2)
    return result
