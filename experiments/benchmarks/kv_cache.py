"""Decoding with transformers' DynamicCache vs kgreason's GrowingCache, same engine.

    python experiments/benchmarks/kv_cache.py [--batch 8 25 50] [--tokens 96] [--repeats 2]

The first turn of KG-R1 on the demo dev questions (SmolLM2, greedy, stop strings on), as
the evaluation runs it. ``DynamicCache`` concatenates every layer's keys and values at each
new token (a copy of the whole cache per token); ``GrowingCache`` writes them into a
buffer with spare room. Prints seconds per batch of each (median of ``repeats``), the
speed-up, and whether both decoded the same tokens — measured side by side in one run.
"""

from __future__ import annotations

import argparse
import statistics
import time

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rollout import HFEngine


def decode(policy: CausalLMPolicy, prompts: list[list[int]], stop: tuple[str, ...], growing: bool, tokens: int,
           repeats: int) -> tuple[float, list[list[int]]]:
    times, out = [], []
    for _ in range(repeats):
        engine = HFEngine(policy, growing_cache=growing, reuse_cache=False)
        t0 = time.perf_counter()
        out = engine.generate(prompts, stop=stop, max_new_tokens=tokens, greedy=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), [g.token_ids for g in out]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 25, 50])
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    policy = CausalLMPolicy.from_pretrained()
    env = make_env("kg_r1", load_demo_kb())
    dev = load_dataset("demo", split="dev")
    prompts = [policy.chat_ids(env.reset(s)) for s in dev[: max(args.batch)]]
    stop = env.stop_sequences
    decode(policy, prompts[:2], stop, True, 8, 1)  # warm-up
    print(f"SmolLM2-135M, {'bf16' if policy.bf16 else 'float32'}; first KG-R1 turn, greedy, "
          f"≤ {args.tokens} new tokens\n")
    print("| rows | DynamicCache s | GrowingCache s | speed-up | same tokens |\n|---|---|---|---|---|")
    for n in args.batch:
        t_dyn, tok_dyn = decode(policy, prompts[:n], stop, False, args.tokens, args.repeats)
        t_grow, tok_grow = decode(policy, prompts[:n], stop, True, args.tokens, args.repeats)
        print(f"| {n} | {t_dyn:.1f} | {t_grow:.1f} | {t_dyn / t_grow:.2f}x | {tok_dyn == tok_grow} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
