"""An independent review's tests (2026-11-27) of the thirty-third session's changes
(e16068a..1324909).

Found by review (each fails before its fix):
- JSON lines: a number pandas cannot read is not named (pandas' bare "Range error" is shown)
  when the failing batch's lines hold more rows than ``batch_rows``: pandas' ``chunksize``
  counts lines, ``_refuse_unreadable_json`` stops after ``batch_rows`` rows.
- ``display_width`` counts the nonspacing marks of canonical combining class 0 (Thai,
  Devanagari vowel signs and anusvara: 1,076 code points) as one cell: a table holding
  "हिंदू" or "มุสลิม" is out of line.
- The HTML report shows the name "a " as "a" (HTML collapses edge and repeated spaces): the
  terminal's edge-space escape (``name_cell``) is missing there.
- A no-break space (or another space separator) inside a name prints as a space: subgroups
  "a b" and "a\\u00a0b" are two identical rows in the terminal table.

The other tests pin properties of the change that held (against references made here).
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
import unicodedata
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import fastbias
from fastbias import cli
from fastbias.report import BiasReport
from tests._fuzz_harness import cli_streaming


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _ref_width(text: str) -> int:
    """Terminal cells by Unicode's own data: nonspacing and enclosing marks and format
    characters take none, East Asian wide/full-width two, the rest one."""
    total = 0
    for c in text:
        if unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        total += 2 if unicodedata.east_asian_width(c) in "WF" else 1
    return total


def _cli(argv, stream=False):
    out, err = io.StringIO(), io.StringIO()
    with cli_streaming(11 if stream else None) as extra:
        argv = argv + extra
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = cli.main(argv + ["--progress", "never"])
            except SystemExit as exc:
                status = exc.code
    if stream and status == 0:
        assert "streaming it" in err.getvalue()
    return status, out.getvalue(), err.getvalue()


def _names_report(names, seed=3, n=400):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n)})
    for name in names:
        df[name] = (rng.random(n) < 0.3).astype(int)
    res = _quiet(fastbias.evaluate, df, label="y", scores=["s"], subgroups=list(names))
    return _quiet(BiasReport.from_result, df, res)


# ---------------------------------------------------------------------------------------
# Defects
# ---------------------------------------------------------------------------------------

def test_jsonl_unreadable_number_named_when_a_batch_of_lines_holds_more_rows(tmp_path):
    """Was: Lines 1-3 hold rows 0-3 (line 2 two objects); with batch_rows=3 pandas' first
    chunk is lines 1-3 (chunksize counts lines), which fails on 1e400 in row 3, line 3. The
    scan stops after 3 rows (row 3 never looked at), so the bare "cannot read ... Range
    error ... at position 77" is shown. Right: 'holds 1e400 at row 3 (line 3)', as at
    batch_rows 1, 2 and 10. Cause: validate/textfile.py _refuse_unreadable_json bounds the
    failing batch by rows (start + batch_rows) where pandas bounds it by lines."""
    from fastbias.validate.textfile import (
        DataFileError,
        iter_text_batches,
        open_text_source,
    )

    path = tmp_path / "t.jsonl"
    path.write_text('{"y":0,"s":0.1,"g":1}\n{"y":0,"s":0.3,"g":1},{"y":1,"s":0.2,"g":0}\n'
                    '{"y":1,"s":1e400,"g":0}\n{"y":0,"s":0.5,"g":1}\n')
    # pandas' own chunking, the premise: 3 lines are 4 rows
    assert [len(c) for c in pd.read_json(io.StringIO('{"a":1}\n{"a":2},{"a":3}\n{"a":4}\n'),
                                         lines=True, chunksize=2)] == [3, 1]
    for batch_rows in (1, 2, 3, 10):
        source = open_text_source(str(path), wanted=["y", "s", "g"])
        with pytest.raises(DataFileError) as info:
            for _ in iter_text_batches(source, ["y", "s", "g"], batch_rows):
                pass
        assert re.search(r"holds 1e400 at row 3 \(line 3\)", str(info.value)), \
            (batch_rows, str(info.value))


@pytest.mark.parametrize("name, cells", [("हिंदू", 3), ("มุสลิม", 4), ("漢字", 4), ("e\u0301", 1),
                                         ("ab", 2)])
def test_display_width_of_nonspacing_marks(name, cells):
    """Was, for Hindi and Thai: display_width says 'none for a combining mark' but asks
    unicodedata.combining (the canonical combining class), which is 0 for the anusvara
    U+0902, the vowel sign U+0942 and Thai U+0E38, U+0E34 (category Mn, drawn on the letter
    before): 'हिंदू' is 5 cells there, 3 on a terminal; 'มุสลิม' 5, not 4. Right: category
    Mn/Me take no cell (reports/plain.py display_width)."""
    from fastbias.reports.plain import display_width

    assert _ref_width(name) == cells  # (the reference's own check)
    assert display_width(name) == cells


def test_text_table_columns_line_up_with_hindi_and_thai_names():
    """Was: The terminal table's second column (size) must end at the same terminal
    column on every row; with 'हिंदू' and 'มุสลิม' it ends 2 and 1 cells early (see
    test_display_width_of_nonspacing_marks for the cause)."""
    text = _names_report(["हिंदू", "มุสลิม", "xyz"]).to_text()
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("subgroup "))
    ends = {}
    for line in lines[header + 2:header + 5]:
        name = next(n for n in ("हिंदू", "มุสลิม", "xyz") if line.startswith(n))
        size = re.match(r"(.*?\s\d+)\s", line).group(1)  # the name cell and the size
        ends[name] = _ref_width(size)
    assert len(set(ends.values())) == 1, ends


def test_html_report_tells_a_name_with_an_edge_space_from_one_without():
    """Was: Since 69bbbbd the terminal writes 'a ' as 'a\\x20' (a table pads with spaces,
    so they read alike); the HTML report writes <bdi>a </bdi>, which a browser draws as 'a'
    (white space at a line's edge is removed, runs collapse: CSS white-space: normal), so
    two rows read 'a'. Right: the HTML name shows the edge space too (reports/report.py
    _html_name uses terminal_text, not name_cell)."""
    report = _names_report(["a", "a ", "x  y", "x y"])
    html_text = report.to_html()
    table = re.search(r'<table class="metrics".*?</table>', html_text, re.S).group(0)
    # each row's name as a browser draws it: runs of white space one space, none at the edges
    drawn = [re.sub(r"[ \t\n\r\f]+", " ", m).strip()
             for m in re.findall(r"<tr><td><bdi>(.*?)</bdi></td>", table)]
    assert len(drawn) == 4, drawn
    assert len(set(drawn)) == 4, drawn


def test_terminal_tells_a_no_break_space_from_a_space_inside_a_name():
    """Was: Subgroups 'a b' and 'a\\u00a0b' (a no-break space, as pasted from a web page)
    print as two identical rows 'a b' (so do U+2007, U+202F, U+3000 and the other space
    separators inside a name); the change's own motivation was 'gay' and 'gay\\u200b' printed
    as two identical rows. Right: every space other than U+0020 escaped (\\xa0), wherever
    names are shown (validate/errors.py _INVISIBLE, reports/plain.py name_cell)."""
    from fastbias.reports.plain import name_cell, terminal_text

    def drawn(text):  # as a terminal draws it: every space separator is a blank
        return "".join(" " if unicodedata.category(c) == "Zs" else c for c in text)

    for sep in ("\u00a0", "\u2007", "\u202f", "\u3000"):
        assert drawn(name_cell("a" + sep + "b")) != drawn(name_cell("a b")), repr(sep)
        assert drawn(terminal_text("a" + sep + "b")) != drawn(terminal_text("a b")), repr(sep)
    text = _names_report(["a b", "a\u00a0b"]).to_text()
    rows = [drawn(line).split("  ")[0] for line in text.splitlines() if line.startswith("a")]
    assert len(rows) == 2 and len(set(rows)) == 2, rows


# ---------------------------------------------------------------------------------------
# Properties that held
# ---------------------------------------------------------------------------------------

def test_every_format_character_is_escaped():
    """Every Unicode format character (category Cf), control, line/paragraph separator and
    variation selector of this Python's Unicode data is escaped, as \\uXXXX or \\UXXXXXXXX
    naming its own code point."""
    from fastbias.validate.errors import visible

    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        name = unicodedata.name(c, "")
        if unicodedata.category(c) in ("Cf", "Cc", "Zl", "Zp") or "VARIATION SELECTOR" in name:
            got = visible("a" + c + "b")
            assert c not in got, hex(cp)
            assert got[1:-1].lower() in (f"\\x{cp:02x}", f"\\u{cp:04x}", f"\\U{cp:08x}".lower()), \
                (hex(cp), got)


def test_name_cell_escapes_only_edge_spaces():
    from fastbias.reports.plain import name_cell

    assert name_cell("a ") == "a\\x20"
    assert name_cell(" a") == "\\x20a"
    assert name_cell("a b") == "a b"
    assert name_cell("  ") == "\\x20\\x20"
    assert name_cell("\u3000a") == "\\u3000a"


def test_top_tie_note_names_the_tied_subgroups():
    """Four identical membership columns: with --top 2 the note says 2 more tie with the last
    shown and names them; their lowest AUCs are equal by construction."""
    rng = np.random.default_rng(8)
    n = 300
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n).round(2)})
    col = (rng.random(n) < 0.4).astype(int)
    for name in ("t1", "t2", "t3", "t4"):
        df[name] = col
    df["best"] = (df["s"] > 0.5).astype(int) * df["y"]  # a different subgroup
    res = _quiet(fastbias.evaluate, df, label="y", scores="s",
                 subgroups=["t1", "t2", "t3", "t4", "best"])
    text = _quiet(BiasReport.from_result, df, res).to_text(max_subgroups=2)
    note = re.search(r"\(2 worst of 5 subgroups shown.*?\)\s*$", text, re.S | re.M)
    assert note and "2 more tie with the last shown" in note.group(0), text
    shown = [line.split()[0] for line in text.splitlines() if re.match(r"t\d ", line)]
    tied = set(re.search(r"tie with the last shown \(([^)]*)\)", text).group(1).split(", "))
    assert len(shown) == 2 and tied == {"t1", "t2", "t3", "t4"} - set(shown)


def test_na_footnote_counts_the_na_cells_shown():
    """Without --top the footnote's total equals the n/a cells of the tables (metric and
    threshold), counted in the text."""
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n) * 0.9})
    df["g1"] = (rng.random(n) < .3).astype(int)
    df["g2"] = 0
    df.loc[:5, "g2"] = 1
    df.loc[:5, "y"] = 1
    res = _quiet(fastbias.evaluate, df, label="y", scores=["s"], subgroups=["g1", "g2"],
                 thresholds=[0.5, 0.95])
    text = _quiet(BiasReport.from_result, df, res).to_text()
    body, foot = text.split("\n\nn/a:")
    tables = "\n".join(line for line in body.splitlines()[1:])  # (not the head line)
    total = int(re.match(r" (\d+) undefined", foot).group(1))
    assert total == len(re.findall(r"(?<![\w/])n/a(?![\w/])", tables)) > 3


def test_unweighted_bootstrap_replicates_are_the_exact_ratios():
    """Each unweighted replicate's five metrics are float(Fraction) of its Poisson-count
    weighted pair counts, bit for bit (the counts regenerated by the reference in
    tests/test_bootstrap_reference.py, the metrics by brute-force pair counts here)."""
    from fastbias.intervals import bootstrap_replicates
    from fastbias.prepare.memberships import prepare_subgroups

    from .test_bootstrap_reference import ref_counts, ref_key, ref_seeds

    rng = np.random.default_rng(11)
    n = 90
    y = rng.random(n) < 0.4
    s = np.round(rng.random(n) + 0.2 * y, 1)
    groups = {"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.5}
    m = prepare_subgroups(y.astype(np.int8), groups, None)
    got = _quiet(bootstrap_replicates, s, m, None, n_boot=6, random_state=5)
    for b, child in enumerate(ref_seeds(5, 6)):
        w = ref_counts(ref_key(child), n)
        for j, g in enumerate(groups.values()):
            cells = {"sn": ~y & g, "sp": y & g, "bn": ~y & ~g, "bp": y & ~g}

            def theta(x, z):  # P(s_x > s_z) + 1/2 ties, weighted by the counts
                num = den = 0
                for i in np.flatnonzero(x):
                    for k in np.flatnonzero(z):
                        pw = int(w[i]) * int(w[k])
                        den += pw
                        num += 2 * pw if s[i] > s[k] else pw if s[i] == s[k] else 0
                return None if den == 0 else Fraction(num, 2 * den)

            ref = {"subgroup_auc": theta(cells["sp"], cells["sn"]),
                   "bpsn_auc": theta(cells["bp"], cells["sn"]),
                   "bnsp_auc": theta(cells["sp"], cells["bn"]),
                   "negative_aeg": theta(cells["bn"], cells["sn"]),
                   "positive_aeg": theta(cells["bp"], cells["sp"])}
            for metric, value in ref.items():
                v = got.metrics[metric][b, j]
                if value is None:
                    assert np.isnan(v), (b, j, metric)
                    continue
                want = float(value) if metric.endswith("auc") else float(Fraction(1, 2) - value)
                assert v == want, (b, j, metric, v, want)


class _FakeDataset:
    """What lightgbm.train hands a feval: get_label() is a float32 copy."""

    def __init__(self, labels):
        self._labels = np.asarray(labels, dtype=np.float32)

    def get_label(self):
        return self._labels

    def num_data(self):
        return self._labels.shape[0]


def test_boosting_float32_labels_fit_their_evaluator_and_not_another():
    from fastbias.boosting import lightgbm_metric

    rng = np.random.default_rng(2)
    n = 200
    y = rng.choice([0.0, 0.3, 0.7, 0.9], n)
    y[:3] = 0.7  # float32(0.7) < 0.7: exactly at the threshold
    g = {"g": rng.random(n) < 0.4}
    scores = rng.random(n)
    ev = fastbias.BiasEvaluator(y, g, label_threshold=0.7)
    metric = lightgbm_metric(ev, metrics=["min_subgroup_auc"])
    got = dict((k, v) for k, v, _ in _quiet(metric, scores, _FakeDataset(y)))
    ref = _quiet(fastbias.bias_metrics, y >= 0.7, scores, g)
    assert got["min_subgroup_auc"] == pytest.approx(float(ref["subgroup_auc"].iloc[0]),
                                                     abs=1e-12)
    other = y.copy()
    other[0] = 0.3  # one row of another class: not this evaluator's set
    with pytest.raises(ValueError, match="differ"):
        _quiet(lightgbm_metric(ev, metrics=["min_subgroup_auc"]), scores, _FakeDataset(other))


def test_a_number_naming_no_column_is_a_key_error_on_every_frame_entry_point(tmp_path):
    import dask.dataframe as dd

    import fastbias.dask as fd
    from fastbias.streaming import evaluate_csv, evaluate_parquet

    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "s": rng.random(n),
                       "g": rng.integers(0, 2, n)})
    df.to_csv(tmp_path / "w.csv", index=False)
    df.to_parquet(tmp_path / "w.parquet")
    calls = [lambda: fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                       sample_weight=3),
             lambda: fastbias.evaluate(df, label="y", scores="s", subgroups=["g"],
                                       sample_weight=3, nan_policy="omit"),
             lambda: fd.evaluate(dd.from_pandas(df, npartitions=2), label="y", scores="s",
                                 subgroups=["g"], sample_weight=3),
             lambda: evaluate_csv(str(tmp_path / "w.csv"), label="y", scores="s",
                                  subgroups=["g"], sample_weight=3),
             lambda: evaluate_parquet(str(tmp_path / "w.parquet"), label="y", scores="s",
                                      subgroups=["g"], sample_weight=3)]
    for call in calls:
        with pytest.raises(KeyError, match=r"sample_weight.*\[3\]"):
            _quiet(call)


def test_cli_unused_options_refused_and_positive_streams_as_in_memory(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"y": rng.choice(["toxic", "ok"], n), "yn": rng.integers(0, 2, n),
                       "s": rng.random(n).round(2), "g": (rng.random(n) < .3).astype(int)})
    df.to_csv(tmp_path / "d.csv", index=False)
    df.to_parquet(tmp_path / "d.parquet")

    def base(f, out, *extra):
        return ["report", str(tmp_path / f), "--scores", "s", "--subgroups", "g", "--out",
                str(tmp_path / out), "--force", *extra]

    for extra, words in [(["--label", "yn", "--ci", "delong", "--n-boot", "5"], "--n-boot"),
                         (["--label", "yn", "--significance", "holm", "--seed", "3"], "--seed"),
                         (["--label", "yn", "--min-subgroup-size", "4"], "--min-subgroup-size"),
                         (["--label", "yn", "--positive", "1", "--label-threshold", "0.5"],
                          "--label-threshold")]:
        status, _, err = _cli(base("d.csv", "x.json", *extra))
        assert status != 0 and words in err, (extra, err)
    status, _, err = _cli(base("d.parquet", "x.json", "--label", "yn", "--sep", ";"))
    assert status != 0 and "--sep" in err
    import json
    outs = []
    for stream in (False, True):
        status, _, err = _cli(base("d.csv", f"p{stream}.json", "--label", "y", "--positive",
                                   "toxic"), stream=stream)
        assert status == 0, err
        outs.append(json.loads((tmp_path / f"p{stream}.json").read_text()))
    # in memory and streamed, the same numbers (and they are those of y == "toxic")
    ref = _quiet(fastbias.bias_metrics, (df["y"] == "toxic").to_numpy(), df["s"].to_numpy(),
                 {"g": df["g"].to_numpy().astype(bool)})
    for out in outs:
        text = json.dumps(out)
        assert repr(float(ref["subgroup_auc"].iloc[0]))[:8] in text
