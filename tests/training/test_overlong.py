"""Episodes the response budget ended: kept with their reward (the papers) or masked out of
the loss while still in their group's baseline (DAPO's overlong filtering)."""

from __future__ import annotations

import pytest
import torch

from kgreason import rewards
from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine
from kgreason.training import LinearExperience


def collect(kb, overlong: str):
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(seed=0)
    # 12 tokens a turn, 20 an episode: every episode still playing at its second turn runs out
    source = LinearExperience.build(HFEngine(policy), policy, rewards.get("kg_r1"), max_new_tokens=12,
                                    n_rollouts=2, max_response_tokens=20, overlong=overlong)
    return source.collect(load_dataset("demo", split="train")[:2], lambda: make_env("kg_r1", kb, max_turns=3), 0)


def test_mask_keeps_the_reward_and_drops_the_loss(demo_oxigraph):
    kept, masked = collect(demo_oxigraph, "keep"), collect(demo_oxigraph, "mask")
    cut = [i for i, t in enumerate(kept.samples) if t.meta.get("truncated")]
    assert cut, "no episode reached the response budget"
    assert kept.logs["train/out_of_budget"] == masked.logs["train/out_of_budget"] == len(cut) / len(kept.samples)
    for i, (a, b) in enumerate(zip(kept.samples, masked.samples, strict=True)):
        assert a.token_ids == b.token_ids and a.reward == b.reward  # same rollouts, same rewards
        assert sum(a.loss_mask) > 0
        assert (sum(b.loss_mask) == 0) == (i in cut)


def test_an_unknown_choice_is_named():
    with pytest.raises(ValueError, match="overlong='drop': choose one of keep, mask"):
        LinearExperience(None, lambda *a, **k: None, overlong="drop")
