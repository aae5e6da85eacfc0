"""The ranker interface shared by the dense ranker, the GAT entity ranker and the RRCG gate."""

from __future__ import annotations

import abc
import re
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from kgreason.declarations import declare

_SPLIT = re.compile(r"[._/#:]+|(?<=[a-z])(?=[A-Z])")


def verbalize_relation(relation: str) -> str:
    """A relation id as words, for sentence encoders.

    Full IRIs keep their last path segment; dots, underscores, slashes and camelCase
    become spaces.

    >>> verbalize_relation("people.person.place_of_birth")
    'people person place of birth'
    >>> verbalize_relation("http://rdf.freebase.com/ns/film.film.directed_by")
    'film film directed by'
    >>> verbalize_relation("directed_by -> film.performance.actor")
    'directed by -> film performance actor'
    """
    if relation.startswith(("http://", "https://")):
        relation = re.split(r"[/#]", relation.rstrip("/#"))[-1]
    parts = []
    for piece in relation.split(" "):
        words = [w for w in _SPLIT.split(piece.replace("_", " ")) if w]
        parts.append(" ".join(w.strip() for w in words).lower() if piece != "->" else "->")
    return " ".join(p for p in parts if p)


@declare(contexts=("flat",), trainable=False)
class Ranker(abc.ABC):
    """Scores candidates against a query; higher is more relevant."""

    @abc.abstractmethod
    def score(self, query: str, candidates: Sequence[str], context: Any = None) -> Tensor:
        """Relevance of each candidate.

        Shapes: ``candidates`` of length C → ``[C]``.
        """

    def rank(self, query: str, candidates: Sequence[str], context: Any = None,
             top_k: int | None = None) -> list[tuple[str, float]]:
        """Candidates with scores, best first (ties keep input order), at most ``top_k``."""
        if not candidates:
            return []
        scores = self.score(query, candidates, context).tolist()
        order = sorted(range(len(candidates)), key=lambda i: -scores[i])
        if top_k is not None:
            order = order[:top_k]
        return [(candidates[i], float(scores[i])) for i in order]


@declare(contexts=("graph",), trainable=True)
class TrainableRanker(Ranker, torch.nn.Module):
    """A ranker with parameters (an ``nn.Module``), trained by a ranker-training stage.

    Subclasses implement :meth:`forward` on a typed graph context (e.g.
    :class:`~kgreason.rankers.graph.Neighbourhood`) and get :meth:`score` from it, run
    without gradients in evaluation mode. Call ``torch.nn.Module.__init__`` through
    ``super().__init__()``.
    """

    @abc.abstractmethod
    def forward(self, query: str, context: Any) -> Tensor:
        """Scores of ``context``'s candidates. Shapes: ``[C]`` for C candidates."""

    def flat_context(self, candidates: Sequence[str]) -> Any:
        """The graph context of a plain candidate list, for action spaces that rank without
        a graph (relations, patterns); a ranker that has one declares ``adapts=("flat",)``."""
        raise TypeError(f"{type(self).__name__} scores candidates in a graph context; pass context=")

    def score(self, query: str, candidates: Sequence[str], context: Any = None) -> Tensor:
        if context is None:
            context = self.flat_context(candidates)
        was = self.training
        self.eval()
        try:
            with torch.no_grad():
                out = self.forward(query, context)
        finally:
            self.train(was)
        if out.shape[0] != len(candidates):
            raise ValueError(f"{len(candidates)} candidates but the context has {out.shape[0]}")
        return out
