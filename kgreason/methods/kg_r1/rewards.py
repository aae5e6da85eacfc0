"""KG-R1's turn and global rewards (Song et al., §3.3 eqs. 1–2, appendix D.3).

Turn reward ``r_t = w_fmt·v_fmt(m_t) + w_kg·v_kg(a_t, o_t+1) + w_ans·v_ans(m_T)``:

- ``v_fmt``: the message holds reasoning and one well-formed action
  (``<think>…</think>`` then ``<kg-query>…</kg-query>`` or ``<answer>…</answer>``);
- ``v_kg``: the query executed without error, returned something, and was not already
  issued in the trajectory (the official code's uniqueness rule);
- ``v_ans``: on the final turn only, a non-empty ``<answer>``.

Global reward ``R = w_F1·F1 + w_ret·v_ret`` with ``v_ret = 1`` when any gold answer
appeared in any observation. The total is the mean turn reward plus ``R`` (official code).
"""

from __future__ import annotations

import re
from typing import Any

from kgreason.eval.metrics import normalize
from kgreason.methods.kg_r1.grammar import turn_format
from kgreason.rewards.base import RewardOutput, message_format, register
from kgreason.rewards.outcome import f1_reward
from kgreason.types import KBQASample, Trajectory, Turn


def _query_key(turn: Turn) -> str:
    return "|".join(f"{a.name}({','.join(x.strip().lower() for x in a.args)})" for a in turn.actions)


def retrieval_coverage(trajectory: Trajectory, sample: KBQASample) -> float:
    """1.0 when any gold answer (by id, or by normalised name in the text) was retrieved."""
    gold_ids = {a.id for a in sample.answers}
    gold_names = {normalize(n) for a in sample.answers for n in (a.name, *a.aliases) if n}
    for t in trajectory.turns:
        if gold_ids & set(t.entities):
            return 1.0
        if t.observation and not t.error:
            obs = normalize(t.observation)
            if any(n and re.search(rf"(^|\s){re.escape(n)}(\s|$)", obs) for n in gold_names):
                return 1.0
    return 0.0


@register("kg_r1", action_space="kg_r1", rollout="linear")
def kg_r1_reward(trajectory: Trajectory, sample: KBQASample, w_fmt: float = 0.5, w_kg: float = 0.5,
                 w_ans: float = 0.5, w_f1: float = 1.0, w_ret: float = 1.0, **ctx: Any) -> RewardOutput:
    """KG-R1 turn rewards plus global reward; defaults are Table 8 of the paper."""
    turns = trajectory.turns
    well_formed = message_format(ctx, lambda text: turn_format(text) == 1.0)
    seen: set[str] = set()
    fmt, kg, ans, per_turn = [], [], [], []
    for i, t in enumerate(turns):
        v_fmt = float(well_formed(t.text))
        v_kg = 0.0
        if t.actions and not t.is_answer:
            key = _query_key(t)
            v_kg = float(t.error is None and key not in seen)
            seen.add(key)
        last = i == len(turns) - 1
        v_ans = float(last and t.is_answer and bool((trajectory.answer_text or "").strip()))
        fmt.append(v_fmt)
        kg.append(v_kg)
        ans.append(v_ans)
        per_turn.append(w_fmt * v_fmt + w_kg * v_kg + w_ans * v_ans)
    f1 = f1_reward(trajectory, sample).total
    ret = retrieval_coverage(trajectory, sample)
    glob = w_f1 * f1 + w_ret * ret
    mean_turn = sum(per_turn) / len(per_turn) if per_turn else 0.0
    n = max(1, len(turns))
    return RewardOutput(
        total=mean_turn + glob,
        turn=per_turn,
        components={"turn_format": sum(fmt) / n, "turn_kg": sum(kg) / n, "turn_answer": sum(ans) / n,
                    "turn_mean": mean_turn, "f1": f1, "retrieval": ret},
        global_reward=glob,
    )
