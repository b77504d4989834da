"""Run an ASGI app with uvicorn on a loopback port, in a thread with its own event loop.

A thread keeps the server independent of the test's event loop, so the same
server works under asyncio, under trio and from synchronous code.
"""

from __future__ import annotations

import uvicorn
from starlette.types import ASGIApp

from .._util._serving import ServerThread

__all__ = ("server_thread",)


def server_thread(app: ASGIApp, *, host: str, port: int, backlog: int) -> ServerThread:
    """The fake server's uvicorn, quiet and patient with pooled connections."""
    config = uvicorn.Config(
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
    return ServerThread(config, host=host, port=port, name="agentgraph-fake-server")
