"""One conformance suite, run on every backend over the demo KG.

Expected values are computed from the Python triple list itself, so every backend is
checked against the data, not only against another backend.
"""

from __future__ import annotations

from collections import defaultdict

import pytest

from kgreason.kb import FREEBASE, KBTruncated
from kgreason.types import XSD, Term

NS = "http://rdf.freebase.com/ns/"
HIDDEN = set(FREEBASE.hidden)


@pytest.fixture(scope="module")
def ref(demo_kg):
    out, inn, names = defaultdict(lambda: defaultdict(set)), defaultdict(lambda: defaultdict(set)), {}
    by_name = defaultdict(set)
    for h, r, t in demo_kg.triples:
        tt = Term.uri(t) if isinstance(t, str) else t
        out[h][r].add(tt)
        inn[tt][r].add(h)
        if r == "type.object.name":
            names[h] = tt.value
        if r in ("type.object.name", "common.topic.alias"):
            by_name[tt.value].add(h)
    return {"out": out, "in": inn, "names": names, "by_name": by_name, "kg": demo_kg}


SAMPLE_ENTITIES = [
    ("person", "Albert Einstein"), ("place", "United States"), ("film", "The Godfather"),
    ("book", "Harry Potter and the Philosopher's Stone"), ("film", "Harry Potter and the Philosopher's Stone"),
    ("org", "FC Barcelona"), ("place", "Washington, D.C."), ("person", "Lionel Messi"),
    ("award", "Nobel Prize in Physics"), ("album", "1989"), ("place", "Zürich"),
]


def _ids(ref):
    return [ref["kg"].id(k, n) for k, n in SAMPLE_ENTITIES]


def test_relations_out_and_in(any_kb, ref):
    for e in _ids(ref):
        assert any_kb.relations_out(e) == sorted(r for r in ref["out"][e] if r not in HIDDEN)
        assert any_kb.relations_in(e) == sorted(r for r in ref["in"][Term.uri(e)] if r not in HIDDEN)


def test_tails_and_heads_with_literals(any_kb, ref):
    for e in _ids(ref):
        for r, ts in ref["out"][e].items():
            assert any_kb.tails(e, r) == sorted(ts), (e, r)
        for r, hs in ref["in"][Term.uri(e)].items():
            assert [t.value for t in any_kb.heads(e, r)] == sorted(hs), (e, r)


def test_edges_around_a_frontier(any_kb, ref):
    ids = _ids(ref)[:4]
    out = sorted(((e, r, t) for e in ids for r, ts in ref["out"][e].items() if r not in HIDDEN for t in ts),
                 key=lambda x: (x[0], x[1], str(x[2])))
    inn = sorted(((e, r, h) for e in ids for r, hs in ref["in"][Term.uri(e)].items() if r not in HIDDEN
                  for h in hs), key=lambda x: (x[0], x[1], x[2]))
    assert any_kb.edges_around(ids, "out") == out
    assert [(e, r, t.value) for e, r, t in any_kb.edges_around(ids, "in")] == inn
    assert any_kb.edges_around([], "in") == []
    with pytest.raises(ValueError, match="choose 'out' or 'in'"):
        any_kb.edges_around(ids, "both")


def test_cvt_hop(any_kb, ref):
    godfather = ref["kg"].id("film", "The Godfather")
    perfs = any_kb.tails(godfather, "film.film.starring")
    assert len(perfs) == 4 and all(p.is_entity for p in perfs)
    actors = {a.value for p in perfs for a in any_kb.tails(p.value, "film.performance.actor")}
    assert actors == {ref["kg"].id("person", n) for n in ("Marlon Brando", "Al Pacino", "James Caan", "Diane Keaton")}


def test_literal_types(any_kb, ref):
    einstein = ref["kg"].id("person", "Albert Einstein")
    assert any_kb.tails(einstein, "people.person.date_of_birth") == [Term.literal("1879-03-14", XSD + "date")]
    assert any_kb.tails(einstein, "people.person.height_meters") == [Term.literal("1.75", XSD + "decimal")]
    hamlet = ref["kg"].id("book", "Hamlet")
    assert any_kb.tails(hamlet, "book.written_work.date_of_first_publication") == [Term.literal("1603", XSD + "gYear")]
    us = ref["kg"].id("place", "United States")
    assert any_kb.tails(us, "location.country.iso_alpha_3") == [Term.literal("USA")]
    assert any_kb.tails(us, "location.location.area") == [Term.literal("9833520", XSD + "integer")]
    # heads of a literal: who was born on that date
    assert [t.value for t in any_kb.heads(Term.literal("1879-03-14", XSD + "date"), "people.person.date_of_birth")] == [einstein]


def test_names_language_tagged(any_kb, ref):
    ids = _ids(ref)
    assert any_kb.names(ids) == {e: ref["names"][e] for e in ids}
    cvt = any_kb.tails(ref["kg"].id("film", "The Godfather"), "film.film.starring")[0].value
    assert cvt not in any_kb.names([cvt])  # CVT nodes have no name


def test_lookup_exact_casefold_alias_and_ambiguous(any_kb, ref):
    kg = ref["kg"]
    assert any_kb.lookup("Albert Einstein") == [kg.id("person", "Albert Einstein")]
    assert any_kb.lookup("albert EINSTEIN") == [kg.id("person", "Albert Einstein")]
    assert any_kb.lookup("USA") == [kg.id("place", "United States")]  # alias
    hp = "Harry Potter and the Philosopher's Stone"
    assert any_kb.lookup(hp) == sorted([kg.id("film", hp), kg.id("book", hp)])
    assert any_kb.lookup("Zürich") == [kg.id("place", "Zürich")]
    assert any_kb.lookup("no such entity anywhere") == []


def test_types(any_kb, ref):
    e = ref["kg"].id("person", "Lionel Messi")
    expected = sorted(t.value for t in ref["out"][e]["type.object.type"])
    assert any_kb.types(e) == expected and "sports.pro_athlete" in expected


def test_exists(any_kb, ref):
    assert any_kb.exists(ref["kg"].id("place", "Zürich"))
    assert not any_kb.exists("m.0nothere")


def test_select_count(any_kb, ref):
    rows = any_kb.select(f"SELECT (COUNT(?s) AS ?c) WHERE {{ ?s <{NS}people.person.date_of_birth> ?d }}")
    expected = sum(1 for h, r, _ in ref["kg"].triples if r == "people.person.date_of_birth")
    assert int(rows[0]["c"].value) == expected


def test_select_order_by_limit(any_kb, ref):
    rows = any_kb.select(
        f"SELECT ?x ?a WHERE {{ ?x <{NS}location.location.area> ?a }} ORDER BY DESC(?a) LIMIT 3")
    areas = sorted(((int(t.value), h) for h, r, t in ref["kg"].triples if r == "location.location.area"), reverse=True)
    assert [r["x"].value for r in rows] == [h for _, h in areas[:3]]


def test_select_filter_on_dates(any_kb, ref):
    q = (f"SELECT DISTINCT ?x WHERE {{ ?x <{NS}people.person.date_of_birth> ?d . "
         f'FILTER(?d >= "1970-01-01"^^<{XSD}date> && ?d < "1980-01-01"^^<{XSD}date>) }}')
    got = sorted(r["x"].value for r in any_kb.select(q))
    expected = sorted(h for h, r, t in ref["kg"].triples
                      if r == "people.person.date_of_birth" and "1970-01-01" <= t.value < "1980-01-01")
    assert got == expected and len(expected) > 10


def test_ask(any_kb, ref):
    e = ref["kg"].id("place", "Zürich")
    assert any_kb.ask(f"ASK {{ <{NS}{e}> ?p ?o }}") is True
    assert any_kb.ask(f"ASK {{ <{NS}m.0nothere> ?p ?o }}") is False


def test_row_cap_raises_with_rows(any_kb):
    with pytest.raises(KBTruncated) as ei:
        any_kb.select(f"SELECT ?s WHERE {{ ?s <{NS}type.object.name> ?n }}", max_rows=50)
    assert len(ei.value.rows) == 50 and ei.value.cap == 50


def test_schema_vocabulary(any_kb, ref):
    """relations() and classes(): the vocabulary rankers and the pattern search rank against."""
    rels = {r for e in list(ref["out"]) for r in ref["out"][e]}
    assert any_kb.relations() == sorted(rels - HIDDEN)
    classes = {t.value for e in list(ref["out"]) for t in ref["out"][e].get("type.object.type", ())}
    assert classes and any_kb.classes() == sorted(classes)
    assert any_kb.relations() is not any_kb.relations()  # a copy: callers may sort or filter it
