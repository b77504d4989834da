"""OpenAI Responses API over its real wire format (httpx MockTransport handlers)."""

from __future__ import annotations

import orjson
import pytest

from agentgraph import (
    BadRequestError,
    ProviderConnectionError,
    RateLimitError,
    ResponseFormatError,
    ServerError,
    UnsupportedSetting,
)
from agentgraph.checkpoint._codec import decode_message, encode_message
from agentgraph.llm import (
    Capabilities,
    ChatModel,
    ChatRequest,
    Message,
    OpenAIResponsesModel,
    OutputSchema,
    ReasoningDelta,
    ResponseDone,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolSpec,
    Usage,
)

from .support import Server, Sleeps, collect, json_response, retry, sse, stream_response

pytestmark = pytest.mark.anyio

KEY = "sk-proj-TESTKEY0123456789abcdef"
CLOSED = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER = ToolSpec("get_weather", "Weather for a city", CLOSED)
OPEN = ToolSpec("search", "", {"type": "object", "properties": {"q": {"type": "string"}}})
ENCRYPTED = "gAAAAABo-encrypted"
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "Check the weather."}],
    "encrypted_content": ENCRYPTED,
}
CALL = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "get_weather",
    "arguments": '{"city":"Paris"}',
    "status": "completed",
}
USAGE = {
    "input_tokens": 20,
    "input_tokens_details": {"cached_tokens": 4},
    "output_tokens": 30,
    "output_tokens_details": {"reasoning_tokens": 12},
    "total_tokens": 50,
}


def model(server: Server, name: str = "gpt-5-mini", **kwargs) -> OpenAIResponsesModel:
    kwargs.setdefault("retry", retry(Sleeps()))
    return OpenAIResponsesModel(name, api_key=KEY, http_client=server.client(), **kwargs)


def message_item(text: str) -> dict:
    return {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def response(*items: dict, status: str = "completed", **extra) -> dict:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "model": "gpt-5-mini-2025-08-07",
        "output": list(items),
        "usage": USAGE,
        **extra,
    }


def events(*events: dict) -> list[bytes]:
    return sse(*((e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)))


async def test_is_a_chat_model():
    assert isinstance(model(Server()), ChatModel)


async def test_body_with_tools_reasoning_and_instructions():
    server = Server(json_response(response(message_item("ok"))))
    request = ChatRequest(
        [Message.system("Be brief."), Message.user("weather?"), Message.system("Summary: none.")],
        tools=[WEATHER, OPEN],
        tool_choice="get_weather",
        think="high",
        temperature=0.2,
        max_output=500,
    )
    await model(server).request(request)
    body = server.body()
    assert server.requests[0].url.path == "/v1/responses"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert body == {
        "model": "gpt-5-mini",
        "input": [{"type": "message", "role": "user", "content": "weather?"}],
        "store": False,
        "instructions": "Be brief.\n\nSummary: none.",
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "parameters": CLOSED,
                "strict": True,
                "description": "Weather for a city",
            },
            {"type": "function", "name": "search", "parameters": OPEN.parameters, "strict": False},
        ],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "max_output_tokens": 500,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "high"},
    }


async def test_non_reasoning_model_gets_temperature_and_no_reasoning():
    server = Server(json_response(response(message_item("ok"))))
    output = OutputSchema("answer", CLOSED, "The answer.")
    await model(server, "gpt-4o-mini").request(
        ChatRequest([Message.user("hi")], temperature=0.3, think=False, output=output)
    )
    body = server.body()
    assert body["temperature"] == 0.3
    assert "reasoning" not in body and "include" not in body
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "name": "answer",
            "schema": CLOSED,
            "strict": True,
            "description": "The answer.",
        }
    }


async def test_think_on_a_model_that_cannot_reason_follows_the_policy():
    strict = model(Server(), "gpt-4o", capabilities=Capabilities(on_unsupported="fail"))
    with pytest.raises(UnsupportedSetting):
        strict.build_body(ChatRequest([Message.user("hi")], think=True))


@pytest.mark.parametrize(
    ("name", "effort"),
    [("gpt-5-mini", "minimal"), ("gpt-5.1", "none"), ("o4-mini", "low"), ("gpt-oss-120b", "low")],
)
async def test_think_false_asks_the_least_effort_the_model_takes(name, effort):
    body = model(Server(), name).build_body(ChatRequest([Message.user("hi")], think=False))
    assert body["reasoning"] == {"effort": effort}


async def test_answer_with_reasoning_and_call_keeps_the_items_to_send_back():
    server = Server(json_response(response(REASONING, CALL)))
    answer = await model(server).request(ChatRequest([Message.user("weather?")], tools=[WEATHER]))
    message = answer.message
    assert message.tool_calls == (ToolCall("call_1", "get_weather", {"city": "Paris"}),)
    assert message.reasoning == "Check the weather."
    assert answer.finish_reason == "tool_calls" and answer.id == "resp_1"
    assert answer.model == "gpt-5-mini-2025-08-07"
    assert answer.usage == Usage(20, 30, 1, reasoning_tokens=12, cache_read_tokens=4)
    assert message.provider_data["openai.reasoning"] == (
        REASONING | {"summary": REASONING["summary"]},
    )
    # A checkpoint keeps them.
    stored = decode_message(orjson.loads(orjson.dumps(encode_message(message, "m"))))
    assert stored == message

    history = [Message.user("weather?"), stored, Message.tool("call_1", "Sunny")]
    body = model(Server()).build_body(ChatRequest(history, tools=[WEATHER]))
    assert body["input"] == [
        {"type": "message", "role": "user", "content": "weather?"},
        {k: v for k, v in REASONING.items()},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris"}',
            "id": "fc_1",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
    ]


async def test_history_from_another_provider_is_sent_without_item_ids():
    history = [
        Message.user("hi"),
        Message.assistant("\n\n", tool_calls=(ToolCall("c1", "search", {"q": "x"}),)),
        Message.tool("c1", "found"),
        Message.assistant("Done."),
    ]
    body = model(Server()).build_body(ChatRequest(history))
    assert body["input"][1:] == [
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {"type": "message", "role": "assistant", "content": "Done."},
    ]


async def test_tool_message_without_its_call_id_is_refused_before_sending():
    server = Server()
    with pytest.raises(BadRequestError, match="tool_call_id"):
        await model(server).request(ChatRequest([Message("tool", "x")]))
    assert server.requests == []


@pytest.mark.parametrize(
    ("extra", "finish"),
    [
        ({"incomplete_details": {"reason": "max_output_tokens"}}, "length"),
        ({"incomplete_details": {"reason": "content_filter"}}, "content_filter"),
    ],
)
async def test_incomplete_answers(extra, finish):
    server = Server(json_response(response(message_item("Half"), status="incomplete", **extra)))
    answer = await model(server).request(ChatRequest([Message.user("hi")]))
    assert (answer.message.content, answer.finish_reason) == ("Half", finish)


async def test_refusal_is_the_text_with_content_filter():
    refusal = {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    answer = await model(Server(json_response(response(refusal)))).request(
        ChatRequest([Message.user("hi")])
    )
    assert answer.message.content == "I can't help with that."
    assert answer.finish_reason == "content_filter"


async def test_failed_response_and_malformed_output():
    failed = response(status="failed", error={"code": "server_error", "message": "boom"})
    with pytest.raises(ServerError, match="boom") as info:
        await model(Server(json_response(failed))).request(ChatRequest([Message.user("hi")]))
    assert info.value.retryable
    with pytest.raises(ResponseFormatError):
        await model(Server(json_response({"id": "r"}))).request(ChatRequest([Message.user("hi")]))
    nameless = response({**CALL, "name": ""})
    with pytest.raises(ResponseFormatError, match="no name"):
        await model(Server(json_response(nameless))).request(ChatRequest([Message.user("hi")]))


async def test_rate_limit_is_retried_after_the_servers_delay():
    limited = json_response(
        {"error": {"message": "Rate limit reached", "type": "requests", "code": None}},
        status=429,
        headers={"retry-after-ms": "1500"},
    )
    sleeps = Sleeps()
    server = Server(limited, json_response(response(message_item("ok"))))
    answer = await model(server, retry=retry(sleeps, retry_after_jitter=0.0)).request(
        ChatRequest([Message.user("hi")])
    )
    assert answer.message.content == "ok" and sleeps.calls == [1.5]


async def test_stream_of_reasoning_text_and_calls():
    opening = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather"}
    final = response(REASONING, message_item("Let me check."), CALL)
    server = Server(
        stream_response(
            events(
                {"type": "response.created", "response": response(status="in_progress")},
                {"type": "response.output_item.added", "output_index": 0, "item": REASONING},
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": "rs_1",
                    "output_index": 0,
                    "summary_index": 0,
                    "delta": "Check the weather.",
                },
                {"type": "response.output_item.done", "output_index": 0, "item": REASONING},
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_1",
                    "output_index": 1,
                    "content_index": 0,
                    "delta": "Let me check.",
                    "logprobs": [],
                },
                {
                    "type": "response.output_item.added",
                    "output_index": 2,
                    "item": {**opening, "arguments": "", "status": "in_progress"},
                },
                *(
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": "fc_1",
                        "output_index": 2,
                        "delta": piece,
                    }
                    for piece in ('{"ci', 'ty":"Paris"}')
                ),
                {"type": "response.output_item.done", "output_index": 2, "item": CALL},
                {"type": "response.completed", "response": final},
            )
        )
    )
    seen = await collect(model(server), ChatRequest([Message.user("hi")], tools=[WEATHER]))
    assert server.body()["stream"] is True
    assert seen[:-1] == [
        ReasoningDelta("Check the weather."),
        TextDelta("Let me check."),
        ToolCallDelta(0, "call_1", "get_weather"),
        ToolCallDelta(0, arguments='{"ci'),
        ToolCallDelta(0, arguments='ty":"Paris"}'),
    ]
    done = seen[-1]
    assert isinstance(done, ResponseDone)
    assert done.response.message.tool_calls == (
        ToolCall("call_1", "get_weather", {"city": "Paris"}),
    )
    assert done.response.message.provider_data["openai.call_items"] == {"call_1": "fc_1"}
    assert done.response.usage.reasoning_tokens == 12


async def test_stream_whose_completed_event_lists_no_output_uses_the_done_items():
    server = Server(
        stream_response(
            events(
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": message_item("Hi"),
                },
                {"type": "response.completed", "response": response()},
            )
        )
    )
    seen = await collect(model(server), ChatRequest([Message.user("hi")]))
    assert seen[-1].response.message.content == "Hi"


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}, RateLimitError),
        ({"type": "error", "code": "server_error", "message": "oops"}, ServerError),
        (
            {
                "type": "response.failed",
                "response": response(
                    status="failed", error={"code": "invalid_prompt", "message": "bad prompt"}
                ),
            },
            BadRequestError,
        ),
    ],
)
async def test_errors_inside_a_stream(event, error):
    server = Server(stream_response(events(event)))
    with pytest.raises(error):
        await collect(model(server), ChatRequest([Message.user("hi")]))


async def test_stream_cut_before_completion_is_a_connection_error():
    delta = {
        "type": "response.output_text.delta",
        "item_id": "msg_1",
        "output_index": 0,
        "content_index": 0,
        "delta": "Hel",
    }
    server = Server(stream_response(events(delta)))
    with pytest.raises(ProviderConnectionError, match=r"response\.completed") as info:
        await collect(model(server), ChatRequest([Message.user("hi")]))
    assert not info.value.retryable  # part of the answer already reached the caller


async def test_arguments_before_their_item_are_a_format_error():
    stray = {
        "type": "response.function_call_arguments.delta",
        "item_id": "fc_9",
        "output_index": 3,
        "delta": "{}",
    }
    with pytest.raises(ResponseFormatError, match="before their item"):
        await collect(
            model(Server(stream_response(events(stray)))), ChatRequest([Message.user("hi")])
        )


async def test_a_model_that_does_not_reason_is_sent_the_answers_alone():
    kept = {"openai.reasoning": (REASONING,), "openai.call_items": {"call_1": "fc_1"}}
    call = ToolCall("call_1", "get_weather", {"city": "Paris"})
    history = [
        Message.user("weather?"),
        Message("assistant", "", (call,), provider_data=kept),
        Message.tool("call_1", "Sunny"),
    ]
    body = model(Server(), "gpt-4o").build_body(ChatRequest(history))
    assert [item["type"] for item in body["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    assert "id" not in body["input"][1]


async def test_streamed_reasoning_parts_and_an_incomplete_end_match_the_final_message():
    two = {**REASONING, "summary": [{"type": "summary_text", "text": t} for t in ("A.", "B.")]}
    where = {"item_id": "rs_1", "output_index": 0}
    server = Server(
        stream_response(
            events(
                *(
                    event
                    for n, text in enumerate(("A.", "B."))
                    for event in (
                        {
                            "type": "response.reasoning_summary_part.added",
                            **where,
                            "summary_index": n,
                        },
                        {
                            "type": "response.reasoning_summary_text.delta",
                            **where,
                            "summary_index": n,
                            "delta": text,
                        },
                    )
                ),
                {
                    "type": "response.incomplete",
                    "response": response(
                        two,
                        message_item("Cut"),
                        status="incomplete",
                        incomplete_details={"reason": "max_output_tokens"},
                    ),
                },
            )
        )
    )
    seen = await collect(model(server), ChatRequest([Message.user("hi")]))
    streamed = "".join(e.text for e in seen if isinstance(e, ReasoningDelta))
    done = seen[-1].response
    assert streamed == done.message.reasoning == "A.\n\nB."
    assert (done.message.content, done.finish_reason) == ("Cut", "length")


async def test_images_and_documents_are_input_parts_of_the_user_turn():
    import base64

    from agentgraph.llm import Document, Image

    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
    )
    pdf = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
    server = Server(json_response(response(message_item("ok"))))
    asked = Message.user(
        "Compare these.",
        Image.from_bytes(png),
        Image.from_url("https://images.test/cat.png"),
        Document.from_bytes(pdf, name="report.pdf"),
    )
    await model(server).request(ChatRequest([asked]))
    assert server.body()["input"] == [
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Compare these."},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64," + base64.b64encode(png).decode(),
                    "detail": "auto",
                },
                {
                    "type": "input_image",
                    "image_url": "https://images.test/cat.png",
                    "detail": "auto",
                },
                {
                    "type": "input_file",
                    "filename": "report.pdf",
                    "file_data": "data:application/pdf;base64," + base64.b64encode(pdf).decode(),
                },
            ],
        }
    ]


async def test_media_the_capabilities_refuse_is_refused_before_sending():
    from agentgraph import UnsupportedSetting
    from agentgraph.llm import Capabilities, Image

    server = Server(json_response(response(message_item("ok"))))
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
        "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
    )
    text_only = model(server, capabilities=Capabilities(images=False))
    with pytest.raises(UnsupportedSetting, match="image"):
        await text_only.request(ChatRequest([Message.user("what is it?", Image.from_bytes(png))]))
    assert server.requests == []
