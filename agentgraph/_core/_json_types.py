"""The names stored JSON carries: the tags, and the classes decoding may construct.

A tag names a class by a stable public name for agentgraph's own types
(`agentgraph:Message`) or by `module:qualname` for a class in a `Types`; the
private module paths older records used still resolve. Encoding lives in
`_json`, decoding in `_json_decode`.
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from collections.abc import Iterable
from typing import Any

import attrs

from .._util._moved import MOVED, former_name
from .._util._public import defined_in, stored_class, stored_name

__all__ = ("NO_TYPES", "Types")

_TYPE = "$type"
_ENUM = "$enum"
_TUPLE = "$tuple"
_DICT = "$dict"
_BYTES = "$bytes"
_TAGS = frozenset({_TYPE, _ENUM, _TUPLE, _DICT, _BYTES})


# What records written before the stable names (`agentgraph:Message`) called agentgraph's
# own data types: where each class was defined then, listed as it was, so records keep
# loading wherever the class now lives. A class takes its stable name where it is defined
# (`_public.stored_as`); decoding finds it by that name and imports nothing.
_LEGACY: dict[str, str] = {
    "agentgraph._context:AgentContext": "agentgraph:AgentContext",
    "agentgraph._context:Settings": "agentgraph:Settings",
    "agentgraph._failure:Failure": "agentgraph:Failure",
    "agentgraph.llm._messages:Message": "agentgraph:Message",
    "agentgraph.llm._messages:ToolCall": "agentgraph:ToolCall",
    "agentgraph.llm._messages:ToolSpec": "agentgraph:ToolSpec",
    "agentgraph.llm._messages:Usage": "agentgraph:Usage",
    "agentgraph.llm._content:Document": "agentgraph:Document",
    "agentgraph.llm._content:Image": "agentgraph:Image",
    "agentgraph.llm._model:ChatRequest": "agentgraph:ChatRequest",
    "agentgraph.llm._model:ChatResponse": "agentgraph:ChatResponse",
    "agentgraph.llm._model:OutputSchema": "agentgraph:OutputSchema",
    "agentgraph.nodes._retrieve:Source": "agentgraph:Source",
    "agentgraph.mcp._elicit:Elicitation": "agentgraph:Elicitation",
}


def unloaded(name: str) -> str | None:
    """The package to import before decoding `name`: one of agentgraph's own types whose
    module has not loaded yet (decoding never loads it), else None."""
    stable = _LEGACY.get(name, name)
    if stored_class(stable) is not None:
        return None
    for old, new in _LEGACY.items():
        if new == stable:
            return ".".join(p for p in old.split(":")[0].split(".") if not p.startswith("_"))
    return None


def _qualname(cls: type[Any]) -> str:
    """The name `cls` is stored under: a stable public one for agentgraph's own types."""
    # Where the class is written, not the public `__module__` it shows: the stored
    # names stay those of every earlier release.
    # A module that moved keeps its name of earlier releases, so they read what this writes.
    return stored_name(cls) or f"{former_name(defined_in(cls))}:{cls.__qualname__}"


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
        own = stored_class(_LEGACY.get(name, name))
        if own is not None:
            return own
        module, _, qualname = name.partition(":")
        module = MOVED.get(module, module)
        for cls in self.classes:
            if defined_in(cls) == module and cls.__qualname__ == qualname:
                return cls
        return None


NO_TYPES = Types()
"""agentgraph's own types only."""
