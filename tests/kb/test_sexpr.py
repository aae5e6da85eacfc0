"""Hand-worked S-expressions on a five-entity KG."""

from __future__ import annotations

import pytest

from kgreason.kb import OxigraphKB
from kgreason.kb.sexpr import SExprError, parse_sexpr, sexpr_to_sparql
from kgreason.types import XSD, Term

INT = XSD + "integer"


@pytest.fixture(scope="module")
def kb():
    t = [
        ("m.f1", "film.film.directed_by", "m.d"), ("m.f2", "film.film.directed_by", "m.d"),
        ("m.f3", "film.film.directed_by", "m.d"), ("m.f1", "film.film.runtime", Term.literal("100", INT)),
        ("m.f2", "film.film.runtime", Term.literal("150", INT)), ("m.f3", "film.film.runtime", Term.literal("150", INT)),
        ("m.f1", "type.object.type", "film.film"), ("m.f2", "type.object.type", "film.film"),
        ("m.d", "people.person.spouse_s", "m.c1"), ("m.d", "people.person.spouse_s", "m.c2"),
        ("m.c1", "people.marriage.spouse", "m.a"), ("m.c1", "people.marriage.from", Term.literal("1990-05-01", XSD + "date")),
        ("m.c1", "people.marriage.to", Term.literal("2000-01-01", XSD + "date")),
        ("m.c2", "people.marriage.spouse", "m.b"), ("m.c2", "people.marriage.from", Term.literal("2005", XSD + "gYear")),
    ]
    return OxigraphKB.from_triples(t)


def run(kb, s):
    rows = kb.select(sexpr_to_sparql(s))
    return sorted(v.value for r in rows for v in r.values())


def test_join_and_reverse(kb):
    assert run(kb, "(JOIN film.film.directed_by m.d)") == ["m.f1", "m.f2", "m.f3"]
    assert run(kb, "(JOIN (R film.film.directed_by) m.f2)") == ["m.d"]


def test_and_with_class(kb):
    assert run(kb, "(AND film.film (JOIN film.film.directed_by m.d))") == ["m.f1", "m.f2"]


def test_count(kb):
    assert run(kb, "(COUNT (JOIN film.film.directed_by m.d))") == ["3"]


def test_argmax_keeps_ties_argmin(kb):
    assert run(kb, "(ARGMAX (JOIN film.film.directed_by m.d) film.film.runtime)") == ["m.f2", "m.f3"]
    assert run(kb, "(ARGMIN (JOIN film.film.directed_by m.d) film.film.runtime)") == ["m.f1"]


def test_comparisons(kb):
    base = "(JOIN film.film.directed_by m.d)"
    assert run(kb, f"(AND {base} (gt film.film.runtime 100^^{INT}))") == ["m.f2", "m.f3"]
    assert run(kb, f"(AND {base} (ge film.film.runtime 100^^{INT}))") == ["m.f1", "m.f2", "m.f3"]
    assert run(kb, f"(AND {base} (lt film.film.runtime 150^^{INT}))") == ["m.f1"]
    assert run(kb, f"(AND {base} (le film.film.runtime 99^^{INT}))") == []


def test_time_constraint_years_dates_open_ends(kb):
    spouse_in = "(JOIN (R people.marriage.spouse) (TC (JOIN (R people.person.spouse_s) m.d) people.marriage.from {}))"
    assert run(kb, spouse_in.format("1995")) == ["m.a"]
    assert run(kb, spouse_in.format("2000")) == ["m.a"]  # ends in 2000: still married that year
    assert run(kb, spouse_in.format("2003")) == []
    assert run(kb, spouse_in.format("2010")) == ["m.b"]  # no end: ongoing
    assert run(kb, spouse_in.format("1990-04-30")) == []
    assert run(kb, spouse_in.format("NOW")) == ["m.b"]  # 2015-08-10 as in KBQA-o1


def test_chain_relation_in_argmax(kb):
    q = "(ARGMAX (JOIN (R people.marriage.spouse) (JOIN (R people.person.spouse_s) m.d)) (JOIN (R people.marriage.spouse) people.marriage.from))"
    assert parse_sexpr(q)[0] == "ARGMAX"
    # m.a's marriage started in 1990-05-01, m.b's in "2005": the max is m.b
    assert run(kb, q) == ["m.b"]


@pytest.mark.parametrize("bad", ["", "(JOIN a", "(JOIN a b))", "(FOO a b)", "(AND (COUNT x) y)", "(TC x y)"])
def test_malformed(bad):
    with pytest.raises(SExprError):
        sexpr_to_sparql(bad)


def test_deep_nesting_is_a_typed_error_not_a_recursion_error():
    tree = parse_sexpr("(" * 64 + "x" + ")" * 64)  # the deepest read
    for _ in range(64):
        assert isinstance(tree, list) and len(tree) == 1
        tree = tree[0]
    assert tree == "x"
    for text in ("(" * 65 + "x" + ")" * 65, "(" * 5000):  # the fuzzer's: thousands of brackets
        with pytest.raises(SExprError, match="deeper than 64"):
            parse_sexpr(text)


def test_builder_rebuilds_a_gold_cvt_expression_and_runs_it(demo_oxigraph):
    from kgreason.data import load_dataset
    from kgreason.kb.sexpr import SExprBuilder

    q = next(s for s in load_dataset("demo", split="train") if s.id == "demo-played_character-0702")

    b = SExprBuilder()
    assert b.find_relation("m.047fli4", "film.performance.film") == 1      # START: a new expression
    assert b.find_relation("m.0kcx7zs", "film.performance.character") == 2
    assert b.merge("expression1", "expression2") == 1                       # written back to the earlier one
    assert b.find_relation("expression", "film.performance.actor", reverse=True) == 1  # JOIN reuses it
    assert b.text() == q.sexpr and sorted(b.exprs) == [1]
    rows = demo_oxigraph.select(b.sparql())
    assert sorted(r["x"].value for r in rows) == sorted(a.id for a in q.answers) and rows
    assert b.count() == 1 and int(demo_oxigraph.select(b.sparql())[0]["count"].value) == len(rows)


def test_builder_errors_name_what_exists():
    from kgreason.kb.sexpr import SExprBuilder

    b = SExprBuilder()
    with pytest.raises(SExprError, match="defined: none yet"):
        b.count()
    b.find_relation("m.1", "a.b.c")
    with pytest.raises(SExprError, match="no expression expression4; defined: expression1"):
        b.merge("expression1", "expression4")
    with pytest.raises(SExprError, match="twice"):
        b.merge("expression1", "expression")
    with pytest.raises(SExprError, match="MAX or MIN"):
        b.order("BIGGEST", "a.b.d")
    with pytest.raises(SExprError, match="needs a number"):
        b.compare("lt", "a.b.e", "many")
    assert b.compare("lt", "a.b.e", "3") == 1
    assert b.text() == "(AND (JOIN a.b.c m.1) (lt a.b.e 3^^http://www.w3.org/2001/XMLSchema#integer))"
