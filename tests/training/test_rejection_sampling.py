"""Outcome-based rejection sampling (KnowCoder-A1 §4.2.1) with the three kinds of teacher."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from kgreason.data import load_dataset
from kgreason.envs import EnvFactory, make_env
from kgreason.errors import ConfigError
from kgreason.eval.metrics import matches
from kgreason.kb import load_metaqa_kb
from kgreason.kb.schema import expand_prefixes
from kgreason.methods.knowcoder_a1 import KnowCoderActionSpace
from kgreason.methods.knowcoder_a1.teacher import (
    ScriptedKnowCoderTeacher,
    asked_for,
    compact_sparql,
    path_sparql,
)
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine
from kgreason.training import RejectionSampledColdStart, grounded
from kgreason.training.teachers import EngineTeacher, OpenAITeacher, TeacherError, hop_at
from kgreason.types import Entity, KBQASample, Trajectory, Turn
from tests.conftest import FIXTURES, shared


@pytest.fixture(scope="module")
def by_type():
    """Eight training questions of every demo question type."""
    groups: dict[str, list] = {}
    for q in load_dataset("demo", split="train"):
        groups.setdefault(q.meta["qtype"], []).append(q)
    return {k: v[:8] for k, v in groups.items()}


@pytest.fixture(scope="module")
def metaqa_2hop():
    """The MetaQA fixture's KB and its first 2-hop dev question."""
    fixtures = FIXTURES / "metaqa_mini"
    return load_metaqa_kb(fixtures / "kb.txt"), load_dataset("metaqa", path=fixtures, split="dev", hops=2)[0]


def hit(t, q) -> bool:
    return any(matches(a, g) for a in t.answer for g in q.answers)


def test_scripted_teacher_answers_every_question_type_and_explores(demo_oxigraph, by_type):
    teacher, rng = ScriptedKnowCoderTeacher(p_types=0.5, p_detour=0.5, p_syntax_error=0.5), random.Random(0)
    tools, errors = Counter(), Counter()
    for qtype, qs in by_type.items():
        ok = 0
        for q in qs:
            t = teacher.episode(make_env("knowcoder_a1", demo_oxigraph, max_turns=6), q, rng)
            ok += hit(t, q) and grounded(t)
            tools.update(a.name for turn in t.turns for a in turn.actions)
            errors.update(turn.error for turn in t.turns if turn.error)
        assert ok >= len(qs) // 2, qtype  # the gold query, played out, answers most of every type
    assert tools["SearchTypes"] and tools["SearchGraphPatterns"] >= sum(len(v) for v in by_type.values())
    assert errors["KC_SPARQL_ERROR"] > 0  # it makes mistakes ...


def test_recovered_episodes_pass_the_filter(demo_oxigraph, by_type):
    teacher = ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=1.0)
    q = by_type["1-hop"][0]
    t = teacher.episode(make_env("knowcoder_a1", demo_oxigraph, max_turns=6), q, random.Random(0))
    assert [turn.error for turn in t.turns] == [None, "KC_SPARQL_ERROR", None, None]  # ... and recovers
    assert hit(t, q) and grounded(t)


def test_scripted_teacher_writes_only_what_the_policy_can_see(demo_oxigraph, by_type):
    """Its pattern search asks with the question's words, its query thought quotes a shown
    line, and a two-hop path without a mediator is walked one pattern search per hop."""
    teacher = ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0)
    quoted = 0
    for qtype in ("1-hop", "2-hop"):
        for q in by_type[qtype]:
            t = teacher.episode(make_env("knowcoder_a1", demo_oxigraph, max_turns=6), q, random.Random(0))
            searches = [a for turn in t.turns for a in turn.actions if a.name == "SearchGraphPatterns"]
            assert searches and all(a.kwargs["semantic"] == asked_for(q) for a in searches)
            assert q.topic_entities[0].name not in asked_for(q)
            assert len(searches) == len(q.relation_path)  # one search per hop on the demo KG
            query_turn = next(i for i, turn in enumerate(t.turns) if turn.actions[0].name == "ExecuteSPARQL")
            thought = re.search(r"<think>(.*) fits the question\.</think>", t.turns[query_turn].text)
            if thought:
                shown = re.search(r"<tool_response>(.*)</tool_response>", t.turns[query_turn - 1].observation, re.S)
                assert thought.group(1) in json.loads(shown.group(1))["results"].split("\n")
                quoted += 1
    assert quoted >= 12  # most of the 16 quote the pattern they query


def test_a_planned_episode_counts_its_hops_and_makes_the_same_moves(metaqa_2hop):
    """With ``plan_hops`` the first thought says how many hops the question takes and each
    later one which hop it is at; the tool calls are those of the unplanned episode."""
    kb, q = metaqa_2hop
    assert len(q.relation_path) == 2
    episodes = {plan: ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=plan)
                .episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for plan in (False, True)}
    planned, plain = episodes[True], episodes[False]
    assert hit(planned, q) and grounded(planned)
    assert [a.raw for x in planned.turns for a in x.actions] == [a.raw for x in plain.turns for a in x.actions]
    thoughts = [re.search(r"<think>(.*?)</think>", x.text).group(1) for x in planned.turns]
    assert "takes 2 hops" in thoughts[0] and not any("hop" in x.text.lower() for x in plain.turns)
    searches = sum(a.name == "SearchGraphPatterns" for x in planned.turns for a in x.actions)
    walks = [f"Hop {i} of 2: " for i in range(1, searches)]  # one pattern search per walked hop
    assert [t[: len(w)] for t, w in zip(thoughts[1:], walks, strict=False)] == walks
    assert thoughts[searches].startswith(hop_at(searches - 1, 1, 2))  # the query: the hops left


def test_a_restated_plan_writes_the_count_after_the_questions_words(metaqa_2hop):
    """With ``restate`` the first thought quotes what is asked, then the count, then the
    topic; nothing else in the episode changes."""
    kb, q = metaqa_2hop
    episodes = [ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True, restate=r)
                .episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for r in (False, True)]
    counted, restated = ([x.text for x in e.turns] for e in episodes)
    asked = asked_for(q).rstrip("?")
    assert q.topic_entities[0].name not in asked
    first = re.search(r"<think>(.*?)</think>", restated[0]).group(1)
    assert first.startswith(f"The question asks: {asked}, which takes 2 hops. It is about {q.topic_entities[0].name}.")
    assert restated[0].split("</think>")[1] == counted[0].split("</think>")[1]
    assert restated[1:] == counted[1:] and hit(episodes[1], q)


def test_a_planned_path_names_each_hops_relation_before_the_count(metaqa_2hop):
    """With ``plan_path`` the count follows the gold path's relations (no directions);
    the tool calls and every later turn are those of the counted episode."""
    kb, q = metaqa_2hop
    episodes = [ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True,
                                         restate=True, plan_path=p)
                .episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for p in (False, True)]
    counted, planned = ([x.text for x in e.turns] for e in episodes)
    rels = [r.lstrip("~") for r in q.relation_path]
    assert len(rels) == 2 and any(r.startswith("~") for r in q.relation_path)  # a backward hop to drop
    first = re.search(r"<think>(.*?)</think>", planned[0]).group(1)
    assert first.startswith(f"The question asks: {asked_for(q).rstrip('?')}, which follows "
                            f"{rels[0]}, {rels[1]}: 2 hops. It is about {q.topic_entities[0].name}.")
    assert planned[0].split("</think>")[1] == counted[0].split("</think>")[1]
    assert planned[1:] == counted[1:] and hit(episodes[1], q)


def test_a_directed_path_keeps_each_backward_hops_tilde(metaqa_2hop):
    """With ``path_directions`` the path is written as the sample stores it (``~r`` for a
    hop walked backwards); nothing else in the episode changes."""
    kb, q = metaqa_2hop
    episodes = [ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True,
                                         restate=True, plan_path=True, path_directions=d)
                .episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for d in (False, True)]
    plain, directed = ([x.text for x in e.turns] for e in episodes)
    assert q.relation_path[0].startswith("~") and not q.relation_path[1].startswith("~")
    first = re.search(r"<think>(.*?)</think>", directed[0]).group(1)
    assert f"which follows {q.relation_path[0]}, {q.relation_path[1]}: 2 hops." in first
    assert first.replace("~", "") == re.search(r"<think>(.*?)</think>", plain[0]).group(1)
    assert directed[0].split("</think>")[1] == plain[0].split("</think>")[1]
    assert directed[1:] == plain[1:] and hit(episodes[1], q)


def test_a_kinded_path_names_each_node_the_path_passes_before_its_relations(metaqa_2hop):
    """With ``path_kinds`` the relations follow the kinds of node the path passes (MetaQA's
    question type, topic first); nothing else in the episode changes, and a sample without
    kinds is planned as with ``plan_path`` alone."""
    kb, q = metaqa_2hop
    kinds = q.meta["path_kinds"]
    assert kinds == q.meta["qtype"].split("_to_") and len(kinds) == len(q.relation_path) + 1 == 3
    bare = dataclasses.replace(q, meta={k: v for k, v in q.meta.items() if k != "path_kinds"})
    teachers = [ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True,
                                         restate=True, plan_path=True, path_kinds=k) for k in (False, True)]
    plain, kinded, unkinded = ([x.text for x in t.episode(make_env("knowcoder_a1", kb, max_turns=6), s,
                                                          random.Random(0)).turns]
                               for t, s in ((teachers[0], q), (teachers[1], q), (teachers[1], bare)))
    rels = ", ".join(r.lstrip("~") for r in q.relation_path)
    first = re.search(r"<think>(.*?)</think>", kinded[0]).group(1)
    assert f"which goes {kinds[0]} -> {kinds[1]} -> {kinds[2]} and follows {rels}: 2 hops." in first
    assert first.replace(f"goes {' -> '.join(kinds)} and ", "") == re.search(r"<think>(.*?)</think>", plain[0]).group(1)
    assert kinded[0].split("</think>")[1] == plain[0].split("</think>")[1] and kinded[1:] == plain[1:]
    assert unkinded == plain


def test_a_three_hop_path_never_passes_through_the_topic_again(tmp_path):
    """MetaQA's "years of the films written by the writer of A" are the other films'
    years: the teacher's query must not walk back onto A at the middle hop (A's own
    1944 is reached through A's writer unless the middle node is kept off the topic)."""
    kb_file = tmp_path / "kb.txt"
    kb_file.write_text("A|written_by|W\nB|written_by|W\nA|release_year|1944\nB|release_year|1950\n"
                       "C|written_by|V\nC|release_year|1944\n", encoding="utf-8")
    kb = load_metaqa_kb(kb_file)
    q = KBQASample(id="q", question="what years were the films written by the writer of A released",
                   topic_entities=[Entity("A", "A")], answers=[Entity("1950", "1950")],
                   relation_path=["written_by", "~written_by", "release_year"])
    t = ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0).episode(
        make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0))
    assert [a.name for a in t.answer] == ["1950"]
    assert "FILTER(?y2 != ?e) ?y2 rel:release_year ?x . FILTER(?x != ?e)" in t.turns[-2].text


@pytest.mark.parametrize("hop", [2, 3])
def test_the_teachers_path_query_returns_exactly_metaqas_answers(metaqa_kb, hop):
    """On real MetaQA questions the query the scripted teacher writes returns the gold
    answer set itself (before the middle-hop filter: 149 of 300 3-hop questions)."""
    samples = load_dataset("metaqa", shared("metaqa"), hops=hop)
    random.Random(hop).shuffle(samples)
    prefixes, wrong = KnowCoderActionSpace.prefixes(metaqa_kb), []
    for s in samples[:100]:
        rows = metaqa_kb.select(expand_prefixes(path_sparql(s, metaqa_kb), prefixes))
        if {t.value for r in rows for t in r.values()} != {a.id for a in s.answers}:
            wrong.append(s.question)
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("kwargs, named", [
    ({"plan_path": True}, "plan_path=True needs plan_hops=True"),
    ({"plan_hops": True, "path_directions": True}, "path_directions=True needs plan_path=True"),
    ({"plan_hops": True, "path_kinds": True}, "path_kinds=True needs plan_path=True"),
    ({"plan_hops": True, "plan_after_look": True}, "plan_after_look=True needs plan_path=True"),
    ({"p_detour": 1.5}, "p_detour=1.5"),
    ({"p_types": -0.1}, "p_types=-0.1"),
])
def test_a_teacher_option_that_would_be_ignored_is_a_config_error(kwargs, named):
    """An option that only rewrites what another one writes must not be silently dropped."""
    with pytest.raises(ConfigError, match=re.escape(named)):
        ScriptedKnowCoderTeacher(**kwargs)


def test_grounding_requires_every_answer_in_an_observation():
    t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text="", observation='["Nairobi"]')],
                   answer=[Entity("m.1", "Nairobi")])
    assert grounded(t)
    t.answer.append(Entity("m.2", "Mombasa"))  # from the writer's own knowledge
    assert not grounded(t)


def test_compact_sparql_writes_prefixed_names(demo_oxigraph, by_type):
    q = by_type["cvt"][0]
    short = compact_sparql(q.sparql, demo_oxigraph)
    assert "<http://rdf.freebase.com" not in short and "ns:film.performance.actor" in short


def test_cold_start_keeps_at_most_three_balanced_and_reports_acceptance(demo_oxigraph, by_type):
    qs = [q for v in by_type.values() for q in v[:3]]
    builder = RejectionSampledColdStart([ScriptedKnowCoderTeacher()], attempts=4, max_per_question=3, balance=None)
    pol = CausalLMPolicy.tiny()
    make = EnvFactory(KnowCoderActionSpace, demo_oxigraph, max_turns=6)
    trajs = builder(qs, make, pol)
    per_q = Counter(t.sample_id for t in trajs)
    assert trajs and max(per_q.values()) <= 3
    for t in trajs:  # distinct episodes per question, with tokens and a loss mask
        assert sum(t.loss_mask) > 0 and len(t.token_ids) == len(t.loss_mask)
    texts = Counter((t.sample_id, tuple(x.text for x in t.turns)) for t in trajs)
    assert max(texts.values()) == 1
    report = builder.report["scripted"]
    assert set(report) == set(by_type) and all(0 < r["rate"] <= 1 for r in report.values())
    assert sum(r["accepted"] for r in report.values()) == len(trajs)
    balanced = RejectionSampledColdStart([ScriptedKnowCoderTeacher()], attempts=4, balance="qtype")(qs, make, pol)
    kinds = Counter(next(q.meta["qtype"] for q in qs if q.id == t.sample_id) for t in balanced)
    assert len(set(kinds.values())) == 1  # every type as often as the median one


def test_no_accepted_episode_is_a_config_error(demo_oxigraph, by_type):
    class Wrong:
        name = "wrong"

        def episode(self, env, sample, rng):
            env.reset(sample)
            env.step('<answer>\\boxed{["nothing"]}</answer>')
            return env.trajectory

    builder = RejectionSampledColdStart([Wrong()], attempts=1)
    with pytest.raises(ConfigError, match="passed the filter"):
        builder(by_type["1-hop"][:2], EnvFactory(KnowCoderActionSpace, demo_oxigraph), CausalLMPolicy.tiny())
    assert builder.report["wrong"]["1-hop"] == {"tried": 2, "accepted": 0, "repeats": 0, "teacher_errors": 0,
                                                "rate": 0.0}


def send_chat_completion(handler: BaseHTTPRequestHandler, text: str) -> None:
    """Answer an OpenAI ``/chat/completions`` request with one assistant message."""
    out = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(out)))
    handler.end_headers()
    handler.wfile.write(out)


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that replays a scripted conversation."""

    replies: list[str] = []
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        if turn >= len(self.replies):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b"no more replies")
            return
        send_chat_completion(self, self.replies[turn])

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_teacher_plays_against_a_local_endpoint(demo_oxigraph, by_type, stub):
    q = by_type["1-hop"][0]
    rel = q.relation_path[0]
    ref = f"ns:{q.topic_entities[0].id}"
    sparql = f"SELECT DISTINCT ?x WHERE {{ {ref} ns:{rel} ?x }}"
    # the endpoint strips the stop string, as OpenAI-style servers do
    _Stub.replies = ['<think>look</think><tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": '
                     + json.dumps(sparql) + "}}",
                     '<think>done</think><answer>\\boxed{["' + q.answers[0].name + '"]}']
    _Stub.seen = []
    teacher = OpenAITeacher(stub, model="big", api_key="k")
    t = teacher.episode(make_env("knowcoder_a1", demo_oxigraph, max_turns=4), q, random.Random(0))
    assert [turn.text.endswith(("</tool_call>", "</answer>")) for turn in t.turns] == [True, True]
    assert hit(t, q) and grounded(t)
    first, second = _Stub.seen
    assert first["model"] == "big" and "</tool_call>" in first["stop"]
    assert second["messages"][-1]["role"] == "user" and "<tool_response>" in second["messages"][-1]["content"]
    builder = RejectionSampledColdStart([teacher], attempts=1)
    assert len(builder([q], EnvFactory(KnowCoderActionSpace, demo_oxigraph), CausalLMPolicy.tiny())) == 1


def test_openai_teacher_errors_are_typed(demo_oxigraph, by_type, stub):
    _Stub.replies = []  # HTTP 500 on the first turn
    with pytest.raises(TeacherError, match="HTTP 500"):
        OpenAITeacher(stub, model="m").episode(make_env("knowcoder_a1", demo_oxigraph), by_type["1-hop"][0],
                                               random.Random(0))
    with pytest.raises(TeacherError, match="unreachable"):
        OpenAITeacher("http://127.0.0.1:9/v1", model="m", timeout_s=2).complete([], [], random.Random(0))
    builder = RejectionSampledColdStart([OpenAITeacher(stub, model="m")], attempts=2)
    with pytest.raises(ConfigError):
        builder(by_type["1-hop"][:1], EnvFactory(KnowCoderActionSpace, demo_oxigraph), CausalLMPolicy.tiny())
    assert builder.report["openai:m"]["1-hop"]["teacher_errors"] == 2  # counted, not raised


def test_engine_teacher_runs_a_local_model(demo_oxigraph, by_type):
    pol = CausalLMPolicy.tiny()
    teacher = EngineTeacher(HFEngine(pol), pol.chat_ids, max_new_tokens=8, name="tiny")
    t = teacher.episode(make_env("knowcoder_a1", demo_oxigraph, max_turns=3), by_type["1-hop"][0], random.Random(0))
    assert 1 <= len(t.turns) <= 3 and all(turn.text for turn in t.turns)


def test_a_plan_after_the_look_names_the_path_in_the_second_thought(metaqa_2hop):
    """With ``plan_after_look`` the first thought names no path; the next one names it after
    the shown pattern of the path's first relation; the tool calls are those of ``plan_path``."""
    kb, q = metaqa_2hop
    teachers = [ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True, restate=True,
                                         plan_path=True, path_kinds=True, plan_after_look=a) for a in (False, True)]
    before, after = (t.episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for t in teachers)
    kinds, rels = " -> ".join(q.meta["path_kinds"]), ", ".join(r.lstrip("~") for r in q.relation_path)
    plan = f"goes {kinds} and follows {rels}: 2 hops."
    assert plan in before.turns[0].text and "follows" not in after.turns[0].text
    second = re.search(r"<think>(.*?)</think>", after.turns[1].text).group(1)
    name = q.topic_entities[0].name
    assert second.startswith(f"Around {name}: (") and f"). The question {plan} " in second
    assert q.relation_path[0].lstrip("~") in second.split("). The question")[0]
    assert [[a.raw for a in t.actions] for t in after.turns] == [[a.raw for a in t.actions] for t in before.turns]
    assert hit(after, q)
