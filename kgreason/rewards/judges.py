"""Answer judges for the ``llm_judge`` reward: a chat model decides whether a predicted
answer matches the gold answers (KG-Reasoner §4.1: Llama-3.2-3B judges each answer).

Any :class:`~kgreason.training.teachers.ChatTeacher` can judge — a local model behind an
engine (:class:`~kgreason.training.teachers.EngineTeacher`) or an OpenAI-compatible
endpoint (:class:`~kgreason.training.teachers.OpenAITeacher`)::

    reward.components.2.kwargs.judge:
      _target_: kgreason.rewards.judges.ChatJudge
      chat: {_target_: kgreason.training.teachers.OpenAITeacher, base_url: http://127.0.0.1:8000/v1, model: judge}
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Sequence

from kgreason.errors import KGReasonError
from kgreason.eval.metrics import matches
from kgreason.types import Entity

log = logging.getLogger(__name__)

PROMPT = (
    "Decide whether a predicted answer to a question matches one of the gold answers (the same "
    "entity or value, however it is written).\n"
    "Question: {question}\nGold answers: {gold}\nPredicted answer: {answer}\n"
    "Reply with one word: yes or no."
)
_VERDICT = re.compile(r"^\W*(yes|no)\b", re.I)


def alias_judge(answer_text: str, gold: Sequence[Entity], question: str = "") -> float:
    """The default judge: 1 when any gold name or alias matches the answer text."""
    return float(any(matches(answer_text, g) for g in gold))


class ChatJudge:
    """A chat model as the answer judge: ``yes`` is 1, ``no`` is 0.

    Verdicts are cached per (question, answer, gold), so a group of rollouts that agree
    costs one call. A reply that is neither yes nor no, or a model that cannot be
    reached, falls back to :func:`alias_judge` for that answer and is counted
    (``fallbacks``), so a judge outage cannot stop training.

    Args:
        chat: anything with ``complete(messages, stop, rng) -> str`` (a ``ChatTeacher``).
        seed: seeds the requests (an endpoint that samples replies the same way).
    """

    def __init__(self, chat, seed: int = 0):
        self.chat = chat
        self.rng = random.Random(seed)
        self.cache: dict[tuple[str, str, tuple[str, ...]], float] = {}
        self.calls = 0
        self.fallbacks = 0

    def __call__(self, answer_text: str, gold: Sequence[Entity], question: str = "") -> float:
        names = tuple(g.label for g in gold)
        key = (question, answer_text.strip(), names)
        if key in self.cache:
            return self.cache[key]
        prompt = PROMPT.format(question=question or "(not given)", gold=" | ".join(names), answer=answer_text.strip())
        try:
            self.calls += 1
            reply = self.chat.complete([{"role": "user", "content": prompt}], [], self.rng)
        except KGReasonError as e:
            self.fallbacks += 1
            log.warning("answer judge unavailable (%s); alias match for this answer", e)
            return alias_judge(answer_text, gold)
        m = _VERDICT.match(reply or "")
        if m is None:
            self.fallbacks += 1
            log.warning("answer judge replied %r, neither yes nor no; alias match for this answer", (reply or "")[:60])
            return alias_judge(answer_text, gold)
        self.cache[key] = v = float(m.group(1).lower() == "yes")
        return v

    def __repr__(self) -> str:
        return f"{type(self).__name__}(chat={getattr(self.chat, 'name', type(self.chat).__name__)})"
