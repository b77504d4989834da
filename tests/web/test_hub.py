"""The broadcaster: publishing never waits, a reader holds one bounded batch, and a slow
reader gets its deltas merged."""

from __future__ import annotations

import anyio
import jsonpatch
import orjson
import pytest

from agentgraph.web import Channel
from agentgraph.web._hub import BATCH, coalesce, frame

pytestmark = pytest.mark.anyio


def text(delta: str, message: str = "m1") -> dict[str, object]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": delta}


def test_runs_of_deltas_merge_and_nothing_else_does():
    items = [
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        text("Hel"),
        text("lo "),
        text("you"),
        text("x", "m2"),
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"a":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": " 1}"},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a", "value": 2}]},
        {"type": "STEP_STARTED", "stepName": "s"},
        {"type": "STEP_STARTED", "stepName": "s"},
    ]
    merged = coalesce(items)
    assert [m["type"] for m in merged] == [
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TOOL_CALL_ARGS",
        "STATE_DELTA",
        "STEP_STARTED",
        "STEP_STARTED",
    ]
    assert merged[1]["delta"] == "Hello you" and merged[2]["delta"] == "x"
    assert merged[3]["delta"] == '{"a": 1}'
    assert jsonpatch.apply_patch({}, merged[4]["delta"]) == {"a": 2}
    assert items[1]["delta"] == "Hel"  # the shared log is never changed


async def test_a_reader_that_keeps_up_sees_every_event():
    channel = Channel()
    got: list[dict[str, object]] = []

    async def read() -> None:
        async for batch in channel.follow():
            got.extend(batch)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        for n in range(5):
            await anyio.sleep(0.005)
            channel.publish({"type": "STEP_STARTED", "stepName": str(n)})
        channel.close()
    assert [g["stepName"] for g in got] == ["0", "1", "2", "3", "4"]


async def test_a_slow_reader_gets_bounded_batches_with_deltas_merged():
    channel = Channel()
    channel.publish({"type": "TEXT_MESSAGE_START", "messageId": "m1"})
    for n in range(3 * BATCH):  # published while nobody reads: nothing waits
        channel.publish(text(f"{n} "))
    channel.close()
    batches = [batch async for batch in channel.follow()]
    assert len(batches) == 4  # BATCH events at most per batch
    assert all(len(batch) <= 2 for batch in batches)
    joined = "".join(item["delta"] for batch in batches for item in batch if "delta" in item)
    assert joined == "".join(f"{n} " for n in range(3 * BATCH))


async def test_a_late_reader_starts_where_it_asks():
    channel = Channel()
    for n in range(4):
        channel.publish({"type": "STEP_STARTED", "stepName": str(n)})
    channel.close()
    batches = [batch async for batch in channel.follow(2)]
    assert [item["stepName"] for batch in batches for item in batch] == ["2", "3"]


async def test_a_stream_sends_each_batch_as_follow_merges_it():
    channel = Channel()
    items = [
        {"type": "STEP_STARTED", "stepName": "s"},
        text("Hel"),
        text("lo"),
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
        {"type": "STEP_FINISHED", "stepName": "s"},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 2}]},
        {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/a"}]},
    ]
    for item in items:
        channel.publish(item)
    channel.close()
    for batch in (2, 3, BATCH):
        followed = [
            b"".join(frame(item) for item in merged)
            async for merged in channel.follow(0, batch=batch)
        ]
        streamed = [chunk async for chunk in channel.stream(0, batch=batch)]
        assert streamed == followed
    sent = b"".join([chunk async for chunk in channel.stream(1)])
    assert sent.count(b"data: ") == 4  # the two texts merged, and the two last deltas
    assert orjson.loads(sent.split(b"\n\n")[0][len(b"data: ") :])["delta"] == "Hello"
