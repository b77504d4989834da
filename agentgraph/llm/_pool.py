"""`SpreadTransport`: one httpx transport made of several small connection pools.

httpcore's connection pool does work for every connection it holds each time a
request starts or ends, so one large pool becomes CPU-bound at a few hundred
concurrent requests (measured in `benchmarks/llm_path.py`: 1,000 concurrent
agent runs against one 1000-connection pool spent 9-15 ms of CPU per request;
100 pools of 10 spent under 1 ms). Spreading requests over small pools keeps
every connection alive and that work small.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import AsyncIterator

import httpx

__all__ = ("SpreadTransport", "default_client")


class _Released(httpx.AsyncByteStream):
    """A response body whose closing frees its request's slot in its pool (once)."""

    def __init__(self, stream: httpx.AsyncByteStream, busy: list[int], index: int) -> None:
        self._stream = stream
        self._busy = busy
        self._index = index
        self._open = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        if self._open:
            self._open = False
            self._busy[self._index] -= 1
        await self._stream.aclose()


class SpreadTransport(httpx.AsyncBaseTransport):
    """Sends each request through the pool with the fewest requests in flight.

    Args:
        pools: how many connection pools.
        connections: connections per pool (all kept alive).
        verify: TLS verification, shared by every pool (one certificate store).

    ```python
    client = httpx.AsyncClient(transport=SpreadTransport(pools=32, connections=8))
    model = OpenAIModel("gpt-4o-mini", http_client=client)
    ```
    """

    def __init__(
        self, *, pools: int = 16, connections: int = 8, verify: ssl.SSLContext | str | bool = True
    ) -> None:
        if pools < 1 or connections < 1:
            raise ValueError("pools and connections must be at least 1")
        context = _tls(verify)
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._pools = [
            httpx.AsyncHTTPTransport(verify=context, limits=limits) for _ in range(pools)
        ]
        self._busy = [0] * pools

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Requests in flight per pool (a response counts until its body is closed)."""
        return tuple(self._busy)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        busy = self._busy
        index = busy.index(min(busy))
        busy[index] += 1
        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            busy[index] -= 1  # failed or cancelled: the slot is free again
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Released(response.stream, busy, index)
        return response

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


def _tls(verify: ssl.SSLContext | str | bool) -> ssl.SSLContext | bool:
    if isinstance(verify, str):  # a CA bundle file
        return ssl.create_default_context(cafile=verify)
    if verify is True:
        return ssl.create_default_context()
    return verify


def _environment_proxied() -> bool:
    """Whether the environment names an HTTP(S) proxy (`HTTPS_PROXY`, `ALL_PROXY`, ...)."""
    proxies = urllib.request.getproxies()
    return any(proxies.get(scheme) for scheme in ("http", "https", "all"))


def default_client(
    *, timeout: httpx.Timeout, verify: ssl.SSLContext | str | bool = True
) -> httpx.AsyncClient:
    """The client a provider creates when none is injected: 16 pools of 8 connections.

    When the environment names a proxy, a plain httpx client is returned instead:
    httpx applies environment proxies (and `NO_PROXY`) only to clients built
    without a transport of their own.
    """
    if _environment_proxied():
        limits = httpx.Limits(max_connections=128, max_keepalive_connections=128)
        return httpx.AsyncClient(
            timeout=timeout, verify=_tls(verify), limits=limits, trust_env=True
        )
    return httpx.AsyncClient(transport=SpreadTransport(verify=verify), timeout=timeout)
