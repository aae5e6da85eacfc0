"""The gold-path oracle answers every expressible demo question and MetaQA samples."""

from __future__ import annotations

import random

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.methods.kg_r1.oracle import PathOracle, expressible
from tests.conftest import shared


def test_oracle_on_every_expressible_demo_question(demo_oxigraph):
    env = make_env("kg_r1", demo_oxigraph, max_turns=50)
    qs = [q for q in load_dataset("demo", split="all") if expressible(q)]
    assert len(qs) > 600
    failures = [q.question for q in qs if f1(PathOracle().messages(env, q).answer, q.answers) < 1.0]
    assert not failures, failures[:5]


@pytest.mark.parametrize("hop", [1, 2, 3])
def test_oracle_on_metaqa(metaqa_kb, hop):
    env = make_env("kg_r1", metaqa_kb, max_turns=200)
    samples = load_dataset("metaqa", shared("metaqa"), hops=hop)
    random.Random(hop).shuffle(samples)
    scores = [f1(PathOracle().messages(env, s).answer, s.answers) for s in samples[:100]]
    # 1-hop: a few gold sets are strict subsets of the KG (merged same-titled films)
    assert sum(s == 1.0 for s in scores) / len(scores) >= (0.9 if hop == 1 else 0.99)


def test_oracle_refuses_inexpressible(demo_oxigraph):
    q = next(q for q in load_dataset("demo", split="all") if not expressible(q))
    with pytest.raises(ValueError):
        PathOracle().messages(make_env("kg_r1", demo_oxigraph), q)


def test_listing_oracle_picks_each_relation_from_a_listed_set(demo_oxigraph):
    env = make_env("kg_r1", demo_oxigraph, max_turns=50)
    qs = [q for q in load_dataset("demo", split="train") if expressible(q) and q.meta["qtype"] in ("1-hop", "2-hop")]
    for q in qs[:30]:
        traj = PathOracle(list_relations=True).messages(env, q)
        assert f1(traj.answer, q.answers) == 1.0, q.question
        listings = [t for t in traj.turns if "_relations(" in t.text]
        assert len(listings) == len(q.relation_path)
        for listing, hop in zip(listings, q.relation_path, strict=True):
            assert hop.lstrip("~") in listing.observation  # the followed relation was on the list
        assert "step" not in " ".join(t.text for t in traj.turns)  # no hop count announced up front


def test_probe_tail_first_shows_the_recovery_from_the_wrong_direction(metaqa_kb, demo_oxigraph):
    oracle = PathOracle(list_relations=True, probe_tail_first=True)
    env = make_env("kg_r1", metaqa_kb, max_turns=5)
    actor = next(s for s in load_dataset("metaqa", shared("metaqa"), hops=1)
                 if s.meta.get("qtype") == "actor_to_movie" and f1(PathOracle().messages(env, s).answer, s.answers) == 1)
    traj = oracle.messages(env, actor)
    calls = [t.text.split("<kg-query>")[-1].split("(")[0] for t in traj.turns[:3]]
    assert calls == ["get_tail_relations", "get_head_relations", "get_head_entities"]
    assert traj.turns[0].error == "KG_NO_RESULTS" and "must be an object" in traj.turns[1].text
    assert f1(traj.answer, actor.answers) == 1.0 and len(traj.turns) == 4
    # forward hops are unchanged; demo backward hops still reach the answer
    demo = make_env("kg_r1", demo_oxigraph, max_turns=50)
    qs = [q for q in load_dataset("demo", split="all") if expressible(q)]
    back = [q for q in qs if any(r.startswith("~") for r in q.relation_path)][:40]
    fwd = next(q for q in qs if not any(r.startswith("~") for r in q.relation_path))
    assert back and all(f1(oracle.messages(demo, q).answer, q.answers) == 1.0 for q in back)
    plain = PathOracle(list_relations=True).messages(demo, fwd)
    assert [t.text for t in oracle.messages(demo, fwd).turns] == [t.text for t in plain.turns]


def test_announced_hops_plan_first_and_number_every_hop(demo_oxigraph):
    env = make_env("kg_r1", demo_oxigraph, max_turns=50)
    qs = [q for q in load_dataset("demo", split="train") if expressible(q) and q.meta["qtype"] in ("1-hop", "2-hop")]
    two = next(q for q in qs if len(q.relation_path) == 2)
    one = next(q for q in qs if len(q.relation_path) == 1)
    traj = PathOracle(list_relations=True, announce_hops=True).messages(env, two)
    texts = [t.text for t in traj.turns]
    assert f1(traj.answer, two.answers) == 1.0
    assert texts[0].startswith(f"<think>The question takes 2 hops from {two.topic_entities[0].name}.")
    assert "(hop 1 of 2)" in texts[1] and texts[2].startswith("<think>Hop 2 of 2:") and "(hop 2 of 2)" in texts[3]
    assert texts[4].startswith("<think>The last query returned the answer")
    single = [t.text for t in PathOracle(list_relations=True, announce_hops=True).messages(env, one).turns]
    assert "takes 1 hop from" in single[0] and "(hop 1 of 1)" in single[1]
    # the same calls as without the announcement: only the thoughts change
    plain = PathOracle(list_relations=True).messages(env, two)
    assert [t.actions for t in plain.turns] == [t.actions for t in traj.turns]


def test_restated_question_comes_right_before_the_relation_choice(metaqa_kb):
    env = make_env("kg_r1", metaqa_kb, max_turns=5)
    s = next(s for s in load_dataset("metaqa", shared("metaqa"), hops=1) if s.meta.get("qtype") == "movie_to_language")
    traj = PathOracle(list_relations=True, restate_question=True).messages(env, s)
    pick = traj.turns[1].text
    assert pick.startswith(f"<think>The question is: {s.question.strip().rstrip('?')}. in_language is the relation")
    assert "The question is" not in traj.turns[0].text + traj.turns[2].text  # only where a relation is chosen
    assert f1(traj.answer, s.answers) == 1.0


def test_question_restated_where_the_policy_answers_or_takes_another_hop(demo_oxigraph):
    env = make_env("kg_r1", demo_oxigraph, max_turns=50)
    qs = [q for q in load_dataset("demo", split="train") if expressible(q) and q.meta["qtype"] in ("1-hop", "2-hop")]
    oracle = PathOracle(list_relations=True, restate_at_decision=True)
    for q in (next(q for q in qs if len(q.relation_path) == 2), next(q for q in qs if len(q.relation_path) == 1)):
        traj = oracle.messages(env, q)
        texts = [t.text for t in traj.turns]
        restated = f"<think>The question is: {q.question.strip().rstrip('?.!').strip()}. "
        # list, follow (, list, follow), answer: every turn after a followed hop restates it
        assert [i for i, t in enumerate(texts) if t.startswith(restated)] == list(range(2, len(texts), 2))
        assert texts[-1].startswith(restated + "The last query returned the answer: ")
        if len(q.relation_path) == 2:
            assert texts[2].startswith(restated + "I need the relations of ")
        assert f1(traj.answer, q.answers) == 1.0
        plain = PathOracle(list_relations=True).messages(env, q)
        assert [t.actions for t in plain.turns] == [t.actions for t in traj.turns]
        assert [t.text.replace(restated, "<think>") for t in traj.turns] == [t.text for t in plain.turns]


def test_enumerated_count_numbers_each_entity_then_copies_the_last_number(demo_oxigraph):
    env = make_env("kg_r1", demo_oxigraph, max_turns=50)
    counts = [q for q in load_dataset("demo", split="all") if expressible(q) and q.meta.get("count")]
    s = next(q for q in counts if int(q.answers[0].name) == 3)  # "How many official languages does Belgium have?"
    traj = PathOracle(list_relations=True, enumerate_count=True).messages(env, s)
    last = traj.turns[-1].text
    assert last.startswith("<think>Counting what the last hop returned: 1. ")
    assert ", 2. " in last and ", 3. " in last and ", 4. " not in last
    assert last.endswith(": 3 in all.</think>\n<answer>3</answer>") and f1(traj.answer, s.answers) == 1.0
    plain = PathOracle(list_relations=True).messages(env, s)
    assert [t.actions for t in plain.turns] == [t.actions for t in traj.turns]
    assert plain.turns[-1].text == "<think>The last query returned the answer: 3.</think>\n<answer>3</answer>"
    # every count episode still answers its gold number; non-count answers are untouched
    for q in counts[:40]:
        assert f1(PathOracle(list_relations=True, enumerate_count=True).messages(env, q).answer, q.answers) == 1.0
    other = next(q for q in load_dataset("demo", split="train") if expressible(q) and not q.meta.get("count"))
    assert "Counting" not in PathOracle(list_relations=True, enumerate_count=True).messages(env, other).turns[-1].text
