"""`model_from_string`: provider prefixes, the environment, and explicit overrides."""

from __future__ import annotations

import time

import pytest

from agentgraph import ProviderConfigError
from agentgraph.llm import (
    AnthropicModel,
    ChatRequest,
    GigaChatModel,
    Message,
    OllamaModel,
    OpenAIModel,
    model_from_string,
)
from agentgraph.llm._resolve import ollama_host

from .support import Server, json_response

pytestmark = pytest.mark.anyio

ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OLLAMA_HOST",
    "OLLAMA_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "GIGACHAT_CREDENTIALS",
    "GIGACHAT_SCOPE",
    "GIGACHAT_ACCESS_TOKEN",
    "GIGACHAT_BASE_URL",
    "GIGACHAT_AUTH_URL",
    "GIGACHAT_CA_BUNDLE_FILE",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


OPENAI_ANSWER = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ]
}
HI = ChatRequest([Message.user("hi")], max_output=5)


async def test_openai_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    server = Server(json_response(OPENAI_ANSWER))
    llm = model_from_string(
        "openai:gpt-4o-mini", http_client=server.client(), headers={"x-extra": "1"}
    )
    assert isinstance(llm, OpenAIModel) and llm.name == "gpt-4o-mini"
    await llm.request(HI)
    sent = server.requests[0]
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-env"
    assert sent.headers["openai-organization"] == "org-1" and sent.headers["x-extra"] == "1"
    assert "max_completion_tokens" in server.body()


async def test_openai_compatible_base_url_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    server = Server(json_response(OPENAI_ANSWER), json_response(OPENAI_ANSWER))
    llm = model_from_string("openai:Qwen/Qwen3-8B", http_client=server.client())
    await llm.request(HI)
    assert str(server.requests[0].url) == "http://localhost:8000/v1/chat/completions"
    assert "authorization" not in server.requests[0].headers
    assert server.body()["max_tokens"] == 5
    explicit = model_from_string(
        "openai:m", base_url="http://other/v1", api_key="sk-arg", http_client=server.client()
    )
    await explicit.request(HI)
    assert str(server.requests[1].url) == "http://other/v1/chat/completions"
    assert server.requests[1].headers["authorization"] == "Bearer sk-arg"


def test_openai_without_key_fails_clearly():
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        model_from_string("openai:gpt-4o")


async def test_ollama_keeps_the_tag_and_reads_host(anyio_backend, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    answer = {
        "model": "qwen2.5:7b",
        "message": {"role": "assistant", "content": "ok"},
        "done": True,
    }
    server = Server(json_response(answer))
    llm = model_from_string("ollama:qwen2.5:7b", http_client=server.client())
    assert isinstance(llm, OllamaModel) and llm.name == "qwen2.5:7b"
    await llm.request(HI)
    assert str(server.requests[0].url) == "http://0.0.0.0:11500/api/chat"
    assert server.body()["model"] == "qwen2.5:7b"


@pytest.mark.parametrize(
    ("value", "url"),
    [
        ("localhost", "http://localhost:11434"),
        ("127.0.0.1:9999", "http://127.0.0.1:9999"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("http://gpu-box/", "http://gpu-box:11434"),
    ],
)
def test_ollama_host_forms(value, url):
    assert ollama_host(value) == url


async def test_anthropic_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://proxy.example.com")
    answer = {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
    server = Server(json_response(answer))
    llm = model_from_string("anthropic:claude-haiku-4-5", http_client=server.client())
    assert isinstance(llm, AnthropicModel)
    await llm.request(HI)
    assert str(server.requests[0].url) == "https://proxy.example.com/v1/messages"
    assert server.requests[0].headers["x-api-key"] == "sk-ant-env"


async def test_gigachat_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("GIGACHAT_CREDENTIALS", "creds==")
    monkeypatch.setenv("GIGACHAT_SCOPE", "GIGACHAT_API_B2B")
    monkeypatch.setenv("GIGACHAT_AUTH_URL", "https://auth.test/oauth")
    monkeypatch.setenv("GIGACHAT_BASE_URL", "https://giga.test/api/v1")
    expires = int((time.time() + 600) * 1000)
    answer = {
        "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]
    }
    server = Server(
        json_response({"access_token": "t", "expires_at": expires}), json_response(answer)
    )
    llm = model_from_string("gigachat:GigaChat-Max", http_client=server.client())
    assert isinstance(llm, GigaChatModel)
    await llm.request(HI)
    assert str(server.requests[0].url) == "https://auth.test/oauth"
    assert server.requests[0].content == b"scope=GIGACHAT_API_B2B"
    assert str(server.requests[1].url) == "https://giga.test/api/v1/chat/completions"


def test_gigachat_api_key_overrides_credentials_and_is_hidden(monkeypatch):
    monkeypatch.setenv("GIGACHAT_CREDENTIALS", "from-env")
    llm = model_from_string("gigachat:GigaChat", api_key="from-arg-SECRET")
    assert "from-arg-SECRET" not in repr(llm) and "from-env" not in repr(llm)


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", "mystery:model", ":model", ""])
def test_bad_specs(spec):
    with pytest.raises(ProviderConfigError, match="provider:model"):
        model_from_string(spec)


def test_native_structured_output_support_is_advertised():
    from agentgraph.llm import AnthropicModel, Capabilities, GigaChatModel, OllamaModel, OpenAIModel

    assert OpenAIModel("m", api_key="k").supports_output_schema is True
    assert OllamaModel("m").supports_output_schema is True
    off = Capabilities(output=False)
    assert OpenAIModel("m", api_key="k", capabilities=off).supports_output_schema is False
    assert AnthropicModel("m", api_key="k").supports_output_schema is False
    assert GigaChatModel("m", credentials="c").supports_output_schema is False
