"""Hand-worked reward values."""

from __future__ import annotations

import pytest

from kgreason import rewards
from kgreason.errors import RegistryError
from kgreason.rewards import Component, CompositeReward
from kgreason.types import Action, Entity, KBQASample, Trajectory, Turn

PARIS, LYON = Entity("m.p", "Paris"), Entity("m.l", "Lyon")
SAMPLE = KBQASample(id="s", question="?", answers=[PARIS, LYON])


def traj(answer: list[Entity], turns: list[Turn] | None = None, text: str = "Paris") -> Trajectory:
    return Trajectory(sample_id="s", turns=turns or [], answer=answer, answer_text=text)


@pytest.mark.parametrize("name,answer,expected", [
    ("f1", [PARIS], 2 / 3), ("f1", [PARIS, LYON], 1.0), ("f1", [Entity("x", "Rome")], 0.0),
    ("em", [PARIS], 0.0), ("em", [LYON, PARIS], 1.0),
    ("hit1", [PARIS, Entity("x", "Rome")], 1.0), ("hit1", [Entity("x", "Rome"), PARIS], 0.0),
    ("hit", [Entity("x", "Rome"), PARIS], 1.0), ("hit", [Entity("x", "Rome")], 0.0),
    ("llm_judge", [Entity("paris", "paris")], 1.0),
])
def test_outcome(name, answer, expected):
    assert rewards.get(name)(traj(answer), SAMPLE).total == pytest.approx(expected)


def test_fbeta_and_variants():
    out = rewards.get("fbeta")(traj([PARIS]), SAMPLE, beta=0.5)  # P=1, R=0.5
    assert out.total == pytest.approx(1.25 * 0.5 / (0.25 + 0.5))
    with_variant = KBQASample(id="s", question="?", answers=[PARIS, LYON], meta={"answer_variants": [[PARIS]]})
    assert rewards.get("f1")(traj([PARIS]), with_variant).total == 1.0  # best over gold variants


def q(text: str, arg: str, error: str | None = None, entities: list[str] | None = None) -> Turn:
    return Turn(text=text, actions=[Action("get_tail_relations", [arg])] if arg else [], error=error,
                entities=entities or [], observation="<information>...</information>")


def test_kg_r1_turn_and_global_rewards_hand_worked():
    call = '<think>a</think><kg-query>get_tail_relations("X")</kg-query>'
    turns = [
        q(call, "X"),                                          # fmt 1, kg 1          -> 1.0
        q(call, "x ", entities=["m.l"]),                       # fmt 1, repeated query -> 0.5; retrieves Lyon
        q("<kg-query>bad</kg-query>", "", error="KG_FORMAT_ERROR"),  # nothing          -> 0.0
        Turn(text="<think>b</think><answer>Paris</answer>", is_answer=True),  # fmt 1, answer 1 -> 1.0
    ]
    out = rewards.get("kg_r1")(traj([PARIS], turns), SAMPLE)
    assert out.turn == [1.0, 0.5, 0.0, 1.0]
    assert out.components["f1"] == pytest.approx(2 / 3) and out.components["retrieval"] == 1.0
    assert out.total == pytest.approx(0.625 + 2 / 3 + 1.0)


def test_kg_r1_failed_query_and_no_retrieval():
    turns = [q('<think>a</think><kg-query>get_tail_relations("Y")</kg-query>', "Y", error="KG_ENTITY_NOT_FOUND"),
             Turn(text="<answer>Rome</answer>", is_answer=True)]  # no <think>: format 0, answer 1
    out = rewards.get("kg_r1")(traj([Entity("x", "Rome")], turns, "Rome"), SAMPLE)
    assert out.turn == [0.5, 0.5] and out.components["retrieval"] == 0.0 and out.total == pytest.approx(0.5)


def test_composite_gate_schedule_cap():
    kbqa_r1 = CompositeReward([Component("f1"), Component("hit1", 0.1, gate="f1")])
    assert kbqa_r1(traj([Entity("x", "Rome")]), SAMPLE).total == 0.0
    assert kbqa_r1(traj([PARIS, LYON]), SAMPLE).total == pytest.approx(1.1)
    sched = CompositeReward([Component("fbeta", kwargs={"beta": 0.5}, until_step=10, alias="f05"),
                             Component("f1", from_step=10)], cap=1.0)
    assert sched(traj([PARIS]), SAMPLE, step=0).total == pytest.approx(1.25 * 0.5 / 0.75)
    assert sched(traj([PARIS]), SAMPLE, step=10).total == pytest.approx(2 / 3)
    capped = CompositeReward([Component("f1"), Component("em")], cap=1.0)
    out = capped(traj([PARIS, LYON]), SAMPLE)
    assert out.total == 1.0 and out.components["uncapped"] == 2.0


def test_composite_weights_turn_rewards():
    turns = [Turn(text="<think>b</think><answer>Paris</answer>", is_answer=True)]
    out = CompositeReward([Component("kg_r1", 2.0), Component("f1", 0.5)])(traj([PARIS], turns), SAMPLE)
    assert out.turn == [2.0]  # 2 · (0.5 format + 0.5 answer)
    # global: 2 · (F1 + retrieval) from kg_r1, plus the turn-less f1 term
    assert out.global_reward == pytest.approx(2 * (2 / 3 + 0.0) + 0.5 * 2 / 3)
    assert out.components["kg_r1/retrieval"] == 0.0 and out.components["kg_r1/f1"] == pytest.approx(2 / 3)


def test_registry_errors():
    with pytest.raises(RegistryError, match="valid: .*f1"):
        rewards.get("nope")
    with pytest.raises(RegistryError, match="already registered"):
        rewards.register("f1")(lambda t, s, **k: None)
    with pytest.raises(RegistryError):
        CompositeReward([Component("nope")])
    with pytest.raises(ValueError, match="gate"):
        CompositeReward([Component("f1", gate="em")])


def test_ablate_and_weights_change_what_components_count_not_what_they_log():
    from kgreason.rewards import Component, CompositeReward
    from kgreason.types import Entity, KBQASample, Trajectory

    s = KBQASample("q", "?", answers=[Entity("m.1", "A"), Entity("m.2", "B")])
    t = Trajectory("q", answer=[Entity("m.1", "A")])  # F1 2/3, hit 1
    parts = [Component("f1"), Component("hit", weight=0.5)]
    assert CompositeReward(parts)(t, s).total == pytest.approx(2 / 3 + 0.5)
    out = CompositeReward(parts, ablate=["hit"])(t, s)
    assert out.total == pytest.approx(2 / 3) and out.components["hit"] == 1.0  # logged, not counted
    assert CompositeReward(parts, weights={"f1": 0.0, "hit": 2.0})(t, s).total == pytest.approx(2.0)
    with pytest.raises(ValueError, match=r"reward.weights=\{'em': 1.0\}: \['em'\] not among the components"):
        CompositeReward(parts, weights={"em": 1.0})
