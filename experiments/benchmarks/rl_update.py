"""Training tokens/s and peak RSS of one LoRA GRPO update of SmolLM2 (16 × 768 tokens).

    python experiments/benchmarks/rl_update.py [--seqs 16] [--len 768] [--mini 4]

The update is kgreason's own path: old and reference log-probs (adapters disabled), then
mini-batch clipped-surrogate steps with k3 KL under bf16 autocast. Peak RSS is read from
the kernel (``ru_maxrss``) after the step.
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from kgreason.models import CausalLMPolicy
from kgreason.rl import policy_loss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seqs", type=int, default=16)
    ap.add_argument("--len", type=int, default=768)
    ap.add_argument("--mini", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    policy = CausalLMPolicy.from_pretrained()
    vocab = len(policy.tokenizer)
    ids = torch.randint(0, vocab, (args.seqs, args.len))
    attn = torch.ones_like(ids)
    mask = torch.zeros(args.seqs, args.len)
    mask[:, args.len // 3:] = 1  # the policy's share of a multi-turn sequence
    adv = torch.randn(args.seqs, 1).expand(-1, args.len)
    opt = torch.optim.AdamW(list(policy.parameters()), lr=1e-5)
    t0 = time.perf_counter()
    with torch.no_grad():
        old = torch.cat([policy.token_logprobs(ids[i:i + args.mini], attn[i:i + args.mini])[0]
                         for i in range(0, args.seqs, args.mini)])
        ref = torch.cat([policy.reference_logprobs(ids[i:i + args.mini], attn[i:i + args.mini])
                         for i in range(0, args.seqs, args.mini)])
    for i in range(0, args.seqs, args.mini):
        sl = slice(i, i + args.mini)
        lp, ent = policy.token_logprobs(ids[sl], attn[sl], with_entropy=True, entropy_grad=False)
        loss, _ = policy_loss(lp, old[sl], adv[sl], mask[sl], ref_logp=ref[sl], kl_coef=0.01, entropy=ent)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(policy.parameters()), 1.0)
        opt.step()
    secs = time.perf_counter() - t0
    rss_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 ** 2
    tokens = args.seqs * args.len
    print(f"LoRA GRPO update, SmolLM2-135M, {args.seqs} x {args.len} tokens, mini-batches of {args.mini}")
    print(f"| seconds | training tokens/s | peak RSS GB |\n|---|---|---|\n| {secs:.1f} | {tokens / secs:.0f} | {rss_gb:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
