"""The policy on a CUDA device: forward passes, generation and bf16 autocast give what
the CPU gives (``-m gpu`` on a lent GPU; skipped elsewhere)."""

from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings, load_tokenizer
from kgreason.models.loading import tiny_causal_lm
from kgreason.rollout import HFEngine

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]


def pair(lora: LoraSettings | None = None, seed: int = 0) -> tuple[CausalLMPolicy, CausalLMPolicy]:
    """The same tiny policy twice, one on the CPU and one on the GPU."""
    cpu = CausalLMPolicy.tiny(lora=lora, seed=seed)
    gpu = CausalLMPolicy.tiny(lora=lora, seed=seed).to("cuda")
    return cpu, gpu


def prompts(policy: CausalLMPolicy) -> list[list[int]]:
    return [policy.chat_ids([{"role": "user", "content": f"question {i}" + " word" * (3 * i)}]) for i in range(3)]


def batch(policy: CausalLMPolicy) -> tuple[torch.Tensor, torch.Tensor]:
    """The prompts left-padded: ids and attention mask ``[3, L]``."""
    rows = prompts(policy)
    width = max(map(len, rows))
    ids = torch.tensor([[policy.tokenizer.pad_token_id] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    return ids, mask


def test_log_probs_entropies_and_reference_on_the_gpu_equal_the_cpus():
    cpu, gpu = pair(LoraSettings(r=4, alpha=8), seed=1)
    with torch.no_grad():  # adapters away from zero, the same on both
        for p_cpu, p_gpu in zip(cpu.model.parameters(), gpu.model.parameters(), strict=True):
            if p_cpu.requires_grad:
                p_cpu.add_(0.1)
                p_gpu.add_(0.1)
    ids, mask = batch(cpu)
    loss_mask = mask.clone()
    loss_mask[:, : ids.shape[1] // 2] = 0
    lp_c, ent_c = cpu.token_logprobs(ids, mask, with_entropy=True, loss_mask=loss_mask)
    lp_g, ent_g = gpu.token_logprobs(ids.cuda(), mask.cuda(), with_entropy=True, loss_mask=loss_mask.cuda())
    assert lp_g.device.type == "cuda" and ent_g.device.type == "cuda"
    torch.testing.assert_close(lp_g.cpu(), lp_c, atol=2e-4, rtol=0)
    torch.testing.assert_close(ent_g.cpu(), ent_c, atol=2e-4, rtol=0)
    ref_c = cpu.reference_logprobs(ids, mask, from_pos=4)
    ref_g = gpu.reference_logprobs(ids.cuda(), mask.cuda(), from_pos=4)
    torch.testing.assert_close(ref_g.cpu(), ref_c, atol=2e-4, rtol=0)
    assert not torch.allclose(ref_c, cpu.token_logprobs(ids, mask, from_pos=4)[0], atol=1e-3)


def test_gradients_reach_the_adapters_on_the_gpu():
    _, gpu = pair(LoraSettings(r=4, alpha=8))
    ids, mask = batch(gpu)
    lp, _ = gpu.token_logprobs(ids.cuda(), mask.cuda())
    lp.sum().backward()
    grads = [p.grad for p in gpu.parameters()]
    assert grads and all(g is not None and g.device.type == "cuda" for g in grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_generation_on_the_gpu_decodes_the_cpus_greedy_tokens():
    cpu, gpu = pair()
    out_c = HFEngine(cpu).generate(prompts(cpu), max_new_tokens=16, greedy=True)
    out_g = HFEngine(gpu).generate(prompts(cpu), max_new_tokens=16, greedy=True)
    assert [g.token_ids for g in out_g] == [g.token_ids for g in out_c]
    for a, b in zip(out_g, out_c, strict=True):  # the log-probs the engine records come back to the host
        assert a.logprobs is not None and max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-3


def test_bf16_auto_is_decided_for_the_device_the_policy_moves_to():
    tok = load_tokenizer()
    policy = CausalLMPolicy(tiny_causal_lm(tok), tok, bf16="auto")
    policy.to("cuda")
    assert policy.bf16 == torch.cuda.is_bf16_supported()
    fixed = CausalLMPolicy(tiny_causal_lm(tok), tok, bf16=False).to("cuda")
    assert fixed.bf16 is False  # a setting given as false stays false on any device


@pytest.mark.skipif(torch.cuda.is_available() and not torch.cuda.is_bf16_supported(), reason="no bf16 on this GPU")
def test_bf16_autocast_on_cuda_multiplies_in_bf16_and_stays_near_float32():
    tok = load_tokenizer()
    fp32 = CausalLMPolicy(tiny_causal_lm(tok, seed=2), tok, bf16=False).to("cuda")
    bf16 = CausalLMPolicy(tiny_causal_lm(tok, seed=2), tok, bf16=True).to("cuda")
    seen: list[torch.dtype] = []
    hook = bf16.model.get_output_embeddings().register_forward_hook(lambda m, a, out: seen.append(out.dtype))
    ids, mask = batch(fp32)
    lp16, _ = bf16.token_logprobs(ids.cuda(), mask.cuda())
    hook.remove()
    lp32, _ = fp32.token_logprobs(ids.cuda(), mask.cuda())
    assert seen == [torch.bfloat16]  # the projection ran under autocast
    assert lp16.dtype == torch.float32  # log-probs are taken in float32 after it
    assert (lp16 - lp32).abs().max() < 0.1
    assert all(p.dtype == torch.float32 for p in bf16.model.parameters())  # weights untouched
