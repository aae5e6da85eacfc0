"""``make_env(method, kb, **kw)``: an environment for a method's action space by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from kgreason.envs.base import ActionSpace, KGEnv
from kgreason.errors import RegistryError
from kgreason.kb.base import KnowledgeBase

ACTION_SPACES: dict[str, Callable[..., ActionSpace]] = {}


def register_action_space(name: str) -> Callable[[Callable[..., ActionSpace]], Callable[..., ActionSpace]]:
    """Register an action-space class under ``name`` (re-registering another one raises)."""

    def deco(cls: Callable[..., ActionSpace]) -> Callable[..., ActionSpace]:
        if name in ACTION_SPACES and ACTION_SPACES[name] is not cls:
            raise RegistryError(f"action space {name!r} is already registered to {ACTION_SPACES[name]}")
        ACTION_SPACES[name] = cls
        return cls

    return deco


def make_env(method: str, kb: KnowledgeBase, **kw: Any) -> KGEnv:
    """Build a :class:`KGEnv` for ``method`` (e.g. ``"kg_r1"``) over ``kb``.

    Keyword arguments go to the action space when its constructor takes them, else to
    :class:`KGEnv` (``max_turns``, ``max_obs_tokens``, ...).

    Raises:
        RegistryError: unknown method (the message lists the known ones).
    """
    if method not in ACTION_SPACES:
        raise RegistryError(f"unknown method {method!r}; known: {', '.join(sorted(ACTION_SPACES))}")
    cls = ACTION_SPACES[method]
    space_params = set(inspect.signature(cls).parameters)
    env_params = set(inspect.signature(KGEnv).parameters)
    unknown = set(kw) - space_params - env_params
    if unknown:
        raise TypeError(f"make_env({method!r}) got unknown arguments {sorted(unknown)}")
    space = cls(**{k: v for k, v in kw.items() if k in space_params})
    env_kw = {k: v for k, v in kw.items() if k in env_params}
    if "max_obs_tokens" in space_params and "max_obs_tokens" in kw:
        env_kw["max_obs_tokens"] = kw["max_obs_tokens"]
    return KGEnv(space, kb, **env_kw)
