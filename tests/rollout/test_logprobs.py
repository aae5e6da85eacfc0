"""Engines return the log-prob of each token they generated, under the distribution they
sampled from; in float32 it is the trainer's own forward pass, within 1e-4."""

from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rollout import CT2Engine, HFEngine
from kgreason.rollout.engine import Generation, finish_generation

LORA = LoraSettings(r=4, alpha=8)


def nudged_policy() -> CausalLMPolicy:
    """A tiny LoRA policy whose adapters matter (B != 0), as after training."""
    policy = CausalLMPolicy.tiny(lora=LORA, seed=0)
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)
    return policy


def prompts(policy: CausalLMPolicy, n: int) -> list[list[int]]:
    return [policy.chat_ids([{"role": "user", "content": f"question {i}" + " more" * (3 * i)}]) for i in range(n)]


def trainer_logprobs(policy: CausalLMPolicy, prompt: list[int], gen: Generation, temperature: float) -> list[float]:
    ids = torch.tensor([list(prompt) + gen.token_ids])
    lp, _ = policy.token_logprobs(ids, torch.ones_like(ids), from_pos=len(prompt), temperature=temperature)
    return lp[0, len(prompt):].tolist()


def assert_trainer_agrees(policy, ps, gens, temperature, atol=1e-4):
    for p, g in zip(ps, gens, strict=True):
        assert g.logprobs is not None and len(g.logprobs) == len(g.token_ids) > 0
        ref = trainer_logprobs(policy, p, g, temperature)
        assert max(abs(a - b) for a, b in zip(g.logprobs, ref, strict=True)) < atol, (g.logprobs, ref)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_hf_engine_logprobs_are_the_trainers_in_float32(temperature):
    torch.manual_seed(0)
    policy = nudged_policy()
    ps = prompts(policy, 3)  # different lengths: left padding, a shared prefix
    engine = HFEngine(policy, temperature=temperature, compact_every=4)  # rounds: rows leave the batch
    gens = engine.generate(ps, stop=["e"], max_new_tokens=12)
    assert_trainer_agrees(policy, ps, gens, temperature)
    # the next turn continues the kept KV cache: log-probs still the trainer's
    turn2 = [p + g.token_ids + policy.tokenizer(" ok", add_special_tokens=False)["input_ids"]
             for p, g in zip(ps, gens, strict=True)]
    gens2 = engine.generate(turn2, max_new_tokens=8)
    assert engine.reused_tokens > 0
    assert_trainer_agrees(policy, turn2, gens2, temperature)


def test_greedy_logprobs_are_at_temperature_one():
    policy = nudged_policy()
    ps = prompts(policy, 2)
    gens = HFEngine(policy, temperature=0.5).generate(ps, max_new_tokens=8, greedy=True)
    assert_trainer_agrees(policy, ps, gens, 1.0)


def test_ct2_float32_logprobs_are_the_trainers():
    pytest.importorskip("ctranslate2")
    torch.manual_seed(0)
    policy = nudged_policy()
    ps = prompts(policy, 3)
    gens = CT2Engine(policy, compute_type="float32").generate(ps, stop=["e"], max_new_tokens=12)
    assert_trainer_agrees(policy, ps, gens, 1.0)
    # at another temperature CTranslate2 reports none: the trainer recomputes them
    hot = CT2Engine(policy, compute_type="float32", temperature=0.7).generate(ps, max_new_tokens=4)
    assert all(g.logprobs is None for g in hot)


def test_ct2_int8_logprobs_differ_from_the_float32_trainer():
    pytest.importorskip("ctranslate2")
    torch.manual_seed(0)
    policy = nudged_policy()
    ps = prompts(policy, 3)
    gens = CT2Engine(policy, compute_type="int8").generate(ps, max_new_tokens=12)
    gaps = [abs(a - b) for p, g in zip(ps, gens, strict=True)
            for a, b in zip(g.logprobs, trainer_logprobs(policy, p, g, 1.0), strict=True)]
    assert max(gaps) > 1e-3  # int8 weights: another policy, which the RL update corrects for


def test_logprobs_are_cut_with_the_tokens():
    tok = CausalLMPolicy.tiny().tokenizer
    ids = tok("alpha beta gamma", add_special_tokens=False)["input_ids"]
    g = finish_generation(tok, ids, ["beta"], 32, logprobs=[-0.1 * (i + 1) for i in range(len(ids))])
    assert g.finish == "stop" and len(g.logprobs) == len(g.token_ids) < len(ids)
    with pytest.raises(ValueError, match="log-probs for"):
        finish_generation(tok, ids, [], 32, logprobs=[-0.1])
