"""A mutation audit of the report's statements (``reports/report.py``, ``reports/plain.py``),
by an independent reviewer (forty-sixth session): 43 hand mutants. 31 are killed by nine
existing report, terminal and hostile-name files, 11 only by the tests here (each checked in
a worktree of main to fail with its mutant, and to pass tests/test_reports_out_of_core_
reference.py and tests/test_security_reference.py as well): the text's "overall AUC n/a"
note where the AUC is defined, a one-row cell marked empty, the raw p-value shown as the
adjusted one, the zero-width note with no zero-width interval, the source path not escaped,
rows without a weight called rows without a label, a NaN final metric shown as a number, a
threshold gap's bounds swapped, the text wrap moving a column that fits exactly, full-width
letters and enclosing marks measured wrongly. 1 is equivalent (the width check's ``<=`` as
``<``: the loop that follows makes the same groups).

Every statement the HTML or the text table makes is read back (``html.parser``, regular
expressions over the text) and checked against numbers computed here: brute-force pair
counts (tests/reference.py), hand counts of the cells, sklearn; a few checks compare how the
report shows the table's own interval bounds and p-values.
"""
from __future__ import annotations

import html as htmlmod
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

import fastbias
from fastbias.reports.plain import display_width, name_cell, spreadsheet_cell

from .reference import brute_force_metrics
from .test_membership_mutants import _quietly

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]
AUCS, AEGS = METRICS[:3], METRICS[3:]
LABELS = {"subgroup_auc": "Subgroup AUC", "bpsn_auc": "BPSN AUC", "bnsp_auc": "BNSP AUC",
          "negative_aeg": "Negative AEG", "positive_aeg": "Positive AEG"}
SHORT = {"subgroup_auc": "subgroup_auc", "bpsn_auc": "bpsn_auc", "bnsp_auc": "bnsp_auc",
         "negative_aeg": "neg_aeg", "positive_aeg": "pos_aeg"}
# the two cells each metric compares, as the report words them (hand-written, not imported)
CELLS = {"subgroup_auc": ("subgroup_negatives", "subgroup_positives"),
         "bpsn_auc": ("subgroup_negatives", "background_positives"),
         "bnsp_auc": ("background_negatives", "subgroup_positives"),
         "negative_aeg": ("background_negatives", "subgroup_negatives"),
         "positive_aeg": ("background_positives", "subgroup_positives")}
HOSTILE = "<i>x</i>&\"q'"
SUBGROUPS = ["ga", "gb", "gone", "top", "bot", "pa", "pb", HOSTILE]


def _data(n=60, seed=46):
    rng = np.random.default_rng(seed)
    y = np.array([0, 1] * (n // 2))
    rng.shuffle(y)
    s = np.round(rng.random(n) * 0.8 + 0.2 * y, 2)
    neg, pos = np.flatnonzero(y == 0), np.flatnonzero(y == 1)
    by_neg, by_pos = neg[np.argsort(s[neg], kind="stable")], pos[np.argsort(s[pos], kind="stable")]
    s[by_pos[-1]], s[by_pos[-2]] = 1.5, 1.4   # two positives above everything
    s[by_neg[-1]], s[by_neg[-2]] = 0.96, 0.95  # two negatives above every other negative
    s[by_neg[0]], s[by_neg[1]] = -0.5, -0.4   # two negatives below everything
    df = pd.DataFrame({"y": y, "m": s})
    df["ga"] = rng.random(n) < 0.35
    df["gb"] = rng.random(n) < 0.35
    gone = np.zeros(n, bool)
    gone[by_neg[5]] = True  # one negative, no positive
    df["gone"] = gone
    top = np.zeros(n, bool)
    top[by_neg[-2:]] = True  # the two highest negatives: negative AEG +0.5
    top[by_pos[3:6]] = True
    df["top"] = top
    bot = np.zeros(n, bool)
    bot[by_neg[:2]] = True  # the two lowest negatives: negative AEG -0.5
    bot[by_pos[8:11]] = True
    df["bot"] = bot
    pa = np.zeros(n, bool)  # subgroup AUC 1 and BNSP AUC 1, BPSN below 1
    pa[[by_pos[-1], by_neg[0], by_neg[len(neg) // 2]]] = True
    df["pa"] = pa
    pb = np.zeros(n, bool)
    pb[[by_pos[-2], by_neg[1], by_neg[len(neg) - 4]]] = True
    df["pb"] = pb
    df[HOSTILE] = rng.random(n) < 0.4
    return df


@pytest.fixture(scope="module")
def df():
    return _data()


@pytest.fixture(scope="module")
def refs(df):
    return {g: brute_force_metrics(df["y"], df["m"], df[g]) for g in SUBGROUPS}


def _counts(df, g):
    member, y = df[g].to_numpy(bool), df["y"].to_numpy() == 1
    return {"subgroup_negatives": int((member & ~y).sum()),
            "subgroup_positives": int((member & y).sum()),
            "background_negatives": int((~member & ~y).sum()),
            "background_positives": int((~member & y).sum())}


@pytest.fixture(scope="module")
def report(df):
    return _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=SUBGROUPS)


@pytest.fixture(scope="module")
def page(report):
    return _quietly(report.to_html)


class _Cells(HTMLParser):
    """Rows of the tables with a given class: [[(attrs of td, text), ...], ...]."""

    def __init__(self, table_class):
        super().__init__(convert_charrefs=True)
        self.want, self.depth, self.rows, self.cell = table_class, 0, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            if self.depth or self.want in (a.get("class") or "").split():
                self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag == "td":
            self.cell = [a, ""]
        elif self.cell is not None and tag == "span" and "title" in a:
            self.cell[0].setdefault("span_titles", []).append(a["title"])

    def handle_endtag(self, tag):
        if tag == "table" and self.depth:
            self.depth -= 1
        elif tag == "td" and self.cell is not None:
            self.rows[-1].append((self.cell[0], self.cell[1]))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[1] += data


def _rows(page, table_class):
    parser = _Cells(table_class)
    parser.feed(page)
    return [r for r in parser.rows if r]


def _ref_extremes(refs):
    aucs = {(g, m): refs[g][m] for g in refs for m in AUCS if not np.isnan(refs[g][m])}
    aegs = {(g, m): refs[g][m] for g in refs for m in AEGS if not np.isnan(refs[g][m])}
    low = min(aucs.values())
    big = max(abs(v) for v in aegs.values())
    return aucs, aegs, low, big


# ------------------------------------------------------------------------------------ summary

def test_summary_lowest_auc_and_largest_aeg_against_brute_force(page, refs, df):
    """The summary row: overall AUC (sklearn), lowest AUC (value, metric, subgroup, ties),
    largest |AEG| with its sign (value, metric, subgroup, ties of the same size, either sign),
    the undefined count (every NaN of the five metrics). Kills the summary mutants (lowest by
    idxmax, ties counting the one named, |AEG| by signed value, sign dropped, signed ties,
    undefined of the AUCs only, ties wording swapped, "and 0 more")."""
    aucs, aegs, low, big = _ref_extremes(refs)
    low_at = [k for k, v in aucs.items() if v == low]
    big_at = [k for k, v in aegs.items() if abs(v) == big]
    # the data makes the AEG extreme shared by a +0.5 and a -0.5 (signed ties differ)
    assert big == 0.5 and {aegs[k] for k in big_at} == {0.5, -0.5}
    (row,) = _rows(page, "summary")
    texts = [t.strip() for _, t in row]
    assert texts[0] == "m"
    assert texts[1] == f"{roc_auc_score(df['y'], df['m']):.4f}"
    lowest = texts[3] if len(texts) == 6 else texts[2]
    value, rest = lowest.split(" ", 1)
    assert value == f"{low:.4f}"
    named = next(k for k in low_at if rest.startswith(f"{LABELS[k[1]]}, {k[0]}"))
    extra = len(low_at) - 1
    assert rest == f"{LABELS[named[1]]}, {named[0]}" + (
        f" (and {extra} more value(s) equal to it)" if extra else "")
    largest = texts[-2]
    value, rest = largest.split(" ", 1)
    named = next(k for k in big_at if rest.startswith(f"{LABELS[k[1]]}, {k[0]}"))
    assert value == f"{aegs[named]:+.4f}"
    assert rest == (f"{LABELS[named[1]]}, {named[0]} (and {len(big_at) - 1} more value(s) "
                    f"of the same size)")
    n_nan = sum(np.isnan(refs[g][m]) for g in refs for m in METRICS)
    assert n_nan > 0 and any(np.isnan(refs[g][m]) for g in refs for m in AEGS)
    assert texts[-1] == str(n_nan)


def test_summary_says_no_ties_where_there_are_none():
    """Distinct values: no "(and 0 more ...)" in the summary (kills ``if ties >= 0``)."""
    df = pd.DataFrame({"y": [0, 1, 0, 1, 0, 1, 0, 1], "m": [.5, .4, .2, .9, .45, .55, .6, .7],
                       "g": [1, 1, 1, 1, 0, 0, 0, 0]})
    ref = brute_force_metrics(df["y"], df["m"], df["g"])
    assert len({ref[m] for m in AUCS}) == 3 and len({abs(ref[m]) for m in AEGS}) == 2
    page = _quietly(_quietly(fastbias.bias_report, df, label="y", scores="m",
                             subgroups=["g"]).to_html)
    (row,) = _rows(page, "summary")
    text = " ".join(t for _, t in row)
    assert "more value" not in text
    assert f"{min(ref[m] for m in AUCS):.4f} {LABELS[min(AUCS, key=ref.get)]}, g" in text


def test_summary_final_metric_nan_is_said_n_a(page, refs):
    """A model with an undefined per-subgroup AUC: the final metric is NaN and the summary
    says n/a (kills ``r["final_metric"] is None``: "nan" shown as a number)."""
    assert any(np.isnan(refs[g][m]) for g in refs for m in AUCS)
    (row,) = _rows(page, "summary")
    attrs, text = row[2]
    assert "undefined" in attrs.get("class", "") and text.startswith("n/a")
    assert "nan" not in " ".join(t for _, t in row).lower().replace("n/a", "")


# ------------------------------------------------------------------- the metrics table (HTML)

def test_html_metrics_table_counts_empty_cells_and_undefined_reasons(page, df, refs):
    """Every row of the HTML metrics table against hand counts and brute force: counts, the
    "empty" mark only on a cell of 0 rows (not of 1), each value to 4 decimals with its sign
    for an AEG, n/a exactly where the reference is undefined, and the undefined list's reason
    naming the two cells in the metric's order and only the empty ones (kills ``<= 1``
    empties, cells swapped, formats swapped, NaN as a number)."""
    rows = _rows(page, "metrics")
    assert len(rows) == len(SUBGROUPS)
    undefined = re.findall(r'<li id="undef-(\d+)">(.*?)</li>', page)
    reasons = {}
    for _, li in undefined:
        text = htmlmod.unescape(re.sub(r"<[^>]+>", "", li))
        model, subgroup, rest = text.split(" \u00b7 ")
        label, reason = rest.split(": ", 1)
        reasons[(subgroup, label)] = reason
    seen = set()
    for row in rows:
        name = row[0][1]
        seen.add(name)
        counts = _counts(df, name)
        order = ["subgroup_negatives", "subgroup_positives", "background_negatives",
                 "background_positives"]
        assert row[1][1] == f"{df[name].sum():,}"
        for (attrs, text), cell in zip(row[2:6], order):
            assert text == f"{counts[cell]:,}"
            assert ("empty" in attrs["class"].split()) == (counts[cell] == 0), (name, cell)
        for (attrs, text), metric in zip(row[6:], METRICS):
            ref = refs[name][metric]
            if np.isnan(ref):
                assert text.startswith("n/a")
                a, b = CELLS[metric]
                words = {c: c.replace("_", " ") for c in CELLS[metric]}
                zero = [c for c in (a, b) if counts[c] == 0]
                assert zero
                expected = (f"it compares {words[a]} with {words[b]}, and "
                            + " and ".join(f"{c} = 0" for c in zero))
                assert reasons[(name, LABELS[metric])] == expected
            else:
                fmt = "{:+.4f}" if metric in AEGS else "{:.4f}"
                assert text.replace("*", "") == fmt.format(ref).replace("-0.0000", "+0.0000")
    assert seen == set(SUBGROUPS)
    assert len(reasons) == sum(np.isnan(refs[g][m]) for g in refs for m in METRICS)
    # the one-row cell is there: "gone" has one negative, no positive
    assert _counts(df, "gone")["subgroup_negatives"] == 1


def test_html_escapes_every_name_title_and_source(df):
    """A subgroup, model, title and source with markup: never raw in the page, always there
    escaped (kills escaping dropped in names, data-model, the <title> and the data row)."""
    frame = df.rename(columns={"m": 'm"<b>'})
    report = _quietly(fastbias.bias_report, frame, label="y", scores='m"<b>',
                      subgroups=SUBGROUPS, title="<u>T</u>")
    report.source = "<s>src</s>"
    page = _quietly(report.to_html)
    for raw in ("<i>x</i>", "<b>", "<u>T</u>", "<s>src</s>", 'data-model="m"'):
        assert raw not in page
    assert htmlmod.escape(HOSTILE) in page
    assert "<title>&lt;u&gt;T&lt;/u&gt;</title>" in page
    assert "&lt;s&gt;src&lt;/s&gt;" in page
    assert f'data-model="{htmlmod.escape(chr(109) + chr(34) + "<b>")}"' in page


def test_html_zero_width_note_only_with_a_zero_width_interval(page):
    """No intervals, no zero-width note (kills ``if True``)."""
    assert 'id="zero-width-note"' not in page
    assert "zero-width interval" not in page


# --------------------------------------------------------------------------- the text table

_CELL = re.compile(r"^(n/a|[+-]?\d+\.\d{4})(\*?)(?: \[([+-]?\d+\.\d{3}), ([+-]?\d+\.\d{3})\]"
                   r"(\u00b0?))?$")


def _text_rows(text):
    """{subgroup: [cells]} of the first text table in ``text`` (no wrapping)."""
    lines = text.splitlines()
    start = next(k for k, line in enumerate(lines) if re.match(r"subgroup +size", line))
    out = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        out[cells[0]] = cells
    return out


def test_text_table_values_and_n_a_against_brute_force(report, refs):
    """The text table: each value to 4 decimals (AEGs signed), n/a (never "nan") where the
    reference is undefined; no "overall AUC n/a" sentence when the overall AUC is defined;
    no cut sentence when every subgroup is shown (max_subgroups = their number)."""
    text = report.to_text(max_subgroups=len(SUBGROUPS))
    assert "nan" not in text
    assert "overall AUC n/a" not in text
    assert "worst of" not in text and "not shown" not in text
    rows = _text_rows(text)
    for g in SUBGROUPS:
        cells = rows[name_cell(g)]
        for metric, cell in zip(METRICS, cells[6:11]):
            match = _CELL.match(cell)
            assert match, cell
            ref = refs[g][metric]
            if np.isnan(ref):
                assert match.group(1) == "n/a"
            else:
                fmt = "{:+.4f}" if metric in AEGS else "{:.4f}"
                assert match.group(1) == fmt.format(ref).replace("-0.0000", "+0.0000")


def test_text_cut_says_ties_only_where_the_lowest_aucs_are_equal(df, refs):
    """to_text(max_subgroups=n) for every n: "K more tie with the last shown" exactly when
    the reference lowest AUC of a subgroup past the cut equals the last shown's; the data has
    subgroups whose highest AUCs (1.0) tie while their lowest differ (kills ties by ``>=``
    and by the highest AUC)."""
    report = _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=SUBGROUPS)
    lowest = {g: min(refs[g][m] for m in AUCS if not np.isnan(refs[g][m])) for g in SUBGROUPS}
    highest = {g: max(refs[g][m] for m in AUCS if not np.isnan(refs[g][m])) for g in SUBGROUPS}
    ranked = sorted(SUBGROUPS, key=lambda g: lowest[g])
    assert len(set(lowest.values())) == len(SUBGROUPS)  # (a ranking without ties)
    assert highest["pa"] == highest["pb"] == 1.0 and lowest["pa"] != lowest["pb"]
    discriminating = False
    for n in range(1, len(SUBGROUPS)):
        text = report.to_text(max_subgroups=n)
        shown = list(_text_rows(text))
        assert shown == [name_cell(g) for g in ranked[:n]]
        assert f"({n} worst of {len(SUBGROUPS)} subgroups shown" in text
        assert "more tie with the last shown" not in text
        assert "in all the rows, those not shown included" in text
        last = ranked[n - 1]
        discriminating |= any(highest[g] == highest[last] for g in ranked[n:])
    assert discriminating


def test_text_intervals_bounds_order_and_zero_width_mark():
    """ci="delong": every text interval reads [low, high] with low <= high, contains the value,
    and carries the zero-width mark exactly where its bounds are equal; the summary's overall
    AUC interval (HTML) contains sklearn's AUC and is not of zero width (kills bounds
    swapped, the summary's high bound = low, the mark on every interval)."""
    df = _data(n=80, seed=7)
    report = _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=SUBGROUPS,
                      ci="delong")
    table = report.result.table.set_index("subgroup")
    text = report.to_text()
    rows = _text_rows(text)
    marks = 0
    for g in SUBGROUPS:
        for metric, cell in zip(METRICS, rows[name_cell(g)][6:11]):
            match = _CELL.match(cell)
            assert match, cell
            if match.group(3) is None:
                continue
            low, high = float(match.group(3)), float(match.group(4))
            value = float(match.group(1))
            assert low <= value + 5e-4 and value <= high + 5e-4, (g, metric, cell)
            equal = table.at[g, f"{metric}_low"] == table.at[g, f"{metric}_high"]
            assert bool(match.group(5)) == equal, (g, metric, cell)
            marks += equal
    assert text.count("\u00b0") == marks + (1 if marks else 0)
    page = _quietly(report.to_html)
    (row,) = _rows(page, "summary")
    overall = row[1][1]
    match = re.match(r"^(\d\.\d{4})\[(\d\.\d{3}), (\d\.\d{3})\]$", overall)
    assert match, overall
    auc = roc_auc_score(df["y"], df["m"])
    assert match.group(1) == f"{auc:.4f}"
    assert float(match.group(2)) < auc < float(match.group(3))


@pytest.fixture(scope="module")
def tested():
    rng = np.random.default_rng(3)
    n = 400
    y = (rng.random(n) < 0.5).astype(int)
    g = rng.random(n) < 0.3
    h = rng.random(n) < 0.3
    df = pd.DataFrame({"y": y, "g": g, "h": h,
                       "m": np.round(rng.random(n) + 0.6 * y + 0.5 * (g & (y == 0)), 3)})
    report = _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=["g", "h"],
                      significance="holm", confidence=0.95)
    return report


def test_significance_marks_tips_and_wording(tested):
    """significance="holm": a star in the text exactly on the values whose adjusted p is
    <= 0.05; no "not tested" list or sentence when every defined value has a p-value; the
    HTML tip gives the adjusted and the raw p of the table; the settings say level 0.05
    (kills a star on every BNSP, "not tested" listing the tested, adjusted shown as raw,
    ``tested <= defined``, the level written as the confidence)."""
    table = tested.result.table.set_index("subgroup")
    assert table[[f"{m}_pvalue" for m in METRICS]].notna().all().all()
    text = tested.to_text()
    assert "(not tested:" not in text
    rows = _text_rows(text)
    stars = 0
    for g in ("g", "h"):
        for metric, cell in zip(METRICS, rows[g][6:11]):
            flagged = table.at[g, f"{metric}_pvalue_adjusted"] <= 0.05
            assert cell.endswith("*") == bool(flagged), (g, metric, cell)
            stars += flagged
        assert rows[g][11] == (",".join(SHORT[m] for m in METRICS
                                        if table.at[g, f"{m}_pvalue_adjusted"] <= 0.05) or "-")
    assert 0 < stars < 10
    page = _quietly(tested.to_html)
    assert "0 not tested" not in page and "never marked significant" not in page
    assert "tests at level 0.05: 10 of the 10 defined values tested (" in page
    tips = re.findall(r'<span class="sig" title="significant: adjusted p = ([^ ]+) '
                      r'\(raw ([^)]+)\)"', page)
    expected = sorted((f"{table.at[g, f'{m}_pvalue_adjusted']:.2g}",
                       f"{table.at[g, f'{m}_pvalue']:.2g}")
                      for g in ("g", "h") for m in METRICS
                      if table.at[g, f"{m}_pvalue_adjusted"] <= 0.05)
    assert sorted(tips) == expected
    assert any(a != r for a, r in tips)


# ------------------------------------------------------------------------------ intersections

def test_intersections_lowest_auc_label_count_and_cut_sentence():
    """intersections=2: each intersection's "lowest AUC" cell names the metric of the
    reference minimum; the settings say "N and K intersections"; with max_subgroups equal
    to K no "the K worst shown" (kills idxmax label, ``< limit``, n_base with intersections)."""
    df = _data(n=120, seed=11)[["y", "m", "ga", "gb", "top"]]
    report = _quietly(fastbias.bias_report, df, label="y", scores="m",
                      subgroups=["ga", "gb", "top"], intersections=2)
    members = report.result.settings["intersection_members"]
    k = len(members)
    assert k >= 2
    page = _quietly(report.to_html, max_subgroups=k)
    assert f"{k} intersections, ranked" in page and "worst shown" not in page
    assert f"3 and {k} intersections" in page
    page_cut = _quietly(report.to_html, max_subgroups=k - 1)
    assert f"the {k - 1} worst shown" in page_cut
    rows = _rows(page, "intersections")
    assert len(rows) == k
    for row in rows:
        name = row[0][1]
        parts = members[name]
        member = np.logical_and.reduce([df[p].to_numpy(bool) for p in parts])
        ref = brute_force_metrics(df["y"], df["m"], member)
        defined = {m: ref[m] for m in AUCS if not np.isnan(ref[m])}
        low = min(defined.values())
        assert row[1][1] == f"{int(member.sum()):,}"
        assert row[2][1] in {f"{low:.4f} ({LABELS[m]})" for m, v in defined.items() if v == low}


# ------------------------------------------------------------------------------- settings row

def test_rows_without_a_weight_are_not_called_without_a_label():
    """nan_policy="omit" with one missing weight and one missing label: the settings say
    exactly one of each (kills the unlabelled count taking in the unweighted row)."""
    df = _data(n=40, seed=5)[["y", "m", "ga"]].astype({"y": float})
    df["w"] = 1.0
    df.loc[3, "w"] = np.nan
    df.loc[7, "y"] = np.nan
    report = _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=["ga"],
                      sample_weight="w", nan_policy="omit")
    page = _quietly(report.to_html)
    cell = re.search(r"<th>rows</th><td>(.*?)</td>", page).group(1)
    n_neg = int(((df["y"] == 0) & df["w"].notna()).sum())
    n_pos = int(((df["y"] == 1) & df["w"].notna()).sum())
    assert cell == f"40 ({n_neg} negative, {n_pos} positive, 1 without a label, 1 without a weight)"


# ------------------------------------------------------------------------------- thresholds

def test_threshold_gap_intervals_read_low_then_high():
    """thresholds with Bernstein gap intervals: each gap's text interval has low <= high and
    matches the table's bounds (kills the low bound shown as the high)."""
    df = _data(n=80, seed=9)[["y", "m", "ga", "gb"]]
    report = _quietly(fastbias.bias_report, df, label="y", scores="m", subgroups=["ga", "gb"],
                      thresholds=[0.5], gap_interval="bernstein")
    text = report.to_text()
    at = report.result.thresholds.set_index("subgroup")
    found = 0
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] in ("ga", "gb") and len(cells) == 7:
            for gap, cell in zip(["positive_rate_gap", "tpr_gap", "fpr_gap", "fnr_gap",
                                  "precision_gap"], cells[2:]):
                m = re.match(r"^([+-]\d\.\d{4}) \[([+-]\d\.\d{3}), ([+-]\d\.\d{3})\]$", cell)
                if not m:
                    continue
                found += 1
                assert float(m.group(2)) <= float(m.group(3))
                low = f"{at.at[cells[0], gap + '_low']:+.3f}"
                assert m.group(2) == low.replace("-0.000", "+0.000")
    assert found >= 4


# ------------------------------------------------------------------------------- wrapping

def test_wrapped_table_fits_exactly_as_many_columns_as_the_width_holds(report):
    """to_text(width=W) with W the full table's width: one table; with W the end of the j-th
    column: the first part holds exactly j columns (kills both off-by-one wrap mutants)."""
    full = report.to_text(max_subgroups=3)
    lines = full.splitlines()
    rule = next(line for line in lines if line.startswith("--------"))
    ends = [m.end() for m in re.finditer(r"-+", rule)]
    assert report.to_text(max_subgroups=3, width=ends[-1]) == full
    for j in (3, 6, 8):
        text = report.to_text(max_subgroups=3, width=ends[j - 1])
        first_rule = next(line for line in text.splitlines() if line.startswith("--------"))
        assert len(re.findall(r"-+", first_rule)) == j
        assert len(first_rule) == ends[j - 1]


# -------------------------------------------------------------------------------- plain.py

def test_plain_helpers_against_hand_values():
    """name_cell escapes edge spaces; a full-width letter takes two cells and an enclosing mark
    none; a cell starting with "@" is made text (kills the plain.py mutants)."""
    assert name_cell(" a ") == "\\x20a\\x20"
    assert name_cell("a  b") == "a  b"
    assert display_width("\uff26\uff27") == 4  # FULLWIDTH F, G: east_asian_width "F"
    assert display_width("a\u20dd") == 1  # COMBINING ENCLOSING CIRCLE: "Me"
    assert spreadsheet_cell("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_cell("a@b") == "a@b"
