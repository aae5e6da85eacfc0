"""Difficulty curricula over training questions (ISP/DTPO appendix E.1)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

from torch.utils.data import IterableDataset

from kgreason.types import KBQASample


def sample_hops(sample: KBQASample) -> int:
    """Hops of a question: ``sample.hops``, else its relation path's length, else 1."""
    return sample.hops or (len(sample.relation_path) if sample.relation_path else 1)


def hop_level(sample: KBQASample) -> int:
    """0 = easy (≤ 1 hop), 1 = medium (2 hops), 2 = hard (≥ 3 hops), by :func:`sample_hops`."""
    hops = sample_hops(sample)
    return 0 if hops <= 1 else 1 if hops == 2 else 2


class StagedStream(IterableDataset):
    """Batches of questions whose difficulty grows in stages (easy → + medium → + hard).

    Stage ``s`` (0-based) draws from every level ``≤ s``, so earlier levels stay in the
    mix as harder ones are introduced; the stage advances every ``stage_iterations``
    batches and the last stage lasts for ever. ``start`` skips batches (on resume).

    Args:
        samples: training questions.
        batch_size: questions per batch.
        stage_iterations: batches per stage before the next level is added.
        level: question → level index (default :func:`hop_level`).
        n_levels: number of levels (3: easy, medium, hard).
    """

    def __init__(self, samples: Sequence[KBQASample], batch_size: int, stage_iterations: int,
                 level: Callable[[KBQASample], int] = hop_level, n_levels: int = 3, seed: int = 0,
                 start: int = 0):
        if not samples:
            raise ValueError("no training samples")
        if stage_iterations < 1:
            raise ValueError("stage_iterations must be at least 1")
        self.by_level: list[list[KBQASample]] = [[] for _ in range(n_levels)]
        for s in samples:
            self.by_level[min(max(level(s), 0), n_levels - 1)].append(s)
        self.batch_size = batch_size
        self.stage_iterations = stage_iterations
        self.seed = seed
        self.start = start

    def stage(self, iteration: int) -> int:
        """The hardest level in play at batch ``iteration`` (empty levels take no stage)."""
        present = [i for i, lvl in enumerate(self.by_level) if lvl]
        return present[min(iteration // self.stage_iterations, len(present) - 1)]

    def pool(self, stage: int) -> list[KBQASample]:
        return [s for lvl in self.by_level[: stage + 1] for s in lvl]

    def __iter__(self) -> Iterator[list[KBQASample]]:
        rng = random.Random(self.seed)
        it = 0
        while True:
            pool = self.pool(self.stage(it))
            batch = [pool[rng.randrange(len(pool))] for _ in range(self.batch_size)]
            if it >= self.start:
                yield batch
            it += 1
