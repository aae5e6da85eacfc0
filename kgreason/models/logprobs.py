"""Token log-probs and entropies straight from hidden states, a few positions at a time.

Scoring ``K`` positions against a vocabulary of ``V`` tokens the plain way writes a
``[K, V]`` logit tensor, its log-sum-exp and, in backward, its softmax: on SmolLM2
(V = 49,152) a 4 × 512-token mini-batch makes 400 MB tensors that every pass reads and
writes several times and that the allocator hands back fresh (zero-filled) pages for, a
fifth of a CPU RL update. :func:`chunked_logprobs` projects ``chunk`` positions at a
time, keeps only each position's log-sum-exp for backward and recomputes the chunk's
logits there (the trade Liger-Kernel's fused linear cross-entropy makes): no tensor
larger than ``chunk × V``, one extra product with the head in backward.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: logits a chunk holds (4 Mi float32 values, 16 MB: the allocator reuses such a block
#: instead of mapping fresh pages, and it stays in a server CPU's last-level cache)
CHUNK_ELEMENTS = 1 << 22


class _ChunkedLogprobs(torch.autograd.Function):
    """``log softmax(h Wᵀ / T)[target]`` and the entropy there, chunk by chunk.

    Gradients (with ``z = h Wᵀ / T``, ``p = softmax(z)``, ``H`` the entropy):
    ``∂ log p_y / ∂z = onehot(y) − p`` and ``∂H / ∂z = −p ⊙ (log p + H)``, then through
    ``z`` to ``h`` (``/T · W``) and, where ``W`` trains, to ``W``.
    """

    @staticmethod
    def forward(ctx, hidden: Tensor, weight: Tensor, targets: Tensor, temperature: float, chunk: int,
                entropy: bool) -> tuple[Tensor, Tensor]:
        k = hidden.shape[0]
        lp = torch.empty(k, dtype=torch.float32, device=hidden.device)
        lse = torch.empty_like(lp)
        ent = torch.zeros_like(lp)
        for i in range(0, k, chunk):
            z = _logits(hidden[i : i + chunk], weight, temperature)
            lse[i : i + chunk] = torch.logsumexp(z, dim=-1)
            lp[i : i + chunk] = z.gather(-1, targets[i : i + chunk, None]).squeeze(-1) - lse[i : i + chunk]
            if entropy:
                logp = z.sub_(lse[i : i + chunk, None])
                ent[i : i + chunk] = -(logp.exp() * logp).sum(-1)
        ctx.save_for_backward(hidden, weight, targets, lse, ent)
        # an output nothing differentiates (the entropy when only logged) gets a None
        # gradient instead of zeros, so backward skips its three passes a chunk
        ctx.set_materialize_grads(False)
        ctx.temperature, ctx.chunk, ctx.entropy = temperature, chunk, entropy
        return lp, ent

    @staticmethod
    def backward(ctx, g_lp: Tensor | None, g_ent: Tensor | None) -> tuple[Tensor | None, ...]:
        hidden, weight, targets, lse, ent = ctx.saved_tensors
        t, chunk = ctx.temperature, ctx.chunk
        want_h, want_w = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        g_ent = g_ent if ctx.entropy else None
        if (g_lp is None and g_ent is None) or not (want_h or want_w):
            return None, None, None, None, None, None
        grad_h = torch.empty_like(hidden) if want_h else None
        grad_w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) if want_w else None
        for i in range(0, hidden.shape[0], chunk):
            sl = slice(i, i + chunk)
            h = hidden[sl]
            logp = _logits(h, weight, t).sub_(lse[sl, None])
            p = logp.exp()
            # ∂/∂z of g·log p_y + g_H·H, written into p's buffer
            if g_ent is not None:
                coef = logp.add_(ent[sl, None]).mul_(-g_ent[sl, None])
                p.mul_(coef if g_lp is None else coef.sub_(g_lp[sl, None]))
            else:
                p.mul_(-g_lp[sl, None])
            if g_lp is not None:
                p.scatter_add_(-1, targets[sl, None], g_lp[sl, None])
            if t != 1.0:
                p.div_(t)
            gz = p.to(h.dtype)
            if want_h:
                grad_h[sl] = gz @ weight
            if want_w:
                grad_w += gz.t().float() @ h.float()
        return grad_h, None if grad_w is None else grad_w.to(weight.dtype), None, None, None, None


def _logits(hidden: Tensor, weight: Tensor, temperature: float) -> Tensor:
    z = (hidden @ weight.t()).float()
    return z.div_(temperature) if temperature != 1.0 else z


def chunked_logprobs(hidden: Tensor, weight: Tensor, targets: Tensor, temperature: float = 1.0,
                     entropy: bool = False, chunk: int | None = None) -> tuple[Tensor, Tensor | None]:
    """Log-prob of each target token under ``softmax(hidden @ weight.T / temperature)``,
    and the entropy of that distribution (differentiable too) when ``entropy``.

    Under autocast the products run in its dtype, as ``torch.nn.functional.linear`` would;
    log-sum-exp and softmax always in float32.

    Args:
        hidden: the last hidden state at each scored position.
        weight: the vocabulary projection (``lm_head.weight``, no bias).
        targets: the token each position is scored on.
        temperature: divide the logits by it first (the sampler's temperature).
        entropy: also return each position's entropy.
        chunk: positions projected at a time (default: :data:`CHUNK_ELEMENTS` logits).

    Shapes:
        hidden ``[K, H]``, weight ``[V, H]``, targets ``[K]`` → ``[K]`` float32 (and ``[K]``).

    >>> h, w, y = torch.randn(5, 4), torch.randn(7, 4), torch.tensor([0, 6, 2, 2, 1])
    >>> lp, ent = chunked_logprobs(h, w, y, entropy=True, chunk=2)
    >>> ref = torch.log_softmax(h @ w.T, -1)
    >>> torch.allclose(lp, ref.gather(-1, y[:, None]).squeeze(-1), atol=1e-6)
    True
    >>> torch.allclose(ent, -(ref.exp() * ref).sum(-1), atol=1e-5)
    True
    """
    chunk = chunk or max(1, CHUNK_ELEMENTS // weight.shape[0])
    if torch.is_autocast_enabled(hidden.device.type):
        dtype = torch.get_autocast_dtype(hidden.device.type)
        hidden, weight = hidden.to(dtype), weight.to(dtype)
    with torch.autocast(hidden.device.type, enabled=False):
        lp, ent = _ChunkedLogprobs.apply(hidden, weight, targets, float(temperature), chunk, entropy)
    return lp, (ent if entropy else None)
