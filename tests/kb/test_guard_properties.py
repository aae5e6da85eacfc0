"""Federation hidden at every token boundary never reaches a listener: the guard reads
queries with SPARQL's own terminals, and the engines that run them have no network.

Generated queries put ``SERVICE`` (any case, with or without ``SILENT``) after every kind
of token — language tags, numbers, prefixed names, IRIs, literals, brackets — with every
separator SPARQL knows (none, spaces, ``.``, ``;``, comments ended by ``\\n`` or ``\\r``),
inside every graph pattern that can hold one (OPTIONAL, a subquery, UNION, MINUS, GRAPH,
EXISTS). Each is run on the embedded store in-process, on its killable worker and on the
triple store; whatever each answers, the listener must see no request.
"""

from __future__ import annotations

import contextlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgreason.data import load_demo_kb
from kgreason.errors import KBError
from kgreason.kb import OxigraphKB, netns
from kgreason.kb.query_process import QueryProcess


class _Listener(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.end_headers()
        self.wfile.write(b'{"head": {"vars": ["a"]}, "results": {"bindings": []}}')

    do_POST = do_GET

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.fixture(scope="module")
def kbs():
    """The embedded store in-process and on its worker, and the triple store."""
    worker = load_demo_kb("oxigraph")
    in_process = OxigraphKB(worker.store, schema=worker.schema, timeout_s=None)
    return [in_process, worker, load_demo_kb("triplestore")]


BEFORE = ["'Kenya'@en", '"x"@en-GB', "'''y'''@fr", '"2"^^<http://www.w3.org/2001/XMLSchema#integer>', "1", "1.5",
          "1e3", ".5", "?o", "$o", "<http://x/o>", "ns:o", "ns:o.p", "_:b", "true", "a", "()"]
SEPARATORS = ["", " ", ".", " . ", ";", " ;", ",", "\t", "\n", "\r", "#c\n", "#c\r", "\u00a0", "\u3000"]
CONTEXTS = ["{b}", "OPTIONAL {{ {b} }}", "{{ SELECT * WHERE {{ {b} }} }}", "{{ ?s ?p ?o }} UNION {{ {b} }}",
            "?s ?p ?o MINUS {{ {b} }}", "GRAPH ?g {{ {b} }}", "?s ?p ?o FILTER EXISTS {{ {b} }}",
            "?s ?p ?o FILTER NOT EXISTS {{ {b} }}"]


@st.composite
def federated(draw, port: int) -> str:
    word = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in "SERVICE")
    silent = draw(st.sampled_from(["", " SILENT", " silent", " sIlEnT"]))
    before, sep = draw(st.sampled_from(BEFORE)), draw(st.sampled_from(SEPARATORS))
    call = f"{word}{silent} <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }}"
    body = f"?s ?p {before}{sep}{call}"
    context = draw(st.sampled_from(CONTEXTS)).format(b=body)
    return f"PREFIX ns: <http://x/> SELECT * WHERE {{ {context} }} LIMIT 1"


@st.composite
def spliced(draw, port: int) -> str:
    """A SERVICE clause cut into a plain query at any character."""
    base = "PREFIX ns: <http://x/> SELECT ?s WHERE { ?s ns:p 'a'@en . ?s ?q 1.5 OPTIONAL { ?s ?r ?o } } LIMIT 1"
    at = draw(st.integers(0, len(base)))
    sep = draw(st.sampled_from(SEPARATORS))
    return base[:at] + sep + f"SERVICE <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }}" + sep + base[at:]


def _run_all(kbs, query: str) -> None:
    for kb in kbs:
        with contextlib.suppress(KBError):
            kb.select(query)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_generated_federation_reaches_a_listener(kbs, port, data):
    query = data.draw(st.one_of(federated(port), spliced(port)))
    _Listener.hits.clear()
    _run_all(kbs, query)
    assert _Listener.hits == [], query


def test_every_token_separator_and_pattern_around_service(kbs, port):
    """The whole grid of token × separator × graph pattern, not a sample of it."""
    leaks = []
    for before in BEFORE:
        for sep in SEPARATORS:
            for context in CONTEXTS:
                body = f"?s ?p {before}{sep}SERVICE SILENT <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }}"
                query = f"PREFIX ns: <http://x/> SELECT * WHERE {{ {context.format(b=body)} }} LIMIT 1"
                _Listener.hits.clear()
                _run_all(kbs, query)
                if _Listener.hits:
                    leaks.append(query)
    assert not leaks, f"{len(leaks)} queries reached the listener, e.g. {leaks[:3]}"


def test_the_issues_probes_are_refused(kbs, port):
    """The forms that got through the old guard (a word token that swallowed '.')."""
    iri = f"<http://127.0.0.1:{port}/x>"
    for q in (f"SELECT * WHERE {{ ?s ?p 'Kenya'@en.SERVICE {iri} {{ ?a ?b ?c }} }}",
              f"SELECT * WHERE {{ {{ SELECT * WHERE {{ ?s ?p 'K'@en.service SILENT {iri} {{ ?a ?b ?c }} }} }} }}",
              f"SELECT * WHERE {{ ?s ?p ?o OPTIONAL {{ ?s ?p 'K'@en.SERVICE SILENT {iri} {{ ?a ?b ?c }} }} }}"):
        _Listener.hits.clear()
        _run_all(kbs, q)
        assert _Listener.hits == [], q


@pytest.mark.skipif(not netns.available(), reason="this host cannot create network namespaces")
def test_the_worker_has_no_network_even_past_the_guard(port):
    """Defence in depth: the query worker runs a federated query given to it directly (no
    guard) and still reaches nothing."""
    kb = load_demo_kb("oxigraph")

    def hits(sandbox: bool | None) -> list[str]:
        worker = QueryProcess(kb.store, kb.schema, sandbox=sandbox)
        assert worker.isolated == (sandbox is not False)
        _Listener.hits.clear()
        try:
            worker.run(f"SELECT * WHERE {{ SERVICE SILENT <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }} }}", 10, 20.0)
        except KBError:
            pass
        finally:
            worker.close()
        return list(_Listener.hits)

    assert hits(None) == []
    assert hits(False)  # the same query unisolated does reach it: the namespace is what stops it


@pytest.mark.server
@pytest.mark.skipif(not netns.available(), reason="this host cannot create network namespaces")
def test_the_oxigraph_server_has_no_network_even_past_the_guard(demo_nt, port):
    """A federated query sent straight to the server (no client guard) reaches nothing."""
    import urllib.error
    import urllib.parse
    import urllib.request

    from kgreason.kb.servers import OxigraphServer

    query = f"SELECT * WHERE {{ SERVICE SILENT <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }} }}"
    with OxigraphServer.from_file(demo_nt) as srv:
        assert srv.sandbox
        _Listener.hits.clear()
        url = srv.url + "?" + urllib.parse.urlencode({"query": query})
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(url, timeout=30).read()
        assert _Listener.hits == []
        # and the server still answers
        ask = srv.url + "?" + urllib.parse.urlencode({"query": "ASK { ?s ?p ?o }"})
        assert b"true" in urllib.request.urlopen(ask, timeout=30).read()
