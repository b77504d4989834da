"""Anthropic Messages wire format: content blocks out, messages and named events in."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import orjson

from .._core._errors import BadRequestError, ProviderConnectionError, ResponseFormatError
from ._assemble import as_int, new_call_id, normalize_finish, parse_arguments, wire_arguments
from ._content import Image, Part
from ._decode import SSEEvent, loads_event
from ._http import error_from_body
from ._messages import Message, ToolCall, Usage
from ._model import (
    ChatResponse,
    ReasoningDelta,
    ResponseDone,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
)

__all__ = (
    "MAX_BREAKPOINTS",
    "THINKING_KEY",
    "EventReader",
    "anthropic_messages",
    "anthropic_usage",
    "mark_cache",
    "parse_message",
)

THINKING_KEY = "anthropic.thinking"
"""`Message.provider_data` key of the thinking blocks that must go back verbatim."""


def _media_block(part: Part) -> dict[str, Any]:
    """A text, image or document block of a user turn."""
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, Image):
        source: dict[str, Any] = (
            {"type": "url", "url": part.url}
            if part.data is None
            else {
                "type": "base64",
                "media_type": part.media_type,
                "data": base64.b64encode(part.data).decode(),
            }
        )
        return {"type": "image", "source": source}
    return {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": part.media_type,
            "data": base64.b64encode(part.data).decode(),
        },
        "title": part.name,
    }


def _blocks(message: Message) -> list[dict[str, Any]]:
    # whitespace-only text says nothing, and the API refuses it
    return [_media_block(p) for p in message.parts if not isinstance(p, str) or p.strip()]


def _user_blocks(message: Message, provider: str) -> list[dict[str, Any]]:
    if message.role != "tool":
        if message.parts:
            return _blocks(message)
        # Anthropic refuses text blocks holding only whitespace; such text says nothing.
        return [{"type": "text", "text": message.content}] if message.content.strip() else []
    if not message.tool_call_id:
        raise BadRequestError(
            "a tool message needs the tool_call_id of the call it answers", provider=provider
        )
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if message.parts:  # a result's text and images, as blocks of its own
        block["content"] = _blocks(message)
    elif message.content:
        block["content"] = message.content
    if message.is_error:
        block["is_error"] = True
    return [block]


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    # Thinking blocks go back unchanged (signature included) or the API refuses the turn.
    blocks: list[dict[str, Any]] = [
        dict(block)
        for block in message.provider_data.get(THINKING_KEY, ())
        if isinstance(block, dict)
    ]
    if message.content.strip():  # "\n\n" beside a tool call is refused, and says nothing
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": wire_arguments(call.arguments),
        }
        for call in message.tool_calls
    )
    return blocks


def anthropic_messages(
    messages: Sequence[Message], *, provider: str
) -> tuple[str, list[dict[str, Any]]]:
    """`(system, messages)`: system text lifted out, consecutive same-role turns merged.

    Tool results become `tool_result` blocks of a user turn, placed before any
    text of that turn as the API requires.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        if message.role == "assistant":
            role, blocks = "assistant", _assistant_blocks(message)
        else:
            role, blocks = "user", _user_blocks(message, provider)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return "\n\n".join(part for part in system if part), turns


MAX_BREAKPOINTS = 4
"""The most `cache_control` breakpoints one request may carry."""


def mark_cache(body: dict[str, Any], ttl: str | None = None) -> None:
    """Put prompt-cache breakpoints on `body`: last tool, system, and the last two user turns.

    The cached prefix runs tools, system, messages. Marking the last tool and
    the system keeps them cached when only the conversation changes; marking
    the newest user turn writes the conversation so far, and marking the one
    before it reads what the previous request wrote, however many blocks the
    turn between them added. Never more than `MAX_BREAKPOINTS`.
    """
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl is not None:
        marker["ttl"] = ttl
    used = 0
    tools = body.get("tools")
    if tools:
        tools[-1] = {**tools[-1], "cache_control": marker}
        used += 1
    system = body.get("system")
    if system:
        body["system"] = [{"type": "text", "text": system, "cache_control": marker}]
        used += 1
    turns = 0
    for turn in reversed(body["messages"]):
        if turns == 2 or used == MAX_BREAKPOINTS:
            break
        if turn["role"] == "user" and turn["content"]:
            turn["content"][-1] = {**turn["content"][-1], "cache_control": marker}
            turns += 1
            used += 1


def anthropic_usage(raw: Any, previous: Usage | None = None) -> Usage:
    """`usage` as `Usage`; input counts cache reads and writes. Stream values are cumulative."""
    if not isinstance(raw, dict):
        return previous or Usage(requests=1)
    base = previous or Usage(requests=1)

    def pick(key: str) -> int | None:
        return as_int(raw[key]) if raw.get(key) is not None else None

    fresh, written, read, output = (
        pick("input_tokens"),
        pick("cache_creation_input_tokens"),
        pick("cache_read_input_tokens"),
        pick("output_tokens"),
    )
    cached = base.cache_read_tokens if read is None else read
    stored = base.cache_write_tokens if written is None else written
    if fresh is None and written is None and read is None:
        input_tokens = base.input_tokens
    else:
        if fresh is None:  # a later event that restates only the cache counts
            fresh = max(0, base.input_tokens - base.cache_read_tokens - base.cache_write_tokens)
        input_tokens = fresh + stored + cached
    return Usage(
        input_tokens=input_tokens,
        output_tokens=base.output_tokens if output is None else output,
        requests=1,
        cache_read_tokens=cached,
        cache_write_tokens=stored,
    )


def parse_message(
    data: Any, *, provider: str, model: str, usage: Usage | None = None
) -> ChatResponse:
    """A Messages response as a `ChatResponse` (`usage` overrides the body's, for streams)."""
    if isinstance(data, dict) and data.get("type") == "error":
        raise error_from_body(provider, data, status=None)
    content = data.get("content") if isinstance(data, dict) else None
    if not isinstance(content, list):
        raise ResponseFormatError("message has no content list", provider=provider, body=data)
    text: list[str] = []
    reasoning: list[str] = []
    thinking: list[dict[str, Any]] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(block)
            reasoning.append(str(block.get("thinking") or ""))
        elif kind == "tool_use":
            name = block.get("name")
            if not isinstance(name, str) or not name:
                raise ResponseFormatError("a tool_use block has no name", provider=provider)
            call_id = block.get("id")
            calls.append(
                ToolCall(
                    call_id if isinstance(call_id, str) and call_id else new_call_id(),
                    name,
                    parse_arguments(block.get("input"), provider=provider, tool=name),
                )
            )
    usage = usage or anthropic_usage(data.get("usage"))
    message = Message(
        "assistant",
        "".join(text),
        tuple(calls),
        reasoning="".join(reasoning) or None,
        usage=usage,
        provider_data={THINKING_KEY: tuple(thinking)} if thinking else {},
    )
    return ChatResponse(
        message,
        finish_reason=normalize_finish(data.get("stop_reason"), has_tool_calls=bool(calls)),
        usage=usage,
        model=str(data.get("model") or model),
        id=data.get("id") if isinstance(data.get("id"), str) else None,
    )


_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}


class _Block:
    """One content block being streamed: its start object and the pieces of its body."""

    __slots__ = ("data", "parts", "signature", "tool")

    def __init__(self, data: dict[str, Any], tool: int | None) -> None:
        self.data = data
        self.tool = tool
        self.parts: list[str] = []
        self.signature: list[str] = []

    def build(self, provider: str) -> dict[str, Any]:
        block = self.data
        body = "".join(self.parts)
        kind = block.get("type")
        if self.tool is not None:
            name = str(block.get("name") or "")
            block["input"] = parse_arguments(body, provider=provider, tool=name)
        elif kind in ("text", "thinking"):
            block[kind] = str(block.get(kind) or "") + body
        if self.signature:
            block["signature"] = str(block.get("signature") or "") + "".join(self.signature)
        return block


class EventReader:
    """Folds the named events of a Messages stream into deltas and the final response.

    Blocks are keyed by their `index`, never by "the latest tool", so fragments
    of different blocks can never be mixed up.
    """

    __slots__ = ("_blocks", "_id", "_model", "_provider", "_stop", "_tools", "_usage", "done")

    def __init__(self, *, provider: str, model: str) -> None:
        self._provider = provider
        self._model = model
        self._id: str | None = None
        self._blocks: dict[int, _Block] = {}
        self._tools = 0
        self._stop: Any = None
        self._usage: Usage | None = None
        self.done = False

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The deltas carried by one event; raises on an `error` event."""
        data = loads_event(sse.data, provider=self._provider)
        if not isinstance(data, dict):
            raise ResponseFormatError("stream event is not an object", provider=self._provider)
        kind = data.get("type", sse.event)
        if kind == "error":
            raise error_from_body(self._provider, data, status=None)
        if kind == "message_start" and isinstance(data.get("message"), dict):
            start = data["message"]
            self._id = start.get("id") if isinstance(start.get("id"), str) else None
            self._model = str(start.get("model") or self._model)
            self._usage = anthropic_usage(start.get("usage"))
        elif kind == "content_block_start":
            return self._start(data)
        elif kind == "content_block_delta":
            return self._delta(data)
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason"):
                self._stop = delta["stop_reason"]
            self._usage = anthropic_usage(data.get("usage"), self._usage)
        elif kind == "message_stop":
            self.done = True
        return []  # ping, content_block_stop and unknown events carry no delta

    def _start(self, data: dict[str, Any]) -> list[StreamEvent]:
        block = data.get("content_block")
        index = data.get("index")
        if not isinstance(block, dict) or not isinstance(index, int):
            raise ResponseFormatError("malformed content_block_start", provider=self._provider)
        block = dict(block)
        kind = block.get("type")
        if kind != "tool_use":
            self._blocks[index] = _Block(block, None)
            text = block.get("text") if kind == "text" else block.get("thinking")
            if isinstance(text, str) and text:
                return [TextDelta(text) if kind == "text" else ReasoningDelta(text)]
            return []
        if not (isinstance(block.get("id"), str) and block["id"]):
            block["id"] = new_call_id()
        slot = _Block(block, self._tools)
        self._tools += 1
        self._blocks[index] = slot
        if isinstance(block.get("input"), dict) and block["input"]:
            # Some proxies send the whole input up front instead of as deltas.
            slot.parts.append(orjson.dumps(block["input"]).decode())
        return [ToolCallDelta(self._tools - 1, block["id"], str(block.get("name") or ""))]

    def _delta(self, data: dict[str, Any]) -> list[StreamEvent]:
        slot = self._blocks.get(data.get("index", -1))
        delta = data.get("delta")
        if slot is None or not isinstance(delta, dict):
            raise ResponseFormatError(
                "content_block_delta for a block that never started", provider=self._provider
            )
        kind = str(delta.get("type"))
        if kind == "signature_delta":
            slot.signature.append(str(delta.get("signature") or ""))
            return []
        field = _DELTA_FIELDS.get(kind)
        part = delta.get(field) if field else None
        if not isinstance(part, str) or not part:
            return []  # citations and future delta types carry nothing we assemble
        if kind == "input_json_delta":
            if slot.tool is None:
                return []
            slot.parts.append(part)
            return [ToolCallDelta(slot.tool, arguments=part)]
        slot.parts.append(part)
        return [TextDelta(part) if kind == "text_delta" else ReasoningDelta(part)]

    def finish(self) -> list[StreamEvent]:
        """The closing event: the assembled response; raises if `message_stop` never came."""
        if not self.done:
            raise ProviderConnectionError(
                "stream ended before message_stop", provider=self._provider
            )
        content = [slot.build(self._provider) for _, slot in sorted(self._blocks.items())]
        data = {"id": self._id, "model": self._model, "content": content, "stop_reason": self._stop}
        response = parse_message(
            data, provider=self._provider, model=self._model, usage=self._usage
        )
        return [ResponseDone(response)]
