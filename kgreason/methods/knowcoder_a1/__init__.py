"""KnowCoder-A1: three tools called in JSON, outcome-based rejection sampling, format + F0.5 → F1."""

from kgreason.envs.factory import ACTION_SPACES
from kgreason.methods.knowcoder_a1 import rewards  # noqa: F401 - registers
from kgreason.registry import by_module, lazy_exports
from kgreason.testing import GOLD_POLICIES

ACTION_SPACES.register_lazy("knowcoder_a1", "kgreason.methods.knowcoder_a1.space:KnowCoderActionSpace")
GOLD_POLICIES.register_lazy("knowcoder_a1", "kgreason.methods.knowcoder_a1.teacher:gold_episode")

_EXPORTS = by_module({
    ".rewards": "knowcoder_format process_penalty",
    ".space": "KnowCoderActionSpace",
    ".teacher": "gold_episode ScriptedKnowCoderTeacher",
})
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
