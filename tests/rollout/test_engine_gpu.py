"""HFEngine's caches and the rollouts on a CUDA device decode what they decode on the CPU
(``-m gpu`` on a lent GPU; skipped elsewhere)."""

from __future__ import annotations

import pytest
import torch

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine, MultiTurnRollout, TreeRollout

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]

#: each cache path of HFEngine alone, then all of them (the default)
SETTINGS = {
    "plain": {"share_prefix": 0, "reuse_cache": False, "growing_cache": False, "compact_every": 0,
              "bucket_prefill": False, "pack_columns": False},
    "dynamic_cache": {"growing_cache": False},
    "no_compaction": {"compact_every": 0},
    "compaction_every_3": {"compact_every": 3},
    "no_bucketed_prefill": {"bucket_prefill": False},
    "no_packed_columns": {"pack_columns": False},
    "default": {},
}


@pytest.fixture(scope="module")
def policies():
    return CausalLMPolicy.tiny(seed=0), CausalLMPolicy.tiny(seed=0).to("cuda")


def turns(policy: CausalLMPolicy, engine: HFEngine) -> list[list[int]]:
    """Two turns of five prompts of different lengths sharing their instructions, the
    second extending the first (the kept cache's case); every generated token."""
    head = "Answer from the knowledge graph. " * 8
    ps = [policy.chat_ids([{"role": "user", "content": head + f"question {i}" + " more" * (4 * i)}]) for i in range(5)]
    first = engine.generate(ps, stop=["</search>"], max_new_tokens=12, greedy=True)
    obs = policy.tokenizer(" <information>an observation</information>", add_special_tokens=False)["input_ids"]
    nxt = [p + g.token_ids + obs * (i + 1) for i, (p, g) in enumerate(zip(ps, first, strict=True))]
    second = engine.generate(nxt, stop=["</search>"], max_new_tokens=12, greedy=True)
    return [g.token_ids for g in first + second]


@pytest.mark.parametrize("name", list(SETTINGS))
def test_each_cache_path_decodes_the_cpus_tokens_on_the_gpu(policies, name):
    cpu, gpu = policies
    on_gpu = HFEngine(gpu, **SETTINGS[name])
    assert turns(gpu, on_gpu) == turns(cpu, HFEngine(cpu, **SETTINGS[name]))
    if SETTINGS[name].get("reuse_cache", True):
        assert on_gpu.reused_tokens > 0  # the second turn continued the kept cache


def test_multi_turn_rollout_on_the_demo_kg_equals_the_cpus(policies, demo_oxigraph):
    cpu, gpu = policies
    samples = load_dataset("demo", split="dev")[:6]
    out = []
    for policy in (cpu, gpu):
        ro = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, max_new_tokens=16)
        trajs, stats = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=3) for _ in samples], samples, greedy=True)
        out.append(([t.token_ids for t in trajs], [t.loss_mask for t in trajs], stats.generated_tokens))
    assert out[0] == out[1]


def test_sampled_rollouts_on_the_gpu_carry_log_probs(policies, demo_oxigraph):
    _, gpu = policies
    torch.manual_seed(0)
    samples = load_dataset("demo", split="train")[:4]
    ro = MultiTurnRollout(HFEngine(gpu), gpu.tokenizer, gpu.chat_ids, max_new_tokens=16)
    trajs, _ = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=2) for _ in samples], samples)
    for t in trajs:
        assert t.sampler_logprobs is not None and len(t.sampler_logprobs) == len(t.token_ids)
        policy_lp = [x for x, m in zip(t.sampler_logprobs, t.loss_mask, strict=True) if m]
        assert policy_lp and all(x <= 0 for x in policy_lp) and any(x < 0 for x in policy_lp)


def test_tree_rollout_on_the_gpu_grows_the_cpus_trees(policies, demo_oxigraph, pacino):
    cpu, gpu = policies
    grown = []
    for policy in (cpu, gpu):
        ro = TreeRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, k=3, max_depth=2, max_new_tokens=16)
        trees, stats = ro.run([make_env("isp_dtpo", demo_oxigraph, max_turns=2)], [pacino], greedy=True)
        grown.append(([(n.parent, n.gen_ids, n.observation) for n in trees[0].nodes], stats.generated_tokens))
    assert grown[0] == grown[1] and grown[0][1] > 0
