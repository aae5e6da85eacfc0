"""The host's limits and how close each decoding engine comes to them, in one run.

    python experiments/benchmarks/limits.py [--sizes 1,8,32] [--tokens 64] [--prompt 300]

Prints, for this host:

- matrix-product throughput (GFLOP/s) in float32 and bf16, at 2048³ and at the model's
  own decoding shape ([batch, 576] × [576, 1536], SmolLM2-135M's MLP);
- memory bandwidth (GB/s) read by a sum over a 1 GiB tensor (decoding one token reads
  every weight once, so this is what bounds batch-1 decoding);
- SmolLM2-135M's bounds per decoding step in float32: the bandwidth floor (its weight
  bytes over the bandwidth) and the compute floor (2 FLOPs a parameter a row over the
  float32 GFLOP/s), as milliseconds and tokens/s;
- each engine's measured step at each batch size — transformers ``generate`` (what
  ``engine=hf`` runs), CTranslate2 and ONNX Runtime GenAI, all in float32 on the same
  weights, exactly ``tokens`` new tokens after a ``prompt``-token prompt, prefill left
  out — as ms a step, tokens/s and the ratio to the bandwidth floor.

The engines decode the bare model here (no stop strings, no environment): the ceiling of
what each runtime gives. ``rollout_speed.py --engines`` measures the engines on the
project's multi-turn workload.
"""

from __future__ import annotations

import argparse
import platform
import time

import torch

from kgreason.models import CausalLMPolicy


def best_seconds(fn, repeat: int = 3) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def matmul_gflops(m: int, k: int, n: int, dtype: torch.dtype) -> float:
    a, b = torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)
    reps = max(1, int(2e9 / (2 * m * k * n)))  # about 2 GFLOP a timing

    def run():
        for _ in range(reps):
            torch.mm(a, b)

    return 2 * m * k * n * reps / best_seconds(run) / 1e9


def read_bandwidth_gbs(gib: float = 1.0) -> float:
    x = torch.ones(int(gib * 2**30 / 4), dtype=torch.float32)
    return x.numel() * 4 / best_seconds(lambda: x.sum()) / 1e9


def hf_step_ms(policy: CausalLMPolicy, prompt: list[int], batch: int, tokens: int) -> float:
    model = policy.model
    ids = torch.tensor([prompt] * batch)

    def gen(new: int) -> None:
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=new,
                           min_new_tokens=new, do_sample=False, pad_token_id=policy.tokenizer.eos_token_id)

    # decoding alone: the whole run minus the run that only encodes the prompt
    return (best_seconds(lambda: gen(tokens)) - best_seconds(lambda: gen(1))) / (tokens - 1) * 1e3


def ct2_step_ms(generator, tokenizer, prompt: list[int], batch: int, tokens: int) -> float:
    toks = [tokenizer.convert_ids_to_tokens(prompt)] * batch

    def gen(new: int) -> None:
        generator.generate_batch(toks, max_length=new, min_length=new, sampling_topk=1,
                                 include_prompt_in_result=False)

    return (best_seconds(lambda: gen(tokens)) - best_seconds(lambda: gen(1))) / (tokens - 1) * 1e3


def ort_step_ms(model, prompt: list[int], batch: int, tokens: int) -> float:
    import numpy as np
    import onnxruntime_genai as og

    ids = np.array([prompt] * batch, dtype=np.int32)

    def gen(new: int) -> None:
        params = og.GeneratorParams(model)
        params.set_search_options(max_length=len(prompt) + new, min_length=len(prompt) + new, batch_size=batch,
                                  do_sample=False)
        g = og.Generator(model, params)
        g.append_tokens(ids)
        for _ in range(new):
            g.generate_next_token()

    return (best_seconds(lambda: gen(tokens)) - best_seconds(lambda: gen(1))) / (tokens - 1) * 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,32")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=300, help="prompt length in tokens")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(f"host: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
          f"torch {torch.__version__}")
    f32, b16 = matmul_gflops(2048, 2048, 2048, torch.float32), matmul_gflops(2048, 2048, 2048, torch.bfloat16)
    s32, s16 = matmul_gflops(32, 576, 1536, torch.float32), matmul_gflops(32, 576, 1536, torch.bfloat16)
    bw = read_bandwidth_gbs()
    print("| measure | float32 | bf16 |\n|---|---|---|")
    print(f"| matmul 2048³ GFLOP/s | {f32:.0f} | {b16:.0f} |")
    print(f"| matmul [32,576]×[576,1536] GFLOP/s | {s32:.0f} | {s16:.0f} |")
    print(f"| read bandwidth GB/s | {bw:.1f} | |")

    policy = CausalLMPolicy.from_pretrained(lora=None, bf16=False)
    params = sum(p.numel() for p in policy.model.parameters())  # tied embeddings counted once
    floor_ms = params * 4 / (bw * 1e9) * 1e3
    print(f"\nSmolLM2-135M: {params / 1e6:.1f} M parameters, {params * 4 / 1e6:.0f} MB in float32")
    print(f"bandwidth floor {floor_ms:.1f} ms a step ({1e3 / floor_ms:.0f} tokens/s at batch 1); compute floor "
          + ", ".join(f"batch {b}: {2 * params * b / (f32 * 1e9) * 1e3:.1f} ms" for b in sizes))

    prompt = (policy.tokenizer("The knowledge graph says that " * 60, add_special_tokens=False)["input_ids"]
              * 2)[: args.prompt]
    engines = {"hf (transformers generate)": lambda b: hf_step_ms(policy, prompt, b, args.tokens)}
    try:
        from kgreason.rollout import CT2Engine

        ct2 = CT2Engine(policy, compute_type="float32")._current()
        engines["CTranslate2 float32"] = lambda b: ct2_step_ms(ct2, policy.tokenizer, prompt, b, args.tokens)
    except Exception as e:  # an engine that is not installed is left out, and said so
        print(f"CTranslate2 left out: {e}")
    try:
        from kgreason.rollout import ORTEngine

        ort = ORTEngine(policy)._current()
        engines["ONNX Runtime GenAI float32"] = lambda b: ort_step_ms(ort, prompt, b, args.tokens)
    except Exception as e:
        print(f"ONNX Runtime GenAI left out: {e}")

    print(f"\ndecoding steps after a {len(prompt)}-token prompt, {args.tokens} new tokens, float32, prefill left out")
    print("| engine | " + " | ".join(f"batch {b}: ms a step | tokens/s" for b in sizes) + " | batch 1 / floor |")
    print("|---" * (2 + 2 * len(sizes)) + "|")
    for name, step in engines.items():
        ms = [step(b) for b in sizes]
        cells = " | ".join(f"{m:.1f} | {b * 1e3 / m:.0f}" for b, m in zip(sizes, ms, strict=True))
        ratio = f"{ms[0] / floor_ms:.2f}x" if sizes[0] == 1 else "-"
        print(f"| {name} | {cells} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
