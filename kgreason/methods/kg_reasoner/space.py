"""KG-Reasoner's search inside the thought (paper 001, §4.1–4.2; design §4).

The policy thinks in one ``<think>``; writing ``<search> entity </search>`` stops
decoding, the environment inserts the entity's one-hop neighbours in both directions as
``<triples> (head, relation, tail) ... </triples>``, ranked by the entity ranker (the
GAT ranker in the method, any :class:`~kgreason.rankers.Ranker` otherwise), and decoding
resumes inside the same thought. The lock-step rollout appends observations as raw
tokens (no chat turn), so every row keeps its KV cache across insertions and the
inserted tokens are masked from the loss. ``<search> entity, backtrack </search>``
(``Backtrack=True`` in the paper) leaves the current entity as a dead end and offers the
parent's next-best candidate, climbing up to the topic entity (:class:`PathTree`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgreason.declarations import declare
from kgreason.envs.base import ActionSpace, EpisodeState, ParseError
from kgreason.envs.text import TokenCounter, approx_tokens
from kgreason.envs.tools import Tool, ToolArg, ToolSpec
from kgreason.errors import KBError, KBTimeout
from kgreason.methods.kg_reasoner.grammar import search_in_think_format
from kgreason.methods.kg_reasoner.path_tree import PathTree
from kgreason.rankers.base import Ranker, TrainableRanker
from kgreason.rankers.graph import Neighbourhood
from kgreason.types import Action, KBQASample, Observation

KGR_FORMAT_ERROR = "KGR_FORMAT_ERROR"        # neither a search nor an answer
KGR_BAD_ARGUMENTS = "KGR_BAD_ARGUMENTS"
KGR_UNKNOWN_ENTITY = "KGR_UNKNOWN_ENTITY"
KGR_NO_NEIGHBOURS = "KGR_NO_NEIGHBOURS"
KGR_NOTHING_TO_BACKTRACK = "KGR_NOTHING_TO_BACKTRACK"
KGR_TIMEOUT = "KGR_TIMEOUT"
KGR_KB_ERROR = "KGR_KB_ERROR"
KGR_NO_BACKTRACKING = "KGR_NO_BACKTRACKING"
ERROR_CODES = (KGR_FORMAT_ERROR, KGR_BAD_ARGUMENTS, KGR_UNKNOWN_ENTITY, KGR_NO_NEIGHBOURS,
               KGR_NOTHING_TO_BACKTRACK, KGR_TIMEOUT, KGR_KB_ERROR, KGR_NO_BACKTRACKING)

TOOLS = ToolSpec([
    Tool("search", "The one-hop neighbours of an entity, both directions, most relevant first. With "
         "backtrack, return to the entity before the current one and take its next-best neighbour.",
         (ToolArg("entity"), ToolArg("backtrack", required=False))),
])

PROMPT = (
    "Answer the question with the knowledge graph. Think step by step inside <think>...</think>. "
    "While thinking, write <{s}> entity </{s}> to see the entity's neighbours: they come back as "
    "<{r}> (head, relation, tail) ... </{r}>, the most relevant first, and you go on thinking. "
    "{backtrack}After </think>, give the final answer inside "
    "<answer>...</answer>; separate several answers with |.\n"
    "Topic entities: {entities}\n"
    "Question: {question}"
)
BACKTRACK_NOTE = ("If the {r} show a wrong turn, write <{s}> entity, backtrack </{s}> to return to the previous "
                  "entity and get its next-best neighbour. ")

_BACKTRACK = re.compile(r"^(?:backtrack\s*(?:=\s*true)?|true)$", re.I)
_NO_BACKTRACK = re.compile(r"^(?:backtrack\s*=\s*false|false)$", re.I)
MAX_SEARCH_CHARS = 300
ECHO_CHARS = 120


def _echo(text: str) -> str:
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


@dataclass
class KGReasonerState:
    """What one KG-Reasoner episode has explored.

    Attributes:
        tree: the explored path tree (None before the first search).
        shown: entity id → the neighbours its search listed, ranked, as
            ``(triple text, neighbour id, neighbour name)``.
        labels: entity id → the name the triples wrote for it.
    """

    tree: PathTree | None = None
    shown: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)


@declare(ranks="entities", contexts=("graph", "flat"))
class KGReasonerActionSpace(ActionSpace):
    """One search tool inside the thought, with backtracking over the explored path tree.

    Args:
        ranker: orders an entity's neighbours against the question: a
            :class:`~kgreason.rankers.GATEntityRanker` reads the neighbourhood graph, any
            other ranker the "relation words + name" text of each neighbour; ``None``
            keeps the KB's order.
        top_k: neighbours shown per search.
        context: second-ring edges per neighbour read for a trainable ranker.
        max_neighbours: neighbours read per search (the rest are never ranked).
        search_tag, result_tag: the tag names (the paper's ``search`` / ``triples``;
            variants such as ``kg-search`` as options).
        max_obs_tokens: budget of the listed triples (an entity tied to the centre by many
            relations writes a long line); fewer than ``top_k`` are shown past it.
        backtracking: ``False`` is the paper's "w/o backtracking" (Table 2): the prompt
            does not offer it and a backtrack is a ``KGR_NO_BACKTRACKING`` error.
    """

    name = "kg_reasoner"
    tools = TOOLS

    def __init__(self, ranker: Ranker | None = None, top_k: int = 10, context: int = 8, max_neighbours: int = 200,
                 search_tag: str = "search", result_tag: str = "triples", max_obs_tokens: int = 512,
                 count_tokens: TokenCounter = approx_tokens, backtracking: bool = True):
        for tag, what in ((search_tag, "search_tag"), (result_tag, "result_tag")):
            if not re.fullmatch(r"[A-Za-z][\w-]*", tag) or tag in ("think", "answer"):
                raise ValueError(f"{what}={tag!r}: a tag name of letters, digits, '-' or '_', not think/answer")
        if top_k < 1:
            raise ValueError(f"top_k={top_k}: show at least one neighbour")
        self.ranker = ranker
        self.top_k = top_k
        self.context = context
        self.max_neighbours = max_neighbours
        self.search_tag = search_tag
        self.result_tag = result_tag
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.backtracking = backtracking
        self.stop_sequences = (f"</{search_tag}>", "</answer>")
        self._search = re.compile(rf"<{re.escape(search_tag)}>(.*?)(?:</{re.escape(search_tag)}>|$)", re.S)

    # --------------------------------------------------------------- prompt
    def instructions(self) -> str:
        return "\n".join(t.describe() for t in TOOLS)

    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        ents = ", ".join(e.name or e.id for e in sample.topic_entities) or "none given"
        note = BACKTRACK_NOTE.format(s=self.search_tag, r=self.result_tag) if self.backtracking else ""
        text = PROMPT.format(s=self.search_tag, r=self.result_tag, backtrack=note, entities=ents,
                             question=sample.question.strip())
        return [{"role": "user", "content": text}]

    def init_state(self, state: EpisodeState) -> None:
        state.space_state = KGReasonerState(labels={e.id: e.name or e.id for e in state.sample.topic_entities})

    def last_turn_note(self) -> str:
        return "(No searches left: close the thought with </think> and answer inside <answer>...</answer>.)"

    def format_observation(self, obs: Sequence[Observation]) -> str:
        body = "\n".join(o.text for o in obs)
        return f"\n<{self.result_tag}>\n{body}\n</{self.result_tag}>\n"

    # ---------------------------------------------------------------- parse
    def search_call(self, entity: str, backtrack: bool = False) -> str:
        """The search as the policy writes it, in this space's tags (teachers write with it).

        >>> KGReasonerActionSpace(search_tag="kg-search").search_call("Paris", backtrack=True)
        '<kg-search> Paris, backtrack </kg-search>'
        """
        return f"<{self.search_tag}> {entity}{', backtrack' if backtrack else ''} </{self.search_tag}>"

    def response_format_ok(self, texts: Sequence[str]) -> bool:
        # the thought spans the messages the insertions cut it into
        return search_in_think_format("".join(texts), self.search_tag)

    def parse(self, text: str) -> list[Action] | ParseError:
        m = self._search.search(text) if f"<{self.search_tag}>" in text else None
        if m is None:
            return ParseError(KGR_FORMAT_ERROR, f"No search found. Write <{self.search_tag}> entity "
                              f"</{self.search_tag}> while thinking, or the final answer inside <answer>...</answer>.")
        body = m.group(1).strip()
        if len(body) > MAX_SEARCH_CHARS:
            return ParseError(KGR_BAD_ARGUMENTS, f"The search is {len(body)} characters long; name one entity.")
        entity, backtrack = body, False
        if "," in body:
            head, tail = body.rsplit(",", 1)
            flag = tail.strip()
            if _BACKTRACK.match(flag):
                entity, backtrack = head.strip(), True
            elif _NO_BACKTRACK.match(flag):
                entity = head.strip()
        elif _BACKTRACK.match(body):
            entity, backtrack = "", True
        if entity.lower().startswith("entity="):
            entity = entity.split("=", 1)[1].strip()
        entity = entity.strip().strip('"').strip("'")
        if not entity and not backtrack:
            return ParseError(KGR_BAD_ARGUMENTS, "The search names no entity.")
        return [Action("search", [entity], raw=body, kwargs={"backtrack": backtrack})]

    # -------------------------------------------------------------- execute
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        try:
            if action.kwargs.get("backtrack"):
                if not self.backtracking:
                    return Observation("Backtracking is not available: search an entity instead.",
                                       error=KGR_NO_BACKTRACKING)
                return self._backtrack(state)
            return self._expand(action.args[0], state)
        except KBTimeout as e:
            return Observation(f"The knowledge graph timed out ({_echo(str(e))}); try again or answer.",
                               error=KGR_TIMEOUT, kb_calls=1)
        except KBError as e:
            return Observation(f"Knowledge graph error: {_echo(str(e))}", error=KGR_KB_ERROR, kb_calls=1)

    def _entity(self, text: str, state: EpisodeState) -> str | None:
        ids = state.known.get(text) or state.known.get(text.lower())
        if ids:
            return ids[0]
        return text if re.fullmatch(r"[\w.:/\-#]+", text) and state.kb.exists(text) else None

    def _expand(self, text: str, state: EpisodeState) -> Observation:
        kb = state.kb
        e = self._entity(text, state)
        if e is None:
            return Observation(f'"{_echo(text)}" is not an entity seen so far; search a topic entity or a name '
                               f"from the {self.result_tag}.", error=KGR_UNKNOWN_ENTITY, kb_calls=1)
        st = state.of(KGReasonerState)
        tree = st.tree
        if tree is None:
            tree = st.tree = PathTree(e)
        elif (node := tree.locate(e)) is not None:
            tree.current = node  # back to an entity on the current path
        else:
            tree.visit(e)
        trainable = isinstance(self.ranker, TrainableRanker)
        before = kb.stats["queries"]
        g = Neighbourhood.from_kb(kb, e, max_neighbours=self.max_neighbours, context=self.context if trainable else 0)
        if not g.candidates:
            tree.expand([])
            return Observation(f"{g.labels[0]} has no neighbours.", error=KGR_NO_NEIGHBOURS,
                               kb_calls=int(kb.stats["queries"] - before))
        texts = g.candidate_texts()
        if self.ranker is None:
            order = list(range(len(texts)))
        else:
            scores = self.ranker.score(state.sample.question, texts, context=g if trainable else None).tolist()
            order = sorted(range(len(texts)), key=lambda i: -scores[i])
        ranked = [g.candidates[i] for i in order]
        shown = [(self._triples(g, j), g.nodes[j], g.labels[j]) for j in ranked]
        st.shown[e] = shown
        st.labels[e] = g.labels[0]
        tree.expand([n for _, n, _ in shown])
        lines: list[str] = []
        used = 0
        for t, _, _ in shown[: self.top_k]:
            used += self.count_tokens(t) + 1
            if lines and used > self.max_obs_tokens:
                break
            lines.append(t)
        for _, n, label in shown[: len(lines)]:
            state.remember(label, n)
        more = len(shown) - len(lines)
        if more > 0:
            lines.append(f"… {more} more neighbours of {g.labels[0]} not shown")
        return Observation("\n".join(lines), entities=[n for _, n, _ in shown[: len(lines)]],
                           relations=sorted(set(g.edge_relations)), kb_calls=int(kb.stats["queries"] - before))

    def _backtrack(self, state: EpisodeState) -> Observation:
        st = state.of(KGReasonerState)
        tree = st.tree
        if tree is None:
            return Observation("There is nothing to backtrack from yet: search a topic entity first.",
                               error=KGR_NOTHING_TO_BACKTRACK)
        entity, offer = tree.backtrack()
        name = st.labels.get(entity, entity)
        if offer is None:
            return Observation(f"Backtracked to {name}: no unexplored neighbours are left.",
                               error=KGR_NOTHING_TO_BACKTRACK)
        triple, _, label = next(x for x in st.shown[entity] if x[1] == offer)
        state.remember(label, offer)
        return Observation(f"Backtracked to {name}; its next candidate:\n{triple}", entities=[offer])

    @staticmethod
    def _triples(g: Neighbourhood, j: int) -> str:
        src, dst = g.edge_index.tolist()
        out = []
        for s, d, r in zip(src, dst, g.edge_relations, strict=True):
            if (s, d) == (0, j):
                out.append(f"({g.labels[0]}, {r}, {g.labels[j]})")
            elif (s, d) == (j, 0):
                out.append(f"({g.labels[j]}, {r}, {g.labels[0]})")
        return " ".join(out)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(ranker={type(self.ranker).__name__ if self.ranker else None}, "
                f"top_k={self.top_k}, tags=({self.search_tag!r}, {self.result_tag!r}))")
