"""bf16 against float32 for each stage a run computes, side by side in one run, and what
``bf16: auto`` chooses for each on this host.

    python experiments/benchmarks/precision.py [--n 8] [--turns 3] [--tokens 48] [--repeats 2]

Stages (SmolLM2-135M + LoRA r=16, the demo's KG-R1 episodes and dev questions):

* training pass (SFT step, RL update): forward with grad, backward and an AdamW step on a
  batch of 4 cold-start episodes; float32, bf16 autocast over float32 weights
  (``sft.bf16`` / ``objective.bf16``), bf16 base weights (``model.policy.bf16``);
* scoring pass (RL's old and reference log-probs): the same batch without grad;
* decoding (rollouts, evaluation): ``n`` greedy multi-turn rollouts in lock-step, float32
  weights against bf16 weights, in generated tokens a second.

It also reports the greedy agreement of the bf16 and float32 rollouts: how many of the
``n`` trajectories are token-for-token identical, and the mean share of a trajectory's
generated tokens before the first difference. Ratios > 1 mean bf16 is faster.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import torch

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.models.policy import first_loss_position
from kgreason.models.precision import bf16_support
from kgreason.rollout import HFEngine, MultiTurnRollout
from kgreason.training import collate

LORA = LoraSettings(r=16, alpha=32)


def timed(fn, repeats: int) -> float:
    """Median seconds of ``fn()`` over ``repeats`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def passes(policy: CausalLMPolicy, batch: dict, autocast: bool, repeats: int) -> tuple[float, float]:
    """(training-pass seconds, scoring-pass seconds) on ``batch``."""
    opt = torch.optim.AdamW(list(policy.parameters()), lr=1e-5)
    start = first_loss_position(batch["loss_mask"])

    def logprobs():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            lp, _ = policy.token_logprobs(batch["input_ids"], batch["attention_mask"], from_pos=start,
                                          loss_mask=batch["loss_mask"])
        return lp

    def train():
        loss = -(logprobs() * batch["loss_mask"]).sum() / batch["loss_mask"].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()

    def score():
        with torch.no_grad():
            logprobs()

    return timed(train, repeats), timed(score, repeats)


def rollouts(policy: CausalLMPolicy, samples: list, turns: int, tokens: int) -> tuple[float, list[list[int]]]:
    """(generated tokens a second, each trajectory's generated token ids) of greedy rollouts."""
    kb = load_demo_kb()
    ro = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, max_new_tokens=tokens)

    def envs(k):
        return [make_env("kg_r1", kb, max_turns=turns) for _ in range(k)]

    ro.run(envs(2), samples[:2], greedy=True)  # warm-up
    t0 = time.perf_counter()
    trajs, stats = ro.run(envs(len(samples)), samples, greedy=True)
    rate = stats.generated_tokens / (time.perf_counter() - t0)
    return rate, [[t for t, m in zip(tr.token_ids, tr.loss_mask, strict=True) if m] for tr in trajs]


def agreement(a: list[list[int]], b: list[list[int]]) -> tuple[int, float]:
    """(identical trajectories, mean share of generated tokens before the first difference).

    >>> agreement([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 6]])
    (1, 0.75)
    """
    same, shares = 0, []
    for x, y in zip(a, b, strict=True):
        same += x == y
        k = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
        shares.append(k / max(len(x), len(y), 1) if x != y else 1.0)
    return same, statistics.mean(shares)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8, help="greedy rollouts (dev questions) per precision")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=48, help="new tokens a turn")
    ap.add_argument("--repeats", type=int, default=2, help="timed training/scoring passes after a warm-up")
    args = ap.parse_args()
    torch.manual_seed(0)
    support = bf16_support("cpu")
    f32 = CausalLMPolicy.from_pretrained(lora=LORA, bf16=False)
    b16 = CausalLMPolicy.from_pretrained(lora=LORA, bf16=True)
    kb, train = load_demo_kb(), load_dataset("demo", split="train")
    make = functools.partial(make_env, "kg_r1", kb, max_turns=4)
    episodes = oracle_sft_trajectories(train[:40], make, f32.chat_ids, f32.tokenizer)[:4]
    batch = collate(episodes, f32.tokenizer.pad_token_id, 2048)

    rows = {"float32": passes(f32, batch, False, args.repeats),
            "bf16 autocast, float32 weights": passes(f32, batch, True, args.repeats),
            "bf16 weights": passes(b16, batch, True, args.repeats)}
    samples = load_dataset("demo", split="dev")[: args.n]
    rate32, gen32 = rollouts(f32, samples, args.turns, args.tokens)
    rate16, gen16 = rollouts(b16, samples, args.turns, args.tokens)
    same, share = agreement(gen16, gen32)

    print(f"host: {support.describe()}; bf16: auto chooses bf16 for decoding: {support.fast('decode')}, "
          f"for training passes: {support.fast('train')}")
    print(f"batch {list(batch['input_ids'].shape)} (4 KG-R1 cold-start episodes), median of {args.repeats}")
    print("| precision | training pass s | ratio | scoring pass s | ratio |\n|---|---|---|---|---|")
    base_train, base_score = rows["float32"]
    for name, (tr, sc) in rows.items():
        print(f"| {name} | {tr:.2f} | {base_train / tr:.2f}x | {sc:.2f} | {base_score / sc:.2f}x |")
    print(f"\ndecoding: {args.n} greedy rollouts, H={args.turns}, {args.tokens} new tokens a turn")
    print("| weights | tokens/s | ratio |\n|---|---|---|")
    print(f"| float32 | {rate32:.1f} | 1.00x |\n| bf16 | {rate16:.1f} | {rate16 / rate32:.2f}x |")
    print(f"greedy agreement bf16 vs float32: {same}/{args.n} trajectories identical; "
          f"{share:.0%} of a trajectory's tokens, on average, before the first difference")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
