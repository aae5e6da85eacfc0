"""Evaluation scores on hand-worked answers."""

from __future__ import annotations

from kgreason.types import Entity


def test_a_two_run_union_hits_when_any_answer_of_any_run_is_gold():
    """KG-R1's N-run Hit@1 (any answer of the union is gold) beside first-answer Hit@1."""
    import random

    from kgreason.eval.evaluation import _union, run_scores, score

    a, b, c = Entity("m.1", "A"), Entity("m.2", "B"), Entity("m.3", "C")
    runs = [[b], [c, a]]  # run 1 misses; run 2's second answer is gold
    union = _union(runs)
    assert union == [b, c, a]
    s = score(union, [a], random.Random(0))
    assert (s["hit"], s["hit1"]) == (1.0, 0.0)  # any hit / the first answer's hit
    assert run_scores(runs, [a])["pass_hit1"] == 0.0  # no run's first answer is gold
    assert score([b, c], [a], random.Random(0))["hit"] == 0.0
