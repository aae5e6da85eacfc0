"""Read-only guard: lexes a SPARQL request and rejects anything but a plain SELECT/ASK.

The lexer knows SPARQL's strings (all four quote forms), IRIs, comments, prefixed names
and variables, so keywords are recognised as tokens and never inside a literal or an IRI
(``"INSERT"`` in a string is fine; ``INSERT DATA {...}`` is not). The engine's own parser
then checks the full grammar; the guard decides the request's *form* and bounds what
reaches the engine's parser:

- function calls by an allow-list: SPARQL 1.1's built-ins and XSD casts only, so no
  extension function with side effects runs (Virtuoso's ``bif:http_get`` fetches URLs
  from a plain SELECT);
- length and bracket nesting, before any engine parses (deep nesting overflows the
  stack of embedded Oxigraph: the process dies);
- text that is not valid Unicode (lone surrogates) is a query error, not an encoder crash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kgreason.errors import KBForbiddenQuery, KBQueryError

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)  # SPARQL ends a comment at \n or \r
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<iri><[^<>"{}|^`\\\x00-\x20]*>)  # SPARQL's IRIREF [139]: a no-break space is part of it
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
# SPARQL 1.1 §17.4 built-ins and aggregates, and the keywords a '(' may follow
_BUILTINS = {
    "STR", "LANG", "LANGMATCHES", "DATATYPE", "BOUND", "IRI", "URI", "BNODE", "RAND", "ABS", "CEIL",
    "FLOOR", "ROUND", "CONCAT", "STRLEN", "UCASE", "LCASE", "ENCODE_FOR_URI", "CONTAINS", "STRSTARTS",
    "STRENDS", "STRBEFORE", "STRAFTER", "YEAR", "MONTH", "DAY", "HOURS", "MINUTES", "SECONDS", "TIMEZONE",
    "TZ", "NOW", "UUID", "STRUUID", "MD5", "SHA1", "SHA256", "SHA384", "SHA512", "COALESCE", "IF",
    "STRLANG", "STRDT", "SAMETERM", "ISIRI", "ISURI", "ISBLANK", "ISLITERAL", "ISNUMERIC", "REGEX",
    "SUBSTR", "REPLACE", "COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT",
}
_BEFORE_PAREN = {"SELECT", "DISTINCT", "REDUCED", "FILTER", "BIND", "VALUES", "BY", "ASC", "DESC", "HAVING",
                 "IN", "WHERE", "AS"}
_XSD = "http://www.w3.org/2001/XMLSchema#"
MAX_QUERY_CHARS = 32_768
MAX_NESTING = 64  # brackets of any kind; real queries stay under 10


@dataclass(frozen=True)
class QueryInfo:
    form: str  # "SELECT" or "ASK"
    has_limit: bool


def _keywords(query: str) -> list[str]:
    """The query's keywords, upper-cased; raises on a call outside the allow-list or too deep nesting."""
    words: list[str] = []
    prefixes: dict[str, str] = {}
    callee: str | None = None  # the token a '(' would make a function call
    depth = 0
    pos = 0
    toks = list(_TOKEN.finditer(query))
    for i, m in enumerate(toks):
        if m.start() != pos:  # unreachable: 'other' matches any char; kept as a guard
            raise KBQueryError("could not tokenise the query")
        pos = m.end()
        kind, text = m.lastgroup, m.group()
        if kind in ("ws", "comment"):
            continue
        if kind == "other" and text == "(" and callee is not None:
            _check_callee(callee, prefixes)
        if kind == "other" and text in "({[":
            depth += 1
            if depth > MAX_NESTING:
                raise KBQueryError(f"the query nests brackets deeper than {MAX_NESTING}")
        elif kind == "other" and text in ")}]":
            depth -= 1
        callee = text if kind in ("word", "iri") else None
        if kind == "word" and ":" not in text:
            words.append(text.upper())
        elif kind == "word" and words and words[-1] == "PREFIX" and text.endswith(":"):
            nxt = next((t for t in toks[i + 1:] if t.lastgroup != "ws"), None)
            if nxt is not None and nxt.lastgroup == "iri":
                prefixes[text[:-1]] = nxt.group()[1:-1]
        elif kind == "string" and not text.endswith(text[0]):
            raise KBQueryError("unterminated string literal in query")
    return words


def _check_callee(token: str, prefixes: dict[str, str]) -> None:
    """Refuse a function call unless it is a SPARQL built-in or an XSD cast."""
    if token.startswith("<"):
        iri = token[1:-1]
    elif ":" in token:
        prefix, _, local = token.partition(":")
        # Virtuoso predeclares xsd: (CWQ's queries cast with it undeclared)
        iri = prefixes[prefix] + local if prefix in prefixes else (_XSD + local if prefix == "xsd" else "")
    else:
        if token.upper() in _BUILTINS or token.upper() in _BEFORE_PAREN:
            return
        raise KBForbiddenQuery(f"function {token!r} is not allowed: only SPARQL's built-in functions "
                               f"and XSD casts are")
    if not iri.startswith(_XSD):
        raise KBForbiddenQuery(f"function {token!r} is not allowed: only SPARQL's built-in functions "
                               f"and XSD casts are")


def check_read_only(query: str) -> QueryInfo:
    """Return the query form, or raise if the request is not a plain read query.

    Raises:
        KBForbiddenQuery: updates, LOAD, SERVICE, CONSTRUCT/DESCRIBE, a function outside
            the allow-list.
        KBQueryError: an empty request, one with no query form, one too long or nested
            too deep, or text that is not valid Unicode.

    >>> check_read_only("PREFIX ns: <http://x/> SELECT ?x WHERE { ?x ns:p 'DELETE' }").form
    'SELECT'
    >>> check_read_only("DELETE WHERE { ?s ?p ?o }")
    Traceback (most recent call last):
    ...
    kgreason.errors.KBForbiddenQuery: SPARQL update/DELETE is not allowed: the KB is read-only
    """
    if not query or not query.strip():
        raise KBQueryError("empty query")
    if len(query) > MAX_QUERY_CHARS:
        raise KBQueryError(f"the query is {len(query):,} characters long; the limit is {MAX_QUERY_CHARS:,}")
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as e:
        raise KBQueryError(f"the query is not valid Unicode at character {e.start}") from None
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
