"""EvalSink: an evaluation's rows and trajectories written batch by batch."""

from __future__ import annotations

import json

import pytest

from kgreason.errors import ConfigError
from kgreason.eval.files import EvalSink
from kgreason.types import Trajectory


def _ids(path) -> list[str]:
    """The question of each line: ``id`` in an evaluation row, ``sample_id`` in a trajectory."""
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    return [r["id"] if "id" in r else r["sample_id"] for r in rows]


def test_each_batch_is_on_disk_before_the_next(tmp_path):
    sink = EvalSink(tmp_path, "trained")
    sink([{"id": "b", "f1": 0.0}], [Trajectory(sample_id="b", prompt=[], turns=[])])
    assert _ids(tmp_path / "eval_trained.jsonl") == ["b"]  # readable while the evaluation runs
    sink([{"id": "a", "f1": 1.0}], [Trajectory(sample_id="a", prompt=[], turns=[])])
    assert _ids(tmp_path / "eval_trained.jsonl") == _ids(tmp_path / "trajectories.jsonl") == ["b", "a"]
    assert {json.loads(x)["stage"] for x in (tmp_path / "trajectories.jsonl").read_text().splitlines()} == {"eval/trained"}


def test_a_new_evaluation_empties_the_rows_of_an_earlier_one_and_keeps_its_trajectories(tmp_path):
    EvalSink(tmp_path, "checkpoint")([{"id": "old"}], [Trajectory(sample_id="old", prompt=[], turns=[])])
    EvalSink(tmp_path, "checkpoint")([{"id": "new"}], [])
    assert _ids(tmp_path / "eval_checkpoint.jsonl") == ["new"]
    assert _ids(tmp_path / "trajectories.jsonl") == ["old"]  # appended, as every stage's are


def test_resume_keeps_the_rows_written_and_drops_a_line_cut_off_mid_write(tmp_path):
    sink = EvalSink(tmp_path, "checkpoint")
    sink([{"id": "a", "f1": 1.0}, {"id": "b", "f1": 0.0}], [])
    with (tmp_path / "eval_checkpoint.jsonl").open("a") as f:
        f.write('{"id": "c", "f1"')  # a kill in the middle of the next batch's write
    again = EvalSink(tmp_path, "checkpoint", resume=True)
    assert [r["id"] for r in again.done] == ["a", "b"]
    again([{"id": "c", "f1": 0.5}], [])
    assert _ids(tmp_path / "eval_checkpoint.jsonl") == ["a", "b", "c"]  # c is on its own line, whole


def test_resume_refuses_a_file_that_is_not_evaluation_rows(tmp_path):
    text = '{"id": "a"}\nnot json\n{"id": "b"}\n'
    (tmp_path / "eval_checkpoint.jsonl").write_text(text)
    with pytest.raises(ConfigError, match=r"eval_checkpoint.jsonl:2 is not an evaluation row"):
        EvalSink(tmp_path, "checkpoint", resume=True)
    assert (tmp_path / "eval_checkpoint.jsonl").read_text() == text  # refused, and nothing lost


def test_resume_drops_a_cut_off_trajectory_and_those_of_unwritten_rows(tmp_path):
    traj = tmp_path / "trajectories.jsonl"
    traj.write_text(json.dumps({"stage": "train", "sample_id": "t"}) + "\n")  # another stage's: kept
    sink = EvalSink(tmp_path, "checkpoint")
    sink([{"id": "a"}], [Trajectory(sample_id="a", prompt=[], turns=[])])
    # a kill after the next batch's trajectories were written and before its rows were
    sink._trajectories([Trajectory(sample_id="b", prompt=[], turns=[])], -1, "eval/checkpoint")
    with traj.open("a") as f:
        f.write('{"step": -1, "stage": "eval/checkpoint", "sample_id": "c", "tu')
    again = EvalSink(tmp_path, "checkpoint", resume=True)
    assert _ids(traj) == ["t", "a"]
    again([{"id": "b"}], [Trajectory(sample_id="b", prompt=[], turns=[])])
    assert _ids(traj) == ["t", "a", "b"]  # every line whole, each question once
