"""The key/value cache goes by the name the installed transformers takes: decoding with a
shared prefix, a kept cache and bucketed prefill, and the shared-prefix log-prob pass,
raise no deprecation of the cache's old name."""

from __future__ import annotations

import logging
import warnings

import torch
from transformers import DynamicCache

from kgreason.models import CausalLMPolicy
from kgreason.models.compat import cache_keyword, cache_kwargs, output_cache
from kgreason.rollout import HFEngine


def test_forward_takes_and_returns_the_cache_by_its_current_name():
    pol = CausalLMPolicy.tiny(seed=0)
    cache = DynamicCache()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pol.model(input_ids=torch.tensor([[5, 6, 7]]), use_cache=True, **cache_kwargs(cache))
    assert output_cache(out) is cache and cache.get_seq_length() == 3
    assert cache_keyword() in ("cache", "past_key_values")


def test_generation_and_log_probs_warn_about_no_cache_name():
    pol = CausalLMPolicy.tiny(seed=0)
    shared = [pol.tokenizer.eos_token_id or 1] * 40  # > share_prefix: encoded once for all rows
    prompts = [shared + [5, 6], shared + [7, 8, 9], shared + [10]]
    logged: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: logged.append(record.getMessage())
    logging.getLogger("transformers").addHandler(handler)  # the old output field logs, once
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eng = HFEngine(pol, compact_every=4)
        first = eng.generate(prompts, max_new_tokens=8, greedy=True)
        eng.generate([p + g.token_ids for p, g in zip(prompts, first, strict=True)], max_new_tokens=8, greedy=True)
        ids = torch.tensor([p[:41] for p in prompts])
        pol.token_logprobs(ids, torch.ones_like(ids), from_pos=41)
    logging.getLogger("transformers").removeHandler(handler)
    said = [str(w.message) for w in caught] + logged
    named = [m for m in said if "past_key_values" in m or "cache_params" in m]
    assert not named, named
    assert eng.reused_tokens > 0  # the second turn continued the kept cache
