from __future__ import annotations

import pytest

from kgreason.types import XSD, Entity, KBQASample, Term, Trajectory


def test_trajectory_token_fields():
    t = Trajectory(sample_id="a", token_ids=[1, 2, 3], loss_mask=[0, 1, 1], turn_index=[-1, 0, 0])
    t.check_token_fields()
    with pytest.raises(ValueError, match="same length"):
        Trajectory(sample_id="a", token_ids=[1, 2], loss_mask=[1], turn_index=[0, 0]).check_token_fields()
    with pytest.raises(ValueError, match="other than 0 and 1"):
        Trajectory(sample_id="a", token_ids=[1], loss_mask=[2], turn_index=[0]).check_token_fields()


def test_sample_round_trip():
    s = KBQASample(id="x", question="q?", topic_entities=[Entity("m.1", "A", ("a",))],
                   answers=[Entity("1999", "1999", datatype=XSD + "gYear")], meta={"k": 1})
    assert KBQASample.from_dict(s.to_dict()) == s


def test_literal_terms_are_canonical():
    assert Term.literal("1.80", XSD + "decimal") == Term.literal("1.8", XSD + "decimal")
    assert Term.literal("x", XSD + "string") == Term.literal("x")
    assert Term.literal("x", lang="en") != Term.literal("x")
