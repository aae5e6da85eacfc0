"""Shared text utilities: the truncation shortcut must agree with counting every time."""

from __future__ import annotations

import random
import re

from kgreason.envs.text import approx_tokens, last_tag, tagged, truncate_items


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


def _regex_last_tag(text: str, tag: str) -> str | None:
    closed = re.findall(rf"<{tag}>(.*?)</{tag}>", text, flags=re.S)
    if closed:
        return closed[-1].strip()
    m = re.search(rf"<{tag}>(?!.*<{tag}>)(.*)$", text, flags=re.S)
    return m.group(1).strip() if m else None


def test_linear_tag_scans_agree_with_the_lazy_regexes() -> None:
    """The one-pass scanners return what the (quadratic) lazy regexes return."""
    rng = random.Random(0)
    pieces = ["<answer>", "</answer>", "<node>", "</node>", "<NODE>", "</Node>", "<sparql>", "</sparql>",
              "x", " y ", "\n", "<"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        assert last_tag(text, "answer") == _regex_last_tag(text, "answer"), text
        want = sorted([(m.start(), "node", m.group(1), m.group(0))
                       for m in re.finditer(r"<node>(.*?)</node>", text, re.S | re.I)]
                      + [(m.start(), "sparql", m.group(1), m.group(0))
                         for m in re.finditer(r"<sparql>(.*?)</sparql>", text, re.S | re.I)])
        assert tagged(text, ("node", "sparql")) == [w[1:] for w in want], text
