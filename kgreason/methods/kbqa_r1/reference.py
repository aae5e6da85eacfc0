"""The reference of Referenced Rejection Sampling (KBQA-R1 §IV-B1): shown to a teacher,
never kept in the episode."""

from __future__ import annotations

from typing import Any

from kgreason.envs.base import KGEnv
from kgreason.types import KBQASample


class ReferencedEnv:
    """``env`` whose opening messages carry ``note`` after the question (the gold actions
    a teacher writes its reasoning around); the recorded trajectory's prompt does not.
    Everything else is ``env``'s.

    >>> from kgreason.envs import make_env
    >>> from kgreason.data import load_demo_kb
    >>> env = make_env("kbqa_r1", load_demo_kb())
    >>> s = KBQASample("q", "Who?")
    >>> shown = ReferencedEnv(env, "Reference: Count()").reset(s)
    >>> shown[-1]["content"].endswith("Reference: Count()"), "Reference" in env.trajectory.prompt[-1]["content"]
    (True, False)
    """

    def __init__(self, env: KGEnv, note: str):
        self._env = env
        self._note = note

    def reset(self, sample: KBQASample) -> list[dict[str, str]]:
        messages = self._env.reset(sample)
        last = messages[-1]
        return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{self._note}"}]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)
