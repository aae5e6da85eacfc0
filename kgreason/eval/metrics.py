"""Answer-set metrics over normalised answers (design §10, docs/design.md).

A predicted answer matches a gold answer when their KB ids are equal, or when their
normalised names / aliases / literal values are equal. Each answer counts at most once:
true positives are a maximum one-to-one matching between predictions and gold, so
naming "Paris" once against two gold entities called Paris (different ids) recalls one
of them, not both. Gold may hold several variants (WebQSP parses); :func:`f1` is then
the best over them when ``variants`` is given.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence

from kgreason.types import Entity

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(s: str) -> str:
    """Lower-case, strip accents, punctuation, articles and extra spaces.

    >>> normalize("  The Godfather: Part II ")
    'godfather part ii'
    >>> normalize("3.0") == normalize("3")
    True
    """
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c)).lower().strip()
    if re.fullmatch(r"[-+]?\d+(\.\d+)?", s):  # numbers compare by value
        v = float(s)
        return str(int(v)) if v.is_integer() else repr(v)
    s = _ARTICLES.sub(" ", s.translate(_PUNCT))
    return " ".join(s.split())


def _keys(e: Entity | str) -> set[str]:
    if isinstance(e, str):
        return {normalize(e)} - {""}
    keys = {e.id.lower()} if e.id else set()
    for s in (e.name, *e.aliases):
        if s:
            keys.add(normalize(s))
    if e.datatype or not e.name:
        keys.add(normalize(e.id))
    return keys - {""}


def matches(pred: Entity | str, gold: Entity | str) -> bool:
    return bool(_keys(pred) & _keys(gold))


def precision_recall_f1(pred: Sequence[Entity | str], gold: Sequence[Entity | str]) -> tuple[float, float, float]:
    """Set precision, recall and F1 over a one-to-one matching (duplicates in ``pred`` count once).

    >>> precision_recall_f1(["Paris", "Lyon"], [Entity("m.1", "Paris")])
    (0.5, 1.0, 0.6666666666666666)
    >>> precision_recall_f1(["Paris"], [Entity("m.1", "Paris"), Entity("m.2", "Paris")])
    (1.0, 0.5, 0.6666666666666666)
    """
    preds = _dedup(pred)
    golds = _dedup(gold)
    if not preds or not golds:
        return (0.0, 0.0, 0.0) if preds or golds else (1.0, 1.0, 1.0)
    tp = _max_matching([_keys(p) for p in preds], [_keys(g) for g in golds])
    prec, rec = tp / len(preds), tp / len(golds)
    f = 0.0 if prec + rec == 0 else 2 * prec * rec / (prec + rec)
    return prec, rec, f


def _kb_id(x: Entity | str) -> str | None:
    """The KB id of an entity; ``None`` for strings, literals and unresolved names (id == name)."""
    if isinstance(x, Entity) and x.id and not x.datatype and x.id != x.name:
        return x.id
    return None


def _dedup(xs: Sequence[Entity | str]) -> list[Entity | str]:
    """Drop repeats; two entities with different KB ids are never repeats, whatever their names."""
    out: list[Entity | str] = []
    for x in xs:
        ix = _kb_id(x)
        if not any((ix == iy) if ix and (iy := _kb_id(y)) else matches(x, y) for y in out):
            out.append(x)
    return out


def _max_matching(pred_keys: list[set[str]], gold_keys: list[set[str]]) -> int:
    """Size of a maximum one-to-one matching of predictions to gold (augmenting paths).

    Iterative: gold sets of thousands (CWQ) would pass Python's recursion limit.
    """
    edges = [[j for j, g in enumerate(gold_keys) if p & g] for p in pred_keys]
    owner: dict[int, int] = {}  # gold index -> prediction index
    size = 0
    for root in range(len(edges)):
        if not edges[root]:
            continue
        seen: set[int] = set()
        # parent[k] = (i, j): prediction k hands its gold j to prediction i on an augmenting path
        parent: dict[int, tuple[int, int]] = {}
        stack = [(root, iter(edges[root]))]
        free: tuple[int, int] | None = None
        while stack and free is None:
            i, it = stack[-1]
            for j in it:
                if j in seen:
                    continue
                seen.add(j)
                if j not in owner:
                    free = (i, j)
                else:
                    parent[owner[j]] = (i, j)
                    stack.append((owner[j], iter(edges[owner[j]])))
                break
            else:
                stack.pop()
        if free is None:
            continue
        i, j = free
        owner[j] = i
        while i != root:
            i, j = parent[i]
            owner[j] = i
        size += 1
    return size


def f1(pred: Sequence[Entity | str], gold: Sequence[Entity | str],
       variants: Sequence[Sequence[Entity | str]] | None = None) -> float:
    """Answer-set F1; with ``variants``, the best over the gold variants."""
    cands = [gold, *(variants or [])]
    return max(precision_recall_f1(pred, g)[2] for g in cands)


def exact_match(pred: Sequence[Entity | str], gold: Sequence[Entity | str]) -> float:
    """1.0 when the predicted set equals the gold set.

    >>> exact_match(["Paris"], ["paris"]), exact_match(["Paris", "Lyon"], ["Paris"])
    (1.0, 0.0)
    """
    p, r, _ = precision_recall_f1(pred, gold)
    return float(p == 1.0 and r == 1.0)


def hit_at_1(pred: Sequence[Entity | str], gold: Sequence[Entity | str]) -> float:
    """1.0 when the first predicted answer is a gold answer.

    >>> hit_at_1(["Lyon", "Paris"], ["Paris"]), hit_at_1(["Paris", "Lyon"], ["Paris"])
    (0.0, 1.0)
    """
    return float(bool(pred) and any(matches(pred[0], g) for g in gold))
