"""KG-Reasoner: search inside one thought, a GAT entity ranker, backtracking, error-correction pairs."""

from kgreason.methods import method_package
from kgreason.methods.kg_reasoner import rewards  # noqa: F401 - registers

__getattr__, __all__ = method_package(__name__, space=".space:KGReasonerActionSpace", gold=".teacher:gold_episode", exports={
    ".path_tree": "PathTree",
    ".rewards": "kg_reasoner_format kg_reasoner_retrieval",
    ".space": "KGReasonerActionSpace",
    ".teacher": "gold_episode KGReasonerColdStart",
})
