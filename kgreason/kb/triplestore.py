"""In-memory indexed triples with a registry of per-question subgraphs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from kgreason.errors import KBError
from kgreason.kb.base import KnowledgeBase, Row
from kgreason.kb.oxigraph import OxigraphKB, TripleLike
from kgreason.kb.schema import FREEBASE, KBSchema
from kgreason.types import Term


class SubgraphNotFound(KBError):
    """No subgraph is registered under the requested key."""


class TripleStoreKB(KnowledgeBase):
    """Triples held in dict-of-sets indexes; one-hop helpers are dictionary look-ups.

    ``select`` delegates to an in-memory Oxigraph store built lazily from the same
    triples. KG-R1 trains on RoG-style per-question 2-hop subgraphs: register them with
    :meth:`add_subgraph` and get a KB restricted to one with :meth:`subgraph`.

    Example:
        >>> kb = TripleStoreKB.from_triples([("m.a", "p.q.r", "m.b")])
        >>> [t.value for t in kb.tails("m.a", "p.q.r")], kb.relations_in("m.b")
        (['m.b'], ['p.q.r'])
    """

    def __init__(self, schema: KBSchema = FREEBASE, max_rows: int = 10_000,
                 timeout_s: float | None = 30.0):
        super().__init__(schema=schema, max_rows=max_rows, timeout_s=timeout_s)
        self._out: dict[str, dict[str, set[Term]]] = defaultdict(lambda: defaultdict(set))
        self._in: dict[Term, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self._triples: list[tuple[str, str, Term]] = []
        self._oxigraph: OxigraphKB | None = None
        self._subgraphs: dict[str, list[TripleLike]] = {}
        self._subgraph_kbs: dict[str, TripleStoreKB] = {}
        self._casefold: dict[str, set[str]] | None = None

    @classmethod
    def from_triples(cls, triples: Iterable[TripleLike], schema: KBSchema = FREEBASE,
                     **kw) -> TripleStoreKB:
        kb = cls(schema=schema, **kw)
        kb.add_triples(triples)
        return kb

    def add_triples(self, triples: Iterable[TripleLike]) -> None:
        for h, r, t in triples:
            tt = Term.uri(t) if isinstance(t, str) else t
            if tt in self._out[h][r]:
                continue
            self._out[h][r].add(tt)
            self._in[tt][r].add(h)
            self._triples.append((h, r, tt))
        self._oxigraph = None
        self._casefold = None

    def __len__(self) -> int:
        return len(self._triples)

    def triples(self) -> list[tuple[str, str, Term]]:
        return list(self._triples)

    # -------------------------------------------------------------- subgraphs
    def add_subgraph(self, key: str, triples: Iterable[TripleLike]) -> None:
        """Register the triples of one question's subgraph under ``key``."""
        self._subgraphs[key] = list(triples)
        self._subgraph_kbs.pop(key, None)

    def has_subgraph(self, key: str) -> bool:
        return key in self._subgraphs

    def subgraph(self, key: str) -> TripleStoreKB:
        """A KB holding only the subgraph registered under ``key`` (built once)."""
        if key not in self._subgraphs:
            raise SubgraphNotFound(f'Sample "{key}" not found in KG')
        if key not in self._subgraph_kbs:
            self._subgraph_kbs[key] = TripleStoreKB.from_triples(
                self._subgraphs[key], schema=self.schema, max_rows=self.max_rows,
                timeout_s=self.timeout_s,
            )
        return self._subgraph_kbs[key]

    # ------------------------------------------------------------------ query
    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        if self._oxigraph is None:
            self._oxigraph = OxigraphKB.from_triples(self._triples, schema=self.schema)
        return self._oxigraph._select(sparql, timeout_s, limit)

    # --------------------------------------------------------- one-hop helpers
    def _visible(self, rels: Iterable[str]) -> list[str]:
        hidden = set(self.schema.hidden)
        return sorted(r for r in rels if r not in hidden)

    def relations_out(self, e: str) -> list[str]:
        return self._visible(r for r, ts in self._out.get(e, {}).items() if ts)

    def relations_in(self, e: str | Term) -> list[str]:
        key = Term.uri(e) if isinstance(e, str) else e
        return self._visible(r for r, hs in self._in.get(key, {}).items() if hs)

    def tails(self, e: str, r: str) -> list[Term]:
        return sorted(self._out.get(e, {}).get(r, ()))

    def heads(self, e: str | Term, r: str) -> list[Term]:
        key = Term.uri(e) if isinstance(e, str) else e
        return sorted(Term.uri(h) for h in self._in.get(key, {}).get(r, ()))

    def exists(self, e: str) -> bool:
        return e in self._out or Term.uri(e) in self._in

    def names(self, ids: Iterable[str]) -> dict[str, str]:
        if self.schema.ids_are_names:
            return {i: i for i in dict.fromkeys(ids)}
        out: dict[str, str] = {}
        lang = self.schema.lang
        for e in dict.fromkeys(ids):
            cands = [
                t for r in self.schema.name_relations for t in self._out.get(e, {}).get(r, ())
                if t.is_literal
            ]
            if cands:
                best = min(cands, key=lambda t: (0 if lang and t.lang == lang else 1 if not t.lang else 2, t.value))
                out[e] = best.value
        return out

    def lookup(self, name: str) -> list[str]:
        lang = self.schema.lang
        exact = {Term.literal(name)} | ({Term.literal(name, lang=lang)} if lang else set())
        found: set[str] = set()
        for lit in exact:
            for r in self._name_preds():
                found |= self._in.get(lit, {}).get(r, set())
        if found:
            return sorted(found)
        index = self._casefold
        if index is None:
            # built in full before it is published: a concurrent look-up never sees it half-filled
            index = defaultdict(set)
            preds = set(self._name_preds())
            for h, r, t in self._triples:
                if r in preds and t.is_literal:
                    index[t.value.lower()].add(h)
            self._casefold = index
        return sorted(index.get(name.lower(), ()))

    def types(self, e: str) -> list[str]:
        if not self.schema.type_relation:
            return []
        return sorted(t.value for t in self._out.get(e, {}).get(self.schema.type_relation, ()))
