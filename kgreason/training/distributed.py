"""The process group of data-parallel training (``trainer=ddp``), seen from one process."""

from __future__ import annotations

import os
from pathlib import Path

import torch


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes; ``(0, 1)`` outside a process group.

    Read when needed, not at construction: under Lightning's DDP the group exists only once
    the first ``fit`` has started.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def is_first_process() -> bool:
    """Whether this is the run's first process, also before Lightning has started the
    others: its launcher starts them with ``LOCAL_RANK`` set, and ``torchrun`` and SLURM
    give every process a ``RANK`` or ``SLURM_PROCID`` (the variables, in the order, that
    Lightning's ``rank_zero_only`` reads); a one-process run has none.

    Files a run edits in place (a resumed run's trajectories) are edited here only: a
    second process, started seconds later, would edit what the first has written since.
    """
    for key in ("RANK", "LOCAL_RANK", "SLURM_PROCID", "JSM_NAMESPACE_RANK"):
        if os.environ.get(key) is not None:
            return int(os.environ[key]) == 0
    return True


def leave_process_group() -> None:
    """Destroy the default process group, if this process is in one; otherwise do nothing.

    Lightning leaves the group alive after ``fit``. A process that exits with it alive can
    die with SIGABRT ("terminate called without an active exception") while the
    interpreter shuts down, because gloo's worker threads still hold tensors
    (pytorch/pytorch#190489): a finished run would report failure. Call it once per
    process, after its last collective and only on a clean end; after an exception the
    other processes may still be waiting in a collective, and destroying would hang them.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def checkpoint_kind(path: str | os.PathLike) -> str:
    """What a ``resume`` checkpoint is: ``"file"`` (one whole file: one process, DDP),
    ``"dcp"`` (a folder of ``torch.distributed.checkpoint`` shards: ``trainer=fsdp``),
    ``"deepspeed"`` (a DeepSpeed folder: ``trainer=deepspeed``) or ``"unknown"`` (a folder
    of neither)."""
    path = Path(path)
    if not path.is_dir():
        return "file"
    if (path / ".metadata").is_file():
        return "dcp"
    if (path / "checkpoint").is_dir():
        return "deepspeed"
    return "unknown"
