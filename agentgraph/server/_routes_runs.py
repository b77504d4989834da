"""Runs on a thread and stateless runs: create, stream, wait, join, cancel, list, get, delete."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .._core._versions import ResumePolicy
from ._api import Api, Refused, json_response, read_body, run_json, run_settings, whole_number
from ._history import history_of
from ._mapping import run_context, typed
from ._queue import QueuedRun
from ._routes_threads import checkpoint_named, find_checkpoint
from ._routes_webhooks import checked_webhook
from ._sse import event_names, frames, last_event_id
from ._versions import resume_policy_of
from ._webhook_settings import WebhookSettings

__all__ = ("RunRoutes",)

_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
_LOOK_AGAIN = 0.5
"""Seconds a wait for a run's end waits for word of it before reading the store anyway."""


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


class RunRoutes:
    """Runs on a thread and stateless runs."""

    def __init__(
        self,
        api: Api,
        *,
        resume_policy: ResumePolicy = "latest",
        webhooks: WebhookSettings | None = None,
    ) -> None:
        self.api = api
        self.resume_policy = resume_policy
        """The policy of a run whose assistant names none."""
        self.webhooks = webhooks or WebhookSettings()

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

    async def create(self, body: dict[str, Any], thread_id: str | None) -> QueuedRun:
        webhook = await checked_webhook(body, self.webhooks)
        assistant = await self.api.assistant(body.get("assistant_id"))
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
        if thread_id is None:
            thread_id = str(uuid.uuid4())
            await self.api.call(self.api.queue.put_thread, thread_id, {}, replace=False)
        else:
            try:
                await self.api.thread(thread_id)
            except Refused as missing:
                if body.get("if_not_exists") != "create" or missing.status != 404:
                    raise
                await self.api.call(self.api.queue.put_thread, thread_id, {}, replace=False)
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
        )
        await self.api.call(
            self.api.queue.add_events,
            run.run_id,
            [("metadata", {"run_id": run.run_id, "thread_id": thread_id, "attempt": 1})],
        )
        delay = float(body.get("after_seconds") or 0)
        queued: QueuedRun | None = await self.api.call(self.api.queue.enqueue, run, delay=delay)
        if queued is None:
            await self.api.call(self.api.queue.delete_run, run.run_id)
            raise Refused(409, f"thread {thread_id!r} has a run in flight")
        self.api.wake()
        return queued

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

    async def create_background(self, request: Request) -> Response:
        run = await self.create(await read_body(request), self.thread_of(request))
        base = f"/threads/{run.thread_id}/runs/{run.run_id}"
        return json_response(run_json(run), headers={"Content-Location": base})

    async def create_stream(self, request: Request) -> Response:
        run = await self.create(await read_body(request), self.thread_of(request))
        return self.stream(run, 0)

    async def create_wait(self, request: Request) -> Response:
        run = await self.create(await read_body(request), self.thread_of(request))
        return json_response(await self.result(run), headers=self.where(run))

    async def listing(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        limit = whole_number(request.query_params, "limit", 10)
        offset = whole_number(request.query_params, "offset", 0)
        runs = await self.api.call(
            self.api.queue.runs, thread.thread_id, limit=limit, offset=offset
        )
        return json_response([run_json(r) for r in runs])

    async def get(self, request: Request) -> Response:
        run = await self.api.run(self.thread_of(request), request.path_params["run_id"])
        return json_response(run_json(run))

    async def delete(self, request: Request) -> Response:
        run = await self.api.run(self.thread_of(request), request.path_params["run_id"])
        if not run.ended:
            raise Refused(409, f"run {run.run_id!r} is still in flight; cancel it first")
        await self.api.call(self.api.queue.delete_run, run.run_id)
        return Response(status_code=204)

    async def cancel(self, request: Request) -> Response:
        run = await self.api.run(self.thread_of(request), request.path_params["run_id"])
        action = request.query_params.get("action", "interrupt")
        if action not in ("interrupt", "rollback"):
            raise Refused(422, f"action is 'interrupt' or 'rollback', not {action!r}")
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
        run = await self.api.run(self.thread_of(request), request.path_params["run_id"])
        return json_response(await self.result(run), headers=self.where(run))

    async def join_stream(self, request: Request) -> Response:
        run = await self.api.run(self.thread_of(request), request.path_params["run_id"])
        after = last_event_id(request.headers.get("last-event-id"))
        return self.stream(run, after)

    async def thread_stream(self, request: Request) -> Response:
        """The stream of the thread's current run: the one in flight, else the latest."""
        thread = await self.api.thread(request.path_params["thread_id"])
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
        for run_id in body.get("run_ids") or []:
            found = await self.api.call(self.api.queue.run, str(run_id))
            await self.api.call(self.api.queue.request_cancel, str(run_id), action)
            if found is not None and action == "rollback":
                await self.settle_rollback(found)
        return Response(status_code=204)

    async def batch(self, request: Request) -> Response:
        raw = await request.body()
        items = orjson.loads(raw) if raw else []
        if not isinstance(items, list):
            raise Refused(422, "a batch is a JSON list of runs")
        runs = [await self.create(item, None) for item in items]
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
