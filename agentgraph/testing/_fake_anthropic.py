"""The Anthropic Messages wire format, as the fake server speaks it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from ..llm._messages import Message
from ..llm._model import ChatRequest, ChatResponse
from ..llm._replies import ids, split_text
from ._fake_cache import PromptCache
from ._fake_common import Dialect
from ._fake_decode import decode_anthropic
from ._fake_media import anthropic_media_problem
from ._faults import ErrorResponse, StreamError

__all__ = ("AnthropicDialect",)

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_MESSAGES = {
    401: "invalid x-api-key",
    404: "model: not found",
    429: "Number of request tokens has exceeded your per-minute rate limit.",
    500: "Internal server error",
    529: "Overloaded",
}
_STOP = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


_THINKING = ("thinking", "redacted_thinking")


def _bad(message: str) -> ErrorResponse:
    return ErrorResponse(400, message=message)


def _sse(kind: str, data: Mapping[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps({"type": kind, **data}) + b"\n\n"


class AnthropicDialect(Dialect):
    """Anthropic `/v1/messages`."""

    name = "anthropic"
    call_prefix = "toolu_fake"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._message_id = ids("msg_fake")
        self._request_id = ids("req_fake")
        self.cache = PromptCache()

    def response_headers(self) -> dict[str, str]:
        return {"request-id": self._request_id()}

    def auth_problem(self, headers: Mapping[str, str]) -> ErrorResponse | None:
        bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
        key = headers.get("x-api-key") or bearer
        if not key:
            return ErrorResponse(401, message="x-api-key header is required")
        if self.options.api_key is not None and key != self.options.api_key:
            return ErrorResponse(401)
        if not headers.get("anthropic-version"):
            return _bad("anthropic-version: header is required")
        return None

    def error_body(self, error: ErrorResponse, headers: Mapping[str, str]) -> dict[str, Any]:
        kind = error.error_type or _TYPES.get(
            error.status, "api_error" if error.status >= 500 else "invalid_request_error"
        )
        message = error.message or _MESSAGES.get(error.status, f"Error {error.status}")
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": headers.get("request-id"),
        }

    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        if not isinstance(body.get("model"), str):
            return _bad("model: Field required")
        max_tokens = body.get("max_tokens")
        if max_tokens is None:
            return _bad("max_tokens: Field required")
        if not isinstance(max_tokens, int) or max_tokens < 1:
            return _bad("max_tokens: Input should be a valid integer greater than or equal to 1")
        thinking = body.get("thinking") or {}
        if thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return _bad(
                    "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                )
            if budget >= max_tokens:
                return _bad("`max_tokens` must be greater than `thinking.budget_tokens`.")
        for i, tool in enumerate(body.get("tools") or ()):
            if not isinstance(tool, dict) or "name" not in tool or "input_schema" not in tool:
                return _bad(f"tools.{i}: each tool needs a `name` and an `input_schema`")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _bad("messages: at least one message is required")
        problem = _check_messages(messages) or anthropic_media_problem(body)
        if problem is None and thinking.get("type") in ("enabled", "adaptive"):
            problem = _check_thinking(messages)
        return problem

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        return decode_anthropic(body)

    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "id": response.id or self._message_id(),
            "type": "message",
            "role": "assistant",
            "model": response.model or body.get("model", ""),
            "content": _blocks(response.message),
            "stop_reason": _stop(response),
            "stop_sequence": None,
            "usage": self._usage(response, body),
        }

    def _usage(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, int]:
        usage = response.usage
        cached = self.cache.usage(body)
        if cached is not None:  # breakpoints: the fake's own cache says what was read and written
            fresh, written, read = cached
        else:  # Anthropic counts cache reads and writes apart from `input_tokens`.
            written, read = usage.cache_write_tokens, usage.cache_read_tokens
            fresh = max(0, usage.input_tokens - read - written)
        return {
            "input_tokens": fresh,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
        }

    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        whole = self.render(response, body)
        usage = dict(whole["usage"], output_tokens=1)
        start = dict(whole, content=[], stop_reason=None, usage=usage)
        events = [_sse("message_start", {"message": start}), _sse("ping", {})]
        for index, block in enumerate(whole["content"]):
            events.extend(self._block_events(index, block))
        events.append(
            _sse(
                "message_delta",
                {
                    "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": whole["usage"]["output_tokens"]},
                },
            )
        )
        events.append(_sse("message_stop", {}))
        return events

    def _block_events(self, index: int, block: Mapping[str, Any]) -> list[bytes]:
        size = self.options.chunk_size
        kind = block["type"]
        if kind == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in split_text(block["text"], size)]
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in split_text(block["thinking"], size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            empty = {**block, "input": {}}
            text = orjson.dumps(block["input"]).decode()
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in ["", *split_text(text, size)]
            ]
        return [
            _sse("content_block_start", {"index": index, "content_block": empty}),
            *(_sse("content_block_delta", {"index": index, "delta": d}) for d in deltas),
            _sse("content_block_stop", {"index": index}),
        ]

    def stream_error(self, fault: StreamError) -> bytes:
        error = {"type": fault.error_type or "overloaded_error", "message": fault.message}
        return _sse("error", {"error": error})

    def malformed_event(self, body: bytes) -> bytes:
        return b"event: content_block_delta\ndata: " + body + b"\n\n"


def _stop(response: ChatResponse) -> str:
    reason = response.finish_reason or "stop"
    return _STOP.get(reason, reason)


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if message.reasoning:
        blocks.append(
            {
                "type": "thinking",
                "thinking": message.reasoning,
                "signature": thinking_signature(message.reasoning),
            }
        )
    if message.content or not message.tool_calls:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": dict(call.arguments)}
        for call in message.tool_calls
    )
    return blocks


def _content(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def thinking_signature(thinking: str) -> str:
    """The signature this server gives a thinking block: checkable without keeping state."""
    return "sig_" + hashlib.blake2b(thinking.encode(), digest_size=16).hexdigest()


def _check_thinking(messages: list[dict[str, Any]]) -> ErrorResponse | None:
    """With thinking on, thinking blocks come back unchanged and lead a tool-using turn."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
    for i, message in enumerate(messages):
        blocks = [b for b in _content(message) if isinstance(b, dict)]
        for j, block in enumerate(blocks):
            if block.get("type") == "thinking" and block.get("signature") != thinking_signature(
                str(block.get("thinking", ""))
            ):
                return _bad(f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block")
        uses_tools = any(b.get("type") == "tool_use" for b in blocks)
        if i == last and uses_tools and blocks[0].get("type") not in _THINKING:
            return _bad(
                f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                f"found `{blocks[0].get('type')}`. When `thinking` is enabled, a final "
                "`assistant` message that uses tools must start with its thinking block."
            )
    return None


def _check_messages(messages: list[Any]) -> ErrorResponse | None:
    pending: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            return _bad(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        blocks = [b for b in _content(message) if isinstance(b, dict)]
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        missing = [call_id for call_id in pending if call_id not in results]
        if missing:
            return _bad(
                f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                "corresponding `tool_result` block in the next message."
            )
        extra = [r for r in results if r not in pending]
        if extra:
            return _bad(
                f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                f"{', '.join(map(str, extra))}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message."
            )
        for j, block in enumerate(blocks):
            text = block.get("text")
            if block.get("type") == "text" and isinstance(text, str) and not text.strip():
                return _bad(
                    f"messages.{i}.content.{j}: text content blocks must contain "
                    "non-whitespace text"
                )
        pending = []
        for j, block in enumerate(blocks):
            if block.get("type") != "tool_use":
                continue
            if role != "assistant" or not isinstance(block.get("input"), dict):
                return _bad(
                    f"messages.{i}.content.{j}.tool_use.input: Input should be a "
                    "valid dictionary (and tool_use belongs to assistant turns)"
                )
            pending.append(str(block.get("id")))
    if pending:
        return _bad(
            f"messages.{len(messages) - 1}: `tool_use` ids were found without `tool_result` "
            f"blocks immediately after: {', '.join(pending)}. Each `tool_use` block must have "
            "a corresponding `tool_result` block in the next message."
        )
    return None
