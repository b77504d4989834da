"""Arguments checked against an MCP server's own JSON Schema for a tool.

A server describes each tool's input with JSON Schema (2020-12 unless the
schema names another draft). The `jsonschema` package, which the MCP SDK
already depends on, does the validating; problems come back in the same
`path: message` form as `@tool`'s compiled validators, so the model reads the
same kind of answer either way. References are resolved within the schema
only: nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from .._core._errors import ToolError
from ..structured._shapes import Invalid, Key, Problem, Segment

__all__ = ("SchemaArguments",)

_MAX_PROBLEMS = 20


class SchemaArguments:
    """Validates a call's arguments against a tool's JSON Schema; returns them unchanged.

    Nothing is coerced: the server validates again with the same schema, and
    a value it would refuse is refused here first, with the problems listed.
    """

    __slots__ = ("validator",)

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        plain = _plain(schema)
        cls = jsonschema.validators.validator_for(plain, default=jsonschema.Draft202012Validator)
        try:
            cls.check_schema(plain)
        except jsonschema.exceptions.SchemaError as exc:
            raise ToolError(
                f"tool {tool!r}: its input schema is not valid JSON Schema: {exc.message}"
            ) from exc
        if plain.get("type", "object") != "object":
            raise ToolError(f"tool {tool!r}: its input schema must describe an object")
        self.validator = cls(plain)

    def check(self, value: Any, strict: bool) -> Any:
        if not isinstance(value, Mapping):
            return Invalid([Problem(f"expected an object, got {type(value).__name__}")])
        arguments = dict(value)
        try:
            errors = sorted(self.validator.iter_errors(arguments), key=_order)
        except Exception as exc:  # e.g. a reference that cannot be resolved
            return Invalid([Problem(f"the tool's schema could not be applied: {exc}")])
        if not errors:
            return arguments
        return Invalid([_problem(e) for e in errors[:_MAX_PROBLEMS]])


def _order(error: jsonschema.exceptions.ValidationError) -> list[tuple[int, int, str]]:
    """Problems in the order of their paths (indexes and keys never compared to each other)."""
    return [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.path]


def _problem(error: jsonschema.exceptions.ValidationError) -> Problem:
    # Problem paths are stored leaf first.
    path: list[Segment] = [_segment(part) for part in reversed(error.path)]
    return Problem(error.message, path)


def _segment(part: Any) -> Segment:
    if isinstance(part, int):
        return part
    text = str(part)
    return text if text.isidentifier() else Key(text)


def _plain(value: Any) -> Any:
    """A deep copy made of dicts and lists (the spec may hold read-only mappings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
