"""A lock-step evaluation under each value of one ``HFEngine`` setting, side by side.

    python experiments/benchmarks/engine_settings.py [--method knowcoder_a1] [--n 50]
        [--vary compact_every=0,32 | --vary bucket_prefill=false,true | --vary pack_columns=false,true]
        [--checkpoint RUN/checkpoints/policy.pt] [override ...]

Plays the first ``n`` dev questions of ``method=<method> preset=demo`` (the policy,
environment, turn and token budgets of that run; untrained unless ``--checkpoint``)
greedily through the method's evaluation rollout, once per value of the setting, and
prints the wall time, the generated tokens, the token positions the model encoded
(prompts, observations and decoding steps, padding included), the speed-up over the first
value and how many trajectories decoded exactly the first value's tokens — in one run.
``compact_every``: finished rows leave the batch every so many tokens (0: never);
``bucket_prefill``: new tokens encoded in buckets of similar length, or padded to the
longest row; ``pack_columns``: the padding columns between turns dropped from the kept
cache, or kept. In bf16, rounding depends on the batch's shape, so a greedy trajectory can
differ where two tokens are nearly tied; float32 (``model.policy.bf16=false``) decodes
the same tokens.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from omegaconf import OmegaConf

from kgreason.compose import build_parts, compose_config
from kgreason.rollout.engine import count_encoded_positions

SETTINGS = ("compact_every", "bucket_prefill", "pack_columns")


def parse_vary(text: str) -> tuple[str, list[int | bool]]:
    """``"compact_every=0,32"`` → ``("compact_every", [0, 32])``; booleans as true/false."""
    name, _, values = text.partition("=")
    if name not in SETTINGS or not values:
        raise SystemExit(f"--vary takes NAME=V1,V2 with NAME one of {', '.join(SETTINGS)}; got {text!r}")
    words = {"true": True, "false": False}
    try:
        return name, [words[v.lower()] if v.lower() in words else int(v) for v in values.split(",")]
    except ValueError:
        raise SystemExit(f"--vary {name}: values are integers or true/false, got {values!r}") from None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default="knowcoder_a1")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--vary", default="compact_every=0,32", help="NAME=V1,V2: " + ", ".join(SETTINGS))
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("overrides", nargs="*", help="more Hydra overrides, e.g. model.policy.bf16=false")
    args = ap.parse_args()
    name, values = parse_vary(args.vary)
    overrides = [f"method={args.method}", "preset=demo", *args.overrides]
    if args.checkpoint:
        overrides.append(f"checkpoint={args.checkpoint}")
    cfg = compose_config(overrides)
    parts = build_parts(cfg)
    with tempfile.TemporaryDirectory() as tmp:
        # a trainable ranker (KG-Reasoner's GAT) as the run had it: its ranker.pt, else trained
        run_dir = Path(args.checkpoint).resolve().parents[1] if args.checkpoint else None
        out = run_dir if run_dir and (run_dir / "ranker.pt").is_file() else Path(tmp)
        parts.ranker_training(parts.train, parts.make_env, out, OmegaConf.to_container(cfg.trainer, resolve=True))
    samples = parts.dev[: args.n]
    engine = parts.engine
    print(f"method={args.method} preset=demo, {len(samples)} dev questions, "
          f"{'bf16' if parts.policy.bf16 else 'float32'}, "
          f"{'trained: ' + args.checkpoint if args.checkpoint else 'untrained'}, greedy\n")
    print(f"| {name} | s | generated tokens | encoded positions | speed-up | same trajectories |\n"
          "|---|---|---|---|---|---|")
    first: tuple[float, list[list[int]]] | None = None
    for value in values:
        setattr(engine, name, value)
        engine.clear_cache()
        torch.manual_seed(0)
        envs = [parts.make_env() for _ in samples]
        with count_encoded_positions(parts.policy.model) as encoded:
            t0 = time.perf_counter()
            trajs, stats = parts.eval_rollout.run(envs, samples, greedy=True)
            dt = time.perf_counter() - t0
        ids = [t.token_ids for t in trajs]
        if first is None:
            first = (dt, ids)
        same = sum(a == b for a, b in zip(ids, first[1], strict=True))
        shown = "off" if value is False or value == 0 else str(value).lower()
        print(f"| {shown} | {dt:.1f} | {stats.generated_tokens} | {sum(encoded)} | {first[0] / dt:.2f}x | "
              f"{same}/{len(ids)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
