"""An independent review's tests (2026-11-27): the outputs of ``fastbias report`` (terminal, CSV, JSON, HTML).

Every check compares what the command wrote with an independent reference written here
(brute-force pair counts, scikit-learn's roc_auc_score, hand counts of rates at a threshold,
Wilson's formula, Holm/BH recomputed from the raw p-values, plain-Python csv/json/html.parser
reading of the outputs) and, where useful, with ``fastbias.evaluate`` given the same options.

Found by review (each failed before its fix), where the models keep different subgroups
(``--nan-policy omit`` with ``--intersections`` or several ``--sensitive-features``: each model
keeps those large enough on its own rows, docs/intersections.md): the HTML report crashed
(``KeyError: ('m1', 'a & b', 'subgroup_auc')``: each model's table was the union of every
model's subgroups); ``cli.main`` then crashed on the KeyError's tuple key (a traceback, not the
one ``fastbias: error:`` line); the terminal showed a model a subgroup it does not have, a row
of n/a that no note explained, and ``--top``'s "N worst of M" counted the union. Each model's
tables now hold its own subgroups (``worst_first``), and the footnote counts each model's.

Checked and held: CSV/JSON numbers equal evaluate and brute force (counts, 5 metrics, overall
AUC, final metric incl. its "without the n/a AUCs" value) for plain, text --positive,
--label-threshold/--subgroup-threshold, --weight, --missing-subgroup exclude, --nan-policy omit
(labels, weights, NaN/inf scores), --intersections, --sensitive-features (missing values,
combinations); thresholds CSV/JSON vs hand counts and Wilson at --confidence (weighted too);
Holm/BH adjustment and significant flags; HTML settings/summary/metrics/threshold/intersection
tables and '*' claims; terminal rows, rounding, --top N order, --wide, name escaping; CSV
formula prefix and --csv-raw; --force, input/sibling/hardlink/symlink refusal, late failures
writing nothing; bootstrap repeatable with --seed.
"""

from __future__ import annotations

import contextlib
import csv
import html.parser
import io
import json
import math
import os
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.cli import main

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUCS = METRICS[:3]
AEGS = METRICS[3:]
COUNTS = ["subgroup_size", "subgroup_negatives", "subgroup_positives", "background_negatives",
          "background_positives"]


# ----------------------------------------------------------------------------- references

def pair_auc(neg, pos, wn=None, wp=None):
    """P(pos > neg) + 1/2 P(tie), weighted, by every pair; NaN for an empty/zero-weight side."""
    neg = np.asarray(neg, float)
    pos = np.asarray(pos, float)
    wn = np.ones(len(neg)) if wn is None else np.asarray(wn, float)
    wp = np.ones(len(pos)) if wp is None else np.asarray(wp, float)
    if len(neg) == 0 or len(pos) == 0 or wn.sum() == 0 or wp.sum() == 0:
        return np.nan
    gt = (pos[None, :] > neg[:, None]) + 0.5 * (pos[None, :] == neg[:, None])
    return float((wn[:, None] * wp[None, :] * gt).sum() / (wn.sum() * wp.sum()))


def pair_aeg(bg, sub, wb=None, ws=None):
    """1/2 - P(s(bg) > s(sub)), ties 1/2."""
    auc = pair_auc(sub, bg, ws, wb)  # P(bg > sub) + 1/2 tie
    return np.nan if np.isnan(auc) else 0.5 - auc


def reference_rows(y, s, members, annotated, w=None, exclude=False):
    """{subgroup: metrics dict} for boolean label ``y``, scores ``s``, ``members`` {name: bool
    array}, ``annotated`` {name: bool array} (False = NaN identity)."""
    w = np.ones(len(y)) if w is None else np.asarray(w, float)
    out = {}
    for name, member in members.items():
        bg = ~member & (annotated[name] if exclude else True)
        gn, gp, bn, bp = member & ~y, member & y, bg & ~y, bg & y
        out[name] = dict(
            subgroup_size=int(member.sum()), subgroup_negatives=int(gn.sum()),
            subgroup_positives=int(gp.sum()), background_negatives=int(bn.sum()),
            background_positives=int(bp.sum()),
            subgroup_auc=pair_auc(s[gn], s[gp], w[gn], w[gp]),
            bpsn_auc=pair_auc(s[gn], s[bp], w[gn], w[bp]),
            bnsp_auc=pair_auc(s[bn], s[gp], w[bn], w[gp]),
            negative_aeg=pair_aeg(s[bn], s[gn], w[bn], w[gn]),
            positive_aeg=pair_aeg(s[bp], s[gp], w[bp], w[gp]))
    return out


def power_mean(values, p=-5):
    v = np.asarray(values, float)
    return float(np.mean(v ** p) ** (1 / p))


def final_metric_ref(overall, rows):
    parts = [power_mean([r[m] for r in rows]) for m in AUCS]
    return 0.25 * overall + 0.75 * float(np.mean(parts))


def wilson(k, n, confidence):
    from scipy.stats import norm
    if n == 0:
        return (np.nan, np.nan)
    z = norm.ppf(1 - (1 - confidence) / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (max(0.0, centre - half), min(1.0, centre + half))


def close(a, b, tol=1e-9):
    a = None if a is None or (isinstance(a, float) and math.isnan(a)) else float(a)
    b = None if b is None or (isinstance(b, float) and math.isnan(b)) else float(b)
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol


# ----------------------------------------------------------------------------- data and runs

def make_data(seed=0, n=1500, ids=4, models=2, na=True, text=False, nan_scores=False):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.3
    df = pd.DataFrame()
    df["label"] = np.where(y, "toxic", "fine") if text else y.astype(int)
    for k in range(ids):
        g = (rng.random(n) < 0.15 + 0.05 * k).astype(float)
        if na:
            g[rng.random(n) < 0.1] = np.nan
        df[f"id{k}"] = g
    for m in range(models):
        s = np.round(rng.random(n) * 0.6 + 0.3 * y + 0.08 * m * df["id0"].fillna(0), 2)
        if nan_scores:
            s[rng.random(n) < 0.03] = np.nan
        df[f"m{m}"] = s
    df["w"] = rng.integers(1, 4, n).astype(float)
    df["race"] = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    return df


def run_cli(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["report", *map(str, args), "--progress", "never"])
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def read_csv_exact(path):
    """The CSV as plain-Python dicts (csv module), empty fields None."""
    with open(path, newline="", encoding="utf-8") as f:
        raw = f.read()
    assert "\r\n" in raw, "lines end in CRLF (docs/cli.md)"
    return [{k: (v if v != "" else None) for k, v in rec.items()}
            for rec in csv.DictReader(io.StringIO(raw))]


def memberships(df, ids, threshold=0.5):
    members = {g: (df[g].to_numpy(float) >= threshold) for g in ids}
    annotated = {g: ~np.isnan(df[g].to_numpy(float)) for g in ids}
    return members, annotated


class TextOf(html.parser.HTMLParser):
    """Visible text of a page, plus each table's rows of cell texts."""

    def __init__(self):
        super().__init__()
        self.parts, self.tables, self._cell, self._row = [], [], None, None
        self._skip = 0
        self.table_attrs = []

    def handle_starttag(self, tag, attrs):
        if tag in ("style", "script"):
            self._skip += 1
        if tag == "table":
            self.tables.append([])
            self.table_attrs.append(dict(attrs))
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._skip -= 1
        if tag in ("td", "th") and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._skip:
            return
        self.parts.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def text(self):
        return "".join(self.parts)


def parse_html(path):
    p = TextOf()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def fmt4(v):
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def fmt4s(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    t = f"{v:+.4f}"
    return "+0.0000" if t in ("-0.0000", "+0.0000") else t


# ----------------------------------------------------------------------------- base run

@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """2 models, 4 identity columns with NaN, thresholds, every output."""
    d = tmp_path_factory.mktemp("base")
    df = make_data(seed=1)
    path = d / "data.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "label", "--scores", "m0", "m1", "--subgroups",
                            "id0", "id1", "id2", "id3", "--out", d / "x.csv", "--out",
                            d / "x.json", "--out", d / "x.html", "--thresholds", "0.3", "0.5",
                            "0.75", "--gap-interval", "bernstein", "--report-threshold", "0.5",
                            "--title", "Review <&> run"])
    assert rc == 0, err
    back = pd.read_csv(path)
    ev = fastbias.evaluate(back, label="label", scores=["m0", "m1"],
                           subgroups=["id0", "id1", "id2", "id3"], thresholds=[0.3, 0.5, 0.75],
                           gap_interval="bernstein")
    return dict(dir=d, df=back, out=out, err=err, ev=ev, ids=["id0", "id1", "id2", "id3"],
                models=["m0", "m1"])


def test_base_csv_equals_evaluate_and_brute_force(base):
    rows = read_csv_exact(base["dir"] / "x.csv")
    assert len(rows) == 8
    table = base["ev"].table.set_index(["model", "subgroup"])
    df = base["df"]
    y = df["label"].to_numpy() == 1
    members, annotated = memberships(df, base["ids"])
    for rec in rows:
        m, g = rec["model"], rec["subgroup"]
        s = df[m].to_numpy(float)
        ref = reference_rows(y, s, {g: members[g]}, annotated)[g]
        for c in COUNTS:
            assert int(rec[c]) == ref[c] == int(table.loc[(m, g), c]), (m, g, c)
        for c in METRICS:
            assert close(float(rec[c]), ref[c], 1e-12), (m, g, c, rec[c], ref[c])
            assert float(rec[c]) == float(table.loc[(m, g), c])
        overall = roc_auc_score(y, s)
        assert close(float(rec["overall_auc"]), overall, 1e-12)
        allrows = list(reference_rows(y, s, members, annotated).values())
        assert close(float(rec["final_metric"]), final_metric_ref(overall, allrows), 1e-12)


def test_base_json_equals_csv_and_reference(base):
    data = json.loads((base["dir"] / "x.json").read_text())
    df = base["df"]
    y = df["label"].to_numpy() == 1
    assert data["n_rows"] == len(df)
    assert data["n_negatives"] == int((~y).sum()) and data["n_positives"] == int(y.sum())
    assert data["settings"]["thresholds"] == [0.3, 0.5, 0.75]
    members, annotated = memberships(df, base["ids"])
    for model in data["models"]:
        s = df[model["name"]].to_numpy(float)
        ref = reference_rows(y, s, members, annotated)
        assert close(model["overall_auc"], roc_auc_score(y, s), 1e-12)
        assert close(model["final_metric"],
                     final_metric_ref(roc_auc_score(y, s), list(ref.values())), 1e-12)
        aucs = [(r[m], g, m) for g, r in ref.items() for m in AUCS]
        low = min(aucs)
        assert close(model["lowest_auc"], low[0], 1e-12)
        assert model["lowest_auc_subgroup"] == low[1] and model["lowest_auc_metric"] == low[2]
        aegs = max(((abs(r[m]), r[m], g, m) for g, r in ref.items() for m in AEGS),
                   key=lambda t: t[0])
        assert close(model["largest_abs_aeg"], aegs[1], 1e-12)
        assert model["largest_aeg_subgroup"] == aegs[2]
        assert model["undefined_values"] == 0
        assert [r["subgroup"] for r in model["subgroups"]] == base["ids"]
        for rec in model["subgroups"]:
            for c in COUNTS + METRICS:
                assert close(rec[c], ref[rec["subgroup"]][c], 1e-12), (rec["subgroup"], c)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_base_threshold_rows_equal_hand_counts(base, fmt):
    df = base["df"]
    y = df["label"].to_numpy() == 1
    members, _ = memberships(df, base["ids"])
    if fmt == "csv":
        recs = read_csv_exact(base["dir"] / "x.thresholds.csv")
    else:
        data = json.loads((base["dir"] / "x.json").read_text())
        recs = [dict(r, model=m["name"]) for m in data["models"] for r in m["thresholds"]]
    assert len(recs) == 2 * 3 * 4
    seen = set()
    for rec in recs:
        m, g, t = rec["model"], rec["subgroup"], float(rec["threshold"])
        seen.add((m, g, t))
        s = df[m].to_numpy(float)
        pred = s >= t
        sides = {"subgroup": members[g], "background": ~members[g]}
        rates = {}
        for side, mask in sides.items():
            tp = int((mask & y & pred).sum())
            fp = int((mask & ~y & pred).sum())
            neg, pos = int((mask & ~y).sum()), int((mask & y).sum())
            assert int(float(rec[f"{side}_tp"])) == tp and int(float(rec[f"{side}_fp"])) == fp
            assert int(float(rec[f"{side}_negatives"])) == neg
            assert int(float(rec[f"{side}_positives"])) == pos
            k_n = {"positive_rate": (tp + fp, neg + pos), "tpr": (tp, pos), "fpr": (fp, neg),
                   "fnr": (pos - tp, pos), "precision": (tp, tp + fp)}
            for rate, (k, n) in k_n.items():
                value = k / n if n else np.nan
                rates[(side, rate)] = value
                got = rec[f"{side}_{rate}"]
                assert close(None if got is None else float(got), value, 1e-12), (rec, rate)
                lo, hi = wilson(k, n, 0.95)
                got_lo, got_hi = rec[f"{side}_{rate}_low"], rec[f"{side}_{rate}_high"]
                assert close(None if got_lo is None else float(got_lo), lo, 1e-7), (side, rate)
                assert close(None if got_hi is None else float(got_hi), hi, 1e-7), (side, rate)
        for rate, gap in [("positive_rate", "positive_rate_gap"), ("tpr", "tpr_gap"),
                          ("fpr", "fpr_gap"), ("fnr", "fnr_gap"), ("precision", "precision_gap")]:
            want = rates[("subgroup", rate)] - rates[("background", rate)]
            got = rec[gap]
            assert close(None if got is None else float(got), want, 1e-12), (gap, rec)
            if got is not None:
                lo, hi = float(rec[f"{gap}_low"]), float(rec[f"{gap}_high"])
                assert lo <= float(got) <= hi and -1 <= lo and hi <= 1
    assert len(seen) == 24


def test_base_terminal_table_numbers(base):
    out = base["out"]
    table = base["ev"].table
    for model in base["models"]:
        part = table[table["model"] == model].set_index("subgroup")
        block = out.split(f"{model}  overall AUC", 1)[1]
        head = block.splitlines()[0]
        assert f"{base['ev'].overall_auc[model]:.4f}" in head
        # the 4 rows of the metric table, worst first (lowest of the three AUCs)
        lines = [ln for ln in block.splitlines()[3:] if ln.strip()][:4]
        order = part[AUCS].min(axis=1).sort_values(kind="stable").index.tolist()
        assert [ln.split()[0] for ln in lines] == order
        for ln in lines:
            cells = ln.split()
            g = cells[0]
            r = part.loc[g]
            assert [int(c.replace(",", "")) for c in cells[1:6]] == [int(r[c]) for c in COUNTS]
            want = [fmt4(r[m]) for m in AUCS] + [fmt4s(r[m]) for m in AEGS]
            assert cells[6:11] == want, (g, cells, want)


def test_base_terminal_threshold_gaps(base):
    out = base["out"]
    at = base["ev"].thresholds
    # every "id  threshold  gap [lo, hi]" line of the first (wrapped) part
    pat = re.compile(r"^(id\d)\s+(0\.\d+)\s+([+-]\d\.\d{4}|n/a)")
    found = 0
    for model in base["models"]:
        block = out.split(f"{model}  overall AUC", 1)[1].split("overall AUC", 1)[0]
        for ln in block.split("threshold metrics", 1)[1].splitlines():
            m = pat.match(ln)
            if not m:
                continue
            row = at[(at["model"] == model) & (at["subgroup"] == m.group(1))
                     & (at["threshold"] == float(m.group(2)))]
            assert len(row) == 1
            assert m.group(3) == fmt4s(float(row["positive_rate_gap"].iloc[0]))
            found += 1
    assert found == 2 * 4 * 3


def _settings(page):
    for rows, attrs in zip(page.tables, page.table_attrs):
        if attrs.get("class") == "settings":
            return {r[0]: r[1] for r in rows if len(r) == 2}
    raise AssertionError("no settings table")


def test_base_html_settings_and_summary(base):
    page = parse_html(base["dir"] / "x.html")
    df = base["df"]
    y = df["label"].to_numpy() == 1
    settings = _settings(page)
    assert settings["rows"].startswith(f"{len(df):,} ({int((~y).sum()):,} negative, "
                                       f"{int(y.sum()):,} positive")
    assert settings["subgroups"].startswith("4 ")
    assert settings["models"] == "m0, m1"
    assert settings["thresholds"].startswith("0.3, 0.5, 0.75")
    assert "Review <&> run" in page.text
    summary = [t for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "summary"][0]
    members, annotated = memberships(df, base["ids"])
    for row in summary[1:]:
        model = row[0]
        s = df[model].to_numpy(float)
        ref = reference_rows(y, s, members, annotated)
        overall = roc_auc_score(y, s)
        assert row[1] == f"{overall:.4f}"
        assert row[2] == f"{final_metric_ref(overall, list(ref.values())):.4f}"
        low = min((r[m], g, m) for g, r in ref.items() for m in AUCS)
        assert row[3].startswith(f"{low[0]:.4f}") and low[1] in row[3]
        big = max(((abs(r[m]), r[m], g) for g, r in ref.items() for m in AEGS))
        assert row[4].startswith(fmt4s(big[1])) and big[2] in row[4]
        assert row[5] == "0"


def test_base_html_metric_tables_match_reference(base):
    page = parse_html(base["dir"] / "x.html")
    df = base["df"]
    y = df["label"].to_numpy() == 1
    members, annotated = memberships(df, base["ids"])
    tables = [(t, a) for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "metrics"]
    assert [a["data-model"] for _, a in tables] == base["models"]
    for rows, attrs in tables:
        ref = reference_rows(y, df[attrs["data-model"]].to_numpy(float), members, annotated)
        assert len(rows) == 1 + 4
        for row in rows[1:]:
            r = ref[row[0]]
            assert [int(c.replace(",", "")) for c in row[1:6]] == [r[c] for c in COUNTS]
            assert row[6:11] == [fmt4(r[m]) for m in AUCS] + [fmt4s(r[m]) for m in AEGS]


def test_base_html_threshold_tables(base):
    page = parse_html(base["dir"] / "x.html")
    at = base["ev"].thresholds
    tables = [(t, a) for t, a in zip(page.tables, page.table_attrs)
              if a.get("class") == "thresholds"]
    assert len(tables) == 2
    for rows, attrs in tables:
        assert len(rows) == 1 + 12
        for row in rows[1:]:
            rec = at[(at["model"] == attrs["data-model"]) & (at["subgroup"] == row[0])
                     & (at["threshold"] == float(row[1]))].iloc[0]
            for text, gap in zip(row[2:], ["positive_rate_gap", "tpr_gap", "fpr_gap", "fnr_gap",
                                           "precision_gap"]):
                assert text.split()[0] == fmt4s(rec[gap])
                if not math.isnan(rec[gap]):
                    lo, hi = re.findall(r"[+-]\d\.\d{3}", text.split(" ", 1)[1])
                    for t, v in ((lo, rec[f"{gap}_low"]), (hi, rec[f"{gap}_high"])):
                        assert abs(float(t) - v) <= 0.0005 + 1e-12


def test_base_html_threshold_caption(base):
    page = parse_html(base["dir"] / "x.html")
    assert "at threshold 0.5 (predicted positive" in page.text


# ----------------------------------------------------------------------------- run C:
# text label, --nan-policy omit, --missing-subgroup exclude, --intersections 2,
# --significance holm, --ci delong --confidence 0.9, --top 3

C_IDS = ["id0", "id1", "id2"]


@pytest.fixture(scope="module")
def run_c(tmp_path_factory):
    d = tmp_path_factory.mktemp("c")
    df = make_data(seed=2, n=3000, ids=3, text=True, nan_scores=True)
    path = d / "data.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "label", "--positive", "toxic", "--scores", "m0",
                            "m1", "--subgroups", *C_IDS, "--intersections", "2",
                            "--min-subgroup-size", "20", "--significance", "holm", "--ci",
                            "delong", "--confidence", "0.9", "--nan-policy", "omit",
                            "--missing-subgroup", "exclude", "--top", "3", "--out", d / "c.csv",
                            "--out", d / "c.json", "--out", d / "c.html"])
    assert rc == 0, err
    back = pd.read_csv(path, keep_default_na=True)
    return dict(dir=d, df=back, out=out, err=err)


def _c_reference(df, model):
    keep = df[model].notna().to_numpy()
    sub = df[keep]
    y = (sub["label"] == "toxic").to_numpy()
    s = sub[model].to_numpy(float)
    members, annotated = memberships(sub, C_IDS)
    for a, b in [("id0", "id1"), ("id0", "id2"), ("id1", "id2")]:
        m = members[a] & members[b]
        if (m & y).sum() >= 20 and (m & ~y).sum() >= 20:
            members[f"{a} & {b}"] = m
            annotated[f"{a} & {b}"] = annotated[a] & annotated[b]
    return y, s, reference_rows(y, s, members, annotated, exclude=True), int((~keep).sum())


def test_c_csv_matches_brute_force_per_model(run_c):
    rows = read_csv_exact(run_c["dir"] / "c.csv")
    df = run_c["df"]
    n_inter = 0
    for model in ["m0", "m1"]:
        y, s, ref, _ = _c_reference(df, model)
        got = [r for r in rows if r["model"] == model]
        assert [r["subgroup"] for r in got] == list(ref), model
        n_inter += sum(" & " in g for g in ref)
        overall = roc_auc_score(y, s)
        base_rows = [ref[g] for g in C_IDS]
        for rec in got:
            r = ref[rec["subgroup"]]
            for c in COUNTS:
                assert int(rec[c]) == r[c], (model, rec["subgroup"], c)
            for c in METRICS:
                assert close(float(rec[c]), r[c], 1e-12), (model, rec["subgroup"], c)
                lo, hi = float(rec[f"{c}_low"]), float(rec[f"{c}_high"])
                assert lo <= float(rec[c]) <= hi
            assert close(float(rec["overall_auc"]), overall, 1e-12)
            assert close(float(rec["final_metric"]), final_metric_ref(overall, base_rows), 1e-12)
    assert n_inter >= 1, "the data must give some intersection"


def test_c_holm_adjustment_and_flags_recomputed(run_c):
    """The adjusted p-values in the CSV are Holm's of the raw ones over each model's
    subgroups x metrics, and a value is flagged exactly when adjusted p <= 0.1."""
    rows = read_csv_exact(run_c["dir"] / "c.csv")
    for model in ["m0", "m1"]:
        got = [r for r in rows if r["model"] == model]
        cells = [(float(r[f"{m}_pvalue"]), r, m) for r in got for m in METRICS
                 if r[f"{m}_pvalue"] is not None]
        k = len(cells)
        order = sorted(range(k), key=lambda i: cells[i][0])
        adjusted = [0.0] * k
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (k - rank) * cells[i][0]))
            adjusted[i] = running
        for (p, r, m), adj in zip(cells, adjusted):
            assert close(float(r[f"{m}_pvalue_adjusted"]), adj, 1e-12), (model, r["subgroup"], m)
            assert (r[f"{m}_significant"] == "True") == (adj <= 0.1 + 1e-15)


def test_c_html_significance_claims_supported(run_c):
    rows = read_csv_exact(run_c["dir"] / "c.csv")
    by = {(r["model"], r["subgroup"]): r for r in rows}
    page = parse_html(run_c["dir"] / "c.html")
    starred = 0
    for rows_, attrs in zip(page.tables, page.table_attrs):
        if attrs.get("class") not in ("metrics", "intersections"):
            continue
        model = attrs["data-model"]
        offset = 6 if attrs["class"] == "metrics" else 3
        for row in rows_[1:]:
            rec = by[(model, row[0])]
            for text, m in zip(row[offset:offset + 5], METRICS):
                flagged = "*" in text
                starred += flagged
                adj = rec[f"{m}_pvalue_adjusted"]
                assert flagged == (adj is not None and float(adj) <= 0.1), (model, row[0], m)
                # the value and interval shown are the table's
                shown = re.findall(r"[+-]?\d\.\d+", text)
                want = fmt4(float(rec[m])) if m in AUCS else fmt4s(float(rec[m]))
                assert text.startswith(want)
                if attrs["class"] == "metrics":
                    assert abs(float(shown[1]) - float(rec[f"{m}_low"])) <= 0.0005 + 1e-12
                    assert abs(float(shown[2]) - float(rec[f"{m}_high"])) <= 0.0005 + 1e-12
    settings = _settings(page)
    n_defined = sum(r[m] is not None for r in rows for m in METRICS)
    n_tested = sum(r[f"{m}_pvalue"] is not None for r in rows for m in METRICS)
    assert f"{n_tested:,} of the {n_defined:,} defined values tested" in settings["significance"]
    assert "level 0.1" in settings["significance"]
    assert settings["intervals"].startswith("delong, 90%")


def test_c_html_settings_counts(run_c):
    df = run_c["df"]
    page = parse_html(run_c["dir"] / "c.html")
    settings = _settings(page)
    y = (df["label"] == "toxic").to_numpy()
    assert settings["rows"].startswith(f"{len(df):,} ({int((~y).sum()):,} negative, "
                                       f"{int(y.sum()):,} positive")
    for model in ["m0", "m1"]:
        _, _, _, dropped = _c_reference(df, model)
        assert f"{model}: {dropped:,} (" in settings["rows left out"]
    n_inter = len({g for m in ["m0", "m1"] for g in _c_reference(df, m)[2] if " & " in g})
    assert settings["subgroups"].startswith(f"3 and {n_inter} intersections")
    assert "at least 20 rows of each class" in settings["subgroups"]


def test_c_terminal_top_rows_and_stars(run_c):
    out = run_c["out"]
    rows = read_csv_exact(run_c["dir"] / "c.csv")
    for model in ["m0", "m1"]:
        got = [r for r in rows if r["model"] == model]
        lowest = sorted(got, key=lambda r: min(float(r[m]) for m in AUCS))
        want = [r["subgroup"] for r in lowest[:3]]
        block = out.split(f"{model}  overall AUC", 1)[1].split("overall AUC", 1)[0]
        first = block.split("\n\n")[0].splitlines()[3:]
        assert [ln[:len(g)] for ln, g in zip(first, want)] == want
        assert len([ln for ln in first if ln.strip()]) == 3
    n_all = len(read_csv_exact(run_c["dir"] / "c.csv")) // 2
    assert f"3 worst of {n_all} subgroups shown" in out or "3 worst of" in out


def test_c_json_equals_csv(run_c):
    rows = read_csv_exact(run_c["dir"] / "c.csv")
    data = json.loads((run_c["dir"] / "c.json").read_text())
    assert data["settings"]["confidence"] == 0.9 and data["settings"]["significance"] == "holm"
    by = {(r["model"], r["subgroup"]): r for r in rows}
    n = 0
    for model in data["models"]:
        for rec in model["subgroups"]:
            csv_rec = by[(model["name"], rec["subgroup"])]
            for k, v in rec.items():
                if k == "subgroup":
                    continue
                c = csv_rec[k]
                if isinstance(v, bool):
                    assert str(v) == c, k
                elif v is None:
                    assert c is None, k
                else:
                    assert float(c) == float(v), k
                n += 1
    assert n > 100 and len(by) == sum(len(m["subgroups"]) for m in data["models"])


# ----------------------------------------------------------------------------- run D:
# fractional label and identities (--label-threshold/--subgroup-threshold), --weight,
# --sensitive-features, --ci bootstrap, --significance bh, names a spreadsheet would run

def make_d(seed=3, n=1200):
    rng = np.random.default_rng(seed)
    tox = np.round(rng.random(n), 2)
    y = tox >= 0.6
    df = pd.DataFrame({"tox": tox})
    df["=id"] = np.where(rng.random(n) < 0.1, np.nan, np.round(rng.random(n) * 0.5 + 0.2, 1))
    df["plain"] = np.where(rng.random(n) < 0.05, np.nan, (rng.random(n) < 0.2).astype(float))
    df["@m"] = np.round(rng.random(n) * 0.5 + 0.35 * y + 0.1 * (df["=id"] >= 0.4), 2)
    df["w"] = rng.integers(0, 4, n).astype(float)
    df["grp"] = rng.choice(["x", "y"], n)
    return df


@pytest.fixture(scope="module")
def run_d(tmp_path_factory):
    d = tmp_path_factory.mktemp("d")
    df = make_d()
    path = d / "data.csv"
    df.to_csv(path, index=False)
    common = [path, "--label", "tox", "--label-threshold", "0.6", "--scores", "@m",
              "--subgroups", "=id", "plain", "--subgroup-threshold", "0.4", "--weight", "w",
              "--sensitive-features", "grp", "--thresholds", "0.5", "--wide", "-q"]
    rc, out, err = run_cli(common + ["--out", d / "d.csv", "--out", d / "d.json"])
    assert rc == 0, err
    rc2, out2, err2 = run_cli(common + ["--csv-raw", "--out", d / "raw.csv"])
    assert rc2 == 0, err2
    return dict(dir=d, df=pd.read_csv(path), out=out, out2=out2)


def _d_reference(df):
    y = df["tox"].to_numpy() >= 0.6
    s = df["@m"].to_numpy(float)
    w = df["w"].to_numpy(float)
    members = {"=id": df["=id"].to_numpy(float) >= 0.4,
               "plain": df["plain"].to_numpy(float) >= 0.4,
               "grp=x": (df["grp"] == "x").to_numpy(), "grp=y": (df["grp"] == "y").to_numpy()}
    annotated = {g: np.ones(len(df), bool) for g in members}
    return y, s, w, reference_rows(y, s, members, annotated, w=w)


def test_d_weighted_csv_matches_reference_and_names_are_safe(run_d):
    y, s, w, ref = _d_reference(run_d["df"])
    rows = read_csv_exact(run_d["dir"] / "d.csv")
    assert [r["model"] for r in rows] == ["'@m"] * 4
    assert [r["subgroup"] for r in rows] == ["'=id", "plain", "grp=x", "grp=y"]
    raw = read_csv_exact(run_d["dir"] / "raw.csv")
    assert [r["model"] for r in raw] == ["@m"] * 4
    assert [r["subgroup"] for r in raw] == ["=id", "plain", "grp=x", "grp=y"]
    overall = roc_auc_score(y, s, sample_weight=w)
    for rec, rec_raw in zip(rows, raw):
        r = ref[rec_raw["subgroup"]]
        for c in METRICS:
            assert close(float(rec[c]), r[c], 1e-12), (rec_raw["subgroup"], c)
            assert rec[c] == rec_raw[c]
        assert close(float(rec["overall_auc"]), overall, 1e-12)
        assert close(float(rec["final_metric"]), final_metric_ref(overall, list(ref.values())),
                     1e-12)


def test_d_weighted_counts_are_rows(run_d):
    """The count columns count rows (docs: size/cells), whatever the weights."""
    _, _, _, ref = _d_reference(run_d["df"])
    for rec in read_csv_exact(run_d["dir"] / "raw.csv"):
        r = ref[rec["subgroup"]]
        assert [int(float(rec[c])) for c in COUNTS] == [r[c] for c in COUNTS], rec["subgroup"]


def test_d_terminal_shows_weighted_values_wide(run_d):
    _, _, _, ref = _d_reference(run_d["df"])
    lines = run_d["out"].splitlines()
    header = [ln for ln in lines if ln.startswith("subgroup  size")]
    assert len(header) == 1  # --wide: one piece
    for g, r in ref.items():
        line = [ln for ln in lines if ln.split()[:1] == [g]][0]
        cells = line.split()
        assert cells[6:11] == [fmt4(r[m]) for m in AUCS] + [fmt4s(r[m]) for m in AEGS], g


def test_d_weighted_threshold_rows_are_weight_sums(run_d):
    """With --weight a weight counts as that many rows (docs/thresholds.md): the threshold
    CSV's cells and tp/fp are weight sums, the rates their ratios, Wilson's on those sums."""
    y, s, w, _ = _d_reference(run_d["df"])
    df = run_d["df"]
    members = {"=id": df["=id"].to_numpy(float) >= 0.4,
               "plain": df["plain"].to_numpy(float) >= 0.4,
               "grp=x": (df["grp"] == "x").to_numpy(), "grp=y": (df["grp"] == "y").to_numpy()}
    recs = read_csv_exact(run_d["dir"] / "raw.thresholds.csv")
    assert [r["subgroup"] for r in recs] == list(members)
    pred = s >= 0.5
    for rec in recs:
        for side, mask in (("subgroup", members[rec["subgroup"]]),
                           ("background", ~members[rec["subgroup"]])):
            tp, fp = w[mask & y & pred].sum(), w[mask & ~y & pred].sum()
            pos, neg = w[mask & y].sum(), w[mask & ~y].sum()
            assert float(rec[f"{side}_tp"]) == tp and float(rec[f"{side}_fp"]) == fp
            assert float(rec[f"{side}_positives"]) == pos
            assert float(rec[f"{side}_negatives"]) == neg
            assert close(float(rec[f"{side}_tpr"]), tp / pos, 1e-12)
            assert close(float(rec[f"{side}_precision"]), tp / (tp + fp), 1e-12)
            lo, hi = wilson(tp, pos, 0.95)
            assert close(float(rec[f"{side}_tpr_low"]), lo, 1e-7)
            assert close(float(rec[f"{side}_tpr_high"]), hi, 1e-7)
    safe = read_csv_exact(run_d["dir"] / "d.thresholds.csv")
    assert [r["subgroup"] for r in safe] == ["'=id", "plain", "grp=x", "grp=y"]
    assert {r["model"] for r in safe} == {"'@m"}


def test_d_json_weighted_matches_reference(run_d):
    y, s, w, ref = _d_reference(run_d["df"])
    data = json.loads((run_d["dir"] / "d.json").read_text())
    assert data["settings"]["weighted"] is True
    (model,) = data["models"]
    assert model["name"] == "@m"  # JSON keeps names exactly
    for rec in model["subgroups"]:
        for c in METRICS:
            assert close(rec[c], ref[rec["subgroup"]][c], 1e-12)


# ----------------------------------------------------------------------------- run E:
# two --sensitive-features with empty fields, --missing-subgroup exclude, an identity column,
# --thresholds with --confidence 0.8, --weight, --ci bootstrap, --significance bh, HTML

def make_e(seed=4, n=1600):
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.35
    race = rng.choice(["b", "a", "c", ""], n, p=[0.35, 0.35, 0.2, 0.1])
    gender = rng.choice(["f", "m", ""], n, p=[0.5, 0.45, 0.05])
    ident = np.where(rng.random(n) < 0.1, np.nan, (rng.random(n) < 0.3).astype(float))
    s = np.round(rng.random(n) * 0.6 + 0.3 * y + 0.05 * (race == "b"), 2)
    return pd.DataFrame({"y": y.astype(int), "race": race, "gender": gender, "idn": ident,
                         "s": s, "w": rng.integers(1, 3, n).astype(float)})


@pytest.fixture(scope="module")
def run_e(tmp_path_factory):
    d = tmp_path_factory.mktemp("e")
    df = make_e()
    path = d / "data.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "y", "--scores", "s", "--subgroups", "idn",
                            "--sensitive-features", "race", "gender", "--min-subgroup-size",
                            "40", "--missing-subgroup", "exclude", "--thresholds", "0.5", "0.8",
                            "--confidence", "0.8", "--ci", "bootstrap", "--n-boot", "200",
                            "--seed", "3", "--significance", "bh", "--out", d / "e.csv",
                            "--out", d / "e.json", "--out", d / "e.html"])
    assert rc == 0, err
    df = pd.read_csv(path, keep_default_na=False, dtype={"race": str, "gender": str})
    df["idn"] = pd.to_numeric(df["idn"].replace("", np.nan))
    return dict(dir=d, df=df, out=out, err=err)


def _e_members(df):
    y = df["y"].to_numpy() == 1
    race, gender = df["race"].to_numpy(), df["gender"].to_numpy()
    members = {"idn": df["idn"].to_numpy(float) >= 0.5}
    annotated = {"idn": ~np.isnan(df["idn"].to_numpy(float))}
    for v in ["a", "b", "c"]:
        members[f"race={v}"] = race == v
        annotated[f"race={v}"] = race != ""
    for v in ["f", "m"]:
        members[f"gender={v}"] = gender == v
        annotated[f"gender={v}"] = gender != ""
    for r in ["a", "b", "c"]:
        for g in ["f", "m"]:
            m = (race == r) & (gender == g)
            if (m & y).sum() >= 40 and (m & ~y).sum() >= 40:
                members[f"race={r} & gender={g}"] = m
                annotated[f"race={r} & gender={g}"] = (race != "") & (gender != "")
    return y, members, annotated


def test_e_groups_and_metrics_match_reference(run_e):
    df = run_e["df"]
    y, members, annotated = _e_members(df)
    s = df["s"].to_numpy(float)
    ref = reference_rows(y, s, members, annotated, exclude=True)  # unweighted: no --weight
    rows = read_csv_exact(run_e["dir"] / "e.csv")
    assert [r["subgroup"] for r in rows] == list(ref)
    overall = roc_auc_score(y, s)
    for rec in rows:
        r = ref[rec["subgroup"]]
        for c in COUNTS:
            assert int(rec[c]) == r[c], (rec["subgroup"], c)
        for c in METRICS:
            assert close(float(rec[c]), r[c], 1e-12), (rec["subgroup"], c)
        assert close(float(rec["final_metric"]), final_metric_ref(overall, list(ref.values())),
                     1e-12)
        # (docs/intervals.md: with missing_subgroup="exclude" no final-metric interval)
        assert "final_metric_low" not in rec


def test_e_thresholds_csv_wilson_at_confidence(run_e):
    df = run_e["df"]
    y, members, annotated = _e_members(df)
    s = df["s"].to_numpy(float)
    recs = read_csv_exact(run_e["dir"] / "e.thresholds.csv")
    assert len(recs) == 2 * len(members)
    for rec in recs:
        g, t = rec["subgroup"], float(rec["threshold"])
        pred = s >= t
        for side, mask in (("subgroup", members[g]), ("background", ~members[g] & annotated[g])):
            tp, fp = int((mask & y & pred).sum()), int((mask & ~y & pred).sum())
            pos, neg = int((mask & y).sum()), int((mask & ~y).sum())
            assert (int(float(rec[f"{side}_tp"])), int(float(rec[f"{side}_fp"]))) == (tp, fp)
            for rate, (k, n) in {"tpr": (tp, pos), "fpr": (fp, neg),
                                 "positive_rate": (tp + fp, pos + neg)}.items():
                assert close(float(rec[f"{side}_{rate}"]), k / n, 1e-12), (g, side, rate)
                lo, hi = wilson(k, n, 0.8)
                assert close(float(rec[f"{side}_{rate}_low"]), lo, 1e-7), (g, side, rate)
                assert close(float(rec[f"{side}_{rate}_high"]), hi, 1e-7), (g, side, rate)


def test_e_html_claims(run_e):
    rows = read_csv_exact(run_e["dir"] / "e.csv")
    page = parse_html(run_e["dir"] / "e.html")
    settings = _settings(page)
    df = run_e["df"]
    y = df["y"].to_numpy() == 1
    assert settings["rows"].startswith(f"{len(df):,} ({int((~y).sum()):,} negative, "
                                       f"{int(y.sum()):,} positive)")
    assert settings["subgroups"].startswith(f"{len(rows)} (")
    assert "at least 40 row(s) of each class" in settings["subgroups"]
    assert settings["intervals"] == "bootstrap, 80%, 200 replicates, seed 3"
    assert "level 0.2" in settings["significance"]
    assert "0.5, 0.8" in settings["thresholds"] and "80%" in settings["thresholds"]
    by = {r["subgroup"]: r for r in rows}
    (metrics,) = [t for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "metrics"]
    assert sorted(r[0] for r in metrics[1:]) == sorted(by)
    for row in metrics[1:]:
        rec = by[row[0]]
        for text, m in zip(row[6:11], METRICS):
            adj = rec[f"{m}_pvalue_adjusted"]
            assert ("*" in text) == (adj is not None and float(adj) <= 0.2), (row[0], m)
            nums = re.findall(r"[+-]?\d\.\d+", text)
            assert abs(float(nums[1]) - float(rec[f"{m}_low"])) <= 0.0005 + 1e-12
            assert abs(float(nums[2]) - float(rec[f"{m}_high"])) <= 0.0005 + 1e-12
    (summary,) = [t for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "summary"]
    final = float(rows[0]["final_metric"])
    assert summary[1][2] == f"{final:.4f}"
    overall = float(rows[0]["overall_auc"])
    lo, hi = float(rows[0]["overall_auc_low"]), float(rows[0]["overall_auc_high"])
    assert summary[1][1] == f"{overall:.4f}[{lo:.3f}, {hi:.3f}]"


def test_e_bh_adjustment_recomputed(run_e):
    rows = read_csv_exact(run_e["dir"] / "e.csv")
    cells = [(float(r[f"{m}_pvalue"]), r, m) for r in rows for m in METRICS
             if r[f"{m}_pvalue"] is not None]
    k = len(cells)
    order = sorted(range(k), key=lambda i: cells[i][0], reverse=True)
    adjusted, running = [0.0] * k, 1.0
    for pos, i in enumerate(order):
        rank = k - pos
        running = min(running, cells[i][0] * k / rank)
        adjusted[i] = min(1.0, running)
    for (p, r, m), adj in zip(cells, adjusted):
        assert close(float(r[f"{m}_pvalue_adjusted"]), adj, 1e-12), (r["subgroup"], m)
        assert (r[f"{m}_significant"] == "True") == (adj <= 0.2)


def test_e_bootstrap_seed_repeatable(run_e, tmp_path):
    path = run_e["dir"] / "data.csv"
    rc, out, err = run_cli([path, "--label", "y", "--scores", "s", "--subgroups", "idn",
                            "--sensitive-features", "race", "gender", "--min-subgroup-size",
                            "40", "--missing-subgroup", "exclude", "--thresholds", "0.5", "0.8",
                            "--confidence", "0.8", "--ci", "bootstrap", "--n-boot", "200",
                            "--seed", "3", "--significance", "bh", "--out", tmp_path / "e.csv",
                            "-q"])
    assert rc == 0, err
    assert (tmp_path / "e.csv").read_bytes() == (run_e["dir"] / "e.csv").read_bytes()
    assert out == run_e["out"]


# ----------------------------------------------------------------------------- undefined values,
# hostile names, --top ties

@pytest.fixture(scope="module")
def run_f(tmp_path_factory):
    d = tmp_path_factory.mktemp("f")
    df = make_data(seed=5, n=800, ids=3, models=1)
    df["id2"] = np.where(df["label"] == 1, 0.0, df["id2"])  # no positive: 3 metrics undefined
    df["race"] = np.where(df.index % 7 == 0, "\x1b[31mred",
                          np.where(df.index % 5 == 0, "sp ", "b"))
    path = d / "data.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "label", "--scores", "m0", "--subgroups", "id0",
                            "id1", "id2", "--sensitive-features", "race", "--wide",
                            "--out", d / "f.csv", "--out", d / "f.json", "--out", d / "f.html"])
    assert rc == 0, err
    return dict(dir=d, df=pd.read_csv(path, keep_default_na=False,
                                      dtype={"race": str}).assign(
        id0=lambda x: pd.to_numeric(x["id0"].replace("", np.nan)),
        id1=lambda x: pd.to_numeric(x["id1"].replace("", np.nan)),
        id2=lambda x: pd.to_numeric(x["id2"].replace("", np.nan))), out=out, err=err)


def _f_reference(df):
    y = df["label"].to_numpy() == 1
    s = df["m0"].to_numpy(float)
    members, annotated = memberships(df, ["id0", "id1", "id2"])
    for v in sorted(set(df["race"])):
        members[f"race={v}"] = (df["race"] == v).to_numpy()
        annotated[f"race={v}"] = np.ones(len(df), bool)
    return y, s, reference_rows(y, s, members, annotated)


def test_f_undefined_values_in_every_output(run_f):
    y, s, ref = _f_reference(run_f["df"])
    rows = read_csv_exact(run_f["dir"] / "f.csv")
    data = json.loads((run_f["dir"] / "f.json").read_text())
    assert [r["subgroup"] for r in rows] == list(ref)
    n_undefined = 0
    for rec, jrec in zip(rows, data["models"][0]["subgroups"]):
        r = ref[rec["subgroup"]]
        for m in METRICS:
            if math.isnan(r[m]):
                n_undefined += 1
                assert rec[m] is None and jrec[m] is None
            else:
                assert close(float(rec[m]), r[m], 1e-12) and close(jrec[m], r[m], 1e-12)
    assert n_undefined == 3
    assert rows[0]["final_metric"] is None and data["models"][0]["final_metric"] is None
    assert data["models"][0]["undefined_values"] == 3
    # the HTML's "without the n/a AUCs" value: each power mean over the defined AUCs
    overall = roc_auc_score(y, s)
    parts = [power_mean([r[m] for r in ref.values() if not math.isnan(r[m])]) for m in AUCS]
    omitted = 0.25 * overall + 0.75 * float(np.mean(parts))
    page = parse_html(run_f["dir"] / "f.html")
    (summary,) = [t for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "summary"]
    assert summary[1][2] == f"n/a{omitted:.4f} without the n/a AUCs"
    assert summary[1][5] == "3"
    assert f"final metric n/a ({omitted:.4f} without the n/a AUCs)" in run_f["out"]
    assert "n/a: 3 undefined value(s)" in run_f["out"]


def test_f_names_escaped_on_terminal_and_html(run_f):
    out = run_f["out"]
    assert "\x1b" not in out
    assert "race=\\x1b[31mred" in out
    assert "race=sp\\x20" in out
    page = parse_html(run_f["dir"] / "f.html")
    assert "\x1b" not in page.text
    (metrics,) = [t for t, a in zip(page.tables, page.table_attrs) if a.get("class") == "metrics"]
    assert {"race=\\x1b[31mred", "race=sp\\x20", "race=b"} <= {r[0] for r in metrics[1:]}
    # and the CSV/JSON keep the names
    rows = read_csv_exact(run_f["dir"] / "f.csv")
    assert {"race=\x1b[31mred", "race=sp ", "race=b"} <= {r["subgroup"] for r in rows}


@pytest.mark.parametrize("top", [1, 2, 4, 6, 7, 20])
def test_top_n_rows_on_terminal(run_f, top):
    """--top N: the N worst per model by its lowest AUC; undefined ones last (in-process call of
    the report's text, same code as the command)."""
    path = run_f["dir"] / "data.csv"
    rc, out, err = run_cli([path, "--label", "label", "--scores", "m0", "--subgroups", "id0",
                            "id1", "id2", "--sensitive-features", "race", "--wide", "--top",
                            top, "-q"])
    assert rc == 0, err
    _, _, ref = _f_reference(run_f["df"])
    key = {g: min((r[m] for m in AUCS if not math.isnan(r[m])), default=np.inf)
           for g, r in ref.items()}
    order = sorted(ref, key=lambda g: key[g])  # stable: ties keep the table's order
    lines = out.split("\n\n")[0].splitlines()[3:]
    shown = [ln.split()[0] for ln in lines]
    want = [g.replace("\x1b", "\\x1b").replace("sp ", "sp\\x20") for g in order[:top]]
    assert shown == want
    if top < len(ref):
        assert f"({top} worst of {len(ref)} subgroups shown" in out
    else:
        assert "worst of" not in out


# ----------------------------------------------------------------------------- output safety

@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("safety")
    df = make_data(seed=7, n=300, ids=2, models=1)
    path = d / "data.csv"
    df.to_csv(path, index=False)
    return path


def _args(path, *more):
    return [path, "--label", "label", "--scores", "m0", "--subgroups", "id0", "id1", "-q", *more]


@pytest.mark.parametrize("ext", ["csv", "json", "html"])
def test_existing_output_needs_force(small_data, tmp_path, ext):
    target = tmp_path / f"r.{ext}"
    target.write_text("keep me")
    rc, out, err = run_cli(_args(small_data, "--out", target))
    assert rc == 1 and "already exists" in err and "--force" in err
    assert target.read_text() == "keep me"
    assert out == ""  # refused before any work
    if ext != "html":
        rc, _, err = run_cli(_args(small_data, "--out", target, "--force"))
        assert rc == 0, err
        assert target.read_text() != "keep me"


def test_thresholds_sibling_existing_refused_before_any_write(small_data, tmp_path):
    (tmp_path / "r.thresholds.csv").write_text("old")
    rc, out, err = run_cli(_args(small_data, "--thresholds", "0.5", "--out", tmp_path / "r.csv",
                                 "--out", tmp_path / "r.json"))
    assert rc == 1 and "r.thresholds.csv" in err
    assert sorted(os.listdir(tmp_path)) == ["r.thresholds.csv"]
    assert (tmp_path / "r.thresholds.csv").read_text() == "old"


@pytest.mark.parametrize("how", ["same", "relative", "hardlink", "symlink"])
def test_output_naming_the_input_is_refused(small_data, tmp_path, how, monkeypatch):
    before = small_data.read_bytes()
    if how == "same":
        target = small_data
    elif how == "relative":
        monkeypatch.chdir(small_data.parent)
        target = os.path.join(".", "sub", "..", "data.csv")
        os.makedirs(small_data.parent / "sub", exist_ok=True)
    elif how == "hardlink":
        target = tmp_path / "link.csv"
        os.link(small_data, target)
    else:
        target = tmp_path / "sym.csv"
        os.symlink(small_data, target)
    rc, out, err = run_cli(_args(small_data, "--out", target, "--force"))
    assert rc == 1, (how, err)
    assert small_data.read_bytes() == before


def test_thresholds_sibling_naming_the_input_is_refused(tmp_path):
    df = make_data(seed=7, n=300, ids=2, models=1)
    data = tmp_path / "r.thresholds.csv"
    df.to_csv(data, index=False)
    before = data.read_bytes()
    rc, out, err = run_cli(_args(data, "--thresholds", "0.5", "--out", tmp_path / "r.csv",
                                 "--force"))
    assert rc == 1 and "input" in err
    assert data.read_bytes() == before and not (tmp_path / "r.csv").exists()


@pytest.mark.parametrize("late", [["--positive", "nope"], ["--subgroups", "race"],
                                  ["--weight", "race"], ["--label", "race"]])
def test_late_failure_writes_nothing(tmp_path, late):
    df = make_data(seed=8, n=300, ids=2, models=1)
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    args = [path, "--label", "label", "--scores", "m0", "--subgroups", "id0", "id1", "-q"]
    for k in range(0, len(late), 2):  # replace or add the option
        if late[k] in args:
            args[args.index(late[k]) + 1] = late[k + 1]
        else:
            args += late[k:k + 2]
    existing = tmp_path / "old.json"
    existing.write_text("previous")
    rc, out, err = run_cli(args + ["--out", tmp_path / "r.csv", "--out", tmp_path / "r.html",
                                   "--out", existing, "--force"])
    assert rc == 1, err
    assert err.startswith("fastbias: error: ") and err.count("\n") == 1
    assert sorted(os.listdir(tmp_path)) == ["data.csv", "old.json"]
    assert existing.read_text() == "previous"


def test_duplicate_output_refused(small_data, tmp_path):
    rc, _, err = run_cli(_args(small_data, "--out", tmp_path / "r.csv", "--out",
                               tmp_path / "." / "r.csv"))
    assert rc == 1 and "twice" in err and not (tmp_path / "r.csv").exists()


# ----------------------------------------------------------------------------- defects:
# --nan-policy omit with --intersections: models with different intersections
# (docs/intersections.md: "Each model keeps the intersections that are large enough on its own
# rows, so two models may list different intersections.")

def _two_models_different_combinations(d):
    """Two --sensitive-features whose combination 'r=p & g=x' m1 loses under omit."""
    rng = np.random.default_rng(0)
    n = 600
    y = rng.random(n) < 0.4
    r = rng.choice(["p", "q"], n)
    g = rng.choice(["f", "m", "x"], n, p=[.45, .45, .1])
    c = (r == "p") & (g == "x")
    m0 = np.round(rng.random(n) * 0.6 + 0.3 * y, 2)
    m1 = m0.astype(float).copy()
    m1[np.flatnonzero(c & y)[:4]] = np.nan
    df = pd.DataFrame(dict(label=y.astype(int), r=r, g=g, m0=m0, m1=m1))
    path = d / "data.csv"
    df.to_csv(path, index=False)
    size = int(min((c & y).sum(), (c & ~y).sum()))
    return path, df, ["--label", "label", "--scores", "m0", "m1", "--sensitive-features", "r",
                      "g", "--min-subgroup-size", str(size), "--nan-policy", "omit"]


def _two_models_different_intersections(d):
    rng = np.random.default_rng(0)
    n = 600
    y = rng.random(n) < 0.4
    a, b = rng.random(n) < 0.3, rng.random(n) < 0.3
    m0 = np.round(rng.random(n) * 0.6 + 0.3 * y, 2)
    m1 = m0.astype(float).copy()
    m1[np.flatnonzero(a & b & y)[:8]] = np.nan  # m1 keeps 10 positives of a & b, m0 18
    df = pd.DataFrame(dict(label=y.astype(int), a=a.astype(int), b=b.astype(int), m0=m0,
                           m1=m1))
    path = d / "data.csv"
    df.to_csv(path, index=False)
    size = int(min((a & b & y).sum(), (a & b & ~y).sum()))  # 18: m0 keeps a & b, m1 not
    return path, df, ["--label", "label", "--scores", "m0", "m1", "--subgroups", "a", "b",
                      "--intersections", "2", "--min-subgroup-size", str(size),
                      "--nan-policy", "omit"]


def test_intersections_per_model_in_csv_match_reference(tmp_path):
    path, df, opts = _two_models_different_intersections(tmp_path)
    rc, out, err = run_cli([path, *opts, "--out", tmp_path / "x.csv", "-q"])
    assert rc == 0, err
    rows = read_csv_exact(tmp_path / "x.csv")
    assert [(r["model"], r["subgroup"]) for r in rows] == [
        ("m0", "a"), ("m0", "b"), ("m0", "a & b"), ("m1", "a"), ("m1", "b")]
    for rec in rows:
        keep = df[rec["model"]].notna().to_numpy()
        sub = df[keep]
        y = sub["label"].to_numpy() == 1
        s = sub[rec["model"]].to_numpy(float)
        members = {"a": sub["a"].to_numpy() == 1, "b": sub["b"].to_numpy() == 1}
        members["a & b"] = members["a"] & members["b"]
        annotated = {g: np.ones(len(sub), bool) for g in members}
        r = reference_rows(y, s, {rec["subgroup"]: members[rec["subgroup"]]}, annotated)
        for c in METRICS:
            assert close(float(rec[c]), r[rec["subgroup"]][c], 1e-12)


@pytest.mark.parametrize("kind", ["intersections", "combinations"])
def test_html_holds_each_models_own_subgroups(tmp_path, kind):
    path, df, opts = (_two_models_different_intersections if kind == "intersections"
                      else _two_models_different_combinations)(tmp_path)
    rc, _, err = run_cli([path, *opts, "--out", tmp_path / "x.csv", "-q"])
    assert rc == 0, err
    per_model = {}
    for rec in read_csv_exact(tmp_path / "x.csv"):
        per_model.setdefault(rec["model"], []).append(rec["subgroup"])
    assert len(per_model["m0"]) == len(per_model["m1"]) + 1
    try:
        rc, out, err = run_cli([path, *opts, "--out", tmp_path / "x.html", "-q"])
    except Exception as exc:  # noqa: BLE001 - what the command let escape
        pytest.fail(f"fastbias report raised {type(exc).__name__}: {exc}")
    assert rc == 0, err
    page = parse_html(tmp_path / "x.html")
    tables = {a["data-model"]: t for t, a in zip(page.tables, page.table_attrs)
              if a.get("class") == "metrics"}
    for model in ("m0", "m1"):
        assert sorted(r[0] for r in tables[model][1:]) == sorted(per_model[model]), model


@pytest.mark.parametrize("kind", ["intersections", "combinations"])
def test_terminal_shows_each_models_own_subgroups(tmp_path, kind):
    path, df, opts = (_two_models_different_intersections if kind == "intersections"
                      else _two_models_different_combinations)(tmp_path)
    rc, out, err = run_cli([path, *opts, "--wide", "--out", tmp_path / "x.csv", "-q"])
    assert rc == 0, err
    m1 = [r["subgroup"] for r in read_csv_exact(tmp_path / "x.csv") if r["model"] == "m1"]
    block = out.split("m1  overall AUC", 1)[1].split("\n\n")[0]
    names = [ln.split("  ")[0].strip() for ln in block.splitlines()[3:]]
    # the CSV/JSON of m1 lack one subgroup; the terminal shows it anyway, a row of n/a counts
    # and metrics that the "n/a: N undefined value(s)" note neither counts nor explains
    assert sorted(names) == sorted(m1), names


def test_top_footnote_counts_each_models_own_subgroups(tmp_path):
    # m0 has a, b and a & b; m1 only a and b: "--top 2" says so per model
    path, df, opts = _two_models_different_intersections(tmp_path)
    rc, out, err = run_cli([path, *opts, "--top", "2", "--out", tmp_path / "x.csv", "-q"])
    assert rc == 0, err
    assert "(2 worst of 3 (m0), 2 (m1) subgroups shown for each model" in out, out


def test_error_handler_takes_a_keyerror_with_a_tuple(tmp_path, monkeypatch):
    """main() turns KeyError into one 'fastbias: error:' line, but _in_cli_terms runs re.sub
    on exc.args[0], which for a KeyError of a tuple key (e.g. the report's
    undefined_index[(model, subgroup, metric)] above) is a tuple: TypeError escapes main."""
    from fastbias.reports import report as report_module
    df = make_data(seed=7, n=300, ids=2, models=1)
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)

    def boom(self, *args, **kwargs):
        raise KeyError(("m0", "id0", "subgroup_auc"))

    monkeypatch.setattr(report_module.BiasReport, "to_text", boom)
    try:
        rc, out, err = run_cli(_args(path))
    except TypeError as exc:
        pytest.fail(f"the error handler itself raised TypeError: {exc}")
    assert rc == 1 and err.startswith("fastbias: error:")


# ----------------------------------------------------------------------------- property test

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(40, 160), grid=st.sampled_from([2, 5, 50]),
       policy=st.sampled_from(["background", "exclude"]))
def test_property_csv_json_equal_brute_force(tmp_path_factory, seed, n, grid, policy):
    d = tmp_path_factory.mktemp("prop")
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    y[:2] = [True, False]
    g1 = rng.choice([0.0, 1.0, np.nan], n, p=[0.6, 0.3, 0.1])
    g2 = rng.choice([0.0, 0.3, 0.7, np.nan], n)
    s = rng.integers(0, grid, n) / grid + 0.2 * y
    df = pd.DataFrame(dict(y=y.astype(int), g1=g1, g2=g2, s=s))
    path = d / "p.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "y", "--scores", "s", "--subgroups", "g1", "g2",
                            "--missing-subgroup", policy, "--out", d / "p.csv.out.csv",
                            "--out", d / "p.json", "-q"])
    assert rc == 0, err
    back = pd.read_csv(path)
    members, annotated = memberships(back, ["g1", "g2"])
    ref = reference_rows(back["y"].to_numpy() == 1, back["s"].to_numpy(float), members,
                         annotated, exclude=policy == "exclude")
    rows = read_csv_exact(d / "p.csv.out.csv")
    data = json.loads((d / "p.json").read_text())
    for rec, jrec in zip(rows, data["models"][0]["subgroups"]):
        r = ref[rec["subgroup"]]
        for c in COUNTS:
            assert int(rec[c]) == r[c] == jrec[c]
        for c in METRICS:
            want = r[c]
            got = None if rec[c] is None else float(rec[c])
            assert close(got, want, 1e-12) and close(jrec[c], want, 1e-12), (c, got, want)
    assert len(rows) == 2


def test_omit_with_weights_label_and_inf_scores_counts_and_metrics(tmp_path):
    df = make_data(seed=9, n=400, ids=2, models=2)
    df.loc[df.index[:7], "w"] = np.nan
    df.loc[df.index[7:10], "label"] = np.nan
    df.loc[df.index[10:14], "m1"] = np.inf
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    rc, out, err = run_cli([path, "--label", "label", "--scores", "m0", "m1", "--subgroups",
                            "id0", "id1", "--weight", "w", "--nan-policy", "omit", "--title",
                            "T\x1b]0;x\x07 <b>", "--out", tmp_path / "x.csv", "--out",
                            tmp_path / "x.html", "-q"])
    assert rc == 0, err
    back = pd.read_csv(path)
    ok = back["w"].notna() & back["label"].notna()
    settings = _settings(parse_html(tmp_path / "x.html"))
    n_neg, n_pos = int((ok & (back["label"] == 0)).sum()), int((ok & (back["label"] == 1)).sum())
    assert settings["rows"] == (f"400 ({n_neg:,} negative, {n_pos:,} positive, 3 without a "
                                f"label, 7 without a weight)")
    assert settings["rows left out"].startswith("m0: 10 (") and "m1: 14 (" in settings[
        "rows left out"]
    page_text = (tmp_path / "x.html").read_text()
    assert "\x1b" not in page_text and "<b>" not in page_text.split("<h1>", 1)[1][:40]
    for rec in read_csv_exact(tmp_path / "x.csv"):
        keep = ok & np.isfinite(back[rec["model"]])
        sub = back[keep]
        members, annotated = memberships(sub, ["id0", "id1"])
        r = reference_rows(sub["label"].to_numpy() == 1, sub[rec["model"]].to_numpy(float),
                           {rec["subgroup"]: members[rec["subgroup"]]}, annotated,
                           w=sub["w"].to_numpy(float))[rec["subgroup"]]
        for c in COUNTS:
            assert int(rec[c]) == r[c], (rec["model"], rec["subgroup"], c)
        for c in METRICS:
            assert close(float(rec[c]), r[c], 1e-12), (rec["model"], rec["subgroup"], c)
        assert close(float(rec["overall_auc"]),
                     roc_auc_score(sub["label"] == 1, sub[rec["model"]],
                                   sample_weight=sub["w"]), 1e-12)


def test_c_html_intersections_section(run_c):
    df = run_c["df"]
    page = parse_html(run_c["dir"] / "c.html")
    tables = [(t, a) for t, a in zip(page.tables, page.table_attrs)
              if a.get("class") == "intersections"]
    assert [a["data-model"] for _, a in tables] == ["m0", "m1"]
    labels = {"subgroup_auc": "Subgroup AUC", "bpsn_auc": "BPSN AUC", "bnsp_auc": "BNSP AUC"}
    for rows, attrs in tables:
        _, _, ref, _ = _c_reference(df, attrs["data-model"])
        inter = {g: r for g, r in ref.items() if " & " in g}
        assert sorted(r[0] for r in rows[1:]) == sorted(inter)
        lows = [min(inter[r[0]][m] for m in AUCS) for r in rows[1:]]
        assert lows == sorted(lows)  # worst first
        for row in rows[1:]:
            r = inter[row[0]]
            assert int(row[1].replace(",", "")) == r["subgroup_size"]
            m = min(AUCS, key=lambda k: r[k])
            assert row[2] == f"{r[m]:.4f} ({labels[m]})"
