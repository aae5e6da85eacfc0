"""Teachers: whatever plays whole episodes from which cold-start data is sampled.

A teacher plays an episode of an environment — ``teacher.episode(env, sample, rng)``
returns the env's :class:`~kgreason.types.Trajectory` — and a rejection sampler keeps
the good ones (:class:`~kgreason.training.cold_start.RejectionSampledColdStart`). Three
kinds:

* a scripted teacher built from the gold query (per action space, e.g.
  :class:`~kgreason.methods.knowcoder_a1.teacher.ScriptedKnowCoderTeacher`);
* :class:`EngineTeacher` — any local model behind a generation engine (``HFEngine``);
* :class:`OpenAITeacher` — an OpenAI-compatible chat endpoint (a large model served
  elsewhere, e.g. by vLLM), through ``/chat/completions``.
"""

from __future__ import annotations

import json
import random
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kgreason.envs.base import KGEnv
from kgreason.errors import ConfigError, KGReasonError
from kgreason.types import KBQASample, Trajectory


class TeacherError(KGReasonError):
    """A teacher could not produce a message (endpoint down, bad reply)."""


@runtime_checkable
class Teacher(Protocol):
    """Plays one episode of ``env`` on ``sample`` and returns its trajectory."""

    name: str

    def episode(self, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory: ...


def check_probabilities(owner: str, **probs: float) -> None:
    """Raise ``ConfigError`` naming the first of a teacher's ``p_*`` arguments outside [0, 1].

    >>> check_probabilities("T", p_error=0.3)
    >>> check_probabilities("T", p_error=1.5)
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: T: p_error=1.5 is not a probability in [0, 1]
    """
    for key, p in probs.items():
        if not 0.0 <= p <= 1.0:
            raise ConfigError(f"{owner}: {key}={p!r} is not a probability in [0, 1]")


def check_needs(owner: str, *rules: tuple[str, bool, str, bool]) -> None:
    """Raise ``ConfigError`` for the first option that is on while the one it rewrites is
    off: each rule is ``(option, its value, the option it needs, that one's value)``. Alone,
    such an option would be silently ignored and a run would measure the teacher without it.

    >>> check_needs("T", ("hops_only", False, "plan_hops", False))
    >>> check_needs("T", ("hops_only", True, "plan_hops", False))
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: T: hops_only=True needs plan_hops=True (got plan_hops=False)
    """
    for key, on, needs, has in rules:
        if on and not has:
            raise ConfigError(f"{owner}: {key}=True needs {needs}=True (got {needs}={has!r})")


def hop_at(first: int, last: int, n_hops: int) -> str:
    """Where a thought is on a planned path of ``n_hops`` (hops ``first..last``, from 0): the
    prefix with which scripted teachers that plan their hops open each later thought.

    >>> hop_at(0, 0, 2), hop_at(1, 2, 3), hop_at(0, 0, 0)
    ('Hop 1 of 2: ', 'Hops 2-3 of 3: ', '')
    """
    if n_hops <= 0:
        return ""
    if first >= last:
        return f"Hop {first + 1} of {n_hops}: "
    return f"Hops {first + 1}-{last + 1} of {n_hops}: "


def close_tags(text: str, stops: Sequence[str]) -> str:
    """Append the closing tag an API stripped: OpenAI-style endpoints cut the stop string.

    >>> close_tags('<think>x</think><tool_call>{"name": "f"}', ["</tool_call>", "</answer>"])
    '<think>x</think><tool_call>{"name": "f"}</tool_call>'
    >>> close_tags("<answer>A</answer>", ["</answer>"])
    '<answer>A</answer>'
    """
    for stop in stops:
        if stop.startswith("</"):
            opening = "<" + stop[2:]
            if text.rfind(opening) > text.rfind(stop):
                return text + stop
    return text


class ChatTeacher:
    """A teacher that asks a chat model for every turn (subclasses say how).

    Observations go back as user messages, so any chat model can play.
    """

    name = "chat"

    def complete(self, messages: list[dict[str, str]], stop: Sequence[str], rng: random.Random) -> str:
        raise NotImplementedError

    def episode(self, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        messages = list(env.reset(sample))
        while not env.done:
            text = close_tags(self.complete(messages, env.stop_sequences, rng), env.stop_sequences)
            r = env.step(text)
            messages.append({"role": "assistant", "content": text})
            if not r.done:
                messages.append({"role": "user", "content": r.observation.strip()})
        assert env.trajectory is not None
        return env.trajectory


class EngineTeacher(ChatTeacher):
    """A local model behind an :class:`~kgreason.rollout.Engine` (e.g. ``HFEngine`` over
    a larger checkpoint than the policy).

    Args:
        engine: generates continuations of token ids.
        chat_ids: messages → prompt token ids (the teacher's own chat template).
        max_new_tokens: per turn.
    """

    def __init__(self, engine, chat_ids, max_new_tokens: int = 256, name: str = "engine"):
        self.engine = engine
        self.chat_ids = chat_ids
        self.max_new_tokens = max_new_tokens
        self.name = name

    def complete(self, messages: list[dict[str, str]], stop: Sequence[str], rng: random.Random) -> str:
        (gen,) = self.engine.generate([self.chat_ids(messages)], stop=list(stop), max_new_tokens=self.max_new_tokens)
        return gen.text


class OpenAITeacher(ChatTeacher):
    """An OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model's name.
        api_key: sent as a bearer token when given.
        temperature, max_tokens, timeout_s: per request.

    Raises (from :meth:`complete`):
        TeacherError: the endpoint is unreachable, answers with an error, or not with a
            chat completion.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, temperature: float = 1.0,
                 max_tokens: int = 512, timeout_s: float = 60.0, name: str | None = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.name = name or f"openai:{model}"

    def complete(self, messages: list[dict[str, str]], stop: Sequence[str], rng: random.Random) -> str:
        body = {"model": self.model, "messages": messages, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "stop": list(stop)[:4], "seed": rng.randrange(2**31)}
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                reply = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raise TeacherError(f"{self.url} answered HTTP {e.code}: {e.read()[:200]!r}") from e
        except (urllib.error.URLError, TimeoutError, OSError) as e:
            raise TeacherError(f"{self.url} is unreachable: {e}") from e
        except ValueError as e:
            raise TeacherError(f"{self.url} did not answer with JSON: {e}") from e
        try:
            return reply["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError) as e:
            raise TeacherError(f"{self.url} answered without choices[0].message.content: {str(reply)[:200]}") from e

    def __repr__(self) -> str:
        return f"OpenAITeacher({self.url!r}, model={self.model!r})"
