"""The file readers on odd data files (an independent review's tests): the ``fastbias
report`` command line, ``evaluate_csv`` /
``evaluate_parquet`` and the ``--max-memory`` streamed path, on odd data files.

Every number is checked against brute-force pair counts written here from the docs'
definitions (Subgroup AUC = AUC(Dg- vs Dg+), BPSN = AUC(Dg- vs D+), BNSP = AUC(D- vs Dg+),
AEGs 1/2 - P(s(D-) > s(Dg-)) and 1/2 - P(s(D+) > s(Dg+)), ties 1/2).

Tests marked ``defect`` in their docstring fail on the reviewed commit (c2d1230).
"""
import csv
import gzip
import io
import json
import math
import os
import stat
import zipfile

import numpy as np
import pytest

from fastbias.cli import main

ARGS = ["--label", "y", "--scores", "s", "--subgroups", "g"]


# ------------------------------------------------------------------ reference (brute force)

def _greater(a_scores, b_scores):  # P(s(a) > s(b)), ties 1/2
    num = den = 0.0
    for a in a_scores:
        for b in b_scores:
            den += 1
            num += 1.0 if a > b else 0.5 if a == b else 0.0
    return num / den if den else math.nan


def _auc(neg, pos):  # P(s(pos) > s(neg)), ties 1/2
    return _greater(pos, neg)


def reference(rows):
    """rows: (label 0/1, score, member True/False/None for unannotated=background)."""
    g0 = [s for y, s, m in rows if y == 0 and m]
    g1 = [s for y, s, m in rows if y == 1 and m]
    b0 = [s for y, s, m in rows if y == 0 and not m]
    b1 = [s for y, s, m in rows if y == 1 and not m]
    return {"subgroup_negatives": len(g0), "subgroup_positives": len(g1),
            "background_negatives": len(b0), "background_positives": len(b1),
            "subgroup_auc": _auc(g0, g1), "bpsn_auc": _auc(g0, b1), "bnsp_auc": _auc(b0, g1),
            "negative_aeg": 0.5 - _greater(b0, g0), "positive_aeg": 0.5 - _greater(b1, g1)}


ROWS = [(0, 0.1, True), (1, 0.9, True), (0, 0.4, False), (1, 0.2, False), (0, 0.3, True),
        (1, 0.8, False)]
BASE = "y,s,g\n" + "".join(f"{y},{s},{int(m)}\n" for y, s, m in ROWS)


def _report(tmp_path, data, args=ARGS, name="d.csv", out="o.csv", extra=()):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    out = tmp_path / out
    status = main(["report", str(path), *args, "--out", str(out), "--csv-raw", "-q",
                   "--progress", "never", *extra])
    rows = list(csv.DictReader(open(out, newline="", encoding="utf-8"))) if status == 0 else None
    return status, rows


def _row(rows, subgroup):
    [row] = [r for r in rows if r["subgroup"] == subgroup]
    return row


def _assert_matches(row, ref):
    for key, want in ref.items():
        got = float(row[key]) if row[key] != "" else math.nan
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=1e-12), \
            (key, got, want)


# ------------------------------------------------------------------ verified: CSV dialects

@pytest.mark.parametrize("kind", ["bom", "crlf", "cr", "no_final_newline", "blank_lines",
                                  "quoted_numbers", "number_spellings", "tsv", "gz", "bz2",
                                  "zip", "gz_two_members", "extra_quoted_text_column",
                                  "bool_words"])
def test_csv_dialects_give_the_reference(tmp_path, kind, capsys):
    """Verified: BOM, CRLF/CR line ends, no final newline, blank lines, quoted numbers,
    ' 0.5 ', '+1', '.5', '5e-1', TSV, gz/bz2/zip, a gzip of two members, a quoted text
    column holding commas, quotes and line breaks, True/false label and identity words."""
    data, name, rows = BASE, "d.csv", ROWS
    if kind == "bom":
        data = "\ufeff" + BASE
    elif kind == "crlf":
        data = BASE.replace("\n", "\r\n")
    elif kind == "cr":
        data = BASE.replace("\n", "\r")
    elif kind == "no_final_newline":
        data = BASE[:-1]
    elif kind == "blank_lines":
        data = BASE.replace("\n0,0.4", "\n\n\n0,0.4") + "\n\n"
    elif kind == "quoted_numbers":
        data = "y,s,g\n" + "".join(f'"{y}","{s}","{int(m)}"\n' for y, s, m in ROWS)
    elif kind == "number_spellings":
        data = "y,s,g\n0, 0.1 ,1\n1,0.9,1\n0,.4,0\n1,2e-1,0\n0,+0.3,1.0\n1,0.8,0.\n"
    elif kind == "tsv":
        data, name = BASE.replace(",", "\t"), "d.tsv"
    elif kind == "gz":
        data, name = gzip.compress(BASE.encode()), "d.csv.gz"
    elif kind == "bz2":
        import bz2
        data, name = bz2.compress(BASE.encode()), "d.csv.bz2"
    elif kind == "zip":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("inner.csv", BASE)
        data, name = buffer.getvalue(), "d.csv.zip"
    elif kind == "gz_two_members":
        data = gzip.compress(BASE.encode()) + gzip.compress(b"0,0.55,1\n1,0.45,1\n")
        name = "d.csv.gz"
        rows = ROWS + [(0, 0.55, True), (1, 0.45, True)]
    elif kind == "extra_quoted_text_column":
        data = 'y,s,g,t\n' + "".join(f'{y},{s},{int(m)},"a,\n""b"",\r\nc"\n'
                                     for y, s, m in ROWS)
    elif kind == "bool_words":
        data = "y,s,g\n" + "".join(f"{['false', 'TRUE'][y]},{s},{['False', 'true'][m]}\n"
                                   for y, s, m in ROWS)
    status, out = _report(tmp_path, data, name=name)
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), reference(rows))


def test_csv_missing_identity_exclude_and_fraction_threshold(tmp_path, capsys):
    """Verified: empty identity cells under --missing-subgroup exclude, fractions under
    --subgroup-threshold."""
    data = "y,s,g\n0,0.1,\n1,0.9,0.7\n0,0.4,0.2\n1,0.2,\n0,0.3,0.5\n1,0.8,0.49\n"
    status, out = _report(tmp_path, data, extra=["--missing-subgroup", "exclude"])
    assert status == 0, capsys.readouterr().err
    rows = [(1, 0.9, True), (0, 0.4, False), (0, 0.3, True), (1, 0.8, False)]
    _assert_matches(_row(out, "g"), reference(rows))


@pytest.mark.parametrize("data, name, needle", [
    (gzip.compress(BASE.encode(), mtime=0)[:-10], "d.csv.gz", "truncated"),
    (b"y,s,g\n", "d.csv", "no rows"),
    (b"", "d.csv", "empty"),
    ("y,s,g,g\n0,0.1,1,0\n", "d.csv", "several columns named 'g'"),
    ('y,s,g\n0,0.1,1\n1,0.9,"1\n0,0.4,0\n', "d.csv", "EOF inside string"),
])
def test_unreadable_files_are_one_line_errors(tmp_path, capsys, data, name, needle):
    """Verified: truncated gz, header only, empty file, duplicate header, unclosed quote."""
    status, _ = _report(tmp_path, data, name=name)
    err = capsys.readouterr().err
    assert status == 1 and needle in err and "Traceback" not in err, err


def test_zip_of_two_members_is_refused(tmp_path, capsys):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("a.csv", BASE)
        archive.writestr("b.csv", "y,s,g\n1,0.0,1\n")
    status, _ = _report(tmp_path, buffer.getvalue(), name="d.csv.zip")
    assert status == 1 and "holds 2 files" in capsys.readouterr().err


# ------------------------------------------------------------------ verified: outputs

def test_outputs_are_refused_before_work(tmp_path, capsys):
    """Verified: an existing --out without --force, a symlink (even dangling), the input
    file (also through a hard link), the --thresholds companion being the input."""
    data = tmp_path / "x.thresholds.csv"
    data.write_text(BASE)
    (tmp_path / "exist.csv").write_text("old")
    os.symlink(tmp_path / "victim.txt", tmp_path / "link.csv")
    os.link(data, tmp_path / "hard.csv")
    base = ["report", str(data), *ARGS, "-q", "--progress", "never"]
    for out, extra, needle in [("exist.csv", [], "already exists"),
                               ("link.csv", ["--force"], "symbolic link"),
                               ("hard.csv", ["--force"], "input data file"),
                               ("x.csv", ["--force", "--thresholds", "0.5"], "input data file")]:
        assert main([*base, "--out", str(tmp_path / out), *extra]) == 1
        assert needle in capsys.readouterr().err
    assert (tmp_path / "exist.csv").read_text() == "old"
    assert data.read_text() == BASE and not (tmp_path / "victim.txt").exists()


def test_force_keeps_a_private_report_private(tmp_path, capsys):
    """defect: --force replaces a 0600 report with a 0644 one (mode from the umask), so a
    report its owner had made private becomes readable by every user."""
    data = tmp_path / "d.csv"
    data.write_text(BASE)
    out = tmp_path / "r.csv"
    out.write_text("old")
    os.chmod(out, 0o600)
    old = os.umask(0o022)
    try:
        assert main(["report", str(data), *ARGS, "-q", "--out", str(out), "--force"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(out).st_mode) & 0o077 == 0, oct(os.stat(out).st_mode)


# ------------------------------------------------------------------ verified: streamed path

@pytest.mark.jit_heavy  # (the CLI streaming: its kernels run compiled; too slow as Python)
def test_streamed_equals_in_memory_on_an_odd_file(tmp_path, capsys, monkeypatch):
    """Verified: a BOM + CRLF CSV with quoted multi-line text, empty and fractional identity
    cells, streamed (--max-memory) gives the in-memory JSON report exactly."""
    import fastbias.cli as cli
    import fastbias.streaming

    rng = np.random.default_rng(0)
    n = 70_000
    y, s = rng.integers(0, 2, n), np.round(rng.random(n), 3)
    g = rng.choice(["1", "0", "", "0.7", "0.2"], n)
    lines = ["y,s,g,t"] + [f'{y[i]},{s[i]},{g[i]},' + ('"a,\nb ""x"""' if i % 7 == 0 else "z")
                           for i in range(n)]
    path = tmp_path / "big.csv"
    path.write_bytes(("\ufeff" + "\r\n".join(lines) + "\r\n").encode())
    base = ["report", str(path), *ARGS, "--progress", "never", "--force"]
    assert main([*base, "--out", str(tmp_path / "m.json"), "-q"]) == 0
    monkeypatch.setattr(cli, "_resident_memory", lambda: 100 * 2 ** 20)
    monkeypatch.setattr(cli, "KERNEL_RESERVE", 0)
    monkeypatch.setattr(cli, "CSV_CHUNK_ROWS", 4000)
    monkeypatch.setattr(fastbias.streaming, "SAMPLE_LEAST", 1_000)
    monkeypatch.setattr(fastbias.streaming, "SAMPLE_MOST", 1_000)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    limit = 104 * 2 ** 20 + fastbias.streaming.sample_memory(2)
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "st.json"), "--max-memory", str(limit)]) == 0
    assert "stream" in capsys.readouterr().err
    memory = json.loads((tmp_path / "m.json").read_text())["models"]
    streamed = json.loads((tmp_path / "st.json").read_text())["models"]
    assert memory == streamed


# ------------------------------------------------------------------ defects: CSV

def test_csv_row_with_an_extra_field_is_an_error(tmp_path, capsys):
    """defect (silent): a row with more fields than the header (here a decimal comma slip,
    '1,0,9,1') is read as y=1, s=0, g=9 and the extra field dropped (pandas refuses such a
    row, 'Expected 3 fields in line 3, saw 4', except with usecols, which fastbias passes).
    Should be an error naming the line."""
    data = "y,s,g\n0,0.1,0\n1,0,9,1\n0,0.4,0\n1,0.2,0\n0,0.3,1\n1,0.8,1\n"
    status, _ = _report(tmp_path, data)
    err = capsys.readouterr().err
    assert status == 1 and "line 3" in err, err


def test_evaluate_csv_row_with_an_extra_field_is_an_error(tmp_path):
    """defect (silent): as above, through fastbias.evaluate_csv."""
    from fastbias.streaming import evaluate_csv

    path = tmp_path / "d.csv"
    path.write_text("y,s,g\n0,0.1,0\n1,0,9,1\n0,0.4,0\n1,0.2,0\n0,0.3,1\n1,0.8,1\n")
    with pytest.raises(Exception, match="line 3|row 1"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], batch_rows=2, bucket_rows=3)


SENSITIVE = "y,s,c\n0,0.1,None\n1,0.9,None\n0,0.4,US\n1,0.2,US\n0,0.3,NA\n1,0.8,NA\n"
SENS_ROWS = [(0, 0.1, "None"), (1, 0.9, "None"), (0, 0.4, "US"), (1, 0.2, "US"),
             (0, 0.3, "NA"), (1, 0.8, "NA")]


def test_csv_sensitive_values_none_and_na_are_groups(tmp_path, capsys):
    """defect (silent): in a CSV file the text values 'None' (religion: None), 'NA'
    (Namibia), 'null', 'n/a' ... of a --sensitive-features column are read as missing (pandas'
    default na_values), so those groups vanish from the report and their rows become
    background; the same data as JSON lines or Parquet reports c=None and c=NA."""
    status, out = _report(tmp_path, SENSITIVE,
                          args=["--label", "y", "--scores", "s", "--sensitive-features", "c"])
    assert status == 0, capsys.readouterr().err
    assert {r["subgroup"] for r in out} == {"c=NA", "c=None", "c=US"}
    for value in ("None", "NA", "US"):
        _assert_matches(_row(out, f"c={value}"),
                        reference([(y, s, c == value) for y, s, c in SENS_ROWS]))


def test_jsonl_sensitive_values_none_and_na_are_groups(tmp_path, capsys):
    """Verified (the contrast to the CSV defect): JSON lines keep the strings."""
    text = "".join(json.dumps({"y": y, "s": s, "c": c}) + "\n" for y, s, c in SENS_ROWS)
    status, out = _report(tmp_path, text, name="d.jsonl",
                          args=["--label", "y", "--scores", "s", "--sensitive-features", "c"])
    assert status == 0, capsys.readouterr().err
    assert {r["subgroup"] for r in out} == {"c=NA", "c=None", "c=US"}
    _assert_matches(_row(out, "c=None"), reference([(y, s, c == "None") for y, s, c in SENS_ROWS]))


def test_evaluate_csv_sensitive_values_none_and_na_are_groups(tmp_path):
    """defect (silent): as above, through fastbias.evaluate_csv."""
    from fastbias.streaming import evaluate_csv

    path = tmp_path / "d.csv"
    path.write_text(SENSITIVE)
    result = evaluate_csv(path, label="y", scores="s", sensitive_features=["c"],
                          batch_rows=2, bucket_rows=3)
    assert set(result.table["subgroup"]) == {"c=NA", "c=None", "c=US"}


def test_csv_positive_label_with_a_class_written_none(tmp_path, capsys):
    """defect (misleading error): labels 'toxic'/'None' with --positive toxic stop with
    "label column 'y' holds only 'toxic'" (the file holds 'None' on half the rows: pandas
    read it as missing); the negatives are the 'None' rows."""
    data = "y,s,g\n" + "".join(f"{['None', 'toxic'][y]},{s},{int(m)}\n" for y, s, m in ROWS)
    status, out = _report(tmp_path, data, extra=["--positive", "toxic"])
    err = capsys.readouterr().err
    assert "holds only 'toxic'" not in err
    assert status == 0, err
    _assert_matches(_row(out, "g"), reference(ROWS))


def test_sep_error_names_the_option(tmp_path, capsys):
    """--sep '\\t' typed literally is a tab; '||' is refused naming --sep (pandas had said
    '"delimiter" must be a 1-character string')."""
    status, out = _report(tmp_path, BASE.replace(",", "\t"), extra=["--sep", "\\t"])
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), reference(ROWS))
    with pytest.raises(SystemExit):
        _report(tmp_path, BASE.replace(",", "||"), out="o2.csv", extra=["--sep", "||"])
    err = capsys.readouterr().err
    assert "--sep" in err and "must be one character" in err, err


def test_subgroups_file_with_a_bom(tmp_path, capsys):
    """defect (error): a --subgroups-file saved with a UTF-8 BOM (Notepad) names the column
    '\\ufeffg'; data files have their BOM dropped, the subgroups file does not."""
    names = tmp_path / "names.txt"
    names.write_bytes("\ufeffg\r\n".encode())
    status, out = _report(tmp_path, BASE, args=["--label", "y", "--scores", "s",
                                                "--subgroups-file", str(names)])
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), reference(ROWS))


def test_empty_column_name_selected(tmp_path, capsys):
    """unclear message: a header with an empty name passes the header check, then pandas
    says 'Usecols do not match columns, columns expected but not found: ['']'."""
    data = "y,s,\n" + "".join(f"{y},{s},{int(m)}\n" for y, s, m in ROWS)
    status, out = _report(tmp_path, data, args=["--label", "y", "--scores", "s",
                                                "--subgroups", ""])
    err = capsys.readouterr().err
    assert "Usecols" not in err, err
    if status == 0:
        _assert_matches(_row(out, ""), reference(ROWS))


# ------------------------------------------------------------------ defects: JSON lines

JROWS = [{"y": y, "s": s, "g": int(m)} for y, s, m in ROWS]


def _jsonl(lines):
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)


def test_jsonl_a_key_repeated_in_a_later_line_reads_its_last_value(tmp_path, capsys):
    """A key given twice in one object of a later line: its last value is read, as Python's
    json, pandas and JavaScript read it (docs/cli.md; the first line's are refused, as it
    names the columns). {"s": 0.9, "s": 0.05} is a score of 0.05."""
    lines = [JROWS[0], '{"y": 1, "s": 0.9, "s": 0.05, "g": 1}', *JROWS[2:]]
    status, out = _report(tmp_path, _jsonl(lines), name="d.jsonl")
    assert status == 0, capsys.readouterr().err
    rows = [ROWS[0], (1, 0.05, True), *ROWS[2:]]
    _assert_matches(_row(out, "g"), reference(rows))


def test_jsonl_with_a_bom(tmp_path, capsys):
    """defect (error, unclear): a JSON-lines file with a UTF-8 BOM passes the header (read
    as utf-8-sig) and then fails with "cannot read data file 'd.jsonl' after row 0: Expected
    object or value at position 0"; a CSV file's BOM is dropped."""
    status, out = _report(tmp_path, "\ufeff" + _jsonl(JROWS), name="d.jsonl")
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), reference(ROWS))


@pytest.mark.parametrize("line", ["[1, 2, 3]", "null", "5"])
def test_jsonl_line_not_an_object_names_file_and_line(tmp_path, capsys, line):
    """unclear message: a line that is not an object stops with Python's own words
    ("cannot convert dictionary update sequence element #0 to a sequence", "'NoneType'
    object is not iterable", "'int' object is not iterable"), no file, no line."""
    status, _ = _report(tmp_path, _jsonl([*JROWS[:3], line, *JROWS[3:]]), name="d.jsonl")
    err = capsys.readouterr().err
    assert status == 1 and "d.jsonl" in err and ("line 4" in err or "row 3" in err), err


def test_jsonl_missing_keys_and_nulls(tmp_path, capsys):
    """Verified: a key left out of the first line, null identities under exclude."""
    lines = [{"y": 0, "s": 0.1}, *JROWS[1:]]
    status, out = _report(tmp_path, _jsonl(lines), name="d.jsonl",
                          extra=["--missing-subgroup", "exclude"])
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), reference(ROWS[1:]))


# ------------------------------------------------------------------ Parquet

def test_parquet_nullable_bool_and_dictionary_identities(tmp_path, capsys):
    """Verified: nullable boolean and dictionary-encoded identities, CLI and
    evaluate_parquet."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from fastbias.streaming import evaluate_parquet

    path = tmp_path / "d.parquet"
    members = [True, True, None, False, True, False]
    pq.write_table(pa.table({"y": [r[0] for r in ROWS], "s": [r[1] for r in ROWS],
                             "g": pa.array(members),
                             "h": pa.array([int(bool(m)) for m in members]).dictionary_encode()}),
                   path)
    ref = reference([(y, s, m) for (y, s, _), m in zip(ROWS, members)])
    status, out = _report(tmp_path, path.read_bytes(), name="d.parquet",
                          args=["--label", "y", "--scores", "s", "--subgroups", "g", "h"])
    assert status == 0, capsys.readouterr().err
    _assert_matches(_row(out, "g"), ref)
    _assert_matches(_row(out, "h"), ref)
    table = evaluate_parquet(path, label="y", scores="s", subgroups=["g", "h"],
                             batch_rows=2, bucket_rows=2).table.set_index("subgroup")
    for key, want in ref.items():
        assert table.loc["g", key] == pytest.approx(want) or (math.isnan(want))


def test_mixed_kind_column_is_refused_without_pandas_advice(tmp_path):
    """A column of numbers that turns to text after pandas' first internal blocks (about
    2**18 lines) is refused naming the column, the value and its row, and pandas'
    DtypeWarning ("set low_memory=False") does not reach the user beside it."""
    import warnings

    import fastbias

    n = 300_000
    path = tmp_path / "mixed.csv"
    rows = "".join(f"{i % 2},{(i % 97) / 97},{i % 3 == 0:d}\n" for i in range(n))
    path.write_text("y,s,g\n" + rows + "1,0.5,x\n")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(TypeError, match=r"'g'.*'x' at row 300000"):
            fastbias.evaluate_csv(path, label="y", scores="s", subgroups=["g"],
                                  batch_rows=10**6)
    assert [str(w.message) for w in seen if "mixed types" in str(w.message)] == []
