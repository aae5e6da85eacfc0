"""KG-Reasoner's GAT entity ranker against the dense ranker and a random one (issue 20).

On held-out questions, every step of the gold path is a ranking decision: rank the
neighbours of the entity being explored and find the ones that lead on to an answer.
Reports recall@1/3/10 and MRR per ranker, overall and per hop, and the GAT ranker's
training time, side by side in one run:

- ``gat``: :class:`GATEntityRanker` trained on the training questions' gold paths;
- ``mlp``: the same without neighbourhood aggregation (the paper's Table 5 ablation);
- ``dense``: all-MiniLM-L6-v2 cosine between the question and "relation words + name";
- ``random``: seeded uniform scores.

    python experiments/benchmarks/entity_ranker.py [--kg demo|metaqa|both] [--epochs 10]
        [--metaqa-train 1500 --metaqa-test 300] [--plot docs/img/entity_ranker.png]

The demo KG trains on its train split and tests on its dev split; MetaQA (dev questions
only are shipped) is split by question, 1-, 2- and 3-hop together.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from kgreason.data import load_dataset, load_demo_kb, sample_subset
from kgreason.rankers import DenseRanker, GATEntityRanker, RandomRanker
from kgreason.training.ranker import evaluate_ranker, fit_ranker, ranker_examples

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
KS = (1, 3, 10)


def compare(name: str, kb, train_q, test_q, epochs: int, seed: int) -> dict:
    t0 = time.perf_counter()
    train, dropped_tr = ranker_examples(kb, train_q)
    test, dropped_te = ranker_examples(kb, test_q)
    print(f"\n{name}: {len(train)} training decisions from {len(train_q)} questions, {len(test)} held-out from "
          f"{len(test_q)} (gold outside the 200 candidates: {dropped_tr} / {dropped_te}); examples in "
          f"{time.perf_counter() - t0:.0f} s; mean candidates "
          f"{sum(len(e.graph.candidates) for e in test) / max(len(test), 1):.1f}")
    text = DenseRanker(verbalize=str)
    rankers, timing = {}, {}
    for key, agg in (("gat", True), ("mlp", False)):
        torch.manual_seed(seed)
        r = GATEntityRanker(encoder=text, aggregate=agg)
        timing[key] = fit_ranker(r, train, epochs=epochs, seed=seed)
        rankers[key] = r
    rankers["dense"] = DenseRanker(text.encoder, verbalize=str)
    rankers["random"] = RandomRanker(seed)
    res = {k: evaluate_ranker(r, test, KS, by=lambda ex: f"hop {ex.hop + 1}") for k, r in rankers.items()}
    groups = list(res["gat"])
    print(f"{'ranker':<8} {'group':<7} {'n':>5} " + " ".join(f"{'R@' + str(k):>6}" for k in KS) + f" {'MRR':>6}")
    for g in groups:
        for k in rankers:
            m = res[k][g]
            print(f"{k:<8} {g:<7} {m['n']:>5} " + " ".join(f"{m[f'recall@{x}']:>6.3f}" for x in KS) + f" {m['mrr']:>6.3f}")
    for k, t in timing.items():
        print(f"{k} training: featurise {t['featurise_s']:.0f} s, {t['epochs']} epochs {t['train_s']:.0f} s "
              f"({t['examples']} decisions)")
    return {"results": res, "timing": timing, "train_decisions": len(train), "test_decisions": len(test)}


def plot(out: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(out), figsize=(5 * len(out), 3.6), squeeze=False)
    for ax, (name, r) in zip(axes[0], out.items(), strict=True):
        groups = list(r["results"]["gat"])
        width = 0.2
        for i, k in enumerate(r["results"]):
            ax.bar([j + i * width for j in range(len(groups))], [r["results"][k][g]["mrr"] for g in groups], width,
                   label=k)
        ax.set_xticks([j + 1.5 * width for j in range(len(groups))], groups)
        ax.set_ylim(0, 1)
        ax.set_title(f"{name}: MRR of the gold next entity")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kg", choices=("demo", "metaqa", "both"), default="both")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--metaqa-train", type=int, default=1500)
    ap.add_argument("--metaqa-test", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    out = {}
    if args.kg in ("demo", "both"):
        kb = load_demo_kb()
        out["demo"] = compare("demo KG", kb, load_dataset("demo", split="train"), load_dataset("demo", split="dev"),
                              args.epochs, args.seed)
    if args.kg in ("metaqa", "both"):
        from kgreason.kb import load_metaqa_kb

        kb = load_metaqa_kb(SHARED / "metaqa" / "kb.txt")
        qs = load_dataset("metaqa", SHARED / "metaqa", split="dev", hops=(1, 2, 3))
        # the same number of questions of each hop count, split by question
        per = (args.metaqa_train + args.metaqa_test) // 3
        pool = [q for h in (1, 2, 3) for q in sample_subset([q for q in qs if q.hops == h], per, args.seed)]
        test = sample_subset(pool, args.metaqa_test, args.seed + 1)
        ids = {q.id for q in test}
        out["metaqa"] = compare("MetaQA 1/2/3-hop", kb, [q for q in pool if q.id not in ids], test, args.epochs,
                                args.seed)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    if args.plot:
        plot(out, args.plot)


if __name__ == "__main__":
    main()
