"""Lightning modules and training data (design §8, docs/design.md)."""

from kgreason.training.batching import LengthGroupedBatches, collate
from kgreason.training.cold_start import (
    ColdStart,
    DecomposedColdStart,
    NoColdStart,
    OracleColdStart,
    ReferencedRejectionSampledColdStart,
    RejectionSampledColdStart,
    balance,
    episode_tokens,
    grounded,
    oracle_sft_trajectories,
)
from kgreason.training.cost import StageCost
from kgreason.training.curriculum import CurriculumStream, hop_level, sample_hops
from kgreason.training.decompose import decompose, isp_sft_trajectories
from kgreason.training.distributed import leave_process_group, rank_and_world
from kgreason.training.experience import (
    Experience,
    ExperienceSource,
    LinearExperience,
    TreeExperience,
    filter_groups,
    node_rewards,
    step_sample,
)
from kgreason.training.hard_cases import HardCaseStream, annotate_sft_losses, hard_cases
from kgreason.training.lengths import LengthFit, length_fit
from kgreason.training.rl import JsonlSink, PromptStream, RLConfig, RLLitModule
from kgreason.training.schedules import warmup_cosine
from kgreason.training.sft import SFTLitModule, masked_nll

__all__ = [
    "ColdStart", "CurriculumStream", "HardCaseStream", "annotate_sft_losses", "hard_cases", "sample_hops", "DecomposedColdStart", "Experience", "ExperienceSource", "JsonlSink",
    "LengthFit", "LengthGroupedBatches", "length_fit", "LinearExperience", "NoColdStart", "OracleColdStart", "PromptStream", "RLConfig", "ReferencedRejectionSampledColdStart", "RejectionSampledColdStart",
    "RLLitModule", "SFTLitModule", "StageCost", "TreeExperience", "balance", "collate", "decompose", "episode_tokens", "filter_groups", "grounded", "hop_level",
    "isp_sft_trajectories", "leave_process_group", "rank_and_world", "masked_nll", "node_rewards", "oracle_sft_trajectories", "step_sample", "warmup_cosine",
]
