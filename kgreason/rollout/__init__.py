"""Generation engines and rollouts (design §8, docs/design.md)."""

from kgreason.rollout.ct2 import CT2Engine
from kgreason.rollout.engine import Engine, Generation, HFEngine
from kgreason.rollout.multiturn import MultiTurnRollout, RolloutStats
from kgreason.rollout.openai import OpenAIEngine
from kgreason.rollout.ort import ORTEngine
from kgreason.rollout.tree import Tree, TreeNode, TreeRollout, TreeStats
from kgreason.rollout.vllm import VLLMEngine

__all__ = ["CT2Engine", "Engine", "Generation", "HFEngine", "MultiTurnRollout", "OpenAIEngine", "ORTEngine",
           "RolloutStats", "Tree", "TreeNode",
           "TreeRollout", "TreeStats", "VLLMEngine"]
