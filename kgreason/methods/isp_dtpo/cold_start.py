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

        without = [s.id for s in samples if not s.sexpr]
        if samples and len(without) == len(samples):
            # the cause is the data, not a turn limit: say so before decomposing anything
            raise ConfigError(f"cold_start=decomposed needs gold S-expressions (sexpr); none of the {len(samples)} "
                              f"questions has one (e.g. {', '.join(without[:3])}). Use questions with logical "
                              "forms, or cold_start=none")
        trajs = isp_sft_trajectories(samples, make_env, policy.chat_ids, policy.tokenizer,
                                     explore_variables=self.explore_variables)
        self.report = {"questions": len(samples), "episodes": len(trajs), "without_sexpr": len(without),
                       "without_sexpr_ids": without[:20]}
        if samples and not trajs:
            raise ConfigError(f"no decomposed episode of the {len(samples) - len(without)} questions with an "
                              f"S-expression fits max_turns={make_env().max_turns}; raise env.max_turns or use "
                              "cold_start=none")
        return trajs
