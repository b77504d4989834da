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

The tags and `Types` live in `_json_types`, decoding in `_json_decode`; this
module encodes, and re-exports them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, time
from typing import Any

import attrs
import orjson

from .._util._limits import MAX_DEPTH
from ._errors import ContextDecodingError, ContextEncodingError
from ._json_decode import from_data
from ._json_types import _BYTES, _DICT, _ENUM, _TAGS, _TUPLE, _TYPE, Types, _qualname
from ._json_types import NO_TYPES as NO_TYPES

__all__ = ("Types", "dumps", "dumps_tagged", "from_data", "loads_tagged", "to_data")

_SCALARS = (str, int, float, bool, type(None))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson encodes


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


def map_scalars(value: Any, fn: Callable[[Any], Any]) -> Any:
    """Plain JSON data (dicts and lists) rebuilt with `fn` applied to every scalar in it."""
    if isinstance(value, dict):
        return {k: map_scalars(v, fn) for k, v in value.items()}
    if isinstance(value, list):
        return [map_scalars(v, fn) for v in value]
    return fn(value)


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
