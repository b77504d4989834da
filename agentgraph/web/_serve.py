"""Serving an app with uvicorn: in the foreground (the CLI), or in a thread (tests, notebooks)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp

from .._util._serving import ServerThread, bind

__all__ = ("WebServer", "serve")


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
    sock = bind(host, port)
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
        self._thread = ServerThread(_config(app), host=host, port=port, name="agentgraph-web")

    @property
    def url(self) -> str:
        """The base URL, ending in `/`."""
        return _url(self._thread.listening)

    def start(self, timeout: float = 15.0) -> WebServer:
        """Start serving and return once the app accepts requests."""
        self._thread.start(timeout)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        """Shut down (runs still going are cancelled) and release the port."""
        self._thread.stop(timeout)

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
