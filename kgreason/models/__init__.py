"""Policies and offline model loading."""

from kgreason.models.loading import ModelUnavailable, load_causal_lm, load_tokenizer, tiny_causal_lm
from kgreason.models.policy import CausalLMPolicy, LoraSettings
from kgreason.models.precision import bf16_is_fast, resolve_bf16

__all__ = ["CausalLMPolicy", "LoraSettings", "ModelUnavailable", "bf16_is_fast", "load_causal_lm", "load_tokenizer",
           "resolve_bf16", "tiny_causal_lm"]
