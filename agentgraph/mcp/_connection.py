"""One live connection to an MCP server, owned by one task, replaced on request.

anyio ties a connection's task groups to the task that opened them, and tool
calls run in other tasks (the runner's). So one keeper task, started in the
task that enters `MCPTools`, opens each `mcp.Client`, holds it open, and
closes it there; callers only ask it for the current client or for a new one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import anyio
import anyio.abc
import httpx2
import mcp

from .._core._errors import MCPConnectionError

__all__ = ("Connection", "Sessions")

Opener = Callable[[], AbstractAsyncContextManager[mcp.Client]]


class Connection:
    """The current `mcp.Client` of one server, reopened at most once per loss.

    `start` opens the first connection (failing with `MCPConnectionError`);
    `client()` returns the live client, reconnecting first if the last one
    was lost; `lost(client)` marks a client as lost; `close()` ends the keeper.
    """

    def __init__(self, label: str, opener: Opener, connect_timeout: float) -> None:
        self.label = label
        self._opener = opener
        self._connect_timeout = connect_timeout
        self._client: mcp.Client | None = None
        self._lost: mcp.Client | None = None
        self._error: BaseException | None = None
        self._closing = False
        self._drop = anyio.Event()
        self._ready = anyio.Event()
        self._lock = anyio.Lock()
        self.connections = 0
        """How many connections were opened (1 + the reconnections)."""

    async def start(self, group: anyio.abc.TaskGroup) -> mcp.Client:
        await group.start(self._keep)
        assert self._client is not None, "started only once connected"
        return self._client

    def lost(self, client: mcp.Client) -> None:
        """`client` lost its server: the next `client()` opens a new connection."""
        if client is self._client:
            self._lost = client

    async def client(self) -> mcp.Client:
        """The live client; after a loss, a new connection (opened once for all callers)."""
        current = self._client
        if current is not None and current is not self._lost:
            return current
        async with self._lock:
            current = self._client
            if current is not None and current is not self._lost:
                return current  # another caller reconnected while this one waited
            if self._closing:
                raise MCPConnectionError(self.label, "the connection is closed")
            self._ready = anyio.Event()
            self._drop.set()
            await self._ready.wait()
            if self._client is None:
                raise MCPConnectionError(self.label, f"could not reconnect: {self._why()}")
            return self._client

    def close(self) -> None:
        self._closing = True
        self._drop.set()
        self._ready.set()

    def _why(self) -> str:
        error = self._error
        return "no error was reported" if error is None else _describe(error)

    async def _keep(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        while not self._closing:
            self._drop = anyio.Event()
            self._error = None
            try:
                await self._hold(task_status)
            except Exception as exc:  # reported to whoever waits for this connection
                self._error = exc
            self._client = None
            if self.connections == 0:
                raise MCPConnectionError(self.label, f"could not connect: {self._why()}") from (
                    self._error
                )
            if self._error is not None:
                self._ready.set()
            # Connect again only when a caller asks (never in a loop of its own).
            await self._drop.wait()

    async def _hold(self, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Open a connection, publish it, and hold it until asked to drop it.

        Errors before the connection is up are raised; errors from closing it
        (a server already gone, a stream cut) are not: the connection is being
        discarded, and the next one is what matters.
        """
        connected = False
        try:
            # The scope spans the whole connection (its task groups must close inside
            # it); its deadline bounds only the opening and is lifted once connected.
            with anyio.CancelScope(deadline=anyio.current_time() + self._connect_timeout) as scope:
                async with self._opener() as client:
                    scope.deadline = math.inf
                    connected = True
                    self._client = client
                    self._lost = None
                    self.connections += 1
                    if self.connections == 1:
                        task_status.started()
                    else:
                        self._ready.set()
                    await self._drop.wait()
        except Exception:
            if not connected:
                raise
            return
        if scope.cancelled_caught and not connected:
            raise TimeoutError(f"no answer within {self._connect_timeout:g}s")


_ERROR_BODY = 64 * 1024  # an unknown-session answer is a line of JSON, never more


class Sessions:
    """Whether the HTTP server refused this connection's session, from its own responses.

    A server that restarted no longer knows the session: the specification
    has it answer 404, the reference server answers 400 with an error naming
    the session, and the SDK reports either as whichever JSON-RPC error it
    makes of the body (-32600, -32000, or -32603 when the body has no id).
    The HTTP status and body are what say it, so they are read here, as the
    responses arrive, before the SDK turns them into an error.
    """

    __slots__ = ("refused",)

    def __init__(self) -> None:
        self.refused = False

    async def watch(self, response: httpx2.Response) -> None:
        if response.status_code not in (400, 404):
            return
        if "mcp-session-id" not in response.request.headers:
            return  # no session was asked for: not a refused one
        if response.status_code == 404:
            self.refused = True
            return
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > _ERROR_BODY:
            return
        body = await response.aread()
        if b"session" in body[:_ERROR_BODY].lower():
            self.refused = True


def _describe(error: BaseException) -> str:
    """A short account of why a connection failed, leaves of a group included."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    if isinstance(error, MCPConnectionError):
        return error.problem
    text = str(error) or "(no message)"
    return f"{type(error).__name__}: {text}"
