"""ISP/DTPO rewards on a hand-built 8-fact KB (every figure below is worked by hand).

S directed films A (2005), B (1998), C (1993); S was born in Cincinnati.
Hops: S–A 1, Cincinnati–A 2 (Cincinnati–S–A).
"""

from __future__ import annotations

import pytest

from kgreason.errors import RewardError
from kgreason.kb import CachedKB, OxigraphKB
from kgreason.methods.isp_dtpo.rewards import ProgressJudge, isp_format, kb_distance, uncount
from kgreason.rewards import Component, CompositeReward
from kgreason.rollout.tree import Tree, TreeNode
from kgreason.training import node_rewards
from kgreason.types import Entity, KBQASample, NodePatterns, QueryResult, Term, Trajectory

NS = "http://rdf.freebase.com/ns/"
XSD_YEAR = "http://www.w3.org/2001/XMLSchema#gYear"
DIRECTED = f"<{NS}film.film.directed_by>"


def q_films(extra: str = "") -> str:
    return f"SELECT DISTINCT ?x WHERE {{ ?x {DIRECTED} <{NS}m.s> . {extra}}}"


LATEST = (f"SELECT ?x WHERE {{ ?x {DIRECTED} <{NS}m.s> . ?x <{NS}film.film.initial_release_date> ?d . }} "
          "ORDER BY DESC(?d) LIMIT 1")
COUNT = f"SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE {{ ?x {DIRECTED} <{NS}m.s> . }}"
BIRTH = f"SELECT ?x WHERE {{ <{NS}m.s> <{NS}people.person.place_of_birth> ?x . }}"


@pytest.fixture(scope="module")
def kb():
    facts = [("m.a", "film.film.directed_by", "m.s"), ("m.b", "film.film.directed_by", "m.s"),
             ("m.c", "film.film.directed_by", "m.s"), ("m.s", "people.person.place_of_birth", "m.cin")]
    facts += [(f, "film.film.initial_release_date", Term("literal", y, XSD_YEAR))
              for f, y in (("m.a", "2005"), ("m.b", "1998"), ("m.c", "1993"))]
    facts += [(e, "type.object.name", Term("literal", n, lang="en"))
              for e, n in (("m.a", "A"), ("m.b", "B"), ("m.c", "C"), ("m.s", "S"), ("m.cin", "Cincinnati"))]
    facts += [(f, "type.object.type", "film.film") for f in ("m.a", "m.b", "m.c")]
    return CachedKB(OxigraphKB.from_triples(facts))


def sample(answers, sparql):
    return KBQASample(id="q", question="?", topic_entities=[Entity("m.s", "S")],
                      answers=[Entity(a) for a in answers], sparql=sparql)


def sparql_step(kb, query):
    rows = kb.select(query)
    return {"kind": "sparql", "error": None, "query": query, "values": [t.value for r in rows for t in r.values()]}


NODE_S = {"kind": "node", "error": None, "values": ["m.s"]}


def test_kb_distance_is_undirected_and_skips_type_edges(kb):
    assert kb_distance(kb, ["m.s"], ["m.a"]) == 1
    assert kb_distance(kb, ["m.cin"], ["m.a"]) == 2
    # A and B share only a type node and a director: 2 hops through S, not through film.film
    assert kb_distance(kb, ["m.a"], ["m.b"]) == 2
    assert kb_distance(kb, ["m.cin"], ["m.a"], max_hops=1) is None
    assert kb_distance(kb, ["m.a"], ["2005"]) == 1  # literal targets are reached through their holder


def test_progress_superlative_candidate_set_then_constraint(kb):
    judge = ProgressJudge(kb, sample(["m.a"], LATEST))
    steps = [NODE_S,                          # topic: known, d = 1 → 0
             sparql_step(kb, q_films()),      # candidate set {A,B,C} ∋ A: d = 1, not closer → 0
             sparql_step(kb, LATEST),         # ORDER BY … LIMIT 1 → {A}: d = 0 → +1
             sparql_step(kb, LATEST),         # repeated → −1
             sparql_step(kb, BIRTH),          # {Cincinnati}: d = 2, farther → 0
             {"kind": "sparql", "error": "ISP_EMPTY"},
             {"kind": "node", "error": None, "values": ["m.zzz"]},  # never seen → −1
             {"kind": "invalid", "error": "ISP_UNPARSABLE"},
             {"kind": "answer", "error": None}]
    assert judge.progress(steps) == [0, 0, 1, -1, 0, -1, -1, -1, 0]


def test_progress_count_is_scored_on_the_uncounted_set(kb):
    judge = ProgressJudge(kb, sample(["3"], COUNT))
    assert judge.targets == {"m.a", "m.b", "m.c"}
    count_birth = "SELECT (COUNT(?x) AS ?n) WHERE { " + BIRTH.split("{", 1)[1]
    assert judge.progress([NODE_S, sparql_step(kb, COUNT)]) == [0, 1]  # d 1 → 0
    assert judge.progress([NODE_S, sparql_step(kb, count_birth)]) == [0, 0]  # {Cincinnati}: d 2


def test_progress_code_mode_uses_f1_then_distance_scores(kb):
    judge = ProgressJudge(kb, sample(["m.a"], LATEST), mode="code")
    # scores: S → (3−1)/3 = 0.667; {A,B,C} → F1 0.5 → 0.75; {A} → 1
    assert judge.score(["m.s"]) == pytest.approx(2 / 3)
    assert judge.score(["m.a", "m.b", "m.c"]) == pytest.approx(0.75)
    assert judge.progress([NODE_S, sparql_step(kb, q_films()), sparql_step(kb, LATEST)]) == [0, 1, 1]


def test_uncount_and_format():
    assert uncount("SELECT ?x WHERE { ?x ?p ?o }") is None
    assert uncount(COUNT).startswith("SELECT DISTINCT ?x WHERE")
    assert isp_format(f"<think>t</think><sparql>{LATEST}</sparql>") == 1.0
    assert isp_format("<think>t</think><think>u</think><answer>\\boxed{A}</answer>") == -1.0


DTPO = CompositeReward([Component("isp_format", 0.1, alias="format"),
                        Component("dtpo_progress", 0.6, alias="progress"),
                        Component("dtpo_outcome", 0.3, alias="outcome", gate=["format", "progress"],
                                  gate_threshold=-0.5)])


def test_node_rewards_on_a_four_node_tree_take_the_max_over_trajectories(kb):
    """root → n1 <node> S; n1 → n2 (ORDER BY … LIMIT 1 → {A}) and n3 (empty query);
    n2 → n4 answers A (F1 1). Weights 0.1 / 0.6 / 0.3:
    n1 = 0.1 + 0 + 0.3·1 = 0.4; n2 = 0.1 + 0.6 + 0.3 = 1.0; n3 = 0.1 − 0.6 + 0 = −0.5; n4 = 0.1 + 0 + 0.3 = 0.4.
    """
    s = sample(["m.a"], LATEST)
    rows = kb.select(LATEST)

    def node(i, parent, kind, text, payloads=(), error=None, answer=()):
        return TreeNode(id=i, parent=parent, depth=0 if parent is None else 1, text=text, kind=kind,
                        error=error, payloads=list(payloads), answer=list(answer))

    nodes = [node(0, None, "root", ""),
             node(1, 0, "node", "<think>t</think><node>m.s</node>", [NodePatterns(["m.s"], [], "node|")]),
             node(2, 1, "sparql", f"<think>t</think><sparql>{LATEST}</sparql>",
                  [QueryResult(LATEST, [t.value for r in rows for t in r.values()])]),
             node(3, 1, "sparql", f"<think>t</think><sparql>{q_films('?x ?p 1 .')}</sparql>", error="ISP_EMPTY"),
             node(4, 2, "answer", "<think>t</think><answer>\\boxed{A}</answer>", answer=[Entity("m.a", "A")])]
    nodes[0].children, nodes[1].children, nodes[2].children = [1], [2, 3], [4]
    tree = Tree(sample=s, prompt=[], nodes=nodes, kb=kb)
    r = node_rewards(tree, DTPO)
    assert {i: round(r[i].total, 6) for i in r} == {1: 0.4, 2: 1.0, 3: -0.5, 4: 0.4}
    # a wrong answer under n2 does not lower n1/n2: the max trajectory counts
    nodes.append(node(5, 2, "answer", "<think>t</think><answer>\\boxed{B}</answer>", answer=[Entity("m.b", "B")]))
    nodes[2].children.append(5)
    tree.memo.clear()  # the tree grew: forget the scores of the smaller one
    r = node_rewards(tree, DTPO)
    assert round(r[2].total, 6) == 1.0 and round(r[5].total, 6) == 0.1


def test_node_rewards_refuse_a_linear_trajectory():
    from kgreason.errors import RewardError
    from kgreason.rewards import get

    with pytest.raises(RewardError, match="rollout=tree"):
        get("dtpo_progress")(Trajectory(sample_id="q", prompt=[]), sample(["m.a"], LATEST))


def test_trajectory_level_reward_averages_the_node_rewards_of_one_path(kb):
    """RQ1's baseline on the path root → n1 → n2 → n4 of the tree above, as one linear
    trajectory: its node rewards 0.4, 1.0, 0.4 (its own answer has F1 1) average to 0.6.
    The path n1 → n3 (empty query) → a wrong answer B: 0.1 + 0 + 0 = 0.1, 0.1 − 0.6 = −0.5,
    0.1 + 0 + 0 = 0.1, mean −0.1."""
    from kgreason.methods.isp_dtpo import ISPActionSpace
    from kgreason.rewards import get
    from kgreason.types import Action, Turn

    s = sample(["m.a"], LATEST)
    space = ISPActionSpace()
    node_turn = Turn("<think>t</think><node>m.s</node>", actions=[Action("node", ["m.s"])], entities=["m.s"])

    def answered(turns, name, id_):
        return Trajectory(sample_id="q", prompt=[], turns=turns, answer_text=name, answer=[Entity(id_, name)])

    good = answered([node_turn, Turn(f"<think>t</think><sparql>{LATEST}</sparql>", actions=[Action("sparql", [LATEST])],
                                     entities=["m.a"]),
                     Turn("<think>t</think><answer>\\boxed{A}</answer>", is_answer=True)], "A", "m.a")
    empty = q_films("?x ?p 1 .")
    bad = answered([node_turn, Turn(f"<think>t</think><sparql>{empty}</sparql>", actions=[Action("sparql", [empty])],
                                    error="ISP_EMPTY"),
                    Turn("<think>t</think><answer>\\boxed{B}</answer>", is_answer=True)], "B", "m.b")
    reward = get("dtpo_trajectory")
    assert reward(good, s, space=space, kb=kb).total == pytest.approx(0.6)
    assert reward(bad, s, space=space, kb=kb).total == pytest.approx(-0.1)
    with pytest.raises(RewardError, match="rollout=linear passes"):
        reward(good, s)
