"""OpenAI Responses API wire format: input items out, responses and stream events in.

Stateless by design: requests go with `store: false`, so every turn carries
the whole history as input items. A reasoning model's reasoning items come
back with their `encrypted_content` and are kept, with the ids of the
function-call items they led to, in `Message.provider_data`; they are sent
back verbatim before the items they produced, as the service requires.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from .._errors import BadRequestError, ProviderConnectionError, ResponseFormatError
from ._assemble import ToolCallAssembler, arguments_json, as_int, new_call_id, parse_arguments
from ._content import Image, Part, data_url
from ._decode import SSEEvent, loads_event
from ._http import error_from_body
from ._messages import Message, ToolCall, ToolSpec, Usage
from ._model import (
    ChatResponse,
    OutputSchema,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolChoice,
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

REASONING_KEY = "openai.reasoning"
"""`Message.provider_data` key of the reasoning items that must go back verbatim."""
CALL_ITEMS_KEY = "openai.call_items"
"""`Message.provider_data` key mapping each tool call's `call_id` to its item id."""

_FAILURE_TYPES = {
    "server_error": "server_error",
    "rate_limit_exceeded": "rate_limit_error",
    "vector_store_timeout": "timeout_error",
}
_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _reasoning_items(message: Message) -> list[dict[str, Any]]:
    return [dict(item) for item in message.provider_data.get(REASONING_KEY, ()) if _mapping(item)]


def _mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, Mapping)


def responses_input(
    messages: Sequence[Message], *, provider: str, reasoning: bool = True
) -> tuple[str, list[Any]]:
    """`(instructions, input items)` for a history: system text leads, the rest are items.

    System messages anywhere in the history (a summary after the prompt) are
    joined into `instructions`, which the service applies to this turn only.
    Kept reasoning items (and the item ids that need them) go back only to a
    model that reasons (`reasoning`); another model is sent the answers alone.
    """
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content.strip():
                system.append(message.content)
        elif message.role == "tool":
            if not message.tool_call_id:
                raise BadRequestError(
                    "a tool message needs the tool_call_id of the call it answers",
                    provider=provider,
                )
            # A result with images is a list of input parts, as the service takes it.
            output: Any = message.content
            if message.parts:
                output = [_input_part(part) for part in message.parts if part != ""]
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}
            )
        elif message.role == "assistant":
            items.extend(_assistant_items(message, reasoning))
        elif message.parts:
            content = [_input_part(part) for part in message.parts]
            items.append({"type": "message", "role": "user", "content": content})
        else:
            items.append({"type": "message", "role": "user", "content": message.content})
    return "\n\n".join(system), items


def _input_part(part: Part) -> dict[str, Any]:
    """One part of a user turn: text, an image (URL or data URL), a PDF file (data URL)."""
    if isinstance(part, str):
        return {"type": "input_text", "text": part}
    if isinstance(part, Image):
        url = part.url if part.data is None else data_url(str(part.media_type), part.data)
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return {
        "type": "input_file",
        "filename": part.name,
        "file_data": data_url(part.media_type, part.data),
    }


def _assistant_items(message: Message, reasoning: bool) -> list[dict[str, Any]]:
    items = _reasoning_items(message) if reasoning else []
    # A call goes back under its item id only beside the reasoning it came with.
    ids = message.provider_data.get(CALL_ITEMS_KEY, {}) if items else {}
    if message.content.strip() or not message.tool_calls:
        items.append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls:
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments_json(call.arguments),
        }
        item_id = ids.get(call.id) if isinstance(ids, Mapping) else None
        if isinstance(item_id, str) and item_id:
            item["id"] = item_id
        items.append(item)
    return items


def strict_schema(schema: Mapping[str, Any]) -> bool:
    """Whether a JSON Schema meets strict mode: every object closed, every property required."""
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or ()) != set(properties):
            return False
        if not all(_mapping(p) and strict_schema(p) for p in properties.values()):
            return False
    items = schema.get("items")
    if _mapping(items) and not strict_schema(items):
        return False
    for key in ("anyOf", "$defs", "definitions"):
        nested = schema.get(key)
        values = nested.values() if _mapping(nested) else nested or ()
        if not all(_mapping(v) and strict_schema(v) for v in values):
            return False
    return True


def responses_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as flat `{"type": "function", "name", "parameters", "strict"}` entries.

    The service treats a tool as strict unless told otherwise, and refuses a
    strict schema that leaves a property optional; `strict` is sent as the
    schema allows.
    """
    out: list[dict[str, Any]] = []
    for tool in tools:
        entry: dict[str, Any] = {
            "type": "function",
            "name": tool.name,
            "parameters": tool.parameters,
            "strict": strict_schema(tool.parameters),
        }
        if tool.description:
            entry["description"] = tool.description
        out.append(entry)
    return out


def responses_tool_choice(choice: ToolChoice) -> Any:
    """`auto` / `none` / `required`, or `{"type": "function", "name": ...}` for a tool name."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def responses_format(output: OutputSchema) -> dict[str, Any]:
    """`text.format` for structured output."""
    schema: dict[str, Any] = {
        "type": "json_schema",
        "name": output.name,
        "schema": output.schema,
        "strict": output.strict,
    }
    if output.description:
        schema["description"] = output.description
    return schema


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
