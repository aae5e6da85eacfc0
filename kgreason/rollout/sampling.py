"""Sampling the next token by inverse CDF, as logits processors for ``generate``.

``generate(do_sample=True)`` draws each token with ``torch.multinomial``, which on a CPU
draws random numbers for the whole vocabulary row (about 1 ms a row of SmolLM2's 49,152
tokens). One uniform number a row against the cumulative probabilities draws from the
same distribution at a small fraction of that (``docs/benchmarks.md``, "Sampling the next
token"). :func:`sampling_processors` gives the
processors that run temperature, top-k and top-p as ``generate`` would and then draw this
way; ``generate`` runs with ``do_sample=False`` and keeps the drawn token (the only
finite score left), so everything else about decoding is unchanged.
"""

from __future__ import annotations

import torch
from torch import Tensor


class InverseCdfSampler:
    """A logits processor that draws each row's next token from ``softmax(scores)`` and
    returns scores under which greedy decoding picks exactly that token.

    The draw: ``u ~ U(0, 1)`` scaled to the row's total mass, and the first token whose
    cumulative probability exceeds it. A token's chance is the width of its interval of
    the float32 cumulative sum: its probability to within one rounding of that sum
    (≈ 6e-8); a token of probability 0 (masked by top-k or top-p) has an empty interval
    and is never drawn. Random numbers come from ``generator`` (default: torch's global
    one, which the run's seed sets).

    Shapes: ``scores`` ``[B, V]`` → ``[B, V]`` (0 at the drawn token, −inf elsewhere).

    >>> _ = torch.manual_seed(0)
    >>> draws = torch.cat([InverseCdfSampler()(None, torch.tensor([[0.0, 1.0, -float("inf")]])).argmax(-1)
    ...                    for _ in range(4000)])
    >>> round(draws.eq(1).float().mean().item(), 2), int(draws.eq(2).sum())  # e / (1 + e) = 0.73
    (0.73, 0)
    """

    def __init__(self, generator: torch.Generator | None = None):
        self.generator = generator

    def __call__(self, input_ids: Tensor | None, scores: Tensor) -> Tensor:
        cdf = torch.softmax(scores.float(), dim=-1).cumsum_(dim=-1)
        u = torch.rand(scores.shape[0], 1, device=scores.device, generator=self.generator) * cdf[:, -1:]
        picked = torch.searchsorted(cdf, u, right=True)
        past = picked >= scores.shape[-1]
        if past.any():
            # u rounded up to the row's total: the last token of positive probability, which
            # is where the cumulative sum first reaches its maximum (never a masked token)
            picked = torch.where(past, cdf.argmax(dim=-1, keepdim=True), picked)
        return torch.full_like(scores, -float("inf")).scatter_(-1, picked, 0.0)


def sampling_processors(temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                        generator: torch.Generator | None = None) -> list:
    """The processors that sample as ``generate(do_sample=True, temperature=, top_k=,
    top_p=)`` does, in its order (temperature, top-k, top-p), ending in an
    :class:`InverseCdfSampler`; pass them with ``do_sample=False``.

    >>> [type(p).__name__ for p in sampling_processors(0.7, top_p=0.9)]
    ['TemperatureLogitsWarper', 'TopPLogitsWarper', 'InverseCdfSampler']
    """
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    out: list = []
    if temperature != 1.0:
        out.append(TemperatureLogitsWarper(temperature))
    if top_k:
        out.append(TopKLogitsWarper(top_k))
    if top_p < 1.0:
        out.append(TopPLogitsWarper(top_p))
    out.append(InverseCdfSampler(generator))
    return out
