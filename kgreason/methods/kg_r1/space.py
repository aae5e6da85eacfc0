"""KG-R1's schema-agnostic one-hop retrieval server as an action space.

Song et al., "Efficient and Transferable Agentic Knowledge Graph RAG via Reinforcement
Learning" (KG-R1), §3.2 and appendix D.5: four retrieval functions over directed
triples, ``<kg-query> fn(args) </kg-query>`` calls answered in ``<information>``, and a
typed error taxonomy (Figure 5). Entities may be given by name or by id; relation lists
are flat (paper default) or hierarchical (appendix E.3.2 ablation).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from dataclasses import dataclass

from kgreason.envs.base import ActionSpace, EpisodeState, ParseError
from kgreason.envs.payloads import EntityList, RelationList
from kgreason.envs.text import TokenCounter, approx_tokens, split_args, truncate_items
from kgreason.envs.tools import Tool, ToolArg, ToolSpec
from kgreason.errors import KBError, KBTimeout
from kgreason.kb.base import KnowledgeBase
from kgreason.methods.kg_r1.grammar import turn_format
from kgreason.types import Action, KBQASample, Observation, Term

KG_SERVER_ERROR = "KG_SERVER_ERROR"
KG_FORMAT_ERROR = "KG_FORMAT_ERROR"
KG_SAMPLE_NOT_FOUND = "KG_SAMPLE_NOT_FOUND"
KG_ENTITY_NOT_FOUND = "KG_ENTITY_NOT_FOUND"
KG_RELATION_NOT_FOUND = "KG_RELATION_NOT_FOUND"
KG_NO_RESULTS = "KG_NO_RESULTS"
ERROR_CODES = (KG_SERVER_ERROR, KG_FORMAT_ERROR, KG_SAMPLE_NOT_FOUND, KG_ENTITY_NOT_FOUND,
               KG_RELATION_NOT_FOUND, KG_NO_RESULTS)

#: the paper's four functions; aliases are the names the official code uses
TOOLS = ToolSpec([
    Tool("get_tail_relations", "Returns relations where the entity is the subject/head.",
         (ToolArg("entity"),), aliases=("get_relations_out",)),
    Tool("get_head_relations", "Returns relations where the entity is the object/tail.",
         (ToolArg("entity"),), aliases=("get_relations_in",)),
    Tool("get_tail_entities", "Returns entities connected to the given entity by the specified relation.",
         (ToolArg("entity"), ToolArg("relation")), aliases=("get_entities_out",)),
    Tool("get_head_entities",
         "Returns entities from which the given entity is connected by the specified relation.",
         (ToolArg("entity"), ToolArg("relation")), aliases=("get_entities_in",)),
])
FUNCTIONS = tuple(TOOLS.names())
ALIASES = {a: t.name for t in TOOLS for a in t.aliases}
_ARITY = {t.name: len(t.args) for t in TOOLS}

PROMPT = (
    "You are a helpful assistant. Answer the given question. You can query from knowledge base "
    "provided to you to answer the question. You can query knowledge up to {max_turns} times. "
    "You must first conduct reasoning inside <think>...</think>. If you need to query knowledge, "
    "you can set a query statement between <kg-query>...</kg-query> to query from knowledge base "
    "after <think>...</think>. When you have the final answer, you can output the answer inside "
    "<answer>...</answer>.\n KG Query Server Instruction : {instructions}\n\nQuestion: {question}"
)

INSTRUCTIONS = (
    "If you encounter a KG-related error, read the error message carefully and correct your query.\n\n"
    "Use exactly these query functions:\n\n" + TOOLS.describe()
)

INVALID_ACTION = (
    "Your previous action is invalid. If you want to query the knowledge base, put the query "
    "between <kg-query> and </kg-query>. If you want to give the final answer, put the answer "
    "between <answer> and </answer>. Let me try again."
)

#: the usual call, one or two double-quoted arguments, matched in one pass
_QUICK_CALL = re.compile(r'\s*([A-Za-z_][\w.]*)\s*\(\s*"([^"]*)"\s*(?:,\s*"([^"]*)"\s*)?\)\s*;?\s*')
_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*;?\s*$", re.S)



def hierarchical(relations: list[str]) -> str:
    """Group dotted relation names into ``domain type: prop, prop`` lines (KG-R1 E.3.2).

    >>> print(hierarchical(["location.country.capital", "location.location.containedby", "people.person.nationality"]))
    location country: capital
    location: containedby
    people person: nationality
    """
    groups: dict[str, list[str]] = defaultdict(list)
    for r in relations:
        parts = r.split(".")
        if len(parts) < 3:
            groups[""].append(r)
            continue
        domain, typ, prop = parts[0], parts[1], ".".join(parts[2:])
        key = domain if domain == typ else f"{domain} {typ}"
        groups[key].append(prop)
    return "\n".join(f"{k}: {', '.join(v)}" if k else ", ".join(v) for k, v in groups.items())


@dataclass(frozen=True)
class MissingSubgraph:
    """The state of a KG-R1 episode whose question's subgraph the KB does not hold: every
    call answers ``KG_SAMPLE_NOT_FOUND``, as the official server does."""

    key: str


class KGR1ActionSpace(ActionSpace):
    """KG-R1's four one-hop functions (:data:`TOOLS`).

    Args:
        relation_format: ``"flat"`` (paper default) or ``"hierarchical"``.
        shuffle_relations: shuffle relation lists before display (official code); seeded.
        show_ids: ``"auto"`` shows names, ids for unnamed nodes (CVTs); ``"always"``
            shows ``Name (id)``.
        max_obs_tokens: budget of one observation; longer lists end with "… N more".
        count_tokens: the token counter for that budget.
        initial_entities: append ``(Initial entities: "...")`` to the question (code).
    """

    name = "kg_r1"
    tools = TOOLS
    stop_sequences = ("</kg-query>", "</answer>")

    def __init__(self, relation_format: str = "flat", shuffle_relations: bool = False,
                 show_ids: str = "auto", max_obs_tokens: int = 512,
                 count_tokens: TokenCounter = approx_tokens, initial_entities: bool = True,
                 seed: int = 0):
        if relation_format not in ("flat", "hierarchical"):
            raise ValueError("relation_format must be 'flat' or 'hierarchical'")
        if show_ids not in ("auto", "always"):
            raise ValueError("show_ids must be 'auto' or 'always'")
        self.relation_format = relation_format
        self.shuffle_relations = shuffle_relations
        self.show_ids = show_ids
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.initial_entities = initial_entities
        self._rng = random.Random(seed)

    # --------------------------------------------------------------- prompt
    def instructions(self) -> str:
        return INSTRUCTIONS

    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        question = sample.question.strip()
        if self.initial_entities and sample.topic_entities:
            names = ", ".join(f'"{e.name or e.id}"' for e in sample.topic_entities)
            question += f" (Initial entities: {names})"
        # the official loop: H search turns, then a turn that may only answer, so an env of
        # max_turns turns promises max_turns - 1 queries (H = 5 is env.max_turns = 6)
        text = PROMPT.format(max_turns=max(1, max_turns - 1), instructions=self.instructions(), question=question)
        return [{"role": "user", "content": text}]

    def init_state(self, state: EpisodeState) -> None:
        key = state.sample.subgraph
        sub = getattr(state.kb, "subgraph", None)
        if key and callable(sub):
            try:
                state.kb = sub(key)
            except KBError:
                state.space_state = MissingSubgraph(key)

    # ---------------------------------------------------------------- parse
    def format_ok(self, text: str) -> bool:
        """v_fmt (paper 004 Eq. 1): reasoning and a well-formed action — a query block must
        hold one of the four functions with its arguments (any text in the tags used to pass).

        >>> space = KGR1ActionSpace()
        >>> space.format_ok("<think>x</think><kg-query>get_tail_relations(Paris)</kg-query>")
        True
        >>> space.format_ok("<think>x</think><kg-query>tell me about Paris</kg-query>")
        False
        >>> space.format_ok("<think>x</think><kg-query>get_tail_entities(Paris)</kg-query>")
        False
        """
        if turn_format(text) != 1.0:
            return False
        if "<kg-query>" not in text:
            return True  # an answer block
        parsed = self.parse(text)
        if isinstance(parsed, ParseError) or len(parsed) != 1:
            return False
        arity = _ARITY.get(parsed[0].name)
        return arity is not None and len([a for a in parsed[0].args if a != ""]) == arity

    def parse(self, text: str) -> list[Action] | ParseError:
        # str.find instead of a lazy regex: this runs on every turn (env overhead target)
        start = text.find("<kg-query>")
        if start < 0:
            return ParseError(KG_FORMAT_ERROR, INVALID_ACTION)
        start += len("<kg-query>")
        end = text.find("</kg-query>", start)
        body = (text[start:] if end < 0 else text[start:end]).strip()
        quick = _QUICK_CALL.fullmatch(body)
        if quick:
            name, first, second = quick.groups()
            args = [first] if second is None else [first, second]
        else:
            call = _CALL.match(body)
            if not call:
                return ParseError(KG_FORMAT_ERROR,
                                  f"<error>Invalid query format: {body[:80]!r} (use function_name(argument, ...))</error>")
            name, args = call.group(1), split_args(call.group(2))
        name = name.rpartition(".")[2]
        tool = TOOLS.get(name)
        return [Action(name=tool.name if tool else name, args=args, raw=body)]

    # -------------------------------------------------------------- execute
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        arity = _ARITY.get(action.name)
        if arity is None:
            return self._error(KG_SERVER_ERROR, f'Action "{action.name}" not available (use: '
                               "get_head_relations, get_tail_relations, get_head_entities, get_tail_entities)")
        if isinstance(state.space_state, MissingSubgraph):
            return self._error(KG_SAMPLE_NOT_FOUND, f'Sample "{state.space_state.key}" not found in KG')
        args = action.args if "" not in action.args else [a for a in action.args if a != ""]
        if len(args) < arity:
            return self._error(KG_FORMAT_ERROR, f"Missing required fields for {action.name}: "
                               + ("entity" if not args else "relation_name"))
        if len(args) > arity:
            what = "only one entity argument" if arity == 1 else "exactly two arguments (entity, relation)"
            return self._error(KG_FORMAT_ERROR, f"{action.name} accepts {what}")
        kb = state.kb
        calls = [0]
        try:
            if arity == 1:
                return self._relations(action.name, args[0], state, kb, calls)
            return self._entities(action.name, args, state, kb, calls)
        except KBTimeout as e:
            return self._error(KG_SERVER_ERROR, f"Query timed out: {e}", calls[0])
        except KBError as e:
            return self._error(KG_SERVER_ERROR, f"Knowledge base error: {e}", calls[0])

    def _error(self, code: str, msg: str, kb_calls: int = 0) -> Observation:
        return Observation(f"<error>{msg}</error>", error=code, kb_calls=kb_calls)

    def _resolve(self, arg: str, state: EpisodeState, kb: KnowledgeBase, calls: list[int]) -> list[str]:
        known = state.known.get(arg) or state.known.get(arg.lower())
        if known:
            return list(known)
        calls[0] += 1
        if kb.exists(arg):
            return [arg]
        calls[0] += 1
        return kb.lookup(arg)

    def _relations(self, fn: str, arg: str, state: EpisodeState, kb: KnowledgeBase, calls: list[int]) -> Observation:
        ids = self._resolve(arg, state, kb, calls)
        if not ids:
            return self._error(KG_ENTITY_NOT_FOUND, f'Entity "{arg}" not found in KG', calls[0])
        get = kb.relations_out if fn == "get_tail_relations" else kb.relations_in
        calls[0] += len(ids)
        # the KB returns sorted, distinct lists: merge only when a name has several ids
        ordered = list(get(ids[0])) if len(ids) == 1 else sorted({r for e in ids for r in get(e)})
        side = "tail" if fn == "get_tail_relations" else "head"
        if not ordered:
            return self._error(KG_NO_RESULTS, f'No {side} relations found for entity "{arg}" in knowledge graph', calls[0])
        shown = ordered
        if self.shuffle_relations:
            shown = ordered.copy()
            self._rng.shuffle(shown)
        if self.relation_format == "hierarchical":
            body = hierarchical(shown)
        else:
            body = truncate_items(shown, self.max_obs_tokens, self.count_tokens)
        text = f'{side.capitalize()} relations for entity "{arg}": {body}'
        # ``ordered`` is already a copy (the KB's list is never handed out)
        return Observation(text, payload=RelationList(ordered), relations=ordered, kb_calls=calls[0])

    def _entities(self, fn: str, args: list[str], state: EpisodeState, kb: KnowledgeBase, calls: list[int]) -> Observation:
        ent, rel = args
        ids = self._resolve(ent, state, kb, calls)
        if not ids and self._looks_like_relation(ent):
            # The paper's own example writes get_head_entities(relation, entity).
            ent, rel = rel, ent
            ids = self._resolve(ent, state, kb, calls)
        if not ids:
            return self._error(KG_ENTITY_NOT_FOUND, f'Entity "{ent}" not found in KG', calls[0])
        tail = fn == "get_tail_entities"
        get = kb.tails if tail else kb.heads
        calls[0] += len(ids)
        # Term sorting is slow (dataclass ordering) and the KB's lists are already sorted
        terms = get(ids[0], rel) if len(ids) == 1 else sorted({t for e in ids for t in get(e, rel)})
        if not terms:
            present: set[str] = set()
            for e in ids:
                calls[0] += 2
                present.update(kb.relations_out(e))
                present.update(kb.relations_in(e))
            if rel not in present:
                return self._error(KG_RELATION_NOT_FOUND, f'Relation "{rel}" not found in KG', calls[0])
            role = "head" if tail else "tail"
            side = "tail" if tail else "head"
            return self._error(KG_NO_RESULTS, f'No {side} entities found for relation "{rel}" with {role} '
                               f'"{ent}" in knowledge graph', calls[0])
        shown, entity_ids = [], []
        for t in terms:  # one pass: this runs on every entity call (env overhead target)
            shown.append(t.value)
            if t.kind == "uri":
                entity_ids.append(t.value)
        if kb.schema.ids_are_names:  # MetaQA-style KBs: an id is its name, nothing to look up
            labels = shown
            state.remember_self_named(tuple(shown))
        else:
            calls[0] += 1
            labels = self._labels(terms, kb.names(entity_ids), state)
        body = truncate_items(labels, self.max_obs_tokens, self.count_tokens)
        if tail:
            text = f'Tail entities for relation "{rel}" with head "{ent}": {body}'
        else:
            text = f'Head entities for relation "{rel}" with tail "{ent}": {body}'
        return Observation(text, payload=EntityList(shown, labels),
                           entities=entity_ids, relations=[rel], kb_calls=calls[0])

    def _labels(self, terms: list[Term], names: dict[str, str], state: EpisodeState) -> list[str]:
        """Display labels of result terms; every label and id becomes a known name."""
        labels = []
        for t in terms:
            state.remember(t.value, t.value)
            name = None if t.is_literal else names.get(t.value)
            if name and name != t.value:
                state.remember(name, t.value)
                labels.append(f"{name} ({t.value})" if self.show_ids == "always" else name)
            else:
                labels.append(t.value)
        return labels

    @staticmethod
    def _looks_like_relation(s: str) -> bool:
        return "." in s and " " not in s.strip()
