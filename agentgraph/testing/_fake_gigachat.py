"""The GigaChat wire format (OAuth token, legacy `functions` chat), as the fake server speaks it."""

from __future__ import annotations

import base64
import binascii
import threading
import time
import uuid
from collections.abc import Mapping
from typing import Any

import orjson

from ..llm._model import ChatRequest, ChatResponse
from ..llm._replies import approx_tokens, ids, split_text
from ._fake_common import Dialect, unix_now
from ._fake_decode import decode_gigachat
from ._faults import ErrorResponse, StreamError

__all__ = ("GigaChatDialect",)

_ROLES = ("system", "user", "assistant", "function", "search_result", "function_in_progress")
_SCOPES = ("GIGACHAT_API_PERS", "GIGACHAT_API_B2B", "GIGACHAT_API_CORP")
_FINISH = {"tool_calls": "function_call", "content_filter": "blacklist"}
_MESSAGES = {
    401: "Unauthorized",
    404: "No such model",
    429: "Too Many Requests",
    500: "Internal Server Error",
}


def _error(status: int, message: str) -> ErrorResponse:
    return ErrorResponse(status, message=message)


def _oauth_error(status: int, code: int, message: str) -> ErrorResponse:
    # The token endpoint has its own body shape: an integer code and a message.
    return ErrorResponse(status, body=orjson.dumps({"code": code, "message": message}))


class GigaChatDialect(Dialect):
    """GigaChat `/api/v2/oauth`, `/api/v1/chat/completions` and `/api/v1/embeddings`.

    Chat accepts only tokens this server issued and that have not expired.
    """

    name = "gigachat"

    def __init__(
        self, *args: Any, token_ttl: float, credentials: str | None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.token_ttl = token_ttl
        self.credentials = credentials
        self._tokens: dict[str, float] = {}
        self._lock = threading.Lock()
        self._token_id = ids("fake-gigachat-token-")
        self._state_id = ids("")

    def issue_token(
        self, headers: Mapping[str, str], form: Mapping[str, str]
    ) -> ErrorResponse | dict[str, Any]:
        """Answer the OAuth endpoint: a token for valid Basic credentials, RqUID and scope."""
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        try:
            valid = scheme == "Basic" and bool(base64.b64decode(credentials, validate=True))
        except (ValueError, binascii.Error):
            valid = False
        if not valid or (self.credentials is not None and credentials != self.credentials):
            return _oauth_error(401, 4, "Can't decode 'Authorization' header")
        try:
            uuid.UUID(headers.get("rquid", ""))
        except ValueError:
            return _oauth_error(400, 6, "RqUID must be a UUID")
        scope = form.get("scope")
        if scope not in _SCOPES:
            return _oauth_error(400, 5, f"invalid scope {scope!r}" if scope else "scope is empty")
        token = self._token_id()
        expires = time.time() + self.token_ttl
        with self._lock:
            self._tokens[token] = expires
        return {"access_token": token, "expires_at": int(expires * 1000)}

    def expire_tokens(self) -> None:
        """Make every issued token expired, so the next chat request gets a 401."""
        with self._lock:
            self._tokens = dict.fromkeys(self._tokens, 0.0)

    def forget_tokens(self) -> None:
        with self._lock:
            self._tokens.clear()

    def auth_problem(self, headers: Mapping[str, str]) -> ErrorResponse | None:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        with self._lock:
            expires = self._tokens.get(token) if scheme == "Bearer" else None
        if expires is None:
            return _error(401, "Unauthorized")
        if expires <= time.time():
            return _error(401, "Token has expired")
        return None

    def error_body(self, error: ErrorResponse, headers: Mapping[str, str]) -> dict[str, Any]:
        message = error.message or _MESSAGES.get(error.status, f"Error {error.status}")
        return {"status": error.status, "message": message}

    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return _error(422, "messages: field required")
        names = {f.get("name") for f in body.get("functions") or () if isinstance(f, dict)}
        choice = body.get("function_call")
        if isinstance(choice, dict) and choice.get("name") not in names:
            return _error(422, f"function_call: unknown function {choice.get('name')!r}")
        pending: str | None = None
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in _ROLES:
                return _error(422, f"messages[{i}].role: invalid role {role!r}")
            if role == "system" and i > 0:
                return _error(422, "system message must be the first message")
            if role == "function":
                problem = _result_problem(message, i, pending)
                if problem is not None:
                    return problem
                pending = None
                continue
            if pending is not None:
                return _error(422, f"messages[{i}]: function call {pending!r} has no result")
            call = message.get("function_call")
            if role == "assistant" and call is not None:
                if not isinstance(call, dict) or not isinstance(call.get("arguments", {}), dict):
                    return _error(422, f"messages[{i}].function_call.arguments: must be an object")
                pending = str(call.get("name"))
        return _error(422, f"function call {pending!r} has no result") if pending else None

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        return decode_gigachat(body)

    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "choices": [
                {
                    "message": self._message(response),
                    "index": 0,
                    "finish_reason": self._finish(response),
                }
            ],
            "created": unix_now(),
            "model": response.model or body.get("model", "GigaChat"),
            "usage": _usage(response),
            "object": "chat.completion",
        }

    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        whole = self.render(response, body)
        message = whole["choices"][0]["message"]
        deltas: list[dict[str, Any]] = [
            {"role": "assistant", "content": piece}
            for piece in split_text(response.message.content, self.options.chunk_size)
        ]
        if "function_call" in message:
            deltas.append(
                {
                    "role": "assistant",
                    "content": "",
                    "function_call": message["function_call"],
                    "functions_state_id": message["functions_state_id"],
                }
            )
        envelope = {
            "created": whole["created"],
            "model": whole["model"],
            "object": "chat.completion",
        }
        chunks = [{**envelope, "choices": [{"delta": d, "index": 0}]} for d in deltas]
        chunks.append(
            {
                **envelope,
                "usage": whole["usage"],
                "choices": [
                    {
                        "delta": {"content": ""},
                        "index": 0,
                        "finish_reason": whole["choices"][0]["finish_reason"],
                    }
                ],
            }
        )
        return [b"data: " + orjson.dumps(c) + b"\n\n" for c in chunks] + [b"data: [DONE]\n\n"]

    def stream_error(self, fault: StreamError) -> bytes:
        return b"data: " + orjson.dumps({"status": 500, "message": fault.message}) + b"\n\n"

    def embed(self, body: Mapping[str, Any]) -> ErrorResponse | dict[str, Any]:
        """Validate an embeddings request and build its response."""
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(x, str) for x in inputs)
        ):
            return _error(422, "input: a non-empty list of strings is required")
        data = [
            {
                "object": "embedding",
                "embedding": self.options.embed(text, None),
                "index": index,
                "usage": {"prompt_tokens": approx_tokens(len(text))},
            }
            for index, text in enumerate(inputs)
        ]
        return {"object": "list", "data": data, "model": body.get("model", "Embeddings")}

    def _message(self, response: ChatResponse) -> dict[str, Any]:
        source = response.message
        message: dict[str, Any] = {"role": "assistant", "content": source.content}
        if source.reasoning:
            message["reasoning_content"] = source.reasoning
        if len(source.tool_calls) > 1:
            raise ValueError(
                "GigaChat answers with at most one function call per turn; "
                f"the scripted reply has {len(source.tool_calls)}"
            )
        if source.tool_calls:
            call = source.tool_calls[0]
            message["function_call"] = {"name": call.name, "arguments": dict(call.arguments)}
            message["functions_state_id"] = str(uuid.UUID(int=int(self._state_id())))
        return message

    def _finish(self, response: ChatResponse) -> str:
        reason = response.finish_reason or "stop"
        return _FINISH.get(reason, reason)


def _usage(response: ChatResponse) -> dict[str, int]:
    usage = response.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "precached_prompt_tokens": usage.cache_read_tokens,
    }


def _result_problem(
    message: Mapping[str, Any], i: int, pending: str | None
) -> ErrorResponse | None:
    """The error for a function result: one without its call, or content that is not JSON text."""
    if pending is None or message.get("name") not in (None, pending):
        return _error(422, f"messages[{i}]: function result without a function call")
    content = message.get("content") or ""
    if not isinstance(content, str):  # text only: no parts, no images
        return _error(422, f"messages[{i}].content: str type expected")
    try:
        orjson.loads(content)
    except orjson.JSONDecodeError:
        return _error(422, "Invalid function result json string")
    return None
