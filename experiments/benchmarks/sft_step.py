"""SFT step time of SmolLM2 + LoRA: prompt projection skipped or not, all layers or the
top ones, the batch's shared prompt prefix encoded once or per row, only the loss tokens
projected onto the vocabulary or every later one, bf16 or float32.

    python experiments/benchmarks/sft_step.py [--method kg_r1|knowcoder_a1] [--batch 4] [--repeats 3] [--top-layers 12]

One batch of cold-start episodes from the demo train split (KG-R1's oracle, or
KnowCoder-A1's scripted teacher, whose tool observations are long); each configuration
runs ``repeats`` forward+backward+step passes after one warm-up; prints the median
seconds per step and the speed-up over the baseline, measured side by side in one run.
The last rows repeat the fastest configuration in the other precision (and, where
``bf16: auto`` chose float32, with bf16 autocast over float32 weights, as ``sft.bf16=true``
trains), so one run shows whether bf16 pays on this host.

    python experiments/benchmarks/sft_step.py --allocator [--method knowcoder_a1] [--rounds 2]

compares instead the presets' step (top 12 layers, shared prefix, loss tokens, bf16
autocast where it pays) under glibc's default allocator settings, with ``mmap`` off and
trimming off (``MALLOC_MMAP_MAX_=0``, ``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``), so
that freed activations stay in the heap instead of going back to the kernel and being
faulted in again, zeroed, at the next step, and with transparent huge pages
(``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``). Each setting runs in its own process (glibc
reads them at start), alternated ``rounds`` times; it prints seconds a step, user and
system CPU seconds a step, minor page faults a step and peak RSS, and the ratios.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import resource
import statistics
import time

import torch
from common import json_child

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.methods.kg_r1 import oracle_sft_trajectories
from kgreason.methods.knowcoder_a1.teacher import ScriptedKnowCoderTeacher
from kgreason.models import CausalLMPolicy, LoraSettings, bf16_is_fast
from kgreason.models.policy import first_loss_position
from kgreason.models.precision import resolve_bf16
from kgreason.training import collate, episode_tokens
from kgreason.training.cost import peak_rss_gb

PRECISION = {True: "bf16", False: "float32", "autocast": "bf16 autocast, float32 weights"}


def step_time(policy: CausalLMPolicy, batch: dict, skip_prompt: bool, masked: bool, repeats: int,
              autocast: bool = False) -> float:
    opt = torch.optim.AdamW(list(policy.parameters()), lr=1e-5)
    times = []
    for i in range(repeats + 1):
        t0 = time.perf_counter()
        start = first_loss_position(batch["loss_mask"]) if skip_prompt else 1
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):  # what sft.bf16=true does
            lp, _ = policy.token_logprobs(batch["input_ids"], batch["attention_mask"], from_pos=start,
                                          loss_mask=batch["loss_mask"] if masked else None)
        loss = -(lp * batch["loss_mask"]).sum() / batch["loss_mask"].sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i:  # the first pass warms up
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def episodes(method: str, policy: CausalLMPolicy, n: int) -> list:
    """``n`` tokenised cold-start episodes of ``method`` on the demo train split."""
    kb = load_demo_kb()
    train = load_dataset("demo", split="train")
    if method == "kg_r1":
        make = functools.partial(make_env, "kg_r1", kb, max_turns=4)
        return oracle_sft_trajectories(train[:40], make, policy.chat_ids, policy.tokenizer)[:n]
    env, teacher, rng = make_env("knowcoder_a1", kb, max_turns=6), ScriptedKnowCoderTeacher(), random.Random(0)
    # every 100th question: several templates, not one question type
    return [episode_tokens(teacher.episode(env, s, rng), policy.chat_ids, policy.tokenizer)
            for s in train[3 : 100 * n : 100]]


#: glibc settings, by name: the defaults; freed memory kept in the heap (no mmap'd chunks, no
#: trimming); mmap'd chunks and the heap on transparent huge pages (``madvise``), which cut
#: the page faults and still hand freed memory back
ALLOCATORS = {"glibc default": {},
              "mmap and trim off": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 36),
                                    "MALLOC_TOP_PAD_": str(1 << 30)},
              "huge pages": {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}}


def preset_step(method: str, repeats: int, n: int, top: int) -> dict[str, float]:
    """The presets' SFT step, ``repeats`` times after a warm-up: per-step time, CPU, page faults."""
    torch.manual_seed(0)
    policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=16, alpha=32, top_layers=top), bf16=False)
    policy.share_prefix = 32
    batch = collate(episodes(method, policy, n), policy.tokenizer.pad_token_id, 2304)
    autocast = bool(resolve_bf16("auto", torch.device("cpu"), "train"))  # as sft.bf16=auto decides
    step_time(policy, batch, True, True, 1, autocast=autocast)  # first touches: the optimizer's state, the heap
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = step_time(policy, batch, True, True, repeats, autocast=autocast)
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    k = repeats + 1  # step_time's own warm-up pass is inside the usage window too
    return {"s_step": t, "user": (r1.ru_utime - r0.ru_utime) / k, "sys": (r1.ru_stime - r0.ru_stime) / k,
            "minflt": (r1.ru_minflt - r0.ru_minflt) / k, "rss_gb": peak_rss_gb(),
            "shape": list(batch["input_ids"].shape), "autocast": autocast}


def allocator(args: argparse.Namespace) -> int:
    """glibc's settings (:data:`ALLOCATORS`), each in its own process, alternated."""
    runs: dict[str, list[dict]] = {name: [] for name in ALLOCATORS}
    child = ["--child", "--method", args.method, "--repeats", str(args.repeats), "--batch", str(args.batch),
             "--top-layers", str(args.top_layers)]
    default = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "GLIBC_TUNABLES"}
    for _ in range(args.rounds):
        for name, env in ALLOCATORS.items():
            runs[name].append(json_child(__file__, *child, env=default | env))
    first = runs["glibc default"][0]
    print(f"SmolLM2-135M + LoRA r16 top {args.top_layers}, shared prefix, loss tokens; {args.method} batch "
          f"{tuple(first['shape'])}, bf16 autocast {first['autocast']}; {args.rounds} rounds x {args.repeats} "
          "steps, alternated\n")
    print("| allocator | s/step | user s/step | system s/step | CPU s/step | minor faults/step | peak RSS GB |\n"
          "|---|---|---|---|---|---|---|")
    mean = {name: {k: statistics.mean(r[k] for r in rs) for k in ("s_step", "user", "sys", "minflt", "rss_gb")}
            for name, rs in runs.items()}
    for name, m in mean.items():
        print(f"| {name} | {m['s_step']:.2f} | {m['user']:.2f} | {m['sys']:.2f} | {m['user'] + m['sys']:.2f} | "
              f"{m['minflt']:,.0f} | {m['rss_gb']:.2f} |")
    a = mean["glibc default"]
    for name, b in list(mean.items())[1:]:
        print(f"\n{name} / default: step time {b['s_step'] / a['s_step']:.3f}x, "
              f"CPU {(b['user'] + b['sys']) / (a['user'] + a['sys']):.3f}x, system {b['sys'] / a['sys']:.3f}x, "
              f"page faults {b['minflt'] / a['minflt']:.3f}x, peak RSS {b['rss_gb'] / a['rss_gb']:.3f}x")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=["kg_r1", "knowcoder_a1"], default="kg_r1")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--top-layers", type=int, default=12)
    ap.add_argument("--allocator", action="store_true", help="glibc's defaults against freed memory kept in the heap and against huge pages")
    ap.add_argument("--rounds", type=int, default=2, help="with --allocator: alternations of the settings")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(preset_step(args.method, args.repeats, args.batch, args.top_layers)))
        return 0
    if args.allocator:
        return allocator(args)
    torch.manual_seed(0)
    auto = bf16_is_fast()
    rows = []
    k = args.top_layers
    # (LoRA layers, skip the prompt's projection, precision, share the prompt prefix, loss tokens only);
    # precision "autocast": float32 weights, bf16 autocast for the step alone (sft.bf16=true)
    configs = [(None, False, auto, False, False), (None, True, auto, False, False), (k, False, auto, False, False),
               (k, True, auto, False, False), (k, True, auto, True, False), (k, True, auto, True, True),
               (k, True, not auto, True, True)]
    if not auto:
        configs.append((k, True, "autocast", True, True))
    for top, skip, bf16, share, masked in configs:
        policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=16, alpha=32, top_layers=top),
                                                bf16=bf16 is True)
        policy.share_prefix = 32 if share else 0
        batch = collate(episodes(args.method, policy, args.batch), policy.tokenizer.pad_token_id, 1536)
        t = step_time(policy, batch, skip, masked, args.repeats, autocast=bf16 == "autocast")
        rows.append((top, skip, bf16, share, masked, t, tuple(batch["input_ids"].shape),
                     int(batch["loss_mask"].sum())))
    base = rows[0][5]
    print(f"SmolLM2-135M + LoRA r16; {args.method} batch {rows[0][6]}, {rows[0][7]} loss tokens; "
          f"bf16 auto on this host: {auto}\n")
    print("| LoRA layers | projected onto the vocabulary | shared prefix | precision | s/step | speed-up |\n"
          "|---|---|---|---|---|---|")
    for top, skip, bf16, share, masked, t, _, _ in rows:
        projected = "loss tokens" if masked else "from the first loss token" if skip else "every token"
        print(f"| {'all 30' if top is None else f'top {top}'} | {projected} | {'once' if share else 'per row'} | "
              f"{PRECISION[bf16]} | {t:.2f} | {base / t:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
