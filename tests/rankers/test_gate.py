"""KBQA-R1's relation retrieval and confidence gating (RRCG)."""

from __future__ import annotations

import pytest
import torch

from kgreason.data import load_dataset
from kgreason.rankers import ConfidenceGate, DenseRanker, Ranker


class Fixed(Ranker):
    """Scores from a table: the tiers' edges exactly."""

    def __init__(self, table: dict[str, float]):
        self.table = table

    def score(self, query, candidates, context=None):
        return torch.tensor([self.table[c] for c in candidates])


RELS = ["r.high", "r.mid", "r.low"]


@pytest.mark.parametrize("scores, tier, relation", [
    ({"r.high": 0.95, "r.mid": 0.5, "r.low": 0.1}, "accept", "r.high"),      # s_max = tau_high: auto-validated
    ({"r.high": 0.9499, "r.mid": 0.5, "r.low": 0.1}, "tentative", "r.high"),
    ({"r.high": 0.3, "r.mid": 0.2, "r.low": 0.1}, "tentative", "r.high"),    # s_max = tau_low: still accepted
    ({"r.high": 0.2999, "r.mid": 0.2, "r.low": 0.1}, "reject", None),
])
def test_the_three_tiers_and_their_edges(scores, tier, relation):
    d = ConfidenceGate(Fixed(scores))("proposed.rel", RELS)
    assert (d.tier, d.relation) == (tier, relation)
    assert d.score == pytest.approx(max(scores.values()))
    if tier == "tentative":
        assert "r.mid (0.20)" in d.note or "r.mid (0.50)" in d.note  # the alternatives, scored
    if tier == "reject":
        assert [r for r, _ in d.candidates] == RELS and "r.low (0.10)" in d.note  # every neighbour, scored
    if tier == "accept":
        assert d.note == ""


def test_exact_and_ungated_and_empty():
    gate = ConfidenceGate(Fixed({}))
    assert gate("r.mid", RELS).tier == "exact"
    off = ConfidenceGate(Fixed({}), enabled=False)("made.up", RELS)
    assert (off.tier, off.relation) == ("ungated", "made.up")  # ablation w/o RRCG: as written
    empty = gate("r.x", [])
    assert empty.tier == "reject" and empty.relation is None


def test_the_codes_snapping_messages():
    scores = {"r.high": 0.97, "r.mid": 0.96, "r.low": 0.9}
    d = ConfidenceGate(Fixed(scores), messages="code")("r", RELS)
    assert d.tier == "accept" and d.relation == "r.high"
    assert d.note.startswith('No relation matched "r". Selected the most similar relation "r.high" (score 0.97).')
    assert "r.low (0.90)" in d.note and "r.mid" not in d.note  # listed only at <= 0.95
    assert ConfidenceGate(Fixed({**scores, "r.high": 0.99}), messages="code")("r", RELS).note == ""


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="tau_low"):
        ConfidenceGate(Fixed({}), tau_high=0.3, tau_low=0.5)
    with pytest.raises(ValueError, match="messages='verbose': choose 'paper' or 'code'"):
        ConfidenceGate(Fixed({}), messages="verbose")  # type: ignore[arg-type]


def test_real_minilm_on_the_demo_kg(demo_oxigraph):
    kenya = load_dataset("demo", split="dev")[0].topic_entities[0]
    rels = demo_oxigraph.relations_out(kenya.id)
    gate = ConfidenceGate(DenseRanker())
    assert gate("location country capital", rels).tier == "accept"  # same words: cosine 1
    d = gate("country capital", rels)
    assert (d.tier, d.relation) == ("tentative", "location.country.capital")
    d = gate("official language", rels)
    assert d.relation == "location.country.official_language"
    d = gate("xyzzy plugh", rels)
    assert d.tier == "reject" and len(d.candidates) == len(rels)
