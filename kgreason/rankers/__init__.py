"""Rankers (design §5, docs/design.md): score candidates (relations, types, patterns, entities) against a query."""

from kgreason.rankers.base import Ranker, TrainableRanker, verbalize_relation
from kgreason.rankers.dense import DenseIndex, DenseRanker, load_minilm
from kgreason.rankers.gat import GATEntityRanker
from kgreason.rankers.gate import ConfidenceGate, GateDecision
from kgreason.rankers.graph import Neighbourhood
from kgreason.rankers.random import RandomRanker

__all__ = ["ConfidenceGate", "DenseIndex", "DenseRanker", "GATEntityRanker", "GateDecision", "Neighbourhood", "RandomRanker", "Ranker",
           "TrainableRanker", "load_minilm", "verbalize_relation"]
