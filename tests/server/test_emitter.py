"""How a run names its thread's messages: the ids the thread gave them, the id a streamed
answer was sent under, and by place for a message stored without one."""

from __future__ import annotations

from typing import Any

from agentgraph import AgentContext
from agentgraph.llm import Message
from agentgraph.server._emitter import RunEmitter
from agentgraph.server._mapping import MessageIds, message_id
from agentgraph.server._queue import QueuedRun, StoredThread

THREAD = "5b0e2f4c-1d7a-4d5e-9c61-0f3b2a8e7d11"


def run() -> QueuedRun:
    kwargs: dict[str, Any] = {"stream_mode": ["values"], "input": {"topic": "t"}}
    return QueuedRun(
        "2f1c", THREAD, "a", "g", "running", kwargs, {}, "enqueue", None, None, 1, 0.0, 0.0
    )


def thread(messages: list[Any]) -> StoredThread:
    state = {"messages": messages, "topic": "old"}
    return StoredThread(THREAD, "busy", {}, state, [], None, 0.0, 0.0)


def test_the_threads_ids_stay_and_one_stored_without_an_id_is_named_by_its_place():
    stored = [{"type": "human", "content": "a", "id": "kept"}, {"type": "ai", "content": "b"}]
    emitter = RunEmitter(None, run(), thread(stored), typed=False)  # type: ignore[arg-type]
    ctx = AgentContext(
        "", history=(Message.user("a"), Message.assistant("b"), Message.user("c"))
    ).evolve(state={"topic": "t"})
    values = emitter.values(ctx)
    assert [m["id"] for m in values["messages"]] == [
        "kept",
        message_id(THREAD, 1),
        message_id(THREAD, 2),
    ]
    assert emitter.fresh(values) == values["messages"][2:]
    assert emitter.changed(values) == {}  # the input's `topic` is no change of a step


def test_a_streamed_answer_is_named_by_its_call_once_and_an_equal_later_one_by_its_place():
    ids = MessageIds(THREAD)
    ids.answered(Message.assistant("same"), "call-1")
    history = (Message.user("q"), Message.assistant("same"), Message.assistant("same"))
    assert ids.of(history) == [message_id(THREAD, 0), "call-1", message_id(THREAD, 2)]
    assert ids.of(history[:2]) == [message_id(THREAD, 0), "call-1"]
