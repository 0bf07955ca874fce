"""Aggregates of the per-subgroup metrics, as public functions.

:func:`final_metric` and :func:`power_mean` are defined in
:mod:`fastbias.metrics.aggregates`, :func:`pinned_auc` (which takes labels,
scores and masks) in :mod:`fastbias.arrays`; all three are also top-level
names (``fastbias.final_metric``, ...).
"""
from .arrays import pinned_auc
from .metrics.aggregates import final_metric, power_mean

__all__ = ["final_metric", "pinned_auc", "power_mean"]
