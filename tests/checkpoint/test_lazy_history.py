"""A long history read back from a record decodes a message when it is first read.

What a reader sees is the same as for a history of decoded messages: equality,
hashing, indexing, slicing, iteration, `last`, repr, pickling, and the records
written from it.
"""

import pickle

import pytest

from agentgraph import AgentContext, ContextDecodingError, History, Message, ToolCall
from agentgraph.checkpoint import _codec
from agentgraph.checkpoint._codec import ContextEncoder, decode_context, full_context

LONG = 300


def conversation(count: int = LONG) -> list[Message]:
    messages: list[Message] = []
    for i in range(count // 3):
        messages.append(Message.user(f"question {i}"))
        messages.append(
            Message.assistant(f"answer {i}", tool_calls=(ToolCall(f"c{i}", "probe", {"n": i}),))
        )
        messages.append(Message.tool(f"c{i}", f"result {i}", name="probe"))
    return messages


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many stored messages were decoded."""
    count = [0]
    original = _codec.decode_message

    def counted(*args: object, **kwargs: object) -> Message:
        count[0] += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_codec, "decode_message", counted)
    return count


def stored(ctx: AgentContext[str]) -> AgentContext[str]:
    return decode_context(full_context(ctx), None)


def test_the_last_messages_of_a_long_stored_history_decode_alone(decoded: list[int]) -> None:
    ctx = AgentContext("x", conversation())
    lazy = stored(ctx)
    assert decoded[0] == 0
    assert len(lazy.history) == LONG
    assert list(lazy.history[-20:]) == list(ctx.history)[-20:]
    assert decoded[0] == 20
    assert lazy.history.last("user") == ctx.history.last("user")  # among the last 20
    assert lazy.history[-20] == ctx.history[-20]
    assert decoded[0] == 20  # a position is decoded once
    assert lazy.history[0] == ctx.history[0]
    assert decoded[0] == 21
    assert list(lazy.history) == list(ctx.history)
    assert decoded[0] == LONG


def test_a_stored_history_is_the_history_it_was() -> None:
    ctx = AgentContext("x", conversation())
    lazy, eager = stored(ctx).history, ctx.history
    assert lazy == eager and eager == lazy and lazy == list(eager)
    assert stored(ctx) == ctx
    with pytest.raises(TypeError):
        hash(lazy)
    for part in (slice(-20, None), slice(5, 10), slice(None, None, 7), slice(None), slice(-1, 0)):
        assert stored(ctx).history[part] == eager[part]
        assert type(stored(ctx).history[part]) is History
    assert [stored(ctx).history[i] for i in (0, 1, -1, LONG // 2)] == [
        eager[i] for i in (0, 1, -1, LONG // 2)
    ]
    assert repr(stored(ctx).history) == repr(eager)
    assert pickle.loads(pickle.dumps(stored(ctx))) == ctx
    assert pickle.loads(pickle.dumps(stored(ctx).history)) == eager
    assert type(pickle.loads(pickle.dumps(stored(ctx).history))) is History


def test_a_context_made_from_a_stored_one_is_written_as_the_same_change(
    decoded: list[int],
) -> None:
    ctx = AgentContext("x", conversation())
    lazy = stored(ctx)
    later = [Message.user("one more"), Message.assistant("done")]
    written_lazy = ContextEncoder(lazy).delta(lazy.append(*later).with_input("y"))
    written_eager = ContextEncoder(ctx).delta(ctx.append(*later).with_input("y"))
    assert written_lazy == written_eager
    assert decoded[0] == 0  # only the new messages were encoded: nothing stored was read
    assert full_context(lazy) == full_context(ctx)
    again = decode_context(written_lazy, lazy)
    assert again == ctx.append(*later).with_input("y")


def test_a_change_adding_many_messages_to_a_stored_base_decodes_them_when_read(
    decoded: list[int],
) -> None:
    base = AgentContext("x", conversation(30))
    more = conversation()
    written = ContextEncoder(base).delta(base.append(*more))
    lazy = decode_context(written, base)
    assert decoded[0] == 0
    assert lazy.history[-1] == more[-1] and decoded[0] == 1
    assert lazy.history == base.append(*more).history


def test_a_short_stored_history_is_decoded_at_once(decoded: list[int]) -> None:
    ctx = AgentContext("x", conversation(30))
    assert stored(ctx) == ctx
    assert decoded[0] == 30


def test_a_damaged_message_of_a_long_history_fails_where_it_is_read() -> None:
    import orjson

    data = orjson.loads(full_context(AgentContext("x", conversation())))
    data["H"][-1] = {"r": "assistant", "tc": [["only-two", "fields"]]}
    lazy = decode_context(orjson.dumps(data), None)
    assert lazy.history[0] == conversation()[0]
    with pytest.raises(ContextDecodingError, match="a stored message cannot be decoded"):
        lazy.history[-1]
