"""KnowCoder-A1's three tools (paper 003 §4.1, after Interactive-KBQA).

The policy thinks, then calls one tool per turn as JSON (official code)::

    <think>...</think>
    <tool_call>{"name": "SearchGraphPatterns", "arguments": {"sparql": "SELECT DISTINCT ?x WHERE { VALUES ?x {ns:m.0abc} }", "semantic": "capital"}}</tool_call>

or, with ``call_syntax="function"`` (the paper's examples), ``SearchGraphPatterns(sparql="...",
semantic="...")`` inside the same tags; the parser reads both. Replies come back as
``<tool_response>{"results": "..."}</tool_response>`` (``{"error": "..."}`` on failure),
and the episode ends with ``<answer>\\boxed{["..."]}</answer>``.

* ``SearchTypes(query)`` — the KB's classes ranked against the query (top 10).
* ``SearchGraphPatterns(sparql, semantic)`` — one- and two-hop patterns around the
  sketch's SELECT variable: ``(?x, relation, "example")``, ``("example", relation, ?x)``,
  mediator (CVT) chains written ``r1 -> r2`` (``^r1 -> r2`` when the mediator points
  at ?x, SPARQL's inverse path); schema relations (``common.*``, ``type.*``)
  left out; ranked against ``semantic`` (else the question), top 10, one example value each.
* ``ExecuteSPARQL(sparql)`` — read-only execution; names instead of ids, sorted, cut at
  1,000 characters with a note.

Every malformed call — bad JSON, an unknown tool, a missing or unknown argument, a SPARQL
syntax error, an update, a time-out, an empty result — comes back as a typed error the
policy can recover from.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence

from kgreason.declarations import declare
from kgreason.envs.base import ActionSpace, EpisodeState, ParseError
from kgreason.envs.text import TokenCounter, approx_tokens, truncate_items
from kgreason.envs.tools import Tool, ToolArg, ToolArgumentError, ToolSpec
from kgreason.errors import KBError, KBForbiddenQuery, KBQueryError, KBTimeout, KBTruncated
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.patterns import ALL_TEMPLATES, RelationPattern, enumerate_patterns
from kgreason.kb.schema import expand_prefixes
from kgreason.methods.knowcoder_a1.grammar import boxed_answer
from kgreason.rankers.base import Ranker, verbalize_relation
from kgreason.types import Action, KBQASample, NodePatterns, Observation, QueryResult, Term

KC_FORMAT_ERROR = "KC_FORMAT_ERROR"      # neither a tool call nor an answer
KC_BAD_JSON = "KC_BAD_JSON"              # the call is not a JSON object / function call
KC_UNKNOWN_TOOL = "KC_UNKNOWN_TOOL"
KC_BAD_ARGUMENTS = "KC_BAD_ARGUMENTS"    # missing, unknown or mistyped argument
KC_SPARQL_ERROR = "KC_SPARQL_ERROR"      # the engine rejected the query (syntax, evaluation)
KC_FORBIDDEN = "KC_FORBIDDEN"            # an update, SERVICE, LOAD, ... (read-only KB)
KC_TIMEOUT = "KC_TIMEOUT"
KC_EMPTY = "KC_EMPTY"                    # the query (or the sketch) matched nothing
KC_KB_ERROR = "KC_KB_ERROR"              # the KB failed or is unreachable
ERROR_CODES = (KC_FORMAT_ERROR, KC_BAD_JSON, KC_UNKNOWN_TOOL, KC_BAD_ARGUMENTS, KC_SPARQL_ERROR, KC_FORBIDDEN,
               KC_TIMEOUT, KC_EMPTY, KC_KB_ERROR)

TOOLS = ToolSpec([
    Tool("SearchTypes", "Given a type name, retrieves and ranks candidate types in similarity order.",
         (ToolArg("query", description="a type name, e.g. College/University"),)),
    Tool("SearchGraphPatterns",
         "Given a SPARQL sketch that starts with SELECT DISTINCT ?x WHERE {...}, returns up to 10 one- and "
         "two-hop patterns in which ?x is the head or the tail, ranked by the semantic text when given.",
         (ToolArg("sparql", description="the sketch"),
          ToolArg("semantic", description="what to look for, e.g. actor/performer", required=False))),
    Tool("ExecuteSPARQL", "Executes a SPARQL query against the knowledge base and returns the result.",
         (ToolArg("sparql", description="a read-only SELECT or ASK query"),)),
])

PROMPT = (
    "You answer questions over a knowledge base (KB) by calling tools. In every turn, first think "
    "inside <think>...</think>, then either call exactly one tool inside <tool_call>...</tool_call> "
    "or give the final answer inside <answer>\\boxed{{[...]}}</answer> as a JSON list of names. The "
    "tool's reply comes back inside <tool_response>...</tool_response>. You can call tools up to "
    "{max_turns} times.\n\nTools:\n{tools}\n\n{call_format}\n\n{refs}\n\nQuestion: {question}{topics}"
)
JSON_CALL = ('Call a tool as JSON: <tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": '
             '"SELECT DISTINCT ?x WHERE { ... }"}}</tool_call>')
FUNCTION_CALL = 'Call a tool as a function: <tool_call>ExecuteSPARQL(sparql="SELECT DISTINCT ?x WHERE { ... }")</tool_call>'

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.S)
_FUNCTION = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$", re.S)
_KWARG = re.compile(r'\s*([A-Za-z_]\w*)\s*=\s*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')\s*(?:,|$)', re.S)
_SELECT_VAR = re.compile(r"\bSELECT\s+(?:DISTINCT\s+|REDUCED\s+)?\?(\w+)", re.I)
_LOCAL = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?$")
#: longest call body read; longer ones are refused before any parsing
MAX_CALL_CHARS = 20_000
#: longest piece of the policy's input echoed back in an error
ECHO_CHARS = 120


def _echo(text: str) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates cannot be encoded
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


def _unquote(token: str) -> str:
    if token.startswith('"'):
        return json.loads(token)
    return token[1:-1].replace("\\'", "'")


@declare(ranks="patterns", contexts=("flat",))
class KnowCoderActionSpace(ActionSpace):
    """KnowCoder-A1's ``SearchTypes`` / ``SearchGraphPatterns`` / ``ExecuteSPARQL`` tools.

    Args:
        ranker: ranks types and patterns (a :class:`~kgreason.rankers.DenseRanker` in the
            method config); None ranks by words shared with the query (tests, ablations).
        top_k: types and patterns shown per search (paper: 10).
        result_chars: ``ExecuteSPARQL`` output cut (official code: 1,000; Interactive-KBQA: 2,000).
        call_syntax: ``"json"`` (official code) or ``"function"`` (the paper's examples):
            what the prompt teaches; the parser reads both.
        skip_prefixes: schema relations left out of the patterns.
        max_sketch_nodes: ``SearchGraphPatterns`` explores at most this many bindings of ?x.
        max_obs_tokens: budget of one observation (on top of ``result_chars``).
        query_timeout_s: per query.
        end_without_call: a message with neither a tool call nor an answer ends the
            episode unanswered, as in the official RL loop (Agent-R1's generation manager
            keeps a row going only while its response holds a ``<tool_call>``); False
            answers it with ``KC_FORMAT_ERROR`` and another turn. A malformed call is
            always answered with its typed error.
    """

    name = "knowcoder_a1"
    stop_sequences = ("</tool_call>", "</answer>")
    tools = TOOLS

    def __init__(self, ranker: Ranker | None = None, top_k: int = 10, result_chars: int = 1000,
                 call_syntax: str = "json", skip_prefixes: Sequence[str] = ("common.", "type.", "freebase.", "kg."),
                 max_sketch_nodes: int = 20, max_obs_tokens: int = 512, count_tokens: TokenCounter = approx_tokens,
                 query_timeout_s: float | None = 10.0, end_without_call: bool = False):
        if call_syntax not in ("json", "function"):
            raise ValueError(f"call_syntax must be 'json' or 'function', got {call_syntax!r}")
        self.ranker = ranker
        self.top_k = top_k
        self.result_chars = result_chars
        self.call_syntax = call_syntax
        self.skip_prefixes = tuple(skip_prefixes)
        self.max_sketch_nodes = max_sketch_nodes
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.query_timeout_s = query_timeout_s
        self.end_without_call = end_without_call
        self._kb: KnowledgeBase | None = None

    # ---------------------------------------------------------- references
    @staticmethod
    def prefixes(kb: KnowledgeBase) -> dict[str, str]:
        """``ns:`` for entities (and relations when they share it), ``rel:`` otherwise."""
        s = kb.schema
        return {"ns": s.entity_ns} if s.entity_ns == s.relation_ns else {"ns": s.entity_ns, "rel": s.relation_ns}

    @classmethod
    def entity_ref(cls, kb: KnowledgeBase, id_: str) -> str:
        """How to write an entity in SPARQL here: ``ns:m.0abc``, or a full IRI."""
        return f"ns:{id_}" if _LOCAL.match(id_) else kb.schema.entity_ref(id_)

    @classmethod
    def relation_ref(cls, kb: KnowledgeBase, id_: str) -> str:
        prefix = "ns" if len(cls.prefixes(kb)) == 1 else "rel"
        return f"{prefix}:{id_}" if _LOCAL.match(id_) else kb.schema.relation_ref(id_)

    # --------------------------------------------------------------- prompt
    def instructions(self) -> str:
        return TOOLS.describe()

    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        kb = self._kb
        topics = ""
        if sample.topic_entities and kb is not None:
            topics = "\nTopic entities: " + "; ".join(
                f"{e.name or e.id} ({self.entity_ref(kb, e.id)})" for e in sample.topic_entities)
        if kb is not None and len(self.prefixes(kb)) > 1:
            refs = "In SPARQL, write entities as ns:<id> and relations as rel:<relation>."
        else:
            refs = "In SPARQL, write entities and relations as ns:<id>, e.g. VALUES ?x {ns:m.0abc}."
        text = PROMPT.format(max_turns=max_turns, tools=self.instructions(), refs=refs,
                             call_format=JSON_CALL if self.call_syntax == "json" else FUNCTION_CALL,
                             question=sample.question.strip(), topics=topics)
        return [{"role": "user", "content": text}]

    def init_state(self, state: EpisodeState) -> None:
        self._kb = state.kb  # the prompt writes the topic entities the way SPARQL here needs them

    def ends_episode(self, error: ParseError) -> bool:
        return self.end_without_call and error.code == KC_FORMAT_ERROR

    def last_turn_note(self) -> str:
        return 'This is your last turn: give your final answer inside <answer>\\boxed{["..."]}</answer> now.'

    def format_observation(self, obs: Sequence[Observation]) -> str:
        o = obs[0]
        body = {"error": o.text} if o.error and o.error != KC_EMPTY else {"results": o.text}
        return "\n<tool_response>" + json.dumps(body, ensure_ascii=False) + "</tool_response>\n"

    # ---------------------------------------------------------------- parse
    def format_ok(self, text: str) -> bool:
        if f"<{self.answer_tag}>" in text:
            return boxed_answer(text)
        return not isinstance(self.parse(text), ParseError)

    def parse(self, text: str) -> list[Action] | ParseError:
        m = _TOOL_CALL.search(text) if "<tool_call>" in text else None
        if m is None:
            return ParseError(KC_FORMAT_ERROR, "No tool call found. Call one tool inside <tool_call>...</tool_call>, "
                              'or answer inside <answer>\\boxed{["..."]}</answer>.')
        body = m.group(1).strip()
        if len(body) > MAX_CALL_CHARS:
            return ParseError(KC_BAD_JSON, f"The tool call is {len(body)} characters long; the limit is {MAX_CALL_CHARS}.")
        if body.startswith("{"):
            try:
                call = json.loads(body)
            except (ValueError, RecursionError) as e:
                return ParseError(KC_BAD_JSON, f"The tool call is not valid JSON ({_echo(str(e))}).")
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                return ParseError(KC_BAD_JSON, 'A tool call is a JSON object {"name": ..., "arguments": {...}}.')
            name, args = call["name"], call.get("arguments", {})
            if isinstance(args, str):  # some models double-encode the arguments
                with contextlib.suppress(ValueError, RecursionError):
                    args = json.loads(args)
            if not isinstance(args, dict):
                return ParseError(KC_BAD_ARGUMENTS, f'"arguments" of {_echo(name)} must be a JSON object.')
        else:
            f = _FUNCTION.match(body)
            if not f:
                return ParseError(KC_BAD_JSON, f"Cannot read the tool call {_echo(body)!r}: write "
                                  '{"name": ..., "arguments": {...}} or Tool(arg="...").')
            name, inner = f.group(1), f.group(2)
            args, pos = {}, 0
            for kw in _KWARG.finditer(inner):
                if inner[pos:kw.start()].strip():
                    break
                try:
                    args[kw.group(1)] = _unquote(kw.group(2))
                except ValueError:
                    break
                pos = kw.end()
            if inner[pos:].strip():
                return ParseError(KC_BAD_ARGUMENTS, f"Cannot read the arguments of {_echo(name)}: "
                                  'write name="value" pairs separated by commas.')
        tool = TOOLS.get(name)
        if tool is None:
            return ParseError(KC_UNKNOWN_TOOL, f"Unknown tool {_echo(name)!r}; tools: {', '.join(TOOLS.names())}.")
        try:
            bound = tool.bind(args)
        except ToolArgumentError as e:
            return ParseError(KC_BAD_ARGUMENTS, _echo(str(e)) + f" (signature: {tool.signature()})")
        return [Action(tool.name, [], raw=body, kwargs=bound)]

    # -------------------------------------------------------------- execute
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        kb = state.kb
        try:
            if action.name == "SearchTypes":
                return self._search_types(action.kwargs["query"], state, kb)
            if action.name == "SearchGraphPatterns":
                return self._search_patterns(action.kwargs["sparql"], action.kwargs.get("semantic"), state, kb)
            return self._execute(action.kwargs["sparql"], state, kb)
        except KBTimeout as e:
            return self._error(KC_TIMEOUT, f"The query timed out ({_echo(str(e))}). Simplify it.", 1)
        except KBForbiddenQuery as e:
            return self._error(KC_FORBIDDEN, f"Only read-only SELECT/ASK queries run here ({_echo(str(e))}).", 1)
        except KBQueryError as e:
            return self._error(KC_SPARQL_ERROR, f"The query could not be executed: {_echo(str(e))}", 1)
        except KBError as e:
            return self._error(KC_KB_ERROR, f"Knowledge base error: {_echo(str(e))}", 1)

    def _error(self, code: str, msg: str, kb_calls: int = 0) -> Observation:
        return Observation(msg, error=code, kb_calls=kb_calls)

    def _rank(self, query: str, candidates: list[str], verbalize: bool) -> list[str]:
        texts = [verbalize_relation(c) for c in candidates] if verbalize else candidates
        if self.ranker is None or not candidates:
            # no encoder: words shared with the query, then the KB's order
            words = set(re.findall(r"\w+", query.lower()))
            overlap = [len(words & set(t.split())) for t in texts]
            order = sorted(range(len(candidates)), key=lambda i: -overlap[i])
            return [candidates[i] for i in order[: self.top_k]]
        by_text: dict[str, list[str]] = {}
        for c, t in zip(candidates, texts, strict=True):
            by_text.setdefault(t, []).append(c)
        ranked = self.ranker.rank(query, list(by_text), top_k=self.top_k)
        return [c for t, _ in ranked for c in by_text[t]][: self.top_k]

    def _search_types(self, query: str, state: EpisodeState, kb: KnowledgeBase) -> Observation:
        classes = kb.classes()
        if not classes:
            return Observation("This knowledge base has no types; explore it with SearchGraphPatterns.", kb_calls=1)
        shown = self._rank(query, classes, verbalize=True)
        return Observation(json.dumps(shown, ensure_ascii=False), relations=shown, kb_calls=1)

    def _sketch_nodes(self, sparql: str, kb: KnowledgeBase) -> tuple[str, list[str]] | Observation:
        full = expand_prefixes(sparql, self.prefixes(kb))
        m = _SELECT_VAR.search(full)
        if not m:
            return self._error(KC_BAD_ARGUMENTS, "The sketch must start with SELECT DISTINCT ?x WHERE { ... }.")
        var = m.group(1)
        try:
            rows = kb.select(full, timeout_s=self.query_timeout_s, max_rows=self.max_sketch_nodes)
        except KBTruncated as e:
            rows = list(e.rows)
        nodes = list(dict.fromkeys(r[var].value for r in rows if var in r and r[var].is_entity))
        if not nodes:
            return self._error(KC_EMPTY, f"The sketch binds ?{var} to no entity.", 1)
        return var, nodes[: self.max_sketch_nodes]

    def _search_patterns(self, sparql: str, semantic: str | None, state: EpisodeState,
                         kb: KnowledgeBase) -> Observation:
        got = self._sketch_nodes(sparql, kb)
        if isinstance(got, Observation):
            return got
        var, nodes = got
        pats = [p for p in enumerate_patterns(kb, nodes, ALL_TEMPLATES, timeout_s=self.query_timeout_s)
                if not any(r.startswith(self.skip_prefixes) for r in p.relations)]
        calls = 1 + len(ALL_TEMPLATES)
        if not pats:
            return self._error(KC_EMPTY, f"No relation patterns around ?{var}.", calls)
        by_key: dict[str, list[RelationPattern]] = {}
        for p in pats:
            by_key.setdefault(p.key(), []).append(p)
        # first hops that continue into a two-hop chain (out: 4/6 from 1; in: 5/7/8 from 2)
        mediated = {(1 if p.template in (4, 6) else 2, p.relations[0]) for p in pats if p.template >= 4}
        keys = self._rank(semantic or state.sample.question, list(by_key), verbalize=True)
        shown = [p for k in keys for p in by_key[k]][: self.top_k]
        lines, kept = [], []
        for p in shown:
            example, n = self._example(kb, nodes, p)
            calls += n
            if p.template in (1, 2) and example is not None and example[0] == example[1] \
                    and (p.template, p.relations[0]) in mediated:
                continue  # a hop into an unnamed mediator (CVT): its r1 -> r2 chains say what it means
            if example is not None:
                state.remember(example[1], example[0])
            lines.append(self._pattern_text(var, p, example[1] if example else None))
            kept.append(p)
        shown = kept
        rels = sorted({r for p in shown for r in p.relations})
        key = "patterns|" + "\n".join(sorted(lines))
        return Observation("\n".join(lines), payload=NodePatterns(nodes, shown, key), relations=rels,
                           entities=nodes, kb_calls=calls)

    @staticmethod
    def _pattern_text(var: str, p: RelationPattern, example: str | None) -> str:
        ex = json.dumps(example, ensure_ascii=False) if example is not None else "?"
        chain = " -> ".join(p.relations)
        if p.template == 2:
            return f"({ex}, {chain}, ?{var})"
        if p.template == 5:
            return f"({ex}, {' -> '.join(reversed(p.relations))}, ?{var})"
        if p.template in (7, 8):  # SPARQL's inverse path: ?x ^r1/r2 ?value
            return f"(?{var}, ^{p.relations[0]} -> {p.relations[-1]}, {ex})"
        return f"(?{var}, {chain}, {ex})"

    def _example(self, kb: KnowledgeBase, nodes: list[str], p: RelationPattern) -> tuple[tuple[str, str] | None, int]:
        """One value at the far end of ``p`` (id, label), and the KB calls it took."""
        s = kb.schema
        values = "VALUES ?n { " + " ".join(s.entity_ref(n) for n in nodes) + " }"
        r = [s.relation_ref(x) for x in p.relations]
        body = {1: f"?n {r[0]} ?v .", 2: f"?v {r[0]} ?n .", 3: f"?n {r[0]} ?v .",
                4: f"?n {r[0]} ?m . ?m {r[-1]} ?v .", 5: f"?m {r[0]} ?n . ?v {r[-1]} ?m .",
                6: f"?n {r[0]} ?m . ?m {r[-1]} ?v .", 7: f"?m {r[0]} ?n . ?m {r[-1]} ?v . FILTER(?v != ?n)",
                8: f"?m {r[0]} ?n . ?m {r[-1]} ?v ."}[p.template]
        rows = kb.select(f"SELECT ?v WHERE {{ {values} {body} }} LIMIT 1", timeout_s=self.query_timeout_s)
        if not rows:
            return None, 1
        t: Term = rows[0]["v"]
        if not t.is_entity:
            return (t.value, t.value), 1
        return (t.value, kb.names([t.value]).get(t.value, t.value)), 2

    def _execute(self, sparql: str, state: EpisodeState, kb: KnowledgeBase) -> Observation:
        full = expand_prefixes(sparql, self.prefixes(kb))
        note = ""
        try:
            rows = kb.select(full, timeout_s=self.query_timeout_s)
        except KBTruncated as e:
            rows, note = list(e.rows), f" (the KB cut the result at {len(e.rows)} rows)"
        if not rows or all(not r for r in rows):
            return self._error(KC_EMPTY, "[]", 1)
        variables = list(dict.fromkeys(v for r in rows for v in r))
        terms = [t for r in rows for t in r.values()]
        ids = sorted({t.value for t in terms if t.is_entity})
        names = kb.names(ids) if ids else {}

        def label(t: Term) -> str:
            state.remember(t.value, t.value)
            name = names.get(t.value) if t.is_entity else None
            if name:
                state.remember(name, t.value)
                return name
            return t.value

        if len(variables) == 1:
            items = sorted({label(r[variables[0]]) for r in rows if variables[0] in r})
        else:
            items = sorted({", ".join(f"?{v}={label(r[v])}" for v in variables if v in r) for r in rows})
        text = json.dumps(items, ensure_ascii=False)
        if len(text) > self.result_chars:
            kept = []
            for it in items:
                if len(json.dumps([*kept, it], ensure_ascii=False)) > self.result_chars:
                    break
                kept.append(it)
            text = json.dumps(kept, ensure_ascii=False) + f" … {len(items) - len(kept)} more results (cut at " \
                f"{self.result_chars} characters)"
        text = truncate_items([text], self.max_obs_tokens, self.count_tokens) + note
        values = sorted({t.value for t in terms})
        return Observation(text, payload=QueryResult(full, values, rows), entities=ids, kb_calls=2 if ids else 1)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(ranker={type(self.ranker).__name__ if self.ranker else None}, "
                f"top_k={self.top_k}, call_syntax={self.call_syntax!r}, end_without_call={self.end_without_call})")

