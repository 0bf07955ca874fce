"""Render the HTML report in headless Chromium: every figure loads, nothing errors.

Needs the Debian packages ``chromium`` (and ``chromium-driver``) and the
``playwright`` Python package, driven against /usr/bin/chromium (no browser
download). Skips cleanly when either is missing. A full-page screenshot is
saved to ``test-artifacts/report.png`` for people to look at.
"""
import contextlib
import os
import shutil
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import fastbias
from fastbias.metrics import METRIC_COLUMNS

pytest.importorskip("matplotlib")
sync_api = pytest.importorskip("playwright.sync_api")

REPO_ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO_ROOT / "test-artifacts"
CHROMIUM = os.environ.get("FASTBIAS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason=f"chromium not installed ({CHROMIUM} is absent)")


@contextlib.contextmanager
def chromium(playwright):
    """Headless Chromium, closed at the end; a skip when it does not start (a broken browser
    install is an environment problem, not a report bug)."""
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception as exc:
        pytest.skip(f"chromium does not start: {exc}")
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    """A report with two models, an undefined subgroup and intervals (every part of the page)."""
    df = fastbias.make_jigsaw_like(n_rows=60_000, n_identities=8, random_state=3)
    df["no_toxic_rows"] = np.where(df["toxicity"] < 0.5, df["male"], 0.0)
    subgroups = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            report = fastbias.bias_report(df, label="toxicity",
                                          scores=["model_fair", "model_biased"],
                                          subgroups=subgroups, ci="delong",
                                          title="fastbias browser test")
        except (ImportError, TypeError):  # no interval support: the rest of the page still
            report = fastbias.bias_report(df, label="toxicity",
                                          scores=["model_fair", "model_biased"],
                                          subgroups=subgroups, title="fastbias browser test")
    path = tmp_path_factory.mktemp("report") / "report.html"
    report.to_html(path)
    return path, report


def test_report_renders_in_chromium(report_file):
    path, report = report_file
    problems, requests = [], []
    with sync_api.sync_playwright() as playwright, chromium(playwright) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri(), wait_until="load")

        images = page.evaluate("""() => Array.from(document.images).map(img => ({
            complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
            shown: img.getBoundingClientRect().width}))""")
        figure_ids = page.evaluate(
            "() => Array.from(document.querySelectorAll('figure')).map(f => f.id)")
        table_rows = page.evaluate("""() => Array.from(document.querySelectorAll(
            'table.metrics')).map(t => t.tBodies[0].rows.length)""")
        undefined_cells = page.evaluate(
            "() => document.querySelectorAll('table.metrics td.undefined[title]').length")
        tooltip = page.evaluate(
            "() => document.querySelector('table.metrics td.undefined[title]')?.title || ''")
        title = page.title()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)

    assert problems == []
    # self-contained: the page itself is the only thing fetched (images are data: URLs)
    assert all(url == path.as_uri() or url.startswith("data:") for url in requests), requests
    expected_figures = ["fig-aucs", "fig-aegs", "fig-distributions"]
    if any(f"{m}_low" in report.result.table for m in METRIC_COLUMNS):
        expected_figures.insert(2, "fig-intervals")
    assert figure_ids == expected_figures
    assert len(images) == len(expected_figures)
    for image in images:
        assert image["complete"] and image["width"] > 300 and image["height"] > 150, image
        assert image["shown"] > 0
    assert table_rows == [len(report.result.subgroups)] * len(report.result.models)
    n_undefined = int(report.result.table[METRIC_COLUMNS].isna().to_numpy().sum())
    assert n_undefined > 0 and undefined_cells >= n_undefined
    assert "undefined" in tooltip and "subgroup_positives = 0" in tooltip
    assert title == "fastbias browser test"
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_names_with_markup_run_nothing_in_chromium(tmp_path):
    """A subgroup, label and model named with markup: shown as text, no handler fires."""
    name = "<img src=x onerror=\"document.title='pwned'\">"
    rng = np.random.default_rng(0)
    n = 400
    import pandas as pd

    df = pd.DataFrame({"<b onmouseover=alert(1)>y": rng.integers(0, 2, n),
                       "<svg onload=\"document.title='pwned'\">": rng.random(n),
                       name: rng.integers(0, 2, n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label=df.columns[0], scores=df.columns[1],
                                      subgroups=[name], title="<script>document.title='pwned'"
                                                              "</script>")
    path = tmp_path / "hostile.html"
    report.to_html(path)
    with sync_api.sync_playwright() as playwright, chromium(playwright) as browser:
        page = browser.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri(), wait_until="load")
        title = page.title()
        text = page.inner_text("body")
        elements = page.evaluate("() => document.querySelectorAll('main img:not([src^=\"data:\"]),"
                                 " main svg, main script, main b[onmouseover]').length")
    assert title != "pwned" and "<script>" in title  # the title is shown as text
    assert name in text
    assert elements == 0
    assert all(url == path.as_uri() or url.startswith("data:") for url in requests), requests


@pytest.fixture(scope="module")
def long_report_file(tmp_path_factory):
    """Two models x 51 subgroups with intervals: taller and wider than a screen or a page."""
    df = fastbias.make_jigsaw_like(n_rows=40_000, n_identities=51, random_state=5)
    subgroups = [c for c in df.columns if c not in ("toxicity", "model_fair", "model_biased")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fastbias.bias_report(df, label="toxicity", scores=["model_fair", "model_biased"],
                                      subgroups=subgroups, ci="delong", title="fastbias print test")
    path = tmp_path_factory.mktemp("report") / "long.html"
    report.to_html(path)
    return path, report


def _squash(text):
    return "".join(text.split())


def test_printing_the_report_keeps_every_table_row_and_column(long_report_file):
    """Print to PDF as a reader would (Ctrl+P, background graphics on): no row or column is lost.

    On screen the per-model tables scroll inside boxes of 80% of the window; printed
    without print CSS those boxes clip ~half of the rows and the AEG columns.
    """
    pypdf = pytest.importorskip("pypdf")
    path, report = long_report_file
    pdf_path = path.with_suffix(".pdf")
    with sync_api.sync_playwright() as playwright, chromium(playwright) as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(path.as_uri(), wait_until="load")
        tables = page.evaluate("""() => Array.from(document.querySelectorAll(
            'table.metrics')).map(t => ({model: t.dataset.model,
              head: Array.from(t.tHead.rows[0].cells).map(c => c.innerText),
              rows: Array.from(t.tBodies[0].rows).map(
                r => Array.from(r.cells).map(c => c.innerText))}))""")
        page.emulate_media(media="print")
        page.pdf(path=str(pdf_path), print_background=True, prefer_css_page_size=True)
    reader = pypdf.PdfReader(str(pdf_path))
    text = _squash("\n".join(p.extract_text() for p in reader.pages))

    n_subgroups = len(report.result.subgroups)
    assert n_subgroups == 51
    assert [t["model"] for t in tables] == list(report.result.models)
    position = 0
    for table in tables:
        assert len(table["rows"]) == n_subgroups
        assert len(table["head"]) == len(table["rows"][0])
        header = [_squash(h) for h in table["head"]]
        assert header[-2:] == ["NegativeAEG", "PositiveAEG"]
        found = text.find("".join(header), position)
        assert found >= 0, f"{table['model']}: the header is not in the PDF text"
        position = found
        for row in table["rows"]:   # every cell of every row, in order (the AEG ones last)
            cells = "".join(_squash(c.split("\n")[0]) for c in row)
            found = text.find(cells, position)
            assert found >= 0, f"{table['model']}: row {row[0]!r} is not in the PDF text"
            position = found + len(cells)
    # the intervals under the values (a separate, lighter text run: pypdf reads them apart)
    intervals = Counter(_squash(line) for table in tables for row in table["rows"]
                        for cell in row for line in cell.split("\n")[1:])
    assert sum(intervals.values()) == 2 * n_subgroups * len(METRIC_COLUMNS)
    for interval, count in intervals.items():
        assert text.count(interval) >= count, interval
    # the four figures are printed too
    n_images = sum(len(p.images) for p in reader.pages)
    assert n_images >= 4
