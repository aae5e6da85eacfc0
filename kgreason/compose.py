"""From a composed config to built parts (``experiments/conf/`` → Python objects).

Every config group node with a ``_target_`` is built with :func:`hydra.utils.instantiate`;
this module only says in which order and with which run-time arguments (the KB for the
env factory, the policy for the engine, the engine and reward for the experience
source). It names no method, action space, reward, rollout or cold-start kind: a new
method is new modules plus one ``experiments/conf/method/<name>.yaml``.

>>> from kgreason.compose import compose_config
>>> cfg = compose_config(["method=kg_r1", "preset=smoke"])
>>> cfg.env.space._target_, cfg.rollout.n_rollouts
('kgreason.envs.KGR1ActionSpace', 2)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from kgreason.envs.factory import EnvFactory
from kgreason.kb.base import KnowledgeBase
from kgreason.rewards.base import RewardFn
from kgreason.rollout.engine import Engine
from kgreason.rollout.multiturn import MultiTurnRollout
from kgreason.training.cold_start import ColdStart
from kgreason.training.experience import ExperienceSource
from kgreason.training.resume import run_dir_of
from kgreason.training.rl import RLConfig
from kgreason.types import KBQASample

#: where the runner's config groups live
CONFIG_DIR = Path(__file__).resolve().parents[1] / "experiments" / "conf"
#: what ``stage=`` may say
STAGES = ("all", "eval", "sft", "rl")

# config.yaml's hydra.run.dir: a resumed run writes on in the folder it started in
OmegaConf.register_new_resolver("kgreason.run_dir", run_dir_of, replace=True)


def validate_config(cfg: DictConfig) -> None:
    """Refuse a config that cannot run, before anything loads (a model takes seconds).

    Raises:
        ConfigError: an unknown ``stage``, or a ``checkpoint``/``resume`` path that is not
            a file; the message names the bad value and the valid choices.

    >>> validate_config(compose_config(["method=kg_r1", "preset=smoke", "stage=evl"]))
    Traceback (most recent call last):
    ...
    kgreason.errors.ConfigError: stage='evl' is not a stage; choose one of all, eval, sft, rl (did you mean 'eval'?)
    """
    import difflib

    from kgreason.errors import ConfigError

    stage = cfg.get("stage")
    if stage not in STAGES:
        close = difflib.get_close_matches(str(stage), STAGES, n=1)
        raise ConfigError(f"stage={stage!r} is not a stage; choose one of {', '.join(STAGES)}"
                          + (f" (did you mean {close[0]!r}?)" if close else ""))
    for key in ("checkpoint", "resume"):
        path = cfg.get(key)
        if path and not Path(path).is_file():
            raise ConfigError(f"{key}={path!r}: no such file")
    if cfg.get("resume") and stage not in ("all", "rl"):
        raise ConfigError(f"resume continues the RL stage; stage={stage!r} has none (use stage=all or stage=rl)")


def compose_config(overrides: Sequence[str] = (), config_dir: str | Path | None = None) -> DictConfig:
    """Compose the runner's config in-process (no subprocess), as ``run.py`` would see it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(str(Path(config_dir or CONFIG_DIR).resolve()), version_base="1.3"):
        return compose("config", overrides=list(overrides))


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
    reward = instantiate(cfg.reward)
    source = instantiate(cfg.rollout, engine=engine, policy=policy, reward=reward, max_new_tokens=max_new,
                         max_response_tokens=budget)
    objective = instantiate(cfg.objective, iterations=cfg.rl.iterations, _convert_="all")
    cold_start = instantiate(cfg.cold_start)
    prompts = instantiate(cfg.curriculum)
    ranker_training = instantiate(cfg.ranker_training)
    return Parts(kb, make_env, policy, engine, eval_rollout, list(train), list(dev), reward, source, objective,
                 cold_start, prompts, ranker_training)
