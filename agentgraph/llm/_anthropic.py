"""`AnthropicModel`: the Anthropic Messages API. The wire format lives in `_anthropic_wire`."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Literal

import httpx

from ._anthropic_wire import EventReader, anthropic_messages, mark_cache, parse_message
from ._capabilities import Capabilities
from ._http import ProviderRetry
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._transport import ChatClientBase, KeyRule

__all__ = ("ANTHROPIC_BASE_URL", "ANTHROPIC_KEY", "ANTHROPIC_VERSION", "AnthropicModel")

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_KEY = KeyRule("Anthropic", "api.anthropic.com", "ANTHROPIC_API_KEY")
ANTHROPIC_VERSION = "2023-06-01"
_BUDGETS = {"low": 1024, "medium": 4096, "high": 16384}
_MIN_BUDGET = 1024
# Models released before extended thinking existed.
_NO_THINKING = re.compile(r"^claude-(?:instant|2|3-(?!7)|3\.5)")
# Models released before Claude read images.
_OLD = re.compile(r"^claude-(?:instant|[12](?:\.|-|$))")


class AnthropicModel(ChatClientBase):
    """A `ChatModel` over `POST {base_url}/v1/messages`.

    System messages become the top-level `system`; tool results become
    `tool_result` blocks (with `is_error`) of one user turn. `think` turns on
    extended thinking with a token budget (`low` 1024, `medium` or `True` 4096,
    `high` 16384); thinking text arrives as `Message.reasoning`, and the signed
    blocks are kept in `Message.provider_data` to be sent back with the history.

    Args:
        model: e.g. `claude-sonnet-4-5`.
        api_key: sent as `x-api-key`; required for Anthropic's own API.
        base_url: the API root without `/v1`.
        max_tokens: `max_tokens` when the request sets no `max_output` (the API
            requires one); the thinking budget is added on top.
        cache: put prompt-cache breakpoints (`cache_control`) on the last
            tool, the system prompt and the last two user turns, so a growing
            conversation is read from the cache instead of paid in full each
            call; a request's `cache` (from `Settings.cache`) overrides it.
        cache_ttl: how long the cache lives: the API's default (`"5m"`) or `"1h"`.
        headers, http_client, timeout, retry, capabilities, provider: as for `OpenAIModel`.
    """

    __slots__ = ("_cache", "_cache_ttl", "_max_tokens")

    _path = "/v1/messages"
    _native_output = False  # answers follow the prompt fragment and the lenient parser

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str = ANTHROPIC_BASE_URL,
        max_tokens: int = 4096,
        cache: bool = False,
        cache_ttl: Literal["5m", "1h"] | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        capabilities: Capabilities | None = None,
        provider: str = "anthropic",
    ) -> None:
        ANTHROPIC_KEY.check(api_key, base_url, provider=provider)
        headers = {"anthropic-version": ANTHROPIC_VERSION, **(headers or {})}
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._caps = capabilities or Capabilities()
        self._max_tokens = max_tokens
        if cache_ttl not in (None, "5m", "1h"):
            raise ValueError(f"cache_ttl is '5m', '1h' or None, not {cache_ttl!r}")
        self._cache = cache
        self._cache_ttl = cache_ttl

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        self._caps.check_media(
            request.messages,
            model=model,
            images=not _OLD.match(model),
            documents=not _OLD.match(model),
        )
        thinking, max_tokens = self._thinking(request, model)
        self._check_transcript(request, "anthropic", think=thinking is not None)
        system, messages = anthropic_messages(request.messages, provider=self._http.provider)
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        if system:
            body["system"] = system
        if thinking is not None:
            body["thinking"] = thinking
        if request.tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                if t.description
                else {"name": t.name, "input_schema": t.parameters}
                for t in request.tools
            ]
            choice = self._tool_choice(request, model, thinking is not None)
            if choice is not None:
                body["tool_choice"] = choice
        if request.temperature is not None:
            if thinking is not None:
                self._caps.refuse(
                    "temperature", model=model, reason="it must stay at its default while thinking"
                )
            elif self._caps.allows("temperature", model=model):
                body["temperature"] = request.temperature
        if request.output is not None:
            self._caps.allows(
                "output", model=model, default=False, reason="no native structured output here"
            )
        if self._cache if request.cache is None else request.cache:
            mark_cache(body, self._cache_ttl)
        if stream:
            body["stream"] = True
        return body

    def _thinking(self, request: ChatRequest, model: str) -> tuple[dict[str, Any] | None, int]:
        """The `thinking` object and `max_tokens`, which must exceed the thinking budget."""
        think = request.think
        max_tokens = request.max_output or self._max_tokens
        if not think or not self._caps.allows(
            "think",
            model=model,
            default=not _NO_THINKING.match(model),
            reason="no extended thinking",
        ):
            return None, max_tokens
        budget = _BUDGETS["medium" if think is True else think]
        if request.max_output is None:
            return {"type": "enabled", "budget_tokens": budget}, max_tokens + budget
        budget = min(budget, request.max_output - 1)
        if budget < _MIN_BUDGET:
            self._caps.refuse(
                "think", model=model, reason=f"max_output must exceed {_MIN_BUDGET} tokens"
            )
            return None, max_tokens
        return {"type": "enabled", "budget_tokens": budget}, max_tokens

    def _tool_choice(self, request: ChatRequest, model: str, thinking: bool) -> Any:
        choice = request.tool_choice
        if choice is None or choice == "auto":
            return None if choice is None else {"type": "auto"}
        if choice == "none":
            return {"type": "none"}
        if thinking:
            self._caps.refuse("tool_choice", model=model, reason="forced tool use while thinking")
            return {"type": "auto"}
        if choice == "required":
            return {"type": "any"}
        return {"type": "tool", "name": choice}

    def _parse(self, data: Any, model: str) -> ChatResponse:
        return parse_message(data, provider=self._http.provider, model=model)

    def _decode(self, response: httpx.Response, model: str) -> AsyncGenerator[StreamEvent, None]:
        return self._fold_sse(response, EventReader(provider=self._http.provider, model=model))
