"""KBQA-R1's stateful S-expression actions with relation retrieval and confidence gating.

Sun et al., "KBQA-R1" (paper 000), §IV-A and Table II, after KBQA-o1: the policy thinks,
then issues one or more actions, one per line::

    <think>...</think>
    <action>Find_relation(m.0g7lcuf, (R location.country.capital))</action>

and ends with ``<answer>Bangkok</answer>``. Every action rewrites an S-expression
(:class:`~kgreason.kb.sexpr.SExprBuilder`), which is compiled to SPARQL and executed at
once; the observation lists the results and the expression.

* ``Find_relation(source, relation)`` — ``(JOIN relation source)``. From an entity it
  opens a new expression (the implicit START); from ``expression2`` it extends that one.
  ``relation`` follows GrailQA: ``r`` keeps the subjects of ``(?, r, source)``, ``(R r)``
  the objects of ``(source, r, ?)``.
* ``Merge(expression1, expression2)`` — ``(AND ...)`` written back to the earlier number;
  the second may be a class (``education.university``), a type constraint.
* ``Order(MAX|MIN, expression, relation)`` — ``(ARGMAX expression relation)``.
* ``Compare(gt|ge|lt|le, relation, number, expression)`` — ``(AND expression (gt relation
  number))``; the expression may be a class for questions without entities.
* ``Time_constraint(relation, time, expression)`` — ``(TC expression relation time)``.
* ``Count(expression)`` — ``(COUNT expression)``.

The trailing ``expression`` may be left out (the current one). Relations may be chains
``(JOIN r1 r2)`` where a value hangs off a mediator (Order, Compare). Every relation
goes through the RRCG gate (:class:`~kgreason.rankers.ConfidenceGate`) against the
relations around the source (``R(e_c)``); a relation that only exists the other way is
turned round (``r`` ↔ ``(R r)``) with a note. An action that fails — malformed, unknown,
disabled for the dataset, rejected by the gate, empty, timed out — leaves every
expression as it was and comes back as a typed error observation.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgreason.declarations import declare
from kgreason.envs.base import ActionSpace, EpisodeState, ParseError
from kgreason.envs.text import TokenCounter, approx_tokens, split_args, truncate_items
from kgreason.envs.tools import Tool, ToolArg, ToolSpec
from kgreason.errors import KBError, KBQueryError, KBTimeout, KBTruncated
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.sexpr import SExpr, SExprBuilder, SExprError, parse_sexpr, to_text
from kgreason.methods.kbqa_r1.grammar import message_format
from kgreason.rankers.base import Ranker, verbalize_relation
from kgreason.rankers.gate import ConfidenceGate
from kgreason.types import Action, KBQASample, Observation, QueryResult

KBQA_FORMAT_ERROR = "KBQA_FORMAT_ERROR"          # neither an action nor an answer
KBQA_UNKNOWN_ACTION = "KBQA_UNKNOWN_ACTION"
KBQA_DISABLED_ACTION = "KBQA_DISABLED_ACTION"    # not in this dataset's action subset
KBQA_BAD_ARGUMENTS = "KBQA_BAD_ARGUMENTS"
KBQA_UNKNOWN_ENTITY = "KBQA_UNKNOWN_ENTITY"
KBQA_BAD_EXPRESSION = "KBQA_BAD_EXPRESSION"      # no such expression, or an ill-formed one
KBQA_RELATION_REJECTED = "KBQA_RELATION_REJECTED"  # the gate found no reliable relation
KBQA_EMPTY = "KBQA_EMPTY"                        # the new expression matches nothing
KBQA_TIMEOUT = "KBQA_TIMEOUT"
KBQA_KB_ERROR = "KBQA_KB_ERROR"
ERROR_CODES = (KBQA_FORMAT_ERROR, KBQA_UNKNOWN_ACTION, KBQA_DISABLED_ACTION, KBQA_BAD_ARGUMENTS,
               KBQA_UNKNOWN_ENTITY, KBQA_BAD_EXPRESSION, KBQA_RELATION_REJECTED, KBQA_EMPTY, KBQA_TIMEOUT,
               KBQA_KB_ERROR)

TOOLS = ToolSpec([
    Tool("Find_relation", "Follow a relation from an entity (starts a new expression) or from an expression: "
         "(JOIN relation source). Write (R relation) to go from subject to object.",
         (ToolArg("source"), ToolArg("relation"))),
    Tool("Merge", "Intersect two expressions (or an expression and a type): (AND expression1 expression2).",
         (ToolArg("expression1"), ToolArg("expression2"))),
    Tool("Order", "Keep the members with the largest (MAX) or smallest (MIN) value of a relation.",
         (ToolArg("mode"), ToolArg("expression"), ToolArg("relation"))),
    Tool("Compare", "Keep the members whose relation value is gt/ge/lt/le a number.",
         (ToolArg("mode"), ToolArg("relation"), ToolArg("number"), ToolArg("expression", required=False))),
    Tool("Time_constraint", "Keep the members whose relation's time span holds at a year or date (or NOW).",
         (ToolArg("relation"), ToolArg("time"), ToolArg("expression", required=False))),
    Tool("Count", "The number of members of an expression.", (ToolArg("expression", required=False),)),
])
#: the paper's dataset-specific subsets (official code): WebQSP has no Compare/Count,
#: GrailQA and GraphQuestions no Time_constraint
ACTION_SUBSETS = {
    "all": tuple(TOOLS.names()),
    "webqsp": ("Find_relation", "Merge", "Order", "Time_constraint"),
    "grailqa": ("Find_relation", "Merge", "Order", "Compare", "Count"),
    "graphquestions": ("Find_relation", "Merge", "Order", "Compare", "Count"),
}

PROMPT = (
    "You are an expert assistant for querying the knowledge base using structured reasoning actions.\n"
    "Answer the given question about the knowledge base.\n"
    "You MUST conduct reasoning inside <think>...</think> before emitting actions.\n"
    "After reasoning, provide structured actions inside <action>...</action>, one per line.\n"
    "The system will return query results between <information>...</information>.\n"
    "When ready, return the final answer inside <answer>...</answer> using the names or values shown. "
    "For multiple answers, separate them by |.\n"
    "Available Actions:\n{actions}\n"
    "Begin from the candidate entities detected in the question.\n"
    "Candidate Entities: [ {entities} ]\n{types}"
    "Question: {question}"
)

#: the "w/o Multi-turn" ablation (Table VI): every action in one message, no observation
SINGLE_TURN_PROMPT = (
    "You are an expert assistant for querying the knowledge base using structured reasoning actions.\n"
    "Answer the given question about the knowledge base.\n"
    "You MUST conduct reasoning inside <think>...</think> before emitting actions.\n"
    "After reasoning, write ALL the actions that build the answer inside one <action>...</action> block, "
    "one per line. They run in order, no result comes back, and the results of the last expression are "
    "the final answer.\n"
    "Available Actions:\n{actions}\n"
    "Begin from the candidate entities detected in the question.\n"
    "Candidate Entities: [ {entities} ]\n{types}"
    "Question: {question}"
)

_ACTION_BLOCK = re.compile(r"<action>(.*?)(?:</action>|$)", re.S)
_CALL = re.compile(r"^\s*([A-Za-z_]\w*)\s*\((.*)\)\s*[;.]?\s*$", re.S)
_ENTITY_ID = re.compile(r"^[A-Za-z0-9_][\w.:/\-#]*$")
_LITERAL = re.compile(r'^(?:"[^"]*"|-?\d[\d.:\-]*)(?:\^\^\S+)?$')
_TIME = re.compile(r"^(?:NOW|\d{4}(?:-\d{2}(?:-\d{2})?)?)$", re.I)
#: longest action block read
MAX_ACTION_CHARS = 4000
#: actions run per turn (more are reported, not run)
MAX_ACTIONS_PER_TURN = 4
#: actions run in the single-turn ablation's one message (the longest gold sequences of
#: WebQSP/CWQ/GrailQA are well under this)
MAX_SINGLE_TURN_ACTIONS = 12
ECHO_CHARS = 120


def _echo(text: str) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + "…"


def relation_arg(text: str) -> SExpr:
    """A relation argument as an S-expression: ``r``, ``(R r)`` or a chain ``(JOIN r1 r2)``
    (``r1 -> r2`` is read as a chain too).

    >>> relation_arg("(R film.film.directed_by)"), relation_arg("a.b.c -> d.e.f")
    (['R', 'film.film.directed_by'], ['JOIN', 'a.b.c', 'd.e.f'])
    """
    text = text.strip()
    if "->" in text:
        parts = [p.strip() for p in text.split("->")]
        if len(parts) != 2 or not all(parts):
            raise SExprError(f"a relation chain has two relations: {_echo(text)!r}")
        return ["JOIN", relation_arg(parts[0]), relation_arg(parts[1])]
    if text.startswith("("):
        tree = parse_sexpr(text)
        ok = isinstance(tree, list) and (
            (len(tree) == 2 and tree[0] == "R" and isinstance(tree[1], str))
            or (len(tree) == 3 and tree[0] == "JOIN" and all(isinstance(t, str) or t[0] == "R" for t in tree[1:])))
        if not ok:
            raise SExprError(f"a relation is r, (R r) or (JOIN r1 r2), got {_echo(text)!r}")
        return tree
    if not text or any(c.isspace() for c in text) or '"' in text:
        raise SExprError(f"not a relation name: {_echo(text)!r}")
    return text


def _names(rel: SExpr) -> list[str]:
    """The relation names inside a relation argument."""
    if isinstance(rel, str):
        return [rel]
    return [n for part in rel[1:] for n in _names(part)]


@dataclass
class KBQAR1State:
    """One KBQA-R1 episode's expressions.

    Attributes:
        sexpr: the S-expressions built so far.
        members: expression number → the entity ids of its results (the gates' input).
        results: expression number → every result value (the single-turn answer).
    """

    sexpr: SExprBuilder
    members: dict[int, list[str]] = field(default_factory=dict)
    #: expression number → its result values as executed (ids, literals, or the count)
    results: dict[int, list[str]] = field(default_factory=dict)


@declare(ranks="relations", contexts=("flat",))
class KBQAR1ActionSpace(ActionSpace):
    """KBQA-R1's six S-expression actions (:data:`TOOLS`) behind the RRCG gate.

    Args:
        ranker: scores relations for the gate (a :class:`~kgreason.rankers.DenseRanker`
            in the method config); None gates by shared words (tests).
        gate: RRCG settings, :class:`~kgreason.rankers.ConfidenceGate` keyword arguments
            (``tau_high``, ``tau_low``, ``top_k``, ``messages``, ``enabled``).
        actions: the allowed actions: a subset name (:data:`ACTION_SUBSETS`: ``all``,
            ``webqsp``, ``grailqa``, ``graphquestions``) or a list of action names.
        candidate_types: classes of the KB ranked against the question and listed in the
            prompt (for type constraints and entity-less comparisons); 0 lists none.
        max_results: results listed per observation (the count says how many there are).
        max_members: results of an expression kept to find the relations around it.
        max_obs_tokens: budget of an observation's result list.
        query_timeout_s: per query.
        single_turn: the paper's "w/o Multi-turn" ablation (Table VI): the policy writes
            every action in its first message, they run without showing a result, and the
            last expression's results are the answer (run it with ``env.max_turns=1``).
    """

    name = "kbqa_r1"
    stop_sequences = ("</action>", "</answer>")
    tools = TOOLS

    def __init__(self, ranker: Ranker | None = None, gate: dict | None = None, actions: str | Sequence[str] = "all",
                 candidate_types: int = 5, max_results: int = 20, max_members: int = 50, max_obs_tokens: int = 512,
                 count_tokens: TokenCounter = approx_tokens, query_timeout_s: float | None = 10.0,
                 single_turn: bool = False):
        if isinstance(actions, str):
            if actions not in ACTION_SUBSETS:
                raise ValueError(f"actions={actions!r}: choose one of {sorted(ACTION_SUBSETS)} or a list of "
                                 f"{TOOLS.names()}")
            allowed = ACTION_SUBSETS[actions]
        else:
            unknown = [a for a in actions if TOOLS.get(a) is None]
            if unknown:
                raise ValueError(f"unknown actions {unknown}; actions: {TOOLS.names()}")
            allowed = tuple(actions)
        self.allowed = allowed
        self.ranker = ranker
        self.gate = ConfidenceGate(ranker or _Overlap(), **(gate or {}))
        self.candidate_types = candidate_types
        self.max_results = max_results
        self.max_members = max_members
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.query_timeout_s = query_timeout_s
        self.single_turn = single_turn

    # --------------------------------------------------------------- prompt
    def instructions(self) -> str:
        return "\n".join(t.describe() for t in TOOLS if t.name in self.allowed)

    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        ents = ", ".join(f"{e.name} ({e.id})" if e.name and e.name != e.id else e.id for e in sample.topic_entities)
        types = ""
        kb = getattr(self, "_kb", None)
        if self.candidate_types and kb is not None and kb.classes():
            ranked = self._rank_types(sample.question, kb)
            types = f"Candidate Types: [ {', '.join(ranked)} ]\n"
        template = SINGLE_TURN_PROMPT if self.single_turn else PROMPT
        text = template.format(actions=self.instructions(), entities=ents, types=types,
                               question=sample.question.strip())
        return [{"role": "user", "content": text}]

    def _rank_types(self, question: str, kb: KnowledgeBase) -> list[str]:
        classes = kb.classes()
        if self.ranker is None:
            words = set(re.findall(r"\w+", question.lower()))
            order = sorted(classes, key=lambda c: -len(words & set(verbalize_relation(c).split())))
            return order[: self.candidate_types]
        return [c for c, _ in self.ranker.rank(question, classes, top_k=self.candidate_types)]

    def init_state(self, state: EpisodeState) -> None:
        self._kb = state.kb
        state.space_state = KBQAR1State(SExprBuilder(state.kb.schema))

    def last_turn_note(self) -> str:
        return "This is your last turn: give your final answer inside <answer>...</answer> now."

    def answer_after_actions(self, state: EpisodeState) -> str | None:
        """Single-turn: the current expression's results (empty when no action succeeded)."""
        if not self.single_turn:
            return None
        st = state.of(KBQAR1State)
        return " | ".join(st.results.get(st.sexpr.current, [])) if st.sexpr.current is not None else ""

    # ---------------------------------------------------------------- parse
    def format_ok(self, text: str) -> bool:
        return message_format(text)

    def parse(self, text: str) -> list[Action] | ParseError:
        m = _ACTION_BLOCK.search(text) if "<action>" in text else None
        if m is None:
            return ParseError(KBQA_FORMAT_ERROR, "No action found. Put actions inside <action>...</action>, or "
                              "the final answer inside <answer>...</answer>.")
        body = m.group(1).strip()
        if len(body) > MAX_ACTION_CHARS:
            return ParseError(KBQA_BAD_ARGUMENTS, f"The action block is {len(body)} characters long; the limit is "
                              f"{MAX_ACTION_CHARS}.")
        lines = [ln.strip() for ln in re.split(r"\n|;\s*(?=[A-Za-z_]\w*\s*\()", body) if ln.strip()]
        if not lines:
            return ParseError(KBQA_FORMAT_ERROR, "The action block is empty.")
        actions = []
        for line in lines[: MAX_SINGLE_TURN_ACTIONS if self.single_turn else MAX_ACTIONS_PER_TURN]:
            f = _CALL.match(line)
            if not f:
                return ParseError(KBQA_BAD_ARGUMENTS, f"Cannot read the action {_echo(line)!r}: write "
                                  "Name(argument, argument, ...).")
            name = f.group(1)
            tool = next((t for t in TOOLS if t.name.lower() == name.lower()), None)
            if tool is None:
                return ParseError(KBQA_UNKNOWN_ACTION, f"Unknown action {_echo(name)!r}; actions: "
                                  f"{', '.join(self.allowed)}.")
            if tool.name not in self.allowed:
                return ParseError(KBQA_DISABLED_ACTION, f"{tool.name} is not available here; actions: "
                                  f"{', '.join(self.allowed)}.")
            inner = f.group(2)
            args = [a.strip() for a in inner.split("||")] if "||" in inner else split_action_args(inner)
            actions.append(Action(tool.name, args, raw=line))
        return actions

    # -------------------------------------------------------------- execute
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        b = state.of(KBQAR1State).sexpr
        saved = (copy.deepcopy(b.exprs), b.current, dict(state.of(KBQAR1State).members))
        try:
            obs = self._apply(action, state, b)
        except SExprError as e:
            obs = Observation(f"{action.name}: {_echo(str(e))}", error=KBQA_BAD_EXPRESSION)
        except KBTimeout as e:
            obs = Observation(f"The query timed out ({_echo(str(e))}); the expression is unchanged.",
                              error=KBQA_TIMEOUT, kb_calls=1)
        except KBQueryError as e:
            obs = Observation(f"The expression could not be executed: {_echo(str(e))}", error=KBQA_BAD_EXPRESSION,
                              kb_calls=1)
        except KBError as e:
            obs = Observation(f"Knowledge base error: {_echo(str(e))}", error=KBQA_KB_ERROR, kb_calls=1)
        if obs.error:  # a failed action changes nothing
            b.exprs, b.current, state.of(KBQAR1State).members = saved
        return obs

    def _apply(self, action: Action, state: EpisodeState, b: SExprBuilder) -> Observation:
        kb = state.kb
        tool = TOOLS.get(action.name)
        assert tool is not None
        args = action.args
        n_req = len(tool.required)
        if not n_req <= len(args) <= len(tool.args) or any(not a for a in args):
            return Observation(f"{tool.signature()} takes {n_req}"
                               f"{'' if n_req == len(tool.args) else f' or {len(tool.args)}'} non-empty "
                               f"arguments, got {len(args)}: {_echo(action.raw)}", error=KBQA_BAD_ARGUMENTS)
        notes: list[str] = []
        calls = 0
        if action.name == "Find_relation":
            source, rel_text = args
            rel = relation_arg(rel_text)
            if b.is_ref(source):
                n = b.ref(source)
                members = state.of(KBQAR1State).members.get(n, [])
            elif _LITERAL.match(source):  # a value (a year, a number): what has it
                source = _expand_xsd(source)
                rel, note, k = self._gate_attr(rel, [], kb)
                if rel is None:
                    return Observation(note, error=KBQA_RELATION_REJECTED, kb_calls=k)
                notes.append(note)
                return self._run(b.find_relation(source, rel), b, state, kb, notes, k)
            else:
                ent = self._entity(source, state, kb)
                if ent is None:
                    return Observation(f'"{_echo(source)}" is not an entity shown so far nor an expression; '
                                       f"start from a candidate entity.", error=KBQA_UNKNOWN_ENTITY, kb_calls=1)
                source, members = ent, [ent]
            rel, note, k = self._gate_join(rel, members, kb)
            calls += k
            if rel is None:
                return Observation(note, error=KBQA_RELATION_REJECTED, kb_calls=calls)
            notes.append(note)
            n = b.find_relation(source, rel)
        elif action.name == "Merge":
            first, second = args
            if not b.is_ref(second) and kb.classes() and second in kb.classes():
                n = b.constrain_type(first, second)
            elif not b.is_ref(first) and kb.classes() and first in kb.classes():
                n = b.constrain_type(second, first)
            else:
                n = b.merge(first, second)
        elif action.name == "Order":
            mode, a2, a3 = args
            if mode.upper() not in ("MAX", "MIN"):
                return Observation(f"Order's mode is MAX or MIN, got {_echo(mode)!r}.", error=KBQA_BAD_ARGUMENTS)
            expr, rel_text = (a2, a3) if b.is_ref(a2) else (a3, a2)  # either argument order
            n0 = b.ref(expr)
            rel, note, k = self._gate_attr(relation_arg(rel_text), state.of(KBQAR1State).members.get(n0, []), kb)
            calls += k
            if rel is None:
                return Observation(note, error=KBQA_RELATION_REJECTED, kb_calls=calls)
            notes.append(note)
            n = b.order(mode, rel, expr)
        elif action.name == "Compare":
            mode, rel_text, number = args[:3]
            if mode.lower() not in ("gt", "ge", "lt", "le"):
                return Observation(f"Compare's mode is one of gt, ge, lt, le, got {_echo(mode)!r}.",
                                   error=KBQA_BAD_ARGUMENTS)
            expr = args[3] if len(args) > 3 else None
            klass = expr if expr is not None and not b.is_ref(expr) else None
            members = [] if klass else state.of(KBQAR1State).members.get(b.ref(expr), [])
            rel, note, k = self._gate_attr(relation_arg(rel_text), members, kb)
            calls += k
            if rel is None:
                return Observation(note, error=KBQA_RELATION_REJECTED, kb_calls=calls)
            notes.append(note)
            if klass is not None:
                if klass not in kb.classes():
                    return Observation(f'"{_echo(klass)}" is neither an expression nor a type of this KB.',
                                       error=KBQA_BAD_EXPRESSION)
                n = b.compare_type(mode, rel, number.replace(",", ""), klass)
            else:
                n = b.compare(mode, rel, number.replace(",", ""), expr)
        elif action.name == "Time_constraint":
            rel_text, time = args[:2]
            expr = args[2] if len(args) > 2 else None
            if not _TIME.match(time.strip().strip('"')):
                return Observation(f"Time_constraint needs a year, a date (YYYY-MM-DD) or NOW, got {_echo(time)!r}.",
                                   error=KBQA_BAD_ARGUMENTS)
            members = state.of(KBQAR1State).members.get(b.ref(expr), [])
            rel, note, k = self._gate_attr(relation_arg(rel_text), members, kb)
            calls += k
            if rel is None:
                return Observation(note, error=KBQA_RELATION_REJECTED, kb_calls=calls)
            if not isinstance(rel, str):
                return Observation("Time_constraint takes one relation (its start, e.g. ...from).",
                                   error=KBQA_BAD_ARGUMENTS, kb_calls=calls)
            notes.append(note)
            n = b.time_constraint(rel, time.strip().strip('"'), expr)
        else:  # Count
            n = b.count(args[0] if args else None)
        return self._run(n, b, state, kb, notes, calls)

    # -------------------------------------------------------------- helpers
    def _entity(self, text: str, state: EpisodeState, kb: KnowledgeBase) -> str | None:
        """An entity id from an id or a name the episode has shown."""
        text = text.strip().strip('"').strip("'")
        ids = state.known.get(text) or state.known.get(text.lower())
        if ids:
            return ids[0]
        m = re.search(r"\(([^()\s]+)\)\s*$", text)  # "Thailand (m.0g7lcuf)", copied from the prompt
        if m and (state.known.get(m.group(1))):
            return m.group(1)
        if _ENTITY_ID.match(text) and kb.exists(text):
            return text
        return None

    def _neighbours(self, members: Sequence[str], kb: KnowledgeBase, direction: str) -> list[str]:
        return kb.relations_around(list(members[: self.max_members]), direction)

    def _gate_join(self, rel: SExpr, members: list[str], kb: KnowledgeBase) -> tuple[SExpr | None, str, int]:
        """Gate a JOIN relation against ``R(e_c)``: ``r`` must point into the source,
        ``(R r)`` out of it; one found only the other way round is turned round."""
        if not isinstance(rel, str) and rel[0] == "JOIN":
            return None, "Find_relation takes one relation, r or (R r); chains are for Order and Compare.", 0
        reverse = not isinstance(rel, str)
        name = rel[1] if reverse else rel
        assert isinstance(name, str)
        outs, ins = self._neighbours(members, kb, "out"), self._neighbours(members, kb, "in")
        want, other = (outs, ins) if reverse else (ins, outs)
        if not self.gate.enabled:
            return rel, "", 2
        d = self.gate(name, sorted(set(outs) | set(ins)))
        if d.relation is None:
            return None, d.note or f'No relation "{name}" here.', 2
        chosen = d.relation
        note = d.note
        flip = chosen not in want and chosen in other
        if flip:
            reverse = not reverse
            written = f"(R {chosen})" if reverse else chosen
            note = (note + " " if note else "") + f'"{chosen}" links the other way here; using {written}.'
        return (["R", chosen] if reverse else chosen), note, 2

    def _gate_attr(self, rel: SExpr, members: list[str], kb: KnowledgeBase) -> tuple[SExpr | None, str, int]:
        """Gate an attribute relation (Order, Compare, Time_constraint): a single relation
        against the relations out of the members, a chain's parts against every relation."""
        if not self.gate.enabled:
            return rel, "", 0
        if isinstance(rel, str) and members:
            d = self.gate(rel, self._neighbours(members, kb, "out"))
            return d.relation, d.note, 1
        vocabulary = kb.relations()
        notes: list[str] = []

        def walk(r: SExpr) -> SExpr | None:
            if isinstance(r, str):
                d = self.gate(r, vocabulary)
                if d.note:
                    notes.append(d.note)
                return d.relation
            parts = [walk(p) for p in r[1:]]
            return None if any(p is None for p in parts) else [r[0], *parts]  # type: ignore[list-item]

        out = walk(rel)
        return out, " ".join(notes), 0

    def _run(self, n: int, b: SExprBuilder, state: EpisodeState, kb: KnowledgeBase, notes: list[str],
             calls: int) -> Observation:
        sparql = b.sparql(n)
        text = b.text(n)
        try:
            rows = kb.select(sparql, timeout_s=self.query_timeout_s)
            cut = ""
        except KBTruncated as e:
            rows, cut = list(e.rows), f" (the KB cut the result at {len(e.rows)} rows)"
        calls += 1
        note = " ".join(x for x in notes if x)
        head = f"expression{n}: {text}"
        if "count" in (rows[0] if rows else {}):
            value = rows[0]["count"].value
            state.of(KBQAR1State).results[n] = [value]
            body = f"{head}\nCount: {value}"
            if note:
                body = f"{note}\n{body}"
            return Observation(body, payload=QueryResult(sparql, [value], rows), kb_calls=calls)
        terms = sorted({r["x"] for r in rows if "x" in r})
        if not terms:
            msg = f"expression{n} would be {text}, which matches nothing; the expression is unchanged."
            return Observation(f"{note}\n{msg}" if note else msg, error=KBQA_EMPTY, kb_calls=calls)
        ids = [t.value for t in terms if t.is_entity]
        state.of(KBQAR1State).members[n] = ids[: self.max_members]
        state.of(KBQAR1State).results[n] = [t.value for t in terms]
        names = kb.names(ids[: self.max_results]) if ids else {}
        calls += bool(ids)
        shown = []
        for t in terms[: self.max_results]:
            label = names.get(t.value, t.value) if t.is_entity else t.value
            state.remember(t.value, t.value)
            if label != t.value:
                state.remember(label, t.value)
            shown.append(label)
        # " | " as in answers: names hold commas ("Washington, D.C.")
        listing = truncate_items(sorted(shown), self.max_obs_tokens, self.count_tokens, sep=" | ")
        more = f" … {len(terms) - self.max_results} more" if len(terms) > self.max_results else ""
        body = f"{head}\nResults ({len(terms)}): {listing}{more}{cut}"
        if note:
            body = f"{note}\n{body}"
        return Observation(body, payload=QueryResult(sparql, [t.value for t in terms], rows), entities=ids,
                           kb_calls=calls)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(actions={list(self.allowed)}, gate={self.gate!r}, "
                f"ranker={type(self.ranker).__name__ if self.ranker else None})")


def split_action_args(inner: str) -> list[str]:
    """Split arguments on commas outside parentheses and quotes.

    >>> split_action_args('m.1, (R a.b.c)'), split_action_args('MAX, expression1, (JOIN a.b c.d)')
    (['m.1', '(R a.b.c)'], ['MAX', 'expression1', '(JOIN a.b c.d)'])
    >>> split_action_args("Ocean's Eleven (2001 film), starred_actors")
    ["Ocean's Eleven (2001 film)", 'starred_actors']
    """
    if "(" not in inner:
        return split_args(inner)
    out, cur, depth, quote = [], [], 0, ""
    for ch in inner:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'" and not "".join(cur).strip():  # quotes open an argument, nowhere else
            quote = ch
            cur.append(ch)
        elif ch == "(":
            depth += 1
            cur.append(ch)
        elif ch == ")":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip().strip('"').strip("'"))
            cur = []
        else:
            cur.append(ch)
    tail = "".join(cur).strip().strip('"').strip("'")
    if tail or out:
        out.append(tail)
    return out


class _Overlap(Ranker):
    """Word-overlap (Jaccard) scores: the gate's ranker when no encoder is given (tests)."""

    def score(self, query, candidates, context=None):
        import torch

        q = set(verbalize_relation(query).split())
        out = []
        for c in candidates:
            w = set(verbalize_relation(c).split())
            out.append(len(q & w) / len(q | w) if q | w else 0.0)
        return torch.tensor(out)



def _expand_xsd(lit: str) -> str:
    """``2017^^xsd:gYear`` with the XSD namespace written out (the compiler's form).

    >>> _expand_xsd("2017^^xsd:gYear")
    '2017^^http://www.w3.org/2001/XMLSchema#gYear'
    """
    return re.sub(r"\^\^xsd:", "^^http://www.w3.org/2001/XMLSchema#", lit)


def _value(lit: str) -> str:
    """A comparison literal as an action argument: bare numbers stay bare."""
    value, _, dtype = lit.partition("^^")
    if dtype.endswith(("#integer", "#int", "#float", "#double", "#decimal")) or not dtype:
        return value.strip('"')
    return lit


def reference_actions(sexpr: str | SExpr) -> list[str]:
    """The action sequence that rebuilds a gold S-expression (KBQA-R1 §IV-B1, step 1).

    Replaying the actions through :class:`~kgreason.kb.sexpr.SExprBuilder` gives back the
    same expression (checked here).

    >>> reference_actions("(COUNT (JOIN film.film.directed_by m.1))")
    ['Find_relation(m.1, film.film.directed_by)', 'Count(expression1)']
    >>> reference_actions("(JOIN (R a.b.r) (AND (JOIN a.b.p m.1) (JOIN a.b.q m.2)))")[2:]
    ['Merge(expression1, expression2)', 'Find_relation(expression1, (R a.b.r))']

    Raises:
        SExprError: a form the six actions cannot build.
    """
    tree = parse_sexpr(sexpr) if isinstance(sexpr, str) else sexpr
    b = SExprBuilder()
    out: list[str] = []

    def is_class(x: SExpr) -> bool:
        return isinstance(x, str) and x.count(".") >= 1 and not re.match(r"^[mg]\.", x) and "^^" not in x

    def emit(e: SExpr) -> int:
        if isinstance(e, str):
            raise SExprError(f"an entity or class alone is not an expression here: {e!r}")
        head, args = e[0], e[1:]
        if head == "JOIN" and len(args) == 2:
            rel, arg = args
            rel_text = to_text(rel)
            if isinstance(arg, str) and not is_class(arg):
                out.append(f"Find_relation({arg.replace('^^http://www.w3.org/2001/XMLSchema#', '^^xsd:')}, {rel_text})")
                return b.find_relation(arg, rel)
            n = emit(arg)
            out.append(f"Find_relation(expression{n}, {rel_text})")
            return b.find_relation(f"expression{n}", rel)
        if head == "AND" and len(args) == 2:
            a, c = args
            if isinstance(c, list) and c and c[0] in ("lt", "le", "gt", "ge"):
                mode, rel, lit = c[0], c[1], c[2]
                assert isinstance(lit, str)
                if is_class(a):
                    assert isinstance(a, str)
                    out.append(f"Compare({mode}, {to_text(rel)}, {_value(lit)}, {a})")
                    return b.compare_type(mode, rel, _value(lit), a)
                n = emit(a)
                out.append(f"Compare({mode}, {to_text(rel)}, {_value(lit)}, expression{n})")
                return b.compare(mode, rel, _value(lit), f"expression{n}")
            if is_class(a):
                assert isinstance(a, str)
                n = emit(c)
                out.append(f"Merge(expression{n}, {a})")
                return b.constrain_type(f"expression{n}", a)
            n, m = emit(a), emit(c)
            out.append(f"Merge(expression{n}, expression{m})")
            return b.merge(f"expression{n}", f"expression{m}")
        if head == "TC" and len(args) == 3:
            n = emit(args[0])
            out.append(f"Time_constraint({to_text(args[1])}, {to_text(args[2])}, expression{n})")
            return b.time_constraint(args[1], args[2], f"expression{n}")  # type: ignore[arg-type]
        if head == "COUNT" and len(args) == 1:
            n = emit(args[0])
            out.append(f"Count(expression{n})")
            return b.count(f"expression{n}")
        if head in ("ARGMAX", "ARGMIN") and len(args) == 2:
            n = emit(args[0])
            out.append(f"Order({head[3:]}, expression{n}, {to_text(args[1])})")
            return b.order(head[3:], args[1], f"expression{n}")
        raise SExprError(f"no action builds {to_text(e)!r}")

    n = emit(tree)
    if b.text(n) != to_text(tree):
        raise SExprError(f"the actions rebuild {b.text(n)!r}, not {to_text(tree)!r}")
    return out


def path_sexpr(sample: KBQASample) -> SExpr | None:
    """The S-expression of a question's gold relation path from its first topic entity
    (``~r`` walks ``r`` backwards), for datasets without logical forms (MetaQA).

    >>> from kgreason.types import Entity
    >>> path_sexpr(KBQASample(id="q", question="?", topic_entities=[Entity("Kismet")],
    ...                       relation_path=["directed_by", "~directed_by"]))
    ['JOIN', 'directed_by', ['JOIN', ['R', 'directed_by'], 'Kismet']]
    """
    if not sample.relation_path or not sample.topic_entities:
        return None
    expr: SExpr = sample.topic_entities[0].id
    for step in sample.relation_path:
        expr = ["JOIN", step[1:], expr] if step.startswith("~") else ["JOIN", ["R", step], expr]
    return expr


def reference_plan(sample: KBQASample) -> list[str] | None:
    """The gold actions of RRS, from the question's S-expression or else its relation
    path (None when it has neither, or a form the six actions cannot build)."""
    gold = sample.sexpr or path_sexpr(sample)
    if gold is None:
        return None
    try:
        return reference_actions(gold)
    except SExprError:
        return None


def reference_note(sample: KBQASample) -> str | None:
    """The RRS hint of ``reference="all"``: the gold actions, numbered (None: no plan)."""
    actions = reference_plan(sample)
    if actions is None:
        return None
    lines = "\n".join(f"{i}. {a}" for i, a in enumerate(actions, 1))
    return ("Reference actions (a correct sequence; explain in your reasoning why each step follows from the "
            f"question and the results):\n{lines}")
