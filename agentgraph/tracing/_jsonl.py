"""The JSON-lines trace file, an in-memory recorder, and loading traces back as step trees."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from time import perf_counter
from types import TracebackType
from typing import IO, Any

import anyio
import orjson

from .._core._errors import TraceFormatError
from .._core._events import (
    NodeFailedEvent,
    NodeFinished,
    NodeStarted,
    RetryScheduled,
    RunFinished,
    RunStarted,
)
from .._util._redact import Redaction, Redactor
from .._util._writers import Lane
from ._records import Recorder, Stamped
from ._trace import Trace
from ._tree import TraceBuilder

__all__ = (
    "JsonlSink",
    "TraceRecorder",
    "encode_record",
    "load_trace",
    "load_traces",
    "traces_from_records",
)

# Events that end or begin a step: the writer is asked to write and flush what has
# come by then, so a crash loses at most the records of the step in progress.
_FLUSH_ON = frozenset(
    {RunStarted, NodeStarted, NodeFinished, RetryScheduled, NodeFailedEvent, RunFinished}
)


def encode_record(record: Mapping[str, Any]) -> bytes:
    """One JSON line (with its newline) for `record`."""
    try:
        return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError:  # integers beyond 64 bits, lone surrogates: make them text
        return orjson.dumps(_sanitize(record), option=orjson.OPT_APPEND_NEWLINE)


def _sanitize(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _sanitize(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_sanitize(v) for v in value]
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        return str(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return repr(value)


class JsonlSink:
    """Writes every event of a run as one JSON line, readable with `jq` and `load_trace`.

    ```python
    with JsonlSink("run.jsonl") as sink:
        await GraphRunner(sinks=[sink]).run(graph, ctx)
    trace = load_trace("run.jsonl")
    ```
    The file is created (or emptied, unless `append=True`) here, so a path that
    cannot be written fails at once. The event loop only stamps each event with
    its time and run and queues it; a writer thread (one of a few all sinks
    share) turns the events into records (converted and redacted), writes them
    and flushes the lines of each step as the step begins and ends (while it is
    still busy with earlier lines, it takes the later ones in the same turn),
    so the loop never waits for that work or for the disk. A run's end waits
    until all its lines are written
    and the file is closed (it is reopened for the next run). Use the sink as a
    context manager (or call `close`) to write what is left when a run is
    abandoned mid-way.

    Records are made from the events after the event was sent, in the writer
    thread (where a redaction hook is called too): a value a node changes in
    place after its step (rather than returning a new one) may be recorded as
    changed.

    Args:
        path: the file to write.
        redact: a redaction hook `(field, text) -> text` or a `Redactor`;
            secrets are masked either way.
        append: add to an existing file instead of replacing it.
        wait: a run's end waits until its lines are written and the file is
            closed (the default). With False the run ends at once and the
            writer finishes its lines soon after: the steps' lines are still
            flushed as each step begins and ends, but the run's last lines
            reach the file only later (`flush` or `close` wait for them; a
            process that exits without calling `close` may lose them), and a
            write error is raised at the sink's next event or `close`. It
            saves the event loop the wait for the writer thread at every
            run's end (a third of what the sink costs the loop on short runs).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        redact: Redaction | Redactor | None = None,
        append: bool = False,
        wait: bool = True,
    ) -> None:
        self.path = Path(path)
        self.wait = wait
        self._recorder = Recorder(redact=redact)
        self._writer = _Writer(self.path, self._recorder, append=append)
        self._runs = self._recorder._state
        self._queue = self._writer.queue

    def __call__(self, event: Any) -> Awaitable[None] | None:
        """Take `event`: at once, or (a run's last event) once its run's lines are written."""
        writer = self._writer
        if writer.error is not None:
            writer.check()
        # `Recorder._stamp`, written out: this is all the event loop does per event.
        kind = type(event)
        state = self._runs.get()
        if state is None or kind is RunStarted or kind is RunFinished:
            self._queue.append(self._recorder.stamp_edge(event, state, kind))
            if kind is RunFinished:
                if self.wait:
                    return self._settled()
                self._writer.settle_soon(True, _nothing)
                return None
        else:
            self._queue.append((event, state, perf_counter()))
        if kind in _FLUSH_ON and not writer.asked:
            writer.ask()
        return None

    async def _settled(self) -> None:
        # The thread says when it is done through the event loop itself: cheaper for the
        # loop than a worker thread that waits for it (to_thread), which costs a short
        # run more than all its events. A run's end always waits for its lines, cancelled too.
        done = anyio.Event()
        soon = _call_soon()
        self._writer.settle_soon(True, lambda: soon(done.set))
        try:
            await done.wait()
        except anyio.get_cancelled_exc_class():
            # A shielded wait costs a run more than its events: taken only when cancelled.
            with anyio.CancelScope(shield=True):
                await done.wait()
            raise
        self._writer.check()

    def flush(self) -> None:
        """Write what is pending now (blocking)."""
        self._writer.settle(False)
        self._writer.check()

    def close(self) -> None:
        """Write what is pending and close the file (blocking); a later event reopens it."""
        self._writer.settle(True)
        self._writer.check()

    def __enter__(self) -> JsonlSink:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Writer:
    """The file, and the lane of the shared writer threads that records events and writes them.

    Events wait in `queue` (appended by the event loop, taken by the writer: a
    deque is safe for that between two threads) and are recorded and written in
    that order, on one of a few threads shared by every sink of the process
    (`agentgraph._util._writers`), so a sink holds no thread of its own, however
    often sinks are opened and closed. `ask` has the writer take what is
    queued; at most one such request waits at a time, so a writer busy with
    earlier lines costs the loop nothing more per step. An error there (a
    full disk) is kept for `check` to raise where the sink is called, so the
    runner detaches the sink (or ends the run) as it does for any failing sink.
    """

    def __init__(self, path: Path, recorder: Recorder, *, append: bool) -> None:
        self._path = path
        self._recorder = recorder
        self._file: IO[bytes] | None = open(path, "ab" if append else "wb")  # noqa: SIM115
        self._lane: Lane[tuple[bool, Callable[[], object]] | None] = Lane(self._handle)
        self.queue: deque[Stamped] = deque()
        self.asked = False
        """A request to write is waiting: the writer clears this before it takes the queue,
        so an event queued while it is set is taken by that request."""
        self.error: Exception | None = None  # set by the writer, raised by `check`

    def ask(self) -> None:
        """Have the writer record, write and flush what is queued; returns at once."""
        self.asked = True
        self._lane.send(None)

    def settle(self, close: bool) -> None:
        """Wait until everything sent is written and flushed; then close the file if `close`."""
        done = threading.Event()
        self.settle_soon(close, done.set)
        done.wait()

    def settle_soon(self, close: bool, then: Callable[[], object]) -> None:
        """`settle` without waiting: the writer calls `then` once it is done."""
        self._lane.send((close, then))

    def check(self) -> None:
        """Raise the error the writer met since the last check, if any."""
        error, self.error = self.error, None
        if error is not None:
            raise error

    def _handle(self, item: tuple[bool, Callable[[], object]] | None) -> None:
        try:
            self._drain()
        except Exception as exc:
            self.error = self.error or exc
        if item is None:
            return
        close, then = item
        try:
            file = self._file
            if file is not None and close:
                self._file = None
                file.close()  # flushes first, and closes even when that fails
            elif file is not None:
                file.flush()
        except Exception as exc:
            self.error = self.error or exc
        with contextlib.suppress(Exception):  # an event loop that has ended
            then()

    def _drain(self) -> None:
        """Record and write every queued event, then flush unless more work waits."""
        self.asked = False
        queue, build = self.queue, self._recorder._build
        lines = []
        while queue:
            lines.append(encode_record(build(queue.popleft())))
        if not lines:
            return
        if self._file is None:
            self._file = open(self._path, "ab")  # noqa: SIM115
        self._file.writelines(lines)
        if not self._lane.pending():
            self._file.flush()


def _nothing() -> None:
    """What a sink that does not wait for its run's lines does once they are written."""


def _call_soon() -> Callable[[Callable[[], object]], object]:
    """What calls a function soon in the running event loop, from any thread."""
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            soon: Callable[[Callable[[], object]], object] = (
                trio.lowlevel.current_trio_token().run_sync_soon
            )
            return soon
        except RuntimeError:  # trio is imported, but this loop is asyncio's
            pass
    import asyncio  # the running loop is asyncio's, which is imported then

    return asyncio.get_running_loop().call_soon_threadsafe


class TraceRecorder:
    """Keeps the records of every run in memory: for tests, and to draw a run just made.

    ```python
    recorder = TraceRecorder()
    await GraphRunner(sinks=[recorder]).run(graph, ctx)
    print(run_to_mermaid(graph, recorder.trace()))
    ```
    """

    def __init__(self, *, redact: Redaction | Redactor | None = None) -> None:
        self._recorder = Recorder(redact=redact)
        self.records: list[dict[str, Any]] = []

    def __call__(self, event: Any) -> None:
        self.records.append(self._recorder(event))

    def traces(self) -> tuple[Trace, ...]:
        """Every run recorded so far, in the order they started."""
        return traces_from_records(self.records, source="memory")

    def trace(self, run: str | None = None) -> Trace:
        """The run with id `run`, or the last one started."""
        return _pick(self.traces(), run, "memory")


def traces_from_records(
    records: Iterable[Mapping[str, Any]], *, source: str = "records"
) -> tuple[Trace, ...]:
    """Step trees from records, one per run id, in the order the runs started."""
    builders: dict[str, TraceBuilder] = {}
    for number, record in enumerate(records, 1):
        try:
            run = str(record.get("run", ""))
            builder = builders.get(run)
            if builder is None:
                builder = builders[run] = TraceBuilder()
            builder.add(record)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            reason = f"malformed {_kind(record)} record ({type(exc).__name__}: {exc})"
            raise TraceFormatError(source, reason, line=number) from exc
    return tuple(builder.build() for builder in builders.values())


def _kind(record: Any) -> str:
    kind = record.get("event") if isinstance(record, Mapping) else None
    return repr(kind) if isinstance(kind, str) else "untyped"


def _read(path: Path) -> list[Mapping[str, Any]]:
    source = str(path)
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise TraceFormatError(source, exc.strerror or str(exc)) from exc
    records: list[Mapping[str, Any]] = []
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if i == last and not line.rstrip().endswith(b"}"):
                break  # a line cut short by a crash mid-write: keep everything before it
            raise TraceFormatError(source, f"not JSON ({exc})", line=i + 1) from exc
        if not isinstance(record, dict) or not isinstance(record.get("event"), str):
            raise TraceFormatError(source, "not a trace record (no 'event' field)", line=i + 1)
        records.append(record)
    return records


def load_traces(path: str | os.PathLike[str]) -> tuple[Trace, ...]:
    """Every run in a JSON-lines trace file, as step trees.

    Raises:
        TraceFormatError: the file cannot be read or holds something other than records.
    """
    path = Path(path)
    return traces_from_records(_read(path), source=str(path))


def load_trace(path: str | os.PathLike[str], *, run: str | None = None) -> Trace:
    """One run of a JSON-lines trace file: the one with id `run`, or the last one.

    Raises:
        TraceFormatError: the file cannot be read, holds no run, or not that run.
    """
    path = Path(path)
    return _pick(load_traces(path), run, str(path))


def _pick(traces: tuple[Trace, ...], run: str | None, source: str) -> Trace:
    if not traces:
        raise TraceFormatError(source, "it holds no run")
    if run is None:
        return traces[-1]
    for trace in traces:
        if trace.run == run:
            return trace
    known = ", ".join(t.run for t in traces)
    raise TraceFormatError(source, f"no run {run!r} (runs: {known})")
