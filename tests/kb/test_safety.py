"""Read-only guard, injection through entity strings, timeouts, outages, silent truncation."""

from __future__ import annotations

import shutil
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

import pytest

from kgreason.kb import (
    KBForbiddenQuery,
    KBQueryError,
    KBTimeout,
    KBTruncated,
    KBUnavailable,
    OxigraphKB,
    SparqlEndpointKB,
    TripleStoreKB,
    check_read_only,
    netns,
)
from kgreason.kb.servers import OxigraphServer, VirtuosoServer, free_port

NS = "http://rdf.freebase.com/ns/"
# 117 M rows to count on the demo KG: ~10 s, far over the tests' timeouts, yet it ends: a
# server given no time limit of its own goes on computing a query after the client's
# timeout (docs/reliability.md), and a three-way product would keep a core busy for hours.
HEAVY = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d }"

FORBIDDEN = [
    # SPARQL 1.1 §19.2 decodes codepoint escapes before parsing: SERVICE to such an engine
    r"SELECT * WHERE { \u0053ERVICE <http://127.0.0.1:9/x> { ?s ?p ?o } }",
    r"SELECT * WHERE { ?s ?p ?o . SERV\U00000049CE SILENT <http://127.0.0.1:9/x> { ?s ?p ?o } }",
    r"\u0044ELETE WHERE { ?s ?p ?o }",
    # dataset clauses: an engine may fetch a graph it does not hold
    "SELECT * FROM <http://127.0.0.1:9/g> WHERE { ?s ?p ?o }",
    "SELECT * FROM NAMED <http://127.0.0.1:9/g> WHERE { GRAPH ?g { ?s ?p ?o } }",
    "INSERT DATA { <http://a> <http://b> <http://c> }",
    "DELETE WHERE { ?s ?p ?o }",
    "PREFIX x: <http://x/> DELETE { ?s ?p ?o } INSERT { ?s ?p 1 } WHERE { ?s ?p ?o }",
    "LOAD <http://example.org/data.nt>",
    "CLEAR ALL",
    "DROP GRAPH <http://g>",
    "CREATE GRAPH <http://g>",
    "WITH <http://g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "SELECT * WHERE { SERVICE <http://example.org/sparql> { ?s ?p ?o } }",
    "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "DESCRIBE <http://a>",
    "SELECT ?s WHERE { ?s ?p ?o } ; DROP ALL",
    "select ?s where { ?s ?p ?o } # comment\n; insert data { <a> <b> <c> }",
    "SELECT * WHERE { ?s ?p ?o #x\rSERVICE <http://127.0.0.1:9/x> { ?a ?b ?c } } LIMIT 1",  # \r ends a comment
    "SELECT (bif:http_get('http://127.0.0.1:9/bif') AS ?x) WHERE {}",  # Virtuoso built-in
    "SELECT ?x WHERE { BIND(sql:f(1) AS ?x) }",
    "SELECT (<http://example.org/f>(1) AS ?x) WHERE {}",  # a custom function IRI
    "PREFIX f: <http://example.org/> SELECT ?x WHERE { ?x ?p ?o FILTER(f:g(?o)) }",
    "SELECT ?s WHERE { ?s ?p ?o }\xa0;\xa0DROP ALL",  # outside an IRI a no-break space still separates
    "SELECT * WHERE { ?s ?p 'Kenya'@en.SERVICE <http://127.0.0.1:9/x> { ?a ?b ?c } }",  # a language tag ends at '.'
    "SELECT * WHERE { ?s ?p true.service SILENT <http://127.0.0.1:9/x> { ?a ?b ?c } }",
    "SELECT * WHERE { ?s ?p 1.SERVICE <http://127.0.0.1:9/x> { ?a ?b ?c } }",
]

ALLOWED = [
    r'SELECT ?s WHERE { ?s ?p "caf\u00e9 SERVICE FROM" }',  # escapes and keywords inside a string
    'SELECT ?s WHERE { ?s ?p "INSERT DATA { <a> <b> <c> }" }',
    "SELECT ?s WHERE { ?s <http://x/DELETE> ?o }",
    "# DROP ALL in a comment\nASK { ?s ?p ?o }",
    "PREFIX ns: <http://rdf.freebase.com/ns/> SELECT ?x WHERE { ?x ns:load ?y }",
    "SELECT ?service WHERE { ?service ?p ?o } LIMIT 1",
    "SELECT ?s WHERE { ?s ?p '''multi\nline \"DROP\"''' }",
    'SELECT ?x WHERE { ?x ?p ?d FILTER(xsd:datetime(?d) <= "2015-08-10"^^xsd:dateTime) }',  # CWQ's casts
    "PREFIX x: <http://www.w3.org/2001/XMLSchema#> SELECT ?x WHERE { ?x ?p ?v FILTER(x:integer(?v) > 1) }",
    'SELECT (COUNT(DISTINCT ?x) AS ?c) WHERE { ?x ?p ?o FILTER(STRSTARTS(STR(?x), "a") && ?o IN (1, 2)) }',
    "SELECT ?x WHERE { ?x ?p ?o } ORDER BY DESC(?o) LIMIT 1",
    # an id Hypothesis found: "(" after a no-break space inside an IRI is not a function call
    "SELECT ?o WHERE { <http://%3C(\xa0> ?p ?o }",
]


@pytest.mark.parametrize("query", FORBIDDEN)
def test_guard_rejects_writes_and_remote(query):
    with pytest.raises(KBForbiddenQuery):
        check_read_only(query)


@pytest.mark.parametrize("query", ALLOWED)
def test_guard_allows_keywords_inside_literals_iris_comments(query):
    assert check_read_only(query).form in ("SELECT", "ASK")


@pytest.mark.parametrize("query", ["", "   ", "hello", "PREFIX x: <http://x/>"])
def test_guard_rejects_non_queries(query):
    with pytest.raises(KBQueryError):
        check_read_only(query)


TOO_BIG = [
    "SELECT ?x WHERE { BIND(" + "(" * 5000 + "1" + ")" * 5000 + " AS ?x) }",  # overflows Oxigraph's parser
    "SELECT ?x WHERE { VALUES ?x { " + "1 " * 20_000 + "} }",
    "SELECT ?x WHERE { ?x ?p '\ud800' }",  # a lone surrogate
    "SELECT ?x WHERE { BIND(" + "+".join(["1"] * 10_000) + " AS ?x) }",  # flat: segfaulted the engine
    "SELECT ?x WHERE { BIND(" + "+".join(["1"] * 300) + " AS ?x) }",  # a chain of 299 operators
    "SELECT ?o WHERE { <http://x/s> " + "/".join(["<http://x/p>"] * 1_000) + " ?o }",  # took 47 s
]


@pytest.mark.parametrize("query", TOO_BIG)
def test_guard_bounds_length_nesting_and_encoding(query):
    with pytest.raises(KBQueryError) as e:
        check_read_only(query)
    assert not isinstance(e.value, KBForbiddenQuery)


class _Listener(BaseHTTPRequestHandler):
    """Records the path of every request it gets (a request that should never come)."""

    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"reached")

    do_POST = do_GET

    def log_message(self, *args):
        pass


def test_no_request_leaves_through_any_backend(any_kb):
    """Federation hidden behind a \\r comment end and URL-fetching built-ins never reach the
    engine, on every backend; a listener on loopback sees no request."""
    server = HTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    _Listener.hits.clear()
    try:
        for q in (f"SELECT * WHERE {{ ?s ?p ?o #x\rSERVICE <http://127.0.0.1:{port}/x> {{ ?a ?b ?c }} }} LIMIT 1",
                  f"SELECT (bif:http_get('http://127.0.0.1:{port}/bif') AS ?x) WHERE {{}}",
                  f"SELECT ?x WHERE {{ BIND(<http://127.0.0.1:{port}/f>(1) AS ?x) }}"):
            with pytest.raises(KBForbiddenQuery):
                any_kb.select(q)
        for q in TOO_BIG:  # refused before the engine parses: the process is still here
            with pytest.raises(KBQueryError):
                any_kb.select(q)
        assert any_kb.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 1")
    finally:
        server.shutdown()
    assert _Listener.hits == []


def test_forbidden_select_leaves_kb_unchanged(any_kb):
    count = f"SELECT (COUNT(*) AS ?c) WHERE {{ ?s <{NS}type.object.name> ?o }}"
    before = any_kb.select(count)[0]["c"].value
    for q in FORBIDDEN:
        with pytest.raises(KBForbiddenQuery):
            any_kb.select(q)
    assert any_kb.select(count)[0]["c"].value == before


def test_syntax_error_is_a_query_error(any_kb):
    with pytest.raises(KBQueryError):
        any_kb.select("SELECT ?x WHERE { ?x ")


HOSTILE = [
    "m.x> . ?s ?p ?o . <x",
    'x" } UNION { ?e ?p ?n } #',
    "m.0> ?r ?o } #",
    "<>",
    "m.0abc\n} DELETE WHERE { ?s ?p ?o",
    "' OR '1'='1",
    "\\u003e",
]


@pytest.mark.parametrize("bad", HOSTILE)
def test_hostile_strings_cannot_change_query_shape(any_kb, bad, demo_kg):
    # Each helper must treat the string as one id/name: nothing exists under it.
    assert any_kb.relations_out(bad) == []
    assert any_kb.relations_in(bad) == []
    assert any_kb.tails(bad, "type.object.name") == []
    assert any_kb.heads(bad, "location.location.containedby") == []
    assert any_kb.tails(demo_kg.id("place", "Zürich"), bad) == []
    assert any_kb.lookup(bad) == []
    assert any_kb.names([bad]) == {}
    assert any_kb.exists(bad) is False


def test_embedded_timeout_returns_on_time(demo_oxigraph):
    demo_oxigraph.ask("ASK { ?s ?p ?o }")  # the budget counts from the request, not the worker's start
    t0 = time.perf_counter()
    with pytest.raises(KBTimeout):
        demo_oxigraph.select(HEAVY, timeout_s=0.2)
    assert time.perf_counter() - t0 < 2.0


def test_closed_store_is_unavailable():
    kb = OxigraphKB.from_triples([("m.a", "r.r.r", "m.b")])
    kb.close()
    with pytest.raises(KBUnavailable):
        kb.select("SELECT * WHERE { ?s ?p ?o }")


@pytest.mark.server
def test_unreachable_endpoint_retries_then_unavailable():
    kb = SparqlEndpointKB(f"http://127.0.0.1:{free_port()}/query", retries=2, backoff_s=0.05, timeout_s=2)
    t0 = time.perf_counter()
    with pytest.raises(KBUnavailable):
        kb.select("ASK { ?s ?p ?o }")
    assert time.perf_counter() - t0 >= 0.05 + 0.1  # two backoffs slept: retried, not given up


@pytest.mark.server
def test_endpoint_that_goes_away(demo_nt):
    try:
        srv = OxigraphServer.from_file(demo_nt).start()
    except KBUnavailable as e:
        pytest.skip(str(e))
    kb = SparqlEndpointKB(srv.url, retries=1, backoff_s=0.05, timeout_s=5)
    assert kb.ask("ASK { ?s ?p ?o }")
    srv.stop()
    with pytest.raises(KBUnavailable):
        kb.ask("ASK { ?s ?p ?o }")


@pytest.mark.server
def test_query_errors_are_not_retried(oxigraph_server):
    kb = SparqlEndpointKB(oxigraph_server.url, retries=5, backoff_s=1.0)
    t0 = time.perf_counter()
    with pytest.raises(KBQueryError):
        kb.select("SELECT ?x WHERE { ?x ")
    assert time.perf_counter() - t0 < 1.0


@pytest.mark.server
def test_oxigraph_server_timeout_cut_body_is_a_timeout(demo_nt):
    with OxigraphServer.from_file(demo_nt, timeout_s=1) as srv:
        kb = SparqlEndpointKB(srv.url, timeout_s=60)
        with pytest.raises(KBTimeout):
            kb.select(HEAVY)


@pytest.fixture(scope="module")
def small_virtuoso(demo_nt):
    if not shutil.which("virtuoso-t"):
        pytest.skip("Virtuoso not installed (apt-get install virtuoso-opensource-7-bin)")
    with VirtuosoServer(demo_nt, result_max_rows=100, max_exec_s=2, sandbox=netns.available()) as srv:
        yield srv


@pytest.mark.server
def test_virtuoso_silent_row_cap_is_detected(small_virtuoso):
    kb = SparqlEndpointKB(small_virtuoso.url)
    with pytest.raises(KBTruncated) as ei:
        kb.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 500")
    assert len(ei.value.rows) == 100 and ei.value.cap == 100
    assert len(kb.select("SELECT ?s WHERE { ?s ?p ?o } LIMIT 50")) == 50


@pytest.mark.server
def test_virtuoso_anytime_partial_result_is_detected(small_virtuoso):
    kb = SparqlEndpointKB(small_virtuoso.url)
    kb._client.addParameter("timeout", "300")  # what a careless client sends
    with pytest.raises(KBTruncated, match="partial"):
        kb.select("SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . FILTER(STR(?b) < STR(?d)) }")


@pytest.mark.server
def test_virtuoso_execution_limit_is_a_timeout(small_virtuoso):
    kb = SparqlEndpointKB(small_virtuoso.url)
    with pytest.raises(KBTimeout):
        kb.select("SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . FILTER(STR(?b) < STR(?d)) }")


def test_timed_out_query_does_not_block_process_exit():
    import subprocess
    import sys

    code = (
        "from kgreason.data.demo import load_demo_kb\n"
        "from kgreason.kb import KBTimeout\n"
        "kb = load_demo_kb()\n"
        "try:\n"
        f"    kb.select({HEAVY!r}, timeout_s=0.2)\n"
        "except KBTimeout:\n"
        "    print('timed out')\n"
    )
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "timed out", out.stderr
    assert time.perf_counter() - t0 < 20


class _Endless(BaseHTTPRequestHandler):
    """A SPARQL endpoint whose answer never ends (a cartesian product), or stalls."""

    sent = 0
    stall = False

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.end_headers()
        row = b'{"x": {"type": "literal", "value": "1"}},\n' * 1000
        try:
            self.wfile.write(b'{"head": {"vars": ["x"]}, "results": {"bindings": [')
            self.wfile.write(row[:42])
            self.wfile.flush()
            stall_until = time.monotonic() + 5
            while type(self).sent < 1 << 30:
                if type(self).stall:
                    if time.monotonic() > stall_until:
                        return
                    time.sleep(0.05)
                    continue
                self.wfile.write(row)
                type(self).sent += len(row)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def endless():
    _Endless.sent, _Endless.stall = 0, False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Endless)
    server.daemon_threads = True  # shutdown does not wait for a handler still writing
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/sparql"
    server.shutdown()


def test_endpoint_reads_only_up_to_the_row_cap(endless):
    kb = SparqlEndpointKB(endless, timeout_s=10)
    with pytest.raises(KBTruncated) as e:
        kb.select("SELECT ?x WHERE { ?a ?b ?x }", max_rows=100)
    assert len(e.value.rows) == 100 and e.value.rows[0]["x"].value == "1"
    time.sleep(0.2)
    assert _Endless.sent < 64 << 20  # the transfer stopped: far from the server's 1 GB


def test_endpoint_answer_that_stalls_is_a_timeout(endless):
    _Endless.stall = True
    with pytest.raises(KBTimeout):
        SparqlEndpointKB(endless, timeout_s=1).select("SELECT ?x WHERE { ?a ?b ?x }", max_rows=100)


def test_engine_evaluation_errors_are_typed(demo_oxigraph):
    """What the guard lets through but the engine refuses (here an extension function,
    called below the guard) is a KBQueryError, with and without a time budget."""
    for budget in (None, 5.0):
        with pytest.raises(KBQueryError, match="custom function"):
            demo_oxigraph._select("SELECT ?x WHERE { ?s ?p ?o BIND(<http://x/f>(?o) AS ?x) }", budget, 10)


def test_concurrent_cold_casefold_lookups_see_a_full_index(demo_kg):
    """Threads that all find the case-insensitive index missing build it; none may read it
    half-filled (it was published empty, then filled: some threads got [])."""
    import sys
    from concurrent.futures import ThreadPoolExecutor

    names = sorted({t.value.lower() for _, r, t in TripleStoreKB.from_triples(demo_kg.triples)._triples
                    if r == "type.object.name" and t.is_literal})[:200]
    for _ in range(5):
        kb = TripleStoreKB.from_triples(demo_kg.triples)  # a cold index each round
        assert len(names) >= 8
        barrier = threading.Barrier(8)

        def look(name: str, kb=kb, barrier=barrier) -> list[str]:
            barrier.wait()
            return kb.lookup(name.upper())

        switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # switch threads often, so a half-built index would be seen
        try:
            with ThreadPoolExecutor(8) as pool:
                found = list(pool.map(look, names[:8]))
        finally:
            sys.setswitchinterval(switch)
        assert all(found), found
