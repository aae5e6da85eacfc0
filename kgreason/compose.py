"""From a composed config to built parts (``kgreason/conf/`` → Python objects).

Every config group node with a ``_target_`` is built with :func:`hydra.utils.instantiate`;
this module only says in which order and with which run-time arguments (the KB for the
env factory, the policy for the engine, the engine and reward for the experience
source). It names no method, action space, reward, rollout or cold-start kind: a new
method is new modules plus one ``kgreason/conf/method/<name>.yaml``.

>>> from kgreason.compose import compose_config
>>> cfg = compose_config(["method=kg_r1", "preset=smoke"])
>>> cfg.env.space._target_, cfg.rollout.n_rollouts
('kgreason.methods.kg_r1.KGR1ActionSpace', 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, open_dict

from kgreason.config import CONFIG_DIR, STAGES, compose_config, validate_config  # noqa: F401 - re-exported
from kgreason.envs.factory import EnvFactory
from kgreason.kb.base import KnowledgeBase
from kgreason.rewards.base import RewardFn
from kgreason.rollout.engine import Engine
from kgreason.rollout.multiturn import MultiTurnRollout
from kgreason.training.cold_start import ColdStart
from kgreason.training.experience import ExperienceSource
from kgreason.training.rl import RLConfig
from kgreason.types import KBQASample


@dataclass
class Parts:
    """Everything a run is made of, built."""

    kb: KnowledgeBase
    make_env: EnvFactory
    policy: Any
    engine: Engine
    eval_rollout: MultiTurnRollout
    train: list[KBQASample]
    dev: list[KBQASample]
    reward: RewardFn
    source: ExperienceSource
    objective: RLConfig
    cold_start: ColdStart
    prompts: Callable[[Sequence[KBQASample]], Any]
    ranker_training: Callable[..., dict[str, Any]]


def build_policy(cfg: DictConfig, checkpoint: str | None = None) -> Any:
    """The policy of ``cfg.model`` (with ``checkpoint``'s weights when given)."""
    import torch

    policy = instantiate(cfg.model.policy)
    if checkpoint:
        path = Path(checkpoint)
        if not path.is_file():
            from kgreason.errors import ConfigError

            raise ConfigError(f"checkpoint={checkpoint!r}: no such file")
        policy.load_checkpoint_state(torch.load(path, map_location="cpu"))
    return policy


def rl_iterations(epochs: int, questions: int, batch_size: int) -> int:
    """RL iterations (batches of questions) that make ``epochs`` passes over ``questions``.

    >>> rl_iterations(8, 3098, 256)
    97
    """
    return -(-epochs * questions // batch_size)


def build_parts(cfg: DictConfig, policy: Any | None = None) -> Parts:
    """Build every part of ``cfg`` (the policy too, unless given).

    A typed error a part raises while it is built (``DatasetError``, ``ConfigError``, …)
    reaches the caller as itself, not wrapped in Hydra's ``InstantiationException``.

    The order is fixed so that seeded runs draw the same random numbers: KB, ranker,
    env factory, data (seeded on its own; before the model, so a bad split fails in
    seconds), policy, engine, then the pure parts.
    """
    from hydra.errors import InstantiationException

    from kgreason.errors import KGReasonError

    try:
        return _build_parts(cfg, policy)
    except InstantiationException as e:
        cause = e.__cause__
        while isinstance(cause, InstantiationException):
            cause = cause.__cause__
        if isinstance(cause, KGReasonError):
            raise cause from None
        raise


def _build_parts(cfg: DictConfig, policy: Any | None) -> Parts:
    kb = instantiate(cfg.kb)
    ranker = instantiate(cfg.ranker) if cfg.get("ranker") else None
    make_env = instantiate(cfg.env, kb=kb, ranker=ranker)
    train, dev = instantiate(cfg.data)
    if policy is None:
        policy = build_policy(cfg, cfg.get("checkpoint"))
    engine = instantiate(cfg.engine, policy)
    max_new, budget = cfg.model.max_new_tokens, cfg.model.get("max_response_tokens")
    eval_rollout = MultiTurnRollout(engine, policy.tokenizer, policy.chat_ids, max_new, budget)
    if cfg.rl.get("epochs"):  # the papers that count epochs: iterations follow the training set's size
        with open_dict(cfg):
            cfg.rl.iterations = rl_iterations(cfg.rl.epochs, len(train), cfg.curriculum.batch_size)
    reward = instantiate(cfg.reward)
    if hasattr(reward, "over_iterations"):  # schedules given as a share of the RL stage
        reward.over_iterations(cfg.rl.iterations)
    source = instantiate(cfg.rollout, engine=engine, policy=policy, reward=reward, max_new_tokens=max_new,
                         max_response_tokens=budget)
    objective = instantiate(cfg.objective, iterations=cfg.rl.iterations, _convert_="all")
    cold_start = instantiate(cfg.cold_start)
    prompts = instantiate(cfg.curriculum)
    ranker_training = instantiate(cfg.ranker_training)
    return Parts(kb, make_env, policy, engine, eval_rollout, list(train), list(dev), reward, source, objective,
                 cold_start, prompts, ranker_training)
