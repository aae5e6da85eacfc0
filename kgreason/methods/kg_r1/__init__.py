"""KG-R1: a one-hop KG retrieval server, turn + global rewards, turn-level group credit."""

from kgreason.envs.factory import ACTION_SPACES
from kgreason.methods.kg_r1 import advantages, rewards  # noqa: F401 - registers
from kgreason.registry import by_module, lazy_exports
from kgreason.testing import GOLD_POLICIES

ACTION_SPACES.register_lazy("kg_r1", "kgreason.methods.kg_r1.space:KGR1ActionSpace")
GOLD_POLICIES.register_lazy("kg_r1", "kgreason.methods.kg_r1.oracle:gold_episode")

_EXPORTS = by_module({
    ".advantages": "kg_r1_turn",
    ".cold_start": "oracle_sft_trajectories OracleColdStart",
    ".oracle": "expressible gold_episode PathOracle",
    ".rewards": "kg_r1_reward retrieval_coverage turn_format",
    ".space": "KGR1ActionSpace",
})
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
