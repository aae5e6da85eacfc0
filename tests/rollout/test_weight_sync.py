"""Engines follow the policy through real optimiser steps: plain, foreach and fused AdamW.

Fused AdamW writes parameters without bumping their in-place version counters, so an
engine keyed on those counters alone kept generating from the old weights; the version
now counts optimiser steps too (:mod:`kgreason.models.version`)."""

from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.models.version import mark_changed, weights_version
from kgreason.rollout import CT2Engine, HFEngine, ORTEngine

pytest.importorskip("ctranslate2")

OPTIMISERS = {"plain": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def greedy(engine, ps):
    return [g.token_ids for g in engine.generate(ps, max_new_tokens=10, greedy=True)]


def one_step(policy: CausalLMPolicy, opt: torch.optim.Optimizer, ps: list[list[int]]) -> None:
    """A real update: raise the log-likelihood of a fixed continuation of each prompt."""
    target = policy.tokenizer(" alpha beta gamma", add_special_tokens=False)["input_ids"]
    ids = torch.tensor([p + target for p in ps[:1]])
    lp, _ = policy.token_logprobs(ids, torch.ones_like(ids), from_pos=len(ps[0]))
    opt.zero_grad()
    (-lp.sum()).backward()
    opt.step()


@pytest.mark.parametrize("kind", list(OPTIMISERS))
def test_engines_generate_from_the_weights_after_every_step(kind):
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=0)
    ps = [policy.chat_ids([{"role": "user", "content": f"question {i}"}]) for i in range(2)]
    opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=0.5, **OPTIMISERS[kind])
    ct2, hf = CT2Engine(policy, compute_type="float32"), HFEngine(policy)
    outputs = [greedy(hf, ps)]
    assert greedy(ct2, ps) == outputs[0]
    for step in range(3):
        version = weights_version(policy.model)
        one_step(policy, opt, ps)
        assert weights_version(policy.model) != version, f"{kind} AdamW step {step} left the version unchanged"
        outputs.append(greedy(hf, ps))
        assert greedy(ct2, ps) == outputs[-1], f"CT2 generated from stale weights after {kind} step {step}"
        assert ct2.syncs == step + 2
    assert len({str(o) for o in outputs}) > 1  # the steps changed what the policy says


@pytest.mark.parametrize("kind", list(OPTIMISERS))
def test_ort_generates_from_the_weights_after_every_step(kind):
    pytest.importorskip("onnxruntime_genai")
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=0)
    ps = [policy.chat_ids([{"role": "user", "content": f"question {i}"}]) for i in range(2)]
    opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=0.5, **OPTIMISERS[kind])
    ort, hf = ORTEngine(policy), HFEngine(policy)
    assert greedy(ort, ps) == greedy(hf, ps)
    for step in range(3):
        one_step(policy, opt, ps)
        assert greedy(ort, ps) == greedy(hf, ps), f"ORT generated from stale weights after {kind} step {step}"
        assert ort.syncs == step + 2


def test_a_write_through_data_is_declared_with_mark_changed():
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=0)
    version = weights_version(policy.model)
    for name, p in policy.model.named_parameters():
        if "lora_B" in name:
            p.data.copy_(torch.randn_like(p))  # no counter sees this
    assert weights_version(policy.model) == version
    mark_changed(policy.model)
    assert weights_version(policy.model) != version
