"""Cold-start SFT data builders (the ``cold_start`` config group).

A builder is called as ``builder(train, make_env, policy) -> list[Trajectory]`` and owns
its options. :class:`ColdStart` takes care of the parts every builder shares: a seeded
subset of the training questions (``limit``) and resampling to balanced groups
(``balance``, a ``sample.meta`` key such as ``qtype``).

* :class:`NoColdStart` — RL from the model as loaded.
* :class:`RejectionSampledColdStart` — teachers play episodes, an outcome filter keeps
  some (any action space the teachers can play).

A method's own builders live in its package (``kgreason.methods.<name>.cold_start``):
KG-R1's gold-path oracle, ISP/DTPO's decomposition, KBQA-R1's referenced rejection
sampling, KG-Reasoner's error-correction pairs.
"""

from __future__ import annotations

import logging
import random
import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from kgreason.data.splits import sample_subset
from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.errors import ConfigError
from kgreason.eval.metrics import matches
from kgreason.types import KBQASample, Trajectory

log = logging.getLogger("kgreason.cold_start")

if TYPE_CHECKING:  # the protocol module loads torch; cold starts are read by the config check
    from kgreason.models.protocol import Policy


def episode_tokens(traj: Trajectory, chat_ids: Callable[[list[dict[str, str]]], list[int]], tokenizer) -> Trajectory:
    """Fill ``traj``'s token fields from its text: prompt and observations mask 0, the
    policy's turns mask 1 (in the student's tokenizer, whoever wrote the episode)."""
    traj.token_ids, traj.loss_mask, traj.turn_index = [], [], []
    traj.append_tokens(chat_ids(traj.prompt), policy=False, turn=-1)
    for k, turn in enumerate(traj.turns):
        traj.append_tokens(tokenizer(turn.text, add_special_tokens=False)["input_ids"], policy=True, turn=k)
        if turn.observation:
            traj.append_tokens(tokenizer(turn.observation, add_special_tokens=False)["input_ids"],
                               policy=False, turn=k)
    traj.check_token_fields()
    return traj



T = TypeVar("T")


def balance(items: Sequence[T], key: Callable[[T], object], seed: int = 0) -> list[T]:
    """Resample so every group (by ``key``) is as large as the median group.

    Large groups are subsampled and small ones repeated, so a training split that is half
    1-hop questions does not teach a small model to answer after one query. The result is
    shuffled.

    >>> out = balance(["a1", "a2", "a3", "a4", "b1", "c1", "c2"], key=lambda s: s[0])
    >>> sorted(s[0] for s in out)
    ['a', 'a', 'b', 'b', 'c', 'c']
    """
    rng = random.Random(seed)
    groups: dict[object, list[T]] = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    if not groups:
        return []
    target = int(statistics.median(len(g) for g in groups.values()))
    out: list[T] = []
    for g in groups.values():
        out += rng.sample(g, target) if len(g) >= target else [g[i % len(g)] for i in range(target)]
    rng.shuffle(out)
    return out


@declare(action_space=None, gold=())
class Skipped:
    """Which questions a cold start could not use, and why (``results.json``'s
    ``cold_start_report`` and one warning line).

    >>> sk = Skipped()
    >>> sk.add("no relation_path (the gold field the oracle follows)", "q1")
    >>> sk.add("whose answer is not the gold one", "q2")
    >>> sk.add("no relation_path (the gold field the oracle follows)", "q3")
    >>> print(sk.summary(5))
    3 of 5 questions not used: 2 no relation_path (the gold field the oracle follows) (q1, q3); 1 whose answer is not the gold one (q2)
    """

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {}

    def add(self, reason: str, sample_id: str) -> None:
        self.ids.setdefault(reason, []).append(sample_id)

    def __len__(self) -> int:
        return sum(map(len, self.ids.values()))

    def summary(self, questions: int) -> str:
        parts = [f"{len(ids)} {reason} ({', '.join(ids[:3])}{', …' if len(ids) > 3 else ''})"
                 for reason, ids in sorted(self.ids.items(), key=lambda kv: -len(kv[1]))]
        return f"{len(self)} of {questions} questions not used: " + "; ".join(parts)

    def as_dict(self) -> dict[str, dict[str, object]]:
        """Per reason: how many, and the first 20 question ids."""
        return {reason: {"count": len(ids), "ids": ids[:20]} for reason, ids in self.ids.items()}

    def log(self, questions: int) -> None:
        if self.ids:
            log.warning("cold start: %s", self.summary(questions))


class ColdStart:
    """Base of the cold-start builders.

    Args:
        limit: build from a seeded subset of at most this many training questions.
        balance: a ``sample.meta`` key or a sample field (``hops``); resample the
            trajectories so every group of that key is as large as the median group
            (:func:`balance`).
        seed: the subset uses ``seed + 2`` and the balancing ``seed``.
    """

    def __init__(self, limit: int | None = None, balance: str | None = None, seed: int = 0):
        self.limit = limit
        self.balance = balance
        self.seed = seed

    def __call__(self, train: Sequence[KBQASample], make_env: Callable[[], KGEnv], policy: Policy) -> list[Trajectory]:
        pool = sample_subset(train, self.limit, self.seed + 2)
        trajs = self.build(pool, make_env, policy)
        if self.balance:
            group = {s.id: s.meta.get(self.balance, getattr(s, self.balance, None)) for s in train}
            trajs = balance(trajs, key=lambda t: group[t.sample_id], seed=self.seed)
        return trajs

    def build(self, samples: Sequence[KBQASample], make_env: Callable[[], KGEnv], policy: Policy) -> list[Trajectory]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(limit={self.limit}, balance={self.balance!r})"


class NoColdStart(ColdStart):
    """No cold start: RL starts from the model as loaded."""

    def build(self, samples, make_env, policy) -> list[Trajectory]:
        return []


def grounded(traj: Trajectory) -> bool:
    """Every predicted answer was shown by an observation (by name or id): the answer
    comes from the KB, not from the writer's own knowledge (KnowCoder-A1 §4.2.1)."""
    seen = "\n".join(t.observation for t in traj.turns if t.observation)
    return bool(traj.answer) and all((a.name and a.name in seen) or a.id in seen for a in traj.answer)


class RejectionSampledColdStart(ColdStart):
    """Outcome-based rejection sampling (KnowCoder-A1 §4.2.1).

    Each teacher plays up to ``attempts`` episodes per question; an episode is kept when
    a predicted answer is a gold answer (the paper's EM) and every predicted answer is
    grounded in an observation; at most ``max_per_question`` distinct episodes are kept
    per question. ``balance`` (e.g. ``qtype``) then evens out question types.

    After a build, ``report`` holds, per teacher and question type, the episodes tried,
    accepted, repeated (the same text as a kept one) and lost to teacher errors, and the
    acceptance rate over the episodes judged (tried − repeated − errors).

    Args:
        teachers: :class:`~kgreason.training.teachers.Teacher` objects.
        attempts: episodes per question and teacher.
        max_per_question: kept episodes per question (paper: 3).
        require_grounded: the grounding filter (off: correctness alone).
    """

    def __init__(self, teachers: Sequence, attempts: int = 3, max_per_question: int = 3,
                 require_grounded: bool = True, **kw):
        super().__init__(**kw)
        if not teachers:
            raise ConfigError("RejectionSampledColdStart needs at least one teacher")
        self.teachers = list(teachers)
        self.attempts = attempts
        self.max_per_question = max_per_question
        self.require_grounded = require_grounded
        self.report: dict[str, dict[str, dict[str, float]]] = {}

    def accept(self, traj: Trajectory, sample: KBQASample) -> bool:
        hit = any(matches(a, g) for a in traj.answer for g in sample.answers)
        return hit and (grounded(traj) or not self.require_grounded)

    def play(self, teacher, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        """One teacher episode (a hook: RRS shows the teacher a reference first)."""
        return teacher.episode(env, sample, rng)

    def build(self, samples, make_env, policy) -> list[Trajectory]:
        from tqdm import tqdm

        from kgreason.training.teachers import TeacherError

        rng = random.Random(self.seed)
        counts: dict[tuple[str, str], list[int]] = {}
        out: list[Trajectory] = []
        skipped = Skipped()
        bar = tqdm(total=len(samples) * len(self.teachers) * self.attempts, desc="rejection sampling", unit="ep",
                   mininterval=2.0)
        for s in samples:
            kept: list[Trajectory] = []
            texts: set[tuple[str, ...]] = set()
            for teacher in self.teachers:
                c = counts.setdefault((teacher.name, str(s.meta.get("qtype", s.level))), [0, 0, 0, 0])
                for _ in range(self.attempts):
                    bar.update(1)
                    if len(kept) >= self.max_per_question:
                        continue
                    c[0] += 1
                    try:
                        traj = self.play(teacher, make_env(), s, rng)
                    except TeacherError:
                        c[2] += 1
                        continue
                    key = tuple(t.text for t in traj.turns)
                    if key in texts:
                        c[3] += 1  # the same episode again: not counted as a rejection
                    elif self.accept(traj, s):
                        texts.add(key)
                        kept.append(traj)
                        c[1] += 1
            if not kept:
                skipped.add("with no teacher episode accepted", s.id)
            out += [episode_tokens(t, policy.chat_ids, policy.tokenizer) for t in kept]
        bar.close()
        skipped.log(len(samples))
        self.skipped = skipped.as_dict()
        self.report = {}
        for (teacher, qtype), (tried, accepted, failed, repeats) in sorted(counts.items()):
            judged = tried - repeats - failed
            self.report.setdefault(teacher, {})[qtype] = {
                "tried": tried, "accepted": accepted, "repeats": repeats, "teacher_errors": failed,
                "rate": accepted / judged if judged else 0.0}
        if samples and not out:
            raise ConfigError(f"no teacher episode of {len(samples)} questions passed the filter; "
                              f"acceptance: {self.report}")
        return out

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.teachers)
        return f"{type(self).__name__}(teachers=[{names}], attempts={self.attempts}, limit={self.limit})"
