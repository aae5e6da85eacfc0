"""The RL update takes the rollout engine's log-probs: as the old log-probs when the engine
scored with the trainer's own forward pass (one pass fewer), through truncated importance
sampling when it did not (CTranslate2 int8); the gap is logged per iteration."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rewards.base import RewardOutput
from kgreason.rollout import CT2Engine, HFEngine, MultiTurnRollout
from kgreason.training import LinearExperience, RLConfig, RLLitModule, UniformStream


def length_reward(traj, sample, **ctx) -> RewardOutput:
    """A reward that tells the tiny model's rollouts apart (so advantages are not all 0)."""
    return RewardOutput(total=float(sum(t for t, m in zip(traj.token_ids, traj.loss_mask, strict=True) if m) % 7) / 7)


def one_iteration(kb, engine_of, policy_out: list | None = None, **cfg) -> tuple[dict[str, float], int]:
    """One RL iteration from a fixed seed: the logged metrics and the trainer's log-prob passes
    (the trained policy appended to ``policy_out``)."""
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=0)
    source = LinearExperience(MultiTurnRollout(engine_of(policy), policy.tokenizer, policy.chat_ids,
                                               max_new_tokens=12), length_reward, n_rollouts=2)
    config = RLConfig(**{"mini_batch_size": 4, "lr": 1e-2, "kl_coef": 0.0, "iterations": 1, **cfg})
    module = RLLitModule(policy, source, lambda: make_env("kg_r1", kb, max_turns=2), config)
    passes = [0]
    scored = policy.token_logprobs

    def counted(*args, **kw):  # the trainer's log-prob passes (the engines never call it)
        passes[0] += 1
        return scored(*args, **kw)

    policy.token_logprobs = counted
    trainer = L.Trainer(max_steps=-1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, DataLoader(UniformStream(load_dataset("demo", split="train")[:2], batch_size=2),
                                   batch_size=None))
    if policy_out is not None:
        policy_out.append(policy)
    return {k: float(v) for k, v in trainer.callback_metrics.items()}, passes[0]


def test_hf_engine_logprobs_replace_the_old_logprob_pass(demo_oxigraph):
    reused, passes_reused = one_iteration(demo_oxigraph, HFEngine)
    assert reused["train/old_logp_from_sampler"] == 1.0
    assert "train/sampler_abs_dlogp" not in reused  # the sampler is the trainer: nothing to correct
    # under bf16 autocast the trainer differs from the float32 sampler: recomputed and measured
    recomputed, passes_recomputed = one_iteration(demo_oxigraph, HFEngine, bf16=True)
    assert recomputed["train/old_logp_from_sampler"] == 0.0
    # one mini-batch: its forward before the only step gives the old log-probs, no pass of their own
    assert passes_recomputed == passes_reused
    assert 0 < recomputed["train/sampler_abs_dlogp"] < 0.5
    # same rollouts, same first update (ratio 1 at the first mini-batch): a float32 ratio of
    # the trainer to itself is what the reused log-probs give
    assert reused["train/ratio_mean"] == pytest.approx(1.0, abs=1e-4)


def test_old_logprobs_come_from_the_forwards_before_the_first_step(demo_oxigraph, monkeypatch):
    # bf16 updates after float32 rollouts: the engine's log-probs are not the old ones. Two
    # mini-batches and two PPO epochs: the first mini-batch's rows are scored by their own
    # forward, the other two rows by one pass before the first step, and the second epoch
    # reads both from the batch.
    cfg = {"bf16": True, "mini_batch_size": 2, "ppo_epochs": 2}
    deferred: list = []
    logs, passes = one_iteration(demo_oxigraph, HFEngine, policy_out=deferred, **cfg)
    assert logs["train/old_logp_from_sampler"] == 0.0

    scored = RLLitModule._scored_batch

    def upfront(self, kept, logs):  # every row scored before the update, as before
        data = scored(self, kept, logs)
        data.old_logp = self._old_logprobs(data)
        return data

    monkeypatch.setattr(RLLitModule, "_scored_batch", upfront)
    before: list = []
    logs_before, passes_before = one_iteration(demo_oxigraph, HFEngine, policy_out=before, **cfg)
    assert passes == passes_before - 1  # the first mini-batch's no-grad pass is gone
    # bf16 rounds a forward with grad and one without a little differently (≈ 2e-5 here)
    assert logs["train/ratio_mean"] == pytest.approx(logs_before["train/ratio_mean"], abs=1e-4)
    assert logs_before["train/ratio_mean"] != pytest.approx(1.0, abs=1e-6)  # the second epoch moved it
    for (name, a), b in zip(deferred[0].adapter_state().items(), before[0].adapter_state().values(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5, msg=name)


def test_int8_sampler_gap_is_logged_and_corrected(demo_oxigraph):
    pytest.importorskip("ctranslate2")

    def int8(policy):
        return CT2Engine(policy, compute_type="int8")

    corrected, _ = one_iteration(demo_oxigraph, int8, tis_cap=2.0)
    measured, _ = one_iteration(demo_oxigraph, int8, tis_cap=None)
    assert corrected["train/old_logp_from_sampler"] == 0.0
    assert corrected["train/sampler_abs_dlogp"] > 1e-3
    assert corrected["train/sampler_abs_dlogp"] == pytest.approx(measured["train/sampler_abs_dlogp"])
    assert 0.0 <= corrected["train/sampler_out_of_band"] <= 1.0
    # the same rollouts and old log-probs; only the importance weights differ
    assert corrected["train/pg_loss"] != pytest.approx(measured["train/pg_loss"], abs=1e-7)


def test_the_trainer_scores_at_the_sampling_temperature(demo_oxigraph):
    logs, _ = one_iteration(demo_oxigraph, lambda p: HFEngine(p, temperature=0.7), temperature=0.7)
    assert logs["train/old_logp_from_sampler"] == 1.0  # same forward, same temperature
    mismatched, _ = one_iteration(demo_oxigraph, lambda p: HFEngine(p, temperature=0.7), temperature=1.0)
    assert mismatched["train/old_logp_from_sampler"] == 0.0  # scored at 1.0: the engine's are not the trainer's
    assert mismatched["train/sampler_abs_dlogp"] > 1e-3


def test_compose_refuses_a_trainer_temperature_other_than_the_samplers():
    from kgreason.config import compose_config, validate_config
    from kgreason.errors import ConfigError

    cfg = compose_config(["method=kg_r1", "preset=smoke", "engine.temperature=0.7"])
    assert cfg.objective.temperature == 0.7  # follows the engine
    validate_config(cfg)
    with pytest.raises(ConfigError, match="objective.temperature=1.0 but engine.temperature=0.7"):
        validate_config(compose_config(["method=kg_r1", "preset=smoke", "engine.temperature=0.7",
                                        "objective.temperature=1.0"]))
