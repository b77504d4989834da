"""The Starlette apps: a graph as an AG-UI agent, and the live development page around it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
from ag_ui.core import RunAgentInput, RunErrorEvent, RunStartedEvent
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from .._core._context import AgentContext
from .._core._errors import AgentGraphError, CheckpointError, RunBusy, RunInputError
from .._core._graph import Graph
from .._core._node import Node
from .._core._runner import NO_ANSWER, GraphRunner, as_graph
from .._util._input import read_input
from .._util._redact import Redaction, Redactor
from ..tracing._diagram import diagram_from_graph
from ..tracing._html import _step_data
from ..tracing._svg import diagram_svg, timeline_svg
from ..tracing._trace import Trace
from ._agui import context_from_input
from ._page import page
from ._runs import KEEP_RUNS, LiveRun, Runs, Store

__all__ = ("agui_app", "dev_app")

_MAX_BODY = 4 * 1024 * 1024


class _EventStream(StreamingResponse):
    """An SSE response that notices at once when its client leaves, even between events."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async with anyio.create_task_group() as tg:

            async def stream() -> None:
                with contextlib.suppress(OSError):  # the client went away mid-write
                    await self.stream_response(send)
                tg.cancel_scope.cancel()

            tg.start_soon(stream)
            await self.listen_for_disconnect(receive)
            tg.cancel_scope.cancel()


def _sse(live: LiveRun, start: int, on_exit: Callable[[], object] | None = None) -> Response:
    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in live.channel.stream(start):
                yield chunk
        finally:
            if on_exit is not None:
                on_exit()

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return _EventStream(body(), media_type="text/event-stream", headers=headers)


def _failed_run(run_input: RunAgentInput, error: Exception, redactor: Redactor) -> Response:
    """An AG-UI run that could not begin, as the start and error events a client expects."""
    message = redactor.text(f"{type(error).__name__}: {error}", "error")
    events = (
        RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id),
        RunErrorEvent(message=message, code=type(error).__name__),
    )

    async def body() -> AsyncIterator[bytes]:
        for event in events:
            yield b"data: " + orjson.dumps(event.model_dump(mode="json", by_alias=True)) + b"\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


def _refuse(reason: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"error": reason}, status_code=status)


def _not_started(error: AgentGraphError, redactor: Redactor) -> JSONResponse:
    """A run the page asked for that could not start, as a JSON error with a fitting status.

    A bad request is the client's to fix (422), a busy run or thread is worth
    retrying later (409), a store that failed is the server's (503); anything
    else is an error of the server (500). The message is masked, as in a run.
    """
    if isinstance(error, RunInputError):
        return _refuse(str(error))
    status = 500
    if isinstance(error, RunBusy):
        status = 409
    elif isinstance(error, CheckpointError):
        status = 503
    message = redactor.text(f"{type(error).__name__}: {error}", "error")
    return JSONResponse({"error": message, "code": type(error).__name__}, status_code=status)


async def _json_body(request: Request) -> Any:
    data = await request.body()
    if len(data) > _MAX_BODY:
        raise RunInputError(f"the request body is over {_MAX_BODY} bytes")
    if not data.strip():
        return {}
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise RunInputError(f"the request body is not JSON: {exc}") from exc


def _lifespan(runs: Runs) -> Any:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            runs.tasks = tg
            try:
                yield
            finally:
                for run_id in list(runs.live):
                    runs.cancel(run_id)
                runs.tasks = None
        if runs.store is not None:
            await runs.store.aclose()

    return lifespan


class _Endpoints:
    """The HTTP face of one `Runs`."""

    def __init__(self, runs: Runs, title: str, *, repair_history: bool = False) -> None:
        self.runs = runs
        self.title = title
        self.repair_history = repair_history

    async def agui(self, request: Request) -> Response:
        """AG-UI: a `RunAgentInput` in, the run's events out; leaving cancels the run."""
        try:
            body = await request.body()
            if len(body) > _MAX_BODY:
                raise RunInputError(f"the request body is over {_MAX_BODY} bytes")
            try:
                run_input = RunAgentInput.model_validate_json(body)
            except ValidationError as exc:
                raise RunInputError(f"not an AG-UI RunAgentInput: {exc}") from exc
            live = await self._agui_run(run_input)
        except RunInputError as exc:
            return _refuse(str(exc))
        except Exception as exc:  # the store failed: still one whole AG-UI run, ending in error
            return _failed_run(run_input, exc, self.runs.redactor)
        runs = self.runs
        return _sse(live, live.mark, lambda: runs.cancel(live.id))

    async def _agui_run(self, run_input: RunAgentInput) -> LiveRun:
        runs = self.runs
        if run_input.resume:
            if len(run_input.resume) != 1:
                raise RunInputError("a run waits for one answer at a time; send one resume entry")
            entry = run_input.resume[0]
            # Without a payload there is no answer: a cancelled run goes on from its
            # last step, and an interrupted one asks its question again.
            answer: Any = NO_ANSWER if entry.payload is None else entry.payload
            if entry.status != "resolved":
                answer = False
            return await runs.resume(
                entry.interrupt_id,
                answer,
                thread_id=run_input.thread_id,
                agui_run_id=run_input.run_id,
            )
        ctx = context_from_input(run_input, repair=self.repair_history)
        return await runs.start(ctx, run_id=run_input.run_id, thread_id=run_input.thread_id)

    async def index(self, request: Request) -> Response:
        graph = self.runs.graph
        svg = diagram_svg(diagram_from_graph(graph))
        return HTMLResponse(page(self.title, svg, offline=_scripted(graph)))

    async def list_runs(self, request: Request) -> Response:
        return JSONResponse({"graph": self.runs.graph.name, "runs": await self.runs.listing()})

    async def start_run(self, request: Request) -> Response:
        try:
            body = await _json_body(request)
            text = body.get("input") if isinstance(body, dict) else None
            if not isinstance(text, str) or not text.strip():
                raise RunInputError('send {"input": "..."} with the text to run on')
            thread = body.get("thread")
            if thread is not None and (not isinstance(thread, str) or not thread):
                raise RunInputError('"thread" names a thread: a non-empty string')
            try:
                value = read_input(text)
            except ValueError as exc:
                raise RunInputError(f"the input {exc}") from exc
            live = await self.runs.start(AgentContext(value), thread_id=thread)
        except AgentGraphError as exc:
            return _not_started(exc, self.runs.redactor)
        return JSONResponse({"id": live.id})

    async def view(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        found = await self.runs.trace(run_id)
        if found is None:
            return _refuse(f"no run {run_id!r}", 404)
        trace, facts = found
        return JSONResponse({"id": run_id, **facts, **_pictures(self.runs.graph, trace)})

    async def events(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        live = self.runs.live.get(run_id)
        if live is None:
            # Ended runs leave memory after a while; their steps stay readable from the store.
            return _refuse(f"no live run {run_id!r}: read what it did at api/runs/{run_id}", 404)
        start = request.query_params.get("from", "0")
        return _sse(live, int(start) if start.isdigit() else 0)

    async def resume(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            body = await _json_body(request)
            if not isinstance(body, dict):
                raise RunInputError('send a JSON object: {"approve": true} or {}')
            answer: Any = NO_ANSWER
            if "approve" in body:
                reason = body.get("reason")
                answer = True if body["approve"] is True else (reason or False)
            live = await self.runs.resume(run_id, answer)
        except AgentGraphError as exc:
            return _not_started(exc, self.runs.redactor)
        return JSONResponse({"id": live.id, "from": live.mark})

    async def cancel(self, request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if not self.runs.cancel(run_id):
            return _refuse(f"no running run {run_id!r}", 404)
        return JSONResponse({"id": run_id})


def _scripted(node: Any, depth: int = 0) -> bool:
    """True when a node of the graph (subgraphs included) asks a scripted test model."""
    model = getattr(node, "model", None)
    if model is not None and type(model).__module__.startswith("agentgraph.testing"):
        return True
    if depth > 20:  # nesting that deep is a cycle of references, not a graph
        return False
    children = getattr(node, "members", None) or getattr(node, "branches", None) or ()
    return any(_scripted(child, depth + 1) for child in children)


def _pictures(graph: Graph[Any, Any], trace: Trace) -> dict[str, Any]:
    """The trace page's pictures and step data for one run, as it stands."""
    steps = [_step_data(step) for step in trace.walk()]
    for data, step in zip(steps, trace.walk(), strict=True):
        data["depth"] = step.depth
    return {
        "graph_svg": diagram_svg(diagram_from_graph(graph, trace)),
        "timeline_svg": timeline_svg(trace),
        "steps": steps,
        "trace_status": trace.status,
        "trace_output": trace.output,
    }


def _runs(
    graph: Node[Any, Any],
    runner: GraphRunner | None,
    store: Store | None,
    redact: Redaction | Redactor | None,
    traces: tuple[Trace, ...] = (),
    keep_runs: int = KEEP_RUNS,
) -> Runs:
    redactor = redact if isinstance(redact, Redactor) else Redactor(redact)
    return Runs(
        as_graph(graph),
        runner=runner or GraphRunner(),
        store=store,
        redactor=redactor,
        traces=traces,
        keep=keep_runs,
    )


def agui_app(
    graph: Node[Any, Any],
    *,
    runner: GraphRunner | None = None,
    store: Store | None = None,
    redact: Redaction | Redactor | None = None,
    keep_runs: int = KEEP_RUNS,
    repair_history: bool = False,
) -> Starlette:
    """`graph` as an AG-UI agent: POST a `RunAgentInput` to `/`, read its events as SSE.

    The client's messages and state become the run's first context (the last
    user message is the input; the client's own tools and context entries are
    not used, since the graph's nodes hold their tools). A client that
    disconnects cancels its run,
    which ends `GraphCancelled`; with a `store` it continues when a request
    carries a `resume` entry naming it without a `payload`, and an
    interrupted run (a tool call waiting for approval) continues when the
    next request carries a `resume` entry answering its interrupt. Every
    answer is one whole AG-UI run (a start, then a finish or an error) or a
    4xx refusal. Everything
    sent is redacted (`redact` adds a hook to the built-in masking).
    Runs going on and the last `keep_runs` that ended stay in memory; older
    ones are in `store` only.

    A client's history that no provider would take (a tool call without its
    result, a result without its call) is refused with a 422 naming the rule
    and the message's position; with `repair_history=True` it is mended by
    `repair_transcript` instead, and the changes are in the run's
    `ctx.state["transcript_repairs"]`.
    """
    runs = _runs(graph, runner, store, redact, keep_runs=keep_runs)
    endpoints = _Endpoints(runs, runs.graph.name, repair_history=repair_history)
    return Starlette(
        routes=[Route("/", endpoints.agui, methods=["POST"])], lifespan=_lifespan(runs)
    )


def dev_app(
    graph: Node[Any, Any],
    *,
    store: Store,
    runner: GraphRunner | None = None,
    redact: Redaction | Redactor | None = None,
    traces: tuple[Trace, ...] = (),
    title: str | None = None,
    keep_runs: int = KEEP_RUNS,
) -> Starlette:
    """The live development page for `graph`, with its AG-UI endpoint at `/agui`.

    The page draws the graph, lists runs (live, from `store`, and from
    `traces` loaded with `load_traces`), starts runs on the text typed into
    its form, shows their steps as they happen and answers interrupts. Every
    browser watching a run reads the same events; none of them can slow the
    run. The app closes `store` when it shuts down. Runs going on and the
    last `keep_runs` that ended are kept in memory (with their events for
    `/api/runs/{id}/events`); older ones are read back from `store`.
    """
    runs = _runs(graph, runner, store, redact, traces, keep_runs)
    endpoints = _Endpoints(runs, title or f"{runs.graph.name} · agentgraph")
    routes = [
        Route("/", endpoints.index),
        Route("/agui", endpoints.agui, methods=["POST"]),
        Route("/api/runs", endpoints.list_runs),
        Route("/api/runs", endpoints.start_run, methods=["POST"]),
        Route("/api/runs/{run_id}", endpoints.view),
        Route("/api/runs/{run_id}/events", endpoints.events),
        Route("/api/runs/{run_id}/resume", endpoints.resume, methods=["POST"]),
        Route("/api/runs/{run_id}/cancel", endpoints.cancel, methods=["POST"]),
    ]
    return Starlette(routes=routes, lifespan=_lifespan(runs))
