"""`agentgraph mcp module:graph [...]`: graphs served as the tools of an MCP server.

Over stdio by default (standard output is then the protocol's, so every
message of the command goes to standard error), or over streamable HTTP with
`--http`. Questions a graph asks are recorded in `--store` (SQLite; a
temporary file unless given), so a client without the elicitation capability
can have its run answered later with `GraphRunner.resume`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any, TextIO

import anyio

from .._core._runner import GraphRunner
from ._load import CommandError, _model, load_target

__all__ = ("add_mcp_command",)


def add_mcp_command(commands: Any, positive: Any, port: Any) -> None:
    """Add the `mcp` subcommand to the command line's subparsers."""
    cmd = commands.add_parser("mcp", help="serve graphs as the tools of an MCP server")
    cmd.add_argument(
        "targets", nargs="+", help="module:attribute naming a Graph (or a factory), one per tool"
    )
    cmd.add_argument("--model", help="provider:name, passed to a factory's `model` parameter")
    cmd.add_argument("--store", help="SQLite checkpoint file (default: a temporary one)")
    cmd.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    cmd.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    cmd.add_argument("--port", type=port, default=8000, help="port (default 8000; 0 picks)")
    cmd.add_argument("--path", default="/mcp", help="the HTTP endpoint's path (default /mcp)")
    cmd.add_argument("--name", default="agentgraph", help="the server's name")
    cmd.add_argument("--max-steps", type=positive, default=1000, help="step cap (default 1000)")
    cmd.set_defaults(handler=_mcp)


def _mcp(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        from ..mcp import GraphServer
    except ImportError as exc:
        raise CommandError(str(exc)) from exc
    from ..checkpoint import SQLiteStore

    model = _model(args.model)
    graphs = [load_target(target, model) for target in args.targets]
    with tempfile.TemporaryDirectory(prefix="agentgraph-mcp-") as folder:
        store = SQLiteStore(args.store or Path(folder) / "runs.db")
        try:
            server = GraphServer(
                graphs,
                name=args.name,
                runner=GraphRunner(max_steps=args.max_steps),
                store=store,
            )
        except (TypeError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if not args.http:
            err.write(f"serving {', '.join(server.tools)} over stdio\n")
            err.flush()
            anyio.run(server.run_stdio)
            return 0
        return _http(server, args, err)


def _http(server: Any, args: argparse.Namespace, err: TextIO) -> int:
    import uvicorn

    from .._util._serving import bind

    app = server.http_app(path=args.path, host=args.host)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc}") from exc
    try:
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        err.write(f"serving {', '.join(server.tools)} at http://{shown}:{port}{args.path}\n")
        err.flush()
        config = uvicorn.Config(
            app, loop="asyncio", ws="none", lifespan="on", log_config=None, access_log=False
        )
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
