"""Choosing bf16 or float32 for the hardware the run lands on.

bf16 only pays where the hardware multiplies bf16 natively: CUDA GPUs with bf16 support,
and x86 CPUs with AMX tiles (Sapphire Rapids and later). CPUs with AVX512-BF16 but no AMX
convert to bf16 and still run its matrix products at about half the float32 rate — on
such a host SmolLM2's LoRA SFT step took 4.89 s in bf16 vs 2.83 s in float32, while on an
AMX host bf16 was 2–4× faster (``experiments/benchmarks/sft_step.py``, docs/benchmarks.md).
A fixed default is therefore wrong on one of the two; ``"auto"`` asks the hardware.

Some CPUs without AMX (an AMD EPYC with AVX512-BF16 measured here) multiply bf16 faster
than float32 but decode a large batch slower (422 vs 295 ms a token at 50 rows). For
training passes alone (``sft.bf16: auto``), ``resolve_bf16(..., measure=True)`` times the
two precisions on the host instead of trusting the AMX flag.
"""

from __future__ import annotations

import functools
import time

import torch

#: what a ``bf16`` setting may be: a fixed choice or ``"auto"`` (the default)
Bf16Setting = bool | str | None


def bf16_is_fast(device: torch.device | str = "cpu") -> bool:
    """Whether bf16 matrix products run natively (faster than float32) on ``device``.

    >>> isinstance(bf16_is_fast("cpu"), bool)
    True
    """
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if device.type == "cpu":
        probe = getattr(torch.cpu, "_is_amx_tile_supported", None)
        return bool(probe and probe())
    return False


def bf16_speedup(size: int = 1024, repeats: int = 5) -> float:
    """How many times faster a ``size × size`` matrix product runs in bf16 than in float32
    on this CPU (best of ``repeats`` each; > 1: bf16 is faster).

    >>> bf16_speedup(64, 1) > 0
    True
    """
    def best(dtype: torch.dtype) -> float:
        a = torch.randn(size, size).to(dtype)
        a @ a  # warm-up: kernels picked, memory touched
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            a @ a
            times.append(time.perf_counter() - t0)
        return min(times)

    return best(torch.float32) / best(torch.bfloat16)


@functools.cache
def _bf16_measured_fast(threshold: float = 1.3) -> bool:
    return bf16_speedup() >= threshold


def resolve_bf16(setting: Bf16Setting, device: torch.device | str = "cpu", measure: bool = False) -> bool:
    """Turn a ``bf16`` setting into a decision: ``True``/``False`` are kept, ``"auto"`` or
    ``None`` become :func:`bf16_is_fast` — or, with ``measure`` on a CPU without AMX,
    whether :func:`bf16_speedup` is at least 1.3 (measured once per process).

    >>> resolve_bf16(False), resolve_bf16("true")
    (False, True)
    >>> resolve_bf16("auto") == bf16_is_fast()
    True
    >>> resolve_bf16("fast")
    Traceback (most recent call last):
    ...
    ValueError: bf16 must be true, false or 'auto', got 'fast'
    """
    if isinstance(setting, bool):
        return setting
    if setting is None or str(setting).lower() == "auto":
        if bf16_is_fast(device):
            return True
        return measure and torch.device(device).type == "cpu" and _bf16_measured_fast()
    text = str(setting).lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"bf16 must be true, false or 'auto', got {setting!r}")
