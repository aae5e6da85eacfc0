"""KG-Reasoner's response grammar (paper 001, §4.1): one ``<think>`` holding the
``<search>`` calls, then one ``<answer>``. The action space owns it, with its own tag
names (:meth:`~kgreason.methods.kg_reasoner.KGReasonerActionSpace.response_format_ok`);
rewards ask the space."""

from __future__ import annotations

import re


def search_in_think_format(text: str, search_tag: str = "search") -> bool:
    """One ``<think>`` first, balanced ``<search>…</search>`` pairs inside it, then one
    ``<answer>…</answer>`` and nothing after it (the inserted triples are not policy
    text and are not passed here).

    >>> search_in_think_format("<think>a <search> X </search> b</think><answer>Y</answer>")
    True
    >>> search_in_think_format("<think>a</think><search> X </search><answer>Y</answer>")
    False
    >>> search_in_think_format("<think>a <search> X</think><answer>Y</answer>")
    False
    >>> search_in_think_format("<think>a <kg-search> X </kg-search></think><answer>Y</answer>", "kg-search")
    True
    """
    s = re.escape(search_tag)
    tags = re.findall(rf"</?(?:think|{s}|answer)>", text)
    if tags[:1] != ["<think>"] or tags[-3:] != ["</think>", "<answer>", "</answer>"]:
        return False
    inner = tags[1:-3]
    if len(inner) % 2 or any(a != f"<{search_tag}>" or b != f"</{search_tag}>"
                             for a, b in zip(inner[::2], inner[1::2], strict=True)):
        return False
    return text.lstrip().startswith("<think>") and not text.rstrip().split("</answer>")[-1].strip()
