"""Numba kernels of the validate stage: the fields of CSV records, read on the raw bytes.

pandas, reading only some columns of a CSV file (``usecols``), takes a longer record's first
fields and reads a shorter one's missing fields as empty, silently. The reader's guard
(``textfile._LineGuard``) checks every record's number of fields against the header's, as
the parser splits them: :func:`csv_records` walks the bytes with the parser's states.
"""
from __future__ import annotations

from numba import njit

#: the states :func:`csv_records` carries from one block of bytes to the next (``state[0]``)
START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED = 0, 1, 2, 3
#: ``state``'s slots: the field's state, separators so far in the record, whether the record
#: holds more than blanks so far, whether it began in an earlier block, whether the last
#: record was blanks ended by a carriage return (whose next byte decides: see csv_records)
STATE, SEPARATORS, FILLED, CARRIED, AFTER_BLANK_CR = 0, 1, 2, 3, 4
N_STATE = 5
#: ``found`` of a record that pandas misreads whatever its fields: one that starts with the
#: separator right after a blank line ended by a lone carriage return (pandas' parser drops
#: that separator, and reads the record's fields one column to the left)
MISREAD = -1


@njit(cache=True, nogil=True)
def csv_records(data, separator, fields, state, ends):
    """Walk ``data`` (uint8) as pandas' C parser splits CSV records: a double quote opens a
    quoted field only as the field's first byte (elsewhere it is text), a doubled one inside
    is one quote, and a record ends at a newline or carriage return outside quotes; a record
    of blanks (spaces, tabs) alone is skipped. Writes the positions of the newlines that end
    records into ``ends`` and returns ``(n_ends, start, found)``: with ``fields`` > 0,
    ``start`` and
    ``found`` are the first byte (-1: in an earlier block) and the fields of the first record
    with other than ``fields`` fields (the walk stops there), ``start`` -2 where every record
    ending here has them, ``found`` :data:`MISREAD` for a record pandas misreads whatever
    its fields. ``state`` (int64, :data:`N_STATE`) is read and updated: what the record open
    at the end of ``data`` carries into the next block. ``separator``: its byte (-1: fields
    not counted)."""
    status = state[STATE]
    separators = state[SEPARATORS]
    filled = state[FILLED]
    after_blank_cr = state[AFTER_BLANK_CR]
    start = -1 if state[CARRIED] else 0
    n_ends = 0
    for i in range(data.shape[0]):
        c = data[i]
        if after_blank_cr:  # (a lone one, unless a newline follows)
            after_blank_cr = 0
            if c == separator and fields > 0:
                state[STATE], state[SEPARATORS], state[FILLED] = status, separators, filled
                return n_ends, i, MISREAD
        if status == QUOTED:
            if c == 34:
                status = QUOTE_IN_QUOTED
            continue
        if status == QUOTE_IN_QUOTED:
            if c == 34:  # a doubled quote: one quote in the field
                status = QUOTED
                continue
            status = UNQUOTED  # (text after a closing quote joins the field, as pandas reads)
        if c == separator:
            separators += 1
            filled = 1
            status = START
        elif c == 10 or c == 13:
            if fields > 0 and separators + 1 != fields and (separators > 0 or filled):
                state[STATE], state[SEPARATORS], state[FILLED] = status, separators, filled
                return n_ends, start, separators + 1
            if c == 10:
                ends[n_ends] = i
                n_ends += 1
            elif separators == 0 and not filled:
                after_blank_cr = 1
            separators = 0
            filled = 0
            status = START
            start = i + 1
        elif status == START and c == 34:
            status = QUOTED
            filled = 1
        else:
            if c != 32 and c != 9:  # (pandas' blanks: a form feed is text)
                filled = 1
            status = UNQUOTED
    state[STATE], state[SEPARATORS], state[FILLED] = status, separators, filled
    state[AFTER_BLANK_CR] = after_blank_cr
    state[CARRIED] = 1 if start < data.shape[0] else 0
    return n_ends, -2, 0
