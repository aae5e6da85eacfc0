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


def _metrics(path, iterations):
    path.parent.mkdir(parents=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["step", "train/iteration"])
        w.writeheader()
        w.writerows({"step": i, "train/iteration": i} for i in iterations)
    return path.read_text()


def test_a_resumed_run_edits_metrics_in_its_first_process_only(tmp_path, monkeypatch):
    """A second process (Lightning starts it seconds after the first) must not rewrite
    metrics.csv: the first has appended rows since, in its own column order."""
    from lightning.pytorch.utilities import rank_zero_only

    before = _metrics(tmp_path / "rl" / "metrics.csv", [0, 1, 2])
    monkeypatch.setattr(rank_zero_only, "rank", 1)
    ResumingCSVLogger(tmp_path, name="rl", version="", start=1).experiment.log_metrics({"x": 1.0})
    assert (tmp_path / "rl" / "metrics.csv").read_text() == before
    monkeypatch.setattr(rank_zero_only, "rank", 0)
    ResumingCSVLogger(tmp_path, name="rl", version="", start=1).experiment  # noqa: B018 - the writer trims on creation
    with (tmp_path / "rl" / "metrics.csv").open(newline="") as f:
        assert [r["train/iteration"] for r in csv.DictReader(f)] == ["0"]


def test_the_first_process_is_told_by_the_launchers_variables(monkeypatch):
    from kgreason.training.distributed import is_first_process

    for key in ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK"):
        monkeypatch.delenv(key, raising=False)
    assert is_first_process()  # one process, or Lightning's launcher before it starts the others
    monkeypatch.setenv("LOCAL_RANK", "1")  # a process Lightning's launcher started
    assert not is_first_process()
    monkeypatch.setenv("RANK", "0")  # torchrun's first process (RANK is read before LOCAL_RANK)
    assert is_first_process()


def test_a_checkpoint_is_told_by_its_files(tmp_path):
    from kgreason.training.distributed import checkpoint_kind

    (tmp_path / "file.ckpt").write_bytes(b"")
    (tmp_path / "dcp").mkdir()
    (tmp_path / "dcp" / ".metadata").write_bytes(b"")  # torch.distributed.checkpoint's index (trainer=fsdp)
    (tmp_path / "ds" / "checkpoint").mkdir(parents=True)  # DeepSpeed's tag folder (trainer=deepspeed)
    (tmp_path / "other").mkdir()
    assert [checkpoint_kind(tmp_path / n) for n in ("file.ckpt", "dcp", "ds", "other")] == \
        ["file", "dcp", "deepspeed", "unknown"]


def test_a_checkpoint_folder_takes_the_place_of_the_last_whole(tmp_path):
    """Sharded strategies (FSDP, DeepSpeed): every process writes into last.ckpt.tmp/, then
    the first puts it in the place of the previous checkpoint, a folder or (a run
    checkpointed by an older kgreason) a file; nothing is left beside it."""

    class Trainer:  # what IterationCheckpoint asks of Lightning's: its save and the first process
        is_global_zero = True

        def __init__(self):
            self.saves = 0

        def save_checkpoint(self, path, weights_only=False):
            self.saves += 1
            (path / "checkpoint").mkdir(parents=True)
            (path / "checkpoint" / "mp_rank_00_model_states.pt").write_text(str(self.saves))

    ckpt, trainer = IterationCheckpoint(tmp_path, every=1), Trainer()
    ckpt.last.write_text("an older whole checkpoint")
    for saves in (1, 2):
        ckpt._save_folder(trainer)
        assert (ckpt.last / "checkpoint" / "mp_rank_00_model_states.pt").read_text() == str(saves)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
