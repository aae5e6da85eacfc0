r"""KnowCoder-A1's answer grammar (paper 003): the final answer is a ``\boxed{}`` JSON
list inside ``<answer>``. The action space owns it
(:meth:`~kgreason.methods.knowcoder_a1.KnowCoderActionSpace.format_ok`); rewards ask
the space."""

from __future__ import annotations

BOXED = "\\boxed{"


def boxed_answer(text: str) -> bool:
    r"""Whether an answering message boxes its answer.

    >>> boxed_answer(r'<answer>\boxed{["A"]}</answer>'), boxed_answer("<answer>A</answer>")
    (True, False)
    """
    return BOXED in text
