"""KG-R1's turn-level advantage estimator (registered as ``kg_r1_turn``)."""

from __future__ import annotations

import torch
from torch import Tensor

from kgreason.rl.advantages import ADVANTAGES, AdvantageBatch, group_normalize


@ADVANTAGES.register("kg_r1_turn", rollout="linear")
def kg_r1_turn(batch: AdvantageBatch, lam: float = 1.0, mode: str = "paper", turn_weight: float = 0.5,
               eps: float = 1e-6) -> list[Tensor]:
    """KG-R1's turn-level group credit (Song et al., §3.3 eq. 3).

    ``mode="paper"``: ``G_t = r_t + λ·R_global``, z-scored with one mean and std pooled
    over all turns of all rollouts of the same question.
    ``mode="code"`` (official code): ``turn_weight · z(r_t) + z(R_global)`` with turn rewards
    z-scored over all turns of the group and global rewards over its trajectories; as
    there (verl's GRPO), the std is ``torch.std``'s (``n − 1``) and a group of one keeps its
    raw reward.
    """
    if batch.turn_rewards is None or batch.global_rewards is None:
        raise ValueError("kg_r1_turn needs turn_rewards and global_rewards")
    lengths = [len(t) for t in batch.turn_rewards]
    repeats = torch.tensor(lengths, device=batch.index.device)
    turn_index = torch.repeat_interleave(batch.index, repeats)
    flat_turn = torch.cat([t.float() for t in batch.turn_rewards])
    if mode == "paper":
        g_flat = flat_turn + lam * torch.repeat_interleave(batch.global_rewards.float(), repeats)
        flat = group_normalize(g_flat, turn_index, True, eps)
    elif mode == "code":
        turn_adv = group_normalize(flat_turn, turn_index, True, eps, unbiased=True, singleton_raw=True)
        glob_adv = group_normalize(batch.global_rewards.float(), batch.index, True, eps, unbiased=True,
                                   singleton_raw=True)
        flat = turn_weight * turn_adv + torch.repeat_interleave(glob_adv, repeats)
    else:
        raise ValueError("mode must be 'paper' or 'code'")
    return list(torch.split(flat, lengths))
