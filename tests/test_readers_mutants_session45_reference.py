"""A mutation audit of the file readers (``validate/textfile.py``, ``validate/parquet.py``,
``streaming.evaluate_csv`` / ``evaluate_parquet``), by an independent reviewer (forty-fifth
session): 41 hand mutants. 31 are killed by the existing tests (21 by the reader audits of the
fortieth session and tests/test_csv_fields.py, 10 more by ten other reader and out-of-core
files), 8 only by the tests here (each checked to fail with its mutant and pass without: a line
of a tab alone, a negative 2**53 beside decimals, ``line_limit=0``, a numeric ``pos_label``
reading "NA" as a label value, float32 and float64 identity columns, an all-null column, float32
scores at a float32 threshold, string and large_string labels), 1 is equivalent and 1 is left
(JSON lines' text columns in the written-integer check, outside the area). Other tests here pin
what the existing tests already kill; their docstrings name the mutants they were written for.

Every expected number comes from an independent reference: the rows as the test wrote them (or
the file read again with Python's ``csv`` module), memberships built by hand, and
tests/reference.py's exact brute-force pair counts.
"""
import csv
import math

import numpy as np
import pytest

from fastbias.streaming import evaluate_csv, evaluate_parquet
from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)

from .reference import brute_force_metrics

METRICS = ["subgroup_auc", "bpsn_auc", "bnsp_auc", "negative_aeg", "positive_aeg"]

#: (label, score, member) rows used by most tests: both classes inside and outside g, ties
ROWS = [(0, 0.2, 1), (1, 0.8, 1), (0, 0.5, 0), (1, 0.5, 1), (0, 0.9, 0), (1, 0.3, 0),
        (0, 0.1, 1), (1, 0.7, 0), (0, 0.5, 1), (1, 0.6, 0)]


def expect(rows):
    y = [r[0] for r in rows]
    s = [r[1] for r in rows]
    g = [bool(r[2]) for r in rows]
    return brute_force_metrics(y, s, g)


def got(result, name="g"):
    table = result.table
    row = table[table["subgroup"] == name]
    assert len(row) == 1, table
    return {m: float(row.iloc[0][m]) for m in METRICS}


def assert_metrics(result, rows, name="g"):
    have, want = got(result, name), expect(rows)
    for m in METRICS:
        a, b = have[m], want[m]
        assert (math.isnan(a) and math.isnan(b)) or a == b, (m, a, b)


def write(path, text):
    path.write_bytes(text.encode())
    return str(path)


def csv_of(rows):
    return "y,s,g\n" + "".join(f"{y},{s},{g}\n" for y, s, g in rows)


# ------------------------------------------------------------------ CSV: blank records
def test_a_line_of_a_tab_alone_in_a_csv_is_skipped(tmp_path):
    """Kills ``_BLANKS = b" \\t"`` -> ``b" "`` (a record of blanks alone is the parser's to
    skip: _LineGuard's docstring). A CSV line holding only a tab is skipped by pandas as
    blank; the rows are the other ten. The mutant refused the file ("line 4 ... has 1
    field(s) where its header has 3")."""
    text = csv_of(ROWS[:2]) + "\t\n" + "".join(f"{y},{s},{g}\n" for y, s, g in ROWS[2:])
    path = write(tmp_path / "d.csv", text)
    # the independent reading: csv module, lines of blanks dropped
    with open(path, newline="") as handle:
        parsed = [r for r in csv.reader(handle) if "".join(r).strip(" \t")]
    rows = [(int(y), float(s), int(g)) for y, s, g in parsed[1:]]
    assert rows == ROWS
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"], batch_rows=3,
                          bucket_rows=4)
    assert_metrics(result, rows)


def test_blank_lines_before_the_header_are_passed_over(tmp_path):
    """Kills ``if not line.strip(): continue`` -> never (text_header): pandas passes blank
    lines before the header over, so the header is ``y,s,g``. The mutant took the blank line
    as the header (no columns: "label column 'y' not found")."""
    path = write(tmp_path / "d.csv", "\n  \n" + csv_of(ROWS))
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"], batch_rows=4,
                          bucket_rows=4)
    assert_metrics(result, ROWS)


# ------------------------------------------------------------------ CSV: line limit
@pytest.mark.parametrize("long_line", [2, 5, 9])
def test_line_limit_names_the_long_line_across_small_reads(tmp_path, long_line):
    """Kills ``self._run = n - 1 - int(ends[-1])`` -> ``n - int(...)`` and
    ``searchsorted(..., side="right")`` -> ``"left"`` (the record line after a block).

    With ``line_limit=8`` the guard reads 8 bytes at a time, so lines cross reads at every
    offset. Every data line has exactly 8 bytes but line ``long_line`` (1-based, the header
    is line 1), which has 9: the error names that line (counted here by hand)."""
    lines = ["y,s,g"] + ["0,0.25,1", "1,0.75,0", "0,0.50,0", "1,0.50,1"] * 2
    lines[long_line - 1] = lines[long_line - 1][:4] + "5" + lines[long_line - 1][4:]
    assert all(len(line) == 8 for i, line in enumerate(lines) if 0 < i != long_line - 1)
    assert len(lines[long_line - 1]) == 9
    path = write(tmp_path / "d.csv", "\n".join(lines) + "\n")
    source = open_text_source(path, line_limit=8)
    with pytest.raises(DataFileError, match=rf"line {long_line} of data file .* is longer "
                                            rf"than 8 bytes"):
        list(iter_text_batches(source, ["y", "s", "g"], 2))


def test_lines_at_the_line_limit_all_read(tmp_path):
    """Kills ``self._run = n - 1 - int(ends[-1])`` -> ``n - int(...)``: 40 lines of exactly
    8 bytes read 8 bytes at a time are all within ``line_limit=8`` (the mutant counted a
    byte too many after each newline and refused one)."""
    lines = ["y,s,g"] + [f"{i % 2},0.{i:02d},{(i // 3) % 2}" for i in range(40)]
    assert all(len(line) == 8 for line in lines[1:])
    path = write(tmp_path / "d.csv", "\n".join(lines) + "\n")
    source = open_text_source(path, line_limit=8)
    frames = list(iter_text_batches(source, ["y", "s", "g"], 7))
    assert sum(len(f) for f, _ in frames) == 40
    values = np.concatenate([f["s"].to_numpy() for f, _ in frames])
    assert values.tolist() == [float(f"0.{i:02d}") for i in range(40)]


def test_line_limit_zero_is_refused(tmp_path):
    """Kills ``line_limit < 1`` -> ``< 0``: line_limit must be a positive number of bytes."""
    path = write(tmp_path / "d.csv", csv_of(ROWS))
    with pytest.raises(ValueError, match=r"line_limit must be a positive number of bytes, "
                                         r"got 0"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], line_limit=0)


def test_a_quote_is_not_a_separator(tmp_path):
    """Kills ``sep in '"\\r\\n'`` -> ``sep in '\\r\\n'``: a double quote as the separator is
    refused, naming the value."""
    path = write(tmp_path / "d.csv", csv_of(ROWS))
    with pytest.raises(ValueError, match=r"sep must be one character other than a quote or "
                                         r"a line break, got '\"'"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], sep='"')


# ------------------------------------------------------------------ CSV: header names
def test_duplicated_header_names_are_refused(tmp_path):
    """Kills ``name in seen and name not in repeated`` -> ``... in repeated``
    (check_unique_names): a header naming ``g`` twice is refused, naming ``g`` (pandas would
    read the second as ``g.1``, and which one is meant is unclear)."""
    path = write(tmp_path / "d.csv", "y,s,g,g\n" + "".join(f"{y},{s},{g},{1 - g}\n"
                                                           for y, s, g in ROWS))
    with pytest.raises(DataFileError, match=r"has several columns named 'g'"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"])


def test_a_column_without_a_name_asked_for_is_refused_naming_its_field(tmp_path):
    """Kills the removal of ``if "" in wanted`` (iter_text_batches): an identity column whose
    header name is empty (field 3) is refused naming that field, not read by whatever pandas
    calls it."""
    path = write(tmp_path / "d.csv", "y,s,\n" + "".join(f"{y},{s},{g}\n" for y, s, g in ROWS))
    with pytest.raises(DataFileError, match=r"has no name in the header \(field 3 of the "
                                            r"header\)"):
        list(iter_text_batches(open_text_source(path), ["y", "s", ""], 4))


# ------------------------------------------------------------------ CSV: missing words
def test_text_pos_label_keeps_na_as_a_class_and_identity_na_as_missing(tmp_path):
    """Kills, in iter_text_batches, ``na_values={c: [""] if c in literal else MISSING_WORDS}``
    with ``in`` -> ``not in``, ``keep_default_na=not literal`` -> ``True``, "NA" dropped from
    MISSING_WORDS, and in evaluate_csv ``literal = [label] if pos_label ...`` -> ``[]``.

    Documented (evaluate_csv, pos_label): only an empty field is then a missing label, "NA"
    is a class. Labels are "toxic" or "NA" (the negative class); the identity column holds
    "NA" in two rows, a missing identity: background (missing_subgroup="background").
    Reference: the rows by hand, label = (text == "toxic"), member = (g == "1")."""
    labels = ["NA", "toxic", "NA", "toxic", "NA", "toxic", "NA", "toxic", "NA", "toxic"]
    groups = ["1", "1", "NA", "1", "0", "0", "1", "NA", "1", "0"]
    scores = [0.2, 0.8, 0.5, 0.5, 0.9, 0.3, 0.1, 0.7, 0.5, 0.6]
    path = write(tmp_path / "d.csv", "y,s,g\n" + "".join(
        f"{y},{s},{g}\n" for y, s, g in zip(labels, scores, groups)))
    rows = [(int(y == "toxic"), s, int(g == "1")) for y, s, g in zip(labels, scores, groups)]
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"], pos_label="toxic",
                          batch_rows=3, bucket_rows=4)
    assert_metrics(result, rows)


# ------------------------------------------------------------------ CSV: large integers
def test_a_negative_two_to_the_53_score_beside_decimals_reads_exactly(tmp_path):
    """Kills ``int(sign + digits) != int(value)`` -> ``int(digits) != ...``
    (_rounded_integer): -9007199254740992 (-2**53) is held exactly by float64, so the file
    reads; the mutant dropped the sign and refused it as rounded. The score is the lowest
    of all: reference pairs by hand."""
    rows = list(ROWS)
    rows[1] = (1, -9007199254740992, 1)
    path = write(tmp_path / "d.csv", csv_of(rows))
    result = evaluate_csv(path, label="y", scores="s", subgroups=["g"], batch_rows=4,
                          bucket_rows=4)
    assert_metrics(result, [(y, float(s), g) for y, s, g in rows])


def test_two_to_the_53_plus_one_beside_a_decimal_is_refused(tmp_path):
    """Kills ``_ROUNDED_FROM = 2.0 ** 53`` -> ``2.0 ** 54``: 9007199254740993 (2**53 + 1)
    beside decimals reads as 9007199254740992.0 (a new tie), refused naming the column, the
    integer and its row (docs/validation.md)."""
    rows = list(ROWS)
    rows[6] = (0, 9007199254740993, 1)
    path = write(tmp_path / "d.csv", csv_of(rows))
    with pytest.raises(DataFileError, match=r"column 's' of .* holds the integer "
                                            r"9007199254740993 at row 6"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], batch_rows=4,
                     bucket_rows=4)


# ------------------------------------------------------------------ Parquet
def _parquet(path, columns, row_group_size=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), str(path), row_group_size=row_group_size)
    return str(path)


def _arrays(rows, score_type="float64", group_type="float64"):
    import pyarrow as pa

    return {"y": pa.array([float(r[0]) for r in rows], pa.float64()),
            "s": pa.array([r[1] for r in rows], getattr(pa, score_type)()),
            "g": pa.array([float(r[2]) for r in rows], getattr(pa, group_type)())}


def test_parquet_float32_scores_beside_float64_are_refused_naming_both_files(tmp_path):
    """Kills ``is_float16(t) or is_float32(t)`` -> ``is_float16(t)`` (_type_kind): a score
    column float32 in one file and float64 in another is a TypeError naming both files
    (open_parquet's docstring; float32 and float64 scores tie differently)."""
    a = _parquet(tmp_path / "a.parquet", _arrays(ROWS[:5], "float32"))
    b = _parquet(tmp_path / "b.parquet", _arrays(ROWS[5:], "float64"))
    with pytest.raises(TypeError, match=r"score column 's' is float32 in .*a\.parquet but "
                                        r"number in .*b\.parquet"):
        evaluate_parquet([a, b], label="y", scores="s", subgroups=["g"])


def test_parquet_float32_and_float64_identity_columns_read_alike(tmp_path):
    """Kills the removal of ``kinds[name] = "number"`` for a float32 subgroup
    (open_parquet): an identity column float32 in one file and float64 in another is
    compared with the threshold either way; the files read as one. Reference: the rows."""
    a = _parquet(tmp_path / "a.parquet", _arrays(ROWS[:5], group_type="float32"))
    b = _parquet(tmp_path / "b.parquet", _arrays(ROWS[5:], group_type="float64"))
    result = evaluate_parquet([a, b], label="y", scores="s", subgroups=["g"], batch_rows=2,
                              bucket_rows=4)
    assert_metrics(result, ROWS)


def test_parquet_identity_column_all_null_in_one_file(tmp_path):
    """Kills the removal of ``if kinds[name] == "null": continue`` (open_parquet): a file
    whose identity column is all null (pyarrow's null type) beside one of float64 reads;
    its rows are missing identities, background by default. Reference: those rows not
    members."""
    import pyarrow as pa

    first = _arrays(ROWS[:5])
    first["g"] = pa.nulls(5)
    a = _parquet(tmp_path / "a.parquet", first)
    b = _parquet(tmp_path / "b.parquet", _arrays(ROWS[5:]))
    rows = [(y, s, 0) for y, s, _ in ROWS[:5]] + ROWS[5:]
    result = evaluate_parquet([a, b], label="y", scores="s", subgroups=["g"], batch_rows=3,
                              bucket_rows=4)
    assert_metrics(result, rows)


def test_parquet_label_above_one_names_its_row_group_and_rows(tmp_path):
    """Kills ``bad = low if low < 0 else high if high > 1 else None`` -> ``... else None``
    and the removal of ``first_row += group.num_rows`` (_check_label_statistics): a label
    2.0 in the second row group of 3 rows is refused from the statistics, naming ``2.0``,
    row group 1 and rows 3..5 (counted by hand)."""
    cols = _arrays(ROWS)
    import pyarrow as pa

    labels = [float(r[0]) for r in ROWS]
    labels[4] = 2.0
    cols["y"] = pa.array(labels, pa.float64())
    path = _parquet(tmp_path / "a.parquet", cols, row_group_size=3)
    with pytest.raises(ValueError, match=r"label column 'y' has values outside \[0, 1\] "
                                         r"\(e\.g\. 2\.0; row group 1, rows 3\.\.5 of"):
        evaluate_parquet(path, label="y", scores="s", subgroups=["g"])


def test_parquet_pos_label_takes_labels_outside_zero_one(tmp_path):
    """Kills ``if pos_label is None:`` -> ``is not None`` (open_parquet): with
    ``pos_label=5`` the labels 2/5 are classes (open_parquet: "with it, any two values are
    classes"); label = (y == 5). The mutant refused them from the statistics."""
    import pyarrow as pa

    cols = _arrays(ROWS)
    cols["y"] = pa.array([5 if r[0] else 2 for r in ROWS], pa.int64())
    path = _parquet(tmp_path / "a.parquet", cols, row_group_size=4)
    result = evaluate_parquet(path, label="y", scores="s", subgroups=["g"], pos_label=5,
                              batch_rows=3, bucket_rows=4)
    assert_metrics(result, ROWS)


def test_parquet_label_column_string_and_large_string_files_read_as_one(tmp_path):
    """Kills ``is_string(t) or is_large_string(t)`` -> ``is_string(t)`` (_type_kind): a
    text label column stored as string in one file and large_string in another is one type
    to the readers; with ``pos_label="toxic"`` the files read as one. Reference: the rows,
    label = (text == "toxic")."""
    import pyarrow as pa

    def cols(rows, kind):
        out = _arrays(rows)
        out["y"] = pa.array(["toxic" if r[0] else "ok" for r in rows], kind)
        return out

    a = _parquet(tmp_path / "a.parquet", cols(ROWS[:5], pa.string()))
    b = _parquet(tmp_path / "b.parquet", cols(ROWS[5:], pa.large_string()))
    result = evaluate_parquet([a, b], label="y", scores="s", subgroups=["g"],
                              pos_label="toxic", batch_rows=3, bucket_rows=4)
    assert_metrics(result, ROWS)


def test_parquet_bad_score_in_a_later_batch_names_the_files_row(tmp_path):
    """Kills ``start = stop`` -> ``start = 0`` (iter_batches): a NaN score at row 7 of the
    file, read 3 rows a batch (its third batch), is named as row 7, not as position 1 of its
    batch."""
    rows = list(ROWS)
    rows[7] = (1, float("nan"), 0)
    path = _parquet(tmp_path / "a.parquet", _arrays(rows))
    with pytest.raises(ValueError, match=r"row 7\b") as info:
        evaluate_parquet(path, label="y", scores="s", subgroups=["g"], batch_rows=3,
                         bucket_rows=4)
    assert "row 1 " not in str(info.value) and "position 1" not in str(info.value)


def test_parquet_float32_scores_meet_a_threshold_rounded_to_float32(tmp_path):
    """Kills ``np.dtype(np.float32) if kind == "float32"`` -> float64 (score_dtypes):
    docs/thresholds.md: a float32 score is compared with the threshold rounded to float32.
    float32(0.7) = 0.699999988... is below the float64 0.7 but equals float32(0.7), so at
    threshold 0.7 the rows scored 0.7 are predicted positive. Hand count: among g's rows
    (ROWS with s=0.7 moved into g) the positives predicted positive are those with
    s >= 0.7 in float32."""
    rows = [(1, 0.7, 1), (0, 0.7, 1), (1, 0.2, 1), (0, 0.1, 1),
            (1, 0.9, 0), (0, 0.3, 0), (1, 0.7, 0), (0, 0.4, 0)]
    path = _parquet(tmp_path / "a.parquet", _arrays(rows, "float32"))
    result = evaluate_parquet(path, label="y", scores="s", subgroups=["g"], thresholds=[0.7],
                              batch_rows=3, bucket_rows=4)
    t = result.thresholds
    row = t[t["subgroup"] == "g"].iloc[0]
    s32 = np.float32
    g_pos = [s for y, s, g in rows if g and y]
    g_neg = [s for y, s, g in rows if g and not y]
    tpr = sum(s32(s) >= s32(0.7) for s in g_pos) / len(g_pos)
    fpr = sum(s32(s) >= s32(0.7) for s in g_neg) / len(g_neg)
    assert (tpr, fpr) == (0.5, 0.5)
    assert float(row["subgroup_tpr"]) == tpr
    assert float(row["subgroup_fpr"]) == fpr


def test_numeric_pos_label_reads_na_as_a_third_label_value(tmp_path):
    """Kills ``literal = [spec.label] if pos_label is not None else []`` -> ``[]``
    (evaluate_csv). Documented: with pos_label, only an empty field is a missing label,
    "NA" is a class. Labels 0, 1 and "NA" (row 2 of the data, counted by hand) are three
    values, refused naming the column, 'NA' and row 2; the mutant read "NA" as a missing
    label instead."""
    path = write(tmp_path / "d.csv", "y,s,g\n0,0.2,1\n1,0.8,1\nNA,0.5,0\n1,0.3,0\n0,0.4,0\n")
    with pytest.raises(ValueError, match=r"label column 'y' has more than two distinct "
                                         r"values .*'NA' first at row 2"):
        evaluate_csv(path, label="y", scores="s", subgroups=["g"], pos_label=1, batch_rows=2)
