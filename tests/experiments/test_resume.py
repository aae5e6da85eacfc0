"""A run killed with SIGKILL mid-RL and resumed equals an uninterrupted run (smoke preset)."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from kgreason.config import run_dir_of
from kgreason.errors import ConfigError
from kgreason.training.resume import ResumingCSVLogger, drop_jsonl_rows, rl_progress

ROOT = Path(__file__).resolve().parents[2]
ARGS = ("method=kg_r1", "preset=smoke", "rl.iterations=4", "rl.checkpoint_every=1")
TIMING = ("time", "latency", "per_s")


def cmd(*args: str) -> list[str]:
    return [sys.executable, str(ROOT / "experiments" / "run.py"), *ARGS, *args]


def strip(o):
    """``o`` without its wall-clock figures."""
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not any(t in k for t in TIMING) and not k.endswith("_s")}
    return [strip(v) for v in o] if isinstance(o, list) else o


def trajectories(run: Path) -> list[dict]:
    return [strip(json.loads(x)) for x in (run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]


def metrics(run: Path) -> list[dict]:
    with (run / "rl" / "metrics.csv").open(newline="") as f:
        return [strip(r) for r in csv.DictReader(f)]


def train_steps(run: Path) -> set[int]:
    path = run / "trajectories.jsonl"
    if not path.exists():
        return set()
    steps = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # being written
            continue
        if row["stage"] == "train":
            steps.add(row["step"])
    return steps


def test_sigkill_mid_rl_then_resume_equals_an_uninterrupted_run(tmp_path):
    whole = tmp_path / "whole"
    p = subprocess.run(cmd(f"hydra.run.dir={whole}"), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]

    killed = tmp_path / "killed"
    proc = subprocess.Popen(cmd(f"hydra.run.dir={killed}"), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        # killed right after iteration 2's trajectories are flushed: its checkpoint may or
        # may not be written yet, and either way the resumed run must not repeat or lose it
        while 2 not in train_steps(killed):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not (killed / "results.json").exists()
    ckpt = killed / "checkpoints" / "rl" / "last.ckpt"
    done = rl_progress(ckpt)
    assert 1 <= done <= 3

    # no hydra.run.dir: the run goes on in the folder the checkpoint belongs to
    p = subprocess.run(cmd(f"resume={ckpt}"), cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads((killed / "results.json").read_text())["resumed"]["after_iteration"] == done

    a, b = trajectories(whole), trajectories(killed)
    assert [(r["stage"], r["step"], r["sample_id"]) for r in a] == [(r["stage"], r["step"], r["sample_id"]) for r in b]
    # same questions, same samples, same rewards, in the same order; the sampler's log-probs
    # to float32 rounding: CPU kernels do not promise bit-equal sums in two processes (an
    # untrained evaluation, before any kill, has differed by 2e-6 between the two runs)
    la, lb = ([r.pop("sampler_logprobs", None) for r in x] for x in (a, b))
    assert a == b
    assert all((p is None) == (q is None) for p, q in zip(la, lb, strict=True))
    assert [p for p in la if p] == [pytest.approx(q, abs=1e-4) for q in lb if q]
    assert metrics(whole) == metrics(killed)
    assert [float(r["train/iteration"]) for r in metrics(killed) if r["train/iteration"]] == [0, 1, 2, 3]
    # the whole checkpoint: the cold start's adapters (merged before RL) and RL's, alike
    pa = torch.load(whole / "checkpoints" / "policy.pt")
    pb = torch.load(killed / "checkpoints" / "policy.pt")
    assert len(pa["adapters"]) == len(pb["adapters"]) == 2
    for sa, sb in zip(pa["adapters"], pb["adapters"], strict=True):
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    res_a, res_b = (strip(json.loads((r / "results.json").read_text())) for r in (whole, killed))
    assert res_a["eval"] == res_b["eval"]
    assert res_a["sft_trajectories"] == res_b["sft_trajectories"] > 0
    assert sorted(x.name for x in (killed / "checkpoints" / "rl").iterdir()) == ["last.ckpt"]


def test_resume_drops_only_what_came_after_the_checkpoint(tmp_path):
    path = tmp_path / "t.jsonl"
    rows = [{"stage": "eval/untrained", "step": -1}, {"stage": "train", "step": 0}, {"stage": "train", "step": 1}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"stage": "tra')  # cut by the kill
    assert drop_jsonl_rows(path, lambda r: r["stage"] == "train" and r["step"] >= 1) == 2
    assert [json.loads(x) for x in path.read_text().splitlines()] == rows[:2]

    (tmp_path / "rl").mkdir()
    (tmp_path / "rl" / "metrics.csv").write_text("step,train/iteration,train/f1\n1,0,0.5\n3,1,0.25\n5,2,0.0\n")
    logger = ResumingCSVLogger(tmp_path, name="rl", version="", start=2)
    logger.log_metrics({"train/iteration": 2.0, "train/f1": 1.0}, step=6)
    logger.save()
    with (tmp_path / "rl" / "metrics.csv").open() as f:
        assert [(r["train/iteration"], r["train/f1"]) for r in csv.DictReader(f)] == [
            ("0", "0.5"), ("1", "0.25"), ("2.0", "1.0")]


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    bad = tmp_path / "x.ckpt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ConfigError, match="not a readable checkpoint"):
        rl_progress(bad)
    torch.save({"state_dict": {}}, bad)
    with pytest.raises(ConfigError, match="not an RL checkpoint"):
        rl_progress(bad)
    run = tmp_path / "run"
    (run / "checkpoints" / "rl").mkdir(parents=True)
    (run / "config.yaml").write_text("seed: 0\n")
    assert run_dir_of(run / "checkpoints" / "rl" / "last.ckpt", "new") == str(run.resolve())
    assert run_dir_of(bad, "new") == "new"  # not inside a run folder: a new one
