"""OpenAI chat-completions wire format: messages out, completions and stream chunks in.

Used by `OpenAIModel`, and in part by GigaChat's format, which shares the
choices and the stream chunks; kept apart from the clients so the format can
be read (and tested) on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core._errors import BadRequestError, ProviderConnectionError, ResponseFormatError
from ._assemble import (
    ToolCallAssembler,
    arguments_json,
    as_int,
    new_call_id,
    normalize_finish,
    parse_arguments,
)
from ._content import Image, Part, data_url
from ._decode import SSEEvent, loads_event
from ._http import error_from_body
from ._messages import Message, ToolCall, ToolSpec, Usage
from ._model import (
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolChoice,
)

__all__ = (
    "ChunkReader",
    "ChunkReaderBase",
    "first_choice",
    "openai_messages",
    "openai_tool_choice",
    "openai_tools",
    "openai_usage",
    "parse_completion",
)


def openai_messages(messages: Sequence[Message], *, provider: str) -> list[dict[str, Any]]:
    """Neutral messages as chat-completions messages (arguments as JSON text).

    A tool message takes text only, so the images of tool results go in one
    user message after the run of tool messages, each labelled with the call
    it answers: the tool messages still follow their calls as the API requires.
    """
    out: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []  # the images of the tool results just sent
    for message in messages:
        if shown and message.role != "tool":
            out.append({"role": "user", "content": shown})
            shown = []
        if message.role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": message.content}
            if message.tool_calls:
                item["content"] = message.content or None
                item["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name,
                            "arguments": arguments_json(call.arguments),
                        },
                    }
                    for call in message.tool_calls
                ]
        elif message.role == "tool":
            item = _tool_message(message, provider, shown)
        elif message.parts:
            item = {"role": "user", "content": [_part(part) for part in message.parts]}
        else:
            item = {"role": message.role, "content": message.content}
        out.append(item)
    if shown:
        out.append({"role": "user", "content": shown})
    return out


def _tool_message(message: Message, provider: str, shown: list[dict[str, Any]]) -> dict[str, Any]:
    """A `tool` message; the result's images are added to `shown`, to follow in a user message."""
    if not message.tool_call_id:
        raise BadRequestError(
            "a tool message needs the tool_call_id of the call it answers", provider=provider
        )
    content = message.content
    if message.parts:
        images = [part for part in message.parts if isinstance(part, Image)]
        shown.append({"type": "text", "text": _images_label(message)})
        shown.extend(_part(image) for image in images)
        if not content:
            some = "an image" if len(images) == 1 else f"{len(images)} images"
            content = f"[the result is {some}, in the user message that follows]"
    return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}


def _images_label(message: Message) -> str:
    """The words before a tool result's images where they cannot go in the result itself."""
    tool = f"tool {message.name!r}" if message.name else "the tool"
    return f"Images returned by {tool} (call {message.tool_call_id}):"


def _part(part: Part) -> dict[str, Any]:
    """One content part of a user message: text, an image URL (or data URL), a PDF file."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, Image):
        url = part.url if part.data is None else data_url(str(part.media_type), part.data)
        return {"type": "image_url", "image_url": {"url": url}}
    return {
        "type": "file",
        "file": {"filename": part.name, "file_data": data_url(part.media_type, part.data)},
    }


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool specs as `{"type": "function", "function": {...}}` entries."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
        if tool.description:
            function["description"] = tool.description
        out.append({"type": "function", "function": function})
    return out


def openai_tool_choice(choice: ToolChoice) -> Any:
    """`auto` / `none` / `required`, or the named-function object for a tool name."""
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def openai_usage(raw: Any) -> Usage:
    """`usage` of a completion (or of the final stream chunk) as `Usage`; one request."""
    if not isinstance(raw, dict):
        return Usage(requests=1)
    prompt = raw.get("prompt_tokens_details")
    completion = raw.get("completion_tokens_details")
    return Usage(
        input_tokens=as_int(raw.get("prompt_tokens")),
        output_tokens=as_int(raw.get("completion_tokens")),
        requests=1,
        reasoning_tokens=as_int(completion.get("reasoning_tokens"))
        if isinstance(completion, dict)
        else 0,
        cache_read_tokens=as_int(prompt.get("cached_tokens")) if isinstance(prompt, dict) else 0,
    )


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some compat servers answer with content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _reasoning(part: dict[str, Any]) -> str:
    # vLLM renamed `reasoning_content` to `reasoning`; llama.cpp and LM Studio keep the old name.
    for key in ("reasoning_content", "reasoning"):
        value = part.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _tool_call(raw: Any, *, provider: str) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise ResponseFormatError(f"malformed tool call: {str(raw)[:200]!r}", provider=provider)
    function = raw["function"]
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ResponseFormatError("a tool call has no function name", provider=provider)
    call_id = raw.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else new_call_id(),
        name,
        parse_arguments(function.get("arguments"), provider=provider, tool=name),
    )


def first_choice(data: Any, *, provider: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first choice of a completion and its message (`{}` when it has none)."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ResponseFormatError("completion has no choices", provider=provider, body=data)
    message = choices[0].get("message")
    return choices[0], message if isinstance(message, dict) else {}


def parse_completion(data: Any, *, provider: str, model: str) -> ChatResponse:
    """A non-streamed chat completion as a `ChatResponse`."""
    if isinstance(data, dict) and data.get("error"):
        raise error_from_body(provider, data, status=None)
    choice, message = first_choice(data, provider=provider)
    raw_calls = message.get("tool_calls") or []
    if isinstance(message.get("function_call"), dict):  # the legacy functions API
        raw_calls = [*raw_calls, {"function": message["function_call"]}]
    calls = tuple(_tool_call(raw, provider=provider) for raw in raw_calls)
    text = _content_text(message.get("content"))
    finish = normalize_finish(choice.get("finish_reason"), has_tool_calls=bool(calls))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal and not text:
        text, finish = refusal, "content_filter"
    usage = openai_usage(data.get("usage"))
    return ChatResponse(
        Message("assistant", text, calls, reasoning=_reasoning(message) or None, usage=usage),
        finish_reason=finish,
        usage=usage,
        model=str(data.get("model") or model),
        id=data.get("id") if isinstance(data.get("id"), str) else None,
    )


class ChunkReaderBase:
    """The part of reading streamed completion chunks that OpenAI and GigaChat share.

    Every chunk is a JSON object that may be an error, name the model and
    carry usage; `data: [DONE]` ends the stream. A body that ends before
    `[DONE]` is whole only if a finish reason arrived.
    """

    __slots__ = ("_finish", "_model", "_provider", "_reasoning", "_text", "_usage", "done")

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._finish: Any = None
        self._usage: Usage | None = None
        self.done = False

    def _usage_of(self, raw: dict[str, Any]) -> Usage:
        """A chunk's `usage` in this dialect's fields."""
        return openai_usage(raw)

    def _chunk(self, sse: SSEEvent) -> dict[str, Any] | None:
        """The chunk an event holds, or `None` for `[DONE]`; notes its model and usage."""
        if sse.data.strip() == "[DONE]":
            self.done = True
            return None
        chunk = loads_event(sse.data, provider=self._provider)
        if not isinstance(chunk, dict):
            raise ResponseFormatError("stream chunk is not an object", provider=self._provider)
        if sse.event == "error" or chunk.get("error"):
            raise error_from_body(self._provider, chunk, status=None)
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self._model = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._usage = self._usage_of(chunk["usage"])
        return chunk

    def _closing_usage(self) -> Usage:
        """The answer's usage once it is whole; raises if the stream was cut short."""
        if not self.done and self._finish is None:
            raise ProviderConnectionError(
                "stream ended before the answer was complete (no [DONE])",
                provider=self._provider,
            )
        # A whole answer whose usage never came (the usage chunk and `[DONE]` were
        # cut off, or the server sends none): one request, its tokens unknown, not zero.
        return self._usage or Usage(requests=1, unmetered=1)


class ChunkReader(ChunkReaderBase):
    """Folds `chat.completion.chunk` events into deltas and the final response."""

    __slots__ = ("_calls", "_id", "_refusal")

    def __init__(self, *, provider: str, model: str) -> None:
        super().__init__(provider=provider, model=model)
        self._id: str | None = None
        self._refusal: list[str] = []
        self._calls = ToolCallAssembler()

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The deltas carried by one event; raises on an error event."""
        chunk = self._chunk(sse)
        if chunk is None:
            return []
        if isinstance(chunk.get("id"), str):
            self._id = chunk["id"]
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, events)
        return events

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = _reasoning(delta)
            if reasoning:
                self._reasoning.append(reasoning)
                events.append(ReasoningDelta(reasoning))
            for key, sink in (("content", self._text), ("refusal", self._refusal)):
                text = delta.get(key)
                if isinstance(text, str) and text:
                    sink.append(text)
                    events.append(TextDelta(text))
            for fragment in delta.get("tool_calls") or ():
                if isinstance(fragment, dict):
                    self._fragment(fragment, events)
            if isinstance(delta.get("function_call"), dict):
                self._fragment({"index": 0, "function": delta["function_call"]}, events)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            self._finish = reason

    def _fragment(self, fragment: dict[str, Any], events: list[StreamEvent]) -> None:
        function = fragment.get("function")
        function = function if isinstance(function, dict) else {}
        delta = self._calls.add(
            index=fragment.get("index"),
            id=fragment.get("id"),
            name=function.get("name"),
            arguments=function.get("arguments"),
        )
        if delta is not None:
            events.append(delta)

    def finish(self) -> list[StreamEvent]:
        """The closing events: ids generated for id-less calls, then `ResponseDone`."""
        usage = self._closing_usage()
        calls, late = self._calls.finish(provider=self._provider)
        text = "".join(self._text)
        finish = normalize_finish(self._finish, has_tool_calls=bool(calls))
        if self._refusal and not text:
            text, finish = "".join(self._refusal), "content_filter"
        message = Message(
            "assistant",
            text,
            calls,
            reasoning="".join(self._reasoning) or None,
            usage=usage,
        )
        done = ResponseDone(
            ChatResponse(message, finish_reason=finish, usage=usage, model=self._model, id=self._id)
        )
        return [*late, done]
