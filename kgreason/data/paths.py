"""Gold reasoning paths at the entity level, from a sample's relation path.

A relation path (``["~directed_by", "in_language"]``) names the relations to follow; the
entities on the way are read from the KB. :func:`gold_walk` keeps only the entities that
lie on a path ending at an answer: the labels of KG-Reasoner's entity ranker (paper 001,
§4.2.2) and the right steps of its cold-start trajectories.
"""

from __future__ import annotations

from dataclasses import dataclass

from kgreason.kb.base import KnowledgeBase
from kgreason.types import KBQASample


@dataclass(frozen=True)
class GoldHop:
    """One step of a gold path: from ``centre`` along ``relation`` the gold entities are ``gold``.

    Attributes:
        hop: 0 for the step from the topic entity.
        relation: the path step (``~r`` walks ``r`` backwards).
        centre: the entity the step starts from.
        gold: the entities it reaches that lead on to an answer, sorted.
        reached: everything the step reaches from ``centre``, sorted.
    """

    hop: int
    relation: str
    centre: str
    gold: tuple[str, ...]
    reached: tuple[str, ...]


def gold_walk(kb: KnowledgeBase, sample: KBQASample, max_frontier: int = 500,
              exclude_topic: bool = True) -> list[GoldHop]:
    """Walk ``sample.relation_path`` from its first topic entity and keep the answer paths.

    The walk goes forward hop by hop, then prunes backwards from the answers: an entity
    is gold at hop ``i`` when one of its successors is gold at hop ``i + 1``. For a count
    question (the answer a number equal to the size of the last frontier) the whole last
    frontier is gold.

    Args:
        kb: the knowledge base.
        sample: a question with ``relation_path`` and ``topic_entities``.
        max_frontier: give up (return ``[]``) when a frontier grows beyond this.
        exclude_topic: never step back onto the topic entity (MetaQA's convention).

    Returns:
        One :class:`GoldHop` per (hop, gold centre), in hop order; ``[]`` when the path
        does not reach an answer.

    Example:
        >>> from kgreason.data import load_demo_kb, load_dataset
        >>> kb = load_demo_kb()
        >>> q = next(s for s in load_dataset("demo", split="train") if s.meta["qtype"] == "2-hop")
        >>> hops = gold_walk(kb, q)
        >>> [h.hop for h in hops][:2], hops[0].centre == q.topic_entities[0].id
        ([0, 1], True)
    """
    if not sample.relation_path or not sample.topic_entities:
        return []
    topic = sample.topic_entities[0].id
    frontiers: list[list[str]] = [[topic]]
    succ: list[dict[str, tuple[str, ...]]] = []
    for step in sample.relation_path:
        backward = step.startswith("~")
        rel = step[1:] if backward else step
        nxt: dict[str, tuple[str, ...]] = {}
        for e in frontiers[-1]:
            terms = kb.heads(e, rel) if backward else kb.tails(e, rel)
            nxt[e] = tuple(sorted({t.value for t in terms if not (exclude_topic and t.value == topic)}))
        succ.append(nxt)
        frontier = sorted({t for ts in nxt.values() for t in ts})
        if not frontier or len(frontier) > max_frontier:
            return []
        frontiers.append(frontier)
    answers = {a.id for a in sample.answers} | {a.name for a in sample.answers if a.name}
    gold = set(frontiers[-1]) & answers
    if not gold and len(sample.answers) == 1 and sample.answers[0].label == str(len(frontiers[-1])):
        gold = set(frontiers[-1])  # a count question counts the last frontier
    if not gold:
        return []
    hops: list[GoldHop] = []
    for i in range(len(sample.relation_path) - 1, -1, -1):
        centres = [e for e in frontiers[i] if set(succ[i][e]) & gold]
        hops[:0] = [GoldHop(i, sample.relation_path[i], c, tuple(t for t in succ[i][c] if t in gold), succ[i][c])
                    for c in centres]
        gold = set(centres)
    return hops
