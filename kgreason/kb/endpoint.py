"""Any SPARQL 1.1 HTTP endpoint (Virtuoso, Oxigraph server, Fuseki, QLever)."""

from __future__ import annotations

import codecs
import http.client
import json
import re
import socket
import time
import urllib.error
from typing import Any

from SPARQLWrapper import JSON, POST, SPARQLWrapper
from SPARQLWrapper.SPARQLExceptions import (
    EndPointInternalError,
    EndPointNotFound,
    QueryBadFormed,
    SPARQLWrapperException,
)

from kgreason.errors import KBQueryError, KBTimeout, KBTruncated, KBUnavailable
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
    buf, vars_, out, inside = "", None, [], False
    while True:
        if deadline is not None and time.monotonic() > deadline:
            raise KBTimeout("the endpoint's answer did not arrive within the time budget")
        chunk = response.read(_CHUNK)
        buf += text.decode(chunk, final=not chunk)
        if not inside and (m := _BINDINGS.search(buf)):
            v = _VARS.search(buf, 0, m.start())
            vars_ = json.loads(v.group(1)) if v else None
            buf, inside = buf[m.end():], True
        if inside:
            pos = 0
            while len(out) < limit:
                while pos < len(buf) and buf[pos] in " \t\r\n,":
                    pos += 1
                if pos >= len(buf) or buf[pos] == "]":
                    break
                try:
                    obj, pos = decoder.raw_decode(buf, pos)
                except json.JSONDecodeError:
                    break  # the binding is still arriving
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

    def _request(self, sparql: str, timeout_s: float | None) -> Any:
        self._client.setQuery(sparql)
        self._client.setTimeout(int(timeout_s) if timeout_s and timeout_s >= 1 else (1 if timeout_s else 0))
        delay = self.backoff_s
        for attempt in range(self.retries + 1):
            try:
                return self._client.query().response
            except QueryBadFormed as e:
                raise KBQueryError(f"SPARQL rejected by the endpoint: {_msg(e)}") from None
            except EndPointInternalError as e:
                msg = _msg(e)
                low = msg.lower()
                # SR171: Virtuoso ran out of MaxQueryExecutionTime; "estimated execution
                # time ... exceeds the limit": it refused up front for the same budget.
                if "SR171" in msg or "timed out" in low or "timeout" in low or "estimated execution time" in low:
                    raise KBTimeout(f"endpoint timed out: {msg[:200]}") from None
                raise KBQueryError(f"endpoint error: {msg[:300]}") from None
            except EndPointNotFound as e:
                raise KBUnavailable(f"no SPARQL endpoint at {self.url}: {_msg(e)[:200]}") from None
            except TimeoutError:
                raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
            except urllib.error.HTTPError as e:
                raise KBQueryError(f"HTTP {e.code} from {self.url}") from None
            except (urllib.error.URLError, *_CONNECTION_ERRORS) as e:
                reason = getattr(e, "reason", e)
                if isinstance(reason, TimeoutError | socket.timeout):
                    raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
                if attempt == self.retries:
                    raise KBUnavailable(f"cannot reach {self.url}: {reason}") from None
                time.sleep(delay)
                delay *= 2
            except SPARQLWrapperException as e:
                raise KBQueryError(str(e)) from None
        raise AssertionError("unreachable")

    def _select(self, sparql: str, timeout_s: float | None, limit: int) -> list[Row]:
        timeout_s = timeout_s if timeout_s is not None else self.timeout_s
        deadline = time.monotonic() + timeout_s if timeout_s else None
        response = self._request(sparql, timeout_s)
        headers = response.info()
        try:
            vars_, bindings, text = read_bindings(response, limit, deadline, self.max_body_chars)
        except TimeoutError:
            raise KBTimeout(f"no answer from {self.url} within {timeout_s}s") from None
        except _CONNECTION_ERRORS as e:
            raise KBUnavailable(f"{self.url} went away mid-answer: {e}") from None
        finally:
            response.close()  # stops the transfer of what is not needed
        if bindings is None:  # no bindings array: an ASK answer or an error text
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                if (cut := _server_cut(text)) is not None:
                    raise cut from None
                # a cut or garbled body: the endpoint (or a proxy) failed, not the query
                raise KBUnavailable(f"endpoint returned invalid JSON: {text[-120:]!r}") from None
        else:
            data = {"head": {"vars": vars_}, "results": {"bindings": bindings}}
        if "boolean" in data:
            return [{"ask": Term.literal("true" if data["boolean"] else "false", XSD + "boolean")}]
        bindings = data.get("results", {}).get("bindings", [])
        if data.get("head", {}).get("vars") == ["__ASK_RETVAL"]:  # Virtuoso's ASK answer
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
            if max_rows and len(bindings) >= int(max_rows) and len(bindings) < limit:
                raise KBTruncated(
                    f"the endpoint silently cut the result at {max_rows} rows (ResultSetMaxRows)",
                    rows=rows, cap=int(max_rows),
                )
        return rows

    def __repr__(self) -> str:
        return f"SparqlEndpointKB(url={self.url!r}, timeout_s={self.timeout_s})"


def _msg(e: Exception) -> str:
    s = str(e)
    return s.replace("\\n", " ")
