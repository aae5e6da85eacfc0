"""Fully sharded data parallelism (``trainer=fsdp``): PyTorch's FSDP2 under Lightning's
:class:`~lightning.pytorch.strategies.ModelParallelStrategy`.

Each process keeps a ``1 / world`` shard of every weight, gradient and optimiser state;
each decoder layer's weights are gathered for its forward and backward and freed after
(PyTorch's ``fully_shard``, one unit a decoder layer, the embeddings, final norm and head
in the root unit). Rollouts are different: every process decodes its own questions for a
different number of steps, and a layer-by-layer gather would need every process to run
the same number of forwards. So a rollout first gathers the whole policy once
(:func:`gathered`) and frees it after, as verl's FSDP workers do for Hugging Face
rollouts: a rollout's peak memory is one full copy of the weights; training's is one
shard plus one layer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import torch

from kgreason.errors import ConfigError

log = logging.getLogger(__name__)


def fsdp_units(model: torch.nn.Module) -> list[Any]:
    """The modules ``fully_shard`` made units of (none: an unsharded model)."""
    from torch.distributed.fsdp import FSDPModule

    return [m for m in model.modules() if isinstance(m, FSDPModule)]


def is_sharded(model: torch.nn.Module) -> bool:
    """Whether ``model`` is sharded by FSDP2: :func:`shard_policy` always makes the whole
    model the root unit, so the root says it, without a walk over every module (this is
    asked on every log-prob pass)."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def decoder_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The decoder layers of a (peft-wrapped) Hugging Face causal LM or of a module holding
    its decoder (PPO's critic): the first module list named ``layers``.

    Raises:
        ConfigError: the model has no such list.
    """
    for name, module in model.named_modules():
        if name.rsplit(".", 1)[-1] == "layers" and isinstance(module, torch.nn.ModuleList):
            return list(module)
    raise ConfigError(f"trainer=fsdp shards a model by its decoder layers; {type(model).__name__} has none")


def shard_policy(policy: Any, mesh: Any) -> None:
    """Shard ``policy.model`` over ``mesh`` (a 1-D device mesh): each decoder layer one unit,
    the rest the root unit. A fully fine-tuned policy's KL reference (a frozen copy) is
    made now and sharded the same way; a LoRA policy's is the base with adapters off.

    The policy's forward passes then take the whole model's path: the projection of only
    the loss tokens calls the decoder and the head apart, and a shared prefix makes a
    second forward that other processes may not make, so both are turned off.
    """
    if is_sharded(policy.model):
        return
    if getattr(policy, "lora", True) is None:
        # full fine-tuning: the KL reference is a frozen copy, made whole now, sharded as the policy
        _shard(policy.make_reference(), mesh)
    _shard(policy.model, mesh)
    policy.share_prefix = 0
    held, total = held_weights(policy.model)
    log.info("trainer=fsdp: this process holds %d of the policy's %d weights (%.1f %%) over %d processes",
             held, total, 100 * held / max(1, total), mesh.size())


def _shard(model: torch.nn.Module, mesh: Any) -> None:
    from torch.distributed.fsdp import fully_shard

    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)


def held_weights(model: torch.nn.Module) -> tuple[int, int]:
    """How many of ``model``'s weights this process holds, and how many there are."""
    params = list(model.parameters())
    # FSDP2's DTensor shards; ZeRO-3's partitions (the parameter itself is then empty)
    local = sum(p.ds_tensor.numel() if hasattr(p, "ds_tensor") else
                (p.to_local() if hasattr(p, "to_local") else p).numel() for p in params)
    return local, sum(p.ds_numel if hasattr(p, "ds_numel") else p.numel() for p in params)


def shard_for_strategy(module: Any) -> None:
    """A Lightning module's ``configure_model``: shard its ``policy`` when the trainer's
    strategy gives it a device mesh (``trainer=fsdp``); otherwise nothing."""
    mesh = getattr(module, "_device_mesh", None)
    if mesh is None:
        strategy = getattr(getattr(module, "_trainer", None), "strategy", None)
        if getattr(strategy, "zero_stage_3", False):
            # ZeRO-3 gathers each layer at its forward: a shared prefix's second forward,
            # which other processes may not make, would leave their gathers waiting
            module.policy.share_prefix = 0
        return
    shard_policy(module.policy, mesh["data_parallel"])
    critic = getattr(module, "critic", None)
    if critic is not None and not is_sharded(critic):  # PPO's value model, sharded as the policy
        _shard(critic, mesh["data_parallel"])


@contextlib.contextmanager
def gathered(*models: torch.nn.Module | None) -> Iterator[None]:
    """Every unit's full weights of ``models`` for the block (rollouts, no-grad scoring):
    forwards then need no collective, so each process may run as many as its questions take.

    Every process of the group must enter it (the gather is a collective); on a model that
    is not sharded it does nothing.
    """
    units = [u for m in models if m is not None for u in fsdp_units(m)]
    for u in units:
        u.set_reshard_after_forward(False)
        u.unshard()
    try:
        yield
    finally:
        for u in units:
            u.reshard()
            u.set_reshard_after_forward(True)


def full_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``state`` with every sharded tensor gathered whole (a collective where any is)."""
    from torch.distributed.tensor import DTensor

    return {k: v.full_tensor() if isinstance(v, DTensor) else v for k, v in state.items()}


def check_fsdp_config(cfg: Any) -> None:
    """Refuse what ``trainer=fsdp`` does not run yet, naming what does.

    Raises:
        ConfigError: an engine other than ``hf``, or a ``resume`` folder of FSDP's shards
            under another trainer.
    """
    from kgreason.training.distributed import checkpoint_kind

    fsdp = str((cfg.get("trainer") or {}).get("strategy")) == "fsdp"
    resume = cfg.get("resume")
    if resume and checkpoint_kind(resume) == "dcp" and not fsdp:
        raise ConfigError(f"resume={resume!r} is a folder of trainer=fsdp's shards: resume it with trainer=fsdp "
                          "(any number of processes: trainer.devices=1 for one)")
    if not fsdp:
        return
    engine = str((cfg.get("engine") or {}).get("_target_", ""))
    if engine and not engine.endswith("HFEngine"):
        raise ConfigError(f"trainer=fsdp rolls out with engine=hf (the gathered policy), not "
                          f"{engine.rsplit('.', 1)[-1]}: the other engines read the weights whole")
