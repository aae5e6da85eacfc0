"""LengthGroupedBatches under data parallelism: every process the same count, nothing lost."""

from __future__ import annotations

import pytest

from kgreason.training import LengthGroupedBatches


@pytest.mark.parametrize("n,world", [(10, 2), (13, 3), (3, 2)])
def test_each_process_takes_its_share_of_one_order(monkeypatch, n, world):
    lengths = [(7 * i) % 13 + 1 for i in range(n)]
    alone = list(LengthGroupedBatches(lengths, batch_size=2, mega=2, seed=1))
    shares = []
    for rank in range(world):
        monkeypatch.setattr(LengthGroupedBatches, "_replicas", staticmethod(lambda r=rank: (r, world)))
        sampler = LengthGroupedBatches(lengths, batch_size=2, mega=2, seed=1)
        shares.append(list(sampler))
        assert len(shares[-1]) == len(sampler)  # Lightning sizes the epoch by len()
    assert len({len(s) for s in shares}) == 1  # equal counts: no process waits in an all-reduce
    dealt = [b for i in range(len(shares[0])) for s in shares for b in s[i : i + 1]]
    assert dealt[: len(alone)] == alone  # the one-process order, dealt out in turn
    assert dealt[len(alone) :] == alone[: len(dealt) - len(alone)]  # padded with the first batches
