import dataclasses
import enum

import attrs
import orjson
import pytest

from agentgraph import (
    AgentContext,
    ContextEncodingError,
    History,
    Message,
    Settings,
    ToolCall,
    Types,
)


@attrs.frozen
class Point:
    x: int
    y: int


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True)
class Order:
    id: str
    items: tuple[str, ...]
    color: Color
    at: Point


def test_context_is_frozen():
    ctx = AgentContext(1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ctx.input = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        ctx.state["x"] = 1  # type: ignore[index]


def test_copy_on_write_helpers_leave_the_original_alone():
    ctx = AgentContext(2, system_prompt="be brief", state={"k": 1})
    assert ctx.with_input("two").input == "two"
    assert ctx.map(lambda x: x * 10).input == 20
    appended = ctx.append(Message.user("hi"))
    assert list(appended.history) == [Message.user("hi")]
    assert len(ctx.history) == 0
    evolved = ctx.evolve(system_prompt="be long", settings=Settings(model="m"))
    assert (evolved.system_prompt, evolved.settings.model) == ("be long", "m")
    assert ctx.system_prompt == "be brief"
    assert ctx.with_state(j=2).state == {"k": 1, "j": 2}
    assert ctx.state == {"k": 1}
    assert ctx.with_input(5).state is ctx.state


def test_append_shares_storage_and_never_copies_old_messages():
    ctx = AgentContext(0)
    for i in range(1000):
        ctx = ctx.append(Message.user(str(i)))
    first = ctx.history[0]
    longer = ctx.append(Message.user("more"))
    # The new view shares the same backing list: no copy of the 1000 messages.
    assert longer.history._items is ctx.history._items
    assert longer.history[0] is first
    assert len(ctx.history) == 1000 and len(longer.history) == 1001
    assert ctx.history[-1].content == "999"


def test_appending_to_an_old_view_forks_without_disturbing_the_new_one():
    base = AgentContext(0).append(Message.user("a"))
    left = base.append(Message.user("left"))
    right = base.append(Message.user("right"))
    assert [m.content for m in left.history] == ["a", "left"]
    assert [m.content for m in right.history] == ["a", "right"]
    assert [m.content for m in base.history] == ["a"]


def test_history_sequence_behaviour():
    h = History([Message.user("a"), Message.assistant("b")])
    assert h == [Message.user("a"), Message.assistant("b")]
    assert h[1:] == History([Message.assistant("b")])
    assert h.last("user") == Message.user("a")
    assert h.last() == Message.assistant("b")
    assert History().last() is None
    with pytest.raises(IndexError):
        h[2]
    with pytest.raises(TypeError):
        hash(h)


def test_json_round_trip_keeps_types():
    order = Order("o1", ("a", "b"), Color.BLUE, Point(1, 2))
    ctx = AgentContext(
        order,
        system_prompt="sys",
        settings=Settings(model="m", temperature=0.2),
        state={"point": Point(3, 4), "colors": (Color.RED,), "nested": {"n": [1, 2.5, None]}},
    ).append(
        Message.user("hi"),
        Message.assistant(tool_calls=(ToolCall("c1", "add", {"a": 1}),)),
        Message.tool("c1", "2", name="add"),
    )
    data = ctx.to_json()
    orjson.loads(data)  # plain JSON
    back = AgentContext.from_json(data, types=Types.of(Order, Point))
    assert back == ctx
    assert isinstance(back.input, Order) and isinstance(back.input.at, Point)
    assert back.state["colors"] == (Color.RED,)
    assert isinstance(back.history, History)


def test_unserializable_value_names_the_field():
    ctx = AgentContext(1, state={"client": object()})
    with pytest.raises(ContextEncodingError) as info:
        ctx.to_json()
    assert "state['client']" in str(info.value)
    assert info.value.field.endswith("state['client']")
    with pytest.raises(ContextEncodingError, match=r"input\[1\]"):
        AgentContext([1, lambda: 0]).to_json()
    with pytest.raises(ContextEncodingError, match="sets have no order"):
        AgentContext({1, 2}).to_json()


def test_reprs_stay_bounded_however_long_the_history():
    from agentgraph import Message

    ctx = AgentContext(1).append(*[Message.user(f"m{i}") for i in range(10_000)])
    shown = repr(ctx)
    assert len(shown) < 3_000 and "<9994 more>" in shown and "len=10000" in shown
    assert "'m0'" in shown and "'m9999'" in shown and "'m5000'" not in shown
    short = AgentContext(1).append(Message.user("a"))
    assert "more>" not in repr(short)
