"""Lightning modules and training data (SPEC §8)."""

from kgreason.training.batching import collate
from kgreason.training.cold_start import balance, oracle_sft_trajectories
from kgreason.training.rl import JsonlSink, PromptStream, RLConfig, RLLitModule
from kgreason.training.sft import SFTLitModule, masked_nll

__all__ = ["JsonlSink", "PromptStream", "RLConfig", "RLLitModule", "SFTLitModule", "balance", "collate", "masked_nll",
           "oracle_sft_trajectories"]
