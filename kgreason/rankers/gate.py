"""Relation Retrieval and Confidence Gating (RRCG), KBQA-R1 §IV-A3.

The policy proposes a relation in text; the gate scores it against the schema relations
around the current entity (``R(e_c)``; all of ``KnowledgeBase.relations()`` when there is
no entity) and sorts the action into one of three tiers by the best score ``s_max``:

- ``s_max >= tau_high``: auto-validated; the best schema relation replaces the proposal;
- ``tau_low <= s_max < tau_high``: tentatively accepted with the best relation, and the
  observation lists the top-k candidates with their scores;
- ``s_max < tau_low``: rejected; the observation lists every neighbouring relation with
  its score.

The paper uses ``tau_high = 0.95``, ``tau_low = 0.3``. The official code words it
differently (``messages="code"``): below a score of 0.98 it says "No relation matched"
and that the most similar relation was selected, and lists the top 5 from 0.95 down.
``enabled=False`` is the paper's "w/o RRCG" ablation: the proposal goes through as
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from kgreason.rankers.base import Ranker, verbalize_relation

_EPS = 1e-6
Tier = Literal["exact", "accept", "tentative", "reject", "ungated"]


@dataclass
class GateDecision:
    """What the gate made of a proposed relation.

    Attributes:
        proposed: the policy's text.
        relation: the schema relation to execute, or ``None`` when rejected.
        score: ``s_max`` (1.0 for an exact match).
        tier: ``exact``, ``accept`` (auto-validated), ``tentative``, ``reject``, or
            ``ungated`` (gate disabled).
        candidates: scored schema relations, best first (top-k for ``tentative``, all
            for ``reject``).
        note: text for the observation ("" when there is nothing to say).
    """

    proposed: str
    relation: str | None
    score: float
    tier: Tier
    candidates: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""


def _listing(cands: Sequence[tuple[str, float]]) -> str:
    return ", ".join(f"{r} ({s:.2f})" for r, s in cands)


class ConfidenceGate:
    """Maps a proposed relation to a schema relation with KBQA-R1's confidence tiers.

    Args:
        ranker: scores relations against the proposal (e.g. :class:`~kgreason.rankers.DenseRanker`,
            cosine in [-1, 1]).
        tau_high: auto-accept at or above.
        tau_low: reject below.
        top_k: alternatives listed for a tentative acceptance.
        messages: ``"paper"`` (the three tiers as described) or ``"code"`` (the official
            code's snapping messages: "No relation matched" below ``snap_below``, top-k
            listed at scores up to ``tau_high``).
        snap_below: the code's threshold for the snapping message.
        enabled: ``False`` passes proposals through unchanged (ablation w/o RRCG).

    Example:
        >>> class Overlap(Ranker):  # word overlap, for the example
        ...     def score(self, query, candidates, context=None):
        ...         import torch
        ...         words = lambda r: set(verbalize_relation(r).split())
        ...         return torch.tensor([len(words(query) & words(c)) / len(words(query) | words(c))
        ...                              for c in candidates])
        >>> gate = ConfidenceGate(Overlap())
        >>> rels = ["people.person.place_of_birth", "people.person.nationality"]
        >>> gate("people.person.place_of_birth", rels).tier
        'exact'
        >>> d = gate("person.place_of_birth", rels)
        >>> d.tier, d.relation
        ('tentative', 'people.person.place_of_birth')
        >>> gate("film.film.directed_by", rels).relation is None
        True
    """

    def __init__(self, ranker: Ranker, tau_high: float = 0.95, tau_low: float = 0.3, top_k: int = 5,
                 messages: Literal["paper", "code"] = "paper", snap_below: float = 0.98, enabled: bool = True):
        if not tau_low < tau_high:
            raise ValueError(f"tau_low ({tau_low}) must be below tau_high ({tau_high})")
        if messages not in ("paper", "code"):
            raise ValueError(f"messages={messages!r}: choose 'paper' or 'code'")
        self.ranker = ranker
        self.tau_high = tau_high
        self.tau_low = tau_low
        self.top_k = top_k
        self.messages = messages
        self.snap_below = snap_below
        self.enabled = enabled

    def __call__(self, proposed: str, relations: Sequence[str]) -> GateDecision:
        """Gate ``proposed`` against the schema ``relations`` around the current entity."""
        proposed = proposed.strip()
        if not self.enabled:
            return GateDecision(proposed, proposed, 1.0, "ungated")
        if proposed in relations:
            return GateDecision(proposed, proposed, 1.0, "exact")
        if not relations:
            return GateDecision(proposed, None, 0.0, "reject", [], f'No relations to match "{proposed}" here.')
        # the ranker verbalises the candidates (film film directed by); the proposal alike
        ranked = self.ranker.rank(verbalize_relation(proposed), list(relations))
        best, s_max = ranked[0]
        # scores come as float32 (0.95 is 0.9499999881): compare at that precision
        s_cmp = s_max + _EPS
        if s_cmp >= self.tau_high:
            d = GateDecision(proposed, best, s_max, "accept", ranked[: self.top_k])
        elif s_cmp >= self.tau_low:
            d = GateDecision(proposed, best, s_max, "tentative", ranked[: self.top_k])
        else:
            return GateDecision(proposed, None, s_max, "reject", ranked,
                                f'Relation "{proposed}" matches no relation here (best score {s_max:.2f}). '
                                f"Relations with their scores: {_listing(ranked)}")
        d.note = self._note(d)
        return d

    def _note(self, d: GateDecision) -> str:
        if self.messages == "code":
            if d.score >= self.snap_below:
                return ""
            note = (f'No relation matched "{d.proposed}". Selected the most similar relation '
                    f'"{d.relation}" (score {d.score:.2f}).')
            near = [(r, s) for r, s in d.candidates if s <= self.tau_high]
            return note + (f" Similar relations: {_listing(near)}" if near else "")
        if d.tier == "accept":
            return ""
        return (f'"{d.proposed}" is not a relation here; using "{d.relation}" (score {d.score:.2f}). '
                f"Other candidates: {_listing(d.candidates[1:])}")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(tau_high={self.tau_high}, tau_low={self.tau_low}, top_k={self.top_k}, "
                f"messages={self.messages!r}, enabled={self.enabled})")
