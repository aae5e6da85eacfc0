"""Lightning modules and training data (SPEC §8)."""

from kgreason.training.batching import LengthGroupedBatches, collate
from kgreason.training.cold_start import balance, oracle_sft_trajectories
from kgreason.training.curriculum import CurriculumStream, hop_level
from kgreason.training.decompose import decompose, isp_sft_trajectories
from kgreason.training.rl import JsonlSink, PromptStream, RLConfig, RLLitModule
from kgreason.training.schedules import warmup_cosine
from kgreason.training.sft import SFTLitModule, masked_nll
from kgreason.training.tree_rl import TreeRLLitModule, dtpo_config, step_samples

__all__ = [
    "CurriculumStream", "JsonlSink", "LengthGroupedBatches", "PromptStream", "RLConfig", "RLLitModule", "SFTLitModule",
    "TreeRLLitModule", "balance", "collate", "decompose", "dtpo_config", "hop_level", "isp_sft_trajectories",
    "masked_nll", "oracle_sft_trajectories", "step_samples", "warmup_cosine",
]
