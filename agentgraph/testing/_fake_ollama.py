"""The Ollama native wire format (`/api/chat`, `/api/embed`), as the fake server speaks it."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from ..llm._model import ChatRequest, ChatResponse
from ..llm._replies import approx_tokens, split_text
from ._fake_common import Dialect, valid_dimensions
from ._fake_decode import decode_ollama
from ._fake_media import ollama_images_problem
from ._faults import ErrorResponse, StreamError

__all__ = ("OllamaDialect",)

_ROLES = ("system", "user", "assistant", "tool")
_THINK = (True, False, "low", "medium", "high", "max")
_MESSAGES = {
    404: "model not found, try pulling it first",
    500: "an error was encountered while running the model",
    503: "server busy, please try again.  maximum pending requests exceeded",
}
# Fixed, plausible timings (nanoseconds) keep responses deterministic.
_TIMINGS = {
    "total_duration": 1_500_000,
    "load_duration": 100_000,
    "prompt_eval_duration": 400_000,
    "eval_duration": 1_000_000,
}


def _bad(message: str) -> ErrorResponse:
    return ErrorResponse(400, message=message)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class OllamaDialect(Dialect):
    """Ollama `/api/chat` and `/api/embed`. No authentication, like a local server."""

    name = "ollama"
    stream_media_type = "application/x-ndjson"

    def is_stream(self, body: Mapping[str, Any]) -> bool:
        # Ollama streams unless told otherwise.
        return body.get("stream", True) is not False

    def error_body(self, error: ErrorResponse, headers: Mapping[str, str]) -> dict[str, Any]:
        return {"error": error.message or _MESSAGES.get(error.status, f"error {error.status}")}

    def invalid_json(self) -> ErrorResponse:
        return _bad("invalid character in request body: not valid JSON")

    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _bad("model is required")
        if "think" in body and body["think"] not in _THINK:
            return _bad(f"invalid think value: {orjson.dumps(body['think']).decode()}")
        messages = body.get("messages")
        if messages is not None and not isinstance(messages, list):
            return _bad("messages must be an array")
        for i, message in enumerate(messages or ()):
            role = str(message.get("role", "")).lower() if isinstance(message, dict) else ""
            if role not in _ROLES:
                return _bad(f"messages[{i}]: invalid role {role!r}")
            problem = ollama_images_problem(message, i)
            if problem is not None:
                return problem
            for call in message.get("tool_calls") or ():
                arguments = (call.get("function") or {}).get("arguments")
                if not isinstance(arguments, dict):
                    return _bad(
                        "json: cannot unmarshal "
                        f"{type(arguments).__name__} into Go struct field "
                        "ToolCallFunction.messages.tool_calls.function.arguments of type "
                        "api.ToolCallFunctionArguments"
                    )
        return None

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        return decode_ollama(body)

    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": response.message.content}
        if response.message.reasoning:
            message["thinking"] = response.message.reasoning
        if response.message.tool_calls:
            message["tool_calls"] = _calls(response)
        return {**self._line(response, body, message), **self._final(response, body)}

    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        size = self.options.chunk_size
        source = response.message
        lines = [
            self._line(response, body, {"role": "assistant", "content": "", "thinking": piece})
            for piece in split_text(source.reasoning or "", size)
        ]
        lines.extend(
            self._line(response, body, {"role": "assistant", "content": piece})
            for piece in split_text(source.content, size)
        )
        if source.tool_calls:
            # Ollama sends each tool call whole, never as argument fragments.
            message = {"role": "assistant", "content": "", "tool_calls": _calls(response)}
            lines.append(self._line(response, body, message))
        final = self._line(response, body, {"role": "assistant", "content": ""})
        lines.append({**final, **self._final(response, body)})
        return [orjson.dumps(line) + b"\n" for line in lines]

    def stream_error(self, fault: StreamError) -> bytes:
        return orjson.dumps({"error": fault.message}) + b"\n"

    def malformed_event(self, body: bytes) -> bytes:
        return body + b"\n"

    def embed(self, body: Mapping[str, Any]) -> ErrorResponse | dict[str, Any]:
        """Validate an `/api/embed` request and build its response."""
        if not isinstance(body.get("model"), str) or not body["model"]:
            return _bad("model is required")
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(x, str) for x in inputs):
            return _bad("invalid input type")
        dim = body.get("dimensions")
        if not valid_dimensions(dim):
            return _bad("dimensions must be a positive integer")
        vectors = [self.options.embed(x, dim) for x in inputs]
        return {
            "model": body["model"],
            "embeddings": vectors,
            "total_duration": _TIMINGS["total_duration"],
            "load_duration": _TIMINGS["load_duration"],
            "prompt_eval_count": sum(approx_tokens(len(x)) for x in inputs),
        }

    def _line(
        self, response: ChatResponse, body: Mapping[str, Any], message: dict[str, Any]
    ) -> dict[str, Any]:
        model = response.model or body.get("model", "")
        return {"model": model, "created_at": _now(), "message": message, "done": False}

    def _final(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        # The native API says `stop` even when the answer calls tools.
        reason = "length" if response.finish_reason == "length" else "stop"
        return {
            "done": True,
            "done_reason": reason,
            **_TIMINGS,
            "prompt_eval_count": response.usage.input_tokens,
            "eval_count": response.usage.output_tokens,
        }


def _calls(response: ChatResponse) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id,
            "function": {"index": index, "name": call.name, "arguments": dict(call.arguments)},
        }
        for index, call in enumerate(response.message.tool_calls)
    ]
