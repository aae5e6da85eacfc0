"""ISP/DTPO tree rollout at K vs K independent linear rollouts, same policy, same questions.

    python experiments/benchmarks/tree_vs_linear.py [--n 50] [--k 8] [--depth 4] [--max-active 2]
        [--checkpoint runs/isp/checkpoints/policy_sft.pt | --sft-steps 40]

The policy is SmolLM2-135M-Instruct + LoRA after a short rule-based cold start on the
demo train split (``--sft-steps``), or the policy saved by an ``isp_dtpo`` run
(``--checkpoint``). Both sides sample at temperature 1 with the same step budget and
token limit. Prints, side by side: distinct successful trajectories (F1 = 1, distinct
action sequences) per 1k generated tokens, KB calls made and saved by the tree's query
cache, and the tree's pruning rate by depth.
"""

from __future__ import annotations

import argparse
import functools
import random
import time

import torch

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.eval import f1
from kgreason.kb import CachedKB
from kgreason.methods.isp_dtpo import isp_sft_trajectories
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.rankers import DenseRanker
from kgreason.rollout import HFEngine, MultiTurnRollout, TreeRollout
from kgreason.training import collate
from kgreason.training.sft import masked_nll


def cold_start(policy: CausalLMPolicy, make, steps: int, seed: int) -> None:
    train = random.Random(seed).sample(load_dataset("demo", split="train"), 200)
    trajs = isp_sft_trajectories(train, make, policy.chat_ids, policy.tokenizer)
    opt = torch.optim.AdamW(list(policy.parameters()), lr=5e-4)
    rng = random.Random(seed)
    for i in range(steps):
        batch = collate(rng.sample(trajs, 4), policy.tokenizer.pad_token_id, 1024)
        loss = masked_nll(policy, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i % 10 == 0:
            print(f"  cold start step {i}: loss {loss.item():.3f}", flush=True)


def signature(turns) -> tuple:
    return tuple(" ".join(a.raw.split()) for t in turns for a in t.actions)


def good_queries(turns) -> set[str]:
    """Observations of SPARQL steps that returned something (a weaker success than F1 = 1)."""
    return {t.observation.strip() for t in turns
            if t.actions and t.actions[-1].name == "sparql" and not t.error}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--max-active", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--sft-steps", type=int, default=40)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    kb = load_demo_kb()
    ranker = DenseRanker()
    make = functools.partial(make_env, "isp_dtpo", kb, ranker=ranker, max_turns=args.depth)
    policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=16, alpha=32, top_layers=12))
    if args.checkpoint:
        policy.load_checkpoint_state(torch.load(args.checkpoint, map_location="cpu"))
    else:
        print(f"cold start: {args.sft_steps} SFT steps on decomposed demo train questions")
        cold_start(policy, make, args.sft_steps, args.seed)
    samples = random.Random(args.seed + 1).sample(load_dataset("demo", split="dev"), args.n)
    engine = HFEngine(policy)

    tree_ro = TreeRollout(engine, policy.tokenizer, policy.chat_ids, k=args.k, max_depth=args.depth,
                          max_new_tokens=args.tokens, max_active=args.max_active)
    t0 = time.perf_counter()
    tree_ok, tree_tokens, hits, misses, tree_q = 0, 0, 0, 0, 0
    by_depth: dict[int, list[int]] = {}
    for i in range(0, len(samples), 5):
        chunk = samples[i : i + 5]
        trees, st = tree_ro.run([make() for _ in chunk], chunk)
        tree_tokens += st.generated_tokens
        hits, misses = hits + st.cache_hits, misses + st.cache_misses
        for d, c in st.by_depth.items():
            agg = by_depth.setdefault(d, [0, 0])
            agg[0] += c["pruned"]
            agg[1] += c["branches"]
        for tree in trees:
            sigs, queries = set(), set()
            for leaf in tree.leaves():
                turns = tree.trajectory(leaf.id).turns
                queries |= good_queries(turns)
                if leaf.answered and f1(leaf.answer, tree.sample.answers) == 1.0:
                    sigs.add(signature(turns))
            tree_ok += len(sigs)
            tree_q += len(queries)
        print(f"  tree: {min(i + 5, len(samples))}/{len(samples)} questions", flush=True)
    t_tree = time.perf_counter() - t0

    lin = MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new_tokens=args.tokens)
    t0 = time.perf_counter()
    lin_ok, lin_tokens, lin_kb, lin_q = 0, 0, 0, 0
    for i in range(0, len(samples), 2):
        chunk = samples[i : i + 2]
        reps = [s for s in chunk for _ in range(args.k)]
        envs = [make() for _ in reps]
        for e in envs:  # a private cache per episode only counts the calls (no sharing)
            e.kb = CachedKB(e.kb)
        trajs, st = lin.run(envs, reps)
        lin_tokens += st.generated_tokens
        lin_kb += sum(e.kb.hits + e.kb.misses for e in envs)
        for s in chunk:
            sigs = {signature(t.turns) for t, r in zip(trajs, reps, strict=True)
                    if r is s and f1(t.answer, s.answers) == 1.0}
            lin_ok += len(sigs)
            lin_q += len(set().union(*(good_queries(t.turns) for t, r in zip(trajs, reps, strict=True) if r is s)))
        print(f"  linear: {min(i + 2, len(samples))}/{len(samples)} questions", flush=True)
    t_lin = time.perf_counter() - t0

    print(f"\n{len(samples)} demo dev questions, K={args.k}, depth {args.depth}, "
          f"max {args.max_active} active nodes per depth, {args.tokens} new tokens per step\n")
    print("| rollout | distinct successful trajectories (F1 = 1) | per 1k tokens | distinct non-empty "
          "query results | per 1k tokens | generated tokens | KB calls | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| tree K={args.k} | {tree_ok} | {1000 * tree_ok / max(1, tree_tokens):.3f} | {tree_q} | "
          f"{1000 * tree_q / max(1, tree_tokens):.3f} | {tree_tokens} | {misses} (+{hits} served by the cache) | "
          f"{t_tree:.0f} |")
    print(f"| {args.k} linear | {lin_ok} | {1000 * lin_ok / max(1, lin_tokens):.3f} | {lin_q} | "
          f"{1000 * lin_q / max(1, lin_tokens):.3f} | {lin_tokens} | {lin_kb} | {t_lin:.0f} |")
    rate_t, rate_l = tree_ok / max(1, tree_tokens), lin_ok / max(1, lin_tokens)
    print(f"\nratio (tree / linear) of distinct successes per token: "
          f"{rate_t / rate_l:.2f}x" if rate_l else "\nlinear found no successful trajectory")
    print(f"KB-query cache: {hits} of {hits + misses} lookups served ({hits / max(1, hits + misses):.0%})")
    print("pruning rate by depth: " + ", ".join(f"d{d} {p / max(1, b):.0%} ({p}/{b})"
                                                for d, (p, b) in sorted(by_depth.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
