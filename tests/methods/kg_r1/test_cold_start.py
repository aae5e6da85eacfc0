"""KG-R1's oracle cold start names the questions it cannot use, and why."""

from __future__ import annotations

import dataclasses
import functools
import logging

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.errors import ConfigError
from kgreason.methods.kg_r1.cold_start import OracleColdStart
from kgreason.models import CausalLMPolicy


def test_skipped_questions_are_named_with_their_reason(demo_oxigraph, caplog):
    good = [s for s in load_dataset("demo", split="train") if s.relation_path][:3]
    no_path = dataclasses.replace(good[0], id="no-path", relation_path=None)
    wrong = dataclasses.replace(good[1], id="wrong-answer", answers=[dataclasses.replace(good[1].answers[0],
                                                                                         id="m.nowhere", name="Nowhere at all")])
    make = functools.partial(make_env, "kg_r1", demo_oxigraph, max_turns=4)
    cold = OracleColdStart()
    with caplog.at_level(logging.WARNING, logger="kgreason.cold_start"):
        trajs = cold.build([*good, no_path, wrong], make, CausalLMPolicy.tiny())
    assert {t.sample_id for t in trajs} == {s.id for s in good}
    skipped = cold.report["skipped"]
    assert skipped["without relation_path (the gold field the oracle follows)"] == {"count": 1, "ids": ["no-path"]}
    assert skipped["whose gold path does not reach the gold answers in the KB (F1 < 1)"]["ids"] == ["wrong-answer"]
    assert "2 of 5 questions not used" in caplog.text and "no-path" in caplog.text


def test_no_usable_question_says_why_not_a_turn_limit(demo_oxigraph):
    plain = [dataclasses.replace(s, relation_path=None) for s in load_dataset("demo", split="train")[:4]]
    with pytest.raises(ConfigError, match="4 of 4 questions not used: 4 without relation_path"):
        OracleColdStart().build(plain, functools.partial(make_env, "kg_r1", demo_oxigraph), CausalLMPolicy.tiny())
