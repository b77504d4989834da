"""Opening one `mcp.Client` to a server: over streamable HTTP, a process's stdio, or in process.

What is opened here is held, replaced after a loss and closed by the keeper
in `agentgraph.mcp._connection`; what is sent on it is `agentgraph.mcp._calls`'s.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TextIO

import anyio
import attrs
import httpx2
import mcp
import mcp.types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .._core._errors import MCPConnectionError
from ._connection import Sessions

__all__ = ("HTTPTarget", "ServerTarget", "Transport")

ServerTarget = str | mcp.StdioServerParameters | Server[Any] | MCPServer
"""What `MCPTools` connects to: a streamable-HTTP URL, a command run over stdio,
or a server object served in this process."""

_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)  # the SDK's defaults for MCP over HTTP


@attrs.frozen
class HTTPTarget:
    # Both may hold credentials (userinfo or a token in the URL, an auth header).
    url: str = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)


class Transport:
    """Opens clients to one server over the transport its target takes.

    Over HTTP it also keeps, for each open client, what the server's own
    responses said about its session (see `Sessions`).
    """

    __slots__ = ("_sessions", "label", "target")

    def __init__(self, target: ServerTarget | HTTPTarget, label: str) -> None:
        self.target: ServerTarget | HTTPTarget = (
            HTTPTarget(target, {}) if isinstance(target, str) else target
        )
        self.label = label
        self._sessions: dict[int, Sessions] = {}  # by id() of each open HTTP client

    @property
    def over_http(self) -> bool:
        return isinstance(self.target, HTTPTarget)

    def session_refused(self, client: mcp.Client) -> bool:
        """Whether the HTTP server said it no longer knows `client`'s session (it restarted)."""
        sessions = self._sessions.get(id(client))
        return sessions is not None and sessions.refused

    @asynccontextmanager
    async def open(
        self, *, mode: str, answers: Any, modern_only: bool
    ) -> AsyncIterator[mcp.Client]:
        """A connected client, closed on leaving.

        `answers` is the SDK's elicitation callback (None declares no
        capability); `modern_only` refuses a server where a question can only
        be answered inside the live call.
        """
        info = mcp.types.Implementation(name="agentgraph", version="0.1.0")
        target = self.target
        mode = self._mode_here(mode)
        if isinstance(target, HTTPTarget):
            sessions = Sessions()
            hooks = {"response": [sessions.watch]}
            async with httpx2.AsyncClient(
                headers=target.headers, timeout=_HTTP_TIMEOUT, event_hooks=hooks
            ) as http:
                transport = streamable_http_client(target.url, http_client=http)
                async with mcp.Client(
                    transport, client_info=info, mode=mode, elicitation_callback=answers
                ) as client:
                    self._check_era(client, modern_only)
                    self._sessions[id(client)] = sessions
                    try:
                        yield client
                    finally:
                        self._sessions.pop(id(client), None)
        elif isinstance(target, mcp.StdioServerParameters):
            with _server_stderr() as errlog:
                transport = stdio_client(target, errlog=errlog)
                async with mcp.Client(
                    transport, client_info=info, mode=mode, elicitation_callback=answers
                ) as client:
                    self._check_era(client, modern_only)
                    yield client
        else:
            async with mcp.Client(
                target, client_info=info, mode=mode, elicitation_callback=answers
            ) as client:
                self._check_era(client, modern_only)
                yield client

    def _check_era(self, client: mcp.Client, modern_only: bool) -> None:
        """Refuse `elicitation=True` where a question can only be answered inside the live call."""
        if not modern_only or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        raise MCPConnectionError(
            self.label,
            f"the server speaks {client.protocol_version}, where a question waits inside the "
            "live call and cannot stop the run to be answered later: pass "
            "elicitation=<an async function> to answer it while the call waits",
        )

    def _mode_here(self, mode: str) -> str:
        """The SDK's connect mode for this connection, or a refusal on trio.

        On trio the SDK's streamable-HTTP transport leaves the extra stream of a
        handshake-era session to the garbage collector (a `ResourceWarning`
        for each of its async generators), so HTTP there speaks the current
        protocol only, adopted without the handshake fallback; stdio, and
        asyncio, take every version.
        """
        if not self.over_http or not anyio.get_cancelled_exc_class().__module__.startswith("trio"):
            return mode
        if mode == "legacy":
            raise MCPConnectionError(
                self.label,
                "the SDK does not close handshake-era (mode='legacy') HTTP sessions cleanly on "
                "trio; run on asyncio, or use a server speaking "
                f"{' or '.join(MODERN_PROTOCOL_VERSIONS)}",
            )
        return MODERN_PROTOCOL_VERSIONS[-1]


@contextmanager
def _server_stderr() -> Iterator[TextIO]:
    """Where a server process writes its log: this process's stderr when it is a real file.

    Under a notebook or a test's capture `sys.stderr` has no file descriptor to
    hand to a child process; then the original stderr, or else nowhere.
    """
    usable = next((stream for stream in (sys.stderr, sys.__stderr__) if _has_fd(stream)), None)
    if usable is not None:
        yield usable
        return
    with open(os.devnull, "w") as devnull:
        yield devnull


def _has_fd(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        return False
