"""`TemporalRunner`: start runs on Temporal and follow them, as `GraphRunner` does locally."""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

import anyio
import attrs
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
)
from temporalio.exceptions import ApplicationError

from .._core._context import AgentContext
from .._core._errors import GraphCancelled, GraphTimeout, RunError, StepLimitExceeded, UsageError
from .._core._json import Types
from .._core._runner import _check_input, as_graph, new_run_id
from ._convert import BLOB_THRESHOLD, BlobStore
from ._worker import client_for
from ._workflow import ANSWER, STATE, WORKFLOW

__all__ = ("RunFailed", "RunState", "TemporalRun", "TemporalRunner")

In = TypeVar("In")
Out = TypeVar("Out")


class RunFailed(RunError):
    """A run on Temporal ended with an agentgraph error of kind `kind` (`NodeFailed`, say).

    Carries the last good context, as the local error does; the original
    exception stayed in the worker (its message is this error's).
    """

    def __init__(
        self, message: str, *, kind: str, context: AgentContext[Any], step: int, path: Any = ()
    ) -> None:
        self.kind = kind
        super().__init__(f"{kind}: {message}", context=context, step=step, path=path)


@attrs.frozen
class RunState:
    """What a running workflow reports: its last completed context and step, and any question.

    Attributes:
        context: the last completed context of the run's own path.
        step: that context's step (0 before the first completes).
        asking: True while `rt.interrupt` waits for an answer.
        question: the open question (None when none is open).
    """

    context: AgentContext[Any] | None
    step: int
    asking: bool
    question: Any


def _asyncio_only(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise UsageError(
            f"{what} needs asyncio: Temporal's Python SDK runs on asyncio only, not trio; "
            "run this code under asyncio (anyio.run(..., backend='asyncio'))"
        ) from None


class TemporalRun:
    """A run on Temporal: wait for its result, cancel it, answer its question, read its state."""

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self._handle = handle

    @property
    def run_id(self) -> str:
        """The run's id, which is its workflow id."""
        return self._handle.id

    @property
    def workflow(self) -> WorkflowHandle[Any, Any]:
        """Temporal's handle on the run's workflow (its history, description, and the rest)."""
        return self._handle

    async def result(self) -> AgentContext[Any]:
        """The context that reached finish; the run's error, with its last context, otherwise.

        `GraphCancelled`, `GraphTimeout` and `StepLimitExceeded` come back as
        those errors; any other agentgraph error as `RunFailed` naming its kind.
        """
        _asyncio_only("TemporalRun.result()")
        try:
            out: AgentContext[Any] = await self._handle.result()
        except WorkflowFailureError as failure:
            raise _run_error(failure) from failure
        return out

    async def cancel(self) -> None:
        """Ask the workflow to cancel: `result()` then raises `GraphCancelled`."""
        await self._handle.cancel()

    async def answer(self, value: Any) -> None:
        """Answer the question the run asked with `rt.interrupt`; it goes on from there."""
        await self._handle.signal(ANSWER, value)

    async def asked(self, *, poll: float = 0.1) -> RunState:
        """Wait until the run asks a question (`rt.interrupt`) and return its state then.

        Looks with the state query every `poll` seconds (a query writes nothing
        to the run's history); raises `UsageError` if the run closes first.
        """
        looks = 0
        while not (state := await self.state()).asking:
            looks += 1
            if looks % 10 == 0:
                description = await self._handle.describe()
                if description.status not in (None, WorkflowExecutionStatus.RUNNING):
                    raise UsageError(f"run {self.run_id} closed without asking a question")
            await anyio.sleep(poll)
        return state

    async def state(self) -> RunState:
        """The run's last completed context and step, and any open question."""
        data: dict[str, Any] = await self._handle.query(STATE)
        return RunState(data["context"], int(data["step"]), bool(data["asking"]), data["question"])


def _run_error(failure: WorkflowFailureError) -> Exception:
    """The agentgraph error a failed workflow stands for; the failure itself otherwise."""
    cause = failure.cause
    if not isinstance(cause, ApplicationError):
        return failure
    if cause.type == "UsageError":  # the worker refused the run itself (an unknown graph)
        return UsageError(cause.message)
    details = cause.details[0] if cause.details else None
    if not isinstance(details, dict) or not isinstance(details.get("context"), AgentContext):
        return failure
    ctx, step = details["context"], int(details.get("step", 0))
    path = tuple(details.get("path", ()))
    if cause.type == "GraphCancelled":
        return GraphCancelled(context=ctx, step=step)
    if cause.type == "GraphTimeout":
        return GraphTimeout(context=ctx, step=step, timeout=float(details.get("timeout", 0.0)))
    if cause.type == "StepLimitExceeded":
        return StepLimitExceeded(context=ctx, step=step, path=path)
    return RunFailed(cause.message, kind=cause.type or "", context=ctx, step=step, path=path)


@attrs.frozen
class TemporalRunner:
    """Runs graphs on Temporal workers: `await TemporalRunner(client, task_queue=...).run(g, ctx)`.

    The graph must be one the queue's workers were built with (by name).

    Args:
        client: a connected Temporal client.
        task_queue: the queue of the workers that run the graphs.
        types: classes payloads may be decoded into, beyond agentgraph's and
            those the graph's nodes declare.
        blobs: where large payloads are kept: the workers' store.
        threshold: the payload size in bytes at which it is offloaded.
    """

    client: Client
    task_queue: str = attrs.field(kw_only=True)
    types: Types = attrs.field(factory=Types, kw_only=True)
    blobs: BlobStore | None = attrs.field(default=None, kw_only=True)
    threshold: int = attrs.field(default=BLOB_THRESHOLD, kw_only=True)

    def _client(self, graph: Any) -> Client:
        types = self.types.with_types(*graph.data_types())
        return client_for(self.client, types, self.blobs, self.threshold)

    async def start(
        self, graph: Any, ctx: AgentContext[Any], *, run_id: str | None = None
    ) -> TemporalRun:
        """Start a run of `graph` from `ctx` under `run_id` (its workflow id) and return it."""
        _asyncio_only("TemporalRunner")
        graph = as_graph(graph)
        _check_input(ctx)
        client = self._client(graph)
        handle = await client.start_workflow(
            WORKFLOW,
            {"graph": graph.name, "context": ctx},
            id=run_id or new_run_id(),
            task_queue=self.task_queue,
        )
        return TemporalRun(handle)

    async def run(
        self, graph: Any, ctx: AgentContext[Any], *, run_id: str | None = None
    ) -> AgentContext[Any]:
        """Run `graph` on `ctx` to its finish and return the final context."""
        return await (await self.start(graph, ctx, run_id=run_id)).result()

    def get(self, graph: Any, run_id: str) -> TemporalRun:
        """The run `run_id` of `graph`, started earlier (by this process or another)."""
        return TemporalRun(self._client(as_graph(graph)).get_workflow_handle(run_id))
