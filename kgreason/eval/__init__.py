"""Evaluation metrics (SPEC §10)."""

from kgreason.eval.evaluate import EvalReport, evaluate
from kgreason.eval.metrics import exact_match, f1, hit_at_1, matches, normalize, precision_recall_f1

__all__ = ["EvalReport", "evaluate", "exact_match", "f1", "hit_at_1", "matches", "normalize", "precision_recall_f1"]
