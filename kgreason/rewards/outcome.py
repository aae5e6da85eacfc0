"""Outcome rewards over normalised answer sets, best over gold variants.

Gold variants (WebQSP parses, aliases of a set) come from ``sample.meta["answer_variants"]``
(a list of answer lists) next to ``sample.answers``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kgreason.eval.metrics import hit_at_1, matches, precision_recall_f1
from kgreason.rewards.base import RewardOutput, register
from kgreason.rewards.judges import alias_judge
from kgreason.types import Entity, KBQASample, Trajectory


def _golds(sample: KBQASample) -> list[Sequence[Entity | str]]:
    variants = sample.meta.get("answer_variants") or []
    return [sample.answers, *variants]


def fbeta_score(pred: Sequence[Entity | str], gold: Sequence[Entity | str], beta: float = 1.0) -> float:
    """F-beta of two answer sets (beta < 1 weighs precision more).

    >>> round(fbeta_score(["x", "y"], ["x"], beta=0.5), 4), round(fbeta_score(["x"], ["x", "y"], beta=0.5), 4)
    (0.5556, 0.8333)
    """
    p, r, _ = precision_recall_f1(pred, gold)
    if p == 0 and r == 0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * p * r / (b2 * p + r)


@register("f1")
def f1_reward(trajectory: Trajectory, sample: KBQASample, **_: Any) -> RewardOutput:
    """Answer-set F1, best over gold variants."""
    v = max(precision_recall_f1(trajectory.answer, g)[2] for g in _golds(sample))
    return RewardOutput(v, components={"f1": v})


@register("fbeta")
def fbeta_reward(trajectory: Trajectory, sample: KBQASample, beta: float = 1.0, **_: Any) -> RewardOutput:
    """F-beta (KnowCoder-A1 trains with F0.5 first, then F1), best over gold variants."""
    v = max(fbeta_score(trajectory.answer, g, beta) for g in _golds(sample))
    return RewardOutput(v, components={f"f{beta:g}": v})


@register("em")
def em_reward(trajectory: Trajectory, sample: KBQASample, **_: Any) -> RewardOutput:
    """1 when the predicted set equals a gold variant."""
    v = max(float(precision_recall_f1(trajectory.answer, g)[:2] == (1.0, 1.0)) for g in _golds(sample))
    return RewardOutput(v, components={"em": v})


@register("hit1")
def hit1_reward(trajectory: Trajectory, sample: KBQASample, **_: Any) -> RewardOutput:
    """1 when the first predicted answer is gold (Hit@1)."""
    v = max(hit_at_1(trajectory.answer, g) for g in _golds(sample))
    return RewardOutput(v, components={"hit1": v})


@register("hit")
def hit_reward(trajectory: Trajectory, sample: KBQASample, **_: Any) -> RewardOutput:
    """1 when any predicted answer is gold: the EM of CWQ (Talmor & Berant 2018) that
    KnowCoder-A1 uses, "at least one of the predicted answers appears in the gold answers"
    (paper 003 §3.1, and its "EM as reward" ablation), and ISP/DTPO's Hit.

    >>> from kgreason.types import Turn
    >>> t = Trajectory("q", answer=[Entity("x", "Rome"), Entity("m.1", "Paris")])
    >>> s = KBQASample("q", "?", answers=[Entity("m.1", "Paris")])
    >>> hit_reward(t, s).total, hit1_reward(t, s).total, em_reward(t, s).total
    (1.0, 0.0, 0.0)
    """
    v = max(float(any(matches(a, x) for a in trajectory.answer for x in g)) for g in _golds(sample))
    return RewardOutput(v, components={"hit": v})


#: ``judge(answer_text, gold, question="") -> score`` (:mod:`kgreason.rewards.judges`)
Judge = Callable[..., float]


@register("llm_judge")
def llm_judge_reward(trajectory: Trajectory, sample: KBQASample, judge: Judge | None = None,
                     **_: Any) -> RewardOutput:
    """A pluggable answer judge: an LLM (:class:`~kgreason.rewards.judges.ChatJudge`) or any
    ``judge(answer_text, gold, question=...)``; default: alias match. The best verdict over
    the answer's parts."""
    judge = judge or alias_judge
    parts = [a.label for a in trajectory.answer] or ([trajectory.answer_text] if trajectory.answer_text else [])
    v = max((judge(p, sample.answers, question=sample.question) for p in parts), default=0.0)
    return RewardOutput(v, components={"judge": v})
