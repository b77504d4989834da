"""The HTTP layer every provider client shares: error mapping, what is retryable, secrets.

Everything that can go wrong on the wire becomes an error of the tree in
`agentgraph._core._errors` here, and only here:

- `error_from_response`: an HTTP error status with its body and headers,
- `error_from_body`: an error object inside a 200 response or stream,
- `error_from_exception`: an `httpx` transport exception.

Whether an error is retryable follows the provider classification: connection
errors, timeouts, 408, 409, 429 and 5xx (529 included) are; 400, 401, 402,
403, 404, 413 and 422 never are, nor a 429 that waiting cannot clear
(exhausted quota, a request larger than the limit). `x-should-retry: false`
vetoes a retry and `x-should-retry: true` allows one for any status not on the
never list. A `retry-after` longer than the cap fails fast. Secrets (keys,
tokens) are scrubbed from every message and body kept on an error. How a
client retries what is retryable is `ProviderRetry`, in `_http_retry`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import orjson

from .._core._errors import (
    AuthenticationError,
    BadRequestError,
    NotFoundError,
    ProviderConnectionError,
    ProviderError,
    ProviderStatusError,
    ProviderTimeout,
    RateLimitError,
    ResponseFormatError,
    ServerError,
)
from ._http_retry import ProviderRetry as ProviderRetry

__all__ = (
    "ProviderRetry",
    "dumps",
    "error_from_body",
    "scrub",
    "error_from_exception",
    "error_from_response",
    "parse_retry_after",
    "redact",
    "snippet",
)

_NEVER_RETRY = frozenset({400, 401, 402, 403, 404, 413, 422})
# Error codes and types that say waiting cannot help. Only these structured fields
# decide: prose varies, and a per-minute limit's message may mention billing too.
_CANNOT_CLEAR = frozenset(
    {
        "insufficient_quota",
        "billing_hard_limit_reached",
        "billing_not_active",
        "access_terminated",
        "quota_exceeded",
    }
)
_SERVER_TYPES = frozenset(
    {"api_error", "server_error", "overloaded_error", "timeout_error", "service_unavailable_error"}
)
_TAGS = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")
_BODY_LIMIT = 2000


def dumps(value: Any) -> bytes:
    """orjson-encode a request body; read-only mappings (tool schemas) become objects."""
    return orjson.dumps(value, default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"cannot encode {type(value).__name__} in a request body")


_SHORTEST_SECRET = 6


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every secret replaced by `***`.

    Strings shorter than a real key (test placeholders such as `"t"`) are left
    alone: masking them would garble every message without hiding anything.
    """
    for secret in secrets:
        if len(secret) >= _SHORTEST_SECRET and secret in text:
            text = text.replace(secret, "***")
    return text


def snippet(text: str, limit: int = 200) -> str:
    flat = _SPACES.sub(" ", _TAGS.sub(" ", text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def parse_retry_after(
    headers: Mapping[str, str], *, now: Callable[[], float] = time.time
) -> float | None:
    """The server's requested delay in seconds, or `None`.

    `retry-after-ms` wins over `retry-after`; `retry-after` is seconds or an
    HTTP-date. A date in the past or an unparsable value gives `None`.
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    delay = when.timestamp() - now()
    return delay if delay > 0 else None


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return orjson.dumps(value).decode()


def _describe(data: Any) -> tuple[str, str | None, str | None, str | None]:
    """`(message, type, code, request_id)` from any provider's error body.

    Shapes: OpenAI/Anthropic `{"error": {...}}`, Ollama `{"error": "..."}`,
    old vLLM's flat `{"object": "error", "message", "code"}`, GigaChat OAuth
    `{"code", "message"}`, FastAPI-style `{"detail"}`.
    """
    if not isinstance(data, dict):
        return "", None, None, None
    request_id = _text(data.get("request_id"))
    inner = data.get("error")
    if isinstance(inner, str):
        return inner, None, None, request_id
    source = inner if isinstance(inner, dict) else data
    message = _text(source.get("message")) or _text(source.get("detail")) or ""
    return message, _text(source.get("type")), _text(source.get("code")), request_id


def _status_class(status: int | None, kind: str | None, code: str | None) -> type[ProviderError]:
    if code == "model_not_found" or kind == "not_found_error":
        return NotFoundError
    if status is None:
        return _kind_class(kind, code)
    if status in (401, 403):
        return AuthenticationError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if status in (400, 413, 422):
        return BadRequestError
    if status >= 500:
        return ServerError
    return ProviderStatusError


def _kind_class(kind: str | None, code: str | None) -> type[ProviderError]:
    """The class of an error that arrived without a status (inside a stream)."""
    if kind in ("authentication_error", "permission_error"):
        return AuthenticationError
    if kind in ("rate_limit_error", "requests", "tokens", "insufficient_quota") or code in (
        "rate_limit_exceeded",
        "insufficient_quota",
    ):
        return RateLimitError
    if kind in ("invalid_request_error", "request_too_large"):
        return BadRequestError
    if kind in _SERVER_TYPES:
        return ServerError
    return ProviderStatusError


_OVER_LIMIT = re.compile(r"Limit:? ([\d,]+), Requested:? ([\d,]+)", re.IGNORECASE)


def _cannot_clear(message: str, kind: str | None, code: str | None) -> bool:
    if (kind or "").lower() in _CANNOT_CLEAR or (code or "").lower() in _CANNOT_CLEAR:
        return True
    # One request larger than a per-minute limit fails however long it waits.
    over = _OVER_LIMIT.search(message)
    return over is not None and _number(over.group(2)) > _number(over.group(1))


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def _retryable(
    status: int | None,
    cls: type[ProviderError],
    should_retry: str | None,
    retry_after: float | None,
    cannot_clear: bool,
    cap: float,
) -> bool:
    if (status in _NEVER_RETRY) or cannot_clear or should_retry == "false":
        return False
    if retry_after is not None and retry_after > cap:
        return False
    if should_retry == "true":
        return True
    if status is None:
        # Inside a 200 stream: worth another try unless the error says the request is wrong.
        return cls in (ServerError, RateLimitError, ProviderStatusError)
    return status in (408, 409, 429) or status >= 500


def scrub(error: ProviderError, secrets: Sequence[str]) -> ProviderError:
    """Mask `secrets` in an error built without them (a server may echo a key back)."""
    live = [x for x in secrets if len(x) >= _SHORTEST_SECRET]
    if not live:
        return error
    error.args = tuple(redact(a, live) if isinstance(a, str) else a for a in error.args)
    if error.body is not None:
        text = orjson.dumps(error.body, default=str).decode()
        if any(x in text for x in live):
            error.body = orjson.loads(redact(text, live))
    return error


def error_from_body(
    provider: str,
    data: Any,
    *,
    status: int | None = None,
    headers: Mapping[str, str] | None = None,
    raw: str = "",
    secrets: Sequence[str] = (),
    max_retry_after: float = 60.0,
) -> ProviderError:
    """The error for a parsed error body (`status=None` for an error inside a stream)."""
    headers = headers or {}
    message, kind, code, request_id = _describe(data)
    message = message or snippet(raw) or (httpx.codes.get_reason_phrase(status) if status else "")
    cls = _status_class(status, kind, code)
    retry_after = parse_retry_after(headers)
    retryable = _retryable(
        status,
        cls,
        headers.get("x-should-retry"),
        retry_after,
        (cls is RateLimitError or status is None) and _cannot_clear(message, kind, code),
        max_retry_after,
    )
    label = code or kind
    text = f"{message} [{label}]" if label and label not in message else message
    return cls(
        redact(text or "unknown error", secrets),
        provider=provider,
        status=status,
        body=data if data is not None else redact(raw[:_BODY_LIMIT], secrets),
        retry_after=retry_after,
        retryable=retryable,
        code=code,
        request_id=request_id or headers.get("x-request-id") or headers.get("request-id"),
    )


def error_from_response(
    provider: str,
    status: int,
    headers: Mapping[str, str],
    content: bytes,
    *,
    secrets: Sequence[str] = (),
    max_retry_after: float = 60.0,
) -> ProviderError:
    """The error for an HTTP error status; the body may be JSON, HTML or empty."""
    raw = redact(content.decode("utf-8", errors="replace"), secrets)
    data: Any = None
    try:
        data = orjson.loads(raw) if raw.strip() else None
    except orjson.JSONDecodeError:
        data = None
    if data is not None and not isinstance(data, dict):
        data = None
    return error_from_body(
        provider,
        data,
        status=status,
        headers=headers,
        raw=raw,
        secrets=secrets,
        max_retry_after=max_retry_after,
    )


def error_from_exception(
    provider: str, exc: httpx.HTTPError, *, secrets: Sequence[str] = ()
) -> ProviderError:
    """The error for an `httpx` exception raised while sending or reading."""
    detail = redact(str(exc), secrets) or type(exc).__name__
    if isinstance(exc, httpx.PoolTimeout):  # all connections busy: the message says what to do
        return ProviderTimeout(f"waited too long for a connection: {detail}", provider=provider)
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(
            f"request timed out ({type(exc).__name__}: {detail})", provider=provider
        )
    if isinstance(exc, httpx.NetworkError | httpx.RemoteProtocolError | httpx.ProxyError):
        return ProviderConnectionError(
            f"connection failed ({type(exc).__name__}: {detail})", provider=provider
        )
    if isinstance(exc, httpx.DecodingError):
        return ResponseFormatError(f"response could not be decoded: {detail}", provider=provider)
    return ProviderConnectionError(
        f"request could not be sent ({type(exc).__name__}: {detail})",
        provider=provider,
        retryable=False,
    )
