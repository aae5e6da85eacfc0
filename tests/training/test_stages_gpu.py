"""The training stages on a CUDA device: an SFT step, one RL update with every objective
the presets use, and the runner keeping the policy on the GPU between stages (``-m gpu``
on a lent GPU; skipped elsewhere)."""

from __future__ import annotations

import functools
import math

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from kgreason.compose import build_parts
from kgreason.config import compose_config
from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.models import CausalLMPolicy
from kgreason.training import RLLitModule, SFTLitModule, UniformStream, collate, masked_nll
from kgreason.training.devices import place_policy, run_device

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]

#: (method, objective override): every objective config a preset or ablation uses
OBJECTIVES = [("kg_r1", None), ("kg_r1", "ppo"), ("kg_r1", "grpo"), ("kbqa_r1", None), ("kbqa_r1", "kbqa_r1_code"),
              ("kg_reasoner", None), ("kg_reasoner", "kg_reasoner_code"), ("knowcoder_a1", None),
              ("isp_dtpo", None), ("isp_dtpo", "tree_step_code")]


def gpu_trainer(**kw) -> L.Trainer:
    return L.Trainer(accelerator="gpu", devices=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False, **kw)


def test_sft_steps_on_the_gpu_lower_the_loss(demo_oxigraph):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    qs = load_dataset("demo", split="train")[:8]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10), pol.chat_ids,
                                    pol.tokenizer)
    batch = collate(trajs, pol.tokenizer.pad_token_id, max_len=512)
    before = masked_nll(pol, batch).item()
    loader = DataLoader(trajs, batch_size=4, shuffle=True,
                        collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id, max_len=512))
    devices: list[str] = []
    module = SFTLitModule(pol, lr=3e-3)
    module.on_train_batch_start = lambda b, i: devices.append(str(pol.device))  # type: ignore[method-assign]
    gpu_trainer(max_steps=20).fit(module, loader)
    assert devices and set(devices) == {"cuda:0"}
    assert pol.device.type == "cpu"  # Lightning's teardown: why the runner places the policy again
    place_policy(pol, torch.device("cuda", 0))
    after = masked_nll(pol, {k: v.cuda() if torch.is_tensor(v) else v for k, v in batch.items()}).item()
    assert after < 0.6 * before, (before, after)


@pytest.mark.parametrize("method,objective", OBJECTIVES, ids=[f"{m}-{o or 'own'}" for m, o in OBJECTIVES])
def test_one_rl_update_on_the_gpu_with_each_objective(demo_oxigraph, method, objective):
    cfg = compose_config([f"method={method}", "preset=smoke", "trainer=gpu", "rl.iterations=1", "eval.untrained=false",
                          *([f"objective={objective}"] if objective else [])])
    p = build_parts(cfg)
    place_policy(p.policy, run_device(cfg.trainer))
    before = {n: t.detach().clone() for n, t in p.policy.model.named_parameters() if t.requires_grad}
    module = RLLitModule(p.policy, p.source, p.make_env, p.objective)
    trainer = gpu_trainer(max_steps=-1, max_epochs=1)
    trainer.fit(module, DataLoader(UniformStream(p.train, batch_size=2), batch_size=None))
    assert module.iteration == 1
    m = {k: float(v) for k, v in trainer.callback_metrics.items()}
    assert "train/iteration_s" in m and all(math.isfinite(v) for v in m.values()), m
    after = dict(p.policy.model.named_parameters())
    assert all(torch.isfinite(after[n]).all() for n in before)
    if abs(m.get("train/grad_norm", 0.0)) > 0:  # a batch with a signal moved the weights
        assert any(not torch.equal(after[n].detach().cpu(), before[n].cpu()) for n in before)


def test_the_runner_keeps_the_policy_on_the_gpu_between_stages(tmp_path):
    from kgreason import pipeline

    cfg = compose_config(["method=kg_r1", "preset=smoke", "trainer=gpu"])
    p = build_parts(cfg)
    place_policy(p.policy, run_device(cfg.trainer))
    assert p.policy.device.type == "cuda"
    assert pipeline.cold_start(p, cfg, tmp_path) > 0
    assert p.policy.device.type == "cuda"  # back after SFT's fit, for the evaluation that follows
    report = pipeline.run_eval(p, cfg, tmp_path, "sft")
    assert report.overall["n"] == cfg.data.eval_limit
