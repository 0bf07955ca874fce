"""Text from the data, made safe for where it is shown: terminals and spreadsheets.

Names of columns, models and subgroups come from whoever made the data. On a
terminal, control characters in them could retitle the window, recolour or
hide lines; in a CSV file, a cell starting with ``=`` is a formula that a
spreadsheet runs. (HTML escaping is ``html.escape`` in the report; figures
draw text without mathtext, see ``plots._plain_text``.)
"""
from __future__ import annotations

import unicodedata

from ..validate.errors import escaped, visible, visible_name


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


def name_cell(name) -> str:
    """A name as shown in a text table, the HTML and the figures: its control characters
    as :func:`terminal_text` shows them, a backslash that would read as an escape as
    ``\\x5c`` (:func:`~fastbias.validate.errors.visible_name`), and spaces at either edge
    escaped (``\\x20``: a table pads its cells with spaces, so "a" and "a " read alike;
    found by review). No two names are shown alike.

    Examples
    --------
    >>> name_cell("a "), name_cell("a b")
    ('a\\\\x20', 'a b')
    """
    text = visible_name(name)
    stripped = text.strip()
    if stripped == text:
        return text
    start = text.index(stripped[0]) if stripped else len(text)
    end = start + len(stripped)
    return escaped(text[:start]) + stripped + escaped(text[end:])


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: two for a wide or full-width character (CJK), none for
    a non-spacing or enclosing mark (Devanagari's and Thai's vowel signs too), one for the
    rest (found by review: widths in code points pushed a table of CJK names past its width
    and out of line).

    Examples
    --------
    >>> display_width("ab"), display_width("\u6f22\u5b57"), display_width("e\u0301")
    (2, 4, 1)
    """
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.category(c) in ("Mn", "Me") else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def padded(text: str, width: int, left: bool = True) -> str:
    """``text`` padded with spaces to ``width`` terminal cells (:func:`display_width`), on the
    right (``left``-aligned) or on the left."""
    pad = " " * max(0, width - display_width(text))
    return text + pad if left else pad + text


#: what a cell starts with that gets a ``'`` in front: a spreadsheet's formula, and a ``'``
#: itself (found by review: "=q" and "'=q" were both written "'=q", two subgroups one name;
#: with it, taking one ``'`` off a prefixed cell gives the name back)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "'")


def spreadsheet_cell(value):
    """A text cell a spreadsheet would evaluate (``=...``, ``+...``, ``-...``, ``@...``, or
    a tab or line break first), or one starting with ``'``, with a ``'`` prefixed, so that
    it is shown as text and no two names are written alike. Numbers and other text are
    returned unchanged.

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
