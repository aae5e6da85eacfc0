"""KG-R1's message grammar (paper 004, §3.1): ``<think>…</think>`` then exactly one
``<kg-query>`` or ``<answer>`` block. The action space owns it
(:meth:`~kgreason.methods.kg_r1.KGR1ActionSpace.format_ok`); rewards ask the space."""

from __future__ import annotations

import re

_FORMAT = re.compile(
    r"^\s*<think>(?P<think>.+?)</think>\s*(?:<kg-query>(?P<q>.+?)</kg-query>|<answer>(?P<a>.+?)</answer>)\s*$",
    re.S,
)


def turn_format(text: str) -> float:
    """1.0 for ``<think>…</think>`` followed by exactly one query or answer block.

    >>> turn_format("<think>x</think> <kg-query>get_tail_relations(a)</kg-query>")
    1.0
    >>> turn_format("<kg-query>get_tail_relations(a)</kg-query>"), turn_format("<think>x</think>")
    (0.0, 0.0)
    """
    m = _FORMAT.match(text)
    if not m or not m.group("think").strip():
        return 0.0
    body = m.group("q") or m.group("a") or ""
    return float(bool(body.strip()) and "<kg-query>" not in body and "<answer>" not in body)
