"""The results of an evaluation: one tidy table for any number of models, and its views.

:func:`evaluation_result` is the one place that lays out per-model tables as
the tidy table of :class:`EvaluationResult` (one row per model and subgroup).
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..intervals.attach import bernstein_columns, delong_columns
from ..intervals.placement_sums import combine_placement_sums
from ..intervals.significance import (
    adjust_table,
    pvalues_from_sums,
    standard_errors_of_sums,
    universe_standard_error,
)
from ..intervals.thresholds import attach_threshold_intervals
from ..metrics.aggregates import final_metric
from ..metrics.definitions import METRIC_COLUMNS
from ..metrics.table import table_from_chunks, warn_undefined
from ..metrics.thresholds import (
    combine_threshold_counts,
    threshold_table,
    warn_undefined_rates,
)
from ..validate.errors import warn_listed
from ..validate.spec import ColumnSpec


def _same(a, b) -> bool:
    """Equality of a result's parts: frames and series by ``equals`` (NaN equal), arrays by
    ``array_equal`` (NaN equal), containers item by item, floats with NaN equal to NaN."""
    if isinstance(a, (pd.DataFrame, pd.Series)) or isinstance(b, (pd.DataFrame, pd.Series)):
        return type(a) is type(b) and a.equals(b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
        except TypeError:
            return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


@dataclass(eq=False)
class EvaluationResult:
    """What :func:`evaluate` returns.

    Attributes
    ----------
    table : pandas.DataFrame
        Tidy: one row per (model, subgroup) with columns ``model``,
        ``subgroup``, the counts (``subgroup_size``, ``subgroup_negatives``,
        ``subgroup_positives``, ``background_negatives``,
        ``background_positives``) and the five metrics (plus interval columns
        when intervals were asked for).
    overall_auc : pandas.Series
        Overall AUC per model (index = model name).
    label, models, subgroups : str, list of str, list of str
        The columns that were evaluated.
    settings : dict
        Thresholds and the missing-identity policy used.
    model_attrs : dict
        Per model, what its own table carried besides the rows (as
        ``bias_metrics(...).attrs``): the overall AUC's interval
        (``overall_auc_low``/``_high``/``_se``, of all the rows), the bootstrap's
        final-metric interval (``final_metric_low``/``_high``/``_se``, ``n_boot``; not
        made under ``missing_subgroup="exclude"``), the number of significance
        tests. :meth:`for_model` puts them back on the model's table.
    thresholds : pandas.DataFrame or None
        With ``thresholds=``: the threshold metrics, tidy, one row per model, threshold
        and subgroup (columns ``model``, ``threshold``, ``subgroup``, then those of
        :func:`fastbias.threshold_metrics`).
    """

    table: pd.DataFrame
    overall_auc: pd.Series
    label: str
    models: list
    subgroups: list
    settings: dict = field(default_factory=dict)
    model_attrs: dict = field(default_factory=dict)
    thresholds: pd.DataFrame | None = None

    def __eq__(self, other) -> bool:
        """Whether two results hold the same tables, overall AUCs, columns, settings and
        attributes (NaN equal to NaN, as ``DataFrame.equals`` has it): a result equals its
        pickled or copied self (found by review: the dataclass's own ``==`` asked pandas for
        a DataFrame's truth value, an error)."""
        if not isinstance(other, EvaluationResult):
            return NotImplemented
        return all(_same(getattr(self, name), getattr(other, name)) for name in
                   ("label", "models", "subgroups", "table", "overall_auc", "thresholds",
                    "settings", "model_attrs"))

    __hash__ = None  # (mutable, as a dataclass with eq)

    def __setstate__(self, state: dict) -> None:
        """Unpickled: the warnings a result made elsewhere carries (``_replay``: a lazy Dask
        call's result, combined on a worker, whose warnings would stay in the worker's log)
        are warned again here, once, in the first other process that reads it (read back in
        its own process it keeps them for the next; ``state`` itself is left as it is: a
        ``copy.copy`` hands in the original's own attributes)."""
        state = dict(state)
        replay = state.pop("_replay", None)
        self.__dict__.update(state)
        if not replay:
            return
        if replay[0] == os.getpid():
            self._replay = replay
            return
        for message, category in replay[1]:
            if isinstance(category, type) and issubclass(category, Warning):
                warnings.warn(str(message), category, stacklevel=2)

    def for_model(self, model: str | None = None) -> pd.DataFrame:
        """One model's rows, indexed by subgroup (the layout of :func:`bias_metrics`).

        Examples
        --------
        >>> import fastbias
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=4, random_state=0)
        >>> res = fastbias.evaluate(df, label="toxicity", scores="model_fair",
        ...                         subgroups=["male", "female"])
        >>> list(res.for_model().index)
        ['male', 'female']
        """
        if model is None:
            if len(self.models) != 1:
                raise ValueError(f"several models were evaluated ({self.models}); name one")
            model = self.models[0]
        if model not in self.models:
            raise KeyError(f"model {model!r} was not evaluated; models are {self.models}")
        out = self.table[self.table["model"] == model].drop(columns="model").set_index("subgroup")
        out.attrs.update(self.model_attrs.get(model, {}))
        out.attrs["overall_auc"] = float(self.overall_auc[model])
        if self.settings.get("intersection_members"):
            # (this model's own, in the table's order: under nan_policy="omit" each model
            # keeps those large enough on its rows; found by review, another's were listed)
            members = self.settings["intersection_members"]
            out.attrs["intersections"] = [g for g in out.index if g in members]
        return out

    def subgroups_of(self, models=None) -> list:
        """The subgroups any of ``models`` has (all models by default), in the order of
        :attr:`subgroups`. Under ``nan_policy="omit"`` each model is evaluated on its own
        rows and keeps the intersections and combinations of values large enough there, so
        models may have different ones.

        Examples
        --------
        >>> import fastbias
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=4, random_state=0)
        >>> res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
        ...                         subgroups=["male", "female"])
        >>> res.subgroups_of(["model_fair"])
        ['male', 'female']
        """
        table = self.table
        if models is not None:
            table = table[table["model"].isin(list(models))]
        present = set(table["subgroup"])
        return [g for g in self.subgroups if g in present]

    def wide(self, metrics=None) -> pd.DataFrame:
        """Models side by side: index subgroup, columns (metric, model).

        Examples
        --------
        >>> import fastbias
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=3, random_state=0)
        >>> res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
        ...                         subgroups=["male", "female", "transgender"])
        >>> res.wide(["bpsn_auc"]).columns.tolist()
        [('bpsn_auc', 'model_fair'), ('bpsn_auc', 'model_biased')]
        """
        metrics = list(METRIC_COLUMNS if metrics is None else metrics)
        wide = self.table.pivot(index="subgroup", columns="model", values=metrics)
        wide = wide.reindex(index=self.subgroups)
        return wide.reindex(columns=pd.MultiIndex.from_product([metrics, self.models]))

    def final_metric(self, **kwargs) -> pd.Series:
        """Jigsaw final metric per model (see :func:`fastbias.final_metric`); ``kwargs`` as
        its, by default those the evaluation recorded (``settings["final_metric"]``: a
        :class:`~fastbias.BiasEvaluator`'s ``power``, ``overall_weight`` and ``undefined``)."""
        options = {**self.settings.get("final_metric", {}), **kwargs}
        return pd.Series({m: final_metric(self.for_model(m), float(self.overall_auc[m]),
                                          context=f"model {m!r}", **options)
                          for m in self.models}, name="final_metric")

    def __repr__(self) -> str:
        head = (f"EvaluationResult(label={self.label!r}, models={self.models}, "
                f"{len(self.subgroups)} subgroups)")
        return head + "\noverall AUC:\n" + self.overall_auc.to_string()



def evaluation_result(models: list, tables: list, overall_aucs: list, *, label, subgroups: list,
                      settings: dict, warn: bool = True,
                      thresholds: pd.DataFrame | None = None) -> EvaluationResult:
    """An :class:`EvaluationResult` from one per-subgroup table and overall AUC per model.

    Each table is indexed by subgroup (as :func:`fastbias.bias_metrics`
    returns it); with ``warn`` each model's undefined values raise one
    :class:`~fastbias.UndefinedMetricWarning` naming the model.
    """
    parts, attrs = [], {}
    for model, table in zip(models, tables):
        if warn:
            warn_undefined(table, context=f"model {model!r}")
        attrs[model] = {k: v for k, v in table.attrs.items() if k != "overall_auc"}
        part = table.reset_index()
        part.insert(0, "model", model)
        parts.append(part)
    return EvaluationResult(
        table=pd.concat(parts, ignore_index=True),
        overall_auc=pd.Series(dict(zip(models, overall_aucs)), name="overall_auc", dtype=float),
        label=label, models=list(models), subgroups=list(subgroups), settings=dict(settings),
        model_attrs=attrs, thresholds=thresholds)


def threshold_result(models: list, tables: list, *, interval, gap_interval,
                     confidence: float, warn: bool = True) -> pd.DataFrame:
    """The tidy threshold table of several models (``EvaluationResult.thresholds``): each
    model's :func:`~fastbias.metrics.thresholds.threshold_table` with its intervals, one
    :class:`UndefinedMetricWarning` per model naming it."""
    parts = []
    for model, table in zip(models, tables):
        if interval is not None or gap_interval is not None:
            table = attach_threshold_intervals(table, interval=interval, confidence=confidence,
                                               gap_interval=gap_interval)
        if warn:
            warn_undefined_rates(table, context=f"model {model!r}")
        part = table.reset_index()
        part.insert(0, "model", model)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def result_from_chunks(spec: ColumnSpec, chunks_per_model: list, engine: str) -> EvaluationResult:
    """The :class:`EvaluationResult` of each model's chunk counts (out-of-core and Dask
    evaluations), laid out exactly as :func:`fastbias.evaluate` lays it out."""
    names = spec.row_names  # the subgroups, then the intersections chosen
    per_model = [table_from_chunks(chunks, names, spec.weighted, spec.weight_scale)
                 for chunks in chunks_per_model]
    sums = [joined_sums(chunks) if spec.with_sums else None for chunks in chunks_per_model]
    if spec.ci is not None:  # each model's intervals from its chunks' sums or counts
        per_model = [(intervals_from_chunks(table, model_sums, chunks, spec, model, auc), auc)
                     for model, (table, auc), model_sums, chunks in zip(
                         spec.models, per_model, sums, chunks_per_model)]
    if spec.significance is not None:  # each model's p-values from its chunks' placement sums
        per_model = [(significance_from_chunks(table, model_sums, spec, model, auc), auc)
                     for model, (table, auc), model_sums in zip(spec.models, per_model, sums)]
    at_thresholds = None
    if spec.thresholds is not None:  # each model's threshold counts: its chunks' add up
        tables = []
        for chunks in chunks_per_model:
            parts = [c.at_thresholds for c in chunks if c is not None]
            if any(p is None for p in parts):
                raise RuntimeError("a chunk was counted without its threshold counts")
            tables.append(threshold_table(combine_threshold_counts(parts), names, warn=False))
        at_thresholds = threshold_result(spec.models, tables, interval=spec.threshold_interval,
                                         gap_interval=spec.gap_interval,
                                         confidence=spec.confidence)
    return evaluation_result(spec.models, [table for table, _ in per_model],
                             [auc for _, auc in per_model], label=spec.label,
                             subgroups=names, settings=spec.settings(engine),
                             thresholds=at_thresholds)


def joined_sums(chunks: list):
    """The placement sums one model's chunks carry, joined in score order."""
    parts = [c.placements for c in sorted((c for c in chunks if c is not None),
                                          key=lambda c: c.min_score)]
    if any(p is None for p in parts):
        raise RuntimeError("a chunk was counted without its placement sums (significance= "
                           "and ci='delong' must reach every chunk)")
    return combine_placement_sums(parts)


def intervals_from_chunks(table: pd.DataFrame, sums, chunks: list, spec: ColumnSpec,
                          model: str, overall_auc: float) -> pd.DataFrame:
    """One model's table with the intervals of ``spec.ci`` from its chunks: DeLong's from the
    joined placement sums (:func:`~fastbias.intervals.significance.standard_errors_of_sums`),
    Bernstein's from the table's counts. The overall AUC's DeLong interval is of all the
    rows: from a subgroup whose universe holds every row, else (under
    ``missing_subgroup="exclude"``) from the chunks' sums of all their rows
    (``ChunkCounts.all_rows``), and NaN, said in the one warning, where neither was made."""
    chunks = [c for c in chunks if c is not None]
    class_rows = np.sum([c.class_rows for c in chunks], axis=0, dtype=np.int64)
    columns, attrs = {}, {"ci_method": spec.ci, "confidence": spec.confidence}
    found = {}
    if spec.ci == "delong":
        se, universe_se = standard_errors_of_sums(table, sums)
        # (a universe of every row: its classes' rows are all the classes' rows; else the
        # chunks' sums of all their rows, where made: under exclude)
        of_all = np.flatnonzero(np.all(sums.class_rows == class_rows, axis=1))
        every = [c.all_rows for c in sorted(chunks, key=lambda c: c.min_score)]
        all_rows = (combine_placement_sums(every) if not of_all.size and every
                    and all(e is not None for e in every) else None)
        if of_all.size:
            overall_se, class_weights = float(universe_se[of_all[0]]), sums.class_totals[of_all[0]]
        elif all_rows is not None:
            overall_se = universe_standard_error(all_rows)
            class_weights = all_rows.class_totals[0]
        else:
            overall_se, class_weights = float("nan"), None
        found = delong_columns(table, se, overall_auc, overall_se, spec.confidence,
                               lambda: [float(v) for v in class_weights]
                               if class_weights is not None else [2.0, 2.0], columns, attrs)
        if class_weights is None and np.isfinite(overall_auc):
            found = {head: [e for e in entries if e != "overall AUC"]
                     for head, entries in found.items()}
            found["DeLong interval not made out of core, set to NaN (no subgroup is compared "
                  "with every row, as under missing_subgroup='exclude' each is compared with "
                  "its annotated rows, and the chunks keep the placement sums of those "
                  "only)"] = ["overall AUC"]
        if sums.exact_pending:  # (a first call: the exact walks were still compiling)
            found = {(f"{head}; on this first call the chunks' exact sums, which may "
                      f"settle some of them, were still compiling: the next call makes them"
                      if "from rounding" in head else head): entries
                     for head, entries in found.items()}
    else:  # "bernstein"
        cells = table[["subgroup_negatives", "subgroup_positives"]].to_numpy(dtype=np.int64)
        universes = cells + table[["background_negatives", "background_positives"]].to_numpy(
            dtype=np.int64)
        bernstein_columns(table, cells, universes, class_rows, overall_auc, spec.confidence,
                          "adaptive", columns, attrs)
    out = pd.concat([table, pd.DataFrame(columns, index=table.index)], axis=1)
    out.attrs = {**table.attrs, **attrs}
    warn_listed(found, context=f"model {model!r}", stacklevel=4)
    return out


def significance_from_chunks(table: pd.DataFrame, sums, spec: ColumnSpec,
                             model: str, overall_auc: float | None = None) -> pd.DataFrame:
    """One model's table with its adjusted p-values, from the placement sums its chunks
    carry (:func:`joined_sums`); ``overall_auc``: the model's exact AUC of all rows, what
    its subgroups are compared with unless each has a universe of its own (``exclude``)."""
    universe = None if spec.exclude_missing else overall_auc
    return adjust_table(pvalues_from_sums(table, sums, universe_auc=universe),
                        method=spec.significance,
                        confidence=spec.confidence, context=f"model {model!r}")


def checked_extras(significance, confidence, thresholds, threshold_interval="wilson",
                   gap_interval=None, ci=None) -> dict:
    """The out-of-core entry points' ``significance=``, ``confidence=``, threshold and
    ``ci=`` arguments, checked, as :class:`~fastbias.validate.spec.ColumnSpec` fields."""
    from ..intervals.attach import check_ci
    from ..intervals.significance import check_significance
    from ..intervals.thresholds import check_threshold_options
    from ..metrics.thresholds import check_thresholds
    from ..validate.settings import check_confidence

    if check_ci(ci) == "bootstrap":
        raise ValueError("ci='bootstrap' needs the rows in memory (each replicate reweighs "
                         "every row): out of core, ci='delong' (from the same placement sums "
                         "as the significance tests) or 'bernstein' (unweighted)")
    check_threshold_options(thresholds, threshold_interval, gap_interval)  # (both intervals)
    out = {"significance": check_significance(significance),
           "confidence": check_confidence(confidence), "ci": ci}
    if thresholds is not None:
        out.update(thresholds=tuple(check_thresholds(thresholds).tolist()),
                   threshold_interval=threshold_interval, gap_interval=gap_interval)
    return out
