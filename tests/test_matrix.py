"""The mixing matrix: every combination of the shipped options is refused at compose time
or plays a gold episode with a reward that is not zero."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kgreason.config import compose_config, validate_config
from kgreason.errors import ConfigError
from kgreason.matrix import OBJECTIVE, Matrix, Player, axes, markdown, summary

ROOT = Path(__file__).resolve().parents[1]
METAQA = ROOT.parent / "shared" / "data" / "metaqa" / "kb.txt"


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> Matrix:
    if not METAQA.is_file():
        pytest.skip(f"no MetaQA at {METAQA}: the matrix has a MetaQA column")
    return Matrix(tmp_path_factory.mktemp("kb_copies"))


def _overrides(cell) -> list[str]:
    kb, data = {"demo": ("demo", "demo"), "tsv": ("tsv", "demo"), "rdf": ("rdf", "demo"),
                "metaqa": ("metaqa", "metaqa_1hop")}[cell.kb]
    return ["preset=smoke", f"env={cell.env}", f"reward={cell.reward}", f"rollout={cell.rollout}",
            f"objective={OBJECTIVE[cell.rollout]}", f"cold_start={cell.cold_start}", f"kb={kb}", f"data={data}",
            *([] if cell.ranker == "none" else [f"ranker={cell.ranker}"])]


def test_every_cell_is_judged_and_the_docs_table_is_generated_from_the_declarations(matrix):
    s = summary(matrix)["counts"]
    n = 1
    for values in axes().values():
        n *= len(values)
    assert s["allowed"] + s["refused"] == n
    assert s["allowed"] > 100 and s["refused"] > 100 and 0 < s["adapted"] < s["allowed"]
    table = markdown(matrix)
    assert table in (ROOT / "docs" / "architecture.md").read_text(), (
        "docs/architecture.md's matrix is stale; paste the output of `python -m kgreason.matrix`")


def test_the_matrix_judges_what_the_runner_composes(matrix, tmp_path):
    """A sample of cells composed by Hydra as a user would: the same verdict, and the runner's
    check refuses exactly the refused ones."""
    tsv, nt = tmp_path / "x.tsv", tmp_path / "x.nt"  # the paths must exist (kgreason.validation)
    tsv.touch()
    nt.touch()
    cells = list(matrix.cells())
    rng = random.Random(0)
    allowed = [c for c in cells if not matrix.judge(c)]
    refused = [c for c in cells if matrix.judge(c)]
    for cell in rng.sample(allowed, 12) + rng.sample(refused, 12):
        cfg = compose_config([*_overrides(cell), *([f"kb.path={tsv}", "kb.schema=freebase"] if cell.kb == "tsv" else []),
                              *([f"kb.path={nt}", "kb.schema=freebase"] if cell.kb == "rdf" else [])])
        expected = matrix.judge(cell)
        if expected:
            with pytest.raises(ConfigError) as e:
                validate_config(cfg)
            assert str(e.value) == expected[0], cell
        else:
            validate_config(cfg)


def test_every_allowed_cell_plays_a_gold_episode(matrix):
    """check_env passes, the gold episode replays through the real rollout with a reward that
    is not 0 everywhere, and the cold start builds episodes: on every allowed cell."""
    player = Player(matrix)
    failed = {}
    allowed = [c for c in matrix.cells() if not matrix.judge(c)]
    for cell in allowed:
        played = player.play(cell)
        if played.error:
            failed[str(cell)] = played.error
    assert not failed, f"{len(failed)} of {len(allowed)} allowed cells fail:\n" + "\n".join(
        f"{c}: {e}" for c, e in list(failed.items())[:20])


@pytest.mark.parametrize("overrides, message", [
    (["method=kg_r1", "ranker=dense"], r"ranks nothing\. Choose ranker=null"),
    (["method=knowcoder_a1", "cold_start=decomposed"], r"plays action space 'isp_dtpo', but env uses 'knowcoder_a1'"),
    (["method=kbqa_r1", "cold_start=kg_reasoner"], r"plays action space 'kg_reasoner', but env uses 'kbqa_r1'"),
    (["method=isp_dtpo", "kb=metaqa", "data=jsonl", "data.path=x.jsonl", "cold_start=none"],
     r"addresses freebase KBs, but kb has schema 'metaqa'"),
    (["method=isp_dtpo", "preset=metaqa"], r"builds its episodes from gold sexpr, but data 'metaqa' has relation_path"),
    (["method=kg_r1", "kb=metaqa"], r"kb has schema 'metaqa', but data 'demo' asks about a 'freebase' KB"),
    (["method=kg_r1", "rollout=tree"], r"'kg_r1' .* reads the turns of whole episodes: it needs rollout=linear"),
    (["method=kg_reasoner", "ranker=dense"], r"ranker_training trains the env's ranker, but ranker=.*DenseRanker"),
])
def test_the_issue_cases_are_refused_naming_both_parts(overrides, message, tmp_path):
    (tmp_path / "x.jsonl").touch()  # data.path must exist (kgreason.validation)
    overrides = [o.replace("data.path=x.jsonl", f"data.path={tmp_path / 'x.jsonl'}") for o in overrides]
    with pytest.raises(ConfigError, match=message):
        validate_config(compose_config(overrides))


def test_what_composed_and_crashed_before_now_composes_and_builds():
    """A graph ranker on a flat candidate list is adapted; the GAT's training stage no longer
    reads a key only KG-Reasoner's env has; a cold start's teachers stay in its own option."""
    from kgreason.compose import build_parts

    for overrides in (["method=isp_dtpo", "preset=smoke", "ranker=gat", "ranker_training=gat"],
                      ["method=knowcoder_a1", "preset=smoke", "cold_start=none"],
                      ["method=kbqa_r1", "preset=smoke", "cold_start=rejection_sampled", "env=knowcoder_a1",
                       "reward=knowcoder_a1"]):
        cfg = compose_config(overrides)
        validate_config(cfg)
        parts = build_parts(cfg)
        assert parts.make_env() is not None
    env = build_parts(compose_config(["method=isp_dtpo", "preset=smoke", "ranker=gat"])).make_env()
    from kgreason.data import load_dataset

    sample = load_dataset("demo", split="dev")[0]
    env.reset(sample)
    r = env.step(f"<think>look</think><node>{sample.topic_entities[0].id}</node>")
    assert not r.error and "<relation>" in r.observation  # ranked by the GAT through the flat adapter


def test_a_sweep_and_cfg_job_are_checked_before_torch_loads():
    run_py = ROOT / "experiments" / "run.py"
    for argv, message in [(["method=kg_r1", "preset=smoke", "ranker=dense", "--cfg", "job"], "ranks nothing"),
                          (["-m", "method=kg_r1", "preset=smoke", "rollout=linear,tree"],
                           "sweep job method=kg_r1 preset=smoke rollout=tree")]:
        p = subprocess.run([sys.executable, str(run_py), *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert p.returncode != 0 and message in p.stderr, p.stderr[-2000:]
        assert "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, str(run_py), "method=kg_r1", "preset=smoke", "--cfg", "job"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0 and re.search(r"^stage: all$", p.stdout, re.M), p.stderr[-2000:]
