"""``CompositeReward``: weighted components with gating, caps and step schedules (design §6, docs/design.md).

Examples of the papers' rewards as compositions::

    # KBQA-R1: F1 + 0.1·format, the format term only when F1 > 0
    CompositeReward([Component("f1"), Component("kbqa_r1_format", 0.1, gate="f1")])
    # KnowCoder-A1: F0.5 until step 100, then F1; total capped at 1.0
    CompositeReward([Component("fbeta", kwargs={"beta": 0.5}, until_step=100),
                     Component("f1", from_step=100)], cap=1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kgreason.rewards.base import RewardOutput, get
from kgreason.types import KBQASample, Trajectory


@dataclass
class Component:
    """One term: ``weight · reward(name, **kwargs)``.

    Args:
        gate: another component's name, or several; this term counts only when each of
            them has a raw value above ``gate_threshold`` (DTPO gates its outcome on
            format ≥ 0 and progress ≥ 0: two gates at −0.5 over values in {−1, 0, 1}).
        gate_invert: count only when each gate is at or below ``gate_threshold`` instead
            (KBQA-R1's code pays a tag-completeness bonus only when F1 = 0).
        from_step / until_step: active for ``from_step <= ctx["step"] < until_step``; a
            number below 1 is a share of the RL stage (0.5: its second half), made an
            iteration by :meth:`CompositeReward.over_iterations` once the stage's length is
            known (a paper that counts epochs gives it only after the data loads).
        alias: the name in the output components (default: ``name``).
    """

    name: str
    weight: float = 1.0
    kwargs: dict[str, Any] = field(default_factory=dict)
    gate: str | list[str] | None = None
    gate_threshold: float = 0.0
    gate_invert: bool = False
    from_step: float | None = None
    until_step: float | None = None
    alias: str | None = None

    @property
    def gates(self) -> list[str]:
        return [] if self.gate is None else [self.gate] if isinstance(self.gate, str) else list(self.gate)

    @property
    def key(self) -> str:
        return self.alias or self.name

    def active(self, step: int) -> bool:
        return (self.from_step is None or step >= self.from_step) and (
            self.until_step is None or step < self.until_step)


class CompositeReward:
    """Sum of weighted, gated, scheduled components, optionally clipped to ``[floor, cap]``."""

    def __init__(self, components: list[Component], cap: float | None = None, floor: float | None = None,
                 ablate: Sequence[str] = (), weights: Mapping[str, float] | None = None):
        """``ablate``: component keys that count nothing (weight 0, still computed and
        logged): a paper's "– X reward" row (``reward.ablate=[format]``). ``weights``:
        component key → weight, over the components' own (a weight-sensitivity row,
        ``reward.weights={progress: 0.3, outcome: 0.6}``)."""
        if not components:
            raise ValueError("a CompositeReward needs at least one component")
        keys = [c.key for c in components]
        if len(set(keys)) != len(keys):
            raise ValueError(f"component names must be unique (use alias=): {keys}")
        for what, given in (("ablate", list(ablate)), ("weights", dict(weights or {}))):
            unknown = sorted(set(given) - set(keys))
            if unknown:
                raise ValueError(f"reward.{what}={given}: {unknown} not among the components {keys}")
        components = [replace(c, weight=float((weights or {})[c.key])) if c.key in (weights or {}) else c
                      for c in components]
        components = [replace(c, weight=0.0) if c.key in ablate else c for c in components]
        self.ablate = tuple(ablate)
        for c in components:
            get(c.name)  # fail early on unknown names
            for g in c.gates:
                if g not in keys:
                    raise ValueError(f"gate {g!r} of {c.key!r} is not a component; components: {keys}")
        self.components = components
        self.cap = cap
        self.floor = floor

    def over_iterations(self, iterations: int) -> CompositeReward:
        """Turn each schedule step given as a share of the RL stage into an iteration of a
        stage of ``iterations``.

        >>> r = CompositeReward([Component("f1", until_step=0.5), Component("em", from_step=0.5)])
        >>> [(c.from_step, c.until_step) for c in r.over_iterations(15).components]
        [(None, 7), (7, None)]
        """
        for c in self.components:
            for key in ("from_step", "until_step"):
                value = getattr(c, key)
                if value is not None and 0 < value < 1:
                    setattr(c, key, int(value * iterations))
        return self

    def __call__(self, trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput:
        step = int(ctx.get("step", 0))
        raw: dict[str, RewardOutput] = {}
        for c in self.components:
            raw[c.key] = get(c.name)(trajectory, sample, **{**ctx, **c.kwargs})
        total = 0.0
        glob = 0.0
        turn: list[float] | None = None
        comps: dict[str, float] = {}
        for c in self.components:
            out = raw[c.key]
            on = c.active(step) and all((raw[g].total > c.gate_threshold) != c.gate_invert for g in c.gates)
            w = c.weight if on else 0.0
            comps[c.key] = out.total
            comps[f"{c.key}/weighted"] = w * out.total
            comps.update({f"{c.key}/{k}": v for k, v in out.components.items() if k != c.key})
            total += w * out.total
            glob += w * out.trajectory_level()
            if out.turn is not None and w:
                turn = [a + w * b for a, b in zip(turn or [0.0] * len(out.turn), out.turn, strict=True)]
        comps["uncapped"] = total
        if self.cap is not None:
            total = min(total, self.cap)
        if self.floor is not None:
            total = max(total, self.floor)
        return RewardOutput(total, turn, comps, global_reward=glob)
