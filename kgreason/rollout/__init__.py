"""Generation engines and rollouts (SPEC §8)."""

from kgreason.rollout.engine import Engine, Generation, HFEngine, VLLMEngine
from kgreason.rollout.multiturn import MultiTurnRollout, RolloutStats

__all__ = ["Engine", "Generation", "HFEngine", "MultiTurnRollout", "RolloutStats", "VLLMEngine"]
