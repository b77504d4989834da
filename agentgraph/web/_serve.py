"""Serving an app with uvicorn: in the foreground (the CLI), or in a thread (tests, notebooks)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp

__all__ = ("WebServer", "serve")

_POLL = 0.005


def _config(app: ASGIApp) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        loop="asyncio",
        ws="none",
        lifespan="on",
        log_config=None,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=2,
    )


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket, bound before serving so the port is known (port 0 picks one)."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(
    app: ASGIApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve `app` until interrupted (Ctrl-C), telling `announce` the URL once it listens."""
    sock = _bind(host, port)
    try:
        server = uvicorn.Server(_config(app))
        announce(_url(sock))
        server.run(sockets=[sock])
    finally:
        sock.close()


class WebServer:
    """`app` served on a loopback port in a thread of its own, for tests and notebooks.

    ```python
    with WebServer(app) as server:
        print(server.url)
    ```
    The thread has its own event loop, so the caller may be synchronous or run
    any async backend. `stop` (or leaving the `with` block) shuts the app down,
    cancelling its runs, and waits for the thread.
    """

    def __init__(self, app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._app = app
        self._host = host
        self._port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._failure: BaseException | None = None

    @property
    def url(self) -> str:
        """The base URL, ending in `/`."""
        if self._socket is None:
            raise RuntimeError("the server is not running; start it first")
        return _url(self._socket)

    def start(self, timeout: float = 15.0) -> WebServer:
        """Start serving and return once the app accepts requests."""
        if self._thread is not None:
            raise RuntimeError("the server is already running")
        self._socket = sock = _bind(self._host, self._port)
        self._server = server = uvicorn.Server(_config(self._app))
        self._thread = threading.Thread(
            target=self._run, args=(server, sock), name="agentgraph-web", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the web server did not start") from self._failure
            time.sleep(_POLL)
        return self

    def _run(self, server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            server.run(sockets=[sock])
        except (Exception, SystemExit) as exc:
            self._failure = exc

    def stop(self, timeout: float = 15.0) -> None:
        """Shut down (runs still going are cancelled) and release the port."""
        server, thread, sock = self._server, self._thread, self._socket
        self._server = self._thread = self._socket = None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout)
        if sock is not None:
            sock.close()

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
