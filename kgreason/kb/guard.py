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

# SPARQL 1.1's terminals (§19.8): a keyword is a token only where the grammar's lexer would
# make one, so no language tag, number or prefixed name can hide one ("'a'@en.SERVICE" is
# LANGTAG "@en", ".", keyword SERVICE, as the engine reads it)
_PN_CHARS_BASE = ("A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u02ff\u0370-\u037d\u037f-\u1fff\u200c-\u200d"
                  "\u2070-\u218f\u2c00-\u2fef\u3001-\ud7ff\uf900-\ufdcf\ufdf0-\ufffd\U00010000-\U000effff")
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00b7\u0300-\u036f\u203f-\u2040"
_PLX = r"%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%]"
_PN_PREFIX = f"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?"
_PN_LOCAL = f"(?:[{_PN_CHARS_U}:0-9]|{_PLX})(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?"
_VARNAME = f"[{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00b7\u0300-\u036f\u203f-\u2040]*"
_EXPONENT = r"[eE][+-]?[0-9]+"

_TOKEN = re.compile(
    rf"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n\r]*)  # SPARQL ends a comment at \n or \r
  | (?P<string>'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"
               |'(?:[^'\\\n\r]|\\.)*'|"(?:[^"\\\n\r]|\\.)*")
  | (?P<iri><[^<>"{{}}|^`\\\x00-\x20]*>)  # IRIREF [139]: a no-break space is part of it
  | (?P<langtag>@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*)
  | (?P<var>[?$]{_VARNAME})
  | (?P<bnode>_:[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?)
  | (?P<pname>(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?)
  | (?P<number>[0-9]+\.[0-9]*{_EXPONENT}|\.?[0-9]+{_EXPONENT}|[0-9]*\.[0-9]+|[0-9]+)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)  # keywords, built-in names, 'a'
  | (?P<op>\|\||&&|!=|<=|>=|\^\^|[-+*/|^!=<>])
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
#: a chain of operators at one bracket level: an expression's terms or a property path's
#: steps (each a level of the engine's recursive evaluation)
MAX_CHAIN = 256
#: tokens of one query (a 10,000-term sum is 20,000 tokens; real queries stay under 500)
MAX_TOKENS = 4_096

_READ_FORMS = {"SELECT", "ASK"}
_OTHER_QUERY_FORMS = {"CONSTRUCT", "DESCRIBE"}
_UPDATE_WORDS = {
    "INSERT", "DELETE", "LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "WITH",
}
_REMOTE_WORDS = {"SERVICE"}
#: dataset clauses: the KB, not the query, decides which graphs are read (an engine may
#: fetch a FROM graph it does not hold)
_DATASET_WORDS = {"FROM"}
#: SPARQL 1.1 §19.2: codepoint escapes are replaced before the query is parsed
_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
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
    """The query's keywords, upper-cased; raises on a call outside the allow-list, too deep
    nesting, too many tokens or too long an operator chain."""
    words: list[str] = []
    prefixes: dict[str, str] = {}
    callee: str | None = None  # the token a '(' would make a function call
    depth = 0
    chains = [0]  # operators since the last separator, per open bracket
    pos = 0
    toks = [m for m in _TOKEN.finditer(query) if m.lastgroup not in ("ws", "comment")]
    if len(toks) > MAX_TOKENS:
        raise KBQueryError(f"the query has {len(toks):,} tokens; the limit is {MAX_TOKENS:,}")
    for i, m in enumerate(toks):
        if m.start() < pos:  # unreachable: 'other' matches any char; kept as a guard
            raise KBQueryError("could not tokenise the query")
        pos = m.end()
        kind, text = m.lastgroup, m.group()
        if kind == "other" and text == "(" and callee is not None:
            _check_callee(callee, prefixes)
        if kind == "other" and text in "({[":
            depth += 1
            chains.append(0)
            if depth > MAX_NESTING:
                raise KBQueryError(f"the query nests brackets deeper than {MAX_NESTING}")
        elif kind == "other" and text in ")}]":
            depth -= 1
            if len(chains) > 1:
                chains.pop()
        elif kind == "op":
            chains[-1] += 1
            if chains[-1] > MAX_CHAIN:
                raise KBQueryError(f"an expression or property path of the query chains more than {MAX_CHAIN} "
                                   "operators")
        elif kind == "other" and text in ".;,":
            chains[-1] = 0
        callee = text if kind in ("word", "pname", "iri") else None
        if kind == "word":
            words.append(text.upper())
        elif kind == "pname" and words and words[-1] == "PREFIX" and text.endswith(":"):
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is not None and nxt.lastgroup == "iri":
                prefixes[text[:-1]] = nxt.group()[1:-1]
        elif kind == "other" and text in "'\"":  # a quote no string token closed
            raise KBQueryError("unterminated string literal in query")
    return words


def tokens(query: str) -> list[tuple[str, str]]:
    """The query's tokens as ``(kind, text)``, comments and white space left out; kinds:
    ``string, iri, langtag, var, bnode, pname, number, word, op, other``.

    >>> tokens("SELECT ?x WHERE { ?x ns:p 'a'@en . }")[3:]
    [('other', '{'), ('var', '?x'), ('pname', 'ns:p'), ('string', "'a'"), ('langtag', '@en'), ('other', '.'), ('other', '}')]
    """
    return [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(query)
            if m.lastgroup not in ("ws", "comment")]


#: tokens a triple pattern's subject or object can be
_TERMS = {"iri", "pname", "var", "bnode", "string", "number"}


def schema_names(query: str) -> list[str]:
    """The relations and classes a query names: its triple patterns' predicates (paths
    included) and the objects of ``a`` / ``rdf:type``, each as its local name (a prefixed
    name's part after ``:``, an IRI's last segment), in order of appearance.

    >>> schema_names("SELECT ?x WHERE { ?x ns:film.film.directed_by ?d ; a ns:film.film . "
    ...              "?d <http://x/r/spouse>/<http://x/r/name> 'N'@en FILTER(?d != ns:m.1) }")
    ['film.film.directed_by', 'film.film', 'spouse', 'name']
    >>> schema_names("SELECT ?m WHERE { ?m directed_by:x ?d }")
    ['x']
    """
    out: list[str] = []
    toks = tokens(query)
    expect = "subject"  # where in a triple pattern the next term goes
    depth_paren = 0
    typed = False  # the object of `a` / rdf:type is a class name
    for i, (kind, text) in enumerate(toks):
        if kind == "other" and text == "(":
            depth_paren += 1
        elif kind == "other" and text == ")":
            depth_paren = max(0, depth_paren - 1)
        if depth_paren:  # inside an expression or a call: no triple patterns
            continue
        if kind == "other" and text in "{}.":
            expect = "subject"
        elif kind == "other" and text == ";":
            expect = "predicate"
        elif kind == "other" and text == ",":
            expect = "object"
        elif kind == "word" and text != "a":
            expect = "subject"  # a keyword (FILTER, OPTIONAL, SELECT ...) starts anew
        elif expect == "subject" and kind in _TERMS:
            expect = "predicate"
        elif expect == "predicate" and (kind in ("iri", "pname", "var") or (kind == "word" and text == "a")):
            typed = (kind == "word") or text.endswith(("rdf:type", "#type>"))
            if kind != "var" and not typed:
                out.append(_local(text))
            nxt = toks[i + 1] if i + 1 < len(toks) else ("", "")
            if nxt[0] == "op" and nxt[1] in "/|^":  # a path goes on
                continue
            expect = "object"
        elif expect == "predicate" and kind == "op":
            continue  # a path operator: its steps are predicates too
        elif expect == "object" and kind in _TERMS:
            if typed and kind in ("iri", "pname"):
                out.append(_local(text))
            typed = False
            expect = "after"
    return list(dict.fromkeys(out))


def _local(term: str) -> str:
    if term.startswith("<"):
        iri = term[1:-1]
        return iri.rsplit("#", 1)[-1].rsplit("/", 1)[-1]
    return term.partition(":")[2]


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
    if _CODEPOINT.search(query):
        # an engine that follows §19.2 reads the decoded text, one that does not the raw
        # text: both must pass (\u0053ERVICE is SERVICE to the first)
        decoded = _CODEPOINT.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), query)
        try:
            check_read_only(decoded)
        except ValueError:  # chr() of a code point past U+10FFFF
            raise KBQueryError("the query holds an invalid codepoint escape") from None
    words = _keywords(query)
    for w in words:
        if w in _UPDATE_WORDS:
            raise KBForbiddenQuery(f"SPARQL update/{w} is not allowed: the KB is read-only")
        if w in _REMOTE_WORDS:
            raise KBForbiddenQuery("SERVICE (federated query) is not allowed")
        if w in _DATASET_WORDS:
            raise KBForbiddenQuery("FROM / FROM NAMED is not allowed: the KB decides which graphs a query reads")
    form = next((w for w in words if w not in {"BASE", "PREFIX"}), None)
    if form in _OTHER_QUERY_FORMS:
        raise KBForbiddenQuery(f"{form} queries are not supported; use SELECT or ASK")
    if form not in _READ_FORMS:
        raise KBQueryError(f"not a SPARQL SELECT/ASK query (starts with {form!r})")
    return QueryInfo(form=form, has_limit="LIMIT" in words)
