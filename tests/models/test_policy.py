from __future__ import annotations

import pytest
import torch

from kgreason.models import CausalLMPolicy, LoraSettings


@pytest.fixture(scope="module")
def tiny():
    return CausalLMPolicy.tiny(seed=0)


def test_chat_ids_end_at_assistant_turn(tiny):
    ids = tiny.chat_ids([{"role": "user", "content": "hello"}])
    assert tiny.tokenizer.decode(ids).endswith("<|im_start|>assistant\n")


def test_token_logprobs_match_a_manual_softmax(tiny):
    ids = torch.tensor([tiny.chat_ids([{"role": "user", "content": "a b c"}])])
    lp, ent = tiny.token_logprobs(ids, torch.ones_like(ids), with_entropy=True)
    logits = tiny.model(input_ids=ids).logits[0, :-1]
    manual = torch.log_softmax(logits, -1)[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    assert lp.shape == ids.shape and lp[0, 0] == 0
    assert torch.allclose(lp[0, 1:], manual, atol=1e-5)
    assert (ent[0, 1:] > 0).all()


def test_lora_reference_is_the_base_model():
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=1)
    ids = torch.tensor([pol.chat_ids([{"role": "user", "content": "x"}])])
    mask = torch.ones_like(ids)
    ref0 = pol.reference_logprobs(ids, mask)
    assert torch.allclose(ref0, pol.token_logprobs(ids, mask)[0], atol=1e-6)  # LoRA B starts at 0
    with torch.no_grad():
        for n, p in pol.model.named_parameters():
            if "lora_B" in n:
                p.add_(0.5)
    assert not torch.allclose(pol.token_logprobs(ids, mask)[0], ref0, atol=1e-4)
    assert torch.allclose(pol.reference_logprobs(ids, mask), ref0, atol=1e-6)
    assert all("lora" in n for n, p in pol.model.named_parameters() if p.requires_grad)


def test_full_finetune_reference_is_a_frozen_copy(tiny):
    ids = torch.tensor([tiny.chat_ids([{"role": "user", "content": "y"}])])
    mask = torch.ones_like(ids)
    ref0 = tiny.reference_logprobs(ids, mask)
    with torch.no_grad():
        next(tiny.model.parameters()).add_(0.1)
    assert torch.allclose(tiny.reference_logprobs(ids, mask), ref0)


def test_real_smollm2_lora_keeps_bf16_base_and_fp32_adapters():
    pol = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=4, alpha=8), bf16=True)
    trainable = {p.dtype for p in pol.parameters()}
    frozen = {p.dtype for p in pol.model.parameters() if not p.requires_grad}
    assert trainable == {torch.float32} and frozen == {torch.bfloat16}
    ids = torch.tensor([pol.chat_ids([{"role": "user", "content": "What is the capital of France?"}])])
    lp, _ = pol.token_logprobs(ids, torch.ones_like(ids))
    lp[0, -5:].sum().backward()
    assert all(p.grad is not None for p in pol.parameters())


def test_merge_lora_makes_the_current_policy_the_reference_and_checkpoints_round_trip():
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=2)
    ids = torch.tensor([pol.chat_ids([{"role": "user", "content": "z"}])])
    mask = torch.ones_like(ids)
    pol.merge_lora()  # untrained adapters: nothing to fold, no entry in the checkpoint stack
    assert pol.merged_adapters == []
    with torch.no_grad():
        for n, p in pol.model.named_parameters():
            if "lora_B" in n:
                p.add_(0.3)
    sft = pol.token_logprobs(ids, mask)[0]
    pol.merge_lora()
    assert torch.allclose(pol.token_logprobs(ids, mask)[0], sft, atol=1e-4)
    assert torch.allclose(pol.reference_logprobs(ids, mask), sft, atol=1e-4)  # reference = SFT policy
    with torch.no_grad():
        for n, p in pol.model.named_parameters():
            if "lora_B" in n:
                p.add_(0.2)
    final = pol.token_logprobs(ids, mask)[0]
    fresh = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=2)
    fresh.load_checkpoint_state(pol.checkpoint_state())
    assert torch.allclose(fresh.token_logprobs(ids, mask)[0], final, atol=1e-4)


def test_detached_chunked_entropy_equals_the_graph_one(tiny):
    ids = torch.tensor([tiny.chat_ids([{"role": "user", "content": "entropy " * 200}])])
    mask = torch.ones_like(ids)
    _, e1 = tiny.token_logprobs(ids, mask, with_entropy=True)
    _, e2 = tiny.token_logprobs(ids, mask, with_entropy=True, entropy_grad=False)
    assert ids.shape[1] > 128 and torch.allclose(e1, e2, atol=1e-5) and not e2.requires_grad


def test_from_pos_skips_the_prefix_and_keeps_later_logprobs(tiny):
    ids = torch.tensor([tiny.chat_ids([{"role": "user", "content": "one two three four five"}])] * 2)
    attn = torch.ones_like(ids)
    full, ent_full = tiny.token_logprobs(ids, attn, with_entropy=True)
    part, ent_part = tiny.token_logprobs(ids, attn, with_entropy=True, from_pos=7)
    assert part.shape == full.shape and (part[:, :7] == 0).all() and (ent_part[:, :7] == 0).all()
    assert torch.allclose(part[:, 7:], full[:, 7:], atol=1e-5)
    assert torch.allclose(ent_part[:, 7:], ent_full[:, 7:], atol=1e-5)


def test_first_loss_position_is_the_earliest_column_any_row_trains_on():
    from kgreason.models.policy import first_loss_position

    mask = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 1, 1, 0]])
    assert first_loss_position(mask) == 2
    assert first_loss_position(torch.zeros(2, 4)) == 1


def test_lora_top_layers_adapts_only_the_last_layers():
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, top_layers=1), seed=2)
    n = pol.model.config.num_hidden_layers
    adapted = {name.split(".layers.")[1].split(".")[0] for name, p in pol.model.named_parameters()
               if p.requires_grad}
    assert adapted == {str(n - 1)}
    with pytest.raises(ValueError, match="top_layers"):
        CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8, top_layers=n + 1))


def _adapted_tiny(seed: int) -> CausalLMPolicy:
    pol = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in pol.model.named_parameters():
            if "lora_B" in name:  # non-zero adapters: gradients then reach the shared prefix's keys
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    return pol


def _logprobs_and_grads(pol: CausalLMPolicy, ids, attn, from_pos: int, loss_mask=None, weight=None):
    """Log-probs, entropies and the gradients of their (``weight``-ed) sum."""
    params = list(pol.parameters())
    for p in params:
        p.grad = None
    lp, ent = pol.token_logprobs(ids, attn, with_entropy=True, from_pos=from_pos, loss_mask=loss_mask)
    weight = torch.ones_like(lp) if weight is None else weight.float()
    ((lp * weight).sum() + (ent * weight).sum()).backward()
    return lp.detach(), ent.detach(), [p.grad.clone() for p in params]


def _shared_prompt(pol: CausalLMPolicy) -> list[int]:
    """A chat prompt long enough for the shared-prefix pass (≥ 40 tokens)."""
    return pol.chat_ids([{"role": "system", "content": "shared instructions " * 12}, {"role": "user", "content": "q"}])


def _right_padded(rows: list[list[int]]) -> torch.Tensor:
    """``rows`` as one tensor, each filled with 0 on the right to the longest."""
    width = max(map(len, rows))
    return torch.tensor([r + [0] * (width - len(r)) for r in rows])


def _two_turn_batch(pol: CausalLMPolicy):
    """Three padded rows sharing a long prompt; each has two policy turns around an
    observation (the loss mask marks the turns)."""
    prefix = _shared_prompt(pol)
    rows, masks = [], []
    for turn, obs, turn2 in (("alpha beta", "seen seen seen", "gamma"), ("one", "an observation here", "two three"),
                             ("x y z", "o", "w v u t")):
        parts = [(prefix, 0), (pol.tokenizer.encode(turn), 1), (pol.tokenizer.encode(obs), 0),
                 (pol.tokenizer.encode(turn2), 1)]
        rows.append([t for p, _ in parts for t in p])
        masks.append([m for p, m in parts for _ in p])
    ids, attn = _right_padded(rows), _right_padded([[1] * len(r) for r in rows])
    return ids, attn, _right_padded(masks), len(prefix)


@pytest.mark.parametrize("share", [0, 8])
def test_loss_mask_projects_only_the_marked_tokens_with_the_same_values_and_gradients(share):
    pol = _adapted_tiny(seed=5)
    pol.share_prefix = share
    ids, attn, loss_mask, n_prefix = _two_turn_batch(pol)
    from_pos = n_prefix
    full = _logprobs_and_grads(pol, ids, attn, from_pos, weight=loss_mask)
    masked = _logprobs_and_grads(pol, ids, attn, from_pos, loss_mask=loss_mask, weight=loss_mask)
    on = loss_mask.bool()
    assert 0 < on.sum() < attn.sum() - 3 * n_prefix  # observations are left out
    assert (masked[0][~on] == 0).all() and (masked[1][~on] == 0).all()
    assert (masked[0][on] < 0).all()
    assert torch.allclose(masked[0][on], full[0][on], atol=1e-5)
    assert torch.allclose(masked[1][on], full[1][on], atol=1e-4)
    assert any(g.abs().sum() > 0 for g in full[2])
    for a, b in zip(full[2], masked[2], strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_loss_mask_reference_logprobs_match_the_full_projection():
    pol = _adapted_tiny(seed=6)
    ids, attn, loss_mask, n_prefix = _two_turn_batch(pol)
    on = loss_mask.bool()
    full = pol.reference_logprobs(ids, attn, from_pos=n_prefix)
    masked = pol.reference_logprobs(ids, attn, from_pos=n_prefix, loss_mask=loss_mask)
    assert torch.allclose(masked[on], full[on], atol=1e-5) and (masked[~on] == 0).all()
    assert not torch.allclose(masked[on], pol.token_logprobs(ids, attn, loss_mask=loss_mask)[0][on], atol=1e-4)


def test_a_model_whose_logits_are_transformed_keeps_the_full_forward_pass():
    from kgreason.models.policy import _plain_head

    pol = CausalLMPolicy.tiny(seed=7)
    ids, attn, loss_mask, n_prefix = _two_turn_batch(pol)
    assert _plain_head(pol.model) is not None
    pol.model.config.logit_scale = 0.5  # Cohere-style scaling after lm_head: must not be skipped
    try:
        assert _plain_head(pol.model) is None
        lp, _ = pol.token_logprobs(ids, attn, from_pos=n_prefix, loss_mask=loss_mask)
        assert torch.allclose(lp, pol.token_logprobs(ids, attn, from_pos=n_prefix)[0])
    finally:
        pol.model.config.logit_scale = None


def test_shared_prefix_pass_gives_the_same_logprobs_entropy_and_gradients():
    pol = _adapted_tiny(seed=3)
    prefix = _shared_prompt(pol)
    rows = [prefix + pol.tokenizer.encode(t) for t in ("alpha beta gamma delta", "one two", "x y z w v u")]
    ids, attn = _right_padded(rows), _right_padded([[1] * len(r) for r in rows])
    from_pos = len(prefix) + 1
    pol.share_prefix = 0
    plain = _logprobs_and_grads(pol, ids, attn, from_pos)
    pol.share_prefix = 8
    shared = _logprobs_and_grads(pol, ids, attn, from_pos)
    valid = attn.bool()
    assert len(prefix) >= 40 and plain[2] and any(g.abs().sum() > 0 for g in plain[2])
    assert torch.allclose(plain[0][valid], shared[0][valid], atol=1e-5)
    assert torch.allclose(plain[1][valid], shared[1][valid], atol=1e-4)
    for a, b in zip(plain[2], shared[2], strict=True):
        assert torch.allclose(a, b, atol=1e-5, rtol=1e-4)


def test_shared_prefix_len_stops_at_the_first_difference_or_pad():
    from kgreason.models.policy import shared_prefix_len

    ids = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 9], [1, 2, 3, 4]])
    assert shared_prefix_len(ids, torch.ones_like(ids)) == 3
    assert shared_prefix_len(ids, torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1]])) == 2
    assert shared_prefix_len(ids[:1], torch.ones_like(ids[:1])) == 4
