"""DeepSpeed ZeRO (``trainer=deepspeed``): Lightning's
:class:`~lightning.pytorch.strategies.DeepSpeedStrategy`, on GPUs and on DeepSpeed's CPU
accelerator (gloo), which Lightning's strategy refuses although DeepSpeed runs there.

ZeRO stage 2 partitions the gradients and the optimiser states over the processes and
keeps the weights whole in each, so rollouts and the no-grad scoring passes run as under
DDP; stage 3 partitions the weights too, and a rollout gathers them whole first
(:func:`gathered_zero3`), as TRL does for generation under ZeRO-3. DeepSpeed owns the
update: it clips the gradient norm (``objective.max_grad_norm``), and several backward
passes before one optimiser step (micro-batches, on-policy mini-batches) are marked as one
accumulation (:func:`before_backward`). One optimiser: PPO's critic, which has its
own, is refused at compose time. Checkpoints are DeepSpeed's folders, one shard of the
optimiser state a process (:mod:`kgreason.training.resume` reads and commits them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from kgreason.errors import ConfigError, KGReasonError

log = logging.getLogger(__name__)

#: ZeRO stages ``trainer.zero.stage`` takes
STAGES = (2, 3)


def require_deepspeed() -> Any:
    """The ``deepspeed`` module.

    Raises:
        KGReasonError: it is not installed (the ``deepspeed`` extra, built against
            the installed torch: ``pip install --no-build-isolation 'kgreason[deepspeed]'``).
    """
    try:
        import deepspeed
    except ImportError as e:
        raise KGReasonError(
            "trainer=deepspeed needs DeepSpeed: pip install --no-build-isolation 'kgreason[deepspeed]' "
            "(built against the installed torch; `make install` does it)") from e
    return deepspeed


def deepspeed_strategy(zero: dict[str, Any], max_grad_norm: float | None, precision: str = "32-true") -> Any:
    """Lightning's DeepSpeed strategy for ``trainer.zero`` (``stage``, ``offload_optimizer``,
    ``offload_parameters``), clipping at ``max_grad_norm`` (None: no clipping), in the
    trainer's ``precision``.

    Raises:
        ConfigError: a stage other than 2 or 3.
        KGReasonError: DeepSpeed is not installed.
    """
    require_deepspeed()
    from lightning.pytorch.accelerators import CPUAccelerator
    from lightning.pytorch.plugins.precision import DeepSpeedPrecision
    from lightning.pytorch.strategies import DDPStrategy
    from lightning.pytorch.strategies import DeepSpeedStrategy as _Lightning

    stage = int(zero.get("stage", 2))
    if stage not in STAGES:
        raise ConfigError(f"trainer.zero.stage={stage}: choose one of {', '.join(map(str, STAGES))}")

    class Precision(DeepSpeedPrecision):
        """DeepSpeed's precision plugin, leaving RL's batches (questions, frozen dataclasses
        that Lightning's cast of the batch's tensors cannot rebuild) as they are."""

        def convert_input(self, data: Any) -> Any:
            if isinstance(data, list) and data and all(dataclasses.is_dataclass(x) for x in data):
                return data
            return super().convert_input(data)

    class DeepSpeedStrategy(_Lightning):
        """Lightning's strategy, allowed on the CPU when DeepSpeed's accelerator is the CPU."""

        def setup_environment(self) -> None:
            if isinstance(self.accelerator, CPUAccelerator):
                from deepspeed.accelerator import get_accelerator

                if get_accelerator().device_name() != "cpu":
                    raise ConfigError("trainer=deepspeed with trainer.accelerator=cpu needs DeepSpeed's CPU "
                                      "accelerator (DS_ACCELERATOR=cpu), not "
                                      f"{get_accelerator().device_name()!r}")
                DDPStrategy.setup_environment(self)  # Lightning's own check accepts CUDA only
                return
            super().setup_environment()

        def setup_distributed(self) -> None:
            if not isinstance(self.accelerator, CPUAccelerator):
                super().setup_distributed()
                return
            from lightning.fabric.utilities.seed import reset_seed

            # Lightning's version checks CUDA device indices against the local ranks first
            reset_seed()
            self.set_world_ranks()
            self._init_deepspeed_distributed()

        def _setup_model_and_optimizer(self, model: Any, optimizer: Any, lr_scheduler: Any = None) -> Any:
            if not isinstance(self.accelerator, CPUAccelerator):
                return super()._setup_model_and_optimizer(model, optimizer, lr_scheduler)
            import argparse

            import deepspeed

            # Lightning gives DeepSpeed the CUDA device's index, which a CPU device has not
            # (DeepSpeed then takes the run for one process); the CPU's "device" is the local rank
            engine, ds_optimizer, _, _ = deepspeed.initialize(
                args=argparse.Namespace(device_rank=self.local_rank), config=self.config, model=model,
                model_parameters=[p for p in model.parameters() if p.requires_grad], optimizer=optimizer,
                lr_scheduler=lr_scheduler, dist_init_required=False)
            return engine, ds_optimizer

    config = {
        "zero_optimization": {
            "stage": stage,
            **({"offload_optimizer": {"device": "cpu", "pin_memory": torch.cuda.is_available()}}
               if zero.get("offload_optimizer") else {}),
            **({"offload_param": {"device": "cpu", "pin_memory": torch.cuda.is_available()}}
               if zero.get("offload_parameters") and stage == 3 else {}),
        },
        "gradient_clipping": float(max_grad_norm or 0.0),
        # our optimisers are torch's AdamW (one parameter group for decayed weights, one not)
        "zero_allow_untested_optimizer": True,
        "zero_force_ds_cpu_optimizer": False,
        "train_micro_batch_size_per_gpu": 1,
    }
    if zero.get("offload_parameters") and stage != 3:
        raise ConfigError("trainer.zero.offload_parameters=true needs trainer.zero.stage=3 "
                          "(stage 2 keeps the whole weights in every process)")
    # the trainer's `precision` is not read once a strategy brings its own plugin
    return DeepSpeedStrategy(config=config, precision_plugin=Precision(precision))


def engine_of(module: Any) -> Any | None:
    """The DeepSpeed engine training ``module`` (a LightningModule), or None when its
    trainer's strategy is not DeepSpeed's."""
    from lightning.pytorch.strategies import DeepSpeedStrategy

    strategy = getattr(getattr(module, "_trainer", None), "strategy", None)
    return strategy.model if isinstance(strategy, DeepSpeedStrategy) else None


def log_partition(module: Any) -> None:
    """Under DeepSpeed, log how many of the policy's weights this process holds (ZeRO-3:
    its partition; ZeRO-2: all of them)."""
    engine = engine_of(module)
    if engine is None:
        return
    from kgreason.training.sharding import held_weights

    held, total = held_weights(module.policy.model)
    log.info("trainer=deepspeed (ZeRO-%d): this process holds %d of the policy's %d weights (%.1f %%) over %d "
             "processes", engine.zero_optimization_stage(), held, total, 100 * held / max(1, total),
             engine.world_size)


def before_backward(module: Any, last: bool) -> None:
    """Before each backward pass of a manual update under DeepSpeed: what the engine's own
    ``forward`` would have done (our passes call the policy, not the engine: a new micro-step
    starts, whose gradients ZeRO adds to the earlier ones'), and whether the pass is the last
    before the optimiser step (DeepSpeed reduces and steps at that boundary). Elsewhere
    nothing."""
    engine = engine_of(module)
    if engine is not None:
        engine.optimizer.clear_backward_seen_flag()
        engine.set_gradient_accumulation_boundary(last)


def zero3_params(*models: torch.nn.Module | None) -> list[torch.nn.Parameter]:
    """The parameters of ``models`` that ZeRO-3 has partitioned (none outside ZeRO-3)."""
    return [p for m in models if m is not None for p in m.parameters() if hasattr(p, "ds_id")]


def whole_weights(*models: torch.nn.Module | None) -> contextlib.AbstractContextManager:
    """ZeRO-3: ``models``' weights whole for the block (a collective every process enters),
    to read them (a state dict, a checkpoint); outside ZeRO-3 nothing."""
    params = zero3_params(*models)
    if not params:
        return contextlib.nullcontext()
    import deepspeed

    return deepspeed.zero.GatheredParameters(params)


@contextlib.contextmanager
def gathered_zero3(engine: Any, *models: torch.nn.Module | None) -> Iterator[None]:
    """ZeRO-3: every weight of ``models`` whole for the block, and ZeRO-3's per-module
    fetch-and-release hooks off, so each process may run as many forwards as its own
    questions take (TRL's ``unwrap_model_for_generation`` does the same for generation).
    Every process must enter it; outside ZeRO-3 it does nothing."""
    params = zero3_params(*models)
    if not params or engine is None:
        yield
        return
    import deepspeed

    # DeepSpeed's own hook lists, as TRL's unwrap_model_for_generation removes and restores them
    offload = getattr(engine.optimizer, "parameter_offload", None) or engine.optimizer
    with deepspeed.zero.GatheredParameters(params):
        for p in params:
            p.ds_active_sub_modules.clear()
        for hook in [*offload.forward_hooks, *offload.backward_hooks]:
            hook.remove()
        offload.forward_hooks, offload.backward_hooks = [], []
        try:
            yield
        finally:
            offload._register_deepspeed_module(offload.module)


def checkpoint_folder_shards(path: str | Path) -> int:
    """How many processes wrote the DeepSpeed checkpoint folder ``path`` (its optimiser shards)."""
    return len(list(Path(path).glob("checkpoint/*optim_states.pt")))


def check_deepspeed_config(cfg: Any) -> None:
    """Refuse what ``trainer=deepspeed`` does not run, naming what does.

    Raises:
        ConfigError: PPO's critic (a second optimiser), an engine other than ``hf`` under
            ZeRO-3 (the others read the weights whole), or a ``resume`` that is not a
            DeepSpeed folder written by as many processes (or is one, under another trainer).
    """
    from kgreason.training.distributed import checkpoint_kind

    trainer = cfg.get("trainer") or {}
    resume = cfg.get("resume")
    folder = bool(resume) and checkpoint_kind(resume) == "deepspeed"
    if str(trainer.get("strategy")) != "deepspeed":
        if folder:
            raise ConfigError(f"resume={resume!r} is a DeepSpeed checkpoint folder: resume it with trainer=deepspeed")
        return
    if resume and not folder:
        raise ConfigError(f"resume={resume!r} is not a DeepSpeed checkpoint; trainer=deepspeed resumes the folders "
                          "it writes (<run>/checkpoints/rl/last.ckpt/); resume this one under the trainer that wrote it")
    devices = trainer.get("devices", 1)
    if folder and str(devices).isdigit():  # `auto` and device lists are counted only at launch
        world = int(devices) * int(trainer.get("num_nodes", 1))
        wrote = checkpoint_folder_shards(resume)
        if wrote != world:
            raise ConfigError(f"resume={resume!r} holds the optimiser shards of {wrote} processes; this run has "
                              f"{world} (trainer.devices × trainer.num_nodes): ZeRO checkpoints resume into the "
                              "same number of processes")
    objective = cfg.get("objective") or {}
    if objective.get("critic") is not None:
        raise ConfigError("trainer=deepspeed trains one optimiser; objective.critic (PPO's value model) has its "
                          "own: use trainer=fsdp or trainer=ddp for PPO")
    stage = int((trainer.get("zero") or {}).get("stage", 2))
    if stage not in STAGES:
        raise ConfigError(f"trainer.zero.stage={stage}: choose one of {', '.join(map(str, STAGES))}")
    engine = str((cfg.get("engine") or {}).get("_target_", ""))
    if stage == 3 and engine and not engine.endswith("HFEngine"):
        raise ConfigError(f"trainer=deepspeed with ZeRO-3 rolls out with engine=hf (the gathered policy), not "
                          f"{engine.rsplit('.', 1)[-1]}: the other engines read the weights whole")
