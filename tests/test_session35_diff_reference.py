"""An independent review's tests (2026-11-27) of the thirty-fifth session's changes: JSON lines' score/weight columns
read as numbers or their text (validate/textfile.py _json_numbers/_json_number), NUMBER_TEXT in
validate/columns.py first_non_numeric, the third --positive label's position, the argparse
hint. Expected values come from pandas' own CSV reader, Python's json/float, sklearn and hand
counts, never from fastbias.

Found by review (each failed before its fix):
* NUMBER_TEXT reads "NAN", "nAn", "+nan", "inf " and " nan" as numbers' text, which pandas' CSV
  reader reads as text: a CSV score column with one of them blames the good '0.1' at
  position 0 "(numbers written as text)" (the very defect the change meant to fix for '1_000').
* A JSON score/weight written as integer text of more than 4,300 digits fails with Python's
  "Exceeds the limit (4300 digits) ... use sys.set_int_max_str_digits()", naming neither the
  column nor the row (_json_number's int(value)).
* The argparse hint about '-m2' columns is added to errors of options that take no column
  (--top, a number).
"""
import io
import json

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from fastbias.cli import main
from fastbias.validate.columns import NUMBER_TEXT
from tests.test_bounded_memory import _four_mib_for_data


def _cli(capsys, monkeypatch, cwd, *args):
    monkeypatch.chdir(cwd)
    try:
        rc = main([str(a) for a in args])
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def _base(n=10):
    return [{"label": i % 2, "s": i / 10, "g": i % 3 == 0} for i in range(n)]


# ------------------------------------------------------------------ found by review

PANDAS_TEXT_NOT_NUMBER = ["NAN", "nAn", "+nan", "inf ", " nan"]


@pytest.mark.parametrize("text", PANDAS_TEXT_NOT_NUMBER)
def test_number_text_agrees_with_pandas_csv_reader(text):
    # Reference: pandas' CSV reader, the reader NUMBER_TEXT claims to describe ("text a data
    # file's reader reads as a number"). Beside 0.5, these leave the column as text (object).
    # NUMBER_TEXT (re.IGNORECASE nan/inf with \s* either side) says they are numbers.
    column = pd.read_csv(io.StringIO(f"s\n0.5\n{text}\n"))["s"]
    pandas_number = column.dtype.kind in "fi"
    assert pandas_number is False
    assert bool(NUMBER_TEXT.fullmatch(text)) == pandas_number


@pytest.mark.parametrize("bad", PANDAS_TEXT_NOT_NUMBER)
def test_csv_score_error_names_the_bad_cell_not_a_good_one(tmp_path, capsys, monkeypatch, bad):
    # Current: "score column 's' must be numeric scores, got dtype object (e.g. '0.1' at
    # position 0 (numbers written as text))" -- a good value is blamed. Right: name the cell
    # pandas did not read as a number, repr(bad) at position 2. Cause: NUMBER_TEXT in
    # fastbias/validate/columns.py accepts nan/inf in any case, with '+nan' and blanks around
    # inf/nan, where pandas reads only its na_values words (NaN, nan, -NaN, -nan) and
    # inf/infinity without surrounding blanks.
    (tmp_path / "d.csv").write_text(f"label,s,g\n0,0.1,1\n1,0.2,0\n0,{bad},1\n1,0.4,0\n")
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1
    assert "'0.1' at position 0" not in err, err
    assert f"{bad!r} at position 2" in err, err


@pytest.mark.parametrize("column", ["s", "w"])
def test_jsonl_integer_text_beyond_pythons_digit_limit_is_named(tmp_path, capsys, monkeypatch,
                                                               column):
    # Current: "fastbias: error: Exceeds the limit (4300 digits) for integer string
    # conversion: value has 5000 digits; use sys.set_int_max_str_digits() ..." -- no column,
    # no row, advice about Python internals. Right: an error naming the column and row 5, as
    # the 30-digit text gets ("holds the integer ... at row 5"). Cause: _json_number in
    # fastbias/validate/textfile.py calls int(value) on any _INTEGER_TEXT.
    rows = _base()
    for r in rows:
        r["w"] = 1
    rows[5][column] = "9" * 5000
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "--weight", "w", "-q")
    assert rc == 1
    assert "set_int_max_str_digits" not in err, err
    assert f"'{column}'" in err and ("row 5" in err or "position 5" in err), err


def test_argument_hint_about_dash_columns_only_for_column_options(tmp_path, capsys, monkeypatch):
    # `--top` (a number of subgroups) given no value: argparse's "expected one argument" gets
    # "; if a column's name starts with '-', give it after '=': --scores=-m2" appended, a
    # hint about column names for an option that takes none. Right: the hint only where the
    # option takes a column (cli.py _Parser.error matches the message text alone).
    (tmp_path / "d.csv").write_text("y,s,g\n0,0.1,1\n1,0.5,0\n")
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.csv", "--label", "y",
                        "--scores", "s", "--subgroups", "g", "--top")
    assert rc == 2 and "--top" in err
    assert "column's name starts with '-'" not in err, err


# ------------------------------------------------------------------ properties that hold

@pytest.mark.parametrize("text", ["1", "+1", "-1", ".5", "5.", "1e5", "1E+5", "1.e5", "inf",
                                  "-Infinity", "INF", "nan", "NaN", "-nan", "-NaN", " 1 ",
                                  "\t1", "00012", "1_000", "0x10", "1d5", "\u2212" "1",
                                  "\u0661", ".e5", "1e", "infinit", "1.5.5"])
def test_number_text_agrees_with_pandas_where_it_should(text):
    column = pd.read_csv(io.StringIO(f"s\n0.5\n{text}\n"))["s"]
    assert bool(NUMBER_TEXT.fullmatch(text)) == (column.dtype.kind in "fi")


def test_jsonl_scores_as_text_equal_sklearn(tmp_path, capsys, monkeypatch):
    rows = _base(12)
    texts = {1: " 0.1 ", 4: "4e-1", 7: "+0.7", 9: "-0.0", 10: "0"}
    for i, t in texts.items():
        rows[i]["s"] = t
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 0, err
    y = [i % 2 for i in range(12)]
    s = [float(json.loads(json.dumps(rows[i]["s"])) if i not in texts else texts[i])
         for i in range(12)]
    assert f"overall AUC {roc_auc_score(y, s):.4f}" in out, out


@pytest.mark.parametrize("value,words", [("Infinity", "infinite"), ("1e400", "infinite"),
                                         ("9007199254740993", "9007199254740993"),
                                         (" +9007199254740993 ", "9007199254740993"),
                                         (True, "True at position 5"),
                                         ("", "'' at position 5")])
def test_jsonl_score_values_refused_by_name(tmp_path, capsys, monkeypatch, value, words):
    rows = _base()
    rows[5]["s"] = value
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "label",
                        "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1 and words in err, err


@pytest.mark.parametrize("bad", [True, "1_000"])
def test_jsonl_bad_score_in_a_later_batch_named_at_its_file_row_streamed(tmp_path, capsys,
                                                                         monkeypatch, bad):
    rng = np.random.default_rng(0)
    n = 150_000
    y, s, g = rng.integers(0, 2, n), np.round(rng.random(n), 3), rng.integers(0, 2, n)
    rows = [{"y": int(a), "s": float(b), "g": int(c)} for a, b, c in zip(y, s, g)]
    rows[140_001]["s"] = bad
    _jsonl(tmp_path / "d.jsonl", rows)
    limit = _four_mib_for_data(monkeypatch, batch_rows=4_000)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "y",
                        "--scores", "s", "--subgroups", "g", "--progress", "never",
                        "--max-memory", limit)
    assert "streaming it" in err
    assert rc == 1 and f"{bad!r} at row 140001" in err, err


def test_third_label_position_counts_missing_labels_before_it(tmp_path, capsys, monkeypatch):
    rows = [{"y": "tox" if i % 2 else "ok", "s": i / 100, "g": i % 3} for i in range(60)]
    rows[0]["y"] = None
    rows[1]["y"] = None
    rows[41]["y"] = "other"
    _jsonl(tmp_path / "d.jsonl", rows)
    rc, out, err = _cli(capsys, monkeypatch, tmp_path, "report", "d.jsonl", "--label", "y",
                        "--positive", "tox", "--scores", "s", "--subgroups", "g", "-q")
    assert rc == 1 and "the third, 'other', first at position 41" in err, err
