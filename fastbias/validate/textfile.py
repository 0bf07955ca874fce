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

import csv
import io
import json
import os
from dataclasses import dataclass

import numpy as np

#: the longest line read (bytes, after decompression)
LINE_LIMIT = 16 * 2 ** 20
#: file name extension -> compression
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
TEXT_FORMATS = ("csv", "jsonl")


class DataFileError(ValueError):
    """A data file that cannot be read as asked: the message names the file (and the line)."""


class _LineGuard(io.RawIOBase):
    """A readable binary stream over ``stream`` that counts newlines and raises
    :class:`DataFileError` as soon as a line grows past ``limit`` bytes."""

    def __init__(self, stream, limit: int, name: str):
        self._stream = stream
        self._limit = int(limit)
        self._name = name
        self.lines = 0  # newlines read so far
        self._run = 0  # bytes since the last newline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        size = min(len(buffer), self._limit)  # a line inside one read is then within the limit
        data = self._stream.read(size)
        n = len(data)
        if n == 0:
            return 0
        buffer[:n] = data
        first = data.find(b"\n")
        if first < 0:
            self._run += n
        else:
            self._run += first
        if self._run > self._limit:
            raise DataFileError(
                f"line {self.lines + 1:,} of data file {self._name!r} is longer than "
                f"{_size_text(self._limit)} (a corrupt file, or a compressed file that inflates "
                f"to one endless line?); fastbias reads lines of at most that length")
        if first >= 0:
            self.lines += data.count(b"\n")
            self._run = n - 1 - data.rfind(b"\n")
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


def compression_of(path: str) -> str | None:
    """The compression a file name says (``data.csv.gz`` -> ``"gzip"``), or None."""
    return COMPRESSIONS.get(os.path.splitext(os.path.basename(path).lower())[1])


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
        archive = zipfile.ZipFile(raw)
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


def open_text(path: str, compression: str | None = None, *,
              line_limit: int = LINE_LIMIT) -> io.BufferedReader:
    """``path`` decompressed, as a buffered binary stream whose lines are checked against
    ``line_limit`` bytes (see :class:`DataFileError`). Close it when done."""
    raw = open(path, "rb")
    try:
        guard = _LineGuard(_decompressed(raw, compression, path), line_limit, path)
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

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw_file.close()


def text_header(path: str, fmt: str, compression: str | None = None, sep: str = ",", *,
                line_limit: int = LINE_LIMIT) -> list:
    """The column names of a CSV or JSON-lines file, as written.

    Raises :class:`DataFileError` for an empty file, a JSON array, a first line that is not
    a JSON object, or repeated names.
    """
    with open_text(path, compression, line_limit=line_limit) as stream:
        text = io.TextIOWrapper(stream, encoding="utf-8")
        for line in text:
            if not line.strip():
                if fmt == "csv":
                    break
                continue
            names = _csv_names(line, sep) if fmt == "csv" else _json_names(path, line.strip())
            check_unique_names(path, names)
            return names
    raise DataFileError(f"data file {path!r} is empty")


def _csv_names(line: str, sep: str) -> list:
    return next(csv.reader([line], delimiter=sep))


def _json_names(path: str, line: str) -> list:
    if line.startswith("["):
        raise DataFileError(f"{path!r} is a JSON array, not JSON lines (one object per line); "
                            f"convert it, e.g. with pandas: "
                            f"pd.read_json(path).to_json(out, orient='records', lines=True)")
    try:
        pairs = json.loads(line, object_pairs_hook=lambda items: items)
    except json.JSONDecodeError as exc:
        raise DataFileError(f"{path!r} is not JSON lines: first line does not parse "
                            f"({exc.msg})") from None
    if not isinstance(pairs, list) or (pairs and not isinstance(pairs[0], tuple)):
        raise DataFileError(f"{path!r}: each JSON line must be an object with the columns as "
                            f"keys, got {type(json.loads(line)).__name__}")
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
                     line_limit: int = LINE_LIMIT) -> TextSource:
    """Check a CSV or JSON-lines file and read its header (no rows).

    ``fmt`` defaults to the extension (``.jsonl``/``.ndjson``/``.json``: JSON lines,
    otherwise CSV); ``sep`` to a tab for ``.tsv`` and a comma otherwise.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"data file {path!r} not found")
    if os.path.isdir(path):
        raise DataFileError(f"data path {path!r} is a directory; give one file")
    if not isinstance(line_limit, (int, np.integer)) or isinstance(line_limit, bool) \
            or line_limit < 1:
        raise ValueError(f"line_limit must be a positive number of bytes, got {line_limit!r}")
    compression = compression_of(path) if compression == "infer" else compression
    name = os.path.basename(path).lower()
    if compression is not None:
        name = os.path.splitext(name)[0]
    ext = os.path.splitext(name)[1]
    if fmt is None:
        fmt = "jsonl" if ext in (".jsonl", ".ndjson", ".json") else "csv"
    if fmt not in TEXT_FORMATS:
        raise ValueError(f"fmt must be one of {TEXT_FORMATS}, got {fmt!r}")
    if sep is None:
        sep = "\t" if ext == ".tsv" else ","
    names = text_header(path, fmt, compression, sep, line_limit=line_limit)
    return TextSource(path, fmt, compression, sep, names, int(line_limit))


def iter_text_batches(source: TextSource, columns: list, batch_rows: int, *, progress=None):
    """``(DataFrame of columns, where)`` for every ``batch_rows`` rows of the file, in order.

    ``progress(share of the file's bytes read, rows so far, rows the file is projected to
    hold)`` is called before each batch is yielded, when given.
    A row that cannot be parsed, or a JSON line lacking a needed column, is a
    :class:`DataFileError` naming the file and rows.
    """
    import pandas as pd

    size = os.path.getsize(source.path)
    with open_text(source.path, source.compression, line_limit=source.line_limit) as stream:
        raw = stream._raw_file
        if source.fmt == "csv":
            reader = pd.read_csv(stream, usecols=list(dict.fromkeys(columns)), sep=source.sep,
                                 chunksize=batch_rows, encoding="utf-8")
        else:
            # precise_float: pandas' default float parser is not correctly rounded (scores one
            # ulp apart would tie); convert_dates: columns named *_at, date, ... stay values
            reader = pd.read_json(io.TextIOWrapper(stream, encoding="utf-8"), lines=True,
                                  chunksize=batch_rows, precise_float=True,
                                  convert_dates=False)
        start = 0
        with reader:
            while True:
                try:
                    frame = next(reader)
                except StopIteration:
                    break
                except (pd.errors.ParserError, ValueError) as error:
                    if isinstance(error, DataFileError):
                        raise
                    raise DataFileError(f"cannot read data file {source.path!r} after row "
                                        f"{start:,}: {' '.join(str(error).split())}") from None
                stop = start + len(frame)
                if source.fmt == "jsonl":
                    missing = [c for c in columns if c not in frame.columns]
                    if missing:
                        raise DataFileError(f"JSON lines in {source.path!r} lack column(s) "
                                            f"{missing} in rows {start:,}..{stop - 1:,}")
                    frame = frame[list(dict.fromkeys(columns))]
                if progress is not None:  # before the batch is used
                    position = raw.tell()
                    # lines seen by the guard and bytes taken from the file, both counting
                    # what the parser read ahead: their ratio projects the file's rows
                    projected = stream.lines * size / position if position else float(stop)
                    progress(min(position / size, 1.0) if size else 1.0, stop,
                             max(projected - (source.fmt == "csv"), float(stop)))
                if len(frame):
                    yield frame, f"in rows {start}..{stop - 1} of {source.path}"
                start = stop
