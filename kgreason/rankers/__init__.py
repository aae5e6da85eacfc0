"""Rankers (SPEC §5): score candidates (relations, types, patterns, entities) against a query."""

from kgreason.rankers.base import Ranker, verbalize_relation
from kgreason.rankers.dense import DenseIndex, DenseRanker, load_minilm

__all__ = ["DenseIndex", "DenseRanker", "Ranker", "load_minilm", "verbalize_relation"]
