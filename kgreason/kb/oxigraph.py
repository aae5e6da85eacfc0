"""Embedded Oxigraph store: the default backend."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

import pyoxigraph as ox

from kgreason.errors import KBQueryError, KBTimeout, KBUnavailable
from kgreason.kb.base import KnowledgeBase, Row
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

    Queries with a time budget run on a worker thread (pyoxigraph releases the GIL), so
    the caller gets :class:`KBTimeout` on time; a blocking operator (ORDER BY, GROUP BY)
    cannot be interrupted inside the engine and finishes in the background, its result
    dropped.

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
        self.store.bulk_extend(
            ox.Quad(to_ox(h, s), to_ox(r, s, relation=True), to_ox(t, s)) for h, r, t in triples
        )
        self._name_index = None

    def __len__(self) -> int:
        return len(self.store)

    # ------------------------------------------------------------------ query
    def _run(self, sparql: str, limit: int, cancel: threading.Event | None) -> list[Row]:
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
        failure, sol = None, None
        try:
            for sol in res:
                rows.append(
                    {n: to_term(v, schema) for n, v in zip(names, sol, strict=True) if v is not None}
                )
                if len(rows) >= limit or (cancel is not None and cancel.is_set()):
                    break
        except (OSError, RuntimeError, ValueError) as e:
            failure = f"query evaluation failed: {e}"
        # pyoxigraph's solutions may only be dropped on the thread that made them: a raised
        # error's traceback would carry this frame, and them, to the caller's thread
        del res, sol
        if failure is not None:
            raise KBQueryError(failure)
        return rows

    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        if self._closed:
            raise KBUnavailable("the OxigraphKB was closed")
        if timeout_s is None:
            return self._run(sparql, limit, None)
        # A daemon thread, not an executor: executor workers are joined at interpreter
        # exit, so a query abandoned on timeout would keep the process from exiting.
        box: dict[str, object] = {}
        finished, cancel = threading.Event(), threading.Event()

        def work() -> None:
            try:
                box["rows"] = self._run(sparql, limit, cancel)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller
                box["error"] = e
            finally:
                finished.set()

        threading.Thread(target=work, daemon=True, name="kgreason-oxigraph-query").start()
        if not finished.wait(timeout_s):
            cancel.set()
            raise KBTimeout(f"query exceeded {timeout_s:.3g}s")
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["rows"]  # type: ignore[return-value]

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
