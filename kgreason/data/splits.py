"""Seeded train / evaluation subsets that never share a question."""

from __future__ import annotations

import dataclasses
import difflib
import logging
import random
from collections.abc import Sequence
from typing import TypeVar

from kgreason.errors import DatasetError
from kgreason.types import KBQASample

S = TypeVar("S", bound=KBQASample)


def sample_subset(samples: Sequence[S], limit: int | None, seed: int) -> list[S]:
    """A seeded random subset of at most ``limit`` samples (all of them when ``None``).

    Dataset files are often ordered by question type, so a prefix would not be
    representative.

    >>> from kgreason.types import KBQASample
    >>> qs = [KBQASample(id=str(i), question="?") for i in range(5)]
    >>> [q.id for q in sample_subset(qs, 2, seed=0)] == [q.id for q in sample_subset(qs, 2, seed=0)]
    True
    >>> len(sample_subset(qs, None, seed=0))
    5
    """
    if limit is None or limit >= len(samples):
        return list(samples)
    return random.Random(seed).sample(list(samples), limit)


def check_stratify(by: str) -> None:
    """Refuse a ``data.stratify`` that is not a question field, naming the valid ones.

    Raises:
        DatasetError: ``by`` is not a :class:`~kgreason.types.KBQASample` field.

    >>> check_stratify("hop")
    Traceback (most recent call last):
    ...
    kgreason.errors.DatasetError: data.stratify='hop' is not a question field; choose one of id, question, topic_entities, answers, sexpr, sparql, relation_path, hops, level, subgraph, meta (did you mean 'hops'?)
    """
    fields = [f.name for f in dataclasses.fields(KBQASample)]
    if by not in fields:
        close = difflib.get_close_matches(str(by), fields, n=1)
        raise DatasetError(f"data.stratify={by!r} is not a question field; choose one of {', '.join(fields)}"
                           + (f" (did you mean {close[0]!r}?)" if close else ""))


def stratified_subset(samples: Sequence[S], limit: int | None, by: str, seed: int) -> list[S]:
    """A seeded subset with ``limit // n`` samples from each of the ``n`` values of the
    sample field ``by``, one more from each of the first ``limit % n`` values (all of a
    value's samples when it has fewer).

    A pooled draw follows the dataset's proportions (MetaQA dev: 26 % 1-hop), so a
    per-hop score would rest on unequal and small groups.

    Raises:
        DatasetError: ``limit`` is smaller than ``n``: some value would have no sample.

    >>> from kgreason.types import KBQASample
    >>> qs = [KBQASample(id=str(i), question="?", hops=1 + (i % 3 == 0)) for i in range(9)]
    >>> sorted(q.hops for q in stratified_subset(qs, 4, "hops", seed=0))
    [1, 1, 2, 2]
    >>> sorted(q.hops for q in stratified_subset(qs, 5, "hops", seed=0))
    [1, 1, 1, 2, 2]
    >>> stratified_subset(qs, 1, "hops", seed=0)
    Traceback (most recent call last):
    ...
    kgreason.errors.DatasetError: data.eval_limit=1 with data.stratify=hops: fewer questions than the 2 values of hops (1, 2), so some would have none; ask for at least 2
    """
    check_stratify(by)
    groups: dict[object, list[S]] = {}
    for s in samples:
        groups.setdefault(getattr(s, by), []).append(s)
    keys = sorted(groups, key=str)
    if limit is not None and limit < len(keys):
        raise DatasetError(f"data.eval_limit={limit} with data.stratify={by}: fewer questions than the {len(keys)} "
                           f"values of {by} ({', '.join(map(str, keys))}), so some would have none; ask for at least "
                           f"{len(keys)}")
    out: list[S] = []
    for i, key in enumerate(keys):
        per = None if limit is None else limit // len(keys) + (i < limit % len(keys))
        out += sample_subset(groups[key], per, seed + i)
    return out


def train_eval_split(train_pool: Sequence[S], eval_pool: Sequence[S], train_limit: int | None,
                     eval_limit: int | None, seed: int, stratify: str | None = None) -> tuple[list[S], list[S]]:
    """Draw the evaluation subset first, then train on what is left of ``train_pool``.

    When both pools are the same split (MetaQA: train on dev, evaluate on a held-out 500
    of dev) the evaluation questions are removed from training, so no question is ever
    both trained on and scored. Disjoint pools are sampled independently.

    Args:
        train_pool, eval_pool: the loaded splits (may be the same list).
        train_limit, eval_limit: subset sizes (``None``: everything).
        seed: training subset seed; the evaluation subset uses ``seed + 1``.
        stratify: a sample field (e.g. ``hops``): the evaluation subset takes equal
            shares of its values (:func:`stratified_subset`).

    Returns:
        ``(train, eval)`` with no sample id in both.

    >>> from kgreason.types import KBQASample
    >>> dev = [KBQASample(id=str(i), question="?") for i in range(10)]
    >>> train, held = train_eval_split(dev, dev, None, 3, seed=0)
    >>> len(train), len(held), {q.id for q in train} & {q.id for q in held}
    (7, 3, set())
    """
    held = (stratified_subset(eval_pool, eval_limit, stratify, seed + 1) if stratify
            else sample_subset(eval_pool, eval_limit, seed + 1))
    held_ids = {s.id for s in held}
    remaining = [s for s in train_pool if s.id not in held_ids]
    return sample_subset(remaining, train_limit, seed), held


log = logging.getLogger(__name__)


def without_report(pool: list[S], report: Sequence[KBQASample], split: str, report_split: str) -> list[S]:
    """``pool`` less the questions of the report split (matched by id), named in the log.

    >>> from kgreason.types import KBQASample
    >>> pool = [KBQASample(id=str(i), question="?") for i in range(4)]
    >>> [q.id for q in without_report(pool, pool[1:3], "all", "test")]
    ['0', '3']
    """
    ids = {q.id for q in report}
    kept = [q for q in pool if q.id not in ids]
    if len(kept) < len(pool):
        log.info("training on split %r less its %d questions of the report split %r", split,
                 len(pool) - len(kept), report_split)
    return kept


UNANSWERED = ("drop", "fail")


def answered(samples: list[KBQASample], unanswered: str = "drop", what: str = "questions") -> list[KBQASample]:
    """``samples`` less the questions with no gold answer, which no metric can score (an
    empty prediction would match an empty gold set: F1 1.0).

    Args:
        unanswered: ``"drop"`` them, named in a warning, or ``"fail"`` with a
            :class:`DatasetError` naming them.

    >>> from kgreason.types import Entity
    >>> qs = [KBQASample("a", "?", answers=[]), KBQASample("b", "?", answers=[Entity("m.1", "X")])]
    >>> [q.id for q in answered(qs)]
    ['b']
    >>> answered(qs, "fail")
    Traceback (most recent call last):
    ...
    kgreason.errors.DatasetError: 1 of 2 questions have no gold answer (a); data.unanswered=drop leaves them out
    """
    if unanswered not in UNANSWERED:
        raise DatasetError(f"data.unanswered={unanswered!r}: choose one of {', '.join(UNANSWERED)}")
    empty = [q.id for q in samples if not q.answers]
    if not empty:
        return samples
    ids = ", ".join(empty[:10]) + (f", … ({len(empty) - 10} more)" if len(empty) > 10 else "")
    if unanswered == "fail":
        raise DatasetError(f"{len(empty)} of {len(samples)} {what} have no gold answer ({ids}); "
                           "data.unanswered=drop leaves them out")
    log.warning("left out %d of %d %s without a gold answer: %s", len(empty), len(samples), what, ids)
    return [q for q in samples if q.answers]


def load_splits(name: str, path: str | None = None, train_split: str = "train", eval_split: str = "dev",
                train_limit: int | None = None, eval_limit: int | None = None, seed: int = 0,
                stratify: str | None = None, unanswered: str = "drop", on_missing: str = "keep",
                held_out_types: Sequence[str] | None = None, eval_types: str = "all",
                **kwargs) -> tuple[list, list]:
    """Load a dataset's training and evaluation questions (the ``data`` config group).

    Nothing trains on the dataset's report split (:mod:`kgreason.data.roles`): it is
    refused as ``train_split``, and a training split that contains it (MetaQA's ``dev``)
    loses its questions. The evaluation subset is drawn first (``seed + 1``); when both
    splits are the same, its questions are removed from training (:func:`train_eval_split`). Questions without
    a gold answer are left out, named in a warning (``unanswered="fail"``: an error).
    ``on_missing`` is checked here and applied by the runner, which has the KB
    (:mod:`kgreason.data.checks`). ``held_out_types`` are question types no training
    question has; ``eval_types`` (``all``, ``held_out``, ``seen``) says which types are
    scored (:mod:`kgreason.data.unseen`).
    ``kwargs`` go to the dataset loader (e.g. MetaQA's ``hops``).

    >>> train, dev = load_splits("demo", eval_limit=5)
    >>> len(dev), len(set(q.id for q in train) & set(q.id for q in dev))
    (5, 0)
    """
    from kgreason.data.checks import ON_MISSING
    from kgreason.data.datasets import load_dataset
    from kgreason.data.roles import split_roles

    if on_missing not in ON_MISSING:
        raise DatasetError(f"data.on_missing={on_missing!r}: choose one of {', '.join(ON_MISSING)}")

    roles = split_roles(name)
    if roles is not None and roles.role(train_split) == "report":
        raise DatasetError(f"data.train_split={train_split!r} is the report split of dataset {name!r}, which "
                           f"nothing trains on; train on {roles.train!r} (docs/data.md#three-splits)")
    train_pool = answered(load_dataset(name, path, split=train_split, **kwargs), unanswered,
                          f"questions of split {train_split!r}")
    if roles is not None and roles.role(train_split) == "covers report":
        try:
            report = load_dataset(name, path, split=roles.report, **kwargs)
        except DatasetError:  # the training split loaded, so the file is fine: it has no splits, hence no report split
            report = []
        train_pool = without_report(train_pool, report, train_split, roles.report)
    eval_pool = train_pool if eval_split == train_split else answered(
        load_dataset(name, path, split=eval_split, **kwargs), unanswered, f"questions of split {eval_split!r}")
    if held_out_types:
        from kgreason.data.unseen import split_by_types

        train_pool, eval_pool = split_by_types(train_pool, eval_pool, list(held_out_types), eval_types)
    elif eval_types != "all":
        raise DatasetError(f"data.eval_types={eval_types!r} needs data.held_out_types; none are held out")
    for key, split, pool in (("train_split", train_split, train_pool), ("eval_split", eval_split, eval_pool)):
        if not pool:
            raise DatasetError(f"data.{key}={split!r}: dataset {name!r} has no questions in that split"
                               + (f" at {path}" if path else ""))
    return train_eval_split(train_pool, eval_pool, train_limit, eval_limit, seed, stratify)
