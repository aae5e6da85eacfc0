"""KBQA-R1's cold start: Referenced Rejection Sampling (§IV-B1)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.errors import ConfigError
from kgreason.eval import f1
from kgreason.training.cold_start import RejectionSampledColdStart
from kgreason.types import KBQASample, Trajectory

#: how a teacher is shown the gold actions
REFERENCES = ("stepwise", "all", "none")


@declare(action_space="kbqa_r1", gold=("sexpr", "relation_path"))
class ReferencedRejectionSampledColdStart(RejectionSampledColdStart):
    """Referenced Rejection Sampling, RRS (KBQA-R1 §IV-B1).

    The teacher sees the gold action sequence (:func:`~kgreason.methods.kbqa_r1.space.reference_actions`
    of the question's S-expression) and writes the reasoning around it; the reference is
    not part of the kept trajectory (:class:`~kgreason.methods.kbqa_r1.reference.ReferencedEnv`).
    Episodes are kept when the answer's F1 is at least ``min_f1`` and every turn keeps the
    tag format.

    Args:
        teachers: :class:`~kgreason.training.teachers.Teacher` objects.
        reference: ``"stepwise"``: each message names the next gold action (the paper,
            §IV-B1 step 2); ``"all"``: the whole sequence after the question, so a
            teacher's first thought can name the steps after it; ``"none"``: standard
            rejection sampling, Table VII's baseline.
        min_f1: the outcome filter τ (paper: F1 > 0.9).
        require_format: the format filter (every turn well-tagged, an answer at the end).
        **kw: :class:`RejectionSampledColdStart` options (``attempts``,
            ``max_per_question``, ``balance``, ``limit``, ``seed``).
    """

    def __init__(self, teachers: Sequence, reference: str = "stepwise", min_f1: float = 0.9,
                 require_format: bool = True, **kw):
        if reference not in REFERENCES:
            raise ConfigError(f"cold_start.reference={reference!r}: choose one of {', '.join(REFERENCES)}")
        kw.setdefault("require_grounded", False)
        super().__init__(teachers, **kw)
        self.reference = reference
        self.min_f1 = min_f1
        self.require_format = require_format

    def play(self, teacher, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        from kgreason.methods.kbqa_r1.reference import ReferencedEnv
        from kgreason.methods.kbqa_r1.space import reference_note, reference_plan

        if self.reference == "stepwise" and (steps := reference_plan(sample)):
            return teacher.episode(ReferencedEnv(env, steps=steps), sample, rng)
        note = reference_note(sample) if self.reference == "all" else None
        return teacher.episode(ReferencedEnv(env, note) if note else env, sample, rng)

    def accept(self, traj: Trajectory, sample: KBQASample) -> bool:
        from kgreason.methods.kbqa_r1.rewards import tag_format

        if f1(traj.answer, sample.answers) < self.min_f1:
            return False
        return not self.require_format or tag_format(traj)[0]

    def __repr__(self) -> str:
        names = ", ".join(t.name for t in self.teachers)
        return (f"{type(self).__name__}(teachers=[{names}], reference={self.reference}, min_f1={self.min_f1}, "
                f"limit={self.limit})")
