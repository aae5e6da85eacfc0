"""Every loader against the real files in ../shared/data and against fixtures written in
each official format."""

from __future__ import annotations

import random

import pytest

from kgreason.data import load_dataset, metaqa_path
from kgreason.errors import DatasetError
from tests.conftest import FIXTURES, shared


def test_metaqa_real_dev_all_hops():
    path = shared("metaqa")
    for hop, n in ((1, 9992), (2, 14872), (3, 14274)):
        samples = load_dataset("metaqa", path, split="dev", hops=hop)
        assert len(samples) == n
        s = samples[0]
        assert s.hops == hop and s.topic_entities and s.answers and "[" not in s.question
        assert s.relation_path is not None and len(s.relation_path) == hop
    two = load_dataset("metaqa", path, hops=2, limit=3)
    assert two[0].level == "director_to_movie_to_language"
    assert two[0].relation_path == ["~directed_by", "in_language"]


def test_metaqa_fixture():
    s = load_dataset("metaqa", FIXTURES / "metaqa_mini", hops=(1, 2))
    assert [x.question for x in s] == ["who directed Kismet", "what movies did Marlene Dietrich act in",
                                       "who directed the films starring Marlene Dietrich"]
    assert [a.id for a in s[1].answers] == ["Kismet", "The Devil Is a Woman"]
    assert s[2].relation_path == ["~starred_actors", "directed_by"]


def test_metaqa_path_unknown_type():
    assert metaqa_path("movie_to_spaceship") is None


def test_cwq_real_official_and_tog():
    official = load_dataset("cwq", shared("questions", "ComplexWebQuestions_test.json"))
    tog = load_dataset("cwq", shared("questions", "cwq.json"))
    assert len(official) == len(tog) == 3531
    assert official[0].answers[0].id == "m.0117q3yz" and "ns:" in official[0].sparql
    assert tog[0].topic_entities[0].name == "Lou Seal" and tog[0].answers[0].name == "2014 World Series"
    assert official[0].level == "composition"


def test_cwq_fixture_answer_objects():
    s = load_dataset("cwq", FIXTURES / "cwq_official.json")[0]
    assert s.answers[0].id == "m.01428y" and s.answers[0].aliases == ("English",)


def test_grailqa_real_keeps_sexpr_graph_query_level():
    s = load_dataset("grailqa", shared("questions", "graliqa.json"))
    assert len(s) == 1000
    assert s[0].sexpr.startswith("(AND theater.play") and s[0].level == "i.i.d."
    assert s[0].meta["graph_query"]["nodes"] and s[0].topic_entities[0].id == "m.0yrlqjm"
    assert {x.level for x in s} >= {"i.i.d.", "compositional", "zero-shot"}


def test_grailqa_fixture_topics_from_graph_query_and_values():
    s = load_dataset("grailqa", FIXTURES / "grailqa_official.json")
    assert s[0].topic_entities[0].id == "m.07c0j" and s[0].level == "compositional"
    assert s[1].answers[0].id == "13" and s[1].answers[0].datatype == "literal"


def test_webqsp_fixture_variants_and_values():
    s = load_dataset("webqsp", FIXTURES / "webqsp_official.json")
    # each parse keeps its own answers: the first's are the answers, the second's a variant
    assert [a.id for a in s[0].answers] == ["m.01428y", "m.04ygk0"]
    assert [[a.id for a in v] for v in s[0].meta["answer_variants"]] == [["m.01428y"]]
    assert s[0].relation_path == ["location.country.languages_spoken"] and s[0].meta["n_parses"] == 2
    assert "answer_variants" not in s[1].meta  # one parse
    back = type(s[0]).from_dict(s[0].to_dict())  # a written and read sample keeps them as entities
    assert back.meta["answer_variants"] == s[0].meta["answer_variants"]
    # the official evaluation's best parse: predicting the second parse's one answer is exact
    from kgreason.eval.evaluation import score
    only = [s[0].answers[0]]
    assert score(only, s[0].answers, random.Random(0), s[0].meta["answer_variants"])["em"] == 1.0
    assert score(only, s[0].answers, random.Random(0))["em"] == 0.0
    assert s[1].answers[0].id == "1961-08-04" and s[1].answers[0].datatype == "literal"


def test_webquestions_real_and_official():
    real = load_dataset("webquestions", shared("questions", "WebQuestions.json"))
    assert len(real) == 2032 and real[0].answers[0].name == "Jamaican Creole English Language"
    off = load_dataset("webq", FIXTURES / "webquestions_official.json")
    assert [a.name for a in off[0].answers] == ["Jamaican Creole English Language", "Jamaican English"]
    assert [a.name for a in off[1].answers] == ["France"]


def test_simplequestions_real_and_official():
    real = load_dataset("simplequestions", shared("questions", "SimpleQA.json"))
    assert len(real) == 1000 and real[0].topic_entities[0].id == "m.02qkg8m"
    off = load_dataset("simpleqa", FIXTURES / "simplequestions_official.txt")
    assert off[0].topic_entities[0].id == "m.04whkz5"
    assert off[0].relation_path == ["book.written_work.subjects"] and off[0].answers[0].id == "m.01cj3p"


def test_qald10_real_and_official():
    real = load_dataset("qald10", shared("questions", "qald_10-en.json"))
    assert len(real) == 333 and real[0].answers[0].name == "Bernhard Riemann"
    off = load_dataset("qald-10", FIXTURES / "qald10_official.json")
    assert off[0].question == "After whom is the Riemannian geometry named?"
    assert off[0].answers[0].id == "Q42299" and off[1].answers[0].id == "true"


def test_rog_fixture():
    s = load_dataset("rog", FIXTURES / "rog_subgraphs.jsonl")
    assert s[0].subgraph == "WebQTest-0" and s[0].topic_entities[0].id == "Jamaica"


def test_errors_are_typed(tmp_path):
    with pytest.raises(DatasetError, match="unknown dataset"):
        load_dataset("nope", tmp_path)
    with pytest.raises(DatasetError, match="not found"):
        load_dataset("cwq", tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DatasetError, match="not valid JSON"):
        load_dataset("grailqa", bad)
    bad.write_text('[{"question": "x"}]')
    with pytest.raises(DatasetError, match="lacks"):
        load_dataset("grailqa", bad)
    with pytest.raises(DatasetError, match="needs a path"):
        load_dataset("cwq")
