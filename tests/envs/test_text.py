"""Shared text utilities: the truncation shortcut must agree with counting every time."""

from __future__ import annotations

import random

from kgreason.envs.text import approx_tokens, truncate_items


def _slow_truncate(items: list[str], budget: int) -> str:
    # approx_tokens wrapped in a lambda is not ``approx_tokens``, so no shortcut is taken
    return truncate_items(items, budget, count=lambda s: approx_tokens(s))


def test_length_shortcut_agrees_with_counting_words() -> None:
    rng = random.Random(0)
    alphabet = ["a", "b c", "d e f", "long-relation.name", " ", "x y"]
    for _ in range(2000):
        items = [rng.choice(alphabet) for _ in range(rng.randint(0, 12))]
        budget = rng.randint(0, 20)
        fast = truncate_items(items, budget)
        assert fast == _slow_truncate(items, budget), (items, budget)


def test_untruncated_output_is_within_budget() -> None:
    # 1-character words are the worst case for words vs characters
    items = ["a b"] * 5
    joined = ", ".join(items)
    budget = len(joined) // 2 + 1
    assert truncate_items(items, budget) == joined
    assert approx_tokens(joined) <= budget
