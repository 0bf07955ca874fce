"""Stage 7, tables: the tidy result of one or many models and its wide and per-model views."""
from .result import EvaluationResult, evaluation_result

__all__ = ["EvaluationResult", "evaluation_result"]
