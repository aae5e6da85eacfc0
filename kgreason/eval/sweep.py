"""One table over every job of a Hydra multirun (``-m reward=f1,em``): ``<sweep>/results.md``.

Written by the runner at the end of a sweep (:class:`SweepSummary`, a Hydra callback in
``kgreason/conf/config.yaml``), or for any sweep folder with
``python -m kgreason.eval.sweep multirun/<date>``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

#: evaluation tags in the order a run makes them
TAGS = ("untrained", "checkpoint", "sft", "trained")


def sweep_rows(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One row per job folder holding a ``results.json``: its overrides and its scores.

    Jobs still missing their ``results.json`` (failed or killed) are rows with
    ``status="no results"``, so that a table never hides a job.
    """
    root = Path(sweep_dir)
    rows = []
    for job in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not ((job / "results.json").is_file() or (job / ".hydra").is_dir() or (job / "config.yaml").is_file()):
            continue
        row: dict[str, Any] = {"job": job.name}
        label = _row_label(job)
        if label:  # an ablation row: the paper's name for it
            row = {"row": label, **row}
        if not (job / "results.json").is_file():
            rows.append(row | {"status": "no results"})
            continue
        res = json.loads((job / "results.json").read_text(encoding="utf-8"))
        for tag, ev in res.get("eval", {}).items():
            row[f"{tag} F1"] = ev["overall"]["f1"]
            row[f"{tag} Hit@1"] = ev["overall"]["hit1"]
            row["n"] = ev["overall"]["n"]
        if "trained F1" in row and "untrained F1" in row:
            row["gain F1"] = row["trained F1"] - row["untrained F1"]
        if "cost" in res:  # what an ablation's arm cost, beside what it scored
            row["training CPU-min"] = res["cost"]["training"]["cpu_min"]
        if "cold_start_reused" in res:  # its cost then leaves out the cold start it took
            made_by = res["cold_start_reused"].get("run")
            row["cold start"] = f"from job {Path(made_by).name}" if made_by else "reused"
        rows.append(row | {"status": "done"})
    return rows


def _row_label(job: Path) -> str | None:
    """The ``row`` a job's config names (set by an ``ablation_row`` option), if any."""
    for cfg in (job / "config.yaml", job / ".hydra" / "config.yaml"):
        if cfg.is_file():
            from omegaconf import OmegaConf

            return OmegaConf.load(cfg).get("row")
    return None


def sweep_markdown(rows: list[dict[str, Any]], title: str = "Sweep") -> str:
    """The rows as a markdown table, columns in run order.

    >>> print(sweep_markdown([{"job": "reward=f1", "trained F1": 0.3, "status": "done"},
    ...                       {"job": "reward=em", "status": "no results"}]))
    # Sweep
    <BLANKLINE>
    | job | trained F1 | status |
    |---|---|---|
    | reward=f1 | 0.300 | done |
    | reward=em |  | no results |
    """
    keys: list[str] = (["row"] if any("row" in r for r in rows) else []) + ["job"]
    for tag in TAGS:
        keys += [k for k in (f"{tag} F1", f"{tag} Hit@1") if any(k in r for r in rows)]
    keys += [k for k in ("gain F1", "training CPU-min", "cold start", "n", "status") if any(k in r for r in rows)]
    keys += sorted({k for r in rows for k in r} - set(keys))

    def cell(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else ("" if v is None else str(v))

    lines = [f"# {title}", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(cell(r.get(k)) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def summarize_sweep(sweep_dir: str | Path) -> Path:
    """Write ``<sweep_dir>/results.md`` (and ``results.json``) over its jobs; returns the markdown path."""
    root = Path(sweep_dir)
    rows = sweep_rows(root)
    (root / "results.json").write_text(json.dumps(rows, indent=2))
    path = root / "results.md"
    path.write_text(sweep_markdown(rows, title=f"Sweep {root.name}: {len(rows)} jobs") + "\n")
    return path


class SweepSummary(Callback):
    """Hydra callback: the sweep's table once every job has ended."""

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        path = summarize_sweep(config.hydra.sweep.dir)
        print(f"sweep summary: {path}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m kgreason.eval.sweep <multirun sweep folder>")
    print(summarize_sweep(sys.argv[1]).read_text())
