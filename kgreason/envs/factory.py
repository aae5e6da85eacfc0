"""Building environments: :class:`EnvFactory` (from config) and ``make_env`` (by name).

An action space is stateless across episodes apart from what it keeps in
:class:`~kgreason.envs.base.EpisodeState`, but some spaces draw random numbers or hold
per-instance caches, so every environment gets its own space instance; the expensive
parts a space is built from (a ranker, an index) are built once and shared.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from kgreason.declarations import declared
from kgreason.envs.base import ActionSpace, KGEnv
from kgreason.errors import ConfigError, RegistryError
from kgreason.kb.base import KnowledgeBase
from kgreason.kb.cache import CachedKB
from kgreason.registry import Registry

ACTION_SPACES: Registry[Callable[..., ActionSpace]] = Registry("action space")


def register_action_space(name: str) -> Callable[[Callable[..., ActionSpace]], Callable[..., ActionSpace]]:
    """Register an action-space class under ``name`` (re-registering another one raises)."""
    return ACTION_SPACES.register(name)  # type: ignore[return-value]


class EnvFactory:
    """Makes a fresh :class:`KGEnv` per call (one per rollout), all over one KB.

    Hydra builds it from ``kgreason/conf/env/*.yaml``: ``space`` is a partial action
    space (``_partial_: true``), so the ranker inside it is built once.

    Args:
        space: ``() -> ActionSpace``, called once per environment.
        kb: the knowledge base.
        max_turns: H; the last turn must answer.
        max_obs_tokens: observation budget of the environment.
        cache_kb: wrap the KB in a fresh :class:`~kgreason.kb.CachedKB` per environment.
            A tree rollout forks one environment into all branches of a question, so
            they share that cache (ISP/DTPO's per-tree query cache), and rewards read it.
        ranker: built once (the ``ranker`` config group) and given to every action space
            whose class declares what it ``ranks`` (:mod:`kgreason.declarations`).
        **env_kw: other :class:`KGEnv` arguments.

    >>> from kgreason.data import load_demo_kb
    >>> from kgreason.methods.kg_r1 import KGR1ActionSpace
    >>> make = EnvFactory(KGR1ActionSpace, load_demo_kb(), max_turns=3)
    >>> env = make()
    >>> env.max_turns, type(env.action_space).__name__, make() is env
    (3, 'KGR1ActionSpace', False)
    """

    def __init__(self, space: Callable[..., ActionSpace], kb: KnowledgeBase, max_turns: int = 5,
                 max_obs_tokens: int = 512, cache_kb: bool = False, ranker: Any = None, **env_kw: Any):
        if not callable(space):
            raise TypeError(f"space must build an ActionSpace when called, got {space!r}")
        cls = getattr(space, "func", space)
        if ranker is not None and not declared(cls).get("ranks"):
            raise ConfigError(f"{getattr(cls, '__name__', cls)} ranks nothing, but a ranker "
                              f"({type(ranker).__name__}) was given; drop it with ranker=null")
        if ranker is not None:
            space = functools.partial(space, ranker=ranker)
        self.space = space
        #: the ranker the action spaces share (a ranker-training stage trains this one)
        self.ranker = ranker
        self.kb = kb
        self.max_turns = max_turns
        self.max_obs_tokens = max_obs_tokens
        self.cache_kb = cache_kb
        self.env_kw = env_kw

    def __call__(self) -> KGEnv:
        kb = CachedKB(self.kb) if self.cache_kb else self.kb
        return KGEnv(self.space(), kb, max_turns=self.max_turns, max_obs_tokens=self.max_obs_tokens,
                     **self.env_kw)

    def __repr__(self) -> str:
        name = getattr(self.space, "func", self.space)
        return (f"{type(self).__name__}({getattr(name, '__name__', name)}, max_turns={self.max_turns}, "
                f"max_obs_tokens={self.max_obs_tokens}, cache_kb={self.cache_kb})")


def make_env(method: str, kb: KnowledgeBase, *, max_turns: int = 5, max_obs_tokens: int = 512,
             cache_kb: bool = False, resolve_answers: bool = True, **space_kw: Any) -> KGEnv:
    """Build a :class:`KGEnv` for the action space registered as ``method`` over ``kb``.

    ``max_obs_tokens`` goes to the action space too (every space truncates its own
    observations to it); other keyword arguments go to the action space.

    Raises:
        RegistryError: unknown method (the message lists the known ones).
        TypeError: an argument neither the env nor the action space takes.
    """
    try:
        cls = ACTION_SPACES.get(method)
    except RegistryError as e:
        raise RegistryError(str(e).replace("unknown action space", "unknown method")) from None
    try:
        space = cls(max_obs_tokens=max_obs_tokens, **space_kw)
    except TypeError as e:
        raise TypeError(f"make_env({method!r}): {e}") from None
    env_kb = CachedKB(kb) if cache_kb else kb
    return KGEnv(space, env_kb, max_turns=max_turns, max_obs_tokens=max_obs_tokens,
                 resolve_answers=resolve_answers)
