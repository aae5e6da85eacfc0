"""KG-Reasoner's retrieval and format rewards (paper 001, §4.3, Eqs. 5–8).

``R = r_retrieval + r_format + r_answer`` is a :class:`~kgreason.rewards.CompositeReward`
(``kgreason/conf/reward/kg_reasoner.yaml``) with the pluggable ``llm_judge`` as the
answer term. The paper's Eq. 5 and 6 did not survive its text extraction: the retrieval
reward grows with the number of retrievals and is "capped at 0.8"; here each search that
returned triples is worth ``per_search`` (0.2: the cap after four), and the format
reward checks the tag counts and order the paper names (``<think>``, ``<search>``,
``<answer>``).
"""

from __future__ import annotations

import re
from typing import Any

from kgreason.rewards.base import RewardOutput, register
from kgreason.types import KBQASample, Trajectory

_TAG = re.compile(r"</?(?:think|search|answer)>")


def search_in_think_format(text: str) -> bool:
    """One ``<think>`` first, balanced ``<search>…</search>`` pairs inside it, then one
    ``<answer>…</answer>`` and nothing after it (the inserted ``<triples>`` are not
    policy text and are not passed here).

    >>> search_in_think_format("<think>a <search> X </search> b</think><answer>Y</answer>")
    True
    >>> search_in_think_format("<think>a</think><search> X </search><answer>Y</answer>")
    False
    >>> search_in_think_format("<think>a <search> X</think><answer>Y</answer>")
    False
    """
    tags = _TAG.findall(text)
    if tags[:1] != ["<think>"] or tags[-3:] != ["</think>", "<answer>", "</answer>"]:
        return False
    inner = tags[1:-3]
    if len(inner) % 2 or any(a != "<search>" or b != "</search>" for a, b in zip(inner[::2], inner[1::2], strict=True)):
        return False
    return text.lstrip().startswith("<think>") and not text.rstrip().split("</answer>")[-1].strip()


@register("kg_reasoner_format", action_space="kg_reasoner", rollout="linear")
def kg_reasoner_format(trajectory: Trajectory, sample: KBQASample, **_: Any) -> RewardOutput:
    """1 when the policy's whole response (all turns joined) passes
    :func:`search_in_think_format`, else 0."""
    v = float(search_in_think_format("".join(t.text for t in trajectory.turns)))
    return RewardOutput(v, components={"format": v})


@register("kg_reasoner_retrieval", action_space="kg_reasoner", rollout="linear")
def kg_reasoner_retrieval(trajectory: Trajectory, sample: KBQASample, per_search: float = 0.2, cap: float = 0.8,
                          **_: Any) -> RewardOutput:
    """``min(per_search · N, cap)`` for N searches that returned triples (an error —
    an unknown entity, nothing to backtrack — retrieves nothing).

    >>> from kgreason.types import Action, Turn
    >>> ok = Turn(text="<search> X </search>", actions=[Action("search", ["X"])])
    >>> bad = Turn(text="<search> ? </search>", actions=[Action("search", ["?"])], error="KGR_UNKNOWN_ENTITY")
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[ok, bad, ok])
    >>> round(kg_reasoner_retrieval(t, None).total, 3), kg_reasoner_retrieval(Trajectory("q", [], [ok] * 9), None).total
    (0.4, 0.8)
    """
    n = sum(1 for t in trajectory.turns if t.actions and not t.error)
    v = min(per_search * n, cap)
    return RewardOutput(v, components={"retrieval": v})
