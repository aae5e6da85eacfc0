"""Trajectories → padded tensors: :func:`collate` (SFT) and :class:`TrainingBatch` (RL)."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import torch
from torch.utils.data import Sampler

from kgreason.training.distributed import rank_and_world
from kgreason.types import Trajectory


def collate(trajs: Sequence[Trajectory], pad_id: int, max_len: int | None = None) -> dict[str, Any]:
    """Right-pad token fields into ``[N, L]`` tensors (``turn_index`` pads with -1).

    Sequences longer than ``max_len`` are cut at the end (``truncated`` counts them);
    ``sample_ids`` lists each row's question id; ``sampler_logprobs`` is ``[N, L]`` when
    every trajectory carries the sampler's log-probs, else None.
    """
    lens = [len(t.token_ids) if max_len is None else min(len(t.token_ids), max_len) for t in trajs]
    width = max(lens) if lens else 0
    n = len(trajs)
    out: dict[str, Any] = {
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
    out["sampler_logprobs"] = None
    if trajs and all(t.sampler_logprobs is not None and len(t.sampler_logprobs) == len(t.token_ids) for t in trajs):
        out["sampler_logprobs"] = torch.zeros((n, width), dtype=torch.float32)
        for i, (t, k) in enumerate(zip(trajs, lens, strict=True)):
            out["sampler_logprobs"][i, :k] = torch.tensor(t.sampler_logprobs[:k], dtype=torch.float32)
    out["truncated"] = torch.tensor(sum(len(t.token_ids) > k for t, k in zip(trajs, lens, strict=True)))
    out["sample_ids"] = [t.sample_id for t in trajs]
    return out


@dataclass
class TrainingBatch:
    """What one RL update learns from: the padded sequences of an iteration's kept samples,
    their groups, rewards and per-token advantages (and, once computed, the old and the
    reference log-probs). The recorded episodes are :class:`~kgreason.types.Episode`.

    Shapes:
        - input_ids, attention_mask, turn_index: ``[N, L]`` (long; ``turn_index`` -1 on the
          prompt and on padding)
        - loss_mask, advantages, old_logp, ref_logp, sampler_logp: ``[N, L]`` (float;
          ``sampler_logp``: the rollout engine's log-probs of the policy tokens, None when
          the engine gave none); old_values, returns: the critic's values at sampling
          time and GAE's returns (PPO with a critic only)
        - index (group of each row), rewards: ``[N]``
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    turn_index: torch.Tensor
    advantages: torch.Tensor
    index: torch.Tensor
    rewards: torch.Tensor
    sample_ids: list[str]
    truncated: int = 0
    old_logp: torch.Tensor | None = None
    ref_logp: torch.Tensor | None = None
    sampler_logp: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    returns: torch.Tensor | None = None

    @classmethod
    def of(cls, trajs: Sequence[Trajectory], index: Sequence[int], advantages_of, pad_id: int,
           max_len: int | None = None) -> TrainingBatch:
        """Collate ``trajs`` (:func:`collate`) and spread their per-turn advantages over the
        tokens with ``advantages_of(turn_index, loss_mask) -> [N, L]``."""
        d = collate(trajs, pad_id, max_len)
        return cls(d["input_ids"], d["attention_mask"], d["loss_mask"], d["turn_index"],
                   advantages_of(d["turn_index"], d["loss_mask"]), torch.tensor(list(index), dtype=torch.long),
                   torch.tensor([t.reward for t in trajs], dtype=torch.float32), d["sample_ids"], int(d["truncated"]),
                   sampler_logp=d["sampler_logprobs"])

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def rows(self, idx: torch.Tensor) -> TrainingBatch:
        """The rows ``idx`` (a mini-batch), every tensor field cut alike.

        >>> b = TrainingBatch(*(torch.arange(6).view(3, 2),) * 5, torch.arange(3), torch.zeros(3), ["a", "b", "c"])
        >>> mb = b.rows(torch.tensor([2, 0]))
        >>> mb.input_ids.tolist(), mb.sample_ids, len(mb)
        ([[4, 5], [0, 1]], ['c', 'a'], 2)
        """
        keep = idx.tolist()
        return replace(self, sample_ids=[self.sample_ids[i] for i in keep],
                       **{f.name: v[idx] for f in fields(self) if isinstance(v := getattr(self, f.name), torch.Tensor)})

    def to(self, device: torch.device | str) -> TrainingBatch:
        return replace(self, **{f.name: v.to(device) for f in fields(self)
                                if isinstance(v := getattr(self, f.name), torch.Tensor)})


class LengthGroupedBatches(Sampler[list[int]]):
    """Batches of similar length (less padding), in random order, reshuffled each epoch.

    Indices are shuffled, cut into mega-batches of ``mega`` batches, sorted by length
    inside each mega-batch and cut into batches — the "group by length" of common
    trainers. With 4 × ~550-token SFT sequences this removes about a third of the padding.
    Under data parallelism (a process group is initialised) each process takes every
    ``world``-th batch; give the trainer ``use_distributed_sampler=False``.

    >>> lengths = [5, 100, 6, 101, 7, 102, 8, 103]
    >>> batches = list(LengthGroupedBatches(lengths, batch_size=2, mega=4, seed=0))
    >>> sorted(sorted(lengths[i] for i in b) for b in batches)
    [[5, 6], [7, 8], [100, 101], [102, 103]]
    """

    def __init__(self, lengths: Sequence[int], batch_size: int, mega: int = 50, seed: int = 0):
        self.lengths = list(lengths)
        self.batch_size = batch_size
        self.mega = mega
        self.seed = seed
        self.epoch = 0

    @staticmethod
    def _replicas() -> tuple[int, int]:
        return rank_and_world()

    def __iter__(self) -> Iterator[list[int]]:
        rank, world = self._replicas()
        rng = random.Random(self.seed + self.epoch)
        self.epoch += 1
        idx = list(range(len(self.lengths)))
        rng.shuffle(idx)
        span = self.batch_size * self.mega
        batches = []
        for i in range(0, len(idx), span):
            chunk = sorted(idx[i : i + span], key=lambda j: self.lengths[j])
            batches += [chunk[k : k + self.batch_size] for k in range(0, len(chunk), self.batch_size)]
        rng.shuffle(batches)
        # each process takes every world-th batch of the same order; the first batches
        # repeat so that all get the same count (as DistributedSampler pads)
        batches += batches[: -len(batches) % world]
        return iter(batches[rank::world])

    def __len__(self) -> int:
        return -(-((len(self.lengths) + self.batch_size - 1) // self.batch_size) // self._replicas()[1])
