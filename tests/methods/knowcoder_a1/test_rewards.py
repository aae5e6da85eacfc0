"""KnowCoder-A1's reward as composed in its config: format + F0.5 → F1, capped at 1."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from kgreason.compose import compose_config
from kgreason.types import Action, Entity, KBQASample, Trajectory, Turn

GOLD = KBQASample(id="q", question="?", answers=[Entity("m.1", "A1"), Entity("m.2", "A2")])


def answered(*names: str, boxed: bool = True) -> Trajectory:
    text = '<answer>\\boxed{["' + '", "'.join(names) + '"]}</answer>' if boxed else "<answer>A1</answer>"
    return Trajectory(sample_id="q", prompt=[], turns=[Turn(text=text, is_answer=True)],
                      answer=[Entity(f"m.{n[-1]}", n) for n in names])


@pytest.fixture(scope="module")
def reward():
    return instantiate(compose_config(["method=knowcoder_a1"]).reward)


def test_precision_first_then_f1(reward):
    """Paper Fig. 2: gold {A1, A2}; {A1} scores F0.5 = 0.833 early, F1 = 0.667 late."""
    partial = answered("A1")
    early, late = reward(partial, GOLD, step=0), reward(partial, GOLD, step=100)
    assert early.components["f0.5/weighted"] == pytest.approx(0.8333, abs=1e-4) and early.components["f1/weighted"] == 0
    assert late.components["f1/weighted"] == pytest.approx(2 / 3) and late.components["f0.5/weighted"] == 0
    assert early.total == pytest.approx(0.1 + 0.8333, abs=1e-4)  # with the format term
    over = answered("A1", "A2", "A3", "A4")  # the over-recall the curriculum discourages
    assert reward(over, GOLD, step=0).components["f0.5"] == pytest.approx(0.5556, abs=1e-4)


def test_the_total_is_capped_at_one_and_format_needs_a_box(reward):
    assert reward(answered("A1", "A2"), GOLD, step=0).total == 1.0  # 0.1 + 1.0, capped
    assert reward(answered("A1", boxed=False), GOLD, step=0).components["format"] == 0.0


def test_the_process_penalty_variant(reward):
    penal = instantiate(compose_config(["method=knowcoder_a1", "reward=knowcoder_a1_process"]).reward)
    t = answered("A1", "A2")
    t.turns.insert(0, Turn(text="", actions=[Action("ExecuteSPARQL", kwargs={"sparql": "SELECT ?y WHERE { ?x ns:made.up.relation ?y }"})],
                           observation="[]", error="KC_TIMEOUT"))
    out = penal(t, GOLD, step=0)
    assert out.components["process"] == pytest.approx(-0.4) and out.total == pytest.approx(0.7)  # 1.1 − 0.4
    assert reward(t, GOLD, step=0).total == 1.0  # the paper's reward ignores the process
