"""Sampled decoding with ``generate``'s ``torch.multinomial`` against the engine's
inverse-CDF draw (:mod:`kgreason.rollout.sampling`), side by side in one run.

    python experiments/benchmarks/sampling.py [--sizes 1,8,32] [--tokens 64] [--draws 20000]

For each batch size: the first-turn prompts of that many KG-R1 demo dev questions, decoded
by SmolLM2 (float32) for exactly ``tokens`` new tokens a row (no early stop), once with
``do_sample=True`` and once with ``do_sample=False`` and the engine's sampling processors,
into the engine's KV cache; the better of two alternating repeats each, milliseconds a
step and the ratio. Then both samplers draw ``draws`` tokens from the model's next-token
distribution after the first prompt, and the total variation distance of each
histogram to the exact probabilities is printed with what sampling noise alone gives
(the expected distance of a multinomial draw of that size, estimated from 20 more draws).
"""

from __future__ import annotations

import argparse
import time

import torch

from kgreason.compose import build_parts
from kgreason.config import compose_config
from kgreason.models.compat import cache_kwargs
from kgreason.rollout.kv_cache import GrowingCache
from kgreason.rollout.sampling import InverseCdfSampler, sampling_processors


def timed_generate(model, ids: torch.Tensor, mask: torch.Tensor, tokens: int, pad: int, ours: bool) -> float:
    """Seconds to sample exactly ``tokens`` new tokens for every row."""
    from transformers import LogitsProcessorList

    kw = ({"do_sample": False, "logits_processor": LogitsProcessorList(sampling_processors())} if ours
          else {"do_sample": True, "temperature": 1.0, "top_p": 1.0, "top_k": 0})
    t0 = time.perf_counter()
    with torch.no_grad():
        model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                       pad_token_id=pad, **cache_kwargs(GrowingCache()), **kw)
    return time.perf_counter() - t0


def histogram_distance(draws: torch.Tensor, probs: torch.Tensor) -> float:
    """Total variation distance between the draws' histogram and ``probs``."""
    hist = torch.bincount(draws, minlength=probs.numel()).double() / draws.numel()
    return 0.5 * float((hist - probs.double()).abs().sum())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--draws", type=int, default=20000)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    torch.manual_seed(0)
    p = build_parts(compose_config(["method=kg_r1", "preset=demo", "model.policy.bf16=false"]))
    policy, model = p.policy, p.policy.model.eval()
    pad = policy.tokenizer.pad_token_id
    prompts = [p.eval_rollout.chat_ids(p.make_env().reset(s)) for s in p.dev[:max(sizes)]]
    print(f"SmolLM2-135M float32, {torch.get_num_threads()} threads; {args.tokens} sampled tokens a row")
    print(f"{'rows':>5} {'multinomial ms/step':>20} {'inverse CDF ms/step':>20} {'ratio':>6}")
    for b in sizes:
        rows = prompts[:b]
        width = max(map(len, rows))
        ids = torch.tensor([[pad] * (width - len(r)) + list(r) for r in rows])
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        timed_generate(model, ids[:1], mask[:1], 2, pad, True)  # warm-up
        best = {False: float("inf"), True: float("inf")}
        for _ in range(2):
            for ours in (False, True):
                best[ours] = min(best[ours], timed_generate(model, ids, mask, args.tokens, pad, ours))
        ms = {k: v / args.tokens * 1e3 for k, v in best.items()}
        print(f"{b:>5} {ms[False]:>20.1f} {ms[True]:>20.1f} {ms[False] / ms[True]:>5.2f}x")

    with torch.no_grad():
        logits = model(input_ids=torch.tensor([list(prompts[0])]), logits_to_keep=1).logits[0, -1].float()
    probs = torch.softmax(logits, -1)
    n = args.draws
    multi = torch.multinomial(probs.expand(n, -1), 1).squeeze(1) if n <= 2000 else torch.cat(
        [torch.multinomial(probs.expand(2000, -1), 1).squeeze(1) for _ in range(-(-n // 2000))])[:n]
    sampler = InverseCdfSampler()
    ours = torch.cat([sampler(None, logits.expand(min(2000, n - i), -1)).argmax(-1) for i in range(0, n, 2000)])
    noise = sum(histogram_distance(torch.multinomial(probs, n, replacement=True), probs) for _ in range(20)) / 20
    print(f"\n{n} draws from the next-token distribution after the first prompt "
          f"(top token p = {float(probs.max()):.3f}): total variation to the exact probabilities")
    print(f"  multinomial {histogram_distance(multi, probs):.4f}   inverse CDF {histogram_distance(ours, probs):.4f}"
          f"   sampling noise alone ≈ {noise:.4f}")


if __name__ == "__main__":
    main()
