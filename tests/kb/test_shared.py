"""One Oxigraph server for every process of a run (``kb=shared_oxigraph``): the first
process serves, a process it starts connects, a server that dies is restarted by its owner
and is a typed error for the others until it is back."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kgreason.errors import KBUnavailable
from kgreason.kb import shared

CHILD = """
import json, sys
from kgreason.errors import KBUnavailable
from kgreason.kb import shared
kb = shared.shared_oxigraph_kb()
try:
    n = kb.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"].value
except KBUnavailable as e:
    n = "KBUnavailable: " + str(e)
print(json.dumps({"kind": type(kb).__name__, "owned": len(shared._OWNED), "n": n}))
"""


def child() -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def owner(monkeypatch):
    # set, not deleted: monkeypatch then restores the variable the owner publishes into
    monkeypatch.setenv(shared.SHARED_KB_ENV, "{}")
    monkeypatch.setattr(shared, "_OWNED", {})
    try:
        kb = shared.shared_oxigraph_kb(timeout_s=5.0)
    except KBUnavailable as e:
        pytest.skip(f"oxigraph server unavailable: {e}")
    yield kb
    kb.owner.stop()


def test_the_first_process_serves_and_the_processes_it_starts_connect(owner):
    n = owner.select("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"].value
    got = child()
    # the child connects to the owner's server: no server of its own, the same triples
    assert got == {"kind": "SparqlEndpointKB", "owned": 0, "n": n}
    assert shared.shared_oxigraph_kb().owner is owner.owner  # a second job in the owner's process: the same server


def test_a_dead_server_is_a_typed_error_elsewhere_and_the_owner_restarts_it(owner):
    owner.owner.proc.kill()
    owner.owner.proc.wait()
    got = child()
    assert got["kind"] == "SparqlEndpointKB" and got["n"].startswith("KBUnavailable") and owner.owner.url in got["n"]
    # the owner's next query brings the server back on the same URL, for everyone
    assert owner.select("ASK { ?s ?p ?o }") is not None and owner.owner.restarts == 1
    assert child()["n"] != got["n"] and not str(child()["n"]).startswith("KBUnavailable")


def test_a_missing_file_is_named(monkeypatch, tmp_path):
    from kgreason.errors import DatasetError

    monkeypatch.setenv(shared.SHARED_KB_ENV, "{}")
    with pytest.raises(DatasetError, match="nope.nt"):
        shared.shared_oxigraph_kb(tmp_path / "nope.nt")


def test_the_published_url_does_not_outlive_the_tests_that_set_it():
    import os

    assert shared.SHARED_KB_ENV not in os.environ  # runs after the tests above (file order)
