"""Experience sources: what one RL iteration learns from.

:class:`~kgreason.training.RLLitModule` asks its source for the experience of a batch of
questions and runs the same update on whatever comes back. A source rolls out, scores
and groups; the module filters groups, computes advantages and updates:

* :class:`LinearExperience` — N independent lock-step episodes per question, one group
  per question (GRPO, KG-R1, KBQA-R1, KnowCoder-A1, KG-Reasoner).
* :class:`TreeExperience` — one tree per question; each node is a one-step sample (its
  parent's context masked, its own action trained), siblings form a group (ISP/DTPO).

Both score with any reward of the ``(trajectory, sample, **ctx) -> RewardOutput``
protocol, with ``step=`` and ``space=`` (the episode's action space, whose grammar
format rewards ask) in ``ctx``; a tree passes ``tree=`` and ``node=`` too so node rewards (DTPO's
progress and max-aggregated outcome) are registered rewards like the others.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.eval.metrics import precision_recall_f1
from kgreason.models.protocol import Policy
from kgreason.rewards.base import RewardFn, RewardOutput
from kgreason.rollout.engine import Engine
from kgreason.rollout.multiturn import MultiTurnRollout
from kgreason.rollout.tree import Tree, TreeRollout
from kgreason.types import Episode, KBQASample, Trajectory


@dataclass
class Experience:
    """One iteration's experience.

    Attributes:
        samples: the training sequences (token fields set; ``reward``,
            ``turn_rewards`` and ``reward_components`` filled in).
        index: group id of each sample (advantages compare samples of one group).
        n_turns: turns of each sample that carry advantages (1 for a tree node).
        episodes: the complete episodes to record, frozen (for a tree, its root-to-leaf paths).
        logs: metrics of the rollout (``train/...``, ``reward/...``).
    """

    samples: list[Trajectory]
    index: list[int]
    n_turns: list[int]
    episodes: list[Episode]
    logs: dict[str, float] = field(default_factory=dict)

    def select(self, keep: Sequence[int]) -> Experience:
        """The experience restricted to the samples at positions ``keep`` (in that order)."""
        return Experience([self.samples[i] for i in keep], [self.index[i] for i in keep],
                          [self.n_turns[i] for i in keep], self.episodes, self.logs)


@runtime_checkable
class ExperienceSource(Protocol):
    """Anything that turns a batch of questions into :class:`Experience`."""

    def collect(self, batch: Sequence[KBQASample], make_env: Callable[[], KGEnv], step: int) -> Experience: ...


def filter_groups(exp: Experience, group_size: int | None = None, drop_zero_variance: bool = False,
                  seed: int = 0) -> Experience:
    """Resize groups and drop the uninformative ones (ISP/DTPO's official code).

    Args:
        group_size: groups larger than this are subsampled to it (official DTPO code: 6);
            None keeps every member.
        drop_zero_variance: leave out groups whose rewards are all equal: their advantages
            are 0, but they would still dilute a token mean.
        seed: the subsampling's random seed (the module passes the iteration).

    >>> ts = [Trajectory(sample_id=str(i), prompt=[], reward=r) for i, r in enumerate([1.0, 0.0, 0.5, 0.5])]
    >>> out = filter_groups(Experience(ts, [0, 0, 1, 1], [1] * 4, []), drop_zero_variance=True)
    >>> [t.sample_id for t in out.samples], out.index
    (['0', '1'], [0, 0])
    """
    if group_size is None and not drop_zero_variance:
        return exp
    rng = random.Random(seed)
    members: dict[int, list[int]] = {}
    for pos, g in enumerate(exp.index):
        members.setdefault(g, []).append(pos)
    keep: list[int] = []
    for group in members.values():
        if group_size is not None and len(group) > group_size:
            group = rng.sample(group, group_size)
        values = [exp.samples[i].reward for i in group]
        if drop_zero_variance and max(values) - min(values) < 1e-9:
            continue
        keep.extend(group)
    return exp.select(keep)


def _score(t: Trajectory, out: RewardOutput) -> None:
    t.reward, t.turn_rewards, t.reward_components = out.total, out.turn or [], out.components
    t.global_reward = out.global_reward


def component_logs(trajs: Sequence[Trajectory]) -> dict[str, float]:
    """``reward/<component>`` means over trajectories, and ``reward/global`` (the
    trajectory-level part) where the reward gives it."""
    comps: dict[str, list[float]] = {}
    for t in trajs:
        for k, v in t.reward_components.items():
            comps.setdefault(k, []).append(v)
        if t.global_reward is not None:
            comps.setdefault("global", []).append(t.global_reward)
    return {f"reward/{k}": sum(v) / len(v) for k, v in comps.items()}


def distinct_final_calls(trajs: Sequence[Trajectory], index: Sequence[int]) -> float:
    """Mean over questions of the number of distinct last tool calls among a question's
    rollouts — KnowCoder-A1's trajectory diversity (distinct final SPARQL queries, §5.4.1).

    >>> from kgreason.types import Action, Turn
    >>> def t(q): return Trajectory(sample_id="q", prompt=[], turns=[Turn(text="", actions=[Action("f", raw=q)])])
    >>> distinct_final_calls([t("a"), t("b"), t("a"), t("c")], [0, 0, 1, 1])
    2.0
    """
    finals: dict[int, set[str]] = {}
    for t, g in zip(trajs, index, strict=True):
        last = next((a.raw for turn in reversed(t.turns) for a in reversed(turn.actions)), None)
        if last is not None:
            finals.setdefault(g, set()).add(last)
    groups = set(index)
    return sum(len(finals.get(g, ())) for g in groups) / max(1, len(groups))


#: what :class:`LinearExperience` does with an episode the response budget ended
OVERLONG = ("keep", "mask")


@declare(rollout="linear")
class LinearExperience:
    """N independent multi-turn episodes per question, grouped by question.

    Args:
        rollout: a lock-step :class:`~kgreason.rollout.MultiTurnRollout`.
        reward: any reward function (called with ``step=`` the iteration).
        n_rollouts: episodes per question (the group size N).
        overlong: what becomes of an episode the response budget ended before its answer
            (``model.max_response_tokens``): ``"keep"`` trains on it with its reward (none
            of the five papers filters them), ``"mask"`` keeps it in its group's baseline
            but out of the loss (DAPO's overlong filtering, Yu et al. 2025).
    """

    def __init__(self, rollout: MultiTurnRollout, reward: RewardFn, n_rollouts: int = 4, overlong: str = "keep"):
        if n_rollouts < 1:
            raise ValueError(f"n_rollouts must be at least 1, got {n_rollouts}")
        if overlong not in OVERLONG:
            raise ValueError(f"overlong={overlong!r}: choose one of {', '.join(OVERLONG)}")
        self.rollout = rollout
        self.reward = reward
        self.n_rollouts = n_rollouts
        self.overlong = overlong

    @classmethod
    def build(cls, engine: Engine, policy: Policy, reward: RewardFn, max_new_tokens: int = 256,
              n_rollouts: int = 4, max_response_tokens: int | None = None, overlong: str = "keep") -> LinearExperience:
        """A lock-step rollout on ``engine`` with ``policy``'s tokenizer and chat template."""
        return cls(MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new_tokens, max_response_tokens),
                   reward, n_rollouts, overlong)

    def collect(self, batch: Sequence[KBQASample], make_env: Callable[[], KGEnv], step: int) -> Experience:
        samples = [s for s in batch for _ in range(self.n_rollouts)]
        index = [i for i in range(len(batch)) for _ in range(self.n_rollouts)]
        envs = [make_env() for _ in samples]
        trajs, stats = self.rollout.run(envs, samples)
        for t, s, env in zip(trajs, samples, envs, strict=True):
            # space=: format rewards ask the action space for its grammar; kb=: step rewards re-read results
            _score(t, self.reward(t, s, step=step, space=env.action_space, kb=env.kb))
        n = len(trajs)
        if self.overlong == "mask":  # rewarded (the group's baseline sees them), not trained on
            for t in trajs:
                if t.meta.get("truncated"):
                    t.loss_mask = [0] * len(t.loss_mask)
        f1s = [precision_recall_f1(t.answer, s.answers)[2] for t, s in zip(trajs, samples, strict=True)]
        logs = {
            "train/reward": sum(t.reward for t in trajs) / n,
            "train/f1": sum(f1s) / n,
            "train/turns": sum(len(t.turns) for t in trajs) / n,
            "train/response_tokens": stats.generated_tokens / n,
            "train/invalid_calls": stats.invalid_calls / n,
            "train/kb_calls": stats.kb_calls / n,
            "train/gen_tokens_per_s": stats.tokens_per_s,
            "train/out_of_budget": stats.truncated / n,
            "train/distinct_final_calls": distinct_final_calls(trajs, index),
            **component_logs(trajs),
        }
        return Experience(trajs, index, [len(t.turns) for t in trajs], [t.episode() for t in trajs], logs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n_rollouts={self.n_rollouts}, reward={self.reward!r})"


def node_rewards(tree: Tree, reward: RewardFn, **ctx: Any) -> dict[int, RewardOutput]:
    """The reward of every non-root node of ``tree`` (called with ``tree=`` and ``node=``)."""
    return {n.id: reward(step_sample(tree, n.id), tree.sample, tree=tree, node=n.id, **ctx)
            for n in tree.nodes[1:]}


def step_sample(tree: Tree, node_id: int) -> Trajectory:
    """A node as a one-step training sample: its parent's context (mask 0), its action (mask 1)."""
    n = tree.nodes[node_id]
    t = Trajectory(sample_id=tree.sample.id, prompt=tree.prompt)
    t.start_tokens()
    t.append_tokens(n.context_ids, policy=False, turn=-1)
    t.append_tokens(n.gen_ids, policy=True, turn=0, logprobs=n.gen_logprobs)
    t.answer = list(n.answer)  # an answering node's answer, so outcome rewards can score it
    return t


@declare(rollout="tree")
class TreeExperience:
    """Tree rollouts with step-level groups (ISP/DTPO, paper 002 §4.3).

    A tree's training samples are its nodes; the children of one expanded parent form a
    group, so no multi-turn masking is needed inside a group (as in the official code).

    Args:
        rollout: a :class:`~kgreason.rollout.TreeRollout` (K branches per active node).
        reward: a node reward (e.g. ``reward=isp_dtpo``: 0.1·format + 0.6·progress +
            0.3·gated outcome), called with ``tree=``, ``node=`` and ``step=``.
    """

    def __init__(self, rollout: TreeRollout, reward: RewardFn):
        self.rollout = rollout
        self.reward = reward

    @classmethod
    def build(cls, engine: Engine, policy: Policy, reward: RewardFn, max_new_tokens: int = 256,
              n_rollouts: int = 8, prune: bool = True, dedup_failures: bool = False,
              max_active: int | None = None, max_response_tokens: int | None = None) -> TreeExperience:
        """A tree rollout with K = ``n_rollouts`` branches per node (see
        :class:`~kgreason.rollout.TreeRollout` for the options); depth = the env's turn limit
        (``max_response_tokens`` is a linear rollout's budget: a tree is bounded by depth)."""
        return cls(TreeRollout(engine, policy.tokenizer, policy.chat_ids, k=n_rollouts, max_new_tokens=max_new_tokens,
                               prune=prune, dedup_failures=dedup_failures, max_active=max_active), reward)

    def collect(self, batch: Sequence[KBQASample], make_env: Callable[[], KGEnv], step: int) -> Experience:
        envs = [make_env() for _ in batch]
        trees, stats = self.rollout.run(envs, batch)
        samples: list[Trajectory] = []
        index: list[int] = []
        gid = 0
        for tree, env in zip(trees, envs, strict=True):
            rewards = node_rewards(tree, self.reward, step=step, space=env.action_space)
            for _, children in tree.groups().items():
                for c in children:
                    t = step_sample(tree, c.id)
                    _score(t, rewards[c.id])
                    samples.append(t)
                    index.append(gid)
                gid += 1
        episodes = []
        best: dict[int, float] = {}
        leaves = [(k, tree, leaf) for k, tree in enumerate(trees) for leaf in tree.leaves()]
        for k, tree, leaf in leaves:
            t = tree.trajectory(leaf.id)
            t.reward = precision_recall_f1(t.answer, tree.sample.answers)[2] if leaf.answered else 0.0
            best[k] = max(best.get(k, 0.0), t.reward)
            episodes.append(t.episode())
        logs: dict[str, float] = {
            "train/f1": sum(e.reward for e in episodes) / max(1, len(episodes)),
            "train/best_f1": sum(best.get(k, 0.0) for k in range(len(trees))) / len(trees),
            "train/reward": sum(s.reward for s in samples) / max(1, len(samples)),
            "train/step_samples": float(len(samples)),
            "train/tree_nodes": sum(len(t.nodes) - 1 for t in trees) / len(trees),
            "train/effective_branches": stats.effective_branches,
            "train/pruning_rate": stats.pruning_rate,
            "train/kb_cache_hits": float(stats.cache_hits),
            "train/response_tokens": stats.generated_tokens / max(1, stats.llm_calls),
            "train/invalid_calls": stats.failures / max(1, stats.branches),
            "train/turns": sum(len(tree.path(leaf.id)) for _, tree, leaf in leaves) / max(1, len(leaves)),
            **component_logs(samples),
        }
        return Experience(samples, index, [1] * len(samples), episodes, logs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(k={self.rollout.k}, reward={self.reward!r})"
