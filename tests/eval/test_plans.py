"""The named and queried relation paths of KnowCoder-A1 episodes, on the preset teacher's own."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.errors import ConfigError
from kgreason.eval.metrics import matches
from kgreason.eval.plans import last_episodes, main
from kgreason.kb import load_metaqa_kb
from kgreason.methods.knowcoder_a1.teacher import ScriptedKnowCoderTeacher
from kgreason.training import JsonlSink
from kgreason.types import Turn
from tests.conftest import FIXTURES

MINI = FIXTURES / "metaqa_mini"


@pytest.fixture(scope="module", params=[False, True], ids=["plan_first", "plan_after_look"])
def teacher_run(tmp_path_factory, request):
    """The metaqa preset's teacher (no detours) on the fixture's 1- and 2-hop questions,
    written as an evaluation writes them: ``eval_checkpoint.jsonl`` + ``trajectories.jsonl``;
    the path named in the first thought, or in the second (``plan_after_look``)."""
    out = tmp_path_factory.mktemp("eval")
    kb = load_metaqa_kb(MINI / "kb.txt")
    teacher = ScriptedKnowCoderTeacher(p_types=0.0, p_detour=0.0, p_syntax_error=0.0, plan_hops=True,
                                       restate=True, plan_path=True, path_kinds=True,
                                       plan_after_look=request.param)
    samples = load_dataset("metaqa", path=MINI, split="dev", hops=(1, 2))
    trajs = [teacher.episode(make_env("knowcoder_a1", kb, max_turns=6), q, random.Random(0)) for q in samples]
    JsonlSink(out / "trajectories.jsonl")(trajs, -1, "eval/checkpoint")
    rows = [{"id": q.id, "hops": q.hops, "hit1": float(bool(t.answer) and any(matches(t.answer[0], g) for g in q.answers))}
            for q, t in zip(samples, trajs, strict=True)]
    (out / "eval_checkpoint.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out, samples, trajs


def table_lines(out, capsys, *extra: str) -> dict[str, list[str]]:
    assert main([str(out / "eval_checkpoint.jsonl"), "--dataset", "metaqa", "--path", str(MINI), "--hops", "1,2", *extra]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    return {ln.split(" | ")[0][2:]: [c.strip() for c in ln.strip("| ").split(" | ")] for ln in lines}


def test_the_teachers_episodes_name_and_query_the_gold_path(teacher_run, capsys):
    out, samples, _ = teacher_run
    assert {q.hops for q in samples} == {1, 2}
    table = table_lines(out, capsys)
    n = {"all": len(samples), "1-hop": sum(q.hops == 1 for q in samples), "2-hop": sum(q.hops == 2 for q in samples)}
    assert set(table) == set(n)
    for group, cells in table.items():
        # group, n, plan right, Hit@1 right / wrong, query right, Hit@1 right / wrong
        assert cells[1] == cells[2] == cells[4] == str(n[group])
        assert cells[3] == cells[5] == "1.000 / nan"


def test_a_question_scored_again_counts_its_last_episode(teacher_run, tmp_path, capsys):
    """After an ``eval.resume`` a question's episode can be in the file twice: the later one
    (here one whose plan names the wrong relation and that queries nothing) is the one scored."""
    out, samples, trajs = teacher_run
    for name in ("eval_checkpoint.jsonl", "trajectories.jsonl"):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    two_hop = next(i for i, q in enumerate(samples) if q.hops == 2)
    planned = next(t.text for t in trajs[two_hop].turns if "follows" in t.text)
    wrong = planned.replace(samples[two_hop].relation_path[-1].lstrip("~"), "has_genre")
    redone = dataclasses.replace(trajs[two_hop], turns=[Turn(text=wrong)])
    JsonlSink(tmp_path / "trajectories.jsonl")([redone], -1, "eval/checkpoint")
    assert len(last_episodes(tmp_path / "trajectories.jsonl", "eval/checkpoint")) == len(samples)
    table = table_lines(tmp_path, capsys)
    assert table["2-hop"][1:5] == ["1", "0", "nan / 1.000", "0"]
    assert table["1-hop"][2] == table["1-hop"][4] == table["1-hop"][1]


def test_trajectories_of_another_evaluation_are_an_error_naming_their_stages(teacher_run, tmp_path):
    out, _, _ = teacher_run
    (tmp_path / "eval_trained.jsonl").write_bytes((out / "eval_checkpoint.jsonl").read_bytes())
    with pytest.raises(ConfigError, match=r"no episode of stage 'eval/trained'.*eval/checkpoint"):
        main([str(tmp_path / "eval_trained.jsonl"), "--dataset", "metaqa", "--path", str(MINI), "--hops", "1,2",
              "--trajectories", str(out / "trajectories.jsonl")])


def test_rows_without_their_trajectories_are_an_error_naming_the_option(teacher_run, tmp_path):
    out, _, _ = teacher_run
    (tmp_path / "eval_checkpoint.jsonl").write_bytes((out / "eval_checkpoint.jsonl").read_bytes())
    with pytest.raises(ConfigError, match=r"trajectories.jsonl: no such file; .*--trajectories"):
        main([str(tmp_path / "eval_checkpoint.jsonl"), "--dataset", "metaqa", "--path", str(MINI), "--hops", "1,2"])


def test_a_cut_off_last_line_is_left_out_and_one_in_the_middle_is_an_error(teacher_run, tmp_path):
    out, samples, _ = teacher_run
    whole = (out / "trajectories.jsonl").read_text()
    cut = '{"step": -1, "stage": "eval/checkpoint", "sample_id": "x", "tu'
    (tmp_path / "t.jsonl").write_text(whole + cut)  # a kill mid-write
    assert len(last_episodes(tmp_path / "t.jsonl", "eval/checkpoint")) == len(samples)
    lines = whole.splitlines(keepends=True)
    (tmp_path / "t.jsonl").write_text("".join(lines[:2]) + cut + "\n" + "".join(lines[2:]))
    with pytest.raises(ConfigError, match=r"t.jsonl:3 is not a JSON trajectory record"):
        last_episodes(tmp_path / "t.jsonl", "eval/checkpoint")
