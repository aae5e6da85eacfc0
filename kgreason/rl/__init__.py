"""RL objectives: advantage estimators, KL estimators, loss aggregation, policy loss (design §7, docs/design.md)."""

from kgreason.rl.advantages import (
    ADVANTAGES,
    AdvantageBatch,
    get_advantage,
    group_normalize,
    token_advantages,
)
from kgreason.rl.correction import sampler_mismatch, truncated_is_weights
from kgreason.rl.losses import AGGREGATIONS, KL_ESTIMATORS, aggregation_units, policy_loss

__all__ = [
    "ADVANTAGES", "AGGREGATIONS", "AdvantageBatch", "KL_ESTIMATORS", "aggregation_units", "get_advantage",
    "group_normalize", "policy_loss", "sampler_mismatch", "token_advantages", "truncated_is_weights",
]
