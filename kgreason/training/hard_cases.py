"""Hard-case resampling for RL (KG-Reasoner §4.3, "Hard cases Resample").

The first pass of RL goes over every training question, for a stable initial policy;
later passes draw only the multi-hop questions whose next-token loss during SFT was
above a threshold. The SFT stage measures that loss (``SFTLitModule.question_losses``);
the runner writes it to ``sft_losses.json`` and puts it on each question as
``sample.meta["sft_loss"]`` (:func:`annotate_sft_losses`), which is all this stream reads.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator, Mapping, Sequence

from torch.utils.data import IterableDataset

from kgreason.training.curriculum import sample_hops
from kgreason.types import KBQASample

log = logging.getLogger(__name__)

#: the key of a question's SFT loss in ``KBQASample.meta``
SFT_LOSS = "sft_loss"


def annotate_sft_losses(samples: Sequence[KBQASample], losses: Mapping[str, float]) -> int:
    """Write each question's SFT loss into ``sample.meta["sft_loss"]``; returns how many had one.

    >>> from kgreason.types import KBQASample
    >>> qs = [KBQASample(id="a", question="?"), KBQASample(id="b", question="?")]
    >>> annotate_sft_losses(qs, {"a": 0.5}), qs[0].meta, qs[1].meta
    (1, {'sft_loss': 0.5}, {})
    """
    n = 0
    for s in samples:
        if s.id in losses:
            s.meta[SFT_LOSS] = float(losses[s.id])
            n += 1
    return n


def select_hard_cases(samples: Sequence[KBQASample], threshold: float, min_hops: int = 2) -> list[KBQASample]:
    """The questions of at least ``min_hops`` hops whose SFT loss is above ``threshold``.

    A question SFT never trained on (no cold-start trajectory, or fewer SFT steps than
    one pass) has no loss and is not a hard case.

    >>> from kgreason.types import KBQASample
    >>> qs = [KBQASample(id=i, question="?", hops=h, meta={"sft_loss": l} if l is not None else {})
    ...       for i, h, l in [("a", 1, 0.9), ("b", 2, 0.9), ("c", 3, 0.1), ("d", 2, None)]]
    >>> [s.id for s in select_hard_cases(qs, threshold=0.5)]
    ['b']
    """
    return [s for s in samples if sample_hops(s) >= min_hops and s.meta.get(SFT_LOSS, float("-inf")) > threshold]


class HardCasesStream(IterableDataset):
    """Shuffled batches over every question for ``full_passes`` passes, then over the hard cases.

    The hard cases are :func:`hard_cases` of the questions when the stream is built (the
    runner annotates them after SFT). When there are none — no SFT, or no multi-hop
    question above the threshold — the stream keeps drawing from every question and
    says so in the log.

    Args:
        samples: training questions, annotated with ``meta["sft_loss"]``.
        batch_size: questions per batch.
        threshold: the SFT loss (token-mean NLL of the policy tokens) above which a
            multi-hop question is hard.
        min_hops: the fewest hops a hard case has (the paper keeps multi-hop ones).
        full_passes: passes over every question before the hard cases (paper: 1).
        seed: shuffling seed.
        start: batches to skip (a resumed run).
    """

    def __init__(self, samples: Sequence[KBQASample], batch_size: int, threshold: float, min_hops: int = 2,
                 full_passes: int = 1, seed: int = 0, start: int = 0):
        if not samples:
            raise ValueError("no training samples")
        if batch_size < 1 or batch_size > len(samples):
            raise ValueError(f"batch_size={batch_size}: must be in 1..{len(samples)} (the training questions)")
        self.samples = list(samples)
        self.batch_size = batch_size
        self.full_passes = full_passes
        self.seed = seed
        self.start = start
        self.hard = select_hard_cases(self.samples, threshold, min_hops)
        if not self.hard:
            log.warning("hard-case resampling: no question of ≥ %d hops has an SFT loss above %g "
                        "(%d of %d have a loss); later passes keep every question",
                        min_hops, threshold, sum(SFT_LOSS in s.meta for s in self.samples), len(self.samples))
        else:
            log.info("hard-case resampling: %d of %d questions are hard (≥ %d hops, SFT loss > %g)",
                     len(self.hard), len(self.samples), min_hops, threshold)

    def pool(self, pass_index: int) -> list[KBQASample]:
        """The questions pass ``pass_index`` (0-based) draws from."""
        return self.samples if pass_index < self.full_passes or not self.hard else self.hard

    def __iter__(self) -> Iterator[list[KBQASample]]:
        rng = random.Random(self.seed)
        it = 0
        p = 0
        while True:
            order = self.pool(p)[:]
            rng.shuffle(order)
            # a hard set smaller than a batch is drawn from with replacement
            if len(order) < self.batch_size:
                order = [order[rng.randrange(len(order))] for _ in range(self.batch_size)]
            for i in range(0, len(order) - self.batch_size + 1, self.batch_size):
                if it >= self.start:
                    yield order[i : i + self.batch_size]
                it += 1
            p += 1

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(questions={len(self.samples)}, hard={len(self.hard)}, "
                f"batch_size={self.batch_size}, full_passes={self.full_passes})")
