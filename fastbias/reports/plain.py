"""Text from the data, made safe for where it is shown: terminals and spreadsheets.

Names of columns, models and subgroups come from whoever made the data. On a
terminal, control characters in them could retitle the window, recolour or
hide lines; in a CSV file, a cell starting with ``=`` is a formula that a
spreadsheet runs. (HTML escaping is ``html.escape`` in the report; figures
draw text without mathtext, see ``plots._plain_text``.)
"""
from __future__ import annotations

from ..validate.errors import visible


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
    return visible(text, keep_newlines=keep_newlines)


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
