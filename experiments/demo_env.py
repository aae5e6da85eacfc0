"""The environment demo (`make demo` until the training job lands): the demo KG behind
embedded Oxigraph, the KG-R1 action space, and the gold-path oracle playing episodes.

    python experiments/demo_env.py [--split dev] [--show 3]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict

from tqdm import tqdm

from kgreason.data import load_dataset, load_demo_kb
from kgreason.data.demo.kg import build_demo_kg
from kgreason.envs import make_env
from kgreason.eval import f1, hit_at_1
from kgreason.methods.kg_r1.oracle import PathOracle, expressible


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--show", type=int, default=3)
    ap.add_argument("--max-turns", type=int, default=10)
    args = ap.parse_args()

    kg = build_demo_kg()
    rels = {r for _, r, _ in kg.triples}
    print(f"demo KG: {len(kg.triples)} triples, {len(rels)} relations, "
          f"{len({r.split('.')[0] for r in rels})} domains, {len(kg.names)} named entities")
    kb = load_demo_kb()
    samples = load_dataset("demo", split=args.split)
    print(f"{args.split}: {len(samples)} questions "
          + ", ".join(f"{k} {v}" for k, v in sorted(Counter(s.meta['qtype'] for s in samples).items())))

    env = make_env("kg_r1", kb, max_turns=args.max_turns)
    oracle = PathOracle()
    shown = 0
    per_type: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for s in tqdm(samples, desc="oracle episodes", unit="q"):
        if not expressible(s):
            continue
        traj = oracle.messages(env, s)
        per_type[s.meta["qtype"]].append((f1(traj.answer, s.answers), hit_at_1(traj.answer, s.answers)))
        if shown < args.show and len(traj.turns) > 1:
            shown += 1
            print(f"\n=== {s.question}  [{s.meta['qtype']}, {s.level}]")
            for t in traj.turns:
                print(t.text.strip())
                if t.observation.strip():
                    print(t.observation.strip()[:300])
            print(f"gold: {[a.label for a in s.answers]}  predicted: {[a.label for a in traj.answer]}")
    print("\n| question type | n | oracle F1 | Hit@1 |\n|---|---|---|---|")
    for qt, v in sorted(per_type.items()):
        print(f"| {qt} | {len(v)} | {sum(x for x, _ in v) / len(v):.3f} | {sum(y for _, y in v) / len(v):.3f} |")
    print("\nTypes without a relation path (superlative, comparison, time, type) need the SPARQL/"
          "S-expression action spaces of later methods; the oracle skips them.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
