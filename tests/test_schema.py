"""JSON Schema, descriptions and prompt fragments generated from Python types."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, Optional

import attrs
import jsonschema
import pytest

from agentgraph import (
    Guide,
    OutputError,
    UnsupportedType,
    describe,
    from_tool_call,
    generable,
    json_schema,
    prompt_fragment,
    tools_for_union,
    validate,
)
from agentgraph.structured._compile import shape_of
from agentgraph.structured._guide import class_info


class Severity(enum.Enum):
    """How bad an issue is."""

    LOW = "low"
    HIGH = "high"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


@generable("A problem found in a file")
@attrs.frozen
class Issue:
    line: Annotated[int, Guide("1-based line number")]
    message: str = attrs.field(metadata={"guide": "what is wrong"})
    severity: Severity = Severity.LOW
    tags: tuple[str, ...] = ()
    note: str | None = None


@dataclasses.dataclass
class Report:
    issues: list[Issue]
    scores: dict[str, float]
    children: list[Report] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Point:
    """A point on the plane.

    More detail that is not part of the summary.
    """

    x: float
    y: Annotated[float, Guide("height")] = dataclasses.field(
        default=0.0, metadata={"guide": "ignored: the type's guide wins"}
    )


@dataclasses.dataclass
class Plain:
    a: int


@generable(describe="Send {'n': <count>}.")
@attrs.frozen
class Custom:
    n: int


@generable
@attrs.frozen
class Bare:
    """Docstring as description."""

    v: bool


@attrs.frozen
class Add:
    kind: Literal["add"]
    x: int


@generable("Remove an item")
@attrs.frozen
class Remove:
    index: int
    kind: Literal["remove"] = "remove"


@attrs.frozen
class Everything:
    s: str
    i: int
    f: float
    b: bool
    n: None
    li: list[int]
    seq: Sequence[str]
    vt: tuple[int, ...]
    ft: tuple[int, str]
    d: dict[str, int]
    m: Mapping[str, bool]
    opt: Optional[int]  # noqa: UP045 - the typing spelling must work too
    opt2: int | None
    lit: Literal["a", "b"]
    one: Literal[1]
    e: Severity
    ie: Level
    nested: Point
    any_: Any
    union: int | str


def check(schema: dict[str, Any], *instances: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    for instance in instances:
        jsonschema.Draft202012Validator(schema).validate(instance)


def test_scalars():
    assert json_schema(str) == {"type": "string"}
    assert json_schema(int) == {"type": "integer"}
    assert json_schema(float) == {"type": "number"}
    assert json_schema(bool) == {"type": "boolean"}
    assert json_schema(None) == {"type": "null"}
    assert json_schema(type(None)) == {"type": "null"}
    assert json_schema(Any) == {}


def test_containers():
    assert json_schema(list[int]) == {"type": "array", "items": {"type": "integer"}}
    assert json_schema(tuple[str, ...]) == {"type": "array", "items": {"type": "string"}}
    assert json_schema(tuple[int, str]) == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
        "maxItems": 2,
    }
    assert json_schema(dict[str, float]) == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert json_schema(list) == {"type": "array", "items": {}}
    assert json_schema(dict) == {"type": "object", "additionalProperties": {}}


def test_optional_literal_enum_union():
    assert json_schema(int | None) == {"type": ["integer", "null"]}
    assert json_schema(Literal["a", "b"]) == {"type": "string", "enum": ["a", "b"]}
    assert json_schema(Literal["a"]) == {"type": "string", "const": "a"}
    assert json_schema(Literal["a", 1]) == {"enum": ["a", 1]}
    assert json_schema(Literal["a"] | None) == {
        "anyOf": [{"type": "string", "const": "a"}, {"type": "null"}]
    }
    assert json_schema(Severity) == {
        "type": "string",
        "enum": ["low", "high"],
        "description": "How bad an issue is.",
    }
    assert json_schema(Level) == {"type": "integer", "enum": [1, 2]}
    assert json_schema(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert json_schema(Annotated[int, Guide("a count")]) == {
        "type": "integer",
        "description": "a count",
    }


def test_class_schema_with_guides_defaults_and_defs():
    schema = json_schema(Report)
    check(schema, {"issues": [{"line": 1, "message": "m"}], "scores": {"a": 1.5}})
    assert schema["required"] == ["issues", "scores"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["children"] == {
        "type": "array",
        "items": {"$ref": "#"},  # a class that contains itself refers to the root
    }
    issue = schema["$defs"]["Issue"]
    assert issue["description"] == "A problem found in a file"
    assert issue["required"] == ["line", "message"]
    assert issue["properties"]["line"] == {"type": "integer", "description": "1-based line number"}
    assert issue["properties"]["message"] == {"type": "string", "description": "what is wrong"}
    assert issue["properties"]["severity"] == {
        "type": "string",
        "enum": ["low", "high"],
        "description": "How bad an issue is.",
        "default": "low",
    }
    assert issue["properties"]["tags"]["default"] == []
    assert issue["properties"]["note"] == {"type": ["string", "null"], "default": None}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"issues": [{"line": "x", "message": "m"}], "scores": {}}, schema)


def test_every_shape_gives_a_valid_schema():
    schema = json_schema(Everything)
    sample = {
        "s": "x",
        "i": 1,
        "f": 1.5,
        "b": True,
        "n": None,
        "li": [1],
        "seq": ["a"],
        "vt": [1, 2],
        "ft": [1, "a"],
        "d": {"k": 1},
        "m": {"k": False},
        "opt": None,
        "opt2": 3,
        "lit": "a",
        "one": 1,
        "e": "high",
        "ie": 2,
        "nested": {"x": 1.0},
        "any_": {"anything": [1]},
        "union": "u",
    }
    check(schema, sample)
    # A field typed Optional is not required; everything else without a default is.
    assert set(schema["required"]) == set(sample) - {"opt", "opt2"}
    assert isinstance(validate(Everything, sample), Everything)


def test_point_uses_docstring_summary_and_type_guide_wins():
    schema = json_schema(Point)
    assert schema["description"] == "A point on the plane."
    assert schema["properties"]["y"] == {"type": "number", "description": "height", "default": 0.0}
    assert class_info(Plain).description is None  # the dataclass-made docstring is not shown
    assert "description" not in json_schema(Plain)


def test_strict_schema_is_openai_shaped():
    schema = json_schema(Report | Issue, strict=False)
    check(schema)
    strict = json_schema(Issue, strict=True)
    check(strict, {"line": 1, "message": "m", "severity": "low", "tags": [], "note": None})
    assert strict["required"] == ["line", "message", "severity", "tags", "note"]
    assert strict["properties"]["note"] == {"type": ["string", "null"]}
    assert "default" not in strict["properties"]["severity"]
    nested = json_schema(list[Point], strict=True)
    check(nested, [{"x": 1, "y": 2}])
    assert nested["$defs"]["Point"]["additionalProperties"] is False
    assert nested["$defs"]["Point"]["required"] == ["x", "y"]


def test_strict_schema_refuses_free_form_objects():
    with pytest.raises(UnsupportedType, match="strict"):
        json_schema(Report, strict=True)
    with pytest.raises(UnsupportedType, match="strict"):
        json_schema(Any, strict=True)


OtherPoint = dataclasses.make_dataclass("Point", [("z", int)])  # same name, different class


@dataclasses.dataclass
class Holder:
    a: Plain | None
    b: OtherPoint  # type: ignore[valid-type]
    c: Plain
    d: Point


def test_optional_objects_and_name_collisions_in_defs():
    schema = json_schema(Holder)
    check(schema, {"a": None, "b": {"z": 1}, "c": {"a": 2}, "d": {"x": 0}})
    assert schema["properties"]["a"] == {"anyOf": [{"$ref": "#/$defs/Plain"}, {"type": "null"}]}
    assert schema["properties"]["b"] == {"$ref": "#/$defs/Point"}
    assert schema["properties"]["c"] == {"$ref": "#/$defs/Plain"}
    assert schema["properties"]["d"] == {"$ref": "#/$defs/Point2"}
    assert list(schema["$defs"]) == ["Plain", "Point", "Point2"]
    assert schema["$defs"]["Point"]["required"] == ["z"]


def test_tagged_union_schema():
    schema = json_schema(Add | Remove)
    check(schema, {"kind": "add", "x": 1}, {"kind": "remove", "index": 0})
    assert schema["anyOf"] == [{"$ref": "#/$defs/Add"}, {"$ref": "#/$defs/Remove"}]
    # The discriminator is required even where it has a default.
    assert schema["$defs"]["Remove"]["required"] == ["index", "kind"]
    assert schema["$defs"]["Remove"]["properties"]["kind"] == {
        "type": "string",
        "const": "remove",
        "default": "remove",
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"kind": "add", "index": 0}, schema)


def test_schemas_are_built_once_and_returned_fresh():
    assert shape_of(list[Issue]) is shape_of(list[Issue])
    first = json_schema(Issue)
    first["properties"].clear()
    assert json_schema(Issue)["properties"]  # the caller's change did not reach the cache


@pytest.mark.parametrize(
    ("annotation", "reason"),
    [
        (set[int], "no JSON form"),
        (dict[int, str], "keys are strings"),
        (Literal[1.5], "not a JSON value"),
        (object, "use str"),
        ("Issue", "not a type"),
    ],
)
def test_unsupported_types(annotation, reason):
    with pytest.raises(UnsupportedType, match=reason) as info:
        json_schema(annotation)
    assert isinstance(info.value, TypeError)


def test_unsupported_enum_and_unresolvable_annotations():
    class Bad(enum.Enum):
        A = (1, 2)

    with pytest.raises(UnsupportedType, match="non-JSON value"):
        json_schema(Bad)

    @dataclasses.dataclass
    class Broken:
        a: Missing  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(UnsupportedType, match="cannot be resolved"):
        json_schema(Broken)


@attrs.frozen
@generable("Applied before attrs rebuilt the class")
class Inner:
    a: int = attrs.field(metadata={"guide": Guide("a Guide object in metadata")})


def test_generable_forms():
    assert class_info(Inner).description == "Applied before attrs rebuilt the class"
    assert json_schema(Inner)["properties"]["a"]["description"] == "a Guide object in metadata"
    assert class_info(Issue).description == "A problem found in a file"
    assert class_info(Bare).description == "Docstring as description."
    assert class_info(Custom).describe == "Send {'n': <count>}."
    with pytest.raises(TypeError, match="class or a description"):
        generable(3)  # type: ignore[call-overload]


def test_describe_lists_fields_types_and_guides():
    text = describe(Report)
    assert text == (
        "**Report**\n"
        "- `issues` (list[Issue], required)\n"
        "- `scores` (dict[str, float], required)\n"
        "- `children` (list[Report], optional)\n"
        "\n"
        "**Issue**: A problem found in a file\n"
        "- `line` (int, required): 1-based line number\n"
        "- `message` (str, required): what is wrong\n"
        '- `severity` ("low" | "high", default "low")\n'
        "- `tags` (tuple[str, ...], default [])\n"
        "- `note` (str | None, default null)"
    )
    assert describe(Custom) == "Send {'n': <count>}."
    assert describe(list[Custom]) == "A value of type `list[Custom]`.\n\nSend {'n': <count>}."
    assert describe(int) == "A value of type `int`."
    assert describe(Add | Remove).startswith("One of `Add`, `Remove`; the `kind` field says which.")


def test_prompt_fragment_is_deterministic_and_carries_the_schema():
    text = prompt_fragment(Issue)
    assert text == prompt_fragment(Issue)
    assert text.startswith("Answer with one JSON object and nothing else")
    assert describe(Issue) in text
    assert '"required":["line","message"]' in text
    assert prompt_fragment(list[int]).startswith("Answer with one JSON value")


def test_tools_for_a_tagged_union():
    specs = tools_for_union(Add | Remove)
    assert [s.name for s in specs] == ["add", "remove"]
    assert specs[1].description == "Remove an item"
    assert specs[0].parameters["properties"] == {"x": {"type": "integer"}}
    assert specs[1].parameters["required"] == ["index"]
    for spec in specs:
        check(dict(spec.parameters))
    assert from_tool_call(Add | Remove, "add", {"x": "2"}) == Add("add", 2)
    assert from_tool_call(Add | Remove, "remove", {"index": 1, "kind": "add"}) == Remove(1)


def test_tools_for_untagged_unions_and_single_classes():
    specs = tools_for_union(Plain | Point)
    assert [s.name for s in specs] == ["Plain", "Point"]
    assert from_tool_call(Plain | Point, "Point", {"x": 1}) == Point(1.0)
    assert [s.name for s in tools_for_union(Issue)] == ["Issue"]
    with pytest.raises(UnsupportedType, match="attrs classes or dataclasses"):
        tools_for_union(int | str)


def test_from_tool_call_errors():
    with pytest.raises(OutputError, match="unknown tool 'nope'; expected one of 'add', 'remove'"):
        from_tool_call(Add | Remove, "nope", {})
    with pytest.raises(OutputError, match="not valid JSON") as info:
        from_tool_call(Add | Remove, "add", {"__raw_arguments__": "{x: 1"})
    assert info.value.attempts == ("{x: 1",)
    with pytest.raises(OutputError) as info:
        from_tool_call(Add | Remove, "add", {"x": "one", "y": 1}, strict=True)
    assert info.value.errors == ('x: expected int, got "one"', "y: unexpected field")


def test_tool_names_fall_back_to_class_names():
    @attrs.frozen
    class Spaced:
        kind: Literal["has space"]

    @attrs.frozen
    class Other:
        kind: Literal["other"]

    assert [s.name for s in tools_for_union(Spaced | Other)] == ["Spaced", "other"]

    @attrs.frozen
    class Clash:
        kind: Literal["Spaced"]

    with pytest.raises(UnsupportedType, match="both be the tool 'Spaced'"):
        tools_for_union(Spaced | Clash)


@attrs.frozen
class StrictPoint:
    x: int


@attrs.frozen
class StrictLink:
    at: Annotated[StrictPoint, Guide("where it sits")]
    also: StrictPoint
    next: Annotated[StrictLink | None, Guide("the next one")] = None


@attrs.frozen
class StrictPair:
    pair: tuple[int, str]


def _refs_with_siblings(node: object) -> int:
    if isinstance(node, dict):
        here = int("$ref" in node and len(node) > 1)
        return here + sum(_refs_with_siblings(v) for v in node.values())
    if isinstance(node, list):
        return sum(_refs_with_siblings(v) for v in node)
    return 0


def test_strict_schemas_put_nothing_beside_a_ref_and_refuse_fixed_tuples():
    schema = json_schema(StrictLink, strict=True)
    assert _refs_with_siblings(schema) == 0
    at = schema["properties"]["at"]
    assert at["description"] == "where it sits" and at["properties"]["x"] == {"type": "integer"}
    assert schema["properties"]["also"] == {"$ref": "#/$defs/StrictPoint"}
    with pytest.raises(UnsupportedType, match="fixed-length tuples"):
        json_schema(StrictPair, strict=True)
    assert json_schema(StrictPair)["properties"]["pair"]["prefixItems"]
