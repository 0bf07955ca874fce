"""Numba kernels of the prepare stage: memberships from masks, CSR lists, codes (no pandas).

A *membership* is one (row, subgroup) pair. The CSR over identity rows
(rows in at least one subgroup) lists each row's subgroups; the dense scan
reads an (n, k) 0/1 matrix eight bytes at a time and does work only per
membership (memberships are sparse).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def threshold_column_rows(values, threshold, out):
    """Write the row indices with ``values[i] >= threshold`` into ``out``; return how many.

    NaN compares False, so unannotated rows are not members. Works for float,
    integer and boolean columns (booleans compare as 0/1).
    """
    count = 0
    threshold = np.float64(threshold)  # as membership_codes: float64, compiled or not
    for i in range(values.shape[0]):
        if values[i] >= threshold:
            out[count] = i
            count += 1
    return count


@njit(cache=True, nogil=True)
def build_row_csr(group_rows, group_ptr, n_rows):
    """Invert per-subgroup row lists into a CSR over the unique identity rows.

    Returns ``(identity_rows, row_ptr, row_groups)``: identity_rows in increasing
    order; the subgroups of identity_rows[r] are row_groups[row_ptr[r]:row_ptr[r+1]],
    in increasing order. ``group_rows[group_ptr[g]:group_ptr[g + 1]]`` are subgroup
    g's rows, increasing.

    The identity rows are marked in a bitmap of the rows (a 64th of their number
    in words, so it stays in cache) and an identity row's place among them is
    its rank there: the identity rows before its word plus the set bits below
    it. No array of the rows' length is made: the work is per membership, plus
    one pass over the bitmap.
    """
    n_groups = group_ptr.shape[0] - 1
    n_words = (n_rows + 63) // 64
    one = np.uint64(1)
    seen = np.zeros(n_words, dtype=np.uint64)  # bit i % 64 of word i // 64: row i is listed
    for p in range(group_rows.shape[0]):
        i = np.uint64(group_rows[p])
        seen[i >> np.uint64(6)] |= one << (i & np.uint64(63))
    before = np.empty(n_words, dtype=np.int64)  # identity rows in the words before each
    n_identity = 0
    for w in range(n_words):
        before[w] = n_identity
        n_identity += np.int64(_popcount(seen[w]))
    identity_rows = np.empty(n_identity, dtype=np.int64)
    r = 0
    for w in range(n_words):
        x = seen[w]
        while x != 0:
            lowest = x & (~x + one)
            x ^= lowest
            identity_rows[r] = w * 64 + _BIT_OF_POWER_MOD_67[lowest % np.uint64(67)]
            r += 1
    row_ptr = np.zeros(n_identity + 1, dtype=np.int64)
    for p in range(group_rows.shape[0]):
        row_ptr[_rank(seen, before, group_rows[p]) + 1] += 1
    for r in range(n_identity):
        row_ptr[r + 1] += row_ptr[r]
    fill = row_ptr[:-1].copy()
    row_groups = np.empty(group_rows.shape[0], dtype=np.int64)
    for g in range(n_groups):  # subgroup by subgroup: each row's subgroups in order
        for p in range(group_ptr[g], group_ptr[g + 1]):
            r = _rank(seen, before, group_rows[p])
            row_groups[fill[r]] = g
            fill[r] += 1
    return identity_rows, row_ptr, row_groups


@njit(inline="always")
def _popcount(x):
    """The set bits of a uint64 (pairs, nibbles, bytes, then the bytes added up by one
    multiply, whose top byte is their sum: LLVM makes the whole a single popcount
    instruction, half the time of adding the bytes by shifts; uncompiled, numpy would warn
    of the multiply's wrap-around, which is meant: the caller silences it)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2))
                                                & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return (x * np.uint64(0x0101010101010101)) >> np.uint64(56)


@njit(inline="always")
def _rank(seen, before, row):
    """The place of ``row`` (marked in the bitmap ``seen``) among the marked rows."""
    i = np.uint64(row)
    w = i >> np.uint64(6)
    below = seen[w] & ((np.uint64(1) << (i & np.uint64(63))) - np.uint64(1))
    return before[w] + np.int64(_popcount(below))


@njit(inline="always")
def _row_of(position, n_cols, inverse):
    """``position // n_cols`` by a float multiply (an integer division costs ~10x more)."""
    row = np.int64(position * inverse)
    if row * n_cols > position:
        row -= 1
    elif (row + 1) * n_cols <= position:
        row += 1
    return row


def _bit_of_power_mod_67() -> np.ndarray:
    """2**i mod 67 differs for every i in [0, 64) (2 generates the units mod 67): the table
    mapping it back to i."""
    table = np.zeros(67, dtype=np.int64)
    for bit in range(64):
        table[(1 << bit) % 67] = bit
    return table


_BIT_OF_POWER_MOD_67 = _bit_of_power_mod_67()


@njit(inline="always")
def _list_nonzero_words(words, w_start, w_stop, nonzero):
    """The indices of the non-zero words of ``words[w_start:w_stop]`` into ``nonzero``,
    listed without a branch (see :func:`_scan_words`); returns how many (uint64)."""
    # unsigned indices: numba checks every signed one for a negative value (a quarter of the
    # scan's time when the first word is not a constant)
    n_nonzero = np.uint64(0)
    for w in range(np.uint64(w_start), np.uint64(w_stop)):
        nonzero[n_nonzero] = w
        n_nonzero += np.uint64(words[w] != 0)
    return n_nonzero


@njit(inline="always")
def _nonzero_bytes(x):
    """The uint64 ``x`` with the high bit of each of its non-zero bytes set, every other bit
    clear (no step overflows)."""
    low7 = np.uint64(0x7F7F7F7F7F7F7F7F)
    return (((x & low7) + low7) | x) & np.uint64(0x8080808080808080)


@njit(inline="always")
def _pop_lowest_byte(t):
    """``(index of the lowest byte marked in t, t without that mark)``: the lowest set bit
    isolated (``t & -t``) and its index found from its remainder modulo 67."""
    lowest = t & (~t + np.uint64(1))
    return _BIT_OF_POWER_MOD_67[lowest % np.uint64(67)] >> 3, t ^ lowest


@njit(inline="always")
def _scan_words(words, w_start, w_stop, n_cols, member_row, member_col, found, nonzero):
    """Append (row, column) of the non-zero bytes of ``words[w_start:w_stop]``; return the count.

    First the non-zero words are listed without a branch (``nonzero``: scratch
    of at least ``w_stop - w_start`` int64, the caller's own allocation, so
    that the compiler knows it does not alias ``words``): memberships are
    sparse and scattered, so a branch per word would mispredict at every
    member and the scan would cost twice as much (the scan is now about as
    fast as memory brings the matrix in).
    Inside a non-zero word, each non-zero byte's high bit is set in
    ``((x & 0x7F..) + 0x7F..) | x) & 0x80..``; the lowest one is isolated
    (``t & -t``) and its bit index looked up from its remainder modulo 67
    (distinct for the 64 powers of two), so the cost is per membership rather
    than per byte, and no step overflows.
    """
    inverse = 1.0 / n_cols
    n_nonzero = _list_nonzero_words(words, w_start, w_stop, nonzero)
    at = np.uint64(found)
    for q in range(n_nonzero):
        w = np.uint64(nonzero[q])
        t = _nonzero_bytes(words[w])
        start = np.int64(w) * 8
        while t != 0:
            byte, t = _pop_lowest_byte(t)
            position = start + byte
            row = _row_of(position, n_cols, inverse)
            member_row[at] = row
            member_col[at] = position - row * n_cols
            at += np.uint64(1)
    return np.int64(at)


DENSE_SCAN_CHUNK_WORDS = 1 << 14


@njit(cache=True, nogil=True)
def scan_dense_into(words, flat, n_cols, member_row, member_col, found, w_start):
    """Append (row, column) of every non-zero byte of a dense C-order (n, k) 0/1 matrix,
    row-major, to ``member_row``/``member_col`` (int64, ``found`` entries in use), from
    word ``w_start`` on, while the output surely has room.

    ``flat`` is the matrix's bytes and ``words`` the same bytes read as
    little-endian uint64 (all whole words; a tail shorter than 8 bytes is read
    from ``flat``). Memberships are sparse, so the scan reads eight bytes at a
    time and does work only per non-zero byte. Returns ``(found, next word)``:
    the next word is -1 once everything is scanned, else where to go on after
    the caller has given the output more room (the caller allocates it: numpy
    asks the OS for huge pages for large arrays, numba does not, and at tens of
    millions of rows the page faults of writing fresh memory cost about as much
    as the scan).
    """
    capacity = member_row.shape[0]
    nonzero = np.empty(DENSE_SCAN_CHUNK_WORDS, dtype=np.int64)
    n_words = words.shape[0]
    w = w_start
    while w < n_words:
        w_stop = min(w + DENSE_SCAN_CHUNK_WORDS, n_words)
        if found + 8 * (w_stop - w) > capacity:
            return found, w
        found = _scan_words(words, w, w_stop, n_cols, member_row, member_col, found, nonzero)
        w = w_stop
    tail_stop = flat.shape[0]
    if found + tail_stop - n_words * 8 > capacity:
        return found, n_words
    row = (n_words * 8) // n_cols if n_cols > 0 else 0
    col = n_words * 8 - row * n_cols
    for p in range(n_words * 8, tail_stop):
        if flat[p]:
            member_row[found] = row
            member_col[found] = col
            found += 1
        col += 1
        if col == n_cols:
            col = 0
            row += 1
    return found, -1


@njit(cache=True, nogil=True)
def count_row_starts(member_row):
    """How many distinct rows the row-major ``member_row`` holds."""
    n_identity = 0
    last_row = -1
    for p in range(member_row.shape[0]):
        if member_row[p] != last_row:
            n_identity += 1
            last_row = member_row[p]
    return n_identity


@njit(cache=True, nogil=True)
def fill_row_starts(member_row, identity_rows, row_ptr):
    """The distinct rows of the row-major ``member_row`` into ``identity_rows``, and where
    each starts into ``row_ptr`` (one more entry: the end); sized by
    :func:`count_row_starts`."""
    n_member = member_row.shape[0]
    r = -1
    last_row = -1
    for p in range(n_member):
        if member_row[p] != last_row:
            r += 1
            identity_rows[r] = member_row[p]
            row_ptr[r] = p
            last_row = member_row[p]
    row_ptr[row_ptr.shape[0] - 1] = n_member


@njit(cache=True, nogil=True)
def place_csr_part(part_rows, part_ptr, part_groups, first_row, identity_offset, member_offset,
                   identity_rows, row_ptr, row_groups):
    """Copy the CSR of rows ``first_row:...`` (its row numbers relative to ``first_row``) into
    the whole CSR, at identity row ``identity_offset`` and membership ``member_offset``."""
    for r in range(part_rows.shape[0]):
        identity_rows[identity_offset + r] = part_rows[r] + first_row
        row_ptr[identity_offset + r] = part_ptr[r] + member_offset
    for e in range(part_groups.shape[0]):
        row_groups[member_offset + e] = part_groups[e]


@njit(inline="always")
def _dense_piece_csr(words, flat, n_cols, row_start, row_stop, fill, identity_at, member_at,
                     identity_rows, row_ptr, row_groups, nonzero):
    """Scan rows ``row_start:row_stop`` of a dense C-order (n, k) 0/1 matrix (``flat`` its
    bytes, ``words`` its whole words; ``row_start`` a multiple of 8, so that the rows start
    at a word) for non-zero bytes, as :func:`_scan_words` does; returns ``(identity rows,
    memberships)`` found. With ``fill``, writes them as CSR: the rows (absolute) into
    ``identity_rows`` from ``identity_at`` with their starts into ``row_ptr``, the columns
    into ``row_groups`` from ``member_at``. ``nonzero``: scratch of DENSE_SCAN_CHUNK_WORDS."""
    inverse = 1.0 / n_cols
    w_end = min((row_stop * n_cols) // 8, words.shape[0])
    n_identity = 0
    n_member = 0
    last_row = -1
    w = (row_start * n_cols) // 8
    while w < w_end:
        w_stop = min(w + DENSE_SCAN_CHUNK_WORDS, w_end)
        n_nonzero = _list_nonzero_words(words, w, w_stop, nonzero)
        for q in range(n_nonzero):
            v = np.uint64(nonzero[q])
            t = _nonzero_bytes(words[v])
            start = np.int64(v) * 8
            while t != 0:
                byte, t = _pop_lowest_byte(t)
                position = start + byte
                row = _row_of(position, n_cols, inverse)
                n_identity, n_member, last_row = _add_to_csr(
                    row, position - row * n_cols, fill, identity_at, member_at, identity_rows,
                    row_ptr, row_groups, n_identity, n_member, last_row)
        w = w_stop
    # the bytes after the last whole word (in the last piece only)
    for position in range(max(w_end * 8, row_start * n_cols), row_stop * n_cols):
        if flat[position]:
            row = position // n_cols
            n_identity, n_member, last_row = _add_to_csr(
                row, position - row * n_cols, fill, identity_at, member_at, identity_rows,
                row_ptr, row_groups, n_identity, n_member, last_row)
    return n_identity, n_member


@njit(inline="always")
def _add_to_csr(row, col, fill, identity_at, member_at, identity_rows, row_ptr, row_groups,
                n_identity, n_member, last_row):
    """One membership (row, col) of a row-major scan, counted, and with ``fill`` written as
    CSR (see :func:`_dense_piece_csr`): ``(n_identity, n_member, last_row)`` after it."""
    if row != last_row:
        if fill:
            identity_rows[identity_at + n_identity] = row
            row_ptr[identity_at + n_identity] = member_at + n_member
        n_identity += 1
        last_row = row
    if fill:
        row_groups[member_at + n_member] = col
    return n_identity, n_member + 1, last_row


@njit(inline="always")
def _count_nonzero_bytes(words, flat, n_cols, row_start, row_stop):
    """How many bytes of rows ``row_start:row_stop`` of a dense C-order (n, k) matrix are
    non-zero (its memberships): the marks of :func:`_nonzero_bytes` summed word by word
    (no branch, no store: about as fast as memory brings the matrix in), then the bytes
    after the last whole word. ``row_start`` is a multiple of 8 rows (a whole word)."""
    w_end = min((row_stop * n_cols) // 8, words.shape[0])
    ones = np.uint64(0x0101010101010101)
    total = np.uint64(0)
    for w in range(np.uint64((row_start * n_cols) // 8), np.uint64(w_end)):
        # one bit a marked byte, then their sum in the top byte (at most 8: no carry out)
        total += (((_nonzero_bytes(words[w]) >> np.uint64(7)) * ones) >> np.uint64(56))
    n = np.int64(total)
    for position in range(max(w_end * 8, row_start * n_cols), row_stop * n_cols):
        n += flat[position] != 0
    return n


@njit(parallel=True, cache=True, nogil=True)
def dense_csr_pieces(words, flat, n_cols, row_starts, row_stops, labels):
    """Row CSR of a dense C-order (n, k) 0/1 matrix (as :func:`scan_dense_into` and
    :func:`fill_row_starts` give it) as one kernel on Numba's threads, in three rounds over
    the ranges of rows ``row_starts[j]:row_stops[j]`` (each starting at a multiple of 8
    rows): count each range's memberships (:func:`_count_nonzero_bytes`); write its
    memberships in place and its identity rows at the same offset, as many slots as
    memberships (a row has one at least; :func:`_dense_piece_csr`); move the identity rows
    together, with each one's label. Returns ``(identity_rows, row_ptr, row_groups,
    identity_labels)``."""
    pieces = row_starts.shape[0]
    found = np.empty((pieces, 2), dtype=np.int64)  # (identity rows, memberships) of each
    for j in prange(pieces):
        found[j, 0] = 0
        found[j, 1] = _count_nonzero_bytes(words, flat, n_cols, row_starts[j], row_stops[j])
    at = _piece_offsets(found)
    n_member = at[pieces, 1]
    row_groups = np.empty(n_member, dtype=np.int64)
    spare_rows = np.empty(n_member, dtype=np.int64)
    spare_ptr = np.empty(n_member, dtype=np.int64)
    for j in prange(pieces):
        nonzero = np.empty(DENSE_SCAN_CHUNK_WORDS, dtype=np.int64)
        found[j, 0], _ = _dense_piece_csr(words, flat, n_cols, row_starts[j], row_stops[j],
                                          True, at[j, 1], at[j, 1], spare_rows, spare_ptr,
                                          row_groups, nonzero)
    at = _piece_offsets(found)
    n_identity = at[pieces, 0]
    identity_rows = np.empty(n_identity, dtype=np.int64)
    row_ptr = np.empty(n_identity + 1, dtype=np.int64)
    identity_labels = np.empty(n_identity, dtype=np.bool_)
    row_ptr[n_identity] = n_member
    for j in prange(pieces):
        source = at[j, 1]
        for r in range(at[j, 0], at[j + 1, 0]):
            row = spare_rows[source]
            identity_rows[r] = row
            row_ptr[r] = spare_ptr[source]
            identity_labels[r] = labels[row]
            source += 1
    return identity_rows, row_ptr, row_groups, identity_labels


@njit(cache=True, nogil=True)
def _piece_offsets(found):
    """Where each piece's (identity rows, memberships) start: the prefix sums of ``found``,
    one more row than pieces (the totals last)."""
    at = np.empty((found.shape[0] + 1, 2), dtype=np.int64)
    at[0, 0] = 0
    at[0, 1] = 0
    for j in range(found.shape[0]):
        at[j + 1, 0] = at[j, 0] + found[j, 0]
        at[j + 1, 1] = at[j, 1] + found[j, 1]
    return at


@njit(cache=True, nogil=True)
def identity_positions_of(identity_rows, n_rows):
    """Row -> position in ``identity_rows`` (-1 for rows in no subgroup)."""
    out = np.full(n_rows, -1, dtype=np.int64)
    for r in range(identity_rows.shape[0]):
        out[identity_rows[r]] = r
    return out


@njit(cache=True, nogil=True)
def fold_row_csr(index, identity_position, row_ptr, row_groups):
    """The identity CSR of the rows ``index`` (fold positions 0..m-1).

    Returns ``(identity_rows, fold_row_ptr, fold_row_groups, duplicate_at)``:
    identity_rows are fold positions (increasing), and ``duplicate_at`` is the
    first position of ``index`` whose row already occurred (-1 if none). Cost
    O(len(index) + fold memberships) plus one zeroed byte per row.
    """
    n_rows = identity_position.shape[0]
    m = index.shape[0]
    seen = np.zeros(n_rows, dtype=np.bool_)
    n_identity = 0
    n_member = 0
    for p in range(m):
        i = index[p]
        if seen[i]:
            return (np.empty(0, np.int64), np.zeros(1, np.int64), np.empty(0, np.int64), p)
        seen[i] = True
        r = identity_position[i]
        if r >= 0:
            n_identity += 1
            n_member += row_ptr[r + 1] - row_ptr[r]
    identity_rows = np.empty(n_identity, dtype=np.int64)
    fold_ptr = np.empty(n_identity + 1, dtype=np.int64)
    fold_groups = np.empty(n_member, dtype=np.int64)
    fold_ptr[0] = 0
    q = 0
    t = 0
    for p in range(m):
        r = identity_position[index[p]]
        if r >= 0:
            identity_rows[q] = p
            for e in range(row_ptr[r], row_ptr[r + 1]):
                fold_groups[t] = row_groups[e]
                t += 1
            q += 1
            fold_ptr[q] = t
    return identity_rows, fold_ptr, fold_groups, -1



@njit(cache=True, nogil=True)
def membership_codes(values, threshold, missing, mark_missing, codes, column):
    """Write one subgroup's codes into ``codes[:, column]``: -1 for a ``missing`` row when
    ``mark_missing`` (else 0: never a member), 1 if ``value >= threshold``, else 0.

    ``missing`` is a boolean mask, or empty when every row is annotated.
    """
    has_missing = missing.shape[0] > 0
    # float64, compiled or not: uncompiled, numpy would compare a float32 value with a Python
    # float in float32, where a threshold such as 0.9 rounds down
    threshold = np.float64(threshold)
    for i in range(values.shape[0]):
        if has_missing and missing[i]:
            codes[i, column] = -1 if mark_missing else 0
        elif values[i] >= threshold:
            codes[i, column] = 1
        else:
            codes[i, column] = 0


@njit(cache=True, nogil=True)
def combination_codes(codes, lookup2, lookup3, parts, n_parts, out):
    """Write ``codes`` (n, k) and one int8 column per chosen combination into ``out``
    (n, k + c): 1 when the row is a member of every part, -1 when it is unannotated (-1)
    for any part, else 0.

    ``lookup2[a, b]`` / ``lookup3[a, b, c]`` (a < b < c) give a combination's column
    among the chosen ones, or -1 (``lookup3`` is (0, 0, 0) without triples); ``parts``
    (c, 3) and ``n_parts`` (c,) list each combination's subgroups. A row annotated for
    every subgroup (or for none) costs a fill plus the combinations of its own subgroups;
    only a partly annotated row reads every combination's parts.
    """
    n, k = codes.shape
    c = parts.shape[0]
    members = np.empty(k, dtype=np.int64)
    triples = lookup3.shape[0] > 0
    for i in range(n):
        n_missing = 0
        n_members = 0
        for j in range(k):
            v = codes[i, j]
            out[i, j] = v
            if v < 0:
                n_missing += 1
            elif v == 1:
                members[n_members] = j
                n_members += 1
        if n_missing == k and k > 0:
            for t in range(c):
                out[i, k + t] = -1
            continue
        if n_missing > 0:  # partly annotated: every combination looks at its parts
            for t in range(c):
                code = 1
                for q in range(n_parts[t]):
                    v = codes[i, parts[t, q]]
                    if v < 0:
                        code = -1
                        break
                    if v == 0:
                        code = 0
                out[i, k + t] = code
            continue
        for t in range(c):
            out[i, k + t] = 0
        for x in range(n_members):
            for y in range(x + 1, n_members):
                t = lookup2[members[x], members[y]]
                if t >= 0:
                    out[i, k + t] = 1
                if triples:
                    for z in range(y + 1, n_members):
                        t = lookup3[members[x], members[y], members[z]]
                        if t >= 0:
                            out[i, k + t] = 1


@njit(cache=True, nogil=True)
def pack_codes(codes):
    """Pack (n, n_groups) int8 codes into bit words: (member bits, unannotated bits).

    Each is (n, ceil(n_groups / 64)) uint64; bit g % 64 of word g // 64 is
    set when subgroup g's code is 1 (member) or -1 (unannotated).
    """
    n, n_groups = codes.shape
    n_words = (n_groups + 63) // 64
    member = np.zeros((n, n_words), dtype=np.uint64)
    missing = np.zeros((n, n_words), dtype=np.uint64)
    for i in range(n):
        for g in range(n_groups):
            code = codes[i, g]
            if code != 0:
                bit = np.uint64(1) << np.uint64(g % 64)
                if code > 0:
                    member[i, g // 64] |= bit
                else:
                    missing[i, g // 64] |= bit
    return member, missing


@njit(cache=True, nogil=True)
def unpack_codes(member, missing, n_groups):
    """Inverse of :func:`pack_codes` (``missing`` may have 0 rows: nothing unannotated)."""
    n = member.shape[0]
    has_missing = missing.shape[0] > 0
    codes = np.zeros((n, n_groups), dtype=np.int8)
    for i in range(n):
        for g in range(n_groups):
            bit = np.uint64(1) << np.uint64(g % 64)
            if member[i, g // 64] & bit:
                codes[i, g] = 1
            elif has_missing and missing[i, g // 64] & bit:
                codes[i, g] = -1
    return codes
