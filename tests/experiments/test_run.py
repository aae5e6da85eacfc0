"""experiments/run.py end to end with the smoke preset (tiny model, demo KG)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kgreason.training.resume import rl_progress

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: int = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def test_smoke_run_writes_every_artefact(tmp_path):
    out = tmp_path / "smoke"
    p = run("method=kg_r1", "preset=smoke", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    # the smoke preset's turns and episodes fit what its cold start teaches (method_preset/<method>_smoke.yaml)
    assert "cold-start lengths: all" in p.stdout + p.stderr
    for f in ("config.yaml", "results.json", "results.md", "trajectories.jsonl", "training_curves.png",
              "sft/metrics.csv", "rl/metrics.csv", "checkpoints/policy.pt", "checkpoints/policy_sft.pt",
              "checkpoints/rl/last.ckpt", "eval_untrained.jsonl", "eval_trained.jsonl"):
        assert (out / f).exists(), f
    res = json.loads((out / "results.json").read_text())
    assert set(res["eval"]) == {"untrained", "trained"}
    assert res["split"] == {"dataset": "demo", "train": "train", "eval": "dev", "eval_role": "tune"}
    assert "dev F1" in p.stdout
    # the questions were looked up in the KB before training: the demo's all belong to it
    assert res["data_check"]["checked"] > 0 and res["data_check"]["examples"] == []
    # what each stage cost; training is the cold start and RL, not the evaluations
    bill = res["cost"]
    assert list(bill["stages"]) == ["start", "eval/untrained", "cold_start", "rl", "eval/trained"]
    assert all(s["wall_s"] > 0 and s["cpu_s"] > 0 for s in bill["stages"].values())
    assert bill["training"]["cpu_s"] == pytest.approx(bill["stages"]["cold_start"]["cpu_s"] + bill["stages"]["rl"]["cpu_s"])
    md = (out / "results.md").read_text()
    assert "| cold_start |" in md and "CPU-minutes" in p.stdout
    assert md.startswith("# Results: method=kg_r1 preset=smoke kb=demo data=demo")  # what tells runs apart
    noise = [n for n in ("FutureWarning", "GPU available", "Tip:", "validation_step", "LeafSpec", "past_key_values",
                         "/-2") if n in p.stdout + p.stderr]
    assert not noise, noise  # nothing a user cannot act on
    bars = (p.stdout + p.stderr).replace("\r", "\n")  # true totals: RL iterations, evaluation turns (4 × H=3)
    assert any(line.startswith("RL iterations: 100%") and "| 2/2 " in line for line in bars.splitlines())
    assert any(line.startswith("eval (trained, 4 questions): 100%") and "| 12/12 " in line for line in bars.splitlines())
    stages = {json.loads(line)["stage"] for line in (out / "trajectories.jsonl").read_text().splitlines()}
    assert stages == {"eval/untrained", "train", "eval/trained"}
    assert "rollout:\n  _target_: kgreason.training.LinearExperience.build\n  n_rollouts: 2" in (
        out / "config.yaml").read_text()  # preset over method
    # the Lightning checkpoint carries the run's config; the loggers get it too
    hp = torch.load(out / "checkpoints" / "rl" / "last.ckpt", weights_only=False)["hyper_parameters"]
    assert hp["choices"]["method"] == "kg_r1" and hp["config"]["rl"]["iterations"] == 2
    assert hp["rl"]["advantage"] == "kg_r1_turn"
    assert "choices:" in (out / "sft" / "hparams.yaml").read_text()
    # transformers / vLLM format: the merged model (the tiny model has no pretrained base for an adapter)
    ex = subprocess.run([sys.executable, "-m", "kgreason.models.export", str(out / "checkpoints" / "policy.pt")],
                        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert ex.returncode == 0, ex.stderr[-2000:]
    assert (out / "export" / "merged" / "config.json").exists() and "merged:" in ex.stdout
    gen = json.loads((out / "export" / "merged" / "generation_config.json").read_text())
    assert gen["stop_strings"] == ["</kg-query>", "</answer>"]  # the run's action space's

    # evaluate the saved policy, then resume RL from the Lightning checkpoint
    ev = tmp_path / "eval"
    p = run("method=kg_r1", "preset=smoke", "stage=eval", f"checkpoint={out / 'checkpoints' / 'policy.pt'}",
            f"hydra.run.dir={ev}")
    assert p.returncode == 0, p.stderr[-2000:]
    full = json.loads((ev / "results.json").read_text())["eval"]["checkpoint"]
    # an evaluation killed after its first 2 rows (the third cut off mid-write) goes on with eval.resume
    rows = (ev / "eval_checkpoint.jsonl").read_text().splitlines()
    (ev / "eval_checkpoint.jsonl").write_text("\n".join(rows[:2]) + "\n" + rows[2][:20])
    p = run("method=kg_r1", "preset=smoke", "stage=eval", "eval.resume=true",
            f"checkpoint={out / 'checkpoints' / 'policy.pt'}", f"hydra.run.dir={ev}")
    assert p.returncode == 0, p.stderr[-2000:]
    again = (ev / "eval_checkpoint.jsonl").read_text().splitlines()
    assert again[:2] == rows[:2] and len(again) == len(rows) == 4
    assert sorted(json.loads(r)["id"] for r in again) == sorted(json.loads(r)["id"] for r in rows)
    assert "2 of 4 questions already scored" in p.stderr + p.stdout
    assert any(line.startswith("eval (checkpoint, 2 questions): 100%") and "| 6/6 " in line
               for line in (p.stdout + p.stderr).replace("\r", "\n").splitlines())
    resumed = json.loads((ev / "results.json").read_text())["eval"]["checkpoint"]
    assert resumed["overall"]["n"] == full["overall"]["n"] == 4  # the report covers the kept rows and the new ones
    # rows of another evaluation set are refused, naming the setting
    (ev / "eval_checkpoint.jsonl").write_text('{"id": "not-a-demo-question"}\n')
    p = run("method=kg_r1", "preset=smoke", "stage=eval", "eval.resume=true",
            f"checkpoint={out / 'checkpoints' / 'policy.pt'}", f"hydra.run.dir={ev}")
    assert p.returncode != 0 and "eval.resume: 1 of the 1 rows" in p.stderr + p.stdout
    rs = tmp_path / "resume"
    p = run("method=kg_r1", "preset=smoke", "stage=rl", "rl.iterations=3",
            f"resume={out / 'checkpoints' / 'rl' / 'last.ckpt'}", f"hydra.run.dir={rs}")
    assert p.returncode == 0, p.stderr[-2000:]
    steps = {json.loads(line)["step"] for line in (rs / "trajectories.jsonl").read_text().splitlines()}
    assert steps == {2}  # iterations 0 and 1 were restored, only the third ran

    # resumed: the bar starts at the iterations done and still counts to the run's total
    assert any(line.startswith("RL iterations: 100%") and "| 3/3 " in line
               for line in (p.stdout + p.stderr).replace("\r", "\n").splitlines())

    # RL from the SFT weights alone: they become the reference, as after SFT in stage=all
    rl = tmp_path / "rl_from_sft"
    p = run("method=kg_r1", "preset=smoke", "stage=rl", "rl.iterations=1",
            f"checkpoint={out / 'checkpoints' / 'policy_sft.pt'}", f"hydra.run.dir={rl}")
    assert p.returncode == 0, p.stderr[-2000:]
    sft = torch.load(out / "checkpoints" / "policy_sft.pt")["adapters"]
    stack = torch.load(rl / "checkpoints" / "policy.pt")["adapters"]
    assert len(sft) == 1 and len(stack) == 2  # SFT folded in, RL trained fresh adapters
    assert all(torch.equal(v, stack[0][k]) for k, v in sft[0].items())
    # and its curriculum reads the SFT losses that run wrote, as that run's RL stage did
    losses = json.loads((out / "sft_losses.json").read_text())
    took = json.loads((rl / "results.json").read_text())["sft_losses_from"]
    assert took == {"file": str(out / "sft_losses.json"), "questions": len(losses)} and losses


def test_multirun_ablation_grid_over_reward_and_objective(tmp_path):
    p = run("-m", "method=kg_r1", "preset=smoke", "reward=kg_r1,f1", "objective=grpo,kg_r1", "sft.steps=0",
            "eval.untrained=false", f"hydra.sweep.dir={tmp_path}", timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    runs = sorted(d for d in tmp_path.iterdir() if d.is_dir() and "reward=" in d.name)
    assert len(runs) == 4
    for d in runs:
        cols = (d / "rl" / "metrics.csv").read_text().splitlines()[0]
        assert ("reward/kg_r1/retrieval" in cols) == ("reward=kg_r1" in d.name)
        assert "reward/global" in cols
        cfg = (d / "config.yaml").read_text()
        assert ("advantage: kg_r1_turn" in cfg) == ("objective=kg_r1" in d.name)
    # the sweep's own table: one row per job, each with its trained score
    table = (tmp_path / "results.md").read_text().splitlines()
    assert table[2].startswith("| job | trained F1 | trained Hit@1 | training CPU-min | n | status |")
    rows = [r for r in table if r.startswith("| ") and "reward=" in r]
    assert sorted(r.split(" | ")[0][2:] for r in rows) == sorted(d.name for d in runs)
    assert all(r.endswith("| 4 | done |") for r in rows)


def test_multirun_ablation_over_the_rollout_group(tmp_path):
    """ISP/DTPO with linear against tree rollouts, under a reward both can score (F1)."""
    p = run("-m", "method=isp_dtpo", "preset=smoke", "rollout=linear,tree", "reward=f1", "objective=grpo",
            "sft.steps=0", "stage=rl", "rl.iterations=1", f"hydra.sweep.dir={tmp_path}", timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    runs = {d.name: d for d in tmp_path.iterdir() if d.is_dir() and "rollout=" in d.name}
    assert len(runs) == 2
    for name, d in runs.items():
        cols = (d / "rl" / "metrics.csv").read_text().splitlines()[0]
        assert ("train/effective_branches" in cols) == ("rollout=tree" in name) and "reward/f1" in cols


def test_isp_dtpo_smoke_run_trains_on_trees(tmp_path):
    out = tmp_path / "isp"
    p = run("method=isp_dtpo", "preset=smoke", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    # the smoke preset's turns and episodes fit what its cold start teaches (method_preset/<method>_smoke.yaml)
    assert "cold-start lengths: all" in p.stdout + p.stderr
    cfg = (out / "config.yaml").read_text()
    assert "DecomposedColdStart" in cfg and "TreeExperience.build" in cfg and "advantage: tree_step" in cfg
    assert "  n_rollouts: 2" in cfg and "  max_turns: 3" in cfg  # K and depth (the env's turns) from the preset
    cols = (out / "rl" / "metrics.csv").read_text().splitlines()[0]
    for key in ("train/effective_branches", "train/pruning_rate", "reward/progress", "train/step_samples"):
        assert key in cols, key
    assert set(json.loads((out / "results.json").read_text())["eval"]) == {"untrained", "trained"}
    stages = {json.loads(line)["stage"] for line in (out / "trajectories.jsonl").read_text().splitlines()}
    assert stages == {"eval/untrained", "train", "eval/trained"}


def test_the_code_variants_of_isp_dtpo_compose(tmp_path):
    out = tmp_path / "code"
    p = run("method=isp_dtpo", "preset=smoke", "objective=tree_step_code", "reward=isp_dtpo_code",
            "rollout.dedup_failures=true", "sft.steps=0", "stage=rl", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    cfg = (out / "config.yaml").read_text()
    assert "clip_high: 0.24" in cfg and "group_size: 6" in cfg and "mode: code" in cfg


def test_knowcoder_a1_smoke_run_reports_its_cold_start(tmp_path):
    out = tmp_path / "kc"
    p = run("method=knowcoder_a1", "preset=smoke", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    # the smoke preset's turns and episodes fit what its cold start teaches (method_preset/<method>_smoke.yaml)
    assert "cold-start lengths: all" in p.stdout + p.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["sft_trajectories"] > 0 and res["cold_start_report"]["scripted"]
    assert set(res["eval"]) == {"untrained", "trained"} and "direct" in res["eval"]["trained"]["overall"]
    cols = (out / "rl" / "metrics.csv").read_text().splitlines()[0]
    for key in ("reward/format", "reward/f0.5", "reward/f1", "train/distinct_final_calls", "train/kl"):
        assert key in cols, key
    cfg = (out / "config.yaml").read_text()
    assert "on_policy: true" in cfg and "kl_coef: 0.001" in cfg and "until_step: 1" in cfg  # smoke's switch


def test_kbqa_r1_smoke_run_reports_its_cold_start(tmp_path):
    out = tmp_path / "kbqa"
    p = run("method=kbqa_r1", "preset=smoke", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    # the smoke preset's turns and episodes fit what its cold start teaches (method_preset/<method>_smoke.yaml)
    assert "cold-start lengths: all" in p.stdout + p.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["sft_trajectories"] > 0 and res["cold_start_report"]["scripted"]
    assert set(res["eval"]) == {"untrained", "trained"}
    cols = (out / "rl" / "metrics.csv").read_text().splitlines()[0]
    for key in ("reward/f1", "reward/format", "train/kl", "train/clip_frac"):
        assert key in cols, key
    cfg = (out / "config.yaml").read_text()
    assert "clip_high: 0.28" in cfg and "norm_by_std: false" in cfg and "tau_high: 0.95" in cfg
    first = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    assert "Available Actions:" in first["prompt"][0]["content"]
    assert "Reference actions" not in (out / "trajectories.jsonl").read_text()


def test_the_kbqa_r1_ablations_compose():
    from hydra.utils import instantiate

    from kgreason.config import compose_config

    cfg = compose_config(["method=kbqa_r1", "reward=kbqa_r1_code", "objective=kbqa_r1_code",
                          "env.space.gate.enabled=false", "env.space.gate.messages=code", "env.space.actions=webqsp"])
    space = instantiate(cfg.env, kb=None).space()
    assert not space.gate.enabled and space.gate.messages == "code" and "Count" not in space.allowed
    assert [c.key for c in instantiate(cfg.reward).components] == ["f1", "format", "tags"]


def test_kg_reasoner_smoke_run_trains_its_ranker_first(tmp_path):
    out = tmp_path / "kgr"
    p = run("method=kg_reasoner", "preset=smoke", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    # the smoke preset's turns and episodes fit what its cold start teaches (method_preset/<method>_smoke.yaml)
    assert "cold-start lengths: all" in p.stdout + p.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["ranker"]["examples"] > 0 and "mrr" in res["ranker"]["held_out"]
    assert (out / "ranker.pt").is_file() and res["sft_trajectories"] > 0
    assert res["cold_start_report"]["written"] == res["sft_trajectories"]
    cols = (out / "rl" / "metrics.csv").read_text().splitlines()[0]
    for key in ("reward/retrieval", "reward/format", "reward/answer"):
        assert key in cols, key
    cfg = (out / "config.yaml").read_text()
    # the paper's classic GRPO (std-normalised, KL to the cold-start policy)
    assert "kl_coef: 0.001" in cfg and "norm_by_std: true" in cfg and "_target_: kgreason.rankers.GATEntityRanker" in cfg
    first = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    assert "<search> entity </search>" in first["prompt"][0]["content"]
    # every question SFT trained on has its loss on record, for the hard-case sampler
    from kgreason.data import load_dataset

    losses = json.loads((out / "sft_losses.json").read_text())
    assert 0 < len(losses) <= res["sft_trajectories"] and all(v > 0 for v in losses.values())
    assert set(losses) <= {s.id for s in load_dataset("demo", split="train")}
    assert "hard-case resampling:" in p.stderr + p.stdout and "HardCasesStream" in cfg
    # evaluating the checkpoint, in any folder, reloads the ranker its policy trained with
    # instead of training another (which, on another KG, would fit one to the KG scored on)
    elsewhere = tmp_path / "eval"
    again = run("method=kg_reasoner", "preset=smoke", "stage=eval", f"checkpoint={out / 'checkpoints' / 'policy.pt'}",
                f"hydra.run.dir={elsewhere}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((elsewhere / "results.json").read_text())["ranker"]["loaded"] == str(out / "ranker.pt")
    a, b = torch.load(out / "ranker.pt"), torch.load(elsewhere / "ranker.pt")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_kg_reasoner_ablations_compose():
    from hydra.utils import instantiate

    from kgreason.config import compose_config

    cfg = compose_config(["method=kg_reasoner", "ranker=dense", "ranker_training=none", "env.space.search_tag=kg-search"])
    assert cfg.ranker._target_ == "kgreason.rankers.DenseRanker"
    assert instantiate(cfg.env, kb=None, ranker=None).space().stop_sequences[0] == "</kg-search>"
    cfg = compose_config(["method=kg_reasoner", "ranker.aggregate=false"])
    assert instantiate(cfg.ranker).aggregate is False
    assert compose_config(["method=kg_reasoner", "curriculum=uniform"]).curriculum._target_.endswith("UniformStream")
    assert cfg.rollout.n_rollouts == 16 and cfg.objective.kl_coef == 0.001  # the paper's classic GRPO
    assert cfg.objective.advantage_kwargs.norm_by_std
    code = compose_config(["method=kg_reasoner", "objective=kg_reasoner_code"]).objective
    assert code.kl_coef == 0.0 and not code.advantage_kwargs.norm_by_std  # the official code's
    assert [c.key for c in instantiate(cfg.reward).components] == ["retrieval", "format", "answer"]
    full = compose_config(["method=kg_reasoner", "preset=full"])  # paper scale: compose only
    assert full.rollout.n_rollouts == 16 and full.model.policy._target_.endswith("from_pretrained")
    demo = compose_config(["method=kg_reasoner", "preset=demo"])
    assert demo.env.space.top_k == 5 and demo.sft.steps == 150 and demo.ranker_training.context == 8


def test_tensorboard_and_offline_wandb_loggers_beside_the_csv(tmp_path):
    p = run("-m", "method=kg_r1", "preset=smoke", "logger=tensorboard,wandb", "rl.iterations=1", "eval.untrained=false",
            f"hydra.sweep.dir={tmp_path}", timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    tb, wb = (next(tmp_path.glob(f"*logger={name},*")) for name in ("tensorboard", "wandb"))
    for stage in ("sft", "rl"):
        assert (tb / stage / "metrics.csv").exists() and (wb / stage / "metrics.csv").exists()
        assert list((tb / stage).glob("events.out.tfevents.*")), stage
    offline = sorted((wb / "wandb").glob("offline-run-*"))
    assert len(offline) == 2  # one W&B run per stage, not the SFT run continued by RL
    assert all(list(r.glob("*.wandb")) for r in offline)
    assert f"| {wb.name} | 0." in (tmp_path / "results.md").read_text()


@pytest.mark.parametrize("kb", ["demo", "shared_oxigraph"])
def test_ddp_smoke_run_splits_each_batch_over_two_processes(tmp_path, kb):
    out = tmp_path / "ddp"
    p = run("method=kg_r1", "preset=smoke", "trainer=ddp", "trainer.devices=2", "eval.untrained=false",
            f"kb={kb}", f"hydra.run.dir={out}",
            env={k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"})
    assert p.returncode == 0, p.stderr[-2000:]
    second = (out / "train_ddp_process_1.log").read_text()
    # the two processes split the cores instead of each starting a thread a core
    cores = len(os.sched_getaffinity(0))
    assert f"2 CPU processes share {cores} cores: {max(1, cores // 2)} compute thread(s) each" in (out / "run.log").read_text()
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in p.stdout + p.stderr + second
    if kb == "shared_oxigraph":  # one server: the first process serves it, the second connects
        first = (out / "run.log").read_text()
        assert "KB: serving demo at" in first and "KB: connected to the run's server at" in second
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    train = [r for r in rows if r["stage"] == "train"]
    # 2 iterations × 2 questions × N=2, the two processes' rows appended whole to one file
    assert len(train) == 8 and all(sum(r["sample_id"] == x["sample_id"] and r["step"] == x["step"] for x in train) == 2
                                   for r in train)
    assert len({r["sample_id"] for r in train}) == 4
    # only the first process evaluates and writes the results
    assert sum(r["stage"] == "eval/trained" for r in rows) == 4
    assert torch.load(out / "checkpoints" / "rl" / "last.ckpt", weights_only=False)["rl_iteration"] == 2
    assert json.loads((out / "results.json").read_text())["eval"]["trained"]["overall"]["n"] == 4


def assert_half_held_in_each_process(out: Path, says: str) -> None:
    """A two-process sharded smoke run in ``out``: each process logged (``says`` … the
    policy's weights) holding half of them at SFT and at RL, and the first wrote every
    process's 8 training trajectories and the 4 evaluated after."""
    for log in ("run.log", "train_ddp_process_1.log"):  # SFT's shards, then RL's, in each process
        held = re.findall(says + r" (\d+) of the policy's (\d+) weights", (out / log).read_text())
        assert len(held) == 2 and all(abs(int(a) / int(b) - 0.5) < 0.01 for a, b in held), log
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert sum(r["stage"] == "train" for r in rows) == 8 and sum(r["stage"] == "eval/trained" for r in rows) == 4


def test_fsdp_smoke_run_shards_the_policy_and_evaluates_it_whole(tmp_path):
    """trainer=fsdp: both stages sharded over two processes (each holds half of the
    weights), rollouts on the gathered policy, checkpoints as folders of shards; a killed
    run resumes, also in another number of processes."""
    out = tmp_path / "fsdp"
    # an entropy bonus: a gradient even where the tiny model's rewards are all 0
    p = run("method=kg_r1", "preset=smoke", "trainer=fsdp", "eval.untrained=false", "objective.entropy_coef=0.01",
            f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert_half_held_in_each_process(out, "this process holds")
    last = out / "checkpoints" / "rl" / "last.ckpt"  # torch.distributed.checkpoint's folder: a file of shards a process
    assert rl_progress(last) == 2 and len(list(last.glob("*.distcp"))) == 2 and (last / ".metadata").is_file()
    saved = torch.load(out / "checkpoints" / "policy.pt")["adapters"]
    assert len(saved) == 2 and all(type(v) is torch.Tensor for v in saved[-1].values())  # SFT's, merged; RL's
    assert any(float(v.abs().max()) > 0 for k, v in saved[-1].items() if "lora_B" in k)  # RL moved them
    # a third iteration, resumed from the second's checkpoint
    p = run("method=kg_r1", "preset=smoke", "trainer=fsdp", "eval.untrained=false", "objective.entropy_coef=0.01",
            "rl.iterations=3", f"resume={last}", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert rl_progress(last) == 3 and not (last.parent / "last.ckpt.tmp").exists()
    # another world size reshards it (one process here), under FSDP; a plain run refuses it
    p = run("method=kg_r1", "preset=smoke", "eval.untrained=false", "objective.entropy_coef=0.01", "rl.iterations=4",
            f"resume={last}", f"hydra.run.dir={out}")
    assert p.returncode != 0 and "resume it with trainer=fsdp (any number of processes" in p.stderr
    p = run("method=kg_r1", "preset=smoke", "trainer=fsdp", "trainer.devices=1", "eval.untrained=false",
            "objective.entropy_coef=0.01", "rl.iterations=4", f"resume={last}", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert rl_progress(last) == 4 and len(list(last.glob("*.distcp"))) == 1


def test_deepspeed_zero3_run_partitions_the_policy_checkpoints_folders_and_resumes(tmp_path):
    """trainer=deepspeed with ZeRO-3 on DeepSpeed's CPU accelerator: both stages partitioned
    over two processes, rollouts on the gathered policy, a checkpoint folder of shards that a
    third iteration resumes from, and a clear refusal to resume it in another world size."""
    pytest.importorskip("deepspeed", reason="the deepspeed extra (make install) is not installed")
    out = tmp_path / "zero3"
    args = ("method=kg_r1", "preset=smoke", "trainer=deepspeed", "trainer.zero.stage=3", "eval.untrained=false",
            "objective.entropy_coef=0.01")
    p = run(*args, f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert_half_held_in_each_process(out, "ZeRO-3\\): this process holds")
    last = out / "checkpoints" / "rl" / "last.ckpt"
    assert last.is_dir() and len(list(last.glob("checkpoint/*optim_states.pt"))) == 2  # a shard a process
    assert not (last.parent / "last.ckpt.tmp").exists() and not (last.parent / "last.ckpt.old").exists()
    assert rl_progress(last) == 2
    saved = torch.load(out / "checkpoints" / "policy.pt")["adapters"]  # whole, gathered from the partitions
    assert all(v.numel() > 0 for v in saved[-1].values())
    assert any(float(v.abs().max()) > 0 for k, v in saved[-1].items() if "lora_B" in k)  # RL moved them
    p = run(*args, "rl.iterations=3", f"resume={last}", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert rl_progress(last) == 3
    p = run(*args, "trainer.devices=1", "rl.iterations=4", f"resume={last}", f"hydra.run.dir={out}")
    assert p.returncode != 0 and "holds the optimiser shards of 2 processes; this run has 1" in p.stderr


@pytest.mark.parametrize("trainer", [("trainer=fsdp",), pytest.param(("trainer=deepspeed", "trainer.zero.stage=3"),
                                                                      marks=pytest.mark.slow)])
def test_sharded_with_activation_checkpointing_and_bf16_autocast(tmp_path, trainer):
    import csv

    if "deepspeed" in trainer[0]:
        pytest.importorskip("deepspeed", reason="the deepspeed extra (make install) is not installed")
    out = tmp_path / "sharded_ac"
    p = run("method=kg_r1", "preset=smoke", *trainer, "eval.untrained=false", "objective.entropy_coef=0.01",
            "+model.policy.activation_checkpointing=true", "sft.bf16=true", "objective.bf16=true", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "RL updates under bf16 autocast" in (out / "run.log").read_text()
    rows = [r for r in csv.DictReader((out / "rl" / "metrics.csv").open()) if r.get("train/grad_norm")]
    assert len(rows) == 2 and all(float(r["train/grad_norm"]) > 0 for r in rows)


def test_epochs_set_the_cold_start_steps_and_the_rl_iterations(tmp_path):
    """The papers count epochs: sft.epochs=2 is two passes over the cold-start batches,
    rl.epochs=1 one pass over 6 training questions in batches of 3 (2 iterations)."""
    import csv

    out = tmp_path / "epochs"
    p = run("method=kg_r1", "preset=smoke", "sft.steps=0", "sft.epochs=2", "rl.iterations=0", "rl.epochs=1",
            "data.train_limit=6", "curriculum.batch_size=3", "eval.untrained=false", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    batches = -(-res["sft_trajectories"] // 4)  # sft.batch_size 4 in preset=smoke
    sft_steps = {int(r["step"]) for r in csv.DictReader((out / "sft" / "metrics.csv").open()) if r.get("step")}
    assert max(sft_steps) + 1 == 2 * batches
    iterations = [r for r in csv.DictReader((out / "rl" / "metrics.csv").open()) if r.get("train/iteration")]
    assert [int(float(r["train/iteration"])) for r in iterations] == [0, 1]


@pytest.mark.slow
def test_two_nodes_started_by_torchrun_train_as_one_run(tmp_path):
    """Multi-node as Lightning runs it under torchrun, simulated with two "nodes" on
    127.0.0.1 (docs/scale.md): each node's process plays its share, rank 0 evaluates."""
    from kgreason.kb.servers import free_port

    out, port = tmp_path / "two_nodes", free_port()

    def node(rank: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--nproc-per-node", "1",
             "--node-rank", str(rank), "--master-addr", "127.0.0.1", "--master-port", str(port),
             str(ROOT / "experiments" / "run.py"), "method=kg_r1", "preset=smoke", "trainer=ddp", "trainer.devices=1",
             "trainer.num_nodes=2", "eval.untrained=false", f"hydra.run.dir={out}"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    second, first = node(1), node(0)
    logs = [p.communicate(timeout=900)[0] for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, [log[-2000:] for log in logs]
    assert "GLOBAL_RANK: 1, MEMBER: 2/2" in logs[1]
    rows = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert len([r for r in rows if r["stage"] == "train"]) == 8  # 2 iterations × 2 questions × N=2, from both nodes
    assert json.loads((out / "results.json").read_text())["eval"]["trained"]["overall"]["n"] == 4


def test_the_record_names_an_int8_engine_not_the_float32_policy(tmp_path):
    pytest.importorskip("ctranslate2")
    out = tmp_path / "int8"
    p = run("method=kg_r1", "preset=smoke", "engine=ct2", "engine.compute_type=int8", "rl.iterations=1",
            "eval.untrained=false", f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads((out / "results.json").read_text())
    assert res["precision"]["rollouts"] == res["precision"]["eval"] == "int8"
    assert res["precision"]["rl"] == "float32"  # the tiny policy trains in float32
