"""Each paper's ablation table is one command (``-m ... ablation=<method>_<table>``): its
rows compose, differ from the full row where the paper says, and run at ``preset=smoke``
into one table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from kgreason.config import CONFIG_DIR, compose_config, validate_config
from kgreason.training.cold_start_cache import AFTER_COLD_START

ROOT = Path(__file__).resolve().parents[2]
TABLES = sorted(p.stem for p in (CONFIG_DIR / "ablation").glob("*.yaml"))
#: a row's change against the full row: (key, value in the row)
CHANGES = {
    "kg_reasoner_no_sft": ("sft.steps", 0),
    "kg_reasoner_no_hard_cases": ("curriculum._target_", "kgreason.training.UniformStream"),
    "kg_reasoner_no_search_reward": ("reward.ablate", ["retrieval"]),
    "kg_reasoner_no_format_reward": ("reward.ablate", ["format"]),
    "kg_reasoner_no_answer_reward": ("reward.ablate", ["answer"]),
    "kg_reasoner_no_backtracking": ("env.space.backtracking", False),
    "kbqa_r1_no_rrcg": ("env.space.gate.enabled", False),
    "kbqa_r1_no_rrs": ("cold_start.reference", "none"),
    "kbqa_r1_single_turn": ("env.space.single_turn", True),
    "kbqa_r1_no_sft": ("sft.steps", 0),
    "kbqa_r1_no_grpo": ("rl.iterations", 0),
    "kbqa_r1_no_format_reward": ("reward.ablate", ["format"]),
    "kg_r1_no_turn_rewards": ("reward.components.0.kwargs.w_fmt", 0.0),
    "kg_r1_no_turnwise_advantage": ("objective.advantage", "grpo"),
    "kg_r1_no_retrieval_reward": ("reward.components.0.kwargs.w_ret", 0.0),
    "knowcoder_a1_em_reward": ("reward.components.1.name", "hit"),
    "knowcoder_a1_f1_reward": ("reward.components.1.kwargs.beta", 1.0),
    "knowcoder_a1_f05_reward": ("reward.components.2", None),
    "knowcoder_a1_f1_then_f05": ("reward.components.1.alias", "f1"),
    "knowcoder_a1_no_rl": ("rl.iterations", 0),
    "knowcoder_a1_no_upsampling": ("cold_start.balance", None),
    "knowcoder_a1_teacher_no_kinds": ("cold_start.teachers.0.path_kinds", False),
    "knowcoder_a1_teacher_hops_only": ("cold_start.teachers.0.plan_path", False),
    "knowcoder_a1_teacher_no_plan": ("cold_start.teachers.0.plan_hops", False),
    "kg_r1_ppo": ("objective.advantage", "gae"),
    "kg_r1_hierarchical_retrieval": ("env.space.relation_format", "hierarchical"),
    "isp_dtpo_no_success_filter": ("rollout.prune", False),
    "isp_dtpo_trajectory_level": ("rollout._target_", "kgreason.training.LinearExperience.build"),
    "isp_dtpo_error_filter": ("rollout.dedup_failures", True),
    "isp_dtpo_outcome_dominated": ("reward.weights", {"progress": 0.0, "outcome": 0.9}),
    "isp_dtpo_high_outcome": ("reward.weights", {"progress": 0.3, "outcome": 0.6}),
    "isp_dtpo_equal": ("reward.weights", {"progress": 0.45, "outcome": 0.45}),
    "isp_dtpo_process_dominated": ("reward.weights", {"progress": 0.9, "outcome": 0.0}),
}


METHODS = sorted(p.stem for p in (CONFIG_DIR / "method").glob("*.yaml"))


def method_of(table: str) -> str:
    return max((m for m in METHODS if table.startswith(f"{m}_")), key=len)


def rows_of(table: str) -> list[str]:
    """The ``ablation_row`` options a table sweeps, in its order."""
    spec = OmegaConf.load(CONFIG_DIR / "ablation" / f"{table}.yaml")
    return str(spec.hydra.sweeper.params.ablation_row).split(",")


@pytest.mark.parametrize("table", TABLES)
def test_every_row_composes_and_changes_what_the_paper_ablates(table):
    method = method_of(table)
    rows = rows_of(table)
    assert rows[0] == f"{method}_full" and len(rows) == len(set(rows))
    full = compose_config([f"method={method}", "preset=smoke", f"ablation_row={rows[0]}"])
    for row in rows:
        cfg = compose_config([f"method={method}", "preset=smoke", f"ablation_row={row}"])
        validate_config(cfg)
        assert cfg.row and (row == rows[0] or cfg.row != full.row)
        if row == rows[0]:
            continue
        key, value = CHANGES[row]
        got = OmegaConf.select(cfg, key)
        got = OmegaConf.to_container(got) if OmegaConf.is_config(got) else got
        assert got == value and OmegaConf.select(full, key) != got, (row, key, got)


def run_table(table: str, sweep_dir: Path, *overrides: str) -> None:
    method = method_of(table)
    p = subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), "-m", f"method={method}", "preset=smoke",
                        f"ablation={table}", "eval.untrained=false", "data.eval_limit=2", *overrides,
                        f"hydra.sweep.dir={sweep_dir}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    md = (sweep_dir / "results.md").read_text(encoding="utf-8")
    labels = {compose_config([f"method={method}", f"ablation_row={r}"]).row for r in rows_of(table)}
    lines = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| row ")]
    assert {line.split(" | ")[0][2:] for line in lines} == labels, md
    assert all(line.rstrip().endswith("| done |") for line in lines), md
    # rows that change only what the RL stage reads take the first row's cold start
    jobs = json.loads((sweep_dir / "results.json").read_text(encoding="utf-8"))
    configs = {r["row"]: OmegaConf.to_container(OmegaConf.load(sweep_dir / r["job"] / "config.yaml")) for r in jobs}
    first = configs[compose_config([f"method={method}", f"ablation_row={rows_of(table)[0]}"]).row]
    for r in jobs:
        changed = {k for k in first.keys() | configs[r["row"]].keys() if first.get(k) != configs[r["row"]].get(k)}
        reused = r.get("cold start", "").startswith("from job")
        assert reused == (changed <= set(AFTER_COLD_START) and "row" in changed), (r["row"], changed)


@pytest.mark.parametrize("table", TABLES)
def test_the_table_runs_at_smoke_size_into_one_results_table(table, tmp_path):
    """Every row of every table, each stage once (one SFT step, one RL iteration): about
    5 s a row, 38 rows."""
    run_table(table, tmp_path, "sft.steps=1", "rl.iterations=1")


@pytest.mark.slow
@pytest.mark.parametrize("table", TABLES)
def test_the_table_runs_the_whole_smoke_preset(table, tmp_path):
    run_table(table, tmp_path)


def test_a_cache_named_on_the_command_line_keeps_one_folder_a_job(tmp_path):
    """``cold_start_cache=/a/path`` is part of each job's folder name: its ``/`` must not
    nest the job a level down, where the sweep's table would not find it."""
    run_table("isp_dtpo_rq2", tmp_path / "sweep", "sft.steps=1", "rl.iterations=1",
              f"cold_start_cache={tmp_path / 'cache'}")
    jobs = [p for p in (tmp_path / "sweep").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(jobs) == len(rows_of("isp_dtpo_rq2")) and all((j / "results.json").is_file() for j in jobs)
    assert len(list((tmp_path / "cache").iterdir())) == 1
