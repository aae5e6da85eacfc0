"""Every malformed or slow answer of a SPARQL endpoint is a typed ``KBError`` within the
configured timeout: a table of scripted HTTP answers from a raw socket server."""

from __future__ import annotations

import json
import socket
import time

import pytest

from kgreason.errors import (
    KBError,
    KBMalformedAnswer,
    KBQueryError,
    KBTimeout,
    KBTruncated,
    KBUnavailable,
)
from kgreason.kb import SparqlEndpointKB
from tests.kb.sockets import AcceptLoop

TIMEOUT_S = 2.0
Q = "SELECT ?x WHERE { ?x ?p ?o } LIMIT 5"
ROW = {"x": {"type": "uri", "value": "http://rdf.freebase.com/ns/m.1"}}


def ok_json(body: object, headers: str = "") -> bytes:
    data = json.dumps(body).encode()
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n{headers}"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data


def status(code: int, text: str) -> bytes:
    data = text.encode()
    return f"HTTP/1.1 {code} X\r\nContent-Type: text/plain\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data


RESULT = {"head": {"vars": ["x"]}, "results": {"bindings": [ROW]}}
DEEP = "[" * 100_000 + "]" * 100_000


def raw_json(text: str) -> bytes:
    data = text.encode()
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n").encode() + data

#: name → (the bytes the server sends, seconds between bytes or None, the error)
CASES = {
    "bad status line": (b"HTTP/1.1 abc\r\n\r\n", None, KBMalformedAnswer),
    "not HTTP at all": (b"hello there\r\n\r\n", None, KBMalformedAnswer),
    "70 KB header": (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", None, KBMalformedAnswer),
    "10,000 headers": (b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 10_000 + b"\r\n", None, KBMalformedAnswer),
    "body is a list": (ok_json([1, 2, 3]), None, KBMalformedAnswer),
    "body is null": (ok_json(None), None, KBMalformedAnswer),
    "body is a number": (ok_json(42), None, KBMalformedAnswer),
    "body is a string": (ok_json("results"), None, KBMalformedAnswer),
    "no head": (ok_json({"results": {}}), None, KBMalformedAnswer),
    "bindings not a list": (ok_json({"head": {"vars": []}, "results": {"bindings": {"x": 1}}}), None,
                            KBMalformedAnswer),
    "bindings not objects": (ok_json({"head": {"vars": ["x"]}, "results": {"bindings": [1, 2]}}), None,
                             KBMalformedAnswer),
    "binding without value": (ok_json({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri"}}]}}),
                              None, KBMalformedAnswer),
    "value not a string": (ok_json({"head": {"vars": ["x"]},
                                    "results": {"bindings": [{"x": {"type": "uri", "value": 7}}]}}),
                           None, KBMalformedAnswer),
    "unknown term type": (ok_json({"head": {"vars": ["x"]},
                                   "results": {"bindings": [{"x": {"type": "thing", "value": "a"}}]}}),
                          None, KBMalformedAnswer),
    "datatype not a string": (ok_json({"head": {"vars": ["x"]}, "results": {"bindings": [
        {"x": {"type": "literal", "value": "1", "datatype": ["x"]}}]}}), None, KBMalformedAnswer),
    "vars a string": (ok_json({"head": {"vars": "x"}, "results": {"bindings": []}}), None, KBMalformedAnswer),
    "vars of numbers": (ok_json({"head": {"vars": [1]}, "results": {"bindings": []}}), None, KBMalformedAnswer),
    "boolean not a bool": (ok_json({"boolean": "yes"}), None, KBMalformedAnswer),
    "MaxRows not a number": (ok_json(RESULT, "X-SPARQL-MaxRows: lots\r\n"), None, KBMalformedAnswer),
    "HTML body": (b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n<html></html>", None, KBUnavailable),
    "body cut short": (ok_json(RESULT)[:-20], None, KBUnavailable),
    "bad chunk size": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", None,
                       KBUnavailable),
    "closed at once": (b"", None, KBUnavailable),
    "HTTP 400": (status(400, "Parse error at line 1"), None, KBQueryError),
    "HTTP 404": (status(404, "no such endpoint"), None, KBUnavailable),
    "HTTP 500": (status(500, "internal error"), None, KBQueryError),
    "HTTP 500 timeout": (status(500, "Query timeout"), None, KBTimeout),
    "HTTP 503": (status(503, "overloaded"), None, KBUnavailable),
    "header trickled": (ok_json(RESULT), 0.5, KBTimeout),
    "body trickled": (ok_json({"head": {"vars": ["x"]}, "results": {"bindings": [ROW] * 50}}), 0.05, KBTimeout),
    "silent row cap": (ok_json(RESULT, "X-SPARQL-MaxRows: 1\r\n"), None, KBTruncated),
    "binding nested 100,000 deep": (raw_json('{"head": {"vars": ["x"]}, "results": {"bindings": [{"x": '
                                             '{"type": "uri", "value": "a", "z": ' + DEEP + '}}]}}'), None,
                                    KBMalformedAnswer),
    "ASK nested 100,000 deep": (raw_json('{"boolean": true, "z": ' + DEEP + "}"), None, KBMalformedAnswer),
    "redirect elsewhere": (b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n",
                           None, KBUnavailable),
    "HTTP 401": (status(401, "who are you"), None, KBUnavailable),
    "HTTP 429": (status(429, "slow down"), None, KBUnavailable),
}


class Scripted(AcceptLoop):
    """Answers every connection with ``answer``, a byte every ``gap`` seconds if set."""

    def __init__(self, answer: bytes, gap: float | None):
        self.answer, self.gap = answer, gap
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(2)
            head = b""
            while b"\r\n\r\n" not in head:
                if not (chunk := conn.recv(65536)):
                    break
                head += chunk
            # read the query too: closing with request bytes unread sends a reset, which
            # can reach the client before the end of a large answer
            top, _, body = head.partition(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in top.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length and (chunk := conn.recv(65536)):
                body += chunk
            if self.gap is None:
                conn.sendall(self.answer)
            else:
                for i in range(len(self.answer)):
                    if self._stop.is_set():
                        break
                    conn.sendall(self.answer[i:i + 1])
                    time.sleep(self.gap)
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            conn.close()


@pytest.mark.parametrize("case", list(CASES))
def test_each_bad_answer_is_a_typed_error_in_time(case):
    answer, gap, error = CASES[case]
    srv = Scripted(answer, gap)
    kb = SparqlEndpointKB(f"http://127.0.0.1:{srv.port}/query", timeout_s=TIMEOUT_S, retries=1, backoff_s=0.05)
    t0 = time.monotonic()
    try:
        with pytest.raises(KBError) as e:
            kb.select(Q)
    finally:
        srv.close()
    assert type(e.value) is error, f"{case}: {type(e.value).__name__}: {e.value}"
    # one attempt per retry at most, each within the timeout
    assert time.monotonic() - t0 < TIMEOUT_S * 2 + 1.5, case


def test_a_long_literal_is_read_in_linear_time():
    # a binding split over many reads is decoded once it can end, not again at every read
    big = {"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal", "value": "a" * 20_000_000}}]}}
    srv = Scripted(ok_json(big), None)
    try:
        rows = SparqlEndpointKB(f"http://127.0.0.1:{srv.port}/query", timeout_s=30).select(Q)
    finally:
        srv.close()
    assert len(rows[0]["x"].value) == 20_000_000


def test_a_good_answer_still_reads():
    srv = Scripted(ok_json(RESULT), None)
    try:
        rows = SparqlEndpointKB(f"http://127.0.0.1:{srv.port}/query", timeout_s=TIMEOUT_S).select(Q)
    finally:
        srv.close()
    assert [r["x"].value for r in rows] == ["m.1"]
