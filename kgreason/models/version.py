"""Which weights a model holds, as rollout engines compare it before reusing a copy.

An engine that keeps its own copy of the policy (CTranslate2, vLLM) or a KV cache built
with the policy's weights must know when those weights change. Parameters' in-place
version counters alone miss updates: fused AdamW writes parameters without bumping them,
and neither does a write through ``p.data``. So every optimiser step is counted too, by a
global optimiser step hook (``torch.optim.optimizer.register_optimizer_step_post_hook``)
that marks each parameter it stepped; plain, ``foreach`` and ``fused`` AdamW, and any
optimiser built on ``torch.optim.Optimizer``, pass through it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

#: what :func:`weights_version` returns: (model object, optimiser steps, in-place versions)
WeightsVersion = tuple[int, int, int]

#: attribute a stepped parameter carries: how many optimiser steps included it
STEPS_ATTR = "_kgreason_optimizer_steps"


def _count_step(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
    for group in optimizer.param_groups:
        for p in group["params"]:
            setattr(p, STEPS_ATTR, getattr(p, STEPS_ATTR, 0) + 1)


_HOOK = register_optimizer_step_post_hook(_count_step)


def mark_changed(model: torch.nn.Module) -> None:
    """Declare that ``model``'s weights changed in a way no counter sees (e.g. a copy
    through ``p.data``), so that engines convert or push them again."""
    for p in model.parameters():
        setattr(p, STEPS_ATTR, getattr(p, STEPS_ATTR, 0) + 1)


def weights_version(model: torch.nn.Module) -> WeightsVersion:
    """Changes whenever ``model``'s weights may have: the model object (a LoRA merge
    replaces it), the optimiser steps that touched its parameters (:data:`STEPS_ATTR`)
    and the sum of its tensors' in-place version counters (loading weights, a merge, an
    edit under ``no_grad``).

    >>> m = torch.nn.Linear(2, 1)
    >>> v = weights_version(m)
    >>> torch.optim.AdamW(m.parameters(), fused=False).step()
    >>> weights_version(m) != v
    True
    """
    params = list(model.parameters())
    return id(model), sum(getattr(p, STEPS_ATTR, 0) for p in params), sum(p._version for p in params)
