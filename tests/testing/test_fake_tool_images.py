"""Images in tool results against the fake server: each client's shape is taken, the rest refused.

A tool returns an image; a react agent sends it back to each provider the way
that provider takes it, and the fake (which checks what the service checks)
accepts the request and decodes the image back out of it.
"""

from __future__ import annotations

import base64

import anthropic
import httpx
import openai
import pytest

from agentgraph import AgentContext, GraphRunner, NodeFailed, UnsupportedSetting
from agentgraph.llm import (
    AnthropicModel,
    GigaChatModel,
    Image,
    Message,
    OllamaModel,
    OpenAIModel,
    OpenAIResponsesModel,
    ProviderRetry,
)
from agentgraph.nodes import react_agent
from agentgraph.testing import FakeServer, ScriptedModel
from agentgraph.tools import tool

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
B64_PNG = base64.b64encode(PNG).decode()
NO_RETRY = ProviderRetry(max_retries=0)
BASIC = base64.b64encode(b"client:secret").decode()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool
def chart(city: str) -> list[object]:
    """Draw the weather chart of a city."""
    return [f"The chart for {city}:", Image.from_bytes(PNG)]


def make(provider: str, server: FakeServer):
    if provider == "openai":
        return OpenAIModel("gpt-4o", api_key="sk-test", base_url=server.openai_url, retry=NO_RETRY)
    if provider == "openai-responses":
        return OpenAIResponsesModel(
            "gpt-4o", api_key="sk-test", base_url=server.openai_url, retry=NO_RETRY
        )
    if provider == "anthropic":
        return AnthropicModel(
            "claude-sonnet-4-5", api_key="sk-ant", base_url=server.url, retry=NO_RETRY
        )
    if provider == "ollama":
        return OllamaModel("llava", base_url=server.url, retry=NO_RETRY)
    return GigaChatModel(
        "GigaChat-Max",
        credentials=BASIC,
        base_url=server.gigachat_url,
        auth_url=server.gigachat_auth_url,
        retry=NO_RETRY,
    )


def chat_bodies(server: FakeServer) -> list:
    return [r for r in server.requests if r.endpoint == "chat"]


async def run_agent(provider: str, server: FakeServer) -> AgentContext[str]:
    server.add(ScriptedModel.tool_call("chart", city="Paris"), "Sunny all week.")
    model = make(provider, server)
    try:
        return await GraphRunner().run(react_agent(model, [chart]), AgentContext("Paris?"))
    finally:
        await model.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("provider", ["openai-responses", "anthropic", "ollama"])
async def test_the_image_goes_back_inside_the_tool_result(server, provider):
    out = await run_agent(provider, server)
    assert out.input == "Sunny all week."
    result = out.history[2]
    assert result.parts == ("The chart for Paris:", Image.from_bytes(PNG))
    _, second = chat_bodies(server)
    # The fake took the request and reads the same tool result out of it.
    [sent] = [m for m in second.chat_request().messages if m.role == "tool"]
    assert sent.media == (Image.from_bytes(PNG),)
    assert sent.content == "The chart for Paris:"


@pytest.mark.anyio
async def test_openai_chat_sends_the_image_in_a_user_message_after_the_tool_message(server):
    out = await run_agent("openai", server)
    assert out.input == "Sunny all week."
    call_id = out.history[1].tool_calls[0].id
    _, second = chat_bodies(server)
    assert second.body["messages"][2:] == [
        {"role": "tool", "tool_call_id": call_id, "content": "The chart for Paris:"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"Images returned by tool 'chart' (call {call_id}):"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
            ],
        },
    ]
    decoded = second.chat_request().messages
    assert decoded[-1].media == (Image.from_bytes(PNG),)


@pytest.mark.anyio
async def test_gigachat_refuses_an_image_in_a_tool_result_before_sending_it(server):
    with pytest.raises(NodeFailed) as caught:
        await run_agent("gigachat", server)
    refusal = caught.value.__cause__
    assert isinstance(refusal, UnsupportedSetting)
    assert "images in tool results" in str(refusal)
    assert len(chat_bodies(server)) == 1  # the first turn only


# -- the fake refuses the shapes the services refuse ------------------------------------


def openai_history(result: dict) -> list:
    call = {"id": "c1", "type": "function", "function": {"name": "chart", "arguments": "{}"}}
    return [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", **result},
    ]


IMAGE_URL = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}}


@pytest.mark.anyio
async def test_fake_openai_takes_text_parts_only_in_a_tool_message(server):
    server.add("ok")
    async with openai.AsyncOpenAI(
        base_url=server.openai_url, api_key="sk-test", max_retries=0
    ) as sdk:
        text = [{"type": "text", "text": "a chart"}]
        await sdk.chat.completions.create(
            model="gpt-4o", messages=openai_history({"content": text})
        )
        with pytest.raises(openai.BadRequestError, match="Supported values are: 'text'"):
            await sdk.chat.completions.create(
                model="gpt-4o", messages=openai_history({"content": [IMAGE_URL]})
            )
        # A user message between the call and its result breaks the pairing.
        broken = openai_history({"content": "a chart"})
        broken.insert(2, {"role": "user", "content": [IMAGE_URL]})
        with pytest.raises(openai.BadRequestError, match="did not have response messages"):
            await sdk.chat.completions.create(model="gpt-4o", messages=broken)


def responses_input(output: object) -> list:
    return [
        {"type": "message", "role": "user", "content": "Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "chart", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": output},
    ]


@pytest.mark.anyio
async def test_fake_responses_takes_input_parts_in_a_function_output(server):
    server.add("ok")
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{B64_PNG}"}
    async with openai.AsyncOpenAI(
        base_url=server.openai_url, api_key="sk-test", max_retries=0
    ) as sdk:
        taken = [{"type": "input_text", "text": "a chart"}, {**image, "detail": "auto"}]
        await sdk.responses.create(model="gpt-4o", input=responses_input(taken))
        refused = [
            ([{"type": "output_text", "text": "a chart"}], "Supported values"),
            ([image], "detail"),  # the fake, like the service, wants the detail named
            ([{**image, "image_url": f"data:image/jpeg;base64,{B64_PNG}", "detail": "low"}], "im"),
            ({"text": "a chart"}, "expected one of a string or an array"),
        ]
        for output, words in refused:
            with pytest.raises(openai.BadRequestError, match=words):
                await sdk.responses.create(model="gpt-4o", input=responses_input(output))


def anthropic_history(content: list) -> list:
    return [
        {"role": "user", "content": "Paris?"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "chart", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": content}],
        },
    ]


def image_block(media_type: str = "image/png", data: str = B64_PNG) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


@pytest.mark.anyio
async def test_fake_anthropic_checks_the_blocks_inside_a_tool_result(server):
    server.add("ok")
    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        taken = [{"type": "text", "text": "a chart"}, image_block()]
        await sdk.messages.create(model="claude", max_tokens=10, messages=anthropic_history(taken))
        refused = [
            ([image_block("image/jpeg")], "does not match the provided media type"),
            ([image_block(data="not base64!")], "Invalid base64"),
            ([{"type": "tool_use", "id": "x", "name": "n", "input": {}}], "does not match any"),
            ([{"type": "text", "text": " "}], "non-whitespace"),
        ]
        for content, words in refused:
            with pytest.raises(anthropic.BadRequestError, match=words):
                await sdk.messages.create(
                    model="claude", max_tokens=10, messages=anthropic_history(content)
                )


@pytest.mark.anyio
async def test_fake_ollama_takes_images_on_a_tool_message_and_checks_them(server):
    server.add("ok")
    call = {"function": {"name": "chart", "arguments": {}}}
    history = [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_name": "chart", "content": "a chart", "images": [B64_PNG]},
    ]
    async with httpx.AsyncClient() as client:
        body = {"model": "llava", "stream": False, "messages": history}
        taken = await client.post(f"{server.url}/api/chat", json=body)
        history[2]["images"] = [f"data:image/png;base64,{B64_PNG}"]
        refused = await client.post(f"{server.url}/api/chat", json=body)
    assert taken.status_code == 200
    [tool_message] = [m for m in chat_bodies(server)[0].chat_request().messages if m.role == "tool"]
    assert tool_message.parts == ("a chart", Image.from_bytes(PNG))
    assert refused.status_code == 400 and "base64" in refused.json()["error"]


@pytest.mark.anyio
async def test_fake_gigachat_takes_only_text_as_a_function_result(server):
    server.add("ok")
    model = make("gigachat", server)
    token = await model._access_token(stale=None)
    await model.aclose()
    history = [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": "", "function_call": {"name": "chart", "arguments": {}}},
        {"role": "function", "name": "chart", "content": [{"type": "text", "text": "{}"}]},
    ]
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.gigachat_url}/chat/completions",
            headers={"authorization": f"Bearer {token}"},
            json={"model": "GigaChat", "messages": history},
        )
    assert response.status_code == 422
    assert "str type expected" in response.json()["message"]


def test_a_tool_message_decodes_to_what_was_sent():
    # The neutral message the fakes rebuild equals the one a tool gave.
    message = Message.tool("c1", "a chart", Image.from_bytes(PNG), name="chart")
    assert message.content == "a chart" and message.media == (Image.from_bytes(PNG),)
