"""The explored path tree behind KG-Reasoner's backtracking (paper 001, §4.2.3, Figure 4).

Every search expands the current entity: its neighbours, ranked, become its candidates.
Searching one of them moves down the tree. ``Backtrack=True`` marks the current entity a
dead end, returns to its parent and offers the parent's next-best candidate not yet
explored or offered; when the parent has none left it climbs further, up to the topic
entity ("if no suitable candidate is found, the process continues backtracking to
higher-level entities ... until a new valid reasoning path is identified or the initial
topic entity is reached").
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(repr=False, eq=False)
class PathNode:
    """One entity on an explored path (the same entity on two branches is two nodes).

    Attributes:
        entity: the entity id.
        parent: the node it was reached from (``None`` for the topic entity).
        candidates: its ranked neighbours once expanded, best first.
        tried: candidates already searched or offered by a backtrack.
        dead: backtracked out of.
    """

    entity: str
    parent: PathNode | None = None
    candidates: list[str] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    children: dict[str, PathNode] = field(default_factory=dict)
    dead: bool = False

    def next_candidate(self) -> str | None:
        """The best candidate neither tried nor on the path above (no cycles)."""
        above = set(self.path())
        return next((c for c in self.candidates if c not in self.tried and c not in above), None)

    def __repr__(self) -> str:
        return f"PathNode({' -> '.join(self.path())}{', dead' if self.dead else ''})"

    def path(self) -> list[str]:
        """Entities from the topic entity down to this node."""
        out, node = [], self
        while node is not None:
            out.append(node.entity)
            node = node.parent
        return out[::-1]


class PathTree:
    """The tree of paths explored from a topic entity.

    >>> t = PathTree("e1")
    >>> t.expand(["e2", "e3"]); t.visit("e2")
    PathNode(e1 -> e2)
    >>> t.expand(["e4", "e5"]); t.visit("e5")
    PathNode(e1 -> e2 -> e5)
    >>> t.backtrack()  # e5 is a dead end: back to e2, whose next best is e4
    ('e2', 'e4')
    >>> _ = t.visit("e4"); t.backtrack()  # e4 too; e2 has nothing left: up to e1, offering e3
    ('e1', 'e3')
    >>> t.current.path(), t.backtrack()  # nothing left anywhere: stay at the topic entity
    (['e1'], ('e1', None))
    """

    def __init__(self, root: str):
        self.root = PathNode(root)
        self.current = self.root
        self._offered = False  # the current node was reached by a backtrack's offer

    def expand(self, candidates: list[str]) -> None:
        """Record the current entity's ranked neighbours (a search's result)."""
        self.current.candidates = list(candidates)

    def visit(self, entity: str) -> PathNode:
        """Move down to ``entity``, a neighbour of the current node (or back to an existing child)."""
        cur = self.current
        self._offered = False
        cur.tried.add(entity)
        child = cur.children.get(entity)
        if child is None:
            child = cur.children[entity] = PathNode(entity, parent=cur)
        self.current = child
        return child

    def locate(self, entity: str) -> PathNode | None:
        """The node of ``entity`` on the current path, the deepest first (a search names an
        entity seen before: the model may jump back to it without a backtrack)."""
        node: PathNode | None = self.current
        while node is not None:
            if node.entity == entity:
                return node
            node = node.parent
        return None

    def backtrack(self) -> tuple[str, str | None]:
        """Leave the current node as a dead end; returns ``(entity, offered candidate)``.

        Climbs until a node has an untried candidate, which is offered (and counted as
        tried). A backtrack right after an offer, with nothing searched in between,
        turns the offer down: the same node offers its next candidate. At the topic entity
        with nothing left, returns ``(topic, None)``.
        """
        node = self.current
        if node.parent is not None and not self._offered:
            node.dead = True
            node = node.parent
        while True:
            offer = node.next_candidate()
            if offer is not None or node.parent is None:
                self.current = node
                self._offered = offer is not None
                if offer is not None:
                    node.tried.add(offer)
                return node.entity, offer
            node.dead = True  # nothing left here either: climb on
            node = node.parent
