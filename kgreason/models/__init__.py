"""Policies and offline model loading."""

from kgreason.models.loading import ModelUnavailable, load_causal_lm, load_tokenizer, tiny_causal_lm
from kgreason.models.policy import CausalLMPolicy, LoraSettings
from kgreason.models.precision import bf16_is_fast, resolve_bf16
from kgreason.models.protocol import Policy, TrainablePolicy, check_policy

__all__ = ["CausalLMPolicy", "LoraSettings", "ModelUnavailable", "Policy", "TrainablePolicy", "bf16_is_fast",
           "check_policy", "load_causal_lm", "load_tokenizer", "resolve_bf16", "tiny_causal_lm"]
