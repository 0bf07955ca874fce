"""An independent review's tests (2026-11-27): several models whose subgroup lists differ (nan_policy="omit" with
intersections= / several sensitive_features), through every API that shows or uses several
models. Every number is compared with a brute-force reference written here (pair counts in
exact fractions over each model's own rows), never with fastbias's own output.

Found by review (each failed before its fix): ``BiasReport.worst_subgroups()`` dropped
what only some models have (``zip`` of the models' rankings stopped at the shortest), and the
report's heatmaps and captions with it ("all 7 subgroups" of 8); ``worst_gaps``,
``plot_threshold_gaps(models=["m1"])`` and ``plot_gap_curves(model="m1")`` showed m1 a
subgroup it does not have, and the gap curves' caption counted the union; the union of the
models' subgroups (``EvaluationResult.subgroups``, ``wide()``) put a combination only one model
keeps last, not in the documented order (now ``frame.merged_order``); the distributions figure
drew a model's densities in a subgroup it did not keep (now said absent).
"""
from __future__ import annotations

import itertools
import json
import math
import sys
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.reports.plots import worst_gaps

from . import cli_runner

matplotlib = pytest.importorskip("matplotlib")
from fastbias.plotting import (  # noqa: E402
    plot_aeg_heatmap,
    plot_auc_heatmap,
    plot_gap_curves,
    plot_intervals,
    plot_threshold_gaps,
)

AUCS = ["subgroup_auc", "bpsn_auc", "bnsp_auc"]
METRICS = AUCS + ["negative_aeg", "positive_aeg"]
MIN_SIZE = 5
THRESHOLDS = [0.3, 0.5, 0.7]


# --------------------------------------------------------------------------- reference

def ref_auc(neg, pos):
    """P(s(pos) > s(neg)) + 1/2 P(equal), exact; None when a side is empty."""
    neg, pos = np.asarray(neg, float), np.asarray(pos, float)
    if len(neg) == 0 or len(pos) == 0:
        return None
    gt = int((pos[:, None] > neg[None, :]).sum())
    eq = int((pos[:, None] == neg[None, :]).sum())
    return Fraction(2 * gt + eq, 2 * len(neg) * len(pos))


def ref_row(y, s, member):
    dn, dp = s[~member & ~y], s[~member & y]
    gn, gp = s[member & ~y], s[member & y]
    out = {"subgroup_size": int(member.sum()), "subgroup_negatives": len(gn),
           "subgroup_positives": len(gp), "background_negatives": len(dn),
           "background_positives": len(dp),
           "subgroup_auc": ref_auc(gn, gp), "bpsn_auc": ref_auc(gn, dp),
           "bnsp_auc": ref_auc(dn, gp)}
    a = ref_auc(gn, dn)
    out["negative_aeg"] = None if a is None else Fraction(1, 2) - a
    a = ref_auc(gp, dp)
    out["positive_aeg"] = None if a is None else Fraction(1, 2) - a
    return out


def ref_groups_intersections(df, names, order):
    """[(name, mask, is_base)]: the subgroups, then pairs (and triples) in the documented
    order."""
    groups = [(g, df[g].to_numpy(bool), True) for g in names]
    for k in range(2, order + 1):
        for combo in itertools.combinations(names, k):
            mask = np.logical_and.reduce([df[g].to_numpy(bool) for g in combo])
            groups.append((" & ".join(combo), mask, False))
    return groups


def ref_groups_features(df, features):
    groups = []
    for f in features:
        for v in sorted(df[f].unique()):
            groups.append((f"{f}={v}", (df[f] == v).to_numpy(), True))
    values = [sorted(df[f].unique()) for f in features]
    for combo in itertools.product(*values):
        mask = np.logical_and.reduce([(df[f] == v).to_numpy() for f, v in zip(features, combo)])
        groups.append((" & ".join(f"{f}={v}" for f, v in zip(features, combo)), mask, False))
    return groups


def ref_model(df, model, groups, min_size):
    """{name: row} for one model on its own rows (score present), the combinations kept with
    at least min_size rows of each class, in order."""
    keep = df[model].notna().to_numpy()
    y = df["y"].to_numpy(bool)[keep]
    s = df[model].to_numpy(float)[keep]
    out = {}
    for name, mask, base in groups:
        m = mask[keep]
        if not base and (int((m & y).sum()) < min_size or int((m & ~y).sum()) < min_size):
            continue
        if not base and int(m.sum()) == 0:
            continue
        out[name] = ref_row(y, s, m)
    out_auc = ref_auc(s[~y], s[y])
    return out, out_auc


def ref_final(rows, overall, names, p=-5):
    means = []
    for metric in AUCS:
        vals = [float(rows[g][metric]) for g in names]
        means.append((sum(v ** p for v in vals) / len(vals)) ** (1 / p))
    return 0.25 * float(overall) + 0.75 * sum(means) / 3


def ref_threshold_gaps(df, model, groups_rows, t):
    """{(subgroup): (fpr_gap, fnr_gap)} exact, on the model's own rows."""
    keep = df[model].notna().to_numpy()
    y = df["y"].to_numpy(bool)[keep]
    s = df[model].to_numpy(float)[keep]
    pred = s >= t
    out = {}
    for name, mask in groups_rows.items():
        m = mask[keep]

        def rate(sel):
            return Fraction(int((pred & sel).sum()), int(sel.sum())) if sel.sum() else None
        fs, fb = rate(m & ~y), rate(~m & ~y)
        ts, tb = rate(m & y), rate(~m & y)
        out[name] = (None if fs is None or fb is None else fs - fb,
                     None if ts is None or tb is None else (1 - ts) - (1 - tb))
    return out


def holm(p):
    p = np.asarray(p, float)
    order = np.argsort(p, kind="stable")
    k = len(p)
    adj = np.empty(k)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (k - rank) * p[i]))
        adj[i] = running
    return adj


# --------------------------------------------------------------------------- data

def _inter_frame(seed=0, m2_perfect_ab=False):
    rng = np.random.default_rng(seed)
    n = 600
    a = rng.random(n) < 0.3
    b = rng.random(n) < 0.3
    y = rng.random(n) < 0.4
    m1 = np.round(rng.random(n) + 0.3 * y, 2)  # (rounded: ties)
    m2 = np.round(rng.random(n) + 0.2 * y, 2)
    if m2_perfect_ab:
        sel = a & b
        m2[sel & y], m2[sel & ~y] = 5.0, -5.0
    df = pd.DataFrame({"y": y, "a": a, "b": b, "m1": m1, "m2": m2})
    ab = np.flatnonzero(a & b)
    pos = ab[y[ab]]
    df.loc[pos[:-2], "m1"] = np.nan  # a & b keeps 2 positives for m1: below MIN_SIZE
    return df


def _feature_frame(seed=1, m2_bad=False):
    rng = np.random.default_rng(seed)
    n = 600
    race = rng.choice(["r1", "r2"], n)
    gender = rng.choice(["g1", "g2"], n)
    y = rng.random(n) < 0.4
    m1 = np.round(rng.random(n) + 0.3 * y, 2)
    m2 = np.round(rng.random(n) + 0.2 * y, 2)
    sel = (race == "r1") & (gender == "g1")
    if m2_bad:  # m2 worst on the combination m1 lacks
        m2[sel & y], m2[sel & ~y] = -5.0, 5.0
    else:  # m2 best there: ranked last by m2
        m2[sel & y], m2[sel & ~y] = 5.0, -5.0
    df = pd.DataFrame({"y": y, "race": race, "gender": gender, "m1": m1, "m2": m2})
    idx = np.flatnonzero(sel & y)
    df.loc[idx[:-2], "m1"] = np.nan
    return df


INTER_KW = dict(label="y", scores=["m1", "m2"], subgroups=["a", "b"], intersections=2,
                min_subgroup_size=MIN_SIZE, nan_policy="omit")
FEAT_KW = dict(label="y", scores=["m1", "m2"], subgroups=[],
               sensitive_features=["race", "gender"], min_subgroup_size=MIN_SIZE,
               nan_policy="omit")


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(scope="module")
def inter():
    df = _inter_frame()
    rep = _quiet(fastbias.bias_report, df, thresholds=THRESHOLDS, **INTER_KW)
    groups = ref_groups_intersections(df, ["a", "b"], 2)
    refs = {m: ref_model(df, m, groups, MIN_SIZE) for m in ("m1", "m2")}
    return df, rep, groups, refs


@pytest.fixture(scope="module")
def feat():
    df = _feature_frame()
    rep = _quiet(fastbias.bias_report, df, thresholds=THRESHOLDS, **FEAT_KW)
    groups = ref_groups_features(df, ["race", "gender"])
    refs = {m: ref_model(df, m, groups, MIN_SIZE) for m in ("m1", "m2")}
    return df, rep, groups, refs


def _check_rows(frame, ref_rows, model):
    assert list(frame.index) == list(ref_rows), (model, list(frame.index), list(ref_rows))
    for g, ref in ref_rows.items():
        row = frame.loc[g]
        for col, v in ref.items():
            if v is None:
                assert math.isnan(row[col]), (model, g, col)
            elif isinstance(v, Fraction):
                assert row[col] == pytest.approx(float(v), abs=1e-12), (model, g, col)
            else:
                assert int(row[col]) == v, (model, g, col)


# --------------------------------------------------------------------------- numbers

@pytest.mark.parametrize("which", ["inter", "feat"])
@pytest.mark.parametrize("model", ["m1", "m2"])
def test_for_model_rows_equal_reference(which, model, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    _check_rows(rep.result.for_model(model), refs[model][0], model)
    assert rep.result.overall_auc[model] == pytest.approx(float(refs[model][1]), abs=1e-12)


def test_models_really_differ(inter, feat):
    assert "a & b" not in inter[3]["m1"][0] and "a & b" in inter[3]["m2"][0]
    combo = "race=r1 & gender=g1"
    assert combo not in feat[3]["m1"][0] and combo in feat[3]["m2"][0]


@pytest.mark.parametrize("which", ["inter", "feat"])
def test_final_metric_per_model(which, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    for model in ("m1", "m2"):
        rows, overall = refs[model]
        if which == "inter":  # intersections left out of the final metric
            names = [g for g in rows if " & " not in g]
        else:  # the features' combinations counted
            names = list(rows)
        want = ref_final(rows, overall, names)
        assert rep.result.final_metric()[model] == pytest.approx(want, abs=1e-12)
        assert rep.final_metrics()[model] == pytest.approx(want, abs=1e-12)
        assert rep.summary().at[model, "final_metric"] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("which", ["inter", "feat"])
def test_summary_extremes_of_own_rows(which, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    summary = rep.summary()
    for model in ("m1", "m2"):
        rows = refs[model][0]
        aucs = {(g, m): float(r[m]) for g, r in rows.items() for m in AUCS}
        aegs = {(g, m): float(r[m]) for g, r in rows.items()
                for m in ("negative_aeg", "positive_aeg")}
        assert summary.at[model, "lowest_auc"] == pytest.approx(min(aucs.values()), abs=1e-12)
        assert summary.at[model, "lowest_auc_subgroup"] in rows
        assert abs(summary.at[model, "largest_abs_aeg"]) == pytest.approx(
            max(abs(v) for v in aegs.values()), abs=1e-12)
        assert summary.at[model, "undefined_values"] == 0


@pytest.mark.parametrize("which", ["inter", "feat"])
def test_to_frame_and_json_rows(which, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    frame = rep.to_frame()
    data = json.loads(rep.to_json())
    for model in ("m1", "m2"):
        rows = refs[model][0]
        part = frame[frame["model"] == model].set_index("subgroup")
        assert sorted(part.index) == sorted(rows)
        got = {r["subgroup"]: r for r in
               next(m for m in data["models"] if m["name"] == model)["subgroups"]}
        assert sorted(got) == sorted(rows)
        for g, ref in rows.items():
            for metric in METRICS:
                assert part.at[g, metric] == pytest.approx(float(ref[metric]), abs=1e-12)
                assert got[g][metric] == pytest.approx(float(ref[metric]), abs=1e-12)
            assert got[g]["subgroup_size"] == ref["subgroup_size"]


@pytest.mark.parametrize("which", ["inter", "feat"])
def test_threshold_table_own_rows(which, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    at = rep.result.thresholds
    masks = {name: mask for name, mask, _ in groups}
    for model in ("m1", "m2"):
        rows = refs[model][0]
        part = at[at["model"] == model]
        assert set(part["subgroup"]) == set(rows)
        for t in THRESHOLDS:
            want = ref_threshold_gaps(df, model, {g: masks[g] for g in rows}, t)
            sub = part[part["threshold"] == t].set_index("subgroup")
            for g, (fpr, fnr) in want.items():
                assert sub.at[g, "fpr_gap"] == pytest.approx(float(fpr), abs=1e-12)
                assert sub.at[g, "fnr_gap"] == pytest.approx(float(fnr), abs=1e-12)


@pytest.mark.parametrize("which", ["inter", "feat"])
@pytest.mark.parametrize("top", [None, 1, 2])
def test_to_text_blocks_show_own_rows(which, top, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    text = rep.to_text(max_subgroups=top)
    blocks = text.split("\n\n")
    for model in ("m1", "m2"):
        rows = refs[model][0]
        block = next(b for b in blocks if b.startswith(f"{model}  overall AUC"))
        shown = [line.split("  ")[0] for line in block.splitlines()[3:]]
        assert set(shown) <= set(rows), (model, shown)
        assert len(shown) == (len(rows) if top is None else min(top, len(rows)))
        for line in block.splitlines()[3:]:
            g = line.split("  ")[0]
            assert f"{float(rows[g]['subgroup_auc']):.4f}" in line


@pytest.mark.parametrize("which", ["inter", "feat"])
def test_html_tables_show_own_rows(which, request):
    import re
    df, rep, groups, refs = request.getfixturevalue(which)
    html_text = _quiet(rep.to_html)
    for model in ("m1", "m2"):
        rows = refs[model][0]
        m = re.search(r'<table class="metrics" data-model="%s">(.*?)</table>' % model,
                      html_text, re.S)
        assert m
        names = re.findall(r"<tr><td>(.*?)</td>", m.group(1))
        names = [re.sub(r"<[^>]+>", "", n).replace("&amp;", "&") for n in names]
        assert sorted(names) == sorted(rows), (model, names)


@pytest.mark.parametrize("which", ["inter", "feat"])
@pytest.mark.parametrize("model", ["m1", "m2"])
def test_worst_subgroups_per_model_is_own_ranking(which, model, request):
    df, rep, groups, refs = request.getfixturevalue(which)
    rows = refs[model][0]
    order = rep.worst_subgroups(model=model)
    assert sorted(order) == sorted(rows)
    lows = [min(float(rows[g][m]) for m in AUCS) for g in order]
    assert lows == sorted(lows)


@pytest.mark.parametrize("fn", [plot_auc_heatmap, plot_aeg_heatmap])
def test_heatmap_one_model_own_rows(inter, fn):
    df, rep, groups, refs = inter
    fig = fn(rep.result, models=["m1"])
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(ticks) == sorted(refs["m1"][0])


@pytest.mark.parametrize("ci", ["delong", "bootstrap", "bernstein"])
def test_intervals_report_no_crash_and_point_values(ci):
    df = _inter_frame(seed=3)
    extra = dict(n_boot=40, random_state=0) if ci == "bootstrap" else {}
    rep = _quiet(fastbias.bias_report, df, ci=ci, **INTER_KW, **extra)
    groups = ref_groups_intersections(df, ["a", "b"], 2)
    for model in ("m1", "m2"):
        rows = ref_model(df, model, groups, MIN_SIZE)[0]
        part = rep.result.for_model(model)
        assert sorted(part.index) == sorted(rows)
        for g in rows:
            for metric in METRICS:
                assert part.at[g, metric] == pytest.approx(float(rows[g][metric]), abs=1e-12)
                low, high = part.at[g, f"{metric}_low"], part.at[g, f"{metric}_high"]
                if not (math.isnan(low) or math.isnan(high)):
                    assert low <= part.at[g, metric] + 1e-12 <= high + 2e-12
    fig = plot_intervals(rep.result, models=["m1"])
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "a & b" not in ticks
    assert _quiet(rep.to_html)


def test_holm_family_is_each_models_own_rows():
    df = _inter_frame(seed=4, m2_perfect_ab=True)
    res = _quiet(fastbias.evaluate, df, significance="holm", **INTER_KW)
    groups = ref_groups_intersections(df, ["a", "b"], 2)
    for model in ("m1", "m2"):
        rows = ref_model(df, model, groups, MIN_SIZE)[0]
        part = res.for_model(model)
        assert sorted(part.index) == sorted(rows)
        raw = part[[f"{m}_pvalue" for m in METRICS]].to_numpy().ravel()
        adj = part[[f"{m}_pvalue_adjusted" for m in METRICS]].to_numpy().ravel()
        ok = ~np.isnan(raw)
        assert ok.sum() == 5 * len(rows)
        np.testing.assert_allclose(adj[ok], holm(raw[ok]), rtol=1e-12, atol=0)


def test_exclude_policy_own_rows():
    df = _inter_frame(seed=5)
    df["a"] = df["a"].astype(float)
    df.loc[[0, 1, 2, 3], "a"] = np.nan
    res = _quiet(fastbias.evaluate, df, missing_subgroup="exclude", **INTER_KW)
    for model in ("m1", "m2"):
        keep = df[model].notna().to_numpy()
        y = df["y"].to_numpy(bool)
        s = df[model].to_numpy(float)
        annotated_a = df["a"].notna().to_numpy()
        a = df["a"].fillna(0).to_numpy() >= 0.5
        b = df["b"].to_numpy(bool)
        part = res.for_model(model)
        for g, mask, universe in [("a", a, annotated_a), ("b", b, np.ones(len(df), bool)),
                                  ("a & b", a & b, annotated_a)]:
            u = keep & universe
            m = mask[u]
            yy, ss = y[u], s[u]
            if g == "a & b" and (int((m & yy).sum()) < MIN_SIZE or int((m & ~yy).sum()) < MIN_SIZE):
                assert g not in part.index
                continue
            ref = ref_row(yy, ss, m)
            for metric in METRICS:
                assert part.at[g, metric] == pytest.approx(float(ref[metric]), abs=1e-12)
            assert int(part.at[g, "background_negatives"]) == ref["background_negatives"]
    assert "a & b" not in res.for_model("m1").index


def test_cli_outputs_per_model(tmp_path):
    df = _inter_frame(seed=6, m2_perfect_ab=True)
    data = tmp_path / "d.csv"
    df.assign(y=df.y.astype(int), a=df.a.astype(int), b=df.b.astype(int)).to_csv(data, index=False)
    out_csv, out_json, out_html = tmp_path / "o.csv", tmp_path / "o.json", tmp_path / "o.html"
    cmd = [sys.executable, "-m", "fastbias", "report", str(data), "--label", "y", "--scores",
           "m1", "m2", "--subgroups", "a", "b", "--intersections", "2", "--min-subgroup-size",
           str(MIN_SIZE), "--nan-policy", "omit", "--top", "1", "--out", str(out_csv),
           "--out", str(out_json), "--out", str(out_html)]
    r = cli_runner.run_cli(cmd[3:])
    assert r.returncode == 0, r.stderr
    groups = ref_groups_intersections(df, ["a", "b"], 2)
    table = pd.read_csv(out_csv)
    js = json.loads(out_json.read_text())
    for model in ("m1", "m2"):
        rows = ref_model(df, model, groups, MIN_SIZE)[0]
        part = table[table["model"] == model].set_index("subgroup")
        assert sorted(part.index) == sorted(rows)
        jrows = {x["subgroup"]: x for x in
                 next(m for m in js["models"] if m["name"] == model)["subgroups"]}
        assert sorted(jrows) == sorted(rows)
        for g in rows:
            for metric in METRICS:
                assert part.at[g, metric] == pytest.approx(float(rows[g][metric]), abs=1e-12)
                assert jrows[g][metric] == pytest.approx(float(rows[g][metric]), abs=1e-12)
    assert "a & b" not in r.stdout.split("m2  overall AUC")[0]


def test_wide_marks_absent_as_nan_not_number(inter):
    df, rep, groups, refs = inter
    wide = rep.result.wide()
    assert wide.loc["a & b", ("subgroup_auc", "m1")] != wide.loc["a & b", ("subgroup_auc", "m1")]
    assert wide.loc["a & b", ("subgroup_auc", "m2")] == pytest.approx(
        float(refs["m2"][0]["a & b"]["subgroup_auc"]), abs=1e-12)


# --------------------------------------------------------------------------- defects

def test_worst_subgroups_keeps_every_models_subgroups(feat):
    df, rep, groups, refs = feat
    union = set(refs["m1"][0]) | set(refs["m2"][0])
    assert set(rep.worst_subgroups()) == union


def test_figures_heatmap_keeps_every_models_subgroups(feat):
    df, rep, groups, refs = feat
    figs = {key: (caption, fig) for key, caption, fig in rep.figures()}
    caption, fig = figs["aucs"]
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "race=r1 & gender=g1" in ticks  # m2 has it
    assert "all 7 subgroups" not in caption


def test_worst_gaps_lists_only_the_models_subgroups(inter):
    df, rep, groups, refs = inter
    assert "a & b" not in worst_gaps(rep.result, 0.5, ["m1"])


def test_plot_threshold_gaps_one_model_shows_only_its_rows(inter):
    df, rep, groups, refs = inter
    fig = plot_threshold_gaps(rep.result, models=["m1"])
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(ticks) == sorted(refs["m1"][0])


def test_plot_gap_curves_legend_names_only_its_subgroups(inter):
    df, rep, groups, refs = inter
    fig = plot_gap_curves(rep.result, model="m1", n_subgroups=4)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert sorted(legend) == sorted(refs["m1"][0])


def test_gap_curves_caption_counts_the_models_rows(inter):
    df, rep, groups, refs = inter
    caption = next(c for k, c, f in rep.figures() if k == "gap-curves-0")
    assert "m1" in caption
    assert f"of {len(refs['m1'][0])} rows" in caption, caption


def test_union_subgroup_order_is_the_documented_one(feat):
    df, rep, groups, refs = feat
    documented = [name for name, _, _ in groups]  # single values, then combinations, first
    union = set(refs["m1"][0]) | set(refs["m2"][0])  # feature slowest
    want = [g for g in documented if g in union]
    assert list(rep.result.subgroups) == want
    assert list(rep.result.wide().index) == want


def test_distributions_figure_says_a_subgroup_absent():
    df = _feature_frame(m2_bad=True)
    rep = _quiet(fastbias.bias_report, df, **FEAT_KW)
    rows_m1 = ref_model(df, "m1", ref_groups_features(df, ["race", "gender"]), MIN_SIZE)[0]
    assert "race=r1 & gender=g1" not in rows_m1
    fig = next(f for k, c, f in rep.figures() if k == "distributions")
    panels = [ax for ax in fig.axes if ax.get_title().startswith("m1 | race=r1 & gender=g1")]
    assert panels, [ax.get_title() for ax in fig.axes]
    for ax in panels:  # said absent, no density of m1's rows drawn as if it were its subgroup
        assert [t.get_text() for t in ax.texts] == [
            "not a subgroup of this model\n(too few rows of a class in its rows)"]
        assert not ax.patches and not ax.lines, ax.get_title()
    kept = [ax for ax in fig.axes if ax.get_title().startswith("m2 | race=r1 & gender=g1")]
    assert kept and all(ax.patches for ax in kept)  # (m2 has it: its densities are drawn)


# --------------------------------------------------------------------------- property

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(40, 160), min_size=st.integers(1, 6),
       nan_frac=st.floats(0.0, 0.5))
def test_property_each_model_own_rows(seed, n, min_size, nan_frac):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": rng.random(n) < 0.5, "a": rng.random(n) < 0.5,
                       "b": rng.random(n) < 0.5, "c": rng.random(n) < 0.5,
                       "m1": rng.integers(0, 6, n) / 5.0, "m2": rng.integers(0, 4, n) / 3.0})
    inter = (df.a & df.b).to_numpy()
    drop = inter & (rng.random(n) < nan_frac * 2)
    df.loc[drop, "m1"] = np.nan
    y = df["y"].to_numpy()
    if y.all() or (~y).all():
        return
    for m in ("m1", "m2"):
        yy = y[df[m].notna().to_numpy()]
        if yy.all() or (~yy).all():
            return
    res = _quiet(fastbias.evaluate, df, label="y", scores=["m1", "m2"],
                 subgroups=["a", "b", "c"], intersections=2, min_subgroup_size=min_size,
                 nan_policy="omit")
    groups = ref_groups_intersections(df, ["a", "b", "c"], 2)
    for model in ("m1", "m2"):
        rows, overall = ref_model(df, model, groups, min_size)
        _check_rows(res.for_model(model), rows, model)
        assert res.overall_auc[model] == pytest.approx(float(overall), abs=1e-12)
