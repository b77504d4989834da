"""Faults the fake provider server can inject into its next responses."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

__all__ = ("CutStream", "Delay", "ErrorResponse", "Fault", "MalformedJson", "StreamError")


def _frozen_headers(value: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType({k.lower(): v for k, v in value.items()})


@attrs.frozen
class ErrorResponse:
    """Answer with an error status and the provider's own error body.

    `message`, `code`, `error_type` (and OpenAI's `param`) fill the provider's
    body; each provider has defaults per status. `retry_after` and
    `retry_after_ms` add the `retry-after` and `retry-after-ms` headers;
    `headers` adds any other (an HTTP-date `retry-after`, `x-should-retry`,
    rate-limit headers). `body` replaces the body entirely, sent with
    `content_type`. A 502 without a `body` answers an HTML page, as a proxy in
    front of the API would.

    ```python
    ErrorResponse(429, retry_after=2)                 # rate limited
    ErrorResponse(429, code="insufficient_quota")      # OpenAI: quota exhausted
    ErrorResponse(529)                                 # Anthropic: overloaded
    ```
    """

    status: int = attrs.field(validator=[attrs.validators.ge(100), attrs.validators.le(599)])
    message: str | None = attrs.field(default=None, kw_only=True)
    code: str | None = attrs.field(default=None, kw_only=True)
    error_type: str | None = attrs.field(default=None, kw_only=True)
    param: str | None = attrs.field(default=None, kw_only=True)
    retry_after: float | None = attrs.field(default=None, kw_only=True)
    retry_after_ms: float | None = attrs.field(default=None, kw_only=True)
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_headers, kw_only=True)
    body: bytes | str | None = attrs.field(default=None, kw_only=True)
    content_type: str = attrs.field(default="application/json", kw_only=True)

    def response_headers(self) -> dict[str, str]:
        """The headers the error response carries besides its content type."""
        headers = dict(self.headers)
        if self.retry_after is not None:
            headers["retry-after"] = _seconds(self.retry_after)
        if self.retry_after_ms is not None:
            headers["retry-after-ms"] = _seconds(self.retry_after_ms)
        return headers


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@attrs.frozen
class Delay:
    """Wait `seconds` before the first byte, and `between_events` between stream events."""

    seconds: float = attrs.field(default=0.0, validator=attrs.validators.ge(0))
    between_events: float = attrs.field(default=0.0, kw_only=True, validator=attrs.validators.ge(0))


@attrs.frozen
class CutStream:
    """Close the connection after `after_events` stream events, with no end marker.

    On a non-streamed answer the connection closes halfway through the body.
    The cut answer uses up its scripted reply, as a generated answer would.
    With `clean=True` a stream instead ends normally after those events, as
    behind a proxy that drops the tail of a body (the usage chunk, `[DONE]`).
    """

    after_events: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    clean: bool = attrs.field(default=False, kw_only=True)


@attrs.frozen
class StreamError:
    """Send the provider's in-stream error event after `after_events` events, then end.

    OpenAI-style servers send `data: {"error": ...}`, Anthropic `event: error`,
    Ollama an `{"error": ...}` line. On a non-streamed answer it is ignored.
    """

    after_events: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    message: str = attrs.field(default="The server had an error while processing your request.")
    error_type: str | None = attrs.field(default=None, kw_only=True)


@attrs.frozen
class MalformedJson:
    """Answer 200 with a body that is not valid JSON (a truncated document by default)."""

    body: bytes = b'{"id": "broken", "choices": [{"index": 0, "message": {"role": '


Fault = ErrorResponse | Delay | CutStream | StreamError | MalformedJson
"""Anything `FakeServer.inject` accepts."""


@attrs.frozen
class FaultPlan:
    """The faults that apply to one request, gathered from the injected queue."""

    error: ErrorResponse | None = None
    delay: Delay | None = None
    cut: CutStream | None = None
    stream_error: StreamError | None = None
    malformed: MalformedJson | None = None

    @classmethod
    def of(cls, faults: tuple[Fault, ...]) -> FaultPlan:
        """Combine several faults; a later fault of the same kind wins."""
        slots: dict[str, Any] = {}
        for fault in faults:
            slots[_SLOT[type(fault)]] = fault
        return cls(**slots)


_SLOT: dict[type[Any], str] = {
    ErrorResponse: "error",
    Delay: "delay",
    CutStream: "cut",
    StreamError: "stream_error",
    MalformedJson: "malformed",
}

NO_FAULTS = FaultPlan()
