"""`OpenAIResponsesModel`: OpenAI's Responses API (`POST /v1/responses`).

The API chat completions is giving way to: reasoning effort together with
function tools, reasoning items carried between turns, typed stream events.
The wire format lives in `_responses_wire`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import httpx

from ._capabilities import Capabilities
from ._http import ProviderRetry
from ._model import ChatRequest, ChatResponse, StreamEvent
from ._openai import OPENAI_BASE_URL, OPENAI_KEY
from ._responses_wire import (
    ResponseEventReader,
    parse_response,
    responses_format,
    responses_input,
    responses_tool_choice,
    responses_tools,
)
from ._transport import ChatClientBase

__all__ = ("OpenAIResponsesModel",)

_REASONING = re.compile(r"^(?:.*/)?(?:o\d|gpt-5(?!-chat)|gpt-oss)")


def _least_effort(model: str) -> str:
    """The lowest effort a reasoning model takes: reasoning cannot be switched off everywhere."""
    name = model.rsplit("/", 1)[-1]
    if name.startswith(("o", "gpt-oss")):
        return "low"
    return "none" if re.match(r"gpt-5\.\d", name) else "minimal"


class OpenAIResponsesModel(ChatClientBase):
    """A `ChatModel` over `POST {base_url}/responses`, stateless.

    Every request carries the whole history as input items with
    `store: false`; a reasoning model's reasoning comes back encrypted
    (`include: ["reasoning.encrypted_content"]`), is kept on the assistant
    message (`Message.provider_data`, so checkpoints keep it) and is sent
    back with the next turn. `think` becomes `reasoning.effort` and may go
    with tools. System messages become `instructions`.

    ```python
    model = OpenAIResponsesModel("gpt-5-mini", api_key="sk-...")
    ```

    Args:
        model: the model name, e.g. `gpt-5-mini`.
        api_key: sent as `Authorization: Bearer`; required for OpenAI's own API.
        base_url: the API root, `https://api.openai.com/v1` by default.
        headers: extra headers for every request.
        http_client: the client to send with, used as is. Without one, a pool of
            connections is made in each event loop the model is used in, closed
            by `aclose` awaited there or else when that loop ends.
        timeout: per-request timeout; the client's own timeout when `None`.
        retry: the retry of one request; `ProviderRetry()` when `None`.
        capabilities: which hints the model honours; inferred when `None`.
        reasoning: whether the model reasons (takes `reasoning`, returns
            reasoning items, refuses `temperature`); inferred from the name
            when `None` (`o1`..., `gpt-5`..., `gpt-oss`...).
        reasoning_summary: `auto`, `concise` or `detailed` asks reasoning
            models for a readable summary (`Message.reasoning`); `None` asks none.
        parallel_tool_calls: sent as `parallel_tool_calls` when tools are given.
        provider: the name errors and logs carry.
    """

    __slots__ = ("_parallel", "_reasoning", "_summary")

    _path = "/responses"

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
        reasoning: bool | None = None,
        reasoning_summary: str | None = None,
        parallel_tool_calls: bool | None = None,
        provider: str = "openai",
    ) -> None:
        OPENAI_KEY.check(api_key, base_url, provider=provider)
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._caps = capabilities or Capabilities()
        self._reasoning = reasoning
        self._summary = reasoning_summary
        self._parallel = parallel_tool_calls

    def _reasons(self, model: str) -> bool:
        return self._reasoning if self._reasoning is not None else bool(_REASONING.match(model))

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        self._caps.check_media(request.messages, model=model)
        self._check_transcript(request, "responses")
        reasons = self._reasons(model)
        instructions, items = responses_input(
            request.messages, provider=self._http.provider, reasoning=reasons
        )
        body: dict[str, Any] = {"model": model, "input": items, "store": False}
        if instructions:
            body["instructions"] = instructions
        if request.tools:
            body["tools"] = responses_tools(request.tools)
            if request.tool_choice is not None and self._caps.allows("tool_choice", model=model):
                body["tool_choice"] = responses_tool_choice(request.tool_choice)
            if self._parallel is not None:
                body["parallel_tool_calls"] = self._parallel
        if request.temperature is not None and self._caps.allows(
            "temperature",
            model=model,
            default=not reasons,
            reason="reasoning models only take the default temperature",
        ):
            body["temperature"] = request.temperature
        if request.max_output is not None:
            body["max_output_tokens"] = request.max_output
        if reasons:
            # Stateless: the reasoning comes back encrypted, to be sent with the next turn.
            body["include"] = ["reasoning.encrypted_content"]
            reasoning = self._reasoning_options(request, model)
            if reasoning:
                body["reasoning"] = reasoning
        elif request.think not in (None, False):
            self._caps.allows("think", model=model, default=False, reason="not a reasoning model")
        if request.output is not None and self._caps.allows("output", model=model):
            body["text"] = {"format": responses_format(request.output)}
        if stream:
            body["stream"] = True
        return body

    def _reasoning_options(self, request: ChatRequest, model: str) -> dict[str, Any]:
        """`reasoning` from `think`: `True` is `medium`, `False` the least the model allows."""
        options: dict[str, Any] = {}
        think = request.think
        if think is False:
            options["effort"] = _least_effort(model)
        elif think is not None and self._caps.allows("think", model=model):
            options["effort"] = "medium" if think is True else think
        if self._summary is not None:
            options["summary"] = self._summary
        return options

    def _parse(self, data: Any, model: str) -> ChatResponse:
        return parse_response(data, provider=self._http.provider, model=model)

    def _decode(self, response: httpx.Response, model: str) -> AsyncGenerator[StreamEvent, None]:
        return self._fold_sse(
            response, ResponseEventReader(provider=self._http.provider, model=model)
        )
