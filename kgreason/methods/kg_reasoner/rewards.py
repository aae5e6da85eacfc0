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

from typing import Any

from kgreason.methods.kg_reasoner.grammar import search_in_think_format
from kgreason.rewards.base import RewardOutput, register, response_format
from kgreason.types import KBQASample, Trajectory


@register("kg_reasoner_format", action_space="kg_reasoner", rollout="linear")
def kg_reasoner_format(trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput:
    """1 when the policy's whole response follows the action space's grammar
    (:func:`~kgreason.methods.kg_reasoner.grammar.search_in_think_format` with its tag
    names), else 0."""
    ok = response_format(ctx, lambda texts: search_in_think_format("".join(texts)))
    v = float(ok([t.text for t in trajectory.turns]))
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
