"""The five methods, one package each: the parts that belong to one paper.

Each ``kgreason.methods.<name>`` holds its action space, rewards, advantage estimator,
teachers, cold start and gold policy, and registers them when imported: its rewards and
estimator at once, its action space and gold policy without importing them (they load
rankers), every other name of the package on first use (``make_env(name, kb)``,
``kgreason.rewards.get``, ``kgreason.rl.get_advantage`` find them). The generic kernel
(``kb``, ``envs``, ``rewards``, ``rl``, ``rankers``, ``rollout``, ``training``, ``eval``,
``models``, ``data``) never imports a method; :func:`kgreason.registry.load_methods`
discovers them, and a method of one's own is added through the ``kgreason.methods``
entry point of its distribution (docs/architecture.md).

================  ====================================
package           paper
================  ====================================
``kg_r1``         KG-R1 (Song et al.)
``kbqa_r1``       KBQA-R1
``isp_dtpo``      Interactive Semantic Parsing / DTPO
``knowcoder_a1``  KnowCoder-A1
``kg_reasoner``   KG-Reasoner
================  ====================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def method_package(package: str, space: str, gold: str,
                   exports: dict[str, str]) -> tuple[Callable[[str], Any], list[str]]:
    """Register a method package's action space and gold policy under its name, without
    importing them, and give it lazy exports.

    Args:
        package: the method package's ``__name__`` (its last part is the method's name).
        space: ``"module:Class"`` of the action space, the module relative to ``package``.
        gold: ``"module:function"`` of the gold policy, likewise.
        exports: module (relative) → its public names, separated by spaces.

    Returns:
        The package's ``__getattr__`` and ``__all__``.
    """
    from kgreason.envs.factory import ACTION_SPACES
    from kgreason.registry import by_module, lazy_exports
    from kgreason.testing import GOLD_POLICIES

    name = package.rpartition(".")[2]
    ACTION_SPACES.register_lazy(name, package + space)
    GOLD_POLICIES.register_lazy(name, package + gold)
    names = by_module(exports)
    return lazy_exports(package, names), sorted(names)
