import dataclasses
import enum
import pickle
import tracemalloc

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


def test_forks_share_their_common_past():
    base = AgentContext(0).append(*[Message.user(str(i)) for i in range(1000)])
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        forks = [base.append(Message.user(f"fork {i}")) for i in range(10_000)]
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # A copy of the 1,000 messages per fork would take about 80 MB.
    assert grown < 8 * 2**20, grown
    assert [len(f.history) for f in forks[:2]] == [1001, 1001]
    assert forks[7].history[1000].content == "fork 7" and forks[7].history[999].content == "999"
    assert forks[7].history[-1001].content == "0"
    assert list(forks[3].history)[-2:] == [Message.user("999"), Message.user("fork 3")]


def test_forks_of_forks_keep_every_message_in_order():
    ctx = AgentContext(0).append(Message.user("root"))
    expected = ["root"]
    for depth in range(40):  # deeper than any chain is kept: flattening must not lose a message
        ctx.append(Message.user("sibling"))  # makes the next append a fork
        ctx = ctx.append(Message.user(f"d{depth}"), Message.user(f"e{depth}"))
        expected += [f"d{depth}", f"e{depth}"]
        ctx = ctx.append(Message.user(f"f{depth}"))  # extends the fork's own list in place
        expected.append(f"f{depth}")
        assert [m.content for m in ctx.history] == expected
    history = ctx.history
    assert [history[i].content for i in range(len(history))] == expected
    assert [history[i].content for i in range(-len(history), 0)] == expected
    assert history.last().content == expected[-1]
    assert history.last("assistant") is None
    assert history == History(Message.user(t) for t in expected)
    assert history[5:8] == History(Message.user(t) for t in expected[5:8])
    assert pickle.loads(pickle.dumps(history)) == history
    assert AgentContext.from_json(ctx.to_json()).history == history


def test_a_checkpoint_of_forked_histories_stores_only_what_each_fork_added():
    from agentgraph.checkpoint._codec import ContextEncoder, decode_context

    base = AgentContext(0).append(*[Message.user(str(i)) for i in range(50)])
    left = base.append(Message.user("left"))
    right = base.append(Message.user("right"), Message.assistant("more"))
    encoder = ContextEncoder(base)
    delta = encoder.delta(right)
    assert orjson.loads(delta)["h"] and "H" not in orjson.loads(delta)
    assert decode_context(delta, base).history == right.history
    other = ContextEncoder(left).delta(right)  # not an extension: stored whole
    assert len(orjson.loads(other)["H"]) == 52
    assert decode_context(other, left).history == right.history


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
