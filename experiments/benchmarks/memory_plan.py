"""The memory planner (``python -m kgreason.plan``) against measured peak memory of SmolLM2.

    python experiments/benchmarks/memory_plan.py

Each case runs in a process of its own: SmolLM2-135M-Instruct in float32 on the CPU,
full-parameter or LoRA, update passes (token log-probs of the loss positions, backward,
AdamW step) over random token rows. The second pass (AdamW's moments exist from then on,
as in every later step) runs under torch's profiler with ``profile_memory``, and its
memory timeline gives the peak of the bytes held by tensors, by category (parameters,
optimiser state, activations, gradients, autograd's temporaries): the CPU counterpart of
``torch.cuda.max_memory_allocated``, which is what a card has to hold (the process's RSS
adds the allocator's slack and the libraries). The planner's figure is its DDP plan on one
device of the same case in float32 (``act_bytes=4``, ``frozen_bytes=4``). Prints both,
their ratio, and the parts of each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from experiments.benchmarks.common import json_child  # noqa: E402

#: (name, LoRA rank or 0 for full fine-tuning, rows, tokens a row, loss tokens a row)
CASES = [
    ("full, 4 × 256 (128 trained)", 0, 4, 256, 128),
    ("full, 2 × 1024 (512 trained)", 0, 2, 1024, 512),
    ("LoRA r16, 8 × 512 (256 trained)", 16, 8, 512, 256),
    ("LoRA r16, 4 × 1536 (512 trained)", 16, 4, 1536, 512),
]


def measure(rank: int, rows: int, seq: int, trained: int) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile
    from torch.profiler import _memory_profiler as mp

    from kgreason.models import CausalLMPolicy, LoraSettings

    torch.manual_seed(0)
    policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(r=rank, alpha=2 * rank) if rank else None, bf16=False)
    policy.model.train()
    params = [p for p in policy.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-6)
    ids = torch.randint(10, 40000, (rows, seq))
    mask = torch.ones_like(ids)
    loss_mask = torch.zeros(rows, seq)
    loss_mask[:, seq - trained :] = 1

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        logp, _ = policy.token_logprobs(ids, mask, from_pos=seq - trained, loss_mask=loss_mask)
        (-(logp * loss_mask).sum() / loss_mask.sum()).backward()
        opt.step()

    step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
        step()
    timeline = mp.MemoryProfileTimeline(prof._memory_profile())
    _, sizes = timeline._coalesce_timeline("cpu")
    totals = [sum(row) for row in sizes]
    peak = max(range(len(totals)), key=totals.__getitem__)
    names = {i + 1: (c.name.lower() if c is not None else "unknown") for c, i in mp._CATEGORY_TO_INDEX.items()}
    return {"measured": totals[peak], "parts": {names.get(i, str(i)): v for i, v in enumerate(sizes[peak]) if v}}


def predict(rank: int, rows: int, seq: int, trained: int) -> dict:
    from kgreason.plan import MODEL_SHAPES, Workload, plan

    shape = MODEL_SHAPES["smollm2-135m-instruct"]
    trainable = shape.lora_params(rank, ("q_proj", "k_proj", "v_proj", "o_proj")) if rank else shape.params
    w = Workload(trainable, reference=False, critic=False, rows=rows, seq_len=seq, response_len=trained,
                 rollout_seqs=0, act_bytes=4, frozen_bytes=4)
    p = plan(shape, w, "ddp", 1)
    return {"predicted": p.total, "parts": p.parts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=4, type=int, metavar=("RANK", "ROWS", "SEQ", "TRAINED"))
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    gib = 1024**3
    print("| case | planner GiB | measured GiB | planner / measured | planner's parts (GiB) | measured parts at the peak (GiB) |")
    print("|---|---|---|---|---|---|")
    for name, rank, rows, seq, trained in CASES:
        got = json_child(__file__, "--child", str(rank), str(rows), str(seq), str(trained))
        want = predict(rank, rows, seq, trained)
        parts = ", ".join(f"{k} {v / gib:.2f}" for k, v in want["parts"].items() if v)
        seen = ", ".join(f"{k} {v / gib:.2f}" for k, v in got["parts"].items())
        print(f"| {name} | {want['predicted'] / gib:.2f} | {got['measured'] / gib:.2f} | "
              f"{want['predicted'] / got['measured']:.2f} | {parts} | {seen} |", flush=True)


if __name__ == "__main__":
    main()
