"""Stage 1, validate: every input becomes an exact, checked numpy array or a clear error.

One reader per input kind (:mod:`.columns` for any 1-D container,
:mod:`.values` for labels, scores and weights, :mod:`.subgroups` for identity
columns), the settings checks (:mod:`.settings`), ``nan_policy`` over the rows
of an array call (:mod:`.rows`) and the column arguments of DataFrame-like
entry points (:mod:`.spec`). Nothing here is compiled; nothing here imports a
later stage. Every error names the argument or column, what is wrong, and
where.
"""
from .errors import OmittedRowsWarning, UndefinedMetricWarning

__all__ = ["OmittedRowsWarning", "UndefinedMetricWarning"]
