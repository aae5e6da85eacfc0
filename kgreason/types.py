"""The data model shared by every part of kgreason (design §2, docs/design.md).

Everything here is a plain dataclass so that parts can be used alone from user code and
serialised to JSON(L) for trajectories and result files.
"""

from __future__ import annotations

import copy
import dataclasses
import decimal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

TermKind = Literal["uri", "literal", "bnode"]

XSD = "http://www.w3.org/2001/XMLSchema#"

_INTEGER_TYPES = {XSD + t for t in (
    "integer", "int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
    "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt", "unsignedShort",
    "unsignedByte")}


def canonical_lexical(value: str, datatype: str | None) -> str:
    """The canonical lexical form of a numeric literal, as SPARQL engines return it.

    Oxigraph and Virtuoso store ``"1.70"^^xsd:decimal`` as ``1.7`` and ``"007"^^xsd:integer``
    as ``7``; every backend's terms go through this so that they compare equal.

    >>> canonical_lexical("1.70", XSD + "decimal"), canonical_lexical("2.0", XSD + "decimal")
    ('1.7', '2')
    >>> canonical_lexical("+007", XSD + "integer"), canonical_lexical("1E3", XSD + "double")
    ('7', '1000')
    >>> canonical_lexical("abc", XSD + "integer")
    'abc'
    """
    if not datatype or not datatype.startswith(XSD):
        return value
    try:
        if datatype in _INTEGER_TYPES:
            return str(int(value.strip()))
        if datatype == XSD + "decimal":
            d = decimal.Decimal(value.strip())
            if not d.is_finite():
                return value
            s = format(d.normalize(), "f")
            return "0" if s in ("-0", "0") else s
        if datatype in (XSD + "float", XSD + "double"):
            f = float(value)
            if f == 0.0 or not (1e-6 <= abs(f) < 1e15):
                return value
            r = repr(f)
            return r[:-2] if r.endswith(".0") else r
    except (ValueError, ArithmeticError):
        return value
    return value


@dataclass(frozen=True, order=True)
class Term:
    """One RDF term as returned by a knowledge base.

    For ``uri`` terms ``value`` is the KB-local id (``m.0abc``, ``Q42``, a MetaQA name)
    when the IRI lies in the KB's namespace, else the full IRI. Literals keep their
    lexical form, datatype IRI and language tag, so dates and numbers survive as answers.
    """

    kind: TermKind
    value: str
    datatype: str | None = None
    lang: str | None = None

    @property
    def is_literal(self) -> bool:
        return self.kind == "literal"

    @property
    def is_entity(self) -> bool:
        return self.kind == "uri"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def uri(cls, value: str) -> Term:
        return cls("uri", value)

    @classmethod
    def literal(cls, value: str, datatype: str | None = None, lang: str | None = None) -> Term:
        # Plain and xsd:string literals are the same term in RDF 1.1.
        if datatype == XSD + "string":
            datatype = None
        return cls("literal", canonical_lexical(value, datatype), datatype, lang)


@dataclass(frozen=True)
class Entity:
    """An entity or literal answer: KB-local ``id`` plus optional display name."""

    id: str
    name: str | None = None
    aliases: tuple[str, ...] = ()
    datatype: str | None = None  # set for literal answers (dates, numbers)

    @property
    def label(self) -> str:
        return self.name or self.id


@dataclass
class KBQASample:
    """One question, normalised across datasets."""

    id: str
    question: str
    topic_entities: list[Entity] = field(default_factory=list)
    answers: list[Entity] = field(default_factory=list)
    sexpr: str | None = None
    sparql: str | None = None
    relation_path: list[str] | None = None
    hops: int | None = None
    level: str | None = None
    subgraph: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KBQASample:
        d = dict(d)
        d["topic_entities"] = [_entity(e) for e in d.get("topic_entities", [])]
        d["answers"] = [_entity(e) for e in d.get("answers", [])]
        if d.get("meta", {}).get("answer_variants"):  # gold sets of other parses (WebQSP)
            d["meta"] = {**d["meta"], "answer_variants": [[_entity(e) for e in v] for v in d["meta"]["answer_variants"]]}
        return cls(**d)


def _entity(d: dict[str, Any] | Entity) -> Entity:
    if isinstance(d, Entity):
        return d
    return Entity(d["id"], d.get("name"), tuple(d.get("aliases", ())), d.get("datatype"))


@dataclass
class Action:
    """A parsed tool call: a function name with positional ``args`` (``fn("a", "b")``)
    and/or keyword ``kwargs`` (a JSON tool call's ``arguments``)."""

    name: str
    args: list[str] = field(default_factory=list)
    raw: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Observation:
    """What the environment shows the agent after an action.

    ``error`` is None on success, else a code of the action space's error taxonomy
    (e.g. ``KG_ENTITY_NOT_FOUND``); errors are observations, never exceptions.
    """

    text: str
    payload: Any = None
    error: str | None = None
    entities: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    kb_calls: int = 0


@dataclass
class Turn:
    """One policy message and what came back for it.

    The environment fills the text, actions, observation and KB fields; the rollout
    fills ``n_generated_tokens`` and ``n_observation_tokens`` (the policy tokenizer's
    counts) and ``gen_time_s`` (wall time of the batched generation that made the turn).
    """

    text: str
    actions: list[Action] = field(default_factory=list)
    observation: str = ""
    error: str | None = None
    entities: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    is_answer: bool = False
    kb_calls: int = 0
    gen_time_s: float = 0.0
    env_time_s: float = 0.0
    n_generated_tokens: int = 0
    n_observation_tokens: int = 0


@dataclass(frozen=True)
class Episode:
    """A finished episode as recorded: what the env and the rollout made of one question,
    scored, with no training tensors. Frozen (its turns are copies): the training batch
    built from the same rollout (:class:`~kgreason.training.TrainingBatch`) and the
    record cannot drift apart.

    Make one with :meth:`Trajectory.episode`.
    """

    sample_id: str
    prompt: tuple[dict[str, str], ...]
    turns: tuple[Turn, ...]
    answer_text: str | None
    answer: tuple[Entity, ...]
    reward: float
    turn_rewards: tuple[float, ...]
    reward_components: Mapping[str, float]
    global_reward: float | None
    meta: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, as :meth:`Trajectory.to_dict` writes them (less the tokens).

        >>> Trajectory("q", reward_components={"f1": 1.0}).episode().to_dict()["reward_components"]
        {'f1': 1.0}
        """
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["prompt"] = [dict(m) for m in self.prompt]
        d["turns"] = [dataclasses.asdict(t) for t in self.turns]
        d["answer"] = [dataclasses.asdict(e) for e in self.answer]
        d["turn_rewards"] = list(self.turn_rewards)
        d["reward_components"] = dict(self.reward_components)
        d["meta"] = copy.deepcopy(dict(self.meta))
        return d


@dataclass
class Trajectory:
    """One episode of an agent on one sample, as the env and the rollout build it.

    It is the working record: the env appends turns, the rollout token fields, the
    experience source the reward. Training reads its token fields; what is kept of it is
    an immutable :class:`Episode` (:meth:`episode`).

    Token-level fields (filled by the rollout): ``token_ids``, ``loss_mask`` (1 = policy
    token, 0 = prompt or environment text) and ``turn_index`` (turn of each token, -1
    for the prompt) have the same length. Every loss in the library uses only masked
    tokens. ``sampler_logprobs``, when the engine gave them, is as long too: the sampler's
    log-prob of each policy token (:attr:`kgreason.rollout.Generation.logprobs`), 0 on the
    other tokens. Rollouts start it as ``[]``; it is None for trajectories built otherwise
    and once a policy segment came without them.
    """

    sample_id: str
    prompt: list[dict[str, str]] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    answer_text: str | None = None
    answer: list[Entity] = field(default_factory=list)
    turn_rewards: list[float] = field(default_factory=list)
    reward: float = 0.0
    reward_components: dict[str, float] = field(default_factory=dict)
    #: the trajectory-level part of ``reward`` (KG-R1's R_global; None: as the reward says)
    global_reward: float | None = None
    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    turn_index: list[int] = field(default_factory=list)
    sampler_logprobs: list[float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def start_tokens(self) -> None:
        """Empty the token-level fields for a rollout to fill, the sampler's log-probs included."""
        self.token_ids, self.loss_mask, self.turn_index, self.sampler_logprobs = [], [], [], []

    def append_tokens(self, ids: list[int], policy: bool, turn: int, logprobs: list[float] | None = None) -> None:
        """Append a segment: the policy's tokens (``policy=True``, mask 1, with the
        sampler's ``logprobs`` of them when the engine gave them) or prompt / environment
        tokens (mask 0), all tagged with ``turn`` (-1 for the prompt)."""
        self.token_ids += ids
        self.loss_mask += [int(policy)] * len(ids)
        self.turn_index += [turn] * len(ids)
        if self.sampler_logprobs is not None:
            if not policy:
                self.sampler_logprobs += [0.0] * len(ids)
            elif logprobs is not None and len(logprobs) == len(ids):
                self.sampler_logprobs += list(logprobs)
            else:  # one policy segment without them: the trajectory has none
                self.sampler_logprobs = None

    def check_token_fields(self) -> None:
        """Raise ``ValueError`` unless the token-level fields line up."""
        n = len(self.token_ids)
        if len(self.loss_mask) != n or len(self.turn_index) != n:
            raise ValueError(
                f"token_ids ({n}), loss_mask ({len(self.loss_mask)}) and turn_index "
                f"({len(self.turn_index)}) must have the same length"
            )
        if any(m not in (0, 1) for m in self.loss_mask):
            raise ValueError("loss_mask holds values other than 0 and 1")
        if self.sampler_logprobs is not None and len(self.sampler_logprobs) != n:
            raise ValueError(f"sampler_logprobs ({len(self.sampler_logprobs)}) and token_ids ({n}) differ in length")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def episode(self) -> Episode:
        """This trajectory as a frozen :class:`Episode` (turns copied, token fields left out).

        >>> t = Trajectory("q", turns=[Turn("<answer>A</answer>", is_answer=True)], reward=1.0)
        >>> e = t.episode()
        >>> t.turns[0].text = "changed"
        >>> e.turns[0].text, e.reward
        ('<answer>A</answer>', 1.0)
        """
        return Episode(self.sample_id, tuple(dict(m) for m in self.prompt),
                       tuple(dataclasses.replace(t, actions=list(t.actions), entities=list(t.entities),
                                                 relations=list(t.relations)) for t in self.turns),
                       self.answer_text, tuple(self.answer), self.reward, tuple(self.turn_rewards),
                       MappingProxyType(dict(self.reward_components)), self.global_reward,
                       MappingProxyType(dict(self.meta)))


# ---------------------------------------------------------------- payloads
# What an observation carries for code (see kgreason.envs.payloads).


@dataclass(slots=True)
class Payload:
    """Base of all payloads."""

    @property
    def result_key(self) -> str | None:
        """What makes two results the same for observation-equivalence pruning (None:
        not comparable, so the branch is kept by its text)."""
        return None


@dataclass(slots=True)
class RelationList(Payload):
    """Relations listed around an entity (KG-R1 ``get_*_relations``)."""

    relations: Sequence[str]


@dataclass(slots=True)
class EntityList(Payload):
    """Entities reached over a relation, with the labels shown (KG-R1 ``get_*_entities``)."""

    ids: Sequence[str]
    labels: Sequence[str]


@dataclass(slots=True)
class NodePatterns(Payload):
    """Relation patterns enumerated around nodes (ISP ``<node>``)."""

    nodes: Sequence[str]
    patterns: Sequence[Any]  # kgreason.kb.RelationPattern
    key: str

    @property
    def result_key(self) -> str | None:
        return self.key


@dataclass(slots=True)
class QueryResult(Payload):
    """The values a SPARQL query returned (ISP ``<sparql>``, KnowCoder-A1 ``ExecuteSPARQL``)."""

    query: str
    values: Sequence[str]
    rows: Sequence[Any] = ()  # the result rows (kgreason.kb.Row)

    @property
    def result_key(self) -> str | None:
        return "sparql|" + "\n".join(self.values)
