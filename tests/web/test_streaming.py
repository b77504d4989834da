"""`chat(stream=True)` reports its text as it arrives (`ModelStreamed`), on asyncio and trio."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from agentgraph import (
    AgentContext,
    GraphRunner,
    ModelRequested,
    ModelResponded,
    ModelStreamed,
    NodeFailed,
    ResponseFormatError,
)
from agentgraph.llm import ChatRequest, ChatResponse, TextDelta
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel
from agentgraph.tracing import TraceRecorder

pytestmark = pytest.mark.anyio

TEXT = "Streaming text arrives in pieces."


async def test_a_streamed_chat_reports_each_piece_then_the_response():
    seen: list[object] = []
    node = chat(ScriptedModel(TEXT, chunk_size=6), stream=True)
    out = await GraphRunner(sinks=[seen.append]).run(node, AgentContext("hi"))
    model_events = [
        e for e in seen if isinstance(e, ModelRequested | ModelStreamed | ModelResponded)
    ]
    kinds = [type(e).__name__ for e in model_events]
    pieces = [e.text for e in model_events if isinstance(e, ModelStreamed)]
    assert kinds == ["ModelRequested", *["ModelStreamed"] * len(pieces), "ModelResponded"]
    assert len(pieces) == 6 and "".join(pieces) == TEXT
    assert out.input.content == TEXT
    plain = await GraphRunner().run(chat(ScriptedModel(TEXT)), AgentContext("hi"))
    assert out.history == plain.history and out.usage == plain.usage


async def test_without_listeners_a_streamed_chat_sends_no_events():
    out = await GraphRunner().run(chat(ScriptedModel(TEXT), stream=True), AgentContext("hi"))
    assert out.input.content == TEXT


class _NoEnd:
    """A model whose stream stops before its final response."""

    name = "no-end"

    async def request(self, request: ChatRequest) -> ChatResponse:
        raise AssertionError("only streamed here")

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[TextDelta]]:
        async def events() -> AsyncIterator[TextDelta]:
            yield TextDelta("half an ans")

        yield events()


async def test_a_stream_without_its_final_response_is_a_format_error():
    with pytest.raises(NodeFailed) as caught:
        await GraphRunner().run(chat(_NoEnd(), stream=True), AgentContext("hi"))
    assert isinstance(caught.value.__cause__, ResponseFormatError)
    assert "ended without its final response" in str(caught.value.__cause__)


async def test_trace_records_of_streamed_text_hold_sizes_not_pieces():
    secret = "sk-proj-" + "Z9k" * 12
    recorder = TraceRecorder()
    text = f"the key is {secret}"
    model = ScriptedModel(text, chunk_size=4)
    await GraphRunner(sinks=[recorder]).run(chat(model, stream=True), AgentContext("hi"))
    streamed = [r for r in recorder.records if r["event"] == "model_streamed"]
    sizes = [r["chars"] for r in streamed]
    assert sum(sizes) == len(text) and max(sizes) == 4 and len(sizes) == 14
    assert all("text" not in r for r in streamed)
    assert "sk-proj" not in str(recorder.records)
