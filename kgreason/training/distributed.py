"""The process group of data-parallel training (``trainer=ddp``), seen from one process."""

from __future__ import annotations

import torch


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the number of processes; ``(0, 1)`` outside a process group.

    Read when needed, not at construction: under Lightning's DDP the group exists only once
    the first ``fit`` has started.
    """
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


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
