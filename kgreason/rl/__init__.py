"""RL objectives: advantage estimators, KL estimators, loss aggregation, policy loss (design §7, docs/design.md)."""

from kgreason.rl.advantages import (
    ADVANTAGES,
    AdvantageBatch,
    get_advantage,
    group_normalize,
    token_advantages,
)
from kgreason.rl.correction import sampler_mismatch, truncated_is_weights
from kgreason.rl.critic import (
    CriticSettings,
    ValueModel,
    gae,
    masked_moments,
    terminal_rewards,
    value_loss,
    whiten,
)
from kgreason.rl.losses import AGGREGATIONS, KL_ESTIMATORS, aggregation_units, policy_loss

__all__ = [
    "ADVANTAGES", "AGGREGATIONS", "AdvantageBatch", "CriticSettings", "KL_ESTIMATORS", "ValueModel",
    "aggregation_units", "gae", "get_advantage", "group_normalize", "masked_moments", "policy_loss",
    "sampler_mismatch", "terminal_rewards", "token_advantages", "truncated_is_weights", "value_loss", "whiten",
]
