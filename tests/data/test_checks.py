"""Questions checked against the KB: topic entities and answers it lacks are named."""

from __future__ import annotations

import logging

import pytest

from kgreason.data import load_splits
from kgreason.data.checks import apply_kb_check, check_against_kb
from kgreason.errors import DatasetError
from kgreason.types import XSD, Entity, KBQASample


def test_the_demo_questions_all_belong_to_the_demo_kb(demo_oxigraph):
    train, dev = load_splits("demo")
    check = check_against_kb([*train, *dev], demo_oxigraph, sample=None)
    assert check.checked == len(train) + len(dev) and not check.bad


def test_what_the_kb_lacks_is_named_and_kept_dropped_or_refused(demo_oxigraph, caplog):
    good = load_splits("demo")[0][0]
    lost = KBQASample("lost", "Who?", [Entity("m.nowhere", "Nowhere")], [good.answers[0]])
    unanswerable = KBQASample("wrong", "Who?", good.topic_entities, [Entity("m.not_in_kb", "X")])
    # a literal answer (a date) and a second answer the KB lacks do not count against a question
    literal = KBQASample("year", "When?", good.topic_entities, [Entity("1999", "1999", datatype=XSD + "gYear")])
    partly = KBQASample("partly", "Who?", good.topic_entities, [Entity("m.not_in_kb", "X"), good.answers[0]])
    qs = [good, lost, unanswerable, literal, partly]
    check = check_against_kb(qs, demo_oxigraph)
    assert check.missing_topic == {"lost": ["m.nowhere"]} and check.missing_answers == {"wrong": ["m.not_in_kb"]}
    with caplog.at_level(logging.WARNING):
        assert apply_kb_check(qs, check, "keep") == qs
    assert "of 5 questions checked against the KB, 1 have a topic entity and 1 an answer id it does not hold " \
           "(lost, wrong)" in caplog.text
    assert [q.id for q in apply_kb_check(qs, check, "drop")] == ["demo-capital-0000", "year", "partly"]
    with pytest.raises(DatasetError, match=r"\(lost, wrong\); data.on_missing=drop leaves them out"):
        apply_kb_check(qs, check, "fail")


def test_a_large_set_is_checked_on_a_seeded_sample(demo_oxigraph):
    train, _ = load_splits("demo")
    a = check_against_kb(train, demo_oxigraph, sample=20, seed=3)
    assert a.checked == 20
