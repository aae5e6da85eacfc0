"""Crash-safe RL checkpoints and resuming a killed run where it stopped.

A run killed mid-RL (``kill -9``, a lost machine) resumes with
``python experiments/run.py ... resume=<run>/checkpoints/rl/last.ckpt``: outputs go on in
``<run>``, the prompt stream skips the batches already trained on, and the trajectories and
metrics written after the checkpoint (the work being redone) are dropped first, so the
resumed run's files equal an uninterrupted run's (``tests/experiments/test_resume.py``).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.fabric.loggers.logger import rank_zero_experiment
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter

from kgreason.errors import ConfigError
from kgreason.training.rl import ITERATION_KEY


def atomic_save(obj: Any, path: str | Path, save: Callable[[Any, str], None] | None = None,
                commit: bool = True) -> Path:
    """Write ``obj`` to ``path`` so that a reader (or a crash) never sees half a file.

    The bytes go to ``<path>.tmp`` first, are flushed to disk, then renamed over ``path``
    (``os.replace`` is atomic on POSIX and Windows). ``commit=False``: only call ``save``
    (a data-parallel process whose ``save`` is collective but writes nothing).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    (save or (lambda o, p: torch.save(o, p)))(obj, str(tmp))
    if not commit:
        return path
    with open(tmp, "rb+") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def is_folder_strategy(strategy: Any) -> bool:
    """Whether ``strategy`` saves checkpoints as folders of shards (DeepSpeed's, or FSDP's
    ``torch.distributed.checkpoint``), not files."""
    from lightning.pytorch.strategies import DeepSpeedStrategy, ModelParallelStrategy

    return isinstance(strategy, DeepSpeedStrategy) or (
        isinstance(strategy, ModelParallelStrategy) and bool(getattr(strategy, "_save_distributed_checkpoint", False)))


def client_state_file(ckpt: str | Path) -> Path:
    """The file of a checkpoint folder that holds Lightning's state (loops, callbacks, the
    RL iteration): FSDP's ``meta.pt``, or DeepSpeed's beside the first process's model
    states; a checkpoint file is itself.

    Raises:
        ConfigError: a folder with no such file.
    """
    ckpt = Path(ckpt)
    if not ckpt.is_dir():
        return ckpt
    if (ckpt / "meta.pt").is_file():  # FSDP's folder: Lightning's state beside the shards
        return ckpt / "meta.pt"
    # ZeRO-2 names the first process's file so; ZeRO-3 writes one a process, the first's first
    for name in ("mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt"):
        if (ckpt / "checkpoint" / name).is_file():
            return ckpt / "checkpoint" / name
    raise ConfigError(f"resume={str(ckpt)!r} is a folder but not a checkpoint of trainer=fsdp (meta.pt) "
                      "or trainer=deepspeed (checkpoint/*model_states.pt)")


def rl_progress(ckpt: str | Path) -> int:
    """RL iterations completed in a Lightning checkpoint of :class:`~kgreason.training.RLLitModule`
    (a file, or the folder DeepSpeed writes).

    Raises:
        ConfigError: the file is not such a checkpoint.
    """
    ckpt = client_state_file(ckpt)
    try:
        # mmap: only the few bytes of the counter are read, not the weights
        state = torch.load(ckpt, map_location="cpu", mmap=True, weights_only=False)
    except Exception as e:  # a truncated or foreign file: torch raises several kinds
        raise ConfigError(f"resume={str(ckpt)!r} is not a readable checkpoint ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or ITERATION_KEY not in state:
        raise ConfigError(f"resume={str(ckpt)!r} is not an RL checkpoint (no {ITERATION_KEY!r}); "
                          "resume takes <run>/checkpoints/rl/last.ckpt")
    return int(state[ITERATION_KEY])


def drop_jsonl_rows(path: str | Path, drop: Callable[[dict[str, Any]], bool]) -> int:
    """Remove the rows of a JSON-lines file for which ``drop(row)`` holds; returns how many.

    A last line cut short by a crash is dropped too. The file is replaced atomically.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    kept, dropped = [], 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                dropped += 1
                continue
            if drop(row):
                dropped += 1
            else:
                kept.append(line if line.endswith("\n") else line + "\n")
    if dropped:
        atomic_save(kept, path, lambda rows, p: Path(p).write_text("".join(rows), encoding="utf-8"))
    return dropped


class _ResumingWriter(ExperimentWriter):
    """Lightning's CSV writer, keeping the rows of iterations before ``start`` instead of deleting the file."""

    def __init__(self, log_dir: str, start: int):
        self.start = start
        super().__init__(log_dir)

    def _check_log_dir_exists(self) -> None:
        if not os.path.isfile(self.metrics_file_path):
            return
        with open(self.metrics_file_path, newline="") as f:
            reader = csv.DictReader(f)
            # Lightning's writer keeps its columns sorted (and appends in that order)
            header = sorted(reader.fieldnames or [])
            rows = [r for r in reader if _iteration(r) < self.start]
        with open(self.metrics_file_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=header)
            w.writeheader()
            w.writerows(rows)
        self.metrics_keys = header


def _iteration(row: dict[str, str]) -> float:
    v = row.get("train/iteration") or ""
    return float(v) if v else -1.0


class ResumingCSVLogger(CSVLogger):
    """:class:`CSVLogger` that continues ``metrics.csv`` from RL iteration ``start`` on.

    Rows of iterations ``>= start`` (logged after the checkpoint, redone now) are dropped;
    earlier rows stay. Lightning's own logger deletes the whole file on a second run.
    """

    def __init__(self, *args: Any, start: int, **kw: Any):
        super().__init__(*args, **kw)
        self._start = start

    @property
    @rank_zero_experiment  # only the first process edits the file: a second one rewriting it races the first
    def experiment(self) -> ExperimentWriter:
        if self._experiment is None:
            os.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _ResumingWriter(self.log_dir, self._start)
        return self._experiment


def _remove(path: Path) -> None:
    """Delete a checkpoint file or folder, if there is one."""
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


class IterationCheckpoint(L.Callback):
    """Saves ``<dirpath>/last.ckpt`` every ``every`` RL iterations and at the end, atomically.

    Lightning's ``ModelCheckpoint`` counts optimizer steps (several per RL iteration, and
    a variable number), versions a second ``last.ckpt`` as ``last-v1.ckpt``, and writes in
    place, so a kill during the write leaves a checkpoint that cannot be read.
    """

    def __init__(self, dirpath: str | Path, every: int = 1):
        if every < 1:
            raise ValueError(f"checkpoint every {every} iterations: must be at least 1")
        self.dirpath = Path(dirpath)
        self.every = every

    @property
    def last(self) -> Path:
        return self.dirpath / "last.ckpt"

    def _save(self, trainer: L.Trainer) -> None:
        # the metric rows of the iterations this checkpoint counts as done reach the disk
        # first: a kill right after it must not lose them (a resumed run redoes only later ones)
        for lg in trainer.loggers:
            lg.save()
        if is_folder_strategy(trainer.strategy):
            self._save_folder(trainer)
            return
        # every process takes part in Lightning's save (it waits for all); the first one writes
        atomic_save(None, self.last, lambda _, p: trainer.save_checkpoint(p, weights_only=False),
                    commit=trainer.is_global_zero)

    def _save_folder(self, trainer: L.Trainer) -> None:
        """FSDP, DeepSpeed: every process writes its shard into ``last.ckpt.tmp/``; once all have
        (Lightning's save ends in a barrier), the first process puts the folder in the place
        of the previous one, which a crash in between leaves as ``last.ckpt.old/``."""
        tmp, old = self.last.with_name("last.ckpt.tmp"), self.last.with_name("last.ckpt.old")
        trainer.save_checkpoint(tmp, weights_only=False)
        if not trainer.is_global_zero:
            return
        if self.last.exists():
            _remove(old)
            os.replace(self.last, old)  # a file, where the run was checkpointed by an older kgreason
        os.replace(tmp, self.last)
        _remove(old)

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        # a save a crash cut short: the first process clears it before any process writes anew
        if trainer.is_global_zero:
            _remove(self.last.with_name("last.ckpt.tmp"))
        trainer.strategy.barrier("IterationCheckpoint.on_fit_start")

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any) -> None:
        if getattr(pl_module, "iteration", 0) % self.every == 0:
            self._save(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if getattr(pl_module, "iteration", 0) % self.every != 0:
            self._save(trainer)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dirpath={str(self.dirpath)!r}, every={self.every})"
