"""Evaluate a policy in KG environments (design §10, docs/design.md).

Greedy decoding by default (KG-R1 evaluates at temperature 0); ``n_runs > 1`` samples
several runs and takes the union of their answer sets (KG-R1's N-run union). Sampled runs
are also scored one by one: ``pass_hit1`` / ``pass_f1`` are the best run's (pass@N, the
most a policy's own samples can reach: what group-relative RL can reinforce) and
``mean_f1`` the runs' mean (the sampled policy's expected F1).
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kgreason.envs.base import KGEnv
from kgreason.eval.metrics import hit_at_1, matches, precision_recall_f1
from kgreason.rollout.multiturn import MultiTurnRollout
from kgreason.types import Entity, KBQASample, Trajectory


@dataclass
class EvalReport:
    overall: dict[str, float]
    by_level: dict[str, dict[str, float]] = field(default_factory=dict)
    by_qtype: dict[str, dict[str, float]] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: by the question's hop count (MetaQA 1/2/3-hop); empty when no question has one
    by_hops: dict[str, dict[str, float]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> EvalReport:
        """The report of per-question rows (as written to ``eval_<tag>.jsonl``)."""
        by_level, by_qtype, by_hops = defaultdict(list), defaultdict(list), defaultdict(list)
        for r in rows:
            by_level[str(r["level"])].append(r)
            by_qtype[str(r["qtype"])].append(r)
            if r["hops"] is not None:
                by_hops[str(r["hops"])].append(r)
        return cls(_mean(rows), {k: _mean(v) for k, v in by_level.items()},
                   {k: _mean(v) for k, v in by_qtype.items()}, list(rows),
                   {k: _mean(v) for k, v in by_hops.items()})

    def markdown(self, title: str = "") -> str:
        keys = ["n", *ROW_KEYS, *(k for k in RUN_KEYS if k in self.overall)]
        lines = [f"### {title}" if title else "", "| group | " + " | ".join(keys) + " |",
                 "|" + "---|" * (len(keys) + 1)]

        def row(name: str, m: dict[str, float]) -> str:
            return f"| {name} | " + " | ".join(f"{m.get(k, 0):.3f}" if k != "n" else str(int(m.get(k, 0))) for k in keys) + " |"

        lines.append(row("all", self.overall))
        lines += [row(f"level: {k}", v) for k, v in sorted(self.by_level.items())]
        lines += [row(f"type: {k}", v) for k, v in sorted(self.by_qtype.items())]
        lines += [row(f"hops: {k}", v) for k, v in sorted(self.by_hops.items())]
        return "\n".join(x for x in lines if x is not None)


def _union(answers: Sequence[Sequence[Entity]]) -> list[Entity]:
    out: list[Entity] = []
    for run in answers:
        for a in run:
            if not any(matches(a, b) for b in out):
                out.append(a)
    return out


def _kinds(kind: str) -> dict[str, Any]:
    return {"outcome": kind, "direct": float(kind == "direct"), "recovered": float(kind == "recovered")}


def best_variant(pred: Sequence[Entity], gold: Sequence[Entity],
                 variants: Sequence[Sequence[Entity]] = ()) -> Sequence[Entity]:
    """The gold answer set ``pred`` scores best against: ``gold`` or one of its
    ``variants`` (WebQSP's parses, each with its own answers; the official evaluation takes
    the parse of highest F1). Ties keep the first.

    >>> a, b = Entity("m.1", "A"), Entity("m.2", "B")
    >>> [e.id for e in best_variant([a], [a, b], [[a]])]
    ['m.1']
    """
    best, best_f1 = gold, precision_recall_f1(pred, gold)[2]
    for v in variants:
        f = precision_recall_f1(pred, v)[2]
        if f > best_f1:
            best, best_f1 = v, f
    return best


def score(pred: Sequence[Entity], gold: Sequence[Entity], rng: random.Random,
          variants: Sequence[Sequence[Entity]] = ()) -> dict[str, float]:
    """One question's scores, every one against the gold variant of highest F1
    (:func:`best_variant`; a question with one gold set has no variants).

    ``hit1`` is the first predicted answer's hit (Hit@1 as most KBQA work reads it);
    ``hit`` is 1 when any predicted answer is a gold one: ISP/DTPO's Hit (paper 002 §5.1,
    "at least one predicted answer appears in the gold answer set") and KG-R1's Hit@1
    (paper 004 §4.1, "the gold answer appears in the single search"), which on an N-run
    union is the paper's N-run Hit@1.

    >>> a, b = Entity("m.1", "A"), Entity("m.2", "B")
    >>> s = score([b, a], [a], random.Random(0))
    >>> s["hit1"], s["hit"], s["em"]
    (0.0, 1.0, 0.0)
    >>> score([a], [a, b], random.Random(0), variants=[[a]])["em"]  # one parse answers A alone
    1.0
    """
    gold = best_variant(pred, gold, variants)
    p, r, f = precision_recall_f1(pred, gold)
    return {"em": float(p == 1.0 and r == 1.0 and bool(pred)), "f1": f, "precision": p, "recall": r,
            "hit1": hit_at_1(pred, gold), "hit": float(any(matches(x, g) for x in pred for g in gold)),
            "rhit1": float(bool(pred) and any(matches(rng.choice(list(pred)), g) for g in gold))}


def outcome_kind(trajectory: Trajectory, gold: Sequence[Entity]) -> str:
    """KnowCoder-A1's robustness categories (paper 003 §5.4.1): ``"direct"`` — an answer
    hits a gold answer and no step before it failed; ``"recovered"`` — it hits after an
    error or an empty result; ``"wrong"`` — no answer hits.

    >>> from kgreason.types import Turn
    >>> t = Trajectory(sample_id="q", prompt=[], turns=[Turn(text="", error="KC_EMPTY"), Turn(text="")],
    ...                answer=[Entity("m.1", "A")])
    >>> outcome_kind(t, [Entity("m.1", "A")]), outcome_kind(t, [Entity("m.2", "B")])
    ('recovered', 'wrong')
    """
    if not any(matches(a, g) for a in trajectory.answer for g in gold):
        return "wrong"
    failed = any(t.error for t in trajectory.turns[:-1])
    return "recovered" if failed else "direct"


#: the per-question numbers every evaluation row holds, averaged by :func:`_mean`
ROW_KEYS = ("em", "f1", "precision", "recall", "hit1", "hit", "rhit1", "direct", "recovered", "gen_tokens", "llm_calls",
            "kb_calls", "latency_s")
#: per-run scores of a sampled evaluation (``n_runs > 1``): :func:`run_scores`
RUN_KEYS = ("pass_hit1", "pass_f1", "mean_f1")


def _mean(rows: list[dict[str, Any]]) -> dict[str, float]:
    keys = [*ROW_KEYS, *(k for k in RUN_KEYS if rows and all(k in r for r in rows))]
    n = len(rows)
    out = {k: sum(r[k] for r in rows) / n for k in keys} if n else {k: 0.0 for k in keys}
    out["n"] = n
    return out


def run_scores(answers: Sequence[Sequence[Entity]], gold: Sequence[Entity]) -> dict[str, float]:
    """Each run's answer scored on its own: the best run's Hit@1 and F1 (pass@N) and the mean F1.

    >>> a, b = Entity("m.1", "A"), Entity("m.2", "B")
    >>> run_scores([[b], [a, b], []], [a])
    {'pass_hit1': 1.0, 'pass_f1': 0.6666666666666666, 'mean_f1': 0.2222222222222222}
    """
    f1s = [precision_recall_f1(run, gold)[2] for run in answers]
    return {"pass_hit1": max(hit_at_1(run, gold) for run in answers), "pass_f1": max(f1s),
            "mean_f1": sum(f1s) / len(f1s)}


def turn_budget(make_env: Callable[[], KGEnv], samples: Sequence[KBQASample], n_runs: int = 1) -> int:
    """Turns :func:`evaluate` may play at most: its progress total (questions × runs × H)."""
    return len(samples) * n_runs * make_env().max_turns


#: called with each lock-step batch's rows and trajectories as soon as it is scored
ChunkSink = Callable[[list[dict[str, Any]], list[Trajectory]], None]


def evaluate(rollout: MultiTurnRollout, make_env: Callable[[], KGEnv], samples: Sequence[KBQASample],
             batch_size: int = 8, n_runs: int = 1, seed: int = 0,
             progress: Callable[[int], None] | None = None,
             on_chunk: ChunkSink | None = None) -> tuple[EvalReport, list[Trajectory]]:
    """Run the policy on ``samples`` and score it; returns the report and all trajectories.

    Args:
        rollout: the lock-step rollout (its engine decodes).
        make_env: builds a fresh environment per episode.
        samples: the questions.
        batch_size: questions decoded together.
        n_runs: runs per question (> 1: sampled, answers united; each run also scored
            alone, :func:`run_scores`).
        seed: for the random tie-break of RHit@1, drawn per question (``seed`` and its
            id), so a row does not depend on which questions were evaluated with it.
        progress: called with episode turns as they are played (see
            :meth:`MultiTurnRollout.run`); the calls add up to :func:`turn_budget`.
        on_chunk: called with each batch's rows and trajectories once it is scored, so a
            long evaluation can write them as it goes (the runner appends and flushes).
    """
    rows, all_trajs = [], []
    for i in range(0, len(samples), batch_size):
        chunk = list(samples[i : i + batch_size])
        runs: list[list[Trajectory]] = []
        t0 = time.perf_counter()
        for _ in range(n_runs):
            trajs, _ = rollout.run([make_env() for _ in chunk], chunk, greedy=n_runs == 1, progress=progress)
            runs.append(trajs)
        chunk_trajs = [t for r in runs for t in r]
        all_trajs += chunk_trajs
        latency = (time.perf_counter() - t0) / len(chunk)
        chunk_rows = []
        for j, s in enumerate(chunk):
            ts = [r[j] for r in runs]
            pred = _union([t.answer for t in ts])
            row = {"id": s.id, "level": s.level, "qtype": s.meta.get("qtype"), "hops": s.hops, "question": s.question,
                   "pred": [a.label for a in pred], "gold": [a.label for a in s.answers],
                   **score(pred, s.answers, random.Random(f"{seed}:{s.id}"), s.meta.get("answer_variants") or ()),
                   # the first run's kind (with N-run union, the union is scored above)
                   **_kinds(outcome_kind(ts[0], s.answers)),
                   **(run_scores([t.answer for t in ts], s.answers) if n_runs > 1 else {}),
                   "gen_tokens": sum(sum(t.loss_mask) for t in ts), "llm_calls": sum(len(t.turns) for t in ts),
                   "kb_calls": sum(x.kb_calls for t in ts for x in t.turns), "latency_s": latency}
            chunk_rows.append(row)
        rows += chunk_rows
        if on_chunk is not None:
            on_chunk(chunk_rows, chunk_trajs)
    return EvalReport.from_rows(rows), all_trajs
