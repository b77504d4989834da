"""Presets for gateways that speak the OpenAI-compatible API: OpenRouter and a LiteLLM proxy.

Each is an `OpenAIModel` (chat completions) or an `OpenAIResponsesModel`
(`api="responses"`) with the gateway's base URL, headers and key in place;
nothing of the gateways' own SDKs is needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import httpx

from .._core._errors import ProviderConfigError
from ._http import ProviderRetry
from ._openai import OpenAIModel
from ._responses import OpenAIResponsesModel

__all__ = ("LITELLM_BASE_URL", "OPENROUTER_BASE_URL", "litellm_model", "openrouter_model")

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
LITELLM_BASE_URL = "http://localhost:4000/v1"
"""Where `litellm --config ...` listens by default."""

Api = Literal["chat", "responses"]


def _client(
    api: Api,
    model: str,
    *,
    api_key: str | None,
    base_url: str,
    headers: Mapping[str, str],
    http_client: httpx.AsyncClient | None,
    timeout: float | httpx.Timeout | None,
    retry: ProviderRetry | None,
    provider: str,
) -> OpenAIModel | OpenAIResponsesModel:
    if api not in ("chat", "responses"):
        raise ProviderConfigError(f"api is 'chat' or 'responses', not {api!r}", provider=provider)
    kind: type[OpenAIModel | OpenAIResponsesModel] = (
        OpenAIResponsesModel if api == "responses" else OpenAIModel
    )
    return kind(
        model,
        api_key=api_key,
        base_url=base_url,
        headers=headers,
        http_client=http_client,
        timeout=timeout,
        retry=retry,
        provider=provider,
    )


def openrouter_model(
    model: str,
    *,
    api_key: str | None,
    app_url: str | None = None,
    app_title: str | None = None,
    api: Api = "chat",
    base_url: str = OPENROUTER_BASE_URL,
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    timeout: float | httpx.Timeout | None = None,
    retry: ProviderRetry | None = None,
) -> OpenAIModel | OpenAIResponsesModel:
    """A model behind OpenRouter, named `vendor/model` (`anthropic/claude-sonnet-4.5`).

    ```python
    model = openrouter_model(
        "anthropic/claude-sonnet-4.5", api_key="sk-or-...", app_url="https://example.com"
    )
    ```

    Args:
        model: OpenRouter's model id, `vendor/model` with an optional `:variant`.
        api_key: the OpenRouter key (required).
        app_url: sent as `HTTP-Referer`, which OpenRouter attributes usage to.
        app_title: sent as `X-Title`, the app's name in OpenRouter's rankings.
        api: `chat` for chat completions, `responses` for OpenRouter's Responses API.
        base_url: `https://openrouter.ai/api/v1` by default.
        headers: extra headers for every request.
        http_client: the client to send with; one per event loop is made when not given.
        timeout: per-request timeout; the client's own timeout when `None`.
        retry: the retry of one request; `ProviderRetry()` when `None`.

    Raises:
        ProviderConfigError: no key, or a model name without its vendor.
    """
    if not api_key:
        raise ProviderConfigError(
            "OpenRouter needs an API key: set the OPENROUTER_API_KEY environment variable, "
            "or pass api_key= to the model",
            provider="openrouter",
        )
    if "/" not in model:
        raise ProviderConfigError(
            f"OpenRouter names models 'vendor/model' (openai/gpt-4o-mini), not {model!r}",
            provider="openrouter",
        )
    sent = dict(headers or {})
    if app_url:
        sent.setdefault("HTTP-Referer", app_url)
    if app_title:
        sent.setdefault("X-Title", app_title)
    return _client(
        api,
        model,
        api_key=api_key,
        base_url=base_url,
        headers=sent,
        http_client=http_client,
        timeout=timeout,
        retry=retry,
        provider="openrouter",
    )


def litellm_model(
    model: str,
    *,
    api_key: str | None = None,
    base_url: str = LITELLM_BASE_URL,
    key_header: Literal["authorization", "x-litellm-api-key"] = "authorization",
    api: Api = "chat",
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    timeout: float | httpx.Timeout | None = None,
    retry: ProviderRetry | None = None,
) -> OpenAIModel | OpenAIResponsesModel:
    """A model behind a LiteLLM proxy, named as the proxy's `model_list` names it.

    ```python
    model = litellm_model("claude-sonnet", api_key="sk-1234", base_url="http://localhost:4000")
    ```

    Args:
        model: the proxy's `model_name` for the deployment (`gpt-4o`, `claude-sonnet`).
        api_key: the proxy's virtual key or master key; a proxy without auth needs none.
        base_url: the proxy's address; `/v1` is added when missing.
        key_header: `authorization` sends the key as a bearer token;
            `x-litellm-api-key` sends it in LiteLLM's own header, leaving
            `Authorization` free for something else (an identity token).
        api: `chat` for chat completions, `responses` for the proxy's `/v1/responses`.
        headers: extra headers for every request.
        http_client: the client to send with; one per event loop is made when not given.
        timeout: per-request timeout; the client's own timeout when `None`.
        retry: the retry of one request; `ProviderRetry()` when `None`.

    Raises:
        ProviderConfigError: an unknown `key_header`.
    """
    url = base_url.rstrip("/")
    if not url.endswith("/v1"):
        url += "/v1"
    sent = dict(headers or {})
    key = api_key
    if key_header == "x-litellm-api-key":
        if api_key:
            sent["x-litellm-api-key"] = api_key
        key = None
    elif key_header != "authorization":
        raise ProviderConfigError(
            f"key_header is 'authorization' or 'x-litellm-api-key', not {key_header!r}",
            provider="litellm",
        )
    client = _client(
        api,
        model,
        api_key=key,
        base_url=url,
        headers=sent,
        http_client=http_client,
        timeout=timeout,
        retry=retry,
        provider="litellm",
    )
    if key is None and api_key:
        client._http.secrets = (*client._http.secrets, api_key)  # kept out of errors too
    return client
