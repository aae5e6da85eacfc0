"""vLLM behind the :class:`~kgreason.rollout.Engine` interface, kept in step with the policy.

The engine starts vLLM from a ``save_pretrained`` copy of the policy with its LoRA adapters
merged, and after every change of the policy's weights (an RL update) writes the merged
weights into the running vLLM model in place (``model.load_weights``, the path vLLM's own
loader takes), then drops vLLM's prefix cache, whose keys and values were computed with
the old weights. Nothing is written to disk after the start.

GPU only (``pip install 'kgreason[gpu]'``); on a CPU use ``engine=hf`` or ``engine=ct2``,
which have the same interface. The weight push follows vLLM's documented RL recipe
(``LLM.collective_rpc`` with a function run on each worker; tensor parallelism 1), with the
in-process worker of older releases as the fallback.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

import torch

from kgreason.errors import KGReasonError
from kgreason.models.export import merged_copy
from kgreason.models.version import WeightsVersion
from kgreason.rollout.engine import Engine, Generation, finish_generation, weights_version


def _vllm() -> Any:
    try:
        import vllm
    except ImportError as e:
        raise KGReasonError("engine=vllm needs vLLM and a GPU: pip install 'kgreason[gpu]'. On a CPU use "
                            "engine=hf or engine=ct2, which have the same interface.") from e
    return vllm


def merged_weights(model) -> dict[str, torch.Tensor]:
    """The model's weights with every LoRA adapter merged in, under the pre-trained
    model's parameter names (``model.layers.0.self_attn.q_proj.weight``), as vLLM loads them.

    Args:
        model: a transformers model or a peft ``PeftModel`` around one.

    Returns:
        name -> tensor (a copy; the model is not modified).
    """
    return merged_copy(model).state_dict()


def _chosen(output: Any) -> list[float] | None:
    """The log-prob of each token of a vLLM ``CompletionOutput`` (None without log-probs)."""
    if not output.logprobs:
        return None
    return [step[token].logprob for step, token in zip(output.logprobs, output.token_ids, strict=False)]


def _load_on_worker(worker, weights: list[tuple[str, torch.Tensor]]) -> None:
    # runs inside each vLLM worker (collective_rpc): its model takes HF names
    worker.model_runner.model.load_weights(weights=weights)


class VLLMEngine(Engine):
    """:class:`~kgreason.rollout.Engine` on vLLM, the policy's weights pushed after each change.

    Args:
        policy: a :class:`~kgreason.models.CausalLMPolicy`; vLLM starts from its merged
            weights at the first generation and receives them again whenever they change.
        temperature, top_p, top_k: sampling, as for :class:`~kgreason.rollout.HFEngine`
            (``top_k=0``: the whole vocabulary).
        dtype: vLLM's weights and activations.
        gpu_memory_utilization: vLLM's share of the GPU (the trainer holds the rest).
        **llm_kwargs: passed to ``vllm.LLM`` (e.g. ``max_model_len``).

    Attributes:
        syncs: weight pushes so far (the start included); ``sync_seconds`` their wall time.

    Raises:
        KGReasonError: vLLM is not installed.
    """

    def __init__(self, policy, temperature: float = 1.0, top_p: float = 1.0, top_k: int = 0,
                 dtype: str = "bfloat16", gpu_memory_utilization: float = 0.3, **llm_kwargs: Any):
        self._vllm = _vllm()
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.temperature, self.top_p, self.top_k = temperature, top_p, top_k
        self.dtype = dtype
        self.llm_kwargs = {"gpu_memory_utilization": gpu_memory_utilization, "enable_prefix_caching": True,
                           **llm_kwargs}
        if temperature != 1.0:
            # vLLM returns temperature-1 log-probs unless asked for the processed ones; with
            # top_p = 1 and no top-k those are log_softmax(logits / T), as the trainer scores
            self.llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        self.syncs = 0
        self.sync_seconds = 0.0
        self._llm: Any = None
        self._synced: WeightsVersion | None = None

    def generate(self, prompts: Sequence[Sequence[int]], stop: Sequence[str] = (),
                 max_new_tokens: int = 256, greedy: bool = False) -> list[Generation]:
        if not prompts:
            return []
        llm = self._current()
        stops = [s for s in stop if s]
        params = self._vllm.SamplingParams(
            max_tokens=max_new_tokens, stop=stops, include_stop_str_in_output=True,
            temperature=0.0 if greedy else self.temperature, top_p=1.0 if greedy else self.top_p,
            top_k=-1 if greedy or self.top_k <= 0 else self.top_k,  # vLLM: -1 is "no top-k"
            logprobs=0)  # the sampled token's own log-prob
        outs = llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        # the same cut as every other engine (first EOS, or the end of the first stop string)
        return [finish_generation(self.tokenizer, list(o.outputs[0].token_ids), stops, max_new_tokens,
                                  _chosen(o.outputs[0])) for o in outs]

    def _current(self):
        version = weights_version(self.policy.model)
        if self._llm is None:
            self._start(version)
        elif version != self._synced:
            self._push(version)
        return self._llm

    def _start(self, version: WeightsVersion) -> None:
        t0 = time.perf_counter()
        directory = tempfile.mkdtemp(prefix="kgreason-vllm-")
        try:
            merged_copy(self.policy.model).save_pretrained(directory)
            self.tokenizer.save_pretrained(directory)
            self._llm = self._vllm.LLM(model=directory, dtype=self.dtype, **self.llm_kwargs)
        finally:
            shutil.rmtree(directory, ignore_errors=True)  # vLLM holds the weights in memory now
        self._done(version, t0)

    def _push(self, version: WeightsVersion) -> None:
        t0 = time.perf_counter()
        weights = list(merged_weights(self.policy.model).items())
        if hasattr(self._llm, "collective_rpc"):
            self._llm.collective_rpc(_load_on_worker, args=(weights,))
        else:  # vLLM < 0.7: one in-process worker
            self._llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights(weights=weights)
        if hasattr(self._llm, "reset_prefix_cache"):
            self._llm.reset_prefix_cache()
        self._done(version, t0)

    def _done(self, version: WeightsVersion, t0: float) -> None:
        self._synced = version
        self.syncs += 1
        self.sync_seconds += time.perf_counter() - t0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dtype={self.dtype!r}, syncs={self.syncs})"
