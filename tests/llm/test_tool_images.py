"""Images in tool results: the message, and the request each provider is sent for it."""

from __future__ import annotations

import pytest

from agentgraph import UnsupportedSetting
from agentgraph.llm import (
    ChatRequest,
    Document,
    Image,
    Message,
    OpenAIModel,
    OpenAIResponsesModel,
    ToolCall,
)

from .media import (
    B64_PNG,
    PNG,
    anthropic_served,
    gigachat_unserved,
    ollama_served,
    openai_completion,
)
from .support import Server, Sleeps, json_response, retry
from .test_responses import message_item, response

pytestmark = pytest.mark.anyio

DATA_URL = f"data:image/png;base64,{B64_PNG}"
URL = "https://images.test/chart.png"
IMAGE = Image.from_bytes(PNG)


def history() -> list[Message]:
    """A turn with two calls: a chart (text and image) and a plain lookup."""
    calls = (ToolCall("c1", "chart", {"city": "Paris"}), ToolCall("c2", "temp", {}))
    return [
        Message.user("Paris?"),
        Message.assistant(tool_calls=calls),
        Message.tool("c1", "The chart:", IMAGE, name="chart"),
        Message.tool("c2", "21C", name="temp"),
    ]


# -- the message ------------------------------------------------------------------------


def test_a_tool_message_keeps_text_and_images_in_order():
    message = Message.tool("c1", "before", IMAGE, "after", name="chart")
    assert message.content == "before\n\nafter"
    assert message.parts == ("before", IMAGE, "after")
    assert message.media == (IMAGE,)
    assert Message.tool("c1", "plain") == Message("tool", "plain", tool_call_id="c1")
    assert Message.tool("c1", "a", "b").parts == ()  # text only stays text
    only = Message.tool("c1", IMAGE)
    assert (only.content, only.parts) == ("", (IMAGE,))


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (
            Message("tool", "", tool_call_id="c", parts=(Document.from_bytes(b"%PDF-1.4"),)),
            "not documents",
        ),
        (Message("system", "", parts=(IMAGE,)), "only user and tool messages"),
        (Message("tool", "other", tool_call_id="c", parts=("text", IMAGE)), "text of its parts"),
    ],
)
async def test_tool_parts_that_no_provider_takes_are_refused(message, words, anyio_backend):
    with pytest.raises(ValueError, match=words):
        OpenAIModel("gpt-4o", api_key="sk-test").build_body(ChatRequest([message]))


# -- each provider's request ------------------------------------------------------------


async def test_openai_chat_sends_tool_images_in_a_user_message_after_the_results(anyio_backend):
    server = Server(json_response(openai_completion()))
    model = OpenAIModel(
        "gpt-4o", api_key="sk-test", http_client=server.client(), retry=retry(Sleeps())
    )
    await model.request(ChatRequest(history()))
    assert server.body()["messages"][2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "The chart:"},
        {"role": "tool", "tool_call_id": "c2", "content": "21C"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by tool 'chart' (call c1):"},
                {"type": "image_url", "image_url": {"url": DATA_URL}},
            ],
        },
    ]


def test_openai_chat_says_where_an_image_only_result_went():
    calls = (ToolCall("c1", "snap", {}),)
    messages = [
        Message.user("?"),
        Message.assistant(tool_calls=calls),
        Message.tool("c1", IMAGE, Image.from_url(URL)),
        Message.user("And now?"),
    ]
    body = OpenAIModel("gpt-4o", api_key="sk-test").build_body(ChatRequest(messages))
    assert body["messages"][2:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": "[the result is 2 images, in the user message that follows]",
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Images returned by the tool (call c1):"},
                {"type": "image_url", "image_url": {"url": DATA_URL}},
                {"type": "image_url", "image_url": {"url": URL}},
            ],
        },
        {"role": "user", "content": "And now?"},
    ]


def test_openai_chat_refuses_tool_images_for_a_text_model():
    model = OpenAIModel("gpt-3.5-turbo", api_key="sk-test")
    with pytest.raises(UnsupportedSetting, match="does not support images"):
        model.build_body(ChatRequest(history()))


async def test_responses_sends_a_function_output_of_input_parts(anyio_backend):
    server = Server(json_response(response(message_item("ok"))))
    model = OpenAIResponsesModel(
        "gpt-4o", api_key="sk-test", http_client=server.client(), retry=retry(Sleeps())
    )
    await model.request(ChatRequest(history()))
    outputs = [i for i in server.body()["input"] if i["type"] == "function_call_output"]
    assert outputs == [
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [
                {"type": "input_text", "text": "The chart:"},
                {"type": "input_image", "image_url": DATA_URL, "detail": "auto"},
            ],
        },
        {"type": "function_call_output", "call_id": "c2", "output": "21C"},
    ]


async def test_anthropic_sends_image_blocks_inside_the_tool_result(anyio_backend):
    server, model = anthropic_served()
    messages = [*history()[:2], Message.tool("c1", "The chart:", Image.from_url(URL), IMAGE)]
    messages.append(Message.tool("c2", "21C", is_error=True))
    await model.request(ChatRequest(messages))
    assert server.body()["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [
                    {"type": "text", "text": "The chart:"},
                    {"type": "image", "source": {"type": "url", "url": URL}},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
                    },
                ],
            },
            {"type": "tool_result", "tool_use_id": "c2", "content": "21C", "is_error": True},
        ],
    }


async def test_ollama_sends_the_images_on_the_tool_message(anyio_backend):
    server, model = ollama_served("sunny")
    await model.request(ChatRequest(history()))
    assert server.body()["messages"][2] == {
        "role": "tool",
        "content": "The chart:",
        "images": [B64_PNG],
        "tool_name": "chart",
        "tool_call_id": "c1",
    }
    by_url = [*history()[:2], Message.tool("c1", Image.from_url(URL)), history()[3]]
    with pytest.raises(UnsupportedSetting, match="images by URL"):
        model.build_body(ChatRequest(by_url))


async def test_gigachat_refuses_tool_images_before_signing_in(anyio_backend):
    server, model = gigachat_unserved()
    with pytest.raises(
        UnsupportedSetting, match=r"images in tool results.*MCPTools\(images=False\)"
    ):
        await model.request(ChatRequest(history()[:3]))
    assert server.requests == []
