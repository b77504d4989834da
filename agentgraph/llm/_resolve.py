"""`model_from_string`: a chat model from `"provider:model"` and the environment."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping

import attrs
import httpx

from .._core._errors import ProviderConfigError
from ._anthropic import ANTHROPIC_BASE_URL, AnthropicModel
from ._gateways import LITELLM_BASE_URL, OPENROUTER_BASE_URL, litellm_model, openrouter_model
from ._gigachat import GIGACHAT_AUTH_URL, GIGACHAT_BASE_URL, GigaChatModel
from ._model import ChatModel
from ._ollama import OLLAMA_BASE_URL, OllamaModel
from ._openai import OPENAI_BASE_URL, OpenAIModel
from ._responses import OpenAIResponsesModel

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


@attrs.frozen
class _Given:
    """What `model_from_string` was given besides the spec."""

    model: str
    base_url: str | None
    api_key: str | None
    headers: dict[str, str]
    http_client: httpx.AsyncClient | None

    def url(self, env: str, default: str, read: Callable[[str], str] | None = None) -> str:
        """The base URL given, else variable `env` passed through `read`, else `default`."""
        if self.base_url:
            return self.base_url
        value = _env(env)
        if value is None:
            return default
        return read(value) if read else value


@attrs.frozen
class _Keyed:
    """A provider whose client takes a key and a base URL, each given or from the environment."""

    client: (
        type[OpenAIModel] | type[OpenAIResponsesModel] | type[OllamaModel] | type[AnthropicModel]
    )
    key_env: str
    url_env: str
    default_url: str
    read_url: Callable[[str], str] | None = None
    header_envs: tuple[tuple[str, str], ...] = ()
    """`(header, environment variable)` pairs sent when the variable is set."""

    def __call__(self, given: _Given) -> ChatModel:
        env_headers = {header: value for header, name in self.header_envs if (value := _env(name))}
        return self.client(
            given.model,
            api_key=given.api_key or _env(self.key_env),
            base_url=given.url(self.url_env, self.default_url, self.read_url),
            headers={**env_headers, **given.headers},
            http_client=given.http_client,
        )


def _gigachat(given: _Given) -> ChatModel:
    return GigaChatModel(
        given.model,
        credentials=given.api_key or _env("GIGACHAT_CREDENTIALS"),
        scope=_env("GIGACHAT_SCOPE") or "GIGACHAT_API_PERS",
        access_token=_env("GIGACHAT_ACCESS_TOKEN"),
        base_url=given.url("GIGACHAT_BASE_URL", GIGACHAT_BASE_URL),
        auth_url=_env("GIGACHAT_AUTH_URL") or GIGACHAT_AUTH_URL,
        verify=_env("GIGACHAT_CA_BUNDLE_FILE") or True,
        headers=given.headers,
        http_client=given.http_client,
    )


def _openrouter(given: _Given) -> ChatModel:
    return openrouter_model(
        given.model,
        api_key=given.api_key or _env("OPENROUTER_API_KEY"),
        app_url=_env("OPENROUTER_APP_URL"),
        app_title=_env("OPENROUTER_APP_TITLE"),
        base_url=given.url("OPENROUTER_BASE_URL", OPENROUTER_BASE_URL),
        headers=given.headers,
        http_client=given.http_client,
    )


def _litellm(given: _Given) -> ChatModel:
    return litellm_model(
        given.model,
        api_key=given.api_key or _env("LITELLM_API_KEY") or _env("LITELLM_PROXY_API_KEY"),
        base_url=given.base_url
        or _env("LITELLM_PROXY_URL")
        or _env("LITELLM_PROXY_API_BASE")
        or LITELLM_BASE_URL,
        headers=given.headers,
        http_client=given.http_client,
    )


_OPENAI_HEADERS = (
    ("openai-organization", "OPENAI_ORG_ID"),
    ("openai-project", "OPENAI_PROJECT_ID"),
)


def _scripted(given: _Given) -> ChatModel:
    # Offline: answers every request with the text after `scripted:` (demos, the CLI, tests).
    from ._scripted import ScriptedModel

    return ScriptedModel(given.model, repeat=True)


# Who makes a model, from how its name starts: for "did you mean" when the provider is left out.
_MAKERS = (
    (("gpt-", "chatgpt", "o1", "o3", "o4", "text-embedding"), "openai"),
    (("claude",), "anthropic"),
    (("gigachat",), "gigachat"),
    (("llama", "qwen", "mistral", "gemma", "phi", "deepseek"), "ollama"),
)


def _did_you_mean(spec: str, provider: str, sep: str, model: str) -> str:
    """A hint for a misspelt provider (`opneai:`) or a bare model name (`gpt-4o-mini`)."""
    if sep and not model:
        return f"; no model name follows '{provider}:'"
    if sep:
        close = difflib.get_close_matches(provider, list(_PROVIDERS), n=1, cutoff=0.6)
        return f". Did you mean `{close[0]}`?" if close else ""
    name = spec.strip()
    if "/" in name:
        return f". Did you mean `openrouter:{name}`?"
    for starts, maker in _MAKERS:
        if name.lower().startswith(starts):
            return f". Did you mean `{maker}:{name}`?"
    return ""


_PROVIDERS: Mapping[str, Callable[[_Given], ChatModel]] = {
    "anthropic": _Keyed(
        AnthropicModel, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", ANTHROPIC_BASE_URL
    ),
    "gigachat": _gigachat,
    "litellm": _litellm,
    "openrouter": _openrouter,
    "scripted": _scripted,
    "ollama": _Keyed(OllamaModel, "OLLAMA_API_KEY", "OLLAMA_HOST", OLLAMA_BASE_URL, ollama_host),
    "openai": _Keyed(
        OpenAIModel,
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        OPENAI_BASE_URL,
        header_envs=_OPENAI_HEADERS,
    ),
    "openai-responses": _Keyed(
        OpenAIResponsesModel,
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        OPENAI_BASE_URL,
        header_envs=_OPENAI_HEADERS,
    ),
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
    - `openai-responses`: the same as `openai`, for the Responses API
      (`OpenAIResponsesModel`);
    - `openrouter`: `OPENROUTER_API_KEY`, `OPENROUTER_BASE_URL`,
      `OPENROUTER_APP_URL` (sent as `HTTP-Referer`), `OPENROUTER_APP_TITLE`
      (sent as `X-Title`); models are named `vendor/model`
      (`openrouter:anthropic/claude-sonnet-4.5`);
    - `litellm`: a LiteLLM proxy at `LITELLM_PROXY_URL` (or `LITELLM_PROXY_API_BASE`,
      `http://localhost:4000` by default) with the key in `LITELLM_API_KEY`
      (or `LITELLM_PROXY_API_KEY`); models are named as the proxy's `model_list` names them;
    - `ollama`: `OLLAMA_HOST`, `OLLAMA_API_KEY`;
    - `anthropic`: `ANTHROPIC_API_KEY`, `ANTHROPIC_BASE_URL`;
    - `gigachat`: `GIGACHAT_CREDENTIALS` (`api_key=` overrides it), `GIGACHAT_SCOPE`,
      `GIGACHAT_ACCESS_TOKEN`, `GIGACHAT_BASE_URL`, `GIGACHAT_AUTH_URL`,
      `GIGACHAT_CA_BUNDLE_FILE`;
    - `scripted`: nothing; an offline model that answers every request with the
      text after `scripted:` (`scripted:The answer is 42.`).

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
            + _did_you_mean(spec, provider, sep, model)
        )
    return factory(_Given(model, base_url, api_key, dict(headers or {}), http_client))
