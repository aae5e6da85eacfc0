"""A CTranslate2 rollout engine: the policy's weights converted to int8 or float32.

A 135M model decoded by eager PyTorch on a CPU spends most of each step in per-operator
overhead; CTranslate2 runs the same decoder as fused C++ kernels (int8 GEMMs on CPU).
The engine keeps a converted copy of the policy and converts again when the policy's
weights change (after RL updates, a LoRA merge, a loaded checkpoint); see
``docs/notes/benchmarks-log.md`` for the speed, the greedy agreement with :class:`HFEngine` and the
conversion cost.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Sequence
from typing import Any

import torch

from kgreason.errors import KGReasonError
from kgreason.models.export import merged_copy
from kgreason.rollout.engine import (
    Generation,
    WeightsCopyEngine,
    common_prefix_len,
    finish_generation,
)

COMPUTE_TYPES = ("int8", "int8_float32", "float32")


def _ctranslate2():
    try:
        import ctranslate2
    except ImportError as e:
        raise KGReasonError(
            "engine=ct2 needs CTranslate2: pip install 'kgreason[ct2]' "
            "(or use engine=hf, which has the same interface).") from e
    return ctranslate2


def _check_compute_type(compute_type: str) -> None:
    if compute_type not in COMPUTE_TYPES:
        raise KGReasonError(f"compute_type={compute_type!r}: choose one of {', '.join(COMPUTE_TYPES)}")


def convert_to_ctranslate2(model, tokenizer, directory: str | os.PathLike, quantization: str = "int8") -> None:
    """Write a CTranslate2 copy of ``model`` (LoRA adapters merged) into ``directory``.

    The model itself is not changed: its copy is merged and handed to CTranslate2's
    transformers loader, which dismantles what it converts.

    Args:
        model: a transformers causal LM, or a peft model wrapping one.
        tokenizer: its tokenizer (the vocabulary is written with the model).
        directory: an existing, empty folder.
        quantization: one of :data:`COMPUTE_TYPES`.

    Raises:
        KGReasonError: CTranslate2 is missing or does not convert this architecture.
    """
    _ctranslate2()
    from ctranslate2.converters import transformers as ct2_transformers

    _check_compute_type(quantization)
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    name = type(base.config).__name__
    loader = ct2_transformers._MODEL_LOADERS.get(name)
    if loader is None:
        raise KGReasonError(f"CTranslate2 cannot convert a {name} model; use engine=hf")
    model = merged_copy(model)
    with torch.no_grad():
        # The loader calls gc.collect() after each layer; in a process holding a dataset,
        # a KB and a model that is ~0.2 s a layer (6 of a conversion's 7 s). Objects that
        # exist now are not garbage of the conversion, so leave them out of those passes.
        gc.freeze()
        try:
            spec = loader(model, tokenizer)
        finally:
            gc.unfreeze()
    spec.validate()
    spec.optimize(quantization=quantization)
    spec.save(str(directory))


MIN_STATIC_PREFIX = 16  # shorter shared prefixes are not worth a separate encoding pass


class CT2Engine(WeightsCopyEngine):
    """:class:`~kgreason.rollout.Engine` on a CTranslate2 copy of the policy.

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`; its current weights are
            converted before the first generation and again once they change.
        compute_type: ``"float32"`` (the default: the tokens the trainer scores), ``"int8"``
            (weights and GEMMs in int8: faster, but the rollouts then come from a slightly
            different policy than the one whose log-probs the loss takes; the RL update
            weights each token by truncated importance sampling, ``objective.tis_cap``) or ``"int8_float32"`` (int8 weights, float32 activations).
        temperature, top_p, top_k: sampling (``top_k=0``: the whole vocabulary), as for
            :class:`~kgreason.rollout.HFEngine`. Generations carry their tokens'
            log-probs at temperature 1 (greedy, or sampling at ``temperature=1``); at
            another temperature CTranslate2 gives none, and the trainer recomputes them.
        threads: CPU threads for CTranslate2 (default: torch's).

    Attributes:
        syncs: conversions so far; ``sync_seconds`` their total wall time.
    """

    def __init__(self, policy, compute_type: str = "float32", temperature: float = 1.0, top_p: float = 1.0,
                 top_k: int = 0, threads: int | None = None):
        _ctranslate2()
        _check_compute_type(compute_type)
        super().__init__(policy)
        self.tokenizer = policy.tokenizer
        self.compute_type = compute_type
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.threads = threads or torch.get_num_threads()

    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        generator = self._current()
        tok = self.tokenizer
        stops = [s for s in stop if s]
        # Enough trailing tokens to spell the longest stop string (a token is >= 1 char).
        window = max((len(s) for s in stops), default=0) + 1
        made: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        temperature = 1.0 if greedy else self.temperature
        # CTranslate2 reports log-probs at temperature 1 only (its per-step logits are not
        # filled reliably in a batch), so at another temperature the engine gives none
        tempered = temperature != 1.0

        def on_token(step) -> bool:
            row = made[step.batch_id]
            row.append(step.token_id)
            if not tempered:
                logprobs[step.batch_id].append(step.log_prob)
            if not stops:
                return False
            tail = tok.decode(row[-window:])
            return any(s in tail for s in stops)

        # The rows' common prefix (the system prompt and tool list; in a GRPO group the
        # question too) is encoded once for the batch instead of once per row: 1.9-2.6x
        # faster on 8-32 KG-R1 prompts, same tokens at float32 (docs/notes/benchmarks-log.md).
        # Not cached across calls: a group's prefix names its question, and the
        # generator's prompt cache has no eviction.
        # at least one token per row left to start decoding from
        k = min(common_prefix_len(prompts), min(map(len, prompts)) - 1)
        static = tok.convert_ids_to_tokens(list(prompts[0][:k])) if k >= MIN_STATIC_PREFIX else None
        cut = k if static else 0
        results = generator.generate_batch(
            [tok.convert_ids_to_tokens(list(p[cut:])) for p in prompts],
            static_prompt=static, cache_static_prompt=False,
            max_length=max_new_tokens, include_prompt_in_result=False,
            end_token=[tok.eos_token_id], return_end_token=True,
            sampling_topk=1 if greedy else self.top_k, sampling_topp=1.0 if greedy else self.top_p,
            sampling_temperature=temperature, callback=on_token,
            return_scores=not tempered)
        # the callback saw every token the results hold, in order (stop strings end a row early)
        return [finish_generation(tok, list(r.sequences_ids[0]), stops, max_new_tokens, None if tempered else lp)
                for r, lp in zip(results, logprobs, strict=True)]

    @property
    def precision(self) -> str:  # type: ignore[override]  # what results.json records for its rollouts
        return self.compute_type

    scratch_prefix = "kgreason-ct2-"
    scratch_copies = 2  # a float32 copy (an int8 one is smaller), with a margin

    def _write(self, directory: str) -> None:
        convert_to_ctranslate2(self.policy.model, self.tokenizer, directory, self.compute_type)

    def _load(self, directory: str) -> Any:
        ct2 = _ctranslate2()
        # CTranslate2 samples with a generator per worker thread, seeded when the
        # thread first samples; a new Generator has new threads. Seeding from torch's
        # generator makes a seeded run (and a resumed one: RL checkpoints hold torch's
        # RNG state) sample the same tokens.
        ct2.set_random_seed(int(torch.randint(0, 2**31 - 1, ()).item()))
        return ct2.Generator(directory, device="cpu", compute_type=self.compute_type, intra_threads=self.threads)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(compute_type={self.compute_type!r}, "
                f"threads={self.threads})")
