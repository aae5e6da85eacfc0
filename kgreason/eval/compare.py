"""Compare evaluation runs question type by question type.

    python -m kgreason.eval.compare kg_r1=RUN_A/eval_trained.jsonl isp_dtpo=RUN_B/eval_trained.jsonl \\
        [--groups 2-hop,cvt,superlative] [--metric f1] [--by qtype|level|hops] [--plot FIG.png]

A run written ``NAME=PATH:METRIC`` is read at its own metric, e.g. the greedy F1 next to
the pass@8 of sampled runs (``eval.runs=8``): ``greedy=A/eval_checkpoint.jsonl
pass@8=B/eval_checkpoint.jsonl:pass_f1``.

Each run's ``eval_<tag>.jsonl`` holds one row per question (``qtype``, ``level``, ``hops``
and the metrics). Only questions present in every run are compared, so two runs on
different subsets are never set side by side silently; the table says how many were
shared. ``--plot`` draws the table as one line per group across the runs in the order
given, e.g. a held-out curve over a run's checkpoints (needs the ``runner`` extra).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kgreason.errors import KGReasonError

#: the row fields a comparison can group by
GROUP_BY = ("qtype", "level", "hops")


def load_rows(path: str | Path) -> dict[str, dict[str, Any]]:
    """Per-question rows of an ``eval_*.jsonl`` file, keyed by question id."""
    rows: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[str(row["id"])] = row
    return rows


def group_name(row: Mapping[str, Any], by: str) -> str:
    """A row's group name: its ``by`` field (hop counts read ``2-hop``)."""
    value = row.get(by)
    return f"{value}-hop" if by == "hops" else str(value)


def compare(runs: Mapping[str, Mapping[str, Mapping[str, Any]]], metric: str = "f1", by: str = "qtype",
            groups: Sequence[str] | None = None, metrics: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Mean ``metric`` per group for each run, over the questions all runs share.

    Returns one row per group (``"all"`` first): ``{"group", "n", <run>: mean, ...}``.
    ``metrics`` gives a run its own metric (e.g. ``pass_f1`` of a sampled evaluation).

    >>> a = {"q1": {"qtype": "1-hop", "f1": 1.0}, "q2": {"qtype": "2-hop", "f1": 0.0}}
    >>> b = {"q1": {"qtype": "1-hop", "f1": 0.5}, "q2": {"qtype": "2-hop", "f1": 1.0}, "q3": {"qtype": "2-hop", "f1": 1.0}}
    >>> [(r["group"], r["n"], r["a"], r["b"]) for r in compare({"a": a, "b": b})]
    [('all', 2, 0.5, 0.75), ('1-hop', 1, 1.0, 0.5), ('2-hop', 1, 0.0, 1.0)]
    """
    if not runs:
        raise ValueError("compare needs at least one run")
    shared = set.intersection(*(set(r) for r in runs.values()))
    if not shared:
        raise ValueError("the runs share no question id: were they evaluated on the same split and seed?")
    first = next(iter(runs.values()))
    own = {name: (metrics or {}).get(name, metric) for name in runs}
    for name, rows in runs.items():
        have = rows[next(iter(shared))]
        if own[name] not in have:
            raise ValueError(f"run {name!r} has no metric {own[name]!r}; its rows have {sorted(have)}")
    # "all" always leads the table; naming it in ``groups`` must not add a second row
    names = (sorted({group_name(first[q], by) for q in shared}) if groups is None
             else [g for g in groups if g.lower() != "all"])
    out = []
    for g in ["all", *names]:
        ids = sorted(q for q in shared if g == "all" or group_name(first[q], by).lower() == g.lower())
        row: dict[str, Any] = {"group": g, "n": len(ids)}
        for name, rows in runs.items():
            row[name] = sum(float(rows[q][own[name]]) for q in ids) / len(ids) if ids else float("nan")
        out.append(row)
    return out


def markdown(table: Sequence[Mapping[str, Any]], runs: Sequence[str], metric: str = "f1",
             metrics: Mapping[str, str] | None = None) -> str:
    """The :func:`compare` rows as a Markdown table."""
    head = "| group | n | " + " | ".join(f"{r} {(metrics or {}).get(r, metric)}" for r in runs) + " |"
    lines = [head, "|---|---|" + "---|" * len(runs)]
    for row in table:
        lines.append(f"| {row['group']} | {row['n']} | " + " | ".join(f"{row[r]:.3f}" for r in runs) + " |")
    return "\n".join(lines)


def plot(table: Sequence[Mapping[str, Any]], runs: Sequence[str], path: str | Path, metric: str = "f1",
         title: str | None = None, metrics: Mapping[str, str] | None = None) -> Path:
    """Draw the :func:`compare` rows as one line per group across ``runs`` (x axis, in order).

    Args:
        table: :func:`compare` rows.
        runs: the run names, in the order the x axis shows them (e.g. checkpoints by step).
        path: the PNG to write.
        metric: the y axis label.
        title: the figure title.
        metrics: runs read at their own metric (named under the run on the x axis).

    Raises:
        KGReasonError: matplotlib is not installed.
    """
    try:
        import matplotlib
    except ImportError as e:
        raise KGReasonError("--plot needs matplotlib: pip install 'kgreason[runner]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1.6 * len(runs) + 3, 3.6))
    for row in table:
        ax.plot(range(len(runs)), [row[r] for r in runs], marker="o",
                lw=2.5 if row["group"] == "all" else 1.2, label=f"{row['group']} (n={row['n']})")
    ax.set_xticks(range(len(runs)), [f"{r}\n{metrics[r]}" if r in (metrics or {}) else r for r in runs])
    ax.set_ylabel(metric)
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def parse_run(spec: str) -> tuple[str, str, str | None]:
    """``NAME=PATH`` or ``NAME=PATH:METRIC`` → (name, path, metric or None).

    >>> parse_run("sft=runs/a/eval_sft.jsonl"), parse_run("pass@8=b/eval_checkpoint.jsonl:pass_f1")
    (('sft', 'runs/a/eval_sft.jsonl', None), ('pass@8', 'b/eval_checkpoint.jsonl', 'pass_f1'))
    """
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"expected NAME=PATH or NAME=PATH:METRIC, got {spec!r}")
    head, colon, tail = path.rpartition(":")
    if colon and head and re.fullmatch(r"[A-Za-z_]\w*", tail):
        return name, head, tail
    return name, path, None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="NAME=path/to/eval_<tag>.jsonl, or NAME=path:METRIC")
    ap.add_argument("--metric", default="f1")
    ap.add_argument("--by", default="qtype", choices=GROUP_BY)
    ap.add_argument("--groups", default=None, help="comma-separated groups (default: every group)")
    ap.add_argument("--plot", default=None, metavar="PNG", help="also draw the table: a line per group across the runs")
    args = ap.parse_args(argv)
    runs: dict[str, dict[str, dict[str, Any]]] = {}
    metrics: dict[str, str] = {}
    for spec in args.runs:
        try:
            name, path, own = parse_run(spec)
        except ValueError as e:
            ap.error(str(e))
        runs[name] = load_rows(path)
        if own:
            metrics[name] = own
    groups = args.groups.split(",") if args.groups else None
    table = compare(runs, args.metric, args.by, groups, metrics)
    print(markdown(table, list(runs), args.metric, metrics))
    if args.plot:
        print(f"figure: {plot(table, list(runs), args.plot, args.metric, metrics=metrics)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
