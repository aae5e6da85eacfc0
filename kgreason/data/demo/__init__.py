"""The demo knowledge graph and questions shipped with kgreason (the embedded default)."""

from __future__ import annotations

from pathlib import Path

from kgreason.declarations import declare
from kgreason.kb.base import KnowledgeBase


@declare(schema="freebase")
def load_demo_kb(backend: str = "oxigraph", **kw) -> KnowledgeBase:
    """The demo KG (Freebase schema) in an embedded Oxigraph store or a triple store."""
    from kgreason.data.demo.kg import build_demo_kg
    from kgreason.kb.oxigraph import OxigraphKB
    from kgreason.kb.triplestore import TripleStoreKB

    triples = build_demo_kg().triples
    if backend == "oxigraph":
        return OxigraphKB.from_triples(triples, **kw)
    if backend == "triplestore":
        return TripleStoreKB.from_triples(triples, **kw)
    raise ValueError(f"unknown backend {backend!r}")


def write_demo_ntriples(path: str | Path) -> int:
    """Write the demo KG as N-Triples (for servers). Returns the triple count."""
    from kgreason.data.demo.kg import build_demo_kg
    from kgreason.kb.loaders import write_ntriples

    return write_ntriples(build_demo_kg().triples, path)
