"""KnowCoder-A1's three tools on every backend: happy paths, typed errors, hostile input."""

from __future__ import annotations

import json

import pytest

from kgreason.envs import make_env
from kgreason.errors import KBTimeout
from kgreason.kb import OxigraphKB, load_metaqa_kb
from kgreason.methods.knowcoder_a1 import KnowCoderActionSpace
from kgreason.methods.knowcoder_a1.space import (
    KC_BAD_ARGUMENTS,
    KC_BAD_JSON,
    KC_EMPTY,
    KC_FORBIDDEN,
    KC_FORMAT_ERROR,
    KC_SPARQL_ERROR,
    KC_TIMEOUT,
    KC_UNKNOWN_TOOL,
)
from kgreason.rankers import DenseRanker
from kgreason.testing import check_env
from kgreason.types import Entity, KBQASample, NodePatterns, QueryResult
from tests.conftest import FIXTURES


def call(name: str, **arguments) -> str:
    return "<think>t</think><tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def tool_response(observation: str) -> dict:
    body = observation.strip()
    assert body.startswith("<tool_response>") and body.endswith("</tool_response>"), body
    return json.loads(body[len("<tool_response>"):-len("</tool_response>")])


@pytest.fixture
def kenya(demo_kg):
    return KBQASample(id="q", question="What is the capital of Kenya?",
                      topic_entities=[Entity(demo_kg.id("place", "Kenya"), "Kenya")],
                      answers=[Entity(demo_kg.id("place", "Nairobi"), "Nairobi")])


@pytest.fixture(scope="module")
def ranker():
    return DenseRanker()


def test_contract(demo_oxigraph, kenya):
    check_env(make_env("knowcoder_a1", demo_oxigraph, max_turns=4), kenya, answer='\\boxed{["Nairobi"]}')


def test_the_three_tools_answer_a_question(demo_oxigraph, kenya, ranker):
    env = make_env("knowcoder_a1", demo_oxigraph, ranker=ranker, max_turns=6)
    prompt = env.reset(kenya)[0]["content"]
    ref = f"ns:{kenya.topic_entities[0].id}"
    assert f"Kenya ({ref})" in prompt and "SearchGraphPatterns(sparql, semantic)" in prompt
    r = env.step(call("SearchGraphPatterns", sparql=f"SELECT DISTINCT ?x WHERE {{ VALUES ?x {{{ref}}} }}",
                      semantic="capital city"))
    lines = tool_response(r.observation)["results"].splitlines()
    assert r.error is None and lines[0] == '(?x, location.country.capital, "Nairobi")'  # ranked first
    assert len(lines) <= 10 and not any("common." in x or "type.object" in x for x in lines)
    assert isinstance(r.payloads[0], NodePatterns) and r.payloads[0].nodes == [kenya.topic_entities[0].id]
    r = env.step(call("SearchTypes", query="city"))
    types = json.loads(tool_response(r.observation)["results"])
    assert "location.citytown" in types[:3] and len(types) == 10
    r = env.step(call("ExecuteSPARQL", sparql=f"SELECT DISTINCT ?x WHERE {{ {ref} ns:location.country.capital ?x }}"))
    assert tool_response(r.observation) == {"results": '["Nairobi"]'} and isinstance(r.payloads[0], QueryResult)
    r = env.step('<think>done</think><answer>\\boxed{["Nairobi"]}</answer>')
    assert r.done and r.answer == kenya.answers  # the name resolves to the id it was shown with


def test_an_answer_cut_off_inside_the_box_keeps_the_names_written_in_full(demo_oxigraph, kenya):
    # a long list copied over and over runs into max_new_tokens: no "]}", no "</answer>"
    env = make_env("knowcoder_a1", demo_oxigraph)
    env.reset(kenya)
    r = env.step('<think>done</think><answer>\\boxed{["Nairobi", "Nair')
    assert r.done and r.answer == kenya.answers  # before: '\\boxed{["Nairobi' was the first answer
    env.reset(kenya)
    r = env.step('<answer>\\boxed{["Nairobi", "Nai\\qrobi", "Nair')  # not a JSON escape: kept as written
    assert r.done and r.answer[0] == kenya.answers[0] and r.answer_text.startswith('["Nairobi"')


def test_the_papers_function_call_syntax(demo_oxigraph, kenya):
    env = make_env("knowcoder_a1", demo_oxigraph, call_syntax="function")
    assert 'ExecuteSPARQL(sparql="SELECT' in env.reset(kenya)[0]["content"]
    ref = f"ns:{kenya.topic_entities[0].id}"
    r = env.step(f'<tool_call> ExecuteSPARQL(sparql="SELECT ?x WHERE {{ {ref} ns:location.country.capital ?x }}") '
                 "</tool_call>")
    assert r.error is None and "Nairobi" in r.observation
    r = env.step("<tool_call>SearchGraphPatterns(sparql='SELECT ?x WHERE { VALUES ?x {ns:nope} }', semantic=\"a\")"
                 "</tool_call>")
    assert r.error == KC_EMPTY  # single quotes read too; the sketch binds nothing


@pytest.mark.parametrize("text,code", [
    ("<think>I know it</think> Nairobi", KC_FORMAT_ERROR),
    ('<tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": </tool_call>', KC_BAD_JSON),
    ("<tool_call>[1, 2]</tool_call>", KC_BAD_JSON),
    ('<tool_call>{"name": "Search", "arguments": {}}</tool_call>', KC_UNKNOWN_TOOL),
    ('<tool_call>{"name": "ExecuteSPARQL", "arguments": {}}</tool_call>', KC_BAD_ARGUMENTS),
    ('<tool_call>{"name": "ExecuteSPARQL", "arguments": {"query": "x"}}</tool_call>', KC_BAD_ARGUMENTS),
    ('<tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": 7}}</tool_call>', KC_BAD_ARGUMENTS),
    ('<tool_call>{"name": "ExecuteSPARQL", "arguments": "[]"}</tool_call>', KC_BAD_ARGUMENTS),
    ("<tool_call>ExecuteSPARQL(sparql=SELECT)</tool_call>", KC_BAD_ARGUMENTS),
    ("<tool_call>not a call</tool_call>", KC_BAD_JSON),
    (call("ExecuteSPARQL", sparql="SELECT ?x WHERE { ?x ?p }"), KC_SPARQL_ERROR),
    (call("ExecuteSPARQL", sparql="INSERT DATA { <http://a> <http://b> <http://c> }"), KC_FORBIDDEN),
    (call("ExecuteSPARQL", sparql="SELECT * WHERE { SERVICE <http://127.0.0.1:9/x> { ?a ?b ?c } }"), KC_FORBIDDEN),
    (call("ExecuteSPARQL", sparql="SELECT ?x WHERE { ?x <http://nothing/here> 1 }"), KC_EMPTY),
    (call("SearchGraphPatterns", sparql="ASK { ?a ?b ?c }"), KC_BAD_ARGUMENTS),
    ("<tool_call>" + "[" * 100_000 + "</tool_call>", KC_BAD_JSON),
    ('<tool_call>{"name": "SearchTypes", "arguments": {"query": "\ud800"}}</tool_call>', None),
    ("<tool_call>" + "{" * 5000 + "</tool_call>", KC_BAD_JSON),
])
def test_malformed_calls_come_back_as_typed_errors(demo_oxigraph, kenya, text, code):
    env = make_env("knowcoder_a1", demo_oxigraph, max_turns=4)
    env.reset(kenya)
    r = env.step(text)
    assert r.error == code and not r.done
    body = tool_response(r.observation)
    assert ("error" in body) == (code not in (None, KC_EMPTY))
    assert len(r.observation) < 2000  # errors never echo a long input back
    json.dumps(body).encode("utf-8")  # and are valid UTF-8 (no lone surrogate)


def test_a_turn_without_a_call_ends_the_episode_as_in_the_official_rl_loop(demo_oxigraph, kenya):
    env = make_env("knowcoder_a1", demo_oxigraph, max_turns=4, end_without_call=True)
    env.reset(kenya)
    r = env.step('<tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": </tool_call>')
    assert r.error == KC_BAD_JSON and not r.done  # a malformed call still gets its error and another turn
    r = env.step("<think>I know it</think> Nairobi")
    assert r.done and r.error == KC_FORMAT_ERROR and r.observation == "" and not r.answered and not r.forced
    assert env.trajectory.answer_text is None and env.trajectory.answer == []
    assert [t.error for t in env.trajectory.turns] == [KC_BAD_JSON, KC_FORMAT_ERROR]
    answering = make_env("knowcoder_a1", demo_oxigraph, max_turns=4, end_without_call=True)
    answering.reset(kenya)  # an answer without a call is still an answer
    assert answering.step('<think>t</think><answer>\\boxed{["Nairobi"]}</answer>').answer[0].name == "Nairobi"


def test_a_timeout_is_an_observation(kenya):
    class SlowKB(OxigraphKB):
        def _select(self, sparql, timeout_s, limit):
            raise KBTimeout("took too long")

    env = make_env("knowcoder_a1", SlowKB.from_triples([("m.a", "r.r.r", "m.b")]))
    env.reset(kenya)
    r = env.step(call("ExecuteSPARQL", sparql="SELECT ?x WHERE { ?x ?p ?o }"))
    assert r.error == KC_TIMEOUT and "timed out" in r.observation and not r.done


def test_metaqa_has_no_types_and_writes_relations_with_their_own_prefix():
    kb = load_metaqa_kb(FIXTURES / "metaqa_mini" / "kb.txt")
    s = KBQASample(id="m", question="who directed Kismet", topic_entities=[Entity("Kismet", "Kismet")])
    env = make_env("knowcoder_a1", kb, max_turns=5)
    prompt = env.reset(s)[0]["content"]
    assert "Kismet (ns:Kismet)" in prompt and "relations as rel:<relation>" in prompt
    r = env.step(call("SearchTypes", query="director"))
    assert r.error is None and "no types" in r.observation
    r = env.step(call("SearchGraphPatterns", sparql="SELECT DISTINCT ?x WHERE { VALUES ?x {ns:Kismet} }"))
    assert "(?x, directed_by, " in r.observation
    r = env.step(call("ExecuteSPARQL", sparql="SELECT ?x WHERE { ns:Kismet rel:directed_by ?x }"))
    assert r.error is None and "William Dieterle" in r.observation
    assert KnowCoderActionSpace.entity_ref(kb, "The Devil Is a Woman").startswith("<http://")  # not a prefixed name


def test_tools_on_every_backend(any_kb, demo_kg, kenya):
    env = make_env("knowcoder_a1", any_kb, max_turns=5)
    env.reset(kenya)
    ref = f"ns:{kenya.topic_entities[0].id}"
    r = env.step(call("SearchGraphPatterns", sparql=f"SELECT DISTINCT ?x WHERE {{ VALUES ?x {{{ref}}} }}"))
    assert r.error is None and '(?x, location.country.capital, "Nairobi")' in tool_response(r.observation)["results"]
    r = env.step(call("ExecuteSPARQL", sparql=f"SELECT DISTINCT ?x WHERE {{ {ref} ns:location.country.capital ?x }}"))
    assert tool_response(r.observation) == {"results": '["Nairobi"]'}
    r = env.step(call("SearchTypes", query="university"))
    assert "education.university" in r.observation


def test_execute_cuts_long_results_with_a_note(demo_oxigraph, kenya):
    env = make_env("knowcoder_a1", demo_oxigraph, result_chars=60)
    env.reset(kenya)
    r = env.step(call("ExecuteSPARQL", sparql="SELECT DISTINCT ?x WHERE { ?x <http://rdf.freebase.com/ns/"
                                              "type.object.type> <http://rdf.freebase.com/ns/location.country> }"))
    text = tool_response(r.observation)["results"]
    head, _, note = text.partition(" … ")
    assert len(head) <= 60 and json.loads(head) and "more results (cut at 60 characters)" in note
