"""KBQA-R1's format reward (paper 000 §IV-C1, Eq. 2).

``R = F1 + 0.1 · 1[F1 > 0] · r_format`` is a :class:`~kgreason.rewards.CompositeReward`
of ``f1`` and ``kbqa_r1_format`` gated on ``f1`` (``kgreason/conf/reward/kbqa_r1.yaml``).
The official code pays ``0.03 × tag completeness`` instead when F1 = 0
(``reward=kbqa_r1_code``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kgreason.methods.kbqa_r1.grammar import FINAL_TAGS, STEP_TAGS, message_format
from kgreason.rewards.base import RewardOutput, register
from kgreason.rewards.base import message_format as space_format
from kgreason.types import KBQASample, Trajectory


def tag_format(trajectory: Trajectory, well_formed: Callable[[str], bool] = message_format) -> tuple[bool, float]:
    """Whether every turn is ``<think>…</think><action>…</action>`` and the last one
    ``<think>…</think><answer>…</answer>`` (tags complete and in order, nothing outside),
    and the fraction of expected tags present (the code's tag completeness).

    Args:
        well_formed: the message grammar (the action space's ``format_ok``).

    >>> from kgreason.types import Turn
    >>> ok = [Turn(text="<think>a</think><action>Count()</action>"),
    ...       Turn(text="<think>b</think><answer>3</answer>", is_answer=True)]
    >>> tag_format(Trajectory(sample_id="q", prompt=[], turns=ok))
    (True, 1.0)
    >>> tag_format(Trajectory(sample_id="q", prompt=[], turns=[Turn(text="<answer>3</answer>", is_answer=True)]))
    (False, 0.5)
    """
    turns = trajectory.turns
    if not turns:
        return False, 0.0
    ok = bool(turns[-1].is_answer)
    present = expected = 0
    for k, t in enumerate(turns):
        final = k == len(turns) - 1 and t.is_answer
        tags = FINAL_TAGS if final else STEP_TAGS
        expected += len(tags)
        present += sum(tag in t.text for tag in tags)
        ok = ok and well_formed(t.text)
    return ok, present / expected


@register("kbqa_r1_format", action_space="kbqa_r1", rollout="linear")
def kbqa_r1_format(trajectory: Trajectory, sample: KBQASample, mode: str = "strict", **ctx: Any) -> RewardOutput:
    """1 when :func:`tag_format` holds (``mode="strict"``), or the tag completeness in
    [0, 1] (``mode="completeness"``, the official code's fallback term).

    >>> from kgreason.types import Turn
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text="<think>x<answer>3</answer>", is_answer=True)])
    >>> kbqa_r1_format(t, None).total, kbqa_r1_format(t, None, mode="completeness").total
    (0.0, 0.75)
    """
    if mode not in ("strict", "completeness"):
        raise ValueError(f"mode={mode!r}: choose 'strict' or 'completeness'")
    ok, completeness = tag_format(trajectory, space_format(ctx, message_format))
    return RewardOutput(float(ok) if mode == "strict" else completeness)
