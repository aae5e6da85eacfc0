"""Rankers (design §5, docs/design.md): score candidates (relations, types, patterns, entities) against a query.

Names load from their modules on first use, so importing one part does not import
the others (a config check imports the classes it judges).
"""

from kgreason.registry import lazy_exports

#: public name → the module that defines it
_EXPORTS = {
    "ConfidenceGate": "kgreason.rankers.gate",
    "DenseIndex": "kgreason.rankers.dense",
    "DenseRanker": "kgreason.rankers.dense",
    "GATEntityRanker": "kgreason.rankers.gat",
    "GateDecision": "kgreason.rankers.gate",
    "Neighbourhood": "kgreason.rankers.graph",
    "RandomRanker": "kgreason.rankers.random",
    "Ranker": "kgreason.rankers.base",
    "TrainableRanker": "kgreason.rankers.base",
    "load_minilm": "kgreason.rankers.dense",
    "verbalize_relation": "kgreason.rankers.base",
}
__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
