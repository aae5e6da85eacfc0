"""KnowCoder-A1: three tools called in JSON, outcome-based rejection sampling, format + F0.5 → F1."""

from kgreason.methods import method_package
from kgreason.methods.knowcoder_a1 import rewards  # noqa: F401 - registers

__getattr__, __all__ = method_package(__name__, space=".space:KnowCoderActionSpace", gold=".teacher:gold_episode", exports={
    ".rewards": "knowcoder_format process_penalty",
    ".space": "KnowCoderActionSpace",
    ".teacher": "gold_episode ScriptedKnowCoderTeacher",
})
