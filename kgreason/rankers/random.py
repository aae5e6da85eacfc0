"""A seeded random ranker: the floor a trained ranker is measured against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from kgreason.rankers.base import Ranker


class RandomRanker(Ranker):
    """Uniform random scores from its own seeded generator (reproducible across runs).

    >>> r = RandomRanker(seed=0)
    >>> len(r.rank("q", ["a", "b", "c"])), r.score("q", ["a", "b"]).shape
    (3, torch.Size([2]))
    """

    def __init__(self, seed: int = 0):
        self.seed = seed
        self._gen = torch.Generator().manual_seed(seed)

    def score(self, query: str, candidates: Sequence[str], context: Any = None) -> Tensor:
        return torch.rand(len(candidates), generator=self._gen)

    def __repr__(self) -> str:
        return f"RandomRanker(seed={self.seed})"
