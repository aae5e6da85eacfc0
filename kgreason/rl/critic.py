"""A learned critic for PPO: the value model, GAE, and the clipped value loss.

PPO (Schulman et al. 2017) with generalised advantage estimation (Schulman et al. 2016),
as verl's ``compute_gae_advantage_return`` and ``compute_value_loss`` define them. KG-R1's
"w PPO" row (paper 004, Table 3 and appendix A8) replaces GRPO by verl's PPO defaults
(γ = λ = 1, value clip 0.5, critic learning rate 1e-5) with a critic built from the
policy's own weights.

Multi-turn sequences interleave the policy's tokens with tool observations. The
observation tokens are not actions: GAE runs over the policy's tokens only (``mask``),
and a value is carried across the observation tokens between two turns, so the last token
of a turn bootstraps from the first token of the next.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn


@dataclass
class CriticSettings:
    """The critic's optimiser and loss (verl's PPO defaults).

    Attributes:
        lr: the critic's AdamW learning rate.
        value_clip: the new value is kept within ``old ± value_clip`` in the clipped loss.
        gamma / lam: GAE's discount and trace decay.
        whiten: normalise the advantages over the batch's policy tokens (verl does).
    """

    lr: float = 1e-5
    value_clip: float = 0.5
    gamma: float = 1.0
    lam: float = 1.0
    whiten: bool = True


class ValueModel(nn.Module):
    """A decoder with a scalar head: ``V(s_t)`` for every position.

    The value of token ``t`` is read from the hidden state before it (the state the policy
    chose token ``t`` in), so values line up with the per-token log-probs.

    Args:
        backbone: a Hugging Face decoder (``model.get_decoder()`` of a causal LM).
        hidden_size: its hidden size.

    Shapes: ``input_ids``/``attention_mask`` ``[N, L]`` → values ``[N, L]`` (position 0 is 0).
    """

    def __init__(self, backbone: nn.Module, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(hidden_size, 1)
        # a zero head: the first values are 0, the returns' scale is learnt from there
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @classmethod
    def from_policy(cls, policy: Any) -> ValueModel:
        """A critic from the policy's current weights (verl initialises its critic from the
        actor's checkpoint). A LoRA policy gets a LoRA critic with the same settings (only
        the adapters and the head train); a full one trains every weight."""
        model = copy.deepcopy(policy.model)
        lora = getattr(policy, "lora", None)
        if hasattr(model, "merge_and_unload"):  # peft: fold the policy's adapters in
            model = model.merge_and_unload()
        backbone = model.get_decoder()
        hidden = model.config.hidden_size
        if lora is not None:
            from peft import LoraConfig, get_peft_model

            n = model.config.num_hidden_layers
            layers = list(range(n - lora.top_layers, n)) if lora.top_layers else None
            with warnings.catch_warnings():  # peft reads a property transformers 5 deprecated
                warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing", category=FutureWarning)
                # the decoder's layers are ``layers.N`` (no ``model.`` prefix): peft needs the pattern named
                config = LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                                    target_modules=list(lora.target_modules), layers_to_transform=layers,
                                    layers_pattern="layers" if layers else None)
                backbone = get_peft_model(backbone, config)
        else:
            backbone.requires_grad_(True)
        critic = cls(backbone, hidden).to(next(model.parameters()).device)
        critic.head.float()
        return critic

    def forward(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        v = self.head(hidden.float()).squeeze(-1)
        return torch.cat([v.new_zeros(v.shape[0], 1), v[:, :-1]], dim=1)


def terminal_rewards(rewards: Tensor, mask: Tensor) -> Tensor:
    """Each row's reward on its last policy token, 0 elsewhere (an outcome reward).

    Shapes: ``rewards [N]``, ``mask [N, L]`` → ``[N, L]``.

    >>> terminal_rewards(torch.tensor([2.0, 5.0]), torch.tensor([[0, 1, 1, 0], [0, 0, 0, 0]]))
    tensor([[0., 0., 2., 0.],
            [0., 0., 0., 0.]])
    """
    m = mask.bool()
    pos = torch.arange(m.shape[1], device=m.device).expand_as(m)
    last = torch.where(m, pos, -1).max(dim=1).values
    out = torch.zeros(m.shape, dtype=torch.float32, device=m.device)
    rows = torch.nonzero(last >= 0).squeeze(-1)
    out[rows, last[rows]] = rewards[rows].float().to(out.device)
    return out


def gae(rewards: Tensor, values: Tensor, mask: Tensor, gamma: float = 1.0, lam: float = 1.0) -> tuple[Tensor, Tensor]:
    """Generalised advantage estimates and returns over the policy's tokens.

    ``δ_k = r_k + γ V_{k+1} − V_k`` and ``A_k = δ_k + γλ A_{k+1}`` over the masked tokens
    of a row in order (unmasked tokens are skipped, ``V`` after the last one is 0);
    returns are ``A + V``.

    Shapes: ``rewards``, ``values``, ``mask`` ``[N, L]`` → advantages and returns ``[N, L]``
    (0 off the mask).

    Hand-worked, one row, γ = λ = 1, the reward 1 on the last of three policy tokens with an
    observation token between the second and the third: values 0.2, 0.5, (obs), 0.8 give
    ``A = 1 − V``:

    >>> a, r = gae(torch.tensor([[0, 0, 0, 1.0]]), torch.tensor([[0.2, 0.5, 9.0, 0.8]]),
    ...            torch.tensor([[1, 1, 0, 1]]))
    >>> a.round(decimals=4), r.round(decimals=4)
    (tensor([[0.8000, 0.5000, 0.0000, 0.2000]]), tensor([[1., 1., 0., 1.]]))

    With γ = 1, λ = 0 each advantage is its one-step error ``V_{k+1} − V_k`` (and ``r − V``
    at the end):

    >>> gae(torch.tensor([[0, 0, 1.0]]), torch.tensor([[0.2, 0.5, 0.8]]), torch.ones(1, 3), lam=0.0)[0]
    tensor([[0.3000, 0.3000, 0.2000]])
    """
    m = mask.float()
    values = values.float() * m
    adv = torch.zeros_like(values)
    next_value = torch.zeros(values.shape[0], dtype=values.dtype, device=values.device)
    carry = torch.zeros_like(next_value)
    for t in reversed(range(values.shape[1])):
        mt = m[:, t]
        delta = rewards[:, t].float() + gamma * next_value - values[:, t]
        a_t = delta + gamma * lam * carry
        adv[:, t] = a_t * mt
        # an observation token passes the next turn's value and advantage through
        carry = torch.where(mt > 0, a_t, carry)
        next_value = torch.where(mt > 0, values[:, t], next_value)
    return adv, (adv + values) * m


def masked_moments(x: Tensor, mask: Tensor) -> Tensor:
    """``[count, sum, sum of squares]`` of the masked entries (float64): what
    :func:`whiten` needs, summable over data-parallel processes.

    >>> masked_moments(torch.tensor([[1.0, 2.0, 3.0, 7.0]]), torch.tensor([[1, 1, 1, 0]])).tolist()
    [3.0, 6.0, 14.0]
    """
    m, x = mask.double(), x.double()
    return torch.stack([m.sum(), (x * m).sum(), (x * x * m).sum()])


def whiten(x: Tensor, mask: Tensor, eps: float = 1e-8, moments: Tensor | None = None) -> Tensor:
    """``(x − mean) / std`` over the masked entries (verl's ``masked_whiten``), 0 elsewhere.

    ``moments`` (:func:`masked_moments`, summed over processes) gives the statistics of
    the whole batch when ``x`` is one process's share of it; default: ``x``'s own.

    >>> whiten(torch.tensor([[1.0, 2.0, 3.0, 7.0]]), torch.tensor([[1, 1, 1, 0]])).round(decimals=4)
    tensor([[-1.2247,  0.0000,  1.2247,  0.0000]])
    """
    n, total, squares = (masked_moments(x, mask) if moments is None else moments).tolist()
    n = max(n, 1.0)
    mean = total / n
    var = max(squares / n - mean * mean, 0.0)
    return (x - mean) * (var + eps) ** -0.5 * mask.to(x.dtype)


def value_loss(values: Tensor, old_values: Tensor, returns: Tensor, mask: Tensor,
               clip: float = 0.5) -> tuple[Tensor, dict[str, float]]:
    """PPO's clipped value loss: ``½ · mean_tokens max((V − R)², (clip(V, V_old ± c) − R)²)``.

    Shapes: every tensor ``[N, L]`` → a scalar, and metrics (``vf_loss``, ``vf_clip_frac``,
    ``value_mean``).

    >>> v, old, ret = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[0.0, 1.0]])
    >>> float(value_loss(v, old, ret, torch.ones(1, 2), clip=0.5)[0])
    0.5
    """
    m = mask.float()
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    unclipped_err = (values - returns) ** 2
    clipped_err = (clipped - returns) ** 2
    per_token = torch.max(unclipped_err, clipped_err)
    n = m.sum().clamp(min=1)
    loss = 0.5 * (per_token * m).sum() / n
    return loss, {"vf_loss": float(loss.detach()),
                  "vf_clip_frac": float(((clipped_err > unclipped_err).float() * m).sum() / n),
                  "value_mean": float((values.detach() * m).sum() / n)}
