"""The warnings fastbias raises (its errors are the built-in ValueError, TypeError, KeyError)."""
import warnings


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined (empty or one-class cell) and was set to NaN."""


class OmittedRowsWarning(UserWarning):
    """Rows with a missing label, score or weight were dropped (``nan_policy="omit"``)."""


class NoSubgroupWarning(UserWarning):
    """Something asked for makes no subgroup (a sensitive feature missing on every row)."""


def listed(entries: list, most: int = 12) -> str:
    """The first ``most`` entries joined by "; ", and how many more there are."""
    return "; ".join(entries[:most]) + (f"; ... {len(entries) - most} more"
                                        if len(entries) > most else "")


def warn_listed(found: dict, context: str = "", stacklevel: int = 2) -> None:
    """One :class:`UndefinedMetricWarning` per ``head`` of ``found`` (head -> its entries,
    e.g. "subgroup: metric") that has any: ``"<context>: <n> <head>: <entries>"``. Entry
    points that compute in parts (the universes of ``missing_subgroup="exclude"``) gather
    the parts' lists and warn once."""
    lead = f"{context}: " if context else ""
    for head, entries in found.items():
        if entries:
            warnings.warn(f"{lead}{len(entries)} {head}: {listed(entries)}",
                          UndefinedMetricWarning, stacklevel=stacklevel + 1)


def gathered(parts: list) -> dict:
    """``found`` dicts (see :func:`warn_listed`) joined: each head's entries in order."""
    out = {}
    for found in parts:
        for head, entries in found.items():
            out.setdefault(head, []).extend(entries)
    return out
