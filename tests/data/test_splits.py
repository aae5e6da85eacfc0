"""Train / evaluation subsets never share a question."""

from __future__ import annotations

from collections import Counter

import pytest

from kgreason.data import load_dataset, load_splits, sample_subset, train_eval_split
from kgreason.errors import DatasetError
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


def test_stratified_held_out_takes_equal_shares_of_each_hop_count():
    pool = [KBQASample(id=f"q{i}", question="?", hops=h) for i, h in enumerate([1] * 30 + [2] * 60 + [3] * 10)]
    train, held = train_eval_split(pool, pool, None, 24, seed=0, stratify="hops")
    assert Counter(q.hops for q in held) == {1: 8, 2: 8, 3: 8}
    assert not {q.id for q in train} & {q.id for q in held} and len(train) == 76
    # a value with fewer questions than its share gives all it has
    _, held = train_eval_split(pool, pool, None, 60, seed=0, stratify="hops")
    assert Counter(q.hops for q in held) == {1: 20, 2: 20, 3: 10}


def test_stratify_by_an_unknown_field_names_the_valid_ones():
    with pytest.raises(DatasetError, match=r"data.stratify='hop'.*'hops'"):
        train_eval_split(_qs(4), _qs(4), None, 2, seed=0, stratify="hop")


def test_metaqa_all_hops_holds_out_the_same_number_of_each():
    _, held = load_splits("metaqa", shared("metaqa"), "dev", "dev", 300, 90, seed=0, stratify="hops", hops=[1, 2, 3])
    assert Counter(q.hops for q in held) == {1: 30, 2: 30, 3: 30}


def test_metaqa_smaller_stratified_draw_lies_inside_the_larger():
    # eval.resume widens a 100-a-hop evaluation to 500 a hop only because of this
    dev = load_dataset("metaqa", shared("metaqa"), split="dev", hops=[1, 2, 3])
    _, small = train_eval_split(dev, dev, None, 300, seed=0, stratify="hops")
    _, large = train_eval_split(dev, dev, None, 1500, seed=0, stratify="hops")
    for h in (1, 2, 3):
        first = [q.id for q in large if q.hops == h][:100]
        assert [q.id for q in small if q.hops == h] == first


def test_questions_without_an_answer_are_left_out_or_refused_by_name(tmp_path, caplog):
    """An empty prediction matches an empty gold set (F1 1.0): such questions would make up
    a run's score, so the loader leaves them out, naming them, or refuses them."""
    import json
    import logging

    rows = [{"id": f"q{i}", "question": f"Q{i}?", "answers": [] if i % 2 else ["m.1"]} for i in range(6)]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with caplog.at_level(logging.WARNING):
        train, dev = load_splits("jsonl", str(path), train_split="all", eval_split="all", eval_limit=2)
    assert {q.id for q in train + dev} == {"q0", "q2", "q4"}
    assert "left out 3 of 6 questions of split 'all' without a gold answer: q1, q3, q5" in caplog.text
    with pytest.raises(DatasetError, match=r"3 of 6 questions of split 'all' have no gold answer \(q1, q3, q5\)"):
        load_splits("jsonl", str(path), train_split="all", eval_split="all", unanswered="fail")
