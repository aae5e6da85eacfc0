"""Learning-rate schedules as plain step → multiplier functions (for ``LambdaLR``)."""

from __future__ import annotations

import math
from collections.abc import Callable


def warmup_cosine(total_steps: int, warmup_steps: int = 0, final: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up to the base rate, then cosine decay to ``final`` × the base rate.

    With a constant rate the last weights of a short SFT run can lean toward its last
    few batches; decaying the rate is the usual remedy (Loshchilov & Hutter, "SGDR", ICLR
    2017: the decay half of a cosine cycle). On the demo it did not pay at 100 steps (see
    docs/training.md), so the presets keep a constant rate.

    Args:
        total_steps: optimizer steps of the run; the multiplier would reach ``final`` at
            step ``total_steps`` (one past the last) and stays there.
        warmup_steps: steps of linear warm-up from ``1 / (warmup_steps + 1)`` to 1.
        final: the multiplier at the end of the decay.

    >>> f = warmup_cosine(total_steps=5, warmup_steps=1)
    >>> [round(f(s), 3) for s in range(7)]
    [0.5, 1.0, 0.854, 0.5, 0.146, 0.0, 0.0]
    >>> g = warmup_cosine(total_steps=2, final=0.1)
    >>> [round(g(s), 3) for s in range(3)]
    [1.0, 0.55, 0.1]
    """
    if total_steps < 1 or not 0 <= warmup_steps < total_steps:
        raise ValueError(f"need 0 <= warmup_steps < total_steps, got {warmup_steps} and {total_steps}")
    decay_steps = total_steps - warmup_steps

    def multiplier(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        progress = min(1.0, (step - warmup_steps) / decay_steps)
        return final + (1.0 - final) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return multiplier
