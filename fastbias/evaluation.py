"""DataFrame entry point: one or many models, Jigsaw-layout columns as they come."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._core import (CONCURRENT_SWEEP_MIN_ROWS, Memberships, prepare_memberships, sort_classes,
                    sweep_counts)
from ._validation import (as_labels, as_sample_weight, as_scores, check_aligned, check_nan_policy,
                          check_threshold, column_name, identity_column, name_list,
                          resolve_n_jobs,
                          omit_for_evaluate, require_columns)
from .metrics import (COUNT_COLUMNS, METRIC_COLUMNS, overall_auc_from_counts, table_from_counts,
                      warn_undefined)

MISSING_POLICIES = ("background", "exclude")


@dataclass
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
    """

    table: pd.DataFrame
    overall_auc: pd.Series
    label: str
    models: list
    subgroups: list
    settings: dict = field(default_factory=dict)

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
        out.attrs["overall_auc"] = float(self.overall_auc[model])
        return out

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
        """Jigsaw final metric per model (see :func:`fastbias.final_metric`)."""
        from .aggregates import final_metric

        return pd.Series({m: final_metric(self.for_model(m), float(self.overall_auc[m]), **kwargs)
                          for m in self.models}, name="final_metric")

    def __repr__(self) -> str:
        head = (f"EvaluationResult(label={self.label!r}, models={self.models}, "
                f"{len(self.subgroups)} subgroups)")
        return head + "\noverall AUC:\n" + self.overall_auc.to_string()


def _universes(columns: list, missing_subgroup: str):
    """Group subgroups by the rows they may be compared with.

    ``columns`` are the subgroups' :class:`~fastbias._validation.IdentityValues`.
    With ``missing_subgroup="background"`` every subgroup uses all rows. With
    ``"exclude"`` a subgroup's background leaves out its unannotated rows;
    subgroups with the same missing pattern (as in Jigsaw, where all identity
    columns are annotated together) share one universe and one sweep.
    Returns a list of (kept_rows or None, [subgroup indices]).
    """
    if missing_subgroup == "background":
        return [(None, list(range(len(columns))))]
    groups: dict = {}
    for j, column in enumerate(columns):
        key = b"" if column.missing is None else np.packbits(column.missing).tobytes()
        if key not in groups:
            groups[key] = (column.missing, [])
        groups[key][1].append(j)
    return [(None if missing is None else np.flatnonzero(~missing), members)
            for missing, members in groups.values()]


@dataclass(frozen=True)
class _PreparedUniverse:
    kept_rows: np.ndarray | None
    subgroup_index: list
    memberships: Memberships


def evaluate(df: pd.DataFrame, *, label: str, scores, subgroups, label_threshold: float = 0.5,
             subgroup_threshold: float = 0.5, missing_subgroup: str = "background",
             sample_weight=None, n_jobs: int | None = None, ci: str | None = None,
             confidence: float = 0.95, n_boot: int = 1000, random_state=None,
             nan_policy: str = "raise", pos_label=None) -> EvaluationResult:
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
    subgroups : list of str
        Identity columns: boolean, or numeric (e.g. annotator fractions)
        binarised as ``>= subgroup_threshold``; NaN means "not annotated".
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
    random_state : int or numpy Generator, optional
        Seed for the bootstrap.
    nan_policy : {"raise", "omit"}, default "raise"
        "omit" drops rows with a missing label or weight (for every model)
        and, per model, rows whose score is NaN, missing or infinite, with
        one ``OmittedRowsWarning`` giving the count per column; so models may
        be evaluated on different rows (``settings["omitted_rows"]``).
        Missing identity values are governed by ``missing_subgroup``.
    pos_label : scalar, optional
        The positive class of a two-valued, non-0/1 label column (strings,
        categoricals); ``label_threshold`` is then not used.

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
    if not isinstance(df, pd.DataFrame) and (type(df).__module__ or "").startswith(
            ("pyarrow", "polars")) and hasattr(df, "to_pandas"):
        df = df.to_pandas()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(sample_weight, str):
        check_aligned([("df", df), ("sample_weight", sample_weight)])
    if check_nan_policy(nan_policy) == "omit":
        return omit_for_evaluate(evaluate, df, label=label, scores=scores, subgroups=subgroups,
                                 sample_weight=sample_weight, pos_label=pos_label,
                                 label_threshold=label_threshold,
                                 subgroup_threshold=subgroup_threshold,
                                 missing_subgroup=missing_subgroup, n_jobs=n_jobs, ci=ci,
                                 confidence=confidence, n_boot=n_boot, random_state=random_state)
    subgroup_threshold = check_threshold(subgroup_threshold, "subgroup_threshold")
    if pos_label is None and label_threshold is not None:
        label_threshold = check_threshold(label_threshold, "label_threshold")
    if missing_subgroup not in MISSING_POLICIES:
        raise ValueError(f"missing_subgroup must be one of {MISSING_POLICIES}, got {missing_subgroup!r}")
    if ci not in (None, "delong", "bootstrap", "bernstein"):
        raise ValueError(f"ci must be None, 'delong', 'bootstrap' or 'bernstein', got {ci!r}")
    resolve_n_jobs(n_jobs, 1)
    label = column_name(label, "label")
    models = name_list(scores, "scores", df.columns)
    subgroup_names = name_list(subgroups, "subgroups", df.columns)
    require_columns(df, [label], "label")
    require_columns(df, models, "scores")
    require_columns(df, subgroup_names, "subgroups")
    if df.shape[0] == 0:
        raise ValueError("df is empty (0 rows)")
    n = df.shape[0]

    labels = as_labels(df[label], f"label column {label!r}", pos_label=pos_label,
                       threshold=label_threshold if pos_label is None else None, omit=True)
    if isinstance(sample_weight, str):
        require_columns(df, [sample_weight], "sample_weight")
        weights = as_sample_weight(df[sample_weight], n, f"sample_weight column {sample_weight!r}",
                                   omit=True)
    else:
        weights = as_sample_weight(sample_weight, n, omit=True)

    # one unweighted model on many rows: its class sort runs on a second thread while this one
    # reads the identity columns (the counting walk is split between both threads later)
    pool = early_classes = None
    if len(models) == 1 and weights is None and n >= CONCURRENT_SWEEP_MIN_ROWS:
        first_scores = as_scores(df[models[0]], f"score column {models[0]!r}", n, omit=True)
        pool = ThreadPoolExecutor(max_workers=1)
        early_classes = pool.submit(sort_classes, first_scores, labels)
    try:
        return _evaluate_prepared(df, label, models, subgroup_names, labels, weights, n,
                                  subgroup_threshold, missing_subgroup, n_jobs, ci, confidence,
                                  n_boot, random_state,
                                  {"label_threshold": label_threshold,
                                   "subgroup_threshold": subgroup_threshold,
                                   "missing_subgroup": missing_subgroup, "ci": ci,
                                   "confidence": confidence, "weighted": weights is not None,
                                   "nan_policy": nan_policy, "pos_label": pos_label},
                                  pool, early_classes)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def _evaluate_prepared(df, label, models, subgroup_names, labels, weights, n, subgroup_threshold,
                       missing_subgroup, n_jobs, ci, confidence, n_boot, random_state, settings,
                       pool, early_classes) -> EvaluationResult:
    """The body of :func:`evaluate` once the arguments are validated.

    ``early_classes`` (with its thread ``pool``) is a future of
    :func:`fastbias._core.sort_classes` for the single model over all rows.
    """
    columns = [identity_column(df, name, subgroup_threshold) for name in subgroup_names]
    buffer = np.empty(n, dtype=np.int64)
    member_rows = [column.member_rows(buffer) for column in columns]
    universes = []
    for kept, index in _universes(columns, missing_subgroup):
        rows = [member_rows[j] if kept is None else np.searchsorted(kept, member_rows[j])
                for j in index]
        sub_labels = labels if kept is None else labels[kept]
        universes.append(_PreparedUniverse(
            kept, index, prepare_memberships(sub_labels, rows, [subgroup_names[j] for j in index])))
    needs_overall = all(u.kept_rows is not None for u in universes)
    overall_memberships = prepare_memberships(labels, [], []) if needs_overall else None

    def run_model(model: str):
        values = as_scores(df[model], f"score column {model!r}", n, omit=True)
        tables, overall = [], None
        for u in universes:
            s = values if u.kept_rows is None else values[u.kept_rows]
            w = None if weights is None else (weights if u.kept_rows is None else weights[u.kept_rows])
            if early_classes is not None and u.kept_rows is None:
                sc = sweep_counts(s, u.memberships, sorted_classes=early_classes.result(),
                                  executor=pool)
            else:
                sc = sweep_counts(s, u.memberships, w)
            table = table_from_counts(sc, warn=False)
            if ci is not None:
                from .intervals import add_intervals

                table = add_intervals(table, method=ci, scores=s, memberships=u.memberships,
                                      sample_weight=w, confidence=confidence, n_boot=n_boot,
                                      random_state=random_state)
            tables.append(table)
            if u.kept_rows is None:
                overall = (overall_auc_from_counts(sc), table.attrs)
        if overall is None:
            sc = sweep_counts(values, overall_memberships, weights)
            overall = (overall_auc_from_counts(sc), {})
        return pd.concat(tables).reindex(subgroup_names), overall

    workers = resolve_n_jobs(n_jobs, len(models))
    if workers > 1 and len(models) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(run_model, models))
    else:
        results = [run_model(m) for m in models]

    parts = []
    overall_aucs = {}
    for model, (table, (auc, attrs)) in zip(models, results):
        warn_undefined(table, context=f"model {model!r}")
        overall_aucs[model] = auc
        part = table.reset_index()
        part.insert(0, "model", model)
        parts.append(part)
    tidy = pd.concat(parts, ignore_index=True)
    result = EvaluationResult(
        table=tidy, overall_auc=pd.Series(overall_aucs, name="overall_auc"), label=label,
        models=models, subgroups=subgroup_names,
        settings=settings)
    return result


__all__ = ["evaluate", "EvaluationResult", "COUNT_COLUMNS"]
