"""Runs whose configs differ only after the cold start share one (``cold_start_cache=DIR``),
and a run that reuses one equals a run that built its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import torch

from kgreason.config import compose_config
from kgreason.training.cold_start_cache import ColdStartCache, cold_start_key
from tests.experiments.test_resume import strip, trajectories

ROOT = Path(__file__).resolve().parents[2]


def key_of(*overrides: str, precision: str | None = "float32") -> str:
    return cold_start_key(compose_config(["method=knowcoder_a1", "preset=smoke", *overrides]), precision)[0]


def test_rows_that_change_only_rl_share_a_key_and_cold_start_changes_do_not():
    full = key_of("ablation_row=knowcoder_a1_full")
    for row in ("knowcoder_a1_em_reward", "knowcoder_a1_f1_reward", "knowcoder_a1_f1_then_f05", "knowcoder_a1_no_rl"):
        assert key_of(f"ablation_row={row}") == full, row
    assert key_of("ablation_row=knowcoder_a1_full", "objective.lr=1e-3", "curriculum.batch_size=3") == full
    different = {key_of("ablation_row=knowcoder_a1_no_upsampling"), key_of("seed=1"), key_of("sft.lr=1e-3"),
                 key_of("cold_start.limit=3"), key_of("data.eval_limit=3"), key_of(precision="bf16")}
    assert full not in different and len(different) == 6


def fake_run(out: Path, with_eval: bool) -> None:
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "policy_sft.pt").write_bytes(b"weights")
    (out / "checkpoints" / "cold_start.json").write_text('{"sft_trajectories": 3}')
    (out / "sft_losses.json").write_text('{"q1": 0.5}')
    episodes = [{"stage": "eval/untrained", "sample_id": "q1"}, {"stage": "eval/sft", "sample_id": "q1"}]
    (out / "trajectories.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes) + '{"stage": "ev')
    if with_eval:
        (out / "eval_sft.jsonl").write_text('{"id": "q1", "f1": 1.0}\n')


def test_store_then_restore_copies_the_cold_start_and_the_sft_evaluation(tmp_path):
    fake_run(tmp_path / "a", with_eval=True)
    cache = ColdStartCache(tmp_path / "cache", "k1", {"seed": 0})
    assert not cache.hit()
    cache.store(tmp_path / "a", row="full")
    assert cache.hit() and cache.made_by() == {"run": str(tmp_path / "a"), "row": "full"}
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["k1"]  # no temporary folder left
    # only the SFT evaluation's episodes travel (not the untrained one's, not a cut-off line)
    assert (cache.entry / "trajectories_sft.jsonl").read_text() == '{"stage": "eval/sft", "sample_id": "q1"}\n'

    b = tmp_path / "b"
    b.mkdir()
    (b / "trajectories.jsonl").write_text('{"stage": "eval/untrained", "sample_id": "q9"}\n')
    assert cache.restore(b, with_eval=True)
    assert (b / "checkpoints" / "policy_sft.pt").read_bytes() == b"weights"
    assert (b / "sft_losses.json").read_text() == '{"q1": 0.5}'
    assert (b / "eval_sft.jsonl").read_text() == '{"id": "q1", "f1": 1.0}\n'
    assert [json.loads(x)["sample_id"] for x in (b / "trajectories.jsonl").read_text().splitlines()] == ["q9", "q1"]

    c = tmp_path / "c"
    c.mkdir()
    assert not cache.restore(c, with_eval=False) and not (c / "eval_sft.jsonl").exists()
    assert (c / "checkpoints" / "cold_start.json").is_file()


def test_an_entry_is_kept_by_the_first_run_and_a_run_without_sft_stores_nothing(tmp_path):
    fake_run(tmp_path / "a", with_eval=False)
    fake_run(tmp_path / "b", with_eval=False)
    (tmp_path / "b" / "checkpoints" / "policy_sft.pt").write_bytes(b"other")
    cache = ColdStartCache(tmp_path / "cache", "k1")
    cache.store(tmp_path / "a")
    cache.store(tmp_path / "b")
    assert (cache.entry / "policy_sft.pt").read_bytes() == b"weights" and cache.made_by()["run"] == str(tmp_path / "a")
    assert not (cache.entry / "eval_sft.jsonl").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    other = ColdStartCache(tmp_path / "cache", "k2")
    other.store(empty)
    assert not other.hit()


def run(out: Path, *overrides: str) -> dict:
    p = subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), "method=knowcoder_a1", "preset=smoke",
                        "eval.untrained=false", "eval.after_sft=true", "data.eval_limit=3", "sft.steps=2",
                        "rl.iterations=1", *overrides, f"hydra.run.dir={out}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def rows(path: Path) -> list[dict]:
    return [strip(json.loads(x)) for x in path.read_text(encoding="utf-8").splitlines()]


def test_a_run_that_reuses_a_cold_start_equals_one_that_builds_its_own(tmp_path):
    """Three smoke runs: A (the F0.5 row) builds and stores its cold start; B (the F1 row,
    same cache) takes it; C (the F1 row, no cache) builds its own. B equals C."""
    cache = tmp_path / "cache"
    a = run(tmp_path / "a", "ablation_row=knowcoder_a1_full", f"cold_start_cache={cache}")
    b = run(tmp_path / "b", "ablation_row=knowcoder_a1_f1_reward", f"cold_start_cache={cache}")
    c = run(tmp_path / "c", "ablation_row=knowcoder_a1_f1_reward")
    assert "cold_start_reused" not in a and "cold_start_reused" not in c
    assert b["cold_start_reused"]["run"] == str(tmp_path / "a")
    assert b["cold_start_reused"]["row"] == "KnowCoder-A1"
    assert not (tmp_path / "b" / "sft").exists()  # no SFT ran in B (its logger writes there)
    for f in ("checkpoints/policy_sft.pt", "sft_losses.json"):
        assert (tmp_path / "b" / f).read_bytes() == (tmp_path / "c" / f).read_bytes(), f
    assert b["sft_trajectories"] == c["sft_trajectories"] > 0
    # the RL stage sampled the same episodes: its random numbers do not depend on how the
    # run came by its cold start
    sampled_b, sampled_c = ([t for t in trajectories(tmp_path / r) if t["stage"] == "train"] for r in "bc")
    assert sampled_b and sampled_b == sampled_c
    for tag in ("sft", "trained"):
        assert rows(tmp_path / "b" / f"eval_{tag}.jsonl") == rows(tmp_path / "c" / f"eval_{tag}.jsonl"), tag
        assert b["eval"][tag]["overall"]["f1"] == c["eval"][tag]["overall"]["f1"], tag
    trained_b, trained_c = (torch.load(tmp_path / r / "checkpoints" / "policy.pt") for r in "bc")
    assert trained_b.keys() == trained_c.keys()
    assert all(torch.equal(trained_b[k], trained_c[k]) for k in trained_b if isinstance(trained_b[k], torch.Tensor))
