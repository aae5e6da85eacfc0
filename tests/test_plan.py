"""The memory planner (``python -m kgreason.plan``): shapes against the real model, the
strategies' accounting on hand-worked sizes, and every paper's setting on its hardware."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kgreason.config import compose_config
from kgreason.errors import ConfigError
from kgreason.plan import (
    GIB,
    GPUS,
    MODEL_SHAPES,
    ModelShape,
    Workload,
    model_states,
    paper_fit,
    plan,
    report,
    workload,
)

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("kbqa_r1", "kg_r1", "kg_reasoner", "isp_dtpo", "knowcoder_a1")


def test_the_smollm2_shape_counts_the_real_models_parameters_and_its_lora_adapters():
    from kgreason.models import CausalLMPolicy, LoraSettings

    policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=16, alpha=32, top_layers=12), bf16=False)
    shape = MODEL_SHAPES["smollm2-135m-instruct"]
    assert shape.params == sum(p.numel() for p in policy.model.parameters() if not p.requires_grad)
    assert shape.lora_params(16, ("q_proj", "k_proj", "v_proj", "o_proj"), top_layers=12) == \
        sum(p.numel() for p in policy.model.parameters() if p.requires_grad)


def test_strategies_on_a_hand_worked_one_layer_model():
    # hidden 2, one layer, vocabulary 3, untied embeddings: 46 parameters
    s = ModelShape(hidden=2, layers=1, heads=1, kv_heads=1, intermediate=2, vocab=3)
    psi = s.params
    assert psi == 3 * 2 * 2 + (4 + 4 + 4 + 4) + 3 * 2 * 2 + 2 * 2 + 2  # embeddings, attention, MLP, norms
    ddp, _ = model_states(s, psi, "ddp", 4)
    assert (ddp["weights"], ddp["gradients"], ddp["optimizer"]) == (4 * psi, 4 * psi, 8 * psi)  # not sharded
    z2, _ = model_states(s, psi, "zero2", 4)
    # float32 weights whole; DeepSpeed's float32 copy of the partition beside the moments
    assert (z2["weights"], z2["gradients"], z2["optimizer"]) == (4 * psi, 4 * psi / 4, 12 * psi / 4)
    assert model_states(s, psi, "zero3", 4) == model_states(s, psi, "fsdp", 4)  # all sharded, updated in place
    off, host = model_states(s, psi, "fsdp_offload", 4)
    assert off["optimizer"] == 0 and host == 16 * psi / 4
    lora, _ = model_states(s, 2, "ddp", 1)  # 2 trainable, the rest frozen bf16
    assert lora["weights"] == 4 * 2 + 2 * (psi - 2) and lora["optimizer"] == 16
    with pytest.raises(ConfigError, match="choose one of ddp, fsdp"):
        model_states(s, psi, "megatron", 2)


def test_a_critic_doubles_the_states_and_activations_and_checkpointing_shrinks_them():
    s = MODEL_SHAPES["qwen2.5-3b-instruct"]
    w = Workload(s.params, reference=False, critic=False, rows=2, seq_len=4096, response_len=1024, rollout_seqs=8)
    base = plan(s, w, "fsdp", 4)
    ppo = plan(s, Workload(**{**w.__dict__, "critic": True}), "fsdp", 4)
    assert ppo.parts["critic"] == pytest.approx(base.parts["weights"] + base.parts["gradients"] + base.parts["optimizer"])
    assert ppo.parts["activations"] == 2 * base.parts["activations"]
    ckpt = plan(s, Workload(**{**w.__dict__, "checkpointing": True}), "fsdp", 4)
    assert ckpt.parts["activations"] < base.parts["activations"] / 5


@pytest.mark.parametrize("method", METHODS)
def test_every_papers_setting_fits_its_papers_hardware(method):
    cfg = compose_config([f"method={method}", "preset=full"])
    p = paper_fit([f"method={method}", "preset=full"])
    assert p.strategy == cfg.hardware.strategy and p.devices == cfg.hardware.devices


    assert p.fits(GPUS[cfg.hardware.gpu]), (method, p.total / GIB)


def test_without_checkpointing_kbqa_r1s_setting_does_not_fit():
    p = paper_fit(["method=kbqa_r1", "preset=full", "model.policy.activation_checkpointing=false"])
    assert not p.fits(80) and p.parts["activations"] > 200 * GIB


def test_the_workload_follows_the_config():
    cfg = compose_config(["method=kg_r1", "preset=full"])
    w = workload(cfg, MODEL_SHAPES["qwen2.5-3b-instruct"], 4)
    # 512 prompt + 6 turns × 256 new tokens + 5 observations × 512
    assert (w.rows, w.seq_len, w.response_len, w.rollout_seqs) == (4, 512 + 1536 + 2560, 1536, 128 * 16 // 4)
    assert w.checkpointing and w.reference and not w.critic
    assert workload(compose_config(["method=kg_r1", "preset=full", "objective=ppo"]),
                    MODEL_SHAPES["qwen2.5-3b-instruct"], 4).critic


def test_the_command_answers_and_bad_names_are_named():
    p = subprocess.run([sys.executable, "-m", "kgreason.plan", "method=kbqa_r1", "preset=full"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "| fsdp (paper) | 8 |" in p.stdout and "on 8 × a100-80gb with fsdp" in p.stdout and ": fits" in p.stdout
    with pytest.raises(ConfigError, match="known: .*qwen2.5-3b-instruct"):
        report(["method=kg_r1", "preset=full", "hardware.model=gpt-5"])
    with pytest.raises(ConfigError, match="choose one of a100-40gb"):
        report(["method=kg_r1", "preset=full", "hardware.gpu=tpu"])
