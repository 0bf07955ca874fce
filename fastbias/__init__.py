"""fastbias: exact, fast unintended-bias metrics with a compiled core."""
from ._validation import UndefinedMetricWarning
from .metrics import bias_metrics, overall_auc

__version__ = "0.1.0"

__all__ = ["bias_metrics", "overall_auc", "UndefinedMetricWarning", "__version__"]
