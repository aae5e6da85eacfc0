"""``engine=openai`` against real completion servers started on 127.0.0.1 (kgreason's own,
``python -m kgreason.serve``): token ids and log-probs back, weights pushed after real
optimiser steps and checked on every answer, a server killed mid-rollout, a smoke run."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.errors import ConfigError, EngineUnavailable
from kgreason.kb.servers import free_port
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.models.export import merged_copy, save_adapter
from kgreason.rollout import HFEngine, MultiTurnRollout, OpenAIEngine
from kgreason.serve.app import merge_adapter

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
ROOT = Path(__file__).resolve().parents[2]


class Server:
    """``python -m kgreason.serve --model tiny`` on a free loopback port, stopped by PID."""

    def __init__(self, seed: int = 0) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen([sys.executable, "-m", "kgreason.serve", "--model", "tiny", "--port",
                                      str(self.port), "--threads", "1", "--seed", str(seed)], cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.proc.stderr.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("server did not start within 120 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    started = [Server(), Server()]
    yield started
    for s in started:
        s.stop()


def lora_policy() -> CausalLMPolicy:
    policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8), seed=1)  # other weights than the servers'
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn_like(p) * 0.5)
    return policy


def prompts(policy: CausalLMPolicy, n: int) -> list[list[int]]:
    return [policy.chat_ids([{"role": "user", "content": f"question {i}" + " more" * i}]) for i in range(n)]


@pytest.mark.parametrize("weight_sync", ["kgreason", "vllm_lora", "sglang_disk"])
def test_tokens_logprobs_and_weights_come_from_the_trainers_policy(weight_sync):
    policy = lora_policy()
    # vLLM serves the pre-trained base and takes adapters: the servers start from the policy's
    # base (seed 1); the other protocols push whole weights, so the servers start from others
    started = [Server(seed=1 if weight_sync == "vllm_lora" else 0) for _ in range(2)]
    try:
        check_weight_sync(policy, started, weight_sync)
    finally:
        for s in started:
            s.stop()


def check_weight_sync(policy: CausalLMPolicy, servers: list[Server], weight_sync: str) -> None:
    ps = prompts(policy, 5)
    engine = OpenAIEngine(policy, [s.url for s in servers], weight_sync=weight_sync)
    local = HFEngine(policy)
    opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=0.5, fused=True)
    outputs = []
    for step in range(3):
        remote = engine.generate(ps, stop=["e"], max_new_tokens=10, greedy=True)
        here = local.generate(ps, stop=["e"], max_new_tokens=10, greedy=True)
        assert [g.token_ids for g in remote] == [g.token_ids for g in here]
        assert [g.text for g in remote] == [g.text for g in here]
        for a, b in zip(remote, here, strict=True):
            assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs, strict=True)) < 1e-4
        assert engine.syncs == step + 1 and engine.version == f"policy-v{step + 1}"
        outputs.append([g.token_ids for g in here])
        ids = torch.tensor([ps[0] + here[0].token_ids])  # a real update: fused AdamW, as a trainer steps
        lp, _ = policy.token_logprobs(ids, torch.ones_like(ids), from_pos=len(ps[0]))
        opt.zero_grad()
        lp.sum().backward()
        opt.step()
        if step == 0:  # the SFT -> RL hand-over: the adapter is folded in, a fresh one trains on top
            policy.merge_lora()
            local = HFEngine(policy)
            opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=0.5, fused=True)
    assert len({str(o) for o in outputs}) > 1  # the updates changed the output the servers follow
    assert len(policy.merged_adapters) == 1  # so the last pushes carried a stack of two adapters
    body = {"prompt": ps[0], "max_tokens": 2, "return_token_ids": True}
    if weight_sync == "sglang_disk":  # every answer names the weights version it came from
        answer = json.loads(post(servers[0].url + "/completions", body))
        assert answer["metadata"]["weight_version"] == "policy-v3"
        assert json.loads(urllib.request.urlopen(servers[0].url[:-3] + "/model_info", timeout=30).read()
                          )["weight_version"] == "policy-v3"
    else:  # a request for weights a server does not hold is refused, never answered from others
        with pytest.raises(urllib.error.HTTPError, match="404"):
            post(servers[0].url + "/completions", {**body, "model": "policy-v2"})


def test_data_parallel_processes_push_their_own_adapters_to_one_vllm_style_server(monkeypatch):
    """Under DDP every process pushes after the same step: with vLLM's LoRA calls one shared
    adapter name would be loaded twice (refused) and unloaded under the other process."""
    import kgreason.training.distributed as distributed

    policy = lora_policy()
    server = Server(seed=1)
    try:
        ps = prompts(policy, 2)
        engines = [OpenAIEngine(policy, [server.url], weight_sync="vllm_lora") for _ in range(2)]
        opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad], lr=0.5)
        for _ in range(2):
            want = [g.token_ids for g in HFEngine(policy).generate(ps, max_new_tokens=6, greedy=True)]
            for rank, engine in enumerate(engines):
                monkeypatch.setattr(distributed, "rank_and_world", lambda r=rank: (r, len(engines)))
                assert [g.token_ids for g in engine.generate(ps, max_new_tokens=6, greedy=True)] == want
            ids = torch.tensor([ps[0] + want[0]])
            lp, _ = policy.token_logprobs(ids, torch.ones_like(ids), from_pos=len(ps[0]))
            opt.zero_grad()
            lp.sum().backward()
            opt.step()
        assert [e.version for e in engines] == ["policy-v2", "policy-v2-rank1"]
        assert not any(e.failed for e in engines)
    finally:
        server.stop()


def post(url: str, body: dict) -> bytes:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def test_vllm_lora_sync_needs_a_lora_policy():
    policy = CausalLMPolicy.tiny(seed=1)
    with pytest.raises(ConfigError, match="fully fine-tuned"):
        OpenAIEngine(policy, ["http://127.0.0.1:1/v1"], weight_sync="vllm_lora")
    with pytest.raises(ConfigError, match="kgreason, vllm_lora, sglang_disk, none"):
        OpenAIEngine(policy, ["http://127.0.0.1:1/v1"], weight_sync="nccl")


def test_the_servers_adapter_merge_equals_peft_on_a_stack_of_two(tmp_path):
    policy = lora_policy()
    policy.merge_lora()  # the first adapter folded in; a second one on top
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.add_(torch.randn_like(p) * 0.3)
    base = CausalLMPolicy.tiny(seed=1).model.state_dict()
    merged = merge_adapter(base, str(save_adapter(policy, tmp_path / "a", base="tiny")))
    want = merged_copy(policy.model).state_dict()
    assert json.loads((tmp_path / "a" / "adapter_config.json").read_text())["r"] == 8  # two rank-4 adapters
    assert max((merged[k] - want[k]).abs().max().item() for k in want) < 1e-5
    assert any((merged[k] - base[k]).abs().max() > 1e-3 for k in want)  # the adapters did change weights


def test_a_server_killed_mid_rollout_hands_its_rows_to_another(servers, demo_oxigraph):
    policy = lora_policy()
    engine = OpenAIEngine(policy, [s.url for s in servers])
    generate, calls = engine.generate, [0]

    def kill_after_the_first_turn(*args, **kw):
        calls[0] += 1
        if calls[0] == 2:
            servers[0].kill()
        return generate(*args, **kw)

    engine.generate = kill_after_the_first_turn
    samples = load_dataset("demo", split="train")[:4]
    ro = MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new_tokens=12)
    trajs, stats = ro.run([make_env("kg_r1", demo_oxigraph, max_turns=3) for _ in samples], samples, greedy=True)
    assert calls[0] >= 2 and servers[0].url in engine.failed and servers[1].url not in engine.failed
    assert len(trajs) == 4 and all(t.turns and t.sampler_logprobs is not None for t in trajs)
    local = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, max_new_tokens=12)
    same, _ = local.run([make_env("kg_r1", demo_oxigraph, max_turns=3) for _ in samples], samples, greedy=True)
    assert [t.token_ids for t in trajs] == [t.token_ids for t in same]  # nothing lost, nothing changed
    servers[1].kill()
    with pytest.raises(EngineUnavailable, match="no completion server is left"):
        engine.generate(prompts(policy, 2), max_new_tokens=4)


def test_kg_r1_smoke_run_on_the_server(servers, tmp_path):
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "experiments/run.py", "method=kg_r1", "preset=smoke", "engine=openai",
                        f"engine.urls=[{servers[0].url}]", f"hydra.run.dir={out}"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert set(res["eval"]) == {"untrained", "trained"}
    cols = (out / "rl" / "metrics.csv").read_text().splitlines()[0]
    assert "train/sampler_abs_dlogp" in cols  # its log-probs came back and were compared with the trainer's
