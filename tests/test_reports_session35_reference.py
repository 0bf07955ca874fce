"""An independent review's tests (2026-11-27) of what the reports state (text, HTML, CSV,
JSON) for runs with many options at once (weights, ``missing_subgroup="exclude"``,
intersections, sensitive features, thresholds, DeLong, Holm, names from data that need
escaping). Every expected value comes from an independent brute-force reference (pair counts
with weights, Holm adjustment by hand), never from fastbias itself. Found by review (each
failed before its fix): the settings called a numpy Generator "seed Generator", and did not
say that the combinations of several sensitive features are subgroups too.
"""
import csv
import io
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.report import BiasReport

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUCS = METRICS[:3]
G1, G2 = "<b>g&1", "g\u202e2\x1b[31m"
M1, M2 = 'm<a&"1', "=m2"


def _wauc(sn, wn, sp, wp):
    """Weighted tie-aware AUC: P(s(pos) > s(neg)) + 1/2 P(=), pairs weighted w_i * w_j."""
    if wn.sum() == 0 or wp.sum() == 0:
        return np.nan
    gt = (sp[None, :] > sn[:, None]) + 0.5 * (sp[None, :] == sn[:, None])
    return float((wn[:, None] * wp[None, :] * gt).sum() / (wn.sum() * wp.sum()))


def _frame():
    rng = np.random.default_rng(0)
    n = 1500
    df = pd.DataFrame({
        "y": rng.integers(0, 2, n).astype(float),
        M1: np.round(rng.random(n), 2),
        M2: np.round(rng.random(n), 2),
        G1: np.where(rng.random(n) < 0.3, 1.0, np.where(rng.random(n) < 0.2, np.nan, 0.0)),
        G2: np.where(rng.random(n) < 0.2, 1.0, 0.0),
        "race": rng.choice(["a<", "b&", "=c"], n),
        "w": rng.integers(1, 4, n).astype(float),
    })
    return df


def _groups(df):
    """name -> (member, annotated) by the documented rules (missing_subgroup='exclude')."""
    out = {}
    for c in (G1, G2):
        v = df[c].to_numpy()
        out[c] = (v >= 0.5, ~np.isnan(v))
    for x in sorted(df["race"].unique()):
        out[f"race={x}"] = (df["race"].to_numpy() == x, np.ones(len(df), bool))
    out[f"{G1} & {G2}"] = (out[G1][0] & out[G2][0], out[G1][1] & out[G2][1])
    return out


def _reference(df, model):
    y = df["y"].to_numpy() == 1
    w = df["w"].to_numpy()
    s = df[model].to_numpy()
    rows = {}
    for g, (m, ann) in _groups(df).items():
        bg = ann & ~m
        dgn, dgp, dn, dp = m & ~y, m & y, bg & ~y, bg & y
        rows[g] = dict(
            subgroup_auc=_wauc(s[dgn], w[dgn], s[dgp], w[dgp]),
            bpsn_auc=_wauc(s[dgn], w[dgn], s[dp], w[dp]),
            bnsp_auc=_wauc(s[dn], w[dn], s[dgp], w[dgp]),
            negative_aeg=0.5 - _wauc(s[dgn], w[dgn], s[dn], w[dn]),
            positive_aeg=0.5 - _wauc(s[dgp], w[dgp], s[dp], w[dp]),
            subgroup_negatives=int(dgn.sum()), subgroup_positives=int(dgp.sum()),
            background_negatives=int(dn.sum()), background_positives=int(dp.sum()))
    overall = _wauc(s[~y], w[~y], s[y], w[y])
    table = pd.DataFrame(rows).T
    ids = [g for g in table.index if " & " not in g]  # the final metric leaves out intersections

    def pm(v):
        return float(np.mean(np.asarray(v, float) ** -5) ** (-1 / 5))

    final = 0.25 * overall + 0.75 * np.mean([pm(table.loc[ids, c]) for c in AUCS])
    return table, overall, final


@pytest.fixture(scope="module")
def run():
    df = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=[M1, M2], subgroups=[G1, G2],
                                missing_subgroup="exclude", intersections=2,
                                sensitive_features=["race"], ci="delong", significance="holm",
                                thresholds=[0.3, 0.5], sample_weight="w")
        rep = BiasReport.from_result(df, res, sample_weight="w")
    return df, res, rep


def test_table_matches_bruteforce_weighted_exclude_intersections(run):
    df, res, rep = run
    for model in (M1, M2):
        ref, overall, final = _reference(df, model)
        part = res.for_model(model)
        assert sorted(part.index) == sorted(ref.index)
        for c in METRICS:
            np.testing.assert_allclose(part[c].to_numpy(float),
                                       ref.loc[part.index, c].to_numpy(float), atol=1e-12)
        for c in ("subgroup_negatives", "subgroup_positives", "background_negatives",
                  "background_positives"):
            assert part[c].tolist() == ref.loc[part.index, c].tolist()
        assert res.overall_auc[model] == pytest.approx(overall, abs=1e-12)
        assert rep.final_metrics()[model] == pytest.approx(final, abs=1e-12)


def test_text_numbers_equal_reference_rounded(run):
    """Every metric cell of the terminal table (wide: one piece) is the reference to 4 places."""
    df, res, rep = run
    text = rep.to_text(width=None)
    for model in (M1, M2):
        ref, overall, final = _reference(df, model)
        block = text.split("\n\n")
        head = next(b for b in block if b.startswith(model + "  overall AUC"))
        first = head.splitlines()[0]
        assert f"overall AUC {overall:.4f}" in first
        assert f"final metric {final:.4f}" in first
        from fastbias.reports.plain import name_cell
        shown = {}
        for line in head.splitlines()[3:]:
            hits = [g for g in ref.index if line.startswith(name_cell(g) + " ")]
            if hits:
                g = max(hits, key=lambda h: len(name_cell(h)))
                shown[g] = (name_cell(g), line)
        assert set(shown) == set(ref.index)
        for g, (cell, line) in shown.items():
            values = re.findall(r"(?<![\[\d])([+-]?\d\.\d{4})\*?(?: \[|\s|$)", line[len(cell):])
            expect = [f"{ref.at[g, m]:+.4f}" if "aeg" in m else f"{ref.at[g, m]:.4f}"
                      for m in METRICS]
            expect = [e.replace("-0.0000", "+0.0000") for e in expect]
            assert values == expect, (g, line)


def test_significance_marks_follow_holm_by_hand(run):
    """adjusted p = Holm over each model's subgroups x metrics; '*' iff adjusted p <= 0.05."""
    df, res, rep = run
    text = rep.to_text()
    for model in (M1, M2):
        part = res.for_model(model)
        p = part[[f"{m}_pvalue" for m in METRICS]].to_numpy(float).ravel()
        got = part[[f"{m}_pvalue_adjusted" for m in METRICS]].to_numpy(float).ravel()
        order = np.argsort(p, kind="stable")
        adj, run_max = np.empty_like(p), 0.0
        for k, i in enumerate(order):
            run_max = max(run_max, (len(p) - k) * p[i])
            adj[i] = min(1.0, run_max)
        np.testing.assert_allclose(got, adj, rtol=1e-12, atol=1e-15)
        flags = part[[f"{m}_significant" for m in METRICS]].to_numpy(bool).ravel()
        assert (flags == (adj <= 0.05)).all()
    assert text.count("*") - 1 == int(res.table[[f"{m}_significant" for m in METRICS]]
                                      .to_numpy(bool).sum())  # one '*' in the note


def test_html_self_contained_and_names_escaped(run):
    df, res, rep = run
    page = rep.to_html()
    assert not re.search(r'(?:src|href)\s*=\s*"(?:https?:)?//', page)
    assert "http://" not in page and "https://" not in page
    for raw in ("<b>g", "\x1b", "\u202e", 'm<a&"1', "<b>g&1"):
        assert raw not in page
    assert "m&lt;a&amp;&quot;1" in page and "&lt;b&gt;g&amp;1" in page
    # every img alt attribute is plain escaped text
    for alt in re.findall(r'<img alt="([^"]*)"', page):
        assert "<" not in alt and "\x1b" not in alt


def test_text_names_escaped(run):
    df, res, rep = run
    text = rep.to_text(width=80)
    assert "\x1b" not in text and "\u202e" not in text
    assert "g\\u202e2\\x1b[31m" in text


def test_csv_spreadsheet_safe_and_numbers(run, tmp_path):
    df, res, rep = run
    path = tmp_path / "r.csv"
    rep.to_csv(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    assert len(rows) == 2 * 6
    for r in rows:
        for key in ("model", "subgroup"):
            assert not r[key].startswith(("=", "+", "-", "@")), r[key]
    models = {r["model"] for r in rows}
    assert models == {M1, "'" + M2}
    for r in rows:
        model = M2 if r["model"] == "'=m2" else r["model"]
        ref, overall, final = _reference(df, model)
        g = r["subgroup"][1:] if r["subgroup"].startswith("'") else r["subgroup"]
        for m in METRICS:
            assert float(r[m]) == pytest.approx(ref.at[g, m], abs=1e-12)
        assert float(r["final_metric"]) == pytest.approx(final, abs=1e-12)


def test_json_strict_and_settings(run):
    df, res, rep = run
    data = json.loads(rep.to_json())
    assert data["settings"]["missing_subgroup"] == "exclude"
    assert data["settings"]["significance"] == "holm"
    for entry in data["models"]:
        ref, overall, final = _reference(df, entry["name"])
        assert entry["overall_auc"] == pytest.approx(overall, abs=1e-12)
        assert entry["final_metric"] == pytest.approx(final, abs=1e-12)
        low = min((ref.at[g, m], g) for g in ref.index for m in AUCS)
        assert entry["lowest_auc"] == pytest.approx(low[0], abs=1e-12)
        assert entry["lowest_auc_subgroup"] == low[1]


def test_html_subgroup_count_and_final_metric_claim(run):
    """'5 and 1 intersections ... the final metric is over the 5' and the shown final metric."""
    df, res, rep = run
    page = rep.to_html()
    assert "5 and 1 intersections" in page and "the final metric is over the 5" in page
    for model in (M1, M2):
        ref, overall, final = _reference(df, model)
        assert f"<b>{final:.4f}</b>" in page


def _small_weighted():
    rng = np.random.default_rng(2)
    n = 400
    y = rng.integers(0, 2, n)
    df = pd.DataFrame({"y": y, "m1": np.round(rng.random(n), 2), "a": np.zeros(n),
                       "c": np.zeros(n), "w": rng.integers(1, 3, n).astype(float)})
    neg, pos = np.flatnonzero(y == 0), np.flatnonzero(y == 1)
    df.loc[neg[:1], "a"] = 1
    df.loc[pos[:3], "a"] = 1
    df.loc[neg[1:3], "c"] = 1
    df.loc[pos[8:10], "c"] = 1
    df.loc[neg[1:3], "w"] = 0.0  # c's negatives: zero total weight
    return df


def test_undefined_by_zero_weight_shown_as_na_with_count():
    df = _small_weighted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="m1", subgroups=["a", "c"],
                                sample_weight="w", ci="bootstrap", n_boot=30, random_state=0)
        rep = BiasReport.from_result(df, res, sample_weight="w")
    text = rep.to_text()
    line = next(l for l in text.splitlines() if l.startswith("c "))
    # c: 2 negatives (weight 0): subgroup AUC, BPSN, negative AEG undefined -> three n/a, never 0
    assert line.count("n/a") == 3
    assert "n/a: 3 undefined value(s)" in text
    page = rep.to_html()
    assert page.count("zero total weight") >= 3


def test_bootstrap_setting_does_not_call_a_generator_a_seed():
    """Found by review: random_state=np.random.default_rng(5) made the HTML say 'seed
    Generator', a seed that does not exist; it now says the replicates were drawn from the
    Generator given, with no seed to rerun with (an integer seed is still named)."""
    df = _small_weighted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="m1", subgroups=["a"], ci="bootstrap",
                                n_boot=20, random_state=np.random.default_rng(5))
        rep = BiasReport.from_result(df, res)
    page = rep.to_html()
    assert "seed Generator" not in page
    assert "20 replicates, drawn from the numpy Generator given (no seed to rerun with)" in page
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="m1", subgroups=["a"], ci="bootstrap",
                                n_boot=20, random_state=7)
        assert "20 replicates, seed 7" in BiasReport.from_result(df, res).to_html()


def test_settings_mention_sensitive_feature_combinations():
    """Found by review: with two sensitive features, 4 of the 8 subgroups are combinations
    (race=x & sex=f) that the final metric includes, but the settings said only 'a sensitive
    feature's: one subgroup per value'; they now say the combinations are subgroups too."""
    rng = np.random.default_rng(3)
    n = 1200
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "m": np.round(rng.random(n), 2),
                       "race": rng.choice(["x", "z"], n), "sex": rng.choice(["f", "m"], n)})
    res = fastbias.evaluate(df, label="y", scores="m", sensitive_features=["race", "sex"])
    assert "race=x & sex=f" in res.subgroups
    page = BiasReport.from_result(df, res).to_html()
    settings = page[page.find('<table class="settings"'):page.find("<h2>Summary")]
    assert ("a sensitive feature's: one subgroup per value; with several, each combination of "
            "their values with at least 1 row(s) of each class too") in settings, settings
    one = BiasReport.from_result(df, fastbias.evaluate(df, label="y", scores="m",
                                                       sensitive_features=["race"])).to_html()
    assert "combination" not in one[one.find('<table class="settings"'):one.find("<h2>Summary")]
