"""Bias reports: one self-contained HTML file, CSV, JSON, and an aligned text table.

A :class:`BiasReport` holds an :class:`~fastbias.EvaluationResult` together
with binned scores (:class:`ScoreHistograms`) - enough for every figure and
table without keeping the rows. Build one with :func:`bias_report` (evaluate
and report in one step) or :meth:`BiasReport.from_result` (an existing
evaluation and its DataFrame), then write it with :meth:`BiasReport.save`, whose
format follows the file's extension (``.html``, ``.csv``, ``.json``).

The figures (:meth:`BiasReport.plot_aucs`, :meth:`~BiasReport.plot_aegs`,
:meth:`~BiasReport.plot_distributions`, :meth:`~BiasReport.plot_intervals`)
need matplotlib (``pip install "fastbias[plot]"``); without it the HTML report
still carries every table and says that the figures were left out.
"""
from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import pandas as pd

from .._version import __version__
from ..intervals.significance import COUNT_ATTRS
from ..metrics.aggregates import final_metric_and_note
from ..metrics.definitions import (
    AUC_METRICS,
    COUNT_COLUMNS,
    METRIC_CELLS,
    METRIC_COLUMNS,
)
from ..validate.settings import check_undefined
from .histograms import ScoreHistograms, score_histograms
from .plain import display_width, name_cell, padded, spreadsheet_cell, terminal_text
from .plots import (
    AEG_COLOR_STOPS,
    AEG_METRICS,
    AUC_COLOR_STOPS,
    METRIC_LABELS,
    SIGNIFICANCE_NAMES,
    color_for,
    interval_metrics,
    number_text,
    percent_text,
    plot_gap_curves,
    plot_threshold_gaps,
    significance_note,
    significance_tests,
    significant_flags,
    text_color_on,
    threshold_shown,
    worst_first,
    worst_gaps,
)

ZERO_WIDTH_MARK = "\u00b0"  # degree sign
ZERO_WIDTH_NOTE = ("zero-width interval: the method found no spread here (in a tiny cell every "
                   "resample, or every placement, can give the same value); it does not mean "
                   "the value is certain. Read the cell counts.")

_SHORT_NAMES = {"subgroup_auc": "subgroup_auc", "bpsn_auc": "bpsn_auc", "bnsp_auc": "bnsp_auc",
                "negative_aeg": "neg_aeg", "positive_aeg": "pos_aeg"}

_CELL_WORDS = {
    "subgroup_negatives": "subgroup negatives",
    "subgroup_positives": "subgroup positives",
    "background_negatives": "background negatives",
    "background_positives": "background positives",
}


OUTPUT_FORMATS = {".html": "html", ".htm": "html", ".csv": "csv", ".json": "json"}


def write_atomically(path, text: str) -> None:
    """Write ``text`` to ``path`` so that the file is either the old one or the complete new one.

    The text goes to a temporary file in the same directory, is flushed to
    disk, and replaces ``path`` in one rename: an interrupted run leaves the
    previous file intact. A symbolic link at ``path`` is refused (it would
    be followed to a file elsewhere). A file replaced keeps its permissions (a
    private report stays private); a new one gets the umask's.
    """
    path = os.fspath(path)
    # one look at what is there (a link checked and then read again could be another by then:
    # found by review, a link planted between the two made the report 0777)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise ValueError(f"output {path!r} is a symbolic link; fastbias does not write through "
                         f"links: give the path of a regular file")
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise ValueError(f"output {path!r} is a directory; give a file name")
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = _temporary_file(directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            if info is not None:  # (by the descriptor: a name could be a link by now)
                if hasattr(os, "fchmod"):
                    os.fchmod(out.fileno(), stat.S_IMODE(info.st_mode))
                else:  # (Windows: no links to fear there, and no POSIX modes)
                    os.chmod(temporary, stat.S_IMODE(info.st_mode))
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _temporary_file(directory: str) -> tuple:
    """``(descriptor, path)`` of a new file in ``directory``, made there by this call (never
    an existing one, never through a link), with the umask's mode as the system gives a new
    file (no umask read and put back: found by review, two writes in threads so made a report
    world-readable and left the umask changed). A short name: a long output name of its own
    would leave none to spare."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        temporary = os.path.join(directory, f".fastbias-{os.urandom(8).hex()}.tmp")
        try:
            return os.open(temporary, flags, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no temporary file could be made in {directory!r}")


#: how many subgroups' gap curves the HTML report draws per model
GAP_CURVES = 4


def _is_nan(value) -> bool:
    try:
        return value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value)
    except (TypeError, ValueError):
        return False


def _fmt_metric(value, metric: str) -> str:
    if _is_nan(value):
        return "n/a"
    return number_text(value, "{:+.4f}" if metric in AEG_METRICS else "{:.4f}")


def _fmt_interval(low, high, metric: str) -> str:
    """``[low, high]`` to 3 decimals; AEG bounds keep their sign (and never show ``-0.000``)."""
    fmt = "{:+.3f}" if metric in AEG_METRICS else "{:.3f}"
    return f"[{number_text(low, fmt)}, {number_text(high, fmt)}]"


def _summary_interval(summary: pd.DataFrame, model, name: str) -> str:
    """`` [low, high]`` of ``name`` in a model's summary row, or "" without one."""
    low = f"{name}_low"
    if low not in summary.columns or _is_nan(summary.at[model, low]):
        return ""
    return " " + _fmt_interval(summary.at[model, low], summary.at[model, f"{name}_high"], name)


def _html_summary_interval(summary: pd.DataFrame, model, name: str) -> str:
    text = _summary_interval(summary, model, name).strip()
    return f'<span class="ci">{html.escape(text)}</span>' if text else ""


def _fmt_count(value) -> str:
    return "n/a" if _is_nan(value) else f"{int(value):,}"


def _spreadsheet_safe(frame: pd.DataFrame, raw: bool) -> pd.DataFrame:
    """``frame`` with every text cell a spreadsheet would run as a formula made text
    (:func:`~fastbias.reports.plain.spreadsheet_cell`), unless ``raw``."""
    if not raw:
        for column in frame.columns:
            if frame[column].dtype == object or pd.api.types.is_string_dtype(frame[column]):
                frame[column] = frame[column].map(spreadsheet_cell)
    return frame


def _csv_text(frame: pd.DataFrame) -> str:
    """CSV of ``frame`` with CRLF line ends (RFC 4180): a cell holding a line break of either
    kind (a name with a carriage return) is then quoted and reads back as one cell."""
    return frame.to_csv(index=False, lineterminator="\r\n")


def _aligned_table(columns: list, rows: list, width: int | None) -> str:
    """Plain-text table: the first column left-aligned, the others right-aligned, two spaces
    apart, a rule under the header; wrapped to ``width`` (see :func:`_column_groups`)."""
    widths = [max(display_width(columns[j]), *(display_width(r[j]) for r in rows)) if rows
              else display_width(columns[j]) for j in range(len(columns))]
    parts = []
    for keep in _column_groups(widths, width):

        def line(cells):
            return "  ".join(padded(cells[j], widths[j], left=j == 0) for j in keep).rstrip()

        parts.append("\n".join([line(columns), "  ".join("-" * widths[j] for j in keep),
                                *(line(r) for r in rows)]))
    return "\n\n".join(parts)


#: the threshold metrics the plain-text table shows (subgroup minus background), short names
_THRESHOLD_GAPS = {"positive_rate_gap": "pos_rate_gap", "tpr_gap": "tpr_gap",
                   "fpr_gap": "fpr_gap", "fnr_gap": "fnr_gap", "precision_gap": "prec_gap"}
_THRESHOLD_NOTE = ("score >= threshold; gaps are the subgroup's rate minus its background's")


def _column_groups(widths: list, width: int | None) -> list:
    """Columns (indices) of each wrapped part of a table: column 0 (the names) in every part,
    the others in order, as many as fit ``width`` with two spaces between columns."""
    if width is None or sum(widths) + 2 * (len(widths) - 1) <= width:
        return [list(range(len(widths)))]
    groups, current, used = [], [0], widths[0]
    for j in range(1, len(widths)):
        if len(current) > 1 and used + 2 + widths[j] > width:
            groups.append(current)
            current, used = [0], widths[0]
        current.append(j)
        used += 2 + widths[j]
    groups.append(current)
    return groups


def undefined_reason(row, metric: str) -> str:
    """Why ``metric`` is undefined for one table row (a dict-like with the count columns)."""
    first, second = METRIC_CELLS[metric]
    empty = [c for c in (first, second) if not _is_nan(row[c]) and int(row[c]) == 0]
    compares = f"it compares {_CELL_WORDS[first]} with {_CELL_WORDS[second]}"
    if not empty:
        return f"{compares}, and one of them has zero total weight"
    which = " and ".join(f"{c} = 0" for c in empty)
    return f"{compares}, and {which}"


#: The report runs no script at all and loads nothing: figures are inline data: images and
#: styles are inline. Whatever a name from the data smuggles in cannot execute or call out.
CONTENT_SECURITY_POLICY = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
                           "base-uri 'none'; form-action 'none'")


def _json_value(value):
    """A value as strict JSON holds it: NaN (undefined) null, an infinity (a threshold of
    inf, which evaluate takes) the string "Infinity" or "-Infinity", lists element-wise."""
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    return value


def _matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class BiasReport:
    """An evaluation, its binned scores and what it takes to show them.

    Attributes
    ----------
    result : fastbias.EvaluationResult
    histograms : ScoreHistograms
    title : str
    source : str
        Where the data came from (shown in the report).
    timings : dict
        Optional ``{step: seconds}`` shown in the report (the demo fills it).
    threshold : float, optional
        With threshold metrics (``evaluate(..., thresholds=...)``): the one whose gaps the
        figures show (one of those evaluated; default: the one nearest 0.5).
    """

    result: object
    histograms: ScoreHistograms
    title: str = "fastbias report"
    source: str = ""
    timings: dict = field(default_factory=dict)
    threshold: float | None = None

    @classmethod
    def from_result(cls, df: pd.DataFrame, result, *, bins: int = 40, title: str | None = None,
                    source: str = "", sample_weight=None) -> "BiasReport":
        """Report on an existing evaluation of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            The frame given to :func:`fastbias.evaluate` (only its score,
            label and subgroup columns are read, to bin the scores).
        result : fastbias.EvaluationResult
        bins : int, default 40
            Histogram bins for the score distributions.
        title : str, optional
        source : str, optional
        sample_weight : str or array-like, optional
            The weights given to :func:`fastbias.evaluate`; needed where
            ``nan_policy="omit"`` left out rows of missing weight (see
            :func:`~fastbias.report.score_histograms`).

        Returns
        -------
        BiasReport

        Examples
        --------
        >>> import fastbias
        >>> from fastbias.report import BiasReport
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=3, random_state=0)
        >>> res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
        ...                         subgroups=["male", "female", "transgender"])
        >>> report = BiasReport.from_result(df, res, title="toy")
        >>> list(report.summary().index)
        ['model_fair', 'model_biased']
        """
        return cls(result=result, histograms=score_histograms(df, result, bins=bins,
                                                              sample_weight=sample_weight),
                   title=title or "fastbias report", source=source)

    # ---------------------------------------------------------------- tables

    def worst_subgroups(self, n: int | None = None, model: str | None = None) -> list:
        """The ``n`` worst subgroups (all by default), worst first.

        With ``model``: ranked by that model's own lowest Subgroup, BPSN or
        BNSP AUC. Without: every model's ranking taken in turn (its worst,
        then the next model's worst, ...), so that a list cut at ``n`` never
        leaves out a model's own worst subgroups. Subgroups whose AUCs are all
        undefined come last.
        """
        if model is not None:
            order = worst_first(self.result, [model])
        else:
            rankings = [worst_first(self.result, [m]) for m in self.result.models]
            # (zip_longest: models may keep different subgroups, and zip stopped at the
            # shortest ranking, leaving out what only some models have; found by review)
            order = list(dict.fromkeys(g for tier in itertools.zip_longest(*rankings)
                                       for g in tier if g is not None))
        return order if n is None else order[:n]

    def final_metrics(self, undefined: str = "propagate", *,
                      nan_policy: str | None = None) -> pd.Series:
        """Jigsaw final metric per model (see :func:`fastbias.final_metric`).

        With the default ``undefined="propagate"`` a model with an undefined
        per-subgroup AUC gets NaN; ``"omit"`` leaves undefined AUCs out
        (``nan_policy`` is the deprecated name of ``undefined``).
        """
        undefined = check_undefined(undefined, nan_policy, where="BiasReport.final_metrics")
        values = {}
        for model in self.result.models:  # (undefined ones: NaN, warned by the evaluation)
            values[model], _ = final_metric_and_note(self.result.for_model(model),
                                                     float(self.result.overall_auc[model]),
                                                     undefined=undefined)
        return pd.Series(values, name="final_metric", dtype=np.float64)

    def summary(self) -> pd.DataFrame:
        """One row per model: overall AUC, final metric, lowest AUC and largest AEG.

        Returns
        -------
        pandas.DataFrame
            Index ``model``; columns ``overall_auc`` (with ``overall_auc_low`` and
            ``overall_auc_high`` when intervals were computed), ``final_metric`` (with
            ``final_metric_low``/``_high`` from the bootstrap), ``lowest_auc``,
            ``lowest_auc_subgroup``, ``lowest_auc_metric``, ``largest_abs_aeg``,
            ``largest_aeg_subgroup``, ``largest_aeg_metric``,
            ``undefined_values``; ``lowest_auc_ties`` and ``largest_aeg_ties``: how many other
            (subgroup, metric) values equal the extreme named (the first of them is named).
        """
        rows = {}
        finals = self.final_metrics()
        for model in self.result.models:
            part = self.result.for_model(model)
            row = {"overall_auc": float(self.result.overall_auc[model])}
            if "overall_auc_low" in part.attrs:
                row.update(overall_auc_low=float(part.attrs["overall_auc_low"]),
                           overall_auc_high=float(part.attrs["overall_auc_high"]))
            if model in finals.index:
                row["final_metric"] = float(finals[model])
                if "final_metric_low" in part.attrs:  # the bootstrap's
                    row.update(final_metric_low=float(part.attrs["final_metric_low"]),
                               final_metric_high=float(part.attrs["final_metric_high"]))
            aucs = part[AUC_METRICS].stack().dropna()
            if len(aucs):
                (subgroup, metric), value = aucs.idxmin(), aucs.min()
                row.update(lowest_auc=float(value), lowest_auc_subgroup=subgroup,
                           lowest_auc_metric=metric, lowest_auc_ties=int((aucs == value).sum()) - 1)
            else:
                row.update(lowest_auc=np.nan, lowest_auc_subgroup=None, lowest_auc_metric=None,
                           lowest_auc_ties=0)
            aegs = part[AEG_METRICS].stack().dropna()
            if len(aegs):
                where = aegs.abs().idxmax()
                row.update(largest_abs_aeg=float(aegs[where]), largest_aeg_subgroup=where[0],
                           largest_aeg_metric=where[1],
                           largest_aeg_ties=int((aegs.abs() == abs(aegs[where])).sum()) - 1)
            else:
                row.update(largest_abs_aeg=np.nan, largest_aeg_subgroup=None,
                           largest_aeg_metric=None, largest_aeg_ties=0)
            row["undefined_values"] = int(part[METRIC_COLUMNS].isna().to_numpy().sum())
            rows[model] = row
        out = pd.DataFrame.from_dict(rows, orient="index")
        out.index.name = "model"
        return out

    def undefined_cells(self) -> pd.DataFrame:
        """Every undefined (NaN) metric with the reason: columns model, subgroup, metric, reason."""
        records = []
        for row in self.result.table.to_dict("records"):
            for metric in METRIC_COLUMNS:
                if _is_nan(row[metric]):
                    records.append({"model": row["model"], "subgroup": row["subgroup"],
                                    "metric": metric, "reason": undefined_reason(row, metric)})
        return pd.DataFrame(records, columns=["model", "subgroup", "metric", "reason"])

    def to_text(self, *, max_subgroups: int | None = None, width: int | None = None) -> str:
        """An aligned plain-text table per model, worst subgroups first.

        Parameters
        ----------
        max_subgroups : int, optional
            Show only this many of the worst subgroups.
        width : int, optional
            Wrap each table to this many characters: the columns that do not
            fit continue in a second (third, ...) table below, the subgroup
            column repeated. None: one table however wide.

        Returns
        -------
        str

        Examples
        --------
        >>> import fastbias
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
        >>> report = fastbias.bias_report(df, label="toxicity", scores="model_fair",
        ...                               subgroups=["male", "female"])
        >>> print(report.to_text().splitlines()[1])  # doctest: +NORMALIZE_WHITESPACE
        subgroup  size  sub-  sub+  bg-  bg+  subgroup_auc  bpsn_auc  bnsp_auc  neg_aeg  pos_aeg
        """
        summary = self.summary()
        ci_metrics = interval_metrics(self.result.table)
        note = significance_note(self.result)
        tested = note is not None
        zero_width = undefined_overall = 0
        blocks, ties = [], []
        for model in self.result.models:
            order = self.worst_subgroups(max_subgroups, model=model)
            tied = self._tied_past_cut(max_subgroups, model)
            if tied:
                whose = f"for {name_cell(model)}, " if len(self.result.models) > 1 else ""
                ties.append(f"{whose}{len(tied)} more tie with the last shown "
                            f"({', '.join(name_cell(g) for g in tied[:5])}"
                            f"{', ...' if len(tied) > 5 else ''})")
            part = self.result.for_model(model).reindex(order)
            overall = summary.at[model, "overall_auc"]
            head = f"{name_cell(model)}  overall AUC {_fmt_metric(overall, '')}"
            undefined_overall += _is_nan(overall)
            head += _summary_interval(summary, model, "overall_auc")
            if "final_metric" in summary.columns:
                final = summary.at[model, "final_metric"]
                head += f"  final metric {_fmt_metric(final, '')}"
                head += _summary_interval(summary, model, "final_metric")
                if _is_nan(final):
                    omitted = self.final_metrics("omit").get(model, np.nan)
                    if not _is_nan(omitted):
                        head += f" ({omitted:.4f} without the n/a AUCs)"
            columns = ["subgroup", "size", "sub-", "sub+", "bg-", "bg+"] + \
                [_SHORT_NAMES[m] for m in METRIC_COLUMNS] + (["significant"] if tested else [])
            flags = significant_flags(part, METRIC_COLUMNS)
            rows = []
            for (name, row), row_flags in zip(part.iterrows(), flags):
                cells = [name_cell(name)] + [_fmt_count(row[c]) for c in COUNT_COLUMNS]
                for metric, flagged in zip(METRIC_COLUMNS, row_flags):
                    text = _fmt_metric(row[metric], metric) + ("*" if flagged else "")
                    if metric in ci_metrics and not _is_nan(row[metric]):
                        low, high = row[f"{metric}_low"], row[f"{metric}_high"]
                        if not (_is_nan(low) or _is_nan(high)):
                            text += " " + _fmt_interval(low, high, metric)
                            if low == high:
                                text += ZERO_WIDTH_MARK
                                zero_width += 1
                    cells.append(text)
                if tested:
                    flagged = ",".join(_SHORT_NAMES[m] for m, f in zip(METRIC_COLUMNS,
                                                                       row_flags) if f)
                    untested = ",".join(_SHORT_NAMES[m] for m in METRIC_COLUMNS
                                        if not _is_nan(row[m])
                                        and _is_nan(row.get(f"{m}_pvalue", np.nan)))
                    cells.append((flagged or "-")
                                 + (f" (not tested: {untested})" if untested else ""))
                rows.append(cells)
            body = [head, _aligned_table(columns, rows, width)]
            if self.result.thresholds is not None:
                body += ["", self._threshold_text(model, order, width)]
            blocks.append("\n".join(body))
        text = "\n\n".join(blocks)
        # each model's own subgroups (models may keep different intersections: found by review)
        n_own = {m: len(self.result.subgroups_of([m])) for m in self.result.models}
        if max_subgroups is not None and max_subgroups < max(n_own.values()):
            # (a cut within a tie said: found by review, t2 and t3 as bad as the last shown)
            tie_note = f"; {'; '.join(ties)}" if ties else ""
            of = (f"{max(n_own.values())}" if len(set(n_own.values())) == 1 else
                  ", ".join(f"{n} ({name_cell(m)})" for m, n in n_own.items()))
            text += (f"\n\n({max_subgroups} worst of {of} subgroups "
                     f"shown for each model, ranked by that model's own lowest AUC{tie_note})")
        n_undefined = int(self.summary()["undefined_values"].sum())
        n_gaps = self._undefined_threshold_gaps()
        if n_undefined or n_gaps:
            # (with --top, of every row: some may be in rows not shown; found by review)
            where = (" in all the rows, those not shown included"
                     if max_subgroups is not None and max_subgroups < len(self.result.subgroups)
                     else "")
            # (the threshold table's counted and explained too: found by review)
            parts = ([f"{n_undefined} metric value(s): the metric compares two cells and one "
                      f"of them is empty or, weighted, of zero total weight (see the report "
                      f"for each reason)"] if n_undefined else []) + \
                ([f"{n_gaps} threshold gap(s): a rate of the subgroup or of its background "
                  f"with no row to count (e.g. a precision where no row scores at or above "
                  f"the threshold)"] if n_gaps else [])
            text += (f"\n\nn/a: {n_undefined + n_gaps} undefined value(s){where}: "
                     + "; ".join(parts))
        if undefined_overall:  # (found by review: shown as "nan", unexplained)
            text += (f"\n\noverall AUC n/a ({undefined_overall} model(s)): the model's rows hold "
                     f"no negative or no positive (or, weighted, one class of zero total weight)")
        text += ("\n\nsub-/sub+: the subgroup's negatives/positives; bg-/bg+: the "
                 "background's (rows not in the subgroup)")
        if zero_width:
            text += f"\n\n{ZERO_WIDTH_MARK} {ZERO_WIDTH_NOTE}"
        if tested:
            text += "\n\n" + note
        return text

    def _tied_past_cut(self, n: int | None, model) -> list:
        """The subgroups past the first ``n`` of ``model``'s ranking whose lowest AUC equals
        the last shown's (none where the list is not cut, or the last is undefined)."""
        ranked = worst_first(self.result, [model])
        if n is None or n <= 0 or n >= len(ranked):
            return []
        lowest = self.result.for_model(model)[list(AUC_METRICS)].min(axis=1, skipna=True)
        last = lowest.get(ranked[n - 1], np.nan)
        if _is_nan(last):
            return []
        return [g for g in ranked[n:] if lowest.get(g, np.nan) == last]

    def _ties_note(self, rows: list, ranked: list) -> str:
        """``" (and N more tied with the last shown: a, b)"`` where a list of the worst
        ``rows`` (of ``ranked``) leaves out a subgroup whose lowest AUC equals, in some model,
        that of the last of the model's ranking shown before its first left out (found by
        review: the figures' captions called one of two exactly tied subgroups the worst,
        which the terminal text says)."""
        shown, among, tied = set(rows), set(ranked), []
        for model in self.result.models:
            order = [g for g in worst_first(self.result, [model]) if g in among]
            prefix = next((k for k, g in enumerate(order) if g not in shown), len(order))
            if prefix == 0 or prefix == len(order):
                continue
            lowest = self.result.for_model(model)[list(AUC_METRICS)].min(axis=1, skipna=True)
            last = lowest.get(order[prefix - 1], np.nan)
            if _is_nan(last):
                continue
            tied += [g for g in order[prefix:] if g not in shown and g not in tied
                     and lowest.get(g, np.nan) == last]
        if not tied:
            return ""
        names = ", ".join(name_cell(g) for g in tied[:5]) + (", ..." if len(tied) > 5
                                                                       else "")
        return f" (and {len(tied)} more tied with the last shown: {names})"

    def _undefined_threshold_gaps(self) -> int:
        """How many of the gaps the text's threshold tables show are n/a (every model and
        subgroup)."""
        if self.result.thresholds is None:
            return 0
        at = self.result.thresholds
        at = at[at["model"].isin(list(self.result.models))
                & at["subgroup"].isin(list(self.result.subgroups))]
        return int(at[list(_THRESHOLD_GAPS)].isna().to_numpy().sum())

    def _threshold_text(self, model, order: list, width: int | None) -> str:
        """The plain-text table of a model's threshold metrics (``evaluate(...,
        thresholds=...)``): per subgroup (in ``order``) and threshold, the gaps between the
        subgroup's rates and its background's, with their intervals when computed."""
        columns = ["subgroup", "threshold", *_THRESHOLD_GAPS.values()]
        rows = [[name_cell(name), threshold, *gaps]
                for name, threshold, gaps in self._threshold_rows(model, order)]
        return (f"threshold metrics ({_THRESHOLD_NOTE})\n" + _aligned_table(columns, rows, width))

    def _threshold_rows(self, model, order: list) -> list:
        """``(subgroup, threshold text, [gap texts])`` of a model's threshold metrics, per
        subgroup (in ``order``) and threshold: each gap between the subgroup's rate and its
        background's (4 decimals) with its interval when computed (3), or n/a. The text and
        HTML tables both show these."""
        at = self.result.thresholds
        at = at[at["model"] == model]
        # (the cells' sizes are the AUC table's; with weights the threshold table's cell
        # columns hold weights, not rows)
        rows = []
        for name in order:
            for _, row in at[at["subgroup"] == name].sort_values("threshold").iterrows():
                gaps = []
                for gap in _THRESHOLD_GAPS:
                    text = "n/a" if _is_nan(row[gap]) else number_text(row[gap], "{:+.4f}")
                    if f"{gap}_low" in row.index and not (
                            _is_nan(row[gap]) or _is_nan(row[f"{gap}_low"])):
                        text += (f" [{number_text(row[f'{gap}_low'], '{:+.3f}')}, "
                                 f"{number_text(row[f'{gap}_high'], '{:+.3f}')}]")
                    gaps.append(text)
                rows.append((name, repr(float(row["threshold"])), gaps))
        return rows

    def _html_thresholds(self) -> str:
        """Each model's threshold metrics as a table (every subgroup, worst first), or ""
        without ``thresholds=``: the figures show one threshold and curves, not the values."""
        if self.result.thresholds is None:
            return ""
        out = [f'<h2 id="thresholds">Threshold metrics</h2><p class="note">'
               f"{html.escape(_THRESHOLD_NOTE)}.</p>"]
        head = ("<tr><th>subgroup</th><th>threshold</th>"
                + "".join(f"<th>{html.escape(short)}</th>" for short in _THRESHOLD_GAPS.values())
                + "</tr>")
        for model in self.result.models:
            rows = "".join(
                f"<tr><td>{_html_name(name)}</td><td class=num>{html.escape(threshold)}</td>"
                + "".join(f"<td class=num>{html.escape(gap)}</td>" for gap in gaps) + "</tr>"
                for name, threshold, gaps in self._threshold_rows(
                    model, self.worst_subgroups(model=model)))
            out.append(f"<h3>{_html_name(model)}</h3><div class=\"scroll\"><table "
                       f'class="thresholds" data-model="{html.escape(str(model))}"><thead>'
                       f"{head}</thead><tbody>{rows}</tbody></table></div>")
        return "".join(out)

    def threshold_frame(self) -> pd.DataFrame | None:
        """The tidy table of the threshold metrics (one row per model, threshold and
        subgroup), or None when the evaluation had no ``thresholds``.

        Returns
        -------
        pandas.DataFrame or None
            As :attr:`EvaluationResult.thresholds` (counts, rates with their intervals,
            gaps); :meth:`thresholds_to_csv` writes it.

        Examples
        --------
        >>> import fastbias
        >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
        >>> report = fastbias.bias_report(df, label="toxicity", scores="model_fair",
        ...                               subgroups=["male", "female"], thresholds=[0.3, 0.5])
        >>> report.threshold_frame()[["threshold", "subgroup"]].values.tolist()
        [[0.3, 'male'], [0.3, 'female'], [0.5, 'male'], [0.5, 'female']]
        """
        return None if self.result.thresholds is None else self.result.thresholds.copy()

    def thresholds_to_csv(self, path, *, raw: bool = False) -> None:
        """Write :meth:`threshold_frame` as CSV, names made safe as in :meth:`to_csv`; a
        ValueError when the evaluation had no thresholds."""
        frame = self.threshold_frame()
        if frame is None:
            raise ValueError("this report has no threshold metrics: evaluate with thresholds=")
        write_atomically(path, _csv_text(_spreadsheet_safe(frame, raw)))

    def to_frame(self) -> pd.DataFrame:
        """The tidy table with the model's overall AUC and final metric (and their
        intervals, when computed) on every row."""
        table = self.result.table.copy()
        table["overall_auc"] = table["model"].map(self.result.overall_auc.to_dict())
        finals = self.final_metrics()
        if len(finals):
            table["final_metric"] = table["model"].map(finals.to_dict())
        summary = self.summary()
        for name in ("overall_auc_low", "overall_auc_high", "final_metric_low",
                     "final_metric_high"):
            if name in summary.columns:
                table[name] = table["model"].map(summary[name].to_dict())
        return table

    def to_csv(self, path, *, raw: bool = False) -> None:
        """Write :meth:`to_frame` as CSV (undefined values are empty fields).

        A text cell (a model or subgroup name) that a spreadsheet would run as
        a formula, one starting with ``=``, ``+``, ``-``, ``@``, a tab or a
        line break, is written with a ``'`` in front so that it shows as text
        (and so is one starting with ``'``, so that no two names are written
        alike); ``raw=True`` writes every name exactly as it is.
        """
        write_atomically(path, _csv_text(_spreadsheet_safe(self.to_frame(), raw)))

    def to_dict(self) -> dict:
        """Everything in the report as plain JSON-ready Python (NaN becomes None)."""

        summary = self.summary()
        models = []
        for model in self.result.models:
            part = self.result.table[self.result.table["model"] == model].drop(columns="model")
            rows = [{k: _json_value(v) for k, v in r.items()} for r in part.to_dict("records")]
            models.append({
                "name": model,
                **{k: _json_value(v) for k, v in summary.loc[model].items()},
                "subgroups": rows,
            })
            # how the p-values were had (tests, out-of-core bounds, cells untested), as the
            # HTML and terminal say it (found by review: the JSON gave the p-values alone)
            attrs = self.result.model_attrs.get(model, {}) if self.result.model_attrs else {}
            if self.result.settings.get("significance") and "permutation_tests" in attrs:
                models[-1]["significance_tests"] = {
                    k: _json_value(attrs[k]) for k in (*COUNT_ATTRS, "n_tests") if k in attrs}
            if self.result.thresholds is not None:  # one record per threshold and subgroup
                at = self.result.thresholds
                at = at[at["model"] == model].drop(columns="model")
                models[-1]["thresholds"] = [{k: _json_value(v) for k, v in r.items()}
                                            for r in at.to_dict("records")]
        return {
            "fastbias_version": __version__,
            "title": self.title,
            "source": self.source,
            "label": self.result.label,
            "n_rows": self.histograms.n_rows,
            "n_negatives": self.histograms.n_negatives,
            "n_positives": self.histograms.n_positives,
            "settings": {k: _json_value(v) for k, v in self.result.settings.items()},
            "models": models,
            "timings_s": {k: float(v) for k, v in self.timings.items()},
        }

    def to_json(self, path=None, *, indent: int = 2) -> str:
        """JSON text of :meth:`to_dict` (strict JSON: undefined values are null); written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            write_atomically(path, text + "\n")
        return text

    # ---------------------------------------------------------------- figures

    def plot_aucs(self, **kwargs):
        """Heatmap of the three AUCs (see :func:`fastbias.plotting.plot_auc_heatmap`)."""
        from .plots import plot_auc_heatmap

        return plot_auc_heatmap(self.result, **kwargs)

    def plot_aegs(self, **kwargs):
        """Heatmap of the two AEGs (see :func:`fastbias.plotting.plot_aeg_heatmap`)."""
        from .plots import plot_aeg_heatmap

        return plot_aeg_heatmap(self.result, **kwargs)

    def plot_distributions(self, subgroups=None, *, n_worst: int = 3, models=None):
        """Score distributions of subgroups against the background, the worst ``n_worst`` by default.

        See :func:`fastbias.plotting.plot_score_distributions`.
        """
        from .plots import plot_score_distributions

        if subgroups is None:
            subgroups = self.worst_subgroups(n_worst)
        elif isinstance(subgroups, str):
            subgroups = [subgroups]
        return plot_score_distributions(self.histograms, subgroups=subgroups, models=models)

    def plot_intervals(self, **kwargs):
        """Intervals per subgroup (see :func:`fastbias.plotting.plot_intervals`)."""
        from .plots import plot_intervals

        return plot_intervals(self.result, **kwargs)

    # ---------------------------------------------------------------- HTML

    def figures(self, *, max_subgroups: int = 40, n_distributions: int = 3) -> list:
        """(key, caption, Figure) for every figure of the HTML report; [] without matplotlib."""
        if not _matplotlib_available():
            return []
        # (with intersections, the figures rank the identities alone: the intersections,
        # small cells whose extreme AUCs would crowd them out, have their own section)
        members = self.result.settings.get("intersection_members") or {}
        ranked = [g for g in self.worst_subgroups() if g not in members]
        n_all = len(ranked)
        limit = max_subgroups if n_all > max_subgroups else None
        kind = "identities" if members else "subgroups"
        shown = f"the {max_subgroups} worst of {n_all} {kind}" if limit else \
            f"all {n_all} {kind}"
        if members:
            shown += f" (the {len(members)} intersections: in their own section)"
        rows = ranked[:limit] if limit else ranked
        shown += self._ties_note(rows, ranked)
        order_note = "each model's worst first, in turn" if len(self.result.models) > 1 else \
            "worst first"
        # (a model that does not keep a row's subgroup: said apart from an undefined value,
        # found by review)
        absent = any(set(rows) - set(self.result.subgroups_of([model]))
                     for model in self.result.models)
        absent_is = "absent = not a subgroup of that model"
        absent_note = f"; {absent_is}" if absent else ""
        out = [
            ("aucs", f"Subgroup, BPSN and BNSP AUC per subgroup and model, {shown}, "
                     f"{order_note} (scale 0.5-1; hatched n/a = undefined{absent_note}).",
             self.plot_aucs(subgroups=rows)),
            ("aegs", f"Negative and Positive AEG, {shown} in the same order (diverging scale "
                     f"-0.5..0.5; red = the subgroup is scored higher than the background of "
                     f"the same class, blue = lower{absent_note}).",
             self.plot_aegs(subgroups=rows)),
        ]
        if interval_metrics(self.result.table):
            out.append(("intervals", f"Point estimates and intervals, {shown}"
                                     f"{f' ({absent_is})' if absent else ''}.",
                        self.plot_intervals(subgroups=rows)))
        if self.result.thresholds is not None:
            shown_at = threshold_shown(self.result, self.threshold)
            all_gaps = worst_gaps(self.result, shown_at)
            gap_rows = all_gaps[:max_subgroups]
            # (these rank every row, the intersections too: say so where there are any)
            among = f" ({len(members)} of the {len(all_gaps)} rows are intersections)" \
                if members else ""
            out.append(("threshold-gaps",
                        f"FPR and FNR gap (subgroup minus background) at threshold "
                        f"{shown_at!r} (predicted positive: score >= threshold), largest first"
                        f"{among}"
                        f"{'' if len(gap_rows) == len(all_gaps) else f', the {len(gap_rows)} largest of {len(all_gaps)}'}"
                        + (f"; bars: {percent_text(self.result.settings.get('confidence', 0.95))} "
                           "Bernstein intervals" if "fpr_gap_low" in self.result.thresholds
                           else "") + ".",
                        plot_threshold_gaps(self.result, threshold=shown_at,
                                            subgroups=gap_rows)))
            if self.result.thresholds["threshold"].nunique() > 1:
                for model in self.result.models:
                    own = worst_gaps(self.result, shown_at, [model])  # (the model's own rows)
                    curves = min(GAP_CURVES, len(own))
                    out.append((f"gap-curves-{self.result.models.index(model)}",
                                f"FPR and FNR gap across the thresholds for the {curves} of "
                                f"{len(own)} {'rows (intersections included)' if members else 'subgroups'} "
                                f"with the largest gaps at {shown_at!r} (dotted line), "
                                f"{name_cell(model)}.",
                                plot_gap_curves(self.result, model=model,
                                                threshold=shown_at, n_subgroups=GAP_CURVES)))
        worst = ranked[:n_distributions]
        out.append(("distributions",
                    f"Score distributions of "
                    f"{'the worst subgroup' if len(worst) == 1 else f'the {len(worst)} worst subgroups'}"
                    f"{self._ties_note(worst, ranked)} (line) against "
                    f"their background (grey), negatives and positives separately: a subgroup "
                    f"curve right of the background means higher scores for that subgroup "
                    f"(positive AEG); negatives of a subgroup overlapping the background "
                    f"positives mean a low BPSN AUC.",
                    self.plot_distributions(worst)))
        return out

    def to_html(self, path=None, *, max_subgroups: int = 40, n_distributions: int = 3,
                dpi: int = 110) -> str:
        """One self-contained HTML page: summary, figures (embedded PNG) and tables.

        Parameters
        ----------
        path : str or path-like, optional
            Also write the page there.
        max_subgroups : int, default 40
            Heatmaps show at most this many (worst) subgroups; tables show all.
        n_distributions : int, default 3
            Score distributions of this many worst subgroups.
        dpi : int, default 110
            Resolution of the embedded figures.

        Returns
        -------
        str
            The HTML text.
        """

        figures_html = []
        figures = self.figures(max_subgroups=max_subgroups, n_distributions=n_distributions)
        for key, caption, fig in figures:
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=dpi)
            data = base64.b64encode(buffer.getvalue()).decode("ascii")
            figures_html.append(
                f'<figure id="fig-{key}"><img alt="{html.escape(caption)}" '
                f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}'
                f'</figcaption></figure>')
        if not figures:
            figures_html.append('<p class="note" id="no-figures">Figures are left out: matplotlib '
                                'is not installed. Install it with <code>pip install '
                                '"fastbias[plot]"</code> and write the report again.</p>')
        body = [
            f"<h1>{html.escape(terminal_text(self.title))}</h1>",
            self._html_settings(),
            "<h2>Summary</h2>",
            self._html_summary(),
            "<h2>Figures</h2>",
            *figures_html,
            "<h2>Metrics per subgroup</h2>",
            self._html_tables(),
            self._html_intersections(max_subgroups),
            self._html_thresholds(),
            self._html_undefined(),
            self._html_glossary(),
        ]
        if self.timings:
            rows = "".join(f"<tr><td>{html.escape(k)}</td><td class=num>{v:.2f} s</td></tr>"
                           for k, v in self.timings.items())
            body.append(f"<h2>Timings</h2><table class=small><tbody>{rows}</tbody></table>")
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        body.append(f'<footer>fastbias {html.escape(__version__)} &middot; {stamp}</footer>')
        page = (
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">"
            f"<title>{html.escape(terminal_text(self.title))}</title><style>{_CSS}</style></head>"
            f"<body><main>{''.join(body)}</main></body></html>\n")
        if path is not None:
            write_atomically(path, page)
        return page

    def _label_rule(self) -> str:
        """The rule that made a row positive, as the evaluation applied it (HTML-escaped)."""
        s = self.result.settings
        positive = s.get("pos_label")
        if positive is not None:
            if isinstance(positive, np.generic):
                positive = positive.item()
            return f"positive if = {html.escape(repr(positive))}"
        if s.get("label_threshold") is None:
            return "positive if = 1 (labels exactly 0/1)"
        return f"positive if &ge; {html.escape(str(s.get('label_threshold')))}"

    def _html_settings(self) -> str:
        s = self.result.settings
        h = self.histograms
        items = []
        if self.source:  # (a path from anyone: its bidi overrides shown, found by review)
            items.append(("data", f"<bdi>{html.escape(terminal_text(self.source))}</bdi>"))
        # (rows without a label, left out under nan_policy="omit", are in neither class:
        # said, so that the three numbers add up; found by review)
        # (rows with a label left out for a missing weight are not unlabelled: found by review)
        unweighed = h.n_without_weight
        unlabelled = h.n_rows - h.n_negatives - h.n_positives - unweighed
        # (identity columns' membership rule only where there are identity columns)
        named = set(s.get("sensitive_members") or {}) | set(s.get("intersection_members") or {})
        rules = ([f"member if &ge; {s.get('subgroup_threshold')}"]
                 if any(g not in named for g in self.result.subgroups) else [])
        if s.get("sensitive_features"):
            rules.append("a sensitive feature's: one subgroup per value"
                         # (found by review: their combinations, subgroups of the final
                         # metric too, went unsaid)
                         + ("; with several, each combination of their values with at "
                            f"least {max(int(s.get('min_subgroup_size') or 1), 1):,} row(s) of "
                            "each class too" if len(s["sensitive_features"]) > 1 else ""))
        rules.append(f"unannotated rows: {html.escape(str(s.get('missing_subgroup')))}")
        items += [
            ("rows", f"{h.n_rows:,} ({h.n_negatives:,} negative, {h.n_positives:,} positive"
                     + (f", {unlabelled:,} without a label" if unlabelled else "")
                     + (f", {unweighed:,} without a weight" if unweighed else "") + ")"),
            ("label", f"{_html_name(self.result.label)} ({self._label_rule()})"),
            ("models", ", ".join(_html_name(m) for m in self.result.models)),
            ("subgroups", f"{self._subgroup_count()} ({'; '.join(rules)})"),
        ]
        omitted = {m: int(k) for m, k in (s.get("omitted_rows") or {}).items() if k}
        if omitted:  # nan_policy="omit": the models were evaluated on fewer rows
            items.append(("rows left out", "; ".join(
                f"{_html_name(m)}: {k:,} (a missing label, weight or score, "
                f"nan_policy='omit')"
                for m, k in omitted.items())))
        if s.get("ci"):
            interval = f"{s.get('ci')}, {percent_text(s.get('confidence', 0.95))}"
            if not interval_metrics(self.result.table):  # (every one NaN: found by review)
                interval += ", none could be computed (see the warnings)"
            if s.get("n_boot"):
                seed = s.get("random_state")
                # (a Generator or SeedSequence is kept by its type's name: no seed to rerun
                # with; found by review: "seed Generator")
                interval += (f", {int(s['n_boot']):,} replicates, "
                             + ("no seed (not repeatable)" if seed is None else
                                f"drawn from the numpy {html.escape(seed)} given (no seed to "
                                f"rerun with)" if isinstance(seed, str) else f"seed {seed}"))
            items.append(("intervals", interval))
        if s.get("thresholds") is not None:
            items.append(("thresholds", f"{', '.join(repr(float(t)) for t in s['thresholds'])} "
                                        f"(rates' intervals: "
                                        f"{s.get('threshold_interval') or 'none'}; "
                                        f"gaps' intervals: {s.get('gap_interval') or 'none'}"
                                        # (their level too, as the AUCs' intervals say theirs:
                                        # found by review, 80% ones read as 95%)
                                        + (f"; {percent_text(s.get('confidence', 0.95))}"
                                           if s.get("threshold_interval")
                                           or s.get("gap_interval") else "") + ")"))
        if s.get("significance"):
            items.append(("significance", f"{SIGNIFICANCE_NAMES[s['significance']]}-adjusted "
                                          f"tests at level "
                                          f"{1 - float(s.get('confidence', 0.95)):g}: "
                                          f"{self._tests_made()} "
                                          f"({significance_tests(self.result)})"))
        if s.get("weighted"):
            items.append(("weights", "sample weights used for the metrics; histograms count "
                                     "rows"))
        rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{v if k in ('data', 'label', 'subgroups', 'models', 'rows left out') else html.escape(str(v))}</td></tr>"
                       for k, v in items)
        return f'<table class="settings"><tbody>{rows}</tbody></table>'

    def _tests_made(self) -> str:
        """How many of the defined values were tested, and how many not (found by review:
        the report said "tests of every gap" where none had a p-value)."""
        table = self.result.table
        defined = int(table[METRIC_COLUMNS].notna().to_numpy().sum())
        tested = int(table[[f"{m}_pvalue" for m in METRIC_COLUMNS]].notna().to_numpy().sum())
        text = f"{tested:,} of the {defined:,} defined values tested"
        if tested < defined:
            text += (f"; {defined - tested:,} not tested (no p-value, never marked "
                     f"significant; the terminal table names them)")
        return text

    def _subgroup_count(self) -> str:
        """``"24"``, or ``"24 and 276 intersections (pairs, at least N rows of each class;
        the final metric is over the 24)"``."""
        s = self.result.settings
        n_inter = len(s.get("intersection_members") or {})
        n_base = len(self.result.subgroups) - n_inter
        if not n_inter:
            return str(n_base)
        kind = "pairs" if s.get("intersections") == 2 else "pairs and triples"
        return (f"{n_base} and {n_inter} intersections ({kind} with at least "
                f"{s.get('min_subgroup_size', 1)} rows of each class; the final metric is over "
                f"the {n_base})")

    def _html_summary(self) -> str:
        summary = self.summary()
        has_final = "final_metric" in summary.columns
        finals_omit = {}
        if has_final and summary["final_metric"].isna().any():
            finals_omit = self.final_metrics("omit").to_dict()
        # (the extremes are of every row, the intersections too, where the final metric is of
        # the identities alone: said where there are intersections; found by review)
        among = ('<br><span class="muted">intersections included</span>'
                 if self.result.settings.get("intersection_members") else "")
        head = ("<tr><th>model</th><th>overall AUC</th>"
                + ("<th>final metric</th>" if has_final else "")
                + f"<th>lowest AUC{among}</th><th>largest |AEG|{among}</th>"
                + "<th>undefined</th></tr>")
        rows = []
        for model, r in summary.iterrows():
            cells = [f"<td>{_html_name(model)}</td>",
                     f"<td class=num>{_fmt_metric(r['overall_auc'], '')}"
                     f"{_html_summary_interval(summary, model, 'overall_auc')}</td>"]
            if has_final:
                if _is_nan(r["final_metric"]):
                    omitted = finals_omit.get(model, np.nan)
                    extra = "" if _is_nan(omitted) else \
                        f'<span class="ci">{omitted:.4f} without the n/a AUCs</span>'
                    cells.append('<td class="num undefined" title="undefined: a per-subgroup AUC '
                                 f'is n/a">n/a{extra}</td>')
                else:
                    cells.append(f"<td class=num><b>{r['final_metric']:.4f}</b>"
                                 f"{_html_summary_interval(summary, model, 'final_metric')}"
                                 f"</td>")
            cells.append(_extreme_cell(r["lowest_auc"], AUC_COLOR_STOPS, "{:.4f}",
                                       r["lowest_auc_metric"], r["lowest_auc_subgroup"],
                                       r["lowest_auc_ties"]))
            cells.append(_extreme_cell(r["largest_abs_aeg"], AEG_COLOR_STOPS, "{:+.4f}",
                                       r["largest_aeg_metric"], r["largest_aeg_subgroup"],
                                       r["largest_aeg_ties"]))
            cells.append(f"<td class=num>{int(r['undefined_values'])}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        note = ""
        if has_final:
            note = ('<p class="note">Final metric: the Jigsaw Unintended Bias competition score, '
                    '0.25 &times; overall AUC + 0.75 &times; the mean of the power means (p = -5) '
                    'of Subgroup, BPSN and BNSP AUC over subgroups. Higher is better.</p>')
        return (f'<table class="summary"><thead>{head}</thead><tbody>{"".join(rows)}</tbody>'
                f"</table>{note}")

    def _html_tables(self) -> str:
        ci_metrics = interval_metrics(self.result.table)
        zero_width = 0
        out = []
        undefined_index = {}
        for k, rec in enumerate(self.undefined_cells().to_dict("records"), start=1):
            undefined_index[(rec["model"], rec["subgroup"], rec["metric"])] = (k, rec["reason"])
        for model in self.result.models:
            part = self.result.for_model(model).reindex(self.worst_subgroups(model=model))
            head = ("<tr><th>subgroup</th><th>size</th><th>subgroup<br>negatives</th>"
                    "<th>subgroup<br>positives</th><th>background<br>negatives</th>"
                    "<th>background<br>positives</th>"
                    + "".join(f"<th>{METRIC_LABELS[m].replace(' ', '<br>', 1)}</th>"
                              for m in METRIC_COLUMNS) + "</tr>")
            flags = significant_flags(part, METRIC_COLUMNS)
            rows = []
            for (name, row), row_flags in zip(part.iterrows(), flags):
                cells = [f"<td>{_html_name(name)}</td>"]
                for c in COUNT_COLUMNS:
                    empty = " empty" if not _is_nan(row[c]) and int(row[c]) == 0 else ""
                    cells.append(f'<td class="num{empty}">{_fmt_count(row[c])}</td>')
                for metric, flagged in zip(METRIC_COLUMNS, row_flags):
                    value = row[metric]
                    if _is_nan(value):
                        k, reason = undefined_index[(model, name, metric)]
                        tip = f"{METRIC_LABELS[metric]} undefined: {reason}"
                        cells.append(f'<td class="num undefined" title="{html.escape(tip)}">'
                                     f'n/a<sup><a href="#undef-{k}">{k}</a></sup></td>')
                        continue
                    stops = AEG_COLOR_STOPS if metric in AEG_METRICS else AUC_COLOR_STOPS
                    bg = color_for(value, stops)
                    interval = ""
                    if metric in ci_metrics:
                        low, high = row[f"{metric}_low"], row[f"{metric}_high"]
                        if not (_is_nan(low) or _is_nan(high)):
                            if low == high:
                                zero_width += 1
                                interval = (f'<span class="ci zero-width" title="'
                                            f'{html.escape(ZERO_WIDTH_NOTE)}">'
                                            f"{_fmt_interval(low, high, metric)}"
                                            f"{ZERO_WIDTH_MARK}</span>")
                            else:
                                interval = (f'<span class="ci">'
                                            f"{_fmt_interval(low, high, metric)}</span>")
                    mark, kind = "", "num metric"
                    if flagged:
                        kind += " significant"
                        tip = (f"significant: adjusted p = "
                               f"{row[f'{metric}_pvalue_adjusted']:.2g} (raw "
                               f"{row[f'{metric}_pvalue']:.2g})")
                        mark = f'<span class="sig" title="{html.escape(tip)}">*</span>'
                    cells.append(f'<td class="{kind}" style="background:{bg};color:'
                                 f'{text_color_on(bg)}">{_fmt_metric(value, metric)}{mark}'
                                 f"{interval}</td>")
                rows.append("<tr>" + "".join(cells) + "</tr>")
            auc = float(self.result.overall_auc[model])
            out.append(f'<h3>{_html_name(model)} <span class="muted">overall AUC '
                       f"{_fmt_metric(auc, '')}</span></h3>"
                       f'<div class="scroll"><table class="metrics" data-model="'
                       f'{html.escape(str(model))}"><thead>{head}</thead><tbody>{"".join(rows)}'
                       f"</tbody></table></div>")
        if zero_width:
            out.append(f'<p class="note" id="zero-width-note">{ZERO_WIDTH_MARK} '
                       f"{html.escape(ZERO_WIDTH_NOTE)}</p>")
        note = significance_note(self.result)
        if note is not None:
            out.append(f'<p class="note" id="significance-note">{html.escape(note)}. '
                       f"See docs/significance.md for what is assumed.</p>")
        return "".join(out)

    def _html_intersections(self, limit: int) -> str:
        """Each model's intersections alone, worst first (their lowest AUC), at most ``limit``."""
        members = self.result.settings.get("intersection_members") or {}
        if not members:
            return ""
        out = [f'<h2 id="intersections">Intersections, worst first</h2><p class="note">'
               f"{len(members)} intersections, ranked by each model's lowest Subgroup, BPSN or "
               f"BNSP AUC{'' if len(members) <= limit else f'; the {limit} worst shown'}."
               f"</p>"]
        for model in self.result.models:
            order = [g for g in self.worst_subgroups(model=model) if g in members][:limit]
            part = self.result.for_model(model).reindex(order)
            flags = significant_flags(part, METRIC_COLUMNS)
            head = ("<tr><th>intersection</th><th>size</th><th>lowest AUC</th>"
                    + "".join(f"<th>{METRIC_LABELS[m]}</th>" for m in METRIC_COLUMNS)
                    + "</tr>")
            rows = []
            for (name, row), row_flags in zip(part.iterrows(), flags):
                aucs = row[AUC_METRICS].astype(float)
                lowest = (f"{aucs.min():.4f} ({METRIC_LABELS[aucs.idxmin()]})"
                          if aucs.notna().any() else "n/a")
                cells = [f"<td>{_html_name(name)}</td>",
                         f"<td class=num>{_fmt_count(row['subgroup_size'])}</td>",
                         f"<td class=num>{html.escape(lowest)}</td>"]
                cells += [f"<td class=num>{_fmt_metric(row[m], m)}{'*' if f else ''}</td>"
                          for m, f in zip(METRIC_COLUMNS, row_flags)]
                rows.append("<tr>" + "".join(cells) + "</tr>")
            out.append(f"<h3>{_html_name(model)}</h3><div class=\"scroll\"><table "
                       f'class="intersections" data-model="{html.escape(str(model))}"><thead>'
                       f"{head}</thead><tbody>{''.join(rows)}</tbody></table></div>")
        return "".join(out)

    def _html_undefined(self) -> str:
        undefined = self.undefined_cells()
        if undefined.empty:
            return ('<p class="note">Every metric is defined: no subgroup has an empty or '
                    'one-class cell.</p>')
        items = "".join(
            f'<li id="undef-{k}">{_html_name(r["model"])} &middot; '
            f'{_html_name(r["subgroup"])} &middot; {html.escape(METRIC_LABELS[r["metric"]])}'
            f': {html.escape(r["reason"])}</li>'
            for k, r in enumerate(undefined.to_dict("records"), start=1))
        return ('<h3 id="undefined">Undefined values (n/a)</h3><p class="note">Each metric compares '
                "two groups of rows (a cell: e.g. BPSN AUC compares the subgroup's negatives with "
                "the background's positives). When one of them is empty (or, weighted, of zero "
                "total weight) the comparison has no pairs, the metric is undefined, and "
                "fastbias reports NaN (shown as n/a) rather "
                f"than a made-up number.</p><ol class=\"undefined-list\">{items}</ol>")

    @staticmethod
    def _html_glossary() -> str:
        return (
            "<h2>What the metrics mean</h2><dl class=glossary>"
            "<dt>Subgroup AUC</dt><dd>AUC within the subgroup: its negatives against its "
            "positives. Low: the model separates classes poorly for texts about this "
            "subgroup.</dd>"
            "<dt>BPSN AUC</dt><dd>Background positives against subgroup negatives. Low: "
            "non-toxic subgroup texts score as high as toxic background texts (false positives "
            "for the subgroup).</dd>"
            "<dt>BNSP AUC</dt><dd>Background negatives against subgroup positives. Low: toxic "
            "subgroup texts score as low as non-toxic background texts (false negatives).</dd>"
            "<dt>Negative AEG</dt><dd>1/2 &minus; P(background negative scores above subgroup "
            "negative): positive when the subgroup's negatives are scored higher than the "
            "background's.</dd>"
            "<dt>Positive AEG</dt><dd>The same for positives.</dd></dl>"
            '<p class="note">Definitions of Borkan et al. (2019), "Nuanced Metrics for '
            'Measuring Unintended Bias with Real Data for Text Classification"; ties count '
            "1/2. The AEG sign follows the paper's Definitions 3.3/3.4 and Table 2 (its integral "
            "form has the opposite sign).</p>")

    def save(self, path, *, fmt: str | None = None, csv_raw: bool = False) -> str:
        """Write the report; the format follows the extension (.html, .csv, .json) unless ``fmt``
        (``"thresholds-csv"``: the threshold metrics, :meth:`thresholds_to_csv`).

        ``csv_raw``: see :meth:`to_csv` (``raw``).

        Returns
        -------
        str
            The format written.
        """
        if fmt is None:
            ext = os.path.splitext(str(path))[1].lower()
            fmt = OUTPUT_FORMATS.get(ext)
            if fmt is None:
                raise ValueError(f"output {str(path)!r}: unknown extension {ext!r}; use one of "
                                 f"{sorted(OUTPUT_FORMATS)}")
        if fmt == "html":
            self.to_html(path)
        elif fmt == "csv":
            self.to_csv(path, raw=csv_raw)
        elif fmt == "json":
            self.to_json(path)
        elif fmt == "thresholds-csv":
            self.thresholds_to_csv(path, raw=csv_raw)
        else:
            raise ValueError(f"fmt must be 'html', 'csv', 'json' or 'thresholds-csv', got "
                             f"{fmt!r}")
        return fmt


def _extreme_cell(value, stops, fmt, metric, subgroup, ties: int = 0) -> str:
    """A summary cell: the coloured value, its metric and subgroup (escaped), and how many
    other values tie with it (the one named is not the only one), or n/a."""
    if _is_nan(value):
        return "<td>n/a</td>"
    # (an AEG's ties are of its size, either sign: found by review, -0.5 was called equal to 0.5)
    alike = "of the same size" if metric in AEG_METRICS else "equal to it"
    tied = f" (and {int(ties)} more value(s) {alike})" if ties else ""
    return (f"<td>{_colored(value, stops, fmt)} {html.escape(METRIC_LABELS[metric])}, "
            f"{_html_name(subgroup)}{tied}</td>")


def _html_name(name) -> str:
    """A name from the data as HTML text: escaped, its control characters and bidi overrides
    shown as the terminal shows them (``\\u202e``), and isolated (``<bdi>``) so that no
    name, right-to-left script included, reorders the text around it. Its edge spaces are
    escaped as in the text tables (:func:`~fastbias.reports.plain.name_cell`) and a run of
    spaces inside keeps its width (a browser collapses it: found by review, "x  y" and
    "x y" read alike)."""
    text = html.escape(name_cell(str(name)))
    return "<bdi>" + re.sub(r"  +", lambda m: " " + "&nbsp;" * (len(m.group()) - 1), text) + \
        "</bdi>"


def _colored(value, stops, fmt) -> str:
    bg = color_for(value, stops)
    return (f'<span class="chip" style="background:{bg};color:{text_color_on(bg)}">'
            f"{number_text(value, fmt)}</span>")


_CSS = """
:root { --fg:#1f2328; --muted:#59636e; --line:#d1d9e0; --head:#f6f8fa; }
* { box-sizing: border-box; }
body { margin:0; color:var(--fg); background:#fff;
  font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, "DejaVu Sans", sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 0 0 12px; }
h2 { font-size: 20px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 8px; }
.muted { color: var(--muted); font-weight: normal; font-size: 14px; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 4px 9px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
thead th { background: var(--head); position: sticky; top: 0; font-weight: 600; font-size: 12.5px; }
td.num { text-align: right; white-space: nowrap; }
table.settings th { background: none; font-weight: 600; color: var(--muted); padding-right: 18px; }
table.metrics tbody tr:hover td { outline: 1px solid #8c959f; }
td.metric { min-width: 76px; }
td.significant { font-weight: 700; box-shadow: inset 0 0 0 2px #111; }
span.sig { margin-left: 1px; cursor: help; }
td.empty { color: #b35900; font-weight: 600; }
td.undefined { background: repeating-linear-gradient(45deg, #eeeeee, #eeeeee 4px, #dcdcdc 4px, #dcdcdc 8px);
  color: #444; font-style: italic; cursor: help; }
td.undefined sup a { color: #444; text-decoration: none; margin-left: 2px; }
span.ci { display: block; font-size: 11px; opacity: 0.85; }
span.chip { padding: 1px 6px; border-radius: 4px; font-variant-numeric: tabular-nums; }
.scroll { overflow-x: auto; max-height: 80vh; overflow-y: auto; border: 1px solid var(--line); border-radius: 6px; }
.scroll table { width: 100%; font-size: 13px; }
.scroll table th, .scroll table td { padding: 3px 7px; }
.scroll table td, .scroll table th { border-bottom: 1px solid #eaeef2; }
figure { margin: 18px 0 26px; }
figure img { max-width: 100%; height: auto; display: block; border: 1px solid #eaeef2; border-radius: 6px; }
figcaption { color: var(--muted); font-size: 13px; margin-top: 6px; max-width: 900px; }
p.note { color: var(--muted); font-size: 13px; max-width: 900px; }
ol.undefined-list { font-size: 13px; color: var(--muted); }
dl.glossary dt { font-weight: 600; margin-top: 6px; }
dl.glossary dd { margin: 0 0 4px 18px; max-width: 860px; }
table.small td { padding: 2px 10px; }
footer { margin-top: 36px; color: var(--muted); font-size: 12px; }
@media print {
  @page { size: A4 landscape; margin: 10mm; }
  body { font-size: 11px; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  h3 { break-after: avoid; }
  .scroll { max-height: none; overflow: visible; border: none; }
  .scroll table { font-size: 9px; table-layout: auto; }
  .scroll table th, .scroll table td { padding: 1px 3px; }
  td.metric { min-width: 0; }
  thead { display: table-header-group; }
  thead th { position: static; font-size: 9px; }
  tr, figure { break-inside: avoid; }
  span.ci { font-size: 8px; }
  figure img { max-width: 100%; max-height: 180mm; width: auto; }
}
"""


__all__ = ["BiasReport", "write_atomically"]
