"""What every route shares: the queue, the graphs, ids, JSON bodies and refusals."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import orjson
from starlette.requests import Request
from starlette.responses import Response

from .._core._errors import RunInputError
from .._core._graph import Graph
from ._auth_filter import EVERYTHING, Filter
from ._queue import QueuedRun, RunQueue, StoredAssistant, StoredThread
from ._versions import version_fields

if TYPE_CHECKING:
    from ._auth import Access

__all__ = ("Api", "Refused", "json_response", "read_body")

OPEN = frozenset({"/ok", "/ready", "/openapi.json", "/docs"})
"""The paths answered to anyone, with no API key or authentication: an orchestrator's
probes carry none, and the API's description is no secret (its page's files too,
under `/docs/static/`)."""

MAX_BODY = 8 * 1024 * 1024
"""The largest request body accepted, in bytes."""


class Refused(RunInputError):
    """A request the server refuses: `status` is the HTTP status it answers with."""

    def __init__(
        self, status: int, detail: str, *, headers: Mapping[str, str] | None = None
    ) -> None:
        self.status = status
        self.detail = detail
        self.headers = dict(headers or {})
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


def is_open(path: str) -> bool:
    """Whether `path` is answered to anyone (`OPEN`)."""
    return path in OPEN or path.startswith("/docs/static/")


MAX_COUNT = 2**62
"""The largest limit or offset taken: the databases' integers hold no more."""


def whole_number(given: Mapping[str, Any], name: str, default: int) -> int:
    """`given[name]` (a body's number, or a query's digits) as a count of at least 0; 422
    for anything else, never a 500."""
    value = given.get(name, default)
    if value is None:
        return default
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise Refused(422, f"{name} is a whole number from 0 to {MAX_COUNT}, not {value!r}")
    return value


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
    """The server's graphs and queue, and the wake-up of its in-process workers.

    Each graph's default assistant is stored as the API opens (kept as it is when there).
    The lookups by id take the filter an authorization handler returned (`where`): a
    resource it leaves out is refused as a missing one is, so no answer tells another
    caller's resources from ids that name nothing.
    """

    def __init__(
        self,
        queue: RunQueue,
        graphs: Mapping[str, Graph[Any, Any]],
        *,
        wake: Callable[[], None] = lambda: None,
        access: Access | None = None,
    ) -> None:
        from ._auth import Access

        self.queue = queue
        self.graphs = dict(graphs)
        self.wake = wake
        self.access = access or Access()
        """The authorization hooks every route asks before it acts."""
        now = time.time()
        for name in sorted(self.graphs):
            queue.put_assistant(default_assistant(name, now))

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A queue method, off the event loop."""
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    async def assistant(self, assistant_id: Any, *, where: Filter = EVERYTHING) -> StoredAssistant:
        """The assistant an id names (a graph's id names its default assistant);
        404 when none (or `where` leaves it out), 422 for an id that is neither a
        graph's nor a UUID."""
        if not isinstance(assistant_id, str):
            raise Refused(404, f"no assistant {assistant_id!r}")
        if assistant_id in self.graphs:
            key = assistant_id_of(assistant_id)
        else:
            key = check_uuid(assistant_id, "assistant id")
        found: StoredAssistant | None = await self.call(self.queue.assistant, key)
        if found is None or not where.matches(found.metadata):
            raise Refused(404, f"no assistant {assistant_id!r}")
        return found

    def graph(self, graph_id: Any) -> Graph[Any, Any]:
        """A graph this server serves; 404 when it serves none by that id."""
        if not isinstance(graph_id, str) or graph_id not in self.graphs:
            raise Refused(404, f"no graph {graph_id!r}; this server serves {sorted(self.graphs)}")
        return self.graphs[graph_id]

    async def thread(self, thread_id: str, *, where: Filter = EVERYTHING) -> StoredThread:
        check_uuid(thread_id, "thread id")
        found: StoredThread | None = await self.call(self.queue.thread, thread_id)
        if found is None or not where.matches(found.metadata):
            raise Refused(404, f"no thread {thread_id!r}")
        return found

    async def run(
        self, thread_id: str | None, run_id: str, *, where: Filter = EVERYTHING, caller: str = ""
    ) -> QueuedRun:
        """A run, on `thread_id` when given; 404 when none. A run is seen as its thread
        is (`where` on the thread's metadata); once its thread is gone (a stateless
        run's), only by its `caller`, its owner, when `where` filters."""
        check_uuid(run_id, "run id")
        found: QueuedRun | None = await self.call(self.queue.run, run_id)
        if found is None or (thread_id is not None and found.thread_id != thread_id):
            raise Refused(404, f"no run {run_id!r}")
        if where:
            thread: StoredThread | None = await self.call(self.queue.thread, found.thread_id)
            if thread is None:
                owner = await self.call(self.queue.owner, "runs", run_id)
                seen = owner is not None and owner == caller
            else:
                seen = where.matches(thread.metadata)
            if not seen:
                raise Refused(404, f"no run {run_id!r}")
        return found


def default_assistant(graph_id: str, now: float) -> StoredAssistant:
    """A graph's default assistant, there without being created."""
    return StoredAssistant(
        assistant_id_of(graph_id),
        graph_id,
        1,
        graph_id,
        None,
        {},
        {},
        {"created_by": "system"},
        now,
        now,
    )


def assistant_json(assistant: StoredAssistant, *, version: bool = False) -> dict[str, Any]:
    """An assistant as the clients read it; one of its versions (no `updated_at`) with
    `version`."""
    data = {
        "assistant_id": assistant.assistant_id,
        "graph_id": assistant.graph_id,
        "name": assistant.name,
        "description": assistant.description,
        "config": assistant.config,
        "context": assistant.context,
        "metadata": assistant.metadata,
        "version": assistant.version,
        "created_at": iso(assistant.created_at),
    }
    if not version:
        data["updated_at"] = iso(assistant.updated_at)
    return data


def run_settings(assistant: StoredAssistant, body: Mapping[str, Any]) -> dict[str, Any]:
    """A run's `config` and `context`: the assistant's, with the run's own over them
    (`configurable` merged key by key)."""
    given = body.get("config") or {}
    if not isinstance(given, Mapping):
        raise Refused(422, "config is a JSON object")
    context = body.get("context") or {}
    if not isinstance(context, Mapping):
        raise Refused(422, "context is a JSON object")
    config = {**assistant.config, **given}
    configurable = {
        **(assistant.config.get("configurable") or {}),
        **(given.get("configurable") or {}),
    }
    if configurable:
        config["configurable"] = configurable
    return {"config": config, "context": {**assistant.context, **context}}


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
