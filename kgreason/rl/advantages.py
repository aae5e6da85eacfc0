"""Advantage estimators (design §7, docs/design.md), picked by name: ``get_advantage("grpo")``.

Every estimator takes an :class:`AdvantageBatch` (trajectories of one or more groups) and
returns per-turn advantages, one tensor per trajectory (``[T_n]``); trajectory-level
estimators repeat their value over the turns. :func:`token_advantages` spreads them to
tokens through the trajectories' ``turn_index``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from kgreason.registry import Registry


@dataclass
class AdvantageBatch:
    """Rewards of N trajectories.

    Attributes:
        rewards: ``[N]`` total reward of each trajectory.
        index: ``[N]`` group id (the prompt) of each trajectory.
        turn_rewards: per trajectory, ``[T_n]`` turn rewards (KG-R1).
        global_rewards: ``[N]`` trajectory-level (global) rewards (KG-R1).
        n_turns: per trajectory, its number of turns (defaults from ``turn_rewards``, else 1).
    """

    rewards: Tensor
    index: Tensor
    turn_rewards: list[Tensor] | None = None
    global_rewards: Tensor | None = None
    n_turns: list[int] | None = None

    def turns(self) -> list[int]:
        if self.n_turns is not None:
            return self.n_turns
        if self.turn_rewards is not None:
            return [len(t) for t in self.turn_rewards]
        return [1] * len(self.rewards)


Estimator = Callable[..., list[Tensor]]
ADVANTAGES: Registry[Estimator] = Registry("advantage estimator")


def get_advantage(name: str) -> Estimator:
    return ADVANTAGES.get(name)


def group_normalize(values: Tensor, index: Tensor, norm_by_std: bool = True, eps: float = 1e-6,
                    unbiased: bool = False, singleton_raw: bool = False) -> Tensor:
    """``(v - mean_g) / (std_g + eps)`` within each group ``g``.

    Statistics run in float64: in float32 a group of equal rewards such as 5/3 got
    advantages of 0.1–0.4 (the rounding error of its mean, divided by ``std + eps``); the
    result comes back in ``values``' dtype.

    Args:
        unbiased: sample std (``n − 1``, ``torch.std``) instead of the population std.
        singleton_raw: a group of one keeps its raw value (verl: mean 0, std 1).

    Shapes: values ``[N]``, index ``[N]`` → ``[N]``.

    >>> group_normalize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 0]), norm_by_std=False)
    tensor([-1.,  0.,  1.])
    >>> group_normalize(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 0, 0])).round(decimals=4)
    tensor([-1.2247,  0.0000,  1.2247])
    >>> group_normalize(torch.full((16,), 5 / 3), torch.zeros(16, dtype=torch.long)).abs().max()
    tensor(0.)
    """
    v = values.double()
    groups, inv = torch.unique(index, return_inverse=True)
    g = len(groups)
    count = v.new_zeros(g).index_add_(0, inv, torch.ones_like(v))
    mean = v.new_zeros(g).index_add_(0, inv, v) / count
    centred = v - mean[inv]
    if norm_by_std:
        denom = (count - 1).clamp(min=1) if unbiased else count
        var = v.new_zeros(g).index_add_(0, inv, centred**2) / denom
        centred = centred / (var.sqrt()[inv] + eps)
    if singleton_raw:
        centred = torch.where(count[inv] == 1, v, centred)
    return centred.to(values.dtype)


@ADVANTAGES.register("grpo")
def grpo(batch: AdvantageBatch, norm_by_std: bool = True, eps: float = 1e-6,
         clamp: float | None = None) -> list[Tensor]:
    """GRPO (Shao et al. 2024): group-mean baseline, divided by the group std.

    ``norm_by_std=False`` is Dr. GRPO (Liu et al. 2025) / KBQA-R1's mean-centred form and
    KG-Reasoner's REINFORCE with a group-mean baseline. ``clamp`` bounds the rewards
    first, as :func:`tree_step` does (ISP/DTPO's trajectory-level RQ1 baseline keeps the
    tree objective's settings).

    >>> b = AdvantageBatch(rewards=torch.tensor([1.0, 3.0, 20.0]), index=torch.tensor([0, 0, 0]))
    >>> [round(float(a), 4) for a in torch.cat(grpo(b, norm_by_std=False, clamp=5.0))]
    [-2.0, 0.0, 2.0]
    """
    r = batch.rewards.float()
    if clamp is not None:
        r = r.clamp(-clamp, clamp)
    adv = group_normalize(r, batch.index, norm_by_std, eps)
    return [a.repeat(n) for a, n in zip(adv, batch.turns(), strict=True)]


@ADVANTAGES.register("tree_step", rollout="tree")
def tree_step(batch: AdvantageBatch, clamp: float | None = None, norm_by_std: bool = True,
              eps: float = 1e-6) -> list[Tensor]:
    """DTPO's step-level groups (ISP/DTPO, paper 002 §4.3 and G.1).

    Each sample is one tree node (one step: its parent's context and its own action);
    ``batch.index`` is the id of the expanded parent, so a node's siblings are its group
    and its reward is z-scored among them. ``clamp`` bounds rewards first (official code:
    10). Group resizing and dropping zero-variance groups choose which samples enter the
    batch (:func:`kgreason.training.tree_rl.step_samples`).

    >>> b = AdvantageBatch(rewards=torch.tensor([1.0, -0.5, 0.4, 0.4]), index=torch.tensor([7, 7, 9, 9]))
    >>> [round(float(a), 4) for a in torch.cat(tree_step(b))]
    [1.0, -1.0, 0.0, 0.0]
    >>> [round(float(a), 4) for a in torch.cat(tree_step(b, clamp=0.45))]
    [1.0, -1.0, 0.0, 0.0]
    """
    r = batch.rewards.float()
    if clamp is not None:
        r = r.clamp(-clamp, clamp)
    adv = group_normalize(r, batch.index, norm_by_std, eps)
    return [a.repeat(n) for a, n in zip(adv, batch.turns(), strict=True)]


@ADVANTAGES.register("gae")
def gae_from_critic(batch: AdvantageBatch, **kwargs: object) -> list[Tensor]:
    """PPO's generalised advantage estimation (Schulman et al. 2016): token-level, from a
    learned critic's values, so it has no per-turn form here. Name it with
    ``objective.critic`` and :class:`~kgreason.training.RLLitModule` computes it
    (:func:`kgreason.rl.critic.gae`)."""
    raise ValueError("advantage 'gae' is computed from a critic's values: set objective.critic "
                     "(kgreason.rl.CriticSettings), as objective=ppo does")


def token_advantages(per_turn: list[Tensor], turn_index: Tensor, loss_mask: Tensor) -> Tensor:
    """Spread per-turn advantages over tokens.

    Shapes: ``turn_index`` and ``loss_mask`` ``[N, L]`` (turn of each token, -1 for the
    prompt and padding) → ``[N, L]``, zero wherever the mask is 0.

    >>> token_advantages([torch.tensor([1.0, -2.0])], torch.tensor([[-1, 0, 0, 1]]), torch.tensor([[0, 1, 0, 1]]))
    tensor([[ 0.,  1.,  0., -2.]])
    """
    out = torch.zeros(turn_index.shape, dtype=torch.float32, device=turn_index.device)
    for i, adv in enumerate(per_turn):
        idx = turn_index[i].clamp(min=0, max=max(len(adv) - 1, 0))
        vals = adv.float()[idx] if len(adv) else torch.zeros_like(idx, dtype=torch.float32)
        out[i] = vals * (turn_index[i] >= 0) * loss_mask[i]
    return out
