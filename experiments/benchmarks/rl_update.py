"""One LoRA GRPO update of SmolLM2 (16 × 768 tokens): kgreason vs TRL's GRPOTrainer.

    python experiments/benchmarks/rl_update.py [--seqs 16] [--len 768] [--mini 4] [--side both|all|precision|...]

Both sides do the same work on the same model (bf16 base weights, LoRA r=16 on the
attention projections of every layer, bf16 autocast), the same random token batch and
the same split of each sequence into prompt (first third) and policy tokens: old and
reference log-probs (adapters disabled), then one clipped-surrogate step with k3 KL
(β = 0.01) per mini-batch, with gradient clipping and AdamW. The TRL side calls
``GRPOTrainer``'s own log-prob and loss code on these tensors, so generation is left out
on both sides. Each side runs in its own child process, so each peak RSS (``ru_maxrss``)
is its own. TRL is only needed here: ``pip install -e '.[bench]'``.

``--side all`` adds both sides in float32 (float32 weights, no autocast) to the default
comparison: equal precision twice, and each side's default (``bf16: auto`` for
kgreason, which on an AMX or GPU host is bf16 weights, as TRL's bf16 side).

``--side precision`` runs kgreason's update twice instead, float32 weights both times:
in float32, and under bf16 autocast (``objective.bf16=true``: the RL stage's log-prob
passes and updates in bf16, rollouts in float32).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import tempfile
import time

import torch
from common import json_child

LR = 1e-5
BETA = 0.01


def batch(seqs: int, length: int, vocab: int,
          device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Token ids, loss mask, advantages and the first policy position, on ``device``.

    Shapes: ids and mask ``[seqs, length]``; advantages ``[seqs, length]`` (one value a
    sequence, repeated over its tokens).
    """
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, vocab, (seqs, length), generator=g)
    start = length // 3
    mask = torch.zeros(seqs, length)
    mask[:, start:] = 1  # the policy's share of a multi-turn sequence
    adv = torch.randn(seqs, generator=g)[:, None].expand(-1, length)
    return ids.to(device), mask.to(device), adv.to(device), start


def kgreason_update(policy, ids: torch.Tensor, mask: torch.Tensor, adv: torch.Tensor, start: int, mini: int,
                    opt: torch.optim.Optimizer, amp=None) -> None:
    """kgreason's side of the comparison: old and reference log-probs (adapters disabled),
    then one clipped-surrogate step with k3 KL per mini-batch, clipped gradients — as
    ``RLLitModule`` makes it: the first mini-batch's old log-probs come from its own
    forward, every pass projects only the loss positions (``loss_mask``).

    ``amp`` is the autocast context of the training passes (``policy.autocast(...)``);
    ``experiments/gpu/check.py`` times the same update on a GPU.
    """
    from kgreason.rl import policy_loss

    amp = amp if amp is not None else contextlib.nullcontext()
    attn = torch.ones_like(ids)
    params = [p for p in policy.parameters() if p.requires_grad]
    seqs = ids.shape[0]
    with torch.no_grad(), amp:
        # as the trainer does: the first mini-batch's old log-probs are its own forward's
        # (nothing has moved before the first step), the others' a pass before that step
        old = torch.cat([ids.new_zeros(min(mini, seqs), ids.shape[1], dtype=torch.float32)] + [
            policy.token_logprobs(ids[i:i + mini], attn[i:i + mini], from_pos=start, loss_mask=mask[i:i + mini])[0]
            for i in range(mini, seqs, mini)])
        ref = torch.cat([policy.reference_logprobs(ids[i:i + mini], attn[i:i + mini], from_pos=start,
                                                   loss_mask=mask[i:i + mini]) for i in range(0, seqs, mini)])
    for i in range(0, seqs, mini):
        sl = slice(i, i + mini)
        with amp:
            lp, ent = policy.token_logprobs(ids[sl], attn[sl], with_entropy=True, entropy_grad=False, from_pos=start,
                                            loss_mask=mask[sl])
        loss, _ = policy_loss(lp, lp.detach() if i == 0 else old[sl], adv[sl], mask[sl], ref_logp=ref[sl],
                              kl_coef=BETA, entropy=ent)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()


def run_kgreason(args: argparse.Namespace) -> float:
    from kgreason.models import CausalLMPolicy

    # the precision sides keep float32 weights; the TRL comparison keeps the host's choice
    policy = CausalLMPolicy.from_pretrained(bf16=False if args.side.startswith("kgreason-") else "auto")
    ids, mask, adv, start = batch(args.seqs, args.len, len(policy.tokenizer))
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=LR)
    t0 = time.perf_counter()
    kgreason_update(policy, ids, mask, adv, start, args.mini, opt,
                    amp=policy.autocast(args.side == "kgreason-bf16-autocast"))
    return time.perf_counter() - t0


def run_trl(args: argparse.Namespace) -> float:
    try:
        from datasets import Dataset
        from peft import LoraConfig
        from trl import GRPOConfig, GRPOTrainer
    except ImportError as e:  # the bench extra is optional
        raise SystemExit(f"TRL side needs the bench extra (pip install -e '.[bench]'): {e}") from e
    from kgreason.models.loading import load_causal_lm, load_tokenizer

    float32 = args.side == "trl-float32"
    tok = load_tokenizer("smollm2-135m-instruct")
    model = load_causal_lm(dtype=torch.float32 if float32 else torch.bfloat16)
    ids, mask, adv, start = batch(args.seqs, args.len, len(tok))
    with tempfile.TemporaryDirectory() as out:
        cfg = GRPOConfig(output_dir=out, use_cpu=True, bf16=not float32, per_device_train_batch_size=args.mini,
                         num_generations=args.mini, beta=BETA, loss_type="grpo", learning_rate=LR,
                         max_grad_norm=1.0, gradient_checkpointing=False, report_to="none",
                         max_completion_length=args.len - start, logging_steps=10 ** 6)
        trainer = GRPOTrainer(
            model=model, reward_funcs=lambda completions, **_: [0.0] * len(completions), args=cfg,
            train_dataset=Dataset.from_dict({"prompt": ["q"] * args.seqs}), processing_class=tok,
            peft_config=LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                   target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
        net = trainer.model
        net.train()
        trainer.current_gradient_accumulation_steps = 1  # set by Trainer.train(), which we bypass
        params = [p for p in net.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(params, lr=LR)
        prompt, completion = ids[:, :start], ids[:, start:]
        ones = torch.ones_like(prompt)
        keep = args.len - start
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=not float32):
            with torch.no_grad():
                old = trainer._get_per_token_logps_and_entropies(net, ids, torch.ones_like(ids), keep,
                                                                 batch_size=args.mini)[0]
                with net.disable_adapter():
                    ref = trainer._get_per_token_logps_and_entropies(net, ids, torch.ones_like(ids), keep,
                                                                     batch_size=args.mini)[0]
            for i in range(0, args.seqs, args.mini):
                sl = slice(i, i + args.mini)
                inputs = {"prompt_ids": prompt[sl], "prompt_mask": ones[sl], "completion_ids": completion[sl],
                          "completion_mask": mask[sl, start:], "advantages": adv[sl, 0],
                          "old_per_token_logps": old[sl], "ref_per_token_logps": ref[sl],
                          "num_items_in_batch": mask[sl, start:].sum()}
                loss = trainer.compute_loss(net, inputs)
                opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                opt.step()
        return time.perf_counter() - t0


def child(side: str, args: argparse.Namespace) -> dict:
    return json_child(__file__, "--side", side, "--seqs", str(args.seqs), "--len", str(args.len),
                      "--mini", str(args.mini), "--json")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", type=int, default=16)
    ap.add_argument("--len", type=int, default=768)
    ap.add_argument("--mini", type=int, default=4)
    ap.add_argument("--side", default="both",
                    choices=["both", "all", "precision", "kgreason", "trl", "kgreason-float32", "trl-float32",
                             "kgreason-bf16-autocast"])
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.side not in ("both", "all", "precision"):
        secs = (run_trl if args.side.startswith("trl") else run_kgreason)(args)
        res = {"side": args.side, "seconds": secs, "tokens_per_s": args.seqs * args.len / secs,
               "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2}
        print(json.dumps(res) if args.json else res)
        return 0
    pairs = {"both": [("kgreason", "trl")], "precision": [("kgreason-bf16-autocast", "kgreason-float32")],
             "all": [("kgreason", "trl"), ("kgreason-float32", "trl-float32")]}[args.side]
    rows = {side: child(side, args) for pair in pairs for side in pair}
    print(f"LoRA GRPO update, SmolLM2-135M, {args.seqs} x {args.len} tokens, mini-batches of {args.mini}")
    print("| implementation | seconds | training tokens/s | peak RSS GB |\n|---|---|---|---|")
    for r in rows.values():
        print(f"| {r['side']} | {r['seconds']:.1f} | {r['tokens_per_s']:.0f} | {r['rss_gb']:.2f} |")
    for a, b in pairs:
        print(f"ratio ({a} / {b} tokens/s): {rows[a]['tokens_per_s'] / rows[b]['tokens_per_s']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
