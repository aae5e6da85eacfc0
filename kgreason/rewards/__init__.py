"""Rewards: registered functions ``(trajectory, sample, **ctx) -> RewardOutput`` (design §6, docs/design.md)."""

from kgreason.rewards import isp, kbqa_r1, kg_r1, kg_reasoner, knowcoder, outcome  # noqa: F401 - registers the rewards
from kgreason.rewards.base import REWARDS, RewardOutput, get, register
from kgreason.rewards.composite import Component, CompositeReward

__all__ = ["REWARDS", "Component", "CompositeReward", "RewardOutput", "get", "register"]
