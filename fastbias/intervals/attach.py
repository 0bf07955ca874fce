"""Intervals attached to a metrics table: DeLong, bootstrap or Bernstein columns."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..metrics.aggregates import final_metric_values, identity_mask
from ..metrics.definitions import (
    AEG_METRICS,
    AUC_METRICS,
    METRIC_COLUMNS,
    METRIC_RANGE,
    METRIC_SAMPLES,
)
from ..metrics.table import metrics_from_counts, overall_auc_from_counts
from ..prepare.memberships import Memberships, prepare_subgroups
from ..sort.order import SortedScores
from ..sweep.counts import count_sorted
from ..sweep.first_call import (
    counts_in_numpy,
)
from ..validate.columns import check_aligned
from ..validate.errors import warn_listed
from ..validate.rows import validated_rows
from ..validate.settings import check_confidence, resolve_workers
from ..validate.values import check_interval_weights_of
from .bootstrap import _percentile_interval, replicates
from .delong import _normal_interval, _z_value, missing_se, standard_errors
from .first_call import delong_in_numpy, intervals_in_numpy_now
from .ustatistic import ustatistic_bernstein_interval

CI_METHODS = ("delong", "bootstrap", "bernstein")


def check_ci(ci):
    """``ci=`` of the entry points: None or one of :data:`CI_METHODS`."""
    if ci is not None and ci not in CI_METHODS:
        raise ValueError(f"ci must be None, 'delong', 'bootstrap' or 'bernstein', got {ci!r}")
    return ci


def add_intervals(table: pd.DataFrame, y_true=None, y_score=None, subgroups=None, *,
                  method: str, sample_weight=None, label_threshold: float | None = None,
                  subgroup_threshold: float | None = None, pos_label=None,
                  confidence: float = 0.95, n_boot: int = 1000, random_state=None,
                  progress=None, n_jobs: int | None = None,
                  bernstein_variance: str = "adaptive", scores=None,
                  memberships: Memberships | None = None) -> pd.DataFrame:
    """Add ``<metric>_low``/``<metric>_high`` (and ``<metric>_se``) columns to a metrics table.

    ``bias_metrics(..., ci=method)`` does the same in one call (and sorts the
    scores once for both); this adds intervals to a table computed already.

    Parameters
    ----------
    table : pandas.DataFrame
        The per-subgroup table of :func:`fastbias.bias_metrics` for these inputs,
        without intervals. A ValueError where its metrics are not those of the inputs
        given, or where it has intervals already.
    y_true, y_score, subgroups, sample_weight, label_threshold, subgroup_threshold, pos_label
        The inputs the table was computed from, as for
        :func:`fastbias.bias_metrics` (rows with missing values must have
        been dropped already).
    method : {"delong", "bootstrap", "bernstein"}
        * ``"delong"``: normal interval ``estimate -/+ z * se`` with DeLong's
          standard error, clipped to the metric's range.
        * ``"bootstrap"``: percentile interval of ``n_boot`` Poisson-bootstrap
          replicates (se = standard deviation of the replicates); also gives
          the Jigsaw final metric's interval in ``attrs``.
        * ``"bernstein"``: the finite-sample interval of
          :func:`ustatistic_bernstein_interval` (no se; unweighted data only).
        DeLong treats weights as frequency weights; the bootstrap multiplies
        them by the Poisson counts.
    confidence : float, default 0.95
    n_boot : int, default 1000
    random_state : int, numpy Generator or SeedSequence, optional
        Seed of the bootstrap.
    progress : bool, optional
        Progress bar for the bootstrap; default: only when stderr is a terminal.
    n_jobs : int, optional
        Threads for the sorts, the DeLong walk and the bootstrap replicates
        (None: every usable CPU; the results do not depend on it).
    bernstein_variance : {"adaptive", "bound"}, default "adaptive"
        See :func:`ustatistic_bernstein_interval`.
    scores, memberships : deprecated
        The earlier form: validated scores and a ``Memberships`` structure
        instead of ``y_true``, ``y_score`` and ``subgroups``.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with, for each of the five metrics, columns
        ``<metric>_low``, ``<metric>_high`` and (DeLong, bootstrap)
        ``<metric>_se``. ``attrs`` gains ``ci_method``, ``confidence``,
        ``overall_auc_low``, ``overall_auc_high`` (and ``overall_auc_se``);
        the bootstrap adds ``final_metric``, ``final_metric_low``,
        ``final_metric_high``, ``final_metric_se``, ``final_metric_replicates`` (those
        where it was defined, which its interval uses) and ``n_boot``.

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> from fastbias.intervals import add_intervals
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(1000) < 0.5
    >>> s = y + rng.normal(0, 1, 1000)
    >>> g = {"g": rng.random(1000) < 0.3}
    >>> table = fastbias.bias_metrics(y, s, g)
    >>> out = add_intervals(table, y, s, g, method="delong")
    >>> bool(out.loc["g", "subgroup_auc_low"] < out.loc["g", "subgroup_auc"]
    ...      < out.loc["g", "subgroup_auc_high"])
    True
    >>> [c for c in out.columns if c.startswith("subgroup_auc")]
    ['subgroup_auc', 'subgroup_auc_low', 'subgroup_auc_high', 'subgroup_auc_se']
    >>> sorted(k for k in out.attrs if k.startswith("overall_auc_"))
    ['overall_auc_high', 'overall_auc_low', 'overall_auc_se']
    """
    if scores is None and memberships is None:
        if y_true is None or y_score is None or subgroups is None:
            raise TypeError("add_intervals needs y_true, y_score and subgroups (the inputs of "
                            "the table)")
        check_aligned([("y_true", y_true), ("y_score", y_score), ("subgroups", subgroups),
                       ("sample_weight", sample_weight)])
        labels, scores, sample_weight, *_ = validated_rows(
            y_true, y_score, sample_weight, label_threshold=label_threshold,
            pos_label=pos_label)
        memberships = prepare_subgroups(labels, subgroups, subgroup_threshold)
    elif scores is None or memberships is None:
        raise TypeError("pass y_true, y_score and subgroups (scores= and memberships= go "
                        "together, in the deprecated form)")
    else:
        warnings.warn("add_intervals(table, scores=..., memberships=...) is deprecated: pass the "
                      "table's inputs, add_intervals(table, y_true, y_score, subgroups, "
                      "method=...)", DeprecationWarning, stacklevel=2)
    if method not in CI_METHODS:
        raise ValueError(f"method must be one of {CI_METHODS}, got {method!r}")
    confidence = check_confidence(confidence)
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in METRIC_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks metric column(s) {missing}")
    had = [c for c in table.columns if str(c).endswith(("_low", "_high", "_se"))]
    if had or "ci_method" in table.attrs:
        # (found by review: a second call left the first one's columns beside the new ones,
        # twice named, and its standard errors under another method's name)
        raise ValueError(f"table already has intervals ({table.attrs.get('ci_method', 'columns')}"
                         f"{': ' + ', '.join(map(str, had[:3])) if had else ''}); add_intervals "
                         f"adds them to a table without: compute it without ci=, or drop "
                         f"those columns and attrs first")
    if list(map(str, table.index)) != list(memberships.names):
        raise ValueError(f"table index {list(table.index)[:5]} does not match the memberships' "
                         f"subgroups {list(memberships.names)[:5]} (same names, same order)")
    scores = np.asarray(scores)
    if scores.shape != (memberships.n_rows,):
        raise ValueError(f"scores has shape {scores.shape} but the memberships cover "
                         f"{memberships.n_rows} rows")
    if sample_weight is not None:
        sample_weight = np.ascontiguousarray(sample_weight, dtype=np.float64)
        if sample_weight.shape != (memberships.n_rows,):
            raise ValueError(f"sample_weight has shape {sample_weight.shape} but the memberships "
                             f"cover {memberships.n_rows} rows")
    sorted_scores = SortedScores(scores, memberships, with_rows=method == "bootstrap",
                                 workers=resolve_workers(n_jobs))
    _check_table_of(table, memberships, metrics_from_counts(
        counts_in_numpy(scores, memberships, sample_weight)
        if intervals_in_numpy_now(method, False, memberships.n_rows)
        else count_sorted(sorted_scores, sample_weight)))
    return attach_intervals(table, method=method, sorted_scores=sorted_scores,
                            sample_weight=sample_weight, confidence=confidence, n_boot=n_boot,
                            random_state=random_state, progress=progress, n_jobs=n_jobs,
                            bernstein_variance=bernstein_variance)


def _check_table_of(table: pd.DataFrame, memberships: Memberships, values: dict) -> None:
    """A ValueError where ``table``'s metrics or cells' rows are not those of the inputs given
    (``values``: metric -> the inputs' values per subgroup): found by review, intervals of
    other scores were put beside the table's estimates, far outside them, and intervals of
    the rows given twice beside its counts, without a word."""
    cells = np.asarray(memberships.cell_rows, dtype=np.int64).reshape(-1, 2)
    classes = np.asarray(memberships.class_rows, dtype=np.int64).reshape(-1)
    rows = {"subgroup_negatives": cells[:, 0], "subgroup_positives": cells[:, 1],
            "background_negatives": classes[0] - cells[:, 0],
            "background_positives": classes[1] - cells[:, 1]}
    for column, own in rows.items():
        if column in table.columns:
            given = table[column].to_numpy()
            if not np.array_equal(given, own):
                j = int(np.flatnonzero(given != own)[0])
                raise ValueError(f"table is not of these inputs: its {column} of subgroup "
                                 f"{table.index[j]!r} is {given[j]!r}, the inputs give "
                                 f"{int(own[j])!r}{_TABLE_OF_HINT}")
    for metric in METRIC_COLUMNS:
        given = table[metric].to_numpy(dtype=np.float64)
        own = np.asarray(values[metric], dtype=np.float64)
        # (to far more than rounding: weighted sums may differ in their last bits between
        # the entry points that made the table)
        same = (np.abs(given - own) <= 1e-9) | (np.isnan(given) & np.isnan(own))
        if not same.all():
            j = int(np.flatnonzero(~same)[0])
            raise ValueError(f"table is not of these inputs: its {metric} of subgroup "
                             f"{table.index[j]!r} is {given[j]!r}, the inputs give "
                             f"{own[j]!r}{_TABLE_OF_HINT}")


#: what a table of other inputs is told (found by review: a table of
#: ``missing_subgroup="exclude"`` was told to pass inputs no call can take)
_TABLE_OF_HINT = ("; pass the y_true, y_score, subgroups, sample_weight and thresholds the "
                  "table was computed from (a table of missing_subgroup='exclude' or of "
                  "intersections gets its intervals from ci= of the call that made it)")


#: the ``attrs`` of the overall AUC's interval, and of the final metric's (the bootstrap's)
OVERALL_INTERVAL_ATTRS = ("overall_auc_low", "overall_auc_high", "overall_auc_se")
FINAL_INTERVAL_ATTRS = ("final_metric", "final_metric_low", "final_metric_high",
                        "final_metric_se", "final_metric_replicates")
#: the warning's head of the overall AUC's and the final metric's bootstrap replicates left
#: out where undefined (``attrs["final_metric_replicates"]`` counts those kept)
WHOLE_TABLE_HEAD = ("interval(s) were undefined in some bootstrap replicates (the interval "
                    "uses the others; count in parentheses)")


def attach_intervals(table: pd.DataFrame, *, method: str, sorted_scores: SortedScores | None,
                     sample_weight: np.ndarray | None = None, confidence: float = 0.95,
                     n_boot: int = 1000, random_state=None, progress=None,
                     n_jobs: int | None = None,
                     bernstein_variance: str = "adaptive", scores: np.ndarray | None = None,
                     memberships: Memberships | None = None, warn: bool = True,
                     plan=None) -> pd.DataFrame:
    """:func:`add_intervals` from the sorts the point estimate made (validated inputs).

    ``warn=False``: the undefined intervals are not warned of but kept in
    ``attrs["undefined_intervals"]`` (see :func:`~fastbias.validate.errors.warn_listed`),
    for an entry point that computes in parts to warn of them once.

    The entry points call this with the :class:`~fastbias.sort.order.SortedScores`
    of their point estimate, so DeLong and the bootstrap sort nothing again. A point
    estimate counted in numpy on a first call (:mod:`fastbias.sweep.first_call`) passes
    no sorts but its ``scores`` and ``memberships``; the intervals are then computed in
    numpy too (:mod:`fastbias.intervals.first_call`), as they are while their own kernels
    compile; ``plan``, the numpy plan those counts were read from
    (:func:`~fastbias.sweep.first_call.counts_and_plan`), spares the bootstrap's replicates
    in numpy sorting again.
    """
    if sorted_scores is not None:
        scores, memberships = sorted_scores.scores, sorted_scores.memberships
    in_numpy = intervals_in_numpy_now(method, sorted_scores is None, memberships.n_rows)
    out = table
    overall_point = out.attrs.get("overall_auc")
    if overall_point is None:
        overall_point = overall_auc_from_counts(
            count_sorted(sorted_scores, sample_weight) if sorted_scores is not None
            else counts_in_numpy(scores, memberships, sample_weight))
    overall_point = float(overall_point)
    new_columns = {}
    attrs = {"ci_method": method, "confidence": confidence}
    found = {}

    if method == "delong":
        check_interval_weights_of(sample_weight, "DeLong intervals", memberships.labels)
        se, overall_se = (delong_in_numpy(scores, memberships, sample_weight) if in_numpy
                          else standard_errors(sorted_scores, sample_weight))
        found = delong_columns(out, se, overall_point, overall_se, confidence, lambda: [
            float(np.sum(memberships.labels == label) if sample_weight is None
                  else np.sum(sample_weight[memberships.labels == label]))
            for label in (0, 1)], new_columns, attrs)
    elif method == "bootstrap":
        reps = replicates(sorted_scores, sample_weight, n_boot=n_boot,
                          random_state=random_state, progress=progress, n_jobs=n_jobs,
                          first_call=(scores, memberships, plan) if in_numpy else None)
        undefined = []
        for metric in METRIC_COLUMNS:
            low, high, se, count = _percentile_interval(reps.metrics[metric], confidence)
            new_columns.update({f"{metric}_low": low, f"{metric}_high": high,
                                f"{metric}_se": se})
            defined = np.isfinite(out[metric].to_numpy(dtype=np.float64))
            undefined += [f"{name}: {metric} ({n_boot - int(c)})"
                          for name, c, d in zip(out.index, count, defined) if d and c < n_boot]
        low, high, se, count = _percentile_interval(reps.overall_auc, confidence)
        attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                     overall_auc_se=float(se), n_boot=int(n_boot))
        whole = []  # (the table's own intervals: see WHOLE_TABLE_HEAD)
        if np.isfinite(overall_point) and int(count) < n_boot:
            whole.append(f"overall AUC ({n_boot - int(count)})")
        keep = identity_mask(memberships.names, memberships.intersections)
        if keep.any():  # (a universe of intersections alone, under exclude: none)
            point = {m_: out[m_].to_numpy(dtype=np.float64)[keep] for m_ in AUC_METRICS}
            final_point = float(final_metric_values(overall_point, point))
            low, high, se, count = _percentile_interval(reps.final_metric, confidence)
            attrs.update(final_metric=final_point, final_metric_low=float(low),
                         final_metric_high=float(high), final_metric_se=float(se),
                         final_metric_replicates=int(count))
            if np.isfinite(final_point) and int(count) < n_boot:  # (found by review: unsaid)
                whole.append(f"final metric ({n_boot - int(count)})")
        found = {"metric(s) were undefined in some bootstrap replicates (an emptied cell; the "
                 "interval uses the others; count in parentheses)": undefined,
                 WHOLE_TABLE_HEAD: whole}
    else:
        if sample_weight is not None:
            raise ValueError("the Bernstein interval needs unweighted rows (it counts independent "
                             "examples); use ci='delong' or 'bootstrap' with sample_weight")
        bernstein_columns(out, memberships.cell_rows, memberships.class_rows,
                          memberships.class_rows, overall_point, confidence, bernstein_variance,
                          new_columns, attrs)
    out = pd.concat([out, pd.DataFrame(new_columns, index=out.index)], axis=1)
    out.attrs = {**table.attrs, **attrs}
    if warn:
        warn_listed(found, stacklevel=2)
    else:
        out.attrs["undefined_intervals"] = found
    return out


def delong_columns(table: pd.DataFrame, se, overall_point: float, overall_se: float,
                   confidence: float, class_weights, columns: dict, attrs: dict) -> dict:
    """DeLong's interval columns of each metric (``<metric>_low``/``_high``/``_se``, into
    ``columns``) and the overall AUC's (into ``attrs``), from the standard errors; returns
    what :func:`~.delong.missing_se` finds undefined (``class_weights()``: the classes'
    weights, read only for an overall interval that is NaN)."""
    z = _z_value(confidence)
    for metric in METRIC_COLUMNS:
        est = table[metric].to_numpy(dtype=np.float64)
        low, high = _normal_interval(est, se[metric], z, METRIC_RANGE[metric])
        columns.update({f"{metric}_low": low, f"{metric}_high": high,
                        f"{metric}_se": se[metric]})
    low, high = _normal_interval(overall_point, overall_se, z, (0.0, 1.0))
    attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                 overall_auc_se=float(overall_se))
    return missing_se(table, se, "DeLong", (overall_point, overall_se, class_weights))


def bernstein_columns(table: pd.DataFrame, cell_rows, class_rows, overall_rows,
                      overall_point: float, confidence: float, bernstein_variance: str,
                      columns: dict, attrs: dict) -> None:
    """The Bernstein interval columns of each metric (into ``columns``) and the overall AUC's
    (into ``attrs``), from the rows of each subgroup's cells ((k, 2): negatives, positives),
    of its universe's classes ((2,), or (k, 2): one universe each) and of the classes of the
    rows the overall AUC is of (negatives, positives)."""
    cell_rows = np.asarray(cell_rows, dtype=np.int64).reshape(-1, 2)
    class_rows = np.asarray(class_rows, dtype=np.int64)
    n_neg_rows, n_pos_rows = class_rows[..., 0], class_rows[..., 1]
    size = {("subgroup", 0): cell_rows[:, 0], ("subgroup", 1): cell_rows[:, 1],
            ("background", 0): n_neg_rows - cell_rows[:, 0],
            ("background", 1): n_pos_rows - cell_rows[:, 1]}
    for metric in METRIC_COLUMNS:
        x_cell, y_cell = METRIC_SAMPLES[metric]
        est = table[metric].to_numpy(dtype=np.float64)
        if metric in AEG_METRICS:
            lo, hi = ustatistic_bernstein_interval(
                np.clip(0.5 - est, 0.0, 1.0), size[x_cell], size[y_cell],
                confidence=confidence, variance=bernstein_variance)
            low, high = 0.5 - hi, 0.5 - lo
        else:
            low, high = ustatistic_bernstein_interval(
                np.clip(est, 0.0, 1.0), size[x_cell], size[y_cell], confidence=confidence,
                variance=bernstein_variance)
        columns.update({f"{metric}_low": np.asarray(low, dtype=np.float64),
                        f"{metric}_high": np.asarray(high, dtype=np.float64)})
    low, high = ustatistic_bernstein_interval(min(max(overall_point, 0.0), 1.0)
                                              if np.isfinite(overall_point) else np.nan,
                                              int(overall_rows[1]), int(overall_rows[0]),
                                              confidence=confidence,
                                              variance=bernstein_variance)
    attrs.update(overall_auc_low=float(low), overall_auc_high=float(high),
                 bernstein_variance=bernstein_variance)
