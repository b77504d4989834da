"""`OpenAIModel`: OpenAI chat completions and the servers that copy them.

Covers OpenAI itself and OpenAI-compatible servers (vLLM, llama.cpp server,
LM Studio, Ollama's `/v1`). The wire format lives in `_openai_wire`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Literal

import httpx

from ._capabilities import Capabilities
from ._http import ProviderRetry
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._openai_wire import (
    ChunkReader,
    openai_messages,
    openai_tool_choice,
    openai_tools,
    parse_completion,
)
from ._transport import ChatClientBase, KeyRule

__all__ = ("OPENAI_BASE_URL", "OPENAI_KEY", "OpenAIModel")

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_KEY = KeyRule("OpenAI", "api.openai.com", "OPENAI_API_KEY")
"""OpenAI's own API needs a key; compatible servers decide for themselves."""
_REASONING = re.compile(r"^(?:.*/)?(?:o\d|gpt-5(?!-chat))")
# Text-only models (images in a message are refused before sending).
_NO_IMAGES = re.compile(r"^(?:.*/)?(?:gpt-3\.5|gpt-4(?:-\d{4})?$|o1-mini|o3-mini)")


class OpenAIModel(ChatClientBase):
    """A `ChatModel` over `POST {base_url}/chat/completions`.

    Args:
        model: the model name, e.g. `gpt-4o-mini`.
        api_key: sent as `Authorization: Bearer`; required for OpenAI's own API,
            optional for local servers.
        base_url: the API root, `https://api.openai.com/v1` by default.
        headers: extra headers for every request (organization, project...).
        http_client: the client to send with, used as is. Without one, a pool of
            connections is made in each event loop the model is used in, closed
            by `aclose` awaited there or else when that loop ends.
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

    __slots__ = ("_include_usage", "_max_tokens_param", "_official", "_parallel")

    _path = "/chat/completions"

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
        OPENAI_KEY.check(api_key, base_url, provider=provider)
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._caps = capabilities or Capabilities()
        self._official = OPENAI_KEY.official(base_url)
        self._max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if self._official else "max_tokens"
        )
        self._parallel = parallel_tool_calls
        self._include_usage = include_usage

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        provider = self._http.provider
        self._caps.check_media(
            request.messages,
            model=model,
            images=not _NO_IMAGES.match(model),
            documents=self._official,
        )
        self._check_transcript(request, "openai")
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

    def _parse(self, data: Any, model: str) -> ChatResponse:
        return parse_completion(data, provider=self._http.provider, model=model)

    def _decode(self, response: httpx.Response, model: str) -> AsyncGenerator[StreamEvent, None]:
        return self._fold_sse(response, ChunkReader(provider=self._http.provider, model=model))
