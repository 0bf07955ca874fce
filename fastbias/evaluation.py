"""Deprecated module name: :func:`evaluate` lives in :mod:`fastbias.frame` and
:class:`EvaluationResult` in :mod:`fastbias.tables` (both also as ``fastbias.evaluate`` and
``fastbias.EvaluationResult``)."""
import warnings

from .frame import evaluate
from .tables.result import EvaluationResult

warnings.warn("fastbias.evaluation is deprecated: use fastbias.evaluate and "
              "fastbias.EvaluationResult (defined in fastbias.frame and fastbias.tables)",
              DeprecationWarning, stacklevel=2)

__all__ = ["evaluate", "EvaluationResult"]
