"""The abstract, read-only knowledge base every action space builds on (design §3, docs/design.md)."""

from __future__ import annotations

import abc
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kgreason.errors import KBTruncated
from kgreason.kb.guard import check_read_only
from kgreason.kb.schema import FREEBASE, KBSchema, as_schema, sparql_string
from kgreason.types import Term

Row = dict[str, Term]


class KnowledgeBase(abc.ABC):
    """A read-only KB answering SPARQL SELECT/ASK and the one-hop helpers.

    Subclasses implement :meth:`_select` (run an already-checked query, return at most
    ``limit`` rows); the public :meth:`select` does the read-only check, the row cap and
    the call counting. The one-hop helpers are SPARQL templates by default; a subclass
    with its own index may override them, and the conformance suite checks they agree.

    Args:
        schema: namespaces and name/alias/type relations (default: Freebase).
        max_rows: result-row cap of :meth:`select`; more rows raise :class:`KBTruncated`.
        timeout_s: default time budget of :meth:`select` (None = no limit).
    """

    #: row cap of the one-hop helpers, whose query shapes are fixed and bounded by degree
    helper_max_rows = 1_000_000

    def __init__(
        self,
        schema: KBSchema | str = FREEBASE,
        max_rows: int = 10_000,
        timeout_s: float | None = 30.0,
    ):
        self.schema = as_schema(schema)
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self.stats: dict[str, float] = {"queries": 0, "query_time_s": 0.0}
        self._relations: list[str] | None = None
        self._classes: list[str] | None = None

    # ------------------------------------------------------------------ SPARQL
    def select(
        self, sparql: str, timeout_s: float | None = None, max_rows: int | None = None
    ) -> list[Row]:
        """Run a SPARQL SELECT (rows) or ASK (one row ``{"ask": bool-literal}``).

        Raises:
            KBForbiddenQuery: update, LOAD, SERVICE, CONSTRUCT/DESCRIBE.
            KBQueryError: syntax or evaluation error reported by the engine.
            KBTimeout: the query ran past ``timeout_s``.
            KBTruncated: more than ``max_rows`` rows (``err.rows`` holds the first ones).
            KBUnavailable: the KB cannot be reached.
        """
        check_read_only(sparql)
        cap = self.max_rows if max_rows is None else max_rows
        timeout = self.timeout_s if timeout_s is None else timeout_s
        rows = self._timed(sparql, timeout, cap + 1)
        if len(rows) > cap:
            raise KBTruncated(
                f"query returned more than {cap} rows; add a LIMIT or narrow the pattern",
                rows=rows[:cap],
                cap=cap,
            )
        return rows

    def ask(self, sparql: str, timeout_s: float | None = None) -> bool:
        rows = self.select(sparql, timeout_s=timeout_s)
        return bool(rows) and rows[0]["ask"].value == "true"

    def _timed(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        t0 = time.perf_counter()
        try:
            return self._select(sparql, timeout_s, limit)
        finally:
            self.stats["queries"] += 1
            self.stats["query_time_s"] += time.perf_counter() - t0

    def _helper(self, sparql: str) -> list[Row]:
        """Internal fixed-shape queries: no guard, the helper cap and no time budget of
        their own (a remote backend still applies its transport timeout)."""
        return self._timed(sparql, None, self.helper_max_rows)

    @abc.abstractmethod
    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        """Run a checked query and return at most ``limit`` rows."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (servers, threads)."""

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------ one-hop helpers
    def _hidden_filter(self, var: str) -> str:
        hidden = self.schema.hidden
        if not hidden:
            return ""
        refs = ", ".join(self.schema.relation_ref(r) for r in hidden)
        return f"FILTER({var} NOT IN ({refs}))"

    def relations_out(self, e: str) -> list[str]:
        """Relations ``r`` with a triple ``(e, r, ?)``, sorted."""
        q = (
            f"SELECT DISTINCT ?r WHERE {{ {self.schema.entity_ref(e)} ?r ?o . "
            f"{self._hidden_filter('?r')} }}"
        )
        return sorted({row["r"].value for row in self._helper(q)})

    def relations_in(self, e: str | Term) -> list[str]:
        """Relations ``r`` with a triple ``(?, r, e)``, sorted."""
        q = (
            f"SELECT DISTINCT ?r WHERE {{ ?s ?r {self.schema.term_ref(e)} . "
            f"{self._hidden_filter('?r')} }}"
        )
        return sorted({row["r"].value for row in self._helper(q)})

    def _frontier_pattern(self, ids: Sequence[str], direction: str) -> str | None:
        """The graph pattern binding ``?e`` to each of ``ids`` and ``?r``/``?o`` to its visible
        edges in ``direction``; ``None`` for an empty frontier (nothing to ask the KB).

        Raises:
            ValueError: ``direction`` is neither ``"out"`` nor ``"in"``.
        """
        if direction not in ("out", "in"):
            raise ValueError(f"direction={direction!r}: choose 'out' or 'in'")
        if not ids:
            return None
        values = "VALUES ?e { " + " ".join(self.schema.entity_ref(e) for e in ids) + " }"
        pattern = "?e ?r ?o ." if direction == "out" else "?o ?r ?e ."
        return f"{values} {pattern} {self._hidden_filter('?r')}"

    def relations_around(self, ids: Sequence[str], direction: str = "out") -> list[str]:
        """Relations out of (``"out"``: ``(e, r, ?)``) or into (``"in"``: ``(?, r, e)``) any
        of ``ids``, sorted: the neighbourhood ``R(e_c)`` of a set of entities.

        Raises:
            ValueError: ``direction`` is neither ``"out"`` nor ``"in"``.
        """
        where = self._frontier_pattern(ids, direction)
        if where is None:
            return []
        return sorted({row["r"].value for row in self._helper(f"SELECT DISTINCT ?r WHERE {{ {where} }}")})

    def edges_around(self, ids: Sequence[str], direction: str = "out") -> list[tuple[str, str, Term]]:
        """Every visible edge out of (``"out"``: ``(e, r, o)`` as ``(e, r, o)``) or into
        (``"in"``: ``(s, r, e)`` as ``(e, r, s)``) any of ``ids``, in one query, sorted.

        The rows are the far ends of the one-hop neighbourhoods of a whole frontier (a
        trainable ranker reads every candidate's context this way, not one query per
        candidate and relation).

        Raises:
            ValueError: ``direction`` is neither ``"out"`` nor ``"in"``.
        """
        where = self._frontier_pattern(ids, direction)
        if where is None:
            return []
        q = f"SELECT DISTINCT ?e ?r ?o WHERE {{ {where} }}"
        return sorted({(row["e"].value, row["r"].value, row["o"]) for row in self._helper(q)},
                      key=lambda t: (t[0], t[1], str(t[2])))

    def tails(self, e: str, r: str) -> list[Term]:
        """Objects ``o`` of ``(e, r, o)``, sorted (entities and literals)."""
        q = (
            f"SELECT DISTINCT ?o WHERE {{ {self.schema.entity_ref(e)} "
            f"{self.schema.relation_ref(r)} ?o }}"
        )
        return sorted({row["o"] for row in self._helper(q)})

    def heads(self, e: str | Term, r: str) -> list[Term]:
        """Subjects ``s`` of ``(s, r, e)``, sorted; ``e`` may be a literal term."""
        q = (
            f"SELECT DISTINCT ?s WHERE {{ ?s {self.schema.relation_ref(r)} "
            f"{self.schema.term_ref(e)} }}"
        )
        return sorted({row["s"] for row in self._helper(q)})

    def exists(self, e: str) -> bool:
        """Whether ``e`` occurs as subject or object of any triple."""
        ref = self.schema.entity_ref(e)
        q = f"ASK {{ {{ {ref} ?p ?o }} UNION {{ ?s ?p2 {ref} }} }}"
        rows = self._helper(q)
        return bool(rows) and rows[0]["ask"].value == "true"

    def names(self, ids: Iterable[str]) -> dict[str, str]:
        """Display names of the given ids (ids without a name are left out).

        Prefers a name in the schema language, then a plain one; ties by lexical order.
        """
        ids = list(dict.fromkeys(ids))
        if self.schema.ids_are_names:
            return {i: i for i in ids}
        out: dict[str, str] = {}
        if not ids or not self.schema.name_relations:
            return out
        preds = " ".join(self.schema.relation_ref(r) for r in self.schema.name_relations)
        for i in range(0, len(ids), 200):
            chunk = " ".join(self.schema.entity_ref(x) for x in ids[i : i + 200])
            q = f"SELECT ?e ?n WHERE {{ VALUES ?e {{ {chunk} }} VALUES ?p {{ {preds} }} ?e ?p ?n }}"
            best: dict[str, tuple[int, str]] = {}
            for row in self._helper(q):
                n = row["n"]
                if n.kind != "literal":
                    continue
                rank = 0 if (self.schema.lang and n.lang == self.schema.lang) else (1 if not n.lang else 2)
                key = (rank, n.value)
                if row["e"].value not in best or key < best[row["e"].value]:
                    best[row["e"].value] = key
            out.update({e: v[1] for e, v in best.items()})
        return out

    def _name_preds(self) -> Sequence[str]:
        return self.schema.name_relations + self.schema.alias_relations

    def lookup(self, name: str) -> list[str]:
        """Ids whose name (or alias) is ``name``: exact first, then case-insensitive."""
        preds = " ".join(self.schema.relation_ref(r) for r in self._name_preds())
        if not preds:
            return []
        lits = [sparql_string(name)]
        if self.schema.lang:
            lits.append(sparql_string(name, lang=self.schema.lang))
        q = (
            f"SELECT DISTINCT ?e WHERE {{ VALUES ?n {{ {' '.join(lits)} }} "
            f"VALUES ?p {{ {preds} }} ?e ?p ?n }}"
        )
        found = sorted({r["e"].value for r in self._helper(q)})
        if found:
            return found
        return self._lookup_casefold(name)

    def _lookup_casefold(self, name: str) -> list[str]:
        preds = " ".join(self.schema.relation_ref(r) for r in self._name_preds())
        q = (
            f"SELECT DISTINCT ?e WHERE {{ VALUES ?p {{ {preds} }} ?e ?p ?n . "
            f"FILTER(isLiteral(?n) && LCASE(STR(?n)) = {sparql_string(name.lower())}) }}"
        )
        return sorted({r["e"].value for r in self._helper(q)})

    def types(self, e: str) -> list[str]:
        """Type ids of ``e`` (empty when the schema has no type relation)."""
        if not self.schema.type_relation:
            return []
        q = (
            f"SELECT DISTINCT ?t WHERE {{ {self.schema.entity_ref(e)} "
            f"{self.schema.relation_ref(self.schema.type_relation)} ?t }}"
        )
        return sorted({r["t"].value for r in self._helper(q)})

    # ------------------------------------------------------------ schema vocabulary
    def relations(self) -> list[str]:
        """Every relation id used in the KB (hidden bookkeeping relations excluded), sorted.

        The vocabulary a relation retriever ranks against (KBQA-R1's gate, KnowCoder-A1's
        pattern search). Computed once per KB object: a KB is read-only.
        """
        if self._relations is None:
            q = f"SELECT DISTINCT ?r WHERE {{ ?s ?r ?o . {self._hidden_filter('?r')} }}"
            self._relations = sorted({r["r"].value for r in self._helper(q)})
        return list(self._relations)

    def classes(self) -> list[str]:
        """Every class (object of the schema's type relation) in the KB, sorted; empty when
        the schema has no type relation (MetaQA). Computed once per KB object."""
        if not self.schema.type_relation:
            return []
        if self._classes is None:
            q = (f"SELECT DISTINCT ?c WHERE {{ ?s {self.schema.relation_ref(self.schema.type_relation)} ?c . "
                 f"FILTER(!isLiteral(?c)) }}")
            self._classes = sorted({r["c"].value for r in self._helper(q)})
        return list(self._classes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(ns={self.schema.entity_ns!r}, max_rows={self.max_rows})"
