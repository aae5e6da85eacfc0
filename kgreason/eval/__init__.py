"""Evaluation (design §10, docs/design.md): answer-set metrics and ``evaluate``.

The metrics depend on the data model only, so rewards can import them; ``evaluate``
(which runs rollouts) is loaded on first use.
"""

from typing import Any

from kgreason.eval.metrics import exact_match, f1, hit_at_1, matches, normalize, precision_recall_f1

__all__ = ["EvalReport", "evaluate", "turn_budget", "exact_match", "f1", "hit_at_1", "matches", "normalize", "precision_recall_f1"]


def __getattr__(name: str) -> Any:
    if name in ("EvalReport", "evaluate", "turn_budget"):
        from kgreason.eval import evaluation

        return getattr(evaluation, name)
    raise AttributeError(f"module 'kgreason.eval' has no attribute {name!r}")
