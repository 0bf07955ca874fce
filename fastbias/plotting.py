"""The figure functions of the reports (defined in :mod:`fastbias.reports.plots`).

Needs matplotlib (``pip install "fastbias[plot]"``), imported only when a figure is drawn.
"""
from .reports.plots import (  # noqa: F401
    AEG_METRICS, AUC_COLOR_STOPS, AEG_COLOR_STOPS, UNDEFINED_COLOR, NEGATIVE_COLOR,
    POSITIVE_COLOR, METRIC_LABELS, color_for, text_color_on, worst_first, plot_auc_heatmap,
    plot_aeg_heatmap, plot_score_distributions, plot_subgroup_scores, interval_metrics,
    plot_intervals,
)
from .reports.plots import __all__  # noqa: F401
