"""`parse`: text to typed values, with the orjson fast path and every failure typed."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, Optional

import attrs
import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentgraph import (
    Guide,
    OutputError,
    UnsupportedType,
    generable,
    json_schema,
    loads_lenient,
    parse,
)
from agentgraph._core._json import to_data
from agentgraph.structured import _parse as parse_module
from agentgraph.structured._compile import shape_of
from agentgraph.structured._composites import (
    DictShape,
    FixedTupleShape,
    Guided,
    ListShape,
    ObjectShape,
    OptionalShape,
    TaggedUnionShape,
    UnionShape,
)
from agentgraph.structured._shapes import AnyShape, EnumShape, LiteralShape, Scalar, Shape


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


@generable("A problem found in a file")
@attrs.frozen
class Issue:
    line: Annotated[int, Guide("1-based line number")]
    message: str
    severity: Literal["low", "high"] = "low"
    tags: tuple[str, ...] = ()
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Review:
    approve: bool
    score: float
    issues: list[Issue]
    color: Color = Color.RED
    extra: dict[str, int] = dataclasses.field(default_factory=dict)


@attrs.frozen
class Add:
    kind: Literal["add"]
    path: str


@attrs.frozen
class Remove:
    kind: Literal["remove"]
    path: str
    force: bool = False


@attrs.frozen
class Tree:
    name: str
    children: list[Tree] = attrs.field(factory=list)


@attrs.frozen
class Renamed:
    value: int = attrs.field(alias="amount")


@attrs.frozen
class Cat:
    meow: str


@attrs.frozen
class Dog:
    bark: int


SHAPES: list[Any] = [
    str,
    int,
    float,
    bool,
    None,
    list[int],
    tuple[str, ...],
    tuple[int, str, bool],
    dict[str, float],
    Optional[int],  # noqa: UP045 - the old spelling compiles like `int | None`
    int | None,
    Literal["a", "b", 3, True],
    Color,
    Level,
    Issue,
    Review,
    Add | Remove,
    list[Add | Remove],
    Cat | Dog,
    int | str,
    Tree,
    Renamed,
    dict[str, Any],
    Any,
]

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


def strategy(shape: Shape, memo: dict[int, Any] | None = None) -> st.SearchStrategy[Any]:
    """Random valid instances of a compiled shape (objects built through their classes)."""
    memo = {} if memo is None else memo
    if isinstance(shape, ObjectShape):
        if id(shape) not in memo:  # deferred first, so recursive classes terminate
            memo[id(shape)] = st.deferred(lambda: _object(shape, memo))
        return memo[id(shape)]
    return _strategy(shape, memo)


SCALARS = {
    "string": st.text(),
    "integer": st.integers(-(2**63), 2**64 - 1),
    "number": st.floats(allow_nan=False, allow_infinity=False),
    "boolean": st.booleans(),
    "null": st.none(),
}


def _list(shape: ListShape, memo: dict[int, Any]) -> st.SearchStrategy[Any]:
    items = st.lists(strategy(shape.item, memo), max_size=3)
    return items.map(tuple) if shape.as_tuple else items


BY_KIND: dict[type[Shape], Any] = {
    Guided: lambda s, memo: strategy(s.inner, memo),
    Scalar: lambda s, memo: SCALARS[s.json_type],
    AnyShape: lambda s, memo: JSON,
    EnumShape: lambda s, memo: st.sampled_from(list(s.cls)),
    LiteralShape: lambda s, memo: st.sampled_from(s.values),
    ListShape: _list,
    FixedTupleShape: lambda s, memo: st.tuples(*(strategy(i, memo) for i in s.items)),
    DictShape: lambda s, memo: st.dictionaries(st.text(), strategy(s.value, memo), max_size=3),
    OptionalShape: lambda s, memo: st.none() | strategy(s.inner, memo),
    UnionShape: lambda s, memo: st.one_of([strategy(m, memo) for m in s.members]),
    TaggedUnionShape: lambda s, memo: st.one_of([strategy(v, memo) for v in s.variants]),
}


def _strategy(shape: Shape, memo: dict[int, Any]) -> st.SearchStrategy[Any]:
    return BY_KIND[type(shape)](shape, memo)


def _object(shape: ObjectShape, memo: dict[int, Any]) -> st.SearchStrategy[Any]:
    required = {f.arg: strategy(f.shape, memo) for f in shape.fields if not f.has_default}
    optional = {f.arg: strategy(f.shape, memo) for f in shape.fields if f.has_default}
    return st.fixed_dictionaries(required, optional=optional).map(lambda kw: shape.build(**kw))


def dump(value: Any) -> str:
    return orjson.dumps(value, default=to_data).decode()


@pytest.mark.parametrize("tp", SHAPES, ids=repr)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_instances_round_trip_and_match_the_schema(tp, data):
    value = data.draw(strategy(shape_of(tp)))
    text = dump(value)
    jsonschema.Draft202012Validator(json_schema(tp)).validate(orjson.loads(text))
    assert parse(tp, text) == value
    assert parse(tp, text, strict=True) == value


@settings(max_examples=60, deadline=None)
@given(value=strategy(shape_of(Review)), prose=st.sampled_from(["", "Sure!\n", "Here:\n\n"]))
def test_fenced_and_wrapped_instances_round_trip(value, prose):
    text = f"{prose}```json\n{dump(value)}\n```\nAnything else?"
    assert parse(Review, text) == value


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_arbitrary_text_gives_a_value_or_an_output_error(text):
    for tp in (Review, list[int], Any):
        try:
            parse(tp, text)
        except OutputError as exc:
            assert exc.errors and exc.attempts == (text,)


def test_valid_json_never_reaches_the_lenient_parser(monkeypatch):
    def refuse(text: str, **_: Any) -> Any:
        raise AssertionError("the lenient parser ran on valid JSON")

    monkeypatch.setattr(parse_module, "readings", refuse)
    assert parse(Issue, '{"line": 3, "message": "unused"}') == Issue(3, "unused")
    assert parse(list[int], "[1, 2]") == [1, 2]


def test_repairs_then_coerces():
    text = "Sure!\n```json\n{'line': '3', message: 'unused', tags: ['a',],}\n```\nDone."
    assert parse(Issue, text) == Issue(3, "unused", tags=("a",))
    assert parse(Review, '{"approve": "true", "score": 1, "issues": [], "unknown": 1}') == Review(
        True, 1.0, []
    )


def test_strict_refuses_coercion_and_unknown_fields():
    with pytest.raises(OutputError) as info:
        parse(Issue, '{"line": "3", "message": "m", "extra": 1}', strict=True)
    assert info.value.errors == ('line: expected int, got "3"', "extra: unexpected field")


def test_validation_errors_name_every_path_and_keep_the_text():
    text = '{"approve": true, "score": "x", "issues": [{"line": 1, "message": "a"}, {"line": "b"}]}'
    with pytest.raises(OutputError) as info:
        parse(Review, text)
    assert info.value.errors == (
        'score: expected float, got "x"',
        'issues[1].line: expected int, got "b"',
        "issues[1].message: required field missing",
    )
    assert info.value.attempts == (text,)
    assert "Review (3 problems)" in str(info.value)


def test_unparseable_text_is_an_output_error_with_a_root_path():
    with pytest.raises(OutputError) as info:
        parse(Issue, "I could not find any issue.")
    (error,) = info.value.errors
    assert error.startswith("$: cannot parse JSON:")
    assert info.value.attempts == ("I could not find any issue.",)
    assert info.value.position is not None


def test_a_truncated_answer_is_refused():
    with pytest.raises(OutputError, match="unexpected end of text"):
        parse(list[int], "[1, 2")


def test_bad_arguments_are_typed_errors():
    with pytest.raises(TypeError, match="from str, not bytes"):
        parse(Issue, b'{"line": 1, "message": "m"}')  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="from str, not NoneType"):
        parse_module.load(None)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedType):
        parse(set[int], "[1]")


class Text(str):
    """A str subclass: parsed by the general path, not the untyped one."""


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5, "x", null, true]}',
        "  [1, 2]  ",
        '"only a string"',
        "```json\n{'a': 1,}\n```",
        'Sure: {"a": 1} and that is all',
        '{"a": 1} {"b": 2}',
        "[1, 2",
        "no JSON here",
        "[" * 150 + "]" * 150,
    ],
)
def test_untyped_parse_answers_as_the_general_path(text):
    """`parse(Any, ...)` has a path of its own; a str subclass takes the general one."""

    def outcome(answer: str) -> object:
        try:
            return ("value", parse(Any, answer))
        except OutputError as exc:
            return ("error", str(exc), exc.errors, exc.attempts, exc.position)

    assert outcome(text) == outcome(Text(text))
    with pytest.raises(TypeError, match="from str, not bytes"):
        parse(Any, text.encode())  # type: ignore[arg-type]


PIECES = st.one_of(
    st.text(max_size=6),
    JSON.map(lambda v: orjson.dumps(v).decode()),
    st.sampled_from(["{", "}", "[", "]", "```", "```json\n", "\n", '"', "'", "//", "/*", "*/"]),
    st.sampled_from([" ", "\ufeff", ",", ":", "True", "None", "x", "-", "1", "\\"]),
)


@settings(max_examples=500, deadline=None)
@given(text=st.lists(PIECES, max_size=8).map("".join))
def test_the_prose_shortcut_agrees_with_the_lenient_parser(text):
    try:
        expected = loads_lenient(text)
    except OutputError:
        with pytest.raises(OutputError):
            parse_module.load(text)
        return
    assert same(parse_module.load(text), expected)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('Sure! {"a": [1]} Anything else?', {"a": [1]}),
        ('Here: {"a": [1]} see [note]', {"a": [1]}),
        ('// [\n{"a": 1}]', {"a": 1}),
        ('Here: {"a": 1}\n```\n42\n```', 42),
        ("Use [1, 2] or {x}", [1, 2]),
    ],
)
def test_json_inside_prose_follows_the_lenient_rules(text, value):
    assert same(parse_module.load(text), value) and same(loads_lenient(text), value)


def same(left: Any, right: Any) -> bool:
    """Equal and of the same types all the way down (so 1 and 1.0 differ)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(map(same, left, right))
    return bool(left == right)
