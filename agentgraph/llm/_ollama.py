"""`OllamaModel`: Ollama's native `/api/chat`, streamed as NDJSON.

Natively, tool-call arguments are JSON objects in both directions (a string
sent back is refused), tool results name their tool with `tool_name`, and a
response with tool calls still says `done_reason: "stop"`.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

import httpx

from .._core._errors import ProviderConnectionError, ResponseFormatError
from ._assemble import (
    arguments_json,
    as_int,
    new_call_id,
    normalize_finish,
    parse_arguments,
    result_name,
    wire_arguments,
)
from ._capabilities import Capabilities
from ._content import Image
from ._decode import iter_ndjson
from ._http import ProviderRetry, error_from_body, scrub
from ._messages import Message, ToolCall, Usage
from ._model import (
    ChatRequest,
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from ._openai_wire import openai_tools
from ._transport import ChatClientBase

__all__ = ("OLLAMA_BASE_URL", "OllamaModel", "ollama_messages")

OLLAMA_BASE_URL = "http://localhost:11434"


def ollama_messages(messages: Sequence[Message], *, provider: str) -> list[dict[str, Any]]:
    """Neutral messages as `/api/chat` messages (arguments as objects, `tool_name` on results)."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.parts:  # the text goes in `content`, the images (bytes only) after it
            item["images"] = [
                base64.b64encode(part.data).decode()
                for part in message.parts
                if isinstance(part, Image) and part.data is not None
            ]
        if message.role == "assistant":
            if message.reasoning:
                item["thinking"] = message.reasoning
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "function": {"name": c.name, "arguments": wire_arguments(c.arguments)},
                    }
                    for c in message.tool_calls
                ]
                names.update((c.id, c.name) for c in message.tool_calls)
        elif message.role == "tool":
            item["tool_name"] = result_name(message, names, provider=provider)
            if message.tool_call_id:
                item["tool_call_id"] = message.tool_call_id
        out.append(item)
    return out


def _tool_call(raw: Any, *, provider: str) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if not isinstance(function, dict) or not isinstance(name, str) or not name:
        raise ResponseFormatError(f"malformed tool call: {str(raw)[:200]!r}", provider=provider)
    call_id = raw.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else new_call_id(),
        name,
        parse_arguments(function.get("arguments"), provider=provider, tool=name),
    )


def _usage(data: dict[str, Any]) -> Usage:
    # Both counts are omitted when zero (for instance a fully cached prompt).
    return Usage(
        input_tokens=as_int(data.get("prompt_eval_count")),
        output_tokens=as_int(data.get("eval_count")),
        requests=1,
    )


def _response(
    last: dict[str, Any], text: str, calls: tuple[ToolCall, ...], thinking: str, model: str
) -> ChatResponse:
    """The answer from its text, calls and thinking, and the usage and reason on the last line."""
    usage = _usage(last)
    return ChatResponse(
        Message("assistant", text, calls, reasoning=thinking or None, usage=usage),
        finish_reason=normalize_finish(last.get("done_reason"), has_tool_calls=bool(calls)),
        usage=usage,
        model=str(last.get("model") or model),
    )


class OllamaModel(ChatClientBase):
    """A `ChatModel` over Ollama's native `POST {base_url}/api/chat`.

    Args:
        model: e.g. `qwen2.5:7b`.
        base_url: the server, `http://localhost:11434` by default.
        api_key: sent as `Authorization: Bearer` (Ollama's cloud); none locally.
        num_ctx: `options.num_ctx`, the context window. Ollama's default is small
            and it drops the oldest messages silently when it overflows, so set
            this for agent workloads.
        keep_alive: how long the server keeps the model loaded (`"5m"`, seconds).
        options: further `options` sent with every request (`top_k`, `seed`...).
        headers, http_client, timeout, retry, capabilities, provider: as for `OpenAIModel`.
    """

    __slots__ = ("_keep_alive", "_num_ctx", "_options")

    _path = "/api/chat"

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OLLAMA_BASE_URL,
        api_key: str | None = None,
        num_ctx: int | None = None,
        keep_alive: str | float | None = None,
        options: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout | None = None,
        retry: ProviderRetry | None = None,
        capabilities: Capabilities | None = None,
        provider: str = "ollama",
    ) -> None:
        super().__init__(
            model, provider, base_url, headers, http_client, timeout, retry, api_key=api_key
        )
        self._caps = capabilities or Capabilities()
        self._num_ctx = num_ctx
        self._keep_alive = keep_alive
        self._options = dict(options or {})

    def build_body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The JSON body for `request`, after the capability policy."""
        model = request.model or self._model
        self._caps.check_media(
            request.messages,
            model=model,
            documents=False,
            image_urls=False,
            reason="Ollama reads images only (bytes), not PDF documents: "
            "send the document's text instead",
        )
        self._check_transcript(request, "ollama")
        body: dict[str, Any] = {
            "model": model,
            "messages": ollama_messages(request.messages, provider=self._http.provider),
            "stream": stream,  # the server streams when this is left out
        }
        choice = request.tool_choice
        if request.tools and choice != "none":
            body["tools"] = openai_tools(request.tools)
            if choice not in (None, "auto"):
                self._caps.allows(
                    "tool_choice", model=model, default=False, reason="Ollama has no tool_choice"
                )
        if request.output is not None and self._caps.allows("output", model=model):
            body["format"] = request.output.schema
        if request.think is not None and self._caps.allows("think", model=model):
            body["think"] = request.think
        options = dict(self._options)
        if request.temperature is not None and self._caps.allows("temperature", model=model):
            options["temperature"] = request.temperature
        if request.max_output is not None:
            options["num_predict"] = request.max_output
        if self._num_ctx is not None:
            options["num_ctx"] = self._num_ctx
        if options:
            body["options"] = options
        if self._keep_alive is not None:
            body["keep_alive"] = self._keep_alive
        return body

    def _check(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ResponseFormatError("answer is not a JSON object", provider=self._http.provider)
        if data.get("error"):
            error = error_from_body(self._http.provider, data, status=None)
            raise scrub(error, self._http.secrets)
        return data

    def _parse(self, data: Any, model: str) -> ChatResponse:
        data = self._check(data)
        provider = self._http.provider
        message = data.get("message")
        if not isinstance(message, dict):
            raise ResponseFormatError("answer has no message", provider=provider, body=data)
        calls = tuple(_tool_call(c, provider=provider) for c in message.get("tool_calls") or ())
        text = str(message.get("content") or "")
        return _response(data, text, calls, str(message.get("thinking") or ""), model)

    async def _decode(
        self, response: httpx.Response, model: str
    ) -> AsyncGenerator[StreamEvent, None]:
        provider = self._http.provider
        text: list[str] = []
        thinking: list[str] = []
        calls: list[ToolCall] = []
        lines = iter_ndjson(response, provider=provider, secrets=self._http.secrets)
        async with aclosing(lines) as chunks:
            async for raw in chunks:
                chunk = self._check(raw)
                message = chunk.get("message")
                message = message if isinstance(message, dict) else {}
                if isinstance(message.get("thinking"), str) and message["thinking"]:
                    thinking.append(message["thinking"])
                    yield ReasoningDelta(message["thinking"])
                if isinstance(message.get("content"), str) and message["content"]:
                    text.append(message["content"])
                    yield TextDelta(message["content"])
                # Tool calls arrive whole, never as argument fragments.
                for raw_call in message.get("tool_calls") or ():
                    call = _tool_call(raw_call, provider=provider)
                    calls.append(call)
                    yield ToolCallDelta(
                        len(calls) - 1, call.id, call.name, arguments_json(call.arguments)
                    )
                if chunk.get("done") is True:
                    answer = _response(chunk, "".join(text), tuple(calls), "".join(thinking), model)
                    yield ResponseDone(answer)
                    return
        raise ProviderConnectionError(
            "stream ended before the line with done: true", provider=provider
        )
