"""The environment contract (design §4, docs/design.md): action spaces and the multi-turn KG environment.

``KGEnv.reset/step`` are the public template methods: they validate calls, count turns,
force the final answer, resolve answers and record the :class:`Trajectory`; subclasses
and action spaces only implement ``_reset/_step`` and ``parse/execute``.
"""

from __future__ import annotations

import abc
import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from kgreason.declarations import declare
from kgreason.envs.text import TokenCounter, approx_tokens, boxed, last_tag, split_answer
from kgreason.envs.tools import ToolSpec
from kgreason.errors import EnvError, KBError, KBQueryError
from kgreason.kb.base import KnowledgeBase
from kgreason.types import Action, Entity, KBQASample, Observation, Trajectory, Turn

ANSWER_KB_ERROR = "ANSWER_KB_ERROR"  # the answer step could not ask the KB; its strings stay literal
MAX_ANSWER_LOOKUPS = 64  # KB look-ups one answer may cost (names already shown are free)
OBS_FRAME_TOKENS = 64  # header and notes an observation may add on top of its budgeted result list


@dataclass(frozen=True)
class ParseError:
    """A policy message that is not a valid action: returned by ``parse``, never raised."""

    code: str
    message: str


@dataclass(slots=True)
class StepResult:
    """What :meth:`KGEnv.step` returns.

    Attributes:
        observation: the exact text to append to the context after the policy's message
            (empty once ``done``).
        done: the episode ended (an answer, or the forced final turn).
        error: the step's first error code, or None; ``errors`` all of them.
        actions: the parsed actions (empty for an answer or a parse error).
        kb_calls: KB queries the step made.
        entities, relations: what the observation revealed.
        payloads: one typed payload (:mod:`kgreason.envs.payloads`) or None per action.
        answer_text, answer: the raw and the resolved final answer (``answer_text`` is
            None until the policy answers).
        turn: the turn number (1-based).
        last_turn_next: the next turn is the last (the observation says so).
        forced: the turn limit ended the episode without an answer.
    """

    observation: str
    done: bool
    error: str | None = None
    errors: Sequence[str] = ()
    actions: Sequence[Action] = ()
    kb_calls: int = 0
    entities: Sequence[str] = ()
    relations: Sequence[str] = ()
    payloads: Sequence[Any] = ()
    answer_text: str | None = None
    answer: list[Entity] = field(default_factory=list)
    turn: int = 0
    last_turn_next: bool = False
    forced: bool = False

    @property
    def answered(self) -> bool:
        return self.answer_text is not None


S = TypeVar("S")


@dataclass
class EpisodeState:
    """Per-episode state shared by env and action space.

    Attributes:
        sample: the question.
        kb: the KB this episode asks (an action space may narrow it to the question's
            subgraph in :meth:`ActionSpace.init_state`).
        turn, done: the turn number and whether the episode ended.
        issued: queries issued so far.
        space_state: the action space's own typed state (its tree, bound variables,
            expressions), set by its ``init_state``; read it with :meth:`of`.
    """

    sample: KBQASample
    kb: KnowledgeBase
    turn: int = 0
    done: bool = False
    issued: set[str] = field(default_factory=set)
    space_state: Any = None
    _known: dict[str, list[str]] = field(default_factory=dict, repr=False)
    #: self-named ids shown but not yet indexed (see :meth:`remember_self_named`)
    _pending: list[tuple[str, ...]] = field(default_factory=list, repr=False)

    def of(self, kind: type[S]) -> S:
        """The action space's state, checked to be a ``kind`` (a teacher or reward written
        for one space gets a clear error, not a ``KeyError``, on another).

        >>> st = EpisodeState(KBQASample("q", "?"), kb=None, space_state=[1])
        >>> st.of(list)
        [1]
        >>> st.of(dict)
        Traceback (most recent call last):
        ...
        kgreason.errors.EnvError: this episode's action-space state is a list, not a dict: a part written for another action space was given this one
        """
        if not isinstance(self.space_state, kind):
            raise EnvError(f"this episode's action-space state is a {type(self.space_state).__name__}, not a "
                           f"{kind.__name__}: a part written for another action space was given this one")
        return self.space_state

    @property
    def known(self) -> dict[str, list[str]]:
        """Names the agent has seen (topic entities, observations) → KB ids."""
        if self._pending:
            self._flush()
        return self._known

    def _flush(self) -> None:
        pending, self._pending = self._pending, []
        for values in pending:
            for v in values:
                self.remember(v, v)

    def remember_self_named(self, values: tuple[str, ...]) -> None:
        """Remember ids that are their own names (MetaQA-style KBs), indexed when
        :attr:`known` is next read: most results are never named back, and a step then
        pays one append instead of two dict updates per entity."""
        self._pending.append(values)

    def remember(self, name: str, id_: str) -> None:
        if self._pending:  # keep the order in which names were seen
            self._flush()
        known = self._known
        ids = known.get(name)
        if ids is None:
            known[name] = [id_]
        elif id_ not in ids:
            ids.append(id_)
        low = name.lower()
        if low != name:  # a lower-case alias, so "paris" finds what "Paris" named
            ids = known.get(low)
            if ids is None:
                known[low] = [id_]
            elif id_ not in ids:
                ids.append(id_)


@declare(ranks=None, contexts=())
class ActionSpace(abc.ABC):
    """Tags, tools and their execution for one method.

    Subclasses set ``name``, ``stop_sequences`` and ``tools`` and implement the abstract
    methods.
    """

    name: str = ""
    stop_sequences: tuple[str, ...] = ()
    answer_tag = "answer"
    #: the declared tools (names, arguments, descriptions) the prompt and parser share
    tools: ToolSpec = ToolSpec(())

    @abc.abstractmethod
    def instructions(self) -> str:
        """The tool description included in the prompt."""

    @abc.abstractmethod
    def prompt(self, sample: KBQASample, max_turns: int) -> list[dict[str, str]]:
        """Chat messages that open an episode."""

    @abc.abstractmethod
    def parse(self, text: str) -> list[Action] | ParseError:
        """Actions in a policy message (``[]`` when it only answers)."""

    @abc.abstractmethod
    def execute(self, action: Action, state: EpisodeState) -> Observation:
        """Run one action; errors come back as an ``Observation`` with ``error`` set."""

    def format_observation(self, obs: Sequence[Observation]) -> str:
        """Wrap observations for the context (default: one ``<information>`` block)."""
        body = obs[0].text if len(obs) == 1 else "\n".join(o.text for o in obs)
        return "\n\n<information>" + body + "</information>\n\n"

    def extract_answer(self, text: str) -> str | None:
        """Raw answer text: ``<answer>``, then ``\\boxed{}`` inside it or alone."""
        if f"<{self.answer_tag}>" in text:  # the regexes only when the tag is there
            ans = last_tag(text, self.answer_tag)
            if ans is not None:
                # a box cut off by the token budget: what was written in it, not the box's
                # opening glued to the first answer
                inner = boxed(ans, unclosed=True)
                return inner if inner is not None else ans
        return boxed(text)

    def format_ok(self, text: str) -> bool:
        """Whether one policy message follows this space's grammar (format rewards ask
        this instead of re-implementing the tags; default: it answers or parses)."""
        return self.extract_answer(text) is not None or not isinstance(self.parse(text), ParseError)

    def response_format_ok(self, texts: Sequence[str]) -> bool:
        """Whether a whole response (the policy's messages of one episode, in order)
        follows the grammar (default: every message does)."""
        return bool(texts) and all(self.format_ok(t) for t in texts)

    def init_state(self, state: EpisodeState) -> None:  # noqa: B027 - optional hook
        """Prepare per-episode state: set ``state.space_state`` to this space's typed state,
        narrow ``state.kb`` to the sample's subgraph."""

    def last_turn_note(self) -> str:
        return "This is your last turn: give your final answer inside <answer>...</answer> now."

    def answer_after_actions(self, state: EpisodeState) -> str | None:
        """The answer an episode ends with once a message's actions have run, for spaces
        whose actions are the whole answer (KBQA-R1's single-turn ablation); None (the
        default): observations come back and the policy answers itself."""
        return None

    def ends_episode(self, error: ParseError) -> bool:
        """Whether an unreadable message ends the episode unanswered instead of coming back
        as an error observation for another try (default: it comes back)."""
        return False


class KGEnv:
    """A multi-turn environment over one KB and one action space.

    Args:
        action_space: the method's tags and tools.
        kb: the knowledge base (global, or holding per-question subgraphs).
        max_turns: H; on turn H only an answer is accepted (forced final answer).
        max_obs_tokens: budget of an observation's result list (the space ends a longer one
            with "… N more"); the whole observation, header and notes included, is cut at
            ``max_obs_tokens + OBS_FRAME_TOKENS``.
        count_tokens: token counter for budgets (a tokenizer's, or an estimate).
        resolve_answers: map answer strings to KB ids where the KB knows them.
    """

    def __init__(self, action_space: ActionSpace, kb: KnowledgeBase, max_turns: int = 5,
                 max_obs_tokens: int = 512, count_tokens: TokenCounter = approx_tokens,
                 resolve_answers: bool = True):
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.action_space = action_space
        self.kb = kb
        self.max_turns = max_turns
        self.max_obs_tokens = max_obs_tokens
        self.count_tokens = count_tokens
        self.resolve_answers = resolve_answers
        self.state: EpisodeState | None = None
        self.trajectory: Trajectory | None = None

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        return self.action_space.stop_sequences

    # ---------------------------------------------------------------- public
    def reset(self, sample: KBQASample) -> list[dict[str, str]]:
        """Start an episode on ``sample``; returns the opening chat messages."""
        if not isinstance(sample, KBQASample):
            raise EnvError(f"reset expects a KBQASample, got {type(sample).__name__}")
        self.state = EpisodeState(sample=sample, kb=self.kb)
        for e in sample.topic_entities:
            self.state.remember(e.id, e.id)
            if e.name:
                self.state.remember(e.name, e.id)
        messages = self._reset(sample)
        self.trajectory = Trajectory(sample_id=sample.id, prompt=messages)
        return messages

    def step(self, policy_text: str) -> StepResult:
        """Advance one turn with the policy's message."""
        if self.state is None or self.trajectory is None:
            raise EnvError("step() called before reset()")
        if self.state.done:
            raise EnvError("step() called on a finished episode; call reset()")
        if not isinstance(policy_text, str):
            raise EnvError(f"step expects the policy's text, got {type(policy_text).__name__}")
        if not policy_text.isascii():
            try:
                policy_text.encode("utf-8")
            except UnicodeEncodeError:
                # decoded model output never holds lone surrogates, fuzzed text can: every KB,
                # tokenizer and log downstream needs valid UTF-8
                policy_text = policy_text.encode("utf-8", "replace").decode("utf-8")
        state = self.state
        state.turn += 1
        t0 = time.perf_counter()
        result = self._step(policy_text)
        obs = result.observation
        # the spaces hold their result lists to the budget and add a header and notes; this
        # catches what they echo back (a 1 MB name in the header)
        cap = self.max_obs_tokens + OBS_FRAME_TOKENS
        if len(obs) > cap and self.count_tokens(obs) > cap:
            result.observation = self._cut(obs, cap)
        if state.turn >= self.max_turns and not result.done:
            # Forced final answer: the last turn executes no query.
            result = replace(result, observation="", done=True, error=result.error or "NO_ANSWER", forced=True)
        if result.done:
            state.done = True
            result.observation = ""
        elif state.turn + 1 >= self.max_turns:
            result.observation = result.observation.rstrip("\n") + "\n" + self.action_space.last_turn_note() + "\n\n"
            result.last_turn_next = True
        result.turn = state.turn
        self.trajectory.turns.append(Turn(
            # the step's own sequences: no copies on this path (env overhead target)
            text=policy_text, actions=result.actions, observation=result.observation,  # type: ignore[arg-type]
            error=result.error, entities=result.entities, relations=result.relations,  # type: ignore[arg-type]
            is_answer=result.answer_text is not None, kb_calls=result.kb_calls,
            env_time_s=time.perf_counter() - t0,
        ))
        if result.done:
            self.trajectory.answer_text = result.answer_text
            self.trajectory.answer = result.answer
        return result

    def _cut(self, obs: str, budget: int) -> str:
        cut = obs[: 4 * budget]
        while cut and self.count_tokens(cut) > budget:
            cut = cut[: len(cut) * 3 // 4]
        return f"{cut}\n… [observation cut at {budget} tokens]\n"

    def fork(self) -> KGEnv:
        """An independent copy of the running episode, for tree rollouts.

        The KB, action space and sample are shared; the episode state (known names,
        issued queries, bound variables) and the trajectory so far are copied, so
        stepping the fork leaves this env untouched.
        """
        if self.state is None or self.trajectory is None:
            raise EnvError("fork() called before reset()")
        twin = copy.copy(self)
        shared: dict[int, Any] = {id(self.kb): self.kb, id(self.state.sample): self.state.sample,
                                  id(self.action_space): self.action_space}
        shared[id(self.state.kb)] = self.state.kb  # a question's subgraph, when the space narrowed it
        twin.state = copy.deepcopy(self.state, memo=dict(shared))
        twin.trajectory = copy.deepcopy(self.trajectory)
        return twin

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.done

    # --------------------------------------------------------------- hooks
    def _reset(self, sample: KBQASample) -> list[dict[str, str]]:
        assert self.state is not None
        self.action_space.init_state(self.state)
        return self.action_space.prompt(sample, self.max_turns)

    def _step(self, text: str) -> StepResult:
        assert self.state is not None
        space = self.action_space
        answer = space.extract_answer(text)
        parsed = space.parse(text)
        if answer is not None and (isinstance(parsed, ParseError) or not parsed):
            resolved, failure = self._resolve(answer)
            return StepResult("", True, answer_text=answer, answer=resolved, error=failure,
                              errors=(failure,) if failure else ())
        if isinstance(parsed, ParseError):
            if space.ends_episode(parsed):
                return StepResult("", True, error=parsed.code, errors=(parsed.code,))
            obs = Observation(parsed.message, error=parsed.code)
            return StepResult(space.format_observation([obs]), False, error=parsed.code, errors=(parsed.code,))
        # this runs on every turn (env overhead target): one action is the common case
        if len(parsed) == 1:
            o = space.execute(parsed[0], self.state)
            # the Observation is this step's own: its lists need no copy
            return self._after_actions(StepResult(
                space.format_observation([o]), False, error=o.error, errors=(o.error,) if o.error else (),
                actions=parsed, kb_calls=o.kb_calls, entities=o.entities, relations=o.relations,
                payloads=(o.payload,)))
        observations = [space.execute(a, self.state) for a in parsed]
        errors: list[str] = []
        entities: list[str] = []
        relations: list[str] = []
        kb_calls = 0
        for o in observations:
            if o.error:
                errors.append(o.error)
            entities += o.entities
            relations += o.relations
            kb_calls += o.kb_calls
        return self._after_actions(StepResult(
            space.format_observation(observations), False, error=errors[0] if errors else None, errors=errors,
            actions=parsed, kb_calls=kb_calls, entities=entities, relations=relations,
            payloads=[o.payload for o in observations]))

    def _after_actions(self, result: StepResult) -> StepResult:
        """``result``, or the episode's end when the space reads the answer off its actions'
        results (:meth:`ActionSpace.answer_after_actions`)."""
        assert self.state is not None
        answer = self.action_space.answer_after_actions(self.state)
        if answer is None:
            return result
        resolved, failure = self._resolve(answer)
        errors = [*result.errors, *([failure] if failure else [])]
        return replace(result, observation="", done=True, answer_text=answer, answer=resolved,
                       error=errors[0] if errors else None, errors=errors)

    # ------------------------------------------------------------ answers
    def resolve(self, answer_text: str) -> list[Entity]:
        """Split an answer string and map each part to a KB id where possible.

        Names the agent saw in this episode win over a global look-up (so "Paris" means
        the Paris it was shown); unknown strings stay as literal answers.
        """
        return self._resolve(answer_text)[0]

    def _resolve(self, answer_text: str) -> tuple[list[Entity], str | None]:
        """:meth:`resolve`, and ``ANSWER_KB_ERROR`` when the KB timed out or went away
        (the first failure ends the look-ups: a hung KB costs one timeout, not one per part)."""
        assert self.state is not None
        state = self.state

        cache: dict[str, list[str]] = {}
        failure: list[KBError] = []

        def lookup(s: str) -> list[str]:
            if s not in cache:
                if not self.resolve_answers or failure or len(cache) >= MAX_ANSWER_LOOKUPS:
                    return []
                try:
                    cache[s] = self.kb.lookup(s)
                except KBQueryError:  # this string only (e.g. one the engine cannot take)
                    cache[s] = []
                except KBError as e:  # KBTimeout, KBUnavailable: the KB, not the string
                    failure.append(e)
                    return []
            return cache[s]

        def known(s: str) -> bool:
            # Comma-joined candidates ("Washington, D.C.") may be names never shown.
            return s in state.known or s.lower() in state.known or ("," in s and bool(lookup(s)))

        parts = split_answer(answer_text, is_known=known)
        out: list[Entity] = []
        for p in parts:
            ids = state.known.get(p) or state.known.get(p.lower()) or lookup(p)
            out.append(Entity(ids[0], p) if ids else Entity(p, p))
        return out, ANSWER_KB_ERROR if failure else None
