"""Describe Python types to a model, and check what the model sends back.

```python
@generable("A problem found in a file")
@attrs.frozen
class Issue:
    line: Annotated[int, Guide("1-based line number")]
    message: str

json_schema(list[Issue])                 # JSON Schema (draft 2020-12)
json_schema(Issue, strict=True)          # OpenAI strict-mode variant
prompt_fragment(Issue)                   # instructions naming the exact JSON shape
validate(Issue, {"line": "3", "message": "unused import"})   # Issue(line=3, ...)
```

Everything is computed once per type. Validation collects every problem, each
as `path: message` (`issues[2].line: expected int, got "x"`), and raises them
together as an `OutputError`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, overload

import attrs
import orjson

from .._core._errors import OutputError, UnsupportedType
from .._util._limits import MAX_DEPTH
from ..llm._messages import RAW_ARGUMENTS as RAW_ARGUMENTS
from ..llm._messages import ToolSpec
from ._compile import shape_of
from ._composites import (
    NO_DEFAULT,
    ObjectShape,
    SchemaContext,
    TaggedUnionShape,
    UnionShape,
)
from ._shapes import Invalid, Shape, show

__all__ = (
    "RAW_ARGUMENTS",
    "describe",
    "from_tool_call",
    "json_schema",
    "prompt_fragment",
    "tools_for_union",
    "validate",
)

T = TypeVar("T")

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The tool names every provider accepts."""


def build_schema(shape: Shape, *, strict: bool) -> dict[str, Any]:
    """A fresh JSON Schema for `shape`; an object at the root is inlined, not referenced."""
    root = shape if isinstance(shape, ObjectShape) else None
    ctx = SchemaContext(strict, root)
    schema = root.body(ctx) if root is not None else shape.schema(ctx)
    if strict and ctx.defs:
        schema = _lone_refs(schema, ctx.defs)
    if ctx.defs:
        schema["$defs"] = (
            {k: _lone_refs(v, ctx.defs) for k, v in ctx.defs.items()} if strict else ctx.defs
        )
    return schema


def _lone_refs(node: Any, defs: dict[str, Any], inlining: frozenset[str] = frozenset()) -> Any:
    """Strict schemas allow nothing beside a `$ref`: inline a referenced definition
    that carries a description, or, for a reference back into itself (the root, or a
    definition being inlined), keep the bare reference."""
    if isinstance(node, list):
        return [_lone_refs(item, defs, inlining) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and len(node) > 1:
        name = ref.removeprefix("#/$defs/")
        if name == ref or name not in defs or name in inlining:
            return {"$ref": ref}
        extras = {k: v for k, v in node.items() if k != "$ref"}
        return _lone_refs({**defs[name], **extras}, defs, inlining | {name})
    return {k: _lone_refs(v, defs, inlining) for k, v in node.items()}


def json_schema(tp: Any, *, strict: bool = False) -> dict[str, Any]:
    """The JSON Schema of `tp` (a fresh dict each call, built once per type).

    With `strict=True`, the OpenAI strict-mode variant: every property is
    required (optionals become a union with null), every object has
    `additionalProperties: false`, and no defaults are shown. Types with no
    strict form (`dict[str, T]`, `Any`) raise `UnsupportedType`.
    """
    shape = shape_of(tp)
    key = "schema:strict" if strict else "schema"
    encoded = shape.memo.get(key)
    if encoded is None:
        encoded = shape.memo[key] = orjson.dumps(build_schema(shape, strict=strict))
    result: dict[str, Any] = orjson.loads(encoded)
    return result


def describe(tp: Any) -> str:
    """A short markdown description of `tp`: each class with its fields, types and guides.

    A class marked `@generable(describe="...")` is described by that text, verbatim.
    """
    shape = shape_of(tp)
    text = shape.memo.get("describe")
    if text is None:
        text = shape.memo["describe"] = _describe(shape)
    return str(text)


def _describe(shape: Shape) -> str:
    if isinstance(shape, ObjectShape) and shape.describe is not None:
        return shape.describe
    sections = [] if isinstance(shape, ObjectShape) else [_headline(shape)]
    sections.extend(_section(obj) for obj in _walk_objects(shape))
    return "\n\n".join(sections)


def _walk_objects(shape: Shape) -> Iterator[ObjectShape]:
    """Every object shape reachable from `shape`, each once, in first-seen order."""
    seen: set[int] = set()
    stack = [shape]
    order: list[ObjectShape] = []
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ObjectShape):
            order.append(current)
        stack.extend(reversed(current.children()))
    return iter(order)


def _headline(shape: Shape) -> str:
    if isinstance(shape, TaggedUnionShape):
        names = ", ".join(f"`{v.name}`" for v in shape.variants)
        return f"One of {names}; the `{shape.key}` field says which."
    return f"A value of type `{shape.label}`."


def _section(shape: ObjectShape) -> str:
    if shape.describe is not None:
        return shape.describe
    lines = [f"**{shape.name}**" + (f": {shape.description}" if shape.description else "")]
    for field in shape.fields:
        if field.required:
            note = "required"
        elif field.default is not NO_DEFAULT:
            note = f"default {show(field.default)}"
        else:
            note = "optional"
        guide = f": {field.guide}" if field.guide else ""
        lines.append(f"- `{field.key}` ({field.shape.label}, {note}){guide}")
    if not shape.fields:
        lines.append("- no fields: send `{}`")
    return "\n".join(lines)


def prompt_fragment(tp: Any) -> str:
    """An instruction naming the exact JSON to answer with: the description and the schema."""
    shape = shape_of(tp)
    text = shape.memo.get("prompt")
    if text is None:
        schema = orjson.dumps(build_schema(shape, strict=False)).decode()
        objects = isinstance(shape, ObjectShape | TaggedUnionShape)
        kind = "one JSON object" if objects else "one JSON value"
        text = shape.memo["prompt"] = (
            f"Answer with {kind} and nothing else: no text before or after it and no "
            f"code fences.\n\n{describe(tp)}\n\nThe JSON must match this JSON Schema:\n{schema}"
        )
    return str(text)


def invalid_error(label: str, invalid: Invalid, *, raw: str | None = None) -> OutputError:
    """The `OutputError` for a failed check, listing every problem."""
    errors = invalid.render()
    count = f"{len(errors)} problem" + ("s" if len(errors) != 1 else "")
    lines = "\n".join(f"  {e}" for e in errors)
    return OutputError(
        f"value does not match {label} ({count}):\n{lines}",
        attempts=() if raw is None else (raw,),
        errors=errors,
        details={"type": label},
    )


@overload
def validate(tp: type[T], value: Any, *, strict: bool = False) -> T: ...
@overload
def validate(tp: Any, value: Any, *, strict: bool = False) -> Any: ...
def validate(tp: Any, value: Any, *, strict: bool = False) -> Any:
    """Check `value` (parsed JSON) against `tp` and return it as an instance of `tp`.

    `strict=False` allows safe coercions (`"42"` to 42, `"true"` to True, `"1.5"`
    to 1.5, integral floats to int) and ignores unknown fields. `strict=True`
    converts nothing beyond JSON's own forms (int to float, array to tuple,
    object to class, value to enum member) and rejects unknown fields.

    Raises:
        OutputError: with `.errors` holding every problem as `path: message`.
    """
    shape = shape_of(tp)
    _within_depth(value)
    result = shape.check(value, strict)
    if isinstance(result, Invalid):
        raise invalid_error(shape.label, result)
    return result


def _within_depth(value: Any) -> None:
    """Refuse data nested deeper than `MAX_DEPTH`, which validation would recurse into.

    Parsed text never is (the parsers refuse it first); data built in Python may be.
    """
    level: list[tuple[Any, int]] = [(value, 1)]
    while level:
        item, depth = level.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            raise OutputError(
                f"the value nests deeper than {MAX_DEPTH} levels",
                errors=(f"$: the value nests deeper than {MAX_DEPTH} levels",),
            )
        level.extend(
            (child, depth + 1) for child in children if isinstance(child, dict | list | tuple)
        )


@attrs.frozen
class _VariantTool:
    spec: ToolSpec
    shape: ObjectShape
    key: str | None
    tag: Any


def _variant_tools(tp: Any) -> tuple[_VariantTool, ...]:
    shape = shape_of(tp)
    tools = shape.memo.get("tools")
    if tools is None:
        tools = shape.memo["tools"] = _make_variant_tools(tp, shape)
    return tuple(tools)


def _make_variant_tools(tp: Any, shape: Shape) -> tuple[_VariantTool, ...]:
    entries: list[tuple[ObjectShape, str | None, Any]]
    if isinstance(shape, TaggedUnionShape):
        entries = [(v, shape.key, shape.tag_of(v)) for v in shape.variants]
    elif isinstance(shape, UnionShape) and all(isinstance(m, ObjectShape) for m in shape.members):
        entries = [(m, None, None) for m in shape.members if isinstance(m, ObjectShape)]
    elif isinstance(shape, ObjectShape):
        entries = [(shape, None, None)]
    else:
        raise UnsupportedType(tp, "tools need attrs classes or dataclasses, alone or in a union")
    tools: list[_VariantTool] = []
    for variant, key, tag in entries:
        name = tag if isinstance(tag, str) and TOOL_NAME.fullmatch(tag) else variant.name
        if any(t.spec.name == name for t in tools):
            raise UnsupportedType(tp, f"two variants would both be the tool {name!r}")
        parameters = build_schema(variant, strict=False)
        if key is not None:  # the tool's name carries the discriminator
            del parameters["properties"][key]
            parameters["required"] = [k for k in parameters["required"] if k != key]
        spec = ToolSpec(name, variant.description or "", parameters)
        tools.append(_VariantTool(spec, variant, key, tag))
    return tuple(tools)


def tools_for_union(tp: Any) -> list[ToolSpec]:
    """One tool per variant of a union of classes (or one for a single class).

    A tagged union's tools are named by each variant's discriminator value
    (when it is a valid tool name) and omit that field; other unions name
    their tools after the classes. `from_tool_call` decodes a call back.
    """
    return [t.spec for t in _variant_tools(tp)]


def from_tool_call(
    tp: Any, name: str, arguments: Mapping[str, Any], *, strict: bool = False
) -> Any:
    """Decode a call to one of `tools_for_union(tp)` into the matching variant.

    Raises:
        OutputError: for an unknown tool name, arguments that were not valid
            JSON, or arguments that do not validate.
    """
    tools = _variant_tools(tp)
    entry = next((t for t in tools if t.spec.name == name), None)
    if entry is None:
        names = ", ".join(repr(t.spec.name) for t in tools)
        message = f"unknown tool {name!r}; expected one of {names}"
        raise OutputError(message, errors=(f"$: {message}",))
    if RAW_ARGUMENTS in arguments:
        raw = str(arguments[RAW_ARGUMENTS])
        message = f"the arguments of {name!r} are not valid JSON: {show(raw)}"
        raise OutputError(message, attempts=(raw,), errors=(f"$: {message}",))
    data = dict(arguments)
    if entry.key is not None:
        data[entry.key] = entry.tag
    result = entry.shape.check(data, strict)
    if isinstance(result, Invalid):
        raise invalid_error(entry.shape.label, result)
    return result
