"""Loaders for the triple formats KBQA work meets, and an N-Triples writer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Literal

from kgreason.declarations import declare
from kgreason.errors import DatasetError
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.oxigraph import OxigraphKB, TripleLike
from kgreason.kb.schema import FREEBASE, GENERIC, METAQA, KBSchema, as_schema, sparql_string
from kgreason.kb.triplestore import TripleStoreKB
from kgreason.types import Term

Backend = Literal["oxigraph", "triplestore"]


def _build(triples: Iterable[TripleLike], schema: KBSchema, backend: Backend, **kw) -> KnowledgeBase:
    if backend == "oxigraph":
        return OxigraphKB.from_triples(triples, schema=schema, **kw)
    if backend == "triplestore":
        return TripleStoreKB.from_triples(triples, schema=schema, **kw)
    raise ValueError(f"unknown backend {backend!r} (use 'oxigraph' or 'triplestore')")


def read_metaqa_triples(path: str | Path, with_names: bool = True) -> Iterator[TripleLike]:
    """Triples of a MetaQA ``kb.txt`` (``head|relation|tail``), ids being the names.

    With ``with_names`` each entity also gets an ``rdfs:label`` so that name look-ups work
    the same way as on Freebase-style KBs.
    """
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"MetaQA KB not found: {path}")
    named: set[str] = set()
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("|")
            if len(parts) != 3:
                raise DatasetError(f"{path}:{lineno}: expected head|relation|tail, got {line!r}")
            h, r, t = (p.strip() for p in parts)
            yield h, r, t
            if with_names:
                for e in (h, t):
                    if e not in named:
                        named.add(e)
                        yield e, METAQA.name_relations[0], Term.literal(e)


@declare(schema="metaqa")
def load_metaqa_kb(path: str | Path, backend: Backend = "oxigraph", **kw) -> KnowledgeBase:
    """The MetaQA movie KG (``kb.txt``) as a KB whose entity ids are the entity names."""
    return _build(read_metaqa_triples(path), METAQA, backend, **kw)


def read_tsv_triples(
    path: str | Path, literal_relations: Iterable[str] = (), sep: str = "\t"
) -> Iterator[TripleLike]:
    """``head<TAB>relation<TAB>tail`` lines; tails of ``literal_relations`` become literals."""
    lits = set(literal_relations)
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"triples file not found: {path}")
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split(sep)
            if len(parts) != 3:
                raise DatasetError(f"{path}:{lineno}: expected 3 fields, got {len(parts)}")
            h, r, t = parts
            yield h, r, (Term.literal(t) if r in lits else t)


def load_tsv_kb(path: str | Path, schema: KBSchema | str = GENERIC, backend: Backend = "oxigraph",
                literal_relations: Iterable[str] = (), sep: str = "\t", **kw) -> KnowledgeBase:
    """``head<TAB>relation<TAB>tail`` triples (``kb=tsv``); each entity gets its id as a name.

    Ids are the strings of the file, as in MetaQA's ``kb.txt``: an agent reads them, and a
    look-up by name finds them.
    """
    schema = as_schema(schema)
    return _build(_with_names(read_tsv_triples(path, literal_relations, sep), schema), schema, backend, **kw)


def _with_names(triples: Iterable[TripleLike], schema: KBSchema) -> Iterator[TripleLike]:
    """The triples, plus a name triple for each entity that has none in them."""
    if not schema.name_relations:
        yield from triples
        return
    name_rel = schema.name_relations[0]
    seen: list[str] = []
    named: set[str] = set()
    for h, r, t in triples:
        yield h, r, t
        if r in schema.name_relations:
            named.add(h)
        seen.append(h)
        if isinstance(t, str):
            seen.append(t)
    for e in dict.fromkeys(seen):
        if e not in named:
            yield e, name_rel, Term.literal(e)


def load_rdf_kb(path: str | Path, format: str | None = None, schema: KBSchema | str = FREEBASE,
                **kw) -> OxigraphKB:
    """N-Triples / Turtle / N-Quads file into an embedded Oxigraph store (``kb=rdf``).

    Raises:
        DatasetError: the file does not exist.
        KBQueryError: the file does not parse.
    """
    if not Path(path).exists():
        raise DatasetError(f"RDF file not found: {path} (kb.path)")
    return OxigraphKB.from_file(path, format=format, schema=as_schema(schema), **kw)


def load_rog_subgraphs(path: str | Path, schema: KBSchema = GENERIC, id_field: str = "id",
                       limit: int | None = None) -> TripleStoreKB:
    """RoG/NSM-style per-question subgraphs (JSON lines or a JSON list).

    Each record holds ``id`` and ``graph`` as ``[[head, relation, tail], ...]``. The
    returned KB holds the union of all subgraphs and registers each under its id, so
    ``kb.subgraph(sample.subgraph)`` gives the question's own graph (KG-R1 training).
    """
    path = Path(path)
    if not path.exists():
        raise DatasetError(f"subgraph file not found: {path}")
    text = path.read_text(encoding="utf-8")
    records = json.loads(text) if text.lstrip().startswith("[") else [
        json.loads(line) for line in text.splitlines() if line.strip()
    ]
    kb = TripleStoreKB(schema=schema)
    for n, rec in enumerate(records):
        if limit is not None and n >= limit:
            break
        if id_field not in rec or "graph" not in rec:
            raise DatasetError(f"{path}: record {n} lacks {id_field!r} or 'graph'")
        triples: list[TripleLike] = []
        for tr in rec["graph"]:
            if len(tr) != 3:
                raise DatasetError(f"{path}: record {rec[id_field]} has a non-triple {tr!r}")
            h, r, t = (str(x) for x in tr)
            triples.append((h, r, t))
        names = {x for h, _, t in triples for x in (h, t)}
        if schema.name_relations:
            triples += [(e, schema.name_relations[0], Term.literal(e)) for e in sorted(names)]
        kb.add_subgraph(str(rec[id_field]), triples)
        kb.add_triples(triples)
    return kb


def term_to_nt(t: Term | str, schema: KBSchema, relation: bool = False) -> str:
    if isinstance(t, str):
        return f"<{schema.relation_iri(t) if relation else schema.entity_iri(t)}>"
    return schema.term_ref(t)


def write_ntriples(triples: Iterable[TripleLike], path: str | Path,
                   schema: KBSchema = FREEBASE) -> int:
    """Write triples as N-Triples (full IRIs; literal escapes as in SPARQL). Returns the count."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as f:
        for h, r, t in triples:
            obj = term_to_nt(t, schema) if isinstance(t, str) else (
                sparql_string(t.value, lang=t.lang, datatype=t.datatype)
            )
            f.write(f"<{schema.entity_iri(h)}> <{schema.relation_iri(r)}> {obj} .\n")
            n += 1
    return n
