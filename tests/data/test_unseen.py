"""Question types held out of training (``data=metaqa_unseen_types``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.utils import instantiate

from kgreason.config import compose_config
from kgreason.data import load_dataset, load_splits
from kgreason.data.unseen import qtype
from kgreason.errors import DatasetError

METAQA = Path(__file__).resolve().parents[3] / "shared" / "data" / "metaqa"


@pytest.fixture(scope="module")
def unseen():
    cfg = compose_config(["data=metaqa_unseen_types", "data.eval_limit=600"]).data
    return cfg, instantiate(cfg), instantiate(cfg, eval_types="seen")


def test_held_out_types_are_never_trained_on_and_are_what_is_scored(unseen):
    cfg, (train, held), (train_seen, seen) = unseen
    out = set(cfg.held_out_types)
    assert not out & {qtype(q) for q in train}
    assert {qtype(q) for q in held} == out  # every held-out type is scored, nothing else
    assert not out & {qtype(q) for q in seen} and {q.hops for q in seen} == {1, 2, 3}
    assert {q.id for q in train} == {q.id for q in train_seen}  # the same training set either way
    assert {q.hops for q in held} == {2, 3}
    tune_2hop = [q for q in load_dataset("metaqa", METAQA, split="dev_tune", hops=2) if qtype(q) in out]
    assert [q.hops for q in held].count(2) == len(tune_2hop)  # fewer than 300: all of them
    # only the composition is new: every relation of a held-out type is in a trained one
    trained = {r for q in train for r in q.relation_path}
    assert all(set(q.relation_path) <= trained for q in held)
    assert all(tuple(q.relation_path) not in {tuple(t.relation_path) for t in train} for q in held)


def test_a_held_out_type_must_be_a_type_of_known_relations():
    kw = {"name": "metaqa", "path": METAQA, "train_split": "dev_train", "eval_split": "dev_tune", "hops": (1, 2)}
    with pytest.raises(DatasetError, match=r"no question has type 'actor_to_movie_to_directr'.*did you mean "
                                           r"'actor_to_movie_to_director'"):
        load_splits(held_out_types=["actor_to_movie_to_directr"], eval_types="held_out", **kw)
    with pytest.raises(DatasetError, match=r"'movie_to_imdbvotes' uses relation has_imdb_votes, which no trained"):
        load_splits(held_out_types=["movie_to_imdbvotes"], eval_types="held_out", **kw)
    with pytest.raises(DatasetError, match=r"data.eval_types='unseen': choose one of all, held_out, seen"):
        load_splits(held_out_types=["actor_to_movie_to_director"], eval_types="unseen", **kw)
    with pytest.raises(DatasetError, match=r"data.eval_types='seen' needs data.held_out_types"):
        load_splits(eval_types="seen", **kw)
