"""Name → object registries (rewards, advantages, KL estimators, action spaces, ...), and
the discovery of the methods that fill them.

A method is a package that registers its parts when imported: every subpackage of
``kgreason.methods`` and every ``kgreason.methods`` entry point of an installed
distribution (a method of one's own, in its own package). Nothing here names a method:
:func:`load_methods` finds them, and a registry loads them the first time it is asked
for a name it does not hold, or for its list of names.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from kgreason.errors import RegistryError

T = TypeVar("T")


class _Lazy:
    """A registered object named by ``"module:attribute"``, imported when first asked for."""

    def __init__(self, path: str):
        self.path = path

    def resolve(self) -> Any:
        module, _, attr = self.path.partition(":")
        return getattr(importlib.import_module(module), attr)

    def __repr__(self) -> str:
        return f"<{self.path}>"


#: the package whose subpackages are the shipped methods
METHODS_PACKAGE = "kgreason.methods"
#: entry-point group through which other distributions add methods
ENTRY_POINT_GROUP = "kgreason.methods"
_loaded: list[str] | None = None


def load_methods() -> list[str]:
    """Import every method package once (their imports register their parts).

    Returns:
        The module names imported, shipped methods first, then entry points.

    Raises:
        RegistryError: a method package failed to import (the cause is chained).

    >>> "kgreason.methods.kg_r1" in load_methods()
    True
    """
    global _loaded
    if _loaded is not None:
        return list(_loaded)
    _loaded = []  # set first: a method that looks a name up while it loads does not recurse
    package = importlib.import_module(METHODS_PACKAGE)
    names = [f"{METHODS_PACKAGE}.{m.name}" for m in pkgutil.iter_modules(package.__path__) if m.ispkg]
    names += [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as e:
            _loaded = None
            raise RegistryError(f"method package {name!r} failed to import: {type(e).__name__}: {e}") from e
        _loaded.append(name)
    return list(_loaded)


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
            old = self._items.get(name)
            if isinstance(old, _Lazy) and not isinstance(o, _Lazy):
                old = self._items[name] = old.resolve()  # the lazy entry's module registering itself
            if old is not None and old is not o:
                raise RegistryError(f"{self.kind} {name!r} is already registered to {old!r}")
            self._items[name] = o
            self._meta[name] = {**self._meta.get(name, {}), **{k: v for k, v in meta.items() if v is not None}}
            return o

        return add(obj) if obj is not None else add

    def register_lazy(self, name: str, path: str, **meta: Any) -> None:
        """Register the object at ``path`` (``"package.module:attribute"``) under ``name``
        without importing it: it is imported by the first :meth:`get`. A method package
        registers its heavy parts (action spaces that load rankers) this way, so that
        checking a config stays fast.

        >>> r = Registry("thing")
        >>> r.register_lazy("join", "os.path:join", kind="path")
        >>> r.meta("join"), r.get("join").__name__
        ({'kind': 'path'}, 'join')
        """
        self.register(name, _Lazy(path), **meta)  # type: ignore[arg-type]

    def _find(self, name: str | None = None) -> None:
        """Load the methods if ``name`` is not here (or, with no name, for a full listing)."""
        if name is None or name not in self._items:
            load_methods()

    def get(self, name: str) -> T:
        self._find(name)
        if name not in self._items:
            raise RegistryError(f"unknown {self.kind} {name!r}; valid: {', '.join(sorted(self._items))}")
        item = self._items[name]
        if isinstance(item, _Lazy):
            item = self._items[name] = item.resolve()
        return item

    def meta(self, name: str) -> dict[str, Any]:
        """What ``name`` declared when it was registered (``{}``: nothing).

        >>> r = Registry("reward")
        >>> _ = r.register("node", lambda: 0, rollout="tree")
        >>> r.meta("node"), r.meta("other")
        ({'rollout': 'tree'}, {})
        """
        if isinstance(name, str):
            self._find(name)
        return dict(self._meta.get(name, {}))

    def name_of(self, target: str) -> str | None:
        """The name the object at dotted path ``target`` (a Hydra ``_target_``) is registered
        under, without importing it; ``None`` when none is. A package that re-exports the
        object (``pkg.Cls`` for ``pkg.module.Cls``) names it too.

        >>> r = Registry("thing")
        >>> r.register_lazy("join", "os.path:join")
        >>> r.name_of("os.path.join"), r.name_of("os.join"), r.name_of("os.path.split")
        ('join', 'join', None)
        """
        self._find()
        t_module, _, t_attr = target.rpartition(".")
        for name, item in self._items.items():
            if isinstance(item, _Lazy):
                module, _, attr = item.path.partition(":")
            else:
                module, attr = getattr(item, "__module__", ""), getattr(item, "__qualname__", "")
            if attr == t_attr and (module == t_module or module.startswith(t_module + ".")):
                return name
        return None

    def names(self) -> list[str]:
        self._find()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self._find(name)
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        self._find()
        return iter(sorted(self._items))


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each public name from its module on first use.

    Args:
        package: the ``__name__`` of the module that exports.
        exports: public name → module (absolute, or relative to ``package``: ``".space"``);
            :func:`by_module` writes it module by module.

    >>> get = lazy_exports("os", {"join": ".path"})
    >>> get("join").__name__
    'join'
    """
    def __getattr__(name: str) -> Any:
        if name in exports:
            value = getattr(importlib.import_module(exports[name], package), name)
            vars(importlib.import_module(package))[name] = value  # later look-ups skip this function
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    # a name its own module is called by (a function ``f`` in ``pkg/f.py``) is
    # bound now: importing that module for any other reason would set the package's
    # attribute to the module, and ``__getattr__`` would never be asked
    for name, module in exports.items():
        if module.rpartition(".")[2] == name:
            __getattr__(name)
    return __getattr__


def by_module(modules: dict[str, str]) -> dict[str, str]:
    """``{module: "name name"}`` as ``{name: module}``, the form :func:`lazy_exports` takes.

    >>> by_module({".space": "KGR1ActionSpace", ".oracle": "PathOracle gold_episode"})
    {'KGR1ActionSpace': '.space', 'PathOracle': '.oracle', 'gold_episode': '.oracle'}
    """
    return {name: module for module, names in modules.items() for name in names.split()}
