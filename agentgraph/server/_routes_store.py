"""The store: items under namespaces, kept in an `agentgraph.memory` store.

TTLs arrive in minutes (the clients' unit) and become the memory's seconds.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..memory import Item, MemoryBase, MemoryInputError
from ._api import Api, Refused, iso, json_response, read_body, whole_number

__all__ = ("StoreRoutes",)


def _item(item: Item) -> dict[str, Any]:
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": dict(item.value),
        "created_at": iso(item.created),
        "updated_at": iso(item.updated),
    }


def _namespace(value: Any) -> Any:
    """A namespace as the handlers' values hold it (a tuple), when it is a list."""
    return tuple(value) if isinstance(value, list) else value


class StoreRoutes:
    """Put, get, delete and search items, and list namespaces.

    Each action is asked of the authorization hooks first (`store` and `put`,
    `get`, `delete`, `search` or `list_namespaces`), with the namespace (a
    search's prefix) in the value: the namespace the handler leaves there is
    the one acted on, so a handler keeps each caller in their own.
    """

    def __init__(self, api: Api, memory: MemoryBase) -> None:
        self.api = api
        self.memory = memory

    async def _allowed(self, request: Request, action: str, value: dict[str, Any]) -> Any:
        """The namespace the hooks leave in `value`, once they allow `action`."""
        value["namespace"] = _namespace(value["namespace"])
        await self.api.access.check(request, "store", action, value)
        namespace = value["namespace"]
        return list(namespace) if isinstance(namespace, tuple) else namespace

    async def put(self, request: Request) -> Response:
        body = await read_body(request)
        ttl = body.get("ttl")
        value = {
            "namespace": body.get("namespace") or [],
            "key": body.get("key"),
            "value": body.get("value"),
            "index": body.get("index"),
        }
        namespace = await self._allowed(request, "put", value)
        try:
            await self.memory.put(
                namespace,
                body.get("key"),  # type: ignore[arg-type]
                body.get("value"),  # type: ignore[arg-type]
                ttl=None if ttl is None else float(ttl) * 60,
            )
        except MemoryInputError as exc:
            raise Refused(422, str(exc)) from exc
        return Response(status_code=204)

    async def get(self, request: Request) -> Response:
        namespace = [part for part in request.query_params.get("namespace", "").split(".") if part]
        key = request.query_params.get("key", "")
        namespace = await self._allowed(request, "get", {"namespace": namespace, "key": key})
        try:
            item = await self.memory.get(namespace, key)
        except MemoryInputError as exc:
            raise Refused(422, str(exc)) from exc
        if item is None:
            raise Refused(404, "no such item")
        return json_response(_item(item))

    async def delete(self, request: Request) -> Response:
        body = await read_body(request)
        value = {"namespace": body.get("namespace") or [], "key": body.get("key")}
        namespace = await self._allowed(request, "delete", value)
        try:
            await self.memory.delete(namespace, body.get("key"))  # type: ignore[arg-type]
        except MemoryInputError as exc:
            raise Refused(422, str(exc)) from exc
        return Response(status_code=204)

    async def search(self, request: Request) -> Response:
        body = await read_body(request)
        limit, offset = whole_number(body, "limit", 10), whole_number(body, "offset", 0)
        value = {
            "namespace": body.get("namespace_prefix") or [],
            "filter": body.get("filter"),
            "limit": limit,
            "offset": offset,
            "query": body.get("query"),
        }
        namespace = await self._allowed(request, "search", value)
        try:
            hits = await self.memory.search(
                namespace,
                body.get("query"),
                filter=body.get("filter"),
                limit=limit + offset,
            )
        except MemoryInputError as exc:
            raise Refused(422, str(exc)) from exc
        items = [{**_item(hit.item), "score": hit.score} for hit in hits[offset:]]
        return json_response({"items": items})

    async def namespaces(self, request: Request) -> Response:
        body = await read_body(request)
        limit, offset = whole_number(body, "limit", 100), whole_number(body, "offset", 0)
        suffix = tuple(body.get("suffix") or ())
        value = {
            "namespace": body.get("prefix") or None,
            "suffix": suffix or None,
            "max_depth": body.get("max_depth"),
            "limit": limit,
            "offset": offset,
        }
        prefix = await self._allowed(request, "list_namespaces", value)
        try:
            found = await self.memory.list_namespaces(
                prefix or [], max_depth=body.get("max_depth"), limit=1_000_000
            )
        except MemoryInputError as exc:
            raise Refused(422, str(exc)) from exc
        if suffix:
            found = [ns for ns in found if tuple(ns[-len(suffix) :]) == suffix]
        return json_response({"namespaces": [list(ns) for ns in found[offset : offset + limit]]})

    def routes(self) -> list[Route]:
        """The routes, for the app."""
        return [
            Route("/store/items", self.put, methods=["PUT"]),
            Route("/store/items", self.get, methods=["GET"]),
            Route("/store/items", self.delete, methods=["DELETE"]),
            Route("/store/items/search", self.search, methods=["POST"]),
            Route("/store/namespaces", self.namespaces, methods=["POST"]),
        ]
