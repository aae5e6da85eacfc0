"""Regenerate ``questions.jsonl`` from the demo KG: ``python -m kgreason.data.demo.build``.

Every question's answers are the result of executing its gold SPARQL on the KG;
questions whose gold SPARQL returns nothing, or whose S-expression disagrees with it,
are reported and left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kgreason.data.demo.kg import build_demo_kg
from kgreason.data.demo.questions import Q, generate, level_and_split
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.oxigraph import OxigraphKB
from kgreason.kb.sexpr import sexpr_to_sparql
from kgreason.types import Entity, KBQASample

QUESTIONS_FILE = Path(__file__).with_name("questions.jsonl")


def answers_of(kb: KnowledgeBase, sparql: str) -> list[Entity]:
    """Answer entities (with names) or literals of a SELECT over ``?x`` or ``?count``."""
    rows = kb.select(sparql)
    terms = sorted({t for r in rows for k, t in r.items() if k in ("x", "count")})
    names = kb.names([t.value for t in terms if t.is_entity])
    return [
        Entity(t.value, names.get(t.value)) if t.is_entity else Entity(t.value, t.value, datatype=t.datatype)
        for t in terms
    ]


def to_sample(i: int, q: Q, kb: KnowledgeBase) -> KBQASample:
    qid = f"demo-{q.template}-{i:04d}"
    level, split = level_and_split(q, qid)
    names = kb.names(q.topics)
    return KBQASample(
        id=qid,
        question=q.question,
        topic_entities=[Entity(t, names.get(t)) for t in q.topics],
        answers=answers_of(kb, q.sparql),
        sexpr=q.sexpr,
        sparql=q.sparql,
        relation_path=q.path,
        hops=q.hops,
        level=level,
        meta={"qtype": q.qtype, "template": q.template, "split": split, **q.meta},
    )


def build_samples(check_sexpr: bool = True) -> tuple[list[KBQASample], list[str]]:
    kg = build_demo_kg()
    kb = OxigraphKB.from_triples(kg.triples)
    samples, problems = [], []
    for i, q in enumerate(generate(kg)):
        s = to_sample(i, q, kb)
        if not s.answers:
            problems.append(f"empty: {q.question}")
            continue
        if check_sexpr:
            got = answers_of(kb, sexpr_to_sparql(q.sexpr))
            if {a.id for a in got} != {a.id for a in s.answers}:
                problems.append(f"sexpr mismatch: {q.question}: {[a.id for a in got][:5]} vs {[a.id for a in s.answers][:5]}")
                continue
        samples.append(s)
    return samples, problems


def main() -> int:
    samples, problems = build_samples()
    for p in problems:
        print(p, file=sys.stderr)
    with QUESTIONS_FILE.open("w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(s.to_dict(), ensure_ascii=False) + "\n")
    print(f"wrote {len(samples)} questions to {QUESTIONS_FILE} ({len(problems)} left out)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
