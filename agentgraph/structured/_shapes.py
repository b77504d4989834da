"""Compiled type shapes: each checks (and, leniently, coerces) a JSON value and emits its schema.

A shape never raises on bad data: `check` returns the converted value or an
`Invalid` that holds every problem found, each with its path. Paths are built
leaf-first while problems bubble up, so a value that checks clean allocates
nothing for them. This module holds the protocol and the leaf shapes;
`_composites` the shapes made of other shapes.
"""

from __future__ import annotations

import abc
import enum
import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from .._core._errors import UnsupportedType

if TYPE_CHECKING:
    from ._composites import SchemaContext

__all__ = (
    "SCALARS",
    "AnyShape",
    "EnumShape",
    "Invalid",
    "Key",
    "LiteralShape",
    "Problem",
    "Scalar",
    "Shape",
    "expected",
    "same",
    "show",
)


class Key:
    """A path segment naming a dictionary key, rendered `["key"]`."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key


Segment = str | int | Key


class Problem:
    __slots__ = ("message", "rpath")

    def __init__(self, message: str, rpath: list[Segment] | None = None) -> None:
        self.message = message
        self.rpath: list[Segment] = rpath if rpath is not None else []

    def render(self) -> str:
        out: list[str] = []
        for segment in reversed(self.rpath):
            if isinstance(segment, int):
                out.append(f"[{segment}]")
            elif isinstance(segment, Key):
                out.append(f"[{orjson.dumps(segment.key).decode()}]")
            else:
                out.append(f".{segment}" if out else segment)
        return f"{''.join(out) or '$'}: {self.message}"


class Invalid:
    """The result of a failed check: every problem found, with its path."""

    __slots__ = ("problems",)

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems

    def under(self, segment: Segment) -> list[Problem]:
        for problem in self.problems:
            problem.rpath.append(segment)
        return self.problems

    def render(self) -> list[str]:
        return [p.render() for p in self.problems]


def show(value: Any) -> str:
    """A short JSON rendering of a bad value, for error messages."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = f"a Python {type(value).__name__}"
    return text if len(text) <= 60 else f"{text[:57]}..."


def expected(what: str, value: Any) -> Invalid:
    return Invalid([Problem(f"expected {what}, got {show(value)}")])


class Shape(abc.ABC):
    """A compiled type. `label` names it in messages and descriptions."""

    __slots__ = ("label", "memo")

    def __init__(self, label: str) -> None:
        self.label = label
        self.memo: dict[str, Any] = {}

    @abc.abstractmethod
    def check(self, value: Any, strict: bool) -> Any:
        """Return the value converted to the type, or an `Invalid`."""

    @abc.abstractmethod
    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        """Return a fresh JSON Schema dict for this shape."""

    def children(self) -> Sequence[Shape]:
        return ()


def _check_str(value: Any, strict: bool) -> Any:
    return value if isinstance(value, str) else expected("str", value)


# Only plain ASCII decimals: `int()` and `float()` also take "1_000" and other scripts' digits.
_INT_TEXT = re.compile(r"\s*[+-]?\d+\s*", re.ASCII)
_FLOAT_TEXT = re.compile(r"\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*", re.ASCII)


def _number_text(value: str) -> float | None:
    if _FLOAT_TEXT.fullmatch(value) is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _check_int(value: Any, strict: bool) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not strict:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            if _INT_TEXT.fullmatch(value) is not None:
                try:
                    return int(value)
                except ValueError:  # more digits than `int` reads from text
                    return expected("int", value)
            number = _number_text(value)
            if number is not None and number.is_integer():
                return int(number)
    return expected("int", value)


def _check_float(value: Any, strict: bool) -> Any:
    if isinstance(value, float):
        return value if type(value) is float else float(value)  # a NaN the parser marked
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)  # JSON does not tell 1 from 1.0
        except OverflowError:
            return expected("float", value)
    if not strict and isinstance(value, str):
        number = _number_text(value)
        if number is not None:
            return number
    return expected("float", value)


def _check_bool(value: Any, strict: bool) -> Any:
    if isinstance(value, bool):
        return value
    if not strict and isinstance(value, str):
        text = value.strip().lower()
        if text in ("true", "false"):
            return text == "true"
    return expected("bool", value)


def _check_none(value: Any, strict: bool) -> Any:
    return None if value is None else expected("null", value)


SCALARS: dict[type[Any] | None, tuple[str, str, Callable[[Any, bool], Any]]] = {
    str: ("str", "string", _check_str),
    int: ("int", "integer", _check_int),
    float: ("float", "number", _check_float),
    bool: ("bool", "boolean", _check_bool),
    None: ("None", "null", _check_none),
}


class Scalar(Shape):
    __slots__ = ("_check", "json_type")

    def __init__(self, kind: type[Any] | None) -> None:
        label, self.json_type, self._check = SCALARS[kind]
        super().__init__(label)

    def check(self, value: Any, strict: bool) -> Any:
        return self._check(value, strict)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": self.json_type}


class AnyShape(Shape):
    __slots__ = ()

    def __init__(self) -> None:
        super().__init__("Any")

    def check(self, value: Any, strict: bool) -> Any:
        return value

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        if ctx.strict:
            raise UnsupportedType("Any", "strict schemas need a concrete type")
        return {}


def same(value: Any, allowed: Any) -> bool:
    """Equality that keeps JSON's types apart (True is not 1, "1" is not 1)."""
    if isinstance(allowed, str):
        return isinstance(value, str) and value == allowed
    return type(value) is type(allowed) and value == allowed


class LiteralShape(Shape):
    __slots__ = ("values",)

    def __init__(self, values: Sequence[Any]) -> None:
        super().__init__(" | ".join(show(v) for v in values))
        self.values = tuple(values)

    def check(self, value: Any, strict: bool) -> Any:
        for allowed in self.values:
            if same(value, allowed):
                return allowed
        if not strict:
            for allowed in self.values:
                kind = type(allowed) if allowed is not None else None
                if kind is str:
                    continue
                coerced = SCALARS[kind][2](value, False)
                if not isinstance(coerced, Invalid) and same(coerced, allowed):
                    return allowed
        return expected(f"one of {', '.join(show(v) for v in self.values)}", value)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        out: dict[str, Any] = {}
        kinds = {type(v) for v in self.values}
        if len(kinds) == 1:
            out["type"] = SCALARS[None if None in self.values else kinds.pop()][1]
        if len(self.values) == 1:
            out["const"] = self.values[0]
        else:
            out["enum"] = list(self.values)
        return out


class EnumShape(Shape):
    __slots__ = ("cls", "description", "values")

    def __init__(self, cls: type[enum.Enum], description: str | None) -> None:
        self.values = LiteralShape([m.value for m in cls])
        super().__init__(self.values.label)
        self.cls = cls
        self.description = description

    def check(self, value: Any, strict: bool) -> Any:
        if isinstance(value, self.cls):
            return value
        result = self.values.check(value, strict)
        return result if isinstance(result, Invalid) else self.cls(result)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        out = self.values.schema(ctx)
        if self.description:
            out["description"] = self.description
        return out
