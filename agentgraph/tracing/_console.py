"""The console view of a run: a live tree with `rich`, an indented log without it."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .._core._events import RunFinished
from .._util._extras import pip_install
from .._util._redact import Redaction, Redactor
from ._records import Recorder
from ._text import (
    ASCII,
    UNICODE,
    Glyphs,
    call_text,
    entries,
    error_text,
    handoff_text,
    output_text,
    retry_text,
    seconds,
    short,
    step_text,
    tokens,
    tool_text,
    trace_text,
)
from ._trace import ModelCall, RetryRecord, Step, ToolRecord, Trace
from ._tree import TraceBuilder

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.tree import Tree

__all__ = ("ConsoleSink", "Style", "render_trace", "tree_lines")

Style = Literal["auto", "rich", "plain"]

_COLORS = {"ok": "green", "failed": "bold red", "running": "yellow", "interrupted": "magenta"}


def _has_rich() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _use_rich(style: Style) -> bool:
    if style == "rich" and not _has_rich():
        raise ImportError(f"style='rich' needs the rich package: {pip_install('rich')}")
    return style == "rich" or (style == "auto" and _has_rich())


def _glyphs(file: TextIO) -> Glyphs:
    encoding = getattr(file, "encoding", None) or "utf-8"
    try:
        UNICODE.all().encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return ASCII
    return UNICODE


def _fit(text: str, file: TextIO) -> str:
    """`text` as `file` can encode it (user data may hold anything)."""
    encoding = getattr(file, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        text = text.replace("µs", "us").replace("…", "...").replace("·", "|")
        try:
            return text.encode(encoding, "replace").decode(encoding)
        except LookupError:
            return text.encode("ascii", "replace").decode("ascii")
    return text


def _line(item: object, g: Glyphs) -> str:
    if isinstance(item, RetryRecord):
        return retry_text(item, g)
    if isinstance(item, ModelCall):
        return call_text(item, g)
    if isinstance(item, ToolRecord):
        return tool_text(item, g)
    if isinstance(item, Step):
        return step_text(item, g)
    assert isinstance(item, Mapping)
    return output_text(item, g)


def tree_lines(trace: Trace, g: Glyphs = UNICODE) -> list[str]:
    """The run as a plain-text tree, one line per step, retry, model call and tool call."""
    lines = [trace_text(trace, g)]

    def add(items: list[tuple[float, object]], prefix: str) -> None:
        for i, (_, item) in enumerate(items):
            last = i == len(items) - 1
            lines.append(prefix + (g.last if last else g.branch) + _line(item, g))
            if isinstance(item, Step):
                add(entries(item), prefix + ("    " if last else g.pipe))

    add([(s.start, s) for s in trace.steps], "")
    return lines


def rich_tree(trace: Trace) -> Tree:
    """The run as a `rich` tree, coloured by status."""
    from rich.text import Text
    from rich.tree import Tree

    def label(item: object) -> Text:
        text = _line(item, UNICODE)
        if isinstance(item, Step):
            return Text(text, style=_COLORS.get(item.status, ""))
        if isinstance(item, RetryRecord):
            return Text(text, style="yellow")
        if isinstance(item, ToolRecord) and item.is_error:
            return Text(text, style="red")
        if isinstance(item, Mapping) and item.get("event") == "handed_off":
            return Text(text, style="bold blue")
        return Text(text, style="dim" if isinstance(item, ModelCall) else "cyan")

    root = Tree(Text(trace_text(trace), style="bold " + _COLORS.get(trace.status, "")))

    def add(parent: Tree, items: list[tuple[float, object]]) -> None:
        for _, item in items:
            branch = parent.add(label(item))
            if isinstance(item, Step):
                add(branch, entries(item))

    add(root, [(s.start, s) for s in trace.steps])
    return root


def render_trace(trace: Trace, file: TextIO | None = None, *, style: Style = "auto") -> None:
    """Print `trace` as a tree: with `rich` when it is installed (or `style="rich"`)."""
    out = file if file is not None else sys.stdout
    if _use_rich(style):
        from rich.console import Console

        Console(file=out, highlight=False).print(rich_tree(trace))
        return
    g = _glyphs(out)
    out.write(_fit("\n".join(tree_lines(trace, g)) + "\n", out))


class ConsoleSink:
    """A sink that shows runs as they happen.

    With `rich` (the `rich` extra) on a terminal, a live tree of steps that
    grows and updates in place; on other streams the finished tree is printed
    when the run ends. Without `rich` (or with `style="plain"`), one indented
    line per step start, finish, retry, failure, model call, tool call and handoff.
    Secrets are masked as in the trace file.

    Args:
        file: where to write; standard output by default.
        style: `"auto"` (rich when installed), `"rich"` or `"plain"`.
        redact: a redaction hook or a `Redactor`, as for `JsonlSink`.
        live: with rich, redraw the tree in place (True) or print it once at
            the end (False); by default, live exactly when `file` is a terminal.
    """

    def __init__(
        self,
        file: TextIO | None = None,
        *,
        style: Style = "auto",
        redact: Redaction | Redactor | None = None,
        live: bool | None = None,
    ) -> None:
        self.file = file if file is not None else sys.stdout
        self.live = live
        self.rich = _use_rich(style)
        self._recorder = Recorder(redact=redact)
        self._runs: dict[str, TraceBuilder] = {}
        self._glyphs = _glyphs(self.file)
        self._console: Console | None = None
        self._live: Live | None = None

    def __call__(self, event: Any) -> None:
        record = self._recorder(event)
        run = record["run"]
        builder = self._runs.get(run)
        if builder is None:
            builder = self._runs[run] = TraceBuilder()
        builder.add(record)
        if self.rich:
            self._show(builder, finished=isinstance(event, RunFinished))
        else:
            self._log(record, builder)
        if isinstance(event, RunFinished):
            del self._runs[run]

    # -- rich ----------------------------------------------------------------------------
    def _show(self, builder: TraceBuilder, *, finished: bool) -> None:
        from rich.console import Console, Group
        from rich.errors import LiveError
        from rich.live import Live

        if self._console is None:
            force = self.live  # None lets rich decide from the stream
            self._console = Console(
                file=self.file, highlight=False, force_terminal=force, force_interactive=force
            )
        console = self._console
        if not console.is_interactive:
            if finished:  # nothing can be redrawn: print the final tree once
                console.print(rich_tree(builder.build()))
            return
        if self._live is None and not finished:
            live = Live(
                console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False
            )
            try:
                live.start()
            except LiveError:  # another live display owns the terminal: print at the end
                self._console = Console(file=self.file, highlight=False, force_interactive=False)
                return
            self._live = live
        others = [b for b in self._runs.values() if b is not builder or not finished]
        if self._live is not None:
            self._live.update(Group(*(rich_tree(b.build()) for b in others)), refresh=True)
        if finished:
            console.print(rich_tree(builder.build()))  # above the live area, for good
            if not others and self._live is not None:
                self._live.stop()
                self._live = None

    # -- plain ---------------------------------------------------------------------------
    def _log(self, r: Mapping[str, Any], builder: TraceBuilder) -> None:
        g = self._glyphs
        kind = r["event"]
        if kind == "run_finished":
            line = trace_text(builder.build(), g)
        elif kind == "run_started":
            line = f"{g.running} run {r['graph']}"
        else:
            write = _LOG.get(kind)
            if write is None:
                return
            path = r.get("path") or ()
            line = "  " * max(len(path) - 1, 0) + write(r, path[-1] if path else "", g)
        self.file.write(_fit(line + "\n", self.file))
        self.file.flush()


def _started(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    return f"{g.running} {name}"


def _finished(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    attempts = int(r.get("attempts", 1))
    more = f" {g.dot} {attempts} attempts" if attempts > 1 else ""
    return f"{g.ok} {name} {g.dot} {seconds(r['duration'])}{more}"


def _failed(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    attempts = int(r.get("attempts", 1))
    plural = "s" if attempts != 1 else ""
    return (
        f"{g.failed} {name} failed after {attempts} attempt{plural}: {error_text(r.get('error'))}"
    )


def _retry(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    why = error_text(r.get("error"))
    return f"  {g.retry} attempt {r['attempt']} failed: {why} {g.dot} retry in {seconds(r['wait'])}"


def _model(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    used = tokens((r.get("response") or {}).get("usage"), g)
    line = f"  {g.model} model {r['model']} {g.dot} {seconds(r['latency'])}"
    return f"{line} {g.dot} {used}" if used else line


def _tool(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    call = r.get("call") or {}
    mark = f"{g.failed} " if r.get("is_error") else ""
    arguments = short(call.get("arguments", {}), 40)
    result = short(r.get("result", ""), 60)
    return f"  {g.tool} {call.get('name')}({arguments}) {g.arrow} {mark}{result}"


def _handoff(r: Mapping[str, Any], name: str, g: Glyphs) -> str:
    return f"  {handoff_text(r, g)}"


_LOG: dict[str, Callable[[Mapping[str, Any], str, Glyphs], str]] = {
    "node_started": _started,
    "node_finished": _finished,
    "node_failed": _failed,
    "retry_scheduled": _retry,
    "model_responded": _model,
    "tool_finished": _tool,
    "handed_off": _handoff,
}
