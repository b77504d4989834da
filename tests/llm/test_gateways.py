"""`openai-responses:`, OpenRouter and LiteLLM presets: URLs, headers, keys and model names."""

from __future__ import annotations

import pytest

from agentgraph import AuthenticationError, ProviderConfigError
from agentgraph.llm import (
    ChatRequest,
    Message,
    OpenAIModel,
    OpenAIResponsesModel,
    litellm_model,
    model_from_string,
    openrouter_model,
)

from .support import Server, json_response

pytestmark = pytest.mark.anyio

ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "OPENROUTER_API_KEY",
    "OPENROUTER_BASE_URL",
    "OPENROUTER_APP_URL",
    "OPENROUTER_APP_TITLE",
    "LITELLM_PROXY_URL",
    "LITELLM_PROXY_API_BASE",
    "LITELLM_API_KEY",
    "LITELLM_PROXY_API_KEY",
)
CHAT = {
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ]
}
RESPONSE = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
}
HI = ChatRequest([Message.user("hi")], max_output=50)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


async def test_openai_responses_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    server = Server(json_response(RESPONSE))
    llm = model_from_string("openai-responses:gpt-5-mini", http_client=server.client())
    assert isinstance(llm, OpenAIResponsesModel) and llm.name == "gpt-5-mini"
    assert (await llm.request(HI)).message.content == "ok"
    sent = server.requests[0]
    assert str(sent.url) == "https://api.openai.com/v1/responses"
    assert sent.headers["authorization"] == "Bearer sk-env"
    assert sent.headers["openai-project"] == "proj-1"
    assert server.body()["max_output_tokens"] == 50


def test_openai_responses_without_key_fails_clearly():
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        model_from_string("openai-responses:gpt-5-mini")


async def test_openrouter_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-env")
    monkeypatch.setenv("OPENROUTER_APP_URL", "https://example.com")
    monkeypatch.setenv("OPENROUTER_APP_TITLE", "Example")
    server = Server(json_response(CHAT))
    llm = model_from_string("openrouter:anthropic/claude-sonnet-4.5", http_client=server.client())
    assert isinstance(llm, OpenAIModel) and llm.provider == "openrouter"
    await llm.request(HI)
    sent = server.requests[0]
    assert str(sent.url) == "https://openrouter.ai/api/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-or-env"
    assert sent.headers["http-referer"] == "https://example.com"
    assert sent.headers["x-title"] == "Example"
    assert server.body()["model"] == "anthropic/claude-sonnet-4.5"
    assert server.body()["max_tokens"] == 50


async def test_openrouter_responses_api(anyio_backend):
    server = Server(json_response(RESPONSE))
    llm = openrouter_model(
        "openai/gpt-5-mini", api_key="sk-or-1", api="responses", http_client=server.client()
    )
    assert isinstance(llm, OpenAIResponsesModel)
    await llm.request(HI)
    assert str(server.requests[0].url) == "https://openrouter.ai/api/v1/responses"
    assert "http-referer" not in server.requests[0].headers


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: model_from_string("openrouter:openai/gpt-4o"), "OPENROUTER_API_KEY"),
        (lambda: openrouter_model("gpt-4o", api_key="sk-or-1"), "'vendor/model'"),
        (lambda: openrouter_model("a/b", api_key="k", api="completions"), "'chat' or 'responses'"),
        (lambda: litellm_model("m", key_header="x-api-key"), "key_header"),
    ],
)
def test_gateway_mistakes_are_refused(call, message):
    with pytest.raises(ProviderConfigError, match=message):
        call()


async def test_litellm_from_environment(anyio_backend, monkeypatch):
    monkeypatch.setenv("LITELLM_PROXY_URL", "http://proxy.internal:4000/")
    monkeypatch.setenv("LITELLM_API_KEY", "sk-litellm-virtual")
    server = Server(json_response(CHAT))
    llm = model_from_string("litellm:claude-sonnet", http_client=server.client())
    assert llm.name == "claude-sonnet"
    await llm.request(HI)
    sent = server.requests[0]
    assert str(sent.url) == "http://proxy.internal:4000/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-litellm-virtual"


async def test_litellm_defaults_to_a_local_proxy_without_auth(anyio_backend):
    server = Server(json_response(RESPONSE))
    llm = litellm_model("gpt-5-mini", api="responses", http_client=server.client())
    await llm.request(HI)
    sent = server.requests[0]
    assert str(sent.url) == "http://localhost:4000/v1/responses"
    assert "authorization" not in sent.headers


async def test_litellm_key_in_its_own_header_is_kept_out_of_errors(anyio_backend):
    key = "sk-litellm-0123456789"
    echo = {"error": {"message": f"Authentication Error, invalid key {key}", "type": "auth_error"}}
    server = Server(json_response(echo, status=401))
    llm = litellm_model(
        "claude-sonnet",
        api_key=key,
        base_url="http://proxy:4000/v1",
        key_header="x-litellm-api-key",
        http_client=server.client(),
    )
    with pytest.raises(AuthenticationError) as info:
        await llm.request(HI)
    sent = server.requests[0]
    assert str(sent.url) == "http://proxy:4000/v1/chat/completions"
    assert sent.headers["x-litellm-api-key"] == key and "authorization" not in sent.headers
    assert key not in str(info.value) and key not in str(info.value.body)
