"""ISP/DTPO's cold start: gold logical forms decomposed into executed steps (appendix E.2)."""

from __future__ import annotations

from kgreason.declarations import declare
from kgreason.errors import ConfigError
from kgreason.training.cold_start import ColdStart
from kgreason.types import Trajectory


@declare(action_space="isp_dtpo", gold=("sexpr",))
class DecomposedColdStart(ColdStart):
    """ISP/DTPO's cold start: gold logical forms decomposed into executed steps (E.2).

    Args:
        explore_variables: also explore each intermediate variable with a ``<node>`` step.
    """

    def __init__(self, explore_variables: bool = False, **kw):
        super().__init__(**kw)
        self.explore_variables = explore_variables

    def build(self, samples, make_env, policy) -> list[Trajectory]:
        from kgreason.methods.isp_dtpo.decompose import isp_sft_trajectories

        trajs = isp_sft_trajectories(samples, make_env, policy.chat_ids, policy.tokenizer,
                                     explore_variables=self.explore_variables)
        if samples and not trajs:
            raise ConfigError(f"no decomposed episode of {len(samples)} questions fits "
                              f"max_turns={make_env().max_turns}; raise env.max_turns or use cold_start=none")
        return trajs
