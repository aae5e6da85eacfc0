"""Name → function registries for the pure-function parts (rewards, advantages, KL, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from kgreason.errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    """A registry of named objects of one kind.

    >>> r = Registry("reward")
    >>> @r.register("one")
    ... def one(): return 1
    >>> r.get("one")()
    1
    >>> r.get("two")
    Traceback (most recent call last):
    ...
    kgreason.errors.RegistryError: unknown reward 'two'; valid: one
    """

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._meta: dict[str, dict[str, Any]] = {}

    def register(self, name: str, obj: T | None = None, **meta: Any) -> Callable[[T], T] | T:
        """Register ``obj`` under ``name`` (or use as a decorator), with what it declares
        about itself in ``meta`` (e.g. a reward's ``rollout="tree"``), read by :meth:`meta`.

        Raises:
            RegistryError: ``name`` is already registered to a different object.
        """
        def add(o: T) -> T:
            if name in self._items and self._items[name] is not o:
                raise RegistryError(f"{self.kind} {name!r} is already registered to {self._items[name]!r}")
            self._items[name] = o
            self._meta[name] = {k: v for k, v in meta.items() if v is not None}
            return o

        return add(obj) if obj is not None else add

    def get(self, name: str) -> T:
        if name not in self._items:
            raise RegistryError(f"unknown {self.kind} {name!r}; valid: {', '.join(sorted(self._items))}")
        return self._items[name]

    def meta(self, name: str) -> dict[str, Any]:
        """What ``name`` declared when it was registered (``{}``: nothing).

        >>> r = Registry("reward")
        >>> _ = r.register("node", lambda: 0, rollout="tree")
        >>> r.meta("node"), r.meta("other")
        ({'rollout': 'tree'}, {})
        """
        return dict(self._meta.get(name, {}))

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))
