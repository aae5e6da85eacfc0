"""Multi-turn SFT as a LightningModule: loss on the policy's tokens only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import lightning as L
import torch
from torch import Tensor

from kgreason.models.policy import first_loss_position
from kgreason.models.protocol import TrainablePolicy, check_policy


def masked_nll(policy: TrainablePolicy, batch: dict[str, Tensor], weights: Tensor | None = None) -> Tensor:
    """Mean negative log-likelihood of the tokens whose loss mask is 1, optionally weighted.

    Shapes: batch tensors and ``weights`` ``[N, L]`` → scalar.
    """
    total, weight, _ = _masked_nll(policy, batch, weights)
    return total / weight.clamp(min=1e-8)


def _masked_nll(policy: TrainablePolicy, batch: dict[str, Tensor],
                weights: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """The batch's (weighted) summed NLL, the summed weight it is a mean over (detached),
    and each sequence's unweighted mean NLL (detached).

    Shapes: batch tensors ``[N, L]`` → scalar, scalar, ``[N]``.
    """
    mask = batch["loss_mask"]
    w = mask if weights is None else weights * mask
    lp, _ = policy.token_logprobs(batch["input_ids"], batch["attention_mask"], from_pos=first_loss_position(mask),
                                  loss_mask=mask)
    per_sequence = -(lp.detach() * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    return -(lp * w).sum(), w.sum().detach().float(), per_sequence


def turn_opening_weights(loss_mask: Tensor, skip: int, n_tokens: int, weight: float) -> Tensor:
    """Weights that stress the opening of every policy turn.

    In each run of loss-mask ones (one policy turn), the ``n_tokens`` tokens after the
    first ``skip`` get ``weight``, every other token 1. In KG-R1 episodes those are the
    first words of the ``<think>``, where the turn's decision is written — list relations,
    follow one (its name comes first), or answer — while the rest of a turn mostly
    copies names from the context.

    Shapes: ``loss_mask`` ``[N, L]`` → ``[N, L]``.

    >>> turn_opening_weights(torch.tensor([[0., 1, 1, 1, 1, 0, 1, 1, 1]]), skip=1, n_tokens=2, weight=3.0)
    tensor([[1., 1., 3., 3., 1., 1., 1., 3., 3.]])
    """
    on = loss_mask > 0
    starts = on & ~torch.nn.functional.pad(on[:, :-1], (1, 0), value=False)
    # index of each position within its run of ones (runs restart at every start)
    pos = torch.arange(loss_mask.shape[1], device=loss_mask.device).expand_as(loss_mask)
    last_start = torch.cummax(torch.where(starts, pos, torch.zeros_like(pos)), dim=1).values
    offset = pos - last_start
    opening = on & (offset >= skip) & (offset < skip + n_tokens)
    return torch.where(opening, weight, 1.0).float()


class SFTLitModule(L.LightningModule):
    """Supervised fine-tuning on multi-turn trajectories (LoRA or full, as the policy is).

    The policy arrives built; the module never reads config strings.

    Args:
        policy: the :class:`~kgreason.models.CausalLMPolicy` to train.
        lr, weight_decay: AdamW settings.
        opening_weight, opening_skip, opening_tokens: weight the opening tokens of every
            policy turn (:func:`turn_opening_weights`); weight 1 is the plain mean.
        lr_lambda: step → multiplier of ``lr``, applied every optimizer step (e.g.
            :func:`~kgreason.training.schedules.warmup_cosine`); ``None`` keeps it constant.
        bf16: run the training passes under bf16 autocast even where the policy itself
            runs in float32: the weights stay float32, so generation (rollouts,
            evaluation) keeps its precision while SFT gets bf16's faster matrix products
            on hosts that have them (docs/training.md has the measurements).
        hparams: more to save as hyper-parameters (the runner gives its whole config).
    """

    def __init__(self, policy: TrainablePolicy, lr: float = 1e-4, weight_decay: float = 0.0,
                 opening_weight: float = 1.0, opening_skip: int = 0, opening_tokens: int = 0,
                 lr_lambda: Callable[[int], float] | None = None, bf16: bool = False,
                 hparams: Mapping[str, Any] | None = None):
        super().__init__()
        # given to every logger (hparams.yaml beside metrics.csv, TensorBoard, W&B config)
        self.save_hyperparameters({"sft": {"lr": lr, "weight_decay": weight_decay, "bf16": bf16}, **(hparams or {})})
        check_policy(policy, TrainablePolicy)
        self.bf16 = bf16
        self.policy = policy
        self.model = policy.model  # registered so Lightning moves and checkpoints it
        self.lr = lr
        self.weight_decay = weight_decay
        #: see :func:`turn_opening_weights` (weight 1: a plain token mean)
        self.opening = (opening_skip, opening_tokens, opening_weight)
        self.lr_lambda = lr_lambda
        #: sample id → (optimizer step, summed NLL, sequences) of the last batch that held it
        self._last_seen: dict[str, tuple[int, float, int]] = {}

    @property
    def question_losses(self) -> dict[str, float]:
        """Sample id → the token-mean NLL of its policy tokens the last time SFT trained on
        it, averaged over its trajectories in that step (KG-Reasoner's hard-case measure,
        §4.3); needs ``sample_ids`` in the batch. Under data parallelism every process
        holds every process's questions once training ends."""
        return {sid: total / n for sid, (_, total, n) in self._last_seen.items()}

    def configure_model(self) -> None:
        """Shard the policy under ``trainer=fsdp`` (:mod:`kgreason.training.sharding`)."""
        from kgreason.training.sharding import shard_for_strategy

        shard_for_strategy(self)

    def on_fit_start(self) -> None:
        # transformers loads models in eval mode, and Lightning trains modules in the mode
        # it finds them in (warning about each of them)
        self.model.train()
        from kgreason.training.zero import log_partition

        log_partition(self)

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        skip, n_tokens, weight = self.opening
        weights = None
        if weight != 1.0 and n_tokens > 0:
            weights = turn_opening_weights(batch["loss_mask"], skip, n_tokens, weight)
        with self.policy.autocast(self.bf16):
            total, denom, per_sequence = _masked_nll(self.policy, batch, weights)
        for sid, v in zip(batch.get("sample_ids", ()), per_sequence.float().tolist(), strict=False):
            _remember(self._last_seen, sid, (self.global_step, v, 1))
        world = self.trainer.world_size
        if world == 1:
            loss = total / denom.clamp(min=1e-8)
            mean = loss.detach()
        else:
            # the processes' batches hold different token counts: each takes its share of the
            # combined batch's token mean, and the gradient all-reduce (an average over the
            # processes, hence × world) adds the shares up to the step one process would make
            both = self.trainer.strategy.reduce(torch.stack([total.detach().float(), denom]), reduce_op="sum")
            loss = total * (world / both[1].clamp(min=1e-8))
            mean = both[0] / both[1].clamp(min=1e-8)
        self.log("sft/loss", mean, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        self.log("sft/policy_tokens", batch["loss_mask"].sum(), batch_size=batch["input_ids"].shape[0])
        self.log("sft/lr", self.optimizers().optimizer.param_groups[0]["lr"], batch_size=batch["input_ids"].shape[0])
        return loss

    def on_train_end(self) -> None:
        # each process trained on its own batches: all end with every question's loss, so
        # the streams that read them (curriculum=hard_cases) draw the same batches everywhere
        world = self.trainer.world_size
        if world == 1:
            return
        shares: list[dict[str, tuple[int, float, int]] | None] = [None] * world
        torch.distributed.all_gather_object(shares, self._last_seen)
        merged: dict[str, tuple[int, float, int]] = {}
        for share in shares:
            for sid, seen in (share or {}).items():
                _remember(merged, sid, seen)
        self._last_seen = merged

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self.log("val/sft_loss", masked_nll(self.policy, batch), prog_bar=True,
                 batch_size=batch["input_ids"].shape[0])

    def configure_optimizers(self):
        opt = torch.optim.AdamW(list(self.policy.parameters()), lr=self.lr, weight_decay=self.weight_decay)
        if self.lr_lambda is None:
            return opt
        sched = torch.optim.lr_scheduler.LambdaLR(opt, self.lr_lambda)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def _remember(seen: dict[str, tuple[int, float, int]], sid: str, entry: tuple[int, float, int]) -> None:
    """Keep a question's latest step; trajectories of the same step (one batch, or its
    shares on several processes) add up to their mean."""
    old = seen.get(sid)
    if old is None or entry[0] > old[0]:
        seen[sid] = entry
    elif entry[0] == old[0]:
        seen[sid] = (old[0], old[1] + entry[1], old[2] + entry[2])
