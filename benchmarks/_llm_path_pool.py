"""The HTTP client every contender of the LLM path benchmark gets.

One ``AsyncClient`` whose transport spreads the requests over many small connection
pools. On each request it starts or finishes, httpcore's pool walks every connection it
holds, so one pool of 1,000 connections would measure that walk, not the libraries.
"""

import ssl
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass(frozen=True)
class Pool:
    """The HTTP client every contender gets: one `AsyncClient` over `shards` small pools.

    Each pool holds up to `connections` HTTP/1.1 connections, all kept alive
    (`keepalive` lower closes the surplus). `shards=1` is a plain client with one pool.
    """

    shards: int = 100
    connections: int = 10
    keepalive: int | None = None
    timeout: float = 60.0
    connect_timeout: float = 10.0

    def limits(self, module: Any) -> Any:
        keepalive = self.connections if self.keepalive is None else self.keepalive
        return module.Limits(max_connections=self.connections, max_keepalive_connections=keepalive)

    def describe(self, module: str = "httpx") -> str:
        keepalive = self.connections if self.keepalive is None else self.keepalive
        limits = (
            f"{module}.Limits(max_connections={self.connections}, "
            f"max_keepalive_connections={keepalive})"
        )
        timeout = f"{module}.Timeout({self.timeout:g}, connect={self.connect_timeout:g})"
        if self.shards == 1:
            return f"one `{module}.AsyncClient(limits={limits}, timeout={timeout})`"
        return (
            f"one `{module}.AsyncClient(transport=..., timeout={timeout})` per contender, "
            f"whose transport sends each request to the one of {self.shards} "
            f"`{module}.AsyncHTTPTransport(limits={limits})` with the fewest requests in flight"
        )


def _spread_transport(module: Any) -> type:
    """A transport class of `module` (httpx or httpx2) that spreads requests over pools."""

    class Released(module.AsyncByteStream):
        """The response body; closing it frees the request's slot in its pool (once)."""

        def __init__(self, stream: Any, busy: list[int], index: int) -> None:
            self._stream, self._busy, self._index = stream, busy, index
            self._open = True

        async def __aiter__(self) -> Any:
            async for chunk in self._stream:
                yield chunk

        async def aclose(self) -> None:
            if self._open:
                self._open = False
                self._busy[self._index] -= 1
            await self._stream.aclose()

    class Spread(module.AsyncBaseTransport):
        """Sends each request through the pool with the fewest requests in flight.

        httpcore's pool does work for every connection it holds on each request it
        starts or finishes; several small pools keep that work small.
        """

        def __init__(self, shards: list[Any]) -> None:
            self._shards = shards
            self._busy = [0] * len(shards)

        async def handle_async_request(self, request: Any) -> Any:
            busy = self._busy
            index = busy.index(min(busy))
            busy[index] += 1
            response = None
            try:
                response = await self._shards[index].handle_async_request(request)
            finally:
                if response is None:  # failed or cancelled: the slot is free again
                    busy[index] -= 1
            response.stream = Released(response.stream, busy, index)
            return response

        async def aclose(self) -> None:
            for shard in self._shards:
                await shard.aclose()

    return Spread


def httpx_client(pool: Pool, module: Any = httpx) -> Any:
    """An `AsyncClient` of `module` (httpx, or the SDK's httpx2) configured by `pool`."""
    timeout = module.Timeout(pool.timeout, connect=pool.connect_timeout)
    if pool.shards == 1:
        return module.AsyncClient(limits=pool.limits(module), timeout=timeout)
    # One certificate store for all pools (the URLs are http://, but each transport
    # would otherwise load its own).
    context = ssl.create_default_context()
    shards = [
        module.AsyncHTTPTransport(verify=context, limits=pool.limits(module))
        for _ in range(pool.shards)
    ]
    return module.AsyncClient(transport=_spread_transport(module)(shards), timeout=timeout)
