"""Cold-start data and multi-turn SFT on the tiny model."""

from __future__ import annotations

import functools

import lightning as L
import torch
from torch.utils.data import DataLoader

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.models import CausalLMPolicy
from kgreason.training import SFTLitModule, collate, masked_nll


def test_oracle_sft_data_masks_only_policy_text(demo_oxigraph):
    pol = CausalLMPolicy.tiny()
    qs = load_dataset("demo", split="train")[:20]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                    pol.chat_ids, pol.tokenizer)
    assert len(trajs) >= 10
    t = trajs[0]
    policy_text = pol.tokenizer.decode([i for i, m in zip(t.token_ids, t.loss_mask, strict=True) if m])
    assert "<kg-query>" in policy_text or "<answer>" in policy_text
    assert "<information>" not in policy_text and "You are a helpful assistant" not in policy_text
    batch = collate(trajs, pol.tokenizer.pad_token_id, max_len=64)
    assert batch["input_ids"].shape[1] == 64 and int(batch["truncated"]) > 0
    assert torch.equal(batch["attention_mask"].sum(1), torch.tensor([min(len(x.token_ids), 64) for x in trajs]))


def test_sft_lowers_the_loss_on_policy_tokens(demo_oxigraph):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    qs = load_dataset("demo", split="train")[:8]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                    pol.chat_ids, pol.tokenizer)
    batch = collate(trajs, pol.tokenizer.pad_token_id, max_len=512)
    assert batch["loss_mask"].sum() > 100  # the cut keeps policy tokens to learn from
    before = masked_nll(pol, batch).item()
    loader = DataLoader(trajs, batch_size=4, shuffle=True,
                        collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id, max_len=512))
    trainer = L.Trainer(max_steps=20, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(SFTLitModule(pol, lr=3e-3), loader)
    after = masked_nll(pol, batch).item()
    assert after < 0.6 * before, (before, after)


def test_turn_opening_weights_mark_the_first_words_of_every_thought(demo_oxigraph):
    from kgreason.training.sft import turn_opening_weights

    pol = CausalLMPolicy.tiny()
    q = next(s for s in load_dataset("demo", split="train") if s.meta["qtype"] == "2-hop")
    (t,) = oracle_sft_trajectories([q], lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                   pol.chat_ids, pol.tokenizer)
    batch = collate([t], pol.tokenizer.pad_token_id)
    skip = len(pol.tokenizer("<think>", add_special_tokens=False)["input_ids"])
    w = turn_opening_weights(batch["loss_mask"], skip=skip, n_tokens=2, weight=5.0)
    marked = (w[0] == 5.0).nonzero().flatten().tolist()
    assert len(marked) == 2 * len(t.turns)  # two tokens in every policy turn, none elsewhere
    assert all(batch["loss_mask"][0, i] == 1 for i in marked)
    openings = [pol.tokenizer.decode(batch["input_ids"][0, i : i + 2]) for i in marked[::2]]
    thoughts = [turn.text.removeprefix("<think>") for turn in t.turns]
    assert all(th.startswith(o) for th, o in zip(thoughts, openings, strict=True)), openings
    # the weighted loss is the weighted mean of the token NLLs
    lp, _ = pol.token_logprobs(batch["input_ids"], batch["attention_mask"])
    m = batch["loss_mask"]
    manual = -(lp * w * m).sum() / (w * m).sum()
    assert torch.allclose(masked_nll(pol, batch, w), manual, atol=1e-5)
    assert not torch.allclose(masked_nll(pol, batch, w), masked_nll(pol, batch), atol=1e-4)


def test_a_model_loaded_in_eval_mode_trains_in_train_mode(demo_oxigraph, recwarn):
    # transformers' from_pretrained returns eval mode; Lightning would train it so, and warn
    pol = CausalLMPolicy.tiny()
    pol.model.eval()
    qs = load_dataset("demo", split="train")[:4]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                    pol.chat_ids, pol.tokenizer)
    loader = DataLoader(trajs, batch_size=2, collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id,
                                                                          max_len=256))
    modes = []

    class Probe(SFTLitModule):
        def training_step(self, batch, batch_idx):
            modes.append(self.model.training)
            return super().training_step(batch, batch_idx)

    trainer = L.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Probe(pol, lr=1e-3), loader)
    assert modes == [True]
    assert not [w for w in recwarn if "eval mode" in str(w.message)]


def test_bf16_sft_multiplies_in_bf16_and_leaves_the_weights_float32(demo_oxigraph):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    assert not pol.bf16
    qs = load_dataset("demo", split="train")[:8]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                    pol.chat_ids, pol.tokenizer)
    batch = collate(trajs, pol.tokenizer.pad_token_id, max_len=512)
    before = masked_nll(pol, batch).item()
    seen: list[torch.dtype] = []
    proj = pol.model.get_decoder().layers[0].mlp.down_proj
    hook = proj.register_forward_hook(lambda mod, args, out: seen.append(out.dtype))
    loader = DataLoader(trajs, batch_size=4, shuffle=True,
                        collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id, max_len=512))
    trainer = L.Trainer(max_steps=20, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(SFTLitModule(pol, lr=3e-3, bf16=True), loader)
    assert len(seen) >= 20 and set(seen) == {torch.bfloat16}  # every training pass multiplied in bf16
    masked_nll(pol, batch)  # outside training: the policy's own precision
    hook.remove()
    assert seen[-1] == torch.float32
    assert all(p.dtype == torch.float32 for p in pol.model.parameters())
    assert masked_nll(pol, batch).item() < 0.6 * before  # and it learned
