"""The warnings fastbias raises (its errors are the built-in ValueError, TypeError, KeyError)."""


class UndefinedMetricWarning(RuntimeWarning):
    """A metric is undefined (empty or one-class cell) and was set to NaN."""


class OmittedRowsWarning(UserWarning):
    """Rows with a missing label, score or weight were dropped (``nan_policy="omit"``)."""
