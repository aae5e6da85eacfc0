"""DTPO training: step samples grouped by parent, group filters, and updates that favour
the better sibling."""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader

from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rewards import Component, CompositeReward, RewardOutput
from kgreason.rollout import TreeRollout
from kgreason.rollout.tree import Tree, TreeNode
from kgreason.training import (
    Experience,
    RLConfig,
    RLLitModule,
    TreeExperience,
    UniformStream,
    filter_groups,
    node_rewards,
    step_sample,
)
from kgreason.types import KBQASample, Trajectory
from tests.rollout.test_tree import ANSWER, BIRTH, EMPTY, DepthScript

DTPO = CompositeReward([Component("isp_format", 0.1, alias="format"),
                        Component("dtpo_progress", 0.6, alias="progress"),
                        Component("dtpo_outcome", 0.3, alias="outcome", gate=["format", "progress"],
                                  gate_threshold=-0.5)])


def _tree(n_children: int) -> Tree:
    nodes = [TreeNode(id=0, parent=None, depth=0, context_ids=[1, 2, 3])]
    for i in range(n_children):
        nodes.append(TreeNode(id=i + 1, parent=0, depth=1, context_ids=[1, 2, 3], gen_ids=[4 + i, 9]))
    nodes[0].children = [n.id for n in nodes[1:]]
    return Tree(sample=KBQASample(id="q", question="?"), prompt=[], nodes=nodes)


def test_a_node_is_a_one_step_sample_with_its_context_masked():
    t = step_sample(_tree(3), 1)
    assert t.token_ids == [1, 2, 3, 4, 9] and t.loss_mask == [0, 0, 0, 1, 1] and t.turn_index == [-1, -1, -1, 0, 0]


def test_node_rewards_call_the_reward_with_the_tree_and_the_node():
    seen = []

    def reward(traj, sample, **ctx):
        seen.append((ctx["node"], ctx["step"], traj.token_ids[-2]))
        return RewardOutput(float(ctx["node"]))

    tree = _tree(3)
    out = node_rewards(tree, reward, step=7)
    assert {k: v.total for k, v in out.items()} == {1: 1.0, 2: 2.0, 3: 3.0}
    assert seen == [(1, 7, 4), (2, 7, 5), (3, 7, 6)]


def _experience(groups: list[list[float]]) -> Experience:
    samples, index = [], []
    for g, rewards in enumerate(groups):
        for r in rewards:
            samples.append(Trajectory(sample_id=f"{g}", prompt=[], reward=r))
            index.append(g)
    return Experience(samples, index, [1] * len(samples), samples)


def test_group_filters_resize_and_drop_flat_groups():
    exp = _experience([[float(i) for i in range(8)], [0.3] * 4])
    kept = filter_groups(exp, group_size=6, drop_zero_variance=True)
    assert len(kept.samples) == 6 and set(kept.index) == {0}
    assert len({t.reward for t in kept.samples}) == 6  # a subsample without repeats
    assert filter_groups(exp, group_size=6, seed=3).index == filter_groups(exp, group_size=6, seed=3).index
    assert len(filter_groups(exp).samples) == 12  # paper: every child, every group


def test_dtpo_updates_raise_the_better_siblings_probability(demo_oxigraph, tok, pacino):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    engine = DepthScript(tok, [[BIRTH, EMPTY], [ANSWER]])
    ro = TreeRollout(engine, pol.tokenizer, pol.chat_ids, k=2, max_depth=2)
    config = RLConfig(advantage="tree_step", kl_coef=0.0, lr=5e-3, mini_batch_size=8, iterations=3)
    module = RLLitModule(pol, TreeExperience(ro, DTPO),
                         lambda: make_env("isp_dtpo", demo_oxigraph, max_turns=2, cache_kb=True), config)

    def logp(text: str) -> float:
        env = make_env("isp_dtpo", demo_oxigraph, max_turns=2)
        ctx = pol.chat_ids(env.reset(pacino))
        gen = tok(text, add_special_tokens=False)["input_ids"]
        ids = torch.tensor([ctx + gen])
        with torch.no_grad():
            lp, _ = pol.token_logprobs(ids, torch.ones_like(ids), from_pos=len(ctx))
        return float(lp.sum())

    before = logp(BIRTH) - logp(EMPTY)
    trainer = L.Trainer(max_steps=-1, accelerator="cpu", logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(module, DataLoader(UniformStream([pacino], batch_size=1), batch_size=None))
    after = logp(BIRTH) - logp(EMPTY)
    assert after > before + 1.0  # BIRTH (progress, answered) beat EMPTY (failed) in every group
    m = trainer.callback_metrics
    assert float(m["train/best_f1"]) == 1.0 and float(m["train/effective_branches"]) > 0
    assert float(m["train/kb_cache_hits"]) > 0  # the env factory's per-tree cache, shared by the forks
    for key in ("reward/format", "reward/progress", "reward/outcome", "train/pruning_rate", "train/clip_frac"):
        assert key in m, key
