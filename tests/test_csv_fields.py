"""Every CSV record has the header's number of fields, or the file is refused naming the line.

pandas, reading only some columns (``usecols``), takes a longer row's first fields and drops
the rest, and reads a shorter row's missing fields as empty: a decimal comma in one score
shifted that row's identity into the wrong column, silently (found by review). The check runs
on the raw bytes as they are read (``textfile._LineGuard``), in chunks: these tests make the
chunks tiny (``line_limit``), so records, quoted fields and blank lines straddle them, and
compare with Python's ``csv`` module as the reference.
"""
import csv
import io

import numpy as np
import pytest

from fastbias.validate.textfile import (
    DataFileError,
    iter_text_batches,
    open_text_source,
)


def random_csv(rng, n_rows, n_cols, newline):
    """A CSV text with quoted fields holding separators, quotes and line breaks, and blank
    lines; returns (text, the line each data record starts on)."""
    out, lines, line = [], [], 2
    out.append(",".join(f"c{j}" for j in range(n_cols)) + newline)
    for _ in range(n_rows):
        if rng.random() < 0.1:
            out.append(newline)  # a blank line
            line += 1
        fields = []
        for j in range(n_cols):
            if j < 2:
                fields.append(f"{rng.integers(0, 2) if j == 0 else rng.random():.3f}")
            elif rng.random() < 0.3:
                text = "".join(rng.choice(list('ab,"\n '), size=int(rng.integers(0, 6))))
                fields.append('"' + text.replace('"', '""') + '"')
            elif rng.random() < 0.2:  # a quote inside an unquoted field is text (5" or a "b")
                fields.append("".join(rng.choice(list('ab" '), size=int(rng.integers(1, 5))))
                              .lstrip('"') or "a")
            else:
                fields.append(str(int(rng.integers(0, 2))))
        record = ",".join(fields)
        lines.append(line)
        line += record.count("\n") + 1
        out.append(record + newline)
    return "".join(out), lines


def read_all(path, limit, columns=("c0", "c1")):
    source = open_text_source(path, line_limit=limit)
    return sum(len(frame) for frame, _ in iter_text_batches(source, list(columns), 7))


@pytest.mark.parametrize("seed", range(12))
def test_field_counts_across_chunk_edges(seed, tmp_path):
    rng = np.random.default_rng(seed)
    newline = "\r\n" if seed % 2 else "\n"
    n_cols = int(rng.integers(3, 6))
    text, starts = random_csv(rng, 40, n_cols, newline)
    path = tmp_path / "d.csv"
    path.write_bytes(text.encode())
    longest = longest_record(text)
    # the reference: every record has n_cols fields
    records = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    assert all(len(r) == n_cols for r in records)
    for limit in (longest + 1, longest + 7, 1 << 20):
        assert read_all(path, limit) == 40
    # one record with a field more or less: refused, naming the line it starts on
    for change in ("more", "less"):
        row = int(rng.integers(0, 40))
        body = list(csv.reader(io.StringIO(text, newline="")))
        data_rows = [r for r in body[1:] if r]
        fields = data_rows[row]
        data_rows[row] = fields + ["9"] if change == "more" else fields[:-1]
        buffer = io.StringIO(newline="")
        writer = csv.writer(buffer, lineterminator=newline)
        writer.writerow(body[0])
        writer.writerows(data_rows)
        bad = buffer.getvalue()
        # (the line the changed record starts on: csv.writer quotes as needed, no blank lines)
        line = 2 + sum(bad_row_lines(r) for r in data_rows[:row])
        path.write_bytes(bad.encode())
        longest = longest_record(bad)
        found = len(fields) + (1 if change == "more" else -1)
        for limit in (longest + 5, 1 << 20):
            with pytest.raises(DataFileError, match=f"line {line:,} of data file .* has "
                                                    f"{found} field\\(s\\) where its header "
                                                    f"has {n_cols}"):
                read_all(path, limit)


def longest_record(text):
    """The longest record in bytes, a newline ends one only outside double quotes."""
    longest = run = 0
    inside = False
    for char in text:
        run += 1
        if char == '"':
            inside = not inside
        elif char == "\n" and not inside:
            longest, run = max(longest, run), 0
    return max(longest, run)


def bad_row_lines(fields):
    return 1 + sum(field.count("\n") for field in fields)


@pytest.mark.parametrize("text, rows", [
    ("y,s,g\n0,0.1,0\n\n   \n1,0.2,1\n\n", 2),  # blank and blank-looking lines are skipped
    ("y,s,g\n0,0.1,0\n1,0.2,1", 2),  # no final newline
    ('"y,s",s,g\n0,0.1,0\n', 1),  # a quoted separator in the header
    ("\ufeffy,s,g\r\n0,0.1,0\r\n", 1),  # BOM, CRLF
    ('y,s,g\n0,"0\n1",0\n', 1),  # a quoted line break
])
def test_well_formed_files_read(text, rows, tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(text.encode())
    source = open_text_source(path)
    assert read_all(path, 1 << 20, source.names[:2]) == rows


@pytest.mark.parametrize("text, line, found", [
    ("y,s,g\n0,0.1,0\n1,0,9,1\n0,0.4,0\n", 3, 4),  # a decimal comma
    ("y,s,g\n0,0.1,0\n1,0.2\n", 3, 2),  # a field left out
    ("y,s,g\n0,0.1,0\n1,0.2", 3, 2),  # the same, on a last line without a newline
    ("y,s,g\n0,0.1,0\n1\n", 3, 1),  # one field
    ('y,s,g\n0,"a\nb",1,2\n', 2, 4),  # a record over two lines, named by its first
])
def test_ragged_records_are_refused_naming_the_line(text, line, found, tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(text.encode())
    with pytest.raises(DataFileError, match=f"line {line} of data file .* has {found} "
                                            f"field\\(s\\) where its header has 3"):
        read_all(path, 1 << 20, ["y", "s"])


@pytest.mark.parametrize("sep", ["||", "", '"', "\n", 9])
def test_a_separator_is_one_character(sep, tmp_path):
    path = tmp_path / "d.csv"
    path.write_bytes(b"y,s\n0,0.1\n")
    with pytest.raises(ValueError, match="sep must be one character"):
        open_text_source(path, sep=sep)
