"""Hard-case resampling (KG-Reasoner §4.3): SFT losses per question, then the stream."""

from __future__ import annotations

import functools
import itertools
import math

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.models import CausalLMPolicy
from kgreason.training import (
    HardCasesStream,
    SFTLitModule,
    annotate_sft_losses,
    collate,
    masked_nll,
    select_hard_cases,
)
from kgreason.types import KBQASample


def questions(spec: list[tuple[str, int, float | None]]) -> list[KBQASample]:
    return [KBQASample(id=i, question=i, hops=h, meta={} if loss is None else {"sft_loss": loss})
            for i, h, loss in spec]


SPEC = [("a", 1, 2.0), ("b", 2, 2.0), ("c", 3, 0.1), ("d", 2, None), ("e", 3, 1.5), ("f", 1, 0.2)]


def test_hard_cases_are_multi_hop_questions_above_the_threshold():
    qs = questions(SPEC)
    assert [s.id for s in select_hard_cases(qs, threshold=1.0)] == ["b", "e"]
    assert [s.id for s in select_hard_cases(qs, threshold=1.0, min_hops=3)] == ["e"]
    assert [s.id for s in select_hard_cases(qs, threshold=0.05, min_hops=1)] == ["a", "b", "c", "e", "f"]
    assert select_hard_cases(qs, threshold=5.0) == []


def test_the_first_pass_covers_every_question_then_only_the_hard_ones():
    qs = questions(SPEC)
    stream = HardCasesStream(qs, batch_size=2, threshold=1.0, seed=3)
    batches = list(itertools.islice(iter(stream), 3 + 10))
    first = [s.id for b in batches[:3] for s in b]
    assert sorted(first) == ["a", "b", "c", "d", "e", "f"]  # one pass: each question once
    later = {s.id for b in batches[3:] for s in b}
    assert later == {"b", "e"}
    # resuming after k batches goes on with what an uninterrupted stream yields next
    resumed = list(itertools.islice(iter(HardCasesStream(qs, batch_size=2, threshold=1.0, seed=3, start=5)), 8))
    assert [[s.id for s in b] for b in resumed] == [[s.id for s in b] for b in batches[5:13]]


def test_a_hard_set_smaller_than_a_batch_is_drawn_with_replacement():
    stream = HardCasesStream(questions(SPEC), batch_size=4, threshold=1.6, full_passes=0)
    assert [s.id for s in stream.hard] == ["b"]
    assert [s.id for s in next(iter(stream))] == ["b"] * 4


def test_without_hard_cases_every_question_stays_in_play(caplog):
    qs = questions([(i, 2, None) for i in "abcd"])  # no SFT losses at all
    with caplog.at_level("WARNING"):
        stream = HardCasesStream(qs, batch_size=2, threshold=0.5, full_passes=0)
    assert "no question of ≥ 2 hops has an SFT loss above 0.5" in caplog.text
    seen = {s.id for b in itertools.islice(iter(stream), 6) for s in b}
    assert seen == {"a", "b", "c", "d"}


def test_bad_batch_sizes_are_refused():
    with pytest.raises(ValueError, match="batch_size=7: must be in 1..6"):
        HardCasesStream(questions(SPEC), batch_size=7, threshold=1.0)
    with pytest.raises(ValueError, match="no training samples"):
        HardCasesStream([], batch_size=1, threshold=1.0)


def test_sft_records_each_questions_loss_as_it_trains(demo_oxigraph):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    qs = load_dataset("demo", split="train")[:6]
    trajs = oracle_sft_trajectories(qs, lambda: make_env("kg_r1", demo_oxigraph, max_turns=10),
                                    pol.chat_ids, pol.tokenizer)
    assert len({t.sample_id for t in trajs}) >= 4
    # the loss each question has before the single step that trains on it
    expected = {t.sample_id: masked_nll(pol, collate([t], pol.tokenizer.pad_token_id, 512)).item() for t in trajs}
    loader = DataLoader(trajs, batch_size=len(trajs),
                        collate_fn=functools.partial(collate, pad_id=pol.tokenizer.pad_token_id, max_len=512))
    module = SFTLitModule(pol, lr=1e-3)
    L.Trainer(max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
              enable_model_summary=False).fit(module, loader)
    assert module.question_losses.keys() == expected.keys()
    for sid, v in expected.items():
        assert math.isclose(module.question_losses[sid], v, rel_tol=2e-3), (sid, module.question_losses[sid], v)
    # the runner puts them on the questions, where the stream reads them
    assert annotate_sft_losses(qs, module.question_losses) == len(expected)
    assert all(("sft_loss" in s.meta) == (s.id in expected) for s in qs)
