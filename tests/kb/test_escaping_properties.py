"""Property tests: no string changes a query's shape, and every string survives a round trip."""

from __future__ import annotations

import re
import string
from urllib.parse import unquote

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kgreason.kb import FREEBASE, OxigraphKB, check_read_only
from kgreason.kb.schema import encode_iri_part, sparql_string
from kgreason.types import Term

# Everything but surrogates and NUL, which RDF terms cannot hold.
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)

IDS = st.one_of(TEXT, TEXT.map(lambda s: "http://" + s), TEXT.map(lambda s: "https://x.org/" + s))

KB = OxigraphKB.from_triples([("m.a", "r.r.r", "m.b")])


@settings(max_examples=300, deadline=None)
@given(IDS)
@example("http://<(\xa0")  # the guard once read the no-break space as the IRI's end
def test_any_id_is_one_iri_and_round_trips(s):
    ref = FREEBASE.entity_ref(s)
    assert ref.count("<") == 1 and ref.count(">") == 1 and " " not in ref
    iri = FREEBASE.entity_iri(s)
    assert FREEBASE.to_id(iri) == s or iri.startswith(("http://", "https://")) and not iri.startswith(FREEBASE.entity_ns)
    assert KB.relations_out(s) == [] and KB.tails(s, s) == [] and KB.heads(s, s) == []
    # The template still parses as one pattern and finds nothing under the hostile id.
    q = f"SELECT ?o WHERE {{ {ref} ?p ?o }}"
    check_read_only(q)
    assert KB.select(q) == []


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_any_string_literal_round_trips_through_the_engine(s):
    rows = KB.select(f"SELECT ?v WHERE {{ BIND({sparql_string(s)} AS ?v) }}")
    assert rows == [{"v": Term.literal(s)}]
    assert KB.lookup(s) == []


ASCII_SAFE = set(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@/")


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_iri_encoding_keeps_exactly_the_allow_list_readable(s):
    out = encode_iri_part(s)
    assert unquote(out) == s
    kept = re.sub(r"%[0-9A-F]{2}", "", out)
    assert kept == "".join(c for c in s if c in ASCII_SAFE or (ord(c) > 127 and c.isalnum()))
