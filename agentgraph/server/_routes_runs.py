"""Runs on a thread and stateless runs: create, stream, wait, join, cancel, list, get, delete."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .._core._versions import ResumePolicy
from ._api import (
    MAX_BODY,
    Api,
    Refused,
    check_uuid,
    json_response,
    read_body,
    run_json,
    run_settings,
    whole_number,
)
from ._auth import caller, plain, uid
from ._auth_filter import Filter
from ._dedup import dedup_key
from ._history import history_of
from ._mapping import run_context, typed
from ._priority import PriorityAssigner, checked_priority
from ._queue import QueuedRun, StoredThread
from ._routes_threads import checkpoint_named, find_checkpoint
from ._routes_webhooks import checked_webhook
from ._sse import event_names, frames, last_event_id
from ._versions import resume_policy_of
from ._webhook_settings import WebhookSettings

__all__ = ("RunRoutes",)

_NOT_KWARGS = frozenset(
    {"assistant_id", "metadata", "multitask_strategy", "if_not_exists", "after_seconds"}
)
"""The keys of a run's body that are not its `kwargs` in a handler's value (`RunsCreate`)."""
_RUN_STATUSES = ("pending", "running", "error", "success", "timeout", "interrupted")
_RUN_FIELDS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
    "cancel_reason",
)
"""The fields a run listing may `select` (the clients' `RunSelectField`); runs here
carry no `cancel_reason`, so selecting it adds nothing."""


MAX_DELAY = 366 * 24 * 3600.0
"""The longest `after_seconds` taken: a year."""


def _delay(body: Mapping[str, Any]) -> float:
    """A run's `after_seconds`, a number of seconds from 0 to a year; 422 otherwise."""
    given = body.get("after_seconds") or 0
    if (
        isinstance(given, bool)
        or not isinstance(given, int | float)
        or not 0 <= given <= MAX_DELAY  # NaN fails it too
    ):
        raise Refused(
            422, f"after_seconds is a number of seconds from 0 to {MAX_DELAY:.0f}, not {given!r}"
        )
    return float(given)


def _selected(run: dict[str, Any], select: list[str]) -> dict[str, Any]:
    """`run` with only the `select`ed fields it has (all of them when none are named)."""
    return {name: run[name] for name in select if name in run} if select else run


_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
_LOOK_AGAIN = 0.5
"""Seconds a wait for a run's end waits for word of it before reading the store anyway."""
_REPLAYED = {"Idempotent-Replayed": "true"}
"""The header of an answer with the run in flight that had the request's idempotency key."""


def _choice(body: dict[str, Any], name: str, choices: tuple[str, ...]) -> str:
    """`body[name]`, one of `choices` (the first when not given); 422 otherwise."""
    value = body.get(name) or choices[0]
    if value not in choices:
        raise Refused(422, f"{name} is one of {', '.join(choices)}, not {value!r}")
    return str(value)


def _modes(body: dict[str, Any]) -> list[str]:
    mode = body.get("stream_mode") or ["values"]
    modes = [mode] if isinstance(mode, str) else list(mode)
    event_names(modes)
    return modes


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    metadata = plain(value.get("metadata") or {})
    if not isinstance(metadata, dict):
        raise Refused(422, f"metadata is a JSON object, not {metadata!r}")
    return metadata


class RunRoutes:
    """Runs on a thread and stateless runs.

    Runs are seen as their thread is: creating one asks the authorization hooks
    for `runs` `create` (and its assistant for `assistants` `read`), reading,
    joining or streaming one for `read`, listing a thread's or streaming the
    thread for `search`, cancelling one for `update`, deleting it for `delete`;
    without a `runs` handler, the thread's handler decides (`create_run`, `read`,
    `update`, `delete`). A run the filter leaves out is refused as a missing one.
    """

    def __init__(
        self,
        api: Api,
        *,
        resume_policy: ResumePolicy = "latest",
        webhooks: WebhookSettings | None = None,
        priority: PriorityAssigner | None = None,
    ) -> None:
        self.api = api
        self.resume_policy = resume_policy
        """The policy of a run whose assistant names none."""
        self.webhooks = webhooks or WebhookSettings()
        self.priority = priority
        """Assigns a thread's priority settings at its first run (`_priority`)."""

    async def version(self, graph_id: str, thread_id: str, command: Any) -> int | None:
        """The graph version a new run is on: a resume's, the version of the run it
        resumes; any other's, the version this server serves."""
        if isinstance(command, dict) and "resume" in command:
            thread = await self.api.thread(thread_id)
            if thread.waiting_run is not None:
                found: int | None = await self.api.call(
                    self.api.queue.graph_version_of, thread.waiting_run
                )
                return found
        return self.api.graphs[graph_id].version

    async def _allowed(
        self, request: Request, body: dict[str, Any], thread_id: str | None
    ) -> tuple[Filter, dict[str, Any]]:
        """What the hooks say of a new run: the filter its thread must pass, and the
        run's body with the metadata the handler gave it."""
        value = {
            "assistant_id": uid(body.get("assistant_id")),
            "thread_id": None if thread_id is None else uid(thread_id),
            "run_id": None,
            "status": "pending",
            "metadata": _metadata(body),
            "prevent_insert_if_inflight": True,
            "multitask_strategy": body.get("multitask_strategy") or "enqueue",
            "if_not_exists": body.get("if_not_exists") or "reject",
            "after_seconds": body.get("after_seconds") or 0,
            "kwargs": {k: v for k, v in body.items() if k not in _NOT_KWARGS},
        }
        where = await self.api.access.check(request, "runs", "create", value)
        return where, {**body, "metadata": _metadata(value)}

    async def _thread_for(
        self, request: Request, body: dict[str, Any], thread_id: str | None, where: Filter
    ) -> str:
        """The new run's thread: the one named, when the filter lets the caller see it (or
        made, with `if_not_exists: create`, when it is missing), else a new one."""
        owner = caller(request.scope) or None
        if thread_id is not None:
            try:
                await self.api.thread(thread_id, where=where)
                return thread_id
            except Refused as missing:
                if body.get("if_not_exists") != "create" or missing.status != 404:
                    raise
                made = await self.api.call(
                    self.api.queue.put_thread,
                    thread_id,
                    where.stamped({}),
                    replace=False,
                    owner=owner,
                )
                if not made:  # there, but not the caller's to see
                    raise
                return thread_id
        thread_id = str(uuid.uuid4())
        await self.api.call(
            self.api.queue.put_thread, thread_id, where.stamped({}), replace=False, owner=owner
        )
        return thread_id

    async def create(
        self,
        request: Request,
        body: dict[str, Any],
        thread_id: str | None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[QueuedRun, bool]:
        """Queue the run `body` describes on `thread_id` (a new thread when None), for the
        caller of `request` (its `headers` unless given): the run, and whether it is one
        in flight that had the same idempotency key, answered instead of a new one."""
        delay = _delay(body)
        webhook = await checked_webhook(body, self.webhooks)
        where, body = await self._allowed(request, body, thread_id)
        key = caller(request.scope)
        dedup = dedup_key(body, request.headers if headers is None else headers, key)
        priority = checked_priority(body, request.query_params)
        if dedup is not None:
            found = await self.api.call(self.api.queue.deduplicated, dedup)
            if found is not None:
                return self.replayed(found, thread_id), True
        read = {"assistant_id": uid(body.get("assistant_id"))}
        seen = await self.api.access.check(request, "assistants", "read", read)
        assistant = await self.api.assistant(body.get("assistant_id"), where=seen)
        graph_id = assistant.graph_id
        graph = self.api.graph(graph_id)
        settings = run_settings(assistant, body)
        if body.get("input") is not None or (typed(graph.input_type) and not body.get("command")):
            # Refused here, with nothing stored, rather than failing in a worker.
            run_context({"input": body.get("input"), **settings}, graph.input_type)
        modes = _modes(body)
        strategy = body.get("multitask_strategy") or "enqueue"
        if strategy not in _STRATEGIES:
            raise Refused(422, f"multitask_strategy is one of {', '.join(_STRATEGIES)}")
        stateless = thread_id is None
        thread_id = await self._thread_for(request, body, thread_id, where)
        if self.priority is not None and priority is None:
            await self.assign_priority(
                self.priority, key, thread_id, None if stateless else thread_id, assistant, body
            )
        checkpoint_id = checkpoint_named(body)
        if checkpoint_id is not None:
            await find_checkpoint(self.api, thread_id, checkpoint_id)
        now = time.time()
        kwargs = {
            "input": body.get("input"),
            "command": body.get("command"),
            "stream_mode": modes,
            "config": body.get("config") or {},
            "on_disconnect": _choice(body, "on_disconnect", ("continue", "cancel")),
            "checkpoint_id": checkpoint_id,
        }
        kwargs.update(settings)
        if body.get("stream_subgraphs") is True:
            kwargs["stream_subgraphs"] = True
        if webhook is not None:
            kwargs["webhook"] = webhook
        if stateless:
            kwargs["on_completion"] = _choice(body, "on_completion", ("delete", "keep"))
        try:
            policy = resume_policy_of(kwargs["config"]) or self.resume_policy
        except ValueError as bad:
            raise Refused(422, str(bad)) from bad
        run = QueuedRun(
            str(uuid.uuid4()),
            thread_id,
            assistant.assistant_id,
            graph_id,
            "pending",
            kwargs,
            body.get("metadata") or {},
            strategy,
            None,
            None,
            0,
            now,
            now,
            await self.version(graph_id, thread_id, kwargs["command"]),
            policy,
            priority=priority,
            flow_key=key,
            dedup_key=dedup,
        )
        return await self.queued(run, delay, stateless, owner=key or None)

    async def queued(
        self, run: QueuedRun, delay: float, stateless: bool, *, owner: str | None
    ) -> tuple[QueuedRun, bool]:
        """Queue `run`, made by `owner`, after `delay` seconds: the run, or the run in
        flight that had its idempotency key (and True)."""
        thread_id = run.thread_id
        await self.api.call(
            self.api.queue.add_events,
            run.run_id,
            [("metadata", {"run_id": run.run_id, "thread_id": thread_id, "attempt": 1})],
        )
        queued: QueuedRun | None = await self.api.call(
            self.api.queue.enqueue, run, delay=delay, owner=owner
        )
        if queued is None:
            await self.api.call(self.api.queue.delete_run, run.run_id)
            raise Refused(409, f"thread {thread_id!r} has a run in flight")
        if queued.run_id != run.run_id:  # another request with its key was queued first
            await self.api.call(self.api.queue.delete_run, run.run_id)
            if stateless:
                await self.api.call(self.api.queue.forget_thread, thread_id)
            return self.replayed(queued, None if stateless else thread_id), True
        self.api.wake()
        return queued, False

    def replayed(self, found: QueuedRun, thread_id: str | None) -> QueuedRun:
        """The run in flight with a request's idempotency key; 409 when it runs on
        another thread than the request names."""
        if thread_id is not None and found.thread_id != thread_id:
            raise Refused(
                409, f"the idempotency key is in use by run {found.run_id!r} of another thread"
            )
        return found

    async def assign_priority(
        self,
        assigner: PriorityAssigner,
        caller: str,
        thread_id: str,
        named: str | None,
        assistant: Any,
        body: dict[str, Any],
    ) -> None:
        """Store the priority settings of a thread that has none, as `assigner` decides."""
        if await self.api.call(self.api.queue.thread_priority, thread_id) is not None:
            return
        thread = await self.api.thread(thread_id)
        priority, group = await assigner.assign(
            identity=caller,
            thread_id=named,
            thread_metadata=thread.metadata,
            assistant=assistant,
            run_metadata=body.get("metadata") or {},
        )
        await self.api.call(self.api.queue.set_thread_priority, thread_id, priority, group)

    def where(self, run: QueuedRun) -> dict[str, str]:
        """The run's address, and where a client cut off while waiting reconnects to."""
        base = f"/threads/{run.thread_id}/runs/{run.run_id}"
        return {"Content-Location": base, "Location": f"{base}/join"}

    async def result(self, run: QueuedRun) -> dict[str, Any]:
        """The values a run ended with: the last `values` event, or its `__error__`."""
        with self.api.queue.signals.watching(run.run_id) as changed:
            while not run.ended:
                found = await self.api.call(self.api.queue.run, run.run_id)
                if found is None:
                    raise Refused(404, f"run {run.run_id!r} was deleted")
                run = found
                if not run.ended:
                    await changed.wait(_LOOK_AGAIN)
        last = b"{}"
        for _, name, data in await self.api.call(self.api.queue.events, run.run_id, 0):
            if name == "error":
                return {"__error__": orjson.loads(data)}
            if name == "values":
                last = data
        values: dict[str, Any] = orjson.loads(last)
        return values

    def stream(self, run: QueuedRun, after: int, status: int = 200) -> StreamingResponse:
        names = event_names(run.kwargs.get("stream_mode") or ["values"])
        base = f"/threads/{run.thread_id}/runs/{run.run_id}"
        return StreamingResponse(
            self.watched(run, frames(self.api, run.run_id, after, names)),
            status_code=status,
            media_type="text/event-stream",
            headers={"Location": f"{base}/stream", "Content-Location": base},
        )

    async def watched(self, run: QueuedRun, stream: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        """`stream`, cancelling the run when its client leaves early and asked for that."""
        ended = False
        try:
            async for frame in stream:
                yield frame
            ended = True
        finally:
            if not ended and run.kwargs.get("on_disconnect") == "cancel":
                with anyio.CancelScope(shield=True):
                    await self.api.call(self.api.queue.request_cancel, run.run_id, "interrupt")

    def thread_of(self, request: Request) -> str | None:
        return request.path_params.get("thread_id")

    async def _run(
        self, request: Request, action: str, value: dict[str, Any] | None = None
    ) -> QueuedRun:
        """The run the path names, once the hooks allow `action` on its thread."""
        thread_id, run_id = self.thread_of(request), request.path_params["run_id"]
        value = {"thread_id": uid(thread_id), "run_id": uid(run_id), **(value or {})}
        where = await self.api.access.check(request, "runs", action, value)
        return await self.api.run(thread_id, run_id, where=where, caller=caller(request.scope))

    async def _thread(self, request: Request) -> StoredThread:
        """The thread the path names, once the hooks allow reading its runs."""
        thread_id = request.path_params["thread_id"]
        value = {"thread_id": uid(thread_id)}
        where = await self.api.access.check(request, "runs", "search", value)
        return await self.api.thread(thread_id, where=where)

    async def create_background(self, request: Request) -> Response:
        run, replayed = await self.create(
            request, await read_body(request), self.thread_of(request)
        )
        base = f"/threads/{run.thread_id}/runs/{run.run_id}"
        headers = {"Content-Location": base, **(_REPLAYED if replayed else {})}
        return json_response(run_json(run), headers=headers)

    async def create_stream(self, request: Request) -> Response:
        run, replayed = await self.create(
            request, await read_body(request), self.thread_of(request)
        )
        response = self.stream(run, 0)
        if replayed:
            response.headers.update(_REPLAYED)
        return response

    async def create_wait(self, request: Request) -> Response:
        run, replayed = await self.create(
            request, await read_body(request), self.thread_of(request)
        )
        headers = {**self.where(run), **(_REPLAYED if replayed else {})}
        return json_response(await self.result(run), headers=headers)

    async def listing(self, request: Request) -> Response:
        thread = await self._thread(request)
        limit = whole_number(request.query_params, "limit", 10)
        offset = whole_number(request.query_params, "offset", 0)
        status = request.query_params.get("status")
        if status is not None and status not in _RUN_STATUSES:
            raise Refused(422, f"status is one of {', '.join(_RUN_STATUSES)}, not {status!r}")
        select = request.query_params.getlist("select")
        unknown = [field for field in select if field not in _RUN_FIELDS]
        if unknown:
            raise Refused(
                422, f"select names fields of a run ({', '.join(_RUN_FIELDS)}): {unknown}"
            )
        runs = await self.api.call(
            functools.partial(
                self.api.queue.runs, thread.thread_id, limit=limit, offset=offset, status=status
            )
        )
        return json_response([_selected(run_json(r), select) for r in runs])

    async def get(self, request: Request) -> Response:
        run = await self._run(request, "read")
        return json_response(run_json(run))

    async def delete(self, request: Request) -> Response:
        run = await self._run(request, "delete")
        if not run.ended:
            raise Refused(409, f"run {run.run_id!r} is still in flight; cancel it first")
        await self.api.call(self.api.queue.delete_run, run.run_id)
        return Response(status_code=204)

    async def cancel(self, request: Request) -> Response:
        action = request.query_params.get("action", "interrupt")
        if action not in ("interrupt", "rollback"):
            raise Refused(422, f"action is 'interrupt' or 'rollback', not {action!r}")
        run = await self._run(request, "update", {"action": action})
        await self.api.call(self.api.queue.request_cancel, run.run_id, action)
        if action == "rollback":
            await self.settle_rollback(run)
        if request.query_params.get("wait") in ("1", "true", "True"):
            try:
                await self.result(run)
            except Refused as gone:
                if gone.status != 404 or action != "rollback":
                    raise  # a rolled back run is deleted as it ends: that is its end
        return Response(status_code=202, headers=self.where(run))

    async def settle_rollback(self, run: QueuedRun) -> None:
        """A pending run rolled back is gone at once: its thread is set back to its newest
        checkpoint (a running one's worker does it as the run stops)."""
        if await self.api.call(self.api.queue.run, run.run_id) is None:
            await self.api.call(history_of(self.api.queue).roll_back, run.thread_id, None)

    async def join(self, request: Request) -> Response:
        run = await self._run(request, "read")
        return json_response(await self.result(run), headers=self.where(run))

    async def join_stream(self, request: Request) -> Response:
        run = await self._run(request, "read")
        after = last_event_id(request.headers.get("last-event-id"))
        return self.stream(run, after)

    async def thread_stream(self, request: Request) -> Response:
        """The stream of the thread's current run: the one in flight, else the latest."""
        thread = await self._thread(request)
        modes = request.query_params.getlist("stream_mode") or ["run_modes"]
        if any(mode != "run_modes" for mode in modes):
            raise Refused(422, f"a thread stream's mode is 'run_modes', not {modes!r}")
        after = last_event_id(request.headers.get("last-event-id"))
        flying = await self.api.call(self.api.queue.in_flight, thread.thread_id)
        runs = flying or await self.api.call(
            self.api.queue.runs, thread.thread_id, limit=1, offset=0
        )
        if not runs:
            raise Refused(404, f"thread {thread.thread_id!r} has no run to stream")
        return self.stream(runs[0], after)

    async def bulk_cancel(self, request: Request) -> Response:
        body = await read_body(request)
        action = body.get("action") or "interrupt"
        if action not in ("interrupt", "rollback"):
            raise Refused(422, f"action is 'interrupt' or 'rollback', not {action!r}")
        run_ids = body.get("run_ids") or []
        if not isinstance(run_ids, list):
            raise Refused(422, f"run_ids is a list of run ids, not {run_ids!r}")
        for run_id in [check_uuid(str(r), "run id") for r in run_ids]:
            value = {"run_id": uid(run_id), "action": action}
            where = await self.api.access.check(request, "runs", "update", value)
            if where:
                try:  # a run the caller may not see is left alone, as a missing one is
                    await self.api.run(None, str(run_id), where=where, caller=caller(request.scope))
                except Refused:
                    continue
            found = await self.api.call(self.api.queue.run, str(run_id))
            await self.api.call(self.api.queue.request_cancel, str(run_id), action)
            if found is not None and action == "rollback":
                await self.settle_rollback(found)
        return Response(status_code=204)

    async def batch(self, request: Request) -> Response:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise Refused(413, f"the body is larger than {MAX_BODY} bytes")
        try:
            items = orjson.loads(raw) if raw else []
        except orjson.JSONDecodeError as exc:
            raise Refused(422, f"the body is not JSON: {exc}") from exc
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise Refused(422, "a batch is a JSON list of runs, each an object")
        # Each item carries its own idempotency key, if any: the request's header is not theirs.
        runs = [(await self.create(request, item, None, headers={}))[0] for item in items]
        return json_response([run_json(r) for r in runs])

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        thread_runs = "/threads/{thread_id}/runs"
        one = thread_runs + "/{run_id}"
        return [
            Route(thread_runs, self.create_background, methods=["POST"]),
            Route(thread_runs, self.listing, methods=["GET"]),
            Route(thread_runs + "/stream", self.create_stream, methods=["POST"]),
            Route(thread_runs + "/wait", self.create_wait, methods=["POST"]),
            Route(one, self.get, methods=["GET"]),
            Route(one, self.delete, methods=["DELETE"]),
            Route(one + "/cancel", self.cancel, methods=["POST"]),
            Route(one + "/join", self.join, methods=["GET"]),
            Route(one + "/stream", self.join_stream, methods=["GET"]),
            Route("/threads/{thread_id}/stream", self.thread_stream, methods=["GET"]),
            Route("/runs", self.create_background, methods=["POST"]),
            Route("/runs/stream", self.create_stream, methods=["POST"]),
            Route("/runs/wait", self.create_wait, methods=["POST"]),
            Route("/runs/batch", self.batch, methods=["POST"]),
            Route("/runs/cancel", self.bulk_cancel, methods=["POST"]),
        ]
