"""KG-Reasoner's GNN entity ranker (paper 001, §4.2.2, Eqs. 1–4).

Each candidate entity (a neighbour of the entity being explored) gets a representation
aggregated over its own one-hop neighbours by question-conditioned graph attention; a
two-layer MLP classifies it relevant / irrelevant, and the softmax probability of
"relevant" is its score.

The attention is PyG's :class:`~torch_geometric.nn.GATConv` on a bipartite graph: one
source per (neighbour, relation, direction) message, carrying the neighbour's name times
the relation (the paper's ``W(h_j ⊙ r)``), the relation times the question, and the
direction; targets are the nodes. A plain ``GATConv`` on the entity graph would let the
relation steer only the attention weights, not what is passed: a candidate joined to the
centre by a single edge would learn nothing of that edge's relation. The layer's residual
connection keeps the candidate's own name.

Texts (entity names, verbalised relations, the question) are embedded by a frozen
sentence encoder (all-MiniLM-L6-v2 by default) through a :class:`DenseRanker`'s cache;
only the attention layer and the MLP are trained (:class:`~kgreason.training.ranker.RankerLitModule`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from kgreason.declarations import declare
from kgreason.rankers.base import TrainableRanker, verbalize_relation
from kgreason.rankers.dense import DenseRanker, Encoder
from kgreason.rankers.graph import Neighbourhood

if TYPE_CHECKING:
    from torch_geometric.data import Batch, Data


@functools.cache
def _messages_class() -> type:
    """The PyG ``Data`` of a featurised neighbourhood. Defined on first use: importing PyG
    imports Lightning (4 s), which a config check that reads this module's declarations
    should not pay."""
    from torch_geometric.data import Data

    class _Messages(Data):
        """A featurised neighbourhood: node features plus one source row per message.

        ``msg_dst`` holds node indices, so batching offsets it by the node count.
        """

        def __inc__(self, key: str, value: Any, *args: Any, **kwargs: Any) -> Any:
            if key == "msg_dst":
                return self.num_nodes
            return super().__inc__(key, value, *args, **kwargs)

    return _Messages


@declare(adapts=("flat",))
class GATEntityRanker(TrainableRanker):
    """Scores a neighbourhood's candidates against a question with graph attention.

    Args:
        encoder: texts → normalised ``[N, D]`` vectors (default: all-MiniLM-L6-v2,
            offline), frozen; or a :class:`DenseRanker`, whose embedding cache is then
            shared (a dense baseline and the GAT ranker embed the same names).
        dim: the encoder's output size ``D``.
        hidden: channels per attention head.
        heads: attention heads (concatenated).
        dropout: dropout on attention weights and MLP input while training.
        aggregate: ``False`` is the paper's "w/o context aggregation" ablation (Table 5):
            no messages, only the residual path, so a candidate is judged by its own name.

    Shapes:
        - featurised graph: ``x [N, 2D]`` (name embedding and its product with the
          question), ``msg [M, 3D + 2]`` (neighbour name ⊙ relation, relation ⊙
          question, relation, direction one-hot) with ``msg_dst [M]`` (receiving node),
          ``question [1, D]``, ``candidate_mask [N]``; every KB edge gives two messages,
          one to each end.
        - :meth:`logits`: ``[C, 2]`` (irrelevant, relevant) for C candidates.
        - :meth:`forward`: ``[C]`` probabilities of "relevant".

    Example:
        >>> import numpy as np
        >>> def bag(texts):  # a toy encoder: letter counts, normalised
        ...     v = np.array([[t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], "float32") + 1e-3
        ...     return v / np.linalg.norm(v, axis=1, keepdims=True)
        >>> g = Neighbourhood(["m.k", "m.n", "m.s"], ["Kenya", "Nairobi", "Swahili"],
        ...                   torch.tensor([[0, 0], [1, 2]]), ["location.country.capital", "location.country.official_language"])
        >>> ranker = GATEntityRanker(encoder=bag, dim=26, hidden=8, heads=2)
        >>> ranker.score("What is the capital of Kenya?", g.candidate_texts(), context=g).shape
        torch.Size([2])
        >>> ranker
        GATEntityRanker(dim=26, hidden=8, heads=2, aggregate=True)
    """

    def __init__(self, encoder: Encoder | DenseRanker | None = None, dim: int = 384, hidden: int = 64, heads: int = 4,
                 dropout: float = 0.1, aggregate: bool = True):
        super().__init__()
        self.dim, self.hidden, self.heads, self.aggregate = dim, hidden, heads, aggregate
        # a plain attribute, not a submodule: the encoder is frozen and not in the state dict
        self.text = encoder if isinstance(encoder, DenseRanker) else DenseRanker(encoder)
        width = hidden * heads
        if aggregate:
            from torch_geometric.nn import GATConv

            # Eq. 1: attention over the messages into each node, plus the node itself (residual)
            self.conv: nn.Module = GATConv((3 * dim + 2, 2 * dim), hidden, heads=heads, dropout=dropout,
                                           add_self_loops=False, residual=True)
        else:
            self.conv = nn.Linear(2 * dim, width)
        # Eq. 2: two-layer MLP on the aggregated candidate and the question
        self.mlp = nn.Sequential(nn.Dropout(dropout), nn.Linear(width + dim, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    # ------------------------------------------------------------- features
    def featurize(self, query: str, context: Neighbourhood) -> Data:
        """The graph as tensors (frozen text embeddings, cached, so cheap to repeat)."""
        q = self.text.embed_texts([query])
        if q.shape[1] != self.dim:
            raise ValueError(f"the encoder gives {q.shape[1]}-d vectors but the ranker was built with dim={self.dim}")
        names = self.text.embed_texts(context.labels)
        rel_text = [verbalize_relation(r) for r in context.edge_relations]
        rels = self.text.embed_texts(rel_text) if rel_text else torch.zeros(0, self.dim)
        src, dst = context.edge_index
        # to the object from the subject (direction [0, 1]) and to the subject from the object ([1, 0])
        sender = torch.cat([src, dst])
        receiver = torch.cat([dst, src])
        r = torch.cat([rels, rels])
        direction = torch.eye(2)[torch.cat([torch.ones_like(src), torch.zeros_like(dst)])]
        msg = torch.cat([names[sender] * r, r * q, r, direction], dim=1)
        mask = torch.zeros(len(context.nodes), dtype=torch.bool)
        mask[context.candidates] = True
        return _messages_class()(x=torch.cat([names, names * q], dim=1), msg=msg, msg_dst=receiver, question=q,
                         candidate_mask=mask, num_nodes=len(context.nodes))

    # ------------------------------------------------------------- scoring
    def logits_batch(self, batch: Data) -> Tensor:
        """Logits of the candidates of a batch of featurised graphs, graph by graph.

        Shapes: ``[sum C_g, 2]``.
        """
        if self.aggregate:
            m = batch.msg.shape[0]
            edges = torch.stack([torch.arange(m, device=batch.msg_dst.device), batch.msg_dst])
            h = self.conv((batch.msg, batch.x), edges, size=(m, batch.num_nodes))
        else:
            h = self.conv(batch.x)
        h = torch.relu(h)
        graph = batch.batch if getattr(batch, "batch", None) is not None else torch.zeros(
            batch.num_nodes, dtype=torch.long, device=batch.x.device)
        keep = batch.candidate_mask
        return self.mlp(torch.cat([h[keep], batch.question[graph][keep]], dim=1))

    def logits(self, query: str, context: Neighbourhood) -> Tensor:
        """Shapes: ``[C, 2]``."""
        return self.logits_batch(self.featurize(query, context))

    def flat_context(self, candidates: Sequence[str]) -> Neighbourhood:
        """A plain candidate list (relations, patterns) as an edgeless graph: each candidate
        is judged by its own text against the question (:meth:`Neighbourhood.flat`)."""
        return Neighbourhood.flat(candidates)

    def forward(self, query: str, context: Any) -> Tensor:
        """Eq. 3: the softmax probability of "relevant" per candidate. Shapes: ``[C]``."""
        if not isinstance(context, Neighbourhood):
            raise TypeError(f"{type(self).__name__} needs a Neighbourhood context, got {type(context).__name__}")
        if not context.candidates:
            return torch.zeros(0)
        return torch.softmax(self.logits(query, context), dim=-1)[:, 1]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, hidden={self.hidden}, heads={self.heads}, aggregate={self.aggregate})"


def batch_graphs(graphs: Sequence[Data]) -> Batch:
    """Collate featurised graphs into one disjoint-union batch."""
    from torch_geometric.data import Batch

    return Batch.from_data_list(list(graphs))
