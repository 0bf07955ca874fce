"""The warnings fastbias raises (its errors are the built-in ValueError, TypeError, KeyError),
and names from the data made visible in messages."""
import contextlib
import contextvars
import os
import re
import sys
import threading
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: held by the ``warnings.catch_warnings`` block that remains (around pandas' reader of JSON
#: lines): such a block saves the process-wide filters and puts them back, so two that
#: overlap in threads put back each other's and one stays for good; one at a time, fastbias'
#: own cannot (see :func:`collected_warnings` for what fastbias uses instead)
WARNING_FILTERS_LOCK = threading.RLock()

#: the list that :func:`warn` appends to instead of warning, in this thread's context
_COLLECTOR = contextvars.ContextVar("fastbias_collected_warnings", default=None)


def warn(message: str, category: type, stacklevel: int = 1) -> None:
    """``warnings.warn(message, category, stacklevel)`` (``stacklevel`` as the caller would
    give it), or, inside :func:`collected_warnings` in this thread, kept for the caller of
    that to warn."""
    caught = _COLLECTOR.get()
    if caught is not None:
        caught.append((str(message), category))
        return
    warnings.warn(message, category, stacklevel=stacklevel + 1)


@contextlib.contextmanager
def collected_warnings():
    """The ``(message, category)`` of each fastbias warning (:func:`warn`) given in this
    thread meanwhile, kept rather than warned: where the warnings are to be warned elsewhere
    (a lazy Dask result, combined on a worker, warns them where it is read). Unlike
    ``warnings.catch_warnings`` it leaves the process-wide filters alone (found by review:
    lazy evaluations computed together in threads put back each other's filters, leaving
    ``always`` before the user's ``error``)."""
    caught = []
    token = _COLLECTOR.set(caught)
    try:
        yield caught
    finally:
        _COLLECTOR.reset(token)

# C0 and C1 control characters, DEL, the Unicode line and paragraph separators, and every
# character a terminal draws as nothing (Unicode's format characters, category Cf: the
# bidirectional marks, overrides and isolates that can make a line read differently from
# what it holds, zero-width spaces and joiners, the byte order mark, the tag characters
# that can smuggle text; the variation selectors and the Hangul fillers), and every space but
# U+0020 (a no-break space reads as one): found by review, subgroups "gay" and "gay\u200b",
# or "a b" and "a\u00a0b", printed as two identical rows
_INVISIBLE = ("\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000"
              "\u00ad\u034f\u061c\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160"
              "\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
              "\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd"
              "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
              "\U000e0000-\U000e0fff")
_UNSAFE = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_UNSAFE_BUT_NEWLINE = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


def escaped(text: str) -> str:
    """Every character of ``text`` as its visible escape (``\\x20``, ``\\u200b``,
    ``\\U000e0041``)."""
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x100 else
                   f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}"
                   for c in text)


def _escape(match) -> str:
    return escaped(match.group())


def visible(text, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character (and bidirectional override) shown as a
    visible escape (``\\x1b``); ``keep_newlines`` keeps line breaks (never in a name)."""
    return (_UNSAFE_BUT_NEWLINE if keep_newlines else _UNSAFE).sub(_escape, str(text))


# a name's unsafe characters, and a backslash that would read as the start of an escape
# (followed by x, u or U): found by review, names "a " and "a\\x20" were shown alike
_UNSAFE_IN_NAME = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]|\\\\(?=[xuU])")


def visible_name(name) -> str:
    """``name`` as :func:`visible` shows it, and every backslash followed by x, u or U
    shown as ``\\x5c``, so that each ``\\x``, ``\\u`` or ``\\U`` shown is an escape and no
    two names are shown alike. Apply once, where the name is shown (a second pass would
    escape the escapes' backslashes).

    Examples
    --------
    >>> print(visible_name("a\\\\x20"), visible_name("C:\\\\data"), visible_name("tab\\there"))
    a\\x5cx20 C:\\data tab\\x09here
    """
    return _UNSAFE_IN_NAME.sub(_escape, str(name))


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the function calling this name the
    first line outside fastbias (the user's), however deep in fastbias the call is (found by
    review: a fixed level named a line of fastbias for one entry point or another)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined (empty or one-class cell) and was set to NaN."""


class WeightOverflowWarning(UserWarning):
    """Cells' total weights add up past the largest float64 and are shown as inf (the
    metrics stay exact)."""


class OmittedRowsWarning(UserWarning):
    """Rows with a missing label, score or weight were dropped (``nan_policy="omit"``)."""


class NoSubgroupWarning(UserWarning):
    """Something asked for makes no subgroup (a sensitive feature missing on every row)."""


def listed(entries: list, most: int = 12) -> str:
    """The first ``most`` entries joined by "; ", and how many more there are; the entries
    (which name subgroups from the data) with their control characters shown as escapes (a
    newline in a name would start a line of its own in a warning: found by review)."""
    return "; ".join(visible(e) for e in entries[:most]) + (f"; ... {len(entries) - most} more"
                                        if len(entries) > most else "")


def warn_listed(found: dict, context: str = "", stacklevel: int = 2) -> None:
    """One :class:`UndefinedMetricWarning` per ``head`` of ``found`` (head -> its entries,
    e.g. "subgroup: metric") that has any: ``"<context>: <n> <head>: <entries>"``. Entry
    points that compute in parts (the universes of ``missing_subgroup="exclude"``) gather
    the parts' lists and warn once."""
    lead = f"{context}: " if context else ""
    for head, entries in found.items():
        if entries:
            warn(f"{lead}{len(entries)} {head}: {listed(entries)}",
                 UndefinedMetricWarning, stacklevel=stacklevel + 1)


def gathered(parts: list) -> dict:
    """``found`` dicts (see :func:`warn_listed`) joined: each head's entries in order."""
    out = {}
    for found in parts:
        for head, entries in found.items():
            out.setdefault(head, []).extend(entries)
    return out
