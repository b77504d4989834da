"""Images, documents and cache breakpoints against the fake server, from our clients and the SDKs.

The fake server takes what the services take and refuses the rest; the
official SDKs send the same shapes our clients send and the fake accepts them.
"""

import base64
import itertools

import anthropic
import httpx
import ollama
import openai
import pytest

from agentgraph.llm import (
    AnthropicModel,
    Capabilities,
    ChatRequest,
    Document,
    Image,
    Message,
    OllamaModel,
    OpenAIModel,
    ProviderRetry,
    ToolSpec,
)
from agentgraph.testing import FakeServer

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d4944415478da63f8cfc0f01f0005000201a5f5a1e20000000049454e44ae426082"
)
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()
URL = "https://images.test/cat.png"
NO_RETRY = ProviderRetry(max_retries=0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chat_bodies(server: FakeServer) -> list:
    return [r for r in server.requests if r.endpoint == "chat"]


# -- our clients: the fake takes the parts and decodes them back ------------------------


@pytest.mark.anyio
async def test_openai_client_parts_reach_the_fake_unchanged(server):
    server.add("a cat and a report")
    model = OpenAIModel(
        "gpt-4o",
        api_key="sk-test",
        base_url=server.openai_url,
        retry=NO_RETRY,
        capabilities=Capabilities(documents=True),  # the fake is not OpenAI's own address
    )
    sent = Message.user(
        "What are these?", Image.from_bytes(PNG), Image.from_url(URL), Document.from_bytes(PDF)
    )
    response = await model.request(ChatRequest([sent]))
    await model.aclose()
    assert response.message.content == "a cat and a report"
    (recorded,) = chat_bodies(server)
    assert recorded.chat_request().messages == (sent,)


@pytest.mark.anyio
async def test_anthropic_client_parts_and_breakpoints_reach_the_fake(server):
    server.add("ok", "ok again")
    model = AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-ant", base_url=server.url, retry=NO_RETRY, cache=True
    )
    sent = Message.user("What are these?", Image.from_bytes(PNG), Document.from_bytes(PDF))
    tools = (ToolSpec("search", "Search"),)
    await model.request(ChatRequest([Message.system("Be terse."), sent], tools=tools))
    history = [Message.system("Be terse."), sent, Message.assistant("ok"), Message.user("and?")]
    await model.request(ChatRequest(history, tools=tools))
    await model.aclose()
    first, second = chat_bodies(server)
    assert first.chat_request().messages[1] == sent
    assert second.body["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}


@pytest.mark.anyio
async def test_ollama_client_images_reach_the_fake(server):
    server.add("a pixel")
    model = OllamaModel("llava", base_url=server.url, retry=NO_RETRY)
    sent = Message.user("What is it?", Image.from_bytes(PNG))
    await model.request(ChatRequest([sent]))
    await model.aclose()
    (recorded,) = chat_bodies(server)
    assert recorded.body["messages"][0]["images"] == [B64_PNG]
    assert recorded.chat_request().messages == (sent,)


# -- the fake refuses what the services refuse -----------------------------------------


def user(*content) -> list:
    return [{"role": "user", "content": list(content)}]


OPENAI_REFUSED = [
    ({"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{B64_PNG}"}}, "image"),
    ({"type": "image_url", "image_url": {"url": "ftp://x/y.png"}}, "Invalid image URL"),
    ({"type": "file", "file": {"file_data": f"data:application/pdf;base64,{B64_PDF}"}}, "filename"),
    (
        {
            "type": "file",
            "file": {"filename": "a.pdf", "file_data": f"data:text/plain;base64,{B64_PDF}"},
        },
        "PDF",
    ),
    ({"type": "video", "video": {}}, "Supported values"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("part", "words"), OPENAI_REFUSED)
async def test_fake_openai_refuses_bad_parts(server, part, words):
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.openai_url}/chat/completions",
            headers={"authorization": "Bearer sk-test"},
            json={"model": "gpt-4o", "messages": user({"type": "text", "text": "?"}, part)},
        )
    assert response.status_code == 400
    assert words in response.json()["error"]["message"]


@pytest.mark.anyio
async def test_fake_openai_refuses_an_image_in_a_system_message(server):
    image = {"type": "image_url", "image_url": {"url": URL}}
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.openai_url}/chat/completions",
            headers={"authorization": "Bearer sk-test"},
            json={"model": "gpt-4o", "messages": [{"role": "system", "content": [image]}]},
        )
    assert response.status_code == 400


def image_block(media_type: str = "image/png", data: str = B64_PNG) -> dict:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


ANTHROPIC_REFUSED = [
    (user(image_block("image/jpeg")), "does not match the provided media type"),
    (user(image_block("image/bmp")), "media_type"),
    (user(image_block(data="not base64!")), "Invalid base64"),
    (
        user(
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PNG},
            }
        ),
        "PDF specified was not valid",
    ),
    (
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [image_block()]}],
        "only allowed in user messages",
    ),
    (
        user(
            *(
                {"type": "text", "text": f"t{i}", "cache_control": {"type": "ephemeral"}}
                for i in range(5)
            )
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    (
        user({"type": "text", "text": "t", "cache_control": {"type": "ephemeral", "ttl": "2h"}}),
        "ttl",
    ),
    (user({"type": "text", "text": "t", "cache_control": {"type": "persistent"}}), "ephemeral"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("messages", "words"), ANTHROPIC_REFUSED)
async def test_fake_anthropic_refuses_bad_blocks_and_breakpoints(server, messages, words):
    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        with pytest.raises(anthropic.BadRequestError, match=words):
            await sdk.messages.create(model="claude", max_tokens=10, messages=messages)


@pytest.mark.anyio
async def test_fake_ollama_refuses_images_that_are_not_base64(server):
    model = OllamaModel("llava", base_url=server.url, retry=NO_RETRY)
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{server.url}/api/chat",
            json={
                "model": "llava",
                "stream": False,
                "messages": [
                    {"role": "user", "content": "?", "images": [f"data:image/png;base64,{B64_PNG}"]}
                ],
            },
        )
    await model.aclose()
    assert response.status_code == 400
    assert "base64" in response.json()["error"]


# -- the official SDKs send the same shapes, and the fake takes them --------------------


@pytest.mark.anyio
async def test_openai_sdk_image_and_file_parts_are_accepted_and_match_ours(server):
    server.add("ok")
    parts = [
        {"type": "text", "text": "What are these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
        {
            "type": "file",
            "file": {
                "filename": "document.pdf",
                "file_data": f"data:application/pdf;base64,{B64_PDF}",
            },
        },
    ]
    async with openai.AsyncOpenAI(
        base_url=server.openai_url, api_key="sk-test", max_retries=0
    ) as sdk:
        completion = await sdk.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": parts}]
        )
    assert completion.choices[0].message.content == "ok"
    ours = OpenAIModel("gpt-4o", api_key="sk-test").build_body(
        ChatRequest(
            [Message.user("What are these?", Image.from_bytes(PNG), Document.from_bytes(PDF))]
        )
    )
    assert chat_bodies(server)[0].body["messages"] == ours["messages"]


@pytest.mark.anyio
async def test_anthropic_sdk_blocks_with_breakpoints_are_accepted_and_match_ours(server):
    server.add("ok")
    model = AnthropicModel("claude-sonnet-4-5", api_key="sk-ant", cache=True)
    ours = model.build_body(
        ChatRequest(
            [
                Message.system("Be terse."),
                Message.user("What?", Image.from_bytes(PNG), Document.from_bytes(PDF)),
            ],
            tools=(ToolSpec("search", "Search"),),
        )
    )
    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        message = await sdk.messages.create(
            model="claude",
            max_tokens=ours["max_tokens"],
            system=[{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}],
            tools=[
                {
                    "name": "search",
                    "description": "Search",
                    "input_schema": {"type": "object", "properties": {}},
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What?"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": B64_PNG,
                            },
                        },
                        {
                            "type": "document",
                            "source": {
                                "type": "base64",
                                "media_type": "application/pdf",
                                "data": B64_PDF,
                            },
                            "title": "document.pdf",
                            "cache_control": {"type": "ephemeral"},
                        },
                    ],
                }
            ],
        )
    assert message.content[0].text == "ok"
    sent = chat_bodies(server)[0].body
    assert {k: sent[k] for k in ("system", "tools", "messages")} == {
        k: ours[k] for k in ("system", "tools", "messages")
    }


@pytest.mark.anyio
async def test_ollama_sdk_encodes_images_as_we_do(server):
    server.add("a pixel")
    async with ollama.AsyncClient(host=server.url) as sdk:
        answer = await sdk.chat(
            model="llava", messages=[{"role": "user", "content": "What is it?", "images": [PNG]}]
        )
    assert answer.message.content == "a pixel"
    ours = OllamaModel("llava").build_body(
        ChatRequest([Message.user("What is it?", Image.from_bytes(PNG))])
    )
    assert chat_bodies(server)[0].body["messages"] == ours["messages"]


# -- caching end to end: each call reads what the one before it wrote -------------------


@pytest.mark.anyio
@pytest.mark.parametrize("cache", [True, False])
async def test_an_agent_loop_reads_back_what_the_previous_call_wrote(server, cache):
    from agentgraph import AgentContext, GraphRunner, tool
    from agentgraph.nodes import react_agent
    from agentgraph.testing import ScriptedModel

    @tool
    def lookup(page: int) -> str:
        """Read one page of the manual."""
        return f"page {page}: " + "lorem ipsum " * 50

    server.add(*(ScriptedModel.tool_call("lookup", page=i) for i in range(4)), "Done.")
    model = AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-ant", base_url=server.url, retry=NO_RETRY, cache=cache
    )
    agent = react_agent(model, [lookup], system_prompt="You read manuals. " * 30)
    result = await GraphRunner().run(agent, AgentContext("Summarize the manual."))
    await model.aclose()
    usages = [m.usage for m in result.history if m.role == "assistant"]
    assert len(usages) == 5
    if not cache:
        assert all(u.cache_read_tokens == u.cache_write_tokens == 0 for u in usages)
        return
    assert usages[0].cache_read_tokens == 0 and usages[0].cache_write_tokens > 0
    for before, after in itertools.pairwise(usages):
        # The turn marked last time is marked again as the one before last: a full hit.
        assert after.cache_read_tokens == before.cache_read_tokens + before.cache_write_tokens
        assert after.cache_write_tokens > 0
    bodies = chat_bodies(server)
    assert all(len(_breakpoints(b.body)) <= 4 for b in bodies)


def _breakpoints(body: dict) -> list:
    blocks = [
        *body.get("tools", ()),
        *(body["system"] if isinstance(body.get("system"), list) else ()),
    ]
    for message in body["messages"]:
        blocks += message["content"] if isinstance(message["content"], list) else []
    return [b for b in blocks if "cache_control" in b]


@pytest.mark.anyio
async def test_a_turn_of_many_parallel_calls_still_reads_the_cache(server):
    """Twelve calls and their results add 24 blocks, past the 20 the service looks back
    from a breakpoint: the mark on the turn before the last is what keeps the hit."""
    from agentgraph import AgentContext, GraphRunner, tool
    from agentgraph.nodes import react_agent
    from agentgraph.testing import ScriptedModel

    @tool
    def lookup(page: int) -> str:
        """Read one page of the manual."""
        return f"page {page}"

    calls = ScriptedModel.tool_calls(*(("lookup", {"page": i}) for i in range(12)))
    server.add(calls, "Done.")
    model = AnthropicModel(
        "claude-sonnet-4-5", api_key="sk-ant", base_url=server.url, retry=NO_RETRY, cache=True
    )
    agent = react_agent(model, [lookup], system_prompt="You read manuals.")
    result = await GraphRunner().run(agent, AgentContext("Read pages 0 to 11."))
    await model.aclose()
    first, second = (m.usage for m in result.history if m.role == "assistant")
    assert second.cache_read_tokens == first.cache_read_tokens + first.cache_write_tokens > 0


@pytest.mark.anyio
async def test_the_fake_cache_looks_back_only_twenty_blocks(server):
    server.add("ok", "ok")
    mark = {"type": "ephemeral"}

    def body(blocks: int) -> dict:
        content = [{"type": "text", "text": f"block {i}"} for i in range(blocks)]
        content[-1] = {**content[-1], "cache_control": mark}
        return {
            "model": "claude",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": content}],
        }

    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        first = await sdk.messages.create(**body(2))
        second = await sdk.messages.create(**body(30))
    assert first.usage.cache_creation_input_tokens > 0
    assert second.usage.cache_read_input_tokens == 0  # the written prefix is 28 blocks back
    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        server.add("ok")
        third = await sdk.messages.create(**body(19))  # 17 blocks on: within reach
    assert third.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


@pytest.mark.anyio
async def test_the_fake_takes_the_top_level_marker_as_a_breakpoint_on_the_last_block(server):
    server.add("ok", "ok")
    mark = {"type": "ephemeral"}
    turn = [{"role": "user", "content": "a long question " * 10}]
    async with anthropic.AsyncAnthropic(
        base_url=server.url, api_key="sk-ant", max_retries=0
    ) as sdk:
        first = await sdk.messages.create(
            model="claude", max_tokens=8, messages=turn, cache_control=mark
        )
        second = await sdk.messages.create(
            model="claude",
            max_tokens=8,
            messages=[
                *turn,
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "more"},
            ],
            cache_control=mark,
        )
        four = [{"type": "text", "text": f"t{i}", "cache_control": mark} for i in range(4)]
        with pytest.raises(anthropic.BadRequestError, match="Found 5"):
            await sdk.messages.create(
                model="claude",
                max_tokens=8,
                messages=[{"role": "user", "content": four}],
                cache_control=mark,
            )
    assert first.usage.cache_creation_input_tokens > 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
