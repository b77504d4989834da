"""Run an ASGI app with uvicorn on a loopback port, in a thread with its own event loop.

A thread keeps the server independent of the test's event loop, so the same
server works under asyncio, under trio and from synchronous code.
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn
from starlette.types import ASGIApp

__all__ = ("ServerThread",)

_POLL = 0.002


class ServerThread:
    """One uvicorn server bound to `host` (port 0 picks a free port)."""

    def __init__(self, app: ASGIApp, *, host: str, port: int, backlog: int) -> None:
        self._config = uvicorn.Config(
            app,
            host=host,
            port=port,
            backlog=backlog,
            loop="asyncio",
            ws="none",
            lifespan="off",
            # Leave the process's logging alone: no dictConfig, no access log.
            log_config=None,
            access_log=False,
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=1,
            # Clients under load may leave a pooled connection idle for seconds; a
            # short keep-alive would close it just as they reuse it.
            timeout_keep_alive=60,
        )
        self._host = host
        self._port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._failure: BaseException | None = None

    @property
    def port(self) -> int:
        if self._socket is None:
            raise RuntimeError("the server is not running; start it first")
        port: int = self._socket.getsockname()[1]
        return port

    def start(self, timeout: float = 10.0) -> None:
        """Bind, start serving in a thread, and return once the server accepts requests."""
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        sock = _bind(self._host, self._port, self._config.backlog)
        self._socket = sock
        self._server = server = uvicorn.Server(self._config)
        self._failure = None
        self._thread = threading.Thread(
            target=self._run, args=(server, sock), name="agentgraph-fake-server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the fake server did not start") from self._failure
            time.sleep(_POLL)

    def _run(self, server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            server.run(sockets=[sock])
        except (Exception, SystemExit) as exc:
            # uvicorn ends a failed startup with SystemExit; keep it for `start` to report.
            self._failure = exc

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the server to exit, wait for its thread, and release the port."""
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
        if sock is not None:
            sock.close()


def _bind(host: str, port: int, backlog: int) -> socket.socket:
    """A listening TCP socket. Binding before the thread starts makes the port known at
    once and turns "address in use" into an error raised in the caller."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )[0]
    # The protocol must be IPPROTO_TCP, not 0: asyncio disables Nagle's algorithm only
    # on sockets that say so, and without TCP_NODELAY every keep-alive request waits
    # ~40 ms for a delayed ACK.
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    return sock
