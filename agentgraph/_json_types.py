"""The names stored JSON carries: the tags, and the classes decoding may construct.

A tag names a class by a stable public name for agentgraph's own types
(`agentgraph:Message`) or by `module:qualname` for a class in a `Types`; the
private module paths older records used still resolve. Encoding lives in
`_json`, decoding in `_json_decode`.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import typing
from collections.abc import Iterable
from typing import Any

import attrs

from ._public import defined_in

__all__ = ("NO_TYPES", "Types")

_TYPE = "$type"
_ENUM = "$enum"
_TUPLE = "$tuple"
_DICT = "$dict"
_BYTES = "$bytes"
_TAGS = frozenset({_TYPE, _ENUM, _TUPLE, _DICT, _BYTES})


# agentgraph's own data types: the stable name each is stored under, and where it lives.
# Decoding imports one of these modules only because it is listed here.
_OWN: dict[str, tuple[str, str]] = {
    f"agentgraph:{name}": (module, name)
    for module, names in (
        ("agentgraph._context", ("AgentContext", "Settings")),
        ("agentgraph._failure", ("Failure",)),
        ("agentgraph.llm._messages", ("Message", "ToolCall", "ToolSpec", "Usage")),
        ("agentgraph.llm._content", ("Document", "Image")),
        ("agentgraph.llm._model", ("ChatRequest", "ChatResponse", "OutputSchema")),
        ("agentgraph.nodes._retrieve", ("Source",)),
        ("agentgraph.mcp._elicit", ("Elicitation",)),
    )
    for name in names
}
# What records written before the stable names called them.
_LEGACY = {f"{module}:{name}": stable for stable, (module, name) in _OWN.items()}
_STABLE: dict[tuple[str, str], str] = {where: stable for stable, where in _OWN.items()}


def _qualname(cls: type[Any]) -> str:
    """The name `cls` is stored under: a stable public one for agentgraph's own types."""
    # Where the class is written, not the public `__module__` it shows: the stored
    # names stay those of every earlier release.
    module = defined_in(cls)
    return _STABLE.get((module, cls.__qualname__)) or f"{module}:{cls.__qualname__}"


def _classes(classes: Iterable[type[Any]]) -> tuple[type[Any], ...]:
    """`classes` and the attrs classes, dataclasses and enums their fields hold."""
    found: dict[type[Any], None] = {}
    todo = list(classes)
    while todo:
        cls = todo.pop()
        if not isinstance(cls, type):
            raise TypeError(f"Types holds classes, not {type(cls).__name__}")
        if cls in found:
            continue
        found[cls] = None
        todo.extend(_held(cls))
    return tuple(found)


def _held(cls: type[Any]) -> list[type[Any]]:
    """The data classes named in the field annotations of `cls`."""
    if not (attrs.has(cls) or dataclasses.is_dataclass(cls)):
        return []
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # annotations that do not resolve: the class alone, then
        return []
    held: list[type[Any]] = []
    todo = list(hints.values())
    while todo:
        hint = todo.pop()
        todo.extend(typing.get_args(hint))
        if isinstance(hint, type) and (
            attrs.has(hint) or dataclasses.is_dataclass(hint) or issubclass(hint, enum.Enum)
        ):
            held.append(hint)
    return held


@attrs.frozen
class Types:
    """The classes stored data may be decoded into, beyond agentgraph's own.

    Decoding a context, a checkpoint, a trace or a recording constructs only
    agentgraph's data types and the classes listed here (attrs classes,
    dataclasses and enums), found by the name they were stored under
    (`module:qualname`). Any other tag is a `ContextDecodingError`, and no
    module is imported because stored data named it.

    ```python
    types = Types.of(Ticket, Priority)
    ctx = AgentContext.from_json(data, types=types)
    ```
    """

    classes: tuple[type[Any], ...] = attrs.field(default=(), converter=_classes)

    @classmethod
    def of(cls, *classes: type[Any]) -> Types:
        """A registry of `classes`."""
        return cls(classes)

    def with_types(self, *classes: type[Any] | Types) -> Types:
        """A registry of these classes and `classes` (classes or other registries)."""
        more: list[type[Any]] = []
        for item in classes:
            more.extend(item.classes if isinstance(item, Types) else (item,))
        known = set(self.classes)
        added = tuple(c for c in more if c not in known)
        return Types(self.classes + added)

    def resolve(self, name: str) -> type[Any] | None:
        """The class stored under `name`, if decoding may construct it."""
        stable = name if name in _OWN else _LEGACY.get(name)
        if stable is not None:
            module, attribute = _OWN[stable]
            found: type[Any] = getattr(importlib.import_module(module), attribute)
            return found
        for cls in self.classes:
            if f"{defined_in(cls)}:{cls.__qualname__}" == name:
                return cls
        return None


NO_TYPES = Types()
"""agentgraph's own types only."""
