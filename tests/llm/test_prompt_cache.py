"""Prompt caching: Anthropic breakpoints (never more than four) and cache tokens in `Usage`."""

from __future__ import annotations

import pytest

from agentgraph import AgentContext, Price, Settings
from agentgraph.llm import AnthropicModel, ChatRequest, Message, ToolCall, ToolSpec, Usage
from agentgraph.nodes import build_request

from .support import Server, Sleeps, json_response, retry, sse, stream_response

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}
TOOLS = (ToolSpec("search", "Search", {"type": "object"}), ToolSpec("read", "Read"))


def model(server: Server | None = None, **kwargs) -> AnthropicModel:
    client = (server or Server()).client()
    return AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-ant-x", http_client=client, retry=retry(Sleeps()), **kwargs
    )


def conversation(turns: int) -> list[Message]:
    """A system prompt, then `turns` rounds of question, tool call and tool result."""
    messages = [Message.system("You are terse.")]
    for i in range(turns):
        messages += [
            Message.user(f"question {i}"),
            Message.assistant("", tool_calls=(ToolCall(f"c{i}", "search", {"q": i}),)),
            Message.tool(f"c{i}", f"result {i}"),
        ]
    return messages


def breakpoints(body: dict) -> list[str]:
    found = [f"tools.{i}" for i, t in enumerate(body.get("tools", ())) if "cache_control" in t]
    system = body.get("system")
    if isinstance(system, list):
        found += [f"system.{i}" for i, b in enumerate(system) if "cache_control" in b]
    for i, turn in enumerate(body["messages"]):
        found += [
            f"messages.{i}.{j}" for j, b in enumerate(turn["content"]) if "cache_control" in b
        ]
    return found


def test_caching_is_off_unless_asked():
    body = model().build_body(ChatRequest(conversation(2), tools=TOOLS))
    assert breakpoints(body) == []
    assert body["system"] == "You are terse."


def test_breakpoints_go_on_the_last_tool_the_system_and_the_last_two_user_turns():
    body = model(cache=True).build_body(ChatRequest(conversation(3), tools=TOOLS))
    # Turns: user, assistant, user (result + question), assistant, user, assistant, user.
    assert breakpoints(body) == ["tools.1", "system.0", "messages.4.1", "messages.6.0"]
    assert body["tools"][1]["cache_control"] == EPHEMERAL
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}
    ]
    assert body["messages"][6]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c2",
        "content": "result 2",
        "cache_control": EPHEMERAL,
    }


@pytest.mark.parametrize("turns", [0, 1, 2, 5, 40])
@pytest.mark.parametrize("tools", [(), TOOLS])
@pytest.mark.parametrize("system", [True, False])
def test_never_more_than_four_breakpoints(turns, tools, system):
    messages = [*conversation(turns)[0 if system else 1 :], Message.user("next")]
    body = model(cache=True).build_body(ChatRequest(messages, tools=tools))
    found = breakpoints(body)
    user_turns = turns + 1
    assert len(found) == min(4, bool(tools) + system + min(2, user_turns)) <= 4
    assert body["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL


def test_the_ttl_and_the_request_setting():
    cached = model(cache=True, cache_ttl="1h")
    body = cached.build_body(ChatRequest([Message.user("hi")]))
    assert body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    # Settings.cache reaches the request and overrides the model, both ways.
    off = build_request(
        AgentContext("x", history=[Message.user("hi")]).evolve(settings=Settings(cache=False))
    )
    assert off.cache is False and breakpoints(cached.build_body(off)) == []
    on = build_request(
        AgentContext("x", history=[Message.user("hi")]), settings=Settings(cache=True)
    )
    assert breakpoints(model().build_body(on)) == ["messages.0.0"]
    with pytest.raises(ValueError, match="cache_ttl"):
        model(cache_ttl="2h")


async def test_cache_reads_and_writes_are_counted_in_usage(anyio_backend):
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 1500,
            "cache_read_input_tokens": 3000,
            "output_tokens": 4,
        },
    }
    server = Server(json_response(answer))
    response = await model(server, cache=True).request(ChatRequest([Message.user("hi")]))
    assert response.usage == Usage(
        input_tokens=4512,
        output_tokens=4,
        requests=1,
        cache_read_tokens=3000,
        cache_write_tokens=1500,
    )


async def test_a_stream_keeps_the_cache_counts_of_message_start(anyio_backend):
    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {
            "input_tokens": 5,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 200,
            "output_tokens": 1,
        },
    }
    events = sse(
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    server = Server(stream_response(events))
    async with model(server).stream(ChatRequest([Message.user("hi")])) as stream:
        items = [event async for event in stream]
    usage = items[-1].response.usage
    assert usage == Usage(305, 3, 1, cache_read_tokens=200, cache_write_tokens=100)


def test_usage_sums_cache_tokens_and_prices_them():
    one = Usage(1000, 100, 1, cache_read_tokens=600, cache_write_tokens=300)
    assert one + one == Usage(2000, 200, 2, cache_read_tokens=1200, cache_write_tokens=600)
    price = Price(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
    # 100 fresh at 3, 600 read at 0.3, 300 written at 3.75, 100 out at 15 (per million).
    assert price.of(one) == pytest.approx((100 * 3 + 600 * 0.3 + 300 * 3.75 + 100 * 15) / 1e6)
    # Without cache prices every input token costs the input rate.
    assert Price(3.0, 15.0).of(one) == pytest.approx((1000 * 3 + 100 * 15) / 1e6)


async def test_the_console_trace_shows_cache_reads_and_writes(anyio_backend):
    import io

    from agentgraph import GraphRunner
    from agentgraph.llm import ChatResponse
    from agentgraph.nodes import chat
    from agentgraph.testing import ScriptedModel
    from agentgraph.tracing import ConsoleSink

    usage = Usage(4512, 4, 1, cache_read_tokens=3000, cache_write_tokens=1500)
    model = ScriptedModel(ChatResponse(Message.assistant("ok"), usage=usage))
    out = io.StringIO()
    await GraphRunner(sinks=[ConsoleSink(out, style="plain")]).run(chat(model), AgentContext("hi"))
    assert "4512→4 tokens (3000 cached, 1500 to cache)" in out.getvalue()


async def test_json_lines_and_html_traces_carry_the_cache_counts(anyio_backend, tmp_path):
    from agentgraph import GraphRunner
    from agentgraph.llm import ChatResponse
    from agentgraph.nodes import chat
    from agentgraph.testing import ScriptedModel
    from agentgraph.tracing import JsonlSink, TraceRecorder, load_trace, trace_to_html

    usage = Usage(4512, 4, 1, cache_read_tokens=3000, cache_write_tokens=1500)
    model = ScriptedModel(ChatResponse(Message.assistant("ok"), usage=usage))
    recorder, path = TraceRecorder(), tmp_path / "run.jsonl"
    with JsonlSink(path) as sink:
        await GraphRunner(sinks=[sink, recorder]).run(chat(model), AgentContext("hi"))
    used = load_trace(path).usage
    assert used["cache_read_tokens"] == 3000 and used["cache_write_tokens"] == 1500
    assert "4512→4 tokens (3000 cached, 1500 to cache)" in trace_to_html(recorder.trace())
