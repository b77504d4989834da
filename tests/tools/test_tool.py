"""`@tool`: specs from signatures and docstrings, and functions that cannot be tools."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import attrs
import jsonschema
import pytest

from agentgraph import AgentContext, Guide, ToolError, UnsupportedType
from agentgraph.tools import Tool, tool
from agentgraph.tools._docstring import parse_docstring


class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


@attrs.frozen
class Place:
    city: str
    country: str | None = None


@tool
def forecast(
    place: Place,
    days: Annotated[int, Guide("how many days ahead, 1-7")] = 3,
    unit: Unit = Unit.C,
    fields: list[Literal["temp", "rain"]] | None = None,
) -> dict[str, Any]:
    """Forecast the weather for a place.

    Uses the public forecast service.

    Args:
        place: where to forecast.
        days (int): overridden by the Guide on the type.
        unit: the temperature unit,
            celsius unless asked otherwise.

    Returns:
        The forecast as a mapping.
    """
    return {"city": place.city, "days": days, "unit": unit}


def test_spec_from_signature_and_docstring():
    spec = forecast.spec
    assert spec.name == "forecast"
    assert (
        spec.description == "Forecast the weather for a place.\n\nUses the public forecast service."
    )
    parameters = dict(spec.parameters)
    jsonschema.Draft202012Validator.check_schema(parameters)
    assert parameters["type"] == "object"
    assert parameters["required"] == ["place"]
    assert parameters["additionalProperties"] is False
    props = parameters["properties"]
    assert props["place"] == {"$ref": "#/$defs/Place", "description": "where to forecast."}
    assert props["days"] == {
        "type": "integer",
        "description": "how many days ahead, 1-7",
        "default": 3,
    }
    assert props["unit"] == {
        "type": "string",
        "enum": ["celsius", "fahrenheit"],
        "description": "the temperature unit, celsius unless asked otherwise.",
        "default": "celsius",
    }
    assert props["fields"] == {
        "type": ["array", "null"],
        "items": {"type": "string", "enum": ["temp", "rain"]},
        "default": None,
    }
    assert parameters["$defs"]["Place"]["required"] == ["city"]
    jsonschema.validate({"place": {"city": "Oslo"}, "days": 2}, parameters)


def test_tool_is_callable_and_frozen():
    assert isinstance(forecast, Tool)
    assert forecast(Place("Oslo"), days=1)["days"] == 1
    assert forecast.name == "forecast"
    assert repr(forecast) == "<Tool 'forecast'>"
    assert not forecast.is_async
    assert forecast.retry_safe
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        forecast.timeout = 3  # type: ignore[misc]


@pytest.mark.anyio
async def test_async_tool_and_options():
    @tool(name="lookup-user", description="Find a user.", timeout=2.5, retry_safe=False)
    async def find(user_id: int) -> str:
        """Ignored docstring."""
        return f"user {user_id}"

    assert find.is_async
    assert find.spec.name == "lookup-user"
    assert find.spec.description == "Find a user."
    assert find.timeout == 2.5
    assert not find.retry_safe
    assert await find(4) == "user 4"
    assert find.with_timeout(1).timeout == 1
    assert find.timeout == 2.5


def test_callable_objects_and_undocumented_functions():
    class Counter:
        async def __call__(self, n: int) -> int:
            return n

    made = tool(name="count")(Counter())
    assert made.is_async
    assert made.spec.description == ""

    @tool
    def untyped(x, y=2):  # type: ignore[no-untyped-def]
        return x

    assert untyped.spec.parameters["properties"] == {"x": {}, "y": {"default": 2}}
    assert untyped.spec.parameters["required"] == ["x"]


def test_context_parameter_is_injected_not_shown():
    @tool
    def whoami(ctx: AgentContext[str], loud: bool = False) -> str:
        return ctx.input

    assert whoami.context_param == "ctx"
    assert list(whoami.spec.parameters["properties"]) == ["loud"]
    assert whoami.spec.parameters["required"] == []


def test_defaults_that_are_not_data_are_left_out_of_the_schema():
    marker = object()

    @tool
    def f(a: Any = marker) -> None:
        return None

    assert f.spec.parameters["properties"] == {"a": {}}
    assert f.spec.parameters["required"] == []


@pytest.mark.parametrize("name", ["has space", "", "x" * 65, "dot.ted"])
def test_bad_names(name):
    with pytest.raises(ToolError, match="must be 1-64 letters"):
        tool(name=name)(lambda: None)


def test_functions_that_cannot_be_tools():
    def star(*args: int) -> None: ...

    def kw(**kwargs: int) -> None: ...

    def positional(a: int, /) -> None: ...

    for fn in (star, kw, positional):
        with pytest.raises(ToolError, match="passable by keyword"):
            tool(fn)

    def sets(a: set[int]) -> None: ...

    with pytest.raises(ToolError, match="tool 'sets': cannot describe") as info:
        tool(sets)
    assert isinstance(info.value.__cause__, UnsupportedType)

    def unresolved(a: Nope) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ToolError, match="cannot resolve its type hints") as info:
        tool(unresolved)
    assert isinstance(info.value.__cause__, NameError)

    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ToolError, match="timeout must be a positive number"):
            tool(timeout=bad)(star)
    with pytest.raises(ToolError, match="timeout must be a positive number"):
        forecast.with_timeout(0)


def test_docstring_parser():
    doc = """Summary line.

    Body paragraph
    over two lines.

    Args:
        alpha (int): first.
        beta: second,
            continued here.

            still beta after a blank line.
        *gamma: star args.

    Raises:
        ValueError: not a parameter.
    """
    description, params = parse_docstring(doc)
    assert description == "Summary line.\n\nBody paragraph\nover two lines."
    assert params == {
        "alpha": "first.",
        "beta": "second, continued here. still beta after a blank line.",
        "gamma": "star args.",
    }
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Only a summary.") == ("Only a summary.", {})
