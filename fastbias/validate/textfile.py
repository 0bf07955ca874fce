"""CSV and JSON-lines sources: read in bounded pieces, whatever the file inflates to.

One home for reading text data files (the CLI and :func:`fastbias.streaming.evaluate_csv`):

* :func:`open_text` opens a file through its compression (gzip, bz2, xz, zip, zstd) as a
  binary stream that counts lines and refuses a line longer than ``line_limit`` bytes (16 MiB
  by default) with a :class:`DataFileError` naming the file and the line, before the line is
  held in memory: a compressed file of one endless line (a decompression bomb) fails in
  seconds, not after filling the memory;
* :func:`text_header` reads the column names (duplicates are an error);
* :func:`iter_text_batches` reads only the needed columns, ``batch_rows`` rows at a time,
  each batch with where it lies in the file (for error messages).
"""
from __future__ import annotations

import contextlib
import csv
import functools
import io
import itertools
import json
import math
import os
import re
import warnings
import zipfile
from dataclasses import dataclass

import numpy as np

from . import _kernels as K
from .columns import NUMBER_TEXT, PieceWhere
from .errors import WARNING_FILTERS_LOCK

#: the longest line read (bytes, after decompression)
LINE_LIMIT = 16 * 2 ** 20
#: file name extension -> compression
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
TEXT_FORMATS = ("csv", "jsonl")


_IN_QUOTES = (K.QUOTED, K.QUOTE_IN_QUOTED)
_BLANKS = b" \t"  # (what pandas' parser takes as blank; a form feed is text)


class DataFileError(ValueError):
    """A data file that cannot be read as asked: the message names the file (and the line)."""


class _LineGuard(io.RawIOBase):
    """A readable binary stream over ``stream`` that counts lines and records and raises
    :class:`DataFileError` as soon as a record grows past ``limit`` bytes.

    A record ends at a newline; with ``quotes`` (CSV), only at one outside a quoted field,
    split as the CSV parser splits it (:func:`~fastbias.validate._kernels.csv_records`: a
    double quote opens a quoted field only as a field's first byte), so a quoted field that
    runs over many short lines (an unclosed quote, or a bomb of them) is one long record.
    ``lines`` counts the newlines, ``records`` the record ends.

    ``sep``: a CSV's separator (default a comma). ``fields`` (CSV, with ``sep`` a one-byte
    separator): how many fields the header has;
    a record with more or fewer is a :class:`DataFileError` naming its line, where the
    parser, reading only some of the columns, would take its first fields and drop the rest
    or read the missing ones as empty, silently. Records of blanks alone, which the parser
    skips, are let be. A block of bytes without a quote or a carriage return (nor a quoted
    field carried into it) is split at its newlines by numpy; others by the compiled walk.
    """

    def __init__(self, stream, limit: int, name: str, quotes: bool = False,
                 sep: str | None = None, fields: int | None = None):
        self._stream = stream
        self._limit = int(limit)
        self._name = name
        self._quotes = quotes
        # (a CSV's separator byte tells where a field, and so a quoted one, starts; -1: not
        # one byte, no field start told)
        encoded = ("," if sep is None else sep).encode()
        self._sep = encoded[0] if quotes and len(encoded) == 1 else -1
        self._fields = fields if quotes and self._sep >= 0 else None
        # the record open at the end of the bytes read (validate._kernels' state)
        self._state = np.zeros(K.N_STATE, dtype=np.int64)
        self._offset = 0  # bytes read so far
        self.lines = 0  # newlines read so far
        self.records = 0  # record ends read so far
        self._record_line = 1  # the line the current record starts on
        self._run = 0  # bytes of the current record so far

    def readable(self) -> bool:
        return True

    def _ends(self, data: bytes) -> tuple:
        """(every newline, the newlines that end a record), as positions in ``data``."""
        array = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(array == 10)
        if not self._quotes:
            return newlines, newlines
        skip = 0
        if self._offset == 0 and data[:3] == b"\xef\xbb\xbf":  # (a BOM is not the header's)
            skip = 3
        self._offset += len(data)
        if self._state[K.STATE] not in _IN_QUOTES and not self._state[K.AFTER_BLANK_CR] \
                and not (array == 34).any() and not (array == 13).any():
            # (no quote, no carriage return: records end at each newline)
            if self._fields:
                self._fields_by_sums(array, newlines)
            elif array.shape[0]:  # (where the next block's first field starts)
                self._state[K.STATE] = K.START if array[-1] in (self._sep, 10) else K.UNQUOTED
            return newlines, newlines
        ends = np.empty(newlines.shape[0], dtype=np.int64)
        n_ends, start, found = K.csv_records(array[skip:], self._sep, self._fields or 0,
                                           self._state, ends)
        if start != -2:
            line = self._line_of(start + skip if start >= 0 else -1, newlines)
            if found == K.MISREAD:
                raise DataFileError(
                    f"line {line:,} of data file {self._name!r} starts with the separator "
                    f"{chr(self._sep)!r} right after a blank line ended by a lone carriage "
                    f"return, which the CSV parser misreads (it drops that separator and "
                    f"reads the row's fields one column to the left): remove the blank line, "
                    f"or end the lines with newlines")
            self._refuse_fields(line, int(found))
        return newlines, ends[:n_ends] + skip

    def _line_of(self, start: int, newlines) -> int:
        """The line of a record starting at byte ``start`` of the block (-1: in an earlier
        one)."""
        if start < 0:
            return self._record_line
        return self.lines + int(np.searchsorted(newlines, start)) + 1

    def _fields_by_sums(self, array, ends) -> None:
        """:meth:`_ends`'s check of a block of records without quotes or carriage returns:
        each record's separators by one sum (``reduceat``), the open one carried on."""
        state = self._state
        separator = (array == self._sep).view(np.uint8)
        starts = np.concatenate(([0], ends + 1))
        open_after = int(starts[-1]) < array.shape[0]
        counts = (np.add.reduceat(separator, starts if open_after else starts[:-1],
                                  dtype=np.int64)
                  if array.shape[0] else np.zeros(1, dtype=np.int64))
        per_record = counts[:ends.shape[0]].copy()
        trailing = int(counts[-1]) if open_after else 0
        if ends.shape[0]:
            per_record[0] += state[K.SEPARATORS]
        for j in np.flatnonzero(per_record != self._fields - 1).tolist():
            start = int(ends[j - 1]) + 1 if j else 0
            blank = not bytes(array[start:int(ends[j])]).strip(_BLANKS) \
                and (j or not state[K.FILLED])
            if per_record[j] == 0 and blank:
                continue  # a record of blanks (the parser skips it)
            self._refuse_fields(self._line_of(start if j else -1, ends), int(per_record[j]) + 1)
        start = int(ends[-1]) + 1 if ends.shape[0] else 0
        rest = bool(bytes(array[start:]).strip(_BLANKS)) or (trailing > 0)
        state[K.FILLED] = rest or (bool(state[K.FILLED]) and not ends.shape[0])
        state[K.SEPARATORS] = trailing + (0 if ends.shape[0] else int(state[K.SEPARATORS]))
        if array.shape[0]:
            last = array[-1]
            state[K.STATE] = K.START if last == self._sep or last == 10 else K.UNQUOTED
            state[K.CARRIED] = int(open_after or (not ends.shape[0] and bool(state[K.CARRIED])))

    def _refuse_fields(self, line: int, found: int) -> None:
        raise DataFileError(
            f"line {line:,} of data file {self._name!r} has {found} field(s) where its header "
            f"has {self._fields} (a value holding the separator {chr(self._sep)!r} unquoted, "
            f"such as a decimal comma, or a field left out?): the parser would read such a "
            f"row's fields in the wrong columns; quote such values, or name the file's "
            f"separator")

    def _end_of_file(self) -> None:
        """The last record, when the file does not end in a newline (one ending inside a
        quoted field is the parser's to name)."""
        state = self._state
        if not self._fields or state[K.STATE] in _IN_QUOTES:
            return
        if (state[K.SEPARATORS] > 0 or state[K.FILLED]) and state[K.SEPARATORS] != self._fields - 1:
            self._refuse_fields(self._record_line, int(state[K.SEPARATORS]) + 1)

    def readinto(self, buffer) -> int:
        size = min(len(buffer), self._limit)  # a record inside one read is within the limit
        data = self._stream.read(size)
        n = len(data)
        if n == 0:
            self._end_of_file()
            return 0
        buffer[:n] = data
        newlines, ends = self._ends(data)
        self._run += ends[0] if ends.shape[0] else n
        if self._run > self._limit:
            runs_on = " (a quoted field that runs on over the lines after it: an unclosed " \
                      "quote?)" if self.lines + 1 > self._record_line else ""
            raise DataFileError(
                f"line {self._record_line:,} of data file {self._name!r} is longer than "
                f"{_size_text(self._limit)}{runs_on} (a corrupt file, or a compressed file "
                f"that inflates to one endless line?); fastbias reads lines of at most that "
                f"length")
        if ends.shape[0]:
            self.records += ends.shape[0]
            self._run = n - 1 - int(ends[-1])
            self._record_line = self.lines + int(
                np.searchsorted(newlines, ends[-1], side="right")) + 1
        self.lines += newlines.shape[0]
        return n

    def close(self) -> None:
        try:
            self._stream.close()
        finally:
            super().close()


def _size_text(n: int) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def split_name(path: str) -> tuple:
    """``(extension, compression)`` a file name says: ``data.tsv.gz`` -> ``(".tsv", "gzip")``,
    ``data.csv`` -> ``(".csv", None)`` (lower case)."""
    root, ext = os.path.splitext(os.path.basename(path).lower())
    compression = COMPRESSIONS.get(ext)
    if compression is not None:
        ext = os.path.splitext(root)[1]
    return ext, compression


def _decompressed(raw, compression, path: str):
    if compression is None:
        return raw
    if compression == "gzip":
        import gzip
        return gzip.GzipFile(fileobj=raw)
    if compression == "bz2":
        import bz2
        return bz2.BZ2File(raw)
    if compression == "xz":
        import lzma
        return lzma.LZMAFile(raw)
    if compression == "zip":
        import zipfile
        try:
            archive = zipfile.ZipFile(raw)
        except zipfile.BadZipFile as error:
            raise DataFileError(f"cannot read data file {path!r}: not a readable zip file "
                                f"(truncated or corrupt?): {error}") from None
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) != 1:
            raise DataFileError(f"zip file {path!r} holds {len(members)} files; fastbias reads a "
                                f"zip of exactly one data file")
        return archive.open(members[0])
    if compression == "zstd":
        try:
            import zstandard
        except ImportError:
            raise DataFileError(f"reading {path!r} needs the zstandard package "
                                f"(pip install zstandard)") from None
        return zstandard.ZstdDecompressor().stream_reader(raw)
    raise DataFileError(f"unknown compression {compression!r} for {path!r}; use gzip, bz2, xz, "
                        f"zip or zstd")


def open_text(path: str, compression: str | None = None, *, line_limit: int = LINE_LIMIT,
              quotes: bool = False, sep: str | None = None,
              fields: int | None = None) -> io.BufferedReader:
    """``path`` decompressed, as a buffered binary stream whose records (lines; with
    ``quotes``, CSV records whose quoted fields may hold newlines) are checked against
    ``line_limit`` bytes and (``sep``, ``fields``) the header's number of fields (see
    :class:`_LineGuard`, :class:`DataFileError`). Close it when done."""
    raw = open(path, "rb")
    try:
        guard = _LineGuard(_decompressed(raw, compression, path), line_limit, path, quotes,
                           sep, fields)
    except BaseException:
        raw.close()
        raise
    return _Closing(guard, raw)


class _Closing(io.BufferedReader):
    """A buffered guard that also closes the raw file under the decompressor."""

    def __init__(self, guard: _LineGuard, raw):
        super().__init__(guard, buffer_size=1 << 20)
        self._raw_file = raw

    @property
    def lines(self) -> int:
        return self.raw.lines

    @property
    def records(self) -> int:
        return self.raw.records

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw_file.close()


def record_bytes(path: str, compression: str | None = None, quotes: bool = False, *,
                 sample: int = 4 * 2 ** 20, line_limit: int = LINE_LIMIT,
                 sep: str | None = None) -> int:
    """Decompressed bytes a record takes, from the first ``sample`` bytes of the file (the
    text a parser holds per row, the columns it does not keep included; ``quotes``: a CSV,
    its separator ``sep``, a comma by default)."""
    with open_text(path, compression, line_limit=line_limit, quotes=quotes,
                   sep=sep) as stream:
        read = len(stream.read(sample))
        return max(1, -(-read // max(1, stream.records)))


def text_header(path: str, fmt: str, compression: str | None = None, sep: str = ",", *,
                line_limit: int = LINE_LIMIT, wanted=()) -> list:
    """The column names of a CSV or JSON-lines file, as written.

    A JSON-lines file's are the keys of its first object, then those of ``wanted`` that
    the first object lacks but a later one has (:func:`later_json_keys`): a line may leave
    out a key whose value is missing.

    Raises :class:`DataFileError` for an empty file, a JSON array, a first line that is not
    a JSON object, or repeated names.
    """
    with open_text(path, compression, line_limit=line_limit) as stream:
        # (as pandas, drop a BOM; newline="": line breaks as written, for the csv module to
        # read a quoted name holding "\r" as that, found by review: read as "\n", the column
        # asked for by its name was unknown)
        text = io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")
        for line in text:
            if not line.strip():  # (blank lines before the header: pandas passes them over)
                continue
            names = (_csv_names(line, text, sep, line_limit) if fmt == "csv"
                     else _json_names(path, line.strip()))
            check_unique_names(path, names)
            break
        else:
            raise DataFileError(f"data file {path!r} is empty")
    if fmt == "jsonl":
        absent = [name for name in dict.fromkeys(wanted) if name not in names]
        if absent:
            found = later_json_keys(path, compression, absent, line_limit=line_limit)
            names += [name for name in absent if name in found]
    return names


def later_json_keys(path: str, compression: str | None, keys, *,
                    line_limit: int = LINE_LIMIT) -> set:
    """Which of ``keys`` are keys of some object of a JSON-lines file, reading it until all
    are found (or to its end). A line is parsed only where its text holds one of the keys
    written as a key (``"key":``, each character as itself or any of its JSON escapes), and
    a key counts only as a key of the line's object, not of an object within it. Asked again
    about the same file, unchanged, and keys, it answers from memory."""
    keys = tuple(dict.fromkeys(keys))
    status = os.stat(path)
    return set(_later_json_keys(path, compression, keys, line_limit, status.st_size,
                                status.st_mtime_ns, status.st_ino))


@functools.lru_cache(maxsize=8)
def _later_json_keys(path: str, compression, keys: tuple, line_limit: int, *_file) -> frozenset:
    """:func:`later_json_keys` of the file as it is (``_file``: its size, time and inode)."""
    pattern = re.compile(b"\"(?:" + b"|".join(_json_text(k) for k in keys) + b")\"\\s*:")
    found = set()
    with open_text(path, compression, line_limit=line_limit) as stream:
        for line in stream:
            if not pattern.search(line):
                continue
            try:  # (as pandas joins the lines: a line may hold several objects)
                objects = json.loads(b"[" + line + b"]", object_pairs_hook=lambda items: items,
                                     strict=False)
            except (json.JSONDecodeError, UnicodeDecodeError):
                continue  # (the reading names the line that does not parse)
            # each object's (key, value) pairs; anything else (an array: a list) has no keys
            for pairs in objects:
                if isinstance(pairs, list) and all(isinstance(p, tuple) for p in pairs):
                    found.update(k for k, _ in pairs if k in keys)
            if len(found) == len(keys):
                break
    return frozenset(found)


#: the JSON escapes of one character besides ``\uXXXX``
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f",
                  "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class _Unreadable(str):
    """A number's text that float64 holds only as a subnormal, 0 or an infinity."""


class _TooLong(str):
    """An integer's text beyond 64 bits (pandas' reader: "Value is too big!")."""


def _refuse_unreadable_json(source, start: int, batch_rows: int, columns) -> None:
    """Name what pandas could not read in the JSON lines from row ``start`` on (a line that
    is not an object is refused as it is read, :class:`_ObjectLines`): an integer beyond 64
    bits, or the number behind its "Range error when decoding numeric as double", a
    number its exact float parser refuses, below the normal floats (a subnormal such as
    1e-310, or 1e-400, which rounds to 0) or beyond the largest (1e400). Raises a
    :class:`DataFileError` naming the line, or the column, row and text; returns if none is
    found (the caller's message stands)."""
    smallest = float(np.finfo(np.float64).tiny)

    def integer(text):
        digits = text.lstrip("-").lstrip("0")
        if len(digits) > 20 or not -2 ** 63 <= int(text) < 2 ** 64:
            return _TooLong(text)
        return int(text)

    def number(text):
        value = float(text)
        mantissa = text.lower().split("e")[0]
        if (value != 0.0 and abs(value) < smallest) or value in (np.inf, -np.inf) or \
                (value == 0.0 and any(c in "123456789" for c in mantissa)):
            return _Unreadable(text)
        return value

    with open_text(source.path, source.compression, line_limit=source.line_limit) as stream:
        row, lines_of_batch = -1, 0
        for number_of_line, line in enumerate(io.TextIOWrapper(stream, encoding="utf-8-sig"),
                                              start=1):
            if row + 1 >= start:
                # pandas' batches are of lines, blank ones and lines of several objects
                # included (found by review: a batch of 3 lines held 4 rows, and the 4th's
                # number went unnamed): the batch's lines are looked at, with a margin
                lines_of_batch += 1
                if lines_of_batch > 2 * batch_rows + 1:
                    return
            if not line.strip():
                continue
            try:  # (a line's objects, as pandas joins them: a row each; found by review, a
                # line of two objects was one row here, later rows misnamed or not found)
                records = json.loads("[" + line + "]", parse_float=number, parse_int=integer,
                                     strict=False)
            except ValueError:
                return
            for record in records:
                row += 1
                if row >= start:
                    _refuse_unreadable_record(record, source, columns, row, number_of_line)


def _refuse_unreadable_record(record, source, columns, row: int, number_of_line: int) -> None:
    """:func:`_refuse_unreadable_json`'s look at one row's object, its numbers' texts parsed
    as :class:`_TooLong` or :class:`_Unreadable` where pandas cannot read them."""
    if not isinstance(record, dict):  # (_ObjectLines refused such lines first)
        return
    long = [(k, v) for k, v in record.items() if isinstance(v, _TooLong)]
    if long:  # (found by review: "Value is too big! at position 120", nothing named)
        name, text = next(((k, v) for k, v in long if columns is None or k in columns),
                          long[0])
        shown = text if len(text) <= 60 else text[:60] + "..."
        raise DataFileError(
            f"column {name!r} of {source.path!r} holds the integer {shown} at row "
            f"{row} (line {number_of_line:,}), beyond 64 bits, which pandas' JSON "
            f"reader cannot read: write it with a decimal point if its nearest float "
            f"is meant, or use CSV or Parquet")
    bad = [(k, v) for k, v in record.items() if isinstance(v, _Unreadable)]
    if bad:
        name, text = next(((k, v) for k, v in bad if columns is None or k in columns),
                          bad[0])
        raise DataFileError(
            f"column {name!r} of {source.path!r} holds {text} at row {row} (line "
            f"{number_of_line:,}), a number "
            f"float64 holds only below its normal range (2.2e-308: a subnormal, or 0) "
            f"or beyond it (1.8e308: an infinity), which pandas' exact JSON reader "
            f"cannot read: write it as 0 (or drop the row), or use CSV or Parquet")


#: where a JSON line may hold a value after an object (JSON allows spaces before the comma:
#: found by review, "{...} ,[]" passed a check of "},")
_ANOTHER_VALUE = re.compile(r"}\s*,")


def _objects_only(text: str) -> bool:
    """Whether the text of a JSON line, read as pandas joins lines (its values separated by
    commas), holds objects only (a line that does not parse is pandas' to name)."""
    try:
        values = json.loads("[" + text + "]", strict=False)
    except ValueError:
        return True
    return all(isinstance(value, dict) for value in values)


class _ObjectLines(io.TextIOWrapper):
    """The lines of a JSON-lines stream as pandas' reader takes them, each one that is not
    blank checked to begin an object (``{``): a line of ``null``, ``[]`` or ``7`` is a
    :class:`DataFileError` naming it (pandas read a batch beginning with one as arrays, and
    a ``[]`` among objects as a row of missing values, silently)."""

    def __init__(self, stream, path: str):
        super().__init__(stream, encoding="utf-8-sig")
        self._path, self._line = path, 0

    def __next__(self):
        line = super().__next__()
        self._line += 1
        text = line.strip()
        if text and (text[0] != "{" or (_ANOTHER_VALUE.search(text)
                                          and not _objects_only(text))):
            # (a line of several values, pandas joining lines with commas, is read whole
            # only where it may hold another: found by review, "{...},[]" read a row of
            # missing values, "{...},null" failed unnamed)
            shown = text if len(text) <= 40 else text[:40] + "..."
            raise DataFileError(f"line {self._line:,} of data file {self._path!r} is not a "
                                f"JSON object ({shown!r}): each line of a JSON-lines file "
                                f"holds one object of the row's columns")
        return line


def _json_text(text: str) -> bytes:
    """A regular expression (bytes) for every way JSON may write the string ``text`` between
    its quotes in UTF-8: each character as itself (where JSON allows it), its short escape,
    or ``\\uXXXX`` in either case (a pair of them beyond the basic plane)."""
    parts = []
    for char in text:
        code = ord(char)
        units = ([code] if code < 0x10000 else
                 [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)])
        ways = [b"".join(b"\\\\u" + b"".join(
            b"[" + d.encode() + d.upper().encode() + b"]" if d.isalpha() else d.encode()
            for d in f"{unit:04x}") for unit in units)]
        if char in _SHORT_ESCAPES:
            ways.append(re.escape(_SHORT_ESCAPES[char].encode()))
        if char not in '"\\' and code >= 0x20 and not 0xD800 <= code < 0xE000:
            ways.append(re.escape(char.encode("utf-8")))
        parts.append(b"(?:" + b"|".join(ways) + b")")
    return b"".join(parts)


def _csv_names(line: str, rest, sep: str, limit: int = LINE_LIMIT) -> list:
    """The names of a CSV header starting at ``line``; a quoted name holding a line break
    goes on into the next lines of ``rest`` (as pandas reads it). The record may hold
    ``limit`` characters in all, however many lines it spans (each line was bounded alone:
    a header of many short quoted lines had been read whole, found by review)."""
    def bounded():
        total = 0
        for piece in itertools.chain([line], rest):
            total += len(piece)
            if total > limit:
                raise DataFileError(f"the header of the data file is longer than {limit:,} "
                                    f"characters (names holding line breaks?): not a header "
                                    f"fastbias reads")
            yield piece

    return next(csv.reader(bounded(), delimiter=sep))


def _json_names(path: str, line: str) -> list:
    if line.startswith("["):
        raise DataFileError(f"{path!r} is a JSON array, not JSON lines (one object per line); "
                            f"convert it, e.g. with pandas: "
                            f"pd.read_json(path).to_json(out, orient='records', lines=True)")
    try:
        # (strict=False: a raw tab or other control character inside a string, as pandas reads
        # it on every line; found by review, the first line alone refused it)
        pairs = json.loads(line, object_pairs_hook=lambda items: items, strict=False)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{path!r} is not JSON lines: first line does not parse "
                            f"({exc.msg})") from None
    if not isinstance(pairs, list) or (pairs and not isinstance(pairs[0], tuple)):
        raise DataFileError(f"{path!r}: each JSON line must be an object with the columns as "
                            f"keys, got {type(json.loads(line, strict=False)).__name__}")
    return [str(k) for k, _ in pairs]


def check_unique_names(path: str, names: list) -> None:
    """A :class:`DataFileError` naming the columns that ``path`` has more than once."""
    seen, repeated = set(), []
    for name in names:
        if name in seen and name not in repeated:
            repeated.append(name)
        seen.add(name)
    if repeated:
        raise DataFileError(f"data file {path!r} has several columns named "
                            f"{', '.join(repr(d) for d in repeated)}; rename them so that each "
                            f"name says which column is meant")


@dataclass(frozen=True)
class TextSource:
    """A CSV or JSON-lines file, its format, compression, separator and column names."""

    path: str
    fmt: str
    compression: str | None
    sep: str
    names: list
    line_limit: int = LINE_LIMIT


def open_text_source(path, *, fmt: str | None = None, compression="infer", sep=None,
                     line_limit: int = LINE_LIMIT, wanted=()) -> TextSource:
    """Check a CSV or JSON-lines file and read its header (no rows).

    ``fmt`` defaults to the extension (``.jsonl``/``.ndjson``/``.json``: JSON lines,
    otherwise CSV); ``sep`` to a tab for ``.tsv`` and a comma otherwise. ``wanted``: the
    columns to be read (a JSON-lines file's names include those of them that only later
    objects have; see :func:`text_header`).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file {path!r} not found")
    if os.path.isdir(path):
        raise DataFileError(f"data path {path!r} is a directory; give one file")
    if not isinstance(line_limit, (int, np.integer)) or isinstance(line_limit, bool) \
            or line_limit < 1:
        raise ValueError(f"line_limit must be a positive number of bytes, got {line_limit!r}")
    ext, named = split_name(path)
    compression = named if compression == "infer" else compression
    if fmt is None:
        fmt = "jsonl" if ext in (".jsonl", ".ndjson", ".json") else "csv"
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"fmt must be one of {TEXT_FORMATS}, got {fmt!r}")
    if sep is None:
        sep = "\t" if ext == ".tsv" else ","
    if fmt == "csv" and (not isinstance(sep, str) or len(sep) != 1 or sep in '"\r\n'):
        raise ValueError(f"sep must be one character other than a quote or a line break, "
                         f"got {sep!r}")
    names = text_header(path, fmt, compression, sep, line_limit=line_limit, wanted=wanted)
    return TextSource(path, fmt, compression, sep, names, int(line_limit))


#: the least magnitude at which a float64 may be an integer of the file rounded
_ROUNDED_FROM = 2.0 ** 53
#: beyond int64: the JSON reader's integers of no one integer type become floats
_BEYOND_INT64 = 2.0 ** 63


def _json_numbers(frame, names) -> None:
    """JSON lines' number columns of a batch (scores, weights), read as the values written
    (objects), made numbers as pandas makes a column of numbers (int64 where all are
    integers, else float64; null missing) where every value is a number, written as one or
    as the text of one (``"0.7"``, ``"12"``: exact, as written); otherwise left as objects, for
    the scores' and weights' readers to refuse by the first value that is not (``true`` or
    ``false``: pandas read them as 1.0 and 0.0 beside numbers, found by review; ``"1_000"``)."""
    import pandas as pd

    for name in names:
        if name not in frame.columns or frame[name].dtype != object:
            continue
        column = frame[name]
        # (in C: numbers alone, or with null, the usual case; booleans or text: one by one)
        if pd.api.types.infer_dtype(column, skipna=True) not in ("integer", "floating",
                                                                  "mixed-integer-float"):
            numbers = [_json_number(value) for value in column.tolist()]
            if any(number is _NOT_A_NUMBER for number in numbers):
                continue
            column = pd.Series(numbers, index=frame.index, dtype=object)
        frame[name] = pd.to_numeric(column) if column.notna().any() else \
            column.astype(np.float64)


#: what :func:`_json_number` gives for a value that is not a number
_NOT_A_NUMBER = object()
_INTEGER_TEXT = re.compile(r"\s*[+-]?\d+\s*", re.ASCII)


def _json_number(value):
    """A JSON value as the number it is or writes (text read exactly: an integer as an int,
    a decimal as the nearest float), None for null, else :data:`_NOT_A_NUMBER`."""
    if value is None or (isinstance(value, (int, float, np.integer, np.floating))
                         and not isinstance(value, (bool, np.bool_))):
        return value
    if isinstance(value, str) and NUMBER_TEXT.fullmatch(value):
        if _INTEGER_TEXT.fullmatch(value):
            try:
                return int(value)
            except ValueError:  # (more digits than Python converts: beyond every float,
                pass            # infinite as a float, refused so by the readers; found by review)
        return float(value)
    return _NOT_A_NUMBER


def _large_numbers(frame, json: bool) -> dict:
    """``{column: (values, rows, kind)}`` of the batch's columns that hold a finite number of
    2**53 or more in magnitude (``rows``: where), read as floats (``kind`` "f"), as objects
    ("O": their floats, JSON lines' flag columns) or, JSON lines, as integers ("i", "u":
    pandas makes a column of whole floats int64). Two reductions answer almost every column (found
    once for both checks of rounded integers)."""
    found = {}
    for name in frame.columns:
        column = frame[name]
        kind = column.dtype.kind if isinstance(column.dtype, np.dtype) else ""
        if kind == "f" or (json and kind in ("i", "u")):
            values = column.to_numpy()
        elif kind == "O":  # (floats among objects: JSON lines' flag columns)
            kinds = [type(v) for v in column.tolist()]
            if float not in kinds:
                continue
            values = np.array([v if k is float else np.nan for v, k in zip(column, kinds)])
        else:
            continue
        if not values.shape[0]:
            continue
        if kind in ("i", "u"):
            if values.min() > -2 ** 53 and values.max() < 2 ** 53:
                continue
            rows = np.flatnonzero((values >= 2 ** 53) | (values <= -2 ** 53))
        else:
            smallest, largest = np.fmin.reduce(values), np.fmax.reduce(values)
            if -_ROUNDED_FROM < smallest and largest < _ROUNDED_FROM:
                continue
            with np.errstate(invalid="ignore"):  # (infinities: the scores' readers refuse)
                rows = np.flatnonzero((np.abs(values) >= _ROUNDED_FROM) & np.isfinite(values))
        if rows.shape[0]:
            found[name] = (values, rows, kind)
    return found


def _refuse_rounded_integers(frame, path: str, start: int, json: bool = False,
                             large: dict | None = None) -> None:
    """A :class:`DataFileError` where a column of integers may have been rounded: read as
    floats, every value a whole number, one of them 2**53 or more in magnitude, and either
    a missing value or (``json``, JSON lines) a value beyond int64 (2**63 or more in
    magnitude); the error names the column, the value and its row.

    pandas' CSV and JSON readers give a column of integers as float64 when it also holds a
    missing value (the JSON reader even for a column asked for as objects), and the JSON
    reader when its integers do not fit one integer type (negative ones beside ones beyond
    2**63); float64 rounds integers beyond 2**53: 9007199254740995 would silently read as
    9007199254740996, and a membership, a tie or a weight would change. Such a column
    cannot be told from one of floats written so, and is refused; Parquet keeps integers
    exact. (A column holding a decimal is one of floats: each value is the float nearest
    the text, as 0.1 is.) ``large``: the batch's columns holding such numbers
    (:func:`_large_numbers`, found here when not given).
    """
    for name, (values, rows, kind) in (_large_numbers(frame, json) if large is None
                                       else large).items():
        if kind not in ("f", "O"):
            continue
        finite = values[np.isfinite(values)]
        if (finite != np.floor(finite)).any():
            continue
        if frame[name].isna().any():
            why = "and a missing value"
        elif json and (np.abs(finite) >= _BEYOND_INT64).any():
            why = "beyond int64"
        else:
            continue
        row = int(rows[0])
        raise DataFileError(
            f"column {name!r} of {path!r} holds whole numbers {why}, read as float64, and "
            f"{float(values[row])!r} at row {start + row}: at 2**53 or more an integer of the "
            f"file may have been rounded (pandas reads such a column of integers as floats), "
            f"so it cannot be taken as exact; write the data as Parquet, which keeps integers "
            f"exact{', or fill the missing values' if why.endswith('missing value') else ''}")


#: an integer as a file writes it: spaces, a sign, leading zeros, ASCII digits
_WRITTEN_INTEGER = re.compile(r"\s*([+-]?)0*([0-9]+)\s*")
#: the most digits of a finite double's integer part (1.8e308 has 309)
_MOST_DIGITS = 309


def _float_or_nan(text) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def _rounded_integer(text, value: float) -> bool:
    """Whether ``text`` writes an integer that the float ``value`` (finite, 2**53 or more in
    magnitude) does not hold exactly (no Python int is made of more digits than a double
    can have: a field of 5,000 leading zeros is the integer after them)."""
    match = _WRITTEN_INTEGER.fullmatch(text)
    if match is None:
        return False
    sign, digits = match.groups()
    return len(digits) > _MOST_DIGITS or int(sign + digits) != int(value)


class _WrittenIntegers:
    """The file's own text where a batch holds a number of 2**53 or more that pandas may
    have rounded, read by one second reader kept in step (only once such a number is met:
    almost never), to refuse an integer written in the file that float64 rounded.

    pandas reads a batch whose column holds a decimal as floats (``9007199254740993`` as
    ``9007199254740992.0``, a new tie; JSON lines also where the integer is written as a
    string, in flag columns read as objects, and in a column of whole floats it then makes
    int64) and a batch of integers alone as int64, which is exact (identity columns) or
    refused (scores, weights): found by review, the same file gave numbers or a refusal as
    ``batch_rows`` cut it. A decimal written so stays the float nearest it, as 0.1 does.

    One reader for every column (a review found one per column: the file opened and parsed
    once a column), in pieces of an eighth of a batch's rows (their text within about a
    batch's memory); JSON lines parsed one line at a time, each once, as pandas joins them
    (a line may hold several objects). The text found must read as the number the batch
    holds, or the two readers are out of step: refused, never guessed."""

    def __init__(self, source, batch_rows: int, columns, text_columns=()):
        self.source = source
        # (a CSV's text columns are read as text; JSON lines' as pandas reads them, numbers
        # too: found by review, a sensitive feature's 2**53 + 1 joined 2**53's group)
        skipped = set(text_columns) if source.fmt == "csv" else set()
        self.columns = None if columns is None else [c for c in dict.fromkeys(columns)
                                                     if c not in skipped]
        self.piece_rows = max(1, batch_rows // 8)
        self.stream = self.pieces = None
        self.piece, self.piece_start, self.piece_stop = None, 0, 0

    def check(self, large: dict, start: int, stop: int) -> None:
        """Refuse, naming the column, the integer and its row, an integer of the batch of
        rows ``start`` to ``stop`` that the batch holds rounded (``large``: its columns of
        numbers of 2**53 or more, :func:`_large_numbers`)."""
        found = {name: (values, rows) for name, (values, rows, _) in large.items()
                 if self.columns is None or name in self.columns}
        if not found:
            return
        while True:
            if self.piece is None or self.piece_stop <= start:
                self._next_piece()
                continue
            for name, (values, rows) in found.items():
                mine = rows[(rows + start >= self.piece_start) & (rows + start < self.piece_stop)]
                if mine.shape[0]:
                    self._check_rows(name, self._texts(name, mine + start - self.piece_start),
                                     values[mine], mine + start)
            if self.piece_stop >= stop:
                return
            self.piece = None

    def _check_rows(self, name, texts: list, values: np.ndarray, rows: np.ndarray) -> None:
        """Check the file's ``texts`` of column ``name`` at the file's ``rows`` against the
        batch's ``values`` there: each must read as its value (to rounding: else the two
        readers are out of step), and one written as an integer must be held exactly. In
        numpy where it can (a review found 7 s for a million rows of ``1e16`` one at a
        time); only texts written as integers are read one at a time."""
        try:
            numbers = np.asarray(texts, dtype=np.float64)
        except (TypeError, ValueError):  # (a text that is not a number, or none: find it)
            numbers = np.array([_float_or_nan(t) for t in texts])
        with np.errstate(invalid="ignore"):
            apart = ~np.isclose(numbers, values, rtol=2.0 ** -50, atol=0.0)
        if apart.any():
            at = int(np.argmax(apart))
            text = texts[at]
            shown = repr(text if not isinstance(text, str) or len(text) <= 60
                         else text[:60] + "...")
            raise DataFileError(
                f"column {name!r} of {self.source.path!r} holds {float(values[at])!r} at row "
                f"{int(rows[at])} as read, but the file's text there reads {shown}: its "
                f"integers beyond 2**53 cannot be checked for rounding; write the data as "
                f"Parquet, or one JSON object per line")
        for at, text in enumerate(texts):
            if "." in text or "e" in text or "E" in text:  # (a decimal: its nearest float)
                continue
            if _rounded_integer(text, values[at]):
                written = text.strip()
                written = written if len(written) <= 60 else written[:60] + "..."
                raise DataFileError(
                    f"column {name!r} of {self.source.path!r} holds the integer {written} at "
                    f"row {int(rows[at])}, which float64 cannot hold exactly: pandas reads the "
                    f"column as floats where its rows hold a decimal, and it would read as "
                    f"{float(values[at])!r} (a tie, a membership or a weight would change); "
                    f"write it with a decimal point if the nearest float is meant, or write "
                    f"the data as Parquet, which keeps integers exact")

    def _texts(self, name, positions: np.ndarray) -> list:
        """The texts of column ``name`` at ``positions`` of the current piece (None where a
        JSON row lacks it, or holds no text: the check then finds the readers apart)."""
        if self.source.fmt == "csv":
            return self.piece[name].to_numpy()[positions].tolist()
        rows = [self.piece[at] for at in positions.tolist()]
        return [row.get(name) if isinstance(row, dict) else None for row in rows]

    def _next_piece(self) -> None:
        source = self.source
        if self.stream is None:
            import pandas as pd

            self.stream = open_text(source.path, source.compression,
                                    line_limit=source.line_limit, quotes=source.fmt == "csv",
                                    sep=source.sep,
                                    fields=len(source.names) if source.fmt == "csv" else None)
            if source.fmt == "csv":
                self.pieces = iter(pd.read_csv(
                    self.stream, usecols=self.columns, sep=source.sep, encoding="utf-8",
                    chunksize=self.piece_rows, dtype=str, keep_default_na=False,
                    na_filter=False))
            else:
                self.pieces = self._json_pieces(io.TextIOWrapper(self.stream,
                                                                 encoding="utf-8-sig"))
        try:
            self.piece = next(self.pieces)
        except StopIteration:
            raise DataFileError(f"{source.path!r} ended before row {self.piece_stop} when "
                                f"read again to check its integers beyond 2**53") from None
        self.piece_start, self.piece_stop = self.piece_stop, self.piece_stop + len(self.piece)

    def _json_pieces(self, lines):
        """Lists of the objects of JSON lines, ``piece_rows`` objects or so at a time, each
        line parsed once, as pandas reads them (blank lines dropped, a line's objects in
        order), numbers kept as their text (exact, whatever their digits)."""
        piece = []
        for number, line in enumerate(lines, 1):
            line = line.strip()
            if not line:
                continue
            try:
                piece += json.loads("[" + line + "]", parse_int=str, parse_float=str,
                                    strict=False)
            except ValueError:
                raise DataFileError(f"cannot read line {number} of {self.source.path!r} "
                                    f"again as JSON, to check its integers beyond 2**53"
                                    ) from None
            if len(piece) >= self.piece_rows:
                yield piece
                piece = []
        if piece:
            yield piece

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def joined_batches(parts: list, starts: list, path: str):
    """The batches (``parts``, their first rows ``starts``) of the file ``path`` as one frame,
    refusing an integer that joining them would round: a column read as integers in one
    batch and as floats in another (pandas reads a batch's column as floats where it holds a
    decimal) is float64 once joined, and an integer there beyond 2**53 would change (found by
    review: the CLI read 9007199254740993 as a tie with 9007199254740992, silently)."""
    import pandas as pd

    if len(parts) == 1:
        return parts[0]
    for name in parts[0].columns:
        dtypes = [part[name].dtype for part in parts]
        if not all(isinstance(d, np.dtype) for d in dtypes):
            continue
        # (int64 beside uint64 joins as float64 too: found by review)
        if np.result_type(*dtypes).kind != "f" or not {d.kind for d in dtypes} & {"i", "u"}:
            continue
        for part, start in zip(parts, starts):
            values = part[name].to_numpy()
            if values.dtype.kind not in "iu" or not values.shape[0]:
                continue
            if values.min() > -2 ** 53 and values.max() < 2 ** 53:
                continue
            with np.errstate(invalid="ignore"):  # (2**63 cast back; no catch_warnings,
                rounded = values.astype(np.float64)  # whose filters threads undo)
                lost = (rounded >= 2.0 ** 64) | (rounded < -2.0 ** 63) | \
                    (rounded.astype(values.dtype) != values)
            if lost.any():
                row = int(np.argmax(lost))
                raise DataFileError(
                    f"column {name!r} of {path!r} holds the integer {int(values[row])} at row "
                    f"{start + row}, which float64 cannot hold exactly, and other batches of "
                    f"it other numbers: read as one column of floats it would become "
                    f"{float(rounded[row])!r} (a tie, a membership or a weight would change); "
                    f"write it with a decimal point if the nearest float is meant, or write "
                    f"the data as Parquet, which keeps integers exact")
    return pd.concat(parts, ignore_index=True)


#: the words pandas reads as a missing value in a CSV field (its default ``na_values``): kept
#: for the numeric columns where the text columns' own are only the empty field
MISSING_WORDS = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                 "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")


@dataclass(frozen=True)
class ColumnReading:
    """How the columns of a text file are read, by role (each a tuple of column names; a
    name not among the columns read is passed over):

    ``text``
        of a CSV file: the text in the file (only empty fields missing: "None" or "NA" is a
        value), not whatever type each batch's values look like: a categorical column
        ("01234", or "1" and "10+") or a text label ("0" and "toxic") then reads alike in
        every batch.
    ``literal``
        of a CSV file (a text label): only empty fields missing too, the type as pandas
        reads it.
    ``flags``
        of a JSON-lines file (labels, identities): the values written, an object column;
        pandas would read true/false as 1.0/0.0 in a batch where some line has null or
        leaves the key out, and as booleans in one where none does.
    ``numbers``
        of a JSON-lines file (scores, weights): numbers only where every value is a number
        or the text of one (:func:`_json_numbers`); pandas would read ``true`` as 1.0
        beside numbers.

    Examples
    --------
    >>> ColumnReading(text=("religion",)).text
    ('religion',)
    """

    text: tuple = ()
    literal: tuple = ()
    flags: tuple = ()
    numbers: tuple = ()


def iter_text_batches(source: TextSource, columns: list, batch_rows: int, *, progress=None,
                      reading: ColumnReading = ColumnReading(), check_rounded: bool = True):
    """``(DataFrame of columns, where)`` for every ``batch_rows`` rows of the file, in order.

    Each column is read as ``reading`` says for its role (:class:`ColumnReading`).
    ``columns=None`` reads every column of a JSON-lines file: each batch has the keys its
    lines have.

    ``progress(share of the file's bytes read, rows so far, rows the file is projected to
    hold)`` is called before each batch is yielded, when given. A column that may hold
    integers the reader rounded is refused (``check_rounded``; a scan that only looks for
    0/1 columns passes False).
    A row that cannot be parsed, or a JSON line lacking a needed column, is a
    :class:`DataFileError` naming the file and rows.
    """
    import pandas as pd

    size = os.path.getsize(source.path)
    with open_text(source.path, source.compression, line_limit=source.line_limit,
                   quotes=source.fmt == "csv", sep=source.sep,
                   fields=len(source.names) if source.fmt == "csv" else None) as stream:
        raw = stream._raw_file
        if source.fmt == "csv":
            wanted = list(dict.fromkeys(columns))
            if "" in wanted:  # (pandas names such a column "Unnamed: <position>")
                where = (f" (field {source.names.index('') + 1} of the header)"
                         if "" in source.names else "")
                raise DataFileError(f"a column of {source.path!r} that is asked for has no "
                                    f"name in the header{where}: give it one to read it")
            text = [c for c in reading.text if c in wanted]
            literal = text + [c for c in reading.literal if c in wanted and c not in text]
            # a text column's values are its text: "None", "NA" or "null" are categories (a
            # religion, a country), only an empty field is missing; elsewhere pandas' words
            # for a missing number
            # low_memory=False: each batch's columns typed at once, not in blocks of about
            # 2**18 lines (a column of numbers and text then read as values of both kinds,
            # with pandas' DtypeWarning beside fastbias' own refusal; suppressing it took
            # warnings.catch_warnings, whose process-wide filters calls in threads undo for
            # each other: found by review); a batch is read whole either way
            reader = pd.read_csv(stream, usecols=wanted, sep=source.sep, low_memory=False,
                                 chunksize=batch_rows, encoding="utf-8",
                                 dtype={c: str for c in text} or None,
                                 keep_default_na=not literal,
                                 na_values={c: [""] if c in literal else list(MISSING_WORDS)
                                            for c in wanted} if literal else None)
        else:
            # precise_float: pandas' default float parser is not correctly rounded (scores one
            # ulp apart would tie); convert_dates: columns named *_at, date, ... stay values
            # (pandas >= 3.1 deprecates convert_dates for dtype=False, which would also
            # leave numbers written as strings unparsed: same values on every pandas)
            with WARNING_FILTERS_LOCK, warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*'convert_dates' keyword")
                # convert_axes=False: keys written as numbers ("1") stay the keys asked for
                # (found by review: a batch of such keys read as integers, its rows missing);
                # every line checked to hold an object (a line of null, [] or 7 made pandas
                # read its batch as arrays, every row missing)
                reader = pd.read_json(_ObjectLines(stream, source.path), lines=True,
                                      chunksize=batch_rows, precise_float=True,
                                      convert_dates=False, convert_axes=False,
                                      dtype={c: object for c in (*reading.flags, *reading.text,
                                                                 *reading.numbers)
                                             if columns is None or c in columns} or True)
        start = 0
        written = _WrittenIntegers(source, batch_rows, columns, reading.text) \
            if check_rounded else None
        with reader, contextlib.closing(written) if written else contextlib.nullcontext():
            while True:
                try:
                    frame = next(reader)
                except StopIteration:
                    break
                except (pd.errors.ParserError, ValueError, TypeError,
                        zipfile.BadZipFile) as error:
                    if isinstance(error, DataFileError):
                        raise
                    if source.fmt == "jsonl":
                        _refuse_unreadable_json(source, start, batch_rows, columns)
                    raise DataFileError(f"cannot read data file {source.path!r} after row "
                                        f"{start:,}: {' '.join(str(error).split())}") from None
                stop = start + len(frame)
                if source.fmt == "jsonl" and columns is not None:
                    # a key absent from every line of a batch reads as missing values, as it
                    # does when the whole file is read at once (whatever the batch size)
                    frame = frame.reindex(columns=list(dict.fromkeys(columns)))
                if progress is not None:  # before the batch is used
                    position = raw.tell()
                    # records seen by the guard and bytes taken from the file, both counting
                    # what the parser read ahead: their ratio projects the file's rows
                    projected = stream.records * size / position if position else float(stop)
                    progress(min(position / size, 1.0) if size else 1.0, stop,
                             max(projected - (source.fmt == "csv"), float(stop)))
                if source.fmt == "jsonl" and reading.numbers:
                    _json_numbers(frame, reading.numbers)
                if len(frame):
                    large = _large_numbers(frame, source.fmt == "jsonl") \
                        if check_rounded else None
                    if large:
                        _refuse_rounded_integers(frame, source.path, start,
                                                 json=source.fmt == "jsonl", large=large)
                        written.check(large, start, stop)
                    yield frame, PieceWhere(f"in rows {start}..{stop - 1} of {source.path}",
                                            start)
                start = stop
