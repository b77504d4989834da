"""`SpreadTransport`: one httpx transport made of several small connection pools.

httpcore's connection pool does work for every connection it holds each time a
request starts or ends, so one large pool becomes CPU-bound at a few hundred
concurrent requests (measured in `benchmarks/llm_path.py`: 1,000 concurrent
agent runs against one 1000-connection pool spent 9-15 ms of CPU per request;
100 pools of 10 spent under 1 ms). Spreading requests over small pools keeps
every connection alive and that work small.

Requests beyond the connections wait here, not in httpcore: httpcore offers a
freed connection to every waiting request and the losers start their pool
timeout afresh, so at 1,000 concurrent requests on 128 connections some wait
far longer than the timeout says. Here they queue in arrival order, each freed
connection goes to exactly one of them, and the pool timeout bounds the whole wait.
"""

from __future__ import annotations

import ssl
import urllib.request
from collections import deque
from collections.abc import AsyncIterator, Callable

import anyio
import httpx

__all__ = ("SpreadTransport", "default_client")


class _Released(httpx.AsyncByteStream):
    """A response body whose closing frees its request's slot in its pool (once)."""

    def __init__(self, stream: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._stream = stream
        self._release = release
        self._open = True

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        if self._open:
            self._open = False
            self._release()
        await self._stream.aclose()


class SpreadTransport(httpx.AsyncBaseTransport):
    """Sends each request through the pool with the fewest requests in flight.

    At most `pools * connections` requests are in flight; the others wait in
    arrival order, each for at most the request's pool timeout (`pool_wait`
    when given) in all, then fail with `httpx.PoolTimeout` saying how to size
    the pool (a provider client reports it as a retryable `ProviderTimeout`).

    Args:
        pools: how many connection pools.
        connections: connections per pool (all kept alive).
        verify: TLS verification, shared by every pool (one certificate store).
        pool_wait: the longest a request waits for a connection, in seconds;
            the request's own pool timeout when `None` (`httpx.Timeout(pool=...)`).

    ```python
    client = httpx.AsyncClient(transport=SpreadTransport(pools=32, connections=8))
    model = OpenAIModel("gpt-4o-mini", http_client=client)
    ```
    """

    def __init__(
        self,
        *,
        pools: int = 16,
        connections: int = 8,
        verify: ssl.SSLContext | str | bool = True,
        pool_wait: float | None = None,
    ) -> None:
        if pools < 1 or connections < 1:
            raise ValueError("pools and connections must be at least 1")
        if pool_wait is not None and pool_wait < 0:
            raise ValueError("pool_wait must not be negative")
        context = _tls(verify)
        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self._pools = [
            httpx.AsyncHTTPTransport(verify=context, limits=limits) for _ in range(pools)
        ]
        self._busy = [0] * pools
        self._shape = (pools, connections)
        self._pool_wait = pool_wait
        self._free = pools * connections
        self._waiters: deque[anyio.Event] = deque()

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Requests in flight per pool (a response counts until its body is closed)."""
        return tuple(self._busy)

    @property
    def waiting(self) -> int:
        """Requests waiting for a connection."""
        return len(self._waiters)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await self._acquire(request)
        busy = self._busy
        index = busy.index(min(busy))  # below `connections`: one slot is ours
        busy[index] += 1

        def release() -> None:
            busy[index] -= 1
            self._release()

        try:
            response = await self._pools[index].handle_async_request(request)
        except BaseException:
            release()  # failed or cancelled: the slot is free again
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Released(response.stream, release)
        return response

    async def _acquire(self, request: httpx.Request) -> None:
        """Take a connection slot, waiting in line for at most the pool timeout."""
        if self._free and not self._waiters:
            self._free -= 1
            return
        timeout = self._pool_wait
        if timeout is None:
            timeout = request.extensions.get("timeout", {}).get("pool")
        turn = anyio.Event()
        self._waiters.append(turn)
        try:
            with anyio.move_on_after(timeout):
                await turn.wait()
        except BaseException:
            # Cancelled in line: a slot handed over meanwhile goes on to the next in line.
            if turn.is_set():
                self._release()
            else:
                self._waiters.remove(turn)
            raise
        if not turn.is_set():
            self._waiters.remove(turn)
            raise httpx.PoolTimeout(self._exhausted(timeout), request=request)

    def _release(self) -> None:
        """Hand a freed slot to the longest waiter, or put it back."""
        if self._waiters:
            self._waiters.popleft().set()
        else:
            self._free += 1

    def _exhausted(self, timeout: float | None) -> str:
        pools, connections = self._shape
        return (
            f"no connection came free within {timeout:g} s: all {pools * connections} "
            f"({pools} pools of {connections}) were busy and {len(self._waiters) + 1} requests "
            "waited; size the pool for the concurrency (SpreadTransport(pools=..., "
            "connections=...) passed as httpx.AsyncClient(transport=...)) or allow a longer "
            "wait (httpx.Timeout(..., pool=...))"
        )

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
