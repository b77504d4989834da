"""`OpenAIModel`: OpenAI chat completions and the servers that copy them.

Covers OpenAI itself and OpenAI-compatible servers (vLLM, llama.cpp server,
LM Studio, Ollama's `/v1`). The wire format lives in `_openai_wire`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, aclosing
from typing import Any, Literal

import httpx

from .._errors import ProviderConfigError, ProviderConnectionError
from ._capabilities import Capabilities
from ._decode import iter_sse, stream_events
from ._http import ProviderRetry
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._openai_wire import (
    ChunkReader,
    openai_messages,
    openai_tool_choice,
    openai_tools,
    parse_completion,
)
from ._transport import HttpClientBase, HttpTransport

__all__ = ("OPENAI_BASE_URL", "OpenAIModel", "is_openai_host")

OPENAI_BASE_URL = "https://api.openai.com/v1"
_REASONING = re.compile(r"^(?:.*/)?(?:o\d|gpt-5(?!-chat))")


def is_openai_host(base_url: str) -> bool:
    """Whether `base_url` is OpenAI's own API rather than a compatible server."""
    return httpx.URL(base_url).host == "api.openai.com"


class OpenAIModel(HttpClientBase):
    """A `ChatModel` over `POST {base_url}/chat/completions`.

    Args:
        model: the model name, e.g. `gpt-4o-mini`.
        api_key: sent as `Authorization: Bearer`; required for OpenAI's own API,
            optional for local servers.
        base_url: the API root, `https://api.openai.com/v1` by default.
        headers: extra headers for every request (organization, project...).
        http_client: the client to send with; one is created (and closed by
            `aclose`) when not given.
        timeout: per-request timeout; the client's own timeout when `None`.
        retry: the retry of one request; `ProviderRetry()` when `None`.
        capabilities: which hints the model honours; inferred when `None`.
        max_tokens_param: the field `max_output` goes to. OpenAI wants
            `max_completion_tokens`; compatible servers (Ollama's `/v1` ignores
            the newer field) get `max_tokens`. Inferred from `base_url` when `None`.
        parallel_tool_calls: sent as `parallel_tool_calls` when tools are given.
        include_usage: ask a stream for its closing usage chunk.
        provider: the name errors and logs carry.
    """

    __slots__ = (
        "_caps",
        "_http",
        "_include_usage",
        "_max_tokens_param",
        "_model",
        "_official",
        "_parallel",
    )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = OPENAI_BASE_URL,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        capabilities: Capabilities | None = None,
        max_tokens_param: Literal["max_completion_tokens", "max_tokens"] | None = None,
        parallel_tool_calls: bool | None = None,
        include_usage: bool = True,
        provider: str = "openai",
    ) -> None:
        self._official = is_openai_host(base_url)
        if not api_key and self._official:
            raise ProviderConfigError(
                "OpenAI needs an API key: pass api_key= or set OPENAI_API_KEY", provider=provider
            )
        auth = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._model = model
        self._http = HttpTransport(
            provider,
            base_url,
            headers={**(headers or {}), **auth},
            secrets=(api_key,),
            http_client=http_client,
            timeout=timeout,
            retry=retry,
        )
        self._caps = capabilities or Capabilities()
        self._max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if self._official else "max_tokens"
        )
        self._parallel = parallel_tool_calls
        self._include_usage = include_usage

    @property
    def supports_output_schema(self) -> bool:
        """Whether `ChatRequest.output` is sent as provider-native structured output."""
        return self._caps.output is not False

    @property
    def name(self) -> str:
        """The model requests go to."""
        return self._model

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        provider = self._http.provider
        body: dict[str, Any] = {
            "model": model,
            "messages": openai_messages(request.messages, provider=provider),
        }
        if request.tools:
            body["tools"] = openai_tools(request.tools)
            if request.tool_choice is not None and self._caps.allows("tool_choice", model=model):
                body["tool_choice"] = openai_tool_choice(request.tool_choice)
            if self._parallel is not None:
                body["parallel_tool_calls"] = self._parallel
        reasoning = bool(_REASONING.match(model))
        if request.temperature is not None and self._caps.allows(
            "temperature",
            model=model,
            default=not reasoning,
            reason="reasoning models only take the default temperature",
        ):
            body["temperature"] = request.temperature
        if request.max_output is not None:
            body[self._max_tokens_param] = request.max_output
        effort = self._effort(request, model, reasoning)
        if effort is not None:
            body["reasoning_effort"] = effort
        if request.output is not None and self._caps.allows("output", model=model):
            schema: dict[str, Any] = {
                "name": request.output.name,
                "schema": request.output.schema,
                "strict": request.output.strict,
            }
            if request.output.description:
                schema["description"] = request.output.description
            body["response_format"] = {"type": "json_schema", "json_schema": schema}
        if stream:
            body["stream"] = True
            if self._include_usage:
                body["stream_options"] = {"include_usage": True}
        return body

    def _effort(self, request: ChatRequest, model: str, reasoning: bool) -> str | None:
        """`reasoning_effort` from `think`: `True` is `medium`, `False` is `none`."""
        think = request.think
        if think is None:
            return None
        # Compatible servers decide for themselves; OpenAI's own non-reasoning models cannot.
        inferred = reasoning or not self._official
        if think is False:
            supported = self._caps.think if self._caps.think is not None else inferred
            return "none" if supported else None  # a model that cannot reason already complies
        if not self._caps.allows(
            "think", model=model, default=inferred, reason="not a reasoning model"
        ):
            return None
        return "medium" if think is True else think

    async def request(self, request: ChatRequest) -> ChatResponse:
        """Send `request` and return the complete answer."""
        body = self.build_body(request)
        data = await self._http.post("/chat/completions", body)
        return parse_completion(data, provider=self._http.provider, model=body["model"])

    def stream(
        self, request: ChatRequest
    ) -> AbstractAsyncContextManager[AsyncIterator[StreamEvent]]:
        """Stream the answer to `request` as deltas, ending with `ResponseDone`."""
        body = self.build_body(request, stream=True)
        return stream_events(
            lambda: self._http.open("/chat/completions", body),
            lambda response: self._decode(response, body["model"]),
        )

    async def _decode(
        self, response: httpx.Response, model: str
    ) -> AsyncGenerator[StreamEvent, None]:
        provider = self._http.provider
        reader = ChunkReader(provider=provider, model=model)
        sse = iter_sse(response, provider=provider, secrets=self._http.secrets)
        async with aclosing(sse) as events:
            async for event in events:
                if event.data.strip() == "[DONE]":
                    break
                for delta in reader.feed(event):
                    yield delta
            else:
                if not reader.finished:
                    raise ProviderConnectionError(
                        "stream ended before the answer was complete (no [DONE])",
                        provider=provider,
                    )
        for delta in reader.finish():
            yield delta
