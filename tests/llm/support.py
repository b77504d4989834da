"""Wire-format helpers for provider tests: canned responses over `httpx.MockTransport`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpx
import orjson

from agentgraph.llm import ProviderRetry


class Sleeps:
    """An injected sleep that records the requested waits instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def retry(sleeps: Sleeps, **kwargs: Any) -> ProviderRetry:
    # Exact waits, so tests can pin them; the jitter on a server's delay has its own tests.
    kwargs.setdefault("retry_after_jitter", 0.0)
    return ProviderRetry(sleep=sleeps, **kwargs)


class Body(httpx.AsyncByteStream):
    """A response body sent in pieces, optionally failing after the last one.

    An iterator object rather than a generator, like a socket: once closed it
    ends, and nothing is left suspended.
    """

    def __init__(self, chunks: Iterable[bytes], error: Exception | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.closed = False

    def __aiter__(self) -> Body:
        return self

    async def __anext__(self) -> bytes:
        if self.closed:
            raise StopAsyncIteration
        if self.chunks:
            return self.chunks.pop(0)
        if self.error is not None:
            error, self.error = self.error, None
            raise error
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.closed = True


def sse(*events: Any) -> list[bytes]:
    """SSE frames: a dict is a `data:` event, `(name, dict)` a named one, a str goes raw."""
    frames: list[bytes] = []
    for event in events:
        if isinstance(event, str):
            frames.append(event.encode())
        elif isinstance(event, tuple):
            name, data = event
            frames.append(f"event: {name}\ndata: {orjson.dumps(data).decode()}\n\n".encode())
        else:
            frames.append(f"data: {orjson.dumps(event).decode()}\n\n".encode())
    return frames


def ndjson(*lines: Any) -> list[bytes]:
    return [orjson.dumps(line) + b"\n" for line in lines]


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None):
    return httpx.Response(
        status,
        content=orjson.dumps(data),
        headers={"content-type": "application/json", **(headers or {})},
    )


def stream_response(
    chunks: list[bytes],
    *,
    error: Exception | None = None,
    content_type: str = "text/event-stream",
) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": content_type}, stream=Body(chunks, error))


Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Server:
    """Answers requests from a script, in order, and keeps every request it saw."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        assert self.answers, f"unexpected request {request.method} {request.url}"
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            if isinstance(answer, httpx.RequestError):
                answer.request = request
            raise answer
        response = answer(request) if callable(answer) else answer
        self.responses.append(response)
        return response

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))

    def body(self, index: int = -1) -> Any:
        return orjson.loads(self.requests[index].content)

    @property
    def paths(self) -> list[str]:
        return [request.url.path for request in self.requests]


async def collect(model: Any, request: Any) -> list[Any]:
    """Every event of a stream."""
    async with model.stream(request) as events:
        return [event async for event in events]
