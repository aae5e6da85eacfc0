"""Where a planning policy's held-out misses come from: the path it names, the path it queries.

    python -m kgreason.eval.plans RUN/eval_checkpoint.jsonl --dataset metaqa --path ../shared/data/metaqa \\
        [--trajectories RUN/trajectories.jsonl] [--by hops|qtype|level]

A KnowCoder-A1 policy cold-started by the preset's teacher (``ScriptedKnowCoderTeacher(
plan_path=True)``) opens each episode with the relation path it means to walk ("… which
follows starred_actors, directed_by: 2 hops."; with ``plan_after_look`` in its second
thought) and ends it with an ``ExecuteSPARQL`` query
over some chain. Set against each question's gold ``relation_path`` (``~`` dropped, as the
teacher writes it), the two split the misses into a wrong plan, a right plan queried
wrongly, and a right query answered wrongly; the table gives the share of each and Hit@1
on either side. Rows come from the evaluation's ``eval_<tag>.jsonl``, episodes from the
``trajectories.jsonl`` beside it (stage ``eval/<tag>``; a question scored twice, as after an
``eval.resume``, counts its last episode).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kgreason.errors import ConfigError
from kgreason.eval.compare import GROUP_BY, group_name
from kgreason.types import KBQASample

#: the first thought's path, as the ``plan_path`` teacher writes it
_PLAN = re.compile(r"follows ([^:<]+?): \d+ hops?")
#: a relation in a query written with the action space's ``rel:`` prefix
_REL = re.compile(r"rel:([\w.]+)")


def named_path(text: str) -> list[str] | None:
    """The relations the first ``follows …: N hops`` of ``text`` names, or None.

    >>> named_path("<think>The question asks: who directed the movies acted by, which goes "
    ...            "actor -> movie -> director and follows starred_actors, directed_by: 2 hops.</think>")
    ['starred_actors', 'directed_by']
    >>> named_path("<think>The query returned the answer.</think>") is None
    True
    """
    m = _PLAN.search(text)
    return [r.strip().lstrip("~") for r in m.group(1).split(",")] if m else None


def queried_path(turns: Iterable[Mapping[str, Any]]) -> list[str] | None:
    """The relations of an episode's last ``ExecuteSPARQL`` query, in the order written, or None.

    >>> turns = [{"actions": [{"name": "ExecuteSPARQL", "kwargs": {"sparql": "SELECT ?x WHERE { ?m rel:directed_by ?x }"}}]},
    ...          {"actions": [{"name": "ExecuteSPARQL", "kwargs": {"sparql":
    ...              "SELECT ?x WHERE { ?m rel:starred_actors ns:A . ?m rel:directed_by ?x }"}}]}, {"actions": []}]
    >>> queried_path(turns)
    ['starred_actors', 'directed_by']
    """
    last = None
    for turn in turns:
        for action in turn.get("actions") or []:
            if action.get("name") == "ExecuteSPARQL":
                last = str((action.get("kwargs") or {}).get("sparql", ""))
    return None if last is None else _REL.findall(last)


def last_episodes(path: str | Path, stage: str) -> dict[str, dict[str, Any]]:
    """The ``trajectories.jsonl`` records of ``stage``, the last one of each question.

    A last line cut off by a kill mid-write is left out (a resumed evaluation scores that
    question again).

    Raises:
        ConfigError: no record of that stage (the file holds another evaluation's), or a
            line before the last is not JSON.
    """
    out: dict[str, dict[str, Any]] = {}
    stages: set[str] = set()
    bad: tuple[int, str] | None = None  # an unreadable line, an error unless it is the last
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            if bad:
                raise ConfigError(f"{path}:{bad[0]} is not a JSON trajectory record: {bad[1][:80]!r}")
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad = (n, line)
                continue
            stages.add(str(rec.get("stage")))
            if rec.get("stage") == stage:
                out[str(rec["sample_id"])] = rec
    if not out:
        raise ConfigError(f"{path} has no episode of stage {stage!r}; its stages: {', '.join(sorted(stages))}")
    return out


def plan_table(rows: Iterable[Mapping[str, Any]], episodes: Mapping[str, Mapping[str, Any]],
               samples: Iterable[KBQASample], by: str = "hops") -> list[dict[str, Any]]:
    """Per group (``"all"`` first): how often the named and the queried path are the gold one,
    and Hit@1 on either side of each.

    Only questions with a row, an episode and a gold ``relation_path`` count. Each returned
    row: ``group``, ``n``, ``plan_right`` (count), ``hit1_plan_right``, ``hit1_plan_wrong``,
    ``query_right`` (count), ``hit1_query_right``, ``hit1_query_wrong`` (NaN where a side is
    empty).

    >>> s = [KBQASample(id=i, question="?", relation_path=["~starred_actors", "directed_by"], hops=2) for i in "ab"]
    >>> plan = "follows starred_actors, directed_by: 2 hops"
    >>> eps = {"a": {"turns": [{"text": plan, "actions": []}]}, "b": {"turns": [{"text": "follows directed_by: 1 hop"}]}}
    >>> rows = [{"id": "a", "hops": 2, "hit1": 1.0}, {"id": "b", "hops": 2, "hit1": 0.0}]
    >>> t = plan_table(rows, eps, s)
    >>> [(r["group"], r["n"], r["plan_right"], r["hit1_plan_right"], r["hit1_plan_wrong"], r["query_right"]) for r in t]
    [('all', 2, 1, 1.0, 0.0, 0), ('2-hop', 2, 1, 1.0, 0.0, 0)]
    """
    gold = {s.id: [r.lstrip("~") for r in s.relation_path] for s in samples if s.relation_path}
    scored: list[tuple[str, bool, bool, float]] = []
    for row in rows:
        qid = str(row["id"])
        if qid not in gold or qid not in episodes:
            continue
        turns = episodes[qid].get("turns") or []
        # the first thought that names one (the second with plan_after_look)
        plan = next((p for t in turns if (p := named_path(str(t.get("text", "")))) is not None), None)
        scored.append((group_name(row, by), plan == gold[qid], queried_path(turns) == gold[qid], float(row["hit1"])))
    if not scored:
        raise ConfigError("no question has a row, an episode and a gold relation_path: "
                          "were the rows, the trajectories and the dataset those of one evaluation?")

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else float("nan")

    out = []
    for g in ["all", *sorted({s[0] for s in scored})]:
        part = [s for s in scored if g == "all" or s[0] == g]
        out.append({
            "group": g, "n": len(part),
            "plan_right": sum(s[1] for s in part),
            "hit1_plan_right": mean([s[3] for s in part if s[1]]),
            "hit1_plan_wrong": mean([s[3] for s in part if not s[1]]),
            "query_right": sum(s[2] for s in part),
            "hit1_query_right": mean([s[3] for s in part if s[2]]),
            "hit1_query_wrong": mean([s[3] for s in part if not s[2]]),
        })
    return out


def markdown(table: Sequence[Mapping[str, Any]]) -> str:
    """The :func:`plan_table` rows as a Markdown table."""
    lines = ["| group | n | plan right | Hit@1 plan right / wrong | query right | Hit@1 query right / wrong |",
             "|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['group']} | {r['n']} | {r['plan_right']} | {r['hit1_plan_right']:.3f} / "
                     f"{r['hit1_plan_wrong']:.3f} | {r['query_right']} | {r['hit1_query_right']:.3f} / "
                     f"{r['hit1_query_wrong']:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from kgreason.data import load_dataset
    from kgreason.eval.files import read_rows

    p = argparse.ArgumentParser(prog="python -m kgreason.eval.plans", description=__doc__.split("\n")[0])
    p.add_argument("rows", help="an evaluation's eval_<tag>.jsonl")
    p.add_argument("--trajectories", help="its trajectories.jsonl (default: the one beside the rows)")
    p.add_argument("--dataset", required=True, help="the dataset the questions come from (load_dataset name)")
    p.add_argument("--path", help="the dataset's file or folder")
    p.add_argument("--split", default="dev")
    p.add_argument("--hops", help="MetaQA: the hop folders to read, e.g. 1,2 (default: every one)")
    p.add_argument("--by", default="hops", choices=GROUP_BY)
    a = p.parse_args(argv)
    rows_path = Path(a.rows)
    tag = rows_path.stem.removeprefix("eval_")
    trajectories = Path(a.trajectories or rows_path.with_name("trajectories.jsonl"))
    if not trajectories.is_file():  # rows copied out of their run folder leave their episodes behind
        raise ConfigError(f"{trajectories}: no such file; give the evaluation's trajectories.jsonl with --trajectories")
    episodes = last_episodes(trajectories, f"eval/{tag}")
    kw = {"hops": [int(h) for h in a.hops.split(",")]} if a.hops else {}
    samples = load_dataset(a.dataset, a.path, split=a.split, **kw)
    print(markdown(plan_table(read_rows(rows_path), episodes, samples, by=a.by)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
