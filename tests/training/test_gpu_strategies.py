"""The sharded strategies on CUDA devices: ``trainer=fsdp`` (NCCL) and ``trainer=deepspeed``
(ZeRO-2 and ZeRO-3 on GPUs) through the KG-R1 smoke run, one process a device (up to two).
The same paths run on the CPU in test_ddp.py and tests/experiments/test_run.py; these run
only where a GPU is (``-m gpu`` on a lent machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]


@pytest.mark.parametrize("trainer", [["trainer=fsdp"], ["trainer=deepspeed"], ["trainer=deepspeed", "trainer.zero.stage=3"]])
def test_a_sharded_smoke_run_trains_and_evaluates_on_gpus(tmp_path, trainer):
    if "deepspeed" in trainer[0]:
        pytest.importorskip("deepspeed", reason="the deepspeed extra is not installed")
    devices = min(2, torch.cuda.device_count())
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), "method=kg_r1", "preset=smoke", *trainer,
                        "trainer.accelerator=gpu", f"trainer.devices={devices}", "eval.untrained=false",
                        "objective.entropy_coef=0.01", f"hydra.run.dir={out}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["eval"]["trained"]["overall"]["n"] == 4
    assert (out / "checkpoints" / "rl" / "last.ckpt").is_dir() and (out / "checkpoints" / "policy.pt").is_file()
