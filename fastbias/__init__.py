"""fastbias: exact, fast unintended-bias metrics with a compiled (Numba) core.

The core functions are imported eagerly; the rest of the public API is loaded
on first access so that optional parts cost nothing at import time.
"""
from importlib import import_module

from ._numba_cache import configure as _configure_numba_cache

_configure_numba_cache()  # before any kernel module: never load a cache others can write

from ._version import __version__  # noqa: E402
from .arrays import bias_metrics, overall_auc  # noqa: E402
from .validate.errors import UndefinedMetricWarning  # noqa: E402

# public name -> submodule that defines it (loaded lazily)
_LAZY = {
    "evaluate": "fastbias.frame",
    "OmittedRowsWarning": "fastbias.validate.errors",
    "EvaluationResult": "fastbias.tables.result",
    "make_jigsaw_like": "fastbias.synthetic",
    "make_madlibs_like": "fastbias.synthetic",
    "final_metric": "fastbias.metrics.aggregates",
    "power_mean": "fastbias.metrics.aggregates",
    "pinned_auc": "fastbias.arrays",
    "threshold_metrics": "fastbias.arrays",
    "bernstein_halfwidth": "fastbias.intervals",
    "bernstein_min_samples": "fastbias.intervals",
    "bernstein_interval": "fastbias.intervals",
    "delong_paired_test": "fastbias.intervals",
    "ustatistic_bernstein_interval": "fastbias.intervals",
    "ustatistic_min_samples": "fastbias.intervals",
    "demographic_parity_cost": "fastbias.intervals",
    "equal_opportunity_cost": "fastbias.intervals",
    "BiasEvaluator": "fastbias.evaluator",
    "evaluate_parquet": "fastbias.streaming",
    "evaluate_csv": "fastbias.streaming",
    "bias_report": "fastbias.report",
    "BiasReport": "fastbias.report",
}

__all__ = ["bias_metrics", "overall_auc", "UndefinedMetricWarning", "__version__", *_LAZY]


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fastbias' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
