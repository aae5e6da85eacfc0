"""ISP/DTPO rewards: strict format, distance-guided progress, max-aggregated node rewards.

Paper 002 §4.3.2, appendix F.7–F.9 and Algorithm 2. A node's reward is

    R(node) = w1·format + w2·progress + [format ≥ 0 and progress ≥ 0]·w3·max_τ F1(τ)

where τ ranges over the complete (answered) trajectories through the node. Progress
compares a closeness score of the node's result with the previous step's:

* ``mode="paper"`` — the score is minus the KB distance between the result set and the
  answer set (0 when they are equal; 1 for a candidate set that contains the answer, i.e.
  a constraint away — F.8; else the bounded-BFS hop count);
* ``mode="code"`` — the official code's score: 1 if the result's F1 ≥ 0.9, 0.5 + 0.5·F1 if
  F1 > 0, else (3 − d)/3.

Progress is +1 when the score beats the previous node's, 0 when it does not, −1 for an
error, an empty result, an unparsable step, a repeated query or a node never seen.
COUNT queries are scored on their un-counted entity set.

The RQ1 baseline (§5.3, Figure 5) scores linear trajectories instead: ``dtpo_trajectory``
averages the same node reward over the steps of one trajectory (its outcome is that
trajectory's own F1), and GRPO groups N independent trajectories per question.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kgreason.errors import KBError, RewardError
from kgreason.eval.metrics import precision_recall_f1
from kgreason.kb.base import KnowledgeBase
from kgreason.methods.isp_dtpo.grammar import one_think_one_command
from kgreason.rewards.base import RewardOutput, message_format, register
from kgreason.rewards.outcome import fbeta_score
from kgreason.types import Entity, KBQASample, NodePatterns, QueryResult, Trajectory

_COUNT = re.compile(r"SELECT\s+\(\s*COUNT\s*\(\s*(DISTINCT\s+)?(\?\w+|\*)\s*\)\s*AS\s+\?\w+\s*\)", re.I)
_WS = re.compile(r"\s+")


def isp_format(text: str) -> float:
    """Strict protocol check: exactly one ``<think>`` then exactly one command → 1, else −1.

    >>> isp_format("<think>find the node</think><node>m.0abc</node>")
    1.0
    >>> isp_format("<think>a</think><node>m.1</node><sparql>SELECT ?x WHERE {}</sparql>")
    -1.0
    >>> isp_format("<node>m.1</node>")
    -1.0
    """
    return 1.0 if one_think_one_command(text) else -1.0


def uncount(sparql: str) -> str | None:
    """The entity query under a ``SELECT (COUNT(...) AS ?c)``, or None if it does not count.

    >>> uncount("SELECT (COUNT(DISTINCT ?x) AS ?n) WHERE { ?x <p> <o> . }")
    'SELECT DISTINCT ?x WHERE { ?x <p> <o> . }'
    """
    m = _COUNT.search(sparql)
    if not m:
        return None
    var = m.group(2) if m.group(2) != "*" else "*"
    return sparql[: m.start()] + f"SELECT DISTINCT {var}" + sparql[m.end():]


def normalize_query(sparql: str) -> str:
    return _WS.sub(" ", sparql).strip().lower()


def _neighbours(kb: KnowledgeBase, nodes: Sequence[str], limit: int) -> tuple[set[str], set[str]]:
    """(all neighbour values, the entity ones) of ``nodes`` over non-schema edges."""
    refs = " ".join(kb.schema.entity_ref(n) for n in nodes)
    skip = [*kb.schema.hidden, *([kb.schema.type_relation] if kb.schema.type_relation else [])]
    filt = f"FILTER(?p NOT IN ({', '.join(kb.schema.relation_ref(r) for r in skip)}))" if skip else ""
    q = (f"SELECT DISTINCT ?n WHERE {{ VALUES ?s {{ {refs} }} {{ ?s ?p ?n }} UNION {{ ?n ?p ?s }} {filt} }} "
         f"LIMIT {limit}")
    terms = [row["n"] for row in kb.select(q, max_rows=limit)]
    return {t.value for t in terms}, {t.value for t in terms if t.is_entity}


def kb_distance(kb: KnowledgeBase, sources: Iterable[str], targets: Iterable[str], max_hops: int = 3,
                max_frontier: int = 2000) -> int | None:
    """Fewest undirected hops from any source to any target (None beyond ``max_hops``).

    Type and name edges are not walked (they would put every pair of films two hops
    apart). Literal targets are reached through the entity that holds them.
    """
    src, tgt = set(sources), set(targets)
    if src & tgt:
        return 0
    seen, frontier = set(src), sorted(src)
    for hop in range(1, max_hops + 1):
        if not frontier:
            return None
        values, entities = _neighbours(kb, frontier[:max_frontier], limit=max_frontier * 50)
        if values & tgt:
            return hop
        frontier = sorted(entities - seen)
        seen |= values
    return None


@dataclass
class ProgressJudge:
    """Scores the steps of a path (Algorithm 2) against one question's answer set.

    Args:
        kb: the KB (wrap it in :class:`~kgreason.kb.CachedKB` to share BFS queries).
        sample: the question; ``answers`` are the targets, or the un-counted gold SPARQL's
            entities for COUNT questions.
        mode: ``"paper"`` (distance) or ``"code"`` (the official F1/distance score).
        max_hops: BFS bound (the code's score uses 3).
    """

    kb: KnowledgeBase
    sample: KBQASample
    mode: str = "paper"
    max_hops: int = 3

    def __post_init__(self) -> None:
        if self.mode not in ("paper", "code"):
            raise ValueError("mode must be 'paper' or 'code'")
        self.targets = self._targets()
        self._scores: dict[tuple[str, ...], float] = {}

    def _targets(self) -> set[str]:
        gold = {a.id for a in self.sample.answers}
        base = uncount(self.sample.sparql) if self.sample.sparql else None
        if base:
            try:
                return {v.value for row in self.kb.select(base) for v in row.values()} or gold
            except KBError:
                return gold
        return gold

    def distance(self, values: Iterable[str]) -> float:
        vals = set(values)
        if vals == self.targets:
            return 0.0
        if vals & self.targets:
            return 1.0  # the candidate set: one constraint away from the answer (F.8)
        d = kb_distance(self.kb, vals, self.targets, self.max_hops)
        return math.inf if d is None else float(d)

    def score(self, values: Sequence[str]) -> float:
        """Closeness of a result set to the answer set (higher is closer)."""
        key = tuple(sorted(set(values)))
        if key not in self._scores:
            d = self.distance(key)
            if self.mode == "paper":
                self._scores[key] = -d
            else:
                f1 = precision_recall_f1(list(key), sorted(self.targets))[2]
                if f1 >= 0.9:
                    s = 1.0
                elif f1 > 0:
                    s = 0.5 + 0.5 * f1
                else:
                    s = max(0.0, (self.max_hops - d) / self.max_hops) if math.isfinite(d) else 0.0
                self._scores[key] = s
        return self._scores[key]

    def progress(self, steps: Sequence[dict]) -> list[float]:
        """Progress of each step of a path.

        Each step is a dict with ``kind`` (``node`` / ``sparql`` / ``answer`` / ``invalid``),
        ``error``, and for successful steps ``values`` (result values, node ids) and
        ``query`` (the executed SPARQL).
        """
        topic = [e.id for e in self.sample.topic_entities]
        known: dict[str, float] = {t: self.score([t]) for t in topic}
        prev = -math.inf if self.mode == "paper" else 0.0
        issued: set[str] = set()
        out = []
        for st in steps:
            kind, err = st.get("kind"), st.get("error")
            if kind == "answer":
                out.append(0.0)
                continue
            if kind == "invalid" or err is not None:
                out.append(-1.0)
                continue
            if kind == "node":
                nodes = st.get("values") or []
                if nodes and all(n in known for n in nodes):
                    prev = max(known[n] for n in nodes)
                    out.append(0.0)
                else:
                    out.append(-1.0)
                continue
            q = normalize_query(st.get("query", ""))
            if q in issued:
                out.append(-1.0)
                continue
            issued.add(q)
            values = st.get("values") or []
            base = uncount(st.get("query", ""))
            if base:
                try:
                    values = [v.value for row in self.kb.select(base) for v in row.values()]
                except KBError:
                    out.append(-1.0)
                    continue
            s = self.score(values)
            for v in values:
                known[v] = max(known.get(v, -math.inf), s)
            out.append(1.0 if s > prev else 0.0)
            prev = s
        return out


def outcome_f1(answer: Sequence[Entity | str], sample: KBQASample) -> float:
    """F1 against the gold answers (best over ``meta["answer_variants"]``)."""
    golds = [sample.answers, *sample.meta.get("answer_variants", [])]
    return max(fbeta_score(answer, g) for g in golds)


def step_view(node) -> dict:
    """What :meth:`ProgressJudge.progress` reads from a tree node's payloads."""
    view = {"kind": node.kind, "error": node.error}
    for p in node.payloads:
        if isinstance(p, QueryResult):
            view.update(values=list(p.values), query=p.query)
        elif isinstance(p, NodePatterns):
            view.update(values=list(p.nodes))
    return view


def _tree_ctx(name: str, ctx: dict[str, Any]) -> tuple[Any, Any]:
    tree, node = ctx.get("tree"), ctx.get("node")
    if tree is None or node is None:
        raise RewardError(f"reward {name!r} scores tree nodes: it needs a tree rollout (rollout=tree), "
                          "which passes tree= and node= to the reward")
    return tree, tree.nodes[node]


def _judge(tree, mode: str, max_hops: int) -> ProgressJudge:
    """One judge per tree and setting: its score cache is shared by all nodes of the tree."""
    key = ("progress_judge", mode, max_hops)
    if key not in tree.memo:
        tree.memo[key] = ProgressJudge(tree.kb, tree.sample, mode=mode, max_hops=max_hops)
    return tree.memo[key]


def _best_outcomes(tree) -> dict[int, float]:
    """Node id → max answer F1 over the complete trajectories through it (−inf: none)."""
    if "best_outcome" in tree.memo:
        return tree.memo["best_outcome"]
    best: dict[int, float] = {}
    for n in reversed(tree.nodes):  # children are appended after their parents
        own = outcome_f1(n.answer, tree.sample) if n.answered else -math.inf
        best[n.id] = max([own, *(best[c] for c in n.children)])
    tree.memo["best_outcome"] = best
    return best


@register("isp_format", action_space="isp_dtpo")
def isp_format_reward(trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput:
    """ISP's strict ±1 protocol check (F.7): of a tree node's message, else the mean over turns.

    >>> from kgreason.types import Turn
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text="<think>a</think><node>m.1</node>")])
    >>> isp_format_reward(t, None).total
    1.0
    """
    well_formed = message_format(ctx, one_think_one_command)

    def score(text: str) -> float:
        return 1.0 if well_formed(text) else -1.0

    if ctx.get("tree") is not None:
        _, node = _tree_ctx("isp_format", ctx)
        return RewardOutput(score(node.text))
    turns = trajectory.turns
    return RewardOutput(sum(score(t.text) for t in turns) / len(turns) if turns else -1.0)


@register("dtpo_progress", rollout="tree")
def dtpo_progress_reward(trajectory: Trajectory, sample: KBQASample, mode: str = "paper", max_hops: int = 3,
                         **ctx: Any) -> RewardOutput:
    """Distance-guided progress of a tree node (paper 002 Algorithm 2): +1 closer than the
    previous step, 0 not closer, −1 for errors, empty or repeated queries.

    Args:
        mode: ``"paper"`` (KB distance) or ``"code"`` (the official F1/distance score).
        max_hops: bound of the breadth-first distance.
    """
    tree, node = _tree_ctx("dtpo_progress", ctx)
    judge = _judge(tree, mode, max_hops)
    return RewardOutput(judge.progress([step_view(p) for p in tree.path(node.id)])[-1])


@register("dtpo_outcome", rollout="tree")
def dtpo_outcome_reward(trajectory: Trajectory, sample: KBQASample, **ctx: Any) -> RewardOutput:
    """Max answer F1 over the complete trajectories through a tree node (§4.3.2); 0 when
    no trajectory through it answers. Gate it on format and progress (both ≥ 0) in a
    :class:`~kgreason.rewards.CompositeReward`, as the paper does."""
    tree, node = _tree_ctx("dtpo_outcome", ctx)
    oc = _best_outcomes(tree)[node.id]
    return RewardOutput(oc if math.isfinite(oc) else 0.0)


def linear_step_views(trajectory: Trajectory, space: Any, kb: KnowledgeBase) -> list[dict]:
    """:func:`step_view` of each turn of a linear trajectory, for :class:`ProgressJudge`.

    A turn keeps its actions, error and entity ids but not its query results, so a
    ``<sparql>`` step's values are read again from the KB (the query as the env ran it,
    prefixes expanded; a deterministic KB answers as it did).
    """
    views = []
    for turn in trajectory.turns:
        if turn.is_answer:
            views.append({"kind": "answer", "error": turn.error})
            continue
        if not turn.actions:
            views.append({"kind": "invalid", "error": turn.error or "invalid"})
            continue
        action = turn.actions[-1]
        view: dict[str, Any] = {"kind": action.name, "error": turn.error}
        if turn.error is None and action.name == "node":
            view["values"] = list(turn.entities)
        elif turn.error is None:
            query = space.expand_query(action.args[0], kb)
            try:
                view.update(query=query, values=sorted({v.value for row in kb.select(query) for v in row.values()}))
            except KBError as e:
                view["error"] = type(e).__name__
        views.append(view)
    return views


@register("dtpo_trajectory", action_space="isp_dtpo", rollout="linear")
def dtpo_trajectory_reward(trajectory: Trajectory, sample: KBQASample, w_format: float = 0.1,
                           w_progress: float = 0.6, w_outcome: float = 0.3, mode: str = "paper", max_hops: int = 3,
                           **ctx: Any) -> RewardOutput:
    """ISP/DTPO's RQ1 trajectory-level baseline (§5.3): the mean over a linear trajectory's
    steps of the node reward ``w1·format + w2·progress + [format ≥ 0 and progress ≥ 0]·w3·F1``,
    with the trajectory's own answer F1 as every step's outcome (the default weights are
    the tree reward's, H.2).

    Needs the env's action space and KB (``space=``, ``kb=``), which linear rollouts pass.
    """
    space, kb = ctx.get("space"), ctx.get("kb")
    if space is None or kb is None or not hasattr(space, "expand_query"):
        raise RewardError("reward 'dtpo_trajectory' scores ISP/DTPO steps: it needs the isp_dtpo action space and "
                          "the KB (space=, kb=), which rollout=linear passes")
    if not trajectory.turns:
        return RewardOutput(0.0)
    well_formed = message_format(ctx, one_think_one_command)
    fmt = [1.0 if well_formed(t.text) else -1.0 for t in trajectory.turns]
    progress = ProgressJudge(kb, sample, mode=mode, max_hops=max_hops).progress(linear_step_views(trajectory, space, kb))
    outcome = outcome_f1(trajectory.answer, sample) if trajectory.answer_text is not None else 0.0
    nodes = [w_format * f + w_progress * p + (w_outcome * outcome if f >= 0 and p >= 0 else 0.0)
             for f, p in zip(fmt, progress, strict=True)]
    return RewardOutput(sum(nodes) / len(nodes), components={"format": sum(fmt) / len(fmt),
                                                             "progress": sum(progress) / len(progress),
                                                             "outcome": outcome})
