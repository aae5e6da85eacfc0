"""Interactive Semantic Parsing's node / SPARQL / answer protocol as an action space.

ISP/DTPO (paper 002, §4.1, appendix D): ``<node>`` with an entity id or a variable bound
by an earlier query returns a ``<relation>`` list — relations found by the six
enumeration templates of appendix D.3 (1-hop out / in / value, 2-hop out / in / value
chains), ranked against the question by a dense ranker, top 10; ``<sparql>`` runs a
read-only query and returns result names in ``<information>``; ``<answer>\\boxed{...}``
ends the episode. The failure modes of appendix F.2 are typed error codes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgreason.declarations import declare
from kgreason.envs.base import ActionSpace, EpisodeState, ParseError
from kgreason.envs.payloads import NodePatterns, QueryResult
from kgreason.envs.text import TokenCounter, approx_tokens, tagged, truncate_items
from kgreason.envs.tools import Tool, ToolArg, ToolSpec
from kgreason.errors import KBError, KBForbiddenQuery, KBQueryError, KBTimeout, KBTruncated
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.patterns import RelationPattern, enumerate_patterns
from kgreason.kb.schema import expand_prefixes  # noqa: F401 - public here too (knowcoder, tests)
from kgreason.methods.isp_dtpo.grammar import one_think_one_command
from kgreason.rankers.base import Ranker
from kgreason.types import Action, KBQASample, Observation, Term

#: F.2 failure modes, plus the protocol errors of a node request
ISP_UNPARSABLE = "ISP_UNPARSABLE"
ISP_NOT_EXECUTABLE = "ISP_NOT_EXECUTABLE"
ISP_TIMEOUT = "ISP_TIMEOUT"
ISP_EMPTY = "ISP_EMPTY"
ISP_UNKNOWN_NODE = "ISP_UNKNOWN_NODE"
ERROR_CODES = (ISP_UNPARSABLE, ISP_NOT_EXECUTABLE, ISP_TIMEOUT, ISP_EMPTY, ISP_UNKNOWN_NODE)

#: Figure 8 of the paper (the reasoning-model prompt), verbatim up to the question.
PROMPT = (
    "You are an intelligent Q&A assistant capable of interacting with a knowledge graph (KG). By "
    "continuously interacting with the KG, you obtain the necessary information to answer questions and "
    "provide users with accurate and effective responses. The KG service is running normally; if no valid "
    "information is returned, it means that your interaction request contains an error.\n\n"
    "For every question asked by the user, you must include your reasoning inside <think> and </think> "
    "tags, and summarize your reasoning process and provide the final answer inside <answer> and "
    "</answer> tags.\n\n"
    "When interacting with the KG, you may use <node> and <SPARQL> to communicate with the KG. The KG "
    "system will execute your queries and return corresponding information within <relation> and "
    "<information> tags.\n\n"
    "You can output a key node inside <node> </node> tags to request exploration of that node. The KG "
    "will return all relations associated with that node. A key node may be either the ID of a concrete "
    "entity, or an intermediate variable from your SPARQL query. Returned relations are wrapped in "
    "<relation> tags. Within these relations, <node> indicates the position of the node you queried, "
    "serving as either the subject or object of the relation. ?a or ?b represent connected entities. You "
    "may only explore information through relations returned inside <relation> tags.\n\n"
    "You may write a SPARQL query wrapped in <sparql> </sparql> tags to query information from the "
    "knowledge graph. The KG system will execute it and return results within <information> "
    "</information> tags. If your SPARQL query returns no results, you may attempt a different SPARQL "
    "query.\n\n"
    "If you believe you have obtained sufficient information to support your answer, summarize your "
    "reasoning and provide the final answer within <answer> </answer> tags, and enclose the answer in "
    "\\boxed{{...}}.\n\n"
    "Question: {question}"
)

MAX_COMMANDS = 8  # per turn: each can run several KB queries
_VAR = re.compile(r"^[?$][A-Za-z_]\w*$")


@dataclass
class ISPState:
    """One ISP episode's bound variables: ``?x`` → the entity ids its last query gave it
    (a later ``<node>?x</node>`` explores them)."""

    bound: dict[str, list[str]] = field(default_factory=dict)


@declare(ranks="relations", contexts=("flat",), schemas=("freebase",))
class ISPActionSpace(ActionSpace):
    """``<node>`` / ``<sparql>`` / ``<answer>`` (ISP/DTPO).

    Args:
        ranker: scores relation patterns against the question (a
            :class:`~kgreason.rankers.DenseRanker` in the method config); None keeps the
            enumeration order (alphabetical), for tests and ablations.
        top_k: relation patterns shown per node (paper: 10).
        templates: which of the six enumeration templates run (default all).
        two_hop: ``"cvt"`` keeps 2-hop chains whose middle node is unnamed (Freebase CVTs,
            where 2-hop chains carry meaning) or ``"all"``.
        max_node_values: a variable node is explored over at most this many of its values.
        max_obs_tokens: ``<information>`` budget; longer results end with "… N more".
        query_timeout_s: per-query time budget (a time-out is failure mode 3).
        prefixes: prefix → namespace expanded in policy SPARQL (default ``ns`` → the KB's
            entity namespace).
    """

    name = "isp_dtpo"
    stop_sequences = ("</sparql>", "</SPARQL>", "</node>", "</answer>")
    #: commands are tags (``<node>...</node>``, ``<sparql>...</sparql>``), one argument each
    tools = ToolSpec([
        Tool("node", "Relation patterns around an entity id or a variable bound by an earlier query.",
             (ToolArg("node"),)),
        Tool("sparql", "Runs a read-only SPARQL query.", (ToolArg("query"),)),
    ])

    def __init__(self, ranker: Ranker | None = None, top_k: int = 10, templates: Sequence[int] = (1, 2, 3, 4, 5, 6),
                 two_hop: str = "cvt", max_node_values: int = 20, max_obs_tokens: int = 512,
                 count_tokens: TokenCounter = approx_tokens, query_timeout_s: float | None = 10.0,
                 prefixes: dict[str, str] | None = None, show_topic_ids: bool = True):
        if two_hop not in ("cvt", "all"):
            raise ValueError("two_hop must be 'cvt' or 'all'")
        if not set(templates) <= {1, 2, 3, 4, 5, 6}:
            raise ValueError("templates are numbered 1-6 (appendix D.3)")
        self.ranker = ranker
        self.top_k = top_k
        self.templates = tuple(templates)
        self.two_hop = two_hop
        self.max_node_values = max_node_values
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.query_timeout_s = query_timeout_s
        self.prefixes = prefixes
        self.show_topic_ids = show_topic_ids

    # --------------------------------------------------------------- prompt
    def instructions(self) -> str:
        return PROMPT.split("Question:")[0].strip()

    def init_state(self, state: EpisodeState) -> None:
        state.space_state = ISPState()

    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        question = sample.question.strip()
        if self.show_topic_ids and sample.topic_entities:
            ents = ", ".join(f"{e.name or e.id} ({e.id})" for e in sample.topic_entities)
            question += f"\nTopic entities: {ents}"
        return [{"role": "user", "content": PROMPT.format(question=question)}]

    def format_observation(self, obs: Sequence[Observation]) -> str:
        # node results come back in <relation>, query results in <information>
        return "\n\n" + "\n".join(o.text for o in obs) + "\n\n"

    # ---------------------------------------------------------------- parse
    def format_ok(self, text: str) -> bool:
        return one_think_one_command(text)

    def parse(self, text: str) -> list[Action] | ParseError:
        found = tagged(text, ("node", "sparql"))
        if len(found) > MAX_COMMANDS:
            return ParseError(ISP_UNPARSABLE, f"<information>{len(found)} commands in one turn; write at most "
                              f"{MAX_COMMANDS}.</information>")
        # in the order they were written (selective activation runs them in sequence)
        actions = [Action(tag, [content.strip()], raw) for tag, content, raw in found]
        if not actions:
            return ParseError(ISP_UNPARSABLE, "<information>No <node>, <sparql> or <answer> command found. "
                              "Write exactly one command after </think>.</information>")
        return actions

    # -------------------------------------------------------------- execute
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        kb = state.kb
        if action.name == "node":
            return self._node(action.args[0], state, kb)
        return self._sparql(action.args[0], state, kb)

    def _error(self, code: str, msg: str, tag: str = "information", kb_calls: int = 0) -> Observation:
        return Observation(f"<{tag}>{msg}</{tag}>", error=code, kb_calls=kb_calls)

    def _node_values(self, arg: str, state: EpisodeState, kb: KnowledgeBase) -> list[str] | None:
        arg = arg.strip().strip("<>")
        if _VAR.match(arg):
            vals = state.of(ISPState).bound.get("?" + arg[1:])
            return list(vals[: self.max_node_values]) if vals else None
        for pfx, ns in self._prefixes(kb).items():
            if arg.startswith(pfx + ":"):
                arg = ns + arg[len(pfx) + 1:]
        local = kb.schema.to_id(arg)
        if local in state.known.get(local, []) or kb.exists(local):
            return [local]
        ids = state.known.get(arg) or state.known.get(arg.lower())
        return list(ids) if ids else None

    def _prefixes(self, kb: KnowledgeBase) -> dict[str, str]:
        return self.prefixes if self.prefixes is not None else {"ns": kb.schema.entity_ns}

    def expand_query(self, query: str, kb: KnowledgeBase) -> str:
        """A policy's ``<sparql>`` with its prefixed names written out, as it is executed."""
        return expand_prefixes(query, self._prefixes(kb))

    def enumerate_patterns(self, nodes: Sequence[str], kb: KnowledgeBase) -> list[RelationPattern]:
        """Run the enumeration templates around ``nodes`` (one SPARQL query each)."""
        return enumerate_patterns(kb, nodes, self.templates, two_hop=self.two_hop, timeout_s=self.query_timeout_s)

    def _node(self, arg: str, state: EpisodeState, kb: KnowledgeBase) -> Observation:
        try:
            nodes = self._node_values(arg, state, kb)
            if nodes is None:
                return self._error(ISP_UNKNOWN_NODE, f'Node "{arg}" is neither an entity id nor a variable '
                                   "bound by an earlier query.", tag="relation", kb_calls=1)
            patterns = self.enumerate_patterns(nodes, kb)
        except KBTimeout as e:
            return self._error(ISP_TIMEOUT, f"Relation enumeration timed out: {e}", tag="relation")
        except KBError as e:
            return self._error(ISP_NOT_EXECUTABLE, f"Relation enumeration failed: {e}", tag="relation")
        calls = 1 + len(self.templates)
        if not patterns:
            return self._error(ISP_EMPTY, f'No relations found around node "{arg}".', tag="relation", kb_calls=calls)
        if self.ranker is not None:
            # patterns of different templates can share relation names (out and in):
            # rank the names, then list every pattern of a name at its rank
            by_key: dict[str, list[RelationPattern]] = {}
            for p in patterns:
                by_key.setdefault(p.key(), []).append(p)
            ranked = self.ranker.rank(state.sample.question, list(by_key), top_k=self.top_k)
            shown = [p for k, _ in ranked for p in by_key[k]][: self.top_k]
        else:
            shown = patterns[: self.top_k]
        lines = [p.text() for p in shown]
        key = "node|" + "\n".join(sorted(lines))
        rels = sorted({r for p in shown for r in p.relations})
        return Observation("<relation>" + "\n".join(lines) + "</relation>",
                           payload=NodePatterns(nodes, shown, key),
                           relations=rels, entities=[n for n in nodes], kb_calls=calls)

    def _sparql(self, query: str, state: EpisodeState, kb: KnowledgeBase) -> Observation:
        full = self.expand_query(query, kb)
        truncated = False
        try:
            rows = kb.select(full, timeout_s=self.query_timeout_s)
        except KBForbiddenQuery as e:
            return self._error(ISP_NOT_EXECUTABLE, f"Only read-only SELECT/ASK queries run here: {e}", kb_calls=1)
        except KBTimeout as e:
            return self._error(ISP_TIMEOUT, f"The query timed out: {e}", kb_calls=1)
        except KBTruncated as e:
            rows, truncated = list(e.rows), True
        except KBQueryError as e:
            return self._error(ISP_NOT_EXECUTABLE, f"The query could not be executed: {e}", kb_calls=1)
        except KBError as e:
            return self._error(ISP_NOT_EXECUTABLE, f"Knowledge base error: {e}", kb_calls=1)
        if not rows or all(not r for r in rows):
            return self._error(ISP_EMPTY, "The query returned no results.", kb_calls=1)
        variables = list(dict.fromkeys(v for r in rows for v in r))
        terms = [t for r in rows for t in r.values()]
        ids = sorted({t.value for t in terms if t.is_entity})
        names = kb.names(ids) if ids else {}
        bound = state.of(ISPState).bound
        for v in variables:
            bound["?" + v] = list(dict.fromkeys(r[v].value for r in rows if v in r and r[v].is_entity))

        def label(t: Term) -> str:
            if t.is_literal:
                state.remember(t.value, t.value)
                return t.value
            state.remember(t.value, t.value)
            name = names.get(t.value)
            if name and name != t.value:
                state.remember(name, t.value)
                return f"{name} ({t.value})"
            return t.value

        if len(variables) == 1:
            items = sorted({label(r[variables[0]]) for r in rows if variables[0] in r})
        else:
            items = sorted({", ".join(f"?{v}={label(r[v])}" for v in variables if v in r) for r in rows})
        body = truncate_items(items, self.max_obs_tokens, self.count_tokens)
        if truncated:
            body += f" (results cut at {len(rows)} rows)"
        values = sorted({t.value for t in terms})
        return Observation(f"<information>{body}</information>",
                           payload=QueryResult(full, values, rows),
                           entities=ids, kb_calls=1)
