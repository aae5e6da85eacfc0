"""A lock-step evaluation with finished rows dropped between decoding rounds, or not.

    python experiments/benchmarks/compaction.py [--method knowcoder_a1] [--n 50] [--every 0 32]
        [--checkpoint RUN/checkpoints/policy_sft.pt] [override ...]

Plays the first ``n`` dev questions of ``method=<method> preset=demo`` (the policy,
environment, turn and token budgets of that run; untrained unless ``--checkpoint``)
greedily through the method's evaluation rollout, once per ``HFEngine.compact_every``
value, and prints the wall time, the generated tokens, the speed-up over the first value
and how many trajectories decoded exactly the first value's tokens — side by side in one
run. In bf16, rounding depends on the batch's shape, so a greedy trajectory can differ
where two tokens are nearly tied; float32 (``model.policy.bf16=false``) decodes the same
tokens.
"""

from __future__ import annotations

import argparse
import time

import torch

from kgreason.compose import build_parts, compose_config


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default="knowcoder_a1")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--every", type=int, nargs="+", default=[0, 32])
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("overrides", nargs="*", help="more Hydra overrides, e.g. model.policy.bf16=false")
    args = ap.parse_args()
    overrides = [f"method={args.method}", "preset=demo", *args.overrides]
    if args.checkpoint:
        overrides.append(f"checkpoint={args.checkpoint}")
    parts = build_parts(compose_config(overrides))
    samples = parts.dev[: args.n]
    engine = parts.engine
    print(f"method={args.method} preset=demo, {len(samples)} dev questions, "
          f"{'bf16' if parts.policy.bf16 else 'float32'}, "
          f"{'trained: ' + args.checkpoint if args.checkpoint else 'untrained'}, greedy\n")
    print("| compact_every | s | generated tokens | speed-up | same trajectories |\n|---|---|---|---|---|")
    first: tuple[float, list[list[int]]] | None = None
    for every in args.every:
        engine.compact_every = every
        engine.clear_cache()
        torch.manual_seed(0)
        envs = [parts.make_env() for _ in samples]
        t0 = time.perf_counter()
        trajs, stats = parts.eval_rollout.run(envs, samples, greedy=True)
        dt = time.perf_counter() - t0
        ids = [t.token_ids for t in trajs]
        if first is None:
            first = (dt, ids)
        same = sum(a == b for a, b in zip(ids, first[1], strict=True))
        print(f"| {every or 'off'} | {dt:.1f} | {stats.generated_tokens} | {first[0] / dt:.2f}x | "
              f"{same}/{len(ids)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
