"""An ONNX Runtime GenAI rollout engine: the policy exported to an ONNX decoder in float32.

ONNX Runtime GenAI runs the decoder as one ONNX graph with fused attention and a
preallocated KV buffer, so a decoding step spends little time outside the matrix products
that eager PyTorch surrounds with per-operator overhead. Like
:class:`~kgreason.rollout.CT2Engine`, the engine keeps an exported copy of the policy and
exports again when the policy's weights change; unlike it, each step's logits are read
back, so every generation carries its tokens' log-probs at any sampling temperature.
``docs/benchmarks.md`` gives its decoding speed against the host's limits and the other
engines, and the export cost.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kgreason.errors import KGReasonError
from kgreason.models.export import merged_copy
from kgreason.rollout.engine import (
    Generation,
    WeightsCopyEngine,
    finish_generation,
)


def _genai():
    try:
        import onnxruntime_genai
    except ImportError as e:
        raise KGReasonError(
            "engine=ort needs ONNX Runtime GenAI: pip install 'kgreason[ort]' "
            "(or use engine=hf, which has the same interface).") from e
    return onnxruntime_genai


def pad_id_for(tokenizer) -> int:
    """A token id that marks padding in the exported model's batches.

    ONNX Runtime GenAI derives the attention mask from the pad id (``ids != pad``), so the
    pad id must never occur inside a prompt. Chat models often pad with their end-of-turn
    token (SmolLM2: ``<|im_end|>``, id 2), which every multi-turn prompt contains; the
    engine pads with a special token that is neither the end-of-sequence nor a chat marker
    the template writes.

    >>> from kgreason.models.loading import load_tokenizer
    >>> tok = load_tokenizer()
    >>> pad = pad_id_for(tok)
    >>> pad != tok.eos_token_id and pad in tok.all_special_ids
    True
    """
    template = str(getattr(tokenizer, "chat_template", "") or "")
    used = {tokenizer.eos_token_id, tokenizer.bos_token_id}
    for tid in sorted(tokenizer.all_special_ids):
        token = tokenizer.convert_ids_to_tokens(tid)
        if tid not in used and token not in template:
            return int(tid)
    raise KGReasonError("engine=ort: the tokenizer has no special token free to pad with; use engine=hf")


def export_to_onnx(model, tokenizer, directory: str | os.PathLike) -> None:
    """Write an ONNX Runtime GenAI copy of ``model`` (LoRA adapters merged, float32).

    The merged copy goes through a ``save_pretrained`` folder to ONNX Runtime GenAI's own
    model builder, which writes ``model.onnx``, its weights and ``genai_config.json``;
    the config's pad id is then set to :func:`pad_id_for` the tokenizer.

    Args:
        model: a transformers causal LM, or a peft model wrapping one.
        tokenizer: its tokenizer.
        directory: an existing, empty folder.

    Raises:
        KGReasonError: ONNX Runtime GenAI is missing or its builder fails (the message ends
            with the builder's last output).
    """
    _genai()
    from onnxruntime_genai.models import builder

    out = Path(directory)
    hf_dir, cache = out / "hf", out / "cache"
    merged = merged_copy(model)
    merged.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    del merged
    log = io.StringIO()
    try:
        # the builder prints a line per tensor; keep it for the error message only
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            options = builder.parse_extra_options(None, str(hf_dir), str(out), "fp32", "cpu", str(cache), [])
            builder.create_model(None, str(hf_dir), str(out), "fp32", "cpu", str(cache), **options)
    except Exception as e:  # the builder raises bare Exceptions
        tail = log.getvalue().strip().splitlines()[-5:]
        raise KGReasonError(f"ONNX Runtime GenAI could not export this model ({e}); "
                            f"its builder said: {' | '.join(tail)}; use engine=hf") from e
    finally:
        shutil.rmtree(hf_dir, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    config_path = out / "genai_config.json"
    config = json.loads(config_path.read_text())
    config["model"]["pad_token_id"] = pad_id_for(tokenizer)
    config_path.write_text(json.dumps(config, indent=2))


class ORTEngine(WeightsCopyEngine):
    """:class:`~kgreason.rollout.Engine` on an ONNX Runtime GenAI copy of the policy.

    One generator per call decodes the right-padded batch in lock-step; a row leaves the
    output at its first stop string or end-of-sequence token (the generator runs until
    every row has). Prompts are encoded whole on every call: ONNX Runtime GenAI continues
    a generator's KV cache only for all rows at once, and the rows of a multi-turn batch
    end their turns at different tokens.

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`; its current weights are
            exported before the first generation and again once they change.
        temperature, top_p, top_k: sampling (``top_k=0``: the whole vocabulary), as for
            :class:`~kgreason.rollout.HFEngine`. Generations carry their tokens'
            log-probs at the sampling temperature (``log_softmax(logits / T)``, before
            top-k/top-p; greedy: ``T = 1``).
        threads: CPU threads for ONNX Runtime (default: torch's).

    Attributes:
        syncs: exports so far; ``sync_seconds`` their total wall time.
    """

    precision = "float32"

    def __init__(self, policy, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 threads: int | None = None):
        _genai()
        super().__init__(policy)
        self.tokenizer = policy.tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.threads = threads or torch.get_num_threads()
        self._pad = pad_id_for(self.tokenizer)

    #: the most rows ONNX Runtime GenAI decodes in one generator ("batch_size (50) must be
    #: in [1, 32]"); a larger batch is decoded in chunks of this many
    max_batch = 32

    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        if len(prompts) > self.max_batch:
            return [g for i in range(0, len(prompts), self.max_batch)
                    for g in self.generate(prompts[i : i + self.max_batch], stop, max_new_tokens, greedy)]
        og = _genai()
        model = self._current()
        if any(self._pad in p for p in prompts):
            raise KGReasonError(f"engine=ort pads with token {self._pad}, which a prompt contains; use engine=hf")
        tok = self.tokenizer
        stops = [s for s in stop if s]
        window = max((len(s) for s in stops), default=0) + 1  # tokens enough to spell a stop string
        width = max(map(len, prompts))
        ids = np.full((len(prompts), width), self._pad, dtype=np.int32)
        for i, p in enumerate(prompts):
            # right-padded: the runtime continues each row from its own length (its
            # attention over a left-padded prompt differs from the row alone, measured)
            ids[i, :len(p)] = p
        temperature = 1.0 if greedy else self.temperature
        params = og.GeneratorParams(model)
        search: dict[str, Any] = {"max_length": width + max_new_tokens, "batch_size": len(prompts),
                                  "do_sample": not greedy}
        if not greedy:
            vocab = int(self.policy.model.config.vocab_size)
            # seeded from torch's generator, so a seeded (or resumed) run samples the same tokens
            search.update(temperature=temperature, top_p=self.top_p, top_k=self.top_k or vocab,
                          random_seed=int(torch.randint(0, 2**31 - 1, ()).item()))
        params.set_search_options(**search)
        generator = og.Generator(model, params)
        generator.append_tokens(ids)
        made: list[list[int]] = [[] for _ in prompts]
        logprobs: list[list[float]] = [[] for _ in prompts]
        live = list(range(len(prompts)))
        eos = tok.eos_token_id
        for _ in range(max_new_tokens):
            logits = torch.from_numpy(np.asarray(generator.get_logits())).reshape(len(prompts), -1)
            generator.generate_next_token()
            chosen = np.asarray(generator.get_next_tokens()).reshape(-1)
            rows = torch.tensor(live)
            picked = torch.from_numpy(chosen[live].astype(np.int64))
            scaled = logits[rows].float() / temperature
            lp = (scaled.gather(1, picked[:, None])[:, 0] - torch.logsumexp(scaled, dim=1)).tolist()
            still = []
            for b, t, v in zip(live, picked.tolist(), lp, strict=True):
                made[b].append(t)
                logprobs[b].append(v)
                if t == eos or (stops and any(s in tok.decode(made[b][-window:]) for s in stops)):
                    continue
                still.append(b)
            live = still
            if not live or generator.is_done():
                break
        return [finish_generation(tok, row, stops, max_new_tokens, lp)
                for row, lp in zip(made, logprobs, strict=True)]

    scratch_prefix = "kgreason-ort-"
    scratch_copies = 3  # the merged save_pretrained copy and the ONNX copy, with a margin

    def _write(self, directory: str) -> None:
        export_to_onnx(self.policy.model, self.tokenizer, directory)

    def _load(self, directory: str) -> Any:
        og = _genai()
        config = og.Config(directory)
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {
            "intra_op_num_threads": self.threads, "inter_op_num_threads": 1}}}}))
        return og.Model(config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(threads={self.threads})"
