"""Multi-turn SFT as a LightningModule: loss on the policy's tokens only."""

from __future__ import annotations

import lightning as L
import torch
from torch import Tensor

from kgreason.models.policy import CausalLMPolicy, first_loss_position


def masked_nll(policy: CausalLMPolicy, batch: dict[str, Tensor]) -> Tensor:
    """Mean negative log-likelihood of the tokens whose loss mask is 1.

    Shapes: batch tensors ``[N, L]`` → scalar.
    """
    mask = batch["loss_mask"]
    lp, _ = policy.token_logprobs(batch["input_ids"], batch["attention_mask"], from_pos=first_loss_position(mask))
    return -(lp * mask).sum() / mask.sum().clamp(min=1)


class SFTLitModule(L.LightningModule):
    """Supervised fine-tuning on multi-turn trajectories (LoRA or full, as the policy is).

    The policy arrives built; the module never reads config strings.
    """

    def __init__(self, policy: CausalLMPolicy, lr: float = 1e-4, weight_decay: float = 0.0):
        super().__init__()
        self.policy = policy
        self.model = policy.model  # registered so Lightning moves and checkpoints it
        self.lr = lr
        self.weight_decay = weight_decay

    def training_step(self, batch: dict[str, Tensor], batch_idx: int) -> Tensor:
        loss = masked_nll(self.policy, batch)
        self.log("sft/loss", loss, prog_bar=True, batch_size=batch["input_ids"].shape[0])
        self.log("sft/policy_tokens", batch["loss_mask"].sum(), batch_size=batch["input_ids"].shape[0])
        return loss

    def validation_step(self, batch: dict[str, Tensor], batch_idx: int) -> None:
        self.log("val/sft_loss", masked_nll(self.policy, batch), prog_bar=True,
                 batch_size=batch["input_ids"].shape[0])

    def configure_optimizers(self):
        return torch.optim.AdamW(list(self.policy.parameters()), lr=self.lr, weight_decay=self.weight_decay)
