"""Hostile policy text and a failing KB on every action space: typed results, never an exception."""

from __future__ import annotations

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.envs.base import ANSWER_KB_ERROR, MAX_ANSWER_LOOKUPS, OBS_FRAME_TOKENS
from kgreason.envs.text import approx_tokens
from kgreason.errors import KBUnavailable
from kgreason.kb import OxigraphKB

HOSTILE = [
    "<answer>\ud800</answer>",  # a lone surrogate
    "<think>\udfff</think><answer>\\boxed{[\"\ud800\"]}</answer>",
    "<answer>\\boxed{[" + "9" * 5000 + "]}</answer>",  # an integer over Python's 4,300-digit limit
    "<answer>[" + "9" * 5000 + "]</answer>",
    "<answer>" + "[" * 5000 + "]" * 5000 + "</answer>",  # JSON nested past the recursion limit
    "<answer>\\boxed{" + "[" * 5000 + "]" * 5000 + "}</answer>",
]


@pytest.fixture(scope="module")
def question():
    return load_dataset("demo", split="dev")[0]


@pytest.mark.parametrize("space", ["kg_r1", "isp_dtpo", "knowcoder_a1"])
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_answers_end_the_episode_cleanly(demo_oxigraph, question, space, text):
    env = make_env(space, demo_oxigraph, max_turns=4)
    env.reset(question)
    r = env.step(text)
    assert r.done and r.answer_text is not None
    assert env.trajectory is not None
    for turn in env.trajectory.turns:  # what is kept is valid UTF-8 (logs, tokenizer, KB)
        turn.text.encode("utf-8")
    for a in env.trajectory.answer:
        a.name.encode("utf-8")


class _CountingKB(OxigraphKB):
    """The demo facts; ``lookup`` counts its calls and can fail like a KB that went away."""

    fail: type[Exception] | None = None
    calls = 0

    def lookup(self, name):
        type(self).calls += 1
        if self.fail is not None:
            raise self.fail("connection refused")
        return super().lookup(name)


@pytest.fixture
def counting_kb(demo_kg):
    _CountingKB.calls, _CountingKB.fail = 0, None
    return _CountingKB.from_triples(demo_kg.triples)


@pytest.mark.parametrize("space", ["kg_r1", "isp_dtpo", "knowcoder_a1"])
def test_an_answer_with_the_kb_gone_is_flagged_and_costs_one_failure(counting_kb, question, space):
    env = make_env(space, counting_kb, max_turns=4)
    env.reset(question)
    _CountingKB.fail = KBUnavailable
    r = env.step('<answer>\\boxed{["Nairobi", "Mombasa", "Kisumu"]}</answer>')
    assert r.done and r.error == ANSWER_KB_ERROR and env.trajectory.turns[-1].error == ANSWER_KB_ERROR
    assert [a.name for a in r.answer] == ["Nairobi", "Mombasa", "Kisumu"]  # kept as literals
    assert _CountingKB.calls == 1  # not one failure per answer part


def test_one_answer_costs_a_bounded_number_of_lookups(counting_kb, question):
    env = make_env("kg_r1", counting_kb, max_turns=4)
    env.reset(question)
    parts = [f"name {i}" for i in range(1000)]
    r = env.step("<answer>" + "; ".join(parts) + "</answer>")
    assert r.done and r.error is None and len(r.answer) == 1000
    assert _CountingKB.calls <= MAX_ANSWER_LOOKUPS


@pytest.mark.parametrize("space, text", [
    ("kg_r1", '<kg-query>get_tail_relations("' + "x" * 1_000_000 + '")</kg-query>'),
    ("isp_dtpo", "<think>t</think><node>" + "x" * 1_000_000 + "</node>"),
    ("knowcoder_a1", '<tool_call>{"name": "SearchTypes", "arguments": {"query": "' + "x " * 500_000 + '"}}</tool_call>'),
])
def test_an_observation_is_held_to_its_budget_whatever_the_input(demo_oxigraph, question, space, text):
    env = make_env(space, demo_oxigraph, max_turns=4, max_obs_tokens=128)
    env.reset(question)
    r = env.step(text)
    assert not r.done and r.observation
    assert approx_tokens(r.observation) <= 128 + OBS_FRAME_TOKENS + 16  # budget, frame, the note saying so
