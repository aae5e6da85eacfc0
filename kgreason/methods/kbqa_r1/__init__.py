"""KBQA-R1: S-expression actions with a relation gate, referenced rejection sampling, F1 + format."""

from kgreason.envs.factory import ACTION_SPACES
from kgreason.methods.kbqa_r1 import rewards  # noqa: F401 - registers
from kgreason.registry import by_module, lazy_exports
from kgreason.testing import GOLD_POLICIES

ACTION_SPACES.register_lazy("kbqa_r1", "kgreason.methods.kbqa_r1.space:KBQAR1ActionSpace")
GOLD_POLICIES.register_lazy("kbqa_r1", "kgreason.methods.kbqa_r1.teacher:gold_episode")

_EXPORTS = by_module({
    ".cold_start": "ReferencedRejectionSampledColdStart",
    ".rewards": "kbqa_r1_format tag_format",
    ".space": "KBQAR1ActionSpace reference_actions reference_note",
    ".teacher": "gold_episode ScriptedKBQAR1Teacher",
})
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
