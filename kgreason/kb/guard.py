"""Read-only guard: lexes a SPARQL request and rejects anything but SELECT/ASK.

The lexer knows SPARQL's strings (all four quote forms), IRIs, comments, prefixed names
and variables, so keywords are recognised as tokens and never inside a literal or an IRI
(``"INSERT"`` in a string is fine; ``INSERT DATA {...}`` is not). The engine's own parser
then checks the full grammar; the guard only decides the request's *form*.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgreason.errors import KBForbiddenQuery, KBQueryError

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\s]*>)
  | (?P<var>[?$][A-Za-z0-9_\u00b7\u00c0-\uffff]+)
  | (?P<word>[A-Za-z_\u00c0-\uffff][A-Za-z0-9_\-.\u00b7\u00c0-\uffff]*:?[A-Za-z0-9_\-.:%\u00c0-\uffff]*)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)

_READ_FORMS = {"SELECT", "ASK"}
_OTHER_QUERY_FORMS = {"CONSTRUCT", "DESCRIBE"}
_UPDATE_WORDS = {
    "INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH",
}
_REMOTE_WORDS = {"SERVICE"}


@dataclass(frozen=True)
class QueryInfo:
    form: str  # "SELECT" or "ASK"
    has_limit: bool


def _keywords(query: str) -> list[str]:
    words: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(query):
        if m.start() != pos:  # unreachable: 'other' matches any char; kept as a guard
            raise KBQueryError("could not tokenise the query")
        pos = m.end()
        kind = m.lastgroup
        if kind == "word" and ":" not in m.group():
            words.append(m.group().upper())
        elif kind == "string" and not m.group().endswith(m.group()[0]):
            raise KBQueryError("unterminated string literal in query")
    return words


def check_read_only(query: str) -> QueryInfo:
    """Return the query form, or raise if the request is not a plain read query.

    Raises:
        KBForbiddenQuery: updates, LOAD, SERVICE, CONSTRUCT/DESCRIBE.
        KBQueryError: an empty request or one with no query form.

    >>> check_read_only("PREFIX ns: <http://x/> SELECT ?x WHERE { ?x ns:p 'DELETE' }").form
    'SELECT'
    >>> check_read_only("DELETE WHERE { ?s ?p ?o }")
    Traceback (most recent call last):
    ...
    kgreason.errors.KBForbiddenQuery: SPARQL update/DELETE is not allowed: the KB is read-only
    """
    if not query or not query.strip():
        raise KBQueryError("empty query")
    words = _keywords(query)
    for w in words:
        if w in _UPDATE_WORDS:
            raise KBForbiddenQuery(f"SPARQL update/{w} is not allowed: the KB is read-only")
        if w in _REMOTE_WORDS:
            raise KBForbiddenQuery("SERVICE (federated query) is not allowed")
    form = next((w for w in words if w not in {"BASE", "PREFIX"}), None)
    if form in _OTHER_QUERY_FORMS:
        raise KBForbiddenQuery(f"{form} queries are not supported; use SELECT or ASK")
    if form not in _READ_FORMS:
        raise KBQueryError(f"not a SPARQL SELECT/ASK query (starts with {form!r})")
    return QueryInfo(form=form, has_limit="LIMIT" in words)
