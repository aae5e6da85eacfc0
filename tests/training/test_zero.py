"""``trainer=deepspeed``: what it composes and refuses, and its checkpoint folders as
``resume`` reads them (the two-process updates are in test_ddp.py, a run in
tests/experiments/test_run.py)."""

from __future__ import annotations

import pytest
import torch

from kgreason.config import compose_config, validate_config
from kgreason.errors import ConfigError
from kgreason.training.resume import client_state_file, rl_progress
from kgreason.training.rl import ITERATION_KEY


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_composes_with_either_zero_stage(stage):
    cfg = compose_config(["method=kg_r1", "preset=smoke", "trainer=deepspeed", f"trainer.zero.stage={stage}"])
    validate_config(cfg)
    assert cfg.trainer.strategy == "deepspeed" and cfg.trainer.zero.stage == stage


@pytest.mark.parametrize(("overrides", "message"), [
    (["objective=ppo"], r"trains one optimiser; objective.critic .* use trainer=fsdp or trainer=ddp"),
    (["engine=ct2", "trainer.zero.stage=3"], r"ZeRO-3 rolls out with engine=hf .*not CT2Engine"),
    (["trainer.zero.stage=1"], r"trainer.zero.stage=1: choose one of 2, 3"),
])
def test_what_deepspeed_does_not_run_is_refused_at_compose_time(overrides, message):
    cfg = compose_config(["method=kg_r1", "preset=smoke", "trainer=deepspeed", *overrides])
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)


def test_the_strategy_refuses_a_stage_it_has_no_rows_for():
    pytest.importorskip("deepspeed", reason="the deepspeed extra (make install) is not installed")
    from kgreason.training.zero import deepspeed_strategy

    with pytest.raises(ConfigError, match="needs trainer.zero.stage=3"):
        deepspeed_strategy({"stage": 2, "offload_parameters": True}, 1.0)
    strategy = deepspeed_strategy({"stage": 3, "offload_optimizer": True}, 0.5)
    assert strategy.config["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert strategy.config["gradient_clipping"] == 0.5 and strategy.zero_stage_3


def _folder(tmp_path, name, shards, iteration=3):
    ckpt = tmp_path / "checkpoints" / "rl" / "last.ckpt"
    (ckpt / "checkpoint").mkdir(parents=True)
    torch.save({ITERATION_KEY: iteration}, ckpt / "checkpoint" / name)
    for r in range(shards):
        torch.save({}, ckpt / "checkpoint" / f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt")
    return ckpt


@pytest.mark.parametrize("name", ["mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt"])
def test_the_iteration_of_a_checkpoint_folder_is_read_from_its_first_process_file(tmp_path, name):
    """ZeRO-2 writes Lightning's state beside the first process's model states, ZeRO-3 into
    its first shard's."""
    ckpt = _folder(tmp_path, name, shards=2)
    assert client_state_file(ckpt) == ckpt / "checkpoint" / name and rl_progress(ckpt) == 3
    with pytest.raises(ConfigError, match="is a folder but not a checkpoint of trainer=fsdp"):
        rl_progress(tmp_path / "checkpoints")


def test_a_checkpoint_folder_resumes_only_under_deepspeed_with_as_many_processes(tmp_path):
    ckpt = _folder(tmp_path, "mp_rank_00_model_states.pt", shards=2)
    args = ["method=kg_r1", "preset=smoke", f"resume={ckpt}"]
    validate_config(compose_config([*args, "trainer=deepspeed"]))
    with pytest.raises(ConfigError, match="optimiser shards of 2 processes; this run has 4"):
        validate_config(compose_config([*args, "trainer=deepspeed", "trainer.devices=4"]))
    with pytest.raises(ConfigError, match="is a DeepSpeed checkpoint folder: resume it with trainer=deepspeed"):
        validate_config(compose_config([*args, "trainer=fsdp"]))
    whole = tmp_path / "whole.ckpt"
    torch.save({ITERATION_KEY: 1}, whole)
    with pytest.raises(ConfigError, match="is not a DeepSpeed checkpoint; trainer=deepspeed resumes the folders"):
        validate_config(compose_config(["method=kg_r1", "preset=smoke", f"resume={whole}", "trainer=deepspeed"]))
