"""The typed graph context a trainable entity ranker reads.

KG-Reasoner scores the one-hop neighbours of the entity it is exploring with
question-conditioned graph attention (design §5). :class:`Neighbourhood` is that graph:
the centre entity, its neighbours in both directions (the candidates), and one edge per
triple, with the relation of each edge; optionally a second ring, each candidate's own
neighbours, the context the paper's attention aggregates ("an entity's attributes are
often its one-hop neighbours", KG-Reasoner §4.2.2). :meth:`Neighbourhood.from_kb` reads
it from any backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from kgreason.kb.base import KnowledgeBase
from kgreason.rankers.base import verbalize_relation


@dataclass
class Neighbourhood:
    """An entity's one-hop neighbourhood (node 0 is the centre).

    Shapes: ``N`` nodes, ``E`` edges; ``edge_index`` is ``[2, E]`` (source, target, in
    the KB's direction), ``edge_relations`` has ``E`` relation ids.

    Attributes:
        nodes: node ids (entity ids, or a literal's lexical form).
        labels: display names of the nodes (the id when the KB names nothing).
        candidates: node indices a ranker scores (default: every neighbour).
    """

    nodes: list[str]
    labels: list[str]
    edge_index: Tensor
    edge_relations: list[str]
    candidates: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.edge_index.dim() != 2 or self.edge_index.shape[0] != 2:
            raise ValueError(f"edge_index must be [2, E], got {list(self.edge_index.shape)}")
        if self.edge_index.shape[1] != len(self.edge_relations):
            raise ValueError(f"{self.edge_index.shape[1]} edges but {len(self.edge_relations)} relations")
        if len(self.labels) != len(self.nodes):
            raise ValueError(f"{len(self.nodes)} nodes but {len(self.labels)} labels")
        if not self.candidates:
            self.candidates = list(range(1, len(self.nodes)))

    @property
    def center(self) -> str:
        return self.nodes[0]

    def relations_to(self, i: int) -> list[str]:
        """The relations joining the centre and node ``i`` (either direction)."""
        src, dst = self.edge_index.tolist()
        return [r for s, d, r in zip(src, dst, self.edge_relations, strict=True) if {s, d} == {0, i}]

    def candidate_texts(self) -> list[str]:
        """Each candidate as the words of its edges to the centre and its name, the text a
        sentence encoder ranks (``"location country capital Nairobi"``)."""
        src, dst = self.edge_index.tolist()
        rels: dict[int, list[str]] = {i: [] for i in self.candidates}
        for s, d, r in zip(src, dst, self.edge_relations, strict=True):
            other = d if s == 0 else s if d == 0 else None
            if other in rels and r not in rels[other]:
                rels[other].append(r)
        return [" ".join([*(verbalize_relation(r) for r in rels[i]), self.labels[i]]) for i in self.candidates]

    @classmethod
    def flat(cls, candidates: Sequence[str]) -> Neighbourhood:
        """A candidate list as a graph with no edges: an empty centre and one node per
        candidate, labelled with its text. A graph ranker then judges each candidate by its
        own text against the question (no messages reach it), which lets it rank relations
        or patterns for action spaces that have no neighbourhood to give.

        >>> g = Neighbourhood.flat(["film.film.directed_by", "people.person.spouse"])
        >>> g.candidates, g.labels, g.edge_index.shape
        ([1, 2], ['', 'film.film.directed_by', 'people.person.spouse'], torch.Size([2, 0]))
        """
        texts = list(candidates)
        return cls(["", *texts], ["", *texts], torch.zeros(2, 0, dtype=torch.long), [], list(range(1, len(texts) + 1)))

    @classmethod
    def from_kb(cls, kb: KnowledgeBase, entity: str, max_neighbours: int = 200, context: int = 0) -> Neighbourhood:
        """Read ``entity``'s neighbours in both directions from ``kb``.

        Hidden relations (names, aliases) are not edges. At most ``max_neighbours``
        distinct neighbours are kept, in the KB's sorted order (out-going first); they
        are the candidates. With ``context > 0`` each entity candidate also brings up to
        ``context`` of its own edges (out-going first, sorted; edges back to the centre
        are already there), read for all candidates in two queries.

        >>> from kgreason.data import load_demo_kb
        >>> kb = load_demo_kb()
        >>> g = Neighbourhood.from_kb(kb, kb.lookup("Kenya")[0])
        >>> g.labels[0], "location.country.capital" in g.relations_to(g.labels.index("Nairobi"))
        ('Kenya', True)
        """
        index = {entity: 0}
        nodes, src, dst, rels = [entity], [], [], []

        def node(v: str) -> int | None:
            if v not in index:
                if len(nodes) > max_neighbours:
                    return None
                index[v] = len(nodes)
                nodes.append(v)
            return index[v]

        entities = set()
        for r in kb.relations_out(entity):
            for t in kb.tails(entity, r):
                j = node(t.value)
                if j is not None:
                    src.append(0), dst.append(j), rels.append(r)
                    if t.is_entity:
                        entities.add(t.value)
        for r in kb.relations_in(entity):
            for h in kb.heads(entity, r):
                j = node(h.value)
                if j is not None:
                    src.append(j), dst.append(0), rels.append(r)
                    entities.add(h.value)
        candidates = list(range(1, len(nodes)))
        if context > 0:
            ring = [n for n in nodes[1:] if n in entities]
            kept: dict[str, int] = {}
            seen: set[tuple[int, int, str]] = set()  # an edge between two candidates comes from both ends
            for direction in ("out", "in"):
                for e, r, far in kb.edges_around(ring, direction):
                    if far.value == entity or kept.get(e, 0) >= context:
                        continue
                    kept[e] = kept.get(e, 0) + 1
                    j = index.get(far.value)
                    if j is None:
                        j = index[far.value] = len(nodes)
                        nodes.append(far.value)
                    a, b = (index[e], j) if direction == "out" else (j, index[e])
                    if (a, b, r) not in seen:
                        seen.add((a, b, r))
                        src.append(a), dst.append(b), rels.append(r)
        names = kb.names(nodes)
        labels = [names.get(n, n) for n in nodes]
        return cls(nodes, labels, torch.tensor([src, dst], dtype=torch.long).reshape(2, -1), rels, candidates)
