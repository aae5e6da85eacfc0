"""KBQA-R1's cold start: Referenced Rejection Sampling (§IV-B1)."""

from __future__ import annotations

import random
from collections.abc import Sequence

from kgreason.declarations import declare
from kgreason.envs.base import KGEnv
from kgreason.eval import f1
from kgreason.training.cold_start import RejectionSampledColdStart
from kgreason.types import KBQASample, Trajectory


@declare(action_space="kbqa_r1", gold=("sexpr", "relation_path"))
class ReferencedRejectionSampledColdStart(RejectionSampledColdStart):
    """Referenced Rejection Sampling, RRS (KBQA-R1 §IV-B1).

    The teacher sees the gold action sequence (:func:`~kgreason.methods.kbqa_r1.space.reference_actions`
    of the question's S-expression) after the prompt and writes the reasoning around it;
    the reference is not part of the kept trajectory (:class:`~kgreason.methods.kbqa_r1.reference.ReferencedEnv`). Episodes
    are kept when the answer's F1 is at least ``min_f1`` and every turn keeps the tag
    format. ``reference=False`` is standard rejection sampling, the paper's Table VII
    baseline.

    Args:
        teachers: :class:`~kgreason.training.teachers.Teacher` objects.
        reference: show the gold actions.
        min_f1: the outcome filter τ (paper: F1 > 0.9).
        require_format: the format filter (every turn well-tagged, an answer at the end).
        **kw: :class:`RejectionSampledColdStart` options (``attempts``,
            ``max_per_question``, ``balance``, ``limit``, ``seed``).
    """

    def __init__(self, teachers: Sequence, reference: bool = True, min_f1: float = 0.9,
                 require_format: bool = True, **kw):
        kw.setdefault("require_grounded", False)
        super().__init__(teachers, **kw)
        self.reference = reference
        self.min_f1 = min_f1
        self.require_format = require_format

    def play(self, teacher, env: KGEnv, sample: KBQASample, rng: random.Random) -> Trajectory:
        from kgreason.methods.kbqa_r1.reference import ReferencedEnv
        from kgreason.methods.kbqa_r1.space import reference_note

        note = reference_note(sample) if self.reference else None
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
