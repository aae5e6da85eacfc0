"""KG-R1 action space: parsing, every error code, formats, truncation, forced answer."""

from __future__ import annotations

import pytest

from kgreason.envs import ACTION_SPACES, KGEnv, make_env
from kgreason.errors import EnvError, RegistryError
from kgreason.kb import GENERIC, OxigraphKB, load_rog_subgraphs
from kgreason.methods.kg_r1 import KGR1ActionSpace
from kgreason.methods.kg_r1.space import (
    KG_ENTITY_NOT_FOUND,
    KG_FORMAT_ERROR,
    KG_NO_RESULTS,
    KG_RELATION_NOT_FOUND,
    KG_SAMPLE_NOT_FOUND,
    KG_SERVER_ERROR,
)
from kgreason.testing import EnvContractError, check_env
from kgreason.types import Entity, KBQASample
from tests.conftest import FIXTURES


@pytest.fixture
def env(demo_oxigraph):
    return make_env("kg_r1", demo_oxigraph, max_turns=6)


@pytest.fixture
def sample(demo_kg):
    us = demo_kg.id("place", "United States")
    return KBQASample(id="q1", question="What is the capital of the United States?",
                      topic_entities=[Entity(us, "United States")],
                      answers=[Entity(demo_kg.id("place", "Washington, D.C."), "Washington, D.C.")])


def q(call: str) -> str:
    return f"<think>let me look</think>\n<kg-query> {call} </kg-query>"


def test_check_env_passes(env, sample):
    check_env(env, sample)


def test_check_env_catches_a_broken_env(env, sample):
    class Crashy(KGR1ActionSpace):
        def execute(self, action, state):
            raise RuntimeError("boom")

    with pytest.raises(EnvContractError, match="raised RuntimeError"):
        check_env(KGEnv(Crashy(), env.kb, max_turns=5), sample)


def test_prompt_has_instructions_turns_and_initial_entities(env, sample):
    text = env.reset(sample)[0]["content"]
    assert "up to 5 times" in text and "get_head_entities(entity, relation)" in text
    assert text.endswith('(Initial entities: "United States")')
    assert env.stop_sequences == ("</kg-query>", "</answer>")


def test_h_searches_then_an_answer_turn_as_the_official_loop(env, sample):
    """H = 5: the prompt promises 5 queries, all 5 run, and the sixth turn may only answer."""
    assert "up to 5 times" in env.reset(sample)[0]["content"]
    for i in range(5):
        r = env.step(q('get_tail_relations("United States")'))
        assert not r.done and "location.country.capital" in r.observation, i
    assert r.last_turn_next
    r = env.step(q('get_tail_relations("United States")'))
    assert r.done and r.forced and r.error == "NO_ANSWER"


def test_relations_then_entities_then_answer(env, sample, demo_kg):
    env.reset(sample)
    r = env.step(q('get_tail_relations("United States")'))
    assert r.error is None and "location.country.capital" in r.observation
    assert r.observation.startswith("\n\n<information>") and r.observation.endswith("</information>\n\n")
    r = env.step(q('get_tail_entities("United States", "location.country.capital")'))
    assert 'Tail entities for relation "location.country.capital" with head "United States": Washington, D.C.' in r.observation
    r = env.step("<think>found</think><answer>Washington, D.C.</answer>")
    assert r.done and [a.id for a in r.answer] == [demo_kg.id("place", "Washington, D.C.")]
    traj = env.trajectory
    assert len(traj.turns) == 3 and traj.turns[-1].is_answer and traj.turns[1].kb_calls >= 1


@pytest.mark.parametrize("call", [
    'get_relations_out("United States")',           # official-code alias
    "get_tail_relations('United States')",          # single quotes
    "get_tail_relations(United States)",            # no quotes
    'get_tail_relations( "united states" )',        # case-insensitive name
    'kg.get_tail_relations("United States");',      # module prefix and semicolon
])
def test_lenient_parsing(env, sample, call):
    env.reset(sample)
    r = env.step(q(call))
    assert r.error is None, r.observation
    assert "location.country.capital" in r.observation


def test_entity_by_id_and_relation_first_argument_order(env, sample, demo_kg):
    env.reset(sample)
    dc = demo_kg.id("place", "Washington, D.C.")
    r = env.step(q(f'get_head_entities("{dc}", "location.country.capital")'))
    assert "United States" in r.observation
    r = env.step(q('get_head_entities("location.country.capital", "Washington, D.C.")'))  # paper's example order
    assert r.error is None and "United States" in r.observation


@pytest.mark.parametrize("call,code,message", [
    ('get_entity_info("United States")', KG_SERVER_ERROR, 'Action "get_entity_info" not available'),
    ("get_tail_entities(\"United States\")", KG_FORMAT_ERROR, "Missing required fields for get_tail_entities: relation_name"),
    ('get_tail_relations("United States", "x")', KG_FORMAT_ERROR, "get_tail_relations accepts only one entity argument"),
    ('get_tail_relations("Untied Stats")', KG_ENTITY_NOT_FOUND, 'Entity "Untied Stats" not found in KG'),
    ('get_tail_entities("United States", "location.capital")', KG_RELATION_NOT_FOUND, 'Relation "location.capital" not found in KG'),
    ('get_tail_entities("United States", "location.location.contains")', None, None),
    # the relation exists at this entity, but only pointing in: no results, not "not found"
    ('get_tail_entities("United States", "location.adjoining_relationship.adjoins")', KG_NO_RESULTS,
     'No tail entities found for relation "location.adjoining_relationship.adjoins" with head "United States"'),
    ('get_head_entities("United States", "location.country.capital")', KG_NO_RESULTS,
     'No head entities found for relation "location.country.capital" with tail "United States"'),
    ("get_tail_relations", KG_FORMAT_ERROR, "Invalid query format"),
])
def test_error_taxonomy(env, sample, call, code, message):
    env.reset(sample)
    r = env.step(q(call))
    assert r.error == code and not r.done
    if code:
        assert "<error>" in r.observation
    if message:
        assert message in r.observation


def test_no_results_for_relations(env, sample, demo_kg):
    env.reset(sample)
    r = env.step(q(f'get_head_relations("{demo_kg.id("person", "Albert Einstein")}")'))
    assert r.error is None  # Einstein is the object of some triples
    r = env.step(q('get_tail_relations("1879-03-14")'))
    assert r.error in (KG_ENTITY_NOT_FOUND, KG_NO_RESULTS)


def test_action_outside_tags_is_invalid(env, sample):
    env.reset(sample)
    r = env.step("I think the answer is Paris.")
    assert r.error == KG_FORMAT_ERROR and "Your previous action is invalid" in r.observation


def test_hostile_entity_strings(env, sample):
    env.reset(sample)
    for bad in ['m.x> . ?s ?p ?o . <x', 'x" } UNION { ?e ?p ?n } #']:
        r = env.step(q(f"get_tail_relations('{bad}')"))
        assert r.error == KG_ENTITY_NOT_FOUND and not r.done


def test_hierarchical_format(demo_oxigraph, sample):
    env = make_env("kg_r1", demo_oxigraph, relation_format="hierarchical")
    env.reset(sample)
    r = env.step(q('get_tail_relations("United States")'))
    assert "location country: " in r.observation and "capital" in r.observation
    assert "location.country.capital" not in r.observation


def test_truncation_marker(demo_oxigraph, sample):
    env = make_env("kg_r1", demo_oxigraph, max_obs_tokens=20)
    env.reset(sample)
    r = env.step(q('get_tail_entities("United States", "location.location.contains")'))
    assert "more</information>" in r.observation and "… " in r.observation
    assert len(r.payloads[0].ids) > 10  # nothing lost in the structured payload


def test_forced_final_answer_and_last_turn_note(demo_oxigraph, sample):
    env = make_env("kg_r1", demo_oxigraph, max_turns=2)
    env.reset(sample)
    r = env.step(q('get_tail_relations("United States")'))
    assert r.last_turn_next and "last turn" in r.observation
    r = env.step(q('get_tail_relations("United States")'))  # queries are disabled on the last turn
    assert r.done and r.forced and r.error == "NO_ANSWER" and r.observation == ""
    with pytest.raises(EnvError):
        env.step("more")


def test_contract_errors(demo_oxigraph, sample):
    env = make_env("kg_r1", demo_oxigraph)
    with pytest.raises(EnvError):
        env.step("x")
    with pytest.raises(EnvError):
        env.reset({"question": "not a sample"})
    with pytest.raises(RegistryError, match="unknown method .nope.; valid: ") as info:
        make_env("nope", demo_oxigraph)
    # the message lists every registered action space, sorted, so a new method needs no edit here
    assert str(info.value).endswith("valid: " + ", ".join(sorted(ACTION_SPACES.names())))
    assert "kg_r1" in ACTION_SPACES.names()
    with pytest.raises(TypeError, match="unexpected keyword argument .max_turn."):
        make_env("kg_r1", demo_oxigraph, max_turn=3)


def test_answer_resolution_prefers_seen_entities(env, sample, demo_kg):
    env.reset(sample)
    env.step(q('get_tail_entities("United States", "location.country.capital")'))
    r = env.step('<answer>["Washington, D.C.", "1999"]</answer>')
    assert [a.id for a in r.answer] == [demo_kg.id("place", "Washington, D.C."), "1999"]


def test_boxed_answer(env, sample, demo_kg):
    env.reset(sample)
    r = env.step(r"<answer>\boxed{Washington, D.C.}</answer>")
    assert [a.id for a in r.answer] == [demo_kg.id("place", "Washington, D.C.")]


def test_per_question_subgraph_and_missing_sample():
    kb = load_rog_subgraphs(FIXTURES / "rog_subgraphs.jsonl", schema=GENERIC)
    env = make_env("kg_r1", kb)
    s = KBQASample(id="WebQTest-1", question="capital of jamaica?", topic_entities=[Entity("Jamaica", "Jamaica")],
                   subgraph="WebQTest-1")
    env.reset(s)
    r = env.step(q('get_tail_relations("Jamaica")'))
    assert r.observation.count("location.") == 1  # only this question's subgraph
    env.reset(KBQASample(id="x", question="?", subgraph="missing"))
    r = env.step(q('get_tail_relations("Jamaica")'))
    assert r.error == KG_SAMPLE_NOT_FOUND and 'Sample "missing" not found' in r.observation


def test_kb_timeout_becomes_server_error_observation(sample):
    class SlowKB(OxigraphKB):
        def relations_out(self, e):
            from kgreason.kb import KBTimeout
            raise KBTimeout("took too long")

    env = make_env("kg_r1", SlowKB.from_triples([("m.a", "r.r.r", "m.b")]))
    env.reset(KBQASample(id="t", question="?", topic_entities=[Entity("m.a", "m.a")]))
    r = env.step(q('get_tail_relations("m.a")'))
    assert r.error == KG_SERVER_ERROR and "timed out" in r.observation and not r.done


@pytest.mark.parametrize("call", [
    'get_tail_entities("Washington, D.C.", "location.location.containedby")',
    'get_tail_relations( "m.0abc" ) ;',
    'kg.get_relations_out("x")',
    'get_tail_entities("x", "")',
    "get_tail_entities('x', \"y\")",
    'get_tail_entities("x", "y", "z")',
    "get_tail_relations()",
    'get_tail_relations(United States)',
])
def test_one_pass_parse_agrees_with_the_general_parser(call):
    from kgreason.methods.kg_r1.space import _CALL, ALIASES, split_args

    m = _CALL.match(call)
    name = m.group(1).split(".")[-1]
    (action,) = KGR1ActionSpace().parse(f"<kg-query>{call}</kg-query>")
    assert action.name == ALIASES.get(name, name)
    assert action.args == split_args(m.group(2))


@pytest.mark.parametrize("backend", ["oxigraph", "triplestore"])
def test_self_named_results_become_known_names_lazily(tmp_path, backend):
    from kgreason.kb import load_metaqa_kb

    (tmp_path / "kb.txt").write_text("Inception|directed_by|Christopher Nolan\n"
                                     "Inception|directed_by|Emma Thomas\n"
                                     "Christopher Nolan|directed_by|Nobody\n"
                                     "Memento|directed_by|Christopher Nolan\n")
    kb = load_metaqa_kb(tmp_path / "kb.txt", backend=backend)
    env = make_env("kg_r1", kb, max_turns=6)
    env.reset(KBQASample(id="m", question="Who directed Inception?", topic_entities=[Entity("Inception", "Inception")]))
    env.step(q('get_tail_entities("Inception", "directed_by")'))
    env.step(q('get_head_entities("Christopher Nolan", "directed_by")'))
    twin = env.fork()
    # names shown in observations resolve, also lower-cased, without a KB look-up
    r = env.step(q('get_tail_relations("emma thomas")'))
    assert r.error == KG_NO_RESULTS and r.kb_calls == 1
    assert env.state.known["christopher nolan"] == ["Christopher Nolan"]
    assert list(env.state.known) == ["Inception", "inception", "Christopher Nolan", "christopher nolan",
                                     "Emma Thomas", "emma thomas", "Memento", "memento"]
    assert "memento" in twin.state.known  # a fork carries what was shown before it
    assert env.step("<answer>emma thomas</answer>").answer == [Entity("Emma Thomas", "emma thomas")]
