"""Stage 5, metrics: what the counts mean.

:mod:`.definitions` (the metrics, the cells each compares, the count
columns), :mod:`.table` (exact ratios and the per-subgroup table from the
sweep's counts) and :mod:`.aggregates` (power means, the Jigsaw final metric,
Pinned AUC terms). Imports only earlier stages.
"""
from .definitions import (
                          AEG_METRICS,
                          AUC_METRICS,
                          COUNT_COLUMNS,
                          METRIC_CELLS,
                          METRIC_COLUMNS,
                          METRIC_SAMPLES,
                          WEIGHT_COLUMNS,
)

__all__ = ["AEG_METRICS", "AUC_METRICS", "COUNT_COLUMNS", "METRIC_CELLS", "METRIC_COLUMNS",
           "METRIC_SAMPLES", "WEIGHT_COLUMNS"]
