"""Lock-step multi-turn rollout vs the same trajectories one at a time, same engine; and
the engines side by side.

    python experiments/benchmarks/rollout_speed.py [--model smollm2|tiny] [--n 8] [--turns 3] [--tokens 64] [--group] [--bf16 auto|true|false]
        [--checkpoint RUN/checkpoints/policy_sft.pt [--preset demo]]
    python experiments/benchmarks/rollout_speed.py --engines hf,ort,ct2-float32,ct2-int8 [--sizes 1,8,32] [--agreement 200]
        [--checkpoint ...] [--turns 3] [--tokens 96]

``--engines``: the same lock-step rollouts (dev questions, greedy, the KG-R1 action space
on the embedded demo KB) decoded by each engine at each batch size, with tokens/s and the
ratio to the first engine, in one run; the time to convert the weights for CTranslate2 and
ONNX Runtime GenAI is timed apart (RL pays it once per iteration). ``--agreement N`` greedily decodes the
first-turn prompts of ``N`` demo questions (train, then dev) with every engine and reports
how many give exactly the first engine's tokens.

Both sides run the same questions with the same engine and limits; prints generated
tokens per second of each and their ratio, measured side by side in one run. By default
the trajectories are ``n`` different dev questions decoded greedily; ``--group`` runs the
training-time shape instead: ``n`` sampled rollouts of one question (a GRPO group), whose
token counts differ between the sides, so only tokens/s are compared. ``--checkpoint``
loads trained weights (a run's ``policy_sft.pt`` or ``policy.pt``, with the LoRA settings
of the ``--preset`` that made it, merged before decoding): the workload RL and evaluation
run, whose turns are short and even, instead of the untrained model's.

The last lines are the reference for any ``generate``-based lock-step rollout with this
model on this host: bare ``model.generate`` on the same first-turn prompts, exactly
``tokens`` new tokens per row, all rows at once vs one at a time (no env, no stop strings,
no early stops, no shared prefix), into the same in-place KV cache the engine uses; then
the same split into its prefill (one new token) and its decoding (the other ``tokens - 1``),
since prefill is compute-bound on a CPU and gains little from a batch while decoding does.
"""

from __future__ import annotations

import argparse
import time

import torch

from kgreason.data import load_dataset, load_demo_kb
from kgreason.envs import make_env
from kgreason.models import CausalLMPolicy, LoraSettings
from kgreason.models.compat import cache_kwargs
from kgreason.rollout import CT2Engine, Engine, HFEngine, MultiTurnRollout, ORTEngine
from kgreason.rollout.kv_cache import GrowingCache


def bare_generate_ratios(policy: CausalLMPolicy, prompts: list[list[int]], tokens: int) -> dict[str, float]:
    """Batched / one-by-one speed of one left-padded ``generate`` over all prompts:
    ``"all"`` for ``tokens`` new tokens, ``"prefill"`` for one, ``"decode"`` for the rest;
    and the milliseconds of one decoding step with one row and with all of them."""
    pad = policy.tokenizer.pad_token_id

    def gen(rows: list[list[int]], new: int) -> float:
        width = max(map(len, rows))
        ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        t0 = time.perf_counter()
        with torch.no_grad(), policy.autocast():
            policy.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=new,
                                  min_new_tokens=new, do_sample=False, pad_token_id=pad,
                                  **cache_kwargs(GrowingCache()))  # the KV cache HFEngine decodes into
        return time.perf_counter() - t0

    gen(prompts[:1], tokens)  # warm-up
    t_all, t_one = gen(prompts, tokens), sum(gen([p], tokens) for p in prompts)
    p_all, p_one = gen(prompts, 1), sum(gen([p], 1) for p in prompts)
    steps = max(tokens - 1, 1)
    return {"all": t_one / t_all, "prefill": p_one / p_all,
            "decode": (t_one - p_one) / max(t_all - p_all, 1e-9),
            "step_ms_one": (t_one - p_one) / len(prompts) / steps * 1e3,
            "step_ms_all": (t_all - p_all) / steps * 1e3}


def preset_lora(preset: str, method: str = "kg_r1") -> LoraSettings:
    """The LoRA settings ``method=<method> preset=<preset>`` trains with."""
    from kgreason.config import compose_config

    lora = compose_config([f"method={method}", f"preset={preset}"]).model.policy.get("lora")
    if not lora:
        raise SystemExit(f"method={method} preset={preset} sets no model.policy.lora")
    return LoraSettings(**{k: v for k, v in lora.items() if k != "_target_"})


def make_engine(name: str, policy: CausalLMPolicy) -> Engine:
    """``hf``, ``ort`` or ``ct2-<compute type>``."""
    if name == "hf":
        return HFEngine(policy)
    if name == "ort":
        return ORTEngine(policy)
    if name.startswith("ct2-"):
        return CT2Engine(policy, compute_type=name[4:])
    raise SystemExit(f"unknown engine {name!r}: hf, ort, ct2-float32, ct2-int8_float32, ct2-int8")


def compare_engines(policy: CausalLMPolicy, names: list[str], sizes: list[int], turns: int, tokens: int,
                    agreement: int) -> None:
    """Print the engines' lock-step throughput per batch size and their greedy agreement."""
    kb = load_demo_kb()
    dev = load_dataset("demo", split="dev")
    engines = {}
    for name in names:
        t0 = time.perf_counter()
        engines[name] = make_engine(name, policy)
        engines[name].generate([policy.chat_ids([{"role": "user", "content": "hi"}])], max_new_tokens=2)
        print(f"{name}: ready in {time.perf_counter() - t0:.1f} s (conversion and load for ct2 and ort)")
    print(f"\nlock-step greedy rollouts, KG-R1 on the demo KB, H={turns}, {tokens} new tokens/turn")
    print("| batch | " + " | ".join(f"{n} tok/s" for n in names) + " | " +
          " | ".join(f"{n} / {names[0]}" for n in names[1:]) + " |")
    print("|---" * (1 + 2 * len(names) - 1) + "|")
    for size in sizes:
        speeds = []
        for name in names:
            ro = MultiTurnRollout(engines[name], policy.tokenizer, policy.chat_ids, max_new_tokens=tokens)
            samples = [dev[i % len(dev)] for i in range(size)]
            t0 = time.perf_counter()
            _, st = ro.run([make_env("kg_r1", kb, max_turns=turns) for _ in samples], samples, greedy=True)
            speeds.append(st.generated_tokens / (time.perf_counter() - t0))
        print(f"| {size} | " + " | ".join(f"{v:.0f}" for v in speeds) + " | " +
              " | ".join(f"{v / speeds[0]:.2f}x" for v in speeds[1:]) + " |")
    for name in names:
        eng = engines[name]
        if isinstance(eng, CT2Engine | ORTEngine):
            t0 = time.perf_counter()
            with torch.no_grad():  # an RL update: the adapters change in place
                next(p for p in policy.parameters()).add_(0.0)
            eng.generate([policy.chat_ids([{"role": "user", "content": "hi"}])], max_new_tokens=1)
            print(f"{name}: weight sync after an update {time.perf_counter() - t0:.2f} s")
    if agreement:
        questions = (load_dataset("demo", split="train") + dev)[:agreement]
        firsts = [policy.chat_ids(make_env("kg_r1", kb).reset(q)) for q in questions]
        outs = {}
        for name in names:
            outs[name] = []
            for i in range(0, len(firsts), 16):
                outs[name] += [g.token_ids for g in engines[name].generate(firsts[i:i + 16], max_new_tokens=tokens,
                                                                            greedy=True)]
        ref = outs[names[0]]
        for name in names[1:]:
            same = sum(a == b for a, b in zip(ref, outs[name], strict=True))
            print(f"greedy first turns identical to {names[0]}: {name} {same}/{len(ref)} = {same / len(ref):.1%}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2", choices=["smollm2", "tiny"])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--group", action="store_true", help="n sampled rollouts of one question")
    ap.add_argument("--bf16", default="auto", help="auto (bf16 only on AMX CPUs / GPUs), true or false")
    ap.add_argument("--checkpoint", help="trained weights from experiments/run.py (smollm2 only)")
    ap.add_argument("--preset", default="demo", help="the preset whose LoRA settings made --checkpoint")
    ap.add_argument("--engines", help="compare engines instead, e.g. hf,ct2-float32,ct2-int8")
    ap.add_argument("--sizes", default="1,8,32", help="batch sizes for --engines")
    ap.add_argument("--agreement", type=int, default=0, help="greedy agreement over this many demo questions")
    args = ap.parse_args()
    if args.checkpoint and args.model != "smollm2":
        ap.error("--checkpoint holds SmolLM2 weights: use it with --model smollm2")
    torch.manual_seed(0)
    policy = CausalLMPolicy.tiny() if args.model == "tiny" else CausalLMPolicy.from_pretrained(
        bf16=args.bf16, lora=preset_lora(args.preset) if args.checkpoint else None)
    if args.checkpoint:
        policy.load_checkpoint_state(torch.load(args.checkpoint, map_location="cpu"))
        policy.merge_lora()
    if args.engines:
        compare_engines(policy, args.engines.split(","), [int(x) for x in args.sizes.split(",")], args.turns,
                        args.tokens, args.agreement)
        return 0
    kb = load_demo_kb()
    dev = load_dataset("demo", split="dev")
    samples = [dev[0]] * args.n if args.group else dev[: args.n]
    greedy = not args.group
    ro = MultiTurnRollout(HFEngine(policy), policy.tokenizer, policy.chat_ids, max_new_tokens=args.tokens)

    def envs(k):
        return [make_env("kg_r1", kb, max_turns=args.turns) for _ in range(k)]

    ro.run(envs(2), samples[:2], greedy=greedy)  # warm-up
    t0 = time.perf_counter()
    trajs, batched = ro.run(envs(len(samples)), samples, greedy=greedy)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    seq_tokens = 0
    for s in samples:
        _, st = ro.run(envs(1), [s], greedy=greedy)
        seq_tokens += st.generated_tokens
    t_seq = time.perf_counter() - t0
    a, b = batched.generated_tokens / t_batched, seq_tokens / t_seq
    firsts = [policy.chat_ids(make_env("kg_r1", kb).reset(s)) for s in samples]
    ref = bare_generate_ratios(policy, firsts, args.tokens)
    shape = "sampled rollouts of one question" if args.group else "questions, greedy"
    weights = f", weights {args.checkpoint}" if args.checkpoint else ", untrained"
    print(f"model={args.model} ({'bf16' if policy.bf16 else 'float32'}{weights}), {len(samples)} {shape}, "
          f"H={args.turns}, {args.tokens} new tokens/turn")
    print("| rollout | generated tokens | seconds | tokens/s |\n|---|---|---|---|")
    print(f"| lock-step batch | {batched.generated_tokens} | {t_batched:.1f} | {a:.1f} |")
    print(f"| one at a time | {seq_tokens} | {t_seq:.1f} | {b:.1f} |")
    print(f"ratio (lock-step / sequential): {a / b:.2f}x")
    lengths = [[t.n_generated_tokens for t in tr.turns] for tr in trajs]
    row_steps = 0
    for k in range(max(map(len, lengths))):  # turn k: its rows decode as long as its longest
        turn = [ls[k] for ls in lengths if len(ls) > k]
        row_steps += len(turn) * max(turn)
    print(f"lock-step: {batched.generated_tokens} tokens from {row_steps} row-steps (rows that "
          "stopped keep decoding until the longest row of their turn ends); the longest "
          f"trajectory made {max(map(sum, lengths))} of them")
    print(f"bare generate, {len(samples)} rows at once / one at a time, first-turn prompts of "
          f"{min(map(len, firsts))}-{max(map(len, firsts))} tokens: {ref['all']:.2f}x "
          f"(prefill {ref['prefill']:.2f}x, decoding {ref['decode']:.2f}x; a decoding step "
          f"{ref['step_ms_one']:.0f} ms with one row, {ref['step_ms_all']:.0f} ms with {len(samples)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
