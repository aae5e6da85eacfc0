"""Embedded Oxigraph's timed queries run in a worker process that a timeout kills."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kgreason.data.demo import load_demo_kb
from kgreason.kb import KBQueryError, KBTimeout, OxigraphKB
from kgreason.types import Term

# 1.3·10¹² rows on the demo KG: hours of work for the engine, which cannot cancel it
RUNAWAY = "SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f }"
NS = "http://rdf.freebase.com/ns/"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().split(")")[-1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"  # a zombie has ended: it waits to be reaped and uses no CPU


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().split(")")[-1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_timed_out_query_stops_using_the_cpu():
    kb = load_demo_kb()
    names = f"SELECT ?s ?n WHERE {{ ?s <{NS}type.object.name> ?n }} ORDER BY ?s ?n LIMIT 5"
    before = kb.select(names)
    assert len(before) == 5
    worker = kb._queries.pid
    t0 = time.perf_counter()
    with pytest.raises(KBTimeout):
        kb.select(RUNAWAY, timeout_s=0.3)
    assert time.perf_counter() - t0 < 5
    assert not alive(worker)  # killed, not left computing
    assert not [t for t in threading.enumerate() if "oxigraph" in t.name]
    own = cpu_seconds(os.getpid())
    time.sleep(1.0)
    assert cpu_seconds(os.getpid()) - own < 0.5  # nothing of this process keeps a core busy
    # the next query gets a fresh worker with the same data
    assert kb.select(names) == before
    assert kb._queries.pid != worker and kb._queries.restarts == 1
    kb.close()
    assert kb._queries is None


def test_a_query_that_crashes_the_engine_costs_only_that_query():
    kb = load_demo_kb()
    # the guard refuses this nesting (it segfaulted the process); past the guard, the worker dies
    deep = "SELECT ?x WHERE { BIND(" + "(" * 20000 + "1" + ")" * 20000 + " AS ?x) }"
    with pytest.raises(KBQueryError, match="crashed"):
        kb._select(deep, 10.0, 10)
    assert kb.ask("ASK { ?s ?p ?o }")
    kb.close()


def doubling(k: int) -> str:
    """A query whose string doubles ``k`` times: 10 · 2^k characters."""
    binds = " ".join(f"BIND(CONCAT(?a{i}, ?a{i}) AS ?a{i + 1})" for i in range(k))
    return f'SELECT (STRLEN(?a{k}) AS ?n) WHERE {{ BIND("aaaaaaaaaa" AS ?a0) {binds} }}'


def test_a_query_that_builds_gigabytes_ends_the_worker_not_the_hosts_memory():
    from kgreason.kb.query_process import QueryProcess

    kb = load_demo_kb()
    worker = QueryProcess(kb.store, kb.schema, memory_limit_mb=512)
    try:
        assert worker.run(doubling(10), 10, 30.0)[0]["n"].value == str(10 * 2**10)
        with pytest.raises(KBQueryError, match="crashed"):  # 160 GB asked for, 512 MB allowed
            worker.run(doubling(34), 10, 60.0)
        assert worker.run("ASK { ?s ?p ?o }", 10, 30.0)[0]["ask"].value == "true"
    finally:
        worker.close()


def test_rows_added_after_a_query_are_seen_by_the_next():
    kb = OxigraphKB.from_triples([("m.a", "p.q.r", "m.b")])
    q = f"SELECT ?o WHERE {{ <{NS}m.a> <{NS}p.q.r> ?o }} ORDER BY ?o"
    assert [r["o"].value for r in kb.select(q)] == ["m.b"]
    kb.add_triples([("m.a", "p.q.r", "m.c"), ("m.a", "p.q.s", Term.literal("x"))])
    assert [r["o"].value for r in kb.select(q)] == ["m.b", "m.c"]
    assert kb.select(q) == kb._select(q, None, 10)  # the worker's rows are this process's rows
    kb.close()


def test_an_on_disk_store_is_opened_read_only_by_the_worker(tmp_path):
    kb = OxigraphKB(path=tmp_path / "store")
    kb.add_triples([("m.a", "p.q.r", "m.b")] + [(f"m.{i}", "p.q.s", f"m.{i + 1}") for i in range(200)])
    rows = kb.select(f"SELECT ?o WHERE {{ <{NS}m.a> <{NS}p.q.r> ?o }}")
    assert [r["o"].value for r in rows] == ["m.b"]
    with pytest.raises(KBTimeout):  # 201⁵ rows to count
        kb.select("SELECT (COUNT(*) AS ?c) WHERE { ?a ?p ?b . ?c ?q ?d . ?e ?r ?f . ?g ?h ?i . ?j ?k ?l }",
                  timeout_s=0.2)
    assert kb.ask("ASK { ?s ?p ?o }")
    kb.close()


def test_the_worker_ends_with_a_killed_parent_and_leaves_no_store_copy(tmp_path):
    code = (
        "import sys\n"
        "from kgreason.data.demo import load_demo_kb\n"
        "kb = load_demo_kb()\n"
        "kb.ask('ASK { ?s ?p ?o }')\n"
        "print(kb._queries.pid, flush=True)\n"
        f"kb.select({RUNAWAY!r}, timeout_s=3600)\n"
    )
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "TMPDIR": str(tmp)})
    worker = int(parent.stdout.readline())
    time.sleep(0.5)
    assert alive(worker)  # computing the runaway query
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alive(worker):
        time.sleep(0.2)
    assert not alive(worker)
    assert list(tmp.iterdir()) == []  # the store's dump was never a named file
