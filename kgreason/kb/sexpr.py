"""GrailQA / KBQA-o1 S-expressions: parser and compiler to SPARQL.

Supported forms (Gu et al. 2021; KBQA-o1 adds ``TC``):

- ``(JOIN r X)``: ``{x | (x, r, y), y in X}``; ``(JOIN (R r) X)``: ``{x | (y, r, x), y in X}``
- ``(AND A B)``: intersection; ``A`` may be a class (``film.film``)
- ``(COUNT X)``; ``(ARGMAX X r)`` / ``(ARGMIN X r)`` with ``r`` a relation or a chain
  ``(JOIN r1 r2)``, ties kept
- ``(lt r v)``, ``(le r v)``, ``(gt r v)``, ``(ge r v)`` with ``v`` a typed literal
  ``1990^^http://www.w3.org/2001/XMLSchema#gYear``
- ``(TC X r t)``: members of ``X`` whose ``[r, r_to]`` interval (``...from`` /
  ``...to``, or ``start_date`` / ``end_date``) overlaps year or date ``t`` (``NOW`` is
  2015-08-10 as in KBQA-o1). Missing bounds count as open.

Entities are KB-local ids written bare (``m.0abc``); the compiler turns every id and
relation into a full IRI through the KB schema (Oxigraph rejects ``ns:a.b.c``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kgreason.errors import KBQueryError
from kgreason.kb.schema import FREEBASE, KBSchema, sparql_string

SExpr = str | list["SExpr"]

NOW = "2015-08-10"
_COMPARATORS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_TOKEN = re.compile(r'\(|\)|"(?:[^"\\]|\\.)*"(?:\^\^\S+?(?=[\s)]))?|[^\s()]+')


class SExprError(KBQueryError):
    """The S-expression is malformed or uses an unsupported form."""


#: deepest nesting read: the parser and the compiler recurse once a level, and a policy's
#: text can open thousands of brackets (a KBQA-R1 logical form nests a few levels)
MAX_DEPTH = 64


def parse_sexpr(text: str) -> SExpr:
    """Parse an S-expression into nested lists of strings.

    >>> parse_sexpr("(JOIN (R film.film.directed_by) m.0abc)")
    ['JOIN', ['R', 'film.film.directed_by'], 'm.0abc']
    """
    tokens = _TOKEN.findall(text)
    if not tokens:
        raise SExprError("empty S-expression")
    pos = 0

    def walk(depth: int = 1) -> SExpr:
        nonlocal pos
        if pos >= len(tokens):
            raise SExprError("unexpected end of S-expression")
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            if depth > MAX_DEPTH:
                raise SExprError(f"the S-expression nests deeper than {MAX_DEPTH} levels")
            out: list[SExpr] = []
            while pos < len(tokens) and tokens[pos] != ")":
                out.append(walk(depth + 1))
            if pos >= len(tokens):
                raise SExprError("missing ')'")
            pos += 1
            return out
        if tok == ")":
            raise SExprError("unexpected ')'")
        return tok

    tree = walk()
    if pos != len(tokens):
        raise SExprError(f"trailing tokens after the expression: {tokens[pos:]}")
    return tree


@dataclass
class _Ctx:
    schema: KBSchema
    n: int = 0
    #: entity constants of the expression, as SPARQL terms
    entities: list[str] = field(default_factory=list)

    def var(self) -> str:
        self.n += 1
        return f"?v{self.n}"


def _is_literal(tok: str) -> bool:
    return "^^" in tok or tok.startswith('"')


def _literal(tok: str) -> str:
    if tok.startswith('"'):
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"(?:\^\^<?([^>]+)>?)?', tok)
        if not m:
            raise SExprError(f"bad literal {tok!r}")
        return sparql_string(m.group(1).encode().decode("unicode_escape"), datatype=m.group(2))
    value, _, dtype = tok.partition("^^")
    return sparql_string(value, datatype=dtype or None)


def _is_class(tok: SExpr) -> bool:
    # Classes are dotted schema names (film.film); entities are ids (m.0abc, Q42).
    return isinstance(tok, str) and tok.count(".") >= 1 and not re.match(r"^[mg]\.", tok) \
        and not _is_literal(tok)


def _rel(ctx: _Ctx, r: SExpr, subj: str, obj: str) -> str:
    if isinstance(r, list):
        if len(r) == 2 and r[0] == "R":
            return _rel(ctx, r[1], obj, subj)
        if len(r) == 3 and r[0] == "JOIN":  # a relation chain r1 then r2
            mid = ctx.var()
            return f"{_rel(ctx, r[1], subj, mid)} {_rel(ctx, r[2], mid, obj)}"
        raise SExprError(f"bad relation {r!r}")
    return f"{subj} {ctx.schema.relation_ref(r)} {obj} ."


def _set(ctx: _Ctx, e: SExpr, var: str) -> str:
    """Graph patterns that bind ``var`` to the members of ``e``."""
    s = ctx.schema
    if isinstance(e, str):
        if _is_literal(e):
            return f"VALUES {var} {{ {_literal(e)} }}"
        if _is_class(e) and s.type_relation:
            return f"{var} {s.relation_ref(s.type_relation)} {s.relation_ref(e)} ."
        ctx.entities.append(s.entity_ref(e))
        return f"VALUES {var} {{ {s.entity_ref(e)} }}"
    if not e:
        raise SExprError("empty expression")
    head, args = e[0], e[1:]
    if head == "JOIN":
        if len(args) != 2:
            raise SExprError("JOIN takes a relation and an expression")
        rel, arg = args
        if isinstance(arg, str) and not _is_class(arg):
            obj = _literal(arg) if _is_literal(arg) else s.entity_ref(arg)
            if not _is_literal(arg):
                ctx.entities.append(obj)
            return _rel(ctx, rel, var, obj)
        y = ctx.var()
        return f"{_rel(ctx, rel, var, y)} {_set(ctx, arg, y)}"
    if head == "AND":
        if len(args) != 2:
            raise SExprError("AND takes two expressions")
        return f"{_set(ctx, args[0], var)} {_set(ctx, args[1], var)}"
    if head in _COMPARATORS:
        if len(args) != 2 or not isinstance(args[1], str):
            raise SExprError(f"{head} takes a relation and a literal")
        v = ctx.var()
        return f"{_rel(ctx, args[0], var, v)} FILTER({v} {_COMPARATORS[head]} {_literal(args[1])})"
    if head == "TC":
        if len(args) != 3 or not isinstance(args[1], str) or not isinstance(args[2], str):
            raise SExprError("TC takes an expression, a relation and a time")
        inner = _set(ctx, args[0], var)
        r_from = args[1]
        r_to = _to_relation(r_from)
        t = NOW if args[2].upper() == "NOW" else args[2].split("^^")[0].strip('"')
        start, end = (t, t) if len(t) > 4 else (t, f"{t}-12-31")
        f, g = ctx.var(), ctx.var()
        # ISO-8601 lexical forms compare correctly as strings, for years and dates alike.
        return (
            f"{inner} FILTER NOT EXISTS {{ {var} {s.relation_ref(r_from)} {f} . "
            f"FILTER(STR({f}) > {sparql_string(end)}) }} "
            f"FILTER NOT EXISTS {{ {var} {s.relation_ref(r_to)} {g} . "
            f"FILTER(STR({g}) < {sparql_string(start)}) }}"
        )
    if head in ("COUNT", "ARGMAX", "ARGMIN"):
        raise SExprError(f"{head} is only supported at the top of an expression")
    raise SExprError(f"unsupported S-expression function {head!r}")


def _to_relation(r_from: str) -> str:
    for a, b in ((".from", ".to"), ("start_date", "end_date"), ("_from", "_to")):
        if r_from.endswith(a):
            return r_from[: -len(a)] + b
    raise SExprError(f"cannot derive the end relation of {r_from!r} for TC")


def sexpr_to_sparql(sexpr: str | SExpr, schema: KBSchema = FREEBASE, exclude_entities: bool = False) -> str:
    """Compile an S-expression to a SPARQL SELECT over the answer variable ``?x``.

    COUNT queries select ``?count``; everything else selects ``DISTINCT ?x``.
    ``exclude_entities`` keeps the expression's own entities out of the answers, as
    GrailQA's official SPARQL does (its FILTERs keep every query node distinct): "which
    players won matches against X" then does not answer X.

    >>> q = sexpr_to_sparql("(COUNT (JOIN film.film.directed_by m.0abc))")
    >>> q.startswith("SELECT (COUNT(DISTINCT ?x) AS ?count)")
    True
    >>> sexpr_to_sparql("(JOIN people.person.sibling m.1)", exclude_entities=True).endswith(
    ...     "FILTER(?x NOT IN (<http://rdf.freebase.com/ns/m.1>)) }")
    True
    """
    tree = parse_sexpr(sexpr) if isinstance(sexpr, str) else sexpr
    ctx = _Ctx(schema)

    def distinct(var: str) -> str:
        ents = list(dict.fromkeys(ctx.entities))
        return f" FILTER({var} NOT IN ({', '.join(ents)}))" if exclude_entities and ents else ""

    if isinstance(tree, list) and tree and tree[0] == "COUNT":
        if len(tree) != 2:
            raise SExprError("COUNT takes one expression")
        body = _set(ctx, tree[1], "?x")
        return f"SELECT (COUNT(DISTINCT ?x) AS ?count) WHERE {{ {body}{distinct('?x')} }}"
    if isinstance(tree, list) and tree and tree[0] in ("ARGMAX", "ARGMIN"):
        if len(tree) != 3:
            raise SExprError(f"{tree[0]} takes an expression and a relation")
        agg = "MAX" if tree[0] == "ARGMAX" else "MIN"
        body = _set(ctx, tree[1], "?x")
        v = ctx.var()
        sub_body = _set(ctx, tree[1], "?y")
        w = ctx.var()
        return (
            f"SELECT DISTINCT ?x WHERE {{ {body} {_rel(ctx, tree[2], '?x', v)} "
            f"{{ SELECT ({agg}({w}) AS ?best) WHERE {{ {sub_body} {_rel(ctx, tree[2], '?y', w)}{distinct('?y')} }} }} "
            f"FILTER({v} = ?best){distinct('?x')} }}"
        )
    body = _set(ctx, tree, "?x")
    return f"SELECT DISTINCT ?x WHERE {{ {body}{distinct('?x')} }}"


def to_text(e: SExpr) -> str:
    """An S-expression tree back as text.

    >>> to_text(["JOIN", ["R", "a.b.c"], "m.1"])
    '(JOIN (R a.b.c) m.1)'
    """
    return e if isinstance(e, str) else "(" + " ".join(to_text(x) for x in e) + ")"


_EXPR_REF = re.compile(r"^\s*(?:expression|expr|#)\s*(\d*)\s*$", re.I)


class SExprBuilder:
    """S-expressions built one action at a time, kept by number (KBQA-R1 Table II, after
    KBQA-o1).

    A ``find_relation`` from an entity opens a new expression (the implicit START) and
    makes it current; ``find_relation`` from an expression, ``order``, ``compare``,
    ``time_constraint`` and ``count`` rewrite the expression they are given (the current
    one by default) under its own number; ``merge`` intersects two expressions and writes
    the result back to the earlier number. Every step returns the number it wrote; the
    caller compiles and runs it with :meth:`sparql`.

    Expressions are named ``expression`` (the current one), ``expression3`` or ``#3``.

    >>> b = SExprBuilder()
    >>> b.find_relation("m.nolan", "film.film.directed_by", reverse=True)
    1
    >>> b.find_relation("m.caine", "film.film.starring", reverse=True)
    2
    >>> b.merge("expression1", "expression2")
    1
    >>> b.text(1)
    '(AND (JOIN (R film.film.directed_by) m.nolan) (JOIN (R film.film.starring) m.caine))'
    >>> b.count(), b.text()
    (1, '(COUNT (AND (JOIN (R film.film.directed_by) m.nolan) (JOIN (R film.film.starring) m.caine)))')
    """

    def __init__(self, schema: KBSchema = FREEBASE):
        self.schema = schema
        self.exprs: dict[int, SExpr] = {}
        self.current: int | None = None

    def ref(self, name: str | int | None = None) -> int:
        """The number an expression reference names (None or ``expression``: the current one).

        Raises:
            SExprError: no such expression (the message lists the defined ones).
        """
        if name is None:
            n = self.current
        elif isinstance(name, int):
            n = name
        else:
            m = _EXPR_REF.match(name)
            if not m:
                raise SExprError(f"{name!r} does not name an expression (write expression1, expression2, ...)")
            n = int(m.group(1)) if m.group(1) else self.current
        if n is None or n not in self.exprs:
            have = ", ".join(f"expression{k}" for k in sorted(self.exprs)) or "none yet"
            raise SExprError(f"no expression {name if name is not None else '(current)'}; defined: {have}")
        return n

    def is_ref(self, arg: str) -> bool:
        """Whether ``arg`` names an expression rather than an entity."""
        return bool(_EXPR_REF.match(arg))

    def _write(self, n: int, e: SExpr) -> int:
        self.exprs[n] = e
        self.current = n
        return n

    def find_relation(self, source: str, relation: SExpr, reverse: bool = False) -> int:
        """JOIN over ``relation`` from an entity (a new expression) or from an expression
        (rewritten in place). ``reverse`` follows the relation backwards: ``(R r)``."""
        rel: SExpr = ["R", relation] if reverse else relation  # relation may already be ["R", r]
        if self.is_ref(source):
            n = self.ref(source)
            return self._write(n, ["JOIN", rel, self.exprs[n]])
        return self._write(max(self.exprs, default=0) + 1, ["JOIN", rel, source])

    def merge(self, first: str, second: str | None = None) -> int:
        """AND of two expressions, written back to the earlier number."""
        a, b = self.ref(first), self.ref(second)
        if a == b:
            raise SExprError(f"Merge needs two different expressions, got expression{a} twice")
        lo, hi = sorted((a, b))
        merged: SExpr = ["AND", self.exprs[lo], self.exprs[hi]]
        del self.exprs[hi]
        return self._write(lo, merged)

    def order(self, mode: str, relation: SExpr, expression: str | None = None) -> int:
        """ARGMAX / ARGMIN of an expression by ``relation`` (a name or a chain ``["JOIN", r1, r2]``)."""
        head = {"MAX": "ARGMAX", "MIN": "ARGMIN", "ARGMAX": "ARGMAX", "ARGMIN": "ARGMIN"}.get(mode.upper())
        if head is None:
            raise SExprError(f"Order mode must be MAX or MIN, got {mode!r}")
        n = self.ref(expression)
        return self._write(n, [head, self.exprs[n], relation])

    def compare(self, mode: str, relation: SExpr, value: str, expression: str | None = None) -> int:
        """Members of an expression whose ``relation`` value is lt / le / gt / ge ``value``."""
        n = self.ref(expression)
        return self._write(n, ["AND", self.exprs[n], _comparison(mode, relation, value)])

    def compare_type(self, mode: str, relation: SExpr, value: str, klass: str) -> int:
        """A new expression: the members of class ``klass`` whose ``relation`` value is
        lt / le / gt / ge ``value`` (questions without entities: "which mountains are
        higher than 8,000 m")."""
        return self._write(max(self.exprs, default=0) + 1, ["AND", klass, _comparison(mode, relation, value)])

    def constrain_type(self, expression: str, klass: str) -> int:
        """``(AND klass expression)``, written back to the expression's number (a Merge with a type)."""
        n = self.ref(expression)
        return self._write(n, ["AND", klass, self.exprs[n]])

    def time_constraint(self, relation: str, time: str, expression: str | None = None) -> int:
        """TC: members of an expression whose ``relation`` interval holds at ``time``."""
        n = self.ref(expression)
        return self._write(n, ["TC", self.exprs[n], relation, time])

    def count(self, expression: str | None = None) -> int:
        n = self.ref(expression)
        return self._write(n, ["COUNT", self.exprs[n]])

    def text(self, expression: str | int | None = None) -> str:
        return to_text(self.exprs[self.ref(expression)])

    def sparql(self, expression: str | int | None = None) -> str:
        """The expression compiled to SPARQL (:func:`sexpr_to_sparql`)."""
        return sexpr_to_sparql(self.exprs[self.ref(expression)], self.schema)


def _comparison(mode: str, relation: SExpr, value: str) -> SExpr:
    if mode.lower() not in _COMPARATORS:
        raise SExprError(f"Compare mode must be one of {', '.join(_COMPARATORS)}, got {mode!r}")
    lit = value if "^^" in value or value.startswith('"') else _typed_number(value)
    return [mode.lower(), relation, lit]


def _typed_number(value: str) -> str:
    v = value.strip()
    if re.fullmatch(r"-?\d+", v):
        return f"{v}^^http://www.w3.org/2001/XMLSchema#integer"
    if re.fullmatch(r"-?\d*\.\d+(?:[eE]-?\d+)?", v):
        return f"{v}^^http://www.w3.org/2001/XMLSchema#decimal"  # SPARQL reads 1.80 as a decimal
    raise SExprError(f"Compare needs a number, got {value!r}")
