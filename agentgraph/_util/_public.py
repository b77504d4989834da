"""Public classes name the namespace that documents them, as `repr`, tracebacks and help show.

A class is written in a private module (`agentgraph._core._errors_provider`) and
re-exported from a public one; `publish` sets its `__module__` to the public
one, so a traceback reads `agentgraph.ProviderConfigError`. The top-level
package wins over a subpackage that also exports the class.

Three things depended on the old `__module__` and are kept:

- pickles made under the private path still load: the class stays there;
- `typing.get_type_hints(cls)` resolves string annotations in the namespace
  `__module__` names, so they are resolved first, in the module that wrote them;
- the names stored data carries (`defined_in`) are the defining module's,
  unchanged, so records written before load, and records written now load in
  older releases.

agentgraph's own data types are stored under stable public names instead
(`agentgraph:Message`): each class takes its name where it is defined
(`stored_as`), as its module loads, so decoding finds it without importing
anything because stored data named it.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ("defined_in", "publish", "stored_as", "stored_class", "stored_name")

C = TypeVar("C", bound=type[Any])

_DEFINED_IN: dict[type[Any], str] = {}
_STORED: dict[str, type[Any]] = {}
_STORED_AS: dict[type[Any], str] = {}
_TOP = "agentgraph"


def stored_as(name: str) -> Callable[[C], C]:
    """Class decorator: stored data names the class `name` (`agentgraph:Message`).

    Put it above `@attrs.frozen`, so it names the class attrs made.
    """

    def register(cls: C) -> C:
        _STORED[name] = cls
        _STORED_AS[cls] = name
        return cls

    return register


def stored_class(name: str) -> type[Any] | None:
    """The class stored under the stable name `name`, once its module has loaded."""
    return _STORED.get(name)


def stored_name(cls: type[Any]) -> str | None:
    """The stable name `cls` is stored under, if it has one."""
    return _STORED_AS.get(cls)


def defined_in(cls: type[Any]) -> str:
    """The module that defines `cls`, whatever `__module__` now says."""
    return _DEFINED_IN.get(cls, cls.__module__)


def publish(package: str, names: Iterable[str], namespace: Mapping[str, Any]) -> None:
    """Set `__module__` of the classes `package` exports (those loaded in `namespace`)."""
    # While the top-level package is still importing, it has no `__all__` yet: it
    # publishes its own names when it is done.
    top: tuple[str, ...] = getattr(sys.modules.get(_TOP), "__all__", ())
    for name in names:
        value = namespace.get(name)
        if not isinstance(value, type) or value.__qualname__ != name:
            continue
        current = value.__module__
        if current == package or not current.startswith(_TOP):
            continue
        target = _TOP if name in top else package
        if _is_public(current) and target != _TOP:
            continue  # another public namespace that exports it, placed first
        _move(value, target)


def _is_public(module: str) -> bool:
    return not any(part.startswith("_") for part in module.split("."))


def _move(cls: type[Any], target: str) -> None:
    own = inspect.get_annotations(cls)
    if own:
        try:
            hints = typing.get_type_hints(cls, include_extras=True)
        except Exception:  # names imported only for type checkers: left as they were
            hints = None
        if hints is not None:
            cls.__annotations__ = {key: hints.get(key, hint) for key, hint in own.items()}
    _DEFINED_IN.setdefault(cls, cls.__module__)
    cls.__module__ = target
