"""Read-only knowledge-base backends (design §3, docs/design.md)."""

from kgreason.errors import (
    KBError,
    KBForbiddenQuery,
    KBMalformedAnswer,
    KBQueryError,
    KBTimeout,
    KBTruncated,
    KBUnavailable,
)
from kgreason.kb.base import KnowledgeBase, Row
from kgreason.kb.cache import CachedKB
from kgreason.kb.endpoint import SparqlEndpointKB
from kgreason.kb.guard import check_read_only
from kgreason.kb.loaders import (
    load_metaqa_kb,
    load_rdf_kb,
    load_rog_subgraphs,
    load_tsv_kb,
    read_metaqa_triples,
    read_tsv_triples,
    write_ntriples,
)
from kgreason.kb.oxigraph import OxigraphKB
from kgreason.kb.patterns import RelationPattern, enumerate_patterns
from kgreason.kb.schema import FREEBASE, GENERIC, METAQA, KBSchema
from kgreason.kb.triplestore import SubgraphNotFound, TripleStoreKB

__all__ = [
    "FREEBASE", "CachedKB", "GENERIC", "METAQA", "KBError", "KBForbiddenQuery", "KBQueryError", "KBSchema",
    "KBMalformedAnswer", "KBTimeout", "KBTruncated", "KBUnavailable", "KnowledgeBase", "OxigraphKB", "RelationPattern", "Row",
    "SparqlEndpointKB", "SubgraphNotFound", "TripleStoreKB", "check_read_only", "enumerate_patterns", "load_metaqa_kb",
    "load_rdf_kb", "load_rog_subgraphs", "load_tsv_kb", "read_metaqa_triples", "read_tsv_triples",
    "write_ntriples",
]
