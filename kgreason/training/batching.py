"""Trajectories → padded tensors."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from kgreason.types import Trajectory


def collate(trajs: Sequence[Trajectory], pad_id: int, max_len: int | None = None) -> dict[str, Tensor]:
    """Right-pad token fields into ``[N, L]`` tensors (``turn_index`` pads with -1).

    Sequences longer than ``max_len`` are cut at the end (``truncated`` counts them).
    """
    lens = [len(t.token_ids) if max_len is None else min(len(t.token_ids), max_len) for t in trajs]
    width = max(lens) if lens else 0
    n = len(trajs)
    out = {
        "input_ids": torch.full((n, width), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((n, width), dtype=torch.long),
        "loss_mask": torch.zeros((n, width), dtype=torch.float32),
        "turn_index": torch.full((n, width), -1, dtype=torch.long),
    }
    for i, (t, k) in enumerate(zip(trajs, lens, strict=True)):
        out["input_ids"][i, :k] = torch.tensor(t.token_ids[:k])
        out["attention_mask"][i, :k] = 1
        out["loss_mask"][i, :k] = torch.tensor(t.loss_mask[:k], dtype=torch.float32)
        out["turn_index"][i, :k] = torch.tensor(t.turn_index[:k])
    out["truncated"] = torch.tensor(sum(len(t.token_ids) > k for t, k in zip(trajs, lens, strict=True)))
    return out
