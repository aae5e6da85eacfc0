"""KBQA-R1's message grammar (paper 000, §IV-C1): ``<think>…</think><action>…</action>``
for a step, ``<think>…</think><answer>…</answer>`` for the final answer, nothing
outside. The action space owns it
(:meth:`~kgreason.methods.kbqa_r1.KBQAR1ActionSpace.format_ok`); rewards ask the space."""

from __future__ import annotations

import re

_STEP = re.compile(r"^\s*<think>(.+?)</think>\s*<action>(.+?)</action>\s*$", re.S)
_FINAL = re.compile(r"^\s*<think>(.+?)</think>\s*<answer>(.+?)</answer>\s*$", re.S)
#: the tags a step and a final message hold (the official code's tag completeness counts them)
STEP_TAGS = ("<think>", "</think>", "<action>", "</action>")
FINAL_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def message_format(text: str) -> bool:
    """A complete step or final message.

    >>> message_format("<think>a</think><action>Count()</action>"), message_format("<answer>3</answer>")
    (True, False)
    """
    return bool(_STEP.match(text) or _FINAL.match(text))
