"""One's own KB and questions through config alone (`kb=rdf|tsv|sparql_endpoint`,
`data=jsonl`), on the example files of docs/data.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf.errors import MissingMandatoryValue

from kgreason.config import compose_config
from kgreason.data import load_dataset
from kgreason.errors import ConfigError, DatasetError
from kgreason.kb import OxigraphKB, SparqlEndpointKB
from kgreason.kb.servers import OxigraphServer
from kgreason.types import Term
from tests.experiments.test_run import run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"
# the namespaces of capitals.ttl, as docs/data.md writes them on the command line
SCHEMA = "kb.schema={entity_ns:'http://example.org/e/',relation_ns:'http://example.org/r/'}"
QUESTIONS = [f"data.path={EXAMPLES / 'capitals.jsonl'}"]


def _capitals_checks(kb) -> None:
    assert kb.lookup("Paris") == ["Paris"]
    assert kb.tails("Paris", "capital_of") == [Term.uri("France")]
    assert sorted(t.value for t in kb.tails("Canada", "official_language")) == ["English", "French"]
    assert sorted(kb.relations()) == ["capital_of", "continent", "official_language"]


def test_kb_rdf_with_its_own_namespaces():
    cfg = compose_config(["kb=rdf", f"kb.path={EXAMPLES / 'capitals.ttl'}", SCHEMA])
    kb = instantiate(cfg.kb)
    assert isinstance(kb, OxigraphKB)
    _capitals_checks(kb)
    assert kb.names(["North_America"]) == {"North_America": "North America"}


def test_kb_rdf_errors_name_the_value(tmp_path):
    with pytest.raises(MissingMandatoryValue, match="kb.path"):
        instantiate(compose_config(["kb=rdf"]).kb)
    with pytest.raises(Exception, match="RDF file not found: .*nowhere.ttl"):
        instantiate(compose_config(["kb=rdf", f"kb.path={tmp_path / 'nowhere.ttl'}"]).kb)
    with pytest.raises(Exception, match="unknown KB schema 'wikidata'; valid: freebase, generic, metaqa"):
        instantiate(compose_config(["kb=rdf", f"kb.path={EXAMPLES / 'capitals.ttl'}", "kb.schema=wikidata"]).kb)


def test_kb_tsv_names_every_entity_by_its_id():
    kb = instantiate(compose_config(["kb=tsv", f"kb.path={EXAMPLES / 'capitals.tsv'}"]).kb)
    _capitals_checks(kb)
    assert kb.lookup("North America") == ["North America"]


def test_kb_sparql_endpoint_on_a_server_started_here():
    try:
        srv = OxigraphServer.from_file(EXAMPLES / "capitals.ttl")
    except Exception as e:  # noqa: BLE001 - any failure to start is a skip reason
        pytest.skip(f"oxigraph server unavailable: {e}")
    with srv:
        cfg = compose_config(["kb=sparql_endpoint", f"kb.url={srv.url}", SCHEMA])
        kb = instantiate(cfg.kb)
        assert isinstance(kb, SparqlEndpointKB)
        _capitals_checks(kb)


def test_data_jsonl_reads_splits_types_and_entity_forms(tmp_path):
    train, dev = instantiate(compose_config(["data=jsonl", *QUESTIONS]).data)
    assert (len(train), len(dev)) == (10, 6)
    q = next(s for s in dev if s.id == "cap-15")
    assert q.relation_path == ["~official_language", "~capital_of"] and q.hops == 2
    assert [a.id for a in q.answers] == ["Paris", "Ottawa"] and q.meta["qtype"] == q.level == "2-hop"
    # ids, {id: name} and objects are all entities
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in (
        {"question": "a?", "answers": ["x", 3], "topic_entities": {"e1": "E one"}},
        {"question": "b?", "answers": [{"id": "y", "name": "Y", "aliases": ["why"]}]},
    )))
    train, dev = instantiate(compose_config(["data=jsonl", f"data.path={f}", "data.train_split=all",
                                             "data.eval_split=all", "data.eval_limit=1"]).data)
    both = sorted(train + dev, key=lambda s: s.id)
    assert [s.id for s in both] == ["1", "2"] and not {s.id for s in train} & {s.id for s in dev}
    assert [(a.id, a.name) for a in both[0].answers] == [("x", None), ("3", None)]
    assert [(e.id, e.name) for e in both[0].topic_entities] == [("e1", "E one")]
    assert both[1].answers[0].aliases == ("why",)


@pytest.mark.parametrize("records, message", [
    ([{"question": "a?"}], r"record 1 lacks \['answers'\]"),
    ([{"question": "a?", "answers": [], "answer": "x"}], r"unknown fields \['answer'\]; valid: id, question"),
    ([{"question": "a?", "answers": [[1]]}], "an entity is an id or an object with 'id'"),
    ([{"id": 1, "question": "a?", "answers": []}, {"id": 1, "question": "b?", "answers": []}], "share the id '1'"),
    ([{"question": "a?", "answers": []}], "no record has a 'split' field.*data.train_split=all"),
    ([{"question": "", "answers": ["x"]}], r"record 1 question: expected a non-empty string, got ''"),
    ([{"question": 5, "answers": ["x"]}], r"record 1 question: expected a non-empty string, got 5"),
    ([{"question": "a?", "answers": ["x"], "meta": "m"}], r"record 1 meta: expected an object, got 'm'"),
    ([{"question": "a?", "answers": ["x"], "hops": "two"}], r"record 1 hops: expected an integer >= 1, got 'two'"),
    ([{"question": "a?", "answers": ["x"], "relation_path": "r"}], r"record 1 relation_path: expected a list"),
    ([{"question": "a?", "answers": ["x"], "sparql": 3}], r"record 1 sparql: expected a string, got 3"),
    ([{"question": "a?", "answers": ["x"]}, [1, 2]], r"record 2 is list, not an object"),
])
def test_data_jsonl_errors_name_the_record_and_the_fix(tmp_path, records, message):
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in records))
    with pytest.raises(DatasetError, match=message):
        load_dataset("jsonl", f, split="dev")


def test_data_jsonl_reads_a_bom_a_json_list_and_names_bad_bytes_and_lines(tmp_path):
    rec = {"question": "a?", "answers": ["x"]}
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(rec).encode() + b"\n")
    assert [s.question for s in load_dataset("jsonl", bom, split="all")] == ["a?"]
    listed = tmp_path / "list.jsonl"  # a JSON list saved with the .jsonl suffix
    listed.write_text(json.dumps([rec, {**rec, "question": "b?"}]))
    assert [s.question for s in load_dataset("jsonl", listed, split="all")] == ["a?", "b?"]
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(rec).encode() + b"\n" + b'{"question": "caf\xe9?", "answers": ["x"]}\n')
    with pytest.raises(DatasetError, match=r"latin.jsonl:2: not UTF-8 \(byte 0xe9"):
        load_dataset("jsonl", latin, split="all")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(json.dumps(rec) + '\n{"question": \n')
    with pytest.raises(DatasetError, match=r"cut.jsonl:2: not valid JSON"):
        load_dataset("jsonl", cut, split="all")


def test_schema_fields_are_checked():
    with pytest.raises(Exception, match="need entity_ns and relation_ns; unknown \\['namespace'\\]"):
        instantiate(compose_config(["kb=tsv", f"kb.path={EXAMPLES / 'capitals.tsv'}",
                                    "kb.schema={namespace:'http://x/'}"]).kb)
    with pytest.raises(ConfigError):
        from kgreason.kb.schema import as_schema
        as_schema(3)  # type: ignore[arg-type]


def test_metaqa_paths_do_not_depend_on_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("KGREASON_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    path = Path(compose_config(["kb=metaqa"]).kb.path)
    assert path.is_absolute() and path == (ROOT.parent / "shared" / "data" / "metaqa" / "kb.txt").resolve()
    monkeypatch.setenv("KGREASON_DATA", str(tmp_path))
    assert compose_config(["data=metaqa_1hop"]).data.path == str(tmp_path / "metaqa")


def test_a_method_trains_on_ones_own_kb_and_questions(tmp_path):
    """The docs/data.md command: every stage on capitals.ttl + capitals.jsonl."""
    out = tmp_path / "own"
    p = run("method=kg_r1", "preset=smoke", "kb=rdf", f"kb.path={EXAMPLES / 'capitals.ttl'}", SCHEMA,
            "data=jsonl", *QUESTIONS, f"hydra.run.dir={out}")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "SFT on 8 cold-start trajectories" in (out / "run.log").read_text()  # the oracle walked our KB
    rows = [json.loads(line) for line in (out / "eval_trained.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows} <= {f"cap-{i}" for i in range(10, 16)} and len(rows) == 4
