"""ISP/DTPO: node/SPARQL actions over ranked relations, tree rollouts, distance-guided node rewards."""

from kgreason.methods import method_package
from kgreason.methods.isp_dtpo import rewards  # noqa: F401 - registers

__getattr__, __all__ = method_package(__name__, space=".space:ISPActionSpace", gold=".decompose:gold_episode", exports={
    ".cold_start": "DecomposedColdStart",
    ".decompose": "decompose_sexpr gold_episode isp_sft_trajectories",
    ".rewards": "dtpo_outcome_reward dtpo_progress_reward isp_format_reward",
    ".space": "ISPActionSpace",
})
