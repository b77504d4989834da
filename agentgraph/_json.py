"""JSON encoding of contexts with orjson, and the types decoding may construct.

`to_data` turns a value into plain JSON data. With `tagged=True` (checkpoints,
`AgentContext.to_json`) attrs classes, dataclasses, enums, tuples and
non-string-keyed dicts carry a tag so that `from_data` rebuilds them exactly;
without tags (traces) the output is plain JSON for `jq`. Bytes (an image in a
message) are base64 with a tag, and in plain JSON only their size and SHA-256,
so a trace never dumps a file. A value that cannot be encoded raises
`ContextEncodingError` naming where it sits.

Stored data is untrusted: a tag names a class, but decoding constructs only
agentgraph's own data types and the classes in the `Types` it is given, looked
up by name; it never imports a module because the data named it. agentgraph's
types are stored under stable public names (`agentgraph:Message`); the private
module paths older records used (`agentgraph.llm._messages:Message`) still load.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import math
import typing
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime, time
from typing import Any

import attrs
import orjson

from ._errors import ContextDecodingError, ContextEncodingError
from ._limits import MAX_DEPTH

__all__ = ("Types", "dumps", "dumps_tagged", "from_data", "loads_tagged", "to_data")

_TYPE = "$type"
_ENUM = "$enum"
_TUPLE = "$tuple"
_DICT = "$dict"
_BYTES = "$bytes"
_TAGS = frozenset({_TYPE, _ENUM, _TUPLE, _DICT, _BYTES})
_SCALARS = (str, int, float, bool, type(None))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson encodes


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
    return _STABLE.get((cls.__module__, cls.__qualname__)) or f"{cls.__module__}:{cls.__qualname__}"


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
            if f"{cls.__module__}:{cls.__qualname__}" == name:
                return cls
        return None


NO_TYPES = Types()
"""agentgraph's own types only."""


_INIT_FIELDS: dict[type[Any], tuple[tuple[str, str], ...]] = {}
"""Per attrs class or dataclass: (argument name, attribute name) of each init field."""


def _fields(obj: Any) -> Iterator[tuple[str, Any]]:
    """The constructor arguments of an attrs instance or a dataclass, as (name, value)."""
    cls = type(obj)
    names = _INIT_FIELDS.get(cls)
    if names is None:
        if attrs.has(cls):
            names = tuple((f.alias or f.name, f.name) for f in attrs.fields(cls) if f.init)
        else:
            names = tuple((f.name, f.name) for f in dataclasses.fields(obj) if f.init)
        _INIT_FIELDS[cls] = names
    for argument, attribute in names:
        yield argument, getattr(obj, attribute)


# Where a value sits, for error messages only: a string, or (parent, suffix format, key),
# turned into text when an error needs it, so that converting a value builds no strings.
Where = str | tuple[Any, str, Any]


def _place(where: Where) -> str:
    if isinstance(where, str):
        return where
    parent, form, key = where
    return _place(parent) + form.format(key)


def to_data(value: Any, *, tagged: bool = False, where: str = "value", depth: int = 0) -> Any:
    """Convert `value` into data orjson encodes natively.

    Raises:
        ContextEncodingError: a value with no JSON form, or nested deeper than
            `MAX_DEPTH` levels; `.field` says where it sits.
    """
    return _to(value, tagged, where, depth)


def _to(value: Any, tagged: bool, where: Where, depth: int) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int or kind is float:
        return _scalar(value, where)
    if isinstance(value, enum.Enum):  # before scalars: a StrEnum is also a str
        if tagged:
            return {_ENUM: _qualname(type(value)), "value": _to(value.value, False, where, 0)}
        return _to(value.value, False, where, 0)
    if isinstance(value, _SCALARS):
        return _scalar(value, where)
    if depth >= MAX_DEPTH:
        raise ContextEncodingError(
            _place(where), type(value), f"it nests deeper than {MAX_DEPTH} levels"
        )
    inner = depth + 1
    if isinstance(value, list | tuple) or _is_history(value):
        items = [_to(v, tagged, (where, "[{}]", i), inner) for i, v in enumerate(value)]
        return {_TUPLE: items} if tagged and isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        return _mapping(value, tagged=tagged, where=where, depth=inner)
    if attrs.has(kind) or dataclasses.is_dataclass(value):
        fields = {k: _to(v, tagged, (where, ".{}", k), inner) for k, v in _fields(value)}
        if tagged and "<locals>" in kind.__qualname__:
            raise ContextEncodingError(
                _place(where), kind, "a class defined inside a function cannot be rebuilt"
            )
        return {_TYPE: _qualname(kind), **fields} if tagged else fields
    return _leaf(value, tagged, where)


def _leaf(value: Any, tagged: bool, where: Where) -> Any:
    """Bytes and dates, which have a JSON form; anything else has none."""
    if isinstance(value, bytes):
        # Loaded here, not with the package: few contexts hold bytes.
        import base64
        import hashlib

        if tagged:
            return {_BYTES: base64.b64encode(value).decode()}
        return {"size": len(value), "sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, datetime | date | time) and not tagged:
        return value.isoformat()
    if isinstance(value, set | frozenset):
        raise ContextEncodingError(_place(where), type(value), "sets have no order; use a tuple")
    raise ContextEncodingError(_place(where), type(value))


def _scalar(value: Any, where: Where) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        raise ContextEncodingError(_place(where), float, f"{value} has no JSON form")
    if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
        raise ContextEncodingError(
            _place(where), int, "integers beyond 64 bits have no JSON form here"
        )
    return value


def _is_history(value: Any) -> bool:
    from ._context import History

    return isinstance(value, History)


def _mapping(value: Mapping[Any, Any], *, tagged: bool, where: Where, depth: int) -> Any:
    if all(isinstance(k, str) for k in value) and not (tagged and _TAGS.intersection(value)):
        return {k: _to(v, tagged, (where, "[{!r}]", k), depth) for k, v in value.items()}
    if not tagged:
        return {str(k): _to(v, False, (where, "[{!r}]", k), depth) for k, v in value.items()}
    return {
        _DICT: [
            [
                _to(k, True, (where, " key", None), depth),
                _to(v, True, (where, "[{!r}]", k), depth),
            ]
            for k, v in value.items()
        ]
    }


def from_data(data: Any, types: Types = NO_TYPES, *, depth: int = 0) -> Any:
    """Rebuild the values `to_data(..., tagged=True)` produced, with classes from `types`.

    Raises:
        ContextDecodingError: a tag names a class `types` does not hold, a class's
            fields do not match, or the data nests deeper than any encodable value.
    """
    if isinstance(data, list):
        _deep(depth)
        return [from_data(v, types, depth=depth + 1) for v in data]
    if not isinstance(data, dict):
        return data
    _deep(depth)
    inner = depth + 1
    if _TYPE in data:
        cls = _class(data[_TYPE], types)
        fields = {k: from_data(v, types, depth=inner) for k, v in data.items() if k != _TYPE}
        return _construct(cls, fields, data[_TYPE])
    if _ENUM in data:
        return _member(_class(data[_ENUM], types), data.get("value"), data[_ENUM])
    if _BYTES in data:
        return _bytes(data[_BYTES])
    if _TUPLE in data:
        return tuple(from_data(v, types, depth=inner) for v in _list(data[_TUPLE], _TUPLE))
    if _DICT in data:
        decoded: dict[Any, Any] = {}
        for item in _list(data[_DICT], _DICT):
            k, v = _pair(item)
            key = _hashable(from_data(k, types, depth=inner))
            try:
                decoded[key] = from_data(v, types, depth=inner)
            except TypeError:
                raise ContextDecodingError(f"a $dict key of type {type(key).__name__}") from None
        return decoded
    return {k: from_data(v, types, depth=inner) for k, v in data.items()}


_DECODE_DEPTH = 2 * MAX_DEPTH + 8
"""JSON levels a stored value may take: a tag can wrap each level once, plus the envelope."""


def _deep(depth: int) -> None:
    if depth >= _DECODE_DEPTH:
        raise ContextDecodingError(
            f"the data nests deeper than {MAX_DEPTH} levels, the most a value may have"
        )


def _class(tag: Any, types: Types) -> type[Any]:
    if not isinstance(tag, str):
        raise ContextDecodingError(f"a type tag must be a string, not {type(tag).__name__}")
    cls = types.resolve(tag)
    if cls is None:
        shown = tag if len(tag) <= 200 else tag[:199] + "…"
        raise ContextDecodingError(
            f"the data names type {shown!r}, which is not a type this decoder may construct: "
            "register your own classes with Types.of(...) and pass types=..."
        )
    return cls


def _construct(cls: type[Any], fields: dict[str, Any], tag: str) -> Any:
    if attrs.has(cls):
        allowed = {(f.alias or f.name) for f in attrs.fields(cls) if f.init}
    elif dataclasses.is_dataclass(cls):
        allowed = {f.name for f in dataclasses.fields(cls) if f.init}
    else:
        raise ContextDecodingError(f"type {tag!r} is neither an attrs class nor a dataclass")
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ContextDecodingError(f"type {tag!r} has no field {unknown[0]!r}")
    try:
        return cls(**fields)
    except (TypeError, ValueError) as error:
        raise ContextDecodingError(f"type {tag!r} cannot be built: {error}") from error


def _member(cls: type[Any], value: Any, tag: str) -> Any:
    if not issubclass(cls, enum.Enum):
        raise ContextDecodingError(f"type {tag!r} is not an enum")
    try:
        return cls(value)
    except ValueError as error:
        raise ContextDecodingError(f"enum {tag!r} has no value {value!r}") from error


def _bytes(value: Any) -> bytes:
    import base64
    import binascii

    if not isinstance(value, str):
        raise ContextDecodingError(f"{_BYTES} holds {type(value).__name__}, not base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as error:
        raise ContextDecodingError(f"{_BYTES} is not base64: {error}") from error


def _list(value: Any, tag: str) -> list[Any]:
    if not isinstance(value, list):
        raise ContextDecodingError(f"{tag} holds {type(value).__name__}, not a list")
    return value


def _pair(item: Any) -> tuple[Any, Any]:
    if not isinstance(item, list) or len(item) != 2:
        raise ContextDecodingError("a $dict item is not a [key, value] pair")
    return item[0], item[1]


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def dumps(value: Any) -> bytes:
    """Plain JSON (no type tags), for traces and wire bodies."""
    return orjson.dumps(to_data(value))


def dumps_tagged(value: Any) -> bytes:
    """JSON with type tags, so `loads_tagged` restores the same value."""
    return orjson.dumps(to_data(value, tagged=True, where=type(value).__name__))


def loads_tagged(data: bytes | str, types: Types = NO_TYPES) -> Any:
    """Decode what `dumps_tagged` wrote; a broken or foreign document is `ContextDecodingError`."""
    try:
        return from_data(orjson.loads(data), types)
    except ContextDecodingError:
        raise
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError) as error:
        raise ContextDecodingError(f"{type(error).__name__}: {error}") from error
