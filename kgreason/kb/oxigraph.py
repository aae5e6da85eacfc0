"""Embedded Oxigraph store: the default backend."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox

from kgreason.errors import KBQueryError, KBUnavailable
from kgreason.kb.base import KnowledgeBase, Row
from kgreason.kb.query_process import QueryProcess
from kgreason.kb.schema import FREEBASE, KBSchema
from kgreason.types import XSD, Term

TripleLike = tuple[str, str, "str | Term"]

_TRUE = Term.literal("true", XSD + "boolean")
_FALSE = Term.literal("false", XSD + "boolean")

_FORMATS = {
    ".nt": ox.RdfFormat.N_TRIPLES,
    ".ttl": ox.RdfFormat.TURTLE,
    ".nq": ox.RdfFormat.N_QUADS,
    ".trig": ox.RdfFormat.TRIG,
    ".rdf": ox.RdfFormat.RDF_XML,
    ".xml": ox.RdfFormat.RDF_XML,
}


def to_term(t: ox.NamedNode | ox.Literal | ox.BlankNode, schema: KBSchema) -> Term:
    if isinstance(t, ox.NamedNode):
        return Term.uri(schema.to_id(t.value))
    if isinstance(t, ox.Literal):
        return Term.literal(t.value, t.datatype.value if not t.language else None, t.language)
    return Term("bnode", str(t.value))


def to_ox(t: str | Term, schema: KBSchema, relation: bool = False) -> ox.NamedNode | ox.Literal:
    if isinstance(t, str):
        return ox.NamedNode(schema.relation_iri(t) if relation else schema.entity_iri(t))
    if t.kind == "literal":
        if t.lang:
            return ox.Literal(t.value, language=t.lang)
        if t.datatype:
            return ox.Literal(t.value, datatype=ox.NamedNode(t.datatype))
        return ox.Literal(t.value)
    return ox.NamedNode(schema.entity_iri(t.value))


class OxigraphKB(KnowledgeBase):
    """A ``pyoxigraph.Store``, in memory (``path=None``) or on disk.

    Queries with a time budget (:meth:`select`) run in a worker process holding a copy of
    the store (:class:`~kgreason.kb.query_process.QueryProcess`), killed at the timeout:
    pyoxigraph cannot cancel a query, and one left running on a thread kept a core busy
    for hours. The one-hop helpers, whose shapes are fixed, run in this process.

    Example:
        >>> from kgreason.types import Term
        >>> kb = OxigraphKB.from_triples([("m.a", "p.q.r", "m.b"),
        ...                               ("m.a", "type.object.name", Term.literal("A", lang="en"))])
        >>> kb.relations_out("m.a"), kb.lookup("a")
        (['p.q.r'], ['m.a'])
    """

    def __init__(
        self,
        store: ox.Store | None = None,
        schema: KBSchema = FREEBASE,
        path: str | Path | None = None,
        max_rows: int = 10_000,
        timeout_s: float | None = 30.0,
    ):
        super().__init__(schema=schema, max_rows=max_rows, timeout_s=timeout_s)
        if store is None:
            store = ox.Store(str(path)) if path is not None else ox.Store()
        self.store = store
        self._name_index: dict[str, list[str]] | None = None
        self._closed = False
        self._path = path
        self._queries: QueryProcess | None = None
        self._queries_lock = threading.Lock()

    # ------------------------------------------------------------------ build
    @classmethod
    def from_file(
        cls, path: str | Path, format: str | None = None, schema: KBSchema = FREEBASE, **kw
    ) -> OxigraphKB:
        """Load an RDF file (N-Triples, Turtle, N-Quads, TriG, RDF/XML) into memory."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(path)
        fmt = _FORMATS.get(f".{format.lower().lstrip('.')}" if format else path.suffix.lower())
        if fmt is None:
            raise ValueError(f"unknown RDF format for {path.name!r}; pass format='nt'|'ttl'|...")
        kb = cls(schema=schema, **kw)
        try:
            kb.store.bulk_load(path=str(path), format=fmt)
        except SyntaxError as e:
            raise KBQueryError(f"cannot parse {path}: {e}") from e
        return kb

    @classmethod
    def from_triples(
        cls, triples: Iterable[TripleLike], schema: KBSchema = FREEBASE, **kw
    ) -> OxigraphKB:
        """Build from ``(head_id, relation_id, tail)`` with ``tail`` an id or a literal Term."""
        kb = cls(schema=schema, **kw)
        kb.add_triples(triples)
        return kb

    def add_triples(self, triples: Iterable[TripleLike]) -> None:
        s = self.schema
        self._stop_queries()  # its copy of the store would be stale
        self.store.bulk_extend(
            ox.Quad(to_ox(h, s), to_ox(r, s, relation=True), to_ox(t, s)) for h, r, t in triples
        )
        self._name_index = None

    def __len__(self) -> int:
        return len(self.store)

    # ------------------------------------------------------------------ query
    def _run(self, sparql: str, limit: int) -> list[Row]:
        """Run a query here, in this process (the worker process runs it with this too)."""
        try:
            res = self.store.query(sparql)
        except SyntaxError as e:
            raise KBQueryError(f"SPARQL syntax error: {e}") from e
        except OSError as e:
            raise KBUnavailable(f"store error: {e}") from e
        except (RuntimeError, ValueError) as e:  # e.g. "The custom function <…> is not supported"
            raise KBQueryError(f"query evaluation failed: {e}") from None
        if isinstance(res, ox.QueryBoolean):
            return [{"ask": _TRUE if bool(res) else _FALSE}]
        if not isinstance(res, ox.QuerySolutions):
            raise KBQueryError("only SELECT and ASK queries are supported")
        names = [v.value for v in res.variables]
        rows: list[Row] = []
        schema = self.schema
        try:
            for sol in res:
                rows.append(
                    {n: to_term(v, schema) for n, v in zip(names, sol, strict=True) if v is not None}
                )
                if len(rows) >= limit:
                    break
        except (OSError, RuntimeError, ValueError) as e:
            raise KBQueryError(f"query evaluation failed: {e}") from None
        return rows

    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        if self._closed:
            raise KBUnavailable("the OxigraphKB was closed")
        if timeout_s is None:
            return self._run(sparql, limit)
        with self._queries_lock:
            if self._queries is None:
                self._queries = QueryProcess(self.store, self.schema, self._path)
            queries = self._queries
        return queries.run(sparql, limit, timeout_s)

    def _stop_queries(self) -> None:
        with self._queries_lock:
            if self._queries is not None:
                self._queries.close()
                self._queries = None

    # Names are matched case-insensitively through an in-memory index instead of a
    # FILTER scan; the conformance suite checks both give the same ids.
    def _lookup_casefold(self, name: str) -> list[str]:
        if self._name_index is None:
            index: dict[str, set[str]] = {}
            preds = [ox.NamedNode(self.schema.relation_iri(r)) for r in self._name_preds()]
            for p in preds:
                for q in self.store.quads_for_pattern(None, p, None):
                    if isinstance(q.object, ox.Literal):
                        index.setdefault(q.object.value.lower(), set()).add(
                            self.schema.to_id(q.subject.value)
                        )
            self._name_index = {k: sorted(v) for k, v in index.items()}
        return list(self._name_index.get(name.lower(), []))

    def close(self) -> None:
        self._closed = True
        self._stop_queries()
