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
    # the sampler's log-probs, where a rollout keeps them, line up with the tokens
    r = Trajectory(sample_id="a", sampler_logprobs=[])
    r.append_tokens([1, 2], policy=False, turn=-1)
    r.append_tokens([3], policy=True, turn=0, logprobs=[-0.5])
    assert r.sampler_logprobs == [0.0, 0.0, -0.5]
    r.check_token_fields()
    r.append_tokens([4], policy=True, turn=1)  # a segment without them: the trajectory has none
    assert r.sampler_logprobs is None
    with pytest.raises(ValueError, match="sampler_logprobs"):
        Trajectory(sample_id="a", token_ids=[1], loss_mask=[1], turn_index=[0], sampler_logprobs=[]).check_token_fields()


def test_sample_round_trip():
    s = KBQASample(id="x", question="q?", topic_entities=[Entity("m.1", "A", ("a",))],
                   answers=[Entity("1999", "1999", datatype=XSD + "gYear")], meta={"k": 1})
    assert KBQASample.from_dict(s.to_dict()) == s


def test_literal_terms_are_canonical():
    assert Term.literal("1.80", XSD + "decimal") == Term.literal("1.8", XSD + "decimal")
    assert Term.literal("x", XSD + "string") == Term.literal("x")
    assert Term.literal("x", lang="en") != Term.literal("x")
