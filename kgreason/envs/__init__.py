"""Action spaces and the multi-turn KG environment (design §4, docs/design.md)."""

from kgreason.envs.base import ActionSpace, EpisodeState, KGEnv, ParseError, StepResult
from kgreason.envs.factory import ACTION_SPACES, EnvFactory, make_env, register_action_space
from kgreason.envs.isp import ISPActionSpace
from kgreason.envs.kbqa_r1 import KBQAR1ActionSpace
from kgreason.envs.kg_r1 import KGR1ActionSpace
from kgreason.envs.kg_reasoner import KGReasonerActionSpace
from kgreason.envs.knowcoder import KnowCoderActionSpace

register_action_space("kg_r1")(KGR1ActionSpace)
register_action_space("isp_dtpo")(ISPActionSpace)
register_action_space("knowcoder_a1")(KnowCoderActionSpace)
register_action_space("kbqa_r1")(KBQAR1ActionSpace)
register_action_space("kg_reasoner")(KGReasonerActionSpace)

__all__ = [
    "ACTION_SPACES", "ActionSpace", "EnvFactory", "EpisodeState", "KGEnv", "ISPActionSpace", "KBQAR1ActionSpace", "KGR1ActionSpace", "KGReasonerActionSpace", "KnowCoderActionSpace", "ParseError",
    "StepResult", "make_env", "register_action_space",
]
