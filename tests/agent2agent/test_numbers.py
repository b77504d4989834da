"""Whole doubles of data parts made ints exactly where the type's schema says integer."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from agentgraph import json_schema, validate
from agentgraph.a2a._numbers import whole_numbers


@attrs.frozen
class Car:
    kind: Literal["car"]
    seats: int


@attrs.frozen
class Boat:
    kind: Literal["boat"]
    length: float


@attrs.frozen
class Trip:
    ride: Car | Boat
    legs: tuple[int, float]
    stops: dict[str, int]
    spare: int | None = None
    cars: list[Car] = attrs.field(factory=list)
    extra: Any = None
    price: float = 0.0


def test_integers_by_the_schema_and_doubles_everywhere_else():
    sent = {
        "ride": {"kind": "boat", "length": 12.0},
        "legs": [3.0, 4.0],
        "stops": {"Oslo": 2.0},
        "spare": 1.0,
        "cars": [{"kind": "car", "seats": 4.0}],
        "extra": {"n": 2.0},
        "price": 90.0,
    }
    assert whole_numbers(json_schema(Trip), sent) == {
        "ride": {"kind": "boat", "length": 12.0},
        "legs": [3, 4.0],
        "stops": {"Oslo": 2},
        "spare": 1,
        "cars": [{"kind": "car", "seats": 4}],
        "extra": {"n": 2.0},
        "price": 90.0,
    }
    narrowed = whole_numbers(json_schema(Trip), {**sent, "ride": {"kind": "car", "seats": 5.0}})
    trip = validate(Trip, narrowed, strict=True)
    assert trip.ride == Car("car", 5) and type(trip.ride.seats) is int
    assert type(trip.price) is float and type(trip.extra["n"]) is float


def test_a_fraction_or_a_type_that_does_not_fit_is_left_for_validation_to_refuse():
    schema = json_schema(Trip)
    assert whole_numbers(schema, {"spare": 1.5, "legs": "x", "ride": 2.0}) == {
        "spare": 1.5,
        "legs": "x",
        "ride": 2.0,
    }
    assert whole_numbers({"type": "integer"}, 7.0) == 7
    assert type(whole_numbers({}, 7.0)) is float


@attrs.frozen
class Choice:
    mixed: Literal[1, "a"]
    either: Literal[2, "b"] | None = None


def test_a_whole_double_is_the_integer_an_untyped_enum_lists():
    # `Literal[1, "a"]` has no `type` in its schema, only `enum`: 1.0 is the 1 it lists.
    schema = json_schema(Choice)
    narrowed = whole_numbers(schema, {"mixed": 1.0, "either": 2.0})
    assert narrowed == {"mixed": 1, "either": 2}
    assert [type(v) for v in narrowed.values()] == [int, int]
    assert validate(Choice, narrowed, strict=True) == Choice(1, 2)
    assert type(whole_numbers(schema, {"mixed": 3.0})["mixed"]) is float  # not listed


def test_an_object_keeps_its_schemas_field_order_whatever_order_it_arrived_in():
    # A protobuf Struct is a map: its fields come back in no particular order.
    arrived = {"price": 1.0, "extra": None, "legs": [1.0, 2.0], "stops": {}, "unlisted": 3.0}
    arrived["ride"] = {"seats": 2.0, "kind": "car"}
    narrowed = whole_numbers(json_schema(Trip), arrived)
    assert list(narrowed) == ["ride", "legs", "stops", "extra", "price", "unlisted"]
    assert list(narrowed["ride"]) == ["kind", "seats"]
