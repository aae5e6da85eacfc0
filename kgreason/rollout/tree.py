"""Tree rollouts with observation-equivalence pruning (ISP/DTPO, Algorithm 1 and F.1–F.5).

Every active node is expanded by K sampled actions in one batched generation; each
branch forks its parent's environment and executes its action against a KB cache shared
by the whole tree. Successful branches are deduplicated by their observation (one
representative per distinct normalised result); failures are kept as finished negative
leaves; answers and the depth limit end a branch.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgreason.envs.base import KGEnv
from kgreason.envs.payloads import Payload
from kgreason.kb.cache import CachedKB
from kgreason.rollout.engine import Engine
from kgreason.types import Entity, KBQASample, Trajectory


@dataclass
class TreeNode:
    """One reasoning triplet (thought+command, observation) and its place in the tree.

    ``context_ids`` are the tokens the policy saw before writing this node (the parent's
    full context); ``gen_ids`` are its own tokens (the only trained ones).
    """

    id: int
    parent: int | None
    depth: int
    text: str = ""
    gen_ids: list[int] = field(default_factory=list)
    #: the sampler's log-prob of each of ``gen_ids`` (None: the engine gave none)
    gen_logprobs: list[float] | None = None
    context_ids: list[int] = field(default_factory=list)
    observation: str = ""
    obs_ids: list[int] = field(default_factory=list)
    kind: str = "root"  # root | node | sparql | answer | invalid
    error: str | None = None
    result_key: str | None = None
    payloads: Sequence[Any] = field(default_factory=list)
    answer: list[Entity] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    finished: bool = False  # answered, failed or at the depth limit
    env: KGEnv | None = field(default=None, repr=False)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def answered(self) -> bool:
        return self.kind == "answer"


@dataclass
class Tree:
    """The reasoning tree of one question (node 0 is the root: the question alone)."""

    sample: KBQASample
    prompt: list[dict[str, str]]
    nodes: list[TreeNode]
    #: the query cache every branch of this tree used (rewards reuse it)
    kb: Any = None
    #: per-tree scratch space for rewards (e.g. a progress judge and its score cache)
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)

    def path(self, node_id: int) -> list[TreeNode]:
        """Nodes from the first action to ``node_id`` (root excluded)."""
        out = []
        n: TreeNode | None = self.nodes[node_id]
        while n is not None and n.parent is not None:
            out.append(n)
            n = self.nodes[n.parent]
        return out[::-1]

    def leaves(self) -> list[TreeNode]:
        return [n for n in self.nodes if n.parent is not None and not n.children]

    def groups(self) -> dict[int, list[TreeNode]]:
        """Expanded parent id → its children (DTPO's comparison groups)."""
        return {n.id: [self.nodes[c] for c in n.children] for n in self.nodes if n.children}

    def trajectory(self, leaf_id: int) -> Trajectory:
        """The root-to-leaf episode as a :class:`Trajectory` with token fields."""
        path = self.path(leaf_id)
        t = Trajectory(sample_id=self.sample.id, prompt=self.prompt)
        t.start_tokens()
        if path:
            t.append_tokens(path[0].context_ids, policy=False, turn=-1)
        for k, n in enumerate(path):
            t.append_tokens(n.gen_ids, policy=True, turn=k, logprobs=n.gen_logprobs)
            if n.obs_ids:
                t.append_tokens(n.obs_ids, policy=False, turn=k)
        if path and path[-1].env is not None and path[-1].env.trajectory is not None:
            t.turns = path[-1].env.trajectory.turns
        t.answer = path[-1].answer if path else []
        return t


@dataclass
class TreeStats:
    """Counters of a tree rollout (over all trees of a call)."""

    generated_tokens: int = 0
    llm_calls: int = 0
    expansions: int = 0
    branches: int = 0
    kept: int = 0
    pruned: int = 0
    failures: int = 0
    answers: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    gen_time_s: float = 0.0
    env_time_s: float = 0.0
    by_depth: dict[int, Counter] = field(default_factory=dict)

    @property
    def effective_branches(self) -> float:
        """Children kept per expanded parent (the paper's "Eff. Branches", H.3)."""
        return self.kept / max(1, self.expansions)

    @property
    def pruning_rate(self) -> float:
        return self.pruned / max(1, self.branches)

    def pruning_rate_by_depth(self) -> dict[int, float]:
        return {d: c["pruned"] / max(1, c["branches"]) for d, c in sorted(self.by_depth.items())}


class TreeRollout:
    """K-sampling tree expansion with KG deduplication (ISP/DTPO Algorithm 1).

    Args:
        engine: batched generation (``HFEngine`` / ``VLLMEngine``).
        tokenizer: the policy's tokenizer (observations are tokenised with it).
        chat_ids: messages → prompt token ids.
        k: branches sampled per active node (paper: 16).
        max_depth: interaction limit (paper: 6); None (default) takes the environments'
            ``max_turns``, so the last step must answer.
        max_new_tokens: per step.
        prune: observation-equivalence pruning (off = keep every branch, for ablations).
        dedup_failures: the official code also deduplicates failed and finished branches
            by their output text; the paper keeps every failure (default).
        max_active: cap on nodes expanded per depth and tree (None = no cap).
    """

    def __init__(self, engine: Engine, tokenizer, chat_ids: Callable[[list[dict[str, str]]], list[int]],
                 k: int = 8, max_depth: int | None = None, max_new_tokens: int = 256, prune: bool = True,
                 dedup_failures: bool = False, max_active: int | None = None):
        if k < 1 or (max_depth is not None and max_depth < 1):
            raise ValueError("k and max_depth must be at least 1")
        self.engine = engine
        self.tokenizer = tokenizer
        self.chat_ids = chat_ids
        self.k = k
        self.max_depth = max_depth
        self.max_new_tokens = max_new_tokens
        self.prune = prune
        self.dedup_failures = dedup_failures
        self.max_active = max_active

    def _tok(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []

    def run(self, envs: Sequence[KGEnv], samples: Sequence[KBQASample],
            greedy: bool = False) -> tuple[list[Tree], TreeStats]:
        """Grow one tree per sample (all trees advance together, one generation per depth)."""
        if len(envs) != len(samples):
            raise ValueError("one environment per sample")
        stats = TreeStats()
        trees: list[Tree] = []
        caches: list[CachedKB] = []
        active: list[tuple[Tree, TreeNode]] = []
        for env, s in zip(envs, samples, strict=True):
            # forks share their env's KB: with EnvFactory(cache_kb=True) one query cache per tree
            if isinstance(env.kb, CachedKB):
                caches.append(env.kb)
            prompt = env.reset(s)
            root = TreeNode(id=0, parent=None, depth=0, context_ids=list(self.chat_ids(prompt)), env=env)
            tree = Tree(sample=s, prompt=prompt, nodes=[root], kb=env.kb)
            trees.append(tree)
            active.append((tree, root))
        self.engine.clear_cache()
        try:
            max_depth = self.max_depth or max(e.max_turns for e in envs)
            for depth in range(1, max_depth + 1):
                if not active:
                    break
                prompts, owners = [], []
                for tree, node in active:
                    ctx = node.context_ids + node.gen_ids + node.obs_ids
                    for _ in range(self.k):
                        prompts.append(ctx)
                        owners.append((tree, node))
                stop = sorted({s for _, n in active for s in (n.env.stop_sequences if n.env else ())})
                t0 = time.perf_counter()
                gens = self.engine.generate(prompts, stop=stop, max_new_tokens=self.max_new_tokens, greedy=greedy)
                gen_s = time.perf_counter() - t0
                stats.gen_time_s += gen_s
                stats.llm_calls += len(prompts)
                stats.expansions += len(active)
                by_parent: dict[int, list[Any]] = {}
                for (tree, node), ctx, g in zip(owners, prompts, gens, strict=True):
                    by_parent.setdefault(id(node), [tree, node, ctx, []])[3].append(g)
                nxt: list[tuple[Tree, TreeNode]] = []
                for tree, parent, ctx, group in by_parent.values():
                    nxt.extend(self._expand(tree, parent, ctx, group, depth, max_depth, stats, gen_s))
                    parent.env = None if parent.parent is not None else parent.env  # free forks
                if self.max_active is not None:
                    per_tree: Counter = Counter()
                    capped = []
                    for tree, node in nxt:
                        per_tree[id(tree)] += 1
                        if per_tree[id(tree)] <= self.max_active:
                            capped.append((tree, node))
                        else:
                            node.finished = True
                    nxt = capped
                active = nxt
        finally:
            self.engine.clear_cache()  # the kept KV cache is large and tied to these weights
        for cache in caches:
            stats.cache_hits += cache.hits
            stats.cache_misses += cache.misses
        return trees, stats

    def _expand(self, tree: Tree, parent: TreeNode, ctx: list[int], gens, depth: int, max_depth: int,
                stats: TreeStats, gen_s: float = 0.0) -> list[tuple[Tree, TreeNode]]:
        seen: set[str] = set()
        active = []
        d = stats.by_depth.setdefault(depth, Counter())
        assert parent.env is not None
        for g in gens:
            stats.branches += 1
            d["branches"] += 1
            stats.generated_tokens += len(g.token_ids)
            env = parent.env.fork()
            t0 = time.perf_counter()
            r = env.step(g.text)
            stats.env_time_s += time.perf_counter() - t0
            payloads = r.payloads
            if r.done:
                kind = "answer" if r.answered else "invalid"
            else:
                kind = r.actions[-1].name if r.actions else "invalid"
            error = r.error if not (r.done and r.answered) else None
            if error is None and not r.done:
                keys = [p.result_key for p in payloads if isinstance(p, Payload)]
                key = "|".join(k for k in keys if k) or f"text|{g.text}"
            elif self.dedup_failures or (r.done and error is None):
                key = f"text|{g.text}"  # finished and (optionally) failed: the output text
            else:
                key = None  # failures are always kept (F.2)
            if self.prune and key is not None and key in seen:
                stats.pruned += 1
                d["pruned"] += 1
                continue
            if key is not None:
                seen.add(key)
            node = TreeNode(id=len(tree.nodes), parent=parent.id, depth=depth, text=g.text,
                            gen_ids=list(g.token_ids), gen_logprobs=g.logprobs, context_ids=ctx, observation=r.observation,
                            obs_ids=self._tok(r.observation), kind=kind, error=error, result_key=key,
                            payloads=payloads, env=env)
            if env.trajectory is not None and env.trajectory.turns:
                last = env.trajectory.turns[-1]
                last.n_generated_tokens, last.n_observation_tokens = len(g.token_ids), len(node.obs_ids)
                last.gen_time_s = gen_s
            tree.nodes.append(node)
            parent.children.append(node.id)
            stats.kept += 1
            d["kept"] += 1
            if r.done or error is not None or depth >= max_depth:
                node.finished = True
                if r.done and r.answered:
                    node.answer = list(r.answer)
                    stats.answers += 1
                if error is not None:
                    stats.failures += 1
                    d["failures"] += 1
            else:
                active.append((tree, node))
        return active
