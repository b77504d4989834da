"""Threads: create, read, search, count, update, delete, copy, state and history."""

from __future__ import annotations

import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import Api, Refused, check_uuid, iso, json_response, read_body, thread_json
from ._queue import StoredThread

__all__ = ("state_json", "ThreadRoutes")


def state_json(thread: StoredThread) -> dict[str, Any]:
    """A thread's state as `get_state` answers it: values, what is next, interrupts."""
    waiting = bool(thread.interrupts)
    tasks = (
        [
            {
                "id": thread.waiting_run,
                "name": "interrupt",
                "path": [],
                "error": None,
                "interrupts": thread.interrupts,
                "checkpoint": None,
                "state": None,
                "result": None,
            }
        ]
        if waiting
        else []
    )
    checkpoint = {
        "thread_id": thread.thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": str(
            uuid.uuid5(uuid.NAMESPACE_URL, f"{thread.thread_id}@{thread.updated_at}")
        ),
        "checkpoint_map": None,
    }
    return {
        "values": thread.state,
        "next": ["interrupt"] if waiting else [],
        "tasks": tasks,
        "metadata": thread.metadata,
        "created_at": iso(thread.updated_at),
        "checkpoint": checkpoint,
        "parent_checkpoint": None,
        "interrupts": thread.interrupts,
    }


class ThreadRoutes:
    """Threads and their state."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def create(self, request: Request) -> Response:
        body = await read_body(request)
        thread_id = check_uuid(str(body.get("thread_id") or uuid.uuid4()), "thread id")
        metadata = body.get("metadata") or {}
        if_exists = body.get("if_exists") or "raise"
        if if_exists not in ("raise", "do_nothing"):
            raise Refused(422, f"if_exists is 'raise' or 'do_nothing', not {if_exists!r}")
        created = await self.api.call(self.api.queue.put_thread, thread_id, metadata, replace=False)
        if not created and if_exists == "raise":
            raise Refused(409, f"thread {thread_id!r} exists")
        return json_response(thread_json(await self.api.thread(thread_id)))

    async def get(self, request: Request) -> Response:
        return json_response(thread_json(await self.api.thread(request.path_params["thread_id"])))

    async def update(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        body = await read_body(request)
        metadata = {**thread.metadata, **(body.get("metadata") or {})}
        await self.api.call(self.api.queue.update_thread, thread.thread_id, metadata=metadata)
        return json_response(thread_json(await self.api.thread(thread.thread_id)))

    async def delete(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        await self.api.call(self.api.queue.delete_thread, thread.thread_id)
        return Response(status_code=204)

    async def matching(self, body: dict[str, Any]) -> list[StoredThread]:
        every: list[StoredThread] = await self.api.call(self.api.queue.threads, limit=-1, offset=0)
        metadata = body.get("metadata") or {}
        status = body.get("status")
        return [
            t
            for t in every
            if (status is None or t.status == status)
            and all(t.metadata.get(k) == v for k, v in metadata.items())
        ]

    async def search(self, request: Request) -> Response:
        body = await read_body(request)
        found = await self.matching(body)
        offset, limit = int(body.get("offset", 0)), int(body.get("limit", 10))
        return json_response([thread_json(t) for t in found[offset : offset + limit]])

    async def count(self, request: Request) -> Response:
        return json_response(len(await self.matching(await read_body(request))))

    async def copy(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        new = str(uuid.uuid4())
        await self.api.call(self.api.queue.put_thread, new, thread.metadata, replace=False)
        await self.api.call(self.api.queue.update_thread, new, state=thread.state)
        return json_response(thread_json(await self.api.thread(new)))

    async def state(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        return json_response(state_json(thread))

    async def update_state(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        body = await read_body(request)
        values = body.get("values") or {}
        if not isinstance(values, dict):
            raise Refused(422, "values is a JSON object")
        await self.api.call(
            self.api.queue.update_thread, thread.thread_id, state={**thread.state, **values}
        )
        after = await self.api.thread(thread.thread_id)
        return json_response({"checkpoint": state_json(after)["checkpoint"]})

    async def history(self, request: Request) -> Response:
        thread = await self.api.thread(request.path_params["thread_id"])
        return json_response([state_json(thread)])

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        return [
            Route("/threads", self.create, methods=["POST"]),
            Route("/threads/search", self.search, methods=["POST"]),
            Route("/threads/count", self.count, methods=["POST"]),
            Route("/threads/{thread_id}", self.get, methods=["GET"]),
            Route("/threads/{thread_id}", self.update, methods=["PATCH"]),
            Route("/threads/{thread_id}", self.delete, methods=["DELETE"]),
            Route("/threads/{thread_id}/copy", self.copy, methods=["POST"]),
            Route("/threads/{thread_id}/state", self.state, methods=["GET"]),
            Route("/threads/{thread_id}/state", self.update_state, methods=["POST"]),
            Route("/threads/{thread_id}/state/checkpoint", self.state, methods=["POST"]),
            Route("/threads/{thread_id}/state/{checkpoint_id}", self.state, methods=["GET"]),
            Route("/threads/{thread_id}/history", self.history, methods=["GET", "POST"]),
        ]
