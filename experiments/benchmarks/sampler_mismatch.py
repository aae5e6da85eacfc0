"""The gap between each rollout engine's log-probs and the trainer's, in one run.

    python experiments/benchmarks/sampler_mismatch.py [--n 8] [--tokens 48]

SmolLM2-135M (float32 weights) samples the first turn of ``n`` KG-R1 demo dev questions
with each engine (HF, CTranslate2 float32 and int8, ONNX Runtime GenAI float32) at temperature 1.0 and 0.7;
the trainer scores the same tokens at the same temperature in float32 and under bf16
autocast (``objective.bf16``). For each cell: the mean ``|Δ log p|`` over the sampled
tokens and the share of tokens whose ratio ``π_trainer / π_sampler`` leaves PPO's clip
band [0.8, 1.2] — what the RL update corrects by truncated importance sampling
(:mod:`kgreason.rl.correction`), or, where the engine is the trainer's own forward pass,
takes as the old log-probs. CTranslate2 reports log-probs at temperature 1 only.
"""

from __future__ import annotations

import argparse

import torch

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy
from kgreason.rl import sampler_mismatch
from kgreason.rollout import CT2Engine, HFEngine, ORTEngine


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8, help="dev questions (one sampled first turn each)")
    ap.add_argument("--tokens", type=int, default=48, help="new tokens a turn")
    args = ap.parse_args()
    policy = CausalLMPolicy.from_pretrained(lora=None, bf16=False)
    kb = load_demo_kb()
    prompts = [policy.chat_ids(make_env("kg_r1", kb).reset(s)) for s in load_dataset("demo", split="dev")[: args.n]]
    engines = {"hf": lambda t: HFEngine(policy, temperature=t),
               "ct2 float32": lambda t: CT2Engine(policy, compute_type="float32", temperature=t),
               "ct2 int8": lambda t: CT2Engine(policy, compute_type="int8", temperature=t),
               "ort float32": lambda t: ORTEngine(policy, temperature=t)}
    print(f"SmolLM2-135M float32 weights, {args.n} first turns of KG-R1 demo dev questions, "
          f"≤ {args.tokens} tokens each")
    print("| engine | temperature | trainer | tokens | mean abs Δ log p | outside [0.8, 1.2] |\n|---|---|---|---|---|---|")
    for name, make in engines.items():
        for temperature in (1.0, 0.7):
            torch.manual_seed(0)
            gens = make(temperature).generate(prompts, max_new_tokens=args.tokens)
            if any(g.logprobs is None for g in gens):
                print(f"| {name} | {temperature} | – | – | none reported (the trainer recomputes) | – |")
                continue
            width = max(len(g.token_ids) for g in gens)
            for trainer, autocast in (("float32", False), ("bf16 autocast", True)):
                deltas = []
                for p, g in zip(prompts, gens, strict=True):
                    ids = torch.tensor([list(p) + g.token_ids])
                    with torch.no_grad(), policy.autocast(autocast):
                        lp, _ = policy.token_logprobs(ids, torch.ones_like(ids), from_pos=len(p),
                                                      temperature=temperature)
                    deltas.append((lp[0, len(p):], torch.tensor(g.logprobs)))
                old = torch.zeros(len(gens), width)
                sampled = torch.zeros(len(gens), width)
                mask = torch.zeros(len(gens), width)
                for i, (a, b) in enumerate(deltas):
                    old[i, : len(a)], sampled[i, : len(b)], mask[i, : len(a)] = a, b, 1.0
                m = sampler_mismatch(old, sampled, mask)
                print(f"| {name} | {temperature} | {trainer} | {int(mask.sum())} | {m['sampler_abs_dlogp']:.4f} | "
                      f"{m['sampler_out_of_band']:.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
