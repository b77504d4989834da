"""Images and PDF documents in messages: the parts, each provider's wire shape, and refusals."""

from __future__ import annotations

import base64
import pickle

import pytest

from agentgraph import AgentContext, GraphRunner, UnsupportedSetting
from agentgraph.checkpoint import MemoryStore
from agentgraph.llm import (
    AnthropicModel,
    Capabilities,
    ChatRequest,
    Document,
    GigaChatModel,
    Image,
    Message,
    OllamaModel,
    OpenAIModel,
)
from agentgraph.nodes import chat
from agentgraph.testing import ScriptedModel

from .media import (
    B64_PNG,
    PNG,
    anthropic_served,
    gigachat_unserved,
    ollama_served,
    openai_completion,
)
from .support import Server, Sleeps, json_response, retry

pytestmark = pytest.mark.anyio

JPEG = b"\xff\xd8\xff\xe0" + bytes(16)
PDF = b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"
B64_PDF = base64.b64encode(PDF).decode()
URL = "https://images.test/cat.png"


def asked() -> Message:
    return Message.user(
        "Compare these.",
        Image.from_bytes(PNG),
        Image.from_url(URL),
        Document.from_bytes(PDF, name="report.pdf"),
    )


# -- the parts --------------------------------------------------------------------------


def test_a_user_message_keeps_its_parts_in_order_and_its_text_as_content():
    message = asked()
    assert message.content == "Compare these."
    assert [type(p).__name__ for p in message.parts] == ["str", "Image", "Image", "Document"]
    assert message.media == message.parts[1:]
    assert Message.user("plain") == Message("user", "plain")  # plain text stays plain
    assert Message.user("a", "b") == Message("user", "a\n\nb")
    assert pickle.loads(pickle.dumps(message)) == message


def test_image_media_type_is_read_from_the_bytes_and_checked():
    assert Image.from_bytes(PNG).media_type == "image/png"
    assert Image.from_bytes(JPEG).media_type == "image/jpeg"
    assert Image.from_url(f"data:image/png;base64,{B64_PNG}") == Image.from_bytes(PNG)
    assert repr(Image.from_bytes(PNG)) == f"<Image image/png, {len(PNG)} bytes>"
    with pytest.raises(ValueError, match="not a PNG, JPEG, GIF or WebP"):
        Image.from_bytes(b"GIF? no, text")
    with pytest.raises(ValueError, match="the bytes are image/png, not image/jpeg"):
        Image(PNG, "image/jpeg")
    with pytest.raises(ValueError, match="data URL says image/jpeg"):
        Image.from_url(f"data:image/jpeg;base64,{B64_PNG}")
    with pytest.raises(ValueError, match="must be base64"):
        Image.from_url("data:image/png,raw")
    with pytest.raises(ValueError, match="http"):
        Image.from_url("file:///etc/passwd")
    with pytest.raises(ValueError, match="either bytes or a URL"):
        Image()


def test_documents_are_pdf_only():
    assert Document.from_bytes(PDF).name == "document.pdf"
    with pytest.raises(ValueError, match="not a PDF"):
        Document.from_bytes(b"plain text")
    with pytest.raises(ValueError, match="documents are PDF"):
        Document(PDF, media_type="text/plain")  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", ["openai", "anthropic", "ollama", "gigachat", "store"])
async def test_parts_that_disagree_with_the_message_are_refused_when_sent_or_stored(
    provider, anyio_backend
):
    image = Image.from_bytes(PNG)
    bad = [
        (Message("user", "something else", parts=("hi", image)), ValueError, "text of its parts"),
        (Message("assistant", "", parts=(image,)), ValueError, "only user and tool messages"),
        (Message("user", "", parts=(b"raw",)), TypeError, "str, Image or Document"),  # type: ignore[arg-type]
        (Message("user", "", parts=[image]), TypeError, "tuple"),  # type: ignore[arg-type]
    ]
    for message, error, words in bad:
        with pytest.raises(error, match=words):
            if provider == "store":
                ctx = AgentContext("q", history=[message])
                await GraphRunner().run(chat(ScriptedModel("x")), ctx, store=MemoryStore())
            else:
                send(provider, message)


def send(provider: str, message: Message) -> None:
    """Build the request body `provider`'s client would send."""
    request = ChatRequest([message])
    if provider == "openai":
        OpenAIModel("gpt-4o", api_key="sk-test").build_body(request)
    elif provider == "anthropic":
        AnthropicModel("claude-sonnet-4-5", api_key="sk-ant-x").build_body(request)
    elif provider == "ollama":
        OllamaModel("llava").build_body(request)
    else:
        GigaChatModel("GigaChat", credentials="Y2xpZW50OnNlY3JldA==").build_body(request)


def test_a_context_with_an_image_round_trips_through_json():
    ctx = AgentContext("q", history=[asked()])
    assert AgentContext.from_json(ctx.to_json()) == ctx


# -- OpenAI chat completions ------------------------------------------------------------


async def test_openai_sends_image_urls_data_urls_and_pdf_files(anyio_backend):
    server = Server(json_response(openai_completion()))
    model = OpenAIModel(
        "gpt-4o", api_key="sk-test", http_client=server.client(), retry=retry(Sleeps())
    )
    await model.request(ChatRequest([Message.system("Be brief."), asked()]))
    assert server.body()["messages"] == [
        {"role": "system", "content": "Be brief."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare these."},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
                {"type": "image_url", "image_url": {"url": URL}},
                {
                    "type": "file",
                    "file": {
                        "filename": "report.pdf",
                        "file_data": f"data:application/pdf;base64,{B64_PDF}",
                    },
                },
            ],
        },
    ]


async def test_openai_refuses_images_for_a_text_model_and_pdfs_for_compatible_servers(
    anyio_backend,
):
    server = Server()
    text_only = OpenAIModel("gpt-3.5-turbo", api_key="sk-test", http_client=server.client())
    with pytest.raises(UnsupportedSetting, match=r"'gpt-3.5-turbo' does not support images"):
        await text_only.request(ChatRequest([Message.user("?", Image.from_bytes(PNG))]))
    local = OpenAIModel("llava", base_url="http://localhost:8000/v1", http_client=server.client())
    with pytest.raises(UnsupportedSetting, match=r"does not support documents.*Capabilities"):
        await local.request(ChatRequest([Message.user("?", Document.from_bytes(PDF))]))
    # Declared support wins over the guess, and the fail policy is not needed.
    declared = OpenAIModel(
        "gpt-3.5-turbo",
        api_key="sk-test",
        http_client=server.client(),
        capabilities=Capabilities(images=True, on_unsupported="ignore"),
    )
    body = declared.build_body(ChatRequest([Message.user("?", Image.from_url(URL))]))
    assert body["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": URL}}
    assert server.requests == []


# -- Anthropic --------------------------------------------------------------------------


async def test_anthropic_sends_image_and_document_blocks(anyio_backend):
    server, model = anthropic_served()
    await model.request(ChatRequest([asked()]))
    assert server.body()["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Compare these."},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64_PNG},
                },
                {"type": "image", "source": {"type": "url", "url": URL}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": B64_PDF},
                    "title": "report.pdf",
                },
            ],
        }
    ]


async def test_anthropic_refuses_media_for_models_before_vision(anyio_backend):
    model = AnthropicModel("claude-2.1", api_key="sk-ant-x", http_client=Server().client())
    with pytest.raises(UnsupportedSetting, match=r"'claude-2.1' does not support images"):
        model.build_body(ChatRequest([Message.user("?", Image.from_bytes(PNG))]))


# -- Ollama and GigaChat ----------------------------------------------------------------


async def test_ollama_sends_base64_images_and_refuses_urls_and_pdfs(anyio_backend):
    server, model = ollama_served("a cat")
    await model.request(ChatRequest([Message.user("What is it?", Image.from_bytes(PNG))]))
    assert server.body()["messages"] == [
        {"role": "user", "content": "What is it?", "images": [B64_PNG]}
    ]
    with pytest.raises(UnsupportedSetting, match=r"images by URL.*Image.from_bytes"):
        model.build_body(ChatRequest([Message.user("?", Image.from_url(URL))]))
    with pytest.raises(UnsupportedSetting, match="documents: Ollama reads images only"):
        model.build_body(ChatRequest([Message.user("?", Document.from_bytes(PDF))]))
    assert len(server.requests) == 1


async def test_gigachat_refuses_images_and_documents_before_signing_in(anyio_backend):
    server, model = gigachat_unserved()
    for part in (Image.from_bytes(PNG), Document.from_bytes(PDF)):
        with pytest.raises(UnsupportedSetting, match="GigaChat takes files only as uploads"):
            await model.request(ChatRequest([Message.user("?", part)]))
    assert server.requests == []  # refused before any token was fetched
