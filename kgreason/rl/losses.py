"""KL estimators, loss aggregation and the clipped policy-gradient loss (design §7, docs/design.md).

References: PPO clip (Schulman et al. 2017); asymmetric clip-higher (DAPO, Yu et al. 2025,
ε_low 0.2 / ε_high 0.28); k1/k2/k3 KL estimators (Schulman, "Approximating KL divergence",
2020; k3 as in GRPO); aggregation modes as in verl (``token_mean``,
``seq_mean_token_mean``, ``seq_mean_token_sum_norm`` = Dr. GRPO's constant normaliser).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from kgreason.registry import Registry

KL_ESTIMATORS: Registry[Callable[[Tensor, Tensor], Tensor]] = Registry("KL estimator")
AGGREGATIONS: Registry[Callable[..., Tensor]] = Registry("loss aggregation")


@KL_ESTIMATORS.register("k1")
def kl_k1(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``log π − log π_ref`` (unbiased, high variance, can be negative)."""
    return logp - ref_logp


@KL_ESTIMATORS.register("k2")
def kl_k2(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``½ (log π − log π_ref)²``."""
    return 0.5 * (logp - ref_logp) ** 2


@KL_ESTIMATORS.register("k3")
def kl_k3(logp: Tensor, ref_logp: Tensor) -> Tensor:
    """``exp(r) − r − 1`` with ``r = log π_ref − log π`` (unbiased, non-negative).

    >>> kl_k3(torch.tensor([0.0, -1.0]), torch.tensor([0.0, 0.0])).round(decimals=4)
    tensor([0.0000, 0.7183])
    """
    r = ref_logp - logp
    return torch.exp(r) - r - 1


@AGGREGATIONS.register("token_mean")
def token_mean(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    """Mean over all masked tokens of the batch. Shapes: ``[N, L]`` → scalar."""
    return (loss * mask).sum() / mask.sum().clamp(min=1)


@AGGREGATIONS.register("seq_mean_token_mean")
def seq_mean_token_mean(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    """Mean over sequences of each sequence's token mean."""
    per_seq = (loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)
    return per_seq[mask.sum(-1) > 0].mean() if (mask.sum(-1) > 0).any() else per_seq.sum() * 0


@AGGREGATIONS.register("seq_mean_token_sum_norm")
def seq_mean_token_sum_norm(loss: Tensor, mask: Tensor, norm: float | None = None) -> Tensor:
    """Mean over sequences of each sequence's token sum divided by a constant ``norm``
    (Dr. GRPO, Liu et al. 2025: the generation budget): no length bias.

    The constant must be the same for every batch; a batch's padded length is not.
    """
    if not norm:
        raise ValueError("seq_mean_token_sum_norm needs a constant normaliser (objective.agg_norm, "
                         "e.g. the response budget in tokens), not the batch's padded length")
    return ((loss * mask).sum(-1) / norm).mean()


def aggregation_units(agg: str, mask: Tensor) -> float:
    """What ``agg`` averages over in ``mask``: masked tokens (``token_mean``), sequences
    with a masked token (``seq_mean_token_mean``) or rows (``seq_mean_token_sum_norm``);
    0 when no token is masked (nothing to learn from).

    Data-parallel training weights each process's loss by its share of the units, so
    that averaging the processes' gradients gives the loss of the combined batch (as
    verl normalises by the global token count). Shapes: ``mask [N, L]``.

    >>> m = torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    >>> [aggregation_units(a, m) for a in ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm")]
    [3.0, 2.0, 3.0]
    """
    if agg == "token_mean":
        return float(mask.sum())
    if agg == "seq_mean_token_mean":
        return float((mask.sum(-1) > 0).sum())
    if agg == "seq_mean_token_sum_norm":
        return float(mask.shape[0]) if mask.any() else 0.0
    AGGREGATIONS.get(agg)  # an unknown name: the registry's error with the valid choices
    raise ValueError(f"aggregation {agg!r} declares no units: data-parallel training cannot weight it "
                     "(add it to kgreason.rl.losses.aggregation_units)")


def policy_loss(
    logp: Tensor,
    old_logp: Tensor,
    advantages: Tensor,
    mask: Tensor,
    clip_low: float = 0.2,
    clip_high: float | None = None,
    on_policy: bool = False,
    ref_logp: Tensor | None = None,
    kl_coef: float = 0.0,
    kl_estimator: str = "k3",
    entropy: Tensor | None = None,
    entropy_coef: float = 0.0,
    agg: str = "token_mean",
    norm: float | None = None,
    is_weights: Tensor | None = None,
) -> tuple[Tensor, dict[str, float]]:
    """The clipped surrogate loss with optional KL and entropy terms.

    Shapes: every tensor is ``[N, L]`` (per-token log-probs of the sampled tokens under
    the current, behaviour and reference policies; advantages; the loss mask; entropy).

    Args:
        clip_low / clip_high: ratio clipped to ``[1 − clip_low, 1 + clip_high]``;
            ``clip_high=None`` is symmetric (PPO), 0.28 is DAPO's clip-higher.
        on_policy: one update per batch: the ratio is ``exp(logp − logp.detach()) ≡ 1``
            (its gradient is the REINFORCE gradient) and ``old_logp`` is ignored.
        kl_coef / kl_estimator: ``β`` and ``k1|k2|k3`` against ``ref_logp``.
        entropy_coef: bonus ``−c·H`` added to the loss (maximises entropy).
        agg: ``token_mean`` | ``seq_mean_token_mean`` | ``seq_mean_token_sum_norm``.
        is_weights: per-token weights of the policy-gradient term (not of the KL or the
            entropy): the truncated importance-sampling correction of a sampler that differs
            from the trainer (:func:`kgreason.rl.correction.truncated_is_weights`).

    Returns:
        The scalar loss to minimise and metrics (``clip_frac``, ``ratio_mean``, ``kl``,
        ``entropy``, ``pg_loss``).
    """
    mask = mask.to(logp.dtype)
    clip_high = clip_low if clip_high is None else clip_high
    log_ratio = logp - (logp.detach() if on_policy else old_logp)
    ratio = torch.exp(log_ratio)
    clipped = ratio.clamp(1 - clip_low, 1 + clip_high)
    pg = -torch.min(ratio * advantages, clipped * advantages)
    if is_weights is not None:
        pg = pg * is_weights.detach()
    aggregate = AGGREGATIONS.get(agg)
    loss = aggregate(pg, mask, norm)
    metrics: dict[str, float] = {"pg_loss": float(loss.detach())}
    is_clipped = ((ratio * advantages) > (clipped * advantages)).to(mask.dtype)
    metrics["clip_frac"] = float(token_mean(is_clipped, mask))
    metrics["ratio_mean"] = float(token_mean(ratio.detach(), mask))
    if kl_coef and ref_logp is not None:
        kl = KL_ESTIMATORS.get(kl_estimator)(logp, ref_logp)
        kl_term = aggregate(kl, mask, norm)
        loss = loss + kl_coef * kl_term
        metrics["kl"] = float(kl_term.detach())
    elif ref_logp is not None:
        metrics["kl"] = float(aggregate(KL_ESTIMATORS.get(kl_estimator)(logp, ref_logp), mask, norm).detach())
    if entropy is not None:
        ent = aggregate(entropy, mask, norm)
        metrics["entropy"] = float(ent.detach())
        if entropy_coef:
            loss = loss - entropy_coef * ent
    return loss, metrics
