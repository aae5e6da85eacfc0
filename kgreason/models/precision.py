"""Choosing bf16 or float32 from what the hardware declares it can do.

``bf16: auto`` is decided from the device's declared capabilities, never by timing at
start-up, so one preset on one host always runs in one precision:

* CUDA: bf16 wherever ``torch.cuda.is_bf16_supported()``.
* x86 CPU with AMX tiles (Sapphire Rapids and later): bf16 for every stage; its tile
  products run bf16 natively.
* AMD CPU with AVX512-BF16 (Zen 4 and later, e.g. EPYC Genoa): bf16 for the training
  passes (SFT, the RL update), whose large products run several times faster in bf16, and
  float32 for decoding (rollouts, evaluation), whose small per-token products convert more
  than they multiply.
* Intel CPU with AVX512-BF16 but no AMX (Cooper Lake, or a VM that hides AMX): float32
  everywhere; its bf16 products run at about 0.6× the float32 rate (``docs/benchmarks.md``,
  "Decoding against the host's limits").
* anything else: float32.

The per-stage choice is what ``experiments/benchmarks/precision.py`` times side by side
(both precisions, each stage, with the greedy agreement of bf16 and float32 rollouts);
``results.json`` records what each stage of a run used (:func:`stage_precisions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

#: what a ``bf16`` setting may be: a fixed choice or ``"auto"`` (the default)
Bf16Setting = bool | str | None

#: the stages a precision is chosen for: decoding (rollouts, evaluation) or training passes
Stage = Literal["decode", "train"]
STAGES: tuple[Stage, ...] = ("decode", "train")


@dataclass(frozen=True)
class Bf16Support:
    """What a device declares about bf16 (the flags ``torch`` reads from CPUID or CUDA).

    >>> amd = Bf16Support("cpu", avx512_bf16=True, vendor="AuthenticAMD")
    >>> Bf16Support("cpu", amx=True).fast("decode"), amd.fast("decode"), amd.fast("train")
    (True, False, True)
    >>> Bf16Support("cpu", avx512_bf16=True, vendor="GenuineIntel").fast("train"), Bf16Support("cpu").fast("train")
    (False, False)
    """

    device_type: str
    cuda_bf16: bool = False
    amx: bool = False
    avx512_bf16: bool = False
    #: the CPU's ``vendor_id`` (``"AuthenticAMD"``, ``"GenuineIntel"``; ``""`` unknown)
    vendor: str = ""

    def fast(self, stage: Stage = "decode") -> bool:
        """Whether bf16 is the faster precision for ``stage`` on this device."""
        if stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {stage!r}")
        if self.device_type == "cuda":
            return self.cuda_bf16
        if self.device_type == "cpu":
            return self.amx or (stage == "train" and self.avx512_bf16 and self.vendor == "AuthenticAMD")
        return False

    def describe(self) -> str:
        """One line for logs and ``results.json``, e.g. ``"cpu (amx, avx512_bf16; GenuineIntel)"``."""
        flags = [name for name in ("cuda_bf16", "amx", "avx512_bf16") if getattr(self, name)]
        vendor = f"; {self.vendor}" if self.vendor else ""
        return f"{self.device_type} ({', '.join(flags) or 'no native bf16'}{vendor})"


def _cpu_flag(name: str) -> bool:
    probe = getattr(torch.cpu, name, None)
    return bool(probe and probe())


def _cpu_vendor() -> str:
    """The CPU's ``vendor_id`` as Linux declares it (``""`` where it cannot be read)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def bf16_support(device: torch.device | str = "cpu") -> Bf16Support:
    """Read ``device``'s declared bf16 capabilities.

    >>> bf16_support("cpu").device_type
    'cpu'
    """
    device = torch.device(device)
    if device.type == "cuda":
        return Bf16Support("cuda", cuda_bf16=torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return Bf16Support("cpu", amx=_cpu_flag("_is_amx_tile_supported"),
                           avx512_bf16=_cpu_flag("_is_avx512_bf16_supported"), vendor=_cpu_vendor())
    return Bf16Support(device.type)


def bf16_is_fast(device: torch.device | str = "cpu", stage: Stage = "decode") -> bool:
    """Whether bf16 is the faster precision for ``stage`` on ``device`` (see the module).

    >>> isinstance(bf16_is_fast("cpu"), bool)
    True
    """
    return bf16_support(device).fast(stage)


def resolve_bf16(setting: Bf16Setting, device: torch.device | str = "cpu", stage: Stage = "decode") -> bool:
    """Turn a ``bf16`` setting into a decision: ``True``/``False`` are kept, ``"auto"`` or
    ``None`` become :func:`bf16_is_fast` for ``stage``.

    >>> resolve_bf16(False), resolve_bf16("true")
    (False, True)
    >>> resolve_bf16("auto", stage="train") == bf16_is_fast(stage="train")
    True
    >>> resolve_bf16("fast")
    Traceback (most recent call last):
    ...
    ValueError: bf16 must be true, false or 'auto', got 'fast'
    """
    if isinstance(setting, bool):
        return setting
    if setting is None or str(setting).lower() == "auto":
        return bf16_is_fast(device, stage)
    text = str(setting).lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"bf16 must be true, false or 'auto', got {setting!r}")


def stage_precisions(policy_bf16: bool, sft: Bf16Setting, rl: Bf16Setting,
                     device: torch.device | str = "cpu") -> dict[str, str]:
    """What each stage of a run computes in, as ``results.json`` records it.

    A bf16 policy (``model.policy.bf16``) decodes and trains in bf16; a float32 policy
    decodes in float32 and runs each training stage under bf16 autocast where its own
    setting (``sft.bf16``, ``objective.bf16``) resolves to bf16.

    >>> stages = stage_precisions(False, False, True)
    >>> stages["rollouts"], stages["eval"], stages["sft"], stages["rl"]
    ('float32', 'float32', 'float32', 'bf16 autocast')
    """
    def train(setting: Bf16Setting) -> str:
        if policy_bf16:
            return "bf16"
        return "bf16 autocast" if resolve_bf16(setting, device, "train") else "float32"

    decode = "bf16" if policy_bf16 else "float32"
    return {"host": bf16_support(device).describe(), "rollouts": decode, "eval": decode,
            "sft": train(sft), "rl": train(rl)}
