"""Activation checkpointing (``model.policy.activation_checkpointing``): the same gradients
from fewer saved tensors."""

from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings


def grads_and_saved(checkpointing: bool, lora: LoraSettings | None) -> tuple[dict[str, torch.Tensor], int]:
    # layers' activations outweigh the logits here (few loss positions, six layers)
    policy = CausalLMPolicy.tiny(lora=lora, seed=0, hidden=128, layers=6)
    if checkpointing:  # as from_pretrained(activation_checkpointing=True) builds it
        policy = CausalLMPolicy(policy.model, policy.tokenizer, bf16=False, activation_checkpointing=True)
    policy.model.train()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(10, 400, (3, 200), generator=gen)
    ids[:, :100] = ids[0, :100]  # a shared prompt: the prefix path when it is on
    mask = torch.ones_like(ids)
    loss_mask = torch.zeros(3, 200)
    loss_mask[:, 195:] = 1
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logp, _ = policy.token_logprobs(ids, mask, from_pos=195, loss_mask=loss_mask)
    (-(logp * loss_mask).sum()).backward()
    params = {p.untyped_storage().data_ptr() for p in policy.model.parameters()}
    grads = {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.requires_grad}
    return grads, sum(v for k, v in saved.items() if k not in params)


@pytest.mark.parametrize("lora", [None, LoraSettings(r=4, alpha=8)], ids=["full", "lora"])
def test_checkpointing_gives_the_same_gradients_from_fewer_saved_tensors(lora):
    plain, plain_saved = grads_and_saved(False, lora)
    ckpt, ckpt_saved = grads_and_saved(True, lora)
    assert plain.keys() == ckpt.keys() and plain
    for k in plain:
        torch.testing.assert_close(ckpt[k], plain[k], rtol=1e-4, atol=1e-6, msg=k)
    assert ckpt_saved < 0.6 * plain_saved, (ckpt_saved, plain_saved)
