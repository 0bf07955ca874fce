"""Figures of the bias metrics, in the layout of Borkan et al. (2019).

* :func:`plot_auc_heatmap`: Subgroup, BPSN and BNSP AUC per subgroup and model
  on a 0.5-1 scale, worst subgroups first (the paper's Tables 3 and 6).
* :func:`plot_aeg_heatmap`: the two Average Equality Gaps on a diverging
  -0.5..0.5 scale.
* :func:`plot_score_distributions`: score densities of a subgroup against the
  background, negatives and positives separately (the paper's Table 7).
* :func:`plot_intervals`: confidence intervals per subgroup and model, when
  the evaluation computed them.
* :func:`plot_subgroup_scores`: the same density panels straight from arrays
  (the paper's Table 2 scenarios).

matplotlib is needed only when a function is called (``pip install
"fastbias[plot]"``). Every function returns a :class:`matplotlib.figure.Figure`
built without pyplot, so nothing is shown or kept open behind your back; in
a notebook, run ``%matplotlib inline`` once and the figure displays as the
cell's value. The colour scales are plain data here so that the HTML report
colours its tables the same way without matplotlib.
"""
from __future__ import annotations

import functools
import textwrap

import numpy as np

from ..metrics.definitions import AUC_METRICS
from .plain import name_cell, terminal_text

AEG_METRICS = ["negative_aeg", "positive_aeg"]

#: Colour stops (value, hex) of the AUC scale, 0.5 (dark red: chance) to 1 (blue). The stops are
#: denser above 0.8, where real models are, so that a drop from 0.98 to 0.92 is visible.
AUC_COLOR_STOPS = [(0.5, "#a50026"), (0.7, "#f46d43"), (0.8, "#fdae61"), (0.9, "#fee090"),
                   (0.95, "#e0f3f8"), (1.0, "#74add1")]
#: Colour stops of the AEG scale: blue when the subgroup is scored lower than the
#: background, white at 0, red when it is scored higher.
AEG_COLOR_STOPS = [(-0.5, "#2166ac"), (-0.25, "#92c5de"), (0.0, "#f7f7f7"),
                   (0.25, "#f4a582"), (0.5, "#b2182b")]
#: A figure of several models marks a subgroup that a model does not have (under
#: ``intersections=`` or several sensitive features each model keeps those large enough on
#: its own rows) so, not as an undefined value.
ABSENT_TEXT = "absent"
ABSENT_NOTE = ("absent: that model has no such subgroup (each keeps the subgroups large "
               "enough on the rows it was evaluated on).")
#: Hatched grey marks an undefined (NaN) cell in every figure.
UNDEFINED_COLOR = "#d9d9d9"

NEGATIVE_COLOR = "#1b9e77"  # non-toxic / negatives (green, as in the paper)
POSITIVE_COLOR = "#7570b3"  # toxic / positives (purple)

METRIC_LABELS = {
    "subgroup_auc": "Subgroup AUC",
    "bpsn_auc": "BPSN AUC",
    "bnsp_auc": "BNSP AUC",
    "negative_aeg": "Negative AEG",
    "positive_aeg": "Positive AEG",
}


def _hex_to_rgb(color: str) -> tuple:
    color = color.lstrip("#")
    return tuple(int(color[i:i + 2], 16) / 255.0 for i in (0, 2, 4))


def color_for(value: float, stops) -> str | None:
    """Hex colour of ``value`` on a piecewise-linear scale; None for NaN.

    Values outside the scale take the colour of its nearest end.

    Examples
    --------
    >>> from fastbias.plotting import color_for, AUC_COLOR_STOPS
    >>> color_for(1.0, AUC_COLOR_STOPS), color_for(0.2, AUC_COLOR_STOPS)
    ('#74add1', '#a50026')
    >>> color_for(float("nan"), AUC_COLOR_STOPS) is None
    True
    """
    if value is None or not np.isfinite(value):
        return None
    positions = [p for p, _ in stops]
    value = min(max(float(value), positions[0]), positions[-1])
    k = int(np.searchsorted(positions, value, side="right")) - 1
    k = min(max(k, 0), len(stops) - 2)
    (p0, c0), (p1, c1) = stops[k], stops[k + 1]
    t = 0.0 if p1 == p0 else (value - p0) / (p1 - p0)
    rgb = [a + t * (b - a) for a, b in zip(_hex_to_rgb(c0), _hex_to_rgb(c1))]
    return "#" + "".join(f"{int(round(255 * x)):02x}" for x in rgb)


def text_color_on(background: str) -> str:
    """Black or white, whichever reads better on ``background`` (hex)."""
    r, g, b = _hex_to_rgb(background)
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "#ffffff"


def _plain_text(function):
    """Draw every text of the figure as it is: names from the data such as ``$x$`` or
    ``$\\foo$`` are never parsed as mathtext (which would restyle them, or fail after the
    whole evaluation), and their control characters and bidi overrides are drawn as visible
    escapes (``\\x1b``, ``\\u202e``), as the terminal shows them: no missing glyph (whose
    warning carried the raw character to stderr), no text reordered. The figures draw names
    with :func:`~fastbias.reports.plain.name_cell` (a newline or an edge space shown as an
    escape, as in the tables: found by review, drawn as a line break or not at all); this
    pass keeps the line breaks of the figures' own texts."""
    @functools.wraps(function)
    def plain(*args, **kwargs):
        try:
            import matplotlib
            from matplotlib.text import Text
            from matplotlib.ticker import FixedFormatter, FuncFormatter
        except ImportError:
            return function(*args, **kwargs)  # which says how to install matplotlib
        with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
            figure = function(*args, **kwargs)
        for text in figure.findobj(Text):
            shown = text.get_text()
            safe = terminal_text(shown, keep_newlines=True)
            if safe != shown:
                text.set_text(safe)
        for ax in figure.axes:  # tick labels given as names are drawn again from these
            for axis in (ax.xaxis, ax.yaxis):
                formatter = axis.get_major_formatter()
                if isinstance(formatter, (FixedFormatter, FuncFormatter)):
                    axis.set_major_formatter(FuncFormatter(
                        lambda x, pos, labels=formatter: terminal_text(labels(x, pos),
                                                                       keep_newlines=True)))
        return figure
    return plain


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
        from matplotlib import colors
        from matplotlib.figure import Figure
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError("fastbias figures need matplotlib: pip install 'fastbias[plot]'") from exc
    return Figure, colors


def _colormap(stops, name: str):
    _, colors = _matplotlib()
    lo, hi = stops[0][0], stops[-1][0]
    cmap = colors.LinearSegmentedColormap.from_list(
        name, [((p - lo) / (hi - lo), c) for p, c in stops])
    cmap = cmap.with_extremes(bad=UNDEFINED_COLOR)
    return cmap, colors.Normalize(vmin=lo, vmax=hi)


# --------------------------------------------------------------------------- ordering

def worst_first(result, models=None) -> list:
    """Subgroups ordered from the lowest AUC to the highest.

    A subgroup's rank is its lowest Subgroup, BPSN or BNSP AUC over the given
    models (all by default); subgroups with every AUC undefined come last. Only the
    subgroups that one of these models has are listed (under ``intersections=`` or
    several sensitive features, each model keeps those large enough on its own rows).

    Parameters
    ----------
    result : fastbias.EvaluationResult
    models : list of str, optional

    Returns
    -------
    list of str

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.plotting import worst_first
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=3, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female", "transgender"])
    >>> sorted(worst_first(res)) == ["female", "male", "transgender"]
    True
    """
    table = result.table
    if models is not None:
        table = table[table["model"].isin(list(models))]
    lowest = table.set_index("subgroup")[AUC_METRICS].min(axis=1, skipna=True)
    lowest = lowest.groupby(level=0, sort=False).min()
    # the subgroups these models have (each model keeps the intersections and combinations
    # of values large enough on its own rows: found by review, a model was shown another's)
    names = result.subgroups_of(models)
    lowest = lowest.reindex(names)
    order = np.argsort(lowest.fillna(np.inf).to_numpy(), kind="stable")
    return [names[i] for i in order]


def _select(result, subgroups, models, max_subgroups):
    models = list(result.models if models is None else models)
    unknown = [m for m in models if m not in result.models]
    if unknown:
        raise KeyError(f"models {unknown} were not evaluated; models are {result.models}")
    if subgroups is None:
        subgroups = worst_first(result, models)
        if max_subgroups is not None:
            subgroups = subgroups[:max_subgroups]
    else:
        subgroups = list(subgroups)
        unknown = [g for g in subgroups if g not in result.subgroups]
        if unknown:
            raise KeyError(f"subgroups {unknown} were not evaluated; subgroups are "
                           f"{result.subgroups}")
    if not subgroups:
        raise ValueError("no subgroups to plot")
    return subgroups, models


def _order_note(given, shown: list, result, order: str = "worst first",
                models=None) -> str:
    """What a figure's title says of its rows: the order this module chose (not where the
    caller gave the rows: found by review, "(worst first)" over rows in the caller's
    order), and how many of the table's it shows where it cut them (of the subgroups
    ``models`` have, all by default)."""
    if given is not None:
        return ""
    total = len(worst_first(result, models))
    cut = f", {len(shown)} of {total}" if len(shown) < total else ""
    return f" ({order}{cut})"


def _heatmap(result, metrics, stops, cmap_name, title, colorbar_label, subgroups, models,
             max_subgroups, value_format):
    Figure, _ = _matplotlib()
    given = subgroups
    subgroups, models = _select(result, subgroups, models, max_subgroups)
    title += _order_note(given, subgroups, result, models=models)
    cmap, norm = _colormap(stops, cmap_name)
    n_rows, n_cols = len(subgroups), len(metrics)
    width_per_model = 0.72 * n_cols + 0.3
    label_width = 0.09 * max(len(name_cell(g)) for g in subgroups) + 0.4
    fig = Figure(figsize=(label_width + width_per_model * len(models) + 1.1,
                          1.5 + 0.3 * n_rows), layout="constrained")
    axes = fig.subplots(1, len(models), squeeze=False, sharey=True)[0]
    image = None
    marked = significance_note(result)
    any_absent = False
    for k, (ax, model) in enumerate(zip(axes, models)):
        part = result.table[result.table["model"] == model].set_index("subgroup")
        values = part.reindex(subgroups)[metrics].to_numpy(dtype=np.float64)
        flags = significant_flags(part.reindex(subgroups), metrics)
        absent = ~np.isin(np.asarray(subgroups, dtype=object),
                          np.asarray(result.subgroups_of([model]), dtype=object))
        any_absent |= bool(absent.any())
        image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto",
                          interpolation="nearest")
        for (i, j), v in np.ndenumerate(values):
            if absent[i]:  # (not undefined: the model has no such subgroup; found by review)
                ax.add_patch(_absent_patch(j, i))
                ax.text(j, i, ABSENT_TEXT, ha="center", va="center", fontsize=6.5,
                        color="#777777", fontstyle="italic")
            elif np.isfinite(v):
                flagged = bool(flags[i, j])
                ax.text(j, i, number_text(v, value_format) + ("*" if flagged else ""), ha="center",
                        va="center", fontsize=8, color=text_color_on(color_for(v, stops)),
                        fontweight="bold" if flagged else "normal")
                if flagged:
                    ax.add_patch(_outline_patch(j, i))
            else:
                ax.add_patch(_hatch_patch(j, i))
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="#444444")
        ax.set_xticks(range(n_cols), [METRIC_LABELS[m].replace(" ", "\n") for m in metrics],
                      fontsize=8)
        ax.xaxis.tick_top()
        ax.set_title(name_cell(model), fontsize=10, pad=6)
        if k == 0:
            ax.set_yticks(range(n_rows), [name_cell(g) for g in subgroups], fontsize=8)
        else:
            ax.tick_params(labelleft=False)
        ax.tick_params(length=0)
        for spine in ax.spines.values():
            spine.set_visible(False)
    # the colorbar spans the heatmap's height (its aspect grows with the rows, so a tall one
    # stays a bar, not a slab)
    bar = fig.colorbar(image, ax=list(axes), shrink=1.0, aspect=max(20, 2 * n_rows), pad=0.02)
    bar.set_label(colorbar_label, fontsize=8)
    bar.ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=11)
    notes = [note for note in (marked, ABSENT_NOTE if any_absent else None) if note]
    if notes:
        fig.supxlabel(textwrap.fill(" ".join(notes), 120), fontsize=7.5, color="#444444")
    return fig


def number_text(value, fmt: str) -> str:
    """``fmt.format(value)``, except that a value which rounds to zero never shows a minus
    sign (``-0.000``): it is written as zero is."""
    text = fmt.format(value)
    if text.lstrip("+-").strip("0.") == "":
        return fmt.format(0.0)
    return text


def significant_flags(table, metrics) -> np.ndarray:
    """(rows, metrics) bool: which values a significance test flagged (all False without one)."""
    columns = [f"{m}_significant" for m in metrics]
    if not all(c in table.columns for c in columns):
        return np.zeros((len(table), len(metrics)), dtype=bool)
    return table[columns].fillna(False).to_numpy(dtype=bool)


SIGNIFICANCE_NAMES = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def significance_note(result) -> str | None:
    """What a ``*`` means in tables and figures of ``result``, or None without tests."""
    method = (getattr(result, "settings", None) or {}).get("significance")
    if method is None:
        return None
    level = 1.0 - float(result.settings.get("confidence", 0.95))
    null = ("AUC vs the AUC of the rows annotated for its subgroup"
            if result.settings.get("missing_subgroup") == "exclude" else "AUC vs overall AUC")
    return (f"* significant gap ({null}, AEG vs 0; {significance_tests(result)}): "
            f"adjusted p <= {level:g} ({SIGNIFICANCE_NAMES[method]} over each model's "
            f"subgroups x metrics); a value not tested (no p-value) is never marked")


def percent_text(fraction: float) -> str:
    """``0.95`` as ``95%``, ``0.999`` as ``99.9%``: never rounded to a whole percent (a
    99.9% interval shown as "100%" would claim certainty)."""
    return f"{float(fraction) * 100:.10g}%"


def significance_tests(result) -> str:
    """Which tests gave ``result``'s p-values: DeLong's, permutation tests in small cells, and
    out of core (where the smallest cells' tests cannot draw rows) what those cells had."""
    from ..intervals.significance import PERMUTATION_BELOW, PERMUTATION_DRAWS_BELOW

    counts = {name: sum(int(attrs.get(name, 0) or 0)
                        for attrs in (getattr(result, "model_attrs", None) or {}).values())
              for name in ("permutation_bounds", "permutation_untested")}
    # (weighted, cells of 30-299 rows keep DeLong's test: found by review, said of every cell
    # under 300 rows)
    text = (f"DeLong test, permutation test in cells under {PERMUTATION_DRAWS_BELOW} rows "
            f"(weighted rows: DeLong's in larger cells)"
            if (getattr(result, "settings", None) or {}).get("weighted") else
            f"DeLong test, permutation test in cells under {PERMUTATION_BELOW} rows")
    if counts["permutation_bounds"]:
        text += (f"; out of core {counts['permutation_bounds']} p-value(s) of cells under "
                 f"{PERMUTATION_DRAWS_BELOW} rows are Hoeffding's bound on the permutation "
                 f"p-value (never below it)")
    if counts["permutation_untested"]:
        text += (f"; {counts['permutation_untested']} value(s) of weighted cells under "
                 f"{PERMUTATION_DRAWS_BELOW} rows not tested (out of core, or beside more "
                 f"than 1,000 rows to redraw, no permutation is drawn)")
    return text


#: one color per model in the figures that draw models side by side
MODEL_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def series_colors(n: int) -> list:
    """``n`` colors, one per model (or curve) drawn side by side, no two alike: the six of
    :data:`MODEL_COLORS`, beyond them matplotlib's ``tab20``, beyond 20 evenly spaced hues
    (found by review: a seventh model had the first one's color, in the figures and their
    legends)."""
    if n <= len(MODEL_COLORS):
        return list(MODEL_COLORS[:n])
    _, colors = _matplotlib()
    from matplotlib import colormaps

    if n <= 20:
        return [colors.to_hex(c) for c in colormaps["tab20"].colors[:n]]
    hues = colormaps["hsv"]
    return [colors.to_hex(hues(i / n)) for i in range(n)]


def _mark_undefined(ax, rows, color, text: str = "n/a") -> None:
    """An "n/a" (or ``text``) at the left edge of each row (data coordinates ``rows``) whose
    value is undefined, in the model's color: a row drawn empty would read as a value of 0
    (found by review)."""
    from matplotlib.transforms import blended_transform_factory

    where = blended_transform_factory(ax.transAxes, ax.transData)
    for y in np.asarray(rows, dtype=np.float64).tolist():
        ax.text(0.01, y, text, transform=where, fontsize=6, color=color, ha="left",
                va="center")


def _rows_by_subgroup(Figure, subgroups, models, n_panels: int, panel_width: float):
    """A figure of ``n_panels`` side by side with one row per subgroup (room for the longest
    name): ``(fig, axes, row positions, each model's offset within a row)``."""
    n = len(subgroups)
    label_width = 0.08 * max(len(name_cell(g)) for g in subgroups) + 0.3
    fig = Figure(figsize=(panel_width * n_panels + label_width,
                          1.3 + 0.22 * n * max(1, len(models)) ** 0.5), layout="constrained")
    axes = fig.subplots(1, n_panels, squeeze=False, sharey=True)[0]
    offsets = np.linspace(-0.25, 0.25, len(models)) if len(models) > 1 else np.zeros(1)
    return fig, axes, np.arange(n), offsets


def _outline_patch(x, y):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.46, y - 0.44), 0.92, 0.88, facecolor="none", edgecolor="#111111",
                     linewidth=1.4)


def _absent_patch(x, y):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor="white", edgecolor="#dddddd",
                     linewidth=0.5)


def _hatch_patch(x, y):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=UNDEFINED_COLOR, edgecolor="#9e9e9e",
                     hatch="///", linewidth=0)


@_plain_text
def plot_auc_heatmap(result, *, subgroups=None, models=None, max_subgroups=None):
    """Heatmap of Subgroup, BPSN and BNSP AUC per subgroup, one panel per model.

    The scale runs from 0.5 (red, chance) to 1 (blue); rows are ordered worst
    first (see :func:`worst_first`), as in Borkan et al. (2019), Tables 3
    and 6. Undefined cells are hatched grey and marked "n/a".

    Parameters
    ----------
    result : fastbias.EvaluationResult
    subgroups : list of str, optional
        Rows to show, in this order (default: all, worst first).
    models : list of str, optional
        Panels to show (default: every model evaluated).
    max_subgroups : int, optional
        Show only this many of the worst subgroups.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.plotting import plot_auc_heatmap
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=4, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores=["model_fair", "model_biased"],
    ...                         subgroups=["male", "female", "transgender", "other_gender"])
    >>> fig = plot_auc_heatmap(res)
    >>> len(fig.axes)  # two model panels and the colour bar
    3
    """
    return _heatmap(result, AUC_METRICS, AUC_COLOR_STOPS, "fastbias_auc",
                    "AUCs per subgroup", "AUC (0.5 = chance)", subgroups, models,
                    max_subgroups, "{:.3f}")


@_plain_text
def plot_aeg_heatmap(result, *, subgroups=None, models=None, max_subgroups=None):
    """Heatmap of the Negative and Positive AEG per subgroup, one panel per model.

    Diverging scale from -0.5 (blue: the subgroup's scores lie below the
    background's of the same class) through 0 (white) to 0.5 (red: above).

    Parameters
    ----------
    result : fastbias.EvaluationResult
    subgroups, models, max_subgroups
        As in :func:`plot_auc_heatmap`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.plotting import plot_aeg_heatmap
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female"])
    >>> plot_aeg_heatmap(res).axes[0].get_title()
    'model_biased'
    """
    return _heatmap(result, AEG_METRICS, AEG_COLOR_STOPS, "fastbias_aeg",
                    "Average Equality Gaps per subgroup", "AEG (> 0: subgroup scored higher)",
                    subgroups, models, max_subgroups, "{:+.3f}")


def _density(counts, edges):
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return None
    return counts / (total * np.diff(edges))


def _density_panel(ax, edges, subgroup_counts, background_counts, color, title,
                   subgroup_label="subgroup", background_label="background"):
    bg = _density(background_counts, edges)
    sub = _density(subgroup_counts, edges)
    if bg is not None:
        ax.stairs(bg, edges, fill=True, color="#bdbdbd", alpha=0.8,
                  label=f"{background_label} (n={int(np.sum(background_counts)):,})")
    if sub is not None:
        ax.stairs(sub, edges, color=color, linewidth=1.8,
                  label=f"{subgroup_label} (n={int(np.sum(subgroup_counts)):,})")
    else:
        ax.text(0.5, 0.5, f"no {subgroup_label} rows", transform=ax.transAxes, ha="center",
                va="center", fontsize=8, color="#666666")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=8.5)
    ax.tick_params(labelsize=7)
    ax.set_ylabel("density", fontsize=7)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    mass_right = bg is not None and np.sum(bg * np.diff(edges) * (edges[:-1] + edges[1:]) / 2) > \
        (edges[0] + edges[-1]) / 2
    ax.legend(fontsize=6.5, frameon=False, loc="upper left" if mass_right else "upper right")


def _axis_edges(edges: np.ndarray) -> tuple:
    """``(edges, k)``: the bin edges as an axis draws them, divided by ``2**k`` (exact) where
    the scores reach beyond 2**64 (found by review: an axis from -1e308 to 1e308 could not
    be drawn, its ticks' range overflowing), else as they are with k = 0."""
    largest = float(np.max(np.abs(edges)))
    if largest <= 2.0 ** 64:
        return edges, 0
    unit = int(np.frexp(largest)[1])
    return np.ldexp(edges, -unit), unit


@_plain_text
def plot_score_distributions(histograms, *, subgroups, models=None):
    """Score densities of subgroups against their background (Borkan et al. 2019, Table 7).

    One row per subgroup; for every model two panels: the negatives
    (subgroup vs background, what BPSN AUC and the Negative AEG compare) and
    the positives (BNSP AUC, Positive AEG). The background is the grey area,
    the subgroup the line; each is normalised to unit area.

    Parameters
    ----------
    histograms : fastbias.report.ScoreHistograms
        Binned scores (see :func:`fastbias.report.score_histograms`).
    subgroups : list of str
        Subgroups to show, one row each.
    models : list of str, optional
        Default: every model in ``histograms``.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.report import score_histograms
    >>> from fastbias.plotting import plot_score_distributions
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female"])
    >>> fig = plot_score_distributions(score_histograms(df, res), subgroups=["male"])
    >>> len(fig.axes)
    2
    """
    Figure, _ = _matplotlib()
    models = list(histograms.models if models is None else models)
    subgroups = list(subgroups)
    if not subgroups:
        raise ValueError("subgroups is empty: name at least one subgroup to plot")
    n_cols = 2 * len(models)
    fig = Figure(figsize=(2.6 * n_cols + 0.4, 1.9 * len(subgroups) + 0.6), layout="constrained")
    axes = fig.subplots(len(subgroups), n_cols, squeeze=False, sharex=True)
    edges, unit = _axis_edges(histograms.edges)
    for i, subgroup in enumerate(subgroups):
        for k, model in enumerate(models):
            if (model, subgroup) in getattr(histograms, "absent", ()):
                for ax in axes[i, 2 * k:2 * k + 2]:  # (not a subgroup of this model's)
                    ax.text(0.5, 0.5, "not a subgroup of this model\n(too few rows of a "
                            "class in its rows)", transform=ax.transAxes, ha="center",
                            va="center", fontsize=8, color="#666666")
                    ax.set_title(f"{name_cell(model)} | {name_cell(subgroup)}", fontsize=8.5)
                    ax.set_yticks([])
                continue
            cells = histograms.cells(model, subgroup)
            _density_panel(axes[i, 2 * k], edges, cells["subgroup_negatives"],
                           cells["background_negatives"], NEGATIVE_COLOR,
                           f"{name_cell(model)} | {name_cell(subgroup)}: negatives")
            _density_panel(axes[i, 2 * k + 1], edges, cells["subgroup_positives"],
                           cells["background_positives"], POSITIVE_COLOR,
                           f"{name_cell(model)} | {name_cell(subgroup)}: positives")
    for ax in axes[-1]:
        ax.set_xlabel("score" if unit == 0 else f"score / 2**{unit}", fontsize=8)
    fig.suptitle("Score distributions: subgroup (line) against background (grey)", fontsize=11)
    return fig


@_plain_text
def plot_subgroup_scores(y_true, y_score, member, *, bins: int = 40, score_range=(0.0, 1.0),
                         title: str | None = None, ax=None, label_threshold=None,
                         pos_label=None, subgroup_threshold=None):
    """Score densities of one subgroup and its background from arrays, in one panel.

    Four curves: background negatives and positives (filled), subgroup
    negatives and positives (lines) - the pictures of Borkan et al. (2019),
    Table 2.

    Parameters
    ----------
    y_true : array-like of bool, shape (n,)
    y_score : array-like of float, shape (n,)
    member : array-like of bool, shape (n,)
        Subgroup membership.
    bins : int, default 40
    score_range : (float, float), default (0, 1)
        Two finite numbers, the low end first; scores outside are drawn in the end bins.
    title : str, optional
    ax : matplotlib Axes, optional
        Draw into this axes; a new figure otherwise.
    label_threshold, pos_label : optional
        Fractional labels are positive at or above ``label_threshold``; two-valued labels
        (text, categories) are positive where they equal ``pos_label`` (as in
        :func:`fastbias.bias_metrics`).
    subgroup_threshold : float, optional
        A numeric ``member`` is a member at or above it (missing: never a member).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError, TypeError
        Inputs ``bias_metrics`` would refuse (labels that are not two classes, scores that
        are not finite, a membership that is not boolean, pandas inputs whose indexes
        differ), named with the value and its position.

    Examples
    --------
    >>> import numpy as np
    >>> from fastbias.plotting import plot_subgroup_scores
    >>> y = np.array([0, 0, 1, 1, 0, 1], bool)
    >>> s = np.array([0.1, 0.4, 0.35, 0.8, 0.7, 0.9])
    >>> g = np.array([1, 1, 1, 0, 0, 0], bool)
    >>> fig = plot_subgroup_scores(y, s, g, title="toy")
    >>> fig.axes[0].get_title()
    'toy'
    """
    from ..validate.columns import check_aligned, check_length
    from ..validate.settings import as_score_range, check_bins
    from ..validate.subgroups import identity_values
    from ..validate.values import as_labels, as_scores

    # read and checked as bias_metrics reads them (found by review: text labels, a label 2 or
    # NaN were drawn as positives, NaN memberships as members, Series paired by position)
    check_aligned([("y_true", y_true), ("y_score", y_score), ("member", member)])
    y = as_labels(y_true, threshold=label_threshold, pos_label=pos_label)
    s = as_scores(y_score, n=y.shape[0]).astype(np.float64)
    read = identity_values(member, "member", subgroup_threshold, label="member")
    g = read.member_mask().astype(bool)
    check_length(g, y.shape[0], "member")
    edges = np.linspace(*as_score_range(score_range), check_bins(bins) + 1)
    if ax is None:
        Figure, _ = _matplotlib()
        fig = Figure(figsize=(3.4, 2.4), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    curves = [(~g & ~y, NEGATIVE_COLOR, "background negatives", True),
              (~g & y, POSITIVE_COLOR, "background positives", True),
              (g & ~y, NEGATIVE_COLOR, "subgroup negatives", False),
              (g & y, POSITIVE_COLOR, "subgroup positives", False)]
    for mask, color, label, filled in curves:
        counts, _ = np.histogram(np.clip(s[mask], edges[0], edges[-1]), bins=edges)
        density = _density(counts, edges)
        if density is None:
            continue
        if filled:
            ax.stairs(density, edges, fill=True, color=color, alpha=0.25, label=label)
        else:
            ax.stairs(density, edges, color=color, linewidth=1.8, label=label)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_yticks([])
    ax.tick_params(labelsize=7)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    if title is not None:
        ax.set_title(title, fontsize=9)
    return fig


def interval_metrics(table) -> list:
    """Metrics of ``table`` that carry ``<metric>_low``/``<metric>_high`` interval columns with
    at least one interval in them (a figure of intervals that are all undefined would claim
    what the numbers do not: found by review)."""
    from ..metrics.definitions import METRIC_COLUMNS

    return [m for m in METRIC_COLUMNS if f"{m}_low" in table.columns
            and f"{m}_high" in table.columns
            and (table[f"{m}_low"].notna() & table[f"{m}_high"].notna()).any()]


@_plain_text
def plot_intervals(result, *, metrics=None, subgroups=None, models=None, max_subgroups=None):
    """Point estimates with confidence intervals per subgroup, one panel per metric.

    Needs an evaluation with intervals (``fastbias.evaluate(..., ci=...)``,
    which adds ``<metric>_low``/``<metric>_high`` columns).

    Parameters
    ----------
    result : fastbias.EvaluationResult
    metrics : list of str, optional
        Default: every metric with interval columns.
    subgroups, models, max_subgroups
        As in :func:`plot_auc_heatmap`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.plotting import plot_intervals
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=2, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_fair",
    ...                         subgroups=["male", "female"])
    >>> res.table["subgroup_auc_low"] = res.table["subgroup_auc"] - 0.01
    >>> res.table["subgroup_auc_high"] = res.table["subgroup_auc"] + 0.01
    >>> plot_intervals(res).axes[0].get_title()
    'Subgroup AUC'
    """
    Figure, _ = _matplotlib()
    available = interval_metrics(result.table)
    metrics = available if metrics is None else list(metrics)
    missing = [m for m in metrics if m not in available]
    if missing or not metrics:
        raise ValueError(f"no intervals for {missing or 'any metric'} (no interval columns, "
                         f"or every interval undefined); evaluate with ci='delong', "
                         f"'bootstrap' or 'bernstein' first")
    given = subgroups
    subgroups, models = _select(result, subgroups, models, max_subgroups)
    fig, axes, y, offsets = _rows_by_subgroup(Figure, subgroups, models, len(metrics), 2.3)
    palette = series_colors(len(models))
    for ax, metric in zip(axes, metrics):
        for k, model in enumerate(models):
            part = result.table[result.table["model"] == model].set_index("subgroup")
            part = part.reindex(subgroups)
            mid = part[metric].to_numpy(dtype=np.float64)
            low = part[f"{metric}_low"].to_numpy(dtype=np.float64)
            high = part[f"{metric}_high"].to_numpy(dtype=np.float64)
            ok = np.isfinite(mid) & np.isfinite(low) & np.isfinite(high)
            err = np.vstack([mid - low, high - mid])[:, ok]
            ax.errorbar(mid[ok], y[ok] + offsets[k], xerr=np.clip(err, 0, None), fmt="o",
                        markersize=3, capsize=2, linewidth=1, color=palette[k],
                        label=name_cell(model))
            # a value without an interval: its point, hollow; an undefined value: "n/a"
            bare = np.isfinite(mid) & ~ok
            if bare.any():
                ax.plot(mid[bare], y[bare] + offsets[k], "o", markersize=3,
                        markerfacecolor="none", color=palette[k])
            absent = ~np.isin(np.asarray(subgroups, dtype=object),
                              np.asarray(result.subgroups_of([model]), dtype=object))
            _mark_undefined(ax, y[~np.isfinite(mid) & ~absent] + offsets[k], palette[k])
            _mark_undefined(ax, y[absent] + offsets[k], palette[k], ABSENT_TEXT)
        if metric not in AUC_METRICS:  # AUC axes zoom on the data; AEGs show where 0 is
            ax.axvline(0.0, color="#999999", linewidth=0.8, linestyle=":")
        ax.set_title(METRIC_LABELS[metric], fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", color="#eeeeee")
    axes[0].set_yticks(y, [name_cell(g) for g in subgroups], fontsize=8)
    axes[0].set_ylim(len(subgroups) - 0.5, -0.5)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
               ncols=min(len(models), 6), fontsize=8, frameon=False)
    confidence = result.settings.get("confidence")
    method = result.settings.get("ci")
    label = f"{method} intervals" if method else "intervals"
    if confidence and method:  # (a level only for intervals the evaluation made at it: the
        # settings keep the default 0.95 where no interval was asked for)
        label = f"{percent_text(confidence)} {label}"
    fig.suptitle(f"Metrics with {label}{_order_note(given, subgroups, result, models=models)}",
                 fontsize=11)
    return fig


def threshold_shown(result, threshold=None) -> float:
    """The threshold a figure shows: the evaluated one equal to the one given, or else the
    nearest within rounding (``numpy.linspace`` makes 0.30000000000000004 of 0.3); with none
    given, the one nearest 0.5."""
    if result.thresholds is None:
        raise ValueError("no threshold metrics; evaluate with thresholds=[...] first")
    grid = np.asarray(sorted(result.thresholds["threshold"].unique()), dtype=np.float64)
    if threshold is None:
        return float(grid[np.argmin(np.abs(grid - 0.5))])
    near = np.flatnonzero(np.isclose(grid, float(threshold), rtol=1e-12, atol=1e-12))
    if near.shape[0] == 0:
        raise ValueError(f"threshold {threshold!r} was not evaluated; thresholds are "
                         f"{[float(f'{t:.12g}') for t in grid[:10]]}"
                         f"{' ...' if grid.shape[0] > 10 else ''}")
    # the nearest of them: an evaluated threshold equal to the one given, where there is one
    # (0.3 and 0.1 * 3 evaluated side by side: the second was shown as the first; found by
    # review)
    return float(grid[near[np.argmin(np.abs(grid[near] - float(threshold)))]])


def worst_gaps(result, threshold: float, models=None) -> list:
    """Subgroups ordered by their largest absolute FPR or FNR gap at ``threshold`` over the
    models (undefined gaps last)."""
    table = result.thresholds
    part = table[table["threshold"] == threshold]
    if models is not None:
        part = part[part["model"].isin(list(models))]
    size = part[["fpr_gap", "fnr_gap"]].abs().max(axis=1, skipna=True)
    names = result.subgroups_of(models)  # (the subgroups these models have)
    size = size.groupby(part["subgroup"].to_numpy(), sort=False).max().reindex(names)
    order = np.argsort(-size.fillna(-np.inf).to_numpy(), kind="stable")
    return [names[i] for i in order]


@_plain_text
def plot_threshold_gaps(result, *, threshold=None, subgroups=None, models=None,
                        max_subgroups=None):
    """FPR and FNR gap (subgroup minus background) per subgroup at one threshold, with
    their Bernstein intervals when evaluated (``gap_interval="bernstein"``).

    Parameters
    ----------
    result : fastbias.EvaluationResult
        From ``fastbias.evaluate(..., thresholds=[...])``.
    threshold : float, optional
        One of the evaluated thresholds (default: the one nearest 0.5).
    subgroups : list of str, optional
        Default: the largest gaps first (at most ``max_subgroups``).
    models, max_subgroups
        As in :func:`plot_auc_heatmap`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import fastbias
    >>> from fastbias.plotting import plot_threshold_gaps
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=3, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female"], thresholds=[0.3, 0.5])
    >>> [ax.get_title() for ax in plot_threshold_gaps(res).axes]
    ['FPR gap at 0.5', 'FNR gap at 0.5']
    """
    Figure, _ = _matplotlib()
    threshold = threshold_shown(result, threshold)
    models = list(result.models if models is None else models)
    given = subgroups
    if subgroups is None:
        subgroups = worst_gaps(result, threshold, models)
        if max_subgroups is not None:
            subgroups = subgroups[:max_subgroups]
    subgroups = list(subgroups)
    table = result.thresholds[result.thresholds["threshold"] == threshold]
    fig, axes, y, offsets = _rows_by_subgroup(Figure, subgroups, models, 2, 2.5)
    palette = series_colors(len(models))
    height = 0.5 / max(1, len(models))
    for ax, gap, title in zip(axes, ("fpr_gap", "fnr_gap"), ("FPR gap", "FNR gap")):
        for k, model in enumerate(models):
            part = table[table["model"] == model].set_index("subgroup").reindex(subgroups)
            value = part[gap].to_numpy(dtype=np.float64)
            ok = np.isfinite(value)
            ax.barh(y[ok] + offsets[k], value[ok], height=height, color=palette[k],
                    label=name_cell(model))
            if f"{gap}_low" in part:  # (a gap whose interval is undefined keeps its bar)
                low = part[f"{gap}_low"].to_numpy(dtype=np.float64)
                high = part[f"{gap}_high"].to_numpy(dtype=np.float64)
                both = ok & np.isfinite(low) & np.isfinite(high)
                ax.errorbar(value[both], y[both] + offsets[k], fmt="none",
                            xerr=np.clip(np.vstack([value - low, high - value])[:, both], 0,
                                         None), ecolor="black", elinewidth=0.8, capsize=2)
            _mark_undefined(ax, y[~ok] + offsets[k], palette[k])
        ax.axvline(0.0, color="#555555", linewidth=0.8)
        ax.set_title(f"{title} at {threshold:.12g}", fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(axis="x", color="#eeeeee")
    axes[0].set_yticks(y, [name_cell(g) for g in subgroups], fontsize=8)
    axes[0].set_ylim(len(subgroups) - 0.5, -0.5)
    if len(models) > 1:
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
                   ncols=min(len(models), 6), fontsize=8, frameon=False)
    fig.suptitle("Error-rate gaps, subgroup minus background"
                 + _order_note(given, subgroups, result, "largest first", models), fontsize=11)
    return fig


@_plain_text
def plot_gap_curves(result, *, subgroups=None, model=None, n_subgroups: int = 4,
                    threshold=None):
    """FPR and FNR gap of the worst subgroups across the evaluated thresholds.

    Parameters
    ----------
    result : fastbias.EvaluationResult
        From ``fastbias.evaluate(..., thresholds=[...])`` with two thresholds or more.
    subgroups : list of str, optional
        Default: the ``n_subgroups`` largest gaps at ``threshold`` (nearest 0.5).
    model : str, optional
        Default: the first model.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np, fastbias
    >>> from fastbias.plotting import plot_gap_curves
    >>> df = fastbias.make_jigsaw_like(n_rows=20_000, n_identities=3, random_state=0)
    >>> res = fastbias.evaluate(df, label="toxicity", scores="model_biased",
    ...                         subgroups=["male", "female"], thresholds=np.linspace(0, 1, 11))
    >>> [ax.get_xlabel() for ax in plot_gap_curves(res).axes]
    ['threshold', 'threshold']
    """
    Figure, _ = _matplotlib()
    model = result.models[0] if model is None else model
    if model not in result.models:
        raise KeyError(f"model {model!r} was not evaluated; models are {result.models}")
    shown = threshold_shown(result, threshold)
    if subgroups is None:
        subgroups = worst_gaps(result, shown, [model])[:n_subgroups]
    table = result.thresholds[result.thresholds["model"] == model]
    fig = Figure(figsize=(8.0, 3.2), layout="constrained")
    axes = fig.subplots(1, 2, squeeze=False)[0]
    palette = series_colors(len(subgroups))
    for ax, gap, title in zip(axes, ("fpr_gap", "fnr_gap"), ("FPR gap", "FNR gap")):
        for k, name in enumerate(subgroups):
            part = table[table["subgroup"] == name].sort_values("threshold")
            ax.plot(part["threshold"], part[gap], color=palette[k],
                    linewidth=1.2, label=name_cell(name))
        ax.axhline(0.0, color="#555555", linewidth=0.8)
        ax.axvline(shown, color="#999999", linewidth=0.8, linestyle=":")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("threshold", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(color="#eeeeee")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
               ncols=min(len(subgroups), 4), fontsize=8, frameon=False)
    fig.suptitle(f"Gaps across thresholds, {name_cell(model)}", fontsize=11)
    return fig


__all__ = ["plot_auc_heatmap", "plot_aeg_heatmap", "plot_score_distributions",
           "plot_subgroup_scores", "plot_intervals", "plot_threshold_gaps", "plot_gap_curves",
           "worst_first", "color_for",
           "AUC_COLOR_STOPS", "AEG_COLOR_STOPS"]
