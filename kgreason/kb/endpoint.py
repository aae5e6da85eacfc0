"""Any SPARQL 1.1 HTTP endpoint (Virtuoso, Oxigraph server, Fuseki, QLever)."""

from __future__ import annotations

import codecs
import contextlib
import http.client
import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from SPARQLWrapper import JSON, POST, SPARQLWrapper

from kgreason.errors import (
    KBError,
    KBMalformedAnswer,
    KBQueryError,
    KBTimeout,
    KBTruncated,
    KBUnavailable,
)
from kgreason.kb.base import KnowledgeBase, Row
from kgreason.kb.schema import FREEBASE, KBSchema
from kgreason.types import XSD, Term

_CONNECTION_ERRORS = (
    ConnectionError,
    http.client.RemoteDisconnected,
    http.client.IncompleteRead,
)


_BINDINGS = re.compile(r'"bindings"\s*:\s*\[')
_VARS = re.compile(r'"vars"\s*:\s*(\[[^\]]*\])')
_VARS_KEY = re.compile(r'"vars"\s*:')
_CHUNK = 1 << 16


def _server_cut(text: str) -> KBTimeout | None:
    """The timeout to raise when an answer's end says the server cancelled it, else ``None``."""
    tail = text[-300:]
    if "cancel" in tail.lower() or "timeout" in tail.lower():
        return KBTimeout(f"endpoint cut its answer (server-side timeout): {tail[-120:]}")
    return None


def read_bindings(response: Any, limit: int, deadline: float | None,
                  max_chars: int) -> tuple[list[str] | None, list[dict] | None, str]:
    """Read a SPARQL JSON answer only as far as its first ``limit`` bindings.

    A cartesian product can stream gigabytes; reading the whole body before the row cap
    took minutes and memory without bound. Bindings are decoded as they arrive and the
    read stops at ``limit``, at ``deadline`` (``time.monotonic()``), or past ``max_chars``
    of pending text.

    Returns:
        ``(vars, bindings, "")``, or ``(None, None, body)`` when the answer has no
        bindings array (an ASK answer, an error text) for the caller to parse whole.

    Raises:
        KBTimeout: the deadline passed, or the server cut the answer with a timeout note.
        KBUnavailable: the answer ended inside its results (the connection closed).
        KBQueryError: the answer is larger than ``max_chars``.
    """
    text = codecs.getincrementaldecoder("utf-8")("replace")
    decoder = json.JSONDecoder()
    buf, vars_, out, inside, ready = "", None, [], False, True
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise KBTimeout("the endpoint's answer did not arrive within the time budget")
        # read1: what has arrived, so the deadline is checked between trickled bytes too
        chunk = response.read1(_CHUNK) if hasattr(response, "read1") else response.read(_CHUNK)
        new = text.decode(chunk, final=not chunk)
        buf += new
        ready = ready or "}" in new
        if not inside and (m := _BINDINGS.search(buf)):
            v = _VARS.search(buf, 0, m.start())
            try:
                vars_ = json.loads(v.group(1)) if v else None
            except (json.JSONDecodeError, RecursionError):
                raise KBMalformedAnswer(f"the endpoint's head.vars is not a JSON list: {v.group(1)[:60]!r}") from None
            if v is None and _VARS_KEY.search(buf, 0, m.start()):
                raise KBMalformedAnswer("the endpoint's head.vars is not a list")
            buf, inside = buf[m.end():], True
        if inside:
            pos = 0
            while len(out) < limit:
                while pos < len(buf) and buf[pos] in " \t\r\n,":
                    pos += 1
                if pos >= len(buf) or buf[pos] == "]":
                    break
                if not ready:
                    break
                try:
                    obj, pos = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError:
                    ready = False  # the binding is still arriving: try again once a '}' has
                    break          # (a 50 MB literal was decoded again at every 64 KB chunk)
                except RecursionError:
                    raise KBMalformedAnswer("the endpoint's answer nests a binding deeper than JSON decoding "
                                            "allows") from None
                out.append(obj)
            buf = buf[pos:]
            if len(out) >= limit or buf.startswith("]"):
                return vars_, out, ""
            if not chunk:
                if (cut := _server_cut(buf)) is not None:
                    raise cut
                # the connection closed mid-answer: the endpoint failed, not the query
                raise KBUnavailable(f"endpoint's answer ended inside its results: {buf[-120:]!r}")
        elif not chunk:
            return None, None, buf
        if len(buf) > max_chars:
            raise KBQueryError(f"the endpoint's answer is larger than {max_chars:,} characters before "
                               f"{limit} rows")


def _binding_to_term(b: dict[str, Any], schema: KBSchema) -> Term:
    kind = b.get("type")
    if kind == "uri":
        return Term.uri(schema.to_id(b["value"]))
    if kind in ("literal", "typed-literal"):  # Virtuoso says typed-literal
        return Term.literal(b["value"], b.get("datatype"), b.get("xml:lang"))
    return Term("bnode", b["value"])


class _Deadline:
    """An answer's overall time budget: at ``timeout_s`` from now it shuts the connection's
    socket, which ends any read blocked on it (a header or body trickled a byte at a time
    never trips the per-read socket timeout)."""

    def __init__(self, timeout_s: float | None):
        self.at = time.monotonic() + timeout_s if timeout_s else None
        self.fired = False
        self._timers: list[threading.Timer] = []

    def arm(self, sock: socket.socket) -> None:
        if self.at is None:
            return
        timer = threading.Timer(max(0.0, self.at - time.monotonic()), self._fire, (sock,))
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def _fire(self, sock: socket.socket) -> None:
        self.fired = True
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def cancel(self) -> None:
        for t in self._timers:
            t.cancel()


#: the deadline that connections opened by this thread arm (set around ``_OPENER.open``)
_ARMING = threading.local()


def _arm(sock: socket.socket) -> None:
    deadline = getattr(_ARMING, "deadline", None)
    if deadline is not None:
        deadline.arm(sock)


class _Connection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        _arm(self.sock)


class _SecureConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        _arm(self.sock)


class _Handler(urllib.request.HTTPHandler):
    def http_open(self, req):  # noqa: ANN001 - urllib's signature
        return self.do_open(_Connection, req)


class _SecureHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):  # noqa: ANN001
        return self.do_open(_SecureConnection, req)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are not followed: urllib would resend a POSTed query as a bodiless GET, to
    whatever host the answer names; the 3xx reaches :func:`_http_error` instead."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201, PLR0913
        return None


#: one opener for every request: its handlers keep no per-request state, and the deadline
#: a connection arms comes from the thread that opens it (:func:`_armed`)
_OPENER = urllib.request.build_opener(_Handler, _SecureHandler, _NoRedirect)


@contextlib.contextmanager
def _armed(deadline: _Deadline) -> Iterator[None]:
    """Connections this thread opens inside the block are cut by ``deadline``."""
    previous = getattr(_ARMING, "deadline", None)
    _ARMING.deadline = deadline
    try:
        yield
    finally:
        _ARMING.deadline = previous


def _http_error(e: urllib.error.HTTPError, url: str) -> KBError:
    """The typed error of an HTTP error status (the body says why)."""
    try:
        body = e.read(4096).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the status alone still types it
        body = ""
    msg = " ".join(body.split())[:300]
    low = msg.lower()
    if e.code == 404:
        return KBUnavailable(f"no SPARQL endpoint at {url}: HTTP 404 {msg[:200]}")
    if e.code in (502, 503, 504, 429):
        return KBUnavailable(f"{url} is unavailable: HTTP {e.code} {msg[:200]}")
    if e.code in (401, 403, 407):
        return KBUnavailable(f"{url} refused access: HTTP {e.code} (check the endpoint's credentials) {msg[:200]}")
    if 300 <= e.code < 400:
        where = e.headers.get("Location", "?") if e.headers is not None else "?"
        return KBUnavailable(f"{url} redirects (HTTP {e.code}) to {where[:200]}; redirects are not followed: "
                             "point the KB's url at the endpoint itself")
    # SR171: Virtuoso ran out of MaxQueryExecutionTime; "estimated execution time ...
    # exceeds the limit": it refused up front for the same budget
    if "SR171" in msg or "timed out" in low or "timeout" in low or "estimated execution time" in low:
        return KBTimeout(f"endpoint timed out: {msg[:200]}")
    if e.code == 400:
        return KBQueryError(f"SPARQL rejected by the endpoint: {msg}")
    return KBQueryError(f"HTTP {e.code} from {url}: {msg}")


_TERM_TYPES = {"uri", "literal", "typed-literal", "bnode"}


def validate_results(data: Any, url: str = "the endpoint") -> dict[str, Any]:
    """``data`` if it has the shape of the SPARQL 1.1 Query Results JSON Format, else
    :class:`KBMalformedAnswer` naming what is wrong.

    >>> validate_results({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "uri", "value": "a"}}]}})
    {'head': {'vars': ['x']}, 'results': {'bindings': [{'x': {'type': 'uri', 'value': 'a'}}]}}
    >>> validate_results([1, 2, 3])
    Traceback (most recent call last):
    ...
    kgreason.errors.KBMalformedAnswer: the endpoint answered a list, not a SPARQL JSON result object
    """

    def bad(what: str) -> KBMalformedAnswer:
        return KBMalformedAnswer(f"{url} answered {what}")

    if not isinstance(data, dict):
        raise bad(f"a {type(data).__name__}, not a SPARQL JSON result object")
    if "boolean" in data:
        if not isinstance(data["boolean"], bool):
            raise bad(f"an ASK result whose boolean is {data['boolean']!r}")
        return data
    head, results = data.get("head"), data.get("results")
    if not isinstance(head, dict):
        raise bad("a result without a head object")
    vars_ = head.get("vars", [])
    if not isinstance(vars_, list) or not all(isinstance(v, str) for v in vars_):
        raise bad(f"head.vars {str(vars_)[:60]}, not a list of names")
    if not isinstance(results, dict) or not isinstance(results.get("bindings"), list):
        raise bad("a result without a results.bindings list")
    for b in results["bindings"]:
        if not isinstance(b, dict):
            raise bad(f"a binding {str(b)[:60]}, not an object")
        for name, term in b.items():
            if not isinstance(term, dict) or term.get("type") not in _TERM_TYPES \
                    or not isinstance(term.get("value"), str):
                raise bad(f"a term {str(term)[:60]} for ?{name[:40]} without a type and a string value")
            for key in ("datatype", "xml:lang"):
                if key in term and not isinstance(term[key], str):
                    raise bad(f"a term whose {key} is {str(term[key])[:40]}")
    return data


class SparqlEndpointKB(KnowledgeBase):
    """A remote SPARQL endpoint through SPARQLWrapper.

    Retries with exponential backoff on connection errors only (never on a query error,
    which would fail the same way again), and turns every engine quirk into a typed error:
    Virtuoso's silent row cap (``X-SPARQL-MaxRows``) and "anytime" partial answers
    (``X-SQL-State: S1TAT``) into :class:`KBTruncated`; Oxigraph's JSON body cut mid-stream
    by ``--timeout-s`` and Virtuoso's ``SR171`` into :class:`KBTimeout`.

    Args:
        url: the endpoint (``http://127.0.0.1:7878/query``, ``.../sparql``).
        timeout_s: socket timeout of each request (also used by the one-hop helpers).
        retries: attempts after the first on connection errors.
        backoff_s: first retry delay, doubled each time.
        default_graph: the graph queries read (``default-graph-uri``); Virtuoso otherwise
            reads the union of all its graphs, system graphs included.
        max_body_chars: pending answer text allowed before ``max_rows`` rows are decoded
            (bindings are decoded as they arrive and the read stops at the row cap).
    """

    def __init__(
        self,
        url: str,
        timeout_s: float | None = 30.0,
        schema: KBSchema = FREEBASE,
        max_rows: int = 10_000,
        retries: int = 2,
        backoff_s: float = 0.2,
        default_graph: str | None = None,
        max_body_chars: int = 64 << 20,
    ):
        super().__init__(schema=schema, max_rows=max_rows, timeout_s=timeout_s)
        self.url = url
        self.default_graph = default_graph
        self.max_body_chars = max_body_chars
        self.retries = retries
        self.backoff_s = backoff_s
        # One wrapper for the KB's lifetime: the request template is built once.
        self._client = SPARQLWrapper(url)
        self._client.setReturnFormat(JSON)
        self._client.setMethod(POST)
        if default_graph:
            # SPARQL protocol's default-graph-uri: Virtuoso otherwise answers from every
            # graph, its own system graph included
            self._client.addDefaultGraph(default_graph)

    def _request(self, sparql: str, timeout_s: float | None, deadline: _Deadline) -> Any:
        self._client.setQuery(sparql)
        # SPARQLWrapper builds the request (method, headers, encoding); it is sent through an
        # opener whose connections the deadline can cut: a socket timeout bounds each read,
        # not an answer trickled a byte at a time
        request = self._client._createRequest()
        delay = self.backoff_s
        for attempt in range(self.retries + 1):
            try:
                with _armed(deadline):
                    return _OPENER.open(request, timeout=timeout_s)
            except urllib.error.HTTPError as e:
                raise _http_error(e, self.url) from None
            except (urllib.error.URLError, *_CONNECTION_ERRORS, TimeoutError, OSError) as e:
                reason = getattr(e, "reason", e)
                if deadline.fired or isinstance(reason, TimeoutError | socket.timeout):
                    raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
                if attempt == self.retries:
                    raise KBUnavailable(f"cannot reach {self.url}: {reason}") from None
                time.sleep(delay)
                delay *= 2
            except http.client.HTTPException as e:  # a bad status line, an oversized header
                if deadline.fired:
                    raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
                raise KBMalformedAnswer(f"{self.url} sent a malformed HTTP answer: {type(e).__name__}: "
                                        f"{str(e)[:120]}") from None
        raise AssertionError("unreachable")

    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        timeout_s = timeout_s if timeout_s is not None else self.timeout_s
        deadline = _Deadline(timeout_s)
        try:
            response = self._request(sparql, timeout_s, deadline)
            headers = response.info()
            try:
                vars_, bindings, text = read_bindings(response, limit, deadline.at, self.max_body_chars)
            except TimeoutError:
                raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
            except (*_CONNECTION_ERRORS, OSError, http.client.HTTPException) as e:
                if deadline.fired:
                    raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
                raise KBUnavailable(f"{self.url} went away mid-answer: {e}") from None
            except KBUnavailable:
                if deadline.fired:  # the deadline cut the connection: the answer ended early
                    raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
                raise
            finally:
                response.close()  # stops the transfer of what is not needed
        finally:
            deadline.cancel()
        if bindings is None:  # no bindings array: an ASK answer or an error text
            try:
                data = json.loads(text)
            except RecursionError:
                raise KBMalformedAnswer(f"{self.url} answered JSON nested deeper than decoding allows") from None
            except json.JSONDecodeError:
                if (cut := _server_cut(text)) is not None:
                    raise cut from None
                # a cut or garbled body: the endpoint (or a proxy) failed, not the query
                raise KBUnavailable(f"endpoint returned invalid JSON: {text[-120:]!r}") from None
        else:
            data = {"head": {"vars": vars_ if vars_ is not None else []}, "results": {"bindings": bindings}}
        data = validate_results(data, self.url)
        if "boolean" in data:
            return [{"ask": Term.literal("true" if data["boolean"] else "false", XSD + "boolean")}]
        bindings = data["results"]["bindings"]
        if data["head"].get("vars") == ["__ASK_RETVAL"]:  # Virtuoso's ASK answer
            yes = bool(bindings) and bindings[0].get("__ASK_RETVAL", {}).get("value") in ("1", "true")
            return [{"ask": Term.literal("true" if yes else "false", XSD + "boolean")}]
        rows = [
            {k: _binding_to_term(v, self.schema) for k, v in b.items()} for b in bindings[:limit]
        ]
        if headers is not None:
            state = headers.get("X-SQL-State")
            if state and state.strip() == "S1TAT":
                raise KBTruncated(
                    "Virtuoso returned a partial (anytime) result after its time limit",
                    rows=rows, cap=len(rows),
                )
            max_rows = headers.get("X-SPARQL-MaxRows")
            if max_rows is not None:
                try:
                    cap = int(max_rows)
                except ValueError:
                    raise KBMalformedAnswer(f"{self.url} sent X-SPARQL-MaxRows: {max_rows[:40]!r}, "
                                            "not a number") from None
                if len(bindings) >= cap and len(bindings) < limit:
                    raise KBTruncated(
                        f"the endpoint silently cut the result at {cap} rows (ResultSetMaxRows)",
                        rows=rows, cap=cap,
                    )
        return rows

    def __repr__(self) -> str:
        return f"SparqlEndpointKB(url={self.url!r}, timeout_s={self.timeout_s})"


def _msg(e: Exception) -> str:
    s = str(e)
    return s.replace("\\n", " ")
