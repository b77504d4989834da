"""Decoding the tagged JSON `_json` writes: `from_data` and the checks it makes.

Stored data is untrusted: every tag resolves through a `Types` or is refused,
every constructor gets only the fields its class declares, and nesting is
bounded, so a broken or forged document is a `ContextDecodingError`.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import attrs

from .._util._limits import MAX_DEPTH
from ._errors import ContextDecodingError
from ._json_types import _BYTES, _DICT, _ENUM, _TUPLE, _TYPE, NO_TYPES, Types, unloaded

__all__ = ("from_data",)


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
        home = unloaded(tag)
        if home is not None:
            raise ContextDecodingError(
                f"the data names type {shown!r}, defined in {home}, which has not been "
                f"imported: import {home} before decoding"
            )
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
