"""A server in its own network namespace: clients reach it, it reaches no host."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import HTTPServer

import pytest

from kgreason.errors import KBUnavailable
from kgreason.kb import netns
from kgreason.kb.servers import VirtuosoServer, free_port
from tests.kb.test_safety import _Listener

needs_netns = pytest.mark.skipif(not netns.available(), reason="no network namespaces on this host")


@pytest.fixture
def listener():
    """An HTTP server on the host's loopback that records every request."""
    server = HTTPServer(("127.0.0.1", 0), _Listener)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Listener.hits.clear()
    yield server.server_address[1]
    server.shutdown()


# a server that, asked for /fetch?port=P, tries to fetch http://127.0.0.1:P/ itself
_FETCHER = textwrap.dedent("""
    import sys, urllib.parse, urllib.request
    from http.server import BaseHTTPRequestHandler, HTTPServer
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            port = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["port"][0]
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/from-server", timeout=3).read()
            except OSError as e:
                body = f"failed: {type(e).__name__}".encode()
            self.send_response(200); self.end_headers(); self.wfile.write(body)
        def log_message(self, *a): pass
    HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


def _get(url: str, deadline_s: float = 20) -> bytes:
    end = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.read()
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > end:
                raise
            time.sleep(0.1)


@needs_netns
def test_relayed_port_answers_but_the_server_reaches_no_host(listener):
    inner, outer = 8123, free_port()
    argv, fds, socks = netns.sandboxed({inner: outer}, [sys.executable, "-c", _FETCHER, str(inner)])
    proc = subprocess.Popen(argv, pass_fds=fds)
    for s in socks:
        s.close()
    try:
        body = _get(f"http://127.0.0.1:{outer}/fetch?port={listener}")
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) is not None
    assert body.startswith(b"failed:")  # the request to the host's loopback never left the namespace
    assert _Listener.hits == []
    # unisolated, the same server does reach the listener: the namespace is what stops it
    port = free_port()
    plain = subprocess.Popen([sys.executable, "-c", _FETCHER, str(port)])
    try:
        assert _get(f"http://127.0.0.1:{port}/fetch?port={listener}") == b"reached"
    finally:
        plain.terminate()
        plain.wait(timeout=10)
    assert _Listener.hits == ["/from-server"]


@needs_netns
def test_supervisor_stops_its_server(tmp_path):
    marker = tmp_path / "alive"
    argv, fds, socks = netns.sandboxed({}, [sys.executable, "-c",
                                            f"import time, pathlib; pathlib.Path({str(marker)!r}).touch(); "
                                            "time.sleep(600)"])
    proc = subprocess.Popen(argv, pass_fds=fds)
    end = time.monotonic() + 20
    while not marker.exists() and time.monotonic() < end:
        time.sleep(0.05)
    assert marker.exists()
    proc.terminate()  # SIGTERM to the supervisor is passed on; it exits with the server
    assert proc.wait(timeout=10) == -15
    out = subprocess.run(["pgrep", "-f", f"pathlib.Path({str(marker)!r})"], capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_without_namespaces_the_error_says_how_to_run_unisolated(monkeypatch):
    monkeypatch.setattr(netns, "available", lambda: False)
    with pytest.raises(KBUnavailable, match="sandbox=False"):
        netns.sandboxed({80: free_port()}, ["true"])


def _bif_get(endpoint: str, port: int) -> str:
    """Send ``bif:http_get`` straight to Virtuoso, past the client's guard."""
    q = f"SELECT (bif:http_get('http://127.0.0.1:{port}/bif') AS ?x) WHERE {{}}"
    url = endpoint + "?" + urllib.parse.urlencode({"query": q, "format": "application/sparql-results+json"})
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read().decode()
    except urllib.error.HTTPError as e:
        return f"HTTP {e.code}"


@needs_netns
@pytest.mark.skipif(not shutil.which("virtuoso-t"), reason="Virtuoso not installed")
def test_sandboxed_virtuoso_fetches_nothing_even_past_the_guard(virtuoso_server, demo_nt, listener):
    """Issue 21: the test Virtuoso runs with outbound access disabled. The fixture's
    server answers queries (the conformance suite runs on it) but a ``bif:http_get`` sent
    past the guard never arrives; the same request to an unisolated Virtuoso does."""
    assert virtuoso_server.sandbox
    assert _bif_get(virtuoso_server.url, listener) == "HTTP 500"
    assert _Listener.hits == []
    with VirtuosoServer(demo_nt, sandbox=False) as plain:
        assert "reached" in _bif_get(plain.url, listener)
    assert _Listener.hits == ["/bif"]
