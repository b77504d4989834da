"""`agentgraph server module:graph …` (API and workers) and `agentgraph worker …` (workers alone).

Both take the graphs to serve as `module:attribute` (the graph's id is its
name) or `id=module:attribute`, and share one database: an SQLite file (`--store`,
`agentgraph-server.db` in the current folder by default), or a PostgreSQL
database (`--store postgresql://…`) that any number of `server` and
`worker` processes on any number of machines share. SIGTERM or Ctrl-C
stops claiming runs; runs going on get `--grace` seconds to finish, and the
rest are taken up again, from their last committed step, when a worker next
starts on the same database.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any, TextIO

from .._core._graph import Graph
from .._core._runner import GraphRunner
from ._load import CommandError, _attribute, _model, load_target
from ._runs import load_versions

__all__ = ("add_server_commands",)

DEFAULT_STORE = "agentgraph-server.db"


def add_server_commands(commands: Any, positive: Any, port: Any) -> None:
    """Add the `server` and `worker` subcommands to the command line's subparsers."""
    server = commands.add_parser(
        "server", help="serve graphs to the LangGraph SDK clients, with background workers"
    )
    _common(server, positive, workers=_count, least=0)
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    server.add_argument("--port", type=port, default=2024, help="port (default 2024; 0 picks)")
    server.add_argument(
        "--api-key",
        help="require this x-api-key on every request but /ok "
        "(default: $AGENTGRAPH_API_KEY, else none)",
    )
    server.add_argument(
        "--auth",
        help="module:attribute naming a langgraph_sdk Auth object: its authenticate function "
        "and @auth.on handlers guard every request but /ok (an auth.py written for LangGraph)",
    )
    server.add_argument(
        "--resume-policy",
        choices=("pinned", "latest", "refuse"),
        help="what resuming a run of another graph version does, for runs whose assistant "
        "names none (default: the --versions policy, else latest)",
    )
    server.add_argument(
        "--priority",
        help="module:attribute naming a langgraph_sdk.Priority (or its assign function): "
        "a thread's priority, assigned at its first run",
    )
    server.set_defaults(handler=_server)
    worker = commands.add_parser("worker", help="run queued runs of graphs, without the API")
    _common(worker, positive, workers=positive, least=1)
    worker.add_argument(
        "--metrics-port",
        type=port,
        help="serve this process's Prometheus metrics on this port (default: none)",
    )
    worker.add_argument(
        "--metrics-host", default="127.0.0.1", help="address of --metrics-port (loopback)"
    )
    worker.set_defaults(handler=_worker)


def _count(text: str) -> int:
    """An argparse type: a whole number, 0 or more."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"{number} is not 0 or more")
    return number


def _common(cmd: Any, positive: Any, *, workers: Any, least: int) -> None:
    cmd.add_argument("targets", nargs="+", help="[id=]module:attribute naming a Graph, one each")
    cmd.add_argument("--model", help="provider:name, passed to a factory's `model` parameter")
    cmd.add_argument(
        "--store",
        default=DEFAULT_STORE,
        help=f"SQLite file, or postgresql://… (default {DEFAULT_STORE})",
    )
    cmd.add_argument(
        "--schema", default="agentgraph", help="PostgreSQL schema (default agentgraph)"
    )
    cmd.add_argument(
        "--workers", type=workers, default=1, help=f"worker threads, {least} or more (default 1)"
    )
    cmd.add_argument(
        "--concurrency", type=positive, default=10, help="runs per worker at once (default 10)"
    )
    cmd.add_argument("--run-timeout", type=float, help="seconds a run may take (default: none)")
    cmd.add_argument(
        "--grace", type=float, default=30.0, help="seconds runs get to finish on stop (default 30)"
    )
    cmd.add_argument("--max-steps", type=positive, default=1000, help="step cap (default 1000)")
    cmd.add_argument(
        "--versions",
        help="module:attribute naming a GraphVersions: the older versions workers still run",
    )
    for scope, whose in (("assistant", "each assistant's"), ("key", "each caller key's")):
        cmd.add_argument(
            f"--{scope}-concurrency",
            type=positive,
            help=f"{whose} runs running at once, on every worker together (default: no cap)",
        )
        cmd.add_argument(
            f"--{scope}-rate",
            type=_rate,
            metavar="RUNS/SECONDS",
            help=f"{whose} runs started in any window of SECONDS (default: no cap)",
        )
    cmd.add_argument(
        "--run-retention",
        type=float,
        help="seconds an ended run is kept (default: as long as its thread)",
    )
    cmd.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="log lines on stderr as text or as JSON objects, one a line (default text)",
    )


def _rate(text: str) -> tuple[int, float]:
    """An argparse type: `RUNS/SECONDS`, as a rate and its window."""
    runs, sep, seconds = text.partition("/")
    try:
        rate, per = int(runs), float(seconds)
    except ValueError:
        rate, per = 0, 0.0
    if not sep or rate < 1 or not per > 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not RUNS/SECONDS (e.g. 60/60), both above 0"
        ) from None
    return rate, per


def _limits(args: argparse.Namespace) -> Any:
    """The `FlowLimits` the options set."""
    from ..server import FlowLimits, Limit

    def limit(scope: str) -> Any:
        concurrency = getattr(args, f"{scope}_concurrency")
        rate = getattr(args, f"{scope}_rate")
        if concurrency is None and rate is None:
            return None
        rate, per = rate or (None, 60.0)
        return Limit(concurrency=concurrency, rate=rate, per=per)

    return FlowLimits(per_assistant=limit("assistant"), per_key=limit("key"))


def _graphs(args: argparse.Namespace) -> dict[str, Graph[Any, Any]]:
    model = _model(args.model)
    graphs: dict[str, Graph[Any, Any]] = {}
    for target in args.targets:
        name, sep, where = target.partition("=")
        graph = load_target(where if sep else target, model)
        graph_id = name if sep else graph.name
        if graph_id in graphs:
            raise CommandError(f"two graphs have the id {graph_id!r}: name one with id=module:attr")
        graphs[graph_id] = graph
    return graphs


def _auth(spec: str | None) -> object | None:
    """The authorization hooks `--auth module:attribute` names; None when not given."""
    if spec is None:
        return None
    from .._core._errors import UsageError
    from ..server._auth import Access

    found: object = _attribute(spec)
    try:
        Access(found)
    except UsageError as exc:
        raise CommandError(f"--auth {spec}: {exc}") from exc
    return found


def _settings(args: argparse.Namespace, *, workers: int, api_key: str | None) -> Any:
    from ..server import ServerSettings

    return ServerSettings(
        auth=_auth(getattr(args, "auth", None)),
        resume_policy=getattr(args, "resume_policy", None),
        workers=workers,
        concurrency=args.concurrency,
        run_timeout=args.run_timeout,
        grace=args.grace,
        api_key=api_key,
        limits=_limits(args),
        priority=_priority(getattr(args, "priority", None)),
        run_retention=args.run_retention,
    )


def _priority(target: str | None) -> Any:
    """The priority function `--priority` names, checked (None when not given)."""
    if target is None:
        return None
    from ..server._priority import PriorityAssigner

    found = _attribute(target)
    try:
        PriorityAssigner(found)
    except TypeError as exc:
        raise CommandError(f"--priority {target}: {exc}") from exc
    return found


def _server(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        from ..server import server_app
        from ..web import serve
    except ImportError as exc:
        raise CommandError(f"{exc}: install agentgraph-engine[server]") from exc
    from ..server._logs import configure_logging

    graphs = _graphs(args)
    configure_logging(args.log_format, stream=err)
    settings = _settings(args, workers=args.workers, api_key=args.api_key)
    runner = GraphRunner(max_steps=args.max_steps, versions=load_versions(args.versions))
    app = server_app(graphs, args.store, settings=settings, runner=runner, schema=args.schema)

    def announce(url: str) -> None:
        out.write(f"serving {', '.join(graphs)} at {url}\n")
        out.flush()

    try:
        serve(app, host=args.host, port=args.port, announce=announce)
    except OSError as exc:
        raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc}") from exc
    return 0


def _serve_metrics(args: argparse.Namespace) -> Any:
    """Serve the metrics of a worker process (the store's, and its workers' claim waits)
    on `--metrics-port`; what its workers call with their claim waits."""
    from prometheus_client import start_http_server

    from ..server._metrics import ServerMetrics
    from ..server._queue import RunQueue

    metrics = ServerMetrics(RunQueue(args.store, schema=args.schema))
    try:
        start_http_server(args.metrics_port, addr=args.metrics_host, registry=metrics.registry)
    except OSError as exc:
        raise CommandError(f"cannot serve metrics on port {args.metrics_port}: {exc}") from exc
    return metrics.claimed


def _worker(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..server import Worker
    from ..server._logs import configure_logging

    graphs = _graphs(args)
    configure_logging(args.log_format, stream=err)
    runner = GraphRunner(max_steps=args.max_steps, versions=load_versions(args.versions))
    on_claimed = None
    if args.metrics_port is not None:
        on_claimed = _serve_metrics(args)
    workers = [
        Worker(
            args.store,
            graphs,
            runner=runner,
            concurrency=args.concurrency,
            run_timeout=args.run_timeout,
            grace=args.grace,
            schema=args.schema,
            limits=_limits(args),
            on_claimed=on_claimed,
            run_retention=args.run_retention,
        )
        for _ in range(args.workers)
    ]
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    for worker in workers:
        worker.start()
    out.write(f"{len(workers)} worker(s) running {', '.join(graphs)} from {args.store}\n")
    out.flush()
    while not stopping.wait(0.5):
        pass
    for worker in workers:
        worker.stop(wait=False)
    for worker in workers:
        worker.stop()
    return 0
