"""Gold-path oracle through the KG-R1 action space: success (F1 = 1) per MetaQA hop and
on the demo set, and the turns it needs.

    python experiments/benchmarks/oracle_kg_r1.py [--n 500] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

from common import SHARED_DATA

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.kb import load_metaqa_kb
from kgreason.methods.kg_r1.oracle import PathOracle, expressible

BUDGETS = (5, 10, 20, 50, 200)


def kb_path_answers(kb, sample) -> set[str]:
    """The path's end set computed straight on the KB (no environment), topic excluded."""
    topic = sample.topic_entities[0].id
    frontier = {topic}
    for step in sample.relation_path:
        rel = step.lstrip("~")
        nxt = set()
        for e in frontier:
            terms = kb.heads(e, rel) if step.startswith("~") else kb.tails(e, rel)
            nxt.update(t.value for t in terms)
        frontier = nxt - {topic}
    return frontier


def run(env, samples, oracle) -> dict:
    turns, ok, consistent = [], [], []
    for s in samples:
        traj = oracle.messages(env, s)
        turns.append(len(traj.turns))
        ok.append(f1(traj.answer, s.answers) == 1.0)
        gold = {a.id for a in s.answers}
        consistent.append(s.meta.get("count") or kb_path_answers(env.kb, s) == gold)
    n_cons = sum(bool(c) for c in consistent)
    res = {"n": len(samples), "success": sum(ok) / max(1, len(ok)),
           "n_consistent": n_cons,
           "success_consistent": sum(o for o, c in zip(ok, consistent, strict=True) if c) / max(1, n_cons),
           "median_turns": statistics.median(turns) if turns else 0,
           "p95_turns": sorted(turns)[int(0.95 * (len(turns) - 1))] if turns else 0}
    for b in BUDGETS:
        res[f"success@H={b}"] = sum(o and t <= b for o, t in zip(ok, turns, strict=True)) / max(1, len(ok))
    return res


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--data", default=str(SHARED_DATA))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    oracle = PathOracle()
    rows = []
    demo = [s for s in load_dataset("demo", split="all") if expressible(s)]
    t = time.time()
    r = run(make_env("kg_r1", load_demo_kb(), max_turns=max(BUDGETS)), demo, oracle)
    rows.append(("demo (expressible)", r, time.time() - t))
    metaqa = Path(args.data) / "metaqa"
    if (metaqa / "kb.txt").exists():
        kb = load_metaqa_kb(metaqa / "kb.txt")
        env = make_env("kg_r1", kb, max_turns=max(BUDGETS))
        for hop in (1, 2, 3):
            samples = load_dataset("metaqa", metaqa, split="dev", hops=hop)
            random.Random(args.seed).shuffle(samples)
            t = time.time()
            rows.append((f"MetaQA {hop}-hop", run(env, samples[: args.n], oracle), time.time() - t))
    else:
        print(f"MetaQA not found under {metaqa}; demo only", file=sys.stderr)
    print(f"| set | n | F1=1 (H={max(BUDGETS)}) | KG-consistent n | F1=1 on them | "
          + " | ".join(f"H={b}" for b in BUDGETS) + " | median turns | p95 turns | seconds |")
    print("|" + "---|" * (8 + len(BUDGETS)))
    for name, r, secs in rows:
        print(f"| {name} | {r['n']} | {r['success']:.3f} | {r['n_consistent']} | {r['success_consistent']:.3f} | "
              + " | ".join(f"{r[f'success@H={b}']:.3f}" for b in BUDGETS)
              + f" | {r['median_turns']} | {r['p95_turns']} | {secs:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
