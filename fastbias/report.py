"""Bias reports: one self-contained HTML file, CSV, JSON, and an aligned text table.

:class:`BiasReport` (defined in :mod:`fastbias.reports.report`) holds an
:class:`~fastbias.EvaluationResult` with binned scores, enough for every
figure and table without keeping the rows; :func:`bias_report` evaluates and
reports in one step. Write a report with :meth:`BiasReport.save`, whose format
follows the file's extension (``.html``, ``.csv``, ``.json``).
"""
from __future__ import annotations

import pandas as pd

from .frame import evaluate
from .reports.histograms import HISTOGRAM_CELLS, ScoreHistograms, score_histograms
from .reports.report import BiasReport, write_atomically


def bias_report(df: pd.DataFrame, *, label: str, scores, subgroups, title: str | None = None,
                bins: int = 40, **evaluate_kwargs) -> BiasReport:
    """Evaluate ``df`` and build a :class:`BiasReport` in one step.

    Parameters
    ----------
    df : pandas.DataFrame
    label, scores, subgroups
        As in :func:`fastbias.evaluate`.
    title : str, optional
    bins : int, default 40
        Histogram bins of the score distributions.
    **evaluate_kwargs
        Passed to :func:`fastbias.evaluate` (``label_threshold``,
        ``subgroup_threshold``, ``missing_subgroup``, ``ci``, ...).

    Returns
    -------
    BiasReport

    Examples
    --------
    >>> import fastbias
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=4, random_state=0)
    >>> report = fastbias.bias_report(df, label="toxicity", scores=["model_fair", "model_biased"],
    ...                               subgroups=["male", "female", "transgender", "other_gender"])
    >>> html_text = report.to_html()
    >>> html_text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html_text
    True
    """
    result = evaluate(df, label=label, scores=scores, subgroups=subgroups, **evaluate_kwargs)
    return BiasReport.from_result(df, result, bins=bins, title=title,
                                  sample_weight=evaluate_kwargs.get("sample_weight"))


__all__ = ["BiasReport", "ScoreHistograms", "bias_report", "score_histograms", "HISTOGRAM_CELLS",
           "write_atomically"]
