"""Partial objects while an answer streams: `stream_structured` and `generate(stream=True)`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from agentgraph import (
    AgentContext,
    GraphBuilder,
    GraphRunner,
    Message,
    ModelRequested,
    ModelResponded,
    OutputError,
    Partial,
    PartialOutput,
    ResponseFormatError,
    ServerError,
    StructuredOutput,
    generate,
    stream_structured,
)
from agentgraph.llm import ChatRequest, ChatResponse, StreamEvent, TextDelta
from agentgraph.testing import BrokenStream, ScriptedModel

pytestmark = pytest.mark.anyio

GOOD = '{"approve": true, "summary": "fine"}'
REQUEST = ChatRequest([Message.user("Judge.")])


@attrs.frozen
class Verdict:
    approve: bool
    summary: str


async def partials_of(model: Any, tp: Any = Verdict) -> list[Partial[Any]]:
    async with stream_structured(model, tp, REQUEST) as parts:
        return [partial async for partial in parts]


async def test_partials_grow_field_by_field_and_end_validated():
    parts = await partials_of(ScriptedModel(GOOD, chunk_size=8))
    assert [(p.value, p.complete) for p in parts] == [
        ({}, False),
        ({"approve": True}, False),
        ({"approve": True, "summary": "fi"}, False),
        ({"approve": True, "summary": "fine"}, False),
        ({"approve": True, "summary": "fine"}, True),
    ]
    assert [p.result for p in parts] == [None] * 4 + [Verdict(True, "fine")]
    growing = parts[2]
    assert (growing.has("summary"), growing.get("summary"), growing.has("other")) == (
        True,
        "fi",
        False,
    )
    assert (growing.done("approve"), growing.done("summary"), growing.done("other")) == (
        True,
        False,
        False,
    )
    assert growing.get("other", "-") == "-" and growing.text == '{"approve": true, "summary": "fi'
    assert parts[-1].done("summary") and parts[-1].text == GOOD


async def test_prose_and_fences_before_the_value_yield_nothing_until_it_starts():
    text = f"Sure, here it is:\n```json\n{GOOD}\n```"
    parts = await partials_of(ScriptedModel(text, chunk_size=6))
    assert parts[0].value == {}
    assert "{" in parts[0].text and parts[-1].result == Verdict(True, "fine")
    assert all(p.has("approve") for p in parts[2:])


async def test_a_root_that_is_not_an_object_has_no_fields():
    parts = await partials_of(ScriptedModel("[1, 22, 3]", chunk_size=3), list[int])
    assert [p.value for p in parts] == [[1], [1, 22], [1, 22, 3], [1, 22, 3]]
    assert not parts[-1].has("x") and parts[-1].get("x") is None and not parts[-1].done("x")
    assert parts[-1].result == [1, 22, 3]


async def test_an_invalid_final_answer_raises_after_its_partials():
    seen: list[Partial[Any]] = []
    with pytest.raises(OutputError) as info:
        async with stream_structured(ScriptedModel('{"approve": "x"}'), Verdict, REQUEST) as parts:
            async for partial in parts:
                seen.append(partial)
    assert seen and not any(p.complete for p in seen)
    assert parts.response is not None and parts.response.message.content == '{"approve": "x"}'
    assert info.value.attempts == ('{"approve": "x"}',)
    assert "summary: required field missing" in info.value.errors


async def test_provider_errors_mid_stream_propagate():
    error = ServerError("stream broke", provider="p", status=500)
    model = ScriptedModel(BrokenStream(GOOD, error, after_events=2), chunk_size=8)
    seen: list[Partial[Any]] = []
    with pytest.raises(ServerError):
        async with stream_structured(model, Verdict, REQUEST) as parts:
            async for partial in parts:
                seen.append(partial)
    assert [p.value for p in seen] == [{}, {"approve": True}]


class EndsEarly:
    """A model whose stream stops without its final response."""

    name = "ends-early"

    async def request(self, request: ChatRequest) -> ChatResponse:
        raise AssertionError("only streams")

    @asynccontextmanager
    async def stream(self, request: ChatRequest) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        async def events() -> AsyncIterator[StreamEvent]:
            yield TextDelta('{"approve": true')

        yield events()


async def test_a_stream_without_its_final_response_is_a_format_error():
    seen: list[Partial[Any]] = []
    with pytest.raises(ResponseFormatError, match="without its final response"):
        async with stream_structured(EndsEarly(), Verdict, REQUEST) as parts:
            async for partial in parts:
                seen.append(partial)
    assert [p.value for p in seen] == [{"approve": True}]
    assert [p async for p in parts] == []  # finished: iterating again yields nothing


async def test_generate_emits_partials_per_attempt_then_the_complete_object():
    model = ScriptedModel('{"approve": "x"}', GOOD, chunk_size=12)
    node = generate(Verdict, instruction="Judge.", attempts=2, stream=True, model=model)
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    async with GraphRunner().stream(g.build(), AgentContext(None)) as stream:
        events = [event async for event in stream]
    out = events[-1].context
    assert out.input == Verdict(True, "fine") and out.usage.requests == 2
    steps = [
        (e.attempt, e.partial.value, e.partial.complete)
        if isinstance(e, PartialOutput)
        else type(e).__name__
        for e in events
        if isinstance(e, PartialOutput | ModelRequested | ModelResponded | StructuredOutput)
    ]
    assert steps == [
        "ModelRequested",
        (1, {}, False),
        (1, {"approve": "x"}, False),
        "ModelResponded",
        "ModelRequested",
        (2, {}, False),
        (2, {"approve": True}, False),
        (2, {"approve": True, "summary": "fine"}, False),
        (2, {"approve": True, "summary": "fine"}, True),
        "ModelResponded",
        "StructuredOutput",
    ]
    (trace,) = [e for e in events if isinstance(e, StructuredOutput)]
    assert trace.config["stream"] is True
    assert [a.ok for a in trace.attempts] == [False, True]


async def test_generate_streaming_failure_raises_with_every_attempt():
    model = ScriptedModel("no", "still no")
    node = generate(Verdict, instruction="Judge.", attempts=2, stream=True, model=model)
    with GraphBuilder[Any, Any]("g") as g:
        g.start.edge_to(node).edge_to(g.finish)
    with pytest.raises(Exception) as info:
        await GraphRunner().run(g.build(), AgentContext(None))
    error = info.value.__cause__
    assert isinstance(error, OutputError) and error.attempts == ("no", "still no")
