"""Fault injection: a real Oxigraph server killed, frozen, slow, cut off or resetting mid-episode.

Every action space runs episodes against a SPARQL endpoint while faults are injected —
the server process killed with SIGKILL or frozen with SIGSTOP, or a proxy in front of
it delaying, truncating, hanging or resetting the answers. The episode must go on with a
typed error observation within the time budget, recover when the fault clears, and an
answer given during the fault must report the outage (``ANSWER_KB_ERROR``) instead of
silently keeping its strings as literals.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from kgreason.data import load_dataset
from kgreason.envs import make_env
from kgreason.envs.base import ANSWER_KB_ERROR
from kgreason.errors import KBTimeout, KBUnavailable
from kgreason.kb import SparqlEndpointKB
from kgreason.kb.servers import OxigraphServer, free_port
from tests.conftest import serve_oxigraph
from tests.kb.sockets import AcceptLoop

TIMEOUT_S = 2
RETRIES = 1
# a hung endpoint costs the timeout once per attempt; a dead one a few fast refusals
BOUND_S = TIMEOUT_S * (RETRIES + 1) + 3

Q = load_dataset("demo", split="dev")[0]  # "What is the capital of Kenya?"
OTHER = load_dataset("demo", split="dev")[7].topic_entities[0].name  # a name the episode has not shown
CALLS = {
    "kg_r1": f'<kg-query>get_tail_relations("{Q.topic_entities[0].name}")</kg-query>',
    "isp_dtpo": f"<sparql>{Q.sparql}</sparql>",
    "knowcoder_a1": '<tool_call>{"name": "ExecuteSPARQL", "arguments": {"sparql": "'
                    + (Q.sparql or "").replace('"', '\\"') + '"}}</tool_call>',
}
ANSWERS = {
    "kg_r1": f"<answer>{OTHER}</answer>",
    "isp_dtpo": f"<answer>{OTHER}</answer>",
    "knowcoder_a1": f'<answer>\\boxed{{["{OTHER}"]}}</answer>',
}
# the spaces that run SPARQL have their own per-query budget
SPACE_KW = {"kg_r1": {}, "isp_dtpo": {"query_timeout_s": TIMEOUT_S}, "knowcoder_a1": {"query_timeout_s": TIMEOUT_S}}
KB_ERRORS = {"kg_r1": {"KG_SERVER_ERROR"}, "isp_dtpo": {"ISP_TIMEOUT", "ISP_NOT_EXECUTABLE"},
             "knowcoder_a1": {"KC_TIMEOUT", "KC_KB_ERROR"}}


class FaultProxy(AcceptLoop):
    """A TCP proxy to the server that misbehaves on demand (``mode``).

    ``pass`` forwards; ``slow`` forwards the answer in 256-byte pieces 20 ms apart;
    ``hang`` reads the request and never answers; ``truncate`` forwards the first 200
    bytes of the answer and closes; ``reset`` closes the connection with a TCP reset.
    """

    def __init__(self, upstream_port: int):
        self.upstream = upstream_port
        self.mode = "pass"
        self._held: list[socket.socket] = []
        super().__init__()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/query"

    def handle(self, conn: socket.socket) -> None:
        self._handle(conn, self.mode)

    def _handle(self, conn: socket.socket, mode: str) -> None:
        try:
            if mode == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()
                return
            if mode == "hang":
                conn.recv(65536)
                self._held.append(conn)  # never answered; closed at teardown
                return
            up = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
            threading.Thread(target=self._pump, args=(conn, up), daemon=True).start()
            sent = 0
            while chunk := up.recv(256 if mode == "slow" else 65536):
                if mode == "truncate" and sent + len(chunk) > 200:
                    conn.sendall(chunk[: 200 - sent])
                    break
                if mode == "slow":
                    time.sleep(0.02)
                conn.sendall(chunk)
                sent += len(chunk)
            up.close()
            # shutdown, not just close: the request pump still blocks on this socket,
            # and a close alone would not send the FIN the client must see
            conn.shutdown(socket.SHUT_RDWR)
            conn.close()
        except OSError:
            conn.close()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        super().close()
        for c in self._held:
            c.close()


@pytest.fixture(scope="module")
def server(demo_nt) -> Iterator[OxigraphServer]:
    # its own server: these tests freeze it, the session's stays for the others
    yield from serve_oxigraph(demo_nt)


@pytest.fixture
def proxy(server) -> Iterator[FaultProxy]:
    p = FaultProxy(server.port)
    yield p
    p.close()


def endpoint(url: str) -> SparqlEndpointKB:
    return SparqlEndpointKB(url, timeout_s=TIMEOUT_S, retries=RETRIES, backoff_s=0.05)


def timed_step(env, text: str):
    t0 = time.perf_counter()
    r = env.step(text)
    took = time.perf_counter() - t0
    assert took < BOUND_S, f"a step took {took:.1f}s under a fault"
    return r


def faulty_episode(space: str, kb: SparqlEndpointKB, inject, heal) -> None:
    """Healthy call → call under the fault (typed error) → healed call → answer under the fault."""
    env = make_env(space, kb, max_turns=6, **SPACE_KW[space])
    env.reset(Q)
    healthy = timed_step(env, CALLS[space])
    assert healthy.error is None, healthy.observation
    inject()
    r = timed_step(env, CALLS[space])
    assert not r.done and r.error in KB_ERRORS[space], (r.error, r.observation)
    assert r.observation.strip()
    heal()
    again = timed_step(env, CALLS[space])
    assert again.error is None and again.observation == healthy.observation  # recovered, same answer
    inject()
    r = timed_step(env, ANSWERS[space])
    assert r.done and r.error == ANSWER_KB_ERROR, r.error  # the outage is reported
    assert [a.name for a in r.answer] == [OTHER]  # the string is kept
    heal()


@pytest.mark.parametrize("space", sorted(CALLS))
@pytest.mark.parametrize("mode", ["hang", "truncate", "reset"])
def test_episode_survives_a_misbehaving_endpoint(proxy, space, mode):
    def inject():
        proxy.mode = mode

    def heal():
        proxy.mode = "pass"

    faulty_episode(space, endpoint(proxy.url), inject, heal)


@pytest.mark.parametrize("space", sorted(CALLS))
def test_a_slow_endpoint_gives_the_same_answers(proxy, space):
    env = make_env(space, endpoint(proxy.url), max_turns=6, **SPACE_KW[space])
    env.reset(Q)
    fast = timed_step(env, CALLS[space])
    proxy.mode = "slow"
    slow = timed_step(env, CALLS[space])
    assert slow.error is None and slow.observation == fast.observation


@pytest.mark.parametrize("space", sorted(CALLS))
def test_episode_survives_the_server_frozen_then_thawed(server, space):
    pid = server.proc.pid

    def inject():
        os.kill(pid, signal.SIGSTOP)

    def heal():
        os.kill(pid, signal.SIGCONT)

    try:
        faulty_episode(space, endpoint(server.url), inject, heal)
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.mark.parametrize("space", sorted(CALLS))
def test_episode_survives_the_server_killed_then_restarted(demo_nt, space):
    srv = OxigraphServer.from_file(demo_nt)
    srv.start()
    state = {"srv": srv}

    def inject():
        state["srv"].proc.send_signal(signal.SIGKILL)
        state["srv"].proc.wait(timeout=10)

    def heal():
        # the same store and port, as a supervisor would restart it
        state["srv"] = OxigraphServer(srv.location, port=srv.port).start()

    try:
        faulty_episode(space, endpoint(srv.url), inject, heal)
    finally:
        if state["srv"].proc is not None:
            state["srv"].proc.kill()
        srv.stop()


def test_the_endpoint_names_the_fault(proxy):
    kb = endpoint(proxy.url)
    q = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 500"
    assert len(kb.select(q)) == 500
    for mode, error in [("hang", KBTimeout), ("truncate", KBUnavailable), ("reset", KBUnavailable)]:
        proxy.mode = mode
        with pytest.raises(error):
            kb.select(q)
    dead = endpoint(f"http://127.0.0.1:{free_port()}/query")
    with pytest.raises(KBUnavailable):
        dead.select(q)


def test_a_query_that_kills_the_server_is_not_asked_again(demo_nt):
    from kgreason.errors import KBQueryError
    from tests.kb.test_query_process import doubling

    srv = OxigraphServer.from_file(demo_nt, memory_limit_mb=512)
    srv.start()
    try:
        kb = srv.kb(timeout_s=60, retries=0)
        assert kb.select(doubling(10))[0]["n"].value == str(10 * 2**10)
        with pytest.raises(KBQueryError, match=r"died running this query \(exit code -6\); it was restarted"):
            kb.select(doubling(34))  # past the server's memory cap: it aborts
        assert srv.restarts == 1 and srv.alive  # restarted once, not killed a second time by a retry
        assert kb.ask("ASK { ?s ?p ?o }")
    finally:
        srv.stop()


KILLING_QUERY = "SELECT ?x WHERE { BIND(" + "+".join(["1"] * 10_000) + " AS ?x) }"  # exited the server


def test_a_served_kb_survives_the_killing_query_and_restarts_a_dead_server(demo_nt):
    from kgreason.errors import KBQueryError

    srv = OxigraphServer.from_file(demo_nt)
    srv.start()
    try:
        kb = srv.kb(timeout_s=TIMEOUT_S, retries=0)
        ask = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 3"
        assert len(kb.select(ask)) == 3
        with pytest.raises(KBQueryError):  # refused before it reaches the server
            kb.select(KILLING_QUERY)
        assert srv.alive and srv.restarts == 0 and len(kb.select(ask)) == 3
        srv.proc.send_signal(signal.SIGKILL)  # however it died, its owner brings it back
        srv.proc.wait(timeout=10)
        assert len(kb.select(ask)) == 3
        assert srv.alive and srv.restarts == 1
        # a server that cannot come back stops the run with an error naming it
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
        srv.binary = "/bin/false"
        with pytest.raises(KBUnavailable, match=rf"Oxigraph server on 127.0.0.1:{srv.port} died \(exit code -9\)"):
            kb.select(ask)
    finally:
        srv.stop()
