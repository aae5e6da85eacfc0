"""The device a run's policy lives on between its stages.

Lightning moves a module onto the trainer's device when ``fit`` starts and back to the
CPU when it ends. The stages outside ``fit`` — evaluations, cold-start episodes, the
rejection sampler — would then decode on the CPU of a GPU machine. The runner puts the
policy on :func:`run_device` once it is built and again after every ``fit``
(:func:`place_policy`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from kgreason.errors import ConfigError

#: Lightning accelerator names that mean a CUDA device
CUDA_ACCELERATORS = ("gpu", "cuda")


def run_device(trainer: Mapping[str, Any]) -> torch.device:
    """The device this process's policy runs on under the Lightning ``trainer`` settings.

    ``accelerator: cpu`` is the CPU; ``gpu``/``cuda`` the CUDA device of this process
    (``LOCAL_RANK`` under DDP, the listed index where ``devices`` is a list); ``auto`` a
    CUDA device where one is visible, else the CPU; ``mps`` Apple's.

    Raises:
        ConfigError: a CUDA accelerator asked for where torch sees no CUDA device, or an
            accelerator this runner does not place policies on.

    >>> run_device({"accelerator": "cpu", "devices": 1})
    device(type='cpu')
    >>> run_device({"accelerator": "tpu"})
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: trainer.accelerator='tpu': choose one of cpu, gpu, cuda, mps, auto
    """
    accelerator = str(trainer.get("accelerator", "cpu")).lower()
    if accelerator == "cpu":
        return torch.device("cpu")
    if accelerator == "mps":
        return torch.device("mps")
    if accelerator == "auto":
        if not torch.cuda.is_available():
            return torch.device("cpu")
    elif accelerator not in CUDA_ACCELERATORS:
        raise ConfigError(f"trainer.accelerator={accelerator!r}: choose one of cpu, {', '.join(CUDA_ACCELERATORS)}, "
                          "mps, auto")
    elif not torch.cuda.is_available():
        raise ConfigError(f"trainer.accelerator={accelerator!r} needs a CUDA device, and torch {torch.__version__} "
                          "sees none (a CPU build of torch, or no driver): use trainer=cpu, or install a CUDA "
                          "build of torch (docs/gpu.md)")
    local = int(os.environ.get("LOCAL_RANK", 0))
    devices = trainer.get("devices")
    if isinstance(devices, Sequence) and not isinstance(devices, str):  # GPU indices, one a process
        return torch.device("cuda", int(devices[local]))
    return torch.device("cuda", local)


def place_policy(policy: Any, device: torch.device) -> None:
    """Put ``policy`` (its model, and a fully fine-tuned policy's reference copy) on
    ``device``; a policy of one's own without ``to`` has its ``model`` moved."""
    if hasattr(policy, "to"):
        policy.to(device)
    elif hasattr(policy, "model"):
        policy.model.to(device)
