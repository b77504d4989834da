"""The runs a server knows: live ones it started, and past ones from a store or a trace file.

A live run is driven in the server's own task group, not in the request
that started it, so cancelling it (a client that left) ends it with
`GraphCancelled` and its context, like any handle cancel. Each run keeps
its AG-UI events (for every reader, through a `Channel`) and its step events,
which become redacted trace records (for the page) only when someone looks:
the run itself pays for the AG-UI events alone.

A server lives long and sees many runs, so only the runs going on and the
last `keep` that ended stay in memory; an older one is read back from the
store (a reader already streaming its events keeps its own reference).
"""

from __future__ import annotations

import inspect
import itertools
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import anyio
import attrs
from anyio.abc import TaskGroup

from .._core._context import AgentContext
from .._core._errors import CheckpointError, GraphCancelled, Interrupted, RunInputError, UsageError
from .._core._errors_threads import ThreadBusy
from .._core._events import NodeFinished, NodeStarted
from .._core._graph import Graph
from .._core._journal import JournalSource
from .._core._runner import ANY_HEAD, NO_ANSWER, GraphRunner, Head, RunHandle, new_run_id
from .._util._redact import Redactor
from ..checkpoint._lease import LEASE_TERM
from ..checkpoint._records import RunLog
from ..checkpoint._threads import ThreadStore
from ..tracing._jsonl import traces_from_records
from ..tracing._records import plain
from ..tracing._trace import Trace
from ..tracing._tree import TraceBuilder
from ._agui import AguiTranslator, step_name
from ._hub import Channel
from ._trail import Trail, log_status, records_from_log, stored_output
from ._turns import on_thread

__all__ = ("LiveRun", "Runs", "Store")

_MAX_ID = 128
KEEP_RUNS = 100
"""How many ended runs a server keeps in memory by default, besides those going on."""


@runtime_checkable
class Store(JournalSource, Protocol):
    """A checkpoint store the server can record runs in and read them back from."""

    async def load(self, run_id: str) -> RunLog | None: ...

    async def aclose(self) -> None: ...


@attrs.define(eq=False)
class LiveRun:
    """A run this server started (or resumed): its records, its events and how it stands."""

    id: str
    thread_id: str
    started: float
    channel: Channel = attrs.field(factory=Channel)
    trail: Trail = attrs.field(factory=lambda: Trail(Redactor()))
    status: str = "running"
    active: tuple[str, ...] = ()
    question: Any = None
    input: Any = None
    """The run's input, redacted, for the page to tell runs apart."""
    output: Any = None
    error: str | None = None
    handle: RunHandle = attrs.field(factory=RunHandle)
    done: anyio.Event = attrs.field(factory=anyio.Event)
    segments: int = 0
    mark: int = 0
    """Where the events of the latest start or resume begin in the channel."""
    threaded: bool = False
    """The run is a turn of the thread `thread_id` in the store."""
    head: Head = ANY_HEAD
    """The thread's head the turn's context was worked out from (see `on_thread`)."""
    ended: int = 0
    """When the run last ended, as a count of the runs this server saw end (0: never)."""

    @property
    def finished(self) -> bool:
        return self.status != "running"


class Runs:
    """Starts, resumes, cancels and describes the runs of one graph."""

    def __init__(
        self,
        graph: Graph[Any, Any],
        *,
        runner: GraphRunner,
        store: Store | None,
        redactor: Redactor,
        traces: tuple[Trace, ...] = (),
        keep: int = KEEP_RUNS,
    ) -> None:
        if keep < 0:
            raise UsageError(f"keep_runs is a count of runs, 0 or more, not {keep}")
        self.keep = keep
        self._ends = itertools.count(1)
        self.graph = graph
        self.runner = runner
        self.store = store
        self.redactor = redactor
        self.traces = {trace.run: trace for trace in traces}
        self.live: dict[str, LiveRun] = {}
        self.tasks: TaskGroup | None = None

    # -- starting and stopping ------------------------------------------------------------
    async def start(
        self,
        ctx: AgentContext[Any],
        *,
        run_id: str | None = None,
        thread_id: str | None = None,
        agui_run_id: str | None = None,
    ) -> LiveRun:
        """Start a run of the graph on `ctx`; it goes on in the server's task group.

        The run is this server's from before anything is read: until it ends,
        a second start with its id is refused, and so is a turn of its thread
        (`ThreadBusy`), whose reading of the thread would race this one's
        (see `on_thread`).
        """
        rid = new_run_id() if run_id is None else run_id
        _check_id(rid, "run")
        if rid in self.live:
            raise _taken(rid)
        threaded = thread_id is not None and isinstance(self.store, ThreadStore)
        if threaded:
            assert thread_id is not None
            _check_id(thread_id, "thread")
            self._check_idle(thread_id, ctx)
        live = self.live[rid] = self._new(rid, thread_id)
        live.threaded = threaded
        try:
            if self.store is not None and await self.store.load(rid):
                raise _taken(rid)
            if threaded:
                assert thread_id is not None
                types = self.runner.types.with_types(*self.graph.data_types())
                ctx, live.head = await on_thread(self.store, thread_id, ctx, types)
            live.input = self._clean(ctx.input, "input")
            self._launch(live, agui_run_id or rid, lambda runner: self._go(runner, live, ctx))
        except BaseException:  # not started: the id and the thread are free again
            del self.live[rid]
            raise
        return live

    async def resume(
        self,
        run_id: str,
        answer: Any = NO_ANSWER,
        *,
        thread_id: str | None = None,
        agui_run_id: str | None = None,
    ) -> LiveRun:
        """Continue a stopped run (interrupted or cancelled) from the store, with `answer`."""
        if self.store is None:
            raise RunInputError("this server has no checkpoint store, so no run can be resumed")
        live = self.live.get(run_id)
        if live is not None and not live.finished:
            raise RunInputError(f"run {run_id!r} is still running")
        if live is None:
            log = await self._load(run_id)
            if log is None:
                raise RunInputError(f"no run {run_id!r} in the store")
            if log_status(log) == "ok":
                raise RunInputError(f"run {run_id!r} finished; there is nothing to resume")
            if run_id in self.live:  # another request took it up while the store was read
                raise RunInputError(f"run {run_id!r} is still running")
            live = self.live[run_id] = self._new(run_id, thread_id)
        elif live.status == "ok":
            raise RunInputError(f"run {run_id!r} finished; there is nothing to resume")
        live.status, live.question, live.error = "running", None, None
        live.handle, live.done = RunHandle(), anyio.Event()
        live.channel.reopen()
        live.mark = len(live.channel.log)
        store = self.store
        segment = agui_run_id or f"{run_id}.{live.segments + 1}"
        self._launch(
            live,
            segment,
            lambda runner: runner.resume(
                self.graph, run_id, store, answer=answer, handle=live.handle
            ),
        )
        return live

    def _new(self, run_id: str, thread_id: str | None) -> LiveRun:
        return LiveRun(run_id, thread_id or run_id, time.time(), trail=Trail(self.redactor))

    def cancel(self, run_id: str) -> bool:
        """Cancel a live run; False when there is no such run still running."""
        live = self.live.get(run_id)
        if live is None or live.finished:
            return False
        live.handle.cancel()
        return True

    def _check_idle(self, thread_id: str, ctx: AgentContext[Any]) -> None:
        """Refuse a turn of `thread_id` while another turn of it is this server's."""
        for other in self.live.values():
            if other.threaded and other.thread_id == thread_id and not other.finished:
                owner = f"run {other.id!r} of this server"
                raise ThreadBusy(thread_id, owner, time.time() + LEASE_TERM, context=ctx)

    async def _go(self, runner: GraphRunner, live: LiveRun, ctx: AgentContext[Any]) -> Any:
        thread = live.thread_id if live.threaded else None
        return await runner.run(
            self.graph,
            ctx,
            handle=live.handle,
            store=self.store,
            run_id=live.id,
            thread_id=thread,
            expect_head=live.head,
        )

    def _launch(
        self, live: LiveRun, agui_run_id: str, go: Callable[[GraphRunner], Awaitable[Any]]
    ) -> None:
        if self.tasks is None:
            raise RuntimeError("the server's task group is not running (start the app's lifespan)")
        live.segments += 1
        translator = AguiTranslator(
            thread_id=live.thread_id, run_id=agui_run_id, redactor=self.redactor
        )
        runner = self.runner.evolve(sinks=(*self.runner.sinks, self._sink(live, translator)))
        self.tasks.start_soon(self._drive, live, translator, runner, go)

    def _sink(self, live: LiveRun, translator: AguiTranslator) -> Callable[[Any], None]:
        publish = live.channel.publish
        remember = live.trail.add
        translate = translator.data

        def sink(event: Any) -> None:
            remember(event)
            if isinstance(event, NodeStarted):
                live.active = (step_name(event.path),)
            elif isinstance(event, NodeFinished):
                live.active = ()
            for item in translate(event):
                publish(item)

        return sink

    async def _drive(
        self,
        live: LiveRun,
        translator: AguiTranslator,
        runner: GraphRunner,
        go: Callable[[GraphRunner], Awaitable[Any]],
    ) -> None:
        ending: BaseException | None = None
        try:
            out = await go(runner)
            live.status, live.output = "ok", self._clean(out.input, "output")
        except Interrupted as stopped:
            live.status, live.question = "interrupted", self._clean(stopped.question, "question")
            ending = stopped
        except GraphCancelled as cancelled:
            live.status, ending = "cancelled", cancelled
        except Exception as error:
            live.status, ending = "failed", error
            live.error = self.redactor.text(f"{type(error).__name__}: {error}", "error")
        finally:
            live.active = ()
            # Only this start's or resume's events count: an earlier segment's start
            # is not this one's.
            kinds = [str(item.get("type")) for item in live.channel.log[live.mark :]]
            for event in translator.framing(kinds, ending, status=live.status, output=live.output):
                live.channel.publish(event.model_dump(mode="json", by_alias=True))
            live.channel.close()
            live.ended = next(self._ends)
            live.done.set()
            self._forget()

    def _forget(self) -> None:
        """Drop the runs that ended longest ago, past the last `keep` (the store has them)."""
        ended = [run for run in self.live.values() if run.finished]
        if len(ended) > self.keep:
            ended.sort(key=lambda run: run.ended)
            for run in ended[: len(ended) - self.keep]:
                del self.live[run.id]

    def _clean(self, value: Any, field: str) -> Any:
        return self.redactor.record({field: plain(value)})[field]

    # -- describing ------------------------------------------------------------------------
    async def listing(self) -> list[dict[str, Any]]:
        """Every run known: live ones first (newest first), then stored, then traced."""
        rows = [
            {
                "id": r.id,
                "status": r.status,
                "started": r.started,
                "source": "live",
                "input": r.input,
            }
            for r in sorted(self.live.values(), key=lambda r: r.started, reverse=True)
        ]
        seen = set(self.live)
        for run_id in await self._stored_ids():
            if run_id not in seen:
                log = await self._load(run_id)
                if log is not None:
                    rows.append(
                        {
                            "id": run_id,
                            "status": log_status(log),
                            "started": log.run.created,
                            "source": "store",
                        }
                    )
                    seen.add(run_id)
        for trace in self.traces.values():
            if trace.run not in seen:
                rows.append(
                    {
                        "id": trace.run,
                        "status": trace.status,
                        "started": trace.started_at,
                        "source": "trace",
                    }
                )
        return rows

    async def trace(self, run_id: str) -> tuple[Trace, dict[str, Any]] | None:
        """The step tree of a run and its facts, or None when no such run is known."""
        live = self.live.get(run_id)
        if live is not None:
            records = live.trail.all()
            traces = traces_from_records(records) if records else ()
            trace = traces[-1] if traces else attrs.evolve(TraceBuilder().build(), run=run_id)
            facts = {
                "status": live.status,
                "active": list(live.active),
                "question": live.question,
                "input": live.input,
                "output": live.output,
                "error": live.error,
                "events": len(live.channel.log),
                "source": "live",
            }
            return trace, facts
        log = await self._load(run_id)
        if log is not None:
            trace = traces_from_records(records_from_log(log))[-1]
            status = log_status(log)
            facts = {"status": status, "active": [], "source": "store", "events": 0}
            if status == "ok":
                facts.update(await self._stored_output(log))
            return trace, facts
        traced = self.traces.get(run_id)
        if traced is not None:
            return traced, {"status": traced.status, "active": [], "source": "trace", "events": 0}
        return None

    async def _stored_output(self, log: RunLog) -> dict[str, Any]:
        """A finished stored run's output, as a live run shows it; or why it cannot be read."""
        types = self.runner.types.with_types(*self.graph.data_types())
        try:
            return {"output": self._clean(await stored_output(self.store, log, types), "output")}
        except CheckpointError as exc:
            return {"error": self._clean(f"{type(exc).__name__}: {exc}", "error")}

    async def _stored_ids(self) -> tuple[str, ...]:
        lister = getattr(self.store, "run_ids", None)
        if lister is None:
            return ()
        ids = lister() if callable(lister) else lister  # a method, or a property
        if inspect.isawaitable(ids):
            ids = await ids
        return tuple(str(i) for i in ids)

    async def _load(self, run_id: str) -> RunLog | None:
        if self.store is None or len(run_id) > _MAX_ID:
            return None
        return await self.store.load(run_id)


def _check_id(value: str, kind: str) -> None:
    if not value or len(value) > _MAX_ID or not value.isprintable():
        raise RunInputError(f"a {kind} id is 1 to {_MAX_ID} printable characters")


def _taken(run_id: str) -> RunInputError:
    return RunInputError(f"run id {run_id!r} is taken; resume that run or pick a new id")
