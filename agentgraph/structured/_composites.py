"""Shapes made of other shapes: containers, optionals, unions, and objects.

An object shape builds an attrs class, a dataclass, or (for tool arguments) a
dict of keyword arguments. Schemas put nested classes under `$defs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._core._errors import UnsupportedType
from ._shapes import Invalid, Key, Problem, Shape, expected, same, show

__all__ = (
    "NO_DEFAULT",
    "DictShape",
    "Field",
    "FixedTupleShape",
    "Guided",
    "ListShape",
    "ObjectShape",
    "OptionalShape",
    "SchemaContext",
    "TaggedUnionShape",
    "UnionShape",
)

NO_DEFAULT: Any = object()
"""Marks a field with no default that can be shown in a schema."""


class SchemaContext:
    """One schema build: the mode, and the `$defs` collected for nested classes."""

    def __init__(self, strict: bool, root: ObjectShape | None) -> None:
        self.strict = strict
        self.root = root
        self.defs: dict[str, dict[str, Any]] = {}
        self._names: dict[ObjectShape, str] = {}

    def ref(self, shape: ObjectShape) -> dict[str, Any]:
        if shape is self.root:
            return {"$ref": "#"}
        name = self._names.get(shape)
        if name is None:
            name = shape.name
            n = 1
            while name in self.defs:
                n += 1
                name = f"{shape.name}{n}"
            self._names[shape] = name
            self.defs[name] = {}  # reserved first, so a class that contains itself terminates
            self.defs[name] = shape.body(self)
        return {"$ref": f"#/$defs/{name}"}


class Guided(Shape):
    """A shape with a `Guide` description; checks like the shape it wraps."""

    __slots__ = ("inner", "text")

    def __init__(self, inner: Shape, text: str) -> None:
        super().__init__(inner.label)
        self.inner = inner
        self.text = text

    def check(self, value: Any, strict: bool) -> Any:
        return self.inner.check(value, strict)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {**self.inner.schema(ctx), "description": self.text}

    def children(self) -> Sequence[Shape]:
        return (self.inner,)


class ListShape(Shape):
    """`list[T]`, `Sequence[T]` and `tuple[T, ...]` (with `as_tuple`)."""

    __slots__ = ("as_tuple", "item")

    def __init__(self, item: Shape, *, as_tuple: bool) -> None:
        super().__init__(f"tuple[{item.label}, ...]" if as_tuple else f"list[{item.label}]")
        self.item = item
        self.as_tuple = as_tuple

    def check(self, value: Any, strict: bool) -> Any:
        if not isinstance(value, list | tuple):
            return expected("list", value)
        out = []
        problems: list[Problem] = []
        check = self.item.check
        for i, item in enumerate(value):
            result = check(item, strict)
            if isinstance(result, Invalid):
                problems.extend(result.under(i))
            else:
                out.append(result)
        if problems:
            return Invalid(problems)
        return tuple(out) if self.as_tuple else out

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "array", "items": self.item.schema(ctx)}

    def children(self) -> Sequence[Shape]:
        return (self.item,)


class FixedTupleShape(Shape):
    __slots__ = ("items",)

    def __init__(self, items: Sequence[Shape]) -> None:
        super().__init__(f"tuple[{', '.join(s.label for s in items)}]")
        self.items = tuple(items)

    def check(self, value: Any, strict: bool) -> Any:
        if not isinstance(value, list | tuple):
            return expected("list", value)
        if len(value) != len(self.items):
            return expected(f"{len(self.items)} items", value)
        out = []
        problems: list[Problem] = []
        for i, (shape, item) in enumerate(zip(self.items, value, strict=True)):
            result = shape.check(item, strict)
            if isinstance(result, Invalid):
                problems.extend(result.under(i))
            else:
                out.append(result)
        return Invalid(problems) if problems else tuple(out)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        if ctx.strict:
            raise UnsupportedType(
                self.label, "strict schemas have no fixed-length tuples; use a class or a list"
            )
        n = len(self.items)
        return {
            "type": "array",
            "prefixItems": [s.schema(ctx) for s in self.items],
            "items": False,
            "minItems": n,
            "maxItems": n,
        }

    def children(self) -> Sequence[Shape]:
        return self.items


class DictShape(Shape):
    """`dict[str, T]` and `Mapping[str, T]`."""

    __slots__ = ("value",)

    def __init__(self, value: Shape) -> None:
        super().__init__(f"dict[str, {value.label}]")
        self.value = value

    def check(self, value: Any, strict: bool) -> Any:
        if not isinstance(value, Mapping):
            return expected("object", value)
        out = {}
        problems: list[Problem] = []
        for key, item in value.items():
            if not isinstance(key, str):
                problems.append(Problem(f"expected a str key, got {show(key)}"))
                continue
            result = self.value.check(item, strict)
            if isinstance(result, Invalid):
                problems.extend(result.under(Key(key)))
            else:
                out[key] = result
        return Invalid(problems) if problems else out

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        if ctx.strict:
            raise UnsupportedType(
                self.label, "strict schemas allow no free-form objects; use a class or a list"
            )
        return {"type": "object", "additionalProperties": self.value.schema(ctx)}

    def children(self) -> Sequence[Shape]:
        return (self.value,)


class OptionalShape(Shape):
    """`T | None`: null, or a `T`."""

    __slots__ = ("inner",)

    def __init__(self, inner: Shape) -> None:
        super().__init__(f"{inner.label} | None")
        self.inner = inner

    def check(self, value: Any, strict: bool) -> Any:
        return None if value is None else self.inner.check(value, strict)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        inner = self.inner.schema(ctx)
        kind = inner.get("type")
        if isinstance(kind, str) and not {"enum", "const", "$ref", "anyOf"}.intersection(inner):
            return {**inner, "type": [kind, "null"]}
        return {"anyOf": [inner, {"type": "null"}]}

    def children(self) -> Sequence[Shape]:
        return (self.inner,)


class UnionShape(Shape):
    """An untagged union: the first member that takes the value exactly, else leniently."""

    __slots__ = ("members",)

    def __init__(self, members: Sequence[Shape]) -> None:
        super().__init__(" | ".join(m.label for m in members))
        self.members = tuple(members)

    def check(self, value: Any, strict: bool) -> Any:
        for member in self.members:
            result = member.check(value, True)
            if not isinstance(result, Invalid):
                return result
        if not strict:
            for member in self.members:
                result = member.check(value, False)
                if not isinstance(result, Invalid):
                    return result
        return expected(self.label, value)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"anyOf": [m.schema(ctx) for m in self.members]}

    def children(self) -> Sequence[Shape]:
        return self.members


class Field:
    """One property of an object shape.

    `key` is the JSON name and `arg` the constructor keyword. `required` is what
    the lenient schema says. A missing value is an error unless the field has a
    default (`has_default`: the constructor fills it) or `fill_none` is set.
    `default` is the default as JSON data for the schema, or `NO_DEFAULT`.
    """

    __slots__ = ("arg", "default", "fill_none", "guide", "has_default", "key", "required", "shape")

    def __init__(
        self,
        key: str,
        shape: Shape,
        *,
        arg: str,
        required: bool,
        has_default: bool,
        fill_none: bool,
        default: Any = NO_DEFAULT,
        guide: str | None = None,
    ) -> None:
        self.key = key
        self.shape = shape
        self.arg = arg
        self.required = required
        self.has_default = has_default
        self.fill_none = fill_none
        self.default = default
        self.guide = guide


class ObjectShape(Shape):
    """A JSON object with known fields, built into a class (or a dict of arguments)."""

    __slots__ = ("build", "cls", "describe", "description", "fields", "keys", "name")

    def __init__(
        self,
        name: str,
        *,
        cls: type[Any] | None,
        build: Callable[..., Any],
        description: str | None = None,
        describe: str | None = None,
    ) -> None:
        super().__init__(name)
        self.name = name
        self.cls = cls
        self.build = build
        self.description = description
        self.describe = describe
        self.fields: tuple[Field, ...] = ()
        self.keys: frozenset[str] = frozenset()

    def set_fields(self, fields: Sequence[Field]) -> None:
        # Set after construction, so that a class can contain itself.
        self.fields = tuple(fields)
        self.keys = frozenset(f.key for f in fields)

    def check(self, value: Any, strict: bool) -> Any:
        if self.cls is not None and isinstance(value, self.cls):
            return value
        if not isinstance(value, Mapping):
            return expected("object", value)
        kwargs: dict[str, Any] = {}
        problems: list[Problem] = []
        for field in self.fields:
            if field.key in value:
                result = field.shape.check(value[field.key], strict)
                if isinstance(result, Invalid):
                    problems.extend(result.under(field.key))
                else:
                    kwargs[field.arg] = result
            elif field.has_default:
                continue
            elif field.fill_none:
                kwargs[field.arg] = None
            else:
                problems.append(Problem("required field missing", [field.key]))
        if strict and not self.keys.issuperset(value):
            problems.extend(
                Problem("unexpected field", [str(key)]) for key in value if key not in self.keys
            )
        if problems:
            return Invalid(problems)
        try:
            return self.build(**kwargs)
        except Exception as exc:
            return Invalid([Problem(f"{self.name} rejected the value: {exc}")])

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return ctx.ref(self)

    def body(self, ctx: SchemaContext) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        for field in self.fields:
            prop = field.shape.schema(ctx)
            if field.guide:
                prop["description"] = field.guide
            if not ctx.strict and field.default is not NO_DEFAULT:
                prop["default"] = field.default
            properties[field.key] = prop
        out: dict[str, Any] = {"type": "object"}
        if self.description:
            out["description"] = self.description
        out["properties"] = properties
        out["required"] = [f.key for f in self.fields if ctx.strict or f.required]
        out["additionalProperties"] = False
        return out

    def children(self) -> Sequence[Shape]:
        return tuple(f.shape for f in self.fields)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


class TaggedUnionShape(Shape):
    """A union of object shapes told apart by one field's literal value (`kind: "add"`)."""

    __slots__ = ("key", "tags", "variants")

    def __init__(self, key: str, tags: Mapping[Any, ObjectShape]) -> None:
        self.variants = tuple(dict.fromkeys(tags.values()))
        super().__init__(" | ".join(v.name for v in self.variants))
        self.key = key
        self.tags = dict(tags)

    def check(self, value: Any, strict: bool) -> Any:
        for variant in self.variants:
            if variant.cls is not None and isinstance(value, variant.cls):
                return value
        if not isinstance(value, Mapping):
            return expected("object", value)
        allowed = ", ".join(show(t) for t in self.tags)
        if self.key not in value:
            return Invalid([Problem(f"required field missing (one of {allowed})", [self.key])])
        tag = value[self.key]
        chosen = next((v for t, v in self.tags.items() if same(tag, t)), None)
        if chosen is None:
            return Invalid([Problem(f"expected one of {allowed}, got {show(tag)}", [self.key])])
        return chosen.check(value, strict)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"anyOf": [v.schema(ctx) for v in self.variants]}

    def children(self) -> Sequence[Shape]:
        return self.variants

    def tag_of(self, variant: ObjectShape) -> Any:
        return next(t for t, v in self.tags.items() if v is variant)
