"""A tool that returns an image: the result's parts, its bound, and its journal entry."""

from __future__ import annotations

import base64

import pytest

from agentgraph import AgentContext, GraphRunner, ToolCall, tool
from agentgraph.checkpoint import MemoryStore
from agentgraph.guards import Guards, MaskSecrets
from agentgraph.llm import Document, Image, Message, Usage
from agentgraph.nodes import react_agent
from agentgraph.testing import ScriptedModel
from agentgraph.tools import ToolResult, run_tool_calls

pytestmark = pytest.mark.anyio

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
IMAGE = Image.from_bytes(PNG)


@tool
def snap() -> Image:
    """A picture alone."""
    return IMAGE


@tool
def chart(city: str) -> list[object]:
    """A picture with words around it."""
    return [f"The chart for {city}:", IMAGE, "Rain on Tuesday."]


@tool
def words() -> list[str]:
    """A list of strings is data."""
    return ["a", "b"]


@tool
def report() -> Document:
    """A document, which a tool result cannot carry."""
    return Document.from_bytes(b"%PDF-1.4 report")


@tool
def paid() -> ToolResult:
    """An image whose making cost model tokens."""
    return ToolResult([IMAGE], usage=Usage(input_tokens=5, requests=1))


@tool(max_result_chars=200)
def long_chart() -> list[object]:
    """Far more text than the bound, and an image."""
    return ["A" * 1000, IMAGE, "Z" * 1000]


async def one(item, **arguments):
    [outcome] = await run_tool_calls([item], [ToolCall("c1", item.name, arguments)])
    return outcome


async def test_an_image_alone_is_the_result():
    outcome = await one(snap)
    assert outcome.ok
    assert outcome.message == Message.tool("c1", IMAGE, name="snap")


async def test_text_and_images_keep_their_order():
    outcome = await one(chart, city="Paris")
    assert outcome.message.parts == ("The chart for Paris:", IMAGE, "Rain on Tuesday.")
    assert outcome.message.content == "The chart for Paris:\n\nRain on Tuesday."


async def test_a_list_of_strings_is_still_json():
    outcome = await one(words)
    assert (outcome.message.content, outcome.message.parts) == ('["a","b"]', ())


async def test_a_document_is_refused_with_a_message_the_model_reads():
    outcome = await one(report)
    assert outcome.error == "bad_result" and outcome.message.is_error
    assert "carries text and images only" in outcome.message.content


async def test_a_tool_result_with_usage_keeps_its_image_and_its_usage():
    outcome = await one(paid)
    assert outcome.message.parts == (IMAGE,)
    assert outcome.message.usage == Usage(input_tokens=5, requests=1)


async def test_the_bound_cuts_the_text_only_and_keeps_the_images():
    outcome = await one(long_chart)
    message = outcome.message
    assert message.media == (IMAGE,)
    [text, image] = message.parts
    assert image == IMAGE and text == message.content
    assert len(text) > 200 and "were cut here" in text  # the note says what was cut
    assert text.startswith("A" * 150) and text.endswith("Z" * 50)


@tool(name="chart")
def never(city: str) -> str:
    """A picture with words around it."""
    # Stands in for chart (same spec): a replay serves the recorded result.
    raise AssertionError("the replay ran the tool")


async def test_a_tool_image_is_journaled_as_a_blob_and_replays_exactly():
    store = MemoryStore()
    model = ScriptedModel(ScriptedModel.tool_call("chart", city="Paris"), "Rain on Tuesday.")
    runner = GraphRunner()
    run_id = "tool-images"
    await runner.run(
        react_agent(model, [chart]), AgentContext("Paris?"), store=store, run_id=run_id
    )
    log = await store.load(run_id)
    records = [log.run.context, *(r.context for r in log.steps), *(e.value for e in log.effects)]
    inline = base64.b64encode(PNG)[:40]
    assert not any(inline in record for record in records)  # by digest, never inline
    results = [e.value for e in log.effects if e.kind == "result"]
    assert len(results) == 1 and IMAGE.digest.encode() in results[0]
    assert store._blobs == {IMAGE.digest: PNG}
    replayed = await runner.replay(react_agent(ScriptedModel(), [never]), run_id, store)
    call_id = replayed.history[1].tool_calls[0].id
    expected = ("The chart for Paris:", IMAGE, "Rain on Tuesday.")
    assert replayed.history[2] == Message.tool(call_id, *expected, name="chart")
    assert replayed.input == "Rain on Tuesday."


@tool
def leaky() -> list[object]:
    """A picture whose caption holds a secret."""
    return ["token hunter2 in the chart", IMAGE]


async def test_a_masking_guard_rewrites_the_text_and_keeps_the_image():
    model = ScriptedModel(ScriptedModel.tool_call("leaky"), "Done.")
    runner = GraphRunner(guards=Guards(input=[MaskSecrets(["hunter2"])]))
    await runner.run(react_agent(model, [leaky]), AgentContext("go"))
    sent = model.requests[1].messages[-1]
    assert "hunter2" not in sent.content and sent.media == (IMAGE,)
    assert sent.parts[0] == sent.content  # the text part and the content agree
