"""ISP/DTPO action space on the demo KG: node enumeration and ranking, SPARQL, errors."""

from __future__ import annotations

import pytest

from kgreason.envs import make_env
from kgreason.kb import OxigraphKB
from kgreason.methods.isp_dtpo import ISPActionSpace
from kgreason.methods.isp_dtpo.space import (
    ISP_EMPTY,
    ISP_NOT_EXECUTABLE,
    ISP_TIMEOUT,
    ISP_UNKNOWN_NODE,
    ISP_UNPARSABLE,
    ISPState,
    expand_prefixes,
)
from kgreason.rankers import DenseRanker
from kgreason.testing import check_env
from kgreason.types import Entity, KBQASample

NS = "http://rdf.freebase.com/ns/"


@pytest.fixture(scope="module")
def ranker():
    return DenseRanker()


@pytest.fixture
def sample(demo_kg):
    return KBQASample(id="q1", question="What is the capital of the United States?",
                      topic_entities=[Entity(demo_kg.id("place", "United States"), "United States")],
                      answers=[Entity(demo_kg.id("place", "Washington, D.C."), "Washington, D.C.")])


@pytest.fixture
def env(demo_oxigraph, ranker):
    return make_env("isp_dtpo", demo_oxigraph, ranker=ranker, max_turns=6)


def step(body: str) -> str:
    return f"<think>plan</think>{body}"


def test_check_env_passes(env, sample):
    check_env(env, sample)


def test_prompt_is_figure_8_with_topic_ids(env, sample):
    text = env.reset(sample)[0]["content"]
    assert text.startswith("You are an intelligent Q&A assistant capable of interacting with a knowledge graph")
    assert f"United States ({sample.topic_entities[0].id})" in text and "\\boxed{...}" in text


def test_node_lists_ranked_patterns_with_the_capital_first(env, sample):
    env.reset(sample)
    r = env.step(step(f"<node>{sample.topic_entities[0].id}</node>"))
    assert r.error is None and "<relation>" in r.observation
    lines = r.observation.split("<relation>")[1].split("</relation>")[0].splitlines()
    assert len(lines) == 10 and lines[0] == "<node> location.country.capital ?a"


def test_top_k_and_templates_are_configurable(demo_oxigraph, sample):
    env = make_env("isp_dtpo", demo_oxigraph, top_k=3, templates=(2,), max_turns=4)
    env.reset(sample)
    lines = env.step(step(f"<node>{sample.topic_entities[0].id}</node>")).observation.strip()
    lines = lines.removeprefix("<relation>").removesuffix("</relation>").splitlines()
    assert len(lines) == 3 and all(ln.startswith("?b ") and ln.endswith(" <node>") for ln in lines)


def test_two_hop_chains_go_through_cvts(demo_oxigraph, demo_kg):
    space = ISPActionSpace(templates=(4,))
    chains = space.enumerate_patterns([demo_kg.id("person", "Tom Hanks")], demo_oxigraph)
    assert any(p.relations == ("film.actor.film", "film.performance.film") for p in chains)
    assert all(p.template == 4 and len(p.relations) == 2 for p in chains)


def test_sparql_with_prefixes_binds_a_variable_for_the_next_node(env, sample):
    env.reset(sample)
    us = sample.topic_entities[0].id
    r = env.step(step(f"<sparql>SELECT ?x WHERE {{ ns:{us} ns:location.country.capital ?x . }}</sparql>"))
    assert r.error is None and "Washington, D.C. (" in r.observation
    r = env.step(step("<node>?x</node>"))
    assert r.error is None and "<node>" in r.observation
    r = env.step(step("<answer>\\boxed{Washington, D.C.}</answer>"))
    assert r.done and env.trajectory.answer[0].id == sample.answers[0].id


@pytest.mark.parametrize("body, code", [
    ("no command at all", ISP_UNPARSABLE),
    ("<node>m.nope</node>", ISP_UNKNOWN_NODE),
    ("<node>?never_bound</node>", ISP_UNKNOWN_NODE),
    ("<sparql>SELECT ?x WHERE { ns:m.nope ns:x.y.z ?x }</sparql>", ISP_EMPTY),
    ("<sparql>SELECT ?x WHERE { </sparql>", ISP_NOT_EXECUTABLE),
    ("<sparql>INSERT DATA { ns:a ns:b ns:c }</sparql>", ISP_NOT_EXECUTABLE),
    ("<sparql>DELETE WHERE { ?s ?p ?o }</sparql>", ISP_NOT_EXECUTABLE),
    ('<node>m.0" } ; DROP ALL ; #</node>', ISP_UNKNOWN_NODE),
    ("<node>m.0dlu3t4</node>" * 50, ISP_UNPARSABLE),  # more commands than a turn may hold
    ("<sparql>SELECT ?x WHERE { ?x ?p ?o #\rSERVICE <http://127.0.0.1:9/> { ?a ?b ?c } }</sparql>",
     ISP_NOT_EXECUTABLE),
])
def test_failure_modes_are_typed_observations(env, sample, demo_oxigraph, body, code):
    before = len(demo_oxigraph.select("SELECT ?s WHERE { ?s ?p ?o }", max_rows=10**6))
    env.reset(sample)
    r = env.step(step(body))
    assert not r.done and r.error == code
    assert len(demo_oxigraph.select("SELECT ?s WHERE { ?s ?p ?o }", max_rows=10**6)) == before


def test_a_slow_query_times_out(demo_oxigraph, sample):
    env = make_env("isp_dtpo", demo_oxigraph, query_timeout_s=0.2, max_turns=4)
    env.reset(sample)
    r = env.step(step("<sparql>SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f }</sparql>"))
    assert r.error == ISP_TIMEOUT


def test_stop_sequences_are_the_official_ones(env):
    assert {"</sparql>", "</SPARQL>", "</node>"} <= set(env.stop_sequences)


def test_expand_prefixes_leaves_strings_and_iris_alone():
    q = 'SELECT ?x WHERE { ?x ns:type.object.name "ns:m.1"@en . ?x ?p <http://x.org/ns:y> . }'
    out = expand_prefixes(q, {"ns": NS})
    assert f"<{NS}type.object.name>" in out and '"ns:m.1"@en' in out and "<http://x.org/ns:y>" in out
    declared = "PREFIX ns: <http://other/> SELECT ?x WHERE { ns:a ns:b ?x }"
    assert expand_prefixes(declared, {"ns": NS}) == "SELECT ?x WHERE { <http://other/a> <http://other/b> ?x }"


def test_forked_episodes_are_independent(env, sample):
    env.reset(sample)
    us = sample.topic_entities[0].id
    twin = env.fork()
    twin.step(step(f"<sparql>SELECT ?x WHERE {{ ns:{us} ns:location.country.capital ?x . }}</sparql>"))
    assert len(env.trajectory.turns) == 0 and "?x" not in env.state.of(ISPState).bound
    assert twin.kb is env.kb and len(twin.trajectory.turns) == 1


def test_works_on_a_kb_without_names(sample):
    kb = OxigraphKB.from_triples([("m.a", "r.s.t", "m.b")])
    env = make_env("isp_dtpo", kb, max_turns=3)
    env.reset(KBQASample(id="x", question="?", topic_entities=[Entity("m.a")], answers=[Entity("m.b")]))
    r = env.step(step("<node>m.a</node>"))
    assert r.observation.strip() == "<relation><node> r.s.t ?a</relation>"
