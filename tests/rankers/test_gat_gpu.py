"""The GAT ranker trained on a CUDA device (``-m gpu`` on a lent GPU; skipped elsewhere):
the hand-built 4-node neighbourhoods of test_gat.py."""

from __future__ import annotations

import copy

import pytest
import torch

from kgreason.rankers import GATEntityRanker
from kgreason.rankers.gat import batch_graphs
from kgreason.training.ranker import fit_ranker, rank_example

from .test_gat import examples, letters

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")]


@pytest.mark.parametrize("aggregate", [True, False])
def test_scores_on_the_gpu_equal_the_cpus(aggregate):
    torch.manual_seed(0)
    cpu = GATEntityRanker(encoder=letters, dim=26, hidden=8, heads=2, dropout=0.0, aggregate=aggregate).eval()
    gpu = copy.deepcopy(cpu).cuda()
    graphs = [cpu.featurize(ex.question, ex.graph) for ex in examples()]
    both = batch_graphs(graphs)
    torch.testing.assert_close(gpu.logits_batch(both.to("cuda")).cpu(), cpu.logits_batch(both), atol=1e-5, rtol=0)
    one = cpu.featurize(examples()[0].question, examples()[0].graph)  # a single graph: no batch vector
    torch.testing.assert_close(gpu.logits_batch(one.to("cuda")).cpu(), cpu.logits_batch(one), atol=1e-5, rtol=0)


def test_training_on_the_gpu_learns_relations_that_names_cannot_tell():
    exs = examples()
    torch.manual_seed(0)
    gat = GATEntityRanker(encoder=letters, dim=26, hidden=16, heads=2, dropout=0.0)
    fit_ranker(gat, exs * 8, epochs=30, batch_size=4, lr=1e-2, progress=False,
               trainer_kw={"accelerator": "gpu", "devices": 1})
    # the environment ranks on the CPU: the trained ranker comes back there
    assert next(gat.parameters()).device.type == "cpu"
    assert all(rank_example(gat, ex)[0] == ex.graph.nodes[ex.gold[0]] for ex in exs)
