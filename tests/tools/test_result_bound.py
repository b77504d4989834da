"""Every tool result the model reads is bounded: start and end kept, a note of what was cut."""

from __future__ import annotations

import pytest

from agentgraph import AgentContext, GraphRunner, ToolCall, tool
from agentgraph.checkpoint import MemoryStore
from agentgraph.nodes import react_agent, tool_use
from agentgraph.testing import ScriptedModel
from agentgraph.tools import MAX_RESULT_CHARS, run_tool_calls

pytestmark = pytest.mark.anyio

BIG = "START" + "x" * 249_992 + "END"  # 250,000 characters


@tool
def dump() -> str:
    """A tool that returns far more than a model should read."""
    return BIG


@tool
def loud() -> str:
    """A tool whose error message is huge."""
    raise RuntimeError("E" * 300_000)


@tool(max_result_chars=500)
def small_dump() -> str:
    """The same result, with a bound of its own."""
    return BIG


async def one(item, **options):
    [outcome] = await run_tool_calls([item], [ToolCall("c1", item.name, {})], **options)
    return outcome.message.content


async def test_a_long_result_keeps_its_start_and_end_and_says_what_was_cut():
    text = await one(dump)
    assert MAX_RESULT_CHARS == 100_000
    assert text.startswith("START") and text.endswith("END")
    assert len(text) < MAX_RESULT_CHARS + 300
    assert "150,000 of this result's 250,000 characters were cut here" in text
    assert "limited to 100,000" in text
    assert text.count("x") == MAX_RESULT_CHARS - len("START") - len("END")


async def test_the_bound_is_the_tools_own_then_the_callers_and_none_lifts_it():
    assert len(await one(small_dump)) < 500 + 300
    assert len(await one(dump, max_result_chars=1_000)) < 1_000 + 300
    assert await one(dump, max_result_chars=None) == BIG
    assert len(await one(small_dump, max_result_chars=None)) < 500 + 300
    assert await one(dump.with_max_result_chars(None)) != BIG  # the caller's bound applies


async def test_an_error_message_is_bounded_too():
    text = await one(loud)
    assert text.startswith('tool "loud" failed: RuntimeError: EEE')
    assert len(text) < MAX_RESULT_CHARS + 300 and "characters were cut here" in text


def test_bounds_are_checked_when_made():
    with pytest.raises(ValueError, match="at least 100"):
        tool_use([dump], max_result_chars=10)
    with pytest.raises(ValueError, match="at least 100"):
        dump.with_max_result_chars(0)


async def test_the_record_holds_what_the_model_read_so_a_replay_is_exact():
    model = ScriptedModel(ScriptedModel.tool_call("dump"), "done")
    agent = react_agent(model, [dump])
    store = MemoryStore()
    out = await GraphRunner().run(agent, AgentContext("go"), store=store, run_id="big")
    read = out.history[2].content
    assert len(read) < MAX_RESULT_CHARS + 300
    assert model.requests[1].messages[-1].content == read  # what the model was sent
    log = await store.load("big")
    assert log is not None
    [recorded] = [e.value.decode() for e in log.effects if e.kind == "result"]
    assert "characters were cut here" in recorded and BIG not in recorded
    again = await GraphRunner().replay(agent, "big", store)
    assert again.history == out.history
