"""SFT step time of SmolLM2 + LoRA: prompt projection skipped or not, all layers or the
top ones, the batch's shared prompt prefix encoded once or per row, bf16 or float32.

    python experiments/benchmarks/sft_step.py [--batch 4] [--repeats 3] [--top-layers 12]

One batch of KG-R1 oracle trajectories from the demo train split; each configuration
runs ``repeats`` forward+backward+step passes after one warm-up; prints the median
seconds per step and the speed-up over the baseline, measured side by side in one run.
The last row repeats the fastest configuration in the other precision, so one run shows
whether bf16 pays on this host (``bf16: auto`` decides it from the CPU's AMX support).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import torch

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy, LoraSettings, bf16_is_fast
from kgreason.models.policy import first_loss_position
from kgreason.training import collate, oracle_sft_trajectories


def step_time(policy: CausalLMPolicy, batch: dict, skip_prompt: bool, repeats: int) -> float:
    opt = torch.optim.AdamW(list(policy.parameters()), lr=1e-5)
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        start = first_loss_position(batch["loss_mask"]) if skip_prompt else 1
        lp, _ = policy.token_logprobs(batch["input_ids"], batch["attention_mask"], from_pos=start)
        loss = -(lp * batch["loss_mask"]).sum() / batch["loss_mask"].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:  # the first pass warms up
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--top-layers", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    kb = load_demo_kb()
    make = functools.partial(make_env, "kg_r1", kb, max_turns=4)
    auto = bf16_is_fast()
    rows = []
    k = args.top_layers
    # (LoRA layers, skip the prompt's projection, precision, share the prompt prefix)
    configs = [(None, False, auto, False), (None, True, auto, False), (k, False, auto, False),
               (k, True, auto, False), (k, True, auto, True), (k, True, not auto, True)]
    for top, skip, bf16, share in configs:
        policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=16, alpha=32, top_layers=top), bf16=bf16)
        policy.share_prefix = 32 if share else 0
        trajs = oracle_sft_trajectories(load_dataset("demo", split="train")[:40], make, policy.chat_ids,
                                        policy.tokenizer)
        batch = collate(trajs[: args.batch], policy.tokenizer.pad_token_id, 1024)
        rows.append((top, skip, bf16, share, step_time(policy, batch, skip, args.repeats),
                     tuple(batch["input_ids"].shape)))
    base = rows[0][4]
    print(f"SmolLM2-135M + LoRA r16; batch {rows[0][5]}; bf16 auto on this host: {auto}\n")
    print("| LoRA layers | prompt projection | shared prefix | precision | s/step | speed-up |\n"
          "|---|---|---|---|---|---|")
    for top, skip, bf16, share, t, _ in rows:
        print(f"| {'all 30' if top is None else f'top {top}'} | {'skipped' if skip else 'computed'} | "
              f"{'once' if share else 'per row'} | {'bf16' if bf16 else 'float32'} | {t:.2f} | {base / t:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
