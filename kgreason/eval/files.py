"""An evaluation's files, written as it goes: ``eval_<tag>.jsonl`` and ``trajectories.jsonl``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kgreason.errors import ConfigError
from kgreason.types import Trajectory


class EvalSink:
    """Appends each scored batch's rows to ``out/eval_<tag>.jsonl`` and its trajectories to
    ``out/trajectories.jsonl`` (stage ``eval/<tag>``), flushed after every batch: a crash
    keeps every batch scored before it, and a long evaluation (a MetaQA one of 300
    questions takes half an hour here) can be read while it runs.

    Args:
        out: the run folder.
        tag: the evaluation's name (``untrained``, ``sft``, ``trained``, ``checkpoint``);
            an earlier ``eval_<tag>.jsonl`` there is emptied unless ``resume``.
        resume: keep the rows an earlier evaluation wrote there (:attr:`done`), so that
            an interrupted one goes on with the questions it had not scored. A line cut
            off by a kill mid-write is dropped (its question is scored again), in both
            files; so are this evaluation's trajectories whose row was not written (a kill
            between the two appends), which would otherwise be there twice.

    Raises:
        ConfigError: ``resume`` and a line before the last is not a JSON row with an ``id``.
    """

    def __init__(self, out: str | Path, tag: str, resume: bool = False):
        # Lightning loads with these: only when a sink is made
        from kgreason.training import JsonlSink
        from kgreason.training.resume import atomic_save, drop_jsonl_rows

        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        self.path = out / f"eval_{tag}.jsonl"
        self.stage = f"eval/{tag}"
        self._trajectories = JsonlSink(out / "trajectories.jsonl")
        #: rows kept from an earlier evaluation (``resume``), in file order
        self.done: list[dict[str, Any]] = read_rows(self.path) if resume and self.path.is_file() else []
        # rewritten: drops a cut-off last line, which the next append would otherwise join;
        # atomically, so a kill now cannot lose the rows kept
        atomic_save("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.done), self.path,
                    lambda text, p: Path(p).write_text(text, encoding="utf-8"))
        if resume:
            # the next append would join a cut-off trajectory line to a whole one, and a
            # reader of the file (kgreason.eval.plans) would stop at it
            kept = {str(r["id"]) for r in self.done}
            drop_jsonl_rows(self._trajectories.path,
                            lambda r: r.get("stage") == self.stage and str(r.get("sample_id")) not in kept)

    def __call__(self, rows: Sequence[dict[str, Any]], trajs: Sequence[Trajectory]) -> None:
        self._trajectories(trajs, -1, self.stage)
        with self.path.open("a", encoding="utf-8") as f:
            f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            f.flush()


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of an ``eval_<tag>.jsonl``; a last line cut off mid-write is left out.

    Raises:
        ConfigError: a line before the last is not a JSON object with an ``id``.
    """
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    rows = []
    for n, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if isinstance(row, dict) and "id" in row:
            rows.append(row)
        elif n < len(lines):  # only the last line can be half-written by a kill
            raise ConfigError(f"{path}:{n} is not an evaluation row (a JSON object with an 'id'): {line[:80]!r}")
    return rows
