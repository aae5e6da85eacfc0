"""An RL checkpoint never counts an iteration whose metric row is not on disk yet."""

from __future__ import annotations

import csv

import lightning as L
import torch
from torch.utils.data import DataLoader

from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.training import RLConfig, RLLitModule, UniformStream
from kgreason.training.resume import IterationCheckpoint, ResumingCSVLogger, rl_progress
from kgreason.types import KBQASample
from tests.training.ddp_rl_worker import FixedExperience


class RowsOnDisk(L.Callback):
    """After each iteration's checkpoint: which iterations it counts as done, and which rows
    a process killed at that moment would leave in metrics.csv."""

    def __init__(self, ckpt, metrics):
        self.ckpt, self.metrics, self.seen = ckpt, metrics, []

    def on_train_batch_end(self, trainer, *args):
        rows = []
        if self.metrics.is_file():
            with self.metrics.open(newline="") as f:
                rows = [int(float(r["train/iteration"])) for r in csv.DictReader(f)]
        self.seen.append((rl_progress(self.ckpt), rows))


def test_the_checkpoint_of_an_iteration_comes_after_its_metric_row(tmp_path):
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
    questions = [KBQASample(id=f"q{i}", question=f"question {i}") for i in range(6)]
    module = RLLitModule(policy, FixedExperience(), lambda: None,
                         RLConfig(mini_batch_size=4, ppo_epochs=1, lr=1e-3, iterations=3))
    ckpt = IterationCheckpoint(tmp_path / "checkpoints", every=1)
    probe = RowsOnDisk(ckpt.last, tmp_path / "rl" / "metrics.csv")
    trainer = L.Trainer(accelerator="cpu", max_epochs=1, logger=ResumingCSVLogger(tmp_path, name="rl", version="", start=0),
                        callbacks=[ckpt, probe], enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(module, DataLoader(UniformStream(questions, batch_size=2), batch_size=None))
    # a kill right after iteration k's checkpoint keeps the rows of iterations 0..k
    assert probe.seen == [(1, [0]), (2, [0, 1]), (3, [0, 1, 2])]
