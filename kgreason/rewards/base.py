"""Reward functions: ``(trajectory, sample, **ctx) -> RewardOutput`` (design §6, docs/design.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgreason.registry import Registry
from kgreason.types import KBQASample, Trajectory


@dataclass
class RewardOutput:
    """A reward: the scalar ``total``, optional per-turn values and named components."""

    total: float
    turn: list[float] | None = None
    components: dict[str, float] = field(default_factory=dict)


class RewardFn(Protocol):
    def __call__(self, trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput: ...


REWARDS: Registry[RewardFn] = Registry("reward")


def register(name: str, *, rollout: str | None = None,
             action_space: str | None = None) -> Callable[[RewardFn], RewardFn]:
    """Register a reward function under ``name``, with what it needs of the composition.

    Args:
        rollout: the rollout kind it needs: ``"tree"`` (it scores tree nodes) or
            ``"linear"`` (it reads the turns of a whole episode, which a tree's one-step
            samples do not have: on a tree it would score 0).
        action_space: the action space whose output format it scores; on another one it
            would score 0 on every step.

    The runner checks these against the config before anything loads
    (:mod:`kgreason.compat`).
    """
    return REWARDS.register(name, rollout=rollout, action_space=action_space)  # type: ignore[return-value]


def get(name: str) -> RewardFn:
    """The reward registered as ``name`` (unknown names list the valid ones)."""
    return REWARDS.get(name)
