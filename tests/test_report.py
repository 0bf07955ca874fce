"""The report builder and its figures: numbers checked against independent references.

The binned scores are checked against numpy.histogram of the rows picked by
hand, the tables against brute-force pair counts (tests.reference), the
summary against a direct computation, and the figures against the table
they draw.
"""
import json
import re
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.metrics import AUC_METRICS, METRIC_COLUMNS
from fastbias.report import BiasReport, score_histograms
from tests.reference import brute_force_metrics

matplotlib = pytest.importorskip("matplotlib")


def test_summary_says_when_its_extreme_is_shared():
    """Two subgroups with the same rows tie on every metric: the summary names the first and
    says how many values equal it, not one subgroup as if it alone were the worst."""
    from fastbias.report import bias_report
    rng = np.random.default_rng(4)
    n = 400
    y = rng.random(n) < 0.4
    zeta = rng.random(n) < 0.3
    df = pd.DataFrame({"label": y, "score": np.round(rng.random(n) + 0.4 * y - 0.3 * zeta, 2),
                       "zeta": zeta, "alpha": zeta, "other": rng.random(n) < 0.5})
    report = bias_report(df, label="label", scores="score", subgroups=["zeta", "alpha", "other"])
    table = report.result.for_model()
    aucs = table[AUC_METRICS].stack()
    summary = report.summary().loc["score"]
    assert summary["lowest_auc"] == aucs.min()
    assert summary["lowest_auc_ties"] == int((aucs == aucs.min()).sum()) - 1 >= 1
    aegs = table[["negative_aeg", "positive_aeg"]].stack().abs()
    assert summary["largest_aeg_ties"] == int((aegs == aegs.max()).sum()) - 1 >= 1
    page = report.to_html()
    assert page.count("more value(s) equal to it)") == 1  # (the AUC's)
    assert page.count("more value(s) of the same size)") == 1  # (the AEG's: |AEG|)
    alone = bias_report(df, label="label", scores="score", subgroups=["zeta", "other"])
    assert alone.summary().loc["score", "lowest_auc_ties"] == 0
    assert "equal to it" not in alone.to_html()


def test_settings_and_notes_say_what_was_computed():
    """The report's settings and notes state what the numbers are (found by review): a
    99.9% interval was shown as "100%"; under missing_subgroup="exclude" the tests compare
    an AUC with its annotated rows' AUC, not the overall AUC; rows left out of a model by
    nan_policy="omit" were not mentioned; a sensitive feature's subgroups are values, not
    thresholds; a weighted cell of zero total weight is not "empty"."""
    from fastbias.report import bias_report
    rng = np.random.default_rng(5)
    n = 2000
    df = pd.DataFrame({"y": (rng.random(n) < 0.3).astype(int), "a": rng.random(n) < 0.2,
                       "b": rng.random(n) < 0.2, "race": rng.choice(["x", "y"], n)})
    df["m1"] = rng.random(n) + 0.6 * df["y"] + 0.3 * df["a"]
    df["m2"] = df["m1"].where(rng.random(n) > 0.05)
    df["w"] = np.where(df["b"] & (df["y"] == 1), 0.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = bias_report(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                             ci="delong", confidence=0.999, nan_policy="omit",
                             sensitive_features=["race"], significance="holm",
                             sample_weight="w")
    page, text = report.to_html(), report.to_text()
    assert "<th>intervals</th><td>delong, 99.9%</td>" in page and "100%<" not in page
    left_out = int(df["m2"].isna().sum())
    assert (f"<th>rows left out</th><td><bdi>m2</bdi>: {left_out} (a missing label, weight or score, "
            f"nan_policy='omit')</td>") in page
    assert "a sensitive feature's: one subgroup per value" in page
    assert "one of them is empty or, weighted, of zero total weight" in text
    assert "AUC vs overall AUC" in text
    unannotated = df.assign(a=np.where(rng.random(n) < 0.5, np.nan, df["a"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        excluded = bias_report(unannotated, label="y", scores=["m1"], subgroups=["a"],
                               missing_subgroup="exclude", significance="holm")
    for shown in (excluded.to_html(), excluded.to_text()):
        assert "AUC vs the AUC of the rows annotated for its subgroup" in shown
        assert "AUC vs overall AUC" not in shown


def test_html_report_tables_the_threshold_metrics():
    """The HTML showed threshold metrics only as figures (one threshold, and curves; nothing
    without matplotlib): each model's gaps are now a table, as in the text report, and the
    settings list the thresholds."""
    import re

    from fastbias.report import bias_report
    df = small_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = bias_report(df, label="label", scores=MODELS, subgroups=["g1", "g2"],
                             thresholds=[0.3, 0.5])
    page = report.to_html()
    at = report.result.thresholds
    assert "<th>thresholds</th><td>0.3, 0.5 (rates&#x27; intervals: wilson" in page
    for model in MODELS:
        table = page.split(f'class="thresholds" data-model="{model}">')[1].split("</table>")[0]
        rows = re.findall(r"<tr><td><bdi>([^<]*)</bdi></td><td class=num>([^<]*)</td>(.*?)</tr>",
                          table)
        assert len(rows) == len(at[at["model"] == model])
        for name, threshold, cells in rows:
            row = at[(at["model"] == model) & (at["subgroup"] == name)
                     & (at["threshold"] == float(threshold))].iloc[0]
            shown = re.findall(r"<td class=num>([^<]*)</td>", cells)
            for text, gap in zip(shown, ["positive_rate_gap", "tpr_gap", "fpr_gap", "fnr_gap",
                                         "precision_gap"]):
                if np.isnan(row[gap]):
                    assert text.startswith("n/a")
                else:
                    assert float(text.split(" ")[0]) == pytest.approx(row[gap], abs=5e-5)
    assert 'id="thresholds"' not in bias_report(df, label="label", scores=MODELS,
                                                subgroups=["g1"]).to_html()


def small_frame(seed=0, n=400):
    """Heavy ties (scores on a 0.05 grid, on the histogram edges), NaN identities, one
    subgroup without positives and one without any rows."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    a = np.round(np.clip(0.3 + 0.35 * y + rng.normal(0, 0.2, n), 0, 1) * 20) / 20
    b = np.round(np.clip(0.3 + 0.2 * y + rng.normal(0, 0.25, n), 0, 1) * 20) / 20
    g1 = np.where(rng.random(n) < 0.3, rng.uniform(0.5, 1, n), rng.uniform(0, 0.45, n))
    g1[rng.random(n) < 0.2] = np.nan
    g2 = (rng.random(n) < 0.15).astype(float)
    g2[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({
        "label": y.astype(float),
        "model_a": a,
        "model_b": b,
        "g1": g1,
        "g2": g2,
        "no_positives": (~y & (rng.random(n) < 0.2)),
        "nobody": np.zeros(n, dtype=bool),
    })
    return df


SUBGROUPS = ["g1", "g2", "no_positives", "nobody"]
MODELS = ["model_a", "model_b"]


@pytest.fixture(scope="module")
def frame():
    return small_frame()


def evaluate_quietly(df, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        return fastbias.evaluate(df, label="label", scores=MODELS, subgroups=SUBGROUPS, **kwargs)


@pytest.fixture(scope="module", params=["background", "exclude"])
def report(request, frame):
    result = evaluate_quietly(frame, missing_subgroup=request.param)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        return BiasReport.from_result(frame, result, bins=20, title="test report")


def reference_rows(df, subgroup, policy):
    """(member, universe) boolean masks picked by hand."""
    values = df[subgroup].to_numpy(dtype=np.float64)
    member = values >= 0.5
    universe = ~np.isnan(values) if policy == "exclude" else np.ones(len(df), bool)
    return member & universe, universe


def test_histograms_match_numpy_histogram(report, frame):
    h = report.histograms
    policy = report.result.settings["missing_subgroup"]
    y = frame["label"].to_numpy() >= 0.5
    np.testing.assert_allclose(h.edges, np.linspace(0, 1, 21))
    for model in MODELS:
        s = frame[model].to_numpy(dtype=np.float64)
        for subgroup in SUBGROUPS:
            member, universe = reference_rows(frame, subgroup, policy)
            background = universe & ~member
            expected = {
                "subgroup_negatives": member & ~y, "subgroup_positives": member & y,
                "background_negatives": background & ~y, "background_positives": background & y,
            }
            cells = h.cells(model, subgroup)
            for cell, mask in expected.items():
                want, _ = np.histogram(s[mask], bins=h.edges)
                np.testing.assert_array_equal(cells[cell], want, err_msg=f"{model} {subgroup} {cell}")


def test_histograms_add_up_to_table_counts(report):
    h = report.histograms
    for row in report.result.table.to_dict("records"):
        cells = h.cells(row["model"], row["subgroup"])
        for cell, counts in cells.items():
            assert int(counts.sum()) == int(row[cell])


def test_histogram_range_follows_scores_outside_unit_interval(frame):
    df = frame.copy()
    df["model_a"] = df["model_a"] * 10 - 3  # scores in [-3, 7]
    result = evaluate_quietly(df)
    h = score_histograms(df, result, bins=10)
    assert h.edges[0] == pytest.approx(min(df["model_a"].min(), df["model_b"].min()))
    assert h.edges[-1] == pytest.approx(max(df["model_a"].max(), df["model_b"].max()))
    for model in MODELS:
        want, _ = np.histogram(df[model].to_numpy(), bins=h.edges)
        got = h.counts[MODELS.index(model), 0].sum(axis=0)  # four cells of g1 add up to all rows
        np.testing.assert_array_equal(got, want)


def test_histograms_reject_bad_bins(frame):
    result = evaluate_quietly(frame)
    with pytest.raises(ValueError, match="bins must be a positive integer"):
        score_histograms(frame, result, bins=0)
    h = score_histograms(frame, result, bins=3)
    with pytest.raises(KeyError, match="model 'nope'"):
        h.cells("nope", "g1")
    with pytest.raises(KeyError, match="subgroup 'nope'"):
        h.cells("model_a", "nope")


def test_table_values_match_brute_force(report, frame):
    policy = report.result.settings["missing_subgroup"]
    y = frame["label"].to_numpy() >= 0.5
    table = report.to_frame()
    for model in MODELS:
        s = frame[model].to_numpy(dtype=np.float64)
        for subgroup in SUBGROUPS:
            member, universe = reference_rows(frame, subgroup, policy)
            want = brute_force_metrics(y[universe], s[universe], member[universe])
            row = table[(table["model"] == model) & (table["subgroup"] == subgroup)].iloc[0]
            for metric in METRIC_COLUMNS:
                if np.isnan(want[metric]):
                    assert np.isnan(row[metric]), (model, subgroup, metric)
                else:
                    assert row[metric] == pytest.approx(want[metric], abs=1e-12)


def test_summary_against_direct_computation(report):
    from sklearn.metrics import roc_auc_score

    summary = report.summary()
    frame = small_frame()
    y = frame["label"].to_numpy() >= 0.5
    for model in MODELS:
        part = report.result.table[report.result.table["model"] == model]
        assert summary.at[model, "overall_auc"] == pytest.approx(roc_auc_score(y, frame[model]),
                                                                 abs=1e-12)
        aucs = part[AUC_METRICS].to_numpy(dtype=float)
        assert summary.at[model, "lowest_auc"] == np.nanmin(aucs)
        i, j = np.unravel_index(np.nanargmin(aucs), aucs.shape)
        assert summary.at[model, "lowest_auc_subgroup"] == part["subgroup"].iloc[i]
        assert summary.at[model, "lowest_auc_metric"] == AUC_METRICS[j]
        aegs = part[["negative_aeg", "positive_aeg"]].to_numpy(dtype=float)
        assert abs(summary.at[model, "largest_abs_aeg"]) == np.nanmax(np.abs(aegs))
        assert summary.at[model, "undefined_values"] == int(np.isnan(
            part[METRIC_COLUMNS].to_numpy(dtype=float)).sum())
        # "nobody" and "no_positives" have undefined AUCs: the final metric propagates NaN
        assert np.isnan(summary.at[model, "final_metric"])
        # leaving them out: 0.25 overall + 0.75 mean of the power means (p = -5)
        omitted = report.final_metrics(undefined="omit")[model]
        power_means = [np.mean(col[~np.isnan(col)] ** -5.0) ** (-1 / 5) for col in aucs.T]
        want = 0.25 * roc_auc_score(y, frame[model]) + 0.75 * np.mean(power_means)
        assert omitted == pytest.approx(want, abs=1e-12)


def test_worst_first_orders_each_model_by_its_own_lowest_auc(report):
    table = report.result.table
    rankings = {}
    for model in MODELS:
        order = report.worst_subgroups(model=model)
        rows = table[table["model"] == model].set_index("subgroup")
        lowest = [np.nanmin(rows.loc[g, AUC_METRICS].to_numpy(dtype=float))
                  if not rows.loc[g, AUC_METRICS].isna().all() else np.inf for g in order]
        assert lowest == sorted(lowest)
        assert order[-1] == "nobody"  # every AUC undefined: last
        rankings[model] = order
    # without a model: each model's ranking in turn, so no model's worst is cut off
    shared = report.worst_subgroups()
    assert sorted(shared) == sorted(report.result.subgroups)
    for k in range(1, len(shared) + 1):
        for model in MODELS:
            assert set(rankings[model][:k // len(MODELS)]) <= set(shared[:k])
    assert report.worst_subgroups(2) == shared[:2]


def test_undefined_cells_are_explained(report):
    undefined = report.undefined_cells()
    table = report.result.table
    assert len(undefined) == int(table[METRIC_COLUMNS].isna().to_numpy().sum())
    reasons = undefined.set_index(["model", "subgroup", "metric"])["reason"]
    assert reasons[("model_a", "no_positives", "subgroup_auc")] == (
        "it compares subgroup negatives with subgroup positives, and subgroup_positives = 0")
    assert "subgroup_negatives = 0 and subgroup_positives = 0" in \
        reasons[("model_a", "nobody", "subgroup_auc")]


def test_text_table(report):
    text = report.to_text()
    table = report.result.table
    for model in MODELS:
        assert f"{model}  overall AUC {report.result.overall_auc[model]:.4f}" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("g2 "))
    row = table[(table["model"] == "model_a") & (table["subgroup"] == "g2")].iloc[0]
    assert f"{row['subgroup_auc']:.4f}" in line and f"{row['negative_aeg']:+.4f}" in line
    assert f"{int(row['background_negatives']):,}" in line
    nobody = next(ln for ln in text.splitlines() if ln.startswith("nobody "))
    assert nobody.split()[-5:] == ["n/a"] * 5
    assert "undefined value(s)" in text
    # aligned: every row of a block has the header's width or less, columns right-aligned
    block = text.split("\n\n")[0].splitlines()
    assert len({len(ln) for ln in block[1:3]}) == 1
    short = report.to_text(max_subgroups=2)
    assert "(2 worst of 4 subgroups shown for each model" in short


def test_json_is_strict_and_complete(report, tmp_path):
    path = tmp_path / "r.json"
    report.save(path)
    data = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert data["label"] == "label" and data["n_rows"] == len(small_frame())
    assert [m["name"] for m in data["models"]] == MODELS
    table = report.result.table
    for m in data["models"]:
        assert m["overall_auc"] == pytest.approx(report.result.overall_auc[m["name"]], abs=0)
        for row in m["subgroups"]:
            want = table[(table["model"] == m["name"]) & (table["subgroup"] == row["subgroup"])]
            for metric in METRIC_COLUMNS:
                value = want[metric].iloc[0]
                assert (row[metric] is None) if np.isnan(value) else row[metric] == value


def test_csv_round_trip(report, tmp_path):
    path = tmp_path / "r.csv"
    report.save(path)
    back = pd.read_csv(path)
    table = report.to_frame()
    assert list(back.columns) == list(table.columns)
    np.testing.assert_allclose(back[METRIC_COLUMNS].to_numpy(dtype=float),
                               table[METRIC_COLUMNS].to_numpy(dtype=float), rtol=0, atol=1e-15)
    assert (back.groupby("model")["overall_auc"].nunique() == 1).all()


def test_save_rejects_unknown_extension(report, tmp_path):
    with pytest.raises(ValueError, match=r"unknown extension '\.xlsx'"):
        report.save(tmp_path / "r.xlsx")


def test_html_is_self_contained_with_every_part(report):
    page = report.to_html()
    assert page.startswith("<!DOCTYPE html>")
    # nothing loaded from elsewhere: every src is an inline image, no external links or scripts
    sources = re.findall(r'src="([^"]*)"', page)
    assert sources and all(src.startswith("data:image/png;base64,") for src in sources)
    assert not re.search(r"(href|src)=\"(https?:)?//", page)
    assert "<script" not in page
    ids = re.findall(r'<figure id="fig-(\w+)"', page)
    assert ids == ["aucs", "aegs", "distributions"]  # no intervals computed: no interval figure
    # the tables: one per model, one row per subgroup, undefined cells marked and explained
    assert page.count('<table class="metrics"') == 2
    n_undefined = len(report.undefined_cells())
    assert page.count('class="num undefined"') >= n_undefined
    assert page.count('<li id="undef-') == n_undefined
    assert "subgroup_positives = 0" in page
    assert "Figures are left out" not in page


def test_html_shows_intervals_when_present(frame):
    result = evaluate_quietly(frame)
    for metric in METRIC_COLUMNS:  # interval columns as fastbias.evaluate(ci=...) adds them
        result.table[f"{metric}_low"] = result.table[metric] - 0.01
        result.table[f"{metric}_high"] = result.table[metric] + 0.02
    report = BiasReport.from_result(frame, result)
    page = report.to_html()
    assert re.findall(r'<figure id="fig-(\w+)"', page) == ["aucs", "aegs", "intervals",
                                                           "distributions"]
    row = result.table[(result.table["model"] == "model_b") & (result.table["subgroup"] == "g1")]
    low, high = row["bpsn_auc_low"].iloc[0], row["bpsn_auc_high"].iloc[0]
    assert f"[{low:.3f}, {high:.3f}]" in page
    assert f"[{low:.3f}, {high:.3f}]" in report.to_text()


def test_html_without_matplotlib(report, monkeypatch):
    import fastbias.reports.report as report_module

    monkeypatch.setattr(report_module, "_matplotlib_available", lambda: False)
    page = report.to_html()
    assert "<img" not in page
    assert "Figures are left out: matplotlib is not installed" in page
    assert page.count('<table class="metrics"') == 2


def test_plotting_needs_matplotlib_message(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"pip install 'fastbias\[plot\]'"):
        report.plot_aucs()


def test_heatmaps_draw_the_table(report):
    order = report.worst_subgroups()
    fig = report.plot_aucs()
    model_axes = fig.axes[:2]
    assert [ax.get_title() for ax in model_axes] == MODELS
    assert [t.get_text() for t in model_axes[0].get_yticklabels()] == order
    for ax, model in zip(model_axes, MODELS):
        drawn = np.ma.filled(ax.images[0].get_array().astype(float), np.nan)
        want = report.result.for_model(model).reindex(order)[AUC_METRICS].to_numpy(dtype=float)
        np.testing.assert_array_equal(drawn, want)
    fig = report.plot_aegs(max_subgroups=2)
    drawn = np.ma.filled(fig.axes[1].images[0].get_array().astype(float), np.nan)
    want = report.result.for_model("model_b").reindex(order[:2])[
        ["negative_aeg", "positive_aeg"]].to_numpy(dtype=float)
    np.testing.assert_array_equal(drawn, want)
    norm = fig.axes[0].images[0].norm
    assert (norm.vmin, norm.vmax) == (-0.5, 0.5)
    assert report.plot_aucs().axes[0].images[0].norm.vmin == 0.5


def test_distribution_figure_layout(report):
    fig = report.plot_distributions(n_worst=2)
    assert len(fig.axes) == 2 * 2 * len(MODELS)
    titles = [ax.get_title() for ax in fig.axes]
    worst = report.worst_subgroups(1)[0]
    assert titles[:4] == [f"model_a | {worst}: negatives", f"model_a | {worst}: positives",
                          f"model_b | {worst}: negatives", f"model_b | {worst}: positives"]
    fig = report.plot_distributions("g1", models=["model_b"])
    assert len(fig.axes) == 2
    with pytest.raises(KeyError, match="subgroup 'zzz'"):
        report.plot_distributions(["zzz"])


def test_plot_arguments_are_checked(report):
    with pytest.raises(KeyError, match="models \\['zzz'\\] were not evaluated"):
        report.plot_aucs(models=["zzz"])
    with pytest.raises(KeyError, match="subgroups \\['zzz'\\] were not evaluated"):
        report.plot_aegs(subgroups=["zzz"])
    with pytest.raises(ValueError, match="no interval columns"):
        report.plot_intervals()


def test_plot_subgroup_scores_from_arrays():
    from fastbias.plotting import plot_subgroup_scores

    rng = np.random.default_rng(3)
    y = rng.random(500) < 0.5
    g = rng.random(500) < 0.3
    s = np.clip(0.25 + 0.5 * y + 0.1 * g + rng.normal(0, 0.05, 500), 0, 1)
    fig = plot_subgroup_scores(y, s, g, title="scenario")
    ax = fig.axes[0]
    assert ax.get_title() == "scenario"
    assert len(ax.patches) == 4  # four density curves
    with pytest.raises(ValueError, match="y_score has 500 rows but y_true has 499"):
        plot_subgroup_scores(y[:-1], s, g)
    with pytest.raises(ValueError, match="member has 499 rows but y_true has 500"):
        plot_subgroup_scores(y, s, g[:-1])


def test_color_scale():
    from fastbias.plotting import (
        AEG_COLOR_STOPS,
        AUC_COLOR_STOPS,
        color_for,
        text_color_on,
    )

    assert color_for(0.5, AUC_COLOR_STOPS) == AUC_COLOR_STOPS[0][1]
    assert color_for(0.0, AEG_COLOR_STOPS) == "#f7f7f7"
    assert color_for(2.0, AEG_COLOR_STOPS) == AEG_COLOR_STOPS[-1][1]
    # halfway between two stops is the mean of their channels
    (p0, c0), (p1, c1) = AUC_COLOR_STOPS[0], AUC_COLOR_STOPS[1]
    mid = color_for((p0 + p1) / 2, AUC_COLOR_STOPS)
    for k in (1, 3, 5):
        assert abs(int(mid[k:k + 2], 16) - (int(c0[k:k + 2], 16) + int(c1[k:k + 2], 16)) / 2) <= 1
    assert text_color_on("#000000") == "#ffffff" and text_color_on("#ffffff") == "#000000"


def test_bias_report_one_step(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        report = fastbias.bias_report(frame, label="label", scores="model_a",
                                      subgroups=["g1", "g2"], title="one step", bins=5,
                                      subgroup_threshold=0.7)
    assert report.title == "one step"
    assert report.histograms.counts.shape == (1, 2, 4, 5)
    y = frame["label"].to_numpy() >= 0.5
    member = frame["g1"].to_numpy() >= 0.7
    want = brute_force_metrics(y, frame["model_a"].to_numpy(), member)
    got = report.result.for_model().loc["g1"]
    for metric in METRIC_COLUMNS:
        assert got[metric] == pytest.approx(want[metric], abs=1e-12)
    assert isinstance(report, BiasReport)


def test_report_with_every_auc_undefined_still_renders(tmp_path):
    df = pd.DataFrame({"y": [0, 0, 0, 0], "s": [0.1, 0.2, 0.3, 0.4], "g": [1.0, 0.0, 1.0, 0.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label="y", scores="s", subgroups=["g"])
        summary = report.summary()
        report.save(tmp_path / "one_class.html")
    assert np.isnan(summary.loc["s", "lowest_auc"])
    assert summary.loc["s", "undefined_values"] == 4  # the three AUCs and the positive AEG
    assert (tmp_path / "one_class.html").stat().st_size > 0


def test_numbers_never_show_negative_zero_and_aeg_bounds_keep_their_sign():
    from fastbias.reports.plots import number_text
    from fastbias.reports.report import _fmt_interval, _fmt_metric
    assert number_text(-0.00004, "{:+.3f}") == "+0.000"
    assert number_text(-0.0004, "{:+.4f}") == "-0.0004"
    assert number_text(-0.0, "{:.3f}") == "0.000"
    assert _fmt_metric(-0.00001, "negative_aeg") == "+0.0000"
    assert _fmt_metric(-0.25, "negative_aeg") == "-0.2500"
    assert _fmt_interval(-0.12, 0.034, "positive_aeg") == "[-0.120, +0.034]"
    assert _fmt_interval(-0.0001, 0.0002, "positive_aeg") == "[+0.000, +0.000]"
    assert _fmt_interval(0.81, 0.9, "bpsn_auc") == "[0.810, 0.900]"


def test_report_with_intervals_signs_aeg_bounds(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        report = BiasReport.from_result(frame, evaluate_quietly(frame, ci="delong"))
    text = report.to_text()
    assert re.search(r"-0\.0+\b", text) is None
    row = report.result.for_model("model_a").loc["g1"]
    low, high = row["negative_aeg_low"], row["negative_aeg_high"]
    assert low < 0 < high  # a signed interval around 0
    expected = f"[{low:+.3f}, {high:+.3f}]"
    assert expected in text
    assert expected in report.to_html()


def test_zero_width_intervals_are_marked_and_explained():
    from fastbias.reports.report import ZERO_WIDTH_MARK, ZERO_WIDTH_NOTE
    rng = np.random.default_rng(1)
    n = 400
    y = rng.random(n) < 0.5
    s = rng.normal(size=n) + y
    tiny = np.zeros(n, bool)
    tiny[np.flatnonzero(y)[:3]] = True
    tiny[np.flatnonzero(~y)[:3]] = True
    s[tiny & y] = 5.0  # perfectly separated: subgroup AUC 1 with no spread in any replicate
    s[tiny & ~y] = -5.0
    df = pd.DataFrame({"label": y, "score": s, "tiny": tiny, "half": rng.random(n) < 0.5})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fastbias.evaluate(df, label="label", scores="score", subgroups=["tiny", "half"],
                                   ci="bootstrap", n_boot=50, random_state=0)
        report = BiasReport.from_result(df, result)
    row = result.for_model().loc["tiny"]
    assert row["subgroup_auc_low"] == row["subgroup_auc_high"] == 1.0
    text = report.to_text()
    assert f"[1.000, 1.000]{ZERO_WIDTH_MARK}" in text and ZERO_WIDTH_NOTE in text
    page = report.to_html()
    assert 'class="ci zero-width"' in page and 'id="zero-width-note"' in page
    half = result.for_model().loc["half"]
    assert half["subgroup_auc_low"] < half["subgroup_auc_high"]
    n_zero = sum(int(result.table[f"{m}_low"].eq(result.table[f"{m}_high"]).sum())
                 for m in METRIC_COLUMNS)
    assert page.count('class="ci zero-width"') == n_zero


def test_bootstrap_settings_line_names_replicates_and_seed(frame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate_quietly(frame, ci="bootstrap", n_boot=40, random_state=7)
        report = BiasReport.from_result(frame, result)
    assert result.settings["n_boot"] == 40 and result.settings["random_state"] == 7
    assert "bootstrap, 95%, 40 replicates, seed 7" in report.to_html()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unseeded = BiasReport.from_result(frame, evaluate_quietly(frame, ci="bootstrap", n_boot=20))
    assert "20 replicates, no seed (not repeatable)" in unseeded.to_html()


@pytest.mark.parametrize("ci", ["delong", "bootstrap"])
def test_overall_auc_and_final_metric_intervals_reach_every_output(frame, ci, tmp_path):
    """The intervals of the overall AUC (and, from the bootstrap, of the final metric) that
    the evaluation computed are in the summary, the terminal header, the HTML summary, the CSV
    and the JSON: the same numbers as the per-model call on the arrays gives."""
    kwargs = dict(ci=ci, n_boot=60, random_state=3) if ci == "bootstrap" else dict(ci=ci)
    groups = ["g1", "g2"]  # every AUC defined, so the final metric is too
    result = fastbias.evaluate(frame, label="label", scores=MODELS, subgroups=groups, **kwargs)
    report = BiasReport.from_result(frame, result)
    summary = report.summary()
    for model in MODELS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
            alone = fastbias.bias_metrics(frame["label"].to_numpy(), frame[model].to_numpy(),
                                          {g: frame[g] for g in groups}, ci="delong",
                                          subgroup_threshold=0.5)
        low, high = summary.at[model, "overall_auc_low"], summary.at[model, "overall_auc_high"]
        assert low <= summary.at[model, "overall_auc"] <= high
        if ci == "delong":  # the arrays entry point, on its own, gives the same interval
            assert (low, high) == (alone.attrs["overall_auc_low"], alone.attrs["overall_auc_high"])
        shown = f"overall AUC {summary.at[model, 'overall_auc']:.4f} [{low:.3f}, {high:.3f}]"
        assert shown in report.to_text()
        assert f"[{low:.3f}, {high:.3f}]" in report.to_html()
        if ci == "bootstrap":
            f_low, f_high = (summary.at[model, "final_metric_low"],
                             summary.at[model, "final_metric_high"])
            assert f_low <= summary.at[model, "final_metric"] <= f_high
            assert f"[{f_low:.3f}, {f_high:.3f}]" in report.to_text().splitlines()[
                [i for i, line in enumerate(report.to_text().splitlines())
                 if line.startswith(model)][0]]
        else:
            assert "final_metric_low" not in summary.columns  # DeLong has none for it
    report.save(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    for entry in data["models"]:
        assert entry["overall_auc_low"] == summary.at[entry["name"], "overall_auc_low"]
    report.save(tmp_path / "r.csv")
    table = pd.read_csv(tmp_path / "r.csv")
    assert np.allclose(table.groupby("model")["overall_auc_high"].first()[MODELS],
                       summary.loc[MODELS, "overall_auc_high"], rtol=0, atol=1e-15)


def test_evaluate_keeps_each_models_attrs(frame):
    """What a model's own table carries (the overall AUC's interval, the number of tests)
    survives the tidy table: for_model gives it back."""
    result = evaluate_quietly(frame, ci="delong", significance="holm")
    for model in MODELS:
        attrs = result.for_model(model).attrs
        assert attrs["ci_method"] == "delong" and attrs["n_tests"] > 0
        assert attrs["overall_auc_low"] < attrs["overall_auc"] < attrs["overall_auc_high"]


@pytest.mark.parametrize("n_subgroups", [3, 40])
def test_colorbar_spans_the_heatmap_and_density_axes_are_labelled(n_subgroups):
    """A reviewer reads the colour scale against the cells: the colorbar is as tall as the
    heatmap, short or tall; the distribution panels say what their height is."""
    rng = np.random.default_rng(1)
    n = 6_000
    df = pd.DataFrame({"label": (rng.random(n) < 0.3).astype(float), "model_a": rng.random(n)})
    names = [f"group_{i}" for i in range(n_subgroups)]
    for name in names:
        df[name] = rng.random(n) < 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        result = fastbias.evaluate(df, label="label", scores="model_a", subgroups=names)
        report = BiasReport.from_result(df, result)
    fig = report.plot_aucs()
    fig.draw_without_rendering()
    heat, bar = fig.axes[0].get_position(), fig.axes[-1].get_position()
    assert bar.height == pytest.approx(heat.height, rel=0.02)
    assert bar.y0 == pytest.approx(heat.y0, abs=0.01)
    fig = report.plot_distributions(n_worst=1)
    assert all(ax.get_ylabel() == "density" for ax in fig.axes)
    assert all(ax.get_ylim()[0] == 0 for ax in fig.axes)


def test_distribution_caption_counts_in_words(report):
    assert "Score distributions of the 3 worst subgroups (line)" in report.to_html()
    assert "Score distributions of the worst subgroup (line)" in report.to_html(n_distributions=1)


def test_figures_mark_a_subgroup_a_model_lacks_absent_not_undefined():
    """Under ``nan_policy="omit"`` with ``intersections=2`` each model keeps the intersections
    large enough on its own rows: here m1 (its positives of a & b mostly missing) keeps 2
    positives there, below ``min_subgroup_size=5``, and m2 keeps it. The heatmaps and interval
    figures of both models show m1's a & b row "absent" (not a hatched "n/a": nothing was
    undefined) with a note saying so; a value that is undefined still reads "n/a"."""
    from fastbias.plotting import plot_aeg_heatmap, plot_auc_heatmap, plot_intervals

    rng = np.random.default_rng(0)
    n = 600
    a, b, y = rng.random(n) < 0.3, rng.random(n) < 0.3, rng.random(n) < 0.4
    df = pd.DataFrame({"y": y, "a": a, "b": b, "m1": np.round(rng.random(n) + 0.3 * y, 2),
                       "m2": np.round(rng.random(n) + 0.2 * y, 2)})
    both_pos = np.flatnonzero(a & b & y)
    df.loc[both_pos[:-2], "m1"] = np.nan  # m1 keeps 2 positives of a & b
    df["c"] = False
    df.loc[df.index[y][:3], "c"] = True  # c: positives alone, its subgroup AUC undefined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["m1", "m2"], subgroups=["a", "b", "c"],
                                intersections=2, min_subgroup_size=5, nan_policy="omit",
                                ci="delong")
    assert "a & b" in res.for_model("m2").index and "a & b" not in res.for_model("m1").index
    for plot in (plot_auc_heatmap, plot_aeg_heatmap):
        fig = plot(res, subgroups=["a & b", "c", "a"])
        for ax, model in zip(fig.axes, ["m1", "m2"]):
            by_row = {}
            for text in ax.texts:
                by_row.setdefault(round(text.get_position()[1]), []).append(text.get_text())
            assert by_row[0] == ["absent"] * len(by_row[0]) if model == "m1" else \
                "absent" not in by_row[0] and "n/a" not in by_row[0]
            if plot is plot_auc_heatmap:  # (c's subgroup AUC: no negatives)
                assert by_row[1][0] == "n/a"
            assert "absent" not in by_row[1] + by_row[2]
        assert "absent: that model has no such subgroup" in fig.get_supxlabel()
    fig = plot_intervals(res, subgroups=["a & b", "c", "a"])
    first = fig.axes[0]  # the subgroup AUC
    # (rows 0, 1, 2; m1 drawn 0.25 above each row's middle, m2 0.25 below)
    marks = {round(t.get_position()[1], 2): t.get_text() for t in first.texts}
    assert marks == {-0.25: "absent", 0.75: "n/a", 1.25: "n/a"}
    assert "absent" not in plot_auc_heatmap(res, models=["m2"]).get_supxlabel()
