"""Ranking metrics for entity rankers: recall@k and reciprocal rank of the gold entities."""

from __future__ import annotations

from collections.abc import Collection, Sequence


def recall_at_k(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """The share of gold items among the first ``k`` ranked.

    Args:
        ranked: items, best first.
        gold: the relevant items (non-empty).
        k: cut-off.

    Raises:
        ValueError: ``gold`` is empty or ``k < 1``.

    >>> recall_at_k(["a", "b", "c", "d"], {"b", "d"}, 2)
    0.5
    >>> recall_at_k(["a", "b", "c", "d"], {"b", "d"}, 4)
    1.0
    """
    if not gold:
        raise ValueError("recall@k needs at least one gold item")
    if k < 1:
        raise ValueError(f"k={k}: the cut-off must be at least 1")
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def reciprocal_rank(ranked: Sequence[str], gold: Collection[str]) -> float:
    """``1 / rank`` of the first gold item (0 when none is ranked).

    >>> reciprocal_rank(["a", "b", "c"], {"c"})
    0.3333333333333333
    >>> reciprocal_rank(["a", "b"], {"z"})
    0.0
    """
    for i, item in enumerate(ranked):
        if item in gold:
            return 1.0 / (i + 1)
    return 0.0


def ranking_report(runs: Sequence[tuple[Sequence[str], Collection[str]]], ks: Sequence[int] = (1, 3, 10)) -> dict[str, float]:
    """Mean recall@k for each ``k`` and MRR over ``(ranked, gold)`` pairs.

    >>> ranking_report([(["a", "b"], {"a"}), (["a", "b"], {"b"})], ks=(1,))
    {'recall@1': 0.5, 'mrr': 0.75, 'n': 2}
    """
    if not runs:
        raise ValueError("no rankings to report on")
    out: dict[str, float] = {f"recall@{k}": sum(recall_at_k(r, g, k) for r, g in runs) / len(runs) for k in ks}
    out["mrr"] = sum(reciprocal_rank(r, g) for r, g in runs) / len(runs)
    out["n"] = len(runs)
    return out
