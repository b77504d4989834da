"""JSON encoding of contexts with orjson.

`to_data` turns a value into plain JSON data. With `tagged=True` (checkpoints,
`AgentContext.to_json`) attrs classes, dataclasses, enums, tuples and
non-string-keyed dicts carry a tag so that `from_data` rebuilds them exactly;
without tags (traces) the output is plain JSON for `jq`. A value that cannot be
encoded raises `ContextEncodingError` naming where it sits.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import math
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

import attrs
import orjson

from ._errors import ContextDecodingError, ContextEncodingError

__all__ = ("dumps", "dumps_tagged", "from_data", "loads_tagged", "to_data")

_TYPE = "$type"
_ENUM = "$enum"
_TUPLE = "$tuple"
_DICT = "$dict"
_TAGS = frozenset({_TYPE, _ENUM, _TUPLE, _DICT})
_SCALARS = (str, int, float, bool, type(None))
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson encodes


def _qualname(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _resolve(name: str) -> type[Any]:
    module, _, qualname = name.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(f"{name} is not a class")
    return obj


def _fields(obj: Any) -> dict[str, Any]:
    """The constructor arguments of an attrs instance or a dataclass."""
    if attrs.has(type(obj)):
        return {
            (f.alias or f.name): getattr(obj, f.name) for f in attrs.fields(type(obj)) if f.init
        }
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


def to_data(value: Any, *, tagged: bool = False, where: str = "value") -> Any:
    """Convert `value` into data orjson encodes natively."""
    if isinstance(value, enum.Enum):  # before scalars: a StrEnum is also a str
        if tagged:
            return {_ENUM: _qualname(type(value)), "value": to_data(value.value, where=where)}
        return to_data(value.value, where=where)
    if isinstance(value, _SCALARS):
        if isinstance(value, float) and not math.isfinite(value):
            raise ContextEncodingError(where, float, f"{value} has no JSON form")
        if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
            raise ContextEncodingError(where, int, "integers beyond 64 bits have no JSON form here")
        return value
    if isinstance(value, list | tuple) or _is_history(value):
        items = [to_data(v, tagged=tagged, where=f"{where}[{i}]") for i, v in enumerate(value)]
        return {_TUPLE: items} if tagged and isinstance(value, tuple) else items
    if isinstance(value, Mapping):
        return _mapping(value, tagged=tagged, where=where)
    if attrs.has(type(value)) or dataclasses.is_dataclass(value):
        fields = {
            k: to_data(v, tagged=tagged, where=f"{where}.{k}") for k, v in _fields(value).items()
        }
        if tagged and "<locals>" in type(value).__qualname__:
            raise ContextEncodingError(
                where, type(value), "a class defined inside a function cannot be rebuilt"
            )
        return {_TYPE: _qualname(type(value)), **fields} if tagged else fields
    if isinstance(value, datetime | date | time) and not tagged:
        return value.isoformat()
    if isinstance(value, set | frozenset):
        raise ContextEncodingError(where, type(value), "sets have no order; use a tuple")
    raise ContextEncodingError(where, type(value))


def _is_history(value: Any) -> bool:
    from ._context import History

    return isinstance(value, History)


def _mapping(value: Mapping[Any, Any], *, tagged: bool, where: str) -> Any:
    if all(isinstance(k, str) for k in value) and not (tagged and _TAGS.intersection(value)):
        return {k: to_data(v, tagged=tagged, where=f"{where}[{k!r}]") for k, v in value.items()}
    if not tagged:
        return {str(k): to_data(v, where=f"{where}[{k!r}]") for k, v in value.items()}
    return {
        _DICT: [
            [
                to_data(k, tagged=True, where=f"{where} key"),
                to_data(v, tagged=True, where=f"{where}[{k!r}]"),
            ]
            for k, v in value.items()
        ]
    }


def from_data(data: Any) -> Any:
    """Rebuild the values `to_data(..., tagged=True)` produced."""
    if isinstance(data, list):
        return [from_data(v) for v in data]
    if not isinstance(data, dict):
        return data
    if _TYPE in data:
        cls = _resolve(data[_TYPE])
        return cls(**{k: from_data(v) for k, v in data.items() if k != _TYPE})
    if _ENUM in data:
        return _resolve(data[_ENUM])(from_data(data["value"]))
    if _TUPLE in data:
        return tuple(from_data(v) for v in data[_TUPLE])
    if _DICT in data:
        return {_hashable(from_data(k)): from_data(v) for k, v in data[_DICT]}
    return {k: from_data(v) for k, v in data.items()}


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def dumps(value: Any) -> bytes:
    """Plain JSON (no type tags), for traces and wire bodies."""
    return orjson.dumps(to_data(value))


def dumps_tagged(value: Any) -> bytes:
    """JSON with type tags, so `loads_tagged` restores the same value."""
    return orjson.dumps(to_data(value, tagged=True, where=type(value).__name__))


def loads_tagged(data: bytes | str) -> Any:
    """Decode what `dumps_tagged` wrote; a broken or foreign document is `ContextDecodingError`."""
    try:
        return from_data(orjson.loads(data))
    except (ValueError, TypeError, AttributeError, ImportError, KeyError) as error:
        raise ContextDecodingError(f"{type(error).__name__}: {error}") from error
