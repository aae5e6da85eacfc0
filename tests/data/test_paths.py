"""Gold paths at the entity level, on a 6-node graph and on the demo KG."""

from __future__ import annotations

import pytest

from kgreason.data import load_dataset
from kgreason.data.paths import GoldHop, gold_walk
from kgreason.kb import OxigraphKB
from kgreason.types import Entity, KBQASample, Term


@pytest.fixture(scope="module")
def kb():
    # a -r-> b -s-> d (the answer); a -r-> c -s-> e (a dead end); f -t-> a
    return OxigraphKB.from_triples([("m.a", "x.y.r", "m.b"), ("m.a", "x.y.r", "m.c"), ("m.b", "x.y.s", "m.d"),
                                    ("m.c", "x.y.s", "m.e"), ("m.f", "x.y.t", "m.a"),
                                    ("m.a", "type.object.name", Term.literal("A", lang="en"))])


def q(path, answers, topic="m.a"):
    return KBQASample("q", "?", [Entity(topic, None)], [Entity(a) for a in answers], relation_path=path)


def test_the_walk_keeps_only_paths_that_reach_an_answer(kb):
    assert gold_walk(kb, q(["x.y.r", "x.y.s"], ["m.d"])) == [
        GoldHop(0, "x.y.r", "m.a", ("m.b",), ("m.b", "m.c")), GoldHop(1, "x.y.s", "m.b", ("m.d",), ("m.d",))]


def test_backward_steps_and_counts(kb):
    assert gold_walk(kb, q(["~x.y.r"], ["m.a"], topic="m.b")) == [GoldHop(0, "~x.y.r", "m.b", ("m.a",), ("m.a",))]
    # a count question: the answer is the size of the last frontier, which is all gold
    hops = gold_walk(kb, q(["x.y.r"], ["2"]))
    assert hops == [GoldHop(0, "x.y.r", "m.a", ("m.b", "m.c"), ("m.b", "m.c"))]


def test_no_gold_path(kb):
    assert gold_walk(kb, q(["x.y.r", "x.y.s"], ["m.z"])) == []
    assert gold_walk(kb, q(["x.y.t"], ["m.f"])) == []  # nothing goes out along t from a
    assert gold_walk(kb, q(["x.y.r"], ["m.b"]), max_frontier=1) == []  # two entities reached
    assert gold_walk(kb, q(None, ["m.b"])) == []
    # MetaQA's convention: a path never steps back onto the topic entity
    assert gold_walk(kb, q(["x.y.r", "~x.y.r"], ["m.a"])) == []
    assert gold_walk(kb, q(["x.y.r", "~x.y.r"], ["m.a"]), exclude_topic=False)[0].gold == ("m.b", "m.c")


def test_every_demo_path_question_but_counts_of_nothing_has_a_gold_walk(demo_oxigraph):
    qs = [s for s in load_dataset("demo", split="dev") if s.relation_path]
    missing = [s for s in qs if not gold_walk(demo_oxigraph, s)]
    assert all(s.answers[0].label == "0" for s in missing), [s.question for s in missing]
    for s in qs[:30]:
        hops = gold_walk(demo_oxigraph, s)
        last = [h for h in hops if h.hop == len(s.relation_path) - 1]
        reached = {g for h in last for g in h.gold}
        assert reached <= {a.id for a in s.answers} or s.meta["qtype"] == "count"
