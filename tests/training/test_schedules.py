"""The SFT learning-rate schedule, as a function and inside the Lightning module."""

from __future__ import annotations

import functools

import lightning as L
import pytest
from torch.utils.data import DataLoader

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.models import CausalLMPolicy
from kgreason.training import SFTLitModule, collate, warmup_cosine


def test_warmup_cosine_rises_linearly_then_decays_to_final():
    f = warmup_cosine(total_steps=6, warmup_steps=2, final=0.2)
    # warm-up 1/3, 2/3; decay over 4 steps: cos at 0, 1/4, 1/2, 3/4 of π, then the floor
    expected = [1 / 3, 2 / 3, 1.0, 0.2 + 0.8 * (1 + 2 ** -0.5) / 2, 0.6, 0.2 + 0.8 * (1 - 2 ** -0.5) / 2, 0.2, 0.2]
    assert [f(s) for s in range(8)] == pytest.approx(expected)


@pytest.mark.parametrize("total, warmup", [(0, 0), (4, 4), (4, -1)])
def test_warmup_cosine_rejects_a_warmup_that_does_not_fit(total, warmup):
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_cosine(total, warmup)


class _LrTrace(L.Callback):
    def __init__(self):
        self.lrs: list[float] = []

    def on_train_batch_start(self, trainer, module, batch, batch_idx):
        self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])


def _lrs_seen(kb, n_questions: int, steps: int, **module_kw) -> list[float]:
    """The learning rate of each of ``steps`` SFT steps of the tiny model on demo oracle episodes."""
    pol = CausalLMPolicy.tiny(seed=1)
    qs = load_dataset("demo", split="train")[:n_questions]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", kb, max_turns=10), pol.chat_ids, pol.tokenizer)
    loader = DataLoader(trajs, batch_size=2, collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id,
                                                                            max_len=128))
    trace = _LrTrace()
    L.Trainer(max_steps=steps, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False, callbacks=[trace]).fit(SFTLitModule(pol, lr=1e-3, **module_kw), loader)
    return trace.lrs


def test_sft_module_steps_the_schedule_once_per_optimizer_step(demo_oxigraph):
    schedule = warmup_cosine(total_steps=5, warmup_steps=1)
    lrs = _lrs_seen(demo_oxigraph, 6, 5, lr_lambda=schedule)
    assert lrs == pytest.approx([1e-3 * schedule(s) for s in range(5)])
    assert lrs[1] == pytest.approx(1e-3) and lrs[-1] < 0.2e-3


def test_sft_module_without_a_schedule_keeps_the_rate(demo_oxigraph):
    assert _lrs_seen(demo_oxigraph, 4, 3) == pytest.approx([1e-3] * 3)
