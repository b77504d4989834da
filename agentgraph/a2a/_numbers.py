"""Whole numbers of A2A data parts, as the type they are validated against says.

A data part is a protobuf `Value`, in which every number is a double: an
integer a client sent arrives as `2.0`. Where the JSON Schema of the type the
value is validated against says `integer`, or lists that integer in an `enum`
(`Literal[1, "a"]`), such a double is an `int` again; anywhere else (a `float`
field, an `Any` one, an untyped graph) it stays the double it came as.
Nothing is guessed from the value alone.

A `Struct`'s fields are a map, which keeps no order: an object comes back with
the fields its schema lists in the schema's order, any others after them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ("whole_numbers",)

_REF = "#/$defs/"
_Schema = Mapping[str, Any]


def whole_numbers(schema: _Schema, value: Any) -> Any:
    """`value` with each integral double at a place `schema` types `integer` made an `int`."""
    defs = schema.get("$defs")
    return _narrow(schema, defs if isinstance(defs, Mapping) else {}, value)


def _narrow(node: Any, defs: Mapping[str, Any], value: Any) -> Any:
    node = _resolved(node, defs)
    if isinstance(value, float):
        whole = value.is_integer() and (_integer(node, defs) or _listed(node, defs, value))
        return int(value) if whole else value
    if isinstance(value, dict):
        shape = _branch(node, defs, "object", value)
        props = shape.get("properties")
        props = props if isinstance(props, Mapping) else {}
        extra = shape.get("additionalProperties")
        ordered = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: _narrow(props.get(k, extra), defs, value[k]) for k in ordered}
    if isinstance(value, list):
        shape = _branch(node, defs, "array", value)
        prefix = shape.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        rest = shape.get("items")
        return [
            _narrow(prefix[i] if i < len(prefix) else rest, defs, v) for i, v in enumerate(value)
        ]
    return value


def _resolved(node: Any, defs: Mapping[str, Any]) -> _Schema:
    for _ in range(len(defs) + 1):  # a reference to a reference, never a loop
        if not isinstance(node, Mapping):
            return {}
        ref = node.get("$ref")
        if not (isinstance(ref, str) and ref.startswith(_REF)):
            return node
        node = defs.get(ref[len(_REF) :])
    return {}


def _branches(node: _Schema, defs: Mapping[str, Any]) -> list[_Schema]:
    found = [node.get("anyOf"), node.get("oneOf")]
    return [_resolved(b, defs) for group in found if isinstance(group, list) for b in group]


def _types(node: _Schema) -> set[str]:
    kind = node.get("type")
    return {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()


def _integer(node: _Schema, defs: Mapping[str, Any]) -> bool:
    """Whether a number here must be an integer (`integer`, and `number` nowhere beside it)."""
    kinds = _types(node)
    for branch in _branches(node, defs):
        kinds |= _types(branch)
    return "integer" in kinds and "number" not in kinds


def _listed(node: _Schema, defs: Mapping[str, Any], value: float) -> bool:
    """Whether an `enum` or `const` here (with no `type` saying so: `Literal[1, "a"]`)
    lists the integer that `value` is."""
    for shape in (node, *_branches(node, defs)):
        listed = shape.get("enum")
        choices = listed if isinstance(listed, list) else []
        if "const" in shape:
            choices = [*choices, shape["const"]]
        if any(type(c) is int and c == value for c in choices):
            return True
    return False


def _branch(node: _Schema, defs: Mapping[str, Any], kind: str, value: Any) -> _Schema:
    """The schema an object or array value takes here: the node, or the one branch it fits."""
    if kind in _types(node) or not _branches(node, defs):
        return node
    fits = [b for b in _branches(node, defs) if kind in _types(b)]
    if len(fits) > 1 and isinstance(value, dict):  # a tagged union: the variant its tag names
        fits = [b for b in fits if _tagged(b, value)]
    return fits[0] if len(fits) == 1 else {}


def _tagged(node: _Schema, value: Mapping[str, Any]) -> bool:
    props = node.get("properties")
    if not isinstance(props, Mapping):
        return False
    for key, prop in props.items():
        if isinstance(prop, Mapping) and "const" in prop and value.get(key) != prop["const"]:
            return False
    return True
