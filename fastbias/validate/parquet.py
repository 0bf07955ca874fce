"""Parquet sources: which files, checked against each other before any work, read with names.

One home for the out-of-core paths (:mod:`fastbias.streaming` and
:mod:`fastbias.dask`):

* :func:`parquet_files` resolves a file, a directory, a glob pattern or a list of
  them, on the local disk or any filesystem pyarrow knows by URI (``s3://``,
  ``gs://``, ``hdfs://``);
* :func:`open_parquet` reads every file's footer on the caller's machine (no
  row data) and refuses, naming the file, what would fail or mislead later: a
  footer that cannot be read (truncated or not Parquet), a needed column that
  is absent, a label or score column whose type differs between two files
  (naming both), label statistics outside [0, 1];
* :func:`read_piece` and :func:`iter_batches` read rows and say which file and
  row groups failed when a page is corrupt.
"""
from __future__ import annotations

import decimal
import fnmatch
import functools
import inspect
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .columns import PieceWhere, from_foreign
from .spec import ColumnSpec, column_spec

_GLOB_CHARACTERS = "*?["


@dataclass(frozen=True)
class ParquetPiece:
    """Consecutive row groups of one file: one Dask partition, or a unit of reading."""

    path: str
    row_groups: tuple
    first_row: int
    n_rows: int

    def where(self) -> str:
        groups = (f"row group {self.row_groups[0]}" if len(self.row_groups) == 1 else
                  f"row groups {self.row_groups[0]}-{self.row_groups[-1]}")
        last = self.first_row + self.n_rows - 1
        return f"{groups} (rows {self.first_row}..{last}) of {self.path}"


@dataclass(frozen=True)
class ParquetSource:
    """Checked Parquet files: their filesystem, rows, row groups and score dtypes."""

    filesystem: object
    files: list
    rows_per_group: list
    #: numpy dtype of each model's scores: float32 only if every file stores float32 (or float16)
    score_dtypes: list
    #: the first file's schema, projected on the needed columns (the meta of a partition)
    schema: object

    @property
    def n_rows(self) -> int:
        return int(sum(sum(groups) for groups in self.rows_per_group))

    def pieces(self, max_rows: int) -> list:
        """Consecutive row groups of each file, at most ``max_rows`` rows a piece
        (one row group is never split), in file order."""
        out = []
        for path, groups in zip(self.files, self.rows_per_group):
            start, first, rows = 0, 0, 0
            for g, n in enumerate(groups):
                if rows and rows + n > max_rows:
                    out.append(ParquetPiece(path, tuple(range(start, g)), first, rows))
                    start, first, rows = g, first + rows, 0
                rows += n
            if rows:
                out.append(ParquetPiece(path, tuple(range(start, len(groups))), first, rows))
        return out

    def empty_frame(self) -> pd.DataFrame:
        """A frame with no rows and the columns and dtypes a piece reads as."""
        return self.schema.empty_table().to_pandas()


def _filesystem_of(location: str):
    from pyarrow import fs

    if "://" in location:
        return fs.FileSystem.from_uri(location)
    return fs.LocalFileSystem(), os.path.abspath(location)


#: names that Parquet readers (pyarrow's datasets, Dask, Spark) skip below a directory: an
#: uncommitted attempt (``_temporary/``), ``_SUCCESS``, ``_metadata``, hidden files
_SKIPPED_PREFIXES = (".", "_")


def _skipped(parts: list) -> bool:
    """Whether a path below a directory (its ``parts``) lies in a file or folder that Parquet
    readers skip (:data:`_SKIPPED_PREFIXES`)."""
    return any(part.startswith(_SKIPPED_PREFIXES) for part in parts)


def _glob_matches(parts: list, pattern: list) -> bool:
    """Whether the path ``parts`` match the glob ``pattern``'s parts as a shell matches them:
    a wildcard never crosses a ``/`` (``**`` alone stands for any number of folders), and a
    name starting with ``.`` or ``_`` is matched only by a part that starts so itself. Each
    (path part, pattern part) pair is weighed once (found by review: without it, patterns of
    several ``**`` took time exponential in them)."""

    @functools.lru_cache(maxsize=None)
    def match(i: int, j: int) -> bool:
        if j == len(pattern):
            return i == len(parts)
        head = pattern[j]
        if head == "**":  # (none of the folders it stands for skipped)
            return match(i, j + 1) or (i < len(parts) and not _skipped(parts[i:i + 1])
                                       and match(i + 1, j))
        if i == len(parts):
            return False
        name = parts[i]
        if name.startswith(_SKIPPED_PREFIXES) and not head.startswith(name[0]):
            return False
        return fnmatch.fnmatchcase(name, head) and match(i + 1, j + 1)

    return match(0, 0)


#: the most folders and files a directory or glob is walked through (links can make a
#: folder's files appear under many names: a walk past this is refused, not left short)
MOST_ENTRIES = 1_000_000


def _files_below(filesystem, base: str, skip: bool) -> list:
    """Every file below the directory ``base`` (full paths, sorted), a folder or file named
    ``.*`` or ``_*`` not entered or listed where ``skip``. On the local disk links are
    followed, but never into a folder that holds the link (a link back up: found by review,
    2 files were listed as 82); a file reached under several names is listed under each
    (the caller keeps one, :func:`_each_file_once`). Elsewhere pyarrow lists (object stores
    hold no links)."""
    from pyarrow import fs

    if not isinstance(filesystem, fs.LocalFileSystem):
        infos = filesystem.get_file_info(fs.FileSelector(base, recursive=True,
                                                         allow_not_found=True))
        return sorted(i.path for i in infos if i.type == fs.FileType.File
                      and not (skip and _skipped(i.path[len(base):].strip("/").split("/"))))
    files, entries = [], 0
    stack = [(base, frozenset([os.path.realpath(base)]))]
    while stack:
        folder, above = stack.pop()
        try:
            listing = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as error:  # (a folder that cannot be read is not passed over)
            raise OSError(f"cannot list the folder {folder!r} of the Parquet source: "
                          f"{error.strerror or error}") from None
        entries += len(listing)
        if entries > MOST_ENTRIES:
            raise ValueError(f"the Parquet source {base!r} holds more than {MOST_ENTRIES:,} "
                             f"files and folders (links may show folders again and again); "
                             f"give the files, or a narrower folder or pattern")
        below = []
        for entry in listing:
            if skip and entry.name.startswith(_SKIPPED_PREFIXES):
                continue
            if entry.is_dir():  # (following a link)
                real = os.path.realpath(entry.path)
                if real not in above:
                    below.append((entry.path, above | {real}))
            elif entry.is_file():
                files.append(entry.path)
        stack.extend(reversed(below))
    return sorted(files)


def _each_file_once(paths: list) -> list:
    """``paths`` with a file reached under several names (links) kept once, under its first
    name (a ``latest -> run1`` link read each file twice: found by review)."""
    seen, kept = set(), []
    for path in paths:
        real = os.path.realpath(path) if "://" not in path else path
        if real not in seen:
            seen.add(real)
            kept.append(path)
    return kept


def _files_of(filesystem, path: str, shown: str) -> list:
    """The files of one location: a file, a directory (its ``*.parquet`` files at any depth,
    those that Parquet readers skip left out, as ``pd.read_parquet`` leaves them: found by
    review, a Spark attempt's ``_temporary`` copies were counted twice) or a glob pattern
    (a path that exists is itself, whatever characters it holds). A file reached by several
    names is read once, under the first that is not skipped (a review found files behind a
    hidden link ``.current -> run1`` left out)."""
    from pyarrow import fs

    info = filesystem.get_file_info(path)
    if info.type == fs.FileType.NotFound and any(c in path for c in _GLOB_CHARACTERS):
        cut = min(path.find(c) for c in _GLOB_CHARACTERS if c in path)
        base = path[:cut].rsplit("/", 1)[0] or "/"
        pattern = path[len(base):].strip("/").split("/")
        files = _each_file_once([f for f in _files_below(filesystem, base, skip=False)
                                 if _glob_matches(f[len(base):].strip("/").split("/"),
                                                  pattern)])
        if not files:
            raise FileNotFoundError(f"source: no file matches the pattern {shown}")
        return files
    if info.type == fs.FileType.Directory:
        files = _each_file_once([f for f in _files_below(filesystem, path, skip=True)
                                 if f.endswith(".parquet")])
        if not files:
            raise FileNotFoundError(f"source: no *.parquet file under the directory {shown} "
                                    f"(names starting with '.' or '_' are skipped)")
        return files
    if info.type != fs.FileType.File:
        raise FileNotFoundError(f"source: {shown} does not exist")
    return [path]


def parquet_files(source) -> tuple:
    """``(filesystem, [paths])`` of a file, directory, glob pattern, or a list of those.

    Directories give every ``*.parquet`` below them, sorted, but for those in a file or
    folder whose name starts with ``.`` or ``_`` (as pyarrow, Dask and Spark skip them); a
    glob pattern matches as a shell's does (``*`` within one folder, ``**`` any depth); a URI
    (``s3://bucket/scored/*.parquet``) uses pyarrow's filesystem for it.
    """
    if isinstance(source, (str, os.PathLike)):
        locations = [os.fspath(source)]
    elif isinstance(source, (list, tuple)):
        locations = [os.fspath(p) for p in source]
        if not locations:
            raise ValueError("source is an empty list of files")
    else:
        raise TypeError(f"source must be a path, a glob pattern or a list of paths, got "
                        f"{type(source).__name__}")
    filesystem, files = None, []
    for location in locations:
        location_fs, path = _filesystem_of(location)
        if filesystem is None:
            filesystem = location_fs
        elif type(location_fs) is not type(filesystem):
            raise ValueError(f"source: every file must be on one filesystem ({locations[0]!r} "
                             f"and {location!r} are not)")
        files.extend(_files_of(filesystem, path, repr(location)))
    return filesystem, files


def _open_file(filesystem, path: str):
    import pyarrow.parquet as pq

    # pages written with checksums are verified (pyarrow >= 14), so a corrupt page is an error
    verify = ({"page_checksum_verification": True} if "page_checksum_verification" in
              inspect.signature(pq.ParquetFile).parameters else {})
    try:
        return pq.ParquetFile(filesystem.open_input_file(path), **verify)
    except Exception as error:
        raise read_error(error, f"the footer of {path} (a truncated or non-Parquet file?)") \
            from error


def read_error(error: BaseException, what: str) -> Exception:
    """``error`` (from pyarrow) as an OSError or ValueError that names what was read."""
    message = f"could not read {what}: {type(error).__name__}: {error}"
    return OSError(message) if isinstance(error, OSError) else ValueError(message)


def _type_kind(arrow_type) -> str:
    """A column type as the readers see it: what must agree between files."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        return _type_kind(arrow_type.value_type)
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_float16(arrow_type) or pa.types.is_float32(arrow_type):
        return "float32"
    if pa.types.is_floating(arrow_type) or pa.types.is_integer(arrow_type) or \
            pa.types.is_decimal(arrow_type):
        return "number"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    return str(arrow_type)


def _statistic(value, float16: bool):
    """A row-group min/max as a number, or None where it is not one.

    pyarrow returns the statistics of a float16 column as their two raw
    little-endian bytes.
    """
    if float16 and isinstance(value, (bytes, bytearray)) and len(value) == 2:
        return float(np.frombuffer(value, dtype="<f2")[0])
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return value
    return None


def _check_label_statistics(parquet, path: str, label: str) -> None:
    """Refuse numeric labels outside [0, 1] from the row groups' min/max, before reading rows."""
    import pyarrow as pa

    arrow_type = parquet.schema_arrow.field(parquet.schema_arrow.get_field_index(label)).type
    if _type_kind(arrow_type) not in ("number", "float32"):
        return
    float16 = pa.types.is_float16(arrow_type)
    leaf = [parquet.schema.column(i).path for i in range(parquet.metadata.num_columns)]
    if label not in leaf:
        return
    column = leaf.index(label)
    first_row = 0
    for g in range(parquet.metadata.num_row_groups):
        group = parquet.metadata.row_group(g)
        stats = group.column(column).statistics
        low, high = ((_statistic(stats.min, float16), _statistic(stats.max, float16))
                     if stats is not None and stats.has_min_max else (None, None))
        # (statistics that are absent or not numbers: the rows are checked when read)
        if low is not None and high is not None:
            bad = low if low < 0 else high if high > 1 else None
            if bad is not None:
                raise ValueError(
                    f"label column {label!r} has values outside [0, 1] (e.g. {bad!r}; row group "
                    f"{g}, rows {first_row}..{first_row + group.num_rows - 1} of {path}); a "
                    f"label is 0/1 or a fraction in [0, 1] made binary by label_threshold: map "
                    f"other values first")
        first_row += group.num_rows


#: why a column must have one type in every file, by its role
_WHY_ONE_TYPE = {"score": "float32 and float64 scores tie differently",
                 "label": "labels must be read one way",
                 "sample_weight": "weights must be read one way",
                 "subgroup": "a boolean true is a member whatever the threshold, a number only "
                             "at or above it"}


def open_parquet(source, *, label, scores, subgroups, label_threshold, subgroup_threshold,
                 missing_subgroup, sample_weight, sensitive_features=None,
                 pos_label=None) -> tuple:
    """Resolve and check Parquet files against each other; ``(ColumnSpec, ParquetSource)``.

    Reads only the footers. Every problem found names the file (and for a
    type that differs between files, both files).
    """
    filesystem, files = parquet_files(source)
    spec: ColumnSpec | None = None
    first_kinds: dict = {}
    rows_per_group, score_kinds, schema = [], [], None
    for path in files:
        parquet = _open_file(filesystem, path)
        try:
            arrow = parquet.schema_arrow
            spec = column_spec(arrow.names, label=label, scores=scores, subgroups=subgroups,
                               label_threshold=label_threshold,
                               subgroup_threshold=subgroup_threshold,
                               missing_subgroup=missing_subgroup, sample_weight=sample_weight,
                               source=f"the Parquet file {path}",
                               sensitive_features=sensitive_features, pos_label=pos_label)
            checked = [("label", spec.label)] + [("score", m) for m in spec.models]
            if spec.weighted:
                checked.append(("sample_weight", spec.sample_weight))
            checked += [("subgroup", name) for name in spec.subgroups
                        if name not in {c for _, c in checked}]
            kinds = {}
            for role, name in checked:
                kinds[name] = _type_kind(arrow.field(name).type)
                if role == "subgroup" and kinds[name] == "float32":
                    kinds[name] = "number"  # (compared with the threshold either way)
                if kinds[name] == "null":
                    continue  # (every value missing, whatever the type: found by review)
                if name in first_kinds and first_kinds[name][0] != kinds[name]:
                    before, where = first_kinds[name]
                    raise TypeError(
                        f"{role} column {name!r} is {before} in {where} but {kinds[name]} in "
                        f"{path}: it must have one type in every file ({_WHY_ONE_TYPE[role]}); "
                        f"rewrite one of them with the other's type")
                first_kinds.setdefault(name, (kinds[name], path))
            if pos_label is None:  # (with it, any two values are classes)
                _check_label_statistics(parquet, path, spec.label)
            rows_per_group.append([parquet.metadata.row_group(g).num_rows
                                   for g in range(parquet.metadata.num_row_groups)])
            score_kinds.append([kinds[m] for m in spec.models])
            if schema is None:
                import pyarrow as pa

                schema = pa.schema([arrow.field(c) for c in spec.columns])
        finally:
            parquet.close()
    score_dtypes = [np.dtype(np.float32) if kind == "float32" else np.dtype(np.float64)
                    for kind in score_kinds[0]]
    return spec, ParquetSource(filesystem, files, rows_per_group, score_dtypes, schema)


def _frame_of(table) -> dict:
    """Columns of an arrow table or batch as pandas Series (cheaper than one DataFrame)."""
    return {name: from_foreign(table.column(i)) for i, name in enumerate(table.schema.names)}


def read_piece(source: ParquetSource, piece: ParquetPiece, columns: list) -> pd.DataFrame:
    """The ``columns`` of one piece as a DataFrame; a read error names the file and row groups."""
    try:
        parquet = _open_file(source.filesystem, piece.path)
        try:
            table = parquet.read_row_groups(list(piece.row_groups), columns=columns)
        finally:
            parquet.close()
    except (OSError, ValueError) as error:
        if piece.path in str(error):
            raise
        raise read_error(error, piece.where()) from error
    return pd.DataFrame(_frame_of(table))


def iter_batches(source: ParquetSource, columns: list, batch_rows: int):
    """(dict of Series by column, where) for every batch of every file, in order;
    a read error names the file and the rows."""
    for path in source.files:
        parquet = _open_file(source.filesystem, path)
        try:
            start = 0
            batches = parquet.iter_batches(batch_size=batch_rows, columns=columns)
            while True:
                try:
                    batch = next(batches)
                except StopIteration:
                    break
                except (OSError, ValueError) as error:
                    raise read_error(error, f"{path} after row {start}") from error
                if batch.num_rows == 0:
                    continue
                stop = start + batch.num_rows
                yield _frame_of(batch), PieceWhere(f"in rows {start}..{stop - 1} of {path}",
                                                   start)
                start = stop
        finally:
            parquet.close()
