"""Policies and offline model loading."""

from kgreason.models.loading import ModelUnavailable, load_causal_lm, load_tokenizer, tiny_causal_lm
from kgreason.models.policy import CausalLMPolicy, LoraSettings

__all__ = ["CausalLMPolicy", "LoraSettings", "ModelUnavailable", "load_causal_lm", "load_tokenizer",
           "tiny_causal_lm"]
