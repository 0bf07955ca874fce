"""The ``fastbias`` command: bias reports from a data file, and a demo.

::

    fastbias report DATA --label COL --scores COL [COL ...] --subgroups COL [COL ...]
                         [--out FILE [--out FILE ...]] [--ci {delong,bootstrap,bernstein}] ...
    fastbias demo [--rows N] [--out FILE]

``report`` reads CSV (also .tsv and compressed .gz/.bz2/.xz/.zip), Parquet
(needs pyarrow: ``pip install "fastbias[parquet]"``) or JSON lines, evaluates
every score column with :func:`fastbias.evaluate`, prints an aligned table and
writes each ``--out`` file in the format of its extension: ``.html`` (a
self-contained report with figures), ``.csv`` or ``.json``.

``demo`` builds the Jigsaw-sized synthetic set (1.8M rows, 24 identities, a
fair and a biased model), evaluates it, prints the table and the time of each
step, and writes the HTML report.

Errors are one line on stderr (``fastbias: error: ...``) with exit status 1;
usage errors exit with 2. Progress is shown on stderr only when it is a
terminal (``--progress always|never`` overrides).
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import logging
import lzma
import math
import os
import re
import stat
import sys
import threading
import time
import warnings
import zipfile
import zlib
from contextlib import contextmanager

import numpy as np

from .progress import (
    Status,
    close_displays,
    live_available,
    open_displays,
    shown,
    ticking,
)
from .reports.plain import terminal_text
from .validate.columns import (
    NUMBER_TEXT,
    booleans_and_numbers,
    first_non_numeric,
    from_foreign,
)
from .validate.settings import DEFAULT_LABEL_THRESHOLD
from .validate.subgroups import BatchKinds
from .validate.textfile import (
    ColumnReading,
    DataFileError,
    TextSource,
    check_unique_names,
    iter_text_batches,
    joined_batches,
    open_text_source,
    record_bytes,
    split_name,
    text_header,
)

DEMO_OUTPUT = "fastbias-demo-report.html"
CSV_CHUNK_ROWS = 250_000
# terminal tables wrap to this many columns unless --wide
TABLE_WIDTH = 100

_INPUT_FORMATS = {".csv": "csv", ".tsv": "csv", ".txt": "csv", ".parquet": "parquet",
                  ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_OUTPUT_FORMATS = {".html": "html", ".htm": "html", ".csv": "csv", ".json": "json"}


class CLIError(Exception):
    """An error the user can fix; printed as one line."""


# --------------------------------------------------------------------------- progress display

class Progress:
    """The CLI's progress on stderr. On a terminal (and with tqdm, the ``cli`` extra) one
    status line drawn by :mod:`fastbias.progress`, which the bootstrap bar replaces while
    it runs; with ``steps`` (stderr piped to a file or a log, or no tqdm) one plain line
    as each step starts; otherwise silent."""

    def __init__(self, enabled: bool, steps: bool = False):
        self.enabled = enabled and live_available()
        self.steps = (steps or enabled) and not self.enabled
        self._status = None
        self._lock = threading.Lock()

    def step(self, text: str) -> None:
        """A step starts: the status line, or a plain line with ``steps``."""
        if self.enabled:
            self.update(f"{text} ...")
        elif self.steps:
            with self._lock:
                sys.stderr.write(terminal_text(f"fastbias: {text} ...") + "\n")
                sys.stderr.flush()

    def update(self, text: str) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._status is None:
                self._status = Status(terminal_text(text), setting=True)
            else:
                self._status.update(terminal_text(text))

    def clear(self) -> None:
        with self._lock:
            if self._status is not None:
                self._status.close()
                self._status = None

    @contextmanager
    def ticking(self, label: str):
        """``label ... 00:03`` (elapsed time) until the block ends; bars opened inside it
        (the bootstrap's) are drawn instead of it while they run."""
        if not self.enabled:
            self.step(label)
            with shown(False):
                yield
            return
        self.clear()
        with shown(True), ticking(f"{terminal_text(label)} ...", setting=True):
            yield


def _progress_enabled(args) -> bool:
    if getattr(args, "quiet", False) or args.progress == "never":
        return False
    if args.progress == "always":
        return True
    return sys.stderr.isatty()


def _progress(args) -> Progress:
    """The status line on a terminal; one line per step when stderr is piped (unless
    ``--progress never`` or ``-q``)."""
    enabled = _progress_enabled(args)
    steps = not enabled and args.progress == "auto" and not getattr(args, "quiet", False)
    return Progress(enabled, steps=steps)


# --------------------------------------------------------------------------- reading data

def _split_suffix(path: str):
    """(format, compression, extension) from a file name such as ``data.tsv.gz``."""
    ext, compression = split_name(path)
    return _INPUT_FORMATS.get(ext), compression, ext


def _header(path: str, fmt: str, compression, sep, wanted=()) -> list:
    """The column names of the file, as written (duplicates are an error); of a JSON-lines
    file, with those of ``wanted`` that only lines after the first have."""
    if fmt == "parquet":
        pq = _pyarrow_parquet()
        try:
            names = list(pq.read_schema(path).names)
        except Exception as exc:  # pyarrow raises its own error types
            raise CLIError(f"cannot read {path!r} as Parquet: {exc}") from None
        check_unique_names(path, names)
        return names
    return text_header(path, fmt, compression, sep, wanted=wanted)


def _pyarrow_parquet():
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise CLIError("reading Parquet needs pyarrow: pip install 'fastbias[parquet]'") from None
    return pq


def _columns_of(wanted: dict) -> list:
    """The column names of ``wanted`` (option -> column names), each once."""
    return list(dict.fromkeys(name for names in wanted.values() for name in names))


def _check_columns(header: list, wanted: dict) -> None:
    """wanted: option name -> list of column names. Raise on the first unknown column."""
    available = set(header)
    for option, names in wanted.items():
        for name in names:
            if name in available:
                continue
            # (names of reasonable length only: difflib's time grows with the product)
            close = difflib.get_close_matches(
                name, [c for c in header if len(str(c)) <= 1000], n=3, cutoff=0.5) \
                if len(str(name)) <= 1000 else []
            hint = f"; did you mean {' or '.join(_short(c) for c in close)}?" if close else "."
            # (as repr: a name's own newline must not start a line of the message)
            shown = ", ".join(_short(c, 200) for c in header[:15]) + (
                f", ... ({len(header)} in all)" if len(header) > 15 else "")
            raise CLIError(f"unknown column {_short(name, 200)} ({option}){hint} The file "
                           f"has columns: {shown}")


#: a text file is streamed at once when the rows projected from its first batches would
#: need this many times the budget (the estimate can be off; below it, reading goes on)
PROJECTED_OVER = 1.5


class _OverBudget(Exception):
    """The data would not fit the memory budget: ``rows`` of ``row_bytes`` each (at least
    ``rows`` unless ``exact``; about ``rows``, from the share of the file read, if
    ``projected``)."""

    def __init__(self, rows: int, row_bytes: int, exact: bool, projected: bool = False):
        super().__init__(rows)
        self.rows, self.row_bytes, self.exact = rows, row_bytes, exact
        self.projected = projected

    def rows_text(self) -> str:
        if self.exact:
            return f"{self.rows:,}"
        return f"about {self.rows:,}" if self.projected else f"at least {self.rows:,}"


def read_data(path: str, columns: list, *, input_format: str | None = None, sep=None,
              progress: Progress | None = None, wanted: dict | None = None,
              max_bytes: int | None = None, row_bytes: int = 0, prepare=None,
              reading: ColumnReading = ColumnReading()):
    """Read only ``columns`` of a CSV, Parquet or JSON-lines file into a DataFrame.

    ``wanted`` (option -> column names) is checked against the file's header
    first, so that an unknown column fails fast with the option named. A file
    that cannot be read (truncated or corrupt compression, not UTF-8, not
    parseable, a line over 16 MiB) is a :class:`CLIError` naming it, never a
    traceback. With ``max_bytes``, reading stops with :class:`_OverBudget` as soon as the
    rows (at ``row_bytes`` each) would need more than that. ``prepare(frame)``, when given,
    turns each batch into what is kept (e.g. compact memberships). ``reading``: how a text
    file's columns are read by role (:class:`~fastbias.validate.textfile.ColumnReading`).
    """
    return _reading(path, lambda: _read_data(path, columns, input_format=input_format, sep=sep,
                                             progress=progress, wanted=wanted,
                                             max_bytes=max_bytes, row_bytes=row_bytes,
                                             prepare=prepare, reading=reading))


def read_header(path: str, *, input_format: str | None = None, sep=None, wanted=()) -> list:
    """The column names of a data file, as written; errors as :func:`read_data`. ``wanted``:
    the columns to be read, which a JSON-lines file's later lines may be the first to have."""
    return _reading(path, lambda: _header(path, *_file_format(path, input_format, sep),
                                          wanted=wanted))


def _reading(path: str, read):
    """``read()``, with any failure to read ``path`` turned into a :class:`CLIError`
    naming it."""
    import pandas as pd

    try:
        return read()
    except (CLIError, _OverBudget):
        raise
    except DataFileError as exc:
        raise CLIError(str(exc)) from None
    except (EOFError, OSError, UnicodeDecodeError, zlib.error, lzma.LZMAError,
            zipfile.BadZipFile, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise CLIError(_read_error(path, exc)) from None
    except Exception as exc:  # pyarrow's own error types
        if (type(exc).__module__ or "").startswith("pyarrow"):
            raise CLIError(_read_error(path, exc)) from None
        raise


def _read_error(path: str, exc: BaseException) -> str:
    """One line saying why ``path`` could not be read."""
    if isinstance(exc, EOFError):
        why = "the compressed data ends before its end marker (a truncated file?)"
    elif isinstance(exc, (zlib.error, lzma.LZMAError)) or "compressed" in str(exc).lower() \
            or "gzip" in str(exc).lower() or "invalid data stream" in str(exc).lower():
        why = f"its compressed data is corrupt ({exc})"
    elif isinstance(exc, UnicodeDecodeError):
        why = f"it is not UTF-8 text (byte {exc.start}: {exc.reason})"
    else:
        why = " ".join(str(exc).split()) or type(exc).__name__
    return f"cannot read data file {path!r}: {why}"


def _file_format(path: str, input_format: str | None, sep) -> tuple:
    """``(format, compression, separator)`` of an existing data file."""
    if not os.path.exists(path):
        raise CLIError(f"data file {path!r} not found")
    if os.path.isdir(path):
        raise CLIError(f"data path {path!r} is a directory; give one file")
    fmt, compression, ext = _split_suffix(path)
    if input_format is not None:
        fmt = input_format
    if fmt is None:
        raise CLIError(f"cannot tell the format of {path!r} from its extension; use .csv, "
                       f".parquet or .jsonl, or say --input-format csv|parquet|jsonl")
    if fmt != "csv" and sep is not None:  # (found by review: dropped without a word)
        raise CLIError(f"--sep is the separator of CSV files; {path!r} is read as {fmt}")
    if fmt == "csv" and sep is None:
        sep = "\t" if ext == ".tsv" else ","
    return fmt, compression, sep


def _batches(path: str, columns: list, fmt: str, compression, sep, batch_rows: int,
             progress: Progress, projection=None, reading: ColumnReading = ColumnReading(),
             check_rounded: bool = True):
    """``(DataFrame of columns, where)`` for every batch of rows of the file, with progress;
    ``projection(rows)``, when given, learns the rows the file is projected to hold before
    each batch is yielded (text files; Parquet's footer says). ``reading`` and
    ``check_rounded``: as :func:`iter_text_batches` reads them."""
    name = os.path.basename(path)
    if fmt == "parquet":
        pq = _pyarrow_parquet()
        parquet_file = pq.ParquetFile(path)
        rows, total = 0, parquet_file.metadata.num_rows
        for batch in parquet_file.iter_batches(batch_size=batch_rows, columns=columns):
            frame = from_foreign(batch)
            yield frame, f"in rows {rows}..{rows + len(frame) - 1} of {path}"
            rows += len(frame)
            progress.update(f"reading {name}: {rows / max(total, 1):4.0%} ({rows:,} rows)")
        return
    # (the header's names: a CSV record is checked against its number of fields)
    source = (open_text_source(path, fmt=fmt, compression=compression, sep=sep)
              if fmt == "csv" else TextSource(path, fmt, compression, sep, columns))

    def show(done, rows, projected):
        if projection is not None:
            projection(projected)
        progress.update(f"reading {name}: {done:4.0%} ({rows:,} rows)")

    yield from iter_text_batches(source, columns, batch_rows, progress=show, reading=reading,
                                 check_rounded=check_rounded)


def _read_data(path: str, columns: list, *, input_format: str | None = None, sep=None,
               progress: Progress | None = None, wanted: dict | None = None,
               max_bytes: int | None = None, row_bytes: int = 0, prepare=None,
               reading: ColumnReading = ColumnReading()):
    import pandas as pd

    progress = progress or Progress(False)
    fmt, compression, sep = _file_format(path, input_format, sep)
    header = _header(path, fmt, compression, sep, _columns_of(wanted or {}))
    if wanted:
        _check_columns(header, wanted)
    columns = list(dict.fromkeys(columns))
    if fmt == "parquet" and max_bytes is not None:
        rows = _pyarrow_parquet().ParquetFile(path).metadata.num_rows
        if rows * row_bytes > max_bytes:
            raise _OverBudget(rows, row_bytes, exact=True)
    batch_rows = CSV_CHUNK_ROWS
    if max_bytes is not None:  # the parser holds whole records, the columns dropped included
        line_bytes = 0 if fmt == "parquet" else record_bytes(path, compression, fmt == "csv",
                                                             sep=sep)
        batch_rows = max(1_000, _rows_per_batch(max_bytes, row_bytes, line_bytes))
    parts, starts, rows, projected = [], [], 0, [0.0]
    kinds = BatchKinds(columns, role="data")  # a column must read one way in every batch
    for frame, where in _batches(path, columns, fmt, compression, sep, batch_rows, progress,
                                 projection=lambda n: projected.__setitem__(0, n),
                                 reading=reading):
        kinds.check(frame, where)
        rows += len(frame)
        if max_bytes is not None:
            # the rows the whole file holds, projected from the part of it read so far: data
            # far over the budget is streamed at once, not after reading a budget's worth
            projected[0] = max(projected[0], rows)
            if rows * row_bytes > max_bytes or \
                    projected[0] * row_bytes > PROJECTED_OVER * max_bytes:
                progress.clear()
                # (the rows read are "at least" the file's, the projection "about" them;
                # found by review: "more than 200 rows" of a file of 200)
                raise _OverBudget(int(max(projected[0], rows)), row_bytes, exact=False,
                                  projected=projected[0] > rows)
        parts.append(frame if prepare is None else prepare(frame))
        starts.append(rows - len(frame))
    progress.clear()
    if not parts:
        if fmt == "jsonl":
            raise CLIError(f"data file {path!r} has no rows")
        return pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    return joined_batches(parts, starts, path)


def _coerce_object_flags(df, names) -> None:
    """JSON true/false/null columns arrive as object dtype: make them nullable booleans, and
    columns of numbers (and null) numbers; others stay as they are."""
    import pandas as pd

    for name in names:
        col = df[name]
        if col.dtype != object:
            continue
        kind = pd.api.types.infer_dtype(col, skipna=True)  # (in C: one pass over the values)
        if kind == "boolean":
            df[name] = col.astype("boolean")
        elif kind in ("integer", "floating", "mixed-integer-float"):
            df[name] = pd.to_numeric(col)


def _flag_columns(args) -> list:
    """The columns whose JSON true/false/null are read as written (see ``iter_text_batches``)
    and then made nullable booleans (:func:`_coerce_object_flags`): the label, the identities."""
    return list(dict.fromkeys((args.label, *args.subgroups)))


def _number_columns(args) -> list:
    """The columns of numbers (scores, the weight) a JSON-lines file holds as numbers only
    where each value is written as one (see ``iter_text_batches``)."""
    return list(dict.fromkeys((*args.scores, *([args.weight] if args.weight else []))))


def _column_reading(args, fmt: str) -> ColumnReading:
    """How the report reads the columns of a text data file, one rule whether it is read
    into memory or streamed: the sensitive features as text (:func:`_text_features`); under
    ``--positive`` the label with only empty fields missing and, in a CSV file where the
    positive class is not a boolean, as its text (a part of only "0" beside "toxic" or "ok"
    would otherwise read as numbers: such a file was refused as holding three labels, '0'
    read twice; found by review, for a number ``--positive`` too); a number ``--positive``
    then names the classes written as that number (:func:`_names_positive`); JSON's flags
    and numbers as written."""
    text = _text_features(args)
    if (fmt == "csv" and args.positive is not None
            and args.positive.lower() not in ("true", "false")):  # (booleans: read so)
        text.append(args.label)
    return ColumnReading(text=tuple(text),
                         literal=(args.label,) if args.positive is not None else (),
                         flags=tuple(_flag_columns(args)), numbers=tuple(_number_columns(args)))


def _label_numbers(frame, args, fmt: str) -> None:
    """Under a number ``--positive``, a CSV label read as text (:func:`_column_reading`) with
    its number texts made numbers, value by value (so alike in every batch: "0" is 0 beside
    "ok", and "1" and "1.0" are one class, as pandas reads a column of numbers). "NaN" stays
    text (under ``--positive`` only an empty field is missing: a third class, named so)."""
    import pandas as pd

    positive = args.positive
    if (fmt != "csv" or positive is None or args.label not in frame
            or not (frame[args.label].dtype == object
                    or pd.api.types.is_string_dtype(frame[args.label].dtype))
            or not NUMBER_TEXT.fullmatch(positive) or not _same_number(positive, positive)):
        return
    column = frame[args.label].astype(object)
    # (by distinct value: a label has few; found by review, "NaN" beside numbers gave
    # pandas' parse error)
    as_number = {v: _label_number(v) for v in pd.unique(column)
                 if isinstance(v, str) and NUMBER_TEXT.fullmatch(v) and float(v) == float(v)}
    if not as_number:
        return
    mapped = column.map(lambda v: as_number.get(v, v) if isinstance(v, str) else v)
    if len(as_number) == column.nunique(dropna=True) and not column.isna().any():
        mapped = pd.to_numeric(mapped)  # (numbers alone: a column of numbers, as pandas reads)
    frame[args.label] = mapped


def _label_number(text: str):
    """A number text as pandas reads it in a column of numbers: an integer where written as
    one, else a float."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def _kept_batch(frame, args, fmt: str):
    """A batch of rows as the in-memory report keeps it: JSON true/false/null columns as
    nullable booleans or numbers, a text label's numbers as numbers (:func:`_label_numbers`),
    then the identity columns compacted."""
    _coerce_object_flags(frame, [c for c in _flag_columns(args) if c in frame])
    _label_numbers(frame, args, fmt)
    # (a column that is a sensitive feature too keeps its values: they name its groups)
    return _compact_memberships(frame, [c for c in args.subgroups
                                        if c not in (args.label, *args.scores, args.weight,
                                                     *(args.sensitive_features or ()))],
                                args.subgroup_threshold)


def _text_features(args) -> list:
    """The sensitive features a CSV file is read as text for (their values the file's text,
    alike in every batch), but those that are identity columns too: read so, a subgroup of
    0/1 text would be refused (found by review); their typed values name the same groups
    (a whole float shows as its integer)."""
    return [c for c in args.sensitive_features or () if c not in args.subgroups]


def _compact_memberships(frame, names, threshold: float):
    """Numeric identity columns of a batch as nullable booleans (member, not, unannotated):
    1 byte and a mask a row instead of 8, and exactly the membership the evaluation reads
    (``value >= threshold``; NaN is unannotated). Boolean, text and object columns stay as
    they are, for the evaluation to read or refuse by name."""
    import pandas as pd

    from .validate.subgroups import identity_values

    for name in names:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column.dtype) or \
                not pd.api.types.is_numeric_dtype(column.dtype):
            continue
        read = identity_values(column, name, threshold)  # the one reader of identity columns
        missing = np.zeros(len(column), bool) if read.missing is None else read.missing
        frame[name] = pd.arrays.BooleanArray(read.member_mask(), missing)
    return frame


def _positive_value(column, label: str, positive: str):
    """The label value that ``--positive`` names, in the column's own type.

    The column must hold exactly two distinct values (missing values aside):
    a typo, other casing or a third value such as "unknown" would otherwise
    be counted as negatives without a word.
    """
    import pandas as pd

    values = pd.unique(column.dropna())
    shown = ", ".join(repr(str(v)) for v in sorted(values, key=str)[:8])
    more = f", ... ({len(values)} in all)" if len(values) > 8 else ""
    at = _positive_at(values, positive)
    match = [values[j] for j in at]
    if not match:
        raise CLIError(f"--positive {positive!r} does not occur in label column {label!r} "
                       f"(values: {shown}{more})")
    if len(values) > 2:
        # (the third value in the order of the rows, and where: one besides the positive
        # class and the first other value, as the library names it)
        others = [j for j in range(len(values)) if j not in at]
        stray = others[1] if len(others) > 1 else at[1]  # (else the class written twice)
        third = values[stray]
        where = int(np.flatnonzero(pd.factorize(column)[0] == stray)[0])
        raise CLIError(f"label column {label!r} has {len(values)} distinct values ({shown}{more}; "
                       f"the third, {str(third)!r}, first at position {where}); "
                       f"--positive needs two-class labels, or every other value would count as "
                       f"negative. Keep only the two classes you mean, or map the others first")
    if len(values) < 2:
        raise CLIError(f"label column {label!r} holds only {shown}: every row would be positive "
                       f"and no AUC is defined")
    return match[0]


def _positive_at(values, positive: str) -> list:
    """Where among distinct label ``values`` is the class ``--positive`` names
    (:func:`_names_positive`): the value written exactly so where there is one among several
    ("1" and "1.0" of a text label, one class written two ways)."""
    at = [j for j, v in enumerate(values) if _names_positive(v, positive)]
    return ([j for j in at if str(values[j]) == positive] or at) if len(at) > 1 else at


def _names_positive(value, positive: str) -> bool:
    """Whether a label value is the class ``--positive`` names: written so; a boolean named
    true/false in any case; a number, or the text of a number (a CSV label read as text),
    equal to a number ``--positive``."""
    if isinstance(value, (bool, np.bool_)):
        return positive.lower() == str(bool(value)).lower()
    if str(value) == positive:
        return True
    if isinstance(value, str) and not NUMBER_TEXT.fullmatch(value):
        return False
    return _same_number(value, positive)


def _refuse_mixed_label(column, label: str) -> None:
    """A label column of both booleans and numbers (JSON's true beside 1) is refused, naming
    a value of each: it is not one kind of label (and true and 1 would read as one value)."""
    mixed = booleans_and_numbers(column.to_numpy()) if column.dtype == object else None
    if mixed is not None:
        raise CLIError(f"label column {label!r} holds both booleans and numbers ({mixed}); "
                       f"write it one way")


def _same_number(value, text: str) -> bool:
    try:
        return float(value) == float(text)
    except (TypeError, ValueError):
        return False


def _prepare_label(df, label: str, positive):
    """Check the label column; return the positive class value for ``--positive`` (or None)."""
    import pandas as pd

    col = df[label]
    _refuse_mixed_label(col, label)
    if positive is not None:
        return _positive_value(col, label, positive)
    if not (pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype)):
        values = sorted(set(map(str, pd.unique(col.dropna()))))[:6]  # ('0' and 0: one)
        raise CLIError(f"label column {label!r} is not numeric (dtype {col.dtype}, values like "
                       f"{', '.join(repr(v) for v in values)}; e.g. "
                       f"{first_non_numeric(col.to_numpy(dtype=object))}); say which value is "
                       f"the positive class with --positive VALUE")
    return None


# --------------------------------------------------------------------------- commands

def _say(args, text: str) -> None:
    if not args.quiet:
        # (no line breaks kept: a message holds none of its own, and one in a name or a path
        # would forge a line of its own: found by review)
        print(terminal_text(text), file=sys.stderr)


def _is_fastbias_report(path: str) -> bool:
    """Whether ``path`` is a regular file that an earlier fastbias wrote as its HTML report
    (opened without waiting and looked at only if regular: opening a FIFO would wait for a
    writer forever, found by review; a link is not followed)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        handle = os.fdopen(os.open(path, flags), "rb")
    except OSError:
        return False
    with handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return False
        head = handle.read(1 << 16)
        handle.seek(max(0, info.st_size - 4096))
        tail = handle.read()
    return head.startswith(b"<!DOCTYPE html>") and b"<footer>fastbias " in tail


def _thresholds_csv_path(path: str) -> str:
    """Where a ``.csv`` output's threshold metrics go: ``report.csv`` -> ``report.thresholds.csv``."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.thresholds{ext}"


def _check_outputs(paths, inputs=(), force: bool = False, replaceable=(),
                   thresholds: bool = False) -> list:
    """Every ``--out`` checked before any work: known extension, an existing writable folder,
    not a directory, not a symbolic link, not an input file (``inputs``: ``(path, what it is)``
    pairs), not named twice, and not an
    existing file unless ``force`` (or one of ``replaceable`` holding an earlier fastbias
    HTML report: the demo's default output). With ``thresholds`` each ``.csv`` output brings
    a second one, its threshold metrics (:func:`_thresholds_csv_path`), checked the same way.
    Returns ``[(path, format)]``."""
    outputs = []
    seen = set()
    for path in paths or []:
        ext = os.path.splitext(path)[1].lower()
        if ext not in _OUTPUT_FORMATS:
            raise CLIError(f"--out {path!r}: unknown extension {ext or '(none)'!r}; use .html, "
                           f".csv or .json")
        _check_output(path, inputs, force, replaceable, seen)
        outputs.append((path, _OUTPUT_FORMATS[ext]))
        if thresholds and _OUTPUT_FORMATS[ext] == "csv":
            sibling = _thresholds_csv_path(path)
            _check_output(sibling, inputs, force, (), seen,
                          f"--out {path!r} with --thresholds also writes {sibling!r}, which")
            outputs.append((sibling, "thresholds-csv"))
    return outputs


def _check_output(path: str, inputs, force: bool, replaceable, seen: set,
                  what: str | None = None) -> None:
    """One output path (see :func:`_check_outputs`); ``what`` starts the messages (default
    ``--out 'path'``)."""
    what = what or f"--out {path!r}"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CLIError(f"{what}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CLIError(f"{what}: folder {folder!r} is not writable")
    if os.path.islink(path):
        raise CLIError(f"{what} is a symbolic link; fastbias does not write through "
                       f"links: give the path of a regular file")
    if os.path.isdir(path):
        raise CLIError(f"{what} is a directory; give a file name")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CLIError(f"{what} exists and is not writable")
    for data, input_name in inputs:
        if os.path.exists(path) and os.path.exists(data) and os.path.samefile(path, data):
            raise CLIError(f"{what} is {input_name}; writing the report there would destroy "
                           f"it")
    if os.path.exists(path) and not force and not (
            path in replaceable and _is_fastbias_report(path)):
        raise CLIError(f"{what} already exists; pass --force to replace it")
    real = os.path.realpath(path)
    if real in seen:
        raise CLIError(f"{what} is given twice")
    seen.add(real)


def _run_evaluate(df, args, progress, subgroups, scores, label, pos_label=None):
    import fastbias

    # (--confidence and --min-subgroup-size always, as the streamed path passes them: the
    # threshold metrics' intervals and the sensitive features' combinations use them too;
    # found by review, both were dropped without --ci/--significance or --intersections)
    kwargs = dict(label=label, scores=scores, subgroups=subgroups,
                  label_threshold=args.label_threshold,
                  subgroup_threshold=args.subgroup_threshold,
                  missing_subgroup=args.missing_subgroup, confidence=args.confidence,
                  min_subgroup_size=args.min_subgroup_size)
    if pos_label is not None:
        kwargs["pos_label"] = pos_label
    if args.ci is not None:
        kwargs.update(ci=args.ci, n_boot=args.n_boot, random_state=args.seed)
    if getattr(args, "weight", None):
        kwargs["sample_weight"] = args.weight
    if getattr(args, "nan_policy", "raise") != "raise":
        kwargs["nan_policy"] = args.nan_policy
    what = f"evaluating {len(scores)} model(s) x {len(subgroups)} subgroups"
    if getattr(args, "thresholds", None):
        kwargs.update(thresholds=args.thresholds, gap_interval=args.gap_interval)
    if getattr(args, "sensitive_features", None):
        kwargs["sensitive_features"] = args.sensitive_features
        what += (f" and the values of {len(args.sensitive_features)} sensitive feature(s)"
                 if subgroups else "")
        if not subgroups:
            what = (f"evaluating {len(scores)} model(s) x the values of "
                    f"{len(args.sensitive_features)} sensitive feature(s)")
    if getattr(args, "significance", None):
        kwargs["significance"] = args.significance
    if args.intersections is not None:
        kwargs["intersections"] = args.intersections
        what += " and their intersections"
    if args.ci == "bootstrap":
        what += f" with {args.n_boot} bootstrap replicates"
    elif args.ci:
        what += f" with {args.ci} intervals"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with progress.ticking(what):
            try:
                result = fastbias.evaluate(df, **kwargs)
            except ModuleNotFoundError as exc:
                if args.ci and "interval" in str(exc):
                    raise CLIError(f"--ci {args.ci}: this installation of fastbias has no "
                                   f"interval support ({exc})") from None
                raise
    _say_undefined(args, caught)
    return result


def _save(report, path: str, fmt: str, csv_raw: bool = False) -> None:
    try:
        report.save(path, fmt=fmt, csv_raw=csv_raw)
    except OSError as exc:
        raise CLIError(f"cannot write --out {path!r}: {exc.strerror or exc}") from None


def _write_outputs(report, outputs, args) -> None:
    for path, fmt in outputs:
        start = time.perf_counter()
        _save(report, path, fmt, getattr(args, "csv_raw", False))
        kind = {"html": "HTML report", "csv": "CSV table", "json": "JSON",
                "thresholds-csv": "CSV of the threshold metrics"}[fmt]
        note = ""
        if fmt == "html":
            from .reports.report import _matplotlib_available

            if not _matplotlib_available():
                note = " without figures (matplotlib missing: pip install 'fastbias[plot]')"
        _say(args, f"wrote {path} ({kind}, {os.path.getsize(path) / 1024:,.0f} KiB, "
                   f"{time.perf_counter() - start:.1f} s){note}")


#: the most characters ``--subgroups-file`` may hold, and one name in it
NAMES_FILE_LIMIT = 16 * 2 ** 20
NAME_LIMIT = 4096


def _short(name, limit: int = 80) -> str:
    """``repr`` of a name for a message, its first ``limit`` characters where it is longer
    (a hostile name of megabytes must not become a message of megabytes)."""
    text = str(name)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text):,} characters)"


def _subgroups_from_file(path: str, args=None) -> list:
    """``--subgroups-file``: one column name per line, blank lines skipped. A name with
    surrounding whitespace is the column of that name as written where the data (``args``)
    has one, else the name stripped; both in the data is an error (a review found 'g2 '
    read as the column 'g2', silently)."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:  # (a BOM, as Notepad)
            text = handle.read(NAMES_FILE_LIMIT + 1)  # (bounded: /dev/zero, a FIFO, a huge file)
    except OSError as exc:
        raise CLIError(f"--subgroups-file {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CLIError(f"--subgroups-file {path!r} is not UTF-8 text") from None
    if len(text) > NAMES_FILE_LIMIT:
        raise CLIError(f"--subgroups-file {path!r} is longer than {NAMES_FILE_LIMIT:,} "
                       f"characters: not a list of column names")
    lines = [line for line in re.split(r"\r\n|\r|\n", text)  # (universal newlines)
             if line.strip()]
    long = next((line for line in lines if len(line) > NAME_LIMIT), None)
    if long is not None:  # (bounded: each name is looked up, and shown in messages)
        raise CLIError(f"--subgroups-file {path!r} has a line of {len(long):,} characters, "
                       f"starting {_short(long)}: not a column name (at most "
                       f"{NAME_LIMIT:,} characters)")
    padded = [line for line in lines if line != line.strip()]
    header = set()
    if padded and args is not None:
        header = set(read_header(args.data, input_format=args.input_format, sep=args.sep,
                                 wanted=[*padded, *(line.strip() for line in padded)]))
    names = []
    for line in lines:
        name = line.strip()
        if line != name and line in header:
            if name in header:
                raise CLIError(f"--subgroups-file {path!r} names {line!r}, and the data has "
                               f"both a column {line!r} and a column {name!r}: rename one")
            name = line
        names.append(name)
    if not names:
        raise CLIError(f"--subgroups-file {path!r} names no column (one name per line)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise CLIError(f"--subgroups-file {path!r} names {repeated} more than once")
    return names


def _boolean_columns(args, progress) -> list:
    """``--subgroups-all-boolean``: the columns holding only booleans or 0/1 (missing values
    aside), other than the label, scores and weight, in file order. Reads the file in
    batches, so memory stays bounded however long it is."""
    import pandas as pd

    # (a sensitive feature is already one subgroup per value: not an identity column too,
    # which would count its tests twice)
    taken = {args.label, *args.scores, *([args.weight] if args.weight else []),
             *(args.sensitive_features or ())}
    candidates = [c for c in read_header(args.data, input_format=args.input_format, sep=args.sep)
                  if c not in taken]
    fmt, compression, sep = _file_format(args.data, args.input_format, args.sep)
    # JSON lines: a line may leave out a key (the first line too); every key some line has
    # is a candidate, the lines without it missing values
    every_key = fmt == "jsonl"
    if not candidates and not every_key:
        raise CLIError("--subgroups-all-boolean: the file has no column besides the label, "
                       "scores and weight")
    still, seen = list(candidates), set()
    line_bytes = 0 if fmt == "parquet" else _reading(
        args.data, lambda: record_bytes(args.data, compression, fmt == "csv", sep=sep))
    batch_rows = max(1_000, _rows_per_batch(_data_budget(_memory_limit(args)),
                                            16 * len(candidates), line_bytes))

    def scan():
        # (a column of large integers is no 0/1 column, rounded or not: not refused here)
        for frame, _ in _batches(args.data, None if every_key else candidates, fmt,
                                 compression, sep, batch_rows, progress, check_rounded=False):
            for name in frame.columns if every_key else ():
                if name not in taken and name not in candidates:  # a key first seen here
                    candidates.append(name)
                    still.append(name)
            _coerce_object_flags(frame, [c for c in still if c in frame])
            for name in [c for c in still if c in frame]:
                column = frame[name]
                values = column.dropna()
                if pd.api.types.is_bool_dtype(column.dtype) or (
                        pd.api.types.is_numeric_dtype(column.dtype)
                        and values.isin([0, 1]).all()):
                    if len(values):
                        seen.add(name)
                else:
                    still.remove(name)
        progress.clear()

    _reading(args.data, scan)
    if not candidates:
        raise CLIError("--subgroups-all-boolean: the file has no column besides the label, "
                       "scores and weight")
    chosen = [name for name in still if name in seen]
    if not chosen:
        raise CLIError(f"--subgroups-all-boolean: no column holds only booleans or 0/1 (columns: "
                       f"{', '.join(candidates[:20])}); name the identity columns with "
                       f"--subgroups")
    return chosen


#: the default --max-memory: this share of the memory available when the run starts
MEMORY_SHARE = 0.5
#: histogram bins of the report's score distributions
HISTOGRAM_BINS = 40


def _proc_bytes(path: str, field: str) -> int | None:
    """A ``field:  N kB`` line of a Linux /proc file as bytes, or None where unknown."""
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _available_memory() -> int | None:
    """Bytes of memory available now (Linux: MemAvailable), or None where unknown."""
    available = _proc_bytes("/proc/meminfo", "MemAvailable")
    if available is not None:
        return available
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


#: memory the kernels take once loaded or compiled on first use (measured: about 65 MiB)
KERNEL_RESERVE = 128 * 2 ** 20


def _resident_memory() -> int:
    """Bytes this process holds now (Linux /proc/self/statm; elsewhere its peak so far)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        pass
    try:
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    except (ImportError, OSError):
        return 0


def _memory_limit(args) -> int:
    """The whole run's memory: --max-memory, or a share of what is available to this
    process: of the machine's memory, and of what its own limits leave (an address-space
    rlimit, a cgroup's memory limit: found by review, a file read in memory under
    ``prlimit --as`` failed to allocate where streaming would have run)."""
    if args.max_memory is not None:
        return args.max_memory
    available = _available_memory()
    limit = int(MEMORY_SHARE * available) if available else 4 * 2 ** 30
    headroom = _process_headroom()
    if headroom is not None:
        limit = min(limit, _resident_memory() + int(MEMORY_SHARE * headroom))
    return limit


#: a limit at or above this is none (the kernel's "max", 2**63 rounded to pages)
NO_LIMIT = 2 ** 60


def _process_headroom() -> int | None:
    """Bytes this process may still take under its own limits: its address-space rlimit less
    its address space, its cgroup's memory limit less the cgroup's use (v2 or v1); None where
    neither limits it."""
    found = []
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY and 0 < soft < NO_LIMIT:
            found.append(max(0, soft - _address_space()))
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    cgroup = _cgroup_headroom()
    if cgroup is not None:
        found.append(cgroup)
    return min(found) if found else None


def _address_space() -> int:
    """Bytes of address space this process maps now (Linux: VmSize), 0 where unknown."""
    return _proc_bytes("/proc/self/status", "VmSize") or 0


def _cgroup_headroom() -> int | None:
    """The least that the memory limits of this process's cgroup and its ancestors leave (each
    limit less its cgroup's use: the kernel holds a process to the tightest), from Linux
    cgroup v2 ``memory.max``/``memory.current`` or v1 ``memory.limit_in_bytes``/
    ``usage_in_bytes``; None where none limits it or none can be read. The walk up reaches
    the mount's own root too, which in a container without a cgroup namespace is the
    container's cgroup though /proc/self/cgroup names a path outside it (found by review:
    only the process's own cgroup was read)."""
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    places = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            places.append(("/sys/fs/cgroup", parts[2], "memory.max", "memory.current"))
        elif "memory" in parts[1].split(","):
            places.append(("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes",
                           "memory.usage_in_bytes"))
    found = []
    for root, path, limit_name, usage_name in places:
        names = [name for name in path.split("/") if name and name not in (".", "..")]
        for depth in range(len(names), -1, -1):  # (the cgroup, its parents, the root)
            folder = os.path.join(root, *names[:depth])
            try:
                with open(os.path.join(folder, limit_name), encoding="ascii") as handle:
                    text = handle.read().strip()
                if text == "max" or int(text) >= NO_LIMIT:
                    continue
                with open(os.path.join(folder, usage_name), encoding="ascii") as handle:
                    used = int(handle.read().strip())
                found.append(max(0, int(text) - used))
            except (OSError, ValueError):
                continue
    return min(found) if found else None


def _data_budget(limit: int) -> int:
    """Bytes left for the data under ``limit``: what the program already holds and the
    kernels' reserve taken off."""
    return max(0, limit - _resident_memory() - KERNEL_RESERVE)


def _row_bytes(args, n_columns: int) -> int:
    """Bytes per row that reading and evaluating in memory hold at their peak: the label,
    score and weight columns as read and once more while the batches are joined, the
    identity columns as compact memberships (2 bytes, twice), the sort and sweep per model,
    the membership codes (an upper estimate; benchmarks/RESULTS.md)."""
    models, groups = len(args.scores), len(args.subgroups)
    cost = 16 * (n_columns - groups) + 4 * groups + 48 * models + 4 * groups
    if args.ci or args.significance:
        cost += 48 * models
    if args.intersections:
        cost += 8 * groups
    if args.sensitive_features:  # text as Python strings, then a code per row and value
        cost += 80 * len(args.sensitive_features)
    if args.positive is not None:
        cost += 64  # text labels are Python strings
    return cost


#: pandas holds about this many times a record's text while it parses a batch
PARSE_FACTOR = 3


def _rows_per_batch(budget: int, column_bytes: int, line_bytes: int = 0) -> int:
    """The rows a batch may hold within a quarter of ``budget``: ``column_bytes`` a row for
    the columns kept, and ``PARSE_FACTOR`` times ``line_bytes`` (a text record, the columns
    dropped included) for the parser; at most CSV_CHUNK_ROWS."""
    rows = min(CSV_CHUNK_ROWS, budget // 4 // max(1, column_bytes))
    if line_bytes:
        rows = min(rows, budget // 4 // (PARSE_FACTOR * line_bytes))
    return int(rows)


def _streaming_settings(args, budget: int, n_columns: int, line_bytes: int = 0) -> tuple:
    """``(batch_rows, bucket_rows)`` that keep the streaming path within ``budget`` bytes: a
    quarter for a batch being read and encoded (by the columns kept, and by the text the
    parser holds: ``line_bytes`` a record, the columns not read included), half for the
    buckets swept at once."""
    from .streaming import sample_memory

    n_jobs = os.cpu_count() or 1
    budget -= sample_memory(len(args.scores))  # the first pass's score samples
    batch_rows = _rows_per_batch(budget, 16 * n_columns + 64, line_bytes)
    record = (8 + 1 + len(args.subgroups) + (8 if args.weight else 0))
    bucket_rows = min(4_000_000, budget // 2 // n_jobs // (3 * record + 48))
    if batch_rows < 1_000 or bucket_rows < 10_000:
        least = (max(_least_budget(n_columns, record, n_jobs),
                     4 * 1_000 * PARSE_FACTOR * line_bytes)
                 + _resident_memory() + KERNEL_RESERVE + sample_memory(len(args.scores)))
        raise CLIError(f"--max-memory is too small to stream this data ({n_columns} columns, "
                       f"{n_jobs} threads, {_bytes_text(_resident_memory())} taken by the "
                       f"program itself); give at least {_bytes_text(least)}")
    return int(batch_rows), int(bucket_rows)


def _least_budget(n_columns: int, record: int, n_jobs: int) -> int:
    return max(4 * 1_000 * (16 * n_columns + 64), 2 * n_jobs * 10_000 * (3 * record + 48))


def _bytes_text(n: float) -> str:
    for unit, size in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def _check_streamable(args, over: "_OverBudget", limit: int, budget: int) -> None:
    """A CLIError when an option asked for needs the rows in memory (streaming makes DeLong's
    and Bernstein's intervals, not the bootstrap's)."""
    asked = ["--ci bootstrap"] if args.ci == "bootstrap" else []
    if args.nan_policy != "raise":
        asked.append("--nan-policy omit")
    if asked:
        program = (f"the program itself ({_bytes_text(_resident_memory())}, and "
                   f"{_bytes_text(KERNEL_RESERVE)} kept for its kernels)")
        room = (f"more than the {_bytes_text(budget)} that --max-memory ({_bytes_text(limit)}) "
                f"leaves for data beside {program}" if budget else
                f"and --max-memory ({_bytes_text(limit)}) leaves nothing for data beside "
                f"{program}")
        raise CLIError(f"{args.data!r} holds {over.rows_text()} rows, which need about "
                       f"{_bytes_text(over.rows * over.row_bytes)} in memory, {room}; such "
                       f"data is evaluated by "
                       f"streaming (exact, in bounded memory), which does not do "
                       f"{', '.join(asked)}. Drop {'it' if len(asked) == 1 else 'them'}, or "
                       f"raise --max-memory if the machine has the memory")


def _passes_text(args) -> str:
    """How many times streaming reads the file: scores, then all columns, and one more pass
    each for --intersections and --sensitive-features."""
    n = 2 + (args.intersections is not None) + bool(args.sensitive_features)
    return {2: "two", 3: "three", 4: "four"}[n]


def _streamed_pos_label(args, first_frame, fmt: str):
    """The label value ``--positive`` names under streaming (None without it), in the type of
    the label column's first rows (``first_frame``); a text label without ``--positive`` is
    refused before a pass over the file. The library then checks every batch's values: at
    most two, the positive one among them (``LabelClasses``)."""
    import pandas as pd

    _coerce_object_flags(first_frame, [args.label])
    _label_numbers(first_frame, args, fmt)
    column = first_frame[args.label]
    _refuse_mixed_label(column, args.label)
    positive = args.positive
    if pd.api.types.is_bool_dtype(column.dtype):
        if positive is None:
            return None
        if positive.lower() not in ("true", "false"):
            raise CLIError(f"--positive {positive!r}: label column {args.label!r} holds "
                           f"booleans (true/false)")
        return positive.lower() == "true"
    if pd.api.types.is_numeric_dtype(column.dtype):
        if positive is None:
            return None
        try:
            number = float(positive)
        except ValueError:
            raise CLIError(f"--positive {positive!r} is not a number, and label column "
                           f"{args.label!r} holds numbers") from None
        # (in the column's type, as the report made in memory states it: 1, not 1.0)
        integral = pd.api.types.is_integer_dtype(column.dtype) and number.is_integer()
        return int(number) if integral else number
    if positive is None:
        values = sorted(map(str, pd.unique(column.dropna())))[:6]
        raise CLIError(f"label column {args.label!r} is not numeric (values like "
                       f"{', '.join(repr(v) for v in values)}); say which value is the "
                       f"positive class with --positive VALUE")
    # (a number --positive names the class as the file writes it: "1.0" for --positive 1)
    values = pd.unique(column.dropna())
    at = _positive_at(values, positive)
    return values[at[0]] if len(at) == 1 else positive


def _run_streaming(args, progress, limit: int):
    """Evaluate the file by streaming within ``limit`` bytes in all;
    ``(EvaluationResult, ScoreHistograms)``."""
    import numpy as np

    from .streaming import stream_evaluate
    from .tables.result import checked_extras
    from .validate.parquet import iter_batches, open_parquet
    from .validate.spec import column_spec
    from .validate.textfile import open_text_source

    fmt, compression, sep = _file_format(args.data, args.input_format, args.sep)
    options = dict(label=args.label, scores=args.scores, subgroups=args.subgroups,
                   label_threshold=args.label_threshold,
                   subgroup_threshold=args.subgroup_threshold,
                   missing_subgroup=args.missing_subgroup, sample_weight=args.weight,
                   sensitive_features=args.sensitive_features)
    n_columns = len({args.label, *args.scores, *args.subgroups,
                     *([args.weight] if args.weight else []), *(args.sensitive_features or [])})
    line_bytes = 0 if fmt == "parquet" else record_bytes(args.data, compression, fmt == "csv",
                                                         sep=sep)
    batch_rows, bucket_rows = _streaming_settings(args, _data_budget(limit), n_columns,
                                                  line_bytes)
    name = os.path.basename(args.data)
    passes = {"n": 0, "of": {"two": 2, "three": 3, "four": 4}[_passes_text(args)]}

    def show(done, rows, projected=None):
        progress.update(f"streaming {name} (pass {passes['n']} of {passes['of']}): "
                        f"{done:4.0%} ({rows:,} rows)")

    if fmt == "parquet":
        # (any pos_label skips the footers' check of labels in [0, 1]; the value is set next)
        spec, parquet = open_parquet(args.data, **options, pos_label=args.positive)
        n_rows, dtypes = parquet.n_rows, parquet.score_dtypes
        spec = dataclasses.replace(
            spec, pos_label=_streamed_pos_label(args, parquet.empty_frame(), fmt))

        def read(columns):
            passes["n"] += 1
            progress.step(f"streaming {name} (pass {passes['n']} of {passes['of']})")
            done = 0
            for frame, where in iter_batches(parquet, columns, batch_rows):
                yield frame, where
                done += len(next(iter(frame.values())))
                show(done / max(n_rows, 1), done)
    else:
        source = open_text_source(args.data, fmt=fmt, compression=compression, sep=sep,
                                  wanted=[args.label, *args.scores, *args.subgroups,
                                          *([args.weight] if args.weight else []),
                                          *(args.sensitive_features or [])])
        reading = _column_reading(args, fmt)
        pos_label = args.positive  # (a file without rows: refused as such later)
        for frame, _ in iter_text_batches(source, [args.label], 1_000, reading=reading):
            pos_label = _streamed_pos_label(args, frame, fmt)
            break
        spec = column_spec(source.names, **options, source=f"the data file {args.data}",
                           pos_label=pos_label)
        n_rows, dtypes = None, [np.dtype(np.float64)] * len(spec.models)

        def read(columns):
            passes["n"] += 1
            progress.step(f"streaming {name} (pass {passes['n']} of {passes['of']})")
            yield from iter_text_batches(source, columns, batch_rows, progress=show,
                                         reading=reading)

    spec = dataclasses.replace(spec, intersections=args.intersections,
                               min_subgroup_size=args.min_subgroup_size,
                               **checked_extras(args.significance, args.confidence,
                                                args.thresholds, gap_interval=args.gap_interval,
                                                ci=args.ci))

    def prepare(frame):  # a pass may read only some of the columns
        _coerce_object_flags(frame, [c for c in _flag_columns(args) if c in frame])
        _label_numbers(frame, args, fmt)
        return frame

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result, histograms = stream_evaluate(
            spec, read, dtypes, n_rows=n_rows, bucket_rows=bucket_rows, n_jobs=None,
            temp_dir=args.temp_dir, histogram_bins=HISTOGRAM_BINS, prepare=prepare)
    progress.clear()
    _say_undefined(args, caught)
    return result, histograms


def _say_undefined(args, caught) -> None:
    import fastbias
    from fastbias.validate.errors import (
        NoSubgroupWarning,
        OmittedRowsWarning,
        WeightOverflowWarning,
    )

    # (and the rows nan_policy="omit" dropped, and cells' weights past the largest double:
    # found by review, both unsaid)
    for w in caught:
        if issubclass(w.category, (fastbias.UndefinedMetricWarning, OmittedRowsWarning,
                                   NoSubgroupWarning, WeightOverflowWarning)):
            # (options named as options, as in errors: found by review)
            _say(args, f"fastbias: warning: {_in_cli_terms(str(w.message), bare_words=False)}")


#: the bootstrap's replicates where --n-boot is not given
DEFAULT_N_BOOT = 1000


def _check_unused_options(args, report: bool) -> None:
    """Options that the run would not use are usage errors (found by review: --n-boot beside
    --ci delong, --seed of a report without a bootstrap and --min-subgroup-size without
    intersections or sensitive features were dropped without a word; so was --label-threshold
    0.5 beside --positive); then the defaults of those not given."""
    bootstrap = args.ci == "bootstrap"
    if args.n_boot is not None and not bootstrap:
        raise CLIError(f"--n-boot is the number of bootstrap replicates; it needs --ci bootstrap"
                       f" (got {'no --ci' if args.ci is None else '--ci ' + args.ci})")
    if report and args.seed is not None and not bootstrap:
        raise CLIError("--seed is the seed of the bootstrap; it needs --ci bootstrap")
    if args.min_subgroup_size is not None and args.intersections is None and \
            not getattr(args, "sensitive_features", None):
        raise CLIError("--min-subgroup-size is the size an intersection or a combination of "
                       "sensitive features needs; it needs --intersections or "
                       "--sensitive-features")
    positive = getattr(args, "positive", None)
    if positive is not None and args.label_threshold is not None:
        # (0.5 too: the library cannot tell it from its default; found by review)
        raise CLIError(f"pass either --positive or --label-threshold, not both (got --positive "
                       f"{positive} and --label-threshold {args.label_threshold}): with a "
                       f"positive class the label column is not thresholded")
    if args.label_threshold is None and positive is None:
        args.label_threshold = DEFAULT_LABEL_THRESHOLD
    if args.n_boot is None:
        args.n_boot = DEFAULT_N_BOOT
    if args.seed is None:
        args.seed = 0
    if args.min_subgroup_size is None:
        args.min_subgroup_size = 1


def cmd_report(args) -> int:
    from .report import BiasReport

    inputs = [(args.data, "the input data file")]
    if args.subgroups_file is not None:
        inputs.append((args.subgroups_file, "the --subgroups-file"))
    outputs = _check_outputs(args.out, inputs=inputs, force=args.force,
                             thresholds=bool(args.thresholds))
    if args.temp_dir is not None and not os.path.isdir(args.temp_dir):
        raise CLIError(f"--temp-dir {args.temp_dir!r} is not an existing directory")
    _file_format(args.data, args.input_format, args.sep)  # (--sep of a Parquet file refused)
    _check_unused_options(args, report=True)
    progress = _progress(args)
    if args.subgroups_file is not None:
        args.subgroups = _subgroups_from_file(args.subgroups_file, args)
    elif args.subgroups_all_boolean:
        args.subgroups = _boolean_columns(args, progress)
    elif args.subgroups is None:
        if not args.sensitive_features:
            raise CLIError("give the identity columns: --subgroups, --subgroups-file, "
                           "--subgroups-all-boolean or --sensitive-features")
        args.subgroups = []
    if args.gap_interval is not None and not args.thresholds:
        raise CLIError("--gap-interval needs --thresholds (the thresholds whose gaps it bounds)")
    if args.report_threshold is not None:
        if not args.thresholds:
            raise CLIError("--report-threshold needs --thresholds (the thresholds to evaluate)")
        if args.report_threshold not in args.thresholds:
            args.thresholds = [*args.thresholds, args.report_threshold]
    wanted = {"--label": [args.label], "--scores": args.scores,
              "--subgroups-file" if args.subgroups_file is not None else "--subgroups":
                  args.subgroups}
    if args.sensitive_features:
        wanted["--sensitive-features"] = args.sensitive_features
    if args.weight:
        wanted["--weight"] = [args.weight]
    columns = _columns_of(wanted)
    limit = _memory_limit(args)
    budget = _data_budget(limit)
    timings = {}
    start = time.perf_counter()
    title = args.title or f"fastbias report: {os.path.basename(args.data)}"
    # a missing file or column is one error line, before any step is announced
    _check_columns(read_header(args.data, input_format=args.input_format, sep=args.sep,
                               wanted=columns), wanted)
    progress.step(f"reading {os.path.basename(args.data)}")
    over = None
    fmt = _file_format(args.data, args.input_format, args.sep)[0]
    try:
        df = read_data(args.data, columns, input_format=args.input_format, sep=args.sep,
                       progress=progress, wanted=wanted, max_bytes=budget,
                       row_bytes=_row_bytes(args, len(columns)),
                       reading=_column_reading(args, fmt),
                       prepare=lambda frame: _kept_batch(frame, args, fmt))
    except _OverBudget as exc:  # stream outside this block: its traceback holds the rows read
        over = _OverBudget(exc.rows, exc.row_bytes, exc.exact, exc.projected)
    if over is not None:
        _check_streamable(args, over, limit, budget)
        _say(args, f"{args.data} needs more than --max-memory ({_bytes_text(limit)}) in "
                   f"memory: streaming it ({_passes_text(args)} passes "
                   f"over the file, spill files under "
                   f"{args.temp_dir or 'the temporary directory'})")
        result, histograms = _reading(args.data, lambda: _run_streaming(args, progress, limit))
        timings["read and evaluate (streaming)"] = time.perf_counter() - start
        start = time.perf_counter()
        report = BiasReport(result=result, histograms=histograms, title=title,
                            source=os.path.abspath(args.data))
    else:
        timings["read data"] = time.perf_counter() - start
        if len(df) == 0:
            raise CLIError(f"data file {args.data!r} has no rows")
        _coerce_object_flags(df, _flag_columns(args))
        pos_label = _prepare_label(df, args.label, args.positive)
        start = time.perf_counter()
        result = _run_evaluate(df, args, progress, args.subgroups, args.scores, args.label,
                               pos_label=pos_label)
        timings["evaluate"] = time.perf_counter() - start
        start = time.perf_counter()
        report = BiasReport.from_result(df, result, title=title,
                                        source=os.path.abspath(args.data),
                                        sample_weight=args.weight)
        del df
    report.timings = timings
    report.threshold = args.report_threshold
    print(report.to_text(max_subgroups=args.top, width=None if args.wide else TABLE_WIDTH))
    _write_outputs(report, outputs, args)
    timings["report"] = time.perf_counter() - start
    _say(args, "time: " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))
    return 0


def cmd_demo(args) -> int:
    import numpy as np

    from .report import BiasReport
    from .reports.report import _matplotlib_available
    from .synthetic import JIGSAW_IDENTITIES, make_jigsaw_like

    if args.rows < 100:
        raise CLIError(f"--rows must be at least 100, got {args.rows}")
    if not 1 <= args.identities <= 200:
        raise CLIError(f"--identities must be between 1 and 200, got {args.identities}")
    outputs = _check_outputs(args.out or [DEMO_OUTPUT], force=args.force,
                             replaceable=[DEMO_OUTPUT])
    _check_unused_options(args, report=False)
    progress = _progress(args)
    timings = {}

    start = time.perf_counter()
    with progress.ticking(f"generating {args.rows:,} rows"):
        df = make_jigsaw_like(n_rows=args.rows, n_identities=args.identities,
                              random_state=args.seed)
    timings["generate data"] = time.perf_counter() - start
    identities = [c for c in df.columns if c in JIGSAW_IDENTITIES or c.startswith("identity_")]
    biased = identities[::2]
    models = ["model_fair", "model_biased"]

    # compile (or load the cached) kernels on the data itself (one untimed evaluation), so that
    # "evaluate" times the work
    start = time.perf_counter()
    with progress.ticking("compiling kernels"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import fastbias
        from fastbias.sweep.first_call import compiling_in_place, wait_until_compiled

        kwargs = {"ci": args.ci, "n_boot": 20} if args.ci else {}
        try:
            # the versions this data needs (its size chooses the sorts' kernels), compiled
            # here: not every version of every family in the background (3 times as long)
            with compiling_in_place():
                fastbias.evaluate(df, label="toxicity", scores=models, subgroups=identities,
                                  missing_subgroup=args.missing_subgroup, **kwargs)
            wait_until_compiled()  # (any compilation already under way in the background)
        except ModuleNotFoundError as exc:
            raise CLIError(f"--ci {args.ci}: this installation of fastbias has no interval "
                           f"support ({exc})") from None
    timings["compile kernels (first run only; cached)"] = time.perf_counter() - start

    start = time.perf_counter()
    result = _run_evaluate(df, args, progress, identities, models, "toxicity")
    timings[f"evaluate {len(models)} models x {len(identities)} subgroups"] = \
        time.perf_counter() - start

    start = time.perf_counter()
    report = BiasReport.from_result(df, result, title="fastbias demo: a Jigsaw-sized synthetic "
                                                      "data set",
                                    source=f"fastbias.make_jigsaw_like(n_rows={args.rows}, "
                                           f"n_identities={args.identities}, "
                                           f"random_state={args.seed}); model_biased scores "
                                           f"rows of {len(biased)} identities higher")
    timings["bin scores for the report"] = time.perf_counter() - start
    del df

    n_toxic = report.histograms.n_positives
    print(f"fastbias demo: {args.rows:,} rows ({n_toxic:,} toxic), {len(identities)} identity "
          f"columns, models {', '.join(models)}")
    print(f"model_biased scores the rows of {len(biased)} identities higher "
          f"({', '.join(biased[:4])}{', ...' if len(biased) > 4 else ''}): watch their BPSN AUC "
          f"and AEGs.\n")
    print(report.to_text(max_subgroups=args.top, width=None if args.wide else TABLE_WIDTH))
    print()

    start = time.perf_counter()
    report.timings = dict(timings)
    with progress.ticking("writing the report"):
        for path, fmt in outputs:
            _save(report, path, fmt)
    timings["write " + ", ".join(os.path.basename(p) for p, _ in outputs)] = \
        time.perf_counter() - start

    width = max(len(k) for k in timings)
    print("time per step")
    for step, seconds in timings.items():
        print(f"  {step.ljust(width)}  {seconds:7.2f} s")
    total = float(np.sum(list(timings.values())))
    print(f"  {'total'.ljust(width)}  {total:7.2f} s\n")
    for path, fmt in outputs:
        print(f"wrote {os.path.abspath(path)}")
    if any(fmt == "html" for _, fmt in outputs) and not _matplotlib_available():
        print("note: matplotlib is not installed, so the HTML report has tables but no figures; "
              "pip install 'fastbias[plot]' for the heatmaps and score distributions")
    return 0


# --------------------------------------------------------------------------- argument parsing

def _argument(convert, kind: str, valid, rule: str):
    """An argparse ``type``: ``convert(text)``, refused unless ``valid(value)`` (message ``rule``,
    formatted with ``text`` and ``value``)."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {kind}: {text!r}") from None
        if not valid(value):
            raise argparse.ArgumentTypeError(rule.format(text=text, value=value))
        return value
    return parse


_probability = _argument(float, "a number", lambda v: 0.0 < v < 1.0,
                         "must be between 0 and 1 (exclusive), got {text}")


def _float_of_text(text: str) -> float:
    """``float(text)``, refusing an integer that float64 would round (``9007199254740993``):
    a threshold is compared as float64, so the rounded one would silently be used."""
    value = float(text)
    try:
        exact = int(text.strip().replace("_", ""))
    except ValueError:
        return value  # (a decimal such as 0.7 means the float nearest it)
    if exact != value:
        raise argparse.ArgumentTypeError(f"{text!r} is not a float64 (it would become "
                                         f"{value!r}); thresholds are compared as float64")
    return value


_threshold = _argument(_float_of_text, "a number", lambda v: not math.isnan(v),
                       "must not be NaN")
# (a label or identity threshold makes the classes and members: finite, as in the library)
_finite_threshold = _argument(_float_of_text, "a number", math.isfinite,
                              "must be finite, got {text}")
_positive_int = _argument(lambda text: int(text.replace("_", "")), "an integer",
                          lambda v: v >= 1, "must be at least 1, got {value}")
_seed = _argument(int, "an integer", lambda v: v >= 0, "must be 0 or more, got {value}")
# (a tab typed as the two characters backslash, t, as Python writes it, is a tab)
_separator = _argument(lambda text: "\t" if text == "\\t" else text, "a separator",
                       lambda v: len(v) == 1 and v not in "\"\r\n",
                       "must be one character (a tab: --sep '\\t'), other than a quote or a "
                       "line break, got {text!r}")


_SIZE_UNITS = {"": 1, "B": 1, "K": 2 ** 10, "KB": 10 ** 3, "KIB": 2 ** 10, "M": 2 ** 20,
               "MB": 10 ** 6, "MIB": 2 ** 20, "G": 2 ** 30, "GB": 10 ** 9, "GIB": 2 ** 30,
               "T": 2 ** 40, "TB": 10 ** 12, "TIB": 2 ** 40}


def _parse_size(text: str) -> int:
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).upper() not in _SIZE_UNITS:
        raise ValueError(text)
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])


_memory_size = _argument(_parse_size, "a size such as 8G, 500M or 2.5GiB",
                         lambda v: v >= 2 ** 20, "must be at least 1M, got {text}")


def _add_common(parser) -> None:
    parser.add_argument("--label-threshold", type=_finite_threshold, default=None, metavar="T",
                        help="label >= T is positive (default 0.5)")
    parser.add_argument("--subgroup-threshold", type=_finite_threshold, default=0.5, metavar="T",
                        help="identity value >= T means member (default 0.5)")
    parser.add_argument("--missing-subgroup", choices=["background", "exclude"],
                        default="background",
                        help="what an unannotated (empty/NaN) identity value means: count the "
                             "row as background (default, as the Jigsaw competition did) or "
                             "exclude it from that subgroup's background")
    parser.add_argument("--ci", choices=["delong", "bootstrap", "bernstein"], default=None,
                        help="add confidence intervals computed by this method")
    parser.add_argument("--confidence", type=_probability, default=0.95, metavar="P",
                        help="confidence level of the intervals, and 1 - P the level of "
                             "--significance (default 0.95)")
    parser.add_argument("--n-boot", type=_positive_int, default=None, metavar="N",
                        help="bootstrap replicates for --ci bootstrap (default 1000)")
    parser.add_argument("--seed", type=_seed, default=None,
                        help="random seed of the bootstrap (default 0)")
    parser.add_argument("--intersections", type=int, choices=[2, 3], default=None,
                        help="also every pair (2), or pair and triple (3), of the subgroups "
                             "that occurs, named 'a & b'")
    parser.add_argument("--min-subgroup-size", type=_positive_int, default=None, metavar="N",
                        help="keep an intersection only with at least N rows of each class "
                             "(default 1)")
    parser.add_argument("--significance", choices=["holm", "bh"], default=None,
                        help="test every subgroup's metrics for 'no bias' (AUCs vs the overall "
                             "AUC, AEGs vs 0; DeLong, exact permutation tests for small cells) "
                             "and flag those significant after Holm or Benjamini-Hochberg "
                             "adjustment at level 1 - --confidence")
    parser.add_argument("--wide", action="store_true",
                        help=f"print each table in one piece however wide (default: wrapped to "
                             f"{TABLE_WIDTH} columns, the columns that do not fit continuing "
                             f"below)")
    parser.add_argument("--top", type=_positive_int, default=None, metavar="N",
                        help="print only the N worst subgroups (the files keep all)")
    parser.add_argument("--progress", choices=["auto", "always", "never"], default="auto",
                        help="progress display on stderr (default: only on a terminal)")
    parser.add_argument("--force", action="store_true",
                        help="replace --out files that already exist (never an input file)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress, notes or warnings on stderr")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors shown as the terminal should show them: an
    argument echoed there ("unrecognized arguments: ...") may be a name from the data, with
    escape sequences in it (found by review). Subcommands' parsers are of this class too."""

    def error(self, message):
        if re.search(r"argument (--label|--scores|--subgroups|--weight|--sensitive-features)"
                     r": expected (one|at least one) argument", message) \
                or re.search(r"unrecognized arguments: -[^-]", message):
            # (argparse takes "-m2" for an option: a column so named is given after "=")
            message += "; if a column's name starts with '-', give it after '=': --scores=-m2"
        super().error(terminal_text(message, keep_newlines=True))


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="fastbias",
        description="Exact unintended-bias metrics (Subgroup/BPSN/BNSP AUC, AEGs) of "
                    "classifiers, with reports.")
    parser.add_argument("--version", action="version", version=f"fastbias {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    report = commands.add_parser(
        "report", help="bias metrics of a data file: table on the terminal, HTML/CSV/JSON files",
        description="Evaluate score columns of a data file per subgroup, print an aligned table "
                    "and write the outputs named by --out (format by extension: .html, .csv, "
                    ".json).")
    report.add_argument("data", metavar="DATA",
                        help="CSV/TSV (optionally .gz/.bz2/.xz/.zip), Parquet or JSON-lines file")
    report.add_argument("--label", required=True, metavar="COL",
                        help="label column: 0/1, boolean, a fraction (see --label-threshold) or "
                             "text (see --positive)")
    report.add_argument("--scores", required=True, nargs="+", metavar="COL",
                        help="score column(s), one per model")
    which = report.add_mutually_exclusive_group()  # one of them, or --sensitive-features
    which.add_argument("--subgroups", nargs="+", metavar="COL",
                       help="identity columns: boolean or numeric (see --subgroup-threshold)")
    which.add_argument("--subgroups-file", metavar="FILE",
                       help="identity columns, one name per line (names with spaces such as "
                            "'african american' work; blank lines are skipped)")
    which.add_argument("--subgroups-all-boolean", action="store_true",
                       help="every column holding only booleans or 0/1 (missing values aside), "
                            "except the label, scores, weight and --sensitive-features")
    report.add_argument("--thresholds", nargs="+", type=_threshold, metavar="T", default=None,
                        help="also the positive rate, TPR, FPR, FNR and precision of every "
                             "subgroup and its background at these thresholds (score >= T), "
                             "their gaps and Wilson intervals: the gaps on the terminal, "
                             "figures in the HTML report, rows in the JSON report and, next to "
                             "each --out X.csv, in X.thresholds.csv")
    report.add_argument("--gap-interval", choices=["bernstein"], default=None,
                        help="with --thresholds: the Bernstein interval of each gap")
    report.add_argument("--report-threshold", type=_threshold, default=None, metavar="T",
                        help="with --thresholds: the one whose gaps the HTML report draws "
                             "(default: the one nearest 0.5; added to them if missing)")
    report.add_argument("--sensitive-features", nargs="+", metavar="COL", default=None,
                        help="categorical columns (e.g. race gender): one subgroup per value, "
                             "'race=black', and with several columns every combination of "
                             "values that occurs (at least --min-subgroup-size rows of each "
                             "class), 'race=black & gender=female'; with or instead of the "
                             "identity columns")
    report.add_argument("--out", action="append", metavar="FILE",
                        help="write the report here (.html, .csv or .json); may be repeated")
    report.add_argument("--positive", metavar="VALUE", default=None,
                        help="the label value of the positive class, for a text label column")
    report.add_argument("--weight", metavar="COL", default=None, help="sample weight column")
    report.add_argument("--nan-policy", choices=["raise", "omit"], default="raise",
                        help="rows with a missing label or weight or a NaN/infinite score: "
                             "stop with an error (default) or leave them out (per model for "
                             "scores; their count is said)")
    report.add_argument("--title", default=None, help="title of the HTML report")
    report.add_argument("--csv-raw", action="store_true",
                        help="write names into .csv outputs exactly as they are (by default a "
                             "name that a spreadsheet would run as a formula, starting with =, +, "
                             "-, @ or a tab, gets a ' in front, as does one starting with ')"),
    report.add_argument("--input-format", choices=["csv", "parquet", "jsonl"], default=None,
                        help="format of DATA when its extension does not say")
    report.add_argument("--sep", type=_separator, default=None,
                        help="CSV field separator, one character (default ',', TSV tab; "
                             "'\\t' is a tab)")
    report.add_argument("--max-memory", type=_memory_size, default=None, metavar="SIZE",
                        help="memory the run may use, e.g. 8G or 500M (default: half of the "
                             "memory available at the start). Data that would need more is "
                             "evaluated by streaming: exact, two passes over the file (three "
                             "with --intersections, one more with --sensitive-features), spill files "
                             "on disk; DeLong's and Bernstein's intervals and --positive as in "
                             "memory, no --ci bootstrap or --nan-policy omit")
    report.add_argument("--temp-dir", default=None, metavar="DIR",
                        help="where streaming writes its spill files (default: the system's "
                             "temporary directory)")
    _add_common(report)
    report.set_defaults(func=cmd_report)

    demo = commands.add_parser(
        "demo", help="evaluate a Jigsaw-sized synthetic data set and write an HTML report",
        description="Build the Jigsaw-sized synthetic data set (1.8M rows, 24 identities, a fair "
                    "and a biased model), evaluate it, print the table and the time of each "
                    "step, and write the report.")
    demo.add_argument("--rows", type=_positive_int, default=1_804_875, metavar="N",
                      help="rows to generate (default 1,804,875, the size of the Jigsaw data)")
    demo.add_argument("--identities", type=_positive_int, default=24, metavar="K",
                      help="identity columns (default 24)")
    demo.add_argument("--out", action="append", metavar="FILE",
                      help=f"report file(s) (.html, .csv, .json; default {DEMO_OUTPUT})")
    _add_common(demo)
    # (found by review: the help said the bootstrap's only; the demo's data follow it too)
    next(action for action in demo._actions if "--seed" in action.option_strings).help = \
        "random seed of the generated data and of the bootstrap (default 0)"
    demo.set_defaults(func=cmd_demo, top=10)
    return parser


_PYTHON_TO_CLI = [("pass pos_label", "pass --positive VALUE"),
                  ("pos_label", "--positive"),
                  ("label_threshold", "--label-threshold"),
                  ("subgroup_threshold", "--subgroup-threshold"),
                  ("pass a subgroup threshold", "pass --subgroup-threshold"),
                  ("missing_subgroup", "--missing-subgroup"),
                  ("random_state", "--seed"),
                  ("n_boot", "--n-boot"),
                  ("confidence", "--confidence"),
                  ("sample_weight column", "--weight column"),
                  ("sample_weight", "--weight")]


#: a name or value as a message shows it (its repr: quoted, not inside a word, one line)
_QUOTED = re.compile(r"""((?<!\w)'(?:[^'\\\n]|\\.)*'(?!\w)|(?<!\w)"(?:[^"\\\n]|\\.)*"(?!\w))""")


def _in_cli_terms(message: str, bare_words: bool = True) -> str:
    """Library error messages name Python arguments; say the command-line option instead.
    Names and values from the data (quoted, as reprs) are left as they are (found by review:
    a score column named 'confidence' was shown as '--confidence'). Without ``bare_words``
    (a warning, which may list names unquoted: a subgroup named 'n_boot' read '--n-boot')
    only the keyword forms (``ci='delong'``, ``nan_policy='omit'``) are said as options, and
    the message keeps its lines; else its white space is collapsed (an error's one line)."""
    # ci='delong' or 'bootstrap' -> --ci delong or --ci bootstrap (found by review)
    message = re.sub(r"(?<![\w-])ci='(\w+)'(?: or '(\w+)')?",
                     lambda m: f"--ci {m.group(1)}" + (f" or --ci {m.group(2)}" if m.group(2)
                                                       else ""), message)
    message = re.sub(r"pass it as sensitive_features=\[(['\"])(.*?)\1\]",
                     lambda m: f"pass it as --sensitive-features {m.group(2)}", message)
    # name='value' (a keyword argument as Python writes it) -> --name value
    message = re.sub(r"(?<![\w'\"-])(nan_policy|missing_subgroup)='(\w+)'",
                     lambda m: f"--{m.group(1).replace('_', '-')} {m.group(2)}", message)
    if not bare_words:
        return message
    parts = _QUOTED.split(message)
    for at in range(0, len(parts), 2):  # (the odd parts are the quoted ones)
        for python_words, cli_words in _PYTHON_TO_CLI:
            parts[at] = re.sub(rf"(?<![\w-]){re.escape(python_words)}(?!\w)", cli_words,
                               parts[at])
    return " ".join("".join(parts).split())


def main(argv=None) -> int:
    """Run the ``fastbias`` command line; returns the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 on an error in the data or files, 2 on a usage error.

    Examples
    --------
    >>> import os, tempfile
    >>> from fastbias.cli import main
    >>> out = os.path.join(tempfile.mkdtemp(), "demo.json")
    >>> main(["demo", "--rows", "20000", "--identities", "4", "--out", out,
    ...       "--quiet"])  # doctest: +ELLIPSIS
    fastbias demo: 20,000 rows ...
    0
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    notes = _notes_on_stderr(args)
    displays = open_displays()
    try:
        try:
            return args.func(args)
        finally:  # a status line an error left open is cleared before the error is printed
            close_displays(displays)
    except CLIError as exc:
        print(terminal_text(f"fastbias: error: {exc}"), file=sys.stderr)
    except BrokenPipeError as exc:
        if not _stdout_closed():  # (another pipe: an error like any other)
            print(terminal_text(f"fastbias: error: {exc}"), file=sys.stderr)
            return 1
        # the reader of the output left (``fastbias report ... | head``): stop without a
        # word, status 128 + SIGPIPE as a shell reports such a command; the output points at
        # /dev/null so that Python's flush at exit cannot fail on the pipe again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (KeyError, ValueError, TypeError, ImportError, OSError, MemoryError) as exc:
        # (a KeyError's message is its key, as given: a tuple key too, found by review)
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        message = message if isinstance(message, str) else repr(message)
        print(terminal_text(f"fastbias: error: {_in_cli_terms(message)}"),
              file=sys.stderr)
    except KeyboardInterrupt:
        print("fastbias: interrupted", file=sys.stderr)
        return 130
    finally:
        if notes is not None:
            logging.getLogger("fastbias").removeHandler(notes)
    return 1


def _stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader has left (poll says so: POLLERR)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):  # (no poll, or no real stdout)
        return False


def _notes_on_stderr(args):
    """Show the library's notes (logger ``"fastbias"``, INFO: e.g. "compiling kernels for
    first use (about N s, cached afterwards)") on stderr, unless ``--quiet``."""
    if getattr(args, "quiet", False):
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("fastbias: %(message)s"))
    handler.setLevel(logging.INFO)
    log = logging.getLogger("fastbias")
    log.addHandler(handler)
    if log.level == logging.NOTSET or log.level > logging.INFO:
        log.setLevel(logging.INFO)
    return handler


if __name__ == "__main__":
    sys.exit(main())
