"""Deterministic example values that satisfy a JSON Schema."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ("schema_example",)

_MAX_DEPTH = 8
_FORMATS = {
    "date": "2024-01-02",
    "date-time": "2024-01-02T03:04:05Z",
    "time": "03:04:05",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000001",
    "ipv4": "192.0.2.1",
}


def schema_example(schema: Mapping[str, Any], *, include_optional: bool = True) -> Any:
    """A value valid against `schema`, the same value every time.

    Handles `type` (and type lists), `enum`, `const`, `default`, `anyOf` / `oneOf`
    / `allOf`, local `$ref`s into `$defs` / `definitions`, string formats and
    length bounds, numeric bounds and `multipleOf`, array item counts, and
    objects with required and optional properties (optional ones are included
    unless `include_optional=False`). `pattern` is not interpreted. Strings
    name the property they fill, so arguments are easy to read in a test.
    """
    return _Builder(schema, include_optional).value(schema, "value", 0)


class _Builder:
    def __init__(self, root: Mapping[str, Any], include_optional: bool) -> None:
        self._root = root
        self._include_optional = include_optional

    def value(self, schema: Mapping[str, Any], name: str, depth: int) -> Any:
        schema = self._resolve(schema)
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        combined = self._combined(schema)
        if combined is not None:
            return self.value(combined, name, depth)
        kind = _kind(schema)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, name, depth)
        scalar = _SCALARS.get(kind or "")
        return None if scalar is None else scalar(schema, name)

    def _combined(self, schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The one schema an `anyOf` / `oneOf` / `allOf` stands for, or None."""
        for key in ("anyOf", "oneOf"):
            if schema.get(key):
                return _pick(schema[key])
        if not schema.get("allOf"):
            return None
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged = _merge(merged, self._resolve(part))
        return _merge(merged, {k: v for k, v in schema.items() if k != "allOf"})

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
            ref = schema["$ref"]
            target: Any = self._root
            try:
                for part in ref.removeprefix("#").strip("/").split("/"):
                    if part:
                        target = target[part.replace("~1", "/").replace("~0", "~")]
            except (KeyError, TypeError, IndexError) as exc:
                raise ValueError(f"cannot resolve $ref {ref!r} in the schema") from exc
            if not isinstance(target, Mapping):
                raise ValueError(f"$ref {ref!r} does not point to a schema object")
            schema = _merge(target, {k: v for k, v in schema.items() if k != "$ref"})
            seen += 1
        return schema

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        # Past the depth limit only required fields are filled, so recursive
        # schemas (a tree of nodes) still end.
        optional = self._include_optional and depth < _MAX_DEPTH
        result: dict[str, Any] = {}
        for key, sub in properties.items():
            if key in required or optional:
                result[key] = self.value(sub, key, depth + 1)
        return result

    def _array(self, schema: Mapping[str, Any], name: str, depth: int) -> list[Any]:
        count = int(schema.get("minItems", 1 if depth < _MAX_DEPTH else 0))
        count = min(count, int(schema.get("maxItems", count)))
        prefix = schema.get("prefixItems") or []
        items = schema.get("items")
        values: list[Any] = [self.value(sub, name, depth + 1) for sub in prefix]
        if isinstance(items, Mapping):
            values.extend(self.value(items, name, depth + 1) for _ in range(count - len(values)))
        if schema.get("uniqueItems") and values and count > 1:
            # Identical generated items would break uniqueness; keep one.
            values = values[:1]
        return values


def _kind(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        non_null = [k for k in kind if k != "null"]
        return str(non_null[0]) if non_null else "null"
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _pick(options: list[Mapping[str, Any]]) -> Mapping[str, Any]:
    # Prefer a concrete alternative to `null`, so optional values are exercised.
    for option in options:
        if option.get("type") != "null":
            return option
    return options[0]


def _merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        elif key == "required" and isinstance(merged.get(key), list):
            merged[key] = [*merged[key], *value]
        else:
            merged[key] = value
    return merged


def _string(schema: Mapping[str, Any], name: str) -> str:
    if "default" in schema and isinstance(schema["default"], str):
        return schema["default"]
    text = _FORMATS.get(str(schema.get("format", "")), name or "text")
    low = int(schema.get("minLength", 0))
    high = schema.get("maxLength")
    if len(text) < low:
        text += "x" * (low - len(text))
    if high is not None:
        text = text[: int(high)]
    return text


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, bool, float | None, bool]:
    """(low, low is exclusive, high, high is exclusive), for both draft-4 and 2020-12 styles."""
    low, high = schema.get("minimum"), schema.get("maximum")
    low_open = high_open = False
    exclusive_low, exclusive_high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(exclusive_low, bool):
        low_open = exclusive_low and low is not None
    elif isinstance(exclusive_low, int | float):
        low, low_open = exclusive_low, True
    if isinstance(exclusive_high, bool):
        high_open = exclusive_high and high is not None
    elif isinstance(exclusive_high, int | float):
        high, high_open = exclusive_high, True
    return low, low_open, high, high_open


def _integer(schema: Mapping[str, Any]) -> int:
    low, low_open, high, high_open = _bounds(schema)
    value = 1 if low is None else math.floor(low) + 1 if low_open else math.ceil(low)
    step = schema.get("multipleOf")
    if isinstance(step, int) and step > 0 and value % step:
        value += step - value % step
    if high is not None:
        top = math.ceil(high) - 1 if high_open else math.floor(high)
        value = min(value, top)
    return value


def _number(schema: Mapping[str, Any]) -> float:
    low, low_open, high, _ = _bounds(schema)
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        start = 0.0 if low is None else math.ceil(low / step) * step
        if low is not None and low_open and start <= low:
            start += step
        return float(start if start else step)
    if low is not None and high is not None:
        return (float(low) + float(high)) / 2
    if low is not None:
        return float(low) + 1.5
    if high is not None:
        return float(high) - 1.5
    return 1.5


_SCALARS: dict[str, Callable[[Mapping[str, Any], str], Any]] = {
    "string": _string,
    "integer": lambda schema, _: _integer(schema),
    "number": lambda schema, _: _number(schema),
    "boolean": lambda schema, _: True,
    "null": lambda schema, _: None,
}
