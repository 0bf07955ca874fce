"""Text from the data, made safe for where it is shown: terminals and spreadsheets.

Names of columns, models and subgroups come from whoever made the data. On a
terminal, control characters in them could retitle the window, recolour or
hide lines; in a CSV file, a cell starting with ``=`` is a formula that a
spreadsheet runs. (HTML escaping is ``html.escape`` in the report; figures
draw text without mathtext, see ``plots._plain_text``.)
"""
from __future__ import annotations

import re

# C0 and C1 control characters, DEL, and the bidirectional overrides and isolates that can
# make a line read differently from what it holds
_TERMINAL_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_TERMINAL_UNSAFE_KEEP_NEWLINE = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character shown as a visible escape (``\\x1b``).

    ``keep_newlines``: a message of several lines keeps its line breaks (a
    name never does: a newline in a name is shown as ``\\x0a``).

    Examples
    --------
    >>> terminal_text("red\\x1b[31m")
    'red\\\\x1b[31m'
    >>> terminal_text("two\\nlines", keep_newlines=True)
    'two\\nlines'
    """
    pattern = _TERMINAL_UNSAFE_KEEP_NEWLINE if keep_newlines else _TERMINAL_UNSAFE
    return pattern.sub(_visible, str(text))


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")


def spreadsheet_cell(value):
    """A text cell a spreadsheet would evaluate (``=...``, ``+...``, ``-...``, ``@...``, or
    a tab or line break first) with a ``'`` prefixed, so that it is shown as text.
    Numbers and other text are returned unchanged.

    Examples
    --------
    >>> spreadsheet_cell('=HYPERLINK("http://x")')
    '\\'=HYPERLINK("http://x")'
    >>> spreadsheet_cell("black"), spreadsheet_cell(-0.5)
    ('black', -0.5)
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value
