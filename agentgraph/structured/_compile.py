"""Compile type annotations into shapes, once per type.

`shape_of(T)` is cached per type (a bounded `lru_cache`), and the schemas and
texts derived from a shape are memoized on it, so every later call with the
same type reuses them.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NewType, Union, get_args, get_origin

import attrs

from .._core._errors import ContextEncodingError, UnsupportedType
from .._core._json import to_data
from ._composites import (
    NO_DEFAULT,
    DictShape,
    Field,
    FixedTupleShape,
    Guided,
    ListShape,
    ObjectShape,
    OptionalShape,
    TaggedUnionShape,
    UnionShape,
)
from ._guide import Guide, class_info, field_guide
from ._shapes import SCALARS, AnyShape, EnumShape, LiteralShape, Scalar, Shape, same

__all__ = ("FieldSpec", "arguments_shape", "cache_key", "shape_of")

_NONE = type(None)
_UNIONS = (Union, types.UnionType)
_LISTS = (list, collections.abc.Sequence, collections.abc.MutableSequence)
_DICTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)


@attrs.frozen
class FieldSpec:
    """A field before compilation: its JSON key, annotation and default.

    `has_default` says the constructor fills a missing value; `default` is that
    value when it can be shown in a schema (else `NO_DEFAULT`).
    """

    key: str
    hint: Any
    arg: str
    has_default: bool = False
    default: Any = NO_DEFAULT
    guide: str | None = None


def shape_of(tp: Any) -> Shape:
    """The compiled shape of `tp`; the same object for every call with the same type."""
    key = cache_key(tp)
    try:
        hash(key)
    except TypeError:
        return _Compiler().shape(tp)
    return _cached(key)


def cache_key(tp: Any) -> tuple[Any, str]:
    """The key a shape is cached under.

    `int | float` equals `float | int` (and hashes alike) but lists its members
    in another order, which decides the member tried first and the `anyOf`
    order: the spelling tells them apart. A class, and `Any`, have one spelling.
    """
    if type(tp) is type or tp is Any:
        return (tp, "")
    return (tp, repr(tp))


@functools.lru_cache(maxsize=1024)
def _cached(key: tuple[Any, str]) -> Shape:
    return _Compiler().shape(key[0])


def arguments_shape(name: str, fields: Sequence[FieldSpec]) -> ObjectShape:
    """An object shape whose value is the dict of keyword arguments (for tool calls)."""
    shape = ObjectShape(name, cls=None, build=dict)
    compiler = _Compiler()
    shape.set_fields([compiler.field(spec) for spec in fields])
    return shape


def _json_default(value: Any) -> Any:
    try:
        return to_data(value)
    except ContextEncodingError:
        return NO_DEFAULT


def _class_fields(cls: type[Any]) -> list[FieldSpec]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError, or anything an annotation raises
        raise UnsupportedType(cls, f"its annotations cannot be resolved ({exc})") from exc
    if attrs.has(cls):
        return [_attrs_field(f, hints) for f in attrs.fields(cls) if f.init]
    return [_dataclass_field(f, hints) for f in dataclasses.fields(cls) if f.init]


def _typed_dict_fields(cls: type[Any]) -> list[FieldSpec]:
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError, or anything an annotation raises
        raise UnsupportedType(cls, f"its annotations cannot be resolved ({exc})") from exc
    total = getattr(cls, "__total__", True)
    specs = []
    for key, hint in hints.items():
        # Read from the hints, not `__required_keys__`: under `from __future__ import
        # annotations` the class was made from strings, and marked every key required.
        required = total
        while get_origin(hint) in (typing.Required, typing.NotRequired):
            required = get_origin(hint) is typing.Required
            hint = get_args(hint)[0]
        # An optional key is missing, not null, when absent: the dict leaves it out.
        specs.append(FieldSpec(key, hint, key, has_default=not required))
    return specs


def _attrs_field(f: attrs.Attribute[Any], hints: dict[str, Any]) -> FieldSpec:
    hint = hints.get(f.name, f.type if f.type is not None else Any)
    has_default = f.default is not attrs.NOTHING
    factory = isinstance(f.default, attrs.Factory)  # type: ignore[arg-type]
    default = NO_DEFAULT if not has_default or factory else _json_default(f.default)
    key = f.alias or f.name
    return FieldSpec(key, hint, key, has_default, default, field_guide(f.metadata))


def _dataclass_field(f: dataclasses.Field[Any], hints: dict[str, Any]) -> FieldSpec:
    hint = hints.get(f.name, Any)
    has_value = f.default is not dataclasses.MISSING
    has_default = has_value or f.default_factory is not dataclasses.MISSING
    default = _json_default(f.default) if has_value else NO_DEFAULT
    return FieldSpec(f.name, hint, f.name, has_default, default, field_guide(f.metadata))


def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and (attrs.has(tp) or dataclasses.is_dataclass(tp))


class _Compiler:
    """One compilation: remembers the classes seen so that recursive types terminate."""

    def __init__(self) -> None:
        self._objects: dict[type[Any], ObjectShape] = {}

    def shape(self, tp: Any) -> Shape:
        if tp is Any:
            return AnyShape()
        if tp is None or tp is _NONE:
            return Scalar(None)
        if isinstance(tp, NewType):  # `UserId = NewType("UserId", int)` is an int on the wire
            return self.shape(tp.__supertype__)
        origin = get_origin(tp)
        if origin is not None:
            return self._generic(tp, origin, get_args(tp))
        if isinstance(tp, type):
            return self._class(tp)
        raise UnsupportedType(tp, "it is not a type (forward references must be resolvable)")

    def field(self, spec: FieldSpec) -> Field:
        shape = self.shape(spec.hint)
        guide = spec.guide
        if isinstance(shape, Guided):  # the guide on the type wins over metadata and docstrings
            guide = shape.text
            shape = shape.inner
        optional = isinstance(shape, OptionalShape)
        tag = isinstance(shape, LiteralShape) and len(shape.values) == 1
        return Field(
            spec.key,
            shape,
            arg=spec.arg,
            # A one-value literal is a discriminator: always asked for, even with a default.
            required=tag or not (spec.has_default or optional),
            has_default=spec.has_default,
            fill_none=optional and not spec.has_default,
            default=spec.default,
            guide=guide,
        )

    def _generic(self, tp: Any, origin: Any, args: tuple[Any, ...]) -> Shape:
        if origin is Annotated:
            shape = self.shape(args[0])
            guide = next((m.text for m in tp.__metadata__ if isinstance(m, Guide)), None)
            return shape if guide is None else Guided(shape, guide)
        if origin in _UNIONS:
            return self._union(args)
        if origin is Literal:
            return self._literal(tp, args)
        if origin in _LISTS:
            return ListShape(self.shape(args[0]) if args else AnyShape(), as_tuple=False)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return ListShape(self.shape(args[0]), as_tuple=True)
            if not args:
                return ListShape(AnyShape(), as_tuple=True)
            return FixedTupleShape([self.shape(a) for a in args])
        if origin in _DICTS:
            if args and args[0] is not str:
                raise UnsupportedType(tp, "JSON object keys are strings; use dict[str, ...]")
            return DictShape(self.shape(args[1]) if args else AnyShape())
        raise UnsupportedType(tp, f"{origin!r} has no JSON form")

    def _class(self, tp: type[Any]) -> Shape:
        if issubclass(tp, enum.Enum):
            return self._enum(tp)
        if tp in SCALARS:
            return Scalar(tp)
        if tp is list:
            return ListShape(AnyShape(), as_tuple=False)
        if tp is tuple:
            return ListShape(AnyShape(), as_tuple=True)
        if tp is dict:
            return DictShape(AnyShape())
        if _is_class(tp):
            return self._object(tp)
        if typing.is_typeddict(tp):
            return self._typed_dict(tp)
        raise UnsupportedType(
            tp,
            "use str, int, float, bool, None, lists, tuples, dict[str, T], Literal, "
            "Enum, attrs classes, dataclasses or TypedDicts",
        )

    def _enum(self, cls: type[enum.Enum]) -> EnumShape:
        for member in cls:
            if type(member.value) not in (str, int, float, bool):
                raise UnsupportedType(cls, f"member {member.name} has a non-JSON value")
        info = class_info(cls)
        names = {member.name for member in cls}
        unknown = sorted(name for name, _ in info.values if name not in names)
        if unknown:
            raise UnsupportedType(cls, f"values= documents members it does not have: {unknown}")
        documented = {name: text for name, text in info.values}
        notes = "; ".join(f"`{m.value}`: {documented[m.name]}" for m in cls if m.name in documented)
        parts = [info.description or "", f"Values: {notes}." if notes else ""]
        description = " ".join(part for part in parts if part) or None
        return EnumShape(cls, description)

    def _literal(self, tp: Any, args: tuple[Any, ...]) -> LiteralShape:
        for value in args:
            if value is not None and type(value) not in (str, int, bool):
                raise UnsupportedType(tp, f"literal {value!r} is not a JSON value")
        return LiteralShape(args)

    def _object(self, cls: type[Any]) -> ObjectShape:
        shape = self._objects.get(cls)
        if shape is None:
            info = class_info(cls)
            shape = ObjectShape(
                cls.__name__,
                cls=cls,
                build=cls,
                description=info.description,
                describe=info.describe,
            )
            self._objects[cls] = shape
            shape.set_fields([self.field(spec) for spec in _class_fields(cls)])
        return shape

    def _typed_dict(self, cls: type[Any]) -> ObjectShape:
        """A TypedDict: an object whose value is a plain dict; its optional keys not required."""
        shape = self._objects.get(cls)
        if shape is None:
            info = class_info(cls)
            shape = ObjectShape(
                cls.__name__, cls=None, build=dict, description=info.description, describe=None
            )
            self._objects[cls] = shape
            shape.set_fields([self.field(spec) for spec in _typed_dict_fields(cls)])
        return shape

    def _union(self, args: tuple[Any, ...]) -> Shape:
        members = [a for a in args if a is not _NONE]
        if len(members) == 1:
            inner = self.shape(members[0])
        elif all(_is_class(m) for m in members):
            inner = self._classes(members)
        else:
            inner = UnionShape([self.shape(m) for m in members])
        return OptionalShape(inner) if len(members) < len(args) else inner

    def _classes(self, classes: list[type[Any]]) -> Shape:
        shapes = [self._object(cls) for cls in classes]
        found = _discriminator(classes)
        if found is None:
            return UnionShape(shapes)
        key, tags = found
        return TaggedUnionShape(key, {tag: shapes[i] for tag, i in tags})


def _literal_values(hint: Any) -> tuple[Any, ...] | None:
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return get_args(hint) if get_origin(hint) is Literal else None


def _discriminator(classes: list[type[Any]]) -> tuple[str, list[tuple[Any, int]]] | None:
    """The first field every class has as a literal, with values no two classes share."""
    per_class: list[dict[str, tuple[Any, ...]]] = []
    for cls in classes:
        fields = {}
        for spec in _class_fields(cls):
            values = _literal_values(spec.hint)
            if values:
                fields[spec.key] = values
        per_class.append(fields)
    for key in per_class[0]:
        if all(key in fields for fields in per_class):
            tags = _tags(key, per_class)
            if tags is not None:
                return key, tags
    return None


def _tags(key: str, per_class: list[dict[str, tuple[Any, ...]]]) -> list[tuple[Any, int]] | None:
    tags: list[tuple[Any, int]] = []
    for i, fields in enumerate(per_class):
        for value in fields[key]:
            if any(same(value, seen) for seen, _ in tags):
                return None
            tags.append((value, i))
    return tags
