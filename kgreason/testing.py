"""``check_env``: checks any :class:`~kgreason.envs.KGEnv` against the contract (design §4, docs/design.md).

Use it on a new action space before training with it::

    from kgreason.testing import check_env
    check_env(make_env("kg_r1", kb), sample)
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from kgreason.envs.base import KGEnv, ParseError, StepResult
from kgreason.errors import EnvError
from kgreason.registry import Registry
from kgreason.types import Entity, KBQASample, Trajectory

#: action-space name → its scripted gold policy ``(env, sample, rng) -> Trajectory | None``:
#: a method's own player of gold episodes (``None``: the question has no gold it can play),
#: what the mixing matrix and ``check_env`` users play a composition with
GOLD_POLICIES: Registry[Callable[..., Trajectory | None]] = Registry("gold policy")

HOSTILE = [
    "",
    "<kg-query></kg-query>",
    "<kg-query>get_tail_relations(\"m.x> . ?s ?p ?o . <x\")</kg-query>",
    "<kg-query>get_tail_entities('\"} DELETE WHERE { ?s ?p ?o } #', \"r\")</kg-query>",
    "<node>\"; DROP GRAPH <x></node>",
    "<sparql>DELETE WHERE { ?s ?p ?o }</sparql>",
    "<tool_call>{\"name\": \"ExecuteSPARQL\", \"arguments\": {\"sparql\": \"INSERT DATA { <a> <b> <c> }\"}}</tool_call>",
    "\x00\uffff" * 50,
]


class EnvContractError(AssertionError):
    """The environment breaks the contract; the message lists every failure."""


def check_env(env: KGEnv, sample: KBQASample | None = None, answer: str = "unknown") -> None:
    """Run the contract checks on ``env`` (it is reset several times).

    Checks: prompts and stop sequences; ``step`` before ``reset`` and after ``done``
    raise :class:`EnvError`; malformed and hostile messages come back as observations
    with an error code (never an exception) and do not end the episode; an answer ends
    it with resolved :class:`Entity` answers; the last turn forces the end; observations
    respect the token budget; the trajectory records every turn.

    Raises:
        EnvContractError: listing every failed check.
    """
    sample = sample or KBQASample(id="check-env", question="What is this?",
                                  topic_entities=[Entity("x", "x")], answers=[Entity("x", "x")])
    fails: list[str] = []

    def expect(cond: bool, msg: str) -> None:
        if not cond:
            fails.append(msg)

    expect(bool(env.stop_sequences) and all(isinstance(s, str) and s for s in env.stop_sequences),
           "stop_sequences must be a non-empty tuple of non-empty strings")
    expect(bool(env.action_space.instructions().strip()), "instructions() is empty")

    fresh = copy.copy(env)
    fresh.state = None
    fresh.trajectory = None
    try:
        fresh.step("hello")
        fails.append("step() before reset() did not raise EnvError")
    except EnvError:
        pass

    msgs = env.reset(sample)
    expect(isinstance(msgs, list) and bool(msgs), "reset() must return a non-empty list of messages")
    expect(all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
               for m in msgs), "messages must be {'role': str, 'content': str}")
    expect(sample.question.strip() in "".join(m["content"] for m in msgs), "the question is not in the prompt")

    # Malformed and hostile input: typed errors as observations, never crashes.
    # A space may end the episode on a message that is no action (``ends_episode``, e.g.
    # KnowCoder-A1's official loop): such an end must carry the error code, and a fresh
    # episode takes the next message.
    def designed_end(r: StepResult) -> bool:
        return bool(r.done and r.error and env.action_space.ends_episode(ParseError(r.error, "")))

    budget_slack = 64
    n_steps = 0
    for text in HOSTILE[: max(1, env.max_turns - 1)]:
        try:
            r = env.step(text)
        except Exception as e:  # noqa: BLE001 - the check reports any crash
            fails.append(f"step({text[:40]!r}) raised {type(e).__name__}: {e}")
            break
        n_steps += 1
        expect(isinstance(r, StepResult), "step() must return a StepResult")
        expect(bool(r.error), f"malformed message {text[:40]!r} gave no error code")
        if r.done and not designed_end(r):
            fails.append(f"malformed message {text[:40]!r} ended the episode")
            break
        expect(env.count_tokens(r.observation) <= env.max_obs_tokens + budget_slack,
               f"observation over budget ({env.count_tokens(r.observation)} tokens)")
        expect(env.trajectory is not None and len(env.trajectory.turns) == n_steps,
               "the trajectory must record one Turn per step")
        if r.done:
            env.reset(sample)
            n_steps = 0

    env.reset(sample)
    r = env.step(f"<think>done</think><answer>{answer}</answer>")
    expect(r.done, "an <answer> must end the episode")
    expect(r.observation == "", "a finished step must have an empty observation")
    expect(isinstance(r.answer, list) and all(isinstance(a, Entity) for a in r.answer),
           "StepResult.answer must be a list of Entity")
    try:
        env.step("again")
        fails.append("step() after done did not raise EnvError")
    except EnvError:
        pass

    env.reset(sample)
    last = None
    for _ in range(env.max_turns):
        last = env.step("<think>still thinking</think>")
        if last.done:
            break
    expect(last is not None and last.done and env.state is not None
           and (env.state.turn == env.max_turns or designed_end(last)),
           "the episode must end at max_turns (forced final answer)")

    if fails:
        raise EnvContractError("env contract violated:\n- " + "\n- ".join(fails))
