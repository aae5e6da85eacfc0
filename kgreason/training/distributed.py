"""The process group of data-parallel training (``trainer=ddp``), seen from one process."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

log = logging.getLogger(__name__)


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


def share_cpu_threads(processes: int, cores: int | None = None) -> int | None:
    """Give each of ``processes`` CPU processes on this machine its share of the cores.

    torch starts one compute thread a core in every process; two data-parallel processes on
    the same cores then run twice as many threads as cores, and each waits on the other's
    (``torchrun`` sets ``OMP_NUM_THREADS=1`` for the same reason). Call it in the first
    process before Lightning starts the others: they inherit ``OMP_NUM_THREADS``. A value
    the user or the launcher set is kept.

    Args:
        processes: the data-parallel processes on this machine (``trainer.devices``).
        cores: the cores they share; by default the ones this process may run on.

    Returns:
        The threads each process now runs, or ``None`` where nothing was changed (one
        process, or ``OMP_NUM_THREADS`` already set).

    >>> import os, torch
    >>> before, env = torch.get_num_threads(), os.environ.pop("OMP_NUM_THREADS", None)
    >>> share_cpu_threads(2, cores=4), os.environ["OMP_NUM_THREADS"], torch.get_num_threads()
    (2, '2', 2)
    >>> share_cpu_threads(2, cores=4) is None  # set now: kept
    True
    >>> _ = os.environ.pop("OMP_NUM_THREADS"); torch.set_num_threads(before)
    >>> if env is not None: os.environ["OMP_NUM_THREADS"] = env
    """
    if processes <= 1 or os.environ.get("OMP_NUM_THREADS"):
        return None
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    threads = max(1, cores // processes)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)
    log.info("%d CPU processes share %d cores: %d compute thread(s) each (OMP_NUM_THREADS)", processes, cores, threads)
    return threads


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
