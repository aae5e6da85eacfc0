"""KG-Reasoner: search inside one thought, a GAT entity ranker, backtracking, error-correction pairs."""

from kgreason.envs.factory import ACTION_SPACES
from kgreason.methods.kg_reasoner import rewards  # noqa: F401 - registers
from kgreason.registry import by_module, lazy_exports
from kgreason.testing import GOLD_POLICIES

ACTION_SPACES.register_lazy("kg_reasoner", "kgreason.methods.kg_reasoner.space:KGReasonerActionSpace")
GOLD_POLICIES.register_lazy("kg_reasoner", "kgreason.methods.kg_reasoner.teacher:gold_episode")

_EXPORTS = by_module({
    ".path_tree": "PathTree",
    ".rewards": "kg_reasoner_format kg_reasoner_retrieval",
    ".space": "KGReasonerActionSpace",
    ".teacher": "gold_episode KGReasonerColdStart",
})
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
