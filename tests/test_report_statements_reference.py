"""What the reports state: an independent review's tests (2026-11-27) of BiasReport's
text, HTML, CSV and JSON and the CLI's report output.

Every expected value comes from a brute-force reference written here (pair counts with
fractions.Fraction, an own Holm/BH), never from fastbias itself. Found by review (the first
three tests; each fails before its fix): a newline in a subgroup's name reached the CLI's
warnings raw (a forged line); an AEG tie of the other sign was called "equal"; the text table
showed an undefined overall AUC as "nan". The others pin properties that hold.
"""
from __future__ import annotations

import csv
import html as html_lib
import os
import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import cli
from fastbias.reports.report import write_atomically

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]


# ----------------------------------------------------------------------------- reference

def _auc(neg, pos):
    """P(pos > neg) + 1/2 P(tie), by counting every pair; None when a side is empty."""
    if len(neg) == 0 or len(pos) == 0:
        return None
    total = Fraction(0)
    for p in pos:
        for q in neg:
            total += 1 if p > q else (Fraction(1, 2) if p == q else 0)
    return total / (len(neg) * len(pos))


def _reference(y, s, member):
    y, s, member = np.asarray(y), np.asarray(s), np.asarray(member, dtype=bool)
    dn, dp = s[(~member) & (y == 0)], s[(~member) & (y == 1)]
    gn, gp = s[member & (y == 0)], s[member & (y == 1)]
    out = {"subgroup_auc": _auc(gn, gp), "bpsn_auc": _auc(gn, dp), "bnsp_auc": _auc(dn, gp)}
    neg = _auc(gn, dn)  # P(s(D-) > s(Dg-))
    pos = _auc(gp, dp)
    out["negative_aeg"] = None if neg is None else Fraction(1, 2) - neg
    out["positive_aeg"] = None if pos is None else Fraction(1, 2) - pos
    return out


def _power_mean(values, p=-5):
    values = [float(v) for v in values]
    return float(np.mean(np.power(values, p)) ** (1.0 / p))


def _quiet_report(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fastbias.bias_report(*args, **kwargs)


# ----------------------------------------------------------------------------- found by review

def test_cli_warning_does_not_pass_a_newline_from_a_name_to_the_terminal(tmp_path, capsys,
                                                                         monkeypatch):
    """docs/cli.md: "On the terminal (the table, notes, warnings, errors) control
    characters in them are shown as visible escapes". A subgroup column named
    "g\\nfastbias: note: all metrics defined" that is one-class makes the undefined-metric
    warning, and ``cli._say`` prints it with ``terminal_text(..., keep_newlines=True)``: the
    name's newline reaches stderr raw and forges a line "fastbias: note: all metrics
    defined: ..." (the name is put raw into the message in metrics/table.py warn_undefined).
    Right: the name's newline shown as ``\\x0a`` (as the table on stdout already does)."""
    name = "g\nfastbias: note: all metrics defined"
    pd.DataFrame({"y": [0, 0, 1, 1, 0, 1], "s": [.1, .2, .3, .4, .5, .6],
                  name: [1, 1, 0, 0, 0, 0]}).to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["report", "d.csv", "--label", "y", "--scores", "s",
                   "--subgroups-all-boolean", "--progress", "never"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "g\\x0afastbias: note" in out  # the table escapes it
    forged = [line for line in err.splitlines() if line.startswith("fastbias: note: all")]
    assert forged == [], f"a name forged {len(forged)} stderr line(s): {forged}"


def test_summary_aeg_tie_of_opposite_sign_is_not_called_equal():
    """(Wording.) Subgroup a has Negative AEG +0.5 and subgroup b -0.5 (brute force
    below); no other AEG equals +0.5. The HTML summary says "+0.5000 Negative AEG, a (and 1
    more value(s) equal to it)": the tie count is of |AEG| (report.py summary,
    ``largest_aeg_ties``) but the text calls them equal to the signed value shown.
    Right: "(and 1 more of the same size)" or no claim of equality."""
    df = pd.DataFrame({"y": [0, 0, 0, 0, 1, 1, 1, 1],
                       "s": [0.9, 0.1, 0.5, 0.5, 0.6, 0.6, 0.6, 0.6],
                       "a": [1, 0, 0, 0, 1, 0, 0, 0],
                       "b": [0, 1, 0, 0, 0, 1, 0, 0]})
    ref = {g: _reference(df.y, df.s, df[g] == 1) for g in "ab"}
    assert ref["a"]["negative_aeg"] == Fraction(1, 2)
    assert ref["b"]["negative_aeg"] == Fraction(-1, 2)
    aegs = [float(ref[g][m]) for g in "ab" for m in ("negative_aeg", "positive_aeg")]
    others_equal = sum(v == 0.5 for v in aegs) - 1
    assert others_equal == 0
    page = _quiet_report(df, label="y", scores="s", subgroups=["a", "b"]).to_html()
    summary = page[page.find('<table class="summary">'):]
    summary = html_lib.unescape(re.sub("<[^>]+>", "", summary[:summary.find("</table>")]))
    assert "+0.5000 Negative AEG, a" in summary
    assert "Negative AEG, a (and 1 more value(s) equal to it)" not in summary, summary
    assert "Negative AEG, a (and 1 more value(s) of the same size)" in summary, summary


def test_text_table_shows_undefined_overall_auc_as_na():
    """docs/cli.md: the terminal table shows "undefined values as n/a". With
    nan_policy="omit" model s keeps no positive row (brute force: its overall AUC has no
    pairs, undefined), and ``to_text`` prints "s  overall AUC nan" (report.py to_text formats
    ``summary.at[model, 'overall_auc']`` with ``:.4f``, not ``_fmt_metric``); the HTML of the
    same report says n/a. Right: "overall AUC n/a"."""
    df = pd.DataFrame({"y": [0, 0, 1, 1, 0, 1], "s": [.1, .2, np.nan, np.nan, .5, np.nan],
                       "t": [.1, .2, .3, .4, .5, .6], "a": [1, 0, 1, 0, 0, 1]})
    kept = df.dropna(subset=["s"])
    assert _auc(kept.s[kept.y == 0], kept.s[kept.y == 1]) is None
    text = _quiet_report(df, label="y", scores=["s", "t"], subgroups=["a"],
                         nan_policy="omit").to_text()
    head = text.splitlines()[0]
    assert head.startswith("s  overall AUC")
    assert "nan" not in head.lower().replace("n/a", ""), head
    assert "overall AUC n/a (1 model(s)): the model's rows hold no negative" in text


# ----------------------------------------------------------------------------- properties held

def _toy():
    rng = np.random.default_rng(7)
    n = 160
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "a": rng.integers(0, 2, n),
                       "b": rng.integers(0, 2, n), "c": (rng.random(n) < 0.1).astype(int)})
    df.loc[df.c == 1, "y"] = 0  # c: one class, three undefined metrics
    df["s"] = np.round(rng.random(n) + 0.4 * df.y - 0.3 * (df.a * df.b) * df.y, 2)  # ties
    return df


def test_table_summary_and_undefined_counts_match_brute_force():
    df = _toy()
    report = _quiet_report(df, label="y", scores="s", subgroups=["a", "b", "c"])
    table = report.result.for_model("s")
    ref = {g: _reference(df.y, df.s, df[g] == 1) for g in ["a", "b", "c"]}
    for g in ["a", "b", "c"]:
        for m in METRICS:
            if ref[g][m] is None:
                assert np.isnan(table.at[g, m])
            else:
                assert table.at[g, m] == pytest.approx(float(ref[g][m]), abs=1e-12)
    summary = report.summary().loc["s"]
    aucs = [(float(ref[g][m]), g, m) for g in ["a", "b", "c"] for m in METRICS[:3]
            if ref[g][m] is not None]
    low = min(v for v, _, _ in aucs)
    assert summary["lowest_auc"] == pytest.approx(low, abs=1e-12)
    assert (summary["lowest_auc_subgroup"], summary["lowest_auc_metric"]) in \
        {(g, m) for v, g, m in aucs if abs(v - low) < 1e-12}
    assert summary["lowest_auc_ties"] == sum(abs(v - low) < 1e-12 for v, _, _ in aucs) - 1
    n_undefined = sum(ref[g][m] is None for g in ref for m in METRICS)
    assert n_undefined == 3 and summary["undefined_values"] == n_undefined
    assert f"n/a: {n_undefined} undefined value(s)" in report.to_text()
    undefined = report.undefined_cells()
    assert set(zip(undefined.subgroup, undefined.metric)) == \
        {(g, m) for g in ref for m in METRICS if ref[g][m] is None}
    assert all("subgroup_positives = 0" in r for r in undefined.reason)


def test_final_metric_with_intersections_is_over_identities_only():
    df = _toy().query("c == 0")
    report = _quiet_report(df, label="y", scores="s", subgroups=["a", "b"], intersections=2)
    ref = {g: _reference(df.y, df.s, df[g] == 1) for g in ["a", "b"]}
    overall = float(_auc(df.s[df.y == 0], df.s[df.y == 1]))
    expected = 0.25 * overall + 0.75 * np.mean(
        [_power_mean([ref[g][m] for g in ref]) for m in METRICS[:3]])
    assert report.summary().at["s", "final_metric"] == pytest.approx(expected, abs=1e-12)
    text = report.to_text()
    assert f"final metric {expected:.4f}" in text
    both = (df.a == 1) & (df.b == 1)
    inter = _reference(df.y, df.s, both)
    assert report.result.for_model("s").at["a & b", "subgroup_auc"] == \
        pytest.approx(float(inter["subgroup_auc"]), abs=1e-12)


def _holm(p):
    k, order, out, run = len(p), np.argsort(p, kind="stable"), np.empty(len(p)), 0.0
    for i, j in enumerate(order):
        run = max(run, (k - i) * p[j])
        out[j] = min(run, 1.0)
    return out


def _bh(p):
    k, order, out, run = len(p), np.argsort(p, kind="stable"), np.empty(len(p)), 1.0
    for i in range(k - 1, -1, -1):
        run = min(run, k * p[order[i]] / (i + 1))
        out[order[i]] = min(run, 1.0)
    return out


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_significance_marks_follow_own_adjustment_per_model(method):
    rng = np.random.default_rng(3)
    n = 1500
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "a": rng.integers(0, 2, n),
                       "b": rng.integers(0, 2, n)})
    df["m1"] = rng.random(n) + 0.3 * df.y + 0.15 * df.a
    df["m2"] = rng.random(n) + 0.3 * df.y - 0.15 * df.b * df.y
    report = _quiet_report(df, label="y", scores=["m1", "m2"], subgroups=["a", "b"],
                           intersections=2, significance=method, confidence=0.9)
    marked = 0
    for model, part in report.result.table.groupby("model", sort=False):
        p = part[[f"{m}_pvalue" for m in METRICS]].to_numpy(dtype=float).ravel()
        ok = ~np.isnan(p)
        adjusted = (_holm if method == "holm" else _bh)(p[ok])
        got = part[[f"{m}_pvalue_adjusted" for m in METRICS]].to_numpy(dtype=float).ravel()
        np.testing.assert_allclose(got[ok], adjusted, rtol=1e-12)
        flags = part[[f"{m}_significant" for m in METRICS]].to_numpy(dtype=bool).ravel()
        assert (flags[ok] == (adjusted <= 0.1 + 1e-12)).all()
        marked += int(flags.sum())
    text = report.to_text()
    body = text[:text.rfind("\n\n* significant")]
    assert body.count("*") == marked
    assert "adjusted p <= 0.1" in text


def test_hostile_names_escaped_in_html_csv_and_text(tmp_path):
    rng = np.random.default_rng(1)
    n = 300
    evil = "<script>x</script>\x1b[31m\u202e"
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "=cmd|' /C calc'!A0": rng.integers(0, 2, n),
                       evil: rng.integers(0, 2, n), "feat": rng.choice(["=A1", "b"], n)})
    df["@model"] = rng.random(n)
    report = _quiet_report(df, label="y", scores="@model",
                           subgroups=["=cmd|' /C calc'!A0", evil], sensitive_features=["feat"],
                           thresholds=[0.5])
    page = report.to_html()
    assert "<script" not in page and "\x1b" not in page and "\u202e" not in page
    text = report.to_text()
    assert "\x1b" not in text and "\u202e" not in text
    report.to_csv(tmp_path / "r.csv")
    report.thresholds_to_csv(tmp_path / "t.csv")
    for name in ("r.csv", "t.csv"):
        with open(tmp_path / name, newline="", encoding="utf-8") as handle:
            cells = [c for row in csv.reader(handle) for c in row]
        for c in cells:
            try:
                float(c)
                continue
            except ValueError:
                pass
            assert not c.startswith(("=", "+", "-", "@", "\t", "\r")), (name, c)
        assert "'=cmd|' /C calc'!A0" in cells and "'@model" in cells


def test_write_atomically_refuses_a_symlink_and_leaves_target(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("keep")
    link = tmp_path / "out.html"
    os.symlink(target, link)
    with pytest.raises(ValueError, match="symbolic link"):
        write_atomically(link, "new")
    assert target.read_text() == "keep"
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".fastbias-")]
    plain = tmp_path / "plain.csv"
    plain.write_text("old")
    os.chmod(plain, 0o600)
    write_atomically(plain, "new")
    assert plain.read_text() == "new" and (os.stat(plain).st_mode & 0o777) == 0o600


def test_cli_refuses_an_output_that_is_a_hard_link_to_the_input(tmp_path, monkeypatch, capsys):
    data = tmp_path / "d.csv"
    pd.DataFrame({"y": [0, 1, 0, 1], "s": [.1, .9, .2, .8], "g": [1, 1, 0, 0]}).to_csv(
        data, index=False)
    before = data.read_bytes()
    os.link(data, tmp_path / "alias.csv")
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["report", "d.csv", "--label", "y", "--scores", "s", "--subgroups", "g",
                   "--out", "alias.csv", "--force", "--progress", "never"])
    assert rc == 1
    assert "input data file" in capsys.readouterr().err
    assert data.read_bytes() == before
