"""Threads: create, read, search, count, update, delete, copy, state and history."""

from __future__ import annotations

import functools
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import Api, Refused, check_uuid, iso, json_response, read_body, thread_json, whole_number
from ._auth import caller, plain, uid
from ._history import StoredCheckpoint, history_of
from ._mapping import message_dict, message_from, message_id
from ._queue import StoredThread
from ._retention import Retention, ttl_of
from ._thread_search import ThreadQuery

__all__ = ("ThreadRoutes", "checkpoint_named", "find_checkpoint", "state_json")


def _checkpoint(thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def state_json(thread: StoredThread, checkpoint: StoredCheckpoint | None) -> dict[str, Any]:
    """A thread's state at `checkpoint` as `get_state` answers it (None: before any)."""
    if checkpoint is None:
        return {
            "values": thread.state,
            "next": [],
            "tasks": [],
            "metadata": {},
            "created_at": None,
            "checkpoint": {
                "thread_id": thread.thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": None,
                "checkpoint_map": None,
            },
            "parent_checkpoint": None,
            "interrupts": [],
        }
    waiting = checkpoint.waiting
    tasks = [
        {
            "id": waiting["run"] if waiting else None,
            "name": name,
            "path": [],
            "error": None,
            "interrupts": checkpoint.interrupts,
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for name in checkpoint.next
    ]
    return {
        "values": checkpoint.values,
        "next": checkpoint.next,
        "tasks": tasks,
        "metadata": checkpoint.metadata,
        "created_at": iso(checkpoint.created_at),
        "checkpoint": _checkpoint(thread.thread_id, checkpoint.checkpoint_id),
        "parent_checkpoint": _checkpoint(thread.thread_id, checkpoint.parent_id),
        "interrupts": checkpoint.interrupts,
    }


def checkpoint_named(body: dict[str, Any]) -> str | None:
    """The checkpoint id a request names: `checkpoint_id`, or `checkpoint.checkpoint_id`."""
    named = body.get("checkpoint")
    if isinstance(named, dict) and named.get("checkpoint_id"):
        return check_uuid(str(named["checkpoint_id"]), "checkpoint id")
    if named is not None and not isinstance(named, dict):
        raise Refused(422, "checkpoint is an object with a checkpoint_id")
    if body.get("checkpoint_id"):
        return check_uuid(str(body["checkpoint_id"]), "checkpoint id")
    return None


async def find_checkpoint(api: Api, thread_id: str, checkpoint_id: str) -> StoredCheckpoint:
    """The thread's checkpoint `checkpoint_id`; 404 when it has none so named."""
    found: StoredCheckpoint | None = await api.call(
        history_of(api.queue).get, thread_id, checkpoint_id
    )
    if found is None:
        raise Refused(404, f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}")
    return found


def _metadata(value: dict[str, Any]) -> dict[str, Any]:
    """The `metadata` of a body or a handler's value, a JSON object; 422 otherwise."""
    metadata = plain(value.get("metadata") or {})
    if not isinstance(metadata, dict):
        raise Refused(422, f"metadata is a JSON object, not {metadata!r}")
    return metadata


class ThreadRoutes:
    """Threads and their state; each action asked of the authorization hooks first
    (`threads` and the action), a thread they leave out refused as a missing one."""

    def __init__(self, api: Api, retention: Retention) -> None:
        self.api = api
        self.history = history_of(api.queue)
        self.retention = retention

    async def _thread(
        self, request: Request, action: str, value: dict[str, Any] | None = None
    ) -> StoredThread:
        """The thread the path names, once the hooks allow `action` on it with `value`."""
        thread_id = request.path_params["thread_id"]
        value = {"thread_id": uid(thread_id), **(value or {})}
        where = await self.api.access.check(request, "threads", action, value)
        return await self.api.thread(thread_id, where=where)

    async def create(self, request: Request) -> Response:
        body = await read_body(request)
        thread_id = check_uuid(str(body.get("thread_id") or uuid.uuid4()), "thread id")
        if_exists = body.get("if_exists") or "raise"
        if if_exists not in ("raise", "do_nothing"):
            raise Refused(422, f"if_exists is 'raise' or 'do_nothing', not {if_exists!r}")
        ttl = ttl_of(body)
        value = {"thread_id": uid(thread_id), "metadata": _metadata(body), "if_exists": if_exists}
        made = await self.api.access.check(request, "threads", "create", value)
        created = await self.api.call(
            self.api.queue.put_thread,
            thread_id,
            made.stamped(_metadata(value)),  # the caller's filter finds what they made
            replace=False,
            owner=caller(request.scope) or None,
        )
        if created:
            if ttl is not None:
                await self.api.call(self.retention.set_ttl, thread_id, ttl)
            return json_response(thread_json(await self.api.thread(thread_id)))
        if if_exists == "raise":
            raise Refused(409, f"thread {thread_id!r} exists")
        # do_nothing answers with the thread there, when the caller may read it.
        read = {"thread_id": uid(thread_id)}
        where = await self.api.access.check(request, "threads", "read", read)
        try:
            return json_response(thread_json(await self.api.thread(thread_id, where=where)))
        except Refused as hidden:
            raise Refused(409, f"thread {thread_id!r} exists") from hidden

    async def get(self, request: Request) -> Response:
        return json_response(thread_json(await self._thread(request, "read")))

    async def update(self, request: Request) -> Response:
        body = await read_body(request)
        ttl = ttl_of(body)
        value = {"thread_id": uid(request.path_params["thread_id"]), "metadata": _metadata(body)}
        where = await self.api.access.check(request, "threads", "update", value)
        thread = await self.api.thread(request.path_params["thread_id"], where=where)
        metadata = {**thread.metadata, **_metadata(value)}
        if not where.matches(metadata):
            raise Refused(403, "the update would take the thread out of what the caller may see")
        await self.api.call(self.api.queue.update_thread, thread.thread_id, metadata=metadata)
        if ttl is not None:
            await self.api.call(self.retention.set_ttl, thread.thread_id, ttl)
        return json_response(thread_json(await self.api.thread(thread.thread_id)))

    async def delete(self, request: Request) -> Response:
        thread = await self._thread(request, "delete")
        await self.api.call(self.api.queue.delete_thread, thread.thread_id)
        await self.api.call(self.history.delete, thread.thread_id)
        await self.api.call(self.retention.forget, thread.thread_id)
        return Response(status_code=204)

    async def matching(self, request: Request, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The threads a search body asks for (as the clients read them, in its order, its
        page, with its fields), among those the hooks let the caller see."""
        value = {
            "metadata": _metadata(body),
            "values": body.get("values") or {},
            "status": body.get("status"),
            "limit": body.get("limit", 10),
            "offset": body.get("offset", 0),
        }
        where = await self.api.access.check(request, "threads", "search", value)
        query = ThreadQuery.read(body, metadata=_metadata(value))
        only = where.sql("metadata", postgres=self.api.queue.postgres)
        every: list[StoredThread] = await self.api.call(
            self.api.queue.threads, limit=-1, offset=0, only=only
        )
        return query.answer([thread_json(t) for t in every])

    async def search(self, request: Request) -> Response:
        return json_response(await self.matching(request, await read_body(request)))

    async def count(self, request: Request) -> Response:
        body = await read_body(request)
        whole = {**body, "limit": 2**62, "offset": 0, "select": ["thread_id"], "extract": {}}
        return json_response(len(await self.matching(request, whole)))

    async def copy(self, request: Request) -> Response:
        thread = await self._thread(request, "read")
        new = str(uuid.uuid4())
        value = {"thread_id": uid(new), "metadata": dict(thread.metadata), "if_exists": "raise"}
        made = await self.api.access.check(request, "threads", "create", value)
        await self.api.call(
            self.api.queue.put_thread,
            new,
            made.stamped(_metadata(value)),
            replace=False,
            owner=caller(request.scope) or None,
        )
        await self.api.call(self.history.copy, thread.thread_id, new)
        await self.api.call(self.history.roll_back, new, None)
        return json_response(thread_json(await self.api.thread(new)))

    async def at(self, thread: StoredThread, checkpoint_id: str | None) -> StoredCheckpoint | None:
        """The thread's checkpoint `checkpoint_id` (404 if none), or its newest."""
        if checkpoint_id is not None:
            return await find_checkpoint(self.api, thread.thread_id, checkpoint_id)
        latest: StoredCheckpoint | None = await self.api.call(self.history.latest, thread.thread_id)
        return latest

    async def state(self, request: Request) -> Response:
        thread = await self._thread(request, "read")
        named = request.path_params.get("checkpoint_id")
        checkpoint_id = None if named is None else check_uuid(named, "checkpoint id")
        return json_response(state_json(thread, await self.at(thread, checkpoint_id)))

    async def state_at(self, request: Request) -> Response:
        """`POST /threads/{id}/state/checkpoint`: the state at the checkpoint in the body."""
        thread = await self._thread(request, "read")
        body = await read_body(request)
        checkpoint = await self.at(thread, checkpoint_named(body))
        return json_response(state_json(thread, checkpoint))

    async def update_state(self, request: Request) -> Response:
        body = await read_body(request)
        thread = await self._thread(request, "update")
        values = body.get("values") or {}
        if not isinstance(values, dict):
            raise Refused(422, "values is a JSON object")
        if await self.api.call(self.api.queue.in_flight, thread.thread_id):
            raise Refused(409, f"thread {thread.thread_id!r} has a run in flight")
        parent = await self.at(thread, checkpoint_named(body))
        before = {"messages": []} if parent is None else parent.values
        after = updated(before, values, thread.thread_id)
        as_node = body.get("as_node")
        checkpoint_id = str(uuid.uuid4())
        metadata = {
            "source": "update",
            "run_id": None,
            "thread_id": thread.thread_id,
            "writes": {str(as_node or "__update__"): values},
            "parents": {},
        }
        # On a question waiting, the update keeps it: the resume answers it on these values.
        waiting = None if parent is None else parent.waiting
        interrupts, next_nodes = ([], []) if parent is None else (parent.interrupts, parent.next)
        await self.api.call(
            functools.partial(
                self.history.update,
                thread.thread_id,
                parent,
                after,
                checkpoint_id=checkpoint_id,
                run_id=None,
                metadata=metadata,
                head=None,
                waiting=None if waiting is None else {**waiting, "edited": True},
                interrupts=[] if waiting is None else interrupts,
                next_nodes=[] if waiting is None else next_nodes,
            )
        )
        return json_response({"checkpoint": _checkpoint(thread.thread_id, checkpoint_id)})

    async def past(self, request: Request) -> Response:
        thread = await self._thread(request, "read")
        body = dict(request.query_params) if request.method == "GET" else await read_body(request)
        limit = whole_number(body, "limit", 10)
        before = body.get("before")
        before_id = checkpoint_named(
            {"checkpoint": before} if isinstance(before, dict) else {"checkpoint_id": before}
        )
        metadata = body.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise Refused(422, "metadata is a JSON object")
        found = await self.api.call(
            functools.partial(
                self.history.listing,
                thread.thread_id,
                limit=limit,
                before=before_id,
                metadata=metadata,
            )
        )
        return json_response([state_json(thread, c) for c in found])

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
            Route("/threads/{thread_id}/state/checkpoint", self.state_at, methods=["POST"]),
            Route("/threads/{thread_id}/state/{checkpoint_id}", self.state, methods=["GET"]),
            Route("/threads/{thread_id}/history", self.past, methods=["GET", "POST"]),
        ]


def updated(values: dict[str, Any], update: dict[str, Any], thread_id: str) -> dict[str, Any]:
    """`values` after a client's `update_state(update)`, as LangGraph's message state does it.

    `messages` are added to the thread's: one with the id of a message there
    takes its place, one of type `remove` deletes it, any other goes at the
    end (ids are by place: see the mapping). Every other key is replaced.
    """
    messages = list(values.get("messages") or ())
    given = update.get("messages")
    if given is not None:
        for item in [given] if isinstance(given, dict) else list(given):
            if not isinstance(item, dict):
                raise Refused(422, f"a message is a JSON object, not {item!r}")
            at = next((n for n, m in enumerate(messages) if m.get("id") == item.get("id")), None)
            if item.get("type") == "remove":
                if at is None:
                    raise Refused(422, f"no message {item.get('id')!r} to remove")
                del messages[at]
                continue
            place = len(messages) if at is None else at
            fresh = message_dict(message_from(item), message_id(thread_id, place))
            if at is None:
                messages.append(fresh)
            else:
                messages[at] = fresh
        messages = [{**m, "id": message_id(thread_id, n)} for n, m in enumerate(messages)]
    rest = {key: value for key, value in values.items() if key != "messages"}
    rest.update({key: value for key, value in update.items() if key != "messages"})
    return {"messages": messages, **rest}
