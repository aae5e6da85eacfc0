"""Reward functions: ``(trajectory, sample, **ctx) -> RewardOutput`` (design §6, docs/design.md)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgreason.registry import Registry
from kgreason.types import KBQASample, Trajectory


@dataclass
class RewardOutput:
    """A reward: the scalar ``total``, optional per-turn values and named components.

    Attributes:
        total: the trajectory's reward.
        turn: per-turn values (KG-R1's r_t), or ``None``.
        components: named parts, for logs.
        global_reward: the trajectory-level part (KG-R1's R_global, credited to every turn
            by a turn-level advantage); ``None``: all of ``total`` when there are no
            per-turn values, else 0 (:meth:`trajectory_level`).
    """

    total: float
    turn: list[float] | None = None
    components: dict[str, float] = field(default_factory=dict)
    global_reward: float | None = None

    def trajectory_level(self) -> float:
        """The trajectory-level part.

        >>> RewardOutput(1.5).trajectory_level(), RewardOutput(2.0, turn=[1.0]).trajectory_level()
        (1.5, 0.0)
        >>> RewardOutput(2.0, turn=[1.0], global_reward=1.0).trajectory_level()
        1.0
        """
        if self.global_reward is not None:
            return self.global_reward
        return self.total if self.turn is None else 0.0


class RewardFn(Protocol):
    def __call__(self, trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput: ...


REWARDS: Registry[RewardFn] = Registry("reward")


def message_format(ctx: Mapping[str, Any], default: Callable[[str], bool]) -> Callable[[str], bool]:
    """The grammar a format reward scores one message against: the episode's action
    space's (``ctx["space"]``, which the experience sources pass), else ``default`` (the
    paper's tags, for a reward called on its own).

    >>> message_format({}, str.isupper)("AB")
    True
    """
    space = ctx.get("space")
    return space.format_ok if space is not None else default


def response_format(ctx: Mapping[str, Any], default: Callable[[Sequence[str]], bool]) -> Callable[[Sequence[str]], bool]:
    """:func:`message_format` for a whole response (the space's ``response_format_ok``)."""
    space = ctx.get("space")
    return space.response_format_ok if space is not None else default


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
