"""Drop-in replacements for the bias-metric functions people copy into notebooks.

Two sources are covered, with their names, arguments and returned columns:

* the Kaggle "Jigsaw Unintended Bias in Toxicity Classification" benchmark
  kernel: :func:`compute_bias_metrics_for_model`, :func:`calculate_overall_auc`,
  :func:`power_mean` and :func:`get_final_metric`;
* the authors' reference code (``model_bias_analysis.py`` of
  conversationai/unintended-ml-bias-analysis):
  :func:`compute_bias_metrics_for_models`.

Change one import and the numbers stay the same (to floating-point rounding),
but every model takes one sort-and-sweep over all subgroups instead of three
``roc_auc_score`` calls (and two Mann-Whitney tests) per subgroup::

    from fastbias.compat import (compute_bias_metrics_for_model, calculate_overall_auc,
                                 get_final_metric)

Differences from the copied code, all on inputs it could not handle: the
label and subgroup columns may be boolean or 0/1 numbers (anything else is a
clear error, not a silent wrong answer from ``~`` on numbers); undefined
metrics are NaN, as there, but also raise a
:class:`~fastbias.UndefinedMetricWarning`; ``power_mean`` with ``p = 0`` is the
geometric mean (the kernel divided by zero); a model or subgroup listed twice
among several models is an error (the reference's merges mangle them). Two
subgroups of exactly equal AUC keep their given order, where sklearn's rounding
may order them either way. A nullable boolean identity column's ``<NA>`` rows
are left out of that subgroup and its background, as the copied code's masks
leave them. An AUC outside [0, 1] in the table given to ``get_final_metric`` is an
error (the kernel averaged it).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics.aggregates import final_metric
from .metrics.aggregates import power_mean as _power_mean
from .metrics.table import overall_auc_from_counts, table_from_counts
from .prepare.memberships import prepare_memberships, subgroup_rows
from .sweep.counts import sweep_counts
from .sweep.parallel import announce_first_use
from .validate.columns import require_columns
from .validate.settings import resolve_workers
from .validate.values import as_scores

#: The label column of the Kaggle data; the default of :func:`calculate_overall_auc`.
TOXICITY_COLUMN = "target"
SUBGROUP_AUC = "subgroup_auc"
BPSN_AUC = "bpsn_auc"  # background positive, subgroup negative
BNSP_AUC = "bnsp_auc"  # background negative, subgroup positive
NEGATIVE_AEG = "negative_aeg"
POSITIVE_AEG = "positive_aeg"
SUBGROUP = "subgroup"
SUBSET_SIZE = "subset_size"
#: Names of BPSN/BNSP AUC in the reference code before 2019 (and its published CSVs).
LEGACY_NAMES = {BPSN_AUC: "negative_cross_auc", BNSP_AUC: "positive_cross_auc"}

_CONVERT_HINT = ("the copied code needs boolean columns; convert first as the benchmark kernel "
                 "does, e.g. df[col] = df[col] >= 0.5")


def _require_frame(dataset, argument: str) -> None:
    if not isinstance(dataset, pd.DataFrame):
        raise TypeError(f"{argument} must be a pandas DataFrame, got {type(dataset).__name__}")


def _as_name_list(value, argument: str) -> list:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return [value]
    names = list(value)
    if not names:
        raise ValueError(f"{argument} is empty")
    return names


def _boolean_labels(column: pd.Series, label_col) -> np.ndarray:
    """Labels as the copied code reads them: a boolean column (0/1 accepted)."""
    if pd.api.types.is_bool_dtype(column.dtype):
        if column.isna().any():
            raise ValueError(f"label column {label_col!r} has {int(column.isna().sum())} "
                             f"missing value(s)")
        return column.to_numpy(dtype=np.bool_)
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = ~((values == 0) | (values == 1))
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        example = column.iloc[first]
        example = example.item() if isinstance(example, np.generic) else example
        if isinstance(example, str):
            hint = ("the copied code needs boolean columns; say which value is the positive "
                    f"class, e.g. df[col] = df[col] == {example!r}")
        else:
            hint = _CONVERT_HINT
        raise ValueError(f"label column {label_col!r} is not boolean: {int(bad.sum())} value(s) "
                         f"other than True/False/0/1 (e.g. {example!r} at position "
                         f"{first}); {hint}")
    return values == 1


def _with_convert_hint(err: Exception) -> Exception:
    """``err`` with the copied code's hint (it takes no threshold: the library's hint to pass
    one is left out; found by review)."""
    message = str(err).replace("; pass a subgroup threshold to binarize", "")
    return type(err)(f"{message}; {_CONVERT_HINT}")


def _subgroup_rows(dataset: pd.DataFrame, subgroups: list):
    for name in subgroups:  # (the copied code has no threshold: say what it needs)
        missing = pd.isna(dataset[name]).to_numpy()
        if missing.any():
            raise ValueError(f"subgroup {name!r} has {int(missing.sum())} missing value(s) "
                             f"(first at position {int(np.flatnonzero(missing)[0])}); "
                             f"{_CONVERT_HINT} (a missing value is then not a member)")
    try:
        return subgroup_rows(dataset[subgroups], len(dataset))
    except (TypeError, ValueError) as err:
        raise _with_convert_hint(err) from err


def _scores(column: pd.Series, model) -> np.ndarray:
    """A model's column as the copied code's ``roc_auc_score`` reads it: booleans (hard
    decisions) as 0/1, else numeric scores."""
    if pd.api.types.is_bool_dtype(column.dtype) and not column.isna().any():
        column = column.astype(np.float64)
    return as_scores(column, f"model column {model!r}")


def _model_tables(dataset, subgroups, models, label_col) -> list:
    """One fastbias table per model, all sharing one membership structure."""
    _require_frame(dataset, "dataset")
    require_columns(dataset, [label_col], "label_col")
    require_columns(dataset, models, "model")
    require_columns(dataset, subgroups, "subgroups")
    labels = _boolean_labels(dataset[label_col], label_col)
    announce_first_use()
    unique = list(dict.fromkeys(subgroups))
    position = [unique.index(s) for s in subgroups]
    if any(isinstance(dataset[s].dtype, pd.BooleanDtype) and dataset[s].isna().any()
           for s in unique):
        return _tables_without_na_rows(dataset, labels, unique, position, models)
    names, rows = _subgroup_rows(dataset, unique)
    memberships = prepare_memberships(labels, rows, names)
    tables = []
    for model in models:
        scores = _scores(dataset[model], model)
        sc = sweep_counts(scores, memberships, workers=resolve_workers(None))  # every usable CPU
        table = table_from_counts(sc, context=f"model {model!r}").iloc[position]
        table.attrs["overall_auc"] = overall_auc_from_counts(sc)
        tables.append(table)
    return tables


def _tables_without_na_rows(dataset, labels, unique, position, models) -> list:
    """Where a nullable boolean identity column holds <NA>: the copied code's
    ``df[df[g]]`` and ``df[~df[g]]`` both leave such rows out (pandas takes <NA> in a mask
    as False), so each subgroup is compared with its annotated rows alone, which is
    :func:`fastbias.evaluate`'s ``missing_subgroup="exclude"`` (found by review: refused,
    with advice that did not work on such a column)."""
    from .frame import evaluate

    frame = pd.DataFrame({"y": labels, **{f"m{k}": _scores(dataset[m], m)
                                          for k, m in enumerate(models)},
                          **{f"g{j}": dataset[s].to_numpy() for j, s in enumerate(unique)}})
    names = [f"g{j}" for j in range(len(unique))]
    try:
        result = evaluate(frame, label="y", scores=[f"m{k}" for k in range(len(models))],
                          subgroups=names, missing_subgroup="exclude")
    except (TypeError, ValueError) as err:
        raise _with_convert_hint(err) from err
    tables = []
    for k in range(len(models)):
        table = result.for_model(f"m{k}").iloc[position]
        table.index = [unique[int(g[1:])] for g in table.index]
        table.attrs["overall_auc"] = result.overall_auc[f"m{k}"]
        tables.append(table)
    return tables


def compute_bias_metrics_for_model(dataset, subgroups, model, label_col, include_asegs=False):
    """Per-subgroup AUCs of one model: the Kaggle benchmark kernel's function.

    Parameters
    ----------
    dataset : pandas.DataFrame
        Holds the label, the model's scores and one column per subgroup; the
        label and subgroup columns boolean (or 0/1), as after the kernel's
        ``convert_dataframe_to_bool``.
    subgroups : list of str
        Subgroup column names, in output order before sorting.
    model : str
        Score column.
    label_col : str
        Label column.
    include_asegs : bool, default False
        The kernel accepts and ignores this. Here True adds the two Average
        Equality Gaps, ``negative_aeg`` and ``positive_aeg``.

    Returns
    -------
    pandas.DataFrame
        Columns ``subgroup``, ``subgroup_size``, ``subgroup_auc``, ``bpsn_auc``,
        ``bnsp_auc`` (then the AEGs), one row per subgroup, sorted by
        ``subgroup_auc`` ascending as the kernel sorts (NaN last, the original
        row number kept as the index). The AUCs here are exact where sklearn's
        carry its rounding: two subgroups of the same AUC keep their given order
        here, and may come in either order in the kernel (0.6 beside
        0.6000000000000001).

    Examples
    --------
    >>> import pandas as pd
    >>> from fastbias.compat import compute_bias_metrics_for_model
    >>> df = pd.DataFrame({"target": [False, False, True, True, False, True],
    ...                    "pred": [0.1, 0.4, 0.35, 0.8, 0.7, 0.9],
    ...                    "g": [True, True, True, False, False, False],
    ...                    "h": [False, True, True, True, True, False]})
    >>> compute_bias_metrics_for_model(df, ["g", "h"], "pred", "target")
      subgroup  subgroup_size  subgroup_auc  bpsn_auc  bnsp_auc
    0        g              3           0.5       1.0       0.0
    1        h              4           0.5       1.0       1.0
    """
    subgroups = _as_name_list(subgroups, "subgroups")
    table = _model_tables(dataset, subgroups, [model], label_col)[0]
    data = {
        SUBGROUP: subgroups,
        "subgroup_size": table["subgroup_size"].to_numpy(dtype=np.int64),
        SUBGROUP_AUC: table["subgroup_auc"].to_numpy(),
        BPSN_AUC: table["bpsn_auc"].to_numpy(),
        BNSP_AUC: table["bnsp_auc"].to_numpy(),
    }
    if include_asegs:
        data[NEGATIVE_AEG] = table["negative_aeg"].to_numpy()
        data[POSITIVE_AEG] = table["positive_aeg"].to_numpy()
    # the kernel's own sort call on the same frame gives the same row order for ties
    return pd.DataFrame(data).sort_values(SUBGROUP_AUC, ascending=True)


def calculate_overall_auc(df, model_name, label_col=TOXICITY_COLUMN):
    """ROC AUC of a score column over all rows: the Kaggle kernel's function.

    The kernel read the label from a global ``TOXICITY_COLUMN``; here it is an
    argument (default ``"target"``). Like ``roc_auc_score``, a one-class label
    column is a ``ValueError``.

    Parameters
    ----------
    df : pandas.DataFrame
    model_name : str
        Score column.
    label_col : str, default "target"
        Boolean (or 0/1) label column.

    Returns
    -------
    float

    Examples
    --------
    >>> import pandas as pd
    >>> from fastbias.compat import calculate_overall_auc
    >>> df = pd.DataFrame({"target": [False, False, True, True], "pred": [0.1, 0.4, 0.35, 0.8]})
    >>> calculate_overall_auc(df, "pred")
    0.75
    """
    _require_frame(df, "df")
    if label_col == TOXICITY_COLUMN and label_col not in df.columns:
        raise KeyError(f"label_col: the kernel's default label column {TOXICITY_COLUMN!r} (its "
                       f"TOXICITY_COLUMN) is not in the DataFrame (columns are "
                       f"{list(df.columns)[:20]}); pass label_col='<your label column>'")
    require_columns(df, [label_col], "label_col")
    require_columns(df, [model_name], "model_name")
    labels = _boolean_labels(df[label_col], label_col)
    scores = _scores(df[model_name], model_name)
    n_pos = int(np.count_nonzero(labels))
    if n_pos == 0 or n_pos == labels.shape[0]:
        raise ValueError(f"label column {label_col!r} has only one class ({n_pos} positive of "
                         f"{labels.shape[0]} rows); ROC AUC is not defined")
    sc = sweep_counts(scores, prepare_memberships(labels, [], []))
    return overall_auc_from_counts(sc)


def power_mean(series, p):
    """``(sum(series ** p) / len(series)) ** (1 / p)``: the Kaggle kernel's helper.

    See :func:`fastbias.power_mean` (which this is); ``p = 0`` gives the
    geometric mean where the kernel divided by zero.

    Examples
    --------
    >>> from fastbias.compat import power_mean
    >>> power_mean([0.5, 1.0], 1)
    0.75
    """
    return _power_mean(series, p)


def get_final_metric(bias_df, overall_auc, POWER=-5, OVERALL_MODEL_WEIGHT=0.25):
    """The competition's final score from a bias table: the Kaggle kernel's function.

    ``OVERALL_MODEL_WEIGHT * overall_auc + (1 - OVERALL_MODEL_WEIGHT) *
    mean(power_mean(bias_df[m], POWER) for m in (subgroup_auc, bpsn_auc, bnsp_auc))``.
    A NaN AUC in ``bias_df`` makes the result NaN, as in the kernel. This is
    :func:`fastbias.final_metric` with the kernel's argument names.

    Examples
    --------
    >>> import pandas as pd
    >>> from fastbias.compat import get_final_metric
    >>> bias_df = pd.DataFrame({"subgroup_auc": [0.9, 0.8], "bpsn_auc": [0.85, 0.95],
    ...                         "bnsp_auc": [0.9, 0.9]})
    >>> round(get_final_metric(bias_df, 0.92), 6)
    0.88827
    """
    return final_metric(bias_df, overall_auc, power=POWER, overall_weight=OVERALL_MODEL_WEIGHT)


def compute_bias_metrics_for_models(dataset, subgroups, models, label_col, include_asegs=False,
                                    *, legacy_names=False):
    """Per-subgroup metrics of several models: the authors' reference function.

    Matches ``compute_bias_metrics_for_models`` of ``model_bias_analysis.py``
    (conversationai/unintended-ml-bias-analysis): one row per subgroup, in the
    given order; columns ``subgroup``, ``subset_size``, then for every model
    ``<model>_subgroup_auc``, ``<model>_bpsn_auc``, ``<model>_bnsp_auc``,
    ``<model>_negative_aeg``, ``<model>_positive_aeg``.

    Parameters
    ----------
    dataset : pandas.DataFrame
        Label, score and boolean (or 0/1) subgroup columns.
    subgroups : list of str
        Subgroup columns.
    models : list of str
        Score columns.
    label_col : str
        Boolean (or 0/1) label column.
    include_asegs : bool, default False
        Not supported: the reference code's ASEG ("average squared equality
        gap") is deprecated there, and its confusion counts make the false
        and true positive rates the same numbers, so there is nothing sound to
        reproduce. True raises ``NotImplementedError``.
    legacy_names : bool, default False
        Name BPSN/BNSP AUC ``negative_cross_auc``/``positive_cross_auc``, as
        the reference code did before 2019 and as its published result files
        (e.g. the 2019 madlibs results) are named.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import pandas as pd
    >>> from fastbias.compat import compute_bias_metrics_for_models
    >>> df = pd.DataFrame({"label": [False, False, True, True, False, True],
    ...                    "m1": [0.1, 0.4, 0.35, 0.8, 0.7, 0.9],
    ...                    "m2": [0.2, 0.1, 0.6, 0.8, 0.3, 0.9],
    ...                    "g": [True, True, True, False, False, False]})
    >>> out = compute_bias_metrics_for_models(df, ["g"], ["m1", "m2"], "label")
    >>> out.columns.tolist()[:4]
    ['subgroup', 'subset_size', 'm1_subgroup_auc', 'm1_bpsn_auc']
    >>> float(out.loc[0, "m2_subgroup_auc"])
    1.0
    """
    if include_asegs:
        raise NotImplementedError(
            "include_asegs=True is not supported: the reference code's ASEG is deprecated and "
            "its confusion counts make the true and false positive rates identical; the Average "
            "Equality Gaps (negative_aeg, positive_aeg) are always included")
    subgroups = _as_name_list(subgroups, "subgroups")
    models = _as_name_list(models, "models")
    # (names listed twice: the reference code's merges give _x/_y columns, or multiply rows;
    # here one model's columns overwrote the other's, silently: found by review)
    twice = [m for m in dict.fromkeys(models) if models.count(m) > 1]
    if twice:
        raise ValueError(f"models lists {twice[0]!r} twice: list each model once (the reference "
                         f"code's merge would name its columns with _x and _y)")
    twice = [s for s in dict.fromkeys(subgroups) if subgroups.count(s) > 1]
    if twice and len(models) > 1:
        raise ValueError(f"subgroups lists {twice[0]!r} twice: with several models list each "
                         f"subgroup once (the reference code's merge on subgroup and size "
                         f"would multiply its rows)")
    tables = _model_tables(dataset, subgroups, models, label_col)
    out = {SUBGROUP: subgroups,
           SUBSET_SIZE: tables[0]["subgroup_size"].to_numpy(dtype=np.int64)}
    for model, table in zip(models, tables):
        for metric in (SUBGROUP_AUC, BPSN_AUC, BNSP_AUC, NEGATIVE_AEG, POSITIVE_AEG):
            name = LEGACY_NAMES.get(metric, metric) if legacy_names else metric
            out[f"{model}_{name}"] = table[metric].to_numpy()
    return pd.DataFrame(out)
