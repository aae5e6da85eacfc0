"""Config values are checked at compose time: one line naming the key, the value and what
is valid, before any model loads (the bad command lines a user wrote)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kgreason.config import compose_config, validate_config
from kgreason.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
BASE = ["method=kg_r1", "preset=smoke"]

BAD = {
    "curriculum.batch_size=-2": r"curriculum.batch_size=-2: must be an integer >= 1",
    "rl.iterations=-1": r"rl.iterations=-1: must be an integer >= 0 \(0 skips RL\)",
    "model.max_new_tokens=abc": r"model.max_new_tokens='abc': must be an integer >= 1",
    "data.train_limit=-5": r"data.train_limit=-5: must be an integer >= 1 or null",
    "rollout.n_rollouts=0": r"rollout.n_rollouts=0: must be an integer >= 1 \(the group size\)",
    "objective.lr=0": r"objective.lr=0: must be a number > 0",
    "env.max_turns=2.5": r"env.max_turns=2.5: must be an integer >= 1",
    "sft.steps=true": r"sft.steps=True: must be an integer >= 0",
    "data.unanswered=keep": r"data.unanswered='keep': choose one of drop, fail",
    "engine.top_p=2": r"engine.top_p=2: must be a number in \(0, 1\]",
    "engine.top_k=-1": r"engine.top_k=-1: must be an integer >= 0",
    "engine.temperature=0": r"engine.temperature=0: must be a number > 0",
    "trainer.precision=abc": r"trainer.precision='abc': choose 32-true; bf16 is set per stage",
    "trainer.precision=bf16-mixed": r"trainer.precision='bf16-mixed': choose 32-true; .*\(sft.bf16, objective.bf16",
}


@pytest.mark.parametrize("override", list(BAD))
def test_each_bad_value_names_the_key_the_value_and_what_is_valid(override):
    with pytest.raises(ConfigError, match=BAD[override]):
        validate_config(compose_config([*BASE, override]))


def test_paths_must_exist_and_be_files_where_a_file_is_read(tmp_path):
    with pytest.raises(ConfigError, match=r"kb.path is required; set it on the command line"):
        validate_config(compose_config([*BASE, "kb=rdf"]))
    with pytest.raises(ConfigError, match=r"kb.path='/nowhere.ttl': no such file or directory"):
        validate_config(compose_config([*BASE, "kb=rdf", "kb.path=/nowhere.ttl"]))
    with pytest.raises(ConfigError, match=r"is a directory; kb=rdf reads a file"):
        validate_config(compose_config([*BASE, "kb=rdf", f"kb.path={tmp_path}"]))
    with pytest.raises(ConfigError, match=r"data.path is required"):
        validate_config(compose_config([*BASE, "data=jsonl"]))


def test_a_missing_extra_is_named_with_its_install_line(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("tensorboard", "tensorboardX")
                        else real(name, *a))
    with pytest.raises(ConfigError, match=r"logger=tensorboard needs tensorboard or tensorboardX, which is not "
                                          r"installed: pip install 'kgreason\[loggers\]'"):
        validate_config(compose_config([*BASE, "logger=tensorboard"]))


def test_the_command_line_answers_in_one_line_without_a_traceback_before_any_model_loads():
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), *BASE, "curriculum.batch_size=-2"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    elapsed = time.monotonic() - t0
    assert p.returncode != 0
    assert p.stderr.strip() == "ConfigError: curriculum.batch_size=-2: must be an integer >= 1 (questions per RL " \
                               "iteration)", p.stderr
    assert "Traceback" not in p.stderr and elapsed < 10


def test_an_option_that_does_not_exist_is_one_line_naming_the_choices():
    from kgreason.config import check_overrides

    with pytest.raises(ConfigError, match=r"^method=kg_rl is not an option; choose one of isp_dtpo, kbqa_r1, kg_r1, "
                                          r"kg_reasoner, knowcoder_a1 \(did you mean kg_r1\?\)$"):
        check_overrides(["method=kg_rl"])
    with pytest.raises(ConfigError, match=r"^reward=nope is not an option; choose one of .*\bf1\b"):
        check_overrides(["method=kg_r1", "reward=nope"])


def test_resume_from_another_policy_or_objective_is_refused_before_anything_loads(tmp_path):
    from omegaconf import OmegaConf

    run = tmp_path / "run"
    ckpt = run / "checkpoints" / "rl" / "last.ckpt"
    ckpt.parent.mkdir(parents=True)
    ckpt.write_bytes(b"")  # the check reads the run's config, not the weights
    OmegaConf.save(compose_config(["method=isp_dtpo", "preset=smoke"]), run / "config.yaml")
    (run / ".hydra").mkdir()
    OmegaConf.save(OmegaConf.create(["method=isp_dtpo", "preset=smoke"]), run / ".hydra" / "overrides.yaml")
    validate_config(compose_config(["method=isp_dtpo", "preset=smoke", f"resume={ckpt}", "rl.iterations=9"]))
    with pytest.raises(ConfigError, match=r"objective.advantage: checkpoint 'tree_step', this run 'kg_r1_turn'.*"
                                          r"resume with the overrides that wrote it: method=isp_dtpo preset=smoke$"):
        validate_config(compose_config(["method=kg_r1", "preset=smoke", f"resume={ckpt}"]))
    with pytest.raises(ConfigError, match=r"model.policy.lora.r: checkpoint 4, this run 8"):
        validate_config(compose_config(["method=isp_dtpo", "preset=smoke", f"resume={ckpt}",
                                        "model.policy.lora.r=8"]))


def test_the_shipped_presets_pass():
    for method in ("kg_r1", "kbqa_r1", "isp_dtpo", "knowcoder_a1", "kg_reasoner"):
        for preset in ("smoke", "demo", "full"):
            validate_config(compose_config([f"method={method}", f"preset={preset}"]))
