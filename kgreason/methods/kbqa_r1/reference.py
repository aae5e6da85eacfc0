"""The reference of Referenced Rejection Sampling (KBQA-R1 §IV-B1): shown to a teacher,
never kept in the episode."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kgreason.envs.base import KGEnv, StepResult
from kgreason.types import KBQASample

#: how a step-wise reference names the next gold action (teachers read it back)
STEP_NOTE = "Reference action for step {n}: {action}"
#: what a step-wise reference says once the gold actions are used up
DONE_NOTE = "Reference: every reference action is done; answer from the last result."


class ReferencedEnv:
    """``env`` whose messages carry the gold actions a teacher writes its reasoning
    around; the recorded trajectory carries none of it. Everything else is ``env``'s.

    Step-wise (``steps`` given, the paper's §IV-B1 step 2: "at each step t, the prompt
    includes the next ground-truth action a*_t"): the opening message names the first
    action and each observation the next. Otherwise ``note`` (every action at once) follows
    the question.

    >>> from kgreason.envs import make_env
    >>> from kgreason.data import load_demo_kb
    >>> env = make_env("kbqa_r1", load_demo_kb())
    >>> s = KBQASample("q", "Who?")
    >>> shown = ReferencedEnv(env, "Reference: Count()").reset(s)
    >>> shown[-1]["content"].endswith("Reference: Count()"), "Reference" in env.trajectory.prompt[-1]["content"]
    (True, False)
    >>> stepwise = ReferencedEnv(env, steps=["Find_relation(m.1, a.b.c)", "Count(expression1)"])
    >>> stepwise.reset(s)[-1]["content"].splitlines()[-1]
    'Reference action for step 1: Find_relation(m.1, a.b.c)'
    >>> r = stepwise.step("<think>t</think><action>Find_relation(m.1, a.b.c)</action>")
    >>> r.observation.strip().splitlines()[-1], "Reference" in env.trajectory.turns[-1].observation
    ('Reference action for step 2: Count(expression1)', False)
    """

    def __init__(self, env: KGEnv, note: str | None = None, steps: Sequence[str] | None = None):
        if (note is None) == (steps is None):
            raise ValueError("give the reference either as one note or as steps")
        self._env = env
        self._note = note
        self._steps = list(steps) if steps is not None else None

    def _next(self, done: int) -> str:
        assert self._steps is not None
        if done < len(self._steps):
            return STEP_NOTE.format(n=done + 1, action=self._steps[done])
        return DONE_NOTE

    def reset(self, sample: KBQASample) -> list[dict[str, str]]:
        messages = self._env.reset(sample)
        last = messages[-1]
        note = self._note if self._steps is None else self._next(0)
        return [*messages[:-1], {**last, "content": f"{last['content']}\n\n{note}"}]

    def step(self, policy_text: str) -> StepResult:
        r = self._env.step(policy_text)
        if self._steps is None or r.done:
            return r
        # a copy: the environment recorded the observation without the reference
        return replace(r, observation=f"{r.observation.rstrip()}\n\n{self._next(r.turn)}\n\n")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)
