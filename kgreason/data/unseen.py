"""Question types held out of training: compositions of known relations never seen together.

A type (MetaQA's ``actor_to_movie_to_director``) is a relation path; holding it out of
training while every relation it uses stays in some trained type asks whether an agent
composes what it learned, or recalls the dataset's templates.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import TypeVar

from kgreason.errors import DatasetError
from kgreason.types import KBQASample

S = TypeVar("S", bound=KBQASample)

#: which of the evaluation split's questions to score when types are held out
EVAL_TYPES = ("all", "held_out", "seen")


def qtype(q: KBQASample) -> str | None:
    """A question's type: ``meta["qtype"]``, else its ``level``."""
    return q.meta.get("qtype") or q.level


def check_held_out(train: Sequence[KBQASample], held_out: Sequence[str], pool: Sequence[KBQASample]) -> None:
    """Refuse held-out types the data does not have, or that use a relation no trained
    type uses (that would test an unseen relation, not an unseen composition).

    Args:
        train: the training questions, held-out types already removed.
        held_out: the held-out type names.
        pool: every loaded question (training and evaluation splits).

    Raises:
        DatasetError: naming the type, and the valid types or the missing relation.

    >>> from kgreason.types import KBQASample
    >>> def q(t, path): return KBQASample(id=t, question="?", relation_path=path, meta={"qtype": t})
    >>> train = [q("a_to_b", ["r"]), q("b_to_c", ["s"])]
    >>> check_held_out(train, ["a_to_b_to_c"], [*train, q("a_to_b_to_c", ["r", "s"])])
    >>> check_held_out(train, ["a_to_d"], [*train, q("a_to_d", ["t"])])
    Traceback (most recent call last):
    ...
    kgreason.errors.DatasetError: data.held_out_types: 'a_to_d' uses relation t, which no trained type uses: that is an unseen relation, not an unseen composition
    """
    paths = {qtype(s): tuple(s.relation_path or ()) for s in pool if qtype(s)}
    trained = {r for s in train for r in (s.relation_path or ())}
    for t in held_out:
        if t not in paths:
            close = difflib.get_close_matches(t, sorted(paths), n=1)
            raise DatasetError(f"data.held_out_types: no question has type {t!r}; types: {', '.join(sorted(paths))}"
                               + (f" (did you mean {close[0]!r}?)" if close else ""))
        unseen = [r for r in paths[t] if r not in trained]
        if unseen:
            raise DatasetError(f"data.held_out_types: {t!r} uses relation {', '.join(unseen)}, which no trained type "
                               "uses: that is an unseen relation, not an unseen composition")


def split_by_types(train_pool: list[S], eval_pool: list[S], held_out: Sequence[str],
                   eval_types: str = "held_out") -> tuple[list[S], list[S]]:
    """Drop the held-out types from training; keep the evaluation questions ``eval_types`` asks for.

    Args:
        held_out: type names no training question may have.
        eval_types: ``held_out`` (only those types), ``seen`` (every other type) or ``all``.

    Raises:
        DatasetError: an unknown ``eval_types``, or a held-out type :func:`check_held_out` refuses.

    >>> from kgreason.types import KBQASample
    >>> def q(i, t, path): return KBQASample(id=str(i), question="?", relation_path=path, meta={"qtype": t})
    >>> pool = [q(0, "x", ["r"]), q(1, "y", ["s"]), q(2, "x_y", ["r", "s"])]
    >>> train, held = split_by_types(pool, pool, ["x_y"])
    >>> [s.id for s in train], [s.id for s in held]
    (['0', '1'], ['2'])
    """
    if eval_types not in EVAL_TYPES:
        raise DatasetError(f"data.eval_types={eval_types!r}: choose one of {', '.join(EVAL_TYPES)}")
    out = set(held_out)
    train = [s for s in train_pool if qtype(s) not in out]
    check_held_out(train, held_out, [*train_pool, *eval_pool])
    keep = {"all": lambda s: True, "held_out": lambda s: qtype(s) in out, "seen": lambda s: qtype(s) not in out}
    return train, [s for s in eval_pool if keep[eval_types](s)]
