"""Witness KGs: check the S-expression compiler against GrailQA's own SPARQL.

For a GrailQA question, :func:`witness_triples` builds a small KG from its
``graph_query``: three copies of the answer path (fresh instances of every class node,
the topic entities shared), distractors that must not be answers (a copy that reaches a
different entity, a copy whose question node has another class, a copy with another
literal), and for comparatives and superlatives literal values below, at and above the
constraint. :func:`check_question` runs the official ``sparql_query`` and the compiled
``s_expression`` (:func:`~kgreason.kb.sexpr.sexpr_to_sparql`) on it and compares the
answers; :func:`check_file` does so for a whole question file and reports agreement by
function type, with every disagreement and its reason.

``python -m kgreason.kb.witness ../shared/data/questions/graliqa.json`` prints the report.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgreason.errors import KBError
from kgreason.kb.oxigraph import OxigraphKB
from kgreason.kb.schema import FREEBASE, expand_prefixes
from kgreason.kb.sexpr import sexpr_to_sparql
from kgreason.types import Term

XSD = "http://www.w3.org/2001/XMLSchema#"
TYPE = "type.object.type"
COPIES = 3
_ZONED_DATE = re.compile(r'"(\d{4}-\d\d-\d\d)-08:00"')


@dataclass
class Check:
    """The outcome for one question."""

    qid: str
    function: str
    agree: bool
    official: list[str] = field(default_factory=list)
    compiled: list[str] = field(default_factory=list)
    reason: str = ""


def _shift(value: str, datatype: str, step: int) -> str:
    """``value`` moved by ``step`` units of its type (days for dates, years for gYear)."""
    kind = datatype.rsplit("#", 1)[-1]
    if kind in ("date", "dateTime"):
        d = dt.date.fromisoformat(value[:10]) + dt.timedelta(days=step)
        return d.isoformat() + value[10:]
    if kind == "gYear":
        return str(int(value) + step)
    if kind in ("int", "integer", "long", "short"):
        return str(int(float(value)) + step)
    return repr(float(value) + step)


def _literal(node_id: str) -> tuple[str, str]:
    value, _, datatype = node_id.partition("^^")
    return value.strip('"'), datatype or XSD + "string"


def witness_triples(graph_query: dict[str, Any]) -> list[tuple[str, str, str | Term]]:
    """A small KG on which the question's answers are known (see the module docstring).

    Copies ``0..2`` follow the path; copy ``d`` reaches distractor entities instead of
    the topic entities, and copy ``t`` types the question node with another class. For a
    literal node with function ``none`` copy ``d`` also takes another value; for
    comparatives the three copies take the value minus one unit, the value, and plus one;
    for ARGMAX / ARGMIN they take 1, 2, 3 (and copy ``d`` a larger 9, outside the set).
    """
    nodes = {n["nid"]: n for n in graph_query["nodes"]}
    triples: list[tuple[str, str, str | Term]] = []
    copies = [str(k) for k in range(COPIES)] + ["d", "t"]

    def instance(nid: int, copy: str) -> str | Term:
        n = nodes[nid]
        if n["node_type"] == "entity":
            return f"wd.{nid}" if copy == "d" else n["id"]
        if n["node_type"] == "literal":
            value, datatype = _literal(n["id"])
            fn = n["function"]
            if fn in ("argmax", "argmin"):
                step = 9 if copy == "d" else 2 if copy == "t" else int(copy) + 1
                base = {"date": "2000-01-01", "dateTime": "2000-01-01T00:00:00", "gYear": "2000"}.get(
                    datatype.rsplit("#", 1)[-1], "0")
                return Term.literal(_shift(base, datatype, step), datatype)
            if fn in ("<", "<=", ">", ">="):
                step = 0 if copy in ("d", "t") else int(copy) - 1
                return Term.literal(_shift(value, datatype, step), datatype)
            return Term.literal(_shift(value, datatype, 1) if copy == "d" else value, datatype)
        return f"w{copy}.{nid}"

    for copy in copies:
        for nid, n in nodes.items():
            if n["node_type"] == "literal":
                continue
            inst = instance(nid, copy)
            cls = n["class"]
            if copy == "t" and n["question_node"]:
                cls = "witness.other_class"
            triples.append((inst, TYPE, cls))  # type: ignore[arg-type]
        for e in graph_query["edges"]:
            triples.append((instance(e["start"], copy), e["relation"], instance(e["end"], copy)))  # type: ignore[arg-type]
    return list(dict.fromkeys(triples))


def _values(kb: OxigraphKB, sparql: str) -> list[str]:
    rows = kb.select(sparql)
    return sorted({t.value for r in rows for t in r.values()})


def check_question(q: dict[str, Any]) -> Check:
    """Run the official SPARQL and the compiled S-expression on the question's witness KG."""
    fn = q.get("function", "none")
    fn = "comparative" if fn in ("<", "<=", ">", ">=") else fn
    c = Check(str(q.get("qid")), fn, False)
    kb = OxigraphKB.from_triples(witness_triples(q["graph_query"]), schema=FREEBASE)
    try:
        c.official = _values(kb, expand_prefixes(q["sparql_query"], {}))
    except KBError as e:
        c.reason = f"official SPARQL fails: {e}"
        return c
    try:
        c.compiled = _values(kb, sexpr_to_sparql(q["s_expression"], exclude_entities=True))
    except KBError as e:
        c.reason = f"compiled S-expression fails: {e}"
        return c
    c.agree = c.official == c.compiled
    if not c.agree:
        c.reason = _why(q, c)
        untimed = _ZONED_DATE.sub(r'"\1"', q["sparql_query"])
        if untimed != q["sparql_query"] and _values(kb, expand_prefixes(untimed, {})) == c.compiled:
            c.reason += "; with the zone removed the official query agrees"
    elif not c.official or c.official == ["0"]:
        c.agree, c.reason = False, "both empty: the witness does not exercise the query"
    return c


def _why(q: dict[str, Any], c: Check) -> str:
    lits = [n for n in q["graph_query"]["nodes"] if n["node_type"] == "literal"]
    if any("date" in n["id"] for n in lits) and _ZONED_DATE.search(q["sparql_query"]):
        return ("the official query writes its date with a time zone (\"...-08:00\"^^xsd:date), which neither "
                "equals nor orders against the KB's untimed dates; the S-expression's date has no zone")
    if not c.official:
        return "the official query finds nothing on the witness"
    if not c.compiled:
        return "the compiled query finds nothing on the witness"
    return f"different answers: official {c.official[:4]}, compiled {c.compiled[:4]}"


def check_file(path: str | Path) -> tuple[dict[str, dict[str, float]], list[Check]]:
    """Agreement by function type (``n``, ``agree``, ``rate``) and every check."""
    questions = json.loads(Path(path).read_text(encoding="utf-8"))
    checks = [check_question(q) for q in questions]
    by: dict[str, Counter] = defaultdict(Counter)
    for c in checks:
        for key in (c.function, "all"):
            by[key]["n"] += 1
            by[key]["agree"] += c.agree
    return {k: {"n": v["n"], "agree": v["agree"], "rate": v["agree"] / v["n"]} for k, v in by.items()}, checks


def report(summary: dict[str, dict[str, float]], checks: Iterable[Check]) -> str:
    lines = ["| function | questions | agree | rate |", "|---|---|---|---|"]
    for k in sorted(summary, key=lambda k: (k == "all", k)):
        s = summary[k]
        lines.append(f"| {k} | {s['n']} | {s['agree']} | {s['rate']:.3f} |")
    bad = [c for c in checks if not c.agree]
    if bad:
        lines += ["", "Disagreements:", ""]
        lines += [f"- {c.qid} ({c.function}): {c.reason}" for c in bad]
    return "\n".join(lines)


if __name__ == "__main__":
    summary, checks = check_file(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/questions/graliqa.json")
    print(report(summary, checks))
