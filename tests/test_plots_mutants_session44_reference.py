"""A mutation audit of the figures (``reports/plots.py``) by an independent reviewer
(forty-fourth session): 47 hand mutants, 44 killed, 3 equivalent. The figures are read back
from their artists and compared with independent references: brute-force pair counts
(tests/reference.py), numpy.histogram of rows picked by hand, hand-computed error rates and
colours; names that look like mathtext are drawn literally."""
import warnings

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import fastbias  # noqa: E402
from fastbias import plotting as P  # noqa: E402
from fastbias.report import score_histograms  # noqa: E402
from fastbias.reports import plots as PL  # noqa: E402

from .reference import brute_force_metrics  # noqa: E402

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
AEGS = ["negative_aeg", "positive_aeg"]
NAMES = ["$x$", "a_b", "plain", "nopos", "hi"]


def _frame():
    """60 rows, scores on a 0.05 grid (ties); '$x$' and 'a_b' are mathtext-looking names,
    'nopos' has no positives (3 metrics undefined), 'hi' is scored 0.3 higher."""
    rng = np.random.default_rng(7)
    n = 60
    y = np.zeros(n, dtype=int)
    y[rng.permutation(n)[:24]] = 1
    df = pd.DataFrame({"y": y})
    df["$x$"] = (rng.random(n) < 0.35).astype(int)
    df["a_b"] = (rng.random(n) < 0.35).astype(int)
    df["plain"] = (rng.random(n) < 0.4).astype(int)
    df["nopos"] = 0
    df.loc[np.flatnonzero(y == 0)[:5], "nopos"] = 1
    df["hi"] = (rng.random(n) < 0.3).astype(int)
    base = np.round((0.35 * y + rng.random(n) * 0.6) / 0.05) * 0.05
    df["m_a"] = np.clip(base + 0.3 * df["hi"], 0, 1)
    df["m$b$"] = np.clip(np.round((0.2 * y + rng.random(n) * 0.8) / 0.05) * 0.05, 0, 1)
    return df


@pytest.fixture(scope="module")
def data():
    df = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=["m_a", "m$b$"], subgroups=NAMES,
                                thresholds=[0.3, 0.5, 0.7])
    ref = {(m, g): brute_force_metrics(df["y"], df[m], df[g] == 1)
           for m in ["m_a", "m$b$"] for g in NAMES}
    return df, res, ref


def _ticklabels(ax, axis="y"):
    a = ax.yaxis if axis == "y" else ax.xaxis
    fmt = a.get_major_formatter()
    ticks = a.get_majorticklocs()
    return [fmt(t, i) for i, t in enumerate(ticks)]


def _ref_order(ref, models):
    low = {g: np.nanmin([ref[(m, g)][k] for m in models for k in AUCS])
           if not all(np.isnan(ref[(m, g)][k]) for m in models for k in AUCS) else np.inf
           for g in NAMES}
    return sorted(NAMES, key=lambda g: (low[g], NAMES.index(g)))


def test_worst_first_matches_brute_force_order(data):
    """Rows ordered by the lowest brute-force AUC over the models, per model subset too."""
    _, res, ref = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert P.worst_first(res) == _ref_order(ref, ["m_a", "m$b$"])
        assert P.worst_first(res, ["m_a"]) == _ref_order(ref, ["m_a"])
        assert P.worst_first(res, ["m$b$"]) == _ref_order(ref, ["m$b$"])


@pytest.mark.parametrize("kind", ["auc", "aeg"])
def test_heatmap_cells_are_brute_force_values(data, kind):
    """Every heatmap cell (image array and text) is the brute-force metric; NaN cells are
    masked in the image, hatched and say n/a; names drawn literally; scale 0.5..1 / -.5...5."""
    _, res, ref = data
    metrics, fmt = (AUCS, "{:.3f}") if kind == "auc" else (AEGS, "{:+.3f}")
    fig = P.plot_auc_heatmap(res) if kind == "auc" else P.plot_aeg_heatmap(res)
    models = ["m_a", "m$b$"]
    rows = _ticklabels(fig.axes[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert rows == _ref_order(ref, models)
    for k, model in enumerate(models):
        ax = fig.axes[k]
        assert ax.get_title() == model
        if k == 0:
            assert _ticklabels(ax, "x") == [PL.METRIC_LABELS[m].replace(" ", "\n")
                                            for m in metrics]
        image = ax.get_images()[0]
        arr = image.get_array()
        lo, hi = (0.5, 1.0) if kind == "auc" else (-0.5, 0.5)
        assert (image.norm.vmin, image.norm.vmax) == (lo, hi)
        texts = {(int(round(t.get_position()[1])), int(round(t.get_position()[0]))): t
                 for t in ax.texts}
        assert len(texts) == len(rows) * len(metrics)
        hatched = {(int(round(p.get_y() + 0.5)), int(round(p.get_x() + 0.5)))
                   for p in ax.patches if p.get_hatch()}
        for i, g in enumerate(rows):
            for j, m in enumerate(metrics):
                v = ref[(model, g)][m]
                if np.isnan(v):
                    assert arr.mask[i, j]
                    assert texts[(i, j)].get_text() == "n/a"
                    assert (i, j) in hatched
                else:
                    assert not np.ma.getmaskarray(arr)[i, j]
                    assert arr[i, j] == pytest.approx(v, abs=1e-12)
                    assert texts[(i, j)].get_text() == PL.number_text(v, fmt)
                    assert (i, j) not in hatched
    fig.canvas.draw()  # mathtext-looking names must not fail or be parsed
    for t in fig.axes[0].get_yticklabels():
        assert t.get_text() in NAMES


def test_mathtext_names_drawn_literally(data):
    """'$x$' / 'm$b$' in every figure are literal (parse_math off), and the figure renders."""
    df, res, _ = data
    figs = [P.plot_auc_heatmap(res), P.plot_aeg_heatmap(res),
            P.plot_threshold_gaps(res), P.plot_gap_curves(res, model="m$b$",
                                                          subgroups=["$x$", "a_b"]),
            P.plot_score_distributions(score_histograms(df, res, bins=5),
                                       subgroups=["$x$", "a_b"])]
    from matplotlib.text import Text
    for fig in figs:
        fig.canvas.draw()
        for ax in fig.axes:
            texts = list(ax.get_xticklabels()) + list(ax.get_yticklabels())
            for text in texts + fig.findobj(Text):
                if "$" in text.get_text() and text.get_visible():
                    assert not text.get_parse_math(), text.get_text()
    titles = [ax.get_title() for ax in figs[-1].axes]
    assert "m$b$ | $x$: negatives" in titles and "m_a | a_b: positives" in titles
    legend = figs[3].legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["$x$", "a_b"]
    assert figs[3]._suptitle.get_text() == "Gaps across thresholds, m$b$"


def _rates(df, model, g, t):
    y, s, mem = df["y"].to_numpy() == 1, df[model].to_numpy(), df[g].to_numpy() == 1
    pred = s >= t

    def rate(mask, want):
        return np.nan if mask.sum() == 0 else np.mean(pred[mask] == want)
    fpr = rate(mem & ~y, True) - rate(~mem & ~y, True)
    fnr = rate(mem & y, False) - rate(~mem & y, False)
    return fpr, fnr


def test_threshold_gap_bars_are_hand_rates(data):
    """Bars = subgroup minus background FPR/FNR (score >= t) counted by hand; rows ordered by
    the largest |gap|; undefined gap: no bar and an 'n/a'; title names the threshold."""
    df, res, _ = data
    for t in (0.3, 0.5):
        fig = P.plot_threshold_gaps(res, threshold=t)
        rows = _ticklabels(fig.axes[0])
        gaps = {(m, g): _rates(df, m, g, t) for m in ["m_a", "m$b$"] for g in NAMES}
        size = {g: np.nanmax([abs(x) for m in ["m_a", "m$b$"] for x in gaps[(m, g)]])
                for g in NAMES}
        assert rows == sorted(NAMES, key=lambda g: (-size[g], NAMES.index(g)))
        from matplotlib.container import BarContainer
        for ax, which, title in zip(fig.axes, (0, 1), ("FPR gap", "FNR gap")):
            assert ax.get_title() == f"{title} at {t:g}"
            bars = [c for c in ax.containers if isinstance(c, BarContainer)]
            assert [b.get_label() for b in bars] == ["m_a", "m$b$"]
            for b in bars:
                drawn = {}
                for patch in b.patches:
                    drawn[rows[int(round(patch.get_y() + patch.get_height() / 2))]] = \
                        patch.get_width()
                expect = {g: gaps[(b.get_label(), g)][which] for g in NAMES}
                assert set(drawn) == {g for g in NAMES if not np.isnan(expect[g])}
                for g, w in drawn.items():
                    assert w == pytest.approx(expect[g], abs=1e-12)
            na = [tx for tx in ax.texts if tx.get_text() == "n/a"]
            n_undef = sum(np.isnan(gaps[(m, g)][which]) for m in ["m_a", "m$b$"] for g in NAMES)
            assert len(na) == n_undef


def test_threshold_shown_picks_nearest_half_and_rejects_unknown(data):
    _, res, _ = data
    assert PL.threshold_shown(res) == 0.5
    assert PL.threshold_shown(res, 0.1 * 3) == 0.3
    assert PL.threshold_shown(res, 0.7) == 0.7
    with pytest.raises(ValueError, match="0.4"):
        PL.threshold_shown(res, 0.4)


def test_gap_curves_are_hand_rates(data):
    """Curves: per threshold, the hand-counted gaps, x sorted; the chosen threshold dotted."""
    df, res, _ = data
    fig = P.plot_gap_curves(res, model="m_a", subgroups=["hi", "plain"], threshold=0.3)
    for ax, which in zip(fig.axes, (0, 1)):
        lines = [ln for ln in ax.lines if not ln.get_label().startswith("_")]
        assert [ln.get_label() for ln in lines] == ["hi", "plain"]
        for ln in lines:
            x, yv = ln.get_data()
            assert list(x) == [0.3, 0.5, 0.7]
            exp = [_rates(df, "m_a", ln.get_label(), t)[which] for t in (0.3, 0.5, 0.7)]
            np.testing.assert_allclose(yv, exp, atol=1e-12)
        vlines = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
        assert vlines and list(vlines[0].get_xdata()) == [0.3, 0.3]


def test_score_distribution_densities_are_numpy_histograms(data):
    """Stairs = numpy.histogram of the rows picked by hand, normalised to unit area; the n in
    the legends is the row count; a subgroup without positives says so and draws no line."""
    df, res, _ = data
    bins = 5
    h = score_histograms(df, res, bins=bins)
    edges = np.linspace(0, 1, bins + 1)
    fig = P.plot_score_distributions(h, subgroups=["hi", "nopos"], models=["m_a"])
    axes = np.array(fig.axes).reshape(2, 2)
    y = df["y"].to_numpy() == 1
    for i, g in enumerate(["hi", "nopos"]):
        mem = df[g].to_numpy() == 1
        for j, (cls, label) in enumerate(((~y, "negatives"), (y, "positives"))):
            ax = axes[i, j]
            assert ax.get_title() == f"m_a | {g}: {label}"
            from matplotlib.patches import StepPatch
            stairs = [a for a in ax.patches if isinstance(a, StepPatch)]
            sub_rows, bg_rows = df["m_a"].to_numpy()[mem & cls], df["m_a"].to_numpy()[~mem & cls]
            bg_counts, _ = np.histogram(bg_rows, bins=edges)
            expect = [bg_counts / bg_counts.sum() / np.diff(edges)]
            labels = [f"background (n={bg_rows.size:,})"]
            if sub_rows.size:
                c, _ = np.histogram(sub_rows, bins=edges)
                expect.append(c / c.sum() / np.diff(edges))
                labels.append(f"subgroup (n={sub_rows.size:,})")
            else:
                assert [t.get_text() for t in ax.texts] == ["no subgroup rows"]
            assert [s.get_label() for s in stairs] == labels
            for s, e in zip(stairs, expect):
                np.testing.assert_allclose(s.get_data().values, e, atol=1e-12)
                np.testing.assert_allclose(s.get_data().edges, edges)
            assert ax.get_xlim() == (0.0, 1.0)
            assert ax.get_ylim()[0] == 0


def test_subgroup_scores_four_curves_are_numpy_histograms():
    """plot_subgroup_scores: the four curves are unit-area numpy histograms of their rows
    (scores outside the range clipped into the end bins), filled = background."""
    rng = np.random.default_rng(3)
    y = rng.random(50) < 0.4
    s = rng.random(50) * 1.4 - 0.2
    g = rng.random(50) < 0.3
    fig = P.plot_subgroup_scores(y, s, g, bins=4, title="$a_b$")
    ax = fig.axes[0]
    assert ax.get_title() == "$a_b$"
    edges = np.linspace(0, 1, 5)
    from matplotlib.patches import StepPatch
    stairs = {p.get_label(): p for p in ax.patches if isinstance(p, StepPatch)}
    for label, mask, filled in (("background negatives", ~g & ~y, True),
                                ("background positives", ~g & y, True),
                                ("subgroup negatives", g & ~y, False),
                                ("subgroup positives", g & y, False)):
        c, _ = np.histogram(np.clip(s[mask], 0, 1), bins=edges)
        np.testing.assert_allclose(stairs[label].get_data().values,
                                   c / c.sum() / np.diff(edges), atol=1e-12)
        assert stairs[label].get_fill() is filled
    assert ax.get_xlim() == (0.0, 1.0)


def test_intervals_points_are_brute_force_and_nan_marked(data):
    """Interval figure: points = brute-force values; segments = the table's bounds (the claim
    'the figure shows the table'); an undefined value has no point and an 'n/a'."""
    df, res, ref = data
    table = res.table.copy()
    for m in AUCS + AEGS:
        table[f"{m}_low"] = table[m] - 0.01
        table[f"{m}_high"] = table[m] + 0.02
    res.table = table
    try:
        fig = P.plot_intervals(res)
    finally:
        for m in AUCS + AEGS:
            del res.table[f"{m}_low"], res.table[f"{m}_high"]
    rows = _ticklabels(fig.axes[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert rows == _ref_order(ref, ["m_a", "m$b$"])
    assert [ax.get_title() for ax in fig.axes] == [PL.METRIC_LABELS[m] for m in AUCS + AEGS]
    offsets = {"m_a": -0.25, "m$b$": 0.25}
    for ax, metric in zip(fig.axes, AUCS + AEGS):
        assert len(ax.containers) == 2
        for c in ax.containers:
            model = c.get_label()
            line, _caps, (bars,) = c.lines
            xs, ys = line.get_data()
            seen = set()
            for x, yy, seg in zip(xs, ys, bars.get_segments()):
                i = int(round(yy - offsets[model]))
                assert yy - i == pytest.approx(offsets[model])
                g = rows[i]
                seen.add(g)
                assert x == pytest.approx(ref[(model, g)][metric], abs=1e-12)
                assert seg[0][0] == pytest.approx(x - 0.01)
                assert seg[1][0] == pytest.approx(x + 0.02)
            assert seen == {g for g in NAMES if not np.isnan(ref[(model, g)][metric])}
        n_na = sum(np.isnan(ref[(m, g)][metric]) for m in offsets for g in NAMES)
        assert len([t for t in ax.texts if t.get_text() == "n/a"]) == n_na
        zero = [ln for ln in ax.lines if ln.get_linestyle() == ":"]
        assert bool(zero) == (metric in AEGS)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["m_a", "m$b$"]
    # (intervals put in the table by hand: no level is claimed; the settings hold the
    # default confidence 0.95 of an evaluation that made none. It said "95% intervals")
    assert fig._suptitle.get_text() == "Metrics with intervals (worst first)"
    res90 = fastbias.evaluate(df, label="y", scores=["m_a"], subgroups=["plain", "hi"],
                              ci="delong", confidence=0.9)
    fig = P.plot_intervals(res90)
    assert fig._suptitle.get_text().startswith("Metrics with 90% delong intervals")


def test_intervals_hollow_point_where_interval_undefined(data):
    """A value whose interval is undefined: a hollow point at the value, no error bar."""
    _, res, ref = data
    table = res.table.copy()
    table["subgroup_auc_low"] = table["subgroup_auc"] - 0.01
    table["subgroup_auc_high"] = table["subgroup_auc"] + 0.01
    pick = (table.model == "m_a") & (table.subgroup == "hi")
    table.loc[pick, "subgroup_auc_low"] = np.nan
    saved, res.table = res.table, table
    try:
        fig = P.plot_intervals(res, subgroups=["plain", "hi"], models=["m_a"])
    finally:
        res.table = saved
    ax = fig.axes[0]
    assert len(fig.axes) == 1
    pts = ax.containers[0].lines[0].get_data()
    assert list(pts[1]) == [0.0]
    assert pts[0][0] == pytest.approx(ref[("m_a", "plain")]["subgroup_auc"])
    hollow = [ln for ln in ax.lines if ln.get_markerfacecolor() == "none"]
    assert len(hollow) == 1
    assert list(hollow[0].get_ydata()) == [1.0]
    assert hollow[0].get_xdata()[0] == pytest.approx(ref[("m_a", "hi")]["subgroup_auc"])
    assert fig._suptitle.get_text() == "Metrics with intervals"


def test_max_subgroups_cut_and_title(data):
    """max_subgroups keeps the k worst (brute-force order) and the title says 'k of n'."""
    _, res, ref = data
    fig = P.plot_auc_heatmap(res, max_subgroups=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert _ticklabels(fig.axes[0]) == _ref_order(ref, ["m_a", "m$b$"])[:2]
    assert fig._suptitle.get_text() == "AUCs per subgroup (worst first, 2 of 5)"
    fig = P.plot_aeg_heatmap(res, subgroups=["hi", "$x$"], models=["m$b$"])
    assert _ticklabels(fig.axes[0]) == ["hi", "$x$"]
    assert fig._suptitle.get_text() == "Average Equality Gaps per subgroup"
    assert fig.axes[0].get_title() == "m$b$"
    with pytest.raises(KeyError, match="nope"):
        P.plot_auc_heatmap(res, subgroups=["nope"])
    with pytest.raises(KeyError, match="m_c"):
        P.plot_auc_heatmap(res, models=["m_c"])
    with pytest.raises(ValueError):
        P.plot_auc_heatmap(res, subgroups=[])


def test_color_scale_by_hand():
    """color_for: piecewise-linear between stops (hand interpolation), ends clamp, NaN None."""
    def hand(v, stops):
        for (p0, c0), (p1, c1) in zip(stops, stops[1:]):
            if p0 <= v <= p1:
                t = (v - p0) / (p1 - p0)
                a = [int(c0[i:i + 2], 16) for i in (1, 3, 5)]
                b = [int(c1[i:i + 2], 16) for i in (1, 3, 5)]
                return [x + t * (z - x) for x, z in zip(a, b)]

    def close(got, want):  # (within 0.5 of a channel: a midpoint may round either way)
        return all(abs(int(got[i:i + 2], 16) - w) <= 0.5 + 1e-9
                   for i, w in zip((1, 3, 5), want))
    for v in (0.5, 0.55, 0.6, 0.7, 0.75, 0.85, 0.93, 0.97, 1.0):
        assert close(P.color_for(v, P.AUC_COLOR_STOPS), hand(v, P.AUC_COLOR_STOPS)), v
    for v in (-0.5, -0.3, -0.1, 0.0, 0.1, 0.4, 0.5):
        assert close(P.color_for(v, P.AEG_COLOR_STOPS), hand(v, P.AEG_COLOR_STOPS)), v
    for p, c in P.AUC_COLOR_STOPS + P.AEG_COLOR_STOPS:
        assert P.color_for(p, P.AUC_COLOR_STOPS if p >= 0.5 and c in dict(
            P.AUC_COLOR_STOPS).values() else P.AEG_COLOR_STOPS) == c
    assert P.color_for(0.1, P.AUC_COLOR_STOPS) == "#a50026"
    assert P.color_for(2.0, P.AUC_COLOR_STOPS) == "#74add1"
    assert P.color_for(-9, P.AEG_COLOR_STOPS) == "#2166ac"
    assert P.color_for(np.nan, P.AUC_COLOR_STOPS) is None
    assert PL.text_color_on("#ffffff") == "#000000"
    assert PL.text_color_on("#000000") == "#ffffff"
    assert PL.text_color_on("#a50026") == "#ffffff"


def test_number_and_percent_text():
    assert PL.number_text(-0.0004, "{:.3f}") == "0.000"
    assert PL.number_text(-0.0004, "{:+.3f}") == "+0.000"
    assert PL.number_text(-0.0006, "{:+.3f}") == "-0.001"
    assert PL.number_text(0.9996, "{:.3f}") == "1.000"
    assert PL.percent_text(0.999) == "99.9%"
    assert PL.percent_text(0.95) == "95%"


def test_series_colors_distinct():
    for n in (1, 6, 7, 20, 21, 30):
        c = PL.series_colors(n)
        assert len(c) == n and len(set(c)) == n


def test_subgroup_with_every_auc_undefined_comes_last(data):
    """worst_first: a subgroup whose three AUCs are NaN for every model is ranked last, after
    the brute-force order of the others (kills mutant 'undefined subgroups first')."""
    _, res, ref = data
    saved = res.table
    table = saved.copy()
    table.loc[table.subgroup == "hi", AUCS] = np.nan
    res.table = table
    try:
        order = P.worst_first(res)
        fig = P.plot_auc_heatmap(res)
    finally:
        res.table = saved
    rest = [g for g in NAMES if g != "hi"]
    low = {g: np.nanmin([ref[(m, g)][k] for m in ["m_a", "m$b$"] for k in AUCS]) for g in rest}
    assert order == sorted(rest, key=lambda g: (low[g], NAMES.index(g))) + ["hi"]
    assert _ticklabels(fig.axes[0])[-1] == "hi"
    assert [t.get_text() for t in fig.axes[0].texts
            if int(round(t.get_position()[1])) == 4] == ["n/a"] * 3


def test_empty_subgroups_refused_with_message(data):
    """subgroups=[] is refused by name, in every figure by subgroup (kills 'empty subgroups
    not refused', which failed later with max() of an empty sequence)."""
    _, res, _ = data
    for plot in (P.plot_auc_heatmap, P.plot_aeg_heatmap):
        with pytest.raises(ValueError, match="no subgroups to plot"):
            plot(res, subgroups=[])
