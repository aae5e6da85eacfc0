"""KG-Reasoner's reward (Eq. 8) on hand-written episodes."""

from __future__ import annotations

from hydra.utils import instantiate

from kgreason.config import compose_config
from kgreason.types import Action, Entity, KBQASample, Trajectory, Turn

Q = KBQASample("q", "Where was X born?", [Entity("m.x", "X")], [Entity("m.p", "Paris")])


def episode(texts, answer, errors=()):
    turns = [Turn(text=t, actions=[Action("search", ["X"])] if "<search>" in t else [],
                  error="KGR_UNKNOWN_ENTITY" if i in errors else None) for i, t in enumerate(texts)]
    turns[-1].is_answer = True
    return Trajectory("q", [], turns, answer_text=answer, answer=[Entity("m.p", answer)] if answer else [])


def test_the_three_terms_add_up():
    reward = instantiate(compose_config(["method=kg_reasoner"]).reward)
    good = episode(["<think>a <search> X </search>", "b <search> m.y </search>", "c</think><answer>Paris</answer>"],
                   "Paris")
    out = reward(good, Q)
    assert [out.components[k] for k in ("retrieval", "format", "answer")] == [0.4, 1.0, 1.0]
    assert abs(out.total - 2.4) < 1e-9
    # a failed search retrieves nothing; an answer outside the thought's protocol loses format
    bad = episode(["<think>a <search> Y </search>", "</think>b<search> X </search>", "<answer>Lyon</answer>"],
                  "Lyon", errors=(0,))
    out = reward(bad, Q)
    assert [out.components[k] for k in ("retrieval", "format", "answer")] == [0.2, 0.0, 0.0]
    many = episode(["<think><search> X </search>"] * 7 + ["</think><answer>Paris</answer>"], "Paris")
    assert reward(many, Q).components["retrieval"] == 0.8  # capped
