"""RL from tree rollouts with step-level groups (ISP/DTPO).

A tree's training samples are its nodes: each is the parent's context (masked) and the
node's own action (trained), so no multi-turn masking is needed inside a group (as in
the official code). Siblings — the children of one expanded parent — form a group.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from kgreason.envs.base import KGEnv
from kgreason.eval.metrics import precision_recall_f1
from kgreason.models.policy import CausalLMPolicy
from kgreason.rewards.isp import DTPOReward, NodeReward
from kgreason.rl import AdvantageBatch, token_advantages
from kgreason.rollout.tree import Tree, TreeRollout
from kgreason.training.batching import collate
from kgreason.training.rl import RLConfig, RLLitModule
from kgreason.types import KBQASample, Trajectory


def step_samples(trees: Sequence[Tree], rewards: Sequence[dict[int, NodeReward]], group_size: int | None = None,
                 drop_zero_variance: bool = False, seed: int = 0) -> tuple[list[Trajectory], torch.Tensor]:
    """One single-step trajectory per tree node, grouped by parent.

    Args:
        group_size: the official code resizes groups to ``n`` (6): larger groups are
            subsampled; None keeps every child (paper).
        drop_zero_variance: leave out groups whose rewards are all equal (official code);
            their advantages would be 0 anyway, but they still dilute a token mean.

    Returns:
        trajectories (``reward`` = node reward, ``reward_components`` its parts) and the
        ``[N]`` group index.
    """
    rng = random.Random(seed)
    out: list[Trajectory] = []
    index: list[int] = []
    gid = 0
    for tree, rew in zip(trees, rewards, strict=True):
        for _, children in tree.groups().items():
            if group_size is not None and len(children) > group_size:
                children = rng.sample(children, group_size)
            values = [rew[c.id].total for c in children]
            if drop_zero_variance and max(values) - min(values) < 1e-9:
                continue
            for c in children:
                t = Trajectory(sample_id=tree.sample.id, prompt=tree.prompt)
                t.token_ids, t.loss_mask, t.turn_index = [], [], []
                t.append_tokens(c.context_ids, policy=False, turn=-1)
                t.append_tokens(c.gen_ids, policy=True, turn=0)
                r = rew[c.id]
                t.reward = r.total
                t.reward_components = {"format": r.format, "progress": r.progress, "outcome": r.outcome}
                out.append(t)
                index.append(gid)
            gid += 1
    return out, torch.tensor(index, dtype=torch.long)


class TreeRLLitModule(RLLitModule):
    """:class:`RLLitModule` whose experience comes from tree rollouts (ISP/DTPO).

    Args:
        rollout: a :class:`~kgreason.rollout.TreeRollout`.
        reward: a :class:`~kgreason.rewards.isp.DTPOReward` (tree → node rewards).
        config: :class:`RLConfig`; ``advantage`` should be ``tree_step`` and
            ``n_rollouts`` is unused (the tree's branching factor plays its part).
        group_size, drop_zero_variance: see :func:`step_samples`.
    """

    def __init__(self, policy: CausalLMPolicy, rollout: TreeRollout, make_env: Callable[[], KGEnv],
                 reward: DTPOReward, config: RLConfig | None = None,
                 sink: Callable[[Sequence[Trajectory], int, str], None] | None = None,
                 group_size: int | None = None, drop_zero_variance: bool = False):
        super().__init__(policy, rollout, make_env, reward, config, sink)  # type: ignore[arg-type]
        self.group_size = group_size
        self.drop_zero_variance = drop_zero_variance

    def make_experience(self, batch: list[KBQASample]) -> tuple[dict[str, torch.Tensor], dict[str, float],
                                                                  list[Trajectory]]:
        cfg = self.cfg
        trees, stats = self.rollout.run([self.make_env() for _ in batch], batch)
        rewards = [self.reward(t) for t in trees]
        steps, index = step_samples(trees, rewards, self.group_size, self.drop_zero_variance,
                                    seed=self.iteration)
        leaves = [(tree, leaf) for tree in trees for leaf in tree.leaves()]
        episodes = []
        best: dict[int, float] = {}
        for tree, leaf in leaves:
            t = tree.trajectory(leaf.id)
            t.reward = precision_recall_f1(t.answer, tree.sample.answers)[2] if leaf.answered else 0.0
            best[id(tree)] = max(best.get(id(tree), 0.0), t.reward)
            episodes.append(t)
        logs: dict[str, float] = {
            "train/f1": sum(e.reward for e in episodes) / max(1, len(episodes)),
            "train/best_f1": sum(best.get(id(t), 0.0) for t in trees) / len(trees),
            "train/reward": sum(s.reward for s in steps) / max(1, len(steps)),
            "train/step_samples": float(len(steps)),
            "train/tree_nodes": sum(len(t.nodes) - 1 for t in trees) / len(trees),
            "train/effective_branches": stats.effective_branches,
            "train/pruning_rate": stats.pruning_rate,
            "train/kb_cache_hits": float(stats.cache_hits),
            "train/response_tokens": stats.generated_tokens / max(1, stats.llm_calls),
            "train/invalid_calls": stats.failures / max(1, stats.branches),
            "train/turns": sum(len(tree.path(leaf.id)) for tree, leaf in leaves) / max(1, len(leaves)),
        }
        for k in ("format", "progress", "outcome"):
            vals = [s.reward_components[k] for s in steps]
            if vals:
                logs[f"reward/{k}"] = sum(vals) / len(vals)
        if not steps:  # nothing to learn from (every group dropped): a no-op update
            data = collate(episodes[:1], self.policy.tokenizer.pad_token_id, cfg.max_len)
            data["loss_mask"].zero_()
            data["advantages"] = torch.zeros_like(data["loss_mask"], dtype=torch.float)
            return data, logs, episodes
        per_turn = self.estimator(AdvantageBatch(rewards=torch.tensor([s.reward for s in steps]), index=index,
                                                 n_turns=[1] * len(steps)), **(cfg.advantage_kwargs or {}))
        data = collate(steps, self.policy.tokenizer.pad_token_id, cfg.max_len)
        data["advantages"] = token_advantages(per_turn, data["turn_index"], data["loss_mask"])
        return data, logs, episodes


def dtpo_config(**overrides: Any) -> RLConfig:
    """RLConfig with ISP/DTPO's paper defaults: tree_step groups, clip 0.2, no KL."""
    base = {"advantage": "tree_step", "clip_low": 0.2, "clip_high": None, "kl_coef": 0.0, "n_rollouts": 1}
    base.update(overrides)
    return RLConfig(**base)
