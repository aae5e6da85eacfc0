"""How KB-local ids map to IRIs, and how values are written into SPARQL safely.

Every string that reaches a query template goes through :meth:`KBSchema.entity_iri`,
:meth:`KBSchema.relation_iri` or :func:`sparql_string`; each of them yields a single
well-formed SPARQL token whatever the input, so no input can change a query's shape.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from pyoxigraph import NamedNode

from kgreason.errors import ConfigError, KBQueryError
from kgreason.types import Term

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
FREEBASE_NS = "http://rdf.freebase.com/ns/"

# An allow-list: RFC 3986 path characters (unreserved, sub-delims, ':', '@', '/') and
# non-ASCII letters and digits stay readable; everything else, '%' included (so that the
# encoding is reversible), is percent-encoded. Anything looser lets strings like '[' or
# '##' through, which are not valid in an IRI path.
_ASCII_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
_SAFE_RUN = re.compile(f"[{_ASCII_SAFE}]*")
_NOT_ASCII_SAFE = re.compile(f"[^{_ASCII_SAFE}]")


def _encode_char(m: re.Match) -> str:
    ch = m.group()
    if "\ud800" <= ch <= "\udfff":  # a lone surrogate: no IRI, no UTF-8, holds it
        raise KBQueryError(f"not valid Unicode: lone surrogate {ch!r}")
    return ch if ord(ch) > 127 and ch.isalnum() else quote(ch, safe="")


def encode_iri_part(s: str) -> str:
    """Percent-encode ``s`` so that it is a valid, injection-free piece of an IRIREF.

    >>> encode_iri_part("m.x> . ?s ?p ?o . <x")
    'm.x%3E%20.%20%3Fs%20%3Fp%20%3Fo%20.%20%3Cx'
    >>> encode_iri_part("Zürich [film]")
    'Zürich%20%5Bfilm%5D'

    Raises:
        KBQueryError: ``s`` holds a lone surrogate.
    """
    if _SAFE_RUN.fullmatch(s):
        return s
    # one regex pass over the characters outside the ASCII allow-list (a per-character
    # check cost ≈ 8 µs for a name with a space, a sixth of a MetaQA tails() call)
    return _NOT_ASCII_SAFE.sub(_encode_char, s)


_IRIREF_FORBIDDEN = re.compile(r'[<>"{}|^`\\\x00-\x20]')


def escape_full_iri(iri: str) -> str:
    """Percent-encode what an IRIREF forbids (SPARQL grammar [139]) in a full IRI.

    >>> escape_full_iri("http://x/a> . ?s ?p ?o . <b")
    'http://x/a%3E%20.%20?s%20?p%20?o%20.%20%3Cb'
    """
    return _IRIREF_FORBIDDEN.sub(lambda m: quote(m.group(), safe=""), iri)


def _full_iri(s: str) -> str | None:
    """``s`` as a full IRI when it is one; an invalid one (``http://[``) cannot be in any
    KB, so it is treated as a local id instead."""
    if not s.startswith(("http://", "https://")):
        return None
    iri = escape_full_iri(s)
    try:
        NamedNode(iri)  # pyoxigraph validates RFC 3987
    except ValueError:
        return None
    return iri


def sparql_string(s: str, lang: str | None = None, datatype: str | None = None) -> str:
    """A SPARQL string literal holding exactly ``s``.

    >>> sparql_string('say "hi"\\n')
    '"say \\\\"hi\\\\"\\\\n"'
    >>> sparql_string("Paris", lang="en")
    '"Paris"@en'
    """
    escaped = (
        s.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    out = f'"{escaped}"'
    if lang:
        if not lang.replace("-", "").isalnum():
            raise ValueError(f"invalid language tag {lang!r}")
        out += "@" + lang
    elif datatype:
        out += f"^^<{escape_full_iri(datatype)}>"
    return out


@dataclass(frozen=True)
class KBSchema:
    """Namespaces and the schema relations a KB uses for names, aliases and types.

    Relation ids in the tuples below are KB-local (``type.object.name``) or full IRIs.
    ``hidden_relations`` never show up in ``relations_out/in`` (they are bookkeeping,
    not facts an agent should walk).
    """

    entity_ns: str
    relation_ns: str
    name_relations: tuple[str, ...] = ("type.object.name",)
    alias_relations: tuple[str, ...] = ("common.topic.alias",)
    type_relation: str | None = "type.object.type"
    lang: str | None = "en"
    hidden_relations: tuple[str, ...] = field(default=())
    #: ids are the display names (MetaQA); ``names`` then needs no query
    ids_are_names: bool = False

    def entity_iri(self, id_: str) -> str:
        return _full_iri(id_) or self.entity_ns + encode_iri_part(id_)

    def relation_iri(self, id_: str) -> str:
        return _full_iri(id_) or self.relation_ns + encode_iri_part(id_)

    def entity_ref(self, id_: str) -> str:
        """``<iri>`` for an entity id, safe to paste into a query."""
        return f"<{self.entity_iri(id_)}>"

    def relation_ref(self, id_: str) -> str:
        return f"<{self.relation_iri(id_)}>"

    def term_ref(self, t: Term | str) -> str:
        """A SPARQL token for an entity id or a literal term."""
        if isinstance(t, str):
            return self.entity_ref(t)
        if t.kind == "literal":
            return sparql_string(t.value, lang=t.lang, datatype=t.datatype)
        return self.entity_ref(t.value)

    def to_id(self, iri: str) -> str:
        """KB-local id of an IRI (the IRI itself when outside both namespaces)."""
        for ns in (self.entity_ns, self.relation_ns):
            if iri.startswith(ns):
                local = iri[len(ns):]
                return unquote(local) if "%" in local else local
        return iri

    @property
    def hidden(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.name_relations + self.alias_relations + self.hidden_relations))


FREEBASE = KBSchema(entity_ns=FREEBASE_NS, relation_ns=FREEBASE_NS)

METAQA = KBSchema(
    entity_ns="http://kgreason.org/metaqa/entity/",
    relation_ns="http://kgreason.org/metaqa/relation/",
    name_relations=(RDFS_LABEL,),
    alias_relations=(),
    type_relation=None,
    lang=None,
    ids_are_names=True,
)

GENERIC = KBSchema(
    entity_ns="http://kgreason.org/entity/",
    relation_ns="http://kgreason.org/relation/",
    name_relations=(RDFS_LABEL,),
    alias_relations=(),
    type_relation=None,
    lang=None,
)


#: the schemas a config may name (``kb.schema=freebase``)
SCHEMAS: dict[str, KBSchema] = {"freebase": FREEBASE, "generic": GENERIC, "metaqa": METAQA}


def as_schema(spec: KBSchema | str | Mapping[str, Any]) -> KBSchema:
    """A :class:`KBSchema` from a schema, one of :data:`SCHEMAS`' names, or its fields.

    Lets a config say ``schema: freebase`` or spell out the namespaces of its own RDF;
    fields not given are :data:`GENERIC`'s (names by ``rdfs:label``, no aliases, no types).

    >>> as_schema("freebase") is FREEBASE
    True
    >>> as_schema({"entity_ns": "http://ex.org/", "relation_ns": "http://ex.org/p/"}).relation_ns
    'http://ex.org/p/'
    >>> as_schema("wikidata")
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: unknown KB schema 'wikidata'; valid: freebase, generic, metaqa, or a mapping of KBSchema fields (entity_ns, relation_ns, ...)
    """
    if isinstance(spec, KBSchema):
        return spec
    if isinstance(spec, str):
        if spec.lower() in SCHEMAS:
            return SCHEMAS[spec.lower()]
    elif isinstance(spec, Mapping):
        fields_ = {f.name for f in dataclasses.fields(KBSchema)}
        unknown = sorted(set(spec) - fields_)
        if unknown or not {"entity_ns", "relation_ns"} <= set(spec):
            raise ConfigError(f"KB schema fields {dict(spec)!r}: need entity_ns and relation_ns; "
                              f"unknown {unknown}; valid fields: {', '.join(sorted(fields_))}")
        tuples = {k: tuple(v) for k, v in spec.items()
                  if k in ("name_relations", "alias_relations", "hidden_relations")}
        # over GENERIC (names by rdfs:label, no aliases or types): what an RDF file most often has
        return dataclasses.replace(GENERIC, **{**dict(spec), **tuples})
    raise ConfigError(f"unknown KB schema {spec!r}; valid: {', '.join(SCHEMAS)}, "
                      "or a mapping of KBSchema fields (entity_ns, relation_ns, ...)")


_PREFIX_DECL = re.compile(r"PREFIX\s+(\w*):\s*<([^>]*)>", re.I)
_STRING_OR_IRI = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|<[^<>\s]*>")


def expand_prefixes(sparql: str, prefixes: dict[str, str]) -> str:
    """Rewrite ``prefix:local`` names as full IRIs (outside strings and ``<...>``).

    Small policies write ``ns:m.0abc``; Oxigraph rejects dotted local names, so the
    environment expands them. Declared prefixes in the query win over ``prefixes``.

    >>> expand_prefixes('SELECT ?x WHERE { ns:m.1 ns:film.film.directed_by ?x . }',
    ...                 {"ns": "http://rdf.freebase.com/ns/"})
    'SELECT ?x WHERE { <http://rdf.freebase.com/ns/m.1> <http://rdf.freebase.com/ns/film.film.directed_by> ?x . }'
    """
    table = dict(prefixes)
    table.update({p: iri for p, iri in _PREFIX_DECL.findall(sparql)})
    body = _PREFIX_DECL.sub("", sparql).strip()
    if not table:
        return body
    names = "|".join(re.escape(p) for p in sorted(table, key=len, reverse=True))
    pat = re.compile(rf"(?<![\w:/?$#])({names}):([A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?)")
    out, last = [], 0
    for m in _STRING_OR_IRI.finditer(body):
        out.append(pat.sub(lambda n: f"<{table[n.group(1)]}{n.group(2)}>", body[last:m.start()]))
        out.append(m.group(0))
        last = m.end()
    out.append(pat.sub(lambda n: f"<{table[n.group(1)]}{n.group(2)}>", body[last:]))
    return "".join(out)
