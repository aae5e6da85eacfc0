"""An evaluation's files, written as it goes: ``eval_<tag>.jsonl`` and ``trajectories.jsonl``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgreason.types import Trajectory


class EvalSink:
    """Appends each scored batch's rows to ``out/eval_<tag>.jsonl`` and its trajectories to
    ``out/trajectories.jsonl`` (stage ``eval/<tag>``), flushed after every batch: a crash
    keeps every batch scored before it, and a long evaluation (a MetaQA one of 300
    questions takes half an hour here) can be read while it runs.

    Args:
        out: the run folder.
        tag: the evaluation's name (``untrained``, ``sft``, ``trained``, ``checkpoint``);
            an earlier ``eval_<tag>.jsonl`` there is emptied.
    """

    def __init__(self, out: str | Path, tag: str):
        from kgreason.training import JsonlSink  # Lightning loads with it: only when a sink is made

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / f"eval_{tag}.jsonl"
        self.stage = f"eval/{tag}"
        self._trajectories = JsonlSink(out / "trajectories.jsonl")
        self.path.write_text("", encoding="utf-8")

    def __call__(self, rows: Sequence[dict[str, Any]], trajs: Sequence[Trajectory]) -> None:
        self._trajectories(trajs, -1, self.stage)
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            f.flush()
