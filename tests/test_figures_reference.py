"""Figures and reports against the tables they show (an independent review's tests).

Reference: ``EvaluationResult.table`` / ``.thresholds``. The figures' artists are read back
(texts, error bars, bars, lines) and compared with the table. Tests marked "DEFECT" fail on
the reviewed commit.
"""
import html as html_module
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")

from fastbias import plotting as P  # noqa: E402
from fastbias.report import bias_report  # noqa: E402
from fastbias.reports.plots import number_text  # noqa: E402

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
SHORT = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "neg_aeg", "pos_aeg"]


def _data(n=3000, n_models=3, seed=1):
    """8 random identities, g_nopos (no positives: three metrics and the FNR gap undefined),
    g_tiny (3 negatives, 2 positives); model k scores g0 0.1*k higher."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": (rng.random(n) < 0.3).astype(int)})
    for j in range(8):
        df[f"g{j}"] = (rng.random(n) < 0.15).astype(int)
    negatives, positives = np.flatnonzero(df.y == 0), np.flatnonzero(df.y == 1)
    df["g_nopos"] = 0
    df.loc[negatives[:40], "g_nopos"] = 1
    df["g_tiny"] = 0
    df.loc[negatives[40:43], "g_tiny"] = 1
    df.loc[positives[:2], "g_tiny"] = 1
    for m in range(n_models):
        df[f"m{m}"] = np.clip(df.y * 0.3 + rng.random(n) * 0.7 + 0.1 * m * df.g0, 0, 1)
    return df


SUBGROUPS = [f"g{j}" for j in range(8)] + ["g_nopos", "g_tiny"]


@pytest.fixture(scope="module")
def report():
    df = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bias_report(df, label="y", scores=["m0", "m1", "m2"], subgroups=SUBGROUPS,
                           ci="delong", significance="holm", thresholds=[0.3, 0.5, 0.7],
                           gap_interval="bernstein")


def _ticks(ax, axis="y"):
    a = ax.yaxis if axis == "y" else ax.xaxis
    fmt = a.get_major_formatter()
    ticks = ax.get_yticks() if axis == "y" else ax.get_xticks()
    return [fmt(t, i) for i, t in enumerate(ticks)]


def _fmt(value, metric):
    if pd.isna(value):
        return "n/a"
    return number_text(value, "{:+.4f}" if "aeg" in metric else "{:.4f}")


# ------------------------------------------------------------------ verified (pins)

def test_heatmap_cells_match_table(report):
    """Pin: every heatmap cell is its (model, subgroup, metric) value, '*' exactly where
    <metric>_significant, n/a (hatched) where NaN; rows in worst_first order."""
    result, table = report.result, report.result.table
    for kind, metrics, fmt in (("auc", METRICS[:3], "{:.3f}"), ("aeg", METRICS[3:], "{:+.3f}")):
        fig = P.plot_auc_heatmap(result) if kind == "auc" else P.plot_aeg_heatmap(result)
        rows = _ticks(fig.axes[0])
        assert rows == P.worst_first(result)
        n_flags = 0
        for ax in fig.axes[:len(result.models)]:
            part = table[table.model == ax.get_title()].set_index("subgroup")
            assert len(ax.texts) == len(rows) * len(metrics)
            for text in ax.texts:
                x, y = text.get_position()
                group, metric = rows[int(round(y))], metrics[int(round(x))]
                value = part.at[group, metric]
                expected = "n/a" if np.isnan(value) else number_text(value, fmt)
                if not np.isnan(value) and bool(part.at[group, f"{metric}_significant"]):
                    expected += "*"
                    n_flags += 1
                assert text.get_text() == expected, (ax.get_title(), group, metric)
        assert n_flags == int(sum(table[f"{m}_significant"].fillna(False).sum() for m in metrics))


def test_interval_errorbars_match_table(report):
    """Pin: points = the estimate, bars = the table's _low/_high, under the right model/row."""
    result, table = report.result, report.result.table
    fig = P.plot_intervals(result)
    rows = _ticks(fig.axes[0])
    for ax, metric in zip(fig.axes, P.interval_metrics(table)):
        for container in ax.containers:
            part = table[table.model == container.get_label()].set_index("subgroup")
            line, _caps, (bars,) = container.lines
            for x, y, seg in zip(*line.get_data(), bars.get_segments()):
                group = rows[int(round(y))]
                assert x == pytest.approx(part.at[group, metric])
                assert seg[0][0] == pytest.approx(part.at[group, f"{metric}_low"])
                assert seg[1][0] == pytest.approx(part.at[group, f"{metric}_high"])
            lo, hi = ax.get_xlim()
            assert lo <= np.nanmin(part[f"{metric}_low"]) and hi >= np.nanmax(part[f"{metric}_high"])


def test_threshold_gap_bars_and_curves_match_thresholds(report):
    """Pin: defined FPR/FNR gap bars and their Bernstein bars, the curves across thresholds."""
    result = report.result
    th = result.thresholds
    at = th[th.threshold == 0.5]
    fig = P.plot_threshold_gaps(result)
    rows = _ticks(fig.axes[0])
    from matplotlib.container import BarContainer, ErrorbarContainer

    for ax, gap in zip(fig.axes, ("fpr_gap", "fnr_gap")):
        containers = list(ax.containers)
        bar_sets = [c for c in containers if isinstance(c, BarContainer)]
        assert len(bar_sets) == len(result.models)
        for bars in bar_sets:
            part = at[at.model == bars.get_label()].set_index("subgroup")
            drawn = set()
            for patch in bars.patches:
                group = rows[int(round(patch.get_y() + patch.get_height() / 2))]
                drawn.add(group)
                assert patch.get_width() == pytest.approx(part.at[group, gap])
            # every defined gap has its bar
            assert drawn == set(part.index[part[gap].notna()])
            # its interval: the error bar drawn right after the model's bars
            errors = containers[containers.index(bars) + 1]
            assert isinstance(errors, ErrorbarContainer)
            segments = errors.lines[2][0].get_segments()
            with_interval = part[part[gap].notna() & part[f"{gap}_low"].notna()]
            assert len(segments) == len(with_interval)
            for seg in segments:
                group = rows[int(round(seg[0][1]))]
                assert seg[0][0] == pytest.approx(part.at[group, f"{gap}_low"])
                assert seg[1][0] == pytest.approx(part.at[group, f"{gap}_high"])
    fig = P.plot_gap_curves(result, model="m1")
    for ax, gap in zip(fig.axes, ("fpr_gap", "fnr_gap")):
        for line in ax.lines:
            if line.get_label().startswith("_"):
                continue
            part = th[(th.model == "m1") & (th.subgroup == line.get_label())].sort_values("threshold")
            x, y = line.get_data()
            np.testing.assert_allclose(x, part.threshold)
            np.testing.assert_allclose(y, part[gap], equal_nan=True)


def test_text_html_csv_json_match_table(report, tmp_path):
    """Pin: every metric in the text table, the HTML tables, the CSV and the JSON equals the
    table (4 decimals in text/HTML); '*' in text/HTML exactly where significant; worst first."""
    result, table = report.result, report.result.table
    text = report.to_text()
    page = report.to_html()
    blocks = text.split("\n\n")
    n_sig_expected = int(sum(table[f"{m}_significant"].fillna(False).sum() for m in METRICS))
    assert n_sig_expected > 0
    n_sig_text = 0
    for model in result.models:
        part = table[table.model == model].set_index("subgroup")
        block = next(b for b in blocks if b.startswith(f"{model}  overall AUC"))
        lines = block.splitlines()
        head = re.split(r"\s{2,}", lines[1].strip())
        seen = []
        for line in lines[3:]:
            cells = re.split(r"\s{2,}", line.strip())
            seen.append(cells[0])
            for metric, short in zip(METRICS, SHORT):
                shown = cells[head.index(short)].split(" [")[0]
                n_sig_text += shown.endswith("*")
                assert shown.rstrip("*") == _fmt(part.at[cells[0], metric], metric)
        assert seen == report.worst_subgroups(model=model)
        match = re.search(r'<table class="metrics" data-model="%s">(.*?)</table>' % model, page,
                          re.S)
        for tr in re.findall(r"<tr>(.*?)</tr>", match.group(1), re.S)[1:]:
            tds = re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)
            group = html_module.unescape(re.sub("<[^>]+>", "", tds[0]))
            for metric, td in zip(METRICS, tds[6:11]):
                shown = re.sub(r'<span class="ci.*?</span>|<sup>.*?</sup>|<span class="sig".*?</span>',
                               "", td)
                assert html_module.unescape(shown) == _fmt(part.at[group, metric], metric)
    assert n_sig_text == n_sig_expected
    assert len(re.findall(r'class="num metric significant"', page)) == n_sig_expected
    report.to_csv(tmp_path / "r.csv", raw=True)
    csv = pd.read_csv(tmp_path / "r.csv")
    for metric in METRICS:
        np.testing.assert_array_equal(csv[metric].to_numpy(float), table[metric].to_numpy(float))
    data = json.loads(report.to_json())
    for entry in data["models"]:
        part = table[table.model == entry["name"]].set_index("subgroup")
        for row in entry["subgroups"]:
            for metric in METRICS:
                value = part.at[row["subgroup"], metric]
                assert (row[metric] is None) == bool(np.isnan(value))
                if row[metric] is not None:
                    assert row[metric] == value


def test_summary_extremes_match_table(report):
    """Pin: lowest AUC and largest |AEG| (value, subgroup, metric) per model."""
    summary, table = report.summary(), report.result.table
    for model in report.result.models:
        part = table[table.model == model].set_index("subgroup")
        aucs = part[METRICS[:3]].stack()
        aegs = part[METRICS[3:]].stack()
        assert summary.at[model, "lowest_auc"] == aucs.min()
        assert part.at[summary.at[model, "lowest_auc_subgroup"],
                       summary.at[model, "lowest_auc_metric"]] == aucs.min()
        assert abs(summary.at[model, "largest_abs_aeg"]) == aegs.abs().max()
        assert part.at[summary.at[model, "largest_aeg_subgroup"],
                       summary.at[model, "largest_aeg_metric"]] == summary.at[model, "largest_abs_aeg"]


def test_html_figure_caption_says_the_cut():
    """Pin: with more subgroups than the heatmaps show, the caption says how many of how many."""
    rng = np.random.default_rng(3)
    n = 1500
    df = pd.DataFrame({"y": (rng.random(n) < 0.3).astype(int)})
    names = [f"s{j:02d}" for j in range(45)]
    for name in names:
        df[name] = (rng.random(n) < 0.1).astype(int)
    df["m0"] = np.clip(df.y * 0.3 + rng.random(n) * 0.7, 0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = bias_report(df, label="y", scores="m0", subgroups=names)
    figures = {key: (caption, fig) for key, caption, fig in rep.figures()}
    caption, fig = figures["aucs"]
    assert "the 40 worst of 45 subgroups" in caption
    assert _ticks(fig.axes[0]) == rep.worst_subgroups()[:40]


# ------------------------------------------------------------------ defects

def test_threshold_gaps_figure_marks_an_undefined_gap(report):
    """Found by review: g_nopos has no positives, so its FNR gap is NaN at every threshold. The bar is
    simply not drawn: its row reads as a zero gap, with no n/a and no note (the heatmaps hatch
    and label n/a; the HTML caption says nothing either)."""
    result = report.result
    at = result.thresholds[result.thresholds.threshold == 0.5]
    assert at[at.subgroup == "g_nopos"]["fnr_gap"].isna().all()
    fig = P.plot_threshold_gaps(result)
    rows = _ticks(fig.axes[0])
    fnr_ax = fig.axes[1]
    drawn = {rows[int(round(p.get_y() + p.get_height() / 2))]
             for c in fnr_ax.containers if hasattr(c, "patches") for p in c.patches}
    assert "g_nopos" not in drawn  # the row is there, the bar is not
    # one "n/a" per model in the FNR panel's g_nopos row, at that row
    marks = [t for t in fnr_ax.texts if t.get_text() == "n/a"]
    assert len(marks) == at["fnr_gap"].isna().sum() == len(result.models)
    assert {rows[int(round(t.get_position()[1]))] for t in marks} == {"g_nopos"}


def test_interval_figure_marks_an_undefined_value(report):
    """Found by review: plot_intervals dropped NaN estimates (g_nopos Subgroup/BNSP AUC, Positive AEG)
    without a marker or a note, while the HTML caption says 'Point estimates and intervals,
    all 10 subgroups.'"""
    fig = P.plot_intervals(report.result)
    rows = _ticks(fig.axes[0])
    table = report.result.table
    for ax, metric in zip(fig.axes, P.interval_metrics(table)):
        marks = [t for t in ax.texts if t.get_text() == "n/a"]
        undefined = table[table["subgroup"].isin(rows) & table[metric].isna()]
        assert len(marks) == len(undefined), metric
        assert {rows[int(round(t.get_position()[1]))] for t in marks} \
            == set(undefined["subgroup"]), metric


def test_figures_give_each_model_its_own_colour():
    """Found by review: MODEL_COLORS has 6 colours and the 7th model reuses the 1st: in
    plot_intervals / plot_threshold_gaps (and the legend) m0 and m6 cannot be told apart."""
    df = _data(n=1500, n_models=7, seed=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = bias_report(df, label="y", scores=[f"m{m}" for m in range(7)],
                          subgroups=SUBGROUPS[:4], ci="delong", thresholds=[0.5])
    fig = P.plot_intervals(rep.result)
    colours = [matplotlib.colors.to_hex(c.lines[0].get_color()) for c in fig.axes[0].containers]
    assert len(set(colours)) == 7, colours
    fig = P.plot_threshold_gaps(rep.result)
    colours = [matplotlib.colors.to_hex(c.patches[0].get_facecolor())
               for c in fig.axes[0].containers if hasattr(c, "patches")]
    assert len(set(colours)) == 7, colours


def test_titles_claim_an_order_only_where_the_figure_chose_it(report):
    """Found by review: "(worst first)" over rows the caller gave in their own order, and no
    word of a cut. The title says the order where the figure chose the rows, and "N of M"
    where it showed fewer than all."""
    result = report.result
    total = len(result.subgroups)
    chosen = P.plot_auc_heatmap(result)
    assert chosen._suptitle.get_text() == "AUCs per subgroup (worst first)"
    cut = P.plot_auc_heatmap(result, max_subgroups=3)
    assert cut._suptitle.get_text() == f"AUCs per subgroup (worst first, 3 of {total})"
    given = P.plot_auc_heatmap(result, subgroups=list(result.subgroups[:2]))
    assert given._suptitle.get_text() == "AUCs per subgroup"
    gaps = P.plot_threshold_gaps(result, subgroups=list(result.subgroups[:2]))
    assert gaps._suptitle.get_text() == "Error-rate gaps, subgroup minus background"
    assert P.plot_threshold_gaps(result)._suptitle.get_text().endswith("(largest first)")
    shown = P.plot_intervals(result, max_subgroups=2)._suptitle.get_text()
    assert shown.endswith(f"(worst first, 2 of {total})"), shown


def test_html_says_where_intersections_are_ranked_with_the_identities():
    """Found by review: the summary's lowest AUC and largest |AEG|, and the threshold-gap
    figure, rank the intersections with the identities (the AUC figures leave them to their
    own section, the final metric leaves them out), without a word."""
    df = _data(n=2000, n_models=1, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = bias_report(df, label="y", scores="m0", subgroups=SUBGROUPS[:4], intersections=2,
                          thresholds=[0.5])
    page = rep.to_html()
    head = page.split("<th>lowest AUC")[1].split("</th>")[0]
    assert "intersections included" in head
    n_intersections = len(rep.result.settings["intersection_members"])
    assert f"({n_intersections} of the {len(rep.result.subgroups)} rows are intersections)" \
        in page
    plain = bias_report(df, label="y", scores="m0", subgroups=SUBGROUPS[:4], thresholds=[0.5])
    assert "intersections included" not in plain.to_html()
