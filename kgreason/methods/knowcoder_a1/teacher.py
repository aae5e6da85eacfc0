"""A scripted KnowCoder-A1 teacher: plays the gold query with exploration and recovery.

The paper samples cold-start episodes from large models with a prompt that encourages
trial and error (paper 003 §4.2.1); no such model runs on this machine, so this teacher
writes such episodes from a question's gold SPARQL (or, without one, a query that follows
its gold relation path, as on MetaQA). It writes only what a policy could write from what
it has seen: it searches the patterns around the topic entity with the question's own
words, walks a multi-hop path one pattern search per hop, and before its query quotes the
shown pattern line it queries. With some probability it also searches for the answer's
type, takes a wrong shown relation, or writes a query with a syntax error, and then
recovers. The rejection sampler keeps what ends right and grounded.
"""

from __future__ import annotations

import json
import random
import re

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv, StepResult
from kgreason.errors import ConfigError
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.patterns import RelationPattern
from kgreason.methods.knowcoder_a1.space import KnowCoderActionSpace
from kgreason.rankers.base import verbalize_relation
from kgreason.training.teachers import check_needs, check_probabilities, hop_at
from kgreason.types import KBQASample, NodePatterns, Trajectory

_IRI = re.compile(r"<([^<>\s]+)>")
_RESULTS = re.compile(r"<tool_response>(.*)</tool_response>", re.S)


def compact_sparql(sparql: str, kb: KnowledgeBase) -> str:
    """Full IRIs of the KB's namespaces written the way the policy writes them (``ns:…``).

    >>> from kgreason.data import load_demo_kb
    >>> compact_sparql("SELECT ?x WHERE { <http://rdf.freebase.com/ns/m.1> <http://rdf.freebase.com/ns/a.b.c> ?x }",
    ...                load_demo_kb())
    'SELECT ?x WHERE { ns:m.1 ns:a.b.c ?x }'
    """
    s = kb.schema

    def short(m: re.Match) -> str:
        iri = m.group(1)
        if iri.startswith(s.entity_ns) and s.entity_ns != s.relation_ns:
            return KnowCoderActionSpace.entity_ref(kb, s.to_id(iri))
        if iri.startswith(s.relation_ns):
            return KnowCoderActionSpace.relation_ref(kb, s.to_id(iri))
        if iri.startswith(s.entity_ns):
            return KnowCoderActionSpace.entity_ref(kb, s.to_id(iri))
        return m.group(0)

    return _IRI.sub(short, sparql)


def path_sparql(sample: KBQASample, kb: KnowledgeBase) -> str | None:
    """A query that follows ``sample.relation_path`` from its first topic entity (``~r``:
    backwards), never passing through the topic entity again after the first hop nor
    answering it (MetaQA's convention, as :func:`kgreason.data.paths.gold_walk` walks):
    "the release years of the films written by the writer of Jab We Met" are the other
    films' years, not Jab We Met's own.

    >>> from kgreason.data import load_demo_kb
    >>> from kgreason.types import Entity
    >>> s = KBQASample(id="q", question="?", topic_entities=[Entity("m.1")], relation_path=["a.b.c", "~d.e.f"])
    >>> path_sparql(s, load_demo_kb())
    'SELECT DISTINCT ?x WHERE { VALUES ?e {ns:m.1} . ?e ns:a.b.c ?y1 . ?x ns:d.e.f ?y1 . FILTER(?x != ?e) }'
    >>> s.relation_path = ["a.b.c", "~a.b.c", "d.e.f"]
    >>> path_sparql(s, load_demo_kb())  # doctest: +NORMALIZE_WHITESPACE
    'SELECT DISTINCT ?x WHERE { VALUES ?e {ns:m.1} . ?e ns:a.b.c ?y1 . ?y2 ns:a.b.c ?y1 . FILTER(?y2 != ?e)
     ?y2 ns:d.e.f ?x . FILTER(?x != ?e) }'

    Each later node is kept out right after the triple that reaches it, so a 3-hop query
    is the 2-hop one with its end renamed and one more hop in the same two-part form,
    and every query ends as a 2-hop one does.
    """
    if not sample.relation_path or not sample.topic_entities:
        return None
    ref = KnowCoderActionSpace.entity_ref(kb, sample.topic_entities[0].id)
    hops, prev = [], "?e"
    for i, r in enumerate(sample.relation_path):
        nxt = "?x" if i == len(sample.relation_path) - 1 else f"?y{i + 1}"
        back = r.startswith("~")
        rel = KnowCoderActionSpace.relation_ref(kb, r.lstrip("~"))
        hops.append(f"{nxt} {rel} {prev} ." if back else f"{prev} {rel} {nxt} .")
        # the first hop's node is the topic again only through a self-loop: not filtered
        if i:
            hops.append(f"FILTER({nxt} != ?e)")
        prev = nxt
    return f"SELECT DISTINCT ?x WHERE {{ VALUES ?e {{{ref}}} . {' '.join(hops)} }}"


def _relations(sparql: str, kb: KnowledgeBase) -> list[str]:
    """Relation ids in a gold query, in order (type relation and classes left out)."""
    s = kb.schema
    out = []
    for m in _IRI.finditer(sparql):
        iri = m.group(1)
        if iri.startswith(s.relation_ns):
            rid = s.to_id(iri)
            if "." in rid and not re.match(r"^[mg]\.", rid) and rid != s.type_relation and rid not in out:
                out.append(rid)
    return out


def _call(name: str, **arguments: str) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "</tool_call>"


def _results(observation: str) -> list[str]:
    m = _RESULTS.search(observation)
    if not m:
        return []
    try:
        body = json.loads(m.group(1))
        text = body.get("results", "")
        return json.loads(text.split(" … ")[0])
    except (ValueError, AttributeError):
        return []


def asked_for(sample: KBQASample) -> str:
    """The question with its topic entities' names taken out: what to rank patterns by.

    >>> from kgreason.types import Entity
    >>> asked_for(KBQASample(id="q", question="What is the capital of Egypt?", topic_entities=[Entity("m.1", "Egypt")]))
    'What is the capital of?'
    """
    text = sample.question
    for e in sample.topic_entities:
        if e.name:
            text = text.replace(e.name, " ")
    return re.sub(r"\s+([?.,!])", r"\1", re.sub(r"\s+", " ", text)).strip()


def _shown(step: StepResult) -> list[tuple[str, RelationPattern]]:
    """The pattern lines a ``SearchGraphPatterns`` step showed, each with its pattern."""
    pats = [p for pl in step.payloads if isinstance(pl, NodePatterns) for p in pl.patterns]
    m = _RESULTS.search(step.observation)
    if not pats or not m:
        return []
    try:
        lines = json.loads(m.group(1)).get("results", "").split("\n")
    except (ValueError, AttributeError):
        return []
    return list(zip(lines, pats, strict=False))


def _line_for(shown: list[tuple[str, RelationPattern]], rels: list[str]) -> str | None:
    """The shown line whose pattern uses the most of ``rels`` (only those), if any does."""
    best, score = None, 0
    for line, p in shown:
        n = sum(r in rels for r in p.relations)
        if n == len(p.relations) and n > score:
            best, score = line, n
    return best


def _chain_shown(shown: list[tuple[str, RelationPattern]], path: list[str]) -> bool:
    want = tuple(r.lstrip("~") for r in path)
    return any(tuple(p.relations) in (want, want[::-1]) for _, p in shown)


@declare(action_space="knowcoder_a1", gold=("sparql", "relation_path"))
class ScriptedKnowCoderTeacher:
    """Episodes from the gold SPARQL with exploration (see the module docstring).

    Args:
        p_types: probability of a ``SearchTypes`` step (always when the gold query has a
            type constraint).
        p_detour: probability of first running a query over a wrong shown relation.
        p_syntax_error: probability of first running the gold query with a syntax error.
        plan_hops: the first thought says how many hops the question takes (the length of
            its gold relation path: what its wording tells, e.g. MetaQA's "the films acted
            by X were in which genres" takes 2), and each later thought which hop it is at,
            so that walking on or querying follows from a count the policy wrote itself.
        restate: the first thought restates what the question asks (its words without the
            topic's name) before anything else it says, so that with ``plan_hops`` the
            count is written right after the words that decide it.
        plan_path: with ``plan_hops``, the count follows the gold path's relations in order,
            directions left out ("which follows directed_by, directed_by, written_by: 3
            hops"), so that the policy writes one relation per hop the question's words
            name and counts what it wrote.
        path_directions: with ``plan_path``, a relation walked from its object to its subject
            keeps the path's ``~`` ("which follows directed_by, ~directed_by, written_by"), so
            that "the director of <film>" and "the films directed by <person>" are written
            differently and a 3-hop question's way back from the middle entity is spelled out.
        path_kinds: with ``plan_path``, the relations follow the kinds of node the path passes,
            topic first ("which goes movie -> director -> movie -> actor and follows
            directed_by, directed_by, starred_actors: 3 hops"), read from the sample's
            ``meta["path_kinds"]`` (MetaQA's question type); a sample without them is planned
            as with ``plan_path`` alone. The kinds are the question's own nouns ("the films
            directed by the director of A"), and a relation that repeats passes a kind twice.
        plan_after_look: with ``plan_path``, the path is named in the second thought, after
            the first pattern search, which shows the topic's place in its first relation
            ("Around Rachel Specter: ("Alone in the Dark II", starred_actors, ?x). The
            question goes actor -> movie -> director and follows …"): the kind of node the
            topic is, which the question's words do not always say, is read off the KB.

    Raises:
        ConfigError: a probability outside [0, 1], ``plan_path`` without ``plan_hops``, or
            ``path_directions``, ``path_kinds`` or ``plan_after_look`` without ``plan_path``.
    """

    name = "scripted"

    def __init__(self, p_types: float = 0.25, p_detour: float = 0.2, p_syntax_error: float = 0.15,
                 plan_hops: bool = False, restate: bool = False, plan_path: bool = False,
                 path_directions: bool = False, path_kinds: bool = False, plan_after_look: bool = False):
        check_probabilities("ScriptedKnowCoderTeacher", p_types=p_types, p_detour=p_detour,
                            p_syntax_error=p_syntax_error)
        # each option only rewrites the thought the one before it writes
        check_needs("ScriptedKnowCoderTeacher", ("plan_path", plan_path, "plan_hops", plan_hops),
                    ("path_directions", path_directions, "plan_path", plan_path),
                    ("path_kinds", path_kinds, "plan_path", plan_path),
                    ("plan_after_look", plan_after_look, "plan_path", plan_path))
        self.p_types = p_types
        self.p_detour = p_detour
        self.p_syntax_error = p_syntax_error
        self.plan_hops = plan_hops
        self.restate = restate
        self.plan_path = plan_path
        self.path_directions = path_directions
        self.path_kinds = path_kinds
        self.plan_after_look = plan_after_look

    def episode(self, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        if not isinstance(env.action_space, KnowCoderActionSpace):
            raise ConfigError(f"ScriptedKnowCoderTeacher plays the knowcoder_a1 action space, "
                              f"not {type(env.action_space).__name__}")
        env.reset(sample)
        kb = env.kb
        assert env.trajectory is not None
        gold = compact_sparql(sample.sparql, kb) if sample.sparql else path_sparql(sample, kb)
        if gold is None or not sample.topic_entities:
            env.step("<think>I cannot find a way to answer this question.</think><answer>\\boxed{[]}</answer>")
            return env.trajectory
        rels = _relations(sample.sparql, kb) if sample.sparql else [r.lstrip("~") for r in sample.relation_path or []]
        topic = sample.topic_entities[0]
        ref = KnowCoderActionSpace.entity_ref(kb, topic.id)
        # what the policy can write too: the question's words, not the gold relation's
        semantic = asked_for(sample)
        name = topic.name or topic.id
        sketch = f"SELECT DISTINCT ?x WHERE {{ VALUES ?x {{{ref}}} }}"
        path = list(sample.relation_path or [])
        n_hops = len(path) if self.plan_hops else 0
        hops = f"{n_hops} hop{'s' * (n_hops > 1)}"
        written = path if self.path_directions else [r.lstrip("~") for r in path]
        kinds = sample.meta.get("path_kinds") if self.path_kinds else None
        goes = f"goes {' -> '.join(kinds)} and " if kinds and len(kinds) == len(path) + 1 else ""
        takes = "" if not n_hops else (f"{goes}follows {', '.join(written)}: {hops}"
                                       if self.plan_path else f"takes {hops}")
        # plan_after_look: the path waits for the next thought, once the patterns are shown
        early, takes = ("", takes) if not self.plan_after_look else (takes, "")
        if self.restate:
            first = (f"The question asks: {semantic.rstrip('?.! ')}" + (f", which {takes}" if takes else "")
                     + f". It is about {name}.")
        else:
            first = f"The question is about {name}" + (f" and {takes}" if takes else "") + "."
        r = env.step(f"<think>{first} I will look at the relation patterns around it.</think>"
                     + _call("SearchGraphPatterns", sparql=sketch, semantic=semantic))
        shown = _shown(r)
        later = []
        if early:
            seen = _line_for(shown, [path[0].lstrip("~")]) if path else None
            later.append((f"Around {name}: {seen}. " if seen else "") + f"The question {early}. ")

        def lead() -> str:
            """The plan, in the first thought after the pattern search (``plan_after_look``)."""
            return later.pop() if later else ""

        walked: list[str] = []
        # a multi-hop path whose chain is not shown (no CVT): walk it, one pattern search per hop
        for i, hop in enumerate(path[:-1]):
            if env.done or _chain_shown(shown, path[i:]):
                break
            line = _line_for(shown, [hop.lstrip("~")])
            if line is None:
                break
            sub = KBQASample(id=sample.id, question=sample.question, topic_entities=sample.topic_entities,
                             relation_path=path[: i + 1])
            sketch = path_sparql(sub, kb) or sketch
            r = env.step(f"<think>{lead()}{hop_at(i, i, n_hops)}{line} leads towards the answer; I will look around its far end.</think>"
                         + _call("SearchGraphPatterns", sparql=sketch, semantic=semantic))
            shown = _shown(r)
            walked.append(hop.lstrip("~"))
        type_iri = kb.schema.relation_iri(kb.schema.type_relation) if kb.schema.type_relation else None
        classes = re.findall(rf"<{re.escape(type_iri)}>\s+<([^>]+)>", sample.sparql or "") if type_iri else []
        classes = [kb.schema.to_id(c) for c in classes]
        if not classes and rng.random() < self.p_types and sample.answers:
            classes = kb.types(sample.answers[0].id)  # the answer's own type: what a careful writer checks
        if not env.done and classes:
            what = verbalize_relation(classes[0])
            env.step(f"<think>{lead()}The answer should be of the right type; let me search the types for {what}.</think>"
                     + _call("SearchTypes", query=what))
        wrong = [(line, p) for line, p in shown if p.relations[0] not in rels and p.template in (1, 3)]
        note = ""
        if not env.done and wrong and rng.random() < self.p_detour:
            line, p = rng.choice(wrong)
            rel = KnowCoderActionSpace.relation_ref(kb, p.relations[0])
            env.step(f"<think>{lead()}Maybe {line} answers it.</think>"
                     + _call("ExecuteSPARQL", sparql=f"SELECT DISTINCT ?x WHERE {{ {ref} {rel} ?x . }}"))
            note = f"That is {verbalize_relation(p.relations[0])}, not what the question asks. "
        elif not env.done and rng.random() < self.p_syntax_error:
            broken = gold.rstrip().rstrip("}").rstrip()
            env.step(f"<think>{lead()}I will write the query.</think>" + _call("ExecuteSPARQL", sparql=broken))
            note = "The query has a syntax error: a closing brace is missing. "
        if env.done:
            return env.trajectory
        line = _line_for(shown, [x for x in rels if x not in walked] or rels)
        reason = (f"{line} fits the question" if line is not None
                  else "I will query " + (", ".join(verbalize_relation(x) for x in rels) or "its constraints")
                  + f" from {name}")
        r = env.step(f"<think>{lead()}{note}{hop_at(len(walked), n_hops - 1, n_hops)}{reason}.</think>"
                     + _call("ExecuteSPARQL", sparql=gold))
        if env.done:
            return env.trajectory
        answers = _results(r.observation) if not r.error else []
        env.step("<think>The query returned the answer.</think><answer>\\boxed{"
                 + json.dumps(answers, ensure_ascii=False) + "}</answer>")
        return env.trajectory

    def __repr__(self) -> str:
        return (f"ScriptedKnowCoderTeacher(p_types={self.p_types}, p_detour={self.p_detour}, "
                f"p_syntax_error={self.p_syntax_error}, plan_hops={self.plan_hops}, restate={self.restate}, "
                f"plan_path={self.plan_path}, path_directions={self.path_directions}, "
                f"path_kinds={self.path_kinds}, plan_after_look={self.plan_after_look})")


def gold_episode(env: KGEnv, sample: KBQASample, rng: random.Random | None = None) -> Trajectory | None:
    """KnowCoder-A1's scripted policy: the gold SPARQL (or relation path) found and run
    without detours (``None``: the question has neither)."""
    if not sample.topic_entities or not (sample.sparql or sample.relation_path):
        return None
    teacher = ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0)
    return teacher.episode(env, sample, rng or random.Random(0))
