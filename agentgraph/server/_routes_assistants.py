"""Assistants: a graph with its config, context and metadata, versioned.

Each graph has a default assistant (its id derived from the graph's id, metadata
`created_by: system`), there without being created. Others are created, updated
(each update is a new version the assistant then points at), pointed back at an
earlier version (`latest`), searched and deleted.
"""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._api import (
    Api,
    Refused,
    assistant_id_of,
    assistant_json,
    check_uuid,
    json_response,
    read_body,
    whole_number,
)
from ._auth import caller, plain, uid
from ._auth_filter import EVERYTHING
from ._graphs import drawing, schemas, subgraphs, xray_depth
from ._queue import StoredAssistant

__all__ = ("AssistantRoutes",)

_FIELDS = (
    "assistant_id",
    "graph_id",
    "name",
    "description",
    "config",
    "context",
    "created_at",
    "updated_at",
    "metadata",
    "version",
)
_CREATE_KEYS = frozenset(
    {"graph_id", "config", "context", "metadata", "if_exists", "name", "description"}
)
"""The keys of a create or update body a handler's value holds (`AssistantsCreate`)."""
_SORTS = ("created_at", "updated_at", "assistant_id", "graph_id", "name")


def _object(body: dict[str, Any], name: str) -> dict[str, Any]:
    """`body[name]`, a JSON object (`{}` when not given); 422 otherwise."""
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Refused(422, f"{name} is a JSON object, not {value!r}")
    return value


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise Refused(422, f"{name} is a string, not {value!r}")
    return value


def _page(items: list[Any], body: dict[str, Any]) -> tuple[list[Any], dict[str, str]]:
    """One page of `items` as `limit` and `offset` ask, and the header naming the next."""
    limit, offset = whole_number(body, "limit", 10), whole_number(body, "offset", 0)
    headers = {"X-Pagination-Next": str(offset + limit)} if offset + limit < len(items) else {}
    return items[offset : offset + limit], headers


def _flag(raw: str | None) -> bool:
    return raw is not None and raw.lower() in ("true", "1", "yes")


class AssistantRoutes:
    """Assistants, their versions, and their graphs' drawings, schemas and subgraphs;
    each action asked of the authorization hooks first (`assistants` and the action),
    an assistant they leave out refused as a missing one."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def _named(
        self, request: Request, action: str = "read", value: dict[str, Any] | None = None
    ) -> StoredAssistant:
        """The assistant the path names, once the hooks allow `action` on it with `value`."""
        assistant_id = request.path_params["assistant_id"]
        value = {"assistant_id": uid(assistant_id), **(value or {})}
        where = await self.api.access.check(request, "assistants", action, value)
        return await self.api.assistant(assistant_id, where=where)

    async def create(self, request: Request) -> Response:
        body = await read_body(request)
        if self.api.access.on:
            value = {
                **{k: v for k, v in body.items() if k in _CREATE_KEYS},
                "assistant_id": uid(body.get("assistant_id") or uuid.uuid4()),
                "metadata": _object(body, "metadata"),
            }
            made = await self.api.access.check(request, "assistants", "create", value)
            value["metadata"] = made.stamped(_object(value, "metadata"))  # found again
            body = {**body, **plain(value)}
        graph_id = body.get("graph_id")
        if not isinstance(graph_id, str):
            raise Refused(422, f"graph_id names one of {sorted(self.api.graphs)}")
        self.api.graph(graph_id)
        assistant_id = check_uuid(str(body.get("assistant_id") or uuid.uuid4()), "assistant id")
        if_exists = body.get("if_exists") or "raise"
        if if_exists not in ("raise", "do_nothing"):
            raise Refused(422, f"if_exists is 'raise' or 'do_nothing', not {if_exists!r}")
        now = time.time()
        assistant = StoredAssistant(
            assistant_id,
            graph_id,
            1,
            _text(body, "name") or "Untitled",
            _text(body, "description"),
            _object(body, "config"),
            _object(body, "context"),
            _object(body, "metadata"),
            now,
            now,
        )
        created = await self.api.call(
            self.api.queue.put_assistant, assistant, owner=caller(request.scope) or None
        )
        if created:
            return json_response(assistant_json(assistant))
        if if_exists == "raise":
            raise Refused(409, f"assistant {assistant_id!r} exists")
        # do_nothing answers with the assistant there, when the caller may read it.
        read = {"assistant_id": uid(assistant_id)}
        where = await self.api.access.check(request, "assistants", "read", read)
        try:
            found = await self.api.assistant(assistant_id, where=where)
        except Refused as hidden:
            raise Refused(409, f"assistant {assistant_id!r} exists") from hidden
        return json_response(assistant_json(found))

    async def get(self, request: Request) -> Response:
        return json_response(assistant_json(await self._named(request)))

    async def update(self, request: Request) -> Response:
        body = await read_body(request)
        value = {k: v for k, v in body.items() if k in _CREATE_KEYS}
        assistant_id = request.path_params["assistant_id"]
        value = {"assistant_id": uid(assistant_id), **value}
        where = await self.api.access.check(request, "assistants", "update", value)
        assistant = await self.api.assistant(assistant_id, where=where)
        body = {**body, **plain(value)}
        if body.get("metadata") is not None and not where.matches(
            {**assistant.metadata, **_object(body, "metadata")}
        ):
            raise Refused(403, "the update would take the assistant out of what the caller may see")
        changes: dict[str, Any] = {}
        if body.get("graph_id") is not None:
            self.api.graph(body["graph_id"])
            changes["graph_id"] = body["graph_id"]
        for name in ("config", "context", "metadata"):
            if body.get(name) is not None:
                changes[name] = _object(body, name)
        for name in ("name", "description"):
            if body.get(name) is not None:
                changes[name] = _text(body, name)
        new = await self.api.call(
            self.api.queue.new_assistant_version, assistant.assistant_id, changes
        )
        if new is None:
            raise Refused(404, f"no assistant {assistant.assistant_id!r}")
        return json_response(assistant_json(new))

    async def delete(self, request: Request) -> Response:
        assistant = await self._named(request, "delete")
        if assistant.assistant_id == assistant_id_of(assistant.graph_id):
            raise Refused(409, f"the default assistant of graph {assistant.graph_id!r} stays")
        threads = _flag(request.query_params.get("delete_threads"))
        # Only the threads the caller may delete go with it: another tenant's stay.
        where = (
            await self.api.access.check(request, "threads", "delete", {"thread_id": None})
            if threads
            else EVERYTHING
        )
        await self.api.call(
            functools.partial(
                self.api.queue.delete_assistant,
                assistant.assistant_id,
                threads=threads,
                keep=where.matches,
            )
        )
        return Response(status_code=204)

    async def matching(self, request: Request, body: dict[str, Any]) -> list[StoredAssistant]:
        """The assistants a search body asks for, among those the hooks let the caller see."""
        value = {
            "graph_id": body.get("graph_id"),
            "metadata": _object(body, "metadata"),
            "limit": body.get("limit", 10),
            "offset": body.get("offset", 0),
        }
        where = await self.api.access.check(request, "assistants", "search", value)
        body = {**body, "metadata": plain(value["metadata"]), "graph_id": value["graph_id"]}
        graph_id = _text(body, "graph_id")
        sort_by = body.get("sort_by") or "created_at"
        if sort_by not in _SORTS:
            raise Refused(422, f"sort_by is one of {', '.join(_SORTS)}, not {sort_by!r}")
        order = body.get("sort_order") or "desc"
        if order not in ("asc", "desc"):
            raise Refused(422, f"sort_order is 'asc' or 'desc', not {order!r}")
        found: list[StoredAssistant] = await self.api.call(
            self.api.queue.assistants,
            graph_id=graph_id,
            name=_text(body, "name"),
            metadata=_object(body, "metadata"),
            sort_by=sort_by,
            descending=order == "desc",
            only=where.sql("metadata", postgres=self.api.queue.postgres),
        )
        return found

    async def search(self, request: Request) -> Response:
        body = await read_body(request)
        select = body.get("select") or list(_FIELDS)
        if not isinstance(select, list) or not set(select) <= set(_FIELDS):
            raise Refused(422, f"select names some of {', '.join(_FIELDS)}, not {select!r}")
        page, headers = _page(await self.matching(request, body), body)
        shown = [{k: v for k, v in assistant_json(a).items() if k in select} for a in page]
        return json_response(shown, headers=headers)

    async def count(self, request: Request) -> Response:
        return json_response(len(await self.matching(request, await read_body(request))))

    async def versions(self, request: Request) -> Response:
        assistant = await self._named(request)
        body = await read_body(request)
        found = await self.api.call(
            self.api.queue.assistant_versions,
            assistant.assistant_id,
            metadata=_object(body, "metadata"),
        )
        page, headers = _page(found, body)
        return json_response([assistant_json(v, version=True) for v in page], headers=headers)

    async def set_latest(self, request: Request) -> Response:
        version = (await read_body(request)).get("version")
        assistant = await self._named(request, "update", {"version": version})
        if isinstance(version, bool) or not isinstance(version, int):
            raise Refused(422, f"version is a whole number, not {version!r}")
        found = await self.api.call(
            self.api.queue.set_latest_assistant, assistant.assistant_id, version
        )
        if found is None:
            raise Refused(404, f"assistant {assistant.assistant_id!r} has no version {version}")
        return json_response(assistant_json(found))

    async def drawing(self, request: Request) -> Response:
        assistant = await self._named(request)
        graph = self.api.graph(assistant.graph_id)
        xray = xray_depth(request.query_params.get("xray"))
        return json_response(drawing(graph, xray=xray))

    async def schemas(self, request: Request) -> Response:
        assistant = await self._named(request)
        return json_response(schemas(self.api.graph(assistant.graph_id), assistant.graph_id))

    async def subgraphs(self, request: Request) -> Response:
        assistant = await self._named(request)
        graph = self.api.graph(assistant.graph_id)
        found = subgraphs(
            graph,
            assistant.graph_id,
            namespace=request.path_params.get("namespace"),
            recurse=_flag(request.query_params.get("recurse")),
        )
        return json_response(found)

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        one = "/assistants/{assistant_id}"
        return [
            Route("/assistants", self.create, methods=["POST"]),
            Route("/assistants/search", self.search, methods=["POST"]),
            Route("/assistants/count", self.count, methods=["POST"]),
            Route(one, self.get, methods=["GET"]),
            Route(one, self.update, methods=["PATCH"]),
            Route(one, self.delete, methods=["DELETE"]),
            Route(one + "/versions", self.versions, methods=["POST"]),
            Route(one + "/latest", self.set_latest, methods=["POST"]),
            Route(one + "/graph", self.drawing, methods=["GET"]),
            Route(one + "/schemas", self.schemas, methods=["GET"]),
            Route(one + "/subgraphs", self.subgraphs, methods=["GET"]),
            Route(one + "/subgraphs/{namespace:path}", self.subgraphs, methods=["GET"]),
        ]
