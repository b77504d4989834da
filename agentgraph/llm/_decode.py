"""Stream decoding: server-sent events, NDJSON, and the guard around a stream of deltas."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing, asynccontextmanager
from typing import Any, Protocol

import anyio
import attrs
import httpx
import orjson

from .._core._errors import ProviderError, ResponseFormatError
from ._http import error_from_exception, redact, scrub
from ._model import StreamEvent

__all__ = (
    "SSEEvent",
    "SSEReader",
    "fold_sse",
    "iter_ndjson",
    "iter_sse",
    "loads_event",
    "stream_events",
)

_DRAIN_TIMEOUT = 1.0


@attrs.frozen
class SSEEvent:
    """One dispatched server-sent event: its `event:` name (`message` by default) and data."""

    event: str
    data: str


async def _lines(
    response: httpx.Response, *, provider: str, secrets: Sequence[str]
) -> AsyncGenerator[str, None]:
    """The body's lines; a transport failure while reading becomes a `ProviderError`."""
    lines = split_lines(response.aiter_text())
    while True:
        try:
            line = await anext(lines)
        except StopAsyncIteration:
            return
        except httpx.HTTPError as exc:
            raise error_from_exception(provider, exc, secrets=secrets) from exc
        try:
            yield line
        except BaseException:
            with anyio.CancelScope(shield=True):
                await _abandon(response, lines)
            raise


_BREAK = re.compile(r"\r\n|\r|\n")


async def split_lines(chunks: AsyncIterator[str]) -> AsyncGenerator[str, None]:
    """Lines of a text stream, ended only by CR, LF or CRLF (as SSE and NDJSON define them).

    `str.splitlines` and httpx's `aiter_lines` also end lines at U+2028,
    U+2029, U+0085 and other separators, which JSON strings may hold raw: a
    streamed answer containing one would be cut in the middle of an event.
    """
    buffer = ""
    async for chunk in chunks:
        buffer += chunk
        start = 0
        for found in _BREAK.finditer(buffer):
            if found.group() == "\r" and found.end() == len(buffer):
                break  # a CR at the end of a chunk may be the first half of a CRLF
            yield buffer[start : found.start()]
            start = found.end()
        buffer = buffer[start:]
    if buffer:
        yield buffer.removesuffix("\r")


async def _abandon(response: httpx.Response, lines: AsyncIterator[str]) -> None:
    """Close a response read only in part, then run its line iterator to the end.

    httpx and httpcore read a body through several nested async generators
    that nobody closes when the reader stops early; under trio each one is
    then reported as a `ResourceWarning` when collected. Once the connection
    is closed the chain ends at once (with an error or normally), which
    finalizes every generator in it.
    """
    await response.aclose()
    with anyio.move_on_after(_DRAIN_TIMEOUT):
        while True:
            try:
                await anext(lines)
            except StopAsyncIteration:
                return
            except Exception:  # the closed connection failing is the expected end
                return


async def iter_sse(
    response: httpx.Response, *, provider: str, secrets: Sequence[str] = ()
) -> AsyncGenerator[SSEEvent, None]:
    """Decode `text/event-stream` lines into events, following the SSE spec.

    `data:` lines accumulate until a blank line dispatches them; comments
    (`: ...`) and unknown fields are skipped; an event left without its blank
    line when the body ends is dropped, so a cut stream never yields half an event.
    """
    event = ""
    data: list[str] = []
    async with aclosing(_lines(response, provider=provider, secrets=secrets)) as lines:
        async for line in lines:
            if not line:
                if data:
                    yield SSEEvent(event or "message", "\n".join(data))
                event, data = "", []
                continue
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "data":
                data.append(value)
            elif field == "event":
                event = value


class SSEReader(Protocol):
    """Folds one provider's server-sent events into stream events."""

    @property
    def done(self) -> bool:
        """Whether the provider said the stream is over, so nothing more is read."""
        ...

    def feed(self, sse: SSEEvent) -> list[StreamEvent]:
        """The deltas carried by one event; raises on an error event."""
        ...

    def finish(self) -> list[StreamEvent]:
        """The closing events; raises `ProviderConnectionError` if the answer was cut short."""
        ...


async def fold_sse(
    response: httpx.Response, reader: SSEReader, *, provider: str, secrets: Sequence[str] = ()
) -> AsyncGenerator[StreamEvent, None]:
    """The events `reader` makes of `response`, read until it is done or the body ends."""
    sse = iter_sse(response, provider=provider, secrets=secrets)
    async with aclosing(sse) as events:
        async for event in events:
            try:
                deltas = reader.feed(event)
            except ProviderError as error:
                raise scrub(error, secrets) from error.__cause__
            for delta in deltas:
                yield delta
            if reader.done:
                break
    for delta in reader.finish():
        yield delta


async def iter_ndjson(
    response: httpx.Response, *, provider: str, secrets: Sequence[str] = ()
) -> AsyncGenerator[Any, None]:
    """Decode `application/x-ndjson`: one JSON value per non-blank line."""
    async with aclosing(_lines(response, provider=provider, secrets=secrets)) as lines:
        async for line in lines:
            if line.strip():
                yield loads_event(line, provider=provider, secrets=secrets)


def loads_event(text: str, *, provider: str, secrets: Sequence[str] = ()) -> Any:
    """Parse the JSON of one stream event, or raise `ResponseFormatError`."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        shown = redact(text, secrets)
        raise ResponseFormatError(
            f"stream event is not JSON: {shown[:200]!r}", provider=provider, body=shown[:2000]
        ) from exc


async def _guarded(events: AsyncGenerator[StreamEvent, None]) -> AsyncGenerator[StreamEvent, None]:
    """Pass events through; an error after the first one is no longer retryable."""
    reached = False
    try:
        async for event in events:
            reached = True
            yield event
    except ProviderError as exc:
        if reached:
            # The caller already acted on part of the answer: a retry would repeat it.
            exc.retryable = False
        raise
    finally:
        await events.aclose()


@asynccontextmanager
async def stream_events(
    open_response: Callable[[], Awaitable[httpx.Response]],
    decode: Callable[[httpx.Response], AsyncGenerator[StreamEvent, None]],
) -> AsyncIterator[AsyncIterator[StreamEvent]]:
    """Open a streaming response and yield its decoded events; always closes the response.

    Retrying belongs to `open_response` (connect and status only). Closing is
    shielded so a cancelled caller still releases the connection, and the
    cancellation itself propagates unchanged.
    """
    response = await open_response()
    try:
        events = _guarded(decode(response))
        try:
            yield events
        finally:
            await events.aclose()
    finally:
        with anyio.CancelScope(shield=True):
            await response.aclose()
