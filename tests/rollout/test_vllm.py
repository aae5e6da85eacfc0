"""VLLMEngine's side of the contract, checked without a GPU.

vLLM cannot run here, so ``vllm`` is replaced by a stand-in that does what the engine relies
on: ``LLM(model=dir)`` loads the folder with transformers; ``load_weights`` copies tensors
by the pre-trained model's names and refuses unknown ones (as vLLM's loaders do);
``generate`` decodes greedily from the token-id prompts. What this checks is the engine's
own work: the merged weights it starts from and pushes, when it pushes, the prefix-cache
reset, the sampling parameters and the common cut. vLLM itself is untested here (no GPU).
"""

from __future__ import annotations

import sys
import types
from types import SimpleNamespace

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf

from kgreason.errors import KGReasonError
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine, VLLMEngine
from tests.rollout.test_ct2 import LORA, lora_tiny, nudge, prompts, tokens


class _Params:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class _Model:
    """vLLM's model as its weight loader sees it: tensors addressed by HF names."""

    def __init__(self, hf):
        self.hf = hf

    def load_weights(self, weights):
        state = self.hf.state_dict()
        with torch.no_grad():
            for name, tensor in weights:
                state[name].copy_(tensor)  # KeyError on a name the model does not have


class _LLM:
    made: list[_LLM] = []

    def __init__(self, model: str, dtype: str, **kw):
        from transformers import AutoModelForCausalLM

        self.hf = AutoModelForCausalLM.from_pretrained(model).eval()
        self.kw, self.resets, self.params = kw, 0, []
        self.worker = SimpleNamespace(model_runner=SimpleNamespace(model=_Model(self.hf)))
        type(self).made.append(self)

    def collective_rpc(self, fn, args=()):
        return [fn(self.worker, *args)]

    def reset_prefix_cache(self):
        self.resets += 1

    def generate(self, prompts, params, use_tqdm=True):
        assert params.temperature == 0.0  # the tests decode greedily
        self.params.append(params)
        outs = []
        for p in prompts:
            ids = torch.tensor([p["prompt_token_ids"]])
            with torch.no_grad():
                out = self.hf.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                       max_new_tokens=params.max_tokens, pad_token_id=0,
                                       return_dict_in_generate=True, output_logits=True)
            new = out.sequences[0, ids.shape[1]:].tolist()
            # vLLM's format: per token, {token id: Logprob} for the sampled one (logprobs=0)
            logprobs = None if params.logprobs is None else [
                {t: SimpleNamespace(logprob=float(step[0].float().log_softmax(-1)[t]))}
                for t, step in zip(new, out.logits, strict=True)]
            outs.append(SimpleNamespace(outputs=[SimpleNamespace(token_ids=new, logprobs=logprobs)]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch):
    _LLM.made.clear()
    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=_LLM, SamplingParams=_Params))
    return _LLM.made


def test_starts_from_the_merged_policy_and_decodes_as_hf(fake_vllm):
    policy = lora_tiny()
    ps = prompts(policy, 3)
    out = VLLMEngine(policy).generate(ps, stop=["e"], max_new_tokens=12, greedy=True)
    hf = HFEngine(policy).generate(ps, stop=["e"], max_new_tokens=12, greedy=True)
    assert [(g.token_ids, g.text, g.finish) for g in out] == [(g.token_ids, g.text, g.finish) for g in hf]
    (llm,) = fake_vllm
    assert llm.kw["enable_prefix_caching"] and llm.params[0].stop == ["e"] and llm.params[0].top_k == -1
    # the sampled tokens' log-probs come back (logprobs=0), cut with the tokens
    assert llm.params[0].logprobs == 0 and "logprobs_mode" not in llm.kw  # temperature 1: vLLM's default mode
    for g, h in zip(out, hf, strict=True):
        assert len(g.logprobs) == len(g.token_ids)
        assert max(abs(a - b) for a, b in zip(g.logprobs, h.logprobs, strict=True)) < 1e-4
    assert VLLMEngine(policy, temperature=0.7).llm_kwargs["logprobs_mode"] == "processed_logprobs"
    # the adapters are in what vLLM loaded: without them the model says something else
    plain = HFEngine(CausalLMPolicy.tiny(lora=LORA, seed=0)).generate(ps, max_new_tokens=12, greedy=True)
    assert tokens(plain) != tokens(HFEngine(policy).generate(ps, max_new_tokens=12, greedy=True))


def test_pushes_merged_weights_once_per_change_and_drops_the_prefix_cache(fake_vllm):
    policy = lora_tiny()
    ps = prompts(policy, 2)
    engine = VLLMEngine(policy)
    before = tokens(engine.generate(ps, max_new_tokens=12, greedy=True))
    engine.generate(ps, max_new_tokens=12, greedy=True)
    assert engine.syncs == 1 and fake_vllm[0].resets == 0  # unchanged weights: nothing pushed
    nudge(policy, 0.7)  # what an optimizer step does to the adapters
    after = tokens(engine.generate(ps, max_new_tokens=12, greedy=True))
    assert engine.syncs == 2 and fake_vllm[0].resets == 1 and len(fake_vllm) == 1  # in place, no restart
    assert after == tokens(HFEngine(policy).generate(ps, max_new_tokens=12, greedy=True))
    assert after != before  # the change shows: stale weights would fail the line above


def test_engine_group_builds_it_on_the_policy(fake_vllm):
    cfg = OmegaConf.load("kgreason/conf/engine/vllm.yaml")
    engine = instantiate(cfg, lora_tiny())
    assert isinstance(engine, VLLMEngine) and engine.llm_kwargs["gpu_memory_utilization"] == 0.3


def test_without_vllm_the_error_names_the_cpu_engines(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm raises ImportError
    with pytest.raises(KGReasonError, match="engine=hf or engine=ct2"):
        VLLMEngine(CausalLMPolicy.tiny())
