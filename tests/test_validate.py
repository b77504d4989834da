"""Validation and coercion of JSON values into Python types, strict and lenient."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import attrs
import pytest

from agentgraph import Guide, OutputError, validate
from agentgraph.structured._compile import shape_of

FAIL = object()


class Severity(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


@attrs.frozen
class Issue:
    line: int
    message: str
    severity: Severity = Severity.LOW
    tags: list[str] = attrs.field(factory=list)
    note: str | None = None
    hint: Annotated[str | None, Guide("a hint")] = None


@dataclasses.dataclass
class Review:
    issues: list[Issue]
    scores: dict[str, float]
    pair: tuple[int, str]
    maybe: int | None


@attrs.frozen
class Ranged:
    value: int = attrs.field()

    @value.validator
    def _positive(self, attribute: Any, value: int) -> None:
        if value < 0:
            raise ValueError("value must be >= 0")


@attrs.frozen
class Add:
    kind: Literal["add"]
    x: int


@attrs.frozen
class Remove:
    kind: Literal["remove"]
    index: int


@attrs.frozen
class Plan:
    ops: list[Add | Remove]


@attrs.frozen
class Aliased:
    _secret: int


# (type, input, lenient result, strict result); FAIL marks a value that must be refused.
TABLE: list[tuple[Any, Any, Any, Any]] = [
    (int, 42, 42, 42),
    (int, "42", 42, FAIL),
    (int, " -7 ", -7, FAIL),
    (int, "4.0", 4, FAIL),
    (int, "1e3", 1000, FAIL),
    (int, 3.0, 3, FAIL),
    (int, 3.7, FAIL, FAIL),
    (int, "abc", FAIL, FAIL),
    (int, "4.5", FAIL, FAIL),
    (int, True, FAIL, FAIL),
    (int, None, FAIL, FAIL),
    (float, 1, 1.0, 1.0),
    (float, 1.5, 1.5, 1.5),
    (float, "1.5", 1.5, FAIL),
    (float, "nan", FAIL, FAIL),
    (float, "inf", FAIL, FAIL),
    (float, False, FAIL, FAIL),
    (float, 10**400, FAIL, FAIL),
    (float, "1e999", FAIL, FAIL),
    (int, "9" * 5000, FAIL, FAIL),
    # only ASCII decimals: Python's own parsers also read "1_000" and other scripts' digits
    (int, "1_000", FAIL, FAIL),
    (int, "\u0663", FAIL, FAIL),
    (int, "\uff17", FAIL, FAIL),
    (int, "1_0.0", FAIL, FAIL),
    (float, "1_0.5", FAIL, FAIL),
    (float, "\u0663.5", FAIL, FAIL),
    (float, " -.5e-1 ", -0.05, FAIL),
    (float, "+7", 7.0, FAIL),
    (bool, True, True, True),
    (bool, "true", True, FAIL),
    (bool, " FALSE ", False, FAIL),
    (bool, "yes", FAIL, FAIL),
    (bool, 1, FAIL, FAIL),
    (str, "x", "x", "x"),
    (str, 42, FAIL, FAIL),
    (None, None, None, None),
    (None, "null", FAIL, FAIL),
    (list[int], [1, "2"], [1, 2], FAIL),
    (list[int], [1, 2], [1, 2], [1, 2]),
    (list[int], 5, FAIL, FAIL),
    (list[int], "[1]", FAIL, FAIL),
    (list[str], "a", FAIL, FAIL),
    (tuple[int, ...], [1, 2], (1, 2), (1, 2)),
    (tuple[int, ...], ["1"], (1,), FAIL),
    (tuple[int, str], [1, "a"], (1, "a"), (1, "a")),
    (tuple[int, str], ["1", "a"], (1, "a"), FAIL),
    (tuple[int, str], [1], FAIL, FAIL),
    (dict[str, int], {"a": "1"}, {"a": 1}, FAIL),
    (dict[str, int], {"a": 1}, {"a": 1}, {"a": 1}),
    (dict[str, int], [1], FAIL, FAIL),
    (Literal["a", "b"], "a", "a", "a"),
    (Literal["a", "b"], "c", FAIL, FAIL),
    (Literal[1, 2], "1", 1, FAIL),
    (Literal[1, 2], True, FAIL, FAIL),
    (Literal[True], "true", True, FAIL),
    (Severity, "low", Severity.LOW, Severity.LOW),
    (Severity, Severity.HIGH, Severity.HIGH, Severity.HIGH),
    (Severity, "LOW", FAIL, FAIL),
    (Level, 1, Level.ONE, Level.ONE),
    (Level, "2", Level.TWO, FAIL),
    (int | None, None, None, None),
    (int | None, "3", 3, FAIL),
    (int | str, "42", "42", "42"),
    (int | str, 42, 42, 42),
    (int | str, 4.0, 4, FAIL),
    (int | str, None, FAIL, FAIL),
    (Any, {"x": [1]}, {"x": [1]}, {"x": [1]}),
    (Annotated[int, Guide("n")], "5", 5, FAIL),
]


@pytest.mark.parametrize(("tp", "value", "lenient", "strict"), TABLE)
def test_lenient_and_strict_table(tp, value, lenient, strict):
    for mode, want in ((False, lenient), (True, strict)):
        if want is FAIL:
            with pytest.raises(OutputError) as info:
                validate(tp, value, strict=mode)
            assert len(info.value.errors) == 1
            assert ": expected " in info.value.errors[0]
        else:
            got = validate(tp, value, strict=mode)
            assert got == want
            assert type(got) is type(want)


def test_class_lenient_fills_defaults_and_ignores_unknown_fields():
    issue = validate(Issue, {"line": "3", "message": "m", "extra": 1})
    assert issue == Issue(3, "m")
    assert issue.tags == []
    assert validate(Issue, {"line": 1, "message": "m", "severity": "high", "note": None}) == Issue(
        1, "m", Severity.HIGH
    )


def test_class_strict_rejects_unknown_fields_and_coercion():
    with pytest.raises(OutputError) as info:
        validate(Issue, {"line": "3", "message": "m", "extra": 1, "other": 2}, strict=True)
    assert info.value.errors == (
        'line: expected int, got "3"',
        "extra: unexpected field",
        "other: unexpected field",
    )


def test_optional_field_without_default_may_be_missing():
    review = validate(Review, {"issues": [], "scores": {}, "pair": [1, "a"]})
    assert review.maybe is None


def test_every_problem_is_reported_with_its_path():
    value = {
        "issues": [
            {"line": 1, "message": "ok"},
            {"line": "x", "message": 3},
            {"message": "m", "severity": "urgent", "tags": ["a", 2]},
        ],
        "scores": {"a": "z", 'q"k': None},
        "pair": [1, 2],
        "maybe": "many",
    }
    with pytest.raises(OutputError) as info:
        validate(Review, value)
    assert info.value.errors == (
        'issues[1].line: expected int, got "x"',
        "issues[1].message: expected str, got 3",
        "issues[2].line: required field missing",
        'issues[2].severity: expected one of "low", "high", got "urgent"',
        "issues[2].tags[1]: expected str, got 2",
        'scores["a"]: expected float, got "z"',
        'scores["q\\"k"]: expected float, got null',
        "pair[1]: expected str, got 2",
        'maybe: expected int, got "many"',
    )
    error = info.value
    assert isinstance(error, ValueError)
    assert error.details == {"type": "Review"}
    assert str(error).startswith("value does not match Review (9 problems):\n  issues[1].line")


def test_root_and_container_errors():
    with pytest.raises(OutputError) as info:
        validate(Issue, 3)
    assert info.value.errors == ("$: expected object, got 3",)
    with pytest.raises(OutputError) as info:
        validate(dict[str, int], {1: 1})
    assert info.value.errors == ("$: expected a str key, got 1",)
    with pytest.raises(OutputError) as info:
        validate(tuple[int, str], [1, "a", 3])
    assert info.value.errors == ('$: expected 2 items, got [1,"a",3]',)
    with pytest.raises(OutputError) as info:
        validate(int, "x" * 100)
    shown = info.value.errors[0].removeprefix("$: expected int, got ")
    assert len(shown) == 60
    assert shown.endswith("...")
    with pytest.raises(OutputError) as info:
        validate(int, object())
    assert info.value.errors == ("$: expected int, got a Python object",)


def test_constructor_refusal_is_a_problem_at_the_object():
    assert validate(Ranged, {"value": 2}) == Ranged(2)
    with pytest.raises(OutputError) as info:
        validate(list[Ranged], [{"value": 1}, {"value": -1}])
    assert info.value.errors == ("[1]: Ranged rejected the value: value must be >= 0",)


def test_instances_pass_through():
    issue = Issue(1, "m")
    assert validate(Issue, issue) is issue
    assert validate(Add | Remove, Add("add", 1)) == Add("add", 1)


def test_attrs_private_fields_use_their_init_name():
    assert validate(Aliased, {"secret": 3}) == Aliased(3)


def test_tagged_union_dispatch_and_errors():
    plan = validate(Plan, {"ops": [{"kind": "add", "x": "1"}, {"kind": "remove", "index": 0}]})
    assert plan == Plan([Add("add", 1), Remove("remove", 0)])
    with pytest.raises(OutputError) as info:
        validate(
            Plan,
            {"ops": [{"x": 1}, {"kind": "move"}, {"kind": "remove", "index": "a"}, 7]},
        )
    assert info.value.errors == (
        'ops[0].kind: required field missing (one of "add", "remove")',
        'ops[1].kind: expected one of "add", "remove", got "move"',
        'ops[2].index: expected int, got "a"',
        "ops[3]: expected object, got 7",
    )
    with pytest.raises(OutputError) as info:
        validate(Add | Remove, {"kind": "add", "x": 1, "index": 2}, strict=True)
    assert info.value.errors == ("index: unexpected field",)


def test_untagged_union_of_classes_tries_each():
    @attrs.frozen
    class A:
        a: int

    @attrs.frozen
    class B:
        b: int

    assert validate(A | B, {"b": "2"}) == B(2)
    with pytest.raises(OutputError) as info:
        validate(A | B, {"c": 1})
    assert info.value.errors == ('$: expected A | B, got {"c":1}',)


def test_unions_in_another_order_are_not_served_from_each_others_cache():
    @dataclasses.dataclass
    class Cat:
        name: str

    @dataclasses.dataclass
    class Dog:
        name: str

    assert validate(float | int, 3) == 3.0  # cached first, then its equal mirror image
    assert type(validate(int | float, 3)) is int
    assert type(validate(Cat | Dog, {"name": "x"})) is Cat
    assert type(validate(Dog | Cat, {"name": "x"})) is Dog
    assert shape_of(list[int | str]) is not shape_of(list[str | int])
    assert shape_of(int | str) is shape_of(int | str)


def test_shapes_are_cached_per_type_and_unhashable_types_still_work():
    assert shape_of(Issue) is shape_of(Issue)
    assert shape_of(list[int]) is shape_of(list[int])
    unhashable = Annotated[int, {"not": "hashable"}]
    assert validate(unhashable, "4") == 4


class Order(TypedDict):
    """An order."""

    item: Annotated[str, Guide("what to order")]
    count: NotRequired[int]


class Extras(TypedDict, total=False):
    note: str
    order: Required[Order]


def test_a_typed_dict_is_an_object_of_its_keys_its_optional_ones_left_out_when_absent():
    from agentgraph import json_schema

    assert validate(Order, {"item": "tea"}, strict=True) == {"item": "tea"}
    assert validate(Order, {"item": "tea", "count": "2"}) == {"item": "tea", "count": 2}
    schema = json_schema(Order)
    assert schema["required"] == ["item"] and schema["description"] == "An order."
    assert schema["properties"]["item"] == {"type": "string", "description": "what to order"}
    assert validate(Extras, {"order": {"item": "x"}}, strict=True) == {"order": {"item": "x"}}
    with pytest.raises(OutputError) as refused:
        validate(Extras, {"note": 1, "order": {"count": 1}, "more": 1}, strict=True)
    assert refused.value.errors == (
        "note: expected str, got 1",
        "order.item: required field missing",
        "more: unexpected field",
    )
