"""The shared HTTP layer: error mapping, retry classification, stream decoding, policy."""

from __future__ import annotations

import gc
import logging
from contextlib import aclosing
from datetime import UTC, datetime
from email.utils import format_datetime

import anyio
import anyio.abc
import httpx
import pytest

from agentgraph import (
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
    UnsupportedSetting,
)
from agentgraph.llm import Capabilities, ProviderRetry, TextDelta
from agentgraph.llm._decode import iter_ndjson, iter_sse, stream_events
from agentgraph.llm._http import (
    error_from_body,
    error_from_exception,
    error_from_response,
    parse_retry_after,
)
from agentgraph.llm._transport import HttpTransport

from .support import Body, Server, Sleeps, json_response, stream_response

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdefSECRET"


def openai_error(message: str, kind: str, code: str | None = None) -> bytes:
    import orjson

    return orjson.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}})


# --- retry-after parsing ---------------------------------------------------------------


def test_retry_after_ms_wins_over_seconds():
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5


def test_retry_after_seconds_and_http_date():
    assert parse_retry_after({"retry-after": "2.5"}) == 2.5
    when = datetime(2030, 1, 1, 0, 0, 30, tzinfo=UTC)
    now = datetime(2030, 1, 1, 0, 0, 0, tzinfo=UTC).timestamp()
    header = {"retry-after": format_datetime(when, usegmt=True)}
    assert parse_retry_after(header, now=lambda: now) == pytest.approx(30.0)


def test_retry_after_past_date_or_garbage_is_none():
    past = format_datetime(datetime(2001, 1, 1, tzinfo=UTC), usegmt=True)
    assert parse_retry_after({"retry-after": past}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after-ms": "x"}) is None
    assert parse_retry_after({}) is None


# --- status classification -----------------------------------------------------------

CASES = [
    (400, openai_error("bad", "invalid_request_error"), BadRequestError, False),
    (
        401,
        openai_error("no", "invalid_request_error", "invalid_api_key"),
        AuthenticationError,
        False,
    ),
    (402, b'{"error": {"type": "billing_error", "message": "pay"}}', ProviderStatusError, False),
    (403, openai_error("region", "invalid_request_error"), AuthenticationError, False),
    (404, openai_error("nope", "invalid_request_error", "model_not_found"), NotFoundError, False),
    (408, b"", ProviderStatusError, True),
    (409, b"", ProviderStatusError, True),
    (
        413,
        b'{"type":"error","error":{"type":"request_too_large","message":"big"}}',
        BadRequestError,
        False,
    ),
    (422, b'{"detail": [{"loc": ["body"], "msg": "bad"}]}', BadRequestError, False),
    (
        429,
        openai_error("Rate limit reached", "tokens", "rate_limit_exceeded"),
        RateLimitError,
        True,
    ),
    (
        429,
        openai_error("You exceeded your current quota", "insufficient_quota", "insufficient_quota"),
        RateLimitError,
        False,
    ),
    (
        429,
        openai_error(
            "Request too large for gpt-4o: Limit 30000, Requested 31538",
            "tokens",
            "rate_limit_exceeded",
        ),
        RateLimitError,
        False,
    ),
    (499, b'{"error": "client canceled"}', ProviderStatusError, False),
    (500, openai_error("The server had an error", "server_error"), ServerError, True),
    (502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", ServerError, True),
    (503, b'{"error": "server busy, please try again."}', ServerError, True),
    (504, b'{"type":"error","error":{"type":"timeout_error","message":"slow"}}', ServerError, True),
    (
        529,
        b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        ServerError,
        True,
    ),
]


@pytest.mark.parametrize(("status", "body", "cls", "retryable"), CASES)
def test_status_classes(status, body, cls, retryable):
    error = error_from_response("p", status, {}, body)
    assert type(error) is cls
    assert error.retryable is retryable
    assert error.status == status
    assert f"HTTP {status}" in str(error)


def test_model_not_found_with_400_is_not_found():
    error = error_from_response("p", 400, {}, openai_error("gone", "x", "model_not_found"))
    assert isinstance(error, NotFoundError)


def test_html_body_message_is_readable():
    error = error_from_response("p", 502, {}, b"<html><title>502 Bad Gateway</title>nginx</html>")
    assert "502 Bad Gateway nginx" in str(error)
    assert isinstance(error.body, str)


def test_error_fields_from_each_provider_shape():
    anthropic = error_from_response(
        "a",
        400,
        {"request-id": "req_9"},
        b'{"type":"error","error":{"type":"invalid_request_error",'
        b'"message":"max_tokens: required"}}',
    )
    assert anthropic.request_id == "req_9"
    assert "max_tokens: required" in str(anthropic)
    ollama = error_from_response(
        "o", 404, {}, b'{"error": "model \\"x\\" not found, try pulling it first"}'
    )
    assert isinstance(ollama, NotFoundError) and "try pulling it first" in str(ollama)
    vllm = error_from_response(
        "v",
        400,
        {},
        b'{"object":"error","message":"auto tool choice","type":"BadRequestError","code":400}',
    )
    assert vllm.code == "400" and "auto tool choice" in str(vllm)
    giga = error_from_response("g", 400, {}, b'{"code": 5, "message": "scope is empty"}')
    assert giga.code == "5" and "scope is empty" in str(giga)
    empty = error_from_response("p", 500, {}, b"")
    assert "Internal Server Error" in str(empty)


def test_should_retry_header_and_cap():
    veto = error_from_response("p", 500, {"x-should-retry": "false"}, b"")
    assert veto.retryable is False
    allow = error_from_response("p", 418, {"x-should-retry": "true"}, b"")
    assert allow.retryable is True
    never = error_from_response("p", 400, {"x-should-retry": "true"}, b"")
    assert never.retryable is False
    too_long = error_from_response("p", 429, {"retry-after": "300"}, b"", max_retry_after=60)
    assert too_long.retryable is False and too_long.retry_after == 300.0


def test_secrets_are_scrubbed_from_message_and_body():
    body = openai_error(
        f"Incorrect API key provided: {KEY}.", "invalid_request_error", "invalid_api_key"
    )
    error = error_from_response("p", 401, {}, body, secrets=[KEY])
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in repr(error.body)
    html = error_from_response("p", 502, {}, f"<p>{KEY}</p>".encode(), secrets=[KEY])
    assert KEY not in str(html) and KEY not in repr(html.body)


def test_in_stream_errors_by_type():
    server = error_from_body("p", {"error": {"message": "boom", "type": "server_error"}})
    assert isinstance(server, ServerError) and server.retryable and server.status is None
    bad = error_from_body("p", {"error": {"message": "bad", "type": "invalid_request_error"}})
    assert isinstance(bad, BadRequestError) and not bad.retryable
    ollama = error_from_body("p", {"error": "runner crashed"})
    assert type(ollama) is ProviderStatusError and ollama.retryable
    quota = error_from_body("p", {"error": {"message": "x", "type": "insufficient_quota"}})
    assert not quota.retryable


def test_exception_mapping():
    request = httpx.Request("POST", "http://x")
    assert isinstance(
        error_from_exception("p", httpx.ConnectError("refused", request=request)),
        ProviderConnectionError,
    )
    timeout = error_from_exception("p", httpx.ReadTimeout("slow", request=request))
    assert isinstance(timeout, ProviderTimeout) and timeout.retryable
    cut = error_from_exception("p", httpx.RemoteProtocolError("peer closed", request=request))
    assert isinstance(cut, ProviderConnectionError) and cut.retryable
    unsupported = error_from_exception("p", httpx.UnsupportedProtocol("ftp", request=request))
    assert isinstance(unsupported, ProviderConnectionError) and not unsupported.retryable
    decoding = error_from_exception("p", httpx.DecodingError("gzip", request=request))
    assert isinstance(decoding, ResponseFormatError)


# --- retry through the transport -----------------------------------------------------


def transport(server: Server, sleeps: Sleeps, **kwargs) -> HttpTransport:
    return HttpTransport(
        "p",
        "http://test/v1",
        http_client=server.client(),
        retry=ProviderRetry(sleep=sleeps, **{"retry_after_jitter": 0.0, **kwargs}),
        secrets=[KEY],
    )


async def test_retries_server_errors_then_succeeds(anyio_backend, caplog):
    caplog.set_level(logging.DEBUG, logger="agentgraph.llm")
    sleeps = Sleeps()
    server = Server(
        httpx.Response(503),
        httpx.Response(502, content=b"<html>bad gateway</html>"),
        json_response({"ok": True}),
    )
    assert await transport(server, sleeps).post("/x", {"a": 1}) == {"ok": True}
    assert len(server.requests) == 3
    assert len(sleeps.calls) == 2
    assert 0.375 <= sleeps.calls[0] <= 0.5 and 0.75 <= sleeps.calls[1] <= 1.0
    assert "retry 1 of 2" in caplog.text and "retry 2 of 2" in caplog.text


async def test_gives_up_after_max_retries(anyio_backend):
    sleeps = Sleeps()
    server = Server(*(httpx.Response(500) for _ in range(3)))
    with pytest.raises(ServerError) as info:
        await transport(server, sleeps).post("/x", {})
    assert info.value.retryable
    assert len(server.requests) == 3 and len(sleeps.calls) == 2


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"retry-after-ms": "1500"}, 1.5), ({"retry-after": "3"}, 3.0)],
)
async def test_retry_after_is_honoured(anyio_backend, headers, expected):
    sleeps = Sleeps()
    server = Server(
        httpx.Response(429, headers=headers, content=openai_error("slow down", "requests")),
        json_response({}),
    )
    await transport(server, sleeps).post("/x", {})
    assert sleeps.calls == [expected]


async def test_retry_after_over_the_cap_fails_fast(anyio_backend):
    sleeps = Sleeps()
    server = Server(httpx.Response(429, headers={"retry-after": "600"}))
    with pytest.raises(RateLimitError) as info:
        await transport(server, sleeps, max_retry_after=120).post("/x", {})
    assert info.value.retry_after == 600.0 and not info.value.retryable
    assert sleeps.calls == [] and len(server.requests) == 1


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, openai_error("bad", "invalid_request_error")),
        (401, openai_error("key", "invalid_request_error", "invalid_api_key")),
        (403, b""),
        (404, openai_error("gone", "invalid_request_error", "model_not_found")),
        (422, b""),
        (
            429,
            openai_error(
                "You exceeded your current quota", "insufficient_quota", "insufficient_quota"
            ),
        ),
    ],
)
async def test_never_retried(anyio_backend, status, body):
    sleeps = Sleeps()
    server = Server(httpx.Response(status, content=body), json_response({}))
    with pytest.raises(ProviderStatusError):
        await transport(server, sleeps).post("/x", {})
    assert len(server.requests) == 1 and sleeps.calls == []


@pytest.mark.parametrize(
    "error", [httpx.ConnectError("refused"), httpx.ReadTimeout("slow"), httpx.ConnectTimeout("x")]
)
async def test_transport_failures_are_retried(anyio_backend, error):
    sleeps = Sleeps()
    server = Server(error, json_response({"ok": 1}))
    assert await transport(server, sleeps).post("/x", {}) == {"ok": 1}
    assert len(sleeps.calls) == 1


async def test_connection_error_after_all_attempts(anyio_backend):
    sleeps = Sleeps()
    server = Server(*(httpx.ConnectError("refused") for _ in range(2)))
    with pytest.raises(ProviderConnectionError) as info:
        await transport(server, sleeps, max_retries=1).post("/x", {})
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert len(server.requests) == 2


async def test_overload_waits_longer_and_max_retries_zero(anyio_backend):
    sleeps = Sleeps()
    server = Server(httpx.Response(529), json_response({}))
    await transport(server, sleeps).post("/x", {})
    assert 1.5 <= sleeps.calls[0] <= 2.0
    once = Server(httpx.Response(500))
    with pytest.raises(ServerError):
        await transport(once, sleeps, max_retries=0).post("/x", {})
    assert len(once.requests) == 1


async def test_non_json_200_is_retried_as_format_error(anyio_backend):
    sleeps = Sleeps()
    server = Server(httpx.Response(200, content=b"<html>proxy</html>"), json_response([1]))
    assert await transport(server, sleeps).post("/x", {}) == [1]
    broken = Server(*(httpx.Response(200, content=b"{oops") for _ in range(3)))
    with pytest.raises(ResponseFormatError):
        await transport(broken, sleeps).post("/x", {})


async def test_request_is_json_and_headers_merge(anyio_backend):
    server = Server(json_response({}))
    http = HttpTransport("p", "http://test/v1/", headers={"x-a": "1"}, http_client=server.client())
    await http.post("/chat", {"schema": {"type": "object"}}, headers={"x-b": "2"})
    request = server.requests[0]
    assert str(request.url) == "http://test/v1/chat"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-a"] == "1" and request.headers["x-b"] == "2"


async def test_owned_client_is_closed_and_injected_is_not(anyio_backend):
    server = Server()
    injected = server.client()
    http = HttpTransport("p", "http://test", http_client=injected)
    await http.aclose()
    assert not injected.is_closed
    owned = HttpTransport("p", "http://test")
    client = owned._http()
    await owned.aclose()
    assert client.is_closed


def test_repr_hides_credentials_in_url():
    http = HttpTransport("p", "http://user:hunter2@host:1/v1", secrets=["hunter2"])
    assert "hunter2" not in repr(http)


# --- stream decoding -----------------------------------------------------------------


def raw(chunks: list[bytes], error: Exception | None = None) -> httpx.Response:
    return httpx.Response(200, stream=Body(chunks, error))


async def test_sse_framing(anyio_backend):
    chunks = [
        b": comment\r\n",
        b"event: one\r\ndata: a\r\ndata: b\r\n\r\n",
        b"data: plain\n",
        b"\n",
        b"data:nospace\n\n",
        b"id: 3\nretry: 10\n\n",
        b"data: never dispatched",
    ]
    events = [e async for e in iter_sse(raw(chunks), provider="p")]
    assert [(e.event, e.data) for e in events] == [
        ("one", "a\nb"),
        ("message", "plain"),
        ("message", "nospace"),
    ]


async def test_sse_read_error_becomes_provider_error(anyio_backend):
    response = raw([b"data: 1\n\n"], httpx.ReadError("reset"))
    with pytest.raises(ProviderConnectionError):
        _ = [e async for e in iter_sse(response, provider="p")]


async def test_ndjson(anyio_backend):
    lines = [e async for e in iter_ndjson(raw([b'{"a":1}\n\n', b'{"b"', b":2}\n"]), provider="p")]
    assert lines == [{"a": 1}, {"b": 2}]
    with pytest.raises(ResponseFormatError):
        _ = [e async for e in iter_ndjson(raw([b"not json\n"]), provider="p")]


async def test_stream_events_closes_on_cancel_and_propagates(anyio_backend):
    body = Body([b"x", b"y"])
    response = stream_response([])
    response.stream = body

    async def open_response() -> httpx.Response:
        return response

    async def decode(_: httpx.Response):
        yield TextDelta("first")
        await anyio.sleep(10)
        yield TextDelta("never")

    seen = []
    with anyio.move_on_after(0.05) as scope:
        async with stream_events(open_response, decode) as events:
            async for event in events:
                seen.append(event)
    assert scope.cancelled_caught
    assert seen == [TextDelta("first")]
    assert body.closed


async def test_stream_error_after_a_delta_is_not_retryable(anyio_backend):
    async def open_response() -> httpx.Response:
        return stream_response([])

    async def decode(_: httpx.Response):
        yield TextDelta("part")
        raise ServerError("gone", provider="p")

    with pytest.raises(ServerError) as info:
        async with stream_events(open_response, decode) as events:
            async for _ in events:
                pass
    assert info.value.retryable is False


async def test_loopback_stream_left_early_leaves_nothing_behind(anyio_backend):
    """A real socket: leaving a stream early closes it, with no generator left suspended."""

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            await respond(stream)

    async def respond(stream: anyio.abc.SocketStream) -> None:
        await stream.receive()
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        try:
            await stream.send(head + b"transfer-encoding: chunked\r\n\r\n")
            for i in range(100):
                data = f"data: {i}\n\n".encode()
                await stream.send(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                await anyio.sleep(0.01)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the client hung up, as intended

    async def decode(response: httpx.Response):
        async with aclosing(iter_sse(response, provider="p")) as sse:
            async for event in sse:
                yield TextDelta(event.data)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        async with httpx.AsyncClient() as client:
            http = HttpTransport("p", f"http://127.0.0.1:{port}", http_client=client)
            async with stream_events(lambda: http.open("/s", {}), decode) as events:
                async for event in events:
                    assert event == TextDelta("0")
                    break
            gc.collect()
            await anyio.sleep(0.02)
        tg.cancel_scope.cancel()


# --- capability policy ---------------------------------------------------------------


def test_capabilities_policy(caplog):
    assert Capabilities().allows("temperature", model="m")
    assert not Capabilities(on_unsupported="ignore").allows("think", model="m", default=False)
    with caplog.at_level(logging.DEBUG, logger="agentgraph.llm"):
        assert not Capabilities(temperature=False).allows("temperature", model="m", reason="why")
    assert "does not support temperature (why)" in caplog.text
    with pytest.raises(UnsupportedSetting, match="think"):
        Capabilities(think=False, on_unsupported="fail").allows("think", model="m")
    assert Capabilities(think=True).allows("think", model="m", default=False)


def test_provider_error_is_catchable_as_root():
    assert issubclass(ServerError, ProviderError)


def test_a_per_minute_limit_mentioning_billing_is_retried_after_its_wait():
    body = openai_error(
        "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3, Used 3, "
        "Requested 1. Please try again in 20s. Visit https://platform.openai.com/account/billing "
        "to add a payment method.",
        "requests",
        "rate_limit_exceeded",
    )
    error = error_from_response("openai", 429, {"retry-after": "20"}, body)
    assert isinstance(error, RateLimitError) and error.retryable and error.retry_after == 20
