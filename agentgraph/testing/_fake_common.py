"""Pieces every fake provider shares: the recorded request, the dialect base, stream responses."""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import anyio
import attrs
import orjson
from starlette.responses import Response, StreamingResponse
from starlette.types import Send

from ..llm._model import ChatRequest, ChatResponse
from ..llm._replies import EmbeddingFunction, default_embedding, ids
from ._fake_quirks import OpenAIQuirks
from ._faults import ErrorResponse, StreamError

__all__ = (
    "Dialect",
    "EventStream",
    "RecordedRequest",
    "ServerOptions",
    "error_response",
    "json_response",
    "unix_now",
    "valid_dimensions",
)

_PROXY_PAGE = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n"
)


def _read_only(headers: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(headers))


@attrs.frozen
class RecordedRequest:
    """One request the fake server received, kept for assertions.

    `body` is the parsed JSON (or form fields for the GigaChat token endpoint);
    when the body was not valid JSON it is `None` and `raw` holds the bytes.
    `headers` has lower-case names. `chat_request()` decodes a chat body into
    the provider-neutral `ChatRequest`.
    """

    provider: str
    endpoint: str
    method: str
    path: str
    headers: Mapping[str, str] = attrs.field(converter=_read_only)
    body: Any
    raw: bytes = attrs.field(repr=False)
    stream: bool = False
    _decode: Callable[[Any], ChatRequest] | None = attrs.field(
        default=None, repr=False, eq=False, alias="decode"
    )

    def chat_request(self) -> ChatRequest:
        """The body as a provider-neutral request; `ValueError` for a non-chat request."""
        if self._decode is None or not isinstance(self.body, Mapping):
            raise ValueError(f"{self.method} {self.path} is not a chat request")
        try:
            return self._decode(self.body)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"cannot decode the {self.provider} chat request: {exc}") from exc


@attrs.frozen
class ServerOptions:
    """Server-wide settings the dialects read."""

    api_key: str | None = None
    chunk_size: int = 8
    embedding_dim: int = 8
    embedder: EmbeddingFunction | None = None
    openai_quirks: OpenAIQuirks = attrs.field(factory=OpenAIQuirks)

    def embed(self, text: str, dim: int | None) -> list[float]:
        """The vector for `text`: `dim` floats, or `embedding_dim` when not given."""
        size = dim or self.embedding_dim
        if self.embedder is not None:
            return [float(x) for x in self.embedder(text, size)]
        return default_embedding(text, size)


class Dialect(abc.ABC):
    """One provider's wire format: how its chat requests are checked, read and answered."""

    name = ""
    stream_media_type = "text/event-stream"
    call_prefix = "call_"

    def __init__(self, options: ServerOptions) -> None:
        self.options = options
        self.new_call_id = ids(self.call_prefix)

    def auth_problem(self, headers: Mapping[str, str]) -> ErrorResponse | None:
        """The error for missing or wrong credentials; None when they pass (or none are needed)."""
        return None

    def is_stream(self, body: Mapping[str, Any]) -> bool:
        """Whether the request asks for a streamed answer."""
        return body.get("stream") is True

    @abc.abstractmethod
    def validate(self, body: Mapping[str, Any]) -> ErrorResponse | None:
        """The error the real service gives for this chat body, or None when it is valid."""

    @abc.abstractmethod
    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        """A valid chat body as a provider-neutral request."""

    @abc.abstractmethod
    def render(self, response: ChatResponse, body: Mapping[str, Any]) -> dict[str, Any]:
        """The non-streamed answer to `body`."""

    @abc.abstractmethod
    def render_stream(self, response: ChatResponse, body: Mapping[str, Any]) -> list[bytes]:
        """The streamed answer to `body`, one encoded event per item."""

    @abc.abstractmethod
    def stream_error(self, fault: StreamError) -> bytes:
        """The in-stream error event."""

    @abc.abstractmethod
    def error_body(self, error: ErrorResponse, headers: Mapping[str, str]) -> dict[str, Any]:
        """The JSON error body for `error`; `headers` are the response's own."""

    def malformed_event(self, body: bytes) -> bytes:
        """A stream event carrying `body`, which is not valid JSON."""
        return b"data: " + body + b"\n\n"

    def invalid_json(self) -> ErrorResponse:
        """The error for a request body that is not JSON."""
        return ErrorResponse(400, message="The request body is not valid JSON.")

    def response_headers(self) -> dict[str, str]:
        """Headers every answer carries (request ids)."""
        return {}


def json_response(
    data: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(orjson.dumps(data), status, headers, media_type="application/json")


def error_response(dialect: Dialect, error: ErrorResponse) -> Response:
    """The provider-shaped error response for `error` (or its raw body override)."""
    headers = {**dialect.response_headers(), **error.response_headers()}
    if error.body is not None:
        content = error.body.encode() if isinstance(error.body, str) else error.body
        return Response(content, error.status, headers, media_type=error.content_type)
    if error.status == 502:
        return Response(_PROXY_PAGE, 502, headers, media_type="text/html")
    return json_response(dialect.error_body(error, headers), status=error.status, headers=headers)


class EventStream(StreamingResponse):
    """A streamed body sent one event per write, optionally paced or cut short.

    With `cut_after` the response stops after that many events without its end
    marker; the server then closes the connection, as a dropped stream would.
    """

    def __init__(
        self,
        events: Sequence[bytes],
        *,
        media_type: str,
        headers: Mapping[str, str] | None = None,
        cut_after: int | None = None,
        interval: float = 0.0,
        status: int = 200,
    ) -> None:
        super().__init__(_NoBody(), status, headers, media_type)
        self.events = events
        self.cut_after = cut_after
        self.interval = interval

    async def stream_response(self, send: Send) -> None:
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        for index, event in enumerate(self.events):
            if self.cut_after is not None and index >= self.cut_after:
                return
            if self.interval and index:
                await anyio.sleep(self.interval)
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


class _NoBody:
    def __aiter__(self) -> _NoBody:
        return self

    async def __anext__(self) -> bytes:
        raise StopAsyncIteration


def valid_dimensions(value: Any) -> bool:
    """Whether an embeddings `dimensions` field is absent or a positive integer."""
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


def unix_now() -> int:
    return int(time.time())
