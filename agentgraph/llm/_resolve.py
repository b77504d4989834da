"""`model_from_string`: a chat model from `"provider:model"` and the environment."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

import httpx

from .._errors import ProviderConfigError
from ._anthropic import ANTHROPIC_BASE_URL, AnthropicModel
from ._gigachat import GIGACHAT_AUTH_URL, GIGACHAT_BASE_URL, GigaChatModel
from ._model import ChatModel
from ._ollama import OLLAMA_BASE_URL, OllamaModel
from ._openai import OPENAI_BASE_URL, OpenAIModel

__all__ = ("model_from_string", "ollama_host")

_OLLAMA_PORT = 11434


def ollama_host(value: str) -> str:
    """`OLLAMA_HOST` as a base URL: `host`, `host:port` or a full URL (port 11434 by default)."""
    value = value.strip().rstrip("/")
    if "://" not in value:
        value = f"http://{value}"
    url = httpx.URL(value)
    port = url.port
    if port is None and url.scheme == "http":
        port = _OLLAMA_PORT
    return str(url.copy_with(port=port)).rstrip("/")


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _openai(
    model: str,
    base_url: str | None,
    api_key: str | None,
    headers: dict[str, str],
    http_client: httpx.AsyncClient | None,
) -> ChatModel:
    env_headers = {
        header: value
        for header, name in (
            ("openai-organization", "OPENAI_ORG_ID"),
            ("openai-project", "OPENAI_PROJECT_ID"),
        )
        if (value := _env(name))
    }
    return OpenAIModel(
        model,
        api_key=api_key or _env("OPENAI_API_KEY"),
        base_url=base_url or _env("OPENAI_BASE_URL") or OPENAI_BASE_URL,
        headers={**env_headers, **headers},
        http_client=http_client,
    )


def _ollama(
    model: str,
    base_url: str | None,
    api_key: str | None,
    headers: dict[str, str],
    http_client: httpx.AsyncClient | None,
) -> ChatModel:
    host = _env("OLLAMA_HOST")
    return OllamaModel(
        model,
        base_url=base_url or (ollama_host(host) if host else OLLAMA_BASE_URL),
        api_key=api_key or _env("OLLAMA_API_KEY"),
        headers=headers,
        http_client=http_client,
    )


def _anthropic(
    model: str,
    base_url: str | None,
    api_key: str | None,
    headers: dict[str, str],
    http_client: httpx.AsyncClient | None,
) -> ChatModel:
    return AnthropicModel(
        model,
        api_key=api_key or _env("ANTHROPIC_API_KEY"),
        base_url=base_url or _env("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL,
        headers=headers,
        http_client=http_client,
    )


def _gigachat(
    model: str,
    base_url: str | None,
    api_key: str | None,
    headers: dict[str, str],
    http_client: httpx.AsyncClient | None,
) -> ChatModel:
    return GigaChatModel(
        model,
        credentials=api_key or _env("GIGACHAT_CREDENTIALS"),
        scope=_env("GIGACHAT_SCOPE") or "GIGACHAT_API_PERS",
        access_token=_env("GIGACHAT_ACCESS_TOKEN"),
        base_url=base_url or _env("GIGACHAT_BASE_URL") or GIGACHAT_BASE_URL,
        auth_url=_env("GIGACHAT_AUTH_URL") or GIGACHAT_AUTH_URL,
        verify=_env("GIGACHAT_CA_BUNDLE_FILE") or True,
        headers=headers,
        http_client=http_client,
    )


_Factory = Callable[
    [str, str | None, str | None, dict[str, str], httpx.AsyncClient | None], ChatModel
]
_PROVIDERS: Mapping[str, _Factory] = {
    "anthropic": _anthropic,
    "gigachat": _gigachat,
    "ollama": _ollama,
    "openai": _openai,
}


def model_from_string(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
) -> ChatModel:
    """A chat model from `"provider:model"`, with settings from the environment.

    ```python
    model = model_from_string("ollama:qwen2.5:7b")
    ```

    Providers and what they read when the argument is not given:

    - `openai`: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID`, `OPENAI_PROJECT_ID`;
    - `ollama`: `OLLAMA_HOST`, `OLLAMA_API_KEY`;
    - `anthropic`: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`;
    - `gigachat`: `GIGACHAT_CREDENTIALS` (`api_key=` overrides it), `GIGACHAT_SCOPE`,
      `GIGACHAT_ACCESS_TOKEN`, `GIGACHAT_BASE_URL`, `GIGACHAT_AUTH_URL`,
      `GIGACHAT_CA_BUNDLE_FILE`.

    Only the first `:` separates the provider, so Ollama tags stay in the name.

    Raises:
        ProviderConfigError: an unknown provider, no model name, or a missing key.
    """
    provider, sep, model = spec.partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    factory = _PROVIDERS.get(provider)
    if factory is None or not sep or not model:
        known = ", ".join(sorted(_PROVIDERS))
        raise ProviderConfigError(
            f"cannot read model {spec!r}: write 'provider:model' with provider one of {known}"
        )
    return factory(model, base_url, api_key, dict(headers or {}), http_client)
