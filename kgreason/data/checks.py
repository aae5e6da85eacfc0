"""Do the questions belong to the KB? Their topic entities and answers looked up in it.

A question whose topic entity the KB does not hold cannot be explored, and one whose
answers it does not hold cannot be answered with its ids: on one's own data such
questions make a run's scores mean little, and cold starts used to drop them unnamed.
:func:`check_against_kb` looks a sample of them up before any training.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from kgreason.errors import DatasetError, KBError
from kgreason.kb.base import KnowledgeBase
from kgreason.types import Entity, KBQASample

log = logging.getLogger(__name__)

ON_MISSING = ("keep", "drop", "fail")


@dataclass
class KBCheck:
    """What :func:`check_against_kb` found.

    Attributes:
        checked: questions looked up (all, or a seeded sample of ``sample`` of them).
        missing_topic: question id → its topic entity ids the KB does not hold.
        missing_answers: question id → its answer ids the KB does not hold.
    """

    checked: int = 0
    missing_topic: dict[str, list[str]] = field(default_factory=dict)
    missing_answers: dict[str, list[str]] = field(default_factory=dict)

    @property
    def bad(self) -> set[str]:
        return set(self.missing_topic) | set(self.missing_answers)

    def as_dict(self) -> dict:
        return {"checked": self.checked, "missing_topic": len(self.missing_topic),
                "missing_answers": len(self.missing_answers),
                "examples": sorted(self.bad)[:20]}

    def summary(self) -> str:
        ids = ", ".join(sorted(self.bad)[:10])
        return (f"of {self.checked} questions checked against the KB, {len(self.missing_topic)} have a topic entity "
                f"and {len(self.missing_answers)} an answer id it does not hold" + (f" ({ids})" if ids else ""))


def _is_id(e: Entity) -> bool:
    """An answer the KB should hold: not a literal (a date, a number), not an unresolved name."""
    return not e.datatype and bool(e.id)


def check_against_kb(samples: Sequence[KBQASample], kb: KnowledgeBase, sample: int | None = 500,
                     seed: int = 0) -> KBCheck:
    """Look up the topic entities and answer ids of ``samples`` (at most ``sample`` of
    them, drawn with ``seed``) in ``kb``.

    A question with several answers needs only one of them in the KB (the rest may be
    names the KB spells otherwise); a KB error on a look-up counts as not found.
    """
    pool = list(samples)
    if sample is not None and len(pool) > sample:
        pool = random.Random(seed).sample(pool, sample)
    out = KBCheck(checked=len(pool))
    seen: dict[str, bool] = {}

    def has(e: str) -> bool:
        if e not in seen:
            try:
                seen[e] = kb.exists(e)
            except KBError:
                seen[e] = False
        return seen[e]

    for q in pool:
        topic = [e.id for e in q.topic_entities if not has(e.id)]
        if topic:
            out.missing_topic[q.id] = topic
        ids = [e.id for e in q.answers if _is_id(e)]
        if ids and not any(has(i) for i in ids):
            out.missing_answers[q.id] = ids
    return out


def apply_kb_check(samples: list[KBQASample], check: KBCheck, on_missing: str = "keep") -> list[KBQASample]:
    """Warn about (``keep``), leave out (``drop``) or refuse (``fail``: a
    :class:`DatasetError`) the questions ``check`` found the KB does not hold."""
    if on_missing not in ON_MISSING:
        raise DatasetError(f"data.on_missing={on_missing!r}: choose one of {', '.join(ON_MISSING)}")
    if not check.bad:
        return samples
    if on_missing == "fail":
        raise DatasetError(check.summary() + "; data.on_missing=drop leaves them out, keep keeps them")
    log.warning("%s%s", check.summary(), "; left out" if on_missing == "drop" else "")
    return [q for q in samples if q.id not in check.bad] if on_missing == "drop" else samples
