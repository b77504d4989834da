"""What every route shares: the queue, the graphs, ids, JSON bodies and refusals."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response

from .._errors import RunInputError
from .._graph import Graph
from ._queue import QueuedRun, RunQueue, StoredThread
from ._versions import version_fields

__all__ = ("Api", "Refused", "json_response", "read_body")

MAX_BODY = 8 * 1024 * 1024
"""The largest request body accepted, in bytes."""


class Refused(RunInputError):
    """A request the server refuses: `status` is the HTTP status it answers with."""

    def __init__(self, status: int, detail: str) -> None:
        self.status = status
        self.detail = detail
        super().__init__(detail)


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        orjson.dumps(data), status_code=status, media_type="application/json", headers=headers
    )


async def read_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (an empty body is `{}`); 413 or 422 otherwise."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
    if not raw:
        return {}
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Refused(422, f"the body is not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise Refused(422, "the body is a JSON object")
    return body


def check_uuid(value: str, what: str) -> str:
    """`value` if it is a UUID; 422 otherwise."""
    try:
        return str(uuid.UUID(value))
    except (ValueError, AttributeError, TypeError) as exc:
        raise Refused(422, f"{what} {value!r} is not a UUID") from exc


def iso(stamp: float) -> str:
    return datetime.datetime.fromtimestamp(stamp, tz=datetime.UTC).isoformat()


def assistant_id_of(graph_id: str) -> str:
    """The id of a graph's default assistant."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"agentgraph:assistant/{graph_id}"))


class Api:
    """The server's graphs and queue, and the wake-up of its in-process workers."""

    def __init__(
        self,
        queue: RunQueue,
        graphs: Mapping[str, Graph[Any, Any]],
        *,
        wake: Callable[[], None] = lambda: None,
    ) -> None:
        self.queue = queue
        self.graphs = dict(graphs)
        self.wake = wake
        self.assistants = {assistant_id_of(name): name for name in self.graphs}

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A queue method, off the event loop."""
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    def graph_id(self, assistant_id: Any) -> str:
        """The graph an assistant id (or a graph id) names; 404 when none."""
        if isinstance(assistant_id, str):
            if assistant_id in self.graphs:
                return assistant_id
            if assistant_id in self.assistants:
                return self.assistants[assistant_id]
            check_uuid(assistant_id, "assistant id")
        raise Refused(404, f"no assistant {assistant_id!r}")

    async def thread(self, thread_id: str) -> StoredThread:
        check_uuid(thread_id, "thread id")
        found: StoredThread | None = await self.call(self.queue.thread, thread_id)
        if found is None:
            raise Refused(404, f"no thread {thread_id!r}")
        return found

    async def run(self, thread_id: str | None, run_id: str) -> QueuedRun:
        check_uuid(run_id, "run id")
        found: QueuedRun | None = await self.call(self.queue.run, run_id)
        if found is None or (thread_id is not None and found.thread_id != thread_id):
            raise Refused(404, f"no run {run_id!r}")
        return found


def assistant_json(graph_id: str, assistant_id: str) -> dict[str, Any]:
    stamp = iso(0)
    return {
        "assistant_id": assistant_id,
        "graph_id": graph_id,
        "name": graph_id,
        "description": None,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": stamp,
        "updated_at": stamp,
    }


def thread_json(thread: StoredThread) -> dict[str, Any]:
    interrupts = {thread.waiting_run: thread.interrupts} if thread.interrupts else {}
    return {
        "thread_id": thread.thread_id,
        "created_at": iso(thread.created_at),
        "updated_at": iso(thread.updated_at),
        "metadata": thread.metadata,
        "status": thread.status,
        "values": thread.state,
        "interrupts": interrupts,
    }


def run_json(run: QueuedRun) -> dict[str, Any]:
    return {
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": iso(run.created_at),
        "updated_at": iso(run.updated_at),
        "status": run.status,
        "metadata": run.metadata,
        "kwargs": run.kwargs,
        "multitask_strategy": run.multitask_strategy,
        **version_fields(run),
    }
