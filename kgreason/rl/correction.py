"""The gap between the sampler's and the trainer's probabilities, and its correction.

A rollout engine with its own kernels or precision (CTranslate2 int8, vLLM bf16, a float32
sampler under a bf16-autocast trainer) samples from a slightly different policy than the
one the loss scores. The clipped surrogate's ratio compares the trainer's new and old
log-probs only, so that gap enters no term. Truncated importance sampling (TIS; Yao et
al., "Your efficient RL framework secretly brings you off-policy RL training", 2025, as
verl and TRL apply it to vLLM rollouts) weights each token's policy-gradient term by
``min(π_old / π_sampler, C)``: the trainer's behaviour policy over the sampler's, capped.

Shapes: every tensor is ``[N, L]``; only the positions ``mask`` marks count.
"""

from __future__ import annotations

import torch
from torch import Tensor


def truncated_is_weights(old_logp: Tensor, sampler_logp: Tensor, cap: float) -> Tensor:
    """``min(exp(old_logp − sampler_logp), cap)``, detached.

    >>> w = truncated_is_weights(torch.tensor([[-1.0, -2.0, -0.5]]), torch.tensor([[-1.0, -1.0, -2.0]]), 2.0)
    >>> [round(x, 4) for x in w[0].tolist()]
    [1.0, 0.3679, 2.0]
    """
    if cap <= 0:
        raise ValueError(f"tis_cap must be > 0, got {cap}")
    return torch.exp(old_logp.detach() - sampler_logp).clamp(max=cap)


def sampler_mismatch(old_logp: Tensor, sampler_logp: Tensor, mask: Tensor, clip_low: float = 0.2,
                     clip_high: float | None = None) -> dict[str, float]:
    """How far the sampler's log-probs are from the trainer's, over the masked tokens.

    Returns:
        ``sampler_abs_dlogp``: mean ``|old_logp − sampler_logp|``; ``sampler_out_of_band``:
        the share of tokens whose ratio ``π_old / π_sampler`` lies outside the clip band
        ``[1 − clip_low, 1 + clip_high]``.

    >>> m = sampler_mismatch(torch.tensor([[-1.0, -2.0, -0.5]]), torch.tensor([[-1.0, -1.0, -0.6]]),
    ...                      torch.tensor([[1.0, 1.0, 1.0]]))
    >>> round(m["sampler_abs_dlogp"], 4), round(m["sampler_out_of_band"], 4)
    (0.3667, 0.3333)
    """
    clip_high = clip_low if clip_high is None else clip_high
    mask = mask.to(old_logp.dtype)
    n = mask.sum().clamp(min=1)
    delta = (old_logp.detach() - sampler_logp) * mask
    ratio = torch.exp(delta)
    outside = ((ratio < 1 - clip_low) | (ratio > 1 + clip_high)).to(mask.dtype) * mask
    return {"sampler_abs_dlogp": float(delta.abs().sum() / n), "sampler_out_of_band": float(outside.sum() / n)}
