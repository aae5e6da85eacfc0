"""What a part needs of the composition and what it offers to it, read before anything is built.

Named parts (rewards, advantage estimators, datasets, action spaces) declare through their
registry: ``register(name, rollout="tree")`` is kept as the registry's :meth:`meta`.
Parts built from a Hydra ``_target_`` (KB loaders, rankers, cold starts, teachers, action
space classes) declare with :func:`declare`, read back with :func:`declared`; a subclass
inherits its parents' declarations and may override them.
:mod:`kgreason.compat` checks every pair of declarations at compose time.

The facts and who declares them:

================  ===========================  ===============================================
fact              declared by                  meaning
================  ===========================  ===============================================
``schema``        KB loader, dataset           the id namespace (``freebase``, ``metaqa``)
``schemas``       action space                 the KB schemas it can address (absent: any)
``ranks``         action space                 what it asks a ranker to score, or ``None``
``contexts``      action space, ranker         ``flat`` (a candidate list) and/or ``graph``
``adapts``        ranker                       contexts it reads through an adapter
``action_space``  reward, cold start, teacher  the action space whose output it reads or plays
``rollout``       reward, advantage            ``linear`` (whole episodes) or ``tree`` (steps)
``gold``          cold start, dataset          gold fields it needs (any of) / that it has
``trainable``     ranker                       has parameters a ranker-training stage fits
``trains``        ranker-training stage        needs a trainable ranker
================  ===========================  ===============================================

>>> @declare(schema="freebase")
... def load_my_kb(): ...
>>> declared(load_my_kb)
{'schema': 'freebase'}
>>> class Base: ...
>>> @declare(contexts=("flat",))
... class A(Base): ...
>>> @declare(adapts=("flat",), contexts=("graph",))
... class B(A): ...
>>> declared(B), declared(A), declared(Base)
({'contexts': ('graph',), 'adapts': ('flat',)}, {'contexts': ('flat',)}, {})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
_ATTR = "__kgreason_declares__"


def declare(**facts: Any) -> Callable[[T], T]:
    """Attach ``facts`` to a class or function (merged over what its parents declared)."""
    def attach(obj: T) -> T:
        inherited = {}
        for base in reversed(getattr(obj, "__mro__", ())[1:]):
            inherited.update(vars(base).get(_ATTR, {}))
        setattr(obj, _ATTR, {**inherited, **facts})
        return obj

    return attach


def declared(obj: Any) -> dict[str, Any]:
    """What ``obj`` (a class, a function, or an instance of a declaring class) declared."""
    facts = getattr(obj, _ATTR, None)
    if facts is None and not isinstance(obj, type):
        facts = getattr(type(obj), _ATTR, None)
    return dict(facts or {})
