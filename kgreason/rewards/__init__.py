"""Rewards: registered functions ``(trajectory, sample, **ctx) -> RewardOutput`` (design §6, docs/design.md).

The outcome rewards (``f1``, ``em``, ``hit``, ``fbeta``, ``llm_judge``) live here; a
method's own rewards live in its package and register themselves; :data:`REWARDS` finds
them on first look-up.
"""

from kgreason.rewards import outcome  # noqa: F401 - registers the outcome rewards
from kgreason.rewards.base import REWARDS, RewardOutput, get, register
from kgreason.rewards.composite import Component, CompositeReward

__all__ = ["REWARDS", "Component", "CompositeReward", "RewardOutput", "get", "register"]
