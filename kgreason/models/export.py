"""A trained policy in the formats other tools load: ``save_pretrained`` folders.

``<out>/merged/`` is the model with every adapter folded in (transformers, vLLM: a plain
checkpoint); ``<out>/adapter/`` is one peft LoRA adapter over the pre-trained model that
equals the whole stack a run trained (SFT's adapter, then RL's on top). Each adapter of
the stack was trained over the weights the previous ones were merged into, so the stack's
update is the sum ``Σ s·B_i A_i``; concatenating the A's along the rank and the B's
likewise gives one LoRA of rank ``k·r`` with the same scale and exactly that update::

    python -m kgreason.models.export outputs/<run>/checkpoints/policy.pt   # → outputs/<run>/export/

Loading the results::

    AutoModelForCausalLM.from_pretrained("outputs/<run>/export/merged")
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), "outputs/<run>/export/adapter")
"""

from __future__ import annotations

import argparse
import copy
import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

from kgreason.errors import KGReasonError


def combine_adapters(stack: Sequence[dict[str, Tensor]]) -> dict[str, Tensor]:
    """One LoRA state equal to ``stack`` merged in order (ranks concatenated).

    Shapes:
        - ``lora_A``: ``(r, in)`` each → ``(k·r, in)``
        - ``lora_B``: ``(out, r)`` each → ``(out, k·r)``

    >>> a = {"m.lora_A.default.weight": torch.ones(1, 2), "m.lora_B.default.weight": torch.full((3, 1), 2.0)}
    >>> b = {"m.lora_A.default.weight": torch.zeros(1, 2), "m.lora_B.default.weight": torch.ones(3, 1)}
    >>> c = combine_adapters([a, b])
    >>> c["m.lora_B.default.weight"] @ c["m.lora_A.default.weight"]  # = B_a A_a + B_b A_b
    tensor([[2., 2.],
            [2., 2.],
            [2., 2.]])
    """
    if not stack:
        raise ValueError("no adapters to combine")
    keys = list(stack[0])
    if any(list(s) != keys for s in stack[1:]):
        raise ValueError("the adapters of the stack adapt different modules")
    out = {}
    for k in keys:
        if ".lora_A." in k:
            out[k] = torch.cat([s[k].float() for s in stack], dim=0)
        elif ".lora_B." in k:
            out[k] = torch.cat([s[k].float() for s in stack], dim=1)
        else:
            raise ValueError(f"not a LoRA weight: {k}")
    return out


def _trained(stack: Sequence[dict[str, Tensor]]) -> list[dict[str, Tensor]]:
    """The adapters that change the model (an untrained one has B = 0)."""
    return [s for s in stack if any(v.any() for k, v in s.items() if ".lora_B." in k)]


def merged_copy(model):
    """A float32 copy of ``model`` with its LoRA adapters merged in: a plain transformers
    model with the pre-trained model's parameter names (the form converters, vLLM and
    ``save_pretrained`` readers take). ``model`` is not modified."""
    with torch.no_grad():
        out = copy.deepcopy(model)
        if hasattr(out, "merge_and_unload"):
            out = out.merge_and_unload()
        return out.float()


def export_pretrained(policy, out: str | Path, base: str | None = None,
                      stop_strings: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``merged/`` and, for a LoRA policy, ``adapter/`` under ``out``.

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`.
        out: the folder to write.
        base: where the pre-trained model the adapter applies to is (its
            ``base_model_name_or_path``); ``None`` writes no adapter.
        stop_strings: the action space's stop sequences, written to the merged model's
            ``generation_config`` so that a plain ``generate(..., tokenizer=tok)`` stops
            after a tool call as the rollouts do.

    Returns:
        ``{"merged": path, "adapter": path}`` for what was written.
    """
    out = Path(out)
    written: dict[str, Path] = {}
    model = merged_copy(policy.model)
    if stop_strings:
        model.generation_config.stop_strings = list(stop_strings)
    model.save_pretrained(out / "merged")
    policy.tokenizer.save_pretrained(out / "merged")
    written["merged"] = out / "merged"
    if policy.lora is not None and base is not None and _trained([*policy.merged_adapters, policy.adapter_state()]):
        written["adapter"] = save_adapter(policy, out / "adapter", base)
        policy.tokenizer.save_pretrained(out / "adapter")
    return written


def save_adapter(policy, path: str | Path, base: str) -> Path:
    """Write ``policy``'s whole adapter stack as one peft LoRA adapter folder over ``base``.

    The stack's trained adapters (SFT's, then RL's, ...) are concatenated along the rank
    (:func:`combine_adapters`), so the folder has rank ``k·r`` for ``k`` trained adapters; an
    untrained policy gives its own zero adapter (rank ``r``), which changes nothing.

    Raises:
        KGReasonError: ``policy`` is fully fine-tuned (no adapters).
    """
    from peft import LoraConfig
    from safetensors.torch import save_file

    if policy.lora is None:
        raise KGReasonError("a fully fine-tuned policy has no LoRA adapter to save")
    stack = _trained([*policy.merged_adapters, policy.adapter_state()]) or [policy.adapter_state()]
    lora, k = policy.lora, len(stack)
    n_layers = policy.model.config.num_hidden_layers
    layers = None if lora.top_layers is None else list(range(n_layers - lora.top_layers, n_layers))
    cfg = LoraConfig(r=lora.r * k, lora_alpha=lora.alpha * k, lora_dropout=lora.dropout,
                     target_modules=list(lora.target_modules), layers_to_transform=layers,
                     task_type="CAUSAL_LM", base_model_name_or_path=str(base))
    path = Path(path)
    cfg.save_pretrained(path)
    # peft's file format: the adapter's name is not part of the key
    weights = {k.replace(".default.", "."): v.contiguous() for k, v in combine_adapters(stack).items()}
    save_file(weights, path / "adapter_model.safetensors")
    return path


def export_checkpoint(checkpoint: str | Path, out: str | Path | None = None) -> dict[str, Path]:
    """Export a run's ``checkpoints/policy*.pt`` with the model settings of its ``config.yaml``.

    Raises:
        KGReasonError: the checkpoint is not inside a run folder with a ``config.yaml``.
    """
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from kgreason.models.loading import smollm2_float_copy

    ckpt = Path(checkpoint)
    run = ckpt.resolve().parent.parent
    if not ckpt.is_file() or not (run / "config.yaml").is_file():
        raise KGReasonError(f"{checkpoint}: expected <run>/checkpoints/<name>.pt beside <run>/config.yaml")
    cfg = OmegaConf.load(run / "config.yaml")
    policy = instantiate(cfg.model.policy)
    policy.load_checkpoint_state(torch.load(ckpt, map_location="cpu"))
    name = cfg.model.policy.get("name")
    base = str(smollm2_float_copy()) if name == "smollm2-135m-instruct" else name
    written = export_pretrained(policy, out or run / "export", base=base, stop_strings=_stop_strings(cfg))
    (Path(out or run / "export") / "export.json").write_text(json.dumps(
        {"checkpoint": str(ckpt), "base": base, **{k: str(v) for k, v in written.items()}}, indent=2))
    return written


def _stop_strings(cfg) -> tuple[str, ...]:
    """The stop sequences of the run's action space (none when it cannot be built alone)."""
    from hydra.utils import instantiate

    try:
        return tuple(instantiate(cfg.env.space)().stop_sequences)
    except Exception:  # noqa: BLE001 - a space of one's own that needs more than its config
        return ()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m kgreason.models.export", description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint", help="<run>/checkpoints/policy.pt (or policy_sft.pt)")
    ap.add_argument("--out", help="default: <run>/export")
    args = ap.parse_args(argv)
    for kind, path in export_checkpoint(args.checkpoint, args.out).items():
        print(f"{kind}: {path}")


if __name__ == "__main__":
    main()
