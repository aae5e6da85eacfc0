"""DTPO training: step samples grouped by parent, and updates that favour the better sibling."""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader

from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rewards.isp import DTPOReward, NodeReward
from kgreason.rollout import TreeRollout
from kgreason.rollout.tree import Tree, TreeNode
from kgreason.training import PromptStream, TreeRLLitModule, dtpo_config, step_samples
from kgreason.types import KBQASample
from tests.rollout.test_tree import ANSWER, BIRTH, EMPTY, DepthScript


def _tree(n_children: int, rewards: list[float]) -> tuple[Tree, dict[int, NodeReward]]:
    nodes = [TreeNode(id=0, parent=None, depth=0, context_ids=[1, 2, 3])]
    for i in range(n_children):
        nodes.append(TreeNode(id=i + 1, parent=0, depth=1, context_ids=[1, 2, 3], gen_ids=[4 + i, 9]))
    nodes[0].children = [n.id for n in nodes[1:]]
    rew = {i + 1: NodeReward(r, 1.0, 0.0, r) for i, r in enumerate(rewards)}
    return Tree(sample=KBQASample(id="q", question="?"), prompt=[], nodes=nodes), rew


def test_step_samples_mask_the_context_and_group_by_parent():
    tree, rew = _tree(3, [1.0, 0.0, 0.5])
    steps, index = step_samples([tree, tree], [rew, rew])
    assert index.tolist() == [0, 0, 0, 1, 1, 1]
    assert steps[0].token_ids == [1, 2, 3, 4, 9] and steps[0].loss_mask == [0, 0, 0, 1, 1]
    assert [s.reward for s in steps[:3]] == [1.0, 0.0, 0.5]


def test_step_samples_code_options_resize_and_drop_flat_groups():
    tree, rew = _tree(8, [float(i) for i in range(8)])
    flat, flat_rew = _tree(4, [0.3] * 4)
    steps, index = step_samples([tree, flat], [rew, flat_rew], group_size=6, drop_zero_variance=True)
    assert len(steps) == 6 and set(index.tolist()) == {0}
    steps, _ = step_samples([tree, flat], [rew, flat_rew])
    assert len(steps) == 12


def test_dtpo_updates_raise_the_better_siblings_probability(demo_oxigraph, tok, pacino):
    torch.manual_seed(0)
    pol = CausalLMPolicy.tiny(seed=3)
    engine = DepthScript(tok, [[BIRTH, EMPTY], [ANSWER]])
    ro = TreeRollout(engine, pol.tokenizer, pol.chat_ids, k=2, max_depth=2)
    module = TreeRLLitModule(pol, ro, lambda: make_env("isp_dtpo", demo_oxigraph, max_turns=2), DTPOReward(),
                             dtpo_config(lr=5e-3, mini_batch_size=8, iterations=3))

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
    trainer.fit(module, DataLoader(PromptStream([pacino], batch_size=1), batch_size=None))
    after = logp(BIRTH) - logp(EMPTY)
    assert after > before + 1.0  # BIRTH (progress, answered) beat EMPTY (failed) in every group
    m = trainer.callback_metrics
    assert float(m["train/best_f1"]) == 1.0 and float(m["train/effective_branches"]) > 0
    for key in ("reward/format", "reward/progress", "reward/outcome", "train/pruning_rate", "train/clip_frac"):
        assert key in m, key
