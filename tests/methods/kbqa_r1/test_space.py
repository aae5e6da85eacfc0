"""KBQA-R1's S-expression action space: numbering, the RRCG gate, errors, every backend."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.envs.base import KGEnv
from kgreason.errors import KBTimeout
from kgreason.eval import f1
from kgreason.kb import load_metaqa_kb
from kgreason.kb.sexpr import SExprError
from kgreason.kb.triplestore import TripleStoreKB
from kgreason.methods.kbqa_r1 import KBQAR1ActionSpace
from kgreason.methods.kbqa_r1.space import (
    KBQA_BAD_ARGUMENTS,
    KBQA_BAD_EXPRESSION,
    KBQA_DISABLED_ACTION,
    KBQA_EMPTY,
    KBQA_FORMAT_ERROR,
    KBQA_RELATION_REJECTED,
    KBQA_TIMEOUT,
    KBQA_UNKNOWN_ACTION,
    KBQA_UNKNOWN_ENTITY,
    KBQAR1State,
    reference_actions,
)
from kgreason.testing import check_env
from kgreason.types import Entity, KBQASample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def act(*actions: str) -> str:
    return "<think>t</think>\n<action>" + "\n".join(actions) + "</action>"


@pytest.fixture(scope="module")
def questions():
    return [*load_dataset("demo", split="train"), *load_dataset("demo", split="dev")]


@pytest.fixture
def kenya(questions):
    return next(s for s in questions if s.question == "What is the capital of Kenya?")


def env_for(kb, **kw) -> KGEnv:
    return make_env("kbqa_r1", kb, max_turns=kw.pop("max_turns", 6), **kw)


def test_every_demo_question_replays_its_reference_actions(demo_oxigraph, questions):
    """The gold actions, executed through the env, answer every demo question except the
    counts of nothing (their relation is absent around the entity, so the gate rejects it)."""
    failed = Counter()
    for s in questions:
        env = env_for(demo_oxigraph)
        env.reset(s)
        obs = ""
        for a in reference_actions(s.sexpr):
            r = env.step(act(a))
            obs = r.observation
        names = [a.label for a in s.answers]
        if not all(n in obs for n in names):
            failed[(s.meta["qtype"], tuple(names))] += 1
    assert set(failed) <= {("count", ("0",))}, failed


def test_expression_numbering_start_join_merge(demo_oxigraph, questions):
    q = next(s for s in questions if s.meta["qtype"] == "cvt" and len(s.topic_entities) == 2)
    film, character = (e.id for e in q.topic_entities)
    env = env_for(demo_oxigraph)
    env.reset(q)
    r = env.step(act(f"Find_relation({film}, film.performance.film)", f"Find_relation({character}, film.performance.character)"))
    assert "expression1: (JOIN film.performance.film" in r.observation
    assert "expression2: (JOIN film.performance.character" in r.observation  # each entity STARTs a new one
    r = env.step(act("Merge(expression1, expression2)"))
    assert r.observation.count("expression1: (AND") == 1  # written back to the earlier number
    r = env.step(act("Find_relation(expression2, (R film.performance.actor))"))
    assert r.error == KBQA_BAD_EXPRESSION and "defined: expression1" in r.observation
    r = env.step(act("Find_relation(expression, (R film.performance.actor))"))  # the current one
    assert r.error is None and q.answers[0].name in r.observation
    assert "expression1: (JOIN (R film.performance.actor) (AND" in r.observation


def test_the_gate_snaps_turns_round_and_rejects(demo_oxigraph, kenya):
    K = kenya.topic_entities[0].id
    env = env_for(demo_oxigraph)
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, (R capital))"))  # a short name: tentatively accepted
    assert r.error is None and '"capital" is not a relation here; using "location.country.capital"' in r.observation
    assert "Nairobi" in r.observation
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, location.country.capital)"))  # Kenya is the subject: turned round
    assert "links the other way here; using (R location.country.capital)" in r.observation and "Nairobi" in r.observation
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, zz.qq.frobnicate)"))
    assert r.error == KBQA_RELATION_REJECTED and "location.country.capital (" in r.observation  # scored neighbours
    assert env.state.of(KBQAR1State).sexpr.exprs == {}  # a rejected action changes nothing


def test_without_the_gate_a_wrong_relation_runs_as_written(demo_oxigraph, kenya):
    K = kenya.topic_entities[0].id
    env = env_for(demo_oxigraph, gate={"enabled": False})
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, (R capital))"))
    assert r.error == KBQA_EMPTY and "matches nothing; the expression is unchanged" in r.observation


def test_the_dense_gate_on_the_real_encoder(demo_oxigraph, kenya):
    K = kenya.topic_entities[0].id
    from kgreason.rankers import DenseRanker

    env = env_for(demo_oxigraph, ranker=DenseRanker())
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, (R location.country.capital_city))"))
    assert r.error is None and "Nairobi" in r.observation and "location.country.capital" in r.observation
    r = env.step(act(f"Find_relation({K}, (R banana.smoothie))"))
    assert r.error == KBQA_RELATION_REJECTED


def test_order_compare_time_and_count(demo_oxigraph, questions):
    for qtype in ("superlative", "comparison", "time", "count", "type"):
        s = next(q for q in questions if q.meta["qtype"] == qtype)
        env = env_for(demo_oxigraph)
        env.reset(s)
        for a in reference_actions(s.sexpr):
            r = env.step(act(a))
            assert r.error is None, (qtype, a, r.observation)
        r = env.step("<think>done</think><answer>" + " | ".join(a.label for a in s.answers) + "</answer>")
        assert r.done and f1(r.answer, s.answers) == 1.0, qtype


def test_entity_free_comparison_starts_from_a_class(demo_oxigraph, questions):
    s = next(q for q in questions if q.meta["qtype"] == "comparison" and not q.topic_entities)
    env = env_for(demo_oxigraph)
    prompt = env.reset(s)[0]["content"]
    assert "Candidate Types: [" in prompt
    (a,) = reference_actions(s.sexpr)
    assert a.startswith("Compare(gt, ") and a.endswith(s.sexpr.split()[1] + ")")  # the class as the expression
    r = env.step(act(a))
    assert r.error is None and all(x.label in r.observation for x in s.answers)


@pytest.mark.parametrize("text, code", [
    ("I think it is Nairobi.", KBQA_FORMAT_ERROR),
    (act("Frobnicate(m.1)"), KBQA_UNKNOWN_ACTION),
    (act("Find_relation(m.0fh4gqe)"), KBQA_BAD_ARGUMENTS),
    (act("Find_relation m.0fh4gqe"), KBQA_BAD_ARGUMENTS),
    (act("Count(expression7)"), KBQA_BAD_EXPRESSION),
    (act("Merge(expression1, expression1)"), KBQA_BAD_EXPRESSION),
    (act("Order(MEDIAN, expression1, a.b.c)"), KBQA_BAD_ARGUMENTS),
    (act("Compare(between, a.b.c, 3)"), KBQA_BAD_ARGUMENTS),
    (act("Time_constraint(a.b.from, last spring)"), KBQA_BAD_ARGUMENTS),
    (act('Find_relation(m.1> . ?s ?p ?o . <x, (R location.country.capital))'), KBQA_UNKNOWN_ENTITY),
    (act('Find_relation("} DELETE WHERE { ?s ?p ?o } #", r)'), KBQA_UNKNOWN_ENTITY),
    (act('Find_relation("} DELETE WHERE { ?s ?p ?o } #, r)'), KBQA_BAD_ARGUMENTS),  # the quote takes the comma
    (act("Find_relation(m.0fh4gqe, (R (R x)))"), KBQA_BAD_EXPRESSION),
])
def test_malformed_actions_are_typed_observations(demo_oxigraph, kenya, text, code):
    K = kenya.topic_entities[0].id
    env = env_for(demo_oxigraph)
    env.reset(kenya)
    env.step(act(f"Find_relation({K}, (R location.country.capital))"))
    before = dict(env.state.of(KBQAR1State).sexpr.exprs)
    r = env.step(text)
    assert r.error == code and not r.done and r.observation.startswith("\n\n<information>")
    assert env.state.of(KBQAR1State).sexpr.exprs == before


def test_dataset_subsets_disable_actions(demo_oxigraph, kenya):
    env = env_for(demo_oxigraph, actions="webqsp")
    prompt = env.reset(kenya)[0]["content"]
    assert "- Count(" not in prompt and "- Compare(" not in prompt and "- Time_constraint(" in prompt
    assert env.step(act("Count(expression1)")).error == KBQA_DISABLED_ACTION
    with pytest.raises(ValueError, match="webqsp"):
        KBQAR1ActionSpace(actions="wikidata")


def test_a_timeout_is_an_observation_and_changes_nothing(kenya):
    K = kenya.topic_entities[0].id
    class SlowKB(TripleStoreKB):
        def _select(self, sparql, timeout_s, limit):
            if "VALUES ?x" in sparql or "SELECT DISTINCT ?x" in sparql:
                raise KBTimeout("took too long")
            return super()._select(sparql, timeout_s, limit)

    kb = SlowKB.from_triples([(K, "location.country.capital", "m.nairobi")])
    env = env_for(kb)
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, (R location.country.capital))"))
    assert r.error == KBQA_TIMEOUT and env.state.of(KBQAR1State).sexpr.exprs == {}


def test_contract(demo_oxigraph, kenya):
    check_env(env_for(demo_oxigraph, max_turns=4), kenya, answer="Nairobi")


def test_metaqa_has_no_types(demo_oxigraph):
    kb = load_metaqa_kb(FIXTURES / "metaqa_mini" / "kb.txt")
    s = KBQASample(id="m", question="who directed Kismet", topic_entities=[Entity("Kismet", "Kismet")])
    env = env_for(kb)
    prompt = env.reset(s)[0]["content"]
    assert "Candidate Types" not in prompt and "Candidate Entities: [ Kismet ]" in prompt
    r = env.step(act("Find_relation(Kismet, (R directed_by))"))
    assert r.error is None and "William Dieterle" in r.observation
    r = env.step(act("Merge(expression1, film.film)"))
    assert r.error == KBQA_BAD_EXPRESSION  # no classes here: a type is not an expression


def test_actions_on_every_backend(any_kb, kenya):
    K = kenya.topic_entities[0].id
    env = env_for(any_kb)
    env.reset(kenya)
    r = env.step(act(f"Find_relation({K}, (R location.country.capital))"))
    assert r.error is None and "Nairobi" in r.observation
    r = env.step(act("Count(expression1)"))
    assert "Count: 1" in r.observation


def test_reference_actions_refuse_what_they_cannot_build():
    with pytest.raises(SExprError):
        reference_actions("(JOIN a.b.c (OR m.1 m.2))")


def test_single_turn_answers_with_the_last_expression_of_one_message(demo_oxigraph, questions):
    """The "w/o Multi-turn" ablation: every gold action in the first message, no
    observation, the last expression's results as the answer — F1 1 wherever the
    multi-turn replay answers (all but the counts of nothing)."""
    scores = Counter()
    for s in questions:
        env = env_for(demo_oxigraph, max_turns=1, single_turn=True)
        assert "ALL the actions" in env.reset(s)[-1]["content"]
        r = env.step(act(*reference_actions(s.sexpr)))
        assert r.done and not r.forced and r.observation == "" and len(r.actions) == len(reference_actions(s.sexpr))
        scores[s.meta["qtype"] if f1(r.answer, s.answers) == 1.0 else "missed"] += 1
    assert scores["missed"] <= scores["count"] // 4 + 1, scores
    assert {"1-hop", "cvt", "time", "superlative", "comparison"} <= set(scores), scores


def test_single_turn_with_a_failed_last_action_answers_the_expression_before_it(demo_oxigraph, kenya):
    env = env_for(demo_oxigraph, max_turns=1, single_turn=True)
    env.reset(kenya)
    kenya_id = kenya.topic_entities[0].id
    r = env.step(act(f"Find_relation({kenya_id}, (R location.country.capital))", "Count(expression9)"))
    assert r.done and r.error == KBQA_BAD_EXPRESSION
    assert f1(r.answer, kenya.answers) == 1.0
    env.reset(kenya)
    r = env.step("<think>no idea</think><action>Nonsense(</action>")
    assert r.done and r.forced and r.answer == []  # unreadable: the turn limit ends it unanswered


def test_multi_turn_spaces_never_answer_by_their_actions(demo_oxigraph, kenya):
    env = env_for(demo_oxigraph)
    env.reset(kenya)
    r = env.step(act(f"Find_relation({kenya.topic_entities[0].id}, (R location.country.capital))"))
    assert not r.done and "Nairobi" in r.observation
