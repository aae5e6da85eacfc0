"""KBQA-R1's reward, Eq. 2, and the official code's variant (hand-worked values)."""

from __future__ import annotations

import pytest
from hydra.utils import instantiate

from kgreason.config import compose_config
from kgreason.types import Entity, KBQASample, Trajectory, Turn

GOLD = KBQASample(id="q", question="?", answers=[Entity("m.a", "A"), Entity("m.b", "B")])


def traj(answer: list[str], well_formed: bool = True) -> Trajectory:
    step = "<think>t</think><action>Count()</action>" if well_formed else "<action>Count()</action>"
    final = "<think>t</think><answer>" + " | ".join(answer) + "</answer>"
    return Trajectory(sample_id="q", prompt=[], turns=[Turn(text=step), Turn(text=final, is_answer=True)],
                      answer=[Entity(a, a) for a in answer])


def reward(name: str):
    cfg = compose_config(["method=kbqa_r1", f"reward={name}"])
    return instantiate(cfg.reward)


@pytest.mark.parametrize("answer, well_formed, paper, code", [
    (["m.a", "m.b"], True, 1.1, 1.1),        # F1 1 + 0.1 format
    (["m.a"], True, 2 / 3 + 0.1, 2 / 3 + 0.1),  # P 1, R 1/2
    (["m.a"], False, 2 / 3, 2 / 3),          # no format bonus: a step without <think>
    (["m.z"], True, 0.0, 0.03),              # F1 0: no bonus (paper); 0.03 × all 8 tags (code)
    (["m.z"], False, 0.0, 0.03 * 6 / 8),     # 6 of 8 tags
])
def test_f1_plus_gated_format(answer, well_formed, paper, code):
    t = traj(answer, well_formed)
    assert reward("kbqa_r1")(t, GOLD).total == pytest.approx(paper)
    assert reward("kbqa_r1_code")(t, GOLD).total == pytest.approx(code)


def test_the_objective_is_mean_centred_with_asymmetric_clip():
    cfg = compose_config(["method=kbqa_r1"])
    o = cfg.objective
    assert (o.clip_low, o.clip_high, o.kl_coef, o.agg) == (0.2, 0.28, 0.001, "token_mean")
    assert o.advantage == "grpo" and o.advantage_kwargs.norm_by_std is False
    assert cfg.rollout.n_rollouts == 5 and cfg.env.max_turns == 6
    assert compose_config(["method=kbqa_r1", "objective=kbqa_r1_code"]).objective.kl_coef == 0.0
