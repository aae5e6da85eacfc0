"""The three fixed splits (train, tune, report) and the rule that keeps the report split honest."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from kgreason.config import compose_config
from kgreason.data import load_dataset, load_splits
from kgreason.data.roles import check_report_sweep, eval_role, split_roles
from kgreason.errors import ConfigError, DatasetError

ROOT = Path(__file__).resolve().parents[2]
METAQA = ROOT.parent / "shared" / "data" / "metaqa"
PARTS = ("dev_train", "dev_tune", "dev_report")


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_metaqa_three_splits_partition_its_dev_file(hops):
    dev = load_dataset("metaqa", METAQA, split="dev", hops=hops)
    parts = {p: load_dataset("metaqa", METAQA, split=p, hops=hops) for p in PARTS}
    ids = {p: {q.id for q in qs} for p, qs in parts.items()}
    assert sum(map(len, ids.values())) == len(dev)  # disjoint, and together the whole file
    assert set().union(*ids.values()) == {q.id for q in dev}
    shares = {p: len(ids[p]) / len(dev) for p in PARTS}
    assert shares["dev_train"] == pytest.approx(0.8, abs=0.02)
    assert shares["dev_tune"] == pytest.approx(0.1, abs=0.01) and shares["dev_report"] == pytest.approx(0.1, abs=0.01)
    # a question written twice in the file is in one split, never trained on and scored
    where = {}
    for p, qs in parts.items():
        for q in qs:
            where.setdefault(q.meta["raw_question"], set()).add(p)
    assert all(len(s) == 1 for s in where.values())
    if hops == 1:  # 1-hop's file has such questions
        assert Counter(q.meta["raw_question"] for q in dev).most_common(1)[0][1] > 1


def test_metaqa_splits_do_not_move_with_the_hops_loaded_or_the_seed():
    together = {q.id for q in load_dataset("metaqa", METAQA, split="dev_report", hops=(1, 2, 3))}
    apart = set().union(*({q.id for q in load_dataset("metaqa", METAQA, split="dev_report", hops=h)}
                          for h in (1, 2, 3)))
    assert together == apart
    _, a = load_splits("metaqa", METAQA, train_split="dev_train", eval_split="dev_report", seed=0, hops=1)
    _, b = load_splits("metaqa", METAQA, train_split="dev_train", eval_split="dev_report", seed=7, hops=1)
    assert {q.id for q in a} == {q.id for q in b}  # every question of the split: no seed involved


def test_nothing_trains_on_the_report_split():
    for name, path, report in (("demo", None, "test"), ("metaqa", METAQA, "dev_report")):
        with pytest.raises(DatasetError, match=rf"data.train_split='{report}' is the report split of dataset '{name}'"):
            load_splits(name, path, train_split=report, eval_split=split_roles(name).tune, hops=1)
    # a training split that contains it loses its questions, and only those
    train, _ = load_splits("demo", train_split="all", eval_split="dev", eval_limit=5)
    test = {q.id for q in load_dataset("demo", split="test")}
    assert not test & {q.id for q in train}
    assert len(train) == len(load_dataset("demo", split="all")) - len(test) - 5
    train, held = load_splits("metaqa", METAQA, train_split="dev", eval_split="dev_tune", eval_limit=50, hops=1)
    report = {q.id for q in load_dataset("metaqa", METAQA, split="dev_report", hops=1)}
    assert not report & {q.id for q in train} and not {q.id for q in held} & {q.id for q in train}


def test_a_file_without_splits_trains_on_all_of_it(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text("".join(json.dumps({"question": f"q{i}?", "answers": ["a"]}) + "\n" for i in range(6)))
    train, held = load_splits("jsonl", str(f), train_split="all", eval_split="all", eval_limit=2)
    assert (len(train), len(held)) == (4, 2)


def test_each_dataset_preset_names_its_three_splits():
    for data, (train, tune, report) in {"demo": ("train", "dev", "test"),
                                        "metaqa_1hop": ("dev_train", "dev_tune", "dev_report"),
                                        "jsonl": ("train", "dev", "test")}.items():
        cfg = compose_config([f"data={data}"]).data
        roles = split_roles(cfg.name)
        assert (roles.train, roles.tune, roles.report) == (train, tune, report)
        # presets train on the train split and are scored on the tune split
        assert (eval_role(cfg.name, cfg.train_split), eval_role(cfg.name, cfg.eval_split)) == ("train", "tune")
    for method, preset in (("kg_r1", "metaqa"), ("knowcoder_a1", "metaqa"), ("kg_reasoner", "metaqa"),
                           ("kg_r1", "demo"), ("kbqa_r1", "demo")):
        cfg = compose_config([f"method={method}", f"preset={preset}"]).data
        assert eval_role(cfg.name, cfg.eval_split) == "tune", (method, preset)


def test_a_sweep_on_the_report_split_varies_only_rows_of_a_table():
    check_report_sweep("metaqa", "dev_report", {"seed", "method", "ablation", "ablation_row"})
    check_report_sweep("metaqa", "dev_tune", {"objective.lr", "cold_start.teachers.0.plan_path"})
    for split in ("dev_report", "dev"):  # the whole dev file holds the report questions too
        with pytest.raises(ConfigError, match=r"varies cold_start.limit.*data.eval_split=dev_tune"):
            check_report_sweep("metaqa", split, {"cold_start.limit", "seed"})
    check_report_sweep("webqsp", "test", {"objective.lr"})  # one test file: no roles declared


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "experiments" / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_the_runner_refuses_a_tuning_sweep_on_the_report_split(tmp_path):
    p = run("-m", "method=kg_r1", "preset=smoke", "data.eval_split=test", "objective.lr=1e-5,2e-5",
            f"hydra.sweep.dir={tmp_path / 'a'}")
    assert p.returncode != 0 and "this sweep varies objective.lr and evaluates on data.eval_split=test" in p.stderr
    assert not (tmp_path / "a").exists()  # refused before any job ran
    # a sweep an experiment config declares (hydra.sweeper.params) is refused when the job starts
    (tmp_path / "conf" / "ablation").mkdir(parents=True)
    (tmp_path / "conf" / "ablation" / "lr_grid.yaml").write_text(
        "# @package _global_\nhydra:\n  sweeper:\n    params:\n      objective.lr: 1.0e-5,2.0e-5\n")
    p = run("-m", "--config-dir", str(tmp_path / "conf"), "method=kg_r1", "preset=smoke", "ablation=lr_grid",
            "data.eval_split=test", f"hydra.sweep.dir={tmp_path / 'b'}")
    assert p.returncode != 0 and "this sweep varies objective.lr" in p.stderr
    assert not list((tmp_path / "b").glob("*/results.json"))


def test_a_run_on_the_report_split_records_it(tmp_path):
    p = run("method=kg_r1", "preset=smoke", "stage=eval", "data.eval_split=test", "data.eval_limit=2",
            f"hydra.run.dir={tmp_path}")
    assert p.returncode == 0, p.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["split"] == {"dataset": "demo", "train": "train", "eval": "test", "eval_role": "report"}
    assert "the report split of 'demo'" in p.stdout + p.stderr
    assert "role: **report**" in (tmp_path / "results.md").read_text()
    rows = [json.loads(x) for x in (tmp_path / "eval_checkpoint.jsonl").read_text().splitlines()]
    test = {q.id for q in load_dataset("demo", split="test")}
    assert len(rows) == 2 and all(r["id"] in test for r in rows)
