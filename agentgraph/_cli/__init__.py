"""The command line: `agentgraph run | draw | show | serve | mcp | eval | runs | server | worker`.

```
agentgraph run app.agents:graph --input '"What is 2 + 3?"' --trace run.jsonl
agentgraph run app/agents.py:make_agent --model ollama:qwen2.5:7b --input hello
agentgraph draw app.agents:graph
agentgraph show run.jsonl --html run.html
agentgraph serve app.agents:graph --store runs.db --port 8000
agentgraph mcp app.agents:graph app.agents:other --store runs.db
agentgraph eval app.agents:graph cases.jsonl --evaluators app.evals:EVALUATORS
agentgraph runs check app.agents:graph --store runs.db
agentgraph server app.agents:graph --store postgresql://localhost/agents
```

A target is `module:attribute` (a dotted module importable from the current
directory, or a path to a `.py` file) naming a `Graph`, or a function that
returns one. A function with a `model` parameter receives the model built
from `--model provider:name` (see `model_from_string`).

`--input` is read as JSON when it is valid JSON (`42`, `true`, `[1, 2]`,
`{"a": 1}`, `"quoted text"`) and taken as a plain string otherwise (`hello`).
Text that starts like a JSON object, array or string (`{`, `[`, `"`) must be
valid JSON, since it was clearly meant as such.

Every problem with the command itself (a module that does not import, an
attribute that is not a graph, an input or a trace that does not parse) is
one line on standard error and exit status 2; a run that fails shows its
tree, then one line, and exits with status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import anyio
import orjson

from .._core._context import AgentContext
from .._core._runner import GraphRunner, Sink
from .._util._input import read_input
from .._util._redact import masked
from ._eval import add_eval_command
from ._load import CommandError as CommandError
from ._load import _model, _NoModel
from ._load import load_target as load_target
from ._mcp import add_mcp_command
from ._runs import add_runs_command
from ._server import add_server_commands

__all__ = ("CommandError", "load_target", "main", "parse_input")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CommandError(f"{message} (see `{self.prog} --help`)")


def parse_input(text: str) -> Any:
    """The run's input from `--input`: JSON when it parses, else the text itself."""
    try:
        return read_input(text)
    except ValueError as exc:
        raise CommandError(f"--input {exc}") from exc


def _console(args: argparse.Namespace, out: TextIO) -> Any:
    from ..tracing import ConsoleSink

    return ConsoleSink(out, style="plain" if args.plain else "auto")


def _print_output(value: Any, out: TextIO) -> None:
    if isinstance(value, str):
        out.write(value + "\n")
        return
    from ..tracing._records import plain

    out.write(orjson.dumps(plain(value), option=orjson.OPT_INDENT_2).decode() + "\n")


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..tracing import JsonlSink

    value = parse_input(args.input)
    graph = load_target(args.target, _model(args.model))
    sinks: list[Sink] = [_console(args, out)]
    trace = None
    if args.trace is not None:
        try:
            trace = JsonlSink(args.trace)
        except OSError as exc:
            raise CommandError(f"cannot write trace {args.trace}: {exc.strerror or exc}") from exc
        sinks.append(trace)
    runner = GraphRunner(max_steps=args.max_steps, sinks=sinks)
    try:
        result = anyio.run(runner.run, graph, AgentContext(value))
    except Exception as exc:
        # The console tree masked secrets; the error line must too.
        err.write(f"agentgraph: run failed: {type(exc).__name__}: {masked(_first_line(exc))}\n")
        return 1
    finally:
        if trace is not None:
            trace.close()
    out.write("\n")
    _print_output(result.input, out)
    return 0


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else ""


def _draw(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    graph = load_target(args.target, _model(args.model) or _NoModel())
    if args.trace is None:
        out.write(graph.to_mermaid(direction=args.direction))
        return 0
    from ..tracing import TraceFormatError, load_trace, run_to_mermaid

    try:
        trace = load_trace(args.trace, run=args.run)
    except TraceFormatError as exc:
        raise CommandError(str(exc)) from exc
    out.write(run_to_mermaid(graph, trace, direction=args.direction))
    return 0


def _show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ..tracing import TraceFormatError, load_trace, render_trace, trace_to_html

    try:
        trace = load_trace(args.trace, run=args.run)
    except TraceFormatError as exc:
        raise CommandError(str(exc)) from exc
    if args.html is None:
        render_trace(trace, out, style="plain" if args.plain else "auto")
        return 0
    graph = load_target(args.graph, _NoModel()) if args.graph is not None else None
    page = trace_to_html(trace, graph=graph)
    try:
        Path(args.html).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot write {args.html}: {exc.strerror or exc}") from exc
    out.write(f"wrote {args.html}\n")
    return 0


def _serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        from ..web import dev_app, serve
    except ImportError as exc:
        raise CommandError(str(exc)) from exc
    from ..checkpoint import SQLiteStore
    from ..tracing import TraceFormatError, load_traces

    graph = load_target(args.target, _model(args.model))
    try:
        traces = load_traces(args.trace) if args.trace else ()
    except TraceFormatError as exc:
        raise CommandError(str(exc)) from exc

    def announce(url: str) -> None:
        out.write(f"serving {graph.name} at {url}\nAG-UI endpoint: {url}agui (POST)\n")
        out.flush()

    # Interrupts need a store: without --store, a temporary one lives as long as the server.
    with tempfile.TemporaryDirectory(prefix="agentgraph-serve-") as folder:
        store = SQLiteStore(args.store or Path(folder) / "runs.db")
        runner = GraphRunner(max_steps=args.max_steps)
        app = dev_app(graph, store=store, runner=runner, traces=traces, keep_runs=args.keep_runs)
        try:
            serve(app, host=args.host, port=args.port, announce=announce)
        except OSError as exc:
            raise CommandError(f"cannot serve on {args.host}:{args.port}: {exc}") from exc
    return 0


def _port(text: str) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port (0 to 65535; 0 picks one)")
    return number


def _at_least(least: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `least`."""

    def whole(text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if number < least:
            raise argparse.ArgumentTypeError(f"{number} is not at least {least}")
        return number

    return whole


_positive = _at_least(1)
_count = _at_least(0)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="agentgraph",
        description=(
            "Run a graph, draw it, show a saved trace, serve it (a page, or MCP tools), "
            "or score it on a dataset."
        ),
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    run = commands.add_parser("run", help="run a graph and show its steps as they happen")
    run.add_argument("target", help="module:attribute naming a Graph or a function making one")
    run.add_argument("--input", required=True, help="the input: JSON, or else a plain string")
    run.add_argument("--model", help="provider:name, passed to a factory's `model` parameter")
    run.add_argument("--trace", help="also write the trace to this JSON-lines file")
    run.add_argument("--max-steps", type=_positive, default=1000, help="step cap (default 1000)")
    run.add_argument("--plain", action="store_true", help="plain text, even with rich installed")
    run.set_defaults(handler=_run)
    draw = commands.add_parser("draw", help="print a graph as a Mermaid flowchart")
    draw.add_argument("target", help="module:attribute naming a Graph or a function making one")
    draw.add_argument("--model", help="provider:name, for a factory that needs a model")
    draw.add_argument("--trace", help="a trace file: mark the edges and nodes that run took")
    draw.add_argument("--run", help="which run of the trace file (default: the last)")
    draw.add_argument("--direction", default="TD", choices=("TD", "LR", "BT", "RL"))
    draw.set_defaults(handler=_draw)
    show = commands.add_parser("show", help="show a saved trace as a tree, or as an HTML page")
    show.add_argument("trace", help="a JSON-lines trace file")
    show.add_argument("--html", help="write a self-contained HTML page here instead")
    show.add_argument("--graph", help="module:attribute of the graph, to draw all of it")
    show.add_argument("--run", help="which run of the file (default: the last)")
    show.add_argument("--plain", action="store_true", help="plain text, even with rich installed")
    show.set_defaults(handler=_show)
    serve = commands.add_parser("serve", help="serve the live development page and AG-UI")
    serve.add_argument("target", help="module:attribute naming a Graph or a function making one")
    serve.add_argument("--model", help="provider:name, passed to a factory's `model` parameter")
    serve.add_argument("--store", help="SQLite checkpoint file (default: a temporary one)")
    serve.add_argument("--trace", help="a JSON-lines trace file whose runs the page can open")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback)")
    serve.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0 picks)")
    serve.add_argument("--max-steps", type=_positive, default=1000, help="step cap (default 1000)")
    serve.add_argument(
        "--keep-runs",
        type=_count,
        default=100,
        help="ended runs kept in memory; older ones are read from the store (default 100)",
    )
    serve.set_defaults(handler=_serve)
    add_mcp_command(commands, _positive, _port)
    add_server_commands(commands, _positive, _port)
    add_eval_command(commands, _positive)
    add_runs_command(commands)
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run the command line; returns the exit status."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    parser = _parser()
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list:
        parser.print_help(out)
        return 2
    try:
        args = parser.parse_args(args_list)
        if args.version:
            from .. import __version__

            out.write(f"agentgraph {__version__}\n")
            return 0
        if args.command is None:
            parser.error("a command is required")
        status: int = args.handler(args, out, err)
    except CommandError as exc:
        err.write(f"agentgraph: error: {masked(str(exc))}\n")
        return 2
    except KeyboardInterrupt:
        err.write("agentgraph: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader left (`... | head`): stop quietly, as other command-line tools do.
        _silence(out)
        return 141
    return status


def _silence(out: TextIO) -> None:
    """Point standard output at the null device, so the exit flush cannot fail again."""
    if out is sys.stdout:
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
