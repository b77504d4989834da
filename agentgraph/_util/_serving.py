"""An ASGI app served by uvicorn on a socket bound up front, in a thread with its own loop.

The fake provider server (`agentgraph.testing`) and the web page
(`agentgraph.web`) both run this way: a thread keeps the server independent
of the caller's event loop, so the same server works under asyncio, under
trio and from synchronous code. Importing this module needs uvicorn (the
`testing` and `web` extras).
"""

from __future__ import annotations

import socket
import threading
import time

import uvicorn

__all__ = ("ServerThread", "bind")

_POLL = 0.002


def bind(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A listening TCP socket (port 0 picks a free one).

    Binding before the server starts makes the port known at once and turns
    "address in use" into an error raised in the caller.
    """
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


class ServerThread:
    """One uvicorn server for `config`, bound to `host` and `port` when started."""

    def __init__(self, config: uvicorn.Config, *, host: str, port: int, name: str) -> None:
        self._config = config
        self._host = host
        self._port = port
        self._name = name
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._failure: BaseException | None = None

    @property
    def listening(self) -> socket.socket:
        """The listening socket."""
        if self._socket is None:
            raise RuntimeError("the server is not running; start it first")
        return self._socket

    @property
    def port(self) -> int:
        """The port it listens on."""
        port: int = self.listening.getsockname()[1]
        return port

    def start(self, timeout: float = 10.0) -> None:
        """Bind, start serving in a thread, and return once the server accepts requests."""
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        self._socket = sock = bind(self._host, self._port, self._config.backlog)
        self._server = server = uvicorn.Server(self._config)
        self._failure = None
        self._thread = threading.Thread(
            target=self._run, args=(server, sock), name=self._name, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the {self._name} server did not start") from self._failure
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
