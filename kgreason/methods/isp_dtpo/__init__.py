"""ISP/DTPO: node/SPARQL actions over ranked relations, tree rollouts, distance-guided node rewards."""

from kgreason.envs.factory import ACTION_SPACES
from kgreason.methods.isp_dtpo import rewards  # noqa: F401 - registers
from kgreason.registry import by_module, lazy_exports
from kgreason.testing import GOLD_POLICIES

ACTION_SPACES.register_lazy("isp_dtpo", "kgreason.methods.isp_dtpo.space:ISPActionSpace")
GOLD_POLICIES.register_lazy("isp_dtpo", "kgreason.methods.isp_dtpo.decompose:gold_episode")

_EXPORTS = by_module({
    ".cold_start": "DecomposedColdStart",
    ".decompose": "decompose gold_episode isp_sft_trajectories",
    ".rewards": "dtpo_outcome_reward dtpo_progress_reward isp_format_reward",
    ".space": "ISPActionSpace",
})
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
