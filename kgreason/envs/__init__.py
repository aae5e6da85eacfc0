"""Action spaces and the multi-turn KG environment (design §4, docs/design.md).

The action spaces themselves are parts of the methods (``kgreason.methods.<name>``);
each registers itself in :data:`ACTION_SPACES`, which finds them on first look-up.
"""

from kgreason.envs.base import ActionSpace, EpisodeState, KGEnv, ParseError, StepResult
from kgreason.envs.factory import ACTION_SPACES, EnvFactory, make_env, register_action_space

__all__ = [
    "ACTION_SPACES", "ActionSpace", "EnvFactory", "EpisodeState", "KGEnv", "ParseError", "StepResult", "make_env",
    "register_action_space",
]
