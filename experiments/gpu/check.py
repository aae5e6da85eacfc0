"""The first run on a GPU, in one go: the ``gpu`` tests, a smoke run, throughput beside the
same machine's CPU, and RL's share where compute is not the limit.

    bash experiments/gpu/check.sh                        # on a lent GPU machine (docs/gpu.md)
    python experiments/gpu/check.py --dry-run --out DIR  # every step on the CPU, tiny model, a few steps

Each step is timed, and ``figures.json`` and ``summary.md`` in ``--out`` are rewritten
after every step, so a run cut short keeps what it measured:

1. ``env``: torch, the device, its bf16 support.
2. ``gpu_tests``: ``pytest -m gpu`` over the ``tests/**/test_*gpu*.py`` files that mark
   tests ``gpu`` (log: ``gpu_tests.log``).
3. ``smoke``: ``experiments/run.py method=kg_r1 preset=smoke trainer=gpu model=smollm2``,
   every stage with the real SmolLM2 (log: ``smoke.log``).
4. ``throughput`` on the GPU: the lock-step multi-turn rollouts' tokens/s of ``engine=hf``
   (KG-R1 on the demo KG, sampled at T = 1) at batch 8, 64 and 256, the RL update's
   tokens/s (old and reference log-probs, then a clipped step per mini-batch) and the
   time of an RL iteration, of the demo preset and of the shape step 5 trains with.
5. ``rl_share``: KG-R1 on the demo KG, its cold start, then as many RL iterations of 16
   questions × 8 rollouts as the minutes left allow (sized by step 4's iteration, two
   minutes kept for step 6); Hit@1 and F1 on all 341 dev questions after the cold start
   and after RL (log: ``rl_share.log``).
6. the same throughput figures on the machine's CPU (batch 8 and 64), beside the GPU's,
   if time is left: RL's share comes first.

``--dry-run`` runs the same code on the CPU with the tiny random model, two batch sizes
and a couple of iterations: what ``tests/experiments/test_gpu_check.py`` runs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT, ROOT / "experiments" / "benchmarks"):  # kgreason, and rl_update's update
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

#: the RL stage's shape where a GPU sets the budget: questions an iteration × rollouts each
SHARE_SHAPE = ("curriculum.batch_size=16", "rollout.n_rollouts=8")
#: what the minutes left must still hold after RL: the start, the cold start, two evaluations
SHARE_RESERVE_S = {"gpu": 150.0, "cpu": 30.0}
#: kept back from RL's share for the CPU's side of the throughput table
CPU_SIDE_S = 120.0


def commit() -> str:
    """The commit the tree came from: the packer's record where ``.git`` did not travel."""
    manifest = ROOT / ".gpu" / "manifest.json"
    if manifest.is_file():
        return json.loads(manifest.read_text()).get("commit", "unknown")
    from pack import git_commit  # the packer's own reading, beside this script

    return git_commit()


class Check:
    """The figures of one run, written out after every step."""

    def __init__(self, out: Path, dry_run: bool, minutes: float):
        self.out, self.dry_run = out, dry_run
        self.t0 = time.monotonic()
        self.budget_s = minutes * 60
        self.figures: dict[str, Any] = {"commit": commit(), "dry_run": dry_run, "budget_min": minutes}
        out.mkdir(parents=True, exist_ok=True)

    def left_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.t0)

    def step(self, name: str, fn, *args) -> None:
        t = time.monotonic()
        try:
            self.figures[name] = fn(*args)
        except Exception as e:  # noqa: BLE001 - a failed step is a figure too; the next steps still run
            self.figures[name] = {"error": f"{type(e).__name__}: {e}"}
        self.figures[name]["wall_s"] = round(time.monotonic() - t, 1)
        self.write()

    def write(self) -> None:
        (self.out / "figures.json").write_text(json.dumps(self.figures, indent=2, default=str))
        (self.out / "summary.md").write_text(summary(self.figures))


def environment(device: str) -> dict[str, Any]:
    import torch

    from kgreason.models.precision import bf16_support

    info: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__, "device": device,
                            "cpu_threads": torch.get_num_threads(), "bf16": bf16_support(device).describe()}
    if device == "cuda":
        info.update(gpu=torch.cuda.get_device_name(0), cuda=torch.version.cuda,
                    gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1))
    for name in ("transformers", "peft", "lightning", "torch_geometric"):
        try:
            info[name] = __import__(name).__version__
        except ImportError:
            info[name] = None
    return info


def run_logged(cmd: list[str], log: Path, timeout_s: float) -> tuple[int, float]:
    """Run ``cmd`` from the repository root, its output into ``log``; (exit code, seconds)."""
    t = time.monotonic()
    with log.open("w") as f:
        try:
            rc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, timeout=max(timeout_s, 1)).returncode
        except subprocess.TimeoutExpired:
            rc = 124
    return rc, round(time.monotonic() - t, 1)


def gpu_tests(out: Path, timeout_s: float) -> dict[str, Any]:
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*gpu*.py")
                   if "pytest.mark.gpu" in p.read_text(encoding="utf-8"))
    log = out / "gpu_tests.log"
    rc, wall = run_logged([sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rfEs", "-p", "no:cacheprovider",
                           *files], log, timeout_s)
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    result = next((line.strip("= ") for line in reversed(lines) if " in " in line and
                   any(w in line for w in ("passed", "failed", "skipped", "error"))), "no summary line")
    failed = [line.split(" ", 1)[1] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return {"files": files, "exit": rc, "result": result, "failed": failed, "test_wall_s": wall}


def results_of(run: Path) -> dict[str, Any]:
    path = run / "results.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def smoke(out: Path, gpu: bool, timeout_s: float) -> dict[str, Any]:
    run = out.parent / f"{out.name}-runs" / "smoke"
    args = ["method=kg_r1", "preset=smoke", f"hydra.run.dir={run}"]
    args += ["trainer=gpu", "model=smollm2"] if gpu else ["trainer=cpu"]
    rc, wall = run_logged([sys.executable, "experiments/run.py", *args], out / "smoke.log", timeout_s)
    res = results_of(run)
    ev = res.get("eval", {})
    return {"command": "python experiments/run.py " + " ".join(a for a in args if not a.startswith("hydra.")),
            "exit": rc, "run_wall_s": wall, "device": res.get("device"), "precision": res.get("precision"),
            "f1": {k: round(v["overall"]["f1"], 3) for k, v in ev.items()},
            "cost_wall_s": {k: round(v["wall_s"], 1) for k, v in res.get("cost", {}).get("stages", {}).items()}}


def throughput(devices: list[str], model: str, sizes: dict[str, list[int]], tokens: int, update: tuple[int, int, int],
               iteration_overrides: dict[str, list[list[str]]]) -> dict[str, Any]:
    """Per device: rollout tokens/s at each batch size, RL update tokens/s, RL iteration seconds."""
    import rl_update
    import torch

    from kgreason.data import load_dataset, load_demo_kb
    from kgreason.envs import make_env
    from kgreason.models import CausalLMPolicy, LoraSettings
    from kgreason.rollout import HFEngine, MultiTurnRollout

    kb = load_demo_kb()
    dev = load_dataset("demo", split="dev")
    out: dict[str, Any] = {"model": model, "tokens_per_turn": tokens, "turns": 3}
    for device in devices:
        if model == "tiny":
            policy = CausalLMPolicy.tiny(lora=LoraSettings(r=4, alpha=8))
        else:  # the demo preset's policy: LoRA on the top 12 layers, bf16 where the device has it
            policy = CausalLMPolicy.from_pretrained(lora=LoraSettings(top_layers=12))
        policy.to(device)
        row: dict[str, Any] = {"bf16": policy.bf16, "rollout_tok_s": {}}
        engine = HFEngine(policy)
        torch.manual_seed(0)
        engine.generate([policy.chat_ids([{"role": "user", "content": "hello"}])], max_new_tokens=4)  # warm-up
        for size in sizes[device]:
            samples = [dev[i % len(dev)] for i in range(size)]
            ro = MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new_tokens=tokens)
            t = time.perf_counter()
            _, st = ro.run([make_env("kg_r1", kb, max_turns=3) for _ in samples], samples)
            row["rollout_tok_s"][str(size)] = round(st.generated_tokens / (time.perf_counter() - t), 1)
        rows, length, mini = update
        ids, mask, adv, start = rl_update.batch(rows, length, len(policy.tokenizer), device)
        opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=rl_update.LR)
        # the update experiments/benchmarks/rl_update.py times on the CPU; a first pass over
        # one mini-batch warms the kernels up
        rl_update.kgreason_update(policy, ids[:mini], mask[:mini], adv[:mini], start, mini, opt)
        sync(device)
        t = time.perf_counter()
        rl_update.kgreason_update(policy, ids, mask, adv, start, mini, opt)
        sync(device)
        row["update_tok_s"] = round(rows * length / (time.perf_counter() - t), 1)
        row["update_shape"] = f"{rows} x {length} tokens, mini-batches of {mini}"
        del policy, engine, opt
        for overrides in iteration_overrides[device]:
            row.setdefault("iteration_s", {})[" ".join(overrides)] = rl_iteration_s(device, overrides)
        out[device] = row
    return out


def sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def rl_iteration_s(device: str, overrides: list[str]) -> float:
    """Seconds of an RL iteration (rollouts + update) of the composed run: the second of two
    on a GPU (the first pays for kernel start-up), the only one on the CPU."""
    import lightning as L
    from torch.utils.data import DataLoader

    from kgreason.compose import build_parts
    from kgreason.config import compose_config
    from kgreason.training import RLLitModule, UniformStream
    from kgreason.training.devices import place_policy, run_device

    cfg = compose_config([*overrides, f"trainer={'gpu' if device == 'cuda' else 'cpu'}",
                          f"rl.iterations={2 if device == 'cuda' else 1}"])
    p = build_parts(cfg)
    place_policy(p.policy, run_device(cfg.trainer))
    seen: list[float] = []

    class Record(L.Callback):
        def on_train_batch_end(self, trainer, *args) -> None:  # noqa: ANN001 - Lightning's signature
            seen.append(float(trainer.callback_metrics["train/iteration_s"]))

    trainer = L.Trainer(accelerator=cfg.trainer.accelerator, devices=1, max_steps=-1, max_epochs=1, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[Record()])
    trainer.fit(RLLitModule(p.policy, p.source, p.make_env, p.objective),
                DataLoader(UniformStream(p.train, batch_size=cfg.curriculum.batch_size), batch_size=None))
    return round(seen[-1], 2)


def rl_share(out: Path, gpu: bool, iteration_s: float, left_s: float) -> dict[str, Any]:
    """KG-R1 on the demo KG: cold start, then RL sized to the time left; both scored."""
    run = out.parent / f"{out.name}-runs" / "rl_share"
    side = "gpu" if gpu else "cpu"
    iterations = max(1, min(int((left_s - SHARE_RESERVE_S[side]) / max(iteration_s, 1e-3)), 400 if gpu else 2))
    if gpu:
        args = ["method=kg_r1", "preset=demo", "trainer=gpu", *SHARE_SHAPE, "data.eval_limit=null",
                "eval.batch_size=128"]
    else:
        args = ["method=kg_r1", "preset=smoke", "trainer=cpu"]
    args += ["eval.untrained=false", "eval.after_sft=true", f"rl.iterations={iterations}",
             f"rl.checkpoint_every={iterations}", f"hydra.run.dir={run}"]
    # the GPU's time is the budget (a minute over for the last evaluation); a rehearsal may take its time
    rc, wall = run_logged([sys.executable, "experiments/run.py", *args], out / "rl_share.log",
                          left_s + 60 if gpu else max(left_s, 300))
    res = results_of(run)
    ev = res.get("eval", {})
    fig: dict[str, Any] = {"command": "python experiments/run.py " + " ".join(a for a in args if not a.startswith("hydra.")),
                           "exit": rc, "run_wall_s": wall, "iterations": iterations,
                           "iteration_s_planned": iteration_s}
    for tag in ("sft", "trained"):
        if tag in ev:
            o = ev[tag]["overall"]
            fig[tag] = {"n": o["n"], "hit1": round(o["hit1"], 3), "f1": round(o["f1"], 3)}
    if "sft" in fig and "trained" in fig:
        fig["rl_share_hit1"] = round(fig["trained"]["hit1"] - fig["sft"]["hit1"], 3)
        fig["rl_share_f1"] = round(fig["trained"]["f1"] - fig["sft"]["f1"], 3)
        before, after = (rows_by_id(run / f"eval_{t}.jsonl") for t in ("sft", "trained"))
        fig["wrong_to_right"] = sum(before[i]["hit1"] < after[i]["hit1"] for i in before if i in after)
        fig["right_to_wrong"] = sum(before[i]["hit1"] > after[i]["hit1"] for i in before if i in after)
    metrics = run / "rl" / "metrics.csv"
    if metrics.is_file():
        import csv

        its = [float(r["train/iteration_s"]) for r in csv.DictReader(metrics.open()) if r.get("train/iteration_s")]
        if its:
            fig["iteration_s_mean"] = round(sum(its) / len(its), 2)
    fig["cost_wall_s"] = {k: round(v["wall_s"], 1) for k, v in res.get("cost", {}).get("stages", {}).items()}
    return fig


def rows_by_id(path: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in map(json.loads, path.read_text().splitlines())} if path.is_file() else {}


def summary(f: dict[str, Any]) -> str:
    """The figures as the Markdown docs/gpu.md quotes."""
    lines = [f"# GPU check ({'dry run, CPU' if f.get('dry_run') else 'GPU'}), commit {f.get('commit')}", ""]
    env = f.get("env", {})
    lines += [f"- machine: {env.get('gpu', 'CPU')} ({env.get('gpu_memory_gib', '-')} GiB), {env.get('cpu_threads')} CPU "
              f"threads; torch {env.get('torch')} (CUDA {env.get('cuda', '-')}), transformers {env.get('transformers')}; "
              f"bf16: {env.get('bf16')}"]
    t = f.get("gpu_tests", {})
    lines += [f"- gpu tests: {t.get('result', t.get('error'))} ({t.get('wall_s')} s)"]
    lines += [f"  - failed: {x}" for x in t.get("failed", [])]
    s = f.get("smoke", {})
    lines += [f"- smoke run: exit {s.get('exit', s.get('error'))} in {s.get('wall_s')} s, device {s.get('device')}, "
              f"precision {s.get('precision')}, dev F1 {s.get('f1')}: `{s.get('command')}`", ""]
    tp = f.get("throughput", {})
    devices = [d for d in ("cuda", "cpu") if d in tp]
    if devices:
        lines += [f"## Throughput ({tp.get('model')}, KG-R1 on the demo KG, {tp.get('tokens_per_turn')} new tokens a "
                  "turn, sampled)", "", "| figure | " + " | ".join(devices) + (" | GPU / CPU |" if len(devices) == 2 else " |"),
                  "|---" * (len(devices) + 1 + (len(devices) == 2)) + "|"]
        sizes = sorted({int(b) for d in devices for b in tp[d]["rollout_tok_s"]})
        for b in sizes:
            vals = [tp[d]["rollout_tok_s"].get(str(b)) for d in devices]
            lines.append(table_row(f"rollout tok/s, batch {b}", vals))
        lines.append(table_row(f"RL update tok/s ({tp[devices[0]].get('update_shape')})",
                               [tp[d].get("update_tok_s") for d in devices]))
        keys = sorted({k for d in devices for k in tp[d].get("iteration_s", {})})
        for k in keys:
            lines.append(table_row(f"RL iteration s ({k})", [tp[d].get("iteration_s", {}).get(k) for d in devices],
                                   lower_is_better=True))
        lines.append("")
    r = f.get("rl_share", {})
    if r:
        lines += ["## RL's share", "", f"`{r.get('command')}` (exit {r.get('exit', r.get('error'))}, {r.get('wall_s')} s; "
                  f"{r.get('iterations')} iterations, {r.get('iteration_s_mean')} s each)", "",
                  "| after | n | Hit@1 | F1 |", "|---|---|---|---|"]
        for tag, label in (("sft", "cold start"), ("trained", "cold start + RL")):
            if tag in r:
                lines.append(f"| {label} | {r[tag]['n']} | {r[tag]['hit1']} | {r[tag]['f1']} |")
        if "rl_share_hit1" in r:
            lines += ["", f"RL's share: Hit@1 {r['rl_share_hit1']:+.3f}, F1 {r['rl_share_f1']:+.3f} "
                      f"({r['wrong_to_right']} wrong → right, {r['right_to_wrong']} right → wrong)"]
    return "\n".join(lines) + "\n"


def table_row(label: str, vals: list[Any], lower_is_better: bool = False) -> str:
    cells = ["-" if v is None else str(v) for v in vals]
    if len(vals) == 2 and all(isinstance(v, (int, float)) and v for v in vals):
        ratio = vals[1] / vals[0] if lower_is_better else vals[0] / vals[1]
        cells.append(f"{ratio:.1f}x")
    elif len(vals) == 2:
        cells.append("-")
    return f"| {label} | " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "outputs/gpu-check")))
    ap.add_argument("--dry-run", action="store_true", help="the CPU, the tiny model, a few steps")
    ap.add_argument("--minutes", type=float, default=8.5, help="the device time the script plans for")
    args = ap.parse_args()
    import torch

    gpu = not args.dry_run
    if gpu and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU machine, or --dry-run for the CPU rehearsal")
    check = Check(args.out.resolve(), args.dry_run, args.minutes if gpu else 3.0)
    check.step("env", environment, "cuda" if gpu else "cpu")
    check.step("gpu_tests", gpu_tests, check.out, 240.0)
    check.step("smoke", smoke, check.out, gpu, 180.0)
    # the GPU's figures first, then RL's share, then the CPU's beside them in what time is left
    if gpu:
        demo, share = ["method=kg_r1", "preset=demo"], ["method=kg_r1", "preset=demo", *SHARE_SHAPE]
        check.step("throughput", throughput, ["cuda"], "smollm2", {"cuda": [8, 64, 256]}, 64, (32, 512, 8),
                   {"cuda": [demo, share]})
        planned = check.figures["throughput"].get("cuda", {}).get("iteration_s", {}).get(" ".join(share), 20.0)
        check.step("rl_share", rl_share, check.out, gpu, planned, check.left_s() - CPU_SIDE_S)
        cpu_side = (["cpu"], "smollm2", {"cpu": [8, 64]}, 64, (32, 512, 8), {"cpu": [demo]})
    else:
        smoke_cfg = ["method=kg_r1", "preset=smoke"]
        check.step("rl_share", rl_share, check.out, gpu, 5.0, check.left_s())
        cpu_side = (["cpu"], "tiny", {"cpu": [2, 4]}, 8, (4, 64, 2), {"cpu": [smoke_cfg]})
    if check.left_s() > 0 or not gpu:
        check.step("throughput_cpu", throughput, *cpu_side)
        cpu = check.figures.pop("throughput_cpu")
        cpu["cpu_wall_s"] = cpu.pop("wall_s")
        check.figures.setdefault("throughput", {}).update(cpu)
        check.write()
    print(summary(check.figures))
    failed = [k for k, v in check.figures.items() if isinstance(v, dict) and (v.get("error") or v.get("exit"))]
    return 1 if failed or check.figures["gpu_tests"].get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
