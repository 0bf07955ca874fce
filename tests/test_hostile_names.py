"""Names from anyone's data, shown safely: terminal, CSV, figures, HTML (issue 19, items 1-3).

Each case is a regression test of a hole found by trying crafted column names.
"""
import html
import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias.cli import main
from fastbias.reports.plain import spreadsheet_cell, terminal_text

ESCAPE = "b\x1b]0;owned\x07\x1b[31mred"          # retitles the window, then red text
BIDI = "abc\u202edcba"                           # right-to-left override
FORMULA = '=HYPERLINK("http://x","y")'
MATH = r"$\foo$ & $x$"


def data(names, n=300, seed=0):
    rng = np.random.default_rng(seed)
    frame = {"y": rng.integers(0, 2, n), "s": rng.random(n)}
    frame.update({name: rng.integers(0, 2, n) for name in names})
    return pd.DataFrame(frame)


@pytest.mark.parametrize("text,shown", [
    ("plain name", "plain name"),
    ("a\x1b[31m", r"a\x1b[31m"),
    ("bell\x07", r"bell\x07"),
    ("new\nline", r"new\x0aline"),
    ("tab\there", r"tab\x09here"),
    ("c1\x9bx", r"c1\x9bx"),
    ("del\x7f", r"del\x7f"),
    (BIDI, r"abc\u202edcba"),
    ("caf\u00e9 \u6f22", "caf\u00e9 \u6f22"),  # printable text is kept
])
def test_terminal_text_shows_control_characters_as_escapes(text, shown):
    assert terminal_text(text) == shown
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202a-\u202e]", terminal_text(text))


def test_terminal_text_keeps_line_breaks_of_messages_only_when_asked():
    assert terminal_text("one\ntwo\x1b", keep_newlines=True) == "one\ntwo\\x1b"


@pytest.mark.parametrize("value,written", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"), ("black", "black"), ("a=b", "a=b"),
    (-0.5, -0.5), (3, 3),
])
def test_spreadsheet_cells(value, written):
    assert spreadsheet_cell(value) == written


def test_cli_prints_no_control_character_and_writes_neutral_csv(tmp_path, capsys):
    df = data([ESCAPE, FORMULA, BIDI])
    df.to_csv(tmp_path / "d.csv", index=False)
    status = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", ESCAPE, FORMULA, BIDI, "--out", str(tmp_path / "r.csv")])
    assert status == 0
    out, err = capsys.readouterr()
    for stream in (out, err):
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", stream)
    assert terminal_text(ESCAPE) in out and terminal_text(BIDI) in out
    table = pd.read_csv(tmp_path / "r.csv", keep_default_na=False)
    assert set(table["subgroup"]) == {ESCAPE, "'" + FORMULA, BIDI}
    # the numbers are untouched: a negative AEG is a number, not a neutralised text
    assert (table["negative_aeg"].astype(float) < 0).any()
    # --csv-raw: names exactly as they are
    main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s", "--subgroups",
          FORMULA, "--out", str(tmp_path / "raw.csv"), "--csv-raw", "-q"])
    assert pd.read_csv(tmp_path / "raw.csv")["subgroup"].tolist() == [FORMULA]


def test_cli_error_messages_show_names_escaped(tmp_path, capsys):
    data(["g"]).to_csv(tmp_path / "d.csv", index=False)
    status = main(["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s",
                   "--subgroups", ESCAPE])
    assert status == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "owned" in err  # the name is still there, visibly


def test_cli_lists_the_files_columns_without_their_line_breaks(tmp_path, capsys):
    """A column whose name holds a line break could forge a line of the CLI's output (the
    unknown-column message listed the names as they are)."""
    pytest.importorskip("pyarrow")
    forged = "\nfastbias: wrote report.html"
    data(["g"]).rename(columns={"g": forged}).to_parquet(tmp_path / "d.parquet")
    status = main(["report", str(tmp_path / "d.parquet"), "--label", "y", "--scores", "s",
                   "--subgroups", "nothing"])
    assert status == 1
    err = capsys.readouterr().err
    assert "unknown column 'nothing'" in err and repr(forged) in err
    assert not any(line.startswith("fastbias: wrote") for line in err.splitlines())


def test_figures_and_html_show_control_characters_and_overrides_visibly(tmp_path):
    """Figures drew a name's control characters as missing glyphs (matplotlib's warning put
    the raw character on stderr, under -q too); the HTML let a right-to-left override reorder
    the text after a name (its heading's 'overall AUC 0.87' read backwards)."""
    pytest.importorskip("matplotlib")
    from fastbias.reports.plots import plot_auc_heatmap

    names = [ESCAPE, BIDI, "cr\rname"]
    df = data(names).rename(columns={"s": "model\u202e"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastbias.UndefinedMetricWarning)
        res = fastbias.evaluate(df, label="y", scores="model\u202e", subgroups=names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a missing glyph is a warning: none now
        fig = plot_auc_heatmap(res)
        fig.savefig(io.BytesIO(), format="png")
        page = fastbias.BiasReport.from_result(df, res).to_html()
    drawn = [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    assert all(not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", t) for t in drawn)
    assert terminal_text(BIDI) in drawn and terminal_text("cr\rname") in drawn
    shown = re.sub(r'data-model="[^"]*"', "", page)  # (the names as data, not drawn)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e]", shown)
    model = "model\u202e"
    assert f"<h3><bdi>{html.escape(terminal_text(model))}</bdi> " in page
    assert f"<td><bdi>{html.escape(terminal_text(BIDI))}</bdi></td>" in page


def test_to_text_escapes_model_and_subgroup_names():
    df = data([ESCAPE]).rename(columns={"s": "model\x1b[2J"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label="y", scores="model\x1b[2J", subgroups=[ESCAPE])
    text = report.to_text()
    assert "\x1b" not in text and "\x07" not in text
    assert r"model\x1b[2J" in text and terminal_text(ESCAPE) in text


def test_figures_draw_dollar_names_as_text():
    pytest.importorskip("matplotlib")
    from fastbias.reports.plots import plot_auc_heatmap

    df = data([MATH, "g"]).rename(columns={"s": "$\\bar{s}$"})
    res = fastbias.evaluate(df, label="y", scores="$\\bar{s}$", subgroups=[MATH, "g"])
    fig = plot_auc_heatmap(res)
    fig.savefig(io.BytesIO(), format="png")  # mathtext would fail on \foo here
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert MATH in labels
    assert all(not t.get_parse_math() for t in fig.axes[0].get_yticklabels())
    # the whole report, figures included, renders
    assert MATH.replace("&", "&amp;") in fastbias.BiasReport.from_result(df, res).to_html()


def test_html_report_runs_no_script():
    name = '<img src=x onerror="alert(1)">'
    df = data([name]).rename(columns={"y": "<script>alert(2)</script>"})
    res = fastbias.evaluate(df, label="<script>alert(2)</script>", scores="s", subgroups=[name])
    page = fastbias.BiasReport.from_result(df, res, title="<b>t</b>").to_html()
    assert "<img src=x" not in page and "<script>" not in page and "<b>t</b>" not in page
    assert html.escape(name) in page
    policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert policy is not None
    assert "default-src 'none'" in policy.group(1) and "script-src" not in policy.group(1)


def test_an_existing_output_is_replaced_only_with_force(tmp_path, capsys):
    data(["g"]).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "keep.csv"
    out.write_text("someone's data\n")
    args = ["report", str(tmp_path / "d.csv"), "--label", "y", "--scores", "s", "--subgroups",
            "g", "--out", str(out), "-q"]
    assert main(args) == 1
    assert "already exists; pass --force to replace it" in capsys.readouterr().err
    assert out.read_text() == "someone's data\n"
    assert main(args + ["--force"]) == 0
    assert out.read_text().startswith("model,subgroup,")


def test_the_demo_replaces_only_its_own_earlier_report(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)
    demo = ["demo", "--rows", "3000", "--identities", "3", "-q"]
    assert main(demo) == 0
    first = (tmp_path / "fastbias-demo-report.html").read_text()
    assert main(demo) == 0  # its own earlier report: replaced
    assert (tmp_path / "fastbias-demo-report.html").read_text().startswith("<!DOCTYPE html>")
    assert first
    (tmp_path / "fastbias-demo-report.html").write_text("<!DOCTYPE html><p>my notes</p>")
    capsys.readouterr()
    assert main(demo) == 1  # a file that is not a fastbias report is kept
    assert "already exists" in capsys.readouterr().err
    assert "my notes" in (tmp_path / "fastbias-demo-report.html").read_text()
