"""Property-based fuzzing of every parser and action space (hypothesis).

Messages are built from each space's own grammar (its tags, tool names, function calls,
real names and relations of the demo KG, real gold SPARQL) mixed with hostile fragments
(lone surrogates, huge numbers, deep nesting, repeated and unclosed tags, update queries,
SERVICE and bif: calls, comment tricks, megabyte names). For every episode: no exception
escapes ``step``, every step ends within a bound, and every observation stays within
``max_obs_tokens`` plus the frame. ``make test`` runs a fixed-seed budget; the ``slow``
variant runs 6,000 episodes (at least 10,000 messages) per action space.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgreason.data import load_dataset
from kgreason.data.demo import load_demo_kb
from kgreason.envs import make_env
from kgreason.envs.base import OBS_FRAME_TOKENS, ParseError
from kgreason.envs.text import approx_tokens, boxed, last_tag, split_answer, tagged
from kgreason.errors import KGReasonError
from kgreason.kb import check_read_only
from kgreason.kb.sexpr import parse_sexpr, sexpr_to_sparql
from kgreason.methods.isp_dtpo.space import expand_prefixes
from kgreason.methods.kg_r1.space import split_args

SPACES = ("kg_r1", "isp_dtpo", "knowcoder_a1", "kbqa_r1", "kg_reasoner")
BUDGET = 96  # observation budget in these tests: small, so that truncation is exercised
TIMEOUT_S = 2.0  # the KB's query timeout here
STEP_BOUND_S = 8 * TIMEOUT_S + 4  # at most 8 commands a turn (ISP), each bounded by the timeout

DEV = load_dataset("demo", split="dev")[:60]
# the spaces that run SPARQL have their own per-query budget
SPACE_KW = {"kg_r1": {}, "isp_dtpo": {"query_timeout_s": TIMEOUT_S}, "knowcoder_a1": {"query_timeout_s": TIMEOUT_S},
            "kbqa_r1": {"query_timeout_s": TIMEOUT_S}, "kg_reasoner": {}}
KB = load_demo_kb("oxigraph", timeout_s=TIMEOUT_S)
NAMES = sorted({e.name for s in DEV for e in s.topic_entities} | {a.name for s in DEV[:20] for a in s.answers})
IDS = sorted({e.id for s in DEV for e in s.topic_entities})
RELATIONS = sorted({r for s in DEV for r in (s.relation_path or [])})
SPARQL = sorted({s.sparql for s in DEV if s.sparql})

HOSTILE = [
    "\ud800", "\udfff", "\x00", "\r", "\n", "\t", "\u202e", "\ufeff", "🙂", "é", "\\", '"', "'", "`",
    "{", "}", "[", "]", "(", ")", "<", ">", ",", ";", "#", "#x\rSERVICE <http://127.0.0.1:9/x> { ?a ?b ?c }",
    "9" * 5000, "[" * 3000, "]" * 3000, "(" * 3000, ")" * 3000, "x" * 200_000,
    "INSERT DATA { <http://x/a> <http://x/b> <http://x/c> }", "DELETE WHERE { ?s ?p ?o }", "LOAD <http://127.0.0.1:9/>",
    "SELECT (bif:http_get('http://127.0.0.1:9/') AS ?x) WHERE {}", "SERVICE <http://127.0.0.1:9/x> { ?a ?b ?c }",
    "SELECT * WHERE { ?a ?b ?c . ?d ?e ?f }", "PREFIX ns: <http://rdf.freebase.com/ns/> ",
    '") } UNION { ?s ?p ?o } #', "\\boxed{", "-> ", "common.topic.alias", "type.object.name",
]
TAGS = ["<think>", "</think>", "<answer>", "</answer>", "<action>", "</action>", "<kg-query>", "</kg-query>", "<information>",
        "<node>", "</node>", "<sparql>", "</sparql>", "<tool_call>", "</tool_call>", "<tool_response>", "<search>",
        "</search>", "<triples>", "</triples>"]
KG_R1_FUNCS = ["get_tail_relations", "get_head_relations", "get_tail_entities", "get_head_entities",
               "get_relations", "nonexistent_fn"]
TOOLS = ["SearchTypes", "SearchGraphPatterns", "ExecuteSPARQL", "Unknown"]
SEXPR_ACTIONS = ["Find_relation", "Merge", "Order", "Compare", "Time_constraint", "Count", "find_relation", "Join"]

text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=30)
word = st.one_of(text, st.sampled_from(NAMES + IDS + RELATIONS), st.sampled_from(HOSTILE))
sparql = st.one_of(st.sampled_from(SPARQL), st.builds(lambda q, h: q.replace("?x", h, 1), st.sampled_from(SPARQL), word),
                   st.builds("".join, st.lists(word, max_size=6)))


def json_values() -> st.SearchStrategy:
    leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), word)
    return st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(word, c, max_size=3), max_leaves=8)


def kg_r1_call() -> st.SearchStrategy:
    entity = st.one_of(st.sampled_from(NAMES), st.sampled_from(NAMES), word)
    relation = st.one_of(st.sampled_from(RELATIONS), st.sampled_from(RELATIONS), word)
    q = st.sampled_from(['"', '"', "'", ""])
    well_formed = st.one_of(
        st.builds(lambda f, e, q: f"{f}({q}{e}{q})", st.sampled_from(KG_R1_FUNCS[:2]), entity, q),
        st.builds(lambda f, e, r, q: f"{f}({q}{e}{q}, {q}{r}{q})", st.sampled_from(KG_R1_FUNCS[2:4]), entity, relation, q))
    any_call = st.builds(lambda f, args, q: f"{f}({', '.join(q + a + q for a in args)})",
                         st.sampled_from(KG_R1_FUNCS), st.lists(st.one_of(entity, relation), max_size=3), q)
    return st.builds(lambda c: f"<kg-query>{c}</kg-query>", st.one_of(well_formed, well_formed, any_call))


def isp_command() -> st.SearchStrategy:
    node = st.one_of(st.sampled_from(IDS), st.sampled_from(IDS), st.sampled_from(["?x", "?y"]), word)
    return st.one_of(st.builds(lambda w: f"<node>{w}</node>", node),
                     st.builds(lambda q: f"<sparql>{q}</sparql>", sparql))


def knowcoder_call() -> st.SearchStrategy:
    def call(name: str, arguments: object) -> str:
        return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)

    well_formed = st.one_of(
        st.builds(lambda q: call("SearchTypes", {"query": q}), st.one_of(st.sampled_from(["film", "country", "person"]), word)),
        st.builds(lambda q, s: call("SearchGraphPatterns", {"sparql": q, "semantic": s}), sparql, word),
        st.builds(lambda q: call("ExecuteSPARQL", {"sparql": q}), sparql))
    anything = st.one_of(
        st.builds(call, st.sampled_from(TOOLS), json_values()),
        st.builds(lambda n, q, s: f'{n}(sparql="{q}", semantic="{s}")', st.sampled_from(TOOLS), sparql, word),
        st.builds("".join, st.lists(word, max_size=5)))
    return st.builds(lambda b: f"<tool_call>{b}</tool_call>", st.one_of(well_formed, well_formed, anything))


def kbqa_r1_action() -> st.SearchStrategy:
    arg = st.one_of(st.sampled_from(IDS), st.sampled_from(RELATIONS), st.sampled_from(RELATIONS).map(lambda r: f"(R {r})"),
                    st.sampled_from(["expression1", "expression2", "expression", "#3", "MAX", "gt", "1990", "NOW",
                                     "education.university", "(JOIN a.b.c d.e.f)", "2017^^xsd:gYear"]), word)
    call = st.builds(lambda f, args, sep: f"{f}({sep.join(args)})", st.sampled_from(SEXPR_ACTIONS),
                     st.lists(arg, max_size=5), st.sampled_from([", ", " || ", ","]))
    return st.builds(lambda calls: "<action>" + "\n".join(calls) + "</action>", st.lists(call, min_size=1, max_size=3))


def kg_reasoner_search() -> st.SearchStrategy:
    entity = st.one_of(st.sampled_from(NAMES), st.sampled_from(IDS), word)
    flag = st.sampled_from(["", ", backtrack", ", Backtrack=True", ", backtrack=false", ",", ", maybe"])
    return st.builds(lambda e, f: f"<search> {e}{f} </search>", entity, flag)


def answer() -> st.SearchStrategy:
    parts = st.lists(st.one_of(st.sampled_from(NAMES), word), max_size=5)
    return st.one_of(
        st.builds(lambda p: "<answer>" + "; ".join(p) + "</answer>", parts),
        st.builds(lambda p: "<answer>\\boxed{" + json.dumps(p, ensure_ascii=False) + "}</answer>", parts),
        st.builds(lambda v: "<answer>\\boxed{" + json.dumps(v, ensure_ascii=False) + "}</answer>", json_values()))


ACTIONS = {"kg_r1": kg_r1_call(), "isp_dtpo": isp_command(), "knowcoder_a1": knowcoder_call(),
           "kbqa_r1": kbqa_r1_action(), "kg_reasoner": kg_reasoner_search()}


def message(space: str) -> st.SearchStrategy:
    """Mostly one action (as a policy writes them), some tag soup, some answers."""
    think = st.one_of(st.just(""), st.builds(lambda w: f"<think>{w}</think>", word))
    action = st.builds(lambda t, a, junk: t + a + junk, think, ACTIONS[space], st.one_of(st.just(""), word))
    soup_piece = st.one_of(ACTIONS[space], st.sampled_from(TAGS), word,
                           st.builds(lambda t, n: t * n, st.sampled_from(TAGS), st.integers(1, 3000)))
    soup = st.builds("".join, st.lists(soup_piece, min_size=1, max_size=8))
    final = st.builds(lambda t, a: t + a, think, answer())
    return st.one_of(action, action, action, action, action, soup, soup, final)


STEPS = {"n": 0}  # messages stepped, for the long run's count


def run_episode(space: str, messages: list[str]) -> None:
    env = make_env(space, KB, max_turns=4, max_obs_tokens=BUDGET, **SPACE_KW[space])
    env.reset(DEV[hash(space) % len(DEV)])
    note = approx_tokens(env.action_space.last_turn_note())
    for msg in messages:
        t0 = time.perf_counter()
        r = env.step(msg)  # an exception here fails the test with the message that caused it
        STEPS["n"] += 1
        took = time.perf_counter() - t0
        assert took < STEP_BOUND_S, f"step took {took:.1f}s"
        assert approx_tokens(r.observation) <= BUDGET + OBS_FRAME_TOKENS + 16 + note, r.observation[:300]
        r.observation.encode("utf-8")
        if r.done:
            assert env.trajectory is not None and env.trajectory.answer is not None
            break


def episodes(space: str) -> st.SearchStrategy:
    return st.lists(message(space), min_size=1, max_size=4)


FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
LONG = settings(max_examples=6000, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("space", SPACES)
def test_fuzzed_episodes_never_raise_and_stay_bounded(space):
    FAST(given(episodes(space))(lambda msgs: run_episode(space, msgs)))()


@pytest.mark.slow
@pytest.mark.parametrize("space", SPACES)
def test_fuzzed_episodes_long_run(space):
    before = STEPS["n"]
    LONG(given(episodes(space))(lambda msgs: run_episode(space, msgs)))()
    assert STEPS["n"] - before >= 10_000  # 6,000 episodes; an episode ends at its answer


# ---------------------------------------------------------------- parsers on any text
any_text = st.one_of(text, st.builds("".join, st.lists(st.one_of(word, st.sampled_from(TAGS)), max_size=12)))
PARSERS = {
    "last_tag": lambda s: last_tag(s, "answer"),
    "tagged": lambda s: tagged(s, ("node", "sparql", "answer")),
    "boxed": boxed,
    "split_answer": split_answer,
    "split_args": split_args,
    "expand_prefixes": lambda s: expand_prefixes(s, {"ns": "http://rdf.freebase.com/ns/"}),
    "check_read_only": check_read_only,
    "parse_sexpr": parse_sexpr,
    "sexpr_to_sparql": sexpr_to_sparql,
    **{f"{sp}.parse": make_env(sp, KB).action_space.parse for sp in SPACES},
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_parsers_return_or_raise_typed_errors_on_any_text(name):
    fn = PARSERS[name]

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(any_text)
    def check(s):
        t0 = time.perf_counter()
        try:
            out = fn(s)
        except KGReasonError:
            return
        assert time.perf_counter() - t0 < 2.0
        if name.endswith(".parse"):
            assert isinstance(out, list | ParseError)

    check()
