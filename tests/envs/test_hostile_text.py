"""Hostile policy text on every action space: a typed observation, never an exception."""

from __future__ import annotations

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env

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
