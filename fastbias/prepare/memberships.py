"""Memberships: which rows belong to which subgroup, in the compact form the sweep needs.

:class:`Memberships` lists, for the identity rows (rows in at least one
subgroup), their subgroups (CSR), with the labels. It is built once per set
of rows and does not depend on the scores. :func:`group_by_missing` is the one
place that groups subgroups by the rows they may be compared with
(``missing_subgroup="exclude"``).
"""
from __future__ import annotations

import dataclasses
import itertools
import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .._native import native_pieces, numba_threads
from .._numba_cache import read_only
from .._threads import jobs_for, run_jobs
from ..validate.categories import (
    category_codes,
    is_categorical,
    refuse_numbers_as_text,
    warn_features_without_values,
)
from ..validate.columns import from_foreign
from ..validate.settings import check_threshold
from ..validate.spec import check_unique_names
from ..validate.subgroups import IdentityValues, identity_values, subgroup_columns
from ..validate.values import at_or_above
from . import _kernels as K


@dataclass(frozen=True)
class Memberships:
    """Score-independent description of the subgroups over ``n_rows`` rows.

    Attributes
    ----------
    names : list of str
        Subgroup names, in column order of every result.
    labels : ndarray of bool, shape (n_rows,)
        Binary labels (True = positive class).
    identity_rows : ndarray of int64
        Rows that belong to at least one subgroup, increasing.
    row_ptr, row_groups : ndarray of int64
        CSR lists: the subgroups of ``identity_rows[r]`` are
        ``row_groups[row_ptr[r]:row_ptr[r + 1]]``.
    identity_labels : ndarray of bool
        ``labels[identity_rows]``.

    intersections : tuple of str
        The names (at the end of ``names``) that are intersections of other
        subgroups (see :func:`with_intersections`); empty otherwise.

    ``cell_rows`` and ``class_rows`` are computed on first use (the unweighted
    sweep needs neither). The sorts that carry rows read each class's rows
    straight from ``labels`` (no list of them is kept: 8 bytes a row).
    """

    names: list
    labels: np.ndarray
    identity_rows: np.ndarray
    row_ptr: np.ndarray
    row_groups: np.ndarray
    identity_labels: np.ndarray
    intersections: tuple = ()

    @property
    def n_rows(self) -> int:
        return int(self.labels.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.names)

    @cached_property
    def cell_rows(self) -> np.ndarray:
        """(n_groups, 2) int64: subgroup rows with label 0 and 1 (row counts, never weights).

        One ``bincount`` of the memberships (a few ms at 1.8M x 24): a kernel would
        have to compile before a first call's numpy tier could use it."""
        labels = np.repeat(self.identity_labels, np.diff(self.row_ptr))
        cells = np.bincount(2 * self.row_groups + labels, minlength=2 * self.n_groups)
        return cells.reshape(self.n_groups, 2).astype(np.int64)

    @cached_property
    def owners(self) -> np.ndarray:
        """Each membership's position in ``identity_rows`` (int64; memberships in CSR order)."""
        return np.repeat(np.arange(self.identity_rows.shape[0]), np.diff(self.row_ptr))

    @cached_property
    def class_rows(self) -> tuple:
        """(number of negative rows, number of positive rows) over all rows."""
        n_pos = int(np.count_nonzero(self.labels))
        return self.n_rows - n_pos, n_pos


def membership_rows_and_codes(m: Memberships) -> tuple:
    """Each membership's row and code, ``2 * subgroup + label`` (int32 unless there are more
    than 2**30 subgroups), in CSR order: ``(rows, codes)``."""
    per_row = np.diff(m.row_ptr)
    code = np.int32 if 2 * m.n_groups + 1 < 2 ** 31 else np.int64
    return (np.repeat(m.identity_rows, per_row),
            (2 * m.row_groups + np.repeat(m.identity_labels, per_row)).astype(code))


def memberships_from_csr(labels, names, identity_rows, row_ptr, row_groups) -> Memberships:
    return Memberships(list(names), labels, identity_rows, row_ptr, row_groups,
                       labels[identity_rows])


def prepare_memberships(labels: np.ndarray, group_rows: list, names: list,
                        compiled: bool = True) -> Memberships:
    """Build :class:`Memberships` from one increasing row-index array per subgroup
    (``compiled=False``: with numpy alone, for a first call while the kernels compile)."""
    if not compiled:
        groups = np.repeat(np.arange(len(group_rows), dtype=np.int64),
                           [len(r) for r in group_rows])
        rows = (np.concatenate(group_rows).astype(np.int64) if group_rows
                else np.empty(0, dtype=np.int64))
        order = np.lexsort((groups, rows))
        return _memberships_in_numpy(labels, names, rows[order], groups[order])
    labels = np.ascontiguousarray(labels, dtype=np.bool_)
    sizes = np.array([len(r) for r in group_rows], dtype=np.int64)
    group_ptr = np.zeros(len(group_rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=group_ptr[1:])
    flat = (np.concatenate([np.asarray(r, dtype=np.int64) for r in group_rows])
            if group_rows else np.empty(0, dtype=np.int64))
    with np.errstate(over="ignore"):  # (uncompiled, numpy would warn of _popcount's wrap)
        csr = K.build_row_csr(flat, group_ptr, labels.shape[0])
    return memberships_from_csr(labels, names, *csr)


# below this many rows per extra thread the dense scan is not worth splitting
PARALLEL_SCAN_MIN_ROWS = 200_000

# on Numba's threads (fastbias._native): one range of rows per thread, none smaller than this
NATIVE_SCAN_MIN_ROWS = 40_000

#: the kernels of the dense scan's rounds on Numba's threads
NATIVE_SCAN_KERNELS = (K.dense_csr_pieces,)


def csr_from_dense_on_numba(flat: np.ndarray, n: int, k: int, labels: np.ndarray,
                            pieces: int) -> tuple:
    """:func:`csr_from_dense` of the whole (n, k) matrix (``flat``: its bytes, 8-byte
    aligned) as one kernel on Numba's threads (see :mod:`fastbias._native`), the rows cut
    into ``pieces`` ranges: ``(identity_rows, row_ptr, row_groups, identity_labels)``, the
    last the ``labels`` of the identity rows."""
    words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
    bounds = np.array([((j * n) // pieces) // 8 * 8 for j in range(pieces)] + [n],
                      dtype=np.int64)
    # (the caller's matrix and labels, read-only or not: read-only views, one version)
    return K.dense_csr_pieces(read_only(words), read_only(flat), k, bounds[:-1], bounds[1:],
                              read_only(labels))


def dense_members(words: np.ndarray, flat: np.ndarray, n_cols: int, capacity: int) -> tuple:
    """(row, column) of every non-zero byte of a dense C-order (n, k) 0/1 matrix, row-major:
    ``(member_row, member_col)``, int64 (see ``_kernels.scan_dense_into``).

    ``flat`` is the matrix's bytes and ``words`` its whole words as uint64. The output
    starts at ``capacity`` entries and at least doubles whenever the next chunk of words
    might not fit; it is allocated here, by numpy (huge pages for large arrays, so that
    writing it does not fault at every 4 KiB).
    """
    member_row = np.empty(max(capacity, 64), dtype=np.int64)
    member_col = np.empty(max(capacity, 64), dtype=np.int64)
    found, word = 0, 0
    while True:
        found, word = K.scan_dense_into(words, flat, n_cols, member_row, member_col, found, word)
        if word < 0:
            return member_row[:found], member_col[:found]
        needed = found + 8 * min(K.DENSE_SCAN_CHUNK_WORDS, words.shape[0] - word) + \
            (flat.shape[0] - words.shape[0] * 8)
        capacity = max(2 * member_row.shape[0], needed)
        member_row, member_col = (_grown(a, found, capacity) for a in (member_row, member_col))


def _grown(values: np.ndarray, used: int, capacity: int) -> np.ndarray:
    """A larger array holding the first ``used`` entries of ``values``."""
    out = np.empty(capacity, dtype=values.dtype)
    out[:used] = values[:used]
    return out


def csr_from_dense(words: np.ndarray, flat: np.ndarray, n_cols: int, capacity: int) -> tuple:
    """Row CSR of a dense C-order (n, k) 0/1 matrix (see :func:`dense_members`):
    ``(identity_rows, row_ptr, row_groups)``, the rows with at least one membership
    (increasing) and their subgroup columns (increasing). ``capacity``: a first guess of
    the number of non-zeros."""
    member_row, row_groups = dense_members(words, flat, n_cols, capacity)
    n_identity = K.count_row_starts(member_row)
    identity_rows = np.empty(n_identity, dtype=np.int64)
    row_ptr = np.empty(n_identity + 1, dtype=np.int64)
    K.fill_row_starts(member_row, identity_rows, row_ptr)
    return identity_rows, row_ptr, row_groups


def prepare_memberships_dense(labels: np.ndarray, matrix: np.ndarray, names: list,
                              workers: int = 1) -> Memberships:
    """Build :class:`Memberships` from a dense (n, k) boolean/0-1 matrix in one row-major pass.

    On ``workers`` threads, which take the ranges of rows as they become free, each range
    (they start at multiples of 8 rows, so at whole words) is scanned and its lists copied
    into place.
    """
    labels = np.ascontiguousarray(labels, dtype=np.bool_)
    if matrix.dtype == np.bool_:
        matrix = matrix.view(np.uint8)
    matrix = np.ascontiguousarray(matrix)
    n, k = matrix.shape
    flat = read_only(matrix.reshape(-1))  # (writable or not: one compiled version)
    pieces = native_pieces(n, workers, NATIVE_SCAN_MIN_ROWS)
    if pieces > 1 and k > 0 and flat.ctypes.data % 8 == 0:
        with numba_threads(workers, n, NATIVE_SCAN_KERNELS) as on_numba:
            if on_numba:
                identity_rows, row_ptr, row_groups, identity_labels = \
                    csr_from_dense_on_numba(flat, n, k, labels, pieces)
                return Memberships(list(names), labels, identity_rows, row_ptr, row_groups,
                                   identity_labels)
    pieces = jobs_for(n, workers, PARALLEL_SCAN_MIN_ROWS)
    bounds = [((j * n) // pieces) // 8 * 8 for j in range(pieces)] + [n]

    def scan(j):
        part = flat[bounds[j] * k:bounds[j + 1] * k]
        words = part[:part.shape[0] // 8 * 8].view(np.uint64)  # a C-contiguous uint64 view
        # first guess of the memberships: one per eight rows (the scan doubles it when short)
        return csr_from_dense(words, part, k, (bounds[j + 1] - bounds[j]) // 8)

    parts = run_jobs(scan, range(pieces), workers)
    if pieces == 1:
        return memberships_from_csr(labels, names, *parts[0])
    n_identity = np.cumsum([0] + [p[0].shape[0] for p in parts])
    n_member = np.cumsum([0] + [p[2].shape[0] for p in parts])
    identity_rows = np.empty(n_identity[-1], dtype=np.int64)
    row_ptr = np.empty(n_identity[-1] + 1, dtype=np.int64)
    row_groups = np.empty(n_member[-1], dtype=np.int64)
    row_ptr[-1] = n_member[-1]
    run_jobs(lambda j: K.place_csr_part(*parts[j], bounds[j], n_identity[j], n_member[j],
                                        identity_rows, row_ptr, row_groups),
             range(pieces), workers)
    return memberships_from_csr(labels, names, identity_rows, row_ptr, row_groups)


def column_rows(values: np.ndarray, threshold: float, buffer: np.ndarray,
                compiled: bool = True) -> np.ndarray:
    """Rows where ``values >= threshold`` (NaN is never a member), via a jitted pass.

    A boolean or uint8 mask with a threshold in (0, 1] is read eight rows at
    a time (members are then exactly the non-zero bytes); anything else is
    compared row by row. ``compiled=False`` does the same in numpy (for a
    first call while the kernels compile).
    """
    if not compiled:  # (exactly as the kernel compares: a float32 0.7 is below 0.7)
        with np.errstate(invalid="ignore"):
            return np.flatnonzero(at_or_above(values, threshold)).astype(np.int64)
    if values.dtype in (np.bool_, np.uint8) and 0.0 < threshold <= 1.0 and values.ndim == 1:
        flat = np.ascontiguousarray(values).view(np.uint8)
        if flat.ctypes.data % 8:
            flat = flat.copy()  # fresh memory is word aligned
        flat = read_only(flat)  # (read-only or not: one compiled version of the scan)
        words = flat[:flat.shape[0] // 8 * 8].view(np.uint64)
        rows, _ = dense_members(words, flat, 1, flat.shape[0] // 64)
        return rows.copy()
    # (a column read-only or not: a read-only view, one compiled version per dtype)
    count = K.threshold_column_rows(read_only(values), threshold, buffer)
    return buffer[:count].copy()



def member_rows(values: IdentityValues, buffer: np.ndarray | None = None,
                compiled: bool = True) -> np.ndarray:
    """Increasing int64 row indices of the members of one identity column."""
    if buffer is None and compiled:
        buffer = np.empty(values.values.shape[0], dtype=np.int64)
    return column_rows(values.values, values.threshold, buffer, compiled)


# below this many rows the identity columns are read on one thread
PARALLEL_COLUMNS_MIN_ROWS = 200_000


def read_identity_columns(read, names: list, n: int, compiled: bool = True,
                          workers: int = 1) -> tuple:
    """``(columns, rows)``: ``read(name)`` (an :class:`IdentityValues`) of each identity
    column, and the increasing rows of its members (:func:`member_rows`).

    The columns are shared out among up to ``workers`` threads (from
    PARALLEL_COLUMNS_MIN_ROWS rows): numpy's NaN test and the membership kernel
    release the GIL, and a Jigsaw-layout frame's 24 float columns cost more
    than its sort. A bad column raises as on one thread: the first in the
    order of ``names`` (any items ``read`` takes: names, positions).
    """
    buffers = {}  # one row buffer per thread (the kernel writes the members' rows there)

    def one(name):
        try:
            column = read(name)
            buffer = None
            if compiled:
                buffer = buffers.get(threading.get_ident())
                if buffer is None:
                    buffer = buffers[threading.get_ident()] = np.empty(n, dtype=np.int64)
            return column, member_rows(column, buffer, compiled)
        except Exception as exc:  # (raised below, for the first bad column in order)
            return exc

    results = run_jobs(one, names, workers if n >= PARALLEL_COLUMNS_MIN_ROWS else 1)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return [column for column, _ in results], [rows for _, rows in results]


def subgroup_rows(subgroups, n: int, threshold: float | None = None, compiled: bool = True,
                  workers: int = 1):
    """Validate subgroups and return (names, list of increasing row-index arrays); the
    columns are read on up to ``workers`` threads (:func:`read_identity_columns`)."""
    if threshold is not None:
        threshold = check_threshold(threshold, "subgroup_threshold")
    names, columns = subgroup_columns(subgroups, n)
    if not names:
        raise ValueError("subgroups is empty: give at least one subgroup")
    hint = " or use fastbias.evaluate (missing_subgroup=...)"
    _, rows = read_identity_columns(
        lambda j: identity_values(columns[j], names[j], threshold, hint),
        list(range(len(names))), n, compiled, workers)
    return names, rows



def restrict_rows(rows: list, kept: np.ndarray) -> list:
    """Row-index arrays over all rows -> the same rows renumbered among the ``kept`` ones."""
    new_index = np.cumsum(kept) - 1
    return [new_index[r[kept[r]]] for r in rows]



def prepare_subgroups(labels: np.ndarray, subgroups, subgroup_threshold: float | None = None,
                      kept: np.ndarray | None = None, workers: int = 1,
                      compiled: bool = True, min_subgroup_size: int = 1) -> Memberships:
    """Validated labels + any accepted subgroup container -> :class:`Memberships`.

    A categorical column (text, a pandas Categorical) of a DataFrame, dict or Series is
    one subgroup per value, named ``"name=value"``; with several, their combinations with
    at least ``min_subgroup_size`` rows of each class follow (as ``sensitive_features=``).

    A dense (n, k) boolean array takes a single row-major pass; DataFrames and
    dicts take one jitted pass per column. ``kept`` (a boolean mask over the
    input rows, from ``nan_policy="omit"``) restricts the subgroups to those rows.
    ``workers``: threads the dense scan (or the columns) may use. ``compiled=False`` builds the
    same memberships with numpy alone (a first call while the kernels compile).
    """
    n = labels.shape[0] if kept is None else kept.shape[0]
    if (isinstance(subgroups, np.ndarray) and not isinstance(subgroups, np.ma.MaskedArray)
            and subgroups.ndim == 2 and subgroups.dtype == np.bool_
            and subgroups.shape[1] > 0):
        if subgroups.shape[0] != n:
            hint = (f"; one row per subgroup? expected (n_rows, n_subgroups) = ({n}, "
                    f"{subgroups.shape[0]}): transpose it" if subgroups.shape[1] == n else "")
            raise ValueError(f"subgroups has {subgroups.shape[0]} rows but y_true has {n}{hint}")
        names = [f"subgroup_{j}" for j in range(subgroups.shape[1])]
        matrix = subgroups if kept is None else subgroups[kept]
        if not compiled:
            rows, groups = np.nonzero(matrix)  # row-major: each row's subgroups in order
            return _memberships_in_numpy(labels, names, rows, groups)
        return prepare_memberships_dense(labels, np.ascontiguousarray(matrix), names, workers)
    if has_categories(subgroups, subgroup_threshold):
        names, rows = _subgroups_with_categories(subgroups, n, labels, kept, subgroup_threshold,
                                                 compiled, min_subgroup_size)
    else:
        names, rows = subgroup_rows(subgroups, n, threshold=subgroup_threshold,
                                    compiled=compiled, workers=workers)
    if kept is not None:
        rows = restrict_rows(rows, kept)
    return prepare_memberships(labels, rows, names, compiled)


def check_categories_alone(subgroups, intersections, threshold=None) -> None:
    """``intersections=`` combines boolean subgroups: with a categorical column among the
    subgroups (whose values already come with their combinations) it is a ValueError."""
    if intersections is not None and has_categories(subgroups, threshold):
        raise ValueError("intersections= combines boolean subgroups; categorical subgroup "
                         "columns already add every combination of their values (give "
                         "intersections only with boolean columns)")


def has_categories(subgroups, threshold=None) -> bool:
    """Whether a subgroup container (a DataFrame, dict or Series) has a categorical column
    (:func:`~fastbias.validate.categories.is_categorical` under ``threshold``); polars and
    pyarrow containers and columns are read as pandas reads them (found by review: their
    text and category columns were refused)."""
    subgroups = from_foreign(subgroups)
    if isinstance(subgroups, pd.DataFrame):
        columns = [subgroups.iloc[:, j] for j in range(subgroups.shape[1])]
    elif isinstance(subgroups, pd.Series):
        columns = [subgroups]
    elif isinstance(subgroups, dict):
        columns = [from_foreign(c) for c in subgroups.values()]
    else:
        return False
    return any(is_categorical(c, threshold) for c in columns)


def _memberships_in_numpy(labels, names, rows: np.ndarray, groups: np.ndarray) -> Memberships:
    """:class:`Memberships` from (row, subgroup) pairs sorted by row, then subgroup."""
    labels = np.ascontiguousarray(labels, dtype=np.bool_)
    identity_rows, first = np.unique(rows, return_index=True)
    row_ptr = np.append(first, rows.shape[0]).astype(np.int64)
    return memberships_from_csr(labels, names, identity_rows.astype(np.int64), row_ptr,
                                groups.astype(np.int64))



def group_by_missing(missing_masks: list) -> list:
    """Group subgroups by the rows they may be compared with: ``[(kept rows or None, [j])]``.

    ``missing_masks[j]`` is subgroup j's boolean mask of rows left out of its
    comparisons (unannotated under ``missing_subgroup="exclude"``), or None
    when none are. Subgroups with the same mask share one group (as in
    Jigsaw, where all identity columns are annotated together), so one sweep
    serves them all; ``kept rows`` is None for the group that keeps every row.
    """
    groups: dict = {}
    keys: dict = {}  # id(mask) -> key: a mask shared by many subgroups is packed once
    for j, missing in enumerate(missing_masks):
        if missing is not None and id(missing) not in keys:
            keys[id(missing)] = np.packbits(missing).tobytes() if missing.any() else b""
        key = b"" if missing is None else keys[id(missing)]
        groups.setdefault(key, (None if key == b"" else missing, []))[1].append(j)
    return [(None if missing is None else np.flatnonzero(~missing), members)
            for missing, members in groups.values()]


def group_mask(memberships: Memberships, g: int) -> np.ndarray:
    """Boolean row mask of subgroup ``g`` (O(memberships))."""
    m = memberships
    mask = np.zeros(m.n_rows, dtype=np.bool_)
    mask[m.identity_rows[m.owners[m.row_groups == g]]] = True
    return mask


MAX_INTERSECTION_ORDER = 3


def check_intersections(intersections, min_subgroup_size) -> tuple:
    """Validate ``intersections`` (None, 2 or 3) and ``min_subgroup_size`` (an int >= 1)."""
    if intersections is not None and (isinstance(intersections, bool) or not isinstance(
            intersections, (int, np.integer)) or not 2 <= intersections <= MAX_INTERSECTION_ORDER):
        raise ValueError(f"intersections must be None, 2 (every pair of subgroups) or 3 (every "
                         f"pair and triple), got {intersections!r}")
    if isinstance(min_subgroup_size, bool) or not isinstance(
            min_subgroup_size, (int, np.integer)) or min_subgroup_size < 1:
        raise ValueError(f"min_subgroup_size must be an int >= 1, got {min_subgroup_size!r}")
    return (None if intersections is None else int(intersections)), int(min_subgroup_size)


def named_intersections(memberships: Memberships, order: int, min_size: int = 1) -> tuple:
    """``(names, members, rows)`` of the intersections of :func:`intersections_of`, named
    ``"a & b"``; a name that is already a subgroup's is a ValueError."""
    members, rows = intersections_of(memberships, order, min_size)
    names = [" & ".join(str(memberships.names[j]) for j in combo) for combo in members]
    check_unique_names(list(memberships.names) + names)
    return names, members, rows


def intersections_of(memberships: Memberships, order: int, min_size: int = 1) -> tuple:
    """Every combination of 2..``order`` subgroups that occurs, from the per-row CSR.

    Returns ``(members, rows)``: ``members[c]`` is a tuple of subgroup
    indices (increasing: the order the subgroups were given; pairs first,
    then triples, each in lexicographic order) and ``rows[c]`` the increasing
    rows (of ``memberships``) in all of them. A combination is kept when it
    has at least ``min_size`` rows of each class, so that every metric of the
    row is defined. Memory and time are those of the memberships produced
    (each row emits the combinations of its own subgroups): never a
    rows x combinations matrix.
    """
    m = memberships
    members_out, rows_out = [], []
    for r in range(2, order + 1):
        entries = _combination_entries(m, r)
        if entries is None:
            continue
        keys, index, owners = entries
        cells = np.bincount(2 * index + m.identity_labels[owners], minlength=2 * len(keys))
        kept = chosen_cells(cells.reshape(-1, 2), min_size)
        keep_entry = kept[index]
        index, owners = index[keep_entry], owners[keep_entry]
        by_combo = np.lexsort((owners, index))
        index, rows = index[by_combo], m.identity_rows[owners[by_combo]]
        kept_ids = np.flatnonzero(kept)
        bounds = np.searchsorted(index, np.append(kept_ids, len(keys)))
        for j, combo in enumerate(combinations_of_keys(keys[kept_ids], m.n_groups, r)):
            members_out.append(combo)
            rows_out.append(rows[bounds[j]:bounds[j + 1]])
    return members_out, rows_out


def chosen_cells(cells: np.ndarray, min_size: int) -> np.ndarray:
    """Which combinations to keep, from their (negative, positive) row counts: at least
    ``min_size`` of each class (so that every metric of the row is defined)."""
    return (cells[:, 0] >= min_size) & (cells[:, 1] >= min_size)


def combination_cells(memberships: Memberships, order: int) -> list:
    """``[(keys, cells)]`` for r = 2..``order``: the combinations of r subgroups that some
    row holds, as increasing keys (:func:`combinations_of_keys`; lexicographic, as
    :func:`intersections_of` lists them), and their (negative, positive) row counts,
    (len(keys), 2) int64. Sums over pieces of the data (:func:`add_combination_cells`)
    give the whole data's counts, so out-of-core paths choose the same intersections as one
    pass would. Only combinations that occur are listed (found by review: all C(k, r) of
    2,000 subgroups' triples ran out of memory where one row held three)."""
    out = []
    for r in range(2, order + 1):
        entries = _combination_entries(memberships, r)
        if entries is None:
            out.append((np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)))
            continue
        keys, index, owners = entries
        cells = np.bincount(2 * index + memberships.identity_labels[owners],
                            minlength=2 * len(keys))
        out.append((keys, cells.reshape(-1, 2).astype(np.int64)))
    return out


def code_combination_cells(labels: np.ndarray, codes: np.ndarray, order: int) -> list:
    """:func:`combination_cells` of one piece of out-of-core data, from its int8 membership
    codes (n, k) (1 member; 0 and -1 not)."""
    names = list(range(codes.shape[1]))
    return combination_cells(prepare_memberships_dense(labels, codes == 1, names), order)


def add_combination_cells(total, cells):
    """Sum two results of :func:`combination_cells` (either may be None)."""
    if total is None or cells is None:
        return cells if total is None else total
    out = []
    for (a_keys, a_cells), (b_keys, b_cells) in zip(total, cells):
        keys = np.union1d(a_keys, b_keys)
        summed = np.zeros((len(keys), 2), dtype=np.int64)
        np.add.at(summed, np.searchsorted(keys, a_keys), a_cells)
        np.add.at(summed, np.searchsorted(keys, b_keys), b_cells)
        out.append((keys, summed))
    return out


def choose_combinations(total, names: list, min_size: int) -> list:
    """The combinations of :func:`combination_cells` sums to evaluate: pairs first, then
    triples, each lexicographic, with at least ``min_size`` rows of each class (as
    :func:`intersections_of` chooses them on all rows at once); their names ``"a & b"``
    must not be subgroup names."""
    chosen = []
    for r, (keys, cells) in enumerate(total or [], start=2):
        kept = chosen_cells(cells, min_size)
        chosen += combinations_of_keys(keys[kept], len(names), r)
    check_unique_names(list(names) + [" & ".join(str(names[j]) for j in c) for c in chosen])
    return chosen


def _combination_entries(m: Memberships, r: int):
    """``(keys, index, owners)``: the increasing keys of the combinations of r subgroups
    that some row holds (:func:`combinations_of_keys`), and for every (identity row,
    combination of r of its subgroups) the combination's position in ``keys`` and the
    identity row; None when no row has r subgroups."""
    k = m.n_groups
    if k ** r >= 2 ** 62:
        raise ValueError(f"intersections={r} of {k:,} subgroups: too many subgroups to key "
                         f"their combinations")
    per_row = np.diff(m.row_ptr)
    eligible = np.flatnonzero(per_row >= r)
    if eligible.size == 0 or k < r:
        return None
    # longest rows first, so the rows with more than o subgroups are a prefix
    eligible = eligible[np.argsort(-per_row[eligible], kind="stable")]
    lengths = per_row[eligible]
    starts = m.row_ptr[eligible]
    n_longer = np.searchsorted(-lengths, -np.arange(lengths[0]), side="left")
    keys_parts, owner_parts = [], []
    for offsets in itertools.combinations(range(int(lengths[0])), r):
        count = int(n_longer[offsets[-1]])  # the rows with more than offsets[-1] subgroups
        if count == 0:
            continue
        key = np.zeros(count, dtype=np.int64)
        for o in offsets:
            key = key * k + m.row_groups[starts[:count] + o]
        keys_parts.append(key)
        owner_parts.append(eligible[:count])
    if not keys_parts:
        return None
    keys, index = np.unique(np.concatenate(keys_parts), return_inverse=True)
    return keys, index.reshape(-1), np.concatenate(owner_parts)


def combinations_of_keys(keys: np.ndarray, k: int, r: int) -> list:
    """The combinations (increasing tuples of r subgroup indices) of their keys: the indices
    as the digits of a base-``k`` number, so increasing keys are lexicographic order."""
    digits, rest = [], np.asarray(keys, dtype=np.int64)
    for _ in range(r):
        digits.append(rest % k)
        rest = rest // k
    return list(zip(*(d.tolist() for d in reversed(digits)))) if len(keys) else []


def group_rows_of(memberships: Memberships) -> list:
    """The increasing rows of each subgroup, from the per-row CSR."""
    m = memberships
    owners = np.repeat(m.identity_rows, np.diff(m.row_ptr))
    by_group = np.argsort(m.row_groups, kind="stable")  # rows stay increasing within a group
    bounds = np.concatenate([[0], np.cumsum(np.bincount(m.row_groups, minlength=m.n_groups))])
    rows = owners[by_group]
    return [rows[bounds[g]:bounds[g + 1]] for g in range(m.n_groups)]


def with_intersections(memberships: Memberships, order: int | None, min_size: int = 1,
                       compiled: bool = True) -> Memberships:
    """``memberships`` with the intersections of :func:`intersections_of` appended as
    subgroups named ``"a & b"``."""
    if order is None:
        return memberships
    added, _, rows = named_intersections(memberships, order, min_size)
    if not added:
        return memberships
    return dataclasses.replace(
        prepare_memberships(memberships.labels, group_rows_of(memberships) + rows,
                            list(memberships.names) + added, compiled),
        intersections=tuple(added))




def intersection_missing(missing_masks: list, members: list) -> list:
    """The rows left out of each intersection's comparisons: those missing for any member.

    ``missing_masks`` as in :func:`group_by_missing` (one per subgroup, or
    None); ``members`` lists each intersection's subgroup indices. Subgroups
    with equal masks (the usual case: identities annotated together) give
    their intersections that same mask object, so nothing is recomputed and
    :func:`group_by_missing` packs it once.
    """
    canonical: dict = {}
    key_of = []
    for mask in missing_masks:
        key = None if mask is None or not mask.any() else np.packbits(mask).tobytes()
        if key is not None:
            canonical.setdefault(key, mask)
        key_of.append(key)
    combined: dict = {}
    out = []
    for combo in members:
        keys = frozenset(key_of[j] for j in combo if key_of[j] is not None)
        if not keys:
            out.append(None)
        elif len(keys) == 1:
            out.append(canonical[next(iter(keys))])
        else:
            if keys not in combined:
                combined[keys] = np.logical_or.reduce([canonical[k] for k in keys])
            out.append(combined[keys])
    return out


def _rows_by_code(codes: np.ndarray, n_values: int) -> list:
    """Increasing row indices of each code 0..n_values-1 (-1: no group), by one stable sort."""
    order = np.argsort(codes, kind="stable")
    counts = np.bincount(codes[codes >= 0], minlength=n_values)
    start = int((codes < 0).sum())
    out = []
    for count in counts:
        out.append(order[start:start + count].astype(np.int64))
        start += count
    return out


def category_memberships(features: list, labels: np.ndarray, min_subgroup_size: int = 1):
    """The subgroups of categorical sensitive features: ``(names, rows, missing, parts)``.

    ``features`` are :class:`~fastbias.validate.categories.CategoryCodes` of one set of
    rows, ``labels`` their classes. One subgroup per value of each feature, in the
    features' order and each feature's value order, named ``"race=black"``; with several
    features, then every combination of one value of each that occurs with at least
    ``min_subgroup_size`` rows of each class (:func:`combination_memberships`). ``rows``
    are increasing row indices; ``missing`` the rows a subgroup may not be compared with
    under ``missing_subgroup="exclude"`` (a value missing in any of its features; None:
    none); ``parts`` each subgroup's ``[(feature index, value index)]``. Each value's rows
    come from one stable sort of the codes, never a rows x values matrix.
    """
    names, rows, missing, parts = [], [], [], []
    for f, feature in enumerate(features):
        names += feature.labels
        rows += _rows_by_code(feature.codes, len(feature.values))
        missing += [feature.missing] * len(feature.values)
        parts += [[(f, v)] for v in range(len(feature.values))]
    if len(features) > 1:
        more = combination_memberships(features, labels, min_subgroup_size)
        for into, part in zip((names, rows, missing, parts), more):
            into += part
    return names, rows, missing, parts


def combination_memberships(features: list, labels: np.ndarray, min_subgroup_size: int = 1):
    """``(names, rows, missing, parts)`` of every combination of one value of each feature
    that occurs with at least ``min_subgroup_size`` rows of each class, named
    ``"race=black & gender=female"``, in the order of the features' values (the first
    feature slowest): fairlearn's groups of several sensitive features."""
    codes = np.column_stack([f.codes for f in features]).astype(np.int64)
    any_missing = (codes < 0).any(axis=1)
    sizes = [len(f.values) for f in features]
    # each row's combination as one number (the first feature slowest); the product of the
    # sizes is at most 1000**k, so above 6 features the combinations are found by np.unique
    if float(np.prod(sizes, dtype=np.float64)) < 2.0 ** 62:
        combined = np.zeros(codes.shape[0], dtype=np.int64)
        for j, size in enumerate(sizes):
            combined = combined * size + np.maximum(codes[:, j], 0)
        present, inverse = np.unique(combined[~any_missing], return_inverse=True)
        combos = np.empty((present.shape[0], len(sizes)), dtype=np.int64)
        rest = present.copy()
        for j in range(len(sizes) - 1, -1, -1):
            combos[:, j] = rest % sizes[j]
            rest //= sizes[j]
    else:
        combos, inverse = np.unique(codes[~any_missing], axis=0, return_inverse=True)
    combo_codes = np.full(codes.shape[0], -1, dtype=np.int64)
    combo_codes[~any_missing] = inverse.reshape(-1)
    n_combos = combos.shape[0]
    positive = np.asarray(labels, dtype=bool)
    counted = combo_codes >= 0
    positives = np.bincount(combo_codes[counted & positive], minlength=n_combos)
    negatives = np.bincount(combo_codes[counted & ~positive], minlength=n_combos)
    keep = (positives >= min_subgroup_size) & (negatives >= min_subgroup_size)
    combo_rows = _rows_by_code(combo_codes, n_combos)
    shared = any_missing if any_missing.any() else None
    value_names = [f.labels for f in features]
    names, rows, missing, parts = [], [], [], []
    for c in np.flatnonzero(keep):
        names.append(" & ".join(value_names[j][combos[c, j]] for j in range(len(features))))
        rows.append(combo_rows[c])
        missing.append(shared)
        parts.append([(j, int(combos[c, j])) for j in range(len(features))])
    return names, rows, missing, parts


def _subgroups_with_categories(subgroups, n: int, labels: np.ndarray, kept, threshold,
                               compiled: bool, min_subgroup_size: int):
    """``(names, rows over all n rows)`` of a subgroup container some of whose columns are
    categorical (:func:`~fastbias.validate.categories.is_categorical`): each such column
    becomes one subgroup per value, in its place, and with several of them their
    combinations follow (:func:`combination_memberships`, counted on the ``kept`` rows).
    A missing value is in no subgroup (its row counts as background)."""
    names_in, columns = subgroup_columns(subgroups, n)
    buffer = np.empty(n, dtype=np.int64) if compiled else None
    full = labels
    if kept is not None:
        full = np.zeros(n, dtype=bool)
        full[kept] = labels
    names, rows, features, feature_names = [], [], [], []
    hint = " or use fastbias.evaluate (missing_subgroup=...)"
    for name, column in zip(names_in, columns):
        if is_categorical(column, threshold):
            if threshold is not None:
                refuse_numbers_as_text(column, name, threshold)
            codes = category_codes(column, name, label=f"subgroup {name!r}")
            if kept is not None:  # dropped rows are in no group (nor counted for the sizes)
                codes = dataclasses.replace(codes, codes=np.where(kept, codes.codes, -1)
                                            .astype(np.int32))
            features.append(codes)
            feature_names.append(name)
            names += codes.labels
            rows += _rows_by_code(codes.codes, len(codes.values))
        else:
            names.append(name)
            rows.append(member_rows(identity_values(column, name, threshold, hint), buffer,
                                    compiled))
    # (found by review: evaluate warned of a feature missing on every row, the arrays did not)
    warn_features_without_values(feature_names, [codes.values for codes in features])
    if len(features) > 1:
        more_names, more_rows, _, _ = combination_memberships(features, full,
                                                              min_subgroup_size)
        names += more_names
        rows += more_rows
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise ValueError(f"subgroups has duplicate name(s) once categorical columns are "
                         f"expanded to their values: {dup}")
    return names, rows
