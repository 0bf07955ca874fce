"""An independent review's tests (2026-11-27) of what reports show of names from the data,
in every output (terminal, HTML, CSV, JSON, figures). Expected values come from the inputs
themselves or from independent parsers (html.parser, csv, json), never from fastbias.

Found by review (each failed before its fix): the tests named ``test_found_*``; the others
pin properties checked to hold.
"""
import csv
import html
import io
import json
import os
import re
import warnings
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.cli import main

RAW_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def frame(names, n=600, seed=0, score="s"):
    rng = np.random.default_rng(seed)
    data = {"y": rng.integers(0, 2, n), score: rng.random(n)}
    for name in names:
        data[name] = rng.integers(0, 2, n)
    return pd.DataFrame(data)


def report_of(names, score="s", **kwargs):
    df = frame(names, score=score)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores=score, subgroups=names, **kwargs)
    return df, res, fastbias.BiasReport.from_result(df, res, **{
        k: v for k, v in kwargs.items() if k in ("title", "source")})


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', '&amp;',
           "tab\tx", "ansi\x1b[31m", "rtl\u202eabc", "zw\u200b", "=HYPERLINK(\"x\")", "+cmd",
           "-1", "@SUM(A1)", "$x^2$", r"$\foo$", "<!--", "]]>"]


# ---------------------------------------------------------------- properties that hold

def test_html_injects_no_element_or_attribute_from_hostile_names():
    pytest.importorskip("matplotlib")
    df = frame(HOSTILE, score="<b onmouseover=x>m</b>")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fastbias.evaluate(df, label="y", scores="<b onmouseover=x>m</b>", subgroups=HOSTILE)
    clean = frame(["g"], score="m")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clean_res = fastbias.evaluate(clean, label="y", scores="m", subgroups=["g"])
    page = fastbias.BiasReport.from_result(df, res, title="<i>t</i>").to_html()
    base = fastbias.BiasReport.from_result(clean, clean_res, title="t").to_html()
    hostile, reference = Elements(), Elements()
    hostile.feed(page)
    reference.feed(base)
    # the element kinds and attribute names of a report of plain names: nothing added
    assert set(hostile.tags) == set(reference.tags)
    assert set(hostile.attrs) == set(reference.attrs)
    assert "script" not in hostile.tags and "onerror" not in hostile.attrs
    for name in HOSTILE:  # every name is shown, escaped
        assert html.escape(name.replace("\t", "\\x09").replace("\x1b", "\\x1b")
                           .replace("\u202e", "\\u202e").replace("\u200b", "\\u200b")) in page


def test_json_round_trips_every_name_exactly(tmp_path):
    names = HOSTILE + ["nl\nx", "cr\rx", "a", "a "]
    _, _, report = report_of(names, score="=m\x1b")
    report.to_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert data["models"][0]["name"] == "=m\x1b"
    assert sorted(r["subgroup"] for r in data["models"][0]["subgroups"]) == sorted(names)


def test_raw_csv_round_trips_every_name_exactly(tmp_path):
    names = HOSTILE + ["nl\nx", "cr\rx", "a", "a "]
    _, _, report = report_of(names, score="=m\x1b")
    report.to_csv(tmp_path / "r.csv", raw=True)
    with open(tmp_path / "r.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {r["model"] for r in rows} == {"=m\x1b"}
    assert sorted(r["subgroup"] for r in rows) == sorted(names)


def test_safe_csv_prefixes_formula_starts_as_documented(tmp_path):
    names = ["=1+1", "+cmd", "-1", "@SUM(A1)", "\tx", "plain", "a=b"]
    _, _, report = report_of(names)
    report.to_csv(tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="", encoding="utf-8") as handle:
        got = sorted(r["subgroup"] for r in csv.DictReader(handle))
    want = sorted(("'" + n) if n[0] in "=+-@\t" else n for n in names)
    assert got == want


def test_figures_draw_dollar_names_literally_in_svg():
    matplotlib = pytest.importorskip("matplotlib")
    from fastbias.reports.plots import plot_auc_heatmap

    names = ["$x^2$", r"$\alpha$"]
    _, res, _ = report_of(names)
    fig = plot_auc_heatmap(res)
    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(out, format="svg")
    texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", out.getvalue(), re.S)]
    assert "$x^2$" in texts and r"$\alpha$" in texts  # drawn as the text, not as math


def test_out_never_writes_through_a_symlink_or_over_the_data(tmp_path, capsys):
    frame(["g"]).to_csv(tmp_path / "d.csv", index=False)
    original = (tmp_path / "d.csv").read_bytes()
    os.symlink(tmp_path / "d.csv", tmp_path / "link.csv")
    os.link(tmp_path / "d.csv", tmp_path / "hard.csv")
    base = ["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
            "--subgroups", "g", "-q", "--force"]
    for out in ("d.csv", "link.csv", "hard.csv"):
        assert main(base + ["--out", str(tmp_path / out)]) == 1
    assert (tmp_path / "d.csv").read_bytes() == original
    assert os.path.islink(tmp_path / "link.csv")
    os.symlink(tmp_path / "nowhere.html", tmp_path / "dangling.html")
    assert main(base + ["--out", str(tmp_path / "dangling.html")]) == 1
    assert not os.path.exists(tmp_path / "nowhere.html")


# ---------------------------------------------------------------- found by review

def test_found_literal_backslash_names_read_alike_with_escaped_names():
    """Subgroups 'a ' (edge space) and the four-character text 'a\\x20' (a literal
    backslash) are two columns; the terminal table shows both as ``a\\x20`` and the HTML as
    ``<bdi>a\\x20</bdi>``: two rows nobody can tell apart. evaluate refuses 1 and "1" for
    exactly this reason ("names that read alike once written"), but compares str(), not what
    is shown. Right: a backslash in a name shown escaped too (``\\x5c``), or the pair refused.
    Cause: reports/plain.py name_cell / validate/errors.visible leave '\\' as is;
    validate/columns.py name_list compares str(x) only."""
    names = ["a ", "a\\x20"]
    _, _, report = report_of(names)
    text = report.to_text()
    rows = [line.split("  ")[0] for line in text.splitlines()[3:5]]
    assert len(rows) == 2
    assert rows[0] != rows[1], rows
    page = report.to_html()
    cells = re.findall(r'<table class="metrics".*?</table>', page, re.S)[0]
    shown = re.findall(r"<tr><td><bdi>(.*?)</bdi></td>", cells)
    assert len(shown) == 2 and shown[0] != shown[1], shown


def test_found_safe_csv_makes_two_subgroups_one_name(tmp_path):
    """Subgroups '=q' and "'=q": the default (formula-safe) CSV writes "'=q" for both,
    so two rows of different numbers carry the same name and the file cannot say which is
    which (the docs promise only that a formula start gets a ' in front). Right: a name that
    already starts with ' also gets one (so "'=q" -> "''=q"), or the writer refuses/notes the
    clash. Cause: reports/plain.py spreadsheet_cell (_FORMULA_START lacks "'")."""
    _, _, report = report_of(["=q", "'=q"])
    report.to_csv(tmp_path / "r.csv")
    with open(tmp_path / "r.csv", newline="", encoding="utf-8") as handle:
        names = [r["subgroup"] for r in csv.DictReader(handle)]
    assert len(names) == 2
    assert len(set(names)) == 2, names


def test_found_figures_draw_a_newline_in_a_name_as_a_line_break():
    """docs/cli.md: figures draw "control characters as visible escapes". A subgroup
    'nl\\nx' is drawn as two tick-label lines "nl" / "x" and a model 's\\nt' as a two-line
    title (the terminal and HTML show ``nl\\x0ax``), so 'nl\\nx' reads as two names, or as
    a name 'nl x'. Right: a newline in a name drawn as ``\\x0a``. Cause: reports/plots.py
    _plain_text calls terminal_text(..., keep_newlines=True) on every text, names included."""
    pytest.importorskip("matplotlib")
    from fastbias.reports.plots import plot_auc_heatmap

    _, res, _ = report_of(["nl\nx", "g"], score="s\nt")
    fig = plot_auc_heatmap(res)
    fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    title = fig.axes[0].get_title()
    assert not any("\n" in t for t in labels), labels
    assert "\n" not in title, title


def test_found_figures_draw_edge_space_names_alike():
    """Subgroups 'a' and 'a ' are drawn as tick labels 'a' and 'a ' (identical on
    the image), where the text table shows ``a`` and ``a\\x20`` (plain.name_cell, "found by
    review"). Right: the figures' names made visible the way the tables' are. Cause:
    reports/plots.py uses str(g) / terminal_text, not name_cell, for tick labels, legends and
    titles."""
    pytest.importorskip("matplotlib")
    from fastbias.reports.plots import plot_auc_heatmap, plot_intervals

    _, res, _ = report_of(["a", "a "], ci="delong")
    for fig in (plot_auc_heatmap(res), plot_intervals(res)):
        fig.canvas.draw()
        drawn = [t.get_text().strip() for t in fig.axes[0].get_yticklabels()]
        assert len(drawn) == 2
        assert drawn[0] != drawn[1], drawn


def test_found_html_title_and_source_carry_a_raw_bidi_override(tmp_path, capsys):
    """The CLI titles the report after the data file's name and shows its path as
    'data'; both go through html.escape alone, so a file named 'x\\u202evsc.csv' puts a raw
    right-to-left override into <title>, <h1> and the settings table (it reads 'xcsv.csv'),
    where every other name from the data is shown as ``\\u202e`` (docs/cli.md). Right: the
    title and source shown with their controls and overrides as visible escapes (and isolated).
    Cause: reports/report.py to_html (html.escape(self.title)) and _html_settings ("data" row:
    html.escape(str(v)))."""
    pytest.importorskip("matplotlib")
    data = tmp_path / "x\u202evsc.csv"
    frame(["g"]).to_csv(data, index=False)
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--label", "y", "--scores", "s", "--subgroups", "g",
                 "--out", str(out), "-q"]) == 0
    page = out.read_text(encoding="utf-8")
    shown = re.sub(r'data-model="[^"]*"', "", page)
    assert not RAW_CONTROL.search(shown), [shown[m.start() - 30:m.end() + 10]
                                           for m in RAW_CONTROL.finditer(shown)][:3]


def test_found_cli_cannot_read_a_quoted_header_name_holding_a_carriage_return(tmp_path,
                                                                                  capsys):
    """A CSV whose header holds the quoted name "cr\\rx" (RFC 4180 allows it; pandas
    reads it as 'cr\\rx'). `--subgroups $'cr\\rx'` fails: "unknown column 'cr\\rx'; did you
    mean 'cr\\nx'?", and following the advice fails with pandas' bare "Usecols do not match
    columns, columns expected but not found: ['cr\\nx']" (no option named). Right: the column
    read under its own name (the report then shows it as ``cr\\x0dx``). Cause:
    validate/textfile.py (header read through io.TextIOWrapper without newline="",
    whose universal newlines turn the quoted \\r into \\n)."""
    df = frame(["cr\rx", "g"])
    with open(tmp_path / "d.csv", "w", newline="", encoding="utf-8") as handle:
        df.to_csv(handle, index=False, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    assert pd.read_csv(tmp_path / "d.csv").columns[2] == "cr\rx"  # the file is well formed
    status = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", "cr\rx", "g", "--out", str(tmp_path / "r.json"), "-q"])
    err = capsys.readouterr().err
    assert status == 0, err
    subgroups = [r["subgroup"] for r in
                 json.loads((tmp_path / "r.json").read_text())["models"][0]["subgroups"]]
    assert sorted(subgroups) == ["cr\rx", "g"]
