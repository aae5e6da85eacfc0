"""One greedy decoding step of the policy, by batch size and length of the kept context.

    python experiments/benchmarks/decode_step.py [--batch 1 8 50] [--context 64 400 700 1000] [--steps 12]

Each row fills a :class:`~kgreason.rollout.kv_cache.GrowingCache` (the cache the engine
decodes into) with ``context`` positions of random keys and values for every one of
``batch`` rows (the values do not change what a step costs; encoding real prompts of
50 × 1,000 tokens would take minutes), then times
``steps`` single-token forward passes (median, the first two left out as warm-up). The
step at the shortest context is the cost of the new tokens themselves (the matrix
products); what the longer contexts add is reading the kept keys and values, which is
what a long multi-turn episode pays on every token it decodes — the floor under the
KnowCoder-A1 evaluations (docs/methods/knowcoder_a1.md). Then, for the largest batch and
context, what continuing a turn costs: row selection, the packing of padding columns and
the first write after them (a reallocation), three copies of the cache, against
:meth:`~kgreason.rollout.kv_cache.GrowingCache.take`, one copy into a buffer with room.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from kgreason.models import CausalLMPolicy
from kgreason.models.compat import cache_kwargs, output_cache
from kgreason.rollout.engine import pack_columns, packed_columns
from kgreason.rollout.kv_cache import GrowingCache


def filled_cache(model: torch.nn.Module, batch: int, context: int, gen: torch.Generator) -> GrowingCache:
    """A cache holding ``context`` positions of random keys and values for ``batch`` rows."""
    cfg = model.config
    shape = (batch, cfg.num_key_value_heads, context, cfg.hidden_size // cfg.num_attention_heads)
    dtype = next(model.parameters()).dtype
    cache = GrowingCache()
    for layer in range(cfg.num_hidden_layers):  # what is cached does not change a step's cost
        cache.update(torch.randn(shape, generator=gen, dtype=dtype), torch.randn(shape, generator=gen, dtype=dtype),
                     layer)
    return cache


def continue_s(model: torch.nn.Module, batch: int, context: int, one_copy: bool) -> tuple[float, torch.Tensor]:
    """Seconds to continue a turn of a ``batch`` × ``context`` cache (rows kept in order,
    padding columns dropped, one new position written), and the last layer's keys after it.

    ``one_copy``: :meth:`GrowingCache.take` (what the engine does); otherwise row selection,
    :func:`pack_columns` and the reallocating first write — three copies."""
    cache = filled_cache(model, batch, context, torch.Generator().manual_seed(0))
    mask = torch.ones(batch, context, dtype=torch.long)
    mask[:, : context // 10] = 0  # left padding in every row, and more in every other row
    mask[::2, context // 10 : context // 5] = 0
    rows = torch.arange(batch)
    lay = cache.layers[0]
    new = lay.keys.new_zeros(batch, lay.keys.shape[1], 1, lay.keys.shape[-1])
    t0 = time.perf_counter()
    if one_copy:
        cache.take(rows, packed_columns(mask))
    else:
        cache.batch_select_indices(rows)
        pack_columns(cache, torch.zeros_like(mask), mask)
    for j in range(len(cache.layers)):
        cache.update(new, new, j)
    return time.perf_counter() - t0, cache.layers[-1].keys


def step_ms(model: torch.nn.Module, batch: int, context: int, steps: int) -> float:
    """Median milliseconds of one decoding step of ``batch`` rows after ``context`` tokens."""
    gen = torch.Generator().manual_seed(0)
    cache = filled_cache(model, batch, context, gen)
    nxt = torch.randint(100, 20_000, (batch, 1), generator=gen)
    times = []
    with torch.inference_mode():
        for _ in range(steps):
            t0 = time.perf_counter()
            out = model(input_ids=nxt, use_cache=True, **cache_kwargs(cache))
            times.append(time.perf_counter() - t0)
            cache, nxt = output_cache(out), out.logits[:, -1:].argmax(-1)
    return 1000 * statistics.median(times[2:])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8, 50])
    ap.add_argument("--context", type=int, nargs="+", default=[64, 400, 700, 1000])
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    policy = CausalLMPolicy.from_pretrained()
    model = policy.model.eval()
    cfg = model.config
    kv_bytes = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads) \
        * next(model.parameters()).element_size()
    print(f"SmolLM2-135M, {'bf16' if policy.bf16 else 'float32'}; one greedy step, {torch.get_num_threads()} threads\n")
    print("| rows | context | ms a step | kept keys and values | × the shortest context |\n|---|---|---|---|---|")
    for b in args.batch:
        base = None
        for c in args.context:
            ms = step_ms(model, b, c, args.steps)
            base = base or ms
            print(f"| {b} | {c} | {ms:.0f} | {b * c * kv_bytes / 1e9:.2f} GB | {ms / base:.2f}× |", flush=True)
    b, c = max(args.batch), max(args.context)
    print(f"\nContinuing a turn of {b} rows × {c} positions ({b * c * kv_bytes / 1e9:.2f} GB), three repeats:\n")
    print("| three copies s | one copy s | speed-up | same keys |\n|---|---|---|---|")
    for _ in range(3):
        three, k3 = continue_s(model, b, c, one_copy=False)
        one, k1 = continue_s(model, b, c, one_copy=True)
        print(f"| {three:.2f} | {one:.2f} | {three / one:.2f}× | {torch.equal(k3, k1)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
