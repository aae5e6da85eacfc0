"""Train / evaluation subsets never share a question."""

from __future__ import annotations

from kgreason.data import load_dataset, sample_subset, train_eval_split
from kgreason.types import KBQASample
from tests.conftest import shared


def _qs(n: int, prefix: str = "q") -> list[KBQASample]:
    return [KBQASample(id=f"{prefix}{i}", question="?") for i in range(n)]


def test_same_pool_holds_the_evaluation_questions_out_of_training():
    pool = _qs(20)
    train, held = train_eval_split(pool, pool, None, 5, seed=3)
    assert len(held) == 5 and len(train) == 15
    assert {q.id for q in train} | {q.id for q in held} == {q.id for q in pool}
    # a training limit draws from what is left, never from the held-out questions
    train, held2 = train_eval_split(pool, pool, 4, 5, seed=3)
    assert [q.id for q in held2] == [q.id for q in held] and len(train) == 4
    assert not {q.id for q in train} & {q.id for q in held}


def test_disjoint_pools_are_sampled_as_before():
    tr, dv = _qs(10, "t"), _qs(10, "d")
    train, held = train_eval_split(tr, dv, 3, 4, seed=0)
    assert [q.id for q in train] == [q.id for q in sample_subset(tr, 3, 0)]
    assert [q.id for q in held] == [q.id for q in sample_subset(dv, 4, 1)]


def test_metaqa_one_hop_dev_holds_out_500():
    dev = load_dataset("metaqa", shared("metaqa"), split="dev", hops=1)
    assert len({q.id for q in dev}) == len(dev)  # ids are unique, so removal by id is exact
    train, held = train_eval_split(dev, dev, None, 500, seed=0)
    assert len(held) == 500 and len(train) == len(dev) - 500
    assert not {q.id for q in held} & {q.id for q in train}
