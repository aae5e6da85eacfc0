"""KG-R1: a one-hop KG retrieval server, turn + global rewards, turn-level group credit."""

from kgreason.methods import method_package
from kgreason.methods.kg_r1 import advantages, rewards  # noqa: F401 - registers

__getattr__, __all__ = method_package(__name__, space=".space:KGR1ActionSpace", gold=".oracle:gold_episode", exports={
    ".advantages": "kg_r1_turn",
    ".cold_start": "oracle_sft_trajectories OracleColdStart",
    ".oracle": "expressible gold_episode PathOracle",
    ".rewards": "kg_r1_reward retrieval_coverage turn_format",
    ".space": "KGR1ActionSpace",
})
