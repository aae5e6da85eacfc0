"""Lightning modules and training data (design §8, docs/design.md).

Names load from their modules on first use, so importing one part does not import
the others (a config check imports the classes it judges).
"""

from kgreason.registry import lazy_exports

#: public name → the module that defines it
_EXPORTS = {
    "ColdStart": "kgreason.training.cold_start",
    "StagedStream": "kgreason.training.curriculum",
    "Experience": "kgreason.training.experience",
    "ExperienceSource": "kgreason.training.experience",
    "HardCasesStream": "kgreason.training.hard_cases",
    "JsonlSink": "kgreason.training.rl",
    "LengthFit": "kgreason.training.lengths",
    "LengthGroupedBatches": "kgreason.training.batching",
    "LinearExperience": "kgreason.training.experience",
    "NoColdStart": "kgreason.training.cold_start",
    "UniformStream": "kgreason.training.rl",
    "RLConfig": "kgreason.training.rl",
    "RLLitModule": "kgreason.training.rl",
    "RejectionSampledColdStart": "kgreason.training.cold_start",
    "SFTLitModule": "kgreason.training.sft",
    "StageCost": "kgreason.training.cost",
    "TrainingBatch": "kgreason.training.batching",
    "TreeExperience": "kgreason.training.experience",
    "annotate_sft_losses": "kgreason.training.hard_cases",
    "balance": "kgreason.training.cold_start",
    "collate": "kgreason.training.batching",
    "episode_tokens": "kgreason.training.cold_start",
    "filter_groups": "kgreason.training.experience",
    "grounded": "kgreason.training.cold_start",
    "select_hard_cases": "kgreason.training.hard_cases",
    "hop_level": "kgreason.training.curriculum",
    "leave_process_group": "kgreason.training.distributed",
    "length_fit": "kgreason.training.lengths",
    "masked_nll": "kgreason.training.sft",
    "node_rewards": "kgreason.training.experience",
    "rank_and_world": "kgreason.training.distributed",
    "share_cpu_threads": "kgreason.training.distributed",
    "sample_hops": "kgreason.training.curriculum",
    "step_sample": "kgreason.training.experience",
    "warmup_cosine": "kgreason.training.schedules",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
