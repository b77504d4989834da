"""GigaChat wire format: the legacy `functions` model with object arguments.

At most one function call per assistant turn, with no call id; its
`functions_state_id` must go back on that assistant message (kept in
`Message.provider_data`), and the result goes back as
`{"role": "function", "name": ..., "content": "<JSON object>"}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from .._core._errors import BadRequestError, ResponseFormatError
from ._assemble import (
    arguments_json,
    as_int,
    new_call_id,
    normalize_finish,
    parse_arguments,
    result_name,
    wire_arguments,
)
from ._decode import SSEEvent
from ._http import dumps, error_from_body
from ._messages import Message, ToolCall, Usage
from ._model import (
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)
from ._openai_wire import ChunkReaderBase, first_choice

__all__ = ("STATE_KEY", "ChunkReader", "gigachat_messages", "gigachat_usage", "parse_completion")

STATE_KEY = "gigachat.functions_state_id"
"""`Message.provider_data` key of the state id echoed back with a function call."""


def _function_result(message: Message) -> str:
    """Tool output as the JSON object GigaChat expects; plain text is wrapped."""
    try:
        if isinstance(orjson.loads(message.content), dict):
            return message.content
    except orjson.JSONDecodeError:
        pass
    key = "error" if message.is_error else "result"
    return dumps({key: message.content}).decode()


def gigachat_messages(messages: Sequence[Message], *, provider: str) -> list[dict[str, Any]]:
    """Neutral messages as GigaChat messages.

    GigaChat takes one system message, first: the text of every system message
    (a system prompt, and a summary `summarize` left further on, say) goes into
    that one, in order, separated by blank lines.
    """
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    system = [m.content for m in messages if m.role == "system" and m.content]
    if system:
        out.append({"role": "system", "content": "\n\n".join(system)})
    for message in messages:
        if message.role == "system":
            continue
        if message.role == "tool":
            name = result_name(message, names, provider=provider)
            out.append({"role": "function", "name": name, "content": _function_result(message)})
            continue
        item: dict[str, Any] = {"role": message.role, "content": message.content}
        if message.role == "assistant" and message.tool_calls:
            if len(message.tool_calls) > 1:
                raise BadRequestError(
                    f"GigaChat takes one function call per assistant turn; this history has "
                    f"{len(message.tool_calls)} in one turn",
                    provider=provider,
                )
            call = message.tool_calls[0]
            names[call.id] = call.name
            item["function_call"] = {"name": call.name, "arguments": wire_arguments(call.arguments)}
            state = message.provider_data.get(STATE_KEY)
            if isinstance(state, str) and state:
                item["functions_state_id"] = state
        out.append(item)
    return out


def gigachat_usage(raw: Any) -> Usage:
    """`usage` as `Usage`; `precached_prompt_tokens` are the cached ones."""
    if not isinstance(raw, dict):
        return Usage(requests=1)
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        requests=1,
        cache_read_tokens=as_int(raw.get("precached_prompt_tokens")),
    )


def _call(raw: Any, *, provider: str) -> ToolCall | None:
    if raw is None:
        return None
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(name, str) or not name:
        raise ResponseFormatError(f"malformed function_call: {str(raw)[:200]!r}", provider=provider)
    return ToolCall(
        new_call_id(), name, parse_arguments(raw.get("arguments"), provider=provider, tool=name)
    )


def _answer(text: str, call: ToolCall | None, state: Any, reasoning: str, usage: Usage) -> Message:
    return Message(
        "assistant",
        text,
        (call,) if call else (),
        reasoning=reasoning or None,
        usage=usage,
        provider_data={STATE_KEY: state} if call and isinstance(state, str) and state else {},
    )


def parse_completion(data: Any, *, provider: str, model: str) -> ChatResponse:
    """A non-streamed GigaChat completion as a `ChatResponse`."""
    choice, message = first_choice(data, provider=provider)
    call = _call(message.get("function_call"), provider=provider)
    usage = gigachat_usage(data.get("usage"))
    return ChatResponse(
        _answer(
            str(message.get("content") or ""),
            call,
            message.get("functions_state_id"),
            str(message.get("reasoning_content") or ""),
            usage,
        ),
        finish_reason=normalize_finish(choice.get("finish_reason"), has_tool_calls=bool(call)),
        usage=usage,
        model=str(data.get("model") or model),
    )


class ChunkReader(ChunkReaderBase):
    """Folds GigaChat stream chunks (`choices[].delta`) into deltas and the final response."""

    __slots__ = ("_call", "_state")

    def __init__(self, *, provider: str, model: str) -> None:
        super().__init__(provider=provider, model=model)
        self._call: ToolCall | None = None
        self._state: Any = None

    def _usage_of(self, raw: dict[str, Any]) -> Usage:
        return gigachat_usage(raw)

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The deltas carried by one chunk; raises on an error chunk."""
        chunk = self._chunk(sse)
        if chunk is None:
            return []
        if "choices" not in chunk and "message" in chunk:
            # GigaChat reports a failure mid-stream as its error body: {"status", "message"}.
            status = chunk.get("status")
            code = status if isinstance(status, int) and status >= 400 else None
            raise error_from_body(self._provider, chunk, status=code)
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, events)
            if choice.get("finish_reason"):
                self._finish = choice["finish_reason"]
        return events

    def _delta(self, delta: dict[str, Any], events: list[StreamEvent]) -> None:
        for key, sink, kind in (
            ("reasoning_content", self._reasoning, ReasoningDelta),
            ("content", self._text, TextDelta),
        ):
            text = delta.get(key)
            if isinstance(text, str) and text:
                sink.append(text)
                events.append(kind(text))
        if delta.get("functions_state_id"):
            self._state = delta["functions_state_id"]
        call = _call(delta.get("function_call"), provider=self._provider)
        if call is not None:
            if self._call is not None:
                raise ResponseFormatError(
                    "stream carried a second function call", provider=self._provider
                )
            self._call = call
            arguments = arguments_json(call.arguments)
            events.append(ToolCallDelta(0, call.id, call.name, arguments))

    def finish(self) -> list[StreamEvent]:
        """The closing event: the assembled response."""
        usage = self._closing_usage()
        message = _answer(
            "".join(self._text), self._call, self._state, "".join(self._reasoning), usage
        )
        finish = normalize_finish(self._finish, has_tool_calls=self._call is not None)
        response = ChatResponse(message, finish_reason=finish, usage=usage, model=self._model)
        return [ResponseDone(response)]
