"""The figure functions of the reports (defined in :mod:`fastbias.reports.plots`).

Needs matplotlib (``pip install "fastbias[plot]"``), imported only when a figure is drawn.
"""
from .reports.plots import (  # noqa: F401
    AEG_COLOR_STOPS,
    AEG_METRICS,
    AUC_COLOR_STOPS,
    METRIC_LABELS,
    NEGATIVE_COLOR,
    POSITIVE_COLOR,
    UNDEFINED_COLOR,
    __all__,  # noqa: F401
    color_for,
    interval_metrics,
    plot_aeg_heatmap,
    plot_auc_heatmap,
    plot_gap_curves,
    plot_intervals,
    plot_score_distributions,
    plot_subgroup_scores,
    plot_threshold_gaps,
    text_color_on,
    worst_first,
)
