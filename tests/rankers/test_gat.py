"""GATEntityRanker on hand-built 4-node neighbourhoods with a toy letter-count encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kgreason.rankers import GATEntityRanker, Neighbourhood
from kgreason.rankers.gat import batch_graphs
from kgreason.training.ranker import RankerExample, fit_ranker, rank_example


def letters(texts):
    """Letter counts, normalised: a deterministic stand-in for a sentence encoder."""
    v = np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], "float32") + 1e-3
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def star(names, rels, extra=()):
    """Centre 0 with one candidate per relation, plus second-ring edges ``extra`` (src, dst, rel, label)."""
    nodes = ["c", *[f"n{i}" for i in range(len(rels))]]
    labels = ["Centre", *names]
    src, dst, er = [0] * len(rels), list(range(1, len(rels) + 1)), list(rels)
    for s, d, r, label in extra:
        nodes.append(f"x{len(nodes)}"), labels.append(label)
        src.append(s), dst.append(len(nodes) - 1 if d is None else d), er.append(r)
    return Neighbourhood(nodes, labels, torch.tensor([src, dst]), er, candidates=list(range(1, len(rels) + 1)))


def test_shapes_and_repr():
    g = star(["Nairobi", "Swahili", "Shilling"], ["x.capital", "x.language", "x.currency"], extra=[(1, None, "x.mayor", "Someone")])
    r = GATEntityRanker(encoder=letters, dim=26, hidden=8, heads=2)
    d = r.featurize("capital?", g)
    assert d.x.shape == (5, 52) and d.msg.shape == (8, 80)
    assert d.msg_dst.tolist() == [1, 2, 3, 4, 0, 0, 0, 1]  # every edge reaches both of its ends
    assert d.candidate_mask.tolist() == [False, True, True, True, False]
    assert r.logits("capital?", g).shape == (3, 2)
    p = r.score("capital?", g.candidate_texts(), context=g)
    assert p.shape == (3,) and ((p > 0) & (p < 1)).all()
    # batching offsets every graph's message targets: batched logits are the per-graph ones
    h = star(["Nairobi"], ["x.capital"], extra=[(1, None, "x.mayor", "Ann")])
    r.eval()
    both = r.logits_batch(batch_graphs([r.featurize("capital?", h), r.featurize("capital?", g)]))
    assert torch.allclose(both, torch.cat([r.logits("capital?", h), r.logits("capital?", g)]), atol=1e-6)
    assert repr(r) == "GATEntityRanker(dim=26, hidden=8, heads=2, aggregate=True)"
    with pytest.raises(TypeError, match="Neighbourhood"):
        r("capital?", {"not": "a graph"})
    with pytest.raises(ValueError, match="dim=30"):
        GATEntityRanker(encoder=letters, dim=30).featurize("q", g)
    # the encoder is frozen and outside the state dict: only attention and MLP are trained
    assert all(k.startswith(("conv.", "mlp.")) for k in r.state_dict())


def test_aggregation_reads_the_second_ring_and_the_ablation_does_not():
    torch.manual_seed(0)
    a = star(["Nairobi", "Swahili"], ["x.capital", "x.language"], extra=[(1, None, "x.mayor", "Ann")])
    b = star(["Nairobi", "Swahili"], ["x.capital", "x.language"], extra=[(1, None, "x.mayor", "Zygmunt Quex")])
    for agg in (True, False):
        r = GATEntityRanker(encoder=letters, dim=26, hidden=8, heads=2, dropout=0.0, aggregate=agg).eval()
        pa, pb = r("where?", a), r("where?", b)
        assert torch.equal(pa[1], pb[1])  # the candidate without the changed neighbour
        assert torch.equal(pa[0], pb[0]) is (not agg)


def examples():
    """Two neighbourhoods with the names swapped: only the relations tell the answers apart."""
    g1 = star(["Alpha", "Beta"], ["x.capital_city", "x.spoken_language"])
    g2 = star(["Beta", "Alpha"], ["x.capital_city", "x.spoken_language"])
    out = []
    for qs, gold_rel in (("Which city is the capital?", 1), ("Which language is spoken?", 2)):
        for k, g in enumerate((g1, g2)):
            out.append(RankerExample(f"{k}{gold_rel}", qs, 0, g, [gold_rel]))
    return out


def test_training_learns_relations_that_names_cannot_tell():
    exs = examples()
    torch.manual_seed(0)
    gat = GATEntityRanker(encoder=letters, dim=26, hidden=16, heads=2, dropout=0.0)
    fit_ranker(gat, exs * 8, epochs=30, batch_size=4, lr=1e-2, progress=False)
    assert all(rank_example(gat, ex)[0] == ex.graph.nodes[ex.gold[0]] for ex in exs)
    # without aggregation a candidate is its name: "Alpha" is the capital in one graph and
    # the language in the other, so one of each pair must be wrong
    mlp = GATEntityRanker(encoder=letters, dim=26, hidden=16, heads=2, dropout=0.0, aggregate=False)
    fit_ranker(mlp, exs * 8, epochs=30, batch_size=4, lr=1e-2, progress=False)
    right = sum(rank_example(mlp, ex)[0] == ex.graph.nodes[ex.gold[0]] for ex in exs)
    assert right == 2
