"""OpenAI Responses API wire format: input items out, responses and stream events in.

Stateless by design: requests go with `store: false`, so every turn carries
the whole history as input items. A reasoning model's reasoning items come
back with their `encrypted_content` and are kept, with the ids of the
function-call items they led to, in `Message.provider_data`; they are sent
back verbatim before the items they produced, as the service requires.

Requests are built in `_responses_request` and re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core._errors import ProviderConnectionError, ResponseFormatError
from ._assemble import ToolCallAssembler, as_int, new_call_id, parse_arguments
from ._decode import SSEEvent, loads_event
from ._http import error_from_body
from ._messages import Message, ToolCall, Usage
from ._model import ChatResponse, ReasoningDelta, ResponseDone, StreamEvent, TextDelta
from ._responses_request import (
    CALL_ITEMS_KEY,
    REASONING_KEY,
    _mapping,
    responses_format,
    responses_input,
    responses_tool_choice,
    responses_tools,
    strict_schema,
)

__all__ = (
    "CALL_ITEMS_KEY",
    "REASONING_KEY",
    "ResponseEventReader",
    "parse_response",
    "responses_format",
    "responses_input",
    "responses_tool_choice",
    "responses_tools",
    "responses_usage",
    "strict_schema",
)

_FAILURE_TYPES = {
    "server_error": "server_error",
    "rate_limit_exceeded": "rate_limit_error",
    "vector_store_timeout": "timeout_error",
}
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def responses_usage(raw: Any) -> Usage:
    """A response's `usage` as `Usage`; one request."""
    if not isinstance(raw, dict):
        return Usage(requests=1, unmetered=1)
    inputs = raw.get("input_tokens_details")
    outputs = raw.get("output_tokens_details")
    return Usage(
        input_tokens=as_int(raw.get("input_tokens")),
        output_tokens=as_int(raw.get("output_tokens")),
        requests=1,
        reasoning_tokens=as_int(outputs.get("reasoning_tokens")) if _mapping(outputs) else 0,
        cache_read_tokens=as_int(inputs.get("cached_tokens")) if _mapping(inputs) else 0,
        cache_write_tokens=as_int(inputs.get("cache_write_tokens")) if _mapping(inputs) else 0,
    )


def _failure(data: Mapping[str, Any], *, provider: str) -> Exception:
    """The error a `failed` response carries, mapped like any provider error."""
    error = data.get("error")
    error = error if _mapping(error) else {}
    code = error.get("code")
    # Every failure code but these says the request itself is wrong (`invalid_prompt`,
    # the image codes): retrying cannot help.
    kind = _FAILURE_TYPES.get(str(code), "invalid_request_error")
    message = error.get("message") or "the response failed"
    return error_from_body(
        provider, {"error": {"message": message, "code": code, "type": kind}}, status=None
    )


def _finish(data: Mapping[str, Any], has_calls: bool) -> str:
    if data.get("status") == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if _mapping(details) else None
        return _INCOMPLETE.get(str(reason), str(reason or "length"))
    return "tool_calls" if has_calls else "stop"


class _Output:
    """The output items of one response, folded into the neutral message's parts."""

    __slots__ = ("calls", "item_ids", "provider", "reasoning", "reasoning_text", "refusal", "text")

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: list[ToolCall] = []
        self.item_ids: dict[str, str] = {}
        self.reasoning: list[dict[str, Any]] = []
        self.reasoning_text: list[str] = []

    def add(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise ResponseFormatError(
                f"malformed output item: {str(item)[:200]!r}", provider=self.provider
            )
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    self.text.append(str(part.get("text") or ""))
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    self.refusal.append(str(part.get("refusal") or ""))
        elif kind == "reasoning":
            self._reasoning(item)
        elif kind == "function_call":
            self.calls.append(self._call(item))

    def _reasoning(self, item: dict[str, Any]) -> None:
        kept: dict[str, Any] = {"type": "reasoning", "id": item.get("id"), "summary": []}
        summary = [s for s in item.get("summary") or () if isinstance(s, dict)]
        kept["summary"] = [
            {"type": "summary_text", "text": str(s.get("text", ""))} for s in summary
        ]
        if isinstance(item.get("encrypted_content"), str):
            kept["encrypted_content"] = item["encrypted_content"]
        self.reasoning.append(kept)
        texts = [s["text"] for s in kept["summary"]]
        for part in item.get("content") or ():  # open-weight models send their raw reasoning
            if isinstance(part, dict) and part.get("type") == "reasoning_text":
                texts.append(str(part.get("text") or ""))
        self.reasoning_text.append("\n\n".join(t for t in texts if t))

    def _call(self, item: dict[str, Any]) -> ToolCall:
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise ResponseFormatError("a function_call item has no name", provider=self.provider)
        call_id = item.get("call_id")
        call_id = call_id if isinstance(call_id, str) and call_id else new_call_id()
        if isinstance(item.get("id"), str) and item["id"]:
            self.item_ids[call_id] = item["id"]
        return ToolCall(
            call_id, name, parse_arguments(item.get("arguments"), provider=self.provider, tool=name)
        )

    def response(self, data: Mapping[str, Any], usage: Usage, model: str) -> ChatResponse:
        calls = tuple(self.calls)
        text, finish = "".join(self.text), _finish(data, bool(calls))
        if self.refusal and not text:
            text, finish = "".join(self.refusal), "content_filter"
        kept: dict[str, Any] = {}
        if self.reasoning:
            kept[REASONING_KEY] = tuple(self.reasoning)
        if self.item_ids:
            kept[CALL_ITEMS_KEY] = dict(self.item_ids)
        reasoning = "\n\n".join(t for t in self.reasoning_text if t)
        message = Message(
            "assistant", text, calls, reasoning=reasoning or None, usage=usage, provider_data=kept
        )
        return ChatResponse(
            message,
            finish_reason=finish,
            usage=usage,
            model=str(data.get("model") or model),
            id=data.get("id") if isinstance(data.get("id"), str) else None,
        )


def parse_response(data: Any, *, provider: str, model: str) -> ChatResponse:
    """A non-streamed `response` object as a `ChatResponse`."""
    if not isinstance(data, dict):
        raise ResponseFormatError("response is not an object", provider=provider, body=data)
    if data.get("status") == "failed" or (data.get("error") and "output" not in data):
        raise _failure(data, provider=provider)
    items = data.get("output")
    if not isinstance(items, list):
        raise ResponseFormatError("response has no output", provider=provider, body=data)
    output = _Output(provider)
    for item in items:
        output.add(item)
    return output.response(data, responses_usage(data.get("usage")), model)


class ResponseEventReader:
    """Folds Responses stream events into deltas and the final response.

    Text, reasoning and arguments stream as deltas; the answer is built from
    the whole items (reasoning with its encrypted content, function calls
    with their ids): those `response.completed` lists, else those that came
    with `response.output_item.done`. The stream is whole at
    `response.completed` or `response.incomplete`; `response.failed` and
    `error` raise.
    """

    __slots__ = ("_calls", "_final", "_items", "_model", "_provider", "_slots", "done")

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._calls = ToolCallAssembler()
        self._slots: dict[int, int] = {}
        self._items: list[Any] = []
        self._final: dict[str, Any] | None = None
        self.done = False

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The deltas carried by one event; raises on an error event."""
        event = loads_event(sse.data, provider=self._provider)
        if not isinstance(event, dict):
            raise ResponseFormatError("stream event is not an object", provider=self._provider)
        kind = event.get("type") or sse.event
        delta = event.get("delta")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return [TextDelta(delta)] if isinstance(delta, str) and delta else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ReasoningDelta(delta)] if isinstance(delta, str) and delta else []
        if kind == "response.reasoning_summary_part.added" and as_int(event.get("summary_index")):
            return [ReasoningDelta("\n\n")]  # parts are joined so in the final message
        if kind == "response.function_call_arguments.delta":
            return self._arguments(event)
        if kind == "response.output_item.added":
            return self._added(event)
        if kind == "response.output_item.done":
            self._items.append(event.get("item"))
        elif kind in ("response.completed", "response.incomplete"):
            response = event.get("response")
            self._final = response if isinstance(response, dict) else {}
            self.done = True
        elif kind == "response.failed":
            response = event.get("response")
            raise _failure(response if isinstance(response, dict) else {}, provider=self._provider)
        elif kind == "error":
            body = {"error": {k: event.get(k) for k in ("message", "code", "param")}}
            if isinstance(event.get("code"), str):
                body["error"]["type"] = event["code"]
            raise error_from_body(self._provider, body, status=None)
        return []

    def _added(self, event: dict[str, Any]) -> list[StreamEvent]:
        item = event.get("item")
        if not isinstance(item, dict) or item.get("type") != "function_call":
            return []
        slot = len(self._slots)
        self._slots[as_int(event.get("output_index"))] = slot
        delta = self._calls.add(
            index=slot,
            id=item.get("call_id"),
            name=item.get("name"),
            arguments=item.get("arguments"),
        )
        return [delta] if delta is not None else []

    def _arguments(self, event: dict[str, Any]) -> list[StreamEvent]:
        slot = self._slots.get(as_int(event.get("output_index")))
        if slot is None:
            raise ResponseFormatError(
                "function call arguments arrived before their item", provider=self._provider
            )
        delta = self._calls.add(index=slot, id=None, name=None, arguments=event.get("delta"))
        return [delta] if delta is not None else []

    def finish(self) -> list[StreamEvent]:
        """The closing event; raises `ProviderConnectionError` if the stream was cut short."""
        final = self._final
        if final is None:
            raise ProviderConnectionError(
                "stream ended before the answer was complete (no response.completed)",
                provider=self._provider,
            )
        listed = final.get("output")
        items = listed if isinstance(listed, list) and listed else self._items
        output = _Output(self._provider)
        for item in items:
            output.add(item)
        if len(output.calls) < len(self._slots):
            raise ResponseFormatError(
                "a streamed function call never completed", provider=self._provider
            )
        usage = responses_usage(final.get("usage"))
        return [ResponseDone(output.response(final, usage, str(final.get("model") or self._model)))]
