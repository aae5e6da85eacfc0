"""Prefill logits for the last position only, against logits for every position, side by side.

    python experiments/benchmarks/prefill_logits.py [--method knowcoder_a1] [--preset metaqa]
        [--hops 3] [--n 50] [--checkpoint RUN/checkpoints/policy.pt] [override ...]

``HFEngine`` encodes a shared prompt prefix and each turn's new tokens with plain forward
calls before ``generate`` decodes. Those calls only fill the key/value cache, so the engine
asks for the logits of one position (``logits_to_keep=1``); without it a causal LM projects
every encoded position onto the whole vocabulary: ``rows x tokens x 49,152`` values for
SmolLM2, gigabytes at MetaQA's 3-hop lengths. Each side plays the same ``n`` held-out
questions of ``hops`` hops greedily through the method's evaluation rollout in its own
child process, so each peak RSS (``ru_maxrss``) is that side's alone; ``all positions``
wraps the model so that the keyword is dropped. Prints the wall time, the peak RSS and how
many trajectories decoded the same tokens, in one run.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from common import json_child

from kgreason.compose import build_parts, compose_config
from kgreason.training.cost import peak_rss_gb

SIDES = ("all positions", "last position")


def drop_logits_to_keep(model: torch.nn.Module) -> None:
    """Make ``model``'s forward ignore ``logits_to_keep``: logits for every position."""
    forward = model.forward

    def every_position(*args, **kwargs):
        kwargs.pop("logits_to_keep", None)
        return forward(*args, **kwargs)

    model.forward = every_position


def run_side(side: str, args: argparse.Namespace) -> dict:
    overrides = [f"method={args.method}", f"preset={args.preset}", "stage=eval", "data.stratify=hops",
                 f"data.eval_limit={3 * args.n}", *args.overrides]
    if args.checkpoint:
        overrides.append(f"checkpoint={args.checkpoint}")
    parts = build_parts(compose_config(overrides))
    samples = [s for s in parts.dev if s.hops == args.hops][: args.n]
    if len(samples) < args.n:
        raise SystemExit(f"--n {args.n}: the held-out set has only {len(samples)} {args.hops}-hop questions")
    if side == SIDES[0]:
        drop_logits_to_keep(parts.policy.model)
    torch.manual_seed(0)
    envs = [parts.make_env() for _ in samples]
    t0 = time.perf_counter()
    trajs, _ = parts.eval_rollout.run(envs, samples, greedy=True)
    return {"side": side, "seconds": time.perf_counter() - t0,
            "rss_gb": peak_rss_gb(),
            "tokens": [t.token_ids for t in trajs]}


def child(side: str, args: argparse.Namespace) -> dict:
    cmd = ["--side", side, "--method", args.method, "--preset", args.preset, "--hops", str(args.hops),
           "--n", str(args.n), "--json"]
    if args.checkpoint:
        cmd += ["--checkpoint", args.checkpoint]
    return json_child(__file__, *cmd, *args.overrides)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", default="knowcoder_a1")
    ap.add_argument("--preset", default="metaqa")
    ap.add_argument("--hops", type=int, default=3)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--checkpoint", default=None)
    ap.add_argument("--side", default="both", choices=["both", *SIDES])
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("overrides", nargs="*", help="more Hydra overrides, e.g. eval.batch_size=25")
    args = ap.parse_args()
    if args.side != "both":
        print(json.dumps(run_side(args.side, args)))
        return 0
    rows = [child(side, args) for side in SIDES]
    same = sum(a == b for a, b in zip(rows[0]["tokens"], rows[1]["tokens"], strict=True))
    print(f"method={args.method} preset={args.preset}, {args.n} held-out {args.hops}-hop questions, greedy, "
          f"{'trained: ' + args.checkpoint if args.checkpoint else 'untrained'}\n")
    print("| prefill logits | s | peak RSS GB |\n|---|---|---|")
    for r in rows:
        print(f"| {r['side']} | {r['seconds']:.1f} | {r['rss_gb']:.2f} |")
    print(f"speed-up {rows[0]['seconds'] / rows[1]['seconds']:.2f}x, peak RSS "
          f"{rows[1]['rss_gb'] / rows[0]['rss_gb']:.2f}x, same trajectories {same}/{args.n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
