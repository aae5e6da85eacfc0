"""KBQA-R1: S-expression actions with a relation gate, referenced rejection sampling, F1 + format."""

from kgreason.methods import method_package
from kgreason.methods.kbqa_r1 import rewards  # noqa: F401 - registers

__getattr__, __all__ = method_package(__name__, space=".space:KBQAR1ActionSpace", gold=".teacher:gold_episode", exports={
    ".cold_start": "ReferencedRejectionSampledColdStart",
    ".rewards": "kbqa_r1_format tag_format",
    ".space": "KBQAR1ActionSpace reference_actions reference_note reference_plan",
    ".teacher": "gold_episode ScriptedKBQAR1Teacher",
})
